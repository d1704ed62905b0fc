// MainWindow: operators dragged from the graph onto a device (a palette entry or a Gantt device
// row), with a preview of the timeline while the drag hovers a device; the move and pin keys.
#include "gui/mainwindow.h"

#include <QStatusBar>

#include "gantt/ganttview.h"
#include "graph/devicepalette.h"
#include "graph/graphview.h"

namespace partex::gui {

int MainWindow::dropTargetAt(const QPoint& globalPos) const {
  const int d = palette_->deviceAt(globalPos);
  if (d >= 0) return d;
  if (gantt_ && gantt_->isVisible()) return gantt_->deviceAt(globalPos);
  return -1;
}

void MainWindow::setPreview(const Timeline* tl) {
  if (gantt_) gantt_->setPreview(tl, tl ? session_->fusedKernelsOf(*tl) : std::vector<FusedKernel>{});
}

void MainWindow::onDragMoved(const QList<int>& ops, const QPoint& globalPos) {
  const int d = dropTargetAt(globalPos);
  if (d == previewDevice_) return;
  previewDevice_ = d;
  if (d < 0) {
    palette_->paletteModel()->setHighlight(-1, true);
    setPreview(nullptr);
    graph_->setDragFeedback(tr("%n operator(s): drop on a device", nullptr, static_cast<int>(ops.size())), true);
    return;
  }
  const Status ok = session_->canMove(ops, d);
  palette_->paletteModel()->setHighlight(d, ok.isOk());
  if (!ok) {
    setPreview(nullptr);
    graph_->setDragFeedback(QString::fromStdString(ok.message()), false);
    return;
  }
  auto tl = session_->previewMove(ops, d);
  if (!tl) {
    graph_->setDragFeedback(QString::fromStdString(tl.message()), false);
    return;
  }
  setPreview(&tl.value());
  const double now = session_->timeline().makespan, then = tl->makespan;
  const QString msg =
      tr("%n operator(s) to %1: makespan %2 us -> %3 us (%4%5 %)", nullptr, static_cast<int>(ops.size()))
          .arg(session_->deviceLabel(d))
          .arg(now, 0, 'f', 1)
          .arg(then, 0, 'f', 1)
          .arg(then > now ? QStringLiteral("+") : QString())
          .arg(now > 0 ? (then - now) / now * 100 : 0.0, 0, 'f', 1);
  graph_->setDragFeedback(msg, true);
  statusBar()->showMessage(msg, 5000);
}

void MainWindow::clearDragFeedback() {
  previewDevice_ = -1;
  palette_->paletteModel()->setHighlight(-1, true);
  setPreview(nullptr);
}

void MainWindow::onDragDropped(const QList<int>& ops, const QPoint& globalPos) {
  const int d = dropTargetAt(globalPos);
  clearDragFeedback();
  if (d < 0) {
    statusBar()->showMessage(tr("Dropped outside a device: nothing moved"), 4000);
    return;
  }
  if (session_->moveOps(ops, d))
    statusBar()->showMessage(
        tr("Moved to %1: makespan %2 us").arg(session_->deviceLabel(d)).arg(session_->timeline().makespan, 0, 'f', 1),
        6000);
}

void MainWindow::moveSelectionTo(int device) {
  const QList<int> sel = session_->selection();
  if (sel.isEmpty()) {
    statusBar()->showMessage(tr("Select operators first"), 4000);
    return;
  }
  (void)session_->moveOps(sel, device);
}

void MainWindow::togglePin() {
  const QList<int> sel = session_->selection();
  if (sel.isEmpty()) return;
  bool all = true;
  for (int op : sel) all = all && session_->isPinned(op);
  (void)session_->setPinned(sel, !all);
}

}  // namespace partex::gui
