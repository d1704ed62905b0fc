#pragma once
/// \file The memory view: a MemoryChart in a widget under a GanttView, on the Gantt's time axis. It
/// keeps no time scale of its own: it paints with the Gantt view's TimeScale and the Gantt frame's
/// plot columns (shifted by where the two widgets sit), and repaints whenever the Gantt's scale
/// changes (zoom, pan, fit, resize). Wheel and double-click go to the Gantt, so zooming over the
/// memory zooms both.

#include <QPointer>
#include <QWidget>

#include <vector>

#include "gantt/memorychart.h"
#include "sim/memory.h"

namespace partex::gui {

class GanttView;

/// See the file comment.
class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);

  /// Draws on `gantt`'s time axis from now on (null: a fitted axis of its own, for tests of the chart).
  void follow(GanttView* gantt);
  GanttView* gantt() const { return gantt_; }

  /// Shows `memory` (deviceMemory()'s, one per device) with the devices' labels and colours.
  void setMemory(std::vector<partex::DeviceMemory> memory, std::vector<QString> labels, std::vector<QColor> colors);
  void clear();

  const MemoryChart& chart() const { return chart_; }
  /// The frame painted now, in this widget's coordinates: the Gantt's plot columns.
  MemoryChart::Frame frame() const;
  /// The time scale painted now: the Gantt's.
  TimeScale timeScale() const;
  /// "npu at 1.234 ms: 12.3 MiB resident (capacity 16.0 MiB)" for a point in a lane ("" elsewhere).
  QString toolTipAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  bool event(QEvent* e) override;
  bool eventFilter(QObject* watched, QEvent* e) override;
  void changeEvent(QEvent* e) override;
  void paintEvent(QPaintEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  MemoryChart chart_;
  QPointer<GanttView> gantt_;
  QMetaObject::Connection scaleConn_;
};

}  // namespace partex::gui
