// The language op descriptors use to declare their tuning spaces: a config is an ordered list of
// named integer parameters, and the space is the product of each parameter's values, filtered by
// named constraints. Each parameter is named once: its name is the -D option, the database text,
// and the key the kernel reads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tuned {

/// One point of a space: values of named integer parameters, in the op's order.
class Config {
 public:
  Config() = default;
  Config(std::shared_ptr<const std::vector<std::string>> names, std::vector<int> values);

  /// Value of a parameter; throws Error(TUNED_STATUS_INTERNAL_ERROR) when the name is unknown.
  /// A view: launches read parameters dozens of times per call, without building strings.
  int get(std::string_view name) const;
  bool has(const std::string& name) const;
  /// Sets an existing parameter or appends a new one.
  void set(const std::string& name, int value);

  size_t size() const { return values_.size(); }
  const std::string& name(size_t i) const { return (*names_)[i]; }
  int value(size_t i) const { return values_[i]; }
  void set_value(size_t i, int value);

  /// "GEMV=0,BM=128,BN=128,BK=8,..." in parameter order.
  std::string canonical() const;
  /// "-DBM=128", ... in parameter order.
  std::vector<std::string> defines() const;
  /// "_bm128_bn128_..." in parameter order: what an op appends to name a config's kernel.
  std::string name_suffix() const;
  /// Parses canonical text; throws Error(TUNED_STATUS_CONFIG_ERROR) naming the bad item.
  static Config parse(const std::string& text);

  bool operator==(const Config& other) const;

 private:
  std::shared_ptr<const std::vector<std::string>> names_ =
      std::make_shared<const std::vector<std::string>>();
  std::vector<int> values_;
};

/// Where a kernel family does not read a parameter (GEMM's matrix-vector kernel reads no tile
/// size, its tensor-core tiles no thread sub-tile): while `family` (another parameter) takes a
/// value outside `reading`, the parameter holds `value`.
struct FamilyUse {
  std::string family;
  std::vector<int> reading;
  int value = 0;
};

struct Param {
  std::string name;
  std::vector<int> values;
  std::string meaning;  // one line, for --help and docs
  /// For a parameter added after configs were recorded without it: the value those configs
  /// meant (the behaviour before it existed). None: every config names it.
  std::optional<int> absent_value = std::nullopt;
  /// A kernel family (GEMM's math: FFMA, FP64 or TF32 tensor cores): a random draw takes one of
  /// its values first, each as likely, then the rest. Without it a family whose rules fix many
  /// parameters is a sliver of the space that draws never meet, however fast its kernels.
  bool family = false;
  /// The families that read this parameter, where not all do (empty: every config reads it).
  /// The first entry whose family is outside its `reading` fixes the value, so the space holds
  /// one config per point of the parameters a family reads, with no rule of the op's to pin the
  /// rest: the space keeps it (Space::violation names "<NAME>_unread").
  std::vector<FamilyUse> read_by = {};
  /// Words naming the kernel families this parameter selects, one per value ("" where a value
  /// names none and the next such parameter decides; empty: it names no family). A config's text
  /// starts with its family's word and leaves out what the word implies: see config_text.
  std::vector<std::string> words = {};
};

/// The value param holds in config where a family that config belongs to does not read it, or
/// nothing where config's families all read it (config names every family param.read_by does).
std::optional<int> unread_value(const Param& param, const Config& config);

/// config in params' order with each parameter it leaves out that has an absent_value set to it,
/// when that makes it a whole config of params (a config recorded before those parameters were
/// added); any other config comes back unchanged.
Config with_absent_params(const Config& config, const std::vector<Param>& params);

/// The text a config is stored and shown as, from the op's params as declared (not a space's,
/// whose restrictions narrow the values and so what a word implies). Where params name kernel
/// families by words
/// (Param::words): the family's word, ':', then the parameters that family reads, in params'
/// order (GEMM's "wgmma_tma:BM=128,BN=256,..."), leaving out a family parameter the word implies
/// (one value has it) and a parameter the family does not read (unread_value) at its held value.
/// Otherwise, or where config is not a whole config of params, canonical().
std::string config_text(const Config& config, const std::vector<Param>& params);

/// A config of params from its text in either form: config_text's (a family word first) or
/// every parameter named (flat, as configs were recorded before families had words; a parameter
/// added since takes its absent_value: with_absent_params). Throws
/// Error(TUNED_STATUS_CONFIG_ERROR) naming an unknown word, or a parameter the family reads that
/// the text leaves out.
Config read_config(const std::string& text, const std::vector<Param>& params);

/// A named predicate over a config. `uses` lists every parameter it reads (helpers included), so
/// enumeration can test it as soon as they are all set, prune the rest of that branch, and jump
/// back over parameters it does not read when it rejects every value of one.
struct Constraint {
  std::string name;
  std::vector<std::string> uses;
  std::function<bool(const Config&)> holds;
  /// holds(config), held to `uses`: while it runs, Config::get of any other parameter (in any
  /// helper it calls) throws Error(TUNED_STATUS_INTERNAL_ERROR) naming the rule and the
  /// parameter. During enumeration the parameters after those a rule declares hold stale values,
  /// so a rule reading one would prune the wrong configs silently; this makes it fail whenever the
  /// rule is tested. The space tests its rules only through this.
  bool test(const Config& config) const;
  /// A pruning rule (the config would work but is not worth trying on this problem), as opposed
  /// to a rule the kernel or the device needs.
  bool prune_only = false;
};

class Space {
 public:
  void add(Param param);
  void require(Constraint constraint);

  /// Narrows the values of the named parameters (a TOML [space] table, a ladder rung) to a subset
  /// of the values they may take. Throws Error(TUNED_STATUS_CONFIG_ERROR) naming an unknown
  /// parameter (listing the known ones), a value outside a parameter's list (listing it), or a
  /// value given twice.
  void restrict(const std::map<std::string, std::vector<int>>& values);
  /// Narrows the space to the listed configs (a recorded space replayed, where only they have
  /// results): enumeration visits them in list order, draws are uniform over them, and any other
  /// config breaks "listed", so neighbours are listed ones. Each parameter keeps the values the
  /// list uses, so a neighbour's step skips values no listed config has. Configs that break the
  /// space's rules or repeat one are dropped. Returns how many are kept.
  size_t restrict_to(const std::vector<Config>& configs);

  const std::vector<Param>& params() const { return params_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }

  /// Visits every config that meets every constraint, in lexicographic order of the parameter
  /// lists, until visit returns false. Constraints are tested as soon as the parameters they use
  /// are set, so rejected branches are never expanded.
  void for_each(const std::function<bool(const Config&)>& visit) const;
  /// Every valid config (small spaces only: a large one has millions).
  std::vector<Config> enumerate() const;
  /// Number of valid configs.
  size_t count() const;
  /// A random valid config, or nothing if the space is empty. The family parameters' values are
  /// drawn first (uniformly; drawn again a few times where that family holds no config here),
  /// then within them: each other parameter drawn uniformly, rejected until every constraint
  /// holds (up to max_tries draws: uniform over the family's valid configs where they are not
  /// rare); then, where they are, the first config of a walk like for_each's over values in
  /// random order (bounded walks, restarted a few times: an empty space is for_each's to prove,
  /// not every draw's).
  std::optional<Config> sample(std::mt19937_64& rng, int max_tries = 200) const;
  /// Valid configs one step away: one parameter moved to the next lower or higher value of its
  /// list, or two parameters moved together (so coupled ones like BM and WM can move in step).
  std::vector<Config> neighbors(const Config& config) const;
  /// Number of configs before constraints.
  double unconstrained_size() const;
  /// Name of the first constraint the config breaks, or nothing; a config naming parameters the
  /// space does not have, or missing some, breaks "parameters", and one with a value outside a
  /// parameter's list breaks "<NAME>_in_space". Pruning rules count only when include_pruning is
  /// set.
  std::optional<std::string> violation(const Config& config, bool include_pruning = true) const;

 private:
  /// for_each's walk; with rng, each parameter's values are tried in a fresh random order. Stops
  /// after max_steps values tried (0: no limit), and then returns true (false: it saw the whole
  /// space, or visit stopped it). With pinned, a parameter whose entry is set takes that value
  /// only.
  bool walk(const std::function<bool(const Config&)>& visit, std::mt19937_64* rng,
            size_t max_steps = 0, const std::vector<std::optional<int>>* pinned = nullptr) const;
  /// sample's draw with the pinned parameters (sized like params_) held at their values.
  std::optional<Config> sample_within(std::mt19937_64& rng, int max_tries,
                                      const std::vector<std::optional<int>>& pinned) const;

  std::vector<Param> params_;
  std::vector<Constraint> constraints_;
  // One per parameter some families do not read (Param::read_by): it holds their value there.
  // Checked before the op's rules (a parameter out of its family is no config of any rule's).
  std::vector<Constraint> family_uses_;
  struct ValuesHash {
    size_t operator()(const std::vector<int>& v) const;
  };
  struct Members {
    std::vector<Config> list;
    std::unordered_set<std::vector<int>, ValuesHash> keys;  // each listed config's values
  };
  std::shared_ptr<const Members> members_;  // restrict_to's list; null: every valid config
};

}  // namespace tuned
