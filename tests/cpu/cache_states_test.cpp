// A cache can only help (issue 29), without a GPU: the runtime's choices with the user database in
// every state a user may leave it in (tests/common/cache_states.hpp), its memo's bound, and
// processes creating one database together.
#include "tests/common/cache_states.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "api/runtime.hpp"
#include "cache/database.hpp"
#include "core/log.hpp"
#include "templates/entropy/entropy_descriptor.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/transpose/transpose_descriptor.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

namespace fs = std::filesystem;

DeviceInfo reference_h100() {
  DeviceInfo device = reference_device(90);
  device.name = "NVIDIA H100 80GB HBM3";
  return device;
}

std::string folder(const std::string& name) {
  return (fs::temp_directory_path() / ("tuned_states_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

using testing::lines_naming;
using testing::slurp;

// Each state: set_database accepts it (a warning where it cannot be used), the three ops' choices
// come at once from the shipped data or the model, the file is unchanged and nothing appears
// beside it, and the log names the state once.
TEST(CacheStates, NoStateFailsAChoiceOrChangesAByte) {
  const std::string dir = folder("choices");
  testing::CacheStates states(dir);
  const DeviceInfo device = reference_h100();
  const std::string log_path = dir + ".log";
  std::remove(log_path.c_str());
  set_log_file(log_path);
  set_log_level(LogLevel::kWarn);
  for (const auto& state : states.states()) {
    SCOPED_TRACE(state.name);
    const std::string before = testing::CacheStates::fingerprint(state.path);
    const auto started = std::chrono::steady_clock::now();
    Runtime runtime(device);
    const std::string warning = runtime.set_database(state.path);
    const bool readable =
        state.name == "schema 1" || state.name == "newer schema" || state.name == "locked";
    EXPECT_EQ(warning.empty(), readable) << warning;
    std::vector<std::string> choices;
    for (int round = 0; round < 2; ++round) {  // the second round meets the memo
      choices.push_back(runtime.describe(
          find_op("gemm"), gemm_op::problem_id(gemm_op::packed_problem("NT", 1000, 127, 4097))));
      choices.push_back(
          runtime.describe(find_op("transpose"),
                           transpose_op::problem_id(transpose_op::packed_problem(1000, 4097))));
      choices.push_back(runtime.describe(
          find_op("entropy"), entropy_op::problem_id(entropy_op::packed_problem(1000, 127, 3, 16),
                                                     entropy_op::Input::kF32)));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_LT(seconds, 1.0);
    for (const auto& choice : choices) {
      EXPECT_TRUE(choice.rfind("shipped", 0) == 0 || choice.rfind("model", 0) == 0 ||
                  choice.rfind("default", 0) == 0)
          << choice;
    }
    EXPECT_EQ(testing::CacheStates::fingerprint(state.path), before);
  }
  set_log_level(LogLevel::kOff);
  set_log_file("");
  const std::string log = slurp(log_path);
  for (const auto& state : states.states()) {
    EXPECT_EQ(lines_naming(log, state.path), 1) << state.name << "\n" << log;
  }
  std::remove(log_path.c_str());
}

// A database of schema 1 (written before issue 7) is read as it is: its rows answer lookups.
TEST(CacheStates, OlderSchemasAreReadAsTheyAre) {
  const std::string dir = folder("older");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/v1.db";
  testing::run_sql(path, std::string(testing::kSchemaVersion1) + testing::kVersion1Best);
  const std::string before = testing::CacheStates::fingerprint(path);
  {
    cache::Database db(path, cache::Access::kRead);
    EXPECT_EQ(db.file_version(), 1);
    cache::ProblemKey key{"GPU-old", "gemm", "NN", {1024, 1024, 1024}, 4};
    auto best = db.find_best(key);
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->config, "BM=64");
    EXPECT_EQ(best->origin, cache::BestOrigin::kAutotune);
    EXPECT_EQ(db.bests({}).size(), 1u);
    EXPECT_FALSE(db.find_cubin({"h", "o", "sm_90", "v"}).has_value());
  }
  // The library's writer does not migrate it behind the user's back; an explicit writer does.
  try {
    cache::Database db(path, cache::OpenOptions{cache::Access::kWrite, false});
    ADD_FAILURE() << "a writer that may not upgrade opened schema 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("upgrade"), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::CacheStates::fingerprint(path), before);
  {
    cache::Database db(path);
    EXPECT_EQ(db.file_version(), 1);
  }
  EXPECT_EQ(cache::Database(path, cache::Access::kRead).file_version(),
            cache::Database::schema_version());
  fs::remove_all(dir);
}

// The memo holds at most 2 x kMemoCapacity choices, however many distinct problems come; the
// host memory a new problem costs stays flat.
TEST(CacheStates, TheMemoIsBounded) {
  Runtime runtime(reference_h100());
  runtime.set_database(folder("memo") + "/missing/never.db");
  const OpRegistration& gemm = find_op("gemm");
  std::mt19937 rng(7);
  const size_t problems = 5 * Runtime::kMemoCapacity;
  for (size_t i = 0; i < problems; ++i) {
    ProblemId id = gemm_op::problem_id(gemm_op::packed_problem(
        "NN", 1 + static_cast<int>(rng() % 4000), 1 + static_cast<int>(rng() % 4000),
        1 + static_cast<int>(rng() % 4000)));
    runtime.describe(gemm, id);
    ASSERT_LE(runtime.memo_entries(), 2 * Runtime::kMemoCapacity);
  }
  EXPECT_GE(runtime.memo_entries(), Runtime::kMemoCapacity);
  // A problem in use stays: found again after many others came.
  const ProblemId kept = gemm_op::problem_id(gemm_op::packed_problem("TN", 77, 88, 99));
  const std::string first = runtime.describe(gemm, kept);
  for (size_t i = 0; i < 3 * Runtime::kMemoCapacity; ++i) {
    runtime.describe(
        gemm, gemm_op::problem_id(gemm_op::packed_problem("NT", 5000 + static_cast<int>(i), 9, 9)));
    if (i % 1000 == 0) runtime.describe(gemm, kept);
  }
  EXPECT_EQ(runtime.describe(gemm, kept), first);
}

// Eight processes create one database at the same moment, each recording its own bests while the
// others read: every open succeeds, the file passes SQLite's integrity check, every record is in.
TEST(CacheStates, ProcessesCreatingOneDatabaseTogetherAllSucceed) {
  const std::string dir = folder("together");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/new/tuned.db";  // neither folder nor file exists yet
  constexpr int kProcesses = 8, kBests = 20;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) _exit(9);  // released together when the pipe closes
      try {
        for (int i = 0; i < kBests; ++i) {
          if (i % 2 == 0) {
            cache::Database reader(path, cache::Access::kRead);  // may find no file yet
            reader.bests({});
          }
        }
      } catch (const Error& e) {
        if (std::string(e.what()).find("no such file") == std::string::npos) {
          std::fprintf(stderr, "reader %d: %s\n", p, e.what());
          _exit(2);
        }
      }
      try {
        cache::Database db(path, cache::OpenOptions{cache::Access::kWrite, false,
                                                    std::chrono::milliseconds(5000)});
        for (int i = 0; i < kBests; ++i) {
          cache::BestRecord best;
          best.key = {"GPU-" + std::to_string(p), "gemm", "NN", {64 + i, 64, 64}, 4};
          best.config = "BM=64";
          best.origin = cache::BestOrigin::kFirstUse;
          best.ms = 1.0 + i;
          if (!db.offer_best(best)) _exit(3);
          cache::Database reader(path, cache::Access::kRead);
          if (!reader.find_best(best.key)) _exit(4);
        }
      } catch (const Error& e) {
        std::fprintf(stderr, "writer %d: %s\n", p, e.what());
        _exit(5);
      }
      _exit(0);
    }
    children.push_back(child);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  cache::Database db(path, cache::Access::kRead);
  EXPECT_EQ(db.bests({}).size(), static_cast<size_t>(kProcesses * kBests));
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "ok");
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  // No temporary file of the creation is left beside it.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir + "/new")) {
    entries += entry.path().filename().string().find(".new-") != std::string::npos;
  }
  EXPECT_EQ(entries, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuned
