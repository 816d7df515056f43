#include "core/device_info.hpp"

namespace tuned {

DeviceInfo reference_device(int compute_capability) {
  DeviceInfo info;
  info.name = "reference sm_" + std::to_string(compute_capability);
  info.uuid = "GPU-reference-sm" + std::to_string(compute_capability);
  info.cc_major = compute_capability / 10;
  info.cc_minor = compute_capability % 10;
  info.sm_count = compute_capability >= 90 ? 132 : 108;
  info.clock_khz = 1980000;
  info.max_threads_per_block = 1024;
  info.max_threads_per_sm = 2048;
  info.smem_per_block_optin = compute_capability >= 90 ? 232448 : 166912;
  info.smem_per_sm = compute_capability >= 90 ? 233472 : 167936;
  info.regs_per_sm = 65536;
  info.regs_per_block = 65536;
  info.l2_bytes = compute_capability >= 90 ? 50u << 20 : 40u << 20;
  info.memory_bytes = 80ull << 30;
  return info;
}

}  // namespace tuned
