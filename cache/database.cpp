#include "cache/database.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <system_error>
#include <thread>
#include <tuple>

#include "cache/database_rows.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using rows::best_columns;
using rows::bind_dims;
using rows::filter_where;
using rows::parse_shape;
using rows::read_best;
using rows::Where;
using sqlite::exec;
using sqlite::fail;
using sqlite::kNotADatabase;
using sqlite::query_int;
using sqlite::Statement;
using sqlite::Transaction;

// Bump with each schema change and append the step that reaches it to kMigrations.
constexpr int kSchemaVersion = 4;
// PRAGMA application_id marks the file as ours ("tund"), so a foreign SQLite file is refused.
constexpr int kApplicationId = 0x74756e64;

#define TUNED_NOW "strftime('%Y-%m-%dT%H:%M:%SZ','now')"

// Step 0 -> 1. Later versions add a function here; each runs inside the opening transaction.
void migrate_to_1(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
    CREATE TABLE devices (
      uuid TEXT PRIMARY KEY NOT NULL,
      name TEXT NOT NULL,
      cc_major INTEGER NOT NULL,
      cc_minor INTEGER NOT NULL,
      sm_count INTEGER NOT NULL,
      memory_bytes INTEGER NOT NULL,
      clock_khz INTEGER NOT NULL,
      first_seen TEXT NOT NULL,
      last_seen TEXT NOT NULL
    );
    CREATE TABLE cubins (
      source_hash TEXT NOT NULL,
      options TEXT NOT NULL,
      arch TEXT NOT NULL,
      nvrtc_version TEXT NOT NULL,
      image BLOB NOT NULL,
      kernel_name TEXT NOT NULL,
      log TEXT NOT NULL,
      registers INTEGER NOT NULL,
      spill_bytes INTEGER NOT NULL,
      stack_bytes INTEGER NOT NULL,
      static_smem_bytes INTEGER NOT NULL,
      compile_ms REAL NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (source_hash, options, arch, nvrtc_version)
    );
    CREATE TABLE sessions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      device_uuid TEXT NOT NULL,
      op TEXT NOT NULL,
      strategy TEXT NOT NULL,
      budget_s REAL NOT NULL,
      started_at TEXT NOT NULL
    );
    CREATE INDEX sessions_by_device_op ON sessions (device_uuid, op);
    CREATE TABLE trials (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id INTEGER REFERENCES sessions (id),
      device_uuid TEXT NOT NULL,
      op TEXT NOT NULL,
      layout TEXT NOT NULL,
      shape TEXT NOT NULL,
      d0 INTEGER,
      d1 INTEGER,
      d2 INTEGER,
      alignment INTEGER NOT NULL,
      config TEXT NOT NULL,
      kernel_name TEXT NOT NULL,
      disposition TEXT NOT NULL,
      message TEXT NOT NULL,
      ms_median REAL NOT NULL,
      ms_min REAL NOT NULL,
      runs INTEGER NOT NULL,
      tflops REAL NOT NULL,
      rel_error REAL NOT NULL,
      registers INTEGER NOT NULL,
      spill_bytes INTEGER NOT NULL,
      compile_ms REAL NOT NULL,
      created_at TEXT NOT NULL
    );
    CREATE INDEX trials_by_session ON trials (session_id);
    CREATE INDEX trials_by_device_op ON trials (device_uuid, op, layout, shape, alignment);
    -- id grows with every store (INSERT OR REPLACE), so it orders updates within one second.
    CREATE TABLE best (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      device_uuid TEXT NOT NULL,
      op TEXT NOT NULL,
      layout TEXT NOT NULL,
      shape TEXT NOT NULL,
      d0 INTEGER,
      d1 INTEGER,
      d2 INTEGER,
      alignment INTEGER NOT NULL,
      config TEXT NOT NULL,
      kernel_name TEXT NOT NULL,
      ms REAL NOT NULL,
      tflops REAL NOT NULL,
      baseline_ms REAL NOT NULL,
      session_id INTEGER,
      updated_at TEXT NOT NULL,
      UNIQUE (device_uuid, op, layout, shape, alignment)
    );
  )sql",
       "create schema version 1");
}

// Step 1 -> 2. Cubins get their size and checksum, so an image damaged at rest is found before the
// driver loads it (NULL in rows of version 1, which stay trusted). Best configs say who measured
// them: "autotune" (every row of version 1) or "first-use" (the runtime).
void migrate_to_2(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
    ALTER TABLE cubins ADD COLUMN image_bytes INTEGER;
    ALTER TABLE cubins ADD COLUMN image_checksum TEXT;
    ALTER TABLE best ADD COLUMN origin TEXT NOT NULL DEFAULT 'autotune';
  )sql",
       "migrate schema to version 2");
}

// Step 2 -> 3. Trials say which template source they measured ('' in older rows: unknown), so a
// re-run of a tuning command skips configs already measured on the same template.
void migrate_to_3(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
    ALTER TABLE trials ADD COLUMN template_hash TEXT NOT NULL DEFAULT '';
  )sql",
       "migrate schema to version 3");
}

// Step 3 -> 4. Results that travel: a best says which template it was measured on ('' in older
// rows: unknown, served as before) and where it came from ('' here, else the database or file it
// was merged from); a session says who it is across databases (its GPU, start and id where it
// began), so that merging the same source twice finds the sessions it brought the first time.
void migrate_to_4(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
    ALTER TABLE best ADD COLUMN template_hash TEXT NOT NULL DEFAULT '';
    ALTER TABLE best ADD COLUMN source TEXT NOT NULL DEFAULT '';
    ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT '';
    UPDATE sessions SET origin = device_uuid || '|' || started_at || '|' || id;
    CREATE INDEX sessions_by_origin ON sessions (origin);
  )sql",
       "migrate schema to version 4");
}

using Migration = void (*)(sqlite3*, const std::string&);
constexpr Migration kMigrations[kSchemaVersion] = {migrate_to_1, migrate_to_2, migrate_to_3,
                                                   migrate_to_4};

// Whether the file is ours, by reads only (the first read of the file, so a garbage file fails
// here with SQLITE_NOTADB): a writer calls it before its first write, a reader instead of
// writing. Returns the schema version (0: a new, empty database).
int check_identity(sqlite3* db, const std::string& path, Access access) {
  const int version = query_int(db, path, "PRAGMA user_version");
  const int application = query_int(db, path, "PRAGMA application_id");
  if (application != 0 && application != kApplicationId) {
    fail(path, "file is not a tuned database (it belongs to another application)");
  }
  if (version > kSchemaVersion && access == Access::kWrite) {
    fail(path, "schema version " + std::to_string(version) + " is newer than this build of tuned " +
                   "writes (" + std::to_string(kSchemaVersion) +
                   "); use a newer tuned or another database path");
  }
  const int tables =
      query_int(db, path, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
  if (version == 0 && tables > 0) {
    fail(path, "file is not a tuned database (it holds other tables and no tuned schema)");
  }
  if (access == Access::kRead && version == 0) {
    fail(path, "file holds no tuned schema yet (nothing tuned)");
  }
  return version;
}

// A writer's schema: WAL, then the migrations in one transaction.
void open_schema(sqlite3* db, const std::string& path) {
  // journal_mode cannot change inside a transaction.
  exec(db, path, "PRAGMA journal_mode=WAL", "enable WAL");
  exec(db, path, "PRAGMA foreign_keys=ON", "enable foreign keys");

  Transaction transaction(db, path);
  const int version = check_identity(db, path, Access::kWrite);  // again, under the lock
  for (int v = version; v < kSchemaVersion; ++v) kMigrations[v](db, path);
  // Written on every open, even when current: it proves now, not at the first trial, that the
  // file can be written.
  std::string pragmas = "PRAGMA user_version=" + std::to_string(kSchemaVersion) +
                        "; PRAGMA application_id=" + std::to_string(kApplicationId) + ";";
  exec(db, path, pragmas.c_str(), "write schema version");
  transaction.commit();
}

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

// SQLite's busy handler: another process holds a lock. Sleeps 1, 2, 4 ... 100 ms between tries,
// says once (warn) that it waits, gives up after its limit.
template <typename Wait>
int wait_for_lock(void* context, int attempt) {
  auto* wait = static_cast<Wait*>(context);
  const int64_t sleep_ms = std::min<int64_t>(int64_t{1} << std::min(attempt, 7), 100);
  // Tries 0-6 sleep 1+2+...+64 = 127 ms, every later one 100 ms.
  const int64_t waited_ms = attempt < 7 ? (int64_t{1} << attempt) - 1 : 127 + (attempt - 7) * 100;
  const int64_t limit_ms = wait->limit.count();
  if (waited_ms >= limit_ms) return 0;
  if (waited_ms >= 1000 && !wait->said) {
    wait->said = true;
    log(LogLevel::kWarn, "tuning database '" + wait->path +
                             "' is locked by another process; waiting (up to " +
                             std::to_string(limit_ms / 1000) + " s)");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(sleep_ms, limit_ms - waited_ms)));
  return 1;
}

// 0: same alignment. 1: a narrower alignment that divides ours, whose kernels are still valid on
// this data. 2: any other (wider) alignment, which the caller must check against the problem.
int alignment_tier(int stored, int wanted) {
  if (stored == wanted) return 0;
  if (stored > 0 && wanted % stored == 0) return 1;
  return 2;
}

}  // namespace

std::string default_database_path() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (std::string db = env("TUNED_DB"); !db.empty()) return db;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/tuned/tuned.db";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/tuned/tuned.db";
  return "tuned.db";
}

int Database::schema_version() { return kSchemaVersion; }

Database::Database(const std::string& path, Access access) : Database(path, OpenOptions{access}) {}

Database::Database(const std::string& path, const OpenOptions& options)
    : path_(path), access_(options.access) {
  namespace fs = std::filesystem;
  if (path_.empty()) fail(path_, "empty path");
  busy_.path = path_;
  busy_.limit = options.lock_wait;
  auto prepare = [this](sqlite3* db) { sqlite3_busy_handler(db, wait_for_lock<BusyWait>, &busy_); };
  // Examined before anything opens it: a named pipe would block the open until a writer came, a
  // device would be read as a database, a symlink loop would fail deep inside SQLite.
  file::check_openable(path_);
  if (access_ == Access::kRead) {
    if (!file::identify(path_).exists) fail(path_, "no such file");
    read_ = file::open_reader(path_, prepare);
    db_ = read_.db;
    try {
      file_version_ = check_identity(db_, path_, Access::kRead);
    } catch (...) {
      read_.close();
      throw;
    }
    version_ = std::min(file_version_, kSchemaVersion);
    if (file_version_ > kSchemaVersion) {
      log_once(LogLevel::kWarn, "newer schema|" + path_,
               "tuning database '" + path_ + "': schema version " + std::to_string(file_version_) +
                   " is newer than this build (" + std::to_string(kSchemaVersion) +
                   "): read as version " + std::to_string(kSchemaVersion) +
                   " where its columns allow; nothing is recorded in it");
    }
    if (file_version_ < kSchemaVersion) {
      log_once(LogLevel::kWarn, "older schema|" + path_,
               "tuning database '" + path_ + "': schema version " + std::to_string(file_version_) +
                   " is older than this build's (" + std::to_string(kSchemaVersion) +
                   "): read as it is; the library records nothing in it until 'tunedb --db " +
                   path_ + " upgrade'");
    }
    if (read_.mode == file::ReadMode::kSnapshot) {
      log_once(LogLevel::kWarn, "snapshot|" + path_,
               "tuning database '" + path_ +
                   "': read from a private copy (its -wal or -journal has no shared index beside "
                   "it: another process holds it in exclusive mode, or it was copied); nothing is "
                   "recorded while it is held");
    }
    if (!read_.note.empty()) {
      log_once(LogLevel::kWarn, "read note|" + path_,
               "tuning database '" + path_ + "': " + read_.note);
    }
    if (read_.mode != file::ReadMode::kSnapshot) {
      counted_ = read_.opened;
      file::note_open(counted_);
    }
    return;
  }

  fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    const bool made = fs::create_directories(parent, ec);
    if (ec || !fs::is_directory(parent, ec)) {
      fail(path_, "cannot create folder '" + parent.string() +
                      "': " + (ec ? ec.message() : "a file of that name is in the way"));
    }
    // A folder made here is the user's alone whatever the umask (002 makes it group-writable):
    // cubins are loaded only from a folder others cannot write (file::cubin_distrust).
    if (made) fs::permissions(parent, fs::perms::owner_all, ec);
  }
  if (!file::identify(path_).exists) {
    // Made whole aside, then linked into place: a process starting at the same moment sees no
    // file or a complete one, never an empty file or one without its schema.
    file::create_atomically(path_, [&](sqlite3* db, const std::string& p) {
      prepare(db);
      open_schema(db, p);
    });
  }
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  // SQLite hands back a handle even when opening fails; the owner closes it on every path.
  std::unique_ptr<sqlite3, Closer> handle(raw);
  if (rc != SQLITE_OK) fail(path_, sqlite::describe(raw, rc, "cannot open"));
  sqlite3_extended_result_codes(raw, 1);
  prepare(raw);
  // READWRITE silently falls back to read-only for a write-protected file.
  if (sqlite3_db_readonly(raw, "main") == 1) {
    fail(path_, "file is read-only (tuned records trials and needs to write it)");
  }
  file_version_ = check_identity(raw, path_, Access::kWrite);  // before the first write, WAL too
  if (file_version_ < kSchemaVersion && !options.upgrade) {
    fail(path_, "schema version " + std::to_string(file_version_) +
                    " is older than this build writes (" + std::to_string(kSchemaVersion) +
                    "); it is read as it is and nothing is recorded in it: run 'tunedb --db " +
                    path_ + " upgrade' to let tuned record there");
  }
  open_schema(raw, path_);
  version_ = kSchemaVersion;
  counted_ = file::identify(path_);
  file::note_open(counted_);
  db_ = handle.release();
}

bool Database::changed() const {
  if (access_ != Access::kRead || read_.mode == file::ReadMode::kInPlace) return false;
  return !(file::identify(path_) == read_.opened);
}

void Database::writing(const char* what) const {
  if (access_ == Access::kRead) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                "tuning database '" + path_ + "' is open for reading: cannot " + what);
  }
}

void Database::skip(const char* table, int64_t id, const Error& e) {
  rows::skip_row(path_, table, id, e);
  ++skipped_[table];
}

int64_t Database::skipped(const std::string& table) const {
  std::lock_guard lock(mutex_);
  const auto it = skipped_.find(table);
  return it != skipped_.end() ? it->second : 0;
}

bool Database::cubins_trusted() const { return file::cubin_distrust(path_).empty(); }

Database::~Database() {
  if (access_ == Access::kRead) {
    read_.close();
  } else {
    sqlite3_close_v2(db_);
  }
  if (counted_.exists) file::note_closed(counted_);
}

void Database::upsert_device(const DeviceRecord& device) {
  writing("store a device");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "INSERT INTO devices (uuid, name, cc_major, cc_minor, sm_count, memory_bytes, "
              "clock_khz, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, " TUNED_NOW
              ", " TUNED_NOW
              ") ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, "
              "cc_major = excluded.cc_major, cc_minor = excluded.cc_minor, "
              "sm_count = excluded.sm_count, memory_bytes = excluded.memory_bytes, "
              "clock_khz = excluded.clock_khz, last_seen = excluded.last_seen",
              "store device " + device.uuid);
  s.bind(1, device.uuid)
      .bind(2, device.name)
      .bind(3, device.cc_major)
      .bind(4, device.cc_minor)
      .bind(5, device.sm_count)
      .bind(6, device.memory_bytes)
      .bind(7, device.clock_khz);
  s.run();
  transaction.commit();
}

std::vector<DeviceRecord> Database::devices() {
  std::lock_guard lock(mutex_);
  Statement s(db_, path_,
              "SELECT uuid, name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz, rowid "
              "FROM devices ORDER BY first_seen, uuid",
              "list devices");
  std::vector<DeviceRecord> result;
  while (s.step()) {
    DeviceRecord d;
    try {
      d.uuid = s.text(0);
      d.name = s.text(1);
      d.cc_major = s.integer(2);
      d.cc_minor = s.integer(3);
      d.sm_count = s.integer(4);
      d.memory_bytes = s.int64(5);
      d.clock_khz = s.integer(6);
    } catch (const Error& e) {
      skip("devices", sqlite3_column_int64(s.handle(), 7), e);
      continue;
    }
    result.push_back(std::move(d));
  }
  return result;
}

std::optional<CubinRecord> Database::find_cubin(const CubinKey& key) {
  // The library runs what it loads: from a file others could have written, nothing (one line per
  // file and reason; the caller compiles from the config, as for a missing cubin).
  if (const std::string distrust = file::cubin_distrust(path_); !distrust.empty()) {
    log_once(LogLevel::kWarn, "untrusted cubins|" + path_ + "|" + distrust,
             "tuning database '" + path_ + "': no cubin is loaded from it (" + distrust +
                 "); kernels are compiled from their configs instead");
    return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  CubinRecord c;
  std::optional<int64_t> stored_bytes;
  std::optional<std::string> stored_checksum;
  {
    Statement s(db_, path_,
                std::string("SELECT image, kernel_name, log, registers, spill_bytes, "
                            "stack_bytes, static_smem_bytes, compile_ms, ") +
                    (version_ >= 2 ? "image_bytes, image_checksum" : "NULL, NULL") +
                    " FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
                    "nvrtc_version = ?",
                "find cubin");
    s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
    if (!s.step()) return std::nullopt;
    c.image = s.blob(0);
    c.kernel_name = s.text(1);
    c.log = s.text(2);
    c.registers = s.integer(3);
    c.spill_bytes = s.integer(4);
    c.stack_bytes = s.integer(5);
    c.static_smem_bytes = s.integer(6);
    c.compile_ms = s.real(7);
    if (!s.is_null(8)) stored_bytes = s.int64(8);
    if (!s.is_null(9)) stored_checksum = s.text(9);
  }
  // Rows of schema version 1 carry no checksum: trusted, as they always were.
  if (!stored_checksum) return c;
  const int64_t bytes = static_cast<int64_t>(c.image.size());
  const std::string checksum = cubin_checksum(c.image);
  if (bytes == stored_bytes.value_or(bytes) && checksum == *stored_checksum) return c;

  // Damaged at rest. Deleted only if the row is still the damaged one (another process may have
  // replaced it meanwhile); a failed delete is harmless, since the caller's recompiled cubin
  // replaces the row.
  std::string outcome = "deleted";
  if (access_ == Access::kRead) {
    outcome = "left in place (a read-only lookup)";
  } else try {
    Transaction transaction(db_, path_);
    Statement s(db_, path_,
                "DELETE FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
                "nvrtc_version = ? AND image = ? AND image_checksum = ?",
                "delete damaged cubin " + c.kernel_name);
    s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
    s.bind_blob(5, c.image).bind(6, *stored_checksum);
    s.run();
    transaction.commit();
  } catch (const Error& e) {
    outcome = std::string("not deleted: ") + e.what();
  }
  log_once(LogLevel::kWarn,
           "damaged cubin|" + path_ + "|" + key.source_hash + "|" + key.arch + "|" + key.options,
           "cubin of " + c.kernel_name + " in the tuning database '" + path_ + "' is damaged (" +
               std::to_string(bytes) + " bytes, checksum " + checksum + "; stored with " +
               (stored_bytes ? std::to_string(*stored_bytes) : std::string("?")) +
               " bytes, checksum " + *stored_checksum + "): " + outcome +
               "; it will be recompiled");
  return std::nullopt;
}

void Database::put_cubin(const CubinKey& key, const CubinRecord& cubin) {
  writing("store a cubin");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "INSERT OR REPLACE INTO cubins (source_hash, options, arch, nvrtc_version, image, "
              "kernel_name, log, registers, spill_bytes, stack_bytes, static_smem_bytes, "
              "compile_ms, image_bytes, image_checksum, created_at) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " TUNED_NOW ")",
              "store cubin " + cubin.kernel_name);
  s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
  s.bind_blob(5, cubin.image);
  s.bind(6, cubin.kernel_name)
      .bind(7, cubin.log)
      .bind(8, cubin.registers)
      .bind(9, cubin.spill_bytes)
      .bind(10, cubin.stack_bytes)
      .bind(11, cubin.static_smem_bytes)
      .bind(12, cubin.compile_ms)
      .bind(13, static_cast<int64_t>(cubin.image.size()))
      .bind(14, cubin_checksum(cubin.image));
  s.run();
  transaction.commit();
}

void Database::drop_cubin(const CubinKey& key) {
  writing("drop a cubin");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "DELETE FROM cubins WHERE source_hash = ? AND options = ? AND arch = ? AND "
              "nvrtc_version = ?",
              "drop cubin");
  s.bind(1, key.source_hash).bind(2, key.options).bind(3, key.arch).bind(4, key.nvrtc_version);
  s.run();
  transaction.commit();
}

SessionRecord Database::begin_session(const SessionRecord& session) {
  writing("begin a session");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  SessionRecord result = session;
  {
    Statement s(db_, path_,
                "INSERT INTO sessions (device_uuid, op, strategy, budget_s, started_at) "
                "VALUES (?, ?, ?, ?, " TUNED_NOW ")",
                "begin session");
    s.bind(1, session.device_uuid).bind(2, session.op).bind(3, session.strategy);
    s.bind(4, session.budget_s);
    s.run();
    result.id = sqlite3_last_insert_rowid(db_);
  }
  {
    // A random part too: two databases may each begin session 1 on one GPU in the same second.
    static thread_local std::mt19937_64 random(std::random_device{}());
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%016llx", static_cast<unsigned long long>(random()));
    Statement s(
        db_, path_,
        "UPDATE sessions SET origin = " + rows::kSessionIdentity + " || '|' || ? WHERE id = ?",
        "name session");
    s.bind(1, std::string(nonce)).bind(2, result.id);
    s.run();
  }
  Statement s(db_, path_, "SELECT started_at, origin FROM sessions WHERE id = ?", "read session");
  s.bind(1, result.id);
  if (s.step()) {
    result.started_at = s.text(0);
    result.origin = s.text(1);
  }
  transaction.commit();
  return result;
}

void Database::record_trials(const std::vector<TrialRecord>& trials) {
  writing("record trials");
  if (trials.empty()) return;
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Statement s(db_, path_,
              "INSERT INTO trials (session_id, device_uuid, op, layout, shape, d0, d1, d2, "
              "alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, "
              "tflops, rel_error, registers, spill_bytes, compile_ms, template_hash, created_at) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " TUNED_NOW
              ")",
              "record trials");
  for (const TrialRecord& t : trials) {
    s.reset();
    rows::bind_trial(s, t.session_id, t);
    s.run();
  }
  transaction.commit();
}

std::vector<TrialRecord> Database::trials(const Filter& filter) {
  std::vector<TrialRecord> result;
  for_each_trial(filter, [&](const TrialRecord& t) { result.push_back(t); });
  return result;
}

void Database::for_each_trial(const Filter& filter,
                              const std::function<void(const TrialRecord&)>& visit) {
  std::lock_guard lock(mutex_);
  Where where = filter_where(filter, "session_id = ?");
  const std::string columns =
      std::string("SELECT id, session_id, device_uuid, op, layout, shape, alignment, config, "
                  "kernel_name, disposition, message, ms_median, ms_min, runs, tflops, rel_error, "
                  "registers, spill_bytes, compile_ms, created_at, ") +
      (version_ >= 3 ? "template_hash" : "''") + " FROM trials" + where.sql();
  // In id (rowid) order the rows stream with no sort; a limit keeps the most recent rows, listed
  // oldest first.
  const std::string sql = filter.limit > 0 ? "SELECT * FROM (" + columns +
                                                 " ORDER BY id DESC LIMIT " +
                                                 std::to_string(filter.limit) + ") ORDER BY id"
                                           : columns + " ORDER BY id";
  Statement s(db_, path_, sql, "list trials");
  where.bind(s);
  while (s.step()) {
    TrialRecord t;
    try {
      t.key.shape = parse_shape(path_, s.text(5));
      t.disposition = disposition_from_string(s.text(9));
      t.session_id = s.int64(1);
      t.key.device_uuid = s.text(2);
      t.key.op = s.text(3);
      t.key.layout = s.text(4);
      t.key.alignment = s.integer(6);
      t.config = s.text(7);
      t.kernel_name = s.text(8);
      t.message = s.text(10);
      t.ms_median = s.real(11);
      t.ms_min = s.real(12);
      t.runs = s.integer(13);
      t.tflops = s.real(14);
      t.rel_error = s.real(15);
      t.registers = s.integer(16);
      t.spill_bytes = s.integer(17);
      t.compile_ms = s.real(18);
      t.created_at = s.text(19);
      t.template_hash = s.text(20);
    } catch (const Error& e) {
      skip("trials", sqlite3_column_int64(s.handle(), 0), e);
      continue;
    }
    visit(t);
  }
}

std::vector<TrialRecord> Database::measured(const ProblemKey& key,
                                            const std::string& template_hash) {
  std::vector<TrialRecord> result;
  if (version_ < 3 || template_hash.empty()) return result;  // no trial says its template
  std::lock_guard lock(mutex_);
  Statement s(db_, path_,
              "SELECT id, config, disposition, ms_median FROM trials WHERE device_uuid = ? AND "
              "op = ? AND layout = ? AND shape = ? AND alignment = ? AND template_hash = ? "
              "ORDER BY id",
              "list measured configs");
  s.bind(1, key.device_uuid)
      .bind(2, key.op)
      .bind(3, key.layout)
      .bind(4, key.shape_string())
      .bind(5, key.alignment)
      .bind(6, template_hash);
  while (s.step()) {
    TrialRecord t;
    try {
      t.disposition = disposition_from_string(s.text(2));
      t.config = s.text(1);
      t.ms_median = s.real(3);
    } catch (const Error& e) {
      skip("trials", sqlite3_column_int64(s.handle(), 0), e);
      continue;
    }
    t.key = key;
    t.template_hash = template_hash;
    result.push_back(std::move(t));
  }
  return result;
}

std::vector<SessionRecord> Database::sessions(const Filter& filter) {
  std::vector<SessionRecord> result;
  for_each_session(filter, false, [&](const SessionSummary& s) { result.push_back(s.session); });
  return result;
}

bool Database::offer_best(const BestRecord& best) {
  // A NaN or zero time would win every later comparison and pin a bogus entry forever.
  require_argument(std::isfinite(best.ms) && best.ms > 0, "best.ms",
                   "must be a positive, finite time in milliseconds");
  writing("store a best config");
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  const ProblemKey& key = best.key;
  const std::string shape = key.shape_string();
  {
    Statement s(db_, path_,
                "SELECT ms, session_id, template_hash FROM best WHERE device_uuid = ? AND op = ? "
                "AND layout = ? AND shape = ? AND alignment = ?",
                "read best");
    s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.layout).bind(4, shape);
    s.bind(5, key.alignment);
    // A session refines its own record (its best so far, re-timed at the end); another's faster
    // best stays, unless it was measured on another template (never served: any best replaces
    // it, or a template change would pin it there for good).
    if (s.step()) {
      const std::string stored_hash = s.text(2);
      const bool other_template =
          !stored_hash.empty() && !best.template_hash.empty() && stored_hash != best.template_hash;
      if (!other_template && s.real(0) < best.ms &&
          (best.session_id == 0 || s.int64(1) != best.session_id)) {
        return false;  // the guard rolls back the read
      }
    }
  }
  Statement s(db_, path_,
              "INSERT OR REPLACE INTO best (device_uuid, op, layout, shape, d0, d1, d2, "
              "alignment, config, kernel_name, ms, tflops, baseline_ms, session_id, origin, "
              "template_hash, source, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
              "?, ?, ?, ?, " TUNED_NOW ")",
              "store best");
  s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.layout).bind(4, shape);
  bind_dims(s, 5, key.shape);
  s.bind(8, key.alignment)
      .bind(9, best.config)
      .bind(10, best.kernel_name)
      .bind(11, best.ms)
      .bind(12, best.tflops)
      .bind(13, best.baseline_ms)
      .bind_id(14, best.session_id);
  s.bind(15, best.origin).bind(16, best.template_hash).bind(17, best.source);
  s.run();
  transaction.commit();
  return true;
}

std::optional<BestRecord> Database::find_best(const ProblemKey& key,
                                              const std::string& template_hash) {
  std::lock_guard lock(mutex_);
  const std::string of_template = rows::best_template_clause(version_, template_hash);
  Statement s(db_, path_,
              "SELECT " + best_columns(version_) +
                  " FROM best WHERE device_uuid = ? AND op = ? AND layout = ? AND shape = ? "
                  "AND alignment = ?" +
                  of_template,
              "find best");
  s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.layout).bind(4, key.shape_string());
  s.bind(5, key.alignment);
  if (!of_template.empty()) s.bind(6, template_hash);
  if (!s.step()) return std::nullopt;
  try {
    return read_best(s, path_);
  } catch (const Error& e) {
    skip("best", sqlite3_column_int64(s.handle(), 12), e);
    return std::nullopt;
  }
}

std::optional<BestRecord> Database::find_best_on_twin(const ProblemKey& key,
                                                      const DeviceRecord& device,
                                                      const std::string& template_hash) {
  std::lock_guard lock(mutex_);
  const std::string of_template = rows::best_template_clause(version_, template_hash);
  Statement s(db_, path_,
              "SELECT " + best_columns(version_) +
                  " FROM best WHERE device_uuid IN (SELECT uuid FROM devices WHERE uuid <> ? "
                  "AND name = ? AND cc_major = ? AND cc_minor = ? AND sm_count = ?) "
                  "AND op = ? AND layout = ? AND shape = ? AND alignment = ?" +
                  of_template + " ORDER BY ms, updated_at DESC, id DESC",
              "find best of a twin device");
  s.bind(1, device.uuid).bind(2, device.name).bind(3, device.cc_major).bind(4, device.cc_minor);
  s.bind(5, device.sm_count).bind(6, key.op).bind(7, key.layout).bind(8, key.shape_string());
  s.bind(9, key.alignment);
  if (!of_template.empty()) s.bind(10, template_hash);
  while (s.step()) {
    try {
      return read_best(s, path_);
    } catch (const Error& e) {
      skip("best", sqlite3_column_int64(s.handle(), 12), e);  // the next twin's may be readable
    }
  }
  return std::nullopt;
}

std::optional<BestRecord> Database::find_nearest(const ProblemKey& key,
                                                 const std::string& template_hash) {
  std::lock_guard lock(mutex_);
  const std::string of_template = rows::best_template_clause(version_, template_hash);
  Statement s(db_, path_,
              "SELECT " + best_columns(version_) +
                  " FROM best WHERE device_uuid = ? AND op = ? AND layout = ?" + of_template,
              "find nearest best");
  s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.layout);
  if (!of_template.empty()) s.bind(4, template_hash);
  // Rank: alignment tier, then distance, then newest (updated_at, then id within a second).
  // Distances within a rounding error count as equal, so 1000 vs 500 and 2000 tie as they should.
  constexpr double kSameDistance = 1e-9;
  std::optional<BestRecord> chosen;
  int chosen_tier = 0;
  double chosen_distance = 0;
  int64_t chosen_id = 0;
  while (s.step()) {
    const int64_t id = sqlite3_column_int64(s.handle(), 12);
    BestRecord b;
    try {
      b = read_best(s, path_);
    } catch (const Error& e) {
      skip("best", id, e);
      continue;
    }
    int tier = alignment_tier(b.key.alignment, key.alignment);
    double distance = shape_distance(b.key.shape, key.shape);
    bool better;
    if (!chosen || tier != chosen_tier) {
      better = !chosen || tier < chosen_tier;
    } else if (std::fabs(distance - chosen_distance) > kSameDistance) {
      better = distance < chosen_distance;
    } else {
      better = std::tie(b.updated_at, id) > std::tie(chosen->updated_at, chosen_id);
    }
    if (better) {
      chosen = std::move(b);
      chosen_tier = tier;
      chosen_distance = distance;
      chosen_id = id;
    }
  }
  return chosen;
}

std::vector<BestRecord> Database::bests(const Filter& filter) {
  std::vector<BestRecord> result;
  for_each_best(filter, [&](const BestRecord& b) { result.push_back(b); });
  return result;
}

}  // namespace tuned::cache
