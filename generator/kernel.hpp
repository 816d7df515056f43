// A compiled kernel loaded through the CUDA runtime's library API (nothing links libcuda), with its
// attributes, ready to launch on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tuned {

/// Grid, block and dynamic shared memory of one launch. Ops derive it from the same config values
/// that reach the kernel as -D options.
struct LaunchGeometry {
  dim3 grid;
  dim3 block;
  size_t dynamic_smem_bytes = 0;
  /// The kernel itself waits for the previous grid of the stream to finish before it touches
  /// memory (griddepcontrol.wait), so it may be launched while that grid runs (programmatic
  /// stream serialization): its blocks are then resident when the previous kernel ends, with no
  /// launch gap between them. Honoured for images built for sm_90 or later.
  bool waits_for_previous_grid = false;
};

/// A grid-stride launch over `elements`: blocks of `threads`, as many as the elements need but at
/// most four per SM (each thread then strides over the rest).
LaunchGeometry grid_stride_geometry(size_t elements, int threads, int sm_count);

class LoadedKernel {
 public:
  /// Loads a cubin (or PTX) on the current device and finds kernel_name in it; raises the dynamic
  /// shared-memory limit to dynamic_smem_bytes. Throws Error(TUNED_STATUS_LAUNCH_ERROR) when the
  /// image does not load or the kernel does not fit the device.
  /// companions: other kernels of the image to find too (helpers the op launches around the
  /// main kernel, without dynamic shared memory).
  LoadedKernel(const std::vector<char>& image, const std::string& kernel_name,
               size_t dynamic_smem_bytes, const std::vector<std::string>& companions = {});
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;

  /// Launches with args (pointers to each argument, as cudaLaunchKernel takes them). Throws
  /// Error(TUNED_STATUS_LAUNCH_ERROR) when the launch is refused.
  void launch(const LaunchGeometry& geometry, void** args, cudaStream_t stream) const;
  /// Launches the companion kernel called name (one of those given at load time).
  void launch_companion(const std::string& name, const LaunchGeometry& geometry, void** args,
                        cudaStream_t stream) const;

  const std::string& name() const { return name_; }
  int registers() const { return attributes_.numRegs; }
  int max_threads_per_block() const { return attributes_.maxThreadsPerBlock; }
  size_t local_bytes() const { return attributes_.localSizeBytes; }
  size_t static_smem_bytes() const { return attributes_.sharedSizeBytes; }
  /// Blocks of `threads` threads with dynamic_smem_bytes each that one SM holds at once
  /// (remembered: launches that size their grid by it ask every time).
  int max_active_blocks_per_sm(int threads, size_t dynamic_smem_bytes) const;

 private:
  std::string name_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  std::vector<std::pair<std::string, cudaKernel_t>> companions_;
  cudaFuncAttributes attributes_{};
  size_t dynamic_smem_bytes_ = 0;
  mutable std::mutex occupancy_mutex_;
  mutable std::map<std::pair<int, size_t>, int> occupancy_;
};

}  // namespace tuned
