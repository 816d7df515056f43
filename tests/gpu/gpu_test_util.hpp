// Shared by the GPU tests: skip with a printed reason where there is no device.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace tuned::testing {

/// Empty when a CUDA device is usable, else why not.
inline std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "no CUDA device: none found";
  return "";
}

#define TUNED_REQUIRE_GPU()                                            \
  do {                                                                 \
    const std::string reason_ = ::tuned::testing::no_gpu_reason();     \
    if (!reason_.empty()) GTEST_SKIP() << "GPU test skipped: " << reason_; \
  } while (0)

/// Path of a tool built next to the tests (<build>/tools/NAME).
inline std::string tool_path(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, n) : std::string(".");
  dir = dir.substr(0, dir.find_last_of('/'));
  return dir + "/../tools/" + name;
}

/// Runs a shell command; returns its exit code and output (stdout and stderr).
inline int run_command(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  output->clear();
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output->append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace tuned::testing
