#include "sched/throughput.h"

#include <algorithm>
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
  if (info) {
    info->notes.push_back("objective throughput: period " + fmtUs(best->period) + " us (" +
                          fmtUs(best->period > 0 ? 1e6 / best->period : 0) + " inferences/s), latency " + fmtUs(best->latency) +
                          " us; from " + from);
    info->notes.push_back("boundary search: " + std::to_string(evals) + " evaluations, " + std::to_string(improvements) + " improvements");
    if (!best->meets) info->notes.push_back("no plan meets the latency bound; the lowest latency is kept");
    if (!skipped.empty()) info->notes.push_back("skipped: " + join(skipped, "; "));
    if (deadline.passed()) info->notes.push_back("time limit reached");
  }
  o.report(1.0, "best (throughput): done");
  return best->plan;
}

}  // namespace partex
