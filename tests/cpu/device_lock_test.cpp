// One tuner per GPU (tuner/device_lock.*): a second tuner of the same device waits, or refuses
// with --no-wait naming the holder; another device is free; a killed holder frees the GPU.
#include "tuner/device_lock.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tuned/error.hpp"

namespace tuned {
namespace {

class DeviceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuned_lock_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    setenv("TUNED_LOCK_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TUNED_LOCK_DIR");
    std::filesystem::remove_all(dir_);
  }
  // A child process that takes the lock of uuid, says so through a pipe, then holds it for
  // hold_ms (or until killed).
  pid_t holder(const std::string& uuid, int hold_ms) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    if (child == 0) {
      close(fds[0]);
      DeviceLock lock(uuid, /*wait=*/false);
      (void)write(fds[1], "x", 1);
      usleep(static_cast<useconds_t>(hold_ms) * 1000);
      _exit(0);
    }
    close(fds[1]);
    char c = 0;
    EXPECT_EQ(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return child;
  }
  std::filesystem::path dir_;
};

TEST_F(DeviceLockTest, SecondTunerWaitsOrRefusesNamingTheHolder) {
  const pid_t child = holder("GPU-1", 1500);
  try {
    DeviceLock refused("GPU-1", /*wait=*/false);
    ADD_FAILURE() << "a held GPU was locked twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_DEVICE_BUSY);
    const std::string message = e.what();
    EXPECT_NE(message.find("GPU GPU-1 is being tuned by process " + std::to_string(child)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(DeviceLock::path_for("GPU-1")), std::string::npos) << message;
  }
  { DeviceLock other("GPU-2", /*wait=*/false); }  // another GPU is free
  std::string said;
  const auto start = std::chrono::steady_clock::now();
  {
    DeviceLock waited("GPU-1", /*wait=*/true, [&](const std::string& m) { said = m; });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(s, 1.0);  // it waited for the holder to finish
  }
  EXPECT_NE(said.find("waiting for it to finish"), std::string::npos) << said;
  int status = 0;
  waitpid(child, &status, 0);
}

TEST_F(DeviceLockTest, AKilledHolderFreesTheGpu) {
  const pid_t child = holder("GPU-3", 60000);
  EXPECT_THROW(DeviceLock("GPU-3", false), Error);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const auto start = std::chrono::steady_clock::now();
  { DeviceLock after("GPU-3", /*wait=*/false); }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST_F(DeviceLockTest, UnusableLockFolderIsAClearError) {
  setenv("TUNED_LOCK_DIR", "/proc/no-such-folder", 1);
  try {
    DeviceLock lock("GPU-4", true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("TUNED_LOCK_DIR"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tuned
