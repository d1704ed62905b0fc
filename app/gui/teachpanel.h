#pragma once
/// \file Teaching mode: step through HEFT (or CPOP, PEFT, greedy) one placement at a time, or through
/// PartitionTuner's dynamic programme one chain position at a time, on the live problem. The panel
/// records the algorithm's decisions through SchedOptions::trace (core/sched/scheduler.h), so what
/// it shows is what the real scheduler did, not a re-implementation. Each step shows the ready list
/// with its priorities, the finish time (or DP cost) on every device and the chosen device; the
/// graph view follows through the stepChanged signal.

#include <QAbstractTableModel>
#include <QColor>
#include <QList>
#include <QWidget>

#include <memory>
#include <vector>

#include "cost/costtable.h"
#include "sched/scheduler.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace partex::gui {

/// A small read-only table: one row per entry, columns given by the panel (ready list, or devices).
class TeachTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  struct Row {
    QStringList cells;
    QColor color;       ///< Swatch in the first column (invalid: none).
    bool bold = false;  ///< The head of the ready list, or the chosen device.
  };
  explicit TeachTableModel(QStringList headers, QObject* parent = nullptr);
  void setRows(std::vector<Row> rows);
  const std::vector<Row>& rows() const { return rows_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QStringList headers_;
  std::vector<Row> rows_;
};

/// See the file comment.
class TeachPanel : public QWidget {
  Q_OBJECT
 public:
  /// Teaching works on graphs up to this many tasks (every step copies the ready list).
  static constexpr int kMaxTasks = 3000;

  explicit TeachPanel(QWidget* parent = nullptr);
  /// The problem to teach on (nullptr clears). Resets to step 0 of the chosen algorithm.
  void setProblem(std::shared_ptr<const CostTable> table, std::vector<QColor> deviceColors, Constraints constraints = {});
  /// Chooses the algorithm by scheduler name: heft, cpop, peft, greedy, partitiontuner, partitiontuner-clean.
  bool setAlgorithm(const QString& name);
  QString algorithm() const;

  int stepCount() const { return static_cast<int>(steps_.size()); }
  int currentStep() const { return current_; }
  const TraceStep* step() const;
  /// Per task, the device decided up to and including the current step (-1: not yet decided).
  const std::vector<DeviceId>& decided() const { return decided_; }
  /// The reason teaching is unavailable ("" when it is available).
  QString unavailableReason() const { return unavailable_; }

  TeachTableModel* readyModel() const { return ready_; }
  TeachTableModel* deviceModel() const { return devices_; }

 public slots:
  void next();
  void back();
  void restart();
  void goTo(int step);

 signals:
  /// The current step changed: the task decided (-1 at the ranks step), the device chosen, the
  /// ready list, and the per-task devices decided so far.
  void stepChanged(int task, int device, const QList<int>& ready, const std::vector<partex::DeviceId>& decided);

 private:
  void record();
  void show();

  std::shared_ptr<const CostTable> table_;
  std::vector<QColor> colors_;
  Constraints constraints_;
  std::vector<TraceStep> steps_;
  std::vector<DeviceId> decided_;
  int current_ = 0;
  QString unavailable_;

  QComboBox* algo_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* note_ = nullptr;
  QPushButton* restartBtn_ = nullptr;
  QPushButton* backBtn_ = nullptr;
  QPushButton* nextBtn_ = nullptr;
  QTableView* readyView_ = nullptr;
  QTableView* deviceView_ = nullptr;
  TeachTableModel* ready_ = nullptr;
  TeachTableModel* devices_ = nullptr;
};

}  // namespace partex::gui
