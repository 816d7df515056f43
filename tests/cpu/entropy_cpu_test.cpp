// Local entropy on the CPU: every OpenMP path against the double-precision reference (1e-5
// absolute) on random inputs of odd shapes (1x1, 1xn, nx1, windows larger than the matrix, r = 0
// and r = 7, L = 2 and L = 256, FP32 and uint8, padded leading dimensions), known values, and
// clear errors for values outside [0, L) (nothing written) and for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "templates/entropy/entropy_cpu.hpp"
#include "tuned/error.hpp"

namespace tuned::entropy_op {
namespace {

constexpr CpuMethod kMethods[] = {CpuMethod::kDirect, CpuMethod::kTable, CpuMethod::kMixed,
                                  CpuMethod::kPrefix};

Problem problem(int64_t rows, int64_t cols, int radius, int levels, int64_t pad = 0) {
  Problem p;
  p.rows = rows;
  p.cols = cols;
  p.ld_in = std::max<int64_t>(1, rows) + pad;
  p.ld_out = std::max<int64_t>(1, rows) + 2 * pad;
  p.radius = radius;
  p.levels = levels;
  return p;
}

template <typename T>
std::vector<T> random_input(const Problem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> in(static_cast<size_t>(p.ld_in * std::max<int64_t>(1, p.cols)), T(0));
  for (int64_t j = 0; j < p.cols; ++j) {
    for (int64_t i = 0; i < p.rows; ++i) {
      in[static_cast<size_t>(i + j * p.ld_in)] = static_cast<T>(rng() % p.levels);
    }
  }
  return in;
}

// Runs every method and expects each within 1e-5 of the reference; the output's padding rows
// stay as poisoned.
template <typename T>
void expect_all_agree(const Problem& p, uint32_t seed) {
  SCOPED_TRACE(std::to_string(p.rows) + "x" + std::to_string(p.cols) + " r " +
               std::to_string(p.radius) + " L " + std::to_string(p.levels) + " ld " +
               std::to_string(p.ld_in) + "/" + std::to_string(p.ld_out));
  const std::vector<T> in = random_input<T>(p, seed);
  std::vector<double> ref(static_cast<size_t>(p.ld_out * std::max<int64_t>(1, p.cols)));
  reference(p, in.data(), ref.data(), p.ld_out);
  for (CpuMethod method : kMethods) {
    std::vector<float> out(ref.size(), std::nanf(""));
    run_cpu(method, p, in.data(), out.data());
    double worst = 0;
    size_t untouched_padding = 0, padding = 0;
    for (int64_t j = 0; j < p.cols; ++j) {
      for (int64_t i = 0; i < p.ld_out; ++i) {
        const size_t k = static_cast<size_t>(i + j * p.ld_out);
        if (i < p.rows) {
          worst = std::max(worst, std::fabs(out[k] - ref[k]));
          if (std::isnan(out[k])) worst = INFINITY;
        } else {
          ++padding;
          untouched_padding += std::isnan(out[k]);
        }
      }
    }
    EXPECT_LE(worst, 1e-5) << to_string(method);
    EXPECT_EQ(untouched_padding, padding) << to_string(method);
  }
}

TEST(EntropyCpu, EveryPathMatchesTheReferenceOnOddShapes) {
  uint32_t seed = 1;
  for (const Problem& p :
       {problem(1, 1, 2, 16), problem(1, 37, 2, 16), problem(41, 1, 3, 16), problem(7, 9, 7, 16),
        problem(64, 50, 2, 16), problem(33, 29, 0, 16), problem(30, 31, 7, 2),
        problem(45, 38, 1, 256), problem(50, 47, 2, 16, 3), problem(127, 70, 5, 7, 1)}) {
    expect_all_agree<float>(p, seed++);
    expect_all_agree<uint8_t>(p, seed++);
  }
}

TEST(EntropyCpu, KnownValues) {
  // Nine different levels in a 3x3 window: log 9 at the centre; r = 0: 0 everywhere; a constant
  // matrix: 0 everywhere.
  Problem p = problem(3, 3, 1, 16);
  const std::vector<float> distinct = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  for (CpuMethod method : kMethods) {
    std::vector<float> out(9);
    run_cpu(method, p, distinct.data(), out.data());
    EXPECT_NEAR(out[4], std::log(9.0), 1e-6) << to_string(method);
    // A corner's window is 2x2 with four different levels.
    EXPECT_NEAR(out[0], std::log(4.0), 1e-6) << to_string(method);
  }
  p = problem(5, 4, 0, 16);
  const std::vector<float> any = random_input<float>(p, 9);
  const std::vector<float> constant(20, 3.0f);
  for (CpuMethod method : kMethods) {
    std::vector<float> out(20, 1.0f);
    run_cpu(method, p, any.data(), out.data());
    for (float v : out) EXPECT_EQ(v, 0.0f) << to_string(method);
    Problem wide = problem(5, 4, 3, 16);
    run_cpu(method, wide, constant.data(), out.data());
    for (float v : out) EXPECT_NEAR(v, 0.0f, 1e-6) << to_string(method);
  }
}

TEST(EntropyCpu, ValuesOutsideTheLevelsAreErrorsAndNothingIsWritten) {
  const Problem p = problem(6, 5, 2, 16);
  for (float bad : {16.0f, -1.0f, 1.5f, std::nanf("")}) {
    std::vector<float> in = random_input<float>(p, 3);
    in[2 + 3 * 6] = bad;  // row 2, column 3
    for (CpuMethod method : kMethods) {
      std::vector<float> out(30, 7.0f);
      try {
        run_cpu(method, p, in.data(), out.data());
        ADD_FAILURE() << bad << " accepted by " << to_string(method);
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("input (2, 3)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[0, levels = 16)"), std::string::npos) << e.what();
      }
      for (float v : out) EXPECT_EQ(v, 7.0f);
    }
  }
  std::vector<uint8_t> bytes = random_input<uint8_t>(p, 4);
  bytes[0] = 200;
  std::vector<float> out(30);
  EXPECT_THROW(run_cpu(CpuMethod::kPrefix, p, bytes.data(), out.data()), Error);
}

TEST(EntropyCpu, BadArgumentsNameTheRule) {
  auto expect_error = [](Problem p, const std::string& expected) {
    std::vector<float> in(64, 0.0f), out(64);
    try {
      run_cpu(CpuMethod::kDirect, p, in.data(), out.data());
      ADD_FAILURE() << expected << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  Problem p = problem(4, 4, 8, 16);
  expect_error(p, "radius: must be in 0..7 (got 8)");
  p = problem(4, 4, 2, 1);
  expect_error(p, "levels: must be in 2..256 (got 1)");
  p = problem(4, 4, 2, 257);
  expect_error(p, "levels: must be in 2..256 (got 257)");
  p = problem(4, 4, 2, 16);
  p.ld_in = 3;
  expect_error(p, "ld_in: must be >= max(1, rows) = 4 (got 3)");
  p = problem(-1, 4, 2, 16);
  expect_error(p, "rows: must be >= 0");
  std::vector<float> out(16);
  EXPECT_THROW(run_cpu(CpuMethod::kDirect, problem(4, 4, 2, 16), static_cast<const float*>(nullptr),
                       out.data()),
               Error);
}

}  // namespace
}  // namespace tuned::entropy_op
