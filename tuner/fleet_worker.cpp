#include "tuner/fleet_worker.hpp"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "tuned/error.hpp"
#include "tuner/device_lock.hpp"
#include "tuner/task_run.hpp"

namespace tuned {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

// The leases a worker holds, renewed every third of a lease on a connection of its own. A claim
// that can no longer be renewed (taken over after its lease ran out, or the store unreachable for
// longer than a lease) has its task stopped; a worker told to stop stops every task it holds.
class Heartbeat {
 public:
  Heartbeat(const WorkerOptions& options)
      : options_(options), thread_([this] { beat(); }) {}
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  struct Held {
    std::atomic<bool> stop{false};
    std::atomic<bool> lost{false};
  };

  // (Shared: a beat in progress may still write to a claim its tuner has just dropped.)
  void hold(const cache::ClaimedTask& claim, const std::shared_ptr<Held>& held) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[claim.token] = {claim, held};
  }
  void drop(const cache::ClaimedTask& claim) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase(claim.token);
  }

 private:
  void beat() {
    std::unique_ptr<cache::TuningStore> store;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      wake_.wait_for(lock, std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease) / 3);
      if (done_) break;
      auto held = held_;
      lock.unlock();
      const bool stopping = options_.run.stop && options_.run.stop->load();
      for (auto& [token, entry] : held) {
        if (stopping) entry.second->stop = true;
        bool renewed = false;
        try {
          if (!store) {
            store = std::make_unique<cache::TuningStore>(options_.store_url, options_.lease,
                                                         options_.lease);
          }
          store->connection().set_retry_for(options_.lease);
          renewed = cache::StoreQueue(*store).renew(entry.first, options_.lease);
        } catch (const Error& e) {
          log(LogLevel::kWarn, std::string("heartbeat: ") + e.what());
          store.reset();
        }
        if (!renewed) {
          entry.second->lost = true;
          entry.second->stop = true;
        }
      }
      lock.lock();
    }
  }

  const WorkerOptions& options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::map<std::string, std::pair<cache::ClaimedTask, std::shared_ptr<Held>>> held_;
  std::thread thread_;
};

struct WorkerState {
  WorkerState(const WorkerOptions& o, cache::Database& d, WorkerObserver& w, Heartbeat& h,
              std::string n)
      : options(o), db(d), observer(w), heartbeat(h), node(std::move(n)) {}
  const WorkerOptions& options;
  cache::Database& db;
  WorkerObserver& observer;
  Heartbeat& heartbeat;
  std::string node;
  std::mutex mutex;  // guards summary and the observer's task_ended
  WorkerSummary summary;
};

bool stopping(const WorkerOptions& options) { return options.run.stop && options.run.stop->load(); }

// One device's tuner: claims, tunes and ends tasks until none is left for it.
void tuner(WorkerState& state, DeviceEvaluator& device) {
  const WorkerOptions& options = state.options;
  cache::TuningStore store(options.store_url, options.store_retry, options.store_retry);
  cache::StoreQueue queue(store);
  store.upsert_device(cache::device_record(device.device()));
  const cache::Claimant who{state.node, static_cast<int64_t>(getpid()), device.device().index,
                            device.device().name};
  const SharedRecords shared{&store, state.node};
  while (!stopping(options)) {
    // One tuner times kernels on a GPU at a time: the lock is taken before a claim, so a
    // worker never holds a lease it cannot work on.
    std::optional<cache::ClaimedTask> claim;
    {
      DeviceLock lock(device.device().uuid, true,
                      [&](const std::string& message) { state.observer.waiting_for_lock(message); });
      claim = queue.claim(who, options.lease, options.max_attempts);
      if (claim) {
        const auto shared_held = std::make_shared<Heartbeat::Held>();
        Heartbeat::Held& held = *shared_held;
        state.heartbeat.hold(*claim, shared_held);
        state.observer.claimed(*claim, device.device());
        const cache::QueuedTask& t = claim->task;
        TuningProblem problem;
        problem.request = TaskRequest{t.op, t.shape, t.variant, {}};
        problem.recorded_alignment = t.alignment;
        TuningRunOptions run = options.run;
        run.session.strategy = t.strategy;
        run.session.max_trials = t.max_trials;
        run.session.patience = t.patience;
        run.remeasure = t.remeasure;
        run.stop = &held.stop;
        const size_t index = static_cast<size_t>(claim->id);
        TaskPlan plan{&problem, index, t.budget_s, t.seed, &held.stop};
        TaskResult result;
        std::string failure;
        try {
          result = run_task(plan, device, state.db, run, state.observer, shared);
        } catch (const Error& e) {
          if (e.status() == TUNED_STATUS_DATABASE_ERROR) throw;  // this node's, not the task's
          failure = e.what();
        }
        state.heartbeat.drop(*claim);
        std::string how;
        if (held.lost) {
          how = "lease lost";
        } else if (!failure.empty()) {
          how = queue.finish(*claim, false, failure) ? "failed" : "lease lost";
        } else if (!result.device_error.empty()) {
          how = queue.release(*claim, result.device_error) ? "released" : "lease lost";
        } else if (held.stop) {
          how = queue.release(*claim, "its worker was stopped") ? "released" : "lease lost";
        } else {
          how = queue.finish(*claim, true, outcome_note(result.outcome)) ? "done" : "lease lost";
        }
        {
          std::lock_guard<std::mutex> guard(state.mutex);
          WorkerSummary& s = state.summary;
          (how == "done" ? s.done : how == "failed" ? s.failed : how == "released" ? s.released
                                                                                 : s.lost)++;
          state.observer.ended(*claim, device.device(), how,
                               failure.empty() ? &result.outcome : nullptr, failure);
        }
        if (!result.device_error.empty()) {
          throw Error(TUNED_STATUS_LAUNCH_ERROR,
                      "GPU " + std::to_string(device.device().index) + ": " +
                          result.device_error);
        }
      }
    }
    if (!claim) {
      if (!options.wait && !queue.unfinished()) break;
      std::this_thread::sleep_for(options.poll);
    }
  }
}

}  // namespace

std::string outcome_note(const TaskOutcome& o) {
  if (o.config.empty()) return o.note.empty() ? "no valid config" : o.note;
  char text[160];
  std::snprintf(text, sizeof text, "%.4f ms, %.3g %s, %.2fx %s", o.ms, o.rate, o.rate_unit.c_str(),
                o.ms > 0 && o.baseline_ms > 0 ? o.baseline_ms / o.ms : 0.0,
                o.baseline_name.c_str());
  return std::string(text) + "; " + o.config;
}

WorkerSummary run_worker(const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                         cache::Database& db, const WorkerOptions& options,
                         WorkerObserver& observer) {
  for (const auto& device : devices) db.upsert_device(cache::device_record(device->device()));
  // The compile pools share the cores, as in a run on several devices.
  WorkerOptions shared = options;
  shared.run = sharing_cores(options.run, devices.size());
  Heartbeat heartbeat(shared);
  WorkerState state(shared, db, observer, heartbeat,
                    options.node.empty() ? host_name() : options.node);
  observer.started();
  run_tuner_threads(devices, [&](DeviceEvaluator& device) { tuner(state, device); });
  return state.summary;
}

}  // namespace tuned
