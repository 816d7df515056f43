// GEMM as a tuning task: random inputs, cuBLAS (FP32, no TF32; TF32 for the TF32 compute type) as
// reference and baseline, and an extra odd-shaped problem with padded leading dimensions and
// beta != 0 that every candidate must also get right, because a config tuned on one shape is later
// used on its neighbours. Every candidate must also keep the accuracy contract
// (gemm_reference.hpp): its error against an FP64 product at most twice cuBLAS's on the same inputs
// (the tuned problem's, uniform), and on a probe of wide-range inputs and long k (check_probe).
#pragma once

#include <cublas_v2.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cuda_raii.hpp"
#include "templates/check/cublas_handle.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_reference.hpp"
#include "templates/op.hpp"

namespace tuned::gemm_op {

/// cublasSgemm with our Problem; throws Error naming the cuBLAS status.
void cublas_sgemm(cublasHandle_t handle, const Problem& p, float alpha, const float* a,
                  const float* b, float beta, float* c);

using tuned::CublasHandle;  // templates/check/cublas_handle.hpp

class GemmTask : public TuningTask {
 public:
  GemmTask(const DeviceInfo& device, const Problem& problem, DeviceCheck& check);
  GemmTask(const GemmTask&) = delete;  // transpose_b_ holds this task's address
  GemmTask& operator=(const GemmTask&) = delete;

  ProblemKey key() const override { return problem_key(device_, problem_); }
  const Space& space() const override { return space_; }
  Space& mutable_space() { return space_; }
  KernelSpec kernel_spec(const Config& config) const override;
  std::string template_hash() const override;
  std::vector<Config> seed_configs() const override {
    return gemm_op::seed_configs(device_, problem_);
  }
  Config adapt(const Config& config) const override {
    return with_bounded_slice_sums(config, problem_);
  }
  LaunchGeometry geometry(const Config& config) const override {
    return gemm_op::geometry(config, problem_);
  }
  void allocate() override;
  void fresh_inputs(uint64_t seed, cudaStream_t stream) override;
  MatrixCheck check(const LoadedKernel& kernel, const Config& config,
                    cudaStream_t stream) override;
  double tolerance() const override;
  void run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) override;
  void run_baseline(cudaStream_t stream) override;
  std::string baseline_name() const override;
  double work() const override { return problem_.flops(); }
  std::string rate_unit() const override { return "TFLOP/s"; }
  double rate(double ms) const override { return ms > 0 ? work() / (ms * 1e9) : 0; }

  const Problem& problem() const { return problem_; }
  const Problem& edge_problem() const { return edge_; }
  /// The accuracy probe at its longest k (its shorter ones take the leading k of it).
  const Problem& probe_problem() const { return probe_; }
  /// The probe's lengths of k: a candidate's contract is checked at the longest on which its
  /// float sums stay within the contract's bound (sums_within_contract; a config that breaks it
  /// there is never used there): 1024 is a TMA-fed kernel's longest one chain of slice sums.
  static constexpr int64_t kProbeKs[] = {65536, 16384, 4096, 1024, 96};  // longest first
  /// Exponents of the probe's inputs spread over 2^+-kProbeSpread (by row and by element).
  static constexpr int kProbeSpread = 20;
  /// check() without the probe: the tuned problem and the edge problem on uniform inputs (for a
  /// check of the launches alone, e.g. under compute-sanitizer, where k = 65536 takes minutes).
  MatrixCheck check_uniform(const LoadedKernel& kernel, const Config& config, cudaStream_t stream);
  /// The contract on the probe (part of check()): the candidate on wide-range inputs at the
  /// longest k it may meet (or at k, one of kProbeKs), beta = 0 on a poisoned C; exact_inputs names
  /// the probe. On an H100 it found what uniform inputs did not: the wgmma kernels' one float
  /// chain of slice sums past the contract at 512-2048 slices (131 x 77 x 65536: 2.5x cuBLAS
  /// SGEMM's error), which gemm.cu's partial chains and the bound max_slice_sum keep within it.
  MatrixCheck check_probe(const LoadedKernel& kernel, const Config& config, cudaStream_t stream,
                          int64_t k = 0);
  /// What this task's launches of PRETB configs transpose B with (for launches of one's own).
  const TransposeB& transpose_b_callback() const { return transpose_b_; }

 private:
  struct Buffers {
    DeviceBuffer a, b, c, c_ref, c_init;
  };
  void allocate(const Problem& p, Buffers& buffers, bool with_init);
  /// c against c_ref over every product of p's batch.
  MatrixCheck compare_products(const Problem& p, const float* c, const float* c_ref,
                               cudaStream_t stream);
  /// The probe at kProbeKs[i].
  Problem probe_at(size_t i) const;
  /// The probe's inputs of the current seed and, at kProbeKs[i], the FP64 product and cuBLAS's
  /// error against it: made on a probe's first use after fresh_inputs (most checks never probe,
  /// and the operands at the longest k are ~55 MB).
  void prepare_probe(size_t i, cudaStream_t stream);
  /// Workspace for config on p (grown on demand; split-K configs need it).
  void* workspace(const Config& config, const Problem& p);
  /// PRETB configs' transpose of B: the transpose op's default config, loaded once.
  void transpose_b(int64_t rows, int64_t cols, const float* a, int64_t lda, float* b, int64_t ldb,
                   cudaStream_t stream);

  DeviceInfo device_;
  Problem problem_;
  Problem edge_;  // odd shape, padded leading dims, same layout and alignment class
  Problem probe_;  // the edge's m and n at the longest probe k, same layout and alignment class
  Space space_;
  DeviceCheck& check_;
  CublasHandle cublas_;
  Buffers main_, edge_buffers_, probe_buffers_;
  DeviceBuffer workspace_;
  std::unique_ptr<Fp64Sample> exact_;  // the FP64 product at a sample of the main C
  double cublas_exact_error_ = 0;      // cuBLAS SGEMM's error against it on the current inputs
  std::vector<std::unique_ptr<Fp64Sample>> probe_exact_;  // the probe's FP64 products, by k
  std::vector<double> probe_cublas_error_;                // and cuBLAS's errors against them
  uint64_t probe_seed_ = 0;                               // the seed of the current inputs
  bool probe_filled_ = false;         // the probe's operands hold this seed's values
  std::vector<bool> probe_measured_;  // cuBLAS and the FP64 product measured at kProbeKs[i]
  TransposeB transpose_b_;  // calls transpose_b: what every launch of a PRETB config is given
  std::shared_ptr<const LoadedKernel> transpose_kernel_;
  Config transpose_config_;
  static constexpr float kEdgeAlpha = 1.25f;
  static constexpr float kEdgeBeta = -0.75f;
};

}  // namespace tuned::gemm_op
