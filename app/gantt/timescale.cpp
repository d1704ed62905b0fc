#include "gantt/timescale.h"

#include <algorithm>
#include <cmath>

namespace partex::gui {

void TimeScale::zoomAbout(double x, double factor) {
  if (!(factor > 0) || !std::isfinite(factor)) return;
  const double t = timeAt(x);
  usPerPixel = std::clamp(usPerPixel / factor, kMinUsPerPixel, kMaxUsPerPixel);
  originUs = t - x * usPerPixel;
}

void TimeScale::fit(double t0, double t1, double widthPx) {
  if (!std::isfinite(t0) || !std::isfinite(t1)) t0 = t1 = 0;
  if (t1 < t0) std::swap(t0, t1);
  double span = t1 - t0;
  if (span <= 0) span = 1;
  const double w = std::max(1.0, widthPx);
  usPerPixel = std::clamp(span / w, kMinUsPerPixel, kMaxUsPerPixel);
  originUs = t0;
}

double TimeScale::niceStep(double minUs) {
  if (!(minUs > 0) || !std::isfinite(minUs)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(minUs)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    // A relative tolerance keeps exact decades (1000 -> 1000, not 2000) despite rounding in pow.
    if (m * p >= minUs * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

std::vector<TimeTick> TimeScale::ticks(double widthPx, double minSpacingPx) const {
  std::vector<TimeTick> out;
  if (!(widthPx > 0)) return out;
  const double step = niceStep(usPerPixel * std::max(1.0, minSpacingPx));
  const double first = std::ceil(originUs / step - 1e-9);
  const double end = timeAt(widthPx);
  // Integer multiples of the step: no accumulated rounding, and "0" is exactly 0.
  for (double k = first; k * step <= end && out.size() < 10000; k += 1) {
    const double t = k * step;
    out.push_back({t, formatTick(t, step)});
  }
  return out;
}

namespace {

/// Unit divisor in microseconds for a unit name.
double unitUs(const QString& unit) {
  if (unit == QLatin1String("ns")) return 1e-3;
  if (unit == QLatin1String("ms")) return 1e3;
  if (unit == QLatin1String("s")) return 1e6;
  return 1;
}

}  // namespace

QString TimeScale::unitFor(double stepUs) {
  const double a = std::fabs(stepUs);
  if (a < 1) return QStringLiteral("ns");
  if (a < 1e3) return QStringLiteral("us");
  if (a < 1e6) return QStringLiteral("ms");
  return QStringLiteral("s");
}

QString TimeScale::formatTick(double us, double stepUs) {
  const QString unit = unitFor(stepUs);
  const double div = unitUs(unit);
  const double stepInUnit = std::fabs(stepUs) / div;
  int decimals = stepInUnit > 0 ? static_cast<int>(std::ceil(-std::log10(stepInUnit) - 1e-9)) : 0;
  decimals = std::clamp(decimals, 0, 9);
  double v = us / div;
  if (std::fabs(v) < stepInUnit * 1e-6) v = 0;  // no "-0"
  return QString::number(v, 'f', decimals) + QLatin1Char(' ') + unit;
}

QString TimeScale::formatDuration(double us) {
  if (!std::isfinite(us)) return QStringLiteral("-");
  const double a = std::fabs(us);
  if (a < 1) return QString::number(us * 1e3, 'f', 0) + QStringLiteral(" ns");
  if (a < 1e3) return QString::number(us, 'f', 3) + QStringLiteral(" us");
  if (a < 1e6) return QString::number(us / 1e3, 'f', 3) + QStringLiteral(" ms");
  return QString::number(us / 1e6, 'f', 3) + QStringLiteral(" s");
}

}  // namespace partex::gui
