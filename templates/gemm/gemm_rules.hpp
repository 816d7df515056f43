// The GEMM space's rules (gemm_rules.cpp), which make_space (gemm_op.cpp) adds after the
// parameters. Internal to templates/gemm/.
#pragma once

#include "core/device_info.hpp"
#include "core/space.hpp"
#include "templates/gemm/gemm_op.hpp"

namespace tuned::gemm_op {

// Adds every rule of the space for this device and problem, named, in the order they are checked:
// validity of the matrix-vector kernel and tiles, of the tensor-core families, of the launch, then
// pruning, then the accuracy contract.
void add_space_rules(Space& space, const DeviceInfo& device, const Problem& problem);

}  // namespace tuned::gemm_op
