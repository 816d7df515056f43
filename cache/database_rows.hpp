// How the tuning database's rows are read and filtered, shared by the lookups (database.cpp) and
// the listings (database_listings.cpp). Internal to cache/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/records.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache::rows {

using sqlite::Statement;

// Shapes are stored twice: the text ("4096x4096x4096") is the exact key and the round-trip
// source for any number of dims; d0..d2 (NULL where missing) serve ordering and queries.
inline std::vector<int64_t> parse_shape(const std::string& path, const std::string& text) {
  auto shape = parse_shape_string(text);
  if (!shape) sqlite::fail(path, "malformed shape '" + text + "' in the database");
  return *shape;
}

// A shape's d0..d2 columns from `first` on (NULL past its rank).
inline void bind_dims(Statement& s, int first, const std::vector<int64_t>& shape) {
  for (int i = 0; i < 3; ++i) {
    if (i < static_cast<int>(shape.size())) {
      s.bind(first + i, shape[i]);
    } else {
      s.bind_null(first + i);
    }
  }
}

// The trials table's columns session_id .. rate_unit (1 to 23) of a trial under `session`: what
// record_trials and a merge insert (created_at, 24, is theirs to give).
inline void bind_trial(Statement& s, int64_t session, const TrialRecord& t) {
  s.bind_id(1, session)
      .bind(2, t.key.device_uuid)
      .bind(3, t.key.op)
      .bind(4, t.key.variant)
      .bind(5, t.key.shape_string());
  bind_dims(s, 6, t.key.shape);
  s.bind(9, t.key.alignment)
      .bind(10, t.config)
      .bind(11, t.kernel_name)
      .bind(12, std::string(to_string(t.disposition)))
      .bind(13, t.message)
      .bind(14, t.ms_median)
      .bind(15, t.ms_min)
      .bind(16, t.runs)
      .bind(17, t.rate)
      .bind(18, t.rel_error)
      .bind(19, t.registers)
      .bind(20, t.spill_bytes)
      .bind(21, t.compile_ms)
      .bind(22, t.template_hash)
      .bind(23, t.rate_unit);
}

// What record_trials and a merge insert into trials, bind_trial's order (a file of this build's
// schema: writers never write an older one).
inline constexpr const char* kTrialInsertColumns =
    "session_id, device_uuid, op, variant, shape, d0, d1, d2, alignment, config, kernel_name, "
    "disposition, message, ms_median, ms_min, runs, rate, rel_error, registers, spill_bytes, "
    "compile_ms, template_hash, rate_unit, created_at";

// The best table's columns device_uuid .. rate_unit (1 to 18) of a best under `session`, from
// `source`: what offer_best and a merge insert (updated_at, 19, is theirs to give).
inline void bind_best(Statement& s, const BestRecord& b, int64_t session,
                      const std::string& source) {
  s.bind(1, b.key.device_uuid).bind(2, b.key.op).bind(3, b.key.variant);
  s.bind(4, b.key.shape_string());
  bind_dims(s, 5, b.key.shape);
  s.bind(8, b.key.alignment)
      .bind(9, b.config)
      .bind(10, b.kernel_name)
      .bind(11, b.ms)
      .bind(12, b.rate)
      .bind(13, b.baseline_ms)
      .bind_id(14, session)
      .bind(15, to_string(b.origin))
      .bind(16, b.template_hash)
      .bind(17, source)
      .bind(18, b.rate_unit);
}

// What offer_best and a merge insert into best, bind_best's order.
inline constexpr const char* kBestInsertColumns =
    "device_uuid, op, variant, shape, d0, d1, d2, alignment, config, kernel_name, ms, rate, "
    "baseline_ms, session_id, origin, template_hash, source, rate_unit, updated_at";

// A row this build cannot read is left out of listings and lookups, named once in the log.
inline void skip_row(const std::string& path, const char* table, int64_t id, const Error& e) {
  log_once(LogLevel::kWarn, "malformed row|" + path + "|" + table + "|" + std::to_string(id),
           "tuning database '" + path + "': " + table + " row " + std::to_string(id) +
               " skipped: " + e.what());
}

// Columns renamed in schema version 5, as a file read as it is names them: `variant` was
// `layout`, `rate` was `tflops`, and rate_unit did not exist (unknown: '').
inline std::string variant_column(int version) { return version >= 5 ? "variant" : "layout"; }
inline std::string rate_column(int version) { return version >= 5 ? "rate" : "tflops"; }
inline std::string rate_unit_column(int version) { return version >= 5 ? "rate_unit" : "''"; }

// The best table's columns as read_best reads them; a file of schema version 1 has no origin
// (every row of it came from autotune), one older than 4 no template hash (unknown) and no source
// (measured there), one older than 5 no rate unit (unknown).
inline std::string best_columns(int version) {
  return "device_uuid, op, " + variant_column(version) +
         ", shape, alignment, config, kernel_name, ms, " + rate_column(version) +
         ", baseline_ms, session_id, updated_at, id, " + (version >= 2 ? "origin" : "'autotune'") +
         (version >= 4 ? ", template_hash, source" : ", '', ''") + ", " + rate_unit_column(version);
}

// A best measured on another template is no answer for serving: rows of the given hash, or rows
// that name none (older than schema version 4). Binds nothing where no hash is asked for.
inline std::string best_template_clause(int version, const std::string& template_hash) {
  return version >= 4 && !template_hash.empty() ? " AND template_hash IN ('', ?)" : "";
}

// Who a session is across databases (SessionRecord::origin), as SQL over its own row: what
// begin_session stores (followed by a random part), and what a session begun before schema
// version 4 is (migrated or read as).
inline const std::string kSessionIdentity = "device_uuid || '|' || started_at || '|' || id";
inline std::string session_origin_column(int version) {
  return version >= 4 ? "CASE WHEN origin = '' THEN " + kSessionIdentity + " ELSE origin END"
                      : kSessionIdentity;
}

inline BestRecord read_best(const Statement& s, const std::string& path) {
  BestRecord b;
  b.key.device_uuid = s.text(0);
  b.key.op = s.text(1);
  b.key.variant = s.text(2);
  b.key.shape = parse_shape(path, s.text(3));
  b.key.alignment = s.integer(4);
  b.config = s.text(5);
  b.kernel_name = s.text(6);
  b.ms = s.real(7);
  b.rate = s.real(8);
  b.baseline_ms = s.real(9);
  b.session_id = s.int64(10);
  b.updated_at = s.text(11);
  b.origin = best_origin_from_string(s.text(13));
  b.template_hash = s.text(14);
  b.source = s.text(15);
  b.rate_unit = s.text(16);
  return b;
}

// Appends "AND column = ?" for each set field of the filter and binds them in the same order.
class Where {
 public:
  void add(const char* clause, std::function<void(Statement&, int)> binder) {
    sql_ += sql_.empty() ? " WHERE " : " AND ";
    sql_ += clause;
    binders_.push_back(std::move(binder));
  }
  const std::string& sql() const { return sql_; }
  int bind(Statement& s) const {
    int i = 1;
    for (const auto& binder : binders_) binder(s, i++);
    return i;
  }

 private:
  std::string sql_;
  std::vector<std::function<void(Statement&, int)>> binders_;
};

inline Where filter_where(const Filter& filter, const char* session_column) {
  Where where;
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

}  // namespace tuned::cache::rows
