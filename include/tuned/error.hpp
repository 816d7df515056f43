/// @file error.hpp
/// The one exception type of tuned. Inside the library everything throws tuned::Error; the C API
/// turns it into a tuned_status_t and a message.
#ifndef TUNED_ERROR_HPP_
#define TUNED_ERROR_HPP_

#include <stdexcept>
#include <string>

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
inline void require_argument(bool condition, const std::string& argument, const std::string& rule) {
  if (!condition) throw Error(TUNED_STATUS_INVALID_ARGUMENT, argument + ": " + rule);
}

}  // namespace tuned

#endif  // TUNED_ERROR_HPP_
