// The entropy op's registration and runtime face: how the generic runtime and tuner see it.
#pragma once

#include "templates/entropy/entropy_op.hpp"
#include "templates/op_face.hpp"
#include "templates/registry.hpp"

namespace tuned::entropy_op {

/// The entropy entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: variant = input type, dims = rows, cols, radius, levels.
ProblemId problem_id(const Problem& problem, Input input);
/// A packed problem of the id's shape.
Problem problem_of(const ProblemId& id);

}  // namespace tuned::entropy_op
