// The C edge's guard for entry points defined outside api/c_api.cpp: every exception becomes a
// status code and the per-thread message tuned_last_error() returns.
#pragma once

#include <functional>

#include "tuned/tuned.h"

namespace tuned::api {

/// Runs body: TUNED_STATUS_SUCCESS (the last error cleared), or the status of the exception it
/// threw with its message kept for tuned_last_error().
tuned_status_t c_edge(const std::function<void()>& body);

}  // namespace tuned::api
