// SGEMM template: C = alpha * op(A) * op(B) + beta * C, FP32, column-major (cuBLAS conventions).
// Every parameter arrives as an NVRTC -D option; there are no defaults, so a misspelled or missing
// parameter fails to compile instead of silently falling back.
//
// Structure (the classic ladder, each rung a point of this space):
//   block tile BM x BN, stepping through k in slices of BK staged in shared memory;
//   the block's warps each own a WM x WN warp tile; a warp's lanes form an LM x (32/LM) grid and
//   each lane computes WMITER x WNITER sub-tiles of TM x TN, strided so the warp's shared-memory
//   reads stay compact (WMITER = WNITER = 1 is the plain 2D register tile);
//   global loads are VEC floats wide; shared rows are padded by PAD floats; A is stored k-major
//   (AKM = 1, m contiguous) or m-major (AKM = 0, k contiguous) in shared memory, B k-major
//   (BKM = 1, n contiguous) or n-major (BKM = 0); fragments are read 128 bits at a time: along m
//   or n where k-major, along k (four steps at once) where not;
//   the k slice is unrolled UNROLL times;
//   PIPE says how global memory reaches shared memory: 0 load, store, compute, one stage;
//   1 two stages, the next slice prefetched into registers during this slice's math;
//   2..4 that many stages filled by cp.async (sm_80+), no staging registers at all;
//   SWZ groups SWZ block rows (m) together in launch order so concurrent blocks share operand
//   panels in L2 (0: plain column-by-column order);
//   MINB is __launch_bounds__'s minimum of resident blocks per SM (caps registers per thread);
//   PRETB = 1 (B given k-contiguous, i.e. not transposed) first has the transpose op copy B
//   transposed into the workspace, and the main kernel (compiled with TRANS_B = 1) reads that:
//   cheap next to the product when m is large, and B's slices then need no transpose on the way
//   to shared memory;
//   SPLITK > 1 splits k among that many blocks per tile, or more (split_count: the launch raises
//   it, up to 2 SPLITK - 1, where few tiles leave a wave short; tensor-core tiles of at most
//   64 x 64 summed by their last block, kRaisableSplits): each writes its partial tile to a
//   workspace, and the partials are summed in split order, so results are deterministic and no
//   float atomics are involved. Who sums is the launch's choice (split_mode, from the host-side
//   parameter REDUCE): the last block of a tile to finish (an integer ticket), or a second launch
//   of this kernel spread over many blocks per tile (one fragment element of every thread each);
//   both add the same numbers in the same order, so they give the same bits.
//   TAIL = 1 (with SPLITK = 1) splits the tiles of a partial last wave along k: blocks from
//   tail_first on each take 1/split_count of one tail tile's k range (the host sizes both from
//   the SMs and the kernel's occupancy), summed like split-K partials, so a wave that would run
//   mostly empty runs full and short (a data-parallel + split hybrid in the spirit of stream-K).
//   Compiled in only where asked for: the summing code costs registers (221 -> 255 on the large
//   NN tile) even where no tail is split.
//   MMA = 1 computes the products on the FP64 tensor cores instead of FFMA: each warp's WM x WN
//   tile is (WM / 16) x (WN / 8) tiles of mma.sync m16n8k8 in double, its fragments converted
//   from the float slices in shared memory. A product of two floats is exact in double and the
//   sums run in double, so the result (rounded to float once, at the end) is closer to the exact
//   product than any FFMA order; on an H100 the FP64 tensor cores match FFMA's peak and issue
//   one instruction per 1024 multiply-adds instead of 32, which frees the issue slots and
//   registers FFMA kernels stall on (sm_90+; TM, TN, LM, UNROLL and PAD are fixed placeholders
//   then, and the lanes follow the mma's fragment layout).
//   MMA = 2 computes them on the TF32 tensor cores, FP32-accurate: each operand element x is
//   split into big = tf32(x) and small = tf32(x - big) (both rounded to nearest, in registers, as
//   the fragments are read), and each tile takes three mma.sync m16n8k8 in TF32, small * big,
//   big * small, big * big, from zero each step of 8, the step's sum then added to the float sums
//   (see mma_tile; the small * small term is below float's rounding).
//   The products keep ~22 of float's 24 bits; the sums are float sums, so the accuracy contract's
//   limit on their length (KSUM, split-K) holds as for FFMA (sm_80+; same fragment layout).
//   AHEAD = 1 (MMA = 3) has the producer warpgroup hold two slices in registers (see there);
//   KSUM = 1 (FFMA and MMA = 2) sums k in partial chains of KSUM_CHAIN (96) products, each from
//   zero, and adds each chain to the running sum: an error that grows like (96 + k / 96)
//   roundings instead of k (sequential FFMA sums were 2.2x cuBLAS SGEMM's error against an FP64
//   product at k = 1024, beyond the accuracy contract), for one add per accumulator and chain
//   (under 1 % more instructions) and a second set of accumulators.
//   CSTAGE = 1 writes C through shared memory: the block's accumulators go to a BM x BN tile
//   there (column-major, C_STRIDE floats per column), then every warp stores whole runs of a
//   column, 32 consecutive rows per instruction. Straight from the fragments, a lane's rows are
//   strided (TM-row runs LM apart; the mma's pairs of rows), which is fine when C takes vector
//   stores but, where it does not (odd ldc: C_VEC = 1), sends about twice the 32-byte sectors
//   the tile holds to L2; a product with small k is mostly that store.
// A_STRIDE and B_STRIDE, from the host (gemm_op.cpp's shared_strides, the one place they are
// computed), are the shared rows' lengths in floats: the stored extent plus PAD, or for MMA = 1 the
// padding that keeps that layout's fragment reads free of bank conflicts; C_STRIDE (CSTAGE = 1)
// the staged C tile's column length.
// Host-side parameters (no -D option, the same kernel): PACK copies A and B that are not 16-byte
// aligned into an aligned workspace first (so VEC > 1 survives an odd leading dimension), REDUCE
// picks who sums split-K partials. C_VEC, set from the problem's alignment class (not a tuning
// parameter), is the widest store C allows: below VEC where packing let VEC exceed it.
// GEMV > 0 replaces all of that with a matrix-vector kernel for m or n up to GCOLS (see below);
// the tile parameters then hold fixed placeholder values and only VEC, SPLITK and GCOLS are read.
// Set from the call, not tuned: BATCHED = 1 computes a strided batch of products, one per grid
// row z (tuned_gemm_strided_batched); EPILOGUE = 1 + activation (1 none, 2 ReLU, 3 GELU tanh,
// 4 GELU erf) adds a bias, if the call passes one, and that activation before C is stored
// (tuned_gemm_strided_batched_ex). Both are compiled in only where a call needs them:
// the code they add, even where it does nothing, changed ptxas's register allocation of the
// plain kernels (one FFMA kernel 155 -> 217 registers, a block fewer per SM).

#ifndef GEMV
#error "gemm.cu: GEMV must be defined (-DGEMV=<value>)"
#endif
#ifndef GCOLS
#error "gemm.cu: GCOLS must be defined (-DGCOLS=<value>)"
#endif
#ifndef KERNEL_NAME
#error "gemm.cu: KERNEL_NAME must be defined (-DKERNEL_NAME=<value>)"
#endif
#ifndef TRANS_A
#error "gemm.cu: TRANS_A must be defined (-DTRANS_A=<value>)"
#endif
#ifndef TRANS_B
#error "gemm.cu: TRANS_B must be defined (-DTRANS_B=<value>)"
#endif
#ifndef BM
#error "gemm.cu: BM must be defined (-DBM=<value>)"
#endif
#ifndef BN
#error "gemm.cu: BN must be defined (-DBN=<value>)"
#endif
#ifndef BK
#error "gemm.cu: BK must be defined (-DBK=<value>)"
#endif
#ifndef WM
#error "gemm.cu: WM must be defined (-DWM=<value>)"
#endif
#ifndef WN
#error "gemm.cu: WN must be defined (-DWN=<value>)"
#endif
#ifndef TM
#error "gemm.cu: TM must be defined (-DTM=<value>)"
#endif
#ifndef TN
#error "gemm.cu: TN must be defined (-DTN=<value>)"
#endif
#ifndef LM
#error "gemm.cu: LM must be defined (-DLM=<value>)"
#endif
#ifndef VEC
#error "gemm.cu: VEC must be defined (-DVEC=<value>)"
#endif
#ifndef PAD
#error "gemm.cu: PAD must be defined (-DPAD=<value>)"
#endif
#ifndef AKM
#error "gemm.cu: AKM must be defined (-DAKM=<value>)"
#endif
#ifndef UNROLL
#error "gemm.cu: UNROLL must be defined (-DUNROLL=<value>)"
#endif
#ifndef BKM
#error "gemm.cu: BKM must be defined (-DBKM=<value>)"
#endif
#ifndef PIPE
#error "gemm.cu: PIPE must be defined (-DPIPE=<value>)"
#endif
#ifndef SWZ
#error "gemm.cu: SWZ must be defined (-DSWZ=<value>)"
#endif
#ifndef MINB
#error "gemm.cu: MINB must be defined (-DMINB=<value>)"
#endif
#ifndef PRETB
#error "gemm.cu: PRETB must be defined (-DPRETB=<value>)"
#endif
#ifndef SPLITK
#error "gemm.cu: SPLITK must be defined (-DSPLITK=<value>)"
#endif
#ifndef TAIL
#error "gemm.cu: TAIL must be defined (-DTAIL=<value>)"
#endif
#ifndef C_VEC
#error "gemm.cu: C_VEC must be defined (-DC_VEC=<value>)"
#endif
#ifndef MMA
#error "gemm.cu: MMA must be defined (-DMMA=<value>)"
#endif
#ifndef A_STRIDE
#error "gemm.cu: A_STRIDE must be defined (-DA_STRIDE=<value>)"
#endif
#ifndef B_STRIDE
#error "gemm.cu: B_STRIDE must be defined (-DB_STRIDE=<value>)"
#endif
#ifndef CSTAGE
#error "gemm.cu: CSTAGE must be defined (-DCSTAGE=<value>)"
#endif
#ifndef KSUM
#error "gemm.cu: KSUM must be defined (-DKSUM=<value>)"
#endif
#ifndef AHEAD
#error "gemm.cu: AHEAD must be defined (-DAHEAD=<value>)"
#endif
#ifndef KSUM_CHAIN
#error "gemm.cu: KSUM_CHAIN must be defined (-DKSUM_CHAIN=<value>)"
#endif
#ifndef C_STRIDE
#error "gemm.cu: C_STRIDE must be defined (-DC_STRIDE=<value>)"
#endif
#ifndef BATCHED
#error "gemm.cu: BATCHED must be defined (-DBATCHED=<value>)"
#endif
#ifndef EPILOGUE
#error "gemm.cu: EPILOGUE must be defined (-DEPILOGUE=<value>)"
#endif

namespace {

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

// MMA = 1: k slot s (0, 1) of lane t's fragments is logical step mma_k(t, s) of an 8-step group:
// two consecutive steps where both operands are stored k-contiguous (one 64-bit read each), else
// the mma's own order. Any fixed permutation of k gives the same product.
__device__ __forceinline__ int mma_k(int t, int s) {
  return (!AKM && !BKM) ? 2 * t + s : t + 4 * s;
}

// d += a * b for one 16 x 8 x 8 tile in FP64 (fragments in the mma's layout: a[2s + h] is row
// g + 8h, k slot s; b[s] is k slot s, column g; d[e] is row g + 8(e / 2), column 2t + e % 2).
__device__ __forceinline__ void mma_f64(double (&d)[4], const double (&a)[4],
                                        const double (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#endif
}

// d += a * b for one 16 x 8 x 8 tile in TF32 with float sums (the same fragment layout; the
// operands are TF32 bit patterns).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// x rounded to the nearest TF32 value (10 mantissa bits), as a bit pattern.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned t = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(t) : "f"(x));
#endif
  return t;
}

// One operand fragment of N elements as the mma takes it: doubles (MMA = 1), or the big and
// small TF32 parts of each float (MMA = 2).
template <int N>
struct MmaFragment {
#if MMA == 2
  unsigned big[N], small[N];
  __device__ __forceinline__ void set(int e, float x) {
    big[e] = to_tf32(x);
    small[e] = to_tf32(x - __uint_as_float(big[e]));
  }
#else
  double v[N];
  __device__ __forceinline__ void set(int e, float x) { v[e] = static_cast<double>(x); }
#endif
};
// The sums of MMA kernels: double (MMA = 1), float (MMA = 2).
#if MMA == 2
using MmaSum = float;
#else
using MmaSum = double;
#endif

// d += a * b for one 16 x 8 x 8 tile of the kernel's MMA family.
__device__ __forceinline__ void mma_tile(MmaSum (&d)[4], const MmaFragment<4>& a,
                                         const MmaFragment<2>& b) {
#if MMA == 2
  // Each step's three products from zero, the small ones first, then added to the sums in float:
  // the tensor cores align an mma's addends to the largest and truncate, so accumulating into d
  // itself cost ~3 bits on an H100 (normwise 9e-7 at any k, 2-3x cuBLAS SGEMM's error), where
  // one rounded add per step and element keeps FFMA's error.
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_tf32(t, a.small, b.big);
  mma_tf32(t, a.big, b.small);
  mma_tf32(t, a.big, b.big);
#pragma unroll
  for (int e = 0; e < 4; ++e) d[e] += t[e];
#else
  mma_f64(d, a.v, b.v);
#endif
}

#if MMA >= 3
// MMA = 3: split TF32 on wgmma (sm_90a). Each warpgroup (4 consecutive warps) owns 64 rows of the
// block tile and WN columns; both operands reach shared memory through registers, split into big
// and small TF32 parts on the way, each part a K-major tile in the 128-byte swizzled layout wgmma
// reads (rows of 32 floats of k, 16-byte chunk c of row r at c ^ (r % 8)), and each 8 steps of k
// take three wgmma: small * big, big * small, big * big.
constexpr int kWgAtomK = 32;                             // floats of k in one swizzled row
constexpr int kWgPartA = BM * BK * 4;                    // bytes of one part of A's slice
constexpr int kWgPartB = BN * BK * 4;
// MMA = 3: big and small parts of both; MMA = 4: A and B as stored, and B's small parts; MMA = 5:
// A and B as stored.
constexpr int kWgStageBytes = MMA == 3   ? 2 * (kWgPartA + kWgPartB)
                              : MMA == 4 ? kWgPartA + 2 * kWgPartB
                                         : kWgPartA + kWgPartB;
// Registers per thread at launch (the register file over the block's threads, in steps of 8),
// and those moved to each producer thread (setmaxnreg) where the consumers, two per producer,
// have more than they need: their sums and their slice's (WN each) and some 32 more.
constexpr int kWgRegFileShare = 65536 / kBlockThreads / 8 * 8;
constexpr int kWgRegsAtLaunch = kWgRegFileShare > 255 ? 248 : kWgRegFileShare;
constexpr int kWgRegsMoved =
    kThreads == 2 * kProducers && kWgRegsAtLaunch >= WN + 40 && kWgRegsAtLaunch < 232 ? 16 : 0;
constexpr int kWgSums = WN / 2;                          // accumulators per thread (64 x WN / 128)
// KSUM = 2 (MMA >= 4) adds each slice's sums (from zero) to a partial chain of SLICE_CHAIN slices,
// and each full chain to the running sums: float sequences of at most SLICE_CHAIN and slices /
// SLICE_CHAIN adds (gemm_op::longest_slice_sum), where KSUM = 1 adds every slice sum to the running
// sums. In one chain the slice sums' rounding grew past the contract with k on the wide-range
// probe (H100, 131 x 77 x 65536: 2.5x cuBLAS SGEMM's error; chains of 32: 0.7x), and the second
// set of sums costs 2 % at 4096^3 (WN = 128: 128 bytes spilled). MMA = 3 has no registers for it
// (its producer holds slices in registers): split-K bounds its one chain instead.
#if MMA >= 4 && KSUM == 2
#ifndef SLICE_CHAIN
#error "gemm.cu: KSUM = 2 needs SLICE_CHAIN (-DSLICE_CHAIN=<value>)"
#endif
constexpr int kSliceChain = SLICE_CHAIN;
#else
constexpr int kSliceChain = 0;
#endif
// Adds slice t's sums (`part`) to the running sums, through the partial chain where there is one.
__device__ __forceinline__ void add_slice(float (&sums)[kWgSums], float (&chain)[kWgSums],
                                          const float (&part)[kWgSums], int t, int slices) {
  if constexpr (kSliceChain == 0) {
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) sums[i] += part[i];
  } else {
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) chain[i] += part[i];
    if ((t + 1) % kSliceChain == 0 || t + 1 == slices) {
#pragma unroll
      for (int i = 0; i < kWgSums; ++i) {
        sums[i] += chain[i];
        chain[i] = 0.0f;
      }
    }
  }
}
static_assert(BK % kWgAtomK == 0, "MMA = 3 takes k in whole 32-float swizzle rows");
static_assert(BM % 64 == 0 && WM == 16, "MMA = 3: warpgroups of 4 warps own 64 rows each");
static_assert(WN == 32 || WN == 64 || WN == 128 || WN == 256, "MMA = 3: WN is 32, 64, 128 or 256");
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm.cu: MMA = 3 and 4 use wgmma, which needs the sm_90a target"
#endif

// The big part of x: x rounded to the nearest TF32 value (ties away from zero, as cvt.rna), in two
// integer operations where cvt.rna.tf32 costs the producers several. The small part, x minus it
// (exact in float), is rounded by cvt.rna: the pair holds x to 2^-22 of its value (left to the
// tensor cores' truncation, 2^-21: the sweeps' errors were 2.3x cuBLAS's at k below 32).
__device__ __forceinline__ unsigned tf32_big(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u;
}

// Byte offset of (row r, k = 4 * quad ...) in a swizzled K-major tile of `rows` rows.
template <int ROWS>
__device__ __forceinline__ int wg_offset(int r, int k) {
  return (k / kWgAtomK) * ROWS * 128 + r * 128 + ((((k % kWgAtomK) / 4) ^ (r % 8)) * 16);
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// A shared-memory matrix descriptor for wgmma: a K-major tile in the 128-byte swizzle, 8-row
// groups 1024 bytes apart (the leading byte offset is unused in this layout).
__device__ __forceinline__ unsigned long long wg_descriptor(const void* p) {
  const unsigned addr = shared_address(p);
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) |
         (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void wg_fence() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int PENDING>
__device__ __forceinline__ void wg_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
#endif
}
// Ordinary shared stores become visible to the tensor cores' (async proxy) reads.
__device__ __forceinline__ void fence_proxy_async() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Keeps the compiler from moving accesses of an accumulator across the asynchronous mma.
__device__ __forceinline__ void wg_pin(float& x) { asm volatile("" : "+f"(x)::"memory"); }

// Shared-memory barriers between the producer warpgroup and the multiplying ones: a stage is
// full when every producer thread has arrived, empty when every consumer thread has.
__device__ __forceinline__ void barrier_init(unsigned long long* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void barrier_arrive(unsigned long long* bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(
                   shared_address(bar))
               : "memory");
}
// Waits until the barrier's phase of this parity (its n-th completion: parity n % 2) is complete.
__device__ __forceinline__ void barrier_wait(unsigned long long* bar, int parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// d (+)= a * b for one warpgroup's 64 x WN x 8 tile, one overload per WN (32, 64, 128, 256:
// inline PTX names every accumulator register, so each operand list is written out): a and b are
// shared-memory descriptors of TF32 (K-major) tiles; accumulate = 0 ignores d's old values.
// (TUNED_WG_D8(i): accumulators i to i + 7 as read-and-written operands.)
#define TUNED_WG_D8(i)                                                                         \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])

__device__ __forceinline__ void wgmma_tf32(float (&d)[16], unsigned long long a,
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8)
      : "l"(a), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[32], unsigned long long a,
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8), TUNED_WG_D8(16), TUNED_WG_D8(24)
      : "l"(a), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[64], unsigned long long a,
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
      "%60, %61, %62, %63"
      "}, %64, %65, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8), TUNED_WG_D8(16), TUNED_WG_D8(24), TUNED_WG_D8(32),
        TUNED_WG_D8(40), TUNED_WG_D8(48), TUNED_WG_D8(56)
      : "l"(a), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[128], unsigned long long a,
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
      "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, "
      "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "
      "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "
      "%120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8), TUNED_WG_D8(16), TUNED_WG_D8(24), TUNED_WG_D8(32),
        TUNED_WG_D8(40), TUNED_WG_D8(48), TUNED_WG_D8(56), TUNED_WG_D8(64), TUNED_WG_D8(72),
        TUNED_WG_D8(80), TUNED_WG_D8(88), TUNED_WG_D8(96), TUNED_WG_D8(104), TUNED_WG_D8(112),
        TUNED_WG_D8(120)
      : "l"(a), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

#if MMA >= 4
// The same with A's fragment from registers (4 TF32 values a thread: rows g and g + 8 of its
// warp's 16, k = t and t + 4; g = lane / 4, t = lane % 4).
__device__ __forceinline__ void wgmma_tf32(float (&d)[16], const unsigned (&a)[4],
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[32], const unsigned (&a)[4],
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8), TUNED_WG_D8(16), TUNED_WG_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate)
      : "memory");
#endif
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[64], const unsigned (&a)[4],
                                           unsigned long long b, int accumulate) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
      "%60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : TUNED_WG_D8(0), TUNED_WG_D8(8), TUNED_WG_D8(16), TUNED_WG_D8(24), TUNED_WG_D8(32),
        TUNED_WG_D8(40), TUNED_WG_D8(48), TUNED_WG_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate)
      : "memory");
#endif
}
#endif  // MMA >= 4
#undef TUNED_WG_D8

#if MMA == 3
// One operand's ROWS x BK slice (A: rows m; B: rows n), global -> registers -> split shared
// tiles. KCONTIG: element (r, k) at base[r * ld + k], moved as 1 x 4 units (4 floats of k); else
// at base[k * ld + r], moved as 4 x 4 units (four rows' runs at 4 steps of k, transposed in
// registers) so a unit's rows are stored as whole 16-byte chunks. Consecutive threads take
// consecutive 4-float quads of k: eight of them fill distinct chunks of a row (no bank conflicts).
// Rows adjacent with VEC = 4 instead (kRowsFirst): eight consecutive threads take eight
// consecutive units of rows (one 128-byte run of each k), the next eight the next quad of k, so a
// warp's vector loads touch four lines instead of eight, and its stores (rows r % 8 in two
// classes, four quads) still fill eight distinct chunks of the banks per pass. On the H100 that
// made NN and NT 2048^3-4096^3 9-17 % faster; with scalar loads it was 10 % slower (skinny NT).
// With narrower loads (VEC < 4: rows not 16-byte aligned) and one consumer warpgroup, the lanes
// of a warp take 32 adjacent rows instead (kLanesAlongRows), each reading its row's 4 steps of k
// one float at a time: a warp's load touches one or two lines where the units above touch 8-16
// (the L1 ran at 88 % of its throughput on NT 399x193x9204), and its 16-byte stores, a quarter warp
// at a time, fill eight distinct chunks of the swizzle. On the H100 that made skinny long-k NT and
// TT products with 64 x 64 tiles 5-14 % faster (NN too at MINB = 2; at MINB = 1 its producer took
// 154 registers, one block per SM, 35 % slower); with two or more consumer warpgroups (64 x 128,
// 128 x 128) it was 5-20 % slower, cause not established, so those keep the units above.
// PERMUTE (A): row 2g + h of each 16 is stored at g + 8h, so the wgmma's row g + 8h holds the
// fragment rows 2g + h (the other MMA kernels' fragment layout, which the epilogue reads).
template <int ROWS, bool KCONTIG, bool PERMUTE>
struct SplitLoader {
  static constexpr bool kRowsFirst = !KCONTIG && VEC == 4;
  static constexpr bool kLanesAlongRows = !KCONTIG && VEC < 4 && kThreads == 128;
  static constexpr int kUnitRows = KCONTIG || kLanesAlongRows ? 1 : 4;
  static constexpr int kQuads = BK / 4;
  static constexpr int kUnits = ROWS / kUnitRows * kQuads;
  static constexpr int kLoads = (kUnits + kProducers - 1) / kProducers;
  float reg[kLoads][kUnitRows][4];  // [load][row][k]

  static_assert(!kRowsFirst || ROWS % 32 == 0, "rows first: units in runs of eight (32 rows)");
  // Lanes along rows: each warp's lanes take 32 adjacent rows of kRowGroups, the four producer
  // warps four quads of k, so a thread's loads fall on 4 * BK / 16 steps of k.
  static constexpr int kRowGroups = ROWS / 32;
  static_assert(!kLanesAlongRows || (ROWS % 32 == 0 && kQuads % 4 == 0 && kProducers == 128),
                "lanes along rows: 32 rows per warp, four warps along k");

  __device__ __forceinline__ static bool exists(int u) {
    return kUnits % kProducers == 0 || u < kUnits;
  }
  // Unit u's first row and first step of k (see above).
  __device__ __forceinline__ static int unit_row(int u) {
    if constexpr (kLanesAlongRows) {
      // Load l's rows: lane + 32 (l % kRowGroups), so a thread's loads at one k differ by
      // immediate offsets. PERMUTE: lane i of each 16 takes the row the store puts at i (so the
      // stores are conflict-free).
      const int r = u % 32 + 32 * (u / kProducers % kRowGroups);
      return PERMUTE ? (r & ~15) | ((r & 7) << 1) | ((r >> 3) & 1) : r;
    }
    return kRowsFirst ? (u % 8 + u / (8 * kQuads) * 8) * kUnitRows : u / kQuads * kUnitRows;
  }
  __device__ __forceinline__ static int unit_k(int u) {
    if constexpr (kLanesAlongRows) return (u / 32 % 4 + 4 * (u / kProducers / kRowGroups)) * 4;
    return kRowsFirst ? u / 8 % kQuads * 4 : u % kQuads * 4;
  }
  // Four consecutive floats from p, of which the first `valid` exist (the rest are zero), VEC
  // wide where all four do.
  __device__ __forceinline__ static void run4(float (&dst)[4], const float* p, int valid) {
    if (valid >= 4) {
      if constexpr (VEC == 4) {
        const Vec<4> x = *reinterpret_cast<const Vec<4>*>(p);
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[e] = x.v[e];
        return;
      } else if constexpr (VEC == 2) {
        const Vec<2> x = *reinterpret_cast<const Vec<2>*>(p);
        const Vec<2> y = *reinterpret_cast<const Vec<2>*>(p + 2);
        dst[0] = x.v[0], dst[1] = x.v[1], dst[2] = y.v[0], dst[3] = y.v[1];
        return;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) dst[e] = e < valid ? p[e] : 0.0f;
  }

  // base: the slice's first element; r_left / k_left: valid rows and steps of k from there on.
  __device__ __forceinline__ void load(const float* __restrict__ base, long long ld, int r_left,
                                       int k_left, int tid) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int u = tid + l * kProducers;
      const int k = unit_k(u);
      const int r = unit_row(u);
      const bool in = exists(u);
      if constexpr (KCONTIG || kLanesAlongRows) {
        // One row's 4 steps of k: adjacent (KCONTIG), else ld apart, read one float at a time.
        const int valid = in && r < r_left ? min(max(k_left - k, 0), 4) : 0;
        if constexpr (KCONTIG) {
          run4(reg[l][0], base + (valid > 0 ? r * ld + k : 0), valid);
        } else {
          const float* p = base + (valid > 0 ? k * ld + r : 0);
#pragma unroll
          for (int e = 0; e < 4; ++e) reg[l][0][e] = e < valid ? p[e * ld] : 0.0f;
        }
      } else {
        const int valid_r = in ? min(max(r_left - r, 0), 4) : 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float run[4];
          const bool k_in = k + e < k_left && valid_r > 0;
          run4(run, base + (k_in ? (k + e) * ld + r : 0), k_in ? valid_r : 0);
#pragma unroll
          for (int j = 0; j < 4; ++j) reg[l][j][e] = run[j];
        }
      }
    }
  }

  // Writes the registers' big and small TF32 parts (round to nearest) to the two tiles.
  __device__ __forceinline__ void store(char* __restrict__ big, char* __restrict__ small,
                                        int tid) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int u = tid + l * kProducers;
      if (!exists(u)) continue;
      const int k = unit_k(u);
#pragma unroll
      for (int j = 0; j < kUnitRows; ++j) {
        int r = unit_row(u) + j;
        if constexpr (PERMUTE) r = (r & ~15) | ((r & 15) >> 1) | ((r & 1) << 3);
        unsigned b[4], s[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          b[e] = tf32_big(reg[l][j][e]);
          s[e] = to_tf32(reg[l][j][e] - __uint_as_float(b[e]));
        }
        const int offset = wg_offset<ROWS>(r, k);
        *reinterpret_cast<uint4*>(big + offset) = make_uint4(b[0], b[1], b[2], b[3]);
        *reinterpret_cast<uint4*>(small + offset) = make_uint4(s[0], s[1], s[2], s[3]);
      }
    }
  }
};
#endif  // MMA == 3

#if MMA >= 4
// MMA = 4: split TF32 on wgmma fed by the TMA (sm_90a). One thread of the producer warpgroup copies
// each slice of A and B as stored (raw floats, no staging registers) into a free stage with the
// TMA, whose bytes complete the stage's `loaded` barrier, stages ahead of the product; its other
// three warps then write B's small parts beside B (B minus B truncated to TF32, rounded: the
// tensor cores read B's raw floats as its big part, truncated) and mark the stage full. (Rounding
// B's big part in place instead changed nothing measurable: on the wide-range probe the error was
// 8.2e-7 either way, the float chain of slice sums, GemmTask::check_probe, bounds it.) The
// consumer warpgroups read A's fragments into registers, split them there (big: rounded to TF32;
// small: the rest, rounded) and take three wgmma per 8 steps of k with A from registers:
// small * B, big * B_small, big * B. So each element is split once, and A's parts never go back to
// shared memory: per slice the stages move (BM + 2 BN) x BK floats in and the consumers read A
// once, where MMA = 3 wrote and read both parts of both operands. (On an H100 MMA = 3's producer,
// loading through registers, bounded 128 x 128 tiles at ~80 TFLOP/s, and a cp.async producer as
// well, both limited by the loads an SM keeps in flight; the TMA alone ran at 177.)
static_assert(TRANS_B == 0, "MMA = 4 reads B k-contiguous (a transposed B is copied first: PRETB)");
static_assert(WN == 32 || WN == 64 || WN == 128, "MMA = 4: WN is 32, 64 or 128");
constexpr int kSplitters = kProducers - 32;  // the producer's last 3 warps split B
// MMA = 5 is the same kernel with one product, big * B, both rounded to TF32 (the splitters round
// B in place: truncated by the tensor cores, its error on the wide-range probe was 2.1x cuBLAS
// TF32's, the contract of the TF32 type): plain TF32, which only the TF32 compute type may pick.
// A test's broken split: SPLIT_TERMS = 2 drops A_big * B_small, which the accuracy check must
// refuse (tests/gpu/gemm_families_test.cpp). No config sets it.
#ifndef SPLIT_TERMS
#define SPLIT_TERMS (MMA == 5 ? 1 : 3)
#endif
constexpr int kSplitTerms = SPLIT_TERMS;
static_assert(kSplitTerms == (MMA == 5 ? 1 : 3) || (MMA == 4 && kSplitTerms == 2),
              "SPLIT_TERMS is 3 (MMA = 4) or 1 (MMA = 5), or 2 with MMA = 4 in a test");
// Registers a thread at run time: the producers (which copy without staging registers) give theirs
// to the consumers (sums, the slice's sums, A's fragments of two steps: 168 as compiled). What the
// consumers take must come from the block's own registers at launch (__launch_bounds__' share,
// which setmaxnreg kernels are compiled to): asking for more waits forever. Counting the whole
// register file instead hung 4 consumer warpgroups (640 threads get 96 each at launch) and MINB = 2
// (half the file) on an H100 (issue 32's recorded spaces).
constexpr int kProducerRegs = 56;
constexpr int kLaunchRegs = 65536 / (kBlockThreads * MINB) / 8 * 8 > 248
                                ? 248
                                : 65536 / (kBlockThreads * MINB) / 8 * 8;
constexpr int kConsumerPool = kLaunchRegs * kBlockThreads - kProducers * kProducerRegs;
constexpr int kConsumerRegs =
    kConsumerPool / kThreads / 8 * 8 > 232 ? 232 : kConsumerPool / kThreads / 8 * 8;
// (One consumer warpgroup launches with 248 and is held to 232, as before: only the producers'
// count must not exceed the launch's.)
static_assert(kProducerRegs <= kLaunchRegs, "setmaxnreg.dec: the producers' count is at most the "
                                            "launch's");

// Byte offset of element (m, k) of A's slice as the TMA stores it in the 128-byte swizzle:
// k-contiguous (TRANS_A = 1), rows of 32 floats of k (wg_offset); m-contiguous, boxes of 32 rows
// m by 32 steps of k, each k a 128-byte line of 32 m with 16-byte chunk c at c ^ (k % 8). Either
// way a fragment read (8 rows g by 4 steps t of k) hits 32 distinct banks.
constexpr int kABox = TRANS_A == 1 ? BM : 32;  // rows m per TMA box
__device__ __forceinline__ int a_raw_offset(int m, int k) {
  if constexpr (TRANS_A == 1) return wg_offset<BM>(m, k) + (k % 4) * 4;
  return (m / 32) * 4096 + k * 128 + ((((m % 32) / 4) ^ (k % 8)) * 16) + (m % 4) * 4;
}

// A tensor map (CUtensorMap, 128 bytes) as the host encodes it: the kernel takes A's and B's as
// __grid_constant__ parameters and the TMA unit reads them there.
struct alignas(64) TensorMap {
  unsigned long long bits[16];
};

// Copies one box of a 3D tensor (coordinates: contiguous dimension first, then the other, then
// the product of the batch) into shared memory; the copy's bytes complete on bar's transaction
// count. Elements past the tensor's edges are zeros.
__device__ __forceinline__ void tma_load(void* dst, const TensorMap& map, int c0, int c1, int c2,
                                         unsigned long long* bar) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4}], [%5];\n" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2),
      "r"(shared_address(bar))
      : "memory");
#endif
}
// Arrives on bar, which then also waits for `bytes` of copies.
__device__ __forceinline__ void barrier_expect_bytes(unsigned long long* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}

// Splits B's slice: its small parts, x - trunc_tf32(x) rounded, at the same offsets in `small`
// (the tensor cores read the raw floats as the big parts, truncated); or for plain TF32 (MMA = 5)
// each raw float rounded to TF32 in place.
__device__ __forceinline__ void split_b(char* __restrict__ raw, char* __restrict__ small, int sid) {
  constexpr int kChunks = BN * BK / 4;
#pragma unroll
  for (int i = 0; i < (kChunks + kSplitters - 1) / kSplitters; ++i) {
    const int q = sid + i * kSplitters;
    if (kChunks % kSplitters != 0 && q >= kChunks) break;
    const uint4 x = *reinterpret_cast<const uint4*>(raw + q * 16);
    if constexpr (kSplitTerms == 1) {
      *reinterpret_cast<uint4*>(raw + q * 16) =
          make_uint4(tf32_big(__uint_as_float(x.x)), tf32_big(__uint_as_float(x.y)),
                     tf32_big(__uint_as_float(x.z)), tf32_big(__uint_as_float(x.w)));
    } else {
      uint4 y;
      y.x = to_tf32(__uint_as_float(x.x) - __uint_as_float(x.x & 0xFFFFE000u));
      y.y = to_tf32(__uint_as_float(x.y) - __uint_as_float(x.y & 0xFFFFE000u));
      y.z = to_tf32(__uint_as_float(x.z) - __uint_as_float(x.z & 0xFFFFE000u));
      y.w = to_tf32(__uint_as_float(x.w) - __uint_as_float(x.w & 0xFFFFE000u));
      *reinterpret_cast<uint4*>(small + q * 16) = y;
    }
  }
}
#endif  // MMA >= 4
#endif  // MMA >= 3

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

}  // namespace

#if GEMV == 0

extern "C" __global__ void __launch_bounds__(kBlockThreads, MINB)
    KERNEL_NAME(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                float* __restrict__ workspace, int split_mode, int tail_first, int split_count,
                Batch batch, Epilogue epi
#if MMA >= 4
                // MMA = 4's operands as the TMA reads them: A (m, k, product) or (k, m, product),
                // B (k, n, product)
                ,
                const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b
#endif
    ) {
  wait_for_previous_grid();
  // This block's product of the batch (grid row z): its operands here, its C, partial tiles and
  // bias where they are first used (kept live through the main loop, their addresses cost
  // registers: 155 -> 221 in one FFMA kernel).
  const long long product = BATCHED ? blockIdx.z : 0;
  if constexpr (BATCHED) {
    A += product * batch.a;
    B += product * batch.b;
  }
  auto to_product_outputs = [&] {
    if constexpr (BATCHED) {
      C += product * batch.c;
      workspace += product * batch.workspace;
      if (EPILOGUE && epi.bias_kind != 0) epi.bias += product * epi.bias_stride;
    }
  };
  constexpr int kTileFloats = BM * BN;  // == kThreads * kFragM * kFragN
  const int tid = threadIdx.x;
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  if constexpr (SPLITK > 1) {
    if (split_mode == kSplitSumPass) {
      // grid (tiles, kFragM * kFragN): block (t, e) sums element e of every thread's fragment of
      // tile t over the splits, in split order (the same additions as the last-block sum). The
      // partials' layout is the one the product pass writes below.
      if (tid >= kThreads) return;  // MMA = 3's producers hold no fragments
      to_product_outputs();
      const int tile = blockIdx.x, e = blockIdx.y;
      const float* part = workspace + (long long)tile * kTileFloats + e * kThreads + tid;
      float sum = 0.0f;
#pragma unroll
      for (int s = 0; s < SPLITK; ++s) sum += __ldcg(part + (long long)s * tiles * kTileFloats);
      int m0, n0, m, n;
      tile_origin(tile, M, N, m0, n0);
      fragment_position(tid, e, m, n);
      if (m0 + m < M && n0 + n < N) {
        store_c(C + (long long)(n0 + n) * ldc + m0 + m, alpha, sum, beta, epi, m0 + m, n0 + n);
      }
      return;
    }
  }
  extern __shared__ __align__(16) float smem[];
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m0 = (warp % kWarpsM) * WM;  // warp tile origin inside the block tile
  const int warp_n0 = (warp / kWarpsM) * WN;
  // FFMA: lanes run along m first (C is column-major); MMA: the mma's groups (g, t).
  const int lane_m = kMma ? lane / 4 : lane % LM;
  const int lane_n = kMma ? lane % 4 : lane / LM;

  // This block's tile and share of its k range: split-K, tile blockIdx.x and split blockIdx.y of
  // split_count (SPLITK or the launch's raise); a tail tile (SPLITK = 1, blocks from tail_first
  // on), split_count consecutive blocks per tile.
  int tile = blockIdx.x, split = 0, splits = 1;
  if constexpr (SPLITK > 1) {
    split = blockIdx.y;
    splits = kRaisableSplits ? split_count : SPLITK;
  } else if constexpr (TAIL == 1) {
    if (split_count > 1 && tile >= tail_first) {
      const int i = tile - tail_first;
      tile = tail_first + i / split_count;
      split = i % split_count;
      splits = split_count;
    }
  }
  int m0, n0;
  tile_origin(tile, M, N, m0, n0);
  const int m_left = M - m0;
  const int n_left = N - n0;

  // This block's share of k: whole slices, split as evenly as possible.
  const int all_slices = (K + BK - 1) / BK;
  const int split_slices = (all_slices + splits - 1) / splits;
  const int slice_begin = min(split * split_slices, all_slices);
  const int slices = min(all_slices - slice_begin, split_slices);
  const int k_begin = slice_begin * BK;
  const int k_end = min(K, k_begin + slices * BK);

  // Tile origins in global memory and the step from one k slice to the next.
  const float* a_tile = TRANS_A ? A + (long long)m0 * lda + k_begin : A + m0 + (long long)k_begin * lda;
  const float* b_tile = TRANS_B ? B + n0 + (long long)k_begin * ldb : B + (long long)n0 * ldb + k_begin;
  const long long a_step = TRANS_A ? BK : (long long)BK * lda;
  const long long b_step = TRANS_B ? (long long)BK * ldb : BK;

#if MMA == 3
  // Split TF32 on wgmma (see SplitLoader). Stages (PIPE: 2 or 3) of big and small tiles, 1024-byte
  // aligned for the swizzle, filled by the producer warpgroup while the others multiply.
  char* wg_smem = reinterpret_cast<char*>(
      (reinterpret_cast<unsigned long long>(smem) + 1023) & ~1023ull);
  auto stage_a = [&](int stage, int part) {  // part 0: big, 1: small
    return wg_smem + stage * kWgStageBytes + part * kWgPartA;
  };
  auto stage_b = [&](int stage, int part) {
    return wg_smem + stage * kWgStageBytes + 2 * kWgPartA + part * kWgPartB;
  };
  const int wg_m0 = warp_m0 - 16 * (warp % 4);  // this warpgroup's 64 rows
  const int wg_n0 = warp_n0;

  // Warp specialization: the producer warpgroup (threads from kThreads on) moves each slice from
  // global memory through registers into a free stage, split, and marks it full; the consumer
  // warpgroups multiply a full stage and mark it empty once their wgmma have read it. So the
  // tensor cores keep working while the next slices are loaded and split.
  __shared__ unsigned long long full[kStages], empty[kStages];
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      barrier_init(&full[st], kProducers);  // the producer warpgroup fills a stage
      barrier_init(&empty[st], kThreads);
    }
  }
  __syncthreads();
  float sums[kWgSums];
#pragma unroll
  for (int i = 0; i < kWgSums; ++i) sums[i] = 0.0f;
  if (tid >= kThreads) {
    if constexpr (kWgRegsMoved > 0) {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kWgRegsAtLaunch + kWgRegsMoved));
    }
    const int ptid = tid - kThreads;
    // Each slice is loaded, then (once its stage is free) split and stored. AHEAD = 1 keeps two
    // slices in registers, so the next one's loads are in flight while this one is split and
    // stored: one slice at a time, the producer waits out a whole memory latency per slice, which
    // bounds skinny long-k products with few blocks per SM.
    SplitLoader<BM, TRANS_A == 1, true> a0, a1;
    SplitLoader<BN, TRANS_B == 0, false> b0, b1;
    auto fetch = [&](auto& a, auto& b, int t) {
      const int k0 = k_begin + t * BK;
      a.load(a_tile + t * a_step, lda, m_left, k_end - k0, ptid);
      b.load(b_tile + t * b_step, ldb, n_left, k_end - k0, ptid);
    };
    auto put = [&](auto& a, auto& b, int t) {
      const int st = t % kStages;
      if (t >= kStages) barrier_wait(&empty[st], (t / kStages + 1) & 1);
      a.store(stage_a(st, 0), stage_a(st, 1), ptid);
      b.store(stage_b(st, 0), stage_b(st, 1), ptid);
      fence_proxy_async();
      barrier_arrive(&full[st]);
    };
    if constexpr (AHEAD == 1) {
      if (slices > 0) fetch(a0, b0, 0);
      for (int t = 0; t < slices; t += 2) {
        if (t + 1 < slices) fetch(a1, b1, t + 1);
        put(a0, b0, t);
        if (t + 1 < slices) {
          if (t + 2 < slices) fetch(a0, b0, t + 2);
          put(a1, b1, t + 1);
        }
      }
    } else {
      for (int t = 0; t < slices; ++t) {
        fetch(a0, b0, t);
        put(a0, b0, t);
      }
    }
    return;  // the epilogue is the consumers' (its barriers count kThreads)
  }
  // Each slice's products from zero in `part`, then added to the sums in float (rounded adds
  // instead of the tensor cores' truncating alignment against the whole sum: that cost 2.9e-5
  // of normwise error at k = 4096 on an H200, growing with k).
  static_assert(KSUM == 1, "MMA = 3 sums each slice from zero (KSUM = 1)");
  if constexpr (kWgRegsMoved > 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kWgRegsAtLaunch - kWgRegsMoved / 2));
  }
  float part[kWgSums], chain[kWgSums];
#pragma unroll
  for (int i = 0; i < kWgSums; ++i) chain[i] = 0.0f;
  for (int t = 0; t < slices; ++t) {
    const int st = t % kStages;
    barrier_wait(&full[st], (t / kStages) & 1);
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) wg_pin(part[i]);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      // Row 0 of a swizzle row group: step kk starts kk floats into the 128-byte rows.
      const int a_at = wg_offset<BM>(wg_m0, kk);
      const int b_at = wg_offset<BN>(wg_n0, kk);
      const unsigned long long a_big = wg_descriptor(stage_a(st, 0) + a_at);
      const unsigned long long a_small = wg_descriptor(stage_a(st, 1) + a_at);
      const unsigned long long b_big = wg_descriptor(stage_b(st, 0) + b_at);
      const unsigned long long b_small = wg_descriptor(stage_b(st, 1) + b_at);
      wgmma_tf32(part, a_small, b_big, kk == 0 ? 0 : 1);
      wgmma_tf32(part, a_big, b_small, 1);
      wgmma_tf32(part, a_big, b_big, 1);
    }
    wg_commit();
    wg_wait<0>();
    barrier_arrive(&empty[st]);
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) wg_pin(part[i]);
    add_slice(sums, chain, part, t, slices);
  }
  // The fragment layout of the other MMA kernels: element e of n tile jn is
  // acc[e / 2][2 jn + e % 2].
  float acc[kFragM][kFragN];
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e / 2][2 * jn + e % 2] = sums[4 * jn + e];
#elif MMA >= 4
  // Split TF32 on wgmma fed by the TMA (see tma_load). Stages (PIPE: 3 or 4) of A and B as stored
  // and B's small parts, 1024-byte aligned for the swizzle.
  char* wg_smem = reinterpret_cast<char*>(
      (reinterpret_cast<unsigned long long>(smem) + 1023) & ~1023ull);
  auto stage_a = [&](int stage) { return wg_smem + stage * kWgStageBytes; };
  auto stage_b = [&](int stage, int part) {  // part 0: as stored, 1: small parts
    return wg_smem + stage * kWgStageBytes + kWgPartA + part * kWgPartB;
  };
  const int wg_m0 = warp_m0 - 16 * (warp % 4);  // this warpgroup's 64 rows
  const int wg_n0 = warp_n0;

  // A stage is loaded when every loader's copies have landed, full when the splitters have split
  // B, empty when every consumer thread is done with it.
  __shared__ unsigned long long loaded[kStages], full[kStages], empty[kStages];
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      barrier_init(&loaded[st], 1);  // the copying thread's arrival, and the copies' bytes
      barrier_init(&full[st], kSplitters);
      barrier_init(&empty[st], kThreads);
    }
  }
  __syncthreads();
  if (tid >= kThreads) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    const int ptid = tid - kThreads;
    if (ptid < 32) {
      // One thread copies each slice into its stage once the consumers are done with the slice
      // kStages before (split-K ranges end on whole slices, or at K where the TMA fills zeros).
      if (ptid == 0) {
        // The product's coordinate in each map: 0 where the operand is shared (stride 0; the
        // host's map then has one product).
        const int za = batch.a != 0 ? static_cast<int>(product) : 0;
        const int zb = batch.b != 0 ? static_cast<int>(product) : 0;
        for (int u = 0; u < slices; ++u) {
          const int st = u % kStages;
          if (u >= kStages) barrier_wait(&empty[st], (u / kStages + 1) & 1);
          const int k0 = k_begin + u * BK;
          barrier_expect_bytes(&loaded[st], kWgPartA + kWgPartB);
#pragma unroll
          for (int box = 0; box < BM / kABox; ++box) {
            if constexpr (TRANS_A == 1) {
              tma_load(stage_a(st), map_a, k0, m0, za, &loaded[st]);
            } else {
              tma_load(stage_a(st) + box * 4096, map_a, m0 + 32 * box, k0, za, &loaded[st]);
            }
          }
          tma_load(stage_b(st, 0), map_b, k0, n0, zb, &loaded[st]);
        }
      }
    } else {
      for (int t = 0; t < slices; ++t) {
        const int st = t % kStages;
        barrier_wait(&loaded[st], (t / kStages) & 1);
        split_b(stage_b(st, 0), stage_b(st, 1), ptid - 32);
        fence_proxy_async();  // B's parts, to the tensor cores' reads
        barrier_arrive(&full[st]);
      }
    }
    return;  // the epilogue is the consumers' (its barriers count kThreads)
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
  // Each slice's products from zero in `part`, then added to the sums in float (see MMA = 3),
  // with KSUM = 2 through partial chains of kSliceChain slices (add_slice).
  static_assert(KSUM >= 1, "MMA = 4 sums each slice from zero (KSUM = 1 or 2)");
  float sums[kWgSums], part[kWgSums], chain[kWgSums];
#pragma unroll
  for (int i = 0; i < kWgSums; ++i) sums[i] = chain[i] = 0.0f;
  // This thread's fragment rows of A (g and g + 8 of its warp's 16) and first step of k.
  const int frag_row = wg_m0 + 16 * (warp % 4) + lane / 4;
  const int frag_k = lane % 4;
  for (int t = 0; t < slices; ++t) {
    const int st = t % kStages;
    barrier_wait(&full[st], (t / kStages) & 1);
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) wg_pin(part[i]);
    // A's fragments of two steps of 8 at a time: the wgmma read them after issue, so a step's
    // registers are refilled only once its group (two steps before) is done.
    unsigned a_big[2][4], a_small[2][4];
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      unsigned(&big)[4] = a_big[kk % 2];
      unsigned(&small)[4] = a_small[kk % 2];
      if (kk >= 2) wg_wait<1>();
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = *reinterpret_cast<const float*>(
            stage_a(st) + a_raw_offset(frag_row + 8 * (e & 1), 8 * kk + frag_k + 4 * (e >> 1)));
        big[e] = tf32_big(x);  // (plain TF32, MMA = 5: rounded, nothing kept of the rest)
        if constexpr (kSplitTerms > 1) small[e] = to_tf32(x - __uint_as_float(big[e]));
      }
      wg_fence();
      const int b_at = wg_offset<BN>(wg_n0, 8 * kk);
      const unsigned long long b_raw = wg_descriptor(stage_b(st, 0) + b_at);
      if constexpr (kSplitTerms > 1) {
        const unsigned long long b_small = wg_descriptor(stage_b(st, 1) + b_at);
        wgmma_tf32(part, small, b_raw, kk == 0 ? 0 : 1);
        if constexpr (kSplitTerms == 3) wgmma_tf32(part, big, b_small, 1);
        wgmma_tf32(part, big, b_raw, 1);
      } else {
        wgmma_tf32(part, big, b_raw, kk == 0 ? 0 : 1);
      }
      wg_commit();
    }
    wg_wait<0>();
    barrier_arrive(&empty[st]);
#pragma unroll
    for (int i = 0; i < kWgSums; ++i) wg_pin(part[i]);
    add_slice(sums, chain, part, t, slices);
  }
  // The fragment layout of the other MMA kernels, rows g and g + 8 (fragment_row).
  float acc[kFragM][kFragN];
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e / 2][2 * jn + e % 2] = sums[4 * jn + e];
#else
  float* a_smem = smem;                           // kStages x kATileFloats
  float* b_smem = smem + kStages * kATileFloats;  // kStages x kBTileFloats

  ALoader a_loader;
  BLoader b_loader;
  float acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) acc[i][j] = 0.0f;
  // KSUM = 1: the partial chain being summed (FFMA: chain; MMA = 2: mchain), added to the running
  // sums every kSlicesPerChain slices and after the last (KSUM = 0 never touches it, and the
  // compiler drops it).
  float chain[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) chain[i][j] = 0.0f;
  // MMA kernels sum in their own sums (MMA = 1: double) until the epilogue: element e of tile
  // (im, jn) is acc[2 im + e / 2][2 jn + e % 2].
  MmaSum dacc[kMmaM][kMmaN][4];
  MmaSum mchain[kMmaM][kMmaN][4];
#pragma unroll
  for (int im = 0; im < kMmaM; ++im)
#pragma unroll
    for (int jn = 0; jn < kMmaN; ++jn)
#pragma unroll
      for (int e = 0; e < 4; ++e) dacc[im][jn][e] = mchain[im][jn][e] = 0;
  int chain_slices = 0;
  auto add_chain = [&]() {
    if constexpr (kMma) {
#pragma unroll
      for (int im = 0; im < kMmaM; ++im)
#pragma unroll
        for (int jn = 0; jn < kMmaN; ++jn)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            dacc[im][jn][e] += mchain[im][jn][e];
            mchain[im][jn][e] = 0;
          }
    } else {
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) {
          acc[i][j] += chain[i][j];
          chain[i][j] = 0.0f;
        }
    }
    chain_slices = 0;
  };
  // Where a tile's mma sums: the partial chain (KSUM = 1) or the running sums.
  auto mma_sums = [&](int im, int jn) -> MmaSum(&)[4] {
    if constexpr (KSUM == 1) {
      return mchain[im][jn];
    } else {
      return dacc[im][jn];
    }
  };

  // Extents of the slice starting at k0 as (contiguous, strided) lengths of each operand.
  auto a_extent = [&](int k0, int& c_left, int& s_left) {
    c_left = TRANS_A ? k_end - k0 : m_left;
    s_left = TRANS_A ? m_left : k_end - k0;
  };
  auto b_extent = [&](int k0, int& c_left, int& s_left) {
    c_left = TRANS_B ? n_left : k_end - k0;
    s_left = TRANS_B ? k_end - k0 : n_left;
  };
  auto load_slice = [&](int k0) {
    int c, s;
    a_extent(k0, c, s);
    a_loader.load(a_tile, lda, c, s, tid);
    b_extent(k0, c, s);
    b_loader.load(b_tile, ldb, c, s, tid);
    a_tile += a_step;
    b_tile += b_step;
  };
  auto store_slice = [&](int stage) {
    a_loader.store(a_smem + stage * kATileFloats, tid, AIndex());
    b_loader.store(b_smem + stage * kBTileFloats, tid, BIndex());
  };
  auto copy_slice_async = [&](int k0, int stage) {
    int c, s;
    a_extent(k0, c, s);
    a_loader.copy_async(a_smem + stage * kATileFloats, a_tile, lda, c, s, tid, AIndex());
    b_extent(k0, c, s);
    b_loader.copy_async(b_smem + stage * kBTileFloats, b_tile, ldb, c, s, tid, BIndex());
    a_tile += a_step;
    b_tile += b_step;
  };
  // MMA, per 8 steps of k: each warp converts its fragments (to double, or to TF32 big and small
  // parts) and issues the tiles' mma. The operand with fewer fragments (A: 4 elements per m tile,
  // B: 2 per n tile) is converted whole first and the other one tile at a time, which keeps the
  // fewest registers live.
  auto a_fragment = [&](const float* as, int kk, int im, MmaFragment<4>& a) {
    const int r = warp_m0 + im * 16 + 2 * lane_m;  // the mma's rows g and g + 8
    float f[4];                                     // f[2s + h]: row r + h, k slot s
    if constexpr (AKM) {  // m contiguous: both rows in one 64-bit read per k slot
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        read_shared<2>(f + 2 * s, as + a_index(kk + mma_k(lane_n, s), r));
      }
    } else if constexpr (!BKM) {  // k contiguous, two steps per lane: a 64-bit read per row
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float row[2];
        read_shared<2>(row, as + a_index(kk + 2 * lane_n, r + h));
        f[h] = row[0];
        f[2 + h] = row[1];
      }
    } else {
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h) f[2 * s + h] = as[a_index(kk + mma_k(lane_n, s), r + h)];
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) a.set(e, f[e]);
  };
  auto b_fragment = [&](const float* bs, int kk, int jn, MmaFragment<2>& b) {
    const int n = warp_n0 + jn * 8 + lane_m;  // the mma's column g
    float f[2];
    if constexpr (!AKM && !BKM) {
      read_shared<2>(f, bs + b_index(kk + 2 * lane_n, n));
    } else {
#pragma unroll
      for (int s = 0; s < 2; ++s) f[s] = bs[b_index(kk + mma_k(lane_n, s), n)];
    }
    b.set(0, f[0]);
    b.set(1, f[1]);
  };
  auto compute_slice_mma = [&](const float* as, const float* bs) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      if constexpr (kMmaM * 4 <= kMmaN * 2) {
        MmaFragment<4> a[kMmaM];
#pragma unroll
        for (int im = 0; im < kMmaM; ++im) a_fragment(as, kk, im, a[im]);
#pragma unroll
        for (int jn = 0; jn < kMmaN; ++jn) {
          MmaFragment<2> b;
          b_fragment(bs, kk, jn, b);
#pragma unroll
          for (int im = 0; im < kMmaM; ++im) mma_tile(mma_sums(im, jn), a[im], b);
        }
      } else {
        MmaFragment<2> b[kMmaN];
#pragma unroll
        for (int jn = 0; jn < kMmaN; ++jn) b_fragment(bs, kk, jn, b[jn]);
#pragma unroll
        for (int im = 0; im < kMmaM; ++im) {
          MmaFragment<4> a;
          a_fragment(as, kk, im, a);
#pragma unroll
          for (int jn = 0; jn < kMmaN; ++jn) mma_tile(mma_sums(im, jn), a, b[jn]);
        }
      }
    }
  };
  auto compute_slice_ffma = [&](const float* as, const float* bs) {
#pragma unroll kGroupUnroll
    for (int k0 = 0; k0 < BK; k0 += kKGroup) {
      // An operand stored k-contiguous (AKM or BKM = 0) is read kKGroup steps of k at once: one
      // 128-bit read per fragment row instead of one 32-bit read per row and step.
      float a_group[AKM ? 1 : kFragM][kKGroup];
      float b_group[BKM ? 1 : kFragN][kKGroup];
      if constexpr (!AKM) {
#pragma unroll
        for (int i = 0; i < kFragM; ++i) {
          const int m = warp_m0 + (i / TM) * LM * TM + lane_m * TM + i % TM;
          read_shared<kKGroup>(a_group[i], as + a_index(k0, m));
        }
      }
      if constexpr (!BKM) {
#pragma unroll
        for (int j = 0; j < kFragN; ++j) {
          const int n = warp_n0 + (j / TN) * kLN * TN + lane_n * TN + j % TN;
          read_shared<kKGroup>(b_group[j], bs + b_index(k0, n));
        }
      }
#pragma unroll
      for (int kk = 0; kk < kKGroup; ++kk) {
        const int k = k0 + kk;
        float a_frag[kFragM];
        float b_frag[kFragN];
        if constexpr (AKM) {
#pragma unroll
          for (int wm = 0; wm < kWMIter; ++wm) {
            const int m = warp_m0 + wm * LM * TM + lane_m * TM;
            read_shared<TM>(a_frag + wm * TM, as + a_index(k, m));
          }
        } else {
#pragma unroll
          for (int i = 0; i < kFragM; ++i) a_frag[i] = a_group[i][kk];
        }
        if constexpr (BKM) {
#pragma unroll
          for (int wn = 0; wn < kWNIter; ++wn) {
            const int n = warp_n0 + wn * kLN * TN + lane_n * TN;
            read_shared<TN>(b_frag + wn * TN, bs + b_index(k, n));
          }
        } else {
#pragma unroll
          for (int j = 0; j < kFragN; ++j) b_frag[j] = b_group[j][kk];
        }
#pragma unroll
        for (int i = 0; i < kFragM; ++i)
#pragma unroll
          for (int j = 0; j < kFragN; ++j) {
            if constexpr (KSUM == 1) {
              chain[i][j] = fmaf(a_frag[i], b_frag[j], chain[i][j]);
            } else {
              acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
            }
          }
      }
    }
  };
  auto compute_slice = [&](int stage) {
    const float* as = a_smem + stage * kATileFloats;
    const float* bs = b_smem + stage * kBTileFloats;
    if constexpr (kMma) {
      compute_slice_mma(as, bs);
    } else {
      compute_slice_ffma(as, bs);
    }
    if constexpr (KSUM == 1) {
      if (++chain_slices == kSlicesPerChain) add_chain();
    }
  };

  if constexpr (kAsync) {
    // kStages - 1 slices in flight ahead of the one being computed; one barrier per slice. A
    // group is committed every step, empty or not, so wait_group counts stay uniform.
#pragma unroll
    for (int t = 0; t < kStages - 1; ++t) {
      if (t < slices) copy_slice_async(k_begin + t * BK, t);
      cp_async_commit();
    }
    for (int t = 0; t < slices; ++t) {
      cp_async_wait<kStages - 2>();  // slice t has landed (for this thread's copies)
      __syncthreads();               // ... for everyone's, and slice t - 1 is no longer read
      const int ahead = t + kStages - 1;
      if (ahead < slices) copy_slice_async(k_begin + ahead * BK, ahead % kStages);
      cp_async_commit();
      compute_slice(t % kStages);
    }
    cp_async_wait<0>();
  } else if constexpr (PIPE == 1) {
    // Two shared stages: the next slice travels global -> registers during this slice's math,
    // so one barrier per slice suffices.
    if (slices > 0) {
      load_slice(k_begin);
      store_slice(0);
      __syncthreads();
    }
    for (int t = 0; t < slices; ++t) {
      if (t + 1 < slices) load_slice(k_begin + (t + 1) * BK);
      compute_slice(t & 1);
      if (t + 1 < slices) store_slice((t + 1) & 1);
      __syncthreads();
    }
  } else {
    for (int t = 0; t < slices; ++t) {
      load_slice(k_begin + t * BK);
      store_slice(0);
      __syncthreads();
      compute_slice(0);
      __syncthreads();
    }
  }

  if constexpr (KSUM == 1) add_chain();  // the last, shorter chain
  if constexpr (kMma) {
#pragma unroll
    for (int im = 0; im < kMmaM; ++im)
#pragma unroll
      for (int jn = 0; jn < kMmaN; ++jn)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc[2 * im + e / 2][2 * jn + e % 2] = static_cast<float>(dacc[im][jn][e]);
        }
  }
#endif  // MMA

  to_product_outputs();
  if (SPLITK > 1 || (TAIL == 1 && splits > 1)) {
    // Partial tiles live in the workspace thread-major (coalesced, no edge cases): split s of
    // slot t at [(s * slots + t) * BM * BN], element (i, j) of thread tid at
    // [(i * kFragN + j) * kThreads + tid]; one int ticket per slot follows all partial tiles.
    // Slots: every tile for split-K, the tail tiles (from tail_first) for a tail split.
    const int first = SPLITK > 1 ? 0 : tail_first;
    const long long slots = tiles - first;
    const int slot = tile - first;
    int* tickets = reinterpret_cast<int*>(workspace + splits * slots * kTileFloats);
    float* mine = workspace + (split * slots + slot) * kTileFloats;
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int j = 0; j < kFragN; ++j) __stcg(mine + (i * kFragN + j) * kThreads + tid, acc[i][j]);
    if (split_mode == kSplitPartialsOnly) return;  // the sum pass follows in stream order
    __threadfence();  // this block's partial is visible device-wide before its ticket
    fragment_threads_sync();
    __shared__ int last;
    if (tid == 0) {
      last = atomicAdd(tickets + slot, 1) == splits - 1;
      if (last) tickets[slot] = 0;  // every other split has arrived; ready for the next launch
    }
    fragment_threads_sync();
    if (!last) return;
    __threadfence();
    // Sum in split order whoever arrives last (this block's own partial re-read like the others),
    // so every run gives the same bits.
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int j = 0; j < kFragN; ++j) acc[i][j] = 0.0f;
#pragma unroll 1
    for (int s = 0; s < splits; ++s) {
      const float* part = workspace + (s * slots + slot) * kTileFloats + tid;
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) acc[i][j] += __ldcg(part + (i * kFragN + j) * kThreads);
    }
  }

  if constexpr (CSTAGE == 1) {
    // Staged epilogue. The fragments go to the C tile in shared memory, runs of TM rows as wide
    // as they allow (C_STRIDE = BM + 4 keeps the mma's 64-bit pairs free of bank conflicts).
    constexpr int kRun = kRowsEightApart ? 1 : TM % 4 == 0 ? 4 : TM % 2 == 0 ? 2 : 1;
    float* c_smem = smem;
    // Every warp is done with the last slice: its stages may be overwritten.
    fragment_threads_sync();
#pragma unroll
    for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn)
#pragma unroll
        for (int j = 0; j < TN; ++j)
#pragma unroll
          for (int i = 0; i < TM; i += kRun) {
            const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
            const int n = warp_n0 + wn * kLN * TN + lane_n * TN + j;
            Vec<kRun> run;
#pragma unroll
            for (int e = 0; e < kRun; ++e) run.v[e] = acc[wm * TM + i + e][wn * TN + j];
            *reinterpret_cast<Vec<kRun>*>(c_smem + n * C_STRIDE + m) = run;
          }
    fragment_threads_sync();
    // Then consecutive threads take consecutive C_VEC rows down each column: a warp stores
    // 32 * C_VEC contiguous floats at once. Same rule as below: beta == 0 never reads C.
    constexpr int kColumnVecs = BM / C_VEC;
    constexpr int kStoreSteps = (kColumnVecs * BN + kThreads - 1) / kThreads;
#pragma unroll
    for (int step = 0; step < kStoreSteps; ++step) {
      const int v = tid + step * kThreads;
      const int m = (v % kColumnVecs) * C_VEC, n = v / kColumnVecs;
      if (n >= BN || n >= n_left || m >= m_left) continue;
      Vec<C_VEC> out = *reinterpret_cast<const Vec<C_VEC>*>(c_smem + n * C_STRIDE + m);
      float* c = C + (long long)(n0 + n) * ldc + m0 + m;
      if (m + C_VEC <= m_left) {
        if (beta != 0.0f) {
          const Vec<C_VEC> old = *reinterpret_cast<const Vec<C_VEC>*>(c);
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = fmaf(beta, old.v[e], alpha * out.v[e]);
        } else {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = alpha * out.v[e];
        }
        if (finishes(epi)) {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = finish(out.v[e], epi, m0 + m + e, n0 + n);
        }
        *reinterpret_cast<Vec<C_VEC>*>(c) = out;
      } else {
#pragma unroll
        for (int e = 0; e < C_VEC; ++e) {
          if (m + e < m_left) store_c(c + e, alpha, out.v[e], beta, epi, m0 + m + e, n0 + n);
        }
      }
    }
    return;
  }

  // Epilogue: C = alpha * acc + beta * C, never reading C when beta == 0 (NaNs there must not
  // leak). Runs of TM rows are contiguous in C; they are written C_VEC wide where whole.
  // (MMA = 1: runs of TM = 2 rows, at even offsets, written 2 wide where C allows.)
  // (MMA = 4: rows 8 apart, written one at a time.)
  constexpr int kCVec = kRowsEightApart ? 1
                        : kMma          ? (C_VEC >= 2 ? 2 : 1)
                        : (TM % C_VEC == 0) ? C_VEC
                                            : 1;
  // The bias and activation are decided once, not per element (deciding the bias's kind at each
  // store cost the fused linear, 4096 x 1600 -> 6400 with its bias on an H100, ~30 us over the
  // plain product's stores): a row bias is loaded once per row of the thread (its few rows are
  // stored in many columns) and a column bias by a load predicated on its kind, both added
  // without a branch. One store loop: compiled once per bias kind, the GELU kernel took 3x as
  // long to compile (3.4 s) and ran no faster.
  const bool biased = EPILOGUE != 0 && epi.bias_kind != 0;
  const bool by_column = EPILOGUE != 0 && epi.bias_kind == kBiasColumn;
  const bool activates = kActivation != 0 && epi.activation != 0;
  float row_bias[kWMIter * TM];
#pragma unroll
  for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
      row_bias[wm * TM + i] = EPILOGUE != 0 && epi.bias_kind == kBiasRow && m < m_left
                                  ? __ldg(epi.bias + m0 + m)
                                  : 0.0f;
    }
#pragma unroll
  for (int wm = 0; wm < kWMIter; ++wm) {
#pragma unroll
    for (int wn = 0; wn < kWNIter; ++wn) {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int n = warp_n0 + wn * kLN * TN + lane_n * TN + j;
        if (n >= n_left) continue;
        float* c_col = C + (long long)(n0 + n) * ldc + m0;
        const float column_bias = by_column ? __ldg(epi.bias + n0 + n) : 0.0f;
#pragma unroll
        for (int i = 0; i < TM; i += kCVec) {
          const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
          Vec<kCVec> out;
#pragma unroll
          for (int e = 0; e < kCVec; ++e) out.v[e] = alpha * acc[wm * TM + i + e][wn * TN + j];
          if (m + kCVec <= m_left) {
            Vec<kCVec>* p = reinterpret_cast<Vec<kCVec>*>(c_col + m);
            if (beta != 0.0f) {
              const Vec<kCVec> old = *p;
#pragma unroll
              for (int e = 0; e < kCVec; ++e) out.v[e] = fmaf(beta, old.v[e], out.v[e]);
            }
            if constexpr (EPILOGUE != 0) {
#pragma unroll
              for (int e = 0; e < kCVec; ++e) {
                if (biased) out.v[e] += row_bias[wm * TM + i + e] + column_bias;
                if (activates) out.v[e] = apply_activation(out.v[e]);
              }
            }
            *p = out;
          } else {
#pragma unroll
            for (int e = 0; e < kCVec; ++e) {
              if (m + e < m_left) {
                store_c(c_col + m + e, alpha, acc[wm * TM + i + e][wn * TN + j], beta, epi,
                        m0 + m + e, n0 + n);
              }
            }
          }
        }
      }
    }
  }
}

#else  // GEMV > 0

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

#endif  // GEMV

// PACK's copy of an operand whose vectors the product could not load in place: the rows x cols
// column-major matrix at `from` (leading dimension ld, any alignment) to `to` (leading dimension
// to_ld, a multiple of 4, 16-byte aligned), stored 16 bytes at a time; the rows' padding gets
// zeros. A kernel, not cudaMemcpy2D, so it joins the programmatic launch chain and stores whole
// vectors (12345 x 910 on an H100: 33 us against the 2D copy's 57). Blocks stride over columns
// (gridDim.y) and, 4 rows per thread, down them (gridDim.x).
extern "C" __global__ void __launch_bounds__(256)
    tuned_gemm_pack(const float* __restrict__ from, long long ld, int rows, int cols,
                    float* __restrict__ to, long long to_ld) {
  wait_for_previous_grid();  // the stream's previous kernel may still read `to` or write `from`
  const long long first = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  const long long step = (long long)gridDim.x * blockDim.x * 4;
  for (int c = blockIdx.y; c < cols; c += gridDim.y) {
    const float* __restrict__ column = from + c * ld;
    for (long long r = first; r < rows; r += step) {
      Vec<4> v;
#pragma unroll
      for (int e = 0; e < 4; ++e) v.v[e] = r + e < rows ? column[r + e] : 0.0f;
      *reinterpret_cast<Vec<4>*>(to + c * to_ld + r) = v;
    }
  }
}

// Zeroes the n split-K tickets a launch counts on (its workspace comes from a pool: what it held
// is unknown; each tile's last block leaves its ticket at zero again). A kernel, not a memset, so
// that it and the product launched after it join the programmatic launch chain: no launch gap
// before either. The host names it gemm_op.cpp's kZeroTickets.
extern "C" __global__ void __launch_bounds__(256)
    tuned_gemm_zero_tickets(int* __restrict__ tickets, int n, long long batch_stride) {
  wait_for_previous_grid();  // the stream's previous kernel may still use this memory
  // Grid row z: the tickets of product z of a batch, batch_stride ints after product z - 1's.
  tickets += blockIdx.y * batch_stride;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    tickets[i] = 0;
  }
}
