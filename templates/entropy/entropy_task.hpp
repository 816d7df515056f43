// Entropy as a tuning task: random levels drawn on the device, a double-precision reference
// (the device reference kernel for the tuned problem, the CPU reference for an odd-shaped edge
// problem with padded leading dimensions that every candidate must also get right), the
// absolute tolerance, and the CPU path (OpenMP, host memory to host memory) as the baseline: its
// time against the kernel's is what decides the CPU/GPU threshold.
#pragma once

#include <memory>
#include <vector>

#include "core/cuda_raii.hpp"
#include "templates/entropy/entropy_op.hpp"
#include "templates/op.hpp"

namespace tuned::entropy_op {

class EntropyTask : public TuningTask {
 public:
  EntropyTask(const DeviceInfo& device, const Problem& problem, Input input, DeviceCheck& check);

  ProblemKey key() const override { return problem_key(device_, problem_, input_); }
  const Space& space() const override { return space_; }
  Space& mutable_space() { return space_; }
  KernelSpec kernel_spec(const Config& config) const override {
    return entropy_op::kernel_spec(config, problem_, input_);
  }
  std::string template_hash() const override;
  std::vector<Config> seed_configs() const override {
    return entropy_op::seed_configs(device_, problem_, input_);
  }
  LaunchGeometry geometry(const Config& config) const override {
    return entropy_op::geometry(config, problem_);
  }
  void allocate() override;
  void fresh_inputs(uint64_t seed, cudaStream_t stream) override;
  MatrixCheck check(const LoadedKernel& kernel, const Config& config,
                    cudaStream_t stream) override;
  /// The absolute tolerance is the criterion (MatrixCheck::beyond); the relative one only
  /// backs it up.
  double tolerance() const override { return kTolerance; }
  void run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) override;
  void run_baseline(cudaStream_t stream) override;
  std::string baseline_name() const override { return "cpu"; }
  /// Bytes read and written once (the bound a memory-bound kernel is judged against).
  double work() const override;
  std::string rate_unit() const override { return "GB/s"; }
  double rate(double ms) const override { return ms > 0 ? work() / (ms * 1e6) : 0; }

  const Problem& problem() const { return problem_; }

 private:
  struct Buffers {
    DeviceBuffer in, out, ref, workspace;
  };
  void allocate(const Problem& p, Buffers& buffers);
  MatrixCheck check_on(const LoadedKernel& kernel, const Config& config, const Problem& p,
                       Buffers& buffers, cudaStream_t stream);

  DeviceInfo device_;
  Problem problem_;
  Problem edge_;  // odd shape, padded leading dims
  Input input_;
  Space space_;
  DeviceCheck& check_;
  std::shared_ptr<const LoadedKernel> reference_;
  Buffers main_, edge_buffers_;
  uint64_t seed_ = 0;
  // The CPU baseline's host copies of the main input (taken when the inputs change) and output.
  std::vector<unsigned char> host_in_;
  std::vector<float> host_out_;
  uint64_t host_seed_ = ~0ull;
};

}  // namespace tuned::entropy_op
