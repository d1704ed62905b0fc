#pragma once
/// \file Two plans of one cost table, stacked on one shared time scale, with the list of the
/// operators they place on different devices: what changed between, say, HEFT and Partex best.

#include <QList>
#include <QString>
#include <QWidget>

#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simulator.h"

class QTreeWidget;
class QLabel;

namespace partex::gui {

class GanttView;

/// Plan A above plan B, zoomed and panned together (one time scale, one label column width); B's
/// makespan is shown against A's. The difference list names every operator whose device differs;
/// selecting entries outlines those operators in both charts.
class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  /// Shows two plans of `t` (which must outlive the view or the next call; null clears) with their
  /// timelines. Plans whose size does not match the table contribute no differences.
  void setPlans(const partex::CostTable* t, const std::vector<QColor>& deviceColors, const QString& labelA,
                const partex::Plan& a, const partex::Timeline& ta, const QString& labelB, const partex::Plan& b,
                const partex::Timeline& tb);

  GanttView* viewA() const { return a_; }
  GanttView* viewB() const { return b_; }
  QTreeWidget* differenceList() const { return list_; }
  /// Tasks placed on different devices by the two plans, in task order.
  const QList<int>& differentTasks() const { return diff_; }

 signals:
  /// A task was clicked in either chart or chosen in the list.
  void taskClicked(int task, Qt::KeyboardModifiers mods);

 private:
  void syncScale(GanttView* from, GanttView* to);
  void onListSelection();

  GanttView* a_ = nullptr;
  GanttView* b_ = nullptr;
  QTreeWidget* list_ = nullptr;
  QLabel* summary_ = nullptr;
  QList<int> diff_;
  bool syncing_ = false;
};

}  // namespace partex::gui
