// What a call of any op does, written once: key the problem, choose a config, get its kernel
// (loaded once per process: precompiled in the library, else from the database, else NVRTC), give
// it a workspace and launch it. Ops plug in through their registration and runtime face
// (templates/registry.hpp, templates/op_face.hpp); their API entry (api/gemm_api.cpp) validates
// the arguments and hands the runtime a launcher. Thread-safe.
//
// Choice order for a problem nobody has seen in this process:
//   1. the user's database, exact key (autotune's or first-use tuning's record; like every stored
//      best it answers only where measured on the template this build compiles);
//   2. the shipped defaults' exact entry for this GPU model (configs tuned on the benchmark suite);
//   3. with first-use tuning on (TUNED_TUNING=first-use or set_tuning), the selection model's top
//      candidates timed on scratch buffers, the winner recorded in the user's database;
//   4. the selection model's top pick (cache/selection_model.hpp: a portfolio per device model,
//      ranked by the nearest measured shapes), unless the user's nearest tuned shape is predicted
//      to do better (transfer regret x distance below the pick's predicted regret);
//   5. the op's built-in fallback.
// Steps 2 and 4 read the shipped data of the op's data variant (OpFace::data_variant: a GEMM
// compute type reads its layout's), each config as the problem's variant runs it (OpFace::serve).
// The user's database can only help: whatever its state (missing, older or newer schema, another
// application's file, damaged, locked, a folder, a named pipe), lookups that cannot use it are
// skipped with one log line and the shipped choices answer; no call waits long for another
// process's lock. Choices are memoized per problem in a memo of bounded size.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "api/bounded_memo.hpp"
#include "api/choice_origin.hpp"
#include "api/shape_recorder.hpp"
#include "api/workspaces.hpp"
#include "cache/database.hpp"
#include "core/device_info.hpp"
#include "generator/kernel_cache.hpp"
#include "templates/registry.hpp"

namespace tuned {

enum class TuningPolicy { kOff, kFirstUse };

class Runtime {
 public:
  /// The process's runtime (device from the CUDA current device).
  static Runtime& instance();
  /// A runtime of its own; with a fixed device, choices are made for that device without asking
  /// CUDA (tests of the choice logic run without a GPU).
  explicit Runtime(std::optional<DeviceInfo> fixed_device = std::nullopt);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// "" selects the default ($TUNED_DB, else the cache folder); a missing file is created. Returns
  /// "" or, for a database that cannot be used now, why: it is set all the same, calls go on with
  /// the shipped choices and use it once it can be (retried every kRetrySeconds). Safe while
  /// other threads call run(): they finish with the database they started with.
  std::string set_database(const std::string& path);
  /// The path of the database calls use now: set_database's, else the default. Nothing is opened.
  std::string database_path();
  /// Appends each problem called from now on, once, to the file at path ("" stops; see
  /// api/shape_recorder.hpp). TUNED_RECORD sets it at start. Throws Error naming the path when
  /// the file cannot be appended to.
  void set_record(const std::string& path);
  /// Off unless TUNED_TUNING=first-use or set here.
  void set_tuning(TuningPolicy policy);
  TuningPolicy tuning();

  /// Launches one call: launch(kernel, config, workspace, stream) with the chosen kernel and a
  /// workspace of the config's size (api/workspaces.hpp; null when none).
  using Launcher =
      std::function<void(const LoadedKernel&, const Config&, void* workspace, cudaStream_t)>;
  void run(const OpRegistration& op, const ProblemId& problem, const Launcher& launch,
           cudaStream_t stream);
  /// The config run() launches for this problem on the current device (chosen now if needed, as
  /// run() would: first-use tuning included; its kernel loaded).
  Config choice(const OpRegistration& op, const ProblemId& problem, cudaStream_t stream);
  /// The kernel of a given config for this problem on the current device, loaded once per device
  /// and config: GPUs that share one problem run the config chosen on one of them (choice()), so
  /// that their parts agree bit for bit whatever each GPU's own entries say. The config must suit
  /// this device. The caller gives the launch its workspace (the op face's workspace_bytes).
  std::shared_ptr<const LoadedKernel> kernel(const OpRegistration& op, const ProblemId& problem,
                                             const Config& config);
  /// "origin: config" of the choice run() makes for this problem (chosen now if needed; no kernel
  /// is loaded and nothing is tuned).
  std::string describe(const OpRegistration& op, const ProblemId& problem);
  /// What first-use tuning times for a problem, in order (before the database's starting
  /// configs; at most as many as its budget affords): the fallback, this GPU's model's picks
  /// with those of the models of other GPUs of its architecture among them. Each runs as it is
  /// (precompiled kernels). No GPU needed.
  static std::vector<Config> first_use_candidates(const OpRegistration& op,
                                                  const DeviceInfo& device,
                                                  const ProblemId& problem, const Config& fallback);

  /// Choices remembered per (device, op, problem): at most 2 x kMemoCapacity
  /// (api/bounded_memo.hpp).
  static constexpr size_t kMemoCapacity = 4096;
  /// A database that could not be opened is tried again after this many seconds.
  static constexpr int kRetrySeconds = 30;
  size_t memo_entries();

 private:
  struct Choice {
    Config config;
    ChoiceOrigin origin;
    std::shared_ptr<const LoadedKernel> kernel;  // null until a run() needed it
    size_t workspace_bytes = 0;
  };
  struct MemoKey {
    int device;
    const OpRegistration* op;
    ProblemId problem;
    bool operator==(const MemoKey&) const = default;
  };
  struct MemoKeyHash {
    size_t operator()(const MemoKey& k) const;
  };
  // The user's database, opened when first needed; shared so a set_database() on another thread
  // never frees one in use.
  struct DatabaseSlot;

  const DeviceInfo& current_device();  // mutex_ held
  // The current device and the choice for problem there with its kernel: the memo's, else
  // resolved (what run and choice serve).
  std::pair<const DeviceInfo*, std::shared_ptr<const Choice>> loaded_choice(
      const OpRegistration& op, const ProblemId& problem, cudaStream_t stream);
  std::shared_ptr<const Choice> resolve(const OpRegistration& op, const DeviceInfo& device,
                                        const ProblemId& problem, cudaStream_t stream,
                                        bool with_kernel);
  Choice select(const OpRegistration& op, const DeviceInfo& device, const ProblemId& problem,
                cache::Database* db);
  std::optional<Choice> tune_first_use(const OpRegistration& op, const DeviceInfo& device,
                                       const ProblemId& problem, const Choice& fallback,
                                       cache::Database* db);

  std::optional<DeviceInfo> fixed_device_;
  std::mutex mutex_;
  std::map<int, DeviceInfo> devices_;
  std::shared_ptr<DatabaseSlot> db_;
  uint64_t generation_ = 0;  // bumped by set_database: choices made before are not memoized
  std::optional<TuningPolicy> tuning_;
  KernelCache kernels_;
  BoundedMemo<MemoKey, std::shared_ptr<const Choice>, MemoKeyHash> memo_{kMemoCapacity};
  Workspaces workspaces_;
  std::mutex tune_mutex_;  // one first-use tuning at a time: timings must not overlap
  ShapeRecorder recorder_;
};

}  // namespace tuned
