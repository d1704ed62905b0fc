#pragma once
/// \file Table model of a graph's operators (name, type, class, MACs, FLOPs, bytes, output shapes).

#include <QAbstractTableModel>

#include <memory>
#include <vector>

#include "cost/work.h"
#include "ir/graph.h"

namespace partex::gui {

/// A loaded model: the graph and its per-operator work, shared read-only with views.
struct LoadedModel {
  Graph graph;
  std::vector<OpWork> work;
  GraphWork total;
};

class OperatorTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Name, OpType, Class, Macs, Flops, BytesIn, BytesOut, Shapes, ColumnCount };
  explicit OperatorTableModel(QObject* parent = nullptr);
  void setModel(std::shared_ptr<const LoadedModel> model);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const LoadedModel> model_;
};

}  // namespace partex::gui
