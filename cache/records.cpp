#include "cache/records.hpp"

#include <algorithm>
#include <cmath>

#include "tuned/error.hpp"

namespace tuned::cache {

DeviceRecord device_record(const DeviceInfo& device) {
  return {device.uuid,     device.name,     device.cc_major,
          device.cc_minor, device.sm_count, static_cast<int64_t>(device.memory_bytes),
          device.clock_khz};
}

const char* to_string(Disposition d) {
  switch (d) {
    case Disposition::kOk:
      return "ok";
    case Disposition::kCompileError:
      return "compile_error";
    case Disposition::kResourceLimit:
      return "resource_limit";
    case Disposition::kLaunchError:
      return "launch_error";
    case Disposition::kWrongResult:
      return "wrong_result";
    case Disposition::kTimeout:
      return "timeout";
    case Disposition::kInaccurate:
      return "inaccurate";
  }
  return "unknown";
}

Disposition disposition_from_string(const std::string& s) {
  for (Disposition d : {Disposition::kOk, Disposition::kCompileError, Disposition::kResourceLimit,
                        Disposition::kLaunchError, Disposition::kWrongResult, Disposition::kTimeout,
                        Disposition::kInaccurate}) {
    if (s == to_string(d)) return d;
  }
  // Only the database stores these names, so an unknown one means a damaged or foreign row.
  throw Error(TUNED_STATUS_DATABASE_ERROR, "unknown trial disposition '" + s +
                                               "' (expected ok, compile_error, resource_limit, "
                                               "launch_error, wrong_result, timeout or "
                                               "inaccurate)");
}

const char* to_string(BestOrigin o) {
  switch (o) {
    case BestOrigin::kAutotune:
      return "autotune";
    case BestOrigin::kFirstUse:
      return "first-use";
    case BestOrigin::kShipped:
      return "shipped";
  }
  return "unknown";
}

BestOrigin best_origin_from_string(const std::string& s) {
  for (BestOrigin o : {BestOrigin::kAutotune, BestOrigin::kFirstUse, BestOrigin::kShipped}) {
    if (s == to_string(o)) return o;
  }
  throw Error(TUNED_STATUS_DATABASE_ERROR,
              "unknown best origin '" + s + "' (expected autotune, first-use or shipped)");
}

}  // namespace tuned::cache
