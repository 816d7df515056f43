// Text read from a tuning database, made safe to print or to hand on. A database copied from
// elsewhere may hold any bytes: a terminal obeys the control sequences among them (set its title,
// clear the screen, move the cursor), a TSV or CSV reader splits on tabs and line breaks, so such
// text could forge rows or columns, and a JSON reader refuses bytes that are not UTF-8. Every tool
// that prints database text, and the library where it returns database text as JSON
// (api/results_api.cpp), passes it through here first; the tools see these functions under their
// old names in tools/terminal_text.hpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tuned {

/// Text for a terminal, a table cell or a CSV field: one line of printable characters from which
/// the original bytes can be read back. Valid, printable UTF-8 stays as it is; a backslash is
/// doubled; tab, line feed and carriage return become \t, \n and \r; other C0 controls and DEL
/// become \xNN (ESC: \x1b); the C1 controls U+0080..U+009F and the format characters that reorder
/// or break lines (U+061C, U+200E, U+200F, U+2028..U+202E, U+2066..U+2069) become \uXXXX; a byte
/// that is not part of valid UTF-8 (overlong forms and surrogates included) becomes \xNN.
std::string escape_text(std::string_view text);

/// Whether escape_text leaves text unchanged but for doubled backslashes: valid UTF-8 with no
/// control or format character of the list above.
bool is_printable_text(std::string_view text);

/// Terminal columns of printable text (escape_text's result): its code points. Wide (East Asian)
/// and combining characters are counted as one column each.
size_t display_width(std::string_view text);

/// At most `limit` code points of text (limit >= 4), ending in "..." where it was cut; never cuts
/// a UTF-8 sequence (a byte that belongs to none counts as one code point).
std::string truncate_code_points(std::string_view text, size_t limit);

/// A JSON string literal, quotes included: '"' and '\' escaped, C0 controls as \b \t \n \f \r or
/// \u00XX, and DEL, the C1 controls and the format characters above as \uXXXX, so the document
/// shows nothing raw on a terminal either. Bytes that are not valid UTF-8 become \ufffd (JSON
/// holds text, not bytes).
std::string json_string(std::string_view text);

}  // namespace tuned
