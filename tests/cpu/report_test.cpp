// The tuning report (tunedb report, autotune --report): what it gathers from a database (rates
// recomputed from each op's work, short configs, best-so-far curves, a run's scope, stale
// templates), that reading it changes no byte, that the database's text cannot become markup, and
// that 10^5 trials give a page in under 5 s and 5 MB.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cache/database.hpp"
#include "tests/common/temp_dir.hpp"
#include "tools/report/report_data.hpp"
#include "tools/report/report_html.hpp"

namespace tuned::report {
namespace {

namespace fs = std::filesystem;
using cache::BestRecord;
using cache::Database;
using cache::Disposition;
using cache::TrialRecord;
using tuned::testing::slurp;
using tuned::testing::TempDir;

const std::string kGpu = "GPU-11111111-2222-3333-4444-555555555555";

ProblemKey key(const std::string& op, const std::string& variant, std::vector<int64_t> shape) {
  ProblemKey k;
  k.device_uuid = kGpu;
  k.op = op;
  k.variant = variant;
  k.shape = std::move(shape);
  k.alignment = 4;
  return k;
}

TrialRecord trial(int64_t session, const ProblemKey& k, double ms,
                  Disposition d = Disposition::kOk) {
  TrialRecord t;
  t.session_id = session;
  t.key = k;
  t.config = "GEMV=0,BM=64,BN=64,MMA=0";
  t.kernel_name = "k";
  t.disposition = d;
  t.ms_median = d == Disposition::kOk ? ms : 0;
  t.ms_min = t.ms_median;
  t.runs = 5;
  return t;
}

BestRecord best(const ProblemKey& k, const std::string& config, double ms, double baseline_ms,
                int64_t session, const std::string& template_hash = "") {
  BestRecord b;
  b.key = k;
  b.config = config;
  b.kernel_name = "k";
  b.ms = ms;
  b.rate = 1;  // what a replayed row may hold: the report recomputes rates from the op's work
  b.rate_unit = "runs/s";
  b.baseline_ms = baseline_ms;
  b.session_id = session;
  b.template_hash = template_hash;
  return b;
}

const BestRow* find_row(const DeviceSection& section, const std::string& shape) {
  for (const auto& row : section.bests) {
    if (row.shape == shape) return &row;
  }
  return nullptr;
}

class ReportTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string path_ = dir_.file("tuned.db");
};

TEST_F(ReportTest, GathersRatesShortConfigsCurvesAndARunsScope) {
  int64_t first = 0, second = 0;
  const ProblemKey big = key("gemm", "NN", {4096, 4096, 4096});
  const ProblemKey small = key("gemm", "NN", {1024, 1024, 1024});
  const ProblemKey square = key("transpose", "T", {4096, 4096});
  {
    Database db(path_);
    db.upsert_device({kGpu, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000});
    first = db.begin_session({0, kGpu, "gemm", "anneal", 60, ""}).id;
    // Best so far: 2.0 at trial 1, a failure, 1.0 at trial 3, slower, 0.8 at trial 5.
    db.record_trials({trial(first, big, 2.0), trial(first, big, 0, Disposition::kCompileError),
                      trial(first, big, 1.0), trial(first, big, 1.2), trial(first, big, 0.8),
                      trial(first, small, 0.05)});
    ASSERT_TRUE(db.offer_best(best(big, "GEMV=0,BM=128,BN=128,MMA=4", 0.8, 1.6, first)));
    ASSERT_TRUE(db.offer_best(best(small, "GEMV=0,BM=64,BN=128,MMA=0", 0.05, 0.04, first, "old")));
    second = db.begin_session({0, kGpu, "transpose", "anneal", 10, ""}).id;
    db.record_trials({trial(second, square, 0.06), trial(second, square, 0.05)});
    ASSERT_TRUE(
        db.offer_best(best(square, "TILE=64,RPT=8,VEC=4,PAD=1,ORDER=0", 0.05, 0.048, second)));
  }
  const std::string before = slurp(path_);
  Report report;
  {
    Database db(path_, cache::Access::kRead);
    report = gather(db, Scope{});
  }
  EXPECT_EQ(slurp(path_), before) << "reading the database for a report changed it";

  ASSERT_EQ(report.devices.size(), 1u);
  const DeviceSection& section = report.devices[0];
  EXPECT_NEAR(section.ceilings.fp32_tflops, 66.9, 0.1);  // 132 SMs x 128 lanes x 2 x 1.98 GHz
  EXPECT_EQ(section.ceilings.bandwidth_gbps, 3350);
  EXPECT_EQ(report.trials, 8);
  EXPECT_EQ(section.ok_trials, 7);
  ASSERT_EQ(section.bests.size(), 3u);

  const BestRow* row = find_row(section, "4096x4096x4096");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->rate_unit, "TFLOP/s");
  EXPECT_NEAR(row->rate, 2.0 * 4096 * 4096 * 4096 / 0.8e9, 1e-6);  // from the work, not b.rate
  EXPECT_NEAR(row->baseline_rate, row->rate / 2, 1e-6);
  EXPECT_GT(row->bytes, 3.0 * 4 * 4096 * 4096 - 1);  // A, B and C at least once
  EXPECT_EQ(row->short_config, "BM=128,MMA=4");      // GEMV and BN are the same everywhere
  EXPECT_NE(row->family.find("wgmma"), std::string::npos) << row->family;
  EXPECT_TRUE(row->current_template);
  const BestRow* stale = find_row(section, "1024x1024x1024");
  ASSERT_NE(stale, nullptr);
  EXPECT_FALSE(stale->current_template);  // measured on another template: never served
  EXPECT_EQ(stale->short_config, "BM=64,MMA=0");
  const BestRow* moved = find_row(section, "4096x4096");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->rate_unit, "GB/s");
  EXPECT_NEAR(moved->rate, 8.0 * 4096 * 4096 / 0.05e6, 1e-6);

  const Curve* curve = nullptr;
  for (const auto& c : section.curves) {
    if (c.problem == "gemm NN 4096x4096x4096") curve = &c;
  }
  ASSERT_NE(curve, nullptr);
  EXPECT_EQ(curve->trials, 5);
  EXPECT_EQ(curve->final_ms, 0.8);
  const std::vector<std::pair<double, double>> steps = {{1, 2.0}, {3, 1.0}, {5, 0.8}, {5, 0.8}};
  EXPECT_EQ(curve->by_trial, steps);

  // A run's report: only the sessions after `first`, their trials and the bests they tuned.
  Database db(path_, cache::Access::kRead);
  Scope run;
  run.sessions_after = first;
  const Report scoped = gather(db, run);
  ASSERT_EQ(scoped.sessions.size(), 1u);
  EXPECT_EQ(scoped.sessions[0].session.id, second);
  EXPECT_EQ(scoped.trials, 2);
  ASSERT_EQ(scoped.devices.size(), 1u);
  ASSERT_EQ(scoped.devices[0].bests.size(), 1u);
  EXPECT_EQ(scoped.devices[0].bests[0].shape, "4096x4096");

  const std::string page = render_html(report, "report");
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("Roofline"), std::string::npos);
  EXPECT_NE(page.find("Tuning curves"), std::string::npos);
  EXPECT_NE(page.find("Which family wins where: gemm"), std::string::npos);
  EXPECT_NE(page.find("never served"), std::string::npos);
  for (const char* number : {">nan", "\"nan", "-nan", ">inf", "\"inf", ",nan", ",inf"}) {
    EXPECT_EQ(page.find(number), std::string::npos) << number;  // every figure finite
  }
}

// Names, configs and sources come from databases that travel between machines: on the page they
// are text, never markup or script.
TEST_F(ReportTest, TheDatabasesTextNeverBecomesMarkup) {
  const std::string evil = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
  {
    Database db(path_);
    db.upsert_device({kGpu, "NVIDIA H100 " + evil, 9, 0, 132, 85'520'809'984, 1'980'000});
    const int64_t s = db.begin_session({0, kGpu, "gemm", "anneal" + evil, 60, ""}).id;
    const ProblemKey k = key("gemm", "NN", {512, 512, 512});
    db.record_trials({trial(s, k, 0.1)});
    BestRecord b = best(k, "GEMV=0,BM=64,NOTE=" + evil, 0.1, 0.2, s);
    b.source = "host:/" + evil;
    ASSERT_TRUE(db.offer_best(b));
  }
  Database db(path_, cache::Access::kRead);
  const std::string page = render_html(gather(db, Scope{}), "report " + evil);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  // The page's own script is the only one.
  EXPECT_EQ(page.find("<script>"), page.rfind("<script>"));
}

// Issue 70's bound: a database of 10^5 trials (500 problems, 50 sessions) gives its page in
// under 5 s and at most 5 MB, through the tunedb program.
TEST_F(ReportTest, AHundredThousandTrialsGiveAPageInFiveSecondsAndFiveMegabytes) {
  {
    Database db(path_);
    db.upsert_device({kGpu, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000});
    for (int s = 0; s < 50; ++s) db.begin_session({0, kGpu, "gemm", "anneal", 60, ""});
    db.record_trials({trial(1, key("gemm", "NN", {64, 64, 64}), 1.0)});
    for (int p = 0; p < 500; ++p) {
      const ProblemKey k = key("gemm", "NN", {64 + 8 * p, 64 + 4 * (p % 37), 64 + p % 91});
      ASSERT_TRUE(db.offer_best(
          best(k, "GEMV=0,BM=" + std::to_string(16 << (p % 4)) + ",MMA=" + std::to_string(p % 5),
               0.5 + p % 7, 0.6 + p % 5, 1 + p % 50)));
    }
  }
  // 99,999 more trials, spread over the 500 problems and 50 sessions, one second apart.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(
                raw,
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 99999) "
                "INSERT INTO trials (session_id, device_uuid, op, variant, shape, d0, d1, d2, "
                "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
                "rate, rel_error, registers, spill_bytes, compile_ms, template_hash, rate_unit, "
                "created_at) "
                "SELECT 1 + i % 50, device_uuid, op, variant, "
                "(64 + 8 * (i % 500)) || 'x' || (64 + 4 * ((i % 500) % 37)) || 'x' || "
                "(64 + (i % 500) % 91), 64 + 8 * (i % 500), 64 + 4 * ((i % 500) % 37), "
                "64 + (i % 500) % 91, alignment, config, kernel_name, disposition, message, "
                "0.5 + (i * 7919 % 1000) / 100.0, ms_min, runs, rate, rel_error, registers, "
                "spill_bytes, compile_ms, template_hash, rate_unit, "
                "strftime('%Y-%m-%dT%H:%M:%SZ', 1765000000 + i, 'unixepoch') FROM trials, n",
                nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);

  const std::string tunedb =
      (fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / "tunedb").string();
  ASSERT_TRUE(fs::exists(tunedb)) << tunedb << " was not built";
  const std::string page = dir_.file("report.html");
  const auto start = std::chrono::steady_clock::now();
  const int rc = std::system(("'" + tunedb + "' --db '" + path_ + "' report --out '" + page +
                              "' >'" + dir_.file("out.txt") + "' 2>&1")
                                 .c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(rc, 0) << slurp(dir_.file("out.txt"));
  const double mb = static_cast<double>(fs::file_size(page)) / 1e6;
  std::printf("tunedb report of 100,000 trials: %.2f s, %.2f MB; it said: %s", seconds, mb,
              slurp(dir_.file("out.txt")).c_str());
  EXPECT_NE(slurp(dir_.file("out.txt")).find("500 bests, 100000 trials"), std::string::npos);
  EXPECT_LT(seconds, 5.0);
  EXPECT_LE(mb, 5.0);
}

// A page that cannot be written is a failure (exit 1) naming --out and the path, and leaves no
// partial file; options a report does not take are usage errors (exit 2).
TEST_F(ReportTest, AnUnwritablePageIsAFailureAndForeignOptionsAUsageError) {
  {
    Database db(path_);
    db.upsert_device({kGpu, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000});
  }
  const std::string tunedb =
      (fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / "tunedb").string();
  auto run = [&](const std::string& args) {
    const int status = std::system(
        ("'" + tunedb + "' --db '" + path_ + "' " + args + " >'" + dir_.file("out.txt") + "' 2>&1")
            .c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const std::string folder = dir_.file("missing");
  EXPECT_EQ(run("report --out '" + folder + "/page.html'"), 1);
  EXPECT_NE(slurp(dir_.file("out.txt"))
                .find("tunedb: report --out '" + folder + "/page.html': cannot write it"),
            std::string::npos)
      << slurp(dir_.file("out.txt"));
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_EQ(run("report --format csv"), 2) << slurp(dir_.file("out.txt"));
  EXPECT_EQ(run("report --out '" + dir_.file("page.html") + "'"), 0) << slurp(dir_.file("out.txt"));
  EXPECT_FALSE(fs::exists(dir_.file("page.html.partial")));
}

}  // namespace
}  // namespace tuned::report
