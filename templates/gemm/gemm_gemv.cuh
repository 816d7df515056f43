// The matrix-vector family (GEMV > 0): its own kernel, for m or n up to GCOLS.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

// min(m, n) <= GCOLS: Y = alpha * Mat X + beta * Y, a matrix times a few vectors (decoding's
// products: a layer's weights times 1-16 tokens). It is bound by reading Mat once, so the tile
// kernel's shared staging and register tiles only cost here: each element of Mat is read straight
// from global memory, VEC wide along its contiguous direction, and used for every column of X.
//   n <= GCOLS: Mat = op(A) (m x k), X = op(B) (k x n), Y = C;
//   else (m <= GCOLS): Mat = op(B)^T (n x k), X = op(A)^T (k x m), Y = C^T.
// GCOLS is a power of two at or above the product's columns: the columns past them re-read X's
// last one (branch-free loops; X's columns are walked by one pointer), and their sums are never
// stored.
// Each block owns GEMV rows of Y and one split of k (gridDim.y splits, sums as in the tile kernel).
// Rows adjacent in memory (A not transposed, or B transposed): GEMV / VEC threads across the rows
// (VEC rows each), the other threads of the block across k, then a shared-memory sum per row and
// column. k contiguous: each warp takes every 8th row of the block (up to 4 at once), its lanes
// stride along k, then a shuffle sum per row and column.
constexpr int kGemvThreads = 256;
constexpr int kGemvWarps = kGemvThreads / 32;
constexpr int kGemvRowThreads = GEMV / VEC;
constexpr int kGemvKThreads = kGemvThreads / kGemvRowThreads;
// Sums per thread grow with GCOLS: fewer rows at once and a shallower unroll past 4 columns keep
// a thread under 128 registers (two blocks per SM, loads of 16 warps in flight).
constexpr int kGemvRowsMost = GCOLS <= 4 ? 4 : 2;
constexpr int kGemvRowsAtOnce =
    GEMV / kGemvWarps < kGemvRowsMost ? GEMV / kGemvWarps : kGemvRowsMost;
constexpr int kGemvKUnroll = GCOLS <= 2 ? 4 : GCOLS == 4 ? 2 : 1;  // rows adjacent: k steps
constexpr int kGemvVecUnroll = GCOLS <= 4 ? 2 : 1;                 // k contiguous: vectors
static_assert(GEMV % (kGemvWarps * VEC) == 0 && GEMV <= kGemvThreads,
              "GEMV rows: a multiple of 8 * VEC, at most 256");
static_assert(GCOLS >= 1 && GCOLS <= 16 && (GCOLS & (GCOLS - 1)) == 0,
              "GCOLS: a power of two, at most 16");

extern "C" __global__ void __launch_bounds__(kGemvThreads, 2)
    KERNEL_NAME(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                float* __restrict__ workspace, int split_mode, int tail_first, int split_count,
                Batch batch, Epilogue epi) {
  wait_for_previous_grid();
  // This block's product of the batch (grid row z), as in the tile kernel.
  if constexpr (BATCHED) {
    const long long product = blockIdx.z;
    A += product * batch.a;
    B += product * batch.b;
    C += product * batch.c;
    workspace += product * batch.workspace;
    if (EPILOGUE && epi.bias_kind != 0) epi.bias += product * epi.bias_stride;
  }
  // The matrix-vector kernel's last block always sums, and it has no tiles to split.
  (void)split_mode;
  (void)tail_first;
  (void)split_count;
  const bool column = N <= GCOLS;  // n <= GCOLS (also when m is too); else m <= GCOLS
  const int rows = column ? M : N;
  const int cols = column ? N : M;
  const float* __restrict__ mat = column ? A : B;
  const long long ld = column ? lda : ldb;
  const bool rows_adjacent = column ? TRANS_A == 0 : TRANS_B == 1;
  // X(k, c) = x[k * incx + c * ldx], Y(r, c) = C[r * incy + c * ldy].
  const float* __restrict__ x = column ? B : A;
  const long long incx = column ? (TRANS_B ? ldb : 1) : (TRANS_A ? 1 : lda);
  const long long ldx = column ? (TRANS_B ? 1 : ldb) : (TRANS_A ? lda : 1);
  const long long incy = column ? 1 : ldc;
  const long long ldy = column ? ldc : 1;
  // The step from X's column c to the next: none past the product's last column.
  auto x_step = [&](int c) { return c + 1 < cols ? ldx : 0; };
  // VEC-wide loads where the operand allows them, checked here: the problem's alignment class
  // counts C too, which this kernel writes one float at a time (an odd ldc, as a vocabulary's
  // logits have, must not narrow the reads of the weights). Elsewhere one float at a time.
  const bool mat_vectors =
      VEC == 1 || (reinterpret_cast<unsigned long long>(mat) % (4 * VEC) == 0 && ld % VEC == 0);
  const bool x_vectors = VEC == 1 || (reinterpret_cast<unsigned long long>(x) % (4 * VEC) == 0 &&
                                      (cols == 1 || ldx % VEC == 0));

  const int tid = threadIdx.x;
  const int r0 = blockIdx.x * GEMV;
  // Splits take whole multiples of 32 elements of k, so vector loads along k stay aligned.
  const int splits = gridDim.y;
  const int chunk = ((K + splits - 1) / splits + 31) / 32 * 32;
  const int k_begin = min(K, (int)blockIdx.y * chunk);
  // In 64 bits: the last split's chunk, rounded up to 32, may end past 2^31 - 1.
  const int k_end = (int)min((long long)K, (long long)k_begin + chunk);

  __shared__ float sums[GCOLS * GEMV];  // this block's sums over its split of k: [column][row]
  if (rows_adjacent) {
    __shared__ float partial[kGemvThreads * VEC];  // one column's (k thread, row) sums
    const int tx = tid % kGemvRowThreads, ty = tid / kGemvRowThreads;
    const int r = r0 + tx * VEC;
    float acc[GCOLS][VEC];
#pragma unroll
    for (int c = 0; c < GCOLS; ++c) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[c][e] = 0.0f;
    }
    if (mat_vectors && r + VEC <= rows) {
#pragma unroll kGemvKUnroll
      for (int k = k_begin + ty; k < k_end; k += kGemvKThreads) {
        const Vec<VEC> v = *reinterpret_cast<const Vec<VEC>*>(mat + r + k * ld);
        const float* __restrict__ xk = x + k * incx;
#pragma unroll
        for (int c = 0; c < GCOLS; xk += x_step(c), ++c) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[c][e] = fmaf(v.v[e], *xk, acc[c][e]);
        }
      }
    } else if (r < rows) {
#pragma unroll kGemvKUnroll
      for (int k = k_begin + ty; k < k_end; k += kGemvKThreads) {
        const float* __restrict__ xk = x + k * incx;
#pragma unroll
        for (int c = 0; c < GCOLS; xk += x_step(c), ++c) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            if (r + e < rows) acc[c][e] = fmaf(mat[r + e + k * ld], *xk, acc[c][e]);
          }
        }
      }
    }
#pragma unroll
    for (int c = 0; c < GCOLS; ++c) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) partial[ty * GEMV + tx * VEC + e] = acc[c][e];
      __syncthreads();
      if (tid < GEMV) {
        float sum = 0.0f;
        for (int t = 0; t < kGemvKThreads; ++t) sum += partial[t * GEMV + tid];  // fixed order
        sums[c * GEMV + tid] = sum;
      }
      __syncthreads();
    }
  } else {
    // kGemvRowsAtOnce rows per pass of a warp: independent loads in flight, each X vector loaded
    // once for all of them.
    const int lane = tid % 32, warp = tid / 32;
    for (int i0 = warp; i0 < GEMV; i0 += kGemvWarps * kGemvRowsAtOnce) {
      const float* __restrict__ row[kGemvRowsAtOnce];
      float sum[kGemvRowsAtOnce][GCOLS];
#pragma unroll
      for (int j = 0; j < kGemvRowsAtOnce; ++j) {
        const int r = r0 + i0 + j * kGemvWarps;
        row[j] = mat + (r < rows ? r : 0) * ld;  // rows past the end re-read row 0, unused
#pragma unroll
        for (int c = 0; c < GCOLS; ++c) sum[j][c] = 0.0f;
      }
      int k = k_begin + lane * VEC;
#pragma unroll kGemvVecUnroll
      for (; mat_vectors && k + VEC <= k_end; k += 32 * VEC) {
        Vec<VEC> v[kGemvRowsAtOnce];
#pragma unroll
        for (int j = 0; j < kGemvRowsAtOnce; ++j) {
          v[j] = *reinterpret_cast<const Vec<VEC>*>(row[j] + k);
        }
#pragma unroll
        for (int c = 0; c < GCOLS; ++c) {
          // (Offsets per column here, not a walked pointer: 128 -> 208 registers at GCOLS = 16.)
          const float* __restrict__ xc = x + (c < cols ? c : cols - 1) * ldx;
          Vec<VEC> xv;
          if (incx == 1 && x_vectors) {
            xv = *reinterpret_cast<const Vec<VEC>*>(xc + k);
          } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) xv.v[e] = xc[(k + e) * incx];
          }
#pragma unroll
          for (int j = 0; j < kGemvRowsAtOnce; ++j) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) sum[j][c] = fmaf(v[j].v[e], xv.v[e], sum[j][c]);
          }
        }
      }
      // One float at a time: this lane's part of a last, partial vector, or all of its part
      // where Mat allows no vector loads.
      for (; k < k_end; k += 32 * VEC) {
        for (int e = 0; e < VEC && k + e < k_end; ++e) {
          const float* __restrict__ xe = x + (k + e) * incx;
#pragma unroll
          for (int c = 0; c < GCOLS; xe += x_step(c), ++c) {
#pragma unroll
            for (int j = 0; j < kGemvRowsAtOnce; ++j) {
              sum[j][c] = fmaf(row[j][k + e], *xe, sum[j][c]);
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kGemvRowsAtOnce; ++j) {
#pragma unroll
        for (int c = 0; c < GCOLS; ++c) {
#pragma unroll
          for (int o = 16; o > 0; o /= 2) sum[j][c] += __shfl_xor_sync(0xffffffffu, sum[j][c], o);
          if (lane == 0) sums[c * GEMV + i0 + j * kGemvWarps] = sum[j][c];
        }
      }
    }
    __syncthreads();
  }

  // Each thread then owns the (column, row) pairs i = tid, tid + 256, ... of the block.
  constexpr int kOutputs = GCOLS * GEMV;
  if (splits > 1) {
    // Partials per split and column, then one int ticket per row block (layout in gemm_op.cpp).
    const long long padded_rows = (long long)gridDim.x * GEMV;
    int* tickets = reinterpret_cast<int*>(workspace + (long long)splits * GCOLS * padded_rows);
    for (int i = tid; i < kOutputs; i += kGemvThreads) {
      const int c = i / GEMV, rr = i % GEMV;
      __stcg(workspace + ((long long)blockIdx.y * GCOLS + c) * padded_rows + r0 + rr, sums[i]);
    }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (tid == 0) {
      last = atomicAdd(tickets + blockIdx.x, 1) == splits - 1;
      if (last) tickets[blockIdx.x] = 0;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int i = tid; i < kOutputs; i += kGemvThreads) {
      const int c = i / GEMV, rr = i % GEMV;
      float sum = 0.0f;
      for (int s = 0; s < splits; ++s) {
        sum += __ldcg(workspace + ((long long)s * GCOLS + c) * padded_rows + r0 + rr);
      }
      sums[i] = sum;  // read back below by this thread only
    }
  }
  for (int i = tid; i < kOutputs; i += kGemvThreads) {
    const int c = i / GEMV, rr = i % GEMV;
    if (c < cols && r0 + rr < rows) {
      float* y = C + (r0 + rr) * incy + c * ldy;
      // beta == 0 never reads y (NaNs there must not leak). Y's row r0 + rr is C's row where
      // Y = C, its column where Y = C^T.
      float out = beta != 0.0f ? fmaf(beta, *y, alpha * sums[i]) : alpha * sums[i];
      if (finishes(epi)) out = finish_outlined(out, epi, column ? r0 + rr : c, column ? c : r0 + rr);
      *y = out;
    }
  }
}
