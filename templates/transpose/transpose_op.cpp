#include "templates/transpose/transpose_op.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "templates/extent.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::transpose_op {
namespace {

int64_t tiles(int64_t size, int tile) { return (size + tile - 1) / tile; }

}  // namespace

Problem packed_problem(int64_t rows, int64_t cols) {
  Problem p;
  p.rows = rows;
  p.cols = cols;
  p.lda = std::max<int64_t>(1, rows);
  p.ldb = std::max<int64_t>(1, cols);
  p.alignment = alignment_class(nullptr, nullptr, p.lda, p.ldb);
  return p;
}

Problem call_problem(int64_t rows, int64_t cols, const void* a, int64_t lda, const void* b,
                     int64_t ldb) {
  Problem p;
  p.rows = rows;
  p.cols = cols;
  p.lda = lda;
  p.ldb = ldb;
  p.alignment = alignment_class(a, b, lda, ldb);
  return p;
}

int alignment_class(const void* a, const void* b, int64_t lda, int64_t ldb) {
  for (int w : {4, 2}) {
    const auto aligned = [w](const void* p) {
      return reinterpret_cast<uintptr_t>(p) % (4u * static_cast<unsigned>(w)) == 0;
    };
    if (aligned(a) && aligned(b) && lda % w == 0 && ldb % w == 0) return w;
  }
  return 1;
}

void validate_arguments(int64_t rows, int64_t cols, const void* a, int64_t lda, const void* b,
                        int64_t ldb) {
  // Rules that quote numbers format them only when they fail (this runs on every call, and on
  // every GEMM call of a PRETB config).
  require_argument(rows >= 0, "rows",
                   [&] { return "must be >= 0 (got " + std::to_string(rows) + ")"; });
  require_argument(cols >= 0, "cols",
                   [&] { return "must be >= 0 (got " + std::to_string(cols) + ")"; });
  require_argument(lda >= std::max<int64_t>(1, rows), "lda", [&] {
    return "must be >= max(1, rows) = " + std::to_string(std::max<int64_t>(1, rows)) + " (got " +
           std::to_string(lda) + ")";
  });
  require_argument(ldb >= std::max<int64_t>(1, cols), "ldb", [&] {
    return "must be >= max(1, cols) = " + std::to_string(std::max<int64_t>(1, cols)) + " (got " +
           std::to_string(ldb) + ")";
  });
  if (rows == 0 || cols == 0) return;  // nothing is read or written
  require_argument(a != nullptr, "A", "must not be NULL when rows and cols are > 0");
  require_argument(b != nullptr, "B", "must not be NULL when rows and cols are > 0");
  require_argument(!operands_overlap(a, rows, cols, lda, 4, b, cols, rows, ldb, 4), "B",
                   "must not overlap A (the transpose is out of place)");
}

const std::vector<Param>& parameters() {
  static const std::vector<Param> params = {
      {"TILE", {16, 32, 64}, "tile edge moved through shared memory"},
      {"RPT", {1, 2, 4, 8, 16}, "tile columns each thread moves per pass"},
      {"VEC", {1, 2, 4}, "floats per global load and store"},
      {"PAD", {0, 1, 2, 4}, "floats of padding per shared row (bank conflicts)"},
      {"ORDER", {0, 1, 2}, "tile order: down the rows, across the columns, diagonal"},
  };
  return params;
}

int threads_per_block(const Config& c) {
  return (c.get("TILE") / c.get("VEC")) * (c.get("TILE") / c.get("RPT"));
}

Space make_space(const DeviceInfo& device, const Problem& problem) {
  Space space;
  for (const auto& p : parameters()) space.add(p);
  const int max_threads = std::min(1024, device.max_threads_per_block);
  const int alignment = problem.alignment;
  const int64_t cap = std::max<int64_t>(16, pow2_at_least(std::max(problem.rows, problem.cols)));
  // Validity: what the kernel needs to compile, launch and compute the right result.
  space.require({"rpt_divides_tile", {"TILE", "RPT"},
                 [](const Config& c) { return c.get("TILE") % c.get("RPT") == 0; }});
  space.require({"vec_divides_tile", {"TILE", "VEC"},
                 [](const Config& c) { return c.get("TILE") % c.get("VEC") == 0; }});
  space.require({"vec_fits_alignment", {"VEC"},
                 [=](const Config& c) { return c.get("VEC") <= alignment; }});
  space.require({"threads_per_block", {"TILE", "RPT", "VEC"},
                 [=](const Config& c) { return threads_per_block(c) <= max_threads; }});
  // Pruning: blocks of fewer than a warp, tiles far larger than the matrix.
  space.require({"a_warp_at_least", {"TILE", "RPT", "VEC"},
                 [](const Config& c) { return threads_per_block(c) >= 32; }, true});
  space.require({"tile_fits_matrix", {"TILE"},
                 [=](const Config& c) { return c.get("TILE") <= cap; }, true});
  return space;
}

Config default_config(const DeviceInfo& device, const Problem& problem) {
  // The classic 32 x 32 tile, 32 x 8 threads, +1 padding.
  return fit_config(Config::parse("TILE=32,RPT=4,VEC=1,PAD=1,ORDER=0"), device, problem);
}

std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem) {
  const Space space = make_space(device, problem);
  std::vector<Config> seeds = {default_config(device, problem)};
  for (const char* text : {"TILE=32,RPT=8,VEC=4,PAD=1,ORDER=0", "TILE=64,RPT=8,VEC=4,PAD=1,ORDER=0",
                           "TILE=64,RPT=16,VEC=4,PAD=1,ORDER=2", "TILE=32,RPT=4,VEC=2,PAD=1,ORDER=1",
                           "TILE=64,RPT=4,VEC=4,PAD=4,ORDER=0", "TILE=16,RPT=2,VEC=1,PAD=1,ORDER=0"}) {
    Config c = Config::parse(text);
    c.set("VEC", std::min(c.get("VEC"), problem.alignment));
    if (!space.violation(c)) seeds.push_back(c);
  }
  return seeds;
}

Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem) {
  Config c = config;
  c.set("VEC", std::min(c.get("VEC"), problem.alignment));
  if (auto broken = make_space(device, problem).violation(c, /*include_pruning=*/false)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "transpose config " + config.canonical() + " breaks rule " + *broken);
  }
  return c;
}

std::string kernel_name(const Config& config) { return "transpose" + config.name_suffix(); }

KernelSpec kernel_spec(const Config& config) {
  KernelSpec spec = template_kernel_spec("transpose.cu", kernel_name(config));
  spec.options = {"-DKERNEL_NAME=" + spec.kernel_name};
  for (const auto& d : config.defines()) spec.options.push_back(d);
  return spec;
}

LaunchGeometry geometry(const Config& config, const Problem& problem) {
  const int tile = config.get("TILE");
  const int64_t blocks = tiles(problem.rows, tile) * tiles(problem.cols, tile);
  if (blocks > INT_MAX) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "rows = " + std::to_string(problem.rows) + ", cols = " +
                    std::to_string(problem.cols) + " need " + std::to_string(blocks) +
                    " tiles of " + std::to_string(tile) + "x" + std::to_string(tile) +
                    "; at most 2^31 - 1 fit a grid");
  }
  LaunchGeometry g;
  g.grid = dim3(static_cast<unsigned>(blocks));
  g.block = dim3(static_cast<unsigned>(tile / config.get("VEC")),
                 static_cast<unsigned>(tile / config.get("RPT")));
  return g;
}

ProblemKey problem_key(const DeviceInfo& device, const Problem& problem) {
  ProblemKey key;
  key.device_uuid = device.uuid;
  key.op = "transpose";
  key.variant = "T";
  key.shape = {problem.rows, problem.cols};
  key.alignment = problem.alignment;
  return key;
}

void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem,
            const float* a, float* b, cudaStream_t stream) {
  if (config.get("VEC") > problem.alignment) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, "transpose config " + config.canonical() +
                                               ": VEC exceeds the operands' alignment (" +
                                               std::to_string(problem.alignment) + ")");
  }
  long long rows = problem.rows, cols = problem.cols, lda = problem.lda, ldb = problem.ldb;
  const int tile = config.get("TILE");
  long long tiles_r = tiles(rows, tile), tiles_c = tiles(cols, tile);
  void* args[] = {&rows, &cols, &a, &lda, &b, &ldb, &tiles_r, &tiles_c};
  kernel.launch(geometry(config, problem), args, stream);
}

OpInfo info() {
  OpInfo op;
  op.name = "transpose";
  op.dims = {"ROWS", "COLS"};
  op.variants = {"T"};
  op.default_shapes = {{16384, 16384}, {4096, 4096}, {1000, 1000}, {4097, 3}};
  op.rate_unit = "GB/s";
  op.params = parameters();
  return op;
}

}  // namespace tuned::transpose_op
