#include "api/gemm_api.hpp"

#include <algorithm>

#include "api/runtime.hpp"
#include "api/transpose_api.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "tuned/tuned.h"

namespace tuned::api {
namespace {

const OpRegistration& gemm_registration() {
  static const OpRegistration& op = find_op("gemm");
  return op;
}

gemm_op::Compute compute_of(int compute) {
  require_argument(compute == TUNED_COMPUTE_DEFAULT || compute == TUNED_COMPUTE_32F_FAST_TF32 ||
                       compute == TUNED_COMPUTE_32F_PEDANTIC,
                   "compute",
                   "must be TUNED_COMPUTE_DEFAULT, TUNED_COMPUTE_32F_FAST_TF32 or "
                   "TUNED_COMPUTE_32F_PEDANTIC");
  return static_cast<gemm_op::Compute>(compute);
}

gemm_op::Problem make_problem(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const void* a,
                              int64_t lda, const void* b, int64_t ldb, const void* c, int64_t ldc,
                              int compute, const GemmBatch& batch) {
  gemm_op::Problem p;
  p.compute = compute_of(compute);
  p.trans_a = op_a == TUNED_OP_T;
  p.trans_b = op_b == TUNED_OP_T;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  p.batch = std::max<int64_t>(batch.count, 1);
  if (p.batch > 1) {
    p.stride_a = batch.stride_a;
    p.stride_b = batch.stride_b;
    p.stride_c = batch.stride_c;
  }
  p.alignment =
      gemm_op::alignment_class(a, b, c, lda, ldb, ldc, p.stride_a, p.stride_b, p.stride_c);
  // (A product of a batch starts a stride after another: the strides count for the operands'
  // vector alignment like the leading dimensions.)
  p.unaligned_operands = gemm_op::unaligned_operands(a, lda, b, ldb) |
                         (p.stride_a % 4 != 0 ? gemm_op::kOperandA : 0) |
                         (p.stride_b % 4 != 0 ? gemm_op::kOperandB : 0);
  return p;
}

void validate(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
              const void* a, int64_t lda, const void* b, int64_t ldb, const float* beta,
              const void* c, int64_t ldc, const GemmBatch& batch) {
  gemm_op::validate_arguments(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  gemm_op::validate_batch(m, n, ldc, batch.stride_a, batch.stride_b, batch.stride_c, batch.count);
}

}  // namespace

void gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, const float* beta, float* c, int64_t ldc,
          int compute, cudaStream_t stream, const GemmBatch& batch,
          const gemm_op::Epilogue& epilogue) {
  validate(op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, batch);
  gemm_op::validate_epilogue(epilogue);
  gemm_op::Problem problem =
      make_problem(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc, compute, batch);
  problem.epilogue = gemm_op::epilogue_form(epilogue);
  if (m == 0 || n == 0 || batch.count == 0) return;
  // BLAS semantics: alpha == 0 reads neither A nor B (they may be NULL); with k = 0 the kernel
  // writes beta * C (and the epilogue's bias and activation) without touching them.
  if (*alpha == 0.0f) problem.k = 0;
  struct Args {
    const gemm_op::Problem& problem;
    float alpha, beta;
    const float *a, *b;
    float* c;
    const gemm_op::Epilogue& epilogue;
  } args{problem, *alpha, *beta, a, b, c, epilogue};
  Runtime::instance().run(
      gemm_registration(), gemm_op::problem_id(problem),
      [&args](const LoadedKernel& kernel, const Config& config, void* workspace, cudaStream_t s) {
        // PRETB configs transpose B with the transpose op, chosen by the runtime like any call.
        gemm_op::launch(kernel, config, args.problem, args.alpha, args.a, args.b, args.beta,
                        args.c, workspace, s, api::transpose, args.epilogue);
      },
      stream);
}

std::string describe_gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* a,
                          int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                          int compute, const GemmBatch& batch) {
  const float one = 1.0f;
  validate(op_a, op_b, m, n, k, &one, a, lda, b, ldb, &one, c, ldc, batch);
  const gemm_op::Problem problem =
      make_problem(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc, compute, batch);
  return Runtime::instance().describe(gemm_registration(), gemm_op::problem_id(problem));
}

}  // namespace tuned::api
