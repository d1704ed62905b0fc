// The rules every scheduler runs under (scheduler.h): one place for the checks before and after an
// algorithm's own step.
#include "sched/scheduler.h"

#include <algorithm>

#include "sched/listsched.h"
#include "sim/memory.h"

namespace partex {

bool respectsConstraints(const CostTable& t, const Constraints& c, const Plan& p) {
  if (static_cast<int>(p.device.size()) != t.numTasks()) return false;
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (!c.allowed(t, v, p.device[static_cast<size_t>(v)])) return false;
  return true;
}

Result<Plan> Scheduler::schedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                                 SchedInfo* info) const {
  if (o.cancelled()) return sched_detail::cancelledError();
  if (auto st = sched_detail::checkConstraints(t, c); !st) return Error{st.message()};
  if (o.deadline.passed()) return makeError(name(), ": the time limit had passed before it started");
  SchedInfo local;
  auto plan = run(t, c, o, info ? info : &local);
  if (!plan) return plan;
  if (o.cancelled()) return sched_detail::cancelledError();
  if (auto st = checkPlanShape(t, *plan); !st) return makeError(name(), " made an invalid plan: ", st.message());
  if (!respectsConstraints(t, c, *plan))
    return makeError(name(),
                     " made a plan that breaks the constraints (a pinned task elsewhere or a forbidden device used)");
  if (hasCapacityLimits(t)) {
    // Capacity is a hard constraint of every plan. Weights first: algorithms that do not place under
    // capacity themselves get the generic repair (operators off full devices, memory.h); then the
    // whole memory model on the plan's timeline, activations over time included (fitCapacity), and
    // the check once more, whatever the repair did.
    std::vector<std::vector<DeviceId>> allowed(static_cast<size_t>(t.numTasks()));
    for (TaskId v = 0; v < t.numTasks(); ++v) allowed[static_cast<size_t>(v)] = sched_detail::allowedDevices(t, c, v);
    auto moved = fitCapacity(t, allowed, *plan, o.sim);
    if (!moved) return makeError(name(), ": ", moved.message());
    if (*moved > 0) {
      SchedInfo& in = info ? *info : local;
      in.notes.push_back("capacity: " + std::to_string(*moved) + " operators moved off devices without room for them");
      in.optimal = false;  // the repair leaves the algorithm's own search space
    }
    auto tl = simulate(t, *plan, o.sim);
    if (!tl) return makeError(name(), " made an invalid plan: ", tl.message());
    if (auto st = checkCapacity(t, *plan, &*tl); !st) return makeError(name(), ": ", st.message());
  }
  plan->algorithm = name();
  plan->optionsJson = sched_detail::paramsJson(o);
  // The exact searches prove optimality over plans that run operator by operator; where a device
  // compiles blocks, a plan with blocks may still be faster: no such claim then.
  if (info && info->optimal && !t.blockFloor.empty()) {
    info->optimal = false;
    info->bound = std::min(info->bound, lowerBound(t, c));
    info->notes.push_back("optimal among plans without compiled blocks");
  }
  return plan;
}

}  // namespace partex
