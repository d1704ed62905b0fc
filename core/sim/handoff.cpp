#include "sim/handoff.h"

#include <algorithm>
#include <numeric>

namespace partex {

bool hasHandoffCosts(const CostTable& t) {
  auto positive = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return x > 0; });
  };
  return positive(t.deviceWakeUpUs) || positive(t.deviceModeSwitchUs);
}

std::vector<double> streamHandoffUs(const CostTable& t, const Plan& plan, const Timeline& single) {
  const int n = t.numTasks();
  const int m = t.numDevices();
  std::vector<double> delay(static_cast<size_t>(n), 0.0);
  if (!hasHandoffCosts(t) || plan.device.size() != static_cast<size_t>(n) ||
      single.tasks.size() != static_cast<size_t>(n) || t.exclusiveWith.size() != static_cast<size_t>(m))
    return delay;
  auto exclusive = [&](DeviceId x, DeviceId y) {
    const auto& ex = t.exclusiveWith[static_cast<size_t>(x)];
    return std::find(ex.begin(), ex.end(), y) != ex.end();
  };
  auto cost = [](const std::vector<double>& v, DeviceId d) {
    return d >= 0 && static_cast<size_t>(d) < v.size() ? v[static_cast<size_t>(d)] : 0.0;
  };

  // Wake-ups: an input from a device that runs at the same time (another CPU's lane).
  for (TaskId v = 0; v < n; ++v) {
    const DeviceId b = plan.device[static_cast<size_t>(v)];
    const double w = cost(t.deviceWakeUpUs, b);
    if (!(w > 0)) continue;
    for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) {
      const DeviceId a = plan.device[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].src)];
      if (a != b && a >= 0 && !exclusive(a, b)) {
        delay[static_cast<size_t>(v)] = w;
        break;
      }
    }
  }

  // Mode switches on each team's helper CPUs.
  if (t.deviceKinds.size() != static_cast<size_t>(m) || t.deviceCores.size() != static_cast<size_t>(m)) return delay;
  std::vector<char> used(static_cast<size_t>(m), 0);
  for (DeviceId d : plan.device)
    if (d >= 0 && d < m) used[static_cast<size_t>(d)] = 1;
  const std::vector<TaskId> topo = t.topoOrder();
  std::vector<int> topoPos(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < topo.size(); ++i) topoPos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  for (DeviceId team = 0; team < m; ++team) {
    const double s = cost(t.deviceModeSwitchUs, team);
    if (!(s > 0) || !used[static_cast<size_t>(team)] || t.deviceKinds[static_cast<size_t>(team)] != "cpu" ||
        t.deviceCores[static_cast<size_t>(team)] <= 1)
      continue;
    // The team's CPUs: its exclusive single-core CPU devices, grouped by exclusivity (modes of one CPU).
    std::vector<DeviceId> members;
    for (DeviceId d = 0; d < m; ++d)
      if (d != team && t.deviceKinds[static_cast<size_t>(d)] == "cpu" && t.deviceCores[static_cast<size_t>(d)] == 1 &&
          exclusive(team, d))
        members.push_back(d);
    std::vector<int> cpuOf(static_cast<size_t>(m), -1);
    int cpus = 0;
    for (DeviceId d : members) {
      for (DeviceId e : members)
        if (e < d && exclusive(d, e) && cpuOf[static_cast<size_t>(e)] >= 0) {
          cpuOf[static_cast<size_t>(d)] = cpuOf[static_cast<size_t>(e)];
          break;
        }
      if (cpuOf[static_cast<size_t>(d)] < 0) cpuOf[static_cast<size_t>(d)] = cpus++;
    }
    // CPU 0 (the first member's) leads the team; each other CPU's lane steps aside for it.
    for (int cpu = 1; cpu < cpus; ++cpu) {
      std::vector<TaskId> seq;
      for (TaskId v = 0; v < n; ++v) {
        const DeviceId d = plan.device[static_cast<size_t>(v)];
        if (d == team || (d >= 0 && cpuOf[static_cast<size_t>(d)] == cpu)) seq.push_back(v);
      }
      std::sort(seq.begin(), seq.end(), [&](TaskId a, TaskId b) {
        const double sa = single.tasks[static_cast<size_t>(a)].start, sb = single.tasks[static_cast<size_t>(b)].start;
        if (sa != sb) return sa < sb;
        return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)];
      });
      // The lane runs the sequence once per inference: its first operator follows the previous
      // inference's last one.
      for (size_t i = 0; i < seq.size() && seq.size() > 1; ++i) {
        const TaskId before = seq[i == 0 ? seq.size() - 1 : i - 1];
        const bool was = plan.device[static_cast<size_t>(before)] == team;
        const bool is = plan.device[static_cast<size_t>(seq[i])] == team;
        if (was != is) delay[static_cast<size_t>(seq[i])] = std::max(delay[static_cast<size_t>(seq[i])], s);
      }
    }
  }
  return delay;
}

}  // namespace partex
