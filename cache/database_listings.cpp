// Listings that stream: rows handed to a visitor one at a time, counts made by SQL, so that what
// tunedb holds does not grow with the database (a million trials, a best per distinct shape).
#include <sqlite3.h>

#include <functional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/database_rows.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using rows::filter_where;
using rows::read_best;
using rows::Where;
using sqlite::Statement;

}  // namespace

void Database::for_each_session(const Filter& filter, bool count_trials,
                                const std::function<void(const SessionSummary&)>& visit) {
  std::lock_guard lock(mutex_);
  const Where where = filter_where(filter, "id = ?");
  // The latest sessions (a limit keeps the most recent), listed oldest first; each one's trials
  // counted through the index on trials.session_id, and its ok ones summed, for that row only.
  std::string latest = "SELECT id, device_uuid, op, strategy, budget_s, started_at, " +
                       rows::session_origin_column(version_) + " AS origin FROM sessions" +
                       where.sql() + " ORDER BY id DESC";
  if (filter.limit > 0) latest += " LIMIT " + std::to_string(filter.limit);
  const std::string sql =
      "SELECT id, device_uuid, op, strategy, budget_s, started_at, origin, " +
      std::string(count_trials ? "(SELECT COUNT(*) FROM trials WHERE trials.session_id = s.id), "
                                 "(SELECT COALESCE(SUM(disposition = 'ok'), 0) FROM trials "
                                 "WHERE trials.session_id = s.id)"
                               : "0, 0") +
      " FROM (" + latest + ") AS s ORDER BY id";
  Statement s(db_, path_, sql, "list sessions");
  where.bind(s);
  while (s.step()) {
    SessionSummary summary;
    SessionRecord& r = summary.session;
    try {
      r.id = s.int64(0);
      r.device_uuid = s.text(1);
      r.op = s.text(2);
      r.strategy = s.text(3);
      r.budget_s = s.real(4);
      r.started_at = s.text(5);
      r.origin = s.text(6);
      summary.trials = s.int64(7);
      summary.ok = s.int64(8);
    } catch (const Error& e) {
      skip("sessions", sqlite3_column_int64(s.handle(), 0), e);
      continue;
    }
    visit(summary);
  }
}

void Database::for_each_best(const Filter& filter,
                             const std::function<void(const BestRecord&)>& visit) {
  std::lock_guard lock(mutex_);
  const Where where = filter_where(filter, "session_id = ?");
  std::string sql = "SELECT " + rows::best_columns(version_) + " FROM best" + where.sql() +
                    " ORDER BY device_uuid, op, " + rows::variant_column(version_) +
                    ", d0, d1, d2, shape, alignment";
  if (filter.limit > 0) sql += " LIMIT " + std::to_string(filter.limit);
  Statement s(db_, path_, sql, "list best configurations");
  where.bind(s);
  while (s.step()) {
    BestRecord b;
    try {
      b = read_best(s, path_);
    } catch (const Error& e) {
      skip("best", sqlite3_column_int64(s.handle(), 12), e);
      continue;
    }
    visit(b);
  }
}

int64_t Database::cubin_count() {
  std::lock_guard lock(mutex_);
  Statement s(db_, path_, "SELECT count(*) FROM cubins", "count cubins");
  return s.step() ? s.int64(0) : 0;
}

std::vector<std::pair<std::string, int64_t>> Database::row_counts() {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, int64_t>> counts;
  Statement tables(db_, path_,
                   "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                   "'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                   "list tables");
  while (tables.step()) counts.emplace_back(tables.text(0), 0);
  for (auto& [name, rows] : counts) {
    // The name comes from the file: quoted as an SQL identifier.
    std::string quoted = "\"";
    for (char c : name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    Statement count(db_, path_, "SELECT count(*) FROM " + quoted + "\"", "count rows");
    rows = count.step() ? count.int64(0) : 0;
  }
  return counts;
}

void Database::for_each_cubin(const std::function<void(const StoredCubin&)>& visit) {
  std::lock_guard lock(mutex_);
  Statement s(db_, path_,
              std::string("SELECT rowid, source_hash, options, arch, nvrtc_version, image, "
                          "kernel_name, log, registers, spill_bytes, stack_bytes, "
                          "static_smem_bytes, compile_ms, ") +
                  (version_ >= 2 ? "image_checksum" : "NULL") + " FROM cubins ORDER BY rowid",
              "list cubins");
  while (s.step()) {
    StoredCubin c;
    try {
      c.key.source_hash = s.text(1);
      c.key.options = s.text(2);
      c.key.arch = s.text(3);
      c.key.nvrtc_version = s.text(4);
      c.cubin.image = s.blob(5);
      c.cubin.kernel_name = s.text(6);
      c.cubin.log = s.text(7);
      c.cubin.registers = s.integer(8);
      c.cubin.spill_bytes = s.integer(9);
      c.cubin.stack_bytes = s.integer(10);
      c.cubin.static_smem_bytes = s.integer(11);
      c.cubin.compile_ms = s.real(12);
      c.checksum = s.text(13);
    } catch (const Error& e) {
      skip("cubins", sqlite3_column_int64(s.handle(), 0), e);
      continue;
    }
    visit(c);
  }
}

}  // namespace tuned::cache
