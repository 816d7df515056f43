// `--version` of every tool: "<tool> (tuned) <version>", the version of the libtuned it runs with.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tuned/tuned.h"

namespace tuned::tools {

/// "autotune (tuned) 0.1.0".
inline std::string version_line(const std::string& tool) {
  return tool + " (tuned) " + tuned_version();
}

/// Adds --version to app: CLI11 throws CLI::CallForVersion, which app.exit() prints to stdout with
/// exit code 0 (before any required option or subcommand is checked).
inline void add_version_flag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", version_line(tool), "print the version and exit");
}

}  // namespace tuned::tools
