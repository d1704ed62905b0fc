#include <algorithm>

#include "sched/scheduler.h"

namespace partex {

bool Constraints::allowed(const CostTable& t, TaskId v, DeviceId d) const {
  if (v < 0 || v >= t.numTasks() || d < 0 || d >= t.numDevices()) return false;
  if (!t.canRun(v, d)) return false;
  if (std::find(forbidden.begin(), forbidden.end(), d) != forbidden.end()) return false;
  auto it = pinned.find(v);
  return it == pinned.end() || it->second == d;
}

DeviceId Constraints::fallback(const CostTable& t, TaskId v) const {
  if (auto it = pinned.find(v); it != pinned.end()) return it->second;
  DeviceId best = -1;
  for (DeviceId e = 0; e < t.numDevices(); ++e)
    if (allowed(t, v, e) && (best < 0 || t.w(v, e) < t.w(v, best))) best = e;
  return best;
}

}  // namespace partex
