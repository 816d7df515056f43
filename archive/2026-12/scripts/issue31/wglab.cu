// A lab bench for the split TF32 wgmma kernel: gemm.cu compiled by nvcc with one config's -D
// options (as gemm_op.cpp would pass them), timed beside cuBLAS SGEMM on one problem, both checked
// against a cuBLAS DGEMM of the same inputs (C poisoned with NaN before each run). For kernel
// experiments on the GPU machine without the library: scripts/issue31/wglab.sh builds the variants.
//   wglab M N K [uniform|wide] [reps]
#include "../../templates/gemm/gemm.cu"

#include <cublas_v2.h>
#include <cuda.h>
#include <cstring>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__global__ void fill(float* x, long long n, unsigned seed, int wide) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    float v = (h & 0xFFFFFF) / 8388608.0f - 1.0f;
    if (wide) v = ldexpf(v, (int)((h >> 24) % 41) - 20);
    x[i] = v;
  }
}
__global__ void widen(const float* x, double* y, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) y[i] = x[i];
}
__global__ void poison(float* x, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    x[i] = __int_as_float(0x7fc00000);
}
// sums[0] += (c - ref)^2, sums[1] += ref^2
__global__ void diff(const float* c, const double* ref, long long n, double* sums) {
  double d = 0, r = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    const double e = (double)c[i] - ref[i];
    d += e * e, r += ref[i] * ref[i];
  }
  atomicAdd(sums, d), atomicAdd(sums + 1, r);
}

static double norm_error(const float* c, const double* ref, long long n) {
  double* sums;
  CHECK(cudaMalloc(&sums, 16));
  CHECK(cudaMemset(sums, 0, 16));
  diff<<<1024, 256>>>(c, ref, n, sums);
  double h[2];
  CHECK(cudaMemcpy(h, sums, 16, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(sums));
  return std::isnan(h[0]) ? INFINITY : std::sqrt(h[0] / h[1]);
}

#if MMA == 4
static TensorMap make_map(const float* base, int inner, int outer, int ld, int box_inner,
                          int box_outer) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  cuuint64_t strides[1] = {(cuuint64_t)ld * 4};
  cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer}, estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)base, dims,
                                      strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r), std::exit(1);
  TensorMap t;
  std::memcpy(&t, &m, sizeof t);
  return t;
}
#endif

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "wglab M N K [uniform|wide] [reps]\n"), 2;
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  const int wide = argc > 4 && std::string(argv[4]) == "wide";
  const int reps = argc > 5 ? atoi(argv[5]) : 20;
  const int lda = TRANS_A ? K : M, ldb = TRANS_B ? N : K;
  const long long na = (long long)M * K, nb = (long long)K * N, nc = (long long)M * N;
  float *A, *B, *C;
  double *Ad, *Bd, *Cd;
  CHECK(cudaMalloc(&A, na * 4));
  CHECK(cudaMalloc(&B, nb * 4));
  CHECK(cudaMalloc(&C, nc * 4));
  CHECK(cudaMalloc(&Ad, na * 8));
  CHECK(cudaMalloc(&Bd, nb * 8));
  CHECK(cudaMalloc(&Cd, nc * 8));
  fill<<<1024, 256>>>(A, na, 17, wide);
  fill<<<1024, 256>>>(B, nb, 91, wide);
  widen<<<1024, 256>>>(A, Ad, na);
  widen<<<1024, 256>>>(B, Bd, nb);
  cublasHandle_t h;
  cublasCreate(&h);
  const cublasOperation_t oa = TRANS_A ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t ob = TRANS_B ? CUBLAS_OP_T : CUBLAS_OP_N;
  const double one = 1, zero = 0;
  cublasDgemm(h, oa, ob, M, N, K, &one, Ad, lda, Bd, ldb, &zero, Cd, M);

  const size_t smem = MMA >= 3 ? kStages * (size_t)kWgStageBytes + 1024 : 0;
  CHECK(cudaFuncSetAttribute(KERNEL_NAME, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const float alpha = 1, beta = 0;
#if MMA == 4
  const TensorMap map_a = TRANS_A ? make_map(A, K, M, lda, 32, BM) : make_map(A, M, K, lda, 32, 32);
  const TensorMap map_b = make_map(B, K, N, ldb, 32, BN);
#endif
  auto ours = [&] {
    KERNEL_NAME<<<tiles, kBlockThreads, smem>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, M,
                                                 nullptr, 0, 0, 1
#if MMA == 4
                                                 , map_a, map_b
#endif
    );
  };
  auto theirs = [&] { cublasSgemm(h, oa, ob, M, N, K, &alpha, A, lda, B, ldb, &beta, C, M); };
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  auto time = [&](auto f) {
    poison<<<1024, 256>>>(C, nc);
    f();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const double err = norm_error(C, Cd, nc);
    for (int i = 0; i < 3; ++i) f();
    cudaEventRecord(e0);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    return std::make_pair(ms / reps, err);
  };
  const auto [ms, err] = time(ours);
  const auto [cms, cerr] = time(theirs);
  const double flop = 2.0 * M * N * K;
  std::printf("%s%s %dx%dx%d %s  ours %.4f ms %.1f TF  cublas %.4f ms %.1f TF  ratio %.3f  err %.2e"
              " cublas %.2e (%.2fx)  %s\n",
              TRANS_A ? "T" : "N", TRANS_B ? "T" : "N", M, N, K, wide ? "wide" : "uniform", ms,
              flop / ms / 1e9, cms, flop / cms / 1e9, cms / ms, err, cerr, err / cerr,
              VARIANT_NAME);
  return 0;
}
