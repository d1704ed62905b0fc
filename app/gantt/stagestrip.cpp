#include "gantt/stagestrip.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "gantt/timescale.h"
#include "session/palette.h"

namespace partex::gui {

namespace {

constexpr double kLabelW = 64;     ///< "Stages" before the segments.
constexpr double kRightMargin = 16;
constexpr double kGrab = 5;        ///< A boundary is grabbed within this many pixels.

}  // namespace

StageStrip::StageStrip(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setToolTip(tr("The plan's stages: runs of operators on one device in topological order. Drag the boundary "
                "between two stages to move operators to the neighbouring stage's device; the stream is "
                "simulated again at once (Ctrl+Z undoes it)."));
}

QSize StageStrip::sizeHint() const {
  return {400, 30};
}

QSize StageStrip::minimumSizeHint() const {
  return {120, 30};
}

void StageStrip::setPlan(const partex::CostTable* t, const partex::Plan& plan, const std::vector<QColor>& deviceColors,
                         int bottleneck) {
  table_ = t;
  topo_.clear();
  stages_.clear();
  deviceNames_.clear();
  if (t) {
    topo_ = t->topoOrder();
    stages_ = partex::planStages(plan, topo_);
    for (const auto& id : t->deviceIds) deviceNames_.push_back(QString::fromStdString(id));
  }
  colors_ = deviceColors;
  bottleneck_ = bottleneck;
  dragBoundary_ = -1;
  dragShift_ = 0;
  pending_ = {};
  previewText_.clear();
  update();
}

void StageStrip::setPreviewText(const QString& text) {
  previewText_ = text;
  update();
}

double StageStrip::plotLeft() const {
  return kLabelW;
}

double StageStrip::plotWidth() const {
  return std::max(10.0, width() - kLabelW - kRightMargin);
}

double StageStrip::xAtPosition(int pos) const {
  const int n = static_cast<int>(topo_.size());
  if (n == 0) return plotLeft();
  return plotLeft() + plotWidth() * std::clamp(pos, 0, n) / n;
}

int StageStrip::positionAt(double x) const {
  const int n = static_cast<int>(topo_.size());
  if (n == 0) return 0;
  return std::clamp(static_cast<int>(std::lround((x - plotLeft()) / plotWidth() * n)), 0, n);
}

int StageStrip::boundaryAt(double x) const {
  int best = -1;
  double bestDist = kGrab;
  for (size_t k = 0; k + 1 < stages_.size(); ++k) {
    const double d = std::fabs(x - xAtPosition(stages_[k].end));
    if (d <= bestDist) {
      bestDist = d;
      best = static_cast<int>(k);
    }
  }
  return best;
}

void StageStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  QFont bold = font();
  bold.setPixelSize(12);
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(QColor(0x22, 0x22, 0x22));
  p.drawText(QRectF(8, 0, kLabelW - 10, height()), Qt::AlignLeft | Qt::AlignVCenter, tr("Stages"));
  if (!table_ || stages_.empty()) return;
  QFont small = font();
  small.setPixelSize(11);
  p.setFont(small);
  const QFontMetrics fm(small);
  const double top = 4, h = height() - 8;
  for (size_t k = 0; k < stages_.size(); ++k) {
    const auto& s = stages_[k];
    const double x0 = xAtPosition(s.begin), x1 = xAtPosition(s.end);
    const QColor c = s.device >= 0 && static_cast<size_t>(s.device) < colors_.size() && colors_[static_cast<size_t>(s.device)].isValid()
                         ? colors_[static_cast<size_t>(s.device)]
                         : deviceColor(s.device);
    const QRectF r(x0, top, std::max(1.0, x1 - x0), h);
    p.fillRect(r, c);
    if (s.device == bottleneck_) {  // ink, not red: a device's own colour may be red
      p.setPen(QPen(QColor(0x22, 0x22, 0x22), 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(1, 1, -1, -1));
    }
    if (x1 - x0 >= 30) {
      // "NPU: 12 ops, 1.20 ms" as far as it fits.
      double busy = 0;
      for (int i = s.begin; i < s.end; ++i) busy += table_->w(topo_[static_cast<size_t>(i)], s.device);
      const QString name = s.device >= 0 && static_cast<size_t>(s.device) < deviceNames_.size()
                               ? deviceNames_[static_cast<size_t>(s.device)]
                               : QStringLiteral("?");
      QString text = tr("%1: %2 ops, %3").arg(name).arg(s.size()).arg(TimeScale::formatDuration(busy));
      if (s.device == bottleneck_) text += tr(" (bottleneck)");
      p.setPen(textColorOn(c));
      p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(text, Qt::ElideRight, static_cast<int>(x1 - x0) - 6));
    }
  }
  // Boundaries: handles to drag; the one dragged drawn where it would land.
  for (size_t k = 0; k + 1 < stages_.size(); ++k) {
    int pos = stages_[k].end;
    if (static_cast<int>(k) == dragBoundary_) pos += dragShift_;
    const double x = std::round(xAtPosition(pos)) + 0.5;
    const bool dragged = static_cast<int>(k) == dragBoundary_;
    p.setPen(QPen(QColor(0x22, 0x22, 0x22), dragged ? 3 : 1.5));
    p.drawLine(QPointF(x, 1), QPointF(x, height() - 1));
  }
  if (dragBoundary_ >= 0 && !pending_.ops.empty()) {
    QString text = tr("%n operator(s) to %1", nullptr, static_cast<int>(pending_.ops.size()))
                       .arg(pending_.device >= 0 && static_cast<size_t>(pending_.device) < deviceNames_.size()
                                ? deviceNames_[static_cast<size_t>(pending_.device)]
                                : QString());
    if (!previewText_.isEmpty()) text += QStringLiteral(": ") + previewText_;
    const double w = fm.horizontalAdvance(text) + 10;
    const double x = std::clamp(xAtPosition(stages_[static_cast<size_t>(dragBoundary_)].end + dragShift_) + 6, plotLeft(),
                                std::max(plotLeft(), width() - w - 2));
    const QRectF box(x, 2, w, height() - 4);
    p.fillRect(box, QColor(255, 255, 255, 235));
    p.setPen(QColor(0x22, 0x22, 0x22));
    p.drawText(box, Qt::AlignCenter, text);
  }
}

void StageStrip::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  dragBoundary_ = boundaryAt(e->position().x());
  dragShift_ = 0;
  pending_ = {};
  update();
}

void StageStrip::mouseMoveEvent(QMouseEvent* e) {
  const double x = e->position().x();
  if (dragBoundary_ < 0) {
    setCursor(boundaryAt(x) >= 0 ? Qt::SplitHCursor : Qt::ArrowCursor);
    return;
  }
  const int shift = positionAt(x) - stages_[static_cast<size_t>(dragBoundary_)].end;
  const partex::StageBoundaryMove before = pending_;
  pending_ = partex::stageBoundaryMove(stages_, topo_, dragBoundary_, shift);
  // The shift as clamped (each stage keeps an operator).
  dragShift_ = pending_.ops.empty() ? 0 : (shift < 0 ? -1 : 1) * static_cast<int>(pending_.ops.size());
  if (pending_.ops != before.ops || pending_.device != before.device) {
    previewText_.clear();
    QList<int> ops;
    for (partex::TaskId v : pending_.ops) ops << v;
    emit boundaryPreviewed(ops, pending_.device);  // the answer (setPreviewText) may come at once
  }
  update();
}

void StageStrip::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || dragBoundary_ < 0) return QWidget::mouseReleaseEvent(e);
  const partex::StageBoundaryMove m = pending_;
  dragBoundary_ = -1;
  dragShift_ = 0;
  pending_ = {};
  previewText_.clear();
  update();
  if (m.ops.empty()) return;
  QList<int> ops;
  for (partex::TaskId v : m.ops) ops << v;
  emit boundaryDragged(ops, m.device);
}

}  // namespace partex::gui
