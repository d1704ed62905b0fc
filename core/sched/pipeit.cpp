// "pipeit": Pipe-it's pipelined CNN inference on big.LITTLE CPU clusters (S. Wang, G. Ananthanarayanan,
// Y. Zeng, N. Goel, A. Pathania, T. Mitra, "High-Throughput CNN Inference on Embedded ARM big.LITTLE
// Multi-Core Processors", IEEE TCAD 2020, arXiv 1903.05898), RECONSTRUCTED from the paper's abstract:
// its full text could not be read (docs/design-decisions.md, "Pipe-it's heuristic, reconstructed").
//
// What the abstract states, and this keeps: layers are split across the CPU clusters as pipeline stages,
// each stage's kernels parallelised only inside its own cluster (a stage never spans two clusters);
// every layer's time is predicted on every permitted core configuration (type and count) -- here the
// project's cost model, w(v, d), on every CPU device the platform lists; a design-space exploration then
// builds a balanced pipeline. What is guessed: the exploration itself, as follows.
//  1. Core configurations: every set of CPU devices that can run at once (no two exclusive: a cluster
//     and its own cores never together; a multi-core device and its single-core devices are the
//     cluster's "core counts" a platform can express), times every order of their stages, devices with
//     identical costs (cores of one type) interchangeable and kept adjacent.
//  2. Layer allocation for one ordered configuration, in two steps: (a) each stage in turn takes the
//     layers of the topological order until its predicted time reaches the balanced period
//     P0 = 1 / sum_j 1 / T_j (T_j: the whole model on stage j's device), stopping before the layer that
//     crosses P0 when that leaves it closer to P0; (b) while it shortens the period, the bottleneck
//     stage gives its first layer to the stage before it or its last layer to the stage after it
//     (the better of the two). A stage's predicted time is max(its layers' time, the transfer of the
//     bytes crossing into it from the previous stage's device), as in `pipeline`.
//  3. The configuration with the shortest predicted period wins (ties: the lower predicted latency, the
//     sum of the stages); with SchedOptions::latencyBoundUs, configurations within it first.
// Non-CPU devices (GPU, NPU) hold no stage: Pipe-it is a CPU-cluster method. Tables without device kinds
// (task graphs) or without a CPU device use every device. Pinned operators keep their device, and an
// operator a stage's device may not run goes to its fastest allowed device, its time counted in the
// stage. Models of more than 512 operators are allocated in 512 segments of about equal best-device work.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>

#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

constexpr int kMaxSegments = 512;

struct Predicted {
  double period = kInf;
  double latency = kInf;
};

class PipeIt final : public Scheduler {
 public:
  std::string name() const override { return "pipeit"; }
  std::string title() const override { return "Pipe-it (reconstructed)"; }
  std::string description() const override {
    return "Pipe-it's pipeline over the CPU clusters (TCAD 2020, reconstructed from its abstract): every core "
           "configuration and stage order, layers balanced greedily on predicted times, the shortest period wins.";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const int n = t.numTasks();
    const int m = t.numDevices();
    const Deadline deadline = o.startDeadline(10.0);
    const std::vector<TaskId> topo = t.topoOrder();
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) pos[static_cast<size_t>(topo[static_cast<size_t>(i)])] = i;

    // Where each task runs when its stage is on d, and the time that counts for the stage: d itself
    // where allowed, else its pinned device, else its fastest allowed one.
    std::vector<DeviceId> fallback(static_cast<size_t>(n));
    std::vector<double> bestW(static_cast<size_t>(n));
    for (TaskId v = 0; v < n; ++v) {
      fallback[static_cast<size_t>(v)] = c.fallback(t, v);
      if (fallback[static_cast<size_t>(v)] < 0)
        return makeError("pipeit: task '", t.taskNames[static_cast<size_t>(v)], "' can run on no allowed device");
      bestW[static_cast<size_t>(v)] = t.w(v, fallback[static_cast<size_t>(v)]);
    }
    auto costOn = [&](TaskId v, DeviceId d) { return c.allowed(t, v, d) ? t.w(v, d) : bestW[static_cast<size_t>(v)]; };

    // The stage devices: the CPU clusters (and their cores) the constraints leave.
    std::vector<DeviceId> cpus;
    for (DeviceId d = 0; d < m; ++d) {
      if (std::find(c.forbidden.begin(), c.forbidden.end(), d) != c.forbidden.end()) continue;
      if (static_cast<size_t>(d) < t.deviceKinds.size() && t.deviceKinds[static_cast<size_t>(d)] == "cpu")
        cpus.push_back(d);
    }
    const bool allDevices = cpus.empty();
    if (allDevices)
      for (DeviceId d = 0; d < m; ++d)
        if (std::find(c.forbidden.begin(), c.forbidden.end(), d) == c.forbidden.end()) cpus.push_back(d);
    if (cpus.empty()) return makeError("pipeit: every device is forbidden");

    // Segments of the topological order (every task, or kMaxSegments of about equal best-device work).
    std::vector<int32_t> cuts{0};
    if (n <= kMaxSegments) {
      for (int i = 1; i <= n; ++i) cuts.push_back(i);
    } else {
      double total = 0;
      for (TaskId v : topo) total += bestW[static_cast<size_t>(v)];
      double acc = 0;
      int next = 1;
      for (int i = 0; i < n; ++i) {
        acc += bestW[static_cast<size_t>(topo[static_cast<size_t>(i)])];
        if (i + 1 < n && acc >= total * next / kMaxSegments && cuts.back() < i + 1) {
          cuts.push_back(i + 1);
          ++next;
        }
      }
      cuts.push_back(n);
    }
    const int K = static_cast<int>(cuts.size()) - 1;
    std::vector<int32_t> segOf(static_cast<size_t>(n));
    for (int k = 0; k < K; ++k)
      for (int i = cuts[static_cast<size_t>(k)]; i < cuts[static_cast<size_t>(k) + 1]; ++i)
        segOf[static_cast<size_t>(i)] = k;

    // Per stage device: prefix sums of the segments' predicted times.
    std::vector<std::vector<double>> pre(static_cast<size_t>(m));
    for (DeviceId d : cpus) {
      auto& p = pre[static_cast<size_t>(d)];
      p.assign(static_cast<size_t>(K) + 1, 0.0);
      for (int k = 0; k < K; ++k) {
        double s = 0;
        for (int i = cuts[static_cast<size_t>(k)]; i < cuts[static_cast<size_t>(k) + 1]; ++i)
          s += costOn(topo[static_cast<size_t>(i)], d);
        p[static_cast<size_t>(k) + 1] = p[static_cast<size_t>(k)] + s;
      }
    }
    // Bytes crossing into the stage of segments [a, b) from before a: X(a, b).
    std::vector<int64_t> cross(static_cast<size_t>(K + 1) * static_cast<size_t>(K + 1), 0);
    auto X = [&](int a, int b) -> int64_t& {
      return cross[static_cast<size_t>(a) * static_cast<size_t>(K + 1) + static_cast<size_t>(b)];
    };
    for (const Edge& e : t.edges) {
      const int sa = segOf[static_cast<size_t>(pos[static_cast<size_t>(e.src)])];
      const int sb = segOf[static_cast<size_t>(pos[static_cast<size_t>(e.dst)])];
      for (int a = sa + 1; a <= sb; ++a) X(a, sb + 1) += e.bytes;
    }
    for (int a = 0; a <= K; ++a)
      for (int b = a + 1; b <= K; ++b) X(a, b) += X(a, b - 1);

    auto comp = [&](int a, int b, DeviceId d) {
      return pre[static_cast<size_t>(d)][static_cast<size_t>(b)] - pre[static_cast<size_t>(d)][static_cast<size_t>(a)];
    };
    // Stage j holds segments [bounds[j-1], bounds[j]) (bounds[-1] = 0, bounds[k-1] = K).
    auto predict = [&](const std::vector<DeviceId>& devs, const std::vector<int>& bounds) {
      Predicted p{0.0, 0.0};
      int a = 0;
      for (size_t j = 0; j < devs.size(); ++j) {
        const int b = bounds[j];
        const double w = comp(a, b, devs[j]);
        const double x = j == 0 ? 0.0 : t.transferUs(devs[j - 1], devs[j], X(a, b));
        p.period = std::max({p.period, w, x});
        p.latency += w + x;
        a = b;
      }
      return p;
    };

    // Step 2: the layer allocation of one ordered configuration.
    auto allocate = [&](const std::vector<DeviceId>& devs, std::vector<int>& bounds) {
      const int k = static_cast<int>(devs.size());
      bounds.assign(static_cast<size_t>(k), K);
      double inv = 0;
      for (DeviceId d : devs) {
        const double total = comp(0, K, d);
        inv += total > 0 ? 1.0 / total : kInf;
      }
      const double p0 = inv > 0 && inv < kInf ? 1.0 / inv : 0.0;
      int start = 0;
      for (int j = 0; j + 1 < k; ++j) {
        const int maxEnd = K - (k - 1 - j);
        int end = start + 1;
        while (end < maxEnd && comp(start, end, devs[static_cast<size_t>(j)]) < p0) ++end;
        if (end - 1 > start && std::abs(comp(start, end - 1, devs[static_cast<size_t>(j)]) - p0) <=
                                   std::abs(comp(start, end, devs[static_cast<size_t>(j)]) - p0))
          --end;
        bounds[static_cast<size_t>(j)] = end;
        start = end;
      }
      Predicted cur = predict(devs, bounds);
      for (int iter = 0; iter < K * k + 8; ++iter) {
        // The bottleneck: the first stage whose predicted time is the period.
        int bottleneck = -1, bStart = 0;
        for (int j = 0, a = 0; j < k && bottleneck < 0; a = bounds[static_cast<size_t>(j)], ++j) {
          const int b = bounds[static_cast<size_t>(j)];
          const double w = comp(a, b, devs[static_cast<size_t>(j)]);
          const double x =
              j == 0 ? 0.0 : t.transferUs(devs[static_cast<size_t>(j) - 1], devs[static_cast<size_t>(j)], X(a, b));
          if (std::max(w, x) >= cur.period - 1e-9) {
            bottleneck = j;
            bStart = a;
          }
        }
        if (bottleneck < 0 || bounds[static_cast<size_t>(bottleneck)] - bStart < 2)
          break;  // one layer left: nothing to give
        // Its first layer to the stage before, or its last to the stage after: the better of the two.
        std::vector<std::vector<int>> moves;
        if (bottleneck > 0) {
          moves.push_back(bounds);
          ++moves.back()[static_cast<size_t>(bottleneck) - 1];
        }
        if (bottleneck + 1 < k) {
          moves.push_back(bounds);
          --moves.back()[static_cast<size_t>(bottleneck)];
        }
        int take = -1;
        Predicted bestMove;
        for (size_t i = 0; i < moves.size(); ++i) {
          const Predicted p = predict(devs, moves[i]);
          if (take < 0 || p.period < bestMove.period - 1e-9 ||
              (p.period <= bestMove.period + 1e-9 && p.latency < bestMove.latency - 1e-9)) {
            take = static_cast<int>(i);
            bestMove = p;
          }
        }
        if (take < 0 || !(bestMove.period < cur.period - 1e-9)) break;
        bounds = std::move(moves[static_cast<size_t>(take)]);
        cur = bestMove;
      }
      return cur;
    };

    // Step 1: the core configurations. Devices with identical predicted costs are one core type.
    std::vector<int> typeOf(static_cast<size_t>(m), -1);
    std::vector<DeviceId> typeRep;
    for (DeviceId d : cpus) {
      for (size_t ty = 0; ty < typeRep.size() && typeOf[static_cast<size_t>(d)] < 0; ++ty) {
        const DeviceId r = typeRep[ty];
        bool same = true;
        for (int k = 1; k <= K && same; ++k)
          same = pre[static_cast<size_t>(d)][static_cast<size_t>(k)] ==
                 pre[static_cast<size_t>(r)][static_cast<size_t>(k)];
        if (same) typeOf[static_cast<size_t>(d)] = static_cast<int>(ty);
      }
      if (typeOf[static_cast<size_t>(d)] < 0) {
        typeOf[static_cast<size_t>(d)] = static_cast<int>(typeRep.size());
        typeRep.push_back(d);
      }
    }
    auto exclusive = [&](DeviceId a, DeviceId b) {
      if (static_cast<size_t>(a) >= t.exclusiveWith.size()) return false;
      const auto& ex = t.exclusiveWith[static_cast<size_t>(a)];
      return std::find(ex.begin(), ex.end(), b) != ex.end();
    };

    bool meetsBest = false;
    Predicted best;
    std::vector<DeviceId> bestDevs;
    std::vector<int> bestBounds;
    int64_t configurations = 0, orders = 0;
    bool timedOut = false;
    std::set<std::vector<int>> seen;  // configurations by their multiset of core types
    std::vector<DeviceId> chosen;

    auto evaluate = [&](const std::vector<DeviceId>& group) {
      std::vector<int> sig;
      for (DeviceId d : group) sig.push_back(typeOf[static_cast<size_t>(d)]);
      std::sort(sig.begin(), sig.end());
      if (static_cast<int>(group.size()) > K || !seen.insert(sig).second) return;
      ++configurations;
      // The types in the set, each with its devices (kept adjacent); every order of the types (fastest
      // first and slowest first only, beyond four types).
      std::vector<int> types(sig.begin(), sig.end());
      types.erase(std::unique(types.begin(), types.end()), types.end());
      std::vector<std::vector<int>> typeOrders;
      if (types.size() <= 4) {
        do {
          typeOrders.push_back(types);
        } while (std::next_permutation(types.begin(), types.end()));
      } else {
        std::sort(types.begin(), types.end(), [&](int x, int y) {
          return comp(0, K, typeRep[static_cast<size_t>(x)]) < comp(0, K, typeRep[static_cast<size_t>(y)]);
        });
        typeOrders.push_back(types);
        typeOrders.emplace_back(types.rbegin(), types.rend());
      }
      for (const auto& order : typeOrders) {
        if (!bestDevs.empty() && (deadline.passed() || o.cancelled())) {
          timedOut = true;
          return;
        }
        ++orders;
        std::vector<DeviceId> devs;
        for (int ty : order)
          for (DeviceId d : group)
            if (typeOf[static_cast<size_t>(d)] == ty) devs.push_back(d);
        std::vector<int> bounds;
        const Predicted p = allocate(devs, bounds);
        const bool meets = o.latencyBoundUs <= 0 || p.latency <= o.latencyBoundUs;
        const bool take =
            bestDevs.empty() || (meets && !meetsBest) ||
            (meets == meetsBest && (meets ? p.period < best.period - 1e-9 ||
                                                (p.period <= best.period + 1e-9 && p.latency < best.latency - 1e-9)
                                          : p.latency < best.latency - 1e-9));
        if (take) {
          best = p;
          meetsBest = meets;
          bestDevs = devs;
          bestBounds = bounds;
        }
      }
    };
    // Every set of stage devices that may run at once, depth first over the devices.
    // Interchangeable devices (one core type, excluding the same devices: the cores of one cluster) are
    // taken in index order, each only after the one before it: the sets differ only in how many.
    std::vector<int> prevSame(cpus.size(), -1);
    for (size_t i = 0; i < cpus.size(); ++i)
      for (size_t j = i; j-- > 0;) {
        const DeviceId a = cpus[i], b = cpus[j];
        bool same =
            typeOf[static_cast<size_t>(a)] == typeOf[static_cast<size_t>(b)] && !exclusive(a, b) && !exclusive(b, a);
        for (DeviceId e = 0; e < m && same; ++e)
          if (e != a && e != b) same = exclusive(a, e) == exclusive(b, e);
        if (same) {
          prevSame[i] = static_cast<int>(j);
          break;
        }
      }
    std::vector<char> inSet(cpus.size(), 0);
    std::function<void(size_t)> dfs = [&](size_t i) {
      if (timedOut) return;
      if (i == cpus.size()) {
        if (!bestDevs.empty() && (deadline.passed() || o.cancelled()))
          timedOut = true;
        else if (!chosen.empty())
          evaluate(chosen);
        return;
      }
      dfs(i + 1);
      const DeviceId d = cpus[i];
      if (prevSame[i] >= 0 && !inSet[static_cast<size_t>(prevSame[i])]) return;
      if (std::none_of(chosen.begin(), chosen.end(), [&](DeviceId x) { return exclusive(d, x) || exclusive(x, d); })) {
        chosen.push_back(d);
        inSet[i] = 1;
        dfs(i + 1);
        inSet[i] = 0;
        chosen.pop_back();
      }
    };
    dfs(0);
    if (o.cancelled()) return cancelledError();
    if (bestDevs.empty()) return makeError("pipeit: no core configuration explored before the time limit");

    // The plan: each stage's segments on its device (an operator it may not run on its fallback), each
    // device's operators in topological order.
    Plan plan;
    plan.device.assign(static_cast<size_t>(n), bestDevs.front());
    int a = 0;
    for (size_t j = 0; j < bestDevs.size(); ++j) {
      const int b = bestBounds[j];
      for (int i = cuts[static_cast<size_t>(a)]; i < cuts[static_cast<size_t>(b)]; ++i) {
        const TaskId v = topo[static_cast<size_t>(i)];
        plan.device[static_cast<size_t>(v)] =
            c.allowed(t, v, bestDevs[j]) ? bestDevs[j] : fallback[static_cast<size_t>(v)];
      }
      a = b;
    }
    plan.order.assign(static_cast<size_t>(m), {});
    for (TaskId v : topo) plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);

    std::string stages;
    a = 0;
    for (size_t j = 0; j < bestDevs.size(); ++j) {
      const int b = bestBounds[j];
      char buf[64];
      std::snprintf(buf, sizeof buf, " %.1f us", comp(a, b, bestDevs[j]));
      stages += (j ? ", " : "") + t.deviceIds[static_cast<size_t>(bestDevs[j])] + " (" +
                std::to_string(cuts[static_cast<size_t>(b)] - cuts[static_cast<size_t>(a)]) + " operators," + buf + ")";
      a = b;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "predicted period %.1f us, latency %.1f us", best.period, best.latency);
    info->notes.push_back("stages: " + stages + "; " + buf);
    info->notes.push_back(std::to_string(configurations) + " core configurations, " + std::to_string(orders) +
                          " stage orders explored" +
                          (allDevices ? " (no CPU device: every device is a cluster)" : " over the CPU devices"));
    if (!meetsBest) info->notes.push_back("no configuration meets the latency bound; the lowest latency is kept");
    if (timedOut) info->notes.push_back("time limit reached");
    if (K < n) info->notes.push_back("allocated in " + std::to_string(K) + " segments of about equal work");
    o.report(1.0, "pipeit: done");
    plan.algorithm = name();
    plan.optionsJson = paramsJson(o);
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makePipeIt() {
  return std::make_unique<PipeIt>();
}

}  // namespace partex
