// A cache can only help (issue 29), on the GPU: fresh processes with TUNED_DB naming a database in
// every state a user may leave one in (tests/common/cache_states.hpp) compute tuned_gemm,
// tuned_transpose and tuned_entropy right, each call within a second, leave the file as it was
// and log the state once; eight processes with first-use tuning start together on a database that
// does not exist yet and all compute right, leaving one intact database with one best per key.
// The parents re-run this binary as children (tests CacheStatesChild.*, skipped unless a parent
// started them).
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/cache_states.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tuned/tuned.h"

extern char** environ;

namespace tuned {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kChildEnv = "TUNED_CACHE_STATES_CHILD";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Starts this test binary on one child test with extra environment; returns its pid.
pid_t spawn_child(const std::string& test, const std::vector<std::string>& env,
                  const std::string& output) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  std::vector<std::string> args = {self, "--gtest_filter=" + test};
  std::vector<std::string> environment = env;
  environment.push_back(std::string(kChildEnv) + "=1");
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& mine : env) replaced |= mine.rfind(name + "=", 0) == 0;
    if (!replaced && name != "TUNED_TUNING") environment.push_back(entry);
  }
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, self, &actions, nullptr, argv.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Waits for a child at most `limit` seconds (then kills it); its exit code, or -1.
int wait_child(pid_t pid, double limit) {
  const auto start = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (seconds_since(start) > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(20000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

using testing::lines_naming;
using testing::slurp;

// ----- what a child computes -------------------------------------------------------------------

template <typename T>
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(T)),
              cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p); }
  T* p = nullptr;
};

// One call, timed to its completion; fails the test past a second.
template <typename Call>
void timed(const std::string& what, Call&& call) {
  const auto start = Clock::now();
  ASSERT_EQ(call(), TUNED_STATUS_SUCCESS) << what << ": " << tuned_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  EXPECT_LT(seconds_since(start), 1.0) << what;
}

void check_gemm(tuned_operation_t op_a, tuned_operation_t op_b, int m, int n, int k,
                std::mt19937& rng) {
  const std::string what = "gemm " + std::string(op_a ? "T" : "N") + (op_b ? "T" : "N") + " " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  const int lda = op_a ? k : m, ldb = op_b ? n : k;
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> a(static_cast<size_t>(lda) * (op_a ? m : k));
  std::vector<float> b(static_cast<size_t>(ldb) * (op_b ? k : n));
  for (auto& x : a) x = value(rng);
  for (auto& x : b) x = value(rng);
  DeviceBuffer<float> da(a.size()), db(b.size()), dc(static_cast<size_t>(m) * n);
  cudaMemcpy(da.p, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dc.p, 0xff, static_cast<size_t>(m) * n * sizeof(float));  // poisoned: NaN
  const float alpha = 1, beta = 0;
  timed(what, [&] {
    return tuned_gemm(op_a, op_b, m, n, k, &alpha, da.p, lda, db.p, ldb, &beta, dc.p, m, nullptr);
  });
  std::vector<float> c(static_cast<size_t>(m) * n);
  cudaMemcpy(c.data(), dc.p, c.size() * sizeof(float), cudaMemcpyDeviceToHost);
  double error = 0, norm = 0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double x =
            op_a ? a[i * static_cast<size_t>(lda) + p] : a[p * static_cast<size_t>(lda) + i];
        const double y =
            op_b ? b[p * static_cast<size_t>(ldb) + j] : b[j * static_cast<size_t>(ldb) + p];
        sum += x * y;
      }
      const double got = c[j * static_cast<size_t>(m) + i];
      if (!std::isfinite(got)) {
        ADD_FAILURE() << what << ": element " << i << "," << j << " not written";
        return;
      }
      error = std::max(error, std::fabs(got - sum));
      norm = std::max(norm, std::fabs(sum));
    }
  }
  EXPECT_LT(error, 1e-5 * std::max(norm, 1.0) * std::sqrt(static_cast<double>(k))) << what;
}

void check_transpose(int rows, int cols, std::mt19937& rng) {
  std::vector<float> a(static_cast<size_t>(rows) * cols);
  for (auto& x : a) x = static_cast<float>(rng() % 100000);
  DeviceBuffer<float> da(a.size()), db(a.size());
  cudaMemcpy(da.p, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(db.p, 0xff, a.size() * sizeof(float));
  timed("transpose", [&] { return tuned_transpose(rows, cols, da.p, rows, db.p, cols, nullptr); });
  std::vector<float> b(a.size());
  cudaMemcpy(b.data(), db.p, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      ASSERT_EQ(b[i * static_cast<size_t>(cols) + j], a[j * static_cast<size_t>(rows) + i]);
    }
  }
}

void check_entropy(int rows, int cols, int radius, int levels, std::mt19937& rng) {
  std::vector<float> in(static_cast<size_t>(rows) * cols);
  for (auto& x : in) x = static_cast<float>(rng() % levels);
  DeviceBuffer<float> din(in.size()), dout(in.size());
  cudaMemcpy(din.p, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dout.p, 0xff, in.size() * sizeof(float));
  timed("entropy", [&] {
    return tuned_entropy(rows, cols, radius, levels, din.p, rows, dout.p, rows, nullptr);
  });
  std::vector<float> out(in.size());
  cudaMemcpy(out.data(), dout.p, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  std::vector<int> count(levels);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) {
      std::fill(count.begin(), count.end(), 0);
      int total = 0;
      for (int y = std::max(0, j - radius); y <= std::min(cols - 1, j + radius); ++y) {
        for (int x = std::max(0, i - radius); x <= std::min(rows - 1, i + radius); ++x) {
          ++count[static_cast<int>(in[y * static_cast<size_t>(rows) + x])];
          ++total;
        }
      }
      double h = 0;
      for (int c : count) {
        if (c > 0) h -= c / static_cast<double>(total) * std::log(c / static_cast<double>(total));
      }
      ASSERT_NEAR(out[j * static_cast<size_t>(rows) + i], h, 1e-5) << i << "," << j;
    }
  }
}

TEST(CacheStatesChild, ComputesThreeOpsRight) {
  if (std::getenv(kChildEnv) == nullptr) GTEST_SKIP() << "runs as a child of CacheStatesGpu.*";
  TUNED_REQUIRE_GPU();
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the context, before any call is timed
  std::mt19937 rng(29);
  check_gemm(TUNED_OP_N, TUNED_OP_N, 127, 33, 1000, rng);
  check_gemm(TUNED_OP_T, TUNED_OP_N, 1000, 7, 127, rng);
  check_gemm(TUNED_OP_N, TUNED_OP_T, 1, 4097, 7, rng);
  check_transpose(1000, 127, rng);
  check_entropy(127, 1000, 3, 16, rng);
}

// First-use tuning on: each child computes the same shapes, in its own order.
TEST(CacheStatesChild, TunesFirstUseAndComputesRight) {
  if (std::getenv(kChildEnv) == nullptr) GTEST_SKIP() << "runs as a child of CacheStatesGpu.*";
  TUNED_REQUIRE_GPU();
  ASSERT_EQ(tuned_set_tuning(TUNED_TUNING_FIRST_USE), TUNED_STATUS_SUCCESS);
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  std::vector<std::vector<int>> shapes = {{0, 0, 1000, 127, 4097}, {1, 0, 127, 1000, 513},
                                          {0, 1, 777, 256, 300},   {1, 1, 300, 300, 300},
                                          {0, 0, 2048, 64, 1024},  {0, 1, 33, 2000, 1000}};
  std::shuffle(shapes.begin(), shapes.end(), rng);
  for (const auto& s : shapes) {
    check_gemm(static_cast<tuned_operation_t>(s[0]), static_cast<tuned_operation_t>(s[1]), s[2],
               s[3], s[4], rng);
  }
}

// ----- the parents ------------------------------------------------------------------------------

TEST(CacheStatesGpu, EveryStateComputesRightLeavesTheFileAndLogsOnce) {
  TUNED_REQUIRE_GPU();
  const std::string dir =
      (fs::temp_directory_path() / ("tuned_gpu_states_" + std::to_string(getpid()))).string();
  testing::CacheStates states(dir + "/states");
  for (const auto& state : states.states()) {
    SCOPED_TRACE(state.name);
    const std::string before = testing::CacheStates::fingerprint(state.path);
    const std::string log = dir + "/" + std::to_string(&state - states.states().data()) + ".log";
    const std::string output = log + ".out";
    const auto start = Clock::now();
    const pid_t child = spawn_child(
        "CacheStatesChild.ComputesThreeOpsRight",
        {"TUNED_DB=" + state.path, "TUNED_LOG_LEVEL=warn", "TUNED_LOG_FILE=" + log}, output);
    ASSERT_GT(child, 0);
    const int rc = wait_child(child, 120);
    EXPECT_EQ(rc, 0) << slurp(output);
    EXPECT_EQ(slurp(output).find("[  SKIPPED ]"), std::string::npos) << slurp(output);
    EXPECT_EQ(testing::CacheStates::fingerprint(state.path), before);
    const std::string text = slurp(log);
    EXPECT_EQ(lines_naming(text, state.path), 1) << text;
    std::printf("[ state    ] %-20s rc %d, %.2f s, log: %s", state.name.c_str(), rc,
                seconds_since(start), text.c_str());
  }
}

TEST(CacheStatesGpu, EightProcessesStartingTogetherOnANewDatabase) {
  TUNED_REQUIRE_GPU();
  const std::string dir =
      (fs::temp_directory_path() / ("tuned_gpu_together_" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/new/tuned.db";
  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    children.push_back(spawn_child("CacheStatesChild.TunesFirstUseAndComputesRight",
                                   {"TUNED_DB=" + path, "TUNED_TUNING=first-use"},
                                   dir + "/child" + std::to_string(p) + ".out"));
    ASSERT_GT(children.back(), 0);
  }
  for (size_t p = 0; p < children.size(); ++p) {
    const int rc = wait_child(children[p], 300);
    const std::string output = slurp(dir + "/child" + std::to_string(p) + ".out");
    EXPECT_EQ(rc, 0) << output;
    EXPECT_EQ(output.find("[  SKIPPED ]"), std::string::npos) << output;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto text = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string result;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return result;
  };
  EXPECT_EQ(text("PRAGMA integrity_check"), "ok");
  // One best per key (the table's key is unique), and every shape's first-use result is in.
  EXPECT_EQ(text("SELECT count(*) FROM best WHERE origin = 'first-use'"), "6");
  EXPECT_EQ(text("SELECT count(*) FROM (SELECT DISTINCT device_uuid, op, variant, shape, alignment "
                 "FROM best)"),
            text("SELECT count(*) FROM best"));
  std::printf("[ together ] 8 processes: bests %s, integrity %s\n",
              text("SELECT count(*) FROM best").c_str(), text("PRAGMA integrity_check").c_str());
  sqlite3_close(db);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuned
