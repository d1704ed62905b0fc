#pragma once
/// \file The graph view's minimap: the whole scene small in a corner, with the main view's visible
/// area outlined; pressing or dragging in it centres the main view there.

#include <QGraphicsView>

namespace partex::gui {

/// See the file comment. A second view on the main view's scene: items paint at their lowest
/// level of detail at this scale, so it stays cheap.
class MiniMap : public QGraphicsView {
  Q_OBJECT
 public:
  explicit MiniMap(QGraphicsView* main);
  /// Fits the whole scene (after a new layout or a resize).
  void refit();

 protected:
  void drawForeground(QPainter* p, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  QGraphicsView* main_;
};

}  // namespace partex::gui
