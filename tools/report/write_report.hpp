// Writes the tuning report of a database (gather, then render_html) to a file, whole or not at
// all: what `tunedb report` and `autotune --report` call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/report/report_data.hpp"

namespace tuned::report {

struct Written {
  size_t bytes = 0, devices = 0, bests = 0;
  int64_t trials = 0;
  double seconds = 0;  // reading the database and writing the page
};

/// The report of scope in db, written to path ("-": stdout) through a file beside it renamed
/// over it, so a reader never sees half a page. Throws Error(TUNED_STATUS_INVALID_ARGUMENT)
/// naming path where it cannot be written.
Written write_report(cache::Database& db, const Scope& scope, const std::string& path,
                     const std::string& title);

/// "wrote PATH (N KB): D device(s), B bests, T trials, in S s"
std::string describe(const Written& written, const std::string& path);

}  // namespace tuned::report
