// Local entropy on the CPU: for every element of a rows x cols matrix (column-major, leading
// dimension ld), the Shannon entropy (natural log) of the values in the (2r+1) x (2r+1) window
// centred on it, clipped at the borders: H = log n - (1/n) sum_v c_v log c_v over the window's n
// elements and the counts c_v of each level v in [0, levels). Inputs are FP32 holding integers or
// uint8. The double-precision reference every other path (CPU and GPU) is checked against, and
// the OpenMP paths the library runs when no GPU is present or a problem is small.
#pragma once

#include <cstdint>
#include <string>

namespace tuned::entropy_op {

struct Problem {
  int64_t rows = 0, cols = 0;
  int64_t ld_in = 0, ld_out = 0;  // leading dimensions (>= rows)
  int radius = 2;                 // r: the window is (2r+1) x (2r+1), 0..7
  int levels = 16;                // L: values lie in [0, L), 2..256
};

constexpr int kMaxRadius = 7;
constexpr int kMaxLevels = 256;

/// Elements of a whole window of this radius: (2r + 1)^2.
constexpr int window_elements(int radius) { return (2 * radius + 1) * (2 * radius + 1); }

/// Checks sizes, leading dimensions, radius and levels; throws Error(TUNED_STATUS_INVALID_ARGUMENT)
/// naming the argument and the rule.
void validate_problem(const Problem& p);

/// Every input value an integer in [0, levels): otherwise Error(TUNED_STATUS_INVALID_ARGUMENT)
/// naming the first element (row, column) and its value. Called before anything is written.
void validate_values(const Problem& p, const float* in);
void validate_values(const Problem& p, const uint8_t* in);

/// The error text for element (i, j) holding value, not an integer in [0, levels).
std::string bad_value_message(int64_t i, int64_t j, double value, int levels);

/// The reference: counts per window, logarithms and sums in double (std::log), single thread.
void reference(const Problem& p, const float* in, double* out, int64_t ld_out);
void reference(const Problem& p, const uint8_t* in, double* out, int64_t ld_out);

/// The CPU paths (OpenMP over columns of the output):
///   kDirect  counts each window; log table of 1..n in double, sums in double
///   kTable   counts each window; log table in float, sums in float
///   kMixed   counts each window; log table in float, sums in double
///   kPrefix  2-D prefix counts per level over bands of columns: each window's counts in O(L)
///            whatever its size (wins for large windows)
enum class CpuMethod { kDirect, kTable, kMixed, kPrefix };
const char* to_string(CpuMethod method);
/// The method the library runs for a problem: prefix counts for windows larger than twice the
/// level count, else counting with a float table and double sums.
CpuMethod default_cpu_method(const Problem& p);

/// Validates the values, then writes out (FP32). Throws as validate_values does, writing nothing.
void run_cpu(CpuMethod method, const Problem& p, const float* in, float* out);
void run_cpu(CpuMethod method, const Problem& p, const uint8_t* in, float* out);

}  // namespace tuned::entropy_op
