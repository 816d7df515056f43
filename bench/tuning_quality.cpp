// tuning_quality: how fast each search strategy finds a space's best, replayed on the CPU from
// recorded spaces (bench/replay/*.tsv.gz, written on a GPU by bench/record_space; tuner/replay).
// For each recorded problem and strategy, over --seeds seeds: the best found as a fraction of the
// space's best after 10, 30, 100, 300 and 1000 evaluations and after 3, 5, 10 and 30 s of modelled
// wall time (the median over seeds). Every strategy starts where a session does (the record's
// starting configs). The default strategy is the one with the highest median over the GEMM
// records at 100 evaluations (ties: at 300, then 30, then the current default). Writes --json:
//   {"default_strategy": S, "evals_checkpoints": [...], "seconds_checkpoints": [...],
//    "summary": [{"strategy", "median_at_100", ...}], "rows": [{"shape", "layout", "strategy",
//    "evals", "seconds", "fraction_of_best"}, ...]}
//   tuning_quality [--replay bench/replay] [--strategies a,b] [--seeds 10] [--json FILE]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"
#include "tuner/recorded_space.hpp"
#include "tuner/strategy.hpp"

namespace {

using namespace tuned;

const std::vector<int> kEvals = {10, 30, 100, 300, 1000};
const std::vector<double> kSeconds = {3, 5, 10, 30};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fixed(double v, int digits = 4) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

// One recorded problem ready to replay: its space narrowed to the recorded configs.
struct Replayable {
  RecordedSpace record;
  Space space;
  std::vector<Config> first;
  std::string file;
};

Replayable load(const std::string& path) {
  Replayable r{read_recorded_space(path), {}, {}, path};
  size_t dropped = 0;
  r.space = recorded_problem_space(r.record, &dropped);
  if (dropped > 0) {
    std::fprintf(stderr,
                 "tuning_quality: %s: %zu of %zu recorded configs are outside the space this "
                 "build declares; replayed without them\n",
                 path.c_str(), dropped, r.record.trials.size());
  }
  r.first = recorded_first(r.record);
  return r;
}

struct Curve {
  std::vector<double> at_evals, at_seconds;  // median fractions over seeds
  std::vector<double> seconds_at_evals, evals_at_seconds;
};

Curve measure(const Replayable& r, const std::string& strategy, int seeds) {
  const double best = recorded_best_ms(r.record, r.space);
  std::vector<std::vector<double>> fe(kEvals.size()), fs(kSeconds.size()), se(kEvals.size()),
      es(kSeconds.size());
  for (int seed = 1; seed <= seeds; ++seed) {
    ReplayOptions options;
    options.strategy = strategy;
    options.seed = static_cast<uint64_t>(seed);
    options.first = r.first;
    if (r.record.compile_threads > 0) options.compile_threads = r.record.compile_threads;
    options.max_evals = kEvals.back();
    const ReplayResult result = replay(r.space, r.record, options);
    for (size_t i = 0; i < kEvals.size(); ++i) {
      fe[i].push_back(result.fraction_after_evals(kEvals[i], best));
      double at = 0;
      for (const auto& s : result.steps) {
        if (s.evals <= kEvals[i]) at = s.seconds;
      }
      se[i].push_back(at);
    }
    for (size_t i = 0; i < kSeconds.size(); ++i) {
      fs[i].push_back(result.fraction_after_seconds(kSeconds[i], best));
      int done = 0;
      for (const auto& s : result.steps) {
        if (s.seconds <= kSeconds[i]) done = s.evals;
      }
      es[i].push_back(done);
    }
  }
  Curve c;
  for (size_t i = 0; i < kEvals.size(); ++i) {
    c.at_evals.push_back(median(fe[i]));
    c.seconds_at_evals.push_back(median(se[i]));
  }
  for (size_t i = 0; i < kSeconds.size(); ++i) {
    c.at_seconds.push_back(median(fs[i]));
    c.evals_at_seconds.push_back(median(es[i]));
  }
  return c;
}

// The strategies named by --strategies, or every one but exhaustive.
std::vector<std::string> strategies_to_replay(const std::string& strategies_text) {
  std::vector<std::string> strategies;
  if (strategies_text.empty()) {
    for (const auto& s : strategy_names()) {
      if (s != "exhaustive") strategies.push_back(s);  // enumeration order says nothing here
    }
  } else {
    std::stringstream in(strategies_text);
    for (std::string s; std::getline(in, s, ',');) strategies.push_back(s);
  }
  return strategies;
}

// The recorded spaces of the folder, sorted by path.
std::vector<std::string> record_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    if (e.path().string().find(".tsv") != std::string::npos) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--replay " + folder + ": no records");
  return files;
}

// The JSON rows of one problem and strategy (one per checkpoint), appended to rows.
void append_json_rows(const Replayable& r, const std::string& strategy, const Curve& c,
                      std::string& rows) {
  auto row = [&](double evals, double seconds, double fraction) {
    std::string shape;
    for (size_t i = 0; i < r.record.shape.size(); ++i) {
      shape += (i ? "x" : "") + std::to_string(r.record.shape[i]);
    }
    rows += std::string(rows.empty() ? "" : ",\n  ") + "{\"op\": \"" + r.record.op +
            "\", \"shape\": \"" + shape + "\", \"layout\": \"" + r.record.variant +
            "\", \"strategy\": \"" + strategy + "\", \"evals\": " + fixed(evals, 0) +
            ", \"seconds\": " + fixed(seconds, 2) + ", \"fraction_of_best\": " + fixed(fraction) +
            "}";
  };
  for (size_t i = 0; i < kEvals.size(); ++i) row(kEvals[i], c.seconds_at_evals[i], c.at_evals[i]);
  for (size_t i = 0; i < kSeconds.size(); ++i) {
    row(c.evals_at_seconds[i], kSeconds[i], c.at_seconds[i]);
  }
}

// strategy -> per eval checkpoint, the fraction on each GEMM record
using GemmFractions = std::map<std::string, std::vector<std::vector<double>>>;

// Replays every record with every strategy: the table of curves, the JSON rows, and the GEMM
// records' fractions at each evaluation checkpoint.
void replay_all(const std::vector<std::string>& files, const std::vector<std::string>& strategies,
                int seeds, std::string& rows, GemmFractions& gemm_fractions) {
  std::printf("%-26s %-10s %7s", "problem", "strategy", "configs");
  for (int e : kEvals) std::printf(" %6s", ("@" + std::to_string(e)).c_str());
  for (double s : kSeconds) std::printf(" %6s", (fixed(s, 0) + "s").c_str());
  std::printf("\n");
  for (const auto& file : files) {
    const Replayable r = load(file);
    for (const auto& strategy : strategies) {
      const Curve c = measure(r, strategy, seeds);
      std::printf("%-26s %-10s %7zu", (r.record.op + " " + r.record.name()).c_str(),
                  strategy.c_str(), r.record.trials.size());
      for (double f : c.at_evals) std::printf(" %6.3f", f);
      for (double f : c.at_seconds) std::printf(" %6.3f", f);
      std::printf("\n");
      append_json_rows(r, strategy, c, rows);
      if (r.record.op == "gemm") {
        auto& per = gemm_fractions[strategy];
        per.resize(kEvals.size());
        for (size_t i = 0; i < kEvals.size(); ++i) per[i].push_back(c.at_evals[i]);
      }
    }
  }
}

struct DefaultChoice {
  std::string strategy;
  std::string summary;  // JSON objects, one per strategy
};

// The default: the highest GEMM median at 100 evaluations, then at 300, then at 30; where
// strategies tie on all three the records cannot tell them apart, and the current default
// stays. Prints each strategy's GEMM medians on the way.
DefaultChoice choose_default(const std::vector<std::string>& strategies,
                             const GemmFractions& gemm_fractions) {
  DefaultChoice choice;
  std::vector<double> best_key;
  std::printf("\nmedian over the %zu GEMM records:\n",
              gemm_fractions.empty() ? size_t{0} : gemm_fractions.begin()->second[0].size());
  for (const auto& strategy : strategies) {
    if (!gemm_fractions.count(strategy)) continue;
    std::vector<double> m;
    for (const auto& v : gemm_fractions.at(strategy)) m.push_back(median(v));
    std::printf("  %-10s", strategy.c_str());
    for (size_t i = 0; i < kEvals.size(); ++i) std::printf("  @%d %.3f", kEvals[i], m[i]);
    std::printf("\n");
    const std::vector<double> key = {m[2], m[3], m[1]};
    if (choice.strategy.empty() || key > best_key ||
        (key == best_key && strategy == kDefaultStrategy)) {
      choice.strategy = strategy;
      best_key = key;
    }
    choice.summary +=
        std::string(choice.summary.empty() ? "" : ",\n  ") + "{\"strategy\": \"" + strategy + "\"";
    for (size_t i = 0; i < kEvals.size(); ++i) {
      choice.summary += ", \"median_at_" + std::to_string(kEvals[i]) + "\": " + fixed(m[i]);
    }
    choice.summary += "}";
  }
  return choice;
}

void write_json(const std::string& json_path, const DefaultChoice& choice, int seeds,
                const std::string& rows) {
  std::ofstream out(json_path);
  out << "{\"default_strategy\": \"" << choice.strategy << "\", \"seeds\": " << seeds
      << ",\n \"kernel_tuner_published\": \"dual annealing 0.92 of the optimum in 100 "
         "evaluations, iterated local search 0.999 in 1000, GEMM space of 18k configs\""
      << ",\n \"summary\": [\n  " << choice.summary << "\n],\n \"rows\": [\n  " << rows << "\n]}\n";
  if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json " + json_path + ": cannot write");
}

int run(int argc, char** argv) {
  CLI::App app{"Replays search strategies on recorded spaces (no GPU needed).", "tuning_quality"};
  std::string folder = "bench/replay", json_path, strategies_text;
  int seeds = 10;
  app.add_option("--replay", folder, "folder of recorded spaces (*.tsv.gz)");
  app.add_option("--strategies", strategies_text, "comma-separated (default: all)");
  app.add_option("--seeds", seeds, "seeds per strategy and problem (median reported)");
  app.add_option("--json", json_path, "results file");
  CLI11_PARSE(app, argc, argv);

  const std::vector<std::string> strategies = strategies_to_replay(strategies_text);
  const std::vector<std::string> files = record_files(folder);
  std::string rows;
  GemmFractions gemm_fractions;
  replay_all(files, strategies, seeds, rows, gemm_fractions);
  const DefaultChoice choice = choose_default(strategies, gemm_fractions);
  std::printf(
      "default strategy (best median at 100, then 300 and 30 evaluations; ties: the "
      "current default): %s\n",
      choice.strategy.c_str());
  if (!json_path.empty()) write_json(json_path, choice, seeds, rows);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "tuning_quality: %s\n", e.what());
    return 1;
  }
}
