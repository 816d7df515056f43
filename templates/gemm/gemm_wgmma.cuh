// Shared by the wgmma families (MMA >= 3, sm_90a): stage sizes, register budgets, swizzled
// shared-memory descriptors, mbarriers and the wgmma instructions themselves.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

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

// Ends this thread (a producer done with its slices) from inside a main loop, as a return from the
// kernel would: with a return to the kernel body instead, the producers' path joined the
// consumers' and ptxas kept their sums live in the producers' few registers (spills).
__device__ __forceinline__ void leave_kernel() {
  asm volatile("exit;\n" ::: "memory");
  __builtin_unreachable();
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
