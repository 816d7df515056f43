// Replays a search strategy on a recorded space: every config of a space measured once on a GPU
// (its time, or that it failed, and its compile time), so that strategies are compared, tested
// and tuned on any machine, as Kernel Tuner's simulation mode does. The replay drives the same
// Strategy objects as a tuning session, through the same pipeline: compiles run ahead on a pool of
// threads (modelled from the recorded compile times), candidates are measured one at a time in
// the order their compiles finish (modelled from the recorded run times), and each result reaches
// the strategy only after its measurement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/space.hpp"
#include "tuner/stop_reason.hpp"

namespace tuned {

/// One config as it was measured.
struct RecordedTrial {
  std::string config;       // canonical text
  bool ok = false;          // compiled, ran and passed the check
  bool ran = false;         // reached the GPU (ok, or refused by the check or a launch)
  std::string disposition;  // the database's word for the outcome ("ok", "compile_error", ...)
  double ms = 0;            // median time per run (ok only)
  double compile_ms = 0;
  int runs = 0;  // timed runs (0 where it failed before timing)
};

/// A space measured on one GPU for one problem.
struct RecordedSpace {
  std::string op, variant;
  std::vector<int64_t> shape;
  int alignment = 0;
  std::string device;          // the GPU's name
  int compute_capability = 0;  // e.g. 90
  std::string template_hash;
  double baseline_ms = 0;   // the op's baseline (cuBLAS for gemm) on the same inputs
  int compile_threads = 0;  // the recording session's compile threads
  /// Where a tuning session on this problem starts (tuner/tuning_policy's starting_configs with
  /// an empty database: the selection model's picks, the shipped entry, the op's seeds), canonical.
  std::vector<std::string> first;
  std::vector<RecordedTrial> trials;

  /// The fastest ok trial's time (0 if none).
  double best_ms() const;
  /// "NN 4096x4096x4096" style name.
  std::string name() const;
};

struct ReplayOptions {
  std::string strategy = "guided";
  uint64_t seed = 1;
  std::vector<Config> first;  // as a session's SessionOptions::first
  int compile_threads = 15;   // the tuning machine's (default: a 16-core GPU host, one for timing)
  int max_evals = 1000;
  double max_seconds = 0;  // 0: no limit
  int patience = 0;        // stop after this many results without a better one (0: never)
};

/// The best time after each measured candidate.
struct ReplayStep {
  int evals = 0;
  double seconds = 0;  // modelled wall time since the session started
  double best_ms = 0;  // 0 until one config passed
  std::string config;  // the config measured
};

struct ReplayResult {
  std::vector<ReplayStep> steps;
  StopReason stop_reason = StopReason::kTrialLimit;
  /// The best found within a number of evaluations or a modelled time, as a fraction of the
  /// space's best (space_best / found; 0 if nothing passed by then).
  double fraction_after_evals(int evals, double space_best_ms) const;
  double fraction_after_seconds(double seconds, double space_best_ms) const;
};

/// Modelled time to measure one candidate on the GPU: a fresh input and its reference, the check's
/// run, a warm-up and the timed runs, each sample lasting at least a millisecond (as the session's
/// time_runs does).
double modelled_measure_ms(const RecordedTrial& trial, double baseline_ms);
/// Modelled time before the first candidate: the baseline timed, 20 runs.
double modelled_session_start_ms(double baseline_ms);

/// Replays options.strategy on space (already restricted to the recorded configs, Space::
/// restrict_to) with the recorded results. Throws Error(TUNED_STATUS_INTERNAL_ERROR) when the
/// strategy proposes a config the record lacks (the space was not restricted to it).
ReplayResult replay(const Space& space, const RecordedSpace& record, const ReplayOptions& options);

}  // namespace tuned
