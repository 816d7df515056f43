// The GEMM space on the CPU: rendering, constraints, enumeration, and NVRTC compiles of a sample
// of the space for sm_80 and sm_90 with their resource reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "generator/nvrtc_compiler.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::gemm_op {
namespace {

TEST(GemmSpace, ConfigRendersOptionsNameAndCanonicalText) {
  const Config c = Config::parse(
      "GEMV=0,BM=128,BN=64,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=1,"
      "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
  EXPECT_EQ(c.canonical(),
            "GEMV=0,BM=128,BN=64,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
            "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,"
            "GCOLS=1,AHEAD=0");
  EXPECT_EQ(Config::parse(c.canonical()), c);
  const Problem p = packed_problem("TN", 100, 200, 300);
  EXPECT_EQ(
      kernel_name(c, p),
      "gemm_tn_gemv0_bm128_bn64_bk8_wm64_wn32_tm4_tn4_lm8_vec4_pad4_akm1_bkm1_unroll8_pipe1_swz0_"
      "minb1_pretb0_splitk1_tail0_mma0_cstage0_ksum0_gcols1_ahead0");
  const KernelSpec spec = kernel_spec(c, p);
  EXPECT_EQ(spec.options[0], "-DKERNEL_NAME=" + spec.kernel_name);
  EXPECT_EQ(spec.options[1], "-DTRANS_A=1");
  EXPECT_EQ(spec.options[2], "-DTRANS_B=0");
  EXPECT_EQ(spec.options[3], "-DC_VEC=4");
  EXPECT_EQ(spec.options[4], "-DKSUM_CHAIN=96");  // the accuracy contract's longest FFMA sum
  EXPECT_EQ(spec.options[5], "-DBATCHED=0");   // one product: the plain kernel
  EXPECT_EQ(spec.options[6], "-DEPILOGUE=0");  // no bias or activation fused
  EXPECT_EQ(spec.options[7], "-DGEMV=0");
  EXPECT_EQ(spec.options[8], "-DBM=128");
  // A batch and a fused epilogue are forms of the same config: other kernels, other names.
  Problem batched = packed_problem("TN", 100, 200, 300, 6);
  batched.epilogue = epilogue_form({BiasKind::kColumn, nullptr, 0, Activation::kNone});
  const KernelSpec forms = kernel_spec(c, batched);
  EXPECT_EQ(forms.kernel_name, spec.kernel_name + "_batched_epilogue");
  EXPECT_EQ(forms.options[5], "-DBATCHED=1");
  EXPECT_EQ(forms.options[6], "-DEPILOGUE=1");
  // Each activation is compiled into a kernel of its own (with or without a bias).
  batched.epilogue = epilogue_form({BiasKind::kNone, nullptr, 0, Activation::kGeluErf});
  EXPECT_EQ(kernel_spec(c, batched).kernel_name, spec.kernel_name + "_batched_epilogue_gelu_erf");
  EXPECT_EQ(kernel_spec(c, batched).options[6], "-DEPILOGUE=4");
  batched.epilogue = epilogue_form({BiasKind::kRow, nullptr, 0, Activation::kRelu});
  EXPECT_EQ(kernel_spec(c, batched).kernel_name, spec.kernel_name + "_batched_epilogue_relu");
  EXPECT_EQ(epilogue_form({}), 0);
  // PACK and REDUCE are the launch's: neither in the kernel's name nor among its options.
  // Last the kernel's parameters, then the shared strides the host derives (BM + PAD, BN + PAD,
  // and the staged C tile's BM + 4, passed even where it is not staged).
  const size_t n = spec.options.size();
  EXPECT_EQ(spec.options[n - 9], "-DTAIL=0");
  EXPECT_EQ(spec.options[n - 8], "-DMMA=0");
  EXPECT_EQ(spec.options[n - 7], "-DCSTAGE=0");
  EXPECT_EQ(spec.options[n - 6], "-DKSUM=0");
  EXPECT_EQ(spec.options[n - 5], "-DGCOLS=1");  // configs recorded before it take one vector
  EXPECT_EQ(spec.options[n - 4], "-DAHEAD=0");  // nor before it the producer two slices ahead
  EXPECT_EQ(spec.options[n - 3], "-DA_STRIDE=132");
  EXPECT_EQ(spec.options[n - 2], "-DB_STRIDE=68");
  EXPECT_EQ(spec.options[n - 1], "-DC_STRIDE=132");
  Config host_side = c;
  host_side.set("PACK", 1);
  host_side.set("REDUCE", 1);
  EXPECT_EQ(kernel_spec(host_side, p).kernel_name, spec.kernel_name);
  EXPECT_EQ(kernel_spec(host_side, p).options, spec.options);
  // Packed on an unaligned problem, C keeps its own (narrower) stores: a kernel of its own.
  const Problem odd = packed_problem("TN", 101, 200, 300);
  const KernelSpec narrow_c = kernel_spec(host_side, odd);
  EXPECT_EQ(narrow_c.kernel_name, spec.kernel_name + "_cvec1");
  EXPECT_EQ(narrow_c.options[3], "-DC_VEC=1");
  // Geometry comes from the same values: 4 warps of 64x32 in a 128x64 tile.
  const LaunchGeometry g = geometry(c, p);
  EXPECT_EQ(g.block.x, 128u);
  EXPECT_EQ(g.grid.x, 4u);  // ceil(100 / 128) * ceil(200 / 64) tiles
  EXPECT_EQ(g.grid.y, 1u);  // no split of k
  EXPECT_EQ(g.dynamic_smem_bytes, 2u * (8 * 132 + 8 * 68) * 4);
  EXPECT_EQ(workspace_bytes(c, p), 0u);
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
  // Keeps the walk short.
  space.restrict({{"PAD", {4}}, {"UNROLL", {1, 8}}, {"BKM", {1}}, {"PIPE", {1, 3}}, {"SWZ", {0, 8}},
                  {"MINB", {1}}, {"SPLITK", {1}}});
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
  // The classic ladder rungs (single FFMA chains) are points of the (unrestricted) space where k
  // is short enough for one chain; the restriction excludes those with values it removed.
  const Problem short_k = packed_problem("NN", 4096, 4096, 96);
  const Space full = make_space(dev, short_k);
  Space restricted = make_space(dev, short_k);
  restricted.restrict({{"PAD", {4}}});
  for (const char* rung :
       {"GEMV=0,BM=16,BN=16,BK=16,WM=16,WN=2,TM=1,TN=1,LM=16,VEC=1,PAD=0,AKM=0,BKM=1,UNROLL=1,PIPE="
        "0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
        "AHEAD=0",
        "GEMV=0,BM=32,BN=32,BK=32,WM=32,WN=1,TM=1,TN=1,LM=32,VEC=1,PAD=0,AKM=1,BKM=1,UNROLL=32,"
        "PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
        "AHEAD=0",
        "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,"
        "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS="
        "1,AHEAD=0"}) {
    EXPECT_FALSE(full.violation(Config::parse(rung)).has_value()) << rung;
  }
  EXPECT_EQ(restricted.violation(Config::parse(
                "GEMV=0,BM=16,BN=16,BK=16,WM=16,WN=2,TM=1,TN=1,LM=16,VEC=1,PAD=0,AKM=0,BKM=1,"
                "UNROLL=1,PIPE=0,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE="
                "0,KSUM=0,GCOLS=1,AHEAD=0")),
            std::optional<std::string>("PAD_in_space"));
}

TEST(GemmSpace, ConstraintsNameWhatTheyReject) {
  const DeviceInfo dev = reference_device(90);
  // m odd: alignment class 1; k short enough for the single FFMA chains below.
  const Problem p = packed_problem("NN", 4095, 4096, 96);
  EXPECT_EQ(p.alignment, 1);
  const Space space = make_space(dev, p);
  auto c = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE="
      "1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD="
      "0");
  EXPECT_EQ(space.violation(c).value_or(""), "vec_fits_alignment");
  // The matrix-vector kernel checks its operands at launch: VEC 4 on any alignment, kept by
  // fit_config, where a tile config packs its operands (here, where that pays) or narrows VEC.
  const Problem logits = packed_problem("TN", 50001, 4, 1024);  // ldc odd, A and B aligned
  ASSERT_EQ(logits.alignment, 1);
  EXPECT_FALSE(make_space(dev, logits).violation(gemv_config(64, 4, 4, 4), false).has_value());
  EXPECT_EQ(fit_config(gemv_config(64, 4, 4, 4), dev, logits).get("VEC"), 4);
  EXPECT_EQ(fit_config(c, dev, p).get("PACK"), 1);
  c.set("VEC", 1);
  EXPECT_FALSE(space.violation(c).has_value());
  c.set("WM", 128);
  c.set("WN", 128);  // 512 accumulators per lane
  EXPECT_EQ(space.violation(c).value_or(""), "accumulators_per_thread");
  // Packing lets the wide vector stay; on an aligned problem packing is pruned (nothing to copy).
  c.set("WM", 64);
  c.set("WN", 32);
  c.set("VEC", 4);
  c.set("PACK", 1);
  EXPECT_FALSE(space.violation(c, /*include_pruning=*/true).has_value());
  const Space aligned = make_space(dev, packed_problem("NN", 4096, 4096, 96));
  EXPECT_EQ(aligned.violation(c, /*include_pruning=*/false).value_or(""), "");
  EXPECT_EQ(aligned.violation(c, /*include_pruning=*/true).value_or(""), "pack_for_wider_vectors");
  c.set("PACK", 0);
  c.set("REDUCE", 1);  // a summing pass with nothing split
  EXPECT_EQ(aligned.violation(c, /*include_pruning=*/false).value_or(""), "reduce_pass_needs_splits");
  c.set("SPLITK", 2);
  EXPECT_EQ(aligned.violation(c, /*include_pruning=*/false).value_or(""), "");

  // fit_config keeps VEC by packing where the copies are cheap next to the product (4095x4096), and
  // narrows it where they are not (a small or skinny product); everything else is kept.
  const Config wide = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE="
      "1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD="
      "0");
  const Config fitted = fit_config(wide, dev, p);
  EXPECT_EQ(fitted.get("VEC"), 4);
  EXPECT_EQ(fitted.get("PACK"), 1);
  EXPECT_EQ(fitted.get("BM"), 128);
  // Only the unaligned operands are copied: none where C alone is (a vocabulary's logits), a
  // small A under a long n (a first convolution's input gradient).
  for (const Problem& cheap :
       {packed_problem("TN", 50001, 512, 96), packed_problem("NN", 27, 1000000, 64)}) {
    ASSERT_EQ(cheap.alignment, 1);
    EXPECT_TRUE(packing_pays(cheap));
    EXPECT_EQ(fit_config(wide, dev, cheap).get("PACK"), 1);
  }
  const OpFace& face = *registration().face;
  Config packing = wide;
  packing.set("PACK", 1);
  // A packing entry is predicted (the selection model, first use) only where its copies take at
  // most half the product's time: not on a first layer's forward product, whose k = 27 leaves all
  // of B to copy; on a medium product whose copies merely fail to pay, yes.
  EXPECT_TRUE(face.transfers_to(packing, problem_id(packed_problem("NN", 1016, 1095, 1279))));
  EXPECT_FALSE(packing_pays(packed_problem("NN", 1016, 1095, 1279)));
  EXPECT_TRUE(face.transfers_to(packing, problem_id(packed_problem("NN", 27, 1000000, 64))));
  EXPECT_TRUE(face.transfers_to(packing, problem_id(packed_problem("TN", 64, 1000000, 64))));
  EXPECT_FALSE(face.transfers_to(packing, problem_id(packed_problem("TN", 64, 1000000, 27))));
  EXPECT_TRUE(face.transfers_to(wide, problem_id(packed_problem("TN", 64, 1000000, 27))));
  for (const Problem& small :
       {packed_problem("NN", 999, 1000, 100), packed_problem("NN", 4095, 64, 96)}) {
    EXPECT_FALSE(packing_pays(small));
    const Config narrowed = fit_config(wide, dev, small);
    EXPECT_EQ(narrowed.get("VEC"), 1);
    EXPECT_EQ(narrowed.get("PACK"), 0);
  }
}

TEST(GemmSpace, PackedOperandsAndSplitSumsHaveTheirWorkspace) {
  const Config c = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE="
      "1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD="
      "0");
  // NN 4095 x 4097 x 4093: A (4095 x 4093) and B (4093 x 4097) copied with leading dims 4096 and
  // 4096, each rounded up to 256 bytes.
  const Problem p = packed_problem("NN", 4095, 4097, 4093);
  const size_t a = (4096ull * 4093 * 4 + 255) / 256 * 256, b = (4096ull * 4097 * 4 + 255) / 256 * 256;
  EXPECT_EQ(workspace_bytes(c, p), a + b);
  // Transposed operands are copied as stored: TT A is k x m, B is n x k.
  const Problem t = packed_problem("TT", 4095, 4097, 4093);
  EXPECT_EQ(workspace_bytes(c, t), (4096ull * 4095 * 4 + 255) / 256 * 256 + (4100ull * 4093 * 4 + 255) / 256 * 256);
  // Aligned operands: nothing to copy.
  EXPECT_EQ(workspace_bytes(c, packed_problem("NN", 4096, 4096, 4096)), 0u);
  // Only the unaligned operand gets room: a vocabulary-long sum (NN 1000 x 300 x 40001) copies B
  // (40001 x 300, an odd ld) alone, not A's 160 MB, unless A's pointer is off 16 bytes.
  Problem vocab = packed_problem("NN", 1000, 300, 40001);
  const size_t vocab_b = (40004ull * 300 * 4 + 255) / 256 * 256;
  EXPECT_EQ(workspace_bytes(c, vocab), vocab_b);
  vocab.unaligned_operands = kOperandA;
  EXPECT_EQ(workspace_bytes(c, vocab), (1000ull * 40001 * 4 + 255) / 256 * 256 + vocab_b);
  // Aligned leading dims with B's pointer off: B alone.
  Problem off_b = packed_problem("NN", 4096, 4096, 4096);
  off_b.alignment = 1;
  off_b.unaligned_operands = kOperandB;
  EXPECT_EQ(workspace_bytes(c, off_b), (4096ull * 4096 * 4 + 255) / 256 * 256);
  // The runtime sizes a call's workspace from its problem id, which keeps no leading dimension:
  // a call's padded odd lds (NN 796 x 913 x 1100, lda = 803, ldb = 1105: the smallest lds of the
  // shape are multiples of 4) get the room its launch copies into, as do pointers off 16 bytes.
  alignas(16) static float operand[8];
  for (const auto& [pa, lda, pb, ldb] :
       {std::tuple{operand, 803, operand, 1105}, std::tuple{operand + 1, 796, operand, 1105},
        std::tuple{operand, 796, operand + 2, 1100}}) {
    Problem call = packed_problem("NN", 796, 913, 1100);
    call.lda = lda;
    call.ldb = ldb;
    call.alignment = alignment_class(pa, pb, operand, lda, ldb, call.ldc);
    call.unaligned_operands = unaligned_operands(pa, lda, pb, ldb);
    EXPECT_GT(workspace_bytes(c, call), 0u);
    EXPECT_EQ(workspace_bytes(c, Descriptor::problem_of(problem_id(call))),
              workspace_bytes(c, call))
        << "lda " << lda << ", ldb " << ldb;
  }
  // With PRETB, B is already copied (transposed, aligned): only A gets room of its own.
  Config pretb = c;
  pretb.set("PRETB", 1);
  EXPECT_EQ(workspace_bytes(pretb, p), (4100ull * 4093 * 4 + 255) / 256 * 256 + a);
  // The summing pass uses the split workspace as it is: REDUCE changes no byte of it.
  Config split = c;
  split.set("PACK", 0);
  split.set("SPLITK", 8);
  const Problem q = packed_problem("NN", 256, 256, 65536);
  const size_t split_bytes = workspace_bytes(split, q);
  EXPECT_EQ(split_bytes, 8u * 4 * 128 * 128 * 4 + 4 * 4);  // 128 x 128 tiles: never raised
  split.set("REDUCE", 1);
  EXPECT_EQ(workspace_bytes(split, q), split_bytes);
  // A tail split reserves its bound (512 partial tiles and tickets, fewer for fewer tiles: at most
  // 8 splits a tile); it needs SPLITK = 1.
  Config tail = c;
  tail.set("PACK", 0);
  tail.set("TAIL", 1);
  EXPECT_EQ(workspace_bytes(tail, packed_problem("NN", 4096, 4096, 4096)), 512u * (128 * 128 * 4 + 4));
  EXPECT_EQ(workspace_bytes(tail, packed_problem("NN", 300, 100, 4096)), 24u * (128 * 128 * 4 + 4));
  const DeviceInfo dev = reference_device(90);
  const Space space = make_space(dev, packed_problem("NN", 4096, 4096, 96));
  EXPECT_EQ(space.violation(tail, /*include_pruning=*/true).value_or(""), "");
  tail.set("SPLITK", 2);
  EXPECT_EQ(space.violation(tail, /*include_pruning=*/false).value_or(""), "tail_split_or_split_k");
  // One wave or less (64 tiles on 132 SMs): nothing to split, pruned.
  tail.set("SPLITK", 1);
  EXPECT_EQ(make_space(dev, packed_problem("NN", 1024, 1024, 96))
                .violation(tail, /*include_pruning=*/true)
                .value_or(""),
            "tail_after_full_waves");
}

// Operands too large to pack at once are packed and multiplied in passes over k: each pass's
// copies fit kMaxPackBytes, passes are whole multiples of kPackPassK, and the workspace holds one.
TEST(GemmSpace, PackingPastItsBoundRunsInPassesOverK) {
  const Config c = Config::parse(
      "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=3,SWZ=4,MINB=2,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  // A GPT-2 sized output layer's weight gradient: B is 50257 x 8192 as stored, 1.6 GB.
  const Problem big = packed_problem("NT", 1280, 50257, 8192);
  const int64_t pass = pack_pass_k(c, big);
  EXPECT_LT(pass, big.k);
  EXPECT_EQ(pass % kPackPassK, 0);
  EXPECT_LE(workspace_bytes(c, big), kMaxPackBytes);
  // As large as the bound allows: one more slice of k would not fit.
  const size_t per_slice = (1280ull + 50260ull) * kPackPassK * 4;
  EXPECT_GT(workspace_bytes(c, big) + per_slice, kMaxPackBytes);
  // Every layout, PRETB (B copied transposed, only A packed) too.
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    const Problem p = packed_problem(layout, 64, 8193, 16385);
    EXPECT_LT(pack_pass_k(c, p), p.k) << layout;
    EXPECT_LE(workspace_bytes(c, p), kMaxPackBytes) << layout;
  }
  // What fits packs in one pass; aligned operands and configs that do not pack are never split.
  EXPECT_EQ(pack_pass_k(c, packed_problem("NN", 4095, 4097, 4093)), 4093);
  EXPECT_EQ(pack_pass_k(c, packed_problem("NT", 1280, 50256, 8192)), 8192);
  Config unpacked = c;
  unpacked.set("PACK", 0);
  unpacked.set("VEC", 1);
  EXPECT_EQ(pack_pass_k(unpacked, big), big.k);
}

TEST(GemmSpace, RestrictionsNarrowTheSpaceAndUnknownNamesAreErrors) {
  const DeviceInfo dev = reference_device(90);
  Space space = make_space(dev, packed_problem("NN", 1024, 1024, 1024));
  space.restrict({{"BM", {64}}, {"BN", {64}}, {"PIPE", {1}}, {"SPLITK", {1, 2}}, {"SWZ", {0}}});
  for (const auto& c : space.enumerate()) {
    EXPECT_EQ(c.get("BM"), 64);
    EXPECT_EQ(c.get("PIPE"), 1);
  }
  try {
    space.restrict({{"BX", {64}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
    EXPECT_NE(std::string(e.what()).find("BX"), std::string::npos);
  }
  // Values the parameter cannot take (0 would divide by zero, 7 is no tile, -4 no padding) and
  // values given twice are refused, naming the parameter and the values it may take.
  for (const auto& [name, values, expected] :
       std::vector<std::tuple<std::string, std::vector<int>, std::string>>{
           {"WM", {0}, "WM = 0 is not a value WM can take (1, 2, 4, 8, 16, 32, 64, 128, 256)"},
           {"BM", {64, 7}, "BM = 7 is not a value BM can take (16, 32, 64, 128, 256)"},
           {"PAD", {-4}, "PAD = -4 is not a value PAD can take (0, 4)"},
           {"BK", {0}, "BK = 0"},
           {"SPLITK", {2, 2}, "SPLITK lists 2 twice"}}) {
    Space fresh = make_space(dev, packed_problem("NN", 1024, 1024, 1024));
    try {
      fresh.restrict({{name, values}});
      ADD_FAILURE() << name << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  // Every seed the op offers for a restricted problem is reported outside the restricted space
  // unless it keeps to it (the tuner drops the others).
  const auto seeds = seed_configs(dev, packed_problem("NN", 1024, 1024, 1024));
  ASSERT_GT(seeds.size(), 5u);
  int outside = 0;
  for (const Config& c : seeds) {
    const bool kept = c.get("BM") == 64 && c.get("BN") == 64 && c.get("PIPE") == 1 &&
                      c.get("SWZ") == 0 && (c.get("SPLITK") == 1 || c.get("SPLITK") == 2);
    EXPECT_EQ(space.violation(c, /*include_pruning=*/false).has_value(), !kept) << c.canonical();
    outside += !kept;
  }
  EXPECT_GT(outside, 0);
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

TEST(GemmSpace, SplitKGeometryAndWorkspace) {
  const DeviceInfo dev = reference_device(90);
  const Problem p = packed_problem("NN", 32, 4096, 768);  // 8 splits: chains of 96
  Config c = Config::parse(
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
  EXPECT_FALSE(make_space(dev, p).violation(c).has_value());
  const LaunchGeometry g = geometry(c, p);
  EXPECT_EQ(g.grid.x, 64u);  // 1 x 64 tiles
  EXPECT_EQ(g.grid.y, 8u);   // 8 splits of k
  EXPECT_EQ(g.dynamic_smem_bytes, 3u * (32 * 36 + 32 * 68) * 4);
  // 8 partial 32x64 tiles per tile, then one ticket per tile: an FFMA config's splits are never
  // raised (gemm.cu's kRaisableSplits).
  EXPECT_EQ(max_split_k(c, p), 8);
  EXPECT_EQ(workspace_bytes(c, p), 8u * 64 * 32 * 64 * 4 + 64 * 4);
  // A tensor-core tile of at most 64 x 64 may be raised by the launch to 2 x 8 - 1 = 15 splits
  // (split_k_count), and the workspace holds room for them,
  Config raisable = c;
  raisable.set("MMA", 1);
  EXPECT_EQ(max_split_k(raisable, p), 15);
  EXPECT_EQ(workspace_bytes(raisable, p), 15u * 64 * 32 * 64 * 4 + 64 * 4);
  // no more than slices of k (k = 320: 10 slices of 32),
  EXPECT_EQ(max_split_k(raisable, packed_problem("NN", 32, 4096, 320)), 10);
  // none where the raised partial tiles would pass their bound (69 tiles x 15 splits),
  static_assert(69 * 15 > kMaxRaisedSplitBlocks && 64 * 15 <= kMaxRaisedSplitBlocks);
  EXPECT_EQ(max_split_k(raisable, packed_problem("NN", 32, 69 * 64, 768)), 8);
  // none where a summing pass adds the partials or the tile is larger than 64 x 64,
  Config summed = raisable;
  summed.set("REDUCE", 1);
  EXPECT_EQ(max_split_k(summed, p), 8);
  EXPECT_EQ(workspace_bytes(summed, p), 8u * 64 * 32 * 64 * 4 + 64 * 4);
  Config wide = raisable;
  wide.set("BN", 256);
  EXPECT_EQ(max_split_k(wide, p), 8);
  // and none for configs that do not split k.
  Config whole = raisable;
  whole.set("SPLITK", 1);
  EXPECT_EQ(max_split_k(whole, p), 1);
  // Split-K is pruned where the tiles already fill the GPU.
  const Space big = make_space(dev, packed_problem("NN", 4096, 4096, 768));
  c.set("BM", 128);
  c.set("BN", 128);
  c.set("WM", 64);
  c.set("WN", 32);
  EXPECT_EQ(big.violation(c).value_or(""), "split_k_when_few_tiles");
  EXPECT_FALSE(big.violation(c, /*include_pruning=*/false).has_value());
}

// The face's selection features (the selection model weighs them against measured neighbours):
// padding = log(computed / useful outputs) of the tile grid, waves = log(slots of the last wave /
// blocks in it) at one block per SM; the matrix-vector kernel has waves only.
TEST(GemmSpace, SelectionFeaturesArePaddingAndWaveQuantization) {
  const OpFace& face = *registration().face;
  EXPECT_EQ(face.selection_feature_names(), (std::vector<std::string>{"padding", "waves"}));
  const Config c = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=4,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  std::vector<double> f;
  // 7573 x 41: 119 x 1 tiles of 64 x 64, 4 splits: 476 blocks on 132 SMs, 3.6 waves.
  face.selection_features(c, 132, {7573, 41, 11185}, f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[0], std::log(119.0 * 64 * 64 / (7573.0 * 41)), 1e-12);
  EXPECT_NEAR(f[1], std::log(4.0 / (476.0 / 132)), 1e-12);
  // Exact tiles filling whole waves: no inefficiency. Fewer blocks than SMs: the idle share.
  face.selection_features(c, 132, {64 * 33, 64 * 4, 100}, f);  // 33 x 4 x 4 = 528 = 4 waves
  face.selection_features(c, 132, {64, 64, 100}, f);            // 4 blocks
  ASSERT_EQ(f.size(), 6u);
  EXPECT_NEAR(f[2], 0.0, 1e-12);
  EXPECT_NEAR(f[3], 0.0, 1e-12);
  EXPECT_NEAR(f[4], 0.0, 1e-12);
  EXPECT_NEAR(f[5], std::log(132.0 / 4), 1e-12);
  // The matrix-vector kernel: no padding; a block per GEMV rows of y and split of k. 5000 rows of
  // y = C in blocks of 32, 8 splits: 1256 blocks, 9.5 waves; 1024 rows of y = C^T (m's vectors)
  // in one split: 32 blocks.
  f.clear();
  face.selection_features(gemv_config(32, 1, 8), 132, {5000, 1, 5000}, f);
  face.selection_features(gemv_config(32, 4, 1, 4), 132, {3, 1024, 4096}, f);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_NEAR(f[1], std::log(10.0 / (1256.0 / 132)), 1e-12);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_NEAR(f[3], std::log(132.0 / 32), 1e-12);
}

TEST(GemmSpace, PretransposedBReadsTheWorkspaceAsTransposed) {
  const DeviceInfo dev = reference_device(90);
  const Problem nn = packed_problem("NN", 4096, 1000, 112);  // k of one FFMA chain
  Config c = Config::parse(
      "GEMV=0,BM=256,BN=128,BK=16,WM=32,WN=128,TM=8,TN=8,LM=4,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  EXPECT_FALSE(make_space(dev, nn).violation(c).has_value());
  const KernelSpec spec = kernel_spec(c, nn);
  EXPECT_EQ(spec.options[2], "-DTRANS_B=1");  // the kernel reads B^T from the workspace
  // B is transposed by the transpose op, not a companion: those reset split-K tickets and pack.
  EXPECT_EQ(spec.companions,
            (std::vector<std::string>{"tuned_gemm_zero_tickets", "tuned_gemm_pack"}));
  EXPECT_EQ(workspace_bytes(c, nn), 1000u * 112 * 4);  // ld rounded to 1000, 256-byte multiple
  // Not for a B that is already n-contiguous, and pruned where m is small.
  EXPECT_EQ(make_space(dev, packed_problem("NT", 4096, 1000, 96)).violation(c).value_or(""),
            "pretranspose_needs_k_contiguous_b");
  EXPECT_EQ(make_space(dev, packed_problem("NN", 512, 1000, 96)).violation(c).value_or(""),
            "pretranspose_when_m_large");
}

TEST(GemmSpace, RegisterEstimatePrunesConfigsThatWouldSpill) {
  const DeviceInfo dev = reference_device(90);
  const Space space = make_space(dev, packed_problem("NN", 4096, 4096, 96));
  // 128 accumulators with register prefetch fit one block of 256 threads per SM ...
  Config c = Config::parse(
      "GEMV=0,BM=256,BN=128,BK=16,WM=32,WN=128,TM=8,TN=8,LM=4,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  EXPECT_FALSE(space.violation(c).has_value());
  EXPECT_GT(estimated_registers(c), 128);
  // ... but not two (128 registers each at most).
  c.set("MINB", 2);
  EXPECT_EQ(space.violation(c).value_or(""), "registers_fit");
}

TEST(GemmSpace, SeedsAreValidForEveryLayoutAndShapeClass) {
  const DeviceInfo dev = reference_device(90);
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (auto [m, n, k] : {std::tuple{4096, 4096, 4096}, std::tuple{32, 4096, 4096},
                           std::tuple{127, 127, 127}, std::tuple{4097, 4097, 4097}}) {
      const Problem p = packed_problem(layout, m, n, k);
      const auto seeds = seed_configs(dev, p);
      EXPECT_GE(seeds.size(), 2u) << layout << m;
      for (const auto& c : seeds) {
        EXPECT_FALSE(make_space(dev, p).violation(c, false).has_value()) << c.canonical();
      }
    }
  }
}

// The matrix-vector kernel takes up to 16 vectors at once (decoding's products): GCOLS is the
// fewest columns, a power of two, that hold the product's (so one config serves each class and
// none computes columns it throws away), n's when n fits it, else m's (then Y = C^T); tile
// configs keep 1; the split partials hold every column; the seeds offer the right class; and the
// widest kernels compile unspilled in every layout.
TEST(GemmSpace, MatrixVectorColumnsHoldTheVectorsAndSizeTheWorkspace) {
  const DeviceInfo dev = reference_device(90);
  auto refusal = [&](const Config& c, const char* layout, int64_t m, int64_t n) {
    return make_space(dev, packed_problem(layout, m, n, 1000)).violation(c, false).value_or("");
  };
  const Config four = gemv_config(64, 4, 1, 4);
  EXPECT_EQ(refusal(four, "TN", 1000, 3), "");
  EXPECT_EQ(refusal(four, "TN", 1000, 4), "");
  EXPECT_EQ(refusal(four, "NT", 4, 1000), "");  // m's vectors: Y = C^T
  EXPECT_EQ(refusal(four, "TN", 1000, 5), "gemv_gcols_holds_the_vectors");
  EXPECT_EQ(refusal(four, "TN", 1000, 2), "gemv_gcols_holds_the_vectors");  // 2 columns wasted
  EXPECT_EQ(refusal(gemv_config(64, 4, 1, 1), "NN", 1000, 2), "gemv_gcols_holds_the_vectors");
  EXPECT_EQ(refusal(gemv_config(64, 4, 1, 1), "NN", 1000, 1), "");
  Config tile = seed_configs(dev, packed_problem("NN", 1000, 1000, 1000)).front();
  tile.set("GCOLS", 2);
  EXPECT_EQ(refusal(tile, "NN", 1000, 2), "GCOLS_unread");  // the tile kernels do not read it
  // A config recorded before GCOLS (and AHEAD) takes one vector.
  const std::string one = gemv_config(64, 4, 1).canonical();
  ASSERT_EQ(one.substr(one.size() - 16), ",GCOLS=1,AHEAD=0");
  EXPECT_EQ(fit_config(Config::parse(one.substr(0, one.size() - 16)), dev,
                       packed_problem("NN", 1000, 1, 1000)),
            gemv_config(64, 4, 1));

  // 13 vectors in 16 columns: ceil(1000 / 64) row blocks, 8 splits of every column.
  const Config wide = gemv_config(64, 4, 8, 16);
  const Problem p = packed_problem("TN", 1000, 13, 5000);
  EXPECT_EQ(refusal(wide, "TN", 1000, 13), "");
  const LaunchGeometry g = geometry(wide, p);
  EXPECT_EQ(g.grid.x, 16u);
  EXPECT_EQ(g.grid.y, 8u);
  EXPECT_EQ(workspace_bytes(wide, p), 8u * 16 * 64 * 16 * 4 + 16 * 4);
  // m's vectors: the blocks are n's rows.
  EXPECT_EQ(geometry(wide, packed_problem("NT", 13, 1000, 5000)).grid.x, 16u);
  const KernelSpec spec = kernel_spec(wide, p);
  EXPECT_NE(std::find(spec.options.begin(), spec.options.end(), "-DGCOLS=16"), spec.options.end());

  // Its sums are float sums: the accuracy contract's longest (112) binds them. k contiguous (TN,
  // n's vectors): a lane sums every 32nd product of its split; rows adjacent (NN): a thread
  // every (256 / (GEMV / VEC))-th, then those threads' partials.
  const Problem decode = packed_problem("TN", 5120, 4, 13824);
  EXPECT_EQ(longest_ffma_sum(gemv_config(32, 4, 1, 4), decode), 432);
  EXPECT_EQ(longest_ffma_sum(gemv_config(32, 4, 4, 4), decode), 108);
  EXPECT_EQ(make_space(dev, decode).violation(gemv_config(32, 4, 1, 4), false).value_or(""),
            "float_sums_within_contract");
  EXPECT_FALSE(make_space(dev, decode).violation(gemv_config(32, 4, 4, 4), false).has_value());
  const Problem input_grad = packed_problem("NN", 5120, 4, 13824);
  EXPECT_EQ(longest_ffma_sum(gemv_config(16, 2, 4, 4), input_grad), 108);   // 32 k threads
  EXPECT_EQ(longest_ffma_sum(gemv_config(256, 4, 64, 4), input_grad), 56);  // 4 k threads
  EXPECT_EQ(longest_ffma_sum(gemv_config(256, 4, 4, 4), input_grad), 864);

  // The seeds of a decoding product hold the matrix-vector kernel of its class.
  for (auto [m, n, cols] :
       {std::tuple{5120, 4, 4}, std::tuple{7, 4096, 8}, std::tuple{4096, 16, 16}}) {
    const Problem decode = packed_problem("TN", m, n, 1280);
    int found = 0;
    for (const auto& c : seed_configs(dev, decode)) {
      if (is_gemv(c)) {
        EXPECT_EQ(c.get("GCOLS"), cols) << m << "x" << n;
        ++found;
      }
    }
    EXPECT_GT(found, 0) << m << "x" << n;
  }

  // The most sums per thread (16 columns of 4 rows, or of VEC 4 rows) compile unspilled.
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (const Config& c : {gemv_config(256, 4, 16, 16), gemv_config(16, 2, 1, 8)}) {
      const KernelSpec s = kernel_spec(c, packed_problem(layout, 1000, 16, 1000));
      CompileRequest request{s.source_name, s.source, s.kernel_name, s.options, 90};
      CompiledKernel k;
      ASSERT_NO_THROW(k = compile_kernel(request)) << layout << " " << c.canonical();
      EXPECT_EQ(k.resources.spill_bytes(), 0) << layout << " " << c.canonical();
      EXPECT_LE(k.resources.registers, 128) << layout << " " << c.canonical();
    }
  }
}

// MMA = 1 (FP64 tensor cores): only on sm_90+, with the lane layout's placeholders, conflict-free
// shared strides derived from the layout (and handed to the kernel, not PAD), and every fragment
// read path compiles for sm_90 without spilling.
// KSUM = 1 (each k slice summed apart) is an FFMA variant: a define of the kernel, refused with
// the FP64 tensor cores, and a second set of accumulators that the limits and the register
// estimate count; the tuner's seeds hold FFMA families with it.
TEST(GemmSpace, SliceSumsAreAnFfmaVariantWithTheirRegisters) {
  const DeviceInfo dev = reference_device(90);
  const Problem p = packed_problem("NN", 1000, 1000, 1000);
  const Space space = make_space(dev, p);
  Config c = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0");
  EXPECT_EQ(space.violation(c, true).value_or(""), "");
  const KernelSpec spec = kernel_spec(c, p);
  EXPECT_NE(std::find(spec.options.begin(), spec.options.end(), "-DKSUM=1"), spec.options.end());
  EXPECT_NE(spec.kernel_name.find("_ksum1"), std::string::npos);
  Config single = c;
  single.set("KSUM", 0);
  EXPECT_EQ(estimated_registers(c), estimated_registers(single) + 2 * 4 * 8);
  // 128 accumulators a lane are the limit of one set, not of two.
  Config wide = c;
  wide.set("WM", 64);
  wide.set("WN", 64);
  wide.set("BM", 128);
  wide.set("BN", 128);
  EXPECT_EQ(space.violation(wide, false).value_or(""), "accumulators_per_thread");
  wide.set("KSUM", 0);
  EXPECT_NE(space.violation(wide, false).value_or(""), "accumulators_per_thread");
  Config mma = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0");
  EXPECT_EQ(space.violation(mma, false).value_or(""), "slice_sums_for_ffma");
  int with_slice_sums = 0;
  for (const auto& seed : seed_configs(dev, p)) {
    if (seed.get("KSUM") == 1) {
      ++with_slice_sums;
      EXPECT_NE(seed.get("MMA"), 1) << seed.canonical();  // float sums only
    }
  }
  EXPECT_GT(with_slice_sums, 4);
}

// The accuracy contract refuses FFMA sums longer than kMaxFfmaSum (112) products: one split's
// share of k in one chain (KSUM = 0), or with KSUM = 1 the partial chains and their sum. The FP64
// tensor cores and the matrix-vector kernel are not bound by it; the fallback config meets it.
TEST(GemmSpace, FfmaSumsLongerThanTheContractAllowsAreRefused) {
  const DeviceInfo dev = reference_device(90);
  const Config chain = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  auto refusal = [&](const Config& c, int64_t k) {
    return make_space(dev, packed_problem("NN", 512, 512, k)).violation(c, false).value_or("");
  };
  EXPECT_EQ(longest_ffma_sum(chain, packed_problem("NN", 512, 512, 112)), 112);
  EXPECT_EQ(refusal(chain, 112), "");
  // 113 is 8 slices of 16: a chain of 128 (beyond 1.7x cuBLAS's error on 2.8 % of the sweeps'
  // rows, and 2.006x on a benchmark's).
  EXPECT_EQ(longest_ffma_sum(chain, packed_problem("NN", 512, 512, 113)), 128);
  EXPECT_EQ(refusal(chain, 113), "float_sums_within_contract");
  Config split = chain;
  split.set("SPLITK", 8);
  EXPECT_EQ(refusal(split, 896), "");  // 56 slices, 7 a split
  EXPECT_EQ(refusal(split, 897), "float_sums_within_contract");
  Config sums = chain;
  sums.set("KSUM", 1);
  // Chains of 96 (6 slices of 16): 100 is one of 96 and one of 16.
  EXPECT_EQ(longest_ffma_sum(sums, packed_problem("NN", 512, 512, 100)), 96);
  EXPECT_EQ(refusal(sums, 1025), "");
  EXPECT_EQ(refusal(sums, 96 * 112), "");  // 112 chains of 96
  EXPECT_EQ(refusal(sums, 96 * 112 + 1), "float_sums_within_contract");
  EXPECT_THROW(fit_config(chain, dev, packed_problem("NN", 512, 384, 1024)), Error);
  Config mma = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=32,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  EXPECT_EQ(refusal(mma, 100000), "");
  for (int64_t k : {1, 127, 1000, 4097, 16385, 100000}) {
    for (int64_t mn : {7, 1000, 4097}) {
      const Problem p = packed_problem("NT", mn, mn, k);
      const Config fallback = default_config(dev, p);
      EXPECT_LE(longest_ffma_sum(fallback, p), kMaxFfmaSum) << k << " " << fallback.canonical();
    }
  }
}

// MMA = 4 (split TF32 on wgmma fed by the TMA): the warpgroup tiles up to WN = 128 with 3 or 4
// stages, 16-byte runs (VEC = 4; fit_config packs unaligned operands), B read k-contiguous (a
// transposed B turned over first: fit_config sets PRETB by the layout), slice sums from k = 128,
// the sm_90a target; describe names its arithmetic.
TEST(GemmSpace, TmaWgmmaConfigsReadSixteenByteRunsAndTurnATransposedBOver) {
  const Config tma = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=2,GCOLS=1,"
      "AHEAD=0");
  const DeviceInfo h100 = reference_device(90);
  const Problem nn = packed_problem("NN", 4096, 4096, 4096);
  const Space space = make_space(h100, nn);
  EXPECT_FALSE(space.violation(tma).has_value()) << space.violation(tma).value_or("");
  EXPECT_EQ(threads_per_block(tma), 384);
  EXPECT_EQ(shared_bytes(tma), 4u * (128 + 2 * 128) * 32 * 4 + 1024);
  EXPECT_TRUE(kernel_spec(tma, nn).arch_specific);
  EXPECT_EQ(math_family(tma), "split TF32 on wgmma, TMA-fed");
  auto broken = [&](const Space& in, const char* name, int value) {
    Config b = tma;
    b.set(name, value);
    return in.violation(b, /*include_pruning=*/false).value_or("");
  };
  EXPECT_EQ(broken(space, "VEC", 1), "tma_reads_16_byte_runs");
  EXPECT_EQ(broken(space, "PIPE", 2), "tma_wgmma_tiles");
  EXPECT_EQ(broken(space, "KSUM", 0), "wgmma_sums_slices_in_float");
  EXPECT_EQ(broken(space, "AHEAD", 1), "AHEAD_unread");
  EXPECT_EQ(make_space(reference_device(80), nn).violation(tma).value_or(""), "wgmma_needs_sm90");
  // A transposed B: PRETB = 1 turns it over (the FFMA kernels' PRETB needs it not transposed).
  const Problem nt = packed_problem("NT", 4096, 4096, 4096);
  EXPECT_EQ(make_space(h100, nt).violation(tma, false).value_or(""), "tma_reads_b_k_contiguous");
  Config turned = tma;
  turned.set("PRETB", 1);
  EXPECT_FALSE(make_space(h100, nt).violation(turned, false).has_value());
  EXPECT_EQ(make_space(h100, nn).violation(turned, false).value_or(""),
            "tma_reads_b_k_contiguous");  // it would read B transposed there
  EXPECT_GT(workspace_bytes(turned, nt), 4096u * 4096 * 4 - 1);
  // fit_config: B turned over by the layout, unaligned operands packed (never narrowed).
  const Problem odd_nt = packed_problem("NT", 1001, 999, 1003);
  const Config fitted = fit_config(tma, h100, odd_nt);
  EXPECT_EQ(fitted.get("PRETB"), 1);
  EXPECT_EQ(fitted.get("PACK"), 1);
  EXPECT_EQ(fitted.get("VEC"), 4);
  EXPECT_EQ(fit_config(tma, h100, nn).get("PRETB"), 0);
  EXPECT_EQ(
      make_space(h100, packed_problem("NN", 4096, 4096, 124)).violation(tma, false).value_or(""),
      "wgmma_split_tf32_from_k_128");
}

// The portfolio's TMA-fed entries were timed unpacked on aligned problems; the op serves them
// packed on an unaligned one (the same kernel, so the runtime takes them as they are there), and
// predicts them there only where the copies take at most half the product's time. Other entries
// are served unpacked as before.
TEST(GemmSpace, TmaEntriesAreServedPackedWhereTheCallIsUnaligned) {
  Config tma = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=2,GCOLS=1,"
      "AHEAD=0");
  const DeviceInfo h100 = reference_device(90);
  const OpFace& face = *registration().face;
  // A vocabulary's weight gradient: B (its gradient, 50001 x 2048) has an odd leading dimension.
  const ProblemId grad = problem_id(packed_problem("NT", 1024, 50001, 2048));
  ASSERT_EQ(grad.alignment, 1);
  const Config served = face.serve(tma, grad);
  EXPECT_EQ(served.get("PACK"), 1);
  EXPECT_EQ(face.fit(served, h100, grad), served);  // runs as it is
  EXPECT_EQ(face.kernel_spec(served, grad).kernel_name, face.kernel_spec(tma, grad).kernel_name);
  EXPECT_TRUE(face.transfers_to(tma, grad));
  // Aligned: unchanged.
  const ProblemId aligned = problem_id(packed_problem("NT", 1024, 50000, 2048));
  EXPECT_EQ(face.serve(tma, aligned), tma);
  // A tall TN product with k = 27 would copy all of B: served packed, but not predicted.
  tma.set("PRETB", 0);
  const ProblemId thin_k = problem_id(packed_problem("TN", 64, 1000000, 27));
  EXPECT_EQ(face.serve(tma, thin_k).get("PACK"), 1);
  EXPECT_FALSE(face.transfers_to(tma, thin_k));
  // An FFMA entry is not packed by serving (fit narrows or packs it by its own rule).
  const Config ffma = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE="
      "1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD="
      "0");
  EXPECT_EQ(face.serve(ffma, grad).get("PACK"), 0);
}

// Compute types (tuned_gemm_ex): the variants name them after the layout; plain TF32 (MMA = 5) is
// the TF32 type's alone and the pedantic type computes in FFMA alone, by named rules; the TF32
// type serves split TF32 configs in their one-product form and starts its search from them.
TEST(GemmSpace, ComputeTypesAreVariantsWithTheirOwnArithmetic) {
  const OpInfo op = info();
  ASSERT_EQ(op.variants.size(), 12u);
  EXPECT_EQ(op.variants[0], "NN");
  EXPECT_EQ(op.variants[5], "NT-tf32");
  EXPECT_EQ(op.variants[11], "TT-pedantic");
  for (const std::string& v : op.variants) {
    const Problem p = packed_problem(v, 300, 200, 100);
    EXPECT_EQ(p.variant(), v);
    EXPECT_EQ(problem_key(reference_device(90), p).variant, v);
  }
  try {
    packed_problem("NN-fast", 1, 1, 1);
    ADD_FAILURE() << "an unknown compute type was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("-tf32, -pedantic"), std::string::npos) << e.what();
  }
  const Config split = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=2,GCOLS=1,"
      "AHEAD=0");
  Config plain = split;
  plain.set("MMA", 5);
  const DeviceInfo h100 = reference_device(90);
  const Problem nn = packed_problem("NN", 4096, 4096, 4096);
  const Problem tf32 = packed_problem("NN-tf32", 4096, 4096, 4096);
  const Problem pedantic = packed_problem("NN-pedantic", 4096, 4096, 4096);
  EXPECT_EQ(make_space(h100, nn).violation(plain, false).value_or(""),
            "plain_tf32_only_for_the_tf32_type");
  EXPECT_FALSE(make_space(h100, tf32).violation(plain, false).has_value());
  EXPECT_EQ(make_space(h100, pedantic).violation(split, false).value_or(""),
            "pedantic_type_computes_in_ffma");
  EXPECT_EQ(for_compute(split, tf32), plain);
  EXPECT_EQ(for_compute(split, nn), split);
  EXPECT_EQ(for_compute(split, pedantic), split);
  // Split TF32 on wgmma fed through registers (MMA = 3) too: the nearest TMA-fed plain config.
  const Config registers = Config::parse(
      "GEMV=0,BM=128,BN=256,BK=32,WM=16,WN=256,TM=2,TN=2,LM=8,VEC=2,PAD=0,AKM=0,BKM=1,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=1,MMA=3,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=1");
  const Problem tt_tf32 = packed_problem("TT-tf32", 5000, 5000, 5000);
  // (As the op serves it: slice sums in partial chains at k = 5000, 157 slices.)
  const Config served = with_bounded_slice_sums(for_compute(registers, tt_tf32), tt_tf32);
  EXPECT_EQ(served.get("KSUM"), 2);
  EXPECT_EQ(served.get("MMA"), 5);
  EXPECT_EQ(served.get("WN"), 128);
  EXPECT_EQ(served.get("PIPE"), 3);
  EXPECT_EQ(served.get("VEC"), 4);
  EXPECT_EQ(served.get("PACK"), 0);  // aligned: nothing to pack
  EXPECT_EQ(for_compute(registers, packed_problem("TT-tf32", 4999, 5000, 5000)).get("PACK"), 1);
  EXPECT_EQ(served.get("AHEAD"), 0);
  EXPECT_EQ(served.get("PRETB"), 1);  // B turned over: the TMA reads it k-contiguous
  EXPECT_FALSE(make_space(h100, tt_tf32).violation(served, false).has_value())
      << make_space(h100, tt_tf32).violation(served, false).value_or("");
  EXPECT_EQ(fit_config(served, h100, tt_tf32), served);
  EXPECT_EQ(math_family(plain), "TF32 on wgmma, TMA-fed (plain TF32)");
  // One B part a stage, not two.
  EXPECT_EQ(shared_bytes(plain), 4u * (128 + 128) * 32 * 4 + 1024);
  // Seeds: plain TF32 only for the TF32 type, FFMA only for the pedantic one.
  auto count_mma = [&](const Problem& p, int mma) {
    int n = 0;
    for (const Config& c : seed_configs(h100, p)) n += c.get("MMA") == mma;
    return n;
  };
  EXPECT_GT(count_mma(tf32, 5), 0);
  EXPECT_EQ(count_mma(nn, 5), 0);
  for (const Config& c : seed_configs(h100, pedantic)) EXPECT_EQ(c.get("MMA"), 0) << c.canonical();
  // The plain kernel compiles for sm_90a without spills in one chain of slice sums (k up to
  // 1024; the partial chains' second set of sums may spill lightly, see WgmmaSliceSums...).
  Config one_chain = plain;
  one_chain.set("KSUM", 1);
  const KernelSpec spec = kernel_spec(one_chain, packed_problem("NN-tf32", 4096, 4096, 1024));
  CompiledKernel k;
  ASSERT_NO_THROW(k = compile_kernel({spec.source_name, spec.source, spec.kernel_name, spec.options,
                                      90, spec.arch_specific}));
  EXPECT_EQ(k.resources.spill_bytes(), 0);
}

// MMA = 3 (split TF32 on wgmma): sm_90 only (the sm_90a target), warpgroup tiles of 64 rows and
// one wgmma's columns, slices of 32 of k each summed from zero (KSUM = 1), from k = 128.
TEST(GemmSpace, WgmmaConfigsNeedSm90WarpgroupTilesAndSliceSumsFromK128) {
  const Config wgmma = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0");
  const Problem p = packed_problem("TN", 4096, 4096, 4096);
  const Space space = make_space(reference_device(90), p);
  // (AKM and BKM mean nothing to it; like the other tensor-core configs it keeps them as stored.)
  const Config c = with_operands_as_stored(wgmma, p);
  EXPECT_FALSE(space.violation(c).has_value()) << space.violation(c).value_or("");
  EXPECT_EQ(threads_per_block(c), 384);  // two consumer warpgroups and the producer
  EXPECT_TRUE(kernel_spec(c, p).arch_specific);
  EXPECT_FALSE(kernel_spec(with_absent_params(Config::parse("GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,"
                                                            "TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,"
                                                            "BKM=1,UNROLL=8,PIPE=1,SWZ=0,MINB=1,"
                                                            "PRETB=0,SPLITK=1"),
                                              parameters()),
                           p)
                   .arch_specific);
  EXPECT_EQ(make_space(reference_device(80), p).violation(c).value_or(""), "wgmma_needs_sm90");
  auto broken = [&](const char* name, int value) {
    Config b = c;
    b.set(name, value);
    return space.violation(b, /*include_pruning=*/false).value_or("");
  };
  EXPECT_EQ(broken("BK", 16), "wgmma_tiles");
  EXPECT_EQ(broken("BM", 32), "wgmma_tiles");
  EXPECT_EQ(broken("PIPE", 1), "wgmma_tiles");
  // Warpgroup tiles of 64 x 32 are among the kernel's, m64n16 and narrower not.
  Config narrow = c;
  narrow.set("BN", 32);
  narrow.set("WN", 32);
  EXPECT_FALSE(space.violation(narrow, /*include_pruning=*/false).has_value())
      << space.violation(narrow, false).value_or("");
  narrow.set("BN", 16);
  narrow.set("WN", 16);
  EXPECT_EQ(space.violation(narrow, /*include_pruning=*/false).value_or(""), "wgmma_tiles");
  EXPECT_EQ(broken("KSUM", 0), "wgmma_sums_slices_in_float");
  // Two slices ahead: a wgmma producer's option (the other kernels load without one), with the
  // second slice's registers in the estimate that prunes.
  Config ahead = c;
  ahead.set("AHEAD", 1);
  EXPECT_FALSE(space.violation(ahead, /*include_pruning=*/false).has_value());
  EXPECT_GT(estimated_registers(ahead), estimated_registers(c));
  Config ffma_ahead = with_absent_params(
      Config::parse("GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,"
                    "UNROLL=8,PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1"),
      parameters());
  ffma_ahead.set("AHEAD", 1);
  EXPECT_EQ(space.violation(ffma_ahead, /*include_pruning=*/false).value_or(""), "AHEAD_unread");
  EXPECT_EQ(make_space(reference_device(90), packed_problem("TN", 4096, 4096, 124))
                .violation(c, /*include_pruning=*/false)
                .value_or(""),
            "wgmma_split_tf32_from_k_128");
  EXPECT_FALSE(make_space(reference_device(90), packed_problem("TN", 4096, 4096, 128))
                   .violation(c, /*include_pruning=*/false)
                   .has_value());
}

TEST(GemmSpace, SplitTf32ConfigsNeedSm80AndSumInFloatWithinTheContract) {
  const std::string base =
      "GEMV=0,BM=128,BN=64,BK=32,WM=64,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=3,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=2,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0";
  const Problem short_k = packed_problem("NN", 1000, 1000, 96);
  const Problem long_k = packed_problem("NN", 1000, 1000, 1000);
  Config c = Config::parse(base);
  EXPECT_FALSE(make_space(reference_device(90), short_k).violation(c).has_value());
  EXPECT_FALSE(make_space(reference_device(80), short_k).violation(c).has_value());
  EXPECT_EQ(make_space(reference_device(75), short_k).violation(c).value_or(""),
            "split_tf32_needs_sm80");
  // A single product or a few: the split's lost bits show (k below one mma step).
  EXPECT_EQ(make_space(reference_device(90), packed_problem("NN", 1000, 1000, 4))
                .violation(c, /*include_pruning=*/false)
                .value_or(""),
            "split_tf32_from_k_8");
  // One chain of 1000 float sums breaks the contract; partial chains or splits keep it.
  EXPECT_EQ(make_space(reference_device(90), long_k).violation(c).value_or(""),
            "float_sums_within_contract");
  c.set("KSUM", 1);  // (a second set of sums: a 64x32 warp tile would spill)
  EXPECT_EQ(make_space(reference_device(90), long_k).violation(c).value_or(""), "registers_fit");
  c.set("WM", 32);
  EXPECT_FALSE(make_space(reference_device(90), long_k).violation(c).has_value());
  Config fp64 = c;  // double sums need no partial chains (nor would a second set fit)
  fp64.set("MMA", 1);
  EXPECT_TRUE(make_space(reference_device(90), long_k).violation(fp64).has_value());
  c.set("KSUM", 0);
  c.set("SPLITK", 12);  // 32 slices of 32: chains of 96
  EXPECT_FALSE(make_space(reference_device(90), long_k).violation(c).has_value());
  // The tuner starts from split TF32 variants of its FP64 tensor-core seeds.
  const auto seeds = seed_configs(reference_device(90), long_k);
  EXPECT_TRUE(std::any_of(seeds.begin(), seeds.end(),
                          [](const Config& s) { return s.get("MMA") == 2 && s.get("KSUM") == 1; }));
}

TEST(GemmSpace, Fp64TensorCoreConfigsNeedSm90AndTheirOwnStrides) {
  const std::string base =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0";
  const Problem nn = packed_problem("NN", 1000, 1000, 1000);
  const Config c = Config::parse(base);
  EXPECT_FALSE(make_space(reference_device(90), nn).violation(c).has_value());
  EXPECT_EQ(make_space(reference_device(80), nn).violation(c).value_or(""), "mma_needs_sm90");
  Config wide = c;
  wide.set("TM", 4);
  EXPECT_EQ(make_space(reference_device(90), nn).violation(wide).value_or(""), "TM_unread");
  Config odd_k = c;
  odd_k.set("WN", 4);
  odd_k.set("BN", 16);
  EXPECT_EQ(make_space(reference_device(90), nn).violation(odd_k, false).value_or(""),
            "mma_tiles_16x8x8");
  // NN stores A m-contiguous, B k-contiguous: a transposing layout is pruned, not invalid.
  Config transposed = c;
  transposed.set("AKM", 0);
  EXPECT_EQ(make_space(reference_device(90), nn).violation(transposed).value_or(""),
            "mma_keeps_operands_as_stored");
  EXPECT_FALSE(make_space(reference_device(90), nn).violation(transposed, false).has_value());
  // Strides: (k, m) rows BM + 8, (n, k) rows BK + 4 beside them; both k-contiguous BK + 4 and
  // BK + 8; PAD is the FFMA kernels' only.
  EXPECT_EQ(shared_strides(c).a, 72);
  EXPECT_EQ(shared_strides(c).b, 20);
  EXPECT_EQ(shared_strides(transposed).a, 20);
  EXPECT_EQ(shared_strides(transposed).b, 24);
  Config ffma = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=0,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
  EXPECT_EQ(shared_strides(ffma).a, 68);
  EXPECT_EQ(shared_strides(ffma).b, 20);
  EXPECT_EQ(shared_bytes(c), 3u * (16 * 72 + 64 * 20) * 4);
  const KernelSpec spec = kernel_spec(c, nn);
  EXPECT_EQ(spec.options[spec.options.size() - 3], "-DA_STRIDE=72");
  EXPECT_EQ(spec.options[spec.options.size() - 2], "-DB_STRIDE=20");
  // A config recorded before MMA existed is an FFMA one.
  const std::string before_mma =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=0,UNROLL=8,PIPE=3,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0";
  const Problem short_k = packed_problem("NN", 1000, 1000, 112);  // one FFMA chain
  EXPECT_EQ(fit_config(Config::parse(before_mma), reference_device(90), short_k), ffma);
  EXPECT_EQ(kernel_spec(Config::parse(before_mma), nn).options, kernel_spec(ffma, nn).options);
  // Each read path (A and B k-contiguous or not) in each layout compiles for sm_90, unspilled.
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (int akm : {0, 1}) {
      for (int bkm : {0, 1}) {
        Config v = c;
        v.set("AKM", akm);
        v.set("BKM", bkm);
        const Problem p = packed_problem(layout, 1000, 999, 130);
        const KernelSpec s = kernel_spec(v, p);
        CompileRequest request{s.source_name, s.source, s.kernel_name, s.options, 90};
        CompiledKernel k;
        ASSERT_NO_THROW(k = compile_kernel(request)) << layout << " " << v.canonical();
        EXPECT_EQ(k.resources.spill_bytes(), 0) << layout << " " << v.canonical();
        EXPECT_LE(k.resources.registers, estimated_registers(v) + 64) << v.canonical();
      }
    }
  }
}

// CSTAGE = 1 (C through shared memory): its tile reuses the pipeline's stages (the larger of the
// two is the kernel's shared memory), it is measured only where C cannot take 16-byte stores,
// configs recorded before it store C directly, and it compiles unspilled in FFMA and MMA kernels.
TEST(GemmSpace, StagedCTileReusesTheStagesWhereStoresAreNarrow) {
  const Config direct = Config::parse(
      "GEMV=0,BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=1,PAD=4,AKM=1,BKM=1,UNROLL=8,PIPE="
      "1,"
      "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
  Config staged = direct;
  staged.set("CSTAGE", 1);
  EXPECT_EQ(shared_strides(staged).c, 132);
  EXPECT_EQ(shared_bytes(direct), 2u * (8 * 132 + 8 * 132) * 4);
  EXPECT_EQ(shared_bytes(staged), 128u * 132 * 4);  // the C tile is larger than both stages
  Config deep = staged;  // ... and smaller than four stages of 32-deep slices
  deep.set("BK", 32);
  deep.set("PIPE", 4);
  EXPECT_EQ(shared_bytes(deep), 4u * (32 * 132 + 32 * 132) * 4);
  const DeviceInfo dev = reference_device(90);
  const Problem odd = packed_problem("TT", 2245, 3167, 47);  // every leading dimension odd
  const Problem aligned = packed_problem("NN", 1024, 1024, 96);
  EXPECT_FALSE(make_space(dev, odd).violation(staged, true).has_value());
  EXPECT_EQ(make_space(dev, aligned).violation(staged, true).value_or(""),
            "stage_c_where_stores_are_narrow");
  EXPECT_FALSE(make_space(dev, aligned).violation(staged, false).has_value());
  // A config of the sweeps before CSTAGE (and KSUM, GCOLS, AHEAD) stores C directly.
  const std::string before = direct.canonical().substr(0, direct.canonical().size() - 32);
  ASSERT_EQ(before.substr(before.size() - 5), "MMA=0");
  EXPECT_EQ(fit_config(Config::parse(before), dev, odd), direct);
  EXPECT_EQ(gemv_config(64, 1, 1).get("CSTAGE"), 0);
  Config gemv_staged = gemv_config(64, 1, 1);
  gemv_staged.set("CSTAGE", 1);
  EXPECT_EQ(make_space(dev, packed_problem("NN", 1000, 1, 1000)).violation(gemv_staged, false)
                .value_or(""),
            "CSTAGE_unread");
  // The kernel gets the stride; the staged path compiles unspilled, FFMA and MMA, odd and aligned.
  const Config mma = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=16,WM=16,WN=32,TM=2,TN=2,LM=8,VEC=1,PAD=0,AKM=0,BKM=1,UNROLL=8,PIPE=2,"
      "SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=1,CSTAGE=1,KSUM=0,GCOLS=1,AHEAD=0");
  EXPECT_EQ(kernel_spec(mma, odd).options.back(), "-DC_STRIDE=68");
  Config aligned_ffma = staged;
  aligned_ffma.set("VEC", 4);
  for (const auto& [config, problem] : {std::pair{staged, odd}, {mma, odd}, {aligned_ffma, aligned}}) {
    const KernelSpec spec = kernel_spec(config, problem);
    CompileRequest request{spec.source_name, spec.source, spec.kernel_name, spec.options, 90};
    CompiledKernel k;
    ASSERT_NO_THROW(k = compile_kernel(request)) << config.canonical();
    EXPECT_EQ(k.resources.spill_bytes(), 0) << config.canonical();
  }
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
    CompileRequest request{spec.source_name,  spec.source, spec.kernel_name, spec.options, cc,
                           spec.arch_specific};  // wgmma draws build for sm_90a, as the cache does
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

// Every pipeline (0..4), both shared layouts of each operand, grouping and split-K compile in
// every layout; the families the tuner starts from must not spill.
TEST_P(GemmCompileSample, EveryFamilyCompilesWithoutSpills) {
  const int cc = GetParam();
  const DeviceInfo dev = reference_device(cc);
  const char* families[] = {
      "GEMV=0,BM=64,BN=32,BK=16,WM=32,WN=16,TM=4,TN=2,LM=8,VEC=4,PAD=4,AKM=0,BKM=0,UNROLL=4,PIPE=0,"
      "SWZ=4,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=2,PAD=0,AKM=1,BKM=0,UNROLL=8,PIPE=2,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=3,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=32,BN=64,BK=32,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=0,BKM=1,UNROLL=8,PIPE=4,"
      "SWZ=0,MINB=2,PRETB=0,SPLITK=8,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0",
      "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=1,SWZ=8,MINB=1,PRETB=1,SPLITK=2,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0",
  };
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    const Problem p = packed_problem(layout, 1000, 1000, 1000);
    std::vector<Config> configs;
    for (const char* f : families) configs.push_back(Config::parse(f));
    for (const auto& seed : seed_configs(dev, p)) configs.push_back(seed);
    for (const auto& c : configs) {
      if (c.get("PRETB") && p.trans_b) continue;  // B is already n-contiguous
      const KernelSpec spec = kernel_spec(c, p);
      CompileRequest request{spec.source_name, spec.source, spec.kernel_name,
                             spec.options,     cc,          spec.arch_specific};
      CompiledKernel k;
      ASSERT_NO_THROW(k = compile_kernel(request)) << c.canonical();
      EXPECT_EQ(k.resources.spill_bytes(), 0) << c.canonical();
      EXPECT_EQ(k.resources.stack_bytes, 0) << c.canonical();
      // The estimate that prunes must not be far below what the compiler needs. It leaves out
      // split-K's summing code (up to some 24 registers): reading SPLITK would defer the rule, and with
      // it the enumeration's pruning, past five more parameters.
      const int summing = c.get("SPLITK") > 1 ? 24 : 0;
      EXPECT_LE(k.resources.registers, estimated_registers(c) + 64 + summing) << c.canonical();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GemmCompileSample, ::testing::Values(80, 90));

TEST(GemmCompile, MissingParameterFailsWithTheNvrtcLog) {
  const Problem p = packed_problem("NN", 64, 64, 64);
  KernelSpec spec = kernel_spec(default_config(reference_device(90), p), p);
  std::erase_if(spec.options, [](const std::string& o) { return o.rfind("-DBN=", 0) == 0; });
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

// Random draws from a space whose valid configs are rare (most tiles, splits and host options
// pruned): rejection alone found none in 100000 draws for such problems, ending autotune's search
// after a few seconds as "space exhausted". The walk in random order finds valid, varied configs.
TEST(GemmSpace, SamplingFindsVariedConfigsWhereValidOnesAreRare) {
  const DeviceInfo dev = reference_device(90);
  for (const Problem& p : {packed_problem("TT", 2245, 3167, 47), packed_problem("NN", 128, 128, 131072),
                           packed_problem("TN", 16384, 64, 8192)}) {
    const Space space = make_space(dev, p);
    std::mt19937_64 rng(7);
    std::set<std::string> distinct;
    for (int t = 0; t < 300; ++t) {
      const auto c = space.sample(rng);
      ASSERT_TRUE(c.has_value());
      EXPECT_FALSE(space.violation(*c, /*include_pruning=*/true).has_value());
      distinct.insert(c->canonical());
    }
    EXPECT_GE(distinct.size(), 250u) << p.layout() << " " << p.m << "x" << p.n << "x" << p.k;
    // Every tile row count the space allows shows up among the draws.
    std::set<int> bms;
    for (const auto& c : distinct) bms.insert(Config::parse(c).get("BM"));
    EXPECT_GE(bms.size(), 3u);
  }
}

// The wgmma kernels' float sums of slice sums are bounded too (max_slice_sum): the TMA-fed kernel
// sums one chain of a split's slice sums (KSUM = 1) up to 32 slices of 32, k = 1024, and past it
// partial chains of 32 slices and then the chains (KSUM = 2, which fit_config turns KSUM = 1 into
// there), up to 128 x 32 slices a split; MMA = 3, which has no partial chains, one chain up to
// 128 slices, k = 4096, and split k past it (fit_config as well).
Config tma_fed_wgmma_config() {
  return Config::parse(
      "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=4,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0");
}

Problem square_problem(int64_t k) { return packed_problem("NN", 4096, 4096, k); }

// Why the space of square_problem(k) refuses c (pruning aside), or "" where it does not.
std::string square_refusal(const DeviceInfo& dev, const Config& c, int64_t k) {
  return make_space(dev, square_problem(k)).violation(c, false).value_or("");
}

TEST(GemmSpace, WgmmaSliceSumsLongerThanTheContractAllowsAreRefused) {
  const DeviceInfo dev = reference_device(90);
  const Config tma = tma_fed_wgmma_config();
  EXPECT_EQ(longest_slice_sum(tma, square_problem(4096)), 128);
  EXPECT_EQ(square_refusal(dev, tma, 1024), "");
  EXPECT_EQ(square_refusal(dev, tma, 1056), "float_sums_within_contract");
  EXPECT_EQ(fit_config(tma, dev, square_problem(1024)).get("KSUM"), 1);
  EXPECT_EQ(fit_config(tma, dev, square_problem(1056)).get("KSUM"), 2);
  const Config chains = fit_config(tma, dev, square_problem(4128));
  EXPECT_EQ(chains.get("KSUM"), 2);
  EXPECT_EQ(square_refusal(dev, chains, 1024), "");  // the same sums there: one chain of 32
  EXPECT_EQ(longest_slice_sum(chains, square_problem(4096)), 32);  // 4 chains of 32
  EXPECT_EQ(longest_slice_sum(chains, square_problem(65536)), 64);
  EXPECT_EQ(square_refusal(dev, chains, 128 * 32 * 32), "");
  EXPECT_EQ(square_refusal(dev, chains, 128 * 32 * 32 + 32), "float_sums_within_contract");
  EXPECT_THROW(fit_config(tma, dev, square_problem(128 * 32 * 32 + 32)), Error);
  Config split = tma;
  split.set("SPLITK", 4);
  split.set("REDUCE", 1);
  // 98 chains a split
  EXPECT_EQ(square_refusal(dev, fit_config(split, dev, square_problem(401408)), 401408), "");
  // The TF32 compute type's one-product form takes partial chains where the split form would.
  Problem tf32 = square_problem(8192);
  tf32.compute = Compute::kTf32;
  EXPECT_EQ(with_bounded_slice_sums(for_compute(tma, tf32), tf32).get("KSUM"), 2);
}

// The tuner's seeds take the wgmma families as the op serves them past the bound, not refused for
// their one chain: in partial chains (MMA = 4), and split (MMA = 3) where few tiles let a split
// pass the pruning.
TEST(GemmSpace, WgmmaSeedsPastTheSliceSumBoundAreChainedOrSplit) {
  const DeviceInfo dev = reference_device(90);
  int tma_chains = 0, wgmma_split = 0;
  for (const Problem& p : {square_problem(8192), packed_problem("NN", 512, 512, 8192)}) {
    for (const Config& seed : seed_configs(dev, p)) {
      EXPECT_FALSE(make_space(dev, p).violation(seed, false).has_value()) << seed.canonical();
      tma_chains += seed.get("MMA") == 4 && seed.get("KSUM") == 2;
      wgmma_split += seed.get("MMA") == 3 && seed.get("SPLITK") >= 2;
    }
  }
  EXPECT_GE(tma_chains, 5);
  EXPECT_GE(wgmma_split, 2);
}

// Only the TMA-fed kernels have partial chains; MMA = 3 splits k past 128 slices.
TEST(GemmSpace, WgmmaWithoutTmaSplitsKPastOneChainOf128Slices) {
  const DeviceInfo dev = reference_device(90);
  const Config tma = tma_fed_wgmma_config();
  Config one_chain = tma;
  one_chain.set("MMA", 3);
  one_chain.set("PIPE", 3);
  one_chain.set("PACK", 0);
  EXPECT_EQ(square_refusal(dev, one_chain, 4096), "");
  EXPECT_EQ(square_refusal(dev, one_chain, 4128), "float_sums_within_contract");
  EXPECT_EQ(fit_config(one_chain, dev, square_problem(4128)).get("SPLITK"), 2);  // fit splits k
  EXPECT_EQ(fit_config(one_chain, dev, square_problem(401408)).get("SPLITK"), 128);
  one_chain.set("KSUM", 2);
  EXPECT_EQ(square_refusal(dev, one_chain, 4096), "slice_chains_tma_fed");
  one_chain.set("KSUM", 1);
  one_chain.set("SPLITK", 2);
  one_chain.set("REDUCE", 1);
  EXPECT_EQ(square_refusal(dev, one_chain, 8192), "");
  // The selection model predicts an entry only on the grid it was timed with: not a one-chain
  // entry where the op splits k further; one that the op chains, yes.
  const OpFace& face = *registration().face;
  EXPECT_TRUE(face.transfers_to(one_chain, problem_id(square_problem(8192))));
  EXPECT_FALSE(face.transfers_to(one_chain, problem_id(square_problem(8224))));
  EXPECT_TRUE(face.transfers_to(tma, problem_id(square_problem(4128))));
  EXPECT_TRUE(face.transfers_to(tma, problem_id(square_problem(1056))));
}

// Split TF32 on wgmma needs more than 16 rows and columns (skinny products' wide-range probe was
// beyond the contract); plain TF32, the TF32 compute type's, does not. The kernel in chains takes
// the chain's length from the host's constant, and compiles for sm_90a with its second set of sums
// at most lightly spilled (128 bytes at WN = 128 with NVRTC 13.0).
TEST(GemmSpace, WgmmaSliceChainsNeedWideSplitTf32AndCompileLightlySpilled) {
  const DeviceInfo dev = reference_device(90);
  const Config chains = fit_config(tma_fed_wgmma_config(), dev, square_problem(4128));
  ASSERT_EQ(chains.get("KSUM"), 2);
  for (const auto& [m, n] : {std::pair{16, 4096}, std::pair{4096, 7}}) {
    const Problem skinny = packed_problem("NN", m, n, 4096);
    EXPECT_EQ(make_space(dev, skinny).violation(chains, false).value_or(""),
              "wgmma_split_tf32_past_16_rows_and_columns");
    Problem plain = skinny;
    plain.compute = Compute::kTf32;
    EXPECT_FALSE(make_space(dev, plain).violation(for_compute(chains, plain), false).has_value());
  }
  EXPECT_FALSE(
      make_space(dev, packed_problem("NN", 17, 17, 4096)).violation(chains, false).has_value());
  const KernelSpec spec = kernel_spec(chains, square_problem(8192));
  EXPECT_NE(std::find(spec.options.begin(), spec.options.end(), "-DSLICE_CHAIN=32"),
            spec.options.end());
  CompiledKernel k;
  ASSERT_NO_THROW(k = compile_kernel({spec.source_name, spec.source, spec.kernel_name, spec.options,
                                      90, spec.arch_specific}));
  EXPECT_LE(k.resources.spill_bytes(), 256);
}

}  // namespace
}  // namespace tuned::gemm_op

namespace tuned::gemm_op {
namespace {

// A config's text names its family by word and carries the parameters that family reads only:
// the configs of spaces that hold every family (TN 7x7x7 at one-float alignment: the
// matrix-vector kernel, FFMA and mma.sync tiles; NN 1000x1000x1024: wgmma from k 128, the TMA's
// 16-byte rows; sm_90) read back from it, and from their flat text (how configs were recorded
// before).
TEST(GemmSpace, ConfigTextNamesTheFamilyAndReadsBackAsTheSameConfig) {
  const auto& params = parameters();
  const std::map<std::string, std::string> word_of_math = {
      {"FFMA", "ffma"},
      {"FFMA, matrix-vector", "gemv"},
      {"FP64 tensor cores", "mma_sync"},
      {"split TF32 on mma.sync", "mma_sync"},
      {"split TF32 on wgmma", "wgmma"},
      {"split TF32 on wgmma, TMA-fed", "wgmma_tma"},
      {"TF32 on wgmma, TMA-fed (plain TF32)", "wgmma_tma"}};
  std::map<std::string, size_t> per_word;
  auto check = [&](const Problem& problem, const std::vector<int>& mma, size_t step) {
    size_t i = 0;
    Space space = make_space(reference_device(90), problem);
    space.restrict({{"MMA", mma}});
    space.for_each([&](const Config& c) {
      if (i++ % step != 0) return true;
      const std::string text = config_text(c, params);
      const std::string word = text.substr(0, text.find(':'));
      EXPECT_EQ(word, word_of_math.at(math_family(c))) << text;
      ++per_word[word];
      EXPECT_EQ(read_config(text, params), c) << text;
      EXPECT_EQ(read_config(c.canonical(), params), c) << c.canonical();
      // What the text leaves out, the family does not read (or the word implies).
      const Config listed = Config::parse(text.substr(text.find(':') + 1));
      for (const Param& p : params) {
        if (listed.has(p.name) || p.name == "GEMV" || (p.name == "MMA" && !is_gemv(c))) continue;
        EXPECT_TRUE(unread_value(p, c).has_value()) << p.name << " left out of " << text;
      }
      if (word == "gemv") EXPECT_EQ(listed.size(), 4u) << text;  // GEMV, VEC, SPLITK, GCOLS
      return true;
    });
  };
  check(packed_problem("TN", 7, 7, 7), {0, 1, 2}, 13);
  check(packed_problem("NN", 1000, 1000, 1024), {3, 4, 5}, 7);
  EXPECT_EQ(per_word.size(), 5u);
  EXPECT_GT(per_word["wgmma"], 0u);
  EXPECT_GT(per_word["wgmma_tma"], 0u);
  EXPECT_EQ(config_text(read_config("gemv:GEMV=32,VEC=4,SPLITK=2,GCOLS=4", params), params),
            "gemv:GEMV=32,VEC=4,SPLITK=2,GCOLS=4");
}

}  // namespace
}  // namespace tuned::gemm_op
