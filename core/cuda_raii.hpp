// One move-only owner per CUDA object. Destructors never throw: cleanup failures are ignored
// because the object is unusable either way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "core/cuda_check.hpp"

namespace tuned {

template <typename Handle, cudaError_t (*Destroy)(Handle)>
class CudaHandle {
 public:
  CudaHandle() = default;
  explicit CudaHandle(Handle h) : handle_(h) {}
  CudaHandle(CudaHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  CudaHandle& operator=(CudaHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  ~CudaHandle() { reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() {
    if (handle_ != Handle{}) (void)Destroy(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

/// A stream created with cudaStreamNonBlocking.
class Stream : public CudaHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  static Stream create() {
    cudaStream_t s = nullptr;
    TUNED_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return Stream(s);
  }
  void synchronize() const { TUNED_CUDA_CHECK(cudaStreamSynchronize(get())); }

 private:
  using CudaHandle::CudaHandle;
};

class Event : public CudaHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  static Event create() {
    cudaEvent_t e = nullptr;
    TUNED_CUDA_CHECK(cudaEventCreate(&e));
    return Event(e);
  }
  void record(cudaStream_t stream) const { TUNED_CUDA_CHECK(cudaEventRecord(get(), stream)); }
  /// Milliseconds from start to this event (both recorded and complete).
  float elapsed_since(const Event& start) const {
    TUNED_CUDA_CHECK(cudaEventSynchronize(get()));
    float ms = 0;
    TUNED_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), get()));
    return ms;
  }

 private:
  using CudaHandle::CudaHandle;
};

inline cudaError_t free_device_memory(void* p) { return cudaFree(p); }

/// Device memory of a fixed size in bytes.
class DeviceBuffer : public CudaHandle<void*, free_device_memory> {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    void* p = nullptr;
    if (bytes > 0) TUNED_CUDA_CHECK(cudaMalloc(&p, bytes));
    *this = DeviceBuffer(p, bytes);
  }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(get());
  }

 private:
  DeviceBuffer(void* p, size_t bytes) : CudaHandle(p), bytes_(bytes) {}
  size_t bytes_ = 0;
};

inline cudaError_t free_pinned_memory(void* p) { return cudaFreeHost(p); }

/// Page-locked host memory usable by every device (cudaHostAllocPortable), of a fixed size.
class PinnedBuffer : public CudaHandle<void*, free_pinned_memory> {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    void* p = nullptr;
    if (bytes > 0) TUNED_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    *this = PinnedBuffer(p, bytes);
  }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(get());
  }

 private:
  PinnedBuffer(void* p, size_t bytes) : CudaHandle(p), bytes_(bytes) {}
  size_t bytes_ = 0;
};

}  // namespace tuned
