// gemm_configs: named GEMM configs timed side by side with cuBLAS FP32 on named problems, each
// result checked against cuBLAS and both measured against an FP64 product (normwise, at a sample
// of C), whatever the outcome: a wrong or inaccurate config is reported, not refused (the tuner
// refuses such configs; this is for looking at kernels while they are written).
//   gemm_configs --shape NN:4096x4096x4096 [--shape ...] --config GEMV=0,BM=...[;--config ...]
//                [--inputs uniform|wide|both] [--json FILE] [--device N]
// --json writes the rows (device; rows: shape, layout, inputs, tuned_tflops, cublas_tflops, ratio,
// err_tuned, err_cublas, config): issue 31's bench/results/gemm_tf32x3_<device>.json. A config a
// problem's rules refuse is named on its row and left out of the file.
// Inputs: uniform in [-1, 1); wide: each element times 2^u, u uniform in [-20, 20] (issue 31's
// wide-range inputs: a split that drops the small parts' information shows there).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "api/transpose_api.hpp"
#include "bench/bench_util.hpp"
#include "core/cuda_check.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/error.hpp"

namespace {

using namespace tuned;
using namespace tuned::bench;

// Each element of A and B times 2^u, u uniform in [-20, 20] (on the host: a benchmark's setup).
void spread_exponents(const GemmOperands& ops, const gemm_op::Problem& p, cudaStream_t stream) {
  auto spread = [&](const float* device_data, size_t n, uint32_t seed) {
    std::vector<float> host(n);
    TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
    TUNED_CUDA_CHECK(
        cudaMemcpy(host.data(), device_data, n * sizeof(float), cudaMemcpyDeviceToHost));
    uint32_t state = seed;
    for (float& x : host) {
      state = state * 1664525u + 1013904223u;
      x = std::ldexp(x, static_cast<int>(state >> 24) % 41 - 20);
    }
    TUNED_CUDA_CHECK(cudaMemcpy(const_cast<float*>(device_data), host.data(), n * sizeof(float),
                                cudaMemcpyHostToDevice));
  };
  spread(ops.a(), static_cast<size_t>(p.lda) * (p.trans_a ? p.m : p.k), 11);
  spread(ops.b(), static_cast<size_t>(p.ldb) * (p.trans_b ? p.k : p.n), 12);
}

// The JSON object of one row (the fields the header comment lists).
std::string json_row(const Shape& shape, const std::string& kind, const gemm_op::Problem& p,
                     const Comparison& r, const Config& config) {
  return "{\"shape\": " + json_escape(shape.text()) + ", \"layout\": " + json_escape(shape.layout) +
         ", \"inputs\": " + json_escape(kind) +
         ", \"tuned_tflops\": " + json_number(tflops(p, r.tuned_ms)) +
         ", \"cublas_tflops\": " + json_number(tflops(p, r.cublas_ms)) +
         ", \"ratio\": " + json_number(r.cublas_ms / r.tuned_ms) +
         ", \"err_tuned\": " + json_number(r.err_tuned) +
         ", \"err_cublas\": " + json_number(r.err_cublas) +
         ", \"correct\": " + (r.correct ? "true" : "false") +
         ", \"within_contract\": " + (r.within_contract ? "true" : "false") +
         ", \"config\": " + json_escape(config_text(config, gemm_op::parameters())) + "}";
}

// One config on one problem's operands, checked and timed beside cuBLAS: its table line, and its
// JSON row added to rows (a config the problem's rules refuse: named, and no row).
void time_config(GemmBenchSetup& setup, const Shape& shape, const std::string& kind,
                 const gemm_op::Problem& p, const GemmOperands& ops, const std::string& text,
                 std::vector<std::string>& rows) {
  // Fitted to the problem as the library fits a stored config (MMA = 4: B turned over
  // where it is given transposed; packing where the operands are not 16-byte aligned).
  Config config;
  try {
    config = gemm_op::fit_config(read_config(text, gemm_op::parameters()), setup.device, p);
  } catch (const Error& e) {
    std::printf("%-6s %-18s %-7s refused: %s\n", shape.layout.c_str(), shape.text().c_str(),
                kind.c_str(), e.what());
    return;
  }
  const auto kernel = setup.kernels.get(gemm_op::kernel_spec(config, p), setup.device);
  DeviceBuffer workspace(gemm_op::workspace_bytes(config, p));
  auto tuned_call = [&](cudaStream_t stream) {
    gemm_op::launch(*kernel, config, p, 1.0f, ops.a(), ops.b(), 0.0f, ops.c(), workspace.get(),
                    stream, api::transpose);
  };
  auto cublas_call = [&](cudaStream_t stream) {
    gemm_op::cublas_sgemm(setup.cublas.get(), p, 1.0f, ops.a(), ops.b(), 0.0f, ops.c_ref());
  };
  const Comparison r = compare_with_cublas(tuned_call, cublas_call, p, ops, setup.check,
                                           setup.exact, setup.stream.get());
  std::printf("%-6s %-18s %-7s %9.4f %8.2f %9.4f %8.2f %6.3f %9.2e %9.2e %9.2e  %s%s\n",
              shape.layout.c_str(), shape.text().c_str(), kind.c_str(), r.tuned_ms,
              tflops(p, r.tuned_ms), r.cublas_ms, tflops(p, r.cublas_ms), r.cublas_ms / r.tuned_ms,
              r.rel_error, r.err_tuned, r.err_cublas,
              config_text(config, gemm_op::parameters()).c_str(),
              r.correct ? (r.within_contract ? "" : "  [outside the contract]") : "  [WRONG]");
  std::fflush(stdout);
  rows.push_back(json_row(shape, kind, p, r, config));
}

void write_json(const std::string& json, const std::string& device_name,
                const std::vector<std::string>& rows) {
  std::ofstream out(json);
  out << "{\n  \"device\": " << json_escape(device_name) << ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    out << "    " << rows[i] << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--json: cannot write " + json);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times named GEMM configs beside cuBLAS FP32, with their errors.", "gemm_configs"};
  std::vector<std::string> shapes, configs;
  std::string inputs = "uniform", json;
  int device_index = 0;
  app.add_option("--shape", shapes, "LAYOUT:MxNxK, repeatable")->required();
  app.add_option("--config", configs, "a config (every parameter), repeatable")->required();
  app.add_option("--inputs", inputs, "uniform, wide or both")
      ->check(CLI::IsMember({"uniform", "wide", "both"}));
  app.add_option("--json", json, "write the rows to this file");
  app.add_option("--device", device_index, "CUDA device index");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Shape> parsed;  // before the device: bad input is named without a GPU
    for (const std::string& text : shapes) parsed.push_back(parse_layout_shape(text));
    GemmBenchSetup setup(device_index, "", false, false, "gemm_configs");
    std::printf("device %s\n", setup.device.name.c_str());
    std::printf("%-6s %-18s %-7s %9s %8s %9s %8s %6s %9s %9s %9s  %s\n", "layout", "shape",
                "inputs", "ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio", "vs cuBLAS", "err",
                "err cuBLAS", "config");
    std::vector<std::string> rows;  // JSON objects
    const std::vector<std::string> kinds =
        inputs == "both" ? std::vector<std::string>{"uniform", "wide"}
                         : std::vector<std::string>{inputs};
    for (const Shape& shape : parsed) {
      const gemm_op::Problem p = gemm_op::packed_problem(shape.layout, shape.m, shape.n, shape.k);
      for (const std::string& kind : kinds) {
        GemmOperands ops(p, setup.check, setup.stream.get());
        if (kind == "wide") spread_exponents(ops, p, setup.stream.get());
        for (const std::string& text : configs) time_config(setup, shape, kind, p, ops, text, rows);
      }
    }
    if (!json.empty()) write_json(json, setup.device.name, rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_configs: %s\n", e.what());
    return 1;
  }
  return 0;
}
