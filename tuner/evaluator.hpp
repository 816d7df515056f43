// What a tuning run measures with. On a GPU, a session compiles, checks and times each candidate
// (session_evaluator.hpp); on any machine, the replay of a recorded space stands in for it
// (replay_evaluator.hpp), so the run's policy (locks, resume, budget split, bests kept) is tested
// and studied without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "core/device_info.hpp"
#include "core/problem_key.hpp"
#include "templates/registry.hpp"
#include "tuner/session.hpp"

namespace tuned {

/// One task of a run on one device: what it is keyed and reported by, and its search.
class TaskEvaluator {
 public:
  virtual ~TaskEvaluator() = default;

  /// The key its trials and best are stored under.
  virtual ProblemKey key() const = 0;
  /// The template its configs compile: trials measured on the same one are not measured again.
  virtual std::string template_hash() const = 0;
  /// The op's rate of a time per run, in its unit ("TFLOP/s", "GB/s").
  virtual double rate(double ms) const = 0;
  virtual std::string rate_unit() const = 0;
  /// What each candidate is compared with ("cuBLAS" for gemm).
  virtual std::string baseline_name() const = 0;

  /// Where the search starts, given what the database holds.
  virtual std::vector<Config> starting_configs(cache::Database& db) = 0;
  /// The search: each trial to record as soon as it is measured, each new best to improved
  /// (after its trial was recorded).
  virtual SessionResult search(const SessionOptions& options, int64_t session_id,
                               const TrialSink& record, const ProgressSink& progress,
                               const BestSink& improved) = 0;
  /// Offers best to the database, with its kernel's cubin when one was built (null: none);
  /// returns whether it was kept (it was faster than what the database holds).
  virtual bool keep_best(cache::Database& db, const cache::BestRecord& best,
                         const CubinRecord* cubin) = 0;
};

/// One device of a run: its tuner thread evaluates tasks on it one after another.
class DeviceEvaluator {
 public:
  virtual ~DeviceEvaluator() = default;
  virtual const DeviceInfo& device() const = 0;
  /// Called once on the tuner's thread, before its first task (a GPU is made current there).
  virtual void start() = 0;
  /// Called once on the tuner's thread after its last task (however it ended): what start() set
  /// up is released on the thread that set it up.
  virtual void finish() {}
  /// The task of a validated request on this device.
  virtual std::unique_ptr<TaskEvaluator> task(const TaskRequest& request) = 0;
};

}  // namespace tuned
