#include "tuner/device_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cctype>
#include <cstring>

#include "tuned/error.hpp"

namespace tuned {
namespace {

// The pid the holder wrote into the file ("" when unreadable).
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
}

}  // namespace

std::string DeviceLock::lock_dir() {
  const char* dir = std::getenv("TUNED_LOCK_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

std::string DeviceLock::path_for(const std::string& device_uuid) {
  std::string name;
  for (char c : device_uuid) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  return lock_dir() + "/tuned-gpu-" + name + ".lock";
}

DeviceLock::DeviceLock(const std::string& device_uuid, bool wait,
                       const std::function<void(const std::string&)>& on_wait) {
  const std::string path = path_for(device_uuid);
  // Readable and writable by everyone: tuners of every user on this machine share the GPU.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "GPU lock file '" + path + "' cannot be opened: " +
                                                   std::strerror(errno) +
                                                   " (set TUNED_LOCK_DIR to a writable folder)");
  }
  (void)::fchmod(fd_, 0666);  // past the umask; fails harmlessly on another user's file
  auto fail = [&](tuned_status_t status, const std::string& why) {
    ::close(fd_);
    throw Error(status, why);
  };
  auto unlockable = [&](int error) {
    fail(TUNED_STATUS_INVALID_ARGUMENT,
         "GPU lock file '" + path + "' cannot be locked: " + std::strerror(error));
  };
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) unlockable(errno);
    const std::string holder = holder_of(fd_);
    const std::string who = "GPU " + device_uuid + " is being tuned by " +
                            (holder.empty() ? std::string("another process")
                                            : "process " + holder) +
                            " (lock " + path + ")";
    if (!wait) fail(TUNED_STATUS_DEVICE_BUSY, who + "; not waiting (--no-wait)");
    if (on_wait) on_wait(who + "; waiting for it to finish");
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) unlockable(errno);
    }
  }
  // Who holds it, for the next one's message.
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) == 0) (void)::pwrite(fd_, pid.data(), pid.size(), 0);
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the flock
}

}  // namespace tuned
