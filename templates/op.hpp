// The generic face of an op that the tuner drives: one op on one problem on one device, with its
// buffers, its reference and its baseline. Each op folder implements it; the tuner knows no op.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem_key.hpp"
#include "core/space.hpp"
#include "generator/kernel.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"

namespace tuned {

class TuningTask {
 public:
  virtual ~TuningTask() = default;

  virtual ProblemKey key() const = 0;
  /// The space constrained for this device and problem.
  virtual const Space& space() const = 0;
  virtual KernelSpec kernel_spec(const Config& config) const = 0;
  /// Hash of the template source every kernel_spec compiles: trials measured on the same hash
  /// need not be measured again.
  virtual std::string template_hash() const = 0;
  /// Configs worth trying first (the built-in default for this problem).
  virtual std::vector<Config> seed_configs() const = 0;
  /// A stored or predicted config as it runs on this task's problem (GEMM: slice sums bounded on
  /// its k); unchanged by default.
  virtual Config adapt(const Config& config) const { return config; }
  /// Launch geometry of the tuned problem (threads per block decide what a kernel can run with).
  virtual LaunchGeometry geometry(const Config& config) const = 0;

  /// Allocates device buffers (once, on the tuning thread, device already current).
  virtual void allocate() = 0;
  /// Draws fresh random inputs and computes the reference output for them.
  virtual void fresh_inputs(uint64_t seed, cudaStream_t stream) = 0;
  /// Poisons the output, runs the kernel once, and compares with the reference (on this problem
  /// and on whatever extra odd-shaped problems the op uses to catch edge bugs).
  virtual MatrixCheck check(const LoadedKernel& kernel, const Config& config,
                            cudaStream_t stream) = 0;
  /// Largest relative error that passes.
  virtual double tolerance() const = 0;
  /// One launch of the kernel on the current inputs (what is timed).
  virtual void run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) = 0;
  /// One run of the baseline (cuBLAS for gemm) on the same inputs.
  virtual void run_baseline(cudaStream_t stream) = 0;
  virtual std::string baseline_name() const = 0;

  /// Work of one run, for rates: flops (gemm) or bytes moved (memory-bound ops).
  virtual double work() const = 0;
  /// Unit of work()/time: "TFLOP/s" or "GB/s"; rate(ms) converts.
  virtual std::string rate_unit() const = 0;
  virtual double rate(double ms) const = 0;
};

}  // namespace tuned
