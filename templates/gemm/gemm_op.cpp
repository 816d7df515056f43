#include "templates/gemm/gemm_op.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>

#include "core/cuda_check.hpp"
#include "templates/extent.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/gemm/gemm_rules.hpp"
#include "templates/gemm/math_family.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::gemm_op {

namespace {

// The kernel families' parameters (Param::read_by): the matrix-vector kernel (GEMV > 0) reads
// GEMV, VEC, SPLITK and GCOLS only, the tile kernels (GEMV = 0) all but GCOLS; the tensor-core
// tiles (MMA > 0) have their thread layout fixed by the mma's fragments (TM, TN, LM, UNROLL) and
// derive their shared strides (PAD: shared_strides); only MMA = 3's producer loads a slice ahead.
// Each value is what the parameter holds where its family does not read it: the values configs
// were recorded with, so flat texts recorded before (database rows, kernel names) still read as
// the same configs. The families' words (Param::words), which a config's text starts with:
// GEMV > 0 "gemv", else by MMA "ffma" (0), "mma_sync" (1 FP64, 2 split TF32), "wgmma" (3,
// register-fed) and "wgmma_tma" (4 split, 5 plain TF32).
std::vector<Param> with_families(std::vector<Param> params) {
  const std::map<std::string, int> unread_by_gemv = {
      {"BM", 16},  {"BN", 16}, {"BK", 8},     {"WM", 16},   {"WN", 16},  {"TM", 2},
      {"TN", 2},   {"LM", 8},  {"PAD", 4},    {"AKM", 1},   {"BKM", 1},  {"UNROLL", 8},
      {"PIPE", 0}, {"SWZ", 0}, {"MINB", 1},   {"PRETB", 0}, {"PACK", 0}, {"REDUCE", 0},
      {"TAIL", 0}, {"MMA", 0}, {"CSTAGE", 0}, {"KSUM", 0},  {"AHEAD", 0}};
  const std::map<std::string, int> unread_by_mma = {
      {"TM", 2}, {"TN", 2}, {"LM", 8}, {"UNROLL", 8}, {"PAD", 0}};
  // GEMV's values but 0: the matrix-vector kernel's
  std::vector<int> gemv_rows = std::find_if(params.begin(), params.end(), [](const Param& p) {
                                 return p.name == "GEMV";
                               })->values;
  std::erase(gemv_rows, 0);
  for (Param& p : params) {
    if (auto it = unread_by_gemv.find(p.name); it != unread_by_gemv.end()) {
      p.read_by.push_back({"GEMV", {0}, it->second});
    }
    if (auto it = unread_by_mma.find(p.name); it != unread_by_mma.end()) {
      p.read_by.push_back({"MMA", {0}, it->second});
    }
    if (p.name == "GCOLS") p.read_by.push_back({"GEMV", gemv_rows, 1});
    if (p.name == "AHEAD") p.read_by.push_back({"MMA", {3}, 0});
    if (p.name == "GEMV") {
      for (int rows : p.values) p.words.push_back(rows == 0 ? "" : "gemv");
    }
    if (p.name == "MMA") {
      p.words = {"ffma", "mma_sync", "mma_sync", "wgmma", "wgmma_tma", "wgmma_tma"};
    }
  }
  return params;
}

}  // namespace

// Values every parameter may take before constraints; see gemm.cu for their meaning.
const std::vector<Param>& parameters() {
  static const std::vector<Param> params = with_families({
      // First, so a GEMV config's unread tile parameters are held at once.
      {"GEMV",
       {0, 8, 16, 32, 64, 128, 256},
       "0: tile kernel; else matrix-vector kernel (m or n up to GCOLS) with GEMV rows per block"},
      {"BM", {16, 32, 64, 128, 256}, "block tile rows (m)"},
      {"BN", {16, 32, 64, 128, 256}, "block tile columns (n)"},
      {"BK", {8, 16, 32}, "k slice staged in shared memory"},
      {"WM", {1, 2, 4, 8, 16, 32, 64, 128, 256}, "warp tile rows"},
      {"WN", {1, 2, 4, 8, 16, 32, 64, 128, 256}, "warp tile columns"},
      {"TM", {1, 2, 4, 8}, "thread sub-tile rows (contiguous)"},
      {"TN", {1, 2, 4, 8}, "thread sub-tile columns (contiguous)"},
      {"LM", {1, 2, 4, 8, 16, 32}, "lanes of a warp along m (32/LM along n)"},
      {"VEC", {1, 2, 4}, "floats per global load and store"},
      {"PAD", {0, 4}, "shared-memory row padding in floats"},
      {"AKM", {0, 1}, "A stored k-major in shared memory (m contiguous)"},
      {"BKM", {0, 1}, "B stored k-major in shared memory (n contiguous)"},
      {"UNROLL", {1, 2, 4, 8, 16, 32}, "unroll of the k slice loop"},
      {"PIPE", {0, 1, 2, 3, 4}, "0 single stage, 1 register prefetch, 2-4 cp.async stages"},
      {"SWZ", {0, 4, 8, 16}, "block rows grouped in launch order for L2 reuse (0: none)"},
      {"MINB", {1, 2, 3}, "__launch_bounds__ minimum resident blocks per SM"},
      {"PRETB", {0, 1}, "B (not transposed) copied transposed into the workspace first"},
      {"SPLITK", {1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256}, "blocks sharing one tile's k range"},
      // Host-side parameters: the launch, not the kernel, reads them (see kHostParams).
      // These three came after the first sweeps: a config without them meant 0.
      {"PACK", {0, 1}, "A and B not 16-byte aligned copied aligned into the workspace first", 0},
      {"REDUCE",
       {0, 1},
       "split-K partials summed by the last block of each tile (0) or a second launch (1)",
       0},
      {"TAIL", {0, 1}, "tiles of a partial last wave split along k (sized at launch)", 0},
      // Came with issue 10: configs recorded before it are FFMA kernels.
      // 2 came with issue 28: split TF32 on the tensor cores; 3 with issue 31: the same on wgmma;
      // 4 with issue 31's second kernel: the same fed by the TMA; 5 with its compute types.
      // A family: the wgmma kernels fix most tile parameters, so uniform draws never met them.
      {"MMA",
       {0, 1, 2, 3, 4, 5},
       "0: FFMA; 1: products and sums in FP64 on the tensor cores (sm_90+); 2: split TF32 "
       "(big + small parts, three products) on the tensor cores, float sums (sm_80+); 3: split "
       "TF32 on wgmma, warpgroups of 64 x WN, operands split through registers (sm_90a); 4: split "
       "TF32 on wgmma, operands copied by the TMA, A split in registers (sm_90a); 5: plain TF32 "
       "(one product) in MMA = 4's kernel, for the TF32 compute type only",
       0,
       /*family=*/true},
      // Came with issue 10's small-k products: configs recorded before it store C directly.
      {"CSTAGE", {0, 1}, "C written through shared memory, whole column runs per warp", 0},
      // Came with issue 28's accuracy contract: configs recorded before it sum k in one chain.
      // KSUM = 2 came with issue 31's wide-range probe.
      {"KSUM",
       {0, 1, 2},
       "float sums (FFMA, MMA = 2): 1 sums k in partial chains of 96 products (error ~(96 + "
       "k/96) u, not ~k u); wgmma (MMA >= 3, 1 or 2): each 32-slice from zero, added to the sums "
       "(1) or, TMA-fed, to partial chains of 32 slices (2)",
       0},
      // Came with issue 28's decoding products: configs recorded before it take one vector.
      {"GCOLS",
       {1, 2, 4, 8, 16},
       "matrix-vector kernel: columns of the vectors' matrix it takes at once (min(m, n) up to "
       "it; 1 in tile kernels)",
       1},
      // Came with issue 28's skinny long-k products: configs recorded before it load one slice.
      {"AHEAD",
       {0, 1},
       "MMA = 3: the producer holds two slices in registers, the next one's loads in flight "
       "while this one is split and stored",
       0},
  });
  return params;
}

bool vector_aligned(const void* pointer, int64_t ld) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0 && ld % 4 == 0;
}

const char* const kZeroTickets = "tuned_gemm_zero_tickets";  // gemm.cu's ticket reset
const char* const kPack = "tuned_gemm_pack";                 // gemm.cu's aligned copy (PACK)

// gemm.cu's orientation of a GEMV kernel: Y = C (m x n) when n fits its columns, else Y = C^T;
// and the rows and columns of Y.
bool gemv_y_is_c(const Config& c, const Problem& p) { return p.n <= c.get("GCOLS"); }
int64_t gemv_rows(const Config& c, const Problem& p) { return gemv_y_is_c(c, p) ? p.m : p.n; }
int64_t gemv_cols(const Config& c, const Problem& p) { return gemv_y_is_c(c, p) ? p.n : p.m; }

namespace {

constexpr int kGemvThreads = 256;     // gemm_gemv.cuh's kGemvThreads
constexpr int kWgmmaProducers = 128;  // gemm_tiles.cuh's kProducers (a warpgroup, MMA >= 3)

// Slices of BK steps of k in the whole k range (at least one).
int64_t k_slices(const Config& config, const Problem& problem) {
  return (std::max<int64_t>(problem.k, 1) + config.get("BK") - 1) / config.get("BK");
}

}  // namespace

bool is_gemv(const Config& c) { return c.has("GEMV") && c.get("GEMV") > 0; }

int64_t longest_ffma_sum(const Config& c, const Problem& p) {
  if (is_gemv(c)) {
    // A split's share of k, whole multiples of 32 (gemm.cu). k contiguous: a lane sums every
    // 32nd product, then a 5-step shuffle tree; rows adjacent: a thread sums every k_threads-th,
    // then the k_threads partials are summed in order.
    const int64_t splits = c.get("SPLITK");
    const int64_t chunk = ((std::max<int64_t>(p.k, 1) + splits - 1) / splits + 31) / 32 * 32;
    const bool rows_adjacent = gemv_y_is_c(c, p) ? !p.trans_a : p.trans_b;
    if (!rows_adjacent) return chunk / 32;
    const int64_t k_threads = kGemvThreads / (c.get("GEMV") / c.get("VEC"));
    return std::max((chunk + k_threads - 1) / k_threads, k_threads);
  }
  const int64_t bk = c.get("BK");
  const int64_t slices = k_slices(c, p);
  const int64_t splits = c.get("SPLITK");
  const int64_t chain = (slices + splits - 1) / splits * bk;  // one split's products, in order
  if (sums_in_chains(c)) {
    // Partial chains of kSumChain products (gemm.cu), then one sum of the chains.
    return std::max(std::min(chain, kSumChain), (chain + kSumChain - 1) / kSumChain);
  }
  return chain;
}

int64_t longest_slice_sum(const Config& c, const Problem& p) {
  const int64_t splits = c.get("SPLITK");
  const int64_t slices = (k_slices(c, p) + splits - 1) / splits;  // one split's
  if (!is_tma(c) || c.get("KSUM") != 2) return slices;
  return std::max(std::min(slices, kSliceChain), (slices + kSliceChain - 1) / kSliceChain);
}

int64_t max_slice_sum(const Config& c) {
  return is_tma(c) && c.get("KSUM") == 1 ? kSliceChain : kMaxSliceSum;
}

bool sums_within_contract(const Config& c, const Problem& p) {
  if (sums_in_double(c)) return true;
  if (is_wgmma(c)) return longest_slice_sum(c, p) <= max_slice_sum(c);
  return longest_ffma_sum(c, p) <= kMaxFfmaSum;
}

std::string Problem::layout() const {
  return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

std::string Problem::variant() const { return layout() + compute_suffix(compute); }

std::string compute_suffix(Compute compute) {
  switch (compute) {
    case Compute::kTf32:
      return "-tf32";
    case Compute::kPedantic:
      return "-pedantic";
    default:
      return "";
  }
}

Problem packed_problem(const std::string& variant, int64_t m, int64_t n, int64_t k, int64_t batch) {
  const std::string layout = variant.substr(0, 2);
  const std::string suffix = variant.size() > 2 ? variant.substr(2) : "";
  Compute compute = Compute::kDefault;
  for (Compute c : {Compute::kDefault, Compute::kTf32, Compute::kPedantic}) {
    if (suffix == compute_suffix(c)) compute = c;
  }
  if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') ||
      (layout[1] != 'N' && layout[1] != 'T') || suffix != compute_suffix(compute)) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "layout '" + variant +
                    "': must be one of NN, NT, TN, TT, optionally with a compute type (-tf32, "
                    "-pedantic)");
  }
  Problem p;
  p.compute = compute;
  p.trans_a = layout[0] == 'T';
  p.trans_b = layout[1] == 'T';
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = p.min_lda();
  p.ldb = p.min_ldb();
  p.ldc = p.min_ldc();
  p.alignment = alignment_class(nullptr, nullptr, nullptr, p.lda, p.ldb, p.ldc);
  p.batch = std::max<int64_t>(batch, 1);
  if (p.batch > 1) {
    // One product after the other, each starting on the alignment class's boundary.
    p.stride_a = round_up(p.lda * a_cols(p), p.alignment);
    p.stride_b = round_up(p.ldb * b_cols(p), p.alignment);
    p.stride_c = round_up(p.ldc * p.n, p.alignment);
  }
  return p;
}

int unaligned_operands(const void* a, int64_t lda, const void* b, int64_t ldb) {
  return (vector_aligned(a, lda) ? 0 : kOperandA) | (vector_aligned(b, ldb) ? 0 : kOperandB);
}

int alignment_class(const void* a, const void* b, const void* c, int64_t lda, int64_t ldb,
                    int64_t ldc, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  for (int w : {4, 2}) {
    const auto aligned = [w](const void* p) {
      return reinterpret_cast<uintptr_t>(p) % (4u * static_cast<unsigned>(w)) == 0;
    };
    // Every product of a batch starts a stride after the last: its pointers are as aligned as
    // the first's where the strides are multiples of w.
    if (aligned(a) && aligned(b) && aligned(c) && lda % w == 0 && ldb % w == 0 && ldc % w == 0 &&
        stride_a % w == 0 && stride_b % w == 0 && stride_c % w == 0) {
      return w;
    }
  }
  return 1;
}

void validate_arguments(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
                        const void* a, int64_t lda, const void* b, int64_t ldb, const float* beta,
                        const void* c, int64_t ldc) {
  require_argument(op_a == 0 || op_a == 1, "op_a", "must be TUNED_OP_N or TUNED_OP_T");
  require_argument(op_b == 0 || op_b == 1, "op_b", "must be TUNED_OP_N or TUNED_OP_T");
  // Rules that quote numbers format them only when they fail (this runs on every call).
  require_argument(m >= 0, "m", [&] { return "must be >= 0 (got " + std::to_string(m) + ")"; });
  require_argument(n >= 0, "n", [&] { return "must be >= 0 (got " + std::to_string(n) + ")"; });
  require_argument(k >= 0, "k", [&] { return "must be >= 0 (got " + std::to_string(k) + ")"; });
  for (const auto& [name, size] : {std::pair{"m", m}, {"n", n}, {"k", k}}) {
    require_argument(size <= kMaxSize, name, [&, size = size] {
      return "must be <= " + std::to_string(kMaxSize) +
             " (2^31 - 1024: the kernels index in 32 bits with a tile of margin; got " +
             std::to_string(size) + ")";
    });
  }
  require_argument(alpha != nullptr, "alpha", "must not be NULL");
  require_argument(beta != nullptr, "beta", "must not be NULL");
  const int64_t rows_a = op_a ? k : m;
  const int64_t rows_b = op_b ? n : k;
  require_argument(lda >= std::max<int64_t>(1, rows_a), "lda", [&] {
    return "must be >= max(1, " + std::string(op_a ? "k" : "m") +
           ") = " + std::to_string(std::max<int64_t>(1, rows_a)) + " (got " + std::to_string(lda) +
           ")";
  });
  require_argument(ldb >= std::max<int64_t>(1, rows_b), "ldb", [&] {
    return "must be >= max(1, " + std::string(op_b ? "n" : "k") +
           ") = " + std::to_string(std::max<int64_t>(1, rows_b)) + " (got " + std::to_string(ldb) +
           ")";
  });
  require_argument(ldc >= std::max<int64_t>(1, m), "ldc", [&] {
    return "must be >= max(1, m) = " + std::to_string(std::max<int64_t>(1, m)) + " (got " +
           std::to_string(ldc) + ")";
  });
  if (m == 0 || n == 0) return;  // nothing is read or written
  require_argument(c != nullptr, "C", "must not be NULL when m and n are > 0");
  if (k > 0 && *alpha != 0.0f) {
    require_argument(a != nullptr, "A", "must not be NULL when m, n, k > 0 and alpha != 0");
    require_argument(b != nullptr, "B", "must not be NULL when m, n, k > 0 and alpha != 0");
  }
}

void validate_batch(int64_t m, int64_t n, int64_t ldc, int64_t stride_a, int64_t stride_b,
                    int64_t stride_c, int64_t batch) {
  require_argument(batch >= 0, "batch_count",
                   [&] { return "must be >= 0 (got " + std::to_string(batch) + ")"; });
  for (const auto& [name, stride] :
       {std::pair{"stride_a", stride_a}, {"stride_b", stride_b}, {"stride_c", stride_c}}) {
    require_argument(stride >= 0, name, [&, stride = stride] {
      return "must be >= 0 (0: one matrix for every product; got " + std::to_string(stride) + ")";
    });
  }
  if (batch > 1 && m > 0 && n > 0) {
    // Products writing into each other's C would race.
    require_argument(stride_c >= ldc * n, "stride_c", [&] {
      return "must be >= ldc * n = " + std::to_string(ldc * n) +
             " so that the products' C do not overlap (got " + std::to_string(stride_c) + ")";
    });
  }
}

void validate_epilogue(const Epilogue& e) {
  const int kind = static_cast<int>(e.bias_kind), act = static_cast<int>(e.activation);
  require_argument(kind >= 0 && kind <= 2, "epilogue.bias_kind",
                   "must be TUNED_BIAS_NONE, TUNED_BIAS_ROW or TUNED_BIAS_COLUMN");
  require_argument(act >= 0 && act <= 3, "epilogue.activation",
                   "must be TUNED_ACTIVATION_NONE, _RELU, _GELU_TANH or _GELU_ERF");
  require_argument(e.bias_kind == BiasKind::kNone || e.bias != nullptr, "epilogue.bias",
                   "must not be NULL when bias_kind asks for a bias");
  require_argument(e.bias_stride >= 0, "epilogue.bias_stride",
                   [&] { return "must be >= 0 (got " + std::to_string(e.bias_stride) + ")"; });
}

int epilogue_form(const Epilogue& e) {
  if (e.bias_kind == BiasKind::kNone && e.activation == Activation::kNone) return 0;
  return 1 + static_cast<int>(e.activation);
}

std::string epilogue_suffix(int form) {
  static const char* const suffixes[] = {"", "_epilogue", "_epilogue_relu", "_epilogue_gelu_tanh",
                                         "_epilogue_gelu_erf"};
  if (form < 0 || form > 4) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR, "gemm: no epilogue form " + std::to_string(form));
  }
  return suffixes[form];
}

Space make_space(const DeviceInfo& device, const Problem& problem) {
  Space space;
  for (const auto& p : parameters()) space.add(p);
  add_space_rules(space, device, problem);
  return space;
}

int estimated_registers(const Config& c) {
  if (is_tma(c)) {
    // A consumer's sums and its slice's (WN / 2 each), A's fragments of two steps (16),
    // addresses; the producers copy without registers (measured: 168 at WN = 128, no spills).
    // (KSUM = 2's partial chain of slice sums adds WN / 2 at run time, which setmaxnreg gives
    // the consumers: 232 at WN = 128, with 128 bytes spilled; 2 % slower at 4096^3, H100.)
    return c.get("WN") + 40;
  }
  if (is_wgmma(c)) {
    // One kernel for both roles: a consumer's sums and its slice's (WN / 2 each per thread), or
    // a producer's staging registers (a whole slice over its 128 threads); addresses and loop
    // state beside either.
    // (The producer's loads of a whole slice are unrolled, each with its address: measured
    // 162-166 registers for 64 x 128 tiles, 168 for 128 x 128 with 16 moved to the producers.)
    // AHEAD = 1: two slices (measured: 64 x 64 tiles 128 -> 185-216 registers uncapped).
    const int consumer = c.get("WN") + 32;
    const int producer =
        (c.get("BM") + c.get("BN")) * c.get("BK") / kWgmmaProducers * (c.get("AHEAD") + 1) + 56;
    return std::max(consumer, producer);
  }
  if (is_mma(c)) {
    // The sums (WM*WN/32 per lane: MMA = 1 doubles, two registers each; MMA = 2 floats and a
    // step's products from zero beside them, twice that with a KSUM chain), the fragments of the
    // operand converted whole (A: WM/4 doubles or big and small TF32 pairs, B: WN/4) and one
    // tile's of the other, addresses and loop state (measured 91-254 for MMA = 1 warp tiles 16x32
    // to 64x32; MMA = 2 with KSUM: 243-247 at 32x32, spills at 64x32).
    const int sets = sums_in_chains(c) ? 2 : 1;
    return c.get("WM") * c.get("WN") / 16 * sets + std::min(c.get("WM"), c.get("WN")) + 72;
  }
  // Accumulators, the fragments read ahead (one step of k for an operand stored k-major in shared
  // memory; for one stored k-contiguous, the group of four steps in use and the next, which the
  // compiler reads ahead of the multiplies: measured 254 registers for 64 accumulators), staging
  // registers of the register pipelines, and about 32 for addresses, indices and loop state.
  const int threads = threads_per_block(c);
  const int frag_m = c.get("WM") / c.get("LM");
  const int frag_n = c.get("WN") / (32 / c.get("LM"));
  const int read_m = frag_m * (c.get("AKM") ? 1 : 8);
  const int read_n = frag_n * (c.get("BKM") ? 1 : 8);
  const int staging = c.get("PIPE") <= 1
                          ? (c.get("BM") + c.get("BN")) * c.get("BK") / threads + 2 * c.get("VEC")
                          : 0;
  // KSUM = 1: the partial chain's sums beside the running ones, and as many again for the adds
  // the compiler schedules with them (measured: a 32-accumulator tile spilled at the 128 of
  // MINB 2 where one more set was estimated at 108).
  const int slice_sums = sums_in_chains(c) ? 2 * frag_m * frag_n : 0;
  return frag_m * frag_n + slice_sums + read_m + read_n + staging + 32;
}

std::string math_family(const Config& c) {
  if (is_gemv(c)) return "FFMA, matrix-vector";
  switch (c.has("MMA") ? c.get("MMA") : 0) {
    case 1:
      return "FP64 tensor cores";
    case 2:
      return "split TF32 on mma.sync";
    case 3:
      return "split TF32 on wgmma";
    case 4:
      return "split TF32 on wgmma, TMA-fed";
    case 5:
      return "TF32 on wgmma, TMA-fed (plain TF32)";
    default:
      return "FFMA";
  }
}

Config for_compute(Config config, const Problem& problem) {
  if (problem.compute != Compute::kTf32 || !is_wgmma(config) || is_plain_tf32(config)) {
    return config;
  }
  // Split TF32 on wgmma becomes the TMA-fed kernel's one-product form with the same tiles: what
  // MMA = 3 has that it lacks (warpgroups of 256 columns, 2 stages, loads ahead, narrow vectors)
  // becomes the nearest it has (128 columns, 3 stages, operands packed to 16-byte runs).
  config.set("MMA", 5);
  config.set("AHEAD", 0);
  config.set("PIPE", std::max(config.get("PIPE"), 3));
  config.set("WN", std::min(config.get("WN"), 128));
  if (config.get("VEC") < 4) {
    config.set("VEC", 4);
    if (problem.alignment < 4) config.set("PACK", 1);
  }
  return with_operands_as_stored(config, problem);
}

Config with_bounded_slice_sums(Config config, const Problem& problem) {
  if (!is_wgmma(config) || longest_slice_sum(config, problem) <= max_slice_sum(config)) {
    return config;
  }
  if (is_tma(config)) {
    // One chain of slice sums past a chain's length: partial chains (2 % slower) instead.
    if (config.get("KSUM") == 1) config.set("KSUM", 2);
  } else if (config.get("TAIL") == 0) {
    // MMA = 3 has no partial chains: k split in more parts (the least count that bounds them).
    const auto& splitk = *std::find_if(parameters().begin(), parameters().end(),
                                       [](const Param& p) { return p.name == "SPLITK"; });
    for (int splits : splitk.values) {
      if (splits <= config.get("SPLITK")) continue;
      Config split = config;
      split.set("SPLITK", splits);
      if (longest_slice_sum(split, problem) <= kMaxSliceSum) return split;
    }
  }
  return config;
}

Config with_operands_as_stored(Config config, const Problem& problem) {
  // MMA = 4 reads B k-contiguous: a transposed B is turned over first.
  if (is_tma(config)) config.set("PRETB", problem.trans_b ? 1 : 0);
  if (is_mma(config)) {
    config.set("AKM", problem.trans_a ? 0 : 1);
    config.set("BKM", reads_b_transposed(config, problem) ? 1 : 0);
  }
  return config;
}

Config gemv_config(int rows, int vec, int splits, int cols) {
  // In the space's parameter order: the four GEMV reads, the rest as the tile kernels' family
  // leaves them where the matrix-vector kernel runs.
  std::string text;
  for (const auto& p : parameters()) {
    int value = p.name == "GEMV"     ? rows
                : p.name == "VEC"    ? vec
                : p.name == "SPLITK" ? splits
                : p.name == "GCOLS"  ? cols
                                     : -1;
    for (const FamilyUse& use : p.read_by) {
      if (use.family == "GEMV" && value < 0) value = use.value;
    }
    text += (text.empty() ? "" : ",") + p.name + "=" + std::to_string(value);
  }
  return Config::parse(text);
}

namespace {

// The space of the last (device, problem) this thread fitted configs for: ranking a new shape fits
// every portfolio entry to the same problem, and building a space (some 50 named rules) costs
// more than checking a config against it.
const Space& space_for_fitting(const DeviceInfo& device, const Problem& problem) {
  struct Last {
    DeviceInfo device;
    Problem problem;
    std::optional<Space> space;
  };
  thread_local Last last;
  auto same_device = [](const DeviceInfo& a, const DeviceInfo& b) {
    return a.compute_capability() == b.compute_capability() && a.sm_count == b.sm_count &&
           a.max_threads_per_block == b.max_threads_per_block &&
           a.max_threads_per_sm == b.max_threads_per_sm &&
           a.smem_per_block_optin == b.smem_per_block_optin && a.smem_per_sm == b.smem_per_sm &&
           a.regs_per_sm == b.regs_per_sm;
  };
  auto same_problem = [](const Problem& a, const Problem& b) {
    return a.trans_a == b.trans_a && a.trans_b == b.trans_b && a.m == b.m && a.n == b.n &&
           a.k == b.k && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
           a.alignment == b.alignment && a.unaligned_operands == b.unaligned_operands &&
           a.compute == b.compute && a.batch == b.batch;
  };
  if (!last.space || !same_device(last.device, device) || !same_problem(last.problem, problem)) {
    last.space.emplace(make_space(device, problem));
    last.device = device;
    last.problem = problem;
  }
  return *last.space;
}

}  // namespace

double packing_cost(const Problem& p) {
  // Packing copies only the operands whose leading dimension allows no 16-byte vectors (and, at
  // launch, any whose pointer does not); C is stored C_VEC wide as it is. Each copy moves 8 bytes
  // an element and is one more launch (about 2 us); the product does 2mnk flops: at about
  // 45 TFLOP/s and 2.5 TB/s. (A product whose C alone is unaligned, a vocabulary's logits, copies
  // nothing.)
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return 0;
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
               k = static_cast<double>(p.k);
  double copy_us = 0;
  for (const auto& [ld, elements] : {std::pair{p.lda, m * k}, std::pair{p.ldb, k * n}}) {
    if (ld % 4 != 0) copy_us += 8.0 * elements / 2.5e6 + 2.0;
  }
  return copy_us / (2.0 * m * n * k / 45e6);
}

bool packing_pays(const Problem& p) {
  // Narrowing VEC to 1 costs some 15 %: pack when the copies cost at most 10 %. (A batch's
  // products are not copied: rule copies_for_one_product.)
  return p.batch == 1 && p.m > 0 && p.n > 0 && p.k > 0 && packing_cost(p) <= 0.1;
}

Config packed_where_unaligned(Config config, const Problem& problem) {
  if (is_tma(config) && problem.alignment < 4) config.set("PACK", 1);
  return config;
}

bool packs(const Config& config, const Problem& p) {
  return config.get("PACK") == 1 && !is_gemv(config) && p.alignment < 4;
}

Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem) {
  // A config recorded before a parameter existed means that parameter's old behaviour.
  // (The TMA reads 16-byte runs only: a TMA-fed config always packs where unaligned.)
  Config fitted = packed_where_unaligned(with_absent_params(config, parameters()), problem);
  if (fitted.has("VEC") && fitted.get("VEC") > problem.alignment &&
      !(fitted.has("PACK") && fitted.get("PACK") == 1) && !is_gemv(fitted)) {
    // A vector wider than the operands allow: pack them where that pays (the same kernel runs),
    // else narrow the vector (any narrower one is valid wherever a wider one was). The
    // matrix-vector kernel keeps its width: it checks the operands at launch.
    if (fitted.has("PACK") && packing_pays(problem)) {
      fitted.set("PACK", 1);
    } else {
      fitted.set("VEC", problem.alignment);
    }
  }
  if (is_tma(fitted)) fitted.set("PRETB", problem.trans_b ? 1 : 0);  // B read k-contiguous
  fitted = with_bounded_slice_sums(fitted, problem);
  const Space& space = space_for_fitting(device, problem);
  if (auto broken = space.violation(fitted, /*include_pruning=*/false)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "gemm config " + config.canonical() + " breaks constraint " + *broken);
  }
  return fitted;
}

namespace {

// Parameters only the launch reads: configs differing in them share one kernel.
bool is_host_param(const std::string& name) { return name == "PACK" || name == "REDUCE"; }

// The widest store C allows: VEC, or the problem's alignment class where packing lets VEC exceed
// it (the class is the narrowest of A, B and C: C may be wider, never narrower). The matrix-vector
// kernel writes C one float at a time and reads no C_VEC: one kernel (the one precompiled) serves
// every alignment.
int c_vec(const Config& config, const Problem& problem) {
  if (is_gemv(config)) return config.get("VEC");
  return std::min(config.get("VEC"), problem.alignment);
}

// The config without its host-side parameters (and with those it predates): what names and
// compiles the kernel.
Config kernel_config(const Config& config) {
  const Config whole = with_absent_params(config, parameters());
  std::string text;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (is_host_param(whole.name(i))) continue;
    text += (text.empty() ? "" : ",") + whole.name(i) + "=" + std::to_string(whole.value(i));
  }
  return Config::parse(text);
}

}  // namespace

std::string kernel_name(const Config& config, const Problem& problem) {
  const int cv = c_vec(config, problem);
  return "gemm_" + std::string(problem.trans_a ? "t" : "n") + (problem.trans_b ? "t" : "n") +
         kernel_config(config).name_suffix() +
         (cv < config.get("VEC") ? "_cvec" + std::to_string(cv) : "") +
         (problem.batch > 1 ? "_batched" : "") + epilogue_suffix(problem.epilogue);
}

KernelSpec kernel_spec(const Config& config, const Problem& problem) {
  KernelSpec spec = template_kernel_spec("gemm.cu", kernel_name(config, problem));
  spec.options = {"-DKERNEL_NAME=" + spec.kernel_name,
                  "-DTRANS_A=" + std::to_string(problem.trans_a ? 1 : 0),
                  "-DTRANS_B=" + std::to_string(reads_b_transposed(config, problem) ? 1 : 0),
                  "-DC_VEC=" + std::to_string(c_vec(config, problem)),
                  "-DKSUM_CHAIN=" + std::to_string(kSumChain),
                  "-DBATCHED=" + std::to_string(problem.batch > 1 ? 1 : 0),
                  "-DEPILOGUE=" + std::to_string(problem.epilogue)};
  if (is_tma(config) && config.get("KSUM") == 2) {
    spec.options.push_back("-DSLICE_CHAIN=" + std::to_string(kSliceChain));
  }
  for (const auto& d : kernel_config(config).defines()) spec.options.push_back(d);
  // (A GEMV config's strides are those of the tile values it holds: its kernel has no tiles.)
  const SharedStrides strides = shared_strides(config);
  spec.options.push_back("-DA_STRIDE=" + std::to_string(strides.a));
  spec.options.push_back("-DB_STRIDE=" + std::to_string(strides.b));
  spec.options.push_back("-DC_STRIDE=" + std::to_string(strides.c));
  spec.dynamic_smem_bytes = shared_bytes(config);
  spec.arch_specific = is_wgmma(config);
  spec.companions = {kZeroTickets, kPack};
  return spec;
}

int stages(const Config& c) {
  const int pipe = c.get("PIPE");
  return pipe == 0 ? 1 : pipe == 1 ? 2 : pipe;
}

SharedStrides shared_strides(const Config& c) {
  const int bm = c.get("BM"), bn = c.get("BN"), bk = c.get("BK");
  const bool akm = c.get("AKM") == 1, bkm = c.get("BKM") == 1;
  SharedStrides s;
  // The staged C tile's columns: rows 2g, 2g + 1 of the mma's lanes (g, t) written as 64-bit
  // pairs at columns 2t: a stride of 4 (mod 16) puts a half warp's 16 pairs in 32 distinct banks.
  s.c = bm + 4;
  if (!is_mma(c)) {
    const int pad = c.get("PAD");
    s.a = (akm ? bm : bk) + pad;
    s.b = (bkm ? bn : bk) + pad;
    return s;
  }
  // The fragment reads of gemm.cu's MMA path, conflict-free (lane (g, t); rows r = 2g):
  //   A (k, m) rows: 64-bit reads at k = t + 4s, m = r: stride 8 (mod 32) spreads the t;
  //   A (m, k) rows with B (n, k): 64-bit reads at rows r, r + 1, k = 2t: 4 (mod 16);
  //   A (m, k) with B (k, n): 32-bit reads at k = t + 4s: 4 (mod 16) (two ways at most);
  //   B (n, k) with A (m, k): 64-bit reads at n = g, k = 2t: 8 (mod 32);
  //   B (n, k) with A (k, m): 32-bit reads at k = t + 4s: 4 (mod 32);
  //   B (k, n): 32-bit reads at k = t + 4s, n = g: 8 (mod 32).
  s.a = akm ? bm + 8 : bk + 4;
  s.b = bkm ? bn + 8 : bk + (akm ? 4 : 8);
  return s;
}

size_t shared_bytes(const Config& c) {
  if (is_gemv(c)) return 0;  // static shared memory only
  if (is_wgmma(c)) {
    // PIPE stages of big and small parts of both slices (MMA = 4: both as stored and B's small
    // parts; 5: both as stored), and 1024 bytes to align them for the swizzle.
    const int b_parts = is_plain_tf32(c) ? 1 : 2;
    const size_t stage =
        is_tma(c) ? static_cast<size_t>(c.get("BM") + b_parts * c.get("BN")) * c.get("BK")
                  : 2 * static_cast<size_t>(c.get("BM") + c.get("BN")) * c.get("BK");
    const size_t c_tile =
        c.get("CSTAGE") == 1 ? static_cast<size_t>(c.get("BN")) * (c.get("BM") + 4) : 0;
    return std::max(stages(c) * stage, c_tile) * sizeof(float) + 1024;
  }
  const SharedStrides s = shared_strides(c);
  const size_t a = static_cast<size_t>(c.get("AKM") ? c.get("BK") : c.get("BM")) * s.a;
  const size_t b = static_cast<size_t>(c.get("BKM") ? c.get("BK") : c.get("BN")) * s.b;
  const size_t pipeline = static_cast<size_t>(stages(c)) * (a + b);
  // A staged C tile reuses the stages once the product is done.
  const size_t c_tile =
      c.has("CSTAGE") && c.get("CSTAGE") == 1 ? static_cast<size_t>(c.get("BN")) * s.c : 0;
  return std::max(pipeline, c_tile) * sizeof(float);
}

int threads_per_block(const Config& c) {
  if (is_gemv(c)) return kGemvThreads;
  // MMA = 3: a producer warpgroup beside the warps that hold C.
  const int producers = is_wgmma(c) ? kWgmmaProducers : 0;
  return 32 * (c.get("BM") / c.get("WM")) * (c.get("BN") / c.get("WN")) + producers;
}

int64_t tile_count(const Config& config, const Problem& problem) {
  if (is_gemv(config)) {
    return (gemv_rows(config, problem) + config.get("GEMV") - 1) / config.get("GEMV");
  }
  const int64_t bm = config.get("BM"), bn = config.get("BN");
  return ((problem.m + bm - 1) / bm) * ((problem.n + bn - 1) / bn);
}

bool reads_b_transposed(const Config& config, const Problem& problem) {
  return problem.trans_b != (config.get("PRETB") == 1);
}

namespace {

constexpr size_t kWorkspaceAlign = 256;

// A tail split's bounds: splits per tail tile, and blocks (partial tiles) in all, which bounds
// its workspace without knowing the device (132 SMs x 2 blocks fit with room).
constexpr int64_t kMaxTailSplits = 8;
constexpr int64_t kMaxTailBlocks = 512;

size_t round_up_bytes(size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// A copy of a rows x cols matrix with an aligned leading dimension (aligned_ld).
size_t aligned_bytes(int64_t rows, int64_t cols) {
  return round_up_bytes(static_cast<size_t>(aligned_ld(rows) * std::max<int64_t>(cols, 1)) *
                        sizeof(float));
}

size_t transposed_b_bytes(const Config& config, const Problem& p) {
  if (!config.get("PRETB")) return 0;
  return p.trans_b ? aligned_bytes(p.k, p.n) : aligned_bytes(p.n, p.k);
}

// Whether an operand (kOperandA or kOperandB) allows no 16-byte vectors: its leading dimension,
// or its pointer as the problem marks it.
bool unaligned(const Problem& p, int operand) {
  const int64_t ld = operand == kOperandA ? p.lda : p.ldb;
  return ld % 4 != 0 || (p.unaligned_operands & operand) != 0;
}

// PACK's copies over the problem's whole k.
size_t packed_bytes_at(const Config& config, const Problem& p) {
  return (copies_a(config, p) ? aligned_bytes(a_rows(p), a_cols(p)) : 0) +
         (copies_b(config, p) ? aligned_bytes(b_rows(p), b_cols(p)) : 0);
}

// Both sized for one pass of pack_pass_k's k extent.
size_t packed_a_bytes(const Config& config, const Problem& p) {
  if (!copies_a(config, p)) return 0;
  const Problem pass = k_slice(p, pack_pass_k(config, p));
  return aligned_bytes(a_rows(pass), a_cols(pass));
}
size_t packed_b_bytes(const Config& config, const Problem& p) {
  if (!copies_b(config, p)) return 0;
  const Problem pass = k_slice(p, pack_pass_k(config, p));
  return aligned_bytes(b_rows(pass), b_cols(pass));
}

size_t split_bytes(const Config& config, const Problem& problem) {
  const int64_t splits = max_split_k(config, problem);
  if (splits == 1 && config.get("TAIL") == 1 && !is_gemv(config)) {
    // Tail splits: at most kMaxTailBlocks partial tiles and as many tickets.
    const int64_t partials = std::min(kMaxTailBlocks, tile_count(config, problem) * kMaxTailSplits);
    return static_cast<size_t>(partials * config.get("BM") * config.get("BN")) * sizeof(float) +
           static_cast<size_t>(partials) * sizeof(int);
  }
  if (splits == 1) return 0;
  const int64_t tiles = tile_count(config, problem);
  // Partial tiles (GEMV: row blocks of every column) of every split, then one int ticket per
  // tile (see gemm.cu; a launch of fewer splits than the bound has its tickets right after its
  // partial tiles, where the kernel looks for them).
  return static_cast<size_t>(splits * tiles * split_tile_floats(config)) * sizeof(float) +
         static_cast<size_t>(tiles) * sizeof(int);
}

}  // namespace

// The workspace layout and the operands' copies in it (described in gemm_launch.hpp).
int64_t aligned_ld(int64_t rows) { return (std::max<int64_t>(rows, 1) + 3) / 4 * 4; }
int64_t transposed_b_ld(const Problem& p) { return aligned_ld(p.trans_b ? p.k : p.n); }

int64_t a_rows(const Problem& p) { return p.trans_a ? p.k : p.m; }
int64_t a_cols(const Problem& p) { return p.trans_a ? p.m : p.k; }
int64_t b_rows(const Problem& p) { return p.trans_b ? p.n : p.k; }
int64_t b_cols(const Problem& p) { return p.trans_b ? p.k : p.n; }

Problem k_slice(const Problem& p, int64_t kc) {
  Problem slice = p;
  slice.k = kc;
  return slice;
}

bool copies_a(const Config& config, const Problem& p) {
  return packs(config, p) && unaligned(p, kOperandA);
}
bool copies_b(const Config& config, const Problem& p) {
  return packs(config, p) && !config.get("PRETB") && unaligned(p, kOperandB);
}

int64_t split_tile_floats(const Config& config) {
  return is_gemv(config) ? int64_t{config.get("GEMV")} * config.get("GCOLS")
                         : int64_t{config.get("BM")} * config.get("BN");
}

int64_t pack_pass_k(const Config& config, const Problem& p) {
  if (!packs(config, p) || p.k <= kPackPassK || packed_bytes_at(config, p) <= kMaxPackBytes) {
    return p.k;
  }
  // Bytes per unit of k are about 4 (m + n) for the copied operands: start there, then step down
  // to what fits.
  const int64_t per_k = 4 * ((copies_a(config, p) ? p.m : 0) + (copies_b(config, p) ? p.n : 0) + 8);
  int64_t kc = std::max<int64_t>(kPackPassK, static_cast<int64_t>(kMaxPackBytes) / per_k);
  kc = std::min(p.k, kc / kPackPassK * kPackPassK);
  while (kc > kPackPassK && packed_bytes_at(config, k_slice(p, kc)) > kMaxPackBytes) {
    kc -= kPackPassK;
  }
  return kc;
}

size_t workspace_bytes(const Config& config, const Problem& problem) {
  const size_t splits =
      problem.batch == 1 ? split_bytes(config, problem)
                         : batch_split_bytes(config, problem) * static_cast<size_t>(problem.batch);
  return transposed_b_bytes(config, problem) + packed_a_bytes(config, problem) +
         packed_b_bytes(config, problem) + splits;
}

size_t batch_split_bytes(const Config& config, const Problem& problem) {
  return round_up_bytes(split_bytes(config, problem));
}

WorkspaceRegions workspace_regions(const Config& config, const Problem& problem, void* workspace) {
  WorkspaceRegions regions;
  regions.transposed_b = static_cast<char*>(workspace);
  regions.packed_a = regions.transposed_b + transposed_b_bytes(config, problem);
  regions.packed_b = regions.packed_a + packed_a_bytes(config, problem);
  regions.split = reinterpret_cast<float*>(regions.packed_b + packed_b_bytes(config, problem));
  return regions;
}

LaunchGeometry geometry(const Config& config, const Problem& problem) {
  const int64_t tiles = tile_count(config, problem);
  if (tiles > INT_MAX) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "m = " + std::to_string(problem.m) + ", n = " + std::to_string(problem.n) +
                    " need " + std::to_string(tiles) + " tiles of " +
                    std::to_string(config.get("BM")) + "x" + std::to_string(config.get("BN")) +
                    "; at most 2^31 - 1 fit a grid");
  }
  LaunchGeometry g;
  // x: tiles (the kernel maps them to block rows and columns), y: splits of k, z: the products of
  // a batch (launch runs at most kMaxBatchPerLaunch at a time).
  g.grid = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(config.get("SPLITK")),
                static_cast<unsigned>(std::min(problem.batch, kMaxBatchPerLaunch)));
  g.block = dim3(static_cast<unsigned>(threads_per_block(config)));
  g.dynamic_smem_bytes = shared_bytes(config);
  g.waits_for_previous_grid = true;  // gemm.cu's kernels start with wait_for_previous_grid()
  return g;
}

ProblemKey problem_key(const DeviceInfo& device, const Problem& problem) {
  ProblemKey key;
  key.device_uuid = device.uuid;
  key.op = "gemm";
  key.variant = problem.variant();
  key.shape = {problem.m, problem.n, problem.k};
  if (problem.batch > 1) key.shape.push_back(problem.batch);  // a batch is a problem of its own
  key.alignment = problem.alignment;
  return key;
}

namespace {

// Blocks of the product's launch the current device holds at once: its SMs x the occupancy.
int64_t resident_blocks(const LoadedKernel& kernel, const LaunchGeometry& product) {
  int device = 0, sms = 0;
  TUNED_CUDA_CHECK(cudaGetDevice(&device));
  TUNED_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return int64_t{sms} * kernel.max_active_blocks_per_sm(static_cast<int>(product.block.x),
                                                        product.dynamic_smem_bytes);
}

}  // namespace

TailSplit tail_split(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                     const LaunchGeometry& product) {
  TailSplit none;
  if (is_gemv(config) || config.get("TAIL") == 0 || config.get("SPLITK") != 1) return none;
  // (A batch's products fill the waves together: a tail sized for one product's tiles would
  // split tiles of every product.)
  if (problem.batch > 1) return none;
  const int64_t slots = resident_blocks(kernel, product);
  const int64_t tiles = tile_count(config, problem);
  if (slots <= 0 || tiles <= slots || tiles % slots == 0) return none;
  const int64_t tail = tiles % slots;
  // As many splits as fill the last wave, each at least two slices of k, within the bounds.
  const int64_t slices = k_slices(config, problem);
  const int64_t splits =
      std::min({kMaxTailSplits, slots / tail, slices / 2, kMaxTailBlocks / tail});
  if (splits < 2) return none;
  return {tiles - tail, splits};
}

int64_t max_split_k(const Config& config, const Problem& problem) {
  const int64_t least = config.get("SPLITK");
  // gemm.cu's kRaisableSplits: tensor-core tiles of at most 64 x 64, summed by their last block.
  const bool raisable = !is_gemv(config) && config.get("REDUCE") == 0 && config.get("MMA") != 0 &&
                        config.get("BM") * config.get("BN") <= 64 * 64;
  if (least == 1 || !raisable) return least;
  const int64_t most = std::min(2 * least - 1, k_slices(config, problem));
  if (most <= least || tile_count(config, problem) * problem.batch * most > kMaxRaisedSplitBlocks) {
    return least;
  }
  return most;
}

namespace {

// A block's fixed cost in slices of k for split_k_count's estimate: filling its pipeline, writing
// its partial tile and taking its ticket.
constexpr int64_t kSplitBlockOverheadSlices = 2;

}  // namespace

int64_t split_k_count(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                      const LaunchGeometry& product) {
  const int64_t least = config.get("SPLITK");
  const int64_t most = max_split_k(config, problem);
  if (most == least) return least;
  const int64_t slots = resident_blocks(kernel, product);
  if (slots <= 0) return least;
  // (Every product of a batch is in the same waves.)
  const int64_t tiles = tile_count(config, problem) * std::min(problem.batch, kMaxBatchPerLaunch),
                slices = k_slices(config, problem);
  // Estimated time in slices: waves of blocks, each its split's slices plus the fixed cost.
  auto cost = [&](int64_t splits) {
    const int64_t per_split = (slices + splits - 1) / splits;
    return (tiles * splits + slots - 1) / slots * (per_split + kSplitBlockOverheadSlices);
  };
  int64_t best = least, best_cost = cost(least);
  for (int64_t s = least + 1; s <= most; ++s) {
    // As few splits as give this length of split: none is left without a slice of k.
    const int64_t per_split = (slices + s - 1) / s;
    const int64_t splits = (slices + per_split - 1) / per_split;
    const int64_t c = cost(splits);
    if (splits > least && c < best_cost) {
      best = splits;
      best_cost = c;
    }
  }
  // Raised only for a clear gain: the estimate leaves out the extra partial tiles' traffic.
  return best_cost * 20 <= cost(least) * 19 ? best : least;
}

OpInfo info() {
  OpInfo op;
  op.name = "gemm";
  op.dims = {"M", "N", "K"};
  op.optional_dims = {"BATCH"};  // tuned_gemm_strided_batched's batch_count
  op.dim_ranges["BATCH"] = {1, INT_MAX};
  // The problem id's variant indexes these: the layouts, then with each compute type.
  for (Compute compute : {Compute::kDefault, Compute::kTf32, Compute::kPedantic}) {
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      op.variants.push_back(layout + compute_suffix(compute));
    }
  }
  op.default_shapes = {{4096, 4096, 4096}, {1024, 1024, 1024}, {1000, 1000, 1000}, {127, 127, 127}};
  op.rate_unit = "TFLOP/s";
  op.max_size = kMaxSize;
  op.params = parameters();
  return op;
}

}  // namespace tuned::gemm_op
