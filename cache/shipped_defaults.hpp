// Tuned defaults that ship with the library: best configs the project measured on common GPUs
// (bench/gemm_vs_cublas on each), built into libtuned, so a call is fast before its user tunes.
// They answer after the user's own database and before the built-in default.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

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
  /// The nearest shape in log space (cache::shape_distance) of the same op and layout: entries of
  /// the same alignment class first, then narrower ones that divide it, then wider ones (the
  /// caller checks those). Ties: the later row.
  std::optional<BestRecord> find_nearest(const ProblemKey& key, const std::string& device_name,
                                         int compute_capability);
  size_t size() const { return rows_.size(); }

  struct Row {
    std::string device_name;
    int cc = 0;
    BestRecord best;
  };
  /// Every row, in table order (what tools/precompile builds kernels for).
  const std::vector<Row>& rows() const { return rows_; }

  /// One table row for a stored best (what `tunedb export --format shipped` prints).
  static std::string row(const BestRecord& best, const std::string& device_name,
                         int compute_capability);

 private:
  // The rows of this model, else of a model with the same compute capability; empty if none.
  std::string model_of(const std::string& device_name, int compute_capability) const;

  // A plain list, scanned: a few dozen rows, and a new process's first call must not pay for
  // building anything.
  std::vector<Row> rows_;
};

}  // namespace tuned::cache
