// The transpose op's registration and runtime face: how the generic runtime and tuner see it.
#pragma once

#include "templates/op_face.hpp"
#include "templates/registry.hpp"
#include "templates/transpose/transpose_op.hpp"

namespace tuned::transpose_op {

/// The transpose entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: one variant ("T"), dims = rows, cols of A.
ProblemId problem_id(const Problem& problem);
/// A problem of the id's shape and alignment with the smallest leading dimensions that keep that
/// alignment class.
Problem problem_of(const ProblemId& id);

}  // namespace tuned::transpose_op
