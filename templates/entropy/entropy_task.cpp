#include "templates/entropy/entropy_task.hpp"

#include <algorithm>

#include "core/cuda_check.hpp"
#include "templates/extent.hpp"
#include "templates/template_source.hpp"

namespace tuned::entropy_op {
namespace {

KernelSpec reference_spec(Input input) {
  return template_kernel_spec("entropy_reference.cu",
                              std::string("tuned_entropy_reference_") + variant_name(input));
}

// The largest workspace of any config: the flag, then a table of doubles.
size_t max_workspace_bytes(const Problem& p) {
  return kTableOffset + static_cast<size_t>(window_elements(p.radius)) * sizeof(double);
}

}  // namespace

EntropyTask::EntropyTask(const DeviceInfo& device, const Problem& problem, Input input,
                         DeviceCheck& check)
    : device_(device),
      problem_(problem),
      input_(input),
      space_(make_space(device, problem, input)),
      check_(check),
      reference_(check.kernels().get(reference_spec(input), device)) {
  // Odd in both dimensions (every partial block and clipped window runs), leading dims padded.
  edge_ = problem;
  edge_.rows = 37;
  edge_.cols = 23;
  edge_.ld_in = edge_.rows + 3;
  edge_.ld_out = edge_.rows + 5;
}

std::string EntropyTask::template_hash() const { return template_source("entropy.cu").hash; }

void EntropyTask::allocate(const Problem& p, Buffers& b) {
  b.in = DeviceBuffer(column_major_elements(p.ld_in, p.cols) * input_bytes(input_));
  b.out = DeviceBuffer(column_major_elements(p.ld_out, p.cols) * sizeof(float));
  b.ref = DeviceBuffer(column_major_elements(p.ld_out, p.cols) * sizeof(float));
  b.workspace = DeviceBuffer(max_workspace_bytes(p));
}

void EntropyTask::allocate() {
  allocate(problem_, main_);
  allocate(edge_, edge_buffers_);
}

void EntropyTask::fresh_inputs(uint64_t seed, cudaStream_t stream) {
  seed_ = seed;
  const bool bytes = input_ == Input::kU8;
  check_.fill_levels(main_.in.get(), main_.in.bytes() / input_bytes(input_), bytes, seed * 8 + 1,
                     problem_.levels, stream);
  check_.fill_levels(edge_buffers_.in.get(), edge_buffers_.in.bytes() / input_bytes(input_), bytes,
                     seed * 8 + 2, edge_.levels, stream);
  // The tuned problem's reference on the device.
  long long rows = problem_.rows, cols = problem_.cols, ld_in = problem_.ld_in,
            ld_out = problem_.ld_out;
  int radius = problem_.radius;
  const void* in = main_.in.get();
  float* ref = main_.ref.as<float>();
  void* args[] = {&rows, &cols, &radius, &in, &ld_in, &ref, &ld_out};
  LaunchGeometry g;
  g.block = dim3(128);
  g.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(
      (problem_.rows * problem_.cols + 127) / 128, 1, int64_t{device_.sm_count} * 16)));
  reference_->launch(g, args, stream);
  // The edge problem's reference on the CPU, in double.
  std::vector<unsigned char> host_in(edge_buffers_.in.bytes());
  TUNED_CUDA_CHECK(cudaMemcpyAsync(host_in.data(), edge_buffers_.in.get(), host_in.size(),
                                   cudaMemcpyDeviceToHost, stream));
  TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ref64(column_major_elements(edge_.ld_out, edge_.cols));
  if (bytes) {
    reference(edge_, host_in.data(), ref64.data(), edge_.ld_out);
  } else {
    reference(edge_, reinterpret_cast<const float*>(host_in.data()), ref64.data(), edge_.ld_out);
  }
  std::vector<float> ref32(ref64.begin(), ref64.end());
  TUNED_CUDA_CHECK(cudaMemcpy(edge_buffers_.ref.get(), ref32.data(), ref32.size() * sizeof(float),
                              cudaMemcpyHostToDevice));
}

MatrixCheck EntropyTask::check_on(const LoadedKernel& kernel, const Config& config,
                                  const Problem& p, Buffers& buffers, cudaStream_t stream) {
  DeviceCheck::poison(buffers.out.as<float>(), buffers.out.bytes() / sizeof(float), stream);
  launch(kernel, config, p, buffers.in.get(), buffers.out.as<float>(), buffers.workspace.get(),
         stream);
  return check_.compare(buffers.out.as<float>(), p.ld_out, buffers.ref.as<float>(), p.ld_out,
                        p.rows, p.cols, stream, kTolerance);
}

MatrixCheck EntropyTask::check(const LoadedKernel& kernel, const Config& config,
                               cudaStream_t stream) {
  MatrixCheck main = check_on(kernel, config, problem_, main_, stream);
  if (!main.passed(tolerance())) return main;
  main.add(check_on(kernel, config, edge_, edge_buffers_, stream));
  return main;
}

void EntropyTask::run(const LoadedKernel& kernel, const Config& config, cudaStream_t stream) {
  launch(kernel, config, problem_, main_.in.get(), main_.out.as<float>(), main_.workspace.get(),
         stream);
}

void EntropyTask::run_baseline(cudaStream_t stream) {
  if (host_seed_ != seed_) {  // the inputs changed since the last copy
    host_in_.resize(main_.in.bytes());
    host_out_.resize(column_major_elements(problem_.ld_out, problem_.cols));
    TUNED_CUDA_CHECK(cudaMemcpyAsync(host_in_.data(), main_.in.get(), host_in_.size(),
                                     cudaMemcpyDeviceToHost, stream));
    TUNED_CUDA_CHECK(cudaStreamSynchronize(stream));
    host_seed_ = seed_;
  }
  // Host memory to host memory, while the stream is idle (its events bracket the CPU's time).
  const CpuMethod method = default_cpu_method(problem_);
  if (input_ == Input::kU8) {
    run_cpu(method, problem_, host_in_.data(), host_out_.data());
  } else {
    run_cpu(method, problem_, reinterpret_cast<const float*>(host_in_.data()), host_out_.data());
  }
}

double EntropyTask::work() const {
  return static_cast<double>(problem_.rows) * static_cast<double>(problem_.cols) *
         static_cast<double>(input_bytes(input_) + sizeof(float));
}

}  // namespace tuned::entropy_op
