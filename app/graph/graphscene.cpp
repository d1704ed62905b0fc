#include "graph/graphscene.h"

#include <algorithm>

#include "graph/graphitems.h"
#include "session/session.h"

namespace partex::gui {

GraphScene::GraphScene(Session* session, QObject* parent) : QGraphicsScene(parent), session_(session) {
  setItemIndexMethod(QGraphicsScene::BspTreeIndex);
  connect(session_, &Session::selectionChanged, this, &GraphScene::onSessionSelection);
  connect(session_, &Session::planChanged, this, [this] { update(); });
  connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::onSceneSelection);
}

GraphScene::~GraphScene() {
  syncing_ = true;
  blockSignals(true);
  clear();
}

void GraphScene::clearGraph() {
  syncing_ = true;
  clear();
  syncing_ = false;
  nodeItems_.clear();
  display_ = {};
  grouping_ = {};
  grouped_ = false;
}

void GraphScene::build(DisplayGraph display, Grouping grouping, bool grouped, const LayoutResult& layout) {
  clearGraph();
  display_ = std::move(display);
  grouping_ = std::move(grouping);
  grouped_ = grouped;
  nodeItems_.assign(display_.nodes.size(), nullptr);
  for (size_t i = 0; i < display_.nodes.size(); ++i) {
    const DisplayNode& n = display_.nodes[i];
    QGraphicsItem* item = n.op >= 0      ? static_cast<QGraphicsItem*>(new NodeItem(n.op))
                          : n.group >= 0 ? static_cast<QGraphicsItem*>(new GroupItem(n.group))
                                         : static_cast<QGraphicsItem*>(new BodyNodeItem(static_cast<int>(i)));
    if (i < layout.centers.size()) item->setPos(layout.centers[i].x, layout.centers[i].y);
    addItem(item);
    nodeItems_[i] = item;
  }
  for (size_t e = 0; e < display_.edges.size(); ++e) {
    static const std::vector<LayoutPoint> kNone;
    addItem(new EdgeItem(static_cast<int>(e), e < layout.edgePoints.size() ? layout.edgePoints[e] : kNone));
  }
  setSceneRect(itemsBoundingRect().adjusted(-40, -40, 40, 40));
  onSessionSelection(session_->selection());
}

QGraphicsItem* GraphScene::itemOfOp(int op) const {
  if (op < 0 || static_cast<size_t>(op) >= display_.nodeOfOp.size()) return nullptr;
  const int node = display_.nodeOfOp[static_cast<size_t>(op)];
  return node >= 0 && static_cast<size_t>(node) < nodeItems_.size() ? nodeItems_[static_cast<size_t>(node)] : nullptr;
}

QList<int> GraphScene::opsOf(const QGraphicsItem* item) const {
  QList<int> ops;
  if (!item) return ops;
  if (item->type() == NodeItem::Type) {
    ops << static_cast<const NodeItem*>(item)->op();
  } else if (item->type() == BodyNodeItem::Type) {
    const int node = static_cast<const BodyNodeItem*>(item)->displayNode();
    if (node >= 0 && static_cast<size_t>(node) < display_.nodes.size())
      ops << display_.nodes[static_cast<size_t>(node)].parentOp;
  } else if (item->type() == GroupItem::Type) {
    const int g = static_cast<const GroupItem*>(item)->group();
    if (g >= 0 && g < grouping_.size())
      for (TaskId v : grouping_.ops[static_cast<size_t>(g)]) ops << v;
  }
  return ops;
}

QList<int> GraphScene::selectedOps() const {
  QList<int> ops;
  for (QGraphicsItem* it : selectedItems()) ops << opsOf(it);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

void GraphScene::setShowCritical(bool on) {
  showCritical_ = on;
  update();
}

void GraphScene::onSessionSelection(const QList<int>& ops) {
  if (syncing_) return;
  syncing_ = true;
  // Select exactly the items that show the selected operators.
  std::vector<uint8_t> want(nodeItems_.size(), 0);
  for (int op : ops) {
    if (op < 0 || static_cast<size_t>(op) >= display_.nodeOfOp.size()) continue;
    const int node = display_.nodeOfOp[static_cast<size_t>(op)];
    if (node >= 0 && static_cast<size_t>(node) < want.size()) want[static_cast<size_t>(node)] = 1;
  }
  for (size_t i = 0; i < nodeItems_.size(); ++i)
    if (nodeItems_[i]->isSelected() != static_cast<bool>(want[i])) nodeItems_[i]->setSelected(want[i]);
  syncing_ = false;
}

void GraphScene::onSceneSelection() {
  if (syncing_) return;
  syncing_ = true;
  session_->setSelection(selectedOps());
  syncing_ = false;
}

}  // namespace partex::gui
