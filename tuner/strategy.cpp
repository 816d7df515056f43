#include "tuner/strategy.hpp"

#include <algorithm>
#include <map>

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
    // Repeated draws of seen configs mean the space is nearly used up.
    for (int attempt = 0; attempt < 200; ++attempt) {
      auto c = space_.sample(rng_);
      if (!c) return std::nullopt;
      if (seen_.insert(*c)) return c;
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

}  // namespace

std::vector<std::string> strategy_names() { return {"exhaustive", "random", "guided"}; }

std::unique_ptr<Strategy> make_strategy(const std::string& strategy, const Space& space,
                                        std::vector<Config> first, uint64_t seed) {
  if (strategy == "exhaustive") return std::make_unique<Exhaustive>(space, std::move(first));
  if (strategy == "random") return std::make_unique<Random>(space, std::move(first), seed);
  if (strategy == "guided") return std::make_unique<Guided>(space, std::move(first), seed);
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              "strategy '" + strategy + "': must be exhaustive, random or guided");
}

}  // namespace tuned
