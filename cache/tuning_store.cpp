#include "cache/tuning_store.hpp"

#include <map>
#include <set>

#include "cache/database.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

using store::Connection;
using store::Params;
using store::Row;

constexpr int kStoreSchemaVersion = 1;
// pg_advisory_xact_lock's key for migrations ("tund").
constexpr int64_t kMigrationLock = 0x74756e64;

// Version 1: the records, then the queue (cache/store_queue.cpp reads and writes those tables).
void migrate_to_1(Connection& c) {
  c.exec(R"sql(
    CREATE TABLE tuned.devices (
      uuid text PRIMARY KEY,
      name text NOT NULL,
      cc_major integer NOT NULL,
      cc_minor integer NOT NULL,
      sm_count integer NOT NULL,
      memory_bytes bigint NOT NULL,
      clock_khz integer NOT NULL,
      first_seen timestamptz NOT NULL DEFAULT now(),
      last_seen timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE tuned.sessions (
      id bigserial PRIMARY KEY,
      origin text NOT NULL UNIQUE,
      device_uuid text NOT NULL REFERENCES tuned.devices (uuid),
      op text NOT NULL,
      strategy text NOT NULL,
      budget_s double precision NOT NULL,
      started_at text NOT NULL,
      node text NOT NULL DEFAULT ''
    );
    -- A session measures a config of a problem once: that is what makes a trial sent twice one.
    CREATE TABLE tuned.trials (
      id bigserial PRIMARY KEY,
      session_id bigint NOT NULL REFERENCES tuned.sessions (id),
      device_uuid text NOT NULL REFERENCES tuned.devices (uuid),
      op text NOT NULL,
      variant text NOT NULL,
      shape text NOT NULL,
      alignment integer NOT NULL,
      config text NOT NULL,
      kernel_name text NOT NULL,
      disposition text NOT NULL,
      message text NOT NULL,
      ms_median double precision NOT NULL,
      ms_min double precision NOT NULL,
      runs integer NOT NULL,
      rate double precision NOT NULL,
      rate_unit text NOT NULL,
      rel_error double precision NOT NULL,
      registers integer NOT NULL,
      spill_bytes integer NOT NULL,
      compile_ms double precision NOT NULL,
      template_hash text NOT NULL,
      created_at text NOT NULL,
      stored_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (session_id, op, variant, shape, alignment, config, template_hash)
    );
    CREATE INDEX trials_by_problem ON tuned.trials (op, variant, shape, alignment, template_hash);
    -- One best per GPU model, problem and template.
    CREATE TABLE tuned.bests (
      id bigserial PRIMARY KEY,
      device_name text NOT NULL,
      cc_major integer NOT NULL,
      cc_minor integer NOT NULL,
      sm_count integer NOT NULL,
      op text NOT NULL,
      variant text NOT NULL,
      shape text NOT NULL,
      alignment integer NOT NULL,
      template_hash text NOT NULL,
      config text NOT NULL,
      kernel_name text NOT NULL,
      ms double precision NOT NULL CHECK (ms > 0),
      rate double precision NOT NULL,
      rate_unit text NOT NULL,
      baseline_ms double precision NOT NULL,
      device_uuid text NOT NULL REFERENCES tuned.devices (uuid),
      session_origin text NOT NULL,
      origin text NOT NULL,
      source text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (device_name, cc_major, cc_minor, sm_count, op, variant, shape, alignment,
              template_hash)
    );
    CREATE TABLE tuned.tasks (
      id bigserial PRIMARY KEY,
      op text NOT NULL,
      variant text NOT NULL,
      shape text NOT NULL,
      alignment integer NOT NULL,
      device_model text NOT NULL,
      seed bigint NOT NULL,
      strategy text NOT NULL,
      budget_s double precision NOT NULL,
      max_trials integer NOT NULL,
      patience integer NOT NULL,
      remeasure boolean NOT NULL,
      state text NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
      token text NOT NULL DEFAULT '',
      node text NOT NULL DEFAULT '',
      pid bigint NOT NULL DEFAULT 0,
      gpu integer NOT NULL DEFAULT -1,
      gpu_name text NOT NULL DEFAULT '',
      attempts integer NOT NULL DEFAULT 0,
      claimed_at timestamptz,
      lease_until timestamptz,
      ended_at timestamptz,
      note text NOT NULL DEFAULT '',
      enqueued_at timestamptz NOT NULL DEFAULT now()
    );
    -- A problem is queued or running once per GPU model at a time.
    CREATE UNIQUE INDEX tasks_unfinished ON tuned.tasks (op, variant, shape, alignment, device_model)
      WHERE state IN ('queued', 'running');
    CREATE INDEX tasks_by_state ON tuned.tasks (state, id);
    -- Every claim of a task and how it ended: 'done', 'failed', 'released', 'expired' (its lease
    -- ran out and another claimed the task), NULL while held.
    CREATE TABLE tuned.task_claims (
      task_id bigint NOT NULL REFERENCES tuned.tasks (id),
      token text PRIMARY KEY,
      node text NOT NULL,
      pid bigint NOT NULL,
      gpu integer NOT NULL,
      gpu_name text NOT NULL,
      claimed_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz,
      result text
    );
    CREATE INDEX task_claims_by_task ON tuned.task_claims (task_id);
  )sql",
         {}, "create store schema version 1");
}

using Migration = void (*)(Connection&);
constexpr Migration kMigrations[kStoreSchemaVersion] = {migrate_to_1};

std::string key_text(const ProblemKey& key) {
  return key.op + " " + key.variant + " " + key.shape_string() + " align " +
         std::to_string(key.alignment);
}

Params& add_trial(Params& p, int64_t session, const TrialRecord& t) {
  p.add(session).add(t.key.device_uuid).add(t.key.op).add(t.key.variant);
  p.add(t.key.shape_string()).add(t.key.alignment).add(t.config).add(t.kernel_name);
  p.add(to_string(t.disposition)).add(t.message).add(t.ms_median).add(t.ms_min).add(t.runs);
  p.add(t.rate).add(t.rate_unit).add(t.rel_error).add(t.registers).add(t.spill_bytes);
  p.add(t.compile_ms).add(t.template_hash).add(t.created_at);
  return p;
}

const char* kInsertTrial =
    "INSERT INTO tuned.trials (session_id, device_uuid, op, variant, shape, alignment, config, "
    "kernel_name, disposition, message, ms_median, ms_min, runs, rate, rate_unit, rel_error, "
    "registers, spill_bytes, compile_ms, template_hash, created_at) VALUES ($1, $2, $3, $4, $5, "
    "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21) "
    "ON CONFLICT DO NOTHING";

// Keeps the faster best: the row is replaced by a strictly faster one, or by its own session's
// re-timed best (as a database keeps it: the time beside the baseline at the end of the session).
const char* kOfferBest =
    "INSERT INTO tuned.bests (device_name, cc_major, cc_minor, sm_count, op, variant, shape, "
    "alignment, template_hash, config, kernel_name, ms, rate, rate_unit, baseline_ms, "
    "device_uuid, session_origin, origin, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
    "$11, $12, $13, $14, $15, $16, $17, $18, $19) "
    "ON CONFLICT (device_name, cc_major, cc_minor, sm_count, op, variant, shape, alignment, "
    "template_hash) DO UPDATE SET config = EXCLUDED.config, kernel_name = EXCLUDED.kernel_name, "
    "ms = EXCLUDED.ms, rate = EXCLUDED.rate, rate_unit = EXCLUDED.rate_unit, baseline_ms = "
    "EXCLUDED.baseline_ms, device_uuid = EXCLUDED.device_uuid, session_origin = "
    "EXCLUDED.session_origin, origin = EXCLUDED.origin, source = EXCLUDED.source, updated_at = "
    "now() WHERE tuned.bests.ms > EXCLUDED.ms OR (EXCLUDED.session_origin <> '' AND "
    "tuned.bests.session_origin = EXCLUDED.session_origin AND (tuned.bests.ms, "
    "tuned.bests.config) IS DISTINCT FROM (EXCLUDED.ms, EXCLUDED.config))";

bool offer(Connection& c, const BestRecord& best, const DeviceRecord& device,
           const std::string& session_origin, const std::string& source) {
  Params p;
  p.add(device.name).add(device.cc_major).add(device.cc_minor).add(device.sm_count);
  p.add(best.key.op).add(best.key.variant).add(best.key.shape_string()).add(best.key.alignment);
  p.add(best.template_hash).add(best.config).add(best.kernel_name).add(best.ms).add(best.rate);
  p.add(best.rate_unit).add(best.baseline_ms).add(device.uuid).add(session_origin);
  p.add(to_string(best.origin)).add(source);
  return c.exec(kOfferBest, p, "store best").changed > 0;
}

void upsert(Connection& c, const DeviceRecord& d) {
  Params p;
  p.add(d.uuid).add(d.name).add(d.cc_major).add(d.cc_minor).add(d.sm_count).add(d.memory_bytes);
  p.add(d.clock_khz);
  c.exec(
      "INSERT INTO tuned.devices (uuid, name, cc_major, cc_minor, sm_count, memory_bytes, "
      "clock_khz) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (uuid) DO UPDATE SET "
      "last_seen = now()",
      p, "store device");
}

int64_t session_id(Connection& c, const SessionRecord& s, const std::string& node, bool* added) {
  Params p;
  p.add(s.origin).add(s.device_uuid).add(s.op).add(s.strategy).add(s.budget_s).add(s.started_at);
  p.add(node);
  auto r = c.exec(
      "INSERT INTO tuned.sessions (origin, device_uuid, op, strategy, budget_s, started_at, node) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (origin) DO NOTHING RETURNING id",
      p, "store session");
  if (added) *added = !r.rows.empty();
  if (!r.rows.empty()) return r.rows[0].int64(0);
  r = c.exec("SELECT id FROM tuned.sessions WHERE origin = $1", Params().add(s.origin),
             "find session");
  return r.rows.at(0).int64(0);
}

// The bests of a store as a merge's source: the devices that measured them, then the bests.
class StoreBests : public MergeSource {
 public:
  StoreBests(std::string label, std::vector<DeviceRecord> devices, std::vector<BestRecord> bests)
      : label_(std::move(label)), devices_(std::move(devices)), bests_(std::move(bests)) {}
  std::string label() const override { return label_; }
  std::vector<DeviceRecord> devices() override { return devices_; }
  void for_each_session(const std::function<void(const SessionRecord&)>&) override {}
  void for_each_trial(const std::function<void(const TrialRecord&)>&) override {}
  void for_each_best(const std::function<void(const BestRecord&)>& visit) override {
    for (const auto& b : bests_) visit(b);
  }
  // Cubins never come from a store: they are compiled where they run.
  void for_each_cubin(const std::function<void(const StoredCubin&)>&) override {}
  int64_t cubin_count() override { return 0; }
  int64_t skipped(const std::string& table) const override {
    return table == "best" ? skipped_ : 0;
  }
  int64_t skipped_ = 0;

 private:
  std::string label_;
  std::vector<DeviceRecord> devices_;
  std::vector<BestRecord> bests_;
};

const char* kBestColumns =
    "b.op, b.variant, b.shape, b.alignment, b.config, b.kernel_name, b.ms, b.rate, b.rate_unit, "
    "b.baseline_ms, b.origin, b.template_hash, b.source, b.device_uuid, "
    "to_char(b.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

BestRecord best_of(const Row& r) {
  BestRecord b;
  b.key.op = r.text(0);
  b.key.variant = r.text(1);
  const auto shape = parse_shape_string(r.text(2));
  if (!shape) throw Error(TUNED_STATUS_DATABASE_ERROR, "store: shape '" + r.text(2) + "'");
  b.key.shape = *shape;
  b.key.alignment = static_cast<int>(r.int64(3));
  b.config = r.text(4);
  b.kernel_name = r.text(5);
  b.ms = r.real(6);
  b.rate = r.real(7);
  b.rate_unit = r.text(8);
  b.baseline_ms = r.real(9);
  b.origin = best_origin_from_string(r.text(10));
  b.template_hash = r.text(11);
  b.source = r.text(12);
  b.key.device_uuid = r.text(13);
  b.updated_at = r.text(14);
  return b;
}

}  // namespace

int store_schema_version() { return kStoreSchemaVersion; }

TuningStore::TuningStore(const std::string& url, std::chrono::milliseconds retry_for,
                         std::chrono::milliseconds connect_for)
    : connection_(url, retry_for, connect_for) {
  migrate();
}

void TuningStore::migrate() {
  connection_.transaction(
      [](Connection& c) {
        c.exec("SELECT pg_advisory_xact_lock($1)", Params().add(kMigrationLock), "lock schema");
        // Created only where missing: a worker's or reader's role may not create anything.
        if (c.exec("SELECT 1 FROM pg_namespace WHERE nspname = 'tuned'", {}, "read schema")
                .rows.empty()) {
          c.exec("CREATE SCHEMA tuned", {}, "create schema");
        }
        const bool has_meta =
            !c.exec("SELECT 1 FROM pg_tables WHERE schemaname = 'tuned' AND tablename = 'meta'",
                    {}, "read schema")
                 .rows.empty();
        int version = 0;
        if (has_meta) {
          auto r = c.exec("SELECT value FROM tuned.meta WHERE key = 'schema_version'", {},
                          "read schema version");
          if (!r.rows.empty()) version = static_cast<int>(r.rows[0].int64(0));
        } else {
          const auto tables = c.exec(
              "SELECT count(*) FROM pg_tables WHERE schemaname = 'tuned'", {}, "read schema");
          if (tables.rows.at(0).int64(0) > 0) {
            throw Error(TUNED_STATUS_DATABASE_ERROR,
                        "store " + c.name() +
                            ": its schema 'tuned' holds tables of another application");
          }
          c.exec("CREATE TABLE tuned.meta (key text PRIMARY KEY, value text NOT NULL)", {},
                 "create schema");
        }
        if (version > kStoreSchemaVersion) {
          throw Error(TUNED_STATUS_DATABASE_ERROR,
                      "store " + c.name() + ": schema version " + std::to_string(version) +
                          " is newer than this build of tuned writes (" +
                          std::to_string(kStoreSchemaVersion) + "); use a newer tuned");
        }
        if (version == kStoreSchemaVersion) return;  // nothing written: readers connect too
        for (int v = version; v < kStoreSchemaVersion; ++v) kMigrations[v](c);
        c.exec(
            "INSERT INTO tuned.meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) "
            "DO UPDATE SET value = EXCLUDED.value",
            Params().add(kStoreSchemaVersion), "write schema version");
      },
      "open store");
}

int TuningStore::schema_version() {
  const auto r = connection_.retried("SELECT value FROM tuned.meta WHERE key = 'schema_version'",
                                     {}, "read schema version");
  return static_cast<int>(r.rows.at(0).int64(0));
}

void TuningStore::upsert_device(const DeviceRecord& device) {
  connection_.transaction([&](Connection& c) { upsert(c, device); }, "store device");
}

int64_t TuningStore::add_session(const SessionRecord& session, const std::string& node) {
  int64_t id = 0;
  connection_.transaction([&](Connection& c) { id = session_id(c, session, node, nullptr); },
                          "store session");
  return id;
}

void TuningStore::record_trials(int64_t store_session, const std::vector<TrialRecord>& trials) {
  connection_.transaction(
      [&](Connection& c) {
        for (const auto& t : trials) {
          Params p;
          c.exec(kInsertTrial, add_trial(p, store_session, t), "store trial");
        }
      },
      "store trials");
}

bool TuningStore::offer_best(const BestRecord& best, const DeviceRecord& device,
                             const std::string& session_origin) {
  if (!(best.ms > 0)) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "store best of " + key_text(best.key) +
                                                   ": its time must be positive");
  }
  bool kept = false;
  connection_.transaction([&](Connection& c) { kept = offer(c, best, device, session_origin, ""); },
                          "store best");
  return kept;
}

std::vector<TrialRecord> TuningStore::measured(const ProblemKey& key, const DeviceModel& model,
                                               const std::string& template_hash) {
  std::vector<TrialRecord> out;
  if (template_hash.empty()) return out;
  Params p;
  p.add(model.name).add(model.cc_major).add(model.cc_minor).add(model.sm_count).add(key.op);
  p.add(key.variant).add(key.shape_string()).add(key.alignment).add(template_hash);
  const auto r = connection_.retried(
      "SELECT t.config, t.disposition, t.ms_median, t.device_uuid, t.kernel_name FROM "
      "tuned.trials t JOIN "
      "tuned.devices d ON d.uuid = t.device_uuid WHERE d.name = $1 AND d.cc_major = $2 AND "
      "d.cc_minor = $3 AND d.sm_count = $4 AND t.op = $5 AND t.variant = $6 AND t.shape = $7 AND "
      "t.alignment = $8 AND t.template_hash = $9 ORDER BY t.id",
      p, "read measured trials");
  for (const Row& row : r.rows) {
    TrialRecord t;
    t.key = key;
    t.key.device_uuid = row.text(3);
    t.config = row.text(0);
    t.disposition = disposition_from_string(row.text(1));
    t.ms_median = row.real(2);
    t.kernel_name = row.text(4);
    t.template_hash = template_hash;
    out.push_back(std::move(t));
  }
  return out;
}

PushReport TuningStore::push(Database& db, const std::string& node) {
  PushReport report;
  const std::string label = node + ":" + db.path();
  connection_.transaction(
      [&](Connection& c) {
        report = PushReport{};
        std::map<std::string, DeviceRecord> devices;
        for (const DeviceRecord& d : db.devices()) {
          upsert(c, d);
          devices.emplace(d.uuid, d);
          ++report.devices;
        }
        std::map<int64_t, std::pair<int64_t, std::string>> sessions;  // ours -> store's, origin
        db.for_each_session({}, false, [&](const Database::SessionSummary& s) {
          if (!devices.count(s.session.device_uuid)) return;  // a device the file does not list
          bool added = false;
          const int64_t id = session_id(c, s.session, node, &added);
          sessions[s.session.id] = {id, s.session.origin};
          (added ? report.sessions_added : report.sessions_present)++;
        });
        db.for_each_trial({}, [&](const TrialRecord& t) {
          const auto it = sessions.find(t.session_id);
          if (it == sessions.end()) {
            ++report.trials_without_session;
            return;
          }
          Params p;
          const bool added = c.exec(kInsertTrial, add_trial(p, it->second.first, t),
                                    "push trial").changed > 0;
          (added ? report.trials_added : report.trials_present)++;
        });
        std::map<int64_t, std::string> origins;
        for (const auto& [ours, store] : sessions) origins[ours] = store.second;
        db.for_each_best({}, [&](const BestRecord& b) {
          const auto d = devices.find(b.key.device_uuid);
          if (d == devices.end() || !(b.ms > 0)) {
            ++report.bests_without_device;
            return;
          }
          const auto o = origins.find(b.session_id);
          const std::string source = b.source.empty() ? label : b.source;
          const bool taken = offer(c, b, d->second, o == origins.end() ? "" : o->second, source);
          (taken ? report.bests_taken : report.bests_kept)++;
        });
      },
      "push");
  return report;
}

std::unique_ptr<MergeSource> TuningStore::bests_source(const std::vector<std::string>& models) {
  std::vector<DeviceRecord> devices;
  std::vector<BestRecord> bests;
  int64_t skipped = 0;
  connection_.transaction(
      [&](Connection& c) {
        devices.clear();
        bests.clear();
        skipped = 0;
        // An array parameter in text form: {"a","b"} (quotes and backslashes escaped).
        std::string array = "{";
        for (size_t i = 0; i < models.size(); ++i) {
          std::string quoted;
          for (char ch : models[i]) {
            if (ch == '"' || ch == '\\') quoted += '\\';
            quoted += ch;
          }
          array += (i ? ",\"" : "\"") + quoted + "\"";
        }
        array += "}";
        const std::string where =
            models.empty() ? "" : " WHERE b.device_name = ANY($1::text[])";
        Params p;
        if (!models.empty()) p.add(array);
        const auto r = c.exec(std::string("SELECT ") + kBestColumns + " FROM tuned.bests b" +
                                  where + " ORDER BY b.id",
                              p, "read bests");
        std::set<std::string> uuids;
        for (const Row& row : r.rows) {
          try {
            bests.push_back(best_of(row));
            uuids.insert(bests.back().key.device_uuid);
          } catch (const Error&) {
            ++skipped;
          }
        }
        const auto d = c.exec(
            "SELECT uuid, name, cc_major, cc_minor, sm_count, memory_bytes, clock_khz FROM "
            "tuned.devices ORDER BY uuid",
            {}, "read devices");
        for (const Row& row : d.rows) {
          if (!uuids.count(row.text(0))) continue;
          devices.push_back({row.text(0), row.text(1), static_cast<int>(row.int64(2)),
                             static_cast<int>(row.int64(3)), static_cast<int>(row.int64(4)),
                             row.int64(5), static_cast<int>(row.int64(6))});
        }
      },
      "pull");
  // A best the store keeps comes from wherever it was measured: its source says so where it
  // travelled before, else the store.
  for (auto& b : bests) {
    if (b.source.empty()) b.source = name();
  }
  auto source = std::make_unique<StoreBests>(name(), std::move(devices), std::move(bests));
  source->skipped_ = skipped;
  return source;
}

std::vector<BestRecord> TuningStore::bests() {
  std::vector<BestRecord> out;
  const auto r = connection_.retried(std::string("SELECT ") + kBestColumns +
                                         " FROM tuned.bests b ORDER BY b.id",
                                     {}, "read bests");
  for (const Row& row : r.rows) out.push_back(best_of(row));
  return out;
}

}  // namespace tuned::cache
