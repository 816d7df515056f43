#include "templates/registry.hpp"

#include "templates/gemm/gemm_face.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

int OpRegistration::variant_index(const std::string& variant) const {
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i] == variant) return static_cast<int>(i);
  }
  throw Error(TUNED_STATUS_INVALID_ARGUMENT, name + " variant '" + variant + "': must be one of " +
                                                 join(variants));
}

const std::vector<OpRegistration>& op_registrations() {
  static const std::vector<OpRegistration> ops = {gemm_op::registration()};
  return ops;
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

std::unique_ptr<TuningTask> make_task(const TaskRequest& request, const DeviceInfo& device,
                                      DeviceCheck& check) {
  const OpRegistration& op = find_op(request.op);
  if (static_cast<int>(request.shape.size()) != op.rank()) {
    std::string dims;
    for (const auto& d : op.dims) dims += (dims.empty() ? "" : "x") + d;
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                op.name + " shape: needs " + dims + " (" + std::to_string(op.rank()) + " sizes)");
  }
  TaskRequest validated = request;
  validated.layout = request.layout.empty() ? op.variants.front() : request.layout;
  op.variant_index(validated.layout);  // throws for an unknown variant
  return op.make_task(validated, device, check);
}

}  // namespace tuned
