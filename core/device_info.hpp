// What the generator and tuner need to know of a GPU: identity (for cache keys) and limits (for
// constraints). A record only: generator/device.hpp queries the GPUs.
#pragma once

#include <cstddef>
#include <string>

namespace tuned {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;  // "GPU-8-4-4-4-12 hex", as nvidia-smi prints it
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  size_t smem_per_block_optin = 0;  // the most dynamic shared memory a block may opt in to
  size_t smem_per_sm = 0;
  int regs_per_sm = 0;
  int regs_per_block = 0;
  size_t l2_bytes = 0;
  size_t memory_bytes = 0;

  int compute_capability() const { return cc_major * 10 + cc_minor; }
  std::string arch() const { return "sm_" + std::to_string(compute_capability()); }
};

/// A device with no GPU: the limits of an sm_80/sm_90 part, for CPU-only enumeration and tests.
DeviceInfo reference_device(int compute_capability);

}  // namespace tuned
