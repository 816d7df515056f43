// tuned_transpose against a device-to-device copy of the same bytes, timed side by side in one
// process: square sizes 1024^2 to 16384^2 and odd shapes. Every result is checked exactly
// (element by element on the host). Writes bench/results/transpose_<device>.json:
// {"device", "rows": [{"rows", "cols", "gbps", "copy_gbps", "ratio", "config"}]}, where GB/s
// counts the bytes read and written (2 x 4 x rows x cols) and ratio = gbps / copy_gbps.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tuned/tuned.h"

namespace {

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    const cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                  \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

template <typename Run>
double median_ms(Run run, int runs) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  run();  // warm-up
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  long long rows, cols;
  double gbps, copy_gbps, ratio;
  std::string config;
  bool exact;
};

Row run_shape(long long rows, long long cols) {
  const size_t n = static_cast<size_t>(rows) * cols, bytes = n * sizeof(float);
  std::vector<float> host(n), back(n);
  std::mt19937 rng(static_cast<unsigned>(rows * 31 + cols));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto& x : host) x = uniform(rng);
  float *a, *b, *copy;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&a), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&b), bytes));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&copy), bytes));
  CHECK_CUDA(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(b, 0xFF, bytes));  // poisoned: every element must be written
  const int r = static_cast<int>(rows), c = static_cast<int>(cols);
  auto transpose = [&] {
    if (tuned_transpose(r, c, a, r, b, c, nullptr) != TUNED_STATUS_SUCCESS) {
      std::fprintf(stderr, "tuned_transpose: %s\n", tuned_last_error());
      std::exit(1);
    }
  };
  transpose();
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDeviceToHost));
  bool exact = true;
  for (long long j = 0; j < cols && exact; ++j) {
    for (long long i = 0; i < rows; ++i) {
      if (back[j + i * cols] != host[i + j * rows]) {
        exact = false;
        break;
      }
    }
  }
  auto copy_once = [&] { CHECK_CUDA(cudaMemcpyAsync(copy, a, bytes, cudaMemcpyDeviceToDevice)); };
  const int runs = std::clamp(static_cast<int>(2e9 / std::max<size_t>(bytes, 1)), 10, 200);
  // Alternating rounds; the best median of each side.
  double t_ms = 1e30, c_ms = 1e30;
  for (int round = 0; round < 3; ++round) {
    t_ms = std::min(t_ms, median_ms(transpose, runs));
    c_ms = std::min(c_ms, median_ms(copy_once, runs));
  }
  char text[512] = "";
  tuned_transpose_describe(r, c, a, r, b, c, text, sizeof text);
  cudaFree(a);
  cudaFree(b);
  cudaFree(copy);
  Row row;
  row.rows = rows;
  row.cols = cols;
  row.gbps = 2.0 * bytes / (t_ms * 1e6);
  row.copy_gbps = 2.0 * bytes / (c_ms * 1e6);
  row.ratio = row.gbps / row.copy_gbps;
  row.config = text;
  row.exact = exact;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned_transpose against a device-to-device copy of the same bytes"};
  std::string json_path;
  app.add_option("--json", json_path, "write the results here");
  CLI11_PARSE(app, argc, argv);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "transpose_vs_copy: no CUDA device\n");
    return 1;
  }
  const std::vector<std::pair<long long, long long>> shapes = {
      {1024, 1024}, {2048, 2048}, {4096, 4096}, {8192, 8192}, {16384, 16384},
      {1000, 1000}, {4097, 4097}, {1, 4097},    {4097, 3},    {16384, 1023}, {333, 77777}};
  std::printf("%-12s %10s %10s %7s  %s\n", "shape", "GB/s", "copy GB/s", "ratio", "config");
  std::vector<Row> rows;
  bool all_exact = true;
  for (auto [r, c] : shapes) {
    const Row row = run_shape(r, c);
    all_exact = all_exact && row.exact;
    std::printf("%5lldx%-6lld %10.1f %10.1f %7.3f  %s%s\n", row.rows, row.cols, row.gbps,
                row.copy_gbps, row.ratio, row.config.c_str(), row.exact ? "" : "  WRONG");
    rows.push_back(row);
  }
  std::printf("%s on %s\n", all_exact ? "ALL EXACT" : "SOME WRONG", prop.name);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\"device\": \"" << prop.name << "\", \"rows\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << (i ? ", " : "") << "{\"rows\": " << r.rows << ", \"cols\": " << r.cols
          << ", \"gbps\": " << r.gbps << ", \"copy_gbps\": " << r.copy_gbps
          << ", \"ratio\": " << r.ratio << ", \"exact\": " << (r.exact ? "true" : "false")
          << ", \"config\": \"" << r.config << "\"}";
    }
    out << "]}\n";
  }
  return all_exact ? 0 : 1;
}
