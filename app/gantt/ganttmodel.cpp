#include "gantt/ganttmodel.h"

#include "gantt/timescale.h"

namespace partex::gui {

// Internal ids: 0 for top-level rows, row + 1 for the children of top-level row `row`.

GanttModel::GanttModel(QObject* parent) : QAbstractItemModel(parent) {}

void GanttModel::setTimeline(const partex::CostTable* t, const partex::Timeline& tl,
                             const std::vector<partex::FusedKernel>& fused) {
  beginResetModel();
  table_ = t;
  if (t) {
    tl_ = tl;
    rows_ = ganttRows(*t, {&tl_});
    bars_ = ganttBars(*t, rows_, tl_, fused);
  } else {
    tl_ = {};
    rows_.clear();
    bars_ = {};
  }
  endResetModel();
}

void GanttModel::clear() {
  setTimeline(nullptr, {});
}

QModelIndex GanttModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= ColumnCount || row < 0) return {};
  if (!parent.isValid()) {
    if (row >= static_cast<int>(rows_.size())) return {};
    return createIndex(row, column, quintptr(0));
  }
  if (parent.internalId() != 0 || parent.row() < 0 || parent.row() >= static_cast<int>(rows_.size())) return {};
  if (row >= static_cast<int>(bars_.perRow[static_cast<size_t>(parent.row())].size())) return {};
  return createIndex(row, column, quintptr(parent.row()) + 1);
}

QModelIndex GanttModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int GanttModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(rows_.size());
  if (parent.internalId() != 0 || parent.column() != 0) return 0;  // bars have no children
  return static_cast<int>(bars_.perRow[static_cast<size_t>(parent.row())].size());
}

int GanttModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.internalId() != 0) return 0;
  return ColumnCount;
}

QVariant GanttModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !table_ || index.model() != this) return {};
  if (index.internalId() == 0) return rowData(index.row(), index.column(), role);
  return barData(static_cast<int>(index.internalId() - 1), index.row(), index.column(), role);
}

QVariant GanttModel::rowData(int row, int column, int role) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return {};
  const auto& r = rows_[static_cast<size_t>(row)];
  const auto& bars = bars_.perRow[static_cast<size_t>(row)];
  double start = 0, end = 0;
  if (!bars.empty()) {
    start = bars.front().start;
    for (const auto& b : bars) end = std::max(end, b.end);
  }
  switch (role) {
    case Qt::DisplayRole:
      if (column == NameColumn) return r.label;
      if (bars.empty()) return {};
      if (column == StartColumn) return TimeScale::formatDuration(start);
      if (column == EndColumn) return TimeScale::formatDuration(end);
      return TimeScale::formatDuration(end - start);
    case StartTimeRole:
      return start;
    case EndTimeRole:
      return end;
    case DeviceRole:
      return r.kind == GanttRowKind::Device ? r.device : -1;
    case TaskRole:
    case ToDeviceRole:
      return -1;
    case KindRole:
      return r.kind == GanttRowKind::Device ? QStringLiteral("device") : QStringLiteral("link");
    case BytesRole:
      return qint64(0);
    default:
      return {};
  }
}

QString GanttModel::barName(const GanttBar& b) const {
  auto taskName = [&](int v) {
    if (v < 0) return QStringLiteral("host");
    if (v >= table_->numTasks()) return QStringLiteral("?");
    return QString::fromStdString(table_->taskNames[static_cast<size_t>(v)]);
  };
  if (b.kind == GanttBarKind::Task && b.kernel >= 0) {
    const auto& k = bars_.kernels[static_cast<size_t>(b.kernel)];
    return taskName(b.index) + QStringLiteral(" +%1 fused").arg(k.ops.size() - 1);
  }
  if (b.kind == GanttBarKind::Task) return taskName(b.index);
  const auto& x = tl_.transfers[static_cast<size_t>(b.index)];
  return taskName(x.src) + QStringLiteral(" -> ") + taskName(x.dst);
}

QVariant GanttModel::barData(int row, int bar, int column, int role) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return {};
  const auto& bars = bars_.perRow[static_cast<size_t>(row)];
  if (bar < 0 || bar >= static_cast<int>(bars.size())) return {};
  const GanttBar& b = bars[static_cast<size_t>(bar)];
  const bool task = b.kind == GanttBarKind::Task;
  const partex::TransferSlot* x = task ? nullptr : &tl_.transfers[static_cast<size_t>(b.index)];
  switch (role) {
    case Qt::DisplayRole:
      if (column == NameColumn) return barName(b);
      if (column == StartColumn) return TimeScale::formatDuration(b.start);
      if (column == EndColumn) return TimeScale::formatDuration(b.end);
      return TimeScale::formatDuration(b.end - b.start);
    case StartTimeRole:
      return b.start;
    case EndTimeRole:
      return b.end;
    case DeviceRole:
      return task ? tl_.tasks[static_cast<size_t>(b.index)].device : x->from;
    case ToDeviceRole:
      return task ? -1 : x->to;
    case TaskRole:
      return task ? b.index : x->src;
    case KindRole:
      return task ? QStringLiteral("task") : QStringLiteral("transfer");
    case ProvenanceRole: {
      if (!task) return QStringLiteral("modelled");
      // A fused kernel's time is its last operator's cost (the others' are about 0).
      const int v = b.kernel >= 0 ? bars_.kernels[static_cast<size_t>(b.kernel)].last() : b.index;
      const size_t i = static_cast<size_t>(v) * static_cast<size_t>(table_->numDevices()) +
                       static_cast<size_t>(tl_.tasks[static_cast<size_t>(v)].device);
      const auto p = i < table_->provenance.size() ? table_->provenance[i] : partex::Provenance::Modelled;
      return QString::fromLatin1(partex::provenanceName(p));
    }
    case BytesRole:
      return qint64(task ? 0 : x->bytes);
    case FusedOpsRole: {
      QStringList names;
      if (b.kernel >= 0)
        for (int v : bars_.kernels[static_cast<size_t>(b.kernel)].ops)
          names << QString::fromStdString(table_->taskNames[static_cast<size_t>(v)]);
      return names;
    }
    default:
      return {};
  }
}

QVariant GanttModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Name");
    case StartColumn:
      return tr("Start");
    case EndColumn:
      return tr("End");
    case DurationColumn:
      return tr("Duration");
    default:
      return {};
  }
}

QHash<int, QByteArray> GanttModel::roleNames() const {
  auto r = QAbstractItemModel::roleNames();
  r[StartTimeRole] = "startTime";
  r[EndTimeRole] = "endTime";
  r[DeviceRole] = "device";
  r[TaskRole] = "task";
  r[KindRole] = "kind";
  r[ProvenanceRole] = "provenance";
  r[ToDeviceRole] = "toDevice";
  r[BytesRole] = "bytes";
  r[FusedOpsRole] = "fusedOps";
  return r;
}

}  // namespace partex::gui
