// One tuning session: one task (op, shape, layout) on one device. Candidates from the strategy are
// compiled on worker threads; on the calling thread each is loaded, checked against the reference
// on fresh random inputs with a poisoned output, timed with events, and recorded. A bad candidate
// is recorded with its disposition and skipped, never fatal.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/records.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/op.hpp"
#include "tuner/stop_reason.hpp"
#include "tuner/strategy.hpp"

namespace tuned {

struct SessionOptions {
  std::string strategy = kDefaultStrategy;
  double budget_s = 60;  // wall time for this task
  int max_trials = 0;    // 0: no limit
  int patience = 0;      // stop after this many trials in a row without a faster one; 0: never
  // The fastest few candidates (up to `leaders`, within leader_margin of the best) are timed
  // again side by side at the end, and the fastest of that round is the result: one lucky sample
  // in the search does not decide the winner.
  int leaders = 4;
  double leader_margin = 0.10;
  // Time that final round with the L2 cache flushed before every call (a cold cache, as a
  // product whose operands were evicted meets it), not back to back.
  bool flush_l2 = false;
  uint64_t seed = 1;
  int compile_threads = 0;  // 0: hardware threads - 1
  std::vector<Config> first;  // tried before the strategy's own picks
  // Configs measured before for this task on the same template (canonical text -> median ms, or
  // nothing when they failed): not measured again, their results handed to the strategy.
  std::map<std::string, std::optional<double>> measured;
  // Set (e.g. by a SIGINT handler) to end the session after the trial in hand: stopped as
  // interrupted, trials flushed, no final re-timing.
  const std::atomic<bool>* stop = nullptr;
  // Called with each candidate just before it first runs on the GPU: a kernel that never returns
  // leaves its config as the last one named (bench/record_space --trace).
  std::function<void(const Config&)> before_run;
};

/// What the progress callback sees after each trial.
struct Progress {
  int trials_done = 0;
  int trials_ok = 0;
  int trials_limit = 0;  // max_trials, or 0
  int resumed = 0;       // configs skipped as measured before
  double elapsed_s = 0;
  double remaining_s = 0;
  std::optional<cache::TrialRecord> best;
  double baseline_ms = 0;  // the baseline's median, measured before the first candidate
  const cache::TrialRecord* last = nullptr;
  std::string phase;
};

/// How the baseline ran: timed like every candidate, on the same inputs.
struct BaselineTiming {
  double ms_median = 0;
  double ms_min = 0;
  int runs = 0;
};

struct SessionResult {
  std::vector<cache::TrialRecord> trials;
  std::optional<cache::TrialRecord> best;
  std::optional<BuiltKernel> best_kernel;  // the best's cubin, for the database
  BaselineTiming baseline;       // at the start, before any candidate
  // The best and the baseline timed again side by side at the end, alternating, so the ratio
  // reported compares the two under the same clocks and temperature.
  BaselineTiming final_best;
  BaselineTiming final_baseline;
  int leaders_timed = 0;  // candidates in that final round (the best among them is `best`)
  bool flushed_l2 = false;
  double elapsed_s = 0;
  SessionStop stop;
  int resumed = 0;          // configs the strategy proposed that were measured before
};

/// Each trial is handed to record as soon as it is measured (so a kill loses none).
using TrialSink = std::function<void(const std::vector<cache::TrialRecord>&)>;
using ProgressSink = std::function<void(const Progress&)>;
/// Each new best, with its kernel, as soon as it is measured (after the trials before it and its
/// own were handed to record), so a kill at any moment keeps the best so far.
/// baseline_ms: the baseline's median at the session's start.
using BestSink =
    std::function<void(const cache::TrialRecord&, const BuiltKernel&, double baseline_ms)>;

/// Median and minimum over `runs` samples after warm-up, in ms per call: a sample is enough
/// back-to-back calls to last about 1 ms (one call for longer ones), with events around the
/// sample. Stops early when a sample's time per call exceeds give_up_ms. With `cold` (which
/// evicts the L2 cache), every sample is one call after `cold`, the events around the call only.
BaselineTiming time_runs(const std::function<void(cudaStream_t)>& run, cudaStream_t stream,
                         int runs, double give_up_ms = 0,
                         const std::function<void(cudaStream_t)>& cold = {});

/// Times each of `runs` (and `baseline`, when given) `rounds` times in turn, `samples` samples a
/// time (time_runs, with `cold` if given), keeping each one's fastest round: candidates compared
/// side by side, so drift in clocks or temperature hits them alike. The last entry of the result
/// is the baseline's, when one was given.
std::vector<BaselineTiming> time_side_by_side(
    const std::vector<std::function<void(cudaStream_t)>>& runs,
    const std::function<void(cudaStream_t)>& baseline, cudaStream_t stream, int rounds, int samples,
    const std::function<void(cudaStream_t)>& cold = {});

SessionResult run_session(TuningTask& task, const DeviceInfo& device, KernelCache& kernels,
                          const SessionOptions& options, int64_t session_id,
                          const TrialSink& record, const ProgressSink& progress,
                          const BestSink& improved = {});

}  // namespace tuned
