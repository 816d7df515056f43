#include "api/entropy_api.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "api/runtime.hpp"
#include "cache/database.hpp"
#include "generator/cuda_check.hpp"
#include "generator/cuda_raii.hpp"
#include "templates/entropy/entropy_face.hpp"
#include "templates/extent.hpp"
#include "tuned/error.hpp"

namespace tuned::api {
namespace {

using entropy_op::Input;
using entropy_op::Problem;

const OpRegistration& entropy_registration() {
  static const OpRegistration& op = find_op("entropy");
  return op;
}

// Arguments of any entropy call: the problem's rules, pointers set where there is work, and in
// and out not overlapping (the filter is out of place).
void validate_call(const Problem& p, Input input, const void* in, const float* out) {
  entropy_op::validate_problem(p);
  if (p.rows == 0 || p.cols == 0) return;
  require_argument(in != nullptr, "in", "must not be NULL when rows and cols are > 0");
  require_argument(out != nullptr, "out", "must not be NULL when rows and cols are > 0");
  require_argument(!operands_overlap(in, p.rows, p.cols, p.ld_in, entropy_op::input_bytes(input),
                                     out, p.rows, p.cols, p.ld_out, sizeof(float)),
                   "out", "must not overlap in (the filter is out of place)");
}

// ---- Host path ---------------------------------------------------------------------------------

// Output bytes per chunk of a band: large enough that a launch fills the GPU, small enough that
// the first copies start early.
constexpr size_t kChunkBytes = size_t{16} << 20;
constexpr int kSlots = 3;  // chunks in flight per GPU

// One GPU's streams and buffers, kept for the process and grown as needed.
struct Lane {
  Stream h2d, d2h;
  DeviceBuffer in;  // the band's packed input with its halo
  DeviceBuffer out[kSlots];
  PinnedBuffer host_out[kSlots];
};

struct Staging {
  std::mutex mutex;      // one host call at a time uses the buffers
  PinnedBuffer packed;   // the whole input as bytes, column-major with ld = rows
  std::map<int, std::unique_ptr<Lane>> lanes;
};

Staging& staging() {
  static Staging* s = new Staging;  // never destroyed: the CUDA runtime may be gone at exit
  return *s;
}

template <typename Buffer>
void ensure(Buffer& b, size_t bytes) {
  if (b.bytes() < bytes) {
    b = Buffer();  // free first: the old and new buffers need not both fit
    b = Buffer(bytes);
  }
}

// Packs the input into bytes (ld = rows), checking every value on the way; when one is bad,
// validate_values names the first in column-major order. Nothing of the output is touched.
template <typename T>
void pack(const Problem& p, const T* in, uint8_t* packed) {
  // Locals, not p's members: the byte stores may alias anything, which would make the compiler
  // reload p.rows every iteration and give up vectorizing.
  const int64_t rows = p.rows, cols = p.cols, ld_in = p.ld_in;
  const int int_levels = p.levels;
  const float levels = static_cast<float>(p.levels);
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t j = 0; j < cols; ++j) {
    const T* __restrict__ column = in + j * ld_in;
    uint8_t* __restrict__ dst = packed + j * rows;
    int column_bad = 0;
    // Branch-free, so the compiler vectorizes it: this pass runs at memory speed.
    for (int64_t i = 0; i < rows; ++i) {
      const T v = column[i];
      if constexpr (std::is_same_v<T, float>) {
        // An integer in [0, 2^23) plus 2^23 lands in the mantissa's low bits, exactly; a value
        // that is not an integer rounds, which the subtraction shows. NaN fails every compare.
        const float shifted = v + 8388608.0f;
        uint32_t bits;
        std::memcpy(&bits, &shifted, sizeof(bits));
        column_bad += static_cast<int>((v >= 0.0f) & (v < levels) & (shifted - 8388608.0f == v)) ^ 1;
        dst[i] = static_cast<uint8_t>(bits - 0x4B000000u);
      } else {
        column_bad += v >= int_levels;
        dst[i] = v;
      }
    }
    bad += column_bad;
  }
  if (bad > 0) entropy_op::validate_values(p, in);  // throws naming the first bad element
}

// One GPU's band of output columns [b0, b1): its input columns (with halo) uploaded in step with
// the chunks, each chunk computed into a device slot, downloaded into a pinned slot and copied out
// by `threads` host threads while the next chunks run. Returns the summed kernel time.
double run_band(Lane& lane, const LoadedKernel& kernel, const Config& config, void* workspace,
                cudaStream_t compute, const Problem& p, const uint8_t* packed, int64_t b0,
                int64_t b1, float* out, int threads) {
  const int64_t h0 = std::max<int64_t>(0, b0 - p.radius), h1 = std::min(p.cols, b1 + p.radius);
  const size_t column_in = static_cast<size_t>(p.rows), column_out = column_in * sizeof(float);
  ensure(lane.in, column_in * static_cast<size_t>(h1 - h0));
  const int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / column_out), 1, b1 - b0);
  for (int s = 0; s < kSlots; ++s) {
    ensure(lane.out[s], column_out * static_cast<size_t>(chunk));
    ensure(lane.host_out[s], column_out * static_cast<size_t>(chunk));
  }
  // The kernel reads bytes with ld = rows; its output slot has ld = rows too.
  Problem packed_problem = p;
  packed_problem.ld_in = p.rows;
  packed_problem.ld_out = p.rows;

  const int64_t chunks = (b1 - b0 + chunk - 1) / chunk;
  std::vector<Event> uploaded, kernel_start, kernel_end, downloaded;
  for (int64_t k = 0; k < chunks; ++k) {
    uploaded.push_back(Event::create());
    kernel_start.push_back(Event::create());
    kernel_end.push_back(Event::create());
    downloaded.push_back(Event::create());
  }
  auto drain = [&](int64_t k) {  // chunk k's output, from its pinned slot to the caller's memory
    TUNED_CUDA_CHECK(cudaEventSynchronize(downloaded[k].get()));
    const int64_t c0 = b0 + k * chunk, c1 = std::min(b1, c0 + chunk);
    const float* src = lane.host_out[k % kSlots].as<float>();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t j = c0; j < c1; ++j) {
      std::memcpy(out + j * p.ld_out, src + (j - c0) * p.rows, column_out);
    }
  };
  int64_t uploaded_to = h0;
  for (int64_t k = 0; k < chunks; ++k) {
    const int64_t c0 = b0 + k * chunk, c1 = std::min(b1, c0 + chunk);
    const int64_t need = std::min(p.cols, c1 + p.radius);
    if (need > uploaded_to) {
      TUNED_CUDA_CHECK(cudaMemcpyAsync(lane.in.as<uint8_t>() + (uploaded_to - h0) * column_in,
                                       packed + uploaded_to * column_in,
                                       static_cast<size_t>(need - uploaded_to) * column_in,
                                       cudaMemcpyHostToDevice, lane.h2d.get()));
      uploaded_to = need;
    }
    uploaded[k].record(lane.h2d.get());
    TUNED_CUDA_CHECK(cudaStreamWaitEvent(compute, uploaded[k].get(), 0));
    kernel_start[k].record(compute);
    entropy_op::launch_columns(kernel, config, packed_problem, entropy_op::Band{c0, c1, h0, c0},
                               lane.in.get(), lane.out[k % kSlots].as<float>(), workspace, compute);
    kernel_end[k].record(compute);
    TUNED_CUDA_CHECK(cudaStreamWaitEvent(lane.d2h.get(), kernel_end[k].get(), 0));
    TUNED_CUDA_CHECK(cudaMemcpyAsync(lane.host_out[k % kSlots].get(), lane.out[k % kSlots].get(),
                                     static_cast<size_t>(c1 - c0) * column_out,
                                     cudaMemcpyDeviceToHost, lane.d2h.get()));
    downloaded[k].record(lane.d2h.get());
    // Slot k + 1 - kSlots is needed next: copy its chunk out now.
    if (k + 1 >= kSlots) drain(k + 1 - kSlots);
  }
  for (int64_t k = std::max<int64_t>(0, chunks + 1 - kSlots); k < chunks; ++k) drain(k);
  double kernel_ms = 0;
  for (int64_t k = 0; k < chunks; ++k) kernel_ms += kernel_end[k].elapsed_since(kernel_start[k]);
  return kernel_ms;
}

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void run_gpus(const Problem& p, Input input, const void* in, float* out, int gpus,
              EntropyReport& report) {
  Staging& st = staging();
  std::lock_guard<std::mutex> lock(st.mutex);
  const auto started = std::chrono::steady_clock::now();
  ensure(st.packed, static_cast<size_t>(p.rows) * static_cast<size_t>(p.cols));
  auto* packed = st.packed.as<uint8_t>();
  if (input == Input::kU8) {
    pack(p, static_cast<const uint8_t*>(in), packed);
  } else {
    pack(p, static_cast<const float*>(in), packed);
  }
  report.pack_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();

  // Bands of whole columns (contiguous in column-major memory: the row split of a row-major
  // image), each GPU on its own host thread.
  const int bands = static_cast<int>(std::min<int64_t>(gpus, p.cols));
  int caller_device = 0;
  TUNED_CUDA_CHECK(cudaGetDevice(&caller_device));
  const int threads = std::max(1, omp_get_max_threads() / bands);
  std::vector<double> kernel_ms(static_cast<size_t>(bands), 0.0);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(bands));
  const ProblemId id = entropy_op::problem_id(p, Input::kU8);
  auto band = [&](int g) {
    try {
      TUNED_CUDA_CHECK(cudaSetDevice(g));
      Lane* lane = st.lanes.at(g).get();  // created below, before the threads start
      const int64_t b0 = p.cols * g / bands, b1 = p.cols * (g + 1) / bands;
      Stream compute = Stream::create();
      Runtime::instance().run(
          entropy_registration(), id,
          [&](const LoadedKernel& kernel, const Config& config, void* workspace, cudaStream_t s) {
            kernel_ms[static_cast<size_t>(g)] =
                run_band(*lane, kernel, config, workspace, s, p, packed, b0, b1, out, threads);
          },
          compute.get());
      compute.synchronize();
    } catch (...) {
      errors[static_cast<size_t>(g)] = std::current_exception();
    }
  };
  for (int g = 0; g < bands; ++g) {  // lanes created here, before the threads share the map
    auto& lane = st.lanes[g];
    if (!lane) {
      TUNED_CUDA_CHECK(cudaSetDevice(g));
      lane = std::make_unique<Lane>();
      lane->h2d = Stream::create();
      lane->d2h = Stream::create();
    }
  }
  std::vector<std::thread> workers;
  for (int g = 1; g < bands; ++g) workers.emplace_back(band, g);
  band(0);
  for (auto& w : workers) w.join();
  TUNED_CUDA_CHECK(cudaSetDevice(caller_device));
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  report.path = "gpu";
  report.gpus = bands;
  report.kernel_ms = *std::max_element(kernel_ms.begin(), kernel_ms.end());
}

}  // namespace

void entropy(const Problem& p, Input input, const void* in, float* out, cudaStream_t stream) {
  validate_call(p, input, in, out);
  if (p.rows == 0 || p.cols == 0) return;
  Runtime::instance().run(
      entropy_registration(), entropy_op::problem_id(p, input),
      [&](const LoadedKernel& kernel, const Config& config, void* workspace, cudaStream_t s) {
        // The values first (the call waits for that check): nothing is written when one is bad.
        entropy_op::validate_on_device(kernel, p, input, in,
                                       static_cast<unsigned long long*>(workspace), s);
        entropy_op::launch(kernel, config, p, in, out, workspace, s);
      },
      stream);
}

std::string describe_entropy(const Problem& p, Input input) {
  entropy_op::validate_problem(p);
  return Runtime::instance().describe(entropy_registration(), entropy_op::problem_id(p, input));
}

int64_t cpu_threshold(const std::vector<cache::BestRecord>& records, const Problem& p,
                      Input input) {
  // The measured sizes of this window: kernel time against the CPU path's (the baseline autotune
  // times in the same session), the GPU charged for its copies too.
  std::vector<std::pair<int64_t, bool>> measured;  // elements, whether the GPU path wins
  for (const auto& r : records) {
    if (r.key.op != "entropy" || r.key.layout != entropy_op::variant_name(input) ||
        r.key.shape.size() != 4 || r.key.shape[2] != p.radius || r.key.shape[3] != p.levels ||
        !(r.baseline_ms > 0)) {
      continue;
    }
    const int64_t elements = r.key.shape[0] * r.key.shape[1];
    const double gpu_ms = r.ms + kHostPathFixedMs +
                          static_cast<double>(elements) * (1 + sizeof(float)) / kHostBytesPerMs;
    measured.emplace_back(elements, gpu_ms < r.baseline_ms);
  }
  if (measured.empty()) return kDefaultCpuThreshold;
  std::sort(measured.begin(), measured.end());
  int64_t cpu_wins_up_to = 0;  // largest size the CPU wins
  for (const auto& [elements, gpu_wins] : measured) {
    if (!gpu_wins) cpu_wins_up_to = elements;
  }
  if (cpu_wins_up_to == 0) return measured.front().first;  // the GPU wins from the smallest on
  for (const auto& [elements, gpu_wins] : measured) {
    if (elements > cpu_wins_up_to) {  // the first size above it, which the GPU wins
      return static_cast<int64_t>(std::sqrt(static_cast<double>(cpu_wins_up_to) * elements));
    }
  }
  return 2 * cpu_wins_up_to;  // the CPU wins everywhere measured
}

int64_t entropy_cpu_threshold(const Problem& p, Input input) {
  // Memoized per input type, radius and levels (of GPU 0): the database is read once for each.
  static std::mutex mutex;
  static std::map<std::string, int64_t> memo;
  std::lock_guard<std::mutex> lock(mutex);
  static const std::string uuid = query_device(0).uuid;  // asked once: the query is slow
  const std::string key = std::string(entropy_op::variant_name(input)) + "/" +
                          std::to_string(p.radius) + "/" + std::to_string(p.levels);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  std::vector<cache::BestRecord> records;
  try {
    cache::Database db(cache::default_database_path(), cache::Access::kRead);
    cache::Filter filter;
    filter.device_uuid = uuid;
    filter.op = "entropy";
    records = db.bests(filter);
  } catch (const Error&) {
    // No database (or an unreadable one): the built-in threshold.
  }
  return memo[key] = cpu_threshold(records, p, input);
}

void entropy_host(const Problem& p, Input input, const void* in, float* out,
                  const EntropyOptions& options, EntropyReport* report) {
  validate_call(p, input, in, out);
  require_argument(options.gpus >= 0, "gpus",
                   "must be >= 0 (0: every visible GPU; got " + std::to_string(options.gpus) + ")");
  EntropyReport local;
  EntropyReport& r = report ? *report : local;
  r = EntropyReport{};
  if (p.rows == 0 || p.cols == 0) return;
  const int visible = options.path == EntropyPath::kCpu ? 0 : visible_devices();
  if (options.path == EntropyPath::kGpu && visible == 0) {
    throw Error(TUNED_STATUS_NO_DEVICE, "entropy path gpu: no CUDA device is visible");
  }
  require_argument(options.gpus <= std::max(visible, 1) || options.path == EntropyPath::kCpu,
                   "gpus", std::to_string(options.gpus) + " requested, " +
                               std::to_string(visible) + " visible");
  const bool gpu = visible > 0 && (options.path == EntropyPath::kGpu ||
                                   p.rows * p.cols >= entropy_cpu_threshold(p, input));
  if (!gpu) {
    const entropy_op::CpuMethod method = entropy_op::default_cpu_method(p);
    if (input == Input::kU8) {
      entropy_op::run_cpu(method, p, static_cast<const uint8_t*>(in), out);
    } else {
      entropy_op::run_cpu(method, p, static_cast<const float*>(in), out);
    }
    r.path = std::string("cpu (") + entropy_op::to_string(method) + ")";
    return;
  }
  run_gpus(p, input, in, out, options.gpus == 0 ? visible : options.gpus, r);
}

}  // namespace tuned::api
