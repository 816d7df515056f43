#include "generator/kernel.hpp"

#include <algorithm>

#include "core/cuda_check.hpp"

namespace tuned {

LoadedKernel::LoadedKernel(const std::vector<char>& image, const std::string& kernel_name,
                           size_t dynamic_smem_bytes, const std::vector<std::string>& companions)
    : name_(kernel_name), dynamic_smem_bytes_(dynamic_smem_bytes) {
  cudaError_t err = cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr,
                                        nullptr, 0);
  if (err != cudaSuccess) {
    library_ = nullptr;
    (void)cudaGetLastError();
    throw_cuda_error(err, ("cudaLibraryLoadData(" + kernel_name + ")").c_str(), __FILE__, __LINE__);
  }
  try {
    TUNED_CUDA_CHECK(cudaLibraryGetKernel(&kernel_, library_, kernel_name.c_str()));
    const void* func = reinterpret_cast<const void*>(kernel_);
    TUNED_CUDA_CHECK(cudaFuncGetAttributes(&attributes_, func));
    if (dynamic_smem_bytes > 0) {
      // Blocks get more than 48 KB of dynamic shared memory only after opting in.
      TUNED_CUDA_CHECK(cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(dynamic_smem_bytes)));
    }
    for (const auto& name : companions) {
      cudaKernel_t k = nullptr;
      TUNED_CUDA_CHECK(cudaLibraryGetKernel(&k, library_, name.c_str()));
      companions_.emplace_back(name, k);
    }
  } catch (...) {
    (void)cudaLibraryUnload(library_);
    throw;
  }
}

int LoadedKernel::max_active_blocks_per_sm(int threads, size_t dynamic_smem_bytes) const {
  std::lock_guard<std::mutex> lock(occupancy_mutex_);
  int& blocks = occupancy_.try_emplace({threads, dynamic_smem_bytes}, -1).first->second;
  if (blocks >= 0) return blocks;
  int computed = 0;
  TUNED_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &computed, reinterpret_cast<const void*>(kernel_), threads, dynamic_smem_bytes));
  return blocks = computed;
}

LoadedKernel::~LoadedKernel() {
  if (library_ != nullptr) (void)cudaLibraryUnload(library_);
}

LaunchGeometry grid_stride_geometry(size_t elements, int threads, int sm_count) {
  const size_t t = static_cast<size_t>(std::max(1, threads));
  const size_t most = static_cast<size_t>(std::max(1, sm_count)) * 4;
  LaunchGeometry g;
  g.block = dim3(static_cast<unsigned>(t));
  g.grid = dim3(static_cast<unsigned>(std::max<size_t>(1, std::min((elements + t - 1) / t, most))));
  return g;
}

namespace {

// cudaLaunchKernelExC of function (a cudaKernel_t of image), allowing an early launch where the
// kernel waits for the previous grid itself (LaunchGeometry::waits_for_previous_grid).
void launch_function(const void* function, int binary_version, const LaunchGeometry& geometry,
                     void** args, cudaStream_t stream, const std::string& name) {
  cudaLaunchConfig_t config{};
  config.gridDim = geometry.grid;
  config.blockDim = geometry.block;
  config.dynamicSmemBytes = geometry.dynamic_smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute overlap{};
  // griddepcontrol exists from sm_90: older images cannot wait, so they launch in plain order.
  if (geometry.waits_for_previous_grid && binary_version >= 90) {
    overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &overlap;
    config.numAttrs = 1;
  }
  const cudaError_t err = cudaLaunchKernelExC(&config, function, args);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw_cuda_error(err, ("cudaLaunchKernelExC(" + name + ")").c_str(), __FILE__, __LINE__);
  }
}

}  // namespace

void LoadedKernel::launch(const LaunchGeometry& geometry, void** args, cudaStream_t stream) const {
  if (geometry.dynamic_smem_bytes > dynamic_smem_bytes_) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                name_ + ": launch asks for more dynamic shared memory than the kernel was loaded for");
  }
  launch_function(reinterpret_cast<const void*>(kernel_), attributes_.binaryVersion, geometry, args,
                  stream, name_);
}

void LoadedKernel::launch_companion(const std::string& name, const LaunchGeometry& geometry,
                                    void** args, cudaStream_t stream) const {
  for (const auto& [companion, kernel] : companions_) {
    if (companion != name) continue;
    // Companions come from the same image, so they share the main kernel's binary version.
    launch_function(reinterpret_cast<const void*>(kernel), attributes_.binaryVersion, geometry,
                    args, stream, name);
    return;
  }
  throw Error(TUNED_STATUS_INTERNAL_ERROR, name_ + ": no companion kernel " + name + " was loaded");
}

}  // namespace tuned
