// The entropy reference on the device, for checking candidates on large problems (the CPU
// reference, entropy_cpu.cpp, checks this one and the small edge problems): one thread per output,
// counts in a local array, sums and logarithms in double, nothing shared with entropy.cu.

template <typename Input>
__device__ void reference(long long rows, long long cols, int radius, const Input* in,
                          long long ld_in, float* out, long long ld_out) {
  int counts[256];
  for (int v = 0; v < 256; ++v) counts[v] = 0;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * cols;
       e += (long long)gridDim.x * blockDim.x) {
    const long long i = e % rows, j = e / rows;
    const long long r0 = max(i - radius, 0LL), r1 = min(i + radius, rows - 1);
    const long long c0 = max(j - radius, 0LL), c1 = min(j + radius, cols - 1);
    for (long long c = c0; c <= c1; ++c) {
      for (long long r = r0; r <= r1; ++r) ++counts[(int)in[r + c * ld_in]];
    }
    // Each level's term once: its count is cleared when first met.
    double s = 0;
    for (long long c = c0; c <= c1; ++c) {
      for (long long r = r0; r <= r1; ++r) {
        const int v = (int)in[r + c * ld_in];
        const double k = counts[v];
        if (k > 0) s += k * log(k);
        counts[v] = 0;
      }
    }
    const double n = (double)((r1 - r0 + 1) * (c1 - c0 + 1));
    out[i + j * ld_out] = (float)(log(n) - s / n);
  }
}

extern "C" __global__ void tuned_entropy_reference_f32(long long rows, long long cols, int radius,
                                                       const float* in, long long ld_in, float* out,
                                                       long long ld_out) {
  reference(rows, cols, radius, in, ld_in, out, ld_out);
}

extern "C" __global__ void tuned_entropy_reference_u8(long long rows, long long cols, int radius,
                                                      const unsigned char* in, long long ld_in,
                                                      float* out, long long ld_out) {
  reference(rows, cols, radius, in, ld_in, out, ld_out);
}
