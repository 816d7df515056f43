// The runtime without a GPU (a runtime with a fixed reference device): its choice path
// (key -> memo -> database -> selection model) on many threads while another switches databases —
// scripts/test.sh also runs this built with ThreadSanitizer, where any data race fails the run —
// and the log of its choices.
#include "api/runtime.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "cache/database.hpp"
#include "core/log.hpp"
#include "templates/gemm/gemm_descriptor.hpp"

namespace tuned {
namespace {

// The reference sm_90 device named as an H100, so the shipped H100 tables answer for it.
DeviceInfo reference_h100() {
  DeviceInfo device = reference_device(90);
  device.name = "NVIDIA H100 80GB HBM3";
  return device;
}

TEST(RuntimeRace, SetDatabaseWhileOtherThreadsChoose) {
  const DeviceInfo device = reference_h100();
  const OpRegistration& gemm = find_op("gemm");
  const std::string dir = ::testing::TempDir() + "race_" + std::to_string(getpid());
  const std::string with_entry = dir + "_a.db", empty = dir + "_b.db";
  const auto key_problem = gemm_op::packed_problem("NN", 300, 200, 100);
  {
    cache::Database db(with_entry);
    cache::BestRecord best;
    best.key = gemm_op::problem_key(device, key_problem);
    best.config =
        "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,UNROLL=16,"
        "PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
        "AHEAD=0";
    best.ms = 1;
    ASSERT_TRUE(db.offer_best(best));
    cache::Database other(empty);
  }
  Runtime runtime(device);
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, exact{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      while (!stop) {
        ProblemId id = gemm_op::problem_id(key_problem);
        if (rng() % 2) {
          id.variant = static_cast<int>(rng() % 4);
          for (int d = 0; d < 3; ++d) id.dims[d] = 1 + static_cast<int64_t>(rng() % 5000);
          id.alignment = 1;
        }
        const std::string text = runtime.describe(gemm, id);
        // Every answer names a whole config (a family and what it reads): never an empty memo
        // entry.
        const size_t at = text.find(": ");
        try {
          if (at == std::string::npos) throw Error(TUNED_STATUS_CONFIG_ERROR, "no config");
          read_config(text.substr(at + 2, text.find(' ', at + 2) - at - 2), gemm_op::parameters());
        } catch (const Error&) {
          ++bad;
        }
        if (text.rfind("exact: ", 0) == 0) ++exact;
        ++calls;
      }
    });
  }
  // At least 60 switches, and enough choices between them (ThreadSanitizer slows them down).
  for (int i = 0; i < 60 || (calls < 400 && i < 3000); ++i) {
    runtime.set_database(i % 2 ? empty : with_entry);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_GT(calls, 100);  // the threads ran while the databases switched
  EXPECT_GT(exact, 0);  // the database with the entry was seen
  runtime.set_database(empty);
  EXPECT_EQ(runtime.describe(gemm, gemm_op::problem_id(key_problem)).rfind("exact: ", 0),
            std::string::npos);
  runtime.set_database(with_entry);
  EXPECT_EQ(runtime.describe(gemm, gemm_op::problem_id(key_problem)).rfind("exact: ", 0), 0u);
  std::remove(with_entry.c_str());
  std::remove(empty.c_str());
}

// A database tuned on another GPU of this model (copied across a cluster) answers for its shapes
// as "twin <uuid>", after this GPU's own entry and before the shipped data and the model; a GPU
// of another model does not.
TEST(RuntimeChoice, TwinGpusEntryAnswersAfterTheOwnOne) {
  const DeviceInfo device = reference_h100();
  const OpRegistration& gemm = find_op("gemm");
  const std::string path = ::testing::TempDir() + "twin_" + std::to_string(getpid()) + ".db";
  std::remove(path.c_str());
  const auto problem = gemm_op::packed_problem("NN", 12345, 678, 104);  // one FFMA chain's k
  const std::string twin_config =
      "GEMV=0,BM=64,BN=64,BK=16,WM=32,WN=32,TM=4,TN=1,LM=8,VEC=1,PAD=4,AKM=1,BKM=0,UNROLL=16,"
      "PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0";
  const std::string own_config =
      "GEMV=0,BM=128,BN=64,BK=8,WM=128,WN=32,TM=4,TN=2,LM=8,VEC=1,PAD=0,AKM=1,BKM=1,UNROLL=8,"
      "PIPE=4,SWZ=4,MINB=2,PRETB=1,SPLITK=1,PACK=0,REDUCE=0,TAIL=1,MMA=0,CSTAGE=0,KSUM=0,GCOLS=1,"
      "AHEAD=0";
  auto store = [&](const std::string& uuid, const std::string& name, const std::string& config) {
    cache::Database db(path);
    cache::DeviceRecord d = cache::device_record(device);  // a GPU like this one ...
    d.uuid = uuid;                                          // ... or of another model
    d.name = name;
    db.upsert_device(d);
    cache::BestRecord best;
    best.key = gemm_op::problem_key(device, problem);
    best.key.device_uuid = uuid;
    best.config = config;
    best.ms = 1;
    ASSERT_TRUE(db.offer_best(best));
  };
  auto describe = [&] {
    Runtime runtime(device);  // a fresh memo each time
    runtime.set_database(path);
    return runtime.describe(gemm, gemm_op::problem_id(problem));
  };
  const std::string untuned = describe();
  EXPECT_EQ(untuned.rfind("twin ", 0), std::string::npos) << untuned;
  store("GPU-other-model", "NVIDIA H200", twin_config);
  EXPECT_EQ(describe(), untuned);
  store("GPU-twin", device.name, twin_config);
  // (describe shows the config as configs are shown, its family by word, and names its
  // arithmetic after it.)
  auto shown = [](const std::string& config) {
    const Config c = read_config(config, gemm_op::parameters());
    return config_text(c, gemm_op::parameters()) + " (math: " + gemm_op::math_family(c) + ")";
  };
  EXPECT_EQ(describe(), "twin GPU-twin: " + shown(twin_config));
  EXPECT_EQ(describe().find("twin GPU-twin: ffma:BM=64,BN=64,"), 0u);
  store(device.uuid, device.name, own_config);
  EXPECT_EQ(describe(), "exact: " + shown(own_config));
  std::remove(path.c_str());
}

// With TUNED_LOG_LEVEL=info (here set_log_level) every choice is logged with its origin and
// config; silent otherwise.
TEST(RuntimeLog, NamesEachChoiceWhenEnabled) {
  const DeviceInfo device = reference_h100();
  const OpRegistration& gemm = find_op("gemm");
  const std::string log_path = ::testing::TempDir() + "runtime_log_" + std::to_string(getpid());
  std::remove(log_path.c_str());
  set_log_file(log_path);
  Runtime runtime(device);
  runtime.set_database(log_path + ".db");
  set_log_level(LogLevel::kOff);
  runtime.describe(gemm, gemm_op::problem_id(gemm_op::packed_problem("TN", 300, 7, 5000)));
  set_log_level(LogLevel::kInfo);
  const std::string choice =
      runtime.describe(gemm, gemm_op::problem_id(gemm_op::packed_problem("NT", 1000, 33, 77)));
  set_log_level(LogLevel::kOff);
  set_log_file("");
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("300x7x5000"), std::string::npos) << text;  // silent while off
  EXPECT_NE(text.find("gemm NT 1000x33x77 align 1: model "), std::string::npos) << text;
  // (The config: describe's text between "origin: " and the words on its arithmetic.)
  const size_t config_at = choice.find(": ") + 2;
  const std::string config = choice.substr(config_at, choice.find(" (math: ") - config_at);
  EXPECT_NE(text.find(config), std::string::npos) << text;
  EXPECT_NE(choice.find(" (math: FFMA"), std::string::npos) << choice;
  std::remove(log_path.c_str());
  std::remove((log_path + ".db").c_str());
}

// The TF32 compute type is opt-in (issue 31): with no tuning on the reference H100, the default
// type never picks plain TF32 for any shape, layout or alignment, the TF32 type picks it where the
// layout's data picks the TMA-fed split TF32 kernel (served in its one-product form: most large
// products), and the pedantic type picks FFMA alone.
TEST(RuntimeChoice, PlainTf32IsPickedOnlyForTheTf32ComputeType) {
  const DeviceInfo device = reference_h100();
  const OpRegistration& gemm = find_op("gemm");
  const std::string db = ::testing::TempDir() + "compute_types_" + std::to_string(getpid());
  Runtime runtime(device);
  runtime.set_database(db);
  const std::string plain = "(math: TF32 on wgmma, TMA-fed (plain TF32))";
  auto describe = [&](const std::string& variant, int64_t m, int64_t n, int64_t k, int align) {
    gemm_op::Problem p = gemm_op::packed_problem(variant, m, n, k);
    ProblemId id = gemm_op::problem_id(p);
    id.alignment = align;
    return runtime.describe(gemm, id);
  };
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> log_size(0.0, std::log(20000.0));
  int plain_picks = 0, shapes = 0;
  for (int i = 0; i < 150; ++i) {
    const auto m = static_cast<int64_t>(std::exp(log_size(rng)));
    const auto n = static_cast<int64_t>(std::exp(log_size(rng)));
    const auto k = static_cast<int64_t>(std::exp(log_size(rng)));
    const int align = i % 3 == 0 ? 1 : 4;
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(k) + " align " + std::to_string(align));
      const std::string standard = describe(layout, m, n, k, align);
      EXPECT_EQ(standard.find("plain TF32"), std::string::npos) << standard;
      const std::string pedantic = describe(std::string(layout) + "-pedantic", m, n, k, align);
      EXPECT_NE(pedantic.find(" (math: FFMA"), std::string::npos) << pedantic;
      const std::string tf32 = describe(std::string(layout) + "-tf32", m, n, k, align);
      plain_picks += tf32.find(plain) != std::string::npos;
      ++shapes;
    }
  }
  // (Most of the random shapes are small: FFMA and FP64 tensor-core picks.)
  EXPECT_GT(plain_picks, shapes / 20) << "of " << shapes;
  // Large products nobody tuned (the model's picks, split TF32 on wgmma):
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (int64_t size : {5000, 7000}) {
      const std::string tf32 = describe(std::string(layout) + "-tf32", size, size, size, 4);
      EXPECT_NE(tf32.find(plain), std::string::npos) << layout << " " << size << ": " << tf32;
      const std::string standard = describe(layout, size, size, size, 4);
      EXPECT_NE(standard.find("(math: split TF32 on wgmma"), std::string::npos)
          << layout << " " << size << ": " << standard;
    }
  }
  std::remove(db.c_str());
}

// A GPU's own table may predate a kernel family: the H200's was fitted before the TMA-fed wgmma
// kernels (MMA = 4) existed, and first-use picked none of them there (0.69 of a 300 s run's best).
// So first-use candidates take the top picks of the architecture's other models too, early enough
// that the budget of a long product times them (it stopped before the 13th there); both tables
// hold TMA-fed entries now, so each GPU's own picks hold them as well.
TEST(RuntimeChoice, FirstUseCandidatesTakeTheArchitecturesOtherModels) {
  const OpRegistration& gemm = find_op("gemm");
  ProblemId id = gemm_op::problem_id(gemm_op::packed_problem("NT", 4096, 1536, 6144));
  id.alignment = 4;
  auto tma_wgmma_at = [&](const DeviceInfo& device) {
    const auto candidates =
        Runtime::first_use_candidates(gemm, device, id, gemm.face->fallback_config(device, id));
    EXPECT_GT(candidates.size(), 8u);  // else any position would be within the first 8
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].get("MMA") == 4) return i;
    }
    return candidates.size();
  };
  DeviceInfo h200 = reference_device(90);
  h200.name = "NVIDIA H200";
  EXPECT_LE(tma_wgmma_at(h200), 8u);
  EXPECT_LE(tma_wgmma_at(reference_h100()), 8u);
}

}  // namespace
}  // namespace tuned
