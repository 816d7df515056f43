// autotune end to end with a small budget, then tuned_gemm in another process uses the tuned
// config from the database (exact key, and the nearest shape for an untuned one).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gpu_test_util.hpp"
#include "tuned/tuned.h"

namespace {

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
  rc = run_command("TUNED_DB=" + db + " " + tool_path("../examples/gemm_example") +
                       " 512 384 256 NT",
                   &out);
  std::printf("%s\n", out.c_str());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("exact: GEMV=0,BM="), std::string::npos) << out;
  std::remove(db.c_str());
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
