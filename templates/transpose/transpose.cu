// Out-of-place FP32 transpose, column-major: B (cols x rows) = A^T for A (rows x cols), i.e.
// B[j + i * ldb] = A[i + j * lda]. A block moves one TILE x TILE tile through shared memory:
// reads run down A's columns (i contiguous), writes down B's columns (j contiguous), so both
// sides are coalesced; the tile is read back across its rows, which PAD floats of padding per row
// spread over the shared-memory banks (the classic +1 column).
//
// Parameters (every one given as -D, no defaults):
//   TILE   tile edge (16, 32, 64)
//   RPT    tile columns (rows of B) each thread moves per pass: the block is TILE/VEC x TILE/RPT
//   VEC    floats per global load and store (1, 2, 4); needs the operands aligned to VEC floats
//   PAD    floats of padding per shared row (0, 1, 2, 4): the tile is read across its rows,
//          and TILE + PAD floats per row put successive rows on different banks
//   ORDER  0: tiles in order down A's rows first; 1: across A's columns first; 2: diagonal
//          (a block's tile shifted by its row, spreading concurrent blocks over memory channels)
// KERNEL_NAME is given by the generator.

constexpr int kThreadsX = TILE / VEC;
constexpr int kThreadsY = TILE / RPT;
static_assert(TILE % VEC == 0 && TILE % RPT == 0, "VEC and RPT divide TILE");

template <int N>
struct alignas(4 * N) Vec {
  float v[N];
};

extern "C" __global__ void __launch_bounds__(kThreadsX * kThreadsY)
    KERNEL_NAME(long long rows, long long cols, const float* __restrict__ A, long long lda,
                float* __restrict__ B, long long ldb, long long tiles_r, long long tiles_c) {
  __shared__ float tile[TILE][TILE + PAD];  // [j - j0][i - i0]

  // Which tile: a 1-D grid of tiles_r * tiles_c blocks (no 65535 limit on either side).
  const long long t = blockIdx.x;
  long long tr, tc;
  if (ORDER == 0) {
    tr = t % tiles_r;
    tc = t / tiles_r;
  } else if (ORDER == 1) {
    tc = t % tiles_c;
    tr = t / tiles_c;
  } else {
    tc = t % tiles_c;
    tr = t / tiles_c;
    tc = (tc + tr) % tiles_c;
  }
  const long long i0 = tr * TILE, j0 = tc * TILE;
  const bool full = i0 + TILE <= rows && j0 + TILE <= cols;
  const int tx = threadIdx.x, ty = threadIdx.y;

  // Read A: thread (tx, ty) reads VEC rows i0 + tx*VEC.. of columns j0 + ty, + kThreadsY, ...
  if (full) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const int jj = ty + r * kThreadsY;
      const Vec<VEC> v =
          *reinterpret_cast<const Vec<VEC>*>(A + (i0 + tx * VEC) + (j0 + jj) * lda);
#pragma unroll
      for (int e = 0; e < VEC; ++e) tile[jj][tx * VEC + e] = v.v[e];
    }
  } else {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const int jj = ty + r * kThreadsY;
      if (j0 + jj < cols) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const long long i = i0 + tx * VEC + e;
          if (i < rows) tile[jj][tx * VEC + e] = A[i + (j0 + jj) * lda];
        }
      }
    }
  }
  __syncthreads();

  // Write B: thread (tx, ty) writes VEC rows j0 + tx*VEC.. of B's columns i0 + ty, + kThreadsY..
  if (full) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const int ii = ty + r * kThreadsY;
      Vec<VEC> v;
#pragma unroll
      for (int e = 0; e < VEC; ++e) v.v[e] = tile[tx * VEC + e][ii];
      *reinterpret_cast<Vec<VEC>*>(B + (j0 + tx * VEC) + (i0 + ii) * ldb) = v;
    }
  } else {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      const int ii = ty + r * kThreadsY;
      if (i0 + ii < rows) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const long long j = j0 + tx * VEC + e;
          if (j < cols) B[j + (i0 + ii) * ldb] = tile[tx * VEC + e][ii];
        }
      }
    }
  }
}
