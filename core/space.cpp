#include "core/space.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "tuned/error.hpp"

namespace tuned {

Config::Config(std::shared_ptr<const std::vector<std::string>> names, std::vector<int> values)
    : names_(std::move(names)), values_(std::move(values)) {}

namespace {
// The rule Constraint::test is running on this thread, if any: Config::get holds it to the
// parameters it declares.
thread_local const Constraint* t_rule_in_test = nullptr;
// Rules being tested now, on any thread. Config::get is on every launch's path, where no rule
// runs: this plain load lets it skip the thread-local lookup (a call in a shared library; 18 ->
// 24 ns a get) while none does.
std::atomic<int> g_rules_in_test{0};

void check_declared(const Constraint& rule, std::string_view name) {
  for (const auto& declared : rule.uses) {
    if (declared == name) return;
  }
  throw Error(TUNED_STATUS_INTERNAL_ERROR, "rule " + rule.name + " reads " + std::string(name) +
                                               ", which its list of parameters used leaves out");
}
}  // namespace

bool Constraint::test(const Config& config) const {
  struct Scope {
    const Constraint* outer;
    explicit Scope(const Constraint* rule) : outer(std::exchange(t_rule_in_test, rule)) {
      g_rules_in_test.fetch_add(1, std::memory_order_relaxed);
    }
    ~Scope() {
      g_rules_in_test.fetch_sub(1, std::memory_order_relaxed);
      t_rule_in_test = outer;
    }
  } scope(this);
  return holds(config);
}

int Config::get(std::string_view name) const {
  if (g_rules_in_test.load(std::memory_order_relaxed) != 0 && t_rule_in_test) {
    check_declared(*t_rule_in_test, name);
  }
  const auto& names = *names_;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (names[i] == name) return values_[i];
  }
  throw Error(TUNED_STATUS_INTERNAL_ERROR,
              "config " + canonical() + " has no parameter " + std::string(name));
}

void Config::set_value(size_t i, int value) { values_[i] = value; }

bool Config::has(const std::string& name) const {
  return std::find(names_->begin(), names_->begin() + values_.size(), name) !=
         names_->begin() + values_.size();
}

void Config::set(const std::string& name, int value) {
  for (size_t i = 0; i < values_.size(); ++i) {
    if ((*names_)[i] == name) {
      values_[i] = value;
      return;
    }
  }
  auto names =
      std::make_shared<std::vector<std::string>>(names_->begin(), names_->begin() + values_.size());
  names->push_back(name);
  names_ = std::move(names);
  values_.push_back(value);
}

Config with_absent_params(const Config& config, const std::vector<Param>& params) {
  auto names = std::make_shared<std::vector<std::string>>();
  std::vector<int> values;
  size_t named = 0;
  for (const Param& p : params) {
    if (config.has(p.name)) {
      values.push_back(config.get(p.name));
      ++named;
    } else if (p.absent_value) {
      values.push_back(*p.absent_value);
    } else {
      return config;  // not this op's config, or one missing a parameter nothing stands in for
    }
    names->push_back(p.name);
  }
  if (named != config.size()) return config;  // names a parameter params do not have
  return Config(std::move(names), std::move(values));
}

std::string Config::canonical() const {
  std::string text;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (i) text += ',';
    text += (*names_)[i] + "=" + std::to_string(values_[i]);
  }
  return text;
}

std::vector<std::string> Config::defines() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < values_.size(); ++i) {
    out.push_back("-D" + (*names_)[i] + "=" + std::to_string(values_[i]));
  }
  return out;
}

Config Config::parse(const std::string& text) {
  Config config;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t eq = item.find('=');
    int value = 0;
    const char* first = item.data() + (eq == std::string::npos ? 0 : eq + 1);
    const char* last = item.data() + item.size();
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != last) {
      throw Error(TUNED_STATUS_CONFIG_ERROR,
                  "config '" + text + "': item '" + item + "' is not NAME=INTEGER");
    }
    const std::string name = item.substr(0, eq);
    if (config.has(name)) {
      throw Error(TUNED_STATUS_CONFIG_ERROR, "config '" + text + "': " + name + " appears twice");
    }
    config.set(name, value);
    pos = end + 1;
  }
  return config;
}

std::string Config::name_suffix() const {
  std::string suffix;
  for (size_t i = 0; i < values_.size(); ++i) {
    suffix += '_';
    for (const char ch : (*names_)[i]) {
      suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    suffix += std::to_string(values_[i]);
  }
  return suffix;
}

bool Config::operator==(const Config& other) const {
  if (values_ != other.values_) return false;
  for (size_t i = 0; i < values_.size(); ++i) {
    if ((*names_)[i] != (*other.names_)[i]) return false;
  }
  return true;
}

std::optional<int> unread_value(const Param& param, const Config& config) {
  for (const FamilyUse& use : param.read_by) {
    const int family = config.get(use.family);
    if (std::find(use.reading.begin(), use.reading.end(), family) == use.reading.end()) {
      return use.value;
    }
  }
  return std::nullopt;
}

namespace {
// The family word config's values of the word-naming parameters give, and the index of the
// parameter whose value named it; "" and params.size() where none does.
std::pair<std::string, size_t> family_word(const Config& config, const std::vector<Param>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (p.words.empty()) continue;
    const auto at = std::find(p.values.begin(), p.values.end(), config.get(p.name));
    if (at == p.values.end()) break;
    const std::string& word = p.words[static_cast<size_t>(at - p.values.begin())];
    if (!word.empty()) return {word, i};
  }
  return {"", params.size()};
}

// Whether exactly one of p's values has word w: then the word implies the value.
bool word_implies_value(const Param& p, const std::string& w) {
  return std::count(p.words.begin(), p.words.end(), w) == 1;
}
}  // namespace

std::string config_text(const Config& config, const std::vector<Param>& params) {
  if (config.size() != params.size()) return config.canonical();
  for (size_t i = 0; i < params.size(); ++i) {
    if (config.name(i) != params[i].name) return config.canonical();
  }
  const auto [word, named_by] = family_word(config, params);
  if (word.empty()) return config.canonical();
  std::string text = word + ":";
  bool first = true;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    const int value = config.value(i);
    // The word-naming parameters up to the one that named the family: implied where one value
    // has the word ("" before it, the word at it).
    if (!p.words.empty() && i <= named_by && word_implies_value(p, i == named_by ? word : "")) {
      continue;
    }
    if (const auto held = unread_value(p, config); held && *held == value) continue;
    text += (first ? "" : ",") + p.name + "=" + std::to_string(value);
    first = false;
  }
  return text;
}

Config read_config(const std::string& text, const std::vector<Param>& params) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return with_absent_params(Config::parse(text), params);
  const std::string word = text.substr(0, colon);
  const Config listed = Config::parse(text.substr(colon + 1));
  auto names = std::make_shared<std::vector<std::string>>();
  for (const Param& p : params) names->push_back(p.name);
  Config config(names, std::vector<int>(params.size(), 0));
  std::vector<bool> known(params.size(), false);
  for (size_t i = 0; i < listed.size(); ++i) {
    const auto at = std::find(names->begin(), names->end(), listed.name(i));
    if (at == names->end()) {
      throw Error(TUNED_STATUS_CONFIG_ERROR,
                  "config '" + text + "': unknown parameter " + listed.name(i));
    }
    config.set_value(static_cast<size_t>(at - names->begin()), listed.value(i));
    known[static_cast<size_t>(at - names->begin())] = true;
  }
  // The word-naming parameters up to the one that has the word: implied where one value has it,
  // else listed.
  bool named = false;
  for (size_t i = 0; i < params.size() && !named; ++i) {
    const Param& p = params[i];
    if (p.words.empty()) continue;
    named = std::find(p.words.begin(), p.words.end(), word) != p.words.end();
    const std::string& implied = named ? word : "";
    if (!known[i] && word_implies_value(p, implied)) {
      const auto at = std::find(p.words.begin(), p.words.end(), implied) - p.words.begin();
      config.set_value(i, p.values[static_cast<size_t>(at)]);
      known[i] = true;
    }
    if (named && !known[i]) {
      throw Error(TUNED_STATUS_CONFIG_ERROR, "config '" + text + "': family '" + word +
                                                 "' is one of several values of " + p.name +
                                                 ", which the text leaves out");
    }
  }
  if (!named) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "config '" + text + "': '" + word + "' names no kernel family of this op");
  }
  if (family_word(config, params).first != word) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, "config '" + text +
                                               "': its family parameters name another family "
                                               "than '" +
                                               word + "'");
  }
  // The rest: listed, held where the family does not read them, or as recorded before they
  // came. The parameters others' read_by names first: the rest's held values follow theirs.
  auto resolve = [&](size_t i) {
    if (known[i]) return;
    if (const auto held = unread_value(params[i], config)) {
      config.set_value(i, *held);
    } else if (params[i].absent_value) {
      config.set_value(i, *params[i].absent_value);
    } else {
      throw Error(TUNED_STATUS_CONFIG_ERROR, "config '" + text + "': family '" + word + "' reads " +
                                                 params[i].name + ", which the text leaves out");
    }
    known[i] = true;
  };
  std::vector<bool> selects(params.size(), false);
  for (const Param& p : params) {
    for (const FamilyUse& use : p.read_by) {
      const auto at = std::find(names->begin(), names->end(), use.family);
      if (at != names->end()) selects[static_cast<size_t>(at - names->begin())] = true;
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (selects[i]) resolve(i);
  }
  for (size_t i = 0; i < params.size(); ++i) resolve(i);
  return config;
}

namespace {
// Narrows param to values (a subset of its own, in any order), its family words with them.
void keep_values(Param& param, const std::vector<int>& values) {
  if (!param.words.empty()) {
    std::vector<std::string> words;
    for (int v : values) {
      const auto at = std::find(param.values.begin(), param.values.end(), v);
      words.push_back(param.words[static_cast<size_t>(at - param.values.begin())]);
    }
    param.words = std::move(words);
  }
  param.values = values;
}
}  // namespace

void Space::add(Param param) {
  if (!param.words.empty() && param.words.size() != param.values.size()) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                "space: parameter " + param.name + " has " + std::to_string(param.words.size()) +
                    " family words for " + std::to_string(param.values.size()) + " values");
  }
  if (!param.read_by.empty()) {
    std::vector<std::string> uses;
    for (const FamilyUse& use : param.read_by) uses.push_back(use.family);
    uses.push_back(param.name);
    family_uses_.push_back({param.name + "_unread", uses, [param](const Config& c) {
                              const auto fixed = unread_value(param, c);
                              return !fixed || c.get(param.name) == *fixed;
                            }});
  }
  params_.push_back(std::move(param));
}
void Space::require(Constraint constraint) { constraints_.push_back(std::move(constraint)); }

void Space::restrict(const std::map<std::string, std::vector<int>>& values) {
  for (const auto& [name, allowed] : values) {
    auto it = std::find_if(params_.begin(), params_.end(),
                           [&](const Param& p) { return p.name == name; });
    if (it == params_.end()) {
      std::string known;
      for (const auto& p : params_) known += (known.empty() ? "" : ", ") + p.name;
      throw Error(TUNED_STATUS_CONFIG_ERROR,
                  "space: unknown parameter '" + name + "' (known: " + known + ")");
    }
    if (allowed.empty()) {
      throw Error(TUNED_STATUS_CONFIG_ERROR, "space: parameter '" + name + "' has no values");
    }
    // Only values the op declares: others (0 for a divisor, 7 for a tile) are never valid code.
    for (size_t i = 0; i < allowed.size(); ++i) {
      const int v = allowed[i];
      if (std::find(it->values.begin(), it->values.end(), v) == it->values.end()) {
        std::string known;
        for (int k : it->values) known += (known.empty() ? "" : ", ") + std::to_string(k);
        throw Error(TUNED_STATUS_CONFIG_ERROR, "space: " + name + " = " + std::to_string(v) +
                                                   " is not a value " + name + " can take (" +
                                                   known + ")");
      }
      if (std::find(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(i), v) !=
          allowed.begin() + static_cast<std::ptrdiff_t>(i)) {
        throw Error(TUNED_STATUS_CONFIG_ERROR,
                    "space: " + name + " lists " + std::to_string(v) + " twice");
      }
    }
    keep_values(*it, allowed);
  }
}

namespace {
std::vector<int> values_of(const Config& c) {
  std::vector<int> v(c.size());
  for (size_t i = 0; i < c.size(); ++i) v[i] = c.value(i);
  return v;
}
}  // namespace

size_t Space::ValuesHash::operator()(const std::vector<int>& v) const {
  size_t h = 1469598103934665603ull;
  for (int x : v) h = (h ^ static_cast<size_t>(x + 0x9e3779b9)) * 1099511628211ull;
  return h;
}

size_t Space::restrict_to(const std::vector<Config>& configs) {
  auto members = std::make_shared<Members>();
  for (const Config& c : configs) {
    if (violation(c, /*include_pruning=*/false)) continue;
    if (members->keys.insert(values_of(c)).second) members->list.push_back(c);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    std::vector<int> used;
    for (int v : params_[i].values) {
      for (const Config& c : members->list) {
        if (c.value(i) == v) {
          used.push_back(v);
          break;
        }
      }
    }
    if (!used.empty()) keep_values(params_[i], used);
  }
  members_ = std::move(members);
  return members_->list.size();
}

double Space::unconstrained_size() const {
  double n = 1;
  for (const auto& p : params_) n *= static_cast<double>(p.values.size());
  return n;
}

void Space::for_each(const std::function<bool(const Config&)>& visit) const {
  if (members_) {
    for (const Config& c : members_->list) {
      if (!visit(c)) return;
    }
    return;
  }
  walk(visit, nullptr);
}

namespace {
// A set of parameters, one bit each (bit j: parameter j): the parameters a rule reads, or those
// blamed for a depth's rejected values.
using Depths = std::uint64_t;

// A constraint, tested once the last parameter it reads is set, with the set of the other
// parameters it reads, for backjumping.
struct Check {
  const Constraint* constraint;
  Depths reads_before;
};

bool is_pinned(const std::vector<std::optional<int>>* pinned, size_t i) {
  return pinned && (*pinned)[i].has_value();
}

// checks_at[i]: constraints whose last used parameter is i, tested once parameter i is set.
// Each carries the set of the other parameters it reads (bit j: parameter j), for backjumping.
// A pinned parameter is set from the start: a rule is tested as soon as the others it reads
// are (one pinning MMA prunes TM at TM's depth, not at MMA's), and is never blamed on it.
// The rule lists are taken in order (the space's family uses, then the op's rules), not copied:
// the checks point into them.
std::vector<std::vector<Check>> checks_by_depth(
    std::initializer_list<const std::vector<Constraint>*> rule_lists,
    const std::vector<std::string>& names, const std::vector<std::optional<int>>* pinned) {
  const size_t n = names.size();
  std::vector<std::vector<Check>> checks_at(n);
  for (const auto* rules : rule_lists) {
    for (const auto& c : *rules) {
      std::vector<size_t> used;
      bool reads_any = false;
      for (const auto& name : c.uses) {
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) {
          throw Error(TUNED_STATUS_INTERNAL_ERROR,
                      "constraint " + c.name + " uses unknown parameter " + name);
        }
        reads_any = true;
        const auto u = static_cast<size_t>(it - names.begin());
        if (!is_pinned(pinned, u)) used.push_back(u);
      }
      // A rule reading pinned parameters only is tested first, blamed on none: if it fails, the
      // pins leave no config.
      const size_t last =
          used.empty() ? (reads_any ? 0 : n - 1) : *std::max_element(used.begin(), used.end());
      Depths reads = 0;
      for (size_t u : used) {
        if (u != last) reads |= Depths{1} << u;
      }
      // A rule reading no parameter is blamed on all of them (never jumped over).
      if (!reads_any) reads = (Depths{1} << last) - 1;
      checks_at[last].push_back({&c, reads});
    }
  }
  return checks_at;
}

// The first of checks that config breaks, or null.
const Check* first_failed(const std::vector<Check>& checks, const Config& config) {
  for (const Check& check : checks) {
    if (!check.constraint->test(config)) return &check;
  }
  return nullptr;
}

// One config whose later parameters hold stale values that the constraints at this depth
// never read. Conflict-directed backjumping (Prosser): conflicts[d] collects the earlier
// parameters read by the rules that rejected depth d's values, and those its subtrees reported.
// When depth d runs out of values with no valid config below it, nothing between the deepest
// of them, h, and d can change that: the walk resumes at h, which inherits the rest of the
// set. Where a valid config was found below, the walk steps back one depth as plain
// enumeration does. The order of the configs visited is unchanged; only barren branches are
// skipped (with contradictory restrictions on late parameters, the whole space at once).
class BackjumpingWalk {
 public:
  BackjumpingWalk(const std::vector<Param>& params, std::vector<std::vector<Check>> checks_at,
                  Config config, std::mt19937_64* rng,
                  const std::vector<std::optional<int>>* pinned)
      : params_(params),
        checks_at_(std::move(checks_at)),
        config_(std::move(config)),
        rng_(rng),
        pinned_(pinned),
        index_(params.size(), 0),
        conflicts_(params.size(), 0),
        found_(params.size(), false),
        order_(params.size()) {
    for (size_t i = 0; i < params.size(); ++i) {
      if (is_pinned(pinned_, i)) config_.set_value(i, *(*pinned_)[i]);
    }
  }

  // Space::walk's loop: true when max_steps ran out, false when the whole space was seen or
  // visit stopped it.
  bool run(const std::function<bool(const Config&)>& visit, size_t max_steps) {
    const size_t n = params_.size();
    enter(0);
    size_t depth = 0;
    size_t steps = 0;
    while (true) {
      if (max_steps > 0 && ++steps > max_steps) return true;
      if (index_[depth] < order_[depth].size()) {
        config_.set_value(depth, order_[depth][index_[depth]++]);
        if (const Check* failed = first_failed(checks_at_[depth], config_)) {
          conflicts_[depth] |= failed->reads_before;
          continue;
        }
        if (depth + 1 == n) {
          found_[depth] = true;
          if (!visit(config_)) return false;
        } else {
          enter(++depth);
        }
      } else if (depth == 0) {
        return false;
      } else if (found_[depth]) {
        found_[--depth] = true;
      } else {
        const Depths blamed = conflicts_[depth];
        if (blamed == 0) return false;  // no earlier parameter can make any value valid
        const size_t back = 63 - static_cast<size_t>(__builtin_clzll(blamed));
        conflicts_[back] |= blamed & ~(Depths{1} << back);
        depth = back;  // the deepest parameter blamed moves to its next value
      }
    }
  }

 private:
  void enter(size_t d) {
    index_[d] = 0;
    conflicts_[d] = 0;
    found_[d] = false;
    if (is_pinned(pinned_, d)) {
      order_[d].assign(1, *(*pinned_)[d]);
    } else {
      order_[d] = params_[d].values;
      if (rng_) std::shuffle(order_[d].begin(), order_[d].end(), *rng_);
    }
  }

  const std::vector<Param>& params_;
  const std::vector<std::vector<Check>> checks_at_;
  Config config_;
  std::mt19937_64* rng_;
  const std::vector<std::optional<int>>* pinned_;
  std::vector<size_t> index_;
  std::vector<Depths> conflicts_;
  std::vector<bool> found_;  // a valid config was visited below this depth's values
  // The order each depth tries its values in: the list's, or shuffled on each entry.
  std::vector<std::vector<int>> order_;
};
}  // namespace

bool Space::walk(const std::function<bool(const Config&)>& visit, std::mt19937_64* rng,
                 size_t max_steps, const std::vector<std::optional<int>>* pinned) const {
  const size_t n = params_.size();
  if (n == 0) return false;
  auto names = std::make_shared<std::vector<std::string>>();
  for (const auto& p : params_) names->push_back(p.name);

  if (n > 64) {  // a conflict set is one bit per parameter
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                "space has " + std::to_string(n) + " parameters; at most 64 are supported");
  }
  std::vector<std::vector<Check>> checks_at =
      checks_by_depth({&family_uses_, &constraints_}, *names, pinned);
  BackjumpingWalk walk(params_, std::move(checks_at), Config(names, std::vector<int>(n, 0)), rng,
                       pinned);
  return walk.run(visit, max_steps);
}

std::vector<Config> Space::enumerate() const {
  std::vector<Config> out;
  for_each([&](const Config& c) {
    out.push_back(c);
    return true;
  });
  return out;
}

size_t Space::count() const {
  size_t n = 0;
  for_each([&](const Config&) {
    ++n;
    return true;
  });
  return n;
}

namespace {
// A draw's walks give up after this many values tried each: valid configs, where any exist,
// turn up within hundreds.
constexpr size_t kSampleWalkSteps = 2000;
constexpr int kSampleWalks = 10;  // fresh orders: a walk stuck in a barren branch starts over
}  // namespace

std::optional<Config> Space::sample(std::mt19937_64& rng, int max_tries) const {
  if (params_.empty()) return std::nullopt;
  std::vector<std::optional<int>> pinned(params_.size());
  std::vector<size_t> families;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].family) families.push_back(i);
  }
  // A family value drawn that holds no config here (a tensor-core family on an older GPU) is
  // drawn again; after a few such, any config.
  constexpr int kFamilyDraws = 6;
  for (int f = 0; f < kFamilyDraws && !families.empty(); ++f) {
    for (size_t i : families) pinned[i] = params_[i].values[rng() % params_[i].values.size()];
    if (auto config = sample_within(rng, max_tries, pinned)) return config;
  }
  std::fill(pinned.begin(), pinned.end(), std::nullopt);
  return sample_within(rng, max_tries, pinned);
}

std::optional<Config> Space::sample_within(std::mt19937_64& rng, int max_tries,
                                           const std::vector<std::optional<int>>& pinned) const {
  auto matches = [&](const Config& c) {
    for (size_t i = 0; i < pinned.size(); ++i) {
      if (pinned[i] && c.value(i) != *pinned[i]) return false;
    }
    return true;
  };
  if (members_) {  // uniform over the listed configs the pins allow (reservoir of one)
    if (members_->list.empty()) return std::nullopt;
    if (std::none_of(pinned.begin(), pinned.end(), [](const auto& p) { return p.has_value(); })) {
      return members_->list[rng() % members_->list.size()];
    }
    const Config* chosen = nullptr;
    size_t seen = 0;
    for (const Config& c : members_->list) {
      if (matches(c) && rng() % ++seen == 0) chosen = &c;
    }
    return chosen ? std::optional<Config>(*chosen) : std::nullopt;
  }
  auto names = std::make_shared<std::vector<std::string>>();
  for (const auto& p : params_) names->push_back(p.name);
  Config config(names, std::vector<int>(params_.size(), 0));
  for (int t = 0; t < max_tries; ++t) {
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& values = params_[i].values;
      config.set_value(i, pinned[i] ? *pinned[i] : values[rng() % values.size()]);
    }
    if (!violation(config)) return config;
  }
  // Valid configs are rare (a narrow problem prunes most tiles, splits and host options): a walk
  // in random order finds one, not uniformly but from anywhere in the space.
  // A walk that ends before its step bound has seen the whole space (within the pins) is empty.
  std::optional<Config> found;
  bool cut_short = true;
  for (int w = 0; w < kSampleWalks && !found && cut_short; ++w) {
    cut_short = walk(
        [&](const Config& c) {
          found = c;
          return false;
        },
        &rng, kSampleWalkSteps, &pinned);
  }
  return found;
}

std::vector<Config> Space::neighbors(const Config& config) const {
  std::vector<Config> out;
  if (config.size() != params_.size()) return out;
  // Each parameter's possible single moves: one step down or up its value list.
  std::vector<std::vector<int>> moves(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& values = params_[i].values;
    const auto it = std::find(values.begin(), values.end(), config.value(i));
    if (it == values.end()) continue;
    if (it != values.begin()) moves[i].push_back(*(it - 1));
    if (it + 1 != values.end()) moves[i].push_back(*(it + 1));
  }
  auto keep = [&](const Config& c) {
    if (!violation(c)) out.push_back(c);
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    for (int vi : moves[i]) {
      Config c = config;
      c.set_value(i, vi);
      keep(c);
      for (size_t j = i + 1; j < params_.size(); ++j) {
        for (int vj : moves[j]) {
          Config d = c;
          d.set_value(j, vj);
          keep(d);
        }
      }
    }
  }
  return out;
}

std::optional<std::string> Space::violation(const Config& config, bool include_pruning) const {
  if (config.size() != params_.size()) return "parameters";
  for (size_t i = 0; i < params_.size(); ++i) {
    if (config.name(i) != params_[i].name) return "parameters";
    // A value outside the list (an older template's, or one a [space] restriction removed).
    const auto& values = params_[i].values;
    if (std::find(values.begin(), values.end(), config.value(i)) == values.end()) {
      return params_[i].name + "_in_space";
    }
  }
  // A listed config met the rules when it was listed: only the list decides (and fast, where a
  // replay asks for thousands of neighbours).
  if (members_) {
    if (members_->keys.count(values_of(config))) return std::nullopt;
    return "listed";
  }
  for (const auto& c : family_uses_) {
    if (!c.test(config)) return c.name;
  }
  for (const auto& c : constraints_) {
    if (c.prune_only && !include_pruning) continue;
    if (!c.test(config)) return c.name;
  }
  return std::nullopt;
}

}  // namespace tuned
