// autotune end to end with a small budget, then tuned_gemm in another process uses the tuned
// config from the database (exact key, and the nearest shape for an untuned one).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "core/space.hpp"
#include "generator/device.hpp"
#include "gpu_test_util.hpp"
#include "templates/registry.hpp"
#include "tuned/tuned.h"

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using tuned::testing::run_command;
using tuned::testing::tool_path;

// autotune tunes one key into `db`, and tunedb reads what it wrote.
void autotune_into(const std::string& db) {
  std::string out;
  int rc = run_command(tool_path("autotune") +
                           " --device 0 --op gemm --shape 512x384x256 --layout NT --budget 20"
                           " --max-trials 40 --seed 5 --db " + db,
                       &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("512x384x256"), std::string::npos);
  EXPECT_NE(out.find("trials"), std::string::npos);  // progress was shown
  EXPECT_NE(out.find("BM="), std::string::npos);     // the table names the best config

  // tunedb reads what autotune wrote.
  rc = run_command(tool_path("tunedb") + " --db " + db + " best", &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("512x384x256"), std::string::npos) << out;
}

// Another process (this test binary re-run through a tiny mode) is simplest as the tool
// itself: the database's best for the exact key and the nearest shape for a new one.
void check_describe_uses(const std::string& db) {
  ASSERT_EQ(tuned_set_database(db.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  char text[512];
  float* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 4 << 20), cudaSuccess);
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_T, 512, 384, 256, d, 512, d, 384, d, 512, text,
                                sizeof(text)),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  EXPECT_EQ(std::string(text).rfind("exact: GEMV=0,BM=", 0), 0u) << text;
  // (The nearest shape is taken where its predicted transfer regret, which grows with the
  // distance, beats the model's pick: a shape one step of k away, where nothing else is closer.)
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_T, 512, 384, 255, d, 512, d, 384, d, 512, text,
                                sizeof(text)),
            TUNED_STATUS_SUCCESS);
  EXPECT_EQ(std::string(text).rfind("nearest 512x384x256: GEMV=0,BM=", 0), 0u) << text;
  // A layout this database has no entry for falls back to the shipped selection model (GPU
  // models the library ships one for) or the built-in default.
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_T, TUNED_OP_T, 512, 384, 256, d, 256, d, 384, d, 512, text,
                                sizeof(text)),
            TUNED_STATUS_SUCCESS);
  const std::string fallback = text;
  EXPECT_TRUE(fallback.rfind("model: GEMV=0,BM=", 0) == 0 ||
              fallback.rfind("default: GEMV=0,BM=", 0) == 0)
      << fallback;
  cudaFree(d);
}

// A separate process: the gemm_example program runs tuned_gemm against cuBLAS with this db.
// Its lookups (the exact key, whose cubin autotune stored, and an untuned shape served by a
// precompiled kernel) change no byte of the database.
void check_example_uses_without_writing(const std::string& db) {
  std::string out;
  const std::string before = file_bytes(db);
  int rc = run_command(
      "TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") + " 512 384 256 NT", &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("exact: GEMV=0,BM="), std::string::npos) << out;
  rc = run_command("TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") +
                       " 1000 999 998 NN",
                   &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(file_bytes(db), before);
}

// A zero-byte file and another application's SQLite file given as TUNED_DB: the cache can only
// help, so the call computes with the shipped choices, the log says why once, and the file
// stays as it was.
void check_unusable_files_stay_as_they_were(const std::string& db) {
  std::string out;
  const std::string empty = db + ".empty";
  std::ofstream(empty).close();
  int rc = run_command("TUNED_LOG_LEVEL=warn TUNED_DB=" + empty + " " +
                           tool_path("../examples/gemm_example") + " 64 64 64 NN",
                       &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("file is empty"), std::string::npos) << out;
  EXPECT_EQ(file_bytes(empty), "");
  std::remove(empty.c_str());
  const std::string foreign = db + ".foreign";
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine');", nullptr,
                 nullptr, nullptr);
    sqlite3_close(raw);
  }
  const std::string foreign_before = file_bytes(foreign);
  rc = run_command("TUNED_LOG_LEVEL=warn TUNED_DB=" + foreign + " " +
                       tool_path("../examples/gemm_example") + " 64 64 64 NN",
                   &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("not a tuned database"), std::string::npos) << out;
  EXPECT_EQ(file_bytes(foreign), foreign_before);
  std::remove(foreign.c_str());
}

// A user who cannot write the database (root drops to nobody; the folder and file are root's)
// still uses its tuned config, and the file stays as it was.
void check_read_only_use_as_nobody(const std::string& db) {
  if (geteuid() != 0) {
    std::printf("read-only use as another user not checked: not running as root\n");
    return;
  }
  std::string out;
  const std::string folder = db + ".ro";
  const std::string copy = folder + "/tuned.db";
  ASSERT_EQ(run_command("mkdir -p " + folder + " && cp " + db + " " + copy + " && chmod 755 " +
                            folder + " && chmod 644 " + copy,
                        &out),
            0)
      << out;
  const std::string copy_before = file_bytes(copy);
  const int rc =
      run_command("TUNED_DB=" + copy + " setpriv --reuid=65534 --regid=65534 --clear-groups " +
                      tool_path("../examples/gemm_example") + " 512 384 256 NT",
                  &out);
  if (out.find("setpriv") != std::string::npos) {  // no setpriv, or nobody cannot run it
    std::printf("read-only use as another user not checked: %s\n", out.c_str());
  } else {
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("exact: GEMV=0,BM="), std::string::npos) << out;
    EXPECT_EQ(file_bytes(copy), copy_before);
    std::printf("read-only database used by user nobody: exit %d, file unchanged: %s\n", rc,
                file_bytes(copy) == copy_before ? "yes" : "no");
  }
  run_command("rm -rf " + folder, &out);
}

TEST(AutotuneEndToEnd, TunesRecordsAndAnotherProcessUsesTheResult) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "autotune_e2e_" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
  ASSERT_NO_FATAL_FAILURE(autotune_into(db));
  ASSERT_NO_FATAL_FAILURE(check_describe_uses(db));
  ASSERT_NO_FATAL_FAILURE(check_example_uses_without_writing(db));
  ASSERT_NO_FATAL_FAILURE(check_unusable_files_stay_as_they_were(db));
  ASSERT_NO_FATAL_FAILURE(check_read_only_use_as_nobody(db));
  std::remove(db.c_str());
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Every trial in the database, read as another process would.
std::vector<tuned::cache::TrialRecord> stored_trials(const std::string& db) {
  tuned::cache::Database reader(db, tuned::cache::Access::kRead);
  return reader.trials({});
}

// 20 rounds of kill -9 at random moments (seeded; printed) of one and the same autotune command:
// every trial a round reported is in the database (0 lost), the best so far is there with a cubin
// another process loads and runs right, and each re-run resumes: across all rounds no config of
// the key is measured twice. Then Ctrl-C ends a run with the summary and exit 130.
TEST(AutotuneEndToEnd, KillRoundsLoseNothingAndReRunsMeasureNoConfigTwice) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "autotune_kill_" + std::to_string(getpid()) + ".db";
  const std::string log = db + ".log";
  std::remove(db.c_str());
  const std::string autotune = tool_path("autotune") +
                               " --device 0 --op gemm --shape 333x222x111 --layout NN --budget 60"
                               " --seed 1 --verbose --db " + db;
  const unsigned seed = 20261122;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(1.5, 6.0);
  std::printf("kill moments drawn with seed %u\n", seed);
  size_t recorded = 0;
  int resumed_rounds = 0;
  for (int round = 0; round < 20; ++round) {
    const double after_s = moment(rng);
    std::string out;
    char sleep[32];
    std::snprintf(sleep, sizeof sleep, "%.2f", after_s);
    run_command("(" + autotune + " >" + log + " 2>&1 & p=$!; sleep " + sleep +
                    "; kill -9 $p; wait $p)",
                &out);
    const std::string text = read_text(log);
    const int reported = count_of(text, "  trial ");  // printed after each trial is recorded
    resumed_rounds += text.find("resuming: ") != std::string::npos;
    std::vector<tuned::cache::TrialRecord> trials;
    if (std::ifstream(db).good()) trials = stored_trials(db);
    const int added = static_cast<int>(trials.size() - recorded);
    std::printf("round %2d: killed after %s s, %3d trials reported, %3d added to the database\n",
                round, sleep, reported, added);
    // Each trial is committed before it is printed; at most the one in hand is unprinted.
    EXPECT_GE(added, reported) << text;
    EXPECT_LE(added, reported + 1) << text;
    recorded = trials.size();
    // No config measured twice for the key on this template, whatever round measured it.
    std::map<std::string, int> times;
    for (const auto& t : trials) {
      EXPECT_FALSE(t.template_hash.empty()) << t.config;
      if (++times[t.config + " " + t.template_hash] == 2) {
        ADD_FAILURE() << "round " << round << ": " << t.config << " measured twice";
      }
    }
    bool any_ok = false;
    for (const auto& t : trials) any_ok |= t.disposition == tuned::cache::Disposition::kOk;
    if (!any_ok) continue;  // killed before the first candidate finished: no best yet
    std::string best;
    ASSERT_EQ(run_command(tool_path("tunedb") + " --db " + db + " best", &best), 0) << best;
    EXPECT_NE(best.find("333x222x111"), std::string::npos) << best;
    std::string run;
    EXPECT_EQ(run_command("TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") +
                              " 333 222 111 NN",
                          &run),
              0)
        << run;
    EXPECT_NE(run.find("exact: GEMV=0,BM="), std::string::npos) << run;
  }
  EXPECT_GE(resumed_rounds, 15);  // every round after the first trials resumes
  std::printf("20 rounds: %zu trials in the database, each config once\n", recorded);

  // Ctrl-C: the trial in hand ends, the summary prints, exit 130; and still no config twice.
  std::string out;
  const int rc = run_command("(" + autotune + " >" + log +
                                 " 2>&1 & p=$!; sleep 4; kill -INT $p; wait $p; echo exit=$?)",
                             &out);
  const std::string text = read_text(log);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("exit=130"), std::string::npos) << out << text;
  EXPECT_NE(text.find("interrupted: every trial"), std::string::npos) << text;
  EXPECT_NE(text.find("best config"), std::string::npos) << text;  // the summary table
  std::set<std::string> configs;
  for (const auto& t : stored_trials(db)) {
    EXPECT_TRUE(configs.insert(t.config).second) << t.config << " measured twice";
  }
  // --remeasure measures anew: a config the database holds is measured again.
  ASSERT_EQ(run_command(autotune + " --remeasure --max-trials 3", &out), 0) << out;
  EXPECT_GT(stored_trials(db).size(), configs.size() + 2) << out;
  std::remove(db.c_str());
  std::remove(log.c_str());
}

// Another process holds the database locked for 30 s (an exclusive lock: readers are blocked
// too): autotune and tunedb, started while it is held, wait and finish, and every trial autotune
// reported is in the database afterwards.
TEST(AutotuneEndToEnd, ALockHeldThirtySecondsIsWaitedFor) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "autotune_busy_" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
  const std::string tune = tool_path("autotune") +
                           " --device 0 --op gemm --shape 200x300x100 --budget 30 --max-trials 6"
                           " --verbose --db " + db;
  std::string out;
  ASSERT_EQ(run_command(tune + " --seed 1", &out), 0) << out;
  const size_t before = stored_trials(db).size();

  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // the child: takes the lock, holds it 30 s, writes nothing of ours
    sqlite3* raw = nullptr;
    if (sqlite3_open(db.c_str(), &raw) != SQLITE_OK) _exit(3);
    const int rc = sqlite3_exec(raw,
                                "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                                "SELECT count(*) FROM trials;",
                                nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) _exit(4);
    sleep(30);
    sqlite3_exec(raw, "COMMIT;", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
    _exit(0);
  }
  sleep(1);  // the lock is taken
  const auto started = std::chrono::steady_clock::now();
  const std::string both = "(" + tune + " --seed 2 > " + db + ".tune.log 2>&1 & t=$!; " +
                           tool_path("tunedb") + " --db " + db + " trials --format csv > " + db +
                           ".list.log 2>&1; echo tunedb_exit=$?; wait $t; echo autotune_exit=$?)";
  const int rc = run_command(both, &out);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int status = 0;
  waitpid(holder, &status, 0);
  const std::string tune_log = read_text(db + ".tune.log");
  const std::string list_log = read_text(db + ".list.log");
  std::printf("lock held 30 s: both finished after %.1f s\n%s\n", waited, out.c_str());
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "holder status " << status;
  EXPECT_GE(waited, 25.0);  // they did wait for the holder
  EXPECT_NE(out.find("tunedb_exit=0"), std::string::npos) << out << list_log;
  EXPECT_NE(out.find("autotune_exit=0"), std::string::npos) << out << tune_log;
  EXPECT_NE(list_log.find("200x300x100"), std::string::npos) << list_log;
  const int reported = count_of(tune_log, "  trial ");
  EXPECT_GT(reported, 0) << tune_log;
  EXPECT_EQ(stored_trials(db).size(), before + static_cast<size_t>(reported)) << tune_log;
  for (const char* suffix : {"", ".tune.log", ".list.log"}) std::remove((db + suffix).c_str());
}

// Seeded random [space] restrictions and shapes through autotune: each run either ends with a
// clear input error (exit 2, before the device) or runs (exit 0), never a signal; every trial
// recorded keeps to the run's restriction.
TEST(AutotuneEndToEnd, FuzzedSpacesRunOrFailCleanlyAndTrialsKeepToThem) {
  TUNED_REQUIRE_GPU();
  const unsigned seed = 8;
  std::mt19937 rng(seed);
  const std::map<std::string, std::vector<int>> values = {
      {"BM", {16, 32, 64, 128, 256, 0, 7}},  {"BN", {16, 32, 64, 128, 256, -16}},
      {"BK", {8, 16, 32, 0}},                {"WM", {8, 16, 32, 64, 0}},
      {"WN", {8, 16, 32, 64, 3}},            {"TM", {1, 2, 4, 8}},
      {"VEC", {1, 2, 4, 0}},                 {"PIPE", {0, 1, 2, 3, 4, 5}},
      {"SPLITK", {1, 2, 4, 8, 0}},           {"UNROLL", {1, 4, 8, 16, 0}},
      {"PAD", {0, 4, -4}},                   {"GEMV", {0, 32, 64}}};
  const std::vector<std::string> shapes = {"1x7x127", "127x127x127", "7x1000x33", "1000x1x64",
                                           "64x64x4097", "333x77x9"};
  int ran = 0, refused = 0;
  const std::string base = ::testing::TempDir() + "fuzz_" + std::to_string(getpid());
  for (int c = 0; c < 16; ++c) {
    std::map<std::string, std::vector<int>> space;
    const int params = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < params; ++i) {
      auto it = values.begin();
      std::advance(it, rng() % values.size());
      std::vector<int>& chosen = space[it->first];
      chosen.clear();
      for (int v : it->second) {
        if (rng() % 3 == 0) chosen.push_back(v);
      }
      if (chosen.empty()) chosen.push_back(it->second[rng() % it->second.size()]);
    }
    std::string toml = "[space]\n";
    for (const auto& [name, list] : space) {
      toml += name + " = [";
      for (size_t i = 0; i < list.size(); ++i) toml += (i ? ", " : "") + std::to_string(list[i]);
      toml += "]\n";
    }
    const std::string path = base + ".toml", db = base + "_" + std::to_string(c) + ".db";
    std::ofstream(path) << toml;
    const std::string shape = shapes[rng() % shapes.size()];
    std::string out;
    const int rc = run_command(tool_path("autotune") + " --config " + path + " --shape " + shape +
                                   " --strategy random --budget 6 --max-trials 3 --seed " +
                                   std::to_string(c + 1) + " --db " + db,
                               &out);
    SCOPED_TRACE("case " + std::to_string(c) + ", shape " + shape + ":\n" + toml + out);
    ASSERT_TRUE(rc == 0 || rc == 2) << "exit " << rc;  // -1: a signal
    if (rc == 2) {
      ++refused;
      EXPECT_FALSE(std::ifstream(db).good()) << "an input error wrote the database";
      continue;
    }
    ++ran;
    for (const auto& t : stored_trials(db)) {
      const tuned::Config config = tuned::read_config(t.config, tuned::config_params(t.key.op));
      for (const auto& [name, list] : space) {
        EXPECT_NE(std::find(list.begin(), list.end(), config.get(name)), list.end())
            << t.config << " breaks " << name;
      }
    }
    std::remove(db.c_str());
  }
  std::printf("fuzzed spaces (seed %u): %d ran, %d refused as input errors\n", seed, ran,
              refused);
  EXPECT_GT(ran, 0);
  EXPECT_GT(refused, 0);
  std::remove((base + ".toml").c_str());
}

// One tuner per GPU: while one autotune runs, a second with --no-wait exits 1 naming the holder;
// a second without it waits, says so, and finishes after the first.
TEST(AutotuneEndToEnd, SecondTunerOfTheGpuWaitsOrRefuses) {
  TUNED_REQUIRE_GPU();
  const std::string base = ::testing::TempDir() + "autotune_lock_" + std::to_string(getpid());
  const std::string tune = tool_path("autotune") +
                           " --device 0 --op gemm --shape 200x200x200 --layout NN --seed 3";
  std::string out;
  const int rc = run_command(
      "(" + tune + " --budget 6 --db " + base + "a.db >" + base + "a.log 2>&1 & p=$!; sleep 2; " +
          tune + " --budget 2 --no-wait --db " + base + "b.db; echo no_wait_exit=$?; " + tune +
          " --budget 2 --db " + base + "c.db; echo wait_exit=$?; wait $p; echo first_exit=$?)",
      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("is being tuned by process"), std::string::npos) << out;
  EXPECT_NE(out.find("no_wait_exit=1"), std::string::npos) << out;
  EXPECT_NE(out.find("waiting for it to finish"), std::string::npos) << out;
  EXPECT_NE(out.find("wait_exit=0"), std::string::npos) << out;
  EXPECT_NE(out.find("first_exit=0"), std::string::npos) << out;
  for (const char* s : {"a.db", "b.db", "c.db", "a.log"}) std::remove((base + s).c_str());
}

TEST(AutotuneEndToEnd, MalformedTomlAndUnwritableDatabaseAreErrors) {
  TUNED_REQUIRE_GPU();
  const std::string toml = ::testing::TempDir() + "bad_" + std::to_string(getpid()) + ".toml";
  std::ofstream(toml) << "shapes = [\"64x64x64\"\nbudget = 3\n";
  std::string out;
  int rc = run_command(tool_path("autotune") + " --config " + toml, &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("line"), std::string::npos) << out;
  rc = run_command(tool_path("autotune") +
                       " --shape 64x64x64 --budget 3 --db /proc/no-such-dir/tuned.db",
                   &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("/proc/no-such-dir/tuned.db"), std::string::npos) << out;
  std::remove(toml.c_str());
}

// autotune --device 0,1 shares four shapes out over two GPUs (one tuner each, each holding its
// GPU's lock) into one database: every shape once in the table and the JSON, with its GPU; both
// GPUs used; each shape's best row and trials under the uuid of the GPU that tuned it; both
// devices listed. Nothing lost.
TEST(AutotuneEndToEnd, TwoGpusShareTheShapesOutIntoOneDatabaseLosingNoRow) {
  TUNED_REQUIRE_GPU();
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "GPU test skipped: needs 2 GPUs, " << devices << " visible";
  const std::string base = ::testing::TempDir() + "autotune_2gpu_" + std::to_string(getpid());
  const std::string db = base + ".db", json = base + ".json";
  std::remove(db.c_str());
  const std::vector<std::string> shapes = {"256x256x256", "384x256x128", "512x512x512",
                                           "640x384x256"};
  std::string list;
  for (const auto& shape : shapes) list += (list.empty() ? "" : ",") + shape;
  std::string out;
  const int rc =
      run_command(tool_path("autotune") + " --device 0,1 --op gemm --layout NN --shape " + list +
                      " --budget 24 --max-trials 12 --seed 3 --db " + db + " --json " + json,
                  &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("on 2 GPU(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("[GPU 0 "), std::string::npos) << out;  // progress names the GPU
  EXPECT_NE(out.find("[GPU 1 "), std::string::npos) << out;
  const std::string table = read_text(json);
  EXPECT_GE(count_of(table, "\"gpu\": 0"), 1) << table;
  EXPECT_GE(count_of(table, "\"gpu\": 1"), 1) << table;
  EXPECT_EQ(count_of(table, "\"gpu\": "), 4) << table;
  for (const auto& shape : shapes) {
    EXPECT_EQ(count_of(table, "\"" + shape + "\""), 1) << shape << " in " << table;
    EXPECT_EQ(count_of(out, "\n" + shape + " "), 1) << shape << " in the table: " << out;
  }

  const std::set<std::string> uuids = {tuned::query_device(0).uuid, tuned::query_device(1).uuid};
  tuned::cache::Database reader(db, tuned::cache::Access::kRead);
  std::set<std::string> listed;
  for (const auto& d : reader.devices()) listed.insert(d.uuid);
  for (const auto& uuid : uuids) EXPECT_EQ(listed.count(uuid), 1u) << uuid;
  const auto bests = reader.bests({});
  ASSERT_EQ(bests.size(), shapes.size());
  const auto trials = reader.trials({});
  std::set<std::string> tuned_on, best_shapes;
  for (const auto& best : bests) {
    SCOPED_TRACE(best.key.shape_string());
    EXPECT_EQ(uuids.count(best.key.device_uuid), 1u) << best.key.device_uuid;
    tuned_on.insert(best.key.device_uuid);
    best_shapes.insert(best.key.shape_string());
    int of_key = 0, ok = 0;
    for (const auto& t : trials) {
      if (t.key.device_uuid == best.key.device_uuid && t.key.shape == best.key.shape &&
          t.key.variant == best.key.variant) {
        ++of_key;
        ok += t.disposition == tuned::cache::Disposition::kOk;
      }
    }
    EXPECT_GT(of_key, 0);
    EXPECT_GT(ok, 0);
  }
  EXPECT_EQ(tuned_on, uuids);  // both GPUs tuned
  EXPECT_EQ(best_shapes, std::set<std::string>(shapes.begin(), shapes.end()));
  EXPECT_EQ(reader.sessions({}).size(), shapes.size());
  for (const std::string& path : {db, json}) std::remove(path.c_str());
}

}  // namespace
