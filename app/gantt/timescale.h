#pragma once
/// \file Time <-> pixel maths of the Gantt chart, kept free of widgets so that it is tested on its
/// own (after hotspot's TimeLineData): an origin, a zoom level, zoom about a point, and axis ticks
/// on a 1-2-5 ladder labelled in ns, us, ms or s.

#include <QString>

#include <vector>

namespace partex::gui {

/// One axis tick: its time and label.
struct TimeTick {
  double us = 0;
  QString label;
};

/// A linear map between time in microseconds and pixels: x = (t - originUs) / usPerPixel.
struct TimeScale {
  double originUs = 0;    ///< Time at pixel 0.
  double usPerPixel = 1;  ///< Zoom level; always > 0.

  /// Finest and coarsest zoom: 1 ps per pixel up to 1,000 s per pixel.
  static constexpr double kMinUsPerPixel = 1e-6;
  static constexpr double kMaxUsPerPixel = 1e9;

  double xAt(double us) const { return (us - originUs) / usPerPixel; }
  double timeAt(double x) const { return originUs + x * usPerPixel; }

  /// Zooms by `factor` (> 1 zooms in) keeping the time under pixel `x` where it is.
  void zoomAbout(double x, double factor);
  /// Shows [t0, t1] in `widthPx` pixels (a degenerate span shows 1 us).
  void fit(double t0, double t1, double widthPx);

  /// The smallest 1-2-5 step (1, 2, 5, 10, 20, ... times a power of ten microseconds) that is at
  /// least `minUs`; for minUs <= 0 returns 1.
  static double niceStep(double minUs);
  /// Ticks for the pixel range [0, widthPx): multiples of the nice step covering at least
  /// `minSpacingPx` pixels, labelled in one unit chosen from the step.
  std::vector<TimeTick> ticks(double widthPx, double minSpacingPx = 80) const;
  /// The unit for a tick step: "ns" below 1 us, "us" below 1 ms, "ms" below 1 s, "s" otherwise.
  static QString unitFor(double stepUs);
  /// `us` in `unit` with as many decimals as `stepUs` needs (e.g. 1500 us, step 500 -> "1.5 ms").
  static QString formatTick(double us, double stepUs);
  /// A duration for people, three significant decimals in a fitting unit: "980 ns", "12.345 us",
  /// "1.234 ms", "2.500 s".
  static QString formatDuration(double us);
};

}  // namespace partex::gui
