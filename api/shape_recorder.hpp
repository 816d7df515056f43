// The recorder of the offline tuning workflow: with TUNED_RECORD=FILE (or tuned_set_record) the
// runtime appends each problem a program calls, once, as a line `autotune --shapes-from FILE`
// reads ("gemm NN 4096x1024x512 align 4"): record a run, tune exactly its problems, rerun.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace tuned {

class ShapeRecorder {
 public:
  /// Distinct problems remembered per process; beyond it nothing more is recorded (said once).
  static constexpr size_t kMaxProblems = 100000;
  /// Of a file that already exists, this much is read to skip what it records already.
  static constexpr uint64_t kMaxReadBytes = uint64_t{16} << 20;

  ShapeRecorder() = default;
  ~ShapeRecorder();
  ShapeRecorder(const ShapeRecorder&) = delete;
  ShapeRecorder& operator=(const ShapeRecorder&) = delete;

  /// Records into path from now on ("" stops). The file is created if missing (appended to
  /// otherwise); its lines are not written again. Throws Error(TUNED_STATUS_INVALID_ARGUMENT)
  /// naming the path when it is no regular file that can be appended to; recording is off then.
  void set_path(const std::string& path);
  /// Appends the problem's line unless it was seen. Never throws: a failed write is logged once.
  void record(const std::string& op, const std::string& variant, const std::vector<int64_t>& shape,
              int alignment);
  bool active();

  /// The line of a problem, without its line break.
  static std::string line(const std::string& op, const std::string& variant,
                          const std::vector<int64_t>& shape, int alignment);

 private:
  void close_locked();  // mutex_ held
  std::mutex mutex_;
  std::string path_;
  int fd_ = -1;
  std::unordered_set<std::string> seen_;  // lines in the file or written by this process
};

}  // namespace tuned
