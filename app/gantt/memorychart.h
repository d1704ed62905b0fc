#pragma once
/// \file The memory chart without a widget: per device, the bytes resident over time (core's
/// DeviceMemory::steps, sim/memory.h) as a filled step plot in the device's colour, its capacity as a
/// horizontal line, and what goes over the capacity in red. It draws on the Gantt chart's time axis:
/// its x for a time is the Gantt frame's plotLeft + TimeScale::xAt (the same TimeScale object and the
/// same plot columns, never a second time mapping), so a step at time t sits under the Gantt bars
/// that start at t. Needs QtGui only, like GanttChart. MemoryView adds the widget.

#include <QColor>
#include <QCoreApplication>
#include <QFont>
#include <QPolygonF>
#include <QRectF>
#include <QString>

#include <algorithm>
#include <utility>
#include <vector>

#include "gantt/timescale.h"
#include "sim/memory.h"

class QPainter;

namespace partex::gui {

/// See the file comment. One lane per device, in device order (the Gantt's device rows' order).
class MemoryChart {
  Q_DECLARE_TR_FUNCTIONS(MemoryChart)
 public:
  static constexpr double kTitleH = 20;    ///< "Memory" title line above the lanes.
  static constexpr double kLaneH = 54;     ///< Lane height at full size.
  static constexpr double kMinLaneH = 46;  ///< Lanes shrink to this when the widget is short.
  static constexpr double kBottom = 6;     ///< Margin under the last lane.
  static constexpr double kHeadroom = 1.12;  ///< A lane's top is this much above max(peak, capacity).

  /// The font the chart's text sizes derive from.
  void setFont(const QFont& f) { font_ = f; }

  /// Shows `memory` (one entry per device, deviceMemory()'s) with each device's label and colour.
  /// Missing labels and colours fall back to "device N" and the palette.
  void setMemory(std::vector<partex::DeviceMemory> memory, std::vector<QString> labels, std::vector<QColor> colors);
  void clear() { setMemory({}, {}, {}); }
  const std::vector<partex::DeviceMemory>& memory() const { return mem_; }
  int laneCount() const { return static_cast<int>(mem_.size()); }
  /// True when some device is over its capacity.
  bool anyOver() const;

  /// Where the title, labels and lanes are. plotLeft and plotWidth are the Gantt frame's, shifted to
  /// this area's coordinates: the plot columns are the same pixels as the Gantt's.
  struct Frame {
    QRectF area;
    double plotLeft = 0;
    double plotWidth = 0;
    double lanesTop = 0;
    double laneHeight = kLaneH;
  };
  /// The frame of `area` for a plot at [plotLeft, plotLeft + plotWidth) (in `area`'s coordinates);
  /// with `compact`, lanes shrink (down to kMinLaneH) to fit the height.
  Frame frameFor(const QRectF& area, double plotLeft, double plotWidth, bool compact) const;
  /// The height that shows every lane at full size.
  double fullHeight() const { return kTitleH + kBottom + kLaneH * std::max(1, laneCount()); }

  /// The bytes at the top of `lane`: max(peak, capacity) with some headroom (at least 1 byte).
  double laneMaxBytes(int lane) const;
  /// The y of `bytes` in `lane` (the lane's bottom for 0).
  double yAt(const Frame& f, int lane, double bytes) const;
  /// The y of the capacity line of `lane`, or a negative number when it has no capacity.
  double capacityY(const Frame& f, int lane) const;
  /// The step outline of `lane` at scale `sc`, from its first step to its last (clipped to the plot
  /// with one point pair per pixel column at most, each column showing its largest value): x from the
  /// left, y of the bytes; a horizontal run per step.
  QPolygonF outline(const Frame& f, const TimeScale& sc, int lane) const;
  /// The x ranges where `lane` is over its capacity (empty when within, or without a capacity),
  /// clipped to the plot: where the over-capacity marks are drawn.
  std::vector<std::pair<double, double>> overSpans(const Frame& f, const TimeScale& sc, int lane) const;
  /// The label of a lane: "peak 86.9 MiB", "cap 16.0 MiB" (or "no limit") and, when over,
  /// "OVER by 70.9 MiB".
  QStringList laneText(int lane) const;

  /// Paints the chart in frame `f` at time scale `sc` (only lanes that intersect `dirty`).
  void paint(QPainter& p, const Frame& f, const TimeScale& sc, const QRectF& dirty) const;

  /// Bytes in MiB with one decimal ("16.0 MiB").
  static QString mib(double bytes);

 private:
  QColor colorOf(int lane) const;

  QFont font_;
  std::vector<partex::DeviceMemory> mem_;
  std::vector<QString> labels_;
  std::vector<QColor> colors_;
};

}  // namespace partex::gui
