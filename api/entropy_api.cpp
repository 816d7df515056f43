#include "api/entropy_api.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "api/runtime.hpp"
#include "cache/database.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "generator/device.hpp"
#include "templates/entropy/entropy_descriptor.hpp"
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
// Outputs from this size on are written with streaming stores: far larger than the caches, so
// reading each line before writing it (and evicting the staging) only costs memory bandwidth.
constexpr size_t kStreamingBytes = size_t{32} << 20;

// A host thread kept for one GPU: it runs that GPU's part of each call with its own OpenMP team,
// so no GPU's packing, copies or launches wait on another's host thread.
class LaneThread {
 public:
  LaneThread() : thread_([this] { loop(); }) {}
  // Never destroyed (see staging()): the thread waits for work until the process ends.

  void start(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return !job_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return static_cast<bool>(job_); });
      lock.unlock();
      job_();  // the job catches its own errors
      lock.lock();
      job_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> job_;
  std::thread thread_;  // last: the members it uses exist before it starts
};

// One GPU's streams, buffers and host thread, kept for the process and grown as needed.
struct Lane {
  Stream compute, h2d, d2h;
  DeviceBuffer in;  // the band's packed input with its halo
  DeviceBuffer out[kSlots];
  DeviceBuffer workspace;              // the kernel's (its own: the runtime's is one call's)
  PinnedBuffer host_in[kSlots];        // packed input columns on their way up
  PinnedBuffer host_out[kSlots];       // results on their way out
  std::unique_ptr<LaneThread> thread;  // none for GPU 0: the caller's thread runs its part
};

struct Staging {
  std::mutex mutex;  // one host call at a time uses the buffers
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

// Nothing of the output is written before every lane has checked its input: each lane arrives
// once, saying whether its values were all valid (and nothing failed); all leave together.
class Gate {
 public:
  explicit Gate(int lanes) : waiting_(lanes) {}

  // One lane's arrival; arrives (as failed) when destroyed unused, e.g. by an exception, so the
  // other lanes never wait for a lane that has stopped.
  class Ticket {
   public:
    explicit Ticket(Gate& gate) : gate_(gate) {}
    ~Ticket() {
      if (!used_) gate_.arrive(false);
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    /// Whether every lane's input was valid.
    bool pass(bool ok) {
      used_ = true;
      return gate_.arrive(ok);
    }

   private:
    Gate& gate_;
    bool used_ = false;
  };

 private:
  bool arrive(bool ok) {
    std::unique_lock<std::mutex> lock(mutex_);
    ok_ = ok_ && ok;
    if (--waiting_ == 0) {
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return waiting_ == 0; });
    }
    return ok_;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_;
  bool ok_ = true;
};

// Packs input columns [j0, j1) into bytes (ld = rows) on `threads` threads, checking every value on
// the way; returns how many are bad (not an integer in [0, levels)). Nothing of the output is
// touched.
template <typename T>
int64_t pack_columns(const Problem& p, const T* in, int64_t j0, int64_t j1, uint8_t* packed,
                     int threads) {
  // Locals, not p's members: the byte stores may alias anything, which would make the compiler
  // reload p.rows every iteration and give up vectorizing.
  const int64_t rows = p.rows, ld_in = p.ld_in;
  const int int_levels = p.levels;
  const float levels = static_cast<float>(p.levels);
  int64_t bad = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : bad)
  for (int64_t j = j0; j < j1; ++j) {
    const T* __restrict__ column = in + j * ld_in;
    uint8_t* __restrict__ dst = packed + (j - j0) * rows;
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
  return bad;
}

}  // namespace

void copy_floats(float* dst, const float* src, size_t count, bool streaming) {
#if defined(__SSE2__)
  if (streaming) {
    size_t i = 0;
    for (; i < count && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
    for (; i + 4 <= count; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < count; ++i) dst[i] = src[i];
    _mm_sfence();  // streaming stores are weakly ordered: done before the caller reads
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, count * sizeof(float));
}

namespace {

// What one lane does in a call, and what it found.
struct BandWork {
  int64_t b0 = 0, b1 = 0;  // its output columns
  int threads = 1;         // its OpenMP team
  double kernel_ms = 0;    // its chunks' kernels, summed
  double pack_ms = 0;      // until its input was checked, packed and uploaded
  int64_t bad = 0;         // bad values it found (it stops checking at the first chunk with one)
  std::exception_ptr error;
};

// One GPU's band of output columns [b0, b1), pipelined in chunks on its own host thread. First each
// chunk's new input columns are checked and packed into a pinned slot by this lane's threads and
// uploaded, the first chunks computed and downloaded meanwhile; then, once every lane's input
// passed the check (the gate), each downloaded chunk is copied out while the next ones are
// computed and downloaded. The kernel reads bytes with ld = rows; its output slot has ld = rows.
template <typename T>
class BandPipeline {
 public:
  BandPipeline(Lane& lane, const LoadedKernel& kernel, const Config& config, void* workspace,
               const Problem& p, const T* in, float* out, bool streaming, BandWork& work)
      : lane_(lane),
        kernel_(kernel),
        config_(config),
        workspace_(workspace),
        p_(p),
        in_(in),
        out_(out),
        streaming_(streaming),
        work_(work),
        b0_(work.b0),
        b1_(work.b1),
        h0_(std::max<int64_t>(0, b0_ - p.radius)),
        h1_(std::min(p.cols, b1_ + p.radius)),
        column_in_(static_cast<size_t>(p.rows)),
        column_out_(column_in_ * sizeof(float)),
        chunk_(std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / column_out_), 1, b1_ - b0_)),
        chunks_((b1_ - b0_ + chunk_ - 1) / chunk_),
        packed_problem_(p),
        compute_(lane.compute.get()),
        h2d_(lane.h2d.get()),
        d2h_(lane.d2h.get()) {
    packed_problem_.ld_in = p.rows;
    packed_problem_.ld_out = p.rows;
  }

  // The whole band: nothing is written unless ticket passes (every lane's input was valid).
  void run(Gate::Ticket& ticket) {
    const auto started = std::chrono::steady_clock::now();
    size_buffers();
    for (int64_t k = 0; k < chunks_; ++k) {
      uploaded_.push_back(Event::create());
      kernel_start_.push_back(Event::create());
      kernel_end_.push_back(Event::create());
      downloaded_.push_back(Event::create());
    }
    // Whatever happens, nothing stays in flight into buffers the next call reuses.
    struct Quiet {
      cudaStream_t streams[3];
      ~Quiet() {
        for (cudaStream_t s : streams) (void)cudaStreamSynchronize(s);
      }
    } quiet{{compute_, h2d_, d2h_}};

    check_and_upload();
    const auto checked = std::chrono::steady_clock::now();
    work_.pack_ms = std::chrono::duration<double, std::milli>(checked - started).count();
    if (!ticket.pass(work_.bad == 0)) return;  // a bad value somewhere: nothing is written

    // Stage 2: copy each chunk out while the next ones are computed and downloaded; its slots are
    // free once it is out.
    for (int64_t k = 0; k < chunks_; ++k) {
      drain(k);
      if (k + kSlots < chunks_) issue(k + kSlots);
    }
    for (int64_t k = 0; k < chunks_; ++k) {
      work_.kernel_ms += kernel_end_[k].elapsed_since(kernel_start_[k]);
    }
  }

 private:
  void size_buffers() {
    // The first chunk uploads its halo on both sides, the others their own columns.
    const int64_t slot_columns = std::min<int64_t>(h1_ - h0_, chunk_ + 2 * p_.radius);
    ensure(lane_.in, column_in_ * static_cast<size_t>(h1_ - h0_));
    for (int s = 0; s < kSlots; ++s) {
      ensure(lane_.out[s], column_out_ * static_cast<size_t>(chunk_));
      ensure(lane_.host_out[s], column_out_ * static_cast<size_t>(chunk_));
      ensure(lane_.host_in[s], column_in_ * static_cast<size_t>(slot_columns));
    }
  }

  // Stage 1: check, pack and upload; the first chunks' kernels and downloads start meanwhile.
  void check_and_upload() {
    int64_t packed_to = h0_;
    for (int64_t k = 0; k < chunks_ && work_.bad == 0; ++k) {
      const int64_t c1 = std::min(b1_, b0_ + (k + 1) * chunk_);
      const int64_t need = std::min(p_.cols, c1 + p_.radius);
      if (need > packed_to) {
        const int slot = static_cast<int>(k % kSlots);
        // The slot's previous columns must be on the device before it is packed again.
        if (k >= kSlots) TUNED_CUDA_CHECK(cudaEventSynchronize(uploaded_[k - kSlots].get()));
        uint8_t* staged = lane_.host_in[slot].as<uint8_t>();
        work_.bad = pack_columns(p_, in_, packed_to, need, staged, work_.threads);
        if (work_.bad > 0) break;
        TUNED_CUDA_CHECK(cudaMemcpyAsync(lane_.in.as<uint8_t>() + (packed_to - h0_) * column_in_,
                                         staged, static_cast<size_t>(need - packed_to) * column_in_,
                                         cudaMemcpyHostToDevice, h2d_));
        packed_to = need;
      }
      uploaded_[k].record(h2d_);
      if (k < kSlots) issue(k);
    }
  }

  // Chunk k: its kernel into device slot k, then down to pinned memory.
  void issue(int64_t k) {
    const int64_t c0 = b0_ + k * chunk_, c1 = std::min(b1_, c0 + chunk_);
    TUNED_CUDA_CHECK(cudaStreamWaitEvent(compute_, uploaded_[k].get(), 0));
    kernel_start_[k].record(compute_);
    entropy_op::launch_columns(kernel_, config_, packed_problem_, entropy_op::Band{c0, c1, h0_, c0},
                               lane_.in.get(), lane_.out[k % kSlots].as<float>(), workspace_,
                               compute_);
    kernel_end_[k].record(compute_);
    TUNED_CUDA_CHECK(cudaStreamWaitEvent(d2h_, kernel_end_[k].get(), 0));
    TUNED_CUDA_CHECK(cudaMemcpyAsync(lane_.host_out[k % kSlots].get(), lane_.out[k % kSlots].get(),
                                     static_cast<size_t>(c1 - c0) * column_out_,
                                     cudaMemcpyDeviceToHost, d2h_));
    downloaded_[k].record(d2h_);
  }

  // Chunk k's output, from its pinned slot to the caller's memory.
  void drain(int64_t k) {
    TUNED_CUDA_CHECK(cudaEventSynchronize(downloaded_[k].get()));
    const int64_t c0 = b0_ + k * chunk_, c1 = std::min(b1_, c0 + chunk_);
    const float* src = lane_.host_out[k % kSlots].as<float>();
#pragma omp parallel for num_threads(work_.threads) schedule(static)
    for (int64_t j = c0; j < c1; ++j) {
      copy_floats(out_ + j * p_.ld_out, src + (j - c0) * p_.rows, column_in_, streaming_);
    }
  }

  Lane& lane_;
  const LoadedKernel& kernel_;
  const Config& config_;
  void* const workspace_;
  const Problem& p_;
  const T* const in_;
  float* const out_;
  const bool streaming_;
  BandWork& work_;
  const int64_t b0_, b1_;                // the band's output columns
  const int64_t h0_, h1_;                // its input columns, with the halo
  const size_t column_in_, column_out_;  // bytes of a packed input column, of an output column
  const int64_t chunk_;                  // columns per chunk
  const int64_t chunks_;
  Problem packed_problem_;  // the problem as the kernel reads it: packed bytes, ld = rows
  const cudaStream_t compute_, h2d_, d2h_;
  std::vector<Event> uploaded_, kernel_start_, kernel_end_, downloaded_;  // per chunk
};

template <typename T>
void run_band(Lane& lane, const LoadedKernel& kernel, const Config& config, void* workspace,
              const Problem& p, const T* in, float* out, bool streaming, Gate::Ticket& ticket,
              BandWork& work) {
  BandPipeline<T>(lane, kernel, config, workspace, p, in, out, streaming, work).run(ticket);
}

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

// Whether device g runs the configs chosen for device 0 as they are (the same rules apply).
bool same_model(int g) {
  auto attribute = [](cudaDeviceAttr what, int device) {
    int value = 0;
    TUNED_CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
    return value;
  };
  for (cudaDeviceAttr what :
       {cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
        cudaDevAttrMultiProcessorCount, cudaDevAttrMaxSharedMemoryPerBlockOptin}) {
    if (attribute(what, g) != attribute(what, 0)) return false;
  }
  return true;
}

// The lanes of GPUs [0, bands) that the process does not have yet, each made on its device.
void make_lanes(Staging& st, int bands) {
  for (int g = 0; g < bands; ++g) {
    auto& lane = st.lanes[g];
    if (!lane) {
      TUNED_CUDA_CHECK(cudaSetDevice(g));
      lane = std::make_unique<Lane>();
      lane->compute = Stream::create();
      lane->h2d = Stream::create();
      lane->d2h = Stream::create();
      if (g > 0) lane->thread = std::make_unique<LaneThread>();
    }
  }
}

// Throws the call's failure, if a lane had one: a bad value is named (the first in column-major
// order) before any other failure.
void throw_first_failure(const std::vector<BandWork>& work, const Problem& p, Input input,
                         const void* in) {
  for (const BandWork& w : work) {
    if (w.bad > 0) {
      if (input == Input::kU8) {
        entropy_op::validate_values(p, static_cast<const uint8_t*>(in));
      } else {
        entropy_op::validate_values(p, static_cast<const float*>(in));
      }
      throw Error(TUNED_STATUS_INVALID_ARGUMENT, "in: a value is not an integer in [0, levels)");
    }
  }
  for (const BandWork& w : work) {
    if (w.error) std::rethrow_exception(w.error);
  }
}

void run_gpus(const Problem& p, Input input, const void* in, float* out, int gpus,
              EntropyReport& report) {
  Staging& st = staging();
  std::lock_guard<std::mutex> lock(st.mutex);
  // Bands of whole columns (contiguous in column-major memory: the row split of a row-major
  // image), each GPU's on its own host thread with its share of the cores.
  const int bands = static_cast<int>(std::min<int64_t>(gpus, p.cols));
  int caller_device = 0;
  TUNED_CUDA_CHECK(cudaGetDevice(&caller_device));
  struct Restore {
    int device;
    ~Restore() { (void)cudaSetDevice(device); }
  } restore{caller_device};
  make_lanes(st, bands);  // here, before any lane's thread runs
  // One config for every GPU of a model, chosen on GPU 0: each band is then computed as one GPU
  // computes the whole, bit for bit.
  const ProblemId id = entropy_op::problem_id(p, Input::kU8);
  TUNED_CUDA_CHECK(cudaSetDevice(0));
  const Config config =
      Runtime::instance().choice(entropy_registration(), id, st.lanes.at(0)->compute.get());
  const bool streaming =
      static_cast<size_t>(p.rows) * static_cast<size_t>(p.cols) * sizeof(float) >= kStreamingBytes;
  const int threads = std::max(1, omp_get_max_threads() / bands);
  std::vector<BandWork> work(static_cast<size_t>(bands));
  Gate gate(bands);
  auto band = [&](int g) {
    BandWork& mine = work[static_cast<size_t>(g)];
    Gate::Ticket ticket(gate);
    try {
      TUNED_CUDA_CHECK(cudaSetDevice(g));
      Lane& lane = *st.lanes.at(g);
      // Another model chooses its own (results within the tolerance, maybe not equal bit for bit).
      const Config own =
          g == 0 || same_model(g)
              ? config
              : Runtime::instance().choice(entropy_registration(), id, lane.compute.get());
      const auto kernel = Runtime::instance().kernel(entropy_registration(), id, own);
      ensure(lane.workspace, entropy_op::workspace_bytes(own, p));
      if (input == Input::kU8) {
        run_band(lane, *kernel, own, lane.workspace.get(), p, static_cast<const uint8_t*>(in), out,
                 streaming, ticket, mine);
      } else {
        run_band(lane, *kernel, own, lane.workspace.get(), p, static_cast<const float*>(in), out,
                 streaming, ticket, mine);
      }
    } catch (...) {
      mine.error = std::current_exception();
    }
  };
  for (int g = 0; g < bands; ++g) {
    work[static_cast<size_t>(g)].b0 = p.cols * g / bands;
    work[static_cast<size_t>(g)].b1 = p.cols * (g + 1) / bands;
    work[static_cast<size_t>(g)].threads = threads;
  }
  for (int g = 1; g < bands; ++g) st.lanes.at(g)->thread->start([&band, g] { band(g); });
  band(0);
  for (int g = 1; g < bands; ++g) st.lanes.at(g)->thread->wait();
  throw_first_failure(work, p, input, in);
  report.path = "gpu";
  report.gpus = bands;
  for (const BandWork& w : work) {
    report.kernel_ms = std::max(report.kernel_ms, w.kernel_ms);
    report.pack_ms = std::max(report.pack_ms, w.pack_ms);
  }
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
    if (r.key.op != "entropy" || r.key.variant != entropy_op::variant_name(input) ||
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
