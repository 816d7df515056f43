// One tuner per GPU at a time: an advisory lock (flock) per device, held while a tuner times
// kernels, so two tuners never time each other's kernels. The kernel drops it when the holder
// exits, however it exits (kill -9 included).
#pragma once

#include <functional>
#include <string>

namespace tuned {

class DeviceLock {
 public:
  /// Where the lock files live: $TUNED_LOCK_DIR, else /tmp (one machine, every user).
  static std::string lock_dir();
  /// The lock file of a device: <lock_dir>/tuned-gpu-<uuid>.lock.
  static std::string path_for(const std::string& device_uuid);

  /// Takes the device's lock. Held by another process: wait (calling on_wait once, with a
  /// message naming the holder, before blocking), or with wait = false throw
  /// Error(TUNED_STATUS_DEVICE_BUSY) naming the holder and the lock file. A lock file that cannot
  /// be created is Error(TUNED_STATUS_INVALID_ARGUMENT) naming it.
  DeviceLock(const std::string& device_uuid, bool wait,
             const std::function<void(const std::string&)>& on_wait = {});
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tuned
