// A tuning session's final round on the GPU: the leaders timed again side by side, the fastest
// of that round kept, and the L2 flush option really evicting the cache.
#include "tuner/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "generator/cuda_raii.hpp"
#include "generator/device.hpp"
#include "templates/check/device_check.hpp"
#include "templates/registry.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace tuned {
namespace {

struct Tuned {
  SessionResult result;
  std::vector<cache::TrialRecord> recorded;
};

Tuned tune(const TaskRequest& request, SessionOptions options) {
  const DeviceInfo device = query_device(0);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  auto task = make_task(request, device, check);
  Tuned out;
  out.result = run_session(*task, device, kernels, options, 1,
                           [&](const std::vector<cache::TrialRecord>& batch) {
                             out.recorded.insert(out.recorded.end(), batch.begin(), batch.end());
                           },
                           {});
  return out;
}

TEST(SessionLeaders, TheResultIsTheFastestOfTheLeadersTimedAgain) {
  TUNED_REQUIRE_GPU();
  SessionOptions options;
  options.strategy = "exhaustive";
  options.max_trials = 16;
  options.budget_s = 60;
  options.leaders = 4;
  options.leader_margin = 10.0;  // every candidate that ran is close enough
  const Tuned t = tune({"transpose", {2048, 2048}, "", {}}, options);
  ASSERT_TRUE(t.result.best);
  std::vector<const cache::TrialRecord*> ok;
  for (const auto& r : t.recorded) {
    if (r.disposition == cache::Disposition::kOk) ok.push_back(&r);
  }
  ASSERT_GE(ok.size(), 4u);
  EXPECT_EQ(t.result.leaders_timed, 4);
  // The winner is one of the four fastest of the search (not necessarily its fastest), and its
  // time is the final round's.
  std::sort(ok.begin(), ok.end(), [](auto* a, auto* b) { return a->ms_median < b->ms_median; });
  bool among = false;
  for (size_t i = 0; i < 4; ++i) among |= ok[i]->config == t.result.best->config;
  EXPECT_TRUE(among) << t.result.best->config;
  EXPECT_EQ(t.result.final_best.runs, 15);
  EXPECT_GT(t.result.final_best.ms_median, 0);
  EXPECT_GT(t.result.final_baseline.ms_median, 0);
  EXPECT_FALSE(t.result.flushed_l2);

  // With no margin, only the search's fastest is timed again, and it is the result.
  options.leader_margin = 0;
  const Tuned one = tune({"transpose", {2048, 2048}, "", {}}, options);
  ASSERT_TRUE(one.result.best);
  EXPECT_EQ(one.result.leaders_timed, 1);
  double fastest = 1e30;
  std::string fastest_config;
  for (const auto& r : one.recorded) {
    if (r.disposition == cache::Disposition::kOk && r.ms_median < fastest) {
      fastest = r.ms_median;
      fastest_config = r.config;
    }
  }
  EXPECT_EQ(one.result.best->config, fastest_config);
}

TEST(SessionLeaders, FlushingTheL2MakesACacheResidentKernelPayForDram) {
  TUNED_REQUIRE_GPU();
  // 2 x 16 MB of a 2048 x 2048 transpose fit an H100's 50 MB L2: back-to-back calls find their
  // input there, a call after the flush reads it from DRAM.
  const DeviceInfo device = query_device(0);
  ASSERT_GT(device.l2_bytes, size_t{40} << 20) << "the test assumes an L2 of 40 MB or more";
  const int64_t n = 2048;
  DeviceBuffer in(n * n * sizeof(float)), out(n * n * sizeof(float));
  DeviceBuffer evict(2 * device.l2_bytes);
  Stream stream = Stream::create();
  TUNED_CUDA_CHECK(cudaMemsetAsync(in.get(), 1, in.bytes(), stream.get()));
  // A copy stands in for the kernel: its time is all memory traffic.
  auto copy = [&](cudaStream_t s) {
    TUNED_CUDA_CHECK(cudaMemcpyAsync(out.get(), in.get(), in.bytes(), cudaMemcpyDeviceToDevice, s));
  };
  auto nothing = [](cudaStream_t) {};
  auto flush = [&](cudaStream_t s) {
    TUNED_CUDA_CHECK(cudaMemsetAsync(evict.get(), 0, evict.bytes(), s));
  };
  // Both one call per sample, so the only difference is where the input comes from.
  const BaselineTiming warm = time_runs(copy, stream.get(), 15, 0, nothing);
  const BaselineTiming cold = time_runs(copy, stream.get(), 15, 0, flush);
  EXPECT_EQ(cold.runs, 15);
  EXPECT_GT(cold.ms_median, 1.15 * warm.ms_median)
      << "cold " << cold.ms_median << " ms, warm " << warm.ms_median << " ms";
}

}  // namespace
}  // namespace tuned
