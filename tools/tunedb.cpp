// tunedb: lists and exports the tuning database. Argument parsing and printing only; all reads go
// through tuned::cache::Database.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cache/database.hpp"
#include "cache/shipped_defaults.hpp"
#include "templates/op_catalog.hpp"
#include "generator/log.hpp"
#include "tuned/error.hpp"

namespace {

using tuned::cache::BestRecord;
using tuned::cache::Database;
using tuned::cache::DeviceRecord;
using tuned::cache::Filter;
using tuned::cache::SessionRecord;
using tuned::cache::TrialRecord;

struct Options {
  std::string db_path;
  std::string command;
  std::string format;  // empty: aligned table (export: json)
  std::string table = "best";
  Filter filter;
};

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// Shortest text that reads back to the same double, for machine-readable output.
std::string exact(double value) {
  if (!std::isfinite(value)) return "";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : fixed(value, 17);
}

std::string ratio_text(double baseline_ms, double ms, int decimals) {
  return baseline_ms > 0 && ms > 0 ? fixed(baseline_ms / ms, decimals) : "-";
}

// ----- aligned tables -------------------------------------------------------------------------

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void right_align(size_t column) { right_.push_back(column); }

  void print(std::ostream& out, const std::string& empty_note) const {
    std::vector<size_t> width(headers_.size());
    for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    print_row(out, headers_, width);
    std::vector<std::string> rule;
    for (size_t w : width) rule.push_back(std::string(w, '-'));
    print_row(out, rule, width);
    for (const auto& row : rows_) print_row(out, row, width);
    if (rows_.empty()) out << "(" << empty_note << ")\n";
  }

 private:
  void print_row(std::ostream& out, const std::vector<std::string>& row,
                 const std::vector<size_t>& width) const {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      bool right = std::find(right_.begin(), right_.end(), c) != right_.end();
      if (c > 0) line += "  ";
      line += right ? pad + row[c] : (c + 1 < row.size() ? row[c] + pad : row[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }

  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_;
};

// Names for display; a uuid suffix tells apart several GPUs of the same model.
std::map<std::string, std::string> device_names(const std::vector<DeviceRecord>& devices) {
  std::map<std::string, int> count;
  for (const auto& d : devices) ++count[d.name];
  std::map<std::string, std::string> names;
  for (const auto& d : devices) {
    names[d.uuid] = count[d.name] > 1 ? d.name + " (" + d.uuid.substr(0, 12) + ")" : d.name;
  }
  return names;
}

std::string device_name(const std::map<std::string, std::string>& names, const std::string& uuid) {
  auto it = names.find(uuid);
  return it != names.end() ? it->second : uuid;
}

// A message's first line, short enough for a table cell.
std::string excerpt(const std::string& text, size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line = line.substr(0, limit - 3) + "...";
  return line;
}

void print_devices(Database& db) {
  Table table({"uuid", "name", "cc", "SMs", "memory GiB", "clock MHz"});
  for (size_t c : {2, 3, 4, 5}) table.right_align(c);
  for (const auto& d : db.devices()) {
    table.add({d.uuid, d.name, std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor),
               std::to_string(d.sm_count), fixed(d.memory_bytes / 1073741824.0, 1),
               std::to_string(d.clock_khz / 1000)});
  }
  table.print(std::cout, "no devices recorded");
}

// A rate in its op's unit (TFLOP/s for gemm, GB/s for transpose and entropy), from the op catalog:
// names and units only, so this tool links no kernels, tasks or cuBLAS. An op this build does not
// know shows the bare number.
std::string rate_text(const std::string& op, double rate) {
  const tuned::OpInfo* info = tuned::find_op_info(op);
  return fixed(rate, 2) + (info ? " " + info->rate_unit : "");
}

void print_best(Database& db, const Filter& filter) {
  auto names = device_names(db.devices());
  Table table({"device", "op", "layout", "shape", "align", "config", "ms", "rate", "baseline ms",
               "baseline/ms"});
  for (size_t c : {4, 6, 7, 8, 9}) table.right_align(c);
  for (const auto& b : db.bests(filter)) {
    table.add({device_name(names, b.key.device_uuid), b.key.op, b.key.layout, b.key.shape_string(),
               std::to_string(b.key.alignment), b.config, fixed(b.ms, 4), rate_text(b.key.op, b.tflops),
               b.baseline_ms > 0 ? fixed(b.baseline_ms, 4) : "-",
               ratio_text(b.baseline_ms, b.ms, 3)});
  }
  table.print(std::cout, "no best configurations recorded");
}

void print_trials(Database& db, const Filter& filter) {
  Table table({"session", "op", "layout", "shape", "align", "disposition", "ms", "rate", "regs",
               "spill", "compile ms", "config", "message"});
  for (size_t c : {0, 4, 6, 7, 8, 9, 10}) table.right_align(c);
  for (const auto& t : db.trials(filter)) {
    bool ok = t.disposition == tuned::cache::Disposition::kOk;
    table.add({t.session_id != 0 ? std::to_string(t.session_id) : "-", t.key.op, t.key.layout,
               t.key.shape_string(), std::to_string(t.key.alignment),
               tuned::cache::to_string(t.disposition), ok ? fixed(t.ms_median, 4) : "-",
               ok ? rate_text(t.key.op, t.tflops) : "-", std::to_string(t.registers),
               std::to_string(t.spill_bytes), fixed(t.compile_ms, 1), t.config,
               excerpt(t.message, 60)});
  }
  table.print(std::cout, "no trials recorded");
}

void print_sessions(Database& db, const Filter& filter) {
  auto names = device_names(db.devices());
  Table table({"id", "device", "op", "strategy", "budget s", "started", "trials", "ok"});
  for (size_t c : {0, 4, 6, 7}) table.right_align(c);
  for (const auto& s : db.sessions(filter)) {
    Filter of_session;
    of_session.session_id = s.id;
    auto trials = db.trials(of_session);
    size_t ok = std::count_if(trials.begin(), trials.end(), [](const TrialRecord& t) {
      return t.disposition == tuned::cache::Disposition::kOk;
    });
    table.add({std::to_string(s.id), device_name(names, s.device_uuid), s.op, s.strategy,
               fixed(s.budget_s, 1), s.started_at, std::to_string(trials.size()),
               std::to_string(ok)});
  }
  table.print(std::cout, "no sessions recorded");
}

// ----- CSV and JSON ---------------------------------------------------------------------------

// Rows of strings with a header; CSV writes them directly and JSON as objects whose values are
// already JSON text.
using Row = std::vector<std::pair<std::string, std::string>>;  // (column, value)

std::string csv_field(const std::string& value) {
  if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// JSON string literal; bytes that are not valid UTF-8 (compiler logs may hold any) become U+FFFD
// so the document stays valid.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      static const char* kShort[] = {"\\b", "\\t", "\\n", nullptr, "\\f", "\\r"};
      if (c >= 8 && c <= 13 && kShort[c - 8] != nullptr) {
        out += kShort[c - 8];
      } else {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
        out += buffer;
      }
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      size_t length = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      bool valid = length > 0 && i + length <= s.size();
      for (size_t k = 1; valid && k < length; ++k) {
        valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      }
      if (valid && length >= 3) {
        // Reject overlong forms and surrogates (3 bytes) and code points above U+10FFFF (4).
        unsigned char d = static_cast<unsigned char>(s[i + 1]);
        if (c == 0xe0 && d < 0xa0) valid = false;
        if (c == 0xed && d >= 0xa0) valid = false;
        if (c == 0xf0 && d < 0x90) valid = false;
        if (c == 0xf4 && d >= 0x90) valid = false;
      }
      if (valid) {
        out.append(s, i, length);
        i += length;
      } else {
        out += "\\ufffd";
        ++i;
      }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  std::string text = exact(value);
  return text.empty() ? "null" : text;
}

std::string json_dims(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

struct Column {
  std::string name;
  std::string csv;
  std::string json;
};

Column text_col(const std::string& name, const std::string& value) {
  return {name, value, json_string(value)};
}
Column int_col(const std::string& name, int64_t value) {
  return {name, std::to_string(value), std::to_string(value)};
}
Column real_col(const std::string& name, double value) {
  return {name, exact(value), json_number(value)};
}

// Rows written as they come, so an export's memory does not grow with the table (trials can be
// millions): CSV lines under a fixed header, or the objects of one JSON array.
class RowStream {
 public:
  RowStream(std::ostream& out, bool csv, std::vector<std::string> header, std::string indent = "")
      : out_(out), csv_(csv), header_(std::move(header)), indent_(std::move(indent)) {
    // Headers are fixed even when a table is empty, so a CSV consumer always sees the columns.
    if (csv_) write_csv_line(header_);
  }
  void add(const std::vector<Column>& columns) {
    if (csv_) {
      std::vector<std::string> fields;
      for (const auto& c : columns) fields.push_back(c.csv);
      write_csv_line(fields);
      return;
    }
    out_ << (rows_ == 0 ? "[\n" : ",\n") << indent_ << "  {";
    for (size_t c = 0; c < columns.size(); ++c) {
      out_ << (c > 0 ? ", " : "") << json_string(columns[c].name) << ": " << columns[c].json;
    }
    out_ << "}";
    ++rows_;
  }
  void finish() {
    if (!csv_) out_ << (rows_ == 0 ? "[]" : "\n" + indent_ + "]");
  }

 private:
  void write_csv_line(const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) out_ << (i > 0 ? "," : "") << csv_field(fields[i]);
    out_ << "\r\n";  // RFC 4180
  }
  std::ostream& out_;
  bool csv_;
  std::vector<std::string> header_;
  std::string indent_;
  size_t rows_ = 0;
};

const std::vector<std::string> kDeviceColumns = {"uuid",     "name",         "cc_major", "cc_minor",
                                                 "sm_count", "memory_bytes", "clock_khz"};
const std::vector<std::string> kBestColumns = {
    "device_uuid", "device_name", "op",          "layout", "shape",      "dims",      "alignment",
    "config",      "kernel_name", "ms",          "tflops", "baseline_ms", "ratio",    "session_id",
    "updated_at"};
const std::vector<std::string> kTrialColumns = {
    "session_id", "device_uuid", "op",          "layout",      "shape",      "dims",
    "alignment",  "config",      "kernel_name", "disposition", "message",    "ms_median",
    "ms_min",     "runs",        "tflops",      "rel_error",   "registers",  "spill_bytes",
    "compile_ms", "template_hash", "created_at"};
const std::vector<std::string> kSessionColumns = {"id",       "device_uuid", "op",
                                                  "strategy", "budget_s",    "started_at"};

void export_devices(Database& db, RowStream& out) {
  for (const auto& d : db.devices()) {
    out.add({text_col("uuid", d.uuid), text_col("name", d.name), int_col("cc_major", d.cc_major),
             int_col("cc_minor", d.cc_minor), int_col("sm_count", d.sm_count),
             int_col("memory_bytes", d.memory_bytes), int_col("clock_khz", d.clock_khz)});
  }
}

void export_best(Database& db, const Filter& filter, RowStream& out) {
  const auto names = device_names(db.devices());
  for (const auto& b : db.bests(filter)) {
    double ratio = b.baseline_ms > 0 && b.ms > 0 ? b.baseline_ms / b.ms : NAN;
    std::string dims = json_dims(b.key.shape);
    out.add({text_col("device_uuid", b.key.device_uuid),
             text_col("device_name", device_name(names, b.key.device_uuid)),
             text_col("op", b.key.op),
             text_col("layout", b.key.layout),
             text_col("shape", b.key.shape_string()),
             {"dims", dims, dims},
             int_col("alignment", b.key.alignment),
             text_col("config", b.config),
             text_col("kernel_name", b.kernel_name),
             real_col("ms", b.ms),
             real_col("tflops", b.tflops),
             real_col("baseline_ms", b.baseline_ms),
             real_col("ratio", ratio),
             int_col("session_id", b.session_id),
             text_col("updated_at", b.updated_at)});
  }
}

void export_trials(Database& db, const Filter& filter, RowStream& out) {
  db.for_each_trial(filter, [&](const TrialRecord& t) {
    std::string dims = json_dims(t.key.shape);
    out.add({int_col("session_id", t.session_id),
             text_col("device_uuid", t.key.device_uuid),
             text_col("op", t.key.op),
             text_col("layout", t.key.layout),
             text_col("shape", t.key.shape_string()),
             {"dims", dims, dims},
             int_col("alignment", t.key.alignment),
             text_col("config", t.config),
             text_col("kernel_name", t.kernel_name),
             text_col("disposition", tuned::cache::to_string(t.disposition)),
             text_col("message", t.message),
             real_col("ms_median", t.ms_median),
             real_col("ms_min", t.ms_min),
             int_col("runs", t.runs),
             real_col("tflops", t.tflops),
             real_col("rel_error", t.rel_error),
             int_col("registers", t.registers),
             int_col("spill_bytes", t.spill_bytes),
             real_col("compile_ms", t.compile_ms),
             text_col("template_hash", t.template_hash),
             text_col("created_at", t.created_at)});
  });
}

void export_sessions(Database& db, const Filter& filter, RowStream& out) {
  for (const auto& s : db.sessions(filter)) {
    out.add({int_col("id", s.id), text_col("device_uuid", s.device_uuid), text_col("op", s.op),
             text_col("strategy", s.strategy), real_col("budget_s", s.budget_s),
             text_col("started_at", s.started_at)});
  }
}

// One table (devices, sessions, best, trials) as CSV or as a JSON array, streamed.
void write_table(std::ostream& out, Database& db, const std::string& table, const Filter& filter,
                 bool csv, const std::string& indent = "") {
  if (table == "devices") {
    RowStream rows(out, csv, kDeviceColumns, indent);
    export_devices(db, rows);
    rows.finish();
  } else if (table == "trials") {
    RowStream rows(out, csv, kTrialColumns, indent);
    export_trials(db, filter, rows);
    rows.finish();
  } else if (table == "sessions") {
    RowStream rows(out, csv, kSessionColumns, indent);
    export_sessions(db, filter, rows);
    rows.finish();
  } else {
    RowStream rows(out, csv, kBestColumns, indent);
    export_best(db, filter, rows);
    rows.finish();
  }
}

void run_export(Database& db, const Options& options) {
  if (options.format == "shipped") {
    // Rows for cache/shipped/*.tsv: the best configs, keyed by GPU model instead of uuid.
    std::map<std::string, tuned::cache::DeviceRecord> devices;
    for (const auto& d : db.devices()) devices[d.uuid] = d;
    std::cout << "# Exported by tunedb export --format shipped. Columns (tab-separated):\n"
              << "# device_name\tcc\top\tlayout\tshape\talignment\tconfig\tms\tbaseline_ms\n";
    for (const auto& best : db.bests(options.filter)) {
      const auto& d = devices[best.key.device_uuid];
      std::cout << tuned::cache::ShippedDefaults::row(best, d.name, d.cc_major * 10 + d.cc_minor)
                << "\n";
    }
    return;
  }
  if (options.format == "csv") {
    write_table(std::cout, db, options.table, options.filter, /*csv=*/true);
    return;
  }
  // JSON: everything in one document.
  std::cout << "{\n  \"schema_version\": " << Database::schema_version() << ",\n";
  const char* tables[] = {"devices", "sessions", "best", "trials"};
  for (size_t i = 0; i < std::size(tables); ++i) {
    std::cout << "  " << json_string(tables[i]) << ": ";
    write_table(std::cout, db, tables[i], options.filter, /*csv=*/false, "  ");
    std::cout << (i + 1 < std::size(tables) ? ",\n" : "\n");
  }
  std::cout << "}\n";
}

// A listing in CSV or JSON (tunedb best --format csv) rather than an aligned table.
void run_listing_as(Database& db, const Options& options) {
  write_table(std::cout, db, options.command, options.filter, options.format == "csv");
  if (options.format != "csv") std::cout << "\n";
}

// --device accepts a unique prefix of a recorded uuid ("GPU-1a2b").
std::string resolve_device(Database& db, const std::string& given) {
  if (given.empty()) return given;
  std::vector<std::string> matches;
  for (const auto& d : db.devices()) {
    if (d.uuid == given) return given;
    if (d.uuid.rfind(given, 0) == 0) matches.push_back(d.uuid);
  }
  return matches.size() == 1 ? matches[0] : given;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Lists and exports the tuning database of tuned.", "tunedb"};
  app.fallthrough();  // common options may follow the command: tunedb best --op gemm
  app.require_subcommand(1, 1);
  app.add_option("--db", options.db_path, "tuning database (default: $TUNED_DB, else the user's)");
  app.add_option("--op", options.filter.op, "only this op (gemm, ...)");
  app.add_option("--device", options.filter.device_uuid, "only this device (uuid or its prefix)");
  app.add_option("--session", options.filter.session_id, "only this session id")
      ->check(CLI::PositiveNumber);
  app.add_option("--limit", options.filter.limit, "at most N rows (trials, sessions: the latest)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--format", options.format,
                 "csv or json instead of an aligned table; export also takes shipped (rows for "
                 "cache/shipped/*.tsv)")
      ->check(CLI::IsMember({"csv", "json", "shipped"}));
  app.add_subcommand("devices", "GPUs seen by autotune");
  app.add_subcommand("best", "best configuration per device, op, layout, shape and alignment");
  app.add_subcommand("trials", "every candidate tried and its disposition");
  app.add_subcommand("sessions", "autotune runs");
  CLI::App* export_cmd = app.add_subcommand(
      "export", "best configs and trials as JSON (default), or one table as CSV");
  export_cmd->add_option("--table", options.table, "table for --format csv (default best)")
      ->check(CLI::IsMember({"best", "trials", "devices", "sessions"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every tunedb error (CLI11 would add the usage).
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (app.get_subcommands().empty() && message == "A subcommand is required") {
      message = "a command is required: devices, best, trials, sessions or export";
    }
    std::cerr << "tunedb: " << message << " (tunedb --help lists commands and options)\n";
    return 2;
  }
  options.command = app.get_subcommands().front()->get_name();
  if (options.command == "export" && options.format.empty()) options.format = "json";

  // A row this build cannot read is skipped with a warning: shown unless the user set a level.
  if (std::getenv("TUNED_LOG_LEVEL") == nullptr) tuned::set_log_level(tuned::LogLevel::kWarn);
  if (options.db_path.empty()) options.db_path = tuned::cache::default_database_path();
  std::error_code ec;
  // Database would create an empty file; a listing of nothing would hide a wrong path.
  if (!std::filesystem::exists(options.db_path, ec)) {
    std::cerr << "tunedb: no tuning database at '" << options.db_path
              << "' (run autotune first, or pass --db PATH or set TUNED_DB)\n";
    return 2;
  }
  try {
    Database db(options.db_path, tuned::cache::Access::kRead);
    options.filter.device_uuid = resolve_device(db, options.filter.device_uuid);
    if (options.command == "export") {
      run_export(db, options);
    } else if (options.format == "shipped") {
      std::cerr << "tunedb: --format shipped is for export only\n";
      return 2;
    } else if (!options.format.empty()) {
      run_listing_as(db, options);
    } else if (options.command == "devices") {
      print_devices(db);
    } else if (options.command == "best") {
      print_best(db, options.filter);
    } else if (options.command == "trials") {
      print_trials(db, options.filter);
    } else {
      print_sessions(db, options.filter);
    }
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "tunedb: cannot write the output\n";
      return 2;
    }
  } catch (const tuned::Error& e) {
    std::cerr << "tunedb: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tunedb: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
