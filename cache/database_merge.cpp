// Database::merge: another database's or a portable file's rows brought into this one in one
// transaction (cache/merge.hpp), so that a failure leaves this database as it was, and a second
// merge of the same source adds nothing.
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>

#include "cache/database.hpp"
#include "cache/database_rows.hpp"
#include "cache/sqlite_statement.hpp"
#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using sqlite::Statement;
using sqlite::Transaction;

std::string describe_key(const ProblemKey& key) {
  return key.op + " " + key.variant + " " + key.shape_string() + " align " +
         std::to_string(key.alignment) + " of " + key.device_uuid;
}

// One merge's work, table by table, inside the caller's transaction.
struct Merger {
  sqlite3* db;
  const std::string& path;
  MergeSource& source;
  const MergeOptions& options;
  const std::string from;  // the source's label
  MergeReport report;
  std::map<std::string, DeviceRecord> devices;  // ours, then the source's, by uuid
  std::map<int64_t, int64_t> session_ids;       // the source's id -> ours
  std::set<int64_t> new_sessions;               // ours, made by this merge: their trials are new

  int64_t our_session(int64_t theirs) const {
    const auto it = session_ids.find(theirs);
    return it != session_ids.end() ? it->second : 0;  // none, or one the source could not read
  }

  // Devices: a uuid is one physical GPU; the row here stays as it is.
  void merge_devices() {
    {
      Statement s(db, path,
                  "SELECT uuid, name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz FROM "
                  "devices",
                  "list devices");
      while (s.step()) {
        try {
          DeviceRecord d{s.text(0),    s.text(1),  s.integer(2), s.integer(3),
                         s.integer(4), s.int64(5), s.integer(6)};
          devices.emplace(d.uuid, d);
        } catch (const Error&) {  // a malformed row here: the source's may replace nothing of it
        }
      }
    }
    {
      Statement insert(db, path,
                       "INSERT OR IGNORE INTO devices (uuid, name, cc_major, cc_minor, sm_count, "
                       "memory_bytes, clock_khz, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, "
                       "?, " TUNED_NOW ", " TUNED_NOW ")",
                       "merge device");
      for (const DeviceRecord& d : source.devices()) {
        if (devices.count(d.uuid) != 0) {
          ++report.devices_present;
          continue;
        }
        insert.reset();
        insert.bind(1, d.uuid).bind(2, d.name).bind(3, d.cc_major).bind(4, d.cc_minor);
        insert.bind(5, d.sm_count).bind(6, d.memory_bytes).bind(7, d.clock_khz);
        insert.run();
        report.devices_added += sqlite3_changes(db);
        report.devices_present += 1 - sqlite3_changes(db);  // a row here this build cannot read
        devices.emplace(d.uuid, d);
      }
    }
  }

  // Sessions: found by who they are (SessionRecord::origin), else copied under a new id.
  void merge_sessions() {
    Statement find(db, path, "SELECT id FROM sessions WHERE origin = ? ORDER BY id LIMIT 1",
                   "find merged session");
    Statement insert(db, path,
                     "INSERT INTO sessions (device_uuid, op, strategy, budget_s, started_at, "
                     "origin) VALUES (?, ?, ?, ?, ?, ?)",
                     "merge session");
    source.for_each_session([&](const SessionRecord& session) {
      find.reset();
      find.bind(1, session.origin);
      if (find.step()) {
        session_ids[session.id] = find.int64(0);
        ++report.sessions_present;
        return;
      }
      insert.reset();
      insert.bind(1, session.device_uuid).bind(2, session.op).bind(3, session.strategy);
      insert.bind(4, session.budget_s).bind(5, session.started_at).bind(6, session.origin);
      insert.run();
      const int64_t id = sqlite3_last_insert_rowid(db);
      session_ids[session.id] = id;
      new_sessions.insert(id);
      ++report.sessions_added;
    });
    report.sessions_malformed = source.skipped("sessions");
  }

  // Trials: appended, unless the same measurement is already here (same key, config, template,
  // disposition, time, creation and session): only possible in a session found above.
  void merge_trials() {
    Statement find(db, path,
                   "SELECT 1 FROM trials WHERE device_uuid = ? AND op = ? AND variant = ? AND "
                   "shape = ? AND alignment = ? AND config = ? AND template_hash = ? AND "
                   "disposition = ? AND ms_median = ? AND created_at = ? AND session_id IS ? "
                   "LIMIT 1",
                   "find merged trial");
    Statement insert(db, path,
                     std::string("INSERT INTO trials (") + rows::kTrialInsertColumns +
                         ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?, ?)",
                     "merge trial");
    source.for_each_trial([&](const TrialRecord& t) {
      const int64_t session = our_session(t.session_id);
      const std::string shape = t.key.shape_string();
      const std::string disposition = to_string(t.disposition);
      if (new_sessions.count(session) == 0) {
        find.reset();
        find.bind(1, t.key.device_uuid).bind(2, t.key.op).bind(3, t.key.variant).bind(4, shape);
        find.bind(5, t.key.alignment).bind(6, t.config).bind(7, t.template_hash);
        find.bind(8, disposition).bind(9, t.ms_median).bind(10, t.created_at);
        find.bind_id(11, session);
        if (find.step()) {
          ++report.trials_present;
          return;
        }
      }
      insert.reset();
      rows::bind_trial(insert, session, t);
      insert.bind(24, t.created_at);
      insert.run();
      ++report.trials_added;
    });
    report.trials_malformed = source.skipped("trials");
  }

  // Bests: per key the faster, where both were measured on the same template (or either names
  // none); else the one measured on the template this build compiles, whatever the times.
  void merge_bests() {
    Statement find(db, path,
                   "SELECT ms, template_hash FROM best WHERE device_uuid = ? AND op = ? AND "
                   "variant = ? AND shape = ? AND alignment = ?",
                   "read best");
    Statement insert(db, path,
                     std::string("INSERT OR REPLACE INTO best (") + rows::kBestInsertColumns +
                         ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "COALESCE(NULLIF(?, ''), " TUNED_NOW "))",
                     "merge best");
    source.for_each_best([&](const BestRecord& best) {
      const ProblemKey& key = best.key;
      auto refuse = [&](const std::string& why) {
        ++report.bests_refused;
        log_once(LogLevel::kWarn, "merge refused|" + path + "|" + from + "|" + describe_key(key),
                 "best of " + describe_key(key) + " from " + from + " not taken: " + why);
      };
      if (!(std::isfinite(best.ms) && best.ms > 0)) {
        refuse("its time must be a positive, finite number of milliseconds");
        return;
      }
      BestVerdict verdict;
      if (options.check_best) {
        const auto device = devices.find(key.device_uuid);
        verdict = options.check_best(best, device != devices.end() ? &device->second : nullptr);
      }
      if (!verdict.refusal.empty()) {
        refuse("config " + best.config + ": " + verdict.refusal);
        return;
      }
      auto current = [&](const std::string& hash) {
        return hash.empty() || verdict.template_hash.empty() || hash == verdict.template_hash;
      };
      const std::string shape = key.shape_string();
      find.reset();
      find.bind(1, key.device_uuid).bind(2, key.op).bind(3, key.variant).bind(4, shape);
      find.bind(5, key.alignment);
      if (find.step()) {
        const bool theirs_current = current(best.template_hash);
        const bool ours_current = current(find.text(1));
        const bool take = theirs_current != ours_current ? theirs_current : best.ms < find.real(0);
        if (!take) {
          ++report.bests_kept;
          return;
        }
      }
      insert.reset();
      rows::bind_best(insert, best, our_session(best.session_id),
                      best.source.empty() ? from : best.source);
      insert.bind(19, best.updated_at);
      insert.run();
      ++report.bests_taken;
    });
    report.bests_malformed = source.skipped("best");
  }

  // Cubins: only when asked, each verified against the checksum it was stored with.
  void merge_cubins() {
    if (!options.with_cubins) {
      report.cubins_not_asked = source.cubin_count();
    } else {
      Statement insert(db, path,
                       "INSERT OR IGNORE INTO cubins (source_hash, options, arch, nvrtc_version, "
                       "image, kernel_name, log, registers, spill_bytes, stack_bytes, "
                       "static_smem_bytes, compile_ms, image_bytes, image_checksum, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " TUNED_NOW ")",
                       "merge cubin");
      source.for_each_cubin([&](const StoredCubin& c) {
        const std::string checksum = cubin_checksum(c.cubin.image);
        if (c.checksum != checksum) {
          ++report.cubins_refused;
          log_once(LogLevel::kWarn,
                   "merge cubin refused|" + path + "|" + from + "|" + c.key.source_hash + "|" +
                       c.key.arch + "|" + c.key.options,
                   "cubin of " + c.cubin.kernel_name + " (" + c.key.arch + ") from " + from +
                       " not taken: " +
                       (c.checksum.empty() ? std::string("it was stored without a checksum")
                                           : "its checksum " + checksum +
                                                 " is not the one stored with it, " + c.checksum));
          return;
        }
        insert.reset();
        insert.bind(1, c.key.source_hash)
            .bind(2, c.key.options)
            .bind(3, c.key.arch)
            .bind(4, c.key.nvrtc_version);
        insert.bind_blob(5, c.cubin.image);
        insert.bind(6, c.cubin.kernel_name)
            .bind(7, c.cubin.log)
            .bind(8, c.cubin.registers)
            .bind(9, c.cubin.spill_bytes)
            .bind(10, c.cubin.stack_bytes)
            .bind(11, c.cubin.static_smem_bytes)
            .bind(12, c.cubin.compile_ms)
            .bind(13, static_cast<int64_t>(c.cubin.image.size()))
            .bind(14, checksum);
        insert.run();
        if (sqlite3_changes(db) == 1) {
          ++report.cubins_added;
        } else {
          ++report.cubins_present;
        }
      });
      report.cubins_refused += source.skipped("cubins");
    }
  }
};

}  // namespace

MergeReport Database::merge(MergeSource& source, const MergeOptions& options) {
  writing("merge another database into it");
  if (const std::string other = source.file_path(); !other.empty()) {
    std::error_code ec;
    if (std::filesystem::equivalent(other, path_, ec)) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "tuning database '" + path_ + "': cannot merge a database into itself");
    }
  }
  std::lock_guard lock(mutex_);
  Transaction transaction(db_, path_);
  Merger merger{db_, path_, source, options, source.label(), {}, {}, {}, {}};
  merger.merge_devices();
  merger.merge_sessions();
  merger.merge_trials();
  merger.merge_bests();
  merger.merge_cubins();
  transaction.commit();
  return merger.report;
}

// ----- a database as a merge's source ----------------------------------------------------------

DatabaseSource::DatabaseSource(Database& db, std::string label)
    : db_(db), label_(std::move(label)) {}

std::vector<DeviceRecord> DatabaseSource::devices() { return db_.devices(); }

void DatabaseSource::for_each_session(const std::function<void(const SessionRecord&)>& visit) {
  db_.for_each_session({}, false, [&](const Database::SessionSummary& s) { visit(s.session); });
}

void DatabaseSource::for_each_trial(const std::function<void(const TrialRecord&)>& visit) {
  db_.for_each_trial({}, visit);
}

void DatabaseSource::for_each_best(const std::function<void(const BestRecord&)>& visit) {
  db_.for_each_best({}, visit);
}

void DatabaseSource::for_each_cubin(const std::function<void(const StoredCubin&)>& visit) {
  db_.for_each_cubin(visit);
}

int64_t DatabaseSource::cubin_count() { return db_.cubin_count(); }

int64_t DatabaseSource::skipped(const std::string& table) const { return db_.skipped(table); }

}  // namespace tuned::cache
