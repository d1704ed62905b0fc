// The memory model (memory.h): resident bytes per device under a plan, and the capacity rule.
#include "sim/memory.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "support/strings.h"

namespace partex {

namespace {

int64_t capOf(const CostTable& t, DeviceId d) {
  return t.memCapacity.empty() ? 0 : t.memCapacity[static_cast<size_t>(d)];
}

/// The bytes an operator's outputs take (task graphs: its largest outgoing message).
int64_t outBytesOf(const CostTable& t, TaskId v) {
  if (!t.work.empty()) return t.work[static_cast<size_t>(v)].bytesWritten;
  int64_t b = 0;
  for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) b = std::max(b, t.edges[static_cast<size_t>(ei)].bytes);
  return b;
}

/// Moves each target's operators there by the move rule (Simulator::move: they enter the target's
/// order by their start times in `tl`), keeping the plan's algorithm name (a repair, not a move by hand).
Status moveByRule(const CostTable& t, const SimOptions& sim, Plan& plan, const Timeline& tl,
                  const std::map<DeviceId, std::vector<TaskId>>& byTarget) {
  std::vector<double> start(static_cast<size_t>(t.numTasks()));
  for (TaskId v = 0; v < t.numTasks(); ++v) start[static_cast<size_t>(v)] = tl.tasks[static_cast<size_t>(v)].start;
  const std::string algorithm = plan.algorithm;
  Simulator s(t, sim);
  for (const auto& [d, ops] : byTarget) {
    auto r = s.move(plan, ops, d, start, false);
    if (!r) return Error{r.message()};
  }
  plan.algorithm = algorithm;
  return Status::ok();
}

enum Kind : int { kOwn = 0, kReceived = 1, kWorkspace = 2 };
struct Event {
  double time;
  int64_t delta;
  int kind;
};

}  // namespace

std::vector<int64_t> weightBytesPerDevice(const CostTable& t, const std::vector<DeviceId>& device) {
  WeightLoad load(t);
  load.reset(device);
  std::vector<int64_t> out(static_cast<size_t>(t.numDevices()), 0);
  for (DeviceId d = 0; d < t.numDevices(); ++d) out[static_cast<size_t>(d)] = load.bytes(d);
  return out;
}

std::vector<DeviceMemory> deviceMemory(const CostTable& t, const Plan& plan, const Timeline& tl) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<DeviceMemory> out(static_cast<size_t>(m));
  const std::vector<int64_t> weights = weightBytesPerDevice(t, plan.device);
  // The lifetimes are the simulator's (fillPeakBytes): a result lives on its device from its start until
  // its last use there; a received copy from the transfer's start until its last consumer there ends.
  std::vector<std::vector<Event>> events(static_cast<size_t>(m));
  std::vector<double> lastUseOnOwn(static_cast<size_t>(n), -1.0);
  std::vector<double> lastUseRemote(static_cast<size_t>(n) * static_cast<size_t>(m), -1.0);
  for (const auto& e : t.edges) {
    const DeviceId du = tl.tasks[static_cast<size_t>(e.src)].device, dv = tl.tasks[static_cast<size_t>(e.dst)].device;
    const double endV = tl.tasks[static_cast<size_t>(e.dst)].end;
    double& slot = du == dv ? lastUseOnOwn[static_cast<size_t>(e.src)]
                            : lastUseRemote[static_cast<size_t>(e.src) * static_cast<size_t>(m) + static_cast<size_t>(dv)];
    slot = std::max(slot, endV);
  }
  for (const auto& tr : tl.transfers) {
    if (tr.src < 0) continue;
    lastUseOnOwn[static_cast<size_t>(tr.src)] = std::max(lastUseOnOwn[static_cast<size_t>(tr.src)], tr.end);
    if (tr.dst >= 0) {
      const double until = lastUseRemote[static_cast<size_t>(tr.src) * static_cast<size_t>(m) + static_cast<size_t>(tr.to)];
      events[static_cast<size_t>(tr.to)].push_back({tr.start, tr.bytes, kReceived});
      events[static_cast<size_t>(tr.to)].push_back({std::max(until, tr.end), -tr.bytes, kReceived});
    }
  }
  for (TaskId v = 0; v < n; ++v) {
    const auto& slot = tl.tasks[static_cast<size_t>(v)];
    const auto di = static_cast<size_t>(slot.device);
    const int64_t ws = t.deviceWorkspaceBytes.empty() ? 0 : t.deviceWorkspaceBytes[di];
    if (ws > 0) {
      events[di].push_back({slot.start, ws, kWorkspace});
      events[di].push_back({slot.end, -ws, kWorkspace});
    }
    int64_t b = outBytesOf(t, v);
    if (!t.keptInPlaceBytes.empty()) b -= t.keptInPlaceBytes[static_cast<size_t>(v)];
    if (b <= 0) continue;
    double until = std::max(slot.end, lastUseOnOwn[static_cast<size_t>(v)]);
    if ((!t.outputBytes.empty() && t.outputBytes[static_cast<size_t>(v)] > 0) || (!t.keepsOutput.empty() && t.keepsOutput[static_cast<size_t>(v)]))
      until = std::max(until, tl.makespan);
    events[di].push_back({slot.start, b, kOwn});
    events[di].push_back({until, -b, kOwn});
  }
  for (DeviceId d = 0; d < m; ++d) {
    auto& ev = events[static_cast<size_t>(d)];
    std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
      if (a.time != b.time) return a.time < b.time;
      return a.delta < b.delta;  // frees before allocations at the same instant
    });
    DeviceMemory& dm = out[static_cast<size_t>(d)];
    dm.capacity = capOf(t, d);
    dm.weights = weights[static_cast<size_t>(d)];
    dm.peak = dm.weights;
    int64_t live[3] = {0, 0, 0};
    dm.steps.push_back({0.0, dm.weights});
    for (size_t i = 0; i < ev.size();) {
      const double time = ev[i].time;
      // The peak inside one instant: frees first, then allocations one by one.
      for (; i < ev.size() && ev[i].time == time; ++i) {
        live[ev[i].kind] += ev[i].delta;
        const int64_t total = dm.weights + live[0] + live[1] + live[2];
        if (total > dm.peak) {
          dm.peak = total;
          dm.peakTime = time;
          dm.activations = live[kOwn];
          dm.received = live[kReceived];
          dm.workspace = live[kWorkspace];
        }
      }
      const int64_t total = dm.weights + live[0] + live[1] + live[2];
      if (dm.steps.back().first == time)
        dm.steps.back().second = total;
      else if (dm.steps.back().second != total)
        dm.steps.push_back({time, total});
    }
    if (tl.makespan > dm.steps.back().first && !ev.empty()) dm.steps.push_back({tl.makespan, dm.steps.back().second});
    dm.over = dm.capacity > 0 && dm.peak > dm.capacity;
  }
  return out;
}

std::vector<std::pair<const char*, int64_t>> memoryFields(const DeviceMemory& dm) {
  return {{"capacity_bytes", dm.capacity},           {"weight_bytes", dm.weights},
          {"resident_peak_bytes", dm.peak},          {"peak_activation_bytes", dm.activations},
          {"peak_received_bytes", dm.received},      {"peak_workspace_bytes", dm.workspace}};
}

std::string formatBytes(int64_t bytes) {
  const std::string grouped = withCommas(static_cast<uint64_t>(bytes < 0 ? -bytes : bytes));
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return (bytes < 0 ? "-" : "") + grouped + " bytes (" + mib + " MiB)";
}

Status checkCapacity(const CostTable& t, const Plan& plan, const Timeline* tl) {
  if (!hasCapacityLimits(t)) return Status::ok();
  const std::vector<int64_t> weights = weightBytesPerDevice(t, plan.device);
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    const int64_t cap = capOf(t, d);
    if (cap > 0 && weights[static_cast<size_t>(d)] > cap)
      return makeError("device '", t.deviceIds[static_cast<size_t>(d)], "' needs ", formatBytes(weights[static_cast<size_t>(d)]),
                       " for the weights of its operators, ", formatBytes(cap), " available");
  }
  if (!tl) return Status::ok();
  const std::vector<DeviceMemory> mem = deviceMemory(t, plan, *tl);
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    const DeviceMemory& dm = mem[static_cast<size_t>(d)];
    if (dm.over)
      return makeError("device '", t.deviceIds[static_cast<size_t>(d)], "' needs ", formatBytes(dm.peak), " at its peak (weights ",
                       formatBytes(dm.weights), ", activations ", formatBytes(dm.activations + dm.received + dm.workspace),
                       "), ", formatBytes(dm.capacity), " available");
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------

WeightLoad::WeightLoad(const CostTable& t) : t_(t) {
  const bool known = t.taskWeights.size() == static_cast<size_t>(t.numTasks());  // a table built with weights
  nw_ = known ? t.weightBytes.size() : 0;
  active_ = nw_ > 0 && hasCapacityLimits(t);
  const auto m = static_cast<size_t>(t.numDevices());
  cap_ = t.memCapacity;
  cap_.resize(m, 0);
  bytes_.assign(m, 0);
  if (nw_ > 0) refs_.assign(m * nw_, 0);
}

void WeightLoad::reset(const std::vector<DeviceId>& device) {
  std::fill(bytes_.begin(), bytes_.end(), 0);
  std::fill(refs_.begin(), refs_.end(), 0);
  for (size_t v = 0; v < device.size(); ++v)
    if (device[v] >= 0) add(static_cast<TaskId>(v), device[v]);
}

void WeightLoad::add(TaskId v, DeviceId d) {
  if (refs_.empty()) return;
  for (int32_t w : t_.taskWeights[static_cast<size_t>(v)])
    if (refs_[static_cast<size_t>(d) * nw_ + static_cast<size_t>(w)]++ == 0)
      bytes_[static_cast<size_t>(d)] += t_.weightBytes[static_cast<size_t>(w)];
}

void WeightLoad::remove(TaskId v, DeviceId d) {
  if (refs_.empty()) return;
  for (int32_t w : t_.taskWeights[static_cast<size_t>(v)])
    if (--refs_[static_cast<size_t>(d) * nw_ + static_cast<size_t>(w)] == 0)
      bytes_[static_cast<size_t>(d)] -= t_.weightBytes[static_cast<size_t>(w)];
}

int64_t WeightLoad::extra(TaskId v, DeviceId d) const {
  if (refs_.empty()) return 0;
  int64_t b = 0;
  for (int32_t w : t_.taskWeights[static_cast<size_t>(v)])
    if (refs_[static_cast<size_t>(d) * nw_ + static_cast<size_t>(w)] == 0) b += t_.weightBytes[static_cast<size_t>(w)];
  return b;
}

Error noDeviceFits(const CostTable& t, const WeightLoad& load, TaskId v, const std::vector<DeviceId>& allowed) {
  DeviceId best = allowed.empty() ? 0 : allowed.front();
  int64_t bestRoom = -1;
  for (DeviceId d : allowed) {
    const int64_t room = load.capacity(d) - load.bytes(d);
    if (room > bestRoom) {
      best = d;
      bestRoom = room;
    }
  }
  const int64_t need = load.bytes(best) + load.extra(v, best);
  return makeError("no device has memory for operator '", t.taskNames[static_cast<size_t>(v)], "': device '",
                   t.deviceIds[static_cast<size_t>(best)], "' would need ", formatBytes(need), " for weights, ",
                   formatBytes(load.capacity(best)), " available");
}

Result<int> repairCapacity(const CostTable& t, const std::vector<std::vector<DeviceId>>& allowed, Plan& plan,
                           const SimOptions& sim, const std::vector<int64_t>* budget) {
  WeightLoad load(t);
  if (!load.active()) return 0;
  if (budget)
    for (DeviceId d = 0; d < t.numDevices(); ++d) load.setCapacity(d, (*budget)[static_cast<size_t>(d)]);
  load.reset(plan.device);
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<DeviceId> device = plan.device;
  std::vector<TaskId> moved;
  std::vector<DeviceId> target(static_cast<size_t>(n), -1);
  for (DeviceId d = 0; d < m; ++d) {
    while (!load.fits(d)) {
      // The operator on d whose leaving frees the most bytes (ties: the one that costs least elsewhere),
      // to the allowed device with room where it costs least.
      TaskId pick = -1;
      DeviceId to = -1;
      int64_t pickFreed = -1;
      double pickCost = kInf;
      for (TaskId v = 0; v < n; ++v) {
        if (device[static_cast<size_t>(v)] != d) continue;
        DeviceId e = -1;
        double ce = kInf;
        for (DeviceId x : allowed[static_cast<size_t>(v)])
          if (x != d && load.fitsWith(v, x) && t.w(v, x) < ce) {
            e = x;
            ce = t.w(v, x);
          }
        if (e < 0) continue;
        load.remove(v, d);
        const int64_t freed = load.extra(v, d);
        load.add(v, d);
        if (freed > pickFreed || (freed == pickFreed && ce < pickCost)) {
          pick = v;
          to = e;
          pickFreed = freed;
          pickCost = ce;
        }
      }
      if (pick < 0) {
        int64_t need = load.bytes(d);
        return makeError("device '", t.deviceIds[static_cast<size_t>(d)], "' needs ", formatBytes(need),
                         " for the weights of its operators, ", formatBytes(load.capacity(d)),
                         " available, and no operator can move to a device with room");
      }
      load.move(pick, d, to);
      device[static_cast<size_t>(pick)] = to;
      if (target[static_cast<size_t>(pick)] < 0) moved.push_back(pick);
      target[static_cast<size_t>(pick)] = to;
    }
  }
  if (moved.empty()) return 0;
  // Orders by the move rule: the moved operators enter their new devices by their start times.
  auto tl = simulate(t, plan, sim);
  if (!tl) return Error{tl.message()};
  std::map<DeviceId, std::vector<TaskId>> byTarget;
  for (TaskId v : moved) byTarget[target[static_cast<size_t>(v)]].push_back(v);
  if (auto st = moveByRule(t, sim, plan, *tl, byTarget); !st) return Error{st.message()};
  return static_cast<int>(moved.size());
}

Result<int> fitCapacity(const CostTable& t, const std::vector<std::vector<DeviceId>>& allowed, Plan& plan,
                        const SimOptions& sim) {
  if (!hasCapacityLimits(t)) return 0;
  std::vector<int64_t> budget = t.memCapacity;
  budget.resize(static_cast<size_t>(t.numDevices()), 0);
  int moved = 0;
  constexpr int kRounds = 8;
  std::string lastOver;  // the previous round's device over capacity at its peak
  for (int round = 0;; ++round) {
    auto r = repairCapacity(t, allowed, plan, sim, &budget);
    if (!r) {  // a failed repair leaves the plan as it was
      if (lastOver.empty()) return Error{r.message()};  // the weights alone do not fit
      break;
    }
    moved += *r;
    auto tl = simulate(t, plan, sim);
    if (!tl) return Error{tl.message()};
    const std::vector<DeviceMemory> mem = deviceMemory(t, plan, *tl);
    bool over = false;
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      const DeviceMemory& dm = mem[static_cast<size_t>(d)];
      if (!dm.over) continue;
      over = true;
      // Its activations need room: the weights there must shrink by the excess (1 byte: none at all).
      budget[static_cast<size_t>(d)] = std::max<int64_t>(1, std::min(budget[static_cast<size_t>(d)], dm.weights - (dm.peak - dm.capacity)));
    }
    if (!over) return moved;
    const Status st = checkCapacity(t, plan, &*tl);
    lastOver = st.message();
    if (round + 1 == kRounds) break;
  }
  // Weights alone could not make room (a device over capacity with activations, its weights already
  // at the budget, or none): operators leave it one at a time, the one whose output is largest among
  // those alive at its peak first, each to the allowed device with room for its weights where it
  // costs least, until every device fits or no operator can leave.
  WeightLoad load(t);
  const int n = t.numTasks();
  std::set<std::pair<TaskId, DeviceId>> left;
  for (int it = 0; it < 2 * n + 8; ++it) {
    auto tl = simulate(t, plan, sim);
    if (!tl) return Error{tl.message()};
    const std::vector<DeviceMemory> mem = deviceMemory(t, plan, *tl);
    DeviceId d = -1;
    for (DeviceId x = 0; x < t.numDevices() && d < 0; ++x)
      if (mem[static_cast<size_t>(x)].over) d = x;
    if (d < 0) return moved;
    const double peak = mem[static_cast<size_t>(d)].peakTime;
    load.reset(plan.device);
    TaskId pick = -1;
    DeviceId to = -1;
    int64_t pickBytes = -1;
    for (TaskId v = 0; v < n; ++v) {
      if (plan.device[static_cast<size_t>(v)] != d) continue;
      const auto& tv = tl->tasks[static_cast<size_t>(v)];
      if (tv.start > peak) continue;
      double lastUse = tv.end;
      int64_t out = t.outputBytes.empty() ? 0 : t.outputBytes[static_cast<size_t>(v)];
      if (out > 0) lastUse = tl->makespan;
      for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
        const Edge& e = t.edges[static_cast<size_t>(ei)];
        out = std::max(out, e.bytes);
        lastUse = std::max(lastUse, tl->tasks[static_cast<size_t>(e.dst)].end);
      }
      if (lastUse < peak) continue;
      // Targets: room for its weights and for its output beside the target's own peak, never a
      // device it already left (no ping-pong between two full devices).
      DeviceId e = -1;
      double ce = kInf;
      for (DeviceId x : allowed[static_cast<size_t>(v)]) {
        const int64_t cap = t.memCapacity[static_cast<size_t>(x)];
        if (x == d || left.count({v, x}) || !load.fitsWith(v, x)) continue;
        if (cap > 0 && mem[static_cast<size_t>(x)].peak + load.extra(v, x) + out > cap) continue;
        if (t.w(v, x) < ce) {
          e = x;
          ce = t.w(v, x);
        }
      }
      if (e >= 0 && out > pickBytes) {
        pick = v;
        to = e;
        pickBytes = out;
      }
    }
    if (pick < 0) break;
    left.insert({pick, d});
    if (auto st = moveByRule(t, sim, plan, *tl, {{to, {pick}}}); !st) return Error{st.message()};
    ++moved;
  }
  auto tl = simulate(t, plan, sim);
  if (!tl) return Error{tl.message()};
  if (auto st = checkCapacity(t, plan, &*tl); !st) return Error{st.message()};
  return moved;
}

}  // namespace partex
