// Sizes of column-major operands, shared by the ops' tasks and faces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tuned {

/// x rounded up to a multiple of to (> 0).
inline int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// The smallest power of two >= x.
inline int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

/// Whether two column-major operands (rows x cols, leading dimension ld, elements of the given
/// bytes; at least one element each) share a byte: the out-of-place ops refuse that.
inline bool operands_overlap(const void* a, int64_t rows_a, int64_t cols_a, int64_t lda,
                             size_t bytes_a, const void* b, int64_t rows_b, int64_t cols_b,
                             int64_t ldb, size_t bytes_b) {
  const auto begin_a = reinterpret_cast<uintptr_t>(a), begin_b = reinterpret_cast<uintptr_t>(b);
  const uintptr_t end_a = begin_a + static_cast<uintptr_t>((cols_a - 1) * lda + rows_a) * bytes_a;
  const uintptr_t end_b = begin_b + static_cast<uintptr_t>((cols_b - 1) * ldb + rows_b) * bytes_b;
  return !(end_a <= begin_b || end_b <= begin_a);
}

/// Elements of a column-major buffer of cols columns with leading dimension ld (at least one
/// column, so an empty operand still gets a valid allocation).
inline size_t column_major_elements(int64_t ld, int64_t cols) {
  return static_cast<size_t>(ld) * static_cast<size_t>(std::max<int64_t>(cols, 1));
}

}  // namespace tuned
