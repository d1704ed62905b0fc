#pragma once
/// \file The algorithm comparison table: makespan, speed-up over the best single device, ratio to
/// the lower bound and scheduling time per algorithm, as the session's runCompare() reports them.

#include <QAbstractTableModel>
#include <QList>

#include "session/session.h"

namespace partex::gui {

/// Rows of CompareRow; sorting by UserRole gives numbers.
class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Algorithm, Makespan, Speedup, Ratio, SchedMs, ColumnCount };
  explicit CompareModel(QObject* parent = nullptr);
  void setRows(const QList<CompareRow>& rows);
  const QList<CompareRow>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QList<CompareRow> rows_;
};

}  // namespace partex::gui
