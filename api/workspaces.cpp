#include "api/workspaces.hpp"

#include <algorithm>

#include "core/cuda_check.hpp"
#include "tuned/error.hpp"

namespace tuned {

namespace {

// Buffers grow to the next power of two (at least 1 MB): a run of growing problems reallocates a
// few times, not at every call.
size_t rounded_up(size_t bytes) {
  size_t size = size_t{1} << 20;
  while (size < bytes) size <<= 1;
  return size;
}

// Set while this thread runs a with()'s use.
thread_local bool t_in_use = false;

// Marks this thread inside use for the scope; refuses a nested with() (the lock is not recursive).
class InUse {
 public:
  InUse() {
    if (t_in_use) {
      throw Error(TUNED_STATUS_INTERNAL_ERROR,
                  "an op run inside another op's launch asked for a workspace: nested ops "
                  "(PRETB's transpose) must need none");
    }
    t_in_use = true;
  }
  ~InUse() { t_in_use = false; }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;
};

}  // namespace

bool Workspaces::in_use_on_this_thread() { return t_in_use; }

Workspaces::~Workspaces() {
  for (const Buffer& b : buffers_) (void)cudaFree(b.memory);
}

Workspaces::Buffer& Workspaces::buffer_for(int device, unsigned long long stream_id, size_t bytes) {
  auto it = std::find_if(buffers_.begin(), buffers_.end(), [&](const Buffer& b) {
    return b.device == device && b.stream_id == stream_id;
  });
  if (it == buffers_.end()) {
    if (buffers_.size() >= kKeptStreams) {
      // cudaFree waits for the device: work still using the buffer finishes first.
      auto oldest = std::min_element(
          buffers_.begin(), buffers_.end(),
          [](const Buffer& a, const Buffer& b) { return a.last_use < b.last_use; });
      TUNED_CUDA_CHECK(cudaFree(oldest->memory));
      buffers_.erase(oldest);
    }
    buffers_.push_back(Buffer{device, stream_id, nullptr, 0, 0});
    it = buffers_.end() - 1;
  }
  if (it->bytes < bytes) {
    if (it->memory != nullptr) {
      TUNED_CUDA_CHECK(cudaFree(it->memory));  // after the stream's earlier calls (device sync)
      it->memory = nullptr;
      it->bytes = 0;
    }
    const size_t size = rounded_up(bytes);
    TUNED_CUDA_CHECK(cudaMalloc(&it->memory, size));
    it->bytes = size;
  }
  it->last_use = ++uses_;
  return *it;
}

cudaMemPool_t Workspaces::pool(int device) {
  if (auto it = pools_.find(device); it != pools_.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  TUNED_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  // Keep freed workspace reserved for the next capture instead of returning it at each sync.
  uint64_t keep = UINT64_MAX;
  TUNED_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return pools_.emplace(device, pool).first->second;
}

void Workspaces::with(int device, cudaStream_t stream, bool capturing, size_t bytes,
                      const std::function<void(void*)>& use) {
  InUse in_use;
  if (capturing) {
    cudaMemPool_t from;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      from = pool(device);
    }
    void* workspace = nullptr;
    TUNED_CUDA_CHECK(cudaMallocFromPoolAsync(&workspace, bytes, from, stream));
    try {
      use(workspace);
    } catch (...) {
      (void)cudaFreeAsync(workspace, stream);
      throw;
    }
    TUNED_CUDA_CHECK(cudaFreeAsync(workspace, stream));
    return;
  }
  unsigned long long stream_id = 0;
  TUNED_CUDA_CHECK(cudaStreamGetId(stream, &stream_id));
  std::lock_guard<std::mutex> lock(mutex_);  // held while use enqueues (microseconds)
  use(buffer_for(device, stream_id, bytes).memory);
}

}  // namespace tuned
