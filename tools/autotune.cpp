// autotune: tunes an op's shapes (or the problems a shapes file lists) on one device, or shares
// them out over several (one tuner thread per GPU, each holding its GPU's lock, all writing one
// database), shows the progress, records every trial and the best configs in the tuning database,
// and ends with a table against the baseline.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/database.hpp"
#include "core/cuda_check.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "templates/registry.hpp"
#include "tools/autotune_options.hpp"
#include "tools/terminal_text.hpp"
#include "tuned/error.hpp"
#include "tuner/device_lock.hpp"
#include "tuner/session.hpp"
#include "tuner/task_queue.hpp"
#include "tuner/tuning_policy.hpp"

namespace {

std::atomic<bool> g_interrupted{false};

using tuned::tools::AutotuneOptions;

// Progress lines of tuners on several GPUs: one line at a time.
std::mutex g_stderr_mutex;

// One status line, rewritten in place on a terminal (one tuner's) and printed every few seconds
// otherwise (several tuners' lines, each naming its GPU, would overwrite each other).
class ProgressPrinter {
 public:
  ProgressPrinter(std::string label, bool verbose, std::string unit, std::string baseline_name,
                  bool in_place)
      : label_(std::move(label)),
        verbose_(verbose),
        unit_(std::move(unit)),
        baseline_name_(std::move(baseline_name)),
        tty_(in_place && isatty(fileno(stderr))),
        trial_prefix_(in_place ? "" : "[" + label_ + "]") {}

  void operator()(const tuned::Progress& p) {
    std::lock_guard<std::mutex> lock(g_stderr_mutex);
    const auto now = std::chrono::steady_clock::now();
    const bool improved = p.best && p.best->ms_median != last_best_ms_;
    if (p.best) last_best_ms_ = p.best->ms_median;
    if (verbose_ && p.last) {
      std::fprintf(stderr, "%s%s  trial %d  %-14s %s  %s\n", tty_ ? "\r\033[K" : "",
                   trial_prefix_.c_str(), p.trials_done,
                   tuned::cache::to_string(p.last->disposition),
                   p.last->disposition == tuned::cache::Disposition::kOk
                       ? (std::to_string(p.last->ms_median) + " ms").c_str()
                       : p.last->message.substr(0, 80).c_str(),
                   p.last->config.c_str());
    }
    const double since = std::chrono::duration<double>(now - last_print_).count();
    if (!(tty_ ? since > 0.1 : (since > 5.0 || improved))) return;
    last_print_ = now;
    char best[160] = "no valid config yet";
    if (p.best) {
      std::snprintf(best, sizeof(best), "best %.4f ms %.2f %s (%.2fx %s)", p.best->ms_median,
                    p.best->tflops, unit_.c_str(), p.baseline_ms / p.best->ms_median,
                    baseline_name_.c_str());
    }
    std::string trials = std::to_string(p.trials_done);
    if (p.trials_limit > 0) trials += "/" + std::to_string(p.trials_limit);
    if (p.resumed > 0) trials += " +" + std::to_string(p.resumed) + " measured before";
    std::fprintf(stderr, "%s[%s] trials %s (%d ok) | %s | %.0f s elapsed, %.0f s left | %s%s",
                 tty_ ? "\r\033[K" : "", label_.c_str(), trials.c_str(), p.trials_ok, best,
                 p.elapsed_s, p.remaining_s, p.phase.c_str(), tty_ ? "" : "\n");
    std::fflush(stderr);
  }

  void finish() {
    std::lock_guard<std::mutex> lock(g_stderr_mutex);
    if (tty_) std::fprintf(stderr, "\n");
  }

 private:
  std::string label_;
  bool verbose_;
  std::string unit_, baseline_name_;
  bool tty_;
  std::string trial_prefix_;  // several tuners' trial lines name theirs
  double last_best_ms_ = 0;
  std::chrono::steady_clock::time_point last_print_{};
};

struct Row {
  std::string op, shape, layout, config, note, unit, baseline_name;
  double ms = 0, rate = 0, baseline_ms = 0, baseline_rate = 0;
  int trials = 0, ok = 0;
  int gpu = 0;              // the device it was tuned on
  std::string device_name;  // its name
};

// The results table as JSON (--json), for programs such as the Python package's tuned.autotune.
// Written to a temporary file and renamed: a reader never sees half a table.
void write_json(const std::string& path, const std::vector<Row>& rows, const std::string& device) {
  using tuned::tools::json_string;
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", std::isfinite(v) ? v : 0.0);
    return std::string(text);
  };
  std::string json = "{\"device\": " + json_string(device) + ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    json +=
        std::string(i ? ",\n  " : "\n  ") + "{\"op\": " + json_string(r.op) +
        ", \"layout\": " + json_string(r.layout) + ", \"shape\": " + json_string(r.shape) +
        ", \"ms\": " + number(r.ms) + ", \"rate\": " + number(r.rate) +
        ", \"unit\": " + json_string(r.unit) + ", \"baseline\": " + json_string(r.baseline_name) +
        ", \"baseline_ms\": " + number(r.baseline_ms) +
        ", \"ratio\": " + number(r.ms > 0 ? r.baseline_ms / r.ms : 0.0) +
        ", \"trials\": " + std::to_string(r.trials) + ", \"ok\": " + std::to_string(r.ok) +
        ", \"config\": " + json_string(r.config) + ", \"note\": " + json_string(r.note) +
        ", \"gpu\": " + std::to_string(r.gpu) + ", \"device\": " + json_string(r.device_name) + "}";
  }
  json += "\n]}\n";
  const std::string temporary = path + ".tmp";
  FILE* f = std::fopen(temporary.c_str(), "w");
  bool written = f != nullptr && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (f != nullptr && std::fclose(f) != 0) written = false;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw tuned::Error(TUNED_STATUS_INVALID_ARGUMENT,
                       "--json " + path + ": cannot write it: " + std::strerror(errno));
  }
}

// What the tuners of a run share: its inputs, the database, the queue, and the rows so far.
struct Shared {
  const AutotuneOptions& options;
  const std::vector<tuned::tools::ShapeRequest>& problems;
  tuned::cache::Database& db;
  tuned::TaskQueue& queue;
  bool several_ops = false;              // then rows and progress name their op
  bool several_gpus = false;             // then they name their GPU
  int compile_threads = 0;               // per tuner; 0: the session's default
  std::string json_device;               // the JSON's "device"
  std::mutex mutex;                      // guards rows and the JSON file
  std::vector<std::optional<Row>> rows;  // by task, as each ends
};

// One task on one GPU (current on this thread): a session, its trials and bests into the database,
// its row. Throws for a device error, after its row is kept.
void tune_task(Shared& run, const tuned::DeviceInfo& device, tuned::KernelCache& kernels,
               tuned::DeviceCheck& check, const tuned::TaskQueue::Grant& grant) {
  const AutotuneOptions& options = run.options;
  tuned::cache::Database& db = run.db;
  const size_t i = grant.task;
  const tuned::tools::ShapeRequest& problem = run.problems[i];
  auto task = tuned::make_task(tuned::tools::task_request(options, problem), device, check);
  const std::string unit = task->rate_unit();
  const std::string baseline_name = task->baseline_name();
  const tuned::cache::ProblemKey key = task->key();
  if (problem.alignment != 0 && problem.alignment != key.alignment) {
    // The task's buffers give this alignment; calls of the recorded one find no exact entry.
    std::fprintf(stderr,
                 "autotune: %s %s %s was recorded with alignment %d; tuned with alignment %d, "
                 "the result serves calls of that alignment\n",
                 problem.op.c_str(), key.layout.c_str(), key.shape_string().c_str(),
                 problem.alignment, key.alignment);
  }

  tuned::SessionOptions session_options;
  session_options.strategy = options.strategy;
  session_options.budget_s = grant.budget_s;
  session_options.max_trials = options.max_trials;
  session_options.patience = options.patience;
  session_options.flush_l2 = options.flush_l2;
  session_options.compile_threads = run.compile_threads;
  session_options.seed =
      options.seed
          ? options.seed + i
          : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  session_options.first = tuned::starting_configs(db, *task, device);
  if (!options.remeasure) {
    // A re-run resumes: what this key's trials on this template measured is not measured again.
    for (const auto& t : db.measured(key, task->template_hash())) {
      auto& known = session_options.measured[t.config];
      if (t.disposition == tuned::cache::Disposition::kOk && (!known || t.ms_median < *known)) {
        known = t.ms_median;
      }
    }
  }
  tuned::cache::SessionRecord session =
      db.begin_session({0, device.uuid, key.op, options.strategy, session_options.budget_s, ""});

  const std::string label = (run.several_gpus ? "GPU " + std::to_string(device.index) + " " : "") +
                            (run.several_ops ? key.op + " " : "") + key.shape_string() + " " +
                            key.layout;
  if (!session_options.measured.empty()) {
    std::fprintf(stderr,
                 "[%s] resuming: %zu config(s) measured before on this template are not "
                 "measured again (--remeasure measures them anew)\n",
                 label.c_str(), session_options.measured.size());
  }
  std::unique_ptr<ProgressPrinter> printer;
  session_options.stop = &g_interrupted;
  auto best_record = [&](const tuned::cache::TrialRecord& t, double ms, double baseline_ms) {
    tuned::cache::BestRecord best;
    best.key = key;
    best.config = t.config;
    best.kernel_name = t.kernel_name;
    best.ms = ms;
    best.tflops = task->rate(ms);
    best.baseline_ms = baseline_ms;
    best.session_id = session.id;
    return best;
  };
  auto result = tuned::run_session(
      *task, device, kernels, session_options, session.id,
      [&](const std::vector<tuned::cache::TrialRecord>& batch) { db.record_trials(batch); },
      [&](const tuned::Progress& p) {
        if (!printer) {
          printer = std::make_unique<ProgressPrinter>(label, options.verbose, unit, baseline_name,
                                                      !run.several_gpus);
        }
        (*printer)(p);
      },
      // Each improvement is stored with its cubin at once: a kill keeps the best so far.
      [&](const tuned::cache::TrialRecord& t, const tuned::BuiltKernel& built, double baseline) {
        tuned::keep_best(db, best_record(t, t.ms_median, baseline),
                         task->kernel_spec(tuned::Config::parse(t.config)), device, &built.cubin);
      });
  if (printer) printer->finish();

  Row row;
  row.op = key.op;
  row.shape = key.shape_string();
  row.layout = key.layout;
  row.unit = unit;
  row.baseline_name = baseline_name;
  row.gpu = device.index;
  row.device_name = device.name;
  row.trials = static_cast<int>(result.trials.size());
  for (const auto& t : result.trials) row.ok += t.disposition == tuned::cache::Disposition::kOk;
  row.baseline_ms =
      result.final_baseline.runs ? result.final_baseline.ms_median : result.baseline.ms_median;
  row.baseline_rate = task->rate(row.baseline_ms);
  if (result.best) {
    row.config = result.best->config;
    row.ms = result.final_best.runs ? result.final_best.ms_median : result.best->ms_median;
    row.rate = task->rate(row.ms);
    const tuned::cache::BestRecord best = best_record(*result.best, row.ms, row.baseline_ms);
    const tuned::CubinRecord* cubin = result.best_kernel ? &result.best_kernel->cubin : nullptr;
    if (!tuned::keep_best(db, best, task->kernel_spec(tuned::Config::parse(best.config)), device,
                          cubin)) {
      row.note = "database keeps a faster earlier best";
    }
  } else if (result.trials.empty() && result.resumed > 0) {
    row.note = "nothing new to measure: every config proposed was measured before";
  } else {
    row.note = "no valid config";
  }
  {
    std::lock_guard<std::mutex> lock(run.mutex);
    run.rows[i] = row;
    if (!options.json_path.empty()) {
      std::vector<Row> done;
      for (const auto& r : run.rows) {
        if (r) done.push_back(*r);
      }
      write_json(options.json_path, done, run.json_device);
    }
  }
  if (result.stop_reason.rfind("device error", 0) == 0) {
    throw tuned::Error(TUNED_STATUS_LAUNCH_ERROR,
                       (run.several_gpus ? "GPU " + std::to_string(device.index) + ": " : "") +
                           result.stop_reason);
  }
}

// One GPU's tuner, on its own thread: that device made current, its own kernels and checks, then
// tasks from the queue until none is left. A tuner that fails stops taking tasks (the others
// take them) and leaves its error.
void tuner(Shared& run, const tuned::DeviceInfo& device, std::exception_ptr& error) {
  try {
    TUNED_CUDA_CHECK(cudaSetDevice(device.index));
    tuned::KernelCache kernels;  // candidates are not stored; only each shape's best cubin is
    tuned::DeviceCheck check(kernels, device);
    while (const auto grant = run.queue.next()) {
      const auto started = std::chrono::steady_clock::now();
      auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      };
      try {
        tune_task(run, device, kernels, check, *grant);
      } catch (...) {
        run.queue.done(*grant, elapsed());
        throw;
      }
      run.queue.done(*grant, elapsed());
    }
  } catch (...) {
    error = std::current_exception();
  }
}

// The devices of the run, queried: --device N as ever; a list or all checked against the machine.
// Returns nothing after printing a usage error (a listed index not on this machine).
std::optional<std::vector<tuned::DeviceInfo>> query_devices(const AutotuneOptions& options) {
  const std::string argument = "--device " + tuned::tools::device_text(options);
  auto named = [&](const tuned::Error& e) {
    return tuned::Error(e.status(), argument + ": " + e.what());
  };
  std::vector<int> indices = {options.device};
  if (tuned::tools::several_devices(options)) {
    int count = 0;
    try {
      count = tuned::device_count();  // no device: the same error as --device N's
    } catch (const tuned::Error& e) {
      throw named(e);
    }
    try {
      indices = tuned::tools::selected_devices(options, count);
    } catch (const tuned::Error& e) {
      std::fprintf(stderr, "autotune: %s\n", e.what());
      return std::nullopt;
    }
  }
  std::vector<tuned::DeviceInfo> devices;
  for (int index : indices) {
    try {
      devices.push_back(tuned::query_device(index));
    } catch (const tuned::Error& e) {
      throw named(e);
    }
  }
  return devices;
}

int run(const AutotuneOptions& options) {
  const std::optional<std::vector<tuned::DeviceInfo>> queried = query_devices(options);
  if (!queried) return 2;
  const std::vector<tuned::DeviceInfo>& devices = *queried;
  const bool several_gpus = tuned::tools::several_devices(options);
  const std::vector<tuned::tools::ShapeRequest> problems = tuned::tools::shape_requests(options);
  // The device's own rules on each restricted space, before the database is opened or written:
  // an input error like those found while parsing (exit 2). Once per model of GPU.
  std::vector<std::string> models;
  for (const tuned::DeviceInfo& device : devices) {
    const std::string model = device.name + "/" + device.arch();
    if (std::find(models.begin(), models.end(), model) != models.end()) continue;
    models.push_back(model);
    for (const auto& problem : problems) {
      try {
        tuned::request_space(tuned::tools::task_request(options, problem), device);
      } catch (const tuned::Error& e) {
        std::fprintf(stderr, "autotune: %s\n", e.what());
        return 2;
      }
    }
  }
  std::string names;  // the JSON's "device": the model, or the models, tuned on
  for (const tuned::DeviceInfo& device : devices) {
    if (names.find(device.name) == std::string::npos) {
      names += (names.empty() ? "" : ", ") + device.name;
    }
  }
  // An unwritable --json is said before the database is opened, not after the first problem.
  if (!options.json_path.empty()) write_json(options.json_path, {}, names);
  const std::string db_path =
      options.db_path.empty() ? tuned::cache::default_database_path() : options.db_path;
  tuned::cache::Database db(db_path);
  // One tuner per GPU: timings are never shared with another tuner's kernels.
  std::vector<std::unique_ptr<tuned::DeviceLock>> locks;
  for (const tuned::DeviceInfo& device : devices) {
    locks.push_back(std::make_unique<tuned::DeviceLock>(
        device.uuid, !options.no_wait, [](const std::string& message) {
          std::fprintf(stderr, "autotune: %s\n", message.c_str());
        }));
    db.upsert_device(tuned::cache::device_record(device));
  }

  const double budget = options.budget_s > 0 ? options.budget_s : 60.0 * problems.size();
  std::vector<std::string> op_names;  // the ops tuned, in order of appearance
  std::string ops;
  for (const auto& problem : problems) {
    if (std::find(op_names.begin(), op_names.end(), problem.op) != op_names.end()) continue;
    ops += (op_names.empty() ? "" : ", ") + problem.op;
    op_names.push_back(problem.op);
  }
  const std::string from = options.shapes_from.empty() ? "" : " from " + options.shapes_from;
  if (!several_gpus) {
    const tuned::DeviceInfo& device = devices.front();
    std::printf(
        "autotune: %s on device %d: %s (%s, %d SMs), %zu shape(s)%s, budget %.0f s, "
        "strategy %s, database %s\n",
        ops.c_str(), options.device, device.name.c_str(), device.arch().c_str(), device.sm_count,
        problems.size(), from.c_str(), budget, options.strategy.c_str(), db_path.c_str());
  } else {
    std::string gpus;
    for (const tuned::DeviceInfo& d : devices) {
      gpus += (gpus.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " (" +
              d.arch() + ", " + std::to_string(d.sm_count) + " SMs)";
    }
    std::printf(
        "autotune: %s on %zu GPU(s) [%s], %zu shape(s)%s shared out, largest first, budget %.0f s "
        "(each shape's share as on one GPU: about %.0f s of wall time), strategy %s, "
        "database %s\n",
        ops.c_str(), devices.size(), gpus.c_str(), problems.size(), from.c_str(), budget,
        // the tuner with the most tasks: ceil(tasks / GPUs) shares
        budget * static_cast<double>((problems.size() + devices.size() - 1) / devices.size()) /
            static_cast<double>(problems.size()),
        options.strategy.c_str(), db_path.c_str());
  }
  std::fflush(stdout);

  // One GPU takes the tasks in the order given; several take the largest first, so that the
  // last ones to end are short.
  std::vector<double> work;
  for (const auto& problem : problems) work.push_back(tuned::tools::estimated_work(problem));
  tuned::TaskQueue queue(work, several_gpus, budget, &g_interrupted);
  Shared shared{options, problems, db, queue};
  shared.several_ops = op_names.size() > 1;
  shared.several_gpus = several_gpus;
  shared.json_device = names;
  shared.rows.resize(problems.size());
  if (devices.size() > 1) {
    // The compile pools share the cores: each tuner its part, less its measuring thread.
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    shared.compile_threads = std::max(1, cores / static_cast<int>(devices.size()) - 1);
  }
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<std::thread> tuners;
  for (size_t g = 0; g < devices.size(); ++g) {
    tuners.emplace_back(tuner, std::ref(shared), std::cref(devices[g]), std::ref(errors[g]));
  }
  for (auto& t : tuners) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  std::vector<Row> rows;  // each task once, in the order given
  for (const auto& r : shared.rows) {
    if (r) rows.push_back(*r);
  }
  // One table per op: each has its own rate unit and baseline.
  const bool several_ops = shared.several_ops;
  for (size_t first = 0; first < rows.size();) {
    size_t end = first;
    while (end < rows.size() && rows[end].op == rows[first].op) ++end;
    const Row& head = rows[first];
    std::printf("\n%-16s %-6s%s %10s %10s %12s %10s %7s %9s  %s\n",
                (several_ops ? head.op + " shape" : "shape").c_str(), "layout",
                several_gpus ? " gpu" : "", "ms", head.unit.c_str(),
                (head.baseline_name + " ms").c_str(), head.unit.c_str(), "ratio", "trials",
                "best config");
    for (size_t j = first; j < end; ++j) {
      const Row& r = rows[j];
      const std::string gpu =
          several_gpus ? " " + std::string(r.gpu < 10 ? "  " : " ") + std::to_string(r.gpu) : "";
      std::printf("%-16s %-6s%s %10.4f %10.2f %12.4f %10.2f %7.3f %4d/%-4d  %s%s%s\n",
                  r.shape.c_str(), r.layout.c_str(), gpu.c_str(), r.ms, r.rate, r.baseline_ms,
                  r.baseline_rate, r.ms > 0 ? r.baseline_ms / r.ms : 0.0, r.ok, r.trials,
                  r.config.c_str(), r.note.empty() ? "" : "  # ", r.note.c_str());
    }
    std::string gpus;
    for (const tuned::DeviceInfo& d : devices) {
      gpus += (gpus.empty() ? "" : ", ") +
              (several_gpus ? "GPU " + std::to_string(d.index) + ": " : "") + d.name;
    }
    std::printf(
        "(ratio = %s time / tuned time, both re-timed side by side at the end%s, the tuned time "
        "the fastest of the shape's leaders; %s)\n",
        head.baseline_name.c_str(), options.flush_l2 ? " with the L2 cache flushed" : "",
        gpus.c_str());
    first = end;
  }
  if (g_interrupted) {
    std::printf("interrupted: every trial and each shape's best so far are in %s\n",
                db_path.c_str());
    return 130;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Ctrl-C (and SIGTERM) end the shape in hand (on every GPU) after its current trial: the best so
  // far is already stored, the summary printed, exit 130. A second Ctrl-C kills at once.
  struct sigaction action {};
  action.sa_handler = [](int) { g_interrupted = true; };
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const tuned::tools::ParseResult parsed = tuned::tools::parse_autotune_command_line(argc, argv);
  if (parsed.exit_now) {
    std::fprintf(parsed.exit_code == 0 ? stdout : stderr, "%s\n", parsed.message.c_str());
    return parsed.exit_code;
  }
  try {
    return run(parsed.options);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "autotune: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autotune: internal error: %s\n", e.what());
    return 1;
  }
}
