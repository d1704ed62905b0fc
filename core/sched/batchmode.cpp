#include "sched/batchmode.h"

#include <algorithm>

namespace partex::sched_detail {

Result<Plan> batchSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                           const std::string& algorithm, const BatchPicker& pick) {
  const int n = t.numTasks(), m = t.numDevices();
  const std::vector<TaskId> topo = t.topoOrder();
  const std::vector<int32_t> pos = topoPositions(t, topo);
  std::vector<int32_t> missing(static_cast<size_t>(n), 0);
  std::vector<TaskId> ready;
  for (TaskId v = 0; v < n; ++v) {
    missing[static_cast<size_t>(v)] = static_cast<int32_t>(t.inEdges[static_cast<size_t>(v)].size());
    if (missing[static_cast<size_t>(v)] == 0) ready.push_back(v);
  }
  ListTimeline tl(t, o.sim);
  std::vector<BatchOption> options;
  const int step = std::max(1, n / 100);
  int done = 0;
  o.report(0.0, algorithm + ": scheduling");
  while (!ready.empty()) {
    if (o.cancelled()) return cancelledError();
    options.clear();
    for (TaskId v : ready) {
      BatchOption b;
      b.task = v;
      for (DeviceId d = 0; d < m; ++d) {
        if (!c.allowed(t, v, d)) continue;
        const auto e = tl.evaluate(v, d);
        if (e.effFinish < b.finish) {
          b.secondFinish = b.finish;
          b.finish = e.effFinish;
          b.fastest = d;
        } else if (e.effFinish < b.secondFinish) {
          b.secondFinish = e.effFinish;
        }
        if (e.start < b.start) {
          b.start = e.start;
          b.earliest = d;
        }
      }
      if (b.fastest < 0) return makeError("task '", t.taskNames[static_cast<size_t>(v)], "': no allowed device");
      options.push_back(b);
    }
    const BatchChoice ch = pick(options);
    if (ch.option >= options.size() || ch.device < 0 || ch.device >= m ||
        !c.allowed(t, options[ch.option].task, ch.device))
      return makeError(algorithm, ": chose no allowed device");
    const TaskId v = options[ch.option].task;
    tl.place(v, ch.device);
    ready.erase(std::find(ready.begin(), ready.end(), v));
    for (int32_t e : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(e)].dst;
      if (--missing[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
    if (++done % step == 0) o.report(static_cast<double>(done) / n, algorithm + ": scheduling");
  }
  if (done != n) return makeError(t.name, ": the task graph has a cycle");
  o.report(1.0, algorithm + ": done");
  return tl.toPlan(pos, algorithm);
}

double simulatedMakespan(const CostTable& t, const Plan& p, const SimOptions& sim) {
  auto tl = simulate(t, p, sim);
  return tl ? tl->makespan : kInf;
}

}  // namespace partex::sched_detail
