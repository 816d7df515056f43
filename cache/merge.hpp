// Results that travel: what `tunedb merge` and `tunedb import` bring into a database, from another
// database (read-only: not a byte of it changes) or from a portable file (cache/portable.hpp),
// through one code path (Database::merge).
//
// A database from elsewhere is data, not code. Its bests bring their configs, which the caller's
// check_best holds against the op's space, and the kernels are compiled here from them; its cubins
// cross only when asked (with_cubins: a source the user trusts), each with its checksum verified.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cache/records.hpp"
#include "core/cubin.hpp"

namespace tuned::cache {

/// A cubin row as stored, with the checksum it was stored with ("" in rows of schema version 1,
/// which have none and so cannot be verified: a merge leaves them out).
struct StoredCubin {
  CubinKey key;
  CubinRecord cubin;
  std::string checksum;
};

/// The rows a merge reads, each table visited once in this order: devices, sessions, trials,
/// bests, cubins (cubins only when asked). Rows it cannot read are skipped, named in the log, and
/// counted by skipped(table).
class MergeSource {
 public:
  virtual ~MergeSource() = default;
  /// Where its rows come from ("host:/path/tuned.db"): the provenance of bests measured there.
  virtual std::string label() const = 0;
  /// The file it reads, if it is one (a merge refuses to read the database it writes).
  virtual std::string file_path() const { return ""; }
  virtual std::vector<DeviceRecord> devices() = 0;
  virtual void for_each_session(const std::function<void(const SessionRecord&)>& visit) = 0;
  virtual void for_each_trial(const std::function<void(const TrialRecord&)>& visit) = 0;
  virtual void for_each_best(const std::function<void(const BestRecord&)>& visit) = 0;
  virtual void for_each_cubin(const std::function<void(const StoredCubin&)>& visit) = 0;
  /// How many cubins it holds (read only where they are asked for).
  virtual int64_t cubin_count() = 0;
  /// Malformed rows skipped so far in table ("sessions", "trials", "best", ...).
  virtual int64_t skipped(const std::string& table) const = 0;
};

/// What the caller says of a best before it may come in.
struct BestVerdict {
  std::string refusal;  // non-empty: why its config is outside its op's space (not taken)
  // The hash of the template this build compiles the config from ("" where unknown): a best
  // measured on it wins over one measured on another template, whatever their times.
  std::string template_hash;
};

struct MergeOptions {
  /// Copy the source's cubins too (verified against their checksums; existing rows kept).
  bool with_cubins = false;
  /// Judges each best of the source; device is the GPU that measured it as the source or this
  /// database lists it (null where neither does). Unset: every config is taken as it is.
  std::function<BestVerdict(const BestRecord& best, const DeviceRecord* device)> check_best;
};

/// What a merge did, table by table. "present": already here (so merging the same source again
/// adds nothing); "kept": this database's best was as fast or faster (or on the current
/// template where the source's was not); "refused": outside the op's space, or a cubin whose
/// checksum did not match; "malformed": skipped as unreadable.
struct MergeReport {
  int64_t devices_added = 0, devices_present = 0;
  int64_t sessions_added = 0, sessions_present = 0, sessions_malformed = 0;
  int64_t trials_added = 0, trials_present = 0, trials_malformed = 0;
  int64_t bests_taken = 0, bests_kept = 0, bests_refused = 0, bests_malformed = 0;
  int64_t cubins_added = 0, cubins_present = 0, cubins_refused = 0;
  int64_t cubins_not_asked = 0;  // cubins the source holds, left there without with_cubins
};

}  // namespace tuned::cache
