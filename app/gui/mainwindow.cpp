#include "gui/mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QProgressDialog>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "gantt/compareview.h"
#include "gantt/ganttview.h"
#include "graph/devicepalette.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/comparemodel.h"
#include "gui/inspector.h"
#include "gui/platformeditor.h"
#include "gui/teachpanel.h"
#include "plan/exports.h"
#include "plan/planfile.h"
#include "backend/backend.h"
#include "profile/ortprofile.h"
#include "profile/profiler.h"
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
  summary_ = new QLabel(tr("Open an ONNX model (File > Open, or drop a file here)."), central);
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
  costs_ = new QLabel(this);
  costs_->setToolTip(tr("Operator/device cost entries by source: measured (a Partex profile), imported (ONNX "
                        "Runtime profiling) or modelled (the platform's device models)"));
  statusBar()->addPermanentWidget(costs_);

  profileWatcher_ = new QFutureWatcher<std::shared_ptr<ProfileRun>>(this);
  connect(profileWatcher_, &QFutureWatcherBase::finished, this, &MainWindow::onProfiled);

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
  if (profileCancel_) profileCancel_->store(true);
  profileWatcher_->waitForFinished();
  session_->waitForJobs();
  // The session and its undo stack are children deleted after this destructor has run; signals
  // they emit while they go (cleanChanged, selectionChanged) must not reach a half-destroyed window.
  session_->undoStack()->disconnect(this);
  session_->disconnect(this);
  // The views read the session while they go: delete them before it.
  delete centralWidget();
  graph_ = nullptr;
}

void MainWindow::buildDocks() {
  // Platform: preset chooser and the device palette (a drop target).
  auto* platDock = new QDockWidget(tr("Platform"), this);
  platDock->setObjectName(QStringLiteral("platformDock"));
  auto* pw = new QWidget(platDock);
  auto* pl = new QVBoxLayout(pw);
  auto* row = new QHBoxLayout;
  platformBox_ = new QComboBox(pw);
  for (const auto& n : presetNames()) platformBox_->addItem(QString::fromStdString(n));
  platformBox_->setCurrentText(session_->platformName());
  platformBox_->setToolTip(tr("Platform preset (devices, links, cost models)"));
  auto* fileButton = new QPushButton(tr("File..."), pw);
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
  profileList_->setToolTip(tr("Applied in this order: Partex profiles, then ONNX Runtime imports; a later one "
                              "overrides an earlier one on the same operator and device"));
  pl->addWidget(profileList_);
  auto* profButtons = new QHBoxLayout;
  auto* loadProfileButton = new QPushButton(tr("Load..."), pw);
  loadProfileButton->setToolTip(tr("Load a profile measured by Profile on this machine or partex-cli profile"));
  auto* importButton = new QPushButton(tr("Import ORT..."), pw);
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
  addDockWidget(Qt::LeftDockWidgetArea, platDock);
  connect(platformBox_, &QComboBox::textActivated, this, &MainWindow::setPlatform);
  connect(fileButton, &QPushButton::clicked, this, &MainWindow::choosePlatformFile);

  // Scheduler: run one algorithm, or compare several.
  auto* schedDock = new QDockWidget(tr("Scheduler"), this);
  schedDock->setObjectName(QStringLiteral("schedulerDock"));
  auto* sw = new QWidget(schedDock);
  auto* sl = new QVBoxLayout(sw);
  algoBox_ = new QComboBox(sw);
  for (const auto& s : allSchedulers()) {
    algoBox_->addItem(QString::fromStdString(s->title()), QString::fromStdString(s->name()));
    algoBox_->setItemData(algoBox_->count() - 1, QString::fromStdString(s->description()), Qt::ToolTipRole);
  }
  algoBox_->setCurrentIndex(std::max(0, algoBox_->findData(QStringLiteral("heft"))));
  sl->addWidget(algoBox_);
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
  sl->addWidget(new QLabel(tr("Compare (tick algorithms):"), sw));
  compareAlgos_ = new QListWidget(sw);
  const QStringList defaults = {QStringLiteral("single"), QStringLiteral("greedy"), QStringLiteral("heft"),
                                QStringLiteral("cpop"), QStringLiteral("peft")};
  for (const auto& s : allSchedulers()) {
    auto* item = new QListWidgetItem(QString::fromStdString(s->title()), compareAlgos_);
    item->setData(Qt::UserRole, QString::fromStdString(s->name()));
    item->setToolTip(QString::fromStdString(s->description()));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(defaults.contains(QString::fromStdString(s->name())) ? Qt::Checked : Qt::Unchecked);
  }
  compareAlgos_->setMaximumHeight(120);
  sl->addWidget(compareAlgos_);
  auto* compareButton = new QPushButton(tr("Compare"), sw);
  sl->addWidget(compareButton);
  compare_ = new CompareModel(this);
  auto* compareProxy = new QSortFilterProxyModel(this);
  compareProxy->setSourceModel(compare_);
  compareProxy->setSortRole(Qt::UserRole);
  compareView_ = new QTableView(sw);
  compareView_->setModel(compareProxy);
  compareView_->setSortingEnabled(true);
  compareView_->verticalHeader()->hide();
  compareView_->verticalHeader()->setDefaultSectionSize(compareView_->fontMetrics().height() + 6);
  compareView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  compareView_->setToolTip(tr("Double-click a row to apply that algorithm's plan"));
  sl->addWidget(compareView_, 1);
  schedDock->setWidget(sw);
  addDockWidget(Qt::LeftDockWidgetArea, schedDock);
  splitDockWidget(platDock, schedDock, Qt::Vertical);

  connect(runButton_, &QPushButton::clicked, this, [this] { runScheduler(algoBox_->currentData().toString(), false); });
  connect(reoptButton_, &QPushButton::clicked, this,
          [this] { runScheduler(algoBox_->currentData().toString(), true); });
  connect(cancelButton_, &QPushButton::clicked, session_, &Session::cancelScheduler);
  connect(compareButton, &QPushButton::clicked, this, [this] {
    QStringList algos;
    for (int i = 0; i < compareAlgos_->count(); ++i)
      if (compareAlgos_->item(i)->checkState() == Qt::Checked)
        algos << compareAlgos_->item(i)->data(Qt::UserRole).toString();
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
    compareView_->resizeColumnsToContents();
    updateSideBySide();
    if (!rows.isEmpty()) sideDock_->show();
  });

  // Inspector and operator table, tabbed on the right.
  auto* inspDock = new QDockWidget(tr("Inspector"), this);
  inspDock->setObjectName(QStringLiteral("inspectorDock"));
  inspector_ = new QTextBrowser(inspDock);
  inspector_->setOpenLinks(false);
  inspDock->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspDock);

  auto* opsDock = new QDockWidget(tr("Operators"), this);
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
  addDockWidget(Qt::RightDockWidgetArea, opsDock);
  tabifyDockWidget(inspDock, opsDock);

  // Platform editor: an accepted edit re-builds the cost table on the edited platform.
  auto* editDock = new QDockWidget(tr("Platform editor"), this);
  editDock->setObjectName(QStringLiteral("platformEditorDock"));
  editor_ = new PlatformEditor(editDock);
  editDock->setWidget(editor_);
  addDockWidget(Qt::RightDockWidgetArea, editDock);
  tabifyDockWidget(opsDock, editDock);
  connect(editor_, &PlatformEditor::platformEdited, this, [this](const Platform& p) {
    // The editor also reports the platform it was just shown: only a real change re-builds.
    if (session_->hasModel() && platformToJson(p) == platformToJson(session_->platform())) return;
    const QString label = p.name.empty() ? tr("edited platform") : QString::fromStdString(p.name);
    session_->setPlatform(p, label);
  });

  // Teaching: step through a list scheduler's decisions; each step selects its task in the graph.
  auto* teachDock = new QDockWidget(tr("Teach"), this);
  teachDock->setObjectName(QStringLiteral("teachDock"));
  teach_ = new TeachPanel(teachDock);
  teachDock->setWidget(teach_);
  addDockWidget(Qt::RightDockWidgetArea, teachDock);
  tabifyDockWidget(editDock, teachDock);
  connect(teach_, &TeachPanel::stepChanged, this,
          [this](int task, int, const QList<int>&, const std::vector<DeviceId>&) {
            if (task < 0 || task >= session_->numOps()) return;
            session_->setSelection({task});
            graph_->centerOnOp(task);
          });
  inspDock->raise();

  // Gantt chart (app/gantt); a marked placeholder in builds without it.
  ganttDock_ = new QDockWidget(tr("Gantt chart"), this);
  ganttDock_->setObjectName(QStringLiteral("ganttDock"));
  gantt_ = new GanttView(ganttDock_);
  gantt_->setMinimumHeight(180);
  ganttDock_->setWidget(gantt_);
  connect(gantt_, &GanttView::taskClicked, this, [this](int task, Qt::KeyboardModifiers mods) {
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
  addDockWidget(Qt::BottomDockWidgetArea, ganttDock_);

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
  addDockWidget(Qt::BottomDockWidgetArea, sideDock);
  tabifyDockWidget(ganttDock_, sideDock);
  // Hidden until a comparison has rows, so that its two charts do not take room from the others.
  sideDock->hide();
  ganttDock_->raise();
  connect(selectDiff, &QPushButton::clicked, this, &MainWindow::selectSideBySideDifferences);
  connect(sideBySide_, &CompareView::taskClicked, this, [this](int task, Qt::KeyboardModifiers) {
    if (!session_->hasModel() || task < 0 || task >= session_->numOps()) return;
    session_->setSelection({task});
    graph_->centerOnOp(task);
  });
  connect(compareView_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateSideBySide);
  resizeDocks({platDock, inspDock}, {330, 380}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open..."), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  file->addAction(tr("Open Pro&ject..."), this, &MainWindow::chooseProject);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("Open &platform file..."), this, &MainWindow::choosePlatformFile);
  file->addSeparator();
  file->addAction(tr("&Load profile..."), this, &MainWindow::chooseProfile)
      ->setStatusTip(tr("Apply measured costs from a profile file (Profile on this machine, partex-cli profile)"));
  file->addAction(tr("&Import ONNX Runtime profile..."), this, &MainWindow::chooseOrtProfile)
      ->setStatusTip(tr("Apply an ONNX Runtime profiling JSON as the times of one platform device"));
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
  fit->setShortcut(QKeySequence(QStringLiteral("Ctrl+0")));
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
}

void MainWindow::openModel(const QString& path, const QStringList& dims) {
  if (path.endsWith(QLatin1String(kProjectExtension), Qt::CaseInsensitive)) {
    (void)openProject(path);
    return;
  }
  loadingProject_ = false;
  recovering_ = false;
  pendingView_.clear();
  loadingPath_ = path;
  loadingDims_ = dims;
  session_->open(path, dims);
}

void MainWindow::setPlatform(const QString& nameOrPath) {
  if (platformBox_->findText(nameOrPath) < 0) platformBox_->addItem(nameOrPath);
  platformBox_->setCurrentText(nameOrPath);
  session_->setPlatform(nameOrPath);
}

void MainWindow::setShowCriticalPath(bool on) {
  criticalAction_->setChecked(on);
}

void MainWindow::runScheduler(const QString& algorithm, bool respectPins) {
  session_->runScheduler(algorithm, respectPins);
}

bool MainWindow::busy() const {
  return session_->loading() || session_->schedulerRunning() || graph_->layoutRunning() || profiling_;
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
  if (!m) return;
  view_->resizeColumnsToContents();
  const auto& g = m->graph;
  const QString file = QFileInfo(QString::fromStdString(m->path)).fileName();
  summary_->setText(tr("<b>%1</b> &nbsp; %2 operators &nbsp; %3 MACs &nbsp; %4 FLOPs &nbsp; parameters %5 &nbsp; peak "
                       "activations %6 &nbsp; opset %7%8<br>"
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
  if (!loadingPath_.isEmpty()) projectPath_ = loadingProject_ && !recovering_ ? loadingPath_ : QString();
  setWindowTitle(tr("%1[*] - Partex").arg(projectPath_.isEmpty() ? file : QFileInfo(projectPath_).fileName()));
  setWindowModified(session_->modified());
  if (platformBox_->findText(session_->platformName()) >= 0) platformBox_->setCurrentText(session_->platformName());
  editor_->setPlatform(session_->platform(), session_->platformName());
  for (int i = 0; i < moveActions_.size(); ++i) {
    moveActions_[i]->setVisible(i < session_->numDevices());
    moveActions_[i]->setEnabled(i < session_->numDevices());
    if (i < session_->numDevices()) moveActions_[i]->setText(session_->deviceLabel(i));
  }
  if (!loadingPath_.isEmpty()) {
    statusBar()->showMessage(tr("Loaded %1").arg(loadingPath_), 5000);
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

void MainWindow::onPlanChanged() {
  setWindowModified(session_->modified());
  updateGantt();
  updateMakespan();
  updateInspector();
}

void MainWindow::onSelectionChanged() {
  updateInspector();
  if (gantt_) gantt_->setSelectedTasks(session_->selection());
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

int MainWindow::dropTargetAt(const QPoint& globalPos) const {
  const int d = palette_->deviceAt(globalPos);
  if (d >= 0) return d;
  if (gantt_ && gantt_->isVisible()) return gantt_->deviceAt(globalPos);
  return -1;
}

void MainWindow::setPreview(const Timeline* tl) {
  if (gantt_) gantt_->setPreview(tl, tl ? session_->fusedKernelsOf(*tl) : std::vector<FusedKernel>{});
}

void MainWindow::updateGantt() {
  if (!gantt_) return;
  if (!session_->hasModel()) return;
  const auto& st = session_->state();
  const QString algo = shortTitle(st.algorithm);
  gantt_->setTimeline(session_->table(), session_->timeline(), session_->deviceColors(), session_->fusedKernels());
  gantt_->setReferenceMakespan(st.schedulerMakespan);
  gantt_->setReferenceLabel(tr("%1 plan").arg(algo));
  gantt_->setTitle(session_->plan().algorithm == "manual" ? tr("Edited %1 plan").arg(algo) : algo);
  gantt_->setSelectedTasks(session_->selection());
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

void MainWindow::chooseFile() {
  QString path = QFileDialog::getOpenFileName(this, tr("Open ONNX model or project"), QString(),
                                              tr("ONNX models and projects (*.onnx *.partex);;All files (*)"));
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

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openModel(urls.first().toLocalFile());
}

// --- Projects ----------------------------------------------------------------------------------

/// "dir/name.platform.json" for "dir/name.partex": where an edited platform is saved beside a project.
static QString sidecarPlatformPath(const QString& projectPath) {
  const QFileInfo fi(projectPath);
  return fi.dir().filePath(fi.completeBaseName() + QStringLiteral(".platform.json"));
}

/// "name: " + the message, unless the message already names the file.
static Status namingFile(const QString& path, Status st) {
  if (st) return st;
  const QString name = QFileInfo(path).fileName();
  if (QString::fromStdString(st.message()).contains(name)) return st;
  return makeError(name.toStdString(), ": ", st.message());
}

QString MainWindow::viewStateJson() const {
  QJsonObject v;
  v.insert(QStringLiteral("zoom"), graph_->transform().m11());
  const QPointF c = graph_->mapToScene(graph_->viewport()->rect().center());
  v.insert(QStringLiteral("center"), QJsonArray{c.x(), c.y()});
  QJsonArray sel;
  if (const auto* t = session_->table())
    for (int op : session_->selection()) sel.append(QString::fromStdString(t->taskNames[static_cast<size_t>(op)]));
  v.insert(QStringLiteral("selected"), sel);
  v.insert(QStringLiteral("reference_makespan_us"), session_->state().schedulerMakespan);
  return QString::fromUtf8(QJsonDocument(v).toJson(QJsonDocument::Compact));
}

void MainWindow::applyViewState() {
  if (pendingView_.isEmpty() || session_->loading()) return;
  const QJsonObject v = QJsonDocument::fromJson(pendingView_.toUtf8()).object();
  pendingView_.clear();
  const double zoom = v.value(QStringLiteral("zoom")).toDouble(0);
  if (zoom >= 0.01 && zoom <= 8) graph_->setTransform(QTransform::fromScale(zoom, zoom));
  const QJsonArray c = v.value(QStringLiteral("center")).toArray();
  if (c.size() == 2) graph_->centerOn(c[0].toDouble(), c[1].toDouble());
}

Result<Project> MainWindow::buildProject(const QString& path, bool sidecarPlatform) {
  const LoadedModel* m = session_->model();
  const CostTable* t = session_->table();
  if (!m || !t) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded to save");
  Project p;
  p.modelPath = QFileInfo(QString::fromStdString(m->path)).absoluteFilePath().toStdString();
  p.modelSha256 = m->graph.graphSha256;
  p.dims = m->dims;
  if (const auto& edited = session_->editedPlatform(); edited && sidecarPlatform) {
    // An edited platform has no file or preset name: it goes beside the project.
    const QString side = sidecarPlatformPath(path);
    if (auto st = saveExport(side.toStdString(), platformToJson(*edited)); !st) return Error{st.message()};
    p.platform = QFileInfo(side).absoluteFilePath().toStdString();
  } else {
    const QString name = session_->platformName();
    const auto presets = presetNames();
    const bool preset = std::find(presets.begin(), presets.end(), name.toStdString()) != presets.end();
    p.platform =
        preset || !QFileInfo::exists(name) ? name.toStdString() : QFileInfo(name).absoluteFilePath().toStdString();
  }
  // Profiles by path (projectToJson makes those beside or below the project relative), in the
  // session's application order: Partex profiles, then ONNX Runtime imports.
  for (const auto& lp : session_->profiles()) {
    if (lp.kind == LoadedProfile::Kind::Partex)
      p.profiles.push_back(lp.path);
    else
      p.ortImports.push_back({lp.path, lp.device, lp.provider});
  }
  const PlanState& st = session_->state();
  PlanIdentity id{QFileInfo(QString::fromStdString(m->path)).fileName().toStdString(), m->graph.graphSha256,
                  session_->platform().name};
  p.planJson = planToJson(*t, st.plan, session_->timeline(), id, &m->graph);
  p.algorithm = st.algorithm;
  for (const auto& [op, dev] : st.pinned)
    p.pins.emplace_back(t->taskNames[static_cast<size_t>(op)], t->deviceIds[static_cast<size_t>(dev)]);
  for (int op = 0; op < t->numTasks(); ++op)
    if (session_->isManual(op))
      p.moves.emplace_back(t->taskNames[static_cast<size_t>(op)],
                           t->deviceIds[static_cast<size_t>(session_->deviceOf(op))]);
  p.viewJson = viewStateJson().toStdString();
  return p;
}

Status MainWindow::writeProject(const QString& path) {
  auto p = buildProject(path, true);
  if (!p) return p.status();
  return namingFile(path, partex::saveProject(path.toStdString(), *p));
}

Status MainWindow::saveProject(const QString& path) {
  if (auto st = writeProject(path); !st) return st;
  projectPath_ = QFileInfo(path).absoluteFilePath();
  session_->markSaved();
  removeAutosave();  // the work is safe in the project now
  addRecent(projectPath_);
  setWindowTitle(tr("%1[*] - Partex").arg(QFileInfo(path).fileName()));
  setWindowModified(false);
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return {};
}

Status MainWindow::openProject(const QString& path) {
  return startProject(path, false);
}

Status MainWindow::startProject(const QString& path, bool recovery) {
  auto p = loadProjectFile(path.toStdString());
  if (!p) {
    const QString msg = QString::fromStdString(namingFile(path, p.status()).message());
    showError(msg);
    emit modelLoaded(false);
    return Error{msg.toStdString()};
  }
  loadingPath_ = path;
  loadingDims_.clear();
  loadingProject_ = true;
  recovering_ = recovery;
  pendingView_ = QString::fromStdString(p->viewJson);
  platformBox_->setCurrentText(QString::fromStdString(p->platform));
  session_->openProject(*p, path, recovery);
  return {};
}

void MainWindow::chooseProject() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), QString(),
                                                    tr("Partex projects (*.partex);;All files (*)"));
  if (!path.isEmpty()) (void)openProject(path);
}

void MainWindow::saveProjectAs() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: there is nothing to save"));
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, tr("Save project"), projectPath_,
                                              tr("Partex projects (*.partex);;All files (*)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1String(kProjectExtension);
  if (auto st = saveProject(path); !st) showError(QString::fromStdString(st.message()));
}

// --- Autosave and recovery ---------------------------------------------------------------------

QString MainWindow::autosavePath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/autosave.partex");
}

void MainWindow::setAutosaveInterval(int ms) {
  autosave_->start(ms);
}

bool MainWindow::autosaveNow() {
  if (!session_->hasModel() || session_->loading() || !session_->modified()) return false;
  const QString path = autosavePath();
  QDir().mkpath(QFileInfo(path).path());
  if (auto st = writeProject(path); !st) {
    statusBar()->showMessage(tr("Autosave failed: %1").arg(QString::fromStdString(st.message())), 8000);
    return false;
  }
  return true;
}

void MainWindow::removeAutosave() {
  QFile::remove(autosavePath());
  QFile::remove(sidecarPlatformPath(autosavePath()));
}

bool MainWindow::checkRecovery(const QString& instead) {
  const QFileInfo fi(autosavePath());
  if (!fi.exists() || !dialogsEnabled_) return false;
  QString question =
      tr("Recover unsaved work from %1?").arg(QLocale().toString(fi.lastModified(), QLocale::ShortFormat));
  if (!instead.isEmpty())
    question += QLatin1Char('\n') + tr("Yes opens the recovered work instead of %1; No discards it and opens %1.")
                                        .arg(QFileInfo(instead).fileName());
  const auto answer =
      QMessageBox::question(this, tr("Partex"), question, QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes);
  if (answer != QMessageBox::Yes) {
    removeAutosave();
    return false;
  }
  return recoverAutosave().isOk();
}

Status MainWindow::recoverAutosave() {
  const QString path = autosavePath();
  if (!QFileInfo::exists(path)) return makeError(path.toStdString(), ": no autosave to recover");
  return startProject(path, true);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (dialogsEnabled_ && session_->modified()) {
    const auto answer =
        QMessageBox::question(this, tr("Partex"), tr("Save the changes to the project before closing?"),
                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) {
      e->ignore();
      return;
    }
    if (answer == QMessageBox::Save) {
      if (projectPath_.isEmpty())
        saveProjectAs();
      else if (auto st = saveProject(projectPath_); !st)
        showError(QString::fromStdString(st.message()));
      if (session_->modified()) {  // not saved (cancelled or failed): stay open
        e->ignore();
        return;
      }
    }
  }
  removeAutosave();
  QMainWindow::closeEvent(e);
}

// --- Exports -----------------------------------------------------------------------------------

void MainWindow::exportWithDialog(const QString& title, const QString& filter,
                                  Status (MainWindow::*fn)(const QString&)) {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: there is nothing to export"));
    return;
  }
  QString selected;
  QString path = QFileDialog::getSaveFileName(this, title, QString(), filter, &selected);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) {  // take the extension from the chosen filter
    const int a = selected.indexOf(QLatin1String("*.")), b = selected.indexOf(QLatin1Char(')'), a);
    if (a >= 0 && b > a) path += selected.mid(a + 1, b - a - 1);
  }
  if (auto st = (this->*fn)(path); !st)
    showError(QString::fromStdString(st.message()));
  else
    statusBar()->showMessage(tr("Exported %1").arg(path), 5000);
}

/// The plan's identity for plan files written from the session.
static PlanIdentity identityOf(const Session& s) {
  const LoadedModel* m = s.model();
  return PlanIdentity{QFileInfo(QString::fromStdString(m->path)).fileName().toStdString(), m->graph.graphSha256,
                      s.platform().name};
}

Status MainWindow::exportPlan(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  return namingFile(path, savePlan(path.toStdString(), *session_->table(), session_->plan(), session_->timeline(),
                                   identityOf(*session_), &session_->model()->graph));
}

Status MainWindow::exportTrace(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  const std::string label = session_->plan().algorithm.empty() ? "plan" : session_->plan().algorithm;
  return namingFile(path, saveExport(path.toStdString(), traceJson(*session_->table(), session_->timeline(), label, 1,
                                                                   &session_->fusedKernels())));
}

Status MainWindow::exportCsv(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  return namingFile(path, saveExport(path.toStdString(), timelineToCsv(*session_->table(), session_->timeline())));
}

Status MainWindow::exportGraphImage(const QString& path) {
  const std::string name = QFileInfo(path).fileName().toStdString();
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != QLatin1String("svg") && suffix != QLatin1String("png"))
    return makeError(name, ": unknown image type (use .svg or .png)");
  if (!session_->hasModel()) return makeError(name, ": no model loaded");
  if (graph_->layoutRunning()) return makeError(name, ": the graph is still being laid out");
  QGraphicsScene* scene = graph_->scene();
  const QRectF source = scene->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  if (source.isEmpty()) return makeError(name, ": the graph is empty");
  // Through QSaveFile: written to a temporary file beside the target, renamed on commit.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return makeError(name, ": ", file.errorString().toStdString());
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator gen;
    gen.setOutputDevice(&file);
    gen.setSize(source.size().toSize());
    gen.setViewBox(QRectF(QPointF(0, 0), source.size()));
    gen.setTitle(QString::fromStdString(session_->platform().name));
    QPainter painter(&gen);
    scene->render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  } else {
    // At most 8,000 pixels on a side (a 10,000-operator graph is far bigger at 1:1).
    const double scale = std::min({2.0, 8000.0 / source.width(), 8000.0 / source.height()});
    QImage img((source.size() * scale).toSize().expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
    img.fill(Qt::white);
    {
      QPainter painter(&img);
      painter.setRenderHint(QPainter::Antialiasing);
      scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(img.size())), source);
    }
    if (!img.save(&file, "PNG")) return makeError(name, ": cannot encode the PNG image");
  }
  if (!file.commit()) return makeError(name, ": ", file.errorString().toStdString());
  return {};
}

Status MainWindow::exportGanttImage(const QString& path) {
  const std::string name = QFileInfo(path).fileName().toStdString();
  if (!session_->hasModel()) return makeError(name, ": no model loaded");
  if (!gantt_) return makeError(name, ": no Gantt chart in this build");
  return namingFile(path, gantt_->saveImage(path));
}

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

// --- Profiles ----------------------------------------------------------------------------------

/// The profiler's result, built on the worker.
struct MainWindow::ProfileRun {
  Result<Profile> profile = makeError("not run");
  ProfilerInfo info;
  bool cancelled = false;
};

void MainWindow::updateProfiles() {
  const CostCounts c = session_->costCounts();
  const QString line = session_->hasModel() ? tr("Costs: %1 measured, %2 imported, %3 modelled")
                                                  .arg(c.measured)
                                                  .arg(c.imported)
                                                  .arg(c.modelled)
                                            : QString();
  costs_->setText(line);
  profileCosts_->setText(
      tr("<b>Profiles</b> &nbsp; %1")
          .arg(!session_->hasModel()        ? tr("(open a model first)")
               : session_->profiles().empty() ? tr("none: all costs are modelled")
                                              : line.toHtmlEscaped()));
  const int keep = profileList_->currentRow();
  profileList_->clear();
  for (const auto& p : session_->profiles()) {
    const bool ort = p.kind == LoadedProfile::Kind::OrtImport;
    const QString devices = QString::fromStdString(join(p.deviceIds(), ", "));
    auto* item = new QListWidgetItem(
        ort ? tr("%1  (imported, ONNX Runtime%2, as %3: %4 times)")
                  .arg(QString::fromStdString(p.fileName()),
                       p.provider.empty() ? QString() : QStringLiteral(" ") + QString::fromStdString(p.provider),
                       devices)
                  .arg(p.report.opsApplied)
            : tr("%1  (%2 on %3: %4 times)")
                  .arg(QString::fromStdString(p.fileName()), p.profile.imported ? tr("imported") : tr("measured"),
                       devices)
                  .arg(p.report.opsApplied),
        profileList_);
    QString tip = QString::fromStdString(p.path) + QLatin1Char('\n') + QString::fromStdString(applySummary(p));
    if (!p.profile.measuredAt.empty() || !p.profile.machine.empty())
      tip += QLatin1Char('\n') + tr("Measured %1 on %2 (%3 %4)")
                                     .arg(QString::fromStdString(p.profile.measuredAt),
                                          QString::fromStdString(p.profile.machine),
                                          QString::fromStdString(p.profile.backendName),
                                          QString::fromStdString(p.profile.backendVersion));
    item->setToolTip(tip);
  }
  if (keep >= 0 && keep < profileList_->count()) profileList_->setCurrentRow(keep);
  const int rows = std::min(profileList_->count(), 4);
  profileList_->setVisible(rows > 0);
  if (rows > 0)
    profileList_->setFixedHeight(rows * profileList_->sizeHintForRow(0) + 2 * profileList_->frameWidth() + 2);
  removeProfileButton_->setEnabled(profileList_->currentRow() >= 0);
  const QString why = profilingUnavailableReason();
  profileAction_->setEnabled(why.isEmpty() && !profiling_);
  profileAction_->setToolTip(why.isEmpty() ? tr("Measure every operator on this computer's cores (%1) and load the "
                                                "profile")
                                                 .arg(profilableDevices().join(QStringLiteral(", ")))
                                           : why);
  profileAction_->setStatusTip(profileAction_->toolTip());
}

Status MainWindow::loadProfile(const QString& path) {
  auto r = session_->addProfile(path);
  if (!r) {
    showError(QString::fromStdString(r.message()));
    return r.status();
  }
  return {};
}

Status MainWindow::importOrtProfile(const QString& path, const QString& device, const QString& provider) {
  auto r = session_->addOrtImport(path, device, provider);
  if (!r) {
    showError(QString::fromStdString(r.message()));
    return r.status();
  }
  return {};
}

Status MainWindow::removeProfile(int index) {
  auto st = session_->removeProfile(index);
  if (!st) showError(QString::fromStdString(st.message()));
  return st;
}

/// The folder of the current model, where profiles are looked for and saved first.
static QString modelFolder(const Session& s) {
  return s.model() ? QFileInfo(QString::fromStdString(s.model()->path)).absolutePath() : QString();
}

void MainWindow::chooseProfile() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: a profile applies to the model it was measured on"));
    return;
  }
  const QString path = QFileDialog::getOpenFileName(this, tr("Load profile"), modelFolder(*session_),
                                                    tr("Partex profiles (*.json);;All files (*)"));
  if (!path.isEmpty()) (void)loadProfile(path);
}

void MainWindow::chooseOrtProfile() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: the imported times apply to its operators"));
    return;
  }
  const QString path = QFileDialog::getOpenFileName(this, tr("Import ONNX Runtime profile"), modelFolder(*session_),
                                                    tr("ONNX Runtime profiling JSON (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QStringList devices;
  for (int d = 0; d < session_->numDevices(); ++d) devices << session_->deviceLabel(d);
  bool ok = false;
  const QString device = QInputDialog::getItem(
      this, tr("Import ONNX Runtime profile"),
      tr("%1: which device of %2 were these times measured on?")
          .arg(QFileInfo(path).fileName(), QString::fromStdString(session_->platform().name)),
      devices, 0, false, &ok);
  if (!ok || device.isEmpty()) return;
  // A trace with several execution providers: ask which one's kernels to keep.
  OrtImportInfo info;
  auto probe = loadOrtProfileFile(path.toStdString(), device.toStdString(), "", &info);
  if (!probe) {
    showError(QString::fromStdString(probe.message()));
    return;
  }
  QString provider;
  if (info.providers.size() > 1) {
    QStringList names{tr("All providers")};
    for (const auto& [name, n] : info.providers) names << QString::fromStdString(name);
    const QString pick = QInputDialog::getItem(this, tr("Import ONNX Runtime profile"),
                                               tr("The trace holds kernels of several execution providers. Keep:"),
                                               names, 0, false, &ok);
    if (!ok) return;
    if (pick != names.first()) provider = pick;
  }
  (void)importOrtProfile(path, device, provider);
}

const Backend* MainWindow::cpuBackend() {
  if (!backends_) {
    backends_ = std::make_unique<BackendRegistry>();
    registerBuiltinBackends(*backends_);
  }
  return backends_->find("cpu");
}

QStringList MainWindow::profilableDevices() {
  QStringList out;
  if (!session_->hasModel()) return out;
  const Backend* cpu = cpuBackend();
  if (!cpu) return out;
  const auto devs = cpu->devices();
  for (const auto& d : session_->platform().devices)
    if (std::any_of(devs.begin(), devs.end(), [&](const BackendDevice& b) { return b.id == d.id; }))
      out << QString::fromStdString(d.id);
  return out;
}

QString MainWindow::profilingUnavailableReason() {
  if (!session_->hasModel()) return tr("Open a model first");
  if (session_->loading()) return tr("Wait until the model has loaded");
  // Only this computer's platform describes the cores the CPU backend measures: the times of a
  // core0 on a platform file would be this machine's, not that platform's.
  if (session_->platform().name != "this-machine")
    return tr("Profiling measures this computer: choose the this-machine platform (now %1)")
        .arg(QString::fromStdString(session_->platform().name));
  if (profilableDevices().isEmpty()) return tr("No device of this platform is one the CPU backend runs on");
  return {};
}

void MainWindow::profileWithDialog() {
  (void)startProfiling();
}

bool MainWindow::profilingRunning() const {
  return profiling_;
}

void MainWindow::cancelProfiling() {
  if (profileCancel_) profileCancel_->store(true);
}

Status MainWindow::startProfiling(const QString& savePath, int reps, int warmup) {
  if (profiling_) return makeError("the profiler is already running");
  const QString why = profilingUnavailableReason();
  if (!why.isEmpty()) {
    showError(tr("Cannot profile: %1").arg(why));
    return makeError("cannot profile: ", why.toStdString());
  }
  const Backend* cpu = cpuBackend();
  auto model = session_->modelPtr();
  ProfilerOptions o;
  // In context, as partex-cli profile does by default: these times predict whole runs best.
  o.method = ProfilerOptions::Method::InContext;
  for (const auto& d : profilableDevices()) o.devices.push_back(d.toStdString());
  o.reps = std::max(1, reps);
  o.warmup = std::max(0, warmup);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  profileCancel_ = cancel;
  o.cancel = cancel.get();
  profileSavePath_ = savePath;
  profiling_ = true;
  const QString file = QFileInfo(QString::fromStdString(model->path)).fileName();
  const QString what = tr("Profiling %1 on %2 (%3 timed runs per operator)...")
                           .arg(file, profilableDevices().join(QStringLiteral(", ")))
                           .arg(o.reps);
  if (dialogsEnabled_) {
    auto* dlg = new QProgressDialog(what, tr("Cancel"), 0, 1000, this);
    dlg->setWindowTitle(tr("Profile on this machine"));
    dlg->setWindowModality(Qt::WindowModal);
    dlg->setMinimumDuration(0);
    dlg->setAutoClose(false);
    dlg->setAutoReset(false);
    dlg->setValue(0);
    connect(dlg, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
    profileDialog_ = dlg;
  }
  progress_->show();
  statusBar()->showMessage(what);
  updateProfiles();  // disables the action while it runs
  // Progress comes from the profiling threads: posted to the window, at most every 50 ms.
  QPointer<MainWindow> self(this);
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  const QString head = tr("Profiling %1 (%2 timed runs per operator)").arg(file).arg(o.reps);
  o.progress = [self, last, head](int done, int total, const std::string& step) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(50) && done < total) return;
    *last = now;
    if (!self) return;
    const QString text = head + QLatin1Char('\n') + QString::fromStdString(step);
    QMetaObject::invokeMethod(
        self.data(),
        [self, done, total, text] {
          if (!self || !self->profileDialog_) return;
          self->profileDialog_->setMaximum(std::max(1, total));
          self->profileDialog_->setValue(std::min(done, std::max(1, total) - 1));  // 100 % closes nothing
          self->profileDialog_->setLabelText(text);
        },
        Qt::QueuedConnection);
  };
  profileWatcher_->setFuture(QtConcurrent::run([model, cpu, o, cancel] {
    auto run = std::make_shared<ProfileRun>();
    run->profile = profileModel(model->graph, *cpu, o, &run->info);
    run->cancelled = cancel->load();
    return run;
  }));
  return {};
}

void MainWindow::onProfiled() {
  auto run = profileWatcher_->result();
  profiling_ = false;
  progress_->hide();
  if (profileDialog_) {
    profileDialog_->close();
    profileDialog_->deleteLater();
  }
  const QString savePath = profileSavePath_;
  profileSavePath_.clear();
  updateProfiles();
  auto finish = [this](bool ok, const QString& msg) {
    statusBar()->showMessage(msg, 10000);
    emit profilingFinished(ok, msg);
  };
  if (!run || run->cancelled) return finish(false, tr("Profiling cancelled"));
  const LoadedModel* m = session_->model();
  if (!run->profile) {
    const QString msg = tr("Profiling failed: %1").arg(QString::fromStdString(run->profile.message()));
    showError(msg);
    return finish(false, msg);
  }
  if (!m || m->graph.graphSha256 != run->profile->modelSha256)
    return finish(false, tr("Profiling finished, but another model was opened meanwhile: the profile is discarded"));
  QString path = savePath;
  if (path.isEmpty()) {
    const QFileInfo mi(QString::fromStdString(m->path));
    const QString suggested = mi.absoluteDir().filePath(mi.completeBaseName() + QStringLiteral(".profile.json"));
    path = dialogsEnabled_ ? QFileDialog::getSaveFileName(this, tr("Save the measured profile"), suggested,
                                                          tr("Partex profiles (*.json);;All files (*)"))
                           : suggested;
    if (path.isEmpty()) return finish(false, tr("The measured profile was not saved, so it is not loaded"));
  }
  if (auto st = saveProfile(path.toStdString(), *run->profile); !st) {
    const QString msg = QString::fromStdString(namingFile(path, st).message());
    showError(msg);
    return finish(false, msg);
  }
  if (auto st = loadProfile(path); !st) return finish(false, QString::fromStdString(st.message()));
  QString done = tr("Measured %1 kernel runs in %2 s, saved %3 and loaded it")
                     .arg(run->info.measurements)
                     .arg(run->info.seconds, 0, 'f', 1)
                     .arg(QFileInfo(path).fileName());
  // Disturbed runs (other programs took the CPUs) are discarded and repeated by the profiler; say so,
  // and say when some could not be avoided, as partex-cli profile does.
  if (run->info.disturbedRunsDiscarded > 0)
    done += tr("; %1 disturbed runs discarded and repeated").arg(run->info.disturbedRunsDiscarded);
  for (const auto& note : run->info.notes) done += QStringLiteral("; ") + QString::fromStdString(note);
  finish(true, done);
}

}  // namespace partex::gui
