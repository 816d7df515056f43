// Worker threads that compile candidates ahead of the GPU, so the measuring thread rarely waits.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/space.hpp"
#include "generator/kernel_cache.hpp"
#include "tuned/error.hpp"

namespace tuned {

struct CompileJob {
  Config config;
  KernelSpec spec;
  std::optional<BuiltKernel> built;  // set when the compile succeeded
  std::string error;                 // the compile error otherwise
  tuned_status_t error_status = TUNED_STATUS_SUCCESS;
};

/// Compile threads a tuner takes by default: the cores this process may run on (its affinity mask,
/// so tuners pinned to a GPU's share of a many-GPU host, e.g. by taskset, split the cores rather
/// than each starting one thread per core of the host), less one for the measuring thread.
int default_compile_threads();

class CompilePool {
 public:
  CompilePool(KernelCache& kernels, const DeviceInfo& device, int threads);
  ~CompilePool();  // stops the workers; jobs not started are dropped
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  void submit(CompileJob job);
  /// The next finished job, in completion order; blocks. Only call while in_flight() > 0.
  CompileJob wait();
  size_t in_flight() const;
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  void work();

  KernelCache& kernels_;
  DeviceInfo device_;
  mutable std::mutex mutex_;
  std::condition_variable job_ready_, result_ready_;
  std::deque<CompileJob> pending_, done_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tuned
