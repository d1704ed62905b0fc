#include "plan/move.h"

#include <algorithm>
#include <string>

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
  return {};
}

Result<MoveResult> applyMove(Simulator& sim, const CostTable& t, const Plan& plan, const Timeline& current,
                             const std::vector<TaskId>& ops, DeviceId device, const PlacementContext& ctx) {
  if (auto st = checkMove(t, ops, device, ctx); !st) return Error{st.message()};
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
  std::vector<int> topoPos(n, 0);
  const auto topo = t.topoOrder();
  for (size_t i = 0; i < topo.size(); ++i) topoPos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  auto before = [&](TaskId a, TaskId b) {
    const double sa = current.tasks[static_cast<size_t>(a)].start, sb = current.tasks[static_cast<size_t>(b)].start;
    if (sa != sb) return sa < sb;
    return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)];
  };
  out.plan = plan;
  Plan& p = out.plan;
  std::vector<TaskId> moving = out.moved;
  std::sort(moving.begin(), moving.end(), before);
  std::vector<char> isMoving(n, 0);
  for (TaskId v : moving) isMoving[static_cast<size_t>(v)] = 1;
  for (auto& order : p.order)
    order.erase(
        std::remove_if(order.begin(), order.end(), [&](TaskId x) { return isMoving[static_cast<size_t>(x)] != 0; }),
        order.end());
  if (p.order.size() < static_cast<size_t>(t.numDevices())) p.order.resize(static_cast<size_t>(t.numDevices()));
  auto& to = p.order[static_cast<size_t>(device)];
  for (TaskId v : moving) {
    p.device[static_cast<size_t>(v)] = device;
    to.insert(std::find_if(to.begin(), to.end(), [&](TaskId x) { return before(v, x); }), v);
  }
  p.algorithm = "manual";
  auto tl = sim.run(p);
  if (!tl) {
    // Ties between zero-length operators can still order a consumer first: fall back to rank order.
    orderByUpwardRank(t, p);
    tl = sim.run(p);
  }
  if (!tl) return Error{tl.message()};
  out.timeline = std::move(tl).value();
  return out;
}

}  // namespace partex
