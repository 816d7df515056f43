#include "templates/registry.hpp"

#include <algorithm>

#include "templates/entropy/entropy_descriptor.hpp"
#include "templates/gemm/gemm_descriptor.hpp"
#include "templates/transpose/transpose_descriptor.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

// The op list: one line per op, its descriptor's registration (templates/registered_op.hpp).
const std::vector<OpRegistration>& op_registrations() {
  static const std::vector<OpRegistration> ops = {
      gemm_op::registration(),
      transpose_op::registration(),
      entropy_op::registration(),
  };
  return ops;
}

const std::vector<OpInfo>& op_infos() {
  static const std::vector<OpInfo> infos(op_registrations().begin(), op_registrations().end());
  return infos;
}

const OpInfo* find_op_info(const std::string& name) {
  for (const auto& info : op_infos()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const std::vector<Param>& config_params(const std::string& op) {
  static const std::vector<Param> none;
  const OpInfo* info = find_op_info(op);
  return info ? info->params : none;
}

ProblemId OpRegistration::problem_id(const std::string& variant, const std::vector<int64_t>& shape,
                                     int alignment) const {
  ProblemId id;
  id.variant = variant.empty() ? 0 : variant_index(variant);
  id.rank = static_cast<int>(std::min<size_t>(shape.size(), ProblemId::kMaxRank));
  std::copy(shape.begin(), shape.begin() + id.rank, id.dims.begin());
  id.alignment = alignment;
  return id;
}

const OpRegistration& find_op(const std::string& name) {
  for (const auto& op : op_registrations()) {
    if (op.name == name) return op;
  }
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              "op '" + name + "' is not implemented (available: " + join(op_names()) + ")");
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : op_registrations()) names.push_back(op.name);
  return names;
}

std::vector<std::vector<int64_t>> default_shapes(const std::string& op) {
  for (const auto& registered : op_registrations()) {
    if (registered.name == op) return registered.default_shapes;
  }
  return {};
}

namespace {

// The request with its variant filled in, after every device-free check.
TaskRequest validated(const TaskRequest& request) {
  const OpRegistration& op = find_op(request.op);
  std::string dims;
  for (const auto& d : op.dims) dims += (dims.empty() ? "" : "x") + d;
  for (const auto& d : op.optional_dims) dims += "[x" + d + "]";
  const int sizes = static_cast<int>(request.shape.size());
  if (sizes < op.rank() || sizes > op.max_rank()) {
    const std::string counts = op.max_rank() == op.rank()
                                   ? std::to_string(op.rank())
                                   : std::to_string(op.rank()) + " to " +
                                         std::to_string(op.max_rank());
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, op.name + " shape: needs " + dims + " (" + counts +
                                                   " sizes), got " + std::to_string(sizes));
  }
  for (int i = 0; i < sizes; ++i) {
    const int64_t size = request.shape[static_cast<size_t>(i)];
    const auto [lo, hi] = op.range_of(i);
    if (size < lo || size > hi) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  op.name + " shape: " + op.dim_name(i) + " must be in " + std::to_string(lo) +
                      ".." + std::to_string(hi) + ", got " + std::to_string(size));
    }
  }
  TaskRequest out = request;
  out.layout = request.layout.empty() ? op.variants.front() : request.layout;
  op.variant_index(out.layout);  // throws for an unknown variant
  // The restrictions against the declared values, before any device constraint.
  Space declared;
  for (const Param& p : op.params) declared.add(p);
  declared.restrict(request.space);
  return out;
}

}  // namespace

void validate_request(const TaskRequest& request) { validated(request); }

Space request_space(const TaskRequest& request, const DeviceInfo& device) {
  const TaskRequest checked = validated(request);
  Space space = find_op(request.op).make_space(checked, device);
  bool any = false;
  space.for_each([&](const Config&) {
    any = true;
    return false;
  });
  if (!any) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "space: the restrictions leave no config that meets " + request.op +
                    "'s rules for " + shape_string(request.shape) + " " + checked.layout +
                    " on " + device.name +
                    " (widen [space])");
  }
  return space;
}

std::unique_ptr<TuningTask> make_task(const TaskRequest& request, const DeviceInfo& device,
                                      DeviceCheck& check) {
  return find_op(request.op).make_task(validated(request), device, check);
}

}  // namespace tuned
