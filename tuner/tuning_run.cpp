#include "tuner/tuning_run.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "tuned/error.hpp"
#include "tuner/device_lock.hpp"
#include "tuner/task_queue.hpp"
#include "tuner/task_run.hpp"

namespace tuned {
namespace {

// What the tuners of a run share: its inputs, the database, the queue and the outcomes so far.
struct RunState {
  RunState(const std::vector<TuningProblem>& problems, cache::Database& db,
           const TuningRunOptions& options, TuningObserver& observer, TaskQueue& queue)
      : problems(problems), db(db), options(options), observer(observer), queue(queue) {}

  const std::vector<TuningProblem>& problems;
  cache::Database& db;
  const TuningRunOptions& options;
  TuningObserver& observer;
  TaskQueue& queue;
  bool several_devices = false;
  std::mutex mutex;         // guards outcomes, and the observer's task_ended
  std::vector<std::optional<TaskOutcome>> outcomes;
};

// One device's tuner, on its own thread: tasks from the queue until none is left. A tuner that
// fails stops taking tasks (the others take them) and leaves its error.
void tuner(RunState& run, DeviceEvaluator& device) {
  while (const auto grant = run.queue.next()) {
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    try {
      const TuningProblem& problem = run.problems[grant->task];
      const TuningRunOptions& o = run.options;
      TaskPlan plan{&problem, grant->task, grant->budget_s,
                    o.seed ? o.seed + grant->task : 0, o.stop};
      TaskResult result = run_task(plan, device, run.db, o, run.observer);
      {
        std::lock_guard<std::mutex> lock(run.mutex);
        run.outcomes[grant->task] = std::move(result.outcome);
        TaskView view{grant->task, run.outcomes[grant->task]->key,
                      run.outcomes[grant->task]->rate_unit,
                      run.outcomes[grant->task]->baseline_name, &device.device()};
        run.observer.task_ended(view, run.outcomes);
      }
      if (!result.device_error.empty()) {
        throw Error(TUNED_STATUS_LAUNCH_ERROR,
                    (run.several_devices ? "GPU " + std::to_string(device.device().index) + ": "
                                         : "") +
                        result.device_error);
      }
    } catch (...) {
      run.queue.done(*grant, elapsed());
      throw;
    }
    run.queue.done(*grant, elapsed());
  }
}

}  // namespace

std::vector<std::optional<TaskOutcome>> run_tuning(
    const std::vector<TuningProblem>& problems,
    const std::vector<std::unique_ptr<DeviceEvaluator>>& devices, cache::Database& db,
    const TuningRunOptions& options, TuningObserver& observer) {
  // One tuner per device: timings are never shared with another tuner's kernels.
  std::vector<std::unique_ptr<DeviceLock>> locks;
  for (const auto& device : devices) {
    locks.push_back(std::make_unique<DeviceLock>(
        device->device().uuid, options.wait_for_lock,
        [&](const std::string& message) { observer.waiting_for_lock(message); }));
    db.upsert_device(cache::device_record(device->device()));
  }
  observer.started();

  // One device takes the tasks in the order given; several take the largest first, so that the
  // last ones to end are short.
  const bool several = devices.size() > 1;
  std::vector<double> work;
  for (const auto& problem : problems) work.push_back(problem.work);
  TaskQueue queue(work, several, options.budget_s, options.stop);
  // The compile pools share the cores.
  const TuningRunOptions resolved = sharing_cores(options, devices.size());
  RunState run{problems, db, resolved, observer, queue};
  run.several_devices = several;
  run.outcomes.resize(problems.size());
  run_tuner_threads(devices, [&](DeviceEvaluator& device) { tuner(run, device); });
  return run.outcomes;
}

}  // namespace tuned
