#include "templates/transpose/transpose_task.hpp"

#include <algorithm>

#include "core/cuda_check.hpp"
#include "templates/extent.hpp"
#include "templates/template_source.hpp"

namespace tuned::transpose_op {
TransposeTask::TransposeTask(const DeviceInfo& device, const Problem& problem, DeviceCheck& check)
    : device_(device), problem_(problem), space_(make_space(device, problem)), check_(check) {
  // Odd in both dimensions so every partial-tile path runs; leading dims padded but still
  // multiples of the alignment class, so the candidate's VEC stays valid.
  edge_.rows = 131;
  edge_.cols = 77;
  edge_.alignment = problem.alignment;
  edge_.lda = round_up(edge_.rows, problem.alignment) + problem.alignment;
  edge_.ldb = round_up(edge_.cols, problem.alignment) + 2 * problem.alignment;
}

std::string TransposeTask::template_hash() const { return template_source("transpose.cu").hash; }

void TransposeTask::allocate(const Problem& p, Buffers& b) {
  b.a = DeviceBuffer(column_major_elements(p.lda, p.cols) * sizeof(float));
  b.b = DeviceBuffer(column_major_elements(p.ldb, p.rows) * sizeof(float));
  b.b_ref = DeviceBuffer(column_major_elements(p.ldb, p.rows) * sizeof(float));
}

void TransposeTask::allocate() {
  allocate(problem_, main_);
  allocate(edge_, edge_buffers_);
  copy_ = DeviceBuffer(column_major_elements(problem_.rows, problem_.cols) * sizeof(float));
}

void TransposeTask::fresh_inputs(uint64_t seed, cudaStream_t stream) {
  cublas_.set_stream(stream);
  const float one = 1.0f, zero = 0.0f;
  int part = 0;
  for (auto [p, buffers] : {std::pair{&problem_, &main_}, std::pair{&edge_, &edge_buffers_}}) {
    check_.fill_uniform(buffers->a.as<float>(), buffers->a.bytes() / sizeof(float),
                        seed * 8 + static_cast<uint64_t>(++part), -1.0f, 1.0f, stream);
    // B = 1 * A^T + 0 * B, exact; B zeroed first so nothing of it leaks through 0 * NaN.
    TUNED_CUDA_CHECK(cudaMemsetAsync(buffers->b_ref.get(), 0, buffers->b_ref.bytes(), stream));
    check_cublas(
        cublas().sgeam_64(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, p->cols, p->rows, &one,
                          buffers->a.as<float>(), p->lda, &zero, buffers->b_ref.as<float>(), p->ldb,
                          buffers->b_ref.as<float>(), p->ldb),
        "cublasSgeam_64");
  }
}

MatrixCheck TransposeTask::check_on(const LoadedKernel& kernel, const Config& config,
                                    const Problem& p, Buffers& buffers, cudaStream_t stream) {
  DeviceCheck::poison(buffers.b.as<float>(), buffers.b.bytes() / sizeof(float), stream);
  launch(kernel, config, p, buffers.a.as<float>(), buffers.b.as<float>(), stream);
  return check_.compare(buffers.b.as<float>(), p.ldb, buffers.b_ref.as<float>(), p.ldb, p.cols,
                        p.rows, stream);
}

MatrixCheck TransposeTask::check(const LoadedKernel& kernel, const Config& config,
                                 cudaStream_t stream) {
  MatrixCheck main = check_on(kernel, config, problem_, main_, stream);
  if (!main.passed(tolerance())) return main;
  const MatrixCheck edge = check_on(kernel, config, edge_, edge_buffers_, stream);
  main.add(edge);
  return main;
}

void TransposeTask::run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) {
  launch(kernel, config, problem_, main_.a.as<float>(), main_.b.as<float>(), stream);
}

void TransposeTask::run_baseline(cudaStream_t stream) {
  // The same bytes read and written once, contiguously.
  TUNED_CUDA_CHECK(cudaMemcpyAsync(copy_.get(), main_.a.get(), copy_.bytes(),
                                   cudaMemcpyDeviceToDevice, stream));
}

}  // namespace tuned::transpose_op
