// What tunedb writes when the database is not ours to trust (issue 29): text holding terminal
// escape codes, tabs, line breaks and bytes that are not UTF-8 is escaped in tables, CSV, JSON and
// the shipped TSV, one row per line; and listings of a million trials stay small.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/database.hpp"
#include "cache/records.hpp"
#include "cache/shipped_defaults.hpp"
#include "tests/common/peak_memory.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

namespace fs = std::filesystem;

using tuned::testing::TempDir;

using tuned::testing::slurp;

std::vector<std::string> split(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t end; (end = text.find(separator, start)) != std::string::npos;) {
    parts.push_back(text.substr(start, end - start));
    start = end + separator.size();
  }
  parts.push_back(text.substr(start));
  return parts;
}

// The first byte of text a terminal or a table reader would act on, described, or "": a C0
// control not in `allowed`, DEL, a C1 control (U+0080..U+009F), a bidirectional override or
// isolate, a line or paragraph separator, or a byte that is not part of valid UTF-8. Written
// apart from core/text.cpp, so that it checks that code rather than repeats it.
std::string raw_control(const std::string& text, const std::string& allowed) {
  auto at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = at(i);
    const std::string where =
        " at byte " + std::to_string(i) + ": ..." + text.substr(i >= 20 ? i - 20 : 0, 40) + "...";
    if ((c < 0x20 && allowed.find(static_cast<char>(c)) == std::string::npos) || c == 0x7f) {
      return "control byte " + std::to_string(c) + where;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t length = c >= 0xc2 && c <= 0xdf   ? 2
                          : c >= 0xe0 && c <= 0xef ? 3
                          : c >= 0xf0 && c <= 0xf4 ? 4
                                                   : 0;
    if (length == 0 || i + length > text.size()) return "byte not UTF-8" + where;
    uint32_t code_point = c & (0x7f >> length);
    for (size_t k = 1; k < length; ++k) {
      if ((at(i + k) & 0xc0) != 0x80) return "byte not UTF-8" + where;
      code_point = (code_point << 6) | (at(i + k) & 0x3f);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < smallest[length] || (code_point >= 0xd800 && code_point <= 0xdfff) ||
        code_point > 0x10ffff) {
      return "byte not UTF-8" + where;
    }
    if (code_point <= 0x9f || (code_point >= 0x202a && code_point <= 0x202e) ||
        (code_point >= 0x2066 && code_point <= 0x2069) || code_point == 0x2028 ||
        code_point == 0x2029) {
      char name[16];
      std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(code_point));
      return std::string("control character ") + name + where;
    }
    i += length;
  }
  return "";
}

// RFC 4180 records: fields separated by commas, records by CRLF, quoted fields may hold either.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      record.push_back(std::move(field));
      field.clear();
      records.push_back(std::move(record));
      record.clear();
      ++i;
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quoted field";
  EXPECT_TRUE(field.empty() && record.empty()) << "text after the last CRLF";
  return records;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Text a database copied from elsewhere may hold: a title change (OSC 0), a screen clear (CSI 2J),
// C1 CSI, a right-to-left override, bytes that are not UTF-8, and printable UTF-8 that stays.
const std::string kTitle = "\x1b]0;pwned\x07";
const std::string kClear = "\x1b[2J";
const std::string kNotUtf8 = "\xff\xfe";
const std::string kC1 = "\xc2\x9b";
const std::string kOverride = "\xe2\x80\xae";
const std::string kMicro = "\xc2\xb5s";  // "µs", printable: kept

const char* kClean = "GPU-11111111-2222-3333-4444-555555555555";
const std::string kEvil = "GPU-evil" + kTitle;

ProblemKey key(const std::string& device, std::vector<int64_t> shape,
               const std::string& layout = "NN", const std::string& op = "gemm") {
  ProblemKey k;
  k.device_uuid = device;
  k.op = op;
  k.variant = layout;
  k.shape = std::move(shape);
  k.alignment = 4;
  return k;
}

BestRecord best(const ProblemKey& k, const std::string& config) {
  BestRecord b;
  b.key = k;
  b.config = config;
  b.kernel_name = "gemm_" + kClear;
  b.ms = 0.5;
  b.rate = 10;
  b.baseline_ms = 0.6;
  return b;
}

TrialRecord trial(int64_t session, const ProblemKey& k, Disposition disposition) {
  TrialRecord t;
  t.session_id = session;
  t.key = k;
  t.config = "BM=64";
  t.kernel_name = "gemm_bm64";
  t.disposition = disposition;
  t.ms_median = 1.25;
  t.ms_min = 1.125;
  t.runs = 7;
  t.rate = 12.5;
  t.registers = 96;
  t.compile_ms = 21.5;
  t.template_hash = "hash" + kTitle;
  return t;
}

class TunedbOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tunedb_ = (fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / "tunedb").string();
    ASSERT_TRUE(fs::exists(tunedb_)) << tunedb_ << " was not built";
    db_path_ = dir_.file("tuned.db");
  }

  struct Result {
    int exit_code = -1;
    std::string out;
    std::string err;
  };

  Result run(const std::string& args) {
    const std::string out = dir_.file("stdout.txt"), err = dir_.file("stderr.txt");
    const std::string command =
        "'" + tunedb_ + "' --db '" + db_path_ + "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(command.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  TempDir dir_;
  std::string tunedb_;
  std::string db_path_;
};

// Every text column of every table holds something hostile; each output must hold none of it raw,
// keep one row per line (a forged row or column would add lines or fields) and list every row.
class HostileDatabaseTest : public TunedbOutputTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(TunedbOutputTest::SetUp());
    ASSERT_NO_FATAL_FAILURE(fill_hostile_database());
  }

  void fill_hostile_database() {
    Database db(db_path_);
    DeviceRecord clean{kClean, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000};
    DeviceRecord evil = clean;
    evil.uuid = kEvil;
    evil.name =
        kClear + "NVIDIA\tH100\nGPU-forged  forged row" + kNotUtf8 + kC1 + kOverride + " " + kMicro;
    db.upsert_device(clean);
    db.upsert_device(evil);
    const int64_t s1 = db.begin_session({0, kClean, "gemm", "guided" + kTitle, 30, ""}).id;
    const int64_t s2 = db.begin_session({0, kEvil, "gemm" + kClear, "random\r\nforged", 10, ""}).id;
    TrialRecord ok = trial(s1, key(kClean, {64, 64, 64}), Disposition::kOk);
    ok.config = "BM=64\t1\tgemm\tNN\n1\tgemm\tNN";
    TrialRecord failed = trial(s1, key(kClean, {64, 64, 64}), Disposition::kCompileError);
    failed.message = kTitle + "error\r" + kClear + kNotUtf8 + kC1 + "\nsecond line";
    failed.kernel_name = "k" + kClear;
    TrialRecord third = trial(s1, key(kClean, {128, 128, 128}), Disposition::kOk);
    third.message = kOverride + "evil" + kMicro;
    TrialRecord other =
        trial(s2, key(kEvil, {64, 64, 64}, "N\x1bN", "gemm" + kClear), Disposition::kTimeout);
    db.record_trials({ok, failed, third, other});
    ASSERT_TRUE(db.offer_best(best(key(kClean, {64, 64, 64}), "BM=128,BN=128")));
    ASSERT_TRUE(db.offer_best(best(key(kClean, {128, 128, 128}),
                                   "BM=64\nNVIDIA H100 80GB HBM3\t90\tgemm\tNN\t1x1x1\t4\tBM=1\t"
                                   "0.001\t0.002")));
    ASSERT_TRUE(db.offer_best(best(key(kEvil, {64, 64, 64}), "BM=32")));
    ASSERT_TRUE(db.offer_best(best(key(kClean, {256, 256, 256}), "BM=16)tuned_tsv\";int x;")));
    ASSERT_TRUE(db.offer_best(best(key(kClean, {512, 512, 512}), "BM=8,note=" + kMicro)));
  }

  // The rows fill_hostile_database writes, per table.
  static constexpr size_t kDevices = 2, kSessions = 2, kTrials = 4, kBests = 5;
  static std::vector<std::pair<std::string, size_t>> rows_per_table() {
    return {{"devices", kDevices}, {"sessions", kSessions}, {"trials", kTrials}, {"best", kBests}};
  }
};

// Aligned tables: a header, a rule, then one line per row.
TEST_F(HostileDatabaseTest, TablesEscapeTextAndKeepOneRowPerLine) {
  for (const auto& [command, rows] : rows_per_table()) {
    SCOPED_TRACE(command);
    Result r = run(command);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_control(r.out, "\n"), "") << r.out;
    EXPECT_EQ(raw_control(r.err, "\n"), "") << r.err;
    EXPECT_EQ(split(r.out, "\n").size(), 2 + rows + 1) << r.out;  // + the empty after the last
    EXPECT_FALSE(contains(r.out, "(no ")) << r.out;
    if (command == "devices") {
      const std::string name =
          "\\x1b[2JNVIDIA\\tH100\\nGPU-forged  forged row\\xff\\xfe\\u009b\\u202e " + kMicro;
      EXPECT_TRUE(contains(r.out, name)) << r.out;
      EXPECT_TRUE(contains(r.out, "GPU-evil\\x1b]0;pwned\\x07")) << r.out;
    }
    if (command == "trials") {
      EXPECT_TRUE(contains(r.out, "BM=64\\t1\\tgemm\\tNN\\n1\\tgemm\\tNN")) << r.out;
      // The message's first line only, escaped.
      EXPECT_TRUE(contains(r.out, "\\x1b]0;pwned\\x07error\\r\\x1b[2J\\xff\\xfe\\u009b")) << r.out;
      EXPECT_FALSE(contains(r.out, "second line")) << r.out;
      EXPECT_TRUE(contains(r.out, "N\\x1bN")) << r.out;
    }
    if (command == "sessions") {
      EXPECT_TRUE(contains(r.out, "random\\r\\nforged")) << r.out;
      EXPECT_TRUE(contains(r.out, "guided\\x1b]0;pwned\\x07")) << r.out;
    }
  }
}

// CSV: CRLF after each record and nowhere else; every record has the header's field count.
TEST_F(HostileDatabaseTest, CsvExportsEscapeTextAndEndEachRecordWithCrlf) {
  for (const auto& [table, rows] : rows_per_table()) {
    SCOPED_TRACE("csv " + table);
    Result r = run("export --format csv --table " + table);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_control(r.out, "\r\n"), "") << r.out;
    EXPECT_EQ(split(r.out, "\r\n").size(), 1 + rows + 1) << r.out;
    EXPECT_EQ(split(r.out, "\n").size(), 1 + rows + 1) << r.out;  // no bare line feed
    const auto records = parse_csv(r.out);
    ASSERT_EQ(records.size(), 1 + rows) << r.out;
    for (const auto& record : records) EXPECT_EQ(record.size(), records[0].size()) << r.out;
    if (table == "trials") {
      EXPECT_TRUE(contains(r.out, "hash\\x1b]0;pwned\\x07")) << r.out;
      EXPECT_TRUE(contains(r.out, "\\nsecond line")) << r.out;  // the whole message, one line
    }
  }
  // Listings as CSV go the same way.
  Result listed = run("trials --format csv");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(raw_control(listed.out, "\r\n"), "") << listed.out;
  EXPECT_EQ(parse_csv(listed.out).size(), 1 + kTrials) << listed.out;
}

// JSON: one object per line; strings escaped as JSON (\u001b, \ufffd for bytes not UTF-8).
TEST_F(HostileDatabaseTest, JsonExportEscapesTextAndKeepsOneObjectPerLine) {
  Result json = run("export --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(raw_control(json.out, "\n"), "") << json.out;
  size_t objects = 0;
  for (const auto& line : split(json.out, "\n")) objects += line.rfind("    {", 0) == 0;
  EXPECT_EQ(objects, kDevices + kSessions + kBests + kTrials) << json.out;
  EXPECT_TRUE(contains(json.out, R"("GPU-evil\u001b]0;pwned\u0007")")) << json.out;
  EXPECT_TRUE(contains(json.out, R"(\ufffd\ufffd\u009b\u202e )" + kMicro)) << json.out;
}

// Shipped rows: nine tab-separated fields a line; a row with a field the table cannot hold (a
// forged row, the evil device's name, the end of the raw string it is compiled into) is left out
// with one escaped line on stderr; what is written parses back.
TEST_F(HostileDatabaseTest, ShippedExportLeavesOutRowsItCannotHoldAndParsesBack) {
  Result shipped = run("export --format shipped");
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  EXPECT_EQ(raw_control(shipped.out, "\t\n"), "") << shipped.out;
  EXPECT_EQ(raw_control(shipped.err, "\n"), "") << shipped.err;
  EXPECT_FALSE(contains(shipped.out, ")tuned_tsv\"")) << shipped.out;
  size_t data_lines = 0;
  for (const auto& line : split(shipped.out, "\n")) {
    if (line.empty() || line[0] == '#') continue;
    ++data_lines;
    EXPECT_EQ(split(line, "\t").size(), 9u) << line;
  }
  EXPECT_EQ(data_lines, 2u) << shipped.out;  // the clean config and the one with "µs"
  const auto warnings = split(shipped.err, "\n");
  ASSERT_EQ(warnings.size(), 3u + 1) << shipped.err;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(warnings[i].rfind("tunedb: ", 0), 0u) << warnings[i];
    EXPECT_TRUE(contains(warnings[i], "left out of the shipped export")) << warnings[i];
  }
  try {
    ShippedDefaults parsed(shipped.out);
    EXPECT_EQ(parsed.size(), 2u);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << shipped.out;
  }
}

// A malformed row is skipped with a warning that quotes its text escaped, like everything else.
TEST_F(TunedbOutputTest, WarningsAboutMalformedRowsAreEscaped) {
  {
    Database db(db_path_);
    db.record_trials({trial(0, key(kClean, {64, 64, 64}), Disposition::kOk),
                      trial(0, key(kClean, {32, 32, 32}), Disposition::kOk)});
    ASSERT_TRUE(db.offer_best(best(key(kClean, {64, 64, 64}), "BM=128")));
    ASSERT_TRUE(db.offer_best(best(key(kClean, {32, 32, 32}), "BM=128")));
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &raw), SQLITE_OK);
  const std::string sql = "UPDATE trials SET disposition = 'fast" + kTitle + "' WHERE id = 1; " +
                          "UPDATE best SET shape = '64x" + kClear + "' WHERE shape = '64x64x64';";
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  for (const char* command : {"trials", "best", "export --format shipped"}) {
    SCOPED_TRACE(command);
    Result r = run(command);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_control(r.err, "\n"), "") << r.err;
    EXPECT_TRUE(contains(r.err, "skipped")) << r.err;
    EXPECT_TRUE(contains(r.out, "32x32x32")) << r.out;  // the readable row is listed
  }
}

// ----- memory -----------------------------------------------------------------------------------

double resident_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;
  }
  return 0;
}

// tunedb sessions used to load every trial to count them (577 MB at a million), trials to build
// the whole table (1.15 GB): tables stream now (two passes over the query), counts come from SQL.
TEST_F(TunedbOutputTest, ListingsOfAMillionTrialsStaySmall) {
  const auto start = std::chrono::steady_clock::now();
  int64_t session = 0;
  {
    Database db(db_path_);
    db.upsert_device({kClean, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000});
    session = db.begin_session({0, kClean, "gemm", "guided", 60, ""}).id;
    TrialRecord failed = trial(session, key(kClean, {64, 64, 64}), Disposition::kCompileError);
    failed.message = "error: too many resources requested for launch";
    db.record_trials({trial(session, key(kClean, {64, 64, 64}), Disposition::kOk), failed});
  }
  // 999,998 more copies of the ok trial, in one transaction.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &raw), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(raw,
                         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                         "WHERE i < 999998) "
                         "INSERT INTO trials (session_id, device_uuid, op, variant, shape, d0, "
                         "d1, d2, alignment, config, kernel_name, disposition, message, ms_median, "
                         "ms_min, runs, rate, rel_error, registers, spill_bytes, compile_ms, "
                         "template_hash, rate_unit, created_at) "
                         "SELECT session_id, device_uuid, op, variant, shape, d0, d1, d2, "
                         "alignment, config, kernel_name, disposition, message, ms_median, "
                         "ms_min, runs, rate, rel_error, registers, spill_bytes, compile_ms, "
                         "template_hash, rate_unit, created_at FROM trials, n "
                         "WHERE disposition = 'ok'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  const double filled_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::string out = dir_.file("listing.txt");
  const double own_mb = resident_mb();
  const tuned::testing::Peak sessions =
      tuned::testing::measure_peak(tunedb_, {"--db", db_path_, "sessions"}, out);
  EXPECT_EQ(sessions.exit_code, 0);
  const std::string sessions_text = slurp(out);
  // id, device, op, strategy, budget, started, trials, ok
  EXPECT_TRUE(contains(sessions_text, "  1000000  999999\n")) << sessions_text;

  const tuned::testing::Peak trials =
      tuned::testing::measure_peak(tunedb_, {"--db", db_path_, "trials", "--limit", "10"}, out);
  EXPECT_EQ(trials.exit_code, 0);
  const std::string trials_text = slurp(out);
  EXPECT_EQ(split(trials_text, "\n").size(), 2 + 10 + 1u) << trials_text;

  // The whole listing, a million lines (to /dev/null): measured first, printed second.
  const tuned::testing::Peak all_trials =
      tuned::testing::measure_peak(tunedb_, {"--db", db_path_, "trials"}, "/dev/null");
  EXPECT_EQ(all_trials.exit_code, 0);

  const tuned::testing::Peak baseline =
      tuned::testing::measure_peak(tunedb_, {"--db", db_path_, "devices"}, out);
  EXPECT_EQ(baseline.exit_code, 0);
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "1,000,000 trials (filled in %.1f s, %.1f s in all). Peak RSS of tunedb%s: sessions %.1f "
      "MB, trials --limit 10 %.1f MB, trials %.1f MB, devices (its baseline) %.1f MB. wait4's "
      "ru_maxrss: %.1f, %.1f, %.1f, %.1f MB (this test process: %.1f MB at the fork)\n",
      filled_s, total_s, sessions.at_exit ? " at its exit" : " (sampled: tracing refused)",
      sessions.mb, trials.mb, all_trials.mb, baseline.mb, sessions.rusage_mb, trials.rusage_mb,
      all_trials.rusage_mb, baseline.rusage_mb, own_mb);
  EXPECT_GT(sessions.mb, 1.0);  // it was measured
  EXPECT_LT(sessions.mb, 100);
  EXPECT_GT(trials.mb, 1.0);
  EXPECT_LT(trials.mb, 100);
  EXPECT_LT(all_trials.mb, 100);
}

}  // namespace
}  // namespace tuned::cache
