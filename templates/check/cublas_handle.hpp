// cuBLAS, the ops' reference and baseline library: a handle in plain FP32 math and a status check.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace tuned {

/// Throws Error(TUNED_STATUS_CUDA_ERROR) naming the call and the cuBLAS status unless it succeeded.
void check_cublas(cublasStatus_t status, const char* call);

/// A cuBLAS handle in FP32 (no TF32) math mode.
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }
  void set_stream(cudaStream_t stream);

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace tuned
