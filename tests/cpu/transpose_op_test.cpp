// The transpose op's host logic, no GPU: argument rules with their messages, the space and its
// seeds, fitting to alignment, launch geometry past 65535 tile rows, the registration's
// validation of 2-D shapes, and shipped rows with two size columns.
#include <gtest/gtest.h>

#include <string>

#include "cache/shipped_defaults.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "templates/transpose/transpose_op.hpp"
#include "tuned/error.hpp"

namespace tuned::transpose_op {
namespace {

void expect_invalid(int64_t rows, int64_t cols, const void* a, int64_t lda, const void* b,
                    int64_t ldb, const std::string& expected) {
  try {
    validate_arguments(rows, cols, a, lda, b, ldb);
    ADD_FAILURE() << expected << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(TransposeOp, ArgumentsAreCheckedNamingTheRule) {
  alignas(16) static float buffer[4096];
  const float* a = buffer;
  const float* b = buffer + 2048;
  expect_invalid(-1, 4, a, 1, b, 4, "rows: must be >= 0 (got -1)");
  expect_invalid(4, -1, a, 4, b, 1, "cols: must be >= 0 (got -1)");
  expect_invalid(8, 4, a, 7, b, 4, "lda: must be >= max(1, rows) = 8 (got 7)");
  expect_invalid(8, 4, a, 8, b, 3, "ldb: must be >= max(1, cols) = 4 (got 3)");
  expect_invalid(8, 4, nullptr, 8, b, 4, "A: must not be NULL");
  expect_invalid(8, 4, a, 8, nullptr, 4, "B: must not be NULL");
  expect_invalid(8, 4, a, 8, a + 31, 4, "B: must not overlap A");
  expect_invalid(8, 4, a + 31, 8, a, 4, "B: must not overlap A");  // B's range reaches A
  EXPECT_NO_THROW(validate_arguments(8, 4, a, 8, a + 32, 4));      // adjacent, not overlapping
  EXPECT_NO_THROW(validate_arguments(0, 4, nullptr, 1, nullptr, 4));  // nothing to do
  EXPECT_EQ(alignment_class(a, b, 8, 4), 4);
  EXPECT_EQ(alignment_class(a + 2, b, 8, 4), 2);
  EXPECT_EQ(alignment_class(a, b, 9, 4), 1);
}

TEST(TransposeOp, SeedsLieInTheSpaceAndFittingLowersTheVectorWidth) {
  const DeviceInfo h100 = reference_device(90);
  for (auto [rows, cols] : {std::pair{16384, 16384}, std::pair{1, 4097}, std::pair{4097, 3}}) {
    const Problem p = packed_problem(rows, cols);
    const Space space = make_space(h100, p);
    EXPECT_GT(space.count(), 10u);
    for (const Config& c : seed_configs(h100, p)) {
      EXPECT_FALSE(space.violation(c, false).has_value()) << c.canonical();
    }
  }
  Problem odd = packed_problem(1001, 999);
  EXPECT_EQ(odd.alignment, 1);
  const Config fitted = fit_config(Config::parse("TILE=64,RPT=8,VEC=4,PAD=1,ORDER=2"), h100, odd);
  EXPECT_EQ(fitted.get("VEC"), 1);
  EXPECT_THROW(fit_config(Config::parse("TILE=64,RPT=1,VEC=1,PAD=1,ORDER=0"), h100, odd),
               Error);  // 4096 threads per block
  // One tile per block on a 1-D grid: far more than 65535 tile rows fit.
  const LaunchGeometry g =
      geometry(Config::parse("TILE=16,RPT=4,VEC=1,PAD=1,ORDER=0"), packed_problem(2000000, 3));
  EXPECT_EQ(g.grid.x, 125000u);
  EXPECT_EQ(g.block.x * g.block.y, 64u);
}

TEST(TransposeOp, RegistrationChecksTwoDimensionalShapesAndItsParameters) {
  EXPECT_NO_THROW(validate_request({"transpose", {4097, 3}, "", {}}));
  EXPECT_THROW(validate_request({"transpose", {64, 64, 64}, "", {}}), Error);
  EXPECT_THROW(validate_request({"transpose", {0, 64}, "", {}}), Error);
  EXPECT_THROW(validate_request({"transpose", {64, 64}, "NN", {}}), Error);
  EXPECT_THROW(validate_request({"transpose", {64, 64}, "", {{"TILE", {48}}}}), Error);
  EXPECT_NO_THROW(validate_request({"transpose", {64, 64}, "T", {{"TILE", {32, 64}}}}));
}

TEST(TransposeOp, ShippedRowsWithTwoSizesAreFoundByExactLookup) {
  cache::ShippedDefaults table(
      "NVIDIA H100 80GB HBM3\t90\ttranspose\tT\t4097x3\t1\t"
      "TILE=16,RPT=2,VEC=1,PAD=0,ORDER=1\t0.0064\t0.0065\n"
      "NVIDIA H100 80GB HBM3\t90\tgemm\tNN\t64x64x1\t4\tBM=64\t0.01\t0.01\n");
  ProblemKey key;
  key.op = "transpose";
  key.variant = "T";
  key.shape = {4097, 3};
  key.alignment = 1;
  const auto found = table.find_best(key, "NVIDIA H100 80GB HBM3", 90);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config, "TILE=16,RPT=2,VEC=1,PAD=0,ORDER=1");
  // Written back as the sizes joined by x; a gemm k of 1 stays a size.
  const std::string row = cache::ShippedDefaults::row(*found, "NVIDIA H100 80GB HBM3", 90);
  EXPECT_NE(row.find("\t4097x3\t1\t"), std::string::npos) << row;
  key.op = "gemm";
  key.variant = "NN";
  key.shape = {64, 64, 1};
  key.alignment = 4;
  EXPECT_TRUE(table.find_best(key, "NVIDIA H100 80GB HBM3", 90).has_value());
}

}  // namespace
}  // namespace tuned::transpose_op
