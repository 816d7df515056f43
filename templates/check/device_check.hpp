// Fresh random inputs and output checks on the device, for the tuner and the GPU tests.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda_raii.hpp"
#include "generator/kernel_cache.hpp"

namespace tuned {

/// How an output compares with its reference.
struct MatrixCheck {
  double rel_error = 0;    // ||out - ref||_F / ||ref||_F over written, finite elements
  uint64_t unwritten = 0;  // elements still holding the poison pattern
  uint64_t nonfinite = 0;  // NaN or Inf elements the kernel wrote
  double max_abs_error = 0;  // over written, finite elements
  uint64_t beyond = 0;     // elements further from the reference than the absolute tolerance
  // An op's accuracy contract, where it has one: the error against an exact (higher-precision)
  // reference and the most the contract allows on these inputs (NaN: not checked), and which
  // inputs those were (e.g. "wide-range inputs, k = 65536"; empty: the tuned problem's).
  double exact_error = NAN;
  double exact_limit = NAN;
  std::string exact_inputs;

  /// Written everywhere, finite, and within the tolerances of the comparison.
  bool computes(double tolerance) const {
    return unwritten == 0 && nonfinite == 0 && beyond == 0 && rel_error <= tolerance;
  }
  /// Whether a contract was checked and the error is beyond it (NaN errors break it).
  bool breaks_contract() const {
    return !std::isnan(exact_limit) && !(exact_error <= exact_limit);
  }
  bool passed(double tolerance) const { return computes(tolerance) && !breaks_contract(); }
  /// "rel error 3.1e-07, max abs 2e-06, 0 unwritten, 0 NaN/Inf" (+ ", N beyond ..." when any,
  /// + ", error against the exact product 2e-06 beyond the contract's 1e-06" when broken)
  std::string describe() const;
  /// Folds in another comparison of the same candidate (worst errors, counts summed; a broken
  /// contract wins).
  void add(const MatrixCheck& other) {
    rel_error = std::max(rel_error, other.rel_error);
    max_abs_error = std::max(max_abs_error, other.max_abs_error);
    unwritten += other.unwritten;
    nonfinite += other.nonfinite;
    beyond += other.beyond;
    if (std::isnan(exact_limit) || (other.breaks_contract() && !breaks_contract())) {
      exact_error = other.exact_error;
      exact_limit = other.exact_limit;
      exact_inputs = other.exact_inputs;
    }
  }
};

class DeviceCheck {
 public:
  /// Every byte 0xFF: a NaN no arithmetic produces, so "still poisoned" means "never written".
  static constexpr uint32_t kPoisonBits = 0xFFFFFFFFu;

  DeviceCheck(KernelCache& kernels, const DeviceInfo& device);
  /// The kernels it uses (for building them ahead of time).
  static std::vector<KernelSpec> kernel_specs();

  /// n floats uniform in [lo, hi) from a counter-based generator: the same seed gives the same data.
  void fill_uniform(float* p, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);
  /// n floats of a column-major matrix (leading dimension ld) uniform in [-1, 1) times 2^x, x an
  /// integer spread over [-spread, spread] by row and by element (check.cu's tuned_fill_wide).
  void fill_wide(float* p, size_t n, int64_t ld, uint64_t seed, int spread, cudaStream_t stream);
  /// n integer levels uniform in [0, levels), as FP32 values (bytes == false) or as bytes.
  void fill_levels(void* p, size_t n, bool bytes, uint64_t seed, int levels, cudaStream_t stream);
  static void poison(float* p, size_t n, cudaStream_t stream);
  /// Compares two column-major rows x cols matrices; synchronizes the stream. Elements further
  /// than abs_tolerance from the reference are counted in `beyond` (and fail the check).
  MatrixCheck compare(const float* out, int64_t ld_out, const float* ref, int64_t ld_ref,
                      int64_t rows, int64_t cols, cudaStream_t stream,
                      double abs_tolerance = INFINITY);

  /// The kernel cache it was built with (ops' tasks load their reference kernels from it).
  KernelCache& kernels() { return kernels_; }

 private:
  LaunchGeometry fill_geometry(size_t n) const;  // the fill kernels' launch for n elements

  KernelCache& kernels_;
  std::shared_ptr<const LoadedKernel> fill_, fill_wide_;
  std::shared_ptr<const LoadedKernel> fill_levels_f32_, fill_levels_u8_;
  std::shared_ptr<const LoadedKernel> compare_;
  int sm_count_ = 1;
  DeviceBuffer scratch_;  // 2 doubles + 4 counters
};

}  // namespace tuned
