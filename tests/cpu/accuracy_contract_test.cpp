// The accuracy contract's bookkeeping (issue 28) and first-use tuning's budget, on the CPU: what a
// check says when a result is right but less accurate than the contract allows, how the bound is
// set, and how much timing a quick pick may spend on short and long products.
#include <gtest/gtest.h>

#include <cmath>

#include "cache/records.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_reference.hpp"
#include "tuner/tuning_policy.hpp"

namespace tuned {
namespace {

TEST(AccuracyContract, LimitIsTwiceTheReferenceAndNeverBelowUnitRoundoff) {
  EXPECT_DOUBLE_EQ(gemm_op::contract_limit(1e-6), 2e-6);
  EXPECT_DOUBLE_EQ(gemm_op::contract_limit(0.0), 0x1.0p-24);
  EXPECT_DOUBLE_EQ(gemm_op::contract_limit(1e-9), 0x1.0p-24);
}

TEST(AccuracyContract, CheckWithoutAContractIsDecidedByTheComparisonAlone) {
  MatrixCheck check;
  check.rel_error = 1e-6;
  EXPECT_FALSE(check.breaks_contract());
  EXPECT_TRUE(check.passed(1e-5));
  check.rel_error = 2e-5;
  EXPECT_FALSE(check.passed(1e-5));
}

TEST(AccuracyContract, RightButInaccurateFailsAndSaysWhy) {
  MatrixCheck check;
  check.rel_error = 3e-6;  // within the comparison's tolerance
  check.exact_error = 4e-6;
  check.exact_limit = gemm_op::contract_limit(1e-6);
  EXPECT_TRUE(check.computes(1e-5));
  EXPECT_TRUE(check.breaks_contract());
  EXPECT_FALSE(check.passed(1e-5));
  EXPECT_NE(check.describe().find("error against the exact product 4e-06 beyond the accuracy "
                                  "contract's 2e-06"),
            std::string::npos)
      << check.describe();
  check.exact_error = 1.5e-6;
  EXPECT_FALSE(check.breaks_contract());
  EXPECT_TRUE(check.passed(1e-5));
  EXPECT_EQ(check.describe().find("contract"), std::string::npos) << check.describe();
  check.exact_error = NAN;  // a NaN error is never within a bound
  EXPECT_TRUE(check.breaks_contract());
}

TEST(AccuracyContract, FoldingKeepsABrokenContract) {
  MatrixCheck main;
  main.exact_error = 1e-6;
  main.exact_limit = 2e-6;
  MatrixCheck edge;  // no contract checked on the edge problem
  main.add(edge);
  EXPECT_FALSE(main.breaks_contract());
  EXPECT_DOUBLE_EQ(main.exact_limit, 2e-6);
  MatrixCheck broken;
  broken.exact_error = 5e-6;
  broken.exact_limit = 2e-6;
  main.add(broken);
  EXPECT_TRUE(main.breaks_contract());
  MatrixCheck none;
  none.add(broken);
  EXPECT_TRUE(none.breaks_contract());
}

TEST(AccuracyContract, InaccurateIsADispositionOfItsOwn) {
  EXPECT_STREQ(cache::to_string(cache::Disposition::kInaccurate), "inaccurate");
  EXPECT_EQ(cache::disposition_from_string("inaccurate"), cache::Disposition::kInaccurate);
}

TEST(QuickPickBudget, ShortProductsGetAFewCandidatesLongOnesTimeInProportion) {
  const QuickPickBudget budget;
  // 10 us a run: 6 candidates in 250 ms (less the leaders' rounds and the check: well under 1 ms).
  EXPECT_EQ(budget.allowed_candidates(0.01), 6u);
  EXPECT_EQ(budget.leaders_for(0.01), 3u);
  EXPECT_NEAR(budget.allowed_ms(0.01), 250.0, 1.0);
  // 2 ms a run: 24 candidates in 150 runs' time (300 ms), 3 leaders' rounds kept out of it.
  EXPECT_EQ(budget.allowed_candidates(2.0), 24u);
  EXPECT_EQ(budget.leaders_for(2.0), 3u);
  EXPECT_DOUBLE_EQ(budget.allowed_ms(2.0), 300.0 - (3 * 2 * 7 + 4) * 2.0);
  EXPECT_EQ(budget.allowed_candidates(budget.long_ms), budget.long_candidates);
}

// First use must stay within its bound (a second) however long the product: the candidates, the
// leaders' second look and the winner's check together, where the first candidate alone fits.
TEST(QuickPickBudget, TheWholePickKeepsWithinTheBound) {
  const QuickPickBudget budget;
  size_t last_leaders = budget.leaders;
  for (double first_ms = 0.001; first_ms < 200; first_ms *= 1.5) {
    SCOPED_TRACE(first_ms);
    const size_t leaders = budget.leaders_for(first_ms);
    EXPECT_LE(leaders, last_leaders) << "a longer product affords no more leaders";
    last_leaders = leaders;
    const double rounds = leaders * budget.leader_rounds * budget.runs_per_timing() * first_ms;
    const double check = budget.check_runs * first_ms;
    EXPECT_LE(rounds, budget.leader_share * budget.max_budget_ms + 1e-9);
    // Candidates are timed while their time fits in allowed_ms.
    if (first_ms * (budget.runs_per_timing() + budget.check_runs) <= budget.max_budget_ms) {
      EXPECT_LE(budget.allowed_ms(first_ms) + rounds + check, budget.max_budget_ms + 1e-9);
      // The buffers and references made before (150 ms for a large product on an H200) count
      // against the bound, not against the candidates' time where the bound has room.
      for (const double setup_ms : {150.0, 600.0}) {
        EXPECT_LE(setup_ms + budget.allowed_ms(first_ms, setup_ms) + rounds + check,
                  budget.max_budget_ms + 1e-9);
      }
    }
  }
  EXPECT_DOUBLE_EQ(budget.allowed_ms(2.0, 150), budget.allowed_ms(2.0));
  EXPECT_DOUBLE_EQ(budget.allowed_ms(5.0, 600), 400.0 - (3 * 2 * 7 + 4) * 5.0);
  // 30 ms a run: no second look (two rounds of one leader would take 420 ms of the second).
  EXPECT_EQ(budget.leaders_for(30.0), 0u);
  EXPECT_EQ(budget.leaders_for(10.0), 2u);
}

}  // namespace
}  // namespace tuned
