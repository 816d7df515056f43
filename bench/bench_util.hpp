// Shared by the GEMM benchmarks: device buffers with random operands, side-by-side timing of two
// callables (alternating batches, events, median), result checks against cuBLAS, and small JSON
// and table helpers.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_raii.hpp"
#include "core/device_info.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_reference.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::bench {

/// One benchmark problem: layout and shape (column-major, cuBLAS conventions), and for a strided
/// batch the number of products.
struct Shape {
  std::string layout;
  int64_t m, n, k;
  int64_t batch = 1;
  std::string text() const;  // "4096x4096x4096", a batch "2048x64x2048x96"
  double gflop() const {
    return 2e-9 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
           static_cast<double>(batch);
  }
};

/// The bytes a product's operands take to read once and write once (A, B and C; beta = 0): what
/// a memory-bound product (a decode step's matrix-vector) cannot take less time than to move.
inline double operand_bytes(const Shape& s) {
  return 4.0 *
         (static_cast<double>(s.m) * s.k + static_cast<double>(s.k) * s.n +
          static_cast<double>(s.m) * s.n) *
         static_cast<double>(s.batch);
}

/// The device's copy bandwidth now, bytes read plus bytes written per second in GB/s: the median
/// of device-to-device copies of `bytes` (large enough to leave the L2), timed with events.
double copy_gbps(cudaStream_t stream, size_t bytes = size_t{1} << 30);

/// "LAYOUT:MxNxK" (NN:1000x1000x1000) as a Shape; throws Error(TUNED_STATUS_INVALID_ARGUMENT)
/// naming --shape and the rule (a layout of N and T, three positive sizes).
Shape parse_layout_shape(const std::string& text);

/// "Large" products of the benchmarks' reports: above 1 GFLOP (2mnk > 1e9).
inline constexpr double kLargeGflop = 1.0;

/// Operands of one problem on the device, random in [-1, 1), plus the cuBLAS result.
class GemmOperands {
 public:
  GemmOperands(const gemm_op::Problem& problem, DeviceCheck& check, cudaStream_t stream);
  const float* a() const { return a_.as<float>(); }
  const float* b() const { return b_.as<float>(); }
  float* c() const { return c_.as<float>(); }
  float* c_ref() const { return c_ref_.as<float>(); }
  size_t c_elements() const { return c_.bytes() / sizeof(float); }

 private:
  DeviceBuffer a_, b_, c_, c_ref_;
};

/// Per-call milliseconds of two callables timed side by side: batches of calls between events
/// (batch long enough to hide event resolution), alternating first/second, median over rounds.
struct PairTiming {
  double first_ms = 0, second_ms = 0;
};
PairTiming time_side_by_side(const std::function<void(cudaStream_t)>& first,
                             const std::function<void(cudaStream_t)>& second,
                             cudaStream_t stream, int rounds = 9);

/// What every GEMM benchmark does per problem: C poisoned, one call of each, tuned's result checked
/// against cuBLAS's (into ops.c_ref()), both results measured against an FP64 product of the same
/// inputs at a sample of C (the accuracy contract of issue 28), then both timed side by side.
struct Comparison {
  double rel_error = 0;  // tuned's C against cuBLAS's (DeviceCheck::compare)
  bool correct = false;
  // Normwise errors against the FP64 sample (gemm_op::Fp64Sample::error), and whether tuned's is
  // within gemm_op::contract_limit of cuBLAS's: the contract every config the library picks keeps.
  double err_tuned = 0, err_cublas = 0;
  bool within_contract = false;
  double tuned_ms = 0, cublas_ms = 0;
};
/// exact: its compute() runs here, once, on ops' operands (alpha 1, beta 0, as both calls use).
Comparison compare_with_cublas(const std::function<void(cudaStream_t)>& tuned_call,
                               const std::function<void(cudaStream_t)>& cublas_call,
                               const gemm_op::Problem& p, const GemmOperands& ops,
                               DeviceCheck& check, gemm_op::Fp64Sample& exact,
                               cudaStream_t stream);

/// Throws Error(status, tuned_last_error()) unless status is TUNED_STATUS_SUCCESS.
void check_status(tuned_status_t status);

/// A fresh empty directory holding a database path; removed (with SQLite's side files) when done.
/// prefix names the directory under the temporary folder.
class TempDatabase {
 public:
  explicit TempDatabase(const std::string& prefix = "tuned_bench");
  ~TempDatabase();
  TempDatabase(const TempDatabase&) = delete;
  TempDatabase& operator=(const TempDatabase&) = delete;
  std::string path() const { return (dir_ / "tuned.db").string(); }

 private:
  std::filesystem::path dir_;
};

/// tuned_gemm (the public C API) and cuBLAS on one problem's operands, alpha = 1 and beta = 0: the
/// pair every GEMM benchmark checks and times.
class TunedGemmCalls {
 public:
  TunedGemmCalls(const gemm_op::Problem& p, const GemmOperands& ops, gemm_op::CublasHandle& cublas)
      : p_(p), ops_(ops), cublas_(cublas) {}
  void tuned(cudaStream_t stream) const;   // into ops.c()
  void cublas(cudaStream_t stream) const;  // into ops.c_ref()
  std::string describe() const;            // tuned_gemm_describe's text for the call
  /// describe()'s "origin: config" split in two (config empty where there is no ": ").
  std::pair<std::string, std::string> origin_and_config() const;
  /// Wall ms of one tuned call from an idle device to its end: with first-use tuning on, the
  /// first call of a shape, which tunes (timed before describe, so describe reports its record).
  double time_one_call(cudaStream_t stream) const;
  /// compare_with_cublas of the two.
  Comparison compare(DeviceCheck& check, gemm_op::Fp64Sample& exact, cudaStream_t stream) const;

 private:
  const gemm_op::Problem& p_;
  const GemmOperands& ops_;
  gemm_op::CublasHandle& cublas_;
};

/// What every tuned_gemm-against-cuBLAS benchmark sets up once: the library's tuning mode
/// (first-use only when asked, never inherited from the environment), the database tuned_gemm
/// reads (a fresh empty one of our own for shipped data only or first-use tuning, else db, else the
/// user's), and on the device its checks, the FP64 reference, a cuBLAS handle and a stream.
struct GemmBenchSetup {
  GemmBenchSetup(int device_index, const std::string& db, bool fresh_db, bool first_use,
                 const std::string& prefix);
  /// "fresh empty", "default" or the database's path, for the header line.
  std::string database_text() const;

  std::string mode;  // "first-use", "shipped" (fresh database) or "db"
  DeviceInfo device;
  std::optional<TempDatabase> fresh_db;
  std::string db_used;
  KernelCache kernels;
  DeviceCheck check;
  gemm_op::Fp64Sample exact;
  gemm_op::CublasHandle cublas;
  Stream stream;
  int cublas_version = 0;
};

double tflops(const gemm_op::Problem& p, double ms);
double geometric_mean(const std::vector<double>& values);
double median(std::vector<double> values);  // NaN when empty
std::string json_escape(const std::string& s);
/// A JSON number, or null where the value is missing or not finite (an error of +Inf).
std::string json_number(double v);
std::string json_number(const std::optional<double>& v);
/// "12.3", or "-" where missing: milliseconds in a table.
std::string optional_ms(const std::optional<double>& v);
double elapsed_ms(std::chrono::steady_clock::time_point since);
/// The rows whose error against the FP64 product is beyond the accuracy contract, one a line
/// (nothing when there are none).
void print_contract_violations(const std::vector<std::string>& violations);

}  // namespace tuned::bench
