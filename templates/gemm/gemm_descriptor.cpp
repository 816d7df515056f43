#include "templates/gemm/gemm_descriptor.hpp"

#include <algorithm>
#include <cmath>

#include "templates/extent.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "templates/registered_op.hpp"

namespace tuned::gemm_op {
namespace {

constexpr int kLayouts = 4;  // NN, NT, TN, TT

}  // namespace

Problem Descriptor::problem_of(const ProblemId& id) {
  static const std::vector<std::string> layouts = info().variants;
  Problem p = packed_problem(layouts[static_cast<size_t>(id.variant)], id.dims[0], id.dims[1],
                             id.dims[2], id.rank > 3 ? id.dims[3] : 1);
  p.alignment = id.alignment;
  p.unaligned_operands = id.unaligned_operands;
  p.epilogue = id.kernel_form;  // the epilogue's kernel form (epilogue_form)
  p.lda = round_up(p.lda, id.alignment);
  p.ldb = round_up(p.ldb, id.alignment);
  p.ldc = round_up(p.ldc, id.alignment);
  if (p.batch > 1) {
    p.stride_a = round_up(p.lda * a_cols(p), id.alignment);
    p.stride_b = round_up(p.ldb * b_cols(p), id.alignment);
    p.stride_c = round_up(p.ldc * p.n, id.alignment);
  }
  return p;
}

Problem Descriptor::request_problem(const TaskRequest& request) {
  const auto& s = request.shape;
  return packed_problem(request.layout, s[0], s[1], s[2], s.size() > 3 ? s[3] : 1);
}

size_t Descriptor::operand_bytes(const Problem& problem) {
  const auto m = static_cast<size_t>(problem.m), n = static_cast<size_t>(problem.n),
             k = static_cast<size_t>(problem.k), batch = static_cast<size_t>(problem.batch);
  return (m * k + k * n + m * n) * batch * sizeof(float);
}

// A batch of products is looked up as one product with the batch folded into its longer side (as
// many tiles, the same k, and the shorter side, whose tile quantization a batch does not change,
// as it is), and the batch as a fourth dim: the points of batches (gemm_sweep --attention) are
// near it, and far from single products (3 dims: a batch of 1), whose picks they must not move;
// a table without them ranks a batch by the single products alone, as before.
std::vector<int64_t> Descriptor::selection_shape(const std::vector<int64_t>& shape) {
  if (shape.size() < 4 || shape[3] <= 1) return {shape.begin(), shape.begin() + 3};
  std::vector<int64_t> folded = {shape[0], shape[1], shape[2], shape[3]};
  folded[shape[0] >= shape[1] ? 0 : 1] *= shape[3];
  return folded;
}

std::unique_ptr<GemmTask> Descriptor::make_task(const DeviceInfo& device, const Problem& problem,
                                                DeviceCheck& check) {
  return std::make_unique<GemmTask>(device, problem, check);
}

std::vector<KernelSpec> Descriptor::support_kernels() { return Fp64Sample::kernel_specs(); }

// A compute type's calls are served by its layout's data: fitting refuses what the type does
// not allow (the pedantic type: all but FFMA), for_compute turns split TF32 into plain TF32 for
// the TF32 type. Any entry runs with its slice sums bounded on the call's k, and a TMA-fed one
// packed where the call is unaligned (the same kernel; the entries were mostly timed unpacked on
// aligned problems, and as they were stored none could serve GPT-2's unaligned lm_head weight
// gradients, where a tuned TMA-fed config ran 1.7x cuBLAS).
int Descriptor::data_variant(int variant) { return variant % kLayouts; }

Config Descriptor::serve(const Config& config, const ProblemId& problem) {
  const Problem p = problem_of(problem);
  return packed_where_unaligned(with_bounded_slice_sums(for_compute(config, p), p), p);
}

// A packing config copies this problem's unaligned operands: predicted only where the copies
// take at most half the product's time (its neighbours may have copied a small A and nothing
// else: a first layer's TN forward with k = 27 copies all of B, 1.15 of the product, and ran at
// 0.42x cuBLAS). Not where they merely fail to pay by packing_pays' 10 %: on the H100's large
// random stratum, picks packing at 15-40 % were up to 1.5x faster than the narrowed ones.
// And an entry that serve splits further on this problem (its bound on float sums: MMA = 3)
// runs another grid here than where it was timed: one of 4 splits, timed up to
// k = 16384, ran a 50257-long sum in 16 splits at 0.92x cuBLAS. (Partial chains of slice sums,
// the TMA-fed kernels' bound, keep the grid and cost a few adds: their times transfer.)
bool Descriptor::transfers_to(const Config& config, const ProblemId& problem) {
  const Problem p = problem_of(problem);
  const Config served = serve(config, problem);
  if (served.get("SPLITK") != config.get("SPLITK")) return false;
  return !packs(served, p) || packing_cost(p) <= 0.5;
}

// padding: log(computed / useful outputs) of the tile grid; waves: log(blocks the last wave
// could hold / blocks it holds) at one block per SM, splits included. The matrix-vector kernel
// has no padding to speak of (its blocks are GEMV rows of y, none wasted past the last), but
// waves as the tiles do: tile_count's blocks (GEMV rows of y) times its splits.
void Descriptor::selection_features(const Config& config, int sm_count,
                                    const std::vector<int64_t>& shape, std::vector<double>& out) {
  if (shape.size() < 2) {
    out.insert(out.end(), {0.0, 0.0});
    return;
  }
  const int64_t m = std::max<int64_t>(shape[0], 1), n = std::max<int64_t>(shape[1], 1);
  // (The layout and k change neither the tiles nor the matrix-vector kernel's rows.)
  const double blocks = static_cast<double>(tile_count(config, packed_problem("NN", m, n, 1)));
  const double wave = blocks * config.get("SPLITK") / std::max(sm_count, 1);
  const double padding = is_gemv(config)
                             ? 0.0
                             : std::log(blocks * config.get("BM") * config.get("BN") /
                                        (static_cast<double>(m) * static_cast<double>(n)));
  out.push_back(padding);
  out.push_back(std::log(std::ceil(wave) / wave));
}

ProblemId problem_id(const Problem& p) {
  ProblemId id;
  // info().variants: the four layouts, then the four again with each compute type.
  id.variant = static_cast<int>(p.compute) * kLayouts + (p.trans_a ? 2 : 0) + (p.trans_b ? 1 : 0);
  // A batch is a problem of its own (rank 4); a single product keeps its rank-3 identity.
  id.rank = p.batch > 1 ? 4 : 3;
  id.dims = {p.m, p.n, p.k, p.batch > 1 ? p.batch : 0};
  id.alignment = p.alignment;
  id.unaligned_operands = p.unaligned_operands;
  id.kernel_form = p.epilogue;
  return id;
}

OpRegistration registration() { return registered_op<Descriptor>(); }

}  // namespace tuned::gemm_op
