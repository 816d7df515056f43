// The GEMM's accuracy contract (issue 28): a config the library may pick must have a normwise
// error against an FP64 product of the same inputs within kContractFactor of cuBLAS SGEMM's. The
// error is measured on a sample of C (gemm_reference.cu): up to kSampleSide rows and columns,
// spread evenly from the first to the last (every one where C is smaller), so edge tiles are in
// it and any shape costs at most kSampleSide^2 * k FP64 multiply-adds.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cuda_raii.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/gemm/gemm_op.hpp"

namespace tuned::gemm_op {

/// The contract's bound for a candidate whose reference (cuBLAS SGEMM) has error reference_error:
/// kContractFactor times it, and never below kContractFloor (a float's unit roundoff: an error
/// that small is as accurate as a float result can be, whatever cuBLAS's luck on the inputs).
inline constexpr double kContractFactor = 2.0;
inline constexpr double kContractFloor = 0x1.0p-24;
double contract_limit(double reference_error);
/// Whether error keeps the contract against a reference (cuBLAS SGEMM) of reference_error.
inline bool within_contract(double error, double reference_error) {
  return error <= contract_limit(reference_error);
}

class Fp64Sample {
 public:
  static constexpr int kSampleSide = 256;

  Fp64Sample(KernelCache& kernels, const DeviceInfo& device, int sample_side = kSampleSide);
  /// The kernels it loads (built into the library ahead of time).
  static std::vector<KernelSpec> kernel_specs();

  /// The FP64 product op(A) op(B) of problem p (alpha 1, beta 0) at the sample of its C.
  void compute(const Problem& p, const float* a, const float* b, cudaStream_t stream);
  /// ||C - ref|| / ||ref|| over the sample (Frobenius norms) of c (leading dim ldc) for the
  /// problem of the last compute(); +Inf where a sampled element is NaN or Inf. Synchronizes.
  double error(const float* c, int64_t ldc, cudaStream_t stream);

  int rows() const { return rows_; }
  int cols() const { return cols_; }

 private:
  std::shared_ptr<const LoadedKernel> product_, error_;
  int sample_side_;
  int sm_count_;
  int rows_ = 0, cols_ = 0;
  DeviceBuffer indices_;  // rows, then columns (int64)
  DeviceBuffer ref_;      // rows_ x cols_ doubles, column-major
  DeviceBuffer sums_;     // 3 doubles
};

}  // namespace tuned::gemm_op
