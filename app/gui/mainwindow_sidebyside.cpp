// MainWindow: the side-by-side view of two compared plans (or the current plan against one).
#include "gui/mainwindow.h"

#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>

#include "gantt/compareview.h"
#include "graph/graphview.h"
#include "gui/comparemodel.h"

namespace partex::gui {

void MainWindow::updateSideBySide() {
  if (!sideBySide_) return;
  const CostTable* t = session_->table();
  const auto& rows = compare_->rows();
  auto clear = [this](const QString& why) {
    sideBySide_->setPlans(nullptr, {}, {}, {}, {}, {}, {}, {});
    sideStatus_->setText(why);
  };
  if (!t || rows.isEmpty())
    return clear(tr("Run Compare in the scheduler dock, then pick one row (the current plan against it) or two rows."));
  // Rows picked in the table (in source order); without a pick, the best row.
  QList<int> picked;
  if (auto* sel = compareView_->selectionModel())
    for (const QModelIndex& i : sel->selectedRows()) {
      const auto* proxy = qobject_cast<const QSortFilterProxyModel*>(compareView_->model());
      const QModelIndex src = proxy ? proxy->mapToSource(i) : i;
      if (src.isValid() && src.row() < rows.size() && rows[src.row()].error.isEmpty() && rows[src.row()].makespanUs > 0)
        picked << src.row();
    }
  if (picked.isEmpty()) {
    int best = -1;
    for (int r = 0; r < rows.size(); ++r)
      if (rows[r].error.isEmpty() && rows[r].makespanUs > 0 && (best < 0 || rows[r].makespanUs < rows[best].makespanUs))
        best = r;
    if (best < 0) return clear(tr("No algorithm of the comparison produced a plan."));
    picked << best;
  }
  const auto colors = session_->deviceColors();
  auto valid = [t](const CompareRow& r) { return static_cast<int>(r.plan.device.size()) == t->numTasks(); };
  if (picked.size() >= 2) {
    const CompareRow& a = rows[picked[0]];
    const CompareRow& b = rows[picked[1]];
    if (!valid(a) || !valid(b)) return clear(tr("These rows belong to another model: run Compare again."));
    sideBySide_->setPlans(t, colors, a.title, a.plan, a.timeline, b.title, b.plan, b.timeline);
    sideStatus_->setText(tr("%1 against %2: %3 operators placed differently.")
                             .arg(a.title, b.title)
                             .arg(sideBySide_->differentTasks().size()));
    return;
  }
  const CompareRow& b = rows[picked[0]];
  if (!valid(b)) return clear(tr("This row belongs to another model: run Compare again."));
  sideBySide_->setPlans(t, colors, tr("Current plan"), session_->plan(), session_->timeline(), b.title, b.plan,
                        b.timeline);
  sideStatus_->setText(tr("The current plan against %1: %2 operators placed differently.")
                           .arg(b.title)
                           .arg(sideBySide_->differentTasks().size()));
}

void MainWindow::selectSideBySideDifferences() {
  if (!sideBySide_ || !session_->hasModel()) return;
  const QList<int> diff = sideBySide_->differentTasks();
  session_->setSelection(diff);
  if (!diff.isEmpty()) graph_->centerOnOp(diff.front());
  statusBar()->showMessage(tr("%1 operators placed differently are selected").arg(diff.size()), 8000);
}

}  // namespace partex::gui
