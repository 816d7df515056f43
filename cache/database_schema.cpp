// The schema's history: version 1 as it was created, then one step per later version. The steps
// stay as they were written (a file of any version is brought up by the same steps in order).
#include "cache/database_schema.hpp"

#include <sqlite3.h>

#include <string>

#include "cache/sqlite_statement.hpp"

namespace tuned::cache::schema {
namespace {

using sqlite::exec;
using sqlite::fail;
using sqlite::query_int;
using sqlite::Transaction;

// PRAGMA application_id marks the file as ours ("tund"), so a foreign SQLite file is refused.
constexpr int kApplicationId = 0x74756e64;

// Version 1's devices and cubins.
void create_devices_and_cubins(sqlite3* db, const std::string& path) {
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
  )sql",
       "create schema version 1");
}

// Version 1's sessions and their trials.
void create_sessions_and_trials(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
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
  )sql",
       "create schema version 1");
}

// Version 1's best configs.
void create_best(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
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

// Step 0 -> 1. Each step runs inside the opening transaction.
void migrate_to_1(sqlite3* db, const std::string& path) {
  create_devices_and_cubins(db, path);
  create_sessions_and_trials(db, path);
  create_best(db, path);
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

// Step 4 -> 5. Columns named for what they hold, in every op: `layout` holds the op's variant
// (a gemm layout, a transpose's or entropy's own word) and `tflops` the op's rate in its unit,
// which `rate_unit` now names ("TFLOP/s", "GB/s"; '' in older rows: unknown). The indexes and the
// UNIQUE constraint follow the renames (SQLite 3.25).
void migrate_to_5(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
    ALTER TABLE trials RENAME COLUMN layout TO variant;
    ALTER TABLE trials RENAME COLUMN tflops TO rate;
    ALTER TABLE trials ADD COLUMN rate_unit TEXT NOT NULL DEFAULT '';
    ALTER TABLE best RENAME COLUMN layout TO variant;
    ALTER TABLE best RENAME COLUMN tflops TO rate;
    ALTER TABLE best ADD COLUMN rate_unit TEXT NOT NULL DEFAULT '';
  )sql",
       "migrate schema to version 5");
}

using Migration = void (*)(sqlite3*, const std::string&);
constexpr Migration kMigrations[kSchemaVersion] = {migrate_to_1, migrate_to_2, migrate_to_3,
                                                   migrate_to_4, migrate_to_5};

}  // namespace

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

}  // namespace tuned::cache::schema
