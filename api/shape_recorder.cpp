#include "api/shape_recorder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/log.hpp"
#include "core/problem_key.hpp"
#include "tuned/error.hpp"

namespace tuned {

std::string ShapeRecorder::line(const std::string& op, const std::string& variant,
                                const std::vector<int64_t>& shape, int alignment) {
  return op + " " + variant + " " + shape_string(shape) + " align " + std::to_string(alignment);
}

ShapeRecorder::~ShapeRecorder() { close_locked(); }

void ShapeRecorder::close_locked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  path_.clear();
  seen_.clear();
}

bool ShapeRecorder::active() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fd_ >= 0;
}

void ShapeRecorder::set_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  close_locked();
  if (path.empty()) return;
  auto refuse = [&](const std::string& why) {
    return Error(TUNED_STATUS_INVALID_ARGUMENT,
                 "cannot record problems into '" + path + "': " + why +
                     " (the record is a regular file that can be appended to)");
  };
  // Opened without blocking: a named pipe is refused, not waited on.
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) throw refuse(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw refuse("it is not a regular file");
  }
  // What the file records already is not recorded again (a rerun adds only new problems).
  std::string text;
  char buffer[65536];
  ssize_t n;
  while (text.size() < kMaxReadBytes && (n = ::pread(fd, buffer, sizeof buffer, text.size())) > 0) {
    text.append(buffer, static_cast<size_t>(n));
  }
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (!l.empty() && seen_.size() < kMaxProblems) seen_.insert(l);
  }
  fd_ = fd;
  path_ = path;
}

void ShapeRecorder::record(const std::string& op, const std::string& variant,
                           const std::vector<int64_t>& shape, int alignment) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  std::string text = line(op, variant, shape, alignment);
  if (seen_.count(text)) return;
  if (seen_.size() >= kMaxProblems) {
    log_once(LogLevel::kWarn, "record full|" + path_,
             "recording into " + path_ + " stopped at " + std::to_string(kMaxProblems) +
                 " distinct problems");
    return;
  }
  seen_.insert(text);
  text += '\n';
  // One write per line: appends of several processes never interleave within a line.
  const ssize_t written = ::write(fd_, text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size())) {
    log_once(LogLevel::kWarn, "record failed|" + path_,
             "recording into " + path_ +
                 " failed: " + (written < 0 ? std::strerror(errno) : std::string("short write")));
  }
}

}  // namespace tuned
