// Runs the built `autotune` binary as a subprocess: exit codes and messages as a user sees them.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/peak_memory.hpp"

namespace {

// The test binary lives in <build>/tests, autotune in <build>/tools.
std::filesystem::path autotune_path() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "tools" /
         "autotune";
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Arguments are single-quoted for the shell; none of the tests' arguments holds a quote.
// environment: variable settings for the shell to put before the command ("NAME=value ...").
ProcessResult run_autotune(const std::string& arguments, const std::string& environment = "") {
  std::string command = environment + " '" + autotune_path().string() + "' " + arguments + " 2>&1";
  ProcessResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    run.output.append(buffer.data(), n);
  int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

// A fresh folder under the system's temporary directory (the caller removes it).
std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tuned_cli_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return {};
  return pattern;
}

class AutotuneBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(autotune_path()))
        << autotune_path() << " is missing: build the autotune target";
  }
};

TEST_F(AutotuneBinaryTest, HelpExitsZero) {
  ProcessResult run = run_autotune("--help");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--device"), std::string::npos) << run.output;
}

TEST_F(AutotuneBinaryTest, NegativeDeviceExitsTwoNamingTheFlag) {
  ProcessResult run = run_autotune("--device -1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--device"), std::string::npos) << run.output;
}

TEST_F(AutotuneBinaryTest, MalformedDeviceListExitsTwoNamingTheFlag) {
  ProcessResult run = run_autotune("--device 0,,1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--device: must be a CUDA device index"), std::string::npos)
      << run.output;
}

// With no device visible (none on a CPU machine, hidden on a GPU one), --device all says so as
// --device N does, before any database is opened, and exits 3 (no device).
TEST_F(AutotuneBinaryTest, DeviceAllWithoutAGpuSaysNoCudaDevice) {
  const std::filesystem::path dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  const std::string db = (dir / "never.db").string();
  for (const std::string device : {"all", "0,1", "0"}) {
    SCOPED_TRACE(device);
    ProcessResult run = run_autotune("--device " + device + " --shape 64x64x64 --db '" + db + "'",
                                     "CUDA_VISIBLE_DEVICES=");
    EXPECT_EQ(run.exit_code, 3) << run.output;
    EXPECT_NE(run.output.find("autotune: --device " + device + ": no CUDA device"),
              std::string::npos)
        << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
  std::filesystem::remove_all(dir);
}

TEST_F(AutotuneBinaryTest, MalformedConfigFileExitsTwoNamingTheLine) {
  const std::filesystem::path dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  std::filesystem::path file = dir / "bad.toml";
  std::ofstream(file) << "budget = 300\nshapes = [\"64x64x64\"\nlayout = \"NN\"\n";

  ProcessResult run = run_autotune("--config '" + file.string() + "'");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("line 3"), std::string::npos) << run.output;
}

// A config that is no regular file of sane size is one line and exit 2 at once, in little memory:
// a device that never ends (/dev/zero), a named pipe nobody writes, a 512 MB file (sparse: no disk
// used); so is a named pipe as the database.
TEST_F(AutotuneBinaryTest, SpecialOrHugeConfigFilesExitTwoAtOnce) {
  const std::filesystem::path dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  const std::string pipe = (dir / "pipe.toml").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const std::string big = (dir / "big.toml").string();
  ASSERT_EQ(::truncate((std::ofstream(big), big.c_str()), int64_t{512} << 20), 0);
  for (const auto& [path, rule] :
       {std::pair<std::string, std::string>{"/dev/zero", "not a regular file"},
        {pipe, "not a regular file"},
        {big, "at most 1048576 bytes"}}) {
    const auto start = std::chrono::steady_clock::now();
    ProcessResult run = run_autotune("--config '" + path + "'");
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find(path), std::string::npos) << run.output;
    EXPECT_NE(run.output.find(rule), std::string::npos) << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
    EXPECT_LT(took, std::chrono::seconds(2)) << path;
    // Peak resident memory: the binary with its precompiled kernels and the CUDA libraries it
    // maps (cuBLAS is opened only when a check needs it).
    const auto peak = tuned::testing::measure_peak(autotune_path().string(), {"--config", path},
                                                   (dir / "peak.out").string());
    EXPECT_EQ(peak.exit_code, 2);
    EXPECT_GT(peak.mb, 0) << "peak memory not readable";
    EXPECT_LT(peak.mb, 100) << path;
    std::printf("autotune --config %s: %.1f MB peak\n", path.c_str(), peak.mb);
  }
  const auto start = std::chrono::steady_clock::now();
  ProcessResult run = run_autotune("--shape 64x64x64 --db '" + pipe + "'");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(pipe), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--db: must be a database file, not a named pipe"), std::string::npos)
      << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  const auto peak = tuned::testing::measure_peak(autotune_path().string(), {"--db", pipe},
                                                 (dir / "peak.out").string());
  EXPECT_LT(peak.mb, 100);
  std::filesystem::remove_all(dir);
}

}  // namespace
