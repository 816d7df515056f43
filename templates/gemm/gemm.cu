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
#include "gemm_tile_loop.cuh"

#if MMA >= 3
#include "gemm_wgmma.cuh"
#include "gemm_wgmma_rf.cuh"
#include "gemm_wgmma_tma.cuh"
#endif  // MMA >= 3

#include "gemm_epilogue.cuh"

// The families without kernel parameters of their own (gemm_wgmma_tma.cuh defines its maps).
#ifndef FAMILY_KERNEL_PARAMETERS
#define FAMILY_KERNEL_PARAMETERS
#define FAMILY_LOOP_ARGUMENTS
#endif

}  // namespace

#if GEMV == 0

extern "C" __global__ void __launch_bounds__(kBlockThreads, MINB)
    KERNEL_NAME(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
                const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc,
                float* __restrict__ workspace, int split_mode, int tail_first, int split_count,
                Batch batch, Epilogue epi FAMILY_KERNEL_PARAMETERS) {
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
  const float* a_tile =
      TRANS_A ? A + (long long)m0 * lda + k_begin : A + m0 + (long long)k_begin * lda;
  const float* b_tile =
      TRANS_B ? B + n0 + (long long)k_begin * ldb : B + (long long)n0 * ldb + k_begin;
  const long long a_step = TRANS_A ? BK : (long long)BK * lda;
  const long long b_step = TRANS_B ? (long long)BK * ldb : BK;

  // The family's main loop (gemm_tile_loop.cuh, gemm_wgmma_rf.cuh, gemm_wgmma_tma.cuh): this
  // block's product over its share of k in acc; the threads that hold no fragments (the wgmma
  // families' producers) end there.
  float acc[kFragM][kFragN];
  const TileWork work{smem,   tid,    lane,   warp,   warp_m0, warp_n0, lane_m, lane_n,
                      m0,     n0,     m_left, n_left, k_begin, k_end,   slices, a_tile,
                      b_tile, a_step, b_step, lda,    ldb,     product, batch};
  main_loop(acc, work FAMILY_LOOP_ARGUMENTS);

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
          for (int e = 0; e < C_VEC; ++e) out.v[e] = fmaf(beta, old.v[e], alpha * out.v[e]);
        } else {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = alpha * out.v[e];
        }
        if (finishes(epi)) {
#pragma unroll
          for (int e = 0; e < C_VEC; ++e) out.v[e] = finish(out.v[e], epi, m0 + m + e, n0 + n);
        }
        *reinterpret_cast<Vec<C_VEC>*>(c) = out;
      } else {
#pragma unroll
        for (int e = 0; e < C_VEC; ++e) {
          if (m + e < m_left) store_c(c + e, alpha, out.v[e], beta, epi, m0 + m + e, n0 + n);
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
  if constexpr (EPILOGUE != 0) {
    fused_epilogue<kCVec>(acc, C, ldc, alpha, beta, epi, warp_m0, warp_n0, lane_m, lane_n, m0, n0,
                          m_left, n_left);
  } else {
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
            const int m = warp_m0 + wm * LM * TM + lane_row(lane_m, i);
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
                  store_c(c_col + m + e, alpha, acc[wm * TM + i + e][wn * TN + j], beta, epi,
                          m0 + m + e, n0 + n);
                }
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
