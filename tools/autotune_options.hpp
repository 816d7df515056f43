// What `autotune` was asked to do, from its command line and an optional TOML file. Parsing only:
// no CUDA, no database.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "templates/registry.hpp"
#include "tuner/strategy.hpp"

namespace tuned::tools {

/// One problem to tune: an op, its variant ("": the op's first) and a shape. alignment is the one
/// a recorded call had (0: none recorded); the run says where its tuning task's differs.
struct ShapeRequest {
  std::string op;
  std::string layout;
  std::vector<int64_t> shape;
  int alignment = 0;
  bool operator==(const ShapeRequest&) const = default;
};

struct AutotuneOptions {
  int device = 0;  // --device N: the one GPU tuned on
  /// --device all or a list (0,1,3): tasks shared out over these GPUs, one tuner each. Both unset
  /// (the default): `device` alone. A list holds two or more distinct indices.
  bool all_devices = false;
  std::vector<int> devices;
  std::string device_argument = "--device";  // where the selection came from, for errors
  std::string op = "gemm";                  // a registered op
  std::vector<std::vector<int64_t>> shapes;  // empty: the op's default set
  int64_t batch = 0;  // --batch N: each shape as a batch of N products (its BATCH dimension)
  std::string layout;                       // the op's variant (upper-cased); "": its first
  double budget_s = 0;                      // whole run, wall seconds; 0: 60 per shape
  int max_trials = 0;                       // per shape; 0: no limit besides the budget
  int patience = 0;  // per shape: stop after this many trials without a faster one; 0: never
  std::string strategy = kDefaultStrategy;  // tuner/strategy.hpp's strategy_names()
  std::string db_path;                      // empty: default_database_path()
  std::string config_file;                  // the TOML file, if any
  uint64_t seed = 0;                        // 0: from the clock
  bool verbose = false;
  bool quiet = false;     // --quiet: no progress
  bool progress = false;  // --progress: progress lines where stderr is no terminal too
  bool wide = false;      // --wide: whole configs in the results table
  bool no_wait = false;  // another tuner holds the GPU: refuse instead of waiting
  bool remeasure = false;  // measure configs again that earlier runs measured (no resume)
  bool flush_l2 = false;   // the leaders' final round timed with the L2 cache flushed
  /// Restrictions of the space: parameter name -> allowed values (TOML [space] table); they
  /// apply to the problems of `op`.
  std::map<std::string, std::vector<int>> space;
  std::string shapes_from;             // --shapes-from: the file `recorded` was read from
  std::vector<ShapeRequest> recorded;  // its problems (replacing op x shapes x layout)
  std::string json_path;               // --json: the results table as JSON, rewritten per shape
  std::string report_path;             // --report: the run's tuning report (HTML), at the end

  // Many machines (cache/store_queue.hpp, tuner/fleet_worker.hpp): a PostgreSQL store and what to
  // do with its queue instead of tuning here and now.
  enum class QueueMode { kNone, kEnqueue, kWorker, kStatus };
  QueueMode queue_mode = QueueMode::kNone;
  std::string store_url;                   // --store URL
  std::vector<std::string> device_models;  // --device-model NAME (enqueue: for these models only)
  int lease_s = 60;                        // --lease SECONDS (worker)
  bool wait = false;                       // --wait (worker: wait for tasks when none is left)
  std::string node;                        // --node NAME (worker: its name in the store)
  // --replay PATH...: recorded spaces (bench/replay/*.tsv.gz or a folder of them) stand in for
  // GPUs, --replay-gpus of them, each trial taking --replay-pace milliseconds of wall time.
  std::vector<std::string> replay;
  int replay_gpus = 1;
  int replay_pace_ms = 0;
};

/// Whether the run tunes on several GPUs' tuners (--device all or a list), however many there are.
bool several_devices(const AutotuneOptions& options);
/// The selection as the user wrote it: "2", "all" or "0,1,3".
std::string device_text(const AutotuneOptions& options);
/// The GPUs to tune on, on a machine with `count` of them: `device`, the listed ones, or 0..count-1
/// for all. Throws Error(TUNED_STATUS_INVALID_ARGUMENT) naming the argument and the rule for a
/// listed index not below count (the one device of --device N is the device query's to refuse).
std::vector<int> selected_devices(const AutotuneOptions& options, int count);
/// A task's work for ordering a shared queue: the product of the shape's sizes (the dimensions
/// that are no radius or level count), so the largest products start first.
double estimated_work(const ShapeRequest& problem);

/// The problems a run tunes, in order: the --shapes-from file's, else each shape (the op's
/// default set when none is given) of the op in the layout.
std::vector<ShapeRequest> shape_requests(const AutotuneOptions& options);

/// The tuning request of a problem under the options ([space] applies to the options' op).
TaskRequest task_request(const AutotuneOptions& options, const ShapeRequest& problem);

/// Reads a shapes file: one problem per line, "[OP] [LAYOUT] SHAPE [align N]" (what the recorder
/// of TUNED_RECORD writes, e.g. "gemm NN 4096x1024x512 align 4", or plain "NT 512x512x512");
/// OP defaults to default_op and LAYOUT to default_layout ("": the op's first); '#' starts a
/// comment; repeated problems are read once. Throws Error(TUNED_STATUS_CONFIG_ERROR) naming the
/// file, the line and the rule; the file is refused unread like a config file that is no regular
/// file or larger than kMaxShapesBytes.
std::vector<ShapeRequest> read_shapes_file(const std::string& path, const std::string& default_op,
                                           const std::string& default_layout);

/// The largest shapes file read (100k recorded problems take about 4 MB).
inline constexpr uint64_t kMaxShapesBytes = uint64_t{64} << 20;

/// Parses "MxNxK" (or "RxC" for two-dimensional ops): positive integers separated by 'x'. Throws
/// Error(TUNED_STATUS_INVALID_ARGUMENT) naming the text and the rule.
std::vector<int64_t> parse_shape(const std::string& text);

/// Reads a TOML file into options (keys: shapes = ["MxNxK", ...], layout, budget, max_trials,
/// strategy, seed, db, device, op, and a [space] table of integers or integer arrays). Keys the
/// file sets replace the options' values; on any error the options are left unchanged. Throws
/// Error(TUNED_STATUS_CONFIG_ERROR) naming the file, line and column, and the key for type errors
/// or unknown keys; a path that is no regular file of at most kMaxConfigBytes is refused unread.
void apply_toml_file(const std::string& path, AutotuneOptions& options);

/// The largest config file read (a real one is a few hundred bytes).
inline constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;

/// Result of parsing the command line: either options to run with, or text to print and an exit
/// code (--help, --version, or an argument error).
struct ParseResult {
  AutotuneOptions options;
  bool exit_now = false;
  int exit_code = 0;
  std::string message;  // help text, the version line or the error
};

/// Parses autotune's command line (CLI11). Command-line values override the TOML file's. Errors
/// (unknown flag, bad --device, bad --shape, bad layout or strategy, negative budget, malformed
/// TOML, a shape or [space] restriction the op cannot take) come back as exit_now with exit_code 2
/// and a message naming the argument and the rule, before any device or database is touched.
ParseResult parse_autotune_command_line(int argc, const char* const* argv);

}  // namespace tuned::tools
