// The tasks of one autotune run shared out to tuners working side by side (one per GPU): each tuner
// takes the next task when it is free, so no GPU idles while another has several left. A task's
// budget is set as it starts: the run's budget left over the tasks not yet started, so time a task
// leaves unused goes to the later ones. On one GPU that is the budget left over the tasks left;
// over N GPUs every task gets the same share as on one, and the run takes about 1/N of the time.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace tuned {

class TaskQueue {
 public:
  /// work: an estimate per task; with largest_first the largest start first (ties in the given
  /// order), else the given order. budget_s: the run's tuning time summed over its tasks.
  /// stop: when set, no task is handed out any more.
  TaskQueue(const std::vector<double>& work, bool largest_first, double budget_s,
            const std::atomic<bool>* stop = nullptr);

  struct Grant {
    size_t task = 0;      // index into the work given
    double budget_s = 0;  // at least kMinBudgetS
  };
  /// The next task and its budget; nothing when every task was handed out or stop is set.
  /// Thread-safe.
  std::optional<Grant> next();
  /// A granted task ended after elapsed_s (its setup and final timing included). Thread-safe.
  void done(const Grant& grant, double elapsed_s);

  /// The least budget a task gets, however much of the run's is spent.
  static constexpr double kMinBudgetS = 1.0;

 private:
  std::mutex mutex_;
  std::vector<size_t> order_;
  size_t next_ = 0;
  double budget_s_;
  double spent_s_ = 0;     // by the tasks that ended
  double reserved_s_ = 0;  // the budgets of the tasks under way
  const std::atomic<bool>* stop_;
};

}  // namespace tuned
