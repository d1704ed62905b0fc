#include "session/session.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QPointer>
#include <QUndoStack>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <chrono>

#include "plan/move.h"
#include "plan/planfile.h"
#include "profile/ortprofile.h"
#include "sched/compare.h"
#include "session/commands.h"
#include "session/palette.h"
#include "support/strings.h"

namespace partex::gui {

// --- Profiles ----------------------------------------------------------------------------------

static std::string fileNameOf(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).fileName().toStdString();
}

static std::string absolutePath(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).absoluteFilePath().toStdString();
}

std::string LoadedProfile::fileName() const {
  return fileNameOf(path);
}

std::vector<std::string> LoadedProfile::deviceIds() const {
  std::vector<std::string> ids;
  for (const auto& d : profile.devices) ids.push_back(d.id);
  return ids;
}

Result<LoadedProfile> readProfile(const std::string& path) {
  auto p = loadProfileFile(path);
  if (!p) return Error{p.message()};
  LoadedProfile lp;
  lp.kind = LoadedProfile::Kind::Partex;
  lp.path = absolutePath(path);
  lp.profile = std::move(p).value();
  return lp;
}

Result<LoadedProfile> readOrtImport(const std::string& path, const std::string& device, const std::string& provider) {
  if (device.empty()) return makeError(fileNameOf(path), ": name the device the ONNX Runtime times were measured on");
  auto p = loadOrtProfileFile(path, device, provider);
  if (!p) return Error{p.message()};
  LoadedProfile lp;
  lp.kind = LoadedProfile::Kind::OrtImport;
  lp.path = absolutePath(path);
  lp.profile = std::move(p).value();
  lp.device = device;
  lp.provider = provider;
  return lp;
}

Result<ApplyReport> applyLoadedProfile(CostTable& t, const LoadedProfile& p, const LoadedModel& model) {
  // The rule is core's (profile/profile.h), as in partex-cli's --profile and --import-ort.
  return applyCostSource(t, p.profile, p.kind != LoadedProfile::Kind::Partex, fileNameOf(model.path),
                         model.graph.graphSha256, p.fileName());
}

std::vector<LoadedProfile> applyProfiles(CostTable& t, const std::vector<LoadedProfile>& profiles,
                                         const LoadedModel& model, std::vector<std::string>* warnings) {
  std::vector<LoadedProfile> applied;
  for (const auto& p : profiles) {
    // On a copy: a refused profile may have changed part of the table before the refusal.
    CostTable trial = t;
    auto r = applyLoadedProfile(trial, p, model);
    if (!r) {
      if (warnings) warnings->push_back("profile " + p.fileName() + " left out: " + r.message());
      continue;
    }
    t = std::move(trial);
    applied.push_back(p);
    applied.back().report = std::move(r).value();
  }
  return applied;
}

std::string applySummary(const LoadedProfile& p) {
  const ApplyReport& r = p.report;
  std::string s = p.fileName() + ": " + std::to_string(r.opsApplied) + " operator times applied on " +
                  join(p.deviceIds(), ", ");
  if (r.groupsApplied) s += ", " + std::to_string(r.groupsApplied) + " group times";
  if (r.pairsApplied) s += ", " + std::to_string(r.pairsApplied) + " transfer models";
  if (!r.unmatchedProfileOps.empty())
    s += "; " + std::to_string(r.unmatchedProfileOps.size()) + " profiled operators are not in the model";
  if (!r.unprofiledOps.empty())
    s += "; " + std::to_string(r.unprofiledOps.size()) + " operator/device pairs keep their modelled cost";
  if (!r.typeMismatches.empty()) s += "; op types differ for " + std::to_string(r.typeMismatches.size());
  return s;
}

CostCounts countCosts(const CostTable& t) {
  CostCounts c;
  for (size_t i = 0; i < t.cost.size() && i < t.provenance.size(); ++i) {
    if (!(t.cost[i] < kInf)) continue;
    switch (t.provenance[i]) {
      case Provenance::Measured:
        ++c.measured;
        break;
      case Provenance::Imported:
        ++c.imported;
        break;
      case Provenance::Modelled:
        ++c.modelled;
        break;
    }
  }
  return c;
}

// --- Preparing a session -----------------------------------------------------------------------

bool PlanState::operator==(const PlanState& o) const {
  return plan.device == o.plan.device && plan.order == o.plan.order && pinned == o.pinned && manual == o.manual &&
         algorithm == o.algorithm && schedulerMakespan == o.schedulerMakespan;
}

/// Everything on one device in topological order: the plan of last resort.
static Plan singleDevicePlan(const CostTable& t, DeviceId d) {
  Plan p;
  p.device.assign(static_cast<size_t>(t.numTasks()), d);
  p.order.assign(static_cast<size_t>(t.numDevices()), {});
  p.order[static_cast<size_t>(d)] = t.topoOrder();
  p.algorithm = "single";
  return p;
}

Result<Prepared> prepareSession(std::shared_ptr<const LoadedModel> model, const std::string& platformNameOrPath,
                                const std::vector<LoadedProfile>& profiles) {
  auto platform = loadPlatform(platformNameOrPath);
  if (!platform) return makeError("platform ", platformNameOrPath, ": ", platform.message());
  return prepareSession(std::move(model), std::move(platform).value(), platformNameOrPath, profiles);
}

Result<Prepared> prepareSession(std::shared_ptr<const LoadedModel> model, Platform platform,
                                const std::string& platformNameOrPath, const std::vector<LoadedProfile>& profiles) {
  if (!model) return makeError("no model loaded");
  auto table = buildCostTable(model->graph, model->work, platform);
  if (!table)
    return makeError(QFileInfo(QString::fromStdString(model->path)).fileName().toStdString(), ": ", table.message());
  Prepared p;
  p.model = std::move(model);
  p.platformName = platformNameOrPath;
  p.platform = std::move(platform);
  if (profiles.empty()) {
    p.table = std::make_shared<const CostTable>(std::move(table).value());
    p.modelled = p.table;
  } else {
    // The profiles go over the modelled costs before HEFT, so that the initial plan uses them.
    p.modelled = std::make_shared<const CostTable>(table.value());
    std::vector<std::string> dropped;
    p.profiles = applyProfiles(*table, profiles, *p.model, &dropped);
    p.table = std::make_shared<const CostTable>(std::move(table).value());
    for (size_t i = 0; i < dropped.size(); ++i) p.note += (i ? "; " : "") + dropped[i];
    p.modified = !dropped.empty();  // the session's profile list now differs from the one asked for
  }
  const CostTable& t = *p.table;
  p.state.manual.assign(static_cast<size_t>(t.numTasks()), 0);
  // The initial plan is HEFT's: quick on any size, and a sensible partition to start editing from.
  Result<Plan> plan = makeError("no scheduler");
  if (const Scheduler* heft = findScheduler("heft")) plan = heft->schedule(t, {}, SchedOptions{});
  Result<Timeline> tl = makeError("no plan");
  if (plan) tl = simulate(t, *plan);
  if (plan && tl) {
    p.state.plan = std::move(plan).value();
    p.state.algorithm = "heft";
  } else {
    // HEFT failed (it should not): fall back to the first device that runs everything.
    for (DeviceId d = 0; d < t.numDevices() && !tl; ++d) {
      bool all = true;
      for (TaskId v = 0; v < t.numTasks() && all; ++v) all = t.canRun(v, d);
      if (!all) continue;
      p.state.plan = singleDevicePlan(t, d);
      tl = simulate(t, p.state.plan);
      p.state.algorithm = "single";
    }
    if (!tl) return makeError("no initial plan: ", tl.message());
  }
  p.timeline = std::move(tl).value();
  p.state.schedulerMakespan = p.timeline.makespan;
  return p;
}

Result<Prepared> prepareProject(const Project& project, const std::string& origin) {
  const std::string file = QFileInfo(QString::fromStdString(origin)).fileName().toStdString();
  auto model = loadModel(project.modelPath, project.dims);
  if (!model) return makeError(file, ": ", model.message());
  // Profiles that cannot be read are left out with a warning: the project still opens.
  std::vector<std::string> notes;
  std::vector<LoadedProfile> profiles;
  for (const auto& f : project.profiles) {
    auto lp = readProfile(f);
    if (lp)
      profiles.push_back(std::move(lp).value());
    else
      notes.push_back("profile " + fileNameOf(f) + " left out: " + lp.message());
  }
  for (const auto& imp : project.ortImports) {
    auto lp = readOrtImport(imp.path, imp.device, imp.provider);
    if (lp)
      profiles.push_back(std::move(lp).value());
    else
      notes.push_back("ONNX Runtime import " + fileNameOf(imp.path) + " left out: " + lp.message());
  }
  const bool unread = !notes.empty();
  auto prepared = prepareSession(model.value(), project.platform, profiles);
  if (!prepared) return makeError(file, ": ", prepared.message());
  Prepared out = std::move(prepared).value();
  if (!out.note.empty()) notes.push_back(out.note);  // profiles that did not apply
  out.note.clear();
  out.modified = out.modified || unread;
  for (auto& n : notes) n = file + ": " + n;
  const CostTable& t = *out.table;
  auto pins = resolvePins(project, t, origin);
  if (!pins) return Error{pins.message()};
  const std::string& sha = out.model->graph.graphSha256;
  if (!project.modelSha256.empty() && !sha.empty() && project.modelSha256 != sha)
    notes.push_back(file + ": the model changed since the project was saved");
  // The hash was compared above (a warning): readPlan checks everything else operator by operator.
  Result<Plan> plan = makeError(file, ": no plan saved");
  if (!project.planJson.empty()) plan = readPlan(project.planJson, file, t, PlanIdentity{});
  Result<Timeline> tl = makeError("not simulated");
  if (plan) {
    tl = simulate(t, *plan);
    if (!tl) plan = makeError(file, ": the saved plan does not simulate: ", tl.message());
  }
  if (plan) {
    out.state.plan = std::move(plan).value();
    out.state.algorithm = project.algorithm;
    std::map<std::string, TaskId> byName;
    for (TaskId v = 0; v < t.numTasks(); ++v) byName[t.taskNames[static_cast<size_t>(v)]] = v;
    for (const auto& [op, dev] : project.moves)
      if (auto it = byName.find(op); it != byName.end()) out.state.manual[static_cast<size_t>(it->second)] = 1;
    // The reference makespan of the last scheduler plan lives in the view (a GUI notion); without
    // manual moves it is the plan's own.
    const QJsonObject view = QJsonDocument::fromJson(QByteArray::fromStdString(project.viewJson)).object();
    out.state.schedulerMakespan = view.value(QStringLiteral("reference_makespan_us")).toDouble(0);
    if (out.state.schedulerMakespan <= 0 || project.moves.empty()) out.state.schedulerMakespan = tl->makespan;
    out.timeline = std::move(tl).value();
  } else {
    if (!project.planJson.empty()) notes.push_back(plan.message() + " (using the HEFT plan)");
    if (!pins->pinned.empty()) {  // HEFT again, keeping the pinned operators where they are
      const Scheduler* heft = findScheduler("heft");
      Result<Plan> p2 = heft ? heft->schedule(t, *pins, SchedOptions{}) : Result<Plan>(makeError("no HEFT"));
      Result<Timeline> tl2 = p2 ? simulate(t, *p2) : Result<Timeline>(makeError("no plan"));
      if (p2 && tl2) {
        out.state.plan = std::move(p2).value();
        out.state.schedulerMakespan = tl2->makespan;
        out.timeline = std::move(tl2).value();
      }
    }
  }
  out.state.pinned = pins->pinned;
  for (size_t i = 0; i < notes.size(); ++i) out.note += (i ? "; " : "") + notes[i];
  return out;
}

// ---------------------------------------------------------------------------------------------------

/// A scheduler run's result, built on the worker.
struct Session::SchedOutcome {
  int generation = 0;
  QString algorithm;
  bool respectPins = true;
  Result<Plan> plan = makeError("not run");
  double ms = 0;
  std::vector<std::string> notes;
};

Session::Session(QObject* parent) : QObject(parent) {
  undo_ = new QUndoStack(this);
  prepWatcher_ = new QFutureWatcher<Result<Prepared>>(this);
  connect(prepWatcher_, &QFutureWatcherBase::finished, this, &Session::onPrepared);
  schedWatcher_ = new QFutureWatcher<std::shared_ptr<SchedOutcome>>(this);
  connect(schedWatcher_, &QFutureWatcherBase::finished, this, &Session::onScheduled);
  compareWatcher_ = new QFutureWatcher<QList<CompareRow>>(this);
  connect(compareWatcher_, &QFutureWatcherBase::finished, this, &Session::onCompared);
}

Session::~Session() {
  if (schedCancel_) schedCancel_->store(true);
  if (compareCancel_) compareCancel_->store(true);
  prepWatcher_->waitForFinished();
  schedWatcher_->waitForFinished();
  compareWatcher_->waitForFinished();
  undo_->clear();  // commands point at this session
}

void Session::open(const QString& path, const QStringList& dims) {
  emit loadStarted(tr("Loading %1...").arg(QFileInfo(path).fileName()));
  // Profiles belong to a model: reloading the same file re-applies them (a changed model refuses
  // them with a warning), another model starts without.
  const bool reload =
      model_ && QFileInfo(path).absoluteFilePath() == QFileInfo(QString::fromStdString(model_->path)).absoluteFilePath();
  startPrepare(nullptr, path, dims, reload ? profiles_ : std::vector<LoadedProfile>{});
}

void Session::setPlatform(const QString& nameOrPath) {
  if (nameOrPath.toStdString() == platformName_ && !customPlatform_ && hasModel()) return;
  platformName_ = nameOrPath.toStdString();
  customPlatform_.reset();
  if (!model_) return;
  emit loadStarted(tr("Building the cost table on %1...").arg(nameOrPath));
  startPrepare(model_, QString(), {}, profiles_);
}

void Session::setPlatform(const Platform& platform, const QString& label) {
  platformName_ = label.toStdString();
  customPlatform_ = platform;
  if (!model_) return;
  emit loadStarted(tr("Building the cost table on %1...").arg(label));
  startPrepare(model_, QString(), {}, profiles_);
}

void Session::startPrepare(std::shared_ptr<const LoadedModel> model, const QString& path, const QStringList& dims,
                           std::vector<LoadedProfile> profiles) {
  const int gen = ++prepGeneration_;
  prepPending_ = true;
  std::vector<std::string> d;
  for (const auto& s : dims) d.push_back(s.toStdString());
  const std::string plat = platformName_;
  const std::optional<Platform> custom = customPlatform_;
  const std::string file = path.toStdString();
  // The generation travels with the result so that a superseded job's result is dropped.
  prepWatcher_->setFuture(QtConcurrent::run([model, file, d, plat, custom, gen, profiles]() -> Result<Prepared> {
    std::shared_ptr<const LoadedModel> m = model;
    if (!m) {
      auto loaded = loadModel(file, d);
      if (!loaded) return Error{loaded.message()};
      m = loaded.value();
    }
    auto p = custom ? prepareSession(m, *custom, plat, profiles) : prepareSession(m, plat, profiles);
    if (p) p->generation = gen;
    return p;
  }));
}

void Session::openProject(const Project& project, const QString& origin, bool modified) {
  emit loadStarted(tr("Opening %1...").arg(QFileInfo(origin).fileName()));
  platformName_ = project.platform;
  customPlatform_.reset();
  const int gen = ++prepGeneration_;
  prepPending_ = true;
  const std::string file = origin.toStdString();
  prepWatcher_->setFuture(QtConcurrent::run([project, file, gen, modified]() -> Result<Prepared> {
    auto p = prepareProject(project, file);
    if (p) {
      p->generation = gen;
      p->modified = p->modified || modified;
    }
    return p;
  }));
}

bool Session::loading() const {
  return prepPending_;
}

void Session::waitForJobs() {
  prepWatcher_->waitForFinished();
  schedWatcher_->waitForFinished();
  compareWatcher_->waitForFinished();
}

void Session::onPrepared() {
  auto result = prepWatcher_->result();
  prepPending_ = false;
  if (!result) {
    if (model_) {  // keep the platform that is installed
      platformName_ = installedName_;
      customPlatform_ = installedCustom_;
    }
    emit loadFailed(QString::fromStdString(result.message()));
    return;
  }
  if (result->generation != prepGeneration_) {
    prepPending_ = true;  // the newer job is still running
    return;
  }
  const QString note = QString::fromStdString(result->note);
  install(std::move(result).value());
  if (!note.isEmpty()) emit loadWarning(note);
}

void Session::install(Prepared p) {
  // Stop whatever ran on the old table: its plan would not fit the new one.
  if (schedCancel_) schedCancel_->store(true);
  if (compareCancel_) compareCancel_->store(true);
  ++schedGeneration_;  // a running scheduler's result is dropped when it arrives
  schedPending_ = false;
  undo_->clear();
  sim_.reset();
  preview_.reset();
  model_ = std::move(p.model);
  platformName_ = p.platformName;
  installedName_ = platformName_;
  installedCustom_ = customPlatform_;
  platform_ = std::move(p.platform);
  table_ = std::move(p.table);
  modelled_ = p.modelled ? std::move(p.modelled) : table_;
  profiles_ = std::move(p.profiles);
  sim_ = std::make_unique<Simulator>(*table_);
  preview_ = std::make_unique<Simulator>(*table_);
  lowerBound_ = lowerBound(*table_);
  selection_.clear();
  state_ = std::move(p.state);
  savedState_ = state_;
  dirty_ = p.modified;
  // Run once through the session's simulator so that its incremental move() knows the plan.
  auto tl = sim_->run(state_.plan);
  timeline_ = tl ? std::move(tl).value() : std::move(p.timeline);
  refreshDerived();
  emit modelChanged();
  emit profilesChanged();
  emit selectionChanged(selection_);
  emit planChanged(timeline_);
}

// --- Profiles ----------------------------------------------------------------------------------

CostCounts Session::costCounts() const {
  return table_ ? countCosts(*table_) : CostCounts{};
}

Result<ApplyReport> Session::addProfile(const QString& path) {
  if (!hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": open a model first");
  auto lp = readProfile(path.toStdString());
  if (!lp) {
    emit message(tr("Profile refused: %1").arg(QString::fromStdString(lp.message())));
    return Error{lp.message()};
  }
  return addLoadedProfile(std::move(lp).value());
}

Result<ApplyReport> Session::addOrtImport(const QString& path, const QString& device, const QString& provider) {
  if (!hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": open a model first");
  auto lp = readOrtImport(path.toStdString(), device.toStdString(), provider.toStdString());
  if (!lp) {
    emit message(tr("Import refused: %1").arg(QString::fromStdString(lp.message())));
    return Error{lp.message()};
  }
  return addLoadedProfile(std::move(lp).value());
}

Result<ApplyReport> Session::addLoadedProfile(LoadedProfile p) {
  std::vector<LoadedProfile> list = profiles_;
  // The same file again (measured again, edited) replaces the applied one in its place; otherwise a
  // Partex profile goes after the others, before the imports, and an import goes last.
  int at = -1;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].path == p.path && list[i].kind == p.kind && list[i].device == p.device) at = static_cast<int>(i);
  if (at >= 0) {
    list[static_cast<size_t>(at)] = std::move(p);
  } else {
    auto pos = list.end();
    if (p.kind == LoadedProfile::Kind::Partex)
      pos = std::find_if(list.begin(), list.end(),
                         [](const LoadedProfile& x) { return x.kind == LoadedProfile::Kind::OrtImport; });
    at = static_cast<int>(pos - list.begin());
    list.insert(pos, std::move(p));
  }
  const double before = timeline_.makespan;
  auto r = installProfiles(std::move(list), at);
  if (!r) {
    emit message(tr("Profile refused: %1").arg(QString::fromStdString(r.message())));
    return r;
  }
  emit message(tr("%1; makespan %2 us -> %3 us")
                   .arg(QString::fromStdString(applySummary(profiles_[static_cast<size_t>(at)])))
                   .arg(before, 0, 'f', 1)
                   .arg(timeline_.makespan, 0, 'f', 1));
  return r;
}

Status Session::removeProfile(int index) {
  if (index < 0 || static_cast<size_t>(index) >= profiles_.size())
    return makeError("no profile ", std::to_string(index + 1), " (", std::to_string(profiles_.size()), " loaded)");
  std::vector<LoadedProfile> list = profiles_;
  const std::string name = list[static_cast<size_t>(index)].fileName();
  list.erase(list.begin() + index);
  const double before = timeline_.makespan;
  auto r = installProfiles(std::move(list), -1);
  if (!r) return r.status();
  emit message(tr("Removed %1; makespan %2 us -> %3 us")
                   .arg(QString::fromStdString(name))
                   .arg(before, 0, 'f', 1)
                   .arg(timeline_.makespan, 0, 'f', 1));
  return {};
}

Result<ApplyReport> Session::installProfiles(std::vector<LoadedProfile> profiles, int changed) {
  if (!table_ || !model_ || !modelled_) return makeError("no model loaded");
  if (prepPending_) return makeError("a model or platform is still loading: try again when it has loaded");
  // The new table: the modelled one with every profile applied in order, built aside so that a
  // refusal changes nothing.
  auto t = std::make_shared<CostTable>(*modelled_);
  for (auto& p : profiles) {
    auto r = applyLoadedProfile(*t, p, *model_);
    if (!r) return Error{r.message()};
    p.report = std::move(r).value();
  }
  auto check = simulate(*t, state_.plan);
  if (!check) return makeError("the current plan does not simulate on the new costs: ", check.message());

  // Install it as install() does for a model change, keeping the model, platform, plan and pins.
  // The old table stays alive until the views have moved to the new one (costsChanged) and the
  // simulators that reference it are gone.
  const std::shared_ptr<const CostTable> old = table_;
  if (schedCancel_) schedCancel_->store(true);
  if (compareCancel_) compareCancel_->store(true);
  ++schedGeneration_;  // a running scheduler's plan was made on the old costs: dropped when it arrives
  const bool schedulerStopped = schedPending_;
  schedPending_ = false;
  dirty_ = true;  // the profile list is part of the project
  undo_->clear();  // its timelines and reference makespans belong to the old costs
  preview_.reset();
  sim_.reset();
  table_ = std::move(t);
  profiles_ = std::move(profiles);
  sim_ = std::make_unique<Simulator>(*table_);
  preview_ = std::make_unique<Simulator>(*table_);
  lowerBound_ = lowerBound(*table_);
  auto tl = sim_->run(state_.plan);
  timeline_ = tl ? std::move(tl).value() : std::move(check).value();
  // The current plan on the new costs is the reference from now on: the last scheduler's makespan
  // was computed on costs that no longer hold.
  state_.schedulerMakespan = timeline_.makespan;
  refreshDerived();
  emit costsChanged();
  emit profilesChanged();
  emit planChanged(timeline_);
  if (schedulerStopped) emit schedulerFinished(false, tr("Scheduler cancelled: the costs changed"));
  if (changed >= 0 && static_cast<size_t>(changed) < profiles_.size())
    return profiles_[static_cast<size_t>(changed)].report;
  return ApplyReport{};
}

void Session::refreshDerived() {
  if (!table_) return;
  critical_ = criticalPath(*table_, state_.plan, timeline_);
  fused_ = model_ ? partex::fusedKernels(model_->graph, *table_, state_.plan.device, &timeline_)
                  : std::vector<FusedKernel>{};
  fusedOf_ = kernelOfTasks(table_->numTasks(), fused_);
}

const FusedKernel* Session::fusedKernelOf(int op) const {
  if (op < 0 || static_cast<size_t>(op) >= fusedOf_.size() || fusedOf_[static_cast<size_t>(op)] < 0) return nullptr;
  return &fused_[static_cast<size_t>(fusedOf_[static_cast<size_t>(op)])];
}

std::vector<FusedKernel> Session::fusedKernelsOf(const Timeline& tl) const {
  if (!table_ || !model_) return {};
  return partex::fusedKernels(model_->graph, *table_, tl);
}

bool Session::modified() const {
  return table_ && (dirty_ || !undo_->isClean() || !(state_ == savedState_));
}

void Session::markSaved() {
  savedState_ = state_;
  dirty_ = false;
  undo_->setClean();
}

DeviceId Session::deviceOf(int op) const {
  if (op < 0 || static_cast<size_t>(op) >= state_.plan.device.size()) return -1;
  return state_.plan.device[static_cast<size_t>(op)];
}

bool Session::isManual(int op) const {
  return op >= 0 && static_cast<size_t>(op) < state_.manual.size() && state_.manual[static_cast<size_t>(op)];
}

Constraints Session::constraints() const {
  Constraints c;
  c.pinned = state_.pinned;
  return c;
}

std::vector<QColor> Session::deviceColors() const {
  std::vector<QColor> c;
  for (int d = 0; d < static_cast<int>(platform_.devices.size()); ++d)
    c.push_back(gui::deviceColor(d, platform_.devices[static_cast<size_t>(d)].color));
  return c;
}

QColor Session::deviceColor(int device) const {
  if (device < 0 || device >= static_cast<int>(platform_.devices.size())) return QColor(Qt::lightGray);
  return gui::deviceColor(device, platform_.devices[static_cast<size_t>(device)].color);
}

QString Session::deviceLabel(int device) const {
  if (!table_ || device < 0 || device >= table_->numDevices()) return tr("device %1").arg(device);
  return QString::fromStdString(table_->deviceIds[static_cast<size_t>(device)]);
}

PlacementContext Session::placementContext() const {
  PlacementContext ctx;
  ctx.pinned = &state_.pinned;
  ctx.graph = model_ ? &model_->graph : nullptr;
  ctx.platform = &platform_;
  return ctx;
}

static std::vector<TaskId> taskIds(const QList<int>& ops) {
  return std::vector<TaskId>(ops.begin(), ops.end());
}

Status Session::canMove(const QList<int>& ops, int device) const {
  if (!table_) return makeError("no model loaded");
  // The rule is core's (plan/move.h), as for partex-cli's --pin; the GUI adds the key that unpins.
  Status st = checkMove(*table_, taskIds(ops), device, placementContext());
  if (!st && QString::fromStdString(st.message()).endsWith(QLatin1String("unpin it first")))
    return makeError(st.message(), " (P)");
  return st;
}

Status Session::moveOps(const QList<int>& ops, int device) {
  if (auto st = canMove(ops, device); !st) {
    emit message(tr("Move refused: %1").arg(QString::fromStdString(st.message())));
    return st;
  }
  auto moved = applyMove(*sim_, *table_, state_.plan, timeline_, taskIds(ops), device, placementContext());
  if (!moved) {
    (void)sim_->run(state_.plan);  // keep the simulator on the current plan
    emit message(tr("Move refused: %1").arg(QString::fromStdString(moved.message())));
    return moved.status();
  }
  if (moved->moved.empty()) return {};  // nothing changes: no undo step
  PlanState after = state_;
  after.plan = std::move(moved->plan);
  for (TaskId op : moved->moved) after.manual[static_cast<size_t>(op)] = 1;
  QList<int> movedOps(moved->moved.begin(), moved->moved.end());
  undo_->push(new MoveOpsCommand(this, movedOps, device, state_, std::move(after), std::move(moved->timeline)));
  return {};
}

Result<Timeline> Session::previewMove(const QList<int>& ops, int device) {
  if (auto st = canMove(ops, device); !st) return Error{st.message()};
  // On the preview simulator, so that a preview never disturbs the one that follows the plan.
  auto moved = applyMove(*preview_, *table_, state_.plan, timeline_, taskIds(ops), device, placementContext());
  if (!moved) return Error{moved.message()};
  return std::move(moved->timeline);
}

Status Session::setPinned(const QList<int>& ops, bool pinned) {
  if (!table_) return makeError("no model loaded");
  PlanState after = state_;
  for (int op : ops) {
    if (op < 0 || op >= table_->numTasks()) return makeError("no operator with index ", std::to_string(op));
    if (pinned)
      after.pinned[op] = deviceOf(op);
    else
      after.pinned.erase(op);
  }
  if (after == state_) return {};
  const QString what =
      ops.size() == 1
          ? QStringLiteral("'%1'").arg(QString::fromStdString(table_->taskNames[static_cast<size_t>(ops.first())]))
          : tr("%1 operators").arg(ops.size());
  undo_->push(new PlanCommand(this, state_, std::move(after),
                              pinned ? tr("Pin %1").arg(what) : tr("Unpin %1").arg(what), timeline_));
  return {};
}

void Session::applyState(const PlanState& s, const Timeline* tl) {
  if (!sim_) return;
  const bool samePlan = s.plan.device == state_.plan.device && s.plan.order == state_.plan.order;
  state_ = s;
  if (tl) {
    timeline_ = *tl;
  } else if (!samePlan || timeline_.tasks.empty()) {
    auto r = sim_->run(state_.plan);
    if (!r) {
      emit message(tr("Cannot simulate the plan: %1").arg(QString::fromStdString(r.message())));
      return;
    }
    timeline_ = std::move(r).value();
  }
  refreshDerived();
  emit planChanged(timeline_);
}

void Session::setSelection(const QList<int>& ops) {
  QList<int> s = ops;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  if (table_) s.removeIf([this](int op) { return op < 0 || op >= table_->numTasks(); });
  if (s == selection_) return;
  selection_ = s;
  emit selectionChanged(selection_);
}

QStringList Session::placementReasons(int op) const {
  QStringList r;
  if (!table_ || op < 0 || op >= table_->numTasks()) return r;
  const DeviceId d = deviceOf(op);
  if (isPinned(op)) r << tr("pinned to %1 by you").arg(deviceLabel(state_.pinned.at(op)));
  if (isManual(op)) r << tr("moved here by hand");
  int capable = 0;
  DeviceId cheapest = -1;
  for (DeviceId k = 0; k < table_->numDevices(); ++k) {
    if (!table_->canRun(op, k)) continue;
    ++capable;
    if (cheapest < 0 || table_->w(op, k) < table_->w(op, cheapest)) cheapest = k;
  }
  if (capable == 1)
    r << tr("only %1 can run it").arg(deviceLabel(d));
  else if (cheapest == d)
    r << tr("%1 runs it fastest").arg(deviceLabel(d));
  else if (cheapest >= 0)
    r << tr("not the fastest device (%1 is: %2 us vs %3 us): placed here to overlap work or save transfers")
             .arg(deviceLabel(cheapest))
             .arg(table_->w(op, cheapest), 0, 'f', 1)
             .arg(table_->w(op, d), 0, 'f', 1);
  if (!isManual(op) && !state_.algorithm.empty()) {
    const Scheduler* s = findScheduler(state_.algorithm);
    r << tr("chosen by %1").arg(s ? QString::fromStdString(s->title()) : QString::fromStdString(state_.algorithm));
  }
  if (static_cast<size_t>(op) < critical_.task.size() && critical_.task[static_cast<size_t>(op)])
    r << tr("on the critical path: making it faster shortens the makespan");
  return r;
}

// --- Scheduling --------------------------------------------------------------------------------

/// Posts progress from a worker to the session, at most every 50 ms.
static std::function<void(double, const std::string&)> throttledProgress(QPointer<Session> s) {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [s, last](double f, const std::string& what) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(50) && f < 1.0) return;
    *last = now;
    if (!s) return;
    QString w = QString::fromStdString(what);
    QMetaObject::invokeMethod(
        s.data(),
        [s, f, w] {
          if (s) emit s->schedulerProgress(f, w);
        },
        Qt::QueuedConnection);
  };
}

void Session::runScheduler(const QString& algorithm, bool respectPins, double timeLimitSec) {
  if (!table_) {
    emit schedulerFinished(false, tr("No model loaded"));
    return;
  }
  const Scheduler* sched = findScheduler(algorithm.toStdString());
  if (!sched) {
    emit schedulerFinished(false, tr("Unknown scheduler '%1'").arg(algorithm));
    return;
  }
  if (schedCancel_) schedCancel_->store(true);  // the newest job wins
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  schedCancel_ = cancel;
  const int gen = ++schedGeneration_;
  schedPending_ = true;
  auto table = table_;
  Constraints c;
  if (respectPins) c = constraints();
  SchedOptions o;
  o.timeLimitSec = timeLimitSec;
  o.cancel = cancel.get();
  o.progress = throttledProgress(QPointer<Session>(this));
  emit schedulerStarted(QString::fromStdString(sched->title()));
  schedWatcher_->setFuture(QtConcurrent::run([sched, table, c, o, cancel, gen, algorithm, respectPins] {
    auto out = std::make_shared<SchedOutcome>();
    out->generation = gen;
    out->algorithm = algorithm;
    out->respectPins = respectPins;
    QElapsedTimer timer;
    timer.start();
    SchedInfo info;
    out->plan = sched->schedule(*table, c, o, &info);
    out->ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    out->notes = info.notes;
    return out;
  }));
}

void Session::cancelScheduler() {
  if (schedCancel_) schedCancel_->store(true);
  if (compareCancel_) compareCancel_->store(true);
}

bool Session::schedulerRunning() const {
  return schedPending_ || comparePending_;
}

void Session::onScheduled() {
  auto out = schedWatcher_->result();
  if (!out || out->generation != schedGeneration_) return;  // superseded
  schedPending_ = false;
  const bool cancelled = schedCancel_ && schedCancel_->load();
  if (!out->plan) {
    emit schedulerFinished(false, cancelled ? tr("Cancelled") : QString::fromStdString(out->plan.message()));
    return;
  }
  if (cancelled) {
    emit schedulerFinished(false, tr("Cancelled"));
    return;
  }
  PlanState after = state_;
  after.plan = std::move(out->plan).value();
  auto tl = sim_->run(after.plan);
  if (!tl) {
    (void)sim_->run(state_.plan);
    emit schedulerFinished(
        false, tr("The plan of %1 does not simulate: %2").arg(out->algorithm, QString::fromStdString(tl.message())));
    return;
  }
  after.manual.assign(static_cast<size_t>(table_->numTasks()), 0);
  after.algorithm = out->algorithm.toStdString();
  after.schedulerMakespan = tl->makespan;
  if (!out->respectPins) after.pinned.clear();
  const Scheduler* s = findScheduler(after.algorithm);
  const QString title = s ? QString::fromStdString(s->title()) : out->algorithm;
  QString note = tr("%1: makespan %2 us in %3 ms").arg(title).arg(tl->makespan, 0, 'f', 1).arg(out->ms, 0, 'f', 0);
  for (const auto& n : out->notes) note += QStringLiteral("; ") + QString::fromStdString(n);
  if (!(after == state_))
    undo_->push(
        new PlanCommand(this, state_, std::move(after), tr("Schedule with %1").arg(title), std::move(tl).value()));
  emit schedulerFinished(true, note);
}

void Session::runCompare(const QStringList& algorithms, double timeLimitSec) {
  if (!table_) {
    emit compareFinished({});
    return;
  }
  if (compareCancel_) compareCancel_->store(true);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  compareCancel_ = cancel;
  comparePending_ = true;
  auto table = table_;
  compareTable_ = table_;
  std::vector<std::string> algos;
  for (const auto& a : algorithms) algos.push_back(a.toStdString());
  SchedOptions o;
  o.timeLimitSec = timeLimitSec;
  o.cancel = cancel.get();
  emit schedulerStarted(tr("Comparing %1 algorithms").arg(algorithms.size()));
  QPointer<Session> self(this);
  compareWatcher_->setFuture(QtConcurrent::run([table, algos, o, cancel, self] {
    // The rules are core's (sched/compare.h), as in `partex-cli compare`; the ticked algorithms are the
    // default set, not named one by one, so exact keeps its size limit here too.
    SchedOptions so = o;
    so.progress = [self](double f, const std::string& what) {
      const QString w = QString::fromStdString(what);
      if (self)
        QMetaObject::invokeMethod(
            self.data(),
            [self, f, w] {
              if (self) emit self->schedulerProgress(f, w);
            },
            Qt::QueuedConnection);
    };
    const Comparison cmp = compareAlgorithms(*table, {}, so, algos, false);
    QList<CompareRow> rows;
    for (const auto& r : cmp.rows) {
      CompareRow row;
      row.algorithm = QString::fromStdString(r.algorithm);
      row.title = QString::fromStdString(r.title);
      row.schedMs = r.schedMs;
      row.timeLimited = r.timeLimited;
      row.error = QString::fromStdString(r.error);
      if (r.valid) {
        row.makespanUs = r.makespanUs;
        row.speedup = r.speedup;
        row.ratioToBound = r.ratioToBound;
        row.plan = r.plan;
        row.timeline = r.timeline;
      }
      rows << row;
    }
    return rows;
  }));
}

void Session::onCompared() {
  comparePending_ = false;
  const bool cancelled = compareCancel_ && compareCancel_->load();
  auto rows = compareWatcher_->result();
  if (compareTable_.lock() != table_) {
    // Computed on a cost table that was replaced meanwhile (a profile was added or removed): the
    // rows' plans still fit the model, but their makespans belong to costs that no longer hold.
    emit schedulerFinished(false, tr("Comparison cancelled: the costs changed"));
    emit compareFinished({});
    return;
  }
  emit schedulerFinished(!cancelled,
                         cancelled ? tr("Comparison cancelled") : tr("Compared %1 algorithms").arg(rows.size()));
  emit compareFinished(rows);
}

}  // namespace partex::gui
