#include "tuner/compile_pool.hpp"

#include <sched.h>

#include <algorithm>

namespace tuned {

int default_compile_threads() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) cores = CPU_COUNT(&mask);
  return std::max(1, cores - 1);
}

CompilePool::CompilePool(KernelCache& kernels, const DeviceInfo& device, int threads)
    : kernels_(kernels), device_(device) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    pending_.clear();
  }
  job_ready_.notify_all();
  for (auto& w : workers_) w.join();
}

void CompilePool::submit(CompileJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(std::move(job));
    ++in_flight_;
  }
  job_ready_.notify_one();
}

CompileJob CompilePool::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  result_ready_.wait(lock, [this] { return !done_.empty(); });
  CompileJob job = std::move(done_.front());
  done_.pop_front();
  --in_flight_;
  return job;
}

size_t CompilePool::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

void CompilePool::work() {
  while (true) {
    CompileJob job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      job_ready_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      job = std::move(pending_.front());
      pending_.pop_front();
    }
    try {
      job.built = kernels_.build(job.spec, device_);
    } catch (const Error& e) {
      job.error = e.what();
      job.error_status = e.status();
    } catch (const std::exception& e) {
      job.error = e.what();
      job.error_status = TUNED_STATUS_INTERNAL_ERROR;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.push_back(std::move(job));
    }
    result_ready_.notify_one();
  }
}

}  // namespace tuned
