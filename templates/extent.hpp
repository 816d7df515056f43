// Sizes of column-major operands, shared by the ops' tasks and faces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tuned {

/// x rounded up to a multiple of to (> 0).
inline int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// Elements of a column-major buffer of cols columns with leading dimension ld (at least one
/// column, so an empty operand still gets a valid allocation).
inline size_t column_major_elements(int64_t ld, int64_t cols) {
  return static_cast<size_t>(ld) * static_cast<size_t>(std::max<int64_t>(cols, 1));
}

}  // namespace tuned
