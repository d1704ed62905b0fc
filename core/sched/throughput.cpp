#include "sched/throughput.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

struct Judged {
  Plan plan;
  double period = kInf;
  double latency = kInf;
  bool meets = false;  ///< Within the latency bound (always, without one).
  bool fits = false;   ///< Within every device's capacity, the stream's buffers included.
};

/// True when a is the better plan: fitting first, then within the bound, then period (latency when
/// neither meets the bound), then latency.
bool better(const Judged& a, const Judged& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.meets != b.meets) return a.meets;
  if (!a.meets) return a.latency < b.latency - 1e-9;
  if (a.period < b.period - 1e-9) return true;
  return a.period <= b.period + 1e-9 && a.latency < b.latency - 1e-9;
}

std::optional<Judged> judge(StreamJudge& stream, const CostTable& t, const Constraints& c, const SchedOptions& o, Plan p) {
  if (!respectsConstraints(t, c, p)) return std::nullopt;
  auto s = stream.run(p);
  if (!s) return std::nullopt;
  Judged j;
  j.period = s->periodUs;
  j.latency = s->latencyUs;
  j.meets = o.latencyBoundUs <= 0 || s->latencyUs <= o.latencyBoundUs;
  j.fits = std::none_of(s->overCapacity.begin(), s->overCapacity.end(), [](bool b) { return b; });
  j.plan = std::move(p);
  return j;
}

/// Moves v to device d, entering d's order by topological position.
Plan moved(const Plan& p, const std::vector<int32_t>& pos, TaskId v, DeviceId d) {
  Plan q = p;
  auto& from = q.order[static_cast<size_t>(q.device[static_cast<size_t>(v)])];
  from.erase(std::remove(from.begin(), from.end(), v), from.end());
  auto& to = q.order[static_cast<size_t>(d)];
  auto at = std::lower_bound(to.begin(), to.end(), v, [&](TaskId a, TaskId b) {
    return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
  });
  to.insert(at, v);
  q.device[static_cast<size_t>(v)] = d;
  q.blocks.clear();
  return q;
}

/// True when a and b cannot run at the same time (one device, or an exclusive pair of the platform).
bool exclusive(const CostTable& t, DeviceId a, DeviceId b) {
  if (a == b) return true;
  auto lists = [&](DeviceId x, DeviceId y) {
    if (x < 0 || static_cast<size_t>(x) >= t.exclusiveWith.size()) return false;
    const auto& l = t.exclusiveWith[static_cast<size_t>(x)];
    return std::find(l.begin(), l.end(), y) != l.end();
  };
  return lists(a, b) || lists(b, a);
}

/// Replicas of `p` (a plan without replicas) on devices it leaves free (sim/plan.h): replica k + 1
/// renames each device of p to a free device that can run all of its operators under the constraints
/// and runs at the same time as every device taken so far (no exclusive pair), the cheapest for them,
/// the busiest device of p choosing first. Returns the plans with 2, 3, ... replicas, as far as free
/// devices go: on two cores, the whole model on core0 gets its twin on core1 (what ONNX Runtime's two
/// one-thread sessions side by side and OpenVINO's throughput streams do); on four, a two-stage pipeline
/// gets a second pipeline.
std::vector<Plan> replicated(const CostTable& t, const Constraints& c, const Plan& p) {
  const int m = t.numDevices();
  std::vector<DeviceId> used;
  std::vector<double> busy(static_cast<size_t>(m), 0.0);
  for (DeviceId d = 0; d < m; ++d) {
    if (p.order[static_cast<size_t>(d)].empty()) continue;
    used.push_back(d);
    for (TaskId v : p.order[static_cast<size_t>(d)]) busy[static_cast<size_t>(d)] += t.w(v, d);
  }
  std::stable_sort(used.begin(), used.end(), [&](DeviceId a, DeviceId b) { return busy[static_cast<size_t>(a)] > busy[static_cast<size_t>(b)]; });
  std::vector<DeviceId> taken = used;
  std::vector<Plan> out;
  Plan q = p;
  q.replicas.clear();
  q.blocks.clear();  // a block's compiled time is its device's: not carried to another device
  while (replicaCount(q) < kMaxReplicas) {
    std::vector<DeviceId> map(static_cast<size_t>(m));
    for (DeviceId d = 0; d < m; ++d) map[static_cast<size_t>(d)] = d;
    std::vector<DeviceId> now = taken;
    bool complete = true;
    for (DeviceId d : used) {
      DeviceId pick = -1;
      double pickCost = kInf;
      for (DeviceId e = 0; e < m; ++e) {
        if (std::any_of(now.begin(), now.end(), [&](DeviceId x) { return exclusive(t, x, e); })) continue;
        double cost = 0;
        for (TaskId v : p.order[static_cast<size_t>(d)]) {
          if (!c.allowed(t, v, e)) {
            cost = kInf;
            break;
          }
          cost += t.w(v, e);
        }
        if (cost < pickCost) {
          pickCost = cost;
          pick = e;
        }
      }
      if (pick < 0) {
        complete = false;
        break;
      }
      map[static_cast<size_t>(d)] = pick;
      now.push_back(pick);
    }
    if (!complete) break;
    taken = std::move(now);
    q.replicas.push_back(std::move(map));
    out.push_back(q);
  }
  return out;
}

/// Replicas weighted by speed: with R plain replicas (one per device set) whose single inferences take
/// T_0 .. T_{R-1}, replica k is listed n_k = round(max T / T_k) times (the faster set takes more of
/// the stream), interleaved, at most kMaxReplicas in all. Empty when every n_k is 1.
Plan weighted(const CostTable& t, const Plan& p, const std::vector<double>& single) {
  const double slowest = *std::max_element(single.begin(), single.end());
  std::vector<int> count;
  int total = 0;
  for (double x : single) {
    const int k = x > 0 ? std::max(1, static_cast<int>(std::lround(slowest / x))) : 1;
    count.push_back(k);
    total += k;
  }
  if (total == static_cast<int>(single.size()) || total > kMaxReplicas) return {};
  const int m = t.numDevices();
  std::vector<std::vector<DeviceId>> maps;  // per plain replica, its map (the identity for replica 0)
  std::vector<DeviceId> identity(static_cast<size_t>(m));
  for (DeviceId d = 0; d < m; ++d) identity[static_cast<size_t>(d)] = d;
  maps.push_back(identity);
  for (const auto& r : p.replicas) maps.push_back(r);
  Plan q = p;
  q.replicas.clear();
  // Round robin over the replicas with counts left; its first slot (k = 0) is the plan itself.
  bool first = true;
  for (int left = total; left > 0;)
    for (size_t k = 0; k < count.size() && left > 0; ++k) {
      if (count[k] == 0) continue;
      --count[k];
      --left;
      if (first) {
        first = false;
        continue;
      }
      q.replicas.push_back(maps[k]);
    }
  return q;
}

std::string fmtUs(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

}  // namespace

Result<Plan> bestForThroughput(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) {
  const Deadline deadline = o.startDeadline(10.0);
  StreamJudge stream(t, {}, o.sim);  // its unrolled tables serve every plan judged below
  const double total = deadline.never() ? 10.0 : std::max(0.0, deadline.leftSec());
  std::vector<std::pair<std::string, Judged>> candidates;
  std::vector<std::string> skipped;
  auto consider = [&](const std::string& name, Result<Plan> p) {
    if (!p) {
      skipped.push_back(name + " (" + p.message() + ")");
      return;
    }
    auto j = judge(stream, t, c, o, std::move(p).value());
    if (!j) {
      skipped.push_back(name + " (its plan breaks the constraints or does not simulate)");
      return;
    }
    candidates.emplace_back(name, std::move(*j));
  };
  auto member = [&](const char* name, double share, Objective obj) {
    const Scheduler* s = findScheduler(name);
    if (!s || deadline.passed()) return;
    SchedOptions so = o;
    so.objective = obj;
    so.progress = nullptr;
    so.trace = nullptr;
    so.deadline = deadline.within(share * total);
    so.timeLimitSec = std::max(1e-3, so.deadline.leftSec());
    consider(name, s->schedule(t, c, so, nullptr));
  };
  o.report(0.0, "best (throughput): pipeline");
  // Half of the time to the pipeline's programme, whose full grid needs seconds on a few hundred
  // operators and six devices (yolox_nano on mobile-soc: 5.7 ms with the full grid, 6.1 ms with the
  // coarse one): best is then not worse than the pipeline baseline run alone under the same limit.
  member("pipeline", 1.0 / 2, Objective::Throughput);
  if (o.cancelled()) return cancelledError();
  // Pipe-it's configuration of the CPU clusters (one pass over its configurations): best is never
  // worse than the published pipeline baseline either.
  member("pipeit", 1.0 / 16, Objective::Throughput);
  if (o.cancelled()) return cancelledError();
  o.report(0.25, "best (throughput): latency plan");
  member("best", 1.0 / 8, Objective::Latency);
  if (o.cancelled()) return cancelledError();
  for (DeviceId d = 0; d < t.numDevices() && !deadline.passed(); ++d) {
    const Scheduler* s = findScheduler("single");
    SchedOptions so = o;
    so.objective = Objective::Latency;
    so.progress = nullptr;
    so.params = {{"device", t.deviceIds[static_cast<size_t>(d)]}};
    consider("single " + t.deviceIds[static_cast<size_t>(d)], s->schedule(t, c, so, nullptr));
  }
  if (o.cancelled()) return cancelledError();
  if (candidates.empty()) return makeError("best (throughput): no candidate plan (", join(skipped, "; "), ")");
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return better(a.second, b.second); });

  // Replicated plans (sim/plan.h): each candidate copied onto the devices it leaves free, whole
  // inferences side by side, plainly and weighted by the replicas' speeds. Judged by the same stream
  // simulation; kept apart from the boundary search below, whose moves would break the replicas' mirror.
  std::vector<std::pair<std::string, Judged>> replicaCandidates;
  int replicaPlans = 0;
  // `--param replicas=off`: the plans of one replica only (the workload scheduler cuts its units where
  // a plan changes device, which replica 0 of a replicated plan may never do).
  const auto rp = o.params.find("replicas");
  const bool replicasOn = rp == o.params.end() || (rp->second != "off" && rp->second != "0" && rp->second != "no");
  auto considerReplicas = [&](const std::string& name, const Plan& base) {
    if (!replicasOn) return;
    for (Plan& q : replicated(t, c, base)) {
      if (o.cancelled()) return;
      const int R = replicaCount(q);
      std::vector<double> single;
      for (int k = 0; k < R; ++k) {
        auto tl = simulate(t, replicaPlan(q, k), o.sim);
        single.push_back(tl ? tl->makespan : 0.0);
      }
      Plan w = weighted(t, q, single);
      const std::string label = name + " x" + std::to_string(R);
      ++replicaPlans;
      if (auto j = judge(stream, t, c, o, std::move(q))) replicaCandidates.emplace_back(label, std::move(*j));
      if (!w.replicas.empty()) {
        ++replicaPlans;
        if (auto j = judge(stream, t, c, o, std::move(w)))
          replicaCandidates.emplace_back(label + " weighted (" + std::to_string(replicaCount(j->plan)) + " replicas)", std::move(*j));
      }
    }
  };
  for (const auto& [name, j] : candidates) considerReplicas(name, j.plan);

  // Local search from each of the best few candidates (a pipeline and a latency plan improve in
  // different directions): operators at a stage boundary move to a neighbour's device while that helps.
  const std::vector<TaskId> topo = t.topoOrder();
  std::vector<int32_t> pos(static_cast<size_t>(t.numTasks()));
  for (size_t i = 0; i < topo.size(); ++i) pos[static_cast<size_t>(topo[i])] = static_cast<int32_t>(i);
  int evals = 0, improvements = 0;
  auto search = [&](Judged cur, const Deadline& until) {
    bool improved = true;
    while (improved && !until.passed() && !o.cancelled()) {
      improved = false;
      for (TaskId v : topo) {
        if (until.passed() || o.cancelled()) break;
        const DeviceId here = cur.plan.device[static_cast<size_t>(v)];
        std::vector<DeviceId> targets;
        auto note = [&](TaskId u) {
          const DeviceId d = cur.plan.device[static_cast<size_t>(u)];
          if (d != here && c.allowed(t, v, d) && std::find(targets.begin(), targets.end(), d) == targets.end()) targets.push_back(d);
        };
        for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) note(t.edges[static_cast<size_t>(ei)].src);
        for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) note(t.edges[static_cast<size_t>(ei)].dst);
        for (DeviceId d : targets) {
          ++evals;
          auto j = judge(stream, t, c, o, moved(cur.plan, pos, v, d));
          if (j && better(*j, cur)) {
            cur = std::move(*j);
            ++improvements;
            improved = true;
            break;
          }
        }
      }
    }
    return cur;
  };
  std::optional<Judged> best;
  std::string from;
  const size_t starts = std::min<size_t>(3, candidates.size());
  for (size_t i = 0; i < starts && !o.cancelled(); ++i) {
    const double left = deadline.never() ? total : std::max(0.0, deadline.leftSec());
    const Deadline until = deadline.within(left / static_cast<double>(starts - i));
    Judged j = search(candidates[i].second, until);
    if (!best || better(j, *best)) {
      best = std::move(j);
      from = candidates[i].first;
    }
  }
  if (o.cancelled()) return cancelledError();
  considerReplicas("searched " + from, best->plan);
  for (auto& [name, j] : replicaCandidates)
    if (better(j, *best)) {
      best = j;
      from = name;
    }
  if (o.cancelled()) return cancelledError();
  if (info) {
    info->notes.push_back("objective throughput: period " + fmtUs(best->period) + " us (" +
                          fmtUs(best->period > 0 ? 1e6 / best->period : 0) + " inferences/s), latency " + fmtUs(best->latency) +
                          " us; from " + from);
    info->notes.push_back("boundary search: " + std::to_string(evals) + " evaluations, " + std::to_string(improvements) + " improvements");
    info->notes.push_back("replicas: " + std::to_string(replicaPlans) + " replicated plans judged" +
                          (replicaCount(best->plan) > 1 ? ", the kept plan has " + std::to_string(replicaCount(best->plan)) + " replicas" : std::string()));
    if (!best->meets) info->notes.push_back("no plan meets the latency bound; the lowest latency is kept");
    if (!skipped.empty()) info->notes.push_back("skipped: " + join(skipped, "; "));
    if (deadline.passed()) info->notes.push_back("time limit reached");
  }
  o.report(1.0, "best (throughput): done");
  return best->plan;
}

}  // namespace partex
