#include "templates/check/cublas_handle.hpp"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "tuned/error.hpp"

namespace tuned {
namespace {

// cublas_v2.h maps the names to versioned symbols (cublasCreate -> cublasCreate_v2): the symbol
// looked up is the expanded name.
#define TUNED_CUBLAS_NAME(f) TUNED_CUBLAS_STRING(f)
#define TUNED_CUBLAS_STRING(f) #f
#define TUNED_CUBLAS_VERSION_TEXT(v) TUNED_CUBLAS_STRING(v)

CublasApi load() {
  const std::string library = "libcublas.so." TUNED_CUBLAS_VERSION_TEXT(CUBLAS_VER_MAJOR);
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    throw Error(TUNED_STATUS_CUDA_ERROR,
                "cannot load cuBLAS (" + library +
                    "), needed to check or time kernels: " + (reason ? reason : "unknown reason"));
  }
  auto symbol = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(handle, name));
    if (slot == nullptr) {
      throw Error(TUNED_STATUS_CUDA_ERROR, library + " lacks " + name);
    }
  };
  CublasApi api{};
  symbol(api.create, TUNED_CUBLAS_NAME(cublasCreate));
  symbol(api.destroy, TUNED_CUBLAS_NAME(cublasDestroy));
  symbol(api.set_stream, TUNED_CUBLAS_NAME(cublasSetStream));
  symbol(api.set_math_mode, TUNED_CUBLAS_NAME(cublasSetMathMode));
  symbol(api.status_name, TUNED_CUBLAS_NAME(cublasGetStatusName));
  symbol(api.status_string, TUNED_CUBLAS_NAME(cublasGetStatusString));
  symbol(api.sgemm_64, TUNED_CUBLAS_NAME(cublasSgemm_64));
  symbol(api.sgemm_strided_batched_64, TUNED_CUBLAS_NAME(cublasSgemmStridedBatched_64));
  symbol(api.sgeam_64, TUNED_CUBLAS_NAME(cublasSgeam_64));
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // a failed load throws, and is tried again next time
  return api;
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(TUNED_STATUS_CUDA_ERROR, std::string(call) +
                                             " failed: " + cublas().status_name(status) + " (" +
                                             cublas().status_string(status) + ")");
  }
}

CublasHandle::CublasHandle() {
  check_cublas(cublas().create(&handle_), "cublasCreate");
  // The baseline and the reference are plain FP32: no TF32 tensor-core shortcut.
  check_cublas(cublas().set_math_mode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

void CublasHandle::allow_tf32() {
  check_cublas(cublas().set_math_mode(handle_, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
}

CublasHandle::~CublasHandle() {
  if (handle_) (void)cublas().destroy(handle_);
}

void CublasHandle::set_stream(cudaStream_t stream) {
  check_cublas(cublas().set_stream(handle_, stream), "cublasSetStream");
}

}  // namespace tuned
