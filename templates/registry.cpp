#include "templates/registry.hpp"

#include "templates/gemm/gemm_task.hpp"
#include "tuned/error.hpp"

namespace tuned {

std::vector<std::string> op_names() { return {"gemm"}; }

std::vector<std::vector<int64_t>> default_shapes(const std::string& op) {
  if (op == "gemm") {
    return {{4096, 4096, 4096}, {1024, 1024, 1024}, {1000, 1000, 1000}, {127, 127, 127}};
  }
  return {};
}

std::unique_ptr<TuningTask> make_task(const TaskRequest& request, const DeviceInfo& device,
                                      DeviceCheck& check) {
  if (request.op == "gemm") {
    if (request.shape.size() != 3) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT, "gemm shape: needs MxNxK (three sizes)");
    }
    const auto problem = gemm_op::packed_problem(request.layout.empty() ? "NN" : request.layout,
                                              request.shape[0], request.shape[1],
                                              request.shape[2]);
    auto task = std::make_unique<gemm_op::GemmTask>(device, problem, check);
    task->mutable_space().restrict(request.space);
    return task;
  }
  std::string known;
  for (const auto& name : op_names()) known += (known.empty() ? "" : ", ") + name;
  throw Error(TUNED_STATUS_INVALID_ARGUMENT,
              "op '" + request.op + "' is not implemented (available: " + known + ")");
}

}  // namespace tuned
