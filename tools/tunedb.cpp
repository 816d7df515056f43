// tunedb: lists, exports, merges and imports the tuning database. Argument parsing and printing
// only; all reads and writes go through tuned::cache::Database (and cache/portable.hpp).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/database.hpp"
#include "cache/portable.hpp"
#include "cache/shipped_defaults.hpp"
#include "cache/tuning_store.hpp"
#include "core/log.hpp"
#include "generator/device.hpp"
#include "templates/registry.hpp"
#include "tools/exit_codes.hpp"
#include "tools/report/write_report.hpp"
#include "tools/terminal_text.hpp"
#include "tools/text_table.hpp"
#include "tools/tool_version.hpp"
#include "tuned/error.hpp"
#include "tuner/stored_config.hpp"

namespace {

using tuned::cache::BestRecord;
using tuned::cache::Database;
using tuned::cache::DeviceRecord;
using tuned::cache::Filter;
using tuned::cache::SessionRecord;
using tuned::cache::TrialRecord;
using tuned::tools::display_width;
using tuned::tools::escape_text;
using tuned::tools::json_string;
using tuned::tools::kExitFailure;
using tuned::tools::kExitNoDevice;
using tuned::tools::kExitUsage;

struct Options {
  std::string db_path;
  std::string db_from;  // where db_path came from, for info: "--db", "$TUNED_DB", ...
  std::string command;
  std::string format;  // empty: aligned table (export: json)
  std::string table = "best";
  Filter filter;
  std::vector<std::string> merge_paths;     // merge: [DEST] SRC
  std::string import_path;                  // import: FILE
  std::string portable_path;                // export --portable FILE
  bool with_cubins = false;                 // merge, import, export --portable
  bool with_trials = false;                 // export --portable
  std::string store_url;                    // push, pull: --store URL
  std::vector<std::string> device_models;   // pull: --device-model NAME (default: this machine's)
  std::string report_path = "report.html";  // report: --out FILE ('-': stdout)
  bool wide = false;                        // --wide: whole configs in tables
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

// ----- aligned tables (tools/text_table.hpp) --------------------------------------------------

using tuned::tools::RowSink;
using tuned::tools::Table;

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

// A message's first line, short enough for a table cell (the table escapes it).
std::string excerpt(const std::string& text, size_t limit) {
  return tuned::tools::truncate_code_points(text.substr(0, text.find('\n')), limit);
}

void print_devices(Database& db) {
  Table table({"uuid", "name", "cc", "SMs", "memory GiB", "clock MHz"}, {2, 3, 4, 5});
  const auto devices = db.devices();
  table.print(
      std::cout,
      [&](const RowSink& row) {
        for (const auto& d : devices) {
          row({d.uuid, d.name, std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor),
               std::to_string(d.sm_count), fixed(d.memory_bytes / 1073741824.0, 1),
               std::to_string(d.clock_khz / 1000)});
        }
      },
      "no devices recorded");
}

// A rate in its op's unit (TFLOP/s for gemm, GB/s for transpose and entropy): the unit stored with
// it, else (rows older than schema version 5) the op catalog's: names and units only, so this tool
// links no kernels, tasks or cuBLAS. An op this build does not know shows the bare number.
std::string rate_text(const std::string& op, const std::string& unit, double rate) {
  if (!unit.empty()) return fixed(rate, 2) + " " + unit;
  const tuned::OpInfo* info = tuned::find_op_info(op);
  return fixed(rate, 2) + (info ? " " + info->rate_unit : "");
}

// A config as a table shows it: abbreviated unless --wide (CSV and JSON hold it whole).
std::string config_cell(const std::string& config, bool wide) {
  return tuned::tools::abbreviate_config(config, wide ? 0 : tuned::tools::kConfigColumns);
}

void print_best(Database& db, const Filter& filter, bool wide) {
  const auto names = device_names(db.devices());
  Table table({"device", "op", "variant", "shape", "align", "config", "ms", "rate", "baseline ms",
               "baseline/ms", "source"},
              {4, 6, 7, 8, 9});
  table.print(
      std::cout,
      [&](const RowSink& row) {
        db.for_each_best(filter, [&](const BestRecord& b) {
          row({device_name(names, b.key.device_uuid), b.key.op, b.key.variant, b.key.shape_string(),
               std::to_string(b.key.alignment), config_cell(b.config, wide), fixed(b.ms, 4),
               rate_text(b.key.op, b.rate_unit, b.rate),
               b.baseline_ms > 0 ? fixed(b.baseline_ms, 4) : "-",
               ratio_text(b.baseline_ms, b.ms, 3), b.source.empty() ? "here" : b.source});
        });
      },
      "no best configurations recorded");
}

void print_trials(Database& db, const Filter& filter, bool wide) {
  Table table({"session", "op", "variant", "shape", "align", "disposition", "ms", "rate", "regs",
               "spill", "compile ms", "config", "message"},
              {0, 4, 6, 7, 8, 9, 10});
  table.print(
      std::cout,
      [&](const RowSink& row) {
        db.for_each_trial(filter, [&](const TrialRecord& t) {
          bool ok = t.disposition == tuned::cache::Disposition::kOk;
          row({t.session_id != 0 ? std::to_string(t.session_id) : "-", t.key.op, t.key.variant,
               t.key.shape_string(), std::to_string(t.key.alignment),
               tuned::cache::to_string(t.disposition), ok ? fixed(t.ms_median, 4) : "-",
               ok ? rate_text(t.key.op, t.rate_unit, t.rate) : "-", std::to_string(t.registers),
               std::to_string(t.spill_bytes), fixed(t.compile_ms, 1), config_cell(t.config, wide),
               excerpt(t.message, 60)});
        });
      },
      "no trials recorded");
}

// Trial counts come from SQL (COUNT, SUM): no trial is loaded to count it.
void print_sessions(Database& db, const Filter& filter) {
  const auto names = device_names(db.devices());
  Table table({"id", "device", "op", "strategy", "budget s", "started", "trials", "ok"},
              {0, 4, 6, 7});
  table.print(
      std::cout,
      [&](const RowSink& row) {
        db.for_each_session(filter, /*count_trials=*/true,
                            [&](const Database::SessionSummary& summary) {
                              const SessionRecord& s = summary.session;
                              row({std::to_string(s.id), device_name(names, s.device_uuid), s.op,
                                   s.strategy, fixed(s.budget_s, 1), s.started_at,
                                   std::to_string(summary.trials), std::to_string(summary.ok)});
                            });
      },
      "no sessions recorded");
}

// ----- CSV and JSON ---------------------------------------------------------------------------

// Rows of strings with a header; CSV writes them directly and JSON as objects whose values are
// already JSON text. Text from the database is escaped for both: in CSV as in a table
// (tools/terminal_text.hpp: a cell holds no control character, so no line break either), then
// quoted as RFC 4180 says; in JSON as a JSON string.
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
  return {name, escape_text(value), json_string(value)};
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
    "device_uuid", "device_name", "op",          "variant",    "shape",  "dims",
    "alignment",   "config",      "kernel_name", "ms",         "rate",   "rate_unit",
    "baseline_ms", "ratio",       "session_id",  "updated_at", "origin", "template_hash",
    "source"};
const std::vector<std::string> kTrialColumns = {
    "session_id",    "device_uuid", "op",        "variant",     "shape",
    "dims",          "alignment",   "config",    "kernel_name", "disposition",
    "message",       "ms_median",   "ms_min",    "runs",        "rate",
    "rate_unit",     "rel_error",   "registers", "spill_bytes", "compile_ms",
    "template_hash", "created_at"};
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
  db.for_each_best(filter, [&](const BestRecord& b) {
    double ratio = b.baseline_ms > 0 && b.ms > 0 ? b.baseline_ms / b.ms : NAN;
    std::string dims = json_dims(b.key.shape);
    out.add({text_col("device_uuid", b.key.device_uuid),
             text_col("device_name", device_name(names, b.key.device_uuid)),
             text_col("op", b.key.op),
             text_col("variant", b.key.variant),
             text_col("shape", b.key.shape_string()),
             {"dims", dims, dims},
             int_col("alignment", b.key.alignment),
             text_col("config", b.config),
             text_col("kernel_name", b.kernel_name),
             real_col("ms", b.ms),
             real_col("rate", b.rate),
             text_col("rate_unit", b.rate_unit),
             real_col("baseline_ms", b.baseline_ms),
             real_col("ratio", ratio),
             int_col("session_id", b.session_id),
             text_col("updated_at", b.updated_at),
             text_col("origin", tuned::cache::to_string(b.origin)),
             text_col("template_hash", b.template_hash),
             text_col("source", b.source)});
  });
}

void export_trials(Database& db, const Filter& filter, RowStream& out) {
  db.for_each_trial(filter, [&](const TrialRecord& t) {
    std::string dims = json_dims(t.key.shape);
    out.add({int_col("session_id", t.session_id),
             text_col("device_uuid", t.key.device_uuid),
             text_col("op", t.key.op),
             text_col("variant", t.key.variant),
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
             real_col("rate", t.rate),
             text_col("rate_unit", t.rate_unit),
             real_col("rel_error", t.rel_error),
             int_col("registers", t.registers),
             int_col("spill_bytes", t.spill_bytes),
             real_col("compile_ms", t.compile_ms),
             text_col("template_hash", t.template_hash),
             text_col("created_at", t.created_at)});
  });
}

void export_sessions(Database& db, const Filter& filter, RowStream& out) {
  db.for_each_session(filter, /*count_trials=*/false, [&](const Database::SessionSummary& summary) {
    const SessionRecord& s = summary.session;
    out.add({int_col("id", s.id), text_col("device_uuid", s.device_uuid), text_col("op", s.op),
             text_col("strategy", s.strategy), real_col("budget_s", s.budget_s),
             text_col("started_at", s.started_at)});
  });
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

// Why text cannot be a field of cache/shipped/*.tsv, or "" if it can. ShippedDefaults splits the
// table on line breaks and tabs and reads fields as they are (no escapes), a line starting with '#'
// is a comment, and cache/CMakeLists.txt compiles the file into libtuned inside the raw string
// literal R"tuned_tsv(...)tuned_tsv".
std::string shipped_field_problem(const std::string& text, bool first) {
  if (!tuned::tools::is_printable_text(text)) {
    return "holds a tab, a line break, another control character or bytes that are not UTF-8";
  }
  if (text.find(")tuned_tsv\"") != std::string::npos) {
    return "holds the end of the raw string literal the table is compiled into";
  }
  if (first && !text.empty() && text[0] == '#') return "starts with '#' (a comment line)";
  return "";
}

// Rows for cache/shipped/*.tsv: the best configs, keyed by GPU model instead of uuid. A row with a
// field the table cannot hold is left out with a line on stderr naming it (escaped).
void export_shipped(Database& db, const Filter& filter) {
  std::map<std::string, tuned::cache::DeviceRecord> devices;
  for (const auto& d : db.devices()) devices[d.uuid] = d;
  std::cout << "# Exported by tunedb export --format shipped. Columns (tab-separated):\n"
            << "# device_name\tcc\top\tlayout\tshape\talignment\tconfig\tms\tbaseline_ms\n";
  db.for_each_best(filter, [&](const BestRecord& best) {
    const auto& d = devices[best.key.device_uuid];
    const std::pair<const char*, const std::string*> fields[] = {
        {"device name", &d.name},
        {"op", &best.key.op},
        {"layout", &best.key.variant},
        {"config", &best.config},
    };
    for (const auto& [name, text] : fields) {
      const std::string problem = shipped_field_problem(*text, text == &d.name);
      if (problem.empty()) continue;
      std::cerr << "tunedb: best row of device '" << escape_text(best.key.device_uuid) << "', op '"
                << escape_text(best.key.op) << "', layout '" << escape_text(best.key.variant)
                << "', shape " << best.key.shape_string() << ", alignment " << best.key.alignment
                << " left out of the shipped export: its " << name << " " << problem << "\n";
      return;
    }
    std::cout << tuned::cache::ShippedDefaults::row(best, d.name, d.cc_major * 10 + d.cc_minor)
              << "\n";
  });
}

void run_export(Database& db, const Options& options) {
  if (options.format == "shipped") {
    export_shipped(db, options.filter);
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

// ----- results that travel --------------------------------------------------------------------

// Where rows come from, as their provenance says it: "host:/absolute/path".
std::string provenance(const std::string& path) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return std::string(host) + ":" + (ec ? path : absolute.lexically_normal().string());
}

void print_report(const std::string& what, const tuned::cache::MergeReport& r) {
  auto n = [](int64_t v) { return std::to_string(v); };
  std::cout << what << "\n"
            << "devices: " << n(r.devices_added) << " added, " << n(r.devices_present)
            << " present\n"
            << "sessions: " << n(r.sessions_added) << " added, " << n(r.sessions_present)
            << " present, " << n(r.sessions_malformed) << " malformed\n"
            << "trials: " << n(r.trials_added) << " added, " << n(r.trials_present) << " present, "
            << n(r.trials_malformed) << " malformed\n"
            << "bests: " << n(r.bests_taken) << " taken, " << n(r.bests_kept) << " kept, "
            << n(r.bests_refused) << " refused, " << n(r.bests_malformed) << " malformed\n"
            << "cubins: " << n(r.cubins_added) << " added, " << n(r.cubins_present) << " present, "
            << n(r.cubins_refused) << " refused";
  if (r.cubins_not_asked > 0) {
    std::cout << ", " << r.cubins_not_asked
              << " not copied (--with-cubins copies them, for a source you trust)";
  }
  std::cout << "\n";
}

tuned::cache::MergeOptions merge_options(const Options& options) {
  tuned::cache::MergeOptions merge;
  merge.with_cubins = options.with_cubins;
  merge.check_best = tuned::check_stored_best;
  return merge;
}

int run_merge(const std::string& dest, const std::string& src, const Options& options) {
  Database source(src, tuned::cache::Access::kRead);
  tuned::cache::DatabaseSource rows(source, provenance(src));
  Database db(dest, tuned::cache::Access::kWrite);
  const auto report = db.merge(rows, merge_options(options));
  print_report("merged '" + escape_text(src) + "' into '" + escape_text(dest) + "'", report);
  return 0;
}

int run_import(const std::string& dest, const std::string& file, const Options& options) {
  tuned::cache::PortableSource rows(file, provenance(file));  // read whole before any write
  Database db(dest, tuned::cache::Access::kWrite);
  const auto report = db.merge(rows, merge_options(options));
  print_report("imported '" + escape_text(file) + "' into '" + escape_text(dest) + "'", report);
  return 0;
}

// This host's name, for the provenance of what it pushes.
std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 && name[0] ? name : "localhost";
}

// push: the database's records to the store (the database is only read).
int run_push(const Options& options) {
  Database db(options.db_path, tuned::cache::Access::kRead);
  tuned::cache::TuningStore store(options.store_url);
  const auto r = store.push(db, host_name());
  auto n = [](int64_t v) { return std::to_string(v); };
  std::cout << "pushed '" << escape_text(options.db_path) << "' to " << store.name() << "\n"
            << "  devices: " << n(r.devices) << " sent\n"
            << "  sessions: " << n(r.sessions_added) << " added, " << n(r.sessions_present)
            << " present\n"
            << "  trials: " << n(r.trials_added) << " added, " << n(r.trials_present) << " present";
  if (r.trials_without_session > 0) {
    std::cout << ", " << n(r.trials_without_session) << " left out (no session of theirs here)";
  }
  std::cout << "\n  bests: " << n(r.bests_taken) << " taken, " << n(r.bests_kept)
            << " kept (the store's as fast or faster)";
  if (r.bests_without_device > 0) {
    std::cout << ", " << n(r.bests_without_device) << " left out (no device of theirs here)";
  }
  std::cout << "\n";
  return 0;
}

// pull: the store's bests for this machine's GPU models (or those named) into the database, as
// data: each config checked against this build's space; kernels compiled here, never taken.
int run_pull(const Options& options) {
  std::vector<std::string> models = options.device_models;
  if (models.empty()) {
    int count = 0;
    try {
      count = tuned::device_count();
    } catch (const tuned::Error& e) {
      std::cerr << "tunedb: pull: no GPU here to pull for (" << escape_text(e.what())
                << "); name the models with --device-model NAME\n";
      return kExitNoDevice;
    }
    for (int i = 0; i < count; ++i) {
      const std::string name = tuned::query_device(i).name;
      if (std::find(models.begin(), models.end(), name) == models.end()) models.push_back(name);
    }
  }
  tuned::cache::TuningStore store(options.store_url);
  const auto source = store.bests_source(models);
  Database db(options.db_path, tuned::cache::Access::kWrite);
  tuned::cache::MergeOptions merge = merge_options(options);
  merge.with_cubins = false;
  const auto report = db.merge(*source, merge);
  std::string names;
  for (const auto& m : models) names += (names.empty() ? "" : ", ") + m;
  print_report("pulled the bests of " + escape_text(names) + " from " + store.name() + " into '" +
                   escape_text(options.db_path) + "'",
               report);
  return 0;
}

// Written aside and renamed into place: a failed export leaves no partial file at FILE.
int run_export_portable(Database& db, const Options& options) {
  tuned::cache::PortableOptions portable;
  portable.filter = options.filter;
  portable.trials = options.with_trials;
  portable.cubins = options.with_cubins;
  portable.label = provenance(options.db_path);
  const std::string& path = options.portable_path;
  if (path == "-") {
    tuned::cache::write_portable(std::cout, db, portable);
    return 0;
  }
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  tuned::cache::PortableCounts counts;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      std::cerr << "tunedb: --portable " << escape_text(path)
                << ": cannot write it: " << std::strerror(errno) << "\n";
      return kExitFailure;
    }
    counts = tuned::cache::write_portable(out, db, portable);
    out.flush();
    if (!out) {
      out.close();
      std::remove(temporary.c_str());
      std::cerr << "tunedb: --portable " << escape_text(path) << ": cannot write it\n";
      return kExitFailure;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::cerr << "tunedb: --portable " << escape_text(path)
              << ": cannot write it: " << std::strerror(errno) << "\n";
    std::remove(temporary.c_str());
    return kExitFailure;
  }
  std::cout << "exported to '" << escape_text(path) << "': " << counts.devices << " devices, "
            << counts.bests << " bests, " << counts.sessions << " sessions, " << counts.trials
            << " trials, " << counts.cubins << " cubins";
  if (counts.left_out > 0) std::cout << " (" << counts.left_out << " rows left out)";
  std::cout << "\n";
  return 0;
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

namespace {

// A check of a whole number of type T from `low` up, saying `rule` and the value where it is not
// one (CLI11's own range checks would print their range: a 309-digit number).
template <typename T>
CLI::Validator whole_number(T low, const std::string& rule, const std::string& type) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        T number = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
        const bool whole =
            !value.empty() && ec == std::errc() && end == value.data() + value.size();
        return whole && number >= low ? "" : rule + ", got '" + value + "'";
      },
      type);
}

// The commands and options; values land in options.
void declare_command_line(CLI::App& app, Options& options) {
  app.add_option("--db", options.db_path,
                 "tuning database (default: $TUNED_DB, else the user's; now " +
                     escape_text(tuned::cache::default_database_path()) + ")");
  app.add_option("--op", options.filter.op, "only this op (gemm, ...)");
  app.add_option("--device", options.filter.device_uuid, "only this device (uuid or its prefix)");
  app.add_option("--session", options.filter.session_id, "only this session id")
      ->check(whole_number<int64_t>(1, "must be a positive session id", "ID"));
  app.add_option("--limit", options.filter.limit, "at most N rows (trials, sessions: the latest)")
      ->check(whole_number<int>(0, "must be a whole number of rows from 0 (no limit) to 2147483647",
                                "N"));
  app.add_flag("--wide", options.wide,
               "best, trials: print configs whole (a table abbreviates them; csv and json hold "
               "them whole)");
  app.add_option("--format", options.format,
                 "csv or json instead of an aligned table; export also takes shipped (rows for "
                 "cache/shipped/*.tsv)")
      ->check(CLI::IsMember({"csv", "json", "shipped"}));
  app.add_subcommand("devices", "GPUs seen by autotune");
  app.add_subcommand("best", "best configuration per device, op, variant, shape and alignment");
  app.add_subcommand("trials", "every candidate tried and its disposition");
  app.add_subcommand("sessions", "autotune runs");
  app.add_subcommand("info",
                     "the database's path (as chosen: --db, $TUNED_DB or the default), schema "
                     "version, file size and rows per table; only reads");
  app.add_subcommand("upgrade",
                     "migrate an older database to this build's schema, so the library records "
                     "in it again (besides merge and import, the only command that writes)");
  CLI::App* report_cmd = app.add_subcommand(
      "report",
      "report [--out FILE]: one self-contained HTML page of the database: per device the ratio "
      "to the baseline of every tuned problem, a roofline, which kernel family wins where, the "
      "tuning curves, and the database's provenance (--op and --device narrow it)");
  report_cmd->add_option("--out", options.report_path,
                         "the page to write (default report.html; '-': stdout)");
  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "best configs and trials as JSON (default), or one table as CSV; --portable FILE: a file "
      "that 'tunedb import' reads");
  export_cmd->add_option("--table", options.table, "table for --format csv (default best)")
      ->check(CLI::IsMember({"best", "trials", "devices", "sessions"}));
  export_cmd->add_option("--portable", options.portable_path,
                         "write devices and best configs (with template hash and provenance) to "
                         "FILE ('-': stdout), for 'tunedb import'");
  export_cmd->add_flag("--with-trials", options.with_trials, "--portable: sessions and trials too");
  CLI::App* merge_cmd = app.add_subcommand(
      "merge",
      "merge [DEST] SRC: bring SRC's devices, sessions, trials and faster bests into DEST "
      "(default: --db); SRC is only read; idempotent");
  merge_cmd->add_option("DEST_SRC", options.merge_paths, "[DEST] SRC")->required()->expected(1, 2);
  CLI::App* import_cmd =
      app.add_subcommand("import", "import FILE: merge a portable file into the database");
  import_cmd->add_option("FILE", options.import_path, "portable file (tunedb export --portable)")
      ->required();
  CLI::App* push_cmd = app.add_subcommand(
      "push",
      "push --store URL: send the database's devices, sessions, trials and bests to a PostgreSQL "
      "tuning store (faster best wins per GPU model and template; idempotent; the database is "
      "only read)");
  CLI::App* pull_cmd = app.add_subcommand(
      "pull",
      "pull --store URL: bring the store's bests for this machine's GPU models into the database "
      "as data (configs checked against this build; kernels compiled here, never taken)");
  for (CLI::App* command : {push_cmd, pull_cmd}) {
    command
        ->add_option("--store", options.store_url,
                     "libpq connection string or postgresql:// URI (password from ~/.pgpass "
                     "or PGPASSWORD)")
        ->required();
  }
  pull_cmd->add_option("--device-model", options.device_models,
                       "the GPU model to pull for (its name as nvidia-smi prints it; repeatable; "
                       "default: this machine's GPUs)");
  for (CLI::App* command : {export_cmd, merge_cmd, import_cmd}) {
    command->add_flag("--with-cubins", options.with_cubins,
                      "cubins too (compiled code: only from a source you trust); without it "
                      "kernels are compiled here from the configs");
  }
}

// "devices, best, ... or upgrade": the commands declared, in their order.
std::string command_names(const CLI::App& app) {
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  std::string names;
  for (size_t i = 0; i < commands.size(); ++i) {
    names += (i == 0 ? "" : i + 1 < commands.size() ? ", " : " or ") + commands[i]->get_name();
  }
  return names;
}

// A parse error as tunedb's one-line message (CLI11 would add the usage).
std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app) {
  std::string message = e.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (message.rfind("DEST_SRC", 0) == 0) message = "merge [DEST] SRC" + message.substr(8);
  if (app.get_subcommands().empty() && message == "A subcommand is required") {
    // A word where the command goes that is none of them: CLI11 kept it aside as an extra.
    const std::vector<std::string> extras = app.remaining();
    const auto word = std::find_if(extras.begin(), extras.end(),
                                   [](const std::string& a) { return a.empty() || a[0] != '-'; });
    message = word != extras.end() ? "unknown command '" + escape_text(*word) +
                                         "': the commands are " + command_names(app)
                                   : "a command is required: " + command_names(app);
  }
  return message;
}

// What the parsed command and options may not be together, or nothing.
std::optional<std::string> usage_problem(const Options& options) {
  const bool portable = options.command == "export" && !options.portable_path.empty();
  if (options.command == "export" && !portable && (options.with_cubins || options.with_trials)) {
    return std::string(options.with_cubins ? "--with-cubins" : "--with-trials") +
           " is for export --portable only";
  }
  if (options.command == "report" &&
      (!options.format.empty() || options.filter.limit > 0 || options.filter.session_id != 0)) {
    return "report shows whole devices: no --format, --limit or --session";
  }
  if (portable && (options.format != "json" || options.filter.limit > 0)) {
    return "export --portable takes no --format and no --limit";
  }
  if (options.format == "shipped" && options.command != "export") {
    return std::string("--format shipped is for export only");
  }
  const Filter& f = options.filter;
  if (options.command == "info" && (!f.op.empty() || !f.device_uuid.empty() || f.session_id != 0 ||
                                    f.limit > 0 || !options.format.empty() || options.wide)) {
    return std::string(
        "info describes the whole database: no --op, --device, --session, --limit, --format or "
        "--wide");
  }
  if ((options.command == "merge" || options.command == "import" || options.command == "push" ||
       options.command == "pull") &&
      (!f.op.empty() || !f.device_uuid.empty() || f.session_id != 0 || f.limit > 0 ||
       !options.format.empty())) {
    return options.command +
           " takes everything its source holds: no --op, --device, --session, --limit or --format";
  }
  if (options.command == "merge" && options.merge_paths.size() == 2 && !options.db_path.empty()) {
    return "merge: DEST is given twice (as --db and as the first path)";
  }
  return std::nullopt;
}

// "1.2 MiB (1234567 bytes)".
std::string size_text(uintmax_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? std::to_string(bytes) + " bytes"
                   : fixed(value, 1) + " " + units[unit] + " (" + std::to_string(bytes) + " bytes)";
}

// info: what the database is, where it is and what it holds. A reader like the listings: the
// file's bytes stay as they were.
int run_info(const Options& options) {
  Database db(options.db_path, tuned::cache::Access::kRead);
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(options.db_path, ec);
  std::cout << "database: "
            << escape_text(ec ? options.db_path : absolute.lexically_normal().string()) << " ("
            << escape_text(options.db_from) << ")\n";
  const int version = db.file_version(), ours = Database::schema_version();
  std::cout << "schema version: " << version
            << (version == ours  ? " (this build's)"
                : version < ours ? " (older than this build's " + std::to_string(ours) +
                                       ": tunedb upgrade migrates it)"
                                 : " (newer than this build's " + std::to_string(ours) +
                                       ": read where its columns allow)")
            << "\n";
  std::cout << "file size: " << size_text(std::filesystem::file_size(options.db_path)) << "\n";
  // A write-ahead log holds commits not yet checkpointed into the file.
  const std::uintmax_t wal = std::filesystem::file_size(options.db_path + "-wal", ec);
  if (!ec && wal > 0) std::cout << "write-ahead log: " << size_text(wal) << "\n";
  const auto counts = db.row_counts();
  Table({"table", "rows"}, {1})
      .print(
          std::cout,
          [&](const RowSink& row) {
            for (const auto& [table, rows] : counts) row({table, std::to_string(rows)});
          },
          "no tables");
  return 0;
}

int run_upgrade(const Options& options) {
  const int before = Database(options.db_path, tuned::cache::Access::kRead).file_version();
  Database db(options.db_path, tuned::cache::Access::kWrite);  // a writer migrates
  std::cout << (before < Database::schema_version() ? "upgraded" : "already at") << " '"
            << escape_text(options.db_path) << "': schema version " << before;
  if (before < Database::schema_version()) std::cout << " -> " << Database::schema_version();
  std::cout << "\n";
  return 0;
}

int run_report(Database& db, const Options& options) {
  tuned::report::Scope scope;
  scope.filter = options.filter;
  try {
    const auto written =
        tuned::report::write_report(db, scope, options.report_path, "tuned: tuning report");
    if (options.report_path != "-") {
      std::cout << tuned::report::describe(written, options.report_path) << "\n";
    }
  } catch (const tuned::Error& e) {
    std::cerr << "tunedb: report --out " << escape_text(e.what()) << "\n";
    return tuned::tools::kExitFailure;
  }
  return 0;
}

// The listings and exports: they only read.
int run_reader(Options& options) {
  Database db(options.db_path, tuned::cache::Access::kRead);
  options.filter.device_uuid = resolve_device(db, options.filter.device_uuid);
  if (options.command == "report") return run_report(db, options);
  if (options.command == "export" && !options.portable_path.empty()) {
    const int rc = run_export_portable(db, options);
    if (rc != 0) return rc;
  } else if (options.command == "export") {
    run_export(db, options);
  } else if (!options.format.empty()) {
    run_listing_as(db, options);
  } else if (options.command == "devices") {
    print_devices(db);
  } else if (options.command == "best") {
    print_best(db, options.filter, options.wide);
  } else if (options.command == "trials") {
    print_trials(db, options.filter, options.wide);
  } else {
    print_sessions(db, options.filter);
  }
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "tunedb: cannot write the output\n";
    return kExitFailure;
  }
  return 0;
}

// The parsed command on its database; errors as one line and exit code 1 (3: no CUDA device).
int run_command(Options& options) {
  std::error_code ec;
  // Database would create an empty file; a listing of nothing would hide a wrong path. (Merges
  // and imports write: they create their destination.)
  const bool writes =
      options.command == "merge" || options.command == "import" || options.command == "pull";
  if (!writes && !std::filesystem::exists(options.db_path, ec) && !ec) {
    std::cerr << "tunedb: no tuning database at '" << options.db_path
              << "' (run autotune first, or pass --db PATH or set TUNED_DB)\n";
    return kExitFailure;
  }
  try {
    if (options.command == "upgrade") return run_upgrade(options);
    if (options.command == "merge") {
      const std::string& src = options.merge_paths.back();
      if (!std::filesystem::exists(src, ec) && !ec) {
        std::cerr << "tunedb: merge: no database at '" << escape_text(src) << "'\n";
        return kExitFailure;
      }
      if (std::filesystem::equivalent(options.db_path, src, ec)) {
        std::cerr << "tunedb: merge: cannot merge a database into itself ('" << escape_text(src)
                  << "' is DEST too) (tunedb --help lists commands and options)\n";
        return kExitUsage;
      }
      return run_merge(options.db_path, src, options);
    }
    if (options.command == "import") {
      return run_import(options.db_path, options.import_path, options);
    }
    if (options.command == "info") return run_info(options);
    if (options.command == "push") return run_push(options);
    if (options.command == "pull") return run_pull(options);
    return run_reader(options);
  } catch (const tuned::Error& e) {
    std::cerr << "tunedb: " << escape_text(e.what()) << "\n";  // may quote the database's text
    return tuned::tools::exit_code_of(e);
  } catch (const std::exception& e) {
    std::cerr << "tunedb: " << escape_text(e.what()) << "\n";
    return kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Lists, exports, merges and imports the tuning database of tuned.", "tunedb"};
  tuned::tools::add_version_flag(app, "tunedb");  // checked before the command is required
  app.fallthrough();  // common options may follow the command: tunedb best --op gemm
  app.require_subcommand(1, 1);
  app.footer(tuned::tools::exit_codes_help() + "\n");
  declare_command_line(app, options);
  auto usage_error = [](const std::string& message) {
    std::cerr << "tunedb: " << message << " (tunedb --help lists commands and options)\n";
    return kExitUsage;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(parse_error_message(e, app));
  }
  options.command = app.get_subcommands().front()->get_name();
  if (!options.filter.op.empty() && tuned::find_op_info(options.filter.op) == nullptr) {
    std::string known;
    for (const auto& info : tuned::op_infos()) known += (known.empty() ? "" : ", ") + info.name;
    std::cerr << "tunedb: --op: unknown op '" << escape_text(options.filter.op)
              << "' (this build knows " << known << ")\n";
    return kExitUsage;
  }
  if (options.command == "export" && options.format.empty()) options.format = "json";
  if (std::optional<std::string> problem = usage_problem(options)) return usage_error(*problem);

  // A row this build cannot read is skipped with a warning: shown unless the user set a level.
  if (std::getenv("TUNED_LOG_LEVEL") == nullptr) tuned::set_log_level(tuned::LogLevel::kWarn);
  options.db_from = "--db";
  if (options.command == "merge" && options.merge_paths.size() == 2) {
    options.db_path = options.merge_paths.front();
    options.db_from = "merge DEST";
  }
  if (options.db_path.empty()) {
    options.db_path = tuned::cache::default_database_path();
    options.db_from = std::getenv("TUNED_DB") != nullptr && *std::getenv("TUNED_DB") != '\0'
                          ? "$TUNED_DB"
                          : "the default: no --db given, $TUNED_DB unset";
  }
  return run_command(options);
}
