// The mma.sync families (MMA = 1: FP64 tensor cores; MMA = 2: split TF32): fragments, their
// conversions and the warp-level products.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

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
