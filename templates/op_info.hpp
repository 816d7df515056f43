// What an op is, without any of its GPU machinery: name, shape dimensions and their ranges,
// variants, default tuning shapes, rate unit and parameters. Each op's info() (<op>_op.cpp) returns
// its OpInfo; its descriptor's registration (registered_op.hpp) adds the factories and runtime
// face, and the registry (registry.hpp) lists them.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/space.hpp"

namespace tuned {

struct OpInfo {
  std::string name;                // "gemm"
  std::vector<std::string> dims;   // names of the shape's dimensions: {"M", "N", "K"}
  /// Trailing dimensions a shape may add to dims, each 1 where left out (GEMM's BATCH: a strided
  /// batch of products is a problem of its own).
  std::vector<std::string> optional_dims;
  std::vector<std::string> variants;  // {"NN", "NT", "TN", "TT"}; the first is the default
  std::vector<std::vector<int64_t>> default_shapes;  // what `autotune --op NAME` tunes
  std::string rate_unit;           // "TFLOP/s" or "GB/s"
  int64_t max_size = INT32_MAX;    // largest size of any dimension the kernels handle
  /// Ranges of the dimensions that are not sizes, by name (entropy's RADIUS 0..7, LEVELS
  /// 2..256); the others take 1..max_size.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;
  std::vector<Param> params;       // each parameter and the values it may take

  int rank() const { return static_cast<int>(dims.size()); }
  /// The most sizes a shape may have: dims and optional_dims.
  int max_rank() const { return rank() + static_cast<int>(optional_dims.size()); }
  /// The name of dimension i (0 <= i < max_rank()).
  const std::string& dim_name(int i) const;
  /// The index of a dimension by name, -1 where the op has none of that name.
  int dim_index(const std::string& name) const;
  /// The values dimension i may take: [first, second].
  std::pair<int64_t, int64_t> range_of(int i) const;
  /// Index of a variant name; throws Error(TUNED_STATUS_INVALID_ARGUMENT) listing the known ones.
  int variant_index(const std::string& variant) const;
};

}  // namespace tuned
