#include "templates/transpose/transpose_descriptor.hpp"

#include "templates/extent.hpp"
#include "templates/registered_op.hpp"
#include "templates/transpose/transpose_task.hpp"

namespace tuned::transpose_op {

Problem Descriptor::problem_of(const ProblemId& id) {
  Problem p = packed_problem(id.dims[0], id.dims[1]);
  p.alignment = id.alignment;
  p.lda = round_up(p.lda, id.alignment);
  p.ldb = round_up(p.ldb, id.alignment);
  return p;
}

std::unique_ptr<TransposeTask> Descriptor::make_task(const DeviceInfo& device,
                                                     const Problem& problem, DeviceCheck& check) {
  return std::make_unique<TransposeTask>(device, problem, check);
}

ProblemId problem_id(const Problem& p) {
  ProblemId id;
  id.variant = 0;
  id.rank = 2;
  id.dims = {p.rows, p.cols, 0, 0};
  id.alignment = p.alignment;
  return id;
}

OpRegistration registration() { return registered_op<Descriptor>(); }

}  // namespace tuned::transpose_op
