#include "core/cuda_check.hpp"

#include <filesystem>

namespace tuned {

tuned_status_t status_of(cudaError_t error) {
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return TUNED_STATUS_NO_DEVICE;
    case cudaErrorInvalidKernelImage:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorLaunchTimeout:
      return TUNED_STATUS_LAUNCH_ERROR;
    default:
      return TUNED_STATUS_CUDA_ERROR;
  }
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  std::string message;
  if (status_of(error) == TUNED_STATUS_NO_DEVICE && error != cudaErrorInvalidDevice) {
    message = "no CUDA device: ";
  }
  message += std::string(call) + " failed: " + cudaGetErrorName(error) + " (" +
             cudaGetErrorString(error) + ") at " + std::filesystem::path(file).filename().string() +
             ":" + std::to_string(line);
  throw Error(status_of(error), message);
}

void throw_nvrtc_error(nvrtcResult result, const char* call, const char* file, int line,
                       const std::string& log) {
  std::string message = std::string(call) + " failed: " + nvrtcGetErrorString(result) + " at " +
                        std::filesystem::path(file).filename().string() + ":" +
                        std::to_string(line);
  if (!log.empty()) message += "\n" + log;
  throw Error(
      result == NVRTC_ERROR_COMPILATION ? TUNED_STATUS_COMPILE_ERROR : TUNED_STATUS_INTERNAL_ERROR,
      message);
}

}  // namespace tuned
