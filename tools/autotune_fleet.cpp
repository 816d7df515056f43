#include "tools/autotune_fleet.hpp"

#include <cstdio>
#include <mutex>

#include "cache/database.hpp"
#include "cache/store_queue.hpp"
#include "tools/terminal_text.hpp"
#include "tuner/fleet_worker.hpp"

namespace tuned::tools {
namespace {

std::string task_name(const cache::QueuedTask& t) {
  return t.op + " " + t.variant + " " + shape_string(t.shape);
}

// What a worker prints: a line per claim and per end (several tuners and processes write to one
// log: whole lines, each naming its GPU), and trials with --verbose.
class WorkerPrinter : public WorkerObserver {
 public:
  explicit WorkerPrinter(bool verbose) : verbose_(verbose) {}

  void waiting_for_lock(const std::string& message) override {
    say("autotune --worker: " + message);
  }
  void claimed(const cache::ClaimedTask& task, const DeviceInfo& device) override {
    say("[GPU " + std::to_string(device.index) + "] task " + std::to_string(task.id) + " " +
        task_name(task.task) + (task.attempts > 1 ? " (claim " + std::to_string(task.attempts) +
                                                        ", resumed from the store's trials)"
                                                  : ""));
  }
  void resuming(const TaskView& task, size_t configs) override {
    say("[GPU " + std::to_string(task.device->index) + "] " + std::to_string(configs) +
        " config(s) of " + task.key.shape_string() + " measured before (here or on another "
        "node) are not measured again");
  }
  void progress(const TaskView& task, const Progress& p) override {
    if (!verbose_ || !p.last) return;
    say("[GPU " + std::to_string(task.device->index) + "] trial " +
        std::to_string(p.trials_done) + " " + cache::to_string(p.last->disposition) + " " +
        p.last->config);
  }
  void ended(const cache::ClaimedTask& task, const DeviceInfo& device, const std::string& how,
             const TaskOutcome* outcome, const std::string& note) override {
    std::string line = "[GPU " + std::to_string(device.index) + "] task " +
                       std::to_string(task.id) + " " + task_name(task.task) + ": " + how;
    if (outcome && how == "done") line += ", " + outcome_note(*outcome);
    if (!note.empty()) line += ": " + note;
    if (how == "lease lost") line += " (another worker took it over; not marked)";
    say(line);
  }

 private:
  void say(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::printf("%s\n", escape_text(line).c_str());
    std::fflush(stdout);
  }
  bool verbose_;
  std::mutex mutex_;
};

std::string seconds_text(double s) {
  char text[32];
  if (s < 120) {
    std::snprintf(text, sizeof text, "%.0f s", s);
  } else if (s < 7200) {
    std::snprintf(text, sizeof text, "%.1f min", s / 60);
  } else {
    std::snprintf(text, sizeof text, "%.1f h", s / 3600);
  }
  return text;
}

}  // namespace

int run_enqueue(const AutotuneOptions& options) {
  const std::vector<ShapeRequest> requests = shape_requests(options);
  // The budget is each shape's (as a run on one GPU shares its budget out).
  const double per_task =
      options.budget_s > 0 ? options.budget_s / static_cast<double>(requests.size()) : 60.0;
  std::vector<std::string> models = options.device_models;
  if (models.empty()) models.push_back("");
  std::vector<cache::QueuedTask> tasks;
  for (const std::string& model : models) {
    for (size_t i = 0; i < requests.size(); ++i) {
      const ShapeRequest& r = requests[i];
      const TaskRequest request = task_request(options, r);
      cache::QueuedTask t;
      t.op = request.op;
      t.variant = request.layout.empty() ? find_op(request.op).variants.front() : request.layout;
      t.shape = request.shape;
      t.alignment = r.alignment;
      t.device_model = model;
      t.seed = options.seed ? options.seed + i : 0;  // as a run on one GPU seeds its tasks
      t.strategy = options.strategy;
      t.budget_s = per_task;
      t.max_trials = options.max_trials;
      t.patience = options.patience;
      t.remeasure = options.remeasure;
      tasks.push_back(std::move(t));
    }
  }
  cache::TuningStore store(options.store_url);
  cache::StoreQueue queue(store);
  const auto [added, present] = queue.enqueue(tasks);
  const cache::QueueCounts c = queue.counts();
  std::printf(
      "autotune --enqueue: %lld task(s) added to %s, %lld already queued or running; the queue "
      "holds %lld queued, %lld running, %lld done, %lld failed\n",
      static_cast<long long>(added), store.name().c_str(), static_cast<long long>(present),
      static_cast<long long>(c.queued), static_cast<long long>(c.running),
      static_cast<long long>(c.done), static_cast<long long>(c.failed));
  return 0;
}

int run_status(const AutotuneOptions& options) {
  cache::TuningStore store(options.store_url);
  cache::StoreQueue queue(store);
  const auto tasks = queue.tasks();
  const cache::QueueCounts c = queue.counts();
  std::printf("%s: %lld queued, %lld running, %lld done, %lld failed\n", store.name().c_str(),
              static_cast<long long>(c.queued), static_cast<long long>(c.running),
              static_cast<long long>(c.done), static_cast<long long>(c.failed));
  if (tasks.empty()) return 0;
  std::printf("\n%6s  %-8s %-28s %-24s %-30s %9s %8s  %s\n", "task", "state", "problem", "model",
              "node / GPU", "elapsed", "claims", "note");
  for (const cache::TaskState& t : tasks) {
    const std::string problem = t.op + " " + t.variant + " " + t.shape;
    const std::string where =
        t.node.empty() ? "-" : t.node + " / " + std::to_string(t.gpu) + " " + t.gpu_name;
    std::string state = t.state;
    if (t.lease_expired) state += "*";
    std::printf("%6lld  %-8s %-28s %-24s %-30s %9s %8d  %s\n", static_cast<long long>(t.id),
                state.c_str(), escape_text(problem).c_str(),
                escape_text(t.device_model.empty() ? "any" : t.device_model).c_str(),
                escape_text(where).c_str(), t.node.empty() ? "-" : seconds_text(t.elapsed_s).c_str(),
                t.attempts, escape_text(t.note).c_str());
  }
  if (c.running > 0) {
    std::printf("(running*: its worker stopped renewing its lease; the next worker resumes it)\n");
  }
  return 0;
}

int run_queue_worker(const AutotuneOptions& options,
                     const std::vector<std::unique_ptr<DeviceEvaluator>>& devices,
                     const std::atomic<bool>& stop) {
  const std::string db_path =
      options.db_path.empty() ? cache::default_database_path() : options.db_path;
  cache::Database db(db_path);
  WorkerOptions worker;
  worker.store_url = options.store_url;
  worker.run.session.flush_l2 = options.flush_l2;
  worker.run.wait_for_lock = true;
  worker.run.stop = &stop;
  worker.lease = std::chrono::seconds(options.lease_s);
  worker.wait = options.wait;
  worker.node = options.node;
  WorkerPrinter printer(options.verbose);
  std::string gpus;
  for (const auto& d : devices) {
    gpus += (gpus.empty() ? "" : "; ") + std::to_string(d->device().index) + ": " +
            d->device().name;
  }
  std::printf("autotune --worker: %s on %zu GPU(s) [%s], lease %d s, database %s\n",
              cache::store::describe_store(options.store_url).c_str(), devices.size(), gpus.c_str(),
              options.lease_s, db_path.c_str());
  std::fflush(stdout);
  const WorkerSummary s = run_worker(devices, db, worker, printer);
  std::printf("autotune --worker: %d done, %d failed, %d handed back, %d lost to another worker\n",
              s.done, s.failed, s.released, s.lost);
  return stop ? 130 : 0;
}

}  // namespace tuned::tools
