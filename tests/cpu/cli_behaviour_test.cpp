// The tools as a user meets them (issue 70): distinct exit codes (usage 2, runtime or database 1,
// no CUDA device or driver 3) said in --help; "unknown command" naming the commands; numeric
// options refused in one short line naming the option and the rule; `tunedb info`; configs
// abbreviated in tables unless --wide; autotune's result table with a header per column and its
// progress quiet where stderr is no terminal. Runs the built programs; no GPU needed (a run
// replays a recorded space).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "cache/records.hpp"
#include "tests/common/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using tuned::cache::BestRecord;
using tuned::cache::Database;
using tuned::cache::Disposition;
using tuned::cache::ProblemKey;
using tuned::cache::TrialRecord;
using tuned::testing::TempDir;

fs::path tool(const std::string& name) {
  return fs::canonical("/proc/self/exe").parent_path() / ".." / "tools" / name;
}

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

// The tool with arguments (shell words) and environment settings ("NAME=value ..."); stdout and
// stderr apart, neither a terminal.
Outcome run(const TempDir& dir, const std::string& name, const std::string& arguments,
        const std::string& environment = "") {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string command = environment + " '" + tool(name).string() + "' " + arguments + " >'" +
                              out + "' 2>'" + err + "' </dev/null";
  const int status = std::system(command.c_str());
  Outcome r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = tuned::testing::slurp(out);
  r.err = tuned::testing::slurp(err);
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

const char* kUuid = "GPU-11111111-2222-3333-4444-555555555555";
// A config as long as the gemm space's (~190 columns).
const std::string kLongConfig =
    "GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8,"
    "PIPE=4,SWZ=16,MINB=1,PRETB=0,SPLITK=1,PACK=1,REDUCE=0,TAIL=1,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1,"
    "AHEAD=0";

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"autotune", "tunedb"}) {
      ASSERT_TRUE(fs::exists(tool(name))) << tool(name) << " was not built";
    }
    db_ = dir_.file("tuned.db");
  }

  // A device, a session with two trials (one of the long config) and two bests.
  void fill() {
    Database db(db_);
    db.upsert_device({kUuid, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984, 1'980'000});
    const int64_t session = db.begin_session({0, kUuid, "gemm", "guided", 30, ""}).id;
    ProblemKey key;
    key.device_uuid = kUuid;
    key.op = "gemm";
    key.variant = "NN";
    key.shape = {4096, 4096, 4096};
    key.alignment = 4;
    TrialRecord trial;
    trial.session_id = session;
    trial.key = key;
    trial.config = kLongConfig;
    trial.disposition = Disposition::kOk;
    trial.ms_median = trial.ms_min = 1.25;
    trial.runs = 7;
    trial.rate = 110;
    TrialRecord other = trial;
    other.config = "BM=64";
    db.record_trials({trial, other});
    BestRecord best;
    best.key = key;
    best.config = kLongConfig;
    best.ms = 1.25;
    best.rate = 110;
    best.baseline_ms = 1.5;
    ASSERT_TRUE(db.offer_best(best));
    best.key.shape = {64, 64, 64};
    best.config = "BM=64";
    ASSERT_TRUE(db.offer_best(best));
  }

  std::string tunedb_db(const std::string& arguments) { return "--db '" + db_ + "' " + arguments; }

  TempDir dir_;
  std::string db_;
};

// ----- exit codes ---------------------------------------------------------------------------------

TEST_F(CliTest, HelpOfEachToolListsTheExitCodes) {
  for (const char* name : {"autotune", "tunedb"}) {
    SCOPED_TRACE(name);
    Outcome help = run(dir_, name, "--help");
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_TRUE(contains(help.out,
                         "Exit codes: 0 done; 1 the run or the database failed; 2 usage error "
                         "(the command line was refused, nothing done); 3 no CUDA device or no "
                         "NVIDIA driver"))
        << help.out;
  }
}

TEST_F(CliTest, TunedbExitsTwoForUsageOneForTheDatabaseThreeWithoutADevice) {
  fill();
  for (const std::string& usage : {std::string("--bogus best"), std::string("frobnicate"),
                                   std::string("trials --limit -1"), std::string("info --op gemm"),
                                   std::string("best --format shipped")}) {
    Outcome r = run(dir_, "tunedb", tunedb_db(usage));
    EXPECT_EQ(r.exit_code, 2) << usage << ": " << r.err;
  }
  Outcome missing = run(dir_, "tunedb", "--db '" + dir_.file("none.db") + "' best");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_TRUE(contains(missing.err, "no tuning database at")) << missing.err;
  const std::string corrupt = dir_.file("corrupt.db");
  std::ofstream(corrupt) << std::string(4096, 'z');
  Outcome bad = run(dir_, "tunedb", "--db '" + corrupt + "' info");
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, "not a database")) << bad.err;
  // pull asks the machine for its GPU models before it connects: with none visible, exit 3.
  Outcome pull = run(dir_, "tunedb", tunedb_db("pull --store postgresql://nowhere.invalid/x"),
                 "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(pull.exit_code, 3) << pull.err;
  EXPECT_TRUE(contains(pull.err, "tunedb: pull: no GPU here to pull for (no CUDA device: "))
      << pull.err;
}

// No device, or no driver: exit 3 with the cause in words, before any database is touched; no
// "CUDA driver version is insufficient", no source location.
TEST_F(CliTest, AutotuneWithoutADeviceExitsThreeSayingWhy) {
  for (const std::string device : {"0", "all", "0,1"}) {
    SCOPED_TRACE(device);
    Outcome r = run(dir_, "autotune", "--device " + device + " --shape 64x64x64 --db '" + db_ + "'",
                "CUDA_VISIBLE_DEVICES=");
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(std::regex_search(
        r.err, std::regex("^autotune: --device " + device +
                          ": no CUDA device: (no NVIDIA driver is loaded \\(on a machine with an "
                          "NVIDIA GPU, install its driver\\)|no GPU is visible "
                          "\\(CUDA_VISIBLE_DEVICES=''\\)) \\(cudaError\\w+\\)\n$")))
        << r.err;
    EXPECT_FALSE(contains(r.err, "insufficient")) << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex("\\w\\.(cpp|hpp|cu|h):[0-9]"))) << r.err;
  }
  EXPECT_FALSE(fs::exists(db_));
}

// ----- messages -----------------------------------------------------------------------------------

TEST_F(CliTest, AnUnknownCommandIsNamedWithTheCommands) {
  fill();
  Outcome r = run(dir_, "tunedb", tunedb_db("frobnicate"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "tunedb: unknown command 'frobnicate': the commands are devices, "
                              "best, trials, sessions, info, "))
      << r.err;
  EXPECT_TRUE(contains(r.err, ", upgrade, report, export, merge, import, push")) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  Outcome none = run(dir_, "tunedb", tunedb_db(""));
  EXPECT_TRUE(contains(none.err, "tunedb: a command is required: devices, best, ")) << none.err;
}

// Each numeric option refused in one short line naming it and its rule: none prints CLI11's range
// of a double (a 309-digit number) or a conversion failure without the rule.
TEST_F(CliTest, NumericOptionsAreRefusedNamingTheOptionAndTheRule) {
  fill();
  struct Case {
    std::string tool, arguments, option, rule;
  };
  std::vector<Case> cases;
  for (const std::string value : {"-1", "99999999999999999999999", "many", "1.5"}) {
    cases.push_back({"tunedb", tunedb_db("trials --limit " + value), "--limit",
                     "must be a whole number of rows from 0 (no limit) to 2147483647, got '" +
                         value + "'"});
    cases.push_back({"tunedb", tunedb_db("best --session " + value), "--session",
                     "must be a positive session id"});
    for (const auto& [option, rule] :
         std::vector<std::pair<std::string, std::string>>{
             {"--device", "must be a CUDA device index"},
             {"--budget", "must be a number of seconds > 0"},
             {"--max-trials", "must be an integer >= 1"},
             {"--patience", "must be an integer >= 1"},
             {"--seed", "must be an integer >= 0"},
             {"--batch", "must be a whole number of products from 1 to 2147483647"}}) {
      // A budget may be any number of seconds > 0.
      if (option == "--budget" && (value == "1.5" || value[0] == '9')) continue;
      cases.push_back({"autotune", option + " " + value, option, rule});
    }
    cases.push_back({"autotune", "--worker --store x --lease " + value, "--lease",
                     "must be a whole number of seconds from 2 to 86400, got '" + value + "'"});
    cases.push_back({"autotune", "--replay x --replay-gpus " + value, "--replay-gpus",
                     "must be a whole number of GPUs from 1 to 64, got '" + value + "'"});
    cases.push_back({"autotune", "--replay x --replay-pace " + value, "--replay-pace",
                     "must be a whole number of milliseconds from 0 to 60000, got '" + value +
                         "'"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tool + " " + c.arguments);
    Outcome r = run(dir_, c.tool, c.arguments);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind(c.tool + ": " + c.option + ": ", 0), 0u) << r.err;
    EXPECT_TRUE(contains(r.err, c.rule)) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_LT(r.err.size(), 240u) << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex("[0-9]{25}"))) << r.err;
  }
}

// ----- tunedb info --------------------------------------------------------------------------------

TEST_F(CliTest, InfoShowsThePathUsedSchemaSizeAndRowsWithoutWriting) {
  fill();
  { Database db(db_); }  // a writer's close checkpoints: the file holds everything
  const std::string before = tuned::testing::slurp(db_);
  Outcome r = run(dir_, "tunedb", tunedb_db("info"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "database: " + fs::canonical(db_).string() + " (--db)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "schema version: " + std::to_string(Database::schema_version()) +
                                  " (this build's)\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "file size: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(" + std::to_string(fs::file_size(db_)) + " bytes)")) << r.out;
  for (const char* row : {"\nbest         2\n", "\ndevices      1\n", "\nsessions     1\n",
                          "\ntrials       2\n", "\ncubins       0\n"}) {
    EXPECT_TRUE(contains(r.out, row)) << row << " in\n" << r.out;
  }
  EXPECT_EQ(tuned::testing::slurp(db_), before);
  // The path actually used, and where it came from: $TUNED_DB, else the default.
  Outcome from_env = run(dir_, "tunedb", "info", "TUNED_DB='" + db_ + "'");
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_TRUE(contains(from_env.out, "database: " + fs::canonical(db_).string() + " ($TUNED_DB)"))
      << from_env.out;
  const std::string cache = dir_.file("xdg");
  fs::create_directories(cache + "/tuned");
  fs::copy_file(db_, cache + "/tuned/tuned.db");
  Outcome by_default = run(dir_, "tunedb", "info", "env -u TUNED_DB XDG_CACHE_HOME='" + cache + "'");
  EXPECT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_TRUE(contains(by_default.out, "database: " + fs::canonical(cache).string() +
                                           "/tuned/tuned.db (the default: no --db given, "
                                           "$TUNED_DB unset)"))
      << by_default.out;
}

// ----- configs in tables --------------------------------------------------------------------------

TEST_F(CliTest, TablesAbbreviateConfigsUnlessWideAndCsvKeepsThemWhole) {
  fill();
  for (const char* command : {"best", "trials"}) {
    SCOPED_TRACE(command);
    Outcome narrow = run(dir_, "tunedb", tunedb_db(command));
    ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
    EXPECT_FALSE(contains(narrow.out, kLongConfig)) << narrow.out;
    // Leading parameters cut after a comma, then "..." and a digest of the whole.
    EXPECT_TRUE(std::regex_search(narrow.out, std::regex("GEMV=0,BM=128,BN=128,BK=32,WM=16,[A-Z=0-9,]*"
                                                         "\\.\\.\\. #[0-9a-f]{4}")))
        << narrow.out;
    EXPECT_TRUE(std::regex_search(narrow.out, std::regex("  BM=64( |\n)"))) << narrow.out;  // whole
    Outcome wide = run(dir_, "tunedb", tunedb_db(std::string(command) + " --wide"));
    ASSERT_EQ(wide.exit_code, 0) << wide.err;
    EXPECT_TRUE(contains(wide.out, kLongConfig)) << wide.out;
    Outcome csv = run(dir_, "tunedb", tunedb_db(std::string(command) + " --format csv"));
    EXPECT_TRUE(contains(csv.out, kLongConfig)) << csv.out;
    Outcome json = run(dir_, "tunedb", tunedb_db(std::string(command) + " --format json"));
    EXPECT_TRUE(contains(json.out, kLongConfig)) << json.out;
  }
}

// ----- a run (a recorded space stands in for the GPU) ---------------------------------------------

std::string replay_file() {
  return std::string(TUNED_REPLAY_DIR) + "/gemm_TT_777x1000x555_h200.tsv.gz";
}

// The results table heads each column with what it holds (the tuned kernel's rate and the
// baseline's are two columns of one unit); configs abbreviated unless --wide; no progress where
// stderr is no terminal, lines with --progress.
TEST_F(CliTest, AutotuneTableHeadsEachColumnAndProgressIsQuietOffATerminal) {
  ASSERT_TRUE(fs::exists(replay_file())) << replay_file();
  const std::string common = "--op gemm --layout TT --shape 777x1000x555 --replay '" +
                             replay_file() + "' --max-trials 6 --seed 3 --db '" + db_ + "'";
  Outcome r = run(dir_, "autotune", common);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t header = r.out.find("\nshape ");
  ASSERT_NE(header, std::string::npos) << r.out;
  const std::string head = r.out.substr(header + 1, r.out.find('\n', header + 1) - header - 1);
  // (A replay's rate is in runs/s and its baseline the recorded one; cuBLAS's TFLOP/s on a GPU.)
  for (const char* column : {"layout", "tuned ms", "tuned runs/s", "recorded baseline ms",
                             "recorded baseline runs/s", "ratio", "ok/trials", "best config"}) {
    EXPECT_TRUE(contains(head, column)) << column << " in " << head;
  }
  // Every column's heading is its own: no two alike.
  std::vector<std::string> words;
  for (size_t start = 0; start < head.size();) {
    const size_t gap = head.find("  ", start);
    std::string word = head.substr(start, gap - start);
    if (!word.empty()) words.push_back(word.substr(word.find_first_not_of(' ')));
    if (gap == std::string::npos) break;
    start = head.find_first_not_of(' ', gap);
  }
  std::vector<std::string> sorted = words;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << head;
  EXPECT_TRUE(contains(r.out, "6/6")) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("  [a-z_]+:BM=[0-9]+,[A-Z=0-9,]*\\.\\.\\. #[0-9a-f]{4}\n")))
      << r.out;
  EXPECT_TRUE(contains(r.out, "configs abbreviated: --wide prints them whole")) << r.out;
  // stderr is a file: no progress line.
  EXPECT_FALSE(contains(r.err, "trials ")) << r.err;
  EXPECT_FALSE(contains(r.err, "ETA")) << r.err;

  Outcome lines_asked = run(dir_, "autotune", common + " --remeasure --progress --wide");
  ASSERT_EQ(lines_asked.exit_code, 0) << lines_asked.err;
  EXPECT_FALSE(contains(lines_asked.out, "... #")) << lines_asked.out;
  // whole: the family's word, then every parameter it reads
  EXPECT_TRUE(std::regex_search(lines_asked.out,
                                std::regex("  [a-z_]+:BM=[A-Z=0-9,]*,(KSUM|AHEAD)=[0-9]+\n")))
      << lines_asked.out;
  EXPECT_TRUE(std::regex_search(lines_asked.err,
                                std::regex("\\[shape 1 of 1: 777x1000x555 TT\\] trials [0-9]+/6 .* "
                                           "elapsed, ETA at most [0-9]")))
      << lines_asked.err;
  EXPECT_FALSE(contains(lines_asked.err, "\r")) << lines_asked.err;
  Outcome quiet = run(dir_, "autotune", common + " --remeasure --quiet --progress");
  EXPECT_EQ(quiet.exit_code, 2) << quiet.err;  // one or the other
  EXPECT_TRUE(contains(quiet.err, "--quiet")) << quiet.err;
}

}  // namespace
