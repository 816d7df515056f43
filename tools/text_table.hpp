// Aligned tables for a terminal, shared by the tools: every cell escaped (tools/terminal_text.hpp),
// one row one line; and configs abbreviated to a table cell (a whole config is up to ~190 columns:
// --wide prints it whole; CSV and JSON always hold it whole).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tools/terminal_text.hpp"

namespace tuned::tools {

// A table's rows, handed one at a time to `row`: a listing's query, run anew on every call.
using RowSink = std::function<void(std::vector<std::string>)>;
using RowSource = std::function<void(const RowSink& row)>;

// An aligned table printed from a source read twice, the first pass measuring the columns and the
// second printing, so that memory does not grow with the rows (trials can be millions). Every cell
// is escaped: text from a database never reaches the terminal raw, and one row is one line. A row
// that another process adds between the passes is printed too; where it is wider than measured,
// only its own line is out of alignment.
class Table {
 public:
  Table(std::vector<std::string> headers, std::vector<size_t> right_aligned)
      : headers_(std::move(headers)), right_(std::move(right_aligned)) {}

  void print(std::ostream& out, const RowSource& rows, const std::string& empty_note) const {
    std::vector<size_t> width(headers_.size());
    for (size_t c = 0; c < headers_.size(); ++c) width[c] = display_width(headers_[c]);
    rows([&](std::vector<std::string> row) {
      for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], display_width(escape_text(row[c])));
      }
    });
    print_row(out, headers_, width);
    std::vector<std::string> rule;
    for (size_t w : width) rule.push_back(std::string(w, '-'));
    print_row(out, rule, width);
    size_t printed = 0;
    rows([&](std::vector<std::string> row) {
      for (auto& cell : row) cell = escape_text(cell);
      print_row(out, row, width);
      ++printed;
    });
    if (printed == 0 && !empty_note.empty()) out << "(" << empty_note << ")\n";
  }

 private:
  void print_row(std::ostream& out, const std::vector<std::string>& row,
                 const std::vector<size_t>& width) const {
    std::string line;
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      const size_t used = display_width(row[c]);
      std::string pad(width[c] > used ? width[c] - used : 0, ' ');
      bool right = std::find(right_.begin(), right_.end(), c) != right_.end();
      if (c > 0) line += "  ";
      line += right ? pad + row[c] : (c + 1 < row.size() ? row[c] + pad : row[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }

  std::vector<std::string> headers_;
  std::vector<size_t> right_;
};

/// The columns an abbreviated config takes at most.
inline constexpr size_t kConfigColumns = 48;

/// A config ("BM=128,BN=128,...") for a table cell: whole where it fits in `limit` columns, else
/// its leading parameters (cut after a comma), "..." and a digest of the whole, "#a3f1", so that
/// two configs cut alike still read apart. limit 0: always whole (--wide).
inline std::string abbreviate_config(const std::string& config, size_t limit = kConfigColumns) {
  constexpr size_t kTail = 9;  // "... #a3f1"
  if (limit == 0 || display_width(config) <= limit) return config;
  uint32_t hash = 2166136261u;  // FNV-1a, folded to 16 bits
  for (unsigned char c : config) hash = (hash ^ c) * 16777619u;
  char digest[8];
  std::snprintf(digest, sizeof digest, "#%04x", static_cast<unsigned>((hash >> 16) ^ (hash & 0xffff)));
  // limit - kTail code points and "...", which goes: the cut is made after a comma where one is.
  std::string head = truncate_code_points(config, std::max<size_t>(limit, kTail + 4) - kTail + 3);
  head.resize(head.size() - 3);
  if (const size_t comma = head.rfind(','); comma != std::string::npos) head.resize(comma + 1);
  return head + "... " + digest;
}

}  // namespace tuned::tools
