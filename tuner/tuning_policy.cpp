#include "tuner/tuning_policy.hpp"

#include <algorithm>
#include <chrono>

#include "cache/selection_model.hpp"
#include "cache/shipped_defaults.hpp"
#include "core/cuda_check.hpp"
#include "core/log.hpp"
#include "templates/registry.hpp"
#include "tuner/session.hpp"

namespace tuned {

std::vector<Config> starting_configs(cache::Database& db, const TuningTask& task,
                                     const DeviceInfo& device) {
  const ProblemKey key = task.key();
  std::vector<Config> first;
  auto add = [&](const std::string& text) {
    try {
      // (A config recorded before a parameter existed means that parameter's old value.)
      const auto config = task.adapt(read_config(text, config_params(key.op)));
      if (!task.space().violation(config)) first.push_back(config);
    } catch (const Error&) {  // a config of an older template
    }
  };
  if (auto previous = db.find_best(key)) add(previous->config);
  // A twin GPU's best for this problem (same model, compute capability and SM count: a merged or
  // imported database from another machine of the cluster) is as good a start as our own.
  if (auto twin = db.find_best_on_twin(key, cache::device_record(device))) add(twin->config);
  std::vector<std::pair<double, std::string>> others;
  for (const auto& best : db.bests({key.device_uuid, key.op, 0, 0})) {
    if (best.key.variant != key.variant || best.key.shape == key.shape) continue;
    others.emplace_back(shape_distance(best.key.shape, key.shape), best.config);
  }
  std::sort(others.begin(), others.end());
  constexpr size_t kTransferred = 6;
  for (size_t i = 0; i < others.size() && i < kTransferred; ++i) add(others[i].second);
  // The selection model's picks, and a few of each model of another GPU of this architecture
  // (see SelectionModel::same_arch_devices).
  constexpr size_t kModelPicks = 8;
  const auto& model = cache::SelectionModel::builtin();
  const int cc = device.compute_capability();
  auto add_ranked = [&](const std::string& model_device, size_t picks) {
    for (const auto& r : model.rank(
             key.op, model_device, cc, key.variant, key.shape, key.alignment,
             [&](const std::string&) { return true; }, picks)) {
      add(r.config);
    }
  };
  add_ranked(device.name, kModelPicks);
  for (const auto& other : model.same_arch_devices(key.op, device.name, cc)) {
    add_ranked(other, kSameArchPicks);
  }
  auto& shipped = cache::ShippedDefaults::builtin();
  if (auto s = shipped.find_best(key, device.name, device.compute_capability())) add(s->config);
  for (const auto& seed : task.seed_configs()) {
    const Config adapted = task.adapt(seed);
    if (!task.space().violation(adapted)) first.push_back(adapted);  // a [space] restriction holds
  }
  return first;
}

bool keep_best(cache::Database& db, const cache::BestRecord& best, const KernelSpec& spec,
               const DeviceInfo& device, const CubinRecord* cubin) {
  // Marked with the template it was measured on, so that a template change never serves it.
  cache::BestRecord marked = best;
  if (marked.template_hash.empty()) marked.template_hash = spec.source_hash;
  if (!db.offer_best(marked)) return false;
  if (cubin != nullptr) db.put_cubin(cubin_key(spec, device), *cubin);
  return true;
}

namespace {

// What became of a quick pick's candidate, at debug level: why a pick is what it is.
void note_candidate(const std::string& what, const Config& config) {
  if (log_enabled(LogLevel::kDebug)) {
    log(LogLevel::kDebug, "quick pick: " + what + ": " + config.canonical());
  }
}

// The leaders of timed (sorted; up to what first_ms affords, within the budget's margin of the
// fastest) timed again side by side and sorted anew: one lucky sample of five does not decide.
void retime_leaders(TuningTask& task, std::vector<QuickPick>& timed, double first_ms,
                    const QuickPickBudget& budget, cudaStream_t stream) {
  size_t leaders = 0;
  const size_t affordable = timed.empty() ? 0 : budget.leaders_for(first_ms);
  while (leaders < std::min(affordable, timed.size()) &&
         timed[leaders].ms <= timed.front().ms * (1 + budget.leader_margin)) {
    ++leaders;
  }
  if (leaders < 2) return;
  std::vector<std::function<void(cudaStream_t)>> runs;
  for (size_t i = 0; i < leaders; ++i) {
    runs.push_back(
        [&task, &pick = timed[i]](cudaStream_t s) { task.run(*pick.kernel, pick.config, s); });
  }
  const auto again = time_side_by_side(runs, {}, stream, budget.leader_rounds, budget.samples);
  for (size_t i = 0; i < leaders; ++i) {
    timed[i].ms = again[i].ms_median;
    note_candidate("leader again in " + std::to_string(timed[i].ms) + " ms", timed[i].config);
  }
  std::sort(timed.begin(), timed.begin() + static_cast<std::ptrdiff_t>(leaders),
            [](const QuickPick& a, const QuickPick& b) { return a.ms < b.ms; });
}

}  // namespace

std::optional<QuickPick> quick_pick(TuningTask& task, KernelCache& kernels,
                                    const DeviceInfo& device, const std::vector<Config>& candidates,
                                    const QuickPickBudget& budget, cudaStream_t stream) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto setup_started = Clock::now();
  task.allocate();
  task.fresh_inputs(1, stream);
  // The buffers, inputs and references of a large product take 150 ms on an H200, as much as
  // timing a dozen candidates: the candidates' time is counted from here, the setup counts
  // against the whole pick's bound only.
  const double setup_ms = ms_since(setup_started);
  const auto started = Clock::now();
  auto spent_ms = [&] { return ms_since(started); };
  std::vector<QuickPick> timed;
  double allowed_ms = budget.budget_ms;
  size_t allowed = candidates.size();
  double one_ms = 0;    // what timing one candidate took (the first): the next must fit in the rest
  double first_ms = 0;  // the first candidate's run time, which sized the budget
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Config& config = candidates[i];
    auto note = [&](const std::string& what) {
      if (!log_enabled(LogLevel::kDebug)) return;
      note_candidate("candidate " + std::to_string(i) + " " + what + " (" +
                         std::to_string(spent_ms()) + " ms spent)",
                     config);
    };
    if (!timed.empty() && (spent_ms() + one_ms > allowed_ms || timed.size() >= allowed)) {
      note("and the rest not timed: budget spent");
      break;
    }
    QuickPick pick;
    pick.config = config;
    const double before_ms = spent_ms();
    try {
      const KernelSpec spec = task.kernel_spec(config);
      // After the first, a candidate whose kernel would need NVRTC is passed over.
      pick.kernel = timed.empty() ? kernels.get(spec, device) : kernels.get_if_ready(spec, device);
      if (!pick.kernel) {
        note("passed over: its kernel needs NVRTC");
        continue;
      }
      auto run = [&](cudaStream_t s) { task.run(*pick.kernel, config, s); };
      pick.ms = time_runs(run, stream, budget.samples).ms_median;
    } catch (const Error& e) {
      note(std::string("skipped: ") + e.what());
      continue;  // a candidate that does not run is skipped, never fatal
    }
    note("ran in " + std::to_string(pick.ms) + " ms");
    if (timed.empty()) {  // the first run time says how much more the product is worth
      allowed_ms = budget.allowed_ms(pick.ms, setup_ms);
      allowed = budget.allowed_candidates(pick.ms);
      one_ms = spent_ms() - before_ms;
      first_ms = pick.ms;
    }
    timed.push_back(std::move(pick));
  }
  std::sort(timed.begin(), timed.end(),
            [](const QuickPick& a, const QuickPick& b) { return a.ms < b.ms; });
  retime_leaders(task, timed, first_ms, budget, stream);
  // The winner must compute the function (on fresh inputs, poisoned output); else the next.
  for (auto& pick : timed) {
    task.fresh_inputs(2, stream);
    const MatrixCheck result = task.check(*pick.kernel, pick.config, stream);
    if (result.passed(task.tolerance())) {
      pick.timed = static_cast<int>(timed.size());
      return pick;
    }
    note_candidate("failed its check (" + result.describe() + ")", pick.config);
  }
  return std::nullopt;
}

}  // namespace tuned
