#pragma once
// Tensor maps for gemm.cu's TMA-fed kernels (MMA = 4): the descriptor the TMA unit reads an
// operand through, encoded on the host before each launch and passed as a kernel parameter.

#include <array>
#include <cstdint>

namespace tuned::gemm_op {

/// A CUtensorMap's 128 bytes (gemm.cu's TensorMap).
struct alignas(64) TensorMapBytes {
  std::array<uint64_t, 16> bits;
};

/// The column-major float matrices at `base` (`inner` contiguous elements per column, `outer`
/// columns, `ld` floats apart; `products` of them, `stride` floats apart, or one where stride is
/// 0), read in boxes of box_inner x box_outer elements of one matrix stored in the 128-byte
/// swizzle, zeros past the edges. `base` must be 16-byte aligned and `ld` and `stride` multiples
/// of 4 (gemm_op's rules ask for that, or pack). Throws tuned::Error naming `operand` when the
/// driver refuses it.
TensorMapBytes encode_tensor_map(const char* operand, const float* base, int64_t inner,
                                 int64_t outer, int64_t ld, int64_t products, int64_t stride,
                                 int box_inner, int box_outer);

}  // namespace tuned::gemm_op
