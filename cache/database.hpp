// The tuning database: one SQLite file with a schema version, WAL mode, prepared statements, and
// every write inside a transaction, so a crash or a full disk never loses what was recorded.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/records.hpp"
#include "generator/cubin.hpp"

struct sqlite3;

namespace tuned::cache {

/// The default database path: $TUNED_DB, else $XDG_CACHE_HOME/tuned/tuned.db, else
/// $HOME/.cache/tuned/tuned.db, else ./tuned.db.
std::string default_database_path();

/// Filters for listings; empty fields match everything.
struct Filter {
  std::string device_uuid;
  std::string op;
  int64_t session_id = 0;  // 0: all sessions
  int limit = 0;           // 0: no limit; trials and sessions keep the most recent N (listed
                           // oldest first), best configs the first N in listing order
};

/// How a database is opened. A reader never changes a byte of the file: no journal-mode switch,
/// no schema or header write, no lock a writer would wait on, and a file it cannot write is fine.
/// A writer checks that the file is ours (or new) before its first write.
enum class Access { kRead, kWrite };

/// One open database. Thread-safe: every method takes the connection's mutex.
class Database {
 public:
  /// Opens or throws Error(TUNED_STATUS_DATABASE_ERROR) naming the path and the reason: not a
  /// database / corrupt, an empty file (a zero-byte file is refused untouched), another
  /// application's SQLite file, a schema newer than this build (or, for a reader, older than the
  /// oldest it reads as is: readers do not migrate). kWrite creates the file, its folders and the schema if needed (an unwritable
  /// folder or file is an error); kRead needs an existing file. Both wait for another process's
  /// lock up to kBusyWaitSeconds, backing off, and say once that they wait.
  explicit Database(const std::string& path, Access access = Access::kWrite);
  static constexpr int kBusyWaitSeconds = 600;
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  Access access() const { return access_; }
  static int schema_version();

  /// Inserts or updates the device row keyed by uuid.
  void upsert_device(const DeviceRecord& device);
  std::vector<DeviceRecord> devices();

  /// The cubin stored for key. A row whose image no longer matches the size and checksum stored
  /// with it (damaged at rest) is logged once at warn level and reported as absent, so the caller
  /// recompiles (and put_cubin replaces it); a writer also deletes it. Rows written by schema
  /// version 1 have no checksum and are trusted.
  std::optional<CubinRecord> find_cubin(const CubinKey& key);
  /// Stores (replacing) the cubin with its size and checksum.
  void put_cubin(const CubinKey& key, const CubinRecord& cubin);
  /// Deletes the cubin stored for key, if any.
  void drop_cubin(const CubinKey& key);

  /// Creates a session row and returns it with id and started_at set.
  SessionRecord begin_session(const SessionRecord& session);
  /// Records trials in one transaction.
  void record_trials(const std::vector<TrialRecord>& trials);
  std::vector<TrialRecord> trials(const Filter& filter);
  /// The trials of trials(filter), one at a time (memory independent of their number).
  void for_each_trial(const Filter& filter, const std::function<void(const TrialRecord&)>& visit);
  /// Trials of exactly this key measured on this template source (config, disposition and
  /// ms_median set): what a re-run of the same tuning command need not measure again. Empty for
  /// an empty hash.
  std::vector<TrialRecord> measured(const ProblemKey& key, const std::string& template_hash);
  std::vector<SessionRecord> sessions(const Filter& filter);

  /// Stores best (with its origin) unless the database already holds a faster one for the same
  /// key from another session (a session's own record is replaced: its best so far, then the
  /// same best re-timed); returns whether it was stored. best.ms must be positive and finite (Error
  /// INVALID_ARGUMENT otherwise).
  bool offer_best(const BestRecord& best);
  /// Best for exactly this key.
  std::optional<BestRecord> find_best(const ProblemKey& key);
  /// Best for this key's op, layout, shape and alignment measured on a twin of `device`: another
  /// GPU (uuid other than device.uuid) that the devices table lists with the same name, compute
  /// capability and SM count. A database tuned on one GPU of a cluster then serves its twins; of
  /// several twins' entries the fastest answers (ties: the most recently stored).
  std::optional<BestRecord> find_best_on_twin(const ProblemKey& key, const DeviceRecord& device);
  /// Best of the same device, op and layout whose shape is nearest in log space (sum over dims of
  /// |log2(a) - log2(b)|, dims of 0 counted as 1); entries of the same alignment class first, then
  /// any alignment: first narrower ones that divide key.alignment (their kernels stay valid on
  /// this data), then wider ones (the caller must check those against the problem). Ties: the most
  /// recently updated.
  std::optional<BestRecord> find_nearest(const ProblemKey& key);
  std::vector<BestRecord> bests(const Filter& filter);

  /// Listings and lookups skip a malformed row (a shape or disposition this build cannot read)
  /// with a warning naming it (log_once, warn level) and go on.

  // Listings (cache/database_listings.cpp)
  /// A session with the number of its trials and of those ok, counted by SQL (no trial loaded).
  struct SessionSummary {
    SessionRecord session;
    int64_t trials = 0;
    int64_t ok = 0;
  };
  /// The sessions of sessions(filter), one at a time; trials and ok are counted only where
  /// count_trials is set (0 otherwise). Like for_each_trial, these hold the connection's mutex
  /// while they visit: visit must not call this Database.
  void for_each_session(const Filter& filter, bool count_trials,
                        const std::function<void(const SessionSummary&)>& visit);
  /// The best configurations of bests(filter), one at a time, in the same order.
  void for_each_best(const Filter& filter, const std::function<void(const BestRecord&)>& visit);

 private:
  // Throws Error(TUNED_STATUS_INTERNAL_ERROR) when a reader is asked to write.
  void writing(const char* what) const;

  std::string path_;
  Access access_ = Access::kWrite;
  int version_ = 0;  // schema version of the file (a reader may read an older one)
  sqlite3* db_ = nullptr;
  std::mutex mutex_;
  struct BusyWait {
    std::string path;
    bool said = false;
  } busy_;
};

}  // namespace tuned::cache
