#include "tuner/replay_evaluator.hpp"

#include <limits>
#include <thread>
#include <unordered_map>

#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

class ReplayTask : public TaskEvaluator {
 public:
  ReplayTask(const ReplayedProblem& problem, const DeviceInfo& device, int compile_threads,
             std::chrono::milliseconds pace)
      : problem_(problem), device_(device), compile_threads_(compile_threads), pace_(pace) {}

  ProblemKey key() const override {
    const RecordedSpace& r = problem_.record;
    return {device_.uuid, r.op, r.variant, r.shape, r.alignment};
  }
  std::string template_hash() const override { return problem_.record.template_hash; }
  double rate(double ms) const override { return ms > 0 ? problem_.rate_at_1ms / ms : 0; }
  std::string rate_unit() const override { return problem_.rate_unit; }
  std::string baseline_name() const override { return "recorded baseline"; }

  // The record's starting configs: the session it was recorded from started there.
  std::vector<Config> starting_configs(cache::Database&) override {
    std::vector<Config> first;
    for (const auto& text : problem_.record.first) {
      first.push_back(read_config(text, config_params(problem_.record.op)));
    }
    return first;
  }

  SessionResult search(const SessionOptions& options, int64_t session_id, const TrialSink& record,
                       const ProgressSink& progress, const BestSink& improved) override;

  // No kernel was built: the best alone, marked with the recorded template.
  bool keep_best(cache::Database& db, const cache::BestRecord& best, const CubinRecord*) override {
    cache::BestRecord marked = best;
    if (marked.template_hash.empty()) marked.template_hash = problem_.record.template_hash;
    return db.offer_best(marked);
  }

 private:
  cache::TrialRecord trial_record(const RecordedTrial& t, int64_t session_id) const {
    cache::TrialRecord trial;
    trial.session_id = session_id;
    trial.key = key();
    // Recorded as a session records it (read_recorded_space keyed it flat).
    const auto& params = config_params(problem_.record.op);
    trial.config = config_text(read_config(t.config, params), params);
    trial.kernel_name = "replayed";
    trial.disposition = cache::disposition_from_string(t.disposition);
    trial.ms_median = t.ms;
    trial.ms_min = t.ms;
    trial.runs = t.runs;
    trial.rate = rate(t.ms);
    trial.rate_unit = problem_.rate_unit;
    trial.compile_ms = t.compile_ms;
    trial.template_hash = problem_.record.template_hash;
    return trial;
  }

  const ReplayedProblem& problem_;
  const DeviceInfo& device_;
  int compile_threads_;
  std::chrono::milliseconds pace_;
};

SessionResult ReplayTask::search(const SessionOptions& options, int64_t session_id,
                                 const TrialSink& record, const ProgressSink& progress,
                                 const BestSink& improved) {
  ReplayOptions replay_options;
  replay_options.strategy = options.strategy;
  replay_options.seed = options.seed;
  replay_options.first = options.first;
  replay_options.compile_threads = compile_threads_;
  replay_options.max_evals =
      options.max_trials > 0 ? options.max_trials : std::numeric_limits<int>::max();
  replay_options.max_seconds = options.budget_s;
  replay_options.patience = options.patience;
  const ReplayResult replayed = replay(problem_.space, problem_.record, replay_options);

  std::unordered_map<std::string, const RecordedTrial*> by_config;
  for (const auto& t : problem_.record.trials) by_config.emplace(t.config, &t);
  SessionResult result;
  result.baseline = {problem_.record.baseline_ms, problem_.record.baseline_ms, 20};
  result.stop.reason = replayed.stop_reason;
  Progress shown;
  shown.trials_limit = options.max_trials;
  shown.baseline_ms = problem_.record.baseline_ms;
  for (const ReplayStep& step : replayed.steps) {
    // A config measured before on this template is the strategy's at once, as in a session.
    if (options.measured.count(step.config)) {
      shown.resumed = ++result.resumed;
      continue;
    }
    if (options.stop && options.stop->load()) {
      result.stop.reason = StopReason::kInterrupted;
      break;
    }
    if (pace_.count() > 0) std::this_thread::sleep_for(pace_);
    result.trials.push_back(trial_record(*by_config.at(step.config), session_id));
    const cache::TrialRecord& trial = result.trials.back();
    record({trial});
    const bool ok = trial.disposition == cache::Disposition::kOk;
    if (ok && (!result.best || trial.ms_median < result.best->ms_median)) {
      result.best = trial;
      improved(trial, BuiltKernel{}, problem_.record.baseline_ms);
    }
    shown.trials_done = static_cast<int>(result.trials.size());
    shown.trials_ok += ok;
    shown.elapsed_s = step.seconds;
    shown.best = result.best;
    shown.last = &trial;
    shown.phase = "replaying";
    if (progress) progress(shown);
  }
  result.elapsed_s = replayed.steps.empty() ? 0 : replayed.steps.back().seconds;
  return result;
}

}  // namespace

std::unique_ptr<TaskEvaluator> ReplayDevice::task(const TaskRequest& request) {
  // "" is the op's first variant, as a session takes it.
  const OpInfo* op = find_op_info(request.op);
  const std::string variant =
      request.layout.empty() && op && !op->variants.empty() ? op->variants.front() : request.layout;
  for (const ReplayedProblem& problem : problems_) {
    const RecordedSpace& r = problem.record;
    if (r.op == request.op && r.variant == variant && r.shape == request.shape) {
      return std::make_unique<ReplayTask>(problem, device_, compile_threads_, pace_);
    }
  }
  throw Error(TUNED_STATUS_INVALID_ARGUMENT, "replay: no recorded space for " + request.op + " " +
                                                 request.layout + " " +
                                                 shape_string(request.shape));
}

}  // namespace tuned
