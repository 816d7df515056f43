#include "tuner/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include "core/cuda_raii.hpp"
#include "templates/registry.hpp"
#include "tuner/compile_pool.hpp"
#include "tuner/strategy.hpp"

namespace tuned {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string first_lines(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + " ...";
}

// True when the CUDA context can no longer be used (a kernel faulted): nothing after it can run.
bool context_lost() {
  const cudaError_t err = cudaDeviceSynchronize();
  return err != cudaSuccess && cudaGetLastError() != cudaSuccess &&
         cudaDeviceSynchronize() != cudaSuccess;
}

// Extra-slow candidates are measured once and dropped: their median would not change the outcome.
constexpr double kAbandonFactor = 8.0;
// One run slower than this is a timeout, whatever the best is.
constexpr double kTimeoutMs = 2000.0;
// Time spent measuring one candidate, before its runs are capped.
constexpr double kTimingBudgetMs = 250.0;
// A timed sample lasts at least this long (back-to-back calls of a short kernel), up to this many
// calls.
constexpr double kSampleMs = 1.0;
constexpr int kMaxCallsPerSample = 200;

BaselineTiming summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  BaselineTiming t;
  t.runs = static_cast<int>(ms.size());
  t.ms_min = ms.front();
  t.ms_median =
      ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return t;
}

// A candidate the final round may time again: its trial and its cubin.
struct Leader {
  cache::TrialRecord trial;
  BuiltKernel built;
};

// Keeps `leaders` sorted by time and at most `count` long.
void add_leader(std::vector<Leader>& leaders, size_t count, const cache::TrialRecord& trial,
                const BuiltKernel& built) {
  if (count == 0) return;
  if (leaders.size() == count && trial.ms_median >= leaders.back().trial.ms_median) return;
  auto at = std::upper_bound(leaders.begin(), leaders.end(), trial.ms_median,
                             [](double ms, const Leader& l) { return ms < l.trial.ms_median; });
  leaders.insert(at, Leader{trial, built});
  if (leaders.size() > count) leaders.pop_back();
}

}  // namespace

BaselineTiming time_runs(const std::function<void(cudaStream_t)>& run, cudaStream_t stream,
                         int runs, double give_up_ms,
                         const std::function<void(cudaStream_t)>& cold) {
  Event start = Event::create(), stop = Event::create();
  run(stream);  // warm-up: first-touch, instruction cache, clocks
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (cold) {
    // Warm-up done, every sample pays for its own operands from DRAM.
    std::vector<double> ms;
    for (int i = 0; i < std::max(1, runs); ++i) {
      cold(stream);
      start.record(stream);
      run(stream);
      stop.record(stream);
      ms.push_back(stop.elapsed_since(start));
      if (give_up_ms > 0 && ms.back() > give_up_ms) break;
    }
    return summarize(ms);
  }
  // One launch alone sizes the samples: each sample is `calls` launches back to back (at least
  // kSampleMs), timed as a whole. That is how a program's loop calls a kernel and how the
  // benchmarks time it: a launch then overlaps the previous one's tail, as it does in use, and
  // kernels that chain several launches (a packing or summing pass) are not charged a launch gap
  // per pass that back-to-back calls do not pay. Timed alone, a 60 us product read 10% faster
  // against cuBLAS than it runs in a loop
  // (archive/2026-12/bench/results/history/gemm_issue10_probes_nvidia-h100.txt).
  auto timed = [&](int calls) {
    start.record(stream);
    for (int c = 0; c < calls; ++c) run(stream);
    stop.record(stream);
    return stop.elapsed_since(start) / calls;
  };
  const double alone = timed(1);
  const int calls = alone >= kSampleMs
                        ? 1
                        : std::min(kMaxCallsPerSample,
                                   static_cast<int>(std::ceil(kSampleMs / std::max(alone, 1e-4))));
  std::vector<double> ms;
  for (int i = 0; i < std::max(1, runs); ++i) {
    ms.push_back(i == 0 && calls == 1 ? alone : timed(calls));
    if (give_up_ms > 0 && ms.back() > give_up_ms) break;
  }
  return summarize(ms);
}

std::vector<BaselineTiming> time_side_by_side(
    const std::vector<std::function<void(cudaStream_t)>>& runs,
    const std::function<void(cudaStream_t)>& baseline, cudaStream_t stream, int rounds, int samples,
    const std::function<void(cudaStream_t)>& cold) {
  std::vector<std::function<void(cudaStream_t)>> all = runs;
  if (baseline) all.push_back(baseline);
  std::vector<BaselineTiming> kept(all.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < all.size(); ++i) {
      const BaselineTiming t = time_runs(all[i], stream, samples, 0, cold);
      if (kept[i].runs == 0 || t.ms_median < kept[i].ms_median) kept[i] = t;
    }
  }
  return kept;
}

namespace {

// One tuning session: candidates from the strategy compiled ahead on a pool, each checked and
// timed as it comes back, recorded at once; the leaders timed again at the end.
class SessionRun {
 public:
  SessionRun(TuningTask& task, const DeviceInfo& device, KernelCache& kernels,
             const SessionOptions& options, int64_t session_id, const TrialSink& record,
             const ProgressSink& progress, const BestSink& improved)
      : task_(task),
        device_(device),
        options_(options),
        session_id_(session_id),
        record_(record),
        progress_(progress),
        improved_(improved),
        stream_(Stream::create()),
        strategy_(make_strategy(options.strategy, task.space(), options.first, options.seed)),
        pool_(std::in_place, kernels, device,
              options.compile_threads > 0 ? options.compile_threads : default_compile_threads()),
        depth_(2 * static_cast<size_t>(pool_->threads())) {}

  SessionResult run() {
    task_.allocate();
    task_.fresh_inputs(seed_++, stream_.get());
    result_.baseline = time_runs([&](cudaStream_t s) { task_.run_baseline(s); }, stream_.get(), 20);
    while (true) {
      if (std::optional<StopReason> reason = limit_reached()) {
        result_.stop.reason = *reason;
        break;
      }
      submit_candidates();
      if (pool_->in_flight() == 0) {
        result_.stop.reason =
            strategy_done_ ? StopReason::kSpaceExhausted : StopReason::kTrialLimit;
        break;
      }
      CompileJob job = pool_->wait();
      const cache::TrialRecord& t = take(job, evaluate(job));
      if (t.disposition == cache::Disposition::kLaunchError && context_lost()) {
        result_.stop = {StopReason::kDeviceError, "after " + t.kernel_name + ": " + t.message};
        break;
      }
    }
    flush();
    // Compiles still queued or running when the budget ends would share the CPU with the final
    // timing: a baseline that runs on the CPU (entropy's) measured 10-100x slow beside them.
    pool_.reset();
    if (!leaders_.empty() && result_.stop.reason != StopReason::kDeviceError &&
        result_.stop.reason != StopReason::kInterrupted) {
      final_round();
    }
    if (!leaders_.empty()) result_.best_kernel = std::move(leaders_.front().built);
    result_.elapsed_s = seconds_since(started_);
    return std::move(result_);
  }

 private:
  // The limit that ends the session before the next candidate, if one is reached.
  std::optional<StopReason> limit_reached() const {
    if (options_.stop && options_.stop->load()) return StopReason::kInterrupted;
    if (seconds_since(started_) >= options_.budget_s) return StopReason::kBudget;
    if (options_.max_trials > 0 && static_cast<int>(result_.trials.size()) >= options_.max_trials) {
      return StopReason::kTrialLimit;
    }
    if (options_.patience > 0 && since_better_ >= options_.patience) return StopReason::kPatience;
    return std::nullopt;
  }

  // Keeps the pool `depth_` jobs deep with the strategy's next candidates.
  void submit_candidates() {
    while (!strategy_done_ && pool_->in_flight() < depth_ &&
           (options_.max_trials == 0 || submitted_ < options_.max_trials)) {
      auto config = strategy_->next();
      if (!config) {
        strategy_done_ = true;
        return;
      }
      // Measured by an earlier run: its result guides the strategy, nothing is measured again.
      if (auto before = options_.measured.find(config->canonical());
          before != options_.measured.end()) {
        strategy_->report(*config, before->second);
        ++result_.resumed;
        continue;
      }
      CompileJob job;
      job.config = *config;
      job.spec = task_.kernel_spec(*config);
      pool_->submit(std::move(job));
      ++submitted_;
    }
  }

  // A compiled candidate's trial: refused for what keeps it from running, else checked and timed.
  cache::TrialRecord evaluate(CompileJob& job) {
    cache::TrialRecord t;
    t.session_id = session_id_;
    t.key = task_.key();
    t.config = config_text(job.config, config_params(t.key.op));
    t.kernel_name = job.spec.kernel_name;
    t.template_hash = job.spec.source_hash;
    t.rate_unit = task_.rate_unit();
    if (!job.built) {
      t.disposition = cache::Disposition::kCompileError;
      t.message = first_lines(job.error, 2000);
      return t;
    }
    const auto& cubin = job.built->cubin;
    t.registers = cubin.registers;
    t.spill_bytes = cubin.spill_bytes;
    t.compile_ms = cubin.compile_ms;
    const LaunchGeometry geometry = task_.geometry(job.config);
    const unsigned threads_needed = geometry.block.x * geometry.block.y * geometry.block.z;
    if (static_cast<long long>(cubin.registers) * threads_needed > device_.regs_per_block) {
      t.disposition = cache::Disposition::kResourceLimit;
      t.message = std::to_string(cubin.registers) + " registers x " +
                  std::to_string(threads_needed) + " threads exceed the block's register file";
      return t;
    }
    std::shared_ptr<const LoadedKernel> kernel;
    try {
      kernel = KernelCache::load(*job.built, job.spec);
    } catch (const Error& e) {
      t.disposition = cache::Disposition::kLaunchError;
      t.message = first_lines(e.what(), 2000);
      return t;
    }
    if (static_cast<unsigned>(kernel->max_threads_per_block()) < threads_needed) {
      t.disposition = cache::Disposition::kResourceLimit;
      t.message = "runs at most " + std::to_string(kernel->max_threads_per_block()) +
                  " threads per block, needs " + std::to_string(threads_needed);
      return t;
    }
    try {
      check_and_time(*kernel, job.config, t);
    } catch (const Error& e) {
      t.disposition = cache::Disposition::kLaunchError;
      t.message = first_lines(e.what(), 2000);
    }
    // Spills and a stack frame are measured, not refused: they cost time, which the measurement
    // sees. Refusing them refused the TMA-fed kernels with partial chains of slice sums (KSUM = 2,
    // WN = 128), whose stack frame holds the chain: the library serves them at ~2x cuBLAS on long
    // sums, and the tuner could not even time the selection model's picks (issue 32's records).
    if (t.disposition == cache::Disposition::kOk &&
        (cubin.spill_bytes > 0 || cubin.stack_bytes > 0)) {
      t.message += (t.message.empty() ? "" : "; ") + std::to_string(cubin.spill_bytes) +
                   " bytes spilled, " + std::to_string(cubin.stack_bytes) + " bytes stack frame";
    }
    return t;
  }

  // The candidate on fresh inputs against the reference, then timed (once only when it is far
  // slower than the best so far). Throws Error when a launch fails.
  void check_and_time(const LoadedKernel& kernel, const Config& config, cache::TrialRecord& t) {
    // Fresh inputs for every candidate: it must compute the function, not match one data set.
    task_.fresh_inputs(seed_++, stream_.get());
    if (options_.before_run) options_.before_run(config);
    const MatrixCheck check = task_.check(kernel, config, stream_.get());
    t.rel_error = check.rel_error;
    if (!check.passed(task_.tolerance())) {
      // Right but less accurate than the op's contract allows: refused, and said so.
      t.disposition = check.computes(task_.tolerance()) ? cache::Disposition::kInaccurate
                                                        : cache::Disposition::kWrongResult;
      t.message = check.describe();
      return;
    }
    auto run = [&](cudaStream_t s) { task_.run(kernel, config, s); };
    const double best_ms = result_.best ? result_.best->ms_median : 0;
    BaselineTiming first = time_runs(run, stream_.get(), 1);
    if (first.ms_median > kTimeoutMs) {
      t.disposition = cache::Disposition::kTimeout;
      t.message = "one run took " + std::to_string(first.ms_median) + " ms";
      t.ms_median = t.ms_min = first.ms_median;
      t.runs = 1;
      return;
    }
    if (best_ms == 0 || first.ms_median < kAbandonFactor * best_ms) {
      const int runs =
          std::clamp(static_cast<int>(kTimingBudgetMs / std::max(first.ms_median, 1e-3)), 5, 30);
      first = time_runs(run, stream_.get(), runs, kAbandonFactor * std::max(best_ms, 0.0));
    } else {
      t.message = "measured once: over " + std::to_string(static_cast<int>(kAbandonFactor)) +
                  "x the best so far";
    }
    t.ms_median = first.ms_median;
    t.ms_min = first.ms_min;
    t.runs = first.runs;
    t.rate = task_.rate(t.ms_median);
    t.disposition = cache::Disposition::kOk;
  }

  // The trial told to the strategy, kept (best, leaders), recorded durably and reported.
  const cache::TrialRecord& take(const CompileJob& job, const cache::TrialRecord& t) {
    const bool is_ok = t.disposition == cache::Disposition::kOk;
    strategy_->report(job.config, is_ok ? std::optional<double>(t.ms_median) : std::nullopt);
    const bool is_best = is_ok && (!result_.best || t.ms_median < result_.best->ms_median);
    if (is_ok) ++ok_;
    if (is_best) result_.best = t;
    if (is_ok && job.built) add_leader(leaders_, std::max(1, options_.leaders), t, *job.built);
    since_better_ = is_best ? 0 : since_better_ + 1;
    result_.trials.push_back(t);
    batch_.push_back(t);
    if (is_best && improved_) {
      flush();  // the best's trial is recorded before the best itself
      improved_(t, leaders_.front().built, result_.baseline.ms_median);
    }
    flush();  // every measured trial is durable before the next one starts
    if (progress_) report_progress();
    return result_.trials.back();
  }

  void flush() {
    if (!batch_.empty() && record_) record_(batch_);
    batch_.clear();
  }

  void report_progress() {
    Progress p;
    p.trials_done = static_cast<int>(result_.trials.size());
    p.trials_ok = ok_;
    p.trials_limit = options_.max_trials;
    p.resumed = result_.resumed;
    p.elapsed_s = seconds_since(started_);
    p.remaining_s = std::max(0.0, options_.budget_s - p.elapsed_s);
    p.best = result_.best;
    p.baseline_ms = result_.baseline.ms_median;
    p.last = &result_.trials.back();
    p.phase = strategy_->phase();
    progress_(p);
  }

  // The leaders close to the best, each timed again beside the others and the baseline, three
  // times over in turn (so drift in clocks or temperature hits them alike); the fastest of the
  // round is the result.
  void final_round() {
    const double margin = result_.best->ms_median * (1 + std::max(0.0, options_.leader_margin));
    while (leaders_.size() > 1 && leaders_.back().trial.ms_median > margin) leaders_.pop_back();
    std::optional<DeviceBuffer> evict;
    std::function<void(cudaStream_t)> cold;
    if (options_.flush_l2) {
      // Twice the L2 (50 MB on an H100) written over evicts everything a call left there.
      evict.emplace(std::max<size_t>(2 * device_.l2_bytes, size_t{64} << 20));
      cold = [&](cudaStream_t s) {
        TUNED_CUDA_CHECK(cudaMemsetAsync(evict->get(), 0, evict->bytes(), s));
      };
      result_.flushed_l2 = true;
    }
    std::vector<std::function<void(cudaStream_t)>> runs;
    for (const auto& l : leaders_) {
      const Config config = read_config(l.trial.config, config_params(task_.key().op));
      auto kernel = KernelCache::load(l.built, task_.kernel_spec(config));
      TuningTask& task = task_;
      runs.push_back([&task, kernel, config](cudaStream_t s) { task.run(*kernel, config, s); });
    }
    std::vector<BaselineTiming> timing = time_side_by_side(
        runs, [&](cudaStream_t s) { task_.run_baseline(s); }, stream_.get(), 3, 15, cold);
    result_.final_baseline = timing.back();
    timing.pop_back();
    size_t winner = 0;
    for (size_t i = 1; i < leaders_.size(); ++i) {
      if (timing[i].ms_median < timing[winner].ms_median) winner = i;
    }
    result_.leaders_timed = static_cast<int>(leaders_.size());
    result_.final_best = timing[winner];
    result_.best = leaders_[winner].trial;
    std::swap(leaders_[0], leaders_[winner]);
  }

  TuningTask& task_;
  const DeviceInfo& device_;
  const SessionOptions& options_;
  const int64_t session_id_;
  const TrialSink& record_;
  const ProgressSink& progress_;
  const BestSink& improved_;
  const Clock::time_point started_ = Clock::now();
  Stream stream_;
  std::unique_ptr<Strategy> strategy_;
  std::optional<CompilePool> pool_;
  const size_t depth_;
  uint64_t seed_ = options_.seed * 1000003ull + 17;
  SessionResult result_;
  std::vector<cache::TrialRecord> batch_;  // measured, not yet handed to record_
  int submitted_ = 0, ok_ = 0, since_better_ = 0;
  bool strategy_done_ = false;
  // The fastest candidates so far with their cubins, fastest first: the best's is the first.
  std::vector<Leader> leaders_;
};

}  // namespace

SessionResult run_session(TuningTask& task, const DeviceInfo& device, KernelCache& kernels,
                          const SessionOptions& options, int64_t session_id,
                          const TrialSink& record, const ProgressSink& progress,
                          const BestSink& improved) {
  return SessionRun(task, device, kernels, options, session_id, record, progress, improved).run();
}

}  // namespace tuned
