// The ops' vocabulary for "which problem": what a best configuration is keyed by, and what
// "nearest shape" means. Ops build keys (templates/), the database stores them (cache/), the
// runtime and tuner pass them around; it lives here so none of them includes another for it.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace tuned {

/// "4096x4096x4096": a shape's sizes joined by 'x'.
inline std::string shape_string(const std::vector<int64_t>& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

/// The sizes of a shape_string ("4096x4096x4096", any number of sizes; "" has none), or nullopt
/// when a field is not a non-negative integer.
inline std::optional<std::vector<int64_t>> parse_shape_string(std::string_view text) {
  std::vector<int64_t> shape;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int64_t value = 0;
    auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || value < 0 || (next != end && *next != 'x')) return std::nullopt;
    shape.push_back(value);
    p = next == end ? end : next + 1;
  }
  return shape;
}

/// The key of a best configuration: which device, which op in which variant (a GEMM layout), on
/// which shape and alignment class. shape holds the op's dimensions in its own order (gemm: m, n,
/// k).
struct ProblemKey {
  std::string device_uuid;
  std::string op;      // "gemm"
  std::string variant;  // "NN", "NT", "TN", "TT" for gemm (its layout)
  std::vector<int64_t> shape;
  int alignment = 1;  // widest vector (in elements) every pointer and leading dimension allows

  std::string shape_string() const { return tuned::shape_string(shape); }
};

/// Distance between two shapes in log space: sum over dims of |log2(a) - log2(b)|, dims of 0
/// counted as 1. What "nearest shape" means everywhere.
inline double shape_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const double x = i < a.size() ? static_cast<double>(std::max<int64_t>(a[i], 1)) : 1.0;
    const double y = i < b.size() ? static_cast<double>(std::max<int64_t>(b[i], 1)) : 1.0;
    sum += std::fabs(std::log2(x) - std::log2(y));
  }
  return sum;
}

}  // namespace tuned
