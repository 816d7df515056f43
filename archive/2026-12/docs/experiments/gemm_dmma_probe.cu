// Probe: an FP32 GEMM (float in, float out) whose products and sums run on the FP64 tensor cores
// (mma.sync f64). Products of two floats are exact in double and the sums are FP64, so the result
// is at least as accurate as FFMA SGEMM. Question: is it faster than cuBLAS SGEMM on the shapes
// where our FFMA kernel trails (1000^3 NN, TN 16384x64x8192, ...)?
// Column-major, cuBLAS conventions. Standalone: nvcc -O3 -arch=sm_90 dmma_probe.cu -lcublas
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      printf("CUDA %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

// ---------------------------------------------------------------- throughput microbenchmarks
__device__ __forceinline__ void mma16816(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
      "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}
__device__ __forceinline__ void mma884(double (&d)[2], double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
}

template <int CHAINS>
__global__ void tp_16816(double* out, int iters) {
  double a[8], b[4], c[CHAINS][4];
  for (int i = 0; i < 8; ++i) a[i] = 1e-9 * (threadIdx.x + i);
  for (int i = 0; i < 4; ++i) b[i] = 1e-9 * (threadIdx.x - i);
  for (int s = 0; s < CHAINS; ++s)
    for (int i = 0; i < 4; ++i) c[s][i] = 0;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int s = 0; s < CHAINS; ++s) mma16816(c[s], a, b);
  double t = 0;
  for (int s = 0; s < CHAINS; ++s)
    for (int i = 0; i < 4; ++i) t += c[s][i];
  if (t == 12345.0) out[0] = t;
}
__device__ __forceinline__ void mma1688(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
template <int CHAINS>
__global__ void tp_1688(double* out, int iters) {
  double a[4], b[2], c[CHAINS][4];
  for (int i = 0; i < 4; ++i) a[i] = 1e-9 * (threadIdx.x + i);
  for (int i = 0; i < 2; ++i) b[i] = 1e-9 * (threadIdx.x - i);
  for (int s = 0; s < CHAINS; ++s)
    for (int i = 0; i < 4; ++i) c[s][i] = 0;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int s = 0; s < CHAINS; ++s) mma1688(c[s], a, b);
  double t = 0;
  for (int s = 0; s < CHAINS; ++s)
    for (int i = 0; i < 4; ++i) t += c[s][i];
  if (t == 12345.0) out[0] = t;
}
template <int CHAINS>
__global__ void tp_884(double* out, int iters) {
  double a = 1e-9 * threadIdx.x, b = 2e-9 * threadIdx.x, c[CHAINS][2];
  for (int s = 0; s < CHAINS; ++s) c[s][0] = c[s][1] = 0;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int s = 0; s < CHAINS; ++s) mma884(c[s], a, b);
  double t = 0;
  for (int s = 0; s < CHAINS; ++s) t += c[s][0] + c[s][1];
  if (t == 12345.0) out[0] = t;
}
// 8 mma per 32 float->double conversions: the ratio of a 32x32 warp tile per k16 step.
__global__ void tp_16816_cvt(double* out, const float* in, int iters) {
  double b[4], c[8][4];
  float f[8];
  for (int i = 0; i < 8; ++i) f[i] = in[threadIdx.x % 32 + i];
  for (int i = 0; i < 4; ++i) b[i] = 1e-9 * (threadIdx.x - i);
  for (int s = 0; s < 8; ++s)
    for (int i = 0; i < 4; ++i) c[s][i] = 0;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      double a[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        f[i] = __int_as_float(__float_as_int(f[i]) ^ (it + r));  // defeat hoisting
        a[i] = (double)f[i];
      }
      mma16816(c[2 * r], a, b);
      mma16816(c[2 * r + 1], a, b);
    }
  }
  double t = 0;
  for (int s = 0; s < 8; ++s)
    for (int i = 0; i < 4; ++i) t += c[s][i];
  if (t == 12345.0) out[0] = t;
}
__global__ void tp_ffma(float* out, int iters) {
  float a = threadIdx.x * 1e-6f, b = 1.0001f, c[16];
  for (int s = 0; s < 16; ++s) c[s] = s;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int s = 0; s < 16; ++s) c[s] = fmaf(c[s], b, a);
  float t = 0;
  for (int s = 0; s < 16; ++s) t += c[s];
  if (t == 12345.0f) out[0] = t;
}

// ---------------------------------------------------------------- the probe GEMM
// op(A)(m,k): A_KC ? A[m*lda + k] : A[m + k*lda];  op(B)(k,n): B_KC ? B[k + n*ldb] : B[n + k*ldb].
// Shared layouts: A_KC: [m][k] (stride BK+8), else [k][m] (stride BM+8); B_KC: [n][k], else [k][n].
// Each warp owns WM x WN of the tile: (WM/16) x (WN/8) mma tiles of m16n8k16. The mma's k slot
// (t + 4i) maps to logical k = KMAP ? t + 4i : 4t + i (any fixed permutation of k is a valid
// product); the mma's rows g and g+8 map to logical rows 2g and 2g+1 (so both come in one 8-byte
// read from an m-contiguous tile and land adjacent in C).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool A_KC, bool B_KC, int MINB>
struct Cfg {
  static constexpr int kWarps = (BM / WM) * (BN / WN);
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kKmap = A_KC && B_KC ? 0 : 1;  // contiguous k per thread where both allow
  static constexpr int kAS = A_KC ? BK + (kKmap == 0 ? 8 : 4) : BM + 8;
  static constexpr int kBS = B_KC ? BK + (kKmap == 0 ? 16 : 4) : BN + 8;
  static constexpr int kATile = A_KC ? BM * kAS : BK * kAS;
  static constexpr int kBTile = B_KC ? BN * kBS : BK * kBS;
  static constexpr int kSmemBytes = STAGES * (kATile + kBTile) * 4;
};

__device__ __forceinline__ void cp16(float* dst, const float* src, int bytes) {
  unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes));
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool A_KC, bool B_KC, int MINB>
__global__ void __launch_bounds__(Cfg<BM, BN, BK, WM, WN, STAGES, A_KC, B_KC, MINB>::kThreads, MINB)
    gemm_dmma(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
              const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
              int k_chunk, float* __restrict__ partials) {
  using G = Cfg<BM, BN, BK, WM, WN, STAGES, A_KC, B_KC, MINB>;
  extern __shared__ __align__(16) float smem[];
  float* as_base = smem;
  float* bs_base = smem + STAGES * G::kATile;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int k_begin = blockIdx.z * k_chunk;
  const int k_end = min(K, k_begin + k_chunk);
  const int slices = (k_end - k_begin + BK - 1) / BK;
  const int wm0 = (warp % (BM / WM)) * WM, wn0 = (warp / (BM / WM)) * WN;
  constexpr int MT = WM / 16, NT = WN / 8;

  auto copy_slice = [&](int k0, int stage) {
    float* as = as_base + stage * G::kATile;
    float* bs = bs_base + stage * G::kBTile;
    // A
    if constexpr (A_KC) {
      constexpr int kVec = BM * BK / 4;
      for (int v = tid; v < kVec; v += G::kThreads) {
        const int m = v / (BK / 4), c = (v % (BK / 4)) * 4;
        const bool in = m0 + m < M && k0 + c < k_end;
        const float* src = in ? A + (long long)(m0 + m) * lda + k0 + c : A;
        cp16(as + m * G::kAS + c, src, in ? 4 * min(4, k_end - k0 - c) : 0);
      }
    } else {
      constexpr int kVec = BM * BK / 4;
      for (int v = tid; v < kVec; v += G::kThreads) {
        const int k = v / (BM / 4), c = (v % (BM / 4)) * 4;
        const bool in = k0 + k < k_end && m0 + c < M;
        const float* src = in ? A + (long long)(k0 + k) * lda + m0 + c : A;
        cp16(as + k * G::kAS + c, src, in ? 4 * min(4, M - m0 - c) : 0);
      }
    }
    if constexpr (B_KC) {
      constexpr int kVec = BN * BK / 4;
      for (int v = tid; v < kVec; v += G::kThreads) {
        const int n = v / (BK / 4), c = (v % (BK / 4)) * 4;
        const bool in = n0 + n < N && k0 + c < k_end;
        const float* src = in ? B + (long long)(n0 + n) * ldb + k0 + c : B;
        cp16(bs + n * G::kBS + c, src, in ? 4 * min(4, k_end - k0 - c) : 0);
      }
    } else {
      constexpr int kVec = BN * BK / 4;
      for (int v = tid; v < kVec; v += G::kThreads) {
        const int k = v / (BN / 4), c = (v % (BN / 4)) * 4;
        const bool in = k0 + k < k_end && n0 + c < N;
        const float* src = in ? B + (long long)(k0 + k) * ldb + n0 + c : B;
        cp16(bs + k * G::kBS + c, src, in ? 4 * min(4, N - n0 - c) : 0);
      }
    }
  };

  double acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0;

  auto compute_slice = [&](int stage) {
    const float* as = as_base + stage * G::kATile;
    const float* bs = bs_base + stage * G::kBTile;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      double a[MT][8];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int r = wm0 + i * 16 + 2 * g;  // logical rows r, r + 1 <- mma rows g, g + 8
        float f[8];                          // f[2s + h]: row r + h, k slot s
        if constexpr (A_KC) {
          // kmap 0: k = kk + 4t + s
          const float4 x0 = *reinterpret_cast<const float4*>(as + r * G::kAS + kk + 4 * t);
          const float4 x1 = *reinterpret_cast<const float4*>(as + (r + 1) * G::kAS + kk + 4 * t);
          f[0] = x0.x; f[2] = x0.y; f[4] = x0.z; f[6] = x0.w;
          f[1] = x1.x; f[3] = x1.y; f[5] = x1.z; f[7] = x1.w;
        } else {
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            const int k = kk + (G::kKmap == 0 ? 4 * t + s : t + 4 * s);
            const float2 x = *reinterpret_cast<const float2*>(as + k * G::kAS + r);
            f[2 * s] = x.x;
            f[2 * s + 1] = x.y;
          }
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) a[i][e] = (double)f[e];
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int n = wn0 + j * 8 + g;
        float f[4];
        if constexpr (B_KC) {
          if constexpr (G::kKmap == 0) {
            const float4 x = *reinterpret_cast<const float4*>(bs + n * G::kBS + kk + 4 * t);
            f[0] = x.x; f[1] = x.y; f[2] = x.z; f[3] = x.w;
          } else {
#pragma unroll
            for (int s = 0; s < 4; ++s) f[s] = bs[n * G::kBS + kk + t + 4 * s];
          }
        } else {
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            const int k = kk + (G::kKmap == 0 ? 4 * t + s : t + 4 * s);
            f[s] = bs[k * G::kBS + n];
          }
        }
        double b[4];
#pragma unroll
        for (int s = 0; s < 4; ++s) b[s] = (double)f[s];
#pragma unroll
        for (int i = 0; i < MT; ++i) mma16816(acc[i][j], a[i], b);
      }
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < slices) copy_slice(k_begin + s * BK, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int s = 0; s < slices; ++s) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads();
    const int ahead = s + STAGES - 1;
    if (ahead < slices) copy_slice(k_begin + ahead * BK, ahead % STAGES);
    asm volatile("cp.async.commit_group;\n" ::);
    compute_slice(s % STAGES);
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

  // acc[i][j][0..1]: row r, cols c, c+1; [2..3]: row r+1, cols c, c+1.
  const bool partial = gridDim.z > 1;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int m = m0 + wm0 + i * 16 + 2 * g + e / 2;
        const int n = n0 + wn0 + j * 8 + 2 * t + e % 2;
        if (m < M && n < N) {
          if (partial) {
            partials[((long long)blockIdx.z * N + n) * M + m] = (float)acc[i][j][e];
          } else {
            float v = alpha * (float)acc[i][j][e];
            float* p = C + (long long)n * ldc + m;
            *p = beta != 0.0f ? fmaf(beta, *p, v) : v;
          }
        }
      }
}

__global__ void sum_splits(int M, int N, int splits, const float* __restrict__ partials, float alpha,
                           float beta, float* __restrict__ C, int ldc) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)M * N) return;
  const int m = i % M, n = i / M;
  float s = 0.0f;
  for (int z = 0; z < splits; ++z) s += partials[(long long)z * M * N + i];
  float* p = C + (long long)n * ldc + m;
  *p = beta != 0.0f ? fmaf(beta, *p, alpha * s) : alpha * s;
}

// ---------------------------------------------------------------- host
struct Problem {
  char ta, tb;
  int m, n, k;
};

static float time_ms(cudaStream_t s, int reps, const std::function<void()>& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  f();
  CK(cudaStreamSynchronize(s));
  std::vector<float> v;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(a, s);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    v.push_back(ms / reps);
  }
  std::sort(v.begin(), v.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return v[2];
}

struct Kernel {
  std::string name;
  bool a_kc, b_kc;
  int bm, bn, threads, smem;
  void (*fn)(int, int, int, float, const float*, int, const float*, int, float, float*, int, int,
             float*);
};

template <int BM, int BN, int BK, int WM, int WN, int ST, bool AK, bool BKc, int MINB>
Kernel make() {
  using G = Cfg<BM, BN, BK, WM, WN, ST, AK, BKc, MINB>;
  auto fn = gemm_dmma<BM, BN, BK, WM, WN, ST, AK, BKc, MINB>;
  CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, G::kSmemBytes));
  char buf[128];
  snprintf(buf, sizeof buf, "%dx%dx%d w%dx%d st%d minb%d", BM, BN, BK, WM, WN, ST, MINB);
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, fn));
  std::string nm = std::string(buf) + " r" + std::to_string(at.numRegs) +
                   (at.localSizeBytes ? " SPILL" + std::to_string(at.localSizeBytes) : "");
  return Kernel{nm, AK, BKc, BM, BN, G::kThreads, G::kSmemBytes, fn};
}

#define KSET(AK, BKc)                                                                          \
  {                                                                                            \
    make<64, 64, 16, 32, 32, 3, AK, BKc, 2>(), make<64, 64, 32, 32, 32, 3, AK, BKc, 2>(),      \
        make<64, 64, 16, 32, 32, 4, AK, BKc, 2>(), make<64, 64, 16, 32, 16, 3, AK, BKc, 2>(),  \
        make<64, 128, 16, 32, 64, 3, AK, BKc, 1>(), make<128, 64, 16, 64, 32, 3, AK, BKc, 1>(), \
        make<128, 64, 32, 64, 32, 3, AK, BKc, 1>(), make<128, 128, 16, 64, 32, 3, AK, BKc, 1>(), \
        make<128, 128, 16, 32, 64, 3, AK, BKc, 1>(), make<64, 64, 16, 16, 32, 3, AK, BKc, 2>(), \
        make<32, 64, 16, 16, 32, 3, AK, BKc, 3>(), make<128, 64, 16, 32, 32, 3, AK, BKc, 1>(),  \
        make<64, 128, 16, 32, 32, 3, AK, BKc, 1>(), make<128, 32, 16, 32, 16, 3, AK, BKc, 2>(),  \
  }

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  const int sms = prop.multiProcessorCount;

  // 1. peaks
  {
    double* dout;
    float* fin;
    CK(cudaMalloc(&dout, 64));
    CK(cudaMalloc(&fin, 4096));
    CK(cudaMemset(fin, 0, 4096));
    const int iters = 4096;
    for (int warps : {4, 8, 16}) {
      float ms = time_ms(stream, 3, [&] { tp_16816<8><<<sms * 2, warps * 16, 0, stream>>>(dout, iters); });
      double flop = 2.0 * 2048 * 8 * iters * (sms * 2.0 * warps / 2);
      printf("peak dmma m16n8k16 %2d warps/SM: %.1f TFLOP/s\n", warps, flop / ms / 1e9);
      ms = time_ms(stream, 3, [&] { tp_1688<8><<<sms * 2, warps * 16, 0, stream>>>(dout, iters * 2); });
      printf("peak dmma m16n8k8  %2d warps/SM: %.1f TFLOP/s\n", warps, flop / ms / 1e9);
      ms = time_ms(stream, 3, [&] { tp_884<8><<<sms * 2, warps * 16, 0, stream>>>(dout, iters * 8); });
      flop = 2.0 * 256 * 8 * iters * 8 * (sms * 2.0 * warps / 2);
      printf("peak dmma m8n8k4   %2d warps/SM: %.1f TFLOP/s\n", warps, flop / ms / 1e9);
      ms = time_ms(stream, 3, [&] { tp_16816_cvt<<<sms * 2, warps * 16, 0, stream>>>(dout, fin, iters); });
      flop = 2.0 * 2048 * 8 * iters * (sms * 2.0 * warps / 2);
      printf("dmma + 4 cvt per mma %2d warps/SM: %.1f TFLOP/s\n", warps, flop / ms / 1e9);
      ms = time_ms(stream, 3, [&] { tp_ffma<<<sms * 2, warps * 16, 0, stream>>>((float*)dout, iters * 8); });
      flop = 2.0 * 32 * 16 * iters * 8 * (sms * 2.0 * warps / 2);
      printf("peak ffma          %2d warps/SM: %.1f TFLOP/s\n", warps, flop / ms / 1e9);
    }
  }

  if (argc > 1 && std::string(argv[1]) == "--peaks-only") return 0;
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetStream(h, stream);
  std::vector<Kernel> kset[2][2];
  kset[0][1] = KSET(false, true);   // NN
  kset[1][1] = KSET(true, true);    // TN
  kset[0][0] = KSET(false, false);  // NT

  std::vector<Problem> probs = {{'N', 'N', 1000, 1000, 1000}, {'T', 'N', 16384, 64, 8192},
                                {'N', 'N', 4096, 4096, 4096}, {'N', 'T', 16384, 64, 8192},
                                {'T', 'N', 128, 128, 131072}, {'N', 'N', 3000, 3000, 3000},
                                {'N', 'N', 2048, 2048, 2048}, {'T', 'N', 1024, 1024, 1024}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  for (const Problem& p : probs) {
    const bool a_kc = p.ta == 'T', b_kc = p.tb == 'N';
    const int lda = a_kc ? p.k : p.m, ldb = b_kc ? p.k : p.n, ldc = p.m;
    const size_t na = (size_t)p.m * p.k, nb = (size_t)p.k * p.n, nc = (size_t)p.m * p.n;
    std::vector<float> ha(na), hb(nb);
    for (auto& x : ha) x = U(rng);
    for (auto& x : hb) x = U(rng);
    float *A, *B, *C, *Cref, *W;
    double *dA, *dB, *dC;
    CK(cudaMalloc(&A, na * 4));
    CK(cudaMalloc(&B, nb * 4));
    CK(cudaMalloc(&C, nc * 4));
    CK(cudaMalloc(&Cref, nc * 4));
    CK(cudaMalloc(&W, nc * 4 * 8));
    CK(cudaMalloc(&dA, na * 8));
    CK(cudaMalloc(&dB, nb * 8));
    CK(cudaMalloc(&dC, nc * 8));
    CK(cudaMemcpy(A, ha.data(), na * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, hb.data(), nb * 4, cudaMemcpyHostToDevice));
    {
      std::vector<double> t(ha.begin(), ha.end());
      CK(cudaMemcpy(dA, t.data(), na * 8, cudaMemcpyHostToDevice));
      std::vector<double> u(hb.begin(), hb.end());
      CK(cudaMemcpy(dB, u.data(), nb * 8, cudaMemcpyHostToDevice));
    }
    const cublasOperation_t oa = a_kc ? CUBLAS_OP_T : CUBLAS_OP_N, ob = b_kc ? CUBLAS_OP_N : CUBLAS_OP_T;
    const float one = 1.f, zero = 0.f;
    const double d1 = 1.0, d0 = 0.0;
    // references: FP64 product of the same inputs, and cuBLAS SGEMM
    cublasDgemm(h, oa, ob, p.m, p.n, p.k, &d1, dA, lda, dB, ldb, &d0, dC, p.m);
    std::vector<double> href(nc);
    CK(cudaMemcpy(href.data(), dC, nc * 8, cudaMemcpyDeviceToHost));
    auto max_err = [&](const float* dev) {
      std::vector<float> hc(nc);
      CK(cudaMemcpy(hc.data(), dev, nc * 4, cudaMemcpyDeviceToHost));
      double e = 0;
      for (size_t i = 0; i < nc; ++i) {
        double d = std::fabs(hc[i] - href[i]);
        if (!(d <= 1e30)) return 1e30;  // NaN
        e = std::max(e, d);
      }
      return e / std::sqrt((double)p.k);
    };
    auto sgemm = [&] { cublasSgemm(h, oa, ob, p.m, p.n, p.k, &one, A, lda, B, ldb, &zero, Cref, p.m); };
    auto dgemm = [&] { cublasDgemm(h, oa, ob, p.m, p.n, p.k, &d1, dA, lda, dB, ldb, &d0, dC, p.m); };
    CK(cudaMemset(Cref, 0xff, nc * 4));
    sgemm();
    CK(cudaStreamSynchronize(stream));
    const double flop = 2.0 * p.m * p.n * p.k;
    const int reps = std::max(3, (int)std::min(200.0, 2e11 / flop));
    const float ts = time_ms(stream, reps, sgemm);
    const float td = time_ms(stream, reps, dgemm);
    printf("\n%c%c %dx%dx%d: cublasSgemm %.4f ms %.1f TFLOP/s err %.2e | cublasDgemm (fp64 data) %.4f ms\n",
           p.ta, p.tb, p.m, p.n, p.k, ts, flop / ts / 1e9, max_err(Cref), td);
    if (p.ta == 'T' && p.tb == 'T') continue;
    const auto& ks = kset[a_kc][b_kc];
    float best = 1e9;
    std::string best_name;
    for (const Kernel& kn : ks) {
      for (int splits : {1, 2, 4, 8}) {
        const long long tiles = (long long)((p.m + kn.bm - 1) / kn.bm) * ((p.n + kn.bn - 1) / kn.bn);
        if (splits > 1 && tiles * splits > 8 * sms) continue;
        if (splits > 1 && tiles >= 2 * sms) continue;
        const int chunk = ((p.k + splits - 1) / splits + 31) / 32 * 32;
        const int zs = (p.k + chunk - 1) / chunk;
        dim3 grid((p.m + kn.bm - 1) / kn.bm, (p.n + kn.bn - 1) / kn.bn, zs);
        auto run = [&] {
          kn.fn<<<grid, kn.threads, kn.smem, stream>>>(p.m, p.n, p.k, 1.f, A, lda, B, ldb, 0.f, C, ldc,
                                                      chunk, W);
          if (zs > 1) {
            const long long total = (long long)p.m * p.n;
            sum_splits<<<(total + 255) / 256, 256, 0, stream>>>(p.m, p.n, zs, W, 1.f, 0.f, C, ldc);
          }
        };
        CK(cudaMemset(C, 0xff, nc * 4));  // NaN poison
        run();
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(stream));
        const double err = max_err(C);
        const float t = time_ms(stream, reps, run);
        printf("  %-36s split %d: %.4f ms ratio %.3f err %.2e%s\n", kn.name.c_str(), zs, t, ts / t,
               err, err > 1e-5 ? "  WRONG" : "");
        if (err <= 1e-5 && t < best) {
          best = t;
          best_name = kn.name + " split " + std::to_string(zs);
        }
      }
    }
    printf("BEST %c%c %dx%dx%d: %s %.4f ms vs cuBLAS %.4f: ratio %.3f\n", p.ta, p.tb, p.m, p.n, p.k,
           best_name.c_str(), best, ts, ts / best);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(Cref); cudaFree(W);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
  }
  return 0;
}
