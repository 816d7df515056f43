// Workspaces for launches (packed operands, split-K partials), per call. Outside a stream capture
// each stream has one grow-only buffer (cudaMalloc), reused in stream order: the stream-ordered
// allocator's first allocation in a process cost 8-15 ms on an H100 whatever the pool or size
// (archive/2026-12/bench/results/history/first_call_probe_nvidia-h100.txt), more than a whole first
// call may take, while cudaMalloc took 0.1 ms. Inside a capture the workspace is stream-ordered
// from a pool, so the graph owns its memory and replays never share it with eager calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace tuned {

class Workspaces {
 public:
  Workspaces() = default;
  ~Workspaces();  // frees the buffers (errors ignored: at exit CUDA may be gone); keeps the pools
  Workspaces(const Workspaces&) = delete;
  Workspaces& operator=(const Workspaces&) = delete;

  /// Calls use(workspace) with at least bytes of device memory (of the current device) for work
  /// enqueued on stream by use. Calls for one stream are serialized while use enqueues, so one
  /// call's kernels never interleave with another's on the same buffer. use may run another op
  /// through the runtime (PRETB's transpose) only if that op needs no workspace: the lock is not
  /// recursive, so with() entered again from use throws Error(TUNED_STATUS_INTERNAL_ERROR)
  /// instead of deadlocking.
  void with(int device, cudaStream_t stream, bool capturing, size_t bytes,
            const std::function<void(void*)>& use);

  /// Whether this thread is inside some with()'s use: an op run from there (a nested op) must
  /// only enqueue, neither needing a workspace nor stopping to tune (the runtime serves it its
  /// pick without first-use tuning).
  static bool in_use_on_this_thread();

  /// Streams whose buffers are kept; the least recently used beyond are freed (a server making a
  /// stream per request does not grow without bound).
  static constexpr size_t kKeptStreams = 8;

 private:
  struct Buffer {
    int device = 0;
    unsigned long long stream_id = 0;  // cudaStreamGetId: unique for the process's lifetime
    void* memory = nullptr;
    size_t bytes = 0;
    uint64_t last_use = 0;
  };
  Buffer& buffer_for(int device, unsigned long long stream_id, size_t bytes);  // mutex_ held
  cudaMemPool_t pool(int device);                                              // mutex_ held

  std::mutex mutex_;
  std::vector<Buffer> buffers_;
  uint64_t uses_ = 0;
  std::map<int, cudaMemPool_t> pools_;  // for captures; kept for the process
};

}  // namespace tuned
