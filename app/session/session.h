#pragma once
/// \file The session: one loaded model on one platform (or one scheduling instance, which brings its
/// own devices and costs: no ONNX graph and no platform), its cost table, the current plan and its
/// simulated timeline, the user's pins, and an undo stack over every change of the plan. Views
/// (graph, palette, Gantt, inspector) read from it and react to its signals; nothing else edits the
/// plan. Heavy work (import, cost table, schedulers) runs on worker threads, one JobTracker per kind
/// of job: the newest job wins.
///
/// Where it is written: session.cpp (state, undo, editing, selection, what the views derive from the
/// plan), session_jobs.cpp (loading, scheduling and comparing in the background), session_profiles.cpp
/// (adding and removing profiles). The free functions it builds on are in prepare.h (what a load
/// installs) and profiles.h (reading and applying profiles); the rule for moving operators is core's
/// (plan/move.h).

#include <QColor>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "plan/fusedkernels.h"
#include "plan/move.h"
#include "plan/project.h"
#include "platform/platform.h"
#include "sched/scheduler.h"
#include "session/jobtracker.h"
#include "session/loadedmodel.h"
#include "session/planstate.h"
#include "session/prepare.h"
#include "session/profiles.h"
#include "sim/criticalpath.h"
#include "sim/memory.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "support/result.h"

class QUndoStack;

namespace partex::gui {

/// One row of the algorithm comparison.
struct CompareRow {
  QString algorithm;  ///< Scheduler name ("heft").
  QString title;      ///< Display name.
  double makespanUs = 0;
  double speedup = 0;       ///< Best single device makespan / makespan.
  double ratioToBound = 0;  ///< makespan / lowerBound().
  double schedMs = 0;       ///< Wall time of the scheduler.
  bool timeLimited = false; ///< It stopped at the time limit: its best plan so far, not proven optimal.
  QString error;            ///< Non-empty when the scheduler failed.
  double periodUs = 0;      ///< Under the throughput objective: the stream's steady-state period (else 0).
  double streamLatencyUs = 0;  ///< Under the throughput objective: each inference's latency in the stream.
  Plan plan;                ///< Its plan and timeline (when it succeeded), for the side-by-side view.
  Timeline timeline;
};

using partex::CriticalPath;  // sim/criticalpath.h

/// See the file comment.
class Session : public QObject {
  Q_OBJECT
 public:
  explicit Session(QObject* parent = nullptr);
  /// Cancels running jobs and waits for them (they hold no pointer to the session afterwards).
  ~Session() override;

  // --- Loading -------------------------------------------------------------------------------
  /// Loads a model in the background and installs it on the current platform; emits modelChanged
  /// or loadFailed. A scheduling instance (core's isInstanceFile decides, by content) is installed
  /// with its own devices and costs instead; the platform stays chosen for the next model. A newer
  /// open() or setPlatform() supersedes a running one.
  void open(const QString& path, const QStringList& dims = {});
  /// Switches platform (preset name or file); with a model loaded, rebuilds the cost table and the
  /// initial plan in the background (the undo history is cleared: its plans belong to the old table).
  /// With an instance loaded, the choice is kept for the next model and message() says it is ignored.
  void setPlatform(const QString& nameOrPath);
  /// Switches to a platform object (the platform editor's); `label` is shown as its name. Later
  /// models open on it too, until setPlatform(nameOrPath) picks a preset or file again.
  void setPlatform(const Platform& platform, const QString& label);
  /// Opens a project (read by loadProjectFile) in the background: emits modelChanged or loadFailed;
  /// a plan that did not fit is reported through loadWarning after the install. With `modified`,
  /// the result counts as unsaved work (a recovered autosave).
  void openProject(const Project& project, const QString& origin, bool modified = false);
  /// Installs a prepared model synchronously (the end of open(); tests call it directly).
  void install(Prepared p);
  bool loading() const;
  /// Blocks until background loads finish (tests, shutdown).
  void waitForJobs();

  // --- State ---------------------------------------------------------------------------------
  /// True when a model or an instance is installed (there is a cost table and a plan).
  bool hasModel() const { return table_ != nullptr; }
  /// The ONNX model; null before the first load and for an instance.
  const LoadedModel* model() const { return model_.get(); }
  std::shared_ptr<const LoadedModel> modelPtr() const { return model_; }
  /// The scheduling instance installed instead of a model and a platform (null for a model).
  const LoadedInstance* instance() const { return instance_.get(); }
  bool isInstance() const { return instance_ != nullptr; }
  /// The file of the installed model or instance ("" when none).
  QString sourcePath() const;
  /// A data size as the views show it: binary units for a model's tensors ("976.6 KiB"), decimal ones
  /// for an instance, whose files count in bytes and megabytes ("1.00 MB").
  QString bytesText(int64_t bytes) const;
  /// Why something that needs an ONNX model and a real platform (profiles, profiling, the platform
  /// editor, projects) is not available for the installed instance, in words; "" for a model.
  QString instanceReason(const QString& what) const;
  /// "x.json is a SAGA instance with its own devices: platform P is ignored for it (...)": what the
  /// status line says when a platform is chosen (--platform, the platform box) with an instance loaded.
  QString platformIgnoredNote(const QString& platform) const;
  /// The platform of the model (empty, without devices, for an instance).
  const Platform& platform() const { return platform_; }
  /// The installed platform when it came from the platform editor (no file or preset names it).
  const std::optional<Platform>& editedPlatform() const { return installedCustom_; }
  QString platformName() const { return QString::fromStdString(platformName_); }
  const CostTable* table() const { return table_.get(); }
  std::shared_ptr<const CostTable> tablePtr() const { return table_; }
  const PlanState& state() const { return state_; }
  const Plan& plan() const { return state_.plan; }
  const Timeline& timeline() const { return timeline_; }
  int numDevices() const { return table_ ? table_->numDevices() : 0; }
  int numOps() const { return table_ ? table_->numTasks() : 0; }
  DeviceId deviceOf(int op) const;
  bool isPinned(int op) const { return state_.pinned.count(op) != 0; }
  bool isManual(int op) const;
  /// Constraints for schedulers: the pins.
  Constraints constraints() const;
  QUndoStack* undoStack() const { return undo_; }
  /// True when the plan, pins or flags changed since the install or the last markSaved().
  bool modified() const;
  /// The current state is saved (a project file holds it): modified() turns false.
  void markSaved();
  /// Device colours from the one palette (platform colours first).
  std::vector<QColor> deviceColors() const;
  QColor deviceColor(int device) const;
  QString deviceLabel(int device) const;
  const CriticalPath& critical() const { return critical_; }
  /// The current plan's fused kernels with their predicted times (plan/fusedkernels.h: CPU devices,
  /// once a profile has told the costs which kernels the runtime fuses).
  const std::vector<FusedKernel>& fusedKernels() const { return fused_; }
  /// The fused kernel `op` is in, or nullptr when it runs alone.
  const FusedKernel* fusedKernelOf(int op) const;
  /// The fused kernels of the placement a timeline shows (a drag preview's).
  std::vector<FusedKernel> fusedKernelsOf(const Timeline& tl) const;
  double lowerBoundUs() const { return lowerBound_; }
  /// Each device's memory under the current plan (core's deviceMemory(): weights, peak with its
  /// breakdown, resident bytes over time), recomputed with every plan, cost table or platform change.
  const std::vector<DeviceMemory>& memory() const { return memory_; }
  /// Why the current plan does not fit the devices' memory (core's checkCapacity, one line naming the
  /// device, the bytes needed and available); "" when it fits. The views show it as a warning: a plan
  /// over capacity is never shown as fine.
  QString capacityProblem() const { return capacityProblem_; }
  /// The bytes of `op`'s distinct weights (CostTable::taskWeights), 0 when it has none.
  int64_t weightBytesOf(int op) const;
  /// Capacity of `device` minus its peak under the current plan (negative when over); nullopt when
  /// the device has no capacity limit.
  std::optional<int64_t> headroomOf(int device) const;
  /// Why `op` sits on its device, in words (pinned, moved by hand, unsupported elsewhere, cheapest,
  /// chosen by the scheduler, on the critical path).
  QStringList placementReasons(int op) const;

  // --- Profiles: measured and imported costs over the modelled ones ------------------------------
  /// The applied profiles in application order: Partex profiles first, then ONNX Runtime imports (the
  /// order of partex-cli's --profile and --import-ort), each group in the order loaded.
  const std::vector<LoadedProfile>& profiles() const { return profiles_; }
  /// Reads a Partex profile, applies it (with the others) to the modelled cost table, installs the
  /// new table and re-simulates the current plan (kept as it is; the undo history is cleared, its
  /// timelines belong to the old costs; the new makespan becomes the reference). Loading a file that is
  /// already applied reads it again in its place. Emits message() with applySummary(). On an error (the
  /// file unreadable or corrupt, a profile of another model, a device the platform lacks, nothing that
  /// matches) nothing changes and the one-line error names the file. Marks the session modified.
  Result<ApplyReport> addProfile(const QString& path);
  /// The same for an ONNX Runtime profiling JSON whose times are those of platform device `device`.
  Result<ApplyReport> addOrtImport(const QString& path, const QString& device, const QString& provider = {});
  /// The same for a profile already read (the GUI's profiler writes the file, then adds it here).
  Result<ApplyReport> addLoadedProfile(LoadedProfile p);
  /// Removes profile `index` of profiles(): the cost table is the modelled one with the others applied.
  Status removeProfile(int index);
  /// The installed cost table's entries by provenance.
  CostCounts costCounts() const;

  // --- Editing -------------------------------------------------------------------------------
  /// Ok when every op of `ops` may go to `device`; otherwise the reason (device cannot run the
  /// operator, with the platform's own reason; pinned elsewhere; no such device).
  Status canMove(const QList<int>& ops, int device) const;
  /// Moves `ops` to `device` as one undoable command (pushed only if some op changes device).
  /// Refused moves leave the plan untouched and return the reason (also emitted as message()).
  Status moveOps(const QList<int>& ops, int device);
  /// The timeline `moveOps(ops, device)` would give, without changing anything (drag preview).
  Result<Timeline> previewMove(const QList<int>& ops, int device);
  /// Pins `ops` to their current devices (or unpins them) as one undoable command.
  Status setPinned(const QList<int>& ops, bool pinned);
  /// Installs a plan made outside the schedulers (the LLM panel's llama.cpp placement) as one undoable
  /// step named `undoText`, with `algorithm` as the plan's name (pins dropped, no operator counted as
  /// moved by hand). Errors (one line): no model, a plan of another shape, a plan that does not simulate.
  Status applyPlan(Plan plan, const QString& algorithm, const QString& undoText);
  /// Applies a state (used by undo commands); `tl` is its timeline when the caller already
  /// simulated it with this session's simulator, else the plan is re-simulated.
  void applyState(const PlanState& s, const Timeline* tl);

  // --- Selection -----------------------------------------------------------------------------
  QList<int> selection() const { return selection_; }
  void setSelection(const QList<int>& ops);

  // --- Scheduling ----------------------------------------------------------------------------
  /// Runs a scheduler in the background; its plan is applied as one undoable command. With
  /// `respectPins`, pinned operators stay where they are ("re-optimise unpinned").
  void runScheduler(const QString& algorithm, bool respectPins = true, double timeLimitSec = 10.0);
  /// Asks the running scheduler or comparison to stop.
  void cancelScheduler();
  bool schedulerRunning() const;
  /// Runs the given schedulers one after the other in the background; emits compareFinished. The
  /// limit is per scheduler (the whole comparison takes at most about algorithms x limit); Cancel
  /// stops the running one within 100 ms and skips the rest.
  void runCompare(const QStringList& algorithms, double timeLimitSec = 5.0);
  /// What the next runScheduler and runCompare optimise (SchedOptions::objective): the latency of one
  /// inference, or the steady-state period of a stream of them, each inference within `latencyBoundUs`
  /// where it is positive (as `partex-cli schedule --objective throughput --latency-bound`). Kept across
  /// models and platforms.
  void setObjective(Objective objective, double latencyBoundUs = 0);
  Objective objective() const { return objective_; }
  double latencyBoundUs() const { return latencyBoundUs_; }

 signals:
  void modelChanged();
  /// The cost table was replaced for the same model, platform and plan (a profile was added or
  /// removed). Views holding a pointer to the table must move to table() now: the old table may be
  /// freed once this returns. planChanged follows with the re-simulated plan.
  void costsChanged();
  /// profiles() changed (also after modelChanged when a rebuild dropped or re-applied profiles).
  void profilesChanged();
  void loadFailed(const QString& message);
  /// A load succeeded with a problem (e.g. a project's plan did not fit and HEFT's was used).
  void loadWarning(const QString& message);
  void loadStarted(const QString& what);
  /// The plan or pins changed; `timeline` is the new simulation.
  void planChanged(const partex::Timeline& timeline);
  void selectionChanged(const QList<int>& ops);
  /// A refusal or a note for the status bar.
  void message(const QString& text);
  void schedulerStarted(const QString& what);
  void schedulerProgress(double fraction, const QString& what);
  void schedulerFinished(bool ok, const QString& message);
  void compareFinished(const QList<partex::gui::CompareRow>& rows);

 private:
  struct SchedOutcome;
  void onPrepared(Result<Prepared> result);
  void onScheduled(SchedOutcome out);
  void onCompared(const QList<CompareRow>& rows, const std::weak_ptr<const CostTable>& table);
  /// Stops the scheduler and the comparison that run on the table being replaced: the scheduler's
  /// plan is dropped, the comparison reports that the costs changed. True when a scheduler was running.
  bool stopJobsOnOldTable();
  void refreshDerived();
  PlacementContext placementContext() const;
  void startPrepare(std::shared_ptr<const LoadedModel> model, const QString& path, const QStringList& dims,
                    std::vector<LoadedProfile> profiles);
  Result<ApplyReport> installProfiles(std::vector<LoadedProfile> profiles, int changed);

  std::shared_ptr<const LoadedModel> model_;
  std::shared_ptr<const LoadedInstance> instance_;
  std::string platformName_ = "mobile-soc";
  std::optional<Platform> customPlatform_;   ///< Set: prepare on this object instead of platformName_.
  std::string installedName_;                ///< The platform of the installed model, restored when a
  std::optional<Platform> installedCustom_;  ///< switch to another platform fails.
  Platform platform_;
  std::shared_ptr<const CostTable> table_;
  std::shared_ptr<const CostTable> modelled_;  ///< table_ before the profiles.
  std::vector<LoadedProfile> profiles_;
  std::unique_ptr<Simulator> sim_;      ///< Keeps buffers; its last run is always the current plan.
  std::unique_ptr<Simulator> preview_;  ///< Drag previews, so they never disturb sim_.
  PlanState state_;
  PlanState savedState_;  ///< The state at the install or the last markSaved().
  bool dirty_ = false;    ///< Unsaved regardless of the state (a recovered autosave).
  Timeline timeline_;
  CriticalPath critical_;
  std::vector<FusedKernel> fused_;  ///< Of the current plan, with timeline_'s times.
  std::vector<int> fusedOf_;        ///< Per operator: index into fused_, or -1.
  double lowerBound_ = 0;
  Objective objective_ = Objective::Latency;
  double latencyBoundUs_ = 0;
  std::vector<DeviceMemory> memory_;  ///< Of the current plan and timeline.
  QString capacityProblem_;
  QList<int> selection_;
  QUndoStack* undo_ = nullptr;

  // Background work, the newest job of each kind wins (session_jobs.cpp).
  JobTracker prepJobs_{this};     ///< Loading a model, platform or project.
  JobTracker schedJobs_{this};    ///< One scheduler run.
  JobTracker compareJobs_{this};  ///< A comparison of schedulers.
};

}  // namespace partex::gui
