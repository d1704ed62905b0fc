#pragma once
/// \file A small SVG writer for the sweep report's plots (core links no Qt, so the Qt renderer of
/// app/render is not used): shapes, text, axes with linear or logarithmic scales and "nice" ticks.

#include <string>
#include <vector>

namespace partex::svg {

/// A linear or base-10 logarithmic mapping from data to pixels.
struct Scale {
  double lo = 0, hi = 1;          ///< Data range.
  double pixLo = 0, pixHi = 100;  ///< Pixel range (pixHi < pixLo for a y axis pointing up).
  bool log = false;
  double operator()(double v) const;
  /// Tick values within [lo, hi]: 1-2-5 steps (linear), powers of ten with 2 and 5 between when few (log).
  std::vector<double> ticks() const;
};
/// A data range widened to round numbers (linear) or to powers of ten (log); never empty.
Scale niceScale(double lo, double hi, bool log);
/// "0.5", "12", "1.2k", "3e+06": short tick labels.
std::string tickLabel(double v);

/// Series i is drawn in colour i % 10 (Tableau 10), with the dash pattern and marker shape of i / 10,
/// so that 30 series stay apart: solid lines and circles, then dashed and squares, then dotted and
/// triangles.
std::string seriesColor(size_t i);
std::string seriesDash(size_t i);
enum class Marker { Circle, Square, Triangle };
Marker seriesMarker(size_t i);

class Canvas {
 public:
  Canvas(double width, double height) : w_(width), h_(height) {}
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& dash = "");
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke = "none",
            double strokeWidth = 1);
  void circle(double cx, double cy, double r, const std::string& fill, double opacity = 1);
  void marker(Marker m, double cx, double cy, double r, const std::string& fill, double opacity = 1);
  /// A line through the points with a marker at each.
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width = 1.5,
                const std::string& dash = "", Marker m = Marker::Circle);
  /// anchor: "start", "middle", "end"; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 12, const std::string& anchor = "start",
            double rotate = 0, const std::string& weight = "normal", const std::string& fill = "#222");
  /// Axes in the box [x0, x1] x [y0, y1] with ticks, grid lines and labels; either scale may be null.
  void axes(const Scale* x, const Scale* y, double x0, double y0, double x1, double y1, const std::string& xLabel,
            const std::string& yLabel);
  std::string str() const;

 private:
  double w_, h_;
  std::string body_;
};

/// Escapes &, <, >, " for SVG text and attributes.
std::string escape(const std::string& s);

}  // namespace partex::svg
