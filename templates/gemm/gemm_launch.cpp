#include "templates/gemm/gemm_launch.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "templates/gemm/gemm_tma.hpp"
#include "templates/gemm/math_family.hpp"
#include "tuned/error.hpp"

namespace tuned::gemm_op {
namespace {

// gemm.cu's split modes: who sums split-K partials in a launch.
constexpr int kSplitLastBlockSums = 0;
constexpr int kSplitPartialsOnly = 1;
constexpr int kSplitSumPass = 2;

// Copies the rows x cols column-major matrix at `from` (leading dimension ld) to `to` with an
// aligned leading dimension (gemm.cu's tuned_gemm_pack, in the programmatic launch chain); returns
// that leading dimension.
int64_t copy_aligned(const LoadedKernel& kernel, const float* from, int64_t ld, int64_t rows,
                     int64_t cols, float* to, cudaStream_t stream) {
  constexpr int kThreads = 256;
  long long from_ld = ld, to_ld = aligned_ld(rows);
  if (rows == 0 || cols == 0) return to_ld;
  int rows32 = static_cast<int>(rows), cols32 = static_cast<int>(cols);  // both <= 2^31 - 1024
  LaunchGeometry g;
  const int64_t row_blocks = (rows + 4 * kThreads - 1) / (4 * kThreads);  // 4 rows per thread
  g.grid = dim3(static_cast<unsigned>(std::min<int64_t>(row_blocks, 1024)),
                static_cast<unsigned>(std::min<int64_t>(cols, 65535)));
  g.block = dim3(kThreads);
  g.waits_for_previous_grid = true;
  void* args[] = {&from, &from_ld, &rows32, &cols32, &to, &to_ld};
  kernel.launch_companion(kPack, g, args, stream);
  return to_ld;
}

// gemm.cu's tuned_gemm_zero_tickets over n tickets of each of `products` products (batch_stride
// ints apart), in the programmatic launch chain.
void zero_tickets(const LoadedKernel& kernel, int* tickets, int64_t n, int64_t products,
                  long long batch_stride, cudaStream_t stream) {
  constexpr int kThreads = 256;
  int count = static_cast<int>(n);
  LaunchGeometry g;
  g.grid = dim3(static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 1024)),
                static_cast<unsigned>(products));
  g.block = dim3(kThreads);
  g.waits_for_previous_grid = true;
  void* args[] = {&tickets, &count, &batch_stride};
  kernel.launch_companion(kZeroTickets, g, args, stream);
}

// gemm_epilogue.cuh's Batch and Epilogue kernel parameters (the same layout).
struct BatchArgs {
  long long a, b, c, workspace;
};
struct EpilogueArgs {
  const float* bias;
  long long bias_stride;
  int bias_kind;
  int activation;
};

// launch_pass's refusals, before anything is launched: sizes past the kernel's 32-bit indexing,
// a missing workspace, and configs the problem does not fit.
void check_pass(const Config& config, const Problem& problem, const void* workspace) {
  if (problem.m > INT_MAX || problem.n > INT_MAX || problem.k > INT_MAX || problem.lda > INT_MAX ||
      problem.ldb > INT_MAX || problem.ldc > INT_MAX) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "m, n, k and the leading dimensions must each be below 2^31 for this kernel");
  }
  const size_t ws_bytes = workspace_bytes(config, problem);
  if (ws_bytes > 0 && workspace == nullptr) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "workspace: config " + config.canonical() +
                                                   " needs " + std::to_string(ws_bytes) +
                                                   " bytes of workspace, got NULL");
  }
  if (is_gemv(config) && std::min(problem.m, problem.n) > config.get("GCOLS")) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, "gemm config " + config.canonical() +
                                               ": GEMV > 0 needs m or n to be at most GCOLS");
  }
  if (problem.batch > 1 && (config.get("PRETB") || packs(config, problem))) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "gemm config " + config.canonical() +
                    ": PRETB and PACK copy one product's operands; a batch needs neither");
  }
  if (config.get("PRETB") && problem.trans_b != is_tma(config)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "gemm config " + config.canonical() +
                    (is_tma(config) ? ": PRETB = 1 with MMA = 4 needs B transposed"
                                    : ": PRETB = 1 needs B not transposed"));
  }
}

// The operands as the product reads them: as given, or where PRETB's transpose and PACK's copies
// put them in the workspace.
struct Operands {
  const float* a;
  int lda;
  const float* b;
  int ldb;
};

// PRETB: B as stored (k x n, or n x k where transposed) turned over by the transpose op into the
// workspace (ld a multiple of 4).
void transpose_b_into(char* region, const Config& config, const Problem& problem,
                      const TransposeB& transpose_b, cudaStream_t stream, Operands& operands) {
  if (!transpose_b) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, "gemm config " + config.canonical() +
                                               ": PRETB = 1 needs the transpose op (none given)");
  }
  const int ldt = static_cast<int>(transposed_b_ld(problem));
  float* bt = reinterpret_cast<float*>(region);
  if (problem.trans_b) {
    transpose_b(problem.n, problem.k, operands.b, operands.ldb, bt, ldt, stream);
  } else {
    transpose_b(problem.k, problem.n, operands.b, operands.ldb, bt, ldt, stream);
  }
  operands.b = bt;
  operands.ldb = ldt;
}

// PACK: the operands whose pointer or leading dimension allows no 16-byte vectors copied aligned
// into the workspace.
void pack_unaligned(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                    const WorkspaceRegions& regions, cudaStream_t stream, Operands& operands) {
  float* a_packed = reinterpret_cast<float*>(regions.packed_a);
  float* b_packed = reinterpret_cast<float*>(regions.packed_b);
  // The workspace has room for the operands the problem says are unaligned; pointers or
  // leading dimensions that contradict it would overrun it.
  const bool copy_a = !vector_aligned(operands.a, operands.lda),
             copy_b = !config.get("PRETB") && !vector_aligned(operands.b, operands.ldb);
  const bool a_unmarked = copy_a && !copies_a(config, problem);
  if (a_unmarked || (copy_b && !copies_b(config, problem))) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                std::string("gemm launch: ") + (a_unmarked ? "A" : "B") +
                    "'s pointer or leading dimension allows no 16-byte vectors but the problem's "
                    "unaligned_operands says it does (no workspace is reserved for its copy)");
  }
  if (copy_a) {
    operands.lda = static_cast<int>(copy_aligned(kernel, operands.a, operands.lda, a_rows(problem),
                                                 a_cols(problem), a_packed, stream));
    operands.a = a_packed;
  }
  if (copy_b) {
    operands.ldb = static_cast<int>(copy_aligned(kernel, operands.b, operands.ldb, b_rows(problem),
                                                 b_cols(problem), b_packed, stream));
    operands.b = b_packed;
  }
}

// How the product's blocks share k: gemm.cu's split_mode, tail_first and split_count arguments.
struct SplitArgs {
  int mode;
  int tail_first;
  int count;
};

// The product's splits of k (split-K, raised by split_k_count, or a tail split) set in its grid,
// with the tickets they sum by zeroed in the workspace.
SplitArgs prepare_splits(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                         bool sum_pass, float* split_ws, LaunchGeometry& product,
                         cudaStream_t stream) {
  const int64_t splits = split_k_count(kernel, config, problem, product);
  product.grid.y = static_cast<unsigned>(splits);
  // Each product of a batch has its partial tiles and tickets in a region of its own.
  const auto region_ints = static_cast<long long>(batch_split_bytes(config, problem) / sizeof(int));
  if (splits > 1 && !sum_pass) {
    // The tickets, after the launch's partial tiles, start at zero each launch (the last block of
    // a tile also resets its own, but a workspace may be fresh or left over from an aborted one).
    const int64_t tiles = tile_count(config, problem);
    zero_tickets(kernel,
                 reinterpret_cast<int*>(split_ws + splits * tiles * split_tile_floats(config)),
                 tiles, problem.batch, region_ints, stream);
  }
  SplitArgs args;
  args.mode = sum_pass ? kSplitPartialsOnly : kSplitLastBlockSums;
  const TailSplit tail = tail_split(kernel, config, problem, product);
  args.tail_first = static_cast<int>(tail.first);
  args.count = static_cast<int>(tail.splits > 1 ? tail.splits : splits);
  if (tail.splits > 1) {
    const int64_t tail_tiles = tile_count(config, problem) - tail.first;
    product.grid.x = static_cast<unsigned>(tail.first + tail_tiles * tail.splits);
    // Tickets follow the tail's partial tiles, as in gemm.cu; they start at zero each launch.
    const size_t partial_bytes = static_cast<size_t>(tail.splits * tail_tiles) *
                                 static_cast<size_t>(config.get("BM") * config.get("BN")) *
                                 sizeof(float);
    zero_tickets(kernel, reinterpret_cast<int*>(reinterpret_cast<char*>(split_ws) + partial_bytes),
                 tail_tiles, 1, 0, stream);  // (tail_split splits no batch)
  }
  return args;
}

// The product kernel on the pass's operands, after its tickets are zeroed, and the summing pass
// where one adds the split-K partials (REDUCE = 1).
void launch_product(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                    float alpha, Operands operands, float beta, float* c, float* split_ws,
                    const Epilogue& epilogue, cudaStream_t stream) {
  int m = static_cast<int>(problem.m), n = static_cast<int>(problem.n),
      k = static_cast<int>(problem.k), ldc = static_cast<int>(problem.ldc);
  const bool sum_pass = config.get("SPLITK") > 1 && !is_gemv(config) && config.get("REDUCE") == 1;
  LaunchGeometry product = geometry(config, problem);
  SplitArgs split = prepare_splits(kernel, config, problem, sum_pass, split_ws, product, stream);
  BatchArgs batch{problem.stride_a, problem.stride_b, problem.stride_c,
                  static_cast<long long>(batch_split_bytes(config, problem) / sizeof(float))};
  if (problem.batch == 1) batch = BatchArgs{0, 0, 0, 0};
  EpilogueArgs epi{epilogue.bias, epilogue.bias_stride, static_cast<int>(epilogue.bias_kind),
                   static_cast<int>(epilogue.activation)};
  // The kernel must have been compiled for the call's form (kernel_spec: BATCHED, EPILOGUE; a
  // batched or epilogue kernel also runs one plain product, and an activation's kernel a launch
  // that adds no activation: a pass over a slice of k but the last).
  const bool finishes = epi.bias_kind != 0 || epi.activation != 0;
  const std::string form = epilogue_suffix(problem.epilogue);
  const bool form_compiled =
      kernel.name().size() >= form.size() &&
      kernel.name().compare(kernel.name().size() - form.size(), form.size(), form) == 0;
  if ((problem.batch > 1 && kernel.name().find("_batched") == std::string::npos) ||
      (finishes && (problem.epilogue == 0 || !form_compiled)) ||
      (epi.activation != 0 && epi.activation != problem.epilogue - 1)) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                "gemm launch: kernel " + kernel.name() + " is not compiled for " +
                    (finishes ? "this epilogue (activation " + std::to_string(epi.activation) +
                                    ", bias kind " + std::to_string(epi.bias_kind) + ")"
                              : "a batch of " + std::to_string(problem.batch)));
  }
  // MMA = 4 reads A and B through tensor maps (the kernel's last parameters; other kernels have
  // none and ignore them): A (m, k) or (k, m) in boxes of 32 x 32 or 32 x BM, B (k, n) in boxes
  // of 32 x BN, each of the batch's products.
  TensorMapBytes map_a{}, map_b{};
  if (is_tma(config)) {
    map_a = problem.trans_a ? encode_tensor_map("A", operands.a, k, m, operands.lda, problem.batch,
                                                batch.a, 32, config.get("BM"))
                            : encode_tensor_map("A", operands.a, m, k, operands.lda, problem.batch,
                                                batch.a, 32, 32);
    map_b = encode_tensor_map("B", operands.b, k, n, operands.ldb, problem.batch, batch.b, 32,
                              config.get("BN"));
  }
  void* args[] = {
      &m,    &n,     &k,    &alpha,    &operands.a, &operands.lda,     &operands.b,  &operands.ldb,
      &beta, &c,     &ldc,  &split_ws, &split.mode, &split.tail_first, &split.count, &batch,
      &epi,  &map_a, &map_b};
  kernel.launch(product, args, stream);
  if (sum_pass) {
    // The same kernel again as the summing pass: a block per (tile, fragment element, product).
    LaunchGeometry sum = product;
    sum.grid = dim3(product.grid.x, static_cast<unsigned>(config.get("WM") * config.get("WN") / 32),
                    product.grid.z);
    sum.dynamic_smem_bytes = 0;
    split.mode = kSplitSumPass;
    kernel.launch(sum, args, stream);
  }
}

// One launch of the product over the problem's whole k (launch's pass over a slice of it):
// [transpose B] [pack A and B] [zero tickets] product [sum pass], in the stream's launch chain.
void launch_pass(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                 float alpha, const float* a, const float* b, float beta, float* c, void* workspace,
                 cudaStream_t stream, const TransposeB& transpose_b, const Epilogue& epilogue) {
  check_pass(config, problem, workspace);
  const WorkspaceRegions regions = workspace_regions(config, problem, workspace);
  Operands operands{a, static_cast<int>(problem.lda), b, static_cast<int>(problem.ldb)};
  if (config.get("PRETB") && problem.k > 0) {
    transpose_b_into(regions.transposed_b, config, problem, transpose_b, stream, operands);
  }
  if (packs(config, problem) && problem.k > 0) {
    pack_unaligned(kernel, config, problem, regions, stream, operands);
  }
  launch_product(kernel, config, problem, alpha, operands, beta, c, regions.split, epilogue,
                 stream);
}

// launch for at most kMaxBatchPerLaunch products: over k in passes where the operands are packed
// in slices of it.
void launch_products(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                     float alpha, const float* a, const float* b, float beta, float* c,
                     void* workspace, cudaStream_t stream, const TransposeB& transpose_b,
                     const Epilogue& epilogue) {
  const int64_t pass_k = pack_pass_k(config, problem);
  if (pass_k >= problem.k) {
    launch_pass(kernel, config, problem, alpha, a, b, beta, c, workspace, stream, transpose_b,
                epilogue);
    return;
  }
  // Operands too large to pack at once (one product: a batch packs nothing): C = alpha op(A)
  // op(B) + beta C over slices of k, each pass adding to what the last one left in C, and the
  // epilogue's bias and activation once, on the last.
  for (int64_t k0 = 0; k0 < problem.k; k0 += pass_k) {
    const Problem pass = k_slice(problem, std::min(pass_k, problem.k - k0));
    // Slice k0 of op(A) (m x k): columns of A as stored, or rows when transposed; B likewise.
    const float* a_pass = a + (problem.trans_a ? k0 : k0 * problem.lda);
    const float* b_pass = b + (problem.trans_b ? k0 * problem.ldb : k0);
    const bool last = k0 + pass.k >= problem.k;
    launch_pass(kernel, config, pass, alpha, a_pass, b_pass, k0 == 0 ? beta : 1.0f, c, workspace,
                stream, transpose_b, last ? epilogue : Epilogue{});
  }
}

}  // namespace

void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem, float alpha,
            const float* a, const float* b, float beta, float* c, void* workspace,
            cudaStream_t stream, const TransposeB& transpose_b, const Epilogue& epilogue) {
  if (problem.batch <= kMaxBatchPerLaunch) {
    launch_products(kernel, config, problem, alpha, a, b, beta, c, workspace, stream, transpose_b,
                    epilogue);
    return;
  }
  // More products than a grid's z extent: launches of kMaxBatchPerLaunch, each reusing the
  // workspace of the first (in stream order).
  for (int64_t z0 = 0; z0 < problem.batch; z0 += kMaxBatchPerLaunch) {
    Problem part = problem;
    part.batch = std::min(kMaxBatchPerLaunch, problem.batch - z0);
    Epilogue part_epilogue = epilogue;
    if (part_epilogue.bias != nullptr) part_epilogue.bias += z0 * epilogue.bias_stride;
    launch_products(kernel, config, part, alpha, a + z0 * problem.stride_a,
                    b + z0 * problem.stride_b, beta, c + z0 * problem.stride_c, workspace, stream,
                    transpose_b, part_epilogue);
  }
}

}  // namespace tuned::gemm_op
