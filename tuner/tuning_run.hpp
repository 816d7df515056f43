// A tuning run: the problems of one `autotune` command tuned on one device or shared out over
// several (one tuner thread per device, each holding its GPU's lock, all writing one database).
// Each task resumes what its key's trials on the same template measured, gets its share of the
// run's budget as it starts (task_queue.hpp), records every trial as it is measured and keeps each
// improvement with its cubin at once, so a kill at any moment loses nothing measured. Programs
// parse and print around it (tools/autotune.cpp); what they show comes through a TuningObserver.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/session.hpp"

namespace tuned {

struct TuningRunOptions {
  // Each task's session: its strategy, trial limit, patience, final round (leaders, flush_l2),
  // compile threads (0 on several devices: the cores shared out, less one measuring thread each).
  // The run sets the rest: the task's budget, seed, starting and resumed configs, stop.
  SessionOptions session;
  double budget_s = 60;    // wall time of the whole run, summed over its tasks
  bool remeasure = false;  // measure again configs measured before on the same template
  uint64_t seed = 0;       // task i searches with seed + i; 0: from the clock
  bool wait_for_lock = true;  // a device another tuner holds: wait, or throw DEVICE_BUSY
  // Set (e.g. by a SIGINT handler) to end each task after its trial in hand and start no other.
  const std::atomic<bool>* stop = nullptr;
};

/// One problem of a run.
struct TuningProblem {
  TaskRequest request;
  double work = 0;             // an estimate: several devices take the largest first
  int recorded_alignment = 0;  // the alignment a shapes file recorded it with (0: none)
};

/// How a task ended: a row of the results table.
struct TaskOutcome {
  ProblemKey key;
  std::string rate_unit, baseline_name;
  int gpu = 0;              // the device it was tuned on
  std::string device_name;  // its name
  int trials = 0, ok = 0;   // measured in this run, and how many passed
  double ms = 0, rate = 0;  // the best, re-timed at the end beside the baseline (0: none)
  double baseline_ms = 0, baseline_rate = 0;
  std::string config;  // the best's ("" if none)
  std::string note;    // why there is no best, or why the database kept another
};

/// A task as the observer sees it.
struct TaskView {
  size_t index = 0;  // into the problems of the run
  ProblemKey key;
  std::string rate_unit, baseline_name;
  const DeviceInfo* device = nullptr;
};

/// What a run tells its program as it goes; each call may come from any tuner's thread.
class TuningObserver {
 public:
  virtual ~TuningObserver() = default;
  /// Another tuner holds a device's lock: the run waits for it.
  virtual void waiting_for_lock(const std::string& /*message*/) {}
  /// Every device's lock is held and recorded in the database: the tasks start.
  virtual void started() {}
  /// The task's buffers give another alignment than its problem recorded.
  virtual void alignment_changed(const TaskView& /*task*/, int /*recorded_alignment*/) {}
  /// configs measured before on this template are not measured again.
  virtual void resuming(const TaskView& /*task*/, size_t /*configs*/) {}
  virtual void progress(const TaskView& /*task*/, const Progress& /*progress*/) {}
  /// The task ended; outcomes holds every task ended so far, by index. One call at a time.
  virtual void task_ended(const TaskView& /*task*/,
                          const std::vector<std::optional<TaskOutcome>>& /*outcomes*/) {}
};

/// Runs the problems on the devices (one tuner thread each), writing db; the outcomes by problem
/// (nothing where a task never started: stopped, or its tuner failed). Throws the first tuner's
/// error (a device error ends only its tuner's tasks; the others go on first).
std::vector<std::optional<TaskOutcome>> run_tuning(
    const std::vector<TuningProblem>& problems,
    const std::vector<std::unique_ptr<DeviceEvaluator>>& devices, cache::Database& db,
    const TuningRunOptions& options, TuningObserver& observer);

}  // namespace tuned
