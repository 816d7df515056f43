// One task of a tuning run on one device: a session in the database, its starting configs, the
// configs measured before (not measured again), its search, every trial recorded as it is measured
// and every improvement kept at once with its cubin, and the row of the results table. Both ways
// of handing out tasks use it: a run's own queue (tuning_run.hpp) and a store's queue shared by
// many machines (fleet_worker.hpp), which also sends each record to the store as it is written.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/tuning_store.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/tuning_run.hpp"

namespace tuned {

/// What the task's run decided for it.
struct TaskPlan {
  const TuningProblem* problem = nullptr;
  size_t index = 0;      // the observer's index of the task
  double budget_s = 60;  // this task's
  uint64_t seed = 0;     // its search's (0: from the clock)
  const std::atomic<bool>* stop = nullptr;  // ends the task after its trial in hand
};

/// A store the task's records also go to (each tuner thread its own connection): the session,
/// every trial and every best as they are written here, and the trials it holds of the problem
/// (from any GPU of this model) count as measured.
struct SharedRecords {
  cache::TuningStore* store = nullptr;
  std::string node;  // this host's name, stored with its sessions
};

struct TaskResult {
  TaskOutcome outcome;
  std::string device_error;  // non-empty: the device failed (its tuner stops)
};

/// Runs the task on device's evaluator, writing db (and shared.store where set). Throws for
/// errors before its search (an invalid problem, the database).
TaskResult run_task(const TaskPlan& plan, DeviceEvaluator& device, cache::Database& db,
                    const TuningRunOptions& options, TuningObserver& observer,
                    const SharedRecords& shared = {});

/// One tuner thread per device: device.start(), tuner(device), device.finish() on it; all joined,
/// then the first error rethrown (a tuner that throws ends only its own work: the others go on).
void run_tuner_threads(const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                       const std::function<void(DeviceEvaluator&)>& tuner);

/// The options with the compile threads shared out over the tuners of `devices` devices (where
/// several and unset): each its part of the cores, less its measuring thread.
TuningRunOptions sharing_cores(const TuningRunOptions& options, size_t devices);

}  // namespace tuned
