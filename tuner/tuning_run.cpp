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

// One task on one device (its tuner's thread): a session, its trials and bests in the database.
class TaskRun {
 public:
  TaskRun(RunState& run, DeviceEvaluator& device, const TaskQueue::Grant& grant)
      : run_(run),
        device_(device.device()),
        index_(grant.task),
        budget_s_(grant.budget_s),
        task_(device.task(run.problems[grant.task].request)) {
    view_ = {index_, task_->key(), task_->rate_unit(), task_->baseline_name(), &device_};
  }

  // Throws for a device error, after its outcome is kept.
  void run() {
    const int recorded = run_.problems[index_].recorded_alignment;
    if (recorded != 0 && recorded != view_.key.alignment) {
      run_.observer.alignment_changed(view_, recorded);
    }
    const SessionOptions options = session_options();
    cache::SessionRecord session;
    session.device_uuid = device_.uuid;
    session.op = view_.key.op;
    session.strategy = run_.options.session.strategy;
    session.budget_s = options.budget_s;
    session_ = run_.db.begin_session(session);
    if (!options.measured.empty()) run_.observer.resuming(view_, options.measured.size());
    const SessionResult result = task_->search(
        options, session_.id,
        [&](const std::vector<cache::TrialRecord>& batch) { run_.db.record_trials(batch); },
        [&](const Progress& p) { run_.observer.progress(view_, p); },
        // Each improvement is stored with its cubin at once: a kill keeps the best so far.
        [&](const cache::TrialRecord& t, const BuiltKernel& built, double baseline_ms) {
          task_->keep_best(run_.db, best_record(t, t.ms_median, baseline_ms), &built.cubin);
        });
    end(outcome(result));
    if (result.stop_reason.rfind("device error", 0) == 0) {
      throw Error(TUNED_STATUS_LAUNCH_ERROR,
                  (run_.several_devices ? "GPU " + std::to_string(device_.index) + ": " : "") +
                      result.stop_reason);
    }
  }

 private:
  SessionOptions session_options() const {
    const TuningRunOptions& run = run_.options;
    SessionOptions options = run.session;
    options.budget_s = budget_s_;
    options.seed =
        run.seed
            ? run.seed + index_
            : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    options.first = task_->starting_configs(run_.db);
    options.stop = run.stop;
    if (!run.remeasure) {
      // A re-run resumes: what this key's trials on this template measured is not measured
      // again.
      for (const auto& t : run_.db.measured(view_.key, task_->template_hash())) {
        auto& known = options.measured[t.config];
        if (t.disposition == cache::Disposition::kOk && (!known || t.ms_median < *known)) {
          known = t.ms_median;
        }
      }
    }
    return options;
  }

  cache::BestRecord best_record(const cache::TrialRecord& t, double ms, double baseline_ms) const {
    cache::BestRecord best;
    best.key = view_.key;
    best.config = t.config;
    best.kernel_name = t.kernel_name;
    best.ms = ms;
    best.rate = task_->rate(ms);
    best.rate_unit = view_.rate_unit;
    best.baseline_ms = baseline_ms;
    best.session_id = session_.id;
    return best;
  }

  // The row of the task; the best re-timed at the end is offered to the database again (its time
  // beside the baseline is the one the table states).
  TaskOutcome outcome(const SessionResult& result) {
    TaskOutcome row;
    row.key = view_.key;
    row.rate_unit = view_.rate_unit;
    row.baseline_name = view_.baseline_name;
    row.gpu = device_.index;
    row.device_name = device_.name;
    row.trials = static_cast<int>(result.trials.size());
    for (const auto& t : result.trials) row.ok += t.disposition == cache::Disposition::kOk;
    row.baseline_ms =
        result.final_baseline.runs ? result.final_baseline.ms_median : result.baseline.ms_median;
    row.baseline_rate = task_->rate(row.baseline_ms);
    if (result.best) {
      row.config = result.best->config;
      row.ms = result.final_best.runs ? result.final_best.ms_median : result.best->ms_median;
      row.rate = task_->rate(row.ms);
      const CubinRecord* cubin = result.best_kernel ? &result.best_kernel->cubin : nullptr;
      if (!task_->keep_best(run_.db, best_record(*result.best, row.ms, row.baseline_ms), cubin)) {
        row.note = "database keeps a faster earlier best";
      }
    } else if (result.trials.empty() && result.resumed > 0) {
      row.note = "nothing new to measure: every config proposed was measured before";
    } else {
      row.note = "no valid config";
    }
    return row;
  }

  void end(TaskOutcome row) {
    std::lock_guard<std::mutex> lock(run_.mutex);
    run_.outcomes[index_] = std::move(row);
    run_.observer.task_ended(view_, run_.outcomes);
  }

  RunState& run_;
  const DeviceInfo& device_;
  size_t index_;
  double budget_s_;
  std::unique_ptr<TaskEvaluator> task_;
  TaskView view_;
  cache::SessionRecord session_;
};

// One device's tuner, on its own thread: tasks from the queue until none is left. A tuner that
// fails stops taking tasks (the others take them) and leaves its error.
void tuner(RunState& run, DeviceEvaluator& device, std::exception_ptr& error) {
  try {
    device.start();
    while (const auto grant = run.queue.next()) {
      const auto started = std::chrono::steady_clock::now();
      auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      };
      try {
        TaskRun(run, device, *grant).run();
      } catch (...) {
        run.queue.done(*grant, elapsed());
        throw;
      }
      run.queue.done(*grant, elapsed());
    }
  } catch (...) {
    error = std::current_exception();
  }
  try {
    device.finish();
  } catch (...) {
    if (!error) error = std::current_exception();
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
  TuningRunOptions resolved = options;
  if (several && resolved.session.compile_threads == 0) {
    // The compile pools share the cores: each tuner its part, less its measuring thread.
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    resolved.session.compile_threads = std::max(1, cores / static_cast<int>(devices.size()) - 1);
  }
  RunState run{problems, db, resolved, observer, queue};
  run.several_devices = several;
  run.outcomes.resize(problems.size());
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<std::thread> tuners;
  for (size_t g = 0; g < devices.size(); ++g) {
    tuners.emplace_back(tuner, std::ref(run), std::ref(*devices[g]), std::ref(errors[g]));
  }
  for (auto& t : tuners) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return run.outcomes;
}

}  // namespace tuned
