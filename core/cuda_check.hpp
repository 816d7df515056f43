// Check macros: they capture the call text, file and line, and turn failures into tuned::Error.
// The message says what failed in words a user can act on; the file and line go to the debug log
// only (a user of the Python package or the tools has no use for "runtime.cpp:316").
#pragma once

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <string>

#include "tuned/error.hpp"

namespace tuned {

/// Maps a CUDA runtime error to the status a user can act on (no device, launch, other).
tuned_status_t status_of(cudaError_t error);

/// Why no CUDA device can be used, for an error status_of maps to TUNED_STATUS_NO_DEVICE (other
/// than an invalid index): "no CUDA device: no NVIDIA driver is loaded (cudaErrorInsufficientDriver)",
/// or a driver older than this build's CUDA runtime, every GPU hidden by CUDA_VISIBLE_DEVICES, ...
std::string no_device_message(cudaError_t error);

/// Throws Error for a failed CUDA runtime call; "no CUDA device" errors get a message that says so
/// (no_device_message). The message holds no source location: file and line are logged at debug.
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_nvrtc_error(nvrtcResult result, const char* call, const char* file,
                                    int line, const std::string& log);

}  // namespace tuned

#define TUNED_CUDA_CHECK(call)                                          \
  do {                                                                  \
    const cudaError_t tuned_err_ = (call);                              \
    if (tuned_err_ != cudaSuccess) {                                    \
      ::tuned::throw_cuda_error(tuned_err_, #call, __FILE__, __LINE__); \
    }                                                                   \
  } while (0)

#define TUNED_NVRTC_CHECK(call, log)                                          \
  do {                                                                        \
    const nvrtcResult tuned_res_ = (call);                                    \
    if (tuned_res_ != NVRTC_SUCCESS) {                                        \
      ::tuned::throw_nvrtc_error(tuned_res_, #call, __FILE__, __LINE__, log); \
    }                                                                         \
  } while (0)
