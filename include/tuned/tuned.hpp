/// @file tuned.hpp
/// The C++ API of libtuned: the same calls as tuned.h, throwing tuned::Error instead of returning
/// a status.
#ifndef TUNED_TUNED_HPP_
#define TUNED_TUNED_HPP_

#include <cuda_runtime_api.h>

#include <string>

#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace tuned {

enum class Op { kN = TUNED_OP_N, kT = TUNED_OP_T };

/// C = alpha op(A) op(B) + beta C in FP32, column-major, cuBLAS conventions (see tuned_gemm).
/// Throws Error on bad arguments or failures. Asynchronous on the stream.
void gemm(Op op_a, Op op_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc, cudaStream_t stream = nullptr);

/// The configuration gemm() would use for these arguments and where it came from:
/// "exact: BM=...", "first-use: ...", "shipped: ...", "model: ...", "nearest 4096x4096x4096: ...",
/// "default: ..." (see tuned_gemm_describe).
std::string describe_gemm(Op op_a, Op op_b, int m, int n, int k, const float* a, int lda,
                          const float* b, int ldb, const float* c, int ldc);

/// B = A^T out of place in FP32, column-major (see tuned_transpose). Throws Error on bad
/// arguments or failures. Asynchronous on the stream.
void transpose(int rows, int cols, const float* a, int lda, float* b, int ldb,
               cudaStream_t stream = nullptr);
/// The configuration transpose() would use and where it came from (see describe_gemm).
std::string describe_transpose(int rows, int cols, const float* a, int lda, const float* b,
                               int ldb);

/// Uses the tuning database at path from now on ("" for the default).
void set_database(const std::string& path);

enum class Tuning { kOff = TUNED_TUNING_OFF, kFirstUse = TUNED_TUNING_FIRST_USE };
/// Sets the tuning policy for problems nobody tuned (see tuned_tuning_t).
void set_tuning(Tuning policy);

}  // namespace tuned

#endif  // TUNED_TUNED_HPP_
