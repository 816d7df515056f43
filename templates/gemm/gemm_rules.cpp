// The GEMM space's rules, in the order they are checked: validity of the matrix-vector kernel and
// tiles, of the tensor-core families, of the launch, then pruning, then the accuracy contract
// (last, so a config that breaks another rule too is named by that one). make_space (gemm_op.cpp)
// adds them after the parameters.
#include "templates/gemm/gemm_rules.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "templates/extent.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/gemm/math_family.hpp"

namespace tuned::gemm_op {

namespace {

// What the space's rules read of the device and the problem (defaults where the device does not
// say).
struct SpaceLimits {
  SpaceLimits(const DeviceInfo& device, const Problem& problem)
      : m_cap(std::max<int64_t>(16, pow2_at_least(problem.m))),
        n_cap(std::max<int64_t>(16, pow2_at_least(problem.n))),
        k_cap(std::max<int64_t>(8, pow2_at_least(problem.k))),
        max_threads(std::min(1024, device.max_threads_per_block)),
        threads_per_sm(device.max_threads_per_sm > 0 ? device.max_threads_per_sm : 2048),
        regs_per_sm(device.regs_per_sm > 0 ? device.regs_per_sm : 65536),
        smem_limit(device.smem_per_block_optin),
        smem_per_sm(device.smem_per_sm > 0 ? device.smem_per_sm : smem_limit),
        alignment(problem.alignment),
        cc(device.compute_capability()),
        sms(std::max(1, device.sm_count)) {}
  int64_t m_cap, n_cap, k_cap;  // the largest tile sides worth trying on the problem
  int max_threads, threads_per_sm, regs_per_sm;
  size_t smem_limit, smem_per_sm;
  int alignment, cc;
  int64_t sms;
};

// Validity of the matrix-vector kernel and of the tiles: what compiles, launches and computes the
// right result.
void add_gemv_and_tile_rules(Space& space, const SpaceLimits& lim, const Problem& problem) {
  // GCOLS: the fewest columns (a power of two) that hold the product's vectors, so no kernel
  // computes columns it throws away and one config serves each class of them.
  space.require({"gemv_gcols_holds_the_vectors", {"GEMV", "GCOLS"}, [=](const Config& c) {
                   if (c.get("GEMV") == 0) return true;
                   const int64_t cols = gemv_cols(c, problem);
                   return cols <= c.get("GCOLS") &&
                          (c.get("GCOLS") == 1 || 2 * cols > c.get("GCOLS"));
                 }});
  space.require({"gemv_rows_hold_warps_of_vectors", {"GEMV", "VEC"}, [](const Config& c) {
                   return c.get("GEMV") == 0 || c.get("GEMV") % (8 * c.get("VEC")) == 0;
                 }});
  space.require({"warp_tile_divides_block_tile", {"BM", "BN", "WM", "WN"}, [](const Config& c) {
                   return c.get("BM") % c.get("WM") == 0 && c.get("BN") % c.get("WN") == 0;
                 }});
  // Rules calling threads_per_block, shared_bytes or estimated_registers read GEMV too.
  space.require({"threads_per_block",
                 {"GEMV", "BM", "BN", "WM", "WN", "MMA"},
                 [=](const Config& c) { return threads_per_block(c) <= lim.max_threads; }});
  // A lane holds WM*WN/32 accumulators; past 128 the kernel spills (MMA = 1: doubles, past 64;
  // KSUM: a second set for the partial chain's sums).
  space.require({"accumulators_per_thread", {"WM", "WN", "MMA", "KSUM"}, [](const Config& c) {
                   const int sets = sums_in_chains(c) ? 2 : 1;
                   return c.get("WM") * c.get("WN") * sets <= 32 * (sums_in_double(c) ? 64 : 128);
                 }});
  // The FP64 tensor-core kernels sum in double: nothing to split.
  space.require({"slice_sums_for_ffma", {"MMA", "KSUM"}, [](const Config& c) {
                   return c.get("KSUM") == 0 || !sums_in_double(c);
                 }});
  // FP64 mma.sync m16n8k8 came with sm_90, TF32 with sm_80.
  space.require({"mma_needs_sm90", {"MMA"}, [=](const Config& c) {
                   return c.get("MMA") != 1 || lim.cc >= 90;
                 }});
  space.require({"split_tf32_needs_sm80", {"MMA"}, [=](const Config& c) {
                   return c.get("MMA") != 2 || lim.cc >= 80;
                 }});
  // wgmma exists on sm_90a only (the architecture-specific target: not on later GPUs).
  space.require(
      {"wgmma_needs_sm90", {"MMA"}, [=](const Config& c) { return !is_wgmma(c) || lim.cc == 90; }});
  // Compute types (tuned_gemm_ex): plain TF32 only where the caller accepts TF32 rounding; the
  // pedantic type computes in FFMA alone. (The default and the TF32 type may pick any FP32-accurate
  // arithmetic by speed: the accuracy contract holds for them.)
  space.require({"plain_tf32_only_for_the_tf32_type", {"MMA"}, [=](const Config& c) {
                   return !is_plain_tf32(c) || problem.compute == Compute::kTf32;
                 }});
  space.require({"pedantic_type_computes_in_ffma", {"MMA"}, [=](const Config& c) {
                   return problem.compute != Compute::kPedantic || c.get("MMA") == 0;
                 }});
}

// Validity of the tensor-core families (mma.sync, wgmma, the TMA-fed kernels) and the lanes' grid.
void add_tensor_core_rules(Space& space, const Problem& problem) {
  // A warpgroup (4 warps of 16 rows) owns 64 rows and one wgmma's WN columns; k comes in slices of
  // one 32-float row of the 128-byte swizzle (each slice's sum from zero: slices of 64 were beyond
  // the accuracy contract on an H200, 2.2x cuBLAS's error at k = 127 with 3 splits); stages filled
  // through registers (PIPE 2 or 3).
  space.require({"wgmma_tiles", {"BM", "BK", "WM", "WN", "PIPE", "MMA"}, [](const Config& c) {
                   if (c.get("MMA") != 3) return true;
                   const int wn = c.get("WN");
                   return c.get("BM") % 64 == 0 && c.get("BK") == 32 && c.get("WM") == 16 &&
                          (wn == 32 || wn == 64 || wn == 128 || wn == 256) &&
                          (c.get("PIPE") == 2 || c.get("PIPE") == 3);
                 }});
  // MMA = 4, 5: the same warpgroups with WN up to 128 (a consumer holds its sums, its slice's and
  // A's fragments of two steps), TMA boxes of at most 256 rows, 3 or 4 stages (each BM + 2 BN
  // rows of 128 bytes).
  space.require(
      {"tma_wgmma_tiles", {"BM", "BN", "BK", "WM", "WN", "PIPE", "MMA"}, [](const Config& c) {
         if (!is_tma(c)) return true;
         const int wn = c.get("WN");
         return c.get("BM") % 64 == 0 && c.get("BM") <= 256 && c.get("BN") <= 256 &&
                c.get("BK") == 32 && c.get("WM") == 16 && (wn == 32 || wn == 64 || wn == 128) &&
                (c.get("PIPE") == 3 || c.get("PIPE") == 4);
       }});
  // The TMA reads whole 16-byte runs (VEC = 4: aligned operands, or packed ones) and B
  // k-contiguous (a transposed B is copied first: PRETB = 1).
  space.require({"tma_reads_16_byte_runs", {"MMA", "VEC"}, [](const Config& c) {
                   return !is_tma(c) || c.get("VEC") == 4;
                 }});
  space.require({"tma_reads_b_k_contiguous", {"MMA", "PRETB"}, [=](const Config& c) {
                   return !is_tma(c) || !reads_b_transposed(c, problem);
                 }});
  // Sums straight in the tensor cores truncate: 2.9e-5 normwise at k = 4096 on an H200, growing
  // with k. Each slice's products are summed from zero and added in float (KSUM = 1).
  space.require({"wgmma_sums_slices_in_float", {"MMA", "KSUM"}, [](const Config& c) {
                   return !is_wgmma(c) || c.get("KSUM") >= 1;
                 }});
  // Partial chains of slice sums (KSUM = 2): the TMA-fed kernels' (MMA = 3's consumers have no
  // registers for a second set of sums).
  space.require({"slice_chains_tma_fed", {"MMA", "KSUM"}, [](const Config& c) {
                   return c.get("KSUM") != 2 || is_tma(c);
                 }});
  space.require({"mma_tiles_16x8x8", {"BK", "WM", "WN", "MMA"}, [](const Config& c) {
                   return c.get("MMA") == 0 ||
                          (c.get("BK") % 8 == 0 && c.get("WM") % 16 == 0 && c.get("WN") % 8 == 0);
                 }});
  space.require(
      {"lane_grid_divides_warp_tile", {"WM", "WN", "TM", "TN", "LM"}, [](const Config& c) {
         const int lm = c.get("LM"), ln = 32 / lm;
         return 32 % lm == 0 && c.get("WM") % (lm * c.get("TM")) == 0 &&
                c.get("WN") % (ln * c.get("TN")) == 0;
       }});
}

// Validity of the launch: vectors, splits, shared memory, blocks per SM, the B transpose.
void add_launch_rules(Space& space, const SpaceLimits& lim, const Problem& problem) {
  space.require({"vec_divides_tiles", {"BM", "BN", "BK", "VEC"}, [](const Config& c) {
                   const int v = c.get("VEC");
                   return c.get("BM") % v == 0 && c.get("BN") % v == 0 && c.get("BK") % v == 0;
                 }});
  // (The matrix-vector kernel checks its operands at launch and reads one float at a time where
  // they allow no vectors; it writes C one float at a time.)
  space.require({"vec_fits_alignment", {"GEMV", "VEC", "PACK"}, [=](const Config& c) {
                   return c.get("VEC") <= lim.alignment || c.get("PACK") == 1 || c.get("GEMV") > 0;
                 }});
  space.require({"reduce_pass_needs_splits", {"SPLITK", "REDUCE"}, [](const Config& c) {
                   return c.get("REDUCE") == 0 || c.get("SPLITK") > 1;
                 }});
  space.require({"tail_split_or_split_k", {"SPLITK", "TAIL"}, [](const Config& c) {
                   return c.get("TAIL") == 0 || c.get("SPLITK") == 1;
                 }});
  space.require(
      {"pad_keeps_rows_aligned", {"PAD"}, [](const Config& c) { return c.get("PAD") % 4 == 0; }});
  space.require({"shared_memory",
                 {"GEMV", "BM", "BN", "BK", "PAD", "AKM", "BKM", "PIPE", "MMA", "CSTAGE"},
                 [=](const Config& c) { return shared_bytes(c) <= lim.smem_limit; }});
  space.require({"unroll_divides_bk", {"BK", "UNROLL"}, [](const Config& c) {
                   return c.get("BK") % c.get("UNROLL") == 0;
                 }});
  space.require({"cp_async_needs_sm80", {"PIPE"}, [=](const Config& c) {
                   return c.get("PIPE") < 2 || lim.cc >= 80;
                 }});
  space.require(
      {"min_blocks_fit_sm",
       {"GEMV", "BM", "BN", "WM", "WN", "BK", "PAD", "AKM", "BKM", "PIPE", "MINB", "MMA", "CSTAGE"},
       [=](const Config& c) {
         const int b = c.get("MINB");
         return threads_per_block(c) * b <= lim.threads_per_sm &&
                shared_bytes(c) * b <= lim.smem_per_sm;
       }});
  space.require(
      {"split_grid", {"SPLITK"}, [](const Config& c) { return c.get("SPLITK") <= 65535; }});
  // PRETB turns B's layout over: k-contiguous to n-contiguous for the FFMA kernels, the other
  // way for the TMA-fed ones.
  space.require({"pretranspose_needs_k_contiguous_b", {"PRETB", "MMA"}, [=](const Config& c) {
                   return c.get("PRETB") == 0 || problem.trans_b == is_tma(c);
                 }});
  // The workspace holds one copy of B transposed or of A and B packed: a batch's products are
  // multiplied as they are stored (so a TMA-fed kernel needs B k-contiguous and 16-byte runs).
  space.require({"copies_for_one_product", {"GEMV", "PRETB", "PACK"}, [=](const Config& c) {
                   return problem.batch == 1 || (c.get("PRETB") == 0 && !packs(c, problem));
                 }});
}

// Pruning: valid configs that cannot be worth measuring on this problem.
void add_pruning_rules(Space& space, const SpaceLimits& lim, const Problem& problem) {
  space.require(
      {"bm_fits_m", {"BM"}, [=](const Config& c) { return c.get("BM") <= lim.m_cap; }, true});
  space.require(
      {"bn_fits_n", {"BN"}, [=](const Config& c) { return c.get("BN") <= lim.n_cap; }, true});
  space.require(
      {"bk_fits_k", {"BK"}, [=](const Config& c) { return c.get("BK") <= lim.k_cap; }, true});
  // The compiler's register cap is 255, or less when MINB blocks must fit the register file;
  // configs whose estimate exceeds it spill (measured: about a quarter of unpruned trials).
  space.require({"registers_fit",
                 {"GEMV", "BM", "BN", "BK", "WM", "WN", "TM", "TN", "LM", "VEC", "AKM", "BKM",
                  "PIPE", "MINB", "MMA", "KSUM", "AHEAD"},
                 [=](const Config& c) {
                   const int cap =
                       std::min(255, lim.regs_per_sm / (threads_per_block(c) * c.get("MINB")));
                   return estimated_registers(c) <= cap;
                 },
                 true});
  // Packing is a pass over A and B: only for vectors the operands' alignment does not allow.
  space.require(
      {"pack_for_wider_vectors",
       {"VEC", "PACK"},
       [=](const Config& c) { return c.get("PACK") == 0 || c.get("VEC") > lim.alignment; },
       true});
  // A tail exists only past one full wave (at one block per SM, the most a wave can be short of).
  space.require(
      {"tail_after_full_waves",
       {"GEMV", "BM", "BN", "TAIL"},
       [=](const Config& c) { return c.get("TAIL") == 0 || tile_count(c, problem) > lim.sms; },
       true});
  // Transposing B costs a pass over it: worth it only when many block rows reuse it.
  // (MMA = 4 needs it for a transposed B; its product costs ~3x an FFMA one's per flop less, so
  // from m = 256.)
  space.require({"pretranspose_when_m_large",
                 {"PRETB", "MMA"},
                 [=](const Config& c) {
                   return c.get("PRETB") == 0 || problem.m >= (is_tma(c) ? 256 : 2048);
                 },
                 true});
  // Grouping needs more block rows than one group to change the order.
  space.require({"swizzle_groups_rows",
                 {"BM", "SWZ"},
                 [=](const Config& c) {
                   const int64_t tiles_m = (problem.m + c.get("BM") - 1) / c.get("BM");
                   return c.get("SWZ") == 0 || c.get("SWZ") < tiles_m;
                 },
                 true});
  // Split-K pays for its workspace traffic only when the tiles alone leave SMs idle, and each
  // split needs at least two slices of k to amortize its epilogue.
  // (GEMV: row blocks for tiles, splits of at least two 32-element steps of k.)
  space.require({"split_k_when_few_tiles",
                 {"GEMV", "BM", "BN", "BK", "SPLITK", "GCOLS"},  // GCOLS: a GEMV's tile count
                 [=](const Config& c) {
                   const int64_t s = c.get("SPLITK");
                   if (s == 1) return true;
                   const int64_t tiles = tile_count(c, problem);
                   const int64_t step = is_gemv(c) ? 32 : c.get("BK");
                   const int64_t slices = (problem.k + step - 1) / step;
                   return tiles < 2 * lim.sms && slices >= 2 * s;
                 },
                 true});
  // MMA: the operands as stored (a transposing copy would only undo the layout the fragments
  // read best), copied by cp.async (the register paths were slower for every FFMA shape too).
  space.require({"mma_keeps_operands_as_stored",
                 {"AKM", "BKM", "PRETB", "MMA"},
                 [=](const Config& c) {
                   return c.get("MMA") == 0 ||
                          (c.get("AKM") == (problem.trans_a ? 0 : 1) &&
                           c.get("BKM") == (reads_b_transposed(c, problem) ? 1 : 0));
                 },
                 true});
  space.require({"mma_copies_async",
                 {"PIPE", "MMA"},
                 [](const Config& c) { return c.get("MMA") == 0 || c.get("PIPE") >= 2; },
                 true});
  // Staging C pays where its stores cannot be vector-wide (an unaligned C writes a lane's strided
  // rows one float each); with 16-byte stores the fragments' runs are whole sectors already.
  space.require({"stage_c_where_stores_are_narrow",
                 {"CSTAGE"},
                 [=](const Config& c) { return c.get("CSTAGE") == 0 || lim.alignment < 4; },
                 true});
}

// The accuracy contract's rules, last, so a config that breaks another rule too is named by it.
void add_contract_rules(Space& space, const Problem& problem) {
  // The accuracy contract for split TF32: its products keep ~22 of float's 24 bits, hidden by the
  // sums' roundings from one mma step of k on, not below (on an H100, 1x1x1 products were 2-3x
  // cuBLAS's error; k = 7 to 200704 within it, median 0.3x).
  space.require({"split_tf32_from_k_8", {"MMA"}, [=](const Config& c) {
                   return c.get("MMA") < 2 || problem.k >= 8;
                 }});
  // On wgmma (MMA = 3), whose sums of each slice truncate in the tensor cores: from k = 128 (the
  // H100 sweeps of issue 31: median 2.3x cuBLAS's error below k = 32, 7.5 % of rows past 2x below
  // k = 128, 1-2 % above it).
  space.require({"wgmma_split_tf32_from_k_128", {"MMA"}, [=](const Config& c) {
                   return !is_wgmma(c) || problem.k >= 128;
                 }});
  // Nor on up to 16 rows or columns (the matrix-vector kernel's class): on the wide-range probe
  // of 7 x 77 (the tuner's check) split TF32 on wgmma was 2.2-3.5x cuBLAS SGEMM's error at
  // k = 4096 on an H100, where a few products dominate each output and the truncating sums of a
  // slice's twelve wgmma in the tensor cores show (mma.sync, MMA = 2, sums 8 steps of k at a time
  // and passed).
  space.require({"wgmma_split_tf32_past_16_rows_and_columns", {"MMA"}, [=](const Config& c) {
                   return !is_wgmma(c) || is_plain_tf32(c) ||
                          (problem.m > kGemvMaxCols && problem.n > kGemvMaxCols);
                 }});
  // The accuracy contract: no float sum (FFMA, split TF32, the matrix-vector kernel) longer than
  // kMaxFfmaSum, no sequence of wgmma slice sums longer than max_slice_sum (KSUM = 1, partial
  // chains or split-K past them). Last, so a config that breaks another rule too is named by that
  // one.
  space.require({"float_sums_within_contract",
                 {"GEMV", "BK", "VEC", "SPLITK", "MMA", "KSUM", "GCOLS"},
                 [=](const Config& c) { return sums_within_contract(c, problem); }});
}

}  // namespace

void add_space_rules(Space& space, const DeviceInfo& device, const Problem& problem) {
  const SpaceLimits lim(device, problem);
  add_gemv_and_tile_rules(space, lim, problem);
  add_tensor_core_rules(space, problem);
  add_launch_rules(space, lim, problem);
  add_pruning_rules(space, lim, problem);
  add_contract_rules(space, problem);
}

}  // namespace tuned::gemm_op
