// A small SVG chart for the tuning report: two axes (linear or log), grid, lines, points with
// hover titles and a legend, written as one inline <svg> element (the report needs no script or
// network to draw).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tuned::report {

/// Text safe inside XML/HTML content and attributes.
std::string escape_xml(const std::string& text);
/// value with `digits` significant digits, without a trailing exponent for everyday sizes.
std::string short_number(double value, int digits = 3);
/// The colour of series i (a fixed palette, repeated).
const char* series_colour(size_t i);

struct Axis {
  std::string label;
  bool log = true;
  double lo = 0, hi = 0;  // set by fit() or by hand; a log axis needs lo > 0
  /// Widens [lo, hi] to take v (positive values only on a log axis).
  void take(double v);
  /// A margin around the values taken (log: a factor, linear: a share of the span).
  void pad(double share);
};

class Plot {
 public:
  Plot(int width, int height, Axis x, Axis y);

  void line(const std::vector<std::pair<double, double>>& points, const std::string& colour,
            const std::string& title, bool steps = false, bool dashed = false, double width = 1.6);
  void point(double x, double y, const std::string& colour, const std::string& title,
             bool hollow = false, double radius = 3.5);
  /// A label in data coordinates (left-aligned, just above the point).
  void label(double x, double y, const std::string& text, const std::string& colour);
  void legend(const std::string& text, const std::string& colour, bool hollow = false);

  std::string svg() const;

 private:
  double px(double x) const;
  double py(double y) const;
  std::string ticks() const;

  int width_, height_;
  Axis x_, y_;
  std::string body_;
  std::vector<std::pair<std::string, std::pair<std::string, bool>>> legend_;
};

}  // namespace tuned::report
