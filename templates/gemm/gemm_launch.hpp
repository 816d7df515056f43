// What the GEMM op's launch path (gemm_launch.cpp: launch's passes over k, each [transpose B]
// [pack A and B] [zero tickets] product [sum pass] in the stream's launch chain) shares with its
// descriptor (gemm_op.cpp): the workspace layout that workspace_bytes sizes, and the companion
// kernels that kernel_spec builds beside the product; and what the space's rules (gemm_rules.cpp)
// read of the descriptor: the GEMV orientation. Internal to templates/gemm/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/space.hpp"
#include "templates/gemm/gemm_op.hpp"

namespace tuned::gemm_op {

// gemm.cu's companion kernels: the ticket reset and the aligned copy (PACK).
extern const char* const kZeroTickets;
extern const char* const kPack;

// Whether an operand allows 16-byte vectors: its pointer and its leading dimension.
bool vector_aligned(const void* pointer, int64_t ld);

// gemm.cu's orientation of a GEMV kernel: Y = C (m x n) when n fits its GCOLS columns, else
// Y = C^T; and the rows and columns of Y.
bool gemv_y_is_c(const Config& c, const Problem& p);
int64_t gemv_rows(const Config& c, const Problem& p);
int64_t gemv_cols(const Config& c, const Problem& p);

// Workspace layout: [B transposed (PRETB)] [A packed] [B packed (PACK; B only without PRETB)]
// [partial tiles and tickets (SPLITK > 1)], the last once per product of a batch,
// batch_split_bytes apart (a batch copies nothing: rule copies_for_one_product). Copies have
// leading dimensions a multiple of 4.
struct WorkspaceRegions {
  char* transposed_b;
  char* packed_a;
  char* packed_b;
  float* split;  // partial tiles, then tickets
};
// One product's partial tiles and tickets, rounded up to the workspace's alignment.
size_t batch_split_bytes(const Config& config, const Problem& problem);
// The regions of a launch's workspace (one pass of pack_pass_k's k extent).
WorkspaceRegions workspace_regions(const Config& config, const Problem& problem, void* workspace);
int64_t aligned_ld(int64_t rows);
// (B's copy turned over: n x k, or k x n where B is given transposed.)
int64_t transposed_b_ld(const Problem& p);
// Floats of one partial tile: BM x BN, or GEMV's row block of every column.
int64_t split_tile_floats(const Config& config);

// The operands a packing launch copies: those whose pointer or leading dimension allows no
// 16-byte vectors (B not where PRETB's transposed copy already is aligned).
bool copies_a(const Config& config, const Problem& p);
bool copies_b(const Config& config, const Problem& p);

// The operands as stored: A is rows x cols = (k x m if transposed, else m x k), B likewise.
int64_t a_rows(const Problem& p);
int64_t a_cols(const Problem& p);
int64_t b_rows(const Problem& p);
int64_t b_cols(const Problem& p);

// The problem restricted to k0 <= k < k0 + kc (the same m, n, leading dimensions and alignment).
Problem k_slice(const Problem& p, int64_t kc);

}  // namespace tuned::gemm_op
