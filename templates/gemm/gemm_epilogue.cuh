// Shared by every tile family after its main loop: split-K modes, tile order, fragment positions,
// batches, the fused epilogue (bias, activation) and C's stores.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

// How a launch treats split-K partials (gemm_op.cpp's SplitMode): the last block of each tile sums
// them; every block only writes its partial; or this launch is the summing pass.
constexpr int kSplitLastBlockSums = 0;
constexpr int kSplitPartialsOnly = 1;
constexpr int kSplitSumPass = 2;

// Block tile origin of tile number `tile`: groups of SWZ block rows, m fastest inside a group
// (SWZ = 0: one group).
__device__ __forceinline__ void tile_origin(int tile, int M, int N, int& m0, int& n0) {
  const int tiles_m = (M + BM - 1) / BM;
  const int tiles_n = (N + BN - 1) / BN;
  const int group = SWZ == 0 ? tiles_m : SWZ;
  const int group_first = (tile / (group * tiles_n)) * group;
  const int group_rows = min(tiles_m - group_first, group);
  const int in_group = tile - group_first * tiles_n;
  m0 = (group_first + in_group % group_rows) * BM;
  n0 = (in_group / group_rows) * BN;
}

// Row i (of TM) of a lane's sub-tile: runs of TM rows, or MMA = 4's wgmma rows g and g + 8 (its
// A fragments are read as stored, so the rows stay the tensor cores').
constexpr bool kRowsEightApart = MMA >= 4;
__device__ __forceinline__ int lane_row(int lane_m, int i) {
  return kRowsEightApart ? lane_m + 8 * i : lane_m * TM + i;
}

// Where element `e` (row-major in the kFragM x kFragN fragment) of thread tid's fragment lies in
// the block tile: the inverse of the lane and warp layout the product uses.
__device__ __forceinline__ void fragment_position(int tid, int e, int& m, int& n) {
  const int lane = tid % 32, warp = tid / 32;
  const int i = e / kFragN, j = e % kFragN;
  const int lane_m = kMma ? lane / 4 : lane % LM, lane_n = kMma ? lane % 4 : lane / LM;
  m = (warp % kWarpsM) * WM + (i / TM) * LM * TM + lane_row(lane_m, i % TM);
  n = (warp / kWarpsM) * WN + (j / TN) * kLN * TN + lane_n * TN + j % TN;
}

// A launch's products (tuned_gemm_strided_batched): grid row z computes product z, whose A, B, C
// (and split-K workspace) lie a stride of floats after product z - 1's; 0 shares one operand
// (broadcast). gemm_launch.cpp's BatchArgs: keep them equal.
struct Batch {
  long long a, b, c, workspace;
};

// What the epilogue adds before C is stored: C = act(alpha * product + beta * C + bias), bias one
// value per row of C (kBiasRow, m of them) or per column (kBiasColumn, n), bias_stride floats
// apart between products. gemm_launch.cpp's EpilogueArgs and gemm_op's BiasKind and Activation:
// keep them equal.
struct Epilogue {
  const float* bias;
  long long bias_stride;
  int bias_kind;   // 0 none, 1 per row, 2 per column
  int activation;  // 0 none, 1 ReLU, 2 GELU (tanh), 3 GELU (erf)
};
constexpr int kBiasRow = 1, kBiasColumn = 2;
constexpr int kActRelu = 1, kActGeluTanh = 2, kActGeluErf = 3;

// The epilogue's bias and activation on one output value at (row m, column n) of C; a launch
// without them (most) takes one uniform branch. GELU as PyTorch computes it (approximate="tanh"
// or the exact erf form).
// The activation is the kernel's own, EPILOGUE - 1; epi.activation only says whether this launch
// applies it (the host checks it is 0 or that one; a product over slices of k applies it on the
// last): with every activation inlined at each of a thread's stores, the fused GELU linear
// (4096 x 1600 -> 6400, H100) took longer than the bias-only kernel plus torch's GELU after it.
constexpr int kActivation = EPILOGUE > 0 ? EPILOGUE - 1 : 0;
__device__ __forceinline__ float apply_activation(float x) {
  if constexpr (kActivation == kActRelu) return fmaxf(x, 0.0f);
  if constexpr (kActivation == kActGeluTanh) {
    const float inner = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  if constexpr (kActivation == kActGeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  }
  return x;
}
__device__ __forceinline__ float finish(float x, const Epilogue& epi, int m, int n) {
  if constexpr (EPILOGUE == 0) return x;
  // (Through the read-only cache: the bias is not written during the call, and a plain load
  // would have to be ordered after every store to C that might alias it.)
  if (epi.bias_kind != 0) x += __ldg(epi.bias + (epi.bias_kind == kBiasRow ? m : n));
  return epi.activation != 0 ? apply_activation(x) : x;
}
// finish as a call: the matrix-vector kernel's widest forms (16 columns of 256 rows) spilled
// with the activations inlined.
__device__ __noinline__ float finish_outlined(float x, Epilogue epi, int m, int n) {
  return finish(x, epi, m, n);
}
__device__ __forceinline__ bool finishes(const Epilogue& epi) {
  return EPILOGUE != 0 && (epi.bias_kind != 0 || epi.activation != 0);
}

// C = finish(alpha * value + beta * C) for one element at (row m, column n) of C; beta == 0 never
// reads C (NaNs there must not leak).
__device__ __forceinline__ void store_c(float* c, float alpha, float value, float beta,
                                        const Epilogue& epi, int m, int n) {
  const float out = alpha * value;
  *c = finish(beta != 0.0f ? fmaf(beta, *c, out) : out, epi, m, n);
}

// A barrier of the threads that hold C's fragments: all of them, or with MMA = 3's producer
// warpgroup gone after the product, the others (named barrier 1).
__device__ __forceinline__ void fragment_threads_sync() {
  if constexpr (kProducers > 0) {
    asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
  } else {
    __syncthreads();
  }
}

// Programmatic dependent launch (sm_90+; the host launches these kernels allowing it): this grid
// may be launched while the previous kernel of the stream still runs, so its blocks are resident
// when that one ends instead of starting after a launch gap; every block waits here until the
// previous grid has finished and its writes are visible, before touching memory. It lets the next
// such kernel launch at once: that one waits the same way for this grid to finish.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
