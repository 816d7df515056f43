// Local entropy on 1 GPU, on 2 GPUs (where the machine has them) and on the CPU, sizes 400^2,
// 2560^2, 10240^2, 20480^2 (r = 2, L = 16, FP32 input; more with --sizes): the kernel's time on
// device data (the tuned kernel alone, events around its launch), the device call's time (the
// values checked on the device, then the kernel), and the end-to-end time from pageable host input
// to host output (wall clock, median of runs after a warm-up), next to plain pageable copies around
// the same call for scale. Every result is compared with the CPU path's (itself tested against the
// double-precision reference) and must be within 1e-5.
//
// The split over 2 GPUs is judged against the best one-GPU figures ("split" rows):
//   kernel: one GPU's single launch on the whole problem on device data, FP32 input and packed
//     bytes (the host path's kernel), the faster of the two; against each GPU computing its band of
//     columns (with its halo) on device data in one launch, both GPUs at once with the config
//     chosen on GPU 0, the slower GPU's time (the faster variant of the two).
//   end to end: the better of one GPU's host path and plain pageable copies around the device call;
//     against the host path on 2 GPUs.
//   bit-identical: the 2-GPU host path's output against the 1-GPU host path's, and each variant's
//     split output against its single launch's, byte for byte.
// Writes bench/results/entropy_<device>.json: {"device", "rows": [{"rows", "cols", "radius",
// "levels", "path", "gpus", "kernel_ms", "end_to_end_ms", ...}], "splits": [{"rows", ...}]}.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "api/runtime.hpp"
#include "core/cuda_raii.hpp"
#include "templates/entropy/entropy_descriptor.hpp"
#include "tuned/tuned.hpp"

namespace {

using tuned::entropy_op::Input;
using tuned::entropy_op::Problem;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

template <typename Run>
double wall_ms(Run run, int runs) {
  run();  // warm-up: first-touch, staging buffers, kernel load
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  return median(ms);
}

struct Row {
  int64_t rows, cols;
  int radius, levels;
  std::string path;
  int gpus = 0;
  double kernel_ms = -1, call_ms = -1, end_to_end_ms = -1, plain_copies_ms = -1;
  double split_kernel_ms = -1;  // the host path's kernels, summed over chunks, slowest GPU
  double max_abs_diff = 0;
  std::string config;
};

// One size's 2-GPU split against the best one-GPU figures (see the top of the file).
struct Split {
  int64_t n = 0;
  double one_kernel_f32 = -1, one_kernel_u8 = -1;       // single launch, 1 GPU, device data
  double two_kernel_f32 = -1, two_kernel_u8 = -1;       // slower GPU's band, both at once
  double one_host = -1, one_plain = -1, two_host = -1;  // end to end
  bool identical_host = false, identical_f32 = false, identical_u8 = false;
  double one_kernel() const { return std::min(one_kernel_f32, one_kernel_u8); }
  double two_kernel() const { return std::min(two_kernel_f32, two_kernel_u8); }
  double one_end_to_end() const { return std::min(one_host, one_plain); }
  bool identical() const { return identical_host && identical_f32 && identical_u8; }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
  }
  return worst;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

size_t bytes_of(Input input) { return tuned::entropy_op::input_bytes(input); }

// The tuned kernel alone on device data of GPU 0: the runtime's choice, events around its launch
// only. out (device) holds the result.
double kernel_ms(const Problem& p, Input input, const void* in, float* out, int runs,
                 std::string* config) {
  const auto& op = tuned::find_op("entropy");
  const tuned::ProblemId id = tuned::entropy_op::problem_id(p, input);
  tuned::Stream stream = tuned::Stream::create();
  std::vector<double> ms;
  for (int r = 0; r <= runs; ++r) {
    tuned::Runtime::instance().run(
        op, id,
        [&](const tuned::LoadedKernel& kernel, const tuned::Config& c, void* workspace,
            cudaStream_t s) {
          tuned::Event start = tuned::Event::create(), stop = tuned::Event::create();
          start.record(s);
          tuned::entropy_op::launch(kernel, c, p, in, out, workspace, s);
          stop.record(s);
          if (r > 0) ms.push_back(stop.elapsed_since(start));  // run 0 warms up
          *config = c.canonical();
        },
        stream.get());
  }
  stream.synchronize();
  return median(ms);
}

// The problem split over `gpus` GPUs on device data: each GPU holds its band's input columns (with
// the halo) and computes its band in one launch, all GPUs at once, with the config chosen on GPU 0
// (as the host path does). Returns the median over runs of the slowest GPU's kernel time; `out`
// (host, ld = rows) gets the bands' results. host_in: the whole input, ld = rows.
double split_kernel_ms(const Problem& p, Input input, const void* host_in, int gpus, int runs,
                       std::vector<float>& out) {
  const auto& op = tuned::find_op("entropy");
  const tuned::ProblemId id = tuned::entropy_op::problem_id(p, input);
  const size_t column_in = static_cast<size_t>(p.rows) * bytes_of(input);
  const size_t column_out = static_cast<size_t>(p.rows) * sizeof(float);
  struct Gpu {
    int64_t b0, b1, h0;
    tuned::DeviceBuffer in, out, workspace;
    tuned::Stream stream;
    std::shared_ptr<const tuned::LoadedKernel> kernel;
  };
  std::vector<Gpu> on(static_cast<size_t>(gpus));
  cudaSetDevice(0);
  tuned::Config config;
  {
    tuned::Stream stream = tuned::Stream::create();
    config = tuned::Runtime::instance().choice(op, id, stream.get());
  }
  for (int g = 0; g < gpus; ++g) {
    Gpu& d = on[static_cast<size_t>(g)];
    cudaSetDevice(g);
    d.b0 = p.cols * g / gpus;
    d.b1 = p.cols * (g + 1) / gpus;
    d.h0 = std::max<int64_t>(0, d.b0 - p.radius);
    const int64_t h1 = std::min(p.cols, d.b1 + p.radius);
    d.in = tuned::DeviceBuffer(column_in * static_cast<size_t>(h1 - d.h0));
    d.out = tuned::DeviceBuffer(column_out * static_cast<size_t>(d.b1 - d.b0));
    d.workspace = tuned::DeviceBuffer(tuned::entropy_op::workspace_bytes(config, p));
    d.stream = tuned::Stream::create();
    d.kernel = tuned::Runtime::instance().kernel(op, id, config);
    cudaMemcpy(d.in.get(), static_cast<const uint8_t*>(host_in) + d.h0 * column_in,
               column_in * static_cast<size_t>(h1 - d.h0), cudaMemcpyHostToDevice);
  }
  std::vector<double> slowest;
  for (int r = 0; r <= runs; ++r) {  // run 0 warms up
    std::vector<tuned::Event> start, stop;
    for (int g = 0; g < gpus; ++g) {  // launched back to back: the GPUs run at once
      Gpu& d = on[static_cast<size_t>(g)];
      cudaSetDevice(g);
      start.push_back(tuned::Event::create());
      stop.push_back(tuned::Event::create());
      start.back().record(d.stream.get());
      tuned::entropy_op::launch_columns(*d.kernel, config, p,
                                        tuned::entropy_op::Band{d.b0, d.b1, d.h0, d.b0}, d.in.get(),
                                        d.out.as<float>(), d.workspace.get(), d.stream.get());
      stop.back().record(d.stream.get());
    }
    double worst = 0;
    for (int g = 0; g < gpus; ++g) {
      cudaSetDevice(g);
      const size_t i = static_cast<size_t>(g);
      worst = std::max(worst, static_cast<double>(stop[i].elapsed_since(start[i])));
    }
    if (r > 0) slowest.push_back(worst);
  }
  out.assign(static_cast<size_t>(p.rows) * static_cast<size_t>(p.cols), NAN);
  for (int g = 0; g < gpus; ++g) {
    Gpu& d = on[static_cast<size_t>(g)];
    cudaSetDevice(g);
    cudaMemcpy(out.data() + d.b0 * p.rows, d.out.get(),
               column_out * static_cast<size_t>(d.b1 - d.b0), cudaMemcpyDeviceToHost);
  }
  cudaSetDevice(0);
  return median(slowest);
}

struct Options {
  std::vector<int64_t> sizes = {400, 2560, 10240, 20480};
  int radius = 2, levels = 16, runs = 10;
  std::string json;
};

// One size's measurements (see the top of the file): its random input, FP32 and the same values
// as bytes, and the CPU path's output every result is compared with.
class SizeBench {
 public:
  SizeBench(int64_t n, const Options& opt, int devices, std::mt19937& rng);
  // Adds the size's rows (CPU, 1 GPU, 2 GPUs) and, where there are 2 GPUs, its split.
  void run(std::vector<Row>& rows, std::vector<Split>& splits);

 private:
  Row cpu_path();
  // 1 GPU (and where there are 2, the split over them) on device data; returns the 1-GPU row.
  Row on_device();
  Row one_gpu_on_device(std::vector<float>& single_f32, std::vector<float>& single_u8);
  void two_gpus_on_device(const std::vector<float>& single_f32,
                          const std::vector<float>& single_u8);
  void host_paths(const Row& one, std::vector<Row>& rows);

  const int64_t n_;
  const int radius_, levels_, runs_, devices_;
  const Problem p_;
  const size_t elements_;
  std::vector<float> in_, cpu_out_, gpu_out_;
  std::vector<uint8_t> in8_;  // the same values as bytes
  int cpu_runs_;
  Split split_;
  tuned::EntropyReport report_;
};

SizeBench::SizeBench(int64_t n, const Options& opt, int devices, std::mt19937& rng)
    : n_(n),
      radius_(opt.radius),
      levels_(opt.levels),
      runs_(opt.runs),
      devices_(devices),
      p_(tuned::entropy_op::packed_problem(n, n, opt.radius, opt.levels)),
      elements_(static_cast<size_t>(n) * static_cast<size_t>(n)),
      in_(elements_),
      cpu_out_(elements_),
      gpu_out_(elements_) {
  std::uniform_int_distribution<int> level(0, levels_ - 1);
  for (auto& x : in_) x = static_cast<float>(level(rng));
  in8_.resize(elements_);
  for (size_t e = 0; e < elements_; ++e) in8_[e] = static_cast<uint8_t>(in_[e]);
  cpu_runs_ = n >= 20480 ? 1 : n >= 10240 ? 3 : runs_;
  split_.n = n;
}

void SizeBench::run(std::vector<Row>& rows, std::vector<Split>& splits) {
  rows.push_back(cpu_path());
  const Row one = on_device();
  host_paths(one, rows);
  std::fflush(stdout);
  if (devices_ >= 2) splits.push_back(split_);
}

Row SizeBench::cpu_path() {
  Row cpu{n_, n_, radius_, levels_, "cpu", 0};
  tuned::EntropyOptions cpu_options;
  cpu_options.path = tuned::EntropyPath::kCpu;
  cpu.end_to_end_ms = wall_ms(
      [&] {
        tuned::entropy_host(n_, n_, radius_, levels_, in_.data(), n_, cpu_out_.data(), n_,
                            cpu_options, &report_);
      },
      cpu_runs_);
  cpu.config = report_.path;
  return cpu;
}

Row SizeBench::on_device() {
  cudaSetDevice(0);
  // Each variant's single-launch output, which its split output must equal byte for byte.
  std::vector<float> single_f32(elements_), single_u8(elements_);
  const Row one = one_gpu_on_device(single_f32, single_u8);
  if (devices_ >= 2) two_gpus_on_device(single_f32, single_u8);
  return one;
}

// 1 GPU on device data: the kernel alone (FP32 input and bytes), and the whole call.
Row SizeBench::one_gpu_on_device(std::vector<float>& single_f32, std::vector<float>& single_u8) {
  float *d_in = nullptr, *d_out = nullptr;
  uint8_t* d_in8 = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&d_in), elements_ * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&d_in8), elements_);
  cudaMalloc(reinterpret_cast<void**>(&d_out), elements_ * sizeof(float));
  cudaMemcpy(d_in, in_.data(), elements_ * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_in8, in8_.data(), elements_, cudaMemcpyHostToDevice);
  Row one{n_, n_, radius_, levels_, "gpu", 1};
  std::string config_u8;
  split_.one_kernel_u8 = kernel_ms(p_, Input::kU8, d_in8, d_out, runs_, &config_u8);
  cudaMemcpy(single_u8.data(), d_out, elements_ * sizeof(float), cudaMemcpyDeviceToHost);
  one.kernel_ms = kernel_ms(p_, Input::kF32, d_in, d_out, runs_, &one.config);
  cudaMemcpy(single_f32.data(), d_out, elements_ * sizeof(float), cudaMemcpyDeviceToHost);
  split_.one_kernel_f32 = one.kernel_ms;
  one.call_ms = wall_ms(
      [&] {
        tuned::entropy(n_, n_, radius_, levels_, d_in, n_, d_out, n_);
        cudaDeviceSynchronize();
      },
      runs_);
  // Plain copies: pageable input to the device, the call, pageable output back.
  one.plain_copies_ms = wall_ms(
      [&] {
        cudaMemcpy(d_in, in_.data(), elements_ * sizeof(float), cudaMemcpyHostToDevice);
        tuned::entropy(n_, n_, radius_, levels_, d_in, n_, d_out, n_);
        cudaMemcpy(gpu_out_.data(), d_out, elements_ * sizeof(float), cudaMemcpyDeviceToHost);
      },
      std::min(runs_, 5));
  split_.one_plain = one.plain_copies_ms;
  cudaFree(d_in);
  cudaFree(d_in8);
  cudaFree(d_out);
  return one;
}

// 2 GPUs on device data: each its band in one launch, both at once.
void SizeBench::two_gpus_on_device(const std::vector<float>& single_f32,
                                   const std::vector<float>& single_u8) {
  std::vector<float> banded;
  split_.two_kernel_f32 = split_kernel_ms(p_, Input::kF32, in_.data(), 2, runs_, banded);
  split_.identical_f32 = same_bytes(banded, single_f32);
  split_.two_kernel_u8 = split_kernel_ms(p_, Input::kU8, in8_.data(), 2, runs_, banded);
  split_.identical_u8 = same_bytes(banded, single_u8);
}

// End to end through the pinned, chunked host path, on 1 and 2 GPUs.
void SizeBench::host_paths(const Row& one, std::vector<Row>& rows) {
  std::vector<float> host_one;
  for (int gpus = 1; gpus <= std::min(devices_, 2); ++gpus) {
    tuned::EntropyOptions options;
    options.path = tuned::EntropyPath::kGpu;
    options.gpus = gpus;
    std::fill(gpu_out_.begin(), gpu_out_.end(), NAN);
    Row row = gpus == 1 ? one : Row{n_, n_, radius_, levels_, "gpu", gpus};
    row.end_to_end_ms = wall_ms(
        [&] {
          tuned::entropy_host(n_, n_, radius_, levels_, in_.data(), n_, gpu_out_.data(), n_,
                              options, &report_);
        },
        runs_);
    row.split_kernel_ms = report_.kernel_ms;          // the same measure for 1 and 2 GPUs
    if (gpus > 1) row.kernel_ms = report_.kernel_ms;  // the slowest GPU's share
    row.max_abs_diff = max_abs_diff(gpu_out_, cpu_out_);
    std::printf(
        "  %s: host path kernel %.3f ms (summed over chunks), checking and packing %.2f ms "
        "(overlapped with the uploads)\n",
        (std::to_string(n_) + "^2 " + std::to_string(gpus) + " GPU").c_str(), report_.kernel_ms,
        report_.pack_ms);
    if (gpus == 1) {
      split_.one_host = row.end_to_end_ms;
      host_one = gpu_out_;
    } else {
      split_.two_host = row.end_to_end_ms;
      split_.identical_host = same_bytes(gpu_out_, host_one);
    }
    rows.push_back(row);
  }
}

// The rows' table and the splits' lines; returns whether every result is within 1e-5 of the CPU
// path's and every split bit-identical.
bool print_results(const std::vector<Row>& rows, const std::vector<Split>& splits) {
  std::printf("%-13s %-12s %4s %10s %10s %12s %12s %10s  %s\n", "shape", "path", "gpus",
              "kernel_ms", "call_ms", "end_to_end", "plain_copies", "max_diff", "config");
  bool ok = true;
  for (const Row& r : rows) {
    std::printf("%-13s %-12s %4d %10.3f %10.3f %12.2f %12.2f %10.2g  %s\n",
                (std::to_string(r.rows) + "x" + std::to_string(r.cols)).c_str(), r.path.c_str(),
                r.gpus, r.kernel_ms, r.call_ms, r.end_to_end_ms, r.plain_copies_ms, r.max_abs_diff,
                r.config.c_str());
    ok = ok && r.max_abs_diff <= 1e-5;
  }
  if (splits.empty()) std::printf("split: not measured (1 GPU visible)\n");
  for (const Split& s : splits) {
    std::printf(
        "split %lldx%lld: kernel 1 GPU %.3f ms (f32 %.3f, u8 %.3f) -> 2 GPUs %.3f ms (f32 %.3f, "
        "u8 %.3f) = %.3fx; end to end 1 GPU %.2f ms (host path %.2f, plain copies %.2f) -> 2 GPUs "
        "%.2f ms = %.3fx; bit-identical %s\n",
        static_cast<long long>(s.n), static_cast<long long>(s.n), s.one_kernel(), s.one_kernel_f32,
        s.one_kernel_u8, s.two_kernel(), s.two_kernel_f32, s.two_kernel_u8,
        s.two_kernel() / s.one_kernel(), s.one_end_to_end(), s.one_host, s.one_plain, s.two_host,
        s.two_host / s.one_end_to_end(), s.identical() ? "yes" : "NO");
    ok = ok && s.identical();
  }
  std::printf("%s\n", ok ? "ALL WITHIN 1e-5 OF THE CPU PATH" : "MISMATCH");
  return ok;
}

void write_json(const std::string& path, const char* device, int devices,
                const std::vector<Row>& rows, const std::vector<Split>& splits) {
  std::ofstream f(path);
  auto num = [](double v) { return v < 0 ? std::string("null") : std::to_string(v); };
  f << "{\"device\": \"" << device << "\", \"devices\": " << devices << ", \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    f << "  {\"rows\": " << r.rows << ", \"cols\": " << r.cols << ", \"radius\": " << r.radius
      << ", \"levels\": " << r.levels << ", \"path\": \"" << r.path << "\", \"gpus\": " << r.gpus
      << ", \"kernel_ms\": " << num(r.kernel_ms) << ", \"end_to_end_ms\": " << num(r.end_to_end_ms)
      << ", \"call_ms\": " << num(r.call_ms) << ", \"plain_copies_ms\": " << num(r.plain_copies_ms)
      << ", \"split_kernel_ms\": " << num(r.split_kernel_ms)
      << ", \"max_abs_diff\": " << r.max_abs_diff << ", \"config\": \"" << r.config << "\"}"
      << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  f << "], \"splits\": [\n";
  for (size_t i = 0; i < splits.size(); ++i) {
    const Split& s = splits[i];
    f << "  {\"rows\": " << s.n << ", \"cols\": " << s.n
      << ", \"one_gpu_kernel_ms\": " << num(s.one_kernel())
      << ", \"one_gpu_kernel_f32_ms\": " << num(s.one_kernel_f32)
      << ", \"one_gpu_kernel_u8_ms\": " << num(s.one_kernel_u8)
      << ", \"two_gpu_kernel_ms\": " << num(s.two_kernel())
      << ", \"two_gpu_kernel_f32_ms\": " << num(s.two_kernel_f32)
      << ", \"two_gpu_kernel_u8_ms\": " << num(s.two_kernel_u8)
      << ", \"kernel_ratio\": " << num(s.two_kernel() / s.one_kernel())
      << ", \"one_gpu_end_to_end_ms\": " << num(s.one_end_to_end())
      << ", \"one_gpu_host_path_ms\": " << num(s.one_host)
      << ", \"one_gpu_plain_copies_ms\": " << num(s.one_plain)
      << ", \"two_gpu_end_to_end_ms\": " << num(s.two_host)
      << ", \"end_to_end_ratio\": " << num(s.two_host / s.one_end_to_end())
      << ", \"bit_identical\": " << (s.identical() ? "true" : "false") << "}"
      << (i + 1 < splits.size() ? ",\n" : "\n");
  }
  f << "]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Local entropy: 1 GPU, 2 GPUs, CPU; kernel and end-to-end times"};
  Options opt;
  app.add_option("--sizes", opt.sizes, "square sizes (comma-separated or repeated)")
      ->delimiter(',');
  app.add_option("--radius", opt.radius);
  app.add_option("--levels", opt.levels);
  app.add_option("--runs", opt.runs, "timed runs per measurement (median)");
  app.add_option("--json", opt.json, "write the results here");
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "entropy bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::vector<Row> rows;
  std::vector<Split> splits;
  std::mt19937 rng(2026);
  for (const int64_t n : opt.sizes) SizeBench(n, opt, devices, rng).run(rows, splits);
  const bool ok = print_results(rows, splits);
  if (!opt.json.empty()) write_json(opt.json, prop.name, devices, rows, splits);
  return ok ? 0 : 1;
}
