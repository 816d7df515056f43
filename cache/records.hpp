// Plain records stored in the tuning database. No SQLite here: templates/, tuner/ and api/ build
// and read these; only cache/database.cpp knows how they are stored. Cubins and their key belong
// to the generator (core/cubin.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem_key.hpp"

namespace tuned::cache {

/// Identity and limits of one GPU. The UUID identifies the physical device across processes.
struct DeviceRecord {
  std::string uuid;  // "GPU-xxxxxxxx-..." as nvidia-smi prints it
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int clock_khz = 0;
};

/// The record of a queried device (what autotune and first-use tuning store, what lookups match).
DeviceRecord device_record(const DeviceInfo& device);

// ProblemKey and shape_distance are the ops' vocabulary (core/problem_key.hpp).
using tuned::ProblemKey;
using tuned::shape_distance;

/// Outcome of one candidate. kInaccurate: right, but beyond the op's accuracy contract (GEMM: a
/// normwise error against an FP64 product above twice cuBLAS SGEMM's on the same inputs).
enum class Disposition {
  kOk,
  kCompileError,
  kResourceLimit,
  kLaunchError,
  kWrongResult,
  kTimeout,
  kInaccurate
};
const char* to_string(Disposition d);
Disposition disposition_from_string(const std::string& s);  // throws Error on unknown

/// Who measured a best: a tuning session, the runtime timing a few candidates on a shape's first
/// call, or the tables built into the library.
enum class BestOrigin { kAutotune, kFirstUse, kShipped };
const char* to_string(BestOrigin o);  // "autotune", "first-use", "shipped": the stored names
BestOrigin best_origin_from_string(const std::string& s);  // throws Error on unknown

/// One tuning session: one `autotune` run for one op.
struct SessionRecord {
  int64_t id = 0;
  std::string device_uuid;
  std::string op;
  std::string strategy;
  double budget_s = 0;
  std::string started_at;  // ISO 8601 UTC, filled by the database
  // Who the session is across databases: "<device uuid>|<started_at>|<id in the database that
  // began it>|<random>", filled by the database (sessions begun before schema version 4 have no
  // random part). A merge copies a session under a new id and keeps this, so merging the same
  // source again finds it.
  std::string origin;
};

/// One candidate measured (or rejected) during a session.
struct TrialRecord {
  int64_t session_id = 0;
  ProblemKey key;
  std::string config;       // canonical "GEMV=0,BM=128,BN=128,..."
  std::string kernel_name;  // "gemm_nn_bm128_bn128_..."
  Disposition disposition = Disposition::kOk;
  std::string message;   // why it was rejected (compile log excerpt, error, max error)
  double ms_median = 0;  // 0 unless ok
  double ms_min = 0;
  int runs = 0;
  double rate = 0;  // the op's rate in its unit (TFLOP/s for gemm, GB/s for transpose)
  // The unit of the rate ("TFLOP/s", "GB/s"); "" where unknown (rows older than schema version 5).
  std::string rate_unit;
  double rel_error = 0;
  int registers = 0;
  int spill_bytes = 0;
  double compile_ms = 0;
  // Hash of the op template's source: a config measured on the same template is not measured
  // again by a re-run ("" in rows older than schema version 3).
  std::string template_hash;
  std::string created_at;  // filled by the database
};

/// The best configuration found for a key, with the baseline measured in the same run.
struct BestRecord {
  ProblemKey key;
  std::string config;
  std::string kernel_name;
  double ms = 0;
  double rate = 0;  // the op's rate in its unit, like TrialRecord::rate
  // The unit of the rate; "" where unknown (rows older than schema version 5).
  std::string rate_unit;
  double baseline_ms = 0;  // cuBLAS (or the op's baseline) in the same session; 0 if not measured
  int64_t session_id = 0;
  std::string updated_at;  // filled by the database
  BestOrigin origin = BestOrigin::kAutotune;
  // Hash of the op template's source it was measured on (KernelSpec::source_hash): a best of
  // another template is never served. "" in rows older than schema version 4 (unknown: served).
  std::string template_hash;
  // Where it came from: "" where measured in this database, else the database or file it was
  // merged or imported from ("host:/path"), kept as it travels on.
  std::string source;
};

}  // namespace tuned::cache
