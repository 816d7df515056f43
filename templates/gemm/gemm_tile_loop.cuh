// The FFMA and mma.sync families' main loop (MMA = 0, 1, 2): k slices staged in shared memory
// (PIPE: one stage, two with register prefetch, or cp.async stages), multiplied by FFMA or
// mma.sync fragments.
// Included by gemm.cu (inside its anonymous namespace where it includes it), after the headers
// before it; not a translation unit of its own.

#if GEMV == 0 && MMA <= 2
// The main loop of the FFMA and mma.sync families: this block's share of k, slice by slice
// through shared memory (PIPE), summed into acc (FFMA directly, MMA in its own sums, converted
// at the end: element e of tile (im, jn) at acc[2 im + e / 2][2 jn + e % 2]).
__device__ __forceinline__ void main_loop(float (&acc)[kFragM][kFragN], const TileWork& work) {
  float* const smem = work.smem;
  const float* a_tile = work.a_tile;
  const float* b_tile = work.b_tile;
  const long long a_step = work.a_step;
  const long long b_step = work.b_step;
  const int tid = work.tid, warp_m0 = work.warp_m0, warp_n0 = work.warp_n0, lane_m = work.lane_m,
            lane_n = work.lane_n, m_left = work.m_left, n_left = work.n_left,
            k_begin = work.k_begin, k_end = work.k_end, slices = work.slices, lda = work.lda,
            ldb = work.ldb;
  float* a_smem = smem;                           // kStages x kATileFloats
  float* b_smem = smem + kStages * kATileFloats;  // kStages x kBTileFloats

  ALoader a_loader;
  BLoader b_loader;
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
    float f[4];                                    // f[2s + h]: row r + h, k slot s
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
}

#endif  // GEMV == 0 && MMA <= 2
