#include "sim/simulator.h"

#include "sim/intervals.h"

#include <algorithm>

namespace partex {


struct Simulator::Scratch {
  std::vector<double> arrival;  // [task * m + device], -1 until sent
  std::vector<double> finish;
  std::vector<size_t> pos;
  std::vector<double> devFree;
  std::vector<BusyIntervals> devBusy;
  std::vector<BusyIntervals> links;
  std::vector<int> pendingPreds;
  std::vector<double> lastStart;  // start times of the last successful run, for move()
  std::vector<int> topoPos;
};

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
    const int64_t b = outBytesOf(v);
    if (b <= 0) continue;
    double until = std::max(slot.end, lastUseOnOwn[static_cast<size_t>(v)]);
    if (!t.outputBytes.empty() && t.outputBytes[static_cast<size_t>(v)] > 0) until = std::max(until, makespan);
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
    const int64_t cap = t.memCapacity.empty() ? 0 : t.memCapacity[static_cast<size_t>(d)];
    tl.overCapacity[static_cast<size_t>(d)] = cap > 0 && peak > cap;
  }
}

Simulator::Simulator(const CostTable& t, SimOptions opts) : t_(t), opts_(opts), s_(std::make_shared<Scratch>()) {}

Result<Timeline> Simulator::run(const Plan& plan) {
  const CostTable& t = t_;
  const int n = t.numTasks(), m = t.numDevices();
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  Scratch& s = *s_;
  s.arrival.assign(static_cast<size_t>(n) * static_cast<size_t>(m), -1.0);
  s.finish.assign(static_cast<size_t>(n), -1.0);
  s.pos.assign(static_cast<size_t>(m), 0);
  s.devFree.assign(static_cast<size_t>(m), 0.0);
  s.devBusy.assign(static_cast<size_t>(m), BusyIntervals{});
  s.links.assign(static_cast<size_t>(t.numLinkResources), BusyIntervals{});
  s.pendingPreds.assign(static_cast<size_t>(n), 0);
  for (const auto& e : t.edges) ++s.pendingPreds[static_cast<size_t>(e.dst)];

  Timeline tl;
  tl.tasks.assign(static_cast<size_t>(n), TaskSlot{});
  tl.busy.assign(static_cast<size_t>(m), 0.0);

  auto book = [&](DeviceId a, DeviceId b, double ready, double dur) -> std::pair<double, int32_t> {
    const int32_t link = t.linkResource.empty() ? -1 : t.linkResource[static_cast<size_t>(a) * static_cast<size_t>(m) + static_cast<size_t>(b)];
    if (link < 0 || opts_.unlimitedLinks) return {ready, link};
    double start = s.links[static_cast<size_t>(link)].firstFit(ready, dur);
    s.links[static_cast<size_t>(link)].insert(start, start + dur);
    return {start, link};
  };

  // Model inputs start on the host.
  std::vector<double> inputReady(static_cast<size_t>(n), 0.0);
  std::vector<double> edgeArrival(t.edges.size(), -1.0);
  for (TaskId v = 0; v < n; ++v) {
    const DeviceId d = plan.device[static_cast<size_t>(v)];
    const int64_t bytes = t.inputBytes.empty() ? 0 : t.inputBytes[static_cast<size_t>(v)];
    if (bytes <= 0 || d == t.host) continue;
    const double dur = t.transferUs(t.host, d, bytes);
    auto [start, link] = book(t.host, d, 0.0, dur);
    inputReady[static_cast<size_t>(v)] = start + dur;
    tl.transfers.push_back(TransferSlot{-1, v, t.host, d, link, start, start + dur, bytes});
    tl.bytesMoved += bytes;
  }

  double makespan = 0;
  int remaining = n;
  std::vector<std::pair<double, int64_t>> perDest(static_cast<size_t>(m));
  std::vector<TaskId> firstConsumer(static_cast<size_t>(m));
  while (remaining > 0) {
    DeviceId bestDev = -1;
    double bestStart = kInf;
    for (DeviceId d = 0; d < m; ++d) {
      const auto& ord = plan.order[static_cast<size_t>(d)];
      if (s.pos[static_cast<size_t>(d)] >= ord.size()) continue;
      const TaskId v = ord[s.pos[static_cast<size_t>(d)]];
      if (s.pendingPreds[static_cast<size_t>(v)] > 0) continue;
      double ready = std::max(s.devFree[static_cast<size_t>(d)], inputReady[static_cast<size_t>(v)]);
      for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) {
        const TaskId u = t.edges[static_cast<size_t>(ei)].src;
        const double arr = plan.device[static_cast<size_t>(u)] == d
                               ? s.finish[static_cast<size_t>(u)]
                               : t.edges[static_cast<size_t>(ei)].fixedUs >= 0 ? edgeArrival[static_cast<size_t>(ei)]
                               : s.arrival[static_cast<size_t>(u) * static_cast<size_t>(m) + static_cast<size_t>(d)];
        ready = std::max(ready, arr);
      }
      const double dur = t.wIn(v, d, plan.device);
      if (!t.exclusiveWith.empty()) {
        bool moved = true;
        while (moved) {
          moved = false;
          for (DeviceId p : t.exclusiveWith[static_cast<size_t>(d)]) {
            double r2 = s.devBusy[static_cast<size_t>(p)].firstFit(ready, dur);
            if (r2 > ready) {
              ready = r2;
              moved = true;
            }
          }
        }
      }
      if (ready < bestStart) {
        bestStart = ready;
        bestDev = d;
      }
    }
    if (bestDev < 0) {
      // Every device's next task waits for a task that is ordered behind another waiting task.
      for (DeviceId d = 0; d < m; ++d) {
        const auto& ord = plan.order[static_cast<size_t>(d)];
        if (s.pos[static_cast<size_t>(d)] >= ord.size()) continue;
        const TaskId v = ord[s.pos[static_cast<size_t>(d)]];
        for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) {
          const TaskId u = t.edges[static_cast<size_t>(ei)].src;
          if (s.finish[static_cast<size_t>(u)] < 0)
            return makeError("plan order deadlocks: operator '", t.taskNames[static_cast<size_t>(v)], "' is next on '",
                             t.deviceIds[static_cast<size_t>(d)], "' but needs '", t.taskNames[static_cast<size_t>(u)],
                             "', which is ordered after a waiting operator on '",
                             t.deviceIds[static_cast<size_t>(plan.device[static_cast<size_t>(u)])], "'");
        }
      }
      return makeError("plan order deadlocks");
    }
    const DeviceId d = bestDev;
    const TaskId v = plan.order[static_cast<size_t>(d)][s.pos[static_cast<size_t>(d)]++];
    const double dur = t.wIn(v, d, plan.device);
    const double end = bestStart + dur;
    tl.tasks[static_cast<size_t>(v)] = TaskSlot{d, bestStart, end};
    tl.busy[static_cast<size_t>(d)] += dur;
    s.finish[static_cast<size_t>(v)] = end;
    s.devFree[static_cast<size_t>(d)] = end;
    if (!t.exclusiveWith.empty() && !t.exclusiveWith[static_cast<size_t>(d)].empty())
      s.devBusy[static_cast<size_t>(d)].insert(bestStart, end);
    makespan = std::max(makespan, end);
    --remaining;

    // Send the result once to every other device that consumes it, as soon as it exists.
    for (DeviceId b = 0; b < m; ++b) perDest[static_cast<size_t>(b)] = {-1.0, 0};
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const Edge& e = t.edges[static_cast<size_t>(ei)];
      --s.pendingPreds[static_cast<size_t>(e.dst)];
      const DeviceId b = plan.device[static_cast<size_t>(e.dst)];
      if (b == d) continue;
      if (e.fixedUs >= 0) {
        const double c = t.comm(ei, d, b);
        auto [st, link] = book(d, b, end, c);
        edgeArrival[static_cast<size_t>(ei)] = st + c;
        tl.transfers.push_back(TransferSlot{v, e.dst, d, b, link, st, st + c, e.bytes});
        continue;
      }
      auto& pd = perDest[static_cast<size_t>(b)];
      const double c = t.comm(ei, d, b);
      if (pd.first < 0) firstConsumer[static_cast<size_t>(b)] = e.dst;
      pd.first = std::max(pd.first, c);
      pd.second = std::max(pd.second, e.bytes);
    }
    for (DeviceId b = 0; b < m; ++b) {
      const auto& pd = perDest[static_cast<size_t>(b)];
      if (pd.first < 0) continue;
      auto [start, link] = book(d, b, end, pd.first);
      s.arrival[static_cast<size_t>(v) * static_cast<size_t>(m) + static_cast<size_t>(b)] = start + pd.first;
      if (pd.first > 0 || pd.second > 0) {
        tl.transfers.push_back(TransferSlot{v, firstConsumer[static_cast<size_t>(b)], d, b, link, start, start + pd.first, pd.second});
        tl.bytesMoved += pd.second;
      }
    }
    // Model outputs return to the host.
    const int64_t outBytes = t.outputBytes.empty() ? 0 : t.outputBytes[static_cast<size_t>(v)];
    if (outBytes > 0 && d != t.host) {
      const double c = t.transferUs(d, t.host, outBytes);
      auto [start, link] = book(d, t.host, end, c);
      tl.transfers.push_back(TransferSlot{v, -1, d, t.host, link, start, start + c, outBytes});
      tl.bytesMoved += outBytes;
      makespan = std::max(makespan, start + c);
    }
  }
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
  Scratch& s = *s_;
  if (s.topoPos.size() != static_cast<size_t>(n)) {
    s.topoPos.assign(static_cast<size_t>(n), 0);
    auto topo = t_.topoOrder();
    for (size_t i = 0; i < topo.size(); ++i) s.topoPos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  }
  // Every device order is sorted by the start times of the last simulation, so inserting the moved
  // task by its old start time keeps all orders subsequences of one topological order.
  if (s.lastStart.size() != static_cast<size_t>(n)) {
    auto first = run(plan);
    if (!first) return first;
  }
  const std::vector<double> start = s.lastStart;
  auto before = [&](TaskId a, TaskId b) {
    if (start[static_cast<size_t>(a)] != start[static_cast<size_t>(b)]) return start[static_cast<size_t>(a)] < start[static_cast<size_t>(b)];
    return s.topoPos[static_cast<size_t>(a)] < s.topoPos[static_cast<size_t>(b)];
  };
  const DeviceId old = plan.device[static_cast<size_t>(v)];
  auto& from = plan.order[static_cast<size_t>(old)];
  from.erase(std::remove(from.begin(), from.end(), v), from.end());
  plan.device[static_cast<size_t>(v)] = d;
  auto& to = plan.order[static_cast<size_t>(d)];
  to.insert(std::find_if(to.begin(), to.end(), [&](TaskId x) { return before(v, x); }), v);
  plan.algorithm = "manual";
  peaks_ = false;  // the live chart needs times; peak bytes are filled on demand (fillPeakBytes)
  auto tl = run(plan);
  peaks_ = true;
  if (tl) return tl;
  // Ties between zero-length operators can still order a consumer first: fall back to rank order.
  orderByUpwardRank(t_, plan);
  peaks_ = false;
  tl = run(plan);
  peaks_ = true;
  return tl;
}

Result<Timeline> simulate(const CostTable& t, const Plan& plan, const SimOptions& opts) {
  Simulator sim(t, opts);
  return sim.run(plan);
}

}  // namespace partex
