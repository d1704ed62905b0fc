#pragma once
/// \file Problems the Gantt tests draw: the HEFT paper's task graph (uncontended links, so transfers
/// get device-pair rows) and a generated model on a preset platform (link resources), each with a
/// HEFT plan and its simulated timeline.

#include <QColor>

#include <memory>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/scheduler.h"
#include "session/palette.h"
#include "sim/simulator.h"
#include "support/files.h"
#include "testutil.h"

namespace partex::test {

/// A cost table with a plan and its timeline.
struct GanttProblem {
  CostTable table;
  Plan plan;
  Timeline timeline;
  std::string error;  ///< Non-empty when building it failed.
};

/// Schedules `t` with `algo` and simulates the plan.
inline GanttProblem scheduled(CostTable t, const std::string& algo) {
  GanttProblem p;
  p.table = std::move(t);
  const Scheduler* s = findScheduler(algo);
  if (!s) {
    p.error = "no scheduler " + algo;
    return p;
  }
  auto plan = s->schedule(p.table, {}, {});
  if (!plan) {
    p.error = plan.message();
    return p;
  }
  p.plan = std::move(plan).value();
  auto tl = simulate(p.table, p.plan);
  if (!tl) {
    p.error = tl.message();
    return p;
  }
  p.timeline = std::move(tl).value();
  return p;
}

/// tests/data/taskgraphs/heft2002.json scheduled by `algo`.
inline GanttProblem heft2002(const std::string& algo = "heft") {
  auto bytes = readFile(testDataDir() + "/taskgraphs/heft2002.json");
  if (!bytes) return {{}, {}, {}, bytes.message()};
  auto t = parseTaskGraph(*bytes, "heft2002.json");
  if (!t) return {{}, {}, {}, t.message()};
  return scheduled(std::move(t).value(), algo);
}

/// A generated model (e.g. "random" with `nodes` operators) on a platform preset, by `algo`.
inline GanttProblem generated(const std::string& kind, int nodes, const std::string& platform,
                              const std::string& algo = "heft") {
  GenSpec spec;
  spec.kind = kind;
  spec.nodes = nodes;
  auto bytes = generateModel(spec);
  if (!bytes) return {{}, {}, {}, bytes.message()};
  auto g = importOnnxBytes(*bytes, kind + ".onnx");
  if (!g) return {{}, {}, {}, g.message()};
  auto plat = loadPlatform(platform);
  if (!plat) return {{}, {}, {}, plat.message()};
  auto t = buildCostTable(*g, characteriseAll(*g), *plat);
  if (!t) return {{}, {}, {}, t.message()};
  return scheduled(std::move(t).value(), algo);
}

/// The palette colours of the table's devices.
inline std::vector<QColor> colorsFor(const CostTable& t) {
  std::vector<QColor> c;
  for (int d = 0; d < t.numDevices(); ++d) c.push_back(gui::deviceColor(d));
  return c;
}

}  // namespace partex::test
