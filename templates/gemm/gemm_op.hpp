// The GEMM op descriptor: its problem, parameter space and constraints, kernel naming, launch
// geometry and problem key. Everything here is plain arithmetic on the config; gemm.cu reads the
// same values as -D options, so geometry and kernel never disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem_key.hpp"
#include "core/space.hpp"
#include "generator/kernel.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/op_info.hpp"

namespace tuned::gemm_op {

/// What arithmetic a call accepts (tuned_compute_t): the default FP32-accurate contract (FFMA, FP64
/// tensor cores or split TF32, by speed), plain TF32 rounding as well (never chosen unless asked,
/// like CUBLAS_COMPUTE_32F_FAST_TF32), or FFMA alone (like CUBLAS_COMPUTE_32F_PEDANTIC).
enum class Compute { kDefault = 0, kTf32 = 1, kPedantic = 2 };
/// The variant names' suffix of a compute type: "", "-tf32", "-pedantic".
std::string compute_suffix(Compute compute);

/// One FP32 GEMM call's shape, layout, alignment and compute type (column-major, cuBLAS
/// conventions); a strided batch of `batch` such products (cublasSgemmStridedBatched's): product
/// z's operands start z strides (floats) after the first's, a stride of 0 sharing the operand.
struct Problem {
  Compute compute = Compute::kDefault;
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // The call fuses a bias or an activation (Epilogue): its kernels are the EPILOGUE forms of the
  // configs chosen for the plain product (same choice, another compile), one per activation
  // (epilogue_form: 0 none, else 1 + the activation).
  int epilogue = 0;
  int alignment = 1;  // widest vector (1, 2, 4 floats) that pointers and leading dims allow
  // kOperandA | kOperandB: operands whose pointer or leading dimension allows no 16-byte vectors
  // (an ld that is no multiple of 4 counts whether marked or not; a problem rebuilt from its id
  // has the smallest lds, so a call marks what its own pointers and lds say).
  int unaligned_operands = 0;

  std::string layout() const;   // "NN", "NT", "TN", "TT"
  std::string variant() const;  // the layout and compute type: "NN", "NN-tf32", "NN-pedantic"
  int64_t min_lda() const { return std::max<int64_t>(1, trans_a ? k : m); }
  int64_t min_ldb() const { return std::max<int64_t>(1, trans_b ? n : k); }
  int64_t min_ldc() const { return std::max<int64_t>(1, m); }
  double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
};

/// What the epilogue does before C is stored (tuned_gemm_strided_batched_ex, the cuBLASLt epilogue
/// idea): C = act(alpha op(A) op(B) + beta C + bias). gemm.cu's Epilogue reads the same numbers.
enum class BiasKind { kNone = 0, kRow = 1, kColumn = 2 };  // one value per row (m) or column (n)
enum class Activation { kNone = 0, kRelu = 1, kGeluTanh = 2, kGeluErf = 3 };
struct Epilogue {
  BiasKind bias_kind = BiasKind::kNone;
  const float* bias = nullptr;  // device memory: m (per row) or n (per column) floats a product
  int64_t bias_stride = 0;      // floats between products' bias vectors (0: one for all)
  Activation activation = Activation::kNone;
};

/// The kernel form an epilogue needs (Problem::epilogue): 0 where it adds nothing, else 1 + its
/// activation (each activation is compiled into its own kernels).
int epilogue_form(const Epilogue& epilogue);

/// Bits of Problem::unaligned_operands.
constexpr int kOperandA = 1, kOperandB = 2;

/// The bits of a and b whose pointer is off a 16-byte boundary or whose leading dimension is no
/// multiple of 4.
int unaligned_operands(const void* a, int64_t lda, const void* b, int64_t ldb);

/// A problem with the smallest leading dimensions and aligned pointers (for tuning), of a variant
/// ("NN", or with a compute type: "NN-tf32"), and for a batch the products stored one after the
/// other (strides of whole matrices, rounded up to the alignment class); throws
/// Error(TUNED_STATUS_INVALID_ARGUMENT) naming the variants for any other.
Problem packed_problem(const std::string& variant, int64_t m, int64_t n, int64_t k,
                       int64_t batch = 1);

/// Widest vector width w in {4, 2, 1} such that every pointer is 4w-byte aligned and every
/// leading dimension (and batch stride) a multiple of w.
int alignment_class(const void* a, const void* b, const void* c, int64_t lda, int64_t ldb,
                    int64_t ldc, int64_t stride_a = 0, int64_t stride_b = 0,
                    int64_t stride_c = 0);

/// Checks tuned_gemm's arguments; throws Error(TUNED_STATUS_INVALID_ARGUMENT) naming the argument
/// and the rule.
void validate_arguments(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
                        const void* a, int64_t lda, const void* b, int64_t ldb, const float* beta,
                        const void* c, int64_t ldc);
/// Checks the batch of tuned_gemm_strided_batched (after validate_arguments): batch >= 0, strides
/// >= 0, C's products apart so none overlaps another (stride_c >= ldc * n where batch > 1).
void validate_batch(int64_t m, int64_t n, int64_t ldc, int64_t stride_a, int64_t stride_b,
                    int64_t stride_c, int64_t batch);
/// Checks an epilogue (kind, activation, a bias vector where one is asked for).
void validate_epilogue(const Epilogue& epilogue);

/// The most products one launch computes (a grid's z extent); launch runs more in several.
constexpr int64_t kMaxBatchPerLaunch = 65535;

/// Largest m, n or k: the kernels index in 32 bits, and a tile (at most 256 rows, columns or k
/// elements) past the last row must not overflow.
constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1024;

/// Every parameter with the values it may take before constraints.
const std::vector<Param>& parameters();

/// The space for this device and problem, with every constraint named.
Space make_space(const DeviceInfo& device, const Problem& problem);

/// A safe, reasonably fast config for any problem (used when nothing was tuned).
Config default_config(const DeviceInfo& device, const Problem& problem);

/// The default plus known-good families that fit the problem: where a search starts.
std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem);

/// config with its operands' shared-memory layout set from the problem's layout where the config
/// keeps operands as stored (MMA = 1: AKM = 0 for a k-contiguous A, BKM = 1 where B is read
/// n-contiguous); other configs unchanged. How a config found for one layout serves another.
Config with_operands_as_stored(Config config, const Problem& problem);

/// The arithmetic a config computes with: "FFMA", "FFMA, matrix-vector", "FP64 tensor cores",
/// "split TF32 on mma.sync", "split TF32 on wgmma", "split TF32 on wgmma, TMA-fed" or
/// "TF32 on wgmma, TMA-fed (plain TF32)".
std::string math_family(const Config& config);

/// config as the problem's compute type runs it: for the TF32 type, split TF32 on wgmma (MMA = 3,
/// 4) as plain TF32 in the TMA-fed kernel (MMA = 5: the same tiles, a third of the tensor-core
/// work); others unchanged. How the layouts' data (shipped defaults, selection model) serve the
/// TF32 type.
Config for_compute(Config config, const Problem& problem);

/// The matrix-vector config (m or n up to cols): rows of Y per block, vector width, splits of k,
/// columns taken at once; the parameters the matrix-vector kernel does not read at the values the
/// space holds them at there (Param::read_by), in the space's parameter order.
Config gemv_config(int rows, int vec, int splits, int cols = 1);

/// The most vectors the matrix-vector kernel takes at once (GCOLS's largest value).
constexpr int64_t kGemvMaxCols = 16;

/// Registers per thread the kernel is expected to need (for pruning before compiling).
int estimated_registers(const Config& config);

/// The time packing's copies of A and B (those whose leading dimension is unaligned) take, as a
/// share of the product's, by bandwidth and flop rate (0: nothing to copy).
double packing_cost(const Problem& problem);

/// Whether copying those of A and B whose leading dimension is unaligned into an aligned workspace
/// (PACK) is expected to beat narrower vectors on this problem: fit_config's choice for a config
/// whose VEC the problem does not allow (true where only C is unaligned: nothing is copied).
bool packing_pays(const Problem& problem);

/// config as it runs on problem's alignment where that keeps its kernel: a TMA-fed config (which
/// reads 16-byte runs only) packs (PACK = 1, a host-side parameter) on a problem below alignment 4,
/// as fit_config makes it. The op's serve applies it to the portfolio's entries, which were
/// mostly timed unpacked on aligned problems, and gemm_sweep to the configs it times.
Config packed_where_unaligned(Config config, const Problem& problem);

/// Whether a launch of config on problem packs (PACK = 1 on a tile config, the problem's alignment
/// class below 4): the operands whose pointer or leading dimension allows no 16-byte vectors are
/// copied aligned into the workspace, which holds room for those alone.
bool packs(const Config& config, const Problem& problem);

/// config made valid for problem (VEC kept by packing where that pays, else lowered to the problem's
/// alignment; tiles kept); throws
/// Error(TUNED_STATUS_CONFIG_ERROR) naming the broken constraint when that is not enough.
Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem);

/// "gemm_nn_bm128_bn128_bk8_wm64_..._splitk1": the layout, then every parameter with its value.
std::string kernel_name(const Config& config, const Problem& problem);
/// The kernel name's ending for an epilogue form ("", "_epilogue", "_epilogue_gelu_erf", ...).
std::string epilogue_suffix(int form);
KernelSpec kernel_spec(const Config& config, const Problem& problem);
int stages(const Config& config);  // shared-memory stages PIPE implies
/// Row lengths (floats) of A's and B's shared tiles: the stored extent plus PAD, or for MMA = 1 the
/// padding that keeps its fragment reads conflict-free; and the column length of the staged C tile
/// (CSTAGE = 1). gemm.cu gets them as A_STRIDE, B_STRIDE and C_STRIDE.
struct SharedStrides {
  int a = 0;
  int b = 0;
  int c = 0;
};
SharedStrides shared_strides(const Config& config);
size_t shared_bytes(const Config& config);
int threads_per_block(const Config& config);
int64_t tile_count(const Config& config, const Problem& problem);
/// Whether config is the matrix-vector kernel (GEMV > 0) rather than the tile kernel.
bool is_gemv(const Config& config);
/// The accuracy contract (issue 28): an FFMA sum of more than kMaxFfmaSum products in one
/// sequence was beyond 2x cuBLAS SGEMM's normwise error against an FP64 product on 1-4 % of the
/// H100 sweeps' problems at 160-511 products and on most past 1024. At 113-128 none of 3009 sweep
/// rows was, but 83 were beyond 1.7x and a benchmark row (TN 43x380x113, one FFMA chain) 2.006x;
/// at 112 or fewer, none beyond 1.7x. Longer sums are refused (rule float_sums_within_contract):
/// KSUM = 1 sums partial chains of kSumChain products (gemm.cu: a whole number of slices of every
/// BK) and then the chains, so both sequences stay within 112 while a split's share of k is at
/// most 96 * 112; split-K or the FP64 tensor cores beyond. The split TF32 kernels (MMA = 2) sum in
/// float too: the same bound holds for them.
constexpr int64_t kMaxFfmaSum = 112;
constexpr int64_t kSumChain = 96;
/// The longest sequence of float adds a config (FFMA, MMA = 2 or the matrix-vector kernel) makes
/// per output on this problem: one split's products, or with KSUM = 1 the longer of a partial
/// chain and the chains' sum; the matrix-vector kernel's: a lane's or thread's share of a split's
/// products, or the sum of the threads' partials (a decoding product, TN 5120x4x13824 in one
/// split, was 2.2x cuBLAS's error with 432-long sums).
int64_t longest_ffma_sum(const Config& config, const Problem& problem);
/// The wgmma kernels (MMA = 3-5) sum each slice of BK in the tensor cores from zero and add the
/// slice sums in float: in one chain (KSUM = 1), or (KSUM = 2, the TMA-fed kernels) in partial
/// chains of kSliceChain slices and then the chains (gemm.cu). On the wide-range probe
/// (GemmTask::check_probe, split TF32) one chain was beyond the contract at 512-2048 slices on an
/// H100 (1.6-2.5x cuBLAS SGEMM's error), chains of 32 0.5-1.0x. On an H200 (probe 131x77, seeds
/// 1-8, four layouts) one chain was 1.2-2.0x at 64 slices and 1.0-2.1x at 128 (TN the highest:
/// first-use's check refused all nine one-chain candidates of TN 5120x8192x1280 on seed 2),
/// partial chains 1.2-1.8x and 0.9-1.5x. So a float sequence of slice sums is at most
/// kMaxSliceSum long, and a TMA-fed kernel's one chain at most kSliceChain (max_slice_sum): past
/// it partial chains (fit_config turns KSUM = 1 into 2), MMA = 3 (no chains) split-K past 128.
/// Within 32 slices the chains change nothing: there split TF32's own error sets the ratio (one
/// chain and chains alike 1.3-2.1x at k = 1024, 0.9-5x at k = 96, where cuBLAS's short FFMA sums
/// are the more exact), which the probe at the longest k a config may meet does not see.
constexpr int64_t kMaxSliceSum = 128;
constexpr int64_t kSliceChain = 32;
/// The longest float sequence of slice sums a wgmma config makes per output on this problem.
int64_t longest_slice_sum(const Config& config, const Problem& problem);
/// The longest such sequence config may make: kSliceChain for a TMA-fed kernel in one chain (it
/// has partial chains for more), kMaxSliceSum for the others.
int64_t max_slice_sum(const Config& config);
/// config with its slice sums within max_slice_sum on problem where it was past it: a TMA-fed one
/// in one chain (KSUM = 1) turned into partial chains (KSUM = 2), MMA = 3 split in more parts of k;
/// fit_config, the op's serve (shipped and predicted entries) and its tuning task's adapt apply it.
Config with_bounded_slice_sums(Config config, const Problem& problem);
/// Whether config's float sums on problem are within the contract's bounds: kMaxFfmaSum (FFMA,
/// MMA = 2, the matrix-vector kernel), max_slice_sum (the wgmma kernels); always for the FP64
/// tensor cores.
bool sums_within_contract(const Config& config, const Problem& problem);
/// Whether the main kernel reads B as (n, k), n contiguous: B transposed, or PRETB.
bool reads_b_transposed(const Config& config, const Problem& problem);
/// PACK's copies are bounded: an operand past kMaxPackBytes (a vocabulary-sized B of 50257 x 8192
/// is 1.6 GB) is packed and multiplied in passes over k, each pass adding its product to C (beta 1
/// after the first). Each pass but the last covers pack_pass_k(config, problem) of k, a multiple of
/// kPackPassK (which keeps an unpacked operand's slices 16-byte aligned); problem.k when one pass
/// holds it, or the config does not pack. A pass costs a read and write of C: about 67 / k_pass of
/// the product's time on an H100: under 3 % at the 2592 of k a 512 MB bound leaves NT 1280 x 50257.
constexpr size_t kMaxPackBytes = size_t{512} << 20;
constexpr int64_t kPackPassK = 32;
int64_t pack_pass_k(const Config& config, const Problem& problem);
/// Bytes of device workspace a launch needs (0 unless PRETB, PACK on unaligned operands or
/// SPLITK > 1).
size_t workspace_bytes(const Config& config, const Problem& problem);
LaunchGeometry geometry(const Config& config, const Problem& problem);

ProblemKey problem_key(const DeviceInfo& device, const Problem& problem);

/// A launch's split of the last, partial wave (TAIL = 1): tiles from `first` on are each computed
/// by `splits` blocks sharing its k range (splits = 1: no split). Chosen from the SMs and the
/// kernel's occupancy: the tail tiles times the splits fill at most one wave.
struct TailSplit {
  int64_t first = 0;
  int64_t splits = 1;
};
TailSplit tail_split(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                     const LaunchGeometry& product);

/// Split-K's splits per tile (GEMV's splits of k too): SPLITK, or more, up to
/// max_split_k, where an estimate (waves of blocks times a block's slices of k plus a fixed cost)
/// says the blocks then fill the GPU clearly better: NT 87 x 1765 x 9433 in 32 x 64 tiles, 336
/// blocks of 4 splits, ran 1.19x faster raised to fill two whole waves on an H100. Chosen from
/// the SMs and the kernel's occupancy like the tail split. More splits only shorten each split's
/// sum: a config within the accuracy contract at SPLITK stays within it.
int64_t split_k_count(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                      const LaunchGeometry& product);
/// The most splits split_k_count may choose, what the workspace holds room for (without knowing
/// the device): 2 SPLITK - 1, no more than the slices of k; SPLITK itself where the raised partial
/// tiles would pass kMaxRaisedSplitBlocks (a raise pays only where few tiles leave a wave short,
/// and a larger workspace would cross the runtime's limit on it for more shapes: on an H100,
/// shapes that lost their split-K pick that way ran up to 1.2x slower), for FFMA configs and
/// tiles larger than 64 x 64 (raised 128 x 128 wgmma tiles ran up to 1.38x slower, no FFMA tile
/// gained) and where a summing pass adds the partials (REDUCE = 1: its loop over a count known at
/// compile time stays as it was).
constexpr int64_t kMaxRaisedSplitBlocks = 1024;
int64_t max_split_k(const Config& config, const Problem& problem);

/// The transpose op on the stream: B (cols x rows, ldb) = A^T for A (rows x cols, lda). PRETB
/// configs transpose B into the workspace with it: the API entry passes the transpose op's runtime
/// path (api::transpose), a tuning task a kernel of the transpose op it loaded itself.
using TransposeB = std::function<void(int64_t rows, int64_t cols, const float* a, int64_t lda,
                                      float* b, int64_t ldb, cudaStream_t stream)>;

/// Launches C = alpha op(A) op(B) + beta C (then the epilogue's bias and activation) with a kernel
/// built from config (m, n > 0), for every product of the problem's batch.
/// workspace: at least workspace_bytes(config, problem) bytes of device memory, used in stream
/// order (may be null when that is 0). transpose_b: needed by PRETB configs (Error otherwise).
void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem, float alpha,
            const float* a, const float* b, float beta, float* c, void* workspace,
            cudaStream_t stream, const TransposeB& transpose_b = nullptr,
            const Epilogue& epilogue = {});

/// What the op is (name, dims, variants, rate unit, parameters): its entry in the catalog.
OpInfo info();

}  // namespace tuned::gemm_op
