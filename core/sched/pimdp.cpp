// "Optimal partitioning with low-overhead profiling" (Kim et al., ACM TODAES 2024), reconstructed from
// its abstract as described in docs/algorithms.md:
//  1. Expanded graph: one node per (op, device that may run it); edges carry c(e,a,b).
//  2. Minimal profiling: one all-on-d run per device gives every node cost, one run that crosses
//     devices on every edge gives the edge costs (transfer cost depends only on the device pair and the
//     bytes): numDevices + 1 runs (the paper: 4 runs for 3 devices). Reported in SchedInfo.profilingRuns.
//  3. Optimal DP over the expanded graph. Objective: total time, the devices running in sequence
//     (they share one host):
//        T(assignment) = sum_v w(v,d_v) + sum_{e=(u,v)} c(e,d_u,d_v)
//                        + sum_v [c(host->d_v, input bytes of v) + c(d_v->host, output bytes of v)]
//     (the last line is zero for task graphs). On a chain this is Viterbi; on a DAG it is a frontier DP
//     over a topological order whose state is the devices of the values still live (produced and not
//     yet consumed by every consumer). Exact; the state count is the product of the live values'
//     device choices.
// Reconstruction choices (the paper's full text is not public):
//  - Transfers are charged per edge of the expanded graph. The simulator sends a tensor once per
//    receiving device, so where one value has several consumers on one remote device the simulated
//    time can be lower than the objective.
//  - Frontier cap: param "max_states" (default 1,000,000 states, also bounded so that the state keys
//    stay within ~256 MiB). Above it the DP becomes a beam search that keeps the cheapest states (ties:
//    first created); the plan is then not provably optimal and SchedInfo.notes says so.
//  - Time limit: when the projected run time exceeds SchedOptions::timeLimitSec, the beam is halved
//    (down to 1 state, a greedy pass) so that the DP always finishes; notes say so. At the deadline
//    itself (checked every 256 states inside a step, as is the cancel token) the step keeps the states
//    expanded so far and the rest of the DP is greedy from the cheapest state ("time limit reached").
//  - The plan's order on each device is the DP's topological order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

constexpr double kHuge = 1e18;  ///< Unreachable transfers, kept finite so that the DP stays total.
constexpr size_t kKeyBudgetBytes = size_t{256} << 20;

double finiteOrHuge(double x) { return std::isfinite(x) ? x : kHuge; }

/// Nodes of the decision paths, shared between states and freed by reference counting, so that memory
/// stays proportional to the live states, not to states x depth.
class PathPool {
 public:
  int32_t make(int32_t parent, uint8_t dev) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<int32_t>(parent_.size());
      parent_.push_back(-1);
      dev_.push_back(0);
      refs_.push_back(0);
    }
    parent_[static_cast<size_t>(id)] = parent;
    dev_[static_cast<size_t>(id)] = dev;
    refs_[static_cast<size_t>(id)] = 1;
    if (parent >= 0) ++refs_[static_cast<size_t>(parent)];
    return id;
  }
  void release(int32_t id) {
    while (id >= 0 && --refs_[static_cast<size_t>(id)] == 0) {
      free_.push_back(id);
      id = parent_[static_cast<size_t>(id)];
    }
  }
  int32_t parent(int32_t id) const { return parent_[static_cast<size_t>(id)]; }
  uint8_t dev(int32_t id) const { return dev_[static_cast<size_t>(id)]; }

 private:
  std::vector<int32_t> parent_;
  std::vector<uint8_t> dev_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;
};

uint64_t hashKey(const uint8_t* k, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= k[i];
    h *= 1099511628211ull;
  }
  return h ^ (h >> 29);
}

class PimDp final : public Scheduler {
 public:
  std::string name() const override { return "pimdp"; }
  std::string title() const override { return "Optimal partitioning with low-overhead profiling (reconstructed)"; }
  std::string description() const override {
    return "Kim et al. 2024: expanded graph, numDevices+1 profiling runs, exact DP (Viterbi on chains, frontier "
           "DP on DAGs) minimising total time with devices in sequence (param max_states=1000000).";
  }

  bool capacityByPenalty() const override { return true; }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const auto t0 = std::chrono::steady_clock::now();
    const Deadline deadline = o.startDeadline();
    const int n = t.numTasks(), m = t.numDevices();
    if (m > 255) return makeError("pimdp: at most 255 devices are supported, the platform has ", std::to_string(m));
    bool ok = true;
    const double maxStatesParam = numParam(o, "max_states", 1e6, ok);
    if (!ok || maxStatesParam < 1) return makeError("pimdp: param max_states must be a number >= 1");
    if (info) info->profilingRuns = m + (m > 1 ? 1 : 0);

    Plan plan;
    plan.device.assign(static_cast<size_t>(n), 0);
    plan.order.assign(static_cast<size_t>(m), {});
    if (n == 0) return plan;

    const std::vector<TaskId> order = t.topoOrder();
    std::vector<int32_t> step(static_cast<size_t>(n));
    for (int32_t k = 0; k < n; ++k) step[static_cast<size_t>(order[static_cast<size_t>(k)])] = k;
    // Step after which a task's value is dead (its last consumer's step); -1 without consumers.
    std::vector<int32_t> lastUse(static_cast<size_t>(n), -1);
    for (const Edge& e : t.edges)
      lastUse[static_cast<size_t>(e.src)] = std::max(lastUse[static_cast<size_t>(e.src)], step[static_cast<size_t>(e.dst)]);

    auto hostIo = [&](TaskId v, DeviceId d) {
      double x = 0;
      const auto vi = static_cast<size_t>(v);
      if (!t.inputBytes.empty() && t.inputBytes[vi] > 0) x += finiteOrHuge(t.transferUs(t.host, d, t.inputBytes[vi]));
      if (!t.outputBytes.empty() && t.outputBytes[vi] > 0) x += finiteOrHuge(t.transferUs(d, t.host, t.outputBytes[vi]));
      return x;
    };

    // DP state: the devices of the live values, one byte per slot of `live`.
    std::vector<TaskId> live;
    std::vector<int32_t> slotOf(static_cast<size_t>(n), -1);
    std::vector<uint8_t> keys;  // states x live.size()
    std::vector<double> cost{0.0};
    std::vector<int32_t> node{-1};
    PathPool pool;
    size_t cap = static_cast<size_t>(std::min(maxStatesParam, 2e9));
    bool beamUsed = false, timeShrunk = false, timeUp = false;
    std::string timeUpAt;
    size_t maxSeen = 1;
    std::string beamAt, shrinkAt;
    const int reportEvery = std::max(1, n / 100);

    std::vector<uint8_t> newKeys;
    std::vector<double> newCost;
    std::vector<int32_t> newParent;
    std::vector<uint8_t> newDev;
    std::vector<int32_t> table;
    std::vector<uint8_t> buf;

    const auto loopStart = std::chrono::steady_clock::now();
    for (int32_t k = 0; k < n; ++k) {
      if (o.cancelled()) return cancelledError();
      const TaskId v = order[static_cast<size_t>(k)];
      const auto vi = static_cast<size_t>(v);
      const size_t F = live.size();
      if (!timeUp && deadline.passed()) {
        timeUp = true;
        timeUpAt = t.taskNames[vi];
      }
      if (timeUp && cost.size() > 1) {  // past the deadline: greedy from the cheapest state
        const size_t b = static_cast<size_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
        std::vector<uint8_t> k1(keys.begin() + static_cast<std::ptrdiff_t>(b * F), keys.begin() + static_cast<std::ptrdiff_t>((b + 1) * F));
        for (size_t i = 0; i < node.size(); ++i)
          if (i != b) pool.release(node[i]);
        node = {node[b]};
        cost = {cost[b]};
        keys.swap(k1);
        cap = 1;
      }
      const size_t S = cost.size();

      // Devices of v and their own cost; in-edges with the slot of their source and c(e,a,b).
      std::vector<uint8_t> devs;
      std::vector<double> base;
      for (DeviceId d = 0; d < m; ++d)
        if (c.allowed(t, v, d)) {
          devs.push_back(static_cast<uint8_t>(d));
          base.push_back(t.w(v, d) + hostIo(v, d));
        }
      const auto& ins = t.inEdges[vi];
      std::vector<int32_t> inSlot(ins.size());
      std::vector<double> commTab(ins.size() * static_cast<size_t>(m) * static_cast<size_t>(m));
      for (size_t i = 0; i < ins.size(); ++i) {
        const Edge& e = t.edges[static_cast<size_t>(ins[i])];
        inSlot[i] = slotOf[static_cast<size_t>(e.src)];
        for (DeviceId a = 0; a < m; ++a)
          for (DeviceId b = 0; b < m; ++b)
            commTab[(i * static_cast<size_t>(m) + static_cast<size_t>(a)) * static_cast<size_t>(m) + static_cast<size_t>(b)] =
                finiteOrHuge(t.comm(ins[i], a, b));
      }

      // The next frontier: the live values that stay live, then v when it has consumers.
      std::vector<TaskId> nextLive;
      std::vector<int32_t> fromSlot;  // per next slot: the old slot, or -1 for v
      for (size_t s = 0; s < F; ++s)
        if (lastUse[static_cast<size_t>(live[s])] > k) {
          nextLive.push_back(live[s]);
          fromSlot.push_back(static_cast<int32_t>(s));
        }
      const bool vLives = lastUse[vi] > k;
      if (vLives) {
        nextLive.push_back(v);
        fromSlot.push_back(-1);
      }
      const size_t F2 = nextLive.size();
      const int32_t vSlot = vLives ? static_cast<int32_t>(F2 - 1) : -1;

      // Expand every state by every device of v; merge equal keys keeping the cheapest (first on ties).
      const size_t expect = S * devs.size();
      size_t tableSize = 16;
      while (tableSize < 2 * expect) tableSize <<= 1;
      table.assign(tableSize, -1);
      newKeys.clear();
      newCost.clear();
      newParent.clear();
      newDev.clear();
      buf.resize(F2);
      for (size_t s = 0; s < S; ++s) {
        if (s > 0 && (s & 255) == 0) {
          if (o.cancelled()) return cancelledError();
          if (deadline.passed()) {  // keep the cheapest of what this step expanded so far
            timeUp = true;
            timeUpAt = t.taskNames[vi];
            cap = 1;
            break;
          }
        }
        const uint8_t* key = keys.data() + s * F;
        for (size_t j = 0; j < F2; ++j)
          if (fromSlot[j] >= 0) buf[j] = key[static_cast<size_t>(fromSlot[j])];
        for (size_t di = 0; di < devs.size(); ++di) {
          const uint8_t d = devs[di];
          double cst = cost[s] + base[di];
          for (size_t i = 0; i < ins.size(); ++i) {
            const uint8_t a = key[static_cast<size_t>(inSlot[i])];
            cst += commTab[(i * static_cast<size_t>(m) + a) * static_cast<size_t>(m) + d];
          }
          if (vSlot >= 0) buf[static_cast<size_t>(vSlot)] = d;
          const uint64_t h = hashKey(buf.data(), F2);
          size_t pos = static_cast<size_t>(h) & (tableSize - 1);
          for (;;) {
            const int32_t idx = table[pos];
            if (idx < 0) {
              table[pos] = static_cast<int32_t>(newCost.size());
              newKeys.insert(newKeys.end(), buf.begin(), buf.end());
              newCost.push_back(cst);
              newParent.push_back(static_cast<int32_t>(s));
              newDev.push_back(d);
              break;
            }
            // (no live values: every key is the empty key, and memcmp must not see the null data)
            if (F2 == 0 || std::memcmp(newKeys.data() + static_cast<size_t>(idx) * F2, buf.data(), F2) == 0) {
              if (cst < newCost[static_cast<size_t>(idx)]) {
                newCost[static_cast<size_t>(idx)] = cst;
                newParent[static_cast<size_t>(idx)] = static_cast<int32_t>(s);
                newDev[static_cast<size_t>(idx)] = d;
              }
              break;
            }
            pos = (pos + 1) & (tableSize - 1);
          }
        }
      }
      size_t S2 = newCost.size();
      if (!timeUp && deadline.passed()) {  // no beam sort past the deadline: the cheapest state only
        timeUp = true;
        timeUpAt = t.taskNames[vi];
        cap = 1;
      }
      maxSeen = std::max(maxSeen, S2);

      // Beam: keep the cheapest `limit` states when the frontier is too large.
      const size_t memCap = std::max<size_t>(1, kKeyBudgetBytes / (std::max<size_t>(1, F2) * std::max<size_t>(1, static_cast<size_t>(m))));
      const size_t limit = std::max<size_t>(1, std::min(cap, memCap));
      std::vector<int32_t> keep;
      if (S2 > limit) {
        if (!beamUsed) beamAt = t.taskNames[vi];
        beamUsed = true;
        keep.resize(S2);
        std::iota(keep.begin(), keep.end(), 0);
        auto cheaper = [&](int32_t a, int32_t b) {
          const double ca = newCost[static_cast<size_t>(a)], cb = newCost[static_cast<size_t>(b)];
          return ca != cb ? ca < cb : a < b;
        };
        std::nth_element(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(limit), keep.end(), cheaper);
        keep.resize(limit);
        std::sort(keep.begin(), keep.end());
        std::vector<uint8_t> k2(limit * F2);
        std::vector<double> c2(limit);
        std::vector<int32_t> p2(limit);
        std::vector<uint8_t> d2(limit);
        for (size_t i = 0; i < limit; ++i) {
          const auto src = static_cast<size_t>(keep[i]);
          if (F2) std::memcpy(k2.data() + i * F2, newKeys.data() + src * F2, F2);
          c2[i] = newCost[src];
          p2[i] = newParent[src];
          d2[i] = newDev[src];
        }
        newKeys.swap(k2);
        newCost.swap(c2);
        newParent.swap(p2);
        newDev.swap(d2);
        S2 = limit;
      }

      // New path nodes, then release the old states' nodes.
      std::vector<int32_t> newNode(S2);
      for (size_t i = 0; i < S2; ++i) newNode[i] = pool.make(node[static_cast<size_t>(newParent[i])], newDev[i]);
      for (int32_t x : node) pool.release(x);
      node.swap(newNode);
      keys.swap(newKeys);
      cost.swap(newCost);
      for (TaskId u : live) slotOf[static_cast<size_t>(u)] = -1;
      live.swap(nextLive);
      for (size_t j = 0; j < live.size(); ++j) slotOf[static_cast<size_t>(live[j])] = static_cast<int32_t>(j);

      // Time limit: narrow the beam when the projected run time exceeds it.
      if (!deadline.never() && cost.size() > 1) {
        const auto now = std::chrono::steady_clock::now();
        const double total = std::chrono::duration<double>(now - t0).count();
        const double el = std::chrono::duration<double>(now - loopStart).count();
        const double left = deadline.leftSec();
        const double projected = el * (n - k - 1) / (k + 1);
        if (el > 0.02 * (total + left) && projected > left) {
          const size_t narrowed = std::max<size_t>(1, cost.size() / 2);
          if (narrowed < cap) {
            if (!timeShrunk) shrinkAt = t.taskNames[vi];
            timeShrunk = true;
            cap = narrowed;
          }
        }
      }
      if ((k + 1) % reportEvery == 0)
        o.report(static_cast<double>(k + 1) / n, "pimdp: " + std::to_string(cost.size()) + " frontier states");
    }

    // Best final state; walk its path back.
    size_t best = 0;
    for (size_t s = 1; s < cost.size(); ++s)
      if (cost[s] < cost[best]) best = s;
    int32_t x = node[best];
    for (int32_t k = n - 1; k >= 0; --k) {
      plan.device[static_cast<size_t>(order[static_cast<size_t>(k)])] = pool.dev(x);
      x = pool.parent(x);
    }
    for (TaskId v : order) plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);

    if (info) {
      const bool exact = !beamUsed && !timeShrunk && !timeUp;
      info->notes.push_back("total-time objective " + std::to_string(cost[best]) + " us (devices in sequence)" +
                            (exact ? ", optimal for this objective" : ""));
      info->notes.push_back("largest frontier: " + std::to_string(maxSeen) + " states");
      info->notes.push_back("profiling runs: " + std::to_string(info->profilingRuns) + " (one all-on-d run per device" +
                            (m > 1 ? " + one run crossing devices on every edge)" : ")"));
      if (beamUsed)
        info->notes.push_back("frontier above " + std::to_string(static_cast<size_t>(std::min(maxStatesParam, 2e9))) +
                              " states at '" + beamAt + "': beam search keeping the cheapest states, not provably optimal");
      if (timeShrunk)
        info->notes.push_back("time limit: beam narrowed from '" + shrinkAt + "' on (down to " + std::to_string(cap) +
                              " states), not provably optimal");
      if (timeUp) info->notes.push_back("time limit reached at '" + timeUpAt + "': greedy from the cheapest state on, not provably optimal");
    }
    o.report(1.0, "pimdp: done");
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makePimDp() { return std::make_unique<PimDp>(); }

}  // namespace partex
