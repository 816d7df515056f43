// The ops tuned knows. Adding an op means adding its folder and one entry in registry.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "templates/op.hpp"

namespace tuned {

struct TaskRequest {
  std::string op;               // "gemm"
  std::vector<int64_t> shape;   // gemm: m, n, k
  std::string layout;           // gemm: NN, NT, TN, TT
  std::map<std::string, std::vector<int>> space;  // restrictions of the op's parameters
};

/// Names of the ops that can be tuned.
std::vector<std::string> op_names();

/// The shapes `autotune --op NAME` tunes when none are given.
std::vector<std::vector<int64_t>> default_shapes(const std::string& op);

/// A tuning task for the request on the device. Throws Error(TUNED_STATUS_INVALID_ARGUMENT) for
/// an unknown op, a shape of the wrong rank or a bad layout, and Error(TUNED_STATUS_CONFIG_ERROR)
/// for restrictions naming unknown parameters.
std::unique_ptr<TuningTask> make_task(const TaskRequest& request, const DeviceInfo& device,
                                      DeviceCheck& check);

}  // namespace tuned
