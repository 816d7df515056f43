#include "templates/entropy/entropy_descriptor.hpp"

#include "templates/entropy/entropy_task.hpp"
#include "templates/registered_op.hpp"

namespace tuned::entropy_op {

Descriptor::Problem Descriptor::problem_of(const ProblemId& id) {
  return {packed_problem(id.dims[0], id.dims[1], static_cast<int>(id.dims[2]),
                         static_cast<int>(id.dims[3])),
          static_cast<Input>(id.variant)};
}

// The request is validated: its layout is one of the variants ("" the first).
Descriptor::Problem Descriptor::request_problem(const TaskRequest& request) {
  return {packed_problem(request.shape[0], request.shape[1], static_cast<int>(request.shape[2]),
                         static_cast<int>(request.shape[3])),
          request.layout == variant_name(Input::kU8) ? Input::kU8 : Input::kF32};
}

std::unique_ptr<EntropyTask> Descriptor::make_task(const DeviceInfo& device, const Problem& p,
                                                   DeviceCheck& check) {
  return std::make_unique<EntropyTask>(device, p.problem, p.input, check);
}

ProblemId problem_id(const Problem& p, Input input) {
  ProblemId id;
  id.variant = static_cast<int>(input);
  id.rank = 4;
  id.dims = {p.rows, p.cols, p.radius, p.levels};
  id.alignment = 1;
  return id;
}

OpRegistration registration() { return registered_op<Descriptor>(); }

}  // namespace tuned::entropy_op
