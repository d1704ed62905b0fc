#include "graph/minimap.h"

#include <QMouseEvent>
#include <QScrollBar>

namespace partex::gui {

MiniMap::MiniMap(QGraphicsView* main) : QGraphicsView(main->scene(), main), main_(main) {
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setInteractive(false);
  setFrameShape(QFrame::Box);
  setBackgroundBrush(QColor(255, 255, 255, 230));
  setRenderHints({});
  setToolTip(tr("Overview: click or drag to move the view"));
  setCursor(Qt::PointingHandCursor);
  // Repaint the outline whenever the main view scrolls or zooms.
  auto repaint = [this] { viewport()->update(); };
  connect(main_->horizontalScrollBar(), &QScrollBar::valueChanged, this, repaint);
  connect(main_->verticalScrollBar(), &QScrollBar::valueChanged, this, repaint);
  connect(main_->horizontalScrollBar(), &QScrollBar::rangeChanged, this, repaint);
  connect(main_->verticalScrollBar(), &QScrollBar::rangeChanged, this, repaint);
}

void MiniMap::refit() {
  if (scene()) fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  viewport()->update();
}

void MiniMap::drawForeground(QPainter* p, const QRectF&) {
  const QRectF visible = main_->mapToScene(main_->viewport()->rect()).boundingRect();
  p->setPen(QPen(QColor(200, 30, 30), 0));
  p->setBrush(QColor(200, 30, 30, 40));
  p->drawRect(visible);
}

void MiniMap::mousePressEvent(QMouseEvent* e) {
  main_->centerOn(mapToScene(e->position().toPoint()));
  e->accept();
}

void MiniMap::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) main_->centerOn(mapToScene(e->position().toPoint()));
  e->accept();
}

void MiniMap::mouseReleaseEvent(QMouseEvent* e) {
  e->accept();
}

void MiniMap::wheelEvent(QWheelEvent* e) {
  e->accept();
}

void MiniMap::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  refit();
}

}  // namespace partex::gui
