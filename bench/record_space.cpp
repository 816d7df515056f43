// record_space: measures every config of a space once on this GPU, for the tuning-quality replay
// (bench/tuning_quality, tuner/replay). One problem per run; the configs are the whole space where
// it is small (up to --whole configs), else what a search there meets: the session's starting
// configs (the selection model's picks, the shipped entry, the op's seeds), every neighbour of
// the first --around of them, and --random uniform draws from the space. Each is compiled, checked
// and timed by the tuner's own session (an exhaustive pass over the list), so the records hold
// what a search would see, compile times included. Writes a gzip file (bench/recorded_space.hpp).
//   record_space --op gemm --layout NN --shape 4096x4096x4096 --out FILE.tsv.gz
//                [--whole 4000] [--around 8] [--random 300] [--seed 1] [--budget 560]
//                [--compile-threads N]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "cache/database.hpp"
#include "core/problem_key.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/check/device_check.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"
#include "tuner/compile_pool.hpp"
#include "tuner/recorded_space.hpp"
#include "tuner/session.hpp"
#include "tuner/tuning_policy.hpp"

namespace {

using namespace tuned;

// The configs to measure: see the header comment.
std::vector<Config> configs_to_record(const Space& space, const std::vector<Config>& first,
                                      size_t whole, size_t around, size_t random, uint64_t seed) {
  size_t count = 0;
  space.for_each([&](const Config&) { return ++count <= whole; });
  if (count <= whole) return space.enumerate();
  std::vector<Config> out;
  std::set<std::string> seen;
  auto add = [&](const Config& c) {
    if (seen.insert(c.canonical()).second) out.push_back(c);
  };
  for (const Config& c : first) add(c);
  for (size_t i = 0; i < first.size() && i < around; ++i) {
    for (const Config& n : space.neighbors(first[i])) add(n);
  }
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < random; ++i) {
    if (auto c = space.sample(rng)) add(*c);
  }
  return out;
}

struct RecordArgs {
  std::string op = "gemm", layout, shape_text, out_path;
  size_t whole = 4000, around = 8, random = 300;
  uint64_t seed = 1;
  double budget = 560;
  int compile_threads = 0;
  bool trace = false;
};

void add_options(CLI::App& app, RecordArgs& args) {
  app.add_flag("--trace", args.trace, "name each config on stderr before it runs (finds a hang)");
  app.add_option("--op", args.op, "op (default gemm)");
  app.add_option("--layout", args.layout, "the op's variant (gemm: NN, NT, TN, TT)");
  app.add_option("--shape", args.shape_text, "shape, e.g. 4096x4096x4096")->required();
  app.add_option("--out", args.out_path, "recorded space to write (.tsv.gz)")->required();
  app.add_option("--whole", args.whole, "record the whole space up to this many configs");
  app.add_option("--around", args.around, "starting configs whose every neighbour is recorded");
  app.add_option("--random", args.random, "uniform draws from the space recorded");
  app.add_option("--seed", args.seed, "seed of the draws");
  app.add_option("--budget", args.budget,
                 "seconds the measuring may take (what is done is written)");
  app.add_option("--compile-threads", args.compile_threads, "compile threads (default: cores - 1)");
}

// The session's starting configs with an empty database: what autotune starts from on a GPU
// nobody tuned this shape on.
std::vector<Config> fresh_starting_configs(const TuningTask& task, const DeviceInfo& device) {
  const auto scratch = std::filesystem::temp_directory_path() /
                       ("record_space_" + std::to_string(::getpid()) + ".db");
  std::vector<Config> first;
  {
    cache::Database db(scratch.string());
    first = starting_configs(db, task, device);
  }
  std::filesystem::remove(scratch);
  std::filesystem::remove(scratch.string() + "-wal");
  std::filesystem::remove(scratch.string() + "-shm");
  return first;
}

SessionOptions session_options(const RecordArgs& args, const std::vector<Config>& configs) {
  SessionOptions options;
  options.strategy = "exhaustive";  // the list first, then nothing: max_trials ends it
  options.first = configs;
  options.max_trials = static_cast<int>(configs.size());
  options.budget_s = args.budget;
  options.seed = args.seed;
  options.compile_threads = args.compile_threads;
  if (args.trace) {
    options.before_run = [](const Config& c) {
      std::fprintf(stderr, "running %s\n", c.canonical().c_str());
      std::fflush(stderr);
    };
  }
  return options;
}

// The record's problem, device and starting configs, before any trial.
RecordedSpace empty_record(const RecordArgs& args, const TuningTask& task, const DeviceInfo& device,
                           const std::vector<Config>& first) {
  RecordedSpace record;
  record.op = args.op;
  record.variant = task.key().variant;
  record.shape = task.key().shape;
  record.alignment = task.key().alignment;
  record.device = device.name;
  record.compute_capability = device.compute_capability();
  record.template_hash = task.template_hash();
  record.compile_threads =
      args.compile_threads > 0 ? args.compile_threads : default_compile_threads();
  for (const Config& c : first) {
    record.first.push_back(config_text(c, config_params(task.key().op)));
  }
  return record;
}

// Runs the session over the configs, keeping every trial in the record.
SessionResult measure(const RecordArgs& args, TuningTask& task, const DeviceInfo& device,
                      KernelCache& kernels, const std::vector<Config>& configs,
                      RecordedSpace& record) {
  // Written as it goes (every 50 trials, replaced whole): a run killed by a hung kernel or a
  // timeout keeps what it measured.
  auto write = [&] {
    const std::string temporary = args.out_path + ".tmp";
    write_recorded_space(temporary, record);
    std::filesystem::rename(temporary, args.out_path);
  };
  auto keep = [&](const std::vector<cache::TrialRecord>& batch) {
    for (const auto& t : batch) {
      RecordedTrial r;
      r.config = t.config;
      r.disposition = cache::to_string(t.disposition);
      r.ok = t.disposition == cache::Disposition::kOk;
      r.ran = t.disposition != cache::Disposition::kCompileError &&
              t.disposition != cache::Disposition::kResourceLimit;
      r.ms = t.ms_median;
      r.compile_ms = t.compile_ms;
      r.runs = t.runs;
      record.trials.push_back(std::move(r));
      if (record.trials.size() % 50 == 0) write();
    }
  };
  const SessionOptions options = session_options(args, configs);
  return run_session(task, device, kernels, options, 0, keep, [&](const Progress& p) {
    if (p.trials_done == 1) record.baseline_ms = p.baseline_ms;
    if (p.trials_done % 100 == 0) {
      std::fprintf(stderr, "  %d/%zu measured, %.0f s\n", p.trials_done, configs.size(),
                   p.elapsed_s);
    }
  });
}

int run(int argc, char** argv) {
  CLI::App app{"Measures every config of a space once, for the tuning-quality replay.",
               "record_space"};
  RecordArgs args;
  add_options(app, args);
  CLI11_PARSE(app, argc, argv);

  const DeviceInfo device = query_device(0);
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  const auto shape = parse_shape_string(args.shape_text);
  if (!shape) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--shape " + args.shape_text + ": not AxBx...");
  }
  TaskRequest request{args.op, *shape, args.layout, {}};
  validate_request(request);
  auto task = make_task(request, device, check);

  const std::vector<Config> first = fresh_starting_configs(*task, device);
  const auto configs =
      configs_to_record(task->space(), first, args.whole, args.around, args.random, args.seed);
  std::fprintf(stderr, "record_space: %s %s %s on %s: %zu configs (%zu starting)\n",
               args.op.c_str(), args.layout.c_str(), args.shape_text.c_str(), device.name.c_str(),
               configs.size(), first.size());

  RecordedSpace record = empty_record(args, *task, device, first);
  const auto started = std::chrono::steady_clock::now();
  const SessionResult result = measure(args, *task, device, kernels, configs, record);
  record.baseline_ms = result.baseline.ms_median;
  write_recorded_space(args.out_path, record);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%s %s %s: %zu measured (%s) in %.0f s, best %.4f ms, %s %.4f ms -> %s\n",
              args.op.c_str(), record.variant.c_str(), args.shape_text.c_str(),
              result.trials.size(), result.stop.text().c_str(), seconds, record.best_ms(),
              task->baseline_name().c_str(), record.baseline_ms, args.out_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "record_space: %s\n", e.what());
    return 1;
  }
}
