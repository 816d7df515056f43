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

// Shapes m x n x k with m in 1..4000, n in 1..64, k in 1..16: about 4 M distinct products, each
// tiny, so the run measures the runtime and not the GPU. Buffers sized for the largest.
constexpr int kMaxM = 4000, kMaxN = 64, kMaxK = 16;

struct Buffers {
  float *a = nullptr, *b = nullptr, *c = nullptr;
};

bool allocate(Buffers& buffers) {
  auto allocate_floats = [](float** p, size_t count) {
    return cudaMalloc(reinterpret_cast<void**>(p), sizeof(float) * count) == cudaSuccess;
  };
  return allocate_floats(&buffers.a, size_t{kMaxM} * kMaxK) &&
         allocate_floats(&buffers.b, size_t{kMaxK} * kMaxN) &&
         allocate_floats(&buffers.c, size_t{kMaxM} * kMaxN);
}

const float kAlpha = 1, kBeta = 0;

// Warm-up: the context, the library's tables, a few kernels.
bool warm_up(const Buffers& buffers) {
  for (int i = 1; i <= 64; ++i) {
    if (tuned_gemm(TUNED_OP_N, TUNED_OP_N, i, i % 8 + 1, 8, &kAlpha, buffers.a, i, buffers.b, 8,
                   &kBeta, buffers.c, i, nullptr) != TUNED_STATUS_SUCCESS) {
      std::fprintf(stderr, "runtime_soak: tuned_gemm failed: %s\n", tuned_last_error());
      return false;
    }
  }
  return true;
}

struct SoakResult {
  double seconds = 0, rss_end = 0;
  long long failures = 0;
  std::vector<std::pair<long long, double>> samples;  // (calls done, rss), sorted
};

// The threads' calls, each on a shape not seen before, sampling the resident set size as they go.
SoakResult soak(const Buffers& buffers, long long calls, int threads) {
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
        const int m = static_cast<int>(i % kMaxM) + 1;
        const int n = static_cast<int>((i / kMaxM) % kMaxN) + 1;
        const int k = static_cast<int>((i / (kMaxM * kMaxN)) % kMaxK) + 1;
        if (tuned_gemm(TUNED_OP_N, TUNED_OP_N, m, n, k, &kAlpha, buffers.a, m, buffers.b, k, &kBeta,
                       buffers.c, m, stream) != TUNED_STATUS_SUCCESS) {
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
  SoakResult result;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.rss_end = rss_bytes();
  std::fprintf(stderr, "\n");
  std::sort(samples.begin(), samples.end());
  result.failures = failures.load();
  result.samples = std::move(samples);
  return result;
}

// Growth per shape over the second half of the run, after the memo filled.
double growth_per_shape(const std::vector<std::pair<long long, double>>& samples) {
  double growth = 0;
  if (samples.size() >= 4) {
    const auto& half = samples[samples.size() / 2];
    const auto& last = samples.back();
    growth = (last.second - half.second) / static_cast<double>(last.first - half.first);
  }
  return growth;
}

std::string device_name() {
  char device[256] = "unknown";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    std::snprintf(device, sizeof device, "%s", prop.name);
  return device;
}

struct Summary {
  std::string device;
  long long calls = 0;
  int threads = 0;
  double rss_start = 0, peak = 0, growth = 0;
};

void write_json(const std::string& out, const Summary& summary, const SoakResult& result) {
  std::ofstream json(out);
  std::string name = summary.device;  // a GPU's name: letters, digits, spaces, dashes
  for (char& ch : name) ch = (ch == '"' || ch == '\\' || ch < 0x20) ? '?' : ch;
  json << "{\n  \"device\": \"" << name << "\",\n  \"calls\": " << summary.calls
       << ",\n  \"threads\": " << summary.threads
       << ",\n  \"seconds\": " << json_number(result.seconds)
       << ",\n  \"failures\": " << result.failures
       << ",\n  \"rss_after_warmup_mb\": " << json_number(summary.rss_start / 1e6)
       << ",\n  \"rss_peak_mb\": " << json_number(summary.peak / 1e6)
       << ",\n  \"rss_end_mb\": " << json_number(result.rss_end / 1e6)
       << ",\n  \"growth_bytes_per_shape_second_half\": " << json_number(summary.growth)
       << ",\n  \"samples\": [";
  const auto& samples = result.samples;
  for (size_t i = 0; i < samples.size(); ++i) {
    json << (i ? ", " : "") << "[" << samples[i].first << ", "
         << json_number(samples[i].second / 1e6) << "]";
  }
  json << "]\n}\n";
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

  Buffers buffers;
  if (!allocate(buffers)) {
    std::fprintf(stderr, "runtime_soak: no CUDA device or no memory\n");
    return 2;
  }
  if (!warm_up(buffers)) return 1;
  cudaDeviceSynchronize();
  Summary summary;
  summary.calls = calls;
  summary.threads = threads;
  summary.rss_start = rss_bytes();

  const SoakResult result = soak(buffers, calls, threads);
  summary.growth = growth_per_shape(result.samples);
  summary.peak = summary.rss_start;
  for (const auto& s : result.samples) summary.peak = std::max(summary.peak, s.second);
  summary.device = device_name();
  std::printf("device %s\ncalls %lld on distinct shapes, %d threads, %.1f s, %lld failures\n",
              summary.device.c_str(), calls, threads, result.seconds, result.failures);
  std::printf("rss: after warm-up %.1f MB, peak %.1f MB, end %.1f MB\n", summary.rss_start / 1e6,
              summary.peak / 1e6, result.rss_end / 1e6);
  std::printf("growth per new shape over the second half: %.1f bytes\n", summary.growth);
  if (!out.empty()) write_json(out, summary, result);
  cudaFree(buffers.a);
  cudaFree(buffers.b);
  cudaFree(buffers.c);
  return result.failures == 0 ? 0 : 1;
}
