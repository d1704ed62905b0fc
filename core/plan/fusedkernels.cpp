#include "plan/fusedkernels.h"

#include <algorithm>
#include <map>

#include "ir/fusion.h"

namespace partex {

bool deviceFuses(const CostTable& t, DeviceId d) {
  if (t.fusedGroups.empty() || d < 0 || d >= t.numDevices()) return false;
  return static_cast<size_t>(d) < t.deviceKinds.size() && t.deviceKinds[static_cast<size_t>(d)] == "cpu";
}

std::vector<FusedKernel> fusedKernels(const Graph& g, const CostTable& t, const std::vector<DeviceId>& placement,
                                      const Timeline* tl) {
  std::vector<FusedKernel> out;
  const size_t n = static_cast<size_t>(t.numTasks());
  if (t.fusedGroups.empty() || g.nodes.size() != n || placement.size() != n) return out;
  if (t.fusedGroupOf.size() != n) return out;
  bool anyFuses = false;
  for (DeviceId d : placement) {
    if (d < 0 || d >= t.numDevices()) return out;  // incomplete placement: nothing to say
    anyFuses = anyFuses || deviceFuses(t, d);
  }
  if (!anyFuses) return out;
  const bool timed = tl && tl->tasks.size() == n;
  for (const FusedGroup& grp : fusedGroups(g, std::vector<int>(placement.begin(), placement.end()))) {
    if (grp.ops.size() < 2) continue;
    const DeviceId d = placement[static_cast<size_t>(grp.ops.front())];
    if (!deviceFuses(t, d)) continue;
    // The runtime fused these operators while profiling: all of them are in one recorded kernel.
    const int32_t known = t.fusedGroupOf[static_cast<size_t>(grp.ops.front())];
    if (known < 0) continue;
    bool same = true;
    for (OpId op : grp.ops) same = same && t.fusedGroupOf[static_cast<size_t>(op)] == known;
    if (!same) continue;
    FusedKernel k;
    k.device = d;
    k.ops.assign(grp.ops.begin(), grp.ops.end());
    if (timed) {
      k.startUs = tl->tasks[static_cast<size_t>(k.ops.front())].start;
      k.endUs = tl->tasks[static_cast<size_t>(k.ops.front())].end;
      for (TaskId v : k.ops) {
        k.startUs = std::min(k.startUs, tl->tasks[static_cast<size_t>(v)].start);
        k.endUs = std::max(k.endUs, tl->tasks[static_cast<size_t>(v)].end);
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<FusedKernel> fusedKernels(const Graph& g, const CostTable& t, const Timeline& tl) {
  std::vector<DeviceId> placement;
  placement.reserve(tl.tasks.size());
  for (const auto& s : tl.tasks) placement.push_back(s.device);
  return fusedKernels(g, t, placement, &tl);
}

std::vector<FusedKernel> kernelsFromFusedInto(const std::vector<TaskId>& fusedInto,
                                              const std::vector<DeviceId>& placement) {
  std::map<TaskId, std::vector<TaskId>> byLast;
  for (size_t v = 0; v < fusedInto.size(); ++v) {
    const TaskId last = fusedInto[v];
    if (last < 0 || static_cast<size_t>(last) >= fusedInto.size()) continue;
    byLast[last].push_back(static_cast<TaskId>(v));
  }
  std::vector<FusedKernel> out;
  for (auto& [last, ops] : byLast) {
    if (ops.size() < 2) continue;
    FusedKernel k;
    k.device = static_cast<size_t>(last) < placement.size() ? placement[static_cast<size_t>(last)] : 0;
    k.ops = std::move(ops);
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(),
            [](const FusedKernel& a, const FusedKernel& b) { return a.ops.front() < b.ops.front(); });
  return out;
}

std::vector<int> kernelOfTasks(int numTasks, const std::vector<FusedKernel>& kernels) {
  std::vector<int> of(static_cast<size_t>(std::max(0, numTasks)), -1);
  for (size_t i = 0; i < kernels.size(); ++i)
    for (TaskId v : kernels[i].ops)
      if (v >= 0 && v < numTasks) of[static_cast<size_t>(v)] = static_cast<int>(i);
  return of;
}

std::string kernelOpsText(const CostTable& t, const FusedKernel& k) {
  std::string s;
  for (TaskId v : k.ops) {
    if (!s.empty()) s += " + ";
    s += v >= 0 && v < t.numTasks() ? t.taskNames[static_cast<size_t>(v)] : std::string("?");
  }
  return s;
}

}  // namespace partex
