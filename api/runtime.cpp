#include "api/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cache/selection_model.hpp"
#include "cache/shipped_defaults.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_raii.hpp"
#include "core/log.hpp"
#include "generator/device.hpp"
#include "tuner/tuning_policy.hpp"

namespace tuned {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Workspaces above this are not worth a kernel: the selection skips configs that need more. (A
// vocabulary's weight gradient at 8192 tokens, NT 1024 x 50257 x 8192 with 1.9 GB of operands,
// turns its 1.65 GB B over for the TMA-fed kernels, which ran it 1.7x cuBLAS when tuned; under
// 1 GiB it ran at 0.98x. The operands' size bounds a workspace below this anyway.)
constexpr size_t kMaxWorkspaceBytes = size_t{2} << 30;
// Nor may a workspace outgrow the call's own operands by much: the first call maps it into the
// pool (H100: a 100 MB split-K workspace made a 50 ms first call of a 52 MB problem).
constexpr size_t kWorkspaceFreeBytes = size_t{32} << 20;
// First-use tuning: candidates timed, and the time they may take (the first is always timed):
// a few in 250 ms for a short product, up to 24 in up to 150 of its run times for a long one,
// where what the pick gains is paid at every call; the whole pick (the leaders' second look and
// the winner's check included) planned within a second.
constexpr QuickPickBudget kFirstUseBudget{};

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

// Module loads and pool creation are not stream work, and CUDA refuses such calls while a stream
// is being captured in the global mode: the runtime makes them in the relaxed mode, so a first
// call inside a caller's graph capture still records only the call's stream work.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(bool capturing) : active_(capturing) {
    if (active_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  ~RelaxedCaptureMode() {
    if (active_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  bool active_;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

// A portfolio entry's config, completed with the parameters added since it was recorded (their
// old values); nullptr where the text does not parse. Parsed once a process: a call scores every
// entry of its variant, and parsing them again at each new shape was most of a first call's choice.
std::shared_ptr<const Config> entry_config(const OpRegistration& op, const std::string& text) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const Config>> parsed;
  const std::string key = op.name + "|" + text;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = parsed.find(key); it != parsed.end()) return it->second;
  std::shared_ptr<const Config> config;
  try {
    config = std::make_shared<const Config>(read_config(text, op.params));
  } catch (const Error&) {
  }
  return parsed.emplace(key, std::move(config)).first->second;
}

// Whether a portfolio entry (as the problem's variant runs it: OpFace::serve) can serve the
// problem as it is: its kernel is then precompiled (a config the face would have to change, e.g.
// to a narrower vector, would need NVRTC), its measurements transfer (OpFace::transfers_to, asked
// of the entry as it was timed) and its workspace is worth having (at most 32 MB or the
// operands' size, and below kMaxWorkspaceBytes). An entry recorded before a parameter existed
// means that parameter's old value (as fit says).
bool runs_as_is(const OpRegistration& op, const std::string& text, const DeviceInfo& device,
                const ProblemId& problem) {
  const OpFace& face = *op.face;
  const auto entry = entry_config(op, text);
  if (!entry) return false;
  try {
    const Config config = face.serve(*entry, problem);
    const size_t workspace = face.workspace_bytes(config, problem);
    return face.fit(config, device, problem) == config && face.transfers_to(*entry, problem) &&
           workspace <= kMaxWorkspaceBytes &&
           workspace <= std::max(kWorkspaceFreeBytes, face.operand_bytes(problem));
  } catch (const Error&) {
    return false;
  }
}

// The op's analytic features as the selection model takes them (no names: none are weighed). An
// entry that does not parse moves nowhere (runs_as_is refuses it).
cache::SelectionModel::Features selection_features(const OpRegistration& op,
                                                   const DeviceInfo& device) {
  const OpFace& face = *op.face;
  cache::SelectionModel::Features features;
  features.names = face.selection_feature_names();
  features.sm_count = device.sm_count;
  if (features.names.empty()) return features;
  const size_t feature_count = features.names.size();
  features.values = [&op, &face, feature_count](
                        const std::string& text,
                        const std::vector<std::pair<int, std::vector<int64_t>>>& at,
                        std::vector<double>& out) {
    const auto config = entry_config(op, text);
    if (!config) {
      out.insert(out.end(), at.size() * feature_count, 0.0);
      return;
    }
    for (const auto& [sm_count, shape] : at) face.selection_features(*config, sm_count, shape, out);
  };
  return features;
}

std::string describe_problem(const OpRegistration& op, const ProblemId& p) {
  std::string text = op.name + " " + op.variants[p.variant] + " ";
  for (int i = 0; i < p.rank; ++i) text += (i ? "x" : "") + std::to_string(p.dims[i]);
  return text + " align " + std::to_string(p.alignment);
}

// Nothing at path (a symlink loop or a folder that cannot be searched is something: the database
// says what is wrong with it).
bool missing(const std::string& path) {
  std::error_code ec;
  return std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found;
}

}  // namespace

// The user's database. Lookups open it for reading (no byte of it changes and no file appears
// beside it, a read-only file is fine, a missing file means nothing is tuned yet, and a new
// process's first call pays for no schema); writers (cubins compiled here, first-use results) open
// a second handle for writing, creating the file if needed but never migrating an older schema.
// A handle that cannot be opened is logged once per reason and tried again after kRetrySeconds;
// lock waits are short, so a call never waits long for another process.
struct Runtime::DatabaseSlot : public CubinStore {
  static constexpr auto kReadLockWait = std::chrono::milliseconds(200);
  static constexpr auto kWriteLockWait = std::chrono::milliseconds(500);
  static constexpr auto kRetry = std::chrono::seconds(kRetrySeconds);

  explicit DatabaseSlot(std::string p) : path(std::move(p)) {}

  std::shared_ptr<cache::Database> reader() {
    std::lock_guard<std::mutex> lock(mutex);
    // A view of the file as it was (immutable or a copy) is reopened once the file changed.
    if (read_db && read_db->changed()) read_db.reset();
    if (!read_db && due(read_failed_at)) {
      if (missing(path)) return nullptr;  // nothing tuned yet
      read_db = open_locked({cache::Access::kRead, false, kReadLockWait}, read_failed_at);
    }
    return read_db;
  }
  std::shared_ptr<cache::Database> writer() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!write_db && due(write_failed_at)) {
      write_db = open_locked({cache::Access::kWrite, false, kWriteLockWait}, write_failed_at);
    }
    return write_db;
  }
  // Why the last open failed ("" if none did).
  std::string failure() {
    std::lock_guard<std::mutex> lock(mutex);
    return last_failure;
  }

  std::optional<CubinRecord> find(const CubinKey& key) override {
    std::optional<CubinRecord> found;
    guarded("cubin lookup", [&] {
      if (auto d = reader()) found = d->find_cubin(key);
    });
    return found;
  }
  // A cubin that cannot be stored is only a missed shortcut for the next process.
  void put(const CubinKey& key, const CubinRecord& cubin) override {
    guarded("cubin store", [&] {
      if (auto d = writer()) d->put_cubin(key, cubin);
    });
  }
  void drop(const CubinKey& key) override {
    guarded("cubin drop", [&] {
      if (auto d = writer()) d->drop_cubin(key);
    });
  }

  // Runs a database step; an error is logged once per reason and the step is skipped.
  template <typename Step>
  void guarded(const char* what, Step&& step) {
    try {
      step();
    } catch (const Error& e) {
      log_once(LogLevel::kWarn, std::string("database step|") + what + "|" + e.what(),
               std::string(what) + " skipped: " + e.what());
    }
  }

  const std::string path;

 private:
  using Clock = std::chrono::steady_clock;
  bool due(const std::optional<Clock::time_point>& failed_at) const {
    return !failed_at || Clock::now() - *failed_at >= kRetry;
  }
  std::shared_ptr<cache::Database> open_locked(const cache::OpenOptions& options,
                                               std::optional<Clock::time_point>& failed_at) {
    try {
      auto db = std::make_shared<cache::Database>(path, options);
      failed_at.reset();
      return db;
    } catch (const Error& e) {
      failed_at = Clock::now();
      last_failure = e.what();
      // One line per reason: a reader and a writer failing alike say it once. Where the reader
      // is open, its own line already said what the writer meets (an older or newer schema, a
      // lock): the writer's failure is a detail.
      const bool reader_said_why = options.access == cache::Access::kWrite && read_db != nullptr;
      log_once(reader_said_why ? LogLevel::kInfo : LogLevel::kWarn,
               "database unusable|" + last_failure,
               std::string("tuning database not used") +
                   (options.access == cache::Access::kWrite ? " for recording" : "") +
                   ", the shipped choices answer: " + last_failure);
      return nullptr;
    }
  }

  std::mutex mutex;
  std::shared_ptr<cache::Database> read_db, write_db;
  std::optional<Clock::time_point> read_failed_at, write_failed_at;
  std::string last_failure;
};

Runtime& Runtime::instance() {
  static Runtime runtime;
  return runtime;
}

Runtime::Runtime(std::optional<DeviceInfo> fixed_device) : fixed_device_(std::move(fixed_device)) {
  db_ = std::make_shared<DatabaseSlot>(cache::default_database_path());
  kernels_.set_store(db_);
  if (const char* record = std::getenv("TUNED_RECORD"); record != nullptr && *record != '\0') {
    try {
      recorder_.set_path(record);
    } catch (const Error& e) {  // an environment variable cannot fail a call: said once
      log_once(LogLevel::kWarn, "TUNED_RECORD", std::string("TUNED_RECORD ignored: ") + e.what());
    }
  }
}

Runtime::~Runtime() = default;

std::string Runtime::set_database(const std::string& path) {
  auto slot = std::make_shared<DatabaseSlot>(path.empty() ? cache::default_database_path() : path);
  // Tried now, so the caller hears at once why it cannot be used: an existing file is read (a
  // read-only one is fine for lookups), a missing one is created.
  if (missing(slot->path)) {
    slot->writer();
  } else {
    slot->reader();  // an existing file, or one that cannot be examined (a symlink loop)
  }
  std::string warning = slot->failure();
  std::lock_guard<std::mutex> lock(mutex_);
  db_ = std::move(slot);
  kernels_.set_store(db_);
  memo_.clear();
  ++generation_;
  return warning;
}

std::string Runtime::database_path() {
  std::lock_guard<std::mutex> lock(mutex_);
  return db_->path;
}

void Runtime::set_record(const std::string& path) {
  recorder_.set_path(path);
  // Problems this process already met are recorded at their next call too.
  std::lock_guard<std::mutex> lock(mutex_);
  memo_.clear();
}

void Runtime::set_tuning(TuningPolicy policy) {
  std::lock_guard<std::mutex> lock(mutex_);
  tuning_ = policy;
  memo_.clear();
  ++generation_;
}

TuningPolicy Runtime::tuning() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tuning_) {
    tuning_ = env_is("TUNED_TUNING", "first-use") ? TuningPolicy::kFirstUse : TuningPolicy::kOff;
  }
  return *tuning_;
}

const DeviceInfo& Runtime::current_device() {
  if (fixed_device_) return *fixed_device_;
  int index = 0;
  TUNED_CUDA_CHECK(cudaGetDevice(&index));
  if (auto it = devices_.find(index); it != devices_.end()) return it->second;
  return devices_.emplace(index, query_device(index)).first->second;
}

size_t Runtime::MemoKeyHash::operator()(const MemoKey& k) const {
  size_t h = std::hash<const void*>()(k.op) ^ static_cast<size_t>(k.device) * 0x9E3779B97F4A7C15ull;
  for (int64_t v : k.problem.dims) h = h * 1000003u ^ std::hash<int64_t>()(v);
  return h * 31 + static_cast<size_t>(k.problem.variant * 8 + k.problem.alignment);
}

Runtime::Choice Runtime::select(const OpRegistration& op, const DeviceInfo& device,
                                const ProblemId& problem, cache::Database* db) {
  const OpFace& face = *op.face;
  ProblemKey key{device.uuid, op.name, op.variants[problem.variant], problem.shape(),
                 problem.alignment};
  // The shipped data answering for this variant (OpFace::data_variant), served as it runs here.
  ProblemKey data_key = key;
  data_key.variant = op.variants[face.data_variant(problem.variant)];
  Choice choice;
  // A stored config that no longer fits (older template, other alignment) is skipped.
  auto take = [&](const std::string& text, ChoiceOrigin origin, bool shipped_data = false) {
    try {
      const Config config = read_config(text, op.params);
      choice.config =
          face.fit(shipped_data ? face.serve(config, problem) : config, device, problem);
      choice.origin = std::move(origin);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  std::optional<cache::BestRecord> nearest;
  // Stored bests are served only where measured on the template this build compiles (or from
  // before bests said which): the op's template, as its fallback's kernel names it.
  std::string template_hash;
  if (db) {
    try {
      template_hash = face.kernel_spec(face.fallback_config(device, problem), problem).source_hash;
    } catch (const Error&) {
    }
    if (template_hash.empty()) db = nullptr;  // unknown: nothing stored can be vouched for
  }
  if (db) {
    try {
      if (auto exact = db->find_best(key, template_hash)) {
        const bool first_use = exact->origin == cache::BestOrigin::kFirstUse;
        if (take(exact->config, first_use ? Origin::kFirstUse : Origin::kExact)) {
          return choice;
        }
      }
      // Tuned on another GPU of this model (a database copied across a cluster): this shape's
      // own measurement beats any other shape's or the model's guess.
      if (auto twin = db->find_best_on_twin(key, cache::device_record(device), template_hash)) {
        if (take(twin->config, {Origin::kTwin, twin->key.device_uuid})) return choice;
      }
      nearest = db->find_nearest(key, template_hash);
    } catch (const Error& e) {
      // A lock held elsewhere or a damaged page must not fail the call: the shipped choices
      // answer. Said once per reason, not once per problem.
      log_once(LogLevel::kWarn, std::string("lookup failed|") + e.what(),
               "tuning database lookup skipped (first for " + describe_problem(op, problem) +
                   "): " + e.what());
      nearest.reset();
    }
  }
  const int cc = device.compute_capability();
  if (auto shipped = cache::ShippedDefaults::builtin().find_best(data_key, device.name, cc)) {
    if (take(shipped->config, Origin::kShipped, true)) return choice;
  }
  const auto& model = cache::SelectionModel::builtin();
  const auto features = selection_features(op, device);
  const auto ranked = model.rank(
      op.name, device.name, cc, data_key.variant, face.selection_shape(key.shape), key.alignment,
      [&](const std::string& text) { return runs_as_is(op, text, device, problem); }, 1, &features);
  if (nearest && nearest->key.shape != key.shape) {
    // A config tuned for another shape transfers with a regret that grows with the distance;
    // it is used only where that beats the model's own prediction for its pick.
    const double predicted = model.transfer_regret(op.name, device.name, cc) *
                             shape_distance(nearest->key.shape, key.shape);
    if ((ranked.empty() || predicted < ranked.front().neighbour_regret) &&
        take(nearest->config, {Origin::kNearest, nearest->key.shape_string()})) {
      return choice;
    }
  }
  if (!ranked.empty() && take(ranked.front().config, Origin::kModel, true)) return choice;
  choice.config = face.fallback_config(device, problem);
  choice.origin = Origin::kDefault;
  return choice;
}

std::vector<Config> Runtime::first_use_candidates(const OpRegistration& op,
                                                  const DeviceInfo& device,
                                                  const ProblemId& problem,
                                                  const Config& fallback) {
  const OpFace& face = *op.face;
  const int cc = device.compute_capability();
  std::vector<Config> candidates = {fallback};
  const auto features = selection_features(op, device);
  const auto& model = cache::SelectionModel::builtin();
  auto ranked = [&](const std::string& model_device, size_t picks) {
    return model.rank(
        op.name, model_device, cc, op.variants[face.data_variant(problem.variant)],
        face.selection_shape(problem.shape()), problem.alignment,
        [&](const std::string& text) { return runs_as_is(op, text, device, problem); }, picks,
        &features);
  };
  auto add = [&](const cache::SelectionModel::Ranked& r) {
    // Completed like the fallback (fit's), so an entry older than a parameter is not timed twice.
    const Config c = face.serve(read_config(r.config, op.params), problem);
    if (std::find(candidates.begin(), candidates.end(), c) == candidates.end()) {
      candidates.push_back(c);
    }
  };
  // This GPU's model's top picks first, as many as a short product's budget times with the
  // fallback; then the top picks of the models of other GPUs of its architecture (their kernels
  // run here, and a table fitted before a kernel family existed never ranks it), early enough
  // that a long product's budget reaches them (on an H200 it stopped before the 13th); then the
  // rest of its own.
  const auto own = ranked(device.name, kFirstUseBudget.long_candidates);
  const size_t own_first = std::min(own.size(), kFirstUseBudget.candidates - 1);
  for (size_t i = 0; i < own_first; ++i) add(own[i]);
  for (const auto& other : model.same_arch_devices(op.name, device.name, cc)) {
    for (const auto& r : ranked(other, kFirstUseBudget.same_arch_picks)) add(r);
  }
  for (size_t i = own_first; i < own.size(); ++i) add(own[i]);
  return candidates;
}

std::optional<Runtime::Choice> Runtime::tune_first_use(const OpRegistration& op,
                                                       const DeviceInfo& device,
                                                       const ProblemId& problem,
                                                       const Choice& fallback,
                                                       cache::Database* db) {
  const OpFace& face = *op.face;
  std::vector<Config> candidates = first_use_candidates(op, device, problem, fallback.config);
  std::lock_guard<std::mutex> one_at_a_time(tune_mutex_);
  const auto started = Clock::now();
  DeviceCheck check(kernels_, device);
  auto task = face.scratch_task(device, problem, check);
  if (db) {
    // Then where a tuning session starts: a twin GPU's best and the bests of nearby tuned shapes
    // (their kernels are in the database when autotune tuned them; quick_pick passes over any
    // that would need NVRTC).
    for (const Config& c : starting_configs(*db, *task, device)) {
      if (std::find(candidates.begin(), candidates.end(), c) == candidates.end()) {
        candidates.push_back(c);
      }
    }
  }
  Stream stream = Stream::create();
  auto pick = quick_pick(*task, kernels_, device, candidates, kFirstUseBudget, stream.get());
  if (!pick) return std::nullopt;
  Choice choice;
  choice.config = pick->config;
  choice.origin = Origin::kFirstUse;
  choice.kernel = pick->kernel;
  if (db) {
    cache::BestRecord best;
    best.key = task->key();
    best.key.device_uuid = device.uuid;
    best.config = config_text(pick->config, op.params);
    best.kernel_name = pick->kernel->name();
    best.ms = pick->ms;
    best.rate = task->rate(pick->ms);
    best.rate_unit = task->rate_unit();
    best.origin = cache::BestOrigin::kFirstUse;
    try {
      db->upsert_device(cache::device_record(device));
      // The cubin is not stored: first-use picks are precompiled or already in the database.
      keep_best(*db, best, face.kernel_spec(pick->config, problem), device, nullptr);
    } catch (const Error& e) {
      log_once(LogLevel::kWarn, std::string("first-use not recorded|") + e.what(),
               "first-use result not recorded: " + std::string(e.what()));
    }
  }
  if (log_enabled(LogLevel::kInfo)) {
    log(LogLevel::kInfo,
        describe_problem(op, problem) + ": first-use tuning timed " + std::to_string(pick->timed) +
            " of " + std::to_string(candidates.size()) + " candidates in " +
            std::to_string(ms_since(started)) + " ms, picked " +
            config_text(pick->config, op.params) + " (" + std::to_string(pick->ms) + " ms)");
  }
  return choice;
}

std::shared_ptr<const Runtime::Choice> Runtime::resolve(const OpRegistration& op,
                                                        const DeviceInfo& device,
                                                        const ProblemId& problem,
                                                        cudaStream_t stream, bool with_kernel) {
  // A call (not a describe) met a problem new to this process: the recorder notes it.
  if (with_kernel) {
    recorder_.record(op.name, op.variants[problem.variant], problem.shape(), problem.alignment);
  }
  const bool capturing = with_kernel && is_capturing(stream);
  RelaxedCaptureMode relaxed(capturing);
  std::shared_ptr<DatabaseSlot> slot;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot = db_;
    generation = generation_;
  }
  std::shared_ptr<cache::Database> db = slot->reader();
  Choice choice = select(op, device, problem, db.get());
  if (with_kernel && !capturing && !Workspaces::in_use_on_this_thread() &&
      tuning() == TuningPolicy::kFirstUse && !choice.origin.measured_here()) {
    // Tuning needs timings and a device sync: never inside a capture, nor for an op run inside
    // another's launch, which holds its stream's workspace (the model's pick is used).
    if (auto tuned = tune_first_use(op, device, problem, choice, slot->writer().get())) {
      choice = std::move(*tuned);
    }
  }
  choice.workspace_bytes = op.face->workspace_bytes(choice.config, problem);
  std::string kernel_note;  // where the kernel came from, for the log
  if (with_kernel && !choice.kernel) {
    const auto started = Clock::now();
    std::string source;
    choice.kernel = kernels_.get(op.face->kernel_spec(choice.config, problem), device, &source);
    kernel_note = "; kernel " + source + " in " + std::to_string(ms_since(started)) + " ms";
  }
  if (log_enabled(LogLevel::kInfo)) {
    log(LogLevel::kInfo, describe_problem(op, problem) + ": " + choice.origin.text() + " " +
                             config_text(choice.config, op.params) + kernel_note);
  }
  auto shared = std::make_shared<const Choice>(std::move(choice));
  std::lock_guard<std::mutex> lock(mutex_);
  // A choice made with a database that was replaced meanwhile is used once, not remembered.
  if (generation == generation_) memo_.put(MemoKey{device.index, &op, problem}, shared);
  return shared;
}

std::pair<const DeviceInfo*, std::shared_ptr<const Runtime::Choice>> Runtime::loaded_choice(
    const OpRegistration& op, const ProblemId& problem, cudaStream_t stream) {
  const DeviceInfo* device;
  std::shared_ptr<const Choice> choice;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device = &current_device();
    if (auto found = memo_.find(MemoKey{device->index, &op, problem})) {
      if ((*found)->kernel) choice = *found;
    }
  }
  if (!choice) choice = resolve(op, *device, problem, stream, /*with_kernel=*/true);
  return {device, std::move(choice)};
}

void Runtime::run(const OpRegistration& op, const ProblemId& problem, const Launcher& launch,
                  cudaStream_t stream) {
  const auto [device, choice] = loaded_choice(op, problem, stream);
  if (choice->workspace_bytes == 0) {
    launch(*choice->kernel, choice->config, nullptr, stream);
    return;
  }
  // Concurrent calls on different streams never share a workspace; one stream's reuse its buffer.
  // Inside a capture, from a pool (created in relaxed mode: a capture refuses unsafe calls).
  const bool capturing = is_capturing(stream);
  RelaxedCaptureMode relaxed(capturing);
  workspaces_.with(device->index, stream, capturing, choice->workspace_bytes, [&](void* workspace) {
    launch(*choice->kernel, choice->config, workspace, stream);
  });
}

Config Runtime::choice(const OpRegistration& op, const ProblemId& problem, cudaStream_t stream) {
  return loaded_choice(op, problem, stream).second->config;
}

std::shared_ptr<const LoadedKernel> Runtime::kernel(const OpRegistration& op,
                                                    const ProblemId& problem,
                                                    const Config& config) {
  const DeviceInfo* device;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device = &current_device();
  }
  return kernels_.get(op.face->kernel_spec(config, problem), *device);
}

std::string Runtime::describe(const OpRegistration& op, const ProblemId& problem) {
  const DeviceInfo* device;
  std::shared_ptr<const Choice> choice;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device = &current_device();
    if (auto found = memo_.find(MemoKey{device->index, &op, problem})) choice = *found;
  }
  if (!choice) choice = resolve(op, *device, problem, nullptr, /*with_kernel=*/false);
  const std::string words = op.face->describe_config(choice->config);
  return choice->origin.text() + ": " + config_text(choice->config, op.params) +
         (words.empty() ? "" : " (" + words + ")");
}

size_t Runtime::memo_entries() {
  std::lock_guard<std::mutex> lock(mutex_);
  return memo_.size();
}

}  // namespace tuned
