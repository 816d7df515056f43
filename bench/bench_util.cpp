#include "bench/bench_util.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "core/cuda_check.hpp"
#include "core/problem_key.hpp"
#include "generator/device.hpp"
#include "tuned/error.hpp"

namespace tuned::bench {
namespace {

size_t elements(int64_t ld, int64_t cols) {
  return static_cast<size_t>(ld) * static_cast<size_t>(std::max<int64_t>(cols, 1));
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string json_number(const std::optional<double>& v) { return v ? json_number(*v) : "null"; }

std::string optional_ms(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", *v);
  return buf;
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

void print_contract_violations(const std::vector<std::string>& violations) {
  if (violations.empty()) return;
  std::printf("%zu CONTRACT VIOLATIONS (error against FP64 beyond contract_limit of cuBLAS's):\n",
              violations.size());
  for (const auto& v : violations) std::printf("  %s\n", v.c_str());
}

std::string Shape::text() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
         (batch > 1 ? "x" + std::to_string(batch) : "");
}

Shape parse_layout_shape(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string layout = text.substr(0, colon);
  const auto sizes = colon == std::string::npos
                         ? std::nullopt
                         : parse_shape_string(std::string_view(text).substr(colon + 1));
  if (layout.size() != 2 || layout.find_first_not_of("NT") != std::string::npos || !sizes ||
      sizes->size() != 3 || std::count(sizes->begin(), sizes->end(), 0) > 0) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "--shape '" + text + "': must be LAYOUT:MxNxK (NN:1000x1000x1000)");
  }
  return {layout, (*sizes)[0], (*sizes)[1], (*sizes)[2]};
}

GemmOperands::GemmOperands(const gemm_op::Problem& p, DeviceCheck& check, cudaStream_t stream)
    : a_(elements(p.lda, p.trans_a ? p.m : p.k) * sizeof(float)),
      b_(elements(p.ldb, p.trans_b ? p.k : p.n) * sizeof(float)),
      c_(elements(p.ldc, p.n) * sizeof(float)),
      c_ref_(elements(p.ldc, p.n) * sizeof(float)) {
  check.fill_uniform(a_.as<float>(), a_.bytes() / sizeof(float), 1, -1.0f, 1.0f, stream);
  check.fill_uniform(b_.as<float>(), b_.bytes() / sizeof(float), 2, -1.0f, 1.0f, stream);
}

PairTiming time_side_by_side(const std::function<void(cudaStream_t)>& first,
                             const std::function<void(cudaStream_t)>& second, cudaStream_t stream,
                             int rounds) {
  Event start = Event::create(), stop = Event::create();
  auto timed = [&](const std::function<void(cudaStream_t)>& fn, int reps) {
    start.record(stream);
    for (int r = 0; r < reps; ++r) fn(stream);
    stop.record(stream);
    return stop.elapsed_since(start) / reps;
  };
  // Warm-up (first launch loads the kernel, clocks ramp), then size the batches to >= 2 ms.
  for (int i = 0; i < 3; ++i) {
    first(stream);
    second(stream);
  }
  const double probe = std::max(timed(first, 1), timed(second, 1));
  const int reps = std::clamp(static_cast<int>(std::ceil(2.0 / std::max(probe, 1e-4))), 1, 500);
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      a.push_back(timed(first, reps));
      b.push_back(timed(second, reps));
    } else {
      b.push_back(timed(second, reps));
      a.push_back(timed(first, reps));
    }
  }
  return {median(a), median(b)};
}

Comparison compare_with_cublas(const std::function<void(cudaStream_t)>& tuned_call,
                               const std::function<void(cudaStream_t)>& cublas_call,
                               const gemm_op::Problem& p, const GemmOperands& ops,
                               DeviceCheck& check, gemm_op::Fp64Sample& exact,
                               cudaStream_t stream) {
  Comparison c;
  DeviceCheck::poison(ops.c(), ops.c_elements(), stream);
  tuned_call(stream);
  cublas_call(stream);
  const MatrixCheck result = check.compare(ops.c(), p.ldc, ops.c_ref(), p.ldc, p.m, p.n, stream);
  c.rel_error = result.rel_error;
  c.correct = result.passed(std::max(1e-5, 2e-7 * std::sqrt(static_cast<double>(p.k))));
  // Before the timing: its calls rewrite both Cs with the same values, but the errors belong to
  // the results just checked.
  exact.compute(p, ops.a(), ops.b(), stream);
  c.err_tuned = exact.error(ops.c(), p.ldc, stream);
  c.err_cublas = exact.error(ops.c_ref(), p.ldc, stream);
  c.within_contract = gemm_op::within_contract(c.err_tuned, c.err_cublas);
  const PairTiming t = time_side_by_side(tuned_call, cublas_call, stream);
  c.tuned_ms = t.first_ms;
  c.cublas_ms = t.second_ms;
  return c;
}

void check_status(tuned_status_t status) {
  if (status != TUNED_STATUS_SUCCESS) throw Error(status, tuned_last_error());
}

void TunedGemmCalls::tuned(cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  check_status(tuned_gemm(p_.trans_a ? TUNED_OP_T : TUNED_OP_N, p_.trans_b ? TUNED_OP_T : TUNED_OP_N,
                          static_cast<int>(p_.m), static_cast<int>(p_.n), static_cast<int>(p_.k),
                          &alpha, ops_.a(), static_cast<int>(p_.lda), ops_.b(),
                          static_cast<int>(p_.ldb), &beta, ops_.c(), static_cast<int>(p_.ldc),
                          stream));
}

void TunedGemmCalls::cublas(cudaStream_t) const {
  // On the handle's stream (the caller set it to the benchmark's).
  gemm_op::cublas_sgemm(cublas_.get(), p_, 1.0f, ops_.a(), ops_.b(), 0.0f, ops_.c_ref());
}

std::string TunedGemmCalls::describe() const {
  char text[1024];
  check_status(tuned_gemm_describe(
      p_.trans_a ? TUNED_OP_T : TUNED_OP_N, p_.trans_b ? TUNED_OP_T : TUNED_OP_N,
      static_cast<int>(p_.m), static_cast<int>(p_.n), static_cast<int>(p_.k), ops_.a(),
      static_cast<int>(p_.lda), ops_.b(), static_cast<int>(p_.ldb), ops_.c(),
      static_cast<int>(p_.ldc), text, sizeof text));
  return text;
}

std::pair<std::string, std::string> TunedGemmCalls::origin_and_config() const {
  const std::string text = describe();
  const size_t colon = text.find(": ");
  if (colon == std::string::npos) return {text, ""};
  // "origin: config (math: ...)": the config without the words after it.
  const size_t words = text.find(" (", colon + 2);
  return {text.substr(0, colon), text.substr(colon + 2, words == std::string::npos
                                                            ? std::string::npos
                                                            : words - colon - 2)};
}


double TunedGemmCalls::time_one_call(cudaStream_t stream) const {
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  tuned(stream);
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  return elapsed_ms(start);
}

Comparison TunedGemmCalls::compare(DeviceCheck& check, gemm_op::Fp64Sample& exact,
                                   cudaStream_t stream) const {
  return compare_with_cublas([this](cudaStream_t s) { tuned(s); },
                             [this](cudaStream_t s) { cublas(s); }, p_, ops_, check, exact, stream);
}

namespace {

// Sets TUNED_TUNING before anything reads it: the runtime takes it at its first call.
std::string set_tuning_mode(bool first_use, bool fresh_db) {
  if (first_use) {
    setenv("TUNED_TUNING", "first-use", 1);
  } else {
    unsetenv("TUNED_TUNING");
  }
  return first_use ? "first-use" : fresh_db ? "shipped" : "db";
}

DeviceInfo use_device(int index) {
  TUNED_CUDA_CHECK(cudaSetDevice(index));
  return query_device(index);
}

}  // namespace

GemmBenchSetup::GemmBenchSetup(int device_index, const std::string& db, bool fresh, bool first_use,
                               const std::string& prefix)
    : mode(set_tuning_mode(first_use, fresh || first_use)),
      device(use_device(device_index)),
      db_used(db),
      check(kernels, device),
      exact(check.kernels(), device),
      stream(Stream::create()) {
  if (fresh || first_use) {
    // An empty database of our own: only shipped data (or what first use tunes) decides.
    fresh_db.emplace(prefix);
    db_used = fresh_db->path();
  }
  if (!db_used.empty()) check_status(tuned_set_database(db_used.c_str()));
  cublas.set_stream(stream.get());
  cublasGetVersion(cublas.get(), &cublas_version);
}

std::string GemmBenchSetup::database_text() const {
  return fresh_db ? "fresh empty" : db_used.empty() ? "default" : db_used;
}

double tflops(const gemm_op::Problem& p, double ms) { return ms > 0 ? p.flops() / (ms * 1e9) : 0; }

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::string json_escape(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

TempDatabase::TempDatabase(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "cannot create a temporary directory: " + std::string(std::strerror(errno)));
  }
  dir_ = tmpl;
}

TempDatabase::~TempDatabase() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

double copy_gbps(cudaStream_t stream, size_t bytes) {
  DeviceBuffer from(bytes), to(bytes);
  TUNED_CUDA_CHECK(cudaMemsetAsync(from.get(), 1, bytes, stream));
  cudaEvent_t start, stop;
  TUNED_CUDA_CHECK(cudaEventCreate(&start));
  TUNED_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    TUNED_CUDA_CHECK(cudaEventRecord(start, stream));
    TUNED_CUDA_CHECK(
        cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, stream));
    TUNED_CUDA_CHECK(cudaEventRecord(stop, stream));
    TUNED_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    TUNED_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 2) ms.push_back(t);  // (two warm-ups)
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(bytes) / (median(ms) * 1e6);
}

}  // namespace tuned::bench
