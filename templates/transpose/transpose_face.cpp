#include "templates/transpose/transpose_face.hpp"

#include "templates/extent.hpp"
#include "templates/transpose/transpose_task.hpp"

namespace tuned::transpose_op {
namespace {

class TransposeFace : public OpFace {
 public:
  Config fit(const Config& config, const DeviceInfo& device,
             const ProblemId& problem) const override {
    return fit_config(config, device, problem_of(problem));
  }
  Config fallback_config(const DeviceInfo& device, const ProblemId& problem) const override {
    return default_config(device, problem_of(problem));
  }
  KernelSpec kernel_spec(const Config& config, const ProblemId&) const override {
    return transpose_op::kernel_spec(config);
  }
  size_t workspace_bytes(const Config&, const ProblemId&) const override { return 0; }
  size_t operand_bytes(const ProblemId& problem) const override {
    return 2 * static_cast<size_t>(problem.dims[0]) * static_cast<size_t>(problem.dims[1]) *
           sizeof(float);
  }
  std::unique_ptr<TuningTask> scratch_task(const DeviceInfo& device, const ProblemId& problem,
                                           DeviceCheck& check) const override {
    return std::make_unique<TransposeTask>(device, problem_of(problem), check);
  }
};

}  // namespace

ProblemId problem_id(const Problem& p) {
  ProblemId id;
  id.variant = 0;
  id.rank = 2;
  id.dims = {p.rows, p.cols, 0, 0};
  id.alignment = p.alignment;
  return id;
}

Problem problem_of(const ProblemId& id) {
  Problem p = packed_problem(id.dims[0], id.dims[1]);
  p.alignment = id.alignment;
  p.lda = round_up(p.lda, id.alignment);
  p.ldb = round_up(p.ldb, id.alignment);
  return p;
}

OpRegistration registration() {
  static const TransposeFace face;
  OpRegistration op;
  static_cast<OpInfo&>(op) = info();
  op.make_space = [](const TaskRequest& request, const DeviceInfo& device) {
    Space space = make_space(device, packed_problem(request.shape[0], request.shape[1]));
    space.restrict(request.space);
    return space;
  };
  op.make_task = [](const TaskRequest& request, const DeviceInfo& device, DeviceCheck& check) {
    auto task = std::make_unique<TransposeTask>(
        device, packed_problem(request.shape[0], request.shape[1]), check);
    task->mutable_space().restrict(request.space);
    return std::unique_ptr<TuningTask>(std::move(task));
  };
  op.face = &face;
  return op;
}

}  // namespace tuned::transpose_op
