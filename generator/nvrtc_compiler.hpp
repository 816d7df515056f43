// NVRTC: template source + options -> cubin for the device's exact architecture, with the
// resource report that -Xptxas=-v writes into the program log.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tuned {

/// What the compiler said about one kernel (from the -Xptxas=-v log).
struct ResourceReport {
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;
  int static_smem_bytes = 0;
  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

/// Reads registers, spills, stack frame and shared memory of `kernel_name` from a ptxas -v log.
/// Fields not found stay 0.
ResourceReport parse_ptxas_report(const std::string& log, const std::string& kernel_name);

struct CompileRequest {
  std::string source_name;  // for log lines: "gemm.cu"
  std::string_view source;
  std::string kernel_name;           // the extern "C" entry point
  std::vector<std::string> options;  // -D options; architecture and flags are added here
  int compute_capability = 90;
  bool arch_specific = false;  // the architecture-specific target (sm_90a), see nvrtc_target
};

struct CompiledKernel {
  std::vector<char> image;  // cubin (or PTX where NVRTC does not know the architecture)
  std::string kernel_name;
  std::string log;
  ResourceReport resources;
  double compile_ms = 0;
};

/// Compiles; throws Error(TUNED_STATUS_COMPILE_ERROR) carrying the kernel name, the options and
/// the NVRTC log. Thread-safe (each call has its own program).
CompiledKernel compile_kernel(const CompileRequest& request);

/// "13.0"
std::string nvrtc_version();
/// The oldest and newest compute capability this NVRTC emits cubins for (e.g. 75 and 121).
int nvrtc_min_compute_capability();
int nvrtc_max_compute_capability();
/// The architecture option NVRTC gets for a device: "sm_90", or "compute_XX" (PTX, JIT-compiled
/// by the driver) for a device newer than this NVRTC knows. arch_specific: the target with the
/// architecture's own instructions ("sm_90a": wgmma), whose cubin runs on that architecture only;
/// Error(TUNED_STATUS_UNSUPPORTED_ARCH) where this NVRTC does not know the device's architecture.
std::string nvrtc_target(int compute_capability, bool arch_specific = false);
/// The fixed options every kernel is compiled with (part of the cubin key).
const std::vector<std::string>& base_compile_options();

}  // namespace tuned
