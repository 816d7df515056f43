// autotune end to end with a small budget, then tuned_gemm in another process uses the tuned
// config from the database (exact key, and the nearest shape for an untuned one).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "gpu_test_util.hpp"
#include "tuned/tuned.h"

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using tuned::testing::run_command;
using tuned::testing::tool_path;

TEST(AutotuneEndToEnd, TunesRecordsAndAnotherProcessUsesTheResult) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "autotune_e2e_" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
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

  // Another process (this test binary re-run through a tiny mode) is simplest as the tool
  // itself: the database's best for the exact key and the nearest shape for a new one.
  ASSERT_EQ(tuned_set_database(db.c_str()), TUNED_STATUS_SUCCESS) << tuned_last_error();
  char text[512];
  float* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 4 << 20), cudaSuccess);
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_T, 512, 384, 256, d, 512, d, 384, d, 512, text,
                                sizeof(text)),
            TUNED_STATUS_SUCCESS)
      << tuned_last_error();
  EXPECT_EQ(std::string(text).rfind("exact: GEMV=0,BM=", 0), 0u) << text;
  ASSERT_EQ(tuned_gemm_describe(TUNED_OP_N, TUNED_OP_T, 500, 400, 250, d, 500, d, 400, d, 500, text,
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

  // A separate process: the gemm_example program runs tuned_gemm against cuBLAS with this db.
  // Its lookups (the exact key, whose cubin autotune stored, and an untuned shape served by a
  // precompiled kernel) change no byte of the database.
  const std::string before = file_bytes(db);
  rc = run_command("TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") +
                       " 512 384 256 NT",
                   &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("exact: GEMV=0,BM="), std::string::npos) << out;
  rc = run_command("TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") +
                       " 1000 999 998 NN",
                   &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(file_bytes(db), before);
  // A zero-byte file and another application's SQLite file given as TUNED_DB: the call fails
  // naming the file, which stays as it was.
  const std::string empty = db + ".empty";
  std::ofstream(empty).close();
  rc = run_command("TUNED_DB=" + empty + " " + tool_path("../examples/gemm_example") +
                       " 64 64 64 NN",
                   &out);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("file is empty"), std::string::npos) << out;
  EXPECT_EQ(file_bytes(empty), "");
  std::remove(empty.c_str());
  std::remove(db.c_str());
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// kill -9 at moments of an autotune run: every trial it reported is in the database, the best so
// far is there with a cubin another process loads and runs correctly; Ctrl-C ends the run with
// the summary and exit 130.
TEST(AutotuneEndToEnd, KillKeepsEveryTrialAndTheBestSoFar) {
  TUNED_REQUIRE_GPU();
  const std::string db = ::testing::TempDir() + "autotune_kill_" + std::to_string(getpid()) + ".db";
  const std::string log = db + ".log";
  std::remove(db.c_str());
  const std::string autotune = tool_path("autotune") +
                               " --device 0 --op gemm --shape 333x222x111 --layout NN --budget 60"
                               " --verbose --db " + db;
  int recorded = 0;
  for (int round = 0; round < 4; ++round) {
    const double after_s = 3.0 + 1.5 * round;
    std::string out;
    run_command("(" + autotune + " --seed " + std::to_string(round + 1) + " >" + log +
                    " 2>&1 & p=$!; sleep " + std::to_string(after_s) + "; kill -9 $p; wait $p)",
                &out);
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int reported = count_of(text, "  trial ");  // printed after each trial is recorded
    std::string trials;
    ASSERT_EQ(run_command(tool_path("tunedb") + " --db " + db + " trials --format csv", &trials), 0)
        << trials;
    const int now = count_of(trials, "\n") - 1;  // CSV lines less the header
    std::printf("round %d: killed after %.1f s, %d trials reported, %d in the database\n", round,
                after_s, reported, now - recorded);
    EXPECT_GT(reported, 0) << text;
    EXPECT_GE(now - recorded, reported) << text;
    recorded = now;
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
  std::string out;
  const int rc = run_command("(" + autotune + " --seed 9 >" + log +
                                 " 2>&1 & p=$!; sleep 4; kill -INT $p; wait $p; echo exit=$?)",
                             &out);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("exit=130"), std::string::npos) << out << text;
  EXPECT_NE(text.find("interrupted: every trial"), std::string::npos) << text;
  EXPECT_NE(text.find("best config"), std::string::npos) << text;  // the summary table
  std::remove(db.c_str());
  std::remove(log.c_str());
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

}  // namespace
