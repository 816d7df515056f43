// gemm_call_overhead: what one tuned_gemm call costs where the kernel itself is negligible (tiny
// shapes), against cuBLAS and a bare 4-byte cudaMemsetAsync: host microseconds per call (the
// enqueue alone, before any synchronization) and device microseconds per call (events around a
// batch of back-to-back calls). Where the host figure reaches the device figure, calls are
// bound by the CPU, not the GPU. The host cost is broken down: the whole call, the op's launch
// alone (the chosen kernel and config, workspace allocated once: no argument checks, no choice
// lookup, no pool), and one bare cudaLaunchKernel of that kernel with its arguments ready (its
// device time too: the kernel back to back with nothing else; 0 where the config pre-transposes
// B, whose launch needs the transpose op as well).
// With --shape (repeatable) it measures the given shapes instead, and --db uses a database of the
// caller's (tuned picks) instead of a fresh one: the device column then tells whether a shape's
// back-to-back calls run at the kernel's own pace (tuned dev == bare dev) or lose time per call.
//   gemm_call_overhead [--device N] [--calls N] [--shape LAYOUT:MxNxK]... [--db PATH]
#include <cublas_v2.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "core/cuda_check.hpp"
#include "generator/device.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;
using Clock = std::chrono::steady_clock;

struct PerCall {
  double host_us = 0, device_us = 0;
};

// Host time to enqueue `calls` calls, then device time of the whole batch (median of 5 batches).
PerCall per_call(const std::function<void(cudaStream_t)>& call, cudaStream_t stream, int calls) {
  for (int i = 0; i < 50; ++i) call(stream);  // warm: choices memoized, pools grown
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> host, device;
  for (int batch = 0; batch < 5; ++batch) {
    Event start = Event::create(), stop = Event::create();
    start.record(stream);
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call(stream);
    const auto t1 = Clock::now();
    stop.record(stream);
    host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    device.push_back(stop.elapsed_since(start) * 1000.0 / calls);
  }
  std::sort(host.begin(), host.end());
  std::sort(device.begin(), device.end());
  return {host[2], device[2]};
}

struct LaunchCosts {
  PerCall op, bare;
};

// The chosen kernel through the op's launch (workspace allocated once), then one bare
// cudaLaunchKernel of it with its arguments ready.
LaunchCosts time_launches(KernelCache& kernels, const DeviceInfo& device, const Config& config,
                          const gemm_op::Problem& p, const GemmOperands& ops, const Stream& stream,
                          int calls) {
  LaunchCosts costs;
  const auto kernel = kernels.get(gemm_op::kernel_spec(config, p), device);
  DeviceBuffer workspace(gemm_op::workspace_bytes(config, p));
  float alpha = 1.0f, beta = 0.0f;
  costs.op = per_call(
      [&](cudaStream_t s) {
        gemm_op::launch(*kernel, config, p, alpha, ops.a(), ops.b(), beta, ops.c(), workspace.get(),
                        s, nullptr);
      },
      stream.get(), calls);
  int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  int lda = static_cast<int>(p.lda), ldb = static_cast<int>(p.ldb);
  int ldc = static_cast<int>(p.ldc);
  const float* a = ops.a();
  const float* b = ops.b();
  float* cp = ops.c();
  float* ws = workspace.as<float>();
  int split_mode = 0, tail_first = 0, tail_splits = 1;
  void* args[] = {&m,    &n,  &k,   &alpha, &a,          &lda,        &b,          &ldb,
                  &beta, &cp, &ldc, &ws,    &split_mode, &tail_first, &tail_splits};
  const LaunchGeometry geometry = gemm_op::geometry(config, p);
  costs.bare =
      per_call([&](cudaStream_t s) { kernel->launch(geometry, args, s); }, stream.get(), calls);
  return costs;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned_gemm's per-call cost on tiny shapes, against cuBLAS"};
  int device_index = 0, calls = 2000;
  std::vector<std::string> shape_texts;
  std::string db_path;
  app.add_option("--device", device_index, "CUDA device index");
  app.add_option("--calls", calls, "calls per timed batch")->check(CLI::Range(10, 1000000));
  app.add_option("--shape", shape_texts, "LAYOUT:MxNxK to measure instead of the tiny shapes");
  app.add_option("--db", db_path, "tuning database to use instead of a fresh empty one");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Shape> shapes = {{"NN", 1, 5, 15},   {"NN", 3, 2, 10},   {"TN", 5, 2, 2},
                                 {"NN", 64, 64, 64}, {"TT", 24, 31, 77}, {"NT", 300, 200, 100},
                                 {"NN", 2, 199, 807}};
    if (!shape_texts.empty()) shapes.clear();
    for (const std::string& text : shape_texts) shapes.push_back(parse_layout_shape(text));
    // Without --db, a fresh empty database: the shipped data decides, as for a new user.
    const TempDatabase fresh("gemm_call_overhead");
    check_status(tuned_set_database(db_path.empty() ? fresh.path().c_str() : db_path.c_str()));
    const DeviceInfo device = query_device(device_index);
    TUNED_CUDA_CHECK(cudaSetDevice(device_index));
    KernelCache kernels;
    DeviceCheck check(kernels, device);
    gemm_op::CublasHandle cublas;
    Stream stream = Stream::create();
    cublas.set_stream(stream.get());
    DeviceBuffer scratch(4);
    const PerCall memset = per_call(
        [&](cudaStream_t s) { TUNED_CUDA_CHECK(cudaMemsetAsync(scratch.get(), 0, 4, s)); },
        stream.get(), calls);
    std::printf("gemm_call_overhead on %s: microseconds per call, %d calls per batch\n",
                device.name.c_str(), calls);
    std::printf("bare cudaMemsetAsync: host %.2f, device %.2f\n", memset.host_us, memset.device_us);
    std::printf("%-6s %-14s %10s %10s %10s %10s %10s %10s %10s  %s\n", "layout", "shape",
                "tuned host", "tuned dev", "op launch", "bare", "bare dev", "cuBLAS host",
                "cuBLAS dev", "tuned's choice");
    for (const Shape& shape : shapes) {
      const gemm_op::Problem p = gemm_op::packed_problem(shape.layout, shape.m, shape.n, shape.k);
      GemmOperands ops(p, check, stream.get());
      const TunedGemmCalls gemm(p, ops, cublas);
      const PerCall t = per_call([&](cudaStream_t s) { gemm.tuned(s); }, stream.get(), calls);
      const PerCall c = per_call([&](cudaStream_t s) { gemm.cublas(s); }, stream.get(), calls);
      // The same kernel through the op's launch, and bare; not for a config that pre-transposes
      // B (its launch needs the transpose op's kernel too, which a bare launch leaves out).
      const std::string choice = gemm.describe();
      // "ORIGIN: CONFIG (math: ...)"
      const size_t from = choice.find(": ") + 2;
      const Config config =
          read_config(choice.substr(from, choice.find(' ', from) - from), gemm_op::parameters());
      PerCall op, bare;
      if (config.get("PRETB") == 0) {
        const LaunchCosts launches = time_launches(kernels, device, config, p, ops, stream, calls);
        op = launches.op;
        bare = launches.bare;
      }
      std::printf("%-6s %-14s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f  %s\n",
                  shape.layout.c_str(), shape.text().c_str(), t.host_us, t.device_us, op.host_us,
                  bare.host_us, bare.device_us, c.host_us, c.device_us, choice.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_call_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
