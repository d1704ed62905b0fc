// bench_gantt: cost of a Gantt chart update for the live chart: setTimeline (row layout, sorting)
// and one paint into a QImage, fitted (zoomed out: bars merged per pixel column) and zoomed in,
// plus a drag preview (setPreview + paint), on random DAGs of 1,000 and 10,000 operators scheduled
// by HEFT on the mobile-soc preset. Prints a Markdown table of medians.
//
// Usage: bench_gantt [--reps N] [--sizes 1000,10000]
#include <QApplication>
#include <QImage>
#include <QPainter>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gantt/ganttview.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/scheduler.h"
#include "session/palette.h"
#include "sim/simulator.h"
#include "support/strings.h"
#include "../benchutil.h"

using namespace partex;

namespace {
using partex::bench::median;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int reps = 21;
  std::vector<int> sizes = {1000, 10000};
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps") reps = std::max(1, std::atoi(argv[++i]));
    if (a == "--sizes") {
      sizes.clear();
      for (const auto& s : split(argv[++i], ',')) sizes.push_back(std::atoi(s.c_str()));
    }
  }
  auto plat = loadPreset("mobile-soc");
  if (!plat) {
    std::fprintf(stderr, "bench_gantt: %s\n", plat.message().c_str());
    return 2;
  }
  std::printf(
      "| tasks | devices | rows | setTimeline ms | paint fitted ms | marks fitted | paint zoomed 20x ms | "
      "setPreview + paint ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int n : sizes) {
    GenSpec spec;
    spec.kind = "random";
    spec.nodes = n;
    auto bytes = generateModel(spec);
    if (!bytes) return std::fprintf(stderr, "bench_gantt: %s\n", bytes.message().c_str()), 2;
    auto g = importOnnxBytes(*bytes, "random.onnx");
    if (!g) return std::fprintf(stderr, "bench_gantt: %s\n", g.message().c_str()), 2;
    auto t = buildCostTable(*g, characteriseAll(*g), *plat);
    if (!t) return std::fprintf(stderr, "bench_gantt: %s\n", t.message().c_str()), 2;
    auto plan = findScheduler("heft")->schedule(*t, {}, {});
    if (!plan) return std::fprintf(stderr, "bench_gantt: %s\n", plan.message().c_str()), 2;
    auto tl = simulate(*t, *plan);
    if (!tl) return std::fprintf(stderr, "bench_gantt: %s\n", tl.message().c_str()), 2;
    // The preview: one operator moved to another device, as a drag would show it.
    Simulator sim(*t);
    Plan moved = *plan;
    const TaskId v = t->numTasks() / 2;
    DeviceId to = 0;
    while (to < t->numDevices() && (to == plan->device[size_t(v)] || !t->canRun(v, to))) ++to;
    auto preview = to < t->numDevices() ? sim.move(moved, v, to) : Result<Timeline>(*tl);
    if (!preview) return std::fprintf(stderr, "bench_gantt: %s\n", preview.message().c_str()), 2;

    std::vector<QColor> colors;
    for (int d = 0; d < t->numDevices(); ++d) colors.push_back(gui::deviceColor(d));
    gui::GanttView view;
    view.resize(1600, 400);
    QImage img(view.size(), QImage::Format_ARGB32_Premultiplied);
    std::vector<double> setMs, paintMs, zoomMs, previewMs;
    int marks = 0;
    for (int r = 0; r < reps; ++r) {
      view.fit();
      auto t0 = std::chrono::steady_clock::now();
      view.setTimeline(&*t, *tl, colors);
      setMs.push_back(msSince(t0));
      t0 = std::chrono::steady_clock::now();
      view.render(&img);
      paintMs.push_back(msSince(t0));
      marks = view.lastMarkCount();
      gui::TimeScale s = view.timeScale();
      s.zoomAbout(800, 20);
      view.setTimeScale(s);
      t0 = std::chrono::steady_clock::now();
      view.render(&img);
      zoomMs.push_back(msSince(t0));
      view.fit();
      t0 = std::chrono::steady_clock::now();
      view.setPreview(&*preview);
      view.render(&img);
      previewMs.push_back(msSince(t0));
      view.setPreview(nullptr);
    }
    std::printf("| %d | %d | %zu | %.3f | %.3f | %d | %.3f | %.3f |\n", t->numTasks(), t->numDevices(),
                view.rows().size(), median(setMs), median(paintMs), marks, median(zoomMs), median(previewMs));
  }
  return 0;
}
