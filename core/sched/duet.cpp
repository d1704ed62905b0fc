// DUET (Zhang, Hu, Li, IPDPS 2021), reconstructed from its abstract as in docs/algorithms.md:
//  1. Coarse partition: cut the graph at fork and join nodes into chains (a node continues its
//     predecessor's chain when it is that predecessor's only consumer and has no other input). A chain
//     is also cut where the set of devices allowed to run its ops changes, since a subgraph is compiled
//     as one unit for one device. Then small subgraphs (best-device cost below "merge_fraction"
//     (default 0.5) times the mean subgraph cost of the initial partition) are merged into a neighbour
//     with the same allowed devices. A merge is only done with a neighbour joined by an edge whose
//     contraction cannot create a cycle and serialises no parallel branch: into a producer whose only
//     consumer is the subgraph, or a consumer whose only producer it is. (A branch of a fork or a join
//     is never folded into the fork or join node: that would put the branches of a parallel region
//     in sequence on one device, the parallelism DUET spreads over the CPU and the GPU.) So two
//     subgraphs that can run in parallel are never merged and every subgraph stays convex. Among candidates, the one with the largest mean transfer across the cut is
//     taken (merging removes the most transfer), ties by lower index.
//  2. Compiler-aware cost: W(S,d) from the cost table's group cost (one unit, not a sum of ops).
//  3. Greedy: subgraphs in topological order of the subgraph DAG, each on the device with the earliest
//     finish (W(S,d), transfers c(e,a,b) of every edge entering S, model inputs from the host, devices
//     in one exclusive group never overlap).
//  4. Correction: repeatedly try moving each subgraph to each other allowed device, re-simulate the
//     whole plan with the simulator (the one judge, per-op costs), apply the best strictly improving
//     move; stop when none improves, after "max_rounds" rounds (default: no limit), at the time limit
//     or when cancelled. Orders: every device runs its ops in the order of one global sequence (the
//     greedy schedule's start order, then the last simulation's start order after each applied move),
//     which is a linear extension of the dependencies, so no plan can deadlock.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <queue>
#include <set>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

constexpr double kHuge = 1e18;

double finiteOrHuge(double x) { return std::isfinite(x) ? x : kHuge; }

class Duet final : public Scheduler {
 public:
  std::string name() const override { return "duet"; }
  std::string title() const override { return "DUET (reconstructed)"; }
  std::string description() const override {
    return "Zhang et al. 2021: chains cut at forks/joins, small ones merged (param merge_fraction=0.5), group cost "
           "per subgraph, greedy earliest finish, then simulated correction moves (param max_rounds).";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    const Deadline deadline = o.startDeadline();
    const int n = t.numTasks(), m = t.numDevices();
    if (m > 64) return makeError("duet: at most 64 devices are supported, the platform has ", std::to_string(m));
    bool ok = true;
    const double mergeFraction = numParam(o, "merge_fraction", 0.5, ok);
    if (!ok || mergeFraction < 0) return makeError("duet: param merge_fraction must be a non-negative number");
    const double maxRoundsParam = numParam(o, "max_rounds", -1, ok);
    if (!ok) return makeError("duet: param max_rounds must be a number (negative: no limit)");
    const long maxRounds = maxRoundsParam < 0 ? -1 : static_cast<long>(maxRoundsParam);

    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<int32_t> topoPos = topoPositions(t, topo);
    std::vector<uint64_t> mask(static_cast<size_t>(n), 0);
    for (TaskId v = 0; v < n; ++v)
      for (DeviceId d = 0; d < m; ++d)
        if (c.allowed(t, v, d)) mask[static_cast<size_t>(v)] |= uint64_t{1} << d;
    auto distinct = [&](const std::vector<int32_t>& edgeIdx, bool src) {
      std::vector<TaskId> r;
      for (int32_t ei : edgeIdx) r.push_back(src ? t.edges[static_cast<size_t>(ei)].src : t.edges[static_cast<size_t>(ei)].dst);
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      return r;
    };

    // 1. Chains.
    std::vector<int32_t> sub(static_cast<size_t>(n), -1);
    std::vector<std::vector<TaskId>> members;
    std::vector<uint64_t> subMask;
    for (TaskId v : topo) {
      const auto preds = distinct(t.inEdges[static_cast<size_t>(v)], true);
      bool cont = false;
      if (preds.size() == 1) {
        const TaskId p = preds[0];
        const int32_t s = sub[static_cast<size_t>(p)];
        cont = distinct(t.outEdges[static_cast<size_t>(p)], false).size() == 1 && members[static_cast<size_t>(s)].back() == p &&
               subMask[static_cast<size_t>(s)] == mask[static_cast<size_t>(v)];
        if (cont) {
          members[static_cast<size_t>(s)].push_back(v);
          sub[static_cast<size_t>(v)] = s;
        }
      }
      if (!cont) {
        sub[static_cast<size_t>(v)] = static_cast<int32_t>(members.size());
        members.push_back({v});
        subMask.push_back(mask[static_cast<size_t>(v)]);
      }
    }
    const size_t chains = members.size();
    auto groupCost = [&](const std::vector<TaskId>& g, DeviceId d) {
      if (t.groupCost) return t.groupCost(g, d);
      double s = 0;
      for (TaskId v : g) s += t.w(v, d);
      return s;
    };
    auto bestCost = [&](size_t s) {
      double b = kInf;
      for (DeviceId d = 0; d < m; ++d)
        if (subMask[s] >> d & 1) b = std::min(b, groupCost(members[s], d));
      return b;
    };

    // Subgraph DAG (sets of neighbour subgraphs) and the mean transfer across each pair.
    std::vector<std::set<int32_t>> sPred(chains), sSucc(chains);
    for (const Edge& e : t.edges) {
      const int32_t a = sub[static_cast<size_t>(e.src)], b = sub[static_cast<size_t>(e.dst)];
      if (a == b) continue;
      sSucc[static_cast<size_t>(a)].insert(b);
      sPred[static_cast<size_t>(b)].insert(a);
    }
    auto crossComm = [&](int32_t a, int32_t b) {  // mean transfer over edges between a and b (either way)
      double x = 0;
      for (TaskId v : members[static_cast<size_t>(a)])
        for (int32_t ei : t.outEdges[static_cast<size_t>(v)])
          if (sub[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].dst)] == b) x += t.meanComm(ei);
      return x;
    };

    // Merge small subgraphs.
    std::vector<double> best(chains);
    double sumBest = 0;
    for (size_t s = 0; s < chains; ++s) {
      best[s] = bestCost(s);
      sumBest += best[s];
    }
    const double threshold = chains ? mergeFraction * sumBest / static_cast<double>(chains) : 0.0;
    std::vector<bool> alive(chains, true);
    int merges = 0;
    for (bool changed = true; changed;) {
      changed = false;
      if (o.cancelled()) return cancelledError();
      for (size_t s = 0; s < chains; ++s) {
        if (!alive[s] || !(best[s] < threshold)) continue;
        const auto si = static_cast<int32_t>(s);
        int32_t target = -1;
        double targetComm = -1;
        auto consider = [&](int32_t x) {
          if (subMask[static_cast<size_t>(x)] != subMask[s]) return;
          const double cc = crossComm(si, x) + crossComm(x, si);
          if (cc > targetComm || (cc == targetComm && x < target)) {
            target = x;
            targetComm = cc;
          }
        };
        for (int32_t p : sPred[s])
          if (sSucc[static_cast<size_t>(p)].size() == 1) consider(p);
        for (int32_t q : sSucc[s])
          if (sPred[static_cast<size_t>(q)].size() == 1) consider(q);
        if (target < 0) continue;
        // Merge s into target.
        const auto ti = static_cast<size_t>(target);
        for (TaskId v : members[s]) sub[static_cast<size_t>(v)] = target;
        members[ti].insert(members[ti].end(), members[s].begin(), members[s].end());
        std::sort(members[ti].begin(), members[ti].end(),
                  [&](TaskId a, TaskId b) { return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)]; });
        members[s].clear();
        for (int32_t p : sPred[s]) {
          sSucc[static_cast<size_t>(p)].erase(si);
          if (p != target) {
            sSucc[static_cast<size_t>(p)].insert(target);
            sPred[ti].insert(p);
          }
        }
        for (int32_t q : sSucc[s]) {
          sPred[static_cast<size_t>(q)].erase(si);
          if (q != target) {
            sPred[static_cast<size_t>(q)].insert(target);
            sSucc[ti].insert(q);
          }
        }
        sPred[s].clear();
        sSucc[s].clear();
        alive[s] = false;
        best[ti] = bestCost(ti);
        ++merges;
        changed = true;
      }
    }

    // Topological order of the subgraph DAG (Kahn, ties by the first member's topological position).
    std::vector<int32_t> subs;
    for (size_t s = 0; s < chains; ++s)
      if (alive[s]) subs.push_back(static_cast<int32_t>(s));
    auto firstPos = [&](int32_t s) { return topoPos[static_cast<size_t>(members[static_cast<size_t>(s)].front())]; };
    std::vector<int32_t> indeg(chains, 0);
    for (int32_t s : subs) indeg[static_cast<size_t>(s)] = static_cast<int32_t>(sPred[static_cast<size_t>(s)].size());
    auto later = [&](int32_t a, int32_t b) { return firstPos(a) > firstPos(b); };
    std::priority_queue<int32_t, std::vector<int32_t>, decltype(later)> ready(later);
    for (int32_t s : subs)
      if (indeg[static_cast<size_t>(s)] == 0) ready.push(s);
    std::vector<int32_t> subTopo;
    while (!ready.empty()) {
      const int32_t s = ready.top();
      ready.pop();
      subTopo.push_back(s);
      for (int32_t q : sSucc[static_cast<size_t>(s)])
        if (--indeg[static_cast<size_t>(q)] == 0) ready.push(q);
    }
    if (subTopo.size() != subs.size()) return makeError("duet: internal error: the subgraph graph has a cycle");
    o.report(0.05, "duet: " + std::to_string(subs.size()) + " subgraphs");

    // 3. Greedy earliest finish on subgraphs.
    std::vector<DeviceId> subDev(chains, -1);
    std::vector<double> subStart(chains, 0), subFinish(chains, 0);
    std::vector<double> devFree(static_cast<size_t>(m), 0.0);
    std::vector<int32_t> subRank(chains, 0);
    for (size_t i = 0; i < subTopo.size(); ++i) subRank[static_cast<size_t>(subTopo[i])] = static_cast<int32_t>(i);
    // Capacity: a subgraph goes only where its weights fit beside those already placed (a device
    // without room is passed over; when no device has room, the earliest finish anyway, and
    // Scheduler::schedule's repair or its one-line error decides).
    WeightLoad load(t);
    auto fitsOn = [&](int32_t s, DeviceId d) {
      if (!load.active()) return true;
      const auto& mem = members[static_cast<size_t>(s)];
      for (TaskId v : mem) load.add(v, d);
      const bool ok = load.fits(d);
      for (TaskId v : mem) load.remove(v, d);
      return ok;
    };
    for (int32_t s : subTopo) {
      if (o.cancelled()) return cancelledError();
      const auto si = static_cast<size_t>(s);
      DeviceId bestD = -1;
      double bestFinish = kInf, bestStart = 0;
      bool anyFits = false;
      for (DeviceId d = 0; d < m; ++d)
        if ((subMask[si] >> d & 1) && fitsOn(s, d)) anyFits = true;
      for (DeviceId d = 0; d < m; ++d) {
        if (!(subMask[si] >> d & 1)) continue;
        if (anyFits && !fitsOn(s, d)) continue;
        double ready = 0;
        for (TaskId v : members[si]) {
          const auto vi = static_cast<size_t>(v);
          if (!t.inputBytes.empty() && t.inputBytes[vi] > 0) ready = std::max(ready, finiteOrHuge(t.transferUs(t.host, d, t.inputBytes[vi])));
          for (int32_t ei : t.inEdges[vi]) {
            const int32_t ps = sub[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].src)];
            if (ps == s) continue;
            ready = std::max(ready, subFinish[static_cast<size_t>(ps)] + finiteOrHuge(t.comm(ei, subDev[static_cast<size_t>(ps)], d)));
          }
        }
        double start = std::max(ready, devFree[static_cast<size_t>(d)]);
        if (!t.exclusiveWith.empty())
          for (DeviceId p : t.exclusiveWith[static_cast<size_t>(d)]) start = std::max(start, devFree[static_cast<size_t>(p)]);
        const double finish = start + finiteOrHuge(groupCost(members[si], d));
        if (finish < bestFinish) {
          bestFinish = finish;
          bestStart = start;
          bestD = d;
        }
      }
      if (bestD < 0) return makeError("duet: no allowed device for the subgraph at '", t.taskNames[static_cast<size_t>(members[si].front())], "'");
      subDev[si] = bestD;
      for (TaskId v : members[si]) load.add(v, bestD);
      subStart[si] = bestStart;
      subFinish[si] = bestFinish;
      devFree[static_cast<size_t>(bestD)] = bestFinish;
    }

    // The global sequence: by subgraph start, then subgraph rank, then topological position.
    std::vector<TaskId> seq(topo);
    std::sort(seq.begin(), seq.end(), [&](TaskId a, TaskId b) {
      const auto sa = static_cast<size_t>(sub[static_cast<size_t>(a)]), sb = static_cast<size_t>(sub[static_cast<size_t>(b)]);
      if (subStart[sa] != subStart[sb]) return subStart[sa] < subStart[sb];
      if (subRank[sa] != subRank[sb]) return subRank[sa] < subRank[sb];
      return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)];
    });
    Plan plan;
    plan.device.assign(static_cast<size_t>(n), 0);
    auto build = [&]() {
      for (TaskId v = 0; v < n; ++v) plan.device[static_cast<size_t>(v)] = subDev[static_cast<size_t>(sub[static_cast<size_t>(v)])];
      plan.order.assign(static_cast<size_t>(m), {});
      for (TaskId v : seq) plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);
    };
    build();
    Simulator sim(t, o.sim);
    auto first = sim.run(plan);
    if (!first) return Error{first.message()};
    const double greedyMakespan = first->makespan;
    double cur = greedyMakespan;

    // 4. Correction.
    long rounds = 0;
    int applied = 0;
    bool timeUp = false;
    while (maxRounds < 0 || rounds < maxRounds) {
      ++rounds;
      double bestMs = cur;
      int32_t bestSub = -1;
      DeviceId bestTo = -1;
      for (size_t i = 0; i < subTopo.size() && !timeUp; ++i) {
        const int32_t s = subTopo[i];
        const auto si = static_cast<size_t>(s);
        const DeviceId orig = subDev[si];
        for (DeviceId d = 0; d < m; ++d) {
          if (d == orig || !(subMask[si] >> d & 1)) continue;
          // The correction never steps outside capacity: a move whose weights do not fit on d is not tried.
          if (load.active()) {
            for (TaskId v : members[si]) load.remove(v, orig);
            const bool ok = fitsOn(s, d);
            for (TaskId v : members[si]) load.add(v, orig);
            if (!ok) continue;
          }
          if (o.cancelled()) return cancelledError();
          if (deadline.passed()) {
            timeUp = true;
            break;
          }
          subDev[si] = d;
          build();
          auto ms = sim.makespan(plan);
          subDev[si] = orig;
          if (!ms) return Error{ms.message()};
          if (*ms < bestMs - 1e-9 * std::max(1.0, bestMs)) {
            bestMs = *ms;
            bestSub = s;
            bestTo = d;
          }
        }
        if (deadline.passed()) timeUp = true;
        if (i % 32 == 0)
          o.report(std::min(0.99, 0.1 + 0.89 * (o.timeLimitSec > 0 ? elapsed() / o.timeLimitSec : 0.0)),
                   "duet: correction round " + std::to_string(rounds) + ", makespan " + std::to_string(cur));
      }
      if (bestSub < 0) break;
      for (TaskId v : members[static_cast<size_t>(bestSub)]) load.move(v, subDev[static_cast<size_t>(bestSub)], bestTo);
      subDev[static_cast<size_t>(bestSub)] = bestTo;
      build();
      auto tl = sim.run(plan);
      if (!tl) return Error{tl.message()};
      cur = tl->makespan;
      ++applied;
      // Re-sequence by the simulated start times (a linear extension of the dependencies). Every
      // device keeps its simulated order, so the makespan stays; kept only if it does not get worse.
      std::vector<TaskId> resorted(seq);
      std::sort(resorted.begin(), resorted.end(), [&](TaskId a, TaskId b) {
        const double sa = tl->tasks[static_cast<size_t>(a)].start, sb = tl->tasks[static_cast<size_t>(b)].start;
        if (sa != sb) return sa < sb;
        return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)];
      });
      resorted.swap(seq);
      build();
      auto again = sim.makespan(plan);
      if (!again) return Error{again.message()};
      if (*again <= cur) {
        cur = *again;
      } else {
        resorted.swap(seq);
        build();
      }
      if (timeUp) break;
    }
    build();  // the last candidate tried may still be in `plan`
    auto fin = sim.makespan(plan);
    if (!fin) return Error{fin.message()};
    if (info) {
      info->notes.push_back(std::to_string(subs.size()) + " subgraphs (" + std::to_string(chains) + " chains, " +
                            std::to_string(merges) + " merges)");
      info->notes.push_back("greedy makespan " + std::to_string(greedyMakespan) + " us, after " + std::to_string(applied) +
                            " correction moves " + std::to_string(*fin) + " us");
      if (timeUp) info->notes.push_back("time limit reached during the correction");
    }
    o.report(1.0, "duet: done");
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeDuet() { return std::make_unique<Duet>(); }

}  // namespace partex
