// Diagnostics of the library: silent unless asked for. The level comes from $TUNED_LOG_LEVEL
// (off, error, warn, info, debug; case-insensitive; unset or unknown is off) and the destination
// from $TUNED_LOG_FILE (appended; default stderr). Both are read once, on first use; the setters
// override them. Every message is one line, "[tuned <level>] <message>".
#pragma once

#include <string>

namespace tuned {

enum class LogLevel { kOff = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };

/// "off", "error", "warn", "info", "debug".
const char* log_level_name(LogLevel level);

/// Whether a message of this level is written: one atomic read, so hot paths can skip
/// formatting. kOff is never enabled.
bool log_enabled(LogLevel level);

/// The current level (after the environment was read).
LogLevel log_level();

/// Writes one line if the level is enabled. Thread-safe; never throws. Line breaks inside the
/// message become " | " so that one message stays one line.
void log(LogLevel level, const std::string& message);

/// Like log, but each key is written at most once per process (a damaged cache entry met on every
/// call must not flood the log). A message not written because its level is off does not use up
/// its key.
void log_once(LogLevel level, const std::string& key, const std::string& message);

/// Overrides $TUNED_LOG_LEVEL (programs and tests).
void set_log_level(LogLevel level);

/// Overrides $TUNED_LOG_FILE; empty means stderr. The file is opened (for appending, created if
/// needed) at the first message written, so a silent run leaves no file behind.
void set_log_file(const std::string& path);

}  // namespace tuned
