// The tuning queue of a store (cache/tuning_store.hpp): tasks put in by `autotune --enqueue`,
// claimed by workers on any number of nodes (SELECT ... FOR UPDATE SKIP LOCKED, so no two claim
// one task), each claim held by a lease that the worker's heartbeat renews. A worker that dies
// stops renewing; once its lease has expired another worker claims the task again and resumes it
// from the trials already stored. Every claim carries a token: a worker whose lease was taken
// over can no longer renew or finish the task, so a task is marked done once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/tuning_store.hpp"

namespace tuned::cache {

/// A task as enqueued: a problem and how to tune it.
struct QueuedTask {
  std::string op, variant;
  std::vector<int64_t> shape;
  int alignment = 0;         // as a shapes file recorded it (0: none)
  std::string device_model;  // the GPU model to tune on ("": any)
  uint64_t seed = 0;         // the search's seed (0: the worker's clock)
  std::string strategy;
  double budget_s = 60;
  int max_trials = 0, patience = 0;
  bool remeasure = false;
};

/// A task claimed by a worker.
struct ClaimedTask {
  int64_t id = 0;
  QueuedTask task;
  std::string token;  // this claim's (renew and finish name it)
  int attempts = 0;   // claims so far, this one included
};

/// Who claims: a worker's GPU.
struct Claimant {
  std::string node;  // the host's name
  int64_t pid = 0;
  int gpu = 0;
  std::string gpu_name;  // its model's name: tasks for another model are left to others
};

/// A task as `autotune --status` shows it.
struct TaskState {
  int64_t id = 0;
  std::string op, variant, shape;
  int alignment = 0;
  std::string device_model, state;  // "queued", "running", "done", "failed"
  std::string node, gpu_name;       // the last claimant's
  int gpu = -1;
  int attempts = 0;
  double elapsed_s = 0;  // running: since its claim; done or failed: how long its last claim took
  bool lease_expired = false;  // running, but its worker stopped renewing
  std::string note;            // the outcome, or why it failed
};

struct QueueCounts {
  int64_t queued = 0, running = 0, done = 0, failed = 0;
};

class StoreQueue {
 public:
  /// Uses the store's connection (one thread at a time, like the store).
  explicit StoreQueue(TuningStore& store) : store_(store) {}

  /// Adds the tasks; a problem already queued or running for the same GPU model is left as it is
  /// (counted in the second number). Returns {added, already there}.
  std::pair<int64_t, int64_t> enqueue(const std::vector<QueuedTask>& tasks);

  /// The next task for this claimant, held for lease: a queued one, else one whose lease has
  /// expired (its worker died), oldest first. Nothing when none is claimable now. A task claimed
  /// max_attempts times whose lease expired again is marked failed instead.
  std::optional<ClaimedTask> claim(const Claimant& who, std::chrono::seconds lease,
                                   int max_attempts = 5);
  /// Extends the claim's lease; false where the claim is no longer held (expired and claimed by
  /// another, or ended).
  bool renew(const ClaimedTask& claim, std::chrono::seconds lease);
  /// Ends the claim: done, or failed with why; false where the claim was no longer held (nothing
  /// changed).
  bool finish(const ClaimedTask& claim, bool done, const std::string& note);
  /// Hands the task back to the queue at once (a worker told to stop); false where not held.
  bool release(const ClaimedTask& claim, const std::string& note);

  QueueCounts counts();
  /// Whether any task is queued or running (a worker with nothing to claim waits while one is:
  /// a running task's worker may die and leave it to be resumed).
  bool unfinished();
  /// Every task, in the order enqueued (state: only those in it; "" all).
  std::vector<TaskState> tasks(const std::string& state = "");
  /// The claims of task id that ended done (a task is done exactly once).
  int64_t done_claims(int64_t id);

 private:
  TuningStore& store_;
};

}  // namespace tuned::cache
