// Hardware-aware coarse subgraphs (Zhao et al., OSDI 2023), reconstructed from its abstract as in
// docs/algorithms.md: partition the ops into fewer, larger kernels by a DP over a topological order
// with the group cost W(S,d):
//     best[i] = min_{j < i} best[j] + min_d W(ops j+1..i, d)
// over groups of consecutive positions of one topological order. Such a group is always convex: a
// path between two members only passes through positions between them, so no path leaves the group
// and re-enters it. The topological order is depth-first (a ready op that the last op feeds goes
// next), which keeps producer-consumer chains together. Constraints on a group on device d:
//  - every member may run on d (pinned and forbidden devices honoured);
//  - its peak live bytes fit on chip: walking the members in order, the weights and output of the
//    current op plus the internal tensors produced earlier and still needed by later members must stay
//    within d's on-chip bytes (a single op always fits; devices without on-chip memory have no limit);
//  - at most "max_group_ops" members (default 16, which bounds the DP at O(n * 16 * |D|) group costs;
//    without it devices with no on-chip limit would take the whole model as one kernel).
// Each group goes to the device minimising W(S,d). Param "mode": "dp" (default), "elementwise" (the
// TVM-like baseline: a group is one op followed by a chain of element-wise ops, each the only consumer
// of the previous one) or "memory" (the AStitch-like baseline: groups of memory-bound ops only, a
// compute op (Conv/MatMul class) stays alone). The group cost is blockTimeUs on all cores (the
// simulator's rule): on a device that compiles blocks (Device::compilesBlocks) a group of several ops
// becomes one of the plan's blocks (Plan::blocks), one kernel with its intermediates on chip; elsewhere
// the members run one by one and cost their sum, so grouping gains nothing there. Groups appear as
// consecutive ops in each device's order and are summarised in SchedInfo.notes. At the time limit the
// rest of the DP uses single-op groups (notes say so).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <unordered_map>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

bool isComputeOp(const CostTable& t, TaskId v) {
  const auto vi = static_cast<size_t>(v);
  if (!t.work.empty() && t.work[vi].cls != OpClass::Unknown)
    return t.work[vi].cls == OpClass::Conv || t.work[vi].cls == OpClass::MatMul;
  static const std::set<std::string> kCompute = {"Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "FusedGemm", "FusedMatMul",
                                                 "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"};
  return vi < t.taskTypes.size() && kCompute.count(t.taskTypes[vi]) != 0;
}

bool isElementwise(const CostTable& t, TaskId v) {
  const auto vi = static_cast<size_t>(v);
  if (!t.work.empty() && t.work[vi].cls != OpClass::Unknown) return t.work[vi].cls == OpClass::Elementwise;
  static const std::set<std::string> kElementwise = {"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid",
                                                     "HardSwish", "Add", "Sub", "Mul", "Div", "Elu", "Selu", "Gelu",
                                                     "Softplus", "Relu6"};
  return vi < t.taskTypes.size() && kElementwise.count(t.taskTypes[vi]) != 0;
}

class CoarseSubgraphs final : public Scheduler {
 public:
  std::string name() const override { return "coarse"; }
  std::string title() const override { return "Hardware-aware coarse subgraphs (reconstructed)"; }
  std::string description() const override {
    return "Zhao et al. OSDI 2023: DP over a topological order forming convex groups that fit on chip, each on the "
           "device with the smallest group cost (params max_group_ops=16, mode=dp|elementwise|memory).";
  }

  bool capacityByPenalty() const override { return true; }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const Deadline deadline = o.startDeadline();
    const int n = t.numTasks(), m = t.numDevices();
    bool ok = true;
    const double maxOpsParam = numParam(o, "max_group_ops", 16, ok);
    if (!ok || maxOpsParam < 1) return makeError("coarse: param max_group_ops must be a number >= 1");
    const size_t maxOps = static_cast<size_t>(std::min(maxOpsParam, 1e6));
    std::string mode = "dp";
    if (auto it = o.params.find("mode"); it != o.params.end() && !trim(it->second).empty()) mode = trim(it->second);
    if (mode != "dp" && mode != "elementwise" && mode != "memory")
      return makeError("coarse: param mode must be 'dp', 'elementwise' or 'memory', got '", mode, "'");

    // Depth-first topological order.
    std::vector<TaskId> order;
    order.reserve(static_cast<size_t>(n));
    {
      std::vector<int32_t> missing(static_cast<size_t>(n), 0);
      for (const Edge& e : t.edges) ++missing[static_cast<size_t>(e.dst)];
      std::vector<TaskId> stack;
      for (TaskId v = n - 1; v >= 0; --v)
        if (missing[static_cast<size_t>(v)] == 0) stack.push_back(v);
      while (!stack.empty()) {
        const TaskId v = stack.back();
        stack.pop_back();
        order.push_back(v);
        std::vector<TaskId> now;
        for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
          const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
          if (--missing[static_cast<size_t>(s)] == 0) now.push_back(s);
        }
        std::sort(now.begin(), now.end(), std::greater<>());
        stack.insert(stack.end(), now.begin(), now.end());  // lowest id on top
      }
    }
    std::vector<int32_t> pos(static_cast<size_t>(n), 0);
    for (size_t i = 0; i < order.size(); ++i) pos[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);

    // A group's cost is what the simulator charges for it as a block on all cores (blockTimeUs): one
    // kernel on a device that compiles blocks, the members one by one elsewhere.
    std::vector<BlockTimer> timers;  // per device: the group being grown
    for (DeviceId d = 0; d < m; ++d) timers.emplace_back(t, d);
    auto compiles = [&](DeviceId d) {
      return static_cast<size_t>(d) < t.deviceCompilesBlocks.size() && t.deviceCompilesBlocks[static_cast<size_t>(d)] != 0;
    };
    auto onChipOf = [&](DeviceId d) {
      return static_cast<size_t>(d) < t.deviceOnChipBytes.size() ? t.deviceOnChipBytes[static_cast<size_t>(d)] : int64_t{0};
    };
    // Peak live bytes of the group order[j..i) (positions), members walked in order.
    auto peakLive = [&](size_t j, size_t i) -> int64_t {
      if (t.work.empty()) return 0;
      int64_t live = 0, peak = 0;
      std::unordered_map<TaskId, int32_t> lastUser;  // producer -> last internal consumer position
      for (size_t p = j; p < i; ++p)
        for (int32_t ei : t.inEdges[static_cast<size_t>(order[p])]) {
          const TaskId u = t.edges[static_cast<size_t>(ei)].src;
          const auto up = static_cast<size_t>(pos[static_cast<size_t>(u)]);
          if (up >= j && up < i) lastUser[u] = std::max(lastUser[u], static_cast<int32_t>(p));
        }
      std::vector<std::pair<int32_t, int64_t>> frees;
      for (size_t p = j; p < i; ++p) {
        const TaskId v = order[p];
        const OpWork& w = t.work[static_cast<size_t>(v)];
        peak = std::max(peak, live + w.bytesReadWeights + w.bytesWritten);
        auto it = lastUser.find(v);
        if (it != lastUser.end()) live += w.bytesWritten;  // stays on chip for a later member
        for (auto& f : frees)
          if (f.first == static_cast<int32_t>(p)) {
            live -= f.second;
            f.second = 0;
          }
        if (it != lastUser.end()) frees.push_back({it->second, w.bytesWritten});
      }
      return peak;
    };
    // Mode restrictions on the group order[j..i).
    auto modeAllows = [&](size_t j, size_t i) {
      if (i - j <= 1 || mode == "dp") return true;
      if (mode == "memory") {
        for (size_t p = j; p < i; ++p)
          if (isComputeOp(t, order[p])) return false;
        return true;
      }
      // elementwise: order[j] then element-wise ops, each the only consumer of the previous one.
      for (size_t p = j + 1; p < i; ++p) {
        const TaskId prev = order[p - 1], v = order[p];
        if (!isElementwise(t, v)) return false;
        const auto& outs = t.outEdges[static_cast<size_t>(prev)];
        if (outs.size() != 1 || t.edges[static_cast<size_t>(outs[0])].dst != v) return false;
      }
      return true;
    };

    const size_t N = static_cast<size_t>(n);
    std::vector<double> best(N + 1, kInf);
    std::vector<size_t> from(N + 1, 0);
    std::vector<DeviceId> devOf(N + 1, -1);
    best[0] = 0;
    bool timeUp = false;
    std::string timeUpAt;
    for (size_t i = 1; i <= N; ++i) {
      if (o.cancelled()) return cancelledError();
      if (!timeUp && deadline.passed()) {
        timeUp = true;
        timeUpAt = t.taskNames[static_cast<size_t>(order[i - 1])];
      }
      const size_t cap = timeUp ? 1 : maxOps;
      for (auto& tm : timers) tm.clear();
      std::vector<bool> devOk(static_cast<size_t>(m), true);
      for (size_t len = 1; len <= std::min(i, cap); ++len) {
        const size_t j = i - len;
        const TaskId v = order[j];
        for (auto& tm : timers) tm.add(v);
        bool any = false;
        for (DeviceId d = 0; d < m; ++d) {
          devOk[static_cast<size_t>(d)] = devOk[static_cast<size_t>(d)] && c.allowed(t, v, d);
          any = any || devOk[static_cast<size_t>(d)];
        }
        if (!any) break;  // larger groups only lose devices
        if (!modeAllows(j, i)) continue;
        const int64_t peak = len > 1 ? peakLive(j, i) : 0;
        bool anyFit = false;
        for (DeviceId d = 0; d < m; ++d) {
          if (!devOk[static_cast<size_t>(d)]) continue;
          const int64_t chip = onChipOf(d);
          if (len > 1 && chip > 0 && peak > chip) continue;
          anyFit = true;
          const double W = timers[static_cast<size_t>(d)].timeUs(0);
          if (!(W < kInf)) continue;
          const double x = best[j] + W;
          if (x < best[i] - 1e-12 * std::max(1.0, std::fabs(x))) {
            best[i] = x;
            from[i] = j;
            devOf[i] = d;
          }
        }
        if (!anyFit) break;  // peak live bytes only grow with the group
      }
      if (devOf[i] < 0) return makeError("coarse: no device can run '", t.taskNames[static_cast<size_t>(order[i - 1])], "'");
      if ((i & 255) == 0) o.report(static_cast<double>(i) / static_cast<double>(N), "coarse: grouping");
    }

    Plan plan;
    plan.device.assign(N, 0);
    plan.order.assign(static_cast<size_t>(m), {});
    size_t groups = 0, largest = 0;
    for (size_t i = N; i > 0; i = from[i]) {
      ++groups;
      largest = std::max(largest, i - from[i]);
      for (size_t p = from[i]; p < i; ++p) plan.device[static_cast<size_t>(order[p])] = devOf[i];
      if (i - from[i] > 1 && compiles(devOf[i])) {
        PlanBlock b;
        b.device = devOf[i];
        b.tasks.assign(order.begin() + static_cast<std::ptrdiff_t>(from[i]), order.begin() + static_cast<std::ptrdiff_t>(i));
        plan.blocks.push_back(std::move(b));
      }
    }
    std::reverse(plan.blocks.begin(), plan.blocks.end());
    for (TaskId v : order) plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);
    if (info) {
      double perOp = 0;
      for (TaskId v = 0; v < n; ++v) {
        double b = kInf;
        for (DeviceId d = 0; d < m; ++d)
          if (c.allowed(t, v, d)) b = std::min(b, t.w(v, d));
        perOp += b;
      }
      info->notes.push_back("mode " + mode + ": " + std::to_string(groups) + " groups for " + std::to_string(n) + " ops (largest " +
                            std::to_string(largest) + "); summed group cost " + std::to_string(best[N]) + " us against " +
                            std::to_string(perOp) + " us op by op on each op's best device");
      if (timeUp) info->notes.push_back("time limit reached: single-op groups from '" + timeUpAt + "' on");
    }
    o.report(1.0, "coarse: done");
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeCoarseSubgraphs() { return std::make_unique<CoarseSubgraphs>(); }

}  // namespace partex
