#include "sim/simulator.h"

#include "sim/simrules.h"

#include <algorithm>

#include "sim/memory.h"

namespace partex {


struct Simulator::Scratch {
  Scratch(const CostTable& t, const SimOptions& o) : rules(t, o), runner(rules) {}
  SimRules rules;
  PlanRunner runner;
  std::vector<double> lastStart;  // start times of the last successful run, for move()
  std::vector<int> topoPos;
};

namespace {

/// Writes the run into a Timeline.
struct TimelineRecorder {
  static constexpr bool kRecords = true;
  Timeline& tl;
  void task(TaskId v, DeviceId d, double start, double dur, const ReadyTime&) {
    tl.tasks[static_cast<size_t>(v)] = TaskSlot{d, start, start + dur};
    tl.busy[static_cast<size_t>(d)] += dur;
  }
  void transfer(const BookedTransfer& x) {
    tl.transfers.push_back(TransferSlot{x.src, x.dst, x.from, x.to, x.link, x.start, x.end, x.bytes});
    if (x.kind != TransferKind::Edge) tl.bytesMoved += x.bytes;  // fixed-time messages carry no tensor
  }
};

}  // namespace

/// Peak live bytes per device (see simulator.h).
void fillPeakBytes(const CostTable& t, Timeline& tl) {
  const int n = t.numTasks(), m = t.numDevices();
  const double makespan = tl.makespan;
  tl.peakBytes.assign(static_cast<size_t>(m), 0);
  tl.overCapacity.assign(static_cast<size_t>(m), false);
  // Peak live bytes per device: a result lives on its device from its start until its last use
  // there (a consumer's end or an outgoing transfer's end); a copy lives on the receiving device
  // from the transfer's start until its last consumer there ends.
  std::vector<std::vector<std::pair<double, int64_t>>> events(static_cast<size_t>(m));
  std::vector<double> lastUseOnOwn(static_cast<size_t>(n), -1.0);
  std::vector<double> lastUseRemote(static_cast<size_t>(n) * static_cast<size_t>(m), -1.0);
  for (const auto& e : t.edges) {
    const DeviceId du = tl.tasks[static_cast<size_t>(e.src)].device, dv = tl.tasks[static_cast<size_t>(e.dst)].device;
    const double endV = tl.tasks[static_cast<size_t>(e.dst)].end;
    if (du == dv)
      lastUseOnOwn[static_cast<size_t>(e.src)] = std::max(lastUseOnOwn[static_cast<size_t>(e.src)], endV);
    else
      lastUseRemote[static_cast<size_t>(e.src) * static_cast<size_t>(m) + static_cast<size_t>(dv)] =
          std::max(lastUseRemote[static_cast<size_t>(e.src) * static_cast<size_t>(m) + static_cast<size_t>(dv)], endV);
  }
  auto outBytesOf = [&](TaskId v) -> int64_t {
    if (!t.work.empty()) return t.work[static_cast<size_t>(v)].bytesWritten;
    int64_t b = 0;
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) b = std::max(b, t.edges[static_cast<size_t>(ei)].bytes);
    return b;
  };
  for (const auto& tr : tl.transfers) {
    if (tr.src < 0) continue;
    lastUseOnOwn[static_cast<size_t>(tr.src)] = std::max(lastUseOnOwn[static_cast<size_t>(tr.src)], tr.end);
    if (tr.dst >= 0) {
      double until = lastUseRemote[static_cast<size_t>(tr.src) * static_cast<size_t>(m) + static_cast<size_t>(tr.to)];
      events[static_cast<size_t>(tr.to)].push_back({tr.start, tr.bytes});
      events[static_cast<size_t>(tr.to)].push_back({std::max(until, tr.end), -tr.bytes});
    }
  }
  for (TaskId v = 0; v < n; ++v) {
    const auto& slot = tl.tasks[static_cast<size_t>(v)];
    int64_t b = outBytesOf(v);
    if (!t.keptInPlaceBytes.empty()) b -= t.keptInPlaceBytes[static_cast<size_t>(v)];
    if (b <= 0) continue;
    double until = std::max(slot.end, lastUseOnOwn[static_cast<size_t>(v)]);
    if ((!t.outputBytes.empty() && t.outputBytes[static_cast<size_t>(v)] > 0) || (!t.keepsOutput.empty() && t.keepsOutput[static_cast<size_t>(v)]))
      until = std::max(until, makespan);
    events[static_cast<size_t>(slot.device)].push_back({slot.start, b});
    events[static_cast<size_t>(slot.device)].push_back({until, -b});
  }
  for (DeviceId d = 0; d < m; ++d) {
    auto& ev = events[static_cast<size_t>(d)];
    std::sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.second < b.second;  // frees before allocations at the same instant
    });
    int64_t live = 0, peak = 0;
    for (const auto& [time, delta] : ev) {
      live += delta;
      peak = std::max(peak, live);
    }
    tl.peakBytes[static_cast<size_t>(d)] = peak;
  }
  // Over capacity by the whole memory model (weights, received tensors and workspaces too).
  if (hasCapacityLimits(t)) {
    Plan placed;
    placed.device.resize(static_cast<size_t>(n));
    for (TaskId v = 0; v < n; ++v) placed.device[static_cast<size_t>(v)] = tl.tasks[static_cast<size_t>(v)].device;
    const std::vector<DeviceMemory> mem = deviceMemory(t, placed, tl);
    for (DeviceId d = 0; d < m; ++d) tl.overCapacity[static_cast<size_t>(d)] = mem[static_cast<size_t>(d)].over;
  }
}

Simulator::Simulator(const CostTable& t, SimOptions opts) : t_(t), opts_(opts), s_(std::make_shared<Scratch>(t, opts)) {}

Result<Timeline> Simulator::run(const Plan& plan) {
  const CostTable& t = t_;
  const int n = t.numTasks(), m = t.numDevices();
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  Scratch& s = *s_;
  Timeline tl;
  tl.tasks.assign(static_cast<size_t>(n), TaskSlot{});
  tl.busy.assign(static_cast<size_t>(m), 0.0);
  TimelineRecorder rec{tl};
  if (!s.runner.run(plan, rec)) {
    // Every device's next task waits for a task that is ordered behind another waiting task.
    const SimState& st = s.runner.state();
    for (DeviceId d = 0; d < m; ++d) {
      const auto& ord = plan.order[static_cast<size_t>(d)];
      if (s.runner.nextIndex(d) >= ord.size()) continue;
      const TaskId v = ord[s.runner.nextIndex(d)];
      for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) {
        const TaskId u = t.edges[static_cast<size_t>(ei)].src;
        if (st.finish[static_cast<size_t>(u)] < 0)
          return makeError("plan order deadlocks: operator '", t.taskNames[static_cast<size_t>(v)], "' is next on '",
                           t.deviceIds[static_cast<size_t>(d)], "' but needs '", t.taskNames[static_cast<size_t>(u)],
                           "', which is ordered after a waiting operator on '",
                           t.deviceIds[static_cast<size_t>(plan.device[static_cast<size_t>(u)])], "'");
      }
    }
    return makeError("plan order deadlocks");
  }
  const double makespan = s.runner.state().makespan;
  tl.makespan = makespan;
  s.lastStart.resize(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v) s.lastStart[static_cast<size_t>(v)] = tl.tasks[static_cast<size_t>(v)].start;
  tl.utilisation.assign(static_cast<size_t>(m), 0.0);
  for (DeviceId d = 0; d < m; ++d)
    tl.utilisation[static_cast<size_t>(d)] = makespan > 0 ? tl.busy[static_cast<size_t>(d)] / makespan : 0.0;

  tl.peakBytes.assign(static_cast<size_t>(m), 0);
  tl.overCapacity.assign(static_cast<size_t>(m), false);
  if (peaks_) fillPeakBytes(t, tl);
  return tl;
}

Result<double> Simulator::makespan(const Plan& plan) {
  peaks_ = false;  // the search loop needs only the makespan
  auto tl = run(plan);
  peaks_ = true;
  if (!tl) return Error{tl.message()};
  return tl->makespan;
}

Result<Timeline> Simulator::move(Plan& plan, TaskId v, DeviceId d) {
  const int n = t_.numTasks(), m = t_.numDevices();
  if (v < 0 || v >= n) return makeError("no operator with index ", std::to_string(v));
  if (d < 0 || d >= m) return makeError("no device with index ", std::to_string(d));
  if (!t_.canRun(v, d))
    return makeError("operator '", t_.taskNames[static_cast<size_t>(v)], "' cannot run on '", t_.deviceIds[static_cast<size_t>(d)], "'");
  if (s_->lastStart.size() != static_cast<size_t>(n)) {
    auto first = run(plan);
    if (!first) return first;
  }
  const std::vector<double> start = s_->lastStart;
  // The live chart needs times; peak bytes are filled on demand (fillPeakBytes).
  return move(plan, std::vector<TaskId>{v}, d, start, false);
}

Result<Timeline> Simulator::move(Plan& plan, const std::vector<TaskId>& ops, DeviceId d, const std::vector<double>& start,
                                 bool peaks) {
  const int n = t_.numTasks();
  Scratch& s = *s_;
  if (s.topoPos.size() != static_cast<size_t>(n)) {
    s.topoPos.assign(static_cast<size_t>(n), 0);
    auto topo = t_.topoOrder();
    for (size_t i = 0; i < topo.size(); ++i) s.topoPos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  }
  auto before = [&](TaskId a, TaskId b) {
    if (start[static_cast<size_t>(a)] != start[static_cast<size_t>(b)]) return start[static_cast<size_t>(a)] < start[static_cast<size_t>(b)];
    return s.topoPos[static_cast<size_t>(a)] < s.topoPos[static_cast<size_t>(b)];
  };
  std::vector<TaskId> moving = ops;
  std::sort(moving.begin(), moving.end(), before);
  if (plan.order.size() < static_cast<size_t>(t_.numDevices())) plan.order.resize(static_cast<size_t>(t_.numDevices()));
  for (TaskId v : moving) {
    auto& from = plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])];
    from.erase(std::remove(from.begin(), from.end(), v), from.end());
  }
  auto& to = plan.order[static_cast<size_t>(d)];
  for (TaskId v : moving) {
    plan.device[static_cast<size_t>(v)] = d;
    to.insert(std::find_if(to.begin(), to.end(), [&](TaskId x) { return before(v, x); }), v);
  }
  plan.algorithm = "manual";
  dropBrokenBlocks(t_, plan);  // a block that lost a member or was cut by a newcomer runs op by op
  // Replicas (sim/plan.h) that the move broke (two devices of the plan now renamed to one, an operator
  // its replica's device cannot run) are dropped, as broken blocks are: the plan runs as one replica.
  if (!plan.replicas.empty() && !checkReplicas(t_, plan)) plan.replicas.clear();
  peaks_ = peaks;
  auto tl = run(plan);
  if (!tl) {
    // Ties between zero-length operators can still order a consumer first: fall back to rank order.
    orderByUpwardRank(t_, plan);
    dropBrokenBlocks(t_, plan);
    tl = run(plan);
  }
  peaks_ = true;
  return tl;
}

Result<Timeline> simulate(const CostTable& t, const Plan& plan, const SimOptions& opts) {
  Simulator sim(t, opts);
  return sim.run(plan);
}

}  // namespace partex
