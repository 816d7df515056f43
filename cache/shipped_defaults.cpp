#include "cache/shipped_defaults.hpp"

#include <sstream>
#include <vector>

#include "core/problem_key.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

// The shipped rows live in the in-memory database under a synthetic device per GPU model.
std::string model_uuid(const std::string& device_name, int cc) {
  return "shipped:" + device_name + ":sm_" + std::to_string(cc);
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  return fields;
}

}  // namespace

std::string_view shipped_gemm_table();  // generated from cache/shipped/*.tsv

ShippedDefaults& ShippedDefaults::builtin() {
  static ShippedDefaults table(shipped_gemm_table());
  return table;
}

ShippedDefaults::ShippedDefaults(std::string_view table) {
  std::istringstream in{std::string(table)};
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const auto f = split_tabs(line);
    auto fail = [&](const std::string& why) {
      throw Error(TUNED_STATUS_CONFIG_ERROR,
                  "shipped defaults, line " + std::to_string(line_no) + ": " + why);
    };
    if (f.size() != 9) fail("expected 9 tab-separated fields, got " + std::to_string(f.size()));
    try {
      Row row;
      row.device_name = f[0];
      row.cc = std::stoi(f[1]);
      row.best.key.device_uuid = model_uuid(f[0], row.cc);
      row.best.key.op = f[2];
      row.best.key.variant = f[3];
      // The shape as the sizes joined by 'x', any number of them ("4096x4096x4096", "1x4097").
      auto shape = parse_shape_string(f[4]);
      if (!shape || shape->empty()) fail("malformed shape '" + f[4] + "'");
      row.best.key.shape = *shape;
      row.best.key.alignment = std::stoi(f[5]);
      row.best.config = f[6];
      row.best.ms = std::stod(f[7]);
      row.best.baseline_ms = std::stod(f[8]);
      row.best.origin = BestOrigin::kShipped;
      rows_.push_back(std::move(row));
    } catch (const std::logic_error& e) {  // stoi and friends
      fail(std::string("not a number: ") + e.what());
    }
  }
}

std::string ShippedDefaults::model_of(const std::string& device_name, int cc) const {
  std::string same_cc;
  for (const auto& r : rows_) {
    if (r.device_name == device_name) return r.device_name;
    if (same_cc.empty() && r.cc == cc) same_cc = r.device_name;
  }
  return same_cc;
}

std::optional<BestRecord> ShippedDefaults::find_best(const ProblemKey& key,
                                                     const std::string& device_name, int cc) {
  const std::string model = model_of(device_name, cc);
  const BestRecord* found = nullptr;
  for (const auto& r : rows_) {
    const ProblemKey& k = r.best.key;
    if (r.device_name != model || k.op != key.op || k.variant != key.variant ||
        k.shape != key.shape || k.alignment != key.alignment) {
      continue;
    }
    if (!found || r.best.ms < found->ms) found = &r.best;  // the fastest row of a key
  }
  return found ? std::optional<BestRecord>(*found) : std::nullopt;
}

std::optional<BestRecord> ShippedDefaults::find_nearest(const ProblemKey& key,
                                                        const std::string& device_name, int cc) {
  const std::string model = model_of(device_name, cc);
  const BestRecord* found = nullptr;
  std::pair<int, double> found_rank{};
  for (const auto& r : rows_) {
    const ProblemKey& k = r.best.key;
    if (r.device_name != model || k.op != key.op || k.variant != key.variant) continue;
    const int tier = k.alignment == key.alignment ? 0 : key.alignment % k.alignment == 0 ? 1 : 2;
    const std::pair<int, double> rank{tier, shape_distance(k.shape, key.shape)};
    if (!found || rank <= found_rank) {
      found = &r.best;
      found_rank = rank;
    }
  }
  return found ? std::optional<BestRecord>(*found) : std::nullopt;
}

std::string ShippedDefaults::row(const BestRecord& best, const std::string& device_name, int cc) {
  std::ostringstream out;
  out.precision(6);
  out << device_name << '\t' << cc << '\t' << best.key.op << '\t' << best.key.variant << '\t'
      << shape_string(best.key.shape) << '\t' << best.key.alignment << '\t' << best.config << '\t'
      << best.ms << '\t' << best.baseline_ms;
  return out.str();
}

}  // namespace tuned::cache
