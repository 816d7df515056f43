// Check macros: they capture the call text, file and line, and turn failures into tuned::Error.
#pragma once

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <string>

#include "tuned/error.hpp"

namespace tuned {

/// Maps a CUDA runtime error to the status a user can act on (no device, launch, other).
tuned_status_t status_of(cudaError_t error);

/// Throws Error for a failed CUDA runtime call; "no CUDA device" errors get a message that says so.
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
