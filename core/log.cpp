#include "core/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace tuned {
namespace {

// -1 until the environment has been read.
constexpr int kUnread = -1;

struct LogState {
  std::atomic<int> level{kUnread};
  std::once_flag env_once;
  std::mutex mutex;  // guards everything below
  std::string path;  // empty: stderr
  int fd = -1;       // open file of path, or -1 (not opened yet, or failed)
  bool open_failed = false;
  std::set<std::string> once_keys;
};

// Never destroyed: static destructors elsewhere may still log.
LogState& state() {
  static LogState* s = new LogState;
  return *s;
}

LogLevel parse_level(const char* text) {
  if (text == nullptr) return LogLevel::kOff;
  std::string lower;
  for (const char* p = text; *p != '\0'; ++p) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  }
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
    if (lower == log_level_name(level)) return level;
  }
  return LogLevel::kOff;
}

void read_environment() {
  LogState& s = state();
  std::call_once(s.env_once, [&s] {
    const char* file = std::getenv("TUNED_LOG_FILE");
    {
      std::lock_guard lock(s.mutex);
      s.path = file != nullptr ? file : "";
    }
    s.level.store(static_cast<int>(parse_level(std::getenv("TUNED_LOG_LEVEL"))));
  });
}

int current_level() {
  int level = state().level.load(std::memory_order_relaxed);
  if (level != kUnread) return level;
  read_environment();
  return state().level.load();
}

bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// Caller holds the mutex. One write() per line with O_APPEND, so lines of several threads or
// processes sharing the file do not interleave.
void write_line(LogState& s, LogLevel level, const std::string& message) {
  std::string line = std::string("[tuned ") + log_level_name(level) + "] ";
  const size_t end = message.find_last_not_of("\r\n");  // a trailing newline adds nothing
  // Messages quote text from files a user may have been handed (a tuning database's rows), so no
  // control character reaches the terminal raw: a line break becomes " | ", a carriage return is
  // dropped, a tab is shown as \t, other C0 controls and DEL as \xNN, and the C1 controls
  // (U+0080..U+009F in UTF-8) as \uNNNN.
  for (size_t i = 0; end != std::string::npos && i <= end; ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    const auto next = i < end ? static_cast<unsigned char>(message[i + 1]) : 0;
    char escaped[8];
    if (c == '\n') {
      line += " | ";
    } else if (c == '\r') {
    } else if (c == '\t') {
      line += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      line += escaped;
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
      std::snprintf(escaped, sizeof escaped, "\\u%04x", next);
      line += escaped;
      ++i;
    } else {
      line += message[i];
    }
  }
  line += '\n';
  if (!s.path.empty() && s.fd < 0 && !s.open_failed) {
    s.fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    // Said once, on stderr: the messages themselves still go there.
    if (s.fd < 0) {
      s.open_failed = true;
      write_all(STDERR_FILENO,
                "[tuned error] cannot open log file '" + s.path + "'; logging to stderr\n");
    }
  }
  write_all(s.fd >= 0 ? s.fd : STDERR_FILENO, line);
}

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kOff:
      return "off";
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "off";
}

bool log_enabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) <= current_level();
}

LogLevel log_level() { return static_cast<LogLevel>(current_level()); }

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  LogState& s = state();
  try {
    std::lock_guard lock(s.mutex);
    write_line(s, level, message);
  } catch (...) {
    // Logging never fails the caller (out of memory while formatting is the only way here).
  }
}

void log_once(LogLevel level, const std::string& key, const std::string& message) {
  if (!log_enabled(level)) return;
  LogState& s = state();
  try {
    std::lock_guard lock(s.mutex);
    if (!s.once_keys.insert(key).second) return;
    write_line(s, level, message);
  } catch (...) {
  }
}

void set_log_level(LogLevel level) {
  read_environment();  // so that a later first read cannot undo this
  state().level.store(static_cast<int>(level));
}

void set_log_file(const std::string& path) {
  read_environment();
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  s.open_failed = false;
  s.path = path;
}

}  // namespace tuned
