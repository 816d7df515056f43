#include "cache/selection_model.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

// A portfolio entry not measured on a point (e.g. its vector width too wide for the point's
// alignment and no narrower sibling measured) counts as 20x slower than the point's best there.
const float kUnmeasuredRegret = static_cast<float>(std::log(20.0));
constexpr size_t kMaxDims = 4;

// Splits without allocating the pieces: parsing the shipped tables must stay in the low ms.
void split(std::string_view line, char sep, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    const size_t end = line.find(sep, start);
    if (end == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, end - start));
    start = end + 1;
  }
}

template <typename T>
bool parse_number(std::string_view text, T& value) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

// Times are short decimals ("0.004615", "12.5", "1.2e-05"): read by hand, several times faster
// than from_chars, which takes whatever else (long mantissas, "inf", ...) and rejects junk.
bool parse_time(std::string_view text, double& value) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  uint64_t mantissa = 0;
  int digits = 0, exponent = 0;
  size_t i = 0;
  auto digit = [&](size_t at) { return at < text.size() && text[at] >= '0' && text[at] <= '9'; };
  for (; digit(i); ++i, ++digits) mantissa = mantissa * 10 + static_cast<uint64_t>(text[i] - '0');
  if (i < text.size() && text[i] == '.') {
    for (++i; digit(i); ++i, ++digits, --exponent) {
      mantissa = mantissa * 10 + static_cast<uint64_t>(text[i] - '0');
    }
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    const bool negative = i + 1 < text.size() && text[i + 1] == '-';
    size_t j = i + 1 + (i + 1 < text.size() && (text[i + 1] == '-' || text[i + 1] == '+'));
    int e = 0;
    for (; digit(j) && e < 1000; ++j) e = e * 10 + (text[j] - '0');
    if (j == i + 1 || !digit(j - 1)) return parse_number(text, value);
    exponent += negative ? -e : e;
    i = j;
  }
  if (digits == 0 || digits > 18 || i != text.size() || exponent < -22 || exponent > 22) {
    return parse_number(text, value);
  }
  value = exponent < 0 ? static_cast<double>(mantissa) / kPow10[-exponent]
                       : static_cast<double>(mantissa) * kPow10[exponent];
  return true;
}

}  // namespace

std::string_view shipped_selection_tables();  // generated from cache/shipped/*_selection_*.tsv

const SelectionModel& SelectionModel::builtin() {
  static const SelectionModel model(shipped_selection_tables(), /*lazy=*/true);
  return model;
}

namespace {

[[noreturn]] void fail_at(int line_no, const std::string& why) {
  throw Error(TUNED_STATUS_CONFIG_ERROR,
              "selection model, line " + std::to_string(line_no) + ": " + why);
}

}  // namespace

SelectionModel::Variant& SelectionModel::variant_of(std::string_view name, int line_no) {
  if (models_.empty()) fail_at(line_no, "entry or point line before any model line");
  auto& variants = models_.back().variants;
  for (auto& v : variants) {
    if (v.name == name) return v;
  }
  if (name.empty()) fail_at(line_no, "empty variant");
  variants.emplace_back();
  variants.back().name = std::string(name);
  return variants.back();
}

void SelectionModel::add_model(const std::vector<std::string_view>& f, int line_no) {
  auto fail = [&](const std::string& why) { fail_at(line_no, why); };
  if (f.size() != 6) fail("a model line has 6 fields, got " + std::to_string(f.size()));
  Model m;
  m.device_name = std::string(f[1]);
  m.op = std::string(f[3]);
  if (m.device_name.empty() || m.op.empty()) fail("empty device name or op");
  if (!parse_number(f[2], m.cc) || m.cc <= 0) fail("cc '" + std::string(f[2]) + "'");
  if (!parse_number(f[4], m.neighbours) || m.neighbours < 1) {
    fail("neighbours '" + std::string(f[4]) + "' (an integer >= 1)");
  }
  if (!parse_number(f[5], m.transfer_regret) || !std::isfinite(m.transfer_regret) ||
      m.transfer_regret < 0) {
    fail("transfer_regret '" + std::string(f[5]) + "' (a number >= 0)");
  }
  for (const auto& other : models_) {
    if (other.device_name == m.device_name && other.op == m.op) {
      fail("a second model for " + m.device_name + " " + m.op);
    }
  }
  models_.push_back(std::move(m));
}

void SelectionModel::add_features(const std::vector<std::string_view>& f, int line_no) {
  auto fail = [&](const std::string& why) { fail_at(line_no, why); };
  if (models_.empty()) fail("features line before any model line");
  Model& m = models_.back();
  if (m.feature_sm_count > 0) fail("a second features line for the model");
  if (f.size() < 3) fail("a features line has an SM count and at least one name=weight");
  if (!parse_number(f[1], m.feature_sm_count) || m.feature_sm_count < 1) {
    fail("features SM count '" + std::string(f[1]) + "' (an integer >= 1)");
  }
  for (size_t i = 2; i < f.size(); ++i) {
    const size_t eq = f[i].find('=');
    double weight = 0;
    if (eq == 0 || eq == std::string_view::npos || !parse_number(f[i].substr(eq + 1), weight) ||
        !std::isfinite(weight)) {
      fail("feature '" + std::string(f[i]) + "' (name=weight)");
    }
    m.feature_weights.emplace_back(std::string(f[i].substr(0, eq)), weight);
  }
}

void SelectionModel::add_entry(const std::vector<std::string_view>& f, int line_no) {
  auto fail = [&](const std::string& why) { fail_at(line_no, why); };
  if (f.size() != 4) fail("an entry line has 4 fields, got " + std::to_string(f.size()));
  Variant& v = variant_of(f[1], line_no);
  if (!v.pending.empty() || !v.blocks.empty() || v.points() > 0) {
    fail("entry after the variant's points");
  }
  size_t index = 0;
  if (!parse_number(f[2], index) || index != v.configs.size()) {
    fail("entry index '" + std::string(f[2]) + "', expected " + std::to_string(v.configs.size()));
  }
  if (f[3].empty()) fail("empty config");
  v.configs.emplace_back(f[3]);
}

SelectionModel::SelectionModel(std::string_view table, bool lazy) : lazy_(lazy) {
  int line_no = 0;
  auto fail = [&](const std::string& why) { fail_at(line_no, why); };
  std::vector<std::string_view> f;
  size_t pos = 0;
  Variant* last_points = nullptr;  // the variant of the previous point line (they come in runs)
  while (pos < table.size()) {
    size_t end = table.find('\n', pos);
    if (end == std::string_view::npos) end = table.size();
    std::string_view line = table.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    // Most lines are points of the same variant as the line before: kept whole for ready(),
    // which checks their fields on first use.
    if (last_points && line.size() > 6 + last_points->name.size() &&
        line.compare(0, 6, "point\t") == 0 &&
        line.compare(6, last_points->name.size(), last_points->name) == 0 &&
        line[6 + last_points->name.size()] == '\t') {
      last_points->pending.emplace_back(line, line_no);
      continue;
    }
    last_points = nullptr;
    split(line, '\t', f);
    if (f[0] == "points") {
      // A block of point lines whose size is known: skipped here unread (a process touches only
      // the pages of the variant it ranks), split into lines on the variant's first use.
      if (f.size() != 4) fail("a points line has 4 fields, got " + std::to_string(f.size()));
      Variant& v = variant_of(f[1], line_no);
      if (v.configs.empty()) fail("points before the variant's entries");
      size_t count = 0, bytes = 0;
      if (!parse_number(f[2], count) || !parse_number(f[3], bytes) ||
          bytes > table.size() - std::min(pos, table.size()) ||
          (bytes > 0 && table[pos + bytes - 1] != '\n') || (count == 0) != (bytes == 0)) {
        fail("points block '" + std::string(f[2]) + "' lines, '" + std::string(f[3]) +
             "' bytes does not fit the table");
      }
      v.blocks.push_back({table.substr(pos, bytes), line_no + 1, count});
      pos += bytes;
      line_no += static_cast<int>(count);
    } else if (f[0] == "model") {
      add_model(f, line_no);
    } else if (f[0] == "features") {
      add_features(f, line_no);
    } else if (f[0] == "entry") {
      add_entry(f, line_no);
    } else if (f[0] == "point") {
      if (f.size() != 5 && f.size() != 6) {
        fail("a point line has 5 or 6 fields, got " + std::to_string(f.size()));
      }
      Variant& v = variant_of(f[1], line_no);
      if (v.configs.empty()) fail("point before the variant's entries");
      v.pending.emplace_back(line, line_no);
      last_points = &v;
    } else {
      fail("unknown line kind '" + std::string(f[0]) + "'");
    }
  }
  if (!lazy) {  // the caller's text may not outlive this object
    for (const auto& m : models_) {
      for (const auto& v : m.variants) ready(v, false);
    }
  }
}

void SelectionModel::reserve_points(Variant& v) {
  size_t n = v.pending.size();
  for (const auto& block : v.blocks) n += block.lines;
  v.dims.reserve(n);
  v.shapes.reserve(n * kMaxDims);
  v.coords.reserve(n * kMaxDims);
  v.times.reserve(n);
  v.line_nos.reserve(n);
  v.alignments.reserve(n);
  v.alignment_coords.reserve(n);
  v.references.reserve(n);
}

void SelectionModel::add_point(Variant& v, std::string_view line, int line_no,
                               std::vector<std::string_view>& f,
                               std::vector<std::string_view>& items) {
  auto fail = [line_no](const std::string& why) { fail_at(line_no, why); };
  // Four tab-ended fields, then the times: their commas are read only if a ranking needs
  // this point, so the long last field is not scanned here.
  f.clear();
  size_t start = 0;
  for (int field = 0; field < 4; ++field) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      fail("a point line has 5 or 6 fields, got " + std::to_string(field + 1));
    }
    f.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  // The times, then an optional reference: the faster of cuBLAS and the sweep's best config
  // there.
  std::string_view times = line.substr(start);
  double reference = 0;
  if (const size_t tab = times.find('\t'); tab != std::string_view::npos) {
    const std::string_view text = times.substr(tab + 1);
    if (!parse_time(text, reference) || !(reference > 0) || !std::isfinite(reference)) {
      fail("reference time '" + std::string(text) + "' (a positive number)");
    }
    times = times.substr(0, tab);
  }
  f.push_back(times);
  int alignment = 0;
  if (!parse_number(f[2], alignment) || alignment < 1) {
    fail("alignment '" + std::string(f[2]) + "'");
  }
  split(f[3], 'x', items);
  if (items.size() > kMaxDims) fail("shape '" + std::string(f[3]) + "' has more than 4 dims");
  v.dims.push_back(static_cast<uint8_t>(items.size()));
  for (size_t i = 0; i < kMaxDims; ++i) {
    int64_t value = 1;
    if (i < items.size() && (!parse_number(items[i], value) || value < 0)) {
      fail("shape '" + std::string(f[3]) + "'");
    }
    v.shapes.push_back(value);
    v.coords.push_back(static_cast<float>(std::log2(static_cast<double>(value) + 1.0)));
  }
  v.times.push_back(f[4]);
  v.references.push_back(reference);
  v.line_nos.push_back(line_no);
  v.alignments.push_back(alignment);
  v.alignment_coords.push_back(static_cast<float>(std::log2(alignment)));
}

void SelectionModel::add_block_points(Variant& v, const Variant::Block& block,
                                      std::vector<std::string_view>& f,
                                      std::vector<std::string_view>& items) {
  const std::string prefix = "point\t" + v.name + "\t";
  size_t pos = 0, lines = 0;
  while (pos < block.text.size()) {
    const size_t end = block.text.find('\n', pos);  // the block ends with one
    const int line_no = block.first_line + static_cast<int>(lines);
    if (lines == block.lines) fail_at(line_no, "more lines than its points line says");
    std::string_view line = block.text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.compare(0, prefix.size(), prefix) != 0) {
      fail_at(line_no, "a points block holds point lines of variant " + v.name + " only");
    }
    add_point(v, line, line_no, f, items);
    pos = end + 1;
    ++lines;
  }
  if (lines != block.lines) {
    fail_at(block.first_line, "points block of " + std::to_string(block.lines) + " lines holds " +
                                  std::to_string(lines));
  }
}

const SelectionModel::Variant& SelectionModel::ready(const Variant& variant, bool lazy) {
  std::call_once(*variant.parsed, [&variant, lazy] {
    // Written once, under the once_flag; every reader comes through here first.
    Variant& v = const_cast<Variant&>(variant);
    std::vector<std::string_view> f, items;
    reserve_points(v);
    for (const auto& [line, line_no] : v.pending) add_point(v, line, line_no, f, items);
    for (const auto& block : v.blocks) add_block_points(v, block, f, items);
    v.blocks.clear();
    v.blocks.shrink_to_fit();
    v.pending.clear();
    v.pending.shrink_to_fit();
    v.regrets.resize(v.points());
    if (!lazy) {  // every time checked now; the text may not outlive the model
      for (size_t p = 0; p < v.points(); ++p) parse_times(v, p);
    }
  });
  return variant;
}

void SelectionModel::parse_times(Variant& v, size_t p) {
  if (v.regrets[p]) return;
  const int line_no = v.line_nos[p];
  auto fail = [line_no](const std::string& why) { fail_at(line_no, why); };
  std::vector<std::string_view> items;
  split(v.times[p], ',', items);
  const size_t entries = v.configs.size();
  if (items.size() != entries) {
    fail(std::to_string(items.size()) + " times for " + std::to_string(entries) + " entries");
  }
  std::vector<double> ms(entries, -1);
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < entries; ++i) {
    if (items[i] == "-") continue;
    if (!parse_time(items[i], ms[i]) || !(ms[i] > 0) || !std::isfinite(ms[i])) {
      fail("time '" + std::string(items[i]) + "' (a positive number or '-')");
    }
    best = std::min(best, ms[i]);
  }
  if (!std::isfinite(best)) fail("a point needs at least one measured entry");
  if (v.references[p] > 0) best = std::min(best, v.references[p]);
  auto row = std::make_unique<float[]>(entries);
  for (size_t i = 0; i < entries; ++i) {
    row[i] = ms[i] < 0 ? std::numeric_limits<float>::quiet_NaN()
                       : static_cast<float>(std::log(ms[i] / best));
  }
  v.regrets[p] = std::move(row);
}

const SelectionModel::Model* SelectionModel::find_model(const std::string& op,
                                                        const std::string& device_name,
                                                        int cc) const {
  const Model* same_cc = nullptr;
  for (const auto& m : models_) {
    if (m.op != op) continue;
    if (m.device_name == device_name) return &m;
    if (!same_cc && m.cc == cc) same_cc = &m;
  }
  return same_cc;
}

std::vector<std::string> SelectionModel::same_arch_devices(const std::string& op,
                                                           const std::string& device_name,
                                                           int cc) const {
  std::vector<std::string> names;
  for (const auto& m : models_) {
    if (m.op == op && m.cc == cc && m.device_name != device_name) names.push_back(m.device_name);
  }
  return names;
}

SelectionModel::Neighbours SelectionModel::nearest_points(const Model& model, const Variant& v,
                                                          const std::vector<int64_t>& shape,
                                                          int alignment) {
  std::vector<float> q(kMaxDims, 1.0f);  // log2(1 + 1): a missing dim reads as 1
  for (size_t i = 0; i < std::min(shape.size(), kMaxDims); ++i) {
    q[i] = static_cast<float>(std::log2(static_cast<double>(std::max<int64_t>(shape[i], 0)) + 1));
  }
  const float q_alignment = static_cast<float>(std::log2(std::max(alignment, 1)));
  Neighbours near;
  // The K nearest points; the pair's index breaks distance ties in table order. A point of more
  // dims than the shape (a batch, for a single product) is none of its neighbours: a batch is
  // measured with its own launches, and single products keep the picks of their own points.
  near.by_distance.reserve(v.points());
  const auto add_points = [&](bool any_dims) {
    for (size_t p = 0; p < v.points(); ++p) {
      if (!any_dims && v.dims[p] > shape.size()) continue;
      const float* c = &v.coords[p * kMaxDims];
      float d = kAlignmentWeight * std::fabs(v.alignment_coords[p] - q_alignment);
      for (size_t i = 0; i < kMaxDims; ++i) d += std::fabs(c[i] - q[i]);
      near.by_distance.emplace_back(d, p);
    }
  };
  add_points(false);
  if (near.by_distance.empty()) add_points(true);  // a variant of batches alone
  near.k = std::min(near.by_distance.size(), static_cast<size_t>(model.neighbours));
  near.window = std::min(near.by_distance.size(), kNeighbourWindow * near.k);
  std::partial_sort(near.by_distance.begin(),
                    near.by_distance.begin() + static_cast<std::ptrdiff_t>(near.window),
                    near.by_distance.end());
  return near;
}

std::vector<double> SelectionModel::feature_weights(const Model& model, const Features* features) {
  // The model's feature weights in the order of the caller's feature names (none: no features).
  std::vector<double> weights;
  if (features && features->values && model.feature_sm_count > 0) {
    for (const auto& name : features->names) {
      double w = 0;
      for (const auto& [n, weight] : model.feature_weights) {
        if (n == name) w = weight;
      }
      weights.push_back(w);
    }
    if (std::all_of(weights.begin(), weights.end(), [](double w) { return w == 0; })) {
      weights.clear();
    }
  }
  return weights;
}

namespace {

// sum_f w_f * (f(call) - f(neighbour)) over the neighbours used: at holds the call's (SM count,
// shape) first, then each neighbour's; values is a buffer reused across entries.
double feature_move(const std::string& config, const SelectionModel::Features& features,
                    const std::vector<double>& weights,
                    const std::vector<std::pair<int, std::vector<int64_t>>>& at,
                    std::vector<double>& values) {
  values.clear();
  features.values(config, at, values);
  const size_t nf = weights.size();
  if (values.size() != at.size() * nf) {
    throw Error(TUNED_STATUS_INTERNAL_ERROR,
                "selection features: " + std::to_string(values.size()) + " values for " +
                    std::to_string(at.size()) + " shapes of " + std::to_string(nf) + " features");
  }
  double moved = 0;
  for (size_t j = 1; j < at.size(); ++j) {
    double shift = 0;
    for (size_t f = 0; f < nf; ++f) shift += weights[f] * (values[f] - values[j * nf + f]);
    moved += std::clamp(shift, -SelectionModel::kMaxFeatureMove, SelectionModel::kMaxFeatureMove);
  }
  return moved;
}

}  // namespace

SelectionModel::Ranked SelectionModel::score_entry(const Model& model, const Variant& v,
                                                   const Neighbours& near, size_t e,
                                                   const std::vector<int64_t>& shape,
                                                   const Features* features,
                                                   const std::vector<double>& weights, ShapesAt& at,
                                                   std::vector<double>& values) {
  double sum = 0, moved = 0;
  size_t used = 0;
  if (!weights.empty()) at.assign(1, {features->sm_count, shape});
  for (size_t i = 0; i < near.window && used < near.k; ++i) {
    const size_t p = near.by_distance[i].second;
    const float regret = v.regrets[p][e];  // parsed by rank, under the lock
    if (std::isnan(regret)) continue;      // not measured there
    sum += regret;
    ++used;
    if (!weights.empty()) {
      const auto first = v.shapes.begin() + static_cast<std::ptrdiff_t>(p * kMaxDims);
      at.emplace_back(model.feature_sm_count,
                      std::vector<int64_t>(first, first + static_cast<std::ptrdiff_t>(v.dims[p])));
    }
  }
  if (!weights.empty() && used > 0) {
    moved = feature_move(v.configs[e], *features, weights, at, values);
  }
  sum += static_cast<double>(near.k - used) * kUnmeasuredRegret;
  const double regret = sum / static_cast<double>(near.k);
  return {v.configs[e], regret + moved / static_cast<double>(near.k), static_cast<int>(e), regret};
}

std::vector<SelectionModel::Ranked> SelectionModel::rank(
    const std::string& op, const std::string& device_name, int cc, const std::string& variant,
    const std::vector<int64_t>& shape, int alignment,
    const std::function<bool(const std::string&)>& accept, size_t max_results,
    const Features* features) const {
  const Model* model = find_model(op, device_name, cc);
  if (!model) return {};
  const Variant* v = nullptr;
  for (const auto& candidate : model->variants) {
    if (candidate.name == variant) v = &ready(candidate, lazy_);
  }
  if (!v || v->points() == 0) return {};
  const Neighbours near = nearest_points(*model, *v, shape, alignment);
  const size_t entries = v->configs.size();
  {
    std::lock_guard<std::mutex> lock(*v->times_mutex);
    for (size_t i = 0; i < near.window; ++i) {
      parse_times(const_cast<Variant&>(*v), near.by_distance[i].second);
    }
  }
  const std::vector<double> weights = feature_weights(*model, features);
  ShapesAt at;
  std::vector<double> values;
  // Each entry is judged on the K nearest points of the window where it was measured: an entry
  // valid for some shapes only (e.g. a kernel for m = 1) on shapes of its kind, an entry swept on
  // fewer problems on those it ran. Fewer than K in the window: log(20) for each missing one.
  // Every entry is scored and accept asked in score order only until max_results pass: it fits a
  // config to the call, which costs more than scoring, and a call wants one entry.
  std::vector<Ranked> scored;
  scored.reserve(entries);
  for (size_t e = 0; e < entries; ++e) {
    scored.push_back(score_entry(*model, *v, near, e, shape, features, weights, at, values));
  }
  // Entries are in index order, so a stable sort breaks score ties by index.
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Ranked& a, const Ranked& b) { return a.score < b.score; });
  std::vector<Ranked> ranked;
  for (auto& r : scored) {
    if (max_results > 0 && ranked.size() == max_results) break;
    if (accept(r.config)) ranked.push_back(std::move(r));
  }
  return ranked;
}

double SelectionModel::transfer_regret(const std::string& op, const std::string& device_name,
                                       int cc) const {
  const Model* model = find_model(op, device_name, cc);
  return model ? model->transfer_regret : 0.0;
}

std::vector<SelectionModel::EntryRef> SelectionModel::entries() const {
  std::vector<EntryRef> out;
  for (const auto& m : models_) {
    for (const auto& v : m.variants) {
      for (const auto& c : v.configs) out.push_back({m.device_name, m.cc, m.op, v.name, c});
    }
  }
  return out;
}

std::vector<SelectionModel::PointRef> SelectionModel::points() const {
  std::vector<PointRef> out;
  for (const auto& m : models_) {
    for (const auto& variant : m.variants) {
      const Variant& v = ready(variant, lazy_);
      for (size_t p = 0; p < v.points(); ++p) {
        const auto first = v.shapes.begin() + static_cast<std::ptrdiff_t>(p * kMaxDims);
        out.push_back({m.device_name, m.cc, m.op, v.name, v.alignments[p],
                       std::vector<int64_t>(first, first + static_cast<std::ptrdiff_t>(v.dims[p]))});
      }
    }
  }
  return out;
}

}  // namespace tuned::cache
