#pragma once
/// \file The stages of a pipelined plan as a strip over the Gantt chart's stream view (issue 29, item 5):
/// the operators in the topological order that the pipeline programme and best's throughput search
/// cut (core's planStages), one segment per stage in its device's colour, each operator the same width.
/// Dragging the boundary between two stages moves the operators it passes to the other stage's device
/// (core's stageBoundaryMove): on release the strip emits the move, which the main window applies as
/// one undoable hand move, and the stream is simulated again at once.

#include <QColor>
#include <QList>
#include <QWidget>

#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/stream.h"

namespace partex::gui {

/// See the file comment.
class StageStrip : public QWidget {
  Q_OBJECT
 public:
  explicit StageStrip(QWidget* parent = nullptr);

  /// Shows the stages of `plan` on `t` (null clears), each in its device's colour; the stages on
  /// `bottleneck` (the stream's busiest device, -1: none) are outlined. The table must outlive the
  /// strip or the next call.
  void setPlan(const partex::CostTable* t, const partex::Plan& plan, const std::vector<QColor>& deviceColors,
               int bottleneck = -1);
  const std::vector<partex::PlanStage>& stages() const { return stages_; }
  const std::vector<partex::TaskId>& topoOrder() const { return topo_; }
  /// The x of the left edge of topological position `pos` (0..operators), in widget coordinates.
  double xAtPosition(int pos) const;
  /// The boundary between stages k and k+1 under x (within a few pixels), or -1.
  int boundaryAt(double x) const;
  /// While a boundary is dragged: the move that releasing now would make (empty otherwise).
  const partex::StageBoundaryMove& pendingMove() const { return pending_; }
  /// What the pending move would give (the period after it), shown beside the dragged boundary; the
  /// main window answers boundaryPreviewed() with it.
  void setPreviewText(const QString& text);
  const QString& previewText() const { return previewText_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  /// A boundary was dragged and released `shift` operators away: `ops` go to `device`.
  void boundaryDragged(const QList<int>& ops, int device);
  /// While dragging, the move changed: releasing now would move `ops` to `device` (empty: nothing).
  void boundaryPreviewed(const QList<int>& ops, int device);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;

 private:
  double plotLeft() const;
  double plotWidth() const;
  /// The topological position nearest to x (0..operators).
  int positionAt(double x) const;

  const partex::CostTable* table_ = nullptr;
  std::vector<partex::TaskId> topo_;
  std::vector<partex::PlanStage> stages_;
  std::vector<QColor> colors_;
  std::vector<QString> deviceNames_;
  int bottleneck_ = -1;
  int dragBoundary_ = -1;  ///< The boundary being dragged, -1 when none.
  int dragShift_ = 0;      ///< Operators it has moved so far (negative: left).
  partex::StageBoundaryMove pending_;
  QString previewText_;
};

}  // namespace partex::gui
