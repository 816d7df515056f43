#include "generator/kernel_cache.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "generator/precompiled.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

bool image_is_loadable(const std::vector<char>& image) {
  static constexpr char kElf[] = {'\x7f', 'E', 'L', 'F'};
  if (image.size() >= sizeof kElf && std::equal(kElf, kElf + sizeof kElf, image.begin())) {
    return true;
  }
  return !image.empty() && image.back() == '\0';
}

// One image may hold several kernels (check.cu does): the name is part of what was loaded.
std::string loaded_key(const CubinKey& key, const KernelSpec& spec, const DeviceInfo& device) {
  return std::to_string(device.index) + "|" + key.arch + "|" + key.source_hash + "|" + key.options +
         "|" + spec.kernel_name;
}

}  // namespace

CubinKey cubin_key(const KernelSpec& spec, const DeviceInfo& device) {
  CubinKey key;
  key.source_hash = spec.source_hash;
  for (const auto& o : base_compile_options()) key.options += o + " ";
  for (size_t i = 0; i < spec.options.size(); ++i) {
    key.options += (i ? " " : "") + spec.options[i];
  }
  key.arch = nvrtc_target(device.compute_capability(), spec.arch_specific);
  key.nvrtc_version = nvrtc_version();
  return key;
}

std::shared_ptr<CubinStore> KernelCache::store() {
  std::lock_guard<std::mutex> lock(mutex_);
  return store_;
}

BuiltKernel KernelCache::compile(const KernelSpec& spec, const DeviceInfo& device,
                                 const CubinKey& key, CubinStore* store) {
  CompileRequest request;
  request.source_name = spec.source_name;
  request.source = spec.source;
  request.kernel_name = spec.kernel_name;
  request.options = spec.options;
  request.compute_capability = device.compute_capability();
  request.arch_specific = spec.arch_specific;
  CompiledKernel compiled = compile_kernel(request);

  BuiltKernel built;
  built.cubin.image = std::move(compiled.image);
  built.cubin.kernel_name = compiled.kernel_name;
  built.cubin.log = std::move(compiled.log);
  built.cubin.registers = compiled.resources.registers;
  built.cubin.spill_bytes = compiled.resources.spill_bytes();
  built.cubin.stack_bytes = compiled.resources.stack_bytes;
  built.cubin.static_smem_bytes = compiled.resources.static_smem_bytes;
  built.cubin.compile_ms = compiled.compile_ms;
  if (store) store->put(key, built.cubin);
  return built;
}

std::optional<BuiltKernel> KernelCache::find_built(const KernelSpec& spec, const CubinKey& key) {
  if (auto cubin = find_precompiled(key, spec.kernel_name)) {
    BuiltKernel built;
    built.cubin = std::move(*cubin);
    built.precompiled = true;
    return built;
  }
  const std::shared_ptr<CubinStore> store = this->store();
  if (store) {
    if (auto found = store->find(key)) return BuiltKernel{std::move(*found), true};
  }
  return std::nullopt;
}

BuiltKernel KernelCache::build(const KernelSpec& spec, const DeviceInfo& device) {
  const CubinKey key = cubin_key(spec, device);
  if (auto built = find_built(spec, key)) return std::move(*built);
  return compile(spec, device, key, store().get());
}

std::shared_ptr<const LoadedKernel> KernelCache::load(const BuiltKernel& built,
                                                      const KernelSpec& spec) {
  return std::make_shared<const LoadedKernel>(built.cubin.image, spec.kernel_name,
                                              spec.dynamic_smem_bytes, spec.companions);
}

std::shared_ptr<const LoadedKernel> KernelCache::load_or_recompile(BuiltKernel& built,
                                                                   const KernelSpec& spec,
                                                                   const DeviceInfo& device) {
  if (!built.from_store) return load(built, spec);
  std::string reason;
  try {
    // The driver takes no size: it trusts an ELF header's offsets and reads anything else as
    // PTX up to a NUL. Bytes that are neither must never reach it.
    if (!image_is_loadable(built.cubin.image)) {
      throw Error(TUNED_STATUS_LAUNCH_ERROR, "neither a cubin nor NUL-terminated PTX");
    }
    return load(built, spec);
  } catch (const Error& e) {
    if (e.status() == TUNED_STATUS_NO_DEVICE) throw;  // not the image's fault
    reason = e.what();
  }
  // The database only vouches for the bytes it stored: an image that passes its checksum may
  // still be garbage (stored so by a bug) or refused by this driver. The source is at hand, so the
  // kernel is rebuilt rather than the call failed.
  const CubinKey key = cubin_key(spec, device);
  const std::shared_ptr<CubinStore> store = this->store();
  if (store) store->drop(key);
  log_once(LogLevel::kWarn,
           "cubin did not load|" + key.source_hash + "|" + key.arch + "|" + key.options,
           "cubin of " + spec.kernel_name + " from the database did not load (" + reason +
               "): dropped and recompiled");
  built = compile(spec, device, key, store.get());
  return load(built, spec);
}

std::shared_ptr<const LoadedKernel> KernelCache::get(const KernelSpec& spec,
                                                     const DeviceInfo& device,
                                                     std::string* source) {
  return get_or_build(spec, device, source, true);
}

std::shared_ptr<const LoadedKernel> KernelCache::get_if_ready(const KernelSpec& spec,
                                                              const DeviceInfo& device) {
  return get_or_build(spec, device, nullptr, false);
}

std::shared_ptr<const LoadedKernel> KernelCache::get_or_build(const KernelSpec& spec,
                                                              const DeviceInfo& device,
                                                              std::string* source,
                                                              bool may_compile) {
  const CubinKey key = cubin_key(spec, device);
  const std::string map_key = loaded_key(key, spec, device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(map_key); it != loaded_.end()) {
      if (source) *source = "loaded";
      return it->second;
    }
  }
  // Built outside the lock: compiling takes tens of milliseconds and other keys must not wait.
  std::optional<BuiltKernel> found = find_built(spec, key);
  if (!found && !may_compile) return nullptr;
  BuiltKernel built = found ? std::move(*found) : compile(spec, device, key, store().get());
  auto kernel = load_or_recompile(built, spec, device);
  if (source) {
    *source = built.precompiled ? "precompiled" : built.from_store ? "from the database" : "compiled";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.emplace(map_key, std::move(kernel)).first->second;
}

void KernelCache::set_store(std::shared_ptr<CubinStore> store) {
  std::lock_guard<std::mutex> lock(mutex_);
  store_ = std::move(store);
}

}  // namespace tuned
