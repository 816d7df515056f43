// cuBLAS, the ops' reference and baseline library: loaded when first needed, a handle in plain
// FP32 math and a status check.
//
// libtuned does not link cuBLAS: it opens it (dlopen) the first time a check or a baseline needs
// it. Its libraries cost a process about 200 MB of resident memory as soon as they are mapped,
// which a program that only calls tuned_gemm with tuned kernels, or only lists the database
// (tunedb), should not pay.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace tuned {

/// The cuBLAS entry points libtuned uses, resolved from libcublas.so.<major of the headers>.
struct CublasApi {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasSgemm_64) sgemm_64;
  decltype(&cublasSgemmStridedBatched_64) sgemm_strided_batched_64;
  decltype(&cublasSgeam_64) sgeam_64;
};

/// Loads cuBLAS once per process; throws Error(TUNED_STATUS_CUDA_ERROR) naming the library and the
/// loader's reason if it cannot.
const CublasApi& cublas();

/// Throws Error(TUNED_STATUS_CUDA_ERROR) naming the call and the cuBLAS status unless it succeeded.
void check_cublas(cublasStatus_t status, const char* call);

/// A cuBLAS handle in FP32 (no TF32) math mode, unless TF32 is allowed.
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }
  void set_stream(cudaStream_t stream);
  /// Lets its FP32 routines round to TF32 on the tensor cores (CUBLAS_TF32_TENSOR_OP_MATH): the
  /// reference of GEMM's TF32 compute type.
  void allow_tf32();

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace tuned
