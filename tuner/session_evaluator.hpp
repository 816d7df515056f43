// The evaluator of a tuning run on a GPU: each task is the op's tuning task, searched by a session
// (session.hpp) that compiles, checks and times every candidate on the device.
#pragma once

#include <memory>

#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "tuner/evaluator.hpp"

namespace tuned {

class SessionDevice : public DeviceEvaluator {
 public:
  explicit SessionDevice(DeviceInfo device) : device_(std::move(device)) {}

  const DeviceInfo& device() const override { return device_; }
  /// Makes the device current on this thread and loads the checks' kernels.
  void start() override;
  void finish() override;
  std::unique_ptr<TaskEvaluator> task(const TaskRequest& request) override;

 private:
  DeviceInfo device_;
  // Candidates are not stored; only each shape's best cubin is (by keep_best).
  std::unique_ptr<KernelCache> kernels_;
  std::unique_ptr<DeviceCheck> check_;
};

}  // namespace tuned
