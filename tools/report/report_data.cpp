#include "tools/report/report_data.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <set>

#include "core/device_info.hpp"
#include "core/space.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned::report {
namespace {

// Seconds since the epoch of the database's "YYYY-MM-DDTHH:MM:SSZ"; -1 where it is not that.
double utc_seconds(const std::string& text) {
  std::tm t{};
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                  &t.tm_min, &t.tm_sec) != 6) {
    return -1;
  }
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return static_cast<double>(timegm(&t));
}

// The template hash this build compiles an op's kernels from (what a best must have been
// measured on to be served): its fallback config's source, on a reference GPU; "" where the op
// cannot say.
std::string current_template_hash(const OpRegistration& op) {
  try {
    const ProblemId id = op.problem_id("", op.default_shapes.front(), 1);
    const DeviceInfo device = reference_device(90);
    return op.face->kernel_spec(op.face->fallback_config(device, id), id).source_hash;
  } catch (const std::exception&) {
    return "";
  }
}

// The parameters of configs whose values differ between them (or that some lack), in the order
// the first config names them.
std::vector<std::string> varying_parameters(const std::vector<Config>& configs) {
  std::vector<std::string> order;
  std::map<std::string, std::set<int>> values;
  std::map<std::string, size_t> holders;
  for (const Config& config : configs) {
    for (size_t i = 0; i < config.size(); ++i) {
      if (!values.count(config.name(i))) order.push_back(config.name(i));
      values[config.name(i)].insert(config.value(i));
      ++holders[config.name(i)];
    }
  }
  std::vector<std::string> varying;
  for (const auto& name : order) {
    if (values[name].size() > 1 || holders[name] != configs.size()) varying.push_back(name);
  }
  return varying;
}

// config with only the named parameters ("BM=128,BN=64"); the whole config where none are.
std::string abbreviated(const Config& config, const std::vector<std::string>& names) {
  if (names.empty()) return config.canonical();
  std::string out;
  for (size_t i = 0; i < config.size(); ++i) {
    if (std::find(names.begin(), names.end(), config.name(i)) == names.end()) continue;
    if (!out.empty()) out += ',';
    out += config.name(i) + "=" + std::to_string(config.value(i));
  }
  return out;
}

// "GPU-... gemm NN 4096x4096x4096 4": a problem of one device, as trials and bests key it.
std::string key_text(const ProblemKey& k) {
  return k.device_uuid + " " + k.op + " " + k.variant + " " + k.shape_string() + " " +
         std::to_string(k.alignment);
}

// Best-so-far of one (session, problem) as its trials are read in the order they were recorded.
struct CurveBuilder {
  Curve curve;
  std::string device_uuid;
  double first_seconds = -1, last_seconds = 0, best = 0;
  void add(const cache::TrialRecord& t) {
    ++curve.trials;
    const double at = utc_seconds(t.created_at);
    if (first_seconds < 0 && at >= 0) first_seconds = at;
    last_seconds = at >= 0 && first_seconds >= 0 ? at - first_seconds : last_seconds;
    const bool ok = t.disposition == cache::Disposition::kOk && t.ms_median > 0;
    if (ok && (best == 0 || t.ms_median < best)) {
      best = t.ms_median;
      curve.by_trial.emplace_back(static_cast<double>(curve.trials), best);
      curve.by_seconds.emplace_back(last_seconds, best);
    }
  }
  Curve finish() {
    if (best > 0) {  // the last trial's point: how long the best held
      curve.by_trial.emplace_back(static_cast<double>(curve.trials), best);
      curve.by_seconds.emplace_back(last_seconds, best);
    }
    curve.final_ms = best;
    return std::move(curve);
  }
};

}  // namespace

Ceilings device_ceilings(const cache::DeviceRecord& device) {
  Ceilings c;
  const int cc = device.cc_major * 10 + device.cc_minor;
  // FP32 lanes and dense TF32 tensor flops per SM and clock, by architecture (vendor figures).
  const int fp32_lanes = cc >= 86 ? 128 : cc >= 70 ? 64 : 0;
  const int tf32_flops = cc >= 100 ? 4096 : cc == 90 ? 2048 : cc == 80 ? 1024 : cc >= 86 ? 256 : 0;
  const double clock_hz = device.clock_khz * 1e3;
  c.fp32_tflops = device.sm_count * fp32_lanes * 2.0 * clock_hz / 1e12;
  c.tf32_tflops = device.sm_count * tf32_flops * clock_hz / 1e12;
  // Memory bandwidth is not a property CUDA reports exactly: datasheet figures by model, the
  // more specific names first.
  static const std::pair<const char*, double> kModels[] = {{"GH200", 4000},
                                                           {"H200", 4800},
                                                           {"H100 NVL", 3900},
                                                           {"H100 PCIe", 2000},
                                                           {"H100", 3350},
                                                           {"A100-SXM4-80GB", 2039},
                                                           {"A100 80GB PCIe", 1935},
                                                           {"A100", 1555},
                                                           {"B200", 8000},
                                                           {"L40S", 864},
                                                           {"L40", 864},
                                                           {"L4", 300},
                                                           {"RTX 4090", 1008},
                                                           {"RTX 3090", 936},
                                                           {"V100", 900}};
  for (const auto& [model, gbps] : kModels) {
    if (device.name.find(model) != std::string::npos) {
      c.bandwidth_gbps = gbps;
      c.bandwidth_source = std::string("datasheet figure of the ") + model;
      break;
    }
  }
  return c;
}

Report gather(cache::Database& db, const Scope& scope, int max_curves) {
  Report report;
  report.database = db.path();
  cache::Filter filter = scope.filter;
  filter.session_id = 0;
  filter.limit = 0;
  std::map<std::string, size_t> device_at;  // uuid -> index in report.devices
  for (const auto& d : db.devices()) {
    if (!filter.device_uuid.empty() && d.uuid != filter.device_uuid) continue;
    device_at[d.uuid] = report.devices.size();
    report.devices.push_back({d, device_ceilings(d), {}, {}, 0, 0});
  }
  std::map<std::string, const OpRegistration*> ops;
  std::map<std::string, std::string> current_hash;
  for (const auto& op : op_registrations()) {
    ops[op.name] = &op;
    current_hash[op.name] = current_template_hash(op);
    report.op_dims[op.name] = op.dims;
  }
  const auto in_scope = [&](int64_t session) { return session > scope.sessions_after; };

  db.for_each_session(filter, true, [&](const cache::Database::SessionSummary& s) {
    if (in_scope(s.session.id)) report.sessions.push_back({s.session, s.trials, s.ok});
  });

  // Tuning curves, one trial at a time (a database of 10^5 trials is never held in memory).
  std::map<std::pair<int64_t, std::string>, CurveBuilder> curves;
  std::set<std::string> tuned_problems;  // the scope's, where it is a run's
  db.for_each_trial(filter, [&](const cache::TrialRecord& t) {
    const auto device = device_at.find(t.key.device_uuid);
    if (device == device_at.end() || !in_scope(t.session_id)) return;
    ++report.trials;
    DeviceSection& section = report.devices[device->second];
    ++section.trials;
    section.ok_trials += t.disposition == cache::Disposition::kOk;
    const std::string problem = t.key.op + " " + t.key.variant + " " + t.key.shape_string();
    if (scope.sessions_after > 0) tuned_problems.insert(key_text(t.key));
    CurveBuilder& builder = curves[{t.session_id, problem}];
    if (builder.curve.trials == 0) {
      builder.curve.session_id = t.session_id;
      builder.curve.problem = problem;
      builder.device_uuid = t.key.device_uuid;
    }
    builder.add(t);
  });
  for (auto& [key, builder] : curves) {
    const std::string uuid = builder.device_uuid;
    Curve curve = builder.finish();
    if (curve.final_ms > 0) report.devices[device_at[uuid]].curves.push_back(std::move(curve));
  }
  for (auto& section : report.devices) {
    auto& list = section.curves;
    std::stable_sort(list.begin(), list.end(),
                     [](const Curve& a, const Curve& b) { return a.trials > b.trials; });
    if (static_cast<int>(list.size()) > max_curves) list.resize(static_cast<size_t>(max_curves));
  }

  // The bests, each placed on its device's roofline through its op's face.
  std::map<std::pair<std::string, std::string>, int64_t> template_bests;
  std::vector<std::vector<Config>> configs(report.devices.size());  // each best's, parsed
  db.for_each_best(filter, [&](const cache::BestRecord& b) {
    const auto device = device_at.find(b.key.device_uuid);
    if (device == device_at.end()) return;
    if (scope.sessions_after > 0 && !tuned_problems.count(key_text(b.key))) {
      return;  // not a problem of the run
    }
    const auto known = ops.find(b.key.op);
    const OpRegistration* op = known == ops.end() ? nullptr : known->second;
    if (op == nullptr || !(b.ms > 0)) {
      ++report.skipped_rows;  // an op this build does not know
      return;
    }
    BestRow row;
    row.op = b.key.op;
    row.variant = b.key.variant;
    row.shape = b.key.shape_string();
    row.dims = b.key.shape;
    row.alignment = b.key.alignment;
    row.config = b.config;
    row.ms = b.ms;
    row.baseline_ms = b.baseline_ms;
    row.rate_unit = op->rate_unit;
    row.origin = cache::to_string(b.origin);
    row.source = b.source;
    row.template_hash = b.template_hash;
    row.session_id = b.session_id;
    row.current_template = b.template_hash.empty() || current_hash[b.key.op].empty() ||
                           b.template_hash == current_hash[b.key.op];
    Config config;
    try {
      const ProblemId id = op->problem_id(b.key.variant, b.key.shape, b.key.alignment);
      row.flops = op->face->flops(id);
      row.bytes = static_cast<double>(op->face->operand_bytes(id));
      config = read_config(b.config, op->params);
      row.family = op->face->describe_config(config);
    } catch (const std::exception&) {
      ++report.skipped_rows;  // a variant or config this build cannot read
      return;
    }
    // The op's rate, from the work and the time (a replayed or older row may hold another unit).
    const double work = op->rate_unit == "TFLOP/s" ? row.flops / 1e9 : row.bytes / 1e6;
    row.rate = work / row.ms;
    row.baseline_rate = row.baseline_ms > 0 ? work / row.baseline_ms : 0;
    ++template_bests[{row.op, row.template_hash}];
    ++report.sources[row.source];
    ++report.origins[row.origin];
    report.devices[device->second].bests.push_back(std::move(row));
    configs[device->second].push_back(std::move(config));
  });
  for (const auto& [key, count] : template_bests) {
    report.templates.push_back(
        {key.first, key.second, key.second == current_hash[key.first], count});
  }

  // Short configs: per device and op, the parameters that vary among its bests.
  for (size_t d = 0; d < report.devices.size(); ++d) {
    auto& bests = report.devices[d].bests;
    std::map<std::string, std::vector<Config>> by_op;
    for (size_t i = 0; i < bests.size(); ++i) by_op[bests[i].op].push_back(configs[d][i]);
    std::map<std::string, std::vector<std::string>> varying;
    for (const auto& [op, list] : by_op) varying[op] = varying_parameters(list);
    for (size_t i = 0; i < bests.size(); ++i) {
      bests[i].short_config = abbreviated(configs[d][i], varying[bests[i].op]);
    }
  }
  for (const char* table : {"devices", "sessions", "trials", "best"}) {
    report.skipped_rows += db.skipped(table);
  }
  return report;
}

}  // namespace tuned::report
