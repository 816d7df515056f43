// Sizes at the limits of the C API: m or k up to gemm_op::kMaxSize (2^31 - 1024) are computed
// exactly right by the tile, split-K and matrix-vector kernels, n past the 65535 blocks of grid.y
// by the B pre-transpose, and sizes above the limit are refused naming the argument and the rule.
// The largest cases need up to ~26 GB of device memory and are skipped, saying so, where the
// device has less.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

// Inputs of the largest sizes are chosen so that every partial sum is exact in FP32 whatever the
// summation order (small multiples of 1/8; sparse integers along a long k), and the result is
// checked element by element against a double-precision reference on the host: cuBLAS fails
// (CUBLAS_STATUS_INTERNAL_ERROR) at m = 2^31 - 1024 and an FP32 reference over k = 2^31 is
// dominated by its own rounding.
struct Exact {
  Problem p;
  std::vector<float> a, b;
  std::vector<double> c;  // expected C (column-major, ldc = m)
};

// m large, n = 1, k = 2: C(i) = A(i,0) * b0 + A(i,1) * b1.
Exact large_m(int64_t m) {
  Exact e;
  e.p = packed_problem("NN", m, 1, 2);
  e.a.resize(static_cast<size_t>(m) * 2);
  e.b = {0.5f, -1.25f};
  e.c.resize(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const float a0 = static_cast<float>((i * 7) % 17 - 8) / 8.0f;
    const float a1 = static_cast<float>((i * 13) % 11 - 5) / 8.0f;
    e.a[static_cast<size_t>(i)] = a0;
    e.a[static_cast<size_t>(m + i)] = a1;
    e.c[static_cast<size_t>(i)] = a0 * 0.5 + a1 * -1.25;
  }
  return e;
}

// m = n = 1, k large: A is zero except every 4099th element (an integer in -2..2), B integers in
// -2..2; partial sums stay below 2^22.
Exact large_k(int64_t k) {
  Exact e;
  e.p = packed_problem("NN", 1, 1, k);
  e.a.assign(static_cast<size_t>(k), 0.0f);
  e.b.resize(static_cast<size_t>(k));
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) e.b[static_cast<size_t>(i)] = static_cast<float>((i * 31) % 5 - 2);
  for (int64_t i = 0; i < k; i += 4099) {
    e.a[static_cast<size_t>(i)] = static_cast<float>((i / 4099) % 5 - 2);
    sum += static_cast<double>(e.a[static_cast<size_t>(i)]) * e.b[static_cast<size_t>(i)];
  }
  e.c = {sum};
  return e;
}

// Runs config on the exact problem (C poisoned with NaN first) and expects every element equal to
// the reference; false (and a printed reason) when the device lacks the memory.
bool check_exact(const char* text, const Exact& e) {
  const DeviceInfo device = query_device(0);
  const Problem& p = e.p;
  Config config = Config::parse(text);
  config.set("VEC", std::min(config.get("VEC"), p.alignment));  // as the library fits it
  // Valid but for the accuracy contract's longest FFMA sum, which no FFMA config meets at k of
  // 2^31 (what is measured here is indexing, not accuracy).
  const auto broken = make_space(device, p).violation(config, false);
  EXPECT_TRUE(!broken || *broken == "float_sums_within_contract")
      << config.canonical() << ": " << *broken;
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const size_t ws_bytes = workspace_bytes(config, p);
  const double need = 4.0 * (e.a.size() + e.b.size() + e.c.size()) + ws_bytes + (1 << 30);
  if (need > static_cast<double>(free_bytes)) {
    std::printf("skipped %lldx%lldx%lld: needs %.1f GB, %.1f GB free\n",
                static_cast<long long>(p.m), static_cast<long long>(p.n),
                static_cast<long long>(p.k), need / 1e9, free_bytes / 1e9);
    return false;
  }
  SCOPED_TRACE(p.layout() + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
               std::to_string(p.k) + " " + config.canonical());
  KernelCache kernels;
  const KernelSpec spec = kernel_spec(config, p);
  const auto kernel = KernelCache::load(kernels.build(spec, device), spec);
  DeviceBuffer a(e.a.size() * sizeof(float)), b(e.b.size() * sizeof(float)),
      c(e.c.size() * sizeof(float)), workspace(ws_bytes);
  EXPECT_EQ(cudaMemcpy(a.get(), e.a.data(), a.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(b.get(), e.b.data(), b.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  DeviceCheck::poison(c.as<float>(), e.c.size(), nullptr);
  std::vector<float> got(e.c.size());
  auto count_wrong = [&](size_t* first) {
    EXPECT_EQ(cudaMemcpy(got.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(static_cast<double>(got[i]) == e.c[i]) && wrong++ == 0) *first = i;
    }
    return wrong;
  };
  size_t first_wrong = 0;
  // The comparison sees the poisoned, unwritten C as wrong everywhere (small outputs only).
  if (got.size() <= (size_t{1} << 20)) EXPECT_EQ(count_wrong(&first_wrong), got.size());
  launch(*kernel, config, p, 1.0f, a.as<float>(), b.as<float>(), 0.0f, c.as<float>(),
         workspace.get(), nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const size_t wrong = count_wrong(&first_wrong);
  EXPECT_EQ(wrong, 0u) << "first at " << first_wrong << ": " << got[first_wrong] << " for "
                       << e.c[first_wrong];
  std::printf("%s %lldx%lldx%lld %s: %zu of %zu elements wrong\n", p.layout().c_str(),
              static_cast<long long>(p.m), static_cast<long long>(p.n),
              static_cast<long long>(p.k), config.canonical().c_str(), wrong, got.size());
  return true;
}

// A problem of ordinary size at the limits of the launch grid, checked as the tuner checks a
// candidate (against cuBLAS, C poisoned, plus the task's odd edge shape).
void check_config(const char* text, const Problem& p) {
  const DeviceInfo device = query_device(0);
  const Config config = Config::parse(text);
  EXPECT_FALSE(make_space(device, p).violation(config, false).has_value()) << config.canonical();
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
}

constexpr const char* kTile =
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=1,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
    "AHEAD=0";
constexpr const char* kSplitTile =
    "GEMV=0,BM=16,BN=16,BK=32,WM=16,WN=8,TM=1,TN=2,LM=16,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=64,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
    "AHEAD=0";
// B copied transposed into the workspace first: its grid covered n in 32-column blocks on y,
// which stops at 65535 blocks (n > 2,097,120).
constexpr const char* kPretransposed =
    "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
    "AHEAD=0";

TEST(GemmLimits, LargestMIsRightInTheTileAndMatrixVectorKernels) {
  TUNED_REQUIRE_GPU();
  const Exact e = large_m(kMaxSize);
  if (!check_exact(kTile, e)) GTEST_SKIP() << "not enough device memory";
  check_exact(gemv_config(128, 4, 1).canonical().c_str(), e);
}

TEST(GemmLimits, LargestKIsRightWithSplitK) {
  TUNED_REQUIRE_GPU();
  const Exact e = large_k(kMaxSize);
  if (!check_exact(kSplitTile, e)) GTEST_SKIP() << "not enough device memory";
  check_exact(gemv_config(32, 4, 64).canonical().c_str(), e);
  check_exact(gemv_config(256, 4, 1).canonical().c_str(), e);
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
