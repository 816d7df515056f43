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
  // 10 us a run: 6 candidates in 250 ms.
  EXPECT_EQ(budget.allowed_candidates(0.01), 6u);
  EXPECT_DOUBLE_EQ(budget.allowed_ms(0.01), 250.0);
  // 20 ms a run: 16 candidates in 150 runs' time (3 s).
  EXPECT_EQ(budget.allowed_candidates(20.0), 16u);
  EXPECT_DOUBLE_EQ(budget.allowed_ms(20.0), 3000.0);
  // 100 ms a run: never past 5 s.
  EXPECT_DOUBLE_EQ(budget.allowed_ms(100.0), 5000.0);
  EXPECT_EQ(budget.allowed_candidates(budget.long_ms), budget.long_candidates);
}

}  // namespace
}  // namespace tuned
