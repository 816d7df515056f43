// What a tuning report shows, gathered from a database by reading it (tunedb report, autotune
// --report): per device, every best with its rate and its baseline's, where it sits on the
// roofline, its kernel family, and each session's tuning curves; then the database's provenance.
// Op-generic: rates, roofline positions and families come from each op's registry face.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cache/database.hpp"

namespace tuned::report {

/// One tuned problem's best, as the report's table, roofline and family map show it.
struct BestRow {
  std::string op, variant, shape;  // shape as "4096x4096x4096"
  std::vector<int64_t> dims;
  int alignment = 1;
  std::string config;              // canonical
  std::string short_config;        // the parameters that vary among this device and op's bests
  std::string family;              // the op's name for the config's kind ("" for an op of one kind)
  double ms = 0, baseline_ms = 0;  // baseline_ms 0: not measured
  double flops = 0, bytes = 0;     // one call's work: flops (0 for memory-bound ops), bytes moved
  std::string rate_unit;           // the op's: "TFLOP/s" or "GB/s"
  double rate = 0, baseline_rate = 0;  // recomputed from ms and the work, in rate_unit
  std::string origin, source, template_hash;
  bool current_template = true;  // measured on this build's template (else never served)
  int64_t session_id = 0;
};

/// Best-so-far of one problem within one session: (trial number from 1, ms) and (seconds since
/// the session's first trial, ms) at each improvement, the last point at the last trial.
struct Curve {
  int64_t session_id = 0;
  std::string problem;  // "gemm NN 4096x4096x4096"
  std::vector<std::pair<double, double>> by_trial, by_seconds;
  int64_t trials = 0;
  double final_ms = 0;
};

/// A device's ceilings at its reported clock: what its roofline is drawn against (0: unknown).
struct Ceilings {
  double fp32_tflops = 0;        // FP32 SIMT peak
  double tf32_tflops = 0;        // TF32 tensor-core dense peak
  double bandwidth_gbps = 0;     // memory bandwidth (datasheet, by model)
  std::string bandwidth_source;  // where bandwidth_gbps comes from
};

struct DeviceSection {
  cache::DeviceRecord device;
  Ceilings ceilings;
  std::vector<BestRow> bests;
  std::vector<Curve> curves;  // the sessions' curves of this device, most trials first
  int64_t trials = 0, ok_trials = 0;
};

struct SessionRow {
  cache::SessionRecord session;
  int64_t trials = 0, ok = 0;
};

struct Report {
  std::string database;  // the path read
  std::vector<DeviceSection> devices;
  std::vector<SessionRow> sessions;
  // Provenance: bests per (op, template hash) and whether that hash is this build's; bests per
  // source ("" = measured here) and origin (autotune, first-use).
  struct TemplateCount {
    std::string op, hash;
    bool current = false;
    int64_t bests = 0;
  };
  std::vector<TemplateCount> templates;
  std::map<std::string, int64_t> sources, origins;
  std::map<std::string, std::vector<std::string>> op_dims;  // each op's dimension names
  int64_t trials = 0, skipped_rows = 0;
};

/// What a report covers: filter's device and op (its session and limit unused); with
/// sessions_after, only the sessions of higher id (one autotune run's), their trials, and the
/// bests of the problems they tuned.
struct Scope {
  cache::Filter filter;
  int64_t sessions_after = 0;  // 0: every session
};

/// Reads db (a reader: nothing is written) into a report of scope. At most max_curves curves per
/// device are kept (those of the most trials).
Report gather(cache::Database& db, const Scope& scope, int max_curves = 24);

/// A device's ceilings from its record (compute capability, SMs, clock, model name).
Ceilings device_ceilings(const cache::DeviceRecord& device);

}  // namespace tuned::report
