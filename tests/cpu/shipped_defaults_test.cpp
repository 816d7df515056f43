// The shipped defaults table: parsing, lookup by GPU model (exact shape, then nearest), the
// same-architecture fallback, and errors naming the line.
#include <gtest/gtest.h>

#include "cache/shipped_defaults.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

const char* kTable =
    "# comment\n"
    "NVIDIA H100 80GB HBM3\t90\tgemm\tNN\t4096\t4096\t4096\t4\tBM=256\t2.6\t2.7\n"
    "NVIDIA H100 80GB HBM3\t90\tgemm\tNN\t32\t4096\t4096\t4\tBM=32\t0.05\t0.06\n"
    "NVIDIA H200\t90\tgemm\tNN\t4096\t4096\t4096\t4\tBM=128\t2.5\t2.6\n"
    "NVIDIA A100-SXM4-80GB\t80\tgemm\tNN\t4096\t4096\t4096\t4\tBM=64\t7.0\t7.1\n";

ProblemKey key(std::vector<int64_t> shape, const std::string& layout = "NN") {
  ProblemKey k;
  k.device_uuid = "GPU-whatever";
  k.op = "gemm";
  k.layout = layout;
  k.shape = std::move(shape);
  k.alignment = 4;
  return k;
}

TEST(ShippedDefaults, ExactThenNearestForTheModel) {
  ShippedDefaults table(kTable);
  EXPECT_EQ(table.size(), 4u);
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  auto exact = table.find_best(key({4096, 4096, 4096}), h100, 90);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->config, "BM=256");
  EXPECT_DOUBLE_EQ(exact->baseline_ms, 2.7);
  EXPECT_FALSE(table.find_best(key({16, 4096, 4096}), h100, 90));
  auto near = table.find_nearest(key({16, 4096, 4096}), h100, 90);
  ASSERT_TRUE(near);
  EXPECT_EQ(near->config, "BM=32");
  EXPECT_EQ(table.find_best(key({4096, 4096, 4096}), "NVIDIA H200", 90)->config, "BM=128");
  // Another layout has no entries.
  EXPECT_FALSE(table.find_nearest(key({4096, 4096, 4096}, "TT"), h100, 90));
}

TEST(ShippedDefaults, UnknownModelFallsBackToItsArchitecture) {
  ShippedDefaults table(kTable);
  auto same_arch = table.find_best(key({4096, 4096, 4096}), "NVIDIA H100 PCIe", 90);
  ASSERT_TRUE(same_arch);
  EXPECT_NE(same_arch->config, "BM=64");  // not the sm_80 entry
  EXPECT_EQ(table.find_best(key({4096, 4096, 4096}), "NVIDIA A100-PCIE-40GB", 80)->config, "BM=64");
  EXPECT_FALSE(table.find_best(key({4096, 4096, 4096}), "NVIDIA L4", 89));
}

TEST(ShippedDefaults, MalformedLinesNameTheLine) {
  for (const char* bad : {"a\tb\n", "X\tninety\tgemm\tNN\t1\t1\t1\t4\tBM=1\t1\t1\n"}) {
    try {
      ShippedDefaults table(std::string("# header\n") + bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
      EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
  }
}

TEST(ShippedDefaults, RowRoundTripsThroughTheParser) {
  BestRecord best;
  best.key = key({127, 1000, 7}, "TN");
  best.config = "BM=16,BN=32";
  best.ms = 0.0125;
  best.baseline_ms = 0.02;
  const std::string row = ShippedDefaults::row(best, "NVIDIA H100 80GB HBM3", 90);
  ShippedDefaults table(row + "\n");
  auto found = table.find_best(key({127, 1000, 7}, "TN"), "NVIDIA H100 80GB HBM3", 90);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->config, "BM=16,BN=32");
  EXPECT_DOUBLE_EQ(found->ms, 0.0125);
}

TEST(ShippedDefaults, BuiltinTableParses) {
  // Whatever the library ships must parse (an error here would surface in every tuned_gemm).
  EXPECT_NO_THROW(ShippedDefaults::builtin());
}

}  // namespace
}  // namespace tuned::cache
