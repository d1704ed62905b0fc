#pragma once
/// \file Main window: the graph coloured by device in the centre; docks for the platform and its
/// device palette, the schedulers and their comparison, the inspector of the selected operator, the
/// operator table and the Gantt chart. It wires the graph view's hand-made drag to the drop targets
/// (palette entries, Gantt device rows) and shows a preview while a drag hovers a device.
///
/// Where it is written, by responsibility: mainwindow.cpp (the session's signals, the header, the
/// model summary, recent files), mainwindow_docks.cpp (building the docks, menus and toolbar),
/// mainwindow_drag.cpp (drag and drop of operators onto devices, move and pin keys),
/// mainwindow_project.cpp (projects, autosave and recovery), mainwindow_export.cpp (plan, trace, CSV
/// and image exports), mainwindow_sidebyside.cpp (the side-by-side view of compared plans) and
/// mainwindow_profiles.cpp (loading and importing profiles, profiling this machine in the background).

#include <QList>
#include <QMainWindow>
#include <QPointer>
#include <QStringList>
#include <QTimer>

#include <memory>

#include "gui/operatortablemodel.h"
#include "sched/workload.h"
#include "session/jobtracker.h"
#include "session/session.h"
#include "sim/stream.h"

class QLabel;
class QTableView;
class QSortFilterProxyModel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QComboBox;
class QPushButton;
class QTextBrowser;
class QListWidget;
class QDockWidget;
class QAction;
class QProgressDialog;
class QToolButton;
class QDoubleSpinBox;

namespace partex {
class BackendRegistry;
class Backend;
}  // namespace partex

namespace partex::gui {

class GraphView;
class DevicePalette;
class CompareModel;
class GanttView;
class MemoryView;
class CompareView;
class PlatformEditor;
class TeachPanel;
class AlgorithmChooser;
class LlmPanel;
class StageStrip;

/// See the file comment.
class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading a model in the background; `dims` are "NAME=VALUE" or "INPUT:AXIS=VALUE". A
  /// `.partex` file opens as a project (so the command line, drops and recent files take them); a
  /// scheduling instance (a task graph, SAGA or WfCommons JSON, told by content) opens with its own
  /// devices and costs; a workload file (core's isWorkloadFile) opens as openWorkload() does.
  void openModel(const QString& path, const QStringList& dims = {});

  // --- Workloads of several models (issue 29; core/sched/workload.h) -----------------------------
  /// What a workload shown is: the file, the platform it was scheduled on, the workload and the
  /// scheduler's result with its joint table and timeline, each model's file (as loaded) and its
  /// operators' names (to find a bar's operator in the model the graph shows).
  struct ShownWorkload {
    QString path;
    QString platform;
    Workload workload;
    WorkloadResult result;
    std::vector<std::string> modelPaths;
    std::vector<std::vector<std::string>> operatorNames;
  };
  /// Schedules a workload file on the chosen platform in the background, by the calls of `partex-cli
  /// workload` (core's loadWorkloadFile, loadWorkloadProblems, scheduleWorkload), then shows the joint
  /// schedule in the Gantt chart and the workload's first model in the graph; modelLoaded() reports
  /// the end. A bad file: modelLoaded(false) and its one-line error (naming the file) in a dialog.
  void openWorkload(const QString& path);
  /// The workload scheduler and its search limit (partex-cli workload's --algo and --search-sec) for
  /// the next workload opened; a workload shown is scheduled again.
  void setWorkloadScheduler(const QString& algo, double searchSec = 1.0);
  /// The workload shown (null when none).
  const ShownWorkload* workload() const { return workload_.get(); }
  /// Opens model `index` of the workload in the graph view (the Gantt chart keeps the workload).
  void showWorkloadModel(int index);
  /// The model of the workload the graph shows (-1 without a workload).
  int workloadModelShown() const { return workload_ ? workloadModel_ : -1; }
  /// The strip of a pipelined plan's stages over the stream view (shown with the stream).
  StageStrip* stageStrip() const { return stageStrip_; }

  // --- Projects (docs/project-format.md) ---------------------------------------------------------
  /// Reads a project file and restores it in the background as one fresh session (undo history
  /// cleared); modelLoaded() reports the end. An unreadable file is refused at once (the error,
  /// naming the file, is returned and shown); a plan that does not fit the model falls back to HEFT
  /// with the error shown.
  Status openProject(const QString& path);
  /// Saves the session as a project, atomically; an edited platform goes beside it as
  /// `<project>.platform.json`. The session counts as saved afterwards and the autosave is removed.
  Status saveProject(const QString& path);
  /// The project file the session was opened from or saved to ("" when none).
  QString projectPath() const { return projectPath_; }
  /// The graph view's zoom, centre and selection (and the reference makespan) as a JSON object.
  QString viewStateJson() const;

  // --- Autosave and recovery -----------------------------------------------------------------
  /// AppDataLocation/autosave.partex.
  static QString autosavePath();
  /// Autosave period while there are unsaved changes (default 30 s; tests shorten it).
  void setAutosaveInterval(int ms);
  /// Writes the autosave now when the session has unsaved changes; false when nothing was written.
  bool autosaveNow();
  /// On start: when an autosave exists, asks "Recover unsaved work from <time>?" (only with dialogs
  /// enabled) and recovers it or deletes it. True when a recovery was started. `instead`: the model or
  /// project the command line asked for, which the question names (recovering opens the work instead).
  bool checkRecovery(const QString& instead = {});
  /// Restores the autosave without asking, as unsaved work (tests, and checkRecovery's yes).
  Status recoverAutosave();

  // --- Profiles: measured and imported costs (Session::addProfile) -------------------------------
  /// Loads a Partex profile (File > Load profile... after its file dialog). An error (one line naming
  /// the file) is shown in a dialog (with dialogs enabled) and the status bar, and returned.
  Status loadProfile(const QString& path);
  /// Imports an ONNX Runtime profiling JSON as the times of `device` (File > Import ONNX Runtime
  /// profile... after its dialogs). Errors as loadProfile().
  Status importOrtProfile(const QString& path, const QString& device, const QString& provider = {});
  /// Removes profile `index` of the session's list (the Remove button of the profile list).
  Status removeProfile(int index);
  /// Why "Profile on this machine" cannot run now ("" when it can): no model, a platform other than
  /// this-machine, or no platform device the CPU backend runs on.
  QString profilingUnavailableReason();
  /// The platform devices the profiler would measure: those of the CPU backend, in platform order.
  QStringList profilableDevices();
  /// Runs the profiler on a worker thread (Profile on this machine...) with a progress dialog that can
  /// cancel (with dialogs enabled). When it ends the profile is saved to `savePath` (empty: asked with
  /// a save dialog, next to the model) and loaded; profilingFinished() reports the end.
  Status startProfiling(const QString& savePath = {}, int reps = 10, int warmup = 2);
  /// Asks a running profiler to stop.
  void cancelProfiling();
  bool profilingRunning() const;
  /// The "Costs: N measured, N imported, N modelled" line of the status bar.
  QLabel* costsLabel() const { return costs_; }
  /// The list of applied profiles (platform dock).
  QListWidget* profileList() const { return profileList_; }
  QAction* profileAction() const { return profileAction_; }

  // --- Exports: each writes atomically and returns the error naming the file ---------------------
  Status exportPlan(const QString& path);
  /// Chrome / Perfetto trace JSON.
  Status exportTrace(const QString& path);
  /// One CSV row per operator.
  Status exportCsv(const QString& path);
  /// The whole graph scene as SVG or PNG, by the file extension.
  Status exportGraphImage(const QString& path);
  /// The Gantt chart as SVG or PNG, by the file extension.
  Status exportGanttImage(const QString& path);
  /// Chooses the platform (preset name or file) for this and later models.
  void setPlatform(const QString& nameOrPath);
  /// Runs a scheduler in the background (as the Run button does).
  void runScheduler(const QString& algorithm, bool respectPins = false);
  /// The Scheduler dock's objective (as its Objective box sets it): what Run and Compare optimise, the
  /// latency of one inference or the period of a stream (each inference within `latencyBoundUs` when
  /// positive). Choosing throughput shows the Gantt chart as a stream of inferences.
  void setObjective(Objective objective, double latencyBoundUs = 0);
  /// The Scheduler dock's objective chooser (latency, throughput).
  QComboBox* objectiveBox() const { return objectiveBox_; }
  /// The model shown now (null before the first load).
  std::shared_ptr<const LoadedModel> model() const { return session_->modelPtr(); }
  Session* session() const { return session_; }
  GraphView* graphView() const { return graph_; }
  DevicePalette* palette() const { return palette_; }
  QTableView* operatorView() const { return view_; }
  QTableView* compareView() const { return compareView_; }
  QLabel* makespanLabel() const { return makespan_; }
  /// The Gantt chart (null in builds without app/gantt).
  GanttView* ganttView() const { return gantt_; }
  /// The memory view under the Gantt chart, on its time axis (null in builds without app/gantt).
  MemoryView* memoryView() const { return memory_; }
  /// The status bar's warning while the plan does not fit the devices' memory (hidden when it fits).
  QLabel* capacityLabel() const { return capacity_; }
  /// Two plans side by side (a dock tabbed with the Gantt chart), fed by the compare table.
  CompareView* sideBySideView() const { return sideBySide_; }
  /// Re-shows the side-by-side view from the compare table's selection: one row is compared with
  /// the current plan, two rows with each other; without a selection, the best row.
  void updateSideBySide();
  /// Selects, in the graph, the operators the side-by-side plans place on different devices.
  void selectSideBySideDifferences();
  PlatformEditor* platformEditor() const { return editor_; }
  TeachPanel* teachPanel() const { return teach_; }
  /// The LLM tab (issue 26, item 6): the fastest llama.cpp placement of a GGUF model's job, the rules
  /// beside it and the arguments to copy. It runs when such a model opens; its placement is then
  /// applied to the graph (applyLlmPlacement) and the memory view unfolds on each device's memory.
  LlmPanel* llmPanel() const { return llm_; }
  /// Applies the LLM panel's placement to the opened table (core's llmPhasePlan) as one undoable
  /// step, and unfolds the memory view; the error (one line) when there is none or it does not apply.
  Status applyLlmPlacement();
  /// The scheduler chooser of the Scheduler dock: it shows the algorithm of the plan shown.
  QComboBox* algorithmBox() const { return algoBox_; }
  /// The algorithms ticked for Compare (a searchable, grouped list with "Select all").
  AlgorithmChooser* compareChooser() const { return chooser_; }
  /// "Best" or "HEFT, 3 operators moved by hand": the plan shown, as the Gantt title and the
  /// status bar name it ("" before a model).
  QString planTitle() const;
  /// The status bar's permanent "Plan: ..." label.
  QLabel* planLabel() const { return planLabel_; }
  /// The Inspector's text (the selected operator, its costs and why it sits where it is).
  QTextBrowser* inspector() const { return inspector_; }

  // --- Layout (saved per user in QSettings, restored on start) ----------------------------------
  /// Puts every dock back where a new user finds it: the Platform (tabbed with its editor), the
  /// Scheduler and a tabbed side area (Inspector, Compare, Operators, Teach, LLM) in one column on the right, the
  /// Gantt chart (memory view folded) under the graph, Side by side tabbed with it and hidden.
  void resetLayout();
  /// Folds or unfolds the memory view under the Gantt chart (remembered per user).
  void setMemoryFolded(bool folded);
  bool memoryFolded() const;
  QToolButton* memoryToggle() const { return memoryToggle_; }
  /// The docks by their object name ("inspectorDock", "compareDock", "ganttDock", ...).
  QDockWidget* dock(const QString& objectName) const;
  /// Writes the window geometry and dock state to QSettings (done on close).
  void saveLayout() const;
  /// Restores what saveLayout() wrote; false when nothing was saved (or it no longer fits).
  bool restoreLayout();

  /// The last load error ("" when none); also shown in a dialog unless dialogs are suppressed.
  QString lastError() const { return lastError_; }
  /// Tests and screenshots turn modal dialogs off (errors then go to the status bar only).
  void setDialogsEnabled(bool on) { dialogsEnabled_ = on; }
  /// Turns the critical-path overlay on or off (View > Critical path).
  void setShowCriticalPath(bool on);
  /// Shows the Gantt chart as a stream of inferences or as one (the Gantt dock's "Stream of inferences").
  void setShowStream(bool on);
  /// True while a load, a layout or a scheduler runs (screenshots wait for it).
  bool busy() const;
  /// The device under a global position: a palette entry or a Gantt device row; -1 when none.
  int dropTargetAt(const QPoint& globalPos) const;

 signals:
  /// Emitted when a load finished (ok or not).
  void modelLoaded(bool ok);
  /// Emitted when "Profile on this machine" ended: measured, saved and loaded (ok), or failed,
  /// cancelled or not saved; `message` says which.
  void profilingFinished(bool ok, const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  /// A clean exit (after offering to save unsaved changes, with dialogs enabled): the autosave is removed.
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;

 private:
  void buildDocks();
  void arrangeDocks();
  /// The default dock sizes for the window's size (again on the first show: sizes given before it
  /// may not hold).
  void sizeDocks();
  /// Grows the Platform dock until the device list shows every device (up to eight).
  void fitPaletteDock();
  /// The height of the tab bar of `d`'s tab group (0 when it is not tabbed).
  int tabBarHeightOf(const QDockWidget* d) const;
  void updatePlanTitle();
  void updateChooserButton();
  void buildMenus();
  void onModelChanged();
  void onCostsChanged();
  void adoptCostTable();
  void updateProfiles();
  void chooseProfile();
  void chooseOrtProfile();
  void profileWithDialog();
  struct ProfileRun;
  void onProfiled(ProfileRun run);
  const Backend* machineBackend();
  void onLoadFailed(const QString& message);
  void onPlanChanged();
  void onSelectionChanged();
  void onDragMoved(const QList<int>& ops, const QPoint& globalPos);
  void onDragDropped(const QList<int>& ops, const QPoint& globalPos);
  void clearDragFeedback();
  void moveSelectionTo(int device);
  void togglePin();
  void chooseFile();
  void choosePlatformFile();
  void updateRecentMenu();
  void addRecent(const QString& path);
  void showError(const QString& message);
  void updateInspector();
  void updateMakespan();
  void setPreview(const Timeline* tl);
  void updateGantt();
  /// The Gantt chart as a stream of inferences through the plan (issue 29): the plan's steady state
  /// simulated (sim/stream.h) and shown unrolled, inferences told apart, the period and the bottleneck
  /// marked. False, with the reason in the status bar, when the stream cannot be simulated.
  bool showStream();
  /// While a stage boundary is dragged: the stream's period and bottleneck if `ops` went to `device`
  /// (core's applyMove and simulateStream on a copy of the plan), shown in the stage strip.
  void previewStageMove(const QList<int>& ops, int device);
  /// True while the Gantt chart shows the workload (one is loaded and its toggle is on).
  bool showingWorkload() const;
  /// The Gantt chart as the workload's joint schedule (models in colour families, deadlines marked).
  void showWorkloadGantt();
  void onWorkloadScheduled(const QString& path, Result<std::shared_ptr<ShownWorkload>> r);
  void onWorkloadBarClicked(int task);
  /// The joint schedule's tasks that copy the selected operators of the model the graph shows.
  QList<int> workloadSelectedTasks() const;
  /// Forgets the workload shown (another file was opened).
  void clearWorkload();
  /// openModel() without the workload check.
  void openModelFile(const QString& path, const QStringList& dims);
  /// The memory view and the over-capacity warning, from the session's memory of the current plan.
  void updateMemory();
  Result<Project> buildProject(const QString& path, bool sidecarPlatform);
  Status writeProject(const QString& path);
  Status startProject(const QString& path, bool recovery);
  void removeAutosave();
  void applyViewState();
  void saveProjectAs();
  void chooseProject();
  void exportWithDialog(const QString& title, const QString& filter, Status (MainWindow::*fn)(const QString&));

  Session* session_ = nullptr;
  GraphView* graph_ = nullptr;
  DevicePalette* palette_ = nullptr;
  OperatorTableModel* table_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLineEdit* search_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* makespan_ = nullptr;
  QLabel* delta_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QComboBox* platformBox_ = nullptr;
  QPushButton* platformFileButton_ = nullptr;
  QString
      platformAsked_;  ///< The platform last named by setPlatform(), until a load has used it or said it is ignored.
  QComboBox* algoBox_ = nullptr;
  QComboBox* objectiveBox_ = nullptr;         ///< Latency or throughput (Session::setObjective).
  QDoubleSpinBox* latencyBoundBox_ = nullptr; ///< Under throughput: each inference's bound, ms (0: none).
  QPushButton* runButton_ = nullptr;
  QPushButton* reoptButton_ = nullptr;
  QPushButton* cancelButton_ = nullptr;
  QProgressBar* schedProgress_ = nullptr;
  QLabel* schedStatus_ = nullptr;
  AlgorithmChooser* chooser_ = nullptr;
  QToolButton* chooserButton_ = nullptr;
  QLabel* planLabel_ = nullptr;
  QToolButton* memoryToggle_ = nullptr;
  QToolButton* streamToggle_ = nullptr;  ///< Shows the Gantt chart as a stream of inferences.
  /// The unrolled table of the stream shown (the Gantt view points into it while it shows it).
  std::shared_ptr<const CostTable> streamTable_;
  StageStrip* stageStrip_ = nullptr;
  /// The workload shown; the Gantt view points into its joint table while it shows it.
  std::shared_ptr<const ShownWorkload> workload_;
  int workloadModel_ = 0;  ///< The workload's model the graph shows.
  QString workloadAlgo_ = QStringLiteral("partex");
  double workloadSearchSec_ = 1.0;
  QWidget* workloadBar_ = nullptr;  ///< The Gantt dock's workload controls (hidden without a workload).
  QToolButton* workloadToggle_ = nullptr;
  QComboBox* workloadModelBox_ = nullptr;
  QComboBox* workloadAlgoBox_ = nullptr;
  JobTracker workloadJobs_{this};  ///< Scheduling a workload: the newest wins.
  bool layoutRestored_ = false;  ///< The user's saved layout was restored: the first show keeps it.
  bool shown_ = false;
  QDockWidget* platDock_ = nullptr;
  QDockWidget* schedDock_ = nullptr;
  QDockWidget* inspDock_ = nullptr;
  QDockWidget* compareDock_ = nullptr;
  QDockWidget* opsDock_ = nullptr;
  QDockWidget* editDock_ = nullptr;
  QDockWidget* teachDock_ = nullptr;
  CompareModel* compare_ = nullptr;
  QTableView* compareView_ = nullptr;
  QTextBrowser* inspector_ = nullptr;
  QDockWidget* ganttDock_ = nullptr;
  GanttView* gantt_ = nullptr;
  MemoryView* memory_ = nullptr;
  QLabel* capacity_ = nullptr;
  CompareView* sideBySide_ = nullptr;
  QLabel* sideStatus_ = nullptr;
  QDockWidget* sideDock_ = nullptr;
  PlatformEditor* editor_ = nullptr;
  TeachPanel* teach_ = nullptr;
  LlmPanel* llm_ = nullptr;
  QDockWidget* llmDock_ = nullptr;
  QList<QAction*> moveActions_;
  QAction* criticalAction_ = nullptr;
  QString loadingPath_;
  QString projectPath_;  ///< See projectPath().
  bool loadingProject_ = false;
  bool recovering_ = false;  ///< The load in progress is a recovered autosave.
  QString pendingView_;      ///< View state of an opened project, applied once the layout is ready.
  QTimer* autosave_ = nullptr;
  QStringList loadingDims_;
  QString lastError_;
  bool dialogsEnabled_ = true;
  int previewDevice_ = -1;
  QLabel* costs_ = nullptr;
  QLabel* profileCosts_ = nullptr;
  QListWidget* profileList_ = nullptr;
  QPushButton* removeProfileButton_ = nullptr;
  QPushButton* loadProfileButton_ = nullptr;
  QPushButton* importOrtButton_ = nullptr;
  QAction* loadProfileAction_ = nullptr;
  QAction* importOrtAction_ = nullptr;
  QAction* profileAction_ = nullptr;
  std::unique_ptr<BackendRegistry> backends_;  ///< Created on first use (Profile on this machine).
  JobTracker profileJobs_{this};  ///< Profile on this machine: one run at a time.
  QPointer<QProgressDialog> profileDialog_;
  QString profileSavePath_;
};

}  // namespace partex::gui
