// runtime_soak: host memory of a process that meets new GEMM shapes for ever (an inference server
// whose token counts vary). Threads call tuned_gemm on distinct random shapes; the resident set
// size is sampled as calls go. The runtime's memo is bounded (Runtime::kMemoCapacity), so after
// it fills the growth per new shape should be about zero. It links libtuned alone (no cuBLAS), as
// a program that only calls tuned_gemm does.
//   runtime_soak [--calls N] [--threads T] [--out FILE.json]
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tuned/tuned.h"

namespace {

// A number for JSON (null where not finite).
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// Resident set size in bytes, from /proc/self/statm.
double rss_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Host memory of tuned_gemm over distinct shapes");
  long long calls = 1000000;
  int threads = 6;
  std::string out;
  app.add_option("--calls", calls, "calls in all, each on a shape not seen before")
      ->check(CLI::Range(1000LL, 100000000LL));
  app.add_option("--threads", threads, "calling threads")->check(CLI::Range(1, 64));
  app.add_option("--out", out, "write the result as JSON here");
  CLI11_PARSE(app, argc, argv);

  // Shapes m x n x k with m in 1..4000, n in 1..64, k in 1..16: about 4 M distinct products, each
  // tiny, so the run measures the runtime and not the GPU. Buffers sized for the largest.
  const int max_m = 4000, max_n = 64, max_k = 16;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&a), sizeof(float) * max_m * max_k) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&b), sizeof(float) * max_k * max_n) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&c), sizeof(float) * max_m * max_n) != cudaSuccess) {
    std::fprintf(stderr, "runtime_soak: no CUDA device or no memory\n");
    return 2;
  }
  const float alpha = 1, beta = 0;
  // Warm-up: the context, the library's tables, a few kernels.
  for (int i = 1; i <= 64; ++i) {
    if (tuned_gemm(TUNED_OP_N, TUNED_OP_N, i, i % 8 + 1, 8, &alpha, a, i, b, 8, &beta, c, i,
                   nullptr) != TUNED_STATUS_SUCCESS) {
      std::fprintf(stderr, "runtime_soak: tuned_gemm failed: %s\n", tuned_last_error());
      return 1;
    }
  }
  cudaDeviceSynchronize();
  const double rss_start = rss_bytes();

  std::atomic<long long> next{0}, failures{0};
  std::mutex samples_mutex;
  std::vector<std::pair<long long, double>> samples;  // (calls done, rss)
  const long long sample_every = std::max(1LL, calls / 50);
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      cudaStream_t stream;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      for (long long i; (i = next.fetch_add(1)) < calls;) {
        // A distinct shape per call: i enumerates (m, n, k) without repeats.
        const int m = static_cast<int>(i % max_m) + 1;
        const int n = static_cast<int>((i / max_m) % max_n) + 1;
        const int k = static_cast<int>((i / (max_m * max_n)) % max_k) + 1;
        if (tuned_gemm(TUNED_OP_N, TUNED_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m, stream) !=
            TUNED_STATUS_SUCCESS) {
          ++failures;
        }
        if ((i + 1) % sample_every == 0) {
          cudaStreamSynchronize(stream);
          std::lock_guard<std::mutex> lock(samples_mutex);
          samples.emplace_back(i + 1, rss_bytes());
          std::fprintf(stderr, "\r%lld calls, rss %.0f MB", i + 1, samples.back().second / 1e6);
        }
      }
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
      (void)t;
    });
  }
  for (auto& w : workers) w.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double rss_end = rss_bytes();
  std::fprintf(stderr, "\n");
  std::sort(samples.begin(), samples.end());
  // Growth per shape over the second half of the run, after the memo filled.
  double growth = 0;
  if (samples.size() >= 4) {
    const auto& half = samples[samples.size() / 2];
    const auto& last = samples.back();
    growth = (last.second - half.second) / static_cast<double>(last.first - half.first);
  }
  double peak = rss_start;
  for (const auto& s : samples) peak = std::max(peak, s.second);
  char device[256] = "unknown";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    std::snprintf(device, sizeof device, "%s", prop.name);
  std::printf("device %s\ncalls %lld on distinct shapes, %d threads, %.1f s, %lld failures\n",
              device, calls, threads, seconds, failures.load());
  std::printf("rss: after warm-up %.1f MB, peak %.1f MB, end %.1f MB\n", rss_start / 1e6,
              peak / 1e6, rss_end / 1e6);
  std::printf("growth per new shape over the second half: %.1f bytes\n", growth);
  if (!out.empty()) {
    std::ofstream json(out);
    std::string name = device;  // a GPU's name: letters, digits, spaces, dashes
    for (char& ch : name) ch = (ch == '"' || ch == '\\' || ch < 0x20) ? '?' : ch;
    json << "{\n  \"device\": \"" << name << "\",\n  \"calls\": " << calls
         << ",\n  \"threads\": " << threads << ",\n  \"seconds\": " << json_number(seconds)
         << ",\n  \"failures\": " << failures.load()
         << ",\n  \"rss_after_warmup_mb\": " << json_number(rss_start / 1e6)
         << ",\n  \"rss_peak_mb\": " << json_number(peak / 1e6)
         << ",\n  \"rss_end_mb\": " << json_number(rss_end / 1e6)
         << ",\n  \"growth_bytes_per_shape_second_half\": " << json_number(growth)
         << ",\n  \"samples\": [";
    for (size_t i = 0; i < samples.size(); ++i) {
      json << (i ? ", " : "") << "[" << samples[i].first << ", "
           << json_number(samples[i].second / 1e6) << "]";
    }
    json << "]\n}\n";
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return failures.load() == 0 ? 0 : 1;
}
