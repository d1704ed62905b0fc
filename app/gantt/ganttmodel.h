#pragma once
/// \file The Gantt chart as a Qt item model (KDGantt style): one top-level row per device and per
/// link, the bars as their children, start and end times and the rest as roles. It serves tables,
/// accessibility and tests; GanttView paints from the same row layout (ganttdata.h) directly.

#include <QAbstractItemModel>

#include <vector>

#include "cost/costtable.h"
#include "gantt/ganttdata.h"
#include "sim/simulator.h"

namespace partex::gui {

/// Item model of a simulated timeline: top-level rows are devices and links (GanttRow), children
/// are their bars in start order. Columns: name, start, end, duration (display text in the unit of
/// TimeScale::formatDuration); the exact numbers are in the roles.
class GanttModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  /// KDGantt-like roles; times in microseconds (double).
  enum Role {
    StartTimeRole = Qt::UserRole + 1,  ///< Bar start; for rows the first bar's start.
    EndTimeRole,                       ///< Bar end; for rows the last bar's end.
    DeviceRole,      ///< Task: its device; transfer: the source device; device row: the device; else -1.
    TaskRole,        ///< Task: its id; transfer: the producer (-1: a model input); rows: -1.
    KindRole,        ///< "device" or "link" for rows, "task" or "transfer" for bars.
    ProvenanceRole,  ///< Task: "modelled", "measured" or "imported" (of the cost used); transfer: "modelled".
    ToDeviceRole,    ///< Transfer: destination device; otherwise -1.
    BytesRole,       ///< Transfer: bytes moved (qint64); otherwise 0.
    FusedOpsRole,    ///< Fused kernel bar: its operators' names (QStringList, anchor first); else empty.
  };
  enum Column { NameColumn, StartColumn, EndColumn, DurationColumn, ColumnCount };

  explicit GanttModel(QObject* parent = nullptr);

  /// Shows `tl` of table `t` (which must outlive the model or the next call); null clears. Each of
  /// `fused` (the timeline's fused kernels) is one bar (TaskRole: its anchor, FusedOpsRole: its
  /// operators) in place of its operators'.
  void setTimeline(const partex::CostTable* t, const partex::Timeline& tl,
                   const std::vector<partex::FusedKernel>& fused = {});
  void clear();

  const std::vector<GanttRow>& rows() const { return rows_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QHash<int, QByteArray> roleNames() const override;

 private:
  QVariant rowData(int row, int column, int role) const;
  QVariant barData(int row, int bar, int column, int role) const;
  QString barName(const GanttBar& b) const;

  const partex::CostTable* table_ = nullptr;
  partex::Timeline tl_;
  std::vector<GanttRow> rows_;
  GanttBars bars_;
};

}  // namespace partex::gui
