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

/// The arithmetic a GEMM may use (see tuned_compute_t).
enum class Compute {
  kDefault = TUNED_COMPUTE_DEFAULT,         // FP32-accurate: FFMA, FP64 tensor cores or split TF32
  kFastTf32 = TUNED_COMPUTE_32F_FAST_TF32,  // plain TF32 accepted (opt-in)
  kPedantic = TUNED_COMPUTE_32F_PEDANTIC    // FFMA only
};

/// C = alpha op(A) op(B) + beta C in FP32, column-major, cuBLAS conventions (see tuned_gemm).
/// Throws Error on bad arguments or failures. Asynchronous on the stream. compute: the arithmetic
/// it may use (see tuned_gemm_ex).
void gemm(Op op_a, Op op_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc, cudaStream_t stream = nullptr,
          Compute compute = Compute::kDefault);

/// The configuration gemm() would use for these arguments and where it came from:
/// "exact: BM=...", "first-use: ...", "twin GPU-...: ...", "shipped: ...", "model: ...",
/// "nearest 4096x4096x4096: ...", "default: ...", each followed by " (math: ...)" (see
/// tuned_gemm_describe).
std::string describe_gemm(Op op_a, Op op_b, int m, int n, int k, const float* a, int lda,
                          const float* b, int ldb, const float* c, int ldc,
                          Compute compute = Compute::kDefault);

/// The epilogue's bias vector (see tuned_bias_t) and activation (tuned_activation_t).
enum class Bias { kNone = TUNED_BIAS_NONE, kRow = TUNED_BIAS_ROW, kColumn = TUNED_BIAS_COLUMN };
enum class Activation {
  kNone = TUNED_ACTIVATION_NONE,
  kRelu = TUNED_ACTIVATION_RELU,
  kGeluTanh = TUNED_ACTIVATION_GELU_TANH,
  kGeluErf = TUNED_ACTIVATION_GELU_ERF
};
/// C = activation(alpha op(A) op(B) + beta C + bias) in the product's kernel (see
/// tuned_epilogue_t); the default does nothing more.
struct Epilogue {
  Bias bias = Bias::kNone;
  const float* vector = nullptr;  // the bias: m (kRow) or n (kColumn) floats of device memory
  long long batch_stride = 0;     // floats between the products' bias vectors (0: one for all)
  Activation activation = Activation::kNone;
};

/// batch_count products C_i = activation(alpha op(A_i) op(B_i) + beta C_i + bias_i), A_i = a + i
/// stride_a floats (0: one A for all), B_i and C_i likewise (see tuned_gemm_strided_batched_ex).
void gemm_strided_batched(Op op_a, Op op_b, int m, int n, int k, float alpha, const float* a,
                          int lda, long long stride_a, const float* b, int ldb,
                          long long stride_b, float beta, float* c, int ldc, long long stride_c,
                          int batch_count, cudaStream_t stream = nullptr,
                          Compute compute = Compute::kDefault, const Epilogue& epilogue = {});

/// B = A^T out of place in FP32, column-major (see tuned_transpose). Throws Error on bad
/// arguments or failures. Asynchronous on the stream.
void transpose(int rows, int cols, const float* a, int lda, float* b, int ldb,
               cudaStream_t stream = nullptr);
/// The configuration transpose() would use and where it came from (see describe_gemm).
std::string describe_transpose(int rows, int cols, const float* a, int lda, const float* b,
                               int ldb);

/// Local entropy on device memory (see tuned_entropy). Throws Error on bad arguments, a value
/// outside [0, levels) (naming it; nothing written) or failures.
void entropy(int rows, int cols, int radius, int levels, const float* in, int ld_in, float* out,
             int ld_out, cudaStream_t stream = nullptr);
void entropy(int rows, int cols, int radius, int levels, const unsigned char* in, int ld_in,
             float* out, int ld_out, cudaStream_t stream = nullptr);

enum class EntropyPath { kAuto = TUNED_ENTROPY_AUTO, kCpu = TUNED_ENTROPY_CPU, kGpu = TUNED_ENTROPY_GPU };
struct EntropyOptions {
  EntropyPath path = EntropyPath::kAuto;
  int gpus = 0;  // 0: every visible GPU
};
/// What a host call did.
struct EntropyReport {
  std::string path;      // "gpu", "cpu (mixed)", "cpu (prefix)"
  int gpus = 0;          // GPUs used (0 on the CPU path)
  double kernel_ms = 0;  // the slowest GPU's kernel time, summed over its chunks
  double pack_ms = 0;    // checking, packing and uploading the input (slowest GPU; overlapped)
};
/// Local entropy from host memory to host memory (see tuned_entropy_host).
void entropy_host(int rows, int cols, int radius, int levels, const float* in, int ld_in,
                  float* out, int ld_out, const EntropyOptions& options = {},
                  EntropyReport* report = nullptr);
void entropy_host(int rows, int cols, int radius, int levels, const unsigned char* in, int ld_in,
                  float* out, int ld_out, const EntropyOptions& options = {},
                  EntropyReport* report = nullptr);
/// The configuration entropy() would use (see describe_gemm).
std::string describe_entropy(int rows, int cols, int radius, int levels, bool input_u8);

/// Uses the tuning database at path from now on ("" for the default). Returns "" or, for a
/// database that cannot be used now, why (calls then use the shipped choices; see
/// tuned_set_database).
std::string set_database(const std::string& path);

/// Records each new problem called into the file at path ("" stops; see tuned_set_record).
/// Throws tuned::Error naming the path when it cannot be appended to.
void set_record(const std::string& path);

enum class Tuning { kOff = TUNED_TUNING_OFF, kFirstUse = TUNED_TUNING_FIRST_USE };
/// Sets the tuning policy for problems nobody tuned (see tuned_tuning_t).
void set_tuning(Tuning policy);

}  // namespace tuned

#endif  // TUNED_TUNED_HPP_
