// partex-cli render: the Gantt chart (GanttChart, the painting the GUI's GanttView shows) and the
// graph coloured by device (Graphviz on planToDot, recoloured with the GUI palette) as SVG or PNG,
// without a display. The command computes the plan and what core gives (timeline, DOT text, fused
// kernels); the painting is in a module loaded only here (render_images.h), so that no other command
// of partex-cli loads Qt GUI or Graphviz.
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/render_images.h"
#include "commands.h"
#include "plan/exports.h"
#include "plan/fusedkernels.h"
#include "plan/planfile.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

/// Options of `render`.
struct RenderArgs {
  std::string model;
  std::string platform;
  std::vector<std::string> dims;
  std::string plan;
  std::string algo;
  std::string reference;
  std::string graph;
  std::string gantt;
  int width = 1600;
};

/// The platform's own colour of each device ("" where it sets none: the palette's).
std::vector<std::string> platformColors(const Problem& p) {
  std::vector<std::string> colors;
  for (int d = 0; d < p.table.numDevices(); ++d) {
    std::string own;
    if (p.platform) {
      const DeviceId pd = p.platform->findDevice(p.table.deviceIds[static_cast<size_t>(d)]);
      if (pd >= 0) own = p.platform->devices[static_cast<size_t>(pd)].color;
    }
    colors.push_back(own);
  }
  return colors;
}

/// The drawing module (render_images.h), beside the program or in ../lib/partex; the reason when absent.
/// Sanitizer builds link its code in instead (app/CMakeLists.txt).
Result<RenderImagesFn> loadRenderModule() {
#ifdef PARTEX_RENDER_LINKED
  return &partex_render_images;
#else
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const auto& dir : {exe.parent_path(), exe.parent_path() / ".." / "lib" / "partex"}) {
    const auto path = dir / kRenderImagesModule;
    if (!std::filesystem::exists(path, ec)) continue;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // stays loaded: Qt's state lives in it
    if (!lib) {
      const char* e = dlerror();
      return makeError("render: cannot load ", path.string(), ": ", e ? e : "unknown error");
    }
    auto fn = reinterpret_cast<RenderImagesFn>(dlsym(lib, kRenderImagesSymbol));
    if (!fn) return makeError("render: ", path.string(), " has no entry point ", kRenderImagesSymbol);
    return fn;
  }
  return makeError("render: this build has no rendering (", kRenderImagesModule,
                   " is not beside partex-cli; configure with -DPARTEX_BUILD_GUI=ON)");
#endif
}

/// Schedules with `algo` and simulates; errors name the model and the algorithm.
Result<std::pair<Plan, Timeline>> scheduleWith(const Problem& p, const std::string& model, const std::string& algo) {
  const Scheduler* s = findScheduler(algo);
  if (!s) {
    std::vector<std::string> names;
    for (const auto& x : allSchedulers()) names.push_back(x->name());
    return makeError("unknown algorithm '", algo, "' (algorithms: ", join(names, ", "), ")");
  }
  auto plan = s->schedule(p.table, {}, {});
  if (!plan) return makeError(baseName(model), ": ", algo, ": ", plan.message());
  auto tl = simulate(p.table, *plan);
  if (!tl) return makeError(baseName(model), ": ", algo, " produced an invalid plan: ", tl.message());
  return std::make_pair(std::move(plan).value(), std::move(tl).value());
}

int runRender(const RenderArgs& a) {
  if (a.graph.empty() && a.gantt.empty()) return fail("render: nothing to draw: give --graph FILE and/or --gantt FILE");
  for (const auto* out : {&a.graph, &a.gantt})
    if (!out->empty() && imageType(*out).empty())
      return fail(*out + ": unsupported image type (use a .svg or .png file name)");
  if (!a.plan.empty() && !a.algo.empty()) return fail("render: give --plan or --algo, not both");
  auto draw = loadRenderModule();
  if (!draw) return fail(draw.message());

  auto p = loadProblem(a.model, a.platform, a.dims);
  if (!p) return fail(p.message());
  Plan plan;
  Timeline tl;
  if (!a.plan.empty()) {
    auto loaded = loadPlanFile(a.plan, p->table, p->id);
    if (!loaded) return fail(loaded.message());
    auto sim = simulate(p->table, *loaded);
    if (!sim) return fail(a.plan + ": " + sim.message());
    plan = std::move(loaded).value();
    tl = std::move(sim).value();
  } else {
    auto r = scheduleWith(*p, a.model, a.algo.empty() ? "heft" : a.algo);
    if (!r) return fail(r.message());
    plan = std::move(r->first);
    tl = std::move(r->second);
  }
  RenderImagesJob job;
  job.table = &p->table;
  job.timeline = &tl;
  job.deviceColors = platformColors(*p);
  job.graphPath = a.graph;
  job.ganttPath = a.gantt;
  job.width = a.width;
  if (!a.reference.empty()) {
    auto r = scheduleWith(*p, a.model, a.reference);
    if (!r) return fail(r.message());
    job.referenceUs = r->second.makespan;
    const Scheduler* rs = findScheduler(a.reference);
    // "HEFT (Topcuoglu et al. 2002)" -> "HEFT plan": the citation is in the title already.
    std::string shortTitle = rs ? rs->title() : a.reference;
    if (auto paren = shortTitle.find(" ("); paren != std::string::npos) shortTitle.resize(paren);
    job.referenceLabel = shortTitle + " plan";
  }
  if (!a.graph.empty()) {
    job.taskDevice.assign(plan.device.begin(), plan.device.end());
    job.dot = planToDot(p->table, plan, &tl);
  }
  if (!a.gantt.empty()) {
    if (p->graph) job.fused = fusedKernels(*p->graph, p->table, plan.device, &tl);
    const Scheduler* s = findScheduler(plan.algorithm);
    job.title = s ? s->title() : plan.algorithm.empty() ? std::string("plan") : plan.algorithm;
  }
  std::string error;
  std::vector<std::string> written;
  if ((*draw)(&job, &error, &written) != 0) return fail(error);
  for (const auto& w : written) std::printf("Wrote %s\n", w.c_str());
  return 0;
}

}  // namespace

void addRender(CLI::App& app, int& exitCode) {
  auto* cmd =
      app.add_subcommand("render", "Draw the Gantt chart and the graph coloured by device as SVG or PNG (headless)");
  auto a = std::make_shared<RenderArgs>();
  cmd->add_option("model", a->model, "ONNX model or JSON task graph")->required();
  cmd->add_option("--platform,-p", a->platform,
                  "Platform preset name or platform JSON file (optional for task graphs)");
  cmd->add_option("--dim", a->dims, "Bind a symbolic input dimension: NAME=VALUE or INPUT:AXIS=VALUE");
  cmd->add_option("--plan", a->plan, "Plan file (JSON) to draw");
  cmd->add_option("--algo,-a", a->algo, "Algorithm to schedule with when no --plan is given (default heft)");
  cmd->add_option("--reference", a->reference,
                  "Also schedule with this algorithm and show the makespan change against it");
  cmd->add_option("--graph", a->graph, "Write the graph coloured by device (.svg or .png, Graphviz dot layout)");
  cmd->add_option("--gantt", a->gantt, "Write the Gantt chart (.svg or .png)");
  cmd->add_option("--width", a->width, "Gantt image width in pixels")
      ->capture_default_str()
      ->check(CLI::Range(200, 20000));
  cmd->callback([a, &exitCode] { exitCode = runRender(*a); });
}

}  // namespace partex::cli
