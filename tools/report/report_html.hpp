// The tuning report as one self-contained HTML page: inline CSS, inline SVG charts and a few
// lines of script to sort tables; nothing fetched from a network.
#pragma once

#include <string>

#include "tools/report/report_data.hpp"

namespace tuned::report {

/// The page of report; title heads it (and names the tab).
std::string render_html(const Report& report, const std::string& title);

}  // namespace tuned::report
