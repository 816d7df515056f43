#include "api/transpose_api.hpp"

#include "api/runtime.hpp"
#include "templates/transpose/transpose_descriptor.hpp"

namespace tuned::api {
namespace {

const OpRegistration& transpose_registration() {
  static const OpRegistration& op = find_op("transpose");
  return op;
}

}  // namespace

void transpose(int64_t rows, int64_t cols, const float* a, int64_t lda, float* b, int64_t ldb,
               cudaStream_t stream) {
  transpose_op::validate_arguments(rows, cols, a, lda, b, ldb);
  if (rows == 0 || cols == 0) return;
  const transpose_op::Problem problem = transpose_op::call_problem(rows, cols, a, lda, b, ldb);
  Runtime::instance().run(
      transpose_registration(), transpose_op::problem_id(problem),
      [&](const LoadedKernel& kernel, const Config& config, void*, cudaStream_t s) {
        transpose_op::launch(kernel, config, problem, a, b, s);
      },
      stream);
}

std::string describe_transpose(int64_t rows, int64_t cols, const float* a, int64_t lda,
                               const float* b, int64_t ldb) {
  transpose_op::validate_arguments(rows, cols, a, lda, b, ldb);
  return Runtime::instance().describe(
      transpose_registration(),
      transpose_op::problem_id(transpose_op::call_problem(rows, cols, a, lda, b, ldb)));
}

}  // namespace tuned::api
