#include "graph/graphitems.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <algorithm>
#include <cmath>

#include "gantt/timescale.h"
#include "graph/graphscene.h"
#include "session/palette.h"
#include "session/session.h"
#include "support/strings.h"

namespace partex::gui {

namespace {

GraphScene* sceneOf(const QGraphicsItem* item) {
  return static_cast<GraphScene*>(item->scene());
}

/// "1x64x56x56" for the first output of `op`; "" when unknown.
QString outputShape(const Session* s, int op) {
  const LoadedModel* m = s->model();
  if (!m || op < 0 || static_cast<size_t>(op) >= m->graph.nodes.size()) return {};
  for (ValueId v : m->graph.nodes[static_cast<size_t>(op)].outputs) {
    if (v < 0) continue;
    const Value& val = m->graph.values[static_cast<size_t>(v)];
    if (!val.shapeKnown) return QStringLiteral("?");
    return QString::fromStdString(shapeToString(val.shape));
  }
  return {};
}

/// A pin: white head with a dark rim and a needle, at `c`.
void drawPin(QPainter* p, QPointF c) {
  p->setPen(QPen(QColor(40, 40, 40), 1.5));
  p->drawLine(c + QPointF(0, 4), c + QPointF(-3, 11));
  p->setBrush(QColor(220, 30, 30));
  p->drawEllipse(c, 5, 5);
}

const QColor kCritical(200, 0, 0);
const QColor kCrossEdge(232, 89, 12);

}  // namespace

// --- NodeItem -------------------------------------------------------------------------------------

NodeItem::NodeItem(int op) : op_(op) {
  setFlag(ItemIsSelectable);
  setAcceptHoverEvents(false);
}

QRectF NodeItem::boundingRect() const {
  return QRectF(-kNodeWidth / 2 - 3, -kNodeHeight / 2 - 8, kNodeWidth + 12, kNodeHeight + 11);
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphScene* sc = sceneOf(this);
  const Session* s = sc->session();
  const QRectF r(-kNodeWidth / 2, -kNodeHeight / 2, kNodeWidth, kNodeHeight);
  const QColor fill = s->deviceColor(s->deviceOf(op_));
  const double lod = option->levelOfDetailFromTransform(p->worldTransform());
  const bool critical = sc->showCritical() && static_cast<size_t>(op_) < s->critical().task.size() &&
                        s->critical().task[static_cast<size_t>(op_)];
  QPen border(fill.darker(160), 1);
  if (critical) border = QPen(kCritical, 4);
  if (isSelected()) border = QPen(QColor(20, 20, 20), 4, Qt::SolidLine);
  if (lod < 0.3) {  // far away: a coloured block is all that can be seen
    p->setPen(isSelected() || critical ? border : Qt::NoPen);
    p->setBrush(fill);
    p->drawRect(r);
    return;
  }
  p->setPen(border);
  p->setBrush(fill);
  p->drawRoundedRect(r, 6, 6);
  const QColor text = textColorOn(fill);
  p->setPen(text);
  const Session* ss = s;
  const CostTable* t = ss->table();
  if (!t || op_ >= t->numTasks()) return;
  QFont f = p->font();
  f.setPointSizeF(9);
  f.setBold(true);
  p->setFont(f);
  // An operator: its type, name and output shape; an instance's task: its name, its type (WfCommons'
  // category, if any) and its time on its device.
  const bool instance = s->isInstance();
  const QString type = QString::fromStdString(t->taskTypes[static_cast<size_t>(op_)]);
  const QString taskName = QString::fromStdString(t->taskNames[static_cast<size_t>(op_)]);
  const QString title = instance ? taskName : type;
  if (lod < 0.5) {
    p->drawText(r, Qt::AlignCenter, title);
  } else {
    const QRectF inner = r.adjusted(6, 3, -6, -3);
    const double lh = inner.height() / 3;
    p->drawText(QRectF(inner.left(), inner.top(), inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter,
                QFontMetricsF(f).elidedText(title, Qt::ElideMiddle, inner.width()));
    f.setBold(false);
    f.setPointSizeF(8);
    p->setFont(f);
    QFontMetricsF fm(f);
    const QString name = fm.elidedText(instance ? type : taskName, Qt::ElideMiddle, inner.width());
    p->drawText(QRectF(inner.left(), inner.top() + lh, inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter, name);
    const DeviceId d = s->deviceOf(op_);
    const QString third = !instance                       ? outputShape(s, op_)
                          : d >= 0 && d < t->numDevices() ? TimeScale::formatDuration(t->w(op_, d))
                                                          : QString();
    const QString shape = fm.elidedText(third, Qt::ElideRight, inner.width());
    p->drawText(QRectF(inner.left(), inner.top() + 2 * lh, inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter, shape);
  }
  if (s->isPinned(op_)) drawPin(p, QPointF(r.right() - 4, r.top() - 2));
}

// --- GroupItem ------------------------------------------------------------------------------------

GroupItem::GroupItem(int group) : group_(group) {
  setFlag(ItemIsSelectable);
}

QRectF GroupItem::boundingRect() const {
  return QRectF(-kGroupWidth / 2 - 3, -kGroupHeight / 2 - 3, kGroupWidth + 12, kGroupHeight + 12);
}

void GroupItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphScene* sc = sceneOf(this);
  const Session* s = sc->session();
  const QRectF r(-kGroupWidth / 2, -kGroupHeight / 2, kGroupWidth, kGroupHeight);
  if (group_ < 0 || group_ >= sc->grouping().size()) return;
  const auto& ops = sc->grouping().ops[static_cast<size_t>(group_)];
  // Device shares (by operator count) and whether any member is critical or pinned.
  std::vector<int> count(static_cast<size_t>(std::max(1, s->numDevices())), 0);
  bool critical = false, pinned = false;
  for (int op : ops) {
    const int d = s->deviceOf(op);
    if (d >= 0 && static_cast<size_t>(d) < count.size()) ++count[static_cast<size_t>(d)];
    critical = critical ||
               (static_cast<size_t>(op) < s->critical().task.size() && s->critical().task[static_cast<size_t>(op)]);
    pinned = pinned || s->isPinned(op);
  }
  critical = critical && sc->showCritical();
  int major = 0;
  for (size_t d = 1; d < count.size(); ++d)
    if (count[d] > count[static_cast<size_t>(major)]) major = static_cast<int>(d);
  const QColor fill = s->deviceColor(major);
  QPen border(fill.darker(170), 1.5);
  if (critical) border = QPen(kCritical, 4);
  if (isSelected()) border = QPen(QColor(20, 20, 20), 4);
  const double lod = option->levelOfDetailFromTransform(p->worldTransform());
  // A second box behind: a stack of operators.
  p->setPen(QPen(fill.darker(170), 1));
  p->setBrush(fill.lighter(130));
  p->drawRect(r.translated(6, 6));
  p->setPen(border);
  p->setBrush(fill);
  p->drawRect(r);
  // Share bar along the bottom.
  const QRectF bar(r.left() + 1, r.bottom() - 9, r.width() - 2, 8);
  double x = bar.left();
  for (size_t d = 0; d < count.size(); ++d) {
    if (!count[d]) continue;
    const double w = bar.width() * count[d] / static_cast<double>(ops.size());
    p->fillRect(QRectF(x, bar.top(), w, bar.height()), s->deviceColor(static_cast<int>(d)));
    x += w;
  }
  if (lod < 0.3) return;
  p->setPen(textColorOn(fill));
  QFont f = p->font();
  f.setPointSizeF(9);
  f.setBold(true);
  p->setFont(f);
  QFontMetricsF fm(f);
  const QRectF inner = r.adjusted(6, 3, -6, -12);
  const QString name = fm.elidedText(QString::fromStdString(sc->grouping().names[static_cast<size_t>(group_)]),
                                     Qt::ElideMiddle, inner.width());
  p->drawText(QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2), Qt::AlignLeft | Qt::AlignVCenter,
              name);
  f.setBold(false);
  p->setFont(f);
  p->drawText(QRectF(inner.left(), inner.top() + inner.height() / 2, inner.width(), inner.height() / 2),
              Qt::AlignLeft | Qt::AlignVCenter, QObject::tr("%1 ops, double-click to expand").arg(ops.size()));
  if (pinned) drawPin(p, QPointF(r.right() - 4, r.top() - 2));
}

// --- BodyNodeItem ---------------------------------------------------------------------------------

BodyNodeItem::BodyNodeItem(int displayNode) : node_(displayNode) {
  setFlag(ItemIsSelectable);
}

QRectF BodyNodeItem::boundingRect() const {
  return QRectF(-kNodeWidth / 2 - 3, -kNodeHeight / 2 - 3, kNodeWidth + 6, kNodeHeight + 6);
}

void BodyNodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  const GraphScene* sc = sceneOf(this);
  const Session* s = sc->session();
  if (node_ < 0 || static_cast<size_t>(node_) >= sc->display().nodes.size() || !s->model()) return;
  const DisplayNode& dn = sc->display().nodes[static_cast<size_t>(node_)];
  const Graph& g = s->model()->graph;
  if (dn.parentOp < 0 || static_cast<size_t>(dn.parentOp) >= g.nodes.size()) return;
  const Node& parent = g.nodes[static_cast<size_t>(dn.parentOp)];
  if (dn.body < 0 || static_cast<size_t>(dn.body) >= parent.subgraphs.size()) return;
  const auto& [bodyName, body] = parent.subgraphs[static_cast<size_t>(dn.body)];
  if (!body || dn.bodyNode < 0 || static_cast<size_t>(dn.bodyNode) >= body->nodes.size()) return;
  const Node& n = body->nodes[static_cast<size_t>(dn.bodyNode)];
  const QRectF r(-kNodeWidth / 2, -kNodeHeight / 2, kNodeWidth, kNodeHeight);
  const QColor fill = s->deviceColor(s->deviceOf(dn.parentOp)).lighter(135);
  QPen border(fill.darker(170), 1.5, Qt::DashLine);
  if (isSelected()) border = QPen(QColor(20, 20, 20), 4, Qt::DashLine);
  p->setPen(border);
  p->setBrush(fill);
  p->drawRoundedRect(r, 6, 6);
  if (option->levelOfDetailFromTransform(p->worldTransform()) < 0.3) return;
  p->setPen(textColorOn(fill));
  QFont f = p->font();
  f.setPointSizeF(9);
  f.setBold(true);
  p->setFont(f);
  const QRectF inner = r.adjusted(6, 3, -6, -3);
  const double lh = inner.height() / 3;
  QFontMetricsF fmb(f);
  p->drawText(QRectF(inner.left(), inner.top(), inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter,
              fmb.elidedText(QString::fromStdString(n.opType), Qt::ElideMiddle, inner.width()));
  f.setBold(false);
  f.setPointSizeF(8);
  p->setFont(f);
  QFontMetricsF fm(f);
  p->drawText(QRectF(inner.left(), inner.top() + lh, inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter,
              fm.elidedText(QString::fromStdString(n.name), Qt::ElideMiddle, inner.width()));
  p->drawText(QRectF(inner.left(), inner.top() + 2 * lh, inner.width(), lh), Qt::AlignLeft | Qt::AlignVCenter,
              fm.elidedText(
                  QObject::tr("in %1 of %2").arg(QString::fromStdString(bodyName), QString::fromStdString(parent.name)),
                  Qt::ElideMiddle, inner.width()));
}

// --- EdgeItem -------------------------------------------------------------------------------------

EdgeItem::EdgeItem(int displayEdge, const std::vector<LayoutPoint>& pts) : edge_(displayEdge) {
  setZValue(-1);
  if (!pts.empty()) {
    path_.moveTo(pts[0].x, pts[0].y);
    for (size_t i = 1; i + 2 < pts.size(); i += 3)
      path_.cubicTo(pts[i].x, pts[i].y, pts[i + 1].x, pts[i + 1].y, pts[i + 2].x, pts[i + 2].y);
    tip_ = QPointF(pts.back().x, pts.back().y);
    // Direction of the arrow: the last control point that differs from the tip.
    tipFrom_ = tip_ - QPointF(0, 1);
    for (size_t i = pts.size(); i-- > 0;) {
      const QPointF q(pts[i].x, pts[i].y);
      if (std::hypot(q.x() - tip_.x(), q.y() - tip_.y()) > 0.5) {
        tipFrom_ = q;
        break;
      }
    }
  }
  labelPos_ = path_.isEmpty() ? QPointF() : path_.pointAtPercent(0.5);
  bounds_ = path_.boundingRect().adjusted(-8, -8, 8, 8).united(QRectF(labelPos_ + QPointF(4, -14), QSizeF(170, 20)));
}

QRectF EdgeItem::boundingRect() const {
  return bounds_;
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker st;
  st.setWidth(6);
  return st.createStroke(path_);
}

void EdgeItem::transfer(int64_t* bytes, double* us, bool* critical) const {
  *bytes = 0;
  *us = 0;
  *critical = false;
  const GraphScene* sc = sceneOf(this);
  const Session* s = sc->session();
  const CostTable* t = s->table();
  if (!t || edge_ < 0 || static_cast<size_t>(edge_) >= sc->display().edges.size()) return;
  for (int32_t e : sc->display().edges[static_cast<size_t>(edge_)].costEdges) {
    if (e < 0 || static_cast<size_t>(e) >= t->edges.size()) continue;
    const Edge& ce = t->edges[static_cast<size_t>(e)];
    const int a = s->deviceOf(ce.src), b = s->deviceOf(ce.dst);
    if (static_cast<size_t>(e) < s->critical().edge.size() && s->critical().edge[static_cast<size_t>(e)])
      *critical = true;
    if (a == b || a < 0 || b < 0) continue;
    *bytes += ce.bytes;
    *us += t->comm(e, a, b);
  }
}

QString EdgeItem::label() const {
  int64_t bytes = 0;
  double us = 0;
  bool critical = false;
  transfer(&bytes, &us, &critical);
  const GraphScene* sc = sceneOf(this);
  const Session* s = sc ? sc->session() : nullptr;
  const bool instance = s && s->isInstance();
  if (bytes > 0 || us > 0) {
    // A task graph's fixed transfer time carries no bytes.
    // An instance's times span nanoseconds to hours (WfCommons' seconds): in a fitting unit.
    const QString time = instance ? TimeScale::formatDuration(us) : QString::number(us, 'g', 3) + QStringLiteral(" us");
    if (bytes == 0 && instance) return time;
    const QString size = s ? s->bytesText(bytes) : QString::fromStdString(humanBytes(static_cast<double>(bytes)));
    // Shared memory between the two devices: the tensor crosses devices but nothing is copied.
    return us > 0 ? QStringLiteral("%1, %2").arg(size, time) : QObject::tr("%1, shared memory").arg(size);
  }
  const CostTable* t = s ? s->table() : nullptr;
  if (!t || !instance || edge_ < 0 || static_cast<size_t>(edge_) >= sc->display().edges.size()) return {};
  // Within one device nothing moves; an instance's edge still shows what it would carry.
  int64_t data = 0;
  double fixed = 0;
  for (int32_t e : sc->display().edges[static_cast<size_t>(edge_)].costEdges) {
    if (e < 0 || static_cast<size_t>(e) >= t->edges.size()) continue;
    data += t->edges[static_cast<size_t>(e)].bytes;
    fixed += std::max(0.0, t->edges[static_cast<size_t>(e)].fixedUs);
  }
  if (data > 0) return s->bytesText(data);
  if (fixed > 0) return QStringLiteral("c %1").arg(TimeScale::formatDuration(fixed));
  return {};
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) {
  int64_t bytes = 0;
  double us = 0;
  bool critical = false;
  transfer(&bytes, &us, &critical);
  const GraphScene* sc = sceneOf(this);
  critical = critical && sc->showCritical();
  const bool cross = bytes > 0 || us > 0;
  QColor c = cross ? kCrossEdge : QColor(120, 120, 120);
  double w = cross ? 2.5 : 1.0;
  if (critical) {
    c = kCritical;
    w = 3.5;
  }
  const double lod = option->levelOfDetailFromTransform(p->worldTransform());
  p->setPen(QPen(c, w, cross && !critical ? Qt::DashLine : Qt::SolidLine));
  p->setBrush(Qt::NoBrush);
  if (lod < 0.3) {
    p->drawLine(path_.pointAtPercent(0), tip_);
    return;
  }
  p->drawPath(path_);
  // Arrow head.
  const QPointF d = tip_ - tipFrom_;
  const double len = std::hypot(d.x(), d.y());
  if (len > 0) {
    const QPointF u = d / len, n(-u.y(), u.x());
    const double a = 7 + w;
    QPolygonF head;
    head << tip_ << tip_ - u * a + n * (a / 2.2) << tip_ - u * a - n * (a / 2.2);
    p->setPen(Qt::NoPen);
    p->setBrush(c);
    p->drawPolygon(head);
  }
  const QString text = lod >= 0.45 ? label() : QString();
  if (!text.isEmpty()) {
    QFont f = p->font();
    f.setPointSizeF(7.5);
    p->setFont(f);
    QFontMetricsF fm(f);
    QRectF box(labelPos_ + QPointF(4, -13), QSizeF(fm.horizontalAdvance(text) + 6, fm.height() + 2));
    p->setPen(Qt::NoPen);
    p->setBrush(QColor(255, 255, 255, 220));
    p->drawRect(box);
    p->setPen(c.darker(130));
    p->drawText(box, Qt::AlignCenter, text);
  }
}

}  // namespace partex::gui
