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

#include "gemm_params.cuh"

namespace {

#include "gemm_tiles.cuh"
#include "gemm_mma_sync.cuh"

#if MMA >= 3
#include "gemm_wgmma.cuh"
#include "gemm_wgmma_rf.cuh"
#include "gemm_wgmma_tma.cuh"
#endif  // MMA >= 3

#include "gemm_epilogue.cuh"

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

  // With beta == 0 (every call from torch) the bias and activation, alpha with them, are applied
  // to the whole fragment in registers before any store: applied between the bounds-checked
  // stores below, each value's activation (an erf is ~20 dependent instructions) ran by itself,
  // latency-bound at one or two warpgroups per SM. Then the stores write what they are given.
  Epilogue rest = epi;  // what the stores still apply
  float scale = alpha;
  if constexpr (EPILOGUE != 0) {
    if (beta == 0.0f && finishes(epi)) {
      const bool by_row = epi.bias_kind == kBiasRow, by_column = epi.bias_kind == kBiasColumn;
      float row_bias[kFragM];
#pragma unroll
      for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
          const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
          row_bias[wm * TM + i] = by_row && m < m_left ? __ldg(epi.bias + m0 + m) : 0.0f;
        }
      const bool activates = kActivation != 0 && epi.activation != 0;
      // Column by column: a column's bias is live for its kFragM values only (all of a wide
      // tile's at once cost the TMA-fed kernels spills).
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn)
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
          const int n = warp_n0 + wn * kLN * TN + lane_n * TN + jj, j = wn * TN + jj;
          const float column_bias = by_column && n < n_left ? __ldg(epi.bias + n0 + n) : 0.0f;
#pragma unroll
          for (int i = 0; i < kFragM; ++i) {
            // (The sums in the order of the stores' finish: bit for bit the same C.)
            float v = alpha * acc[i][j];
            v += row_bias[i] + column_bias;
            acc[i][j] = activates ? apply_activation(v) : v;
          }
        }
      rest = Epilogue{nullptr, 0, 0, 0};
      scale = 1.0f;
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
          for (int e = 0; e < C_VEC; ++e) out.v[e] = fmaf(beta, old.v[e], scale * out.v[e]);
        } else {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = scale * out.v[e];
        }
        if (finishes(rest)) {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = finish(out.v[e], rest, m0 + m + e, n0 + n);
        }
        *reinterpret_cast<Vec<C_VEC>*>(c) = out;
      } else {
#pragma unroll
        for (int e = 0; e < C_VEC; ++e) {
          if (m + e < m_left) store_c(c + e, scale, out.v[e], beta, rest, m0 + m + e, n0 + n);
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
  const bool biased = EPILOGUE != 0 && rest.bias_kind != 0;
  const bool by_column = EPILOGUE != 0 && rest.bias_kind == kBiasColumn;
  const bool activates = kActivation != 0 && rest.activation != 0;
  float row_bias[kWMIter * TM];
#pragma unroll
  for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
      row_bias[wm * TM + i] = EPILOGUE != 0 && rest.bias_kind == kBiasRow && m < m_left
                                  ? __ldg(rest.bias + m0 + m)
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
        const float column_bias = by_column ? __ldg(rest.bias + n0 + n) : 0.0f;
#pragma unroll
        for (int i = 0; i < TM; i += kCVec) {
          const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
          Vec<kCVec> out;
#pragma unroll
          for (int e = 0; e < kCVec; ++e) out.v[e] = scale * acc[wm * TM + i + e][wn * TN + j];
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
                store_c(c_col + m + e, scale, acc[wm * TM + i + e][wn * TN + j], beta, rest,
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

#include "gemm_gemv.cuh"

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
