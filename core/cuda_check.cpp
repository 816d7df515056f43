#include "core/cuda_check.hpp"

#include <cstdlib>
#include <filesystem>

#include "core/log.hpp"

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

namespace {

// "cudaGetDevice(&device) failed at runtime.cpp:316", for the debug log: where a message came from.
void log_location(const std::string& what, const char* file, int line) {
  if (!log_enabled(LogLevel::kDebug)) return;
  log(LogLevel::kDebug, what + " at " + std::filesystem::path(file).filename().string() + ":" +
                            std::to_string(line));
}

// "13.0" from CUDA's 13000.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

std::string no_device_message(cudaError_t error) {
  std::string why;
  switch (error) {
    case cudaErrorInsufficientDriver: {
      int driver = 0, runtime = 0;
      // The driver's version is 0 where no driver is installed or loaded.
      if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
        why = "no NVIDIA driver is loaded (on a machine with an NVIDIA GPU, install its driver)";
      } else {
        (void)cudaRuntimeGetVersion(&runtime);
        why = "the NVIDIA driver supports CUDA " + cuda_version_text(driver) +
              ", older than this build's CUDA runtime " + cuda_version_text(runtime) +
              " (update the driver)";
      }
      break;
    }
    case cudaErrorNoDevice:
      if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr) {
        why = std::string("no GPU is visible (CUDA_VISIBLE_DEVICES='") + visible + "')";
      } else {
        why = "the NVIDIA driver sees no GPU";
      }
      break;
    case cudaErrorDevicesUnavailable:
      why = "every GPU is unavailable (busy in exclusive-process mode, or prohibited)";
      break;
    case cudaErrorSystemDriverMismatch:
      why = "the NVIDIA kernel driver and its user-space library (libcuda) differ in version";
      break;
    case cudaErrorCompatNotSupportedOnDevice:
      why = "the CUDA forward-compatibility driver does not support this GPU";
      break;
    default:
      why = cudaGetErrorString(error);
  }
  return "no CUDA device: " + why + " (" + cudaGetErrorName(error) + ")";
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  const std::string failed = std::string(call) + " failed: " + cudaGetErrorName(error);
  log_location(failed, file, line);
  if (status_of(error) == TUNED_STATUS_NO_DEVICE && error != cudaErrorInvalidDevice) {
    throw Error(TUNED_STATUS_NO_DEVICE, no_device_message(error));
  }
  throw Error(status_of(error), failed + " (" + cudaGetErrorString(error) + ")");
}

void throw_nvrtc_error(nvrtcResult result, const char* call, const char* file, int line,
                       const std::string& log) {
  std::string message = std::string(call) + " failed: " + nvrtcGetErrorString(result);
  log_location(message, file, line);
  if (!log.empty()) message += "\n" + log;
  throw Error(
      result == NVRTC_ERROR_COMPILATION ? TUNED_STATUS_COMPILE_ERROR : TUNED_STATUS_INTERNAL_ERROR,
      message);
}

}  // namespace tuned
