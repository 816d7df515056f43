#include "tuner/stop_reason.hpp"

namespace tuned {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kBudget:
      return "budget";
    case StopReason::kTrialLimit:
      return "trial limit";
    case StopReason::kPatience:
      return "patience";
    case StopReason::kSpaceExhausted:
      return "space exhausted";
    case StopReason::kInterrupted:
      return "interrupted";
    case StopReason::kDeviceError:
      return "device error";
  }
  return "unknown";
}

std::string SessionStop::text() const {
  return detail.empty() ? stop_reason_name(reason) : stop_reason_name(reason) + (": " + detail);
}

}  // namespace tuned
