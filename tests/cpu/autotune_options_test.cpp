// autotune's option parsing: shapes, every flag and its errors, the TOML file and its errors, and
// the precedence of the command line over the file.
#include "tools/autotune_options.hpp"
#include "templates/registry.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "tuned/error.hpp"

namespace tuned::tools {
namespace {

// gmock is not linked, so no HasSubstr: this says what was searched and in what.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not in: " << text;
}

using Shape = std::vector<int64_t>;

// Runs the parser on "autotune <args...>".
ParseResult parse(std::initializer_list<std::string> args) {
  std::vector<std::string> storage = {"autotune"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& arg : storage) argv.push_back(arg.c_str());
  return parse_autotune_command_line(static_cast<int>(argv.size()), argv.data());
}

// Expects a usage error (exit 2) whose message contains every one of `parts`.
void expect_usage_error(std::initializer_list<std::string> args,
                        std::initializer_list<std::string> parts) {
  ParseResult result = parse(args);
  EXPECT_TRUE(result.exit_now);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.message.find('\n'), std::string::npos) << result.message;
  for (const std::string& part : parts) EXPECT_TRUE(contains(result.message, part));
}

// Expects parse_shape to reject `text` with a message naming the text and the rule.
void expect_bad_shape(const std::string& text, const std::string& why) {
  try {
    parse_shape(text);
    ADD_FAILURE() << "'" << text << "' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "'" + text + "'"));
    EXPECT_TRUE(contains(e.what(), why));
    EXPECT_TRUE(contains(e.what(), "1 to 4 integers"));
  }
}

// ---------------------------------------------------------------------------------------------

TEST(ParseShapeTest, AcceptsOneToFourDimensions) {
  EXPECT_EQ(parse_shape("4096x4096x4096"), (Shape{4096, 4096, 4096}));
  EXPECT_EQ(parse_shape("32x4096x7"), (Shape{32, 4096, 7}));
  EXPECT_EQ(parse_shape("16384x16384"), (Shape{16384, 16384}));
  EXPECT_EQ(parse_shape("4096"), (Shape{4096}));  // a rank-1 op's; gemm refuses it (below)
  EXPECT_EQ(parse_shape("64x64x2x16"), (Shape{64, 64, 2, 16}));
  EXPECT_EQ(parse_shape("1x1x1"), (Shape{1, 1, 1}));
  EXPECT_EQ(parse_shape("2147483647x1x2147483647"), (Shape{2147483647, 1, 2147483647}));
}

TEST(ParseShapeTest, LeavesZeroToTheOpsRanges) {
  EXPECT_EQ(parse_shape("4096x0x4096"), (Shape{4096, 0, 4096}));
  EXPECT_EQ(parse_shape("64x64x0x16"), (Shape{64, 64, 0, 16}));
  TaskRequest gemm{"gemm", {4096, 0, 4096}, "", {}};
  try {
    validate_request(gemm);
    ADD_FAILURE() << "a gemm N of 0 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "N must be in 1..")) << e.what();
  }
  validate_request(TaskRequest{"entropy", {64, 64, 0, 16}, "", {}});  // radius 0 is a window of 1
  try {
    validate_request(TaskRequest{"gemm", {4096}, "", {}});
    ADD_FAILURE() << "a gemm of one dimension was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "gemm shape: needs MxNxK[xBATCH] (3 to 4 sizes), got 1")) << e.what();
  }
}

TEST(ParseShapeTest, RejectsNegative) { expect_bad_shape("-4096x4096x4096", "not a number"); }

TEST(ParseShapeTest, RejectsMissingSeparator) {
  expect_bad_shape("4096x4096x4096x1x1", "5 dimensions");
  expect_bad_shape("4096*4096*4096", "not a number");
  expect_bad_shape("4096X4096X4096", "not a number");
  expect_bad_shape("4096xx4096", "dimension 2 is empty");
  expect_bad_shape("4096x4096x", "dimension 3 is empty");
  expect_bad_shape("", "dimension 1 is empty");
}

TEST(ParseShapeTest, RejectsGarbage) {
  expect_bad_shape("abc", "not a number");
  expect_bad_shape("12ax34", "not a number");
  expect_bad_shape(" 64x64", "not a number");
  expect_bad_shape("1.5x2x3", "not a number");
}

TEST(ParseShapeTest, RejectsFiveDimensions) { expect_bad_shape("1x2x3x4x5", "5 dimensions"); }

TEST(ParseShapeTest, RejectsOverflow) {
  expect_bad_shape("2147483648x1x1", "larger than 2147483647");
  expect_bad_shape("1x99999999999999999999999x1", "larger than 2147483647");
}

// ---------------------------------------------------------------------------------------------

TEST(AutotuneOptionsTest, DefaultsWithNoArguments) {
  ParseResult result = parse({});
  ASSERT_FALSE(result.exit_now) << result.message;
  const AutotuneOptions& o = result.options;
  EXPECT_EQ(o.device, 0);
  EXPECT_EQ(o.op, "gemm");
  EXPECT_TRUE(o.shapes.empty());
  EXPECT_EQ(o.layout, "");  // the op's first variant
  EXPECT_EQ(o.budget_s, 0);
  EXPECT_EQ(o.max_trials, 0);
  EXPECT_EQ(o.strategy, "anneal");
  EXPECT_EQ(o.db_path, "");
  EXPECT_EQ(o.config_file, "");
  EXPECT_EQ(o.seed, 0u);
  EXPECT_FALSE(o.verbose);
  EXPECT_FALSE(o.flush_l2);
  EXPECT_TRUE(o.space.empty());
}

TEST(AutotuneOptionsTest, EveryFlag) {
  // clang-format off
  ParseResult result =
      parse({"--device", "3", "--op", "gemm", "--shape", "1024x2048x512", "--shape", "64x64x8",
             "--layout", "tn", "--budget", "12.5", "--max-trials", "40", "--strategy",
             "exhaustive", "--db", "/tmp/x.db", "--seed", "18446744073709551615", "--verbose",
             "--patience", "25", "--flush-l2"});
  // clang-format on
  ASSERT_FALSE(result.exit_now) << result.message;
  const AutotuneOptions& o = result.options;
  EXPECT_EQ(o.device, 3);
  EXPECT_EQ(o.op, "gemm");
  EXPECT_EQ(o.shapes, (std::vector<Shape>{{1024, 2048, 512}, {64, 64, 8}}));
  EXPECT_EQ(o.layout, "TN");
  EXPECT_DOUBLE_EQ(o.budget_s, 12.5);
  EXPECT_EQ(o.max_trials, 40);
  EXPECT_EQ(o.patience, 25);
  EXPECT_EQ(o.strategy, "exhaustive");
  EXPECT_EQ(o.db_path, "/tmp/x.db");
  EXPECT_EQ(o.seed, 18446744073709551615ull);
  EXPECT_TRUE(o.verbose);
  EXPECT_TRUE(o.flush_l2);
}

TEST(AutotuneOptionsTest, EqualsSyntaxShortVerboseAndCommaSeparatedShapes) {
  ParseResult result = parse({"--device=1", "-v", "--shape=8x8x8,16x16x16", "--budget=300"});
  ASSERT_FALSE(result.exit_now) << result.message;
  EXPECT_EQ(result.options.device, 1);
  EXPECT_TRUE(result.options.verbose);
  EXPECT_EQ(result.options.shapes, (std::vector<Shape>{{8, 8, 8}, {16, 16, 16}}));
  EXPECT_DOUBLE_EQ(result.options.budget_s, 300);
}

TEST(AutotuneOptionsTest, AcceptsEveryOpName) {
  for (const std::string& op : tuned::op_names()) {
    ParseResult result = parse({"--op", op});
    ASSERT_FALSE(result.exit_now) << result.message;
    EXPECT_EQ(result.options.op, op);
  }
}

TEST(AutotuneOptionsTest, LayoutIsCaseInsensitiveAndStoredInTheOpsSpelling) {
  for (const auto& [given, stored] : std::vector<std::pair<std::string, std::string>>{
           {"NN", "NN"}, {"nt", "NT"}, {"Tn", "TN"}, {"tT", "TT"}, {"U8", "u8"}, {"F32", "f32"}}) {
    const bool entropy = stored == "u8" || stored == "f32";
    ParseResult result = entropy ? parse({"--op", "entropy", "--layout", given})
                                 : parse({"--layout", given});
    ASSERT_FALSE(result.exit_now) << result.message;
    EXPECT_EQ(result.options.layout, stored);
  }
}

TEST(AutotuneOptionsTest, LastValueOfARepeatedFlagWins) {
  ParseResult result = parse({"--device", "1", "--device", "2"});
  ASSERT_FALSE(result.exit_now) << result.message;
  EXPECT_EQ(result.options.device, 2);
}

TEST(AutotuneOptionsTest, HelpExitsZeroWithTheFlags) {
  for (const std::string flag : {"--help", "-h"}) {
    ParseResult result = parse({flag});
    EXPECT_TRUE(result.exit_now);
    EXPECT_EQ(result.exit_code, 0);
    for (const char* name : {"--device", "--op", "--shape", "--layout", "--budget", "--max-trials",
                             "--strategy", "--db", "--config", "--seed", "--verbose"}) {
      EXPECT_TRUE(contains(result.message, name));
    }
  }
}

TEST(AutotuneOptionsTest, DeviceTakesAllOrAListOfDistinctIndices) {
  ParseResult all = parse({"--device", "all"});
  ASSERT_FALSE(all.exit_now) << all.message;
  EXPECT_TRUE(all.options.all_devices);
  EXPECT_TRUE(all.options.devices.empty());
  EXPECT_TRUE(several_devices(all.options));
  EXPECT_EQ(device_text(all.options), "all");

  ParseResult list = parse({"--device=0,1,3"});
  ASSERT_FALSE(list.exit_now) << list.message;
  EXPECT_FALSE(list.options.all_devices);
  EXPECT_EQ(list.options.devices, (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(several_devices(list.options));
  EXPECT_EQ(device_text(list.options), "0,1,3");
  ParseResult unordered = parse({"--device", "2,0"});
  ASSERT_FALSE(unordered.exit_now) << unordered.message;
  EXPECT_EQ(unordered.options.devices, (std::vector<int>{2, 0}));  // the order given

  // --device N stays one device; the last --device wins, whatever its form.
  ParseResult one = parse({"--device", "all", "--device", "1"});
  ASSERT_FALSE(one.exit_now) << one.message;
  EXPECT_FALSE(several_devices(one.options));
  EXPECT_EQ(one.options.device, 1);
  EXPECT_EQ(device_text(one.options), "1");
  ParseResult back = parse({"--device", "1", "--device", "0,1"});
  ASSERT_FALSE(back.exit_now) << back.message;
  EXPECT_EQ(back.options.devices, (std::vector<int>{0, 1}));
}

TEST(AutotuneOptionsTest, MalformedDeviceListsAreUsageErrorsNamingTheRule) {
  for (const std::string bad :
       {"0,", ",1", "0,,1", "0,x", "0,-1", "all,1", "ALL", "0;1", "", "1.5", "0, 1"}) {
    SCOPED_TRACE(bad);
    expect_usage_error({"--device", bad},
                       {"--device", "comma-separated list", "or all", "'" + bad + "'"});
  }
  expect_usage_error({"--device", "1,0,1"}, {"--device", "device 1 is listed twice", "'1,0,1'"});
}

TEST(AutotuneOptionsTest, SelectedDevicesAreCheckedAgainstTheMachine) {
  AutotuneOptions o;
  o.device = 5;  // --device N: the device query's to refuse, as ever
  EXPECT_EQ(selected_devices(o, 2), (std::vector<int>{5}));
  o.all_devices = true;
  EXPECT_EQ(selected_devices(o, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(selected_devices(o, 1), (std::vector<int>{0}));
  o.all_devices = false;
  o.devices = {1, 0};
  EXPECT_EQ(selected_devices(o, 2), (std::vector<int>{1, 0}));
  o.devices = {0, 1, 3};
  try {
    selected_devices(o, 2);
    ADD_FAILURE() << "device 3 of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "--device 0,1,3: device 3 is not on this machine"));
    EXPECT_TRUE(contains(e.what(), "below 2"));
  }
}

TEST(AutotuneOptionsTest, WorkEstimateIsTheProductOfTheSizes) {
  EXPECT_DOUBLE_EQ(estimated_work({"gemm", "NN", {4096, 2048, 512}, 0}), 4096.0 * 2048 * 512);
  EXPECT_DOUBLE_EQ(estimated_work({"transpose", "", {300, 200}, 0}), 60000.0);
  // A radius and a level count are no sizes.
  EXPECT_DOUBLE_EQ(estimated_work({"entropy", "", {100, 200, 2, 16}, 0}), 20000.0);
}

TEST(AutotuneOptionsTest, HelpWinsOverABadValue) {
  ParseResult result = parse({"--device", "-1", "--help"});
  EXPECT_TRUE(result.exit_now);
  EXPECT_EQ(result.exit_code, 0);
}

TEST(AutotuneOptionsTest, BadDevice) {
  expect_usage_error({"--device", "-1"}, {"--device", ">= 0", "'-1'"});
  expect_usage_error({"--device=-1"}, {"--device", ">= 0", "'-1'"});
  expect_usage_error({"--device", "abc"}, {"--device", "integer >= 0", "'abc'"});
  expect_usage_error({"--device", "1.5"}, {"--device", "integer >= 0"});
  expect_usage_error({"--device", "99999999999"}, {"--device", "integer >= 0"});
  expect_usage_error({"--device"}, {"--device"});  // no value
}

TEST(AutotuneOptionsTest, BadOpListsTheValidOnes) {
  expect_usage_error({"--op", "conv"}, {"--op", "must be one of gemm", "'conv'"});
}

TEST(AutotuneOptionsTest, BadShape) {
  // A zero size is the op's range rule, named with the dimension.
  expect_usage_error({"--shape", "4096x0x4096"}, {"gemm shape", "N must be in 1..", "got 0"});
  expect_usage_error({"--shape", "64x64", "--shape", "abc"}, {"--shape", "'abc'"});
}

TEST(AutotuneOptionsTest, BadLayout) {
  expect_usage_error({"--layout", "NX"}, {"--layout", "NN, NT, TN, TT", "'NX'"});
  expect_usage_error({"--layout", ""}, {"--layout", "NN, NT, TN, TT"});
}

TEST(AutotuneOptionsTest, BadStrategy) {
  expect_usage_error({"--strategy", "grid"}, {"--strategy", "exhaustive, random, guided", "'grid'"});
}

TEST(AutotuneOptionsTest, BadBudget) {
  expect_usage_error({"--budget", "-5"}, {"--budget", "> 0", "'-5'"});
  expect_usage_error({"--budget", "0"}, {"--budget", "> 0", "'0'"});
  expect_usage_error({"--budget", "0.0"}, {"--budget", "> 0"});
  expect_usage_error({"--budget", "ten"}, {"--budget", "'ten'"});
  expect_usage_error({"--budget", "inf"}, {"--budget", "'inf'"});
  expect_usage_error({"--budget", "nan"}, {"--budget", "'nan'"});
}

TEST(AutotuneOptionsTest, BadMaxTrials) {
  expect_usage_error({"--max-trials", "0"}, {"--max-trials", ">= 1", "'0'"});
  expect_usage_error({"--max-trials", "x"}, {"--max-trials", ">= 1", "'x'"});
  expect_usage_error({"--patience", "0"}, {"--patience", ">= 1", "'0'"});
}

TEST(AutotuneOptionsTest, BadSeedAndEmptyPaths) {
  expect_usage_error({"--seed", "-1"}, {"--seed", ">= 0", "'-1'"});
  expect_usage_error({"--seed", "18446744073709551616"}, {"--seed", ">= 0"});
  expect_usage_error({"--db", ""}, {"--db", "empty"});
  expect_usage_error({"--config", ""}, {"--config", "empty"});
}

TEST(AutotuneOptionsTest, UnknownFlagAndStrayArgument) {
  expect_usage_error({"--devcie", "0"},
                     {"autotune:", "unknown option '--devcie'", "did you mean '--device'"});
  expect_usage_error({"--max_trials=3"}, {"'--max_trials'", "did you mean '--max-trials'"});
  expect_usage_error({"-x"}, {"autotune:", "unknown option '-x'"});
  expect_usage_error({"--device", "1", "gemm"}, {"autotune:", "unexpected argument 'gemm'"});
}

// ---------------------------------------------------------------------------------------------

// Each test gets its own temporary directory for its TOML files.
class TomlConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "tuned_toml_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Expects apply_toml_file to fail with CONFIG_ERROR and a message containing every part.
  void expect_config_error(const std::string& text, std::initializer_list<std::string> parts) {
    std::string path = write("bad.toml", text);
    AutotuneOptions options;
    try {
      apply_toml_file(path, options);
      ADD_FAILURE() << "accepted:\n" << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
      EXPECT_TRUE(contains(e.what(), path));
      for (const std::string& part : parts) EXPECT_TRUE(contains(e.what(), part));
    }
  }

  std::filesystem::path dir_;
};

TEST_F(TomlConfigTest, FullValidFile) {
  std::string path = write("full.toml", R"(# every key
device = 2
op = "gemm"
shapes = ["4096x4096x4096", "32x4096x4096", "16384x16384"]
layout = "nt"
budget = 300
max_trials = 50
strategy = "exhaustive"
seed = 42
db = "/tmp/tuned.db"

[space]
BM = [64, 128]
BN = [128]
VEC = 4
)");
  AutotuneOptions o;
  apply_toml_file(path, o);
  EXPECT_EQ(o.device, 2);
  EXPECT_EQ(o.op, "gemm");
  EXPECT_EQ(o.shapes, (std::vector<Shape>{{4096, 4096, 4096}, {32, 4096, 4096}, {16384, 16384}}));
  EXPECT_EQ(o.layout, "NT");
  EXPECT_DOUBLE_EQ(o.budget_s, 300);
  EXPECT_EQ(o.max_trials, 50);
  EXPECT_EQ(o.strategy, "exhaustive");
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.db_path, "/tmp/tuned.db");
  EXPECT_EQ(o.space, (std::map<std::string, std::vector<int>>{
                         {"BM", {64, 128}}, {"BN", {128}}, {"VEC", {4}}}));
}

TEST_F(TomlConfigTest, EmptyFileChangesNothing) {
  AutotuneOptions o;
  o.device = 5;
  apply_toml_file(write("empty.toml", ""), o);
  EXPECT_EQ(o.device, 5);
  EXPECT_EQ(o.op, "gemm");
}

TEST_F(TomlConfigTest, FractionalBudget) {
  AutotuneOptions o;
  apply_toml_file(write("b.toml", "budget = 2.5\n"), o);
  EXPECT_DOUBLE_EQ(o.budget_s, 2.5);
}

TEST_F(TomlConfigTest, SyntaxErrorNamesFileLineAndColumn) {
  expect_config_error("layout = \"NN\"\nbudget = 300\nshapes = [\"64x64x64\"\nseed = 1\n",
                      {"line 4", "column", "TOML syntax error"});
  expect_config_error("budget = = 3\n", {"line 1", "column", "TOML syntax error"});
}

TEST_F(TomlConfigTest, UnknownKeyIsNamedWithTheValidOnes) {
  expect_config_error(
      "layout = \"NN\"\nbudgt = 300\n",
      {"line 2", "unknown key 'budgt'", "did you mean 'budget'",
       "budget, db, device, layout, max_trials, op, seed, shapes, space, strategy"});
  expect_config_error("[tuning]\nBM = [64]\n", {"unknown key 'tuning'"});
  expect_config_error("verbose = true\n", {"unknown key 'verbose'"});
}

TEST_F(TomlConfigTest, WrongTypeNamesKeyAndExpectedType) {
  expect_config_error("budget = \"300\"\n", {"line 1", "key 'budget'", "number", "got string"});
  expect_config_error("device = 1.0\n", {"key 'device'", "an integer", "got float"});
  expect_config_error("layout = 1\n", {"key 'layout'", "a string", "got integer"});
  expect_config_error("shapes = \"64x64x64\"\n", {"key 'shapes'", "array of strings"});
  expect_config_error("shapes = [64]\n", {"key 'shapes[0]'", "a string", "got integer"});
  expect_config_error("max_trials = true\n", {"key 'max_trials'", "an integer", "got boolean"});
  expect_config_error("space = 3\n", {"key 'space'", "a table", "got integer"});
  expect_config_error("seed = \"1\"\n", {"key 'seed'", "an integer"});
  expect_config_error("db = 1\n", {"key 'db'", "a string"});
  expect_config_error("strategy = [\"random\"]\n", {"key 'strategy'", "a string", "got array"});
}

TEST_F(TomlConfigTest, BadValuesUseTheCommandLineRules) {
  expect_config_error("device = -1\n", {"line 1", "key 'device'", ">= 0", "'-1'"});
  expect_config_error("budget = 0\n", {"key 'budget'", "> 0"});
  expect_config_error("budget = -2.5\n", {"key 'budget'", "> 0", "'-2.5'"});
  expect_config_error("max_trials = 0\n", {"key 'max_trials'", ">= 1"});
  expect_config_error("seed = -3\n", {"key 'seed'", ">= 0"});
  expect_config_error("op = \"conv\"\n", {"key 'op'", "must be one of gemm"});
  expect_config_error("layout = \"XX\"\n", {"key 'layout'", "NN, NT, TN, TT"});
  expect_config_error("strategy = \"grid\"\n", {"key 'strategy'", "exhaustive, random, guided"});
  expect_config_error("db = \"\"\n", {"key 'db'", "empty"});
  expect_config_error("shapes = [\"64x64x64\", \"64x-1\"]\n",
                      {"line 1", "key 'shapes[1]'", "'64x-1'", "not a number"});
}

TEST_F(TomlConfigTest, DeviceTakesAnIndexAllAListOrAnArray) {
  AutotuneOptions o;
  apply_toml_file(write("all.toml", "device = \"all\"\n"), o);
  EXPECT_TRUE(o.all_devices);
  EXPECT_TRUE(contains(o.device_argument, "all.toml"));
  apply_toml_file(write("list.toml", "device = \"0,2\"\n"), o);
  EXPECT_FALSE(o.all_devices);
  EXPECT_EQ(o.devices, (std::vector<int>{0, 2}));
  apply_toml_file(write("array.toml", "device = [1, 0]\n"), o);
  EXPECT_EQ(o.devices, (std::vector<int>{1, 0}));
  apply_toml_file(write("one.toml", "device = [3]\n"), o);  // a list of one: that device
  EXPECT_FALSE(several_devices(o));
  EXPECT_EQ(o.device, 3);
  apply_toml_file(write("index.toml", "device = 2\n"), o);
  EXPECT_FALSE(several_devices(o));
  EXPECT_EQ(o.device, 2);

  // The file's list, out of range on this machine, is named as the file's.
  apply_toml_file(write("far.toml", "device = [0, 4]\n"), o);
  try {
    selected_devices(o, 2);
    ADD_FAILURE() << "device 4 of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "key 'device' of config file"));
    EXPECT_TRUE(contains(e.what(), "far.toml"));
    EXPECT_TRUE(contains(e.what(), "device 4 is not on this machine"));
  }
  // The command line replaces the file's list.
  ParseResult cli = parse({"--config", write("cfg2.toml", "device = [0, 1]\n"), "--device", "1"});
  ASSERT_FALSE(cli.exit_now) << cli.message;
  EXPECT_FALSE(several_devices(cli.options));
  EXPECT_EQ(cli.options.device, 1);
  EXPECT_EQ(cli.options.device_argument, "--device");
}

TEST_F(TomlConfigTest, DeviceListErrors) {
  expect_config_error("device = []\n", {"line 1", "key 'device'", "lists no devices"});
  expect_config_error("device = [0, \"1\"]\n", {"key 'device'", "an integer", "got string"});
  expect_config_error("device = [0, 0]\n", {"key 'device'", "device 0 is listed twice"});
  expect_config_error("device = [0, -1]\n", {"key 'device'", "comma-separated list", "'0,-1'"});
  expect_config_error("device = \"0,,1\"\n", {"key 'device'", "comma-separated list"});
  expect_config_error("device = true\n", {"key 'device'", "\"all\"", "got boolean"});
}

TEST_F(TomlConfigTest, SpaceTable) {
  AutotuneOptions o;
  o.space = {{"OLD", {1}}};  // the file's table replaces what was there
  apply_toml_file(write("space.toml", "[space]\nBK = [8, 16, 32]\nTM = 8\nSPLIT_K = [1]\n"), o);
  EXPECT_EQ(o.space, (std::map<std::string, std::vector<int>>{
                         {"BK", {8, 16, 32}}, {"SPLIT_K", {1}}, {"TM", {8}}}));

  AutotuneOptions inline_table;
  apply_toml_file(write("inline.toml", "space = { BM = [128] }\n"), inline_table);
  EXPECT_EQ(inline_table.space, (std::map<std::string, std::vector<int>>{{"BM", {128}}}));
}

TEST_F(TomlConfigTest, SpaceTableErrors) {
  expect_config_error(
      "[space]\nBM = [64, \"128\"]\n",
      {"line 2", "key 'space.BM'", "an integer or an array of integers", "got string"});
  expect_config_error("[space]\nBM = 64.0\n", {"key 'space.BM'", "got float"});
  expect_config_error("[space]\nBM = []\n", {"key 'space.BM'", "no values"});
  expect_config_error("[space]\nBM = [[64]]\n", {"key 'space.BM'", "got array"});
  expect_config_error("[space.BM]\nx = 1\n", {"key 'space.BM'", "got table"});
  expect_config_error("[space]\nBM = 4294967296\n", {"key 'space.BM'", "32-bit"});
}

TEST_F(TomlConfigTest, MissingFileNamesThePath) {
  std::string path = (dir_ / "nope.toml").string();
  AutotuneOptions o;
  try {
    apply_toml_file(path, o);
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
    EXPECT_TRUE(contains(e.what(), "'" + path + "'"));
    EXPECT_TRUE(contains(e.what(), "no such file"));
  }
  try {
    apply_toml_file(dir_.string(), o);
    ADD_FAILURE() << "a directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_CONFIG_ERROR);
    EXPECT_TRUE(contains(e.what(), "directory"));
  }
}

TEST_F(TomlConfigTest, ErrorLeavesOptionsUnchanged) {
  AutotuneOptions o;
  EXPECT_THROW(apply_toml_file(write("half.toml", "device = 3\nlayout = \"XX\"\n"), o), Error);
  EXPECT_EQ(o.device, 0);
}

TEST_F(TomlConfigTest, CommandLineOverridesTheFile) {
  std::string path = write("cfg.toml", R"(device = 2
op = "gemm"
shapes = ["128x128x128"]
layout = "TT"
budget = 300
max_trials = 50
strategy = "exhaustive"
seed = 7
db = "/from/toml.db"
[space]
BM = [64]
)");
  // Only the file: its values over the defaults.
  ParseResult from_file = parse({"--config", path});
  ASSERT_FALSE(from_file.exit_now) << from_file.message;
  EXPECT_EQ(from_file.options.config_file, path);
  EXPECT_EQ(from_file.options.device, 2);
  EXPECT_EQ(from_file.options.op, "gemm");
  EXPECT_EQ(from_file.options.shapes, (std::vector<Shape>{{128, 128, 128}}));
  EXPECT_EQ(from_file.options.strategy, "exhaustive");
  EXPECT_EQ(from_file.options.space.at("BM"), (std::vector<int>{64}));

  // Every flag given: the command line wins, wherever it stands relative to --config.
  // clang-format off
  ParseResult both = parse({"--device", "0", "--op", "gemm", "--shape", "64x64x64", "--layout",
                            "nn", "--budget", "10", "--max-trials", "5", "--strategy", "random",
                            "--seed", "9", "--db", "/from/cli.db", "--config", path});
  // clang-format on
  ASSERT_FALSE(both.exit_now) << both.message;
  const AutotuneOptions& o = both.options;
  EXPECT_EQ(o.device, 0);
  EXPECT_EQ(o.op, "gemm");
  EXPECT_EQ(o.shapes, (std::vector<Shape>{{64, 64, 64}}));  // replaced, not appended
  EXPECT_EQ(o.layout, "NN");
  EXPECT_DOUBLE_EQ(o.budget_s, 10);
  EXPECT_EQ(o.max_trials, 5);
  EXPECT_EQ(o.strategy, "random");
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.db_path, "/from/cli.db");
  EXPECT_EQ(o.space.at("BM"), (std::vector<int>{64}));  // only the file sets the space

  // One flag given: only that one overrides.
  ParseResult one = parse({"--config", path, "--layout", "NT"});
  ASSERT_FALSE(one.exit_now) << one.message;
  EXPECT_EQ(one.options.layout, "NT");
  EXPECT_EQ(one.options.device, 2);
  EXPECT_DOUBLE_EQ(one.options.budget_s, 300);
}

TEST_F(TomlConfigTest, FileErrorsComeBackAsUsageErrors) {
  std::string bad = write("bad.toml", "budget = 300\nlayout = \n");
  ParseResult syntax = parse({"--config", bad});
  EXPECT_TRUE(syntax.exit_now);
  EXPECT_EQ(syntax.exit_code, 2);
  EXPECT_TRUE(contains(syntax.message, bad));
  EXPECT_TRUE(contains(syntax.message, "line 2"));

  ParseResult missing = parse({"--config", (dir_ / "missing.toml").string()});
  EXPECT_TRUE(missing.exit_now);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.message, "missing.toml"));
}


// Everything the run would be refused for is found while parsing, before a device or database is
// touched: a shape of the wrong rank or size for the op, [space] values the op's parameters cannot
// take, an empty shape list.
TEST_F(TomlConfigTest, TaskErrorsAreFoundBeforeTheDevice) {
  expect_usage_error({"--shape", "64x64"}, {"gemm shape", "MxNxK", "got 2"});
  expect_usage_error({"--shape", "2147483647x1x1"}, {"gemm shape", "M must be in 1..2147482624"});
  const std::string zero = write("zero.toml", "[space]\nWM = [0, 32]\n");
  expect_usage_error({"--config", zero}, {"space: WM = 0 is not a value WM can take"});
  const std::string odd = write("odd.toml", "[space]\nBM = 7\n");
  expect_usage_error({"--config", odd}, {"BM = 7", "(16, 32, 64, 128, 256)"});
  const std::string pad = write("pad.toml", "[space]\nPAD = [-4]\n");
  expect_usage_error({"--config", pad}, {"PAD = -4"});
  const std::string twice = write("twice.toml", "[space]\nBK = [8, 8]\n");
  expect_usage_error({"--config", twice}, {"BK lists 8 twice"});
  const std::string unknown = write("unknown.toml", "[space]\nBX = [8]\n");
  expect_usage_error({"--config", unknown}, {"unknown parameter 'BX'", "BM"});
  expect_config_error("shapes = []\n", {"key 'shapes' lists no shapes"});
  // A good restriction passes.
  const std::string good = write("good.toml", "[space]\nBM = [64]\nBN = [64, 128]\n");
  ParseResult ok = parse({"--config", good, "--shape", "127x127x127"});
  EXPECT_FALSE(ok.exit_now) << ok.message;
}

// --shapes-from FILE replaces --op x --shape x --layout with the file's problems, --op and --layout
// filling in what a line omits; it cannot be combined with --shape, and its errors are usage
// errors.
TEST_F(TomlConfigTest, ShapesFromReplacesTheShapesAndItsErrorsAreUsageErrors) {
  const std::string file = write("shapes.txt", "gemm NN 4096x1024x512 align 4\n64x64x64\n");
  ParseResult ok = parse({"--shapes-from", file, "--layout", "tn", "--json", "out.json"});
  ASSERT_FALSE(ok.exit_now) << ok.message;
  EXPECT_EQ(ok.options.json_path, "out.json");
  const std::vector<ShapeRequest> expected = {{"gemm", "NN", {4096, 1024, 512}, 4},
                                              {"gemm", "TN", {64, 64, 64}, 0}};
  EXPECT_EQ(shape_requests(ok.options), expected);
  // Without a file, the op's shapes in the layout.
  ParseResult plain = parse({"--shape", "8x8x8,16x16x16", "--layout", "NT"});
  EXPECT_EQ(
      shape_requests(plain.options),
      (std::vector<ShapeRequest>{{"gemm", "NT", {8, 8, 8}, 0}, {"gemm", "NT", {16, 16, 16}, 0}}));
  expect_usage_error({"--shapes-from", file, "--shape", "8x8x8"}, {"--shapes-from", "--shape"});
  expect_usage_error({"--shapes-from", ""}, {"--shapes-from", "must not be empty"});
  expect_usage_error({"--json", ""}, {"--json", "must not be empty"});
  const std::string bad = write("bad.txt", "gemm NN 8x8x8\ngemm NN 8x8\n");
  expect_usage_error({"--shapes-from", bad}, {bad + ":2:", "gemm shape"});
  expect_usage_error({"--shapes-from", "/nonexistent/shapes.txt"},
                     {"cannot read shapes file", "no such file"});
  // [space] restricts the problems of --op only: a transpose line is not refused for BM.
  const std::string space = write("space.toml", "[space]\nBM = [64]\n");
  const std::string mixed = write("mixed.txt", "gemm NN 64x64x64\ntranspose 33x4097\n");
  ParseResult restricted = parse({"--config", space, "--shapes-from", mixed});
  ASSERT_FALSE(restricted.exit_now) << restricted.message;
  const auto problems = shape_requests(restricted.options);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(task_request(restricted.options, problems[0]).space.size(), 1u);
  EXPECT_TRUE(task_request(restricted.options, problems[1]).space.empty());
}

// The queue's modes (issue 66): each needs a store, takes only its own options, and is parsed
// without touching the store.
TEST(AutotuneQueueOptions, ModesNeedAStoreAndTakeOnlyTheirOptions) {
  const std::string url = "host=/nowhere dbname=tuning";
  expect_usage_error({"--worker"}, {"--worker", "needs --store"});
  expect_usage_error({"--store", url}, {"--store", "--enqueue, --worker or --status"});
  expect_usage_error({"--worker", "--status", "--store", url}, {"--worker"});
  expect_usage_error({"--worker", "--store", url, "--shape", "64x64x64"},
                     {"--shape", "not with --worker"});
  expect_usage_error({"--status", "--store", url, "--budget", "10"}, {"--budget", "--status"});
  expect_usage_error({"--enqueue", "--store", url, "--json", "x.json"}, {"--json", "--enqueue"});
  expect_usage_error({"--enqueue", "--store", url, "--lease", "30"}, {"--lease", "only with"});
  expect_usage_error({"--worker", "--store", url, "--lease", "1"}, {"--lease", "2 to 86400"});
  expect_usage_error({"--worker", "--store", url, "--device-model", "NVIDIA H100"},
                     {"--device-model", "only with --enqueue"});
  expect_usage_error({"--replay-pace", "5"}, {"--replay-pace", "only with --replay"});
  expect_usage_error({"--replay", "x", "--replay-gpus", "0"}, {"--replay-gpus", "1 to 64"});

  ParseResult worker = parse({"--worker", "--store", url, "--device", "all", "--lease", "30",
                              "--wait", "--node", "n1"});
  ASSERT_FALSE(worker.exit_now) << worker.message;
  EXPECT_EQ(worker.options.queue_mode, AutotuneOptions::QueueMode::kWorker);
  EXPECT_EQ(worker.options.store_url, url);
  EXPECT_EQ(worker.options.lease_s, 30);
  EXPECT_TRUE(worker.options.wait);
  EXPECT_EQ(worker.options.node, "n1");
  ParseResult enqueue = parse({"--enqueue", "--store", url, "--shape", "64x64x64", "--budget",
                               "30", "--device-model", "NVIDIA H100 80GB HBM3"});
  ASSERT_FALSE(enqueue.exit_now) << enqueue.message;
  EXPECT_EQ(enqueue.options.device_models, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
}

}  // namespace
}  // namespace tuned::tools
