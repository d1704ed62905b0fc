// Session, background work: loading a model, platform or project, running a scheduler and
// comparing schedulers, each through its JobTracker (the newest job wins).
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QUndoStack>

#include <chrono>
#include <cmath>
#include <functional>

#include "cost/instances.h"
#include "gguf/gguf.h"
#include "sched/compare.h"
#include "session/commands.h"
#include "session/session.h"

namespace partex::gui {

/// A scheduler run's result, built on the worker.
struct Session::SchedOutcome {
  QString algorithm;
  bool respectPins = true;
  Result<Plan> plan = makeError("not run");
  double ms = 0;
  std::vector<std::string> notes;
};

// --- Loading -----------------------------------------------------------------------------------

void Session::open(const QString& path, const QStringList& dims) {
  emit loadStarted(tr("Loading %1...").arg(QFileInfo(path).fileName()));
  // Profiles belong to a model: reloading the same file re-applies them (a changed model refuses
  // them with a warning), another model starts without.
  const bool reload = model_ && QFileInfo(path).absoluteFilePath() ==
                                    QFileInfo(QString::fromStdString(model_->path)).absoluteFilePath();
  startPrepare(nullptr, path, dims, reload ? profiles_ : std::vector<LoadedProfile>{});
}

void Session::setPlatform(const QString& nameOrPath) {
  if (nameOrPath.toStdString() == platformName_ && !customPlatform_ && hasModel()) return;
  platformName_ = nameOrPath.toStdString();
  customPlatform_.reset();
  if (instance_) emit message(platformIgnoredNote(nameOrPath));
  if (!model_) return;
  emit loadStarted(tr("Building the cost table on %1...").arg(nameOrPath));
  startPrepare(model_, QString(), {}, profiles_);
}

void Session::setPlatform(const Platform& platform, const QString& label) {
  platformName_ = label.toStdString();
  customPlatform_ = platform;
  if (instance_) emit message(platformIgnoredNote(label));
  if (!model_) return;
  emit loadStarted(tr("Building the cost table on %1...").arg(label));
  startPrepare(model_, QString(), {}, profiles_);
}

void Session::startPrepare(std::shared_ptr<const LoadedModel> model, const QString& path, const QStringList& dims,
                           std::vector<LoadedProfile> profiles) {
  std::vector<std::string> d;
  for (const auto& s : dims) d.push_back(s.toStdString());
  const std::string plat = platformName_;
  const std::optional<Platform> custom = customPlatform_;
  const std::string file = path.toStdString();
  prepJobs_.start(
      [model, file, d, plat, custom, profiles](const std::atomic<bool>&) -> Result<Prepared> {
        std::shared_ptr<const LoadedModel> m = model;
        if (!m) {
          // What an instance is, is core's rule; the platform then plays no part. A GGUF reference with
          // options ("m.gguf?phase=decode&seq=64") or a generator reference ("gen:moe?...") is a model
          // and names no file as it is written.
          if (!isGgufRef(file) && file.rfind("gen:", 0) != 0) {
            auto instance = isInstanceFile(file);
            if (!instance) return Error{instance.message()};
            if (*instance) return prepareInstance(file);
          }
          auto loaded = loadModel(file, d);
          if (!loaded) return Error{loaded.message()};
          m = loaded.value();
        }
        return custom ? prepareSession(m, *custom, plat, profiles) : prepareSession(m, plat, profiles);
      },
      [this](Result<Prepared> p) { onPrepared(std::move(p)); });
}

void Session::openProject(const Project& project, const QString& origin, bool modified) {
  emit loadStarted(tr("Opening %1...").arg(QFileInfo(origin).fileName()));
  platformName_ = project.platform;
  customPlatform_.reset();
  const std::string file = origin.toStdString();
  prepJobs_.start(
      [project, file, modified](const std::atomic<bool>&) -> Result<Prepared> {
        auto p = prepareProject(project, file);
        if (p) p->modified = p->modified || modified;
        return p;
      },
      [this](Result<Prepared> p) { onPrepared(std::move(p)); });
}

QString Session::platformIgnoredNote(const QString& platform) const {
  return tr("%1 is a %2 with its own devices: platform %3 is ignored for it (it applies to the next ONNX model)")
      .arg(QFileInfo(sourcePath()).fileName(),
           instance_ ? QString::fromStdString(instance_->formatTitle()) : tr("task graph"), platform);
}

bool Session::loading() const {
  return prepJobs_.isRunning();
}

void Session::waitForJobs() {
  prepJobs_.waitForDone();
  schedJobs_.waitForDone();
  compareJobs_.waitForDone();
}

void Session::onPrepared(Result<Prepared> result) {
  if (!result) {
    if (model_ || instance_) {  // keep the platform that is installed
      platformName_ = installedName_;
      customPlatform_ = installedCustom_;
    }
    emit loadFailed(QString::fromStdString(result.message()));
    return;
  }
  const QString note = QString::fromStdString(result->note);
  install(std::move(result).value());
  if (!note.isEmpty()) emit loadWarning(note);
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
  auto table = table_;
  Constraints c;
  if (respectPins) c = constraints();
  SchedOptions o;
  o.timeLimitSec = timeLimitSec;
  o.objective = objective_;
  o.latencyBoundUs = objective_ == Objective::Throughput ? latencyBoundUs_ : 0;
  o.progress = throttledProgress(QPointer<Session>(this));
  emit schedulerStarted(QString::fromStdString(sched->title()));
  // The newest run wins: starting one asks the running one to stop and drops its plan.
  schedJobs_.start(
      [sched, table, c, o, algorithm, respectPins](const std::atomic<bool>& stop) {
        SchedOutcome out;
        out.algorithm = algorithm;
        out.respectPins = respectPins;
        SchedOptions so = o;
        so.cancel = &stop;
        QElapsedTimer timer;
        timer.start();
        SchedInfo info;
        out.plan = sched->schedule(*table, c, so, &info);
        out.ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
        out.notes = info.notes;
        return out;
      },
      [this](SchedOutcome out) { onScheduled(std::move(out)); });
}

void Session::setObjective(Objective objective, double latencyBoundUs) {
  objective_ = objective;
  latencyBoundUs_ = std::isfinite(latencyBoundUs) && latencyBoundUs > 0 ? latencyBoundUs : 0;
}

void Session::cancelScheduler() {
  schedJobs_.stop();
  compareJobs_.stop();
}

bool Session::schedulerRunning() const {
  return schedJobs_.isRunning() || compareJobs_.isRunning();
}

bool Session::stopJobsOnOldTable() {
  const bool schedulerStopped = schedJobs_.isRunning();
  schedJobs_.drop();    // its plan was made on the old table: never applied
  compareJobs_.stop();  // reports "the costs changed" when it ends (onCompared)
  return schedulerStopped;
}

void Session::onScheduled(SchedOutcome out) {
  const bool cancelled = schedJobs_.stopRequested();
  if (!out.plan) {
    emit schedulerFinished(false, cancelled ? tr("Cancelled") : QString::fromStdString(out.plan.message()));
    return;
  }
  if (cancelled) {
    emit schedulerFinished(false, tr("Cancelled"));
    return;
  }
  PlanState after = state_;
  after.plan = std::move(out.plan).value();
  auto tl = sim_->run(after.plan);
  if (!tl) {
    (void)sim_->run(state_.plan);
    emit schedulerFinished(
        false, tr("The plan of %1 does not simulate: %2").arg(out.algorithm, QString::fromStdString(tl.message())));
    return;
  }
  after.manual.assign(static_cast<size_t>(table_->numTasks()), 0);
  after.handMoves.clear();
  after.algorithm = out.algorithm.toStdString();
  after.schedulerMakespan = tl->makespan;
  if (!out.respectPins) after.pinned.clear();
  const Scheduler* s = findScheduler(after.algorithm);
  const QString title = s ? QString::fromStdString(s->title()) : out.algorithm;
  QString note = tr("%1: makespan %2 us in %3 ms").arg(title).arg(tl->makespan, 0, 'f', 1).arg(out.ms, 0, 'f', 0);
  for (const auto& n : out.notes) note += QStringLiteral("; ") + QString::fromStdString(n);
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
  auto table = table_;
  std::vector<std::string> algos;
  for (const auto& a : algorithms) algos.push_back(a.toStdString());
  SchedOptions o;
  o.timeLimitSec = timeLimitSec;
  o.objective = objective_;
  o.latencyBoundUs = objective_ == Objective::Throughput ? latencyBoundUs_ : 0;
  emit schedulerStarted(tr("Comparing %1 algorithms").arg(algorithms.size()));
  QPointer<Session> self(this);
  const std::weak_ptr<const CostTable> onTable = table_;
  compareJobs_.start(
      [table, algos, o, self](const std::atomic<bool>& stop) {
        // The rules are core's (sched/compare.h), as in `partex-cli compare`; the ticked algorithms are the
        // default set, not named one by one, so exact keeps its size limit here too.
        SchedOptions so = o;
        so.cancel = &stop;
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
            row.periodUs = r.periodUs;
            row.streamLatencyUs = r.streamLatencyUs;
            row.plan = r.plan;
            row.timeline = r.timeline;
          }
          rows << row;
        }
        return rows;
      },
      [this, onTable](const QList<CompareRow>& rows) { onCompared(rows, onTable); });
}

void Session::onCompared(const QList<CompareRow>& rows, const std::weak_ptr<const CostTable>& table) {
  const bool cancelled = compareJobs_.stopRequested();
  if (table.lock() != table_) {
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
