// gemm_networks: tuned_gemm (public C API) against cuBLAS FP32 on the GEMMs of public network
// layers as PyTorch hands them to cuBLAS (bench/network_shapes.hpp, issue 28): GPT-2 medium and
// large, Llama-2-13B, Mistral-7B and T5-large at 512, 2048 and 8192 tokens in the three passes and
// decoding at 1, 4 and 16 tokens, and VGG-16's 3x3 convolutions at batch 32 as im2col products.
// Timed side by side in one process; each result checked against cuBLAS and both against an FP64
// product at a sample of C (the accuracy contract: tuned's error within gemm_op::contract_limit of
// cuBLAS's). These shapes are held out of everything the library ships (bench/held_out.hpp).
//   gemm_networks [--device N] [--db PATH | --no-user-db | --first-use] [--json FILE]
//                 [--model NAME]... [--max-gflop X]
//   gemm_networks --print-shapes [--model NAME]... [--max-gflop X]   (no GPU needed)
// --first-use sets TUNED_TUNING=first-use with a fresh empty database: the first call of each
// distinct shape tunes, and its wall time is the row's first_use_ms. Each distinct layout and shape
// is measured once; rows that repeat it (layers of equal size in two models) reuse the figures.
// The summary weighs shapes two ways: the geometric mean of the ratios (every row counts alike,
// and most rows are small) and the time-weighted ratio (sum of cuBLAS's ms over sum of ours: what
// a training step of these layers would save), with the shapes above 1 GFLOP apart.
// Time: time_side_by_side's 9 rounds everywhere. A call of 2 ms or more is one call per round, so
// a shape costs about 28 calls (check, warm-up, probe, rounds; both sides): the 255 distinct
// shapes hold 42 TFLOP, about 0.85 s of cuBLAS FP32 at 50 TFLOP/s, so some 25 s of products plus
// the small shapes' 2 ms batches (~10 s) and the operands' fills. Fewer rounds for the dozen
// products over 1 TFLOP would save about 3 s, not worth a noisier median.
// Decode rows (n <= 16 tokens) are also held to their bandwidth bound: their operands read and
// written once at the device-to-device copy bandwidth measured in the same run (bw_fraction; the
// summary's worst and median).
// Exit status: 0, 1 error, 2 usage, 3 a wrong result or a contract violation.
#include <cublas_v2.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/network_shapes.hpp"
#include "core/cuda_check.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_reference.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace {

using namespace tuned;
using namespace tuned::bench;
using Clock = std::chrono::steady_clock;


struct Options {
  int device = 0;
  std::string db, json;
  bool no_user_db = false, first_use = false, print_shapes = false;
  std::vector<std::string> models;  // empty: all
  std::optional<double> max_gflop;
};

// The rows the options select, in benchmark_gemms()'s order.
std::vector<NetworkGemm> selected_gemms(const Options& o) {
  std::vector<NetworkGemm> out;
  for (auto& g : benchmark_gemms()) {
    if (!o.models.empty() && std::find(o.models.begin(), o.models.end(), g.model) == o.models.end())
      continue;
    if (o.max_gflop && g.shape.gflop() > *o.max_gflop) continue;
    out.push_back(std::move(g));
  }
  return out;
}

// "Llama-2-13B ffn_up forward TN 13824x8192x5120": how violations and the worst row are named.
std::string describe_row(const NetworkGemm& g) {
  return g.model + " " + g.layer + " " + g.pass + " " + g.shape.layout + " " + g.shape.text();
}

// One distinct layout and shape, measured.
struct Measurement {
  std::string origin, config;  // tuned_gemm_describe's text before and after ": "
  std::string math;            // the arithmetic of the pick (FFMA, split TF32 on wgmma, ...)
  Comparison c;
  double ratio = 0;  // cublas_ms / tuned_ms
  std::optional<double> first_use_ms;
};

Measurement measure(const Shape& s, bool first_use, DeviceCheck& check, gemm_op::Fp64Sample& exact,
                    gemm_op::CublasHandle& cublas, cudaStream_t stream) {
  Measurement m;
  const gemm_op::Problem p = gemm_op::packed_problem(s.layout, s.m, s.n, s.k);
  // Operands of this shape only (VGG's largest are 3.7 GB each): freed when this returns.
  GemmOperands ops(p, check, stream);
  const TunedGemmCalls calls(p, ops, cublas);
  if (first_use) m.first_use_ms = calls.time_one_call(stream);
  std::tie(m.origin, m.config) = calls.origin_and_config();
  if (!m.config.empty()) {
    m.math = gemm_op::math_family(read_config(m.config, gemm_op::parameters()));
  }
  m.c = calls.compare(check, exact, stream);
  m.ratio = m.c.cublas_ms / m.c.tuned_ms;
  return m;
}

struct Row {
  NetworkGemm gemm;
  size_t measurement = 0;  // index into the measurements
  bool reused = false;     // figures of an earlier row with the same layout and shape
};

struct Summary {
  double time_weighted = NAN, geomean = NAN, geomean_large = NAN, worst_large = NAN,
         worst = NAN;
  std::string worst_large_row, worst_row;
  int below_0_75 = 0, large_below_0_90 = 0, count_large = 0, wrong = 0;
  double total_gflop = 0;
  std::vector<std::string> violations;
  // Decode rows (n <= kDecodeTokens): each one's bandwidth bound (its operands read and written
  // once at the copy bandwidth measured in this run) over its time; the worst and the median.
  double copy_gbps = NAN, worst_decode_bw = NAN, median_decode_bw = NAN;
  std::string worst_decode_row;
  int decode_rows = 0;
};

constexpr int64_t kDecodeTokens = 16;

// The time a product's operands take to move once at copy_gbps, in ms.
double bound_ms(const Shape& s, double copy_gbps) { return operand_bytes(s) / (copy_gbps * 1e6); }

Summary summarize(const std::vector<Row>& rows, const std::vector<Measurement>& measured,
                  double copy_gbps) {
  Summary s;
  s.copy_gbps = copy_gbps;
  std::vector<double> all, large, decode;
  double tuned_ms = 0, cublas_ms = 0;
  for (const Row& r : rows) {
    const Measurement& m = measured[r.measurement];
    const double g = r.gemm.shape.gflop();
    s.total_gflop += g;
    tuned_ms += m.c.tuned_ms;
    cublas_ms += m.c.cublas_ms;
    all.push_back(m.ratio);
    if (!(m.ratio >= s.worst)) {  // also replaces the NaN it starts as
      s.worst = m.ratio;
      s.worst_row = describe_row(r.gemm);
    }
    if (m.ratio < 0.75) ++s.below_0_75;
    if (g > kLargeGflop) {
      large.push_back(m.ratio);
      if (!(m.ratio >= s.worst_large)) {
        s.worst_large = m.ratio;
        s.worst_large_row = describe_row(r.gemm);
      }
      if (m.ratio < 0.90) ++s.large_below_0_90;
    }
    if (r.gemm.shape.n <= kDecodeTokens && m.c.tuned_ms > 0) {
      const double fraction = bound_ms(r.gemm.shape, copy_gbps) / m.c.tuned_ms;
      decode.push_back(fraction);
      if (!(fraction >= s.worst_decode_bw)) {
        s.worst_decode_bw = fraction;
        s.worst_decode_row = describe_row(r.gemm);
      }
    }
    if (!m.c.correct) ++s.wrong;
    if (!m.c.within_contract) s.violations.push_back(describe_row(r.gemm));
  }
  s.count_large = static_cast<int>(large.size());
  if (tuned_ms > 0) s.time_weighted = cublas_ms / tuned_ms;
  if (!all.empty()) s.geomean = geometric_mean(all);
  if (!large.empty()) s.geomean_large = geometric_mean(large);
  s.decode_rows = static_cast<int>(decode.size());
  s.median_decode_bw = median(decode);
  return s;
}

void write_json(const Options& o, const std::string& device_name, const std::string& mode,
                const std::vector<Row>& rows, const std::vector<Measurement>& measured,
                const Summary& s, double wall_s) {
  std::ofstream out(o.json);
  out << "{\n  \"device\": " << json_escape(device_name) << ",\n  \"mode\": " << json_escape(mode)
      << ",\n  \"models\": [";
  for (size_t i = 0; i < o.models.size(); ++i) out << (i ? ", " : "") << json_escape(o.models[i]);
  out << "],\n  \"max_gflop\": " << json_number(o.max_gflop)
      << ",\n  \"row_count\": " << rows.size() << ",\n  \"distinct_shapes\": " << measured.size()
      << ",\n  \"total_gflop\": " << json_number(s.total_gflop)
      << ",\n  \"time_weighted_ratio\": " << json_number(s.time_weighted)
      << ",\n  \"geomean_ratio\": " << json_number(s.geomean)
      << ",\n  \"geomean_large\": " << json_number(s.geomean_large)
      << ",\n  \"count_large\": " << s.count_large
      << ",\n  \"worst_large\": " << json_number(s.worst_large)
      << ",\n  \"worst_large_row\": " << json_escape(s.worst_large_row)
      << ",\n  \"copy_gbps\": " << json_number(s.copy_gbps)
      << ",\n  \"decode_rows\": " << s.decode_rows
      << ",\n  \"worst_decode_bw_fraction\": " << json_number(s.worst_decode_bw)
      << ",\n  \"worst_decode_row\": " << json_escape(s.worst_decode_row)
      << ",\n  \"median_decode_bw_fraction\": " << json_number(s.median_decode_bw)
      << ",\n  \"worst_ratio\": " << json_number(s.worst)
      << ",\n  \"worst_row\": " << json_escape(s.worst_row)
      << ",\n  \"below_0_75\": " << s.below_0_75
      << ",\n  \"large_below_0_90\": " << s.large_below_0_90 << ",\n  \"contract_violations\": [";
  for (size_t i = 0; i < s.violations.size(); ++i) {
    out << (i ? ", " : "") << json_escape(s.violations[i]);
  }
  out << "],\n  \"all_correct\": " << (s.wrong == 0 ? "true" : "false")
      << ",\n  \"wall_s\": " << json_number(wall_s) << ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const Measurement& m = measured[r.measurement];
    out << "    {\"model\": " << json_escape(r.gemm.model)
        << ", \"layer\": " << json_escape(r.gemm.layer)
        << ", \"pass\": " << json_escape(r.gemm.pass) << ", \"tokens\": " << r.gemm.tokens
        << ", \"layout\": " << json_escape(r.gemm.shape.layout)
        << ", \"shape\": " << json_escape(r.gemm.shape.text())
        << ", \"gflop\": " << json_number(r.gemm.shape.gflop())
        << ", \"origin\": " << json_escape(m.origin) << ", \"config\": " << json_escape(m.config)
        << ", \"math\": " << json_escape(m.math) << ", \"tuned_ms\": " << json_number(m.c.tuned_ms)
        << ", \"cublas_ms\": " << json_number(m.c.cublas_ms)
        << ", \"ratio\": " << json_number(m.ratio)
        << ", \"bw_fraction\": " << json_number(bound_ms(r.gemm.shape, s.copy_gbps) / m.c.tuned_ms)
        << ", \"err_tuned\": " << json_number(m.c.err_tuned)
        << ", \"err_cublas\": " << json_number(m.c.err_cublas)
        << ", \"within_contract\": " << (m.c.within_contract ? "true" : "false")
        << ", \"correct\": " << (m.c.correct ? "true" : "false")
        << ", \"rel_error\": " << json_number(m.c.rel_error)
        << ", \"first_use_ms\": " << json_number(m.first_use_ms)
        << ", \"reused\": " << (r.reused ? "true" : "false") << "}"
        << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json " + o.json + ": cannot write");
}

using ShapeKey = std::tuple<std::string, int64_t, int64_t, int64_t>;

ShapeKey key_of(const Shape& s) { return {s.layout, s.m, s.n, s.k}; }

int print_shapes(const Options& o) {
  for (const auto& g : selected_gemms(o)) {
    std::printf("%-12s %-8s %-11s %7lld %-2s %-16s %.6g\n", g.model.c_str(), g.layer.c_str(),
                g.pass.c_str(), static_cast<long long>(g.tokens), g.shape.layout.c_str(),
                g.shape.text().c_str(), g.shape.gflop());
  }
  return 0;
}

// The run's first lines: device and library, the rows' count and size, the table's header.
void print_header(const GemmBenchSetup& bench, const std::vector<NetworkGemm>& gemms,
                  bool first_use) {
  const DeviceInfo& device = bench.device;
  std::set<ShapeKey> distinct;
  double total_gflop = 0;
  for (const auto& g : gemms) {
    distinct.insert(key_of(g.shape));
    total_gflop += g.shape.gflop();
  }
  std::printf("gemm_networks on %s (%s, %d SMs), cuBLAS %d FP32, mode %s, database: %s\n",
              device.name.c_str(), device.arch().c_str(), device.sm_count, bench.cublas_version,
              bench.mode.c_str(), bench.database_text().c_str());
  std::printf("%zu rows, %zu distinct shapes, %.0f GFLOP in all\n", gemms.size(), distinct.size(),
              total_gflop);
  std::printf("%-12s %-8s %-11s %7s %-6s %-16s %9s %10s %10s %7s %10s %10s%s  %s\n", "model",
              "layer", "pass", "tokens", "layout", "shape", "GFLOP", "tuned ms", "cuBLAS ms",
              "ratio", "err tuned", "err cuBLAS", first_use ? "  1st use ms" : "", "origin");
  std::fflush(stdout);
}

void print_row(const Row& r, const Measurement& m, bool first_use) {
  const NetworkGemm& g = r.gemm;
  std::printf("%-12s %-8s %-11s %7lld %-6s %-16s %9.4g %10.4f %10.4f %7.3f %10.2e %10.2e",
              g.model.c_str(), g.layer.c_str(), g.pass.c_str(), static_cast<long long>(g.tokens),
              g.shape.layout.c_str(), g.shape.text().c_str(), g.shape.gflop(), m.c.tuned_ms,
              m.c.cublas_ms, m.ratio, m.c.err_tuned, m.c.err_cublas);
  if (first_use) std::printf(" %12s", optional_ms(m.first_use_ms).c_str());
  std::printf("  [%s] %s: %s%s%s%s\n", m.math.c_str(), m.origin.c_str(), m.config.c_str(),
              r.reused ? "  (measured above)" : "", m.c.correct ? "" : "  WRONG RESULT",
              m.c.within_contract ? "" : "  CONTRACT VIOLATION");
  std::fflush(stdout);
}

// Every row in order, each distinct layout and shape measured at its first row and reused by
// the rows that repeat it; each row printed as it comes.
void measure_rows(const std::vector<NetworkGemm>& gemms, bool first_use, GemmBenchSetup& bench,
                  std::vector<Row>& rows, std::vector<Measurement>& measured) {
  std::map<ShapeKey, size_t> index;  // distinct shape -> its measurement
  for (const auto& g : gemms) {
    Row r{g, 0, false};
    if (auto it = index.find(key_of(g.shape)); it != index.end()) {
      r.measurement = it->second;
      r.reused = true;
    } else {
      measured.push_back(
          measure(g.shape, first_use, bench.check, bench.exact, bench.cublas, bench.stream.get()));
      r.measurement = measured.size() - 1;
      index.emplace(key_of(g.shape), r.measurement);
    }
    print_row(r, measured[r.measurement], first_use);
    rows.push_back(std::move(r));
  }
}

void print_summary(bool first_use, const std::vector<Row>& rows,
                   const std::vector<Measurement>& measured, const Summary& s, double wall_s) {
  std::printf("\n%zu rows, %zu distinct shapes, %.0f GFLOP; wall time %.1f s\n", rows.size(),
              measured.size(), s.total_gflop, wall_s);
  std::printf("time-weighted ratio (sum of cuBLAS ms / sum of tuned ms): %.3f\n", s.time_weighted);
  std::printf("geometric mean of cuBLAS/tuned time over all rows: %.3f (worst %.3f: %s)\n",
              s.geomean, s.worst, s.worst_row.c_str());
  if (s.count_large) {
    std::printf("above 1 GFLOP: geomean %.3f over %d rows, worst %.3f (%s)\n", s.geomean_large,
                s.count_large, s.worst_large, s.worst_large_row.c_str());
  }
  std::printf("%d rows below 0.75, %d rows above 1 GFLOP below 0.90\n", s.below_0_75,
              s.large_below_0_90);
  if (s.decode_rows) {
    std::printf(
        "decode rows (n <= %lld): of the bandwidth bound (operands moved once at the copy "
        "bandwidth, %.0f GB/s), median %.3f, worst %.3f (%s)\n",
        static_cast<long long>(kDecodeTokens), s.copy_gbps, s.median_decode_bw, s.worst_decode_bw,
        s.worst_decode_row.c_str());
  }
  if (first_use) {
    std::vector<double> first_uses;
    for (const auto& m : measured) {
      if (m.first_use_ms) first_uses.push_back(*m.first_use_ms);
    }
    if (!first_uses.empty()) {
      std::printf("first-use (tuning) call: median %.1f ms, max %.1f ms over %zu shapes\n",
                  median(first_uses), *std::max_element(first_uses.begin(), first_uses.end()),
                  first_uses.size());
    }
  }
  if (s.wrong) {
    std::printf("%d WRONG RESULTS\n", s.wrong);
  } else {
    std::printf("ALL CORRECT\n");
  }
  print_contract_violations(s.violations);
}

int run(const Options& o) {
  const auto wall_start = Clock::now();
  GemmBenchSetup bench(o.device, o.db, o.no_user_db, o.first_use, "gemm_networks");
  const std::vector<NetworkGemm> gemms = selected_gemms(o);
  print_header(bench, gemms, o.first_use);
  std::vector<Measurement> measured;
  std::vector<Row> rows;
  measure_rows(gemms, o.first_use, bench, rows, measured);
  // The copy bandwidth after the products, in the same process: what decode rows are held to.
  const double copy = copy_gbps(bench.stream.get());

  const Summary s = summarize(rows, measured, copy);
  const double wall_s = elapsed_ms(wall_start) / 1e3;
  print_summary(o.first_use, rows, measured, s, wall_s);
  if (!o.json.empty()) write_json(o, bench.device.name, bench.mode, rows, measured, s, wall_s);
  return s.wrong || !s.violations.empty() ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned_gemm against cuBLAS FP32 on the GEMMs of public network layers.",
               "gemm_networks"};
  Options o;
  std::vector<std::string> model_names;
  for (const auto& g : benchmark_gemms()) {
    if (std::find(model_names.begin(), model_names.end(), g.model) == model_names.end()) {
      model_names.push_back(g.model);
    }
  }
  double max_gflop = 0;
  app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber);
  app.add_option("--db", o.db, "tuning database tuned_gemm reads (default: the user's)");
  app.add_flag("--no-user-db", o.no_user_db, "use a fresh empty database: shipped data only");
  app.add_flag("--first-use", o.first_use,
               "TUNED_TUNING=first-use with a fresh database; time each shape's first call");
  app.add_option("--json", o.json, "write the results here as JSON");
  app.add_option("--model", o.models, "only this model's rows (repeatable)")
      ->check(CLI::IsMember(model_names));
  auto* max_opt = app.add_option("--max-gflop", max_gflop, "skip rows of more GFLOP (2mnk / 1e9)")
                      ->check(CLI::PositiveNumber);
  app.add_flag("--print-shapes", o.print_shapes,
               "print the rows, \"model layer pass tokens layout MxNxK gflop\", and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help); usage errors exit 2 as the header says.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (max_opt->count()) o.max_gflop = max_gflop;
  if (!o.db.empty() && (o.no_user_db || o.first_use)) {
    std::fprintf(stderr, "gemm_networks: --db excludes --no-user-db and --first-use\n");
    return 2;
  }
  if (o.print_shapes) return print_shapes(o);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_networks: %s\n", e.what());
    return 1;
  }
}
