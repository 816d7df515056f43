// autotune's modes for many machines: --enqueue puts problems in a store's queue, --worker works
// through it (tuner/fleet_worker.hpp), --status shows it. Parsing is autotune_options'; the work
// is the library's; this file prints.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "tools/autotune_options.hpp"
#include "tuner/evaluator.hpp"

namespace tuned::tools {

int run_enqueue(const AutotuneOptions& options);
int run_status(const AutotuneOptions& options);
/// Works through the queue on the devices (GPUs or --replay's); stop: SIGINT's flag.
int run_queue_worker(const AutotuneOptions& options,
                     const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                     const std::atomic<bool>& stop);

}  // namespace tuned::tools
