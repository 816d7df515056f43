// Strided batches and the fused epilogue on the GPU: every family the space offers a batch (its
// seeds: FFMA tiles, split-K, mma.sync, wgmma, TMA-fed, matrix-vector) in every layout on odd
// shapes, checked by the tuning task against cublasSgemmStridedBatched (NaN-poisoned C, and an
// edge batch of three products with gaps between them); the epilogue (bias per row and per
// column, each activation) on every way a kernel stores C (direct, staged, split-K's last block,
// the summing pass, the matrix-vector kernel, the TMA-fed kernel) against a double-precision
// reference of cuBLAS's product; and the public entry: shared operands (stride 0), more products
// than one launch holds, an epilogue on a batch.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/cuda_raii.hpp"
#include "generator/device.hpp"
#include "generator/kernel_cache.hpp"
#include "gpu_test_util.hpp"
#include "templates/check/device_check.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/gemm/gemm_task.hpp"
#include "tuned/tuned.h"

namespace tuned::gemm_op {
namespace {

// The seeds of p, at most one per kind of kernel (family, matrix-vector, split or staged C).
std::vector<Config> one_of_each_kind(const DeviceInfo& device, const Problem& p) {
  std::vector<Config> picked;
  std::set<std::tuple<int, bool, bool, int, int>> kinds;
  for (const Config& c : seed_configs(device, p)) {
    const auto kind = std::make_tuple(c.get("MMA"), is_gemv(c), c.get("SPLITK") > 1,
                                      c.get("CSTAGE"), c.get("REDUCE"));
    if (kinds.insert(kind).second) picked.push_back(c);
  }
  return picked;
}

TEST(GemmBatchGpu, EveryFamilyIsRightOnBatchesInEveryLayout) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  int checked = 0;
  std::set<int> families;
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (auto [m, n, k, batch] : {std::tuple{7, 127, 1000, 3}, std::tuple{1000, 7, 127, 5},
                                  std::tuple{256, 192, 512, 9}, std::tuple{1, 77, 45, 4},
                                  std::tuple{300, 9, 2000, 2}}) {
      const Problem p = packed_problem(layout, m, n, k, batch);
      for (const Config& c : one_of_each_kind(device, p)) {
        SCOPED_TRACE(std::string(layout) + " " + std::to_string(m) + "x" + std::to_string(n) +
                     "x" + std::to_string(k) + " batch " + std::to_string(batch) + " " +
                     c.canonical());
        GemmTask task(device, p, check);
        task.allocate();
        task.fresh_inputs(100 + checked, stream.get());
        const auto kernel = kernels.get(task.kernel_spec(c), device);
        const MatrixCheck result = task.check_uniform(*kernel, c, stream.get());
        EXPECT_TRUE(result.computes(task.tolerance())) << result.describe();
        families.insert(is_gemv(c) ? -1 : c.get("MMA"));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 40);
  // FFMA, the matrix-vector kernel and (on sm_90) the tensor-core families all ran.
  EXPECT_TRUE(families.count(0) && families.count(-1));
  if (device.compute_capability() == 90) {
    EXPECT_TRUE(families.count(1) && families.count(4)) << families.size();
  }
}

// x after the epilogue's bias (row m, column n) and activation, in double.
double finished(double x, const Epilogue& e, const std::vector<float>& bias, int64_t m,
                int64_t n) {
  if (e.bias_kind == BiasKind::kRow) x += bias[static_cast<size_t>(m)];
  if (e.bias_kind == BiasKind::kColumn) x += bias[static_cast<size_t>(n)];
  switch (e.activation) {
    case Activation::kRelu: return std::max(x, 0.0);
    case Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::kGeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = u(rng);
  return v;
}

// One config with one epilogue on a batch of two products, against cuBLAS's product finished in
// double on the host. Returns the largest error relative to the largest output. With beta == 0
// C starts as NaNs (never to be read: the kernels finish the fragments in registers then).
double epilogue_error(const DeviceInfo& device, KernelCache& kernels, const Config& config,
                      Problem p, const Epilogue& shape_of_epilogue, float beta,
                      cudaStream_t stream) {
  p.epilogue = epilogue_form(shape_of_epilogue);  // its activation's kernel
  const int64_t a_elems = p.lda * a_cols(p) + (p.batch - 1) * p.stride_a;
  const int64_t b_elems = p.ldb * b_cols(p) + (p.batch - 1) * p.stride_b;
  const int64_t c_elems = p.ldc * p.n + (p.batch - 1) * p.stride_c;
  const auto a = random_floats(static_cast<size_t>(a_elems), 1);
  const auto b = random_floats(static_cast<size_t>(b_elems), 2);
  const auto c0 = random_floats(static_cast<size_t>(c_elems), 3);
  const int64_t bias_len = shape_of_epilogue.bias_kind == BiasKind::kRow ? p.m : p.n;
  const auto bias = random_floats(static_cast<size_t>(bias_len * p.batch), 4);
  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c0.size() * 4), dref(c0.size() * 4),
      dbias(bias.size() * 4);
  TUNED_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  TUNED_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  TUNED_CUDA_CHECK(cudaMemcpy(dc.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
  if (beta == 0.0f) TUNED_CUDA_CHECK(cudaMemset(dc.get(), 0xff, c0.size() * 4));  // NaNs
  TUNED_CUDA_CHECK(cudaMemcpy(dref.get(), c0.data(), c0.size() * 4, cudaMemcpyHostToDevice));
  TUNED_CUDA_CHECK(cudaMemcpy(dbias.get(), bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  const float alpha = 1.25f;
  CublasHandle cublas;
  cublas.set_stream(stream);
  cublas_sgemm(cublas.get(), p, alpha, da.as<float>(), db.as<float>(), beta, dref.as<float>());
  Epilogue e = shape_of_epilogue;
  e.bias = dbias.as<float>();
  e.bias_stride = bias_len;
  DeviceBuffer workspace(std::max<size_t>(workspace_bytes(config, p), 4));
  const auto kernel = kernels.get(kernel_spec(config, p), device);
  launch(*kernel, config, p, alpha, da.as<float>(), db.as<float>(), beta, dc.as<float>(),
         workspace.get(), stream, nullptr, e);
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> got(c0.size()), ref(c0.size());
  TUNED_CUDA_CHECK(cudaMemcpy(got.data(), dc.get(), got.size() * 4, cudaMemcpyDeviceToHost));
  TUNED_CUDA_CHECK(cudaMemcpy(ref.data(), dref.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0, scale = 1e-30;
  for (int64_t z = 0; z < p.batch; ++z) {
    const std::vector<float> product_bias(bias.begin() + z * bias_len,
                                          bias.begin() + (z + 1) * bias_len);
    for (int64_t j = 0; j < p.n; ++j) {
      for (int64_t i = 0; i < p.m; ++i) {
        const size_t at = static_cast<size_t>(z * p.stride_c + j * p.ldc + i);
        const double want = finished(ref[at], e, product_bias, i, j);
        worst = std::max(worst, std::fabs(got[at] - want));
        scale = std::max(scale, std::fabs(want));
        if (!std::isfinite(got[at])) return INFINITY;
      }
    }
  }
  return worst / scale;
}

TEST(GemmBatchGpu, EpilogueIsRightWhereverAKernelStoresC) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  Stream stream = Stream::create();
  // Every way C is stored: direct, staged (CSTAGE), split-K's last block, the summing pass
  // (REDUCE), the FP64 tensor cores, and the seeds of a skinny and a decoding product (the
  // matrix-vector kernel, the TMA-fed and wgmma kernels on sm_90).
  std::vector<Config> configs;
  for (const char* text : {
           "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,"
           "UNROLL=8,PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,"
           "CSTAGE=0,KSUM=1,GCOLS=1,AHEAD=0",
           "GEMV=0,BM=64,BN=64,BK=8,WM=32,WN=32,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,"
           "UNROLL=8,PIPE=1,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=0,"
           "CSTAGE=1,KSUM=1,GCOLS=1,AHEAD=0",
           "GEMV=0,BM=32,BN=64,BK=16,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,"
           "UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=12,PACK=0,REDUCE=0,TAIL=0,MMA=0,"
           "CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0",
           "GEMV=0,BM=32,BN=64,BK=16,WM=32,WN=16,TM=4,TN=4,LM=8,VEC=4,PAD=4,AKM=1,BKM=1,"
           "UNROLL=8,PIPE=3,SWZ=0,MINB=2,PRETB=0,SPLITK=12,PACK=0,REDUCE=1,TAIL=0,MMA=0,"
           "CSTAGE=0,KSUM=0,GCOLS=1,AHEAD=0"}) {
    configs.push_back(Config::parse(text));
  }
  auto add_seeds = [&](const Problem& p) {
    for (const Config& c : one_of_each_kind(device, p)) {
      if (std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
    }
  };
  add_seeds(packed_problem("NN", 512, 384, 1024, 2));
  add_seeds(packed_problem("NN", 3000, 4, 700, 2));
  const std::vector<Epilogue> epilogues = {
      {BiasKind::kRow, nullptr, 0, Activation::kNone},
      {BiasKind::kColumn, nullptr, 0, Activation::kRelu},
      {BiasKind::kRow, nullptr, 0, Activation::kGeluTanh},
      {BiasKind::kNone, nullptr, 0, Activation::kGeluErf},
      {BiasKind::kColumn, nullptr, 0, Activation::kGeluErf}};
  // Each activation is a kernel of its own: two epilogues per config and shape, in turn, so every
  // way of storing C meets several activations and both bias kinds without compiling all forms.
  int checked = 0, turn = 0;
  for (const Config& config : configs) {
    for (const auto& [m, n, k] : {std::tuple{127, 65, 1000}, std::tuple{3000, 4, 700}}) {
      const Problem p = packed_problem("NN", m, n, k, 2);
      Config fitted;
      try {
        fitted = fit_config(config, device, p);  // VEC to the alignment, as the library runs it
      } catch (const Error&) {
        continue;  // not valid there (a matrix-vector config on 127 x 65, ...)
      }
      turn += 2;
      for (const Epilogue& e : {epilogues[turn % 5], epilogues[(turn + 3) % 5]}) {
        SCOPED_TRACE(fitted.canonical() + " " + std::to_string(m) + "x" + std::to_string(n) +
                     "x" + std::to_string(k) + " bias " +
                     std::to_string(static_cast<int>(e.bias_kind)) + " act " +
                     std::to_string(static_cast<int>(e.activation)));
        // beta != 0 reads C (a run at a time where whole), beta == 0 never does (C holds NaNs)
        for (const float beta : {-0.5f, 0.0f}) {
          EXPECT_LT(epilogue_error(device, kernels, fitted, p, e, beta, stream.get()), 2e-5)
              << "beta " << beta;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 32);
}

// The public entry against cuBLAS on the same strided batch (stride 0 included).
TEST(GemmBatchGpu, PublicEntrySharesOperandsAndRunsMoreProductsThanALaunchHolds) {
  TUNED_REQUIRE_GPU();
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  CublasHandle handle;
  for (auto [m, n, k, batch, shared_a] :
       {std::tuple{33, 47, 129, 7, true}, std::tuple{2, 3, 4, 70000, false},
        std::tuple{128, 64, 64, 64, false}, std::tuple{1, 300, 257, 6, true}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " x" +
                 std::to_string(batch));
    const long long stride_a = shared_a ? 0 : static_cast<long long>(m) * k;
    const long long stride_b = static_cast<long long>(k) * n, stride_c = static_cast<long long>(m) * n;
    const auto a = random_floats(static_cast<size_t>(m * k + (batch - 1) * stride_a), 5);
    const auto b = random_floats(static_cast<size_t>(stride_b * batch), 6);
    DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(stride_c * batch * 4),
        dref(stride_c * batch * 4);
    TUNED_CUDA_CHECK(cudaMemcpy(da.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    TUNED_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    DeviceCheck::poison(dc.as<float>(), static_cast<size_t>(stride_c * batch), nullptr);
    const float one = 1.0f, zero = 0.0f;
    ASSERT_EQ(tuned_gemm_strided_batched(TUNED_OP_N, TUNED_OP_N, m, n, k, &one, da.as<float>(), m,
                                         stride_a, db.as<float>(), k, stride_b, &zero,
                                         dc.as<float>(), m, stride_c, batch, nullptr),
              TUNED_STATUS_SUCCESS)
        << tuned_last_error();
    check_cublas(cublas().sgemm_strided_batched_64(
                     handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da.as<float>(), m,
                     stride_a, db.as<float>(), k, stride_b, &zero, dref.as<float>(), m, stride_c,
                     batch),
                 "cublasSgemmStridedBatched_64");
    TUNED_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(static_cast<size_t>(stride_c * batch)), ref(got.size());
    TUNED_CUDA_CHECK(cudaMemcpy(got.data(), dc.get(), got.size() * 4, cudaMemcpyDeviceToHost));
    TUNED_CUDA_CHECK(cudaMemcpy(ref.data(), dref.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(double{got[i]} - ref[i]) : INFINITY);
    }
    EXPECT_LT(worst, 1e-4 * std::sqrt(static_cast<double>(k)));
  }
}

}  // namespace
}  // namespace tuned::gemm_op
