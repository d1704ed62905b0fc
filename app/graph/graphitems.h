#pragma once
/// \file The graph's visual elements, one item class each (Qt diagramscene style). Items hold ids
/// and ask the scene's session for everything else at paint time, so a plan change only needs an
/// update(), never a rebuild.

#include <QGraphicsItem>
#include <QPainterPath>

#include <vector>

#include "graph/layout.h"

namespace partex::gui {

class GraphScene;

/// Size of an operator box and of a group box, in points.
inline constexpr double kNodeWidth = 170;
inline constexpr double kNodeHeight = 58;
inline constexpr double kGroupWidth = 220;
inline constexpr double kGroupHeight = 66;

/// One operator: op type, name and output shape on its device's colour; a pin mark when pinned;
/// a red border when on the critical path and that overlay is on.
class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  explicit NodeItem(int op);
  int type() const override { return Type; }
  int op() const { return op_; }
  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int op_;
};

/// A collapsed group of operators: its name and size, filled with the majority device's colour and
/// a bar showing each device's share. Double-click expands it.
class GroupItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  explicit GroupItem(int group);
  int type() const override { return Type; }
  int group() const { return group_; }
  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int group_;
};

/// A node of an open control-flow operator's body: its op type and name, in a lighter shade of its
/// operator's device colour with a dashed border (it runs inside that operator, on its device), and the
/// body it belongs to. Selecting it selects its operator.
class BodyNodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 4 };
  /// `displayNode` indexes the scene's DisplayGraph::nodes.
  explicit BodyNodeItem(int displayNode);
  int type() const override { return Type; }
  int displayNode() const { return node_; }
  QRectF boundingRect() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int node_;
};

/// A data dependency between two display nodes (all the cost-table edges between them). Edges that
/// cross devices are drawn thick and labelled with the bytes sent and the transfer time; a scheduling
/// instance's edges are all labelled with the data they carry (its graphs are about their edges).
class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  /// `displayEdge` indexes the scene's DisplayGraph::edges; `points` are Graphviz spline points.
  EdgeItem(int displayEdge, const std::vector<LayoutPoint>& points);
  int type() const override { return Type; }
  int displayEdge() const { return edge_; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  /// Bytes and microseconds of the transfers this edge causes under the current plan (0 when none).
  void transfer(int64_t* bytes, double* us, bool* critical) const;
  /// The label drawn beside the edge at full detail ("" when none): "2 MB, 4.1 us" across devices; on
  /// an instance also the data of an edge within a device ("2 MB", or "c 18 us" for a fixed transfer
  /// time).
  QString label() const;

 private:
  int edge_;
  QPainterPath path_;
  QPointF labelPos_;
  QPointF tip_;
  QPointF tipFrom_;
  QRectF bounds_;
};

}  // namespace partex::gui
