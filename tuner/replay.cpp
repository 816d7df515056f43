#include "tuner/replay.hpp"

#include <algorithm>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "tuned/error.hpp"
#include "tuner/strategy.hpp"

namespace tuned {

double RecordedSpace::best_ms() const {
  double best = 0;
  for (const auto& t : trials) {
    if (t.ok && t.ms > 0 && (best == 0 || t.ms < best)) best = t.ms;
  }
  return best;
}

std::string RecordedSpace::name() const {
  std::ostringstream out;
  if (!variant.empty()) out << variant << " ";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "x" : "") << shape[i];
  return out.str();
}

namespace {

// What time_runs spends on a kernel of ms per call: samples of at least a millisecond.
double sample_ms(double ms) { return std::max(ms, 1.0); }

}  // namespace

double modelled_measure_ms(const RecordedTrial& trial, double baseline_ms) {
  // A compile or resource refusal costs nothing on the GPU; a refused result cost fresh inputs
  // (with their reference, about two baseline runs) and one run.
  if (!trial.ran) return 0.5;
  if (!trial.ok) return 2.0 + 2.0 * baseline_ms + sample_ms(trial.ms);
  // Load and fresh inputs with their reference, the check's run, then time_runs: a warm-up run,
  // one alone, and the timed samples.
  return 2.0 + 2.0 * baseline_ms + trial.ms + 2.0 * trial.ms + trial.runs * sample_ms(trial.ms);
}

double modelled_session_start_ms(double baseline_ms) {
  return 2.0 + 2.0 * baseline_ms + 22 * sample_ms(baseline_ms);
}

namespace {

// The space's best over the best found among the steps up to `limit` on `axis` (0: none passed).
template <typename Axis>
double fraction_after(const std::vector<ReplayStep>& steps, Axis ReplayStep::*axis, Axis limit,
                      double space_best_ms) {
  double best = 0;
  for (const auto& s : steps) {
    if (s.*axis > limit) break;
    best = s.best_ms;
  }
  return best > 0 ? space_best_ms / best : 0;
}

}  // namespace

double ReplayResult::fraction_after_evals(int evals, double space_best_ms) const {
  return fraction_after(steps, &ReplayStep::evals, evals, space_best_ms);
}

double ReplayResult::fraction_after_seconds(double seconds, double space_best_ms) const {
  return fraction_after(steps, &ReplayStep::seconds, seconds, space_best_ms);
}

ReplayResult replay(const Space& space, const RecordedSpace& record, const ReplayOptions& options) {
  std::unordered_map<std::string, const RecordedTrial*> by_config;
  for (const auto& t : record.trials) by_config.emplace(t.config, &t);

  auto strategy = make_strategy(options.strategy, space, options.first, options.seed);
  const int threads = std::max(1, options.compile_threads);
  const size_t depth = 2 * static_cast<size_t>(threads);  // as run_session keeps in flight

  // The compile pool: each worker free from a time on; a job starts when submitted and a worker
  // is free, in submission order, and is measured in completion order.
  std::vector<double> worker_free(threads, 0.0);
  struct Done {
    double at;
    size_t order;
    const RecordedTrial* trial;
    Config config;
  };
  auto later = [](const Done& a, const Done& b) {
    return a.at != b.at ? a.at > b.at : a.order > b.order;
  };
  std::priority_queue<Done, std::vector<Done>, decltype(later)> in_flight(later);
  size_t submitted = 0;

  ReplayResult result;
  double now_ms = modelled_session_start_ms(record.baseline_ms);
  double best = 0;
  int evals = 0, since_better = 0;
  bool strategy_done = false;
  while (true) {
    if (evals >= options.max_evals) {
      result.stop_reason = StopReason::kTrialLimit;
      break;
    }
    if (options.max_seconds > 0 && now_ms >= options.max_seconds * 1000) {
      result.stop_reason = StopReason::kBudget;
      break;
    }
    if (options.patience > 0 && since_better >= options.patience) {
      result.stop_reason = StopReason::kPatience;
      break;
    }
    while (!strategy_done && in_flight.size() < depth &&
           submitted < static_cast<size_t>(options.max_evals)) {
      auto config = strategy->next();
      if (!config) {
        strategy_done = true;
        break;
      }
      auto it = by_config.find(config->canonical());
      if (it == by_config.end()) {
        throw Error(TUNED_STATUS_INTERNAL_ERROR,
                    "replay: " + options.strategy + " proposed " + config->canonical() +
                        ", which the record of " + record.name() + " lacks");
      }
      auto free = std::min_element(worker_free.begin(), worker_free.end());
      const double start = std::max(*free, now_ms);
      *free = start + it->second->compile_ms;
      in_flight.push({*free, submitted++, it->second, *config});
    }
    if (in_flight.empty()) {
      result.stop_reason = StopReason::kSpaceExhausted;
      break;
    }
    Done job = in_flight.top();
    in_flight.pop();
    now_ms = std::max(now_ms, job.at) + modelled_measure_ms(*job.trial, record.baseline_ms);
    const RecordedTrial& t = *job.trial;
    strategy->report(job.config, t.ok ? std::optional<double>(t.ms) : std::nullopt);
    ++evals;
    if (t.ok && (best == 0 || t.ms < best)) {
      best = t.ms;
      since_better = 0;
    } else {
      ++since_better;
    }
    result.steps.push_back({evals, now_ms / 1000, best, t.config});
  }
  return result;
}

}  // namespace tuned
