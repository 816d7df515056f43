#include "templates/entropy/entropy_face.hpp"

#include "templates/entropy/entropy_task.hpp"

namespace tuned::entropy_op {
namespace {

Input input_of(const ProblemId& id) { return static_cast<Input>(id.variant); }

class EntropyFace : public OpFace {
 public:
  Config fit(const Config& config, const DeviceInfo& device,
             const ProblemId& problem) const override {
    return fit_config(config, device, problem_of(problem), input_of(problem));
  }
  Config fallback_config(const DeviceInfo& device, const ProblemId& problem) const override {
    return default_config(device, problem_of(problem), input_of(problem));
  }
  KernelSpec kernel_spec(const Config& config, const ProblemId& problem) const override {
    return entropy_op::kernel_spec(config, problem_of(problem), input_of(problem));
  }
  size_t workspace_bytes(const Config& config, const ProblemId& problem) const override {
    return entropy_op::workspace_bytes(config, problem_of(problem));
  }
  size_t operand_bytes(const ProblemId& problem) const override {
    return static_cast<size_t>(problem.dims[0]) * static_cast<size_t>(problem.dims[1]) *
           (input_bytes(input_of(problem)) + sizeof(float));
  }
  std::unique_ptr<TuningTask> scratch_task(const DeviceInfo& device, const ProblemId& problem,
                                           DeviceCheck& check) const override {
    return std::make_unique<EntropyTask>(device, problem_of(problem), input_of(problem), check);
  }
};

Problem request_problem(const TaskRequest& request) {
  return packed_problem(request.shape[0], request.shape[1], static_cast<int>(request.shape[2]),
                        static_cast<int>(request.shape[3]));
}

// The request is validated: its layout is one of the variants ("" the first).
Input request_input(const TaskRequest& request) {
  return request.layout == variant_name(Input::kU8) ? Input::kU8 : Input::kF32;
}

}  // namespace

ProblemId problem_id(const Problem& p, Input input) {
  ProblemId id;
  id.variant = static_cast<int>(input);
  id.rank = 4;
  id.dims = {p.rows, p.cols, p.radius, p.levels};
  id.alignment = 1;
  return id;
}

Problem problem_of(const ProblemId& id) {
  return packed_problem(id.dims[0], id.dims[1], static_cast<int>(id.dims[2]),
                        static_cast<int>(id.dims[3]));
}

OpRegistration registration() {
  static const EntropyFace face;
  OpRegistration op;
  static_cast<OpInfo&>(op) = info();
  op.make_space = [](const TaskRequest& request, const DeviceInfo& device) {
    Space space = make_space(device, request_problem(request), request_input(request));
    space.restrict(request.space);
    return space;
  };
  op.make_task = [](const TaskRequest& request, const DeviceInfo& device, DeviceCheck& check) {
    auto task = std::make_unique<EntropyTask>(device, request_problem(request),
                                              request_input(request), check);
    task->mutable_space().restrict(request.space);
    return std::unique_ptr<TuningTask>(std::move(task));
  };
  op.face = &face;
  return op;
}

}  // namespace tuned::entropy_op
