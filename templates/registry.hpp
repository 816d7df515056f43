// The ops tuned knows, each registered once: its name, shape, variants, default tuning shapes,
// rate unit, tuning-task factory and runtime face, all derived from its descriptor
// (registered_op.hpp). Adding an op means adding its folder and one line in registry.cpp; the
// runtime, tuner, cache and tools take everything from here.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "templates/op.hpp"
#include "templates/op_face.hpp"
#include "templates/op_info.hpp"

namespace tuned {

struct TaskRequest {
  std::string op;               // "gemm"
  std::vector<int64_t> shape;   // gemm: m, n, k
  std::string layout;           // the op's variant (gemm: NN, NT, TN, TT); "" for its first
  std::map<std::string, std::vector<int>> space;  // restrictions of the op's parameters
};

/// An op's info and what the tuner and runtime need of it.
struct OpRegistration : OpInfo {
  /// The request's space on a device (its properties only: no GPU work), restrictions applied.
  std::function<Space(const TaskRequest&, const DeviceInfo&)> make_space;
  /// A tuning task for a validated request (shape of the right rank, known variant).
  std::function<std::unique_ptr<TuningTask>(const TaskRequest&, const DeviceInfo&, DeviceCheck&)>
      make_task;
  const OpFace* face = nullptr;    // what the runtime serves calls through

  /// The identity of a problem of this op ("" is the first variant); throws
  /// Error(TUNED_STATUS_INVALID_ARGUMENT) for an unknown variant.
  ProblemId problem_id(const std::string& variant, const std::vector<int64_t>& shape,
                       int alignment) const;
};

/// Every registered op.
const std::vector<OpRegistration>& op_registrations();
/// What each registered op is (names, dims, variants, units), in the same order.
const std::vector<OpInfo>& op_infos();
/// The op called name, or null.
const OpInfo* find_op_info(const std::string& name);
/// The parameters config_text and read_config take an op's configs by: the registered op's, none
/// for another (a task of the tests' own: its texts stay flat).
const std::vector<Param>& config_params(const std::string& op);
/// The op called name; throws Error(TUNED_STATUS_INVALID_ARGUMENT) listing the known ones.
const OpRegistration& find_op(const std::string& name);

/// Names of the ops that can be tuned.
std::vector<std::string> op_names();

/// The shapes `autotune --op NAME` tunes when none are given.
std::vector<std::vector<int64_t>> default_shapes(const std::string& op);

/// Checks a request before any device is touched: a known op, a shape of its rank with each
/// dimension in its range (sizes 1..max_size), a known variant ("" for the first), and [space]
/// restrictions naming the op's
/// parameters with values each may take. Throws Error (INVALID_ARGUMENT, or CONFIG_ERROR for the
/// restrictions) naming the rule.
void validate_request(const TaskRequest& request);

/// The validated request's space on the device (its properties only). Throws
/// Error(TUNED_STATUS_CONFIG_ERROR) when the restrictions leave no valid config there.
Space request_space(const TaskRequest& request, const DeviceInfo& device);

/// A tuning task for the request on the device. Throws Error(TUNED_STATUS_INVALID_ARGUMENT) for
/// an unknown op, a shape of the wrong rank or a bad variant, and Error(TUNED_STATUS_CONFIG_ERROR)
/// for restrictions naming unknown parameters.
std::unique_ptr<TuningTask> make_task(const TaskRequest& request, const DeviceInfo& device,
                                      DeviceCheck& check);

}  // namespace tuned
