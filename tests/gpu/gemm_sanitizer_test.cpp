// Every GEMM family on one small odd problem per layout, sized to run under compute-sanitizer's
// racecheck and synccheck in minutes (archive/2026-12/scripts/issue31_runs.sh sanitize: the
// families' own tests did not finish under racecheck in 270 s). Shared memory is reused between
// pipeline stages, by the staged C tile after the product and, in the wgmma kernels, between a
// producer warpgroup and the consumers through mbarriers: the sanitizers check those hand-offs;
// this test checks the results (NaN-poisoned C, beta = 0, then alpha and beta on the edge shape;
// not the wide-range probe of the tuner's check, whose k = 65536 would take the sanitizers far
// longer).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_task.hpp"

namespace tuned::gemm_op {
namespace {

struct Family {
  const char* name;
  int min_cc, max_cc;  // compute capabilities it runs on
  const char* config;
  const char* compute = "";  // the compute type's variant suffix (plain TF32: "-tf32")
};

const std::vector<Family>& families() {
  static const std::vector<Family> list = {
      {"FFMA, cp.async stages, k in partial chains", 70, 999,
       "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,"
       "GCOLS=1,AHEAD=0"},
      {"FFMA, register prefetch, staged C", 70, 999,
       "GEMV=0,BM=16,BN=32,BK=8,WM=16,WN=16,TM=2,TN=1,LM=8,VEC=1,PAD=4,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=1,KSUM=1,"
       "GCOLS=1,AHEAD=0"},
      {"FP64 tensor cores, staged C", 90, 999,
       "GEMV=0,BM=64,BN=64,BK=16,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=0,BKM=1,UNROLL=8,"
       "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=1,KSUM=0,"
       "GCOLS=1,AHEAD=0"},
      {"split TF32, mma.sync", 80, 999,
       "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=2,CSTAGE=0,KSUM=1,"
       "GCOLS=1,AHEAD=0"},
      {"split TF32, wgmma, register-fed producer", 90, 90,
       "GEMV=0,BM=64,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=1,KSUM=1,"
       "GCOLS=1,AHEAD=1"},
      {"split TF32, wgmma, TMA-fed, staged C", 90, 90,
       "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=1,KSUM=1,"
       "GCOLS=1,AHEAD=0"},
      {"split TF32, wgmma, TMA-fed, split-K", 90, 90,
       "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=2,PACK=1,REDUCE=1,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,"
       "GCOLS=1,AHEAD=0"},
      {"plain TF32 (the TF32 compute type), wgmma, TMA-fed", 90, 90,
       "GEMV=0,BM=128,BN=64,BK=32,WM=16,WN=64,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
       "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=5,CSTAGE=0,KSUM=1,"
       "GCOLS=1,AHEAD=0",
       "-tf32"},
  };
  return list;
}

TEST(GemmUnderSanitizer, EveryFamilyIsRightOnASmallOddProblemInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int ran = 0;
  for (const Family& family : families()) {
    const int cc = device.compute_capability();
    if (cc < family.min_cc || cc > family.max_cc) continue;
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      // Odd leading dims (packed where the family reads 16-byte runs); k past the wgmma
      // kernels' least (128), over several slices and stages.
      const Problem p = packed_problem(std::string(layout) + family.compute, 67, 45, 259);
      const Config c = fit_config(with_operands_as_stored(Config::parse(family.config), p),
                                  device, p);
      SCOPED_TRACE(std::string(family.name) + ", " + layout + " 67x45x259 " + c.canonical());
      GemmTask task(device, p, check);
      task.allocate();
      task.fresh_inputs(31 + ran, stream.get());
      const MatrixCheck result =
          task.check_uniform(*kernels.get(kernel_spec(c, p), device), c, stream.get());
      EXPECT_TRUE(result.computes(task.tolerance()))
          << "rel error " << result.rel_error << ", unwritten " << result.unwritten
          << ", non-finite " << result.nonfinite;
      ++ran;
    }
  }
  EXPECT_GE(ran, 8);  // FFMA's two families at least
}

}  // namespace
}  // namespace tuned::gemm_op
