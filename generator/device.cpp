#include "generator/device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "core/cuda_check.hpp"
#include "generator/nvrtc_compiler.hpp"

namespace tuned {

int device_count() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so later calls report their own
    throw Error(TUNED_STATUS_NO_DEVICE, no_device_message(err));
  }
  if (count == 0) throw Error(TUNED_STATUS_NO_DEVICE, no_device_message(cudaErrorNoDevice));
  return count;
}

static std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

DeviceInfo query_device(int index) {
  const int count = device_count();
  if (index < 0 || index >= count) {
    throw Error(TUNED_STATUS_NO_DEVICE, "device " + std::to_string(index) +
                                            ": no such CUDA device (this machine has " +
                                            std::to_string(count) + ", numbered from 0)");
  }
  cudaDeviceProp prop{};
  TUNED_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.uuid = format_uuid(prop.uuid);
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  TUNED_CUDA_CHECK(cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, index));
  info.max_threads_per_block = prop.maxThreadsPerBlock;
  info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  info.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  info.smem_per_sm = prop.sharedMemPerMultiprocessor;
  info.regs_per_sm = prop.regsPerMultiprocessor;
  info.regs_per_block = prop.regsPerBlock;
  info.l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  info.memory_bytes = prop.totalGlobalMem;
  const int min_cc = nvrtc_min_compute_capability();
  if (info.compute_capability() < min_cc) {
    throw Error(TUNED_STATUS_UNSUPPORTED_ARCH,
                "device " + std::to_string(index) + " (" + info.name + ") is " + info.arch() +
                    "; this NVRTC targets sm_" + std::to_string(min_cc) + " and newer");
  }
  return info;
}

}  // namespace tuned
