#include "tuner/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "tuned/error.hpp"

namespace tuned {
namespace {

// Configs handed out already, so no strategy measures one twice.
class Seen {
 public:
  bool insert(const Config& c) { return set_.insert(c.canonical()).second; }
  bool contains(const Config& c) const { return set_.count(c.canonical()) > 0; }

 private:
  std::unordered_set<std::string> set_;
};

// Hands out the `first` configs that lie in the space, then defers to the strategy proper.
class WithFirst : public Strategy {
 public:
  WithFirst(const Space& space, std::vector<Config> first) {
    for (Config& c : first) {
      if (!space.violation(c, /*include_pruning=*/false)) first_.push_back(std::move(c));
    }
  }

  std::optional<Config> next() final {
    while (next_first_ < first_.size()) {
      const Config& c = first_[next_first_++];
      if (seen_.insert(c)) return c;
    }
    return next_own();
  }

 protected:
  virtual std::optional<Config> next_own() = 0;
  Seen seen_;

 private:
  std::vector<Config> first_;
  size_t next_first_ = 0;
};

class Exhaustive : public WithFirst {
 public:
  // Enumerates lazily, a block at a time, so a space of millions never sits in memory.
  Exhaustive(const Space& space, std::vector<Config> first)
      : WithFirst(space, std::move(first)), space_(space) {}

  void report(const Config&, std::optional<double>) override {}
  std::string phase() const override { return "exhaustive"; }

 protected:
  std::optional<Config> next_own() override {
    while (true) {
      if (pos_ < block_.size()) {
        Config c = block_[pos_++];
        if (seen_.insert(c)) return c;
        continue;
      }
      if (done_) return std::nullopt;
      refill();
    }
  }

 private:
  void refill() {
    constexpr size_t kBlock = 4096;
    block_.clear();
    pos_ = 0;
    size_t index = 0;
    space_.for_each([&](const Config& c) {
      if (index++ >= offset_) block_.push_back(c);
      return block_.size() < kBlock;
    });
    offset_ += block_.size();
    if (block_.size() < kBlock) done_ = true;
  }

  const Space& space_;
  std::vector<Config> block_;
  size_t pos_ = 0;
  size_t offset_ = 0;
  bool done_ = false;
};

class Random : public WithFirst {
 public:
  Random(const Space& space, std::vector<Config> first, uint64_t seed)
      : WithFirst(space, std::move(first)), space_(space), rng_(seed) {}

  void report(const Config&, std::optional<double>) override {}
  std::string phase() const override { return "random"; }

 protected:
  std::optional<Config> next_own() override {
    // Repeated draws of seen configs mean the space is nearly used up. A draw that finds nothing
    // does not: where valid configs are sparse (a long-k GEMM's: a quarter of draws found one),
    // ending there ended 300 s tuning runs after 12 trials.
    for (int attempt = 0; attempt < 200; ++attempt) {
      auto c = space_.sample(rng_);
      if (c && seen_.insert(*c)) return c;
    }
    return std::nullopt;
  }

  const Space& space_;
  std::mt19937_64 rng_;
};

// Random exploration first; then the unexplored neighbours of the best measured configs, best
// first, falling back to random draws when every good config's neighbourhood has been tried.
class Guided : public Random {
 public:
  Guided(const Space& space, std::vector<Config> first, uint64_t seed)
      : Random(space, std::move(first), seed) {}

  void report(const Config& config, std::optional<double> ms) override {
    ++reported_;
    if (ms) measured_.emplace(*ms, config);
  }
  std::string phase() const override { return local_ ? "guided: local search" : "guided: explore"; }

 protected:
  std::optional<Config> next_own() override {
    // Explore until enough configs have measured, so the search starts from a good region.
    if (measured_.size() < kExplore && handed_out_ < kExploreMax) {
      ++handed_out_;
      local_ = false;
      return Random::next_own();
    }
    ++handed_out_;
    local_ = true;
    // The best few measured configs, best first; the first with an untried neighbour wins.
    int rank = 0;
    for (const auto& [ms, config] : measured_) {
      if (rank++ >= kCentres) break;
      const std::string key = config.canonical();
      auto& queue = neighbours_[key];
      if (!expanded_.count(key)) {
        expanded_.insert(key);
        queue = space_.neighbors(config);
        std::shuffle(queue.begin(), queue.end(), rng_);
      }
      while (!queue.empty()) {
        Config c = std::move(queue.back());
        queue.pop_back();
        if (seen_.insert(c)) return c;
      }
    }
    local_ = false;
    return Random::next_own();
  }

 private:
  static constexpr size_t kExplore = 48;
  static constexpr size_t kExploreMax = 400;
  static constexpr int kCentres = 8;
  std::multimap<double, Config> measured_;
  std::map<std::string, std::vector<Config>> neighbours_;
  std::unordered_set<std::string> expanded_;
  size_t reported_ = 0;
  size_t handed_out_ = 0;
  bool local_ = false;
};

// What every adaptive strategy knows: each measured config's time, best first, and which configs
// failed. Reports arrive late (compiles run ahead of measurements), so decisions use what is in.
class Measured {
 public:
  void add(const Config& config, std::optional<double> ms) {
    if (!ms || !(*ms > 0)) {
      ++failed_;
      return;
    }
    by_time_.emplace(*ms, config);
    ms_[config.canonical()] = *ms;
  }
  size_t size() const { return by_time_.size(); }
  size_t failed() const { return failed_; }
  const std::multimap<double, Config>& by_time() const { return by_time_; }
  std::optional<double> ms(const Config& c) const {
    auto it = ms_.find(c.canonical());
    if (it == ms_.end()) return std::nullopt;
    return it->second;
  }
  const Config* best() const { return by_time_.empty() ? nullptr : &by_time_.begin()->second; }
  double best_ms() const { return by_time_.empty() ? 0 : by_time_.begin()->first; }

 private:
  std::multimap<double, Config> by_time_;
  std::unordered_map<std::string, double> ms_;
  size_t failed_ = 0;
};

// Each config's neighbours, listed once: walks pass the same configs again and again, and a large
// space's neighbour list costs a thousand rule checks.
class Neighbours {
 public:
  explicit Neighbours(const Space& space) : space_(space) {}
  const std::vector<Config>& of(const Config& c) {
    auto [it, added] = memo_.try_emplace(c.canonical());
    if (added) it->second = space_.neighbors(c);
    return it->second;
  }

 private:
  const Space& space_;
  std::unordered_map<std::string, std::vector<Config>> memo_;
};

// A few random neighbour steps away from config (a kick out of a local optimum, a long jump).
std::optional<Config> random_walk(Neighbours& neighbours, const Config& from, int steps,
                                  std::mt19937_64& rng) {
  Config at = from;
  bool moved = false;
  for (int s = 0; s < steps; ++s) {
    const auto& next = neighbours.of(at);
    if (next.empty()) break;
    at = next[rng() % next.size()];
    moved = true;
  }
  if (!moved) return std::nullopt;
  return at;
}

// Iterated local search: first-improvement descent over neighbours from the current point; at a
// local optimum (every neighbour handed out, none better), the better of it and the incumbent
// optimum is kept and the search restarts from a random walk of a few steps away from it.
class IteratedLocalSearch : public Random {
 public:
  IteratedLocalSearch(const Space& space, std::vector<Config> first, uint64_t seed)
      : Random(space, std::move(first), seed), neighbours_(space) {}

  void report(const Config& config, std::optional<double> ms) override {
    measured_.add(config, ms);
    if (!ms) return;
    // The first results (the starting configs) set the point and a better neighbour moves it; a
    // kicked config measured between descents starts the next descent wherever it landed.
    const bool kicked = kicked_.erase(config.canonical()) > 0;
    if (!current_ || *ms < current_ms_ || (kicked && queue_.empty())) move_to(config, *ms);
  }
  std::string phase() const override { return kicks_ ? "ils: kicked" : "ils: descent"; }

 protected:
  std::optional<Config> next_own() override {
    if (!current_) return Random::next_own();  // nothing measured yet
    while (true) {
      while (!queue_.empty()) {
        Config c = std::move(queue_.back());
        queue_.pop_back();
        if (seen_.insert(c)) return c;
      }
      // A local optimum: keep the better one, kick from it.
      if (!incumbent_ || current_ms_ <= incumbent_ms_) {
        incumbent_ = current_;
        incumbent_ms_ = current_ms_;
      }
      ++kicks_;
      for (int attempt = 0; attempt < 20; ++attempt) {
        auto kicked = random_walk(neighbours_, *incumbent_, 2 + static_cast<int>(rng_() % 3), rng_);
        if (kicked && seen_.insert(*kicked)) {
          // It becomes the current point once measured (report); until then the queue stays
          // empty, so requests in the meantime kick again: a few restarts in flight at once.
          kicked_.insert(kicked->canonical());
          return kicked;
        }
      }
      return Random::next_own();
    }
  }

 private:
  void move_to(const Config& config, double ms) {
    current_ = config;
    current_ms_ = ms;
    queue_ = neighbours_.of(config);
    std::shuffle(queue_.begin(), queue_.end(), rng_);
  }

  Neighbours neighbours_;
  Measured measured_;
  std::optional<Config> current_, incumbent_;
  double current_ms_ = 0, incumbent_ms_ = 0;
  std::vector<Config> queue_;
  std::unordered_set<std::string> kicked_;  // kicked configs not reported yet
  int kicks_ = 0;
};

// Simulated annealing with dual annealing's two visits: mostly a neighbour of the current point,
// sometimes a long jump (a walk of several steps); a worse result is accepted with probability
// exp(-log(ms / current) / T), T falling with the number of results.
class Annealing : public Random {
 public:
  Annealing(const Space& space, std::vector<Config> first, uint64_t seed)
      : Random(space, std::move(first), seed), neighbours_(space) {}

  void report(const Config& config, std::optional<double> ms) override {
    measured_.add(config, ms);
    if (!ms) return;
    ++results_;
    if (!current_) {
      current_ = config;
      current_ms_ = *ms;
      return;
    }
    const double temperature = kT0 / std::log(2.0 + results_ / 10.0);
    const double worse = std::log(*ms / current_ms_);
    std::uniform_real_distribution<double> u(0, 1);
    if (worse < 0 || u(rng_) < std::exp(-worse / temperature)) {
      current_ = config;
      current_ms_ = *ms;
    }
    // Stuck far above the best for long: back to the best.
    if (++since_best_move_ > kRestart && measured_.best()) {
      current_ = *measured_.best();
      current_ms_ = measured_.best_ms();
      since_best_move_ = 0;
    }
    if (*ms <= measured_.best_ms()) since_best_move_ = 0;
  }
  std::string phase() const override { return "anneal"; }

 protected:
  std::optional<Config> next_own() override {
    if (!current_) return Random::next_own();
    std::uniform_real_distribution<double> u(0, 1);
    for (int attempt = 0; attempt < 30; ++attempt) {
      const bool jump = u(rng_) < kJumpChance;
      const int steps = jump ? 2 + static_cast<int>(rng_() % 4) : 1;
      auto c = random_walk(neighbours_, *current_, steps, rng_);
      if (c && seen_.insert(*c)) return c;
    }
    return Random::next_own();
  }

 private:
  static constexpr double kT0 = 0.05;  // a 5 % slower config is accepted often at first
  static constexpr double kJumpChance = 0.15;
  static constexpr int kRestart = 40;
  Neighbours neighbours_;
  Measured measured_;
  std::optional<Config> current_;
  double current_ms_ = 0;
  int results_ = 0;
  int since_best_move_ = 0;
};

// A genetic algorithm: parents drawn by tournament from the fastest measured configs, children by
// uniform crossover of their parameters (redrawn until valid), then mutated by a neighbour step.
class Genetic : public Random {
 public:
  Genetic(const Space& space, std::vector<Config> first, uint64_t seed)
      : Random(space, std::move(first), seed), neighbours_(space) {}

  void report(const Config& config, std::optional<double> ms) override {
    measured_.add(config, ms);
  }
  std::string phase() const override {
    return measured_.size() < kPopulation ? "genetic: seeding" : "genetic: breeding";
  }

 protected:
  std::optional<Config> next_own() override {
    if (measured_.size() < kMinParents) return Random::next_own();
    std::vector<const Config*> pool;
    for (const auto& [ms, c] : measured_.by_time()) {
      if (pool.size() >= kPopulation) break;
      pool.push_back(&c);
    }
    std::uniform_real_distribution<double> u(0, 1);
    auto tournament = [&]() -> const Config& {
      size_t pick = rng_() % pool.size();
      for (int i = 1; i < kTournament; ++i) pick = std::min(pick, rng_() % pool.size());
      return *pool[pick];  // pool is fastest first: the lowest index wins
    };
    for (int attempt = 0; attempt < 40; ++attempt) {
      const Config& a = tournament();
      const Config& b = tournament();
      Config child = a;
      for (size_t i = 0; i < child.size(); ++i) {
        if (rng_() % 2) child.set_value(i, b.value(i));
      }
      if (space_.violation(child)) continue;
      if (u(rng_) < kMutation || seen_.contains(child)) {
        auto mutated = random_walk(neighbours_, child, 1, rng_);
        if (mutated) child = *mutated;
      }
      if (seen_.insert(child)) return child;
    }
    return Random::next_own();
  }

 private:
  static constexpr size_t kPopulation = 16;
  static constexpr size_t kMinParents = 4;
  static constexpr int kTournament = 3;
  static constexpr double kMutation = 0.3;
  Neighbours neighbours_;
  Measured measured_;
};

// Model-based search: candidates are the untried neighbours of the fastest configs and a few
// random draws; each is scored by a nearest-neighbour estimate of its log time from the measured
// configs (inverse-distance weighted, distance in steps along each parameter's value list), less
// a bonus for distance from anything measured; the best score is tried next.
class Surrogate : public Random {
 public:
  Surrogate(const Space& space, std::vector<Config> first, uint64_t seed)
      : Random(space, std::move(first), seed) {
    for (const auto& p : space.params()) values_.push_back(p.values);
  }

  void report(const Config& config, std::optional<double> ms) override {
    measured_.add(config, ms);
    if (ms && *ms > 0) points_.emplace_back(position(config), std::log(*ms));
  }
  std::string phase() const override { return "surrogate"; }

 protected:
  std::optional<Config> next_own() override {
    if (measured_.size() < 2) return Random::next_own();
    std::vector<Config> candidates;
    int rank = 0;
    for (const auto& [ms, c] : measured_.by_time()) {
      if (rank++ >= kCentres) break;
      auto& queue = neighbours_[c.canonical()];
      if (!expanded_.count(c.canonical())) {
        expanded_.insert(c.canonical());
        queue = space_.neighbors(c);
      }
      for (const Config& n : queue) {
        if (!seen_.contains(n)) candidates.push_back(n);
      }
    }
    for (int i = 0; i < kRandomCandidates; ++i) {
      if (auto c = space_.sample(rng_); c && !seen_.contains(*c)) candidates.push_back(*c);
    }
    if (candidates.empty()) return Random::next_own();
    // A random few of them: scoring costs a pass over every measured config.
    if (candidates.size() > kScored) {
      std::shuffle(candidates.begin(), candidates.end(), rng_);
      candidates.resize(kScored);
    }
    const Config* pick = nullptr;
    double pick_score = 0;
    for (const Config& c : candidates) {
      const double score = estimate(c);
      if (!pick || score < pick_score) {
        pick = &c;
        pick_score = score;
      }
    }
    Config chosen = *pick;
    seen_.insert(chosen);
    return chosen;
  }

 private:
  // Each parameter's index in its value list, scaled to [0, 1].
  std::vector<float> position(const Config& c) const {
    std::vector<float> at(c.size(), 0);
    for (size_t i = 0; i < c.size() && i < values_.size(); ++i) {
      const auto& v = values_[i];
      const auto it = std::find(v.begin(), v.end(), c.value(i));
      at[i] = v.size() > 1 ? static_cast<float>(it - v.begin()) / (v.size() - 1) : 0.f;
    }
    return at;
  }
  double estimate(const Config& c) const {
    const auto at = position(c);
    double weight_sum = 0, value_sum = 0, nearest = 1e30;
    for (const auto& [p, log_ms] : points_) {
      double d = 0;
      for (size_t i = 0; i < at.size(); ++i) d += std::abs(at[i] - p[i]);
      nearest = std::min(nearest, d);
      const double w = 1.0 / (1e-3 + d * d * d);
      weight_sum += w;
      value_sum += w * log_ms;
    }
    return value_sum / weight_sum - kExplore * std::min(nearest, 2.0);
  }

  static constexpr int kCentres = 4;
  static constexpr int kRandomCandidates = 16;
  static constexpr size_t kScored = 48;
  static constexpr double kExplore = 0.02;
  std::vector<std::vector<int>> values_;
  Measured measured_;
  std::vector<std::pair<std::vector<float>, double>> points_;
  std::map<std::string, std::vector<Config>> neighbours_;
  std::unordered_set<std::string> expanded_;
};

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "guided", "ils", "anneal", "genetic", "surrogate"};
}

std::unique_ptr<Strategy> make_strategy(const std::string& strategy, const Space& space,
                                        std::vector<Config> first, uint64_t seed) {
  if (strategy == "exhaustive") return std::make_unique<Exhaustive>(space, std::move(first));
  if (strategy == "random") return std::make_unique<Random>(space, std::move(first), seed);
  if (strategy == "guided") return std::make_unique<Guided>(space, std::move(first), seed);
  if (strategy == "ils")
    return std::make_unique<IteratedLocalSearch>(space, std::move(first), seed);
  if (strategy == "anneal") return std::make_unique<Annealing>(space, std::move(first), seed);
  if (strategy == "genetic") return std::make_unique<Genetic>(space, std::move(first), seed);
  if (strategy == "surrogate") return std::make_unique<Surrogate>(space, std::move(first), seed);
  std::string names;
  for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              "strategy '" + strategy + "': must be one of " + names);
}

}  // namespace tuned
