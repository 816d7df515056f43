#include "core/text.hpp"

#include <cstdint>
#include <cstdio>

namespace tuned {
namespace {

// Length of the valid UTF-8 sequence at text[i] (1 to 4) with its code point, or 0 where the byte
// starts none: a stray continuation byte, an overlong form, a surrogate, a code point above
// U+10FFFF or a sequence cut short.
size_t decode(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) {
    code_point = c;
    return 1;
  }
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    if (c == 0xe0) low = 0xa0;   // overlong
    if (c == 0xed) high = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    if (c == 0xf0) low = 0x90;   // overlong
    if (c == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  code_point = c & (0xff >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3f);
  }
  return length;
}

// Controls and the format characters that reorder text (bidirectional marks, embeddings,
// overrides and isolates) or break lines: shown escaped, never raw.
bool is_hidden(uint32_t code_point) {
  return code_point < 0x20 || (code_point >= 0x7f && code_point <= 0x9f) || code_point == 0x061c ||
         code_point == 0x200e || code_point == 0x200f ||
         (code_point >= 0x2028 && code_point <= 0x202e) ||
         (code_point >= 0x2066 && code_point <= 0x2069);
}

void append_hex(std::string& out, const char* format, unsigned value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  out += buffer;
}

}  // namespace

std::string escape_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    uint32_t code_point = 0;
    const size_t length = decode(text, i, code_point);
    if (length == 0) {
      append_hex(out, "\\x%02x", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (code_point == '\\') {
      out += "\\\\";
    } else if (code_point == '\t') {
      out += "\\t";
    } else if (code_point == '\n') {
      out += "\\n";
    } else if (code_point == '\r') {
      out += "\\r";
    } else if (code_point < 0x20 || code_point == 0x7f) {
      append_hex(out, "\\x%02x", code_point);
    } else if (is_hidden(code_point)) {
      append_hex(out, "\\u%04x", code_point);
    } else {
      out.append(text, i, length);
    }
    i += length;
  }
  return out;
}

bool is_printable_text(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    uint32_t code_point = 0;
    const size_t length = decode(text, i, code_point);
    if (length == 0 || is_hidden(code_point)) return false;
    i += length;
  }
  return true;
}

size_t display_width(std::string_view text) {
  size_t columns = 0;
  for (char c : text) columns += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return columns;
}

std::string truncate_code_points(std::string_view text, size_t limit) {
  std::string out;
  size_t i = 0, count = 0;
  while (i < text.size()) {
    uint32_t code_point = 0;
    const size_t length = decode(text, i, code_point);
    ++count;
    i += length == 0 ? 1 : length;
  }
  if (count <= limit) return std::string(text);
  // Keep limit - 3 code points, then "...".
  i = 0;
  for (count = 0; count + 3 < limit && i < text.size(); ++count) {
    uint32_t code_point = 0;
    const size_t length = decode(text, i, code_point);
    i += length == 0 ? 1 : length;
  }
  return std::string(text.substr(0, i)) + "...";
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  size_t i = 0;
  while (i < text.size()) {
    uint32_t code_point = 0;
    const size_t length = decode(text, i, code_point);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    switch (code_point) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (is_hidden(code_point)) {
          append_hex(out, "\\u%04x", code_point);
        } else {
          out.append(text, i, length);
        }
    }
    i += length;
  }
  return out + "\"";
}

}  // namespace tuned
