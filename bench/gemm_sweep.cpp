// gemm_sweep: the measurements the GEMM selection model is fitted on. Times every candidate config
// (each fitted to the problem: VEC lowered to its alignment) and cuBLAS FP32 on a list of problems
// (seeded random shapes of the same law as bench/gemm_random, never the held-out ones, plus a
// grid of squares, skinny, tall and large-k shapes in all four layouts, plus the layers of public
// networks that no benchmark measures), checks each candidate's result against cuBLAS and its
// error against an FP64 product (the accuracy contract), and writes one TSV row per (problem,
// candidate):
//   layout m n k alignment config registers occupancy ms cublas_ms rel_error exact_error
//   cublas_exact_error within_contract
// (--attention: strided batches of attention's products instead, the batch after k, their
// batched kernels timed and their first and last products checked.)
// Rows are flushed per problem, so a run cut short keeps what it measured.
//   gemm_sweep --seeds 1-25 [--min-gflop X] [--grid] [--networks] [--vocab-networks]
//              [--layer-grid [--layer-ffn] [--layer-tokens T...]] [--hard-families] [--skinny]
//              [--unaligned] [--attention]
//              [--gemv] [--long] [--long-sums] [--portfolio] [--candidates FILE]
//              [--candidates-from-db DB [--top N]]
//              [--cubin-db DB] [--max-gflop X] [--out FILE [--resume]] [--max-seconds S]
//              [--print-shapes]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <thread>

#include "api/transpose_api.hpp"
#include "bench/bench_util.hpp"
#include "bench/held_out.hpp"
#include "cache/cubin_store.hpp"
#include "cache/database.hpp"
#include "cache/selection_model.hpp"
#include "core/cuda_check.hpp"
#include "generator/device.hpp"
#include "templates/extent.hpp"
#include "templates/gemm/gemm_op.hpp"
#include "templates/gemm/gemm_reference.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/error.hpp"
#include "tuner/compile_pool.hpp"

namespace tuned::cache {
std::string_view shipped_gemm_table();  // cache/shipped/*.tsv, built into the library
}

namespace {

using namespace tuned;
using namespace tuned::bench;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxWorkspace = size_t{1} << 30;

// A block tile with a lane layout the template accepts: per-thread accumulators near the target.
std::optional<Config> tile_config(const DeviceInfo& device, int bm, int bn, int bk, int splitk,
                                  int pipe) {
  // Validity rules only: the pruning rules of any one problem would hide split-K or small tiles.
  const Space full = gemm_op::make_space(device, gemm_op::packed_problem("NN", 4096, 4096, 4096));
  Space space;
  for (const auto& p : full.params()) space.add(p);
  for (const auto& c : full.constraints()) {
    if (!c.prune_only) space.require(c);
  }
  space.restrict({{"BM", {bm}}, {"BN", {bn}}, {"BK", {bk}}, {"SPLITK", {splitk}}, {"PIPE", {pipe}},
                  {"VEC", {4}}, {"PAD", {4}}, {"AKM", {1}}, {"BKM", {1}}, {"UNROLL", {8}},
                  {"SWZ", {0}}, {"MINB", {1}}, {"PRETB", {0}}});
  const int target = std::clamp(bm * bn / 128, 4, 64);  // accumulators per thread
  std::optional<Config> best;
  double best_score = 1e9;
  space.for_each([&](const Config& c) {
    if (space.violation(c, /*include_pruning=*/false)) return true;
    const int threads = gemm_op::threads_per_block(c);
    if (threads > 256) return true;
    const int acc = c.get("WM") * c.get("WN") / 32;
    const double score = std::abs(std::log2(static_cast<double>(acc) / target)) +
                         0.1 * std::abs(c.get("TM") - 4) + 0.1 * std::abs(c.get("TN") - 4);
    if (score < best_score) {
      best_score = score;
      best = c;
    }
    return true;
  });
  return best;
}

// Base configs: what the project shipped and seeds (tuned on the suite), and small tiles with and
// without split-K for the small and skinny problems most random shapes are.
std::vector<Config> base_candidates(const DeviceInfo& device) {
  std::vector<Config> out;
  std::set<std::string> seen;
  auto add = [&](const Config& c) {
    if (seen.insert(c.canonical()).second) out.push_back(c);
  };
  std::istringstream table{std::string(cache::shipped_gemm_table())};
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (f.size() == 11) add(read_config(f[8], gemm_op::parameters()));
  }
  for (auto [m, n, k] : {std::tuple{4096, 4096, 4096}, std::tuple{32, 4096, 4096},
                         std::tuple{127, 127, 127}, std::tuple{16, 16, 16384}}) {
    for (const auto& c : gemm_op::seed_configs(device, gemm_op::packed_problem("NN", m, n, k))) {
      add(c);
    }
  }
  for (int bm : {16, 32, 64, 128}) {
    for (int bn : {16, 32, 64, 128}) {
      for (int splitk : {1, 4, 8, 16, 32, 64}) {
        if (splitk > 16 && bm * bn > 64 * 64) continue;  // very long k only: small tiles
        if (auto c = tile_config(device, bm, bn, 16, splitk, 3)) add(*c);
      }
    }
  }
  return out;
}

std::vector<Shape> grid_shapes() {
  std::vector<Shape> out;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (int64_t s : {1, 7, 32, 100, 128, 255, 512, 1000, 2048, 3001, 4096}) {
      out.push_back({layout, s, s, s});
    }
    for (int64_t small : {1, 16, 64, 200}) {
      for (int64_t big : {1024, 4096, 16384}) {
        if (small * big * big > (int64_t{1} << 36)) continue;
        out.push_back({layout, small, big, big});
        out.push_back({layout, big, small, big});
        out.push_back({layout, big, big, small});
        out.push_back({layout, small, small, big});
      }
    }
  }
  return out;
}

// Linear layers of mid-size models (hidden sizes 768 to 2048, by default 256 to 1536 tokens) as
// PyTorch calls cuBLAS, every pass: forward TN (out, tokens, in), input gradient NN (in, tokens,
// out), weight gradient NT (in, out, tokens). Products of 0.3-13 GFLOP where tiles, splits and
// waves decide and the random strata hold few aligned points. With ffn, their feed-forward
// layers instead: up (hidden to 3072-8192) and down (back), products of 1-50 GFLOP whose k or m
// is 2-5 times the other dimensions.
const std::vector<int64_t> kLayerTokens = {256, 384, 512, 640, 768, 1024, 1536};
std::vector<Shape> layer_grid_shapes(const std::vector<int64_t>& token_counts, bool ffn) {
  const std::vector<int64_t> hidden = {768, 1024, 1280, 1536, 2048};
  std::vector<std::pair<int64_t, int64_t>> layers;  // (in, out)
  for (int64_t in : hidden) {
    if (ffn) {
      for (int64_t wide : {3072, 4096, 5120, 8192}) {
        layers.push_back({in, wide});
        layers.push_back({wide, in});
      }
    } else {
      for (int64_t outs : hidden) layers.push_back({in, outs});
    }
  }
  std::vector<Shape> out;
  for (int64_t tokens : token_counts) {
    for (const auto& [in, outs] : layers) {
      out.push_back({"TN", outs, tokens, in});
      out.push_back({"NN", in, tokens, outs});
      out.push_back({"NT", in, outs, tokens});
    }
  }
  return out;
}

// Products with one very long dimension under small others, as convolutions' im2col GEMMs make
// them (channels x taps of 8-300 against batch x pixels of 10^5-10^6): weight gradients (k long,
// every layout, NT as PyTorch calls it most), and first layers' forward and input-gradient
// products (n long to 1.2M, k of 32-200). A grid between the networks' sizes, each operand at most
// 2^28 floats; held-out shapes are left out as everywhere. Ordered so that a run cut short still
// covers each family.
std::vector<Shape> long_shapes() {
  std::vector<Shape> k_long, n_long;
  for (int64_t k : {400000, 1500000}) {
    for (int64_t m : {8, 19, 36, 75, 147}) {
      for (int64_t n : {16, 48, 96, 200}) {
        if (std::max(m, n) * k <= (int64_t{1} << 28)) k_long.push_back({"NT", m, n, k});
      }
    }
  }
  for (const char* layout : {"NN", "TN", "TT"}) {
    for (int64_t m : {19, 75}) {
      for (int64_t n : {48, 200}) k_long.push_back({layout, m, n, 800000});
    }
  }
  for (const char* layout : {"NN", "TN"}) {
    for (int64_t m : {8, 24, 48, 96}) {
      for (int64_t n : {400000, 1200000}) {
        for (int64_t k : {32, 96, 200}) n_long.push_back({layout, m, n, k});
      }
    }
    // Odd channel counts (3 x 3 taps of 1-5 channels): C, and A or B, unaligned.
    for (int64_t m : {9, 45}) {
      for (int64_t k : {27, 64, 147}) n_long.push_back({layout, m, 700000, k});
    }
    for (int64_t m : {21, 33}) {
      for (int64_t k : {32, 64, 128}) n_long.push_back({layout, m, 500000, k});
    }
  }
  std::vector<Shape> out;
  for (size_t i = 0; i < std::max(k_long.size(), n_long.size()); ++i) {
    if (i < k_long.size()) out.push_back(k_long[i]);
    if (i < n_long.size()) out.push_back(n_long[i]);
  }
  return out;
}

// Fisher-Yates with a fixed 64-bit LCG: the same order on every run.
void shuffle(std::vector<Shape>& shapes) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = shapes.size(); i > 1; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(shapes[i - 1], shapes[(state >> 33) % i]);
  }
}

// Long sums under a moderate output, as the gradients of vocabulary projections (k = the
// vocabulary) and convolutions' weight gradients (k = batch x pixels) make them: a log grid of
// m, n and k between the fitting networks' sizes, every layout, odd k and m of two-float rows
// among them (most such products are unaligned somewhere), each operand at most 2^28 floats and
// 200 GFLOP at most. Shuffled by a fixed permutation, so that a run cut short still covers the
// grid.
std::vector<Shape> long_sum_shapes() {
  std::vector<Shape> out;
  for (int64_t k : {20000, 45001, 100000, 220001, 480000}) {
    for (int64_t m : {200, 450, 1000, 2000}) {
      for (int64_t n : {64, 150, 400, 1000}) {
        if (std::max(m, n) * k > (int64_t{1} << 28) || 2.0 * m * n * k > 200e9) continue;
        for (const char* layout : {"NN", "NT", "TN", "TT"}) out.push_back({layout, m, n, k});
      }
    }
  }
  shuffle(out);
  return out;
}

// Attention's batched products (batch x heads products of one layer), as PyTorch's row-major
// tensors reach cuBLAS's column-major terms: the scores (q k^T, and dp = do v^T backwards) are
// TN products of t x t x d, the outputs (p v; p^T do backwards) NN and NT products of d x t x t;
// each form in the other two of those layouts as well (keys stored transposed, a view made
// contiguous), and the NN and TN products of t x d x t that tuned.torch_op computes instead of
// the NT and NN ones of d x t x t (its small operand and output turned over). A grid of sequence
// lengths t, head dims d and batch x heads b between the sizes
// that benchmarks use (no t of a power of two above 64 but 3072), each operand at most 2^30
// floats and 300 GFLOP a batch at most; shuffled by a fixed permutation, so that a run cut short
// still covers the grid.
std::vector<Shape> attention_shapes() {
  std::vector<Shape> out;
  for (int64_t t : {96, 192, 384, 768, 1536, 3072}) {
    for (int64_t b : {384, 96, 24}) {
      for (int64_t d : {32, 64, 96, 128}) {
        if (b * t * t > (int64_t{1} << 30) || 2.0 * b * t * t * d > 300e9) continue;
        for (const char* layout : {"TN", "NN", "NT"}) out.push_back({layout, t, t, d, b});
        for (const char* layout : {"NN", "NT", "TN"}) out.push_back({layout, d, t, t, b});
        // the outputs turned over (tuned.torch_op: p^T do as NN, p v as TN, of t x d x t)
        for (const char* layout : {"NN", "TN"}) out.push_back({layout, t, d, t, b});
      }
    }
  }
  shuffle(out);
  return out;
}

// Configs for long products: flat tiles for a long n, and for long k under a small output small
// tiles with 32-256 splits of k, FFMA (k in partial chains: a split is thousands long) and both
// tensor-core families, each way of summing the splits.
std::vector<Config> long_candidates(const DeviceInfo& device) {
  std::vector<Config> out;
  for (int bm : {16, 32, 64}) {
    for (int bn : {32, 64}) {
      for (int splitk : {64, 128, 256}) {
        if (auto c = tile_config(device, bm, bn, 16, splitk, 3)) {
          c->set("KSUM", 1);
          c->set("REDUCE", 1);
          out.push_back(*c);
        }
      }
    }
  }
  // A long n (or m) under a short m (or n) of 8-48 and short k: flat tiles, no splits (a 64-row
  // tile computes 8 rows for one useful).
  for (int bm : {16, 32}) {
    for (int bn : {128, 256}) {
      if (auto c = tile_config(device, bm, bn, 16, 1, 3)) out.push_back(*c);
    }
  }
  // Tensor-core tiles (MMA = 1 sums in double; MMA = 2 in float, k in partial chains).
  auto mma_tile = [&](const char* tile, int splitk, int pack, int reduce, int mma) {
    out.push_back(Config::parse(
        std::string("GEMV=0,") + tile +
        ",TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=1,UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=" +
        std::to_string(splitk) + ",PACK=" + std::to_string(pack) +
        ",REDUCE=" + std::to_string(reduce) + ",TAIL=0,MMA=" + std::to_string(mma) +
        ",CSTAGE=0,KSUM=" + std::to_string(mma == 2 ? 1 : 0) + ",GCOLS=1"));
  };
  for (const char* tile : {"BM=16,BN=128,BK=32,WM=16,WN=32", "BM=32,BN=128,BK=32,WM=32,WN=32"}) {
    for (int mma : {1, 2}) {
      for (int pack : {0, 1}) mma_tile(tile, 1, pack, 0, mma);  // packed: VEC 4 kept
    }
  }
  for (const char* tile : {"BM=32,BN=64,BK=32,WM=16,WN=32", "BM=64,BN=64,BK=32,WM=32,WN=32"}) {
    for (int splitk : {32, 64, 128, 256}) {
      mma_tile(tile, splitk, 0, 0, 1);
      mma_tile(tile, splitk, 0, 1, 1);
      mma_tile(tile, splitk, 0, 1, 2);
    }
  }
  return out;
}

struct Candidate {
  Config config;
  std::string layout;
  // Per width of C's stores (C_VEC: the config's VEC, or less where packing lets VEC exceed the
  // problem's alignment): one kernel each.
  std::map<int, std::shared_ptr<const LoadedKernel>> kernels;
  int registers = 0;
  int occupancy = 0;
};

// Per-call ms: a warm-up (unless the caller just ran it: warmed), a probe, then the median of 3
// batches of back-to-back calls (as a user calling in a loop sees them); a call of 2 ms or more is
// its own batch, and the probe counts as the first of them (large products are what a sweep spends
// its time on). Returns the probe alone when it is over give_up_ms.
double time_calls(const std::function<void(cudaStream_t)>& call, cudaStream_t stream,
                  double give_up_ms, bool warmed = false) {
  Event start = Event::create(), stop = Event::create();
  auto batch = [&](int reps) {
    start.record(stream);
    for (int r = 0; r < reps; ++r) call(stream);
    stop.record(stream);
    return stop.elapsed_since(start) / reps;
  };
  if (!warmed) call(stream);
  const double probe = batch(1);
  if (give_up_ms > 0 && probe > give_up_ms) return probe;
  std::vector<double> t;
  if (probe >= 2.0) {
    t = {probe, batch(1), batch(1)};
  } else {
    const int reps =
        std::clamp(static_cast<int>(std::ceil(0.25 / std::max(probe, 1e-4))), 1, 100);
    t = {batch(reps), batch(reps), batch(reps)};
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      seeds.push_back(std::stoull(item));
    } else {
      for (uint64_t s = std::stoull(item.substr(0, dash)); s <= std::stoull(item.substr(dash + 1));
           ++s) {
        seeds.push_back(s);
      }
    }
  }
  return seeds;
}

// The families where the first sweeps left tuned_gemm furthest behind cuBLAS (portfolio picks
// below 0.75x): skinny products with a long k, and small k under a large output.
bool in_hard_family(const Shape& s) {
  return (std::min(s.m, s.n) <= 256 && s.k >= 2000) || (s.k <= 128 && s.m * s.n >= (1 << 20));
}

// Where the matrix-vector kernel runs: m or n up to its most columns (16).
bool is_vector_shape(const Shape& s) { return std::min(s.m, s.n) <= gemm_op::kGemvMaxCols; }

// Skinny products big enough to matter (the model's worst picks sit there): min(m, n) <= 256
// with m*n*k >= 2^27.
bool is_skinny(const Shape& s) {
  return std::min(s.m, s.n) <= 256 && s.m * s.n * s.k >= (int64_t{1} << 27);
}

// The built-in selection model's portfolio of this GPU model, per layout: timing it on more shapes
// adds points to the model without changing the portfolio.
std::map<std::string, std::vector<Config>> shipped_portfolio(const DeviceInfo& device) {
  std::map<std::string, std::vector<Config>> out;
  for (const auto& e : cache::SelectionModel::builtin().entries()) {
    if (e.op == "gemm" && e.device_name == device.name) {
      // (An entry recorded before a parameter existed means its old value: completed, or the
      // space would refuse it as incomplete.)
      out[e.variant].push_back(read_config(e.config, gemm_op::parameters()));
    }
  }
  if (out.empty()) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "--portfolio: the library has no selection model for " + device.name);
  }
  return out;
}

// The matrix-vector kernel's configs (m or n up to 16): columns, rows per block and splits of k,
// VEC 4 (the narrower variants follow as for every base). A problem runs those of its class of
// columns only (rule gemv_gcols_holds_the_vectors).
std::vector<Config> gemv_candidates() {
  std::vector<Config> out;
  for (int cols : {1, 2, 4, 8, 16}) {
    for (int rows : {8, 16, 32, 64, 128, 256}) {
      if (rows == 8 && cols > 1) continue;  // one warp's VEC 1 rows: only ever picked for n = 1
      for (int splits : {1, 2, 4, 8, 16, 32, 64}) {
        out.push_back(gemm_op::gemv_config(rows, rows % 32 == 0 ? 4 : rows / 8, splits, cols));
      }
    }
  }
  return out;
}

// Base configs from a file, one per line ('#' comments); a line "LAYOUT<TAB>config" is for that
// layout only.
std::map<std::string, std::vector<Config>> candidates_from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--candidates: cannot read " + path);
  std::map<std::string, std::vector<Config>> out;
  // A config written before a parameter existed means its old value (as the tables' entries do);
  // the space would refuse it whole, and the sweep skip it, for lacking one.
  auto parse = [](const std::string& text) { return read_config(text, gemm_op::parameters()); };
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      for (const char* layout : {"NN", "NT", "TN", "TT"}) out[layout].push_back(parse(line));
    } else {
      out[line.substr(0, tab)].push_back(parse(line.substr(tab + 1)));
    }
  }
  return out;
}

// The fastest configs autotune measured (ok trials of a tuning database) per problem of this GPU
// model: top of each (layout, shape, alignment), for every layout (a config found on one layout
// is tried on the others with its operands as stored there).
std::vector<Config> candidates_from_database(const std::string& path, const DeviceInfo& device,
                                             int top) {
  cache::Database db(path, cache::Access::kRead);
  std::set<std::string> uuids;
  for (const auto& d : db.devices()) {
    if (d.name == device.name) uuids.insert(d.uuid);
  }
  std::map<std::string, std::vector<std::pair<double, std::string>>> by_problem;
  db.for_each_trial({}, [&](const cache::TrialRecord& t) {
    if (t.key.op != "gemm" || t.disposition != cache::Disposition::kOk || !(t.ms_median > 0) ||
        !uuids.count(t.key.device_uuid)) {
      return;
    }
    by_problem[t.key.variant + " " + t.key.shape_string() + " " + std::to_string(t.key.alignment)]
        .emplace_back(t.ms_median, t.config);
  });
  std::vector<Config> out;
  std::set<std::string> seen;
  for (auto& [problem, trials] : by_problem) {
    std::sort(trials.begin(), trials.end());
    int taken = 0;
    for (const auto& [ms, config] : trials) {
      if (taken == top) break;
      if (seen.insert(config).second) {
        out.push_back(read_config(config, gemm_op::parameters()));
        ++taken;
      }
    }
  }
  std::fprintf(stderr, "gemm_sweep: %zu configs from %zu problems of %s\n", out.size(),
               by_problem.size(), path.c_str());
  return out;
}

struct Selection {
  bool grid = false, hard_families = false, skinny = false, gemv = false, portfolio = false,
       networks = false, more_networks = false, decode_networks = false, long_products = false,
       long_sums = false, layer_grid = false, layer_ffn = false, vocab_networks = false,
       only_candidates = false, unaligned_only = false, attention = false;
  double min_gflop = 0, max_gflop = 0;  // random draws of at least; any problem of at most (0: any)
  int64_t max_n = 0;                    // problems with n up to this only (0: any)
  int64_t min_k = 0, max_k = 0;         // problems with k in [min_k, max_k] only (max 0: any)
  std::vector<int64_t> layer_tokens = kLayerTokens;
  std::string candidates_path, candidates_db, cubin_db;
  int top = 4;
};

// Every problem the selection asks for, the held-out ones left out, in the order they are swept.
std::vector<Shape> sweep_shapes(const std::string& seeds_text, const Selection& sel) {
  std::vector<Shape> shapes;
  std::set<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> seen;
  auto add = [&](const Shape& s) {
    if (sel.max_gflop > 0 && s.gflop() > sel.max_gflop) return;
    if (sel.max_n > 0 && s.n > sel.max_n) return;
    if (s.k < sel.min_k || (sel.max_k > 0 && s.k > sel.max_k)) return;
    if (sel.gemv && !is_vector_shape(s)) return;
    if (sel.unaligned_only && gemm_op::packed_problem(s.layout, s.m, s.n, s.k).alignment == 4) {
      return;
    }
    if (s.batch == 1 && is_held_out_shape(s.layout, s.m, s.n, s.k)) return;
    if (seen.emplace(s.layout, s.m, s.n, s.k, s.batch).second) shapes.push_back(s);
  };
  // The grid first: a run cut short by --max-seconds still covers every region.
  if (sel.grid) {
    for (const auto& s : grid_shapes()) add(s);
  }
  if (sel.networks) {
    for (const auto& g : fitting_gemms()) add(g.shape);
  }
  if (sel.more_networks) {
    for (const auto& g : fitting_gemms_more()) add(g.shape);
  }
  if (sel.decode_networks) {
    for (const auto& g : fitting_gemms_decode()) add(g.shape);
  }
  if (sel.vocab_networks) {
    for (const auto& g : fitting_gemms_vocab()) add(g.shape);
  }
  if (sel.long_products) {
    for (const auto& s : long_shapes()) add(s);
  }
  if (sel.long_sums) {
    for (const auto& s : long_sum_shapes()) add(s);
  }
  if (sel.layer_grid) {
    for (const auto& s : layer_grid_shapes(sel.layer_tokens, sel.layer_ffn)) add(s);
  }
  if (sel.attention) {
    for (const auto& s : attention_shapes()) add(s);
  }
  for (uint64_t seed : parse_seeds(seeds_text)) {
    for (const auto& s : random_shapes(seed, kShapesPerSeed, sel.min_gflop)) {
      if (sel.hard_families && !in_hard_family(s)) continue;
      if (sel.skinny && !is_skinny(s)) continue;
      add(s);
    }
  }
  return shapes;
}

constexpr size_t kMaxElements = size_t{1} << 28;  // 16384^2 floats per operand
constexpr size_t kMaxBatchElements = size_t{1} << 30;  // a batch's operand (attention_shapes)
constexpr const char* kLayouts[] = {"NN", "NT", "TN", "TT"};

// Bases per layout: the shipped portfolio (--portfolio), configs from a file and from a tuning
// database; else the built-in base list (or the matrix-vector configs). Those with SPLITK below
// min_split are left out; base_count counts the rest over all layouts.
std::map<std::string, std::vector<Config>> swept_bases(const Selection& sel,
                                                       const DeviceInfo& device, int min_split,
                                                       size_t& base_count) {
  std::map<std::string, std::vector<Config>> bases_by_layout;
  auto add_to_every_layout = [&](const std::vector<Config>& bases) {
    for (const char* layout : kLayouts) {
      auto& to = bases_by_layout[layout];
      to.insert(to.end(), bases.begin(), bases.end());
    }
  };
  if (sel.portfolio) bases_by_layout = shipped_portfolio(device);
  if (!sel.candidates_path.empty()) {
    for (auto& [layout, list] : candidates_from_file(sel.candidates_path)) {
      auto& to = bases_by_layout[layout];
      to.insert(to.end(), list.begin(), list.end());
    }
  }
  if (!sel.candidates_db.empty()) {
    add_to_every_layout(candidates_from_database(sel.candidates_db, device, sel.top));
  }
  if (bases_by_layout.empty()) {
    const auto bases = sel.gemv ? gemv_candidates() : base_candidates(device);
    for (const char* layout : kLayouts) bases_by_layout[layout] = bases;
  }
  if (sel.long_products && !sel.only_candidates) add_to_every_layout(long_candidates(device));
  base_count = 0;
  for (auto& [layout, bases] : bases_by_layout) {
    std::erase_if(bases, [&](const Config& c) { return c.get("SPLITK") < min_split; });
    base_count += bases.size();
  }
  return bases_by_layout;
}

using Candidates = std::map<std::string, Candidate>;  // layout|canonical
// kernel name -> the candidates (key, C_VEC) a compile job serves
using JobKeys = std::map<std::string, std::vector<std::pair<std::string, int>>>;

// The compile jobs of one candidate: a packed config (a TMA-fed one packs there:
// packed_where_unaligned; and the matrix-vector kernel, which checks its operands at launch) keeps
// its VEC on problems of narrower alignment, where C is stored C_VEC = alignment wide: a kernel
// for each. Returns how many it submitted.
size_t submit_alignments(const Config& c, const gemm_op::Problem& p, int vec,
                         const std::string& key, CompilePool& pool, JobKeys& job_keys,
                         bool aligned_only) {
  size_t submitted = 0;
  for (int alignment : {4, 2, 1}) {
    if (aligned_only && alignment < 4) continue;
    auto aligned = p;
    aligned.alignment = alignment;
    const bool keeps_vec =
        gemm_op::packed_where_unaligned(c, aligned).get("PACK") == 1 || c.get("GEMV") > 0;
    if (alignment > vec || (alignment < vec && !keeps_vec)) continue;
    CompileJob job;
    job.config = c;
    job.spec = gemm_op::kernel_spec(c, aligned);
    job_keys[job.spec.kernel_name].emplace_back(key, alignment);
    pool.submit(std::move(job));
    ++submitted;
  }
  return submitted;
}

// Every VEC variant of every base in every layout swept: compiled up front on all cores, in the
// batched form where the sweep is of batches (the kernels the library runs there), and only the
// bases' own widths where every problem is aligned (nothing else is timed there). Returns how
// many kernels it submitted.
size_t submit_candidates(const std::vector<Shape>& shapes,
                         std::map<std::string, std::vector<Config>>& bases_by_layout,
                         const DeviceInfo& device, CompilePool& pool, Candidates& by_key,
                         JobKeys& job_keys) {
  size_t submitted = 0;
  std::map<std::string, std::vector<Space>> spaces;  // per layout: of its problems' kinds
  bool aligned_only = true;
  const int64_t batch = shapes.empty() ? 1 : shapes.front().batch;
  for (const Shape& s : shapes) {
    aligned_only = aligned_only && gemm_op::packed_problem(s.layout, s.m, s.n, s.k).alignment == 4;
    if (batch > 1 && spaces[s.layout].size() < 64) {
      // A batch's rules depend on its shape (a short k admits single FFMA chains): a config
      // valid on any of the first problems of its layout is compiled.
      spaces[s.layout].push_back(
          gemm_op::make_space(device, gemm_op::packed_problem(s.layout, s.m, s.n, s.k, s.batch)));
    }
    spaces.try_emplace(s.layout);
  }
  for (auto& [layout, layout_spaces] : spaces) {
    for (const auto& base : bases_by_layout[layout]) {
      for (int vec : {4, 2, 1}) {
        if (vec > base.get("VEC") || (aligned_only && vec < base.get("VEC"))) continue;
        // (A matrix-vector config is valid only where m or n is as few as its columns.)
        const auto p = gemm_op::packed_problem(
            layout, 1024, base.get("GEMV") > 0 ? base.get("GCOLS") : 1024, 1024, batch > 1 ? 2 : 1);
        Config c = gemm_op::with_operands_as_stored(base, p);
        c.set("VEC", vec);
        const auto valid = [&](const Space& space) { return !space.violation(c, false); };
        if (layout_spaces.empty() ? !valid(gemm_op::make_space(device, p))
                                  : std::none_of(layout_spaces.begin(), layout_spaces.end(), valid)) {
          continue;
        }
        const std::string key = layout + "|" + c.canonical();
        if (!by_key.emplace(key, Candidate{c, layout}).second) continue;
        submitted += submit_alignments(c, p, vec, key, pool, job_keys, aligned_only);
      }
    }
  }
  return submitted;
}

// Waits for every job and loads its kernel into the candidates it serves (a job that failed, or
// whose kernel spills, serves none).
void load_compiled(CompilePool& pool, JobKeys& job_keys, Candidates& by_key) {
  while (pool.in_flight() > 0) {
    CompileJob job = pool.wait();
    if (!job.built || job.built->cubin.spill_bytes > 0 || job.built->cubin.stack_bytes > 0) {
      continue;
    }
    auto& served = job_keys.at(job.spec.kernel_name);
    const auto [key, c_vec] = served.back();  // jobs of one name are alike: each takes one
    served.pop_back();
    auto& cand = by_key.at(key);
    try {
      cand.kernels[c_vec] = KernelCache::load(*job.built, job.spec);
      cand.registers = job.built->cubin.registers;
      const auto g =
          gemm_op::geometry(cand.config, gemm_op::packed_problem(cand.layout, 64, 1, 64));
      cand.occupancy = cand.kernels[c_vec]->max_active_blocks_per_sm(
          static_cast<int>(g.block.x), g.dynamic_smem_bytes);
    } catch (const Error& e) {
      std::fprintf(stderr, "skip %s: %s\n", job.spec.kernel_name.c_str(), e.what());
    }
  }
}

// What timing every problem shares: operands as large as any problem swept (A and B random in
// [-1, 1]), C, cuBLAS's C and a split-K workspace, the check against cuBLAS, a cuBLAS handle on
// one stream and the FP64 sample of the accuracy contract.
struct TimingBench {
  // elements: floats per operand buffer (kMaxElements, or a batch sweep's kMaxBatchElements).
  TimingBench(KernelCache& kernels, const DeviceInfo& device, size_t elements);

  size_t elements;
  DeviceBuffer a, b, c, c_ref, workspace;
  DeviceCheck check;
  Stream stream;
  // Made once the operands are filled: the handle on the stream, then the sample.
  std::optional<gemm_op::CublasHandle> cublas;
  std::optional<gemm_op::Fp64Sample> exact;
};

TimingBench::TimingBench(KernelCache& kernels, const DeviceInfo& device, size_t elements)
    : elements(elements),
      a(elements * 4),
      b(elements * 4),
      c(elements * 4),
      c_ref(elements * 4),
      workspace(kMaxWorkspace),
      check(kernels, device),
      stream(Stream::create()) {
  check.fill_uniform(a.as<float>(), elements, 1, -1.0f, 1.0f, stream.get());
  check.fill_uniform(b.as<float>(), elements, 2, -1.0f, 1.0f, stream.get());
  cublas.emplace();
  cublas->set_stream(stream.get());
  exact.emplace(kernels, device);
}

// The kernel a candidate is timed with on problem p as config (the candidate as the library
// serves it there), or null where the sweep leaves the problem to another candidate or config
// does not run there.
const LoadedKernel* kernel_to_time(const Candidate& cand, const Config& config,
                                   const gemm_op::Problem& p, const Space& space,
                                   const Candidates& by_key) {
  // A TMA-fed base runs packed here if the problem is unaligned, as the library serves it (the
  // row names it so); not where its packed twin is a base of its own.
  if (!(config == cand.config) && by_key.count(cand.layout + "|" + config.canonical()) > 0) {
    return nullptr;
  }
  const auto kernel = cand.kernels.find(std::min(config.get("VEC"), p.alignment));
  if (kernel == cand.kernels.end()) return nullptr;
  if (config.get("VEC") != std::min(p.alignment, 4) && config.get("VEC") != p.alignment) {
    // Only the variant fit_config makes of each base: VEC = min(base VEC, alignment).
    Config wider = config;
    bool is_fitted_variant = false;
    for (int v : {4, 2}) {
      if (v <= config.get("VEC") || v > p.alignment) continue;
      wider.set("VEC", v);
      is_fitted_variant = by_key.count(cand.layout + "|" + wider.canonical()) > 0;
      if (is_fitted_variant) break;
    }
    if (is_fitted_variant) return nullptr;
  }
  if (space.violation(config, false)) return nullptr;
  if (gemm_op::workspace_bytes(config, p) > kMaxWorkspace) return nullptr;
  return kernel->second.get();
}

struct CandidateResult {
  double rel_error = 0;    // against cuBLAS (1 where C is left unwritten or not finite)
  double exact_error = 0;  // against the FP64 sample
  double ms = 0;
};

// One candidate on problem p: C poisoned, one checked call (against cuBLAS's C in c_ref and the
// FP64 sample computed for p), then timed (given up past give_up_ms, 0: never).
CandidateResult check_and_time(const LoadedKernel& kernel, const Config& config,
                               const gemm_op::Problem& p, TimingBench& bench, double give_up_ms) {
  auto call = [&](cudaStream_t st) {
    gemm_op::launch(kernel, config, p, 1.0f, bench.a.as<float>(), bench.b.as<float>(), 0.0f,
                    bench.c.as<float>(), bench.workspace.get(), st, api::transpose);
  };
  CandidateResult result;
  const int64_t c_elements = p.batch > 1 ? p.stride_c * p.batch : p.ldc * p.n;
  DeviceCheck::poison(bench.c.as<float>(), static_cast<size_t>(c_elements), bench.stream.get());
  call(bench.stream.get());
  // Against cuBLAS: the product, or a batch's first and last (the FP64 sample is of the first).
  const int64_t checked[] = {0, p.batch - 1};
  for (int64_t z : std::span(checked, p.batch > 1 ? 2 : 1)) {
    const MatrixCheck compared =
        bench.check.compare(bench.c.as<float>() + z * p.stride_c, p.ldc,
                            bench.c_ref.as<float>() + z * p.stride_c, p.ldc, p.m, p.n,
                            bench.stream.get());
    result.rel_error = std::max(
        result.rel_error, compared.unwritten || compared.nonfinite ? 1.0 : compared.rel_error);
  }
  result.exact_error = bench.exact->error(bench.c.as<float>(), p.ldc, bench.stream.get());
  // (The checked call above is the warm-up.)
  result.ms = time_calls(call, bench.stream.get(), give_up_ms, /*warmed=*/true);
  return result;
}

// The TSV rows of one problem: cuBLAS timed and its error against the FP64 sample, then every
// candidate of its layout that runs there checked and timed; rows counts them.
std::string measure_problem(const Shape& s, const gemm_op::Problem& p, const Candidates& by_key,
                            const DeviceInfo& device, TimingBench& bench, size_t& rows) {
  auto run_cublas = [&](cudaStream_t) {
    gemm_op::cublas_sgemm(bench.cublas->get(), p, 1.0f, bench.a.as<float>(), bench.b.as<float>(),
                          0.0f, bench.c_ref.as<float>());
  };
  const double cublas_ms = time_calls(run_cublas, bench.stream.get(), 0);
  // The accuracy contract's reference: an FP64 product at a sample of C, and cuBLAS's error.
  bench.exact->compute(p, bench.a.as<float>(), bench.b.as<float>(), bench.stream.get());
  const double cublas_exact =
      bench.exact->error(bench.c_ref.as<float>(), p.ldc, bench.stream.get());
  const Space space = gemm_op::make_space(device, p);
  double best = 0;
  std::ostringstream lines;
  for (const auto& [key, cand] : by_key) {
    if (cand.layout != s.layout) continue;
    const Config config = gemm_op::packed_where_unaligned(cand.config, p);
    const LoadedKernel* kernel = kernel_to_time(cand, config, p, space, by_key);
    if (kernel == nullptr) continue;
    const CandidateResult r = check_and_time(*kernel, config, p, bench, best > 0 ? 4 * best : 0);
    if (best == 0 || r.ms < best) best = r.ms;
    lines << s.layout << '\t' << s.m << '\t' << s.n << '\t' << s.k << '\t'
          << (p.batch > 1 ? std::to_string(p.batch) + '\t' : std::string()) << p.alignment << '\t'
          << config_text(config, gemm_op::parameters()) << '\t' << cand.registers << '\t'
          << cand.occupancy << '\t' << r.ms << '\t' << cublas_ms << '\t' << r.rel_error << '\t'
          << r.exact_error << '\t' << cublas_exact << '\t'
          << (gemm_op::within_contract(r.exact_error, cublas_exact) ? 1 : 0) << '\n';
    ++rows;
  }
  return lines.str();
}

using ProblemKey = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;

// --resume: the problems a cut-short run of the same command wrote are not measured again (a
// batch sweep's rows have the batch after k).
std::set<ProblemKey> measured_before(const std::string& out_path) {
  std::set<ProblemKey> measured;
  std::ifstream previous(out_path);
  bool batches = false;
  for (std::string line; std::getline(previous, line);) {
    if (line.rfind("layout\t", 0) == 0) batches = line.find("\tbatch\t") != std::string::npos;
    std::istringstream fields(line);
    std::string layout;
    int64_t m = 0, n = 0, k = 0, batch = 1;
    if (line.empty() || line[0] == '#' || !(fields >> layout >> m >> n >> k)) continue;
    if (batches && !(fields >> batch)) continue;
    measured.emplace(layout, m, n, k, batch);
  }
  return measured;
}

// The TSV, appended to where resuming a file that exists, else new with its header (a batch
// sweep's with the batch as a fourth dimension).
std::ofstream open_table(const std::string& out_path, bool resume, const DeviceInfo& device,
                         bool batches) {
  const bool append = resume && std::filesystem::exists(out_path);
  std::ofstream out(out_path, append ? std::ios::app : std::ios::trunc);
  if (!append) {
    out << "# gemm_sweep on " << device.name << " (" << device.arch() << ", " << device.sm_count
        << " SMs)\nlayout\tm\tn\tk\t" << (batches ? "batch\t" : "")
        << "alignment\tconfig\tregisters\toccupancy\tms\tcublas_ms\t"
           "rel_error\texact_error\tcublas_exact_error\twithin_contract\n";
  }
  return out;
}

// Whether an operand of problem p (the whole batch) holds more floats than buffers of elements.
bool exceeds_buffers(const gemm_op::Problem& p, size_t elements) {
  auto operand = [&](int64_t ld, int64_t cols, int64_t stride) {
    return p.batch > 1 ? static_cast<size_t>(stride * p.batch) : column_major_elements(ld, cols);
  };
  return operand(p.lda, p.trans_a ? p.m : p.k, p.stride_a) > elements ||
         operand(p.ldb, p.trans_b ? p.k : p.n, p.stride_b) > elements ||
         operand(p.ldc, p.n, p.stride_c) > elements;
}

double seconds_since(Clock::time_point started) {
  return std::chrono::duration<double>(Clock::now() - started).count();
}

// What a run measures and where it writes, and when it stops.
struct SweepPlan {
  const std::vector<Shape>& shapes;
  const Candidates& by_key;
  std::string out_path;
  bool resume = false;
  double max_seconds = 0;
  Clock::time_point started;
};

// Times the problems in order (those --resume finds measured left out) until max_seconds, each
// problem's rows written and flushed as one.
int measure_shapes(const SweepPlan& plan, KernelCache& kernels, const DeviceInfo& device) {
  const bool batches = !plan.shapes.empty() && plan.shapes.front().batch > 1;
  TimingBench bench(kernels, device, batches ? kMaxBatchElements : kMaxElements);
  const std::set<ProblemKey> measured =
      plan.resume ? measured_before(plan.out_path) : std::set<ProblemKey>{};
  std::ofstream out = open_table(plan.out_path, plan.resume, device, batches);
  size_t done = measured.size(), rows = 0;
  if (!measured.empty()) {
    std::fprintf(stderr, "gemm_sweep: resuming %s: %zu problems measured before\n",
                 plan.out_path.c_str(), measured.size());
  }
  for (const Shape& s : plan.shapes) {
    if (seconds_since(plan.started) > plan.max_seconds) break;
    if (measured.count({s.layout, s.m, s.n, s.k, s.batch})) continue;
    const auto p = gemm_op::packed_problem(s.layout, s.m, s.n, s.k, s.batch);
    if (exceeds_buffers(p, bench.elements)) {
      std::fprintf(stderr, "gemm_sweep: %s %s skipped: an operand over %zu floats\n",
                   s.layout.c_str(), s.text().c_str(), bench.elements);
      continue;
    }
    out << measure_problem(s, p, plan.by_key, device, bench, rows);
    out.flush();
    ++done;
    if (done % 50 == 0) {
      std::fprintf(stderr, "gemm_sweep: %zu/%zu shapes, %zu rows, %.0f s\n", done,
                   plan.shapes.size(), rows, seconds_since(plan.started));
    }
  }
  std::fprintf(stderr, "gemm_sweep: %zu/%zu shapes, %zu rows in %.0f s -> %s\n", done,
               plan.shapes.size(), rows, seconds_since(plan.started), plan.out_path.c_str());
  return 0;
}

int run(const std::string& seeds_text, const Selection& sel, const std::string& out_path,
        double max_seconds, int min_split, bool resume) {
  const auto started = Clock::now();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const std::vector<Shape> shapes = sweep_shapes(seeds_text, sel);
  // One kind of problem a sweep: the rows of batches have a column more, their kernels another form.
  if (std::any_of(shapes.begin(), shapes.end(), [](const Shape& s) { return s.batch > 1; }) &&
      std::any_of(shapes.begin(), shapes.end(), [](const Shape& s) { return s.batch == 1; })) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "--attention sweeps batches: give it without the options of single products");
  }
  size_t base_count = 0;
  auto bases_by_layout = swept_bases(sel, device, min_split, base_count);
  // Kernels compiled by an earlier sweep on this machine are loaded from there, not rebuilt.
  std::unique_ptr<cache::Database> cubin_db;
  std::unique_ptr<cache::DatabaseCubinStore> cubin_store;
  if (!sel.cubin_db.empty()) {
    cubin_db = std::make_unique<cache::Database>(sel.cubin_db);
    cubin_store = std::make_unique<cache::DatabaseCubinStore>(*cubin_db);
  }
  KernelCache kernels(cubin_store.get());
  CompilePool pool(kernels, device,
                   std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1));
  Candidates by_key;
  JobKeys job_keys;
  const size_t submitted =
      submit_candidates(shapes, bases_by_layout, device, pool, by_key, job_keys);
  std::fprintf(stderr,
               "gemm_sweep: %zu base configs (all layouts), %zu kernels, %zu shapes on %s\n",
               base_count, submitted, shapes.size(), device.name.c_str());
  load_compiled(pool, job_keys, by_key);
  std::fprintf(stderr, "gemm_sweep: compiled in %.1f s\n", seconds_since(started));
  return measure_shapes({shapes, by_key, out_path, resume, max_seconds, started}, kernels, device);
}

// The command line's values.
struct Arguments {
  std::string seeds, out = "gemm_sweep.tsv";
  Selection sel;
  bool list = false, print_shapes = false, resume = false;
  int min_split = 1;
  double max_seconds = 1e9;
};

// The options choosing the problems swept.
void add_problem_options(CLI::App& app, Arguments& args) {
  Selection& sel = args.sel;
  app.add_option("--seeds", args.seeds,
                 "random-shape seeds, e.g. 1-20,30 (held-out shapes are "
                 "always left out)");
  app.add_option("--min-gflop", sel.min_gflop,
                 "draw the random shapes conditioned on 2mnk >= X GFLOP (a large-shape stratum, "
                 "as gemm_random --min-gflop)");
  app.add_option("--max-gflop", sel.max_gflop, "leave out problems above X GFLOP");
  app.add_option("--max-n", sel.max_n,
                 "leave out problems with n above N (candidates for narrow products only)");
  app.add_option("--min-k", sel.min_k,
                 "leave out problems with k below K (candidates for long sums only)");
  app.add_option("--max-k", sel.max_k, "leave out problems with k above K");
  app.add_flag("--grid", sel.grid, "add the grid of squares, skinny, tall and large-k shapes");
  app.add_flag("--networks", sel.networks,
               "add the layers of public networks no benchmark measures (bench/network_shapes.hpp "
               "fitting_gemms: forward, input and weight gradients)");
  app.add_flag("--more-networks", sel.more_networks,
               "add the second fitting set: those models at other token counts and decoding "
               "steps, convolutions with k in the hundreds of thousands (fitting_gemms_more)");
  app.add_flag("--decode-networks", sel.decode_networks,
               "add the third fitting set: those models decoding 16 to 32 tokens (aligned "
               "forward products, fitting_gemms_decode)");
  app.add_flag("--long", sel.long_products,
               "add products with one very long dimension under small others (convolutions' "
               "weight gradients, k up to 1.5M; first layers, n up to 1.2M) and time the "
               "long-k configs (small tiles, 32-256 splits) on every problem besides the others");
  app.add_flag("--long-sums", sel.long_sums,
               "add long sums under a moderate output (vocabulary projections' and convolutions' "
               "gradients: k of 20000-480000, m and n of 64-2000, every layout, many unaligned)");
  app.add_flag("--only-candidates", sel.only_candidates,
               "with --long: its problems, but only the configs given (--candidates, --portfolio, "
               "--candidates-from-db), not its long-k configs");
  app.add_flag("--layer-grid", sel.layer_grid,
               "add the linear layers of mid-size models: hidden sizes 768-2048, 256-1536 tokens, "
               "forward (TN), input (NN) and weight (NT) gradients");
  app.add_flag("--layer-ffn", sel.layer_ffn,
               "with --layer-grid: their feed-forward layers instead (hidden sizes 768-2048 up to "
               "and down from 3072-8192)");
  app.add_flag("--vocab-networks", sel.vocab_networks,
               "add the fourth fitting set: vocabulary projections of models whose vocabulary is "
               "not a multiple of 4, every pass and decoding 8-24 tokens (fitting_gemms_vocab)");
  app.add_flag("--attention", sel.attention,
               "sweep attention's batched products instead (batch x heads 24-384, sequence "
               "lengths 96-3072, head dims 32-128; scores and outputs in three layouts each, "
               "outputs turned over as NN and TN): "
               "rows with a batch column, batched kernels");
  app.add_flag("--unaligned", sel.unaligned_only,
               "only the problems whose leading dimensions are not all multiples of 4");
  app.add_option("--layer-tokens", sel.layer_tokens,
                 "with --layer-grid: these token counts (default 256 384 512 640 768 1024 1536; "
                 "the weight gradients' k)")
      ->expected(1, -1);
  app.add_flag("--hard-families", sel.hard_families,
               "keep only random shapes of the hard families (min(m, n) <= 256 with k >= 2000; "
               "k <= 128 with m*n >= 2^20): denser data where picks miss most");
  app.add_flag("--skinny", sel.skinny,
               "keep only skinny random shapes big enough to matter (min(m, n) <= 256, "
               "m*n*k >= 2^27)");
}

// The options choosing the configs timed, and the run's output and limits.
void add_candidate_and_output_options(CLI::App& app, Arguments& args) {
  Selection& sel = args.sel;
  app.add_flag("--portfolio", sel.portfolio,
               "time the library's selection-model portfolio of this GPU, per layout (with "
               "--candidates or --candidates-from-db: besides those)");
  app.add_flag("--gemv", sel.gemv,
               "keep only shapes with m or n up to 16 and time the matrix-vector configs on them "
               "(columns x rows per block x splits of k; the tile configs' times come from other "
               "sweeps)");
  app.add_option("--out", args.out, "TSV file to write");
  app.add_option("--max-seconds", args.max_seconds, "stop after this long (rows so far are kept)");
  app.add_flag("--resume", args.resume,
               "append to --out, leaving out the problems it holds (a cut-short run goes on)");
  app.add_option("--candidates", sel.candidates_path,
                 "file of base configs, one per line (\"LAYOUT<TAB>config\": that layout only)");
  app.add_option("--candidates-from-db", sel.candidates_db,
                 "a tuning database: the --top fastest configs autotune measured on each of its "
                 "problems (this GPU model) are base configs of every layout");
  app.add_option("--top", sel.top, "configs per problem taken from --candidates-from-db")
      ->check(CLI::PositiveNumber);
  app.add_option("--cubin-db", sel.cubin_db,
                 "keep compiled kernels in this database file and load them from it (a later "
                 "sweep on the same machine compiles nothing twice)");
  app.add_flag("--list-candidates", args.list, "print the base configs and exit");
  app.add_flag("--print-shapes", args.print_shapes,
               "print the problems the sweep would measure (\"LAYOUT MxNxK GFLOP\") and exit");
  app.add_option("--min-split", args.min_split,
                 "only base configs with SPLITK at least this (a "
                 "sweep of configs added later)");
}

// --list-candidates: the base configs (and with --long the long-k ones), one per line.
void print_candidates(const Selection& sel) {
  for (const auto& c : sel.gemv ? gemv_candidates() : base_candidates(reference_device(90))) {
    std::printf("%s\n", config_text(c, gemm_op::parameters()).c_str());
  }
  if (sel.long_products) {
    for (const auto& c : long_candidates(reference_device(90))) {
      std::printf("%s\n", config_text(c, gemm_op::parameters()).c_str());
    }
  }
}

// --print-shapes: "LAYOUT MxNxK GFLOP" per problem, the total to stderr.
void print_shapes(const std::string& seeds, const Selection& sel) {
  double total = 0;
  const auto shapes = sweep_shapes(seeds, sel);
  for (const auto& s : shapes) {
    total += s.gflop();
    std::printf("%s %s %.3f\n", s.layout.c_str(), s.text().c_str(), s.gflop());
  }
  std::fprintf(stderr, "gemm_sweep: %zu problems, %.0f GFLOP in all\n", shapes.size(), total);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times candidate GEMM configs and cuBLAS on many problems (selection-model data).",
               "gemm_sweep"};
  Arguments args;
  add_problem_options(app, args);
  add_candidate_and_output_options(app, args);
  CLI11_PARSE(app, argc, argv);
  try {
    if (args.list) {
      print_candidates(args.sel);
      return 0;
    }
    if (args.print_shapes) {
      print_shapes(args.seeds, args.sel);
      return 0;
    }
    return run(args.seeds, args.sel, args.out, args.max_seconds, args.min_split, args.resume);
  } catch (const tuned::Error& e) {
    std::fprintf(stderr, "gemm_sweep: %s\n", e.what());
    return 1;
  }
}
