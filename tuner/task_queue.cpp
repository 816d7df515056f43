#include "tuner/task_queue.hpp"

#include <algorithm>
#include <numeric>

namespace tuned {

TaskQueue::TaskQueue(const std::vector<double>& work, bool largest_first, double budget_s,
                     const std::atomic<bool>* stop)
    : order_(work.size()), budget_s_(budget_s), stop_(stop) {
  std::iota(order_.begin(), order_.end(), size_t{0});
  if (largest_first) {
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return work[a] > work[b]; });
  }
}

std::optional<TaskQueue::Grant> TaskQueue::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (next_ == order_.size() || (stop_ != nullptr && stop_->load())) return std::nullopt;
  const double unstarted = static_cast<double>(order_.size() - next_);
  Grant grant;
  grant.task = order_[next_++];
  grant.budget_s = std::max(kMinBudgetS, (budget_s_ - spent_s_ - reserved_s_) / unstarted);
  reserved_s_ += grant.budget_s;
  return grant;
}

void TaskQueue::done(const Grant& grant, double elapsed_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_s_ -= grant.budget_s;
  spent_s_ += elapsed_s;
}

}  // namespace tuned
