// Local entropy on 1 GPU, on 2 GPUs (where the machine has them) and on the CPU, sizes 400^2,
// 2560^2, 10240^2 (r = 2, L = 16, FP32 input; more with --shape): the kernel's time on device data
// (the tuned kernel alone, events around its launch), the device call's time (the values checked
// on the device, then the kernel), and the end-to-end time from pageable host input to host output
// (wall clock, median of runs after a warm-up), next to plain pageable copies around the same call
// for scale. The split is judged on one measure for 1 and 2 GPUs: the host path's kernel time
// (its chunks' kernels summed, on the slower GPU), split_kernel_ms; kernel_ms of a 2-GPU row is
// that too, of a 1-GPU row the single launch on device data. Every result is compared with the CPU path's (itself tested against the
// double-precision reference) and must be within 1e-5.
// Writes bench/results/entropy_<device>.json: {"device", "rows": [{"rows", "cols", "radius",
// "levels", "path", "gpus", "kernel_ms", "end_to_end_ms", ...}]}.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "api/runtime.hpp"
#include "generator/cuda_raii.hpp"
#include "templates/entropy/entropy_face.hpp"
#include "tuned/tuned.hpp"

namespace {

using tuned::entropy_op::Input;
using tuned::entropy_op::Problem;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

template <typename Run>
double wall_ms(Run run, int runs) {
  run();  // warm-up: first-touch, staging buffers, kernel load
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  return median(ms);
}

struct Row {
  int64_t rows, cols;
  int radius, levels;
  std::string path;
  int gpus = 0;
  double kernel_ms = -1, call_ms = -1, end_to_end_ms = -1, plain_copies_ms = -1;
  double split_kernel_ms = -1;  // the host path's kernels, summed over chunks, slowest GPU
  double max_abs_diff = 0;
  std::string config;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
  }
  return worst;
}

// The tuned kernel alone on device data: the runtime's choice, events around its launch only.
double kernel_ms(const Problem& p, const float* in, float* out, int runs, std::string* config) {
  const auto& op = tuned::find_op("entropy");
  const tuned::ProblemId id = tuned::entropy_op::problem_id(p, Input::kF32);
  tuned::Stream stream = tuned::Stream::create();
  std::vector<double> ms;
  for (int r = 0; r <= runs; ++r) {
    tuned::Runtime::instance().run(
        op, id,
        [&](const tuned::LoadedKernel& kernel, const tuned::Config& c, void* workspace,
            cudaStream_t s) {
          tuned::Event start = tuned::Event::create(), stop = tuned::Event::create();
          start.record(s);
          tuned::entropy_op::launch(kernel, c, p, in, out, workspace, s);
          stop.record(s);
          if (r > 0) ms.push_back(stop.elapsed_since(start));  // run 0 warms up
          *config = c.canonical();
        },
        stream.get());
  }
  stream.synchronize();
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Local entropy: 1 GPU, 2 GPUs, CPU; kernel and end-to-end times"};
  std::vector<int64_t> sizes = {400, 2560, 10240};
  int radius = 2, levels = 16, runs = 10;
  std::string json;
  app.add_option("--sizes", sizes, "square sizes");
  app.add_option("--radius", radius);
  app.add_option("--levels", levels);
  app.add_option("--runs", runs, "timed runs per measurement (median)");
  app.add_option("--json", json, "write the results here");
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "entropy bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::vector<Row> rows;
  std::mt19937 rng(2026);
  for (const int64_t n : sizes) {
    Problem p = tuned::entropy_op::packed_problem(n, n, radius, levels);
    const size_t elements = static_cast<size_t>(n) * static_cast<size_t>(n);
    std::vector<float> in(elements), cpu_out(elements), gpu_out(elements);
    std::uniform_int_distribution<int> level(0, levels - 1);
    for (auto& x : in) x = static_cast<float>(level(rng));
    const int cpu_runs = n >= 10240 ? 3 : runs;

    // CPU path.
    Row cpu{n, n, radius, levels, "cpu", 0};
    tuned::EntropyReport report;
    tuned::EntropyOptions cpu_options;
    cpu_options.path = tuned::EntropyPath::kCpu;
    cpu.end_to_end_ms = wall_ms(
        [&] {
          tuned::entropy_host(n, n, radius, levels, in.data(), n, cpu_out.data(), n, cpu_options,
                              &report);
        },
        cpu_runs);
    cpu.config = report.path;
    rows.push_back(cpu);

    // 1 GPU on device data: the kernel alone, and the whole call.
    float *d_in = nullptr, *d_out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d_in), elements * sizeof(float));
    cudaMalloc(reinterpret_cast<void**>(&d_out), elements * sizeof(float));
    cudaMemcpy(d_in, in.data(), elements * sizeof(float), cudaMemcpyHostToDevice);
    Row one{n, n, radius, levels, "gpu", 1};
    one.kernel_ms = kernel_ms(p, d_in, d_out, runs, &one.config);
    one.call_ms = wall_ms(
        [&] {
          tuned::entropy(n, n, radius, levels, d_in, n, d_out, n);
          cudaDeviceSynchronize();
        },
        runs);
    // Plain copies: pageable input to the device, the call, pageable output back.
    one.plain_copies_ms = wall_ms(
        [&] {
          cudaMemcpy(d_in, in.data(), elements * sizeof(float), cudaMemcpyHostToDevice);
          tuned::entropy(n, n, radius, levels, d_in, n, d_out, n);
          cudaMemcpy(gpu_out.data(), d_out, elements * sizeof(float), cudaMemcpyDeviceToHost);
        },
        std::min(runs, 5));
    cudaFree(d_in);
    cudaFree(d_out);

    // End to end through the pinned, chunked host path, on 1 and 2 GPUs.
    for (int gpus = 1; gpus <= std::min(devices, 2); ++gpus) {
      tuned::EntropyOptions options;
      options.path = tuned::EntropyPath::kGpu;
      options.gpus = gpus;
      std::fill(gpu_out.begin(), gpu_out.end(), NAN);
      Row row = gpus == 1 ? one : Row{n, n, radius, levels, "gpu", gpus};
      row.end_to_end_ms = wall_ms(
          [&] {
            tuned::entropy_host(n, n, radius, levels, in.data(), n, gpu_out.data(), n, options,
                                &report);
          },
          runs);
      row.split_kernel_ms = report.kernel_ms;  // the same measure for 1 and 2 GPUs
      if (gpus > 1) row.kernel_ms = report.kernel_ms;  // the slowest GPU's share
      row.max_abs_diff = max_abs_diff(gpu_out, cpu_out);
      std::printf("  %s: host path kernel %.3f ms (summed over chunks), packing %.2f ms\n",
                  (std::to_string(n) + "^2 " + std::to_string(gpus) + " GPU").c_str(),
                  report.kernel_ms, report.pack_ms);
      rows.push_back(row);
    }
  }

  std::printf("%-13s %-12s %4s %10s %10s %12s %12s %10s  %s\n", "shape", "path", "gpus",
              "kernel_ms", "call_ms", "end_to_end", "plain_copies", "max_diff", "config");
  bool ok = true;
  for (const Row& r : rows) {
    std::printf("%-13s %-12s %4d %10.3f %10.3f %12.2f %12.2f %10.2g  %s\n",
                (std::to_string(r.rows) + "x" + std::to_string(r.cols)).c_str(), r.path.c_str(),
                r.gpus, r.kernel_ms, r.call_ms, r.end_to_end_ms, r.plain_copies_ms, r.max_abs_diff,
                r.config.c_str());
    ok = ok && r.max_abs_diff <= 1e-5;
  }
  for (const int64_t n : sizes) {
    double k1 = 0, k2 = 0;
    for (const Row& r : rows) {
      if (r.rows == n && r.gpus == 1) k1 = r.split_kernel_ms;
      if (r.rows == n && r.gpus == 2) k2 = r.split_kernel_ms;
    }
    if (k2 > 0) {
      std::printf("%lldx%lld: host path kernels %.3f ms on 1 GPU, %.3f ms on the slower of 2: "
                  "2 GPUs %.2fx the kernel speed of 1\n",
                  static_cast<long long>(n), static_cast<long long>(n), k1, k2, k1 / k2);
    }
  }
  std::printf("%s\n", ok ? "ALL WITHIN 1e-5 OF THE CPU PATH" : "MISMATCH");
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\"device\": \"" << prop.name << "\", \"devices\": " << devices << ", \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      auto num = [](double v) { return v < 0 ? std::string("null") : std::to_string(v); };
      f << "  {\"rows\": " << r.rows << ", \"cols\": " << r.cols << ", \"radius\": " << r.radius
        << ", \"levels\": " << r.levels << ", \"path\": \"" << r.path << "\", \"gpus\": " << r.gpus
        << ", \"kernel_ms\": " << num(r.kernel_ms) << ", \"end_to_end_ms\": "
        << num(r.end_to_end_ms) << ", \"call_ms\": " << num(r.call_ms)
        << ", \"plain_copies_ms\": " << num(r.plain_copies_ms) << ", \"split_kernel_ms\": "
        << num(r.split_kernel_ms) << ", \"max_abs_diff\": "
        << r.max_abs_diff << ", \"config\": \"" << r.config << "\"}"
        << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    f << "]}\n";
  }
  return ok ? 0 : 1;
}
