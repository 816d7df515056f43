// Strided batches of GEMM products and the fused epilogue without a GPU: the batch's identity
// (a problem of its own, rank 4), its strides and workspace, the rule that keeps copies to one
// product, how a batch is looked up in single products' selection data, the argument checks of
// tuned_gemm_strided_batched_ex (they run before any device is asked for), and autotune --batch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/registry.hpp"
#include "tools/autotune_options.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

using tools::estimated_work;
using tools::parse_autotune_command_line;
using tools::ParseResult;
using tools::shape_requests;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not in: " << text;
}

DeviceInfo h100() { return reference_device(90); }

TEST(GemmBatch, ABatchIsAProblemOfItsOwnAndOneProductKeepsItsIdentity) {
  const Problem one = packed_problem("TN", 128, 64, 96);
  const Problem batch = packed_problem("TN", 128, 64, 96, 12);
  EXPECT_EQ(problem_id(one).rank, 3);
  EXPECT_EQ(problem_id(packed_problem("TN", 128, 64, 96, 1)), problem_id(one));
  const ProblemId id = problem_id(batch);
  ASSERT_EQ(id.rank, 4);
  EXPECT_EQ(id.shape(), (std::vector<int64_t>{128, 64, 96, 12}));
  EXPECT_EQ(problem_key(h100(), batch).shape, (std::vector<int64_t>{128, 64, 96, 12}));
  EXPECT_EQ(problem_key(h100(), one).shape, (std::vector<int64_t>{128, 64, 96}));
  // Products one after the other: A is k x m (TN), B k x n, C m x n.
  EXPECT_EQ(batch.stride_a, 96 * 128);
  EXPECT_EQ(batch.stride_b, 96 * 64);
  EXPECT_EQ(batch.stride_c, 128 * 64);
  EXPECT_EQ(batch.flops(), 12 * one.flops());
  // The runtime's rebuilt problem has the batch and strides of the alignment class.
  const Problem rebuilt = Descriptor::problem_of(id);
  EXPECT_EQ(rebuilt.batch, 12);
  EXPECT_EQ(rebuilt.stride_c, batch.stride_c);
  EXPECT_EQ(Descriptor::operand_bytes(rebuilt), 12 * Descriptor::operand_bytes(one));
}

TEST(GemmBatch, StridesCountInTheAlignmentClass) {
  alignas(16) static float buffer[64];
  EXPECT_EQ(alignment_class(buffer, buffer, buffer, 8, 8, 8, 16, 32, 64), 4);
  EXPECT_EQ(alignment_class(buffer, buffer, buffer, 8, 8, 8, 16, 6, 64), 2);
  EXPECT_EQ(alignment_class(buffer, buffer, buffer, 8, 8, 8, 16, 32, 65), 1);
  EXPECT_EQ(alignment_class(buffer, buffer, buffer, 8, 8, 8, 0, 0, 64), 4);  // shared operands
}

TEST(GemmBatch, CopiesServeOneProductOnly) {
  const DeviceInfo dev = h100();
  // An FFMA tile with PRETB (B k-contiguous, NN) is valid for one product, not for a batch.
  Config pretb = Config::parse(
      "GEMV=0,BM=128,BN=64,BK=16,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=1,SWZ=8,MINB=1,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=1,GCOLS=1,"
      "AHEAD=0");
  const auto valid = make_space(dev, packed_problem("NN", 4096, 512, 512)).violation(pretb, false);
  EXPECT_FALSE(valid.has_value()) << *valid;
  const auto broken = make_space(dev, packed_problem("NN", 4096, 512, 512, 8)).violation(pretb, false);
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(*broken, "copies_for_one_product");
  // A batch never packs: fitting narrows VEC instead, where one product would have packed.
  Problem odd = packed_problem("NN", 4097, 4097, 4097);
  Problem odd_batch = packed_problem("NN", 4097, 4097, 4097, 2);
  Config vec4 = pretb;
  vec4.set("PRETB", 0);
  EXPECT_EQ(fit_config(vec4, dev, odd).get("PACK"), 1);
  const Config fitted = fit_config(vec4, dev, odd_batch);
  EXPECT_EQ(fitted.get("PACK"), 0);
  EXPECT_EQ(fitted.get("VEC"), 1);
  // The fallback fits every batch.
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (int64_t batch : {2, 7, 256}) {
      const Problem p = packed_problem(layout, 127, 33, 1000, batch);
      EXPECT_NO_THROW(fit_config(default_config(dev, p), dev, p)) << layout << " " << batch;
    }
  }
}

TEST(GemmBatch, EachProductHasItsOwnPartialTilesAndTickets) {
  const Config split = Config::parse(
      "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
      "PIPE=2,SWZ=0,MINB=2,PRETB=0,SPLITK=3,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0");
  const Problem one = packed_problem("NN", 100, 100, 3000);
  const Problem five = packed_problem("NN", 100, 100, 3000, 5);
  const size_t region = batch_split_bytes(split, one);
  EXPECT_EQ(region % 256, 0u);
  EXPECT_GE(region, workspace_bytes(split, one));
  EXPECT_EQ(workspace_bytes(split, five), 5 * region);
  // The grid's third dimension holds the products, at most kMaxBatchPerLaunch a launch.
  EXPECT_EQ(geometry(split, five).grid.z, 5u);
  EXPECT_EQ(geometry(split, packed_problem("NN", 4, 4, 4, 100000)).grid.z,
            static_cast<unsigned>(kMaxBatchPerLaunch));
}

TEST(GemmBatch, ABatchIsLookedUpAsOneProductOfAsManyTilesAndItsBatch) {
  // Folded into the longer of m and n; k and the shorter side as they are; the batch after them.
  EXPECT_EQ(Descriptor::selection_shape({1024, 64, 1024, 32}),
            (std::vector<int64_t>{32768, 64, 1024, 32}));
  EXPECT_EQ(Descriptor::selection_shape({64, 2048, 128, 8}),
            (std::vector<int64_t>{64, 16384, 128, 8}));
  EXPECT_EQ(Descriptor::selection_shape({64, 2048, 128}), (std::vector<int64_t>{64, 2048, 128}));
  EXPECT_EQ(Descriptor::selection_shape({64, 2048, 128, 1}), (std::vector<int64_t>{64, 2048, 128}));
  // Through the op's runtime face, as the runtime asks it.
  const OpRegistration& gemm = find_op("gemm");
  EXPECT_EQ(gemm.face->selection_shape({10, 20, 30, 4}), (std::vector<int64_t>{10, 80, 30, 4}));
  // Ops without the hook keep their shapes.
  EXPECT_EQ(find_op("transpose").face->selection_shape({10, 20}),
            (std::vector<int64_t>{10, 20}));
}

TEST(GemmBatch, ShapesOfThreeOrFourSizesAreGemmRequests) {
  validate_request(TaskRequest{"gemm", {64, 64, 64}, "", {}});
  validate_request(TaskRequest{"gemm", {64, 64, 64, 16}, "", {}});
  try {
    validate_request(TaskRequest{"gemm", {64, 64, 64, 0}, "", {}});
    ADD_FAILURE() << "a batch of 0 products was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "BATCH must be in 1..2147483647")) << e.what();
  }
  try {
    validate_request(TaskRequest{"transpose", {64, 64, 2}, "", {}});
    ADD_FAILURE() << "a transpose with a third size was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "needs ROWSxCOLS (2 sizes)")) << e.what();
  }
}

// The C entry's checks, which name the argument and the rule before any device is needed.
tuned_status_t batched(int m, int n, int k, int lda, long long sa, int ldb, long long sb, int ldc,
                       long long sc, int batch, const tuned_epilogue_t* epilogue = nullptr,
                       tuned_compute_t compute = TUNED_COMPUTE_DEFAULT) {
  static float a[4], b[4], c[4];
  const float one = 1.0f;
  return tuned_gemm_strided_batched_ex(TUNED_OP_N, TUNED_OP_N, m, n, k, &one, a, lda, sa, b, ldb,
                                       sb, &one, c, ldc, sc, batch, compute, epilogue, nullptr);
}

TEST(GemmBatch, BadBatchArgumentsAreRefusedNamingTheArgument) {
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, -1), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "batch_count"));
  EXPECT_EQ(batched(2, 2, 2, 2, -4, 2, 4, 2, 4, 3), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "stride_a"));
  EXPECT_TRUE(contains(tuned_last_error(), "must be >= 0"));
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, -1, 2, 4, 3), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "stride_b"));
  // C's products must not overlap: ldc * n = 4 floats each.
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 3, 3), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "stride_c"));
  EXPECT_TRUE(contains(tuned_last_error(), "ldc * n = 4"));
  // The 2-D rules still hold (leading dimension too small).
  EXPECT_EQ(batched(4, 2, 2, 3, 8, 2, 4, 4, 8, 3), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "lda"));
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 3, nullptr, static_cast<tuned_compute_t>(7)),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "compute"));
}

TEST(GemmBatch, BadEpiloguesAreRefusedNamingTheField) {
  tuned_epilogue_t e{};
  e.bias_kind = TUNED_BIAS_ROW;  // and no vector
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 1, &e), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "epilogue.bias"));
  static float bias[2];
  e.bias = bias;
  e.bias_kind = static_cast<tuned_bias_t>(3);
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 1, &e), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "epilogue.bias_kind"));
  e.bias_kind = TUNED_BIAS_COLUMN;
  e.activation = static_cast<tuned_activation_t>(9);
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 1, &e), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "epilogue.activation"));
  e.activation = TUNED_ACTIVATION_GELU_ERF;
  e.bias_batch_stride = -2;
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 1, &e), TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(tuned_last_error(), "epilogue.bias_stride"));
}

TEST(GemmBatch, EmptyBatchesDoNothing) {
  // Nothing to compute: no device is asked for (this machine may have none).
  EXPECT_EQ(batched(2, 2, 2, 2, 4, 2, 4, 2, 4, 0), TUNED_STATUS_SUCCESS) << tuned_last_error();
  EXPECT_EQ(batched(0, 2, 2, 1, 4, 2, 4, 1, 4, 5), TUNED_STATUS_SUCCESS) << tuned_last_error();
}

// autotune --batch N: each shape as a batch of N products.
ParseResult parse(std::initializer_list<std::string> args) {
  std::vector<std::string> storage = {"autotune"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& arg : storage) argv.push_back(arg.c_str());
  return parse_autotune_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(GemmBatch, AutotuneTunesEachShapeAsABatch) {
  const ParseResult ok = parse({"--shape", "128x128x64", "--shape", "64x32x16", "--batch", "96"});
  ASSERT_FALSE(ok.exit_now) << ok.message;
  const auto requests = shape_requests(ok.options);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].shape, (std::vector<int64_t>{128, 128, 64, 96}));
  EXPECT_EQ(requests[1].shape, (std::vector<int64_t>{64, 32, 16, 96}));
  // A batch's work counts its products (the largest tasks start first).
  EXPECT_DOUBLE_EQ(estimated_work(requests[0]), 128.0 * 128 * 64 * 96);
  for (const auto& [args, part] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--batch", "0"},
            "--batch: must be a whole number of products from 1 to 2147483647, got '0'"},
           {{"--batch", "x"}, "--batch"},
           {{"--op", "transpose", "--batch", "4"}, "op transpose has no BATCH dimension"},
           {{"--shape", "8x8x8x2", "--batch", "4"}, "already gives a batch"}}) {
    std::vector<std::string> storage = {"autotune"};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (const std::string& arg : storage) argv.push_back(arg.c_str());
    const ParseResult bad = parse_autotune_command_line(static_cast<int>(argv.size()), argv.data());
    EXPECT_TRUE(bad.exit_now);
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_TRUE(contains(bad.message, part));
  }
}

}  // namespace
}  // namespace tuned::gemm_op
