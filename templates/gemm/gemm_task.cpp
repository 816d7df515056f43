#include "templates/gemm/gemm_task.hpp"

#include <cmath>

#include "core/cuda_check.hpp"
#include "templates/extent.hpp"
#include "templates/gemm/gemm_launch.hpp"
#include "templates/template_source.hpp"
#include "templates/transpose/transpose_op.hpp"

namespace tuned::gemm_op {
void cublas_sgemm(cublasHandle_t handle, const Problem& p, float alpha, const float* a,
                  const float* b, float beta, float* c) {
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (p.batch > 1) {
    check_cublas(cublas().sgemm_strided_batched_64(handle, op_a, op_b, p.m, p.n, p.k, &alpha, a,
                                                   p.lda, p.stride_a, b, p.ldb, p.stride_b, &beta,
                                                   c, p.ldc, p.stride_c, p.batch),
                 "cublasSgemmStridedBatched_64");
    return;
  }
  check_cublas(cublas().sgemm_64(handle, op_a, op_b, p.m, p.n, p.k, &alpha, a, p.lda, b, p.ldb,
                                 &beta, c, p.ldc),
               "cublasSgemm_64");
}

GemmTask::GemmTask(const DeviceInfo& device, const Problem& problem, DeviceCheck& check)
    : device_(device), problem_(problem), space_(make_space(device, problem)), check_(check) {
  transpose_b_ = [this](int64_t rows, int64_t cols, const float* a, int64_t lda, float* b,
                        int64_t ldb, cudaStream_t stream) {
    transpose_b(rows, cols, a, lda, b, ldb, stream);
  };
  // Odd in every dimension so each edge path runs; leading dims padded but still multiples of
  // the alignment class, so the candidate's VEC stays valid. An m or n of at most 16 stays: the
  // matrix-vector kernel is valid only for its class of them (1 x 1 becomes 1 x 77, still the
  // class of 1, with more than one output to measure the error on).
  edge_.trans_a = problem.trans_a;
  edge_.trans_b = problem.trans_b;
  edge_.m = problem.m <= kGemvMaxCols ? problem.m : 131;
  edge_.n = problem.n <= kGemvMaxCols && !(problem.m == 1 && problem.n == 1) ? problem.n : 77;
  edge_.k = 45;
  edge_.alignment = problem.alignment;
  edge_.lda = round_up(edge_.min_lda(), problem.alignment) + problem.alignment;
  edge_.ldb = round_up(edge_.min_ldb(), problem.alignment) + 2 * problem.alignment;
  edge_.ldc = round_up(edge_.min_ldc(), problem.alignment) + 3 * problem.alignment;
  // A batch's edge has three products with gaps between them (strides past the matrices, still
  // multiples of the alignment class), so the kernels' product offsets are checked too.
  if (problem.batch > 1) {
    edge_.batch = 3;
    edge_.stride_a = edge_.lda * a_cols(edge_) + problem.alignment;
    edge_.stride_b = edge_.ldb * b_cols(edge_) + 2 * problem.alignment;
    edge_.stride_c = edge_.ldc * edge_.n + 3 * problem.alignment;
  }
  probe_ = edge_;
  probe_.batch = 1;  // the contract is the arithmetic's, the same in every product
  probe_.stride_a = probe_.stride_b = probe_.stride_c = 0;
  probe_.k = kProbeKs[0];
  probe_.lda = round_up(probe_.min_lda(), problem.alignment);
  probe_.ldb = round_up(probe_.min_ldb(), problem.alignment);
  probe_.ldc = round_up(probe_.min_ldc(), problem.alignment);
  // The TF32 compute type is measured against cuBLAS in TF32, its reference and its contract's.
  if (problem.compute == Compute::kTf32) cublas_.allow_tf32();
}

std::string GemmTask::baseline_name() const {
  return problem_.compute == Compute::kTf32 ? "cuBLAS TF32" : "cuBLAS";
}

Problem GemmTask::probe_at(size_t i) const {
  Problem p = probe_;
  p.k = kProbeKs[i];  // the leading k of the longest probe's operands: same pointers and ld
  return p;
}

KernelSpec GemmTask::kernel_spec(const Config& config) const {
  return gemm_op::kernel_spec(config, problem_);
}

std::string GemmTask::template_hash() const { return template_source("gemm.cu").hash; }

void GemmTask::allocate(const Problem& p, Buffers& b, bool with_init) {
  // Every product of a batch: the last starts (batch - 1) strides after the first.
  auto bytes = [&](int64_t ld, int64_t cols, int64_t stride) {
    return (column_major_elements(ld, cols) + static_cast<size_t>((p.batch - 1) * stride)) *
           sizeof(float);
  };
  b.a = DeviceBuffer(bytes(p.lda, a_cols(p), p.stride_a));
  b.b = DeviceBuffer(bytes(p.ldb, b_cols(p), p.stride_b));
  b.c = DeviceBuffer(bytes(p.ldc, p.n, p.stride_c));
  b.c_ref = DeviceBuffer(bytes(p.ldc, p.n, p.stride_c));
  if (with_init) b.c_init = DeviceBuffer(bytes(p.ldc, p.n, p.stride_c));
}

MatrixCheck GemmTask::compare_products(const Problem& p, const float* c, const float* c_ref,
                                       cudaStream_t stream) {
  // The products' C side by side: a batch's with gaps (the edge's) compared product by product.
  if (p.batch == 1 || p.stride_c == p.ldc * p.n) {
    return check_.compare(c, p.ldc, c_ref, p.ldc, p.m, p.n * p.batch, stream);
  }
  MatrixCheck all = check_.compare(c, p.ldc, c_ref, p.ldc, p.m, p.n, stream);
  for (int64_t z = 1; z < p.batch; ++z) {
    all.add(check_.compare(c + z * p.stride_c, p.ldc, c_ref + z * p.stride_c, p.ldc, p.m, p.n,
                           stream));
  }
  return all;
}

void* GemmTask::workspace(const Config& config, const Problem& p) {
  const size_t bytes = workspace_bytes(config, p);
  if (bytes == 0) return nullptr;
  if (workspace_.bytes() < bytes) {
    TUNED_CUDA_CHECK(cudaDeviceSynchronize());  // the old workspace may still be in use
    workspace_ = DeviceBuffer(bytes);
  }
  return workspace_.get();
}

void GemmTask::allocate() {
  allocate(problem_, main_, false);
  allocate(edge_, edge_buffers_, true);
  exact_ = std::make_unique<Fp64Sample>(check_.kernels(), device_);
  for (size_t i = 0; i < std::size(kProbeKs); ++i) {
    probe_exact_.push_back(std::make_unique<Fp64Sample>(check_.kernels(), device_));
  }
  probe_cublas_error_.assign(std::size(kProbeKs), 0.0);
  probe_measured_.assign(std::size(kProbeKs), false);
}

void GemmTask::fresh_inputs(uint64_t seed, cudaStream_t stream) {
  cublas_.set_stream(stream);
  auto fill = [&](DeviceBuffer& buf, uint64_t s) {
    check_.fill_uniform(buf.as<float>(), buf.bytes() / sizeof(float), s, -1.0f, 1.0f, stream);
  };
  fill(main_.a, seed * 8 + 1);
  fill(main_.b, seed * 8 + 2);
  fill(edge_buffers_.a, seed * 8 + 3);
  fill(edge_buffers_.b, seed * 8 + 4);
  fill(edge_buffers_.c_init, seed * 8 + 5);
  cublas_sgemm(cublas_.get(), problem_, 1.0f, main_.a.as<float>(), main_.b.as<float>(), 0.0f,
               main_.c_ref.as<float>());
  exact_->compute(problem_, main_.a.as<float>(), main_.b.as<float>(), stream);
  cublas_exact_error_ = exact_->error(main_.c_ref.as<float>(), problem_.ldc, stream);
  TUNED_CUDA_CHECK(cudaMemcpyAsync(edge_buffers_.c_ref.get(), edge_buffers_.c_init.get(),
                                   edge_buffers_.c_init.bytes(), cudaMemcpyDeviceToDevice, stream));
  cublas_sgemm(cublas_.get(), edge_, kEdgeAlpha, edge_buffers_.a.as<float>(),
               edge_buffers_.b.as<float>(), kEdgeBeta, edge_buffers_.c_ref.as<float>());
  probe_seed_ = seed;
  probe_filled_ = false;
  probe_measured_.assign(std::size(kProbeKs), false);
}

void GemmTask::prepare_probe(size_t i, cudaStream_t stream) {
  if (!probe_filled_) {
    if (!probe_buffers_.a) allocate(probe_, probe_buffers_, false);
    auto fill_wide = [&](DeviceBuffer& buf, int64_t ld, uint64_t s) {
      check_.fill_wide(buf.as<float>(), buf.bytes() / sizeof(float), ld, s, kProbeSpread, stream);
    };
    fill_wide(probe_buffers_.a, probe_.lda, probe_seed_ * 8 + 6);
    fill_wide(probe_buffers_.b, probe_.ldb, probe_seed_ * 8 + 7);
    probe_filled_ = true;
  }
  if (probe_measured_[i]) return;
  const Problem p = probe_at(i);
  cublas_.set_stream(stream);
  cublas_sgemm(cublas_.get(), p, 1.0f, probe_buffers_.a.as<float>(), probe_buffers_.b.as<float>(),
               0.0f, probe_buffers_.c_ref.as<float>());
  probe_exact_[i]->compute(p, probe_buffers_.a.as<float>(), probe_buffers_.b.as<float>(), stream);
  probe_cublas_error_[i] = probe_exact_[i]->error(probe_buffers_.c_ref.as<float>(), p.ldc, stream);
  probe_measured_[i] = true;
}

MatrixCheck GemmTask::check(const LoadedKernel& kernel, const Config& config,
                            cudaStream_t stream) {
  MatrixCheck result = check_uniform(kernel, config, stream);
  if (!result.passed(tolerance())) return result;
  // Wide-range inputs at long k: where a split loses the small parts' information or a float sum
  // grows with k, the uniform inputs' error can stay small.
  result.add(check_probe(kernel, config, stream));
  return result;
}

MatrixCheck GemmTask::check_uniform(const LoadedKernel& kernel, const Config& config,
                                    cudaStream_t stream) {
  // Main shape: beta = 0 over a NaN-poisoned C, so unwritten elements and reads of C both show.
  DeviceCheck::poison(main_.c.as<float>(), main_.c.bytes() / sizeof(float), stream);
  launch(kernel, config, problem_, 1.0f, main_.a.as<float>(), main_.b.as<float>(), 0.0f,
         main_.c.as<float>(), workspace(config, problem_), stream, transpose_b_);
  MatrixCheck main =
      compare_products(problem_, main_.c.as<float>(), main_.c_ref.as<float>(), stream);
  if (!main.passed(tolerance())) return main;
  main.exact_error = exact_->error(main_.c.as<float>(), problem_.ldc, stream);
  main.exact_limit = contract_limit(cublas_exact_error_);
  if (main.breaks_contract()) return main;

  // Edge shape: partial tiles everywhere, padded leading dims, alpha and beta != 0.
  TUNED_CUDA_CHECK(cudaMemcpyAsync(edge_buffers_.c.get(), edge_buffers_.c_init.get(),
                                   edge_buffers_.c_init.bytes(), cudaMemcpyDeviceToDevice, stream));
  launch(kernel, config, edge_, kEdgeAlpha, edge_buffers_.a.as<float>(),
         edge_buffers_.b.as<float>(), kEdgeBeta, edge_buffers_.c.as<float>(),
         workspace(config, edge_), stream, transpose_b_);
  MatrixCheck edge = compare_products(edge_, edge_buffers_.c.as<float>(),
                                      edge_buffers_.c_ref.as<float>(), stream);
  main.add(edge);
  return main;
}

MatrixCheck GemmTask::check_probe(const LoadedKernel& kernel, const Config& config,
                                  cudaStream_t stream, int64_t k) {
  size_t i = 0;
  while (i + 1 < std::size(kProbeKs) &&
         (k != 0 ? kProbeKs[i] != k : !sums_within_contract(config, probe_at(i)))) {
    ++i;
  }
  prepare_probe(i, stream);
  const Problem p = probe_at(i);
  DeviceCheck::poison(probe_buffers_.c.as<float>(), probe_buffers_.c.bytes() / sizeof(float),
                      stream);
  launch(kernel, config, p, 1.0f, probe_buffers_.a.as<float>(), probe_buffers_.b.as<float>(), 0.0f,
         probe_buffers_.c.as<float>(), workspace(config, p), stream, transpose_b_);
  // Only the contract is checked here: on wide-range inputs the difference from cuBLAS is no
  // measure (both may be far from the exact product), the FP64 product is.
  MatrixCheck probe;
  probe.exact_error = probe_exact_[i]->error(probe_buffers_.c.as<float>(), p.ldc, stream);
  probe.exact_limit = contract_limit(probe_cublas_error_[i]);
  probe.exact_inputs = "wide-range inputs, " + std::to_string(p.m) + "x" + std::to_string(p.n) +
                       "x" + std::to_string(p.k);
  return probe;
}

double GemmTask::tolerance() const {
  // TF32 products keep 11 bits: against cuBLAS's TF32 the difference is ~1e-3 (the contract, on
  // the FP64 product, is the real bound).
  if (problem_.compute == Compute::kTf32) return 5e-3;
  // FP32 rounding grows like sqrt(k); 1e-5 holds with margin up to k of a few thousand.
  return std::max(1e-5, 2e-7 * std::sqrt(static_cast<double>(problem_.k)));
}

void GemmTask::run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) {
  launch(kernel, config, problem_, 1.0f, main_.a.as<float>(), main_.b.as<float>(), 0.0f,
         main_.c.as<float>(), workspace(config, problem_), stream, transpose_b_);
}

void GemmTask::transpose_b(int64_t rows, int64_t cols, const float* a, int64_t lda, float* b,
                           int64_t ldb, cudaStream_t stream) {
  const transpose_op::Problem p = transpose_op::call_problem(rows, cols, a, lda, b, ldb);
  if (!transpose_kernel_) {
    // The classic 32 x 32 tile with +1 padding (VEC 1): valid for every problem, so one kernel
    // serves every candidate and the comparison between them stays fair.
    transpose_config_ = transpose_op::default_config(device_, p);
    transpose_kernel_ = check_.kernels().get(transpose_op::kernel_spec(transpose_config_), device_);
  }
  transpose_op::launch(*transpose_kernel_, transpose_config_, p, a, b, stream);
}

void GemmTask::run_baseline(cudaStream_t stream) {
  cublas_.set_stream(stream);
  cublas_sgemm(cublas_.get(), problem_, 1.0f, main_.a.as<float>(), main_.b.as<float>(), 0.0f,
               main_.c_ref.as<float>());
}

}  // namespace tuned::gemm_op
