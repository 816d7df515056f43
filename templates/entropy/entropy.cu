// Local entropy, column-major: out(i, j) = H of the values in the (2R+1) x (2R+1) window centred
// on (i, j), clipped at the borders, natural log: H = log n - S / n with S = sum_v c_v log c_v over
// the window's n elements and the counts c_v of each level v. S is kept as a sum of increments:
// adding an element of level v to a window holding c of them adds f(c) = (c+1) log(c+1) - c log c,
// removing one subtracts f(c - 1); so a count update and one table read keep S current.
//
// A warp covers 32 consecutive rows i (contiguous in memory: every load and store coalesces); a
// thread computes OPT consecutive columns j of its row. Each thread keeps its own counts in shared
// memory, laid out [word of levels][thread] so a warp's 32 accesses hit 32 different banks whatever
// levels they count.
//
// Tuning parameters (every one given as -D, no defaults):
//   BX     threads along the rows (a multiple of 32)
//   BY     threads along the columns; a block covers BX rows x BY * OPT columns
//   OPT    outputs (columns) per thread
//   LOG    where f and log n come from: 0 computed in registers (fast log, no table),
//          1 a table in shared memory, 2 in constant memory (the kernel parameter bank),
//          3 in global memory (read through L1)
//   CNT    counter width in bits: 8, 16 or 32 (more bits, fewer counters per word)
//   ACC    accumulation: 0 float table and sums, 1 double table and sums, 2 float table with double
//          sums, 3 fixed point (integer table of f * 2^FIXED_BITS, integer sums: exact and
//          independent of the order of updates, so sliding never drifts)
//   STAGE  input staging: 0 direct loads (L1 serves the window's reuse), 1 a shared tile with halo
//          holding the block's inputs as bytes, 2 registers: a ring of the window's columns kept
//          between the column's addition and its removal (needs SLIDE = 1)
//   SLIDE  0: each output counts its whole window; 1: the window slides along j, removing one column
//          and adding one per output
// Problem values (-D as well): RADIUS (0..7), LEVELS (2..256), INPUT_U8 (0: FP32 holding integers,
// 1: uint8), FIXED_BITS (the fixed-point scale; set by the host so the largest S fits 31 bits).
// KERNEL_NAME is given by the generator. The kernel computes the output columns [j_begin, j_end)
// of a rows x cols matrix (windows clipped at the matrix's borders) from a buffer holding input
// columns from in_col0 on (the caller's band of columns with its halo) into one holding output
// columns from out_col0 on: what lets a host pipeline or another GPU work on a band. Inputs are validated before the kernel runs (companion
// kernel entropy_validate): every value is an integer in [0, LEVELS).

#define WIN (2 * RADIUS + 1)
#define NMAX (WIN * WIN)
#define NT (BX * BY)
#define PER_WORD (32 / CNT)
#define WORDS ((LEVELS + PER_WORD - 1) / PER_WORD)

#if CNT == 8
typedef unsigned char Count;
#elif CNT == 16
typedef unsigned short Count;
#else
typedef unsigned int Count;
#endif

#if ACC == 0
typedef float Entry;
typedef float Sum;
#elif ACC == 1
typedef double Entry;
typedef double Sum;
#elif ACC == 2
typedef float Entry;
typedef double Sum;
#else
typedef int Entry;
typedef int Sum;
#endif

#if INPUT_U8
typedef unsigned char Input;
#else
typedef float Input;
#endif

// f(c) for c in 0..NMAX-1 and log n for n in 0..NMAX, computed by the host in double and rounded
// to Entry (fixed point: f(c) = round(F(c+1) 2^k) - round(F(c) 2^k), F(c) = c log c, so any
// sequence of updates sums to exactly sum_v round(F(c_v) 2^k)). Passed by value: it lives in the
// kernel parameter bank, i.e. constant memory.
struct Tables {
  Entry f[NMAX];
  float log_n[NMAX + 1];
};

#if LOG == 1
#define TABLE_F(c) s_f[c]
#elif LOG == 2
#define TABLE_F(c) tables.f[c]
#elif LOG == 3
#define TABLE_F(c) __ldg(&global_f[c])
#endif

// An input value as a level index. FP32 holds integers in [0, 256): adding 2^23 puts the integer in
// the low mantissa bits, exactly, without a conversion instruction.
__device__ __forceinline__ int level_of(Input x) {
#if INPUT_U8
  return x;
#else
  return __float_as_int(x + 8388608.0f) - 0x4B000000;
#endif
}

__device__ __forceinline__ Entry f_of(int c) {
#if ACC == 3
  const float scale = (float)(1 << FIXED_BITS);
  const float c0 = (float)c, c1 = (float)(c + 1);
  return __float2int_rn(c1 * __logf(c1) * scale) - (c == 0 ? 0 : __float2int_rn(c0 * __logf(c0) * scale));
#else
  const float c0 = (float)c, c1 = (float)(c + 1);
  return (Entry)(c1 * __logf(c1) - (c == 0 ? 0.0f : c0 * __logf(c0)));
#endif
}

extern "C" __global__ void entropy_validate(long long rows, long long cols, const Input* in,
                                           long long ld, unsigned long long* first_bad) {
  const long long n = rows * cols;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long i = e % rows, j = e / rows;
    const Input x = in[i + j * ld];
#if INPUT_U8
    const bool ok = x < LEVELS;
#else
    const bool ok = x >= 0.0f && x < (float)LEVELS && x == truncf(x);
#endif
    if (!ok) atomicMin(first_bad, (unsigned long long)e);
  }
}

// Copies the f table into global memory (LOG = 3 reads it from there).
extern "C" __global__ void entropy_fill_table(const Tables tables, Entry* global_f) {
  for (int c = threadIdx.x; c < NMAX; c += blockDim.x) global_f[c] = tables.f[c];
}

extern "C" __global__ void __launch_bounds__(NT)
    KERNEL_NAME(long long rows, long long cols, const Input* __restrict__ in, long long ld_in,
                long long in_col0, float* __restrict__ out, long long ld_out, long long out_col0,
                long long j_begin, long long j_end, long long blocks_i,
                const Entry* __restrict__ global_f, const Tables tables) {
  __shared__ unsigned int s_counts[WORDS * NT];
#if LOG == 1
  __shared__ Entry s_f[NMAX];
  for (int c = threadIdx.x + threadIdx.y * BX; c < NMAX; c += NT) s_f[c] = tables.f[c];
#endif
#if STAGE == 1
  constexpr int kTileRows = BX + 2 * RADIUS, kTileCols = BY * OPT + 2 * RADIUS;
  __shared__ unsigned char s_tile[kTileRows * kTileCols];
#endif
  const int t = threadIdx.x + threadIdx.y * BX;
  const long long bi = blockIdx.x % blocks_i, bj = blockIdx.x / blocks_i;
  const long long i0 = bi * BX, j0 = j_begin + bj * (BY * OPT);
  const long long i = i0 + threadIdx.x;
  const long long jstart = j0 + (long long)threadIdx.y * OPT;

#if STAGE == 1
  for (int e = t; e < kTileRows * kTileCols; e += NT) {
    const int r = e % kTileRows, c = e / kTileRows;
    const long long gi = i0 - RADIUS + r, gj = j0 - RADIUS + c;
    // Only columns the caller's buffer holds: [j_begin - R, j_end + R) within the matrix.
    const bool held = gi >= 0 && gi < rows && gj >= 0 && gj < cols && gj >= j_begin - RADIUS &&
                      gj < j_end + RADIUS;
    s_tile[e] = held ? level_of(in[gi + (gj - in_col0) * ld_in]) : 0;
  }
#endif
#if LOG == 1 || STAGE == 1
  __syncthreads();
#endif
  if (i >= rows || jstart >= j_end) return;

  Count* counts = reinterpret_cast<Count*>(s_counts) + t * PER_WORD;
#define COUNT(v) counts[((v) / PER_WORD) * NT * PER_WORD + ((v) % PER_WORD)]

  // Level at row i + d, column j (d in -R..R, j any column the thread touches).
#if STAGE == 1
#define LEVEL(d, j) ((int)s_tile[(threadIdx.x + RADIUS + (d)) + ((j) - (j0 - RADIUS)) * kTileRows])
#else
#define LEVEL(d, j) level_of(in[(i + (d)) + ((j) - in_col0) * ld_in])
#endif

  // Rows of the window (the same for every output of this thread).
  const int d_lo = i - RADIUS < 0 ? (int)-i : -RADIUS;
  const int d_hi = i + RADIUS >= rows ? (int)(rows - 1 - i) : RADIUS;
  const int n_rows = d_hi - d_lo + 1;
  const bool rows_full = n_rows == WIN;
  const long long jend = jstart + OPT < j_end ? jstart + OPT : j_end;
  const bool cols_full =
      jstart - RADIUS >= 0 && jstart + OPT - 1 + RADIUS < cols && jstart + OPT <= j_end;

  Sum s = 0;
#define ADD(v)                   \
  {                              \
    const int lv_ = (v);         \
    const int c_ = COUNT(lv_);   \
    COUNT(lv_) = (Count)(c_ + 1); \
    s += TABLE_F_OR_COMPUTE(c_); \
  }
#define REMOVE(v)                \
  {                              \
    const int lv_ = (v);         \
    const int c_ = COUNT(lv_) - 1; \
    COUNT(lv_) = (Count)c_;      \
    s -= TABLE_F_OR_COMPUTE(c_); \
  }
#if LOG == 0
#define TABLE_F_OR_COMPUTE(c) f_of(c)
#else
#define TABLE_F_OR_COMPUTE(c) TABLE_F(c)
#endif

  auto output = [&](long long j, int n) {
    const float log_n = LOG == 0 ? __logf((float)n) : tables.log_n[n];
#if ACC == 3
    const float mean = (float)s * (1.0f / (float)(1 << FIXED_BITS)) / (float)n;
    out[i + (j - out_col0) * ld_out] = log_n - mean;
#else
    out[i + (j - out_col0) * ld_out] = (float)((Sum)log_n - s / (Sum)n);
#endif
  };
  auto clear = [&] {
#pragma unroll
    for (int w = 0; w < WORDS; ++w) s_counts[w * NT + t] = 0u;
    s = 0;
  };

#if SLIDE == 0
  // Every output counts its whole (clipped) window.
  for (long long j = jstart; j < jend; ++j) {
    clear();
    const long long c_lo = j - RADIUS < 0 ? 0 : j - RADIUS;
    const long long c_hi = j + RADIUS >= cols ? cols - 1 : j + RADIUS;
    if (rows_full && c_hi - c_lo == 2 * RADIUS) {
#pragma unroll
      for (int dc = -RADIUS; dc <= RADIUS; ++dc) {
#pragma unroll
        for (int d = -RADIUS; d <= RADIUS; ++d) ADD(LEVEL(d, j + dc));
      }
    } else {
      for (long long c = c_lo; c <= c_hi; ++c) {
        for (int d = d_lo; d <= d_hi; ++d) ADD(LEVEL(d, c));
      }
    }
    output(j, n_rows * (int)(c_hi - c_lo + 1));
  }
#else
  clear();
  if (rows_full && cols_full) {
    // Interior: every window whole, no checks. Column q of the ring is column jstart - R + q.
#if STAGE == 2
    int ring[WIN][WIN];
#pragma unroll
    for (int q = 0; q < 2 * RADIUS; ++q) {
#pragma unroll
      for (int d = 0; d < WIN; ++d) {
        ring[q][d] = LEVEL(d - RADIUS, jstart - RADIUS + q);
        ADD(ring[q][d]);
      }
    }
#pragma unroll
    for (int k = 0; k < OPT; ++k) {
      const long long j = jstart + k;
      // Column j - R - 1 leaves the slot that column j + R takes (both are k + 2R mod WIN).
      const int q = (k + 2 * RADIUS) % WIN;
#pragma unroll
      for (int d = 0; d < WIN; ++d) {
        if (k > 0) REMOVE(ring[q][d]);
        ring[q][d] = LEVEL(d - RADIUS, j + RADIUS);
        ADD(ring[q][d]);
      }
      output(j, NMAX);
    }
#else
#pragma unroll
    for (int q = -RADIUS; q < RADIUS; ++q) {
#pragma unroll
      for (int d = -RADIUS; d <= RADIUS; ++d) ADD(LEVEL(d, jstart + q));
    }
#pragma unroll 4
    for (int k = 0; k < OPT; ++k) {
      const long long j = jstart + k;
      // Remove before adding: counts never exceed the window, nor f's table its NMAX entries.
      if (k > 0) {
#pragma unroll
        for (int d = -RADIUS; d <= RADIUS; ++d) REMOVE(LEVEL(d, j - RADIUS - 1));
      }
#pragma unroll
      for (int d = -RADIUS; d <= RADIUS; ++d) ADD(LEVEL(d, j + RADIUS));
      output(j, NMAX);
    }
#endif
  } else {
    // Borders: columns outside the matrix are never added, rows outside never read.
    for (long long c = jstart - RADIUS; c < jstart + RADIUS; ++c) {
      if (c < 0 || c >= cols) continue;
      for (int d = d_lo; d <= d_hi; ++d) ADD(LEVEL(d, c));
    }
    for (long long j = jstart; j < jend; ++j) {
      if (j > jstart && j - RADIUS - 1 >= 0) {
        for (int d = d_lo; d <= d_hi; ++d) REMOVE(LEVEL(d, j - RADIUS - 1));
      }
      if (j + RADIUS < cols) {
        for (int d = d_lo; d <= d_hi; ++d) ADD(LEVEL(d, j + RADIUS));
      }
      const long long c_lo = j - RADIUS < 0 ? 0 : j - RADIUS;
      const long long c_hi = j + RADIUS >= cols ? cols - 1 : j + RADIUS;
      output(j, n_rows * (int)(c_hi - c_lo + 1));
    }
  }
#endif
}
