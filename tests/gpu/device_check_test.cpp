// The device-side verification itself: the comparison must see wrong values, unwritten elements
// and NaN, with leading dimensions larger than the rows, or every kernel check built on it is blind.
#include "templates/check/device_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "generator/device.hpp"
#include "gpu_test_util.hpp"

namespace tuned {
namespace {

TEST(DeviceCheckCompare, SeesWrongValuesUnwrittenElementsAndNaN) {
  TUNED_REQUIRE_GPU();
  const DeviceInfo device = query_device(0);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  KernelCache kernels;
  DeviceCheck check(kernels, device);
  Stream stream = Stream::create();
  const int64_t rows = 1000, cols = 301, ld = 1003;
  const size_t n = static_cast<size_t>(ld * cols);
  DeviceBuffer out(n * sizeof(float)), ref(n * sizeof(float));
  check.fill_uniform(ref.as<float>(), n, 7, -1.0f, 1.0f, stream.get());

  // Identical: no error.
  TUNED_CUDA_CHECK(cudaMemcpyAsync(out.get(), ref.get(), n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream.get()));
  MatrixCheck same = check.compare(out.as<float>(), ld, ref.as<float>(), ld, rows, cols, stream.get());
  EXPECT_EQ(same.rel_error, 0.0);
  EXPECT_EQ(same.unwritten, 0u);

  // One element off by 1: the error is 1 / ||ref||, computed on the host here.
  std::vector<float> host(n);
  TUNED_CUDA_CHECK(cudaMemcpy(host.data(), ref.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
  double norm2 = 0;
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) norm2 += double(host[c * ld + r]) * host[c * ld + r];
  const float changed = host[5 * ld + 17] + 1.0f;
  TUNED_CUDA_CHECK(cudaMemcpy(out.as<float>() + 5 * ld + 17, &changed, sizeof(float),
                              cudaMemcpyHostToDevice));
  MatrixCheck one = check.compare(out.as<float>(), ld, ref.as<float>(), ld, rows, cols, stream.get());
  EXPECT_NEAR(one.rel_error, 1.0 / std::sqrt(norm2), 1e-3 / std::sqrt(norm2));
  EXPECT_FALSE(one.passed(1e-5));

  // Unrelated data: error of order 1.
  check.fill_uniform(out.as<float>(), n, 8, -1.0f, 1.0f, stream.get());
  MatrixCheck other = check.compare(out.as<float>(), ld, ref.as<float>(), ld, rows, cols, stream.get());
  EXPECT_GT(other.rel_error, 0.5);

  // Poison and NaN are counted, and padding rows (r >= rows) are ignored.
  TUNED_CUDA_CHECK(cudaMemcpyAsync(out.get(), ref.get(), n * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream.get()));
  DeviceCheck::poison(out.as<float>() + 3 * ld, 10, stream.get());
  DeviceCheck::poison(out.as<float>() + 4 * ld + rows, ld - rows, stream.get());  // padding
  const float nan = std::nanf("");
  TUNED_CUDA_CHECK(cudaMemcpy(out.as<float>() + 9 * ld + 2, &nan, sizeof(float),
                              cudaMemcpyHostToDevice));
  MatrixCheck bad = check.compare(out.as<float>(), ld, ref.as<float>(), ld, rows, cols, stream.get());
  EXPECT_EQ(bad.unwritten, 10u);
  EXPECT_EQ(bad.nonfinite, 1u);
  EXPECT_FALSE(bad.passed(1.0));
}

}  // namespace
}  // namespace tuned
