// The version, three ways: the headers' TUNED_VERSION_* macros, tuned_version() of the library,
// and `--version` of every tool (the built binaries, run as a user runs them).
#include "tuned/version.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "tuned/tuned.h"

namespace {

// The test binary lives in <build>/tests, the tools in <build>/tools, the precompiler in <build>.
std::filesystem::path build_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
}

struct ProcessResult {
  int exit_code = -1;
  std::string out;  // stdout only
};

ProcessResult run(const std::string& command) {
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

TEST(Version, MacrosMakeTheStringAndTheLibraryAgrees) {
  const std::string composed = std::to_string(TUNED_VERSION_MAJOR) + "." +
                               std::to_string(TUNED_VERSION_MINOR) + "." +
                               std::to_string(TUNED_VERSION_PATCH);
  EXPECT_EQ(composed, TUNED_VERSION_STRING);
  ASSERT_NE(tuned_version(), nullptr);
  EXPECT_STREQ(tuned_version(), TUNED_VERSION_STRING);
}

// Each tool prints "<tool> (tuned) <tuned_version()>" and one newline on stdout, and exits 0,
// without touching a device or a database (TUNED_DB names a path that does not exist, and tunedb
// requires a command otherwise).
TEST(Version, EveryToolPrintsTheLibraryVersion) {
  const std::string expected_version = tuned_version();
  struct Tool {
    std::string name;
    std::filesystem::path path;
  };
  std::vector<Tool> tools = {{"autotune", build_dir() / "tools" / "autotune"},
                             {"tunedb", build_dir() / "tools" / "tunedb"},
                             {"fit_selection", build_dir() / "bench" / "fit_selection"}};
  // The precompiler exists in builds that precompile kernels (the default).
  if (std::filesystem::exists(build_dir() / "tuned_precompile")) {
    tools.push_back({"precompile", build_dir() / "tuned_precompile"});
  }
  for (const Tool& tool : tools) {
    SCOPED_TRACE(tool.name);
    ASSERT_TRUE(std::filesystem::exists(tool.path)) << tool.path << " is missing: build it";
    const ProcessResult result =
        run("TUNED_DB=/nonexistent/tuned.db '" + tool.path.string() + "' --version 2>/dev/null");
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out, tool.name + " (tuned) " + expected_version + "\n");
  }
}

// tunedb takes --version after a command too (its options may follow the command).
TEST(Version, TunedbAfterACommand) {
  const std::filesystem::path tunedb = build_dir() / "tools" / "tunedb";
  ASSERT_TRUE(std::filesystem::exists(tunedb));
  const ProcessResult result =
      run("TUNED_DB=/nonexistent/tuned.db '" + tunedb.string() + "' best --version 2>/dev/null");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, std::string("tunedb (tuned) ") + tuned_version() + "\n");
}

}  // namespace
