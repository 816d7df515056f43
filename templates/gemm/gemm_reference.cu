// The GEMM's accuracy reference: op(A) op(B) in FP64 at a sample of C's rows and columns, read
// straight from the float operands (a product of two floats is exact in double; the sums are
// FP64), and the normwise error of a float C on that sample. Compiled by NVRTC like every
// template; no tuning parameters. Column-major, cuBLAS conventions:
//   A(i, l) = trans_a ? a[l + i * lda] : a[i + l * lda]
//   B(l, j) = trans_b ? b[j + l * ldb] : b[l + j * ldb]

#define SAMPLE_TILE 16  // sampled rows (and columns) per block: 16 x 16 threads
#define K_CHUNK 32      // steps of k staged in shared memory at a time

// ref[r + c * nr] = sum_l A(rows[r], l) * B(l, cols[c]) in double, for r < nr, c < nc.
extern "C" __global__ void tuned_gemm_fp64_sample(const float* a, long long lda, int trans_a,
                                                  const float* b, long long ldb, int trans_b,
                                                  long long k, const long long* rows, int nr,
                                                  const long long* cols, int nc, double* ref) {
  __shared__ double sa[SAMPLE_TILE][K_CHUNK + 1];  // (sampled row, step of k)
  __shared__ double sb[SAMPLE_TILE][K_CHUNK + 1];  // (sampled column, step of k)
  const int tx = threadIdx.x % SAMPLE_TILE, ty = threadIdx.x / SAMPLE_TILE;
  const int r0 = blockIdx.x * SAMPLE_TILE, c0 = blockIdx.y * SAMPLE_TILE;
  double acc = 0;
  for (long long l0 = 0; l0 < k; l0 += K_CHUNK) {
    // Steps of k fastest: coalesced where the operand is k-contiguous.
    for (int e = threadIdx.x; e < SAMPLE_TILE * K_CHUNK; e += blockDim.x) {
      const int s = e / K_CHUNK, kk = e % K_CHUNK;
      const long long l = l0 + kk;
      double va = 0, vb = 0;
      if (l < k && r0 + s < nr) {
        const long long i = rows[r0 + s];
        va = trans_a ? a[l + i * lda] : a[i + l * lda];
      }
      if (l < k && c0 + s < nc) {
        const long long j = cols[c0 + s];
        vb = trans_b ? b[j + l * ldb] : b[l + j * ldb];
      }
      sa[s][kk] = va;
      sb[s][kk] = vb;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < K_CHUNK; ++kk) acc = fma(sa[ty][kk], sb[tx][kk], acc);
    __syncthreads();
  }
  if (r0 + ty < nr && c0 + tx < nc) ref[(r0 + ty) + (long long)(c0 + tx) * nr] = acc;
}

// sums[0] += sum (c - ref)^2 and sums[1] += sum ref^2 over the sample; sums[2] += the sampled
// elements of c that are NaN or Inf.
extern "C" __global__ void tuned_gemm_sample_error(const float* c, long long ldc,
                                                   const long long* rows, int nr,
                                                   const long long* cols, int nc,
                                                   const double* ref, double* sums) {
  double diff2 = 0, ref2 = 0, nonfinite = 0;
  const long long n = (long long)nr * nc;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long r = e % nr, col = e / nr;
    const float o = c[rows[r] + cols[col] * ldc];
    const double x = ref[e];
    if (isfinite(o)) {
      const double d = (double)o - x;
      diff2 += d * d;
    } else {
      nonfinite += 1;
    }
    ref2 += x * x;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    diff2 += __shfl_down_sync(0xffffffffu, diff2, offset);
    ref2 += __shfl_down_sync(0xffffffffu, ref2, offset);
    nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], diff2);
    atomicAdd(&sums[1], ref2);
    atomicAdd(&sums[2], nonfinite);
  }
}
