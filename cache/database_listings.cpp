// Listings that stream: rows handed to a visitor one at a time, counts made by SQL, so that what
// tunedb holds does not grow with the database (a million trials, a best per distinct shape).
#include <sqlite3.h>

#include <functional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/sqlite_statement.hpp"
#include "generator/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using sqlite::Statement;

// A row this build cannot read is left out of the listing, named once in the log (the same key as
// database.cpp's, so a listing run twice warns once).
void skip_listed_row(const std::string& path, const char* table, int64_t id, const Error& e) {
  log_once(LogLevel::kWarn, "malformed row|" + path + "|" + table + "|" + std::to_string(id),
           "tuning database '" + path + "': " + table + " row " + std::to_string(id) +
               " skipped: " + e.what());
}

// "column = ?" for each set field of the filter, bound in the same order (as database.cpp's).
struct FilterClause {
  std::string sql;  // "" or " WHERE ... AND ..."
  std::vector<std::function<void(Statement&, int)>> binders;

  void add(const char* clause, std::function<void(Statement&, int)> binder) {
    sql += sql.empty() ? " WHERE " : " AND ";
    sql += clause;
    binders.push_back(std::move(binder));
  }
  void bind(Statement& s) const {
    int i = 1;
    for (const auto& binder : binders) binder(s, i++);
  }
};

FilterClause filter_clause(const Filter& filter, const char* session_column) {
  FilterClause where;
  if (!filter.device_uuid.empty()) {
    where.add("device_uuid = ?", [&](Statement& s, int i) { s.bind(i, filter.device_uuid); });
  }
  if (!filter.op.empty()) {
    where.add("op = ?", [&](Statement& s, int i) { s.bind(i, filter.op); });
  }
  if (filter.session_id != 0) {
    where.add(session_column, [&](Statement& s, int i) { s.bind(i, filter.session_id); });
  }
  return where;
}

}  // namespace

void Database::for_each_session(const Filter& filter, bool count_trials,
                                const std::function<void(const SessionSummary&)>& visit) {
  std::lock_guard lock(mutex_);
  const FilterClause where = filter_clause(filter, "id = ?");
  // The latest sessions (a limit keeps the most recent), listed oldest first; each one's trials
  // counted through the index on trials.session_id, and its ok ones summed, for that row only.
  std::string latest = "SELECT id, device_uuid, op, strategy, budget_s, started_at FROM sessions" +
                       where.sql + " ORDER BY id DESC";
  if (filter.limit > 0) latest += " LIMIT " + std::to_string(filter.limit);
  const std::string sql =
      "SELECT id, device_uuid, op, strategy, budget_s, started_at, " +
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
      summary.trials = s.int64(6);
      summary.ok = s.int64(7);
    } catch (const Error& e) {
      skip_listed_row(path_, "sessions", r.id, e);  // id: the rowid, always an integer
      continue;
    }
    visit(summary);
  }
}

void Database::for_each_best(const Filter& filter,
                             const std::function<void(const BestRecord&)>& visit) {
  std::lock_guard lock(mutex_);
  const FilterClause where = filter_clause(filter, "session_id = ?");
  // origin came with schema version 2; older rows were all measured by autotune.
  std::string sql =
      "SELECT id, device_uuid, op, layout, shape, alignment, config, kernel_name, ms, tflops, "
      "baseline_ms, session_id, updated_at, " +
      std::string(version_ >= 2 ? "origin" : "'autotune'") + " FROM best" + where.sql +
      " ORDER BY device_uuid, op, layout, d0, d1, d2, shape, alignment";
  if (filter.limit > 0) sql += " LIMIT " + std::to_string(filter.limit);
  Statement s(db_, path_, sql, "list best configurations");
  where.bind(s);
  while (s.step()) {
    BestRecord b;
    int64_t id = 0;
    try {
      id = s.int64(0);
      b.key.device_uuid = s.text(1);
      b.key.op = s.text(2);
      b.key.layout = s.text(3);
      const std::string shape = s.text(4);
      auto dims = parse_shape_string(shape);
      if (!dims) {
        throw Error(TUNED_STATUS_DATABASE_ERROR, "malformed shape '" + shape + "' in the database");
      }
      b.key.shape = *dims;
      b.key.alignment = s.integer(5);
      b.config = s.text(6);
      b.kernel_name = s.text(7);
      b.ms = s.real(8);
      b.tflops = s.real(9);
      b.baseline_ms = s.real(10);
      b.session_id = s.int64(11);
      b.updated_at = s.text(12);
      b.origin = s.text(13);
    } catch (const Error& e) {
      skip_listed_row(path_, "best", id, e);
      continue;
    }
    visit(b);
  }
}

}  // namespace tuned::cache
