// gemm_random: tuned_gemm (public C API) against cuBLAS FP32 on seeded random shapes nobody tuned
// (bench/random_shapes.hpp), timed side by side in the same process, each result checked against
// cuBLAS and both against an FP64 product at a sample of C (the accuracy contract: tuned's error
// within gemm_op::contract_limit of cuBLAS's). Per shape it also measures the first call of a
// fresh process: this executable is spawned in a hidden child mode with an empty database and
// times one tuned_gemm call from a cold start.
//   gemm_random [--seeds 101,102,103] [--count N] [--min-gflop X] [--device N]
//               [--db PATH | --no-user-db] [--first-use] [--no-first-call] [--json FILE]
//   gemm_random --print-shapes [--seeds ...] [--count N] [--min-gflop X]   (no GPU needed)
// --min-gflop X draws the large-shape stratum (every shape at least X GFLOP; issue 28's seeds
// 111-113 with X = 1). Besides the geometric mean over all shapes it reports the shapes above
// 1 GFLOP and those at or below apart (a geomean over all is mostly small, launch-bound shapes)
// and the time-weighted ratio (sum of cuBLAS's ms over sum of ours: what a workload of them saves).
// --first-use sets TUNED_TUNING=first-use (opt-in tuning on first use) with a fresh database and
// reports the wall time of each shape's first, tuning call. Exit status: 0, 1 error, 2 usage,
// 3 a wrong result or a contract violation, 4 a first-call child failed.
#include <cublas_v2.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/random_shapes.hpp"
#include "core/cuda_check.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

extern char** environ;

namespace {

using namespace tuned;
using namespace tuned::bench;
using Clock = std::chrono::steady_clock;

constexpr const char* kLayouts[] = {"NN", "NT", "TN", "TT"};
constexpr const char* kChildFlag = "--first-call-child";

struct Row {
  uint64_t seed = 0;
  Shape shape;
  std::string origin;  // tuned_gemm_describe's text before the config
  std::string config;  // the config it ran (so a row's figure can be traced to its kernel)
  double tuned_ms = 0, cublas_ms = 0, tuned_tflops = 0, cublas_tflops = 0, ratio = 0;
  double gflop = 0;  // 2mnk / 1e9
  double rel_error = 0, err_tuned = 0, err_cublas = 0;
  bool correct = false, within_contract = false;
  std::optional<double> first_call_ms, first_use_ms;
};

// The summary of a set of rows: geometric mean and worst of the ratios, and how many.
struct Stratum {
  double geomean = NAN, worst = NAN;
  int count = 0;
};

Stratum stratum(const std::vector<double>& ratios) {
  Stratum s;
  s.count = static_cast<int>(ratios.size());
  if (!ratios.empty()) {
    s.geomean = geometric_mean(ratios);
    s.worst = *std::min_element(ratios.begin(), ratios.end());
  }
  return s;
}


size_t elements(int64_t ld, int64_t cols) {
  return static_cast<size_t>(ld) * static_cast<size_t>(std::max<int64_t>(cols, 1));
}

// The hidden child mode: the first tuned_gemm call of a fresh process, from cold (no kernel loaded,
// empty database), after context creation. Nothing here compiles through NVRTC before the call.
int run_child(const std::vector<std::string>& args, int device) {
  const std::string& layout = args[0];
  const int64_t m = std::stoll(args[1]), n = std::stoll(args[2]), k = std::stoll(args[3]);
  // Through the environment, as a user would: the library opens it lazily in the measured call.
  setenv("TUNED_DB", args[4].c_str(), 1);
  TUNED_CUDA_CHECK(cudaSetDevice(device));
  TUNED_CUDA_CHECK(cudaFree(0));  // context creation is not part of the figure
  const gemm_op::Problem p = gemm_op::packed_problem(layout, m, n, k);
  DeviceBuffer a(elements(p.lda, p.trans_a ? p.m : p.k) * sizeof(float));
  DeviceBuffer b(elements(p.ldb, p.trans_b ? p.k : p.n) * sizeof(float));
  DeviceBuffer c(elements(p.ldc, p.n) * sizeof(float));
  // Byte 0x3c everywhere is the float 0.0115: finite and nonzero, and memset needs no kernel.
  for (const DeviceBuffer* buf : {&a, &b, &c}) {
    TUNED_CUDA_CHECK(cudaMemsetAsync(buf->get(), 0x3c, buf->bytes(), nullptr));
  }
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  const float alpha = 1.0f, beta = 0.0f;
  const auto start = Clock::now();
  check_status(tuned_gemm(p.trans_a ? TUNED_OP_T : TUNED_OP_N, p.trans_b ? TUNED_OP_T : TUNED_OP_N,
                          static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
                          &alpha, a.as<float>(), static_cast<int>(p.lda), b.as<float>(),
                          static_cast<int>(p.ldb), &beta, c.as<float>(), static_cast<int>(p.ldc),
                          nullptr));
  TUNED_CUDA_CHECK(cudaDeviceSynchronize());
  const double ms = elapsed_ms(start);
  std::printf("first_call_ms %.6f\n", ms);
  return 0;
}

// Spawns this executable in child mode and reads its "first_call_ms" line; nullopt (with a message
// on stderr) when it fails. Blocks until the child has exited, so it never overlaps our GPU work.
std::optional<double> first_call_of_fresh_process(const Shape& s, int device, bool first_use) {
  TempDatabase db("gemm_random");
  std::vector<std::string> args = {"gemm_random", kChildFlag, s.layout};
  for (int64_t d : {s.m, s.n, s.k}) args.push_back(std::to_string(d));
  for (std::string a : {db.path(), std::string("--device"), std::to_string(device)}) {
    args.push_back(std::move(a));
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child's environment is built here, not after fork: TUNED_TUNING only as the mode says.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "TUNED_TUNING=", 13) != 0) env.emplace_back(*e);
  }
  if (first_use) env.emplace_back("TUNED_TUNING=first-use");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) {
    std::fprintf(stderr, "gemm_random: pipe: %s\n", std::strerror(errno));
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::fflush(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawn_error != 0) {
    close(fds[0]);
    std::fprintf(stderr, "gemm_random: cannot spawn the first-call child: %s\n",
                 std::strerror(spawn_error));
    return std::nullopt;
  }
  std::string output;
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const bool exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // The library may log to stdout too: take the line with our prefix.
  std::optional<double> ms;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("first_call_ms ", 0) == 0) ms = std::strtod(line.c_str() + 14, nullptr);
  }
  if (!exited_ok || !ms) {
    std::fprintf(stderr, "gemm_random: first-call child for %s %s failed (%s %d)\n",
                 s.layout.c_str(), s.text().c_str(), WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return std::nullopt;
  }
  return ms;
}

Row run_shape(uint64_t seed, const Shape& s, bool first_use, DeviceCheck& check,
              gemm_op::Fp64Sample& exact, gemm_op::CublasHandle& cublas, cudaStream_t stream) {
  Row row;
  row.seed = seed;
  row.shape = s;
  const gemm_op::Problem p = gemm_op::packed_problem(s.layout, s.m, s.n, s.k);
  GemmOperands ops(p, check, stream);
  const TunedGemmCalls calls(p, ops, cublas);
  if (first_use) row.first_use_ms = calls.time_one_call(stream);
  std::tie(row.origin, row.config) = calls.origin_and_config();

  const Comparison c = calls.compare(check, exact, stream);
  row.gflop = s.gflop();
  row.rel_error = c.rel_error;
  row.correct = c.correct;
  row.err_tuned = c.err_tuned;
  row.err_cublas = c.err_cublas;
  row.within_contract = c.within_contract;
  row.tuned_ms = c.tuned_ms;
  row.cublas_ms = c.cublas_ms;
  row.tuned_tflops = tflops(p, row.tuned_ms);
  row.cublas_tflops = tflops(p, row.cublas_ms);
  row.ratio = row.cublas_ms / row.tuned_ms;
  return row;
}

struct Options {
  std::vector<uint64_t> seeds{std::begin(kAcceptanceSeeds), std::end(kAcceptanceSeeds)};
  int count = kShapesPerSeed;
  double min_gflop = 0;
  int device = 0;
  std::string db, json;
  bool no_user_db = false, first_use = false, no_first_call = false;
};

// Everything the summary reports, for the table's end and the JSON.
struct Summary {
  double geomean = NAN, worst = NAN, time_weighted = NAN;
  std::map<std::string, std::vector<double>> by_layout;
  Stratum large, small;
  int below_0_6 = 0, below_0_85 = 0;
  std::vector<double> first_calls;
  std::vector<std::string> violations;  // "seed LAYOUT MxNxK"
  bool all_correct = true;
};

void write_json(const Options& o, const std::string& device_name, const std::string& mode,
                const std::vector<Row>& rows, const Summary& sum) {
  std::ofstream out(o.json);
  out << "{\n  \"device\": " << json_escape(device_name) << ",\n  \"mode\": " << json_escape(mode)
      << ",\n  \"seeds\": [";
  for (size_t i = 0; i < o.seeds.size(); ++i) out << (i ? ", " : "") << o.seeds[i];
  out << "],\n  \"min_gflop\": " << json_number(o.min_gflop)
      << ",\n  \"geomean_ratio\": " << json_number(sum.geomean)
      << ",\n  \"geomean_by_layout\": {";
  for (size_t i = 0; i < 4; ++i) {
    const auto it = sum.by_layout.find(kLayouts[i]);
    out << (i ? ", " : "") << "\"" << kLayouts[i]
        << "\": " << json_number(it == sum.by_layout.end() ? NAN : geometric_mean(it->second));
  }
  const double fc_max = sum.first_calls.empty()
                            ? NAN
                            : *std::max_element(sum.first_calls.begin(), sum.first_calls.end());
  out << "},\n  \"worst_ratio\": " << json_number(sum.worst)
      << ",\n  \"below_0_6\": " << sum.below_0_6 << ",\n  \"below_0_85\": " << sum.below_0_85
      << ",\n  \"time_weighted_ratio\": " << json_number(sum.time_weighted)
      << ",\n  \"geomean_large\": " << json_number(sum.large.geomean)
      << ",\n  \"worst_large\": " << json_number(sum.large.worst)
      << ",\n  \"count_large\": " << sum.large.count
      << ",\n  \"geomean_small\": " << json_number(sum.small.geomean)
      << ",\n  \"worst_small\": " << json_number(sum.small.worst)
      << ",\n  \"count_small\": " << sum.small.count
      << ",\n  \"first_call_median_ms\": " << json_number(median(sum.first_calls))
      << ",\n  \"first_call_max_ms\": " << json_number(fc_max)
      << ",\n  \"all_correct\": " << (sum.all_correct ? "true" : "false")
      << ",\n  \"contract_violations\": [";
  for (size_t i = 0; i < sum.violations.size(); ++i) {
    out << (i ? ", " : "") << json_escape(sum.violations[i]);
  }
  out << "],\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << "    {\"seed\": " << r.seed << ", \"shape\": " << json_escape(r.shape.text())
        << ", \"layout\": " << json_escape(r.shape.layout)
        << ", \"gflop\": " << json_number(r.gflop)
        << ", \"origin\": " << json_escape(r.origin)
        << ", \"config\": " << json_escape(r.config)
        << ", \"tuned_ms\": " << json_number(r.tuned_ms)
        << ", \"cublas_ms\": " << json_number(r.cublas_ms)
        << ", \"tuned_tflops\": " << json_number(r.tuned_tflops)
        << ", \"cublas_tflops\": " << json_number(r.cublas_tflops)
        << ", \"ratio\": " << json_number(r.ratio)
        << ", \"first_call_ms\": " << json_number(r.first_call_ms)
        << ", \"first_use_ms\": " << json_number(r.first_use_ms)
        << ", \"rel_error\": " << json_number(r.rel_error)
        << ", \"err_tuned\": " << json_number(r.err_tuned)
        << ", \"err_cublas\": " << json_number(r.err_cublas)
        << ", \"within_contract\": " << (r.within_contract ? "true" : "false") << "}"
        << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json " + o.json + ": cannot write");
}

// The rows as they come, and the running figures the summary is made of.
struct Results {
  std::vector<Row> rows;
  std::vector<double> ratios, large, small, first_uses;
  Summary sum;
  double tuned_total_ms = 0, cublas_total_ms = 0;
  int wrong = 0, child_failures = 0;
  std::optional<size_t> worst;  // index into rows

  void add(Row r) {
    if (!r.correct) ++wrong;
    if (!r.within_contract) {
      sum.violations.push_back(std::to_string(r.seed) + " " + r.shape.layout + " " +
                               r.shape.text());
    }
    ratios.push_back(r.ratio);
    (r.gflop > kLargeGflop ? large : small).push_back(r.ratio);
    tuned_total_ms += r.tuned_ms;
    cublas_total_ms += r.cublas_ms;
    sum.by_layout[r.shape.layout].push_back(r.ratio);
    if (r.first_call_ms) sum.first_calls.push_back(*r.first_call_ms);
    if (r.first_use_ms) first_uses.push_back(*r.first_use_ms);
    if (!worst || r.ratio < rows[*worst].ratio) worst = rows.size();
    rows.push_back(std::move(r));
  }

  // The summary's figures over all rows.
  void finish() {
    auto count_below = [&](double bound) {
      return static_cast<int>(
          std::count_if(ratios.begin(), ratios.end(), [&](double r) { return r < bound; }));
    };
    sum.geomean = geometric_mean(ratios);
    sum.worst = worst ? rows[*worst].ratio : NAN;
    sum.below_0_6 = count_below(0.6);
    sum.below_0_85 = count_below(0.85);
    sum.time_weighted = tuned_total_ms > 0 ? cublas_total_ms / tuned_total_ms : NAN;
    sum.large = stratum(large);
    sum.small = stratum(small);
    sum.all_correct = wrong == 0;
  }
};

void print_header(const Options& o, const GemmBenchSetup& bench) {
  const DeviceInfo& device = bench.device;
  std::printf("gemm_random on %s (%s, %d SMs), cuBLAS %d FP32, mode %s, database: %s, "
              "min GFLOP %g\n",
              device.name.c_str(), device.arch().c_str(), device.sm_count, bench.cublas_version,
              bench.mode.c_str(), bench.database_text().c_str(),
              o.min_gflop);
  std::printf("%-5s %-18s %-6s %10s %8s %10s %8s %7s %9s %10s %10s %10s%s  %s\n", "seed", "shape",
              "layout", "tuned ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio", "rel err",
              "err tuned", "err cuBLAS", "1st call", o.first_use ? "  1st use ms" : "", "origin");
}

void print_row(const Row& r, bool first_use) {
  std::printf("%-5llu %-18s %-6s %10.4f %8.2f %10.4f %8.2f %7.3f %9.2e %10.2e %10.2e %10s",
              static_cast<unsigned long long>(r.seed), r.shape.text().c_str(),
              r.shape.layout.c_str(), r.tuned_ms, r.tuned_tflops, r.cublas_ms, r.cublas_tflops,
              r.ratio, r.rel_error, r.err_tuned, r.err_cublas,
              optional_ms(r.first_call_ms).c_str());
  if (first_use) std::printf(" %12s", optional_ms(r.first_use_ms).c_str());
  std::printf("  %s%s%s  %s\n", r.origin.c_str(), r.correct ? "" : "  WRONG RESULT",
              r.within_contract ? "" : "  CONTRACT VIOLATION", r.config.c_str());
  std::fflush(stdout);
}

void print_summary(const Results& results) {
  const Summary& sum = results.sum;
  const std::vector<Row>& rows = results.rows;
  std::printf("\ngeometric mean of cuBLAS/tuned time over %zu shapes: %.3f\n", rows.size(),
              sum.geomean);
  for (const char* l : kLayouts) {
    if (auto it = sum.by_layout.find(l); it != sum.by_layout.end()) {
      std::printf("  %s: %.3f over %zu shapes\n", l, geometric_mean(it->second), it->second.size());
    }
  }
  for (const auto& [name, st] : {std::pair{"above 1 GFLOP", sum.large},
                                 std::pair{"at or below 1 GFLOP", sum.small}}) {
    if (st.count) {
      std::printf("  %s: geomean %.3f, worst %.3f over %d shapes\n", name, st.geomean, st.worst,
                  st.count);
    }
  }
  std::printf("time-weighted ratio (sum of cuBLAS ms / sum of tuned ms): %.3f\n",
              sum.time_weighted);
  if (results.worst) {
    const Row& worst = rows[*results.worst];
    std::printf("worst ratio %.3f (%s %s), %d below 0.6, %d below 0.85\n", sum.worst,
                worst.shape.layout.c_str(), worst.shape.text().c_str(), sum.below_0_6,
                sum.below_0_85);
  }
  if (!sum.first_calls.empty()) {
    std::printf("first call of a fresh process: median %.1f ms, max %.1f ms over %zu shapes\n",
                median(sum.first_calls),
                *std::max_element(sum.first_calls.begin(), sum.first_calls.end()),
                sum.first_calls.size());
  }
  const std::vector<double>& first_uses = results.first_uses;
  if (!first_uses.empty()) {
    std::printf("first-use (tuning) call: median %.1f ms, max %.1f ms\n", median(first_uses),
                *std::max_element(first_uses.begin(), first_uses.end()));
  }
  if (results.child_failures) {
    std::printf("%d first-call children FAILED\n", results.child_failures);
  }
  if (results.wrong) {
    std::printf("%d WRONG RESULTS\n", results.wrong);
  } else {
    std::printf("ALL CORRECT\n");
  }
  print_contract_violations(sum.violations);
}

int run(const Options& o) {
  GemmBenchSetup bench(o.device, o.db, o.no_user_db, o.first_use, "gemm_random");
  print_header(o, bench);
  Results results;
  for (uint64_t seed : o.seeds) {
    for (const Shape& s : random_shapes(seed, o.count, o.min_gflop)) {
      std::optional<double> first_call;
      if (!o.no_first_call) {
        // Our GPU is idle while the child runs (everything before was synchronized).
        TUNED_CUDA_CHECK(cudaDeviceSynchronize());
        first_call = first_call_of_fresh_process(s, o.device, o.first_use);
        if (!first_call) ++results.child_failures;
      }
      Row r = run_shape(seed, s, o.first_use, bench.check, bench.exact, bench.cublas,
                        bench.stream.get());
      r.first_call_ms = first_call;
      print_row(r, o.first_use);
      results.add(std::move(r));
    }
  }
  results.finish();
  print_summary(results);
  const Summary& sum = results.sum;
  if (!o.json.empty()) write_json(o, bench.device.name, bench.mode, results.rows, sum);
  return results.wrong || !sum.violations.empty() ? 3 : results.child_failures ? 4 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned_gemm against cuBLAS FP32 on seeded random shapes.", "gemm_random"};
  Options o;
  bool print_shapes = false;
  std::vector<std::string> child;
  app.add_option("--seeds", o.seeds, "comma-separated shape seeds (default 101,102,103)")
      ->delimiter(',');
  app.add_option("--count", o.count, "shapes per seed")->check(CLI::PositiveNumber);
  app.add_option("--min-gflop", o.min_gflop,
                 "draw only shapes of at least this many GFLOP (2mnk / 1e9; issue 28: 1)")
      // The draw caps m*n*k at 2^36 (137.4 GFLOP): above that it would never end.
      ->check(CLI::Range(0.0, 137.0));
  app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--db", o.db, "tuning database tuned_gemm reads (default: the user's)");
  app.add_flag("--no-user-db", o.no_user_db, "use a fresh empty database: shipped data only");
  app.add_option("--json", o.json, "write the results here as JSON");
  app.add_flag("--print-shapes", print_shapes,
               "print each seed's shapes, one per line \"seed layout MxNxK\", and exit");
  app.add_flag("--first-use", o.first_use,
               "TUNED_TUNING=first-use with a fresh database; time each shape's first call");
  app.add_flag("--no-first-call", o.no_first_call, "skip the fresh-process first-call timing");
  // Internal: the fresh process whose first call is timed (LAYOUT M N K DB).
  app.add_option(kChildFlag, child)->expected(5)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help); usage errors exit 2 as the header says.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (!child.empty()) {
    try {
      return run_child(child, o.device);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gemm_random (first-call child): %s\n", e.what());
      return 1;
    }
  }
  if (!o.db.empty() && (o.no_user_db || o.first_use)) {
    std::fprintf(stderr, "gemm_random: --db excludes --no-user-db and --first-use\n");
    return 2;
  }
  if (print_shapes) {
    for (uint64_t seed : o.seeds) {
      for (const Shape& s : random_shapes(seed, o.count, o.min_gflop)) {
        std::printf("%llu %s %s\n", static_cast<unsigned long long>(seed), s.layout.c_str(),
                    s.text().c_str());
      }
    }
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_random: %s\n", e.what());
    return 1;
  }
}
