#include "templates/gemm/gemm_op.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "generator/cuda_check.hpp"
#include "templates/template_source.hpp"
#include "tuned/error.hpp"

namespace tuned::gemm_op {
namespace {

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// Values every parameter may take before constraints; see gemm.cu for their meaning.
const std::vector<Param>& parameters() {
  static const std::vector<Param> params = {
      {"BM", {16, 32, 64, 128, 256}, "block tile rows (m)"},
      {"BN", {16, 32, 64, 128, 256}, "block tile columns (n)"},
      {"BK", {8, 16, 32}, "k slice staged in shared memory"},
      {"WM", {1, 2, 4, 8, 16, 32, 64, 128, 256}, "warp tile rows"},
      {"WN", {1, 2, 4, 8, 16, 32, 64, 128, 256}, "warp tile columns"},
      {"TM", {1, 2, 4, 8}, "thread sub-tile rows (contiguous)"},
      {"TN", {1, 2, 4, 8}, "thread sub-tile columns (contiguous)"},
      {"LM", {1, 2, 4, 8, 16, 32}, "lanes of a warp along m (32/LM along n)"},
      {"VEC", {1, 2, 4}, "floats per global load and store"},
      {"PAD", {0, 4}, "shared-memory row padding in floats"},
      {"AKM", {0, 1}, "A stored k-major in shared memory"},
      {"UNROLL", {1, 2, 4, 8, 16, 32}, "unroll of the k slice loop"},
      {"PREFETCH", {0, 1}, "double-buffered shared memory with register prefetch"},
  };
  return params;
}

}  // namespace

std::string Problem::layout() const {
  return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

Problem packed_problem(const std::string& layout, int64_t m, int64_t n, int64_t k) {
  if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') ||
      (layout[1] != 'N' && layout[1] != 'T')) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "layout '" + layout + "': must be one of NN, NT, TN, TT");
  }
  Problem p;
  p.trans_a = layout[0] == 'T';
  p.trans_b = layout[1] == 'T';
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = p.min_lda();
  p.ldb = p.min_ldb();
  p.ldc = p.min_ldc();
  p.alignment = alignment_class(nullptr, nullptr, nullptr, p.lda, p.ldb, p.ldc);
  return p;
}

int alignment_class(const void* a, const void* b, const void* c, int64_t lda, int64_t ldb,
                    int64_t ldc) {
  for (int w : {4, 2}) {
    const auto aligned = [w](const void* p) {
      return reinterpret_cast<uintptr_t>(p) % (4u * static_cast<unsigned>(w)) == 0;
    };
    if (aligned(a) && aligned(b) && aligned(c) && lda % w == 0 && ldb % w == 0 && ldc % w == 0) {
      return w;
    }
  }
  return 1;
}

void validate_arguments(int op_a, int op_b, int64_t m, int64_t n, int64_t k, const float* alpha,
                        const void* a, int64_t lda, const void* b, int64_t ldb, const float* beta,
                        const void* c, int64_t ldc) {
  require_argument(op_a == 0 || op_a == 1, "op_a", "must be TUNED_OP_N or TUNED_OP_T");
  require_argument(op_b == 0 || op_b == 1, "op_b", "must be TUNED_OP_N or TUNED_OP_T");
  require_argument(m >= 0, "m", "must be >= 0 (got " + std::to_string(m) + ")");
  require_argument(n >= 0, "n", "must be >= 0 (got " + std::to_string(n) + ")");
  require_argument(k >= 0, "k", "must be >= 0 (got " + std::to_string(k) + ")");
  require_argument(alpha != nullptr, "alpha", "must not be NULL");
  require_argument(beta != nullptr, "beta", "must not be NULL");
  const int64_t rows_a = op_a ? k : m;
  const int64_t rows_b = op_b ? n : k;
  require_argument(lda >= std::max<int64_t>(1, rows_a), "lda",
                   "must be >= max(1, " + std::string(op_a ? "k" : "m") + ") = " +
                       std::to_string(std::max<int64_t>(1, rows_a)) + " (got " +
                       std::to_string(lda) + ")");
  require_argument(ldb >= std::max<int64_t>(1, rows_b), "ldb",
                   "must be >= max(1, " + std::string(op_b ? "n" : "k") + ") = " +
                       std::to_string(std::max<int64_t>(1, rows_b)) + " (got " +
                       std::to_string(ldb) + ")");
  require_argument(ldc >= std::max<int64_t>(1, m), "ldc",
                   "must be >= max(1, m) = " + std::to_string(std::max<int64_t>(1, m)) +
                       " (got " + std::to_string(ldc) + ")");
  if (m == 0 || n == 0) return;  // nothing is read or written
  require_argument(c != nullptr, "C", "must not be NULL when m and n are > 0");
  if (k > 0 && *alpha != 0.0f) {
    require_argument(a != nullptr, "A", "must not be NULL when m, n, k > 0 and alpha != 0");
    require_argument(b != nullptr, "B", "must not be NULL when m, n, k > 0 and alpha != 0");
  }
}

Space make_space(const DeviceInfo& device, const Problem& problem) {
  Space space;
  for (const auto& p : parameters()) space.add(p);
  const int64_t m_cap = std::max<int64_t>(16, pow2_at_least(problem.m));
  const int64_t n_cap = std::max<int64_t>(16, pow2_at_least(problem.n));
  const int64_t k_cap = std::max<int64_t>(8, pow2_at_least(problem.k));
  const int max_threads = std::min(1024, device.max_threads_per_block);
  const size_t smem_limit = device.smem_per_block_optin;
  const int alignment = problem.alignment;

  space.require({"bm_fits_m", {"BM"}, [=](const Config& c) { return c.get("BM") <= m_cap; }, true});
  space.require({"bn_fits_n", {"BN"}, [=](const Config& c) { return c.get("BN") <= n_cap; }, true});
  space.require({"bk_fits_k", {"BK"}, [=](const Config& c) { return c.get("BK") <= k_cap; }, true});
  space.require({"warp_tile_divides_block_tile", {"BM", "BN", "WM", "WN"}, [](const Config& c) {
                   return c.get("BM") % c.get("WM") == 0 && c.get("BN") % c.get("WN") == 0;
                 }});
  space.require({"threads_per_block", {"BM", "BN", "WM", "WN"}, [=](const Config& c) {
                   return threads_per_block(c) <= max_threads;
                 }});
  // A lane holds WM*WN/32 accumulators; past 128 the kernel spills.
  space.require({"accumulators_per_thread", {"WM", "WN"}, [](const Config& c) {
                   return c.get("WM") * c.get("WN") <= 32 * 128;
                 }});
  space.require({"lane_grid_divides_warp_tile", {"WM", "WN", "TM", "TN", "LM"},
                 [](const Config& c) {
                   const int lm = c.get("LM"), ln = 32 / lm;
                   return 32 % lm == 0 && c.get("WM") % (lm * c.get("TM")) == 0 &&
                          c.get("WN") % (ln * c.get("TN")) == 0;
                 }});
  space.require({"vec_divides_tiles", {"BM", "BN", "BK", "VEC"}, [](const Config& c) {
                   const int v = c.get("VEC");
                   return c.get("BM") % v == 0 && c.get("BN") % v == 0 && c.get("BK") % v == 0;
                 }});
  space.require({"vec_fits_alignment", {"VEC"},
                 [=](const Config& c) { return c.get("VEC") <= alignment; }});
  space.require({"pad_keeps_rows_aligned", {"PAD"},
                 [](const Config& c) { return c.get("PAD") % 4 == 0; }});
  space.require({"shared_memory", {"BM", "BN", "BK", "PAD", "AKM", "PREFETCH"},
                 [=](const Config& c) { return shared_bytes(c) <= smem_limit; }});
  space.require({"unroll_divides_bk", {"BK", "UNROLL"},
                 [](const Config& c) { return c.get("BK") % c.get("UNROLL") == 0; }});
  return space;
}

Config default_config(const DeviceInfo& device, const Problem& problem) {
  // The classic 128x128x8 tile with 8x8 per thread (two strided 4x4 sub-tiles each way) for
  // problems that fill the GPU; smaller tiles where there would be too few blocks.
  const Config large = Config::parse(
      "BM=128,BN=128,BK=8,WM=64,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  const Config medium = Config::parse(
      "BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  const Config small = Config::parse(
      "BM=32,BN=32,BK=8,WM=16,WN=16,TM=2,TN=2,LM=8,VEC=4,PAD=4,AKM=1,UNROLL=8,PREFETCH=1");
  const double blocks_large = static_cast<double>((problem.m + 127) / 128) * ((problem.n + 127) / 128);
  const double blocks_medium = static_cast<double>((problem.m + 63) / 64) * ((problem.n + 63) / 64);
  const int sms = std::max(1, device.sm_count);
  const Config& pick = blocks_large >= sms ? large : blocks_medium >= sms ? medium : small;
  return fit_config(pick, device, problem);
}

Config fit_config(const Config& config, const DeviceInfo& device, const Problem& problem) {
  Config fitted = config;
  if (fitted.has("VEC")) {
    // Any narrower vector is valid wherever a wider one was: only alignment decides.
    fitted.set("VEC", std::min(fitted.get("VEC"), problem.alignment));
  }
  const Space space = make_space(device, problem);
  if (auto broken = space.violation(fitted, /*include_pruning=*/false)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "gemm config " + config.canonical() + " breaks constraint " + *broken);
  }
  return fitted;
}

std::string kernel_name(const Config& config, const Problem& problem) {
  std::string name = "gemm_" + std::string(problem.trans_a ? "t" : "n") +
                     (problem.trans_b ? "t" : "n");
  for (size_t i = 0; i < config.size(); ++i) {
    std::string param = config.name(i);
    std::transform(param.begin(), param.end(), param.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    name += "_" + param + std::to_string(config.value(i));
  }
  return name;
}

KernelSpec kernel_spec(const Config& config, const Problem& problem) {
  const TemplateSource& src = template_source("gemm.cu");
  KernelSpec spec;
  spec.source_name = src.name;
  spec.source = src.text;
  spec.source_hash = src.hash;
  spec.kernel_name = kernel_name(config, problem);
  spec.options = {"-DKERNEL_NAME=" + spec.kernel_name,
                  "-DTRANS_A=" + std::to_string(problem.trans_a ? 1 : 0),
                  "-DTRANS_B=" + std::to_string(problem.trans_b ? 1 : 0)};
  for (const auto& d : config.defines()) spec.options.push_back(d);
  spec.dynamic_smem_bytes = shared_bytes(config);
  return spec;
}

size_t shared_bytes(const Config& c) {
  const size_t bm = c.get("BM"), bn = c.get("BN"), bk = c.get("BK"), pad = c.get("PAD");
  const size_t stages = c.get("PREFETCH") ? 2 : 1;
  const size_t a = c.get("AKM") ? bk * (bm + pad) : bm * (bk + pad);
  const size_t b = bk * (bn + pad);
  return stages * (a + b) * sizeof(float);
}

int threads_per_block(const Config& c) {
  return 32 * (c.get("BM") / c.get("WM")) * (c.get("BN") / c.get("WN"));
}

LaunchGeometry geometry(const Config& config, const Problem& problem) {
  const int64_t bm = config.get("BM"), bn = config.get("BN");
  const int64_t grid_m = (problem.m + bm - 1) / bm;
  const int64_t grid_n = (problem.n + bn - 1) / bn;
  if (grid_m > INT_MAX || grid_n > 65535) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "n = " + std::to_string(problem.n) + " needs " + std::to_string(grid_n) +
                    " block columns with BN = " + std::to_string(bn) + "; at most 65535 fit a grid");
  }
  LaunchGeometry g;
  g.grid = dim3(static_cast<unsigned>(grid_m), static_cast<unsigned>(grid_n));
  g.block = dim3(static_cast<unsigned>(threads_per_block(config)));
  g.dynamic_smem_bytes = shared_bytes(config);
  return g;
}

cache::ProblemKey problem_key(const DeviceInfo& device, const Problem& problem) {
  cache::ProblemKey key;
  key.device_uuid = device.uuid;
  key.op = "gemm";
  key.layout = problem.layout();
  key.shape = {problem.m, problem.n, problem.k};
  key.alignment = problem.alignment;
  return key;
}

void launch(const LoadedKernel& kernel, const Config& config, const Problem& problem, float alpha,
            const float* a, const float* b, float beta, float* c, cudaStream_t stream) {
  int m = static_cast<int>(problem.m), n = static_cast<int>(problem.n),
      k = static_cast<int>(problem.k);
  int lda = static_cast<int>(problem.lda), ldb = static_cast<int>(problem.ldb),
      ldc = static_cast<int>(problem.ldc);
  void* args[] = {&m, &n, &k, &alpha, &a, &lda, &b, &ldb, &beta, &c, &ldc};
  kernel.launch(geometry(config, problem), args, stream);
}

}  // namespace tuned::gemm_op
