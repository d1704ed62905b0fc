#include "gui/operatortablemodel.h"

#include "session/session.h"
#include "support/strings.h"

namespace partex::gui {

OperatorTableModel::OperatorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void OperatorTableModel::setModel(std::shared_ptr<const LoadedModel> model) {
  beginResetModel();
  model_ = std::move(model);
  instance_.reset();
  endResetModel();
}

void OperatorTableModel::setInstance(std::shared_ptr<const CostTable> table) {
  beginResetModel();
  model_.reset();
  instance_ = std::move(table);
  endResetModel();
}

void OperatorTableModel::setSession(Session* session) {
  session_ = session;
  connect(session, &Session::modelChanged, this, [this] {
    if (session_->isInstance())
      setInstance(session_->tablePtr());
    else
      setModel(session_->modelPtr());
  });
  connect(session, &Session::planChanged, this, [this] {
    // Device, Time and Source follow the plan and the cost table (a profile changes both).
    if (rowCount() > 0) emit dataChanged(index(0, Device), index(rowCount() - 1, Source));
  });
}

int OperatorTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  if (instance_) return instance_->numTasks();
  return model_ ? static_cast<int>(model_->graph.nodes.size()) : 0;
}

int OperatorTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant OperatorTableModel::placement(int row, int column, bool sortRole) const {
  // The session's plan and table must be the ones this table shows (a load may be half-way).
  if (!session_ || session_->modelPtr() != model_ || !session_->table()) return {};
  if (instance_ && session_->tablePtr() != instance_) return {};
  if (column == Device) return session_->deviceLabel(session_->deviceOf(row));
  const CostTable& t = *session_->table();
  const int d = session_->deviceOf(row);
  if (row >= t.numTasks() || d < 0 || d >= t.numDevices()) return {};
  const size_t at = static_cast<size_t>(row) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(d);
  if (column == Source) return instance_ ? tr("instance") : QString::fromLatin1(provenanceName(t.provenance[at]));
  if (sortRole) return t.cost[at];
  return QString::number(t.cost[at], 'f', 1);
}

QVariant OperatorTableModel::data(const QModelIndex& index, int role) const {
  if ((!model_ && !instance_) || !index.isValid() || index.row() >= rowCount()) return {};
  const auto row = static_cast<size_t>(index.row());
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case Index:
      case Time:
      case Macs:
      case Flops:
      case BytesIn:
      case BytesOut:
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != Qt::UserRole) return {};
  const bool sortRole = role == Qt::UserRole;
  switch (index.column()) {
    case Index:
      return index.row();
    case Device:
    case Time:
    case Source:
      return placement(index.row(), index.column(), sortRole);
    default:
      break;
  }
  if (instance_) {  // a task: its name and type (WfCommons' category); no work or shapes
    if (index.column() == Name) return QString::fromStdString(instance_->taskNames[row]);
    if (index.column() == OpType) return QString::fromStdString(instance_->taskTypes[row]);
    return {};
  }
  const Node& n = model_->graph.nodes[row];
  const OpWork& w = model_->work[row];
  switch (index.column()) {
    case Name:
      return QString::fromStdString(n.name);
    case OpType:
      return QString::fromStdString(n.domain.empty() ? n.opType : n.domain + "::" + n.opType);
    case Class:
      return QString::fromLatin1(opClassName(w.cls));
    case Macs:
      return sortRole ? QVariant::fromValue<qlonglong>(w.macs)
                      : QVariant(QString::fromStdString(withCommas(static_cast<uint64_t>(w.macs))));
    case Flops:
      return sortRole ? QVariant::fromValue<qlonglong>(w.flops)
                      : QVariant(QString::fromStdString(withCommas(static_cast<uint64_t>(w.flops))));
    case BytesIn:
      return sortRole ? QVariant::fromValue<qlonglong>(w.bytesRead())
                      : QVariant(QString::fromStdString(humanBytes(static_cast<double>(w.bytesRead()))));
    case BytesOut:
      return sortRole ? QVariant::fromValue<qlonglong>(w.bytesWritten)
                      : QVariant(QString::fromStdString(humanBytes(static_cast<double>(w.bytesWritten))));
    case Shapes: {
      QStringList parts;
      for (ValueId v : n.outputs) {
        if (v < 0) continue;
        const Value& val = model_->graph.values[static_cast<size_t>(v)];
        parts << (val.shapeKnown ? QString::fromStdString(shapeToString(val.shape)) : QStringLiteral("?"));
      }
      return parts.join(QLatin1Char(' '));
    }
    default:
      return {};
  }
}

QVariant OperatorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"#",     "Name",     "Op type",   "Class",        "Device", "Time (us)",
                                           "Cost source", "MACs",     "FLOPs",     "Bytes in",     "Bytes out",
                                           "Output shapes"};
  return (section >= 0 && section < ColumnCount) ? tr(names[section]) : QVariant();
}

}  // namespace partex::gui
