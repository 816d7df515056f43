// The entropy op as the generic runtime and tuner see it: its descriptor
// (templates/registered_op.hpp), from which its registration and runtime face are derived, and
// the identity of a call.
#pragma once

#include <cstddef>
#include <memory>

#include "templates/entropy/entropy_op.hpp"
#include "templates/op_face.hpp"
#include "templates/registry.hpp"

namespace tuned::entropy_op {

class EntropyTask;

/// A problem with its input type: the variant, which the kernels are compiled for.
struct TypedProblem {
  Problem problem;
  Input input = Input::kF32;
};

struct Descriptor {
  using Problem = TypedProblem;

  static OpInfo info() { return entropy_op::info(); }
  /// A packed problem of the id's shape and input type.
  static Problem problem_of(const ProblemId& id);
  static Problem request_problem(const TaskRequest& request);
  static Space make_space(const DeviceInfo& device, const Problem& p) {
    return entropy_op::make_space(device, p.problem, p.input);
  }
  static Config fit(const Config& config, const DeviceInfo& device, const Problem& p) {
    return fit_config(config, device, p.problem, p.input);
  }
  static Config fallback_config(const DeviceInfo& device, const Problem& p) {
    return default_config(device, p.problem, p.input);
  }
  static KernelSpec kernel_spec(const Config& config, const Problem& p) {
    return entropy_op::kernel_spec(config, p.problem, p.input);
  }
  static size_t workspace_bytes(const Config& config, const Problem& p) {
    return entropy_op::workspace_bytes(config, p.problem);
  }
  static size_t operand_bytes(const Problem& p) {
    return static_cast<size_t>(p.problem.rows) * static_cast<size_t>(p.problem.cols) *
           (input_bytes(p.input) + sizeof(float));
  }
  static std::unique_ptr<EntropyTask> make_task(const DeviceInfo& device, const Problem& p,
                                                DeviceCheck& check);
};

/// The entropy entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: variant = input type, dims = rows, cols, radius, levels.
ProblemId problem_id(const Problem& problem, Input input);

}  // namespace tuned::entropy_op
