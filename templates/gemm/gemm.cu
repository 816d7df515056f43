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
//   (AKM = 1) or m-major (AKM = 0) in shared memory; the k slice is unrolled UNROLL times;
//   PREFETCH = 1 double-buffers shared memory and loads the next slice into registers while the
//   current one is computed.

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
#ifndef PREFETCH
#error "gemm.cu: PREFETCH must be defined (-DPREFETCH=<value>)"
#endif

namespace {

constexpr int kWarpsM = BM / WM;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kLN = 32 / LM;                // lanes of a warp along n
constexpr int kWMIter = WM / (LM * TM);     // sub-tiles per lane along m
constexpr int kWNIter = WN / (kLN * TN);    // sub-tiles per lane along n
constexpr int kFragM = kWMIter * TM;        // accumulator rows per thread
constexpr int kFragN = kWNIter * TN;        // accumulator columns per thread
constexpr int kStages = PREFETCH ? 2 : 1;
constexpr int kUnroll = UNROLL;  // #pragma unroll takes a constant expression, not a macro

// Shared-memory strides (floats). A k-major: (BK, BM + PAD); A m-major: (BM, BK + PAD).
constexpr int kAStride = AKM ? BM + PAD : BK + PAD;
constexpr int kATileFloats = AKM ? BK * (BM + PAD) : BM * (BK + PAD);
constexpr int kBStride = BN + PAD;  // B is always k-major: (BK, BN + PAD)
constexpr int kBTileFloats = BK * (BN + PAD);

static_assert(BM % WM == 0 && BN % WN == 0, "warp tile must divide the block tile");
static_assert(32 % LM == 0, "LM must divide the warp");
static_assert(WM % (LM * TM) == 0 && WN % (kLN * TN) == 0, "lane grid must divide the warp tile");
static_assert(kThreads <= 1024, "at most 1024 threads per block");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC is 1, 2 or 4");
static_assert(BM % VEC == 0 && BN % VEC == 0 && BK % VEC == 0, "VEC must divide BM, BN and BK");
static_assert(PAD % 4 == 0, "PAD keeps shared rows 16-byte aligned");
static_assert(BK % UNROLL == 0, "UNROLL must divide BK");
static_assert(TRANS_A == 0 || TRANS_A == 1, "TRANS_A is 0 or 1");
static_assert(TRANS_B == 0 || TRANS_B == 1, "TRANS_B is 0 or 1");

// Shared index of op(A)(m, k) within one stage.
__device__ __forceinline__ int a_index(int k, int m) {
  return AKM ? k * kAStride + m : m * kAStride + k;
}
__device__ __forceinline__ int b_index(int k, int n) { return k * kBStride + n; }

// N floats moved as one 4*N-byte access (LDG.64/128, STG.64/128) where the address is aligned.
template <int N>
struct alignas(4 * N) Vec {
  float v[N];
};

// One operand's (BM or BN) x BK slice, as stored in global memory: CLEN elements along the
// contiguous dimension, SLEN along the strided one. Each thread moves kLoads vectors of VEC floats.
template <int CLEN, int SLEN>
struct TileLoader {
  static constexpr int kVecPerLine = CLEN / VEC;
  static constexpr int kVectors = kVecPerLine * SLEN;
  static constexpr int kLoads = (kVectors + kThreads - 1) / kThreads;
  float reg[kLoads][VEC];

  // base: the tile's first element; c_left / s_left: valid elements from there on.
  __device__ __forceinline__ void load(const float* __restrict__ base, long long ld, int c_left,
                                       int s_left, int tid) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int v = tid + l * kThreads;
      const int c = (v % kVecPerLine) * VEC;
      const int s = v / kVecPerLine;
      const float* p = base + s * ld + c;
      if ((kVectors % kThreads == 0 || v < kVectors) && s < s_left && c + VEC <= c_left) {
        const Vec<VEC> x = *reinterpret_cast<const Vec<VEC>*>(p);
#pragma unroll
        for (int e = 0; e < VEC; ++e) reg[l][e] = x.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool in = (kVectors % kThreads == 0 || v < kVectors) && s < s_left && c + e < c_left;
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
      if (kVectors % kThreads != 0 && v >= kVectors) continue;
      const int c = (v % kVecPerLine) * VEC;
      const int s = v / kVecPerLine;
#pragma unroll
      for (int e = 0; e < VEC; ++e) smem[index(c + e, s)] = reg[l][e];
    }
  }
};

// A slice: TRANS_A = 0 stores A as (m, k) with m contiguous; TRANS_A = 1 as (k, m), k contiguous.
using ALoader = TileLoader<TRANS_A ? BK : BM, TRANS_A ? BM : BK>;
// B slice: TRANS_B = 0 stores B as (k, n) with k contiguous; TRANS_B = 1 as (n, k), n contiguous.
using BLoader = TileLoader<TRANS_B ? BN : BK, TRANS_B ? BK : BN>;

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

// Reads N consecutive floats from shared memory, 16 bytes at a time where alignment allows.
template <int N>
__device__ __forceinline__ void read_shared(float* dst, const float* src) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const Vec<4> x = *reinterpret_cast<const Vec<4>*>(src + i);
#pragma unroll
      for (int e = 0; e < 4; ++e) dst[i + e] = x.v[e];
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    KERNEL_NAME(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc) {
  extern __shared__ __align__(16) float smem[];
  float* a_smem = smem;                        // kStages x kATileFloats
  float* b_smem = smem + kStages * kATileFloats;  // kStages x kBTileFloats

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m0 = (warp % kWarpsM) * WM;  // warp tile origin inside the block tile
  const int warp_n0 = (warp / kWarpsM) * WN;
  const int lane_m = lane % LM;  // lanes run along m first: C is column-major
  const int lane_n = lane / LM;

  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;
  const int m_left = M - m0;
  const int n_left = N - n0;

  // Tile origins in global memory and the step from one k slice to the next.
  const float* a_tile = TRANS_A ? A + (long long)m0 * lda : A + m0;
  const float* b_tile = TRANS_B ? B + n0 : B + (long long)n0 * ldb;
  const long long a_step = TRANS_A ? BK : (long long)BK * lda;
  const long long b_step = TRANS_B ? (long long)BK * ldb : BK;

  ALoader a_loader;
  BLoader b_loader;
  float acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) acc[i][j] = 0.0f;

  auto load_slice = [&](int k0) {
    const int k_left = K - k0;
    a_loader.load(a_tile, lda, TRANS_A ? k_left : m_left, TRANS_A ? m_left : k_left, tid);
    b_loader.load(b_tile, ldb, TRANS_B ? n_left : k_left, TRANS_B ? k_left : n_left, tid);
    a_tile += a_step;
    b_tile += b_step;
  };
  auto store_slice = [&](int stage) {
    a_loader.store(a_smem + stage * kATileFloats, tid, AIndex());
    b_loader.store(b_smem + stage * kBTileFloats, tid, BIndex());
  };
  auto compute_slice = [&](int stage) {
    const float* as = a_smem + stage * kATileFloats;
    const float* bs = b_smem + stage * kBTileFloats;
#pragma unroll kUnroll
    for (int k = 0; k < BK; ++k) {
      float a_frag[kFragM];
      float b_frag[kFragN];
#pragma unroll
      for (int wm = 0; wm < kWMIter; ++wm) {
        const int m = warp_m0 + wm * LM * TM + lane_m * TM;
        if (AKM) {
          read_shared<TM>(a_frag + wm * TM, as + a_index(k, m));
        } else {
#pragma unroll
          for (int i = 0; i < TM; ++i) a_frag[wm * TM + i] = as[a_index(k, m + i)];
        }
      }
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn) {
        const int n = warp_n0 + wn * kLN * TN + lane_n * TN;
        read_shared<TN>(b_frag + wn * TN, bs + b_index(k, n));
      }
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
    }
  };

  const int slices = (K + BK - 1) / BK;
  if (PREFETCH) {
    // Two shared stages: the next slice travels global -> registers during this slice's math,
    // so one barrier per slice suffices.
    if (slices > 0) {
      load_slice(0);
      store_slice(0);
      __syncthreads();
    }
    for (int t = 0; t < slices; ++t) {
      if (t + 1 < slices) load_slice((t + 1) * BK);
      compute_slice(t & 1);
      if (t + 1 < slices) store_slice((t + 1) & 1);
      __syncthreads();
    }
  } else {
    for (int t = 0; t < slices; ++t) {
      load_slice(t * BK);
      store_slice(0);
      __syncthreads();
      compute_slice(0);
      __syncthreads();
    }
  }

  // Epilogue: C = alpha * acc + beta * C, never reading C when beta == 0 (NaNs there must not
  // leak). Runs of TM rows are contiguous in C; they are written VEC wide where whole.
  constexpr int kCVec = (TM % VEC == 0) ? VEC : 1;
#pragma unroll
  for (int wm = 0; wm < kWMIter; ++wm) {
#pragma unroll
    for (int wn = 0; wn < kWNIter; ++wn) {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int n = warp_n0 + wn * kLN * TN + lane_n * TN + j;
        if (n >= n_left) continue;
        float* c_col = C + (long long)(n0 + n) * ldc + m0;
#pragma unroll
        for (int i = 0; i < TM; i += kCVec) {
          const int m = warp_m0 + wm * LM * TM + lane_m * TM + i;
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
            *p = out;
          } else {
#pragma unroll
            for (int e = 0; e < kCVec; ++e) {
              if (m + e < m_left) {
                c_col[m + e] = beta != 0.0f ? fmaf(beta, c_col[m + e], out.v[e]) : out.v[e];
              }
            }
          }
        }
      }
    }
  }
}
