// tuned_results_json: what the tuning database holds (its bests), as JSON, for programs that show
// what is tuned (Python's tuned.results). The database is opened as `tunedb best` opens it, as a
// reader (cache::Access::kRead), so a listing changes no byte of the file and creates none beside
// it; the rows are those of Database::for_each_best, so the schema's versions and the rows this
// build cannot read are the cache's business, not this file's. Nothing here knows an op: names,
// units and parameters come from the rows and the registry.
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "api/c_edge.hpp"
#include "api/runtime.hpp"
#include "cache/database.hpp"
#include "core/space.hpp"
#include "core/text.hpp"
#include "templates/registry.hpp"
#include "tuned/error.hpp"
#include "tuned/tuned.h"

namespace tuned::api {
namespace {

constexpr auto kLockWait = std::chrono::seconds(10);

// The shortest text that reads back to the same double; JSON has no NaN or infinity: null.
std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : "null";
}

std::string json_dims(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The config's parameters as an object, every one of a known op's in its order (a text naming
// its family by word lists what the word implies too), or null where the text is no config (a
// row written by something else): the text itself is listed all the same.
std::string json_params(const std::string& op, const std::string& config) {
  Config parsed;
  try {
    parsed = read_config(config, config_params(op));
  } catch (const Error&) {
    return "null";
  }
  std::string out = "{";
  for (size_t i = 0; i < parsed.size(); ++i) {
    out +=
        (i > 0 ? ", " : "") + json_string(parsed.name(i)) + ": " + std::to_string(parsed.value(i));
  }
  return out + "}";
}

// The rows' device filter: the uuids `device` names, as `tunedb --device` reads it (a recorded
// uuid, or the only one it begins), or the name of a GPU model (all of its GPUs); else device
// itself, taken as a whole uuid (rows of no such GPU: none). A prefix of several uuids is
// refused, naming them.
std::set<std::string> named_devices(const std::vector<cache::DeviceRecord>& devices,
                                    const std::string& device) {
  std::set<std::string> by_name, by_prefix;
  for (const cache::DeviceRecord& d : devices) {
    if (d.uuid == device) return {d.uuid};
    if (d.name == device) by_name.insert(d.uuid);
    if (d.uuid.rfind(device, 0) == 0) by_prefix.insert(d.uuid);
  }
  if (!by_name.empty()) return by_name;
  // A best may name a GPU the devices table does not list (a row merged without its device):
  // its whole uuid still names it.
  if (by_prefix.empty()) return {device};
  if (by_prefix.size() > 1) {
    std::string list;
    for (const std::string& uuid : by_prefix) list += (list.empty() ? "" : ", ") + uuid;
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "device '" + device + "' begins " + std::to_string(by_prefix.size()) +
                    " recorded uuids (" + list +
                    "): give a longer prefix, the whole uuid or the GPU's name");
  }
  return by_prefix;
}

std::string best_json(const cache::BestRecord& b, const std::string& device_name) {
  std::string unit = b.rate_unit;
  if (unit.empty()) {  // rows older than schema version 5: the op's unit, where this build knows it
    if (const OpInfo* info = find_op_info(b.key.op)) unit = info->rate_unit;
  }
  const bool measured = b.baseline_ms > 0 && std::isfinite(b.baseline_ms);
  return "{\"device_uuid\": " + json_string(b.key.device_uuid) +
         ", \"device_name\": " + (device_name.empty() ? "null" : json_string(device_name)) +
         ", \"op\": " + json_string(b.key.op) + ", \"variant\": " + json_string(b.key.variant) +
         ", \"shape\": " + json_dims(b.key.shape) +
         ", \"alignment\": " + std::to_string(b.key.alignment) +
         ", \"config\": " + json_string(b.config) +
         ", \"params\": " + json_params(b.key.op, b.config) +
         ", \"kernel_name\": " + json_string(b.kernel_name) + ", \"ms\": " + json_number(b.ms) +
         ", \"rate\": " + json_number(b.rate) +
         ", \"rate_unit\": " + (unit.empty() ? "null" : json_string(unit)) +
         ", \"baseline_ms\": " + (measured ? json_number(b.baseline_ms) : "null") +
         ", \"ratio\": " + (measured && b.ms > 0 ? json_number(b.baseline_ms / b.ms) : "null") +
         ", \"session_id\": " + (b.session_id != 0 ? std::to_string(b.session_id) : "null") +
         ", \"updated_at\": " + json_string(b.updated_at) +
         ", \"origin\": " + json_string(cache::to_string(b.origin)) +
         ", \"template_hash\": " + json_string(b.template_hash) +
         ", \"source\": " + json_string(b.source) + "}";
}

// The document tuned_results_json returns (see tuned.h).
std::string results_json(const std::string& path, const std::string& op,
                         const std::string& device) {
  if (!op.empty() && find_op_info(op) == nullptr) {
    std::string known;
    for (const OpInfo& info : op_infos()) known += (known.empty() ? "" : ", ") + info.name;
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "op: unknown op '" + op + "' (this build knows " + known + ")");
  }
  const std::string head = "{\"database\": " + json_string(path);
  std::error_code ec;
  // A reader needs an existing file; a missing one holds nothing tuned yet. (One that cannot be
  // examined is left to the open, which says why.)
  if (!std::filesystem::exists(path, ec) && !ec) {
    return head + ", \"schema_version\": null, \"skipped\": 0, \"bests\": []}\n";
  }
  // A reader (no byte written, no file made beside it). It waits for another process's lock a
  // short while only: a listing asked for now should fail naming the lock, not wait minutes as a
  // tuning run would (autotune's own writes hold it for milliseconds).
  cache::OpenOptions options;
  options.access = cache::Access::kRead;
  options.upgrade = false;
  options.lock_wait = kLockWait;
  cache::Database db(path, options);
  cache::Filter filter;
  filter.op = op;
  std::map<std::string, std::string> names;  // uuid -> GPU name
  const std::vector<cache::DeviceRecord> devices = db.devices();
  for (const cache::DeviceRecord& d : devices) names[d.uuid] = d.name;
  std::set<std::string> wanted;  // several: a model's GPUs, filtered here
  if (!device.empty()) {
    wanted = named_devices(devices, device);
    if (wanted.size() == 1) filter.device_uuid = *wanted.begin();
  }
  std::string rows;
  db.for_each_best(filter, [&](const cache::BestRecord& b) {
    if (!device.empty() && wanted.count(b.key.device_uuid) == 0) return;
    const auto name = names.find(b.key.device_uuid);
    rows +=
        (rows.empty() ? "\n  " : ",\n  ") + best_json(b, name != names.end() ? name->second : "");
  });
  return head + ", \"schema_version\": " + std::to_string(db.file_version()) +
         ", \"skipped\": " + std::to_string(db.skipped("best")) + ", \"bests\": [" + rows +
         (rows.empty() ? "]}\n" : "\n]}\n");
}

}  // namespace
}  // namespace tuned::api

extern "C" {

tuned_status_t tuned_results_json(const char* path, const char* op, const char* device,
                                  char** json) {
  if (json != nullptr) *json = nullptr;
  return tuned::api::c_edge([&] {
    tuned::require_argument(json != nullptr, "json", "must point to a char* to receive the text");
    tuned::require_argument(path == nullptr || *path != '\0', "path",
                            "must not be empty (NULL: the database calls use now)");
    const std::string file = path != nullptr ? path : tuned::Runtime::instance().database_path();
    const std::string text =
        tuned::api::results_json(file, op != nullptr ? op : "", device != nullptr ? device : "");
    char* copy = static_cast<char*>(std::malloc(text.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *json = copy;
  });
}

void tuned_free(void* pointer) { std::free(pointer); }

}  // extern "C"
