// Tuned defaults that ship with the library: best configs the project measured on common GPUs
// (bench/gemm_vs_cublas on each), built into libtuned, so a call is fast before its user tunes.
// They answer after the user's own database and before the built-in default.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/database.hpp"
#include "cache/records.hpp"

namespace tuned::cache {

class ShippedDefaults {
 public:
  /// The table built into the library (cache/shipped/*.tsv), parsed once.
  static ShippedDefaults& builtin();

  /// Parses a table: one row per line, tab-separated:
  ///   device_name  cc  op  layout  m  n  k  alignment  config  ms  baseline_ms
  /// '#' starts a comment line. Throws Error(TUNED_STATUS_CONFIG_ERROR) naming the line.
  explicit ShippedDefaults(std::string_view table);

  /// Entries for this GPU model (by name); when the model has none, those of models with the
  /// same compute capability. key.device_uuid is ignored.
  std::optional<BestRecord> find_best(const ProblemKey& key, const std::string& device_name,
                                      int compute_capability);
  std::optional<BestRecord> find_nearest(const ProblemKey& key, const std::string& device_name,
                                         int compute_capability);
  size_t size() const { return rows_; }

  /// One table row for a stored best (what `tunedb export --format shipped` prints).
  static std::string row(const BestRecord& best, const std::string& device_name,
                         int compute_capability);

 private:
  std::optional<ProblemKey> shipped_key(const ProblemKey& key, const std::string& device_name,
                                        int compute_capability);

  Database db_{":memory:"};
  size_t rows_ = 0;
};

}  // namespace tuned::cache
