// gemm_picks: the configs that several tuning runs kept for the same problems, timed side by side
// with cuBLAS in one process on one GPU, so that "first-use reaches 0.95 of a 300 s run's best"
// compares kernels, not two runs' clocks (issue 32: a layer whose first-use pick was the 300 s
// best's own config read 0.939 when each run's own ratio to cuBLAS was compared).
//   gemm_picks --pick NAME=DB [--pick NAME=DB]... [--first-use] --shape LAYOUT:MxNxK...
//              [--rounds N] [--device N] [--json FILE]
// Each --pick's database serves tuned_gemm (its best for the problem: what that run kept); the
// first pick is the reference the others are a fraction of. --first-use adds the pick that
// first-use tuning makes in a fresh database, with the wall time of that first call. Every pick
// is checked against cuBLAS and the accuracy contract once; then, per round, each is timed side by
// side with cuBLAS (bench_util's time_side_by_side), the picks in turn and in reverse order every
// other round, and a pick's figure is its median ratio to cuBLAS over the rounds.
// Exit status: 0, 1 error, 2 usage, 3 a wrong result or a contract violation.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;

struct Pick {
  std::string name, db;
};

struct PickResult {
  std::string name, origin, config;
  std::optional<double> first_call_ms;  // the first-use pick's tuning call
  std::vector<double> ratios;           // cuBLAS ms / tuned ms, one per round
  Comparison check;
  double ratio() const { return median(ratios); }
};

struct Options {
  int device = 0;
  std::vector<Pick> picks;
  bool first_use = false;
  std::vector<Shape> shapes;
  int rounds = 7;
  std::string json;
};

void use_database(const std::string& path) {
  const tuned_status_t status = tuned_set_database(path.c_str());
  // A database that cannot be used would silently serve the shipped choices: not this pick's.
  if (status != TUNED_STATUS_SUCCESS) {
    throw Error(status, "--pick database " + path + ": " + tuned_last_error());
  }
}

int run(const Options& o) {
  GemmBenchSetup bench(o.device, "", /*fresh=*/true, /*first_use=*/false, "gemm_picks");
  std::printf("gemm_picks on %s, %d rounds; reference: the first pick\n", bench.device.name.c_str(),
              o.rounds);
  std::printf("%-22s %-10s %9s %9s %8s %10s  %s\n", "problem", "pick", "ratio", "of ref", "correct",
              "1st call", "origin: config");
  std::ofstream json;
  if (!o.json.empty()) {
    json.open(o.json);
    json << "{\"device\": " << json_escape(bench.device.name) << ", \"rows\": [\n";
  }
  bool all_right = true, first_row = true;
  for (const Shape& s : o.shapes) {
    const gemm_op::Problem p = gemm_op::packed_problem(s.layout, s.m, s.n, s.k);
    GemmOperands ops(p, bench.check, bench.stream.get());
    const TunedGemmCalls calls(p, ops, bench.cublas);
    std::vector<PickResult> results;
    std::vector<std::string> dbs;
    for (const Pick& pick : o.picks) {
      results.push_back({pick.name});
      dbs.push_back(pick.db);
    }
    std::optional<TempDatabase> fresh;
    if (o.first_use) {
      fresh.emplace("gemm_picks_first_use");
      use_database(fresh->path());
      check_status(tuned_set_tuning(TUNED_TUNING_FIRST_USE));
      PickResult r{"first-use"};
      r.first_call_ms = calls.time_one_call(bench.stream.get());
      check_status(tuned_set_tuning(TUNED_TUNING_OFF));
      results.push_back(r);
      dbs.push_back(fresh->path());
    }
    for (size_t i = 0; i < results.size(); ++i) {
      use_database(dbs[i]);
      std::tie(results[i].origin, results[i].config) = calls.origin_and_config();
      results[i].check = calls.compare(bench.check, bench.exact, bench.stream.get());
      all_right = all_right && results[i].check.correct && results[i].check.within_contract;
    }
    for (int round = 0; round < o.rounds; ++round) {
      for (size_t j = 0; j < results.size(); ++j) {
        const size_t i = round % 2 ? results.size() - 1 - j : j;
        use_database(dbs[i]);
        calls.tuned(bench.stream.get());  // this database's choice, resolved outside the timing
        const PairTiming t =
            time_side_by_side([&](cudaStream_t st) { calls.tuned(st); },
                              [&](cudaStream_t st) { calls.cublas(st); }, bench.stream.get(), 3);
        results[i].ratios.push_back(t.second_ms / t.first_ms);
      }
    }
    const double reference = results.front().ratio();
    for (const PickResult& r : results) {
      const double fraction = r.ratio() / reference;
      std::printf("%-22s %-10s %9.3f %9.3f %8s %10s  %s: %s\n", (s.layout + " " + s.text()).c_str(),
                  r.name.c_str(), r.ratio(), fraction,
                  r.check.correct && r.check.within_contract ? "yes" : "NO",
                  optional_ms(r.first_call_ms).c_str(), r.origin.c_str(), r.config.c_str());
      if (json.is_open()) {
        json << (first_row ? "" : ",\n") << "  {\"layout\": " << json_escape(s.layout)
             << ", \"shape\": " << json_escape(s.text()) << ", \"pick\": " << json_escape(r.name)
             << ", \"ratio\": " << json_number(r.ratio())
             << ", \"of_reference\": " << json_number(fraction)
             << ", \"correct\": " << (r.check.correct ? "true" : "false")
             << ", \"within_contract\": " << (r.check.within_contract ? "true" : "false")
             << ", \"first_call_ms\": " << json_number(r.first_call_ms)
             << ", \"origin\": " << json_escape(r.origin)
             << ", \"config\": " << json_escape(r.config) << "}";
        first_row = false;
      }
    }
  }
  if (json.is_open()) {
    json << "\n]}\n";
    if (!json) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json " + o.json + ": cannot write");
  }
  std::printf(all_right ? "ALL CORRECT\n" : "WRONG RESULTS OR CONTRACT VIOLATIONS ABOVE\n");
  return all_right ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The configs several tuning runs kept, timed side by side with cuBLAS.",
               "gemm_picks"};
  Options o;
  std::vector<std::string> picks, shapes;
  app.add_option("--pick", picks,
                 "NAME=DB: the run whose database serves this pick (repeatable; "
                 "the first is the reference)")
      ->required();
  app.add_flag("--first-use", o.first_use, "add first-use tuning's pick from a fresh database");
  app.add_option("--shape", shapes, "LAYOUT:MxNxK (repeatable)")->required();
  app.add_option("--rounds", o.rounds, "rounds of side-by-side timing")->check(CLI::PositiveNumber);
  app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--json", o.json, "write the rows here as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const std::string& text : picks) {
      const size_t eq = text.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
        std::fprintf(stderr, "gemm_picks: --pick %s: expected NAME=DB\n", text.c_str());
        return 2;
      }
      o.picks.push_back({text.substr(0, eq), text.substr(eq + 1)});
      // tuned_set_database would create a missing file, and the pick would be the shipped one.
      if (!std::filesystem::is_regular_file(o.picks.back().db)) {
        std::fprintf(stderr, "gemm_picks: --pick %s: no such database\n", text.c_str());
        return 2;
      }
    }
    for (const std::string& text : shapes) o.shapes.push_back(parse_layout_shape(text));
  } catch (const Error& e) {
    std::fprintf(stderr, "gemm_picks: %s\n", e.what());
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_picks: %s\n", e.what());
    return 1;
  }
}
