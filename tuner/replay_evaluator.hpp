// The evaluator of a tuning run on recorded spaces (replay.hpp): a task's search is the replay of
// the strategy on its problem's record, each step handed on as a trial, so a run's policy (locks,
// resume, budget split, bests kept in the database) is run and tested on any machine.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "tuner/evaluator.hpp"
#include "tuner/replay.hpp"

namespace tuned {

/// A problem a replay device serves: its record, the space it is searched in (narrowed to the
/// recorded configs) and its rate (work per run over the rate unit's: rate = rate_at_1ms / ms).
struct ReplayedProblem {
  RecordedSpace record;
  Space space;
  double rate_at_1ms = 0;
  std::string rate_unit;
};

class ReplayDevice : public DeviceEvaluator {
 public:
  /// compile_threads: the modelled compile pool of each replay (ReplayOptions); pace: wall time
  /// spent per replayed trial (0: none), so that a replay takes time as a GPU would and a worker
  /// can be killed in the middle of a task (autotune --replay-pace).
  ReplayDevice(DeviceInfo device, std::vector<ReplayedProblem> problems, int compile_threads = 15,
               std::chrono::milliseconds pace = {})
      : device_(std::move(device)),
        problems_(std::move(problems)),
        compile_threads_(compile_threads),
        pace_(pace) {}

  const DeviceInfo& device() const override { return device_; }
  void start() override {}
  /// The task of the problem recorded for the request's op, variant and shape; throws
  /// Error(TUNED_STATUS_INVALID_ARGUMENT) when none is.
  std::unique_ptr<TaskEvaluator> task(const TaskRequest& request) override;

 private:
  DeviceInfo device_;
  std::vector<ReplayedProblem> problems_;
  int compile_threads_;
  std::chrono::milliseconds pace_;
};

}  // namespace tuned
