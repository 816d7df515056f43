// The TMA-fed wgmma family (MMA >= 4): tensor maps, TMA copies of the operands as stored and the
// split of B's small parts in shared memory, its kernel parameters and its main loop.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

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

// The family's own kernel parameters, the operands' tensor maps as the TMA reads them (A (m, k,
// product) or (k, m, product), B (k, n, product); grid constants, read where the launch put
// them), and how the kernel hands them to its main loop.
#define FAMILY_KERNEL_PARAMETERS \
  , const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b
#define FAMILY_LOOP_ARGUMENTS , map_a, map_b

// The family's main loop: this block's share of k, summed into acc in the fragment layout the
// epilogue reads (rows g and g + 8, lane_row). The producer warpgroup's threads hold no fragments:
// they leave the kernel here. The maps are the kernel's grid constants.
__device__ __forceinline__ void main_loop(float (&acc)[kFragM][kFragN], const TileWork& work,
                                          const TensorMap& map_a, const TensorMap& map_b) {
  float* const smem = work.smem;
  const long long product = work.product;
  const Batch& batch = work.batch;
  const int tid = work.tid, lane = work.lane, warp = work.warp, warp_m0 = work.warp_m0,
      warp_n0 = work.warp_n0, m0 = work.m0, n0 = work.n0, k_begin = work.k_begin,
      slices = work.slices;
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
    leave_kernel();  // the epilogue is the consumers' (its barriers count kThreads)
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
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e / 2][2 * jn + e % 2] = sums[4 * jn + e];
}

#endif  // MMA >= 4
