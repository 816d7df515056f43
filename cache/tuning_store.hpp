// The tuning store: the records of many machines' tuning in one PostgreSQL database (schema
// "tuned", versioned, migrated by whoever connects first with a newer build), and the queue of
// tuning tasks they work through (cache/store_queue.hpp). It holds what a SQLite database holds
// (devices, sessions, trials, bests with their template hash and rate unit) but no cubins: a node
// compiles what it serves from the configs, checked against its own build's space.
//
// Bests are kept per GPU model (name, compute capability, SM count) and template hash; of two, the
// faster stays. Sessions are known by their origin and trials by their session, problem, config
// and template, so sending the same records twice adds nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/merge.hpp"
#include "cache/records.hpp"
#include "cache/store_connection.hpp"

namespace tuned::cache {

class Database;

/// The store's schema version this build writes (an older store is migrated on connect, a newer
/// one refused).
int store_schema_version();

/// A GPU model: what makes two GPUs twins (the same name, compute capability and SM count).
struct DeviceModel {
  std::string name;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  static DeviceModel of(const DeviceRecord& device) {
    return {device.name, device.cc_major, device.cc_minor, device.sm_count};
  }
};

/// What a push sent, and what it left out (rows the store holds already are "present").
struct PushReport {
  int64_t devices = 0;
  int64_t sessions_added = 0, sessions_present = 0;
  int64_t trials_added = 0, trials_present = 0, trials_without_session = 0;
  int64_t bests_taken = 0, bests_kept = 0, bests_without_device = 0;
};

class TuningStore {
 public:
  /// Connects (store::Connection) and brings the schema to this build's version (in one
  /// transaction under an advisory lock: nodes starting together migrate once). Throws
  /// Error(TUNED_STATUS_DATABASE_ERROR) naming the store for a schema newer than this build's or
  /// tables of another application.
  /// retry_for: how long a lost server is waited for in the middle of the work (a restart);
  /// connect_for: how long the first connection waits (store::Connection).
  explicit TuningStore(const std::string& url,
                       std::chrono::milliseconds retry_for = std::chrono::seconds(300),
                       std::chrono::milliseconds connect_for = std::chrono::seconds(15));

  const std::string& name() const { return connection_.name(); }
  store::Connection& connection() { return connection_; }
  int schema_version();

  // ----- what tuning writes as it goes (autotune --worker) -------------------------------------
  void upsert_device(const DeviceRecord& device);
  /// The session (found by its origin, else added) and the node that ran it; returns its id in
  /// the store.
  int64_t add_session(const SessionRecord& session, const std::string& node);
  /// Trials of a session the store holds (store_session: add_session's id), in one transaction.
  void record_trials(int64_t store_session, const std::vector<TrialRecord>& trials);
  /// Keeps best for its GPU model (device) unless the store holds one as fast or faster on the
  /// same template from another session (a session's own best is replaced by its re-timed one,
  /// as in a database); returns whether it was kept.
  bool offer_best(const BestRecord& best, const DeviceRecord& device,
                  const std::string& session_origin);
  /// Trials of this problem (key's op, variant, shape and alignment; any GPU of device's model)
  /// on this template: what a task resumed on any node need not measure again.
  std::vector<TrialRecord> measured(const ProblemKey& key, const DeviceModel& model,
                                    const std::string& template_hash);

  // ----- tunedb push / pull ---------------------------------------------------------------------
  /// Sends db's devices, sessions, trials and bests (faster best wins, per GPU model and template
  /// hash), in one transaction.
  PushReport push(Database& db, const std::string& node);
  /// The bests of these GPU models (all where empty) with the devices that measured them, as a
  /// merge's source (no sessions, trials or cubins): Database::merge brings them in as data.
  std::unique_ptr<MergeSource> bests_source(const std::vector<std::string>& model_names);

  /// Every best of the store (listings and tests).
  std::vector<BestRecord> bests();

 private:
  void migrate();
  store::Connection connection_;
};

}  // namespace tuned::cache
