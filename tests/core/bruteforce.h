#pragma once
// Exhaustive search over the simulator's plan space for tiny graphs: the yardstick of the exact solver
// (tst_sched_exact) and of exact under capacity (tst_memory).
#include <functional>
#include <vector>

#include "cost/costtable.h"
#include "sched/scheduler.h"
#include "sim/memory.h"
#include "sim/plan.h"
#include "sim/simulator.h"

namespace partex::test {

/// Minimum over all assignments x all per-device orders consistent with a topological order (the
/// simulator's plan space); with `withinCapacity`, over the plans within capacity only (checkCapacity on
/// their timeline). kInf when no plan qualifies.
inline double bruteForce(const CostTable& t, const Constraints& c, const SimOptions& so, bool withinCapacity = false) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<std::vector<DeviceId>> allowed(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v)
    for (DeviceId d = 0; d < m; ++d)
      if (c.allowed(t, v, d)) allowed[static_cast<size_t>(v)].push_back(d);
  // Linear extensions.
  std::vector<std::vector<TaskId>> exts;
  std::vector<TaskId> cur;
  std::vector<int> indeg(static_cast<size_t>(n), 0);
  for (const auto& e : t.edges) ++indeg[static_cast<size_t>(e.dst)];
  std::vector<char> used(static_cast<size_t>(n), 0);
  std::function<void()> rec = [&] {
    if (static_cast<int>(cur.size()) == n) {
      exts.push_back(cur);
      return;
    }
    for (TaskId v = 0; v < n; ++v) {
      if (used[static_cast<size_t>(v)] || indeg[static_cast<size_t>(v)] > 0) continue;
      used[static_cast<size_t>(v)] = 1;
      for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) --indeg[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].dst)];
      cur.push_back(v);
      rec();
      cur.pop_back();
      for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) ++indeg[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].dst)];
      used[static_cast<size_t>(v)] = 0;
    }
  };
  rec();
  Simulator sim(t, so);
  double best = kInf;
  std::vector<size_t> choice(static_cast<size_t>(n), 0);
  Plan p;
  p.device.assign(static_cast<size_t>(n), 0);
  while (true) {
    for (TaskId v = 0; v < n; ++v) p.device[static_cast<size_t>(v)] = allowed[static_cast<size_t>(v)][choice[static_cast<size_t>(v)]];
    for (const auto& ext : exts) {
      p.order.assign(static_cast<size_t>(m), {});
      for (TaskId v : ext) p.order[static_cast<size_t>(p.device[static_cast<size_t>(v)])].push_back(v);
      if (withinCapacity) {
        auto tl = simulate(t, p, so);
        if (tl && checkCapacity(t, p, &*tl) && tl->makespan < best) best = tl->makespan;
        continue;
      }
      auto ms = sim.makespan(p);
      if (ms && *ms < best) best = *ms;
    }
    int k = 0;
    while (k < n) {
      if (++choice[static_cast<size_t>(k)] < allowed[static_cast<size_t>(k)].size()) break;
      choice[static_cast<size_t>(k)] = 0;
      ++k;
    }
    if (k == n) break;
  }
  return best;
}

}  // namespace partex::test
