#include "templates/gemm/gemm_reference.hpp"

#include <algorithm>
#include <cmath>

#include "core/cuda_check.hpp"
#include "templates/template_source.hpp"

namespace tuned::gemm_op {
namespace {

KernelSpec reference_spec(const std::string& kernel_name) {
  return template_kernel_spec("gemm_reference.cu", kernel_name);
}

constexpr int kThreads = 256;  // 16 x 16 sampled outputs per block (gemm_reference.cu)
constexpr int kSampleTile = 16;

// count indices spread evenly over [0, extent), first and last included (all when fewer).
std::vector<long long> spread(int64_t extent, int count) {
  std::vector<long long> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    out[static_cast<size_t>(i)] =
        count == 1 ? 0
                   : static_cast<long long>(static_cast<double>(i) * (extent - 1) / (count - 1));
  }
  return out;
}

}  // namespace

double contract_limit(double reference_error) {
  return std::max(kContractFactor * reference_error, kContractFloor);
}

std::vector<KernelSpec> Fp64Sample::kernel_specs() {
  return {reference_spec("tuned_gemm_fp64_sample"), reference_spec("tuned_gemm_sample_error")};
}

Fp64Sample::Fp64Sample(KernelCache& kernels, const DeviceInfo& device, int sample_side)
    : product_(kernels.get(reference_spec("tuned_gemm_fp64_sample"), device)),
      error_(kernels.get(reference_spec("tuned_gemm_sample_error"), device)),
      sample_side_(std::max(1, sample_side)),
      sm_count_(std::max(1, device.sm_count)),
      indices_(2 * static_cast<size_t>(sample_side_) * sizeof(long long)),
      ref_(static_cast<size_t>(sample_side_) * static_cast<size_t>(sample_side_) * sizeof(double)),
      sums_(3 * sizeof(double)) {}

void Fp64Sample::compute(const Problem& p, const float* a, const float* b, cudaStream_t stream) {
  rows_ = static_cast<int>(std::min<int64_t>(p.m, sample_side_));
  cols_ = static_cast<int>(std::min<int64_t>(p.n, sample_side_));
  if (rows_ <= 0 || cols_ <= 0) return;
  std::vector<long long> indices = spread(p.m, rows_);
  const std::vector<long long> cols = spread(p.n, cols_);
  indices.insert(indices.end(), cols.begin(), cols.end());
  // Pageable: the copy completes before the call returns, so the vector may go.
  TUNED_CUDA_CHECK(cudaMemcpyAsync(indices_.get(), indices.data(),
                                   indices.size() * sizeof(long long), cudaMemcpyHostToDevice,
                                   stream));
  const long long* row_index = indices_.as<long long>();
  const long long* col_index = row_index + rows_;
  long long lda = p.lda, ldb = p.ldb, k = p.k;
  int trans_a = p.trans_a, trans_b = p.trans_b, nr = rows_, nc = cols_;
  double* ref = ref_.as<double>();
  void* args[] = {&a, &lda,       &trans_a, &b,         &ldb, &trans_b,
                  &k, &row_index, &nr,      &col_index, &nc,  &ref};
  LaunchGeometry g;
  g.block = dim3(kThreads);
  g.grid = dim3(static_cast<unsigned>((rows_ + kSampleTile - 1) / kSampleTile),
                static_cast<unsigned>((cols_ + kSampleTile - 1) / kSampleTile));
  product_->launch(g, args, stream);
}

double Fp64Sample::error(const float* c, int64_t ldc, cudaStream_t stream) {
  if (rows_ <= 0 || cols_ <= 0) return 0;
  TUNED_CUDA_CHECK(cudaMemsetAsync(sums_.get(), 0, sums_.bytes(), stream));
  const long long* row_index = indices_.as<long long>();
  const long long* col_index = row_index + rows_;
  long long ld = ldc;
  int nr = rows_, nc = cols_;
  const double* ref = ref_.as<double>();
  double* sums = sums_.as<double>();
  void* args[] = {&c, &ld, &row_index, &nr, &col_index, &nc, &ref, &sums};
  const size_t n = static_cast<size_t>(rows_) * static_cast<size_t>(cols_);
  error_->launch(grid_stride_geometry(n, kThreads, sm_count_), args, stream);
  double host[3];
  TUNED_CUDA_CHECK(cudaMemcpyAsync(host, sums, sizeof(host), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host[2] > 0) return INFINITY;
  return host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
}

}  // namespace tuned::gemm_op
