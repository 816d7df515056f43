// Transpose as a tuning task: random inputs, cuBLAS geam (B = 1 * A^T, exact) as the reference,
// a device-to-device copy of the same bytes as the baseline (the bound a transpose is judged
// against), and an odd-shaped problem with padded leading dimensions that every candidate must
// also get exactly right.
#pragma once

#include "core/cuda_raii.hpp"
#include "templates/check/cublas_handle.hpp"
#include "templates/op.hpp"
#include "templates/transpose/transpose_op.hpp"

namespace tuned::transpose_op {

class TransposeTask : public TuningTask {
 public:
  TransposeTask(const DeviceInfo& device, const Problem& problem, DeviceCheck& check);

  ProblemKey key() const override { return problem_key(device_, problem_); }
  const Space& space() const override { return space_; }
  Space& mutable_space() { return space_; }
  KernelSpec kernel_spec(const Config& config) const override {
    return transpose_op::kernel_spec(config);
  }
  std::string template_hash() const override;
  std::vector<Config> seed_configs() const override {
    return transpose_op::seed_configs(device_, problem_);
  }
  LaunchGeometry geometry(const Config& config) const override {
    return transpose_op::geometry(config, problem_);
  }
  void allocate() override;
  void fresh_inputs(uint64_t seed, cudaStream_t stream) override;
  MatrixCheck check(const LoadedKernel& kernel, const Config& config,
                    cudaStream_t stream) override;
  double tolerance() const override { return 0.0; }  // a transpose moves bits: exact
  void run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) override;
  void run_baseline(cudaStream_t stream) override;
  std::string baseline_name() const override { return "copy"; }
  double work() const override { return problem_.bytes(); }
  std::string rate_unit() const override { return "GB/s"; }
  double rate(double ms) const override { return ms > 0 ? work() / (ms * 1e6) : 0; }

  const Problem& problem() const { return problem_; }

 private:
  struct Buffers {
    DeviceBuffer a, b, b_ref;
  };
  void allocate(const Problem& p, Buffers& buffers);
  MatrixCheck check_on(const LoadedKernel& kernel, const Config& config, const Problem& p,
                       Buffers& buffers, cudaStream_t stream);

  DeviceInfo device_;
  Problem problem_;
  Problem edge_;  // odd shape, padded leading dims, same alignment class
  Space space_;
  DeviceCheck& check_;
  CublasHandle cublas_;
  Buffers main_, edge_buffers_;
  DeviceBuffer copy_;  // the baseline's destination
};

}  // namespace tuned::transpose_op
