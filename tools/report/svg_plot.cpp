#include "tools/report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tuned::report {
namespace {

constexpr int kLeft = 62, kRight = 14, kTop = 12, kBottom = 44;  // room for ticks and labels

std::string fixed(double v, int decimals = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string short_number(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : "-";
  const double magnitude = std::fabs(value);
  char text[64];
  if (magnitude >= 1e-3 && magnitude < 1e7) {
    const int decimals =
        std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(magnitude))));
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
  } else {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  }
  return text;
}

const char* series_colour(size_t i) {
  static const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

void Axis::take(double v) {
  if (!std::isfinite(v) || (log && v <= 0)) return;
  if (lo == 0 && hi == 0) {
    lo = hi = v;
  } else {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
}

void Axis::pad(double share) {
  if (lo == 0 && hi == 0) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  if (log) {
    const double factor = std::pow(hi / lo, share) * (hi == lo ? 2 : 1);
    lo /= factor;
    hi *= factor;
  } else {
    const double span = hi > lo ? hi - lo : std::max(1.0, std::fabs(hi));
    lo -= span * share;
    hi += span * share;
  }
}

Plot::Plot(int width, int height, Axis x, Axis y)
    : width_(width), height_(height), x_(std::move(x)), y_(std::move(y)) {}

double Plot::px(double x) const {
  const double t =
      x_.log ? std::log(x / x_.lo) / std::log(x_.hi / x_.lo) : (x - x_.lo) / (x_.hi - x_.lo);
  return kLeft + t * (width_ - kLeft - kRight);
}

double Plot::py(double y) const {
  const double t =
      y_.log ? std::log(y / y_.lo) / std::log(y_.hi / y_.lo) : (y - y_.lo) / (y_.hi - y_.lo);
  return height_ - kBottom - t * (height_ - kTop - kBottom);
}

void Plot::line(const std::vector<std::pair<double, double>>& points, const std::string& colour,
                const std::string& title, bool steps, bool dashed, double width) {
  std::string path;
  double last_y = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [x, y] = points[i];
    if ((x_.log && x <= 0) || (y_.log && y <= 0)) continue;
    if (!path.empty() && steps) path += " L" + fixed(px(x)) + "," + fixed(py(last_y));
    path += (path.empty() ? "M" : " L") + fixed(px(x)) + "," + fixed(py(y));
    last_y = y;
  }
  if (path.empty()) return;
  body_ += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" +
           fixed(width) + "\"" + (dashed ? " stroke-dasharray=\"6 4\"" : "") + "><title>" +
           escape_xml(title) + "</title></path>\n";
}

void Plot::point(double x, double y, const std::string& colour, const std::string& title,
                 bool hollow, double radius) {
  if ((x_.log && x <= 0) || (y_.log && y <= 0) || !std::isfinite(x) || !std::isfinite(y)) return;
  body_ += "<circle cx=\"" + fixed(px(x)) + "\" cy=\"" + fixed(py(y)) + "\" r=\"" + fixed(radius) +
           "\" " +
           (hollow ? "fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.3\""
                   : "fill=\"" + colour + "\" fill-opacity=\"0.8\"") +
           "><title>" + escape_xml(title) + "</title></circle>\n";
}

void Plot::label(double x, double y, const std::string& text, const std::string& colour) {
  if ((x_.log && x <= 0) || (y_.log && y <= 0)) return;
  body_ += "<text x=\"" + fixed(px(x) + 3) + "\" y=\"" + fixed(py(y) - 4) + "\" fill=\"" + colour +
           "\" font-size=\"11\">" + escape_xml(text) + "</text>\n";
}

void Plot::legend(const std::string& text, const std::string& colour, bool hollow) {
  legend_.push_back({text, {colour, hollow}});
}

// Gridlines and tick labels: decades (with 2 and 5 between where few) on a log axis, about six
// round steps on a linear one.
std::string Plot::ticks() const {
  std::string out;
  auto values = [](const Axis& a) {
    std::vector<double> v;
    if (a.log) {
      const int first = static_cast<int>(std::floor(std::log10(a.lo)));
      const int last = static_cast<int>(std::ceil(std::log10(a.hi)));
      const bool fine = last - first <= 2;
      for (int e = first; e <= last; ++e) {
        for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
          const double t = m * std::pow(10.0, e);
          if (t >= a.lo && t <= a.hi) v.push_back(t);
        }
      }
    } else {
      const double raw = (a.hi - a.lo) / 6;
      const double step0 = std::pow(10.0, std::floor(std::log10(raw)));
      const double step = raw / step0 >= 5 ? 5 * step0 : raw / step0 >= 2 ? 2 * step0 : step0;
      for (double t = std::ceil(a.lo / step) * step; t <= a.hi; t += step) v.push_back(t);
    }
    return v;
  };
  const int x0 = kLeft, x1 = width_ - kRight, y0 = kTop, y1 = height_ - kBottom;
  for (double t : values(x_)) {
    const std::string x = fixed(px(t));
    out += "<line x1=\"" + x + "\" y1=\"" + std::to_string(y0) + "\" x2=\"" + x + "\" y2=\"" +
           std::to_string(y1) + "\" class=\"grid\"/>\n<text x=\"" + x + "\" y=\"" +
           std::to_string(y1 + 14) + "\" text-anchor=\"middle\" class=\"tick\">" +
           short_number(t, 2) + "</text>\n";
  }
  for (double t : values(y_)) {
    const std::string y = fixed(py(t));
    out += "<line x1=\"" + std::to_string(x0) + "\" y1=\"" + y + "\" x2=\"" + std::to_string(x1) +
           "\" y2=\"" + y + "\" class=\"grid\"/>\n<text x=\"" + std::to_string(x0 - 4) + "\" y=\"" +
           y + "\" text-anchor=\"end\" dominant-baseline=\"middle\" class=\"tick\">" +
           short_number(t, 2) + "</text>\n";
  }
  out += "<rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) + "\" width=\"" +
         std::to_string(x1 - x0) + "\" height=\"" + std::to_string(y1 - y0) +
         "\" class=\"frame\"/>\n";
  out += "<text x=\"" + std::to_string((x0 + x1) / 2) + "\" y=\"" + std::to_string(height_ - 8) +
         "\" text-anchor=\"middle\" class=\"axis\">" + escape_xml(x_.label) + "</text>\n";
  out += "<text transform=\"translate(14 " + std::to_string((y0 + y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" class=\"axis\">" + escape_xml(y_.label) +
         "</text>\n";
  return out;
}

std::string Plot::svg() const {
  static int next_id = 0;  // clip paths need ids unique within the page
  const std::string clip = "clip" + std::to_string(next_id++);
  // The legend under the chart, its entries in rows as wide as the chart (text ~6.3 px a
  // character at 11 px).
  std::string legend;
  int x = kLeft, y = height_ + 12;
  for (const auto& [text, style] : legend_) {
    const int width = 22 + static_cast<int>(6.3 * static_cast<double>(text.size()));
    if (x > kLeft && x + width > width_) {
      x = kLeft;
      y += 16;
    }
    legend += "<circle cx=\"" + std::to_string(x + 5) + "\" cy=\"" + std::to_string(y - 4) +
              "\" r=\"4\" " +
              (style.second ? "fill=\"white\" stroke=\"" + style.first + "\""
                            : "fill=\"" + style.first + "\"") +
              "/><text x=\"" + std::to_string(x + 13) + "\" y=\"" + std::to_string(y) +
              "\" class=\"legend\">" + escape_xml(text) + "</text>\n";
    x += width;
  }
  const int total = legend_.empty() ? height_ : y + 8;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width_) +
                    "\" height=\"" + std::to_string(total) + "\" viewBox=\"0 0 " +
                    std::to_string(width_) + " " + std::to_string(total) + "\">\n";
  out += "<clipPath id=\"" + clip + "\"><rect x=\"" + std::to_string(kLeft) + "\" y=\"" +
         std::to_string(kTop) + "\" width=\"" + std::to_string(width_ - kLeft - kRight) +
         "\" height=\"" + std::to_string(height_ - kTop - kBottom) + "\"/></clipPath>\n";
  out += ticks();
  out += "<g clip-path=\"url(#" + clip + ")\">\n" + body_ + "</g>\n" + legend;
  return out + "</svg>\n";
}

}  // namespace tuned::report
