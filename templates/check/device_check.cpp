#include "templates/check/device_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "templates/template_source.hpp"

namespace tuned {
namespace {

KernelSpec check_spec(const std::string& kernel_name) {
  return template_kernel_spec("check.cu", kernel_name);
}

constexpr int kThreads = 256;  // check.cu's block reduction assumes 256 threads

}  // namespace

std::string MatrixCheck::describe() const {
  char text[192];
  std::snprintf(text, sizeof(text), "rel error %.3g, max abs %.3g, %llu unwritten, %llu NaN/Inf",
                rel_error, max_abs_error, static_cast<unsigned long long>(unwritten),
                static_cast<unsigned long long>(nonfinite));
  std::string out = text;
  if (beyond > 0) {
    out += ", " + std::to_string(beyond) + " beyond the absolute tolerance";
  }
  if (breaks_contract()) {
    std::snprintf(text, sizeof(text),
                  ", error against the exact product %.3g beyond the accuracy contract's %.3g",
                  exact_error, exact_limit);
    out += text;
    if (!exact_inputs.empty()) out += " (" + exact_inputs + ")";
  }
  return out;
}

std::vector<KernelSpec> DeviceCheck::kernel_specs() {
  return {check_spec("tuned_fill_uniform"), check_spec("tuned_fill_wide"),
          check_spec("tuned_compare"), check_spec("tuned_fill_levels_f32"),
          check_spec("tuned_fill_levels_u8")};
}

DeviceCheck::DeviceCheck(KernelCache& kernels, const DeviceInfo& device)
    : kernels_(kernels),
      fill_(kernels.get(check_spec("tuned_fill_uniform"), device)),
      fill_wide_(kernels.get(check_spec("tuned_fill_wide"), device)),
      fill_levels_f32_(kernels.get(check_spec("tuned_fill_levels_f32"), device)),
      fill_levels_u8_(kernels.get(check_spec("tuned_fill_levels_u8"), device)),
      compare_(kernels.get(check_spec("tuned_compare"), device)),
      sm_count_(std::max(1, device.sm_count)),
      scratch_(2 * sizeof(double) + 4 * sizeof(unsigned long long)) {}

LaunchGeometry DeviceCheck::fill_geometry(size_t n) const {
  // Grid-stride loops: enough blocks to fill the GPU, no more than the elements need.
  LaunchGeometry g;
  g.block = dim3(kThreads);
  g.grid = dim3(static_cast<unsigned>(
      std::min<size_t>((n + kThreads - 1) / kThreads, static_cast<size_t>(sm_count_) * 8)));
  return g;
}

void DeviceCheck::fill_uniform(float* p, size_t n, uint64_t seed, float lo, float hi,
                               cudaStream_t stream) {
  if (n == 0) return;
  unsigned long long count = n, s = seed;
  void* args[] = {&p, &count, &s, &lo, &hi};
  fill_->launch(fill_geometry(n), args, stream);
}

void DeviceCheck::fill_wide(float* p, size_t n, int64_t ld, uint64_t seed, int spread,
                            cudaStream_t stream) {
  if (n == 0) return;
  unsigned long long count = n, rows = static_cast<unsigned long long>(std::max<int64_t>(ld, 1)),
                     s = seed;
  void* args[] = {&p, &count, &rows, &s, &spread};
  fill_wide_->launch(fill_geometry(n), args, stream);
}

void DeviceCheck::fill_levels(void* p, size_t n, bool bytes, uint64_t seed, int levels,
                              cudaStream_t stream) {
  if (n == 0) return;
  unsigned long long count = n, s = seed;
  void* args[] = {&p, &count, &s, &levels};
  (bytes ? fill_levels_u8_ : fill_levels_f32_)->launch(fill_geometry(n), args, stream);
}

void DeviceCheck::poison(float* p, size_t n, cudaStream_t stream) {
  if (n > 0) TUNED_CUDA_CHECK(cudaMemsetAsync(p, 0xFF, n * sizeof(float), stream));
}

MatrixCheck DeviceCheck::compare(const float* out, int64_t ld_out, const float* ref,
                                 int64_t ld_ref, int64_t rows, int64_t cols,
                                 cudaStream_t stream, double abs_tolerance) {
  MatrixCheck result;
  if (rows <= 0 || cols <= 0) return result;
  TUNED_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, scratch_.bytes(), stream));
  auto* sums = scratch_.as<double>();
  auto* counts = reinterpret_cast<unsigned long long*>(sums + 2);
  long long ldo = ld_out, ldr = ld_ref, r = rows, c = cols;
  unsigned int poison_bits = kPoisonBits;
  void* args[] = {&out, &ldo, &ref, &ldr, &r, &c, &poison_bits, &abs_tolerance, &sums, &counts};
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  compare_->launch(grid_stride_geometry(n, kThreads, sm_count_), args, stream);
  double host_sums[2];
  unsigned long long host_counts[4];
  TUNED_CUDA_CHECK(
      cudaMemcpyAsync(host_sums, sums, sizeof(host_sums), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA_CHECK(
      cudaMemcpyAsync(host_counts, counts, sizeof(host_counts), cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  result.unwritten = host_counts[0];
  result.nonfinite = host_counts[1];
  result.beyond = host_counts[2];
  std::memcpy(&result.max_abs_error, &host_counts[3], sizeof(double));
  result.rel_error = host_sums[1] > 0 ? std::sqrt(host_sums[0] / host_sums[1])
                                      : std::sqrt(host_sums[0]);
  return result;
}

}  // namespace tuned
