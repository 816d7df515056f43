// The selection model (cache/selection_model.*): parsing, kNN ranking, model fallback, the
// builtin tables, and bench/fit_selection run as a subprocess on small synthetic sweeps.
#include "cache/selection_model.hpp"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/held_out.hpp"
#include "cache/shipped_defaults.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
std::string_view shipped_selection_tables();  // generated from cache/shipped/*_selection_*.tsv
}

namespace {

using tuned::cache::SelectionModel;

const auto kAll = [](const std::string&) { return true; };

std::vector<std::string> configs_of(const std::vector<SelectionModel::Ranked>& ranked) {
  std::vector<std::string> out;
  for (const auto& r : ranked) out.push_back(r.config);
  return out;
}

// The message of the Error a table throws ("" when it parses).
std::string parse_error(const std::string& table) {
  try {
    SelectionModel model(table);
  } catch (const tuned::Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
    return e.what();
  }
  return "";
}

TEST(SelectionModel, ParseErrorsNameTheLine) {
  const std::string model = "# comment\nmodel\tGPU A\t90\tgemm\t3\t0.1\n";  // lines 1-2
  const std::string entries = "entry\tNN\t0\tC0\nentry\tNN\t1\tC1\n";       // lines 3-4
  EXPECT_EQ(parse_error(model + entries + "point\tNN\t4\t8x8x8\t1,2\n"), "");
  struct Case {
    std::string table;
    std::string message;
  };
  const Case cases[] = {
      {"entry\tNN\t0\tC0\n", "line 1: entry or point line before any model line"},
      {model + "model\tGPU A\t90\tgemm\t3\n", "line 3: a model line has 6 fields, got 5"},
      {model + "model\tGPU A\tninety\tgemm\t3\t0.1\n", "line 3: cc 'ninety'"},
      {model + "model\tGPU B\t90\tgemm\t0\t0.1\n", "line 3: neighbours '0'"},
      {model + "model\tGPU A\t90\tgemm\t3\t0.1\n", "line 3: a second model for GPU A gemm"},
      {model + "entry\tNN\t1\tC0\n", "line 3: entry index '1', expected 0"},
      {model + "point\tNN\t4\t8x8x8\t1\n", "line 3: point before the variant's entries"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,2,3\n", "line 5: 3 times for 2 entries"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,abc\n", "line 5: time 'abc'"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,0\n", "line 5: time '0'"},
      {model + entries + "point\tNN\t4\t8x8x8\t-,-\n", "line 5: a point needs at least one"},
      {model + entries + "point\tNN\t4\t8x-8x8\t1,2\n", "line 5: shape '8x-8x8'"},
      {model + entries + "point\tNN\t4\t1x2x3x4x5\t1,2\n", "line 5: shape '1x2x3x4x5' has more"},
      {model + entries + "point\tNN\t0\t8x8x8\t1,2\n", "line 5: alignment '0'"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,2\nentry\tNN\t2\tC2\n",
       "line 6: entry after the variant's points"},
      {model + entries + "pont\tNN\t4\t8x8x8\t1,2\n", "line 5: unknown line kind 'pont'"},
      // A points block: its size must fit the table, its line count must be right, and it holds
      // point lines of its variant only (checked when the variant is read: here, at once).
      {model + entries + "points\tNN\t1\t99\npoint\tNN\t4\t8x8x8\t1,2\n",
       "line 5: points block '1' lines, '99' bytes does not fit"},
      {model + entries + "points\tNN\t2\t21\npoint\tNN\t4\t8x8x8\t1,2\n",
       "line 6: points block of 2 lines holds 1"},
      {model + entries + "points\tNN\t1\t21\npoint\tTN\t4\t8x8x8\t1,2\n",
       "line 6: a points block holds point lines of variant NN only"},
      {model + entries + "points\tNN\t1\t21\npoint\tNN\t4\t8x8x8\t1,x\n", "line 6: time 'x'"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,2\tfast\n", "line 5: reference time 'fast'"},
      {model + entries + "point\tNN\t4\t8x8x8\t1,2\t0\n", "line 5: reference time '0'"},
  };
  for (const auto& c : cases) {
    const std::string message = parse_error(c.table);
    EXPECT_EQ(message.rfind("selection model, ", 0), 0u) << message;
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected '" << c.message << "', got '" << message << "'";
  }
}

// K = 2; entries C0-C3. Near 100^3: C0 best on both points, C3 never measured.
const char* const kTable =
    "model\tGPU A\t90\tgemm\t2\t0.25\n"
    "entry\tNN\t0\tC0\n"
    "entry\tNN\t1\tC1\n"
    "entry\tNN\t2\tC2\n"
    "entry\tNN\t3\tC3\n"
    "point\tNN\t4\t100x100x100\t1,2,4,-\n"
    "point\tNN\t4\t120x100x100\t1,4,2,-\n"
    "point\tNN\t4\t4096x4096x4096\t3,1,1.5,-\n"
    "point\tNN\t4\t4096x4096x2048\t3,1,1.5,-\n"
    "entry\tTN\t0\tT0\n"
    "entry\tTN\t1\tT1\n"
    "point\tTN\t1\t100x100x100\t2,1\n";

TEST(SelectionModel, RanksByMeanLogRegretOnTheNearestPoints) {
  const SelectionModel model(kTable);
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", {110, 100, 100}, 4, kAll);
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_EQ(configs_of(ranked), (std::vector<std::string>{"C0", "C1", "C2", "C3"}));
  EXPECT_DOUBLE_EQ(ranked[0].score, 0.0);
  EXPECT_NEAR(ranked[1].score, (std::log(2.0) + std::log(4.0)) / 2, 1e-6);
  EXPECT_NEAR(ranked[2].score, (std::log(4.0) + std::log(2.0)) / 2, 1e-6);
  EXPECT_EQ(ranked[1].entry, 1);  // C1 and C2 tie: entry index order
  EXPECT_EQ(ranked[2].entry, 2);
  // '-' counts as 20x slower than the point's best.
  EXPECT_NEAR(ranked[3].score, std::log(20.0), 1e-6);
  for (const auto& r : ranked) EXPECT_EQ(r.neighbour_regret, r.score);  // no features

  const auto large = model.rank("gemm", "GPU A", 90, "NN", {4096, 4096, 3000}, 4, kAll);
  EXPECT_EQ(configs_of(large), (std::vector<std::string>{"C1", "C2", "C0", "C3"}));
  EXPECT_EQ(model.rank("gemm", "GPU A", 90, "TN", {4096, 4096, 4096}, 4, kAll)[0].config, "T1");
  EXPECT_DOUBLE_EQ(model.transfer_regret("gemm", "GPU A", 90), 0.25);
}

// A features line weighs the caller's analytic features into each neighbour's regret:
// regret + w * (f(call) - f(neighbour)), f at the call on the calling GPU's SM count and at a
// neighbour on the model's; a feature the table does not weigh changes nothing.
TEST(SelectionModel, AnalyticFeaturesMoveEachNeighboursRegret) {
  // Near ties on the two small points (C1 and C2 within 10-20 % of C0), so a move within
  // kMaxFeatureMove can reorder them.
  const std::string table =
      "model\tGPU A\t90\tgemm\t2\t0.25\n"
      "features\t100\tpad=1\n"
      "entry\tNN\t0\tC0\n"
      "entry\tNN\t1\tC1\n"
      "entry\tNN\t2\tC2\n"
      "entry\tNN\t3\tC3\n"
      "point\tNN\t4\t100x100x100\t1,1.1,1.2,-\n"
      "point\tNN\t4\t120x100x100\t1,1.2,1.1,-\n"
      "point\tNN\t4\t4096x4096x4096\t3,1,1.5,-\n";
  const SelectionModel model(table);
  std::vector<int> sm_counts;
  double waste = std::log(1.25);
  SelectionModel::Features features;
  features.names = {"other", "pad"};
  features.sm_count = 132;
  // pad: C0 wastes `waste` where n > 200 (think: a tile too wide for the call), nothing
  // elsewhere; other: large everywhere, but the table gives it no weight.
  features.values = [&](const std::string& config,
                        const std::vector<std::pair<int, std::vector<int64_t>>>& at,
                        std::vector<double>& out) {
    for (const auto& [sms, shape] : at) {
      sm_counts.push_back(sms);
      out.push_back(1000.0 * static_cast<double>(shape[0]));
      out.push_back(config == "C0" && shape[1] > 200 ? waste : 0.0);
    }
  };
  // Without features C0 wins at n = 300 (its neighbours at n = 100 know nothing of the waste).
  const std::vector<int64_t> call = {110, 300, 100};
  EXPECT_EQ(model.rank("gemm", "GPU A", 90, "NN", call, 4, kAll)[0].config, "C0");
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", call, 4, kAll, 0, &features);
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_EQ(configs_of(ranked), (std::vector<std::string>{"C1", "C2", "C0", "C3"}));
  EXPECT_NEAR(ranked[2].score, waste, 1e-6);           // 0 on both neighbours, + waste here
  EXPECT_NEAR(ranked[2].neighbour_regret, 0.0, 1e-6);  // as measured, unmoved
  EXPECT_NEAR(ranked[0].score, (std::log(1.1) + std::log(1.2)) / 2, 1e-6);
  // C3 (never measured) has no neighbour to move: its values are not asked for.
  ASSERT_EQ(sm_counts.size(), 3u * 3);  // C0, C1, C2: the call, then two neighbours
  EXPECT_EQ(sm_counts[0], 132);
  EXPECT_EQ(sm_counts[1], 100);
  EXPECT_EQ(sm_counts[2], 100);
  // A larger move is bounded: each neighbour's regret moves by at most kMaxFeatureMove.
  waste = std::log(4.0);
  const auto bounded = model.rank("gemm", "GPU A", 90, "NN", call, 4, kAll, 0, &features);
  ASSERT_EQ(bounded.back().config, "C3");
  EXPECT_NEAR(bounded[2].score, SelectionModel::kMaxFeatureMove, 1e-6);
  EXPECT_EQ(bounded[2].config, "C0");
  // At n = 100 the feature is the same at the call and its neighbours: nothing moves.
  EXPECT_EQ(configs_of(model.rank("gemm", "GPU A", 90, "NN", {110, 100, 100}, 4, kAll, 0,
                                  &features)),
            (std::vector<std::string>{"C0", "C1", "C2", "C3"}));
  // A table without a features line ignores the caller's features.
  EXPECT_EQ(SelectionModel(kTable).rank("gemm", "GPU A", 90, "NN", call, 4, kAll, 0,
                                        &features)[0].config,
            "C0");

  const std::string model_line = "model\tGPU A\t90\tgemm\t3\t0.1\n";
  EXPECT_NE(parse_error("features\t100\tpad=1\n").find("line 1: features line before any model"),
            std::string::npos);
  EXPECT_NE(parse_error(model_line + "features\tmany\tpad=1\n").find("features SM count 'many'"),
            std::string::npos);
  EXPECT_NE(parse_error(model_line + "features\t100\tpad\n").find("feature 'pad' (name=weight)"),
            std::string::npos);
  EXPECT_NE(parse_error(model_line + "features\t100\n").find("at least one name=weight"),
            std::string::npos);
  EXPECT_NE(parse_error(model_line + "features\t100\tpad=1\nfeatures\t100\tpad=1\n")
                .find("line 3: a second features line"),
            std::string::npos);
}

// fit_selection writes each variant's points as a sized block ("points variant count bytes"), so
// the library reads a block only when it ranks that variant: the same model as plain point lines.
// A point's missing trailing dims read as 1 (GEMM: a single product is a batch of 1), so points
// of batches (4 dims) stand apart from single products at the same folded shape: each kind is
// ranked by its own where both are near.
TEST(SelectionModel, PointsOfBatchesAreFarFromSingleProducts) {
  const std::string table =
      "model\tGPU\t90\tgemm\t1\t0.1\n"
      "entry\tNN\t0\tA\n"
      "entry\tNN\t1\tB\n"
      "point\tNN\t4\t64x1024x1024\t1,2\n"
      "point\tNN\t4\t64x1024x1024x96\t2,1\n";
  const SelectionModel model(table);
  const auto pick = [&](std::vector<int64_t> shape) {
    return model.rank("gemm", "GPU", 90, "NN", shape, 4, kAll, 1).at(0).config;
  };
  EXPECT_EQ(pick({64, 1024, 1024}), "A");
  EXPECT_EQ(pick({64, 1024, 1024, 1}), "A");
  EXPECT_EQ(pick({64, 1024, 1024, 96}), "B");
  EXPECT_EQ(pick({64, 1200, 1024, 64}), "B");
  EXPECT_EQ(model.points().at(0).shape, (std::vector<int64_t>{64, 1024, 1024}));
  EXPECT_EQ(model.points().at(1).shape, (std::vector<int64_t>{64, 1024, 1024, 96}));
}

TEST(SelectionModel, SizedPointBlocksRankLikePlainPointLines) {
  std::string blocked;
  std::istringstream in(kTable);
  std::vector<std::string> run;
  auto flush = [&] {
    if (run.empty()) return;
    size_t bytes = 0;
    for (const auto& l : run) bytes += l.size() + 1;
    const std::string variant = run[0].substr(6, 2);
    blocked += "points\t" + variant + "\t" + std::to_string(run.size()) + "\t" +
               std::to_string(bytes) + "\n";
    for (const auto& l : run) blocked += l + "\n";
    run.clear();
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("point\t", 0) == 0) {
      run.push_back(line);
    } else {
      flush();
      blocked += line + "\n";
    }
  }
  flush();
  ASSERT_NE(blocked.find("points\tNN\t4\t"), std::string::npos) << blocked;
  const SelectionModel plain(kTable), sized(blocked);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{100, 100, 100},
                                            std::vector<int64_t>{3000, 4096, 4096}}) {
    for (const char* variant : {"NN", "TN"}) {
      const auto a = plain.rank("gemm", "GPU A", 90, variant, shape, 4, kAll);
      const auto b = sized.rank("gemm", "GPU A", 90, variant, shape, 4, kAll);
      ASSERT_EQ(configs_of(a), configs_of(b)) << variant;
      for (size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i].score, b[i].score);
    }
  }
  EXPECT_EQ(sized.points().size(), plain.points().size());
}

TEST(SelectionModel, ReadsTimesInAnyDecimalForm) {
  const SelectionModel model(
      "model\tGPU A\t90\tgemm\t1\t0\n"
      "entry\tNN\t0\tC0\nentry\tNN\t1\tC1\nentry\tNN\t2\tC2\nentry\tNN\t3\tC3\n"
      "entry\tNN\t4\tC4\n"
      "point\tNN\t1\t8x8x8\t1.5e-3,0.003,3E-3,30e-4,0.0030000000000000000001\n");
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", {8, 8, 8}, 1, kAll);
  ASSERT_EQ(ranked.size(), 5u);
  EXPECT_EQ(ranked[0].config, "C0");
  EXPECT_NEAR(ranked[0].score, 0.0, 1e-7);
  for (size_t i = 1; i < 5; ++i) EXPECT_NEAR(ranked[i].score, std::log(2.0), 1e-6) << i;
}

TEST(SelectionModel, AcceptFiltersAndMaxResultsCuts) {
  const SelectionModel model(kTable);
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", {110, 100, 100}, 4,
                                 [](const std::string& c) { return c != "C0"; });
  EXPECT_EQ(configs_of(ranked), (std::vector<std::string>{"C1", "C2", "C3"}));
  const auto top = model.rank("gemm", "GPU A", 90, "NN", {110, 100, 100}, 4, kAll, 1);
  EXPECT_EQ(configs_of(top), (std::vector<std::string>{"C0"}));
  EXPECT_TRUE(model.rank("gemm", "GPU A", 90, "NN", {110, 100, 100}, 4,
                         [](const std::string&) { return false; })
                  .empty());
}

TEST(SelectionModel, NearestIsBySumOfLog2Differences) {
  // K = 1: the winner is the best entry of the nearest point. One variant per question.
  const SelectionModel model(
      "model\tGPU A\t90\tgemm\t1\t0\n"
      "entry\tA\t0\tnear_small\nentry\tA\t1\tnear_large\n"
      "point\tA\t1\t10x10x10\t1,9\n"
      "point\tA\t1\t1000x1000x1000\t9,1\n"
      "entry\tB\t0\tone_dim_off\nentry\tB\t1\tall_dims_off\n"
      "point\tB\t1\t64x64x454\t1,9\n"  // from 64^3: log2(455/65) = 2.81 in one dim
      "point\tB\t1\t32x32x32\t9,1\n"   // log2(65/33) = 0.98 in each of three
      "entry\tC\t0\ttie_first\nentry\tC\t1\ttie_second\n"
      "point\tC\t1\t1x3x3\t1,9\n"  // both at distance 1 from 3x3x3: table order decides
      "point\tC\t1\t7x3x3\t9,1\n");
  auto top = [&](const std::string& variant, std::vector<int64_t> shape) {
    return model.rank("gemm", "GPU A", 90, variant, shape, 1, kAll, 1).at(0).config;
  };
  EXPECT_EQ(top("A", {300, 300, 300}), "near_large");  // nearer 10^3 in linear distance
  EXPECT_EQ(top("A", {12, 12, 12}), "near_small");
  EXPECT_EQ(top("B", {64, 64, 64}), "one_dim_off");  // a Euclidean distance would pick 32^3
  EXPECT_EQ(top("C", {3, 3, 3}), "tie_first");
}

TEST(SelectionModel, NeighboursComeFromTheCallsAlignmentClass) {
  // K = 1. The aligned point is nearer in shape; a call of alignment 1 still takes the unaligned
  // point (log2 4 = 2 alignment units, weighted, outweigh the 1000 -> 1001 -> 1100 shape step).
  const SelectionModel model(
      "model\tGPU A\t90\tgemm\t1\t0\n"
      "entry\tNN\t0\twide_stores\nentry\tNN\t1\tstaged_stores\n"
      "point\tNN\t4\t1000x1000x16\t1,9\n"
      "point\tNN\t1\t1101x1001x17\t9,1\n");
  auto top = [&](int alignment) {
    return model.rank("gemm", "GPU A", 90, "NN", {1001, 1000, 16}, alignment, kAll, 1)
        .at(0)
        .config;
  };
  EXPECT_EQ(top(4), "wide_stores");
  EXPECT_EQ(top(1), "staged_stores");
  // Alignment 2 lies one log2 unit from each class; the shape decides.
  EXPECT_EQ(top(2), "wide_stores");
  EXPECT_FLOAT_EQ(SelectionModel::kAlignmentWeight, 3.0f);
}

TEST(SelectionModel, AnEntryValidOnSomeShapesIsJudgedWhereItRan) {
  // K = 2. "vector_kernel" runs only where m = 1 ('-' elsewhere). The query's two nearest points
  // have m = 2; judged there it would count log(20) twice and lose to "tile". Judged on the
  // nearest points where it ran (m = 1, farther, inside the window), it is the better.
  const SelectionModel model(
      "model\tGPU A\t90\tgemm\t2\t0\n"
      "entry\tNN\t0\ttile\nentry\tNN\t1\tvector_kernel\nentry\tNN\t2\tother\n"
      "point\tNN\t1\t2x5000x5000\t1.5,-,1\n"
      "point\tNN\t1\t2x5100x5000\t1.5,-,1\n"
      "point\tNN\t1\t1x7000x7000\t3,1,3\n"
      "point\tNN\t1\t1x3500x3500\t3,1,3\n");
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", {1, 5000, 5000}, 1,
                                 [](const std::string& c) { return c != "other"; });
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].config, "vector_kernel");
  EXPECT_NEAR(ranked[0].score, 0.0, 1e-6);
  EXPECT_NEAR(ranked[1].score, std::log(1.5), 1e-6);  // tile, on its own nearest (m = 2)
  // Where the window has too few points that ran it, each missing one counts log(20).
  const SelectionModel sparse(
      "model\tGPU A\t90\tgemm\t2\t0\n"
      "entry\tNN\t0\ttile\nentry\tNN\t1\tvector_kernel\n"
      "point\tNN\t1\t2x5000x5000\t1,-\n"
      "point\tNN\t1\t1x6000x6000\t3,1\n");
  const auto few = sparse.rank("gemm", "GPU A", 90, "NN", {2, 5000, 5000}, 1, kAll);
  EXPECT_EQ(few[0].config, "tile");
  EXPECT_NEAR(few[1].score, std::log(20.0) / 2, 1e-6);
}

TEST(SelectionModel, APointsReferenceTimeIsItsBest) {
  // K = 2. "lone" was the only entry measured on the two nearest points, which a config outside
  // the portfolio ran 3x faster (their reference); "tile" was best on its own two points. Without
  // the references "lone" would score 0 there and win.
  const SelectionModel model(
      "model\tGPU A\t90\tgemm\t2\t0\n"
      "entry\tNN\t0\ttile\nentry\tNN\t1\tlone\n"
      "point\tNN\t1\t300x3000x600\t-,0.3\t0.1\n"
      "point\tNN\t1\t300x3100x600\t-,0.3\t0.1\n"
      "point\tNN\t1\t250x3000x600\t0.1,0.2\n"
      "point\tNN\t1\t250x3100x600\t0.1,0.2\n");
  const auto ranked = model.rank("gemm", "GPU A", 90, "NN", {300, 3050, 600}, 1, kAll);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].config, "tile");
  EXPECT_NEAR(ranked[0].score, 0.0, 1e-6);
  EXPECT_NEAR(ranked[1].score, std::log(3.0), 1e-6);  // lone: 3x its nearest points' best
  // A reference above the entries' best changes nothing (the fit writes none there).
  const SelectionModel slower(
      "model\tGPU A\t90\tgemm\t2\t0\n"
      "entry\tNN\t0\tC0\nentry\tNN\t1\tC1\n"
      "point\tNN\t1\t8x8x8\t1,2\t5\n");
  EXPECT_NEAR(slower.rank("gemm", "GPU A", 90, "NN", {8, 8, 8}, 1, kAll)[1].score, std::log(2.0),
              1e-6);
}

TEST(SelectionModel, FallsBackToTheSameComputeCapability) {
  const SelectionModel model(
      "model\tGPU B\t90\tgemm\t1\t0.5\nentry\tNN\t0\tB0\npoint\tNN\t1\t8x8x8\t1\n"
      "model\tGPU A\t90\tgemm\t1\t0.25\nentry\tNN\t0\tA0\npoint\tNN\t1\t8x8x8\t1\n"
      "model\tGPU C\t80\tgemm\t1\t0.125\nentry\tNN\t0\tC0\npoint\tNN\t1\t8x8x8\t1\n"
      "model\tGPU A\t90\tconv\t1\t0\nentry\tNN\t0\tconv0\npoint\tNN\t1\t8x8x8x8\t1\n");
  auto top = [&](const std::string& op, const std::string& device, int cc) {
    const auto ranked = model.rank(op, device, cc, "NN", {8, 8, 8}, 1, kAll);
    return ranked.empty() ? std::string("none") : ranked[0].config;
  };
  EXPECT_EQ(top("gemm", "GPU A", 90), "A0");  // the model's own table before an earlier same-cc
  EXPECT_EQ(top("gemm", "GPU X", 90), "B0");  // the first of the same compute capability
  EXPECT_EQ(top("gemm", "GPU X", 80), "C0");
  EXPECT_EQ(top("gemm", "GPU X", 75), "none");
  EXPECT_EQ(top("conv", "GPU A", 90), "conv0");
  EXPECT_EQ(top("conv", "GPU X", 80), "none");
  EXPECT_EQ(top("gemv", "GPU A", 90), "none");
  EXPECT_TRUE(model.rank("gemm", "GPU A", 90, "TT", {8, 8, 8}, 1, kAll).empty());
  EXPECT_DOUBLE_EQ(model.transfer_regret("gemm", "GPU X", 80), 0.125);
  EXPECT_DOUBLE_EQ(model.transfer_regret("gemm", "GPU X", 75), 0.0);
  EXPECT_EQ(model.models(), 4u);
  EXPECT_EQ(model.entries().size(), 4u);
  EXPECT_EQ(model.entries()[3].op, "conv");
  EXPECT_EQ(model.points()[3].shape, (std::vector<int64_t>{8, 8, 8, 8}));
}

TEST(SelectionModel, BuiltinHasNoHeldOutShapeAndParsesFast) {
  const std::string_view text = tuned::cache::shipped_selection_tables();
  const SelectionModel& builtin = SelectionModel::builtin();
  ASSERT_GE(builtin.models(), 1u) << "no cache/shipped/*_selection_*.tsv built in";
  const auto points = builtin.points();
  ASSERT_FALSE(points.empty());
  size_t checked = 0;
  for (const auto& p : points) {
    if (p.shape.size() != 3) continue;
    ++checked;
    EXPECT_FALSE(tuned::bench::is_held_out_shape(p.variant, p.shape[0], p.shape[1], p.shape[2]))
        << p.device_name << " " << p.op << " " << p.variant << " " << p.shape[0] << "x"
        << p.shape[1] << "x" << p.shape[2] << " is a held-out shape (bench/held_out.hpp)";
  }
  EXPECT_GT(checked, 0u);
  EXPECT_FALSE(builtin.entries().empty());
  // Nor is any shipped exact entry (the suite's tuned shapes) a held-out problem.
  size_t shipped = 0;
  for (const auto& row : tuned::cache::ShippedDefaults::builtin().rows()) {
    const auto& key = row.best.key;
    if (key.op != "gemm" || key.shape.size() != 3) continue;
    ++shipped;
    EXPECT_FALSE(
        tuned::bench::is_held_out_shape(key.variant, key.shape[0], key.shape[1], key.shape[2]))
        << row.best.config << " is shipped for the held-out " << key.variant << " "
        << key.shape_string();
  }
  EXPECT_GT(shipped, 0u);

  double best_ms = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const SelectionModel parsed(text);
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
    ASSERT_EQ(parsed.points().size(), points.size());
  }
  std::printf("selection model: %zu points, %zu entries, %zu bytes parsed in %.2f ms\n",
              points.size(), builtin.entries().size(), text.size(), best_ms);
  // Every table eagerly (7.7 MB, ~16k points: 50-70 ms on one idle core of this machine type);
  // a call parses only its GPU model's variant (a fraction of this), and its first-call time is
  // measured on the GPU by bench/gemm_random. The bound catches a parser gone quadratic, with
  // room for a loaded 2-core CI machine running tests in parallel.
  EXPECT_LT(best_ms, 200.0);
}

// ---- bench/fit_selection as a subprocess ----

std::filesystem::path fit_selection_path() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "bench" /
         "fit_selection";
}

struct Fit {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::string table;
};

class FitSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(fit_selection_path()))
        << fit_selection_path() << " is missing: build the fit_selection target";
    dir_ = std::filesystem::temp_directory_path() /
           ("tuned_fit_selection_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes the sweep and runs fit_selection on it (arguments hold no quote).
  Fit fit(const std::string& sweep, const std::string& arguments) {
    std::ofstream(dir_ / "sweep.tsv") << sweep;
    const auto out = dir_ / "table.tsv";
    std::string command = "'";  // appended piece by piece: GCC 12 warns on "'" + string&&
    command += fit_selection_path().string();
    command += "' '" + (dir_ / "sweep.tsv").string() + "' --out '" + out.string() + "' ";
    command += arguments + " 2>&1";
    Fit result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
      result.output.append(buffer.data(), n);
    }
    const int status = pclose(pipe);
    if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    result.table = text.str();
    return result;
  }

  // fit_selection with these arguments (paths quoted by the caller); its exit status.
  int run_fit_selection(const std::string& arguments) {
    const std::string command = "'" + fit_selection_path().string() + "' " + arguments;
    return std::system(command.c_str());
  }

  std::filesystem::path dir_;
};

const char* const kHeader =
    "# gemm_sweep on Test GPU 7 (sm_86, 10 SMs)\n"
    "layout\tm\tn\tk\talignment\tconfig\tregisters\toccupancy\tms\tcublas_ms\trel_error\n";
// A Hopper sweep: where the wgmma and TMA-fed configs are valid.
const char* const kHopperHeader =
    "# gemm_sweep on Test GPU 9 (sm_90, 132 SMs)\n"
    "layout\tm\tn\tk\talignment\tconfig\tregisters\toccupancy\tms\tcublas_ms\trel_error\n";

// A GEMM config as a table names it: its family by word and the parameters that family reads.
std::string shown(const std::string& flat) {
  return tuned::config_text(tuned::read_config(flat, tuned::gemm_op::parameters()),
                            tuned::gemm_op::parameters());
}

std::string row(const std::string& layout, int64_t m, int64_t n, int64_t k, int alignment,
                const std::string& config, double ms, double error = 0) {
  std::ostringstream out;
  out << layout << '\t' << m << '\t' << n << '\t' << k << '\t' << alignment << '\t' << config
      << "\t64\t2\t" << ms << "\t1.0\t" << error << '\n';
  return out.str();
}

// NN: A=1 is fastest everywhere, A=3 would be faster but its results fail the check; the odd
// shape's alignment is 1, so there the sweep measured the VEC=1 siblings.
std::string synthetic_sweep() {
  std::string s = kHeader;
  const int64_t sizes[] = {64, 128, 256, 512, 1024};
  for (int64_t m : sizes) {
    for (int64_t k : sizes) {
      s += row("NN", m, m, k, 4, "A=1,VEC=4", 1.0);
      s += row("NN", m, m, k, 4, "A=2,VEC=4", 2.0);
      s += row("NN", m, m, k, 4, "A=3,VEC=4", 0.5, /*error=*/1e-2);  // wrong result
    }
  }
  s += row("NN", 333, 333, 333, 1, "A=1,VEC=1", 1.5);
  s += row("NN", 333, 333, 333, 1, "A=2,VEC=1", 3.0);
  s += row("TN", 100, 100, 100, 4, "A=2,VEC=4", 1.0);
  s += row("TN", 100, 100, 100, 4, "A=1,VEC=4", 2.0);
  return s;
}

TEST_F(FitSelectionTest, FitsATableThatRanksTheWinnerFirst) {
  const Fit fit = this->fit(synthetic_sweep(), "--entries 3 --neighbours 3 --without-op-rules");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("25 wrong results, 0 beyond the accuracy contract and 0 of configs"),
            std::string::npos)
      << fit.output;
  const SelectionModel model(fit.table);
  ASSERT_EQ(model.models(), 1u) << fit.table;
  EXPECT_EQ(model.entries()[0].device_name, "Test GPU 7");  // from the sweep's first line
  EXPECT_EQ(model.entries()[0].cc, 86);
  // NN: the winner, then what covers the odd shape; nothing else improves any problem.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{100, 100, 100}, {700, 700, 2000}}) {
    const auto ranked = model.rank("gemm", "Test GPU 7", 86, "NN", shape, 4, kAll);
    EXPECT_EQ(configs_of(ranked), (std::vector<std::string>{"A=1,VEC=4", "A=1,VEC=1"}))
        << fit.table;
  }
  const auto vec1 = model.rank("gemm", "Test GPU 7", 86, "NN", {333, 333, 333}, 1,
                               [](const std::string& c) { return c.find("VEC=1") != c.npos; });
  EXPECT_EQ(configs_of(vec1), (std::vector<std::string>{"A=1,VEC=1"}));
  EXPECT_EQ(fit.table.find("A=3"), std::string::npos) << fit.table;
  EXPECT_EQ(configs_of(model.rank("gemm", "Test GPU 7", 86, "TN", {64, 64, 64}, 4, kAll)),
            (std::vector<std::string>{"A=2,VEC=4"}));
  // The odd shape's point gives the VEC=4 entry its VEC=1 sibling's time; the VEC=1 entry was
  // not measured on the aligned shapes. cuBLAS (1 ms) was faster there: the point's reference.
  EXPECT_NE(fit.table.find("point\tNN\t1\t333x333x333\t1.5,1.5\t1\n"), std::string::npos)
      << fit.table;
  EXPECT_NE(fit.table.find("point\tNN\t4\t64x64x64\t1,-\n"), std::string::npos) << fit.table;
  // The header says how the table was made.
  EXPECT_NE(fit.table.find("--entries 3 --neighbours 3"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("gemm_sweep on Test GPU 7"), std::string::npos) << fit.table;
}

// A sweep of batches (gemm_sweep --attention: the batch after k): each problem is a point where the
// library looks a batch up, the batch folded into the longer side (Descriptor::selection_shape).
const char* const kBatchHeader =
    "# gemm_sweep on Test GPU 7 (sm_86, 10 SMs)\n"
    "layout\tm\tn\tk\tbatch\talignment\tconfig\tregisters\toccupancy\tms\tcublas_ms\t"
    "rel_error\n";

std::string batch_row(const std::string& layout, int64_t m, int64_t n, int64_t k, int64_t batch,
                      const std::string& config, double ms) {
  std::ostringstream out;
  out << layout << '\t' << m << '\t' << n << '\t' << k << '\t' << batch << "\t4\t" << config
      << "\t64\t2\t" << ms << "\t1.0\t0\n";
  return out.str();
}

TEST_F(FitSelectionTest, ABatchIsAPointWhereTheLibraryLooksItUp) {
  std::string sweep = kBatchHeader;
  sweep += batch_row("NN", 64, 1024, 1024, 8, "A=1,VEC=4", 1.0);
  sweep += batch_row("NN", 64, 1024, 1024, 8, "A=2,VEC=4", 2.0);
  sweep += batch_row("TN", 512, 512, 64, 96, "A=2,VEC=4", 1.0);
  const Fit fit = this->fit(sweep, "--entries 2 --without-op-rules");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.table.find("point\tNN\t4\t64x8192x1024x8\t1\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("point\tTN\t4\t49152x512x64x96\t1\n"), std::string::npos) << fit.table;
}

// --append-to: a later sweep's problems join a fitted table as points timed with its portfolio,
// which stays as it was (no entry added, however fast the sweep found another config), as do the
// table's own points; the block sizes follow and the model ranks by the new points near them.
TEST_F(FitSelectionTest, AppendingKeepsThePortfolioAndAddsPoints) {
  const Fit first = this->fit(synthetic_sweep(), "--entries 3 --neighbours 1 --without-op-rules");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string batches = kBatchHeader;
  for (int64_t batch : {64, 128}) {
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=1,VEC=4", 3.0);
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=1,VEC=1", 2.0);
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=5,VEC=4", 0.5);  // in no portfolio
  }
  std::ofstream(dir_ / "batches.tsv") << batches;
  const auto append = [&](const std::string& sweep, const std::string& out) {
    return run_fit_selection("'" + (dir_ / sweep).string() + "' --append-to '" +
                             (dir_ / "table.tsv").string() + "' --out '" + (dir_ / out).string() +
                             "' --without-op-rules 2>&1");
  };
  ASSERT_EQ(append("batches.tsv", "appended.tsv"), 0);
  std::stringstream text;
  text << std::ifstream(dir_ / "appended.tsv").rdbuf();
  const std::string appended = text.str();
  EXPECT_NE(appended.find("# Points appended by bench/fit_selection"), std::string::npos);
  EXPECT_EQ(appended.find("A=5"), std::string::npos) << appended;
  EXPECT_NE(appended.find("point\tNN\t4\t64x131072x2048x64\t3,2\t0.5\n"), std::string::npos)
      << appended;
  // Everything the first fit wrote is there, in order.
  size_t at = 0;
  std::istringstream lines(first.table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("points\t", 0) == 0 || line.empty()) continue;
    at = appended.find(line, at);
    ASSERT_NE(at, std::string::npos) << "lost: " << line << "\n" << appended;
  }
  const SelectionModel before(first.table), after(appended);
  EXPECT_EQ(after.entries().size(), before.entries().size());
  EXPECT_EQ(after.points().size(), before.points().size() + 2);
  // Near the appended points (a batch, looked up with its batch as a fourth dim), their winner;
  // elsewhere the picks of before.
  EXPECT_EQ(
      after.rank("gemm", "Test GPU 7", 86, "NN", {64, 190000, 2048, 90}, 4, kAll, 1)[0].config,
      "A=1,VEC=1");
  EXPECT_EQ(
      before.rank("gemm", "Test GPU 7", 86, "NN", {64, 190000, 2048, 90}, 4, kAll, 1)[0].config,
      "A=1,VEC=4");
  EXPECT_EQ(after.rank("gemm", "Test GPU 7", 86, "NN", {512, 512, 300}, 4, kAll, 1)[0].config,
            "A=1,VEC=4");
  EXPECT_EQ(after.rank("gemm", "Test GPU 7", 86, "NN", {100, 100, 100}, 4, kAll, 1)[0].config,
            "A=1,VEC=4");

  // A sweep of another GPU model is refused, naming both.
  std::string other = batches;
  other.replace(other.find("Test GPU 7"), 10, "Test GPU 8");
  std::ofstream(dir_ / "other.tsv") << other;
  EXPECT_NE(append("other.tsv", "other_table.tsv"), 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "other_table.tsv"));
}

// --add-entries: a config of the appended sweep outside the portfolio becomes an entry, unmeasured
// ('-') at the old points, so it is picked near the new points only.
TEST_F(FitSelectionTest, AppendingCanAddEntriesThatServeOnlyTheNewPoints) {
  const Fit first = this->fit(synthetic_sweep(), "--entries 3 --neighbours 1 --without-op-rules");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string batches = kBatchHeader;
  for (int64_t batch : {64, 128}) {
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=1,VEC=4", 3.0);
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=5,VEC=4", 0.5);  // in no portfolio
    batches += batch_row("NN", 64, 2048, 2048, batch, "A=6,VEC=4", 0.6);  // nor: adds nothing
  }
  std::ofstream(dir_ / "batches.tsv") << batches;
  ASSERT_EQ(run_fit_selection("'" + (dir_ / "batches.tsv").string() + "' --append-to '" +
                              (dir_ / "table.tsv").string() + "' --out '" +
                              (dir_ / "appended.tsv").string() +
                              "' --add-entries 2 --without-op-rules 2>&1"),
            0);
  std::stringstream text;
  text << std::ifstream(dir_ / "appended.tsv").rdbuf();
  const std::string appended = text.str();
  const SelectionModel before(first.table), after(appended);
  const auto nn_entries = [](const SelectionModel& model) {
    std::vector<std::string> out;
    for (const auto& e : model.entries()) {
      if (e.variant == "NN") out.push_back(e.config);
    }
    return out;
  };
  auto expected = nn_entries(before);
  expected.push_back("A=5,VEC=4");  // the one that lowers a regret; A=6 then lowers none
  EXPECT_EQ(nn_entries(after), expected) << appended;
  EXPECT_EQ(appended.find("A=6"), std::string::npos) << appended;
  EXPECT_EQ(after.points().size(), before.points().size() + 2);
  EXPECT_EQ(
      after.rank("gemm", "Test GPU 7", 86, "NN", {64, 190000, 2048, 90}, 4, kAll, 1)[0].config,
      "A=5,VEC=4");
  // Away from the new points every pick is the old one (the new entry counts as unmeasured).
  for (const auto& shape : {std::vector<int64_t>{100, 100, 100}, {7, 3000, 33}, {2048, 64, 9}}) {
    EXPECT_EQ(after.rank("gemm", "Test GPU 7", 86, "NN", shape, 4, kAll, 1)[0].config,
              before.rank("gemm", "Test GPU 7", 86, "NN", shape, 4, kAll, 1)[0].config);
  }
}

TEST_F(FitSelectionTest, DropsTheHeldOutShapes) {
  const auto accepted = tuned::bench::random_shapes(tuned::bench::kAcceptanceSeeds[1])[0];
  ASSERT_TRUE(tuned::bench::is_held_out_shape(accepted.layout, accepted.m, accepted.n,
                                                accepted.k));
  // gemm_families' seed 201 (issue 10) is held out the same way.
  const auto families = tuned::bench::random_shapes(tuned::bench::kFamiliesSeed)[15];
  EXPECT_TRUE(tuned::bench::is_held_out_shape(families.layout, families.m, families.n,
                                                families.k));
  EXPECT_FALSE(tuned::bench::is_held_out_shape("NN", 4096, 4096, 4096));
  std::string sweep = kHeader;
  sweep += row(accepted.layout, accepted.m, accepted.n, accepted.k, 1, "A=2,VEC=1", 0.1);
  sweep += row(accepted.layout, accepted.m, accepted.n, accepted.k, 1, "A=1,VEC=1", 1.0);
  sweep += row(accepted.layout, 2, 3, 5, 1, "A=1,VEC=1", 0.5);
  sweep += row(accepted.layout, 2, 3, 5, 1, "A=2,VEC=1", 1.0);
  const Fit fit = this->fit(sweep, "--entries 2 --without-op-rules");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("1 held-out problems dropped"), std::string::npos)
      << fit.output;
  const SelectionModel model(fit.table);
  const auto points = model.points();
  ASSERT_EQ(points.size(), 1u) << fit.table;
  EXPECT_EQ(points[0].shape, (std::vector<int64_t>{2, 3, 5}));
  // Fitted on 2x3x5 alone, where A=1 wins (at the acceptance shape A=2 would have).
  const auto ranked = model.rank("gemm", "Test GPU 7", 86, accepted.layout,
                                 {accepted.m, accepted.n, accepted.k}, 1, kAll);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].config, "A=1,VEC=1");
}

// --feature-weights: the op's features (gemm: padding, waves) weighed as the library ranks, on
// the sweep's SM count; the leave-one-out figures in the header are computed with them.
TEST_F(FitSelectionTest, WritesTheFeatureWeightsItWasGiven) {
  std::string sweep = kHeader;
  for (int64_t n : {40, 64, 100, 128}) {
    sweep += row("NN", 4096, n, 4096, 4, "GEMV=0,BM=64,BN=64,SPLITK=1,VEC=4", 1.0);
    sweep += row("NN", 4096, n, 4096, 4, "GEMV=0,BM=64,BN=32,SPLITK=1,VEC=4", 1.2);
  }
  const Fit fit =
      this->fit(sweep, "--entries 2 --feature-weights padding=0.75,waves=0.5 --without-op-rules");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.table.find("\nfeatures\t10\tpadding=0.75\twaves=0.5\n"), std::string::npos)
      << fit.table;
  EXPECT_NE(fit.table.find("# features: padding=0.75,waves=0.5 (10 SMs)"), std::string::npos)
      << fit.table;
  EXPECT_NO_THROW(SelectionModel{fit.table});

  const Fit unknown = this->fit(sweep, "--feature-weights tiles=1 --without-op-rules");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("--feature-weights: 'tiles=1' is not name=weight with a feature "
                                "of gemm (padding, waves)"),
            std::string::npos)
      << unknown.output;
}

// A sweep measured before GEMM had PACK, REDUCE, TAIL and MMA names its configs without them: they
// meant 0, so the same kernel measured again later (named whole) is one candidate, timed by the
// later row, and the table's entries are whole configs the library can run.
TEST_F(FitSelectionTest, CompletesConfigsOfSweepsOlderThanAParameter) {
  const std::string old_form =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1";
  const std::string whole =
      old_form + ",PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0";
  const std::string tail =
      old_form + ",PACK=0,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0";
  std::string sweep = kHeader;
  for (int64_t n : {64, 128}) sweep += row("NN", 4096, n, 96, 4, old_form, 1.0);
  for (int64_t n : {64, 128}) {
    sweep += row("NN", 4096, n, 96, 4, whole, 1.25);
    sweep += row("NN", 4096, n, 96, 4, tail, n == 64 ? 0.5 : 2.0);
  }
  const Fit fit = this->fit(sweep, "--entries 2");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.table.find("entry\tNN\t0\t" + shown(tail) + "\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("entry\tNN\t1\t" + shown(whole) + "\n"), std::string::npos) << fit.table;
  EXPECT_EQ(fit.table.find(old_form + "\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("\t4096x64x96\t0.5,1.25\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("\t4096x128x96\t2,1.25\t1\n"), std::string::npos) << fit.table;
  EXPECT_NO_THROW(SelectionModel{fit.table});
}

// Ten products of 10 us where A=1 is 30 % faster, one of 10 ms where A=2 is twice as fast: counted
// alike, A=1 is the better single entry; weighed by time (issue 28), A=2 is, since a program
// spends its time in the large product.
TEST_F(FitSelectionTest, WeighsEachProblemByItsTime) {
  auto timed_row = [](int64_t m, const std::string& config, double ms, double cublas_ms) {
    std::ostringstream out;
    out << "NN\t" << m << '\t' << m << '\t' << m << "\t4\t" << config << "\t64\t2\t" << ms << '\t'
        << cublas_ms << "\t0\n";
    return out.str();
  };
  std::string sweep = kHeader;
  for (int64_t m = 10; m < 20; ++m) {
    sweep += timed_row(m, "A=1,VEC=4", 0.010, 0.01);
    sweep += timed_row(m, "A=2,VEC=4", 0.013, 0.01);
  }
  sweep += timed_row(4096, "A=1,VEC=4", 20.0, 10.0);
  sweep += timed_row(4096, "A=2,VEC=4", 10.0, 10.0);
  const Fit weighed = this->fit(sweep, "--entries 1 --without-op-rules");
  ASSERT_EQ(weighed.exit_code, 0) << weighed.output;
  EXPECT_NE(weighed.table.find("entry\tNN\t0\tA=2,VEC=4\n"), std::string::npos) << weighed.table;
  EXPECT_NE(weighed.table.find("weighed 1 + cuBLAS ms / 0.05"), std::string::npos) << weighed.table;
  const Fit counted = this->fit(sweep, "--entries 1 --time-weight-ms 0 --without-op-rules");
  ASSERT_EQ(counted.exit_code, 0) << counted.output;
  EXPECT_NE(counted.table.find("entry\tNN\t0\tA=1,VEC=4\n"), std::string::npos) << counted.table;
  // Leave-one-out quality is reported weighed by time too.
  EXPECT_NE(weighed.output.find("time-weighted (sum cuBLAS ms / sum ms): pick"), std::string::npos)
      << weighed.output;
}

// A sweep that checked the accuracy contract (within_contract column): a result beyond it is left
// out like a wrong one, however fast.
TEST_F(FitSelectionTest, LeavesOutResultsBeyondTheAccuracyContract) {
  std::string sweep =
      "# gemm_sweep on Test GPU 7 (sm_86, 10 SMs)\n"
      "layout\tm\tn\tk\talignment\tconfig\tregisters\toccupancy\tms\tcublas_ms\trel_error\t"
      "exact_error\tcublas_exact_error\twithin_contract\n";
  for (int64_t m : {64, 128, 256}) {
    const std::string shape = "NN\t" + std::to_string(m) + "\t" + std::to_string(m) + "\t64\t4\t";
    sweep += shape + "A=1,VEC=4\t64\t2\t1.0\t1.0\t1e-7\t2e-7\t1e-7\t1\n";
    sweep += shape + "A=2,VEC=4\t64\t2\t0.5\t1.0\t1e-6\t9e-7\t1e-7\t0\n";
  }
  const Fit fit = this->fit(sweep, "--entries 2 --without-op-rules");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("3 beyond the accuracy contract and 0 of configs the op refuses"),
            std::string::npos)
      << fit.output;
  EXPECT_EQ(fit.table.find("A=2"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("entry\tNN\t0\tA=1,VEC=4\n"), std::string::npos) << fit.table;
}

// A rule of the op newer than the sweep binds the fit: gemm refuses an FFMA sum of k = 1024 in one
// chain (the accuracy contract), so the single chain's rows are left out however fast, and the
// same config summing in partial chains (KSUM = 1) takes its place; at k = 96 both may run.
TEST_F(FitSelectionTest, LeavesOutConfigsTheOpRefusesOnTheirProblem) {
  const std::string chain =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0";
  std::string sums = chain;
  sums.replace(sums.find("KSUM=0"), 6, "KSUM=1");
  std::string sweep = kHeader;
  for (int64_t m : {512, 1024, 2048}) {
    sweep += row("NN", m, m, 1024, 4, chain, 1.0);
    sweep += row("NN", m, m, 1024, 4, sums, 1.1);
  }
  sweep += row("NN", 512, 512, 96, 4, chain, 1.0);
  sweep += row("NN", 512, 512, 96, 4, sums, 1.1);
  const Fit fit = this->fit(sweep, "--entries 2");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("3 of configs the op refuses or serves otherwise there left out"),
            std::string::npos)
      << fit.output;
  EXPECT_NE(fit.table.find("entry\tNN\t0\t" + shown(sums) + "\n"), std::string::npos) << fit.table;
  // The refused single chain's 1 ms is not the point's best; cuBLAS's 1 ms is its reference.
  EXPECT_NE(fit.table.find("\t1024x1024x1024\t1.1,-\t1\n"), std::string::npos) << fit.table;
  const Fit unruled = this->fit(sweep, "--entries 2 --without-op-rules");
  ASSERT_EQ(unruled.exit_code, 0) << unruled.output;
  EXPECT_NE(unruled.table.find("entry\tNN\t0\t" + shown(chain) + "\n"), std::string::npos)
      << unruled.table;
}

// A config the op serves otherwise on a row's problem measured another kernel than the library
// runs there. Where the op holds its times to transfer to that form (OpFace::transfers_to, as the
// library ranks), its rows stand for it: a TMA-fed split TF32 config summing 256 slices in one
// float chain (k = 8192) is served in partial chains (KSUM = 2), the same grid and a few adds.
// Where not, they are left out however fast: the register-fed wgmma config is split in more parts
// of k there (another grid). A point gives an entry its served form's time where that was timed
// (the chains' 1.1 ms, not the one chain's 1.0), and at k = 1024 (32 slices) both run as they are.
TEST_F(FitSelectionTest, KeepsConfigsServedOtherwiseOnlyWhereTheirTimesTransfer) {
  const std::string one_chain =
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0";
  std::string chains = one_chain;
  chains.replace(chains.find("KSUM=1"), 6, "KSUM=2");
  const std::string register_fed =
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0";
  std::string sweep = kHopperHeader;
  for (int64_t m : {1024, 2048, 4096}) {
    sweep += row("NN", m, m, 8192, 4, one_chain, 1.0);
    sweep += row("NN", m, m, 8192, 4, chains, 1.1);
    sweep += row("NN", m, m, 8192, 4, register_fed, 0.5);
  }
  sweep += row("NN", 2048, 2048, 1024, 4, one_chain, 1.0);
  sweep += row("NN", 2048, 2048, 1024, 4, chains, 1.1);
  sweep += row("NN", 2048, 2048, 1024, 4, register_fed, 0.9);
  const Fit fit = this->fit(sweep, "--entries 2");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.output.find("3 of configs the op refuses or serves otherwise there left out"),
            std::string::npos)
      << fit.output;
  EXPECT_NE(fit.table.find("entry\tNN\t0\t" + shown(one_chain) + "\n"), std::string::npos)
      << fit.table;
  EXPECT_NE(fit.table.find("entry\tNN\t1\t" + shown(register_fed) + "\n"), std::string::npos)
      << fit.table;
  EXPECT_NE(fit.table.find("\t2048x2048x8192\t1.1,-\t1\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("\t2048x2048x1024\t1,0.9\n"), std::string::npos) << fit.table;
}

// An entry not measured on a problem itself takes the time of what the op serves it as there: a
// TMA-fed entry (timed unpacked where aligned) gets its packed twin's time on an unaligned
// vocabulary gradient, where the sweep times it packed; so the model can predict it there.
TEST_F(FitSelectionTest, AnEntryTakesTheTimeOfWhatItIsServedAs) {
  const std::string unpacked =
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0";
  std::string packed = unpacked;
  packed.replace(packed.find("PACK=0"), 6, "PACK=1");
  std::string sweep = kHopperHeader;
  for (int64_t m : {1024, 1536, 2048}) sweep += row("NT", m, 50000, 1024, 4, unpacked, 0.5);
  sweep += row("NT", 1024, 50001, 1024, 1, packed, 0.6);
  const Fit fit = this->fit(sweep, "--entries 1");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.table.find("entry\tNT\t0\t" + shown(unpacked) + "\n"), std::string::npos)
      << fit.table;
  EXPECT_NE(fit.table.find("\t1\t1024x50001x1024\t0.6\n"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("\t4\t1536x50000x1024\t0.5\n"), std::string::npos) << fit.table;
}

// A problem only configs outside the portfolio were measured on (matrix-vector configs of a
// class of columns no entry holds) gets no point: the table still loads, and the header counts it.
TEST_F(FitSelectionTest, LeavesOutProblemsNoEntryWasMeasuredOn) {
  const std::string tile =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0";
  const std::string eight = tuned::gemm_op::gemv_config(64, 4, 1, 8).canonical();
  std::string sweep = kHeader;
  for (int64_t m : {512, 1024, 2048}) sweep += row("NN", m, m, 1024, 4, tile, 1.0);
  sweep += row("NN", 4096, 7, 1024, 4, eight, 0.01);  // only the 8-column kernel ran here
  const Fit fit = this->fit(sweep, "--entries 1");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_NE(fit.table.find("entry\tNN\t0\t" + shown(tile) + "\n"), std::string::npos) << fit.table;
  EXPECT_EQ(fit.table.find("4096x7x1024"), std::string::npos) << fit.table;
  EXPECT_NE(fit.table.find("points\tNN\t3\t"), std::string::npos) << fit.table;
  EXPECT_NE(fit.output.find("1 problems with no entry measured"), std::string::npos) << fit.output;
  EXPECT_NO_THROW(SelectionModel{fit.table});
}

TEST_F(FitSelectionTest, BadInputExitsOneNamingTheLine) {
  const Fit fit = this->fit(std::string(kHeader) + "NN\t1\t2\n", "");
  EXPECT_EQ(fit.exit_code, 1) << fit.output;
  EXPECT_NE(fit.output.find("line 3: 3 fields"), std::string::npos) << fit.output;
}

}  // namespace

// A table fitted before a kernel family existed never ranks it: the H200's, before the TMA-fed
// wgmma kernels (MMA = 4), made first-use pick none of them there (0.69 of a 300 s run's best).
// First-use and tuning sessions ask the models of the other GPUs of the architecture for a few
// picks too. (Both tables rank them now: the H200's was refitted with them on 2026-11-28.)
TEST(SelectionModel, OtherGpusOfTheArchitectureAreAskedToo) {
  const SelectionModel& model = SelectionModel::builtin();
  const auto others = model.same_arch_devices("gemm", "NVIDIA H200", 90);
  EXPECT_EQ(std::count(others.begin(), others.end(), "NVIDIA H100 80GB HBM3"), 1);
  EXPECT_EQ(std::count(others.begin(), others.end(), "NVIDIA H200"), 0);
  EXPECT_TRUE(model.same_arch_devices("gemm", "NVIDIA H200", 80).empty());
  auto any_tma_wgmma = [](const std::vector<SelectionModel::Ranked>& ranked) {
    return std::any_of(ranked.begin(), ranked.end(),
                       [](const auto& r) { return r.config.find("MMA=4") != std::string::npos; });
  };
  const std::vector<int64_t> shape = {4096, 1536, 6144};  // a large product, not held out
  auto all = [](const std::string&) { return true; };
  EXPECT_TRUE(any_tma_wgmma(model.rank("gemm", "NVIDIA H200", 90, "NT", shape, 4, all, 4)));
  EXPECT_TRUE(
      any_tma_wgmma(model.rank("gemm", "NVIDIA H100 80GB HBM3", 90, "NT", shape, 4, all, 4)));
}
