// The main window's workloads of several models (issue 29): a workload file scheduled in the background
// by the calls of `partex-cli workload`, its joint schedule in the Gantt chart, one of its models in the
// graph view.
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
#include <QToolButton>

#include <set>

#include "gantt/ganttview.h"
#include "gantt/stagestrip.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "problem/problem.h"
#include "session/palette.h"

namespace partex::gui {

void MainWindow::openWorkload(const QString& path) {
  loadingProject_ = false;
  recovering_ = false;
  pendingView_.clear();
  const std::string file = path.toStdString();
  const QString platform = session_->platformName();
  const std::string plat = platform.toStdString();
  const std::string algo = workloadAlgo_.toStdString();
  const double searchSec = workloadSearchSec_;
  statusBar()->showMessage(
      tr("Scheduling the workload %1 on %2 (%3)...").arg(QFileInfo(path).fileName(), platform, workloadAlgo_));
  workloadJobs_.start(
      [file, plat, platform, path, algo, searchSec](const std::atomic<bool>&) -> Result<std::shared_ptr<ShownWorkload>> {
        // What `partex-cli workload FILE --platform P --algo A --search-sec S` calls, in its order.
        auto w = loadWorkloadFile(file);
        if (!w) return Error{w.message()};
        auto problems = loadWorkloadProblems(*w, file, plat);
        if (!problems) return Error{problems.message()};
        std::vector<const CostTable*> tables;
        for (const auto& p : *problems) tables.push_back(&p.table);
        WorkloadOptions o;
        o.algo = algo;
        o.searchSec = searchSec;
        o.keepTimeline = true;
        auto r = scheduleWorkload(*w, tables, o);
        if (!r) return makeError(file, ": ", r.message());
        auto out = std::make_shared<ShownWorkload>();
        out->path = path;
        out->platform = platform;
        out->result = std::move(r).value();
        for (const auto& m : w->models) out->modelPaths.push_back(workloadModelPath(m.model, file));
        for (const auto& p : *problems) out->operatorNames.push_back(p.table.taskNames);
        out->workload = std::move(w).value();
        return out;
      },
      [this, path](Result<std::shared_ptr<ShownWorkload>> r) { onWorkloadScheduled(path, std::move(r)); });
}

void MainWindow::setWorkloadScheduler(const QString& algo, double searchSec) {
  workloadAlgo_ = algo;
  workloadSearchSec_ = searchSec;
  if (workloadAlgoBox_ && workloadAlgoBox_->currentText() != algo) workloadAlgoBox_->setCurrentText(algo);
  if (workload_) openWorkload(workload_->path);
}

void MainWindow::onWorkloadScheduled(const QString& path, Result<std::shared_ptr<ShownWorkload>> r) {
  if (!r) {
    showError(QString::fromStdString(r.message()));
    emit modelLoaded(false);
    return;
  }
  // Scheduled again (another scheduler) with the same models: the graph keeps its model.
  const bool again = workload_ && workload_->path == path && workload_->modelPaths == (*r)->modelPaths &&
                     session_->hasModel();
  workload_ = std::move(r).value();
  workloadModelBox_->clear();
  for (const auto& m : workload_->workload.models) workloadModelBox_->addItem(QString::fromStdString(m.name));
  workloadBar_->show();
  workloadToggle_->setChecked(true);
  streamToggle_->setEnabled(false);
  addRecent(QFileInfo(path).absoluteFilePath());
  const auto& res = workload_->result;
  statusBar()->showMessage(tr("Workload %1 (%2): %3 of %4 deadlines met")
                               .arg(QFileInfo(path).fileName(), QString::fromStdString(res.algo))
                               .arg(res.met)
                               .arg(res.requests),
                           8000);
  if (again) {
    workloadModelBox_->setCurrentIndex(workloadModel_);
    updateGantt();
    emit modelLoaded(true);
    return;
  }
  showWorkloadModel(0);  // modelLoaded() follows the model's load
}

void MainWindow::showWorkloadModel(int index) {
  if (!workload_ || index < 0 || static_cast<size_t>(index) >= workload_->modelPaths.size()) return;
  workloadModel_ = index;
  if (workloadModelBox_->currentIndex() != index) workloadModelBox_->setCurrentIndex(index);
  // The workload's platform, in case another was chosen since.
  if (session_->platformName() != workload_->platform) setPlatform(workload_->platform);
  openModelFile(QString::fromStdString(workload_->modelPaths[static_cast<size_t>(index)]), {});
}

void MainWindow::clearWorkload() {
  if (!workload_) return;
  workloadJobs_.drop();
  workload_.reset();
  workloadModel_ = 0;
  workloadBar_->hide();
  streamToggle_->setEnabled(true);
  // The Gantt view moves to the session's table before the joint one is freed (updateGantt follows the load).
  if (gantt_ && session_->hasModel())
    gantt_->setTimeline(session_->table(), session_->timeline(), session_->deviceColors(), session_->fusedKernels());
  else if (gantt_)
    gantt_->setTimeline(nullptr, {}, {});
}

bool MainWindow::showingWorkload() const {
  return workload_ && workloadToggle_ && workloadToggle_->isChecked() && workload_->result.joint.table;
}

void MainWindow::showWorkloadGantt() {
  if (!gantt_ || !showingWorkload()) return;
  const WorkloadResult& res = workload_->result;
  const auto& j = res.joint;
  const int m = static_cast<int>(res.deviceIds.size());
  std::vector<QColor> colors = session_->deviceColors();
  if (static_cast<int>(colors.size()) != m) {  // the session shows another platform: the palette's
    colors.clear();
    for (int d = 0; d < m; ++d) colors.push_back(deviceColor(d));
  }
  colors.push_back(QColor(Qt::gray));  // the clock (its row is not drawn)
  gantt_->setTimeline(j.table.get(), j.timeline, colors);
  GanttChart::WorkloadMarks marks;
  for (const auto& md : workload_->workload.models) marks.models.push_back(QString::fromStdString(md.name));
  marks.requestOfTask = j.requestOfTask;
  marks.hiddenDevice = m;
  marks.algorithm = QString::fromStdString(res.algo);
  for (size_t r = 0; r < res.requestList.size(); ++r) {
    GanttChart::WorkloadRequestMark q;
    q.model = res.requestList[r].model;
    q.releaseUs = res.release[r];
    q.endUs = res.end[r];
    q.deadlineUs = res.release[r] + res.requestList[r].deadlineUs;
    q.dropped = res.dropped[r] != 0;
    marks.requests.push_back(q);
  }
  gantt_->setWorkload(marks);
  const QString name = workload_->workload.name.empty() ? QFileInfo(workload_->path).fileName()
                                                        : QString::fromStdString(workload_->workload.name);
  gantt_->setTitle(tr("Workload %1 (%2)").arg(name, marks.algorithm));
  gantt_->setSelectedTasks(workloadSelectedTasks());
  if (stageStrip_) stageStrip_->hide();
  updateMemory();
}

QList<int> MainWindow::workloadSelectedTasks() const {
  QList<int> sel;
  if (!workload_ || !session_->hasModel() || session_->selection().isEmpty()) return sel;
  const auto& res = workload_->result;
  const auto& j = res.joint;
  std::set<std::string> picked;
  for (int op : session_->selection()) picked.insert(session_->table()->taskNames[static_cast<size_t>(op)]);
  const auto& names = workload_->operatorNames[static_cast<size_t>(workloadModel_)];
  for (size_t t = 0; t < j.requestOfTask.size(); ++t) {
    const int q = j.requestOfTask[t];
    if (q < 0 || res.requestList[static_cast<size_t>(q)].model != workloadModel_) continue;
    const TaskId x = j.operatorOfTask[t];
    if (x >= 0 && static_cast<size_t>(x) < names.size() && picked.count(names[static_cast<size_t>(x)]))
      sel << static_cast<int>(t);
  }
  return sel;
}

void MainWindow::onWorkloadBarClicked(int task) {
  const auto& j = workload_->result.joint;
  if (task < 0 || static_cast<size_t>(task) >= j.requestOfTask.size()) return;
  const int q = j.requestOfTask[static_cast<size_t>(task)];
  if (q < 0) return;
  const int model = workload_->result.requestList[static_cast<size_t>(q)].model;
  const TaskId x = j.operatorOfTask[static_cast<size_t>(task)];
  const auto& names = workload_->operatorNames[static_cast<size_t>(model)];
  if (x < 0 || static_cast<size_t>(x) >= names.size()) return;
  const QString modelName = QString::fromStdString(workload_->workload.models[static_cast<size_t>(model)].name);
  if (model != workloadModel_ || !session_->hasModel()) {
    statusBar()->showMessage(tr("%1 is an operator of %2: showing %2 in the graph")
                                 .arg(QString::fromStdString(names[static_cast<size_t>(x)]), modelName),
                             8000);
    showWorkloadModel(model);
    return;
  }
  // The operator by name in the model the session opened (its own import of the same file).
  const CostTable* t = session_->table();
  for (int v = 0; v < t->numTasks(); ++v)
    if (t->taskNames[static_cast<size_t>(v)] == names[static_cast<size_t>(x)]) {
      session_->setSelection({v});
      graph_->centerOnOp(v);
      return;
    }
}

}  // namespace partex::gui
