// Where kernels come from: the in-process map of loaded kernels, then the images precompiled into
// the library, then a cubin store (the tuning database), then NVRTC. Knows nothing of which op it
// is building, nor of the database.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cubin.hpp"
#include "core/device_info.hpp"
#include "generator/kernel.hpp"
#include "generator/nvrtc_compiler.hpp"

namespace tuned {

/// Everything needed to build one kernel. Ops fill it from a config.
struct KernelSpec {
  std::string source_name;
  std::string_view source;
  std::string source_hash;
  std::string kernel_name;
  std::vector<std::string> options;     // -D options
  std::vector<std::string> companions;  // other kernels of the same image the op launches
  size_t dynamic_smem_bytes = 0;        // the most any launch of it uses
  bool arch_specific = false;           // built for the architecture-specific target (sm_90a)
};

/// The cubin key of a spec on a device.
CubinKey cubin_key(const KernelSpec& spec, const DeviceInfo& device);

/// A compiled (not yet loaded) kernel, and whether it came from the store.
struct BuiltKernel {
  CubinRecord cubin;
  bool from_store = false;
  bool precompiled = false;  // built into the library ahead of time
};

class KernelCache {
 public:
  /// store: not owned, or null (tools and tests); set_store can hand over a shared one.
  explicit KernelCache(CubinStore* store = nullptr)
      : store_(store, [](CubinStore*) {}) {}

  /// The cubin for spec: precompiled, else from the store, else compiled by NVRTC (and put in the
  /// store). Throws Error(TUNED_STATUS_COMPILE_ERROR) with the log. Thread-safe; loads nothing.
  BuiltKernel build(const KernelSpec& spec, const DeviceInfo& device);

  /// The loaded kernel for spec on the device, building and loading it once per process: from
  /// the kernels precompiled into the library, else the store, else NVRTC. Thread-safe. source,
  /// when given, says where it came from ("loaded", "precompiled", "from the database",
  /// "compiled").
  std::shared_ptr<const LoadedKernel> get(const KernelSpec& spec, const DeviceInfo& device,
                                          std::string* source = nullptr);

  /// get() where it needs no NVRTC (loaded already, precompiled, or in the store); else null.
  std::shared_ptr<const LoadedKernel> get_if_ready(const KernelSpec& spec,
                                                   const DeviceInfo& device);

  /// Loads a built kernel on the current device (no caching).
  static std::shared_ptr<const LoadedKernel> load(const BuiltKernel& built, const KernelSpec& spec);

  /// Like load, but a cubin from the store that does not load (damaged at rest, or written by a
  /// driver-incompatible build) is dropped from the store, compiled afresh, stored and loaded;
  /// built then holds the new cubin. A freshly compiled kernel that fails to load still throws.
  std::shared_ptr<const LoadedKernel> load_or_recompile(BuiltKernel& built, const KernelSpec& spec,
                                                        const DeviceInfo& device);

  /// Replaces the store; builds in flight finish with the one they started with.
  void set_store(std::shared_ptr<CubinStore> store);

 private:
  std::shared_ptr<CubinStore> store();
  std::shared_ptr<const LoadedKernel> get_or_build(const KernelSpec& spec, const DeviceInfo& device,
                                                   std::string* source, bool may_compile);
  /// The cubin for spec without NVRTC: precompiled, else from the store.
  std::optional<BuiltKernel> find_built(const KernelSpec& spec, const CubinKey& key);
  BuiltKernel compile(const KernelSpec& spec, const DeviceInfo& device, const CubinKey& key,
                      CubinStore* store);

  std::mutex mutex_;
  std::shared_ptr<CubinStore> store_;
  std::map<std::string, std::shared_ptr<const LoadedKernel>> loaded_;
};

}  // namespace tuned
