#include "cache/portable.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "tuned/error.hpp"

namespace tuned::cache {
namespace {

constexpr const char* kFormat = "tuned-portable";

// Whether text is well-formed UTF-8 (TOML holds nothing else): no overlong forms, surrogates or
// code points above U+10FFFF.
bool is_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // cut short
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      cp = cp << 6 | (next & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

// One row of an array of tables, written as it comes.
class RowWriter {
 public:
  RowWriter(std::ostream& out, const char* array) : out_(out), array_(array) {}
  RowWriter& text(const char* key, const std::string& value) {
    if (!is_utf8(value) && bad_.empty()) bad_ = key;
    row_.insert_or_assign(key, value);
    return *this;
  }
  RowWriter& integer(const char* key, int64_t value) {
    row_.insert_or_assign(key, value);
    return *this;
  }
  RowWriter& number(const char* key, double value) {
    row_.insert_or_assign(key, value);
    return *this;
  }
  // Writes the row, or leaves it out (named in the log) where a text is not UTF-8.
  bool write(const std::string& what) {
    if (!bad_.empty()) {
      log(LogLevel::kWarn,
          what + " left out of the portable file: its " + bad_ + " is not UTF-8 text");
      return false;
    }
    out_ << "\n[[" << array_ << "]]\n" << row_ << "\n";
    return true;
  }

 private:
  std::ostream& out_;
  const char* array_;
  toml::table row_;
  std::string bad_;
};

std::string describe_key(const ProblemKey& key) {
  return key.op + " " + key.variant + " " + key.shape_string() + " align " +
         std::to_string(key.alignment) + " of " + key.device_uuid;
}

// A row written counts as its kind, one left out as left out.
void tally(bool written, int64_t& kind, PortableCounts& counts) {
  ++(written ? kind : counts.left_out);
}

void write_header(std::ostream& out, const PortableOptions& options) {
  toml::table header;
  header.insert("format", kFormat);
  header.insert("version", kPortableVersion);
  header.insert("exported_from", is_utf8(options.label) ? options.label : "?");
  out << "# Results of tuned (tunedb export --portable): read by 'tunedb import'.\n"
      << header << "\n";
}

void write_devices(std::ostream& out, Database& db, PortableCounts& counts) {
  for (const DeviceRecord& d : db.devices()) {
    RowWriter row(out, "devices");
    row.text("uuid", d.uuid).text("name", d.name).integer("cc_major", d.cc_major);
    row.integer("cc_minor", d.cc_minor).integer("sm_count", d.sm_count);
    row.integer("memory_bytes", d.memory_bytes).integer("clock_khz", d.clock_khz);
    tally(row.write("device " + d.uuid), counts.devices, counts);
  }
}

void write_sessions(std::ostream& out, Database& db, const Filter& filter, PortableCounts& counts) {
  db.for_each_session(filter, false, [&](const Database::SessionSummary& summary) {
    const SessionRecord& s = summary.session;
    RowWriter row(out, "sessions");
    row.integer("id", s.id).text("origin", s.origin).text("device_uuid", s.device_uuid);
    row.text("op", s.op).text("strategy", s.strategy).number("budget_s", s.budget_s);
    row.text("started_at", s.started_at);
    tally(row.write("session " + std::to_string(s.id)), counts.sessions, counts);
  });
}

// The file keeps version 1's keys for the variant and the rate (`layout`, `tflops`), so that
// builds reading version 1 read it; rate_unit is a key they pass over.
void write_trials(std::ostream& out, Database& db, const Filter& filter, PortableCounts& counts) {
  db.for_each_trial(filter, [&](const TrialRecord& t) {
    RowWriter row(out, "trials");
    row.integer("session_id", t.session_id).text("device_uuid", t.key.device_uuid);
    row.text("op", t.key.op).text("layout", t.key.variant).text("shape", t.key.shape_string());
    row.integer("alignment", t.key.alignment).text("config", t.config);
    row.text("kernel_name", t.kernel_name).text("disposition", to_string(t.disposition));
    row.text("message", t.message).number("ms_median", t.ms_median).number("ms_min", t.ms_min);
    row.integer("runs", t.runs).number("tflops", t.rate).text("rate_unit", t.rate_unit);
    row.number("rel_error", t.rel_error);
    row.integer("registers", t.registers).integer("spill_bytes", t.spill_bytes);
    row.number("compile_ms", t.compile_ms).text("template_hash", t.template_hash);
    row.text("created_at", t.created_at);
    tally(row.write("trial of " + describe_key(t.key) + ", config " + t.config), counts.trials,
          counts);
  });
}

void write_bests(std::ostream& out, Database& db, const Filter& filter,
                 const PortableOptions& options, PortableCounts& counts) {
  db.for_each_best(filter, [&](const BestRecord& b) {
    RowWriter row(out, "bests");
    row.text("device_uuid", b.key.device_uuid).text("op", b.key.op).text("layout", b.key.variant);
    row.text("shape", b.key.shape_string()).integer("alignment", b.key.alignment);
    row.text("config", b.config).text("kernel_name", b.kernel_name).number("ms", b.ms);
    row.number("tflops", b.rate).text("rate_unit", b.rate_unit);
    row.number("baseline_ms", b.baseline_ms);
    // Without its trials a best's session means nothing on the other side.
    row.integer("session_id", options.trials ? b.session_id : 0);
    row.text("origin", to_string(b.origin)).text("template_hash", b.template_hash);
    row.text("source", b.source.empty() ? options.label : b.source);
    row.text("updated_at", b.updated_at);
    tally(row.write("best of " + describe_key(b.key)), counts.bests, counts);
  });
}

void write_cubins(std::ostream& out, Database& db, PortableCounts& counts) {
  db.for_each_cubin([&](const StoredCubin& c) {
    RowWriter row(out, "cubins");
    row.text("source_hash", c.key.source_hash).text("options", c.key.options);
    row.text("arch", c.key.arch).text("nvrtc_version", c.key.nvrtc_version);
    row.text("kernel_name", c.cubin.kernel_name).text("log", c.cubin.log);
    row.integer("registers", c.cubin.registers).integer("spill_bytes", c.cubin.spill_bytes);
    row.integer("stack_bytes", c.cubin.stack_bytes);
    row.integer("static_smem_bytes", c.cubin.static_smem_bytes);
    row.number("compile_ms", c.cubin.compile_ms).text("checksum", c.checksum);
    row.text("image", base64_encode(c.cubin.image));
    tally(row.write("cubin of " + c.cubin.kernel_name), counts.cubins, counts);
  });
}

}  // namespace

PortableCounts write_portable(std::ostream& out, Database& db, const PortableOptions& options) {
  PortableCounts counts;
  Filter filter = options.filter;
  filter.limit = 0;
  write_header(out, options);
  write_devices(out, db, counts);
  if (options.trials) {
    write_sessions(out, db, filter, counts);
    write_trials(out, db, filter, counts);
  }
  write_bests(out, db, filter, options, counts);
  if (options.cubins) write_cubins(out, db, counts);
  return counts;
}

// ----- reading -----------------------------------------------------------------------------------

namespace {

// Typed reads of one row, each error naming the file, the line and the rule.
class RowReader {
 public:
  RowReader(const std::string& path, const toml::table& row, std::string where)
      : path_(path), row_(row), where_(std::move(where)) {}

  std::string text(const char* key, std::optional<std::string> fallback = std::nullopt) const {
    const toml::node* node = find(key, fallback.has_value());
    if (node == nullptr) return *fallback;
    if (const auto* v = node->as_string()) return v->get();
    wrong(key, *node, "a string");
  }
  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    const toml::node* node = find(key, fallback.has_value());
    if (node == nullptr) return *fallback;
    if (const auto* v = node->as_integer()) return v->get();
    wrong(key, *node, "an integer");
  }
  int int32(const char* key, std::optional<int> fallback = std::nullopt) const {
    const int64_t value = integer(key, fallback);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      fail(row_.get(key)->source(),
           where_ + "." + key + " must fit in 32 bits, got " + std::to_string(value));
    }
    return static_cast<int>(value);
  }
  double number(const char* key, std::optional<double> fallback = std::nullopt) const {
    const toml::node* node = find(key, fallback.has_value());
    if (node == nullptr) return *fallback;
    if (const auto* v = node->as_floating_point()) return v->get();
    if (const auto* v = node->as_integer()) return static_cast<double>(v->get());
    wrong(key, *node, "a number");
  }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const toml::source_region& at, const std::string& what) const {
    throw Error(TUNED_STATUS_INVALID_ARGUMENT,
                "portable file '" + path_ + "'" +
                    (at.begin.line > 0 ? ", line " + std::to_string(at.begin.line) : "") + ": " +
                    what);
  }

 private:
  const toml::node* find(const char* key, bool optional) const {
    const toml::node* node = row_.get(key);
    if (node == nullptr && !optional) fail(row_.source(), where_ + " has no '" + key + "'");
    return node;
  }
  [[noreturn]] void wrong(const char* key, const toml::node& node, const char* wanted) const {
    fail(node.source(), where_ + "." + key + " must be " + wanted);
  }

  const std::string& path_;
  const toml::table& row_;
  std::string where_;
};

}  // namespace

namespace {

[[noreturn]] void refuse_file(const std::string& path, const std::string& what) {
  throw Error(TUNED_STATUS_INVALID_ARGUMENT, "portable file '" + path + "': " + what);
}

// The file's TOML, refused unless it says it is a portable file of a version this build reads.
toml::table parse_portable_file(const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    std::string where =
        at.line > 0 ? ", line " + std::to_string(at.line) + ", column " + std::to_string(at.column)
                    : "";
    const std::string why(e.description());
    // A missing or unreadable file is said as such, not as bad TOML.
    if (why.find("File could not be opened") != std::string::npos) {
      refuse_file(path, "cannot be read (missing, a folder, or not readable)");
    }
    refuse_file(path, "not a portable file of tuned (TOML" + where + ": " + why + ")");
  }
  const toml::node* format = root.get("format");
  if (format == nullptr || !format->is_string() || format->as_string()->get() != kFormat) {
    refuse_file(path, std::string("not a portable file of tuned (it must say format = \"") +
                          kFormat + "\"; 'tunedb export --portable' writes one)");
  }
  const toml::node* version = root.get("version");
  if (version == nullptr || !version->is_integer() || version->as_integer()->get() < 1) {
    refuse_file(path, "'version' must be a positive integer");
  }
  if (version->as_integer()->get() > kPortableVersion) {
    refuse_file(path, "version " + std::to_string(version->as_integer()->get()) +
                          " is newer than this build of tuned reads (" +
                          std::to_string(kPortableVersion) + "); use a newer tuned");
  }
  return root;
}

void read_key(const RowReader& r, ProblemKey& key) {
  key.device_uuid = r.text("device_uuid");
  key.op = r.text("op");
  key.variant = r.text("layout");
  const std::string shape = r.text("shape");
  key.alignment = r.int32("alignment");
  const auto dims = parse_shape_string(shape);
  if (!dims) throw Error(TUNED_STATUS_DATABASE_ERROR, "malformed shape '" + shape + "'");
  key.shape = *dims;
}

DeviceRecord read_device(const RowReader& r) {
  DeviceRecord d;
  d.uuid = r.text("uuid");
  d.name = r.text("name");
  d.cc_major = r.int32("cc_major");
  d.cc_minor = r.int32("cc_minor");
  d.sm_count = r.int32("sm_count");
  d.memory_bytes = r.integer("memory_bytes", 0);
  d.clock_khz = r.int32("clock_khz", 0);
  return d;
}

SessionRecord read_session(const RowReader& r) {
  SessionRecord s;
  s.id = r.integer("id");
  s.device_uuid = r.text("device_uuid");
  s.op = r.text("op");
  s.strategy = r.text("strategy", "");
  s.budget_s = r.number("budget_s", 0.0);
  s.started_at = r.text("started_at");
  // Where the file names none, who the session was where it began (as before schema 4).
  s.origin = r.text("origin", "");
  if (s.origin.empty()) {
    s.origin = s.device_uuid + "|" + s.started_at + "|" + std::to_string(s.id);
  }
  return s;
}

TrialRecord read_trial(const RowReader& r) {
  TrialRecord t;
  t.session_id = r.integer("session_id", 0);
  read_key(r, t.key);
  t.config = r.text("config");
  t.kernel_name = r.text("kernel_name", "");
  const std::string disposition = r.text("disposition");
  t.message = r.text("message", "");
  t.ms_median = r.number("ms_median", 0.0);
  t.ms_min = r.number("ms_min", 0.0);
  t.runs = r.int32("runs", 0);
  t.rate = r.number("tflops", 0.0);
  t.rate_unit = r.text("rate_unit", "");
  t.rel_error = r.number("rel_error", 0.0);
  t.registers = r.int32("registers", 0);
  t.spill_bytes = r.int32("spill_bytes", 0);
  t.compile_ms = r.number("compile_ms", 0.0);
  t.template_hash = r.text("template_hash", "");
  t.created_at = r.text("created_at", "");
  t.disposition = disposition_from_string(disposition);  // unknown: the row is skipped
  return t;
}

BestRecord read_best(const RowReader& r) {
  BestRecord b;
  read_key(r, b.key);
  b.config = r.text("config");
  b.kernel_name = r.text("kernel_name", "");
  b.ms = r.number("ms");
  b.rate = r.number("tflops", 0.0);
  b.rate_unit = r.text("rate_unit", "");
  b.baseline_ms = r.number("baseline_ms", 0.0);
  b.session_id = r.integer("session_id", 0);
  b.origin = best_origin_from_string(r.text("origin", "autotune"));
  b.template_hash = r.text("template_hash", "");
  b.source = r.text("source", "");
  b.updated_at = r.text("updated_at", "");
  return b;
}

StoredCubin read_cubin(const RowReader& r, const std::string& path) {
  StoredCubin c;
  c.key.source_hash = r.text("source_hash");
  c.key.options = r.text("options");
  c.key.arch = r.text("arch");
  c.key.nvrtc_version = r.text("nvrtc_version");
  c.cubin.kernel_name = r.text("kernel_name");
  c.cubin.log = r.text("log", "");
  c.cubin.registers = r.int32("registers", 0);
  c.cubin.spill_bytes = r.int32("spill_bytes", 0);
  c.cubin.stack_bytes = r.int32("stack_bytes", 0);
  c.cubin.static_smem_bytes = r.int32("static_smem_bytes", 0);
  c.cubin.compile_ms = r.number("compile_ms", 0.0);
  c.checksum = r.text("checksum");
  if (!base64_decode(r.text("image"), c.cubin.image)) {
    refuse_file(path, r.where() + ".image must be base64 (RFC 4648)");
  }
  return c;
}

// Each array of tables, row by row, into out; a row this build cannot read is skipped and
// counted in skipped, a row of the wrong shape refuses the file.
template <class Row, class Read>
void read_rows(const toml::table& root, const std::string& path, const char* array,
               std::vector<Row>& out, std::map<std::string, int64_t>& skipped, Read read) {
  const toml::node* node = root.get(array);
  if (node == nullptr) return;
  const toml::array* items = node->as_array();
  if (items == nullptr)
    refuse_file(path, std::string("'") + array + "' must be an array of tables");
  for (size_t i = 0; i < items->size(); ++i) {
    const toml::table* row = (*items)[i].as_table();
    const std::string where = std::string(array) + "[" + std::to_string(i) + "]";
    if (row == nullptr) refuse_file(path, where + " must be a table");
    RowReader reader(path, *row, where);
    try {
      out.push_back(read(reader));
    } catch (const Error& e) {
      if (e.status() == TUNED_STATUS_INVALID_ARGUMENT) throw;  // the file's shape: refused
      ++skipped[array];
      log_once(LogLevel::kWarn, "portable row|" + path + "|" + where,
               "portable file '" + path + "': " + where + " skipped: " + e.what());
    }
  }
}

}  // namespace

PortableSource::PortableSource(const std::string& path, std::string label)
    : label_(std::move(label)) {
  const toml::table root = parse_portable_file(path);
  read_rows(root, path, "devices", devices_, skipped_, read_device);
  read_rows(root, path, "sessions", sessions_, skipped_, read_session);
  read_rows(root, path, "trials", trials_, skipped_, read_trial);
  read_rows(root, path, "bests", bests_, skipped_, read_best);
  read_rows(root, path, "cubins", cubins_, skipped_,
            [&](const RowReader& r) { return read_cubin(r, path); });
}

void PortableSource::for_each_session(const std::function<void(const SessionRecord&)>& visit) {
  for (const auto& s : sessions_) visit(s);
}
void PortableSource::for_each_trial(const std::function<void(const TrialRecord&)>& visit) {
  for (const auto& t : trials_) visit(t);
}
void PortableSource::for_each_best(const std::function<void(const BestRecord&)>& visit) {
  for (const auto& b : bests_) visit(b);
}
void PortableSource::for_each_cubin(const std::function<void(const StoredCubin&)>& visit) {
  for (const auto& c : cubins_) visit(c);
}
int64_t PortableSource::skipped(const std::string& table) const {
  // The file's arrays are named in the plural; the tables a merge asks of, as in the database.
  const std::string array = table == "best" ? "bests" : table;
  const auto it = skipped_.find(array);
  return it != skipped_.end() ? it->second : 0;
}

// ----- base64 ------------------------------------------------------------------------------------

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(const std::vector<char>& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) chunk |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) chunk |= static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[chunk >> 18 & 63];
    out += kAlphabet[chunk >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[chunk >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

bool base64_decode(const std::string& text, std::vector<char>& bytes) {
  bytes.clear();
  if (text.size() % 4 != 0) return false;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  bytes.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (padding == 1 && text[i + 2] == '=') return false;  // "x=y=" is not padding
    uint32_t chunk = 0;
    for (int k = 0; k < 4 - padding; ++k) {
      const int v = value(text[i + k]);
      if (v < 0) return false;
      chunk |= static_cast<uint32_t>(v) << (18 - 6 * k);
    }
    bytes.push_back(static_cast<char>(chunk >> 16 & 255));
    if (padding < 2) bytes.push_back(static_cast<char>(chunk >> 8 & 255));
    if (padding < 1) bytes.push_back(static_cast<char>(chunk & 255));
  }
  return true;
}

}  // namespace tuned::cache
