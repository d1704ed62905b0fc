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
  /// Period: the stream's steady-state period, a column only while the rows have one (a comparison
  /// under the throughput objective); without it the later columns move one to the left.
  enum Column { Algorithm, Makespan, Period, Speedup, Ratio, SchedMs, ColumnCount };
  /// Whether the rows have stream periods (the comparison ran under the throughput objective).
  bool hasPeriods() const { return periods_; }
  explicit CompareModel(QObject* parent = nullptr);
  void setRows(const QList<CompareRow>& rows);
  const QList<CompareRow>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  /// The Column shown at view column `section`.
  int column(int section) const { return !periods_ && section >= Period ? section + 1 : section; }
  QList<CompareRow> rows_;
  bool periods_ = false;
};

}  // namespace partex::gui
