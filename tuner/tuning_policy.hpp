// Tuning policy shared by `autotune` and the runtime's first-use tuning, written once: where a
// search starts, how a winner is kept (best row and its cubin), and the quick timing of a few
// precompiled candidates on scratch buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/op.hpp"

namespace tuned {

/// Where a search starts: the stored best for this key (re-measured, so tuning again never ends
/// worse than before), a twin GPU's best for it, the bests of the nearest other tuned shapes of
/// this variant (good configs transfer between neighbouring shapes), the selection model's top
/// picks (and a few of the models of other GPUs of this architecture) and the shipped entry for
/// this GPU model, then the op's own seeds. Configs outside the task's space (its rules, its
/// pruning and any [space] restriction) are left out.
std::vector<Config> starting_configs(cache::Database& db, const TuningTask& task,
                                     const DeviceInfo& device);

/// Offers best to the database (kept only if faster than what it holds), marked with the hash of
/// the template spec compiles (unless it names one), and, when kept and a cubin is given, stores
/// the cubin too, so a new process loads instead of compiling. Returns whether it was kept.
bool keep_best(cache::Database& db, const cache::BestRecord& best, const KernelSpec& spec,
               const DeviceInfo& device, const CubinRecord* cubin);

/// The outcome of timing a few candidates.
struct QuickPick {
  Config config;
  double ms = 0;
  std::shared_ptr<const LoadedKernel> kernel;
  int timed = 0;  // candidates timed before the budget ran out
};

/// Picks of each other model of the GPU's architecture that a session starts from and first-use
/// times (SelectionModel::same_arch_devices: their kernels run here).
constexpr size_t kSameArchPicks = 4;

/// How much timing a quick pick may spend: a short product gets a few candidates in a fixed time,
/// a long one more candidates and time in proportion to its own run time (what a first-use pick
/// gains on a 5 ms product, a program waits for at every call; the time is repaid within a few
/// hundred calls), but the whole pick (the leaders' second look and the winner's check included)
/// within a second: a first call waits for it.
struct QuickPickBudget {
  size_t candidates = 6;        // timed at most where the first candidate runs under long_ms
  size_t long_candidates = 24;  // timed at most otherwise
  size_t same_arch_picks = kSameArchPicks;
  double long_ms = 0.1;
  double budget_ms = 250;       // the time candidates may take: this,
  double first_runs = 150;      // or this many runs of the first candidate where that is longer,
  double max_budget_ms = 1000;  // but the whole pick never more than this
  // The leaders (up to this many, within leader_margin of the fastest) are timed again side by
  // side before one is picked, as a tuning session's are, as many as leader_share of the bound
  // affords.
  size_t leaders = 3;
  double leader_margin = 0.10;
  int leader_rounds = 2;
  double leader_share = 0.4;
  int samples = 5;     // timed samples per candidate (and per leader and round)
  int check_runs = 4;  // what the winner's check costs, in runs of the product (reference too)

  /// Runs of the product that timing one candidate takes: its samples, a warm-up and the call
  /// that sizes the samples.
  double runs_per_timing() const { return samples + 2; }
  /// The leaders a second look can afford once the first candidate took first_ms a run.
  size_t leaders_for(double first_ms) const {
    const double one = runs_per_timing() * leader_rounds * std::max(first_ms, 1e-6);
    return std::min(leaders, static_cast<size_t>(leader_share * max_budget_ms / one));
  }
  /// The time the candidates may take once the first took first_ms a run, leaving the leaders'
  /// rounds and the check their part of the bound (and setup_ms, what the buffers and references
  /// took before the first was timed).
  double allowed_ms(double first_ms, double setup_ms = 0) const {
    const double reserved =
        (static_cast<double>(leaders_for(first_ms)) * leader_rounds * runs_per_timing() +
         check_runs) *
        first_ms;
    return std::min(max_budget_ms - setup_ms, std::max(budget_ms, first_runs * first_ms)) -
           reserved;
  }
  size_t allowed_candidates(double first_ms) const {
    return first_ms >= long_ms ? long_candidates : candidates;
  }
};

/// Times candidates (best guess first) on the task's own buffers, a few runs each, until the
/// budget's time or count for the product is spent (the first candidate is always timed); a
/// candidate whose kernel would need NVRTC (not precompiled, loaded or stored) is passed over, as
/// its compile alone could take the whole budget. The leaders are timed again side by side, and
/// the fastest that passes the task's check (right result on fresh inputs, and the op's accuracy
/// contract) is returned; nothing if none does. Synchronizes the stream.
std::optional<QuickPick> quick_pick(TuningTask& task, KernelCache& kernels,
                                    const DeviceInfo& device, const std::vector<Config>& candidates,
                                    const QuickPickBudget& budget, cudaStream_t stream);

}  // namespace tuned
