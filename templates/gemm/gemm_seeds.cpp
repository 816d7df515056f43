// Where a GEMM search starts: the default config (the classic tile sized to the problem) and the
// op's seed families, each as the op serves it on the problem.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "templates/extent.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/math_family.hpp"

namespace tuned::gemm_op {

namespace {

// Known-good families (measured on H100/H200, and CUTLASS's best SIMT shapes), tried first so
// the search starts in a good region: large register tiles with register prefetch or cp.async
// pipelines, medium tiles, and small or split-K tiles for shapes with few tiles.
const char* const kFamilies[] = {
    // The best NT and TT tiles, reading B transposed into the workspace (NN and TN, large m),
    // and the best large NN tile found on an H200.
    "GEMV=0,BM=128,BN=256,BK=16,WM=128,WN=32,TM=4,TN=8,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=128,BK=16,WM=128,WN=32,TM=8,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=4,SWZ=4,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=256,BK=16,WM=32,WN=128,TM=4,TN=4,LM=2,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=1,SWZ=0,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=256,BN=128,BK=16,WM=32,WN=128,TM=8,TN=8,LM=4,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=256,BN=128,BK=16,WM=128,WN=32,TM=4,TN=8,LM=16,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=256,BN=128,BK=8,WM=64,WN=64,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=256,BK=8,WM=64,WN=64,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
    "PIPE=3,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=128,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
    "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=4,TN=4,LM=4,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=32,BN=32,BK=16,WM=16,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=2,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=32,BN=32,BK=32,WM=16,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0",
    // Skinny products (n or m of 64-128 against thousands): tall or wide tiles, few splits.
    "GEMV=0,BM=256,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=256,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=2,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=2,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=64,BN=256,BK=16,WM=32,WN=64,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=64,BN=128,BK=16,WM=32,WN=64,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=2,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=2,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=1,SPLITK=4,PACK=0,REDUCE=0,TAIL=0",
    // Operands kept k-contiguous in shared memory (AKM/BKM = 0: no transpose on the way in,
    // fragments read four steps of k at once): the best measured for a medium NN product
    // (1000^3) and for a skinny TN one (16384x64x8192, both operands k-contiguous).
    "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=1,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=16,"
    "PIPE=4,SWZ=8,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=1,TN=1,LM=8,VEC=4,PAD=4,AKM=0,BKM=0,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0",
    // Long k under a small output: many splits, summed by a second pass.
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=2,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=0,UNROLL=16,PIPE=2,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=128,PACK=0,REDUCE=1,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=2,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=0,UNROLL=16,PIPE=2,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=64,PACK=0,REDUCE=1,TAIL=0",
    "GEMV=0,BM=128,BN=64,BK=32,WM=32,WN=64,TM=4,TN=4,LM=2,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=4,PIPE=4,"
    "SWZ=0,MINB=1,PRETB=0,SPLITK=128,PACK=0,REDUCE=1,TAIL=0",
    "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=64,PACK=0,REDUCE=1,TAIL=0",
    "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=0,UNROLL=8,PIPE=3,"
    "SWZ=0,MINB=2,PRETB=0,SPLITK=128,PACK=0,REDUCE=1,TAIL=0",
    "GEMV=0,BM=128,BN=128,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=128,PACK=0,REDUCE=1,TAIL=0",
    // FP64 tensor cores (MMA = 1; sm_90+), the best of a first probe on an H100
    // (archive/2026-12/docs/experiments/gemm_dmma_probe.cu): 64x64 tiles for medium products
    // (1000^3, 3000^3, TN 1024^3), 128x64 with split-K for skinny ones (TN 16384x64x8192). AKM
    // and BKM are set from the layout below (operands as stored).
    "GEMV=0,BM=64,BN=64,BK=16,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=128,BN=32,BK=16,WM=32,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=1",
    // Split TF32 on wgmma (MMA = 3; sm_90a), the best of the first probes on an H200 (issue 31:
    // 1.24-1.35x cuBLAS at 4096^3 and 8192^3 in every layout): 128x128 tiles of two consumer
    // warpgroups, and 64-row and 64-column variants for products with fewer tiles.
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    "GEMV=0,BM=64,BN=128,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0,MMA=3,KSUM=1",
    // Split TF32 on wgmma fed by the TMA (MMA = 4; sm_90a; PRETB set by the layout), the best of
    // the lab runs on an H100 (archive/2026-12/scripts/issue31/wglab.sh: 128 x 128, 4 stages,
    // 8-row groups: 4096^3 NN 103 TFLOP/s, 2.0x cuBLAS), and smaller tiles and splits for fewer
    // tiles.
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=3,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
    "GEMV=0,BM=64,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
    "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=4,KSUM=1",
};

// The variants of one family the search starts from: packed and narrowed for unaligned operands,
// with the summing pass spread and the last wave split, FFMA with its k slices summed apart, the
// TF32 compute type's plain form of a TMA-fed family, an FP64 tensor-core family in split TF32.
template <typename Add>
void add_family_variants(Config c, const Problem& problem, const Add& add) {
  // Unaligned operands: each family packed (wide vectors kept) and narrowed (no copies).
  Config packed = c;
  packed.set("PACK", 1);
  add(packed);
  c.set("VEC", std::min(c.get("VEC"), problem.alignment));
  add(c);
  // Split families also with the summing pass spread over many blocks, the others with their
  // last wave's tiles split.
  Config spread = c;
  spread.set("REDUCE", 1);
  add(spread);
  Config tail = c;
  tail.set("TAIL", 1);
  add(tail);
  // FFMA families also with each k slice summed apart (the accuracy contract may refuse the
  // single chain).
  if (!is_mma(c)) {
    Config slices = c;
    slices.set("KSUM", 1);
    add(slices);
  }
  // TMA-fed split TF32 families also in plain TF32 (the TF32 compute type's).
  if (is_tma(c)) add(for_compute(c, problem));
  // FP64 tensor-core families also in split TF32, in one chain and in partial chains.
  if (sums_in_double(c)) {
    Config tf32 = c;
    tf32.set("MMA", 2);
    add(tf32);
    tf32.set("KSUM", 1);
    add(tf32);
  }
  if (packed.get("VEC") > c.get("VEC")) {
    packed.set("TAIL", 1);
    add(packed);
  }
}

// m or n up to 16: the matrix-vector kernel, with and without splitting k, its columns the
// fewest that hold the product's.
template <typename Add>
void add_gemv_seeds(const Problem& problem, const Add& add) {
  if (std::min(problem.m, problem.n) > kGemvMaxCols) return;
  const int64_t vectors = problem.n <= kGemvMaxCols ? problem.n : problem.m;
  const int cols = static_cast<int>(pow2_at_least(std::max<int64_t>(1, vectors)));
  // Vectors of 4 wherever the operands allow them (the class counts C, which the kernel writes
  // one float at a time), and of the class's width.
  for (int vec : {4, problem.alignment}) {
    for (int rows : {32, 64, 128}) {
      for (int splits : {1, 4, 16}) add(gemv_config(rows, vec, splits, cols));
    }
  }
}

}  // namespace

Config default_config(const DeviceInfo& device, const Problem& problem) {
  // The classic 128x128x8 tile with 8x8 per thread (two strided 4x4 sub-tiles each way) for
  // problems that fill the GPU; smaller tiles where there would be too few blocks.
  const Config large = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0");
  const Config medium = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=1,"
      "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0");
  const Config small = Config::parse(
      "GEMV=0,BM=32,BN=32,BK=8,WM=16,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=1,"
      "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0");
  // (A batch's products share the waves.)
  const double products = static_cast<double>(problem.batch);
  const double blocks_large =
      static_cast<double>((problem.m + 127) / 128) * ((problem.n + 127) / 128) * products;
  const double blocks_medium =
      static_cast<double>((problem.m + 63) / 64) * ((problem.n + 63) / 64) * products;
  const int sms = std::max(1, device.sm_count);
  const Config& tile = blocks_large >= sms ? large : blocks_medium >= sms ? medium : small;
  Config pick = with_absent_params(tile, parameters());
  // The accuracy contract: k summed in partial chains past kMaxFfmaSum (the large tile's 64
  // accumulators would not fit a second set: the medium tile then), and split where even the
  // chains' sum would be longer.
  if (longest_ffma_sum(pick, problem) > kMaxFfmaSum) {
    if (&tile == &large) pick = with_absent_params(medium, parameters());
    pick.set("KSUM", 1);
    for (int splits : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      pick.set("SPLITK", splits);
      if (longest_ffma_sum(pick, problem) <= kMaxFfmaSum) break;
    }
  }
  return fit_config(pick, device, problem);
}

std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem) {
  const Space space = make_space(device, problem);
  std::vector<Config> seeds = {default_config(device, problem)};
  auto add = [&](const Config& family) {
    // Slice sums bounded on this k as the op serves them (past their bound every wgmma family,
    // written in one chain, would be refused).
    const Config c = with_bounded_slice_sums(family, problem);
    if (!space.violation(c, /*include_pruning=*/true) &&
        std::find(seeds.begin(), seeds.end(), c) == seeds.end()) {
      seeds.push_back(c);
    }
  };
  for (const char* text : kFamilies) {
    add_family_variants(with_operands_as_stored(read_config(text, parameters()), problem), problem,
                        add);
  }
  add_gemv_seeds(problem, add);
  return seeds;
}

}  // namespace tuned::gemm_op
