// tuned_gemm captured into a CUDA graph, its first call inside the capture (kernel load, workspace
// pool creation and split-K workspace all happen there), for every config family: single stage,
// register prefetch, cp.async pipelines, split-K, pre-transposed B, and the selection model's own
// pick; the graph is replayed on new inputs and must give cuBLAS's result each time.
#include <gtest/gtest.h>
#include <unistd.h>

#include "cache/database.hpp"
#include "core/cuda_check.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

struct Family {
  const char* name;
  const char* layout;
  int m, n, k;
  // nullptr: no user entry (the selection model decides). FFMA entries sum at most 112 products
  // in one chain (the accuracy contract): short k, or KSUM = 1.
  const char* config;
};

const Family kFamilies[] = {
    {"single stage", "NN", 131, 77, 45,
     "GEMV=0,BM=64,BN=32,BK=16,WM=32,WN=16,TM=4,TN=2,LM=8,VEC=1,PAD=4,AKM=0,BKM=0,UNROLL=4,PIPE=0,"
     "SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0"},
    {"register prefetch", "TN", 257, 129, 111,
     "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=1,"
     "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0"},
    {"cp.async 3 stages", "NT", 200, 96, 111,
     "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,PIPE=3,"
     "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0"},
    {"split-K", "TT", 96, 200, 3001,
     "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
     "SWZ=0,MINB=2,PRETB=0,SPLITK=6,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0"},
    {"pre-transposed B", "NN", 2048, 64, 111,
     "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=0,BKM=1,UNROLL=8,PIPE=3,"
     "SWZ=0,MINB=2,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0"},
    {"pre-transposed B and split-K", "NN", 64, 96, 4000,
     "GEMV=0,BM=64,BN=32,BK=16,WM=32,WN=16,TM=4,TN=2,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=2,"
     "SWZ=0,MINB=1,PRETB=1,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0"},
    {"model pick", "TN", 1000, 7, 8191, nullptr},
};

void run_family(const Family& f, const DeviceInfo& device, DeviceCheck& check) {
  SCOPED_TRACE(f.name);
  const std::string path = ::testing::TempDir() + "graph_" + std::to_string(getpid()) + "_" +
                           std::to_string(&f - kFamilies) + ".db";
  std::remove(path.c_str());
  const Problem p = packed_problem(f.layout, f.m, f.n, f.k);
  {
    cache::Database db(path);
    if (f.config) {
      cache::BestRecord best;
      best.key = problem_key(device, p);
      best.config = f.config;
      best.ms = 1;
      ASSERT_TRUE(db.offer_best(best));
    }
  }
  // A new database: every choice is made afresh, so the first call below is a first call.
  ASSERT_EQ(tuned_set_database(path.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  DeviceBuffer a(sizeof(float) * p.lda * (p.trans_a ? p.m : p.k)),
      b(sizeof(float) * p.ldb * (p.trans_b ? p.k : p.n)), c(sizeof(float) * p.ldc * p.n),
      ref(sizeof(float) * p.ldc * p.n);
  Stream stream = Stream::create();
  check.fill_uniform(a.as<float>(), a.bytes() / 4, 21, -1, 1, stream.get());
  check.fill_uniform(b.as<float>(), b.bytes() / 4, 22, -1, 1, stream.get());
  DeviceCheck::poison(c.as<float>(), c.bytes() / 4, stream.get());
  stream.synchronize();

  const float alpha = 1.5f, beta = 0.0f;
  const auto op_a = p.trans_a ? TUNED_OP_T : TUNED_OP_N, op_b = p.trans_b ? TUNED_OP_T : TUNED_OP_N;
  cudaGraph_t graph = nullptr;
  TUNED_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  const tuned_status_t s = tuned_gemm(op_a, op_b, f.m, f.n, f.k, &alpha, a.as<float>(), p.lda,
                                      b.as<float>(), p.ldb, &beta, c.as<float>(), p.ldc,
                                      stream.get());
  const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
  ASSERT_EQ(s, TUNED_STATUS_SUCCESS) << tuned_last_error();
  ASSERT_EQ(end, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorString(end);
  cudaGraphExec_t exec = nullptr;
  TUNED_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  char text[512];
  ASSERT_EQ(tuned_gemm_describe(op_a, op_b, f.m, f.n, f.k, a.as<float>(), p.lda, b.as<float>(),
                                p.ldb, c.as<float>(), p.ldc, text, sizeof text),
            TUNED_STATUS_SUCCESS);
  // described as configs are shown: the family's word and what it reads
  if (f.config) {
    EXPECT_NE(
        std::string(text).find(config_text(read_config(f.config, parameters()), parameters())),
        std::string::npos)
        << text;
  }

  CublasHandle cublas;
  cublas.set_stream(stream.get());
  for (int replay = 0; replay < 3; ++replay) {
    // New inputs each replay: the graph must compute, not repeat.
    check.fill_uniform(a.as<float>(), a.bytes() / 4, 100 + replay, -1, 1, stream.get());
    DeviceCheck::poison(c.as<float>(), c.bytes() / 4, stream.get());
    TUNED_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    cublas_sgemm(cublas.get(), p, alpha, a.as<float>(), b.as<float>(), beta, ref.as<float>());
    const MatrixCheck r =
        check.compare(c.as<float>(), p.ldc, ref.as<float>(), p.ldc, p.m, p.n, stream.get());
    EXPECT_TRUE(r.passed(std::max(1e-5, 2e-7 * std::sqrt(double(f.k)))))
        << "replay " << replay << ": " << r.describe() << " (" << text << ")";
  }
  TUNED_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TUNED_CUDA_CHECK(cudaGraphDestroy(graph));
  tuned_set_database(nullptr);
  std::remove(path.c_str());
}

TEST(GraphCapture, FirstCallInsideCaptureForEveryFamily) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  for (const Family& f : kFamilies) run_family(f, device, check);
}

}  // namespace
}  // namespace tuned::gemm_op
