// gemm_families: the GEMM families where even tuning lost (issue 10), tuned per shape with
// `autotune` for a fixed budget and then compared with cuBLAS FP32 side by side in one process,
// every result checked against cuBLAS and both against an FP64 product at a sample of C (the
// accuracy contract: tuned's error within gemm_op::contract_limit of cuBLAS's). Shapes: seed
// 201's random shapes (bench/random_shapes.hpp, 16 of them) and the named family shapes:
// unaligned leading dimensions (4097^3, 1000^3, 12345x678x910 NN), large k (128x128x131072 NN and
// TN), skinny products outside NN (16384x64x8192 TN and NT) and a partial last wave (3000^3 NN).
//   gemm_families [--seed 201] [--count 16] [--no-family] [--no-seeded] [--budget 60]
//                 [--db PATH] [--skip-tuning] [--json FILE] [--print-shapes]
// Each shape is tuned by `autotune --op gemm --layout L --shape MxNxK --budget S` into one
// database (a fresh one under the temporary folder unless --db names one; --skip-tuning uses the
// database as it is), which tuned_gemm then reads. Writes {"device", "budget_s", "geomean_ratio",
// "seeded_geomean_ratio", "family_geomean_ratio", "worst_ratio", "all_correct",
// "contract_violations": ["LAYOUT MxNxK"...], "rows": [{"group", "shape", "layout", "origin",
// "tuned_tflops", "cublas_tflops", "ratio", "budget_s", "rel_error", "err_tuned", "err_cublas"}]}.
// Exit status: 0, 1 error, 2 usage, 3 a wrong result or a contract violation.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/random_shapes.hpp"
#include "core/cuda_check.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;

struct Entry {
  std::string group;  // "seed 201" or "family"
  Shape shape;
};

std::vector<Entry> family_shapes() {
  return {{"family", {"NN", 4097, 4097, 4097}},   {"family", {"NN", 1000, 1000, 1000}},
          {"family", {"NN", 12345, 678, 910}},    {"family", {"NN", 128, 128, 131072}},
          {"family", {"TN", 128, 128, 131072}},   {"family", {"TN", 16384, 64, 8192}},
          {"family", {"NT", 16384, 64, 8192}},    {"family", {"NN", 3000, 3000, 3000}}};
}

struct Row {
  Entry entry;
  std::string origin;
  double tuned_tflops = 0, cublas_tflops = 0, ratio = 0, rel_error = 0;
  double err_tuned = 0, err_cublas = 0;  // against the FP64 sample
  bool correct = false, within_contract = false;
  int tune_status = 0;
};

// The directory of this executable (the tools are built next to it: <build>/tools/).
std::string tool_path(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(".");
  dir = dir.substr(0, dir.find_last_of('/'));
  return dir + "/../tools/" + name;
}

// autotune on one shape; returns its exit status (its output goes to log).
int tune(const Shape& s, double budget_s, const std::string& db, const std::string& log) {
  const std::string command = "'" + tool_path("autotune") + "' --op gemm --layout " + s.layout +
                              " --shape " + s.text() + " --budget " + std::to_string(budget_s) +
                              " --seed 1 --db '" + db + "' >>'" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Row measure(const Entry& e, DeviceCheck& check, gemm_op::Fp64Sample& exact,
            gemm_op::CublasHandle& cublas, cudaStream_t stream) {
  Row row;
  row.entry = e;
  const Shape& s = e.shape;
  const gemm_op::Problem p = gemm_op::packed_problem(s.layout, s.m, s.n, s.k);
  GemmOperands ops(p, check, stream);
  const TunedGemmCalls calls(p, ops, cublas);
  row.origin = calls.describe();
  const Comparison c = calls.compare(check, exact, stream);
  row.rel_error = c.rel_error;
  row.correct = c.correct;
  row.err_tuned = c.err_tuned;
  row.err_cublas = c.err_cublas;
  row.within_contract = c.within_contract;
  row.tuned_tflops = tflops(p, c.tuned_ms);
  row.cublas_tflops = tflops(p, c.cublas_ms);
  row.ratio = c.cublas_ms / c.tuned_ms;
  return row;
}

// The command line's values.
struct Arguments {
  uint64_t seed = kFamiliesSeed;
  int count = 16;
  double budget_s = 60;
  bool no_family = false, no_seeded = false, skip_tuning = false, print_shapes = false;
  std::string db, json;
};

void add_options(CLI::App& app, Arguments& args) {
  app.add_option("--seed", args.seed, "random-shape seed (issue 10: 201)");
  app.add_option("--count", args.count, "random shapes of the seed")->check(CLI::NonNegativeNumber);
  app.add_option("--budget", args.budget_s, "autotune seconds per shape")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-family", args.no_family, "leave out the named family shapes");
  app.add_flag("--no-seeded", args.no_seeded, "leave out the seed's random shapes");
  app.add_option("--db", args.db, "tuning database (default: a fresh one in the temporary folder)");
  app.add_flag("--skip-tuning", args.skip_tuning, "use the database as it is (needs --db)");
  app.add_option("--json", args.json, "write the results here as JSON");
  app.add_flag("--print-shapes", args.print_shapes, "list the shapes and exit (no GPU needed)");
}

// The seed's random shapes, then the named families (either left out on request).
std::vector<Entry> selected_entries(const Arguments& args) {
  std::vector<Entry> entries;
  if (!args.no_seeded) {
    for (const auto& s : random_shapes(args.seed, args.count)) {
      entries.push_back({"seed " + std::to_string(args.seed), {s.layout, s.m, s.n, s.k}});
    }
  }
  if (!args.no_family) {
    for (const auto& e : family_shapes()) entries.push_back(e);
  }
  return entries;
}

// Every shape tuned into db, in order; returns autotune's exit status per entry.
std::vector<int> tune_all(const std::vector<Entry>& entries, double budget_s, const std::string& db,
                          const std::string& log) {
  std::vector<int> tune_status(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Shape& s = entries[i].shape;
    std::printf("tuning %s %s (%zu/%zu, %.0f s)\n", s.layout.c_str(), s.text().c_str(), i + 1,
                entries.size(), budget_s);
    std::fflush(stdout);
    tune_status[i] = tune(s, budget_s, db, log);
    if (tune_status[i] != 0) {
      std::fprintf(stderr, "gemm_families: autotune exited %d for %s %s (log: %s)\n",
                   tune_status[i], s.layout.c_str(), s.text().c_str(), log.c_str());
    }
  }
  return tune_status;
}

// The rows and what the summary and the exit status need of them.
struct Results {
  std::vector<Row> rows;
  std::vector<double> all, seeded, family;  // tuned/cuBLAS speed ratios
  double worst = INFINITY;
  bool all_correct = true;
  std::vector<std::string> violations;  // "LAYOUT MxNxK"

  double seeded_geomean() const { return seeded.empty() ? NAN : geometric_mean(seeded); }
  double family_geomean() const { return family.empty() ? NAN : geometric_mean(family); }
};

// Each shape measured against cuBLAS, printed as a table row as it is done.
Results measure_all(const std::vector<Entry>& entries, const std::vector<int>& tune_status,
                    GemmBenchSetup& bench) {
  Results results;
  std::printf("%-9s %-6s %-20s %10s %10s %7s %10s %10s %10s  %s\n", "group", "layout", "shape",
              "tuned TF", "cuBLAS TF", "ratio", "rel err", "err tuned", "err cuBLAS", "origin");
  for (size_t i = 0; i < entries.size(); ++i) {
    Row r = measure(entries[i], bench.check, bench.exact, bench.cublas, bench.stream.get());
    r.tune_status = tune_status[i];
    std::printf("%-9s %-6s %-20s %10.2f %10.2f %7.3f %10.2e %10.2e %10.2e  %s%s%s\n",
                r.entry.group.c_str(), r.entry.shape.layout.c_str(), r.entry.shape.text().c_str(),
                r.tuned_tflops, r.cublas_tflops, r.ratio, r.rel_error, r.err_tuned, r.err_cublas,
                r.origin.c_str(), r.correct ? "" : "  WRONG RESULT",
                r.within_contract ? "" : "  CONTRACT VIOLATION");
    std::fflush(stdout);
    if (!r.within_contract) {
      results.violations.push_back(r.entry.shape.layout + " " + r.entry.shape.text());
    }
    results.all.push_back(r.ratio);
    (r.entry.group == "family" ? results.family : results.seeded).push_back(r.ratio);
    results.worst = std::min(results.worst, r.ratio);
    results.all_correct = results.all_correct && r.correct;
    results.rows.push_back(r);
  }
  return results;
}

void write_json(const std::string& path, const std::string& device_name, const Arguments& args,
                const Results& results, double geomean) {
  std::ofstream out(path);
  out << "{\n  \"device\": " << json_escape(device_name) << ",\n  \"budget_s\": " << args.budget_s
      << ",\n  \"geomean_ratio\": " << json_number(geomean)
      << ",\n  \"seeded_geomean_ratio\": " << json_number(results.seeded_geomean())
      << ",\n  \"family_geomean_ratio\": " << json_number(results.family_geomean())
      << ",\n  \"worst_ratio\": " << json_number(results.worst)
      << ",\n  \"all_correct\": " << (results.all_correct ? "true" : "false")
      << ",\n  \"contract_violations\": [";
  for (size_t i = 0; i < results.violations.size(); ++i) {
    out << (i ? ", " : "") << json_escape(results.violations[i]);
  }
  out << "],\n  \"rows\": [\n";
  for (size_t i = 0; i < results.rows.size(); ++i) {
    const Row& r = results.rows[i];
    out << "    {\"group\": " << json_escape(r.entry.group)
        << ", \"shape\": " << json_escape(r.entry.shape.text())
        << ", \"layout\": " << json_escape(r.entry.shape.layout)
        << ", \"origin\": " << json_escape(r.origin)
        << ", \"tuned_tflops\": " << json_number(r.tuned_tflops)
        << ", \"cublas_tflops\": " << json_number(r.cublas_tflops)
        << ", \"ratio\": " << json_number(r.ratio) << ", \"budget_s\": "
        << (args.skip_tuning ? std::string("null") : json_number(args.budget_s))
        << ", \"autotune_exit\": " << r.tune_status
        << ", \"rel_error\": " << json_number(r.rel_error)
        << ", \"err_tuned\": " << json_number(r.err_tuned)
        << ", \"err_cublas\": " << json_number(r.err_cublas) << "}"
        << (i + 1 < results.rows.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
}

// Tunes the shapes (unless --skip-tuning), measures them and writes the summary (and the JSON).
int run(const std::vector<Entry>& entries, Arguments& args) {
  if (args.db.empty()) {
    args.db = (std::filesystem::temp_directory_path() /
               ("gemm_families_" + std::to_string(getpid()) + ".db"))
                  .string();
  }
  const std::string log = args.db + ".autotune.log";
  const std::vector<int> tune_status = args.skip_tuning
                                           ? std::vector<int>(entries.size(), 0)
                                           : tune_all(entries, args.budget_s, args.db, log);
  // tuned_gemm reads what autotune recorded (no first-use tuning of its own).
  GemmBenchSetup bench(0, args.db, /*fresh_db=*/false, /*first_use=*/false, "gemm_families");
  const Results results = measure_all(entries, tune_status, bench);
  const double geomean = geometric_mean(results.all);
  std::printf("geometric mean of tuned/cuBLAS speed: %.3f (seeded %.3f, family %.3f), worst %.3f\n",
              geomean, results.seeded_geomean(), results.family_geomean(), results.worst);
  print_contract_violations(results.violations);
  if (!args.json.empty()) write_json(args.json, bench.device.name, args, results, geomean);
  return results.all_correct && results.violations.empty() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GEMM families tuned per shape against cuBLAS"};
  Arguments args;
  add_options(app, args);
  CLI11_PARSE(app, argc, argv);
  if (args.skip_tuning && args.db.empty()) {
    std::fprintf(stderr, "gemm_families: --skip-tuning needs --db\n");
    return 2;
  }
  const std::vector<Entry> entries = selected_entries(args);
  if (args.print_shapes) {
    for (const auto& e : entries) {
      std::printf("%-9s %s %s\n", e.group.c_str(), e.shape.layout.c_str(), e.shape.text().c_str());
    }
    return 0;
  }
  try {
    return run(entries, args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_families: %s\n", e.what());
    return 1;
  }
}
