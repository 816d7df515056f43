// gemm_ladder: the classic SGEMM ladder on this GPU, each rung as % of cuBLAS FP32 at 4096^3 and
// 1024^3 (NN), timed side by side with cuBLAS in the same process and checked against it.
// Every rung but the first is a point of the tuned template's space; the last is what tuned_gemm
// runs (the user's tuning, else the shipped defaults).
//   gemm_ladder [--device N] [--db PATH] [--json FILE] [--markdown FILE]
#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "bench/bench_util.hpp"
#include "core/cuda_check.hpp"
#include "generator/device.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;

// Rung 1 has no shared memory and no reuse: one thread per element of C, k-loop over global
// memory (the textbook first kernel). Not a point of the template's space, so it lives here.
constexpr const char* kNaiveSource = R"cu(
extern "C" __global__ void gemm_naive_nn(int M, int N, int K, float alpha, const float* A, int lda,
                                         const float* B, int ldb, float beta, float* C, int ldc) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[m + (long long)k * lda] * B[k + (long long)n * ldb];
  C[m + (long long)n * ldc] = beta != 0.0f ? alpha * acc + beta * C[m + (long long)n * ldc] : alpha * acc;
}
)cu";

struct Rung {
  std::string name;
  std::string config;  // empty: naive kernel; "tuned": tuned_gemm
};

const std::vector<Rung>& rungs() {
  static const std::vector<Rung> all = {
      {"naive (global memory only)", ""},
      {"shared-memory tiles 32x32", "GEMV=0,BM=32,BN=32,BK=32,WM=32,WN=1,TM=1,TN=1,LM=32,VEC=1,PAD=0,AKM=1,"
                                    "BKM=1,UNROLL=1,PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"1D register tile (8 per thread)", "GEMV=0,BM=64,BN=64,BK=8,WM=64,WN=4,TM=8,TN=1,LM=8,VEC=1,PAD=0,"
                                          "AKM=1,BKM=1,UNROLL=8,PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"2D register tile (8x8 per thread)", "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=8,TN=8,LM=8,VEC=1,"
                                            "PAD=0,AKM=1,BKM=1,UNROLL=8,PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"float4 global loads", "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=8,TN=8,LM=8,VEC=4,PAD=0,AKM=1,"
                              "BKM=1,UNROLL=8,PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"warp tiling (2x2 strided 4x4 sub-tiles)", "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,"
                                                  "VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=0,SWZ=0,"
                                                  "MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"double buffering (register prefetch)", "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,"
                                               "VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=1,SWZ=0,"
                                               "MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"cp.async 3-stage pipeline", "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,"
                                    "AKM=1,BKM=1,UNROLL=8,PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0"},
      {"fully tuned (tuned_gemm)", "tuned"},
  };
  return all;
}

struct Result {
  double tflops = 0, cublas_tflops = 0, pct = 0;
  bool correct = false;
  std::string config;
};

Result run_rung(const Rung& rung, int64_t size, const DeviceInfo& device, KernelCache& kernels,
                DeviceCheck& check, gemm_op::CublasHandle& cublas, cudaStream_t stream) {
  const gemm_op::Problem p = gemm_op::packed_problem("NN", size, size, size);
  GemmOperands ops(p, check, stream);
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(size);
  std::function<void(cudaStream_t)> call;
  std::shared_ptr<const LoadedKernel> kernel;
  Result result;
  if (rung.config.empty()) {
    KernelSpec spec;
    spec.source_name = "gemm_naive.cu";
    spec.source = kNaiveSource;
    spec.source_hash = fnv1a_hex(kNaiveSource);
    spec.kernel_name = "gemm_naive_nn";
    kernel = kernels.get(spec, device);
    result.config = "one thread per element, 16x16 blocks";
    call = [&, kernel](cudaStream_t st) {
      LaunchGeometry g;
      g.block = dim3(16, 16);
      g.grid = dim3((n + 15) / 16, (n + 15) / 16);
      const float* a = ops.a();
      const float* b = ops.b();
      float* c = ops.c();
      int m_ = n, n_ = n, k_ = n, ld = n;
      float al = alpha, be = beta;
      void* args[] = {&m_, &n_, &k_, &al, &a, &ld, &b, &ld, &be, &c, &ld};
      kernel->launch(g, args, st);
    };
  } else if (rung.config == "tuned") {
    char text[1024];
    tuned_gemm_describe(TUNED_OP_N, TUNED_OP_N, n, n, n, ops.a(), n, ops.b(), n, ops.c(), n, text,
                        sizeof text);
    result.config = text;
    call = [&](cudaStream_t st) {
      const tuned_status_t s = tuned_gemm(TUNED_OP_N, TUNED_OP_N, n, n, n, &alpha, ops.a(), n,
                                          ops.b(), n, &beta, ops.c(), n, st);
      if (s != TUNED_STATUS_SUCCESS) throw Error(s, tuned_last_error());
    };
  } else {
    const Config config =
        gemm_op::fit_config(read_config(rung.config, gemm_op::parameters()), device, p);
    kernel = kernels.get(gemm_op::kernel_spec(config, p), device);
    result.config = config_text(config, gemm_op::parameters());
    call = [&, kernel, config](cudaStream_t st) {
      gemm_op::launch(*kernel, config, p, alpha, ops.a(), ops.b(), beta, ops.c(), nullptr, st);
    };
  }
  auto cublas_call = [&](cudaStream_t) {
    gemm_op::cublas_sgemm(cublas.get(), p, alpha, ops.a(), ops.b(), beta, ops.c_ref());
  };
  DeviceCheck::poison(ops.c(), ops.c_elements(), stream);
  call(stream);
  cublas_call(stream);
  result.correct =
      check.compare(ops.c(), n, ops.c_ref(), n, n, n, stream).passed(std::max(1e-5, 2e-7 * std::sqrt(double(n))));
  const PairTiming t = time_side_by_side(call, cublas_call, stream, rung.config.empty() ? 3 : 9);
  result.tflops = tflops(p, t.first_ms);
  result.cublas_tflops = tflops(p, t.second_ms);
  result.pct = 100.0 * t.second_ms / t.first_ms;
  return result;
}

int run(int device_index, const std::string& db, const std::string& json,
        const std::string& markdown) {
  const DeviceInfo device = query_device(device_index);
  TUNED_CUDA_CHECK(cudaSetDevice(device_index));
  if (!db.empty() && tuned_set_database(db.c_str()) != TUNED_STATUS_SUCCESS) {
    throw Error(TUNED_STATUS_DATABASE_ERROR, tuned_last_error());
  }
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  gemm_op::CublasHandle cublas;
  Stream stream = Stream::create();
  cublas.set_stream(stream.get());
  const int64_t sizes[] = {4096, 1024};
  std::printf("SGEMM ladder on %s, %% of cuBLAS FP32 (NN, same run)\n", device.name.c_str());
  std::printf("%-42s %10s %8s %10s %8s\n", "rung", "4096^3", "TFLOP/s", "1024^3", "TFLOP/s");
  std::vector<std::array<Result, 2>> results;
  bool all_correct = true;
  for (const Rung& rung : rungs()) {
    std::array<Result, 2> r;
    for (int s = 0; s < 2; ++s) {
      r[s] = run_rung(rung, sizes[s], device, kernels, check, cublas, stream.get());
      all_correct = all_correct && r[s].correct;
    }
    std::printf("%-42s %9.1f%% %8.2f %9.1f%% %8.2f%s\n", rung.name.c_str(), r[0].pct, r[0].tflops,
                r[1].pct, r[1].tflops, r[0].correct && r[1].correct ? "" : "  WRONG RESULT");
    std::fflush(stdout);
    results.push_back(r);
  }
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\n  \"device\": " << json_escape(device.name) << ",\n  \"layout\": \"NN\",\n"
        << "  \"all_correct\": " << (all_correct ? "true" : "false") << ",\n  \"rows\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      out << "    {\"rung\": " << json_escape(rungs()[i].name)
          << ", \"pct_of_cublas_4096\": " << r[0].pct << ", \"tflops_4096\": " << r[0].tflops
          << ", \"cublas_tflops_4096\": " << r[0].cublas_tflops
          << ", \"pct_of_cublas_1024\": " << r[1].pct << ", \"tflops_1024\": " << r[1].tflops
          << ", \"cublas_tflops_1024\": " << r[1].cublas_tflops
          << ", \"config_4096\": " << json_escape(r[0].config)
          << ", \"config_1024\": " << json_escape(r[1].config) << "}"
          << (i + 1 < results.size() ? ",\n" : "\n");
    }
    out << "  ]\n}\n";
  }
  if (!markdown.empty()) {
    std::ofstream out(markdown);
    out << "SGEMM ladder on " << device.name << " (NN, FP32, % of cuBLAS in the same run)\n\n"
        << "| rung | 4096³ % of cuBLAS | 4096³ TFLOP/s | 1024³ % of cuBLAS | 1024³ TFLOP/s |\n"
        << "|---|---:|---:|---:|---:|\n";
    char line[256];
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      std::snprintf(line, sizeof line, "| %s | %.1f %% | %.2f | %.1f %% | %.2f |\n",
                    rungs()[i].name.c_str(), r[0].pct, r[0].tflops, r[1].pct, r[1].tflops);
      out << line;
    }
    std::snprintf(line, sizeof line, "\ncuBLAS FP32: %.2f TFLOP/s at 4096³, %.2f at 1024³.\n",
                  results[0][0].cublas_tflops, results[0][1].cublas_tflops);
    out << line;
  }
  return all_correct ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The SGEMM ladder, each rung as % of cuBLAS.", "gemm_ladder"};
  int device = 0;
  std::string db, json, markdown;
  app.add_option("--device", device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--db", db, "tuning database for the last rung (default: the user's)");
  app.add_option("--json", json, "write the results here as JSON");
  app.add_option("--markdown", markdown, "write the table here as Markdown");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(device, db, json, markdown);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "gemm_ladder: %s\n", e.what());
    return 1;
  }
}
