// Results that travel (issue 32, part 3): bests marked with their template's hash and never served
// on another template; `tunedb merge` of two databases (counts, provenance, idempotence, the
// source never written); cubins brought only when asked; `tunedb export --portable` / `import`;
// and cubins loaded only from a database that others cannot write.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "api/runtime.hpp"
#include "cache/database.hpp"
#include "cache/portable.hpp"
#include "cache/records.hpp"
#include "core/log.hpp"
#include "generator/device.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/registry.hpp"
#include "templates/template_source.hpp"
#include "tests/common/cache_states.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"
#include "tuner/stored_config.hpp"

namespace tuned::cache {
namespace {

namespace fs = std::filesystem;
using tuned::testing::slurp;
using tuned::testing::TempDir;

// A GEMM config as the runtime shows it: its family by word and the parameters that family reads.
std::string shown(const std::string& flat) {
  return config_text(read_config(flat, gemm_op::parameters()), gemm_op::parameters());
}

const std::string kH100 = "GPU-11111111-2222-3333-4444-555555555555";
const std::string kH200 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

DeviceInfo reference_h100() {
  DeviceInfo device = reference_device(90);
  device.name = "NVIDIA H100 80GB HBM3";
  device.uuid = kH100;
  return device;
}

DeviceRecord device_row(const std::string& uuid, const std::string& name) {
  DeviceInfo info = reference_h100();
  info.uuid = uuid;
  info.name = name;
  return device_record(info);
}

// The key autotune would record for this GEMM on device (its alignment class as autotune's
// buffers give it).
ProblemKey gemm_key(const std::string& device, int64_t m, int64_t n, int64_t k) {
  ProblemKey key = gemm_op::problem_key(reference_h100(), gemm_op::packed_problem("NN", m, n, k));
  key.device_uuid = device;
  return key;
}

// The first count configs of the op's space for key, as autotune's space on an H100 holds them.
std::vector<std::string> space_configs(const ProblemKey& key, size_t count) {
  TaskRequest request;
  request.op = key.op;
  request.shape = key.shape;
  request.layout = key.variant;
  std::vector<std::string> configs;
  request_space(request, reference_h100()).for_each([&](const Config& c) {
    configs.push_back(c.canonical());
    return configs.size() < count;
  });
  return configs;
}

std::string gemm_hash() { return template_source("gemm.cu").hash; }

BestRecord best_of(const ProblemKey& key, const std::string& config, double ms,
                   const std::string& hash = gemm_hash()) {
  BestRecord b;
  b.key = key;
  b.config = config;
  b.kernel_name = "gemm_nn_test";
  b.ms = ms;
  b.rate = 2.5;
  b.rate_unit = "TFLOP/s";
  b.baseline_ms = ms * 1.25;
  b.template_hash = hash;
  return b;
}

TrialRecord trial_of(int64_t session, const ProblemKey& key, const std::string& config, double ms) {
  TrialRecord t;
  t.session_id = session;
  t.key = key;
  t.config = config;
  t.kernel_name = "gemm_nn_test";
  t.ms_median = ms;
  t.ms_min = ms * 0.9;
  t.runs = 5;
  t.rate = 3.5;
  t.rate_unit = "TFLOP/s";
  t.template_hash = gemm_hash();
  return t;
}

void sql(const std::string& path, const std::string& text) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(db, text.c_str(), nullptr, nullptr, &message), SQLITE_OK)
      << (message ? message : "") << "\n"
      << text;
  sqlite3_free(message);
  sqlite3_close(db);
}

// Every row of the tables a merge writes, as text: what "nothing changed" compares.
std::string dump(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string text;
  for (const char* table : {"devices", "sessions", "trials", "best", "cubins"}) {
    sqlite3_stmt* s = nullptr;
    const std::string query = std::string("SELECT * FROM ") + table + " ORDER BY rowid";
    EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &s, nullptr), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
      text += table;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* v = sqlite3_column_text(s, c);
        text += "|" + std::string(v ? reinterpret_cast<const char*>(v) : "NULL");
      }
      text += "\n";
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return text;
}

std::string hostname_label(const std::string& path) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + fs::absolute(path).lexically_normal().string();
}

std::string files_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& n : names) text += n + " ";
  return text;
}

class Travel : public ::testing::Test {
 protected:
  void SetUp() override {
    tunedb_ = (fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / "tunedb").string();
    ASSERT_TRUE(fs::exists(tunedb_)) << tunedb_ << " was not built";
    // Folders only we can write, whatever the umask: cubins are then loaded from them.
    for (const char* folder : {"src", "dest"}) {
      fs::create_directories(dir_.file(folder));
      fs::permissions(dir_.file(folder), fs::perms(0700));
    }
    dest_ = dir_.file("dest/a.db");
    src_ = dir_.file("src/b.db");
  }

  struct Result {
    int exit_code = -1;
    std::string out, err;
  };
  Result tunedb(const std::string& args) {
    const std::string out = dir_.file("out.txt"), err = dir_.file("err.txt");
    const std::string command = "'" + tunedb_ + "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(command.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  TempDir dir_;
  std::string tunedb_, dest_, src_;
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The acceptance test's databases: two with overlapping keys measured on different GPUs, and a
// malformed row in the source, merged twice by `tunedb merge DEST SRC`.
class TravelMerge : public Travel {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Travel::SetUp());
    ASSERT_EQ(c1_.size(), 2u);
    ASSERT_NO_FATAL_FAILURE(write_databases());
    ASSERT_NO_FATAL_FAILURE(plant_unreadable_source_rows());
  }

  void write_databases() {
    Config outside = Config::parse(space_configs(k4_, 1).at(0));
    outside.set("BM", 7);
    int64_t dest_session = 0;
    {
      Database a(dest_);
      a.upsert_device(device_row(kH100, "NVIDIA H100 80GB HBM3"));
      dest_session = a.begin_session({0, kH100, "gemm", "guided", 30, ""}).id;
      a.record_trials({trial_of(dest_session, k1_, c1_[0], 1.0)});
      ASSERT_TRUE(a.offer_best(best_of(k1_, c1_[0], 1.0)));
      ASSERT_TRUE(a.offer_best(best_of(k2_, c2_[0], 2.0)));
      ASSERT_TRUE(a.offer_best(best_of(k6_, c6_[0], 1.0)));

      Database b(src_);
      b.upsert_device(device_row(kH100, "NVIDIA H100 80GB HBM3"));
      b.upsert_device(device_row(kH200, "NVIDIA H200"));
      src_session_ = b.begin_session({0, kH100, "gemm", "random", 60, ""}).id;
      b.record_trials({trial_of(src_session_, k1_, c1_[0], 0.75),
                       trial_of(src_session_, k1_, c1_[1], 0.5),
                       trial_of(src_session_, k3_, c3_[0], 0.7)});
      BestRecord faster = best_of(k1_, c1_[1], 0.5);
      faster.session_id = src_session_;
      ASSERT_TRUE(b.offer_best(faster));
      ASSERT_TRUE(b.offer_best(best_of(k2_, c2_[0], 3.0)));
      ASSERT_TRUE(b.offer_best(best_of(k3_, c3_[0], 0.7)));
      ASSERT_TRUE(b.offer_best(best_of(k4_, outside.canonical(), 0.1)));
      ASSERT_TRUE(b.offer_best(best_of(k6_, c6_[0], 0.1, "0123456789abcdef")));  // stale template
    }
    EXPECT_EQ(dest_session, src_session_);  // the same id in both: the copy gets a new one
  }

  // Rows this build cannot read, planted as another program would write them.
  void plant_unreadable_source_rows() {
    sql(src_,
        "INSERT INTO best (device_uuid, op, variant, shape, alignment, config, kernel_name, ms, "
        "rate, baseline_ms, updated_at) VALUES ('" +
            kH100 +
            "', 'gemm', 'NN', 'abc', 4, 'BM=64', 'k', 0.01, 1, 1, '2026-01-01T00:00:00Z');"
            "INSERT INTO trials (session_id, device_uuid, op, variant, shape, alignment, config, "
            "kernel_name, disposition, message, ms_median, ms_min, runs, rate, rel_error, "
            "registers, spill_bytes, compile_ms, created_at) VALUES (" +
            std::to_string(src_session_) + ", '" + kH100 +
            "', 'gemm', 'NN', '64x64x64', 4, 'BM=64', 'k', 'exploded', '', 1, 1, 1, 1, 0, 0, 0, "
            "0, '2026-01-01T00:00:00Z');");
  }

  // The destination after the first merge: the faster best with its provenance, ours where ours
  // is faster, none refused, and the source's session under a new id with its trials.
  void expect_rows_after_first_merge() {
    Database a(dest_, Access::kRead);
    const std::string from = hostname_label(src_);
    auto k1_best = a.find_best(k1_);
    ASSERT_TRUE(k1_best);
    EXPECT_EQ(k1_best->config, c1_[1]);  // the faster, with its provenance
    EXPECT_DOUBLE_EQ(k1_best->ms, 0.5);
    EXPECT_EQ(k1_best->source, from);
    EXPECT_EQ(k1_best->template_hash, gemm_hash());
    EXPECT_DOUBLE_EQ(k1_best->rate, 2.5);
    EXPECT_EQ(k1_best->rate_unit, "TFLOP/s");
    EXPECT_EQ(a.find_best(k2_)->source, "");  // ours stays
    EXPECT_DOUBLE_EQ(a.find_best(k2_)->ms, 2.0);
    ASSERT_TRUE(a.find_best(k3_));
    EXPECT_EQ(a.find_best(k3_)->source, from);
    EXPECT_FALSE(a.find_best(k4_));                           // refused
    EXPECT_EQ(a.find_best(k6_)->template_hash, gemm_hash());  // current beats faster-but-stale
    EXPECT_EQ(a.devices().size(), 2u);
    // The source's session came under a new id; its trials and best point at it.
    const auto sessions = a.sessions({});
    ASSERT_EQ(sessions.size(), 2u);
    EXPECT_EQ(sessions[1].strategy, "random");
    EXPECT_NE(sessions[1].id, src_session_);
    EXPECT_EQ(k1_best->session_id, sessions[1].id);
    int merged_trials = 0;
    for (const auto& t : a.trials({})) {
      if (t.session_id != sessions[1].id) continue;
      ++merged_trials;
      EXPECT_DOUBLE_EQ(t.rate, 3.5);
      EXPECT_EQ(t.rate_unit, "TFLOP/s");
    }
    EXPECT_EQ(merged_trials, 3);
    EXPECT_EQ(a.trials({}).size(), 4u);
  }

  const ProblemKey k1_ = gemm_key(kH100, 256, 256, 256);  // both: the source's is faster
  const ProblemKey k2_ = gemm_key(kH100, 512, 512, 512);  // both: ours is faster
  const ProblemKey k3_ = gemm_key(kH200, 256, 256, 256);  // the source's only, another GPU
  const ProblemKey k4_ = gemm_key(kH100, 384, 384, 384);  // the source's: outside the space
  const ProblemKey k6_ = gemm_key(kH100, 640, 640, 640);  // both: the source's of another template
  const std::vector<std::string> c1_ = space_configs(k1_, 2), c2_ = space_configs(k2_, 1),
                                 c3_ = space_configs(k3_, 1), c6_ = space_configs(k6_, 1);
  int64_t src_session_ = 0;
};

TEST_F(TravelMerge, CountsProvenanceAndIdempotenceAndTheSourceIsNotWritten) {
  const std::string src_bytes = slurp(src_), src_files = files_in(dir_.file("src"));

  Result first = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_TRUE(has(first.out, "devices: 1 added, 1 present\n")) << first.out;
  EXPECT_TRUE(has(first.out, "sessions: 1 added, 0 present, 0 malformed\n")) << first.out;
  EXPECT_TRUE(has(first.out, "trials: 3 added, 0 present, 1 malformed\n")) << first.out;
  EXPECT_TRUE(has(first.out, "bests: 2 taken, 2 kept, 1 refused, 1 malformed\n")) << first.out;
  EXPECT_TRUE(has(first.out, "cubins: 0 added, 0 present, 0 refused\n")) << first.out;
  // Each skipped or refused row is named, with the rule.
  EXPECT_TRUE(has(first.err, "best row")) << first.err;
  EXPECT_TRUE(has(first.err, "malformed shape 'abc'")) << first.err;
  EXPECT_TRUE(has(first.err, "unknown trial disposition 'exploded'")) << first.err;
  EXPECT_TRUE(has(first.err, "gemm NN 384x384x384 align 4 of " + kH100)) << first.err;
  EXPECT_TRUE(has(first.err, "BM_in_space")) << first.err;

  // Not a byte of the source changed, and no file appeared beside it.
  EXPECT_EQ(slurp(src_), src_bytes);
  EXPECT_EQ(files_in(dir_.file("src")), src_files);

  ASSERT_NO_FATAL_FAILURE(expect_rows_after_first_merge());
  Result listed = tunedb("--db '" + dest_ + "' best");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(has(listed.out, "source")) << listed.out;
  EXPECT_TRUE(has(listed.out, hostname_label(src_))) << listed.out;
  EXPECT_TRUE(has(listed.out, "here")) << listed.out;

  // Idempotent: the second merge adds nothing and changes no row.
  const std::string merged = dump(dest_);
  Result second = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_TRUE(has(second.out, "devices: 0 added, 2 present\n")) << second.out;
  EXPECT_TRUE(has(second.out, "sessions: 0 added, 1 present, 0 malformed\n")) << second.out;
  EXPECT_TRUE(has(second.out, "trials: 0 added, 3 present, 1 malformed\n")) << second.out;
  EXPECT_TRUE(has(second.out, "bests: 0 taken, 4 kept, 1 refused, 1 malformed\n")) << second.out;
  EXPECT_EQ(dump(dest_), merged);
  EXPECT_EQ(slurp(src_), src_bytes);
  EXPECT_EQ(files_in(dir_.file("src")), src_files);

  // DEST from --db, and a merge of a database into itself is refused.
  Result again = tunedb("--db '" + dest_ + "' merge '" + src_ + "'");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(has(again.out, "bests: 0 taken")) << again.out;
  Result itself = tunedb("merge '" + dest_ + "' '" + dest_ + "'");
  EXPECT_EQ(itself.exit_code, 2);
  EXPECT_TRUE(has(itself.err, "cannot merge a database into itself")) << itself.err;
  // A merge takes the whole source: a filter is refused rather than ignored.
  Result filtered = tunedb("merge '" + dest_ + "' '" + src_ + "' --op gemm");
  EXPECT_EQ(filtered.exit_code, 2);
  EXPECT_TRUE(has(filtered.err, "merge takes everything its source holds: no --op"))
      << filtered.err;
  EXPECT_EQ(dump(dest_), merged);
}

// A database of an older schema is read as it is (its bests name no template: taken, and served
// as before); its sessions are who they were, so merging it again after `tunedb upgrade` adds
// nothing.
TEST_F(Travel, AnOlderSourceMergesAndMergesAgainAfterItsUpgradeAddsNothing) {
  const ProblemKey key = gemm_key(kH100, 256, 256, 256);
  const std::string config = space_configs(key, 1).at(0);
  sql(src_, std::string(tuned::testing::kSchemaVersion1) +
                "INSERT INTO sessions (device_uuid, op, strategy, budget_s, started_at) VALUES ('" +
                kH100 +
                "', 'gemm', 'guided', 60, '2026-01-01T00:00:00Z');"
                "INSERT INTO trials (session_id, device_uuid, op, layout, shape, d0, d1, d2, "
                "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
                "tflops, rel_error, registers, spill_bytes, compile_ms, created_at) VALUES (1, '" +
                kH100 + "', 'gemm', 'NN', '256x256x256', 256, 256, 256, 4, '" + config +
                "', 'k', 'ok', '', 0.5, 0.5, 5, 1, 0, 32, 0, 10, '2026-01-01T00:00:01Z');"
                "INSERT INTO best (device_uuid, op, layout, shape, d0, d1, d2, alignment, config, "
                "kernel_name, ms, tflops, baseline_ms, session_id, updated_at) VALUES ('" +
                kH100 + "', 'gemm', 'NN', '256x256x256', 256, 256, 256, 4, '" + config +
                "', 'k', 0.5, 1, 0.6, 1, '2026-01-01T00:00:02Z');");
  const std::string src_bytes = slurp(src_);
  Result first = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(has(first.out, "sessions: 1 added, 0 present")) << first.out;
  EXPECT_TRUE(has(first.out, "trials: 1 added, 0 present")) << first.out;
  EXPECT_TRUE(has(first.out, "bests: 1 taken, 0 kept")) << first.out;
  EXPECT_EQ(slurp(src_), src_bytes);  // read as it is: not migrated
  {
    Database a(dest_, Access::kRead);
    EXPECT_EQ(a.find_best(key, gemm_hash())->template_hash, "");  // unknown: served
    EXPECT_DOUBLE_EQ(a.find_best(key, gemm_hash())->rate, 1);     // its rate, unit unknown
    EXPECT_EQ(a.find_best(key, gemm_hash())->rate_unit, "");
    EXPECT_EQ(a.sessions({}).at(0).origin, kH100 + "|2026-01-01T00:00:00Z|1");
  }
  const std::string merged = dump(dest_);
  ASSERT_EQ(tunedb("--db '" + src_ + "' upgrade").exit_code, 0);
  Result again = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  EXPECT_TRUE(has(again.out, "sessions: 0 added, 1 present")) << again.out;
  EXPECT_TRUE(has(again.out, "trials: 0 added, 1 present")) << again.out;
  EXPECT_TRUE(has(again.out, "bests: 0 taken, 1 kept")) << again.out;
  EXPECT_EQ(dump(dest_), merged);
}

// A best measured on another template is never served, nor answered by the lookups the runtime
// makes; one of the current template (or one from before bests said theirs) is; and a stored best
// of another template gives way to any new one.
TEST_F(Travel, BestOfAnotherTemplateIsNotServed) {
  const DeviceInfo device = reference_h100();
  const OpRegistration& gemm = find_op("gemm");
  const auto problem = gemm_op::packed_problem("NN", 300, 200, 100);
  const ProblemKey key = gemm_op::problem_key(device, problem);
  const auto configs = space_configs(key, 2);
  ASSERT_EQ(configs.size(), 2u);
  const std::string stale = "0123456789abcdef";
  ASSERT_NE(stale, gemm_hash());
  {
    Database db(dest_);
    db.upsert_device(device_record(device));
    ASSERT_TRUE(db.offer_best(best_of(key, configs[0], 0.01, stale)));
  }
  auto describe = [&] {
    Runtime runtime(device);
    EXPECT_EQ(runtime.set_database(dest_), "");
    return runtime.describe(gemm, gemm_op::problem_id(problem));
  };
  EXPECT_EQ(describe().rfind("exact: ", 0), std::string::npos) << describe();
  {
    Database db(dest_, Access::kRead);
    EXPECT_FALSE(db.find_best(key, gemm_hash()));
    EXPECT_TRUE(db.find_best(key));  // listings still see it
    EXPECT_FALSE(db.find_nearest(gemm_key(kH100, 300, 200, 101), gemm_hash()));
    DeviceRecord twin = device_record(device);
    twin.uuid = "GPU-another-h100";
    EXPECT_FALSE(db.find_best_on_twin(key, twin, gemm_hash()));
    EXPECT_TRUE(db.find_best_on_twin(key, twin));
  }
  // Any best of the current template replaces it, slower or not.
  {
    Database db(dest_);
    EXPECT_TRUE(db.offer_best(best_of(key, configs[1], 0.5)));
    EXPECT_FALSE(db.offer_best(best_of(key, configs[0], 0.75)));  // same template: the faster
  }
  EXPECT_EQ(describe().rfind("exact: " + shown(configs[1]), 0), 0u) << describe();
  // A row from before bests named their template (schema < 4) is served as it always was.
  sql(dest_, "UPDATE best SET template_hash = ''");
  EXPECT_EQ(describe().rfind("exact: " + shown(configs[1]), 0), 0u) << describe();
}

// Cubins cross only with --with-cubins, each verified against its checksum.
TEST_F(Travel, MergeBringsNoCubinUnlessAsked) {
  CubinKey good_key{"hash-a", "-DBM=64", "sm_90", "13.0"},
      bad_key{"hash-b", "-DBM=32", "sm_90", "13.0"};
  CubinRecord cubin;
  cubin.image = {'\x7f', 'E', 'L', 'F', 1, 2, 3, 4};
  cubin.kernel_name = "gemm_nn_test";
  {
    Database b(src_);
    b.put_cubin(good_key, cubin);
    b.put_cubin(bad_key, cubin);
  }
  sql(src_, "UPDATE cubins SET image = X'00112233' WHERE source_hash = 'hash-b'");  // damaged
  Result plain = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(has(plain.out, "cubins: 0 added, 0 present, 0 refused, 2 not copied")) << plain.out;
  EXPECT_EQ(Database(dest_, Access::kRead).cubin_count(), 0);

  Result asked = tunedb("merge '" + dest_ + "' '" + src_ + "' --with-cubins");
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_TRUE(has(asked.out, "cubins: 1 added, 0 present, 1 refused\n")) << asked.out;
  EXPECT_TRUE(has(asked.err, "is not the one stored with it")) << asked.err;
  {
    Database a(dest_, Access::kRead);
    EXPECT_EQ(a.cubin_count(), 1);
    ASSERT_TRUE(a.find_cubin(good_key));
    EXPECT_EQ(a.find_cubin(good_key)->image, cubin.image);
    EXPECT_FALSE(a.find_cubin(bad_key));
  }
  Result again = tunedb("merge '" + dest_ + "' '" + src_ + "' --with-cubins");
  EXPECT_TRUE(has(again.out, "cubins: 0 added, 1 present, 1 refused\n")) << again.out;
}

// A cubin whose image and log hold bytes hard to carry: a NUL, 0xff, line breaks and quotes.
CubinRecord cubin_hard_to_carry() {
  CubinRecord cubin;
  cubin.image = {'\x7f', 'E', 'L', 'F', 0, '\xff', '\n', 3, 4};
  cubin.kernel_name = "gemm_nn_test";
  cubin.log = "line 1\nline \"2\"";
  return cubin;
}

// A source database whose text and times are hard to carry (quotes, line breaks, tabs, doubles
// that are not short decimals), with a best merged from elsewhere and a cubin.
class TravelPortable : public Travel {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Travel::SetUp());
    ASSERT_NO_FATAL_FAILURE(write_source());
  }

  void write_source() {
    Database s(src_);
    s.upsert_device(device_row(kH100, "NVIDIA H100 80GB HBM3"));
    s.upsert_device(device_row(kH200, "NVIDIA H200 \"NVL\" \\ µ"));
    const int64_t session = s.begin_session({0, kH100, "gemm", "guided", 12.5, ""}).id;
    TrialRecord odd = trial_of(session, k1_, c1_[0], 0.1 + 0.2);  // not a short decimal
    odd.message = "ptxas:\n\tline two \"quoted\"";
    odd.disposition = Disposition::kInaccurate;
    s.record_trials({odd, trial_of(session, k1_, c1_[0], 1.0 / 3)});
    BestRecord b1 = best_of(k1_, c1_[0], 1.0 / 3);
    b1.session_id = session;
    ASSERT_TRUE(s.offer_best(b1));
    BestRecord b2 = best_of(k2_, c2_[0], 2.0 / 7);
    b2.origin = cache::BestOrigin::kFirstUse;
    b2.source = "elsewhere:/x.db";  // merged earlier: its provenance travels on
    ASSERT_TRUE(s.offer_best(b2));
    s.put_cubin(cubin_key_, cubin_);
  }

  // After the first import: the source's bests bit for bit (provenance where they had none),
  // its trials, devices and session, and no cubin.
  void expect_imported_rows_match_source() {
    Database s(src_, Access::kRead), d(dest_, Access::kRead);
    const auto theirs = s.bests({}), ours = d.bests({});
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      SCOPED_TRACE(ours[i].key.shape_string());
      EXPECT_EQ(ours[i].key.device_uuid, theirs[i].key.device_uuid);
      EXPECT_EQ(ours[i].key.shape, theirs[i].key.shape);
      EXPECT_EQ(ours[i].key.alignment, theirs[i].key.alignment);
      EXPECT_EQ(ours[i].config, theirs[i].config);
      EXPECT_EQ(ours[i].ms, theirs[i].ms);  // bit for bit
      EXPECT_EQ(ours[i].baseline_ms, theirs[i].baseline_ms);
      EXPECT_EQ(ours[i].rate, theirs[i].rate);
      EXPECT_EQ(ours[i].rate_unit, "TFLOP/s");
      EXPECT_EQ(ours[i].template_hash, theirs[i].template_hash);
      EXPECT_EQ(ours[i].origin, theirs[i].origin);
      EXPECT_EQ(ours[i].updated_at, theirs[i].updated_at);
      EXPECT_EQ(ours[i].source, theirs[i].source.empty() ? hostname_label(src_) : theirs[i].source);
    }
    const auto their_trials = s.trials({}), our_trials = d.trials({});
    ASSERT_EQ(our_trials.size(), 2u);
    EXPECT_EQ(our_trials[0].message, their_trials[0].message);
    EXPECT_EQ(our_trials[0].ms_median, their_trials[0].ms_median);
    EXPECT_EQ(our_trials[0].rate_unit, "TFLOP/s");
    EXPECT_EQ(our_trials[0].disposition, Disposition::kInaccurate);
    EXPECT_EQ(our_trials[0].created_at, their_trials[0].created_at);
    EXPECT_EQ(d.devices().size(), 2u);
    EXPECT_EQ(d.devices()[1].name, "NVIDIA H200 \"NVL\" \\ µ");
    EXPECT_EQ(d.sessions({}).at(0).origin, s.sessions({}).at(0).origin);
    EXPECT_EQ(d.cubin_count(), 0);
  }

  const ProblemKey k1_ = gemm_key(kH100, 256, 256, 256), k2_ = gemm_key(kH200, 1000, 999, 7);
  const std::vector<std::string> c1_ = space_configs(k1_, 1), c2_ = space_configs(k2_, 1);
  const CubinKey cubin_key_{"hash-a", "-DBM=64 -DNOTE=\"q\"", "sm_90", "13.0"};
  const CubinRecord cubin_ = cubin_hard_to_carry();
};

// export --portable, then import: the same bests (times exact, template hash, provenance), trials
// and devices; importing twice adds nothing; cubins only where both sides ask.
TEST_F(TravelPortable, ExportImportRoundTrip) {
  const std::string file = dir_.file("results.toml"), bare = dir_.file("bare.toml");
  Result exported =
      tunedb("--db '" + src_ + "' export --portable '" + file + "' --with-trials --with-cubins");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(has(exported.out, "2 devices, 2 bests, 1 sessions, 2 trials, 1 cubins"))
      << exported.out;
  Result exported_bare = tunedb("--db '" + src_ + "' export --portable '" + bare + "'");
  ASSERT_EQ(exported_bare.exit_code, 0) << exported_bare.err;
  EXPECT_FALSE(has(slurp(bare), "[[cubins]]"));
  EXPECT_FALSE(has(slurp(bare), "[[trials]]"));
  EXPECT_TRUE(has(slurp(file), "format = 'tuned-portable'") ||
              has(slurp(file), "format = \"tuned-portable\""))
      << slurp(file);

  Result imported = tunedb("--db '" + dest_ + "' import '" + file + "'");
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_TRUE(has(imported.out, "devices: 2 added, 0 present\n")) << imported.out;
  EXPECT_TRUE(has(imported.out, "trials: 2 added, 0 present, 0 malformed\n")) << imported.out;
  EXPECT_TRUE(has(imported.out, "bests: 2 taken, 0 kept, 0 refused, 0 malformed\n"))
      << imported.out;
  EXPECT_TRUE(has(imported.out, "cubins: 0 added, 0 present, 0 refused, 1 not copied"))
      << imported.out;
  ASSERT_NO_FATAL_FAILURE(expect_imported_rows_match_source());
  // Imported results serve another GPU of the same model, compute capability and SM count.
  {
    DeviceInfo here = reference_h100();
    here.uuid = "GPU-another-h100-here";
    Runtime runtime(here);
    EXPECT_EQ(runtime.set_database(dest_), "");
    const std::string text = runtime.describe(
        find_op("gemm"), gemm_op::problem_id(gemm_op::packed_problem("NN", 256, 256, 256)));
    EXPECT_EQ(text.rfind("twin " + kH100 + ": " + shown(c1_[0]), 0), 0u) << text;
  }
  const std::string once = dump(dest_);
  Result twice = tunedb("--db '" + dest_ + "' import '" + file + "'");
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_TRUE(has(twice.out, "trials: 0 added, 2 present")) << twice.out;
  EXPECT_TRUE(has(twice.out, "bests: 0 taken, 2 kept")) << twice.out;
  EXPECT_EQ(dump(dest_), once);
  // Merging the source database itself after its portable file: the same rows, nothing new.
  Result merged = tunedb("merge '" + dest_ + "' '" + src_ + "'");
  EXPECT_TRUE(has(merged.out, "trials: 0 added, 2 present")) << merged.out;
  EXPECT_TRUE(has(merged.out, "sessions: 0 added, 1 present")) << merged.out;

  // Cubins where the file carries them and the import asks.
  const std::string other = dir_.file("dest/c.db");
  Result with_cubins = tunedb("--db '" + other + "' import '" + file + "' --with-cubins");
  ASSERT_EQ(with_cubins.exit_code, 0) << with_cubins.err;
  EXPECT_TRUE(has(with_cubins.out, "cubins: 1 added, 0 present, 0 refused\n")) << with_cubins.out;
  {
    Database c(other, Access::kRead);
    ASSERT_TRUE(c.find_cubin(cubin_key_));
    EXPECT_EQ(c.find_cubin(cubin_key_)->image, cubin_.image);
    EXPECT_EQ(c.find_cubin(cubin_key_)->log, cubin_.log);
  }
  Result none_carried =
      tunedb("--db '" + dir_.file("dest/d.db") + "' import '" + bare + "' --with-cubins");
  EXPECT_TRUE(has(none_carried.out, "cubins: 0 added, 0 present, 0 refused\n")) << none_carried.out;
}

// A file that is not a portable file of this build is refused whole, naming the file and the
// rule, and nothing is written; a row this build cannot read is skipped and counted.
TEST_F(Travel, MalformedPortableFileIsRefusedAndNothingWritten) {
  {
    Database d(dest_);
    d.upsert_device(device_row(kH100, "NVIDIA H100 80GB HBM3"));
  }
  const std::string before = slurp(dest_);
  const std::string header = "format = \"tuned-portable\"\nversion = 1\n";
  const std::string row =
      "[[bests]]\ndevice_uuid = \"" + kH100 +
      "\"\nop = \"gemm\"\nlayout = \"NN\"\nshape = \"64x64x64\"\nalignment = 4\nconfig = \"" +
      space_configs(gemm_key(kH100, 64, 64, 64), 1).at(0) + "\"\n";
  const struct {
    std::string text, rule;
  } cases[] = {
      {"this is = = not toml", "not a portable file of tuned (TOML, line 1"},
      {"format = \"csv\"\nversion = 1\n", "it must say format = \"tuned-portable\""},
      {"format = \"tuned-portable\"\nversion = 2\n", "version 2 is newer than this build"},
      {"format = \"tuned-portable\"\n", "'version' must be a positive integer"},
      {header + "bests = 5\n", "'bests' must be an array of tables"},
      {header + row, "line 3: bests[0] has no 'ms'"},
      {header + row + "ms = \"fast\"\n", "bests[0].ms must be a number"},
      {header + row + "ms = 1.0\nalignment = 4\n", "not a portable file of tuned (TOML"},
      {header + "[[cubins]]\nsource_hash = \"h\"\noptions = \"\"\narch = \"sm_90\"\n"
                "nvrtc_version = \"13\"\nkernel_name = \"k\"\nchecksum = \"0\"\nimage = \"@@@@\"\n",
       "cubins[0].image must be base64"},
      {header + "[[devices]]\nuuid = \"GPU-x\"\nname = \"n\"\ncc_major = 9\ncc_minor = 0\n"
                "sm_count = 99999999999\n",
       "devices[0].sm_count must fit in 32 bits"},
  };
  int i = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string file = dir_.file("bad" + std::to_string(i++) + ".toml");
    std::ofstream(file) << c.text;
    Result r = tunedb("--db '" + dest_ + "' import '" + file + "'");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(has(r.err, "portable file '" + file + "'")) << r.err;
    EXPECT_TRUE(has(r.err, c.rule)) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(slurp(dest_), before);
    // Nor is a database created for it.
    const std::string fresh = dir_.file("dest/fresh.db");
    EXPECT_EQ(tunedb("--db '" + fresh + "' import '" + file + "'").exit_code, 1);
    EXPECT_FALSE(fs::exists(fresh));
  }
  Result missing = tunedb("--db '" + dest_ + "' import '" + dir_.file("none.toml") + "'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(has(missing.err, "cannot be read")) << missing.err;

  // A row of a shape this build cannot read: skipped, named and counted; the rest comes in.
  const std::string file = dir_.file("one_bad_row.toml");
  std::string bad_row = row;
  bad_row.replace(bad_row.find("64x64x64"), 8, "64xabc");
  std::ofstream(file) << header << row << "ms = 0.5\n\n" << bad_row << "ms = 0.25\n";
  Result r = tunedb("--db '" + dest_ + "' import '" + file + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "bests: 1 taken, 0 kept, 0 refused, 1 malformed\n")) << r.out;
  EXPECT_TRUE(has(r.err, "bests[1] skipped: malformed shape '64xabc'")) << r.err;
}

// Cubins are loaded only from a file that the user (or root) owns and that group and others cannot
// write, in a folder they cannot write (or a sticky one); otherwise nothing is found (the caller
// compiles) and the log says why, once.
TEST(CubinTrust, ADatabaseOthersCanWriteLoadsNoCubin) {
  TempDir dir;
  const std::string folder = dir.file("db");
  fs::create_directories(folder);
  fs::permissions(folder, fs::perms(0700));
  const std::string path = folder + "/tuned.db", log_file = dir.file("log.txt");
  const CubinKey key{"hash", "-DBM=64", "sm_90", "13.0"};
  CubinRecord cubin;
  cubin.image = {'\x7f', 'E', 'L', 'F'};
  cubin.kernel_name = "k";
  {
    Database db(path);
    db.put_cubin(key, cubin);
  }
  set_log_file(log_file);
  set_log_level(LogLevel::kWarn);
  auto found = [&] {
    Database db(path, Access::kRead);
    const bool trusted = db.cubins_trusted();
    const bool has_cubin = db.find_cubin(key).has_value();
    EXPECT_EQ(trusted, has_cubin);
    return has_cubin;
  };
  for (const int mode : {0600, 0644, 0400}) {
    fs::permissions(path, fs::perms(mode));
    EXPECT_TRUE(found()) << std::oct << mode;
  }
  fs::permissions(path, fs::perms(0660));
  EXPECT_FALSE(found());
  EXPECT_TRUE(has(slurp(log_file), "no cubin is loaded from it")) << slurp(log_file);
  EXPECT_TRUE(has(slurp(log_file), "writable by its group (mode 0660)")) << slurp(log_file);
  fs::permissions(path, fs::perms(0606));
  EXPECT_FALSE(found());
  EXPECT_TRUE(has(slurp(log_file), "writable by others (mode 0606)")) << slurp(log_file);
  fs::permissions(path, fs::perms(0600));
  EXPECT_TRUE(found());
  // A -wal others can write is as good as the file.
  std::ofstream(path + "-wal").close();
  fs::permissions(path + "-wal", fs::perms(0666));
  {
    Database db(path, Access::kRead);
    EXPECT_FALSE(db.cubins_trusted());
  }
  fs::remove(path + "-wal");
  // The folder: not writable by others, unless sticky (like /tmp).
  fs::permissions(folder, fs::perms(0770));
  EXPECT_FALSE(found());
  EXPECT_TRUE(has(slurp(log_file), "its folder '" + folder + "' is writable by its group"))
      << slurp(log_file);
  fs::permissions(folder, fs::perms(01777));
  EXPECT_TRUE(found());
  fs::permissions(folder, fs::perms(0700));
  // Another user's file (only root can make one here).
  if (geteuid() == 0) {
    ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(found());
    EXPECT_TRUE(has(slurp(log_file), "owned by uid 65534")) << slurp(log_file);
    ASSERT_EQ(chown(path.c_str(), 0, 0), 0);
  }
  EXPECT_TRUE(found());
  // A folder the database makes is the user's alone, even under umask 002.
  const std::string made = dir.file("made/by/tuned.db");
  const mode_t old_umask = ::umask(002);
  {
    Database db(made);
    db.put_cubin(key, cubin);
  }
  ::umask(old_umask);
  EXPECT_EQ(fs::status(dir.file("made/by")).permissions(), fs::perms::owner_all);
  EXPECT_TRUE(Database(made, Access::kRead).find_cubin(key).has_value());
  set_log_level(LogLevel::kOff);
  set_log_file("");
}

// The merge's config check: generic through the registry, and the same rule the runtime applies.
TEST(StoredConfigCheck, RefusesWhatTheOpsSpaceDoesNot) {
  const ProblemKey key = gemm_key(kH100, 256, 256, 256);
  const DeviceRecord h100 = device_row(kH100, "NVIDIA H100 80GB HBM3");
  const std::string good = space_configs(key, 1).at(0);
  auto verdict = check_stored_best(best_of(key, good, 1), &h100);
  EXPECT_EQ(verdict.refusal, "");
  EXPECT_EQ(verdict.template_hash, gemm_hash());
  EXPECT_EQ(check_stored_best(best_of(key, good, 1), nullptr).refusal, "");
  Config bad = Config::parse(good);
  bad.set("BM", 7);
  EXPECT_TRUE(
      has(check_stored_best(best_of(key, bad.canonical(), 1), &h100).refusal, "BM_in_space"));
  EXPECT_TRUE(
      has(check_stored_best(best_of(key, bad.canonical(), 1), nullptr).refusal, "BM_in_space"));
  EXPECT_TRUE(
      has(check_stored_best(best_of(key, good + ",NOPE=1", 1), &h100).refusal, "parameters"));
  ProblemKey unknown = key;
  unknown.op = "fft";
  EXPECT_TRUE(has(check_stored_best(best_of(unknown, good, 1), &h100).refusal, "'fft'"));
  ProblemKey wrong_rank = key;
  wrong_rank.shape = {256, 256};
  EXPECT_TRUE(has(check_stored_best(best_of(wrong_rank, good, 1), &h100).refusal, "3 to 4 sizes"))
      << check_stored_best(best_of(wrong_rank, good, 1), &h100).refusal;
}

}  // namespace
}  // namespace tuned::cache
