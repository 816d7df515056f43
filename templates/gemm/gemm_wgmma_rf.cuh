// The register-fed wgmma family (MMA = 3): operands reach shared memory through registers, split
// into big and small TF32 parts on the way (SplitLoader), and its main loop.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

#if MMA == 3
// One operand's ROWS x BK slice (A: rows m; B: rows n), global -> registers -> split shared
// tiles. KCONTIG: element (r, k) at base[r * ld + k], moved as 1 x 4 units (4 floats of k); else
// at base[k * ld + r], moved as 4 x 4 units (four rows' runs at 4 steps of k, transposed in
// registers) so a unit's rows are stored as whole 16-byte chunks. Consecutive threads take
// consecutive 4-float quads of k: eight of them fill distinct chunks of a row (no bank conflicts).
// Rows adjacent with VEC = 4 instead (kRowsFirst): eight consecutive threads take eight
// consecutive units of rows (one 128-byte run of each k), the next eight the next quad of k, so a
// warp's vector loads touch four lines instead of eight, and its stores (rows r % 8 in two
// classes, four quads) still fill eight distinct chunks of the banks per pass. On the H100 that
// made NN and NT 2048^3-4096^3 9-17 % faster; with scalar loads it was 10 % slower (skinny NT).
// With narrower loads (VEC < 4: rows not 16-byte aligned) and one consumer warpgroup, the lanes
// of a warp take 32 adjacent rows instead (kLanesAlongRows), each reading its row's 4 steps of k
// one float at a time: a warp's load touches one or two lines where the units above touch 8-16
// (the L1 ran at 88 % of its throughput on NT 399x193x9204), and its 16-byte stores, a quarter warp
// at a time, fill eight distinct chunks of the swizzle. On the H100 that made skinny long-k NT and
// TT products with 64 x 64 tiles 5-14 % faster (NN too at MINB = 2; at MINB = 1 its producer took
// 154 registers, one block per SM, 35 % slower); with two or more consumer warpgroups (64 x 128,
// 128 x 128) it was 5-20 % slower, cause not established, so those keep the units above.
// PERMUTE (A): row 2g + h of each 16 is stored at g + 8h, so the wgmma's row g + 8h holds the
// fragment rows 2g + h (the other MMA kernels' fragment layout, which the epilogue reads).
template <int ROWS, bool KCONTIG, bool PERMUTE>
struct SplitLoader {
  static constexpr bool kRowsFirst = !KCONTIG && VEC == 4;
  static constexpr bool kLanesAlongRows = !KCONTIG && VEC < 4 && kThreads == 128;
  static constexpr int kUnitRows = KCONTIG || kLanesAlongRows ? 1 : 4;
  static constexpr int kQuads = BK / 4;
  static constexpr int kUnits = ROWS / kUnitRows * kQuads;
  static constexpr int kLoads = (kUnits + kProducers - 1) / kProducers;
  float reg[kLoads][kUnitRows][4];  // [load][row][k]

  static_assert(!kRowsFirst || ROWS % 32 == 0, "rows first: units in runs of eight (32 rows)");
  // Lanes along rows: each warp's lanes take 32 adjacent rows of kRowGroups, the four producer
  // warps four quads of k, so a thread's loads fall on 4 * BK / 16 steps of k.
  static constexpr int kRowGroups = ROWS / 32;
  static_assert(!kLanesAlongRows || (ROWS % 32 == 0 && kQuads % 4 == 0 && kProducers == 128),
                "lanes along rows: 32 rows per warp, four warps along k");

  __device__ __forceinline__ static bool exists(int u) {
    return kUnits % kProducers == 0 || u < kUnits;
  }
  // Unit u's first row and first step of k (see above).
  __device__ __forceinline__ static int unit_row(int u) {
    if constexpr (kLanesAlongRows) {
      // Load l's rows: lane + 32 (l % kRowGroups), so a thread's loads at one k differ by
      // immediate offsets. PERMUTE: lane i of each 16 takes the row the store puts at i (so the
      // stores are conflict-free).
      const int r = u % 32 + 32 * (u / kProducers % kRowGroups);
      return PERMUTE ? (r & ~15) | ((r & 7) << 1) | ((r >> 3) & 1) : r;
    }
    return kRowsFirst ? (u % 8 + u / (8 * kQuads) * 8) * kUnitRows : u / kQuads * kUnitRows;
  }
  __device__ __forceinline__ static int unit_k(int u) {
    if constexpr (kLanesAlongRows) return (u / 32 % 4 + 4 * (u / kProducers / kRowGroups)) * 4;
    return kRowsFirst ? u / 8 % kQuads * 4 : u % kQuads * 4;
  }
  // Four consecutive floats from p, of which the first `valid` exist (the rest are zero), VEC
  // wide where all four do.
  __device__ __forceinline__ static void run4(float (&dst)[4], const float* p, int valid) {
    if (valid >= 4) {
      if constexpr (VEC == 4) {
        const Vec<4> x = *reinterpret_cast<const Vec<4>*>(p);
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[e] = x.v[e];
        return;
      } else if constexpr (VEC == 2) {
        const Vec<2> x = *reinterpret_cast<const Vec<2>*>(p);
        const Vec<2> y = *reinterpret_cast<const Vec<2>*>(p + 2);
        dst[0] = x.v[0], dst[1] = x.v[1], dst[2] = y.v[0], dst[3] = y.v[1];
        return;
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) dst[e] = e < valid ? p[e] : 0.0f;
  }

  // base: the slice's first element; r_left / k_left: valid rows and steps of k from there on.
  __device__ __forceinline__ void load(const float* __restrict__ base, long long ld, int r_left,
                                       int k_left, int tid) {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int u = tid + l * kProducers;
      const int k = unit_k(u);
      const int r = unit_row(u);
      const bool in = exists(u);
      if constexpr (KCONTIG || kLanesAlongRows) {
        // One row's 4 steps of k: adjacent (KCONTIG), else ld apart, read one float at a time.
        const int valid = in && r < r_left ? min(max(k_left - k, 0), 4) : 0;
        if constexpr (KCONTIG) {
          run4(reg[l][0], base + (valid > 0 ? r * ld + k : 0), valid);
        } else {
          const float* p = base + (valid > 0 ? k * ld + r : 0);
#pragma unroll
          for (int e = 0; e < 4; ++e) reg[l][0][e] = e < valid ? p[e * ld] : 0.0f;
        }
      } else {
        const int valid_r = in ? min(max(r_left - r, 0), 4) : 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float run[4];
          const bool k_in = k + e < k_left && valid_r > 0;
          run4(run, base + (k_in ? (k + e) * ld + r : 0), k_in ? valid_r : 0);
#pragma unroll
          for (int j = 0; j < 4; ++j) reg[l][j][e] = run[j];
        }
      }
    }
  }

  // Writes the registers' big and small TF32 parts (round to nearest) to the two tiles.
  __device__ __forceinline__ void store(char* __restrict__ big, char* __restrict__ small,
                                        int tid) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int u = tid + l * kProducers;
      if (!exists(u)) continue;
      const int k = unit_k(u);
#pragma unroll
      for (int j = 0; j < kUnitRows; ++j) {
        int r = unit_row(u) + j;
        if constexpr (PERMUTE) r = (r & ~15) | ((r & 15) >> 1) | ((r & 1) << 3);
        unsigned b[4], s[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          b[e] = tf32_big(reg[l][j][e]);
          s[e] = to_tf32(reg[l][j][e] - __uint_as_float(b[e]));
        }
        const int offset = wg_offset<ROWS>(r, k);
        *reinterpret_cast<uint4*>(big + offset) = make_uint4(b[0], b[1], b[2], b[3]);
        *reinterpret_cast<uint4*>(small + offset) = make_uint4(s[0], s[1], s[2], s[3]);
      }
    }
  }
};

// The family's main loop: this block's share of k, summed into acc in the fragment layout the
// epilogue reads (element e of n tile jn at acc[e / 2][2 jn + e % 2]). The producer
// warpgroup's threads hold no fragments: they leave the kernel here.
__device__ __forceinline__ void main_loop(float (&acc)[kFragM][kFragN], const TileWork& work) {
  float* const smem = work.smem;
  const float* a_tile = work.a_tile;
  const float* b_tile = work.b_tile;
  const long long a_step = work.a_step;
  const long long b_step = work.b_step;
  const int tid = work.tid, warp = work.warp, warp_m0 = work.warp_m0, warp_n0 = work.warp_n0,
      m_left = work.m_left, n_left = work.n_left, k_begin = work.k_begin, k_end = work.k_end,
      slices = work.slices, lda = work.lda, ldb = work.ldb;
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
    leave_kernel();  // the epilogue is the consumers' (its barriers count kThreads)
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
#pragma unroll
  for (int jn = 0; jn < WN / 8; ++jn)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e / 2][2 * jn + e % 2] = sums[4 * jn + e];
}

#endif  // MMA == 3
