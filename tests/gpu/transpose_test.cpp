// The transpose op on the GPU: exact on odd shapes and padded or unaligned operands through the
// public API (B poisoned first, its padding left alone), every seed config exact through the
// tuner's check (which is seen to fail on one wrong element), clear errors for bad arguments,
// and autotune --op transpose end to end (GB/s against the copy; the tuned config used by a
// later call).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/transpose/transpose_task.hpp"
#include "tuned/tuned.h"

namespace tuned::transpose_op {
namespace {

using tuned::testing::run_command;
using tuned::testing::tool_path;

struct Case {
  int rows, cols, lda, ldb, offset;  // offset: floats A and B start past an aligned address
};

TEST(Transpose, PublicApiIsExactOnOddShapesPaddedAndUnalignedOperands) {
  TUNED_REQUIRE_GPU();
  const std::vector<Case> cases = {{1, 1, 1, 1, 0},          {1, 4097, 1, 4097, 0},
                                   {4097, 3, 4097, 3, 0},    {1000, 1000, 1000, 1000, 0},
                                   {1000, 1000, 1003, 1001, 1}, {127, 129, 132, 136, 0},
                                   {4097, 4097, 4100, 4097, 2}, {64, 64, 64, 64, 3},
                                   {3, 70000, 4, 70000, 0}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " lda " +
                 std::to_string(c.lda) + " ldb " + std::to_string(c.ldb) + " offset " +
                 std::to_string(c.offset));
    const size_t a_n = static_cast<size_t>(c.lda) * c.cols, b_n = static_cast<size_t>(c.ldb) * c.rows;
    std::vector<float> a(a_n), b(b_n);
    for (auto& x : a) x = uniform(rng);
    float *da = nullptr, *db = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&da), (a_n + 4) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&db), (b_n + 4) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(da + c.offset, a.data(), a_n * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(db, 0xFF, (b_n + 4) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(tuned_transpose(c.rows, c.cols, da + c.offset, c.lda, db + c.offset, c.ldb, nullptr),
              TUNED_STATUS_SUCCESS)
        << tuned_last_error();
    ASSERT_EQ(cudaMemcpy(b.data(), db + c.offset, b_n * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    size_t wrong = 0, padding_written = 0;
    for (int i = 0; i < c.rows; ++i) {
      for (int j = 0; j < c.ldb; ++j) {
        const float got = b[j + static_cast<size_t>(i) * c.ldb];
        if (j < c.cols) {
          wrong += std::memcmp(&got, &a[i + static_cast<size_t>(j) * c.lda], 4) != 0;
        } else {
          uint32_t bits;
          std::memcpy(&bits, &got, 4);
          padding_written += bits != 0xFFFFFFFFu;
        }
      }
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(padding_written, 0u);
    cudaFree(da);
    cudaFree(db);
  }
}

TEST(Transpose, EverySeedConfigIsExactAndTheCheckSeesOneWrongElement) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int checked = 0;
  for (auto [rows, cols] : {std::pair{1, 1}, std::pair{7, 1000}, std::pair{4097, 3},
                            std::pair{1000, 1000}, std::pair{2048, 2048}}) {
    for (int alignment : {4, 2, 1}) {
      Problem p = packed_problem(rows, cols);
      p.lda = (p.lda + 3) / 4 * 4 + alignment;  // multiples of the class, not of more
      p.ldb = (p.ldb + 3) / 4 * 4 + alignment;
      p.alignment = alignment_class(nullptr, nullptr, p.lda, p.ldb);
      TransposeTask task(device, p, check);
      task.allocate();
      task.fresh_inputs(static_cast<uint64_t>(rows + cols + alignment), stream.get());
      std::vector<Config> configs = seed_configs(device, p);
      for (const char* extra : {"TILE=64,RPT=4,VEC=1,PAD=0,ORDER=1", "TILE=16,RPT=16,VEC=1,PAD=4,ORDER=2"}) {
        configs.push_back(fit_config(Config::parse(extra), device, p));
      }
      for (const Config& config : configs) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " alignment " +
                     std::to_string(p.alignment) + " " + config.canonical());
        const KernelSpec spec = kernel_spec(config);
        const auto kernel = kernels.get(spec, device);
        const MatrixCheck result = task.check(*kernel, config, stream.get());
        EXPECT_TRUE(result.passed(task.tolerance())) << result.describe();
        ++checked;
      }
    }
  }
  std::printf("%d transpose checks\n", checked);
  // The comparison with tolerance 0 fails on one changed element.
  DeviceBuffer out(64 * sizeof(float)), ref(64 * sizeof(float));
  check.fill_uniform(ref.as<float>(), 64, 3, -1.0f, 1.0f, stream.get());
  ASSERT_EQ(cudaMemcpyAsync(out.get(), ref.get(), ref.bytes(), cudaMemcpyDeviceToDevice,
                            stream.get()),
            cudaSuccess);
  EXPECT_TRUE(check.compare(out.as<float>(), 8, ref.as<float>(), 8, 8, 8, stream.get()).passed(0.0));
  const float wrong = 0.5f;
  ASSERT_EQ(cudaMemcpyAsync(out.as<float>() + 17, &wrong, 4, cudaMemcpyHostToDevice, stream.get()),
            cudaSuccess);
  EXPECT_FALSE(check.compare(out.as<float>(), 8, ref.as<float>(), 8, 8, 8, stream.get()).passed(0.0));
}

TEST(Transpose, BadArgumentsGiveClearErrors) {
  TUNED_REQUIRE_GPU();
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 1 << 20), cudaSuccess);
  struct Bad {
    int rows, cols;
    const float* a;
    int lda;
    float* b;
    int ldb;
    const char* expect;
  };
  for (const Bad& bad : std::vector<Bad>{
           {-1, 4, d, 1, d + 1000, 4, "rows: must be >= 0"},
           {4, -2, d, 4, d + 1000, 1, "cols: must be >= 0"},
           {8, 4, d, 7, d + 1000, 4, "lda: must be >= max(1, rows) = 8"},
           {8, 4, d, 8, d + 1000, 3, "ldb: must be >= max(1, cols) = 4"},
           {8, 4, nullptr, 8, d + 1000, 4, "A: must not be NULL"},
           {8, 4, d, 8, nullptr, 4, "B: must not be NULL"},
           {8, 4, d, 8, d + 16, 4, "B: must not overlap A"}}) {
    EXPECT_EQ(tuned_transpose(bad.rows, bad.cols, bad.a, bad.lda, bad.b, bad.ldb, nullptr),
              TUNED_STATUS_INVALID_ARGUMENT)
        << bad.expect;
    EXPECT_NE(std::string(tuned_last_error()).find(bad.expect), std::string::npos)
        << tuned_last_error();
  }
  // Nothing to do is fine, even with NULL pointers.
  EXPECT_EQ(tuned_transpose(0, 5, nullptr, 1, nullptr, 5, nullptr), TUNED_STATUS_SUCCESS);
  cudaFree(d);
}

TEST(Transpose, AutotuneTunesAndALaterCallUsesTheResult) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "transpose_e2e_" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
  std::string out;
  const int rc = run_command(tool_path("autotune") +
                                 " --op transpose --shape 1000x999 --budget 10 --max-trials 16"
                                 " --seed 3 --db " + db,
                             &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("GB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("copy"), std::string::npos) << out;
  EXPECT_NE(out.find("TILE="), std::string::npos) << out;
  ASSERT_EQ(tuned_set_database(db.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 8 << 20), cudaSuccess);
  char text[256];
  ASSERT_EQ(tuned_transpose_describe(1000, 999, d, 1000, d + (1 << 20), 999, text, sizeof text),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  EXPECT_EQ(std::string(text).rfind("exact: TILE=", 0), 0u) << text;
  cudaFree(d);
  tuned_set_database(nullptr);
  std::remove(db.c_str());
}

}  // namespace
}  // namespace tuned::transpose_op
