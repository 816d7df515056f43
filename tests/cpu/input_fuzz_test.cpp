// A seeded fuzz of autotune's inputs: TOML documents built from random keys, values of every TOML
// type, [space] tables of known and unknown parameters with values inside and outside their
// lists, and byte-level mutations of good documents, with random command-line flags on top.
// Every input must end in a clear error (exit code 2, one line naming the problem) or in options
// whose tasks are valid; for those, the restricted space on a reference H100 either has configs
// or is refused, and every config a strategy hands out (its first configs included: the op's
// seeds and others from outside the restriction) keeps to the restriction. A second test runs
// the autotune binary itself on fuzzed files: it must exit with 1 or 2, never by a signal.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "generator/device.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/registry.hpp"
#include "templates/transpose/transpose_op.hpp"
#include "tools/autotune_options.hpp"
#include "tuned/error.hpp"
#include "tuner/strategy.hpp"

namespace tuned {
namespace {

namespace fs = std::filesystem;

class Fuzzer {
 public:
  explicit Fuzzer(uint64_t seed) : rng_(seed) {}

  // A TOML document: mostly well-formed with random content, sometimes mutated bytes.
  std::string document() {
    std::string text;
    const bool well_formed = chance(2);
    if (well_formed) {  // a well-formed run, so that many restrictions reach the tuner's side
      static const std::vector<std::string> layouts = {"NN", "nt", "TN", "TT"};
      static const std::vector<std::string> strategies = {"guided", "random", "exhaustive"};
      static const std::vector<std::string> shapes = {"1x7x127", "127x127x127", "1000x1x64",
                                                      "4097x33x7", "64x4096x4096", "1x1x1"};
      text += "layout = \"" + layouts[rng_() % layouts.size()] + "\"\n";
      text += "strategy = \"" + strategies[rng_() % strategies.size()] + "\"\n";
      text += "shapes = [\"" + shapes[rng_() % shapes.size()] + "\"]\n";
    }
    const int keys = well_formed ? pick(2) : pick(6);
    for (int i = 0; i < keys; ++i) text += key() + " = " + value() + "\n";
    if (well_formed || chance(2)) text += space_table();
    if (chance(6)) text = mutate(text);
    return text;
  }

  // Command-line arguments added after --config.
  std::vector<std::string> flags() {
    static const std::vector<std::vector<std::string>> pool = {
        {"--shape", "127x127x127"}, {"--shape", "1x7x4097"},   {"--shape", "64x64"},
        {"--shape", "0x5x5"},       {"--layout", "tn"},        {"--layout", "XY"},
        {"--budget", "-1"},         {"--max-trials", "3"},     {"--strategy", "exhaustive"},
        {"--seed", "18446744073709551616"}, {"--device", "1"}, {"--op", "transpose"},
        {"--remeasure"},            {"--no-wait"}};
    std::vector<std::string> out;
    const int n = pick(3);
    for (int i = 0; i < n; ++i) {
      const auto& f = pool[rng_() % pool.size()];
      out.insert(out.end(), f.begin(), f.end());
    }
    return out;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int one_in) { return pick(one_in) == 0; }

  std::string key() {
    static const std::vector<std::string> keys = {
        "device", "op",     "layout", "budget", "max_trials", "strategy", "seed", "db",
        "shapes", "shapes", "shapes", "budgt",  "Device",     "space",    "\"quoted key\""};
    return keys[rng_() % keys.size()];
  }

  std::string integer() {
    static const std::vector<std::string> values = {
        "0", "1", "-1", "7", "64", "128", "4097", "2147483647", "2147483648",
        "-9223372036854775808", "9223372036854775807", "0x10", "1_000"};
    return values[rng_() % values.size()];
  }

  std::string shape() {
    static const std::vector<std::string> parts = {"1", "7", "127", "1000", "4097", "0",
                                                   "-3", "", "2147483647", "99999999999", "a"};
    std::string s;
    const int dims = 1 + pick(4);
    for (int i = 0; i < dims; ++i) s += (i ? "x" : "") + parts[rng_() % parts.size()];
    return s;
  }

  std::string value() {
    switch (pick(10)) {
      case 0:
        return integer();
      case 1: {
        static const std::vector<std::string> floats = {"1.5", "-0.0", "nan", "inf", "-inf",
                                                        "1e308", "3e-5", "60.0"};
        return floats[rng_() % floats.size()];
      }
      case 2: {
        static const std::vector<std::string> strings = {
            "\"gemm\"", "\"transpose\"", "\"NN\"", "\"tt\"", "\"guided\"", "\"\"",
            "\"random\"", "\"/tmp/x.db\"", "\"\\u0000\"", "'literal'"};
        return strings[rng_() % strings.size()];
      }
      case 3:
        return chance(2) ? "true" : "false";
      case 4:
        return "1979-05-27T07:32:00Z";
      case 5:
        return "{ a = 1 }";
      default: {  // an array: shapes mostly, sometimes mixed or nested
        std::string a = "[";
        const int n = pick(4);
        for (int i = 0; i < n; ++i) {
          a += i ? ", " : "";
          a += chance(5) ? integer() : chance(8) ? "[\"1x1x1\"]" : "\"" + shape() + "\"";
        }
        return a + "]";
      }
    }
  }

  std::string space_table() {
    static const std::vector<std::string> names = {
        "BM", "BN", "BK", "WM", "WN", "TM", "TN", "LM", "VEC", "PAD", "AKM", "BKM", "UNROLL",
        "PIPE", "SWZ", "MINB", "PRETB", "SPLITK", "GEMV", "BX", "bm"};
    static const std::vector<int> values = {0,  1,  2,   3,   4,   7,  8,   16,  32,   64,
                                            128, 256, -4, -16, 5, 12, 65535, 100, 1 << 20};
    std::string t = "[space]\n";
    const int n = pick(5);
    std::vector<std::string> used;
    for (int i = 0; i < n; ++i) {
      if (chance(4) == false) {  // mostly: a real parameter narrowed to some of its own values
        const auto& params = gemm_op::parameters();
        const Param& p = params[rng_() % params.size()];
        if (std::find(used.begin(), used.end(), p.name) != used.end()) continue;
        used.push_back(p.name);
        std::string list;
        for (int v : p.values) {
          if (chance(3)) list += (list.empty() ? "" : ", ") + std::to_string(v);
        }
        if (list.empty()) list = std::to_string(p.values[rng_() % p.values.size()]);
        t += p.name + " = [" + list + "]\n";
        continue;
      }
      t += names[rng_() % names.size()] + " = ";
      switch (pick(6)) {
        case 0:
          t += std::to_string(values[rng_() % values.size()]);
          break;
        case 1:
          t += chance(2) ? "[]" : "\"64\"";
          break;
        case 2:
          t += "[1.5, 2]";
          break;
        default: {
          t += "[";
          const int count = 1 + pick(4);
          for (int j = 0; j < count; ++j) {
            t += (j ? ", " : "") + std::to_string(values[rng_() % values.size()]);
          }
          t += "]";
        }
      }
      t += "\n";
    }
    return t;
  }

  std::string mutate(std::string text) {
    const int edits = 1 + pick(4);
    for (int i = 0; i < edits && !text.empty(); ++i) {
      const size_t at = rng_() % text.size();
      switch (pick(3)) {
        case 0:
          text.erase(at, 1);
          break;
        case 1:
          text.insert(at, 1, "[]=\"'{}#\n,x\\"[pick(12)]);
          break;
        default:
          text[at] = static_cast<char>(rng_() % 256);
      }
    }
    return text;
  }

  std::mt19937_64 rng_;
};

class InputFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tuned_fuzz_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  fs::path dir_;
};

tools::ParseResult parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"autotune"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return tools::parse_autotune_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST_F(InputFuzz, EveryInputIsAClearErrorOrValidTasksWhoseConfigsKeepToTheSpace) {
  const uint64_t seed = 20261122;
  Fuzzer fuzz(seed);
  const DeviceInfo h100 = reference_device(90);
  int refused = 0, accepted = 0, empty_spaces = 0, configs_checked = 0;
  std::map<std::string, int> reasons;
  const auto started = std::chrono::steady_clock::now();
  constexpr int kCases = 6000;
  for (int i = 0; i < kCases; ++i) {
    const std::string text = fuzz.document();
    std::vector<std::string> args = {"--config", write("case.toml", text)};
    for (const auto& f : fuzz.flags()) args.push_back(f);
    SCOPED_TRACE("case " + std::to_string(i) + " (seed " + std::to_string(seed) + "):\n" + text);
    tools::ParseResult result;
    try {
      result = parse(args);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "exception escaped the parser: " << e.what();
      continue;
    }
    if (result.exit_now) {
      ++refused;
      EXPECT_EQ(result.exit_code, 2) << result.message;
      EXPECT_EQ(result.message.rfind("autotune: ", 0), 0u) << result.message;
      EXPECT_EQ(result.message.find('\n'), std::string::npos) << result.message;
      const std::string rule = result.message.substr(10, result.message.find(':', 10) - 10);
      ++reasons[rule.substr(0, 40)];
      continue;
    }
    ++accepted;
    const tools::AutotuneOptions& o = result.options;
    const auto shapes = o.shapes.empty() ? default_shapes(o.op) : o.shapes;
    for (const auto& shape : shapes) {
      const TaskRequest request{o.op, shape, o.layout, o.space};
      std::optional<Space> space;
      try {
        space = request_space(request, h100);
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR) << e.what();
        ++empty_spaces;
        continue;
      }
      // First configs from outside the restriction (the op's seeds for the unrestricted
      // problem) must be dropped, as every strategy's own picks must keep to the space.
      const std::vector<Config> first =
          o.op == "gemm"
              ? gemm_op::seed_configs(h100, gemm_op::packed_problem(
                                                o.layout.empty() ? "NN" : o.layout, shape[0],
                                                shape[1], shape[2]))
              : transpose_op::seed_configs(h100, transpose_op::packed_problem(shape[0], shape[1]));
      auto strategy = make_strategy(o.strategy, *space, first, 1 + i);
      for (int draw = 0; draw < 6; ++draw) {
        const auto config = strategy->next();
        if (!config) break;
        ++configs_checked;
        EXPECT_FALSE(space->violation(*config, false).has_value()) << config->canonical();
        for (const auto& [name, allowed] : o.space) {
          EXPECT_NE(std::find(allowed.begin(), allowed.end(), config->get(name)), allowed.end())
              << config->canonical() << " breaks " << name;
        }
        strategy->report(*config, 1.0 + draw);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("input fuzz (seed %llu): %d cases in %.1f s: %d refused, %d accepted (%d restricted "
              "spaces empty on the H100), %d configs checked\n",
              static_cast<unsigned long long>(seed), kCases, seconds, refused, accepted,
              empty_spaces, configs_checked);
  for (const auto& [reason, count] : reasons) std::printf("  %5d  %s\n", count, reason.c_str());
  // The fuzz reaches both outcomes and the strategies.
  EXPECT_GT(refused, kCases / 4);
  EXPECT_GT(accepted, kCases / 20);
  EXPECT_GT(configs_checked, 100);
}

// The binary itself on fuzzed files: exit 2 (input error), 3 (no device here: every GPU hidden)
// or 1 (another run-time error), one message, never a signal.
TEST_F(InputFuzz, AutotuneBinaryNeverDiesOfASignal) {
  const fs::path autotune = fs::read_symlink("/proc/self/exe").parent_path() / ".." / "tools" /
                            "autotune";
  ASSERT_TRUE(fs::exists(autotune)) << autotune;
  Fuzzer fuzz(77);
  int by_code[4] = {0, 0, 0, 0};
  for (int i = 0; i < 150; ++i) {
    const std::string text = fuzz.document();
    const std::string path = write("bin_case.toml", text);
    std::string command = "CUDA_VISIBLE_DEVICES= '" + autotune.string() + "' --config '" + path +
                          "' --db '" + (dir_ / "fuzz.db").string() + "'";
    for (const auto& f : fuzz.flags()) command += " '" + f + "'";
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
    const int status = pclose(pipe);
    SCOPED_TRACE("case " + std::to_string(i) + ":\n" + text + "\n" + command + "\n" + output);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    const int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 1 || code == 2 || code == 3) << "exit " << code;
    if (code >= 0 && code <= 3) ++by_code[code];
    EXPECT_EQ(output.rfind("autotune: ", 0), 0u) << output;
    // An input error never creates the database.
    if (code == 2) EXPECT_FALSE(fs::exists(dir_ / "fuzz.db"));
  }
  std::printf("autotune on 150 fuzzed files: %d exit 2 (input error), %d exit 3 (no device), %d "
              "exit 1 (another failure)\n",
              by_code[2], by_code[3], by_code[1]);
  EXPECT_GT(by_code[2], 0);
  EXPECT_GT(by_code[3], 0);
}

}  // namespace
}  // namespace tuned
