// The tools' names for core/text.hpp (text from a database made safe for a terminal, a table, CSV
// or JSON): the functions moved into the library's core when the library began to return database
// text as JSON itself (tuned_results_json), so that one implementation serves both.
#pragma once

#include "core/text.hpp"

namespace tuned::tools {

using tuned::display_width;
using tuned::escape_text;
using tuned::is_printable_text;
using tuned::json_string;
using tuned::truncate_code_points;

}  // namespace tuned::tools
