#include "sim/plan.h"

#include <algorithm>

namespace partex {

std::vector<double> upwardRanks(const CostTable& t) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<double> wbar(static_cast<size_t>(n), 0.0);
  for (TaskId v = 0; v < n; ++v) {
    double s = 0;
    int k = 0;
    for (DeviceId d = 0; d < m; ++d)
      if (t.canRun(v, d)) {
        s += t.w(v, d);
        ++k;
      }
    wbar[static_cast<size_t>(v)] = k ? s / k : 0.0;
  }
  std::vector<double> cbar(t.edges.size());
  for (size_t e = 0; e < t.edges.size(); ++e) cbar[e] = t.meanComm(static_cast<int32_t>(e));
  std::vector<double> rank(static_cast<size_t>(n), 0.0);
  auto topo = t.topoOrder();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    TaskId v = *it;
    double best = 0;
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const Edge& e = t.edges[static_cast<size_t>(ei)];
      best = std::max(best, cbar[static_cast<size_t>(ei)] + rank[static_cast<size_t>(e.dst)]);
    }
    rank[static_cast<size_t>(v)] = wbar[static_cast<size_t>(v)] + best;
  }
  return rank;
}

void orderByUpwardRank(const CostTable& t, Plan& plan) {
  const int n = t.numTasks(), m = t.numDevices();
  auto rank = upwardRanks(t);
  auto topo = t.topoOrder();
  std::vector<int> pos(static_cast<size_t>(n));
  for (size_t i = 0; i < topo.size(); ++i) pos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  // Decreasing rank, ties by topological position: consistent with every dependency because
  // rank(u) >= rank(v) for each edge u -> v.
  std::vector<TaskId> byRank(topo);
  std::stable_sort(byRank.begin(), byRank.end(), [&](TaskId a, TaskId b) {
    if (rank[static_cast<size_t>(a)] != rank[static_cast<size_t>(b)]) return rank[static_cast<size_t>(a)] > rank[static_cast<size_t>(b)];
    return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
  });
  plan.order.assign(static_cast<size_t>(m), {});
  for (TaskId v : byRank) {
    DeviceId d = plan.device[static_cast<size_t>(v)];
    if (d >= 0 && d < m) plan.order[static_cast<size_t>(d)].push_back(v);
  }
}

Status checkPlanShape(const CostTable& t, const Plan& plan) {
  const int n = t.numTasks(), m = t.numDevices();
  if (static_cast<int>(plan.device.size()) != n)
    return makeError("plan assigns ", std::to_string(plan.device.size()), " operators, the model has ", std::to_string(n));
  if (static_cast<int>(plan.order.size()) != m)
    return makeError("plan orders ", std::to_string(plan.order.size()), " devices, the platform has ", std::to_string(m));
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (DeviceId d = 0; d < m; ++d) {
    for (TaskId v : plan.order[static_cast<size_t>(d)]) {
      if (v < 0 || v >= n) return makeError("plan orders an unknown operator index ", std::to_string(v));
      if (plan.device[static_cast<size_t>(v)] != d)
        return makeError("operator '", t.taskNames[static_cast<size_t>(v)], "' is ordered on '", t.deviceIds[static_cast<size_t>(d)],
                         "' but assigned elsewhere");
      if (++seen[static_cast<size_t>(v)] > 1) return makeError("operator '", t.taskNames[static_cast<size_t>(v)], "' is ordered twice");
    }
  }
  for (TaskId v = 0; v < n; ++v) {
    DeviceId d = plan.device[static_cast<size_t>(v)];
    if (d < 0 || d >= m) return makeError("operator '", t.taskNames[static_cast<size_t>(v)], "' has no device");
    if (!t.canRun(v, d))
      return makeError("operator '", t.taskNames[static_cast<size_t>(v)], "'",
                       t.taskTypes[static_cast<size_t>(v)].empty() ? "" : " (" + t.taskTypes[static_cast<size_t>(v)] + ")",
                       " cannot run on '", t.deviceIds[static_cast<size_t>(d)], "'");
    if (!seen[static_cast<size_t>(v)]) return makeError("operator '", t.taskNames[static_cast<size_t>(v)], "' is missing from its device's order");
  }
  return Status::ok();
}

}  // namespace partex
