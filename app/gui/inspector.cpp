#include "gui/inspector.h"

#include <map>
#include <optional>

#include "session/session.h"
#include "sim/memory.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex::gui {

namespace {

QString esc(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

QString swatch(const QColor& c) {
  return QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;</span>").arg(c.name());
}

QString us(double v) {
  return (v < 1 ? QString::number(v, 'g', 3) : QString::number(v, 'f', 1)) + QStringLiteral(" us");
}

/// A transfer's time, or "no copy" over shared memory.
QString xfer(double v) {
  return v > 0 ? us(v) : QObject::tr("no copy (shared memory)");
}

QString bytes(int64_t b) {
  return QString::fromStdString(humanBytes(static_cast<double>(b)));
}

/// Bytes exact and in MiB, as core's formatBytes: "16,777,216 bytes (16.0 MiB)"; "none" for 0.
QString memoryText(int64_t b) {
  return b > 0 ? QString::fromStdString(formatBytes(b)) : QObject::tr("none");
}

/// A device's capacity minus its peak under the current plan; "unlimited" without a capacity, and
/// the excess in red when the plan is over it.
QString headroomText(const Session& s, int dev) {
  const std::optional<int64_t> room = s.headroomOf(dev);
  if (!room) return QObject::tr("unlimited (no capacity set)");
  const auto& m = s.memory()[static_cast<size_t>(dev)];
  const QString of = QObject::tr(" (capacity %1, peak %2)").arg(memoryText(m.capacity), memoryText(m.peak));
  if (*room < 0)
    return QObject::tr("<font color=#c0392b><b>over capacity by %1</b></font>").arg(memoryText(-*room)) + of;
  return QString::fromStdString(formatBytes(*room)) + of;
}

QString attrText(const Attribute& a) {
  struct V {
    QString operator()(std::monostate) const { return QStringLiteral("-"); }
    QString operator()(int64_t v) const { return QString::number(v); }
    QString operator()(double v) const { return QString::number(v); }
    QString operator()(const std::string& v) const { return QString::fromStdString(v).left(80); }
    QString operator()(const std::vector<int64_t>& v) const {
      QStringList p;
      for (auto x : v) p << QString::number(x);
      return QStringLiteral("[") + p.join(QStringLiteral(", ")) + QStringLiteral("]");
    }
    QString operator()(const std::vector<double>& v) const {
      QStringList p;
      for (auto x : v) p << QString::number(x);
      return QStringLiteral("[") + p.join(QStringLiteral(", ")) + QStringLiteral("]");
    }
    QString operator()(const std::vector<std::string>& v) const {
      QStringList p;
      for (const auto& x : v) p << QString::fromStdString(x);
      return QStringLiteral("[") + p.join(QStringLiteral(", ")) + QStringLiteral("]");
    }
    QString operator()(const Attribute::TensorInfo& t) const {
      return QStringLiteral("tensor %1 %2")
          .arg(QString::fromLatin1(dtypeName(t.dtype)), QString::fromStdString(shapeToString(t.dims)));
    }
  };
  return std::visit(V{}, a.value).toHtmlEscaped();
}

QString valueText(const Graph& g, ValueId v) {
  if (v < 0) return QStringLiteral("<i>(omitted)</i>");
  const Value& val = g.values[static_cast<size_t>(v)];
  QString s = esc(val.name) + QStringLiteral(": ") + QString::fromLatin1(dtypeName(val.dtype)) + QLatin1Char(' ') +
              (val.shapeKnown ? esc(shapeToString(val.shape)) : QStringLiteral("?"));
  if (val.isWeight) s += QStringLiteral(" <i>(weight)</i>");
  if (val.isGraphInput) s += QStringLiteral(" <i>(model input)</i>");
  if (val.isGraphOutput) s += QStringLiteral(" <i>(model output)</i>");
  return s;
}

}  // namespace

QString inspectorHtml(const Session& s, const QList<int>& selection) {
  const CostTable* t = s.table();
  if (!t) return QObject::tr("<p>No model loaded.</p>");
  if (selection.isEmpty())
    return QObject::tr(
        "<p>Select an operator in the graph (click, Ctrl-click or drag a rubber band) to see its costs on every "
        "device, its transfers and why it sits where it is.</p><p>Drag a selection onto a device in the palette, "
        "press 1-9, or use the context menu to move it; P pins it.</p>");
  const auto& tl = s.timeline();
  if (selection.size() > 1) {
    std::map<int, int> perDevice;
    double work = 0;
    for (int op : selection) {
      ++perDevice[s.deviceOf(op)];
      if (static_cast<size_t>(op) < tl.tasks.size())
        work += tl.tasks[static_cast<size_t>(op)].end - tl.tasks[static_cast<size_t>(op)].start;
    }
    QString h = QObject::tr("<h3>%1 operators selected</h3><p>Summed run time %2</p><table>")
                    .arg(selection.size())
                    .arg(us(work));
    for (auto [d, n] : perDevice)
      h += QStringLiteral("<tr><td>%1 %2</td><td align=right>%3</td></tr>")
               .arg(swatch(s.deviceColor(d)), s.deviceLabel(d))
               .arg(n);
    return h + QStringLiteral("</table>");
  }
  const int op = selection.first();
  if (op < 0 || op >= t->numTasks()) return {};
  const int dev = s.deviceOf(op);
  QString h;
  h += QStringLiteral("<h3>%1</h3>").arg(esc(t->taskNames[static_cast<size_t>(op)]));
  const LoadedInstance* inst = s.instance();
  if (inst && t->taskTypes[static_cast<size_t>(op)].empty())
    h += QObject::tr("<p>task #%1 &nbsp; on %2 <b>%3</b>").arg(op).arg(swatch(s.deviceColor(dev)), s.deviceLabel(dev));
  else
    h += QObject::tr("<p><b>%1</b> &nbsp; %2 #%3 &nbsp; on %4 <b>%5</b>")
             .arg(esc(t->taskTypes[static_cast<size_t>(op)]), inst ? QObject::tr("task") : QObject::tr("operator"))
             .arg(op)
             .arg(swatch(s.deviceColor(dev)), s.deviceLabel(dev));
  if (static_cast<size_t>(op) < tl.tasks.size())
    h += QObject::tr(" &nbsp; %1 to %2")
             .arg(us(tl.tasks[static_cast<size_t>(op)].start), us(tl.tasks[static_cast<size_t>(op)].end));
  h += QStringLiteral("</p>");
  if (const FusedKernel* k = s.fusedKernelOf(op)) {
    QStringList names;
    for (int v : k->ops) {
      const QString name = esc(t->taskNames[static_cast<size_t>(v)]);
      names << (v == op ? QStringLiteral("<b>%1</b>").arg(name) : name);
    }
    h += QObject::tr("<p><b>Fused kernel:</b> %1 on %2 &nbsp; one kernel, %3 to %4; its time is on %5</p>")
             .arg(names.join(QStringLiteral(" + ")), s.deviceLabel(k->device), us(k->startUs), us(k->endUs),
                  esc(t->taskNames[static_cast<size_t>(k->last())]));
  }
  h +=
      QObject::tr("<p><b>Why here:</b> %1.</p>").arg(s.placementReasons(op).join(QStringLiteral("; ")).toHtmlEscaped());

  // Cost per device.
  h += QObject::tr(
      "<table border=0 cellspacing=0 cellpadding=2><tr><th align=left>Device</th><th align=right>Time</th><th "
      "align=left>Source</th></tr>");
  const LoadedModel* m = s.model();
  for (int d = 0; d < t->numDevices(); ++d) {
    QString cost;
    if (t->canRun(op, d)) {
      cost = us(t->w(op, d));
    } else {
      std::string reason = "cannot run";
      if (m && static_cast<size_t>(d) < s.platform().devices.size()) {
        std::string r;
        if (!deviceSupports(s.platform().devices[static_cast<size_t>(d)], m->graph, op, &r))
          reason = "cannot run: " + r;
      }
      cost = QStringLiteral("<font color=#a00>%1</font>").arg(esc(reason));
    }
    const QString prov = !t->canRun(op, d) ? QString()
                         : inst            ? QObject::tr("instance")
                                           : QString::fromLatin1(provenanceName(
                                                 t->provenance[static_cast<size_t>(op) * static_cast<size_t>(t->numDevices()) +
                                                    static_cast<size_t>(d)]));
    h += QStringLiteral("<tr><td>%1 %2%3</td><td align=right>%4</td><td>%5</td></tr>")
             .arg(swatch(s.deviceColor(d)), s.deviceLabel(d), d == dev ? QStringLiteral(" &#9664;") : QString(), cost,
                  prov);
  }
  h += QStringLiteral("</table>");

  // Memory: what the operator brings to its device, and the room left there under this plan.
  h += QObject::tr("<p><b>Memory:</b> weights %1; headroom on %2: %3</p>")
           .arg(memoryText(s.weightBytesOf(op)), s.deviceLabel(dev), headroomText(s, dev));

  // Transfers the current plan causes.
  QStringList in, out;
  for (int32_t e : t->inEdges[static_cast<size_t>(op)]) {
    const Edge& ce = t->edges[static_cast<size_t>(e)];
    const int a = s.deviceOf(ce.src);
    if (a == dev) continue;
    in << QObject::tr("from %1 on %2: %3, %4")
              .arg(esc(t->taskNames[static_cast<size_t>(ce.src)]), s.deviceLabel(a), s.bytesText(ce.bytes),
                   xfer(t->comm(e, a, dev)));
  }
  for (int32_t e : t->outEdges[static_cast<size_t>(op)]) {
    const Edge& ce = t->edges[static_cast<size_t>(e)];
    const int b = s.deviceOf(ce.dst);
    if (b == dev) continue;
    out << QObject::tr("to %1 on %2: %3, %4")
               .arg(esc(t->taskNames[static_cast<size_t>(ce.dst)]), s.deviceLabel(b), s.bytesText(ce.bytes),
                    xfer(t->comm(e, dev, b)));
  }
  h += QObject::tr("<p><b>Transfers in:</b> %1<br><b>Transfers out:</b> %2</p>")
           .arg(in.isEmpty() ? QObject::tr("none") : in.join(QStringLiteral("<br>")),
                out.isEmpty() ? QObject::tr("none") : out.join(QStringLiteral("<br>")));

  if (inst)
    h += QObject::tr(
             "<p><i>A task of the %1 %2: its costs and transfers are the file's own; there is no ONNX "
             "operator behind it, so no work, shapes or kernel to show.</i></p>")
             .arg(QString::fromStdString(inst->formatTitle()), esc(baseName(inst->path)));
  if (m && static_cast<size_t>(op) < m->graph.nodes.size()) {
    const Node& n = m->graph.nodes[static_cast<size_t>(op)];
    const OpWork& w = m->work[static_cast<size_t>(op)];
    h += QObject::tr("<p><b>Work:</b> %1 MACs, %2 FLOPs, reads %3 (weights %4), writes %5, class %6%7</p>")
             .arg(QString::fromStdString(withCommas(static_cast<uint64_t>(w.macs))),
                  QString::fromStdString(withCommas(static_cast<uint64_t>(w.flops))), bytes(w.bytesRead()),
                  bytes(w.bytesReadWeights), bytes(w.bytesWritten), QString::fromLatin1(opClassName(w.cls)),
                  w.shapesKnown ? QString() : QObject::tr(" <font color=#a60>(some shapes unknown)</font>"));
    QStringList ins, outs, attrs;
    for (ValueId v : n.inputs) ins << valueText(m->graph, v);
    for (ValueId v : n.outputs) outs << valueText(m->graph, v);
    for (const auto& [k, a] : n.attrs) attrs << QStringLiteral("%1 = %2").arg(esc(k), attrText(a));
    h += QObject::tr("<p><b>Inputs:</b><br>%1</p><p><b>Outputs:</b><br>%2</p>")
             .arg(ins.join(QStringLiteral("<br>")), outs.join(QStringLiteral("<br>")));
    if (!attrs.isEmpty()) h += QObject::tr("<p><b>Attributes:</b><br>%1</p>").arg(attrs.join(QStringLiteral("<br>")));
  }
  return h;
}

}  // namespace partex::gui
