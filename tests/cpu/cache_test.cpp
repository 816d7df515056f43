// The tuning database (cache/) on temporary files, and the tunedb program run against it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/cubin_store.hpp"
#include "cache/database.hpp"
#include "cache/records.hpp"
#include "core/cubin.hpp"
#include "core/log.hpp"
#include "tests/common/cache_states.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

namespace fs = std::filesystem;

const char* kH100 = "GPU-11111111-2222-3333-4444-555555555555";
const char* kH200 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

using tuned::testing::TempDir;

ProblemKey key(const std::string& device, std::vector<int64_t> shape, int alignment = 4,
               const std::string& layout = "NN", const std::string& op = "gemm") {
  ProblemKey k;
  k.device_uuid = device;
  k.op = op;
  k.variant = layout;
  k.shape = std::move(shape);
  k.alignment = alignment;
  return k;
}

BestRecord best(const ProblemKey& k, double ms, const std::string& config = "BM=128,BN=128") {
  BestRecord b;
  b.key = k;
  b.config = config;
  b.kernel_name = "gemm_nn_" + config;
  b.ms = ms;
  b.rate = 1.5;
  b.baseline_ms = ms * 1.1;
  return b;
}

DeviceRecord device(const std::string& uuid, const std::string& name) {
  DeviceRecord d;
  d.uuid = uuid;
  d.name = name;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = 85'520'809'984;
  d.clock_khz = 1'980'000;
  return d;
}

TrialRecord trial(int64_t session, const ProblemKey& k, Disposition disposition) {
  TrialRecord t;
  t.session_id = session;
  t.key = k;
  t.config = "BM=64,BN=64,BK=8";
  t.kernel_name = "gemm_nn_bm64_bn64_bk8";
  t.disposition = disposition;
  t.message = disposition == Disposition::kOk ? "" : std::string("why: ") + to_string(disposition);
  t.ms_median = 1.25;
  t.ms_min = 1.125;
  t.runs = 7;
  t.rate = 12.5;
  t.rel_error = 3e-7;
  t.registers = 96;
  t.spill_bytes = 8;
  t.compile_ms = 21.5;
  return t;
}

void expect_error(const std::function<void()>& f, tuned_status_t status,
                  const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "'" << e.what() << "' lacks '" << fragment << "'";
    }
  }
}

int sqlite_user_version(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    version = sqlite3_column_int(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return version;
}

void sqlite_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// ----- records ---------------------------------------------------------------------------------

TEST(CacheRecords, ShapeString) {
  EXPECT_EQ(key(kH100, {4096, 4096, 4096}).shape_string(), "4096x4096x4096");
  EXPECT_EQ(key(kH100, {16384, 64}).shape_string(), "16384x64");
  EXPECT_EQ(key(kH100, {7}).shape_string(), "7");
  EXPECT_EQ(key(kH100, {}).shape_string(), "");
}

TEST(CacheRecords, DispositionNamesRoundTrip) {
  const std::vector<std::pair<Disposition, std::string>> names = {
      {Disposition::kOk, "ok"},
      {Disposition::kCompileError, "compile_error"},
      {Disposition::kResourceLimit, "resource_limit"},
      {Disposition::kLaunchError, "launch_error"},
      {Disposition::kWrongResult, "wrong_result"},
      {Disposition::kTimeout, "timeout"},
      {Disposition::kInaccurate, "inaccurate"}};
  for (const auto& [d, name] : names) {
    EXPECT_EQ(to_string(d), name);
    EXPECT_EQ(disposition_from_string(name), d);
  }
  expect_error([] { disposition_from_string("fast"); }, TUNED_STATUS_DATABASE_ERROR, {"'fast'"});
}

// ----- opening ---------------------------------------------------------------------------------

TEST(CacheDatabase, CreatesFoldersAndSchemaVersion) {
  TempDir dir;
  std::string path = dir.file("a/b/tuned.db");
  {
    Database db(path);
    EXPECT_EQ(db.path(), path);
  }
  EXPECT_TRUE(fs::is_regular_file(path));
  EXPECT_EQ(Database::schema_version(), 5);
  EXPECT_EQ(sqlite_user_version(path), Database::schema_version());
  Database again(path);  // opening a current schema is a no-op
  EXPECT_EQ(sqlite_user_version(path), Database::schema_version());
}

// A named pipe, a device or a symlink loop as the database is refused at once, readers and writers
// alike: opening a pipe would wait for a writer that never comes.
TEST(CacheDatabase, SpecialFilesAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string pipe = dir.file("pipe.db");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const std::string loop = dir.file("loop.db");
  fs::create_symlink(loop, loop);
  const auto start = std::chrono::steady_clock::now();
  for (Access access : {Access::kRead, Access::kWrite}) {
    expect_error([&] { Database db(pipe, access); }, TUNED_STATUS_DATABASE_ERROR,
                 {pipe, "not a regular file"});
    expect_error([&] { Database db("/dev/zero", access); }, TUNED_STATUS_DATABASE_ERROR,
                 {"/dev/zero", "not a regular file"});
    expect_error([&] { Database db(loop, access); }, TUNED_STATUS_DATABASE_ERROR,
                 {loop, "cannot be examined"});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(fs::is_fifo(pipe));  // left as it was
}

TEST(CacheDatabase, CorruptFileIsDatabaseError) {
  TempDir dir;
  std::string path = dir.file("garbage.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>((i * 7919 + 13) & 0xff));
  }
  expect_error([&] { Database db(path); }, TUNED_STATUS_DATABASE_ERROR,
               {path, "file is not a database"});
  // A short text file would read as an empty database; it must be refused, not overwritten.
  std::string notes = dir.file("notes.txt");
  std::ofstream(notes) << "x";
  expect_error([&] { Database db(notes); }, TUNED_STATUS_DATABASE_ERROR,
               {notes, "file is not a database"});
  EXPECT_EQ(fs::file_size(notes), 1u);
  // A real tuned database whose pages were overwritten behind the SQLite header.
  std::string damaged = dir.file("damaged.db");
  {
    Database db(damaged);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
  }
  fs::remove(damaged + "-wal");
  fs::remove(damaged + "-shm");
  {
    std::fstream io(damaged, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(16);
    for (int i = 16; i < 4096; ++i) io.put(static_cast<char>(0xa5));
  }
  expect_error([&] { Database db(damaged); }, TUNED_STATUS_DATABASE_ERROR,
               {damaged, "file is not a database"});
}

TEST(CacheDatabase, ForeignSqliteFileIsRefused) {
  TempDir dir;
  std::string path = dir.file("other.db");
  sqlite_exec(path, "CREATE TABLE customers (id INTEGER, name TEXT)");
  expect_error([&] { Database db(path); }, TUNED_STATUS_DATABASE_ERROR,
               {path, "not a tuned database"});
}

// A newer schema is refused by writers and read by readers where its columns allow (later
// versions only add columns and tables).
TEST(CacheDatabase, NewerSchemaIsReadNotWritten) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  {
    Database db(path);
    EXPECT_TRUE(db.offer_best(best(key(kH100, {64, 64, 64}), 1.0)));
  }
  sqlite_exec(path, "ALTER TABLE best ADD COLUMN future TEXT; PRAGMA user_version = 99");
  expect_error([&] { Database db(path); }, TUNED_STATUS_DATABASE_ERROR,
               {path, "schema version 99 is newer"});
  Database reader(path, Access::kRead);
  EXPECT_EQ(reader.file_version(), 99);
  EXPECT_TRUE(reader.find_best(key(kH100, {64, 64, 64})).has_value());
  // A newer schema whose columns this build cannot read: the lookup fails with a reason (the
  // runtime logs it and answers from the shipped data).
  sqlite_exec(path, "ALTER TABLE best RENAME COLUMN config TO configuration");
  Database changed(path, Access::kRead);
  expect_error(
      [&] {
        changed.find_best(key(kH100, {64, 64, 64}));
      },
      TUNED_STATUS_DATABASE_ERROR, {path, "config"});
}

TEST(CacheDatabase, UnwritablePathIsDatabaseError) {
  TempDir dir;
  // chmod does not stop root, so use places nobody can write: below a regular file, and /proc.
  std::string file = dir.file("file.txt");
  std::ofstream(file) << "not a folder";
  std::string under_file = file + "/tuned.db";
  expect_error([&] { Database db(under_file); }, TUNED_STATUS_DATABASE_ERROR,
               {under_file, "cannot create folder"});
  std::string in_proc = "/proc/tuned_cache_test/tuned.db";
  expect_error([&] { Database db(in_proc); }, TUNED_STATUS_DATABASE_ERROR, {in_proc});
  std::string proc_file = "/proc/self/tuned.db";  // the folder exists, the file cannot be made
  expect_error([&] { Database db(proc_file); }, TUNED_STATUS_DATABASE_ERROR, {proc_file});
  expect_error([&] { Database db(dir.file("")); }, TUNED_STATUS_DATABASE_ERROR, {"folder"});
}

TEST(CacheDatabase, DefaultPathFollowsEnvironment) {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) {
      setenv(name, v->c_str(), 1);
    } else {
      unsetenv(name);
    }
  };
  auto tuned_db = saved("TUNED_DB"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  setenv("TUNED_DB", "/x/mine.db", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_database_path(), "/x/mine.db");
  unsetenv("TUNED_DB");
  EXPECT_EQ(default_database_path(), "/xdg/tuned/tuned.db");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_database_path(), "/home/u/.cache/tuned/tuned.db");
  unsetenv("HOME");
  EXPECT_EQ(default_database_path(), "tuned.db");
  restore("TUNED_DB", tuned_db);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

// ----- tables ----------------------------------------------------------------------------------

TEST(CacheDatabase, DevicesUpsert) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  EXPECT_TRUE(db.devices().empty());
  db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
  DeviceRecord changed = device(kH100, "NVIDIA H100 renamed");
  changed.clock_khz = 1'755'000;
  db.upsert_device(changed);
  db.upsert_device(device(kH200, "NVIDIA H200"));
  auto devices = db.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].uuid, kH100);
  EXPECT_EQ(devices[0].name, "NVIDIA H100 renamed");
  EXPECT_EQ(devices[0].cc_major, 9);
  EXPECT_EQ(devices[0].cc_minor, 0);
  EXPECT_EQ(devices[0].sm_count, 132);
  EXPECT_EQ(devices[0].memory_bytes, 85'520'809'984);
  EXPECT_EQ(devices[0].clock_khz, 1'755'000);
  EXPECT_EQ(devices[1].uuid, kH200);
}

TEST(CacheDatabase, CubinRoundTripWithBinaryImage) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  CubinKey k{"hash123", "-DBM=128 -DBN=128 -arch=sm_90", "sm_90", "13.0"};
  EXPECT_FALSE(db.find_cubin(k).has_value());

  CubinRecord c;
  for (int i = 0; i < 1000; ++i) c.image.push_back(static_cast<char>(i % 256));  // zeros inside
  c.image.push_back('\0');
  c.kernel_name = "gemm_nn_bm128";
  c.log = "ptxas info: Used 128 registers";
  c.registers = 128;
  c.spill_bytes = 16;
  c.stack_bytes = 32;
  c.static_smem_bytes = 16384;
  c.compile_ms = 23.25;
  db.put_cubin(k, c);

  auto found = db.find_cubin(k);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->image, c.image);
  EXPECT_EQ(found->kernel_name, c.kernel_name);
  EXPECT_EQ(found->log, c.log);
  EXPECT_EQ(found->registers, 128);
  EXPECT_EQ(found->spill_bytes, 16);
  EXPECT_EQ(found->stack_bytes, 32);
  EXPECT_EQ(found->static_smem_bytes, 16384);
  EXPECT_DOUBLE_EQ(found->compile_ms, 23.25);

  // Every key part matters.
  for (CubinKey other : {CubinKey{"hash124", k.options, k.arch, k.nvrtc_version},
                         CubinKey{k.source_hash, "-DBM=64", k.arch, k.nvrtc_version},
                         CubinKey{k.source_hash, k.options, "sm_80", k.nvrtc_version},
                         CubinKey{k.source_hash, k.options, k.arch, "12.8"}}) {
    EXPECT_FALSE(db.find_cubin(other).has_value());
  }

  // put replaces; an empty image survives as empty.
  CubinRecord empty;
  empty.kernel_name = "empty";
  db.put_cubin(k, empty);
  found = db.find_cubin(k);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->image.empty());
  EXPECT_EQ(found->kernel_name, "empty");
}

TEST(CacheDatabase, SessionsRoundTrip) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  SessionRecord s{0, kH100, "gemm", "random", 60.5, ""};
  SessionRecord first = db.begin_session(s);
  EXPECT_GT(first.id, 0);
  EXPECT_TRUE(std::regex_match(first.started_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << first.started_at;
  SessionRecord second = db.begin_session({0, kH200, "transpose", "exhaustive", 0, ""});
  EXPECT_GT(second.id, first.id);

  auto all = db.sessions({});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, first.id);
  EXPECT_EQ(all[0].device_uuid, kH100);
  EXPECT_EQ(all[0].op, "gemm");
  EXPECT_EQ(all[0].strategy, "random");
  EXPECT_DOUBLE_EQ(all[0].budget_s, 60.5);
  EXPECT_EQ(all[0].started_at, first.started_at);
  EXPECT_EQ(all[1].strategy, "exhaustive");

  Filter by_op;
  by_op.op = "transpose";
  ASSERT_EQ(db.sessions(by_op).size(), 1u);
  EXPECT_EQ(db.sessions(by_op)[0].id, second.id);
  Filter by_device;
  by_device.device_uuid = kH100;
  ASSERT_EQ(db.sessions(by_device).size(), 1u);
  Filter by_id;
  by_id.session_id = second.id;
  ASSERT_EQ(db.sessions(by_id).size(), 1u);
  EXPECT_EQ(db.sessions(by_id)[0].op, "transpose");
  Filter latest;
  latest.limit = 1;
  ASSERT_EQ(db.sessions(latest).size(), 1u);
  EXPECT_EQ(db.sessions(latest)[0].id, second.id);
}

TEST(CacheDatabase, TrialsRoundTripEveryDisposition) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  int64_t session = db.begin_session({0, kH100, "gemm", "random", 10, ""}).id;
  const std::vector<Disposition> dispositions = {
      Disposition::kOk,          Disposition::kCompileError, Disposition::kResourceLimit,
      Disposition::kLaunchError, Disposition::kWrongResult,  Disposition::kTimeout,
      Disposition::kInaccurate};
  const std::vector<std::vector<int64_t>> shapes = {{4096, 4096, 4096}, {16384, 64}, {127}};
  std::vector<TrialRecord> written;
  for (size_t i = 0; i < dispositions.size(); ++i) {
    TrialRecord t = trial(session, key(kH100, shapes[i % 3], 1 << (i % 3), "NT"), dispositions[i]);
    t.message += "\nline two with 'quotes' and \"double quotes\"";
    t.runs = static_cast<int>(i);
    t.rate_unit = "TFLOP/s";
    written.push_back(t);
  }
  db.record_trials(written);
  db.record_trials({});  // nothing to do

  auto read = db.trials({});
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    const TrialRecord& w = written[i];
    const TrialRecord& r = read[i];
    EXPECT_EQ(r.session_id, session);
    EXPECT_EQ(r.key.device_uuid, w.key.device_uuid);
    EXPECT_EQ(r.key.op, "gemm");
    EXPECT_EQ(r.key.variant, "NT");
    EXPECT_EQ(r.key.shape, w.key.shape);
    EXPECT_EQ(r.key.alignment, w.key.alignment);
    EXPECT_EQ(r.config, w.config);
    EXPECT_EQ(r.kernel_name, w.kernel_name);
    EXPECT_EQ(r.disposition, w.disposition);
    EXPECT_EQ(r.message, w.message);
    EXPECT_DOUBLE_EQ(r.ms_median, 1.25);
    EXPECT_DOUBLE_EQ(r.ms_min, 1.125);
    EXPECT_EQ(r.runs, static_cast<int>(i));
    EXPECT_DOUBLE_EQ(r.rate, 12.5);
    EXPECT_EQ(r.rate_unit, "TFLOP/s");
    EXPECT_DOUBLE_EQ(r.rel_error, 3e-7);
    EXPECT_EQ(r.registers, 96);
    EXPECT_EQ(r.spill_bytes, 8);
    EXPECT_DOUBLE_EQ(r.compile_ms, 21.5);
    EXPECT_FALSE(r.created_at.empty());
  }

  // Filters: session, op, limit (the latest rows, oldest first).
  int64_t other = db.begin_session({0, kH200, "transpose", "random", 10, ""}).id;
  db.record_trials({trial(other, key(kH200, {1024, 1024}, 1, "", "transpose"), Disposition::kOk)});
  db.record_trials({trial(0, key(kH200, {8, 8}, 1, "", "transpose"), Disposition::kOk)});
  Filter f;
  f.session_id = session;
  EXPECT_EQ(db.trials(f).size(), written.size());
  f = {};
  f.op = "transpose";
  auto transposes = db.trials(f);
  ASSERT_EQ(transposes.size(), 2u);
  EXPECT_EQ(transposes[1].session_id, 0);  // no session stays "no session"
  f = {};
  f.limit = 3;
  auto latest = db.trials(f);
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_EQ(latest[0].disposition, Disposition::kInaccurate);
  EXPECT_EQ(latest[2].key.shape, (std::vector<int64_t>{8, 8}));
}

TEST(CacheDatabase, FailedTrialBatchRecordsNothing) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  int64_t session = db.begin_session({0, kH100, "gemm", "random", 10, ""}).id;
  std::vector<TrialRecord> batch = {
      trial(session, key(kH100, {64, 64, 64}), Disposition::kOk),
      trial(session + 100, key(kH100, {64, 64, 64}), Disposition::kOk)};  // no such session
  expect_error([&] { db.record_trials(batch); }, TUNED_STATUS_DATABASE_ERROR, {"FOREIGN KEY"});
  EXPECT_TRUE(db.trials({}).empty());
  // The connection is still usable after the rollback.
  db.record_trials({batch[0]});
  EXPECT_EQ(db.trials({}).size(), 1u);
}

TEST(CacheDatabase, OfferBestKeepsTheFastest) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ProblemKey k = key(kH100, {4096, 4096, 4096});
  int64_t session = db.begin_session({0, kH100, "gemm", "random", 10, ""}).id;
  BestRecord first = best(k, 2.0, "BM=64");
  first.session_id = session;
  first.rate_unit = "TFLOP/s";
  EXPECT_TRUE(db.offer_best(first));
  EXPECT_FALSE(db.offer_best(best(k, 2.5, "BM=32")));  // slower: kept out
  auto found = db.find_best(k);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config, "BM=64");
  EXPECT_EQ(found->session_id, session);
  EXPECT_DOUBLE_EQ(found->ms, 2.0);
  EXPECT_DOUBLE_EQ(found->rate, 1.5);
  EXPECT_EQ(found->rate_unit, "TFLOP/s");
  EXPECT_DOUBLE_EQ(found->baseline_ms, 2.2);
  EXPECT_EQ(found->kernel_name, "gemm_nn_BM=64");
  EXPECT_EQ(found->key.shape, k.shape);
  EXPECT_FALSE(found->updated_at.empty());

  EXPECT_TRUE(db.offer_best(best(k, 1.5, "BM=128")));  // faster: replaces
  found = db.find_best(k);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->config, "BM=128");
  EXPECT_EQ(found->session_id, 0);
  EXPECT_EQ(db.bests({}).size(), 1u);

  expect_error([&] { db.offer_best(best(k, 0.0)); }, TUNED_STATUS_INVALID_ARGUMENT, {"ms"});
  expect_error([&] { db.offer_best(best(k, std::nan(""))); }, TUNED_STATUS_INVALID_ARGUMENT,
               {"ms"});
  EXPECT_EQ(db.find_best(k)->config, "BM=128");
}

TEST(CacheDatabase, FindBestIsExact) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ProblemKey k = key(kH100, {1024, 1024, 1024}, 4, "NN");
  ASSERT_TRUE(db.offer_best(best(k, 1.0)));
  EXPECT_TRUE(db.find_best(k).has_value());
  EXPECT_FALSE(db.find_best(key(kH200, {1024, 1024, 1024}, 4, "NN")).has_value());
  EXPECT_FALSE(db.find_best(key(kH100, {1024, 1024, 1024}, 4, "TN")).has_value());
  EXPECT_FALSE(db.find_best(key(kH100, {1024, 1024, 1024}, 1, "NN")).has_value());
  EXPECT_FALSE(db.find_best(key(kH100, {1024, 1024, 1023}, 4, "NN")).has_value());
  EXPECT_FALSE(db.find_best(key(kH100, {1024, 1024, 1024}, 4, "NN", "transpose")).has_value());
}

TEST(CacheDatabase, BestRoundTripsOneTwoAndThreeDims) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  for (const auto& shape : std::vector<std::vector<int64_t>>{
           {5}, {16384, 16384}, {12345, 678, 910}, {1, 1, 1}, {1, 7}}) {
    ProblemKey k = key(kH100, shape, 1, "", "op" + std::to_string(shape.size()));
    ASSERT_TRUE(db.offer_best(best(k, 1.0)));
    auto found = db.find_best(k);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->key.shape, shape);
  }
  Filter f;
  f.op = "op2";
  auto twos = db.bests(f);
  ASSERT_EQ(twos.size(), 2u);
  EXPECT_EQ(twos[0].key.shape, (std::vector<int64_t>{1, 7}));  // listed by dims
  EXPECT_EQ(twos[1].key.shape, (std::vector<int64_t>{16384, 16384}));
}

// A key tuned on another GPU of the same model (name, compute capability, SM count) is found for
// this one; other models, the asking GPU's own rows and GPUs the devices table does not list are
// not. Of several twins the fastest answers.
TEST(CacheDatabase, FindBestOnTwinMatchesOnlyTheSameModel) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  const DeviceRecord here = device("GPU-here", "NVIDIA H100 80GB HBM3");
  const std::string twin_a = "GPU-twin-a", twin_b = "GPU-twin-b";
  db.upsert_device(device(twin_a, "NVIDIA H100 80GB HBM3"));
  db.upsert_device(device(twin_b, "NVIDIA H100 80GB HBM3"));
  DeviceRecord fewer_sms = device("GPU-fewer-sms", "NVIDIA H100 80GB HBM3");
  fewer_sms.sm_count = 114;
  db.upsert_device(fewer_sms);
  DeviceRecord other_cc = device("GPU-other-cc", "NVIDIA H100 80GB HBM3");
  other_cc.cc_minor = 9;
  db.upsert_device(other_cc);
  db.upsert_device(device(kH200, "NVIDIA H200"));
  const std::vector<int64_t> shape = {12345, 678, 910};
  auto twin = [&](const ProblemKey& k) {
    auto found = db.find_best_on_twin(k, here);
    return found ? found->config + "@" + found->key.device_uuid : std::string("none");
  };
  EXPECT_EQ(twin(key(here.uuid, shape, 1)), "none");  // empty database
  // Other models, and a GPU of this name missing from the devices table, do not answer.
  ASSERT_TRUE(db.offer_best(best(key("GPU-fewer-sms", shape, 1), 0.1, "fewer_sms")));
  ASSERT_TRUE(db.offer_best(best(key("GPU-other-cc", shape, 1), 0.1, "other_cc")));
  ASSERT_TRUE(db.offer_best(best(key(kH200, shape, 1), 0.1, "h200")));
  ASSERT_TRUE(db.offer_best(best(key("GPU-unlisted", shape, 1), 0.1, "unlisted")));
  EXPECT_EQ(twin(key(here.uuid, shape, 1)), "none");
  // A twin answers for the same op, layout, shape and alignment only; the fastest twin wins.
  ASSERT_TRUE(db.offer_best(best(key(twin_a, shape, 1), 0.5, "slow_twin")));
  EXPECT_EQ(twin(key(here.uuid, shape, 1)), "slow_twin@" + twin_a);
  ASSERT_TRUE(db.offer_best(best(key(twin_b, shape, 1), 0.4, "fast_twin")));
  EXPECT_EQ(twin(key(here.uuid, shape, 1)), "fast_twin@" + twin_b);
  EXPECT_EQ(twin(key(here.uuid, shape, 4)), "none");
  EXPECT_EQ(twin(key(here.uuid, shape, 1, "TN")), "none");
  EXPECT_EQ(twin(key(here.uuid, {12345, 678, 911}, 1)), "none");
  EXPECT_EQ(twin(key(here.uuid, shape, 1, "NN", "transpose")), "none");
  // The asking GPU's own row is find_best's answer, never its own twin's.
  db.upsert_device(here);
  ASSERT_TRUE(db.offer_best(best(key(here.uuid, shape, 1), 0.05, "own")));
  EXPECT_EQ(twin(key(here.uuid, shape, 1)), "fast_twin@" + twin_b);
  EXPECT_EQ(db.find_best(key(here.uuid, shape, 1))->config, "own");
}

TEST(CacheDatabase, FindNearestOrdersByLogDistance) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {1024, 1024, 1024}), 1.0, "small")));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}), 1.0, "large")));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {32, 4096, 4096}), 1.0, "skinny")));

  auto nearest = [&](std::vector<int64_t> shape) {
    auto found = db.find_nearest(key(kH100, std::move(shape)));
    return found ? found->config : std::string("none");
  };
  EXPECT_EQ(nearest({4096, 4096, 4096}), "large");  // exact
  EXPECT_EQ(nearest({1000, 1000, 1000}), "small");
  EXPECT_EQ(nearest({8192, 8192, 8192}), "large");
  EXPECT_EQ(nearest({3000, 3000, 3000}), "large");  // log space: 3000 is nearer 4096 than 1024
  EXPECT_EQ(nearest({16, 4096, 4096}), "skinny");
  EXPECT_EQ(nearest({64, 4096, 4000}), "skinny");
  // Zero dims count as 1: distances 29 (skinny), 30 (small), 36 (large), all finite.
  EXPECT_EQ(nearest({0, 0, 0}), "skinny");
}

TEST(CacheDatabase, FindNearestPrefersSameAlignment) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}, 4), 1.0, "exact_shape_align4")));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {256, 256, 256}, 1), 1.0, "far_align1")));
  // Same alignment wins over a nearer shape of another alignment.
  EXPECT_EQ(db.find_nearest(key(kH100, {4096, 4096, 4096}, 1))->config, "far_align1");
  EXPECT_EQ(db.find_nearest(key(kH100, {256, 256, 256}, 4))->config, "exact_shape_align4");
  // No entry of the same alignment: a narrower one (valid on wider-aligned data) comes before a
  // wider one, even when the wider one is nearer.
  EXPECT_EQ(db.find_nearest(key(kH100, {4096, 4096, 4096}, 2))->config, "far_align1");
  // No compatible one: any alignment.
  ASSERT_TRUE(db.offer_best(best(key(kH200, {4096, 4096, 4096}, 4), 1.0, "h200_align4")));
  EXPECT_EQ(db.find_nearest(key(kH200, {512, 512, 512}, 1))->config, "h200_align4");
}

TEST(CacheDatabase, FindNearestMatchesOnlySameDeviceOpAndLayout) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}, 4, "NN"), 1.0, "h100_nn")));
  EXPECT_FALSE(db.find_nearest(key(kH200, {4096, 4096, 4096}, 4, "NN")).has_value());
  EXPECT_FALSE(db.find_nearest(key(kH100, {4096, 4096, 4096}, 4, "TT")).has_value());
  EXPECT_FALSE(db.find_nearest(key(kH100, {4096, 4096}, 4, "NN", "transpose")).has_value());
  ASSERT_TRUE(db.offer_best(best(key(kH200, {16, 16, 16}, 4, "NN"), 1.0, "h200_nn")));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {16, 16, 16}, 4, "TT"), 1.0, "h100_tt")));
  EXPECT_EQ(db.find_nearest(key(kH100, {16, 16, 16}, 4, "NN"))->config, "h100_nn");
  EXPECT_EQ(db.find_nearest(key(kH200, {4096, 4096, 4096}, 4, "NN"))->config, "h200_nn");
}

TEST(CacheDatabase, FindNearestTiesGoToMostRecent) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  // 2048 lies at distance 1 (per dim) from both 1024 and 4096; the later store wins.
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}), 1.0, "older")));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {1024, 1024, 1024}), 1.0, "newer")));
  EXPECT_EQ(db.find_nearest(key(kH100, {2048, 2048, 2048}))->config, "newer");
  // Improving the older entry makes it the most recently updated.
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}), 0.5, "older_improved")));
  EXPECT_EQ(db.find_nearest(key(kH100, {2048, 2048, 2048}))->config, "older_improved");
}

TEST(CacheDatabase, ReopeningKeepsData) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  int64_t session = 0;
  {
    Database db(path);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
    session = db.begin_session({0, kH100, "gemm", "random", 10, ""}).id;
    db.record_trials({trial(session, key(kH100, {64, 64, 64}), Disposition::kWrongResult)});
    ASSERT_TRUE(db.offer_best(best(key(kH100, {64, 64, 64}), 0.25)));
    db.put_cubin({"h", "o", "sm_90", "13.0"}, CubinRecord{{'\0', '\1'}, "k", "", 1, 0, 0, 0, 1});
  }
  Database db(path);
  EXPECT_EQ(db.devices().size(), 1u);
  ASSERT_EQ(db.sessions({}).size(), 1u);
  EXPECT_EQ(db.sessions({})[0].id, session);
  ASSERT_EQ(db.trials({}).size(), 1u);
  EXPECT_EQ(db.trials({})[0].disposition, Disposition::kWrongResult);
  ASSERT_TRUE(db.find_best(key(kH100, {64, 64, 64})).has_value());
  EXPECT_DOUBLE_EQ(db.find_best(key(kH100, {64, 64, 64}))->ms, 0.25);
  ASSERT_TRUE(db.find_cubin({"h", "o", "sm_90", "13.0"}).has_value());
  EXPECT_EQ(db.find_cubin({"h", "o", "sm_90", "13.0"})->image, (std::vector<char>{'\0', '\1'}));
}

TEST(CacheDatabase, ConcurrentWritesAllLand) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  Database shared(path);
  int64_t session = shared.begin_session({0, kH100, "gemm", "random", 10, ""}).id;
  // Half the threads share one connection, half open their own (another process, in effect).
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::optional<Database> own;
        if (t % 2 == 1) own.emplace(path);
        Database& db = own ? *own : shared;
        for (int i = 0; i < kPerThread; ++i) {
          ProblemKey k = key(kH100, {t + 1, i + 1, 64});
          db.record_trials({trial(session, k, Disposition::kOk)});
          db.offer_best(best(k, 1.0 + i));
          db.upsert_device(device("GPU-thread-" + std::to_string(t), "thread"));
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << "thread " << t << ": " << e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(shared.trials({}).size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(shared.bests({}).size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(shared.devices().size(), static_cast<size_t>(kThreads));
}

// ----- schema version 2: cubin checksums, best origin ------------------------------------------

// Schema version 1 exactly as migrate_to_1 created it, for files written by older builds.
constexpr const char* kSchemaV1 = tuned::testing::kSchemaVersion1;
// Versions 2, 3 and 4 as migrate_to_2, migrate_to_3 and migrate_to_4 made them, each after the one
// before.
constexpr const char* kToSchemaV2 =
    "ALTER TABLE cubins ADD COLUMN image_bytes INTEGER;"
    "ALTER TABLE cubins ADD COLUMN image_checksum TEXT;"
    "ALTER TABLE best ADD COLUMN origin TEXT NOT NULL DEFAULT 'autotune';"
    "PRAGMA user_version = 2;";
constexpr const char* kToSchemaV3 =
    "ALTER TABLE trials ADD COLUMN template_hash TEXT NOT NULL DEFAULT '';"
    "PRAGMA user_version = 3;";
constexpr const char* kToSchemaV4 =
    "ALTER TABLE best ADD COLUMN template_hash TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE best ADD COLUMN source TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT '';"
    "UPDATE sessions SET origin = device_uuid || '|' || started_at || '|' || id;"
    "CREATE INDEX sessions_by_origin ON sessions (origin);"
    "PRAGMA user_version = 4;";

// The first column of the first row of a query, as text ("" for none or NULL).
std::string sqlite_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string result;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

int cubin_rows(const std::string& path) {
  return std::stoi(sqlite_text(path, "SELECT count(*) FROM cubins"));
}

const CubinKey kCubinKey{"hash9", "-DBM=64 -arch=sm_90", "sm_90", "13.0"};

CubinRecord cubin(const std::string& kernel_name) {
  CubinRecord c;
  c.image = {'\x7f', 'E', 'L', 'F', '\0', '\1', '\2'};
  for (int i = 0; i < 500; ++i) c.image.push_back(static_cast<char>((i * 31) & 0xff));
  c.kernel_name = kernel_name;
  c.registers = 40;
  c.compile_ms = 18.5;
  return c;
}

// Routes warnings to a file for one test; silent again afterwards.
class CapturedLog {
 public:
  explicit CapturedLog(const std::string& path) : path_(path) {
    set_log_file(path_);
    set_log_level(LogLevel::kWarn);
  }
  ~CapturedLog() {
    set_log_level(LogLevel::kOff);
    set_log_file("");
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

 private:
  std::string path_;
};

TEST(CacheDatabase, CubinChecksumIsFnv1a64) {
  EXPECT_EQ(cubin_checksum({}), "cbf29ce484222325");
  EXPECT_EQ(cubin_checksum({'a'}), "af63dc4c8601ec8c");
  EXPECT_EQ(cubin_checksum({'f', 'o', 'o', 'b', 'a', 'r'}), "85944171f73967e8");
  EXPECT_NE(cubin_checksum({'\0'}), cubin_checksum({}));  // zero bytes count
}

TEST(CacheDatabase, Version1DatabaseMigratesKeepingRows) {
  TempDir dir;
  std::string path = dir.file("v1.db");
  sqlite_exec(path, kSchemaV1);
  sqlite_exec(path,
              "INSERT INTO cubins VALUES ('h1', '-DBM=64', 'sm_90', '13.0', X'7f454c4600ff', "
              "'gemm_old', 'log', 64, 0, 0, 4096, 12.5, '2026-01-01T00:00:00Z');"
              "INSERT INTO best (device_uuid, op, layout, shape, d0, d1, d2, alignment, config, "
              "kernel_name, ms, tflops, baseline_ms, session_id, updated_at) VALUES ('" +
                  std::string(kH100) +
                  "', 'gemm', 'NN', '1024x1024x1024', 1024, 1024, 1024, 4, 'BM=64', 'gemm_nn', "
                  "0.5, 4.25, 0.55, NULL, '2026-01-01T00:00:00Z');");
  ASSERT_EQ(sqlite_user_version(path), 1);

  Database db(path);
  EXPECT_EQ(sqlite_user_version(path), Database::schema_version());
  // The old cubin has no checksum and is trusted as before.
  auto old = db.find_cubin({"h1", "-DBM=64", "sm_90", "13.0"});
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->image, (std::vector<char>{'\x7f', 'E', 'L', 'F', '\0', '\xff'}));
  EXPECT_EQ(old->kernel_name, "gemm_old");
  EXPECT_EQ(old->static_smem_bytes, 4096);
  EXPECT_EQ(sqlite_text(path, "SELECT image_checksum IS NULL AND image_bytes IS NULL FROM cubins"),
            "1");
  auto best = db.find_best(key(kH100, {1024, 1024, 1024}));
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "BM=64");
  EXPECT_DOUBLE_EQ(best->ms, 0.5);
  EXPECT_EQ(best->origin, cache::BestOrigin::kAutotune);
  // Rows written from now on carry size and checksum.
  db.put_cubin(kCubinKey, cubin("gemm_new"));
  EXPECT_EQ(sqlite_text(path,
                        "SELECT image_bytes || ' ' || image_checksum FROM cubins "
                        "WHERE kernel_name = 'gemm_new'"),
            "507 " + cubin_checksum(cubin("gemm_new").image));
  // A second open finds it current.
  Database again(path);
  EXPECT_TRUE(again.find_cubin({"h1", "-DBM=64", "sm_90", "13.0"}).has_value());
}

TEST(CacheDatabase, CubinWithChangedBytesIsDeletedNotReturned) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  CapturedLog log(dir.file("tuned.log"));
  Database db(path);
  db.put_cubin(kCubinKey, cubin("gemm_damaged_bytes"));
  ASSERT_TRUE(db.find_cubin(kCubinKey).has_value());
  // Same size, other bytes, written behind the database's back.
  sqlite_exec(path, "UPDATE cubins SET image = X'" + std::string(507 * 2, 'a') + "'");
  ASSERT_EQ(cubin_rows(path), 1);
  EXPECT_FALSE(db.find_cubin(kCubinKey).has_value());
  EXPECT_EQ(cubin_rows(path), 0);
  EXPECT_FALSE(db.find_cubin(kCubinKey).has_value());
  const std::string text = log.text();
  EXPECT_EQ(text.rfind("[tuned warn] cubin of gemm_damaged_bytes ", 0), 0u) << text;
  EXPECT_NE(text.find("deleted"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  // A new put is trusted again.
  db.put_cubin(kCubinKey, cubin("gemm_damaged_bytes"));
  EXPECT_TRUE(db.find_cubin(kCubinKey).has_value());
}

TEST(CacheDatabase, CubinWithChangedSizeIsDeletedNotReturned) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  Database db(path);
  // Truncated image (its checksum column kept).
  db.put_cubin(kCubinKey, cubin("gemm_truncated"));
  sqlite_exec(path, "UPDATE cubins SET image = substr(image, 1, 100)");
  EXPECT_EQ(sqlite_text(path, "SELECT length(image) FROM cubins"), "100");
  EXPECT_FALSE(db.find_cubin(kCubinKey).has_value());
  EXPECT_EQ(cubin_rows(path), 0);
  // Image intact, stored size changed.
  db.put_cubin(kCubinKey, cubin("gemm_resized"));
  sqlite_exec(path, "UPDATE cubins SET image_bytes = image_bytes + 1");
  EXPECT_FALSE(db.find_cubin(kCubinKey).has_value());
  EXPECT_EQ(cubin_rows(path), 0);
}

TEST(CacheDatabase, DropCubinRemovesTheRow) {
  TempDir dir;
  std::string path = dir.file("tuned.db");
  Database db(path);
  CubinKey other = kCubinKey;
  other.arch = "sm_80";
  db.put_cubin(kCubinKey, cubin("gemm_a"));
  db.put_cubin(other, cubin("gemm_b"));
  db.drop_cubin(kCubinKey);
  EXPECT_FALSE(db.find_cubin(kCubinKey).has_value());
  EXPECT_TRUE(db.find_cubin(other).has_value());
  EXPECT_EQ(cubin_rows(path), 1);
  db.drop_cubin(kCubinKey);  // nothing there: no error
  // Through the generator's store interface.
  DatabaseCubinStore store(db);
  store.put(kCubinKey, cubin("gemm_c"));
  ASSERT_TRUE(store.find(kCubinKey).has_value());
  store.drop(kCubinKey);
  EXPECT_FALSE(store.find(kCubinKey).has_value());
  EXPECT_EQ(cubin_rows(path), 1);
}

TEST(CacheDatabase, BestOriginRoundTrips) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  ProblemKey first_use = key(kH100, {512, 512, 512});
  BestRecord b = best(first_use, 1.0, "BM=32");
  b.origin = BestOrigin::kFirstUse;
  ASSERT_TRUE(db.offer_best(b));
  ASSERT_TRUE(db.offer_best(best(key(kH100, {4096, 4096, 4096}), 1.0, "BM=128")));
  EXPECT_EQ(db.find_best(first_use)->origin, cache::BestOrigin::kFirstUse);
  EXPECT_EQ(db.find_nearest(key(kH100, {500, 500, 500}))->origin, cache::BestOrigin::kFirstUse);
  EXPECT_EQ(db.find_nearest(key(kH100, {4000, 4000, 4000}))->origin, cache::BestOrigin::kAutotune);
  auto all = db.bests({});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].origin, BestOrigin::kFirstUse);
  EXPECT_EQ(all[1].origin, BestOrigin::kAutotune);
  // A faster tuning result replaces the first-use entry, origin included.
  ASSERT_TRUE(db.offer_best(best(first_use, 0.5, "BM=64")));
  EXPECT_EQ(db.find_best(first_use)->origin, cache::BestOrigin::kAutotune);
}

// ----- the tunedb program ----------------------------------------------------------------------

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

using tuned::testing::slurp;

class TunedbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tunedb_ = (fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / "tunedb").string();
    ASSERT_TRUE(fs::exists(tunedb_)) << tunedb_ << " was not built";
    db_path_ = dir_.file("tuned.db");
  }

  Result run(const std::string& args) {
    std::string out = dir_.file("stdout.txt"), err = dir_.file("stderr.txt");
    std::string command = "'" + tunedb_ + "' " + args + " >'" + out + "' 2>'" + err + "'";
    int status = std::system(command.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  void fill() {
    Database db(db_path_);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
    db.upsert_device(device(kH200, "NVIDIA H200"));
    int64_t session = db.begin_session({0, kH100, "gemm", "random", 30, ""}).id;
    TrialRecord ok = trial(session, key(kH100, {4096, 4096, 4096}), Disposition::kOk);
    TrialRecord bad = trial(session, key(kH100, {4096, 4096, 4096}), Disposition::kCompileError);
    bad.message = "error: \"BM\" is bad,\nsee log\tend";
    db.record_trials({ok, bad});
    BestRecord b = best(key(kH100, {4096, 4096, 4096}), 2.5, "BM=128,BN=128,BK=8");
    b.baseline_ms = 2.75;
    b.rate = 54.97;
    b.session_id = session;
    ASSERT_TRUE(db.offer_best(b));
    ASSERT_TRUE(db.offer_best(best(key(kH200, {127, 127, 127}, 1), 0.0125, "BM=32")));
  }

  TempDir dir_;
  std::string tunedb_;
  std::string db_path_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Listings change no byte of the database, and one malformed row is skipped with a warning
// naming it: the listing goes on.
TEST_F(TunedbTest, ListingsChangeNoByteAndSkipMalformedRows) {
  fill();
  { Database db(db_path_); }  // a writer's close checkpoints: the file holds everything
  sqlite_exec(db_path_, "UPDATE trials SET disposition = 'fast' WHERE disposition = 'ok'");
  const std::string before = slurp(db_path_);
  for (const char* command : {"devices", "best", "trials", "sessions", "info", "export",
                              "export --format csv --table trials", "best --format json"}) {
    Result r = run("--db '" + db_path_ + "' " + command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(slurp(db_path_), before) << command;
    if (std::string(command) == "trials") {
      EXPECT_TRUE(contains(r.err, "trials row 1 skipped")) << r.err;
      EXPECT_TRUE(contains(r.err, "'fast'")) << r.err;
      EXPECT_TRUE(contains(r.out, "compile_error")) << r.out;  // the other row is listed
    }
  }
  // Rates in each op's own unit.
  {
    Database db(db_path_);
    ProblemKey transpose = key(kH100, {16384, 16384});
    transpose.op = "transpose";
    transpose.variant = "T";
    BestRecord t = best(transpose, 0.74, "TILE=64");
    t.rate = 2901.5;
    ASSERT_TRUE(db.offer_best(t));
    // The unit stored with a rate is shown, also for an op this build does not know.
    ProblemKey unknown = key(kH100, {1024});
    unknown.op = "histogram";
    BestRecord h = best(unknown, 0.5, "X=1");
    h.rate = 123.25;
    h.rate_unit = "Gitems/s";
    ASSERT_TRUE(db.offer_best(h));
  }
  Result listing = run("--db '" + db_path_ + "' best");
  EXPECT_TRUE(contains(listing.out, "54.97 TFLOP/s")) << listing.out;
  EXPECT_TRUE(contains(listing.out, "2901.50 GB/s")) << listing.out;
  EXPECT_TRUE(contains(listing.out, "123.25 Gitems/s")) << listing.out;
  // A zero-byte file is refused untouched, as is another application's SQLite file.
  const std::string empty = dir_.file("empty.db");
  std::ofstream(empty).close();
  Result r = run("--db '" + empty + "' best");
  EXPECT_EQ(r.exit_code, 1);  // a database error
  EXPECT_TRUE(contains(r.err, "file is empty, not a tuned database")) << r.err;
  EXPECT_EQ(fs::file_size(empty), 0u);
}

// Export streams: 1,000,000 trials exported as JSON with the process's peak memory far below the
// 200 MB the whole table would take (the old export held every row, twice, as text).
TEST_F(TunedbTest, ExportOfAMillionTrialsStaysSmall) {
  fill();
  sqlite_exec(db_path_,
              "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 999998) "
              "INSERT INTO trials (session_id, device_uuid, op, variant, shape, d0, d1, d2, "
              "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
              "rate, rel_error, registers, spill_bytes, compile_ms, created_at) "
              "SELECT session_id, device_uuid, op, variant, shape, d0, d1, d2, alignment, config, "
              "kernel_name, disposition, message, ms_median, ms_min, runs, rate, rel_error, "
              "registers, spill_bytes, compile_ms, created_at FROM trials, n "
              "WHERE trials.disposition = 'ok'");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string out = dir_.file("export.json");
    if (!freopen(out.c_str(), "w", stdout)) _exit(9);
    execl(tunedb_.c_str(), "tunedb", "--db", db_path_.c_str(), "export", (char*)nullptr);
    _exit(8);
  }
  // The peak is tunedb's own: VmHWM of its process image, read while it runs (a forked child's
  // rusage would count this test's memory, copied at the fork).
  int status = 0;
  double peak_mb = 0;
  const std::string proc = "/proc/" + std::to_string(child) + "/status";
  while (waitpid(child, &status, WNOHANG) == 0) {
    std::ifstream in(proc);
    bool is_tunedb = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Name:", 0) == 0) is_tunedb = line.find("tunedb") != std::string::npos;
      if (is_tunedb && line.rfind("VmHWM:", 0) == 0) {
        peak_mb = std::max(peak_mb, std::atof(line.c_str() + 6) / 1024);  // kB
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GT(peak_mb, 1.0);  // it was seen running
  const auto exported = fs::file_size(dir_.file("export.json"));
  EXPECT_GT(exported, 300u * 1000 * 1000);  // a million rows of a few hundred bytes each
  EXPECT_LT(peak_mb, 200) << "peak " << peak_mb << " MB for " << exported << " bytes";
  std::printf("tunedb export: 1,000,000 trials, %.0f MB of JSON, peak memory %.1f MB\n",
              static_cast<double>(exported) / 1e6, peak_mb);
}

TEST_F(TunedbTest, Devices) {
  fill();
  Result r = run("--db '" + db_path_ + "' devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, kH100)) << r.out;
  EXPECT_TRUE(contains(r.out, "NVIDIA H100 80GB HBM3")) << r.out;
  EXPECT_TRUE(contains(r.out, "NVIDIA H200")) << r.out;
  EXPECT_TRUE(contains(r.out, "9.0")) << r.out;
  EXPECT_TRUE(contains(r.out, "132")) << r.out;
}

TEST_F(TunedbTest, Best) {
  fill();
  Result r = run("--db '" + db_path_ + "' best");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "NVIDIA H100 80GB HBM3")) << r.out;
  EXPECT_TRUE(contains(r.out, "4096x4096x4096")) << r.out;
  EXPECT_TRUE(contains(r.out, "BM=128,BN=128,BK=8")) << r.out;
  EXPECT_TRUE(contains(r.out, "2.5000")) << r.out;  // ms
  EXPECT_TRUE(contains(r.out, "54.97")) << r.out;   // TFLOP/s
  EXPECT_TRUE(contains(r.out, "2.7500")) << r.out;  // baseline ms
  EXPECT_TRUE(contains(r.out, "1.100")) << r.out;   // baseline / ms
  EXPECT_TRUE(contains(r.out, "127x127x127")) << r.out;

  // Filters may follow the command; a device prefix selects that device.
  r = run("best --db '" + db_path_ + "' --device GPU-aaaa");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "127x127x127")) << r.out;
  EXPECT_FALSE(contains(r.out, "4096x4096x4096")) << r.out;
  r = run("--db '" + db_path_ + "' best --op transpose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "4096x4096x4096")) << r.out;
}

TEST_F(TunedbTest, TrialsAndSessions) {
  fill();
  Result r = run("--db '" + db_path_ + "' trials");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "compile_error")) << r.out;
  EXPECT_TRUE(contains(r.out, "error: \"BM\" is bad,")) << r.out;  // first line only
  EXPECT_FALSE(contains(r.out, "see log")) << r.out;
  r = run("--db '" + db_path_ + "' sessions");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "random")) << r.out;
  EXPECT_TRUE(contains(r.out, "NVIDIA H100 80GB HBM3")) << r.out;
}

TEST_F(TunedbTest, ExportJson) {
  fill();
  Result r = run("--db '" + db_path_ + "' export --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\"devices\": [")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"best\": [")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"trials\": [")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"config\": \"BM=128,BN=128,BK=8\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"shape\": \"4096x4096x4096\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"dims\": [4096,4096,4096]")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"ms\": 2.5,")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"baseline_ms\": 2.75,")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"ms\": 0.0125,")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"disposition\": \"compile_error\"")) << r.out;
  EXPECT_TRUE(contains(r.out, R"("message": "error: \"BM\" is bad,\nsee log\tend")")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"name\": \"NVIDIA H200\"")) << r.out;
  // Balanced braces and brackets outside strings: a cheap well-formedness check.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < r.out.size(); ++i) {
    char c = r.out[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control character in a string";
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
      EXPECT_GE(depth, 0);
    }
  }
  EXPECT_EQ(depth, 0);
  EXPECT_FALSE(in_string);
}

TEST_F(TunedbTest, ExportCsv) {
  fill();
  Result r = run("--db '" + db_path_ + "' export --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("device_uuid,device_name,op,variant,shape,dims,alignment,config", 0), 0u)
      << r.out;
  EXPECT_TRUE(contains(r.out, "\"BM=128,BN=128,BK=8\"")) << r.out;  // commas quoted
  r = run("--db '" + db_path_ + "' export --format csv --table trials");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Quoted as RFC 4180 says, line break and tab escaped (a cell is one line of printable text).
  EXPECT_TRUE(contains(r.out, "\"error: \"\"BM\"\" is bad,\\nsee log\\tend\"")) << r.out;
  r = run("--db '" + db_path_ + "' export --format csv --table devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, std::string(kH200) + ",NVIDIA H200,9,0,132,")) << r.out;
}

TEST_F(TunedbTest, MissingDatabaseExitsOne) {
  std::string missing = dir_.file("nowhere/tuned.db");
  Result r = run("--db '" + missing + "' best");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "no tuning database")) << r.err;
  EXPECT_TRUE(contains(r.err, missing)) << r.err;
  EXPECT_FALSE(fs::exists(missing));  // not created as a side effect
}

TEST_F(TunedbTest, CorruptDatabaseExitsOne) {
  std::ofstream(db_path_, std::ios::binary) << std::string(4096, '\x5a');
  Result r = run("--db '" + db_path_ + "' devices");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "not a database")) << r.err;
  EXPECT_TRUE(contains(r.err, db_path_)) << r.err;
}

TEST_F(TunedbTest, BadArgumentsExitTwo) {
  fill();
  for (const std::string& args :
       {std::string("--bogus best"), std::string("best --bogus"), std::string(""),
        std::string("frobnicate"), std::string("export --format xml"),
        std::string("best --table trials"), std::string("trials --limit -1"),
        std::string("trials --limit many"), std::string("best --session 0"),
        std::string("best --op bogus")}) {
    Result r = run("--db '" + db_path_ + "' " + args);
    EXPECT_EQ(r.exit_code, 2) << "args: " << args << "\n" << r.err;
    // One line, prefixed (no usage text after it).
    EXPECT_EQ(r.err.rfind("tunedb: ", 0), 0u) << "args: " << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "args: " << args << "\n" << r.err;
  }
  EXPECT_TRUE(contains(run("--db '" + db_path_ + "'").err, "a command is required: devices, best"));
  Result session = run("--db '" + db_path_ + "' best --session 0");
  EXPECT_TRUE(contains(session.err, "must be a positive session id, got '0'")) << session.err;
  EXPECT_LT(session.err.size(), 200u) << session.err;  // no 309-digit range
  Result op = run("--db '" + db_path_ + "' best --op bogus");
  EXPECT_TRUE(contains(op.err, "unknown op 'bogus' (this build knows gemm")) << op.err;
  Result help = run("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "export")) << help.out;
}

}  // namespace
}  // namespace tuned::cache

// ----- readers and faults (issue: the database survives what users do to it) --------------------
namespace tuned::cache {
namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A reader lists and looks up without changing a byte of the file or creating one beside it (a
// -wal or -shm of a reader's would lock its owner out where the reader is another user).
TEST(CacheDatabaseFaults, ReadersChangeNoByte) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  {
    Database db(path);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
    const auto session = db.begin_session({0, kH100, "gemm", "guided", 10, ""});
    db.record_trials({trial(session.id, key(kH100, {64, 64, 64}), Disposition::kOk)});
    EXPECT_TRUE(db.offer_best(best(key(kH100, {64, 64, 64}), 1.0)));
  }
  ASSERT_FALSE(fs::exists(path + "-wal"));
  const std::string before = file_bytes(path);
  {
    Database reader(path, Access::kRead);
    EXPECT_EQ(reader.devices().size(), 1u);
    EXPECT_EQ(reader.bests({}).size(), 1u);
    EXPECT_EQ(reader.trials({}).size(), 1u);
    EXPECT_EQ(reader.sessions({}).size(), 1u);
    EXPECT_TRUE(reader.find_best(key(kH100, {64, 64, 64})).has_value());
    EXPECT_TRUE(reader.find_nearest(key(kH100, {60, 70, 64})).has_value());
    EXPECT_TRUE(reader.find_best_on_twin(key(kH200, {64, 64, 64}),
                                         device(kH200, "NVIDIA H100 80GB HBM3"))
                    .has_value());
    EXPECT_FALSE(reader.find_cubin({"h", "o", "sm_90", "v"}).has_value());
    // A reader asked to write is a programming error, named as such, and writes nothing.
    expect_error([&] { reader.upsert_device(device(kH200, "NVIDIA H200")); },
                 TUNED_STATUS_INTERNAL_ERROR, {"open for reading", "store a device"});
  }
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));
  // A reader needs the file: it never creates one.
  expect_error([&] { Database db(dir.file("missing.db"), Access::kRead); },
               TUNED_STATUS_DATABASE_ERROR, {"missing.db", "no such file"});
  EXPECT_FALSE(fs::exists(dir.file("missing.db")));
}

// Zero-byte and foreign files are refused by readers and writers alike, byte for byte untouched
// (the old writer switched a foreign rollback-journal file to WAL before refusing it).
TEST(CacheDatabaseFaults, ZeroByteAndForeignFilesAreRefusedUntouched) {
  TempDir dir;
  const std::string empty = dir.file("empty.db");
  std::ofstream(empty).close();
  for (Access access : {Access::kRead, Access::kWrite}) {
    expect_error([&] { Database db(empty, access); }, TUNED_STATUS_DATABASE_ERROR,
                 {empty, "file is empty, not a tuned database"});
    EXPECT_EQ(fs::file_size(empty), 0u);
  }
  const std::string foreign = dir.file("other.db");
  sqlite_exec(foreign, "PRAGMA journal_mode=DELETE; CREATE TABLE customers (id INTEGER)");
  const std::string other_app = dir.file("other_app.db");
  sqlite_exec(other_app, "PRAGMA application_id=12345; CREATE TABLE t (x)");
  for (const auto& path : {foreign, other_app}) {
    const std::string before = file_bytes(path);
    for (Access access : {Access::kRead, Access::kWrite}) {
      expect_error([&] { Database db(path, access); }, TUNED_STATUS_DATABASE_ERROR,
                   {path, "not a tuned database"});
      EXPECT_EQ(file_bytes(path), before) << path;
      EXPECT_FALSE(fs::exists(path + "-wal")) << path;
    }
  }
  // A reader reads an older schema as it is and changes nothing.
  const std::string old = dir.file("old.db");
  sqlite_exec(old, kSchemaV1);
  const std::string before = file_bytes(old);
  EXPECT_EQ(Database(old, Access::kRead).bests({}).size(), 0u);
  EXPECT_EQ(file_bytes(old), before);
  EXPECT_FALSE(fs::exists(old + "-wal"));
}

// One row this build cannot read (a malformed shape, an unknown disposition) is skipped; the
// listings and lookups go on with the rest.
TEST(CacheDatabaseFaults, MalformedRowsAreSkipped) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  {
    Database db(path);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
    for (int64_t n : {64, 128, 256}) {
      EXPECT_TRUE(db.offer_best(best(key(kH100, {n, n, n}), 1.0)));
      db.record_trials({trial(0, key(kH100, {n, n, n}), Disposition::kOk)});
    }
  }
  sqlite_exec(path, "UPDATE best SET shape = '12x-3' WHERE d0 = 128");
  sqlite_exec(path, "UPDATE trials SET disposition = 'fast' WHERE d0 = 64");
  sqlite_exec(path, "UPDATE trials SET shape = 'abc' WHERE d0 = 256");
  for (Access access : {Access::kRead, Access::kWrite}) {
    Database db(path, access);
    const auto bests = db.bests({});
    ASSERT_EQ(bests.size(), 2u);
    EXPECT_EQ(bests[0].key.shape, (std::vector<int64_t>{64, 64, 64}));
    EXPECT_EQ(bests[1].key.shape, (std::vector<int64_t>{256, 256, 256}));
    const auto trials = db.trials({});
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0].key.shape, (std::vector<int64_t>{128, 128, 128}));
    const auto nearest = db.find_nearest(key(kH100, {130, 130, 130}));
    ASSERT_TRUE(nearest.has_value());
    EXPECT_NE(nearest->key.shape, (std::vector<int64_t>{128, 128, 128}));
  }
}

// A lock held by another process for longer than the old 5 s timeout: the writer waits and its
// trials land; nothing is lost.
TEST(CacheDatabaseFaults, WritersWaitForAnotherProcesssLock) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  { Database db(path); }
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(6500));
    sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  });
  const auto start = std::chrono::steady_clock::now();
  {
    Database db(path);  // its schema check waits too
    db.record_trials({trial(0, key(kH100, {64, 64, 64}), Disposition::kOk),
                      trial(0, key(kH100, {65, 64, 64}), Disposition::kOk)});
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  release.join();
  sqlite3_close(holder);
  EXPECT_GT(waited, 6.0);
  EXPECT_EQ(Database(path, Access::kRead).trials({}).size(), 2u);
}

// Export streams: for_each_trial visits the rows one by one, in id order, honoring the limit.
TEST(CacheDatabaseFaults, TrialsStreamInOrder) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  Database db(path);
  std::vector<TrialRecord> batch;
  for (int64_t n = 1; n <= 50; ++n) batch.push_back(trial(0, key(kH100, {n, 1, 1}), Disposition::kOk));
  db.record_trials(batch);
  std::vector<int64_t> seen;
  db.for_each_trial({}, [&](const TrialRecord& t) { seen.push_back(t.key.shape[0]); });
  ASSERT_EQ(seen.size(), 50u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  Filter last;
  last.limit = 5;
  seen.clear();
  db.for_each_trial(last, [&](const TrialRecord& t) { seen.push_back(t.key.shape[0]); });
  EXPECT_EQ(seen, (std::vector<int64_t>{46, 47, 48, 49, 50}));
}

}  // namespace
}  // namespace tuned::cache

namespace tuned::cache {
namespace {

// A database another user owns, in a folder this user cannot write: listed and looked up read
// only. As root (CI), the check runs in a child that drops to user nobody.
TEST(CacheDatabaseFaults, AnotherUsersReadOnlyDatabaseIsReadable) {
  TempDir dir;
  const std::string folder = dir.file("shared");
  fs::create_directories(folder);
  const std::string path = folder + "/tuned.db";
  {
    Database db(path);
    db.upsert_device(device(kH100, "NVIDIA H100 80GB HBM3"));
    EXPECT_TRUE(db.offer_best(best(key(kH100, {64, 64, 64}), 1.0)));
  }
  const std::string before = file_bytes(path);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.file(""), fs::perms::others_exec, fs::perm_options::add);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    try {
      Database db(path, Access::kRead);
      _exit(db.bests({}).size() == 1 && db.find_best(key(kH100, {64, 64, 64})) ? 0 : 4);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      _exit(5);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  fs::permissions(folder, fs::perms::owner_all);
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-shm"));
}

// Every file in a folder with its owner, to see that a reader created nothing.
std::string listing(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    struct stat st;
    ::stat(entry.path().c_str(), &st);
    names.push_back(entry.path().filename().string() + ":" + std::to_string(st.st_uid));
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& name : names) text += name + " ";
  return text;
}

std::string insert_best_sql(const std::string& config) {
  return "INSERT INTO best (device_uuid, op, variant, shape, d0, d1, d2, alignment, config, "
         "kernel_name, ms, rate, baseline_ms, session_id, updated_at, origin) VALUES ('" +
         std::string(kH100) + "', 'gemm', 'NN', '" + config + "', " + config.substr(0, 2) +
         ", 1, 1, 4, '" + config + "', 'k', 1.0, 1.0, 1.0, NULL, 'now', 'autotune')";
}

// Readers create nothing beside the file and miss no committed row: with a writer of this
// process inside the WAL (read through its index), and with another process holding the file in
// exclusive locking mode, a committed row in its -wal and a transaction open (read from a private
// copy: the committed row is seen, the open one is not, and no lock is waited for).
TEST(CacheDatabaseFaults, ReadersCreateNothingAndMissNoCommittedRow) {
  TempDir dir;
  const std::string path = dir.file("tuned.db");
  {
    Database writer(path);
    EXPECT_TRUE(writer.offer_best(best(key(kH100, {64, 64, 64}), 1.0)));
    ASSERT_TRUE(fs::exists(path + "-wal"));  // the row is in the -wal, not yet in the file
    const std::string before = listing(dir.file(""));
    Database reader(path, Access::kRead);
    EXPECT_TRUE(reader.find_best(key(kH100, {64, 64, 64})).has_value());
    EXPECT_TRUE(writer.offer_best(best(key(kH100, {65, 64, 64}), 1.0)));
    EXPECT_TRUE(reader.find_best(key(kH100, {65, 64, 64})).has_value());  // later commits too
    EXPECT_EQ(listing(dir.file("")), before);
  }
  ASSERT_FALSE(fs::exists(path + "-wal"));
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    sqlite3* db = nullptr;
    const std::string sql = "PRAGMA locking_mode = EXCLUSIVE; " + insert_best_sql("77x1x1") +
                            "; BEGIN EXCLUSIVE; " + insert_best_sql("88x1x1");
    char ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
              sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    if (::write(ready[1], &ok, 1) != 1) _exit(2);
    ::pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_TRUE(ok);
  const std::string before = listing(dir.file(""));
  const std::string bytes = file_bytes(path), wal = file_bytes(path + "-wal");
  const auto started = std::chrono::steady_clock::now();
  {
    Database reader(path, Access::kRead);
    EXPECT_TRUE(reader.find_best(key(kH100, {77, 1, 1})).has_value());
    EXPECT_FALSE(reader.find_best(key(kH100, {88, 1, 1})).has_value());
    EXPECT_EQ(reader.bests({}).size(), 3u);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 1.0);
  EXPECT_EQ(listing(dir.file("")), before);
  EXPECT_EQ(file_bytes(path), bytes);
  EXPECT_EQ(file_bytes(path + "-wal"), wal);
  ::kill(holder, SIGTERM);
  ::waitpid(holder, nullptr, 0);
}

// The lock-out of issue 29: a user who may read a WAL database but not write it, in a folder they
// may write, lists it; the owner's writer then records as before. (As root the reader runs in a
// child that drops to user nobody; without root there is no second user to be.)
TEST(CacheDatabaseFaults, AReaderOfAnotherUserLocksTheOwnerOut) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  TempDir dir;
  const std::string folder = dir.file("shared");
  fs::create_directories(folder);
  fs::permissions(folder, fs::perms::all);  // anyone may create files here
  fs::permissions(dir.file(""), fs::perms::others_exec, fs::perm_options::add);
  const std::string path = folder + "/tuned.db";
  for (bool owner_writing : {false, true}) {
    SCOPED_TRACE(owner_writing ? "the owner's writer open" : "no writer open");
    fs::remove(path);
    std::optional<Database> owner;
    owner.emplace(path);
    EXPECT_TRUE(owner->offer_best(best(key(kH100, {64, 64, 64}), 1.0)));
    if (!owner_writing) owner.reset();
    const std::string before = listing(folder);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
      try {
        Database db(path, Access::kRead);
        _exit(db.find_best(key(kH100, {64, 64, 64})) ? 0 : 4);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        _exit(5);
      }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(listing(folder), before);  // nothing of user nobody's beside it
    owner.reset();
    Database writer(path);
    EXPECT_TRUE(writer.offer_best(best(key(kH100, {65, 64, 64}), 1.0)));
    writer.record_trials({trial(0, key(kH100, {65, 64, 64}), Disposition::kOk)});
  }
}

}  // namespace
}  // namespace tuned::cache

namespace tuned::cache {
namespace {

// autotune stores each improvement at once, then the same best re-timed at the end (maybe a
// little slower): a session refines its own record; another session's faster best stays.
TEST(CacheDatabaseFaults, ASessionRefinesItsOwnBest) {
  TempDir dir;
  Database db(dir.file("tuned.db"));
  const auto k = key(kH100, {333, 222, 111});
  BestRecord first = best(k, 1.0, "BM=64");
  first.session_id = db.begin_session({0, kH100, "gemm", "guided", 10, ""}).id;
  EXPECT_TRUE(db.offer_best(first));
  BestRecord retimed = first;
  retimed.ms = 1.05;
  EXPECT_TRUE(db.offer_best(retimed));
  EXPECT_DOUBLE_EQ(db.find_best(k)->ms, 1.05);
  BestRecord other = best(k, 1.2, "BM=32");
  other.session_id = db.begin_session({0, kH100, "gemm", "guided", 10, ""}).id;
  EXPECT_FALSE(db.offer_best(other));
  EXPECT_EQ(db.find_best(k)->config, "BM=64");
}

}  // namespace
// Version 2 (no template hash in trials): readers read it as it is, byte for byte; a writer
// migrates it; measured() then lists only trials of the same key on the same template.
TEST(CacheDatabase, Version2IsReadAsIsAndTrialsOfATemplateAreFoundForResuming) {
  TempDir dir;
  std::string path = dir.file("v2.db");
  sqlite_exec(path, kSchemaV1);
  sqlite_exec(path,
              "ALTER TABLE cubins ADD COLUMN image_bytes INTEGER;"
              "ALTER TABLE cubins ADD COLUMN image_checksum TEXT;"
              "ALTER TABLE best ADD COLUMN origin TEXT NOT NULL DEFAULT 'autotune';"
              "PRAGMA user_version = 2;"
              "INSERT INTO trials (session_id, device_uuid, op, layout, shape, d0, d1, d2, "
              "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
              "tflops, rel_error, registers, spill_bytes, compile_ms, created_at) VALUES (NULL, '" +
                  std::string(kH100) +
                  "', 'gemm', 'NN', '64x64x64', 64, 64, 64, 4, 'BM=16', 'gemm_nn', 'ok', '', 0.5, "
                  "0.5, 5, 1.0, 0.0, 32, 0, 10.0, '2026-01-01T00:00:00Z');");
  const ProblemKey k = key(kH100, {64, 64, 64});
  const std::string before = file_bytes(path);
  {
    Database reader(path, Access::kRead);
    const auto rows = reader.trials({});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].config, "BM=16");
    EXPECT_EQ(rows[0].template_hash, "");
    EXPECT_TRUE(reader.measured(k, "any").empty());  // old rows name no template
  }
  EXPECT_EQ(file_bytes(path), before);
  ASSERT_EQ(sqlite_user_version(path), 2);

  Database db(path);
  EXPECT_EQ(sqlite_user_version(path), Database::schema_version());
  auto made = [&](const std::string& config, const std::string& hash, Disposition d, double ms,
                  const ProblemKey& on) {
    TrialRecord t = trial(0, on, d);
    t.config = config;
    t.template_hash = hash;
    t.ms_median = ms;
    return t;
  };
  db.record_trials({made("BM=32", "h1", Disposition::kOk, 0.25, k),
                    made("BM=64", "h1", Disposition::kWrongResult, 0, k),
                    made("BM=128", "h2", Disposition::kOk, 0.125, k),  // another template
                    made("BM=256", "h1", Disposition::kOk, 0.5, key(kH100, {64, 64, 65}))});
  const auto measured = db.measured(k, "h1");
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[0].config, "BM=32");
  EXPECT_DOUBLE_EQ(measured[0].ms_median, 0.25);
  EXPECT_EQ(measured[1].config, "BM=64");
  EXPECT_EQ(measured[1].disposition, Disposition::kWrongResult);
  EXPECT_TRUE(db.measured(k, "").empty());
  EXPECT_EQ(db.trials({}).back().template_hash, "h1");
}

// Version 4 names the variant `layout` and the rate `tflops`, and has no rate unit: readers read
// it as it is, every lookup by variant included, with the unit unknown; an upgrade renames the
// columns (the unique key and the index follow), adds rate_unit ('' in its rows) and keeps them.
TEST(CacheDatabase, Version4IsReadAsIsAndUpgradeNamesItsColumnsForWhatTheyHold) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  sqlite_exec(path, std::string(kSchemaV1) + kToSchemaV2 + kToSchemaV3 + kToSchemaV4);
  sqlite_exec(
      path,
      "INSERT INTO trials (session_id, device_uuid, op, layout, shape, d0, d1, d2, "
      "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
      "tflops, rel_error, registers, spill_bytes, compile_ms, created_at, template_hash) "
      "VALUES (NULL, '" +
          std::string(kH100) +
          "', 'gemm', 'NT', '1024x1024x1024', 1024, 1024, 1024, 4, 'BM=64', 'gemm_nt', "
          "'ok', '', 0.5, 0.5, 5, 7.5, 0.0, 32, 0, 10.0, '2026-01-01T00:00:00Z', 'h1');"
          "INSERT INTO best (device_uuid, op, layout, shape, d0, d1, d2, alignment, "
          "config, kernel_name, ms, tflops, baseline_ms, session_id, updated_at) VALUES ('" +
          kH100 +
          "', 'gemm', 'NT', '1024x1024x1024', 1024, 1024, 1024, 4, 'BM=64', 'gemm_nt', "
          "0.5, 4.25, 0.55, NULL, '2026-01-01T00:00:00Z');");
  ASSERT_EQ(sqlite_user_version(path), 4);
  const ProblemKey k = key(kH100, {1024, 1024, 1024}, 4, "NT");
  const std::string before = file_bytes(path);
  {
    Database reader(path, Access::kRead);
    EXPECT_EQ(reader.file_version(), 4);
    const auto trials = reader.trials({});
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0].key.variant, "NT");
    EXPECT_DOUBLE_EQ(trials[0].rate, 7.5);
    EXPECT_EQ(trials[0].rate_unit, "");
    ASSERT_EQ(reader.measured(k, "h1").size(), 1u);
    const auto found = reader.find_best(k);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->key.variant, "NT");
    EXPECT_DOUBLE_EQ(found->rate, 4.25);
    EXPECT_EQ(found->rate_unit, "");
    EXPECT_TRUE(reader.find_nearest(key(kH100, {1000, 1000, 1000}, 4, "NT")).has_value());
    EXPECT_FALSE(reader.find_best_on_twin(k, device(kH200, "NVIDIA H100")).has_value());
    ASSERT_EQ(reader.bests({}).size(), 1u);
    EXPECT_EQ(reader.bests({})[0].key.variant, "NT");
  }
  EXPECT_EQ(file_bytes(path), before);
  ASSERT_EQ(sqlite_user_version(path), 4);

  Database db(path);
  EXPECT_EQ(db.file_version(), 4);
  EXPECT_EQ(sqlite_user_version(path), 5);
  const std::string named =
      "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('%') WHERE name IN "
      "('layout', 'tflops', 'variant', 'rate', 'rate_unit') ORDER BY cid)";
  auto columns = [&](const std::string& table) {
    std::string sql = named;
    return sqlite_text(path, sql.replace(sql.find('%'), 1, table));
  };
  EXPECT_EQ(columns("trials"), "variant,rate,rate_unit");
  EXPECT_EQ(columns("best"), "variant,rate,rate_unit");
  EXPECT_EQ(sqlite_text(path,
                        "SELECT variant || ' ' || rate || ' [' || rate_unit || '] ' || "
                        "config FROM trials"),
            "NT 7.5 [] BM=64");
  EXPECT_EQ(sqlite_text(path,
                        "SELECT variant || ' ' || rate || ' [' || rate_unit || '] ' || "
                        "config FROM best"),
            "NT 4.25 [] BM=64");
  EXPECT_EQ(sqlite_text(path,
                        "SELECT group_concat(name, ',') FROM (SELECT name FROM "
                        "pragma_index_info('trials_by_device_op') ORDER BY seqno)"),
            "device_uuid,op,variant,shape,alignment");
  // Rows written now carry their unit; a faster best of the same key replaces the old row (the
  // unique key holds on the renamed column).
  BestRecord faster = best(k, 0.25, "BM=32");
  faster.rate_unit = "TFLOP/s";
  EXPECT_TRUE(db.offer_best(faster));
  EXPECT_EQ(sqlite_text(path, "SELECT count(*) FROM best"), "1");
  EXPECT_EQ(db.find_best(k)->rate_unit, "TFLOP/s");
  TrialRecord timed = trial(0, k, Disposition::kOk);
  timed.rate_unit = "TFLOP/s";
  db.record_trials({timed});
  EXPECT_EQ(db.trials({}).back().rate_unit, "TFLOP/s");
  EXPECT_EQ(db.trials({}).front().rate_unit, "");
}

}  // namespace tuned::cache

namespace tuned::cache {
namespace {

// tunedb lists a database of every schema this project wrote (1 to 5) without changing a byte or
// creating a file; `upgrade` migrates an older one.
TEST_F(TunedbTest, EverySchemaIsListedUnchangedAndUpgradeMigrates) {
  const std::string insert_best =
      "INSERT INTO best (device_uuid, op, layout, shape, d0, d1, d2, alignment, config, "
      "kernel_name, ms, tflops, baseline_ms, session_id, updated_at) VALUES ('" +
      std::string(kH100) +
      "', 'gemm', 'NN', '1024x1024x1024', 1024, 1024, 1024, 4, 'BM=64', 'gemm_nn', 0.5, 4.25, "
      "0.55, NULL, '2026-01-01T00:00:00Z');";
  const std::string v1 = dir_.file("v1.db"), v2 = dir_.file("v2.db"), v3 = dir_.file("v3.db");
  const std::string v4 = dir_.file("v4.db"), v5 = dir_.file("v5.db");
  sqlite_exec(v1, std::string(kSchemaV1) + insert_best);
  sqlite_exec(v2, std::string(kSchemaV1) + insert_best + kToSchemaV2);
  sqlite_exec(v3, std::string(kSchemaV1) + insert_best + kToSchemaV2 + kToSchemaV3);
  sqlite_exec(v4, std::string(kSchemaV1) + insert_best + kToSchemaV2 + kToSchemaV3 + kToSchemaV4);
  {
    Database db(v5);
    ASSERT_TRUE(db.offer_best(best(key(kH100, {1024, 1024, 1024}), 0.5, "BM=64")));
  }
  auto files = [&] {
    std::string names;
    for (const auto& entry : fs::directory_iterator(dir_.file(""))) {
      const std::string name = entry.path().filename().string();
      if (name.find(".db") != std::string::npos) names += name + " ";
    }
    return names;
  };
  for (const auto& path : {v1, v2, v3, v4, v5}) {
    SCOPED_TRACE(path);
    const std::string before = file_bytes(path), listed = files();
    Result r = run("--db '" + path + "' best");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "BM=64")) << r.out;
    EXPECT_TRUE(contains(r.out, "1024x1024x1024")) << r.out;
    Result info = run("--db '" + path + "' info");
    EXPECT_EQ(info.exit_code, 0) << info.err;
    EXPECT_TRUE(contains(info.out, "\nbest         1\n")) << info.out;  // its rows, counted
    Result json = run("--db '" + path + "' best --format json");
    EXPECT_EQ(json.exit_code, 0) << json.err;
    EXPECT_TRUE(contains(json.out, "\"variant\": \"NN\"")) << json.out;
    EXPECT_EQ(file_bytes(path), before);
    EXPECT_EQ(files(), listed);
  }
  // Older rows name no unit: the op's is shown, and exported as unknown.
  Result old_rate = run("--db '" + v4 + "' best");
  EXPECT_TRUE(contains(old_rate.out, "4.25 TFLOP/s")) << old_rate.out;
  Result old_json = run("--db '" + v4 + "' best --format json");
  EXPECT_TRUE(contains(old_json.out, "\"rate\": 4.25, \"rate_unit\": \"\"")) << old_json.out;
  Result older = run("--db '" + v1 + "' best");
  EXPECT_TRUE(contains(older.err, "schema version 1 is older")) << older.err;
  Result up = run("--db '" + v1 + "' upgrade");
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_TRUE(contains(up.out, "schema version 1 -> 5")) << up.out;
  EXPECT_EQ(sqlite_user_version(v1), Database::schema_version());
  Result again = run("--db '" + v1 + "' upgrade");
  EXPECT_TRUE(contains(again.out, "already at")) << again.out;
  Result listed = run("--db '" + v1 + "' best");
  EXPECT_TRUE(contains(listed.out, "BM=64")) << listed.out;
  EXPECT_EQ(listed.err, "");
  // A version 3 file gains its bests' template hash and provenance, its sessions their origin.
  Result from3 = run("--db '" + v3 + "' upgrade");
  EXPECT_TRUE(contains(from3.out, "schema version 3 -> 5")) << from3.out;
  {
    Database upgraded(v3, Access::kRead);
    ASSERT_EQ(upgraded.bests({}).size(), 1u);
    EXPECT_EQ(upgraded.bests({})[0].template_hash, "");  // unknown: still served
    EXPECT_EQ(upgraded.bests({})[0].source, "");
  }
  // A version 4 file's variant and rate are named for what they hold.
  Result from4 = run("--db '" + v4 + "' upgrade");
  EXPECT_TRUE(contains(from4.out, "schema version 4 -> 5")) << from4.out;
  EXPECT_EQ(sqlite_text(v4, "SELECT variant || ' ' || rate FROM best"), "NN 4.25");
  // A newer schema is not written: one line, exit 2.
  sqlite_exec(v5, "PRAGMA user_version = 9");
  Result newer = run("--db '" + v5 + "' upgrade");
  EXPECT_EQ(newer.exit_code, 1);
  EXPECT_TRUE(contains(newer.err, "schema version 9 is newer")) << newer.err;
}

}  // namespace
}  // namespace tuned::cache
