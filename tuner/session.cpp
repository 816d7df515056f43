#include "tuner/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include "core/cuda_raii.hpp"
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
  // (bench/results/history/gemm_issue10_probes_nvidia-h100.txt).
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

SessionResult run_session(TuningTask& task, const DeviceInfo& device, KernelCache& kernels,
                          const SessionOptions& options, int64_t session_id,
                          const TrialSink& record, const ProgressSink& progress,
                          const BestSink& improved) {
  const auto started = Clock::now();
  SessionResult result;
  Stream stream = Stream::create();
  task.allocate();
  uint64_t seed = options.seed * 1000003ull + 17;
  task.fresh_inputs(seed++, stream.get());
  result.baseline = time_runs([&](cudaStream_t s) { task.run_baseline(s); }, stream.get(), 20);

  auto strategy = make_strategy(options.strategy, task.space(), options.first, options.seed);
  const int threads =
      options.compile_threads > 0 ? options.compile_threads : default_compile_threads();
  std::optional<CompilePool> pool(std::in_place, kernels, device, threads);
  const size_t depth = 2 * static_cast<size_t>(pool->threads());

  std::vector<cache::TrialRecord> batch;
  auto flush = [&] {
    if (!batch.empty() && record) record(batch);
    batch.clear();
  };

  int submitted = 0, ok = 0, since_better = 0;
  bool strategy_done = false;
  // The fastest candidates so far with their cubins, fastest first: the best's is the first.
  std::vector<Leader> leaders;

  auto evaluate = [&](CompileJob& job) {
    cache::TrialRecord t;
    t.session_id = session_id;
    t.key = task.key();
    t.config = job.config.canonical();
    t.kernel_name = job.spec.kernel_name;
    t.template_hash = job.spec.source_hash;
    if (!job.built) {
      t.disposition = cache::Disposition::kCompileError;
      t.message = first_lines(job.error, 2000);
      return t;
    }
    const auto& cubin = job.built->cubin;
    t.registers = cubin.registers;
    t.spill_bytes = cubin.spill_bytes;
    t.compile_ms = cubin.compile_ms;
    // Spills and a stack frame are measured, not refused: they cost time, which the measurement
    // sees. Refusing them refused the TMA-fed kernels with partial chains of slice sums (KSUM = 2,
    // WN = 128), whose stack frame holds the chain: the library serves them at ~2x cuBLAS on long
    // sums, and the tuner could not even time the selection model's picks (issue 32's records).
    std::string spilled;
    if (cubin.spill_bytes > 0 || cubin.stack_bytes > 0) {
      spilled = std::to_string(cubin.spill_bytes) + " bytes spilled, " +
                std::to_string(cubin.stack_bytes) + " bytes stack frame";
    }
    const LaunchGeometry geometry = task.geometry(job.config);
    const unsigned threads_needed = geometry.block.x * geometry.block.y * geometry.block.z;
    if (static_cast<long long>(cubin.registers) * threads_needed > device.regs_per_block) {
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
      // Fresh inputs for every candidate: it must compute the function, not match one data set.
      task.fresh_inputs(seed++, stream.get());
      if (options.before_run) options.before_run(job.config);
      const MatrixCheck check = task.check(*kernel, job.config, stream.get());
      t.rel_error = check.rel_error;
      if (!check.passed(task.tolerance())) {
        // Right but less accurate than the op's contract allows: refused, and said so.
        t.disposition = check.computes(task.tolerance()) ? cache::Disposition::kInaccurate
                                                         : cache::Disposition::kWrongResult;
        t.message = check.describe();
        return t;
      }
      auto run = [&](cudaStream_t s) { task.run(*kernel, job.config, s); };
      const double best_ms = result.best ? result.best->ms_median : 0;
      BaselineTiming first = time_runs(run, stream.get(), 1);
      int runs = 1;
      if (first.ms_median > kTimeoutMs) {
        t.disposition = cache::Disposition::kTimeout;
        t.message = "one run took " + std::to_string(first.ms_median) + " ms";
        t.ms_median = t.ms_min = first.ms_median;
        t.runs = 1;
        return t;
      }
      if (best_ms == 0 || first.ms_median < kAbandonFactor * best_ms) {
        runs = std::clamp(static_cast<int>(kTimingBudgetMs / std::max(first.ms_median, 1e-3)), 5, 30);
        first = time_runs(run, stream.get(), runs, kAbandonFactor * std::max(best_ms, 0.0));
      } else {
        t.message = "measured once: over " + std::to_string(static_cast<int>(kAbandonFactor)) +
                    "x the best so far";
      }
      t.ms_median = first.ms_median;
      t.ms_min = first.ms_min;
      t.runs = first.runs;
      t.tflops = task.rate(t.ms_median);
      t.disposition = cache::Disposition::kOk;
      if (!spilled.empty()) t.message += (t.message.empty() ? "" : "; ") + spilled;
    } catch (const Error& e) {
      t.disposition = cache::Disposition::kLaunchError;
      t.message = first_lines(e.what(), 2000);
    }
    return t;
  };

  while (true) {
    if (options.stop && options.stop->load()) {
      result.stop_reason = "interrupted";
      break;
    }
    if (seconds_since(started) >= options.budget_s) {
      result.stop_reason = "budget";
      break;
    }
    if (options.max_trials > 0 && static_cast<int>(result.trials.size()) >= options.max_trials) {
      result.stop_reason = "trial limit";
      break;
    }
    if (options.patience > 0 && since_better >= options.patience) {
      result.stop_reason = "patience";
      break;
    }
    while (!strategy_done && pool->in_flight() < depth &&
           (options.max_trials == 0 || submitted < options.max_trials)) {
      auto config = strategy->next();
      if (!config) {
        strategy_done = true;
        break;
      }
      // Measured by an earlier run: its result guides the strategy, nothing is measured again.
      if (auto before = options.measured.find(config->canonical());
          before != options.measured.end()) {
        strategy->report(*config, before->second);
        ++result.resumed;
        continue;
      }
      CompileJob job;
      job.config = *config;
      job.spec = task.kernel_spec(*config);
      pool->submit(std::move(job));
      ++submitted;
    }
    if (pool->in_flight() == 0) {
      result.stop_reason = strategy_done ? "space exhausted" : "trial limit";
      break;
    }
    CompileJob job = pool->wait();
    cache::TrialRecord t = evaluate(job);
    const bool is_ok = t.disposition == cache::Disposition::kOk;
    strategy->report(job.config, is_ok ? std::optional<double>(t.ms_median) : std::nullopt);
    const bool is_best = is_ok && (!result.best || t.ms_median < result.best->ms_median);
    if (is_ok) ++ok;
    if (is_best) result.best = t;
    if (is_ok && job.built) add_leader(leaders, std::max(1, options.leaders), t, *job.built);
    since_better = is_best ? 0 : since_better + 1;
    result.trials.push_back(t);
    batch.push_back(t);
    if (is_best && improved) {
      flush();  // the best's trial is recorded before the best itself
      improved(t, leaders.front().built, result.baseline.ms_median);
    }
    flush();  // every measured trial is durable before the next one starts

    if (progress) {
      Progress p;
      p.trials_done = static_cast<int>(result.trials.size());
      p.trials_ok = ok;
      p.trials_limit = options.max_trials;
      p.resumed = result.resumed;
      p.elapsed_s = seconds_since(started);
      p.remaining_s = std::max(0.0, options.budget_s - p.elapsed_s);
      p.best = result.best;
      p.baseline_ms = result.baseline.ms_median;
      p.last = &result.trials.back();
      p.phase = strategy->phase();
      progress(p);
    }
    if (t.disposition == cache::Disposition::kLaunchError && context_lost()) {
      result.stop_reason = "device error after " + t.kernel_name + ": " + t.message;
      break;
    }
  }
  flush();
  // Compiles still queued or running when the budget ends would share the CPU with the final
  // timing: a baseline that runs on the CPU (entropy's) measured 10-100x slow beside them.
  pool.reset();
  if (!leaders.empty() && result.stop_reason.rfind("device error", 0) != 0 &&
      result.stop_reason != "interrupted") {
    // The final round: the leaders close to the best, each timed again beside the others and the
    // baseline, three times over in turn (so drift in clocks or temperature hits them alike); the
    // fastest of the round is the result.
    const double margin = result.best->ms_median * (1 + std::max(0.0, options.leader_margin));
    while (leaders.size() > 1 && leaders.back().trial.ms_median > margin) leaders.pop_back();
    std::optional<DeviceBuffer> evict;
    std::function<void(cudaStream_t)> cold;
    if (options.flush_l2) {
      // Twice the L2 (50 MB on an H100) written over evicts everything a call left there.
      evict.emplace(std::max<size_t>(2 * device.l2_bytes, size_t{64} << 20));
      cold = [&](cudaStream_t s) {
        TUNED_CUDA_CHECK(cudaMemsetAsync(evict->get(), 0, evict->bytes(), s));
      };
      result.flushed_l2 = true;
    }
    std::vector<std::function<void(cudaStream_t)>> runs;
    for (const auto& l : leaders) {
      const Config config = Config::parse(l.trial.config);
      auto kernel = KernelCache::load(l.built, task.kernel_spec(config));
      runs.push_back([&task, kernel, config](cudaStream_t s) { task.run(*kernel, config, s); });
    }
    std::vector<BaselineTiming> timing = time_side_by_side(
        runs, [&](cudaStream_t s) { task.run_baseline(s); }, stream.get(), 3, 15, cold);
    result.final_baseline = timing.back();
    timing.pop_back();
    size_t winner = 0;
    for (size_t i = 1; i < leaders.size(); ++i) {
      if (timing[i].ms_median < timing[winner].ms_median) winner = i;
    }
    result.leaders_timed = static_cast<int>(leaders.size());
    result.final_best = timing[winner];
    result.best = leaders[winner].trial;
    std::swap(leaders[0], leaders[winner]);
  }
  if (!leaders.empty()) result.best_kernel = std::move(leaders.front().built);
  result.elapsed_s = seconds_since(started);
  return result;
}

}  // namespace tuned
