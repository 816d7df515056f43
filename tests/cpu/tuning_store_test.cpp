// The PostgreSQL tuning store and its queue (issue 66) against a real server: TUNED_TEST_STORE is
// a libpq keyword/value string of a server where the test may create databases (scripts/test.sh
// starts a throwaway cluster, scripts/pg_test_cluster.sh, and sets it). Each test works in a
// database of its own, dropped afterwards. Without the variable the tests skip with that reason,
// unless TUNED_REQUIRE_STORE=1 (CI) makes that a failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache/database.hpp"
#include "cache/store_connection.hpp"
#include "cache/store_queue.hpp"
#include "cache/tuning_store.hpp"
#include "generator/device.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/registry.hpp"
#include "tests/common/temp_dir.hpp"
#include "tuned/error.hpp"
#include "tuner/stored_config.hpp"

namespace tuned::cache {
namespace {

using tuned::testing::TempDir;
using namespace std::chrono_literals;

const char* admin_url() { return std::getenv("TUNED_TEST_STORE"); }

// A database of the test's own on the test server, dropped at the end.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!admin_url() || !*admin_url()) {
      const char* required = std::getenv("TUNED_REQUIRE_STORE");
      if (required && std::string(required) == "1") {
        FAIL() << "TUNED_REQUIRE_STORE=1 but TUNED_TEST_STORE is unset: no PostgreSQL server";
      }
      GTEST_SKIP() << "store test skipped: TUNED_TEST_STORE names no PostgreSQL server "
                      "(scripts/test.sh starts one with scripts/pg_test_cluster.sh)";
    }
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    name_ = "tuned_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    (void)info;
    admin().exec("DROP DATABASE IF EXISTS " + name_, {}, "drop");
    admin().exec("CREATE DATABASE " + name_, {}, "create");
    url_ = std::string(admin_url()) + " dbname=" + name_;
  }
  void TearDown() override {
    if (name_.empty()) return;
    admin().exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)", {}, "drop");
  }
  store::Connection& admin() {
    if (!admin_) admin_ = std::make_unique<store::Connection>(admin_url());
    return *admin_;
  }

  std::string url_, name_;
  std::unique_ptr<store::Connection> admin_;
  TempDir dir_;
};

DeviceRecord gpu(const std::string& uuid, const std::string& name = "NVIDIA H100 80GB HBM3") {
  DeviceInfo info = reference_device(90);
  info.uuid = uuid;
  info.name = name;
  return device_record(info);
}

ProblemKey gemm_key(const std::string& uuid, int64_t m, int64_t n, int64_t k) {
  DeviceInfo info = reference_device(90);
  ProblemKey key = gemm_op::problem_key(info, gemm_op::packed_problem("NN", m, n, k));
  key.device_uuid = uuid;
  return key;
}

// The first count configs of the GEMM space of key, as an H100 holds them.
std::vector<std::string> space_configs(const ProblemKey& key, size_t count) {
  std::vector<std::string> configs;
  request_space({key.op, key.shape, key.variant, {}}, reference_device(90))
      .for_each([&](const Config& c) {
        configs.push_back(c.canonical());
        return configs.size() < count;
      });
  return configs;
}

// A local database tuned on one GPU: a session, its trials of two problems and their bests.
struct LocalRun {
  std::vector<ProblemKey> keys;
  std::vector<std::string> configs;
};

LocalRun tune_locally(Database& db, const std::string& uuid, const std::string& hash) {
  LocalRun run;
  db.upsert_device(gpu(uuid));
  SessionRecord session;
  session.device_uuid = uuid;
  session.op = "gemm";
  session.strategy = "guided";
  session.budget_s = 10;
  session = db.begin_session(session);
  run.keys = {gemm_key(uuid, 1000, 600, 1200), gemm_key(uuid, 4097, 127, 64)};
  for (const ProblemKey& key : run.keys) {
    const auto configs = space_configs(key, 3);
    std::vector<TrialRecord> trials;
    for (size_t i = 0; i < configs.size(); ++i) {
      TrialRecord t;
      t.session_id = session.id;
      t.key = key;
      t.config = configs[i];
      t.kernel_name = "gemm_kernel_" + std::to_string(i);
      t.ms_median = t.ms_min = 1.0 + static_cast<double>(i);
      t.runs = 10;
      t.rate = 1.0 / t.ms_median;
      t.rate_unit = "TFLOP/s";
      t.template_hash = hash;
      trials.push_back(t);
    }
    db.record_trials(trials);
    BestRecord best;
    best.key = key;
    best.config = configs[0];
    best.kernel_name = "gemm_kernel_0";
    best.ms = 1.0;
    best.rate = 1.0;
    best.rate_unit = "TFLOP/s";
    best.baseline_ms = 2.0;
    best.session_id = session.id;
    best.template_hash = hash;
    EXPECT_TRUE(db.offer_best(best));
    run.configs.push_back(configs[0]);
  }
  return run;
}

int64_t count(store::Connection& c, const std::string& table) {
  return c.retried("SELECT count(*) FROM tuned." + table, {}, "count").rows.at(0).int64(0);
}

TEST_F(StoreTest, SchemaIsMadeOnceAndAnotherApplicationsOrANewerOneIsRefused) {
  {
    TuningStore a(url_);
    TuningStore b(url_);  // a second node: nothing to migrate
    EXPECT_EQ(a.schema_version(), store_schema_version());
    EXPECT_EQ(b.schema_version(), store_schema_version());
    a.connection().retried("UPDATE tuned.meta SET value = '99' WHERE key = 'schema_version'", {},
                           "test");
  }
  try {
    TuningStore newer(url_);
    FAIL() << "a store of a newer schema was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name_), std::string::npos) << e.what();
  }
  admin().exec("DROP DATABASE " + name_ + " WITH (FORCE)", {}, "test");
  admin().exec("CREATE DATABASE " + name_, {}, "test");
  {
    store::Connection c(url_);
    c.retried("CREATE SCHEMA tuned", {}, "test");
    c.retried("CREATE TABLE tuned.results (x integer)", {}, "test");
  }
  try {
    TuningStore foreign(url_);
    FAIL() << "another application's schema was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another application"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, ErrorsNameTheStoreButNeverItsPassword) {
  const std::string url = std::string(admin_url()) + " dbname=no_such_database password=hunter2";
  try {
    store::Connection c(url, 1s);
    FAIL() << "connected to a database that does not exist";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.status(), TUNED_STATUS_DATABASE_ERROR);
    EXPECT_NE(message.find("no_such_database"), std::string::npos) << message;
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
  }
  try {
    store::Connection c("postgresql://tuner:hunter2@[::1:bad/x", 1s);
    FAIL() << "a malformed URI was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, APushSendsEverythingOnceAndASecondAddsNothing) {
  Database db(dir_.file("node.db"));
  const LocalRun run = tune_locally(db, "GPU-node-a", "hash-1");
  TuningStore store(url_);
  const PushReport first = store.push(db, "node-a");
  EXPECT_EQ(first.devices, 1);
  EXPECT_EQ(first.sessions_added, 1);
  EXPECT_EQ(first.trials_added, 6);
  EXPECT_EQ(first.bests_taken, 2);
  const PushReport second = store.push(db, "node-a");
  EXPECT_EQ(second.sessions_added, 0);
  EXPECT_EQ(second.sessions_present, 1);
  EXPECT_EQ(second.trials_added, 0);
  EXPECT_EQ(second.trials_present, 6);
  EXPECT_EQ(second.bests_taken, 0);
  EXPECT_EQ(second.bests_kept, 2);
  EXPECT_EQ(count(store.connection(), "trials"), 6);
  EXPECT_EQ(count(store.connection(), "sessions"), 1);
  const auto bests = store.bests();
  ASSERT_EQ(bests.size(), 2u);
  EXPECT_EQ(bests[0].config, run.configs[0]);
  EXPECT_EQ(bests[0].template_hash, "hash-1");
  EXPECT_EQ(bests[0].rate_unit, "TFLOP/s");
  EXPECT_NE(bests[0].source.find("node-a:"), std::string::npos) << bests[0].source;
}

TEST_F(StoreTest, TheFasterBestWinsPerGpuModelAndTemplate) {
  TuningStore store(url_);
  const DeviceRecord a = gpu("GPU-a"), b = gpu("GPU-b"), other = gpu("GPU-c", "NVIDIA H200");
  for (const auto& d : {a, b, other}) store.upsert_device(d);
  const ProblemKey key = gemm_key("GPU-a", 1000, 600, 1200);
  const auto configs = space_configs(key, 3);
  BestRecord best;
  best.key = key;
  best.config = configs[0];
  best.ms = 2.0;
  best.template_hash = "h";
  EXPECT_TRUE(store.offer_best(best, a, "session-a"));
  best.config = configs[1];
  best.ms = 3.0;  // slower, from a twin: kept out
  EXPECT_FALSE(store.offer_best(best, b, "session-b"));
  best.ms = 1.5;  // faster: replaces
  EXPECT_TRUE(store.offer_best(best, b, "session-b"));
  best.ms = 1.7;  // the same session's re-timed best replaces its own
  EXPECT_TRUE(store.offer_best(best, b, "session-b"));
  best.config = configs[2];
  best.ms = 5.0;  // another model, and another template: rows of their own
  EXPECT_TRUE(store.offer_best(best, other, "session-c"));
  best.template_hash = "h2";
  EXPECT_TRUE(store.offer_best(best, a, "session-a2"));
  const auto bests = store.bests();
  ASSERT_EQ(bests.size(), 3u);
  EXPECT_EQ(bests[0].config, configs[1]);
  EXPECT_DOUBLE_EQ(bests[0].ms, 1.7);
  EXPECT_EQ(bests[0].key.device_uuid, "GPU-b");
  best.ms = -1;
  EXPECT_THROW(store.offer_best(best, a, "x"), Error);
}

TEST_F(StoreTest, APullBringsBestsAsDataThatServeTwinsAndRefusesConfigsOutsideTheSpace) {
  Database node(dir_.file("node.db"));
  const LocalRun run = tune_locally(node, "GPU-node-a", "hash-1");
  TuningStore store(url_);
  store.push(node, "node-a");
  // A best whose config this build's space does not hold: not taken.
  const DeviceRecord a = gpu("GPU-node-a");
  BestRecord bogus;
  bogus.key = gemm_key("GPU-node-a", 333, 333, 333);
  bogus.config = "NOT_A_PARAMETER=1";
  bogus.ms = 1.0;
  bogus.template_hash = "hash-1";
  store.offer_best(bogus, a, "");
  // And one of another model: not asked for.
  store.upsert_device(gpu("GPU-other", "NVIDIA H200"));
  BestRecord other = bogus;
  other.key = gemm_key("GPU-other", 512, 512, 512);
  other.config = space_configs(other.key, 1)[0];
  store.offer_best(other, gpu("GPU-other", "NVIDIA H200"), "");

  Database fresh(dir_.file("fresh.db"));
  const auto source = store.bests_source({"NVIDIA H100 80GB HBM3"});
  MergeOptions merge;
  merge.check_best = check_stored_best;
  const MergeReport report = fresh.merge(*source, merge);
  EXPECT_EQ(report.bests_taken, 2);
  EXPECT_EQ(report.bests_refused, 1);
  EXPECT_EQ(report.cubins_added, 0);
  // A GPU of the same model that never tuned finds them through its twin.
  DeviceInfo here = reference_device(90);
  here.name = "NVIDIA H100 80GB HBM3";
  here.uuid = "GPU-here";
  for (size_t i = 0; i < run.keys.size(); ++i) {
    ProblemKey key = run.keys[i];
    key.device_uuid = here.uuid;
    const auto found = fresh.find_best_on_twin(key, device_record(here), "hash-1");
    ASSERT_TRUE(found) << key.shape_string();
    EXPECT_EQ(found->config, run.configs[i]);
    EXPECT_FALSE(fresh.find_best_on_twin(key, device_record(here), "another-template"));
  }
  EXPECT_EQ(fresh.cubin_count(), 0);
  // Pulling again changes nothing.
  const MergeReport again = fresh.merge(*store.bests_source({"NVIDIA H100 80GB HBM3"}), merge);
  EXPECT_EQ(again.bests_taken, 0);
}

QueuedTask task(int64_t m, const std::string& model = "") {
  QueuedTask t;
  t.op = "gemm";
  t.variant = "NN";
  t.shape = {m, 64, 64};
  t.device_model = model;
  t.seed = 7;
  t.strategy = "guided";
  t.budget_s = 10;
  t.max_trials = 20;
  return t;
}

TEST_F(StoreTest, TheQueueHandsEachTaskToOneWorkerAndTakesItBackWhenItsLeaseExpires) {
  TuningStore store(url_);
  StoreQueue queue(store);
  EXPECT_EQ(queue.enqueue({task(1), task(7), task(127), task(127)}), std::make_pair(3L, 1L));
  EXPECT_EQ(queue.enqueue({task(1)}), std::make_pair(0L, 1L));  // already queued
  const Claimant a{"node-a", 1, 0, "NVIDIA H100 80GB HBM3"};
  const Claimant b{"node-b", 2, 1, "NVIDIA H100 80GB HBM3"};
  auto first = queue.claim(a, 60s);
  auto second = queue.claim(b, 1s);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->id, second->id);
  EXPECT_EQ(first->task.seed, 7u);
  EXPECT_EQ(first->task.max_trials, 20);
  EXPECT_TRUE(queue.renew(*first, 60s));
  // b's worker dies: its lease expires and the task goes to the next claimant.
  std::this_thread::sleep_for(1500ms);
  auto third = queue.claim(a, 60s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->id, second->id);
  EXPECT_EQ(third->attempts, 2);
  EXPECT_FALSE(queue.renew(*second, 60s));         // b no longer holds it
  EXPECT_FALSE(queue.finish(*second, true, "late"));  // nor can it mark it done
  EXPECT_TRUE(queue.finish(*third, true, "ok"));
  EXPECT_TRUE(queue.finish(*third, true, "ok"));  // a retried finish finds its own end
  EXPECT_EQ(queue.done_claims(third->id), 1);
  EXPECT_TRUE(queue.release(*first, "stopped"));  // back in the queue
  auto fourth = queue.claim(b, 60s);
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->id, first->id);
  EXPECT_TRUE(queue.finish(*fourth, false, "no valid config"));
  auto last = queue.claim(b, 60s);
  ASSERT_TRUE(last);
  EXPECT_TRUE(queue.finish(*last, true, "ok"));
  EXPECT_FALSE(queue.claim(a, 60s));
  const QueueCounts c = queue.counts();
  EXPECT_EQ(c.done, 2);
  EXPECT_EQ(c.failed, 1);
  EXPECT_FALSE(queue.unfinished());
  const auto states = queue.tasks();
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states[1].state, "done");
  EXPECT_EQ(states[1].node, "node-a");
  EXPECT_EQ(states[1].attempts, 2);
}

TEST_F(StoreTest, TasksForAModelGoToItsGpusAndATaskWhoseWorkersKeepDyingFails) {
  TuningStore store(url_);
  StoreQueue queue(store);
  queue.enqueue({task(1, "NVIDIA H200")});
  const Claimant h100{"n", 1, 0, "NVIDIA H100 80GB HBM3"}, h200{"n", 2, 0, "NVIDIA H200"};
  EXPECT_FALSE(queue.claim(h100, 1s));
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto claim = queue.claim(h200, 1s, 2);
    ASSERT_TRUE(claim) << attempt;
    EXPECT_EQ(claim->attempts, attempt);
    std::this_thread::sleep_for(1500ms);  // dies holding it
  }
  EXPECT_FALSE(queue.claim(h200, 1s, 2));
  const auto states = queue.tasks();
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, "failed");
  EXPECT_NE(states[0].note.find("claimed 2 times"), std::string::npos) << states[0].note;
}

TEST_F(StoreTest, ConcurrentClaimsNeverShareATask) {
  TuningStore store(url_);
  StoreQueue queue(store);
  std::vector<QueuedTask> tasks;
  for (int m = 1; m <= 60; ++m) tasks.push_back(task(m));
  queue.enqueue(tasks);
  std::vector<std::vector<int64_t>> got(6);
  std::vector<std::thread> workers;
  for (int w = 0; w < 6; ++w) {
    workers.emplace_back([&, w] {
      TuningStore mine(url_);
      StoreQueue q(mine);
      const Claimant who{"node", w, 0, "gpu"};
      while (auto claim = q.claim(who, 60s)) {
        got[w].push_back(claim->id);
        EXPECT_TRUE(q.finish(*claim, true, ""));
      }
    });
  }
  for (auto& t : workers) t.join();
  std::set<int64_t> all;
  size_t total = 0;
  for (const auto& g : got) {
    all.insert(g.begin(), g.end());
    total += g.size();
  }
  EXPECT_EQ(total, 60u);
  EXPECT_EQ(all.size(), 60u);
}

// The README's grants: a worker's role tunes through the queue and pushes, and cannot delete; a
// reader's role pulls and shows the queue.
TEST_F(StoreTest, TheDocumentedRolesWorkAndAWorkerCannotDelete) {
  { TuningStore schema(url_); }  // made by the owner
  const std::string role = "tuned_worker_" + std::to_string(getpid());
  admin().exec("DROP ROLE IF EXISTS " + role, {}, "test");
  admin().exec("CREATE ROLE " + role + " LOGIN", {}, "test");
  {
    store::Connection owner(url_);
    for (const std::string grant :
         {"GRANT USAGE ON SCHEMA tuned TO " + role,
          "GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA tuned TO " + role,
          "GRANT USAGE ON ALL SEQUENCES IN SCHEMA tuned TO " + role}) {
      owner.exec(grant, {}, "grant");
    }
  }
  {
    TuningStore store(url_ + " user=" + role);
    StoreQueue queue(store);
    EXPECT_EQ(queue.enqueue({task(1)}).first, 1);
    auto claim = queue.claim({"n", 1, 0, "gpu"}, 60s);
    ASSERT_TRUE(claim);
    EXPECT_TRUE(queue.finish(*claim, true, "ok"));
    Database db(dir_.file("node.db"));
    tune_locally(db, "GPU-node-a", "hash-1");
    EXPECT_EQ(store.push(db, "node-a").trials_added, 6);
    try {
      store.connection().exec("DELETE FROM tuned.bests", {}, "delete bests");
      FAIL() << "a worker's role deleted the bests";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("permission denied"), std::string::npos) << e.what();
    }
  }
  // A reader's role (tunedb pull, autotune --status) needs SELECT alone.
  const std::string reader = "tuned_reader_" + std::to_string(getpid());
  admin().exec("DROP ROLE IF EXISTS " + reader, {}, "test");
  admin().exec("CREATE ROLE " + reader + " LOGIN", {}, "test");
  {
    store::Connection owner(url_);
    owner.exec("GRANT USAGE ON SCHEMA tuned TO " + reader, {}, "grant");
    owner.exec("GRANT SELECT ON ALL TABLES IN SCHEMA tuned TO " + reader, {}, "grant");
  }
  {
    TuningStore store(url_ + " user=" + reader);
    EXPECT_EQ(StoreQueue(store).counts().done, 1);
    EXPECT_EQ(store.bests().size(), 2u);
    Database fresh(dir_.file("fresh.db"));
    MergeOptions merge;
    merge.check_best = check_stored_best;
    EXPECT_EQ(fresh.merge(*store.bests_source({}), merge).bests_taken, 2);
    EXPECT_THROW(StoreQueue(store).enqueue({task(7)}), Error);
  }
  admin().exec("DROP DATABASE " + name_ + " WITH (FORCE)", {}, "test");
  name_.clear();
  admin().exec("DROP ROLE " + role, {}, "test");
  admin().exec("DROP ROLE " + reader, {}, "test");
}

}  // namespace
}  // namespace tuned::cache
