#include "gantt/memoryview.h"


#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gantt/ganttview.h"
#include "gantt/tooltipevent.h"

namespace partex::gui {

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  chart_.setFont(font());
}

void MemoryView::follow(GanttView* gantt) {
  if (gantt_) {
    gantt_->removeEventFilter(this);
    disconnect(scaleConn_);
  }
  gantt_ = gantt;
  if (gantt_) {
    // Zoom, pan and fit change the scale; a resize or a new label column moves the plot columns.
    scaleConn_ = connect(gantt_, &GanttView::timeScaleChanged, this, [this] { update(); });
    gantt_->installEventFilter(this);
  }
  update();
}

bool MemoryView::eventFilter(QObject* watched, QEvent* e) {
  // Installed on the Gantt view only. No comparison through gantt_ here: the filter also sees the events
  // of the Gantt's destruction, when it is a GanttView no more (UBSan: a bad downcast).
  if (e->type() == QEvent::Resize || e->type() == QEvent::Move) update();  // its plot columns may have moved
  return QWidget::eventFilter(watched, e);
}

void MemoryView::setMemory(std::vector<partex::DeviceMemory> memory, std::vector<QString> labels,
                           std::vector<QColor> colors) {
  chart_.setMemory(std::move(memory), std::move(labels), std::move(colors));
  updateGeometry();
  update();
}

void MemoryView::clear() {
  chart_.clear();
  updateGeometry();
  update();
}

MemoryChart::Frame MemoryView::frame() const {
  const QRectF area(rect());
  if (!gantt_) {
    const double left = 90;
    return chart_.frameFor(area, left, area.width() - left - 16, true);
  }
  // The Gantt's plot columns, moved into this widget's coordinates.
  const GanttChart::Frame g = gantt_->plotFrame();
  const double dx = gantt_->mapToGlobal(QPoint(0, 0)).x() - mapToGlobal(QPoint(0, 0)).x();
  return chart_.frameFor(area, g.plotLeft + dx, g.plotWidth, true);
}

TimeScale MemoryView::timeScale() const {
  if (gantt_) return gantt_->timeScale();
  TimeScale s;
  double end = 0;
  for (const auto& m : chart_.memory())
    if (!m.steps.empty()) end = std::max(end, m.steps.back().first);
  s.fit(0, std::max(end, 1e-3) * GanttChart::kFitMargin, frame().plotWidth);
  return s;
}

QString MemoryView::toolTipAt(const QPoint& pos) const {
  const MemoryChart::Frame f = frame();
  if (pos.x() < f.plotLeft || pos.x() > f.plotLeft + f.plotWidth || pos.y() < f.lanesTop) return {};
  const int lane = static_cast<int>(std::floor((pos.y() - f.lanesTop) / f.laneHeight));
  if (lane >= chart_.laneCount()) return {};
  const auto& m = chart_.memory()[static_cast<size_t>(lane)];
  if (m.steps.size() < 2) return {};
  const double t = timeScale().timeAt(pos.x() - f.plotLeft);
  if (t < m.steps.front().first || t > m.steps.back().first) return {};
  auto it = std::upper_bound(m.steps.begin(), m.steps.end(), t, [](double x, const auto& s) { return x < s.first; });
  const int64_t bytes = std::prev(it)->second;
  QString s = tr("at %1: %2 resident").arg(TimeScale::formatDuration(t), MemoryChart::mib(static_cast<double>(bytes)));
  if (m.capacity > 0) {
    s += tr(" of %1").arg(MemoryChart::mib(static_cast<double>(m.capacity)));
    if (bytes > m.capacity) s += tr(" (over by %1)").arg(MemoryChart::mib(static_cast<double>(bytes - m.capacity)));
  }
  return s;
}

QSize MemoryView::sizeHint() const {
  return {900, static_cast<int>(chart_.fullHeight())};
}

QSize MemoryView::minimumSizeHint() const {
  return {300, static_cast<int>(MemoryChart::kTitleH + MemoryChart::kBottom +
                                MemoryChart::kMinLaneH * std::max(1, chart_.laneCount()))};
}

bool MemoryView::event(QEvent* e) {
  if (showChartToolTip(this, e, [this](const QPoint& p) { return toolTipAt(p); })) return true;
  return QWidget::event(e);
}

void MemoryView::changeEvent(QEvent* e) {
  QWidget::changeEvent(e);
  if (e->type() == QEvent::FontChange) {
    chart_.setFont(font());
    update();
  }
}

void MemoryView::paintEvent(QPaintEvent* e) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  chart_.paint(p, frame(), timeScale(), QRectF(e->rect()));
}

void MemoryView::wheelEvent(QWheelEvent* e) {
  if (!gantt_) return QWidget::wheelEvent(e);
  // The same wheel over the Gantt's plot at this x: zooms and scrolls both.
  const QPointF pos(gantt_->mapFromGlobal(e->globalPosition().toPoint()).x(), gantt_->height() / 2.0);
  QWheelEvent fwd(pos, e->globalPosition(), e->pixelDelta(), e->angleDelta(), e->buttons(), e->modifiers(),
                  e->phase(), e->inverted());
  QCoreApplication::sendEvent(gantt_, &fwd);
  e->setAccepted(fwd.isAccepted());
}

void MemoryView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (gantt_ && e->button() == Qt::LeftButton) {
    gantt_->fit();
    return;
  }
  QWidget::mouseDoubleClickEvent(e);
}

}  // namespace partex::gui
