// GEMM's registration and runtime face: how the generic runtime and tuner see the op.
#pragma once

#include "templates/gemm/gemm_op.hpp"
#include "templates/op_face.hpp"
#include "templates/registry.hpp"

namespace tuned::gemm_op {

/// The gemm entry of the op registry.
OpRegistration registration();

/// The runtime's view of a call: variant = layout index (NN, NT, TN, TT), dims = m, n, k.
ProblemId problem_id(const Problem& problem);
/// A problem of the id's layout, shape and alignment with the smallest leading dimensions that
/// keep that alignment class (what scratch buffers and kernel specs are built for).
Problem problem_of(const ProblemId& id);

}  // namespace tuned::gemm_op
