#include "generator/kernel_cache.hpp"

#include "tuned/error.hpp"

namespace tuned {

cache::CubinKey cubin_key(const KernelSpec& spec, const DeviceInfo& device) {
  cache::CubinKey key;
  key.source_hash = spec.source_hash;
  for (const auto& o : base_compile_options()) key.options += o + " ";
  for (size_t i = 0; i < spec.options.size(); ++i) {
    key.options += (i ? " " : "") + spec.options[i];
  }
  key.arch = nvrtc_target(device.compute_capability());
  key.nvrtc_version = nvrtc_version();
  return key;
}

BuiltKernel KernelCache::build(const KernelSpec& spec, const DeviceInfo& device) {
  const cache::CubinKey key = cubin_key(spec, device);
  CubinStore* store = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    store = store_;
  }
  if (store) {
    if (auto found = store->find(key)) return BuiltKernel{std::move(*found), true};
  }
  CompileRequest request;
  request.source_name = spec.source_name;
  request.source = spec.source;
  request.kernel_name = spec.kernel_name;
  request.options = spec.options;
  request.compute_capability = device.compute_capability();
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

std::shared_ptr<const LoadedKernel> KernelCache::load(const BuiltKernel& built,
                                                      const KernelSpec& spec) {
  return std::make_shared<const LoadedKernel>(built.cubin.image, spec.kernel_name,
                                              spec.dynamic_smem_bytes, spec.companions);
}

std::shared_ptr<const LoadedKernel> KernelCache::get(const KernelSpec& spec,
                                                     const DeviceInfo& device) {
  const cache::CubinKey key = cubin_key(spec, device);
  // One image may hold several kernels (check.cu does): the name is part of what was loaded.
  const std::string map_key = std::to_string(device.index) + "|" + key.arch + "|" +
                              key.source_hash + "|" + key.options + "|" + spec.kernel_name;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(map_key); it != loaded_.end()) return it->second;
  }
  // Built outside the lock: compiling takes tens of milliseconds and other keys must not wait.
  auto kernel = load(build(spec, device), spec);
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.emplace(map_key, std::move(kernel)).first->second;
}

void KernelCache::set_store(CubinStore* store) {
  std::lock_guard<std::mutex> lock(mutex_);
  store_ = store;
}

}  // namespace tuned
