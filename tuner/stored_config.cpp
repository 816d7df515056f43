#include "tuner/stored_config.hpp"

#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned {

cache::BestVerdict check_stored_best(const cache::BestRecord& best,
                                     const cache::DeviceRecord* device) {
  cache::BestVerdict verdict;
  try {
    const ProblemKey& key = best.key;
    const OpRegistration& op = find_op(key.op);
    TaskRequest request;
    request.op = key.op;
    request.shape = key.shape;
    request.layout = key.variant;
    validate_request(request);  // a known op, variant and shape of its rank and ranges
    if (key.alignment < 1) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "alignment " + std::to_string(key.alignment) + " is not an alignment class");
    }
    const Config config = read_config(best.config, op.params);
    ProblemId problem;
    problem.variant = op.variant_index(key.variant);
    problem.rank = static_cast<int>(key.shape.size());
    for (int i = 0; i < problem.rank; ++i) problem.dims[static_cast<size_t>(i)] = key.shape[i];
    problem.alignment = key.alignment;
    if (device != nullptr) {
      // The device's own limits are not recorded: its architecture's reference limits stand in
      // (a config they refuse cannot run there either; fit checks the real ones before use).
      DeviceInfo like = reference_device(device->cc_major * 10 + device->cc_minor);
      like.name = device->name;
      like.uuid = device->uuid;
      like.sm_count = device->sm_count;
      like.clock_khz = device->clock_khz;
      like.memory_bytes = static_cast<size_t>(device->memory_bytes);
      op.face->fit(config, like, problem);  // throws naming the rule broken
    } else {
      Space declared;
      for (const Param& p : op.params) declared.add(p);
      if (auto broken = declared.violation(config, /*include_pruning=*/false)) {
        throw Error(TUNED_STATUS_CONFIG_ERROR, "breaks " + *broken +
                                                   " (its GPU is not listed: only its parameters "
                                                   "were checked)");
      }
    }
    verdict.template_hash = op.face->kernel_spec(config, problem).source_hash;
  } catch (const Error& e) {
    verdict.refusal = e.what();
  }
  return verdict;
}

}  // namespace tuned
