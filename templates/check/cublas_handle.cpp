#include "templates/check/cublas_handle.hpp"

#include <string>

#include "tuned/error.hpp"

namespace tuned {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(TUNED_STATUS_CUDA_ERROR, std::string(call) + " failed: " +
                                             cublasGetStatusName(status) + " (" +
                                             cublasGetStatusString(status) + ")");
  }
}

CublasHandle::CublasHandle() {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
  // The baseline and the reference are plain FP32: no TF32 tensor-core shortcut.
  check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

CublasHandle::~CublasHandle() {
  if (handle_) (void)cublasDestroy(handle_);
}

void CublasHandle::set_stream(cudaStream_t stream) {
  check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
}

}  // namespace tuned
