// The tuning database: one SQLite file with a schema version, WAL mode, prepared statements, and
// every write inside a transaction, so a crash or a full disk never loses what was recorded.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/database_file.hpp"
#include "cache/merge.hpp"
#include "cache/records.hpp"
#include "core/cubin.hpp"
#include "tuned/error.hpp"

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

/// How a database is opened. A reader never changes a byte of the file nor creates one beside it
/// (cache/database_file.hpp: read as immutable, through a writer's WAL index, or from a private
/// copy), holds no lock a writer would wait on, and a file it cannot write is fine; it reads every
/// schema version up to this build's as it is, and a newer one as this build's version where its
/// columns allow. A writer checks that the file is ours (or new) before its first write.
enum class Access { kRead, kWrite };

struct OpenOptions {
  Access access = Access::kWrite;
  /// A writer migrates an older schema to this build's. The library's own writes (first-use
  /// results, cubins) pass false: a file of an older schema is then refused for writing (and read
  /// as it is), so a call never rewrites a user's file behind their back.
  bool upgrade = true;
  /// How long an open or a statement waits for another process's lock before failing.
  std::chrono::milliseconds lock_wait = std::chrono::seconds(600);
};

/// One open database. Thread-safe: every method takes the connection's mutex.
class Database {
 public:
  /// Opens or throws Error(TUNED_STATUS_DATABASE_ERROR) naming the path and the reason: a folder,
  /// a named pipe, device or symlink loop, not a database / corrupt, an empty file (a zero-byte
  /// file is refused untouched), another application's SQLite file, a schema newer than this
  /// build (for a writer; a writer told not to upgrade: older too). kWrite creates the file (built
  /// aside and linked into place, so processes creating it together all succeed), its folders and
  /// the schema if needed (an unwritable folder or file is an error); kRead needs an existing file.
  /// Both wait for another process's lock up to options.lock_wait, backing off, and say once that
  /// they wait.
  explicit Database(const std::string& path, Access access = Access::kWrite);
  Database(const std::string& path, const OpenOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  Access access() const { return access_; }
  /// This build's schema version, and the file's as it was opened (a writer has since migrated it
  /// to this build's).
  static int schema_version();
  int file_version() const { return file_version_; }
  /// A reader that read the file as immutable or from a copy: whether the file (or its side files)
  /// changed since, so that a long-lived reader reopens to see new rows. Always false otherwise.
  bool changed() const;

  /// Inserts or updates the device row keyed by uuid.
  void upsert_device(const DeviceRecord& device);
  std::vector<DeviceRecord> devices();

  /// Whether cubins may be loaded from this file: the library runs what it loads and a checksum
  /// proves no origin, so (as ssh treats its key files) only from a file that the current user or
  /// root owns and that group and others cannot write, in a folder they cannot write either (or a
  /// sticky one, like /tmp); file::cubin_distrust says why not. Checked at each call (the
  /// permissions may change while the file is open).
  bool cubins_trusted() const;

  /// The cubin stored for key, for loading. Nothing when cubins_trusted() is false (logged once at
  /// warn level with the reason: the caller compiles from the config instead). A row whose image
  /// no longer matches the size and checksum stored with it (damaged at rest) is logged once at
  /// warn level and reported as absent, so the caller recompiles (and put_cubin replaces it); a
  /// writer also deletes it. Rows written by schema version 1 have no checksum and are trusted.
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

  /// Stores best (with its origin and template hash) unless the database already holds a faster
  /// one for the same key from another session measured on the same template (a session's own
  /// record is replaced: its best so far, then the same best re-timed; a best of another template
  /// is replaced by any, since it is never served); returns whether it was stored. best.ms must be
  /// positive and finite (Error INVALID_ARGUMENT otherwise).
  bool offer_best(const BestRecord& best);

  /// The lookups below take the hash of the template the caller would compile the config from:
  /// a best measured on another template is then never answered (rows that name no template,
  /// from before schema version 4, are). An empty hash answers every row (listings, hints).
  ///
  /// Best for exactly this key.
  std::optional<BestRecord> find_best(const ProblemKey& key, const std::string& template_hash = "");
  /// Best for this key's op, layout, shape and alignment measured on a twin of `device`: another
  /// GPU (uuid other than device.uuid) that the devices table lists with the same name, compute
  /// capability and SM count. A database tuned on one GPU of a cluster then serves its twins; of
  /// several twins' entries the fastest answers (ties: the most recently stored).
  std::optional<BestRecord> find_best_on_twin(const ProblemKey& key, const DeviceRecord& device,
                                              const std::string& template_hash = "");
  /// Best of the same device, op and layout whose shape is nearest in log space (sum over dims of
  /// |log2(a) - log2(b)|, dims of 0 counted as 1); entries of the same alignment class first, then
  /// any alignment: first narrower ones that divide key.alignment (their kernels stay valid on
  /// this data), then wider ones (the caller must check those against the problem). Ties: the most
  /// recently updated.
  std::optional<BestRecord> find_nearest(const ProblemKey& key,
                                         const std::string& template_hash = "");
  std::vector<BestRecord> bests(const Filter& filter);

  /// Listings and lookups skip a malformed row (a shape or disposition this build cannot read)
  /// with a warning naming it (log_once, warn level) and go on; skipped(table) counts them.
  int64_t skipped(const std::string& table) const;

  /// Brings another database's or a portable file's rows into this one (a writer), in one
  /// transaction: see cache/merge.hpp.
  MergeReport merge(MergeSource& source, const MergeOptions& options);
  /// The cubins of this database with the checksums they were stored with, one at a time (for
  /// merges and exports that carry them; the visitor must not call this Database).
  void for_each_cubin(const std::function<void(const StoredCubin&)>& visit);
  int64_t cubin_count();
  /// Each table of the file with its number of rows, in name order (SQLite's own tables left out):
  /// whatever the file's schema version holds, counted by SQL (tunedb info).
  std::vector<std::pair<std::string, int64_t>> row_counts();

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
  // The constructor's steps: a reader's open (read as it is, warnings said once), a writer's
  // (folder and file made where missing, identity checked, schema migrated unless told not to).
  void open_reader();
  void open_writer(bool upgrade);
  // Makes SQLite wait for another process's lock on db (busy_), backing off.
  void wait_for_locks(sqlite3* db);
  // Throws Error(TUNED_STATUS_INTERNAL_ERROR) when a reader is asked to write.
  void writing(const char* what) const;
  // rows::skip_row, counted per table.
  void skip(const char* table, int64_t id, const Error& e);

  std::string path_;
  Access access_ = Access::kWrite;
  int file_version_ = 0;  // the file's schema version when opened
  int version_ = 0;       // the version its statements read and write (newer files: ours)
  sqlite3* db_ = nullptr;
  file::ReadConnection read_;  // a reader's connection (db_ is its db)
  file::Identity counted_;     // the file as counted open (file::note_open), if it was
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> skipped_;  // malformed rows skipped, per table (mutex_ held)
  struct BusyWait {
    std::string path;
    std::chrono::milliseconds limit;
    bool said = false;
  } busy_;
};

/// A database as a merge's source (open it with Access::kRead: not a byte of it changes).
class DatabaseSource : public MergeSource {
 public:
  /// label: the provenance of its bests ("host:/path/tuned.db").
  DatabaseSource(Database& db, std::string label);
  std::string label() const override { return label_; }
  std::string file_path() const override { return db_.path(); }
  std::vector<DeviceRecord> devices() override;
  void for_each_session(const std::function<void(const SessionRecord&)>& visit) override;
  void for_each_trial(const std::function<void(const TrialRecord&)>& visit) override;
  void for_each_best(const std::function<void(const BestRecord&)>& visit) override;
  void for_each_cubin(const std::function<void(const StoredCubin&)>& visit) override;
  int64_t cubin_count() override;
  int64_t skipped(const std::string& table) const override;

 private:
  Database& db_;
  std::string label_;
};

}  // namespace tuned::cache
