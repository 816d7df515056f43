// GEMM as the generic runtime and tuner see it: its descriptor (templates/registered_op.hpp), from
// which its registration and runtime face are derived, and the identity of a call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "templates/gemm/gemm_op.hpp"
#include "templates/op_face.hpp"
#include "templates/registry.hpp"

namespace tuned::gemm_op {

class GemmTask;

struct Descriptor {
  using Problem = gemm_op::Problem;

  static OpInfo info() { return gemm_op::info(); }
  /// A problem of the id's layout, shape and alignment with the smallest leading dimensions that
  /// keep that alignment class (what scratch buffers and kernel specs are built for).
  static Problem problem_of(const ProblemId& id);
  /// m x n x k, or m x n x k x batch.
  static Problem request_problem(const TaskRequest& request);
  static Space make_space(const DeviceInfo& device, const Problem& problem) {
    return gemm_op::make_space(device, problem);
  }
  static Config fit(const Config& config, const DeviceInfo& device, const Problem& problem) {
    return fit_config(config, device, problem);
  }
  static Config fallback_config(const DeviceInfo& device, const Problem& problem) {
    return default_config(device, problem);
  }
  static KernelSpec kernel_spec(const Config& config, const Problem& problem) {
    return gemm_op::kernel_spec(config, problem);
  }
  static size_t workspace_bytes(const Config& config, const Problem& problem) {
    return gemm_op::workspace_bytes(config, problem);
  }
  static size_t operand_bytes(const Problem& problem);
  static std::unique_ptr<GemmTask> make_task(const DeviceInfo& device, const Problem& problem,
                                             DeviceCheck& check);

  // The optional hooks of OpFace (op_face.hpp says what each is for).
  static double flops(const Problem& problem) { return problem.flops(); }
  static std::vector<KernelSpec> support_kernels();
  static std::string describe_config(const Config& config) {
    return "math: " + math_family(config);
  }
  static int data_variant(int variant);
  static Config serve(const Config& config, const ProblemId& problem);
  static bool transfers_to(const Config& config, const ProblemId& problem);
  static std::vector<std::string> selection_feature_names() { return {"padding", "waves"}; }
  static std::vector<int64_t> selection_shape(const std::vector<int64_t>& shape);
  static void selection_features(const Config& config, int sm_count,
                                 const std::vector<int64_t>& shape, std::vector<double>& out);
};

/// The gemm entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: variant = layout index (NN, NT, TN, TT), dims = m, n, k.
ProblemId problem_id(const Problem& problem);

}  // namespace tuned::gemm_op
