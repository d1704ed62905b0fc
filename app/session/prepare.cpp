#include "session/prepare.h"

#include <QByteArray>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>

#include "cost/instances.h"
#include "plan/planfile.h"
#include "sched/scheduler.h"

namespace partex::gui {

static std::string fileNameOf(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).fileName().toStdString();
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

/// The initial plan on p.table: HEFT's (quick on any size, and a sensible partition to start editing
/// from), or everything on the first device that runs everything when HEFT fails.
static Status initialPlan(Prepared& p) {
  const CostTable& t = *p.table;
  p.state.manual.assign(static_cast<size_t>(t.numTasks()), 0);
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
    // Never silently: the plan of last resort may not fit the devices' memory (the session flags it
    // over capacity, docs/design-decisions.md "An edited capacity").
    if (!plan)
      p.note += std::string(p.note.empty() ? "" : "; ") + "HEFT found no plan (" + plan.message() +
                "): everything placed on " +
                t.deviceIds[static_cast<size_t>(p.state.plan.device.empty() ? 0 : p.state.plan.device[0])];
  }
  p.timeline = std::move(tl).value();
  p.state.schedulerMakespan = p.timeline.makespan;
  return {};
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
  if (auto st = initialPlan(p); !st) return Error{st.message()};
  return p;
}

Result<Prepared> prepareInstance(const std::string& path) {
  auto file = readInstanceFile(path);
  if (!file) return Error{file.message()};
  auto inst = std::make_shared<LoadedInstance>();
  inst->path = path;
  inst->format = file->format;
  inst->sha256 = file->sha256;
  Prepared p;
  p.instance = std::move(inst);
  p.table = std::make_shared<const CostTable>(std::move(file->table));
  p.modelled = p.table;
  if (auto st = initialPlan(p); !st) return makeError(fileNameOf(path), ": ", st.message());
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

}  // namespace partex::gui
