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

// The fused epilogue of a tile family's fragment (EPILOGUE forms), a group of columns at a time:
// the group's values (about 8) are finished side by side from the accumulators, read only, then
// stored, in store_c's order of arithmetic (the same bits as finishing each value at its store).
// Why: an activation finished at each bounds-checked store ran alone, latency-bound (an erf is
// ~20 dependent instructions; docs/HISTORY.md, "The fused epilogue"). kCVec as the plain stores:
// runs of kCVec rows stored, and for beta loaded, at once where whole.
template <int kCVec>
__device__ __forceinline__ void fused_epilogue(const float (&acc)[kFragM][kFragN], float* C,
                                               int ldc, float alpha, float beta,
                                               const Epilogue& epi, int warp_m0, int warp_n0,
                                               int lane_m, int lane_n, int m0, int n0, int m_left,
                                               int n_left) {
  constexpr int kWanted = kFragM >= 8 ? 1 : 8 / kFragM;
  constexpr int kGroup = kFragN % kWanted == 0 ? kWanted : 1;  // columns finished together
  const bool biased = epi.bias_kind != 0, by_column = epi.bias_kind == kBiasColumn;
  const bool activates = kActivation != 0 && epi.activation != 0;
  int rows[kFragM];  // a fragment row's row in the tile
  float row_bias[kFragM];
#pragma unroll
  for (int r = 0; r < kFragM; ++r) {
    rows[r] = warp_m0 + (r / TM) * LM * TM + lane_row(lane_m, r % TM);
    row_bias[r] =
        epi.bias_kind == kBiasRow && rows[r] < m_left ? __ldg(epi.bias + m0 + rows[r]) : 0.0f;
  }
#pragma unroll
  for (int first = 0; first < kFragN; first += kGroup) {
    int cols[kGroup];  // a group column's column in the tile
    float v[kGroup][kFragM];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const int col = first + g;
      cols[g] = warp_n0 + (col / TN) * kLN * TN + lane_n * TN + col % TN;
      const bool inside = cols[g] < n_left;
      const float* c_col = C + (long long)(n0 + cols[g]) * ldc + m0;
#pragma unroll
      for (int r = 0; r < kFragM; r += kCVec) {
        const int m = rows[r];
#pragma unroll
        for (int e = 0; e < kCVec; ++e) v[g][r + e] = alpha * acc[r + e][col];
        if (beta != 0.0f && inside) {
          if (m + kCVec <= m_left) {
            const Vec<kCVec> old = *reinterpret_cast<const Vec<kCVec>*>(c_col + m);
#pragma unroll
            for (int e = 0; e < kCVec; ++e) v[g][r + e] = fmaf(beta, old.v[e], v[g][r + e]);
          } else {
#pragma unroll
            for (int e = 0; e < kCVec; ++e) {
              if (m + e < m_left) v[g][r + e] = fmaf(beta, c_col[m + e], v[g][r + e]);
            }
          }
        }
      }
      if (biased) {
        const float column_bias = by_column && inside ? __ldg(epi.bias + n0 + cols[g]) : 0.0f;
#pragma unroll
        for (int r = 0; r < kFragM; ++r) v[g][r] += row_bias[r] + column_bias;
      }
    }
    if (activates) {
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
#pragma unroll
        for (int r = 0; r < kFragM; ++r) v[g][r] = apply_activation(v[g][r]);
    }
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      if (cols[g] >= n_left) continue;
      float* c_col = C + (long long)(n0 + cols[g]) * ldc + m0;
#pragma unroll
      for (int r = 0; r < kFragM; r += kCVec) {
        const int m = rows[r];
        if (m + kCVec <= m_left) {
          Vec<kCVec> out;
#pragma unroll
          for (int e = 0; e < kCVec; ++e) out.v[e] = v[g][r + e];
          *reinterpret_cast<Vec<kCVec>*>(c_col + m) = out;
        } else {
#pragma unroll
          for (int e = 0; e < kCVec; ++e) {
            if (m + e < m_left) c_col[m + e] = v[g][r + e];
          }
        }
      }
    }
  }
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
