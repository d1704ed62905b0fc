#include "graph/graphview.h"

#include <QApplication>
#include <QContextMenuEvent>
#include <QElapsedTimer>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPixmap>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "graph/graphitems.h"
#include "graph/graphscene.h"
#include "graph/minimap.h"
#include "session/session.h"

namespace partex::gui {

static qint64 nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

GraphView::GraphView(Session* session, QWidget* parent) : QGraphicsView(parent), session_(session) {
  scene_ = new GraphScene(session, this);
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::RubberBandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setBackgroundBrush(QColor(250, 250, 250));
  setFocusPolicy(Qt::StrongFocus);
  connect(session_, &Session::modelChanged, this, [this] {
    const CostTable* t = session_->table();
    // A model with a block structure in its names (layers.N, blk.N, ...) opens as one box per block
    // at any size; others collapse into chunks only when too big to lay out operator by operator.
    // Calls of ONNX local functions are boxes too (inside a block, or on their own without blocks).
    const LoadedModel* m = session_->model();
    grouping_ = t ? groupByBlocks(*t, m ? functionCallsOf(*t, m->graph) : std::vector<std::string>{}) : Grouping{};
    grouped_ = grouping_.size() > 0;
    if (grouped_) {  // calls without blocks leave operators ungrouped: too many of them lay out slowly
      int shown = 0;
      for (int gi = 0; gi < grouping_.size(); ++gi) shown += grouping_.parentOf(gi) < 0 ? 1 : 0;
      for (int g : grouping_.groupOf) shown += g < 0 ? 1 : 0;
      if (shown > collapseAbove_) grouped_ = false;
    }
    if (!grouped_ && t && t->numTasks() > collapseAbove_) {
      grouping_ = groupOperators(*t, kGroupSize);
      grouped_ = true;
    }
    expanded_.assign(static_cast<size_t>(grouping_.size()), 0);
    openBodies_.clear();
    findCursor_ = -1;
    fitAfterLayout_ = true;
    scene_->clearGraph();  // its items point into the old cost table
    relayout();
  });
  ghost_ = new QLabel(this);
  ghost_->setWindowFlags(Qt::ToolTip);
  ghost_->setAttribute(Qt::WA_TransparentForMouseEvents);
  ghost_->hide();
  minimap_ = new MiniMap(this);
  minimap_->hide();
}

void GraphView::placeMiniMap() {
  // Follow the scene's aspect ratio (tall for CNN chains, wide for branchy graphs), within bounds.
  const QRect vp = viewport()->geometry();
  const QRectF sr = scene_->sceneRect();
  const double aspect = sr.height() > 0 ? sr.width() / sr.height() : 1.0;
  const int maxW = std::max(80, std::min(240, vp.width() / 4)), maxH = std::max(60, std::min(200, vp.height() / 3));
  int w = maxW, h = static_cast<int>(maxW / std::max(aspect, 1e-3));
  if (h > maxH) {
    h = maxH;
    w = std::max(40, static_cast<int>(maxH * aspect));
  }
  minimap_->setGeometry(vp.right() - w - 8, vp.bottom() - h - 8, w, h);
  minimap_->refit();
}

void GraphView::setMiniMapVisible(bool on) {
  minimap_->setVisible(on);
  if (on) {
    placeMiniMap();
    minimap_->raise();
  }
}

void GraphView::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  if (minimap_->isVisible()) placeMiniMap();
}

void GraphView::relayout() {
  const CostTable* t = session_->table();
  if (!t) {
    scene_->clearGraph();
    return;
  }
  pending_ = Pending{};
  pending_.display = buildDisplayGraph(*t, grouped_ ? &grouping_ : nullptr, expanded_);
  if (session_->model()) addBodies(pending_.display, session_->model()->graph, openBodies_);
  pending_.grouping = grouping_;
  pending_.grouped = grouped_;
  startLayout();
}

void GraphView::startLayout() {
  LayoutInput in;
  for (const auto& n : pending_.display.nodes) {
    if (n.group < 0)
      in.nodes.push_back({kNodeWidth, kNodeHeight});
    else
      in.nodes.push_back({kGroupWidth + 6, kGroupHeight + 6});
  }
  for (const auto& e : pending_.display.edges) in.edges.push_back({e.src, e.dst});
  layoutStartNs_ = nowNs();
  emit statusMessage(tr("Laying out %1 nodes...").arg(in.nodes.size()));
  // The newest layout wins: a relayout while one runs drops the older result.
  layoutJobs_.start(
      [in = std::move(in)](const std::atomic<bool>&) {
        Laid out;
        out.layout = layoutGraph(in);
        if (!out.layout) {
          out.layout = layoutByLevels(in);
          out.fallback = true;
        }
        return out;
      },
      [this](Laid laid) { onLayoutFinished(std::move(laid)); });
}

bool GraphView::layoutRunning() const {
  return layoutJobs_.isRunning();
}

void GraphView::onLayoutFinished(Laid laid) {
  const LayoutResult& lay = laid.layout.value();
  scene_->build(std::move(pending_.display), std::move(pending_.grouping), pending_.grouped, lay);
  lastLayoutMs_ = static_cast<double>(nowNs() - layoutStartNs_) / 1e6;
  layoutEngine_ = laid.fallback ? tr("level layout (Graphviz failed)") : tr("Graphviz dot");
  if (fitAfterLayout_) {
    fitAfterLayout_ = false;
    frameStart();
  }
  if (minimap_->isVisible()) placeMiniMap();
  if (centerAfterLayout_ >= 0) {
    centerOnOp(centerAfterLayout_);
    centerAfterLayout_ = -1;
  }
  emit statusMessage(tr("Laid out %1 nodes in %2 ms (%3)")
                         .arg(scene_->display().nodes.size())
                         .arg(lastLayoutMs_, 0, 'f', 0)
                         .arg(layoutEngine_));
  emit layoutReady();
}

QString GraphView::layoutSummary() const {
  const auto& d = scene_->display();
  if (!scene_->grouped()) return tr("%1 nodes").arg(d.nodes.size());
  return tr("%1 nodes (%2 operators in %3 groups)")
      .arg(d.nodes.size())
      .arg(d.nodeOfOp.size())
      .arg(scene_->grouping().size());
}

void GraphView::expandGroup(int group) {
  if (!grouped_ || group < 0 || group >= grouping_.size() || expanded_[static_cast<size_t>(group)]) return;
  expanded_[static_cast<size_t>(group)] = 1;
  centerAfterLayout_ = grouping_.ops[static_cast<size_t>(group)].front();
  relayout();
}

void GraphView::collapseGroup(int group) {
  if (!grouped_ || group < 0 || group >= grouping_.size() || !expanded_[static_cast<size_t>(group)]) return;
  expanded_[static_cast<size_t>(group)] = 0;
  centerAfterLayout_ = grouping_.ops[static_cast<size_t>(group)].front();
  relayout();
}

void GraphView::toggleBodies(int op) {
  if (!session_->model() || !hasBodies(session_->model()->graph, op)) return;
  auto it = std::find(openBodies_.begin(), openBodies_.end(), op);
  if (it == openBodies_.end())
    openBodies_.push_back(op);
  else
    openBodies_.erase(it);
  centerAfterLayout_ = op;
  relayout();
}

bool GraphView::bodiesShown(int op) const {
  return std::find(openBodies_.begin(), openBodies_.end(), op) != openBodies_.end();
}

QPoint GraphView::viewportPosOfOp(int op) const {
  QGraphicsItem* it = scene_->itemOfOp(op);
  return it ? mapFromScene(it->sceneBoundingRect().center()) : QPoint(-1, -1);
}

void GraphView::centerOnOp(int op) {
  if (QGraphicsItem* it = scene_->itemOfOp(op)) {
    if (transform().m11() < 0.5) {
      resetZoom();
      scale(0.8, 0.8);
    }
    centerOn(it);
  }
}

bool GraphView::findNext(const QString& text) {
  const CostTable* t = session_->table();
  if (!t || text.trimmed().isEmpty()) return false;
  const std::string needle = text.trimmed().toLower().toStdString();
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const int n = t->numTasks();
  for (int k = 1; k <= n; ++k) {
    const int op = (findCursor_ + k + n) % n;
    if (lower(t->taskNames[static_cast<size_t>(op)]).find(needle) == std::string::npos &&
        lower(t->taskTypes[static_cast<size_t>(op)]).find(needle) == std::string::npos)
      continue;
    findCursor_ = op;
    session_->setSelection({op});
    if (grouped_) {
      bool opened = false;  // the operator's group and every group around it
      for (int g : groupChain(grouping_, op))
        if (!expanded_[static_cast<size_t>(g)]) {
          expanded_[static_cast<size_t>(g)] = 1;
          opened = true;
        }
      if (opened) {
        centerAfterLayout_ = op;
        relayout();
        return true;
      }
    }
    centerOnOp(op);
    return true;
  }
  emit statusMessage(tr("No operator matches '%1'").arg(text));
  return false;
}

void GraphView::zoomBy(double factor) {
  const double s = transform().m11() * factor;
  if (s < 0.01 || s > 8) return;
  scale(factor, factor);
}

void GraphView::fitAll() {
  if (scene_->items().isEmpty()) return;
  fitInView(scene_->itemsBoundingRect(), Qt::KeepAspectRatio);
}

int GraphView::criticalStart() const {
  const CostTable* t = session_->table();
  if (!t) return -1;
  const auto& crit = session_->critical().task;
  const std::vector<TaskId> order = t->topoOrder();
  for (TaskId v : order)
    if (static_cast<size_t>(v) < crit.size() && crit[static_cast<size_t>(v)]) return v;
  return order.empty() ? -1 : order.front();
}

void GraphView::frameStart() {
  if (scene_->items().isEmpty()) return;
  fitAll();
  // Fitting a graph that does not fit at a readable zoom draws dots: start readable instead, on the
  // critical path's first operator, near the top of the view (the layout runs top down).
  if (transform().m11() >= kReadableScale) {
    if (transform().m11() > 1.0) {  // a small graph: actual size, centred
      resetZoom();
      centerOn(scene_->itemsBoundingRect().center());
    }
    return;
  }
  resetZoom();
  scale(kReadableScale, kReadableScale);
  const QRectF all = scene_->itemsBoundingRect();
  QRectF r = all;
  if (QGraphicsItem* it = scene_->itemOfOp(criticalStart())) r = it->sceneBoundingRect();
  const double halfH = viewport()->height() / kReadableScale / 2;
  const double top = std::max(all.top(), r.top() - 30 / kReadableScale);
  centerOn(r.center().x(), top + halfH);
  if (minimap_->isVisible()) minimap_->update();
}

void GraphView::resetZoom() {
  setTransform(QTransform());
}

void GraphView::setShowCriticalPath(bool on) {
  scene_->setShowCritical(on);
}

QGraphicsItem* GraphView::nodeItemAt(const QPoint& pos) const {
  for (QGraphicsItem* it : items(pos))
    if (it->type() == NodeItem::Type || it->type() == GroupItem::Type) return it;
  return nullptr;
}

void GraphView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::MiddleButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::AltModifier))) {
    panning_ = true;
    lastPanPos_ = e->position().toPoint();
    viewport()->setCursor(Qt::ClosedHandCursor);
    e->accept();
    return;
  }
  if (e->button() == Qt::LeftButton) {
    if (QGraphicsItem* it = nodeItemAt(e->position().toPoint())) {
      if (e->modifiers() & (Qt::ControlModifier | Qt::ShiftModifier)) {
        it->setSelected(!it->isSelected());
      } else if (!it->isSelected()) {
        scene_->clearSelection();
        it->setSelected(true);
      }
      pressOnNode_ = true;
      pressPos_ = e->position().toPoint();
      setFocus();
      e->accept();
      return;
    }
  }
  QGraphicsView::mousePressEvent(e);
}

void GraphView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  if (panning_) {
    const QPoint d = pos - lastPanPos_;
    lastPanPos_ = pos;
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - d.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y());
    e->accept();
    return;
  }
  if (pressOnNode_) {
    if (!dragging_ && (pos - pressPos_).manhattanLength() >= QApplication::startDragDistance()) {
      dragOps_ = scene_->selectedOps();
      if (!dragOps_.isEmpty()) {
        dragging_ = true;
        viewport()->setCursor(Qt::DragMoveCursor);
        setDragFeedback(dragOps_.size() == 1 ? tr("1 operator: drop on a device")
                                             : tr("%1 operators: drop on a device").arg(dragOps_.size()),
                        true);
      }
    }
    if (dragging_) {
      const QPoint global = e->globalPosition().toPoint();
      ghost_->move(global + QPoint(18, 14));
      if (!ghost_->isVisible()) ghost_->show();
      emit dragMoved(dragOps_, global);
    }
    e->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(e);
}

void GraphView::mouseReleaseEvent(QMouseEvent* e) {
  if (panning_) {
    panning_ = false;
    viewport()->unsetCursor();
    e->accept();
    return;
  }
  if (pressOnNode_) {
    const bool wasDragging = dragging_;
    const QList<int> ops = dragOps_;
    endDrag();
    if (wasDragging) emit dragDropped(ops, e->globalPosition().toPoint());
    e->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(e);
}

void GraphView::endDrag() {
  pressOnNode_ = false;
  dragging_ = false;
  dragOps_.clear();
  ghost_->hide();
  viewport()->unsetCursor();
}

void GraphView::setDragFeedback(const QString& text, bool allowed) {
  ghost_->setText(text);
  ghost_->setStyleSheet(
      allowed ? QStringLiteral("QLabel { background: #ffffe0; color: black; border: 1px solid #888; padding: 3px; }")
              : QStringLiteral("QLabel { background: #ffe0e0; color: #900; border: 1px solid #c00; padding: 3px; }"));
  ghost_->adjustSize();
  if (dragging_) viewport()->setCursor(allowed ? Qt::DragMoveCursor : Qt::ForbiddenCursor);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (QGraphicsItem* it = nodeItemAt(e->position().toPoint()); it && it->type() == GroupItem::Type) {
    expandGroup(static_cast<GroupItem*>(it)->group());
    e->accept();
    return;
  }
  if (QGraphicsItem* it = nodeItemAt(e->position().toPoint());
      it && it->type() == NodeItem::Type && session_->model() &&
      hasBodies(session_->model()->graph, static_cast<NodeItem*>(it)->op())) {
    toggleBodies(static_cast<NodeItem*>(it)->op());
    e->accept();
    return;
  }
  QGraphicsView::mouseDoubleClickEvent(e);
}

void GraphView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoomBy(std::pow(1.2, steps));
  e->accept();
}

void GraphView::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Escape && dragging_) {
    endDrag();
    emit dragCancelled();
    return;
  }
  if (e->key() == Qt::Key_Plus || e->key() == Qt::Key_Equal) {
    zoomBy(1.25);
    return;
  }
  if (e->key() == Qt::Key_F && !(e->modifiers() & (Qt::ControlModifier | Qt::AltModifier))) {
    fitAll();
    return;
  }
  if (e->key() == Qt::Key_Minus) {
    zoomBy(0.8);
    return;
  }
  QGraphicsView::keyPressEvent(e);
}

void GraphView::contextMenuEvent(QContextMenuEvent* e) {
  QGraphicsItem* it = nodeItemAt(e->pos());
  if (!it || !session_->hasModel()) {
    QGraphicsView::contextMenuEvent(e);
    return;
  }
  if (!it->isSelected()) {
    scene_->clearSelection();
    it->setSelected(true);
  }
  const QList<int> ops = scene_->selectedOps();
  QMenu menu(this);
  QMenu* move = menu.addMenu(tr("Move to"));
  for (int d = 0; d < session_->numDevices(); ++d) {
    QPixmap swatch(12, 12);
    swatch.fill(session_->deviceColor(d));
    const Status ok = session_->canMove(ops, d);
    QString label = QStringLiteral("&%1  %2").arg(d + 1).arg(session_->deviceLabel(d));
    QAction* a = move->addAction(QIcon(swatch), label);
    if (!ok) {
      a->setEnabled(false);
      a->setText(label + QStringLiteral("  (") + QString::fromStdString(ok.message()) + QStringLiteral(")"));
    }
    connect(a, &QAction::triggered, this, [this, ops, d] { (void)session_->moveOps(ops, d); });
  }
  bool allPinned = true;
  for (int op : ops) allPinned = allPinned && session_->isPinned(op);
  menu.addAction(allPinned ? tr("Unpin") : tr("Pin to current device"), this,
                 [this, ops, allPinned] { (void)session_->setPinned(ops, !allPinned); });
  if (it->type() == NodeItem::Type && session_->model() &&
      hasBodies(session_->model()->graph, static_cast<NodeItem*>(it)->op())) {
    const int op = static_cast<NodeItem*>(it)->op();
    menu.addAction(bodiesShown(op) ? tr("Hide bodies") : tr("Show bodies"), this, [this, op] { toggleBodies(op); });
  }
  if (it->type() == GroupItem::Type) {
    const int g = static_cast<GroupItem*>(it)->group();
    menu.addAction(tr("Expand group"), this, [this, g] { expandGroup(g); });
  } else if (grouped_ && it->type() == NodeItem::Type &&
             grouping_.groupOf[static_cast<size_t>(static_cast<NodeItem*>(it)->op())] >= 0) {
    const int g = grouping_.groupOf[static_cast<size_t>(static_cast<NodeItem*>(it)->op())];
    menu.addAction(tr("Collapse group"), this, [this, g] { collapseGroup(g); });
  }
  menu.exec(e->globalPos());
}

}  // namespace partex::gui
