// A worker of a store's tuning queue (cache/store_queue.hpp): one tuner thread per device, each
// claiming the next task its GPU model may take, tuning it (task_run.hpp: every trial and best to
// this node's database and to the store as it is measured; the store's trials of the problem from
// any node count as measured) and marking it done. A heartbeat renews every held lease; a task
// whose lease was lost (another worker took it over) is stopped after its trial in hand and not
// marked. Nodes need nothing else in common: the store is the only thing they share.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/store_queue.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/tuning_run.hpp"

namespace tuned {

struct WorkerOptions {
  std::string store_url;
  // Each task's session as a run's (strategy, trial limit and budget come from the task), and
  // stop: set (SIGINT) to hand the tasks in hand back to the queue and end.
  TuningRunOptions run;
  std::chrono::seconds lease{60};  // renewed every third of it
  int max_attempts = 5;            // claims of one task before it is marked failed
  bool wait = false;  // with nothing to claim: wait for tasks (else end once none is queued or
                      // running)
  std::chrono::milliseconds poll{1000};  // how often a worker with nothing to do looks again
  std::chrono::seconds store_retry{300};  // how long a lost store is waited for
  std::string node;   // this host's name ("": gethostname)
};

/// What a worker tells its program; calls may come from any tuner's thread.
class WorkerObserver : public TuningObserver {
 public:
  virtual void claimed(const cache::ClaimedTask& /*task*/, const DeviceInfo& /*device*/) {}
  /// The task ended: done (outcome set), failed (why), or its lease was lost / it was handed back.
  virtual void ended(const cache::ClaimedTask& /*task*/, const DeviceInfo& /*device*/,
                     const std::string& /*how*/, const TaskOutcome* /*outcome*/,
                     const std::string& /*note*/) {}
};

struct WorkerSummary {
  int done = 0, failed = 0, lost = 0, released = 0;
};

/// Works through the queue on the devices until it holds nothing this worker can take (or, with
/// wait, until stopped). Throws the first tuner's error (a device error ends only its tuner).
WorkerSummary run_worker(const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                         cache::Database& db, const WorkerOptions& options,
                         WorkerObserver& observer);

/// The row of a done task as the queue keeps it ("config ... ms ... x baseline").
std::string outcome_note(const TaskOutcome& outcome);

}  // namespace tuned
