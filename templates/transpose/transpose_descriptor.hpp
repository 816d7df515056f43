// The transpose op as the generic runtime and tuner see it: its descriptor
// (templates/registered_op.hpp), from which its registration and runtime face are derived, and
// the identity of a call.
#pragma once

#include <cstddef>
#include <memory>

#include "templates/op_face.hpp"
#include "templates/registry.hpp"
#include "templates/transpose/transpose_op.hpp"

namespace tuned::transpose_op {

class TransposeTask;

struct Descriptor {
  using Problem = transpose_op::Problem;

  static OpInfo info() { return transpose_op::info(); }
  /// A problem of the id's shape and alignment with the smallest leading dimensions that keep
  /// that alignment class.
  static Problem problem_of(const ProblemId& id);
  static Problem request_problem(const TaskRequest& request) {
    return packed_problem(request.shape[0], request.shape[1]);
  }
  static Space make_space(const DeviceInfo& device, const Problem& problem) {
    return transpose_op::make_space(device, problem);
  }
  static Config fit(const Config& config, const DeviceInfo& device, const Problem& problem) {
    return fit_config(config, device, problem);
  }
  static Config fallback_config(const DeviceInfo& device, const Problem& problem) {
    return default_config(device, problem);
  }
  static KernelSpec kernel_spec(const Config& config, const Problem&) {
    return transpose_op::kernel_spec(config);
  }
  static size_t workspace_bytes(const Config&, const Problem&) { return 0; }
  static size_t operand_bytes(const Problem& problem) {
    return 2 * static_cast<size_t>(problem.rows) * static_cast<size_t>(problem.cols) *
           sizeof(float);
  }
  static std::unique_ptr<TransposeTask> make_task(const DeviceInfo& device, const Problem& problem,
                                                  DeviceCheck& check);
};

/// The transpose entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: one variant ("T"), dims = rows, cols of A.
ProblemId problem_id(const Problem& problem);

}  // namespace tuned::transpose_op
