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
#include "cache/database_schema.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using rows::best_columns;
using rows::filter_where;
using rows::parse_shape;
using rows::read_best;
using rows::Where;
using schema::check_identity;
using schema::kSchemaVersion;
using schema::open_schema;
using sqlite::fail;
using sqlite::Statement;
using sqlite::Transaction;

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
  if (path_.empty()) fail(path_, "empty path");
  busy_.path = path_;
  busy_.limit = options.lock_wait;
  // Examined before anything opens it: a named pipe would block the open until a writer came, a
  // device would be read as a database, a symlink loop would fail deep inside SQLite.
  file::check_openable(path_);
  if (access_ == Access::kRead) {
    open_reader();
  } else {
    open_writer(options.upgrade);
  }
}

void Database::wait_for_locks(sqlite3* db) {
  sqlite3_busy_handler(db, wait_for_lock<BusyWait>, &busy_);
}

void Database::open_reader() {
  if (!file::identify(path_).exists) fail(path_, "no such file");
  read_ = file::open_reader(path_, [this](sqlite3* db) { wait_for_locks(db); });
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
                 "): read as it is; the library records nothing in it until 'tunedb --db " + path_ +
                 " upgrade'");
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
}

namespace {

// The folder a writer's file goes in, made where missing.
void make_parent_folder(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  const bool made = fs::create_directories(parent, ec);
  if (ec || !fs::is_directory(parent, ec)) {
    fail(path, "cannot create folder '" + parent.string() +
                   "': " + (ec ? ec.message() : "a file of that name is in the way"));
  }
  // A folder made here is the user's alone whatever the umask (002 makes it group-writable):
  // cubins are loaded only from a folder others cannot write (file::cubin_distrust).
  if (made) fs::permissions(parent, fs::perms::owner_all, ec);
}

}  // namespace

void Database::open_writer(bool upgrade) {
  make_parent_folder(path_);
  if (!file::identify(path_).exists) {
    // Made whole aside, then linked into place: a process starting at the same moment sees no
    // file or a complete one, never an empty file or one without its schema.
    file::create_atomically(path_, [&](sqlite3* db, const std::string& p) {
      wait_for_locks(db);
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
  wait_for_locks(raw);
  // READWRITE silently falls back to read-only for a write-protected file.
  if (sqlite3_db_readonly(raw, "main") == 1) {
    fail(path_, "file is read-only (tuned records trials and needs to write it)");
  }
  file_version_ = check_identity(raw, path_, Access::kWrite);  // before the first write, WAL too
  if (file_version_ < kSchemaVersion && !upgrade) {
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
              std::string("INSERT INTO trials (") + rows::kTrialInsertColumns +
                  ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                  "?, " TUNED_NOW ")",
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
  // Columns a file older than the schema lacks or names otherwise read as it has them.
  const std::string columns =
      "SELECT id, session_id, device_uuid, op, " + rows::variant_column(version_) +
      ", shape, alignment, config, kernel_name, disposition, message, ms_median, ms_min, runs, " +
      rows::rate_column(version_) +
      ", rel_error, registers, spill_bytes, compile_ms, created_at, " +
      (version_ >= 3 ? "template_hash" : "''") + ", " + rows::rate_unit_column(version_) +
      " FROM trials" + where.sql();
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
      t.key.variant = s.text(4);
      t.key.alignment = s.integer(6);
      t.config = s.text(7);
      t.kernel_name = s.text(8);
      t.message = s.text(10);
      t.ms_median = s.real(11);
      t.ms_min = s.real(12);
      t.runs = s.integer(13);
      t.rate = s.real(14);
      t.rel_error = s.real(15);
      t.registers = s.integer(16);
      t.spill_bytes = s.integer(17);
      t.compile_ms = s.real(18);
      t.created_at = s.text(19);
      t.template_hash = s.text(20);
      t.rate_unit = s.text(21);
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
              "op = ? AND " +
                  rows::variant_column(version_) +
                  " = ? AND shape = ? AND alignment = ? AND template_hash = ? ORDER BY id",
              "list measured configs");
  s.bind(1, key.device_uuid)
      .bind(2, key.op)
      .bind(3, key.variant)
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
                "AND variant = ? AND shape = ? AND alignment = ?",
                "read best");
    s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.variant).bind(4, shape);
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
              std::string("INSERT OR REPLACE INTO best (") + rows::kBestInsertColumns +
                  ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " TUNED_NOW ")",
              "store best");
  rows::bind_best(s, best, best.session_id, best.source);
  s.run();
  transaction.commit();
  return true;
}

std::optional<BestRecord> Database::find_best(const ProblemKey& key,
                                              const std::string& template_hash) {
  std::lock_guard lock(mutex_);
  const std::string of_template = rows::best_template_clause(version_, template_hash);
  Statement s(
      db_, path_,
      "SELECT " + best_columns(version_) + " FROM best WHERE device_uuid = ? AND op = ? AND " +
          rows::variant_column(version_) + " = ? AND shape = ? AND alignment = ?" + of_template,
      "find best");
  s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.variant).bind(4, key.shape_string());
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
                  "AND op = ? AND " +
                  rows::variant_column(version_) + " = ? AND shape = ? AND alignment = ?" +
                  of_template + " ORDER BY ms, updated_at DESC, id DESC",
              "find best of a twin device");
  s.bind(1, device.uuid).bind(2, device.name).bind(3, device.cc_major).bind(4, device.cc_minor);
  s.bind(5, device.sm_count).bind(6, key.op).bind(7, key.variant).bind(8, key.shape_string());
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
                  " FROM best WHERE device_uuid = ? AND op = ? AND " +
                  rows::variant_column(version_) + " = ?" + of_template,
              "find nearest best");
  s.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.variant);
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
