// PartitionTuner (Yu et al., ETRI Journal 45(2), 2023), as in docs/algorithms.md:
//  1. Profiles: each op alone on every device (w(v,d)); a fused pair p+v where the device fuses,
//     W({p,v},d) from the cost table's group cost. A device fuses when it is not a CPU (task graphs:
//     every non-host device); a fusable pair is a Conv/Gemm/MatMul-like op followed by an element-wise
//     op that is its only consumer.
//  2. Branch extraction: over a topological order, a node with one input continues the branch of that
//     input when the input is still the end of its branch (the first such consumer of a fork
//     continues, the others start new branches); a join (several inputs) or an entry starts a new
//     branch. Branches are handled by increasing level (longest path from an entry) of their head.
//  3. Per branch, a Viterbi DP along the chain, O(|V| |D|^2):
//        fused:  cost[v][b] = cost[p][b] - w(p,b) + W(p+v,b)       (same device b, pair fusable on b)
//        same:   cost[v][b] = cost[p][b] + w(v,b)
//        switch: cost[v][b] = cost[p][b'] + c(p->v) + w(v,b) + penalty      (b' != b)
//  4. The graph is cut where the device changes; 5. independent branches run concurrently on their
//     devices (the simulator does that).
// Two variants:
//  - "partitiontuner" (faithful): c(p->v) is the profiled transfer time of the tensor (the mean over
//    device pairs, as one measurement per tensor gives), a per-switch call overhead "penalty_us"
//    (default 50 us: a driver submission plus a synchronisation on an embedded NPU is tens of
//    microseconds; NEST-C pays it at every CPU<->NPU partition boundary), each branch optimised in
//    isolation (its head starts from w(head,b) alone), and the per-device order of every
//    assignment-only algorithm (decreasing upward rank).
//  - "partitiontuner-clean": the same DP with exact transfers c(e,b',b) from the cost table, no
//    penalty, model input/output transfers to the host, boundary costs at a branch head from the
//    devices already chosen for its inputs, and the order taken from whichever simulates faster:
//    upward rank, or a list schedule (insertion, EFT timeline) in branch order.
#include <algorithm>
#include <cmath>
#include <set>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

constexpr double kHuge = 1e18;  ///< Unreachable transfers, kept finite so that the DP stays total.

double finiteOrHuge(double x) { return std::isfinite(x) ? x : kHuge; }

bool isAnchorOp(const CostTable& t, TaskId v) {
  const auto vi = static_cast<size_t>(v);
  if (!t.work.empty() && t.work[vi].cls != OpClass::Unknown)
    return t.work[vi].cls == OpClass::Conv || t.work[vi].cls == OpClass::MatMul;
  static const std::set<std::string> kAnchors = {"Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "FusedGemm",
                                                 "FusedMatMul", "QLinearConv", "QLinearMatMul", "ConvInteger",
                                                 "MatMulInteger"};
  return vi < t.taskTypes.size() && kAnchors.count(t.taskTypes[vi]) != 0;
}

bool isElementwiseOp(const CostTable& t, TaskId v) {
  const auto vi = static_cast<size_t>(v);
  if (!t.work.empty() && t.work[vi].cls != OpClass::Unknown) return t.work[vi].cls == OpClass::Elementwise;
  static const std::set<std::string> kElementwise = {"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid",
                                                     "HardSwish", "Add", "Sub", "Mul", "Div", "Elu", "Selu", "Gelu",
                                                     "Softplus", "Relu6"};
  return vi < t.taskTypes.size() && kElementwise.count(t.taskTypes[vi]) != 0;
}

bool deviceFuses(const CostTable& t, DeviceId d) {
  const auto di = static_cast<size_t>(d);
  if (di < t.deviceKinds.size()) return t.deviceKinds[di] != "cpu";
  return d != t.host;
}

class PartitionTuner final : public Scheduler {
 public:
  explicit PartitionTuner(bool faithful) : faithful_(faithful) {}
  std::string name() const override { return faithful_ ? "partitiontuner" : "partitiontuner-clean"; }
  std::string title() const override { return faithful_ ? "PartitionTuner" : "PartitionTuner (clean)"; }
  std::string description() const override {
    return faithful_ ? "Yu et al. 2023: branch extraction, per-branch Viterbi DP with fusion, profiled transfers and a "
                       "per-switch penalty (param penalty_us=50)."
                     : "PartitionTuner's DP with exact transfers from the cost table, no penalty, boundary costs from the "
                       "actual predecessor devices, order chosen by simulation.";
  }

  bool capacityByPenalty() const override { return true; }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const int n = t.numTasks(), m = t.numDevices();
    bool ok = true;
    const double penalty = faithful_ ? numParam(o, "penalty_us", 50.0, ok) : 0.0;
    if (!ok || penalty < 0) return makeError(name(), ": param penalty_us must be a non-negative number");

    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<int32_t> topoPos = topoPositions(t, topo);
    auto predsOf = [&](TaskId v) {
      std::vector<TaskId> p;
      for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) p.push_back(t.edges[static_cast<size_t>(ei)].src);
      std::sort(p.begin(), p.end());
      p.erase(std::unique(p.begin(), p.end()), p.end());
      return p;
    };

    // 2. Branch extraction.
    std::vector<int32_t> level(static_cast<size_t>(n), 0);
    std::vector<int32_t> branchOf(static_cast<size_t>(n), -1);
    std::vector<std::vector<TaskId>> branches;
    for (TaskId v : topo) {
      const auto preds = predsOf(v);
      for (TaskId p : preds) level[static_cast<size_t>(v)] = std::max(level[static_cast<size_t>(v)], level[static_cast<size_t>(p)] + 1);
      if (preds.size() == 1 && branches[static_cast<size_t>(branchOf[static_cast<size_t>(preds[0])])].back() == preds[0]) {
        const int32_t b = branchOf[static_cast<size_t>(preds[0])];
        branches[static_cast<size_t>(b)].push_back(v);
        branchOf[static_cast<size_t>(v)] = b;
      } else {
        branchOf[static_cast<size_t>(v)] = static_cast<int32_t>(branches.size());
        branches.push_back({v});
      }
    }
    std::vector<int32_t> byLevel(branches.size());
    for (size_t b = 0; b < branches.size(); ++b) byLevel[b] = static_cast<int32_t>(b);
    std::sort(byLevel.begin(), byLevel.end(), [&](int32_t a, int32_t b) {
      const TaskId ha = branches[static_cast<size_t>(a)].front(), hb = branches[static_cast<size_t>(b)].front();
      const int32_t la = level[static_cast<size_t>(ha)], lb = level[static_cast<size_t>(hb)];
      return la != lb ? la < lb : topoPos[static_cast<size_t>(ha)] < topoPos[static_cast<size_t>(hb)];
    });

    auto hostIo = [&](TaskId v, DeviceId d) {
      if (faithful_) return 0.0;
      double x = 0;
      const auto vi = static_cast<size_t>(v);
      if (!t.inputBytes.empty() && t.inputBytes[vi] > 0) x += finiteOrHuge(t.transferUs(t.host, d, t.inputBytes[vi]));
      if (!t.outputBytes.empty() && t.outputBytes[vi] > 0) x += finiteOrHuge(t.transferUs(d, t.host, t.outputBytes[vi]));
      return x;
    };
    auto edgeBetween = [&](TaskId p, TaskId v) {
      for (int32_t ei : t.inEdges[static_cast<size_t>(v)])
        if (t.edges[static_cast<size_t>(ei)].src == p) return ei;
      return int32_t{-1};
    };

    // 3. Viterbi per branch.
    std::vector<DeviceId> dev(static_cast<size_t>(n), -1);
    const size_t M = static_cast<size_t>(m);
    int switches = 0, fusedPairs = 0;
    std::vector<double> cost, prevCost;
    for (size_t bi = 0; bi < byLevel.size(); ++bi) {
      if (o.cancelled()) return cancelledError();
      const auto& chain = branches[static_cast<size_t>(byLevel[bi])];
      const size_t L = chain.size();
      std::vector<double> dp(L * M, kInf);
      std::vector<int32_t> from(L * M, -1);  // previous device
      std::vector<uint8_t> fused(L * M, 0);
      // Head: its own cost, plus (clean) the transfers from the devices chosen for its inputs.
      const TaskId head = chain[0];
      for (DeviceId b = 0; b < m; ++b) {
        if (!c.allowed(t, head, b)) continue;
        double x = t.w(head, b) + hostIo(head, b);
        if (!faithful_)
          for (int32_t ei : t.inEdges[static_cast<size_t>(head)]) {
            const TaskId u = t.edges[static_cast<size_t>(ei)].src;
            x += finiteOrHuge(t.comm(ei, dev[static_cast<size_t>(u)], b));
          }
        dp[static_cast<size_t>(b)] = x;
      }
      for (size_t i = 1; i < L; ++i) {
        const TaskId p = chain[i - 1], v = chain[i];
        const int32_t e = edgeBetween(p, v);
        const bool pairFusable = isAnchorOp(t, p) && isElementwiseOp(t, v) && t.outEdges[static_cast<size_t>(p)].size() == 1 &&
                                 (t.outputBytes.empty() || t.outputBytes[static_cast<size_t>(p)] == 0);
        // The faithful mode's mean transfer of the edge, once per position (meanComm is O(m^2): inside the
        // device pairs it made a workflow on 96 processors take 40 s).
        const double meanE = faithful_ ? finiteOrHuge(t.meanComm(e)) : 0.0;
        for (DeviceId b = 0; b < m; ++b) {
          if (!c.allowed(t, v, b)) continue;
          const double own = t.w(v, b) + hostIo(v, b);
          double best = kInf;
          int32_t arg = -1;
          bool f = false;
          const double same = dp[(i - 1) * M + static_cast<size_t>(b)];
          if (same < kInf) {
            best = same + own;
            arg = b;
            if (pairFusable && deviceFuses(t, b) && !fused[(i - 1) * M + static_cast<size_t>(b)]) {
              const double W = t.groupCost ? t.groupCost({p, v}, b) : kInf;
              const double x = same - t.w(p, b) + W + hostIo(v, b);
              if (W < kInf && x < best) {
                best = x;
                f = true;
              }
            }
          }
          for (DeviceId a = 0; a < m; ++a) {
            if (a == b) continue;
            const double prev = dp[(i - 1) * M + static_cast<size_t>(a)];
            if (!(prev < kInf)) continue;
            const double comm = faithful_ ? meanE : finiteOrHuge(t.comm(e, a, b));
            const double x = prev + comm + own + penalty;
            if (x < best) {
              best = x;
              arg = a;
              f = false;
            }
          }
          dp[i * M + static_cast<size_t>(b)] = best;
          from[i * M + static_cast<size_t>(b)] = arg;
          fused[i * M + static_cast<size_t>(b)] = f ? 1 : 0;
        }
      }
      // Back-track from the cheapest device of the tail.
      DeviceId b = -1;
      for (DeviceId d = 0; d < m; ++d)
        if (dp[(L - 1) * M + static_cast<size_t>(d)] < kInf && (b < 0 || dp[(L - 1) * M + static_cast<size_t>(d)] < dp[(L - 1) * M + static_cast<size_t>(b)]))
          b = d;
      if (b < 0) return makeError(name(), ": no feasible device sequence for the branch at '", t.taskNames[static_cast<size_t>(head)], "'");
      for (size_t i = L; i-- > 0;) {
        dev[static_cast<size_t>(chain[i])] = b;
        if (fused[i * M + static_cast<size_t>(b)]) ++fusedPairs;
        const int32_t a = from[i * M + static_cast<size_t>(b)];
        if (i > 0) {
          if (a != b) ++switches;
          b = a;
        }
      }
      if (o.trace) {
        // Teaching mode: one step per chain position, with the DP row and the device back-tracking chose.
        for (size_t i = 0; i < L; ++i) {
          TraceStep st;
          st.kind = "dp";
          st.task = chain[i];
          st.ready = chain;
          st.finish.assign(dp.begin() + static_cast<std::ptrdiff_t>(i * M), dp.begin() + static_cast<std::ptrdiff_t>((i + 1) * M));
          st.chosen = dev[static_cast<size_t>(chain[i])];
          const int32_t prevDev = i > 0 ? dev[static_cast<size_t>(chain[i - 1])] : -1;
          st.note = name() + ": branch " + std::to_string(bi + 1) + " of " + std::to_string(byLevel.size()) + ", step " +
                    std::to_string(i + 1) + " of " + std::to_string(L) + ": '" + t.taskNames[static_cast<size_t>(chain[i])] +
                    "' on " + t.deviceIds[static_cast<size_t>(st.chosen)] +
                    (fused[i * M + static_cast<size_t>(st.chosen)] ? " (fused with its producer)"
                     : i > 0 && prevDev != st.chosen                ? " (a switch: pays the transfer" + std::string(faithful_ ? " and the penalty)" : ")")
                                                                    : "");
          o.trace(st);
        }
      }
      if (bi % 64 == 0) o.report(0.8 * static_cast<double>(bi + 1) / static_cast<double>(byLevel.size()), name() + ": branch DP");
    }

    // 4-5. Cut and order.
    Plan plan = finishAssignmentPlan(t, dev, name(), o);
    if (!faithful_) {
      // Branches scheduled with the simulator: a list schedule in branch order against the rank order.
      ListTimeline tl(t, o.sim);
      for (int32_t b : byLevel)
        for (TaskId v : branches[static_cast<size_t>(b)]) tl.place(v, dev[static_cast<size_t>(v)]);
      Plan listPlan = tl.toPlan(topoPos, name());
      listPlan.optionsJson = plan.optionsJson;
      Simulator sim(t, o.sim);
      auto a = sim.makespan(plan);
      auto bm = sim.makespan(listPlan);
      if (!a) return Error{a.message()};
      if (!bm) return Error{bm.message()};
      if (*bm < *a) plan = std::move(listPlan);
      if (info) info->notes.push_back(std::string("order: ") + (*bm < *a ? "list schedule in branch order" : "upward rank"));
    }
    if (info) {
      info->notes.push_back(std::to_string(branches.size()) + " branches, " + std::to_string(switches) + " device switches inside branches, " +
                            std::to_string(fusedPairs) + " fused pairs");
      if (faithful_) info->notes.push_back("penalty " + std::to_string(penalty) + " us per switch; transfers: profiled mean per tensor");
    }
    o.report(1.0, name() + ": done");
    return plan;
  }

 private:
  bool faithful_;
};

}  // namespace

std::unique_ptr<Scheduler> makePartitionTuner(bool faithful) { return std::make_unique<PartitionTuner>(faithful); }

}  // namespace partex
