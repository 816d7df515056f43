#include "templates/entropy/entropy_op.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "core/cuda_check.hpp"
#include "templates/extent.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::entropy_op {
namespace {

constexpr size_t kStaticSharedLimit = 48 * 1024;  // static __shared__ arrays only
constexpr const char* kValidate = "entropy_validate";
constexpr const char* kFillTable = "entropy_fill_table";

size_t entry_bytes(int acc) { return acc == 1 ? 8 : 4; }

// Updates of the running sum one output's result has seen: its window built once, then a column
// removed and one added per further output of the thread.
int64_t updates_per_output(const Config& c, int radius) {
  const int win = 2 * radius + 1;
  return c.get("SLIDE") ? int64_t{win} * win + int64_t{c.get("OPT") - 1} * 2 * win
                        : int64_t{win} * win;
}

// The kernel's Tables argument, laid out as entropy.cu declares it: Entry f[NMAX]; float
// log_n[NMAX + 1]; (aligned as Entry).
std::vector<unsigned char> make_tables(int acc, int radius) {
  const int nmax = window_elements(radius);
  const size_t eb = entry_bytes(acc);
  size_t bytes = nmax * eb + (nmax + 1) * sizeof(float);
  bytes = (bytes + eb - 1) / eb * eb;
  std::vector<unsigned char> t(bytes, 0);
  const double scale = std::ldexp(1.0, fixed_bits(radius));
  auto F = [](int c) { return c > 0 ? c * std::log(static_cast<double>(c)) : 0.0; };
  for (int c = 0; c < nmax; ++c) {
    const double f = F(c + 1) - F(c);
    unsigned char* at = t.data() + c * eb;
    if (acc == 1) {
      std::memcpy(at, &f, 8);
    } else if (acc == 3) {
      // Differences of rounded values: any sequence of updates sums to sum_v round(F(c_v) 2^k).
      const int fixed = static_cast<int>(std::llround(F(c + 1) * scale) - std::llround(F(c) * scale));
      std::memcpy(at, &fixed, 4);
    } else {
      const float ff = static_cast<float>(f);
      std::memcpy(at, &ff, 4);
    }
  }
  for (int n = 0; n <= nmax; ++n) {
    const float log_n = n > 0 ? static_cast<float>(std::log(static_cast<double>(n))) : 0.0f;
    std::memcpy(t.data() + nmax * eb + n * sizeof(float), &log_n, sizeof(float));
  }
  return t;
}

// make_tables for every accumulation and radius, built once.
const std::vector<unsigned char>& tables_for(int acc, int radius) {
  static const auto all = [] {
    std::vector<std::vector<unsigned char>> t;
    for (int a = 0; a < 4; ++a) {
      for (int r = 0; r <= kMaxRadius; ++r) t.push_back(make_tables(a, r));
    }
    return t;
  }();
  return all[static_cast<size_t>(acc * (kMaxRadius + 1) + radius)];
}

}  // namespace

const char* variant_name(Input input) { return input == Input::kU8 ? "u8" : "f32"; }
size_t input_bytes(Input input) { return input == Input::kU8 ? 1 : 4; }

Problem packed_problem(int64_t rows, int64_t cols, int radius, int levels) {
  Problem p;
  p.rows = rows;
  p.cols = cols;
  p.ld_in = std::max<int64_t>(1, rows);
  p.ld_out = std::max<int64_t>(1, rows);
  p.radius = radius;
  p.levels = levels;
  return p;
}

const std::vector<Param>& parameters() {
  static const std::vector<Param> params = {
      {"BX", {32, 64, 128, 256}, "threads along the rows (a warp covers 32 consecutive rows)"},
      {"BY", {1, 2, 4, 8}, "threads along the columns"},
      {"OPT", {1, 2, 4, 8, 16, 32, 64}, "outputs (columns) per thread"},
      {"LOG", {0, 1, 2, 3}, "log table: 0 none (computed), 1 shared, 2 constant, 3 global"},
      {"CNT", {8, 16, 32}, "counter width in bits"},
      {"ACC", {0, 1, 2, 3}, "accumulation: 0 float, 1 double, 2 float table + double sums, 3 fixed point"},
      {"STAGE", {0, 1, 2}, "input staging: 0 direct loads, 1 shared tile with halo, 2 register ring"},
      {"SLIDE", {0, 1}, "0 count every window, 1 slide the window along the columns"},
  };
  return params;
}

int fixed_bits(int radius) {
  const int nmax = window_elements(radius);
  // Largest sum n log n (+ n halves of rounding) below 2^31 with a margin of one bit.
  const double s_max = nmax * std::log(static_cast<double>(std::max(nmax, 2))) + nmax;
  return std::min(24, static_cast<int>(std::floor(std::log2(std::ldexp(1.0, 30) / s_max))));
}

double error_bound(const Config& c, int radius) {
  const int nmax = window_elements(radius);
  const double log_n = std::log(static_cast<double>(std::max(nmax, 2)));
  const double eps_float = std::ldexp(1.0, -24), eps_double = std::ldexp(1.0, -53);
  const int acc = c.get("ACC");
  const bool computed = c.get("LOG") == 0;  // f from the fast log: a few ulps of float
  // Final step: log n - S / n in float.
  double bound = 4 * eps_float * (log_n + 1);
  if (acc == 3) {
    // Integer sums are exact; each count's rounding is at most half a unit of the scale, and a
    // computed F(c) = c log c carries a few float ulps of itself.
    bound += 0.5 * std::ldexp(1.0, -fixed_bits(radius)) + (computed ? 8 * eps_float * log_n : 0);
    return bound;
  }
  const double eps_sum = acc == 0 ? eps_float : eps_double;
  if (computed) {
    // f(c) = (c+1) log(c+1) - c log c from the fast log (relative error ~2^-21) cancels: each
    // value carries about 2 c log c of that error, and the values a count went through add up
    // (telescoped: at most 2 n log n per window, over n).
    bound += 2 * nmax * log_n * std::ldexp(1.0, -21);
  } else {
    // Table rounding telescopes: at most nmax entries of (log n + 1) each, over n.
    bound += (acc == 1 ? eps_double : eps_float) * (log_n + 1);
  }
  // Each update rounds the running sum, at most n log n, over n.
  bound += static_cast<double>(updates_per_output(c, radius)) * eps_sum * log_n;
  return bound;
}

int threads_per_block(const Config& c) { return c.get("BX") * c.get("BY"); }

size_t shared_bytes(const Config& c, const Problem& p) {
  const int per_word = 32 / c.get("CNT");
  const size_t words = static_cast<size_t>((p.levels + per_word - 1) / per_word);
  size_t bytes = words * threads_per_block(c) * 4;
  if (c.get("LOG") == 1) bytes += window_elements(p.radius) * entry_bytes(c.get("ACC"));
  if (c.get("STAGE") == 1) {
    bytes += static_cast<size_t>(c.get("BX") + 2 * p.radius) *
             (static_cast<size_t>(c.get("BY")) * c.get("OPT") + 2 * p.radius);
  }
  return bytes;
}

Space make_space(const DeviceInfo& device, const Problem& problem, Input /*input*/) {
  Space space;
  for (const auto& p : parameters()) space.add(p);
  const int max_threads = std::min(1024, device.max_threads_per_block);
  const int radius = problem.radius;
  const int win = 2 * radius + 1;
  // Validity: what the kernel needs to compile, launch and meet the tolerance.
  space.require({"threads_per_block", {"BX", "BY"},
                 [=](const Config& c) { return threads_per_block(c) <= max_threads; }});
  space.require({"register_ring_slides", {"STAGE", "SLIDE"},
                 [](const Config& c) { return c.get("STAGE") != 2 || c.get("SLIDE") == 1; }});
  space.require({"register_ring_fits", {"STAGE"},
                 [=](const Config& c) { return c.get("STAGE") != 2 || win * win <= 64; }});
  space.require({"shared_memory_fits", {"BX", "BY", "OPT", "LOG", "CNT", "ACC", "STAGE"},
                 [=](const Config& c) { return shared_bytes(c, problem) <= kStaticSharedLimit; }});
  space.require({"error_within_tolerance", {"OPT", "LOG", "ACC", "SLIDE"},
                 [=](const Config& c) { return error_bound(c, radius) <= kTolerance; }});
  // Pruning: sliding one output is counting it; blocks far larger than the matrix.
  space.require({"slide_needs_outputs", {"OPT", "SLIDE"},
                 [](const Config& c) { return c.get("SLIDE") == 0 || c.get("OPT") >= 2; }, true});
  const int64_t rows_cap = std::max<int64_t>(32, pow2_at_least(problem.rows));
  const int64_t cols_cap = std::max<int64_t>(2, pow2_at_least(problem.cols));
  space.require({"block_fits_rows", {"BX"},
                 [=](const Config& c) { return c.get("BX") <= rows_cap; }, true});
  space.require({"block_fits_cols", {"BY", "OPT"},
                 [=](const Config& c) { return int64_t{c.get("BY")} * c.get("OPT") <= cols_cap; },
                 true});
  return space;
}

Config default_config(const DeviceInfo& device, const Problem& problem, Input input) {
  // Sliding windows of 16 outputs, fixed-point sums, counts in bytes, f in shared memory (a warp's
  // counts differ: constant memory would serialize them): fits every radius and level count
  // (256 levels x 128 threads of bytes: 32 KB).
  return fit_config(Config::parse("BX=128,BY=1,OPT=16,LOG=1,CNT=8,ACC=3,STAGE=0,SLIDE=1"), device,
                    problem, input);
}

std::vector<Config> seed_configs(const DeviceInfo& device, const Problem& problem, Input input) {
  const Space space = make_space(device, problem, input);
  std::vector<Config> seeds = {default_config(device, problem, input)};
  for (const char* text : {"BX=128,BY=1,OPT=32,LOG=2,CNT=8,ACC=3,STAGE=2,SLIDE=1",
                           "BX=64,BY=2,OPT=32,LOG=1,CNT=8,ACC=3,STAGE=0,SLIDE=1",
                           "BX=128,BY=2,OPT=16,LOG=1,CNT=8,ACC=2,STAGE=1,SLIDE=1",
                           "BX=256,BY=1,OPT=8,LOG=3,CNT=16,ACC=3,STAGE=0,SLIDE=1",
                           "BX=128,BY=1,OPT=4,LOG=1,CNT=32,ACC=1,STAGE=0,SLIDE=0"}) {
    const Config c = Config::parse(text);
    if (!space.violation(c)) seeds.push_back(c);
  }
  return seeds;
}

Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem,
                  Input input) {
  if (auto broken = make_space(device, problem, input).violation(config, false)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, "entropy config " + config.canonical() +
                                               " breaks rule " + *broken + " for radius " +
                                               std::to_string(problem.radius) + ", levels " +
                                               std::to_string(problem.levels));
  }
  return config;
}

std::string kernel_name(const Config& config, const Problem& problem, Input input) {
  return std::string("entropy_") + variant_name(input) + "_r" + std::to_string(problem.radius) +
         "_l" + std::to_string(problem.levels) + config.name_suffix();
}

KernelSpec kernel_spec(const Config& config, const Problem& problem, Input input) {
  KernelSpec spec = template_kernel_spec("entropy.cu", kernel_name(config, problem, input));
  spec.options = {"-DKERNEL_NAME=" + spec.kernel_name,
                  "-DRADIUS=" + std::to_string(problem.radius),
                  "-DLEVELS=" + std::to_string(problem.levels),
                  "-DINPUT_U8=" + std::to_string(input == Input::kU8 ? 1 : 0),
                  "-DFIXED_BITS=" + std::to_string(fixed_bits(problem.radius))};
  for (const auto& d : config.defines()) spec.options.push_back(d);
  spec.companions = {kValidate, kFillTable};
  return spec;
}

LaunchGeometry geometry(const Config& config, const Problem& problem) {
  const int64_t bx = config.get("BX"), cols_per_block = int64_t{config.get("BY")} * config.get("OPT");
  const int64_t blocks = ((problem.rows + bx - 1) / bx) * ((problem.cols + cols_per_block - 1) / cols_per_block);
  if (blocks > INT_MAX) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "rows = " + std::to_string(problem.rows) + ", cols = " +
                    std::to_string(problem.cols) + " need " + std::to_string(blocks) +
                    " blocks; at most 2^31 - 1 fit a grid");
  }
  LaunchGeometry g;
  g.grid = dim3(static_cast<unsigned>(std::max<int64_t>(blocks, 1)));
  g.block = dim3(static_cast<unsigned>(bx), static_cast<unsigned>(config.get("BY")));
  return g;
}

ProblemKey problem_key(const DeviceInfo& device, const Problem& problem, Input input) {
  ProblemKey key;
  key.device_uuid = device.uuid;
  key.op = "entropy";
  key.variant = variant_name(input);
  key.shape = {problem.rows, problem.cols, problem.radius, problem.levels};
  key.alignment = 1;
  return key;
}

size_t workspace_bytes(const Config& config, const Problem& problem) {
  return kTableOffset + (config.get("LOG") == 3 ? window_elements(problem.radius) *
                                                      entry_bytes(config.get("ACC"))
                                                : 0);
}

void validate_on_device(const LoadedKernel& kernel, const Problem& p, Input input, const void* in,
                        unsigned long long* scratch, cudaStream_t stream) {
  const unsigned long long none = ~0ull;
  TUNED_CUDA_CHECK(cudaMemcpyAsync(scratch, &none, sizeof(none), cudaMemcpyHostToDevice, stream));
  long long rows = p.rows, cols = p.cols, ld = p.ld_in;
  void* args[] = {&rows, &cols, &in, &ld, &scratch};
  LaunchGeometry g;
  g.block = dim3(256);
  const int64_t n = p.rows * p.cols;
  g.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 4096)));
  kernel.launch_companion(kValidate, g, args, stream);
  unsigned long long first_bad = none;
  TUNED_CUDA_CHECK(
      cudaMemcpyAsync(&first_bad, scratch, sizeof(first_bad), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first_bad == none) return;
  const int64_t i = static_cast<int64_t>(first_bad % static_cast<unsigned long long>(p.rows));
  const int64_t j = static_cast<int64_t>(first_bad / static_cast<unsigned long long>(p.rows));
  const auto* at = static_cast<const unsigned char*>(in) + (i + j * p.ld_in) * input_bytes(input);
  double value = 0;
  if (input == Input::kU8) {
    unsigned char v = 0;
    TUNED_CUDA_CHECK(cudaMemcpy(&v, at, 1, cudaMemcpyDeviceToHost));
    value = v;
  } else {
    float v = 0;
    TUNED_CUDA_CHECK(cudaMemcpy(&v, at, 4, cudaMemcpyDeviceToHost));
    value = v;
  }
  throw Error(TUNED_STATUS_INVALID_ARGUMENT, bad_value_message(i, j, value, p.levels));
}

void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem,
            const void* in, float* out, void* workspace, cudaStream_t stream) {
  launch_columns(kernel, config, problem, Band{0, problem.cols, 0, 0}, in, out, workspace, stream);
}

void launch_columns(const LoadedKernel& kernel, const Config& config, const Problem& problem,
                    const Band& band, const void* in, float* out, void* workspace,
                    cudaStream_t stream) {
  if (band.j_end <= band.j_begin || problem.rows == 0) return;
  // Passed by value (the kernel copies it into its parameter bank); the launch only reads it.
  void* table = const_cast<unsigned char*>(tables_for(config.get("ACC"), problem.radius).data());
  void* global_f = static_cast<unsigned char*>(workspace) + kTableOffset;
  if (config.get("LOG") == 3) {
    LaunchGeometry g;
    g.block = dim3(256);
    g.grid = dim3(1);
    void* fill_args[] = {table, &global_f};
    kernel.launch_companion(kFillTable, g, fill_args, stream);
  }
  long long rows = problem.rows, cols = problem.cols, ld_in = problem.ld_in,
            ld_out = problem.ld_out, in_col0 = band.in_col0, out_col0 = band.out_col0,
            j_begin = band.j_begin, j_end = band.j_end;
  const long long bx = config.get("BX");
  long long blocks_i = (rows + bx - 1) / bx;
  void* args[] = {&rows,   &cols,    &in,    &ld_in,    &in_col0,  &out, &ld_out,
                  &out_col0, &j_begin, &j_end, &blocks_i, &global_f, table};
  Problem columns = problem;
  columns.cols = band.j_end - band.j_begin;
  kernel.launch(geometry(config, columns), args, stream);
}

OpInfo info() {
  OpInfo op;
  op.name = "entropy";
  op.dims = {"ROWS", "COLS", "RADIUS", "LEVELS"};
  op.variants = {variant_name(Input::kF32), variant_name(Input::kU8)};
  op.dim_ranges = {{"RADIUS", {0, kMaxRadius}}, {"LEVELS", {2, kMaxLevels}}};
  // The bench's sizes at the classic window, a small one for the CPU/GPU threshold, and the
  // largest window and level count.
  op.default_shapes = {{10240, 10240, 2, 16}, {2560, 2560, 2, 16}, {400, 400, 2, 16},
                       {128, 128, 2, 16},     {2560, 2560, 7, 256}};
  op.rate_unit = "GB/s";
  op.params = parameters();
  return op;
}

}  // namespace tuned::entropy_op
