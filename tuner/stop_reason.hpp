#pragma once
// Why a tuning session, or its replay, ended: a value the tuner branches on, never text it
// compares. The detail says more where the reason alone does not (which kernel a device error
// followed).
#include <string>

namespace tuned {

enum class StopReason {
  kBudget,          // the time budget ran out
  kTrialLimit,      // the trial (evaluation) limit was reached
  kPatience,        // that many trials in a row found nothing better
  kSpaceExhausted,  // the strategy had nothing left to propose
  kInterrupted,     // told to stop (SIGINT, a worker losing its lease)
  kDeviceError,     // the CUDA context was lost; detail: after which kernel, and the error
};

/// "budget", "trial limit", "patience", "space exhausted", "interrupted", "device error".
const char* stop_reason_name(StopReason reason);

struct SessionStop {
  StopReason reason = StopReason::kBudget;
  std::string detail;  // empty unless the reason needs one
  /// The name, then ": detail" where there is one.
  std::string text() const;
};

}  // namespace tuned
