/// @file error.hpp
/// The one exception type of tuned. Inside the library everything throws tuned::Error; the C API
/// turns it into a tuned_status_t and a message.
#ifndef TUNED_ERROR_HPP_
#define TUNED_ERROR_HPP_

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "tuned/tuned.h"

namespace tuned {

/// An error with a status code and a message that names the argument or call and the rule.
class Error : public std::runtime_error {
 public:
  Error(tuned_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  /// The C status code this error maps to.
  tuned_status_t status() const noexcept { return status_; }

 private:
  tuned_status_t status_;
};

/// Throws Error(TUNED_STATUS_INVALID_ARGUMENT, "<argument>: <rule>") unless condition holds.
/// Views, not strings: a check that passes allocates nothing (they run on every call).
inline void require_argument(bool condition, std::string_view argument, std::string_view rule) {
  if (!condition) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, std::string(argument) + ": " + std::string(rule));
  }
}

/// The same with the rule's text made by rule() only when the check fails, for rules that quote
/// numbers: formatting them on every call costs microseconds where a small GEMM's launch does.
template <typename RuleText,
          typename = std::enable_if_t<std::is_invocable_r_v<std::string, RuleText>>>
inline void require_argument(bool condition, std::string_view argument, RuleText&& rule) {
  if (!condition) {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT, std::string(argument) + ": " + rule());
  }
}

}  // namespace tuned

#endif  // TUNED_ERROR_HPP_
