// The GEMM space on the CPU: rendering, constraints, enumeration, and NVRTC compiles of a sample
// of the space for sm_80 and sm_90 with their resource reports.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "generator/nvrtc_compiler.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::gemm_op {
namespace {

TEST(GemmSpace, ConfigRendersOptionsNameAndCanonicalText) {
  const Config c = Config::parse(
      "BM=128,BN=64,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  EXPECT_EQ(c.canonical(),
            "BM=128,BN=64,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  EXPECT_EQ(Config::parse(c.canonical()), c);
  const Problem p = packed_problem("TN", 100, 200, 300);
  EXPECT_EQ(kernel_name(c, p),
            "gemm_tn_bm128_bn64_bk8_wm64_wn32_tm4_tn4_lm8_vec4_pad4_akm1_unroll8_prefetch1");
  const KernelSpec spec = kernel_spec(c, p);
  EXPECT_EQ(spec.options[0], "-DKERNEL_NAME=" + spec.kernel_name);
  EXPECT_EQ(spec.options[1], "-DTRANS_A=1");
  EXPECT_EQ(spec.options[2], "-DTRANS_B=0");
  EXPECT_EQ(spec.options[3], "-DBM=128");
  EXPECT_EQ(spec.options.back(), "-DPREFETCH=1");
  // Geometry comes from the same values: 4 warps of 64x32 in a 128x64 tile.
  const LaunchGeometry g = geometry(c, p);
  EXPECT_EQ(g.block.x, 128u);
  EXPECT_EQ(g.grid.x, 1u);  // ceil(100 / 128)
  EXPECT_EQ(g.grid.y, 4u);  // ceil(200 / 64)
  EXPECT_EQ(g.dynamic_smem_bytes, 2u * (8 * 132 + 8 * 68) * 4);
}

TEST(GemmSpace, MalformedConfigTextIsAConfigError) {
  for (const char* bad : {"BM", "BM=", "=4", "BM=12x", "BM=1,BM=2"}) {
    try {
      Config::parse(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR) << bad;
    }
  }
}

TEST(GemmSpace, EnumerationMeetsEveryConstraint) {
  const DeviceInfo dev = reference_device(90);
  const Problem p = packed_problem("NN", 4096, 4096, 4096);
  Space space = make_space(dev, p);
  space.restrict({{"PAD", {4}}, {"UNROLL", {1, 8}}});  // keeps the walk short
  size_t visited = 0;
  std::set<std::string> seen;
  space.for_each([&](const Config& c) {
    if (visited++ % 97 == 0) {
      EXPECT_FALSE(space.violation(c).has_value()) << c.canonical();
      EXPECT_LE(threads_per_block(c), 1024);
      EXPECT_LE(shared_bytes(c), dev.smem_per_block_optin);
      EXPECT_TRUE(seen.insert(c.canonical()).second);
    }
    return true;
  });
  EXPECT_GT(visited, 1000u);
  EXPECT_LT(static_cast<double>(visited), space.unconstrained_size());
  // Sampling and neighbours stay inside the space.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20; ++i) {
    const auto c = space.sample(rng);
    ASSERT_TRUE(c.has_value());
    EXPECT_FALSE(space.violation(*c).has_value());
    for (const auto& nb : space.neighbors(*c)) {
      EXPECT_FALSE(space.violation(nb).has_value());
      EXPECT_FALSE(nb == *c);
    }
  }
  // The classic ladder rungs are points of the space.
  for (const char* rung :
       {"BM=16,BN=16,BK=16,WM=16,WN=2,TM=1,TN=1,LM=16,VEC=1,PAD=0,AKM=0,UNROLL=1,PREFETCH=0",
        "BM=32,BN=32,BK=32,WM=32,WN=1,TM=1,TN=1,LM=32,VEC=1,PAD=0,AKM=1,UNROLL=32,PREFETCH=0",
        "BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1"}) {
    EXPECT_FALSE(space.violation(Config::parse(rung)).has_value()) << rung;
  }
}

TEST(GemmSpace, ConstraintsNameWhatTheyReject) {
  const DeviceInfo dev = reference_device(90);
  const Problem p = packed_problem("NN", 4095, 4096, 4096);  // m odd: alignment class 1
  EXPECT_EQ(p.alignment, 1);
  const Space space = make_space(dev, p);
  auto c = Config::parse(
      "BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  EXPECT_EQ(space.violation(c).value_or(""), "vec_fits_alignment");
  c.set("VEC", 1);
  EXPECT_FALSE(space.violation(c).has_value());
  c.set("WM", 128);
  c.set("WN", 128);  // 512 accumulators per lane
  EXPECT_EQ(space.violation(c).value_or(""), "accumulators_per_thread");
  // fit_config lowers VEC for an unaligned problem and keeps everything else.
  const Config fitted = fit_config(Config::parse(
      "BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1"),
      dev, p);
  EXPECT_EQ(fitted.get("VEC"), 1);
  EXPECT_EQ(fitted.get("BM"), 128);
}

TEST(GemmSpace, RestrictionsNarrowTheSpaceAndUnknownNamesAreErrors) {
  const DeviceInfo dev = reference_device(90);
  Space space = make_space(dev, packed_problem("NN", 1024, 1024, 1024));
  space.restrict({{"BM", {64}}, {"BN", {64}}, {"PREFETCH", {1}}});
  for (const auto& c : space.enumerate()) {
    EXPECT_EQ(c.get("BM"), 64);
    EXPECT_EQ(c.get("PREFETCH"), 1);
  }
  try {
    space.restrict({{"BX", {64}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
    EXPECT_NE(std::string(e.what()).find("BX"), std::string::npos);
  }
}

TEST(GemmSpace, ValidatesArgumentsNamingTheRule) {
  float one = 1.0f;
  float buf[4];
  auto expect_error = [&](auto&& call, const std::string& argument) {
    try {
      call();
      FAIL() << argument;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(e.what()).rfind(argument + ":", 0), 0u) << e.what();
    }
  };
  expect_error([&] { validate_arguments(0, 0, -1, 2, 2, &one, buf, 2, buf, 2, &one, buf, 2); }, "m");
  expect_error([&] { validate_arguments(0, 0, 2, -3, 2, &one, buf, 2, buf, 2, &one, buf, 2); }, "n");
  expect_error([&] { validate_arguments(0, 0, 2, 2, -1, &one, buf, 2, buf, 2, &one, buf, 2); }, "k");
  expect_error([&] { validate_arguments(0, 0, 4, 2, 2, &one, buf, 3, buf, 2, &one, buf, 4); }, "lda");
  expect_error([&] { validate_arguments(1, 0, 4, 2, 5, &one, buf, 4, buf, 5, &one, buf, 4); }, "lda");
  expect_error([&] { validate_arguments(0, 0, 4, 2, 5, &one, buf, 4, buf, 4, &one, buf, 4); }, "ldb");
  expect_error([&] { validate_arguments(0, 0, 4, 2, 2, &one, buf, 4, buf, 2, &one, buf, 3); }, "ldc");
  expect_error([&] { validate_arguments(0, 0, 2, 2, 2, &one, nullptr, 2, buf, 2, &one, buf, 2); }, "A");
  expect_error([&] { validate_arguments(0, 0, 2, 2, 2, &one, buf, 2, nullptr, 2, &one, buf, 2); }, "B");
  expect_error([&] { validate_arguments(0, 0, 2, 2, 2, &one, buf, 2, buf, 2, &one, nullptr, 2); }, "C");
  expect_error([&] { validate_arguments(0, 0, 2, 2, 2, nullptr, buf, 2, buf, 2, &one, buf, 2); }, "alpha");
  expect_error([&] { validate_arguments(2, 0, 2, 2, 2, &one, buf, 2, buf, 2, &one, buf, 2); }, "op_a");
  // Empty problems read nothing: null matrices are fine.
  EXPECT_NO_THROW(validate_arguments(0, 0, 0, 5, 5, &one, nullptr, 1, nullptr, 5, &one, nullptr, 1));
  EXPECT_NO_THROW(validate_arguments(0, 0, 3, 3, 0, &one, nullptr, 3, nullptr, 1, &one, buf, 3));
}

TEST(GemmSpace, AlignmentClassLooksAtPointersAndLeadingDims) {
  alignas(16) float buf[16];
  EXPECT_EQ(alignment_class(buf, buf, buf, 8, 8, 8), 4);
  EXPECT_EQ(alignment_class(buf, buf, buf, 8, 6, 8), 2);
  EXPECT_EQ(alignment_class(buf + 1, buf, buf, 8, 8, 8), 1);
  EXPECT_EQ(alignment_class(buf + 2, buf, buf, 8, 8, 8), 2);
}

// NVRTC needs no GPU: compile a random sample of the space for both architectures and read the
// resource report back. Every sampled config must compile, and none of the sample may spill more
// than a little (a sign the space admits configs the register file cannot hold).
class GemmCompileSample : public ::testing::TestWithParam<int> {};

TEST_P(GemmCompileSample, SampleOfTheSpaceCompilesWithResourceReport) {
  const int cc = GetParam();
  const DeviceInfo dev = reference_device(cc);
  const char* layouts[] = {"NN", "NT", "TN", "TT"};
  std::mt19937_64 rng(20261122 + cc);
  int compiled = 0;
  for (int i = 0; i < 6; ++i) {
    const Problem p = packed_problem(layouts[i % 4], 1000, 999, 130);
    const auto sampled = make_space(dev, p).sample(rng);
    ASSERT_TRUE(sampled.has_value());
    const Config& c = *sampled;
    const KernelSpec spec = kernel_spec(c, p);
    CompileRequest request{spec.source_name, spec.source, spec.kernel_name, spec.options, cc};
    CompiledKernel k;
    ASSERT_NO_THROW(k = compile_kernel(request)) << c.canonical();
    EXPECT_GT(k.image.size(), 1000u);
    EXPECT_GT(k.resources.registers, 0) << k.log;
    EXPECT_LE(k.resources.registers, 255);
    EXPECT_NE(k.log.find(spec.kernel_name), std::string::npos);
    ++compiled;
  }
  EXPECT_EQ(compiled, 6);
}

INSTANTIATE_TEST_SUITE_P(Archs, GemmCompileSample, ::testing::Values(80, 90));

TEST(GemmCompile, MissingParameterFailsWithTheNvrtcLog) {
  const Problem p = packed_problem("NN", 64, 64, 64);
  KernelSpec spec = kernel_spec(default_config(reference_device(90), p), p);
  spec.options.erase(spec.options.begin() + 4);  // drop -DBN=...
  CompileRequest request{spec.source_name, spec.source, spec.kernel_name, spec.options, 90};
  try {
    compile_kernel(request);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_COMPILE_ERROR);
    EXPECT_NE(std::string(e.what()).find("BN must be defined"), std::string::npos) << e.what();
  }
}

TEST(GemmCompile, ReportParserReadsPtxasLines) {
  const std::string log =
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Used 12 registers\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas info    : Function properties for k\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 128 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n";
  const ResourceReport r = parse_ptxas_report(log, "k");
  EXPECT_EQ(r.registers, 128);
  EXPECT_EQ(r.stack_bytes, 16);
  EXPECT_EQ(r.spill_bytes(), 12);
  EXPECT_EQ(r.static_smem_bytes, 2048);
}

}  // namespace
}  // namespace tuned::gemm_op
