#include "templates/entropy/entropy_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tuned/error.hpp"

namespace tuned::entropy_op {
namespace {

// The window of (i, j), clipped: rows [i0, i1), columns [j0, j1).
struct Window {
  int64_t i0, i1, j0, j1;
  int64_t n() const { return (i1 - i0) * (j1 - j0); }
};

Window window_of(const Problem& p, int64_t i, int64_t j) {
  return {std::max<int64_t>(0, i - p.radius), std::min<int64_t>(p.rows, i + p.radius + 1),
          std::max<int64_t>(0, j - p.radius), std::min<int64_t>(p.cols, j + p.radius + 1)};
}

template <typename T>
void check_values(const Problem& p, const T* in) {
  for (int64_t j = 0; j < p.cols; ++j) {
    for (int64_t i = 0; i < p.rows; ++i) {
      const T v = in[i + j * p.ld_in];
      const double d = static_cast<double>(v);
      if (!(d >= 0 && d < p.levels && d == std::floor(d))) {
        throw Error(TUNED_STATUS_INVALID_ARGUMENT, bad_value_message(i, j, d, p.levels));
      }
    }
  }
}

template <typename T>
void reference_of(const Problem& p, const T* in, double* out, int64_t ld_out) {
  std::vector<int64_t> counts(static_cast<size_t>(p.levels));
  for (int64_t j = 0; j < p.cols; ++j) {
    for (int64_t i = 0; i < p.rows; ++i) {
      const Window w = window_of(p, i, j);
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t q = w.j0; q < w.j1; ++q) {
        for (int64_t s = w.i0; s < w.i1; ++s) ++counts[static_cast<size_t>(in[s + q * p.ld_in])];
      }
      const double n = static_cast<double>(w.n());
      double sum = 0;
      for (int64_t c : counts) {
        if (c > 0) sum += static_cast<double>(c) * std::log(static_cast<double>(c));
      }
      out[i + j * ld_out] = std::log(n) - sum / n;
    }
  }
}

// log c for c = 0..(2r+1)^2 (log 0 stands for 0: a count of 0 adds nothing).
template <typename Real>
std::vector<Real> log_table(int radius) {
  const int n = window_elements(radius);
  std::vector<Real> table(static_cast<size_t>(n) + 1, Real(0));
  for (int c = 1; c <= n; ++c) table[static_cast<size_t>(c)] = static_cast<Real>(std::log(c));
  return table;
}

// Counting paths: the table's precision and the sums' precision.
template <typename Table, typename Sum, typename T>
void counting(const Problem& p, const T* in, float* out) {
  const std::vector<Table> lg = log_table<Table>(p.radius);
#pragma omp parallel
  {
    std::vector<int> counts(static_cast<size_t>(p.levels));
#pragma omp for schedule(static)
    for (int64_t j = 0; j < p.cols; ++j) {
      for (int64_t i = 0; i < p.rows; ++i) {
        const Window w = window_of(p, i, j);
        std::fill(counts.begin(), counts.end(), 0);
        for (int64_t q = w.j0; q < w.j1; ++q) {
          const T* column = in + q * p.ld_in;
          for (int64_t s = w.i0; s < w.i1; ++s) ++counts[static_cast<size_t>(column[s])];
        }
        Sum sum = 0;
        for (int c : counts) sum += static_cast<Sum>(c) * static_cast<Sum>(lg[static_cast<size_t>(c)]);
        const auto n = static_cast<size_t>(w.n());
        out[i + j * p.ld_out] =
            static_cast<float>(static_cast<Sum>(lg[n]) - sum / static_cast<Sum>(n));
      }
    }
  }
}

// 2-D prefix counts per level over a band of input columns [b0, b1): P[v][s][q] = number of
// elements equal to v in rows [0, s) of band columns [b0, b0 + q). A window's count of v is four
// lookups. Bands keep each thread's table near kBandBytes.
template <typename T>
void prefix(const Problem& p, const T* in, float* out) {
  const std::vector<double> lg = log_table<double>(p.radius);
  constexpr size_t kBandBytes = size_t{32} << 20;
  const int64_t per_column = static_cast<int64_t>(p.levels) * (p.rows + 1) * 4;
  const int64_t band = std::max<int64_t>(1, static_cast<int64_t>(kBandBytes) / per_column -
                                                2 * p.radius - 1);
  const int64_t bands = (p.cols + band - 1) / band;
#pragma omp parallel
  {
    std::vector<uint32_t> table;
#pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t out0 = b * band, out1 = std::min(p.cols, out0 + band);
      const int64_t b0 = std::max<int64_t>(0, out0 - p.radius);
      const int64_t b1 = std::min(p.cols, out1 + p.radius);
      const int64_t width = b1 - b0 + 1, height = p.rows + 1;
      table.assign(static_cast<size_t>(p.levels * width * height), 0);
      auto at = [&](int64_t v, int64_t s, int64_t q) -> uint32_t& {
        return table[static_cast<size_t>((v * width + q) * height + s)];
      };
      for (int64_t q = 1; q < width; ++q) {
        const T* column = in + (b0 + q - 1) * p.ld_in;
        for (int64_t v = 0; v < p.levels; ++v) {
          uint32_t in_column = 0;  // count of v in rows [0, s) of this column
          for (int64_t s = 1; s < height; ++s) {
            in_column += static_cast<int64_t>(column[s - 1]) == v;
            at(v, s, q) = at(v, s, q - 1) + in_column;
          }
        }
      }
      for (int64_t j = out0; j < out1; ++j) {
        for (int64_t i = 0; i < p.rows; ++i) {
          const Window w = window_of(p, i, j);
          const int64_t q0 = w.j0 - b0, q1 = w.j1 - b0;
          double sum = 0;
          for (int64_t v = 0; v < p.levels; ++v) {
            const uint32_t c = at(v, w.i1, q1) - at(v, w.i0, q1) - at(v, w.i1, q0) + at(v, w.i0, q0);
            sum += static_cast<double>(c) * lg[c];
          }
          const auto n = static_cast<size_t>(w.n());
          out[i + j * p.ld_out] = static_cast<float>(lg[n] - sum / static_cast<double>(n));
        }
      }
    }
  }
}

template <typename T>
void run_of(CpuMethod method, const Problem& p, const T* in, float* out) {
  validate_problem(p);
  if (p.rows == 0 || p.cols == 0) return;
  require_argument(in != nullptr, "input", "must not be NULL when rows and cols are > 0");
  require_argument(out != nullptr, "output", "must not be NULL when rows and cols are > 0");
  check_values(p, in);
  switch (method) {
    case CpuMethod::kDirect:
      return counting<double, double>(p, in, out);
    case CpuMethod::kTable:
      return counting<float, float>(p, in, out);
    case CpuMethod::kMixed:
      return counting<float, double>(p, in, out);
    case CpuMethod::kPrefix:
      return prefix(p, in, out);
  }
}

}  // namespace

void validate_problem(const Problem& p) {
  // Rules that quote numbers format them only when they fail (this runs on every call).
  require_argument(p.rows >= 0, "rows",
                   [&] { return "must be >= 0 (got " + std::to_string(p.rows) + ")"; });
  require_argument(p.cols >= 0, "cols",
                   [&] { return "must be >= 0 (got " + std::to_string(p.cols) + ")"; });
  require_argument(p.ld_in >= std::max<int64_t>(1, p.rows), "ld_in", [&] {
    return "must be >= max(1, rows) = " + std::to_string(std::max<int64_t>(1, p.rows)) +
           " (got " + std::to_string(p.ld_in) + ")";
  });
  require_argument(p.ld_out >= std::max<int64_t>(1, p.rows), "ld_out", [&] {
    return "must be >= max(1, rows) = " + std::to_string(std::max<int64_t>(1, p.rows)) +
           " (got " + std::to_string(p.ld_out) + ")";
  });
  require_argument(p.radius >= 0 && p.radius <= kMaxRadius, "radius", [&] {
    return "must be in 0.." + std::to_string(kMaxRadius) + " (got " + std::to_string(p.radius) +
           ")";
  });
  require_argument(p.levels >= 2 && p.levels <= kMaxLevels, "levels", [&] {
    return "must be in 2.." + std::to_string(kMaxLevels) + " (got " + std::to_string(p.levels) +
           ")";
  });
}

std::string bad_value_message(int64_t i, int64_t j, double value, int levels) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return "input (" + std::to_string(i) + ", " + std::to_string(j) + ") = " + text +
         ": values must be integers in [0, levels = " + std::to_string(levels) +
         "); nothing was written";
}

CpuMethod default_cpu_method(const Problem& p) {
  // Prefix counts cost 4 lookups per level, counting one update per window element and two
  // passes over the levels.
  return window_elements(p.radius) > 2 * p.levels ? CpuMethod::kPrefix : CpuMethod::kMixed;
}

void validate_values(const Problem& p, const float* in) { check_values(p, in); }
void validate_values(const Problem& p, const uint8_t* in) { check_values(p, in); }

void reference(const Problem& p, const float* in, double* out, int64_t ld_out) {
  validate_problem(p);
  check_values(p, in);
  reference_of(p, in, out, ld_out);
}
void reference(const Problem& p, const uint8_t* in, double* out, int64_t ld_out) {
  validate_problem(p);
  check_values(p, in);
  reference_of(p, in, out, ld_out);
}

const char* to_string(CpuMethod method) {
  switch (method) {
    case CpuMethod::kDirect:
      return "direct";
    case CpuMethod::kTable:
      return "table";
    case CpuMethod::kMixed:
      return "mixed";
    case CpuMethod::kPrefix:
      return "prefix";
  }
  return "?";
}

void run_cpu(CpuMethod method, const Problem& p, const float* in, float* out) {
  run_of(method, p, in, out);
}
void run_cpu(CpuMethod method, const Problem& p, const uint8_t* in, float* out) {
  run_of(method, p, in, out);
}

}  // namespace tuned::entropy_op
