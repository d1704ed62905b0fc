// DLFusion (Liu et al., arXiv 2011.05630, 2020), reconstructed from its abstract as in
// docs/algorithms.md. DLFusion tunes one multi-core accelerator with on-chip memory; its two knobs
// are the fusion scheme and the number of cores per fused block, and the plan carries both
// (Plan::blocks), so that the simulator charges what was chosen:
//  - The accelerator: among the non-forbidden non-host devices that are not CPUs (a CPU mode is no
//    accelerator; when every other device is a CPU, any non-host device), the one that compiles blocks
//    with the most cores; else the one with the most cores (> 1). Without one, every such device counts
//    as 1 core and the one with the smallest all-on-it time is used; SchedInfo.notes says so. Ops the
//    accelerator may not run go to the host (or, when the host is not allowed either, to their fastest
//    allowed device).
//  - The time of a block S on k cores is the cost model's, blockTimeUs(S, acc, k) (cost/costtable.h):
//    one launch, intermediates kept on chip, compute spread over the k cores by output channels (a
//    layer whose channels do not split evenly wastes cores) and a barrier of ceil(log2 k) levels
//    (Device::coreSyncUs), so small layers want few cores and big ones all of them.
//  - Per layer, the best core count k*(v) = argmin_k T({v},k), from its operation and channel counts.
//  - Per chain of accelerator ops (maximal runs of consecutive accelerator ops in a topological order
//    that keeps accelerator ops together; a run of a topological order is convex), the DP
//        best[i] = min_j best[j] + min_k T(ops j+1..i fused, k)
//    with a block fitting on chip: weights + internal tensors <= on_chip_bytes * k / C (each core brings
//    its share of the on-chip memory; a single op always fits, it streams from memory; no on-chip size
//    means no limit). Param mode=heuristic (default: k among the members' best counts and the powers of
//    two, the core counts a Cambricon compiler accepts for model parallelism; blocks of at most
//    max_block = 64 layers), mode=oracle (the reduced brute force: every k from 1 to C, blocks of up to
//    max_block = 256 layers) or mode=none (the
//    paper's "no optimisation" baseline: every layer compiled alone on the default core count, param
//    default_cores, default 1, as a compiler that is not told a core count builds a layer for one core).
//  Each device runs its ops in the DP's topological order; the blocks and their core counts are the
//  plan's (and listed in SchedInfo.notes with the search time). On a device that compiles no blocks
//  (Device::compilesBlocks) the knobs do not exist: the plan has no blocks and the notes say so.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

bool isForbidden(const Constraints& c, DeviceId d) {
  return std::find(c.forbidden.begin(), c.forbidden.end(), d) != c.forbidden.end();
}

class DlFusion final : public Scheduler {
 public:
  std::string name() const override { return "dlfusion"; }
  std::string title() const override { return "DLFusion (reconstructed)"; }
  std::string description() const override {
    return "Liu et al. 2020: per-layer best core count on a multi-core accelerator, then a DP choosing fusion blocks "
           "and one core count per block (params mode=heuristic|oracle|none, max_block, default_cores=1); other ops on the host.";
  }

  bool capacityByPenalty() const override { return true; }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const Deadline deadline = o.startDeadline();
    const int n = t.numTasks(), m = t.numDevices();
    const auto searchStart = std::chrono::steady_clock::now();
    bool ok = true;
    const double defaultCores = numParam(o, "default_cores", 1.0, ok);
    if (!ok || defaultCores < 1 || defaultCores != std::floor(defaultCores))
      return makeError("dlfusion: param default_cores must be an integer >= 1");
    std::string mode = "heuristic";
    if (auto it = o.params.find("mode"); it != o.params.end() && !trim(it->second).empty()) mode = trim(it->second);
    if (mode != "heuristic" && mode != "oracle" && mode != "none")
      return makeError("dlfusion: param mode must be 'heuristic', 'oracle' or 'none', got '", mode, "'");
    const bool oracle = mode == "oracle", none = mode == "none";
    std::vector<std::string> notes;

    // The accelerator.
    auto coresOf = [&](DeviceId d) {
      return static_cast<size_t>(d) < t.deviceCores.size() ? std::max(1, t.deviceCores[static_cast<size_t>(d)]) : 1;
    };
    auto fallback = [&](TaskId v) -> DeviceId {
      if (c.allowed(t, v, t.host)) return t.host;
      return argminAllowed(t, c, v, [&](DeviceId d) { return t.w(v, d); });
    };
    // Candidates: non-host devices that are not forbidden and not CPUs (a CPU mode such as "CPU
    // parallel" is no accelerator); when there is none, any non-host device.
    std::vector<DeviceId> candidates;
    for (int pass = 0; pass < 2 && candidates.empty(); ++pass)
      for (DeviceId d = 0; d < m; ++d) {
        if (d == t.host || isForbidden(c, d)) continue;
        const bool cpu = static_cast<size_t>(d) < t.deviceKinds.size() && t.deviceKinds[static_cast<size_t>(d)] == "cpu";
        if (pass == 0 && cpu) continue;
        candidates.push_back(d);
      }
    auto compiles = [&](DeviceId d) {
      return static_cast<size_t>(d) < t.deviceCompilesBlocks.size() && t.deviceCompilesBlocks[static_cast<size_t>(d)] != 0;
    };
    DeviceId acc = -1;
    for (DeviceId d : candidates)
      if (coresOf(d) > 1 && (acc < 0 || std::make_pair(compiles(d), coresOf(d)) > std::make_pair(compiles(acc), coresOf(acc)))) acc = d;
    if (acc < 0) {
      double bestTotal = kInf;
      for (DeviceId d : candidates) {
        double total = 0;
        for (TaskId v = 0; v < n; ++v) total += c.allowed(t, v, d) ? t.w(v, d) : t.w(v, fallback(v));
        if (total < bestTotal) {
          bestTotal = total;
          acc = d;
        }
      }
      notes.push_back("no multi-core accelerator: every non-host device counts as 1 core");
    }
    const int C = acc >= 0 ? (coresOf(acc) > 1 ? coresOf(acc) : 1) : 1;

    // Assignment and a topological order that keeps accelerator ops together.
    std::vector<DeviceId> dev(static_cast<size_t>(n));
    std::vector<bool> onAcc(static_cast<size_t>(n), false);
    for (TaskId v = 0; v < n; ++v) {
      onAcc[static_cast<size_t>(v)] = acc >= 0 && c.allowed(t, v, acc);
      dev[static_cast<size_t>(v)] = onAcc[static_cast<size_t>(v)] ? acc : fallback(v);
    }
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<int32_t> topoPos = topoPositions(t, topo);
    std::vector<TaskId> order;
    {
      std::vector<int32_t> missing(static_cast<size_t>(n), 0);
      for (const Edge& e : t.edges) ++missing[static_cast<size_t>(e.dst)];
      auto cmp = [&](TaskId a, TaskId b) { return topoPos[static_cast<size_t>(a)] > topoPos[static_cast<size_t>(b)]; };
      std::vector<TaskId> readyAcc, readyOther;  // min-heaps by topological position
      auto push = [&](TaskId v) {
        auto& h = onAcc[static_cast<size_t>(v)] ? readyAcc : readyOther;
        h.push_back(v);
        std::push_heap(h.begin(), h.end(), cmp);
      };
      for (TaskId v = 0; v < n; ++v)
        if (missing[static_cast<size_t>(v)] == 0) push(v);
      bool inAcc = false;
      while (!readyAcc.empty() || !readyOther.empty()) {
        auto& h = (inAcc && !readyAcc.empty()) || readyOther.empty() ? readyAcc : readyOther;
        std::pop_heap(h.begin(), h.end(), cmp);
        const TaskId v = h.back();
        h.pop_back();
        inAcc = onAcc[static_cast<size_t>(v)];
        order.push_back(v);
        for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
          const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
          if (--missing[static_cast<size_t>(s)] == 0) push(s);
        }
      }
    }

    // Block time: the cost model's (one rule with the simulator).
    const int64_t onChip = acc >= 0 && static_cast<size_t>(acc) < t.deviceOnChipBytes.size() ? t.deviceOnChipBytes[static_cast<size_t>(acc)] : 0;
    const bool blocksExist = acc >= 0 && compiles(acc);
    if (acc >= 0 && !blocksExist)
      notes.push_back("'" + t.deviceIds[static_cast<size_t>(acc)] + "' compiles no blocks: its ops run one by one on all its cores");
    int64_t evaluations = 0;
    const DeviceId timerDev = acc >= 0 ? acc : t.host;
    BlockTimer timer(t, timerDev);  // the block being grown (one rule with the simulator)
    auto timeOf = [&](const std::vector<TaskId>& g, int k) {
      ++evaluations;
      return blockTimeUs(t, g, acc, k);
    };
    // On-chip footprint of the block being grown: members' weights + tensors between members.
    std::vector<char> member(static_cast<size_t>(n), 0);
    int64_t footprint = 0;
    auto grow = [&](TaskId v) {
      member[static_cast<size_t>(v)] = 1;
      timer.add(v);
      if (t.work.empty()) return;
      footprint += t.work[static_cast<size_t>(v)].bytesReadWeights;
      for (int32_t ei : t.outEdges[static_cast<size_t>(v)])
        if (member[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].dst)]) footprint += t.edges[static_cast<size_t>(ei)].bytes;
      for (int32_t ei : t.inEdges[static_cast<size_t>(v)])
        if (member[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].src)]) footprint += t.edges[static_cast<size_t>(ei)].bytes;
    };
    auto leaveAll = [&]() {
      for (TaskId v : timer.members()) member[static_cast<size_t>(v)] = 0;
      timer.clear();
      footprint = 0;
    };
    auto fits = [&](size_t size, int64_t bytes, int k) {
      if (size <= 1 || onChip <= 0) return true;
      return static_cast<double>(bytes) <= static_cast<double>(onChip) * k / C;
    };

    // Per-layer best core count.
    std::vector<int> bestK(static_cast<size_t>(n), 1);
    if (acc >= 0)
      for (TaskId v = 0; v < n; ++v) {
        if (!onAcc[static_cast<size_t>(v)]) continue;
        const std::vector<TaskId> g{v};
        double bt = kInf;
        for (int k = 1; k <= C; ++k) {
          const double x = timeOf(g, k);
          if (x < bt - 1e-12) {
            bt = x;
            bestK[static_cast<size_t>(v)] = k;
          }
        }
      }

    // DP over each run of accelerator ops.
    struct Block {
      size_t begin, end;  // positions in `order`, end exclusive
      int cores;
      double time;
    };
    std::vector<Block> blocks;
    const double maxBlockParam = numParam(o, "max_block", oracle ? 256 : 64, ok);
    if (!ok || maxBlockParam < 1) return makeError("dlfusion: param max_block must be a number >= 1");
    const size_t maxLen = static_cast<size_t>(std::min(maxBlockParam, 1e6));
    double accTime = 0, unfusedTime = 0;
    bool timeUp = false;
    size_t nextReport = 0;
    for (size_t r = 0; r < order.size();) {
      if (!onAcc[static_cast<size_t>(order[r])]) {
        ++r;
        continue;
      }
      size_t e = r;
      while (e < order.size() && onAcc[static_cast<size_t>(order[e])]) ++e;
      if (r >= nextReport) {
        o.report(0.95 * static_cast<double>(r) / static_cast<double>(order.size()), "dlfusion: fusion DP");
        nextReport = r + std::max<size_t>(1, order.size() / 100);
      }
      // Run [r, e).
      const size_t L = e - r;
      std::vector<double> best(L + 1, kInf);
      std::vector<size_t> from(L + 1, 0);
      std::vector<int> kOf(L + 1, 1);
      std::vector<double> tOf(L + 1, 0);
      best[0] = 0;
      for (size_t i = 1; i <= L; ++i) {
        if (o.cancelled()) return cancelledError();
        if (!timeUp && deadline.passed()) {
          timeUp = true;
          notes.push_back("time limit reached: later blocks are single layers");
        }
        const size_t lenCap = timeUp || none ? 1 : maxLen;
        leaveAll();
        std::set<int> memberKs;
        for (size_t len = 1; len <= std::min(i, lenCap); ++len) {
          const size_t j = i - len;
          grow(order[r + j]);
          memberKs.insert(bestK[static_cast<size_t>(order[r + j])]);
          const size_t size = timer.size();
          std::set<int> ks;
          if (none) {
            ks.insert(std::min(C, static_cast<int>(defaultCores)));
          } else if (oracle) {
            for (int k = 1; k <= C; ++k) ks.insert(k);
          } else {
            ks = memberKs;
            for (int k = 1; k < C; k *= 2) ks.insert(k);
            ks.insert(C);
          }
          if (!fits(size, footprint, C)) break;  // longer blocks fit even less
          bool any = false;
          for (int k : ks) {
            if (!fits(size, footprint, k)) continue;
            ++evaluations;
            const double T = timer.timeUs(k);
            any = any || T < kInf;
            const double x = best[j] + T;
            if (x < best[i] - 1e-12) {
              best[i] = x;
              from[i] = j;
              kOf[i] = k;
              tOf[i] = T;
            }
          }
          if (!any && size > 1) break;  // a member the accelerator cannot run: longer blocks cannot either
        }
      }
      std::vector<Block> runBlocks;
      for (size_t i = L; i > 0; i = from[i]) runBlocks.push_back(Block{r + from[i], r + i, kOf[i], tOf[i]});
      std::reverse(runBlocks.begin(), runBlocks.end());
      blocks.insert(blocks.end(), runBlocks.begin(), runBlocks.end());
      accTime += best[L];
      for (size_t i = r; i < e; ++i) unfusedTime += timeOf({order[i]}, C);
      r = e;
    }

    Plan plan;
    plan.device = dev;
    plan.order.assign(static_cast<size_t>(m), {});
    for (TaskId v : order) plan.order[static_cast<size_t>(dev[static_cast<size_t>(v)])].push_back(v);
    if (blocksExist)
      for (const Block& b : blocks) {
        PlanBlock pb;
        pb.device = acc;
        pb.cores = b.cores >= C ? 0 : b.cores;
        for (size_t p = b.begin; p < b.end; ++p) pb.tasks.push_back(order[p]);
        plan.blocks.push_back(std::move(pb));
      }
    const double searchMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - searchStart).count();

    if (info) {
      for (auto& s : notes) info->notes.push_back(std::move(s));
      if (acc < 0) {
        info->notes.push_back("no accelerator: every op on the host");
      } else {
        size_t fused = 0;
        for (const Block& b : blocks) fused += b.end - b.begin > 1 ? 1 : 0;
        info->notes.push_back("accelerator " + t.deviceIds[static_cast<size_t>(acc)] + " (" + std::to_string(C) + " cores), mode " + mode +
                              ": " + std::to_string(blocks.size()) + " blocks, " + std::to_string(fused) + " fused; estimated " +
                              std::to_string(accTime) + " us against " + std::to_string(unfusedTime) + " us unfused on all cores");
        info->notes.push_back("search: " + std::to_string(evaluations) + " block evaluations in " + std::to_string(searchMs) + " ms");
        const size_t shown = std::min<size_t>(blocks.size(), 200);
        for (size_t i = 0; i < shown; ++i) {
          const Block& b = blocks[i];
          std::vector<std::string> names;
          for (size_t p = b.begin; p < b.end; ++p) names.push_back(t.taskNames[static_cast<size_t>(order[p])]);
          info->notes.push_back("block " + std::to_string(i + 1) + ": [" + join(names, ", ") + "] on " + std::to_string(b.cores) +
                                " cores, " + std::to_string(b.time) + " us");
        }
        if (shown < blocks.size()) info->notes.push_back("... " + std::to_string(blocks.size() - shown) + " more blocks");
      }
    }
    o.report(1.0, "dlfusion: done");
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeDlFusion() { return std::make_unique<DlFusion>(); }

}  // namespace partex
