// The portable file of `tunedb export --portable` and `tunedb import`: a database's results as
// text that travels (TOML, versioned: `format = "tuned-portable"`, `version = 1`): its devices,
// best configs with their template hash and provenance, and optionally its sessions and trials
// and its cubins (base64, with their checksums). Importing reads the whole file first, then
// brings it in through Database::merge, the same path as merging a database.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/merge.hpp"
#include "cache/records.hpp"

namespace tuned::cache {

/// This build writes and reads portable files of this version (and reads older ones). Rows keep
/// the keys `layout` (the op's variant) and `tflops` (its rate) that every build reads; rate_unit,
/// added within version 1, is optional ("" where absent) and passed over by builds before it.
constexpr int kPortableVersion = 1;

struct PortableOptions {
  Filter filter;        // which bests, sessions and trials (limit ignored)
  bool trials = false;  // sessions and their trials too
  bool cubins = false;  // cubins too (base64)
  std::string label;    // the provenance given to bests measured in the database
};

/// What an export wrote, and the rows it left out (a text that is not UTF-8 cannot be TOML).
struct PortableCounts {
  int64_t devices = 0, sessions = 0, trials = 0, bests = 0, cubins = 0, left_out = 0;
};

/// Writes db's rows to out, one row at a time (memory does not grow with trials). A row with
/// text that is not UTF-8 is left out with a warning naming it.
PortableCounts write_portable(std::ostream& out, Database& db, const PortableOptions& options);

/// A portable file read whole, as a merge's source. The constructor throws
/// Error(TUNED_STATUS_INVALID_ARGUMENT) naming the file and the rule broken (not TOML, another
/// format, a newer version, a missing key or a value of the wrong type, base64 that does not
/// decode); a row this build cannot read (a shape or disposition it does not know) is skipped
/// with a warning naming it, and counted, like a database's.
class PortableSource : public MergeSource {
 public:
  /// label: the provenance of bests the file does not give one ("host:/path/file.toml").
  PortableSource(const std::string& path, std::string label);
  std::string label() const override { return label_; }
  std::vector<DeviceRecord> devices() override { return devices_; }
  void for_each_session(const std::function<void(const SessionRecord&)>& visit) override;
  void for_each_trial(const std::function<void(const TrialRecord&)>& visit) override;
  void for_each_best(const std::function<void(const BestRecord&)>& visit) override;
  void for_each_cubin(const std::function<void(const StoredCubin&)>& visit) override;
  int64_t cubin_count() override { return static_cast<int64_t>(cubins_.size()); }
  int64_t skipped(const std::string& table) const override;

 private:
  std::string label_;
  std::vector<DeviceRecord> devices_;
  std::vector<SessionRecord> sessions_;
  std::vector<TrialRecord> trials_;
  std::vector<BestRecord> bests_;
  std::vector<StoredCubin> cubins_;
  std::map<std::string, int64_t> skipped_;
};

/// RFC 4648 base64 (with padding), and its inverse (false for text that is not base64).
std::string base64_encode(const std::vector<char>& bytes);
bool base64_decode(const std::string& text, std::vector<char>& bytes);

}  // namespace tuned::cache
