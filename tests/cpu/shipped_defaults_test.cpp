// The shipped defaults table: parsing, lookup by GPU model (exact shape, then nearest), the
// same-architecture fallback, and errors naming the line.
#include "cache/shipped_defaults.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>

#include "cache/selection_model.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "generator/precompiled.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

const char* kTable =
    "# comment\n"
    "NVIDIA H100 80GB HBM3\t90\tgemm\tNN\t4096x4096x4096\t4\tBM=256\t2.6\t2.7\n"
    "NVIDIA H100 80GB HBM3\t90\tgemm\tNN\t32x4096x4096\t4\tBM=32\t0.05\t0.06\n"
    "NVIDIA H200\t90\tgemm\tNN\t4096x4096x4096\t4\tBM=128\t2.5\t2.6\n"
    "NVIDIA A100-SXM4-80GB\t80\tgemm\tNN\t4096x4096x4096\t4\tBM=64\t7.0\t7.1\n";

ProblemKey key(std::vector<int64_t> shape, const std::string& layout = "NN") {
  ProblemKey k;
  k.device_uuid = "GPU-whatever";
  k.op = "gemm";
  k.variant = layout;
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
  for (const char* bad : {"a\tb\n", "X\tninety\tgemm\tNN\t1x1x1\t4\tBM=1\t1\t1\n"}) {
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


// Every config the library can answer with before any tuning — the shipped exact bests and the
// selection model's portfolio — is built into libtuned, so a fresh process's first call of such a
// shape loads a module instead of compiling one (1.4 s of NVRTC for a suite shape before).
TEST(ShippedDefaults, EveryShippedAndPortfolioKernelIsPrecompiled) {
  if (tuned::precompiled_count() == 0) GTEST_SKIP() << "built with TUNED_PRECOMPILE=OFF";
  auto precompiled = [](const OpRegistration& op, const std::string& config, const ProblemId& id,
                        int cc) {
    const KernelSpec spec = op.face->kernel_spec(read_config(config, op.params), id);
    return tuned::find_precompiled(cubin_key(spec, reference_device(cc)), spec.kernel_name)
        .has_value();
  };
  size_t rows = 0, passed_over = 0;
  for (const auto& row : ShippedDefaults::builtin().rows()) {
    const OpRegistration& op = find_op(row.best.key.op);
    ProblemId id;
    id.variant = op.variant_index(row.best.key.variant);
    id.rank = op.rank();
    for (int i = 0; i < id.rank; ++i) id.dims[i] = row.best.key.shape.at(i);
    id.alignment = row.best.key.alignment;
    // As the runtime runs it: served and fitted on the row's own problem (where fitting refuses
    // it, the runtime passes it over).
    std::optional<Config> served;
    try {
      served = op.face->fit(op.face->serve(read_config(row.best.config, op.params), id),
                            reference_device(row.cc), id);
    } catch (const Error&) {
      ++passed_over;
      continue;
    }
    EXPECT_TRUE(precompiled(op, served->canonical(), id, row.cc))
        << row.device_name << " " << row.best.key.variant << " " << row.best.key.shape_string()
        << ": " << row.best.config;
    ++rows;
  }
  // (Rows stored before the accuracy contract's bounds: FFMA sums longer than it allows.)
  std::printf("%zu shipped rows checked, %zu passed over by fitting\n", rows, passed_over);
  EXPECT_GT(rows, 20u);
  size_t entries = 0;
  for (const auto& e : SelectionModel::builtin().entries()) {
    const OpRegistration& op = find_op(e.op);
    ProblemId id;
    id.variant = op.variant_index(e.variant);
    id.rank = op.rank();
    for (int i = 0; i < id.rank; ++i) id.dims[i] = 1024;
    id.alignment = 4;
    EXPECT_TRUE(precompiled(op, e.config, id, e.cc)) << e.device_name << " " << e.config;
    ++entries;
  }
  EXPECT_GT(entries, 100u);
}

}  // namespace
}  // namespace tuned::cache
