#include "gui/comparemodel.h"

namespace partex::gui {

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::setRows(const QList<CompareRow>& rows) {
  beginResetModel();
  rows_ = rows;
  periods_ = false;
  for (const auto& r : rows_) periods_ = periods_ || (r.error.isEmpty() && r.periodUs > 0);
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : periods_ ? ColumnCount : ColumnCount - 1;
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() < 0 || index.row() >= rows_.size()) return {};
  const CompareRow& r = rows_[index.row()];
  const bool failed = !r.error.isEmpty();
  if (role == Qt::TextAlignmentRole)
    return column(index.column()) == Algorithm ? QVariant()
                                       : QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  if (role == Qt::ToolTipRole)
    return failed ? r.error : r.timeLimited ? tr("%1: stopped at the time limit (best plan so far)").arg(r.title) : r.title;
  if (role == Qt::UserRole) {
    switch (column(index.column())) {
      case Algorithm:
        return r.title;
      case Makespan:
        return r.makespanUs;
      case Period:
        return r.periodUs;
      case Speedup:
        return r.speedup;
      case Ratio:
        return r.ratioToBound;
      case SchedMs:
        return r.schedMs;
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (column(index.column())) {
    case Algorithm:
      return r.title.isEmpty() ? r.algorithm : r.title.section(QStringLiteral(" ("), 0, 0);
    case Makespan:
      return failed ? tr("failed: %1").arg(r.error) : QString::number(r.makespanUs, 'f', 1);
    case Period:
      return failed || r.periodUs <= 0 ? QString() : QString::number(r.periodUs, 'f', 1);
    case Speedup:
      return failed || r.speedup <= 0 ? QString() : QStringLiteral("%1x").arg(r.speedup, 0, 'f', 2);
    case Ratio:
      return failed || r.ratioToBound <= 0 ? QString() : QString::number(r.ratioToBound, 'f', 3);
    case SchedMs:
      return r.timeLimited ? tr("%1 (limit)").arg(r.schedMs, 0, 'f', 1) : QString::number(r.schedMs, 'f', 1);
    default:
      return {};
  }
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
    static const char* tips[ColumnCount] = {
        "Scheduler", "Simulated makespan of one inference in microseconds",
        "Steady-state period of a stream of inferences in microseconds (throughput objective): one inference "
        "finishes every period",
        "Best single-device makespan / this makespan",
        "Makespan / lower bound (1.0 = provably optimal)", "Scheduler run time in milliseconds"};
    return section >= 0 && section < columnCount() ? tr(tips[column(section)]) : QVariant();
  }
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"Algorithm", "Makespan", "Period", "Speed-up", "/ bound", "ms"};
  return section >= 0 && section < columnCount() ? tr(names[column(section)]) : QVariant();
}

}  // namespace partex::gui
