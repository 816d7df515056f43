/// @file tuned.h
/// The C API of libtuned: autotuned, JIT-compiled kernels with cuBLAS-like arguments.
///
/// Every function returns a tuned_status_t; tuned_status_string() names the code and
/// tuned_last_error() gives the message of the last failure on the calling thread (which argument,
/// which rule, and for compile failures the NVRTC log).
#ifndef TUNED_TUNED_H_
#define TUNED_TUNED_H_

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Result of every call.
typedef enum tuned_status_t {
  TUNED_STATUS_SUCCESS = 0,
  TUNED_STATUS_INVALID_ARGUMENT = 1,  ///< an argument breaks a rule (size, pointer, leading dim)
  TUNED_STATUS_NO_DEVICE = 2,         ///< no CUDA device or driver, or the device index is bad
  TUNED_STATUS_UNSUPPORTED_ARCH = 3,  ///< the device's architecture is older than sm_70
  TUNED_STATUS_COMPILE_ERROR = 4,     ///< NVRTC rejected a kernel (the message holds its log)
  TUNED_STATUS_LAUNCH_ERROR = 5,      ///< the kernel could not be loaded or launched
  TUNED_STATUS_CUDA_ERROR = 6,        ///< another CUDA runtime call failed
  TUNED_STATUS_DATABASE_ERROR = 7,    ///< the tuning database is unwritable, corrupt or too new
  TUNED_STATUS_CONFIG_ERROR = 8,      ///< a configuration (TOML, config string) is malformed
  TUNED_STATUS_INTERNAL_ERROR = 9     ///< a bug in tuned
} tuned_status_t;

/// Mirrors cublasOperation_t: TUNED_OP_N uses the matrix as stored, TUNED_OP_T its transpose.
typedef enum tuned_operation_t { TUNED_OP_N = 0, TUNED_OP_T = 1 } tuned_operation_t;

/// Short name of a status code ("invalid argument", ...).
const char* tuned_status_string(tuned_status_t status);

/// Message of the last failed call on this thread ("" when none failed).
const char* tuned_last_error(void);

/// C = alpha * op(A) * op(B) + beta * C in FP32, column-major, with cublasSgemm's arguments
/// (alpha and beta by host pointer) plus a stream. op(A) is m x k, op(B) is k x n, C is m x n.
/// lda >= max(1, op_a == N ? m : k), ldb >= max(1, op_b == N ? k : n), ldc >= max(1, m).
/// k == 0 gives beta * C; beta == 0 never reads C. The kernel is the best configuration tuned for
/// this device and shape: from the user's database (exact key, else the nearest tuned shape), else
/// from the defaults shipped in the library for this GPU model (exact, else nearest), else the
/// built-in default;
/// compiled once per process or taken from the tuning database. Asynchronous on the stream.
tuned_status_t tuned_gemm(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                          const float* alpha, const float* A, int lda, const float* B, int ldb,
                          const float* beta, float* C, int ldc, cudaStream_t stream);

/// Uses the tuning database at path from now on (NULL: TUNED_DB, else the default under
/// $XDG_CACHE_HOME/tuned/). Kernels already loaded stay loaded.
tuned_status_t tuned_set_database(const char* path);

/// Describes the configuration tuned_gemm would use for this problem, and where it came from
/// ("exact", "nearest MxNxK", "shipped", "shipped nearest MxNxK", "default"), into buf (NUL-terminated, truncated to size).
tuned_status_t tuned_gemm_describe(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n,
                                   int k, const float* A, int lda, const float* B, int ldb,
                                   const float* C, int ldc, char* buf, unsigned long size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TUNED_TUNED_H_
