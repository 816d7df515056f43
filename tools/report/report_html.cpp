#include "tools/report/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "tools/report/svg_plot.hpp"

namespace tuned::report {
namespace {

const char* const kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 4px; }
h3 { font-size: 14px; margin: 10px 0 2px; color: #444; }
.muted { color: #666; } .bad { color: #b00; }
.views { display: flex; flex-wrap: wrap; gap: 14px; }
.view { background: white; border: 1px solid #ddd; border-radius: 6px; padding: 6px 8px; }
svg .grid { stroke: #eee; } svg .frame { fill: none; stroke: #999; }
svg .tick { font-size: 10px; fill: #555; } svg .axis { font-size: 12px; fill: #333; }
svg .legend { font-size: 11px; fill: #333; }
table { border-collapse: collapse; background: white; margin-top: 6px; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; white-space: nowrap; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[data-dir=asc]::after { content: " \25B2"; } th[data-dir=desc]::after { content: " \25BC"; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.config { font-family: ui-monospace, monospace; max-width: 34em; overflow: hidden;
            text-overflow: ellipsis; }
.figures span { margin-right: 18px; }
)css";

// Sorts a table by the clicked column: by each cell's data-v where it has one, numbers as
// numbers.
const char* const kScript = R"js(
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var ascending = th.dataset.dir !== "asc";
      table.querySelectorAll("th").forEach(function (other) { delete other.dataset.dir; });
      th.dataset.dir = ascending ? "asc" : "desc";
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column];
        return cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
        var order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
)js";

std::string cell(const std::string& text, const std::string& cls = "", const std::string& v = "",
                 const std::string& hover = "") {
  std::string out = "<td";
  if (!cls.empty()) out += " class=\"" + cls + "\"";
  if (!v.empty()) out += " data-v=\"" + escape_xml(v) + "\"";
  if (!hover.empty()) out += " title=\"" + escape_xml(hover) + "\"";
  return out + ">" + escape_xml(text) + "</td>";
}

std::string number_cell(double value, int digits = 3) {
  return value > 0 ? cell(short_number(value, digits), "n", short_number(value, 9))
                   : cell("-", "n", "-1");
}

std::string heading_row(const std::vector<std::string>& names) {
  std::string out = "<thead><tr>";
  for (const auto& name : names) out += "<th>" + escape_xml(name) + "</th>";
  return out + "</tr></thead>";
}

// What the device's roofline allows a problem of this work: the memory roof up to the highest
// compute ceiling (split TF32's three passes can pass the FP32 peak), or the bandwidth alone.
double attainable(const BestRow& row, const Ceilings& c) {
  if (row.rate_unit == "GB/s") return c.bandwidth_gbps;
  const double compute = std::max(c.fp32_tflops, c.tf32_tflops / 3);
  if (c.bandwidth_gbps <= 0 || row.bytes <= 0) return compute;
  return std::min(compute, c.bandwidth_gbps * (row.flops / row.bytes) / 1e3);
}

// "gemm: math: FFMA", or the op's name where it has one kind of kernel: what colours a point.
std::string family_name(const BestRow& row) {
  return row.op + (row.family.empty() ? "" : ": " + row.family);
}

// One colour per family of the device's bests, the same in every chart.
std::map<std::string, std::string> family_colours(const std::vector<BestRow>& rows) {
  std::map<std::string, std::string> colours;
  for (const auto& row : rows) {
    if (!colours.count(family_name(row))) colours[family_name(row)] = series_colour(colours.size());
  }
  return colours;
}

std::string point_title(const BestRow& row) {
  std::string t = row.op + " " + row.variant + " " + row.shape + ": " + short_number(row.rate) +
                  " " + row.rate_unit;
  if (row.baseline_rate > 0) t += " (baseline " + short_number(row.baseline_rate) + ")";
  return t + "\n" + (row.family.empty() ? "" : row.family + "\n") + row.config;
}

// Achieved rate against arithmetic intensity (flop per byte) with the device's ceilings, for the
// ops that count flops; achieved bandwidth against bytes moved for those that count bytes.
std::string roofline(const DeviceSection& section, bool flops,
                     const std::map<std::string, std::string>& colours) {
  Axis x{flops ? "arithmetic intensity (flop/byte)" : "bytes moved per call (MB)", true};
  Axis y{flops ? "TFLOP/s" : "GB/s", true};
  std::vector<const BestRow*> rows;
  for (const auto& row : section.bests) {
    if ((row.rate_unit == "TFLOP/s") != flops || row.bytes <= 0) continue;
    rows.push_back(&row);
    x.take(flops ? row.flops / row.bytes : row.bytes / 1e6);
    y.take(row.rate);
    y.take(row.baseline_rate);
  }
  if (rows.empty()) return "";
  const Ceilings& c = section.ceilings;
  if (flops) {
    y.take(c.fp32_tflops * 1.3);
    if (c.tf32_tflops > 0) y.take(c.tf32_tflops / 3 * 1.3);
  } else {
    y.take(c.bandwidth_gbps * 1.3);
  }
  x.pad(0.08);
  y.pad(0.06);
  Plot plot(440, 290, x, y);
  if (flops) {
    // Each compute ceiling, under the memory roof where the bandwidth is known.
    auto roof = [&](double peak, const std::string& name, bool dashed) {
      if (peak <= 0) return;
      std::vector<std::pair<double, double>> points;
      if (c.bandwidth_gbps > 0) {
        const double ridge = peak * 1e3 / c.bandwidth_gbps;
        points = {{x.lo, c.bandwidth_gbps * x.lo / 1e3}, {ridge, peak}, {x.hi, peak}};
      } else {
        points = {{x.lo, peak}, {x.hi, peak}};
      }
      plot.line(points, "#555", name + ": " + short_number(peak) + " TFLOP/s", false, dashed, 1.2);
      plot.label(x.lo * 1.05, peak, name + " " + short_number(peak), "#555");
    };
    roof(c.fp32_tflops, "FP32 peak", false);
    if (c.tf32_tflops > 0) roof(c.tf32_tflops / 3, "TF32 tensor / 3", true);
  } else if (c.bandwidth_gbps > 0) {
    plot.line(
        {{x.lo, c.bandwidth_gbps}, {x.hi, c.bandwidth_gbps}}, "#555",
        "memory bandwidth " + short_number(c.bandwidth_gbps) + " GB/s (" + c.bandwidth_source + ")",
        false, false, 1.2);
    plot.label(x.lo * 1.05, c.bandwidth_gbps, "memory " + short_number(c.bandwidth_gbps), "#555");
  }
  std::set<std::string> named;
  for (const BestRow* row : rows) {
    const double at = flops ? row->flops / row->bytes : row->bytes / 1e6;
    const std::string& colour = colours.at(family_name(*row));
    if (row->baseline_rate > 0) {
      plot.point(at, row->baseline_rate, "#888", "baseline: " + point_title(*row), true, 3);
    }
    plot.point(at, row->rate, colour, point_title(*row));
    if (named.insert(family_name(*row)).second) plot.legend(family_name(*row), colour);
  }
  plot.legend("baseline (cuBLAS or the op's own)", "#888", true);
  return "<div class=\"view\"><h3>Roofline: " +
         std::string(flops ? "ops counting flops" : "ops counting bytes") + "</h3>" + plot.svg() +
         "</div>";
}

// Which kernel family wins where: each best at its first two dimensions, sized by the third.
std::string family_map(const DeviceSection& section, const std::string& op,
                       const std::vector<std::string>& dims,
                       const std::map<std::string, std::string>& colours) {
  std::vector<const BestRow*> rows;
  for (const auto& row : section.bests) {
    if (row.op == op && row.dims.size() >= 2) rows.push_back(&row);
  }
  std::set<std::string> families;
  for (const BestRow* row : rows) families.insert(row->family);
  if (families.size() < 2) return "";  // one kind of kernel wins everywhere: nothing to map
  auto dim = [&](size_t i) {
    return i < dims.size() ? dims[i] : "dimension " + std::to_string(i + 1);
  };
  Axis x{dim(0), true}, y{dim(1), true};
  for (const BestRow* row : rows) {
    x.take(static_cast<double>(std::max<int64_t>(row->dims[0], 1)));
    y.take(static_cast<double>(std::max<int64_t>(row->dims[1], 1)));
  }
  x.pad(0.06);
  y.pad(0.06);
  Plot plot(440, 290, x, y);
  std::set<std::string> named;
  for (const BestRow* row : rows) {
    const double third = row->dims.size() >= 3 ? static_cast<double>(row->dims[2]) : 1.0;
    const std::string& colour = colours.at(family_name(*row));
    plot.point(static_cast<double>(std::max<int64_t>(row->dims[0], 1)),
               static_cast<double>(std::max<int64_t>(row->dims[1], 1)), colour, point_title(*row),
               false, 2.5 + 1.4 * std::log10(std::max(1.0, third)));
    if (named.insert(family_name(*row)).second) plot.legend(family_name(*row), colour);
  }
  return "<div class=\"view\"><h3>Which family wins where: " + escape_xml(op) +
         (dims.size() >= 3 ? " (size: " + escape_xml(dims[2]) + ")" : std::string()) + "</h3>" +
         plot.svg() + "</div>";
}

// Best-so-far over the final best, against trials and against seconds, one line per problem
// and session.
std::string tuning_curves(const DeviceSection& section) {
  if (section.curves.empty()) return "";
  Axis by_trial{"trials", true}, by_seconds{"seconds since the session's first trial", false};
  Axis y{"best so far / final best", true};
  for (const auto& curve : section.curves) {
    for (const auto& [t, ms] : curve.by_trial) {
      by_trial.take(t);
      y.take(ms / curve.final_ms);
    }
    for (const auto& [s, ms] : curve.by_seconds) by_seconds.take(s);
  }
  y.take(1.0);
  y.hi = std::min(y.hi, 100.0);
  by_trial.pad(0.03);
  by_seconds.pad(0.03);
  by_seconds.lo = std::max(0.0, by_seconds.lo);
  y.pad(0.04);
  Plot trials(440, 290, by_trial, y), seconds(440, 290, by_seconds, y);
  size_t i = 0;
  for (const auto& curve : section.curves) {
    std::vector<std::pair<double, double>> a, b;
    for (const auto& [t, ms] : curve.by_trial) a.emplace_back(t, ms / curve.final_ms);
    for (const auto& [s, ms] : curve.by_seconds) b.emplace_back(s, ms / curve.final_ms);
    const std::string title = "session " + std::to_string(curve.session_id) + ": " + curve.problem +
                              " (" + std::to_string(curve.trials) + " trials, best " +
                              short_number(curve.final_ms) + " ms)";
    trials.line(a, series_colour(i), title, true);
    seconds.line(b, series_colour(i), title, true);
    ++i;
  }
  std::string out = "<div class=\"view\"><h3>Tuning curves (" +
                    std::to_string(section.curves.size()) + " problems of the most trials)</h3>" +
                    trials.svg() + "</div>";
  // (The database keeps whole seconds: a run of a second or two has no curve in time.)
  if (by_seconds.hi > 3) {
    out += "<div class=\"view\"><h3>... against time</h3>" + seconds.svg() + "</div>";
  }
  return out;
}

// Per op: time-weighted ratio over the rows with a baseline, their geometric mean and the worst.
std::string figures(const DeviceSection& section) {
  std::map<std::string, std::vector<const BestRow*>> by_op;
  for (const auto& row : section.bests) by_op[row.op].push_back(&row);
  std::string out = "<p class=\"figures\">";
  for (const auto& [op, rows] : by_op) {
    double baseline = 0, tuned = 0, log_sum = 0;
    int measured = 0;
    const BestRow* worst = nullptr;
    for (const BestRow* row : rows) {
      if (row->baseline_ms <= 0) continue;
      baseline += row->baseline_ms;
      tuned += row->ms;
      log_sum += std::log(row->baseline_ms / row->ms);
      ++measured;
      if (worst == nullptr || row->baseline_ms / row->ms < worst->baseline_ms / worst->ms) {
        worst = row;
      }
    }
    out += "<span><b>" + escape_xml(op) + "</b>: " + std::to_string(rows.size()) + " problems";
    if (measured > 0) {
      out += ", against its baseline time-weighted <b>" + short_number(baseline / tuned) +
             "x</b>, geometric mean " + short_number(std::exp(log_sum / measured)) + "x, worst " +
             short_number(worst->baseline_ms / worst->ms) + "x (" +
             escape_xml(worst->variant + " " + worst->shape) + ")";
    }
    out += "</span>";
  }
  return out + "</p>";
}

std::string best_table(const DeviceSection& section) {
  std::string out = "<table class=\"sortable bests\">" +
                    heading_row({"op", "variant", "shape", "family", "config", "ms", "baseline ms",
                                 "ratio", "rate", "unit", "of roof", "origin", "template"}) +
                    "<tbody>";
  for (const auto& row : section.bests) {
    double size = 1;
    for (int64_t d : row.dims) size *= static_cast<double>(std::max<int64_t>(d, 1));
    const double roof = attainable(row, section.ceilings);
    out +=
        "<tr>" + cell(row.op) + cell(row.variant) + cell(row.shape, "", short_number(size, 12)) +
        cell(row.family) + cell(row.short_config, "config", "", row.config) +
        number_cell(row.ms, 4) + number_cell(row.baseline_ms, 4) +
        number_cell(row.baseline_ms > 0 ? row.baseline_ms / row.ms : 0) + number_cell(row.rate, 4) +
        cell(row.rate_unit) +
        (roof > 0 ? cell(short_number(100 * row.rate / roof, 3) + " %", "n",
                         short_number(row.rate / roof, 6))
                  : cell("-", "n", "-1")) +
        cell(row.origin + (row.source.empty() ? "" : " from " + row.source)) +
        (row.current_template
             ? cell("current")
             : cell("stale", "bad", "",
                    "measured on template " + row.template_hash + ": never served by this build")) +
        "</tr>\n";
  }
  return out + "</tbody></table>";
}

std::string device_section(const Report& report, const DeviceSection& section) {
  const auto& d = section.device;
  const auto& c = section.ceilings;
  std::string out = "<section><h2>" + escape_xml(d.name) + "</h2><p class=\"muted\">" +
                    escape_xml(d.uuid) + " · sm_" + std::to_string(d.cc_major) +
                    std::to_string(d.cc_minor) + " · " + std::to_string(d.sm_count) + " SMs · " +
                    short_number(d.clock_khz / 1e3, 4) + " MHz · ceilings at that clock: FP32 " +
                    short_number(c.fp32_tflops) + " TFLOP/s";
  if (c.tf32_tflops > 0) out += ", TF32 tensor " + short_number(c.tf32_tflops) + " TFLOP/s";
  out += c.bandwidth_gbps > 0
             ? ", memory " + short_number(c.bandwidth_gbps) + " GB/s (" + c.bandwidth_source + ")"
             : ", memory bandwidth unknown for this model";
  out += " · " + std::to_string(section.trials) + " trials (" + std::to_string(section.ok_trials) +
         " ok)</p>";
  out += figures(section);
  const auto colours = family_colours(section.bests);
  std::set<std::string> ops;
  for (const auto& row : section.bests) ops.insert(row.op);
  out += "<div class=\"views\">" + roofline(section, true, colours) +
         roofline(section, false, colours);
  for (const auto& op : ops) {
    const auto dims = report.op_dims.find(op);
    out += family_map(section, op,
                      dims == report.op_dims.end() ? std::vector<std::string>{} : dims->second,
                      colours);
  }
  out += tuning_curves(section) + "</div>";
  out += "<h3>Bests (click a column to sort; hover a config for all of it)</h3>" +
         best_table(section) + "</section>";
  return out;
}

std::string provenance(const Report& report) {
  std::string out = "<section><h2>Provenance</h2><p class=\"muted\">Database " +
                    escape_xml(report.database) + " · " + std::to_string(report.trials) +
                    " trials · " + std::to_string(report.sessions.size()) + " sessions";
  if (report.skipped_rows > 0) {
    out += " · <span class=\"bad\">" + std::to_string(report.skipped_rows) +
           " rows this build cannot read, left out</span>";
  }
  out += "</p><h3>Devices</h3><table class=\"sortable\">" +
         heading_row({"uuid", "name", "arch", "SMs", "clock MHz", "memory GB"}) + "<tbody>";
  for (const auto& section : report.devices) {
    const auto& d = section.device;
    out += "<tr>" + cell(d.uuid) + cell(d.name) +
           cell("sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor)) +
           number_cell(d.sm_count, 6) + number_cell(d.clock_khz / 1e3, 6) +
           number_cell(static_cast<double>(d.memory_bytes) / 1e9, 4) + "</tr>";
  }
  out += "</tbody></table><h3>Template sources of the bests</h3><table class=\"sortable\">" +
         heading_row({"op", "template hash", "bests", "this build's"}) + "<tbody>";
  for (const auto& t : report.templates) {
    out += "<tr>" + cell(t.op) + cell(t.hash.empty() ? "(not recorded)" : t.hash) +
           number_cell(static_cast<double>(t.bests), 9) +
           (t.current ? cell("yes") : cell("no: never served", "bad")) + "</tr>";
  }
  out += "</tbody></table><h3>Where the bests came from</h3><table class=\"sortable\">" +
         heading_row({"source", "bests"}) + "<tbody>";
  for (const auto& [source, count] : report.sources) {
    out += "<tr>" + cell(source.empty() ? "measured in this database" : "merged from " + source) +
           number_cell(static_cast<double>(count), 9) + "</tr>";
  }
  for (const auto& [origin, count] : report.origins) {
    out +=
        "<tr>" + cell("origin: " + origin) + number_cell(static_cast<double>(count), 9) + "</tr>";
  }
  // The latest sessions (a long-lived database holds thousands).
  constexpr size_t kSessions = 200;
  out += "</tbody></table><h3>Sessions" +
         std::string(report.sessions.size() > kSessions ? " (the latest 200)" : "") +
         "</h3><table class=\"sortable\">" +
         heading_row(
             {"id", "device", "op", "strategy", "budget s", "started", "trials", "ok", "origin"}) +
         "<tbody>";
  const size_t first = report.sessions.size() > kSessions ? report.sessions.size() - kSessions : 0;
  for (size_t i = first; i < report.sessions.size(); ++i) {
    const auto& s = report.sessions[i];
    out += "<tr>" + number_cell(static_cast<double>(s.session.id), 12) +
           cell(s.session.device_uuid.substr(0, 12)) + cell(s.session.op) +
           cell(s.session.strategy) + number_cell(s.session.budget_s, 4) +
           cell(s.session.started_at) + number_cell(static_cast<double>(s.trials), 12) +
           number_cell(static_cast<double>(s.ok), 12) + cell(s.session.origin) + "</tr>";
  }
  return out + "</tbody></table></section>";
}

}  // namespace

std::string render_html(const Report& report, const std::string& title) {
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                    escape_xml(title) + "</title><style>" + kStyle + "</style></head><body>\n";
  out += "<h1>" + escape_xml(title) + "</h1><p class=\"muted\">" + escape_xml(report.database) +
         " · written " + when + "</p>\n";
  if (report.devices.empty()) out += "<p>No device in this database (or none matched).</p>";
  for (const auto& section : report.devices) out += device_section(report, section);
  out += provenance(report);
  out += "<script>" + std::string(kScript) + "</script></body></html>\n";
  return out;
}

}  // namespace tuned::report
