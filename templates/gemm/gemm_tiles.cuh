// Shared by every tile family: the block's thread layout and its checks, operand indexing, vector
// loads, cp.async and the loaders that stage k slices of A and B in shared memory.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

constexpr int kWarpsM = BM / WM;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;  // the threads that hold C's fragments
// MMA = 3, 4, 5 add a producer warpgroup that fills the shared stages (the others only multiply).
constexpr int kProducerGroups = MMA >= 3 ? 1 : 0;
constexpr int kProducers = 128 * kProducerGroups;
constexpr int kBlockThreads = kThreads + kProducers;
constexpr int kLN = 32 / LM;                // lanes of a warp along n
constexpr int kWMIter = WM / (LM * TM);     // sub-tiles per lane along m
constexpr int kWNIter = WN / (kLN * TN);    // sub-tiles per lane along n
constexpr int kFragM = kWMIter * TM;        // accumulator rows per thread
constexpr int kFragN = kWNIter * TN;        // accumulator columns per thread
constexpr int kStages = PIPE == 0 ? 1 : PIPE == 1 ? 2 : PIPE;
constexpr bool kAsync = PIPE >= 2;
constexpr int kUnroll = UNROLL;  // #pragma unroll takes a constant expression, not a macro
// Steps of k read at once from shared memory: 4 where an operand is stored k-contiguous (its
// fragments then come 128 bits at a time along k), else 1; the slice loop unrolls whole groups.
constexpr int kKGroup = (AKM && BKM) ? 1 : 4;
constexpr int kGroupUnroll = kUnroll / kKGroup > 0 ? kUnroll / kKGroup : 1;
// KSUM = 1: slices of BK per partial chain of KSUM_CHAIN products (gemm_op::kSumChain, 96: within
// the accuracy contract's longest sum, 112, in whole slices of every BK; the adds cost under 1 %).
constexpr int kSlicesPerChain = (KSUM_CHAIN + BK - 1) / BK;

// Shared tiles (floats): A k-major is BK rows of kAStride, A m-major BM rows of it; B alike.
constexpr int kAStride = A_STRIDE;
constexpr int kATileFloats = (AKM ? BK : BM) * kAStride;
constexpr int kBStride = B_STRIDE;
constexpr int kBTileFloats = (BKM ? BK : BN) * kBStride;

// Split-K counts the launch may raise (gemm_op::split_k_count): tensor-core tiles of at most
// 64 x 64 only. On an H100 raised 128 x 128 wgmma tiles ran up to 1.38x slower, and no FFMA tile
// gained; a count known at compile time keeps those kernels' code as it was (a run-time count
// cost an FFMA split-K kernel 1 %). The summing pass (REDUCE = 1) is never raised.
constexpr bool kRaisableSplits = MMA != 0 && BM * BN <= 64 * 64;
// MMA = 1, 2: mma tiles per warp along m and n (1 in FFMA kernels, whose MMA code is never run).
constexpr bool kMma = MMA >= 1;
constexpr int kMmaM = kMma ? WM / 16 : 1;
constexpr int kMmaN = kMma ? WN / 8 : 1;

static_assert(BM % WM == 0 && BN % WN == 0, "warp tile must divide the block tile");
static_assert(32 % LM == 0, "LM must divide the warp");
static_assert(WM % (LM * TM) == 0 && WN % (kLN * TN) == 0, "lane grid must divide the warp tile");
static_assert(kBlockThreads <= 1024, "at most 1024 threads per block");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC is 1, 2 or 4");
static_assert(BM % VEC == 0 && BN % VEC == 0 && BK % VEC == 0, "VEC must divide BM, BN and BK");
static_assert(PAD % 4 == 0, "PAD keeps shared rows 16-byte aligned");
static_assert(BK % UNROLL == 0, "UNROLL must divide BK");
static_assert(PIPE >= 0 && PIPE <= 4, "PIPE is 0 (single stage), 1 (register prefetch) or 2..4");
static_assert(SWZ >= 0, "SWZ is 0 (no grouping) or a group height in block rows");
static_assert(MINB >= 1, "MINB is at least 1");
static_assert(SPLITK >= 1, "SPLITK is at least 1");
static_assert(TAIL == 0 || (TAIL == 1 && SPLITK == 1), "TAIL is 0, or 1 with SPLITK = 1");
static_assert(C_VEC >= 1 && C_VEC <= VEC && VEC % C_VEC == 0, "C_VEC is 1, 2 or 4, at most VEC");
static_assert(TRANS_A == 0 || TRANS_A == 1, "TRANS_A is 0 or 1");
static_assert(TRANS_B == 0 || TRANS_B == 1, "TRANS_B is 0 or 1");
static_assert(A_STRIDE >= (AKM ? BM : BK) && A_STRIDE % 4 == 0, "A_STRIDE: whole, aligned rows");
static_assert(B_STRIDE >= (BKM ? BN : BK) && B_STRIDE % 4 == 0, "B_STRIDE: whole, aligned rows");
static_assert(MMA >= 0 && MMA <= 5,
              "MMA is 0 (FFMA), 1 (FP64 tensor cores), 2 (split TF32), 3 or 4 (split TF32 on wgmma), "
              "5 (plain TF32 on wgmma)");
static_assert(CSTAGE == 0 || CSTAGE == 1, "CSTAGE is 0 (C from the fragments) or 1 (via shared)");
static_assert(KSUM == 0 || (KSUM == 1 && MMA != 1) || (KSUM == 2 && MMA >= 4),
              "KSUM is 0, or 1 where sums are float, or 2 in the TMA-fed wgmma kernels");
static_assert(CSTAGE == 0 || (C_STRIDE >= BM && C_STRIDE % 4 == 0),
              "C_STRIDE: whole, aligned columns of the staged C tile");
static_assert(!kMma || (BK % 8 == 0 && WM % 16 == 0 && WN % 8 == 0),
              "MMA = 1 steps k by 8 and tiles warps by 16 x 8");
// The mma's fragment layout, in the FFMA kernel's terms: lane (g, t) = (lane / 4, lane % 4) holds
// rows 2g, 2g + 1 and columns 2t, 2t + 1 of each 16 x 8 tile, i.e. TM = TN = 2 on an 8 x 4 grid.
static_assert(!kMma || (TM == 2 && TN == 2 && LM == 8), "MMA = 1 fixes TM = TN = 2, LM = 8");
#if MMA == 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "gemm.cu: MMA = 1 uses mma.sync m16n8k8 in FP64, which needs sm_90 or later"
#endif
#if MMA == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "gemm.cu: MMA = 2 uses mma.sync m16n8k8 in TF32, which needs sm_80 or later"
#endif
#if PIPE >= 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "gemm.cu: PIPE >= 2 uses cp.async, which needs sm_80 or later"
#endif

// Shared index of op(A)(m, k) and op(B)(k, n) within one stage.
__device__ __forceinline__ int a_index(int k, int m) {
  return AKM ? k * kAStride + m : m * kAStride + k;
}
__device__ __forceinline__ int b_index(int k, int n) {
  return BKM ? k * kBStride + n : n * kBStride + k;
}

// N floats moved as one 4*N-byte access (LDG.64/128, STG.64/128) where the address is aligned.
template <int N>
struct alignas(4 * N) Vec {
  float v[N];
};

// Asynchronous global -> shared copy of BYTES (4, 8 or 16) of which the first src_bytes are read
// and the rest zero-filled (cp.async "zfill"); 16-byte copies bypass L1.
template <int BYTES>
__device__ __forceinline__ void cp_async(float* dst, const float* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src),
                 "n"(BYTES), "r"(src_bytes));
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// One operand's (BM or BN) x BK slice, as stored in global memory: CLEN elements along the
// contiguous dimension, SLEN along the strided one. Each thread moves kLoads vectors of VEC floats.
// CONTIG: the contiguous global dimension is also contiguous in shared memory (no transpose).
template <int CLEN, int SLEN, bool CONTIG>
struct TileLoader {
  static constexpr int kVecPerLine = CLEN / VEC;
  static constexpr int kVectors = kVecPerLine * SLEN;
  static constexpr int kLoads = (kVectors + kThreads - 1) / kThreads;
  // Staging registers exist only for the register paths (PIPE 0 and 1).
  float reg[kAsync ? 1 : kLoads][VEC];

  __device__ __forceinline__ static bool exists(int v) {
    return kVectors % kThreads == 0 || v < kVectors;
  }

  // base: the tile's first element; c_left / s_left: valid elements from there on.
  __device__ __forceinline__ void load(const float* __restrict__ base, long long ld, int c_left,
                                       int s_left, int tid) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int v = tid + l * kThreads;
      const int c = (v % kVecPerLine) * VEC;
      const int s = v / kVecPerLine;
      const float* p = base + s * ld + c;
      if (exists(v) && s < s_left && c + VEC <= c_left) {
        const Vec<VEC> x = *reinterpret_cast<const Vec<VEC>*>(p);
#pragma unroll
        for (int e = 0; e < VEC; ++e) reg[l][e] = x.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool in = exists(v) && s < s_left && c + e < c_left;
          reg[l][e] = in ? p[e] : 0.0f;  // zeros past the edge add nothing to the dot products
        }
      }
    }
  }

  // Writes the registers to shared memory; index(c, s) gives the shared offset of element (c, s).
  template <typename Index>
  __device__ __forceinline__ void store(float* __restrict__ smem, int tid, Index index) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int v = tid + l * kThreads;
      if (!exists(v)) continue;
      const int c = (v % kVecPerLine) * VEC;
      const int s = v / kVecPerLine;
#pragma unroll
      for (int e = 0; e < VEC; ++e) smem[index(c + e, s)] = reg[l][e];
    }
  }

  // Global -> shared without registers: one VEC-wide copy per vector where shared memory keeps
  // the global order, else one 4-byte copy per element (the transpose happens in the scatter).
  // Elements past the edge are zero-filled by the copy itself.
  template <typename Index>
  __device__ __forceinline__ void copy_async(float* __restrict__ smem,
                                             const float* __restrict__ base, long long ld,
                                             int c_left, int s_left, int tid, Index index) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int v = tid + l * kThreads;
      if (!exists(v)) continue;
      const int c = (v % kVecPerLine) * VEC;
      const int s = v / kVecPerLine;
      const bool row_in = s < s_left;
      // Rows past the edge copy nothing from a valid address (the tile's first element).
      const float* p = row_in ? base + s * ld + c : base;
      if constexpr (CONTIG) {
        const int valid = row_in ? min(max(c_left - c, 0), VEC) : 0;
        cp_async<4 * VEC>(smem + index(c, s), p, 4 * valid);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool in = row_in && c + e < c_left;
          cp_async<4>(smem + index(c + e, s), in ? p + e : base, in ? 4 : 0);
        }
      }
    }
  }
};

// A slice: TRANS_A = 0 stores A as (m, k) with m contiguous; TRANS_A = 1 as (k, m), k contiguous.
using ALoader = TileLoader<TRANS_A ? BK : BM, TRANS_A ? BM : BK, (TRANS_A == 0) == (AKM == 1)>;
// B slice: TRANS_B = 0 stores B as (k, n) with k contiguous; TRANS_B = 1 as (n, k), n contiguous.
using BLoader = TileLoader<TRANS_B ? BN : BK, TRANS_B ? BK : BN, (TRANS_B == 1) == (BKM == 1)>;

struct AIndex {
  __device__ __forceinline__ int operator()(int c, int s) const {
    return TRANS_A ? a_index(c, s) : a_index(s, c);
  }
};
struct BIndex {
  __device__ __forceinline__ int operator()(int c, int s) const {
    return TRANS_B ? b_index(s, c) : b_index(c, s);
  }
};

// Reads N consecutive floats of a fragment from shared memory, 16 or 8 bytes at a time where N
// allows (the callers' offsets are aligned to that).
template <int N>
__device__ __forceinline__ void read_shared(float* dst, const float* src) {
  constexpr int kWidth = N % 4 == 0 ? 4 : N % 2 == 0 ? 2 : 1;
#pragma unroll
  for (int i = 0; i < N; i += kWidth) {
    const Vec<kWidth> x = *reinterpret_cast<const Vec<kWidth>*>(src + i);
#pragma unroll
    for (int e = 0; e < kWidth; ++e) dst[i + e] = x.v[e];
  }
}

// A launch's products (tuned_gemm_strided_batched): grid row z computes product z, whose A, B, C
// (and split-K workspace) lie a stride of floats after product z - 1's; 0 shares one operand
// (broadcast). gemm_launch.cpp's BatchArgs: keep them equal.
struct Batch {
  long long a, b, c, workspace;
};

// What a block works on, as the families' main loops read it: its threads' places, its tile and
// its share of k (whole BK slices), A and B at the tile's first slice, and its product of a batch.
struct TileWork {
  float* smem;  // the dynamic shared memory
  int tid, lane, warp, warp_m0, warp_n0, lane_m, lane_n;
  int m0, n0, m_left, n_left;  // the tile's origin in C, and C's extent from there
  int k_begin, k_end, slices;
  const float* a_tile;
  const float* b_tile;
  long long a_step, b_step;  // from one slice to the next
  int lda, ldb;
  long long product;  // grid row z
  Batch batch;
};
