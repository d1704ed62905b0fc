#pragma once
/// \file The graph view: the model's operators coloured by device, laid out by Graphviz on a worker
/// thread; zoom, pan, search, level of detail, collapsed groups for big models, and the hand-made
/// drag of a selection onto a device (no QDrag: its nested event loop cannot be driven by tests,
/// and the drop targets, palette and Gantt rows, live in other widgets that the main window knows).

#include <QGraphicsView>
#include <QList>
#include <QPoint>

#include "graph/displaygraph.h"
#include "graph/layout.h"
#include "session/jobtracker.h"
#include "support/result.h"

class QLabel;

namespace partex::gui {

class Session;
class GraphScene;
class MiniMap;

/// See the file comment.
class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  /// Models with more operators than this open collapsed into groups (dot is slow beyond a few
  /// thousand nodes).
  static constexpr int kDefaultCollapseAbove = 2000;
  /// Operators per group when collapsed.
  static constexpr int kGroupSize = 40;

  explicit GraphView(Session* session, QWidget* parent = nullptr);
  GraphScene* graphScene() const { return scene_; }
  void setCollapseThreshold(int ops) { collapseAbove_ = ops; }

  /// Rebuilds the display graph (after a model change) and lays it out in the background.
  void relayout();
  /// True from a layout request until its result is in the scene.
  bool layoutRunning() const;
  /// Milliseconds the last layout took (Graphviz plus item building).
  double lastLayoutMs() const { return lastLayoutMs_; }
  QString layoutEngine() const { return layoutEngine_; }
  /// "176 nodes" or "250 nodes (10,000 operators in 250 groups)" for the last layout.
  QString layoutSummary() const;
  void expandGroup(int group);
  void collapseGroup(int group);
  /// Shows or hides the bodies of control-flow operator `op` (If, Loop, Scan) under it.
  void toggleBodies(int op);
  bool bodiesShown(int op) const;

  /// Centre of the item showing `op`, in viewport coordinates (tests, drag sources).
  QPoint viewportPosOfOp(int op) const;
  /// Selects the next operator whose name or type contains `text` and centres it; false when none.
  bool findNext(const QString& text);
  void centerOnOp(int op);

  void zoomBy(double factor);
  void fitAll();
  /// The first view of a model: the whole graph where it fits at a readable zoom, otherwise a
  /// readable zoom (kReadableScale) on the start of the critical path, the minimap showing where.
  void frameStart();
  /// The first operator of the critical path in topological order (-1 when none).
  int criticalStart() const;
  /// Below this zoom operator names are too small to read (the boxes' 9-point text at ~7 pixels).
  static constexpr double kReadableScale = 0.85;
  void resetZoom();
  void setShowCriticalPath(bool on);
  /// Shows or hides the minimap in the bottom-right corner.
  void setMiniMapVisible(bool on);
  MiniMap* miniMap() const { return minimap_; }

  bool dragging() const { return dragging_; }
  /// Text and look of the drag ghost ("3 operators -> npu: 812 us" or the refusal).
  void setDragFeedback(const QString& text, bool allowed);

 signals:
  void layoutReady();
  /// A drag of `ops` hovers at `globalPos`; the main window finds the target and gives feedback.
  void dragMoved(const QList<int>& ops, const QPoint& globalPos);
  /// The drag ended at `globalPos` (mouse released).
  void dragDropped(const QList<int>& ops, const QPoint& globalPos);
  void dragCancelled();
  void statusMessage(const QString& text);

 protected:
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void contextMenuEvent(QContextMenuEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  struct Pending {
    DisplayGraph display;
    Grouping grouping;
    bool grouped = false;
  };
  struct Laid {
    Result<LayoutResult> layout = LayoutResult{};
    bool fallback = false;
  };
  void startLayout();
  void onLayoutFinished(Laid laid);
  QGraphicsItem* nodeItemAt(const QPoint& viewportPos) const;
  void endDrag();

  Session* session_;
  GraphScene* scene_;
  int collapseAbove_ = kDefaultCollapseAbove;
  Grouping grouping_;
  bool grouped_ = false;
  std::vector<uint8_t> expanded_;
  std::vector<int> openBodies_;  ///< Control-flow operators whose bodies are shown.
  Pending pending_;
  bool fitAfterLayout_ = false;
  int centerAfterLayout_ = -1;
  JobTracker layoutJobs_{this};  ///< The Graphviz layout, off the GUI thread.
  qint64 layoutStartNs_ = 0;
  double lastLayoutMs_ = 0;
  QString layoutEngine_;
  int findCursor_ = -1;

  // Hand-made drag state.
  bool pressOnNode_ = false;
  bool dragging_ = false;
  bool panning_ = false;
  QPoint pressPos_;
  QPoint lastPanPos_;
  QList<int> dragOps_;
  QLabel* ghost_ = nullptr;
  MiniMap* minimap_ = nullptr;
  void placeMiniMap();
};

}  // namespace partex::gui
