#include "cache/shipped_defaults.hpp"

#include <sstream>
#include <vector>

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
    if (f.size() != 11) fail("expected 11 tab-separated fields, got " + std::to_string(f.size()));
    try {
      const int cc = std::stoi(f[1]);
      DeviceRecord device;
      device.uuid = model_uuid(f[0], cc);
      device.name = f[0];
      device.cc_major = cc / 10;
      device.cc_minor = cc % 10;
      db_.upsert_device(device);
      BestRecord best;
      best.key.device_uuid = device.uuid;
      best.key.op = f[2];
      best.key.layout = f[3];
      best.key.shape = {std::stoll(f[4]), std::stoll(f[5]), std::stoll(f[6])};
      best.key.alignment = std::stoi(f[7]);
      best.config = f[8];
      best.ms = std::stod(f[9]);
      best.baseline_ms = std::stod(f[10]);
      db_.offer_best(best);
      ++rows_;
    } catch (const std::logic_error& e) {  // stoi and friends
      fail(std::string("not a number: ") + e.what());
    }
  }
}

std::optional<ProblemKey> ShippedDefaults::shipped_key(const ProblemKey& key,
                                                       const std::string& device_name, int cc) {
  // This model's rows if it has any, else those of a model with the same compute capability.
  const std::string exact = model_uuid(device_name, cc);
  std::optional<std::string> model;
  for (const auto& d : db_.devices()) {
    if (d.uuid == exact) {
      model = exact;
      break;
    }
    if (!model && d.cc_major * 10 + d.cc_minor == cc) model = d.uuid;
  }
  if (model) {
    ProblemKey shipped = key;
    shipped.device_uuid = *model;
    return shipped;
  }
  return std::nullopt;
}

std::optional<BestRecord> ShippedDefaults::find_best(const ProblemKey& key,
                                                     const std::string& device_name, int cc) {
  const auto shipped = shipped_key(key, device_name, cc);
  return shipped ? db_.find_best(*shipped) : std::nullopt;
}

std::optional<BestRecord> ShippedDefaults::find_nearest(const ProblemKey& key,
                                                        const std::string& device_name, int cc) {
  const auto shipped = shipped_key(key, device_name, cc);
  return shipped ? db_.find_nearest(*shipped) : std::nullopt;
}

std::string ShippedDefaults::row(const BestRecord& best, const std::string& device_name, int cc) {
  std::ostringstream out;
  out.precision(6);
  out << device_name << '\t' << cc << '\t' << best.key.op << '\t' << best.key.layout;
  for (size_t i = 0; i < 3; ++i) out << '\t' << (i < best.key.shape.size() ? best.key.shape[i] : 1);
  out << '\t' << best.key.alignment << '\t' << best.config << '\t' << best.ms << '\t'
      << best.baseline_ms;
  return out.str();
}

}  // namespace tuned::cache
