// An op as the generic code sees it, derived from one descriptor. Each op folder defines one
// struct (its <op>_descriptor.hpp) naming its problem and the few things only it knows; the
// runtime face (OpFace) and the registry entry (OpRegistration: info, space and task factories)
// are made from it here, the way CUTLASS's device operators wrap a kernel's description. The
// registry (registry.cpp) lists each op's registration once.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/space.hpp"
#include "generator/kernel.hpp"
#include "templates/op_face.hpp"
#include "templates/registry.hpp"

namespace tuned {

/// What an op's descriptor must define (static members). Problem is the op's own problem type:
/// whatever its kernels, spaces and tasks are built for.
template <class Op>
concept OpDescriptor = requires(const typename Op::Problem& problem, const ProblemId& id,
                                const TaskRequest& request, const DeviceInfo& device,
                                const Config& config, DeviceCheck& check) {
  { Op::info() } -> std::same_as<OpInfo>;
  /// The problem of a call's identity (smallest leading dimensions of its alignment class).
  { Op::problem_of(id) } -> std::same_as<typename Op::Problem>;
  /// The problem of a validated tuning request (its shape of the op's rank, a known variant).
  { Op::request_problem(request) } -> std::same_as<typename Op::Problem>;
  /// The space on a device (its properties only: no GPU work), every rule named.
  { Op::make_space(device, problem) } -> std::same_as<Space>;
  /// config made valid for the problem; throws Error(TUNED_STATUS_CONFIG_ERROR) naming the rule.
  { Op::fit(config, device, problem) } -> std::same_as<Config>;
  /// A safe config for any problem.
  { Op::fallback_config(device, problem) } -> std::same_as<Config>;
  { Op::kernel_spec(config, problem) } -> std::same_as<KernelSpec>;
  /// Device workspace of one launch (0: none), and the bytes of the operands a call touches.
  { Op::workspace_bytes(config, problem) } -> std::same_as<size_t>;
  { Op::operand_bytes(problem) } -> std::same_as<size_t>;
  /// A tuning task on scratch buffers of the problem; its space can be restricted.
  { Op::make_task(device, problem, check)->mutable_space() } -> std::same_as<Space&>;
};

namespace registered_op_detail {

/// OpFace from a descriptor. The optional hooks (flops, support_kernels, describe_config,
/// data_variant, serve, transfers_to, selection features) are used where the descriptor defines
/// them, and are OpFace's defaults where it does not.
template <OpDescriptor Op>
class Face final : public OpFace {
 public:
  Config fit(const Config& config, const DeviceInfo& device,
             const ProblemId& problem) const override {
    return Op::fit(config, device, Op::problem_of(problem));
  }
  Config fallback_config(const DeviceInfo& device, const ProblemId& problem) const override {
    return Op::fallback_config(device, Op::problem_of(problem));
  }
  KernelSpec kernel_spec(const Config& config, const ProblemId& problem) const override {
    return Op::kernel_spec(config, Op::problem_of(problem));
  }
  size_t workspace_bytes(const Config& config, const ProblemId& problem) const override {
    return Op::workspace_bytes(config, Op::problem_of(problem));
  }
  size_t operand_bytes(const ProblemId& problem) const override {
    return Op::operand_bytes(Op::problem_of(problem));
  }
  double flops(const ProblemId& problem) const override {
    if constexpr (requires { Op::flops(Op::problem_of(problem)); }) {
      return Op::flops(Op::problem_of(problem));
    }
    return OpFace::flops(problem);
  }
  std::unique_ptr<TuningTask> scratch_task(const DeviceInfo& device, const ProblemId& problem,
                                           DeviceCheck& check) const override {
    return Op::make_task(device, Op::problem_of(problem), check);
  }
  std::vector<KernelSpec> support_kernels() const override {
    if constexpr (requires { Op::support_kernels(); }) return Op::support_kernels();
    return OpFace::support_kernels();
  }
  std::string describe_config(const Config& config) const override {
    if constexpr (requires { Op::describe_config(config); }) return Op::describe_config(config);
    return OpFace::describe_config(config);
  }
  int data_variant(int variant) const override {
    if constexpr (requires { Op::data_variant(variant); }) return Op::data_variant(variant);
    return OpFace::data_variant(variant);
  }
  Config serve(const Config& config, const ProblemId& problem) const override {
    if constexpr (requires { Op::serve(config, problem); }) return Op::serve(config, problem);
    return OpFace::serve(config, problem);
  }
  bool transfers_to(const Config& config, const ProblemId& problem) const override {
    if constexpr (requires { Op::transfers_to(config, problem); }) {
      return Op::transfers_to(config, problem);
    }
    return OpFace::transfers_to(config, problem);
  }
  std::vector<std::string> selection_feature_names() const override {
    if constexpr (requires { Op::selection_feature_names(); }) {
      return Op::selection_feature_names();
    }
    return OpFace::selection_feature_names();
  }
  void selection_features(const Config& config, int sm_count, const std::vector<int64_t>& shape,
                          std::vector<double>& out) const override {
    if constexpr (requires { Op::selection_features(config, sm_count, shape, out); }) {
      Op::selection_features(config, sm_count, shape, out);
    } else {
      OpFace::selection_features(config, sm_count, shape, out);
    }
  }
  std::vector<int64_t> selection_shape(const std::vector<int64_t>& shape) const override {
    if constexpr (requires { Op::selection_shape(shape); }) return Op::selection_shape(shape);
    return OpFace::selection_shape(shape);
  }
};

}  // namespace registered_op_detail

/// The registry entry of the op Op describes (instantiated in the op's folder, where its task's
/// header is at hand).
template <OpDescriptor Op>
OpRegistration registered_op() {
  static const registered_op_detail::Face<Op> face;
  OpRegistration op;
  static_cast<OpInfo&>(op) = Op::info();
  op.make_space = [](const TaskRequest& request, const DeviceInfo& device) {
    Space space = Op::make_space(device, Op::request_problem(request));
    space.restrict(request.space);
    return space;
  };
  op.make_task = [](const TaskRequest& request, const DeviceInfo& device, DeviceCheck& check) {
    auto task = Op::make_task(device, Op::request_problem(request), check);
    task->mutable_space().restrict(request.space);
    return std::unique_ptr<TuningTask>(std::move(task));
  };
  op.face = &face;
  return op;
}

}  // namespace tuned
