// Session: its state and undo stack, editing the plan (moves, pins), the selection, and what the
// views derive from the plan. Background jobs are in session_jobs.cpp, profiles in session_profiles.cpp.
#include "session/session.h"

#include <QFileInfo>
#include <QUndoStack>

#include <algorithm>

#include "session/commands.h"
#include "session/palette.h"
#include "support/strings.h"

namespace partex::gui {

bool PlanState::operator==(const PlanState& o) const {
  // Replicas too: a throughput plan may differ from the current one only in them.
  return plan.device == o.plan.device && plan.order == o.plan.order && plan.replicas == o.plan.replicas &&
         pinned == o.pinned && manual == o.manual &&
         handMoves == o.handMoves && algorithm == o.algorithm && schedulerMakespan == o.schedulerMakespan;
}

Session::Session(QObject* parent) : QObject(parent) {
  undo_ = new QUndoStack(this);
}

Session::~Session() {
  // Jobs hold no pointer to the session, but their results would be queued to it: stop and wait first.
  for (JobTracker* jobs : {&schedJobs_, &compareJobs_, &prepJobs_}) jobs->drop();
  waitForJobs();
  undo_->clear();  // commands point at this session
}

void Session::install(Prepared p) {
  // Stop whatever ran on the old table: its plan would not fit the new one.
  (void)stopJobsOnOldTable();
  undo_->clear();
  sim_.reset();
  preview_.reset();
  model_ = std::move(p.model);
  instance_ = std::move(p.instance);
  // An instance has no platform: the one chosen stays for the next model.
  if (!instance_) platformName_ = p.platformName;
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
  // Simulated by the session's own simulator, which keeps its buffers for the moves that follow.
  auto tl = sim_->run(state_.plan);
  timeline_ = tl ? std::move(tl).value() : std::move(p.timeline);
  refreshDerived();
  emit modelChanged();
  emit profilesChanged();
  emit selectionChanged(selection_);
  emit planChanged(timeline_);
}

void Session::refreshDerived() {
  if (!table_) return;
  critical_ = criticalPath(*table_, state_.plan, timeline_);
  fused_ = model_ ? partex::fusedKernels(model_->graph, *table_, state_.plan.device, &timeline_)
                  : std::vector<FusedKernel>{};
  fusedOf_ = kernelOfTasks(table_->numTasks(), fused_);
  // The memory rule is core's: the same numbers as schedule --json and the plan file.
  memory_ = deviceMemory(*table_, state_.plan, timeline_);
  const Status fits = checkCapacity(*table_, state_.plan, &timeline_);
  capacityProblem_ = fits ? QString() : QString::fromStdString(fits.message());
}

int64_t Session::weightBytesOf(int op) const {
  if (!table_ || op < 0 || static_cast<size_t>(op) >= table_->taskWeights.size()) return 0;
  int64_t sum = 0;
  for (int32_t w : table_->taskWeights[static_cast<size_t>(op)])
    if (w >= 0 && static_cast<size_t>(w) < table_->weightBytes.size()) sum += table_->weightBytes[static_cast<size_t>(w)];
  return sum;
}

std::optional<int64_t> Session::headroomOf(int device) const {
  if (device < 0 || static_cast<size_t>(device) >= memory_.size()) return std::nullopt;
  const DeviceMemory& m = memory_[static_cast<size_t>(device)];
  if (m.capacity <= 0) return std::nullopt;
  return m.capacity - m.peak;
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
  for (int d = 0; d < numDevices(); ++d) c.push_back(deviceColor(d));
  return c;
}

QColor Session::deviceColor(int device) const {
  // The cost table's devices: an instance has no platform to give a colour.
  if (device < 0 || device >= numDevices()) return QColor(Qt::lightGray);
  const bool own = static_cast<size_t>(device) < platform_.devices.size();
  return gui::deviceColor(device, own ? platform_.devices[static_cast<size_t>(device)].color : std::string());
}

QString Session::sourcePath() const {
  if (model_) return QString::fromStdString(model_->path);
  if (instance_) return QString::fromStdString(instance_->path);
  return {};
}

QString Session::bytesText(int64_t bytes) const {
  const double b = static_cast<double>(bytes);
  return QString::fromStdString(instance_ ? humanCount(b) + "B" : humanBytes(b));
}

QString Session::instanceReason(const QString& what) const {
  if (!instance_) return {};
  return tr("%1 needs an ONNX model and a platform: %2 is a %3, with its own devices and costs")
      .arg(what, QFileInfo(sourcePath()).fileName(), QString::fromStdString(instance_->formatTitle()));
}

QString Session::deviceLabel(int device) const {
  if (!table_ || device < 0 || device >= table_->numDevices()) return tr("device %1").arg(device);
  return QString::fromStdString(table_->deviceIds[static_cast<size_t>(device)]);
}

PlacementContext Session::placementContext() const {
  PlacementContext ctx;
  ctx.pinned = &state_.pinned;
  ctx.graph = model_ ? &model_->graph : nullptr;
  ctx.platform = instance_ ? nullptr : &platform_;  // an instance's devices are the cost table's
  if (table_ && state_.plan.device.size() == static_cast<size_t>(table_->numTasks()))
    ctx.placement = &state_.plan.device;  // a move must leave room for the weights it brings
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
  for (TaskId op : moved->moved) {
    after.manual[static_cast<size_t>(op)] = 1;
    HandMove h;
    const auto was = state_.handMoves.find(op);
    h.from = was != state_.handMoves.end() ? was->second.from : deviceOf(op);
    h.makespanBefore = timeline_.makespan;
    h.makespanAfter = moved->timeline.makespan;
    h.movedWith = static_cast<int>(moved->moved.size());
    after.handMoves[op] = h;
  }
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

Status Session::applyPlan(Plan plan, const QString& algorithm, const QString& undoText) {
  if (!table_ || !sim_) return makeError("no model is open");
  if (auto st = checkPlanShape(*table_, plan); !st) return st;
  plan.algorithm = algorithm.toStdString();
  auto tl = sim_->run(plan);
  if (!tl) {
    (void)sim_->run(state_.plan);  // the simulator's last run stays the current plan
    return makeError("the plan does not simulate: ", tl.message());
  }
  PlanState after = state_;
  after.plan = std::move(plan);
  after.manual.assign(static_cast<size_t>(table_->numTasks()), 0);
  after.handMoves.clear();
  after.pinned.clear();
  after.algorithm = after.plan.algorithm;
  after.schedulerMakespan = tl->makespan;
  if (!(after == state_)) undo_->push(new PlanCommand(this, state_, std::move(after), undoText, std::move(tl).value()));
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
  const bool manual = isManual(op);
  const Scheduler* sched = state_.algorithm.empty() ? nullptr : findScheduler(state_.algorithm);
  const QString algo = sched ? QString::fromStdString(sched->title()).section(QStringLiteral(" ("), 0, 0)
                             : QString::fromStdString(state_.algorithm);
  if (manual) {
    // The scheduler's reasons no longer hold: say who put it here and what that did.
    const auto h = state_.handMoves.find(op);
    if (h == state_.handMoves.end()) {
      r << tr("moved here by hand");
    } else {
      const HandMove& m = h->second;
      const QString planned = algo.isEmpty() ? tr("the plan") : tr("the %1 plan").arg(algo);
      if (m.from >= 0 && m.from != d)
        r << tr("moved here by hand from %1, where %2 had it").arg(deviceLabel(m.from), planned);
      else
        r << tr("moved by hand and back to %1, where %2 had it").arg(deviceLabel(d), planned);
      const double pct = m.makespanBefore > 0 ? (m.makespanAfter - m.makespanBefore) / m.makespanBefore * 100 : 0;
      const QString step = m.movedWith > 1 ? tr("that move (%1 operators together)").arg(m.movedWith) : tr("that move");
      r << tr("%1 took the makespan from %2 us to %3 us (%4%5 %)")
               .arg(step)
               .arg(m.makespanBefore, 0, 'f', 1)
               .arg(m.makespanAfter, 0, 'f', 1)
               .arg(pct > 0 ? QStringLiteral("+") : QString())
               .arg(pct, 0, 'f', 1);
    }
  }
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
  else if (cheapest >= 0 && manual)
    r << tr("not the fastest device (%1 is: %2 us vs %3 us)")
             .arg(deviceLabel(cheapest))
             .arg(table_->w(op, cheapest), 0, 'f', 1)
             .arg(table_->w(op, d), 0, 'f', 1);
  else if (cheapest >= 0)
    r << tr("not the fastest device (%1 is: %2 us vs %3 us): placed here to overlap work or save transfers")
             .arg(deviceLabel(cheapest))
             .arg(table_->w(op, cheapest), 0, 'f', 1)
             .arg(table_->w(op, d), 0, 'f', 1);
  if (!manual && !state_.algorithm.empty())
    r << tr("chosen by %1").arg(sched ? QString::fromStdString(sched->title()) : algo);
  if (static_cast<size_t>(op) < critical_.task.size() && critical_.task[static_cast<size_t>(op)])
    r << tr("on the critical path: making it faster shortens the makespan");
  return r;
}

}  // namespace partex::gui
