// autotune: tunes an op's shapes (or the problems a shapes file lists) on one device, or shares
// them out over several. The run itself (locks, database, resume, budget split, bests kept) is the
// library's (tuner/tuning_run.hpp); this program parses the command line, shows the progress and
// ends with a table against the baseline.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tools/autotune_fleet.hpp"
#include "tools/autotune_options.hpp"
#include "tools/exit_codes.hpp"
#include "tools/report/write_report.hpp"
#include "tools/terminal_text.hpp"
#include "tools/text_table.hpp"
#include "tuned/error.hpp"
#include "tuner/recorded_space.hpp"
#include "tuner/replay_evaluator.hpp"
#include "tuner/session_evaluator.hpp"
#include "tuner/tuning_run.hpp"

namespace {

std::atomic<bool> g_interrupted{false};

using tuned::tools::AutotuneOptions;
using tuned::tools::kExitUsage;

// Progress lines of tuners on several GPUs: one line at a time.
std::mutex g_stderr_mutex;

// How progress is shown: a line rewritten in place on a terminal (one tuner's); lines every few
// seconds and at each new best (several tuners' on a terminal, whose in-place lines would
// overwrite each other, or --progress); nothing (--quiet, or stderr is no terminal).
enum class ProgressMode { kQuiet, kInPlace, kLines };

ProgressMode progress_mode(const AutotuneOptions& options) {
  if (options.quiet) return ProgressMode::kQuiet;
  if (isatty(fileno(stderr)) != 0) {
    return tuned::tools::several_devices(options) ? ProgressMode::kLines : ProgressMode::kInPlace;
  }
  return options.progress ? ProgressMode::kLines : ProgressMode::kQuiet;
}

// "45 s", "2m05s", "1h02m".
std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%ld s", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  }
  return text;
}

// The terminal's width, for a line rewritten in place (a wider one would wrap, and \r would
// rewrite only its last part); 0 where unknown.
size_t terminal_columns() {
  winsize size{};
  return ioctl(fileno(stderr), TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

// The run's clock: its elapsed time and what is left of its wall-time budget (the tasks share out
// the budget, and what a task leaves unused goes to the others, so the run ends near it; tasks
// that end early by --max-trials or --patience end it earlier: then the ETA is at most that).
class RunClock {
 public:
  RunClock(double wall_budget_s, bool may_end_early)
      : wall_budget_s_(wall_budget_s), may_end_early_(may_end_early) {}
  void start() { start_ = std::chrono::steady_clock::now(); }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // "2m10s elapsed, ETA 7m50s".
  std::string text() const {
    const double elapsed = elapsed_s();
    return duration_text(elapsed) + " elapsed, ETA " + (may_end_early_ ? "at most " : "") +
           duration_text(wall_budget_s_ - elapsed);
  }

 private:
  double wall_budget_s_;
  bool may_end_early_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// One task's progress: its status line (see ProgressMode) and, with --verbose, a line per trial.
class ProgressPrinter {
 public:
  ProgressPrinter(std::string label, bool verbose, std::string unit, std::string baseline_name,
                  ProgressMode mode, const RunClock& clock)
      : label_(std::move(label)),
        verbose_(verbose),
        unit_(std::move(unit)),
        baseline_name_(std::move(baseline_name)),
        mode_(mode),
        clock_(clock) {}

  void operator()(const tuned::Progress& p) {
    std::lock_guard<std::mutex> lock(g_stderr_mutex);
    const auto now = std::chrono::steady_clock::now();
    const bool improved = p.best && p.best->ms_median != last_best_ms_;
    if (p.best) last_best_ms_ = p.best->ms_median;
    const bool in_place = mode_ == ProgressMode::kInPlace;
    if (verbose_ && p.last) {
      std::fprintf(stderr, "%s[%s]  trial %d  %-14s %s  %s\n", in_place ? "\r\033[K" : "",
                   label_.c_str(), p.trials_done, tuned::cache::to_string(p.last->disposition),
                   p.last->disposition == tuned::cache::Disposition::kOk
                       ? (std::to_string(p.last->ms_median) + " ms").c_str()
                       : p.last->message.substr(0, 80).c_str(),
                   p.last->config.c_str());
      shown_ = false;
    }
    if (mode_ == ProgressMode::kQuiet) return;
    const double since = std::chrono::duration<double>(now - last_print_).count();
    if (!(in_place ? since > 0.1 : (since > 5.0 || improved))) return;
    last_print_ = now;
    char best[160] = "no valid config yet";
    if (p.best) {
      std::snprintf(best, sizeof(best), "best %.4f ms %.2f %s (%.2fx %s)", p.best->ms_median,
                    p.best->rate, unit_.c_str(), p.baseline_ms / p.best->ms_median,
                    baseline_name_.c_str());
    }
    std::string trials = std::to_string(p.trials_done);
    if (p.trials_limit > 0) trials += "/" + std::to_string(p.trials_limit);
    if (p.resumed > 0) trials += " +" + std::to_string(p.resumed) + " measured before";
    char text[768];
    std::snprintf(text, sizeof text, "[%s] trials %s (%d ok) | %s | %s | %s", label_.c_str(),
                  trials.c_str(), p.trials_ok, best, clock_.text().c_str(), p.phase.c_str());
    std::string line = text;
    if (in_place) {
      const size_t columns = terminal_columns();
      if (columns > 4) line = tuned::tools::truncate_code_points(line, columns - 1);
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      shown_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

  void finish() {
    std::lock_guard<std::mutex> lock(g_stderr_mutex);
    if (shown_) std::fprintf(stderr, "\n");  // the task's last status line stays
  }

 private:
  std::string label_;
  bool verbose_;
  std::string unit_, baseline_name_;
  ProgressMode mode_;
  const RunClock& clock_;
  bool shown_ = false;  // an in-place line is on the screen, unterminated
  double last_best_ms_ = 0;
  std::chrono::steady_clock::time_point last_print_{};
};

// The results table as JSON (--json), for programs such as the Python package's tuned.autotune.
// Written to a temporary file and renamed: a reader never sees half a table.
void write_json(const std::string& path, const std::vector<tuned::TaskOutcome>& rows,
                const std::string& device) {
  using tuned::tools::json_string;
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", std::isfinite(v) ? v : 0.0);
    return std::string(text);
  };
  std::string json = "{\"device\": " + json_string(device) + ", \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const tuned::TaskOutcome& r = rows[i];
    json += std::string(i ? ",\n  " : "\n  ") + "{\"op\": " + json_string(r.key.op) +
            ", \"layout\": " + json_string(r.key.variant) +
            ", \"shape\": " + json_string(r.key.shape_string()) + ", \"ms\": " + number(r.ms) +
            ", \"rate\": " + number(r.rate) + ", \"unit\": " + json_string(r.rate_unit) +
            ", \"baseline\": " + json_string(r.baseline_name) +
            ", \"baseline_ms\": " + number(r.baseline_ms) +
            ", \"ratio\": " + number(r.ms > 0 ? r.baseline_ms / r.ms : 0.0) +
            ", \"trials\": " + std::to_string(r.trials) + ", \"ok\": " + std::to_string(r.ok) +
            ", \"config\": " + json_string(r.config) + ", \"note\": " + json_string(r.note) +
            ", \"gpu\": " + std::to_string(r.gpu) + ", \"device\": " + json_string(r.device_name) +
            "}";
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

// What autotune shows of a run: the header once every GPU's lock is held, notes on stderr, each
// task's progress line, and the JSON table rewritten as each task ends.
class RunPrinter : public tuned::TuningObserver {
 public:
  RunPrinter(const AutotuneOptions& options, bool several_ops, bool several_gpus, size_t tasks,
             double wall_budget_s, std::string json_device, std::function<void()> header)
      : options_(options),
        several_ops_(several_ops),
        several_gpus_(several_gpus),
        tasks_(tasks),
        mode_(progress_mode(options)),
        clock_(wall_budget_s, options.max_trials > 0 || options.patience > 0),
        json_device_(std::move(json_device)),
        header_(std::move(header)) {}

  void waiting_for_lock(const std::string& message) override {
    std::fprintf(stderr, "autotune: %s\n", message.c_str());
  }

  void started() override {
    clock_.start();
    header_();
  }

  void alignment_changed(const tuned::TaskView& task, int recorded_alignment) override {
    // The task's buffers give this alignment; calls of the recorded one find no exact entry.
    std::fprintf(stderr,
                 "autotune: %s %s %s was recorded with alignment %d; tuned with alignment %d, "
                 "the result serves calls of that alignment\n",
                 task.key.op.c_str(), task.key.variant.c_str(), task.key.shape_string().c_str(),
                 recorded_alignment, task.key.alignment);
  }

  void resuming(const tuned::TaskView& task, size_t configs) override {
    std::fprintf(stderr,
                 "[%s] resuming: %zu config(s) measured before on this template are not "
                 "measured again (--remeasure measures them anew)\n",
                 label(task).c_str(), configs);
  }

  void progress(const tuned::TaskView& task, const tuned::Progress& p) override {
    ProgressPrinter* printer = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& mine = printers_[task.index];
      if (!mine) {  // the task's first progress: it is the next shape started
        mine = std::make_unique<ProgressPrinter>(label(task, ++started_), options_.verbose,
                                                 task.rate_unit, task.baseline_name, mode_, clock_);
      }
      printer = mine.get();
    }
    (*printer)(p);
  }

  void task_ended(const tuned::TaskView& task,
                  const std::vector<std::optional<tuned::TaskOutcome>>& outcomes) override {
    std::unique_ptr<ProgressPrinter> printer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      printer = std::move(printers_[task.index]);
      printers_.erase(task.index);
    }
    if (printer) printer->finish();
    if (!options_.json_path.empty()) {
      std::vector<tuned::TaskOutcome> done;
      for (const auto& r : outcomes) {
        if (r) done.push_back(*r);
      }
      write_json(options_.json_path, done, json_device_);
    }
  }

 private:
  // "shape 3 of 12: 4096x4096x4096 NN" (shapes counted as they start: several GPUs take them out
  // of order, largest first); without a number, as notes name the task.
  std::string label(const tuned::TaskView& task, size_t number = 0) const {
    return (number > 0 ? "shape " + std::to_string(number) + " of " + std::to_string(tasks_) + ": "
                       : "") +
           (several_gpus_ ? "GPU " + std::to_string(task.device->index) + " " : "") +
           (several_ops_ ? task.key.op + " " : "") + task.key.shape_string() + " " +
           task.key.variant;
  }

  const AutotuneOptions& options_;
  bool several_ops_, several_gpus_;
  size_t tasks_;
  ProgressMode mode_;
  RunClock clock_;
  size_t started_ = 0;  // tasks whose progress began (mutex_)
  std::string json_device_;
  std::function<void()> header_;
  std::mutex mutex_;                                             // guards printers_
  std::map<size_t, std::unique_ptr<ProgressPrinter>> printers_;  // by task, while it runs
};

// --replay's GPUs: the records' GPU model (as a reference device of its compute capability), one
// uuid per process and index, so that processes on one machine are GPUs of their own.
std::optional<std::vector<tuned::DeviceInfo>> replay_devices(
    const AutotuneOptions& options, const std::vector<tuned::ReplayedProblem>& problems) {
  std::vector<int> indices = {options.device};
  try {
    indices = tuned::tools::selected_devices(options, options.replay_gpus);
    if (!tuned::tools::several_devices(options) && options.device >= options.replay_gpus) {
      throw tuned::Error(TUNED_STATUS_INVALID_ARGUMENT,
                         "--device " + std::to_string(options.device) + ": --replay stands in for " +
                             std::to_string(options.replay_gpus) + " GPU(s) (--replay-gpus)");
    }
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "autotune: %s\n", e.what());
    return std::nullopt;
  }
  const tuned::RecordedSpace& first = problems.front().record;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<tuned::DeviceInfo> devices;
  for (int index : indices) {
    tuned::DeviceInfo d = tuned::reference_device(first.compute_capability ? first.compute_capability : 90);
    d.index = index;
    d.name = "replayed " + (first.device.empty() ? d.name : first.device);
    d.uuid = "GPU-replay-" + std::string(host) + "-" + std::to_string(getpid()) + "-" +
             std::to_string(index);
    devices.push_back(d);
  }
  return devices;
}

// The run's evaluators: a session on each GPU, or the replay of the recorded spaces.
std::vector<std::unique_ptr<tuned::DeviceEvaluator>> evaluators_for(
    const AutotuneOptions& options, const std::vector<tuned::DeviceInfo>& devices,
    const std::vector<tuned::ReplayedProblem>& replayed) {
  std::vector<std::unique_ptr<tuned::DeviceEvaluator>> evaluators;
  for (const tuned::DeviceInfo& device : devices) {
    if (options.replay.empty()) {
      evaluators.push_back(std::make_unique<tuned::SessionDevice>(device));
    } else {
      evaluators.push_back(std::make_unique<tuned::ReplayDevice>(
          device, replayed, 15, std::chrono::milliseconds(options.replay_pace_ms)));
    }
  }
  return evaluators;
}

// The devices of the run, queried: --device N as ever; a list or all checked against the machine.
// Returns nothing after printing a usage error (an index not on this machine); throws Error
// (TUNED_STATUS_NO_DEVICE) where there is no device or no driver.
std::optional<std::vector<tuned::DeviceInfo>> query_devices(const AutotuneOptions& options) {
  const std::string argument = "--device " + tuned::tools::device_text(options);
  auto named = [&](const tuned::Error& e) {
    return tuned::Error(e.status(), argument + ": " + e.what());
  };
  int count = 0;
  try {
    count = tuned::device_count();  // no device or no driver: exit 3, whatever the selection
  } catch (const tuned::Error& e) {
    throw named(e);
  }
  std::vector<int> indices = {options.device};
  try {
    if (tuned::tools::several_devices(options)) {
      indices = tuned::tools::selected_devices(options, count);
    } else if (options.device >= count) {  // an index the machine lacks: a usage error
      throw tuned::Error(TUNED_STATUS_INVALID_ARGUMENT,
                         argument + ": no such CUDA device (this machine has " +
                             std::to_string(count) + ", numbered from 0)");
    }
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "autotune: %s\n", e.what());
    return std::nullopt;
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

// The device's own rules on each restricted space, before the database is opened or written: an
// input error like those found while parsing. Once per model of GPU. Returns whether all hold.
bool spaces_hold(const AutotuneOptions& options,
                 const std::vector<tuned::tools::ShapeRequest>& problems,
                 const std::vector<tuned::DeviceInfo>& devices) {
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
        return false;
      }
    }
  }
  return true;
}

// "a, b": each distinct text of the list once, in order of appearance.
std::string distinct_list(const std::vector<std::string>& texts) {
  std::vector<std::string> seen;
  std::string list;
  for (const std::string& text : texts) {
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    list += (seen.empty() ? "" : ", ") + text;
    seen.push_back(text);
  }
  return list;
}

// The run's wall time by its budget: on several GPUs, each shape's share as on one GPU, for the
// tuner with the most tasks (ceil(tasks / GPUs) shares).
double wall_budget_s(const AutotuneOptions& options, size_t gpus, size_t problems, double budget) {
  if (!tuned::tools::several_devices(options) || problems == 0) return budget;
  return budget * static_cast<double>((problems + gpus - 1) / gpus) / static_cast<double>(problems);
}

// The run's first line: what is tuned, where, with which budget, strategy and database.
void print_header(const AutotuneOptions& options, const std::vector<tuned::DeviceInfo>& devices,
                  size_t problems, const std::string& ops, double budget,
                  const std::string& db_path) {
  const std::string from = options.shapes_from.empty() ? "" : " from " + options.shapes_from;
  if (!tuned::tools::several_devices(options)) {
    const tuned::DeviceInfo& device = devices.front();
    std::printf(
        "autotune: %s on device %d: %s (%s, %d SMs), %zu shape(s)%s, budget %.0f s, "
        "strategy %s, database %s\n",
        ops.c_str(), options.device, device.name.c_str(), device.arch().c_str(), device.sm_count,
        problems, from.c_str(), budget, options.strategy.c_str(), db_path.c_str());
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
        ops.c_str(), devices.size(), gpus.c_str(), problems, from.c_str(), budget,
        wall_budget_s(options, devices.size(), problems, budget), options.strategy.c_str(),
        db_path.c_str());
  }
  std::fflush(stdout);
}

// One table per op (each has its own rate unit and baseline), tasks in the order given. Every
// column says what it holds: the tuned kernel's time and rate, then the baseline's.
void print_tables(const AutotuneOptions& options, const std::vector<tuned::TaskOutcome>& rows,
                  const std::vector<tuned::DeviceInfo>& devices, bool several_ops) {
  const bool several_gpus = tuned::tools::several_devices(options);
  const size_t config_limit = options.wide ? 0 : tuned::tools::kConfigColumns;
  for (size_t first = 0; first < rows.size();) {
    size_t end = first;
    while (end < rows.size() && rows[end].key.op == rows[first].key.op) ++end;
    const tuned::TaskOutcome& head = rows[first];
    bool notes = false, abbreviated = false;
    for (size_t j = first; j < end; ++j) {
      notes = notes || !rows[j].note.empty();
      abbreviated =
          abbreviated || tuned::tools::abbreviate_config(rows[j].config, config_limit) != rows[j].config;
    }
    std::vector<std::string> headers = {several_ops ? head.key.op + " shape" : "shape", "layout"};
    if (several_gpus) headers.push_back("gpu");
    const size_t numbers = headers.size();  // the right-aligned columns start here
    for (const std::string& h :
         {std::string("tuned ms"), "tuned " + head.rate_unit, head.baseline_name + " ms",
          head.baseline_name + " " + head.rate_unit, std::string("ratio"), std::string("ok/trials"),
          std::string("best config")}) {
      headers.push_back(h);
    }
    if (notes) headers.push_back("note");
    std::vector<size_t> right;
    for (size_t c = numbers; c < numbers + 6; ++c) right.push_back(c);
    char cell[64];
    auto number = [&](const char* format, double value) {
      std::snprintf(cell, sizeof cell, format, value);
      return std::string(cell);
    };
    std::printf("\n");
    std::fflush(stdout);
    std::ostringstream table;
    tuned::tools::Table(headers, right)
        .print(
            table,
            [&](const tuned::tools::RowSink& row) {
              for (size_t j = first; j < end; ++j) {
                const tuned::TaskOutcome& r = rows[j];
                std::vector<std::string> cells = {r.key.shape_string(), r.key.variant};
                if (several_gpus) cells.push_back(std::to_string(r.gpu));
                for (const std::string& c :
                     {number("%.4f", r.ms), number("%.2f", r.rate), number("%.4f", r.baseline_ms),
                      number("%.2f", r.baseline_rate),
                      number("%.3f", r.ms > 0 ? r.baseline_ms / r.ms : 0.0),
                      std::to_string(r.ok) + "/" + std::to_string(r.trials),
                      tuned::tools::abbreviate_config(r.config, config_limit)}) {
                  cells.push_back(c);
                }
                if (notes) cells.push_back(r.note);
                row(std::move(cells));
              }
            },
            "");
    std::fputs(table.str().c_str(), stdout);
    std::string gpus;
    for (const tuned::DeviceInfo& d : devices) {
      gpus += (gpus.empty() ? "" : ", ") +
              (several_gpus ? "GPU " + std::to_string(d.index) + ": " : "") + d.name;
    }
    std::printf(
        "(ratio = %s time / tuned time, both re-timed side by side at the end%s, the tuned time "
        "the fastest of the shape's leaders; %s%s)\n",
        head.baseline_name.c_str(), options.flush_l2 ? " with the L2 cache flushed" : "",
        gpus.c_str(),
        abbreviated ? "; configs abbreviated: --wide prints them whole, as --json and tunedb "
                      "export do"
                    : "");
    first = end;
  }
}

// The run's policy from the command line.
tuned::TuningRunOptions run_options(const AutotuneOptions& options, double budget) {
  tuned::TuningRunOptions run;
  run.session.strategy = options.strategy;
  run.session.max_trials = options.max_trials;
  run.session.patience = options.patience;
  run.session.flush_l2 = options.flush_l2;
  run.budget_s = budget;
  run.remeasure = options.remeasure;
  run.seed = options.seed;
  run.wait_for_lock = !options.no_wait;
  run.stop = &g_interrupted;
  return run;
}

int run(const AutotuneOptions& options) {
  using Mode = AutotuneOptions::QueueMode;
  if (options.queue_mode == Mode::kEnqueue) return tuned::tools::run_enqueue(options);
  if (options.queue_mode == Mode::kStatus) return tuned::tools::run_status(options);
  std::vector<tuned::ReplayedProblem> replayed;
  if (!options.replay.empty()) replayed = tuned::replayed_problems(options.replay);
  const std::optional<std::vector<tuned::DeviceInfo>> queried =
      options.replay.empty() ? query_devices(options) : replay_devices(options, replayed);
  if (!queried) return kExitUsage;
  const std::vector<tuned::DeviceInfo>& devices = *queried;
  if (options.queue_mode == Mode::kWorker) {
    return tuned::tools::run_queue_worker(options, evaluators_for(options, devices, replayed),
                                          g_interrupted);
  }
  const std::vector<tuned::tools::ShapeRequest> requests = tuned::tools::shape_requests(options);
  if (options.replay.empty() && !spaces_hold(options, requests, devices)) return kExitUsage;
  std::vector<std::string> names, op_names;
  for (const tuned::DeviceInfo& device : devices) names.push_back(device.name);
  for (const auto& request : requests) op_names.push_back(request.op);
  const std::string json_device = distinct_list(names);  // the model, or the models, tuned on
  const std::string ops = distinct_list(op_names);       // the ops tuned, in order of appearance
  const bool several_ops =
      std::any_of(op_names.begin(), op_names.end(), [&](auto& op) { return op != op_names[0]; });
  // An unwritable --json is said before the database is opened, not after the first problem.
  if (!options.json_path.empty()) write_json(options.json_path, {}, json_device);
  const std::string db_path =
      options.db_path.empty() ? tuned::cache::default_database_path() : options.db_path;
  tuned::cache::Database db(db_path);

  const double budget = options.budget_s > 0 ? options.budget_s : 60.0 * requests.size();
  std::vector<tuned::TuningProblem> problems;
  for (const auto& request : requests) {
    problems.push_back({tuned::tools::task_request(options, request),
                        tuned::tools::estimated_work(request), request.alignment});
  }
  const auto evaluators = evaluators_for(options, devices, replayed);
  RunPrinter printer(
      options, several_ops, tuned::tools::several_devices(options), requests.size(),
      wall_budget_s(options, devices.size(), requests.size(), budget), json_device,
      [&] { print_header(options, devices, requests.size(), ops, budget, db_path); });
  // The run's sessions are those begun from here on (the report's scope).
  int64_t sessions_before = 0;
  db.for_each_session({}, false, [&](const tuned::cache::Database::SessionSummary& s) {
    sessions_before = std::max(sessions_before, s.session.id);
  });
  const auto outcomes =
      tuned::run_tuning(problems, evaluators, db, run_options(options, budget), printer);
  std::vector<tuned::TaskOutcome> rows;  // each task once, in the order given
  for (const auto& r : outcomes) {
    if (r) rows.push_back(*r);
  }
  print_tables(options, rows, devices, several_ops);
  if (!options.report_path.empty()) {  // (an interrupted run's too: what it measured)
    tuned::report::Scope scope;
    scope.sessions_after = sessions_before;
    try {
      const auto written =
          tuned::report::write_report(db, scope, options.report_path, "tuned: autotune run");
      std::printf("%s\n", tuned::report::describe(written, options.report_path).c_str());
    } catch (const tuned::Error& e) {
      std::fprintf(stderr, "autotune: --report %s\n", e.what());
      return tuned::tools::kExitFailure;
    }
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
    return tuned::tools::exit_code_of(e);  // 3: no CUDA device or no driver
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autotune: internal error: %s\n", e.what());
    return tuned::tools::kExitFailure;
  }
}
