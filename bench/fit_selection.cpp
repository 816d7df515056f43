// fit_selection: writes a selection-model table (cache/selection_model.hpp) for one GPU model and
// op from sweep measurements (bench/gemm_sweep's TSV: a '# <sweep> on <GPU> (sm_NN, ...)' line, a
// header naming the columns, one row per problem and candidate config). Per variant it picks a
// portfolio greedily, each step adding the config that most reduces the summed log regret (time
// over the problem's best measured time, log(20) where no chosen entry has a time), each problem
// weighed by its time (1 + cuBLAS ms / --time-weight-ms: losing 20 % on a 5 ms product costs the
// fit far more than on a 10 us one, and small products still count), and writes every retained
// problem as a point with the portfolio's times. Wrong results, and results beyond the op's
// accuracy contract where the sweep checked it (a within_contract column of 0), and configs the op
// does not run as they are on the row's problem (its fit throws on a rule newer than the sweep, or
// changes the config: the library would run another kernel there), are left out;
// the held-out problems (bench/held_out.hpp) are dropped: the model is never fitted on them.
// Prints the expected quality per variant (leave-one-out) to stderr.
//   zcat bench/data/sweeps/gemm_sweep_nvidia-h100_grid-random-base.tsv.gz |
//     fit_selection - --op gemm --entries 16 --neighbours 5 --out TABLE
// A sweep of batches (a batch column after the dims) gives points where the library looks each
// batch up (OpFace::selection_shape). --append-to TABLE keeps a fitted table's portfolio and
// points and adds the sweep's problems as points timed with its entries; --add-entries N also
// adds up to N of the sweep's other configs per variant as entries (chosen like the portfolio,
// on the new problems; '-' at the old points, so they are picked only near the new ones):
//   fit_selection SWEEP --append-to TABLE [--add-entries N] --out TABLE
// The header records the date (SOURCE_DATE_EPOCH where set), the command line and the inputs in
// order. scripts/shipped_data.sh regenerates the shipped tables as bench/data/MANIFEST lists them.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/held_out.hpp"
#include "cache/selection_model.hpp"
#include "core/space.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tools/tool_version.hpp"
#include "tuned/error.hpp"

namespace {

using tuned::Error;

const double kMissingRegret = std::log(20.0);  // as cache/selection_model.cpp counts a '-'
constexpr int kTransferNeighbours = 5;
// The parameter whose width the alignment class bounds (the sweep lowers it to the alignment).
constexpr const char* kVectorParam = "VEC";

struct Problem {
  std::string variant;
  std::vector<int64_t> shape;       // as the library looks it up (OpFace::selection_shape)
  std::vector<int64_t> full_shape;  // as swept (a GEMM batch: m, n, k, batch)
  int alignment = 1;
  double cublas_ms = 0;
  double weight = 1;                 // in the portfolio's objective: 1 + cublas_ms / scale
  std::map<std::string, double> ms;  // config -> ms, valid results only
  double best = 0;
  std::string best_config;
  std::vector<double> coords;  // log2(d + 1)
};

using ProblemKey = std::pair<std::string, std::vector<int64_t>>;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out;
}

// The entry's time on a problem: that of the entry as the op serves it there, where measured
// (served: e.g. a GEMM TMA-fed entry packed on an unaligned problem, which the sweep times so, or
// in partial chains of slice sums); else its own (standing for the served form where the op
// holds its times to transfer, see SweepReader::op_accepts); else, where the problem's
// alignment is below the entry's vector width, the time of its sibling with the widest narrower
// width measured there (the sweep fits each config to the alignment); else none (-1).
double entry_ms(const std::string& config, const std::function<std::string()>& served,
                const Problem& p) {
  if (auto it = p.ms.find(served()); it != p.ms.end()) return it->second;
  if (auto it = p.ms.find(config); it != p.ms.end()) return it->second;
  tuned::Config c = tuned::Config::parse(config);
  if (!c.has(kVectorParam) || c.get(kVectorParam) <= p.alignment) return -1;
  for (int v = c.get(kVectorParam) - 1; v >= 1; --v) {
    c.set(kVectorParam, v);
    if (auto it = p.ms.find(c.canonical()); it != p.ms.end()) return it->second;
  }
  return -1;
}

double distance(const Problem& a, const Problem& b) {
  double d = 0;
  for (size_t i = 0; i < a.coords.size(); ++i) d += std::fabs(a.coords[i] - b.coords[i]);
  return d;
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

struct Options {
  std::vector<std::string> inputs;
  std::string input_name;  // what '-' is, for the header
  std::string op = "gemm";
  std::string device_name;
  int cc = 0;
  int entries = 16;
  int neighbours = 5;
  int sm_count = 0;              // of the GPU the sweep ran on
  double time_weight_ms = 0.05;  // a problem weighs 1 + cuBLAS ms / this (0: every problem 1)
  std::string feature_weights;   // "padding=0.75,waves=0.5": the op's selection features
  bool op_rules = true;          // leave out configs the op refuses on their problem
  std::string append_to;         // a table fit_selection wrote: its portfolio kept, points added
  int add_entries = 0;           // with append_to: new entries per variant, from the sweep
  std::string out;
  std::string command_line;
};

struct Sweep {
  std::map<ProblemKey, Problem> problems;
  std::string device_line;  // the first '#' line naming the GPU
  std::string device_name;  // named there
  // refused: configs the op no longer runs as they are on the row's problem (a rule newer than the
  // sweep refuses them, or the op serves them otherwise there).
  size_t rows = 0, invalid = 0, inaccurate = 0, refused = 0, dropped_rows = 0;
  std::set<ProblemKey> dropped;
};

// Parses "# <sweep> on <GPU name> (sm_NN, S SMs)".
void device_from_comment(const std::string& line, std::string& name, int& cc, int& sms) {
  const size_t on = line.find(" on ");
  const size_t paren = line.rfind(" (");
  if (on == std::string::npos || paren == std::string::npos || paren < on) return;
  name = line.substr(on + 4, paren - on - 4);
  const size_t sm = line.find("sm_", paren);
  if (sm != std::string::npos) cc = std::atoi(line.c_str() + sm + 3);
  const size_t count = line.find(", ", paren);
  if (count != std::string::npos && line.find(" SMs", count) != std::string::npos) {
    sms = std::atoi(line.c_str() + count + 2);
  }
}

// Reads one sweep into a Sweep: the first comment line names the GPU (and gives opt the device
// name, compute capability and SM count it lacks), the header names the columns, and each row adds
// its config's time to its problem or counts why it is left out.
class SweepReader {
 public:
  SweepReader(const std::string& path, Options& opt, Sweep& sweep)
      : op_(tuned::find_op(opt.op)), path_(path), opt_(opt), sweep_(sweep) {}
  void read(std::istream& in);

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                path_ + ", line " + std::to_string(line_no_) + ": " + why);
  }
  void read_comment(const std::string& line);
  void read_header(const std::vector<std::string>& f);
  void read_row(const std::vector<std::string>& f);
  bool op_accepts(const std::string& config, const ProblemKey& key, int alignment);

  const tuned::OpRegistration& op_;
  const std::string& path_;
  Options& opt_;
  Sweep& sweep_;
  // Whether the op runs a config as it is on a problem (its fit neither throws on a broken rule nor
  // changes the config), on the sweep's GPU as the library would see it. A problem's rows come
  // together: answers are kept for the current problem only.
  std::optional<tuned::DeviceInfo> device_;
  std::pair<ProblemKey, int> asked_for_;
  std::map<std::string, bool> accepted_;
  // Config text as the sweep wrote it -> its whole canonical form: a sweep repeats a few hundred
  // configs over ~10^5 rows, so each text is parsed and completed once.
  std::map<std::string, std::string> canonical_of_;
  std::vector<std::string> header_;
  size_t col_alignment_ = 0, col_config_ = 0, col_ms_ = 0, col_cublas_ = 0, col_error_ = 0;
  // The op's accuracy contract, where the sweep checked it (0/1; absent before issue 28).
  size_t col_contract_ = 0;
  int line_no_ = 0;
  bool first_comment_ = true;
};

bool SweepReader::op_accepts(const std::string& config, const ProblemKey& key, int alignment) {
  if (asked_for_ != std::pair{key, alignment}) {
    asked_for_ = {key, alignment};
    accepted_.clear();
  }
  auto [it, added] = accepted_.try_emplace(config, true);
  if (!added) return it->second;
  if (!device_) {
    device_ = tuned::reference_device(opt_.cc);
    device_->name = opt_.device_name;
    if (opt_.sm_count > 0) device_->sm_count = opt_.sm_count;
  }
  try {
    const tuned::ProblemId id = op_.problem_id(key.first, key.second, alignment);
    // The library runs the config as the op fits it there: a config it would run otherwise
    // (a bound newer than the sweep, e.g. a longer float sum split) measured another kernel,
    // unless that other kernel is the op's serve of it and the op holds its times to transfer
    // (OpFace::transfers_to, as the library ranks it): GEMM's TMA-fed configs in one chain of
    // slice sums, served in partial chains past 32 slices, the same grid and a few adds more
    // (1.2-6.9 % slower, median 2.7 %, on the 4919 problems the H100 sweeps time both on).
    // Its time stands for that form where the sweeps did not time it (entry_ms).
    const tuned::Config timed = tuned::read_config(config, op_.params);
    const tuned::Config fitted =
        tuned::with_absent_params(op_.face->fit(timed, *device_, id), op_.params);
    it->second = fitted.canonical() == config ||
                 (fitted == op_.face->serve(timed, id) && op_.face->transfers_to(timed, id));
  } catch (const Error&) {
    it->second = false;
  }
  return it->second;
}

void SweepReader::read(std::istream& in) {
  for (std::string line; std::getline(in, line);) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      read_comment(line);
      continue;
    }
    const auto f = split(line, '\t');
    if (header_.empty()) {
      read_header(f);
      continue;
    }
    if (f.size() != header_.size()) {
      fail(std::to_string(f.size()) + " fields, the header has " + std::to_string(header_.size()));
    }
    try {
      read_row(f);
    } catch (const std::logic_error& e) {  // stoll and friends
      fail(std::string("not a number: ") + e.what());
    }
  }
  if (header_.empty()) fail("no header line");
}

void SweepReader::read_comment(const std::string& line) {
  if (!first_comment_) return;
  first_comment_ = false;
  std::string name;
  int cc = 0, sms = 0;
  device_from_comment(line, name, cc, sms);
  if (name.empty()) return;
  if (sweep_.device_line.empty()) {
    sweep_.device_line = line;
    sweep_.device_name = name;
    if (opt_.device_name.empty()) opt_.device_name = name;
    if (opt_.cc == 0) opt_.cc = cc;
    if (opt_.sm_count == 0) opt_.sm_count = sms;
  } else if (name != sweep_.device_name) {
    fail("measured on " + name + ", the first input on " + sweep_.device_name +
         ": one GPU model per table");
  }
}

void SweepReader::read_header(const std::vector<std::string>& f) {
  // Column 0 is the variant, the dims run up to "alignment".
  header_ = f;
  auto column = [&](const std::string& name) {
    const auto it = std::find(header_.begin(), header_.end(), name);
    if (it == header_.end()) fail("the header has no column '" + name + "'");
    return static_cast<size_t>(it - header_.begin());
  };
  col_alignment_ = column("alignment");
  col_config_ = column("config");
  col_ms_ = column("ms");
  col_cublas_ = column("cublas_ms");
  col_error_ = column("rel_error");
  const auto contract = std::find(header_.begin(), header_.end(), "within_contract");
  col_contract_ = contract == header_.end() ? 0 : static_cast<size_t>(contract - header_.begin());
  if (col_alignment_ < 2 || col_alignment_ > 5) fail("expected 1 to 4 dims before alignment");
}

void SweepReader::read_row(const std::vector<std::string>& f) {
  ProblemKey key{f[0], {}};
  for (size_t i = 1; i < col_alignment_; ++i) key.second.push_back(std::stoll(f[i]));
  const auto& s = key.second;
  // The held-out GEMM problems (any op with three dims is checked the same way).
  if (s.size() == 3 && tuned::bench::is_held_out_shape(f[0], s[0], s[1], s[2])) {
    sweep_.dropped.insert(key);
    ++sweep_.dropped_rows;
    return;
  }
  ++sweep_.rows;
  Problem& p = sweep_.problems[key];
  if (p.shape.empty()) {
    p.variant = f[0];
    // A batch is a point where the library looks it up (the GEMM's batch folded into a side).
    p.shape = op_.face->selection_shape(s);
    p.full_shape = s;
    p.alignment = std::stoi(f[col_alignment_]);
    p.cublas_ms = std::stod(f[col_cublas_]);
  }
  // Tolerance of the sweep's check: grows with the reduction length (the last dim).
  const double err = std::stod(f[col_error_]);
  const double ms = std::stod(f[col_ms_]);
  const double tolerance =
      std::max(1e-5, 2e-7 * std::sqrt(static_cast<double>(std::max<int64_t>(s.back(), 0))));
  if (!(err <= tolerance) || !(ms > 0) || !std::isfinite(ms)) {  // NaN counts as wrong
    ++sweep_.invalid;
    return;
  }
  if (col_contract_ > 0 && f[col_contract_] != "1") {
    ++sweep_.inaccurate;
    return;
  }
  // Sweeps measured before a parameter existed name configs without it: completed, so the
  // same kernel measured by an older and a newer sweep is one candidate.
  auto [known, added] = canonical_of_.try_emplace(f[col_config_]);
  if (added) {
    known->second = tuned::read_config(f[col_config_], op_.params).canonical();
  }
  if (opt_.op_rules && !op_accepts(known->second, key, p.alignment)) {
    ++sweep_.refused;
    return;
  }
  p.ms[known->second] = ms;
}

void read_sweep(std::istream& in, const std::string& path, Options& opt, Sweep& sweep) {
  SweepReader(path, opt, sweep).read(in);
}

// Per variant: greedy portfolio; 'current' is each problem's regret with the chosen entries, and
// a step's gain the weighted sum of what it lowers. Starts from `kept` (a table's entries, in
// order) and adds up to `entries` more.
std::vector<std::string> choose_portfolio(const std::vector<Problem*>& list, int entries,
                                          const std::vector<std::string>& kept = {}) {
  std::set<std::string> all(kept.begin(), kept.end());
  for (const Problem* p : list) {
    for (const auto& [c, ms] : p->ms) all.insert(c);
  }
  const std::vector<std::string> candidates(all.begin(), all.end());
  // regret[c][p]: log(ms / best), or kMissingRegret where not measured.
  std::vector<std::vector<double>> regret(candidates.size(),
                                          std::vector<double>(list.size(), kMissingRegret));
  for (size_t c = 0; c < candidates.size(); ++c) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto it = list[i]->ms.find(candidates[c]); it != list[i]->ms.end()) {
        regret[c][i] = std::log(it->second / list[i]->best);
      }
    }
  }
  std::vector<double> current(list.size(), kMissingRegret);
  std::vector<bool> taken(candidates.size(), false);
  std::vector<std::string> chosen;
  const auto take = [&](size_t c) {
    taken[c] = true;
    chosen.push_back(candidates[c]);
    for (size_t i = 0; i < list.size(); ++i) current[i] = std::min(current[i], regret[c][i]);
  };
  for (const auto& k : kept) take(std::lower_bound(candidates.begin(), candidates.end(), k) -
                                  candidates.begin());
  while (static_cast<int>(chosen.size() - kept.size()) < entries) {
    size_t pick = candidates.size();
    double pick_gain = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (taken[c]) continue;
      double gain = 0;
      for (size_t i = 0; i < list.size(); ++i) {
        gain += list[i]->weight * std::max(0.0, current[i] - regret[c][i]);
      }
      if (gain > pick_gain) {
        pick_gain = gain;
        pick = c;
      }
    }
    if (pick == candidates.size()) break;  // nothing left improves any problem
    take(pick);
  }
  return chosen;
}

// Extra log-time per unit of log2 distance when a problem's best config runs a near problem:
// over pairs (a, one of a's nearest others b; skipped where a's best config was not measured on
// b), the mean of log(a's best config's ms on b / b's best ms) over the mean distance. First
// element: that ratio of means (shipped); second: the mean of the per-pair ratios, which tiny
// distances inflate (on the H100 sweep 0.21 against a measured mean regret of 0.12-0.14 at
// distances 0.5-3, where the ratio of means, 0.067, predicts 0.05-0.2).
std::pair<double, double> transfer_regret(const std::map<std::string, std::vector<Problem*>>& by,
                                          size_t& pairs) {
  double ratio_sum = 0, regret_sum = 0, distance_sum = 0;
  pairs = 0;
  for (const auto& [variant, list] : by) {
    for (const Problem* a : list) {
      std::vector<std::pair<double, size_t>> near;
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j] != a) near.emplace_back(distance(*a, *list[j]), j);
      }
      const size_t k = std::min<size_t>(kTransferNeighbours, near.size());
      std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
      for (size_t i = 0; i < k; ++i) {
        const Problem& b = *list[near[i].second];
        const auto it = b.ms.find(a->best_config);
        if (near[i].first <= 0 || it == b.ms.end()) continue;
        const double r = std::log(it->second / b.best);
        ratio_sum += r / near[i].first;
        regret_sum += r;
        distance_sum += near[i].first;
        ++pairs;
      }
    }
  }
  return {distance_sum > 0 ? regret_sum / distance_sum : 0.0,
          pairs ? ratio_sum / static_cast<double>(pairs) : 0.0};
}

// Every input read into one sweep; throws where the GPU model or its compute capability is named
// neither there nor on the command line.
Sweep read_inputs(Options& opt) {
  Sweep sweep;
  for (const auto& path : opt.inputs) {
    if (path == "-") {
      read_sweep(std::cin, opt.input_name.empty() ? "stdin" : opt.input_name, opt, sweep);
      continue;
    }
    std::ifstream file(path);
    if (!file) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "cannot read " + path);
    read_sweep(file, path, opt, sweep);
  }
  if (opt.device_name.empty()) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "no '# ... on <GPU> (' line: give --device-name");
  }
  if (opt.cc <= 0) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "no 'sm_NN' in the sweep: give --cc");
  return sweep;
}

// The problems with a valid result per variant, each given its best config, coordinates and
// weight; without_valid counts the others.
std::map<std::string, std::vector<Problem*>> problems_by_variant(Sweep& sweep,
                                                                 double time_weight_ms,
                                                                 size_t& without_valid) {
  std::map<std::string, std::vector<Problem*>> by_variant;
  without_valid = 0;
  for (auto& [key, p] : sweep.problems) {
    if (p.ms.empty()) {
      ++without_valid;
      continue;
    }
    p.best = std::numeric_limits<double>::infinity();
    for (const auto& [c, ms] : p.ms) {
      if (ms < p.best) {
        p.best = ms;
        p.best_config = c;
      }
    }
    // (4 coordinates, as the library's: a single product's batch, its missing fourth dim, is 1)
    for (size_t i = 0; i < 4; ++i) {
      const int64_t d = i < p.shape.size() ? p.shape[i] : 1;
      p.coords.push_back(std::log2(static_cast<double>(d) + 1.0));
    }
    p.weight = time_weight_ms > 0 ? 1.0 + p.cublas_ms / time_weight_ms : 1.0;
    by_variant[p.variant].push_back(&p);
  }
  return by_variant;
}

// The table's "model" line and, where weights are given, its "features" line; features gets the
// op's analytic features the ranking weighs (what the library passes at run time).
std::string model_lines(const Options& opt, double transfer,
                        tuned::cache::SelectionModel::Features& features) {
  std::ostringstream model_line;
  model_line << "model\t" << opt.device_name << '\t' << opt.cc << '\t' << opt.op << '\t'
             << opt.neighbours << '\t' << transfer << '\n';
  if (opt.feature_weights.empty()) return model_line.str();
  const tuned::OpFace& face = *tuned::find_op(opt.op).face;
  if (opt.sm_count < 1) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "no ', S SMs)' in the sweep: give --sm-count");
  }
  features.names = face.selection_feature_names();
  features.sm_count = opt.sm_count;
  features.values = [&face, &params = tuned::find_op(opt.op).params](
                        const std::string& text,
                        const std::vector<std::pair<int, std::vector<int64_t>>>& at,
                        std::vector<double>& out) {
    const tuned::Config config = tuned::read_config(text, params);
    for (const auto& [sms, shape] : at) face.selection_features(config, sms, shape, out);
  };
  model_line << "features\t" << opt.sm_count;
  for (const auto& item : split(opt.feature_weights, ',')) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (eq == std::string::npos ||
        std::find(features.names.begin(), features.names.end(), name) == features.names.end()) {
      std::string known;
      for (const auto& n : features.names) known += (known.empty() ? "" : ", ") + n;
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "--feature-weights: '" + item + "' is not name=weight with a feature of " +
                      opt.op + " (" + (known.empty() ? "it has none" : known) + ")");
    }
    model_line << '\t' << item;
  }
  model_line << '\n';
  return model_line.str();
}

// A problem's "point" line: each entry's ms ('-' where none, see entry_ms), and where cuBLAS or a
// config outside the portfolio was faster, that time; empty where no entry was measured (a problem
// only configs outside the portfolio ran on, e.g. matrix-vector ones of a class it holds none of):
// no point. served(e): entry e as the op serves it on the problem.
std::string point_line(const std::string& variant, const Problem& p,
                       const std::vector<std::string>& chosen,
                       const std::function<std::string(size_t)>& served) {
  std::string line =
      "point\t" + variant + '\t' + std::to_string(p.alignment) + '\t' + shape_text(p.shape) + '\t';
  double portfolio_best = std::numeric_limits<double>::infinity();
  for (size_t e = 0; e < chosen.size(); ++e) {
    const double ms = entry_ms(
        chosen[e], [&] { return served(e); }, p);
    char text[32] = "-";
    if (ms > 0) {
      std::snprintf(text, sizeof text, "%.4g", ms);
      portfolio_best = std::min(portfolio_best, ms);
    }
    line += (e ? "," : "") + std::string(text);
  }
  const bool measured = std::isfinite(portfolio_best);
  // Where cuBLAS or a config outside the portfolio was faster, that time is the point's
  // reference: an entry that was the only one measured on a problem (others left out, e.g.
  // beyond the accuracy contract) is no best there when cuBLAS ran it twice as fast.
  const double reference = p.cublas_ms > 0 ? std::min(p.best, p.cublas_ms) : p.best;
  if (measured && reference < portfolio_best) {
    char text[32];
    std::snprintf(text, sizeof text, "\t%.4g", reference);
    line += text;
  }
  return measured ? line + '\n' : std::string();
}

// One line per problem of the variant (point_line: empty where it is no point).
std::vector<std::string> point_lines(const std::string& variant, const std::vector<Problem*>& list,
                                     const std::vector<std::string>& chosen,
                                     const tuned::OpRegistration& op) {
  std::vector<tuned::Config> chosen_configs;
  for (const auto& text : chosen) {
    chosen_configs.push_back(tuned::read_config(text, op.params));
  }
  std::vector<std::string> points;
  for (const Problem* p : list) {
    // An entry as the op serves it on a problem (where it was not measured itself).
    const auto served_text = [&](size_t e) -> std::string {
      try {
        return op.face
            ->serve(chosen_configs[e], op.problem_id(variant, p->full_shape, p->alignment))
            .canonical();
      } catch (const Error&) {
        return chosen[e];
      }
    };
    points.push_back(point_line(variant, *p, chosen, served_text));
  }
  return points;
}

constexpr double kSlow = 0.6;     // the untuned-shape benchmark's floor (x cuBLAS)
constexpr double kLongMs = 0.05;  // "where time goes": baselines of 50 us and more

// Expected quality of a variant's fit: speeds over cuBLAS (cuBLAS ms / ms) of the sweep's best,
// the portfolio's best (oracle) and the model's pick per problem.
struct ExpectedQuality {
  std::vector<double> sweep_best, oracle, picked, picked_long;
  size_t uncovered = 0, hits = 0, picked_slow = 0, oracle_slow = 0;
  double baseline_sum = 0, picked_sum = 0, oracle_sum = 0;  // ms, for time-weighted ratios

  void add_pick(const Problem& p, double portfolio_best, double ms) {
    oracle.push_back(p.cublas_ms / portfolio_best);
    picked.push_back(p.cublas_ms / ms);
    if (p.cublas_ms >= kLongMs) picked_long.push_back(picked.back());
    baseline_sum += p.cublas_ms;
    picked_sum += ms;
    oracle_sum += portfolio_best;
    hits += ms == portfolio_best;
    picked_slow += picked.back() < kSlow;
    oracle_slow += oracle.back() < kSlow;
  }
  std::string summary(const std::string& variant, size_t problems, size_t entries) const;
};

std::string ExpectedQuality::summary(const std::string& variant, size_t problems,
                                     size_t entries) const {
  char line[768];
  std::snprintf(
      line, sizeof line,
      "%s: %zu problems, %zu entries; geomean cuBLAS ms / ms: sweep best %.3f, "
      "portfolio oracle %.3f, kNN pick (leave-one-out) %.3f; pick = oracle on %.0f%%, "
      "below %.1fx cuBLAS: %zu picks, %zu oracles; %zu problems with no entry "
      "measured; time-weighted (sum cuBLAS ms / sum ms): pick %.3f, oracle %.3f; "
      "problems of cuBLAS >= %.0f us: %zu, pick geomean %.3f",
      variant.c_str(), problems, entries, geomean(sweep_best), geomean(oracle), geomean(picked),
      picked.empty() ? 0.0 : 100.0 * static_cast<double>(hits) / picked.size(), kSlow, picked_slow,
      oracle_slow, uncovered, picked_sum > 0 ? baseline_sum / picked_sum : 0.0,
      oracle_sum > 0 ? baseline_sum / oracle_sum : 0.0, kLongMs * 1000, picked_long.size(),
      geomean(picked_long));
  return line;
}

// Expected quality: each problem ranked by the model without its own point, among the
// entries measured on it (what the caller's validity check lets through). head: the table's
// model and entry lines of the variant.
ExpectedQuality leave_one_out(const std::string& variant, const std::vector<Problem*>& list,
                              const std::vector<std::string>& chosen, const std::string& head,
                              const std::vector<std::string>& points, const Options& opt,
                              const tuned::cache::SelectionModel::Features& features) {
  ExpectedQuality quality;
  for (size_t i = 0; i < list.size(); ++i) {
    const Problem& p = *list[i];
    quality.sweep_best.push_back(p.cublas_ms / p.best);
    double portfolio_best = std::numeric_limits<double>::infinity();
    for (const auto& c : chosen) {
      if (auto it = p.ms.find(c); it != p.ms.end()) {
        portfolio_best = std::min(portfolio_best, it->second);
      }
    }
    if (!std::isfinite(portfolio_best) || list.size() < 2) {
      ++quality.uncovered;
      continue;
    }
    std::string text = head;
    for (size_t j = 0; j < points.size(); ++j) {
      if (j != i) text += points[j];
    }
    const tuned::cache::SelectionModel model(text);
    const auto ranked = model.rank(
        opt.op, opt.device_name, opt.cc, variant, p.shape, p.alignment,
        [&](const std::string& c) { return p.ms.count(c) > 0; }, 1, &features);
    quality.add_pick(p, portfolio_best, p.ms.at(ranked.front().config));
  }
  return quality;
}

// An entry's text in the table: its family named by word where the op's parameters name
// families (config_text), from the flat text the fit keys configs by.
std::string entry_text(const std::string& flat, const tuned::OpRegistration& op) {
  return tuned::config_text(tuned::read_config(flat, op.params), op.params);
}

// One variant's part of the table: its portfolio's entries and points, appended to body; returns
// its expected quality's line (also printed to stderr). model_line: the table's model lines.
std::string fit_variant(const std::string& variant, const std::vector<Problem*>& list,
                        const Options& opt, const std::string& model_line,
                        const tuned::cache::SelectionModel::Features& features,
                        std::ostringstream& body) {
  const tuned::OpRegistration& op = tuned::find_op(opt.op);
  const auto chosen = choose_portfolio(list, opt.entries);
  // The table names each entry as configs are shown; leave_one_out ranks by the flat keys.
  std::ostringstream entry_lines, flat_entry_lines;
  for (size_t e = 0; e < chosen.size(); ++e) {
    entry_lines << "entry\t" << variant << '\t' << e << '\t' << entry_text(chosen[e], op) << '\n';
    flat_entry_lines << "entry\t" << variant << '\t' << e << '\t' << chosen[e] << '\n';
  }
  const std::vector<std::string> points = point_lines(variant, list, chosen, op);
  size_t written = 0, bytes = 0;
  for (const auto& line : points) {
    written += !line.empty();
    bytes += line.size();
  }
  body << entry_lines.str();
  // The block's size up front lets the library skip it until the variant is ranked.
  body << "points\t" << variant << '\t' << written << '\t' << bytes << '\n';
  for (const auto& line : points) body << line;

  const ExpectedQuality quality = leave_one_out(
      variant, list, chosen, model_line + flat_entry_lines.str(), points, opt, features);
  const std::string line = quality.summary(variant, list.size(), chosen.size());
  std::fprintf(stderr, "fit_selection: %s\n", line.c_str());
  return line;
}

// When the table's header says it was written: now, or SOURCE_DATE_EPOCH (seconds since 1970,
// UTC) where set, so that a refit of the same sweeps writes the same bytes
// (scripts/shipped_data.sh check).
std::string written_on() {
  std::time_t when = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    const long long seconds = std::strtoll(epoch, &end, 10);
    if (*end != '\0' || seconds < 0) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "SOURCE_DATE_EPOCH is not a count of seconds: " + std::string(epoch));
    }
    when = static_cast<std::time_t>(seconds);
  }
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&when));
  return text;
}

// The whole table: its header (how it was made, what it was fitted on, the expected quality per
// variant) and body.
std::string table_text(const Options& opt, const Sweep& sweep, const std::string& quality,
                       size_t pairs, const std::string& body) {
  const std::string when = written_on();
  std::ostringstream table;
  table << "# Selection model for " << opt.op << " on " << opt.device_name << " (sm_" << opt.cc
        << "), written by bench/fit_selection on " << when << ":\n#   " << opt.command_line
        << "\n# from";
  for (const auto& in : opt.inputs) {
    table << ' ' << (in == "-" && !opt.input_name.empty() ? opt.input_name : in);
  }
  table << (sweep.device_line.empty() ? "" : " (" + sweep.device_line.substr(2) + ")") << ".\n"
        << "# " << sweep.rows << " rows, " << sweep.invalid << " wrong results left out, "
        << sweep.inaccurate << " beyond the accuracy contract and " << sweep.refused
        << " of configs the op refuses or serves otherwise there left out, " << sweep.dropped.size()
        << " held-out problems dropped. Per variant, up to " << opt.entries
        << " entries chosen greedily by summed log regret, each problem weighed 1 + cuBLAS ms / "
        << opt.time_weight_ms << ";\n"
        << "# points: every retained problem with each entry's ms ('-': not measured; else the "
           "time of the entry as the op serves it there, or of a narrower VEC sibling where the "
           "alignment is below the entry's).\n"
        << (opt.feature_weights.empty()
                ? std::string()
                : "# features: " + opt.feature_weights + " (" + std::to_string(opt.sm_count) +
                      " SMs), weighed into each neighbour's regret as the library ranks.\n")
        << "# Expected quality:\n"
        << quality << "# transfer_regret: mean log regret of a problem's best config on its "
        << kTransferNeighbours << " nearest problems over their mean log2 distance (" << pairs
        << " pairs).\n"
        << body;
  return table.str();
}

int run(Options opt) {
  Sweep sweep = read_inputs(opt);
  size_t without_valid = 0;
  const auto by_variant = problems_by_variant(sweep, opt.time_weight_ms, without_valid);
  std::fprintf(stderr,
               "fit_selection: %s (sm_%d): %zu rows, %zu wrong results, %zu beyond the accuracy "
               "contract and %zu of configs the op refuses or serves otherwise there left out; "
               "%zu held-out problems dropped (%zu rows); %zu problems kept, %zu without a valid "
               "result left out\n",
               opt.device_name.c_str(), opt.cc, sweep.rows, sweep.invalid, sweep.inaccurate,
               sweep.refused, sweep.dropped.size(), sweep.dropped_rows,
               sweep.problems.size() - without_valid, without_valid);
  if (by_variant.empty()) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "no valid measurements");

  size_t pairs = 0;
  const auto [transfer, transfer_mean_of_ratios] = transfer_regret(by_variant, pairs);
  tuned::cache::SelectionModel::Features features;
  const std::string model_line = model_lines(opt, transfer, features);
  std::ostringstream body;
  body << model_line;
  std::ostringstream quality;
  for (const auto& [variant, list] : by_variant) {
    quality << "#   " << fit_variant(variant, list, opt, model_line, features, body) << '\n';
  }
  std::fprintf(stderr,
               "fit_selection: transfer regret %.4f per log2 unit (mean regret over mean distance "
               "of %zu pairs; the mean of the pairs' regret / distance is %.4f)\n",
               transfer, pairs, transfer_mean_of_ratios);

  std::ofstream out(opt.out);
  out << table_text(opt, sweep, quality.str(), pairs, body.str());
  out.close();
  if (!out) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "cannot write " + opt.out);
  std::fprintf(stderr, "fit_selection: wrote %s\n", opt.out.c_str());
  return 0;
}

// --append-to: a table fit_selection wrote, by lines: its model and features lines, each variant's
// entries in order and the line of its sized block of points.
struct FittedTable {
  std::vector<std::string> lines;
  std::string model_head;  // the model and features lines
  std::string device_name;
  int cc = 0;
  const tuned::OpRegistration* op = nullptr;  // the model line's
  // variant -> configs by index, each flat with every parameter (as the sweeps' rows are keyed)
  std::map<std::string, std::vector<std::string>> entries;
  std::map<std::string, size_t> block;                      // variant -> its "points" line
};

FittedTable read_fitted_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--append-to: cannot read " + path);
  FittedTable t;
  for (std::string line; std::getline(in, line);) t.lines.push_back(line);
  auto fail = [&](size_t i, const std::string& why) {
    throw Error(TUNED_STATUS_CONFIG_ERROR,
                "--append-to " + path + ", line " + std::to_string(i + 1) + ": " + why);
  };
  for (size_t i = 0; i < t.lines.size(); ++i) {
    const auto f = split(t.lines[i], '\t');
    if (f[0] == "model") {
      if (!t.device_name.empty()) fail(i, "a second model: one model per table here");
      if (f.size() < 4) fail(i, "a model line has a device name, a compute capability, an op");
      t.device_name = f[1];
      t.cc = std::atoi(f[2].c_str());
      t.op = &tuned::find_op(f[3]);
      t.model_head += t.lines[i] + '\n';
    } else if (f[0] == "features") {
      t.model_head += t.lines[i] + '\n';
    } else if (f[0] == "entry" && f.size() == 4) {
      if (!t.op) fail(i, "an entry before the model line");
      auto& list = t.entries[f[1]];
      if (std::to_string(list.size()) != f[2]) fail(i, "entries out of order");
      list.push_back(tuned::read_config(f[3], t.op->params).canonical());
    } else if (f[0] == "points" && f.size() == 4) {
      t.block[f[1]] = i;
    }
  }
  if (t.device_name.empty()) fail(t.lines.size(), "no model line");
  return t;
}

// A point line of a table with `more` entries added after its own: '-' (not measured) for each.
std::string with_unmeasured_entries(const std::string& line, size_t more) {
  auto f = split(line, '\t');
  if (more == 0 || f.size() < 5 || f[0] != "point") return line;
  for (size_t i = 0; i < more; ++i) f[4] += ",-";
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) out += (i ? "\t" : "") + f[i];
  return out;
}

// The table's features line as Options (the weights and SM count the ranking uses).
void features_of_table(const FittedTable& t, Options& opt) {
  for (const auto& line : split(t.model_head, '\n')) {
    const auto f = split(line, '\t');
    if (f[0] != "features" || f.size() < 2) continue;
    opt.sm_count = std::atoi(f[1].c_str());
    opt.feature_weights.clear();
    for (size_t i = 2; i < f.size(); ++i) {
      opt.feature_weights += (opt.feature_weights.empty() ? "" : ",") + f[i];
    }
  }
}

// --append-to: the sweeps' problems become points of the table's variants, timed with its
// portfolio's entries (which stay as they are, as do its points): a later sweep of problems the
// fit did not see (e.g. batches) informs the picks near them and changes no pick elsewhere.
int append_points(Options opt) {
  const FittedTable table = read_fitted_table(opt.append_to);
  opt.device_name = table.device_name;
  opt.cc = table.cc;
  Sweep sweep = read_inputs(opt);
  if (sweep.device_name != table.device_name) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, "--append-to: the table is of " +
                                                   table.device_name + ", the sweep of " +
                                                   sweep.device_name);
  }
  features_of_table(table, opt);
  size_t without_valid = 0;
  const auto by_variant = problems_by_variant(sweep, opt.time_weight_ms, without_valid);
  tuned::cache::SelectionModel::Features features;
  model_lines(opt, 0, features);
  const tuned::OpRegistration& op = tuned::find_op(opt.op);
  std::map<std::string, std::vector<std::string>> added;  // variant -> point lines
  std::map<std::string, std::vector<std::string>> new_entries;  // variant -> configs added
  std::ostringstream quality;
  for (const auto& [variant, list] : by_variant) {
    const auto entries = table.entries.find(variant);
    const auto block = table.block.find(variant);
    if (entries == table.entries.end() || block == table.block.end()) {
      throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                  "--append-to: the table has no entries or no sized points of " + variant);
    }
    const auto& kept = entries->second;
    const auto chosen = choose_portfolio(list, opt.add_entries, kept);
    const size_t more = chosen.size() - kept.size();
    new_entries[variant].assign(chosen.begin() + static_cast<std::ptrdiff_t>(kept.size()),
                                chosen.end());
    auto points = point_lines(variant, list, chosen, op);
    // Expected quality of the new problems' picks: each ranked by the table's model with the
    // other new points, not its own.
    std::string head = table.model_head;
    for (size_t e = 0; e < chosen.size(); ++e) {
      head += "entry\t" + variant + '\t' + std::to_string(e) + '\t' + chosen[e] + '\n';
    }
    const size_t old_count = std::stoul(split(table.lines[block->second], '\t')[2]);
    for (size_t i = 1; i <= old_count; ++i) {
      head += with_unmeasured_entries(table.lines[block->second + i], more) + '\n';
    }
    const ExpectedQuality q = leave_one_out(variant, list, chosen, head, points, opt, features);
    const std::string line = q.summary(variant, list.size(), chosen.size()) +
                             (more ? "; " + std::to_string(more) + " entries added" : "");
    std::fprintf(stderr, "fit_selection: appended %s\n", line.c_str());
    quality << "#   " << line << '\n';
    std::erase(points, std::string());
    added[variant] = std::move(points);
  }
  // The table again: the header's note after its comments, each block with its new points.
  const std::string when = written_on();
  std::ostringstream out;
  bool noted = false;
  for (size_t i = 0; i < table.lines.size(); ++i) {
    const std::string& line = table.lines[i];
    if (!noted && (line.empty() || line[0] != '#')) {
      noted = true;
      out << "# Points appended by bench/fit_selection on " << when << ":\n#   " << opt.command_line
          << "\n# from";
      for (const auto& in : opt.inputs) {
        out << ' ' << (in == "-" && !opt.input_name.empty() ? opt.input_name : in);
      }
      out << " (" << sweep.rows << " rows, " << sweep.invalid << " wrong results, "
          << sweep.inaccurate << " beyond the accuracy contract, " << sweep.refused
          << " refused left out), timed with the portfolio above"
          << (opt.add_entries ? " and up to " + std::to_string(opt.add_entries) +
                                    " entries added per variant from the sweep's configs ('-' "
                                    "at the points above)"
                              : std::string())
          << "; expected quality of their picks:\n"
          << quality.str();
    }
    const auto f = split(line, '\t');
    const auto more = f.size() == 4 && f[0] == "points" ? added.find(f[1]) : added.end();
    if (more == added.end()) {
      out << line << '\n';
      continue;
    }
    // The variant's new entries follow its others (just before its points), and its old points
    // say they were not measured with them.
    const auto& entries_added = new_entries[f[1]];
    const size_t first_new = table.entries.at(f[1]).size();
    for (size_t e = 0; e < entries_added.size(); ++e) {
      out << "entry\t" << f[1] << '\t' << first_new + e << '\t' << entry_text(entries_added[e], op)
          << '\n';
    }
    const size_t count = std::stoul(f[2]);
    std::string old_points;
    for (size_t j = 1; j <= count; ++j) {
      old_points += with_unmeasured_entries(table.lines[i + j], entries_added.size()) + '\n';
    }
    size_t bytes = old_points.size();
    for (const auto& p : more->second) bytes += p.size();
    out << "points\t" << f[1] << '\t' << count + more->second.size() << '\t' << bytes << '\n'
        << old_points;
    for (const auto& p : more->second) out << p;
    i += count;
  }
  std::ofstream file(opt.out);
  file << out.str();
  file.close();
  if (!file) throw Error(TUNED_STATUS_INVALID_ARGUMENT, "cannot write " + opt.out);
  std::fprintf(stderr, "fit_selection: wrote %s\n", opt.out.c_str());
  return 0;
}

std::string quoted_command_line(int argc, char** argv) {
  std::string out = std::filesystem::path(argv[0]).filename().string();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t'\"$\\") == std::string::npos;
    out += ' ' + (plain ? arg : "'" + arg + "'");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fits a selection-model table for one GPU model from sweep measurements.",
               "fit_selection"};
  tuned::tools::add_version_flag(app, "fit_selection");
  Options opt;
  app.add_option("inputs", opt.inputs, "sweep TSV files ('-': stdin, e.g. from zcat)")->required();
  app.add_option("--input-name", opt.input_name, "what '-' is, for the table's header");
  app.add_option("--op", opt.op, "op name")->capture_default_str();
  app.add_option("--device-name", opt.device_name,
                 "GPU model (default: from the sweep's '# ... on <GPU> (' line)");
  app.add_option("--cc", opt.cc, "compute capability, e.g. 90 (default: the sweep's sm_NN)")
      ->check(CLI::Range(10, 1000));
  app.add_option("--entries", opt.entries, "portfolio entries per variant")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--neighbours", opt.neighbours, "nearest points the ranking averages over")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--sm-count", opt.sm_count,
                 "SMs of the sweep's GPU (default: the sweep's ', S SMs)')")
      ->check(CLI::Range(1, 100000));
  app.add_option("--feature-weights", opt.feature_weights,
                 "weights of the op's selection features, e.g. padding=0.75,waves=0.5 (default: "
                 "none weighed)");
  app.add_option("--time-weight-ms", opt.time_weight_ms,
                 "a problem weighs 1 + its cuBLAS ms / this in the portfolio's objective (0: "
                 "every problem alike)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("!--without-op-rules", opt.op_rules,
               "keep rows of configs the op refuses on their problem (synthetic sweeps whose "
               "configs are not the op's)");
  app.add_option("--append-to", opt.append_to,
                 "a table fit_selection wrote: keep its portfolio and points and add the sweeps' "
                 "problems as points timed with its entries (--out may name the same file)");
  app.add_option("--add-entries", opt.add_entries,
                 "with --append-to: add up to N of the sweep's other configs per variant as "
                 "entries, chosen on its problems (unmeasured at the table's points)")
      ->check(CLI::Range(0, 256));
  app.add_option("--out", opt.out, "table to write")->required();
  CLI11_PARSE(app, argc, argv);
  opt.command_line = quoted_command_line(argc, argv);
  try {
    return opt.append_to.empty() ? run(opt) : append_points(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fit_selection: %s\n", e.what());
    return 1;
  }
}
