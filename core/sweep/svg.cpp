#include "sweep/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace partex::svg {

namespace {

std::string f(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

double Scale::operator()(double v) const {
  double a = lo, b = hi, x = v;
  if (log) {
    a = std::log10(lo);
    b = std::log10(hi);
    x = std::log10(std::max(v, lo * 1e-3));
  }
  const double t = b > a ? (x - a) / (b - a) : 0.5;
  return pixLo + t * (pixHi - pixLo);
}

std::vector<double> Scale::ticks() const {
  std::vector<double> out;
  if (log) {
    const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9)),
              e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    const bool fine = e1 - e0 <= 2;
    for (int e = e0; e <= e1; ++e)
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
      }
    return out;
  }
  const double span = hi - lo;
  if (!(span > 0)) return {lo};
  const double raw = span / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

Scale niceScale(double lo, double hi, bool log) {
  Scale s;
  s.log = log;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = hi = 1;
  if (log) {
    lo = std::max(lo, 1e-12);
    hi = std::max(hi, lo);
    // Round outwards to 1, 2 or 5 times a power of ten.
    const double e0 = std::floor(std::log10(lo) + 1e-9), e1 = std::floor(std::log10(hi) - 1e-9);
    s.lo = std::pow(10.0, e0);
    for (double m : {2.0, 5.0})
      if (m * std::pow(10.0, e0) <= lo * (1 + 1e-9)) s.lo = m * std::pow(10.0, e0);
    s.hi = std::pow(10.0, e1 + 1);
    for (double m : {5.0, 2.0, 1.0})
      if (m * std::pow(10.0, e1) >= hi * (1 - 1e-9)) s.hi = m * std::pow(10.0, e1);
    if (s.hi <= s.lo) s.hi = s.lo * 10;
    return s;
  }
  if (hi <= lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double mag = std::pow(10.0, std::floor(std::log10(hi - lo)) - 1);
  s.lo = std::floor(lo / mag) * mag;
  s.hi = std::ceil(hi / mag) * mag;
  return s;
}

std::string tickLabel(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (a == 0)
    return "0";
  else if (a >= 1e6 || a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else if (a >= 1e4)
    std::snprintf(buf, sizeof buf, "%gk", v / 1000);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string seriesColor(size_t i) {
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColors[i % 10];
}

std::string seriesDash(size_t i) {
  switch ((i / 10) % 3) {
    case 0:
      return "";
    case 1:
      return "7 3";
    default:
      return "2 2";
  }
}

Marker seriesMarker(size_t i) {
  return static_cast<Marker>((i / 10) % 3);
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
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
      default:
        out += c;
    }
  }
  return out;
}

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                  const std::string& dash) {
  body_ += "<line x1=\"" + f(x1) + "\" y1=\"" + f(y1) + "\" x2=\"" + f(x2) + "\" y2=\"" + f(y2) + "\" stroke=\"" +
           stroke + "\" stroke-width=\"" + f(width) + "\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
}

void Canvas::rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke,
                  double strokeWidth) {
  body_ += "<rect x=\"" + f(x) + "\" y=\"" + f(y) + "\" width=\"" + f(std::max(0.0, w)) + "\" height=\"" +
           f(std::max(0.0, h)) + "\" fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"" + f(strokeWidth) +
           "\"/>\n";
}

void Canvas::circle(double cx, double cy, double r, const std::string& fill, double opacity) {
  body_ += "<circle cx=\"" + f(cx) + "\" cy=\"" + f(cy) + "\" r=\"" + f(r) + "\" fill=\"" + fill +
           "\" fill-opacity=\"" + f(opacity) + "\"/>\n";
}

void Canvas::marker(Marker m, double cx, double cy, double r, const std::string& fill, double opacity) {
  switch (m) {
    case Marker::Circle:
      circle(cx, cy, r, fill, opacity);
      return;
    case Marker::Square:
      body_ += "<rect x=\"" + f(cx - r * 0.9) + "\" y=\"" + f(cy - r * 0.9) + "\" width=\"" + f(1.8 * r) +
               "\" height=\"" + f(1.8 * r) + "\" fill=\"" + fill + "\" fill-opacity=\"" + f(opacity) + "\"/>\n";
      return;
    case Marker::Triangle:
      body_ += "<polygon points=\"" + f(cx) + "," + f(cy - 1.2 * r) + " " + f(cx - 1.1 * r) + "," + f(cy + 0.8 * r) +
               " " + f(cx + 1.1 * r) + "," + f(cy + 0.8 * r) + "\" fill=\"" + fill + "\" fill-opacity=\"" + f(opacity) +
               "\"/>\n";
      return;
  }
}

void Canvas::polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                      const std::string& dash, Marker m) {
  if (pts.empty()) return;
  std::string p;
  for (const auto& [x, y] : pts) p += f(x) + "," + f(y) + " ";
  body_ += "<polyline points=\"" + p + "\" fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"" + f(width) + "\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
  for (const auto& [x, y] : pts) marker(m, x, y, width + 1.5, stroke);
}

void Canvas::text(double x, double y, const std::string& s, double size, const std::string& anchor, double rotate,
                  const std::string& weight, const std::string& fill) {
  body_ += "<text x=\"" + f(x) + "\" y=\"" + f(y) + "\" font-size=\"" + f(size) + "\" text-anchor=\"" + anchor +
           "\" font-weight=\"" + weight + "\" fill=\"" + fill + "\"" +
           (rotate != 0 ? " transform=\"rotate(" + f(rotate) + " " + f(x) + " " + f(y) + ")\"" : "") + ">" + escape(s) +
           "</text>\n";
}

void Canvas::axes(const Scale* x, const Scale* y, double x0, double y0, double x1, double y1, const std::string& xLabel,
                  const std::string& yLabel) {
  rect(x0, y0, x1 - x0, y1 - y0, "#fff", "#888");
  if (x)
    for (double t : x->ticks()) {
      const double px = (*x)(t);
      line(px, y0, px, y1, "#e4e4e4");
      line(px, y1, px, y1 + 4, "#555");
      text(px, y1 + 16, tickLabel(t), 11, "middle");
    }
  if (y)
    for (double t : y->ticks()) {
      const double py = (*y)(t);
      line(x0, py, x1, py, "#e4e4e4");
      line(x0 - 4, py, x0, py, "#555");
      text(x0 - 6, py + 4, tickLabel(t), 11, "end");
    }
  rect(x0, y0, x1 - x0, y1 - y0, "none", "#888");
  if (!xLabel.empty()) text((x0 + x1) / 2, y1 + 34, xLabel, 12, "middle");
  if (!yLabel.empty()) text(x0 - 46, (y0 + y1) / 2, yLabel, 12, "middle", -90);
}

std::string Canvas::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(w_) +
         "\" height=\"" + f(h_) + "\" viewBox=\"0 0 " + f(w_) + " " + f(h_) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"#fff\"/>\n" +
         body_ + "</svg>\n";
}

}  // namespace partex::svg
