// Verification kernels: fresh random inputs, and the comparison of an output with a reference.
// Compiled by NVRTC like every template; they take no tuning parameters.

// Counter-based hash -> uniform float in [lo, hi): any element of any seed, in any order.
__device__ __forceinline__ float uniform_at(unsigned long long seed, unsigned long long i, float lo,
                                            float hi) {
  unsigned long long x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  const float u = (x >> 40) * (1.0f / 16777216.0f);  // 24 random bits
  return lo + (hi - lo) * u;
}

extern "C" __global__ void tuned_fill_uniform(float* p, unsigned long long n,
                                              unsigned long long seed, float lo, float hi) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    p[i] = uniform_at(seed, i, lo, hi);
  }
}

// Wide-range values: uniform in [-1, 1) times 2^(r + e), r drawn per row (element i of a
// column-major matrix of leading dimension ld is in row i % ld) and e per element, each an integer
// in [-spread / 2, spread / 2]: exponents spread over 2^+-spread within the matrix and between its
// rows, where an arithmetic that loses a small part's bits shows.
extern "C" __global__ void tuned_fill_wide(float* p, unsigned long long n, unsigned long long ld,
                                           unsigned long long seed, int spread) {
  const int half = spread / 2;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const int r = min((int)uniform_at(seed + 1, i % ld, 0.0f, 2.0f * half + 1.0f), 2 * half);
    const int e = min((int)uniform_at(seed + 2, i, 0.0f, 2.0f * half + 1.0f), 2 * half);
    p[i] = ldexpf(uniform_at(seed, i, -1.0f, 1.0f), r + e - 2 * half);
  }
}

// n integer levels uniform in [0, levels), as FP32 or as bytes (the entropy op's inputs).
extern "C" __global__ void tuned_fill_levels_f32(float* p, unsigned long long n,
                                                 unsigned long long seed, int levels) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    p[i] = fminf(floorf(uniform_at(seed, i, 0.0f, (float)levels)), (float)(levels - 1));
  }
}
extern "C" __global__ void tuned_fill_levels_u8(unsigned char* p, unsigned long long n,
                                                unsigned long long seed, int levels) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    p[i] = (unsigned char)fminf(floorf(uniform_at(seed, i, 0.0f, (float)levels)), (float)(levels - 1));
  }
}

// Compares the rows x cols column-major matrices out (leading dim ld_out) and ref (ld_ref):
// sums[0] += sum (out - ref)^2, sums[1] += sum ref^2 in double; counts[0] += elements still holding
// the poison bit pattern (never written), counts[1] += other NaN or Inf elements, counts[2] +=
// elements further than abs_tolerance from the reference; counts[3] = max |out - ref| (as the bits
// of a non-negative double, which order like the values).
extern "C" __global__ void tuned_compare(const float* out, long long ld_out, const float* ref,
                                         long long ld_ref, long long rows, long long cols,
                                         unsigned int poison_bits, double abs_tolerance,
                                         double* sums, unsigned long long* counts) {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  unsigned long long unwritten = 0, nonfinite = 0, beyond = 0;
  const long long n = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i % rows, c = i / rows;
    const float o = out[c * ld_out + r];
    const double x = ref[c * ld_ref + r];
    if (__float_as_uint(o) == poison_bits) {
      ++unwritten;
    } else if (!isfinite(o)) {
      ++nonfinite;
    } else {
      const double d = fabs((double)o - x);
      diff2 += d * d;
      max_abs = fmax(max_abs, d);
      beyond += d > abs_tolerance;
    }
    ref2 += x * x;
  }
  // Block reduction, then one atomic per block.
  __shared__ double s_diff[256], s_ref[256];
  __shared__ unsigned long long s_unwritten[256], s_nonfinite[256], s_beyond[256];
  const int t = threadIdx.x;
  s_diff[t] = diff2;
  s_ref[t] = ref2;
  s_unwritten[t] = unwritten;
  s_nonfinite[t] = nonfinite;
  s_beyond[t] = beyond;
  atomicMax(&counts[3], (unsigned long long)__double_as_longlong(max_abs));
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      s_diff[t] += s_diff[t + stride];
      s_ref[t] += s_ref[t + stride];
      s_unwritten[t] += s_unwritten[t + stride];
      s_nonfinite[t] += s_nonfinite[t + stride];
      s_beyond[t] += s_beyond[t + stride];
    }
    __syncthreads();
  }
  if (t == 0) {
    atomicAdd(&sums[0], s_diff[0]);
    atomicAdd(&sums[1], s_ref[0]);
    atomicAdd(&counts[0], s_unwritten[0]);
    atomicAdd(&counts[1], s_nonfinite[0]);
    atomicAdd(&counts[2], s_beyond[0]);
  }
}
