// The tuning run's policy (tuner/tuning_run) on recorded spaces (tuner/replay_evaluator), no GPU:
// trials and bests reach the database as they are measured, a re-run resumes, --remeasure measures
// again, tasks are shared over devices, a busy device and an unknown problem are refused, and a
// stop starts no task.
#include "tuner/tuning_run.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>
#include <set>

#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"
#include "tuner/device_lock.hpp"
#include "tuner/replay_evaluator.hpp"

namespace {

using namespace tuned;
using tuned::testing::TempDir;

// Three parameters of six values: a bowl with its best at A = 4, B = 2, C = 5; every 11th config
// fails its check.
Space bowl_space() {
  Space space;
  for (const char* name : {"A", "B", "C"}) space.add({name, {1, 2, 3, 4, 5, 6}, ""});
  return space;
}

ReplayedProblem bowl_problem(std::vector<int64_t> shape, double scale = 1.0) {
  ReplayedProblem p;
  p.space = bowl_space();
  p.rate_at_1ms = 100;
  p.rate_unit = "GB/s";
  RecordedSpace& r = p.record;
  r.op = "bowl";
  r.variant = "V";
  r.shape = std::move(shape);
  r.alignment = 4;
  r.template_hash = "bowl-template";
  r.baseline_ms = 2.0 * scale;
  int index = 0;
  p.space.for_each([&](const Config& c) {
    RecordedTrial t;
    t.config = c.canonical();
    t.compile_ms = 40;
    const bool fails = ++index % 11 == 0 && t.config != "A=4,B=2,C=5";
    const double a = c.get("A") - 4, b = c.get("B") - 2, cc = c.get("C") - 5;
    t.ok = t.ran = !fails;
    t.disposition = fails ? "wrong_result" : "ok";
    t.ms = fails ? 0 : scale * (1.0 + 0.05 * (a * a + b * b + cc * cc));
    t.runs = fails ? 0 : 10;
    r.trials.push_back(t);
    return true;
  });
  r.first = {"A=1,B=1,C=1"};
  return p;
}

DeviceInfo fake_device(int index) {
  DeviceInfo d;
  d.index = index;
  d.name = "Replayed GPU";
  d.uuid = "GPU-replay-" + std::to_string(index);
  d.cc_major = 9;
  return d;
}

TuningProblem problem_of(const ReplayedProblem& p) {
  TuningProblem problem;
  problem.request.op = p.record.op;
  problem.request.layout = p.record.variant;
  problem.request.shape = p.record.shape;
  problem.work = static_cast<double>(p.record.shape[0]);
  return problem;
}

// What the run told its program.
struct Recorder : TuningObserver {
  void started() override { ++starts; }
  void resuming(const TaskView&, size_t configs) override {
    std::lock_guard<std::mutex> lock(mutex);
    resumed += configs;
  }
  void progress(const TaskView&, const Progress& p) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++progress_calls;
    if (p.best) best_seen.insert(p.best->config);
  }
  void task_ended(const TaskView& task,
                  const std::vector<std::optional<TaskOutcome>>& outcomes) override {
    ended.push_back(task.index);  // called one at a time
    EXPECT_TRUE(outcomes[task.index].has_value());
  }
  std::mutex mutex;
  int starts = 0;
  size_t resumed = 0;
  int progress_calls = 0;
  std::set<std::string> best_seen;
  std::vector<size_t> ended;
};

class TuningRunTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("TUNED_LOCK_DIR", dir_.file("").c_str(), 1); }
  void TearDown() override { unsetenv("TUNED_LOCK_DIR"); }

  std::vector<std::unique_ptr<DeviceEvaluator>> devices(int count,
                                                        const std::vector<ReplayedProblem>& ps) {
    std::vector<std::unique_ptr<DeviceEvaluator>> out;
    for (int i = 0; i < count; ++i)
      out.push_back(std::make_unique<ReplayDevice>(fake_device(i), ps));
    return out;
  }

  TuningRunOptions options(int max_trials) const {
    TuningRunOptions o;
    o.session.strategy = "guided";
    o.session.max_trials = max_trials;
    o.budget_s = 600;
    o.seed = 7;
    return o;
  }

  TempDir dir_;
};

TEST_F(TuningRunTest, TrialsAndTheBestReachTheDatabaseAndARerunResumes) {
  const std::vector<ReplayedProblem> ps = {bowl_problem({1000})};
  const auto one = devices(1, ps);
  cache::Database db(dir_.file("tuned.db"));
  Recorder seen;
  const auto outcomes = run_tuning({problem_of(ps[0])}, one, db, options(40), seen);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0]);
  const TaskOutcome& first = *outcomes[0];
  EXPECT_EQ(seen.starts, 1);
  EXPECT_EQ(seen.ended, std::vector<size_t>{0});
  EXPECT_EQ(first.trials, 40);
  EXPECT_GT(first.ok, 30);
  EXPECT_LT(first.ok, 40) << "every 11th config fails its check";
  EXPECT_EQ(seen.progress_calls, 40);
  EXPECT_EQ(first.rate_unit, "GB/s");
  EXPECT_DOUBLE_EQ(first.rate, 100 / first.ms);
  EXPECT_EQ(first.note, "");

  // Every trial is in the database, and the best found is the stored best, with its template.
  const ProblemKey key = {"GPU-replay-0", "bowl", "V", {1000}, 4};
  const auto measured = db.measured(key, "bowl-template");
  EXPECT_EQ(measured.size(), 40u);
  double fastest = 0;
  for (const auto& t : db.trials(cache::Filter{})) EXPECT_EQ(t.rate_unit, "GB/s");
  for (const auto& t : measured) {
    if (t.disposition == cache::Disposition::kOk && (fastest == 0 || t.ms_median < fastest)) {
      fastest = t.ms_median;
    }
  }
  const auto best = db.find_best(key);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->config, first.config);
  EXPECT_DOUBLE_EQ(best->ms, fastest);
  EXPECT_EQ(best->template_hash, "bowl-template");
  EXPECT_TRUE(seen.best_seen.count(first.config));

  // The same run again: the strategy proposes what was measured, and nothing is measured again.
  Recorder again;
  const auto resumed = run_tuning({problem_of(ps[0])}, one, db, options(40), again);
  ASSERT_TRUE(resumed[0]);
  EXPECT_EQ(again.resumed, 40u);
  EXPECT_EQ(resumed[0]->trials, 0);
  EXPECT_EQ(resumed[0]->note, "nothing new to measure: every config proposed was measured before");
  EXPECT_EQ(db.measured(key, "bowl-template").size(), 40u);

  // --remeasure measures them anew: each config twice in the database.
  TuningRunOptions remeasure = options(40);
  remeasure.remeasure = true;
  Recorder third;
  const auto anew = run_tuning({problem_of(ps[0])}, one, db, remeasure, third);
  EXPECT_EQ(third.resumed, 0u);
  EXPECT_EQ(anew[0]->trials, 40);
  EXPECT_EQ(db.measured(key, "bowl-template").size(), 80u);
}

TEST_F(TuningRunTest, TasksAreSharedOverDevicesAndEachEndsOnce) {
  std::vector<ReplayedProblem> ps;
  std::vector<TuningProblem> problems;
  for (int64_t size : {10, 4000, 200, 3000, 50}) {
    ps.push_back(bowl_problem({size}, static_cast<double>(size) / 1000));
    problems.push_back(problem_of(ps.back()));
  }
  const auto two = devices(2, ps);
  cache::Database db(dir_.file("tuned.db"));
  Recorder seen;
  const auto outcomes = run_tuning(problems, two, db, options(12), seen);
  std::set<size_t> ended(seen.ended.begin(), seen.ended.end());
  EXPECT_EQ(seen.ended.size(), 5u);
  EXPECT_EQ(ended.size(), 5u);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    ASSERT_TRUE(outcomes[i]) << i;
    EXPECT_EQ(outcomes[i]->key.shape, ps[i].record.shape);
    EXPECT_EQ(outcomes[i]->trials, 12);
    EXPECT_TRUE(outcomes[i]->gpu == 0 || outcomes[i]->gpu == 1);
  }
  EXPECT_EQ(db.devices().size(), 2u) << "each device of the run is recorded";
}

TEST_F(TuningRunTest, ABusyDeviceAnUnknownProblemAndAStopAreRefused) {
  const std::vector<ReplayedProblem> ps = {bowl_problem({1000})};
  const auto one = devices(1, ps);
  cache::Database db(dir_.file("tuned.db"));
  Recorder seen;
  TuningRunOptions no_wait = options(5);
  no_wait.wait_for_lock = false;
  {
    DeviceLock held("GPU-replay-0", false);
    try {
      run_tuning({problem_of(ps[0])}, one, db, no_wait, seen);
      FAIL() << "a device another tuner holds is refused without waiting";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), TUNED_STATUS_DEVICE_BUSY);
    }
  }
  EXPECT_EQ(seen.starts, 0);

  TuningProblem unknown = problem_of(ps[0]);
  unknown.request.shape = {999};
  try {
    run_tuning({unknown}, one, db, options(5), seen);
    FAIL() << "a problem the device cannot evaluate is the run's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("bowl V 999"), std::string::npos) << e.what();
  }

  std::atomic<bool> stop{true};
  TuningRunOptions stopped = options(5);
  stopped.stop = &stop;
  const auto none = run_tuning({problem_of(ps[0])}, one, db, stopped, seen);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0]) << "a stopped run starts no task";
}

}  // namespace
