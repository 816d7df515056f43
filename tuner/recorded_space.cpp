#include "tuner/recorded_space.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "cache/records.hpp"
#include "core/problem_key.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"

namespace tuned {
namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(line);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

double number(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') {
    throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": '" + text + "' is not a number");
  }
  return v;
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// A trial line's fields: trial DISPOSITION MS COMPILE_MS RUNS CONFIG.
RecordedTrial read_trial(const std::vector<std::string>& f, const std::string& where) {
  if (f.size() != 6) throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": a trial has 6 fields");
  RecordedTrial t;
  cache::Disposition d;
  try {
    d = cache::disposition_from_string(f[1]);
  } catch (const Error& e) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": " + e.what());
  }
  t.disposition = f[1];
  t.ok = d == cache::Disposition::kOk;
  t.ran = d != cache::Disposition::kCompileError && d != cache::Disposition::kResourceLimit;
  t.ms = number(f[2], where);
  t.compile_ms = number(f[3], where);
  t.runs = static_cast<int>(number(f[4], where));
  t.config = f[5];
  if (t.ok && !(t.ms > 0)) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": an ok trial needs a time above 0");
  }
  return t;
}

// A NAME<TAB>VALUE line: one of the record's problem and device properties.
void read_property(const std::string& name, const std::string& value, const std::string& where,
                   RecordedSpace& r) {
  if (name == "op") {
    r.op = value;
  } else if (name == "variant") {
    r.variant = value;
  } else if (name == "shape") {
    auto shape = parse_shape_string(value);
    if (!shape) throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": '" + value + "' is no shape");
    r.shape = std::move(*shape);
  } else if (name == "alignment") {
    r.alignment = static_cast<int>(number(value, where));
  } else if (name == "device") {
    r.device = value;
  } else if (name == "cc") {
    r.compute_capability = static_cast<int>(number(value, where));
  } else if (name == "template_hash") {
    r.template_hash = value;
  } else if (name == "baseline_ms") {
    r.baseline_ms = number(value, where);
  } else if (name == "compile_threads") {
    r.compile_threads = static_cast<int>(number(value, where));
  } else {
    throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": unknown line '" + name + "'");
  }
}

}  // namespace

RecordedSpace read_recorded_space(const std::string& path) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw Error(TUNED_STATUS_CONFIG_ERROR, path + ": cannot be read");
  RecordedSpace r;
  std::string line;
  char buffer[4096];
  int line_no = 0;
  bool partial = false;
  while (gzgets(file.get(), buffer, sizeof buffer) != nullptr) {
    line += buffer;
    if (line.empty() || line.back() != '\n') {
      partial = true;
      continue;  // a line longer than the buffer: read on
    }
    partial = false;
    line.pop_back();
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    const auto f = split(line, '\t');
    line.clear();
    if (f.empty() || f[0].empty() || f[0][0] == '#') continue;
    const std::string& name = f[0];
    if (name == "trial") {
      r.trials.push_back(read_trial(f, where));
      continue;
    }
    if (name == "first" && f.size() == 2) {
      r.first.push_back(f[1]);
      continue;
    }
    if (f.size() != 2) throw Error(TUNED_STATUS_CONFIG_ERROR, where + ": expected NAME<TAB>VALUE");
    read_property(name, f[1], where, r);
  }
  if (partial || !gzeof(file.get())) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, path + ": truncated or not a recorded space");
  }
  if (r.op.empty() || r.shape.empty() || r.trials.empty()) {
    throw Error(TUNED_STATUS_CONFIG_ERROR, path + ": needs op, shape and trial lines");
  }
  // Each config keyed as the tuner keys it (every parameter, flat): a record's text may name its
  // family by word, or be older than a parameter.
  const std::vector<Param>& params = config_params(r.op);
  for (auto& t : r.trials) t.config = read_config(t.config, params).canonical();
  for (auto& c : r.first) c = read_config(c, params).canonical();
  return r;
}

Space recorded_problem_space(const RecordedSpace& record, size_t* dropped) {
  Space space = request_space({record.op, record.shape, record.variant, {}},
                              reference_device(record.compute_capability));
  std::vector<Config> recorded;
  for (const auto& t : record.trials) recorded.push_back(Config::parse(t.config));
  const size_t kept = space.restrict_to(recorded);
  if (dropped) *dropped = recorded.size() - kept;
  return space;
}

double recorded_best_ms(const RecordedSpace& record, const Space& space) {
  double best = 0;
  for (const auto& t : record.trials) {
    if (!t.ok || t.ms <= 0 || (best > 0 && t.ms >= best)) continue;
    if (!space.violation(Config::parse(t.config))) best = t.ms;
  }
  return best;
}

std::vector<Config> recorded_first(const RecordedSpace& record) {
  const OpRegistration& op = find_op(record.op);
  const ProblemId id = op.problem_id(record.variant, record.shape, record.alignment);
  std::vector<Config> first;
  for (const auto& c : record.first) first.push_back(op.face->serve(Config::parse(c), id));
  return first;
}

void write_recorded_space(const std::string& path, const RecordedSpace& r) {
  std::ostringstream out;
  out << "# tuned recorded space: every config measured once (bench/record_space)\n";
  out << "op\t" << r.op << "\nvariant\t" << r.variant << "\nshape\t";
  for (size_t i = 0; i < r.shape.size(); ++i) out << (i ? "x" : "") << r.shape[i];
  out << "\nalignment\t" << r.alignment << "\ndevice\t" << r.device << "\ncc\t"
      << r.compute_capability << "\ntemplate_hash\t" << r.template_hash << "\nbaseline_ms\t"
      << r.baseline_ms << "\ncompile_threads\t" << r.compile_threads << "\n";
  for (const auto& c : r.first) out << "first\t" << c << "\n";
  for (const auto& t : r.trials) {
    out << "trial\t" << t.disposition << "\t" << t.ms << "\t" << t.compile_ms << "\t" << t.runs
        << "\t" << t.config << "\n";
  }
  const std::string text = out.str();
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "wb9"));
  if (!file || gzwrite(file.get(), text.data(), static_cast<unsigned>(text.size())) !=
                   static_cast<int>(text.size())) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, path + ": cannot be written");
  }
}

std::vector<ReplayedProblem> replayed_problems(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        const std::string name = entry.path().string();
        if (name.size() > 7 && name.compare(name.size() - 7, 7, ".tsv.gz") == 0) {
          found.push_back(name);
        }
      }
      if (found.empty()) {
        throw Error(TUNED_STATUS_CONFIG_ERROR, path + ": no recorded space (*.tsv.gz) in it");
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  std::vector<ReplayedProblem> problems;
  for (const std::string& file : files) {
    ReplayedProblem p;
    p.record = read_recorded_space(file);
    p.space = recorded_problem_space(p.record);
    // A record names no work per run: its rate is runs per second, whatever the op.
    p.rate_at_1ms = 1000;
    p.rate_unit = "runs/s";
    problems.push_back(std::move(p));
  }
  return problems;
}

}  // namespace tuned
