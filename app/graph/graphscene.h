#pragma once
/// \file The scene of the graph view: builds one item per display node and edge from a layout and
/// keeps the scene selection and the session selection in step.

#include <QGraphicsScene>
#include <QList>

#include <vector>

#include "graph/displaygraph.h"
#include "graph/layout.h"

namespace partex::gui {

class Session;
class NodeItem;
class GroupItem;
class EdgeItem;

/// See the file comment.
class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  GraphScene(Session* session, QObject* parent = nullptr);
  /// Deletes the items without telling the session (it may be gone already).
  ~GraphScene() override;
  Session* session() const { return session_; }

  /// Replaces every item: `display` laid out by `layout` (same node and edge indexes).
  void build(DisplayGraph display, Grouping grouping, bool grouped, const LayoutResult& layout);
  void clearGraph();
  const DisplayGraph& display() const { return display_; }
  const Grouping& grouping() const { return grouping_; }
  bool grouped() const { return grouped_; }

  /// The item showing `op`: its own node, or its collapsed group; nullptr when none.
  QGraphicsItem* itemOfOp(int op) const;
  /// Operators an item stands for (a node: one; a group: all of its members).
  QList<int> opsOf(const QGraphicsItem* item) const;
  /// Operators of every selected item.
  QList<int> selectedOps() const;

  bool showCritical() const { return showCritical_; }
  void setShowCritical(bool on);

 private:
  void onSessionSelection(const QList<int>& ops);
  void onSceneSelection();

  Session* session_;
  DisplayGraph display_;
  Grouping grouping_;
  bool grouped_ = false;
  std::vector<QGraphicsItem*> nodeItems_;  ///< Per display node.
  bool showCritical_ = false;
  bool syncing_ = false;
};

}  // namespace partex::gui
