// SQLite, the way the tuning database uses it: errors become Error(TUNED_STATUS_DATABASE_ERROR)
// naming the file and a reason a user can act on; prepared statements, transactions. Internal to
// cache/ (database*.cpp).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tuned/error.hpp"

// The current UTC time as SQL text, ISO 8601: the created_at/updated_at columns' format. A macro,
// so that it joins the literal of a statement.
#define TUNED_NOW "strftime('%Y-%m-%dT%H:%M:%SZ','now')"

namespace tuned::cache::sqlite {

[[noreturn]] inline void fail(const std::string& path, const std::string& reason) {
  throw Error(TUNED_STATUS_DATABASE_ERROR, "tuning database '" + path + "': " + reason);
}

inline constexpr const char* kNotADatabase = "file is not a database (corrupt or not a tuned database)";

// A reason a user can act on: SQLite's own text for the common failures is terse. what names the
// step, except for corruption, where the step says nothing useful.
inline std::string describe(sqlite3* db, int rc, const std::string& what) {
  std::string text = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return kNotADatabase;
    case SQLITE_CORRUPT:
      return std::string(kNotADatabase) + ": " + text;
    case SQLITE_READONLY:
      return what + ": " + text + " (the file or its folder is not writable)";
    case SQLITE_CANTOPEN:
      return what + ": " + text + " (the folder is missing or not writable)";
    case SQLITE_FULL:
      return what + ": " + text + " (disk full)";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return what + ": " + text + " (another process held the database locked for longer than " +
             "this open waits)";
    default:
      return what + ": " + text;
  }
}

// Runs SQL text that returns no rows we need (DDL, PRAGMA, BEGIN/COMMIT).
inline void exec(sqlite3* db, const std::string& path, const char* sql, const std::string& what) {
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  sqlite3_free(message);  // sqlite3_errmsg still holds the text
  if (rc != SQLITE_OK) fail(path, describe(db, rc, what));
}

// One prepared statement; parameters are 1-based, columns 0-based, as in SQLite.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql, std::string what)
      : db_(db), path_(path), what_(std::move(what)) {
    int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(path_, describe(db_, rc, what_));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t value) { return check(sqlite3_bind_int64(stmt_, i, value)); }
  Statement& bind(int i, int value) { return bind(i, static_cast<int64_t>(value)); }
  Statement& bind(int i, double value) { return check(sqlite3_bind_double(stmt_, i, value)); }
  Statement& bind(int i, const std::string& value) {
    return check(sqlite3_bind_text(stmt_, i, value.data(), static_cast<int>(value.size()),
                                   SQLITE_TRANSIENT));
  }
  Statement& bind_blob(int i, const std::vector<char>& value) {
    // A null pointer would bind NULL, so an empty image needs its own call.
    if (value.empty()) return check(sqlite3_bind_zeroblob(stmt_, i, 0));
    return check(sqlite3_bind_blob(stmt_, i, value.data(), static_cast<int>(value.size()),
                                   SQLITE_TRANSIENT));
  }
  Statement& bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }
  // 0 means "none" for optional ids (sessions), stored as NULL so foreign keys stay valid.
  Statement& bind_id(int i, int64_t id) { return id == 0 ? bind_null(i) : bind(i, id); }

  /// True while there is a row; false when done; throws on failure.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(path_, describe(db_, rc, what_));
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);  // returns the last step's error, already reported
    sqlite3_clear_bindings(stmt_);
  }

  // Column readers check the stored type: SQLite would turn a text where a number belongs into 0
  // and a number where a text belongs into its digits, so a row written by something else (or
  // damaged) would be read as a plausible record. A wrong type throws Error(DATABASE_ERROR) naming
  // the column; callers skip the row. NULL reads as 0 or "" (optional ids and fields).
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  sqlite3_stmt* handle() const { return stmt_; }  // unchecked reads (a skipped row's id)
  int64_t int64(int col) const {
    expect(col, SQLITE_INTEGER, SQLITE_INTEGER, "an integer");
    return sqlite3_column_int64(stmt_, col);
  }
  int integer(int col) const {
    const int64_t value = int64(col);
    if (value < INT32_MIN || value > INT32_MAX) {
      throw Error(TUNED_STATUS_DATABASE_ERROR,
                  std::string("column ") + sqlite3_column_name(stmt_, col) + " holds " +
                      std::to_string(value) + ", out of range");
    }
    return static_cast<int>(value);
  }
  double real(int col) const {
    expect(col, SQLITE_FLOAT, SQLITE_INTEGER, "a number");
    return sqlite3_column_double(stmt_, col);
  }
  std::string text(int col) const {
    expect(col, SQLITE_TEXT, SQLITE_TEXT, "a text");
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p != nullptr ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
  }
  std::vector<char> blob(int col) const {
    expect(col, SQLITE_BLOB, SQLITE_BLOB, "a blob");
    const char* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    int n = sqlite3_column_bytes(stmt_, col);
    return p != nullptr ? std::vector<char>(p, p + n) : std::vector<char>();
  }

 private:
  void expect(int col, int type, int other_type, const char* wanted) const {
    const int stored = sqlite3_column_type(stmt_, col);
    if (stored == type || stored == other_type || stored == SQLITE_NULL) return;
    static const char* const kNames[] = {"?", "an integer", "a real", "a text", "a blob"};
    throw Error(TUNED_STATUS_DATABASE_ERROR,
                std::string("column ") + sqlite3_column_name(stmt_, col) + " holds " +
                    kNames[stored >= 1 && stored <= 4 ? stored : 0] + " where " + wanted +
                    " belongs");
  }
  Statement& check(int rc) {
    if (rc != SQLITE_OK) fail(path_, describe(db_, rc, what_));
    return *this;
  }

  sqlite3* db_;
  const std::string& path_;
  std::string what_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front, so two writers wait (busy timeout) instead of
// deadlocking on a lock upgrade. Rolls back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db_, path_, "BEGIN IMMEDIATE", "begin transaction");
  }
  ~Transaction() {
    // Never throws; after an error SQLite may already have rolled back, which is fine.
    if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, path_, "COMMIT", "commit");
    committed_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool committed_ = false;
};

inline int query_int(sqlite3* db, const std::string& path, const char* sql) {
  Statement s(db, path, sql, sql);
  return s.step() ? s.integer(0) : 0;
}

}  // namespace tuned::cache::sqlite
