// Every config family of the GEMM template on the GPU: each pipeline (single stage, register
// prefetch, 2-4 cp.async stages), both shared layouts of A and B, block grouping, launch bounds
// and split-K, in all four layouts, on odd shapes (1, 7, 127, 1000, 4097 among them) with fresh
// random inputs and a NaN-poisoned C, plus the task's padded alpha/beta edge shape; then split-K
// through the public API (workspace from the library's pool) with repeated, concurrent calls; the
// matrix-vector kernel for m or n of 1 alike.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <map>
#include <tuple>

#include "cache/database.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/extent.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

// Configs from their canonical text.
std::vector<Config> parsed(std::initializer_list<const char*> texts) {
  std::vector<Config> configs;
  for (const char* text : texts) configs.push_back(Config::parse(text));
  return configs;
}

std::vector<Config> families(const DeviceInfo& device) {
  std::vector<Config> configs = parsed({
      "GEMV=0,BM=64,BN=32,BK=16,WM=32,WN=16,TM=4,TN=2,LM=8,VEC=4,PAD=4,AKM=0,BKM=0,UNROLL=4,"
      "PIPE=0,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=2,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=2,PRETB=0,SPLITK=3,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=8,"
      "PIPE=4,SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=16,BN=16,BK=8,WM=16,WN=8,TM=1,TN=2,LM=16,VEC=1,PAD=0,AKM=1,BKM=1,UNROLL=2,"
      "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=16,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=1,SWZ=8,MINB=1,PRETB=1,SPLITK=2,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      // Unaligned operands packed (VEC 4 kept on odd leading dims), with and without PRETB.
      "GEMV=0,BM=64,BN=128,BK=16,WM=32,WN=64,TM=4,TN=4,LM=4,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=0,AKM=0,BKM=1,UNROLL=8,"
      "PIPE=1,SWZ=0,MINB=2,PRETB=1,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      // Split sums in a second pass, with packing, and splits past the slices of k (empty
      // splits write zero partials).
      "GEMV=0,BM=32,BN=64,BK=16,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=12,PACK=1,REDUCE=1,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=4,VEC=2,PAD=0,AKM=0,BKM=0,UNROLL=4,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=128,PACK=0,REDUCE=1,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=16,BN=32,BK=8,WM=16,WN=16,TM=2,TN=1,LM=8,VEC=1,PAD=4,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=256,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
  });
  // The seeds the tuner starts from for large, unaligned and skinny problems (cp.async, packing,
  // split-K with both ways of summing, ...).
  for (auto [m, n, k] : {std::tuple{4096, 4096, 4096}, std::tuple{4097, 4097, 4097},
                         std::tuple{32, 4096, 4096}, std::tuple{128, 128, 131072}}) {
    for (const auto& c : seed_configs(device, packed_problem("NN", m, n, k))) {
      if (std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
    }
  }
  return configs;
}

using Shapes = std::vector<std::tuple<int, int, int>>;

// Leading dims padded past the minimum to multiples of 4 (alignment class 4), each by a different
// amount so a mixed-up ld shows.
void pad_leading_dims(Problem& p) {
  p.lda = (p.lda + 3) / 4 * 4 + 4;
  p.ldb = (p.ldb + 3) / 4 * 4 + 8;
  p.ldc = (p.ldc + 3) / 4 * 4 + 4;
  p.alignment = 4;
}

// Right results from every family. The accuracy contract (error within 2x of cuBLAS's against an
// FP64 product) binds what the library may pick, not every family: an FFMA kernel sums k in one
// sequence and can be beyond it where cuBLAS splits k (the tuner then calls it 'inaccurate';
// SelectionPortfolio and GemmAccuracy test the picks). The FP64 tensor-core families sum in double
// and must meet it everywhere, the split TF32 ones where they sum in partial chains (k up to
// 96 x 112; on wgmma, MMA = 3 and 4, each slice's products from zero) of at least one mma step
// (k >= 8: rule split_tf32_from_k_8); on wgmma, MMA = 3 and 4, wherever the space allows them
// (k >= 128, slice sums within max_slice_sum, more than 16 rows and columns), on the wide-range
// probe of the check too.
void expect_right(const DeviceInfo& device, const MatrixCheck& result, const Config& c,
                  const Problem& p, double tolerance) {
  EXPECT_TRUE(result.computes(tolerance))
      << "rel error " << result.rel_error << ", unwritten " << result.unwritten << ", non-finite "
      << result.nonfinite;
  if (c.get("MMA") == 1 || (c.get("MMA") == 2 && c.get("KSUM") == 1 && p.k >= 8) ||
      (c.get("MMA") >= 3 && !make_space(device, p).violation(c, false).has_value())) {
    EXPECT_FALSE(result.breaks_contract()) << result.describe();
  }
}

// Checks every config on every shape in one layout against cuBLAS (GemmTask::check: NaN-poisoned
// C with beta = 0, then the padded alpha/beta edge shape). Each shape runs twice: with leading dims
// padded to a multiple of 4 (alignment class 4, the config as it is) and packed (odd leading dims:
// the config with VEC lowered to fit, unless it packs A and B). The layout's kernels (every VEC variant) compile in
// parallel first. Returns the number of checks.
int check_on_shapes(const DeviceInfo& device, const char* layout,
                    const std::vector<Config>& configs, const Shapes& shapes, int seed) {
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  // (What fit_config does: packed configs and the matrix-vector kernel keep their VEC; the
  // TMA-fed ones, MMA = 4, read 16-byte runs only and always pack.)
  auto with_vec = [](Config c, int vec) {
    if (c.get("MMA") >= 4 && vec < 4) c.set("PACK", 1);
    if (c.get("PACK") == 0 && c.get("GEMV") == 0) c.set("VEC", std::min(c.get("VEC"), vec));
    return c;
  };
  // Kernel specs depend on the layout and the alignment class only: one per class, by name.
  auto any = [&](int alignment) {
    Problem p = packed_problem(layout, 8, 8, 8);
    p.alignment = alignment;
    return p;
  };
  std::map<std::string, std::shared_future<BuiltKernel>> built;
  for (const auto& c : configs) {
    for (int vec : {4, 2, 1}) {
      const KernelSpec spec = kernel_spec(with_vec(c, vec), any(vec));
      if (built.count(spec.kernel_name)) continue;
      built[spec.kernel_name] = std::async(std::launch::async, [&, spec] {
        return kernels.build(spec, device);
      }).share();
    }
  }
  int checked = 0;
  for (const Config& config : configs) {
    for (auto [m, n, k] : shapes) {
      for (bool padded : {true, false}) {
        Problem p = packed_problem(layout, m, n, k);
        if (padded) pad_leading_dims(p);
        const Config c = with_vec(config, p.alignment);
        SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) +
                     "x" + std::to_string(k) + " lda=" + std::to_string(p.lda) +
                     " ldb=" + std::to_string(p.ldb) + " ldc=" + std::to_string(p.ldc) + " " +
                     c.canonical());
        const KernelSpec spec = kernel_spec(c, p);
        const auto kernel = KernelCache::load(built.at(spec.kernel_name).get(), spec);
        GemmTask task(device, p, check);
        task.allocate();
        task.fresh_inputs(seed + checked, stream.get());
        expect_right(device, task.check(*kernel, c, stream.get()), c, p, task.tolerance());
        ++checked;
      }
    }
  }
  return checked;
}

// Odd and tiny shapes: 1, 7, 127, 1000, 4097 in every position.
const Shapes kOddShapes = {
    {1, 1, 1}, {7, 127, 1000}, {1000, 7, 127}, {127, 1000, 4097}, {257, 129, 7}};

// check_on_shapes in all four layouts, and that every config ran on every shape there.
void check_in_every_layout(const DeviceInfo& device, const std::vector<Config>& configs,
                           const Shapes& shapes, int seed) {
  int checked = 0;
  // PRETB: the FFMA and FP64 kernels' only where B is not transposed (it turns a k-contiguous B
  // over); MMA = 4 turns a transposed B over, so it runs in every layout, PRETB set by it.
  auto turns_b_over_for_ffma = [](const Config& c) {
    return c.get("PRETB") == 1 && c.get("MMA") != 4;
  };
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    std::vector<Config> in_layout;
    for (const Config& c : configs) {
      if (c.get("MMA") == 4) {
        in_layout.push_back(with_operands_as_stored(c, packed_problem(layout, 8, 8, 8)));
      } else if (layout[1] == 'N' || !turns_b_over_for_ffma(c)) {
        in_layout.push_back(c);
      }
    }
    checked += check_on_shapes(device, layout, in_layout, shapes, seed + checked);
  }
  int runs_per_shape = 0;
  for (const auto& c : configs) runs_per_shape += turns_b_over_for_ffma(c) ? 2 : 4;
  EXPECT_EQ(checked, static_cast<int>(runs_per_shape * shapes.size() * 2));
}

TEST(GemmFamilies, EveryFamilyIsRightOnOddShapesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  check_in_every_layout(device, families(device), kOddShapes, 1000);
}

// MMA = 1 (FP64 tensor cores, sm_90+): every fragment read path (A and B each k-contiguous or not
// in shared memory: four combinations, in every layout, so transposing copies too), warp tiles from
// 16x8 to 64x32, BK 8-32, 2-4 stages, VEC 1-4, split-K summed by the last block and by the
// summing pass, packing, PRETB and a tail split, on the odd shapes above.
std::vector<Config> mma_families() {
  return parsed({
      "GEMV=0,BM=64,BN=64,BK=16,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=0,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=4,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=0,BKM=1,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=128,BK=16,WM=32,WN=64,TM=2,TN=2,LM=8,VEC=2,PAD=0,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=3,PACK=0,REDUCE=1,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=32,BN=16,BK=8,WM=16,WN=8,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=2,PRETB=0,SPLITK=16,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=1,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=128,BN=32,BK=16,WM=32,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=0,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=6,PACK=1,REDUCE=1,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
  });
}

TEST(GemmFamilies, Fp64TensorCoreFamiliesAreRightOnOddShapesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() < 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 1 needs sm_90, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  std::vector<Config> configs = mma_families();
  // And the MMA seeds the tuner starts from, for a medium and a skinny product.
  for (auto [layout, m, n, k] :
       {std::tuple{"NN", 1000, 1000, 1000}, std::tuple{"TN", 16384, 64, 8192}}) {
    for (const auto& c : seed_configs(device, packed_problem(layout, m, n, k))) {
      if (c.get("MMA") == 1 && std::find(configs.begin(), configs.end(), c) == configs.end()) {
        configs.push_back(c);
      }
    }
  }
  check_in_every_layout(device, configs, kOddShapes, 3000);
}

// MMA = 2 (split TF32, sm_80+): the FP64 families' fragment paths, tiles, pipelines and splits with
// three TF32 products per tile, summed in partial chains (KSUM = 1) and, for k within one chain,
// in one; within the accuracy contract wherever its float sums are (KSUM = 1 on these shapes).
TEST(GemmFamilies, SplitTf32FamiliesAreRightOnOddShapesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() < 80) {
    GTEST_SKIP() << "GPU test skipped: MMA = 2 needs sm_80, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  std::vector<Config> configs;
  for (Config c : mma_families()) {
    c.set("MMA", 2);
    c.set("KSUM", 1);
    configs.push_back(c);
  }
  for (size_t i = 0; i < 2; ++i) {  // one chain: right, though past k = 128 not within contract
    Config single = configs[i];
    single.set("KSUM", 0);
    configs.push_back(single);
  }
  check_in_every_layout(device, configs, kOddShapes, 5000);
}

// MMA = 3 (split TF32 on wgmma, sm_90a): warpgroup tiles of 64 x 32, 64 x 64 and 64 x 128 (one
// and two consumer warpgroups along m, two along n), 2 and 3 stages, loads of 1, 2 and 4 floats
// (every operand path: k-contiguous, transposed in registers, rows first, and with one consumer
// warpgroup and narrow loads lanes along rows), split-K summed by the last block and by the summing
// pass, packing, a tail split and C through shared memory.
TEST(GemmFamilies, SplitTf32WgmmaFamiliesAreRightOnOddShapesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() != 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 3 (wgmma) needs sm_90a, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  check_in_every_layout(
      device,
      parsed({
          "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=128,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=3,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=2,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=3,PACK=1,REDUCE=1,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=3,CSTAGE=1,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=128,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=16,PACK=0,REDUCE=1,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=2,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          // Three blocks per SM; the producer two slices ahead (odd and even slice counts).
          "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=3,PRETB=0,SPLITK=8,PACK=0,REDUCE=1,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=0",
          "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=1",
          "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
          "UNROLL=8,PIPE=2,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,"
          "KSUM=1,GCOLS=1,AHEAD=1",
      }),
      kOddShapes, 7000);
}

// MMA = 4 (split TF32 on wgmma, A and B copied by the TMA, A split in registers): tiles of one and
// two consumer warpgroups, WN 32 to 128, 3 and 4 stages, split-K summed by the last block and by
// the summing pass, a tail split, C staged, on odd shapes in every layout with odd leading dims
// (packed: the TMA reads 16-byte runs) and padded ones; a transposed B turned over first (PRETB).
TEST(GemmFamilies, SplitTf32TmaFamiliesAreRightOnOddShapesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() != 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 4 (wgmma, TMA) needs sm_90a, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const std::vector<Config> configs = parsed({
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
      "UNROLL=8,PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,"
      "KSUM=1,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=64,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
      "UNROLL=8,PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,"
      "KSUM=1,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
      "UNROLL=8,PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=4,CSTAGE=1,"
      "KSUM=1,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
      "UNROLL=8,PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=3,PACK=1,REDUCE=1,TAIL=0,MMA=4,CSTAGE=0,"
      "KSUM=1,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=128,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,"
      "UNROLL=8,PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,"
      "KSUM=1,GCOLS=1,AHEAD=0",
  });
  int checked = 0;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    std::vector<Config> in_layout;
    for (const Config& c : configs) {
      in_layout.push_back(with_operands_as_stored(c, packed_problem(layout, 8, 8, 8)));
      EXPECT_EQ(in_layout.back().get("PRETB"), layout[1] == 'T' ? 1 : 0);
    }
    checked += check_on_shapes(device, layout, in_layout, kOddShapes, 7500 + checked);
  }
  EXPECT_EQ(checked, static_cast<int>(4 * configs.size() * kOddShapes.size() * 2));
}

// CSTAGE = 1 (C through shared memory): FFMA tiles with every run length of rows (TM 1 to 8),
// BM = 16 (a warp's stores span two columns), a C tile larger than the default 48 KB of shared
// memory, split-K summed by the last block and by the summing pass, a tail split, packing, and the
// FP64 tensor cores' pairs of rows (sm_90+).
std::vector<Config> staged_families(const DeviceInfo& device) {
  std::vector<Config> configs = parsed({
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=1,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=16,BN=32,BK=8,WM=16,WN=16,TM=2,TN=1,LM=8,VEC=1,PAD=4,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=1,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=128,BN=32,BK=16,WM=32,WN=32,TM=1,TN=4,LM=32,VEC=2,PAD=0,AKM=0,BKM=0,UNROLL=4,"
      "PIPE=0,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=1,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=8,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=0,CSTAGE=1,KSUM=0,GCOLS=1,"
      "AHEAD=0",
      "GEMV=0,BM=64,BN=32,BK=32,WM=16,WN=32,TM=2,TN=2,LM=4,VEC=2,PAD=0,AKM=0,BKM=0,UNROLL=4,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=8,PACK=0,REDUCE=1,TAIL=0,MMA=0,CSTAGE=1,KSUM=0,GCOLS=1,"
      "AHEAD=0",
  });
  if (device.compute_capability() < 90) return configs;
  for (const Config& c : parsed({
           "GEMV=0,BM=64,BN=64,BK=16,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=0,BKM=1,UNROLL=8,"
           "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=1,KSUM=0,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=1,KSUM=0,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=32,BN=16,BK=8,WM=16,WN=8,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,UNROLL=8,"
           "PIPE=2,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=1,MMA=1,CSTAGE=1,KSUM=0,"
           "GCOLS=1,AHEAD=0",
       })) {
    configs.push_back(c);
  }
  return configs;
}

// Each staged family on the odd shapes in every layout (NaN-poisoned C with beta = 0, then alpha
// and beta on the edge shape), then against the same config storing C from its fragments on the
// same inputs: the very same bits, with beta = 0 and with beta != 0, on an odd ldc (one float per
// store) and a padded one (C_VEC wide).
TEST(GemmFamilies, StagedCIsRightAndGivesTheBitsOfDirectStores) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const std::vector<Config> configs = staged_families(device);
  check_in_every_layout(device, configs, kOddShapes, 5000);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int compared = 0;
  for (const Config& config : configs) {
    for (const char* layout : {"NN", "TT"}) {
      for (bool padded : {false, true}) {
        Problem p = packed_problem(layout, 1001, 515, 77);
        if (padded) pad_leading_dims(p);
        const Config staged = fit_config(config, device, p);
        Config direct = staged;
        direct.set("CSTAGE", 0);
        SCOPED_TRACE(std::string(layout) + " ldc=" + std::to_string(p.ldc) + " " +
                     staged.canonical());
        const int64_t m = p.m, n = p.n, k = p.k;
        DeviceBuffer a(column_major_elements(p.lda, p.trans_a ? m : k) * sizeof(float));
        DeviceBuffer b(column_major_elements(p.ldb, p.trans_b ? k : n) * sizeof(float));
        DeviceBuffer c0(column_major_elements(p.ldc, n) * sizeof(float));
        DeviceBuffer ws(std::max<size_t>(workspace_bytes(staged, p), 1));
        check.fill_uniform(a.as<float>(), a.bytes() / 4, 21 + compared, -1, 1, stream.get());
        check.fill_uniform(b.as<float>(), b.bytes() / 4, 22 + compared, -1, 1, stream.get());
        check.fill_uniform(c0.as<float>(), c0.bytes() / 4, 23 + compared, -1, 1, stream.get());
        for (float beta : {0.0f, -1.25f}) {
          std::vector<DeviceBuffer> out;
          const Config* both[] = {&direct, &staged};
          for (const Config* c : both) {
            out.emplace_back(c0.bytes());
            if (beta == 0.0f) {
              DeviceCheck::poison(out.back().as<float>(), c0.bytes() / 4, stream.get());
            } else {
              TUNED_CUDA_CHECK(cudaMemcpyAsync(out.back().get(), c0.get(), c0.bytes(),
                                               cudaMemcpyDeviceToDevice, stream.get()));
            }
            const auto kernel = kernels.get(kernel_spec(*c, p), device);
            launch(*kernel, *c, p, 0.75f, a.as<float>(), b.as<float>(), beta, out.back().as<float>(),
                   ws.get(), stream.get());
          }
          const MatrixCheck same = check.compare(out[1].as<float>(), p.ldc, out[0].as<float>(),
                                                 p.ldc, m, n, stream.get());
          EXPECT_EQ(same.rel_error, 0.0) << "beta " << beta;
          EXPECT_EQ(same.unwritten, 0) << "beta " << beta;
          EXPECT_EQ(same.nonfinite, 0) << "beta " << beta;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, static_cast<int>(configs.size() * 2 * 2 * 2));
}

// Config c on problem p: right against the reference (GemmTask::check, NaN-poisoned C), then on
// the same fresh inputs twice, giving the same bits both times.
void expect_right_and_repeatable(const DeviceInfo& device, DeviceCheck& check,
                                 const LoadedKernel& kernel, const Config& c, const Problem& p,
                                 int seed, cudaStream_t stream) {
  GemmTask task(device, p, check);
  task.allocate();
  task.fresh_inputs(seed, stream);
  const MatrixCheck result = task.check(kernel, c, stream);
  EXPECT_TRUE(result.passed(task.tolerance()))
      << "rel error " << result.rel_error << ", unwritten " << result.unwritten << ", non-finite "
      << result.nonfinite;
  const int64_t m = p.m, n = p.n, k = p.k;
  DeviceBuffer a(column_major_elements(p.lda, p.trans_a ? m : k) * sizeof(float));
  DeviceBuffer b(column_major_elements(p.ldb, p.trans_b ? k : n) * sizeof(float));
  DeviceBuffer c1(column_major_elements(p.ldc, n) * sizeof(float));
  DeviceBuffer c2(column_major_elements(p.ldc, n) * sizeof(float));
  DeviceBuffer ws(std::max<size_t>(workspace_bytes(c, p), 1));
  check.fill_uniform(a.as<float>(), a.bytes() / 4, seed + 1, -1, 1, stream);
  check.fill_uniform(b.as<float>(), b.bytes() / 4, seed + 2, -1, 1, stream);
  for (DeviceBuffer* out : {&c1, &c2}) {
    DeviceCheck::poison(out->as<float>(), out->bytes() / 4, stream);
    launch(kernel, c, p, 1.0f, a.as<float>(), b.as<float>(), 0.0f, out->as<float>(), ws.get(),
           stream, task.transpose_b_callback());
  }
  const MatrixCheck same =
      check.compare(c2.as<float>(), p.ldc, c1.as<float>(), p.ldc, m, n, stream);
  EXPECT_EQ(same.rel_error, 0.0);
  EXPECT_EQ(same.unwritten, 0);
  EXPECT_EQ(same.nonfinite, 0);
}

// TAIL = 1: the tiles of a partial last wave are split along k at launch. Shapes are built per
// config so the launch really splits (a few tiles past whole waves of this GPU): odd m, n and k,
// every layout, packed (odd leading dims) and padded, checked against cuBLAS on NaN-poisoned C
// with beta = 0 (GemmTask::check, which adds its alpha/beta edge shape), and two launches on the
// same inputs must give the same bits. FFMA configs sum k in partial chains (KSUM = 1: k = 1001 is
// past the longest single chain the accuracy contract allows).
TEST(GemmFamilies, TailSplitFillsTheLastWaveRightAndRepeatably) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int split_launches = 0;
  for (const char* text : {
           "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
           "PIPE=3,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=2,PAD=0,AKM=0,BKM=0,UNROLL=8,"
           "PIPE=1,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=128,BN=128,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL="
           "16,"
           "PIPE=4,SWZ=0,MINB=1,PRETB=1,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
           // FP64 tensor cores, packed, operands k-contiguous in shared memory (sm_90+).
           "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=0,BKM=0,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=1,CSTAGE=0,KSUM=0,"
           "GCOLS=1,AHEAD=0",
       }) {
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      const Config config = Config::parse(text);
      if (config.get("MMA") == 1 && device.compute_capability() < 90) continue;
      if (layout[1] == 'T' && config.get("PRETB")) continue;  // PRETB: B not transposed only
      for (bool padded : {false, true}) {
        // The config as fitted to this alignment class (odd m and k: class 1 unless padded; the
        // shapes below are too skinny in n for fit_config to pack on its own).
        Problem probe = packed_problem(layout, 1001, 135, 1001);
        if (padded) probe.alignment = 4;
        const Config c = fit_config(config, device, probe);
        const auto kernel = kernels.get(kernel_spec(c, probe), device);
        const int bm = c.get("BM"), bn = c.get("BN");
        const int64_t slots = int64_t{device.sm_count} *
                              kernel->max_active_blocks_per_sm(threads_per_block(c), shared_bytes(c));
        // Three tile columns, and tile rows for whole waves plus 4-6 tiles.
        const int64_t tiles_m = slots / 3 + 2;
        const int64_t m = (tiles_m - 1) * bm + 5, n = 2 * bn + 7, k = 1001;
        Problem p = packed_problem(layout, m, n, k);
        if (padded) pad_leading_dims(p);
        ASSERT_EQ(p.alignment, probe.alignment);
        ASSERT_EQ(fit_config(c, device, p), c);
        SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + " lda=" + std::to_string(p.lda) + " " + c.canonical());
        const TailSplit tail = tail_split(*kernel, c, p, geometry(c, p));
        EXPECT_GE(tail.splits, 2) << "the shape should leave a short last wave on "
                                  << slots << " slots";
        split_launches += tail.splits >= 2;
        // The tail's sums are ordered, so the bits repeat.
        expect_right_and_repeatable(device, check, *kernel, c, p, 77 + split_launches,
                                    stream.get());
      }
    }
  }
  EXPECT_EQ(split_launches, 2 * (4 + 4 + 2 + (device.compute_capability() >= 90 ? 4 : 0)));
}

// Split-K raised by the launch (split_k_count): shapes of one tile column whose blocks at SPLITK
// run a few past one wave of this GPU (or, where the raise's bound is smaller, leave it short), so
// the launch takes more splits; odd m, n and k, every layout, unaligned leading dims (packed or
// not), FP64 and (sm_90) split TF32 wgmma tensor cores: right on NaN-poisoned C, and the same bits
// twice.
TEST(GemmFamilies, RaisedSplitKIsRightAndRepeatable) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int raised = 0, runs = 0;
  for (const char* text : {
           "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
           "PIPE=3,SWZ=4,MINB=2,PRETB=0,SPLITK=6,PACK=1,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=32,BN=64,BK=32,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=1,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=0,BKM=1,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=16,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
           "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
           "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=4,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,"
           "GCOLS=1,AHEAD=0",
       }) {
    const Config config = Config::parse(text);
    if (config.get("MMA") == 1 && device.compute_capability() < 90) continue;
    if (config.get("MMA") >= 3 && device.compute_capability() != 90) continue;
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      // The config as fitted to odd leading dims (alignment class 1).
      const Problem probe = packed_problem(layout, 1001, 35, 1001);
      const Config c = fit_config(config, device, probe);
      const auto kernel = kernels.get(kernel_spec(c, probe), device);
      const int64_t bm = c.get("BM"), bn = c.get("BN"), least = c.get("SPLITK");
      const int64_t slots = int64_t{device.sm_count} *
                            kernel->max_active_blocks_per_sm(threads_per_block(c), shared_bytes(c));
      // One tile column; 8 slices per split at SPLITK.
      const int64_t tiles = std::min(slots / least + 3, kMaxRaisedSplitBlocks / (2 * least - 1));
      const int64_t m = (tiles - 1) * bm + 5, n = bn - 3, k = 8 * least * c.get("BK") + 7;
      const Problem p = packed_problem(layout, m, n, k);
      ASSERT_EQ(p.alignment, 1);
      SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " " + c.canonical() + ", " + std::to_string(slots) +
                   " slots");
      const int64_t splits = split_k_count(*kernel, c, p, geometry(c, p));
      EXPECT_GT(splits, least);
      EXPECT_LE(splits, max_split_k(c, p));
      raised += splits > least;
      ++runs;
      // The partials are summed in split order, so the bits repeat.
      expect_right_and_repeatable(device, check, *kernel, c, p, 91 + runs, stream.get());
    }
  }
  EXPECT_EQ(raised, runs);
  EXPECT_GE(runs, 4);
}

// The TMA-fed split TF32 config of 128 x 128 tiles the accuracy tests below take.
constexpr const char* kTmaConfig =
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1,"
    "AHEAD=0";

// The tuner's check refuses a split that loses the small parts' information: the TMA-fed split
// TF32 kernel built with A_big * B_small dropped (SPLIT_TERMS = 2, a test-only switch) fails it in
// every layout (on an H100 its error was 3.7e-4 against cuBLAS's, beyond even the tolerance for
// 'wrong'), while the same config built whole passes on the same inputs.
TEST(GemmFamilies, AccuracyCheckRefusesASplitThatDropsATerm) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() != 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 4 (wgmma, TMA) needs sm_90a, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  const Config config = Config::parse(kTmaConfig);
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    const Problem p = packed_problem(layout, 257, 129, 4001);
    const Config c = fit_config(config, device, p);
    SCOPED_TRACE(std::string(layout) + " 257x129x4001 " + c.canonical());
    KernelSpec broken = kernel_spec(c, p);
    const std::string name = broken.kernel_name;
    broken.kernel_name += "_drops_big_small";
    for (auto& option : broken.options) {
      if (option == "-DKERNEL_NAME=" + name) option = "-DKERNEL_NAME=" + broken.kernel_name;
    }
    broken.options.push_back("-DSPLIT_TERMS=2");
    GemmTask task(device, p, check);
    task.allocate();
    task.fresh_inputs(4242, stream.get());
    const MatrixCheck whole = task.check(*kernels.get(kernel_spec(c, p), device), c, stream.get());
    const MatrixCheck dropped = task.check(*kernels.get(broken, device), c, stream.get());
    EXPECT_TRUE(whole.passed(task.tolerance()))
        << "error " << whole.exact_error << ", limit " << whole.exact_limit;
    EXPECT_FALSE(dropped.passed(task.tolerance()))
        << "rel error " << dropped.rel_error << ", error " << dropped.exact_error << ", limit "
        << dropped.exact_limit;
    EXPECT_GT(dropped.rel_error, 10 * whole.rel_error);
    // The wide-range probe (check_probe) sees it beyond the contract too, and names itself.
    const MatrixCheck probe_dropped =
        task.check_probe(*kernels.get(broken, device), c, stream.get());
    EXPECT_TRUE(probe_dropped.breaks_contract())
        << "error " << probe_dropped.exact_error << ", limit " << probe_dropped.exact_limit;
    EXPECT_NE(probe_dropped.describe().find("wide-range inputs, "), std::string::npos)
        << probe_dropped.describe();
  }
}

// The wide-range probe (GemmTask::check_probe, part of the check) at k = 65536 holds the TMA-fed
// split TF32 kernel with partial chains of slice sums (KSUM = 2) to the contract in one split, in
// three layouts; and it refuses the same kernel with one chain of its 2048 slice sums (KSUM = 1,
// which the rule float_sums_within_contract allows to 32 slices, where the probe takes it): on an
// H100 2.1-2.5x cuBLAS SGEMM's error there against 0.5-0.8x in chains.
TEST(GemmFamilies, ProbeHoldsWgmmaSliceSumsToTheContract) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() != 90) {
    GTEST_SKIP() << "GPU test skipped: wgmma needs sm_90a, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  const int64_t longest = GemmTask::kProbeKs[0];
  for (const auto& [layout, m, n] :
       {std::tuple{"NN", 257, 129}, std::tuple{"TT", 257, 129}, std::tuple{"TN", 1000, 127}}) {
    const Problem p = packed_problem(layout, m, n, 4001);
    GemmTask task(device, p, check);
    task.allocate();
    task.fresh_inputs(4242, stream.get());
    Config config = Config::parse(kTmaConfig);
    config.set("KSUM", 2);
    const Config chains = fit_config(config, device, p);
    SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + " " +
                 chains.canonical());
    const Problem at_longest = task.probe_problem();
    ASSERT_EQ(at_longest.k, longest);
    EXPECT_TRUE(sums_within_contract(chains, at_longest));
    const MatrixCheck probe =
        task.check_probe(*kernels.get(kernel_spec(chains, p), device), chains, stream.get());
    EXPECT_NE(probe.exact_inputs.find("x65536"), std::string::npos) << probe.exact_inputs;
    EXPECT_FALSE(probe.breaks_contract()) << probe.describe();
    // (Fitting turns it into chains on this k: its one chain is past 32 slices.)
    Config one_chain = chains;
    one_chain.set("KSUM", 1);
    EXPECT_EQ(fit_config(one_chain, device, p), chains);
    EXPECT_FALSE(sums_within_contract(one_chain, at_longest));
    const MatrixCheck at_its_longest =
        task.check_probe(*kernels.get(kernel_spec(one_chain, p), device), one_chain, stream.get());
    EXPECT_NE(at_its_longest.exact_inputs.find("x1024"), std::string::npos)
        << at_its_longest.exact_inputs;
    const MatrixCheck refused = task.check_probe(*kernels.get(kernel_spec(one_chain, p), device),
                                                 one_chain, stream.get(), longest);
    EXPECT_TRUE(refused.breaks_contract()) << refused.describe();
    EXPECT_GT(refused.exact_error, 2 * probe.exact_error);
  }
}

// Plain TF32 (MMA = 5: the TMA-fed kernel with one product) is the TF32 compute type's alone: in
// a task of that type (cuBLAS in TF32 as reference and contract) it is right on odd shapes in
// every layout and keeps the contract, uniform and wide-range; the default type's check refuses
// it (its error against the FP64 product is far beyond 2x cuBLAS SGEMM's), and so does fitting.
TEST(GemmFamilies, PlainTf32PassesOnlyTheTf32TypesCheck) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  if (device.compute_capability() != 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 5 (wgmma, TMA) needs sm_90a, this GPU is sm_"
                 << device.compute_capability();
  }
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  Config config = Config::parse(kTmaConfig);
  config.set("MMA", 5);
  int seed = 5150;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (const auto& [m, n, k] : {std::tuple{257, 129, 4001}, std::tuple{1000, 127, 129}}) {
      const Problem tf32 = packed_problem(std::string(layout) + "-tf32", m, n, k);
      const Problem fp32 = packed_problem(layout, m, n, k);
      const Config c = fit_config(config, device, tf32);
      SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " " + c.canonical());
      EXPECT_THROW(fit_config(config, device, fp32), Error);
      const auto kernel = kernels.get(kernel_spec(c, tf32), device);
      GemmTask tf32_task(device, tf32, check);
      tf32_task.allocate();
      tf32_task.fresh_inputs(++seed, stream.get());
      const MatrixCheck passed = tf32_task.check(*kernel, c, stream.get());
      EXPECT_TRUE(passed.passed(tf32_task.tolerance())) << passed.describe();
      GemmTask fp32_task(device, fp32, check);
      fp32_task.allocate();
      fp32_task.fresh_inputs(seed, stream.get());
      const MatrixCheck refused = fp32_task.check(*kernel, c, stream.get());
      EXPECT_FALSE(refused.passed(fp32_task.tolerance())) << refused.describe();
    }
  }
}

// KSUM = 1 keeps FFMA kernels within the accuracy contract where one chain per output is not:
// on an H100 the FFMA families' single chains were 2.2x cuBLAS's error against an FP64 product on
// NN 512x384x1024 (above the 2x bound). Each family summing k in partial chains: right on the odd
// shapes in every layout (a last chain shorter than the others), within the contract on k of
// about 1000 and 4097, and closer to the FP64 product than the same family summing in one chain.
TEST(GemmFamilies, SliceSumsKeepFfmaWithinTheAccuracyContract) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  std::vector<Config> configs = parsed(
      {"GEMV=0,BM=64,BN=32,BK=16,WM=16,WN=32,TM=4,TN=4,LM=4,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
       "AHEAD=0",
       "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=2,TN=2,LM=16,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
       "PIPE=3,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
       "AHEAD=0",
       "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=0,UNROLL=16,"
       "PIPE=1,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
       "AHEAD=0",
       "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=1,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS="
       "1,AHEAD=0"});
  check_in_every_layout(device, configs, kOddShapes, 6000);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int checked = 0;
  for (const auto& [layout, m, n, k] :
       {std::tuple{"NN", 512, 384, 1024}, std::tuple{"TN", 1501, 1499, 1021},
        std::tuple{"NT", 257, 300, 4097}}) {
    for (const Config& sums : configs) {
      const Problem p = packed_problem(layout, m, n, k);
      SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " " + sums.canonical());
      GemmTask task(device, p, check);
      task.allocate();
      task.fresh_inputs(7000 + checked, stream.get());
      const Config fitted_sums = fit_config(sums, device, p);
      // The single chain, which fit_config refuses here (float_sums_within_contract), for
      // comparison.
      Config fitted_chain = fitted_sums;
      fitted_chain.set("KSUM", 0);
      const MatrixCheck with_sums =
          task.check(*kernels.get(kernel_spec(fitted_sums, p), device), fitted_sums, stream.get());
      const MatrixCheck one_chain = task.check(*kernels.get(kernel_spec(fitted_chain, p), device),
                                               fitted_chain, stream.get());
      EXPECT_TRUE(with_sums.passed(task.tolerance()))
          << "error " << with_sums.exact_error << ", limit " << with_sums.exact_limit
          << " (one chain: " << one_chain.exact_error << ")";
      EXPECT_LT(with_sums.exact_error, one_chain.exact_error);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * static_cast<int>(configs.size()));
}

// The matrix-vector kernel (m or n of 1): both of its paths (rows adjacent in memory, k
// contiguous) come from the layout and which of m, n is 1; every rows-per-block value with and
// without splits of k, on odd lengths, padded and packed leading dims, NaN-poisoned C.
TEST(GemmFamilies, MatrixVectorKernelIsRightWhereMOrNIsOne) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  std::vector<Config> configs;
  for (int rows : {8, 32, 256}) {
    for (int splits : {1, 3, 16}) configs.push_back(gemv_config(rows, rows == 8 ? 1 : 4, splits));
  }
  const Shapes shapes = {{1, 1, 1}, {1, 1000, 4097}, {4097, 1, 127}, {1, 7, 1}, {127, 1, 1000},
                         {1, 257, 33}};
  int checked = 0;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    checked += check_on_shapes(device, layout, configs, shapes, 2000 + checked);
  }
  EXPECT_EQ(checked, static_cast<int>(4 * configs.size() * shapes.size() * 2));
}

// The matrix-vector kernel on a few vectors (decoding's products, GCOLS 2-16): each class of
// columns on a product that fills it and one that does not, n's vectors (Y = C) and m's (Y = C^T)
// in every layout (both of the kernel's paths), with and without splits of k (whose partials
// hold every column), on odd lengths, padded and packed leading dims, NaN-poisoned C; every
// config one the space lets the library run there (its sums within the accuracy contract).
TEST(GemmFamilies, MatrixVectorKernelIsRightOnAFewVectors) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const std::map<int, Shapes> shapes_of = {{2, {{1000, 2, 1999}, {2, 127, 1000}, {2, 2, 7}}},
                                           {4, {{4097, 3, 127}, {3, 1000, 33}, {3, 4, 1}}},
                                           {8, {{127, 7, 1000}, {5, 4097, 127}, {1000, 8, 1}}},
                                           {16, {{1000, 13, 1999}, {9, 127, 1000}, {7, 16, 33}}}};
  int checked = 0, expected = 0;
  for (const auto& [cols, shapes] : shapes_of) {
    std::vector<Config> configs;
    for (auto [rows, splits] : {std::pair{16, 1}, std::pair{16, 16}, std::pair{64, 16}}) {
      configs.push_back(gemv_config(rows, rows / 8 < 4 ? rows / 8 : 4, splits, cols));
    }
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      for (const Config& c : configs) {
        for (auto [m, n, k] : shapes) {
          // Each config is its shapes' class (what the space lets the library run, VEC 4 on
          // any alignment: the kernel reads floats one at a time where vectors do not fit).
          const Problem p = packed_problem(layout, m, n, k);
          ASSERT_FALSE(make_space(device, p).violation(c, false).has_value())
              << layout << " " << m << "x" << n << "x" << k << " " << c.canonical();
        }
      }
      checked += check_on_shapes(device, layout, configs, shapes, 5000 + checked);
      expected += static_cast<int>(configs.size() * shapes.size() * 2);
    }
  }
  EXPECT_EQ(checked, expected);
}

// The matrix-vector kernel's vector reads are decided at launch: VEC 4 on operands whose pointers
// or leading dims allow no 16-byte loads reads them one float at a time, and an odd ldc (the
// problem's alignment class 1: a vocabulary's logits) leaves the matrix's vector reads on. Each
// against cuBLAS on the same pointers, C NaN-poisoned: aligned operands under an odd ldc, the
// matrix one float off a 16-byte boundary, the vectors one float off, in every layout, Y = C and
// Y = C^T, with and without splits of k.
TEST(GemmFamilies, MatrixVectorKernelReadsVectorsOnlyWhereTheOperandsAllow) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  CublasHandle cublas;
  cublas.set_stream(stream.get());
  constexpr int64_t kMany = 1001, kFew = 3, kK = 1024;
  const size_t floats = size_t{kMany} * kK + 64;
  DeviceBuffer a(floats * 4), b(floats * 4), c(floats * 4), ref(floats * 4),
      workspace(size_t{64} << 20);
  check.fill_uniform(a.as<float>(), floats, 21, -1, 1, stream.get());
  check.fill_uniform(b.as<float>(), floats, 22, -1, 1, stream.get());
  int checked = 0;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (auto [m, n] : {std::pair{kMany, kFew}, std::pair{kFew, kMany}}) {
      // Packed leading dims: ldc (m rows) or the matrix's is odd (1001), k's are 1024.
      const Problem packed = packed_problem(layout, m, n, kK);
      for (auto [a_off, b_off] : {std::pair{0, 0}, std::pair{1, 0}, std::pair{0, 1}}) {
        const float* pa = a.as<float>() + a_off;
        const float* pb = b.as<float>() + b_off;
        Problem p = packed;
        p.alignment = alignment_class(pa, pb, c.get(), p.lda, p.ldb, p.ldc);
        ASSERT_EQ(p.alignment, 1);
        for (int splits : {1, 16}) {
          const Config config = gemv_config(64, 4, splits, 4);
          SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) +
                       " offsets " + std::to_string(a_off) + "," + std::to_string(b_off) + " " +
                       config.canonical());
          ASSERT_EQ(fit_config(config, device, p), config);  // kept at VEC 4
          ASSERT_LE(workspace_bytes(config, p), workspace.bytes());
          const auto kernel = kernels.get(kernel_spec(config, p), device);
          DeviceCheck::poison(c.as<float>(), size_t(p.ldc) * p.n, stream.get());
          launch(*kernel, config, p, 1.0f, pa, pb, 0.0f, c.as<float>(), workspace.get(),
                 stream.get(), nullptr);
          cublas_sgemm(cublas.get(), p, 1.0f, pa, pb, 0.0f, ref.as<float>());
          const MatrixCheck vs_cublas =
              check.compare(c.as<float>(), p.ldc, ref.as<float>(), p.ldc, p.m, p.n, stream.get());
          EXPECT_TRUE(vs_cublas.passed(1e-5)) << vs_cublas.rel_error;
          EXPECT_EQ(vs_cublas.unwritten, 0);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 2 * 3 * 2);
}

// Operands too large to pack at once (kMaxPackBytes) are packed and multiplied in passes over k,
// each adding to C: a 537 MB B (16385 x 8193 as stored, an odd leading dimension) in two passes,
// FFMA and FP64 tensor-core kernels, split-K with its summing pass among them, against cuBLAS
// (and the tensor-core ones against the accuracy contract), C NaN-poisoned.
TEST(GemmFamilies, PackingInPassesOverKIsRight) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  std::vector<Config> configs = parsed(
      {"GEMV=0,BM=64,BN=128,BK=16,WM=32,WN=64,TM=4,TN=4,LM=4,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
       "PIPE=3,SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
       "AHEAD=0",
       "GEMV=0,BM=32,BN=64,BK=16,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=1,REDUCE=1,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS="
       "1,AHEAD=0"});
  if (device.compute_capability() >= 90) {
    configs.push_back(Config::parse(
        "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
        "PIPE=3,SWZ=4,MINB=2,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS="
        "1,AHEAD=0"));
  }
  int checked = 0;
  for (const auto& [layout, m, n, k] :
       {std::tuple{"NN", 64, 8193, 16385}, std::tuple{"NT", 127, 16385, 8193}}) {
    const Problem p = packed_problem(layout, m, n, k);
    for (const Config& c : configs) {
      SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " " + c.canonical());
      ASSERT_LT(pack_pass_k(c, p), p.k);  // the problem really runs in passes
      const auto kernel = kernels.get(kernel_spec(c, p), device);
      GemmTask task(device, p, check);
      task.allocate();
      task.fresh_inputs(3000 + checked, stream.get());
      // FP64 sums: each pass adds one rounding of C, far inside the contract.
      expect_right(device, task.check(*kernel, c, stream.get()), c, p, task.tolerance());
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(2 * configs.size()));
}

// A user database (in the test's temporary directory) whose best for problem is config.
std::string database_with_best(const DeviceInfo& device, const Problem& problem,
                               const std::string& config) {
  const std::string path =
      ::testing::TempDir() + "gemm_families_" + std::to_string(getpid()) + ".db";
  std::remove(path.c_str());
  cache::Database db(path);
  cache::DeviceRecord d;
  d.uuid = device.uuid;
  d.name = device.name;
  db.upsert_device(d);
  cache::BestRecord best;
  best.key = problem_key(device, problem);
  best.config = config;
  best.ms = 1;
  EXPECT_TRUE(db.offer_best(best));
  return path;
}

// Split-K through tuned_gemm: a user database whose best for one shape is a split-K config, so
// the runtime gives it a workspace; repeated calls must give identical bits
// (deterministic reduction) and match cuBLAS.
std::vector<float> check_split_through_the_api(int m, int n, int k, const std::string& config,
                                               const std::string& expect_in_description);

TEST(GemmFamilies, SplitKThroughThePublicApiIsDeterministic) {
  TUNED_REQUIRE_GPU();
  check_split_through_the_api(
      96, 200, 3001,
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=6,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0",
      "SPLITK=6,PACK=0,REDUCE=0,TAIL=0,CSTAGE=0,KSUM=1");  // ffma: MMA implied, GCOLS, AHEAD unread
}

// The last block's sums and the summing pass's (one split config, before + REDUCE 0 or 1 + after),
// each through tuned_gemm on odd leading dims: the very same bits. 97 x 3073 has 98-196 tiles, too
// many for a launch to raise 6 splits (max_split_k), so both sum the same 6 partials.
void expect_sum_pass_equals_last_block(const std::string& before, const std::string& after,
                                       const std::string& described) {
  const auto last_block =
      check_split_through_the_api(97, 3073, 3001, before + "0" + after, described);
  const auto sum_pass =
      check_split_through_the_api(97, 3073, 3001, before + "1" + after, "REDUCE=1");
  ASSERT_EQ(last_block.size(), sum_pass.size());
  size_t differing = 0;
  for (size_t i = 0; i < last_block.size(); ++i) {
    differing += std::memcmp(&last_block[i], &sum_pass[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differing, 0u) << "of " << last_block.size() << " elements";
}

// Split-K on odd leading dims with A and B packed (VEC 4 on lda = 97, ldb = 3073, ldc = 97): the
// summing pass spread over many blocks gives the very bits of the last block's sum, repeatably.
TEST(GemmFamilies, SplitSumPassEqualsTheLastBlockSumOnPackedOperands) {
  TUNED_REQUIRE_GPU();
  expect_sum_pass_equals_last_block(
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=6,PACK=1,REDUCE=",
      ",TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0", "PACK=1");
}

// The same for an FP64 tensor-core split (sm_90+).
TEST(GemmFamilies, Fp64TensorCoreSplitKThroughThePublicApiIsDeterministic) {
  TUNED_REQUIRE_GPU();
  if (query_device(0).compute_capability() < 90) {
    GTEST_SKIP() << "GPU test skipped: MMA = 1 needs sm_90";
  }
  expect_sum_pass_equals_last_block(
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=6,PACK=1,REDUCE=",
      ",TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0", "MMA=1,CSTAGE=0,KSUM=0");
}

// The same for the matrix-vector kernel with split k: m = 1 (B's rows, n contiguous, in NT).
TEST(GemmFamilies, MatrixVectorSplitKThroughThePublicApiIsDeterministic) {
  TUNED_REQUIRE_GPU();
  check_split_through_the_api(1, 3001, 5001, gemv_config(64, 1, 12).canonical(), "GEMV=64");
}

// A packing config copies the operands whose pointer or leading dimension allows no 16-byte
// vectors, and the workspace holds room for those alone: through tuned_gemm (a user database's
// best for NN 96 x 200 x 3001), A one float off a 16-byte boundary under an aligned lda = 96 and B
// with ldb = 3001 are both copied, against cuBLAS on the same pointers, C NaN-poisoned. A problem
// that hides A's offset from the launch is refused, not given B's room alone to overrun.
TEST(GemmFamilies, PackingCopiesAnOperandWhosePointerIsOffUnderAnAlignedLeadingDim) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  constexpr int m = 96, n = 200, k = 3001;
  const Config config = Config::parse(
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0");
  const Problem packed = packed_problem("NN", m, n, k);
  const std::string path = database_with_best(device, packed, config.canonical());
  ASSERT_EQ(tuned_set_database(path.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  DeviceBuffer a(sizeof(float) * (m * k + 4)), b(sizeof(float) * k * n), c(sizeof(float) * m * n),
      ref(sizeof(float) * m * n);
  const float* a_off = a.as<float>() + 1;
  check.fill_uniform(a.as<float>(), size_t(m) * k + 4, 31, -1, 1, stream.get());
  check.fill_uniform(b.as<float>(), size_t(k) * n, 32, -1, 1, stream.get());
  char text[512];
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_N, m, n, k, a_off, m, b.as<float>(), k,
                                c.as<float>(), m, text, sizeof text),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  EXPECT_NE(std::string(text).find(config_text(config, parameters())), std::string::npos) << text;
  const float alpha = 1.5f, beta = 0.0f;
  DeviceCheck::poison(c.as<float>(), size_t(m) * n, stream.get());
  EXPECT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_N, m, n, k, &alpha, a_off, m, b.as<float>(), k, &beta,
                       c.as<float>(), m, stream.get()),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  {
    CublasHandle cublas;
    cublas.set_stream(stream.get());
    cublas_sgemm(cublas.get(), packed, alpha, a_off, b.as<float>(), beta, ref.as<float>());
  }
  const MatrixCheck vs_cublas =
      check.compare(c.as<float>(), m, ref.as<float>(), m, m, n, stream.get());
  EXPECT_TRUE(vs_cublas.passed(2e-5)) << vs_cublas.rel_error;
  EXPECT_EQ(vs_cublas.unwritten, 0);
  tuned_set_database(nullptr);
  std::remove(path.c_str());

  Problem hidden = packed;  // alignment class 1 (ldb), A's pointer not marked
  ASSERT_EQ(hidden.unaligned_operands, 0);
  DeviceBuffer workspace(workspace_bytes(config, hidden));
  const auto kernel = kernels.get(kernel_spec(config, hidden), device);
  try {
    launch(*kernel, config, hidden, alpha, a_off, b.as<float>(), beta, c.as<float>(),
           workspace.get(), stream.get(), nullptr);
    ADD_FAILURE() << "a launch with A's offset unmarked ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INTERNAL_ERROR);
    EXPECT_NE(std::string(e.what()).find("A's pointer"), std::string::npos) << e.what();
  }
  hidden.unaligned_operands = kOperandA;
  EXPECT_GT(workspace_bytes(config, hidden), workspace.bytes());
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

// Returns the first call's C (m x n) for comparisons between configs.
std::vector<float> check_split_through_the_api(int m, int n, int k, const std::string& config,
                                               const std::string& expect_in_description) {
  std::vector<float> result;
  const DeviceInfo device = query_device(0);
  const std::string path = database_with_best(device, packed_problem("NT", m, n, k), config);
  if (tuned_set_database(path.c_str()) != TUNED_STATUS_SUCCESS) {
    ADD_FAILURE() << tuned_last_error();
    return result;
  }
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  DeviceBuffer a(sizeof(float) * m * k), b(sizeof(float) * n * k), c(sizeof(float) * m * n),
      first(sizeof(float) * m * n), ref(sizeof(float) * m * n);
  char text[512];
  EXPECT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_T, m, n, k, a.as<float>(), m, b.as<float>(),
                                n, c.as<float>(), m, text, sizeof text),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  EXPECT_EQ(std::string(text).rfind("exact: ", 0), 0u) << text;
  EXPECT_NE(std::string(text).find(config), std::string::npos) << text;
  EXPECT_NE(std::string(text).find(expect_in_description), std::string::npos) << text;
  Stream s1 = Stream::create(), s2 = Stream::create();
  check.fill_uniform(a.as<float>(), size_t(m) * k, 11, -1, 1, s1.get());
  check.fill_uniform(b.as<float>(), size_t(n) * k, 12, -1, 1, s1.get());
  const float alpha = 0.5f, beta = 0.0f;
  auto call = [&](float* out, cudaStream_t stream) {
    DeviceCheck::poison(out, size_t(m) * n, stream);
    EXPECT_EQ(tuned_gemm(TUNED_OP_N, TUNED_OP_T, m, n, k, &alpha, a.as<float>(), m, b.as<float>(),
                         n, &beta, out, m, stream),
              TUNED_STATUS_SUCCESS)
        << tuned_last_error();
  };
  call(first.as<float>(), s1.get());
  TUNED_CUDA_CHECK(cudaStreamSynchronize(s1.get()));
  {
    CublasHandle cublas;
    cublas.set_stream(s1.get());
    Problem p = packed_problem("NT", m, n, k);
    cublas_sgemm(cublas.get(), p, alpha, a.as<float>(), b.as<float>(), beta, ref.as<float>());
  }
  const MatrixCheck vs_cublas = check.compare(first.as<float>(), m, ref.as<float>(), m, m, n, s1.get());
  EXPECT_TRUE(vs_cublas.passed(2e-5)) << vs_cublas.rel_error;
  // Repeated on two streams at once (one output each): each call has its own workspace, and the
  // sums are ordered.
  for (int rep = 0; rep < 20; ++rep) {
    call(c.as<float>(), s1.get());
    call(ref.as<float>(), s2.get());
  }
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  for (DeviceBuffer* out : {&c, &ref}) {
    const MatrixCheck same = check.compare(out->as<float>(), m, first.as<float>(), m, m, n, s1.get());
    EXPECT_EQ(same.rel_error, 0.0) << "split-K results differ between runs";
    EXPECT_EQ(same.unwritten, 0);
  }
  result.resize(size_t(m) * n);
  TUNED_CUDA_CHECK(cudaMemcpy(result.data(), first.get(), result.size() * sizeof(float),
                              cudaMemcpyDeviceToHost));
  tuned_set_database(nullptr);
  std::remove(path.c_str());
  return result;
}

}  // namespace
}  // namespace tuned::gemm_op
