// The rules every scheduler runs under (scheduler.h): one place for the checks before and after an
// algorithm's own step.
#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "sched/listsched.h"
#include "sim/memory.h"

namespace partex {

bool respectsConstraints(const CostTable& t, const Constraints& c, const Plan& p) {
  if (static_cast<int>(p.device.size()) != t.numTasks()) return false;
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (!c.allowed(t, v, p.device[static_cast<size_t>(v)])) return false;
  // Every replica (sim/plan.h) runs whole inferences: pins and forbidden devices hold for each.
  for (const auto& map : p.replicas)
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      const DeviceId d = p.device[static_cast<size_t>(v)];
      const DeviceId to = d >= 0 && static_cast<size_t>(d) < map.size() ? map[static_cast<size_t>(d)] : d;
      if (!c.allowed(t, v, to)) return false;
    }
  return true;
}

namespace {

/// True when every device's weights under `device` fit its capacity.
bool weightsFit(const CostTable& t, const std::vector<DeviceId>& device) {
  WeightLoad load(t);
  load.reset(device);
  return load.fitsAll();
}

/// Per task, the devices `c` allows it (the repair's targets).
std::vector<std::vector<DeviceId>> allowedPerTask(const CostTable& t, const Constraints& c) {
  std::vector<std::vector<DeviceId>> allowed(static_cast<size_t>(t.numTasks()));
  for (TaskId v = 0; v < t.numTasks(); ++v) allowed[static_cast<size_t>(v)] = sched_detail::allowedDevices(t, c, v);
  return allowed;
}

/// The note of a repair that moved operators.
std::string movedNote(int moved) {
  return "capacity: " + std::to_string(moved) + " operators moved off devices without room for them";
}

/// A plan within capacity found by fitByPenalty, with the note that says how.
struct PenalisedPlan {
  Plan plan;
  std::string note;
};

/// Capacity carried into a cost-minimising search as a Lagrangian penalty (Scheduler::capacityByPenalty):
/// on a copy of `t`, the cost of v on a capped device d grows by mu * W * bytes(v) / capacity(d), W the
/// model's work on its fastest devices, so filling d to its capacity costs mu times the whole model's
/// work. The multiplier starts small (1/64) and doubles until the plan's weights fit (at most 12
/// runs), then five bisection steps look for a smaller one that still fits, all within the caller's
/// deadline; the plan within capacity that simulates fastest is kept.
/// Returns the plan or nothing (no fitting plan found in time: the generic repair decides).
template <class Run>
std::optional<PenalisedPlan> fitByPenalty(const Run& run, const CostTable& t, const Constraints& c,
                                          const std::vector<std::vector<DeviceId>>& allowed, const SchedOptions& o,
                                          const Deadline& whole) {
  std::vector<int64_t> bytes(static_cast<size_t>(t.numTasks()), 0);
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (!t.taskWeights.empty())
      for (int32_t wi : t.taskWeights[static_cast<size_t>(v)]) bytes[static_cast<size_t>(v)] += t.weightBytes[static_cast<size_t>(wi)];
  double work = 0;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    double b = kInf;
    for (DeviceId d = 0; d < t.numDevices(); ++d) b = std::min(b, t.w(v, d));
    if (std::isfinite(b)) work += b;
  }
  if (work <= 0) work = 1;
  std::optional<Plan> best;
  double bestMs = kInf, bestMu = 0;
  int runs = 0;
  // One penalised run: true when its plan's weights fit (the plan is kept when it is the fastest).
  auto attempt = [&](double mu) {
    ++runs;
    CostTable tp = t;
    for (TaskId v = 0; v < t.numTasks(); ++v)
      for (DeviceId d = 0; d < t.numDevices(); ++d) {
        const int64_t cap = t.memCapacity[static_cast<size_t>(d)];
        double& w = tp.cost[static_cast<size_t>(v) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(d)];
        if (cap > 0 && std::isfinite(w)) w += mu * work * static_cast<double>(bytes[static_cast<size_t>(v)]) / static_cast<double>(cap);
      }
    SchedOptions so = o;
    so.deadline = whole;
    so.timeLimitSec = std::max(1e-3, whole.leftSec());
    SchedInfo ignored;
    auto p = run(tp, so, &ignored);
    if (!p || !checkPlanShape(t, *p) || !respectsConstraints(t, c, *p) || !weightsFit(t, p->device)) return false;
    auto tl = simulate(t, *p, o.sim);
    if (!tl) return true;
    if (!checkCapacity(t, *p, &*tl)) {
      // The weights fit, the activations not: the repair's activation step, then judged like the rest.
      if (!fitCapacity(t, allowed, *p, o.sim)) return true;
      tl = simulate(t, *p, o.sim);
      if (!tl || !checkCapacity(t, *p, &*tl)) return true;
    }
    if (tl->makespan < bestMs) {
      bestMs = tl->makespan;
      bestMu = mu;
      best = std::move(p).value();
    }
    return true;
  };
  // Doubling until the weights fit, then bisection between the last multiplier that did not fit and
  // the first that did: the smallest penalty that fits moves the fewest operators off their best device.
  double lo = 0, hi = 0;
  for (double mu = 1.0 / 64; runs < 12; mu *= 2) {
    if (whole.passed() || o.cancelled()) break;
    if (attempt(mu)) {
      hi = mu;
      break;
    }
    lo = mu;
  }
  for (int i = 0; i < 5 && hi > 0; ++i) {
    if (whole.passed() || o.cancelled()) break;
    const double mid = lo > 0 ? std::sqrt(lo * hi) : hi / 2;
    if (attempt(mid))
      hi = mid;
    else
      lo = mid;
  }
  if (!best) return std::nullopt;
  char buf[200];
  std::snprintf(buf, sizeof buf, "capacity: carried as a penalty on the DP's costs (multiplier %.4g, best of %d runs)", bestMu, runs);
  return PenalisedPlan{std::move(*best), buf};
}

}  // namespace

Result<Plan> Scheduler::schedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                                 SchedInfo* info) const {
  if (o.cancelled()) return sched_detail::cancelledError();
  if (auto st = sched_detail::checkConstraints(t, c); !st) return Error{st.message()};
  if (o.deadline.passed()) return makeError(name(), ": the time limit had passed before it started");
  const Deadline whole = o.startDeadline(10.0);
  SchedInfo local;
  auto plan = run(t, c, o, info ? info : &local);
  if (!plan) return plan;
  SchedInfo& in = info ? *info : local;
  const bool capped = hasCapacityLimits(t);
  const std::vector<std::vector<DeviceId>> allowed = capped ? allowedPerTask(t, c) : std::vector<std::vector<DeviceId>>{};
  if (capacityByPenalty() && capped && !weightsFit(t, plan->device) && !o.cancelled()) {
    // The DP's own plan does not fit: carry capacity into its objective. The penalised plan replaces
    // it when one fits; otherwise the repair below moves operators.
    auto rerun = [&](const CostTable& tp, const SchedOptions& so, SchedInfo* i) { return run(tp, c, so, i); };
    if (auto fitted = fitByPenalty(rerun, t, c, allowed, o, whole)) {
      // The better of the penalised plan and the DP's own plan repaired (both within capacity).
      Plan repaired = *plan;
      auto moved = fitCapacity(t, allowed, repaired, o.sim);
      auto tlr = moved ? simulate(t, repaired, o.sim) : Result<Timeline>(Error{"no repair"});
      auto tlf = simulate(t, fitted->plan, o.sim);
      const bool repairFits = tlr && checkCapacity(t, repaired, &*tlr);
      if (tlf && (!repairFits || tlf->makespan <= tlr->makespan)) {
        plan = std::move(fitted->plan);
        in.notes.push_back(std::move(fitted->note));
      } else if (repairFits) {
        // The repaired plan is kept as repaired: the repair below finds nothing left to move.
        plan = std::move(repaired);
        in.notes.push_back("capacity: the DP's own plan, repaired, beat the penalised one");
        if (*moved > 0)
          in.notes.push_back(movedNote(*moved));
      }
      in.optimal = false;
    }
  }
  if (o.cancelled()) return sched_detail::cancelledError();
  if (auto st = checkPlanShape(t, *plan); !st) return makeError(name(), " made an invalid plan: ", st.message());
  if (!respectsConstraints(t, c, *plan))
    return makeError(name(),
                     " made a plan that breaks the constraints (a pinned task elsewhere or a forbidden device used)");
  if (capped) {
    // Capacity is a hard constraint of every plan. Weights first: algorithms that do not place under
    // capacity themselves get the generic repair (operators off full devices, memory.h); then the
    // whole memory model on the plan's timeline, activations over time included (fitCapacity), and
    // the check once more, whatever the repair did.
    // A plan with replicas (sim/plan.h) is repaired as replica 0 alone: where the repair moves operators,
    // the other replicas no longer mirror it and are dropped.
    std::vector<std::vector<DeviceId>> replicas = std::move(plan->replicas);
    plan->replicas.clear();
    auto moved = fitCapacity(t, allowed, *plan, o.sim);
    if (!moved) return makeError(name(), ": ", moved.message());
    if (*moved > 0) {
      in.notes.push_back(movedNote(*moved));
      in.optimal = false;  // the repair leaves the algorithm's own search space
      if (!replicas.empty()) in.notes.push_back("capacity: the repaired plan runs without its replicas");
    } else {
      plan->replicas = std::move(replicas);
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
