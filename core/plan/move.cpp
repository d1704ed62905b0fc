#include "plan/move.h"

#include <algorithm>
#include <string>

#include "sim/memory.h"

namespace partex {

namespace {

/// "'conv1' (Conv)", or "'conv1'" for task graphs (no op types).
std::string opLabel(const CostTable& t, TaskId v) {
  std::string s = "'" + t.taskNames[static_cast<size_t>(v)] + "'";
  if (static_cast<size_t>(v) < t.taskTypes.size() && !t.taskTypes[static_cast<size_t>(v)].empty())
    s += " (" + t.taskTypes[static_cast<size_t>(v)] + ")";
  return s;
}

Status checkDevice(const CostTable& t, DeviceId d, const PlacementContext& ctx) {
  if (d >= 0 && d < t.numDevices()) return {};
  if (ctx.platform)
    return makeError("no device ", std::to_string(d + 1), " on ", ctx.platform->name, " (it has ",
                     std::to_string(t.numDevices()), ")");
  return makeError("no device ", std::to_string(d + 1), " (there are ", std::to_string(t.numDevices()), ")");
}

}  // namespace

Status checkPlacement(const CostTable& t, TaskId v, DeviceId d, const PlacementContext& ctx) {
  if (auto st = checkDevice(t, d, ctx); !st) return st;
  if (v < 0 || v >= t.numTasks()) return makeError("no operator with index ", std::to_string(v));
  if (ctx.pinned) {
    auto pin = ctx.pinned->find(v);
    if (pin != ctx.pinned->end() && pin->second != d)
      return makeError(opLabel(t, v), " is pinned to '", t.deviceIds[static_cast<size_t>(pin->second)],
                       "': unpin it first");
  }
  if (t.canRun(v, d)) return {};
  const std::string& dev = t.deviceIds[static_cast<size_t>(d)];
  if (ctx.graph && ctx.platform && static_cast<size_t>(v) < ctx.graph->nodes.size()) {
    const DeviceId pd = ctx.platform->findDevice(dev);
    std::string reason;
    if (pd >= 0 &&
        !deviceSupports(ctx.platform->devices[static_cast<size_t>(pd)], *ctx.graph, static_cast<OpId>(v), &reason))
      return makeError("'", dev, "' cannot run ", opLabel(t, v), ": ", reason);
  }
  return makeError("'", dev, "' cannot run ", opLabel(t, v), ": it has no cost for it");
}

Status checkMove(const CostTable& t, const std::vector<TaskId>& ops, DeviceId d, const PlacementContext& ctx) {
  if (auto st = checkDevice(t, d, ctx); !st) return st;
  if (ops.empty()) return makeError("no operator selected");
  for (TaskId v : ops)
    if (auto st = checkPlacement(t, v, d, ctx); !st) return st;
  if (ctx.placement && ctx.placement->size() == static_cast<size_t>(t.numTasks())) {
    WeightLoad load(t);
    if (load.active() && load.capacity(d) > 0) {
      load.reset(*ctx.placement);
      const int64_t before = load.bytes(d);
      for (TaskId v : ops)
        if ((*ctx.placement)[static_cast<size_t>(v)] != d) load.move(v, (*ctx.placement)[static_cast<size_t>(v)], d);
      if (load.bytes(d) > before && !load.fits(d))
        return makeError("'", t.deviceIds[static_cast<size_t>(d)], "' has no memory for ",
                         ops.size() == 1 ? opLabel(t, ops.front()) : std::to_string(ops.size()) + " operators", ": it would need ",
                         formatBytes(load.bytes(d)), " for weights, ", formatBytes(load.capacity(d)), " available");
    }
  }
  return {};
}

Result<MoveResult> applyMove(Simulator& sim, const CostTable& t, const Plan& plan, const Timeline& current,
                             const std::vector<TaskId>& ops, DeviceId device, const PlacementContext& ctx) {
  PlacementContext withPlacement = ctx;
  if (!withPlacement.placement) withPlacement.placement = &plan.device;
  if (auto st = checkMove(t, ops, device, withPlacement); !st) return Error{st.message()};
  const size_t n = static_cast<size_t>(t.numTasks());
  if (plan.device.size() != n || current.tasks.size() != n)
    return makeError("the plan does not fit the cost table (", std::to_string(plan.device.size()),
                     " operators, the table has ", std::to_string(n), ")");
  MoveResult out;
  for (TaskId v : ops)
    if (plan.device[static_cast<size_t>(v)] != device &&
        std::find(out.moved.begin(), out.moved.end(), v) == out.moved.end())
      out.moved.push_back(v);
  if (out.moved.empty()) {
    out.plan = plan;
    out.timeline = current;
    return out;
  }
  out.plan = plan;
  std::vector<double> start(n);
  for (size_t v = 0; v < n; ++v) start[v] = current.tasks[v].start;
  auto tl = sim.move(out.plan, out.moved, device, start);
  if (!tl) return Error{tl.message()};
  if (device >= 0 && hasCapacityLimits(t)) {
    const std::vector<DeviceMemory> mem = deviceMemory(t, out.plan, *tl);
    const DeviceMemory& dm = mem[static_cast<size_t>(device)];
    if (dm.over)
      return makeError("'", t.deviceIds[static_cast<size_t>(device)], "' has no memory for the move: it would need ", formatBytes(dm.peak),
                       " at its peak (weights ", formatBytes(dm.weights), "), ", formatBytes(dm.capacity), " available");
  }
  out.timeline = std::move(tl).value();
  return out;
}

}  // namespace partex
