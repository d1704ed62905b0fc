#include "gantt/memorychart.h"

#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

#include "session/palette.h"

namespace partex::gui {

namespace {

constexpr int kLabelFontPx = 12;
constexpr int kTextFontPx = 11;
constexpr double kTextH = 15;  ///< The lane's text line, above its plot.
const QColor kOver(0xC0, 0x39, 0x2B);

QFont pixelFont(const QFont& base, int px, bool bold = false) {
  QFont f = base;
  f.setPixelSize(px);
  f.setBold(bold);
  return f;
}

}  // namespace

void MemoryChart::setMemory(std::vector<partex::DeviceMemory> memory, std::vector<QString> labels,
                            std::vector<QColor> colors) {
  mem_ = std::move(memory);
  labels_ = std::move(labels);
  colors_ = std::move(colors);
}

bool MemoryChart::anyOver() const {
  return std::any_of(mem_.begin(), mem_.end(), [](const partex::DeviceMemory& m) { return m.over; });
}

QColor MemoryChart::colorOf(int lane) const {
  if (lane >= 0 && static_cast<size_t>(lane) < colors_.size() && colors_[static_cast<size_t>(lane)].isValid())
    return colors_[static_cast<size_t>(lane)];
  return deviceColor(lane);
}

QString MemoryChart::mib(double bytes) {
  return QString::number(bytes / (1024.0 * 1024.0), 'f', 1) + QStringLiteral(" MiB");
}

MemoryChart::Frame MemoryChart::frameFor(const QRectF& area, double plotLeft, double plotWidth, bool compact) const {
  Frame f;
  f.area = area;
  f.plotLeft = plotLeft;
  f.plotWidth = std::max(10.0, plotWidth);
  f.lanesTop = area.top() + kTitleH;
  f.laneHeight = kLaneH;
  if (compact && !mem_.empty()) {
    const double avail = (area.height() - kTitleH - kBottom) / static_cast<double>(mem_.size());
    f.laneHeight = std::clamp(std::floor(avail), kMinLaneH, kLaneH);
  }
  return f;
}

double MemoryChart::laneMaxBytes(int lane) const {
  if (lane < 0 || lane >= laneCount()) return 1;
  const auto& m = mem_[static_cast<size_t>(lane)];
  return std::max(1.0, static_cast<double>(std::max(m.peak, m.capacity)) * kHeadroom);
}

double MemoryChart::yAt(const Frame& f, int lane, double bytes) const {
  const double bottom = f.lanesTop + (lane + 1) * f.laneHeight - 2;
  const double top = f.lanesTop + lane * f.laneHeight + kTextH;
  return bottom - (bottom - top) * std::clamp(bytes / laneMaxBytes(lane), 0.0, 1.0);
}

double MemoryChart::capacityY(const Frame& f, int lane) const {
  if (lane < 0 || lane >= laneCount() || mem_[static_cast<size_t>(lane)].capacity <= 0) return -1;
  return yAt(f, lane, static_cast<double>(mem_[static_cast<size_t>(lane)].capacity));
}

QPolygonF MemoryChart::outline(const Frame& f, const TimeScale& sc, int lane) const {
  QPolygonF poly;
  if (lane < 0 || lane >= laneCount()) return poly;
  const auto& steps = mem_[static_cast<size_t>(lane)].steps;
  if (steps.size() < 2) return poly;  // no work on the device: nothing over time
  const double left = f.plotLeft, right = f.plotLeft + f.plotWidth;
  const double t0 = sc.timeAt(0), t1 = sc.timeAt(f.plotWidth);
  // Segment i holds steps[i].second over [steps[i].first, steps[i + 1].first).
  size_t i = static_cast<size_t>(
      std::upper_bound(steps.begin(), steps.end(), t0, [](double t, const auto& s) { return t < s.first; }) -
      steps.begin());
  i = i > 0 ? i - 1 : 0;
  // A run of segments narrower than a pixel becomes one column at their largest value.
  double colX = -1, colX1 = -1, colBytes = 0;
  auto flushColumn = [&] {
    if (colX < 0) return;
    const double y = yAt(f, lane, colBytes);
    poly << QPointF(colX, y) << QPointF(colX1, y);
    colX = -1;
  };
  for (; i + 1 < steps.size(); ++i) {
    const double a = steps[i].first, b = steps[i + 1].first;
    if (a > t1) break;
    if (b < t0) continue;
    const double x0 = std::max(left, left + sc.xAt(a));
    const double x1 = std::min(right, left + sc.xAt(b));
    const double bytes = static_cast<double>(steps[i].second);
    if (x1 - x0 >= 1.0) {
      flushColumn();
      const double y = yAt(f, lane, bytes);
      poly << QPointF(x0, y) << QPointF(x1, y);
    } else if (colX >= 0 && x0 <= colX1) {
      colBytes = std::max(colBytes, bytes);
      colX1 = std::max(colX1, std::min(right, std::floor(x0) + 1));
    } else {
      flushColumn();
      colX = std::floor(x0);
      colX1 = std::min(right, colX + 1);
      colBytes = bytes;
    }
  }
  flushColumn();
  return poly;
}

std::vector<std::pair<double, double>> MemoryChart::overSpans(const Frame& f, const TimeScale& sc, int lane) const {
  std::vector<std::pair<double, double>> spans;
  if (lane < 0 || lane >= laneCount()) return spans;
  const auto& m = mem_[static_cast<size_t>(lane)];
  if (m.capacity <= 0) return spans;
  const double left = f.plotLeft, right = f.plotLeft + f.plotWidth;
  for (size_t i = 0; i + 1 < m.steps.size(); ++i) {
    if (m.steps[i].second <= m.capacity) continue;
    const double x0 = std::max(left, left + sc.xAt(m.steps[i].first));
    const double x1 = std::min(right, left + sc.xAt(m.steps[i + 1].first));
    if (x1 < x0) continue;  // off the plot
    if (!spans.empty() && x0 <= spans.back().second + 0.5)
      spans.back().second = std::max(spans.back().second, x1);
    else
      spans.emplace_back(x0, x1);
  }
  // A device over capacity whose excess lasts too little to see still gets a mark (2 px wide).
  for (auto& s : spans)
    if (s.second - s.first < 2) s.second = std::min(right, s.first + 2);
  return spans;
}

QStringList MemoryChart::laneText(int lane) const {
  QStringList parts;
  if (lane < 0 || lane >= laneCount()) return parts;
  const auto& m = mem_[static_cast<size_t>(lane)];
  parts << tr("peak %1").arg(mib(static_cast<double>(m.peak)));
  parts << (m.capacity > 0 ? tr("capacity %1").arg(mib(static_cast<double>(m.capacity))) : tr("no capacity limit"));
  parts << tr("weights %1").arg(mib(static_cast<double>(m.weights)));
  if (m.over) parts << tr("OVER CAPACITY by %1").arg(mib(static_cast<double>(m.peak - m.capacity)));
  return parts;
}

void MemoryChart::paint(QPainter& p, const Frame& f, const TimeScale& sc, const QRectF& dirty) const {
  const QRectF& a = f.area;
  p.fillRect(a, Qt::white);
  const QColor ink(0x22, 0x22, 0x22), grid(0xE4, 0xE4, 0xE4), muted(0x70, 0x70, 0x70);
  const double right = f.plotLeft + f.plotWidth;
  p.setPen(ink);
  p.setFont(pixelFont(font_, kLabelFontPx, true));
  p.drawText(QRectF(a.left() + 8, a.top(), a.width() - 16, kTitleH), Qt::AlignLeft | Qt::AlignVCenter,
             mem_.empty() ? tr("Memory: no plan") : tr("Memory resident per device (weights + live tensors)"));
  if (mem_.empty()) return;
  const double lanesBottom = f.lanesTop + f.laneHeight * static_cast<double>(mem_.size());

  // The Gantt's tick grid, so that the eye follows a time from the bars down to the memory.
  p.setPen(QPen(grid, 0));
  for (const auto& tick : sc.ticks(f.plotWidth, 90)) {
    const double x = std::round(f.plotLeft + sc.xAt(tick.us)) + 0.5;
    p.drawLine(QPointF(x, f.lanesTop), QPointF(x, lanesBottom));
  }

  const QFont labelFont = pixelFont(font_, kLabelFontPx, true);
  const QFont textFont = pixelFont(font_, kTextFontPx);
  const QFontMetrics tfm(textFont);
  for (int lane = 0; lane < laneCount(); ++lane) {
    const QRectF laneRect(a.left(), f.lanesTop + lane * f.laneHeight, a.width(), f.laneHeight);
    if (!laneRect.intersects(dirty)) continue;
    const auto& m = mem_[static_cast<size_t>(lane)];
    const QColor c = colorOf(lane);
    p.setPen(QPen(grid, 0));
    p.drawLine(QPointF(a.left(), laneRect.bottom() - 0.5), QPointF(right, laneRect.bottom() - 0.5));

    // Label column: the device's swatch and name, as in the Gantt rows.
    const double sw = 12;
    p.fillRect(QRectF(a.left() + 8, laneRect.top() + kTextH - sw + 2, sw, sw), c);
    p.setFont(labelFont);
    p.setPen(m.over ? kOver : ink);
    const QString name = lane < static_cast<int>(labels_.size()) ? labels_[static_cast<size_t>(lane)]
                                                                  : tr("device %1").arg(lane);
    p.drawText(QRectF(a.left() + 8 + sw + 6, laneRect.top(), f.plotLeft - a.left() - sw - 18, kTextH + 3),
               Qt::AlignLeft | Qt::AlignBottom, name);

    // The step plot, filled in the device's colour.
    const QPolygonF line = outline(f, sc, lane);
    const double base = yAt(f, lane, 0);
    if (!line.isEmpty()) {
      QPolygonF area = line;
      area << QPointF(line.back().x(), base) << QPointF(line.front().x(), base);
      QColor fill = c;
      fill.setAlpha(120);
      p.setPen(Qt::NoPen);
      p.setBrush(fill);
      p.drawPolygon(area);
      // What goes over the capacity: the same area above the capacity line, in red.
      const double cy = capacityY(f, lane);
      if (m.over && cy >= 0) {
        p.save();
        p.setClipRect(QRectF(f.plotLeft, laneRect.top(), f.plotWidth, cy - laneRect.top()), Qt::IntersectClip);
        QColor red = kOver;
        red.setAlpha(190);
        p.setBrush(red);
        p.drawPolygon(area);
        p.restore();
      }
      p.setBrush(Qt::NoBrush);
      p.setPen(QPen(c.darker(150), 1.2));
      p.drawPolyline(line);
    }

    // Capacity: a dashed line across the plot, red where the device is over it.
    const double cy = capacityY(f, lane);
    if (cy >= 0) {
      p.setPen(QPen(ink, 1.2, Qt::DashLine));
      p.drawLine(QPointF(f.plotLeft, cy), QPointF(right, cy));
      p.setPen(QPen(kOver, 3));
      for (const auto& [x0, x1] : overSpans(f, sc, lane)) p.drawLine(QPointF(x0, cy), QPointF(x1, cy));
    }

    // The lane's figures above its plot: peak, capacity, weights, and the excess in red.
    const QStringList parts = laneText(lane);
    const QFont badgeFont = pixelFont(font_, kTextFontPx, true);
    const QFontMetrics bfm(badgeFont);
    const QString sep = QStringLiteral("  \u00b7  ");
    double x = f.plotLeft + 4;
    const double ty = laneRect.top();
    for (int k = 0; k < parts.size(); ++k) {
      const bool badge = m.over && k == parts.size() - 1;  // "OVER CAPACITY by ...": white on red
      const double sepW = k ? tfm.horizontalAdvance(sep) : 0.0;
      const double w = (badge ? bfm.horizontalAdvance(parts[k]) + 8 : tfm.horizontalAdvance(parts[k]));
      if (x + sepW + w > right) break;
      p.setFont(textFont);
      p.setPen(muted);
      if (k) p.drawText(QRectF(x, ty, sepW + 1, kTextH), Qt::AlignLeft | Qt::AlignVCenter, sep);
      x += sepW;
      if (badge) {
        p.fillRect(QRectF(x, ty + 1, w, kTextH - 1), kOver);
        p.setFont(badgeFont);
        p.setPen(Qt::white);
        p.drawText(QRectF(x, ty, w, kTextH), Qt::AlignCenter, parts[k]);
      } else {
        p.drawText(QRectF(x, ty, w + 1, kTextH), Qt::AlignLeft | Qt::AlignVCenter, parts[k]);
      }
      x += w;
    }
  }
}

}  // namespace partex::gui
