#include "tuner/task_run.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

class TaskRun {
 public:
  TaskRun(const TaskPlan& plan, DeviceEvaluator& device, cache::Database& db,
          const TuningRunOptions& options, TuningObserver& observer, const SharedRecords& shared)
      : plan_(plan),
        device_(device.device()),
        db_(db),
        options_(options),
        observer_(observer),
        shared_(shared),
        task_(device.task(plan.problem->request)) {
    view_ = {plan.index, task_->key(), task_->rate_unit(), task_->baseline_name(), &device_};
  }

  TaskResult run() {
    const int recorded = plan_.problem->recorded_alignment;
    if (recorded != 0 && recorded != view_.key.alignment) {
      observer_.alignment_changed(view_, recorded);
    }
    const SessionOptions options = session_options();
    cache::SessionRecord session;
    session.device_uuid = device_.uuid;
    session.op = view_.key.op;
    session.strategy = options_.session.strategy;
    session.budget_s = options.budget_s;
    session_ = db_.begin_session(session);
    if (shared_.store) store_session_ = shared_.store->add_session(session_, shared_.node);
    if (!options.measured.empty()) observer_.resuming(view_, options.measured.size());
    const SessionResult result = task_->search(
        options, session_.id,
        [&](const std::vector<cache::TrialRecord>& batch) {
          db_.record_trials(batch);
          if (shared_.store) shared_.store->record_trials(store_session_, batch);
        },
        [&](const Progress& p) { observer_.progress(view_, p); },
        // Each improvement is stored with its cubin at once: a kill keeps the best so far.
        [&](const cache::TrialRecord& t, const BuiltKernel& built, double baseline_ms) {
          keep(best_record(t, t.ms_median, baseline_ms), &built.cubin);
        });
    TaskResult out;
    out.outcome = outcome(result);
    if (result.stop.reason == StopReason::kDeviceError) out.device_error = result.stop.text();
    return out;
  }

 private:
  SessionOptions session_options() {
    SessionOptions options = options_.session;
    options.budget_s = plan_.budget_s;
    options.seed =
        plan_.seed
            ? plan_.seed
            : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    options.first = task_->starting_configs(db_);
    options.stop = plan_.stop;
    if (!options_.remeasure) {
      // A re-run resumes: what this key's trials on this template measured is not measured
      // again, here or (with a store) on any GPU of this model.
      // Keyed as the session looks them up (every parameter, flat): rows name families by word,
      // older ones list every parameter.
      const std::vector<Param>& params = config_params(view_.key.op);
      auto note = [&](const cache::TrialRecord& t) {
        std::string key = t.config;
        try {
          key = read_config(t.config, params).canonical();
        } catch (const Error&) {  // no config of this op's: kept as written, never proposed
        }
        auto& known = options.measured[key];
        if (t.disposition == cache::Disposition::kOk && (!known || t.ms_median < *known)) {
          known = t.ms_median;
        }
      };
      const std::string hash = task_->template_hash();
      for (const auto& t : db_.measured(view_.key, hash)) note(t);
      if (shared_.store) {
        const auto model = cache::DeviceModel::of(cache::device_record(device_));
        for (const auto& t : shared_.store->measured(view_.key, model, hash)) {
          note(t);
          if (t.disposition == cache::Disposition::kOk &&
              (!stored_best_ || t.ms_median < stored_best_->ms_median)) {
            stored_best_ = t;
          }
        }
      }
    }
    return options;
  }

  // Kept here (the evaluator's rule), then offered to the store, which keeps the faster per GPU
  // model; returns whether the database here kept it.
  bool keep(const cache::BestRecord& best, const CubinRecord* cubin) {
    const bool kept = task_->keep_best(db_, best, cubin);
    if (shared_.store) {
      cache::BestRecord sent = best;
      if (sent.template_hash.empty()) sent.template_hash = task_->template_hash();
      sent.origin = cache::BestOrigin::kAutotune;
      shared_.store->offer_best(sent, cache::device_record(device_), session_.origin);
    }
    return kept;
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
      if (!keep(best_record(*result.best, row.ms, row.baseline_ms), cubin)) {
        row.note = "database keeps a faster earlier best";
      }
    }
    // A task resumed from the store's trials: the fastest of those may be its best (a worker
    // killed between storing a trial and offering it as best left it so).
    if (stored_best_ && (row.config.empty() || stored_best_->ms_median < row.ms)) {
      row.config = stored_best_->config;
      row.ms = stored_best_->ms_median;
      row.rate = task_->rate(row.ms);
      keep(best_record(*stored_best_, row.ms, row.baseline_ms), nullptr);
      row.note = "its best measured before this claim";
    } else if (!result.best) {
      row.note = result.trials.empty() && result.resumed > 0
                     ? "nothing new to measure: every config proposed was measured before"
                     : "no valid config";
    }
    return row;
  }

  const TaskPlan& plan_;
  const DeviceInfo& device_;
  cache::Database& db_;
  const TuningRunOptions& options_;
  TuningObserver& observer_;
  const SharedRecords& shared_;
  std::unique_ptr<TaskEvaluator> task_;
  TaskView view_;
  cache::SessionRecord session_;
  int64_t store_session_ = 0;
  std::optional<cache::TrialRecord> stored_best_;  // the store's fastest ok trial of the problem
};

}  // namespace

TaskResult run_task(const TaskPlan& plan, DeviceEvaluator& device, cache::Database& db,
                    const TuningRunOptions& options, TuningObserver& observer,
                    const SharedRecords& shared) {
  return TaskRun(plan, device, db, options, observer, shared).run();
}

void run_tuner_threads(const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                       const std::function<void(DeviceEvaluator&)>& tuner) {
  std::vector<std::exception_ptr> errors(devices.size());
  // start and finish on the tuner's own thread; a tuner that fails leaves its error.
  auto run = [&](DeviceEvaluator& device, std::exception_ptr& error) {
    try {
      device.start();
      tuner(device);
    } catch (...) {
      error = std::current_exception();
    }
    try {
      device.finish();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> tuners;
  for (size_t g = 0; g < devices.size(); ++g) {
    tuners.emplace_back(run, std::ref(*devices[g]), std::ref(errors[g]));
  }
  for (auto& t : tuners) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

TuningRunOptions sharing_cores(const TuningRunOptions& options, size_t devices) {
  TuningRunOptions shared = options;
  if (devices > 1 && shared.session.compile_threads == 0) {
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    shared.session.compile_threads = std::max(1, cores / static_cast<int>(devices) - 1);
  }
  return shared;
}

}  // namespace tuned
