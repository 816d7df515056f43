// Sizes at the limits of the C API: m, n or k up to gemm_op::kMaxSize (2^31 - 1024) are computed
// right (checked against cuBLAS with a NaN-poisoned C, like every tuning candidate), and sizes
// above it are refused naming the argument and the rule. Each case needs up to ~35 GB of device
// memory and is skipped, saying so, where the device has less.
#include <gtest/gtest.h>

#include <string>

#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

// Device bytes the task allocates for p: A, B, C and its reference (plus the small edge shape).
double task_bytes(const Problem& p) {
  const double a = static_cast<double>(p.lda) * (p.trans_a ? p.m : p.k);
  const double b = static_cast<double>(p.ldb) * (p.trans_b ? p.k : p.n);
  const double c = static_cast<double>(p.ldc) * p.n;
  return 4.0 * (a + b + 2 * c);
}

// Checks config on p as the tuner checks a candidate; false (and a printed reason) when the device
// lacks the memory.
bool check_config(const char* text, const Problem& p) {
  const DeviceInfo device = query_device(0);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const double need = task_bytes(p) + 2.0 * workspace_bytes(Config::parse(text), p) + (1 << 30);
  if (need > static_cast<double>(free_bytes)) {
    std::printf("skipped %lldx%lldx%lld: needs %.1f GB, %.1f GB free\n",
                static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), need / 1e9, free_bytes / 1e9);
    return false;
  }
  const Config config = Config::parse(text);
  SCOPED_TRACE(p.layout() + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
               std::to_string(p.k) + " " + config.canonical());
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  const KernelSpec spec = kernel_spec(config, p);
  const auto kernel = KernelCache::load(kernels.build(spec, device), spec);
  GemmTask task(device, p, check);
  task.allocate();
  task.fresh_inputs(11, stream.get());
  const MatrixCheck result = task.check(*kernel, config, stream.get());
  EXPECT_TRUE(result.passed(task.tolerance())) << result.describe();
  std::printf("%s %lldx%lldx%lld %s: %s\n", p.layout().c_str(), static_cast<long long>(p.m),
              static_cast<long long>(p.n), static_cast<long long>(p.k), text,
              result.describe().c_str());
  return true;
}

constexpr const char* kTile =
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=1,SWZ=8,MINB=1,PRETB=0,SPLITK=1";
constexpr const char* kSplitTile =
    "GEMV=0,BM=16,BN=16,BK=32,WM=16,WN=8,TM=1,TN=2,LM=16,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=64";
// B copied transposed into the workspace first: its grid covered n in 32-column blocks on y,
// which stops at 65535 blocks (n > 2,097,120).
constexpr const char* kPretransposed =
    "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=1,SPLITK=1";

TEST(GemmLimits, LargestMIsRightInTheTileAndMatrixVectorKernels) {
  TUNED_REQUIRE_GPU();
  const Problem p = packed_problem("NN", kMaxSize, 1, 1);
  if (!check_config(kTile, p)) GTEST_SKIP() << "not enough device memory";
  check_config(gemv_config(128, 4, 1).canonical().c_str(), p);
}

TEST(GemmLimits, LargestKIsRightWithSplitK) {
  TUNED_REQUIRE_GPU();
  const Problem p = packed_problem("NN", 1, 1, kMaxSize);
  if (!check_config(kSplitTile, p)) GTEST_SKIP() << "not enough device memory";
  check_config(gemv_config(32, 4, 64).canonical().c_str(), p);
}

TEST(GemmLimits, PretransposedBIsRightForMoreThan65535ColumnBlocks) {
  TUNED_REQUIRE_GPU();
  for (int64_t n : {int64_t{3000001}, int64_t{1} << 26}) {
    check_config(kPretransposed, packed_problem("NN", 8, n, 8));
  }
}

TEST(GemmLimits, SizesAboveTheLimitAreRefusedNamingTheRule) {
  TUNED_REQUIRE_GPU();
  const float one = 1.0f;
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 1 << 20), cudaSuccess);
  const int too_big = static_cast<int>(kMaxSize + 1);
  EXPECT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, too_big, 1, 1, &one, d, too_big, d, 1, &one, d,
                       too_big, nullptr),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("m: must be <= 2147482624"), std::string::npos)
      << tuned_last_error();
  EXPECT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, 1, 1, 2147483647, &one, d, 1, d, 2147483647, &one,
                       d, 1, nullptr),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("k: must be <= 2147482624"), std::string::npos)
      << tuned_last_error();
  cudaFree(d);
}

}  // namespace
}  // namespace tuned::gemm_op
