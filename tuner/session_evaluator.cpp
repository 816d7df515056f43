#include "tuner/session_evaluator.hpp"

#include "core/cuda_check.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"
#include "tuner/tuning_policy.hpp"

namespace tuned {
namespace {

class SessionTask : public TaskEvaluator {
 public:
  SessionTask(std::unique_ptr<TuningTask> task, const DeviceInfo& device, KernelCache& kernels)
      : task_(std::move(task)), device_(device), kernels_(kernels) {}

  ProblemKey key() const override { return task_->key(); }
  std::string template_hash() const override { return task_->template_hash(); }
  double rate(double ms) const override { return task_->rate(ms); }
  std::string rate_unit() const override { return task_->rate_unit(); }
  std::string baseline_name() const override { return task_->baseline_name(); }

  std::vector<Config> starting_configs(cache::Database& db) override {
    return tuned::starting_configs(db, *task_, device_);
  }

  SessionResult search(const SessionOptions& options, int64_t session_id, const TrialSink& record,
                       const ProgressSink& progress, const BestSink& improved) override {
    return run_session(*task_, device_, kernels_, options, session_id, record, progress, improved);
  }

  bool keep_best(cache::Database& db, const cache::BestRecord& best,
                 const CubinRecord* cubin) override {
    return tuned::keep_best(
        db, best, task_->kernel_spec(read_config(best.config, config_params(best.key.op))), device_,
        cubin);
  }

 private:
  std::unique_ptr<TuningTask> task_;
  const DeviceInfo& device_;
  KernelCache& kernels_;
};

}  // namespace

void SessionDevice::start() {
  TUNED_CUDA_CHECK(cudaSetDevice(device_.index));
  kernels_ = std::make_unique<KernelCache>();
  check_ = std::make_unique<DeviceCheck>(*kernels_, device_);
}

void SessionDevice::finish() {
  check_.reset();
  kernels_.reset();
}

std::unique_ptr<TaskEvaluator> SessionDevice::task(const TaskRequest& request) {
  if (!check_) throw Error(TUNED_STATUS_INTERNAL_ERROR, "SessionDevice::task before start()");
  return std::make_unique<SessionTask>(make_task(request, device_, *check_), device_, *kernels_);
}

}  // namespace tuned
