#include "gantt/ganttview.h"
#include "gantt/tooltipevent.h"


#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace partex::gui {

GanttView::GanttView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(false);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::StrongFocus);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  chart_.setFont(font());
}

void GanttView::chartChanged() {
  updateGeometry();
}

void GanttView::setTimeline(const partex::CostTable* t, const partex::Timeline& tl,
                            const std::vector<QColor>& deviceColors, const std::vector<partex::FusedKernel>& fused) {
  chart_.setTimeline(t, tl, deviceColors, fused);
  chartChanged();
  if (autoFit_) fit();
  update();
}

void GanttView::setPreview(const partex::Timeline* tl, const std::vector<partex::FusedKernel>& fused) {
  chart_.setPreview(tl, fused);
  chartChanged();
  update();
}

void GanttView::setStream(const GanttChart::StreamMarks& s) {
  chart_.setStream(s);
  chartChanged();
  update();
}

void GanttView::setWorkload(const GanttChart::WorkloadMarks& w) {
  chart_.setWorkload(w);
  chartChanged();
  if (autoFit_) fit();  // the joint timeline's span, not the model's
  update();
}

void GanttView::setReferenceMakespan(double us) {
  chart_.setReferenceMakespan(us);
  update();
}

void GanttView::setReferenceLabel(const QString& label) {
  chart_.setReferenceLabel(label);
  update();
}

void GanttView::setTitle(const QString& title) {
  chart_.setTitle(title);
  update();
}

void GanttView::setSelectedTasks(const QList<int>& tasks) {
  chart_.setSelectedTasks(tasks);
  update();
}

void GanttView::setMinimumLabelWidth(int px) {
  chart_.setMinimumLabelWidth(px);
  chartChanged();
  if (autoFit_) fit();
  update();
}

double GanttView::shownMakespan() const {
  return chart_.shownMakespan();
}

void GanttView::setFitEnd(double us) {
  chart_.setFitEnd(us);
  if (autoFit_) fit();
}

QString GanttView::makespanText() const {
  return chart_.makespanText();
}

// ---- Geometry -----------------------------------------------------------------------------------

GanttChart::Frame GanttView::widgetFrame() const {
  return chart_.frameFor(QRectF(rect()), true);
}

int GanttView::deviceAt(const QPoint& globalPos) const {
  const QPoint pos = mapFromGlobal(globalPos);
  // A workload's rows are its joint schedule's devices, not the opened model's: no drop target.
  if (!rect().contains(pos) || !chart_.workload().models.empty()) return -1;
  const int r = chart_.rowAtY(widgetFrame(), pos.y());
  if (r < 0) return -1;
  const auto& row = chart_.rows()[static_cast<size_t>(r)];
  return row.kind == GanttRowKind::Device ? row.device : -1;
}

int GanttView::taskAt(const QPoint& pos) const {
  return chart_.taskAt(widgetFrame(), scale_, pos);
}

QRectF GanttView::taskRect(int task) const {
  return chart_.taskRect(widgetFrame(), scale_, task);
}

QString GanttView::toolTipAt(const QPoint& pos) const {
  return chart_.toolTipAt(widgetFrame(), scale_, pos);
}

QSize GanttView::sizeHint() const {
  return {900, static_cast<int>(GanttChart::kHeaderH + GanttChart::kAxisH + GanttChart::kBottom +
                                GanttChart::kRowH * static_cast<double>(std::max<size_t>(chart_.rows().size(), 2)))};
}

QSize GanttView::minimumSizeHint() const {
  return {300, static_cast<int>(GanttChart::kHeaderH + GanttChart::kAxisH + GanttChart::kBottom +
                                GanttChart::kMinRowH * static_cast<double>(std::max<size_t>(chart_.rows().size(), 2)))};
}

// ---- Time scale ---------------------------------------------------------------------------------

void GanttView::setScaleInternal(const TimeScale& s) {
  TimeScale n = s;
  if (!(n.usPerPixel > 0) || !std::isfinite(n.usPerPixel)) return;
  n.usPerPixel = std::clamp(n.usPerPixel, TimeScale::kMinUsPerPixel, TimeScale::kMaxUsPerPixel);
  if (!std::isfinite(n.originUs)) return;
  if (n.originUs == scale_.originUs && n.usPerPixel == scale_.usPerPixel) return;
  scale_ = n;
  update();
  emit timeScaleChanged(scale_);
}

void GanttView::setTimeScale(const TimeScale& s) {
  if (s.originUs != scale_.originUs || s.usPerPixel != scale_.usPerPixel) autoFit_ = false;
  setScaleInternal(s);
}

void GanttView::fit() {
  autoFit_ = true;
  TimeScale s;
  s.fit(0, std::max(chart_.fitEnd(), 1e-3) * GanttChart::kFitMargin, widgetFrame().plotWidth);
  setScaleInternal(s);
}

void GanttView::zoomIn() {
  autoFit_ = false;
  TimeScale s = scale_;
  s.zoomAbout(widgetFrame().plotWidth / 2, 1.5);
  setScaleInternal(s);
}

void GanttView::zoomOut() {
  autoFit_ = false;
  TimeScale s = scale_;
  s.zoomAbout(widgetFrame().plotWidth / 2, 1 / 1.5);
  setScaleInternal(s);
}

// ---- Events -------------------------------------------------------------------------------------

bool GanttView::event(QEvent* e) {
  if (showChartToolTip(this, e, [this](const QPoint& p) { return toolTipAt(p); })) return true;
  return QWidget::event(e);
}

void GanttView::changeEvent(QEvent* e) {
  QWidget::changeEvent(e);
  if (e->type() == QEvent::FontChange) {  // the chart's text sizes derive from the widget's font
    chart_.setFont(font());
    chartChanged();
    update();
  }
}

void GanttView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if (autoFit_) fit();
}

void GanttView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  const QPoint pos = e->position().toPoint();
  const int task = taskAt(pos);
  if (task >= 0) {
    emit taskClicked(task, e->modifiers());
    return;
  }
  const GanttChart::Frame f = widgetFrame();
  if (pos.x() >= f.plotLeft) {
    panning_ = true;
    panStart_ = pos;
    panOrigin_ = scale_.originUs;
    setCursor(Qt::ClosedHandCursor);
  }
}

void GanttView::mouseMoveEvent(QMouseEvent* e) {
  if (!panning_) return QWidget::mouseMoveEvent(e);
  TimeScale s = scale_;
  s.originUs = panOrigin_ - (e->position().x() - panStart_.x()) * s.usPerPixel;
  autoFit_ = false;
  setScaleInternal(s);
}

void GanttView::mouseReleaseEvent(QMouseEvent* e) {
  if (panning_ && e->button() == Qt::LeftButton) {
    panning_ = false;
    unsetCursor();
    return;
  }
  QWidget::mouseReleaseEvent(e);
}

void GanttView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && taskAt(e->position().toPoint()) < 0) {
    fit();
    return;
  }
  QWidget::mouseDoubleClickEvent(e);
}

void GanttView::wheelEvent(QWheelEvent* e) {
  const QPoint d = e->angleDelta();
  const GanttChart::Frame f = widgetFrame();
  TimeScale s = scale_;
  if ((e->modifiers() & Qt::ShiftModifier) || (d.y() == 0 && d.x() != 0)) {
    const double steps = (d.x() != 0 ? d.x() : d.y()) / 120.0;
    s.originUs -= steps * 60 * s.usPerPixel;
  } else if (d.y() != 0) {
    s.zoomAbout(e->position().x() - f.plotLeft, std::pow(1.25, d.y() / 120.0));
  } else {
    return;
  }
  autoFit_ = false;
  setScaleInternal(s);
  e->accept();
}
// ---- Painting and export ------------------------------------------------------------------------

void GanttView::paintEvent(QPaintEvent* e) {
  QPainter p(this);
  chart_.paint(p, widgetFrame(), scale_, QRectF(e->rect()));
}

void GanttView::setExportWidth(int px) {
  chart_.setExportWidth(px);
}

QSize GanttView::exportSize() const {
  return chart_.exportSize();
}

void GanttView::renderTo(QPainter* p, const QRectF& target) {
  chart_.renderTo(p, target);
}

partex::Status GanttView::saveImage(const QString& path) {
  return chart_.saveImage(path);
}

}  // namespace partex::gui
