#pragma once
/// \file Helpers shared by the GUI tests that drive a Session: comparing timelines and finding a
/// move that matters.

#include "session/session.h"
#include "sim/simulator.h"

namespace partex::test {

/// Same device, start and end for every task, and the same makespan.
inline bool sameTimes(const Timeline& a, const Timeline& b) {
  if (a.tasks.size() != b.tasks.size() || a.makespan != b.makespan) return false;
  for (size_t i = 0; i < a.tasks.size(); ++i)
    if (a.tasks[i].device != b.tasks[i].device || a.tasks[i].start != b.tasks[i].start || a.tasks[i].end != b.tasks[i].end)
      return false;
  return true;
}

/// An operator and a device (other than its own) that can run it and that changes the makespan.
inline bool findEffectiveMove(gui::Session& s, int* op, int* device) {
  for (int v = 0; v < s.numOps(); ++v)
    for (int d = 0; d < s.numDevices(); ++d) {
      if (d == s.deviceOf(v) || !s.canMove({v}, d)) continue;
      auto tl = s.previewMove({v}, d);
      if (tl && tl->makespan != s.timeline().makespan) {
        *op = v;
        *device = d;
        return true;
      }
    }
  return false;
}

}  // namespace partex::test
