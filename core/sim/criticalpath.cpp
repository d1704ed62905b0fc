#include "sim/criticalpath.h"

#include <map>
#include <utility>

namespace partex {

CriticalPath criticalPath(const CostTable& t, const Plan& plan, const Timeline& tl) {
  CriticalPath cp;
  const int n = t.numTasks();
  cp.task.assign(static_cast<size_t>(n), 0);
  cp.edge.assign(t.edges.size(), 0);
  if (n == 0 || tl.tasks.size() != static_cast<size_t>(n) || plan.device.size() != static_cast<size_t>(n)) return cp;
  // Previous task on the same device, and when each tensor reached each device.
  std::vector<TaskId> prev(static_cast<size_t>(n), -1);
  for (const auto& order : plan.order)
    for (size_t i = 1; i < order.size(); ++i) prev[static_cast<size_t>(order[i])] = order[i - 1];
  std::map<std::pair<TaskId, DeviceId>, double> arrival;
  for (const auto& x : tl.transfers) {
    if (x.src < 0) continue;
    auto key = std::make_pair(x.src, x.to);
    auto it = arrival.find(key);
    if (it == arrival.end() || x.end < it->second) arrival[key] = x.end;
  }
  TaskId v = 0;
  for (TaskId u = 1; u < n; ++u)
    if (tl.tasks[static_cast<size_t>(u)].end > tl.tasks[static_cast<size_t>(v)].end) v = u;
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  while (v >= 0 && !seen[static_cast<size_t>(v)]) {
    seen[static_cast<size_t>(v)] = 1;
    cp.task[static_cast<size_t>(v)] = 1;
    const auto& slot = tl.tasks[static_cast<size_t>(v)];
    double best = -1;
    TaskId next = -1;
    int32_t nextEdge = -1;
    if (TaskId p = prev[static_cast<size_t>(v)]; p >= 0) {
      best = tl.tasks[static_cast<size_t>(p)].end;
      next = p;
    }
    for (int32_t e : t.inEdges[static_cast<size_t>(v)]) {
      const TaskId u = t.edges[static_cast<size_t>(e)].src;
      double ready = tl.tasks[static_cast<size_t>(u)].end;
      if (tl.tasks[static_cast<size_t>(u)].device != slot.device) {
        auto it = arrival.find({u, slot.device});
        ready =
            it != arrival.end() ? it->second : ready + t.comm(e, tl.tasks[static_cast<size_t>(u)].device, slot.device);
      }
      if (ready > best + 1e-9) {
        best = ready;
        next = u;
        nextEdge = e;
      }
    }
    if (nextEdge >= 0) cp.edge[static_cast<size_t>(nextEdge)] = 1;
    v = next;
  }
  return cp;
}

}  // namespace partex
