// GEMM's API entry: validates tuned_gemm's arguments, names the problem for the runtime and hands
// it a launcher holding the call's pointers and scalars. The runtime itself knows no op.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "templates/gemm/gemm_op.hpp"

namespace tuned::api {

/// A strided batch of products (tuned_gemm_strided_batched): count products, each operand stride
/// floats after the last product's (0: the same matrix for all). One product by default.
struct GemmBatch {
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t count = 1;
};

/// compute: a tuned_compute_t (checked: INVALID_ARGUMENT naming it otherwise).
void gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, const float* beta, float* c, int64_t ldc,
          int compute, cudaStream_t stream, const GemmBatch& batch = {},
          const gemm_op::Epilogue& epilogue = {});
std::string describe_gemm(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* a,
                          int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                          int compute, const GemmBatch& batch = {});

}  // namespace tuned::api
