// The exit codes of every tool, one meaning each, so that a script can tell a mistake in its
// command line from a failure of the run and from a machine without a usable GPU.
#pragma once

#include <string>

#include "tuned/error.hpp"

namespace tuned::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // the run or the database failed
inline constexpr int kExitUsage = 2;     // the command line was refused: nothing was done
inline constexpr int kExitNoDevice = 3;  // no CUDA device, or no (or too old a) NVIDIA driver

/// The exit code of a run that ended with this error: no device, else a failure.
inline int exit_code_of(const Error& error) {
  return error.status() == TUNED_STATUS_NO_DEVICE ? kExitNoDevice : kExitFailure;
}

/// The lines of --help that list them (extra: more codes of this tool, "" for none).
inline std::string exit_codes_help(const std::string& extra = "") {
  return "Exit codes: 0 done; 1 the run or the database failed; 2 usage error (the command line "
         "was refused, nothing done); 3 no CUDA device or no NVIDIA driver" +
         extra + ".";
}

}  // namespace tuned::tools
