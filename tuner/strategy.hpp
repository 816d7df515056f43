// Search strategies: which config to try next, given what was measured so far.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/space.hpp"

namespace tuned {

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// The next config to try, or nothing when the strategy has no more.
  virtual std::optional<Config> next() = 0;
  /// What a tried config measured (ms), or that it failed (nothing). Arrives later than next()
  /// handed it out, because compiles run ahead of measurements.
  virtual void report(const Config& config, std::optional<double> ms) = 0;
  /// Short description for progress lines ("random", "guided: local search").
  virtual std::string phase() const = 0;
};

/// strategy: "exhaustive" (every config in enumeration order), "random" (uniform draws without
/// repetition), "guided" (random exploration, then local search around the best configs), "ils"
/// (iterated local search), "anneal" (simulated annealing with long jumps), "genetic" (tournament,
/// uniform crossover, neighbour mutation) or "surrogate" (a nearest-neighbour model of the
/// measured times picks among the neighbours of the best and random draws).
/// `first` configs are tried before anything else (the built-in default, a previous best); those
/// outside the space are dropped, so a restricted space is never left.
/// Throws Error(TUNED_STATUS_INVALID_ARGUMENT) for an unknown name.
std::unique_ptr<Strategy> make_strategy(const std::string& strategy, const Space& space,
                                        std::vector<Config> first, uint64_t seed);

/// The strategies make_strategy knows.
std::vector<std::string> strategy_names();

/// The strategy autotune and sessions use unless told otherwise: the one the tuning-quality replay
/// (bench/tuning_quality, bench/results/tuning_quality.json) finds best.
inline constexpr const char* kDefaultStrategy = "anneal";

}  // namespace tuned
