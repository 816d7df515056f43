// The entropy op's device-free logic: its registration (dims and ranges, variants), the precision
// bound that decides which accumulations may serve a window (fixed point always; float sums only
// for few updates), the space's rules on shared memory and the register ring, and the CPU/GPU
// threshold read from best records (kernel plus copies against the CPU path's time).
#include "templates/entropy/entropy_op.hpp"

#include <gtest/gtest.h>

#include "api/entropy_api.hpp"
#include "cache/shipped_defaults.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned::entropy_op {
namespace {

TEST(EntropyOp, RegisteredWithItsDimensionRanges) {
  const OpRegistration& op = find_op("entropy");
  EXPECT_EQ(op.dims, (std::vector<std::string>{"ROWS", "COLS", "RADIUS", "LEVELS"}));
  EXPECT_EQ(op.variants, (std::vector<std::string>{"f32", "u8"}));
  EXPECT_EQ(op.range_of(2), (std::pair<int64_t, int64_t>{0, 7}));
  EXPECT_EQ(op.range_of(3), (std::pair<int64_t, int64_t>{2, 256}));
  for (const auto& bad : std::vector<std::vector<int64_t>>{{64, 64, 8, 16}, {64, 64, 2, 1},
                                                           {64, 64, 2, 257}, {0, 64, 2, 16}}) {
    EXPECT_THROW(validate_request(TaskRequest{"entropy", bad, "", {}}), Error);
  }
  EXPECT_THROW(validate_request(TaskRequest{"entropy", {64, 64, 2, 16}, "f16", {}}), Error);
}

TEST(EntropyOp, ErrorBoundAdmitsFixedPointAlwaysAndFloatSumsOnlyForFewUpdates) {
  for (int radius = 0; radius <= kMaxRadius; ++radius) {
    for (const char* text : {"BX=32,BY=1,OPT=64,LOG=1,CNT=8,ACC=3,STAGE=0,SLIDE=1",
                             "BX=32,BY=1,OPT=64,LOG=0,CNT=8,ACC=3,STAGE=0,SLIDE=1",
                             "BX=32,BY=1,OPT=64,LOG=1,CNT=8,ACC=2,STAGE=0,SLIDE=1",
                             "BX=32,BY=1,OPT=64,LOG=1,CNT=8,ACC=1,STAGE=0,SLIDE=1"}) {
      EXPECT_LE(error_bound(Config::parse(text), radius), kTolerance) << text << " r" << radius;
    }
    // The largest fixed-point sum fits 31 bits.
    const int n = (2 * radius + 1) * (2 * radius + 1);
    EXPECT_LT((n * std::log(std::max(n, 2)) + n) * std::ldexp(1.0, fixed_bits(radius)), 2147483647.0);
  }
  // Float sums drift with every update: sliding 64 outputs is refused, counting one window of
  // r = 2 is not, and nor is it for r = 7.
  EXPECT_GT(error_bound(Config::parse("BX=32,BY=1,OPT=64,LOG=1,CNT=8,ACC=0,STAGE=0,SLIDE=1"), 2), kTolerance);
  EXPECT_LE(error_bound(Config::parse("BX=32,BY=1,OPT=64,LOG=1,CNT=8,ACC=0,STAGE=0,SLIDE=0"), 2), kTolerance);
  EXPECT_GT(error_bound(Config::parse("BX=32,BY=1,OPT=1,LOG=1,CNT=8,ACC=0,STAGE=0,SLIDE=0"), 7), kTolerance);
  // f computed from the fast log cancels: only fixed point (rounded F(c), exact sums) keeps it
  // within the tolerance beyond a window of one.
  EXPECT_GT(error_bound(Config::parse("BX=32,BY=1,OPT=16,LOG=0,CNT=8,ACC=1,STAGE=0,SLIDE=1"), 1), kTolerance);
  EXPECT_LE(error_bound(Config::parse("BX=32,BY=1,OPT=16,LOG=0,CNT=8,ACC=3,STAGE=0,SLIDE=1"), 7), kTolerance);
}

TEST(EntropyOp, SpaceRulesNameSharedMemoryAndTheRegisterRing) {
  const DeviceInfo device = reference_device(90);
  const Space space = make_space(device, packed_problem(4096, 4096, 7, 256), Input::kF32);
  // 256 levels of 32-bit counters for 256 threads: 256 KB of shared memory.
  const auto broken = space.violation(Config::parse("BX=256,BY=1,OPT=16,LOG=1,CNT=32,ACC=3,STAGE=0,SLIDE=1"));
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(*broken, "shared_memory_fits");
  // A ring of 15 x 15 levels does not fit registers.
  EXPECT_EQ(space.violation(Config::parse("BX=64,BY=1,OPT=16,LOG=1,CNT=8,ACC=3,STAGE=2,SLIDE=1")).value_or(""),
            "register_ring_fits");
  EXPECT_FALSE(space.violation(default_config(device, packed_problem(4096, 4096, 7, 256), Input::kF32)));
  EXPECT_FALSE(space.violation(default_config(device, packed_problem(1, 1, 0, 2), Input::kU8)));
}

// The shipped tables hold four-dimensional keys, found by exact lookup (and written back alike).
TEST(EntropyOp, ShippedRowsWithFourDimensionsAreFoundByExactLookup) {
  cache::ShippedDefaults table(
      "NVIDIA H100 80GB HBM3\t90\tentropy\tu8\t10240x10240x2x16\t1\t"
      "BX=64,BY=1,OPT=32,LOG=3,CNT=32,ACC=3,STAGE=2,SLIDE=1\t0.637\t510.1\n"
      "NVIDIA H100 80GB HBM3\t90\tentropy\tu8\t10240x10240x3x16\t1\tBX=32\t0.9\t600\n");
  ProblemKey key = problem_key(reference_device(90), packed_problem(10240, 10240, 2, 16), Input::kU8);
  const auto found = table.find_best(key, "NVIDIA H100 80GB HBM3", 90);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config, "BX=64,BY=1,OPT=32,LOG=3,CNT=32,ACC=3,STAGE=2,SLIDE=1");
  EXPECT_DOUBLE_EQ(found->baseline_ms, 510.1);
  EXPECT_NE(cache::ShippedDefaults::row(*found, "NVIDIA H100 80GB HBM3", 90).find("\t10240x10240x2x16\t"),
            std::string::npos);
  key.shape[2] = 4;  // another radius: no exact entry
  EXPECT_FALSE(table.find_best(key, "NVIDIA H100 80GB HBM3", 90).has_value());
  // The library's own tables have entropy rows for both GPU models.
  key.shape[2] = 2;
  for (const char* gpu : {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    EXPECT_TRUE(cache::ShippedDefaults::builtin().find_best(key, gpu, 90).has_value()) << gpu;
  }
}

cache::BestRecord record(int64_t n, double kernel_ms, double cpu_ms, int radius = 2) {
  cache::BestRecord b;
  b.key.op = "entropy";
  b.key.variant = "f32";
  b.key.shape = {n, n, radius, 16};
  b.ms = kernel_ms;
  b.baseline_ms = cpu_ms;
  return b;
}

TEST(EntropyOp, CpuThresholdLiesBetweenTheLargestSizeTheCpuWinsAndTheNext) {
  const Problem p = packed_problem(1000, 1000, 2, 16);
  // 128^2: CPU 0.05 ms vs kernel 0.01 + copies (0.1 + 0.003): CPU wins. 400^2: CPU 0.5 ms vs
  // 0.01 + 0.1 + 0.032: GPU wins.
  const std::vector<cache::BestRecord> records = {record(400, 0.01, 0.5), record(128, 0.01, 0.05),
                                                  record(2560, 0.07, 60), record(128, 0.01, 9, 7)};
  const int64_t t = api::cpu_threshold(records, p, Input::kF32);
  EXPECT_GT(t, 128 * 128);
  EXPECT_LT(t, 400 * 400);
  // No records of this window: the built-in threshold; the GPU winning everywhere: the smallest
  // size measured.
  EXPECT_EQ(api::cpu_threshold({}, p, Input::kF32), api::kDefaultCpuThreshold);
  EXPECT_EQ(api::cpu_threshold({record(400, 0.01, 0.5), record(2560, 0.07, 60)}, p, Input::kF32),
            400 * 400);
  EXPECT_EQ(api::cpu_threshold(records, p, Input::kU8), api::kDefaultCpuThreshold);
}

}  // namespace
}  // namespace tuned::entropy_op
