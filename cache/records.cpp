#include "cache/records.hpp"

#include <algorithm>
#include <cmath>

#include "tuned/error.hpp"

namespace tuned::cache {

double shape_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    double x = i < a.size() ? static_cast<double>(std::max<int64_t>(a[i], 1)) : 1.0;
    double y = i < b.size() ? static_cast<double>(std::max<int64_t>(b[i], 1)) : 1.0;
    sum += std::fabs(std::log2(x) - std::log2(y));
  }
  return sum;
}

std::string ProblemKey::shape_string() const {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += 'x';
    text += std::to_string(shape[i]);
  }
  return text;
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
  }
  return "unknown";
}

Disposition disposition_from_string(const std::string& s) {
  for (Disposition d :
       {Disposition::kOk, Disposition::kCompileError, Disposition::kResourceLimit,
        Disposition::kLaunchError, Disposition::kWrongResult, Disposition::kTimeout}) {
    if (s == to_string(d)) return d;
  }
  // Only the database stores these names, so an unknown one means a damaged or foreign row.
  throw Error(TUNED_STATUS_DATABASE_ERROR, "unknown trial disposition '" + s +
                                               "' (expected ok, compile_error, resource_limit, "
                                               "launch_error, wrong_result or timeout)");
}

}  // namespace tuned::cache
