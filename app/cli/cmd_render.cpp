// partex-cli render: the Gantt chart (GanttChart, the painting the GUI's GanttView shows) and the
// graph coloured by device (Graphviz on planToDot, recoloured with the GUI palette) as SVG or PNG,
// without a display. Qt GUI (not Widgets) is started with the offscreen platform only inside this
// command.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "support/files.h"

#ifdef PARTEX_HAVE_GUI
#include <QGuiApplication>
#include <QByteArray>
#include <QFile>

#include <graphviz/gvc.h>

#include "gantt/ganttchart.h"
#include "plan/exports.h"
#include "plan/fusedkernels.h"
#include "plan/planfile.h"
#include "sched/scheduler.h"
#include "session/palette.h"
#include "sim/simulator.h"
#include "support/strings.h"
#endif

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

#ifdef PARTEX_HAVE_GUI

/// "svg" or "png" from a path, or "" for anything else.
std::string imageType(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "svg" || ext == "png" ? ext : "";
}

/// Graphviz error messages of the current call, joined into one line.
std::string& graphvizErrors() {
  static std::string s;
  return s;
}

int collectGraphvizError(char* msg) {
  std::string m = msg ? msg : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.pop_back();
  if (!m.empty()) graphvizErrors() += (graphvizErrors().empty() ? "" : "; ") + m;
  return 0;
}

/// Owns a Graphviz context and graph; frees the layout, graph and context in order.
class GraphvizJob {
 public:
  GraphvizJob() : gvc_(gvContext()) {}
  ~GraphvizJob() {
    if (g_ && laidOut_) gvFreeLayout(gvc_, g_);
    if (g_) agclose(g_);
    if (gvc_) gvFreeContext(gvc_);
  }
  GraphvizJob(const GraphvizJob&) = delete;
  GraphvizJob& operator=(const GraphvizJob&) = delete;

  /// Parses DOT text, recolours nodes n<task> and legend_<device> and renders it as `format`.
  Result<std::string> render(const std::string& dot, const std::vector<int>& taskDevice,
                             const std::vector<QColor>& colors, const std::string& format) {
    graphvizErrors().clear();
    agseterr(AGERR);
    agseterrf(&collectGraphvizError);
    if (!gvc_) return Error{"cannot start Graphviz"};
    g_ = agmemread(dot.c_str());
    if (!g_) return Error{"Graphviz cannot read the graph: " + graphvizErrors()};
    for (Agnode_t* n = agfstnode(g_); n; n = agnxtnode(g_, n)) {
      const std::string name = agnameof(n);
      int device = -1;
      if (name.rfind("legend_", 0) == 0) {
        device = std::atoi(name.c_str() + 7);
      } else if (name.size() > 1 && name[0] == 'n') {
        const int v = std::atoi(name.c_str() + 1);
        if (v >= 0 && v < static_cast<int>(taskDevice.size())) device = taskDevice[static_cast<size_t>(v)];
      }
      if (device < 0 || device >= static_cast<int>(colors.size())) continue;
      const QColor c = colors[static_cast<size_t>(device)];
      std::string fill = c.name().toStdString(), text = gui::textColorOn(c).name().toStdString();
      std::string empty;
      agsafeset(n, const_cast<char*>("fillcolor"), fill.data(), empty.data());
      agsafeset(n, const_cast<char*>("fontcolor"), text.data(), empty.data());
    }
    if (gvLayout(gvc_, g_, "dot") != 0) return Error{"Graphviz layout failed: " + graphvizErrors()};
    laidOut_ = true;
    char* data = nullptr;
    unsigned int len = 0;
    if (gvRenderData(gvc_, g_, format.c_str(), &data, &len) != 0 || !data) {
      if (data) gvFreeRenderData(data);
      return Error{"Graphviz cannot render " + format + ": " + graphvizErrors()};
    }
    std::string out(data, len);
    gvFreeRenderData(data);
    return out;
  }

 private:
  GVC_t* gvc_ = nullptr;
  Agraph_t* g_ = nullptr;
  bool laidOut_ = false;
};

/// Device colours: the platform's own where it sets one, the palette otherwise.
std::vector<QColor> deviceColors(const Problem& p) {
  std::vector<QColor> colors;
  for (int d = 0; d < p.table.numDevices(); ++d) {
    std::string own;
    if (p.platform) {
      const DeviceId pd = p.platform->findDevice(p.table.deviceIds[static_cast<size_t>(d)]);
      if (pd >= 0) own = p.platform->devices[static_cast<size_t>(pd)].color;
    }
    colors.push_back(gui::deviceColor(d, own));
  }
  return colors;
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

/// Removes the files this run wrote when a later step fails, so that a failed render leaves nothing.
struct Written {
  std::vector<std::string> paths;
  void rollback() const {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

int runRender(const RenderArgs& a) {
  if (a.graph.empty() && a.gantt.empty()) return fail("render: nothing to draw: give --graph FILE and/or --gantt FILE");
  for (const auto* out : {&a.graph, &a.gantt})
    if (!out->empty() && imageType(*out).empty())
      return fail(*out + ": unsupported image type (use a .svg or .png file name)");
  if (!a.plan.empty() && !a.algo.empty()) return fail("render: give --plan or --algo, not both");

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
  double referenceUs = 0;
  if (!a.reference.empty()) {
    auto r = scheduleWith(*p, a.model, a.reference);
    if (!r) return fail(r.message());
    referenceUs = r->second.makespan;
  }

  // Qt only from here on, headless. Qt's own chatter (e.g. "XDG_RUNTIME_DIR not set") would break
  // the one-line error contract on stderr: only critical messages get through, as one line each.
  qputenv("QT_QPA_PLATFORM", "offscreen");
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext&, const QString& msg) {
    if (type == QtCriticalMsg || type == QtFatalMsg)
      std::cerr << "partex-cli: Qt: " << msg.simplified().toStdString() << "\n";
  });
  static int argc = 1;
  static char arg0[] = "partex-cli";
  static char* argv[] = {arg0, nullptr};
  QGuiApplication qapp(argc, argv);
  const std::vector<QColor> colors = deviceColors(*p);
  Written written;

  if (!a.graph.empty()) {
    std::vector<int> taskDevice(plan.device.begin(), plan.device.end());
    GraphvizJob job;
    auto image = job.render(planToDot(p->table, plan, &tl), taskDevice, colors, imageType(a.graph));
    if (!image) return fail(a.graph + ": " + image.message());
    Status st = writeFileAtomic(a.graph, *image);
    if (!st) return fail(st.message());
    written.paths.push_back(a.graph);
  }
  if (!a.gantt.empty()) {
    gui::GanttChart view;
    view.setTimeline(&p->table, tl, colors,
                     p->graph ? fusedKernels(*p->graph, p->table, plan.device, &tl) : std::vector<FusedKernel>{});
    const Scheduler* s = findScheduler(plan.algorithm);
    view.setTitle(QString::fromStdString(s                        ? s->title()
                                         : plan.algorithm.empty() ? std::string("plan")
                                                                  : plan.algorithm));
    if (referenceUs > 0) {
      const Scheduler* rs = findScheduler(a.reference);
      // "HEFT (Topcuoglu et al. 2002)" -> "HEFT plan": the citation is in the title already.
      std::string shortTitle = rs ? rs->title() : a.reference;
      if (auto paren = shortTitle.find(" ("); paren != std::string::npos) shortTitle.resize(paren);
      view.setReferenceLabel(QString::fromStdString(shortTitle + " plan"));
      view.setReferenceMakespan(referenceUs);
    }
    view.setExportWidth(a.width);
    Status st = view.saveImage(QString::fromStdString(a.gantt));
    if (!st) {
      written.rollback();
      return fail(st.message());
    }
    written.paths.push_back(a.gantt);
  }
  for (const auto& w : written.paths) std::printf("Wrote %s\n", w.c_str());
  return 0;
}

#else

int runRender(const RenderArgs&) {
  return fail("render: this build has no rendering (configure with -DPARTEX_BUILD_GUI=ON)");
}

#endif

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
