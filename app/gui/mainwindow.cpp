// MainWindow: construction, the session's signals, the header (model summary, makespan), the
// Gantt chart's feed, opening models and recent files. The other parts are listed in mainwindow.h.
#include "gui/mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "backend/backend.h"
#include "gantt/ganttview.h"
#include "gantt/memoryview.h"
#include "gantt/stagestrip.h"
#include "graph/devicepalette.h"
#include "graph/graphview.h"
#include "gui/comparemodel.h"
#include "gui/inspector.h"
#include "gui/llmpanel.h"
#include "gui/platformeditor.h"
#include "gui/teachpanel.h"
#include "sched/llamarules.h"
#include "sched/llmjob.h"
#include "sim/stream.h"
#include "support/strings.h"

namespace partex::gui {

/// "HEFT" for "heft": the scheduler's title without its citation.
static QString shortTitle(const std::string& algorithm) {
  const Scheduler* s = findScheduler(algorithm);
  if (!s) return QString::fromStdString(algorithm);
  return QString::fromStdString(s->title()).section(QStringLiteral(" ("), 0, 0);
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Partex[*]"));
  setAcceptDrops(true);
  resize(1600, 1000);
  setDockNestingEnabled(true);

  session_ = new Session(this);
  connect(session_, &Session::modelChanged, this, &MainWindow::onModelChanged);
  connect(session_, &Session::costsChanged, this, &MainWindow::onCostsChanged);
  connect(session_, &Session::profilesChanged, this, &MainWindow::updateProfiles);
  connect(session_, &Session::loadFailed, this, &MainWindow::onLoadFailed);
  connect(session_, &Session::loadWarning, this, &MainWindow::showError);
  connect(session_->undoStack(), &QUndoStack::cleanChanged, this, [this] { setWindowModified(session_->modified()); });
  connect(session_, &Session::planChanged, this, &MainWindow::onPlanChanged);
  connect(session_, &Session::selectionChanged, this, &MainWindow::onSelectionChanged);
  connect(session_, &Session::message, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(session_, &Session::loadStarted, this, [this](const QString& what) {
    progress_->show();
    statusBar()->showMessage(what);
    if (profileAction_) updateProfiles();  // no profiling while the model or platform changes
  });

  // Centre: a header (model summary, makespan) over the graph.
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(4, 4, 4, 0);
  auto* header = new QHBoxLayout;
  summary_ = new QLabel(tr("Open an ONNX model or a task graph (File > Open, or drop a file here)."), central);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  auto* ms = new QVBoxLayout;
  makespan_ = new QLabel(central);
  QFont big = makespan_->font();
  big.setPointSizeF(big.pointSizeF() * 1.9);
  big.setBold(true);
  makespan_->setFont(big);
  makespan_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  delta_ = new QLabel(central);
  delta_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  ms->addWidget(makespan_);
  ms->addWidget(delta_);
  header->addWidget(summary_, 1);
  header->addLayout(ms);
  graph_ = new GraphView(session_, central);
  layout->addLayout(header);
  layout->addWidget(graph_, 1);
  setCentralWidget(central);
  connect(graph_, &GraphView::dragMoved, this, &MainWindow::onDragMoved);
  connect(graph_, &GraphView::dragDropped, this, &MainWindow::onDragDropped);
  connect(graph_, &GraphView::dragCancelled, this, &MainWindow::clearDragFeedback);
  connect(graph_, &GraphView::layoutReady, this, &MainWindow::applyViewState);
  connect(graph_, &GraphView::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 5000); });

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(200);
  progress_->hide();
  statusBar()->addPermanentWidget(progress_);
  planLabel_ = new QLabel(this);
  planLabel_->setObjectName(QStringLiteral("planLabel"));
  planLabel_->setToolTip(tr("The algorithm whose plan is shown, and how many operators were moved by hand since"));
  statusBar()->addPermanentWidget(planLabel_);
  costs_ = new QLabel(this);
  costs_->setToolTip(tr("Operator/device cost entries by source: measured (a Partex profile), imported (ONNX "
                        "Runtime profiling) or modelled (the platform's device models)"));
  statusBar()->addPermanentWidget(costs_);
  capacity_ = new QLabel(this);
  capacity_->setObjectName(QStringLiteral("capacityWarning"));
  capacity_->setStyleSheet(QStringLiteral("QLabel { color: white; background: #c0392b; padding: 1px 6px; }"));
  capacity_->hide();
  statusBar()->addPermanentWidget(capacity_);

  buildDocks();
  buildMenus();
  updateProfiles();

  // Autosave while there are unsaved changes (the timer ticks always; autosaveNow() checks).
  autosave_ = new QTimer(this);
  autosave_->setInterval(30000);
  connect(autosave_, &QTimer::timeout, this, [this] { (void)autosaveNow(); });
  autosave_->start();
}

MainWindow::~MainWindow() {
  // The profiler runs on the backend this window owns: stop it and wait before anything goes.
  profileJobs_.stop();
  profileJobs_.waitForDone();
  session_->waitForJobs();
  // The session and its undo stack are children deleted after this destructor has run; signals
  // they emit while they go (cleanChanged, selectionChanged) must not reach a half-destroyed window.
  session_->undoStack()->disconnect(this);
  session_->disconnect(this);
  // The views read the session while they go: delete them before it.
  delete centralWidget();
  graph_ = nullptr;
}

void MainWindow::openModel(const QString& path, const QStringList& dims) {
  if (path.endsWith(QLatin1String(kProjectExtension), Qt::CaseInsensitive)) {
    (void)openProject(path);
    return;
  }
  // A workload is JSON too: told from a task graph by content (core's rule) before the session's readers.
  if (isWorkloadFile(path.toStdString())) {
    openWorkload(path);
    return;
  }
  clearWorkload();
  openModelFile(path, dims);
}

void MainWindow::openModelFile(const QString& path, const QStringList& dims) {
  loadingProject_ = false;
  recovering_ = false;
  pendingView_.clear();
  loadingPath_ = path;
  loadingDims_ = dims;
  session_->open(path, dims);
}

void MainWindow::setPlatform(const QString& nameOrPath) {
  platformAsked_ = nameOrPath;
  if (platformBox_->findText(nameOrPath) < 0) platformBox_->addItem(nameOrPath);
  platformBox_->setCurrentText(nameOrPath);
  session_->setPlatform(nameOrPath);
  // A workload shown is scheduled again on the new platform (its models share it).
  if (workload_ && workload_->platform != nameOrPath) openWorkload(workload_->path);
}

void MainWindow::setShowCriticalPath(bool on) {
  criticalAction_->setChecked(on);
}

void MainWindow::setShowStream(bool on) {
  if (streamToggle_) streamToggle_->setChecked(on);
}

void MainWindow::setObjective(Objective objective, double latencyBoundUs) {
  // The dock's widgets apply it (Session::setObjective), so that they always show what runs.
  latencyBoundBox_->setValue(std::max(0.0, latencyBoundUs) / 1000.0);
  objectiveBox_->setCurrentIndex(std::max(0, objectiveBox_->findData(static_cast<int>(objective))));
}

void MainWindow::runScheduler(const QString& algorithm, bool respectPins) {
  session_->runScheduler(algorithm, respectPins);
}

bool MainWindow::busy() const {
  return session_->loading() || session_->schedulerRunning() || graph_->layoutRunning() || profileJobs_.isRunning() ||
         workloadJobs_.isRunning();
}

void MainWindow::onLoadFailed(const QString& message) {
  progress_->hide();
  updateProfiles();
  // Symbolic input dimensions: ask the user to bind them, then retry.
  if (dialogsEnabled_ && !loadingProject_ && !loadingPath_.isEmpty() && message.contains(QLatin1String("not bound"))) {
    bool ok = false;
    QString text =
        QInputDialog::getText(this, tr("Bind symbolic dimensions"),
                              message + tr("\n\nBindings, comma separated (NAME=VALUE or INPUT:AXIS=VALUE):"),
                              QLineEdit::Normal, loadingDims_.join(QLatin1Char(',')), &ok);
    if (ok && !text.trimmed().isEmpty()) {
      openModel(loadingPath_, text.split(QLatin1Char(','), Qt::SkipEmptyParts));
      return;
    }
  }
  showError(message);
  platformBox_->setCurrentText(session_->platformName());
  if (!loadingPath_.isEmpty()) {
    loadingPath_.clear();
    loadingProject_ = false;
    recovering_ = false;
    pendingView_.clear();
    emit modelLoaded(false);
  }
}

void MainWindow::onModelChanged() {
  progress_->hide();
  lastError_.clear();
  adoptCostTable();
  const LoadedModel* m = session_->model();
  const LoadedInstance* inst = session_->instance();
  if (!m && !inst) return;
  view_->resizeColumnsToContents();
  updatePlanTitle();
  // A language model opened from a GGUF file or a generator: its llama.cpp placement, at once.
  if (llm_->setModel(inst ? QString() : session_->sourcePath(), session_->platform())) {
    llmDock_->show();
    llmDock_->raise();
    llm_->analyse();
  }
  // Every device of the platform in view (up to eight): a platform with more devices than the last
  // one grows the Platform dock (once the palette has its new rows).
  QTimer::singleShot(0, this, &MainWindow::fitPaletteDock);
  const QString file = QFileInfo(session_->sourcePath()).fileName();
  if (m) {
    const auto& g = m->graph;
    summary_->setText(tr("<b>%1</b> &nbsp; %2 operators &nbsp; %3 MACs &nbsp; %4 FLOPs &nbsp; parameters %5 &nbsp; "
                         "peak activations %6 &nbsp; opset %7%8<br>"
                         "platform <b>%9</b> (%10 devices)")
                          .arg(file.toHtmlEscaped())
                          .arg(g.nodes.size())
                          .arg(QString::fromStdString(humanCount(static_cast<double>(m->total.macs))))
                          .arg(QString::fromStdString(humanCount(static_cast<double>(m->total.flops))))
                          .arg(QString::fromStdString(humanBytes(static_cast<double>(m->total.paramBytes))))
                          .arg(QString::fromStdString(humanBytes(static_cast<double>(m->total.peakActivationBytes))))
                          .arg(g.opsetVersion)
                          .arg(g.warnings.empty()
                                   ? QString()
                                   : tr(" &nbsp; <font color=#b35806>%1 warning(s)</font>").arg(g.warnings.size()))
                          .arg(QString::fromStdString(session_->platform().name).toHtmlEscaped())
                          .arg(session_->numDevices()));
    summary_->setToolTip(QString::fromStdString(session_->platform().description));
    editor_->setPlatform(session_->platform(), session_->platformName());
  } else {
    // An instance: its own devices, links and costs; no operators, no platform.
    const CostTable& t = *session_->table();
    QStringList devices;
    for (int d = 0; d < t.numDevices(); ++d) devices << session_->deviceLabel(d).toHtmlEscaped();
    // A platform named for this load (--platform, the chooser) does not apply: said here and in the status line.
    const QString ignored = loadingPath_.isEmpty() || platformAsked_.isEmpty()
                                ? QString()
                                : tr("<br><font color=#b35806>%1</font>")
                                      .arg(session_->platformIgnoredNote(platformAsked_).toHtmlEscaped());
    summary_->setText(tr("<b>%1</b> &nbsp; %2 &nbsp; %3 tasks &nbsp; %4 edges<br>"
                         "%5 devices from the instance (%6); costs and transfer times are the instance's own%7")
                          .arg(file.toHtmlEscaped(), QString::fromStdString(inst->formatTitle()))
                          .arg(t.numTasks())
                          .arg(t.edges.size())
                          .arg(t.numDevices())
                          .arg(devices.join(QStringLiteral(", ")), ignored));
    summary_->setToolTip(
        tr("Read by content as a %1 (docs/taskgraph-format.md)").arg(QString::fromStdString(inst->formatTitle())));
    editor_->setUnavailable(session_->instanceReason(tr("The platform editor")));
  }
  // A platform applies to ONNX models: with an instance loaded the chooser only waits for the next one.
  const QString platformWhy =
      inst ? tr("%1 is a %2 with its own devices: a platform applies to the next ONNX model you open")
                 .arg(file, QString::fromStdString(inst->formatTitle()))
           : QString();
  platformBox_->setEnabled(!inst);
  platformFileButton_->setEnabled(!inst);
  platformBox_->setToolTip(inst ? platformWhy : tr("Platform preset (devices, links, cost models)"));
  platformFileButton_->setToolTip(inst ? platformWhy : tr("Open a platform JSON file"));
  if (!loadingPath_.isEmpty()) projectPath_ = loadingProject_ && !recovering_ ? loadingPath_ : QString();
  setWindowTitle(tr("%1[*] - Partex").arg(projectPath_.isEmpty() ? file : QFileInfo(projectPath_).fileName()));
  setWindowModified(session_->modified());
  if (platformBox_->findText(session_->platformName()) >= 0) platformBox_->setCurrentText(session_->platformName());
  for (int i = 0; i < moveActions_.size(); ++i) {
    moveActions_[i]->setVisible(i < session_->numDevices());
    moveActions_[i]->setEnabled(i < session_->numDevices());
    if (i < session_->numDevices()) moveActions_[i]->setText(session_->deviceLabel(i));
  }
  if (!loadingPath_.isEmpty()) {
    QString loaded = tr("Loaded %1").arg(loadingPath_);
    const bool ignored = inst && !platformAsked_.isEmpty();
    if (ignored) loaded += QStringLiteral("; ") + session_->platformIgnoredNote(platformAsked_);
    platformAsked_.clear();
    statusBar()->showMessage(loaded, ignored ? 30000 : 5000);
    if (!recovering_) addRecent(QFileInfo(loadingPath_).absoluteFilePath());
    if (loadingProject_) {  // the saved selection (the zoom and centre wait for the layout)
      const QJsonObject view = QJsonDocument::fromJson(pendingView_.toUtf8()).object();
      const auto* t = session_->table();
      QList<int> sel;
      for (const auto& name : view.value(QStringLiteral("selected")).toArray())
        for (int v = 0; v < t->numTasks(); ++v)
          if (t->taskNames[static_cast<size_t>(v)] == name.toString().toStdString()) sel << v;
      session_->setSelection(sel);
    }
    loadingPath_.clear();
    loadingProject_ = false;
    recovering_ = false;
    emit modelLoaded(true);
  }
}

void MainWindow::adoptCostTable() {
  // Views that keep a raw pointer to the cost table move to the new one first: the old table may be
  // freed as soon as the session's signal returns (the teaching panel holds the last reference) and
  // selectionChanged or planChanged follows at once.
  if (gantt_)
    gantt_->setTimeline(session_->table(), session_->timeline(), session_->deviceColors(), session_->fusedKernels());
  streamTable_.reset();  // the view points at the session's table again
  if (showingWorkload())
    showWorkloadGantt();
  else if (streamToggle_ && streamToggle_->isChecked() && session_->hasModel())
    showStream();
  updateMemory();
  // Compare rows and the side-by-side plans belong to the previous cost table.
  compare_->setRows({});
  updateSideBySide();
  teach_->setProblem(session_->tablePtr(), session_->deviceColors(), session_->constraints());
}

void MainWindow::onCostsChanged() {
  // A profile was added or removed: same model, platform and plan on a new cost table.
  adoptCostTable();
  updateProfiles();
}

Status MainWindow::applyLlmPlacement() {
  const LlmReport* r = llm_->report();
  const CostTable* t = session_->table();
  if (!r || !t) return makeError("no LLM placement to show: run the LLM tab first");
  if (r->accel < 0 || r->accel >= t->numDevices())
    return makeError("the LLM placement's GPU '", r->gpu, "' is not a device of the platform shown");
  // The placement's tensors by name on the opened table (its own phase and length), the operators as
  // ggml places them: core's llmPhasePlan, as the job evaluates each phase.
  Plan plan = llmPhasePlan(*t, llamaTensors(*t), r->best.single, r->accel);
  if (auto st = session_->applyPlan(std::move(plan), QStringLiteral("llama.cpp placement"),
                                    tr("Apply the LLM placement"));
      !st)
    return st;
  setMemoryFolded(false);  // each device's memory (the GPU's VRAM, the host's) under the placement
  return {};
}

QString MainWindow::planTitle() const {
  if (!session_->hasModel()) return {};
  const auto& st = session_->state();
  const QString algo = st.algorithm.empty() ? tr("Manual") : shortTitle(st.algorithm);
  int moved = 0;
  for (uint8_t m : st.manual) moved += m ? 1 : 0;
  // A replicated stream plan (inference t on replica t mod R) says so: the graph colours replica 0.
  const int replicas = replicaCount(session_->plan());
  const QString base = replicas > 1 ? tr("%1, %2 replicas").arg(algo).arg(replicas) : algo;
  if (moved == 0) return base;
  return moved == 1 ? tr("%1, 1 operator moved by hand").arg(base)
                    : tr("%1, %2 operators moved by hand").arg(base).arg(moved);
}

void MainWindow::updatePlanTitle() {
  const QString title = planTitle();
  planLabel_->setText(title.isEmpty() ? QString() : tr("Plan: %1").arg(title));
  // The scheduler box names the algorithm of the plan shown, however it was made (the Run button,
  // --algo, a compare row, a project, undo).
  const std::string& algorithm = session_->state().algorithm;
  const int i = algoBox_->findData(QString::fromStdString(algorithm));
  if (i >= 0 && i != algoBox_->currentIndex()) algoBox_->setCurrentIndex(i);
}

void MainWindow::onPlanChanged() {
  setWindowModified(session_->modified());
  updatePlanTitle();
  updateGantt();
  updateMakespan();
  updateInspector();
}

void MainWindow::onSelectionChanged() {
  updateInspector();
  if (gantt_) gantt_->setSelectedTasks(showingWorkload() ? workloadSelectedTasks() : session_->selection());
}

void MainWindow::updateMakespan() {
  if (!session_->hasModel()) {
    makespan_->clear();
    delta_->clear();
    return;
  }
  const double ms = session_->timeline().makespan;
  makespan_->setText(tr("Makespan %1 us").arg(QString::fromStdString(withCommas(static_cast<uint64_t>(ms + 0.5)))));
  const auto& st = session_->state();
  const QString algo = shortTitle(st.algorithm);
  QString text;
  if (st.schedulerMakespan > 0) {
    const double pct = (ms - st.schedulerMakespan) / st.schedulerMakespan * 100;
    const QString color = std::abs(pct) < 0.05 ? QStringLiteral("#555")
                                               : (pct < 0 ? QStringLiteral("#1a7f37") : QStringLiteral("#b42318"));
    text = tr("<font color=%1>%2%3 %</font> against the %4 plan (%5 us)")
               .arg(color)
               .arg(pct > 0 ? QStringLiteral("+") : QString())
               .arg(pct, 0, 'f', 1)
               .arg(algo)
               .arg(st.schedulerMakespan, 0, 'f', 1);
  }
  if (session_->lowerBoundUs() > 0) text += tr(" &nbsp; lower bound %1 us").arg(session_->lowerBoundUs(), 0, 'f', 1);
  delta_->setText(text);
}

void MainWindow::updateInspector() {
  inspector_->setHtml(inspectorHtml(*session_, session_->selection()));
}

void MainWindow::updateGantt() {
  if (!gantt_) return;
  if (!session_->hasModel()) return;
  const auto& st = session_->state();
  const QString algo = shortTitle(st.algorithm);
  if (showingWorkload()) {
    showWorkloadGantt();
    return;
  }
  if (streamToggle_ && streamToggle_->isChecked() && showStream()) {
    gantt_->setTitle(planTitle());
    gantt_->setSelectedTasks(session_->selection());
    updateMemory();
    return;
  }
  gantt_->setTimeline(session_->table(), session_->timeline(), session_->deviceColors(), session_->fusedKernels());
  streamTable_.reset();
  if (stageStrip_) stageStrip_->hide();
  gantt_->setReferenceMakespan(st.schedulerMakespan);
  gantt_->setReferenceLabel(tr("%1 plan").arg(algo));
  gantt_->setTitle(planTitle());
  gantt_->setSelectedTasks(session_->selection());
  updateMemory();
}

bool MainWindow::showStream() {
  const CostTable* t = session_->table();
  if (!gantt_ || !t) return false;
  StreamOptions so;
  so.keepTimeline = true;
  auto r = simulateStream(*t, session_->plan(), so);
  if (!r) {
    statusBar()->showMessage(tr("Stream of inferences: %1").arg(QString::fromStdString(r.message())), 8000);
    if (stageStrip_) stageStrip_->hide();
    return false;
  }
  // The stages of the plan, whose boundaries drag (the bottleneck's stages outlined).
  if (stageStrip_) {
    stageStrip_->setPlan(t, session_->plan(), session_->deviceColors(), r->bottleneck);
    stageStrip_->show();
  }
  // The view moves to the new unrolled table before the old one is freed.
  auto unrolled = std::make_shared<const CostTable>(unrollStream(*t, r->inferences, r->inFlight));
  gantt_->setTimeline(unrolled.get(), r->timeline, session_->deviceColors());
  streamTable_ = std::move(unrolled);
  GanttChart::StreamMarks m;
  m.tasksPerInference = t->numTasks();
  m.inferences = r->inferences;
  m.periodUs = r->periodUs;
  m.latencyUs = r->latencyUs;
  m.bottleneckDevice = r->bottleneck;
  // One steady-state period, ending at the end of the inference in the middle of the stream.
  if (!r->end.empty()) {
    const size_t k = std::min(static_cast<size_t>(r->inferences / 2), r->end.size() - 1);
    m.periodStartUs = std::max(0.0, r->end[k] - r->periodUs);
  }
  gantt_->setStream(m);
  return true;
}

void MainWindow::previewStageMove(const QList<int>& ops, int device) {
  const CostTable* t = session_->table();
  if (!stageStrip_ || !t || ops.isEmpty()) return;
  Simulator sim(*t);
  const std::vector<TaskId> moving(ops.begin(), ops.end());
  auto moved = applyMove(sim, *t, session_->plan(), session_->timeline(), moving, device);
  if (!moved) {
    stageStrip_->setPreviewText(tr("refused (%1)").arg(QString::fromStdString(moved.message())));
    return;
  }
  auto r = simulateStream(*t, moved->plan);
  if (!r) {
    stageStrip_->setPreviewText(QString::fromStdString(r.message()));
    return;
  }
  const double now = gantt_ ? gantt_->chart().stream().periodUs : 0;
  QString text = tr("period %1 \u2192 %2").arg(TimeScale::formatDuration(now), TimeScale::formatDuration(r->periodUs));
  if (r->bottleneck >= 0) text += tr(", bottleneck %1").arg(session_->deviceLabel(r->bottleneck));
  stageStrip_->setPreviewText(text);
}

void MainWindow::updateMemory() {
  const QString problem = session_->hasModel() ? session_->capacityProblem() : QString();
  capacity_->setText(tr("Over capacity: %1").arg(problem));
  capacity_->setToolTip(tr("The plan does not fit the devices' memory: %1. The memory view under the Gantt chart "
                           "shows where; run a scheduler (they all keep within the capacities) or move operators "
                           "off the device.")
                            .arg(problem));
  capacity_->setVisible(!problem.isEmpty());
  if (!memory_) return;
  if (!session_->hasModel()) {
    memory_->clear();
    return;
  }
  std::vector<QString> labels;
  for (int d = 0; d < session_->numDevices(); ++d) labels.push_back(session_->deviceLabel(d));
  memory_->setMemory(session_->memory(), std::move(labels), session_->deviceColors());
}

void MainWindow::chooseFile() {
  // Task graphs and scheduling instances are JSON; the session tells them from models by content.
  QString path = QFileDialog::getOpenFileName(
      this, tr("Open ONNX model, task graph, workload or project"), QString(),
      tr("Models, task graphs, workloads and projects (*.onnx *.gguf *.json *.partex);;ONNX models (*.onnx);;"
         "llama.cpp models, header only (*.gguf);;"
         "Task graphs: Partex, SAGA, WfCommons (*.json);;Workloads of several models (*.json);;"
         "Partex projects (*.partex);;All files (*)"));
  if (!path.isEmpty()) openModel(path);
}

void MainWindow::choosePlatformFile() {
  QString path =
      QFileDialog::getOpenFileName(this, tr("Open platform"), QString(), tr("Platform JSON (*.json);;All files (*)"));
  if (!path.isEmpty()) setPlatform(path);
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  for (const QString& f : recent) recentMenu_->addAction(f, this, [this, f] { openModel(f); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& path) {
  QSettings s;
  QStringList recent = s.value(QStringLiteral("recentFiles")).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > 10) recent.removeLast();
  s.setValue(QStringLiteral("recentFiles"), recent);
  updateRecentMenu();
}

void MainWindow::showError(const QString& message) {
  lastError_ = message;
  statusBar()->showMessage(message);
  if (dialogsEnabled_) QMessageBox::critical(this, tr("Partex"), message);
}

int MainWindow::tabBarHeightOf(const QDockWidget* d) const {
  // A tabbed dock's size in resizeDocks is its tab area's, the tab bar included.
  for (const QTabBar* bar : findChildren<QTabBar*>()) {
    if (!bar->isVisible() || qobject_cast<const QTabWidget*>(bar->parentWidget())) continue;
    for (int i = 0; i < bar->count(); ++i)
      if (bar->tabText(i) == d->windowTitle()) return bar->sizeHint().height();
  }
  return 0;
}

void MainWindow::fitPaletteDock() {
  const int missing = palette_->sizeHint().height() - palette_->height();
  if (missing <= 0 || platDock_->isFloating() || !platDock_->isVisible() || !inspDock_->isVisible() ||
      dockWidgetArea(platDock_) != dockWidgetArea(inspDock_))
    return;
  // The tab group below gives the room (Qt keeps its minimum).
  resizeDocks({platDock_, schedDock_, inspDock_},
              {platDock_->height() + tabBarHeightOf(platDock_) + missing, schedDock_->height(),
               std::max(0, inspDock_->height() + tabBarHeightOf(inspDock_) - missing)},
              Qt::Vertical);
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (shown_) return;
  shown_ = true;
  if (!layoutRestored_) sizeDocks();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openModel(urls.first().toLocalFile());
}

}  // namespace partex::gui
