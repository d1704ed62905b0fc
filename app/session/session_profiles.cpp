// Session, profiles: measured and imported costs over the modelled ones. Adding or removing one
// builds a new cost table aside and installs it keeping the model, platform, plan and pins.
#include <QFileInfo>
#include <QUndoStack>

#include <algorithm>

#include "session/session.h"

namespace partex::gui {

CostCounts Session::costCounts() const {
  return table_ ? countCosts(*table_) : CostCounts{};
}

/// A profile applies to an ONNX model's operators on a platform: an instance has neither.
static Status refuseOnInstance(const Session& s, const QString& path) {
  if (!s.isInstance()) return {};
  return makeError(QFileInfo(path).fileName().toStdString(), ": ",
                   s.instanceReason(QObject::tr("a profile")).toStdString());
}

Result<ApplyReport> Session::addProfile(const QString& path) {
  if (!hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": open a model first");
  if (auto st = refuseOnInstance(*this, path); !st) return Error{st.message()};
  auto lp = readProfile(path.toStdString());
  if (!lp) {
    emit message(tr("Profile refused: %1").arg(QString::fromStdString(lp.message())));
    return Error{lp.message()};
  }
  return addLoadedProfile(std::move(lp).value());
}

Result<ApplyReport> Session::addOrtImport(const QString& path, const QString& device, const QString& provider) {
  if (!hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": open a model first");
  if (auto st = refuseOnInstance(*this, path); !st) return Error{st.message()};
  auto lp = readOrtImport(path.toStdString(), device.toStdString(), provider.toStdString());
  if (!lp) {
    emit message(tr("Import refused: %1").arg(QString::fromStdString(lp.message())));
    return Error{lp.message()};
  }
  return addLoadedProfile(std::move(lp).value());
}

Result<ApplyReport> Session::addLoadedProfile(LoadedProfile p) {
  if (auto st = refuseOnInstance(*this, QString::fromStdString(p.path)); !st) return Error{st.message()};
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
  if (prepJobs_.isRunning()) return makeError("a model or platform is still loading: try again when it has loaded");
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
  const bool schedulerStopped = stopJobsOnOldTable();  // a running scheduler's plan was made on the old costs
  dirty_ = true;                                       // the profile list is part of the project
  undo_->clear();                                      // its timelines and reference makespans belong to the old costs
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

}  // namespace partex::gui
