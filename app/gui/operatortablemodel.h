#pragma once
/// \file Table model of a graph's operators (name, type, class, device, time and cost source there, MACs,
/// FLOPs, bytes, output shapes), or of a scheduling instance's tasks (name, device, time: an instance
/// has no operator work or shapes).

#include <QAbstractTableModel>

#include <memory>
#include <vector>

#include "cost/costtable.h"
#include "session/loadedmodel.h"

namespace partex::gui {

class Session;

/// One row per operator. With a session set, the Device column shows where the current plan puts it,
/// and Time and Source its cost there and where that cost comes from.
class OperatorTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  /// Time: the operator's cost on the device the plan puts it on; Source: where that cost comes from
  /// (modelled, measured, imported).
  enum Column { Index, Name, OpType, Class, Device, Time, Source, Macs, Flops, BytesIn, BytesOut, Shapes, ColumnCount };
  explicit OperatorTableModel(QObject* parent = nullptr);
  void setModel(std::shared_ptr<const LoadedModel> model);
  /// One row per task of an instance's cost table (the session's, as installed).
  void setInstance(std::shared_ptr<const CostTable> table);
  /// Follows the session's model and plan (the Device column).
  void setSession(Session* session);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  /// Device, Time and Source of `row`, from the session's plan and table; {} when they do not match.
  QVariant placement(int row, int column, bool sortRole) const;

  std::shared_ptr<const LoadedModel> model_;
  std::shared_ptr<const CostTable> instance_;  ///< Set instead of model_ for an instance.
  Session* session_ = nullptr;
};

}  // namespace partex::gui
