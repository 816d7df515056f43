// The library's log (core/log.hpp): silent by default, levels, log_once, file destination.
// The environment is read once per process, so those cases run this binary again as a child with
// the environment under test.
#include "core/log.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/temp_dir.hpp"

namespace tuned {
namespace {

namespace fs = std::filesystem;

using tuned::testing::TempDir;

using tuned::testing::slurp;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// Every in-process test sets level and file; this puts both back (silent, stderr).
class LogTest : public ::testing::Test {
 protected:
  void TearDown() override {
    set_log_level(LogLevel::kOff);
    set_log_file("");
  }
  TempDir dir_;
};

void log_every_level(const std::string& tag) {
  log(LogLevel::kError, tag + " error");
  log(LogLevel::kWarn, tag + " warn");
  log(LogLevel::kInfo, tag + " info");
  log(LogLevel::kDebug, tag + " debug");
}

// ----- the environment, in a child process -----------------------------------------------------

constexpr const char* kChildFlag = "TUNED_LOG_TEST_CHILD";

bool in_child() { return std::getenv(kChildFlag) != nullptr; }

// What the child does: log at every level (the "override" mode sets the level first), and leave
// <log file>.ran behind, so that a child that ran nothing cannot pass for a silent one.
void child_body() {
  std::ofstream(std::string(std::getenv("TUNED_LOG_FILE")) + ".ran") << "ran\n";
  if (std::string(std::getenv(kChildFlag)) == "override") set_log_level(LogLevel::kInfo);
  log_every_level("child");
  log_once(LogLevel::kError, "child key", "child once");
  log_once(LogLevel::kError, "child key", "child twice");
}

// Runs the current test again in a child process with TUNED_LOG_* unset, then `env` (assignments
// as env(1) takes them), and kChildFlag=mode; returns its exit code.
int run_child(const std::string& mode, const std::string& env) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string self = fs::canonical("/proc/self/exe").string();
  const std::string command = "env -u TUNED_LOG_LEVEL -u TUNED_LOG_FILE " + env + " " + kChildFlag +
                              "=" + mode + " '" + self +
                              "' --gtest_filter=" + info->test_suite_name() + "." + info->name() +
                              " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LogEnvironment, SilentByDefault) {
  if (in_child()) return child_body();
  TempDir dir;
  const std::string file = dir.file("tuned.log");
  ASSERT_EQ(run_child("1", "TUNED_LOG_FILE=" + file), 0);
  ASSERT_TRUE(fs::exists(file + ".ran"));
  // Not even created: a silent run leaves nothing behind.
  EXPECT_FALSE(fs::exists(file)) << slurp(file);
}

TEST(LogEnvironment, UnknownLevelIsSilent) {
  if (in_child()) return child_body();
  TempDir dir;
  const std::string file = dir.file("tuned.log");
  ASSERT_EQ(run_child("1", "TUNED_LOG_LEVEL=loud TUNED_LOG_FILE=" + file), 0);
  ASSERT_TRUE(fs::exists(file + ".ran"));
  EXPECT_FALSE(fs::exists(file)) << slurp(file);
}

TEST(LogEnvironment, LevelAndFileFromEnvironment) {
  if (in_child()) return child_body();
  TempDir dir;
  const std::string file = dir.file("tuned.log");
  std::ofstream(file) << "earlier line\n";  // appended to, not replaced
  ASSERT_EQ(run_child("1", "TUNED_LOG_LEVEL=WaRn TUNED_LOG_FILE=" + file), 0);
  EXPECT_EQ(lines(slurp(file)),
            (std::vector<std::string>{"earlier line", "[tuned error] child error",
                                      "[tuned warn] child warn", "[tuned error] child once"}));
}

TEST(LogEnvironment, SetterOverridesEnvironment) {
  if (in_child()) return child_body();
  TempDir dir;
  const std::string file = dir.file("tuned.log");
  ASSERT_EQ(run_child("override", "TUNED_LOG_LEVEL=off TUNED_LOG_FILE=" + file), 0);
  EXPECT_EQ(lines(slurp(file)),
            (std::vector<std::string>{"[tuned error] child error", "[tuned warn] child warn",
                                      "[tuned info] child info", "[tuned error] child once"}));
}

// ----- in process ------------------------------------------------------------------------------

TEST_F(LogTest, LevelsFilter) {
  const std::string file = dir_.file("tuned.log");
  set_log_file(file);
  set_log_level(LogLevel::kOff);
  EXPECT_FALSE(log_enabled(LogLevel::kError));
  log_every_level("off");
  EXPECT_FALSE(fs::exists(file));

  set_log_level(LogLevel::kWarn);
  EXPECT_EQ(log_level(), LogLevel::kWarn);
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  EXPECT_TRUE(log_enabled(LogLevel::kWarn));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo));
  EXPECT_FALSE(log_enabled(LogLevel::kOff));  // kOff is not a level messages are written at
  log_every_level("warn");
  log(LogLevel::kOff, "never");

  set_log_level(LogLevel::kDebug);
  EXPECT_TRUE(log_enabled(LogLevel::kDebug));
  log_every_level("debug");
  EXPECT_EQ(lines(slurp(file)),
            (std::vector<std::string>{"[tuned error] warn error", "[tuned warn] warn warn",
                                      "[tuned error] debug error", "[tuned warn] debug warn",
                                      "[tuned info] debug info", "[tuned debug] debug debug"}));
}

TEST_F(LogTest, LogOnceWritesEachKeyOnce) {
  const std::string file = dir_.file("tuned.log");
  set_log_file(file);
  set_log_level(LogLevel::kWarn);
  log_once(LogLevel::kWarn, "log_test key a", "a first");
  log_once(LogLevel::kWarn, "log_test key a", "a again");
  log_once(LogLevel::kError, "log_test key a", "a at another level");
  log_once(LogLevel::kWarn, "log_test key b", "b first");
  // Not written because the level is off: the key is not used up.
  log_once(LogLevel::kInfo, "log_test key c", "c while info is off");
  set_log_level(LogLevel::kInfo);
  log_once(LogLevel::kInfo, "log_test key c", "c once info is on");
  log_once(LogLevel::kInfo, "log_test key c", "c again");
  EXPECT_EQ(lines(slurp(file)),
            (std::vector<std::string>{"[tuned warn] a first", "[tuned warn] b first",
                                      "[tuned info] c once info is on"}));
}

TEST_F(LogTest, FileDestinationAppendsOneLinePerMessage) {
  const std::string first = dir_.file("first.log");
  std::ofstream(first) << "kept\n";
  set_log_file(first);
  set_log_level(LogLevel::kInfo);
  log(LogLevel::kInfo, "two\nlines");
  log(LogLevel::kInfo, "trailing newline\n");
  set_log_file(dir_.file("second.log"));
  log(LogLevel::kWarn, "to the second file");
  EXPECT_EQ(lines(slurp(first)), (std::vector<std::string>{"kept", "[tuned info] two | lines",
                                                           "[tuned info] trailing newline"}));
  EXPECT_EQ(slurp(dir_.file("second.log")), "[tuned warn] to the second file\n");
  // Control characters (quoted from a database, say) are shown, not obeyed by the terminal.
  log(LogLevel::kWarn, "title \x1b]0;pwned\x07\tC1 \xc2\x9b\x7f, \xc2\xb5s kept");
  EXPECT_EQ(lines(slurp(dir_.file("second.log"))).back(),
            "[tuned warn] title \\x1b]0;pwned\\x07\\tC1 \\u009b\\x7f, \xc2\xb5s kept");

  // Empty: back to stderr.
  set_log_file("");
  ::testing::internal::CaptureStderr();
  log(LogLevel::kError, "on stderr");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[tuned error] on stderr\n");
  EXPECT_EQ(lines(slurp(first)).size(), 3u);

  // A file that cannot be opened: said once on stderr, and the messages go there instead.
  set_log_file(dir_.file("no/such/folder/tuned.log"));
  ::testing::internal::CaptureStderr();
  log(LogLevel::kError, "one");
  log(LogLevel::kError, "two");
  EXPECT_EQ(
      lines(::testing::internal::GetCapturedStderr()),
      (std::vector<std::string>{"[tuned error] cannot open log file '" +
                                    dir_.file("no/such/folder/tuned.log") + "'; logging to stderr",
                                "[tuned error] one", "[tuned error] two"}));
}

TEST_F(LogTest, ConcurrentMessagesStayWholeLines) {
  const std::string file = dir_.file("tuned.log");
  set_log_file(file);
  set_log_level(LogLevel::kInfo);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i) {
        log(LogLevel::kInfo, "thread " + std::to_string(t) + " message " + std::to_string(i) + " " +
                                 std::string(100, 'x'));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto written = lines(slurp(file));
  ASSERT_EQ(written.size(), static_cast<size_t>(kThreads * kPerThread));
  for (const auto& line : written) {
    ASSERT_EQ(line.rfind("[tuned info] thread ", 0), 0u) << line;
    ASSERT_EQ(line.substr(line.size() - 101), " " + std::string(100, 'x')) << line;
  }
}

}  // namespace
}  // namespace tuned
