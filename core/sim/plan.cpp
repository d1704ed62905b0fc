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
  if (auto st = checkBlocks(t, plan); !st) return st;
  return checkReplicas(t, plan);
}

int replicaCount(const Plan& plan) {
  return 1 + static_cast<int>(plan.replicas.size());
}

Plan replicaPlan(const Plan& plan, int r) {
  if (r <= 0 || static_cast<size_t>(r) > plan.replicas.size()) {
    Plan p = plan;
    p.replicas.clear();
    return p;
  }
  const std::vector<DeviceId>& map = plan.replicas[static_cast<size_t>(r - 1)];
  auto image = [&](DeviceId d) { return d >= 0 && static_cast<size_t>(d) < map.size() ? map[static_cast<size_t>(d)] : d; };
  Plan p;
  p.algorithm = plan.algorithm;
  p.optionsJson = plan.optionsJson;
  p.device.resize(plan.device.size());
  for (size_t v = 0; v < plan.device.size(); ++v) p.device[v] = image(plan.device[v]);
  p.order.assign(plan.order.size(), {});
  for (size_t d = 0; d < plan.order.size(); ++d) {
    if (plan.order[d].empty()) continue;
    const DeviceId to = image(static_cast<DeviceId>(d));
    if (to >= 0 && static_cast<size_t>(to) < p.order.size()) p.order[static_cast<size_t>(to)] = plan.order[d];
  }
  p.blocks = plan.blocks;
  for (PlanBlock& b : p.blocks) b.device = image(b.device);
  return p;
}

Status checkReplicas(const CostTable& t, const Plan& plan) {
  if (plan.replicas.empty()) return Status::ok();
  const int m = t.numDevices();
  if (replicaCount(plan) > kMaxReplicas)
    return makeError("the plan has ", std::to_string(replicaCount(plan)), " replicas, at most ", std::to_string(kMaxReplicas),
                     " are allowed");
  for (size_t k = 0; k < plan.replicas.size(); ++k) {
    const std::string which = "replicas[" + std::to_string(k) + "]";
    const auto& map = plan.replicas[k];
    if (static_cast<int>(map.size()) != m)
      return makeError(which, " renames ", std::to_string(map.size()), " devices, the platform has ", std::to_string(m));
    std::vector<DeviceId> from(static_cast<size_t>(m), -1);  // per image: the plan device renamed to it
    for (DeviceId d = 0; d < m; ++d) {
      const DeviceId to = map[static_cast<size_t>(d)];
      if (to < 0 || to >= m) return makeError(which, " renames '", t.deviceIds[static_cast<size_t>(d)], "' to an unknown device");
      if (plan.order[static_cast<size_t>(d)].empty()) continue;
      if (from[static_cast<size_t>(to)] >= 0)
        return makeError(which, " runs the operators of both '", t.deviceIds[static_cast<size_t>(from[static_cast<size_t>(to)])],
                         "' and '", t.deviceIds[static_cast<size_t>(d)], "' on '", t.deviceIds[static_cast<size_t>(to)],
                         "' (each device of the plan needs a device of its own)");
      from[static_cast<size_t>(to)] = d;
    }
    if (auto st = checkPlanShape(t, replicaPlan(plan, static_cast<int>(k) + 1)); !st) return makeError(which, ": ", st.message());
  }
  return Status::ok();
}

namespace {

/// Why block b of the plan is not valid, or "" (see checkBlocks). `inBlock` marks the tasks of the
/// blocks before it (and is updated); `pos` is each task's index in its device's order.
std::string blockProblem(const CostTable& t, const Plan& plan, size_t b, std::vector<int32_t>& inBlock, const std::vector<int32_t>& pos,
                         const std::vector<int32_t>& topoPos) {
  const PlanBlock& blk = plan.blocks[b];
  const int n = t.numTasks(), m = t.numDevices();
  const std::string which = "block " + std::to_string(b + 1);
  if (blk.tasks.empty()) return which + " has no operators";
  if (blk.device < 0 || blk.device >= m) return which + " is on an unknown device";
  const auto di = static_cast<size_t>(blk.device);
  const std::string& dev = t.deviceIds[di];
  if (di >= t.deviceCompilesBlocks.size() || !t.deviceCompilesBlocks[di]) return which + ": device '" + dev + "' compiles no blocks";
  const int cores = di < t.deviceCores.size() ? std::max(1, t.deviceCores[di]) : 1;
  if (blk.cores < 0 || blk.cores > cores)
    return which + " uses " + std::to_string(blk.cores) + " cores, '" + dev + "' has " + std::to_string(cores);
  for (size_t i = 0; i < blk.tasks.size(); ++i) {
    const TaskId v = blk.tasks[i];
    if (v < 0 || v >= n) return which + " names an unknown operator index " + std::to_string(v);
    const auto vi = static_cast<size_t>(v);
    if (plan.device[vi] != blk.device) return which + ": operator '" + t.taskNames[vi] + "' is not on '" + dev + "'";
    if (inBlock[vi] >= 0) return which + ": operator '" + t.taskNames[vi] + "' is already in block " + std::to_string(inBlock[vi] + 1);
    if (i > 0 && pos[vi] != pos[static_cast<size_t>(blk.tasks[i - 1])] + 1)
      return which + ": operator '" + t.taskNames[vi] + "' does not follow '" + t.taskNames[static_cast<size_t>(blk.tasks[i - 1])] +
             "' in the order of '" + dev + "'";
  }
  for (TaskId v : blk.tasks) inBlock[static_cast<size_t>(v)] = static_cast<int32_t>(b);
  // Convex: no member reaches another through a task outside the block. Search forward from the
  // members' outside successors, only through tasks that come before the last member topologically.
  int32_t last = -1;
  for (TaskId v : blk.tasks) last = std::max(last, topoPos[static_cast<size_t>(v)]);
  std::vector<TaskId> stack;
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (TaskId v : blk.tasks)
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
      if (inBlock[static_cast<size_t>(s)] != static_cast<int32_t>(b) && !seen[static_cast<size_t>(s)]) {
        seen[static_cast<size_t>(s)] = 1;
        stack.push_back(s);
      }
    }
  while (!stack.empty()) {
    const TaskId u = stack.back();
    stack.pop_back();
    if (topoPos[static_cast<size_t>(u)] > last) continue;
    for (int32_t ei : t.outEdges[static_cast<size_t>(u)]) {
      const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
      if (inBlock[static_cast<size_t>(s)] == static_cast<int32_t>(b))
        return which + " is not convex: a path leaves it at '" + t.taskNames[static_cast<size_t>(u)] + "' and comes back to '" +
               t.taskNames[static_cast<size_t>(s)] + "'";
      if (!seen[static_cast<size_t>(s)]) {
        seen[static_cast<size_t>(s)] = 1;
        stack.push_back(s);
      }
    }
  }
  return {};
}

struct BlockIndex {
  std::vector<int32_t> pos, topoPos;
};

BlockIndex indexPlan(const CostTable& t, const Plan& plan) {
  BlockIndex x;
  x.pos.assign(static_cast<size_t>(t.numTasks()), -1);
  for (const auto& ord : plan.order)
    for (size_t i = 0; i < ord.size(); ++i) x.pos[static_cast<size_t>(ord[i])] = static_cast<int32_t>(i);
  x.topoPos.assign(static_cast<size_t>(t.numTasks()), 0);
  const std::vector<TaskId> topo = t.topoOrder();
  for (size_t i = 0; i < topo.size(); ++i) x.topoPos[static_cast<size_t>(topo[i])] = static_cast<int32_t>(i);
  return x;
}

}  // namespace

Status checkBlocks(const CostTable& t, const Plan& plan) {
  if (plan.blocks.empty()) return Status::ok();
  const BlockIndex x = indexPlan(t, plan);
  std::vector<int32_t> inBlock(static_cast<size_t>(t.numTasks()), -1);
  for (size_t b = 0; b < plan.blocks.size(); ++b)
    if (std::string why = blockProblem(t, plan, b, inBlock, x.pos, x.topoPos); !why.empty()) return makeError(why);
  return Status::ok();
}

int dropBrokenBlocks(const CostTable& t, Plan& plan) {
  if (plan.blocks.empty()) return 0;
  const BlockIndex x = indexPlan(t, plan);
  std::vector<int32_t> inBlock(static_cast<size_t>(t.numTasks()), -1);
  std::vector<PlanBlock> kept;
  int dropped = 0;
  for (size_t b = 0; b < plan.blocks.size(); ++b) {
    std::vector<int32_t> trial = inBlock;
    // Judged against the blocks kept so far.
    if (blockProblem(t, plan, b, trial, x.pos, x.topoPos).empty()) {
      inBlock = std::move(trial);
      kept.push_back(plan.blocks[b]);
    } else {
      ++dropped;
    }
  }
  plan.blocks = std::move(kept);
  return dropped;
}

std::vector<double> blockDurations(const CostTable& t, const Plan& plan) {
  if (plan.blocks.empty()) return {};
  std::vector<double> dur(static_cast<size_t>(t.numTasks()), -1.0);
  for (const PlanBlock& b : plan.blocks) {
    const double total = blockTimeUs(t, b.tasks, b.device, b.cores);
    double sum = 0;
    for (TaskId v : b.tasks) sum += t.wIn(v, b.device, plan.device);
    for (TaskId v : b.tasks)
      dur[static_cast<size_t>(v)] = sum > 0 ? total * t.wIn(v, b.device, plan.device) / sum : total / static_cast<double>(b.tasks.size());
  }
  return dur;
}

}  // namespace partex
