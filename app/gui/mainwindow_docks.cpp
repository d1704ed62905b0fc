// MainWindow: the docks (platform and profiles, scheduler and comparison, inspector, operators,
// platform editor, teaching, Gantt chart, side by side), the menus and the toolbar.
#include "gui/mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QAbstractItemView>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QWidgetAction>

#include <algorithm>

#include "gantt/compareview.h"
#include "gantt/ganttview.h"
#include "gantt/memoryview.h"
#include "gantt/stagestrip.h"
#include "graph/devicepalette.h"
#include "graph/graphview.h"
#include "gui/algorithmchooser.h"
#include "gui/comparemodel.h"
#include "gui/llmpanel.h"
#include "gui/platformeditor.h"
#include "gui/teachpanel.h"

namespace partex::gui {

void MainWindow::buildDocks() {
  // Platform: preset chooser and the device palette (a drop target).
  auto* platDock = platDock_ = new QDockWidget(tr("Platform"), this);
  platDock->setObjectName(QStringLiteral("platformDock"));
  auto* pw = new QWidget(platDock);
  auto* pl = new QVBoxLayout(pw);
  auto* row = new QHBoxLayout;
  platformBox_ = new QComboBox(pw);
  for (const auto& n : presetNames()) platformBox_->addItem(QString::fromStdString(n));
  platformBox_->setCurrentText(session_->platformName());
  platformBox_->setToolTip(tr("Platform preset (devices, links, cost models)"));
  auto* fileButton = platformFileButton_ = new QPushButton(tr("File..."), pw);
  fileButton->setToolTip(tr("Open a platform JSON file"));
  row->addWidget(platformBox_, 1);
  row->addWidget(fileButton);
  pl->addLayout(row);
  palette_ = new DevicePalette(session_, pw);
  palette_->setToolTip(tr("Drop operators on a device to move them there"));
  pl->addWidget(palette_, 1);
  // Profiles: measured or imported costs applied over the modelled ones, in application order.
  // Compact, so that the device palette above keeps its room: the list shows only when not empty.
  profileCosts_ = new QLabel(pw);
  profileCosts_->setWordWrap(true);
  profileCosts_->setToolTip(tr("Measured costs (profiles) override the platform's modelled ones"));
  pl->addWidget(profileCosts_);
  profileList_ = new QListWidget(pw);
  profileList_->setObjectName(QStringLiteral("profileList"));
  // One line per profile, elided in the middle (the tooltip has the whole path and summary): a
  // horizontal scroll bar would cover the only row of a short list.
  profileList_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  profileList_->setTextElideMode(Qt::ElideMiddle);
  profileList_->setToolTip(
      tr("Applied in this order: Partex profiles, then ONNX Runtime imports; a later one "
         "overrides an earlier one on the same operator and device"));
  pl->addWidget(profileList_);
  auto* profButtons = new QHBoxLayout;
  auto* loadProfileButton = loadProfileButton_ = new QPushButton(tr("Load..."), pw);
  loadProfileButton->setToolTip(tr("Load a profile measured by Profile on this machine or partex-cli profile"));
  auto* importButton = importOrtButton_ = new QPushButton(tr("Import ORT..."), pw);
  importButton->setToolTip(tr("Import an ONNX Runtime profiling JSON as the times of one device"));
  removeProfileButton_ = new QPushButton(tr("Remove"), pw);
  removeProfileButton_->setToolTip(tr("Remove the selected profile: its operators go back to the modelled costs"));
  removeProfileButton_->setEnabled(false);
  profButtons->addWidget(loadProfileButton);
  profButtons->addWidget(importButton);
  profButtons->addWidget(removeProfileButton_);
  pl->addLayout(profButtons);
  connect(loadProfileButton, &QPushButton::clicked, this, &MainWindow::chooseProfile);
  connect(importButton, &QPushButton::clicked, this, &MainWindow::chooseOrtProfile);
  connect(removeProfileButton_, &QPushButton::clicked, this, [this] {
    const int row = profileList_->currentRow();
    if (row >= 0) (void)removeProfile(row);
  });
  connect(profileList_, &QListWidget::currentRowChanged, this,
          [this](int row) { removeProfileButton_->setEnabled(row >= 0); });
  platDock->setWidget(pw);
  connect(platformBox_, &QComboBox::textActivated, this, &MainWindow::setPlatform);
  connect(fileButton, &QPushButton::clicked, this, &MainWindow::choosePlatformFile);

  // Scheduler: run one algorithm, or compare several.
  auto* schedDock = schedDock_ = new QDockWidget(tr("Scheduler"), this);
  schedDock->setObjectName(QStringLiteral("schedulerDock"));
  auto* sw = new QWidget(schedDock);
  auto* sl = new QVBoxLayout(sw);
  algoBox_ = new QComboBox(sw);
  for (const auto& s : allSchedulers()) {
    algoBox_->addItem(QString::fromStdString(s->title()), QString::fromStdString(s->name()));
    algoBox_->setItemData(algoBox_->count() - 1, QString::fromStdString(s->description()), Qt::ToolTipRole);
  }
  algoBox_->setCurrentIndex(std::max(0, algoBox_->findData(QStringLiteral("heft"))));
  // The longest title (llama.cpp's rules) would set the side column's width: elide in the box, the
  // drop-down list shows them whole.
  algoBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  algoBox_->setMinimumContentsLength(18);
  algoBox_->view()->setMinimumWidth(algoBox_->view()->sizeHintForColumn(0) + 24);
  sl->addWidget(algoBox_);
  // What Run and Compare optimise (issue 29): one inference's latency, or the period of a stream of
  // them (best then considers pipelines and replicas), as partex-cli's --objective and --latency-bound.
  auto* objectiveRow = new QHBoxLayout;
  objectiveRow->setContentsMargins(0, 0, 0, 0);
  objectiveBox_ = new QComboBox(sw);
  objectiveBox_->setObjectName(QStringLiteral("objectiveBox"));
  objectiveBox_->addItem(tr("Latency"), static_cast<int>(Objective::Latency));
  objectiveBox_->addItem(tr("Throughput"), static_cast<int>(Objective::Throughput));
  objectiveBox_->setItemData(0, tr("The time of one inference (the plan's makespan)"), Qt::ToolTipRole);
  objectiveBox_->setItemData(1,
                             tr("The steady-state period of a stream of inferences: inference t+1 starts while t "
                                "still runs elsewhere; Best then also tries pipelines and replicas (a whole "
                                "inference per device, taken in turn)"),
                             Qt::ToolTipRole);
  objectiveBox_->setToolTip(tr("What Run and Compare optimise (partex-cli --objective)"));
  latencyBoundBox_ = new QDoubleSpinBox(sw);
  latencyBoundBox_->setObjectName(QStringLiteral("latencyBoundBox"));
  latencyBoundBox_->setRange(0, 1e6);
  latencyBoundBox_->setDecimals(2);
  latencyBoundBox_->setSuffix(tr(" ms"));
  latencyBoundBox_->setSpecialValueText(tr("none"));
  latencyBoundBox_->setToolTip(tr("Throughput objective: each inference's latency in the stream at most this "
                                  "(partex-cli --latency-bound; none: no bound)"));
  latencyBoundBox_->setEnabled(false);
  // One row (the dock is short): "Objective [Throughput] latency <= [none]".
  objectiveRow->addWidget(new QLabel(tr("Objective"), sw));
  objectiveRow->addWidget(objectiveBox_, 1);
  objectiveRow->addWidget(new QLabel(tr("latency \u2264"), sw));
  objectiveRow->addWidget(latencyBoundBox_, 1);
  sl->addLayout(objectiveRow);
  auto applyObjective = [this] {
    const auto o = static_cast<Objective>(objectiveBox_->currentData().toInt());
    latencyBoundBox_->setEnabled(o == Objective::Throughput);
    session_->setObjective(o, latencyBoundBox_->value() * 1000.0);
    // The objective's own view: a stream is judged by its period, which the stream view marks.
    if (o == Objective::Throughput && streamToggle_ && streamToggle_->isEnabled()) streamToggle_->setChecked(true);
  };
  connect(objectiveBox_, qOverload<int>(&QComboBox::currentIndexChanged), this, applyObjective);
  connect(latencyBoundBox_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, applyObjective);
  auto* buttons = new QHBoxLayout;
  runButton_ = new QPushButton(tr("Run"), sw);
  runButton_->setToolTip(tr("Schedule every operator with this algorithm (pins are dropped)"));
  reoptButton_ = new QPushButton(tr("Re-optimise unpinned"), sw);
  reoptButton_->setToolTip(tr("Schedule again, keeping pinned operators where they are"));
  cancelButton_ = new QPushButton(tr("Cancel"), sw);
  cancelButton_->setEnabled(false);
  buttons->addWidget(runButton_);
  buttons->addWidget(reoptButton_);
  buttons->addWidget(cancelButton_);
  sl->addLayout(buttons);
  schedProgress_ = new QProgressBar(sw);
  schedProgress_->setRange(0, 1000);
  schedProgress_->setValue(0);
  schedProgress_->setTextVisible(false);
  schedProgress_->setMaximumHeight(8);
  sl->addWidget(schedProgress_);
  schedStatus_ = new QLabel(tr("Idle"), sw);
  schedStatus_->setWordWrap(true);
  sl->addWidget(schedStatus_);
  sl->addStretch(1);
  schedDock->setWidget(sw);

  // Compare: the algorithms to compare (a searchable, grouped list in a drop-down, so that the
  // results keep the room) and the results, sortable, one row per algorithm.
  auto* cmpDock = compareDock_ = new QDockWidget(tr("Compare"), this);
  cmpDock->setObjectName(QStringLiteral("compareDock"));
  auto* cw = new QWidget(cmpDock);
  auto* cl = new QVBoxLayout(cw);
  cl->setContentsMargins(4, 4, 4, 4);
  auto* crow = new QHBoxLayout;
  chooserButton_ = new QToolButton(cw);
  chooserButton_->setPopupMode(QToolButton::InstantPopup);
  chooserButton_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  chooserButton_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  auto* chooserMenu = new QMenu(chooserButton_);
  chooser_ = new AlgorithmChooser(chooserMenu);
  auto* chooserAction = new QWidgetAction(chooserMenu);
  chooserAction->setDefaultWidget(chooser_);
  chooserMenu->addAction(chooserAction);
  connect(chooserMenu, &QMenu::aboutToShow, this, [this] { chooser_->searchField()->setFocus(); });
  chooserButton_->setMenu(chooserMenu);
  chooser_->setChecked({QStringLiteral("single"), QStringLiteral("greedy"), QStringLiteral("heft"),
                        QStringLiteral("cpop"), QStringLiteral("peft")});
  connect(chooser_, &AlgorithmChooser::changed, this, &MainWindow::updateChooserButton);
  updateChooserButton();
  auto* compareButton = new QPushButton(tr("Compare"), cw);
  compareButton->setToolTip(tr("Run every ticked algorithm on this model and platform, judged by one simulator"));
  crow->addWidget(chooserButton_, 1);
  crow->addWidget(compareButton);
  cl->addLayout(crow);
  compare_ = new CompareModel(this);
  auto* compareProxy = new QSortFilterProxyModel(this);
  compareProxy->setSourceModel(compare_);
  compareProxy->setSortRole(Qt::UserRole);
  compareView_ = new QTableView(cw);
  compareView_->setObjectName(QStringLiteral("compareResults"));
  compareView_->setModel(compareProxy);
  compareView_->setSortingEnabled(true);
  compareView_->sortByColumn(CompareModel::Makespan, Qt::AscendingOrder);
  compareView_->verticalHeader()->hide();
  compareView_->verticalHeader()->setDefaultSectionSize(compareView_->fontMetrics().height() + 6);
  // The numbers sized to their content, the algorithm's name takes the rest (elided when narrow, the
  // tooltip has it whole): every column in view without a horizontal scroll bar.
  compareView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  compareView_->horizontalHeader()->setSectionResizeMode(CompareModel::Algorithm, QHeaderView::Stretch);
  compareView_->horizontalHeader()->setStretchLastSection(false);
  compareView_->setTextElideMode(Qt::ElideRight);
  compareView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  compareView_->setToolTip(tr("Double-click a row to apply that algorithm's plan; click a header to sort"));
  cl->addWidget(compareView_, 1);
  cmpDock->setWidget(cw);

  connect(runButton_, &QPushButton::clicked, this, [this] { runScheduler(algoBox_->currentData().toString(), false); });
  connect(reoptButton_, &QPushButton::clicked, this,
          [this] { runScheduler(algoBox_->currentData().toString(), true); });
  connect(cancelButton_, &QPushButton::clicked, session_, &Session::cancelScheduler);
  connect(compareButton, &QPushButton::clicked, this, [this] {
    const QStringList algos = chooser_->checked();
    if (algos.isEmpty()) {
      schedStatus_->setText(tr("Tick at least one algorithm to compare."));
      return;
    }
    session_->runCompare(algos);
  });
  connect(compareView_, &QTableView::doubleClicked, this, [this, compareProxy](const QModelIndex& i) {
    const QModelIndex src = compareProxy->mapToSource(i);
    if (src.isValid() && src.row() < compare_->rows().size())
      runScheduler(compare_->rows()[src.row()].algorithm, false);
  });
  connect(session_, &Session::schedulerStarted, this, [this](const QString& what) {
    schedStatus_->setText(tr("Running %1...").arg(what));
    schedProgress_->setValue(0);
    cancelButton_->setEnabled(true);
  });
  connect(session_, &Session::schedulerProgress, this, [this](double f, const QString& what) {
    schedProgress_->setValue(static_cast<int>(f * 1000));
    if (!what.isEmpty()) schedStatus_->setText(what);
  });
  connect(session_, &Session::schedulerFinished, this, [this](bool ok, const QString& msg) {
    schedProgress_->setValue(ok ? 1000 : 0);
    schedStatus_->setText(msg);
    cancelButton_->setEnabled(session_->schedulerRunning());
    statusBar()->showMessage(msg, 8000);
  });
  connect(session_, &Session::compareFinished, this, [this](const QList<CompareRow>& rows) {
    compare_->setRows(rows);
    // Under the throughput objective the rows have a period column (CompareModel): sorted by it.
    if (compare_->hasPeriods()) compareView_->sortByColumn(CompareModel::Period, Qt::AscendingOrder);
    compareView_->resizeColumnsToContents();
    updateSideBySide();
    if (!rows.isEmpty()) {
      sideDock_->show();
      compareDock_->show();
      compareDock_->raise();  // the results, where the Inspector was
      ganttDock_->raise();
    }
  });

  // Inspector and operator table, tabbed on the right.
  auto* inspDock = inspDock_ = new QDockWidget(tr("Inspector"), this);
  inspDock->setObjectName(QStringLiteral("inspectorDock"));
  inspector_ = new QTextBrowser(inspDock);
  inspector_->setOpenLinks(false);
  inspDock->setWidget(inspector_);

  auto* opsDock = opsDock_ = new QDockWidget(tr("Operators"), this);
  opsDock->setObjectName(QStringLiteral("operatorsDock"));
  auto* ow = new QWidget(opsDock);
  auto* ol = new QVBoxLayout(ow);
  table_ = new OperatorTableModel(this);
  table_->setSession(session_);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(table_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  filter_ = new QLineEdit(ow);
  filter_->setPlaceholderText(tr("Filter operators by name, type, class or device"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  view_ = new QTableView(ow);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(OperatorTableModel::Index, Qt::AscendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    const int op = proxy_->mapToSource(i).row();
    session_->setSelection({op});
    graph_->centerOnOp(op);
  });
  ol->addWidget(filter_);
  ol->addWidget(view_, 1);
  opsDock->setWidget(ow);

  // Platform editor: an accepted edit re-builds the cost table on the edited platform.
  auto* editDock = editDock_ = new QDockWidget(tr("Platform editor"), this);
  editDock->setObjectName(QStringLiteral("platformEditorDock"));
  // In a scroll area, as the teaching panel: their tables would otherwise set the side column's
  // minimum height, and a small screen could not hold the window.
  auto* editScroll = new QScrollArea(editDock);
  editScroll->setWidgetResizable(true);
  editScroll->setFrameShape(QFrame::NoFrame);
  editor_ = new PlatformEditor(editScroll);
  editScroll->setWidget(editor_);
  editDock->setWidget(editScroll);
  connect(editor_, &PlatformEditor::platformEdited, this, [this](const Platform& p) {
    // The editor also reports the platform it was just shown: only a real change re-builds.
    if (session_->hasModel() && platformToJson(p) == platformToJson(session_->platform())) return;
    const QString label = p.name.empty() ? tr("edited platform") : QString::fromStdString(p.name);
    session_->setPlatform(p, label);
  });

  // Teaching: step through a list scheduler's decisions; each step selects its task in the graph.
  auto* teachDock = teachDock_ = new QDockWidget(tr("Teach"), this);
  teachDock->setObjectName(QStringLiteral("teachDock"));
  auto* teachScroll = new QScrollArea(teachDock);
  teachScroll->setWidgetResizable(true);
  teachScroll->setFrameShape(QFrame::NoFrame);
  teach_ = new TeachPanel(teachScroll);
  teachScroll->setWidget(teach_);
  teachDock->setWidget(teachScroll);
  connect(teach_, &TeachPanel::stepChanged, this,
          [this](int task, int, const QList<int>&, const std::vector<DeviceId>&) {
            if (task < 0 || task >= session_->numOps()) return;
            session_->setSelection({task});
            graph_->centerOnOp(task);
          });

  // LLM: a GGUF model's fastest llama.cpp placement, the rules beside it, the arguments to copy.
  auto* llmDock = llmDock_ = new QDockWidget(tr("LLM"), this);
  llmDock->setObjectName(QStringLiteral("llmDock"));
  auto* llmScroll = new QScrollArea(llmDock);
  llmScroll->setWidgetResizable(true);
  llmScroll->setFrameShape(QFrame::NoFrame);
  llm_ = new LlmPanel(llmScroll);
  llmScroll->setWidget(llm_);
  llmDock->setWidget(llmScroll);
  connect(llm_, &LlmPanel::finished, this, [this](bool ok) {
    if (!ok) return;
    if (auto st = applyLlmPlacement(); !st) statusBar()->showMessage(QString::fromStdString(st.message()), 8000);
  });
  connect(llm_, &LlmPanel::applyRequested, this, [this] {
    if (auto st = applyLlmPlacement(); !st) showError(QString::fromStdString(st.message()));
  });

  // Gantt chart (app/gantt); a marked placeholder in builds without it.
  ganttDock_ = new QDockWidget(tr("Gantt chart"), this);
  ganttDock_->setObjectName(QStringLiteral("ganttDock"));
  // The memory view under it, on its time axis (both take the dock's width, so that their plot
  // columns coincide), folded behind a one-click bar; the fold is remembered per user.
  auto* ganttSplit = new QWidget(ganttDock_);
  ganttSplit->setObjectName(QStringLiteral("ganttSplit"));
  auto* gl = new QVBoxLayout(ganttSplit);
  gl->setContentsMargins(0, 0, 0, 0);
  gl->setSpacing(0);
  gantt_ = new GanttView(ganttSplit);
  gantt_->setMinimumHeight(150);
  memoryToggle_ = new QToolButton(ganttSplit);
  memoryToggle_->setObjectName(QStringLiteral("memoryToggle"));
  memoryToggle_->setCheckable(true);
  memoryToggle_->setAutoRaise(true);
  memoryToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  memoryToggle_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  memoryToggle_->setToolTip(tr("Show or hide the memory per device over time, on the Gantt chart's time axis"));
  memory_ = new MemoryView(ganttSplit);
  memory_->setObjectName(QStringLiteral("memoryView"));
  memory_->follow(gantt_);
  // A stream of inferences through the plan (issue 29), in place of one inference.
  streamToggle_ = new QToolButton(ganttSplit);
  streamToggle_->setObjectName(QStringLiteral("streamToggle"));
  streamToggle_->setCheckable(true);
  streamToggle_->setAutoRaise(true);
  streamToggle_->setText(tr("Stream of inferences"));
  streamToggle_->setToolTip(tr("Show the plan running a stream of inferences: inference t+1 starts on a device while "
                               "t still runs on a later one. Successive inferences are told apart (every other one "
                               "lighter and hatched); the steady-state period and the bottleneck device are marked. "
                               "Moving operators re-simulates the stream."));
  // A workload of several models (issue 29): its joint schedule in place of the model's plan, the
  // model the graph shows, and the scheduler that dispatches it (partex-cli workload's --algo).
  workloadBar_ = new QWidget(ganttSplit);
  auto* wl = new QHBoxLayout(workloadBar_);
  wl->setContentsMargins(0, 0, 0, 0);
  workloadToggle_ = new QToolButton(workloadBar_);
  workloadToggle_->setObjectName(QStringLiteral("workloadToggle"));
  workloadToggle_->setCheckable(true);
  workloadToggle_->setChecked(true);
  workloadToggle_->setAutoRaise(true);
  workloadToggle_->setText(tr("Workload"));
  workloadToggle_->setToolTip(tr("Show the workload's joint schedule: every request of every model on the shared "
                                 "devices, each model in its own colour (shaded per device), a row per model with "
                                 "each request from its release to its end, deadlines ticked, missed ones in red. "
                                 "Off: the plan of the model the graph shows."));
  workloadModelBox_ = new QComboBox(workloadBar_);
  workloadModelBox_->setObjectName(QStringLiteral("workloadModelBox"));
  workloadModelBox_->setToolTip(tr("The workload's model that the graph shows"));
  workloadAlgoBox_ = new QComboBox(workloadBar_);
  workloadAlgoBox_->setObjectName(QStringLiteral("workloadAlgoBox"));
  for (const auto& a : workloadAlgorithms()) workloadAlgoBox_->addItem(QString::fromStdString(a));
  workloadAlgoBox_->setCurrentText(workloadAlgo_);
  workloadAlgoBox_->setToolTip(tr("The workload scheduler: partex (least slack first over Partex's plans' units) or "
                                  "band (Band's, reconstructed), as partex-cli workload --algo"));
  wl->addWidget(workloadToggle_);
  wl->addWidget(new QLabel(tr("Graph:"), workloadBar_));
  wl->addWidget(workloadModelBox_);
  wl->addWidget(new QLabel(tr("Scheduler:"), workloadBar_));
  wl->addWidget(workloadAlgoBox_);
  workloadBar_->hide();
  auto* ganttBar = new QHBoxLayout;
  ganttBar->setContentsMargins(4, 0, 4, 0);
  ganttBar->addWidget(streamToggle_);
  ganttBar->addWidget(workloadBar_);
  ganttBar->addStretch(1);
  gl->addLayout(ganttBar);
  connect(streamToggle_, &QToolButton::toggled, this, [this](bool) { updateGantt(); });
  connect(workloadToggle_, &QToolButton::toggled, this, [this](bool on) {
    streamToggle_->setEnabled(!on);
    updateGantt();
  });
  connect(workloadModelBox_, qOverload<int>(&QComboBox::activated), this, [this](int i) { showWorkloadModel(i); });
  connect(workloadAlgoBox_, qOverload<int>(&QComboBox::activated), this,
          [this](int) { setWorkloadScheduler(workloadAlgoBox_->currentText(), workloadSearchSec_); });
  // The stages of a pipelined plan over the stream view: drag a boundary to move operators.
  stageStrip_ = new StageStrip(ganttSplit);
  stageStrip_->setObjectName(QStringLiteral("stageStrip"));
  stageStrip_->hide();
  gl->addWidget(stageStrip_);
  connect(stageStrip_, &StageStrip::boundaryDragged, this, [this](const QList<int>& ops, int device) {
    if (auto st = session_->moveOps(ops, device); !st)
      statusBar()->showMessage(tr("Stage boundary: %1").arg(QString::fromStdString(st.message())), 8000);
  });
  connect(stageStrip_, &StageStrip::boundaryPreviewed, this, &MainWindow::previewStageMove);
  gl->addWidget(gantt_, 3);
  gl->addWidget(memoryToggle_);
  gl->addWidget(memory_, 2);
  connect(memoryToggle_, &QToolButton::toggled, this, [this](bool open) {
    setMemoryFolded(!open);
    QSettings().setValue(QStringLiteral("layout/memoryFolded"), !open);
  });
  setMemoryFolded(QSettings().value(QStringLiteral("layout/memoryFolded"), true).toBool());
  ganttDock_->setWidget(ganttSplit);
  connect(gantt_, &GanttView::taskClicked, this, [this](int task, Qt::KeyboardModifiers mods) {
    if (showingWorkload()) {
      onWorkloadBarClicked(task);
      return;
    }
    // A stream's bar of inference i is task v + i * n: the operator is v.
    if (session_->numOps() > 0) task %= session_->numOps();
    QList<int> sel = session_->selection();
    if (mods & (Qt::ControlModifier | Qt::ShiftModifier)) {
      if (sel.contains(task))
        sel.removeAll(task);
      else
        sel << task;
    } else {
      sel = {task};
    }
    session_->setSelection(sel);
    graph_->centerOnOp(task);
  });

  // Two plans side by side (the compare table's rows, or the current plan against one of them),
  // tabbed with the Gantt chart; "Select in graph" highlights the operators they place differently.
  auto* sideDock = sideDock_ = new QDockWidget(tr("Side by side"), this);
  sideDock->setObjectName(QStringLiteral("sideBySideDock"));
  auto* sideWidget = new QWidget(sideDock);
  auto* sideLayout = new QVBoxLayout(sideWidget);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  sideStatus_ =
      new QLabel(tr("Run Compare in the scheduler dock, then pick one row (the current plan against it) or two rows."),
                 sideWidget);
  sideStatus_->setWordWrap(true);
  auto* selectDiff = new QPushButton(tr("Select the differently placed operators in the graph"), sideWidget);
  sideBySide_ = new CompareView(sideWidget);
  sideLayout->addWidget(sideStatus_);
  sideLayout->addWidget(sideBySide_, 1);
  sideLayout->addWidget(selectDiff);
  sideDock->setWidget(sideWidget);
  connect(selectDiff, &QPushButton::clicked, this, &MainWindow::selectSideBySideDifferences);
  connect(sideBySide_, &CompareView::taskClicked, this, [this](int task, Qt::KeyboardModifiers) {
    if (!session_->hasModel() || task < 0 || task >= session_->numOps()) return;
    session_->setSelection({task});
    graph_->centerOnOp(task);
  });
  connect(compareView_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateSideBySide);
  arrangeDocks();
  // A user's own arrangement and fold, saved on close, replace the default.
  layoutRestored_ = restoreLayout();
}

QDockWidget* MainWindow::dock(const QString& objectName) const {
  return findChild<QDockWidget*>(objectName);
}

void MainWindow::resetLayout() {
  arrangeDocks();
  setMemoryFolded(true);
  QSettings().setValue(QStringLiteral("layout/memoryFolded"), true);
}

void MainWindow::arrangeDocks() {
  // The right column runs the window's height; the Gantt chart is under the graph only.
  setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  const QList<QDockWidget*> all = {platDock_, schedDock_, inspDock_,  compareDock_, opsDock_,
                                   editDock_, teachDock_, llmDock_,   ganttDock_,   sideDock_};
  for (QDockWidget* d : all) {
    d->setFloating(false);
    removeDockWidget(d);
  }
  addDockWidget(Qt::RightDockWidgetArea, platDock_);
  addDockWidget(Qt::RightDockWidgetArea, schedDock_);
  addDockWidget(Qt::RightDockWidgetArea, inspDock_);
  splitDockWidget(platDock_, schedDock_, Qt::Vertical);
  splitDockWidget(schedDock_, inspDock_, Qt::Vertical);
  // The platform editor with the platform it edits; five tabs below, whose labels fit the column's
  // width whole at 1366x768 and up (six, with the editor's, were cut at 1600x1000).
  tabifyDockWidget(platDock_, editDock_);
  tabifyDockWidget(inspDock_, compareDock_);
  tabifyDockWidget(compareDock_, opsDock_);
  tabifyDockWidget(opsDock_, teachDock_);
  tabifyDockWidget(teachDock_, llmDock_);
  addDockWidget(Qt::BottomDockWidgetArea, ganttDock_);
  tabifyDockWidget(ganttDock_, sideDock_);
  for (QDockWidget* d : all) d->show();
  // Side by side is hidden until a comparison has rows, so that its two charts take no room.
  sideDock_->hide();
  platDock_->raise();
  inspDock_->raise();
  ganttDock_->raise();
  sizeDocks();
}

void MainWindow::sizeDocks() {
  // The side column a quarter of the width (360 to 440 px: five whole tab labels), the Gantt chart 22 % of the height (170
  // to 260 px); the Platform and Scheduler docks as tall as their content, the tabs take the rest.
  const int side = std::clamp(width() / 4, 360, 440);
  const int bottom = std::clamp(height() * 22 / 100, 170, 260);
  resizeDocks({platDock_}, {side}, Qt::Horizontal);
  resizeDocks({ganttDock_}, {bottom}, Qt::Vertical);
  resizeDocks({platDock_, schedDock_, inspDock_},
              {platDock_->sizeHint().height() + tabBarHeightOf(platDock_), schedDock_->minimumSizeHint().height(), height()},
              Qt::Vertical);
}

void MainWindow::setMemoryFolded(bool folded) {
  if (!memory_ || !memoryToggle_) return;
  memory_->setVisible(!folded);
  const QSignalBlocker block(memoryToggle_);
  memoryToggle_->setChecked(!folded);
  memoryToggle_->setArrowType(folded ? Qt::RightArrow : Qt::DownArrow);
  memoryToggle_->setText(folded ? tr("Memory per device (click to show)") : tr("Memory per device"));
}

bool MainWindow::memoryFolded() const {
  return memory_ && memory_->isHidden();
}

/// Bumped when the docks change, so that a saved state of older docks is not restored over them.
static constexpr int kLayoutVersion = 3;

void MainWindow::saveLayout() const {
  QSettings s;
  s.setValue(QStringLiteral("layout/geometry"), saveGeometry());
  s.setValue(QStringLiteral("layout/state"), saveState(kLayoutVersion));
}

bool MainWindow::restoreLayout() {
  QSettings s;
  const QByteArray state = s.value(QStringLiteral("layout/state")).toByteArray();
  if (state.isEmpty()) return false;
  (void)restoreGeometry(s.value(QStringLiteral("layout/geometry")).toByteArray());
  if (!restoreState(state, kLayoutVersion)) return false;
  setMemoryFolded(s.value(QStringLiteral("layout/memoryFolded"), true).toBool());
  return true;
}

void MainWindow::updateChooserButton() {
  const QStringList ticked = chooser_->checked();
  chooserButton_->setText(ticked.isEmpty() ? tr("Algorithms: none ticked")
                                           : tr("Algorithms: %1 of %2").arg(ticked.size()).arg(allSchedulers().size()));
  chooserButton_->setToolTip(
      tr("Click to choose (search, groups, Select all): %1").arg(ticked.join(QStringLiteral(", "))));
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open..."), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  file->addAction(tr("Open Pro&ject..."), this, &MainWindow::chooseProject);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("Open &platform file..."), this, &MainWindow::choosePlatformFile);
  file->addSeparator();
  loadProfileAction_ = file->addAction(tr("&Load profile..."), this, &MainWindow::chooseProfile);
  loadProfileAction_->setStatusTip(
      tr("Apply measured costs from a profile file (Profile on this machine, partex-cli profile)"));
  importOrtAction_ = file->addAction(tr("&Import ONNX Runtime profile..."), this, &MainWindow::chooseOrtProfile);
  importOrtAction_->setStatusTip(tr("Apply an ONNX Runtime profiling JSON as the times of one platform device"));
  profileAction_ = file->addAction(tr("Profile on this &machine..."), this, &MainWindow::profileWithDialog);
  file->setToolTipsVisible(true);  // the profile action says why it is disabled
  file->addSeparator();
  auto* save = file->addAction(tr("&Save Project"), this, [this] {
    if (projectPath_.isEmpty()) {
      saveProjectAs();
      return;
    }
    if (auto st = saveProject(projectPath_); !st) showError(QString::fromStdString(st.message()));
  });
  save->setShortcut(QKeySequence::Save);
  auto* saveAs = file->addAction(tr("Save Project &As..."), this, &MainWindow::saveProjectAs);
  saveAs->setShortcut(QKeySequence::SaveAs);
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  exportMenu->addAction(tr("&Plan (JSON)..."), this, [this] {
    exportWithDialog(tr("Export plan"), tr("Plan JSON (*.json)"), &MainWindow::exportPlan);
  });
  exportMenu->addAction(tr("Perfetto / Chrome &trace..."), this, [this] {
    exportWithDialog(tr("Export trace"), tr("Trace JSON (*.json)"), &MainWindow::exportTrace);
  });
  exportMenu->addAction(tr("Operators as &CSV..."), this, [this] {
    exportWithDialog(tr("Export operators"), tr("CSV (*.csv)"), &MainWindow::exportCsv);
  });
  exportMenu->addAction(tr("&Graph as SVG or PNG..."), this, [this] {
    exportWithDialog(tr("Export graph"), tr("SVG (*.svg);;PNG (*.png)"), &MainWindow::exportGraphImage);
  });
  auto* ganttExport = exportMenu->addAction(tr("G&antt chart as SVG or PNG..."), this, [this] {
    exportWithDialog(tr("Export Gantt chart"), tr("SVG (*.svg);;PNG (*.png)"), &MainWindow::exportGanttImage);
  });
  (void)ganttExport;
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
  quit->setShortcut(QKeySequence::Quit);
  updateRecentMenu();

  auto* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = session_->undoStack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence(QStringLiteral("Ctrl+Z")));
  QAction* redo = session_->undoStack()->createRedoAction(this, tr("&Redo"));
  redo->setShortcuts({QKeySequence(QStringLiteral("Ctrl+Shift+Z")), QKeySequence(QStringLiteral("Ctrl+Y"))});
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  auto* find = edit->addAction(tr("&Find operator..."), this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  auto* pin = edit->addAction(tr("&Pin / unpin selection"), this, &MainWindow::togglePin);
  pin->setShortcut(QKeySequence(Qt::Key_P));
  QMenu* moveMenu = edit->addMenu(tr("&Move selection to"));
  for (int i = 0; i < 9; ++i) {
    QAction* a = moveMenu->addAction(tr("Device %1").arg(i + 1), this, [this, i] { moveSelectionTo(i); });
    a->setShortcut(QKeySequence(Qt::Key_1 + i));
    a->setVisible(false);
    moveActions_ << a;
  }

  auto* viewMenu = menuBar()->addMenu(tr("&View"));
  QToolBar* tb = addToolBar(tr("Graph"));
  tb->setObjectName(QStringLiteral("graphToolbar"));
  search_ = new QLineEdit(tb);
  search_->setPlaceholderText(tr("Find operator by name or type (Ctrl+F, Enter for next)"));
  search_->setClearButtonEnabled(true);
  search_->setMaximumWidth(360);
  connect(search_, &QLineEdit::returnPressed, this, [this] { graph_->findNext(search_->text()); });
  auto* zin = viewMenu->addAction(tr("Zoom &in"), this, [this] { graph_->zoomBy(1.25); });
  zin->setShortcut(QKeySequence::ZoomIn);
  auto* zout = viewMenu->addAction(tr("Zoom &out"), this, [this] { graph_->zoomBy(0.8); });
  zout->setShortcut(QKeySequence::ZoomOut);
  auto* fit = viewMenu->addAction(tr("&Fit"), this, [this] { graph_->fitAll(); });
  fit->setShortcuts({QKeySequence(Qt::Key_F), QKeySequence(QStringLiteral("Ctrl+0"))});
  fit->setToolTip(tr("Fit the whole graph in the view (F or Ctrl+0)"));
  auto* start = viewMenu->addAction(tr("&Start of the critical path"), this, [this] { graph_->frameStart(); });
  start->setShortcut(QKeySequence(Qt::Key_Home));
  auto* one = viewMenu->addAction(tr("Actual size (1:1)"), this, [this] { graph_->resetZoom(); });
  one->setShortcut(QKeySequence(QStringLiteral("Ctrl+1")));
  auto* crit = criticalAction_ = viewMenu->addAction(tr("&Critical path"));
  crit->setCheckable(true);
  crit->setShortcut(QKeySequence(QStringLiteral("Ctrl+K")));
  connect(crit, &QAction::toggled, graph_, &GraphView::setShowCriticalPath);
  auto* mini = viewMenu->addAction(tr("&Minimap"));
  mini->setCheckable(true);
  mini->setShortcut(QKeySequence(QStringLiteral("Ctrl+M")));
  connect(mini, &QAction::toggled, graph_, &GraphView::setMiniMapVisible);
  mini->setChecked(true);
  // Toolbar buttons with fixed labels (the menu's actions carry the command's text, which can be long).
  QUndoStack* stack = session_->undoStack();
  auto* tbUndo = tb->addAction(tr("Undo"), stack, &QUndoStack::undo);
  auto* tbRedo = tb->addAction(tr("Redo"), stack, &QUndoStack::redo);
  tbUndo->setEnabled(false);
  tbRedo->setEnabled(false);
  connect(stack, &QUndoStack::canUndoChanged, tbUndo, &QAction::setEnabled);
  connect(stack, &QUndoStack::canRedoChanged, tbRedo, &QAction::setEnabled);
  connect(stack, &QUndoStack::undoTextChanged, tbUndo,
          [tbUndo](const QString& t) { tbUndo->setToolTip(tr("Undo %1 (Ctrl+Z)").arg(t)); });
  connect(stack, &QUndoStack::redoTextChanged, tbRedo,
          [tbRedo](const QString& t) { tbRedo->setToolTip(tr("Redo %1 (Ctrl+Shift+Z)").arg(t)); });
  tb->addSeparator();
  tb->addAction(zin);
  tb->addAction(zout);
  tb->addAction(fit);
  tb->addAction(one);
  tb->addAction(crit);
  tb->addAction(mini);
  tb->addSeparator();
  tb->addWidget(search_);
  viewMenu->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) viewMenu->addAction(d->toggleViewAction());
  viewMenu->addSeparator();
  auto* reset = viewMenu->addAction(tr("&Reset layout"), this, &MainWindow::resetLayout);
  reset->setStatusTip(
      tr("Put every panel back where it starts: the graph in the middle, the side column on the "
         "right, the Gantt chart below"));
}

}  // namespace partex::gui
