// The generic space walk against brute force: for_each must visit exactly the configs of the
// product that meet every constraint, in lexicographic order, however it prunes and jumps.
#include "core/space.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "generator/device.hpp"
#include "templates/entropy/entropy_op.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/transpose/transpose_op.hpp"
#include "tuned/error.hpp"

namespace {

using namespace tuned;

// Every config of the product, in lexicographic order of the value lists, that valid accepts
// (by default: meeting every rule).
std::vector<std::string> brute_force(const Space& space,
                                     const std::function<bool(const Config&)>& valid = nullptr) {
  std::vector<std::string> out;
  const auto& params = space.params();
  auto names = std::make_shared<std::vector<std::string>>();
  for (const auto& p : params) names->push_back(p.name);
  std::vector<size_t> index(params.size(), 0);
  while (true) {
    std::vector<int> values;
    for (size_t i = 0; i < params.size(); ++i) values.push_back(params[i].values[index[i]]);
    const Config config(names, values);
    bool ok = true;
    if (valid) {
      ok = valid(config);
    } else {
      for (const auto& c : space.constraints()) ok = ok && c.test(config);
    }
    if (ok) out.push_back(config.canonical());
    size_t d = params.size();
    while (d > 0 && ++index[d - 1] == params[d - 1].values.size()) index[--d] = 0;
    if (d == 0) return out;
  }
}

// A random space: 6 to 9 parameters of 2 to 4 values, and rules over 1 to 3 of them that reject
// a random part of their joint values (some rules rejecting everything they see).
Space random_space(std::mt19937_64& rng) {
  Space space;
  const int n = std::uniform_int_distribution<int>(6, 9)(rng);
  for (int i = 0; i < n; ++i) {
    std::vector<int> values;
    const int count = std::uniform_int_distribution<int>(2, 4)(rng);
    for (int v = 0; v < count; ++v) values.push_back(v);
    space.add({"P" + std::to_string(i), values, ""});
  }
  const int rules = std::uniform_int_distribution<int>(2, 8)(rng);
  for (int r = 0; r < rules; ++r) {
    std::vector<std::string> uses;
    const int arity = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int a = 0; a < arity; ++a) {
      uses.push_back("P" + std::to_string(std::uniform_int_distribution<int>(0, n - 1)(rng)));
    }
    const uint64_t salt = rng();
    const int keep_percent = std::uniform_int_distribution<int>(0, 100)(rng);
    space.require({"rule" + std::to_string(r), uses, [uses, salt, keep_percent](const Config& c) {
                     uint64_t h = salt;
                     for (const auto& name : uses) h = (h ^ (c.get(name) + 1)) * 1099511628211ull;
                     return static_cast<int>((h >> 20) % 100) < keep_percent;
                   }});
  }
  return space;
}

TEST(Space, WalkVisitsExactlyTheValidConfigsInOrder) {
  std::mt19937_64 rng(20261123);
  int empty = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Space space = random_space(rng);
    std::vector<std::string> walked;
    space.for_each([&](const Config& c) {
      walked.push_back(c.canonical());
      return true;
    });
    const auto expected = brute_force(space);
    ASSERT_EQ(walked, expected) << "trial " << trial;
    empty += expected.empty();
  }
  // Both kinds of space occurred: the jumps are exercised by empty and by sparse ones.
  EXPECT_GT(empty, 20);
  EXPECT_LT(empty, 380);
}

// Parameters some families do not read (Param::read_by) hold one value there, whichever side of
// the family parameter they are declared on: the walk visits exactly the configs of the product
// that meet the rules and hold those values, and violation names the parameter.
TEST(Space, ParametersAFamilyDoesNotReadHoldOneValue) {
  std::mt19937_64 rng(20261207);
  size_t unread_seen = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Space base = random_space(rng);
    Space space;
    std::vector<Param> params = base.params();
    const int n = static_cast<int>(params.size());
    for (int i = 0; i < n; ++i) {
      for (int u = std::uniform_int_distribution<int>(0, 2)(rng); u > 0; --u) {
        const int f = std::uniform_int_distribution<int>(0, n - 1)(rng);
        if (f == i) continue;
        FamilyUse use{params[f].name, {}, params[i].values[rng() % params[i].values.size()]};
        for (int v : params[f].values) {
          if (rng() % 2) use.reading.push_back(v);
        }
        params[i].read_by.push_back(use);
      }
    }
    for (const Param& p : params) space.add(p);
    for (const Constraint& c : base.constraints()) space.require(c);
    std::vector<std::string> expected;
    space.for_each([&](const Config& c) {
      expected.push_back(c.canonical());
      for (const Param& p : params) {
        if (auto fixed = unread_value(p, c)) {
          EXPECT_EQ(c.get(p.name), *fixed) << p.name << " in " << c.canonical();
          ++unread_seen;
        }
      }
      return true;
    });
    // Brute force: the product, each config judged by violation alone.
    const auto brute = brute_force(space, [&](const Config& config) {
      const auto broken = space.violation(config);
      for (const Param& p : params) {
        const auto fixed = unread_value(p, config);
        if (fixed && config.get(p.name) != *fixed) {
          EXPECT_TRUE(broken.has_value()) << config.canonical();
        }
      }
      return !broken;
    });
    ASSERT_EQ(expected, brute) << "trial " << trial;
  }
  EXPECT_GT(unread_seen, 1000u);
  // The name a config out of its family breaks.
  Space named;
  named.add({"KIND", {0, 1}, ""});
  Param tile{"TILE", {8, 16}, ""};
  tile.read_by.push_back({"KIND", {0}, 8});
  named.add(tile);
  auto config = [](int kind, int t) {
    return Config::parse("KIND=" + std::to_string(kind) + ",TILE=" + std::to_string(t));
  };
  EXPECT_FALSE(named.violation(config(0, 16)).has_value());
  EXPECT_FALSE(named.violation(config(1, 8)).has_value());
  EXPECT_EQ(named.violation(config(1, 16)).value_or(""), "TILE_unread");
  EXPECT_EQ(named.count(), 3u);
}

TEST(Space, ContradictoryLateRestrictionsAreFoundEmptyAtOnce) {
  // TAIL splits only unsplit k, REDUCE sums only split k: together nothing is valid. Rules on
  // the last parameters fail only deep in the walk, and every earlier parameter is fine.
  const DeviceInfo dev = reference_device(90);
  const gemm_op::Problem problem = gemm_op::packed_problem("NN", 4096, 4096, 4096);
  Space space = gemm_op::make_space(dev, problem);
  space.restrict({{"TAIL", {1}}, {"REDUCE", {1}}});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(space.count(), 0u);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "the emptiness proof enumerated the space";
}

// A rule reads only what it declares: one reading another parameter (here through a helper) fails
// whenever it is tested, naming itself and the parameter, not just where a stale value would have
// pruned the wrong configs.
TEST(Space, ARuleReadingAParameterItDoesNotDeclareFails) {
  Space space;
  space.add({"A", {1, 2}, "a"});
  space.add({"B", {1, 2}, "b"});
  auto sum = [](const Config& c) { return c.get("A") + c.get("B"); };
  space.require({"declares_a", {"A"}, [=](const Config& c) { return sum(c) < 4; }});
  try {
    space.count();
    FAIL() << "the undeclared read went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INTERNAL_ERROR);
    EXPECT_NE(std::string(e.what()).find("rule declares_a reads B"), std::string::npos) << e.what();
  }
  EXPECT_THROW(space.violation(Config::parse("A=1,B=1")), Error);
  // Outside a rule, and in a rule that declares it, the same read is fine.
  EXPECT_EQ(sum(Config::parse("A=2,B=2")), 4);
  Space declared;
  declared.add({"A", {1, 2}, "a"});
  declared.add({"B", {1, 2}, "b"});
  declared.require({"declares_both", {"A", "B"}, [=](const Config& c) { return sum(c) < 4; }});
  EXPECT_EQ(declared.count(), 3u);
}

// Every op's rules, on odd problems and both architectures: none reads a parameter it does not
// declare (a throw would say which). Reads that depend on values are reached by a walk's first
// configs and by random draws (whose rejection sampling tests every rule on whole configs).
void exercise_rules(const Space& space, const std::string& what) {
  SCOPED_TRACE(what);
  size_t visited = 0;
  EXPECT_NO_THROW(space.for_each([&](const Config&) { return ++visited < 2000; }));
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::optional<Config> drawn;
    EXPECT_NO_THROW(drawn = space.sample(rng));
    if (!drawn) break;
    EXPECT_NO_THROW(EXPECT_FALSE(space.violation(*drawn)));
  }
}

TEST(Space, EveryOpsRulesReadOnlyWhatTheyDeclare) {
  for (int cc : {80, 90}) {
    const DeviceInfo dev = reference_device(cc);
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      for (auto [m, n, k] : {std::tuple{1, 7, 127}, std::tuple{1000, 4097, 33},
                             std::tuple{4096, 4096, 4096}, std::tuple{16, 1, 32768}}) {
        exercise_rules(gemm_op::make_space(dev, gemm_op::packed_problem(layout, m, n, k)),
                       std::string("gemm ") + layout + " " + std::to_string(m) + "x" +
                           std::to_string(n) + "x" + std::to_string(k) + " sm" +
                           std::to_string(cc));
      }
    }
    for (auto [rows, cols] : {std::pair{1, 4097}, std::pair{333, 77777}, std::pair{4096, 4096}}) {
      exercise_rules(transpose_op::make_space(dev, transpose_op::packed_problem(rows, cols)),
                     "transpose " + std::to_string(rows) + "x" + std::to_string(cols));
    }
    for (auto input : {entropy_op::Input::kF32, entropy_op::Input::kU8}) {
      for (int radius : {1, 3, 7}) {
        exercise_rules(
            entropy_op::make_space(dev, entropy_op::packed_problem(1000, 4097, radius, 16), input),
            "entropy radius " + std::to_string(radius));
      }
    }
  }
}

// Where a parameter names families by words, a config's text is its family's word and the
// parameters that family reads; it reads back as the same config, and so does the flat text.
TEST(Space, ConfigTextNamesTheFamilyByWordAndCarriesOnlyWhatItReads) {
  // KIND 0 ("" : ALGO decides), 1, 2 ("vec"); ALGO "plain" 0, "fancy" 1 or 2.
  std::vector<Param> params = {{"KIND", {0, 1, 2}, "k"},
                               {"A", {1, 2, 4}, "read by every family"},
                               {"ALGO", {0, 1, 2}, "a"},
                               {"T", {1, 2}, "read where KIND = 0 and ALGO = 0"},
                               {"V", {1, 8}, "read where KIND > 0"},
                               {"NEW", {0, 1}, "added later", 0}};
  params[0].words = {"", "vec", "vec"};
  params[2].words = {"plain", "fancy", "fancy"};
  params[2].read_by = {{"KIND", {0}, 0}};
  params[3].read_by = {{"KIND", {0}, 1}, {"ALGO", {0}, 1}};
  params[4].read_by = {{"KIND", {1, 2}, 1}};
  Space space;
  for (const Param& p : params) space.add(p);
  const std::map<std::string, std::string> texts = {
      {"KIND=0,A=2,ALGO=0,T=2,V=1,NEW=1", "plain:A=2,T=2,NEW=1"},
      {"KIND=0,A=4,ALGO=2,T=1,V=1,NEW=0", "fancy:A=4,ALGO=2,NEW=0"},
      {"KIND=2,A=1,ALGO=0,T=1,V=8,NEW=0", "vec:KIND=2,A=1,V=8,NEW=0"}};
  size_t seen = 0;
  space.for_each([&](const Config& c) {
    const std::string text = config_text(c, params);
    EXPECT_EQ(read_config(text, params), c) << text;
    EXPECT_EQ(read_config(c.canonical(), params), c) << c.canonical();
    if (auto it = texts.find(c.canonical()); it != texts.end()) {
      EXPECT_EQ(text, it->second);
      ++seen;
    }
    return true;
  });
  EXPECT_EQ(seen, texts.size());
  // A config recorded before NEW: its flat text and its word text both mean NEW = 0.
  EXPECT_EQ(read_config("plain:A=2,T=2", params).canonical(), "KIND=0,A=2,ALGO=0,T=2,V=1,NEW=0");
  EXPECT_EQ(read_config("KIND=0,A=2,ALGO=0,T=2,V=1", params).canonical(),
            "KIND=0,A=2,ALGO=0,T=2,V=1,NEW=0");
  // Out of order, or naming an unread parameter at its held value: the same config.
  EXPECT_EQ(read_config("plain:T=2,V=1,A=2", params).canonical(),
            "KIND=0,A=2,ALGO=0,T=2,V=1,NEW=0");
  auto refusal = [&](const std::string& text) {
    try {
      read_config(text, params);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_NE(refusal("tiled:A=2,T=2").find("'tiled' names no kernel family"), std::string::npos);
  EXPECT_NE(refusal("plain:T=2").find("reads A, which the text leaves out"), std::string::npos);
  EXPECT_NE(refusal("vec:A=2,V=8").find("several values of KIND"), std::string::npos);
  EXPECT_NE(refusal("fancy:A=2").find("several values of ALGO"), std::string::npos);
  EXPECT_NE(refusal("plain:KIND=1,A=2").find("another family than 'plain'"), std::string::npos);
  EXPECT_NE(refusal("plain:A=2,T=2,X=1").find("unknown parameter X"), std::string::npos);
  // Without words, or not a whole config of params: the flat text.
  EXPECT_EQ(config_text(Config::parse("A=2,T=1"), params), "A=2,T=1");
  std::vector<Param> plain = params;
  for (Param& p : plain) p.words.clear();
  EXPECT_EQ(config_text(read_config("plain:A=2,T=2", params), plain),
            "KIND=0,A=2,ALGO=0,T=2,V=1,NEW=0");
  // Words must name each value.
  Space wrong;
  Param short_words = params[0];
  short_words.words.pop_back();
  EXPECT_THROW(wrong.add(short_words), Error);
}

// A config recorded before a parameter existed (an older sweep's or table's) is completed with
// the value it meant; anything else is left as it is.
TEST(Space, AbsentParametersCompleteOlderConfigs) {
  const std::vector<Param> params = {
      {"A", {1, 2}, "a"}, {"B", {1, 2}, "b"}, {"NEW", {0, 1}, "added later", 0}};
  EXPECT_EQ(with_absent_params(Config::parse("A=2,B=1"), params).canonical(), "A=2,B=1,NEW=0");
  // Named out of order: completed in the params' order.
  EXPECT_EQ(with_absent_params(Config::parse("B=1,A=2"), params).canonical(), "A=2,B=1,NEW=0");
  // Already whole: unchanged, whatever the value.
  EXPECT_EQ(with_absent_params(Config::parse("A=2,B=1,NEW=1"), params).canonical(),
            "A=2,B=1,NEW=1");
  // Missing a parameter nothing stands in for, or naming one params lack: unchanged.
  EXPECT_EQ(with_absent_params(Config::parse("A=2"), params).canonical(), "A=2");
  EXPECT_EQ(with_absent_params(Config::parse("A=2,B=1,X=3"), params).canonical(), "A=2,B=1,X=3");
  // GEMM's later parameters: a config of the first sweeps means PACK=0,REDUCE=0,TAIL=0,MMA=0, one
  // of the sweeps before MMA existed MMA=0.
  const std::string gemm_old =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
      "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1";
  EXPECT_EQ(with_absent_params(Config::parse(gemm_old), gemm_op::parameters()).canonical(),
            gemm_old + ",PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
  EXPECT_EQ(
      with_absent_params(Config::parse(gemm_old + ",PACK=1,REDUCE=0,TAIL=1"), gemm_op::parameters())
          .canonical(),
      gemm_old + ",PACK=1,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0");
}

}  // namespace
