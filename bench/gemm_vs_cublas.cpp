// gemm_vs_cublas: tuned_gemm against cuBLAS FP32 (no TF32) on the benchmark suite, in the same
// process, timed side by side; checks each result against cuBLAS and both against an FP64 product
// at a sample of C (the accuracy contract: tuned's error within gemm_op::contract_limit of
// cuBLAS's), prints a table and the geometric mean of the speed ratios, and writes them as JSON.
//   gemm_vs_cublas [--device N] [--db PATH | --no-user-db] [--json FILE] [--layout L]
//   gemm_vs_cublas --print-shapes LAYOUT   (the suite's shapes of a layout, for autotune --shape)
// Exit status: 0, 1 error, 2 usage, 3 a wrong result or a contract violation.
#include <cublas_v2.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/gemm_suite.hpp"
#include "core/cuda_check.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;

struct Row {
  Shape shape;
  std::string origin;  // where tuned_gemm's config came from, and the config
  double tuned_ms = 0, cublas_ms = 0, tuned_tflops = 0, cublas_tflops = 0, ratio = 0;
  double rel_error = 0, err_tuned = 0, err_cublas = 0;
  bool correct = false, within_contract = false;
};

Row run_shape(const Shape& s, DeviceCheck& check, gemm_op::Fp64Sample& exact,
              gemm_op::CublasHandle& cublas, cudaStream_t stream) {
  Row row;
  row.shape = s;
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
  row.tuned_ms = c.tuned_ms;
  row.cublas_ms = c.cublas_ms;
  row.tuned_tflops = tflops(p, row.tuned_ms);
  row.cublas_tflops = tflops(p, row.cublas_ms);
  row.ratio = row.cublas_ms / row.tuned_ms;
  return row;
}

int run(int device_index, const std::string& db, bool no_user_db, const std::string& json,
        const std::string& layout_filter) {
  GemmBenchSetup bench(device_index, db, no_user_db, /*first_use=*/false, "gemm_vs_cublas");
  const DeviceInfo& device = bench.device;
  // (A fresh empty database: every config comes from the shipped defaults, or built-in ones.)
  const std::string database = no_user_db ? "none (shipped defaults)" : bench.database_text();

  std::printf("gemm_vs_cublas on %s (%s, %d SMs), cuBLAS %d FP32, database: %s\n",
              device.name.c_str(), device.arch().c_str(), device.sm_count, bench.cublas_version,
              database.c_str());
  std::printf("%-18s %-6s %10s %9s %10s %9s %7s %9s %10s %10s  %s\n", "shape", "layout",
              "tuned ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio", "rel err", "err tuned",
              "err cuBLAS", "config");
  std::vector<Row> rows;
  std::vector<double> ratios;
  std::vector<std::string> violations;  // "LAYOUT MxNxK"
  bool all_correct = true;
  for (const Shape& s : gemm_suite()) {
    if (!layout_filter.empty() && s.layout != layout_filter) continue;
    Row r = run_shape(s, bench.check, bench.exact, bench.cublas, bench.stream.get());
    std::printf("%-18s %-6s %10.4f %9.2f %10.4f %9.2f %7.3f %9.2e %10.2e %10.2e  %s%s%s\n",
                s.text().c_str(), s.layout.c_str(), r.tuned_ms, r.tuned_tflops, r.cublas_ms,
                r.cublas_tflops, r.ratio, r.rel_error, r.err_tuned, r.err_cublas, r.origin.c_str(),
                r.correct ? "" : "  WRONG RESULT", r.within_contract ? "" : "  CONTRACT VIOLATION");
    std::fflush(stdout);
    all_correct = all_correct && r.correct;
    if (!r.within_contract) violations.push_back(s.layout + " " + s.text());
    ratios.push_back(r.ratio);
    rows.push_back(r);
  }
  const double geomean = geometric_mean(ratios);
  double worst = 1e9;
  for (double r : ratios) worst = std::min(worst, r);
  std::printf("geometric mean of tuned/cuBLAS speed over %zu shapes: %.3f (worst %.3f)%s\n",
              rows.size(), geomean, worst, all_correct ? "" : "; SOME RESULTS WRONG");
  print_contract_violations(violations);

  if (!json.empty()) {
    // An error is +Inf where a sampled element was not finite: json_number writes null.
    std::ofstream out(json);
    out << "{\n  \"device\": " << json_escape(device.name) << ",\n  \"arch\": "
        << json_escape(device.arch()) << ",\n  \"cublas_version\": " << bench.cublas_version
        << ",\n  \"database\": " << json_escape(database)
        << ",\n  \"geomean_ratio\": " << geomean << ",\n  \"worst_ratio\": " << worst
        << ",\n  \"all_correct\": " << (all_correct ? "true" : "false")
        << ",\n  \"contract_violations\": [";
    for (size_t i = 0; i < violations.size(); ++i) {
      out << (i ? ", " : "") << json_escape(violations[i]);
    }
    out << "],\n  \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << "    {\"shape\": " << json_escape(r.shape.text())
          << ", \"layout\": " << json_escape(r.shape.layout) << ", \"tuned_ms\": " << r.tuned_ms
          << ", \"cublas_ms\": " << r.cublas_ms << ", \"tuned_tflops\": " << r.tuned_tflops
          << ", \"cublas_tflops\": " << r.cublas_tflops << ", \"ratio\": " << r.ratio
          << ", \"rel_error\": " << r.rel_error << ", \"err_tuned\": " << json_number(r.err_tuned)
          << ", \"err_cublas\": " << json_number(r.err_cublas)
          << ", \"config\": " << json_escape(r.origin) << "}"
          << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    out << "  ]\n}\n";
    if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json " + json + ": cannot write");
  }
  return all_correct && violations.empty() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned_gemm against cuBLAS FP32 on the benchmark suite.", "gemm_vs_cublas"};
  int device = 0;
  std::string db, json, layout, print_layout;
  bool no_user_db = false;
  app.add_option("--device", device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--db", db, "tuning database tuned_gemm reads (default: the user's)");
  app.add_flag("--no-user-db", no_user_db, "use an empty database: shipped defaults only");
  app.add_option("--json", json, "write the results here as JSON");
  app.add_option("--layout", layout, "only shapes of this layout")
      ->check(CLI::IsMember({"NN", "NT", "TN", "TT"}));
  app.add_option("--print-shapes", print_layout,
                 "print the suite's shapes of LAYOUT, comma-separated, and exit")
      ->check(CLI::IsMember({"NN", "NT", "TN", "TT"}));
  CLI11_PARSE(app, argc, argv);
  if (!db.empty() && no_user_db) {
    std::fprintf(stderr, "gemm_vs_cublas: --db and --no-user-db exclude each other\n");
    return 2;
  }
  if (!print_layout.empty()) {
    std::string list;
    for (const auto& s : tuned::bench::gemm_suite()) {
      if (s.layout == print_layout) list += (list.empty() ? "" : ",") + s.text();
    }
    std::printf("%s\n", list.c_str());
    return 0;
  }
  try {
    return run(device, db, no_user_db, json, layout);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "gemm_vs_cublas: %s\n", e.what());
    return 1;
  }
}
