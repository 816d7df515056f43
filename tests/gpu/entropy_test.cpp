// The entropy op on the GPU: the public API against the CPU double-precision reference on odd
// shapes (1x1, 1xn, nx1, windows larger than the matrix, r = 0 and 7, L = 2 and 256, padded leading
// dims, FP32 and uint8), the host path (CPU and GPU, 1 and 2 GPUs) agreeing, a sample of every
// parameter's values through the tuner's check (which is seen to fail on one element 2e-5 off),
// out-of-range values refused with nothing written, and bad arguments named.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "api/runtime.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/entropy/entropy_task.hpp"
#include "tuned/tuned.h"
#include "tuned/tuned.hpp"

namespace tuned::entropy_op {
namespace {

struct Case {
  int rows, cols, radius, levels, ld_pad;
  bool u8;
};

std::vector<float> random_levels(size_t n, int levels, std::mt19937& rng) {
  std::uniform_int_distribution<int> level(0, levels - 1);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(level(rng));
  return v;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {1, 1, 2, 16, 0, false},     {1, 300, 2, 16, 0, false},   {300, 1, 2, 16, 3, true},
      {5, 4, 7, 16, 0, false},     {257, 131, 0, 16, 1, false}, {200, 150, 7, 256, 2, false},
      {333, 222, 2, 2, 0, true},   {1000, 1000, 2, 16, 0, false}, {127, 513, 3, 256, 5, true},
      {4097, 7, 1, 16, 0, false},  {7, 4097, 4, 64, 0, false},  {1000, 1000, 7, 256, 4, true}};
  return c;
}

// The public API (tuned_entropy, or tuned_entropy_u8 on in8) on c's input into a poisoned device
// output, copied back to *out (p.ld_out * c.cols elements).
void run_public_api(const Case& c, const Problem& p, const std::vector<float>& in,
                    const std::vector<uint8_t>& in8, std::vector<float>* out) {
  void* d_in = nullptr;
  float* d_out = nullptr;
  const size_t in_bytes = in.size() * (c.u8 ? 1 : 4), out_bytes = out->size() * sizeof(float);
  ASSERT_EQ(cudaMalloc(&d_in, in_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), out_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, c.u8 ? static_cast<const void*>(in8.data()) : in.data(), in_bytes,
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(d_out, 0xFF, out_bytes), cudaSuccess);  // poison
  const tuned_status_t status =
      c.u8 ? tuned_entropy_u8(c.rows, c.cols, c.radius, c.levels, static_cast<uint8_t*>(d_in),
                              static_cast<int>(p.ld_in), d_out, static_cast<int>(p.ld_out), nullptr)
           : tuned_entropy(c.rows, c.cols, c.radius, c.levels, static_cast<float*>(d_in),
                           static_cast<int>(p.ld_in), d_out, static_cast<int>(p.ld_out), nullptr);
  ASSERT_EQ(status, TUNED_STATUS_SUCCESS) << tuned_last_error();
  ASSERT_EQ(cudaMemcpy(out->data(), d_out, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_in);
  cudaFree(d_out);
}

// The host paths on c's input: the CPU into *cpu, and the GPU on one GPU into *gpu.
void run_host_paths(const Case& c, const Problem& p, const std::vector<float>& in,
                    const std::vector<uint8_t>& in8, std::vector<float>* cpu,
                    std::vector<float>* gpu) {
  EntropyOptions cpu_path, gpu_path;
  cpu_path.path = EntropyPath::kCpu;
  gpu_path.path = EntropyPath::kGpu;
  gpu_path.gpus = 1;
  if (c.u8) {
    entropy_host(c.rows, c.cols, c.radius, c.levels, in8.data(), static_cast<int>(p.ld_in),
                 cpu->data(), static_cast<int>(p.ld_out), cpu_path);
    entropy_host(c.rows, c.cols, c.radius, c.levels, in8.data(), static_cast<int>(p.ld_in),
                 gpu->data(), static_cast<int>(p.ld_out), gpu_path);
  } else {
    entropy_host(c.rows, c.cols, c.radius, c.levels, in.data(), static_cast<int>(p.ld_in),
                 cpu->data(), static_cast<int>(p.ld_out), cpu_path);
    entropy_host(c.rows, c.cols, c.radius, c.levels, in.data(), static_cast<int>(p.ld_in),
                 gpu->data(), static_cast<int>(p.ld_out), gpu_path);
  }
}

TEST(Entropy, PublicApiMatchesTheDoubleReferenceOnOddShapes) {
  TUNED_REQUIRE_GPU();
  std::mt19937 rng(9);
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " r" +
                 std::to_string(c.radius) + " L" + std::to_string(c.levels) +
                 (c.u8 ? " u8" : " f32") + " pad " + std::to_string(c.ld_pad));
    Problem p = packed_problem(c.rows, c.cols, c.radius, c.levels);
    p.ld_in = c.rows + c.ld_pad;
    p.ld_out = c.rows + 2 * c.ld_pad;
    const size_t n_in = static_cast<size_t>(p.ld_in) * c.cols;
    const size_t n_out = static_cast<size_t>(p.ld_out) * c.cols;
    const std::vector<float> in = random_levels(n_in, c.levels, rng);
    std::vector<uint8_t> in8(in.begin(), in.end());
    std::vector<double> ref(n_out, 0.0);
    reference(p, in.data(), ref.data(), p.ld_out);
    std::vector<float> out(n_out);
    ASSERT_NO_FATAL_FAILURE(run_public_api(c, p, in, in8, &out));
    std::vector<float> cpu(n_out, NAN), gpu(n_out, NAN);
    run_host_paths(c, p, in, in8, &cpu, &gpu);

    double worst_device = 0, worst_cpu = 0, worst_host_gpu = 0;
    size_t padding_written = 0;
    for (int j = 0; j < c.cols; ++j) {
      for (int i = 0; i < p.ld_out; ++i) {
        const size_t e = i + static_cast<size_t>(j) * p.ld_out;
        if (i >= c.rows) {
          uint32_t bits;
          std::memcpy(&bits, &out[e], 4);
          padding_written += bits != 0xFFFFFFFFu;
          continue;
        }
        auto diff = [&](float x) {
          const double d = std::fabs(x - ref[e]);
          return std::isfinite(d) ? d : INFINITY;
        };
        worst_device = std::max(worst_device, diff(out[e]));
        worst_cpu = std::max(worst_cpu, diff(cpu[e]));
        worst_host_gpu = std::max(worst_host_gpu, diff(gpu[e]));
      }
    }
    EXPECT_LE(worst_device, 1e-5);
    EXPECT_LE(worst_cpu, 1e-5);
    EXPECT_LE(worst_host_gpu, 1e-5);
    EXPECT_EQ(padding_written, 0u);
    char describe[512];
    ASSERT_EQ(tuned_entropy_describe(c.rows, c.cols, c.radius, c.levels, c.u8, describe,
                                     sizeof(describe)),
              TUNED_STATUS_SUCCESS);
    std::printf("  %dx%d r%d L%d %s: device %.2g, cpu %.2g, host gpu %.2g  (%s)\n", c.rows, c.cols,
                c.radius, c.levels, c.u8 ? "u8" : "f32", worst_device, worst_cpu, worst_host_gpu,
                describe);
  }
}

TEST(Entropy, TwoGpusGiveTheOneGpuResultBitForBit) {
  TUNED_REQUIRE_GPU();
  int devices = 0;
  cudaGetDeviceCount(&devices);
  if (devices < 2) GTEST_SKIP() << "GPU test skipped: needs 2 GPUs, " << devices << " visible";
  std::mt19937 rng(11);
  for (const Case& c : {Case{3001, 2999, 2, 16, 0, false}, Case{517, 1001, 7, 256, 3, false},
                        Case{64, 3, 2, 16, 0, false}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols));
    const int ld = c.rows + c.ld_pad;
    const std::vector<float> in = random_levels(static_cast<size_t>(ld) * c.cols, c.levels, rng);
    std::vector<float> one(in.size(), NAN), two(in.size(), NAN), cpu(in.size(), NAN);
    EntropyOptions o;
    o.path = EntropyPath::kGpu;
    o.gpus = 1;
    EntropyReport report;
    entropy_host(c.rows, c.cols, c.radius, c.levels, in.data(), ld, one.data(), ld, o, &report);
    EXPECT_EQ(report.gpus, 1);
    o.gpus = 2;
    entropy_host(c.rows, c.cols, c.radius, c.levels, in.data(), ld, two.data(), ld, o, &report);
    EXPECT_EQ(report.gpus, std::min(2, c.cols));
    o.path = EntropyPath::kCpu;
    entropy_host(c.rows, c.cols, c.radius, c.levels, in.data(), ld, cpu.data(), ld, o);
    size_t differ = 0;
    double worst = 0;
    for (int j = 0; j < c.cols; ++j) {
      for (int i = 0; i < c.rows; ++i) {
        const size_t e = i + static_cast<size_t>(j) * ld;
        differ += std::memcmp(&one[e], &two[e], 4) != 0;
        worst = std::max(worst, static_cast<double>(std::fabs(two[e] - cpu[e])));
      }
    }
    EXPECT_EQ(differ, 0u);
    EXPECT_LE(worst, 2e-5);
  }
  // A bad value in the second GPU's band only: the first GPU, whose values are all fine, writes
  // nothing either (no GPU writes before every band is checked), and the value is named.
  const int rows = 3001, cols = 2999;
  std::vector<float> in = random_levels(static_cast<size_t>(rows) * cols, 16, rng);
  in[17 + static_cast<size_t>(2500) * rows] = 16.0f;  // element (17, 2500)
  std::vector<float> out(in.size(), -7.0f);
  const tuned_entropy_options_t two_gpus{TUNED_ENTROPY_GPU, 2};
  EXPECT_EQ(tuned_entropy_host(rows, cols, 2, 16, in.data(), rows, out.data(), rows, &two_gpus),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("(17, 2500)"), std::string::npos)
      << tuned_last_error();
  EXPECT_EQ(std::count(out.begin(), out.end(), -7.0f), static_cast<std::ptrdiff_t>(out.size()));
}

TEST(Entropy, EveryParameterValuePassesTheCheckWhichCatchesOneWrongElement) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int checked = 0, failed = 0;
  for (const auto& [radius, levels] : std::vector<std::pair<int, int>>{{2, 16}, {7, 256}, {0, 3}, {3, 64}}) {
    const Problem p = packed_problem(301, 203, radius, levels);
    for (const Input input : {Input::kF32, Input::kU8}) {
      EntropyTask task(device, p, input, check);
      task.allocate();
      task.fresh_inputs(3, stream.get());
      // Every value of every parameter at least once: walk the space, keep a config when it
      // brings a value not yet seen.
      std::map<std::string, std::set<int>> seen;
      std::vector<Config> configs;
      task.space().for_each([&](const Config& c) {
        bool fresh = false;
        for (const auto& param : parameters()) fresh |= seen[param.name].insert(c.get(param.name)).second;
        if (fresh) configs.push_back(c);
        return true;
      });
      for (const Config& c : task.seed_configs()) configs.push_back(c);
      for (const Config& c : configs) {
        SCOPED_TRACE(c.canonical() + " r" + std::to_string(radius) + " L" + std::to_string(levels));
        const auto kernel = kernels.get(task.kernel_spec(c), device);
        const MatrixCheck result = task.check(*kernel, c, stream.get());
        ++checked;
        if (!result.passed(task.tolerance())) {
          ++failed;
          ADD_FAILURE() << result.describe();
        }
      }
    }
  }
  std::printf("  %d configs checked, %d failed\n", checked, failed);
  EXPECT_GT(checked, 40);

  // The check itself: one element 2e-5 off the reference fails it; 5e-6 off passes.
  const int rows = 100, cols = 50;
  DeviceBuffer ref(rows * cols * sizeof(float)), out(rows * cols * sizeof(float));
  std::vector<float> values(rows * cols, 1.5f);
  ASSERT_EQ(cudaMemcpy(ref.get(), values.data(), ref.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  for (const auto& [delta, should_pass] : std::vector<std::pair<float, bool>>{{2e-5f, false}, {5e-6f, true}}) {
    values[777] = 1.5f + delta;
    ASSERT_EQ(cudaMemcpy(out.get(), values.data(), out.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    const MatrixCheck r = check.compare(out.as<float>(), rows, ref.as<float>(), rows, rows, cols,
                                        stream.get(), kTolerance);
    EXPECT_EQ(r.passed(kTolerance), should_pass) << r.describe();
    EXPECT_EQ(r.beyond, should_pass ? 0u : 1u);
    EXPECT_NEAR(r.max_abs_error, delta, 1e-6);
  }
}

TEST(Entropy, OutOfRangeValuesAreRefusedWithNothingWritten) {
  TUNED_REQUIRE_GPU();
  const int rows = 300, cols = 200, levels = 16;
  std::mt19937 rng(4);
  for (const float bad : {16.0f, -1.0f, 2.5f, NAN, 1e9f}) {
    SCOPED_TRACE(std::to_string(bad));
    std::vector<float> in = random_levels(static_cast<size_t>(rows) * cols, levels, rng);
    in[123 + 77 * rows] = bad;  // element (123, 77)
    float *d_in = nullptr, *d_out = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_in), in.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), in.size() * 4), cudaSuccess);
    cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0xFF, in.size() * 4);
    EXPECT_EQ(tuned_entropy(rows, cols, 2, levels, d_in, rows, d_out, rows, nullptr),
              TUNED_STATUS_INVALID_ARGUMENT);
    const std::string message = tuned_last_error();
    EXPECT_NE(message.find("(123, 77)"), std::string::npos) << message;
    EXPECT_NE(message.find("[0, levels = 16)"), std::string::npos) << message;
    std::vector<uint32_t> out(in.size());
    cudaMemcpy(out.data(), d_out, in.size() * 4, cudaMemcpyDeviceToHost);
    size_t written = 0;
    for (uint32_t bits : out) written += bits != 0xFFFFFFFFu;
    EXPECT_EQ(written, 0u);
    cudaFree(d_in);
    cudaFree(d_out);
    // The host path, both ways: nothing written either.
    for (const tuned_entropy_path_t path : {TUNED_ENTROPY_GPU, TUNED_ENTROPY_CPU}) {
      std::vector<float> host_out(in.size(), -7.0f);
      const tuned_entropy_options_t options{path, 1};
      EXPECT_EQ(tuned_entropy_host(rows, cols, 2, levels, in.data(), rows, host_out.data(), rows,
                                   &options),
                TUNED_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(tuned_last_error()).find("(123, 77)"), std::string::npos)
          << tuned_last_error();
      EXPECT_EQ(std::count(host_out.begin(), host_out.end(), -7.0f),
                static_cast<std::ptrdiff_t>(host_out.size()));
    }
  }
  // A byte at the level count.
  std::vector<uint8_t> in8(static_cast<size_t>(rows) * cols, 3);
  in8[5 + 9 * rows] = 16;
  std::vector<float> out8(in8.size(), -7.0f);
  EXPECT_EQ(tuned_entropy_host_u8(rows, cols, 2, levels, in8.data(), rows, out8.data(), rows, nullptr),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("(5, 9)"), std::string::npos) << tuned_last_error();
}

TEST(Entropy, BadArgumentsAreNamed) {
  TUNED_REQUIRE_GPU();
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 4096 * sizeof(float)), cudaSuccess);
  struct Bad {
    int rows, cols, radius, levels, ld_in, ld_out;
    bool null_in, same_buffer;
    const char* names;
  };
  for (const Bad& b : {Bad{-1, 4, 2, 16, 1, 1, false, false, "rows"},
                       Bad{4, -3, 2, 16, 4, 4, false, false, "cols"},
                       Bad{4, 4, 8, 16, 4, 4, false, false, "radius"},
                       Bad{4, 4, -1, 16, 4, 4, false, false, "radius"},
                       Bad{4, 4, 2, 1, 4, 4, false, false, "levels"},
                       Bad{4, 4, 2, 257, 4, 4, false, false, "levels"},
                       Bad{8, 4, 2, 16, 7, 8, false, false, "ld_in"},
                       Bad{8, 4, 2, 16, 8, 5, false, false, "ld_out"},
                       Bad{8, 4, 2, 16, 8, 8, true, false, "in"},
                       Bad{8, 4, 2, 16, 8, 8, false, true, "out"}}) {
    SCOPED_TRACE(b.names);
    const float* in = b.null_in ? nullptr : d;
    float* out = b.same_buffer ? d + 4 : d + 2048;
    EXPECT_EQ(tuned_entropy(b.rows, b.cols, b.radius, b.levels, in, b.ld_in, out, b.ld_out, nullptr),
              TUNED_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(tuned_last_error()).rfind(b.names, 0), 0u) << tuned_last_error();
  }
  const tuned_entropy_options_t too_many{TUNED_ENTROPY_GPU, 64};
  std::vector<float> h(16, 1.0f), o(16);
  EXPECT_EQ(tuned_entropy_host(4, 4, 1, 16, h.data(), 4, o.data(), 4, &too_many),
            TUNED_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tuned_last_error()).find("gpus"), std::string::npos) << tuned_last_error();
  cudaFree(d);
}

}  // namespace
}  // namespace tuned::entropy_op
