#pragma once
/// \file Table model of a graph's operators (name, type, class, device, time and cost source there, MACs,
/// FLOPs, bytes, output shapes).

#include <QAbstractTableModel>

#include <memory>
#include <vector>

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
  /// Follows the session's model and plan (the Device column).
  void setSession(Session* session);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const LoadedModel> model_;
  Session* session_ = nullptr;
};

}  // namespace partex::gui
