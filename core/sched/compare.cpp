#include "sched/compare.h"

#include <algorithm>
#include <chrono>

#include "sched/llamarules.h"
#include "sched/offload.h"

namespace partex {

double bestSingleDeviceUs(const CostTable& t, const Constraints& c, const SchedOptions& o) {
  const Scheduler* single = findScheduler("single");
  if (!single) return 0;
  double best = 0;
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    SchedOptions so = o;
    so.progress = nullptr;
    so.params["device"] = t.deviceIds[static_cast<size_t>(d)];
    auto plan = single->schedule(t, c, so);
    if (!plan) continue;
    auto tl = simulate(t, *plan, o.sim);
    if (tl && (best == 0 || tl->makespan < best)) best = tl->makespan;
  }
  return best;
}

Comparison compareAlgorithms(const CostTable& t, const Constraints& c, const SchedOptions& o,
                             const std::vector<std::string>& algorithms, bool explicitNames) {
  Comparison out;
  out.bestSingleUs = bestSingleDeviceUs(t, c, o);
  out.lowerBoundUs = lowerBound(t, c);
  for (size_t i = 0; i < algorithms.size() && !o.cancelled(); ++i) {
    ComparisonRow r;
    r.algorithm = algorithms[i];
    const Scheduler* s = findScheduler(algorithms[i]);
    if (!s) {
      r.error = "unknown algorithm '" + algorithms[i] + "'";
      out.rows.push_back(std::move(r));
      continue;
    }
    r.title = s->title();
    o.report(static_cast<double>(i) / static_cast<double>(algorithms.size()), r.title);
    if (s->name() == "exact" && t.numTasks() > kExactAutoLimit && !explicitNames) {
      r.error = "skipped: " + std::to_string(t.numTasks()) + " operators (exact runs up to " +
                std::to_string(kExactAutoLimit) + " unless named explicitly)";
      out.rows.push_back(std::move(r));
      continue;
    }
    SchedOptions so = o;
    so.progress = nullptr;
    SchedInfo info;
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = s->schedule(t, c, so, &info);
    r.schedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.notes = info.notes;
    for (const auto& n : info.notes) r.timeLimited = r.timeLimited || n.rfind("time limit reached", 0) == 0;
    if (!plan) {
      r.error = plan.message();
      out.rows.push_back(std::move(r));
      continue;
    }
    auto tl = simulate(t, *plan, o.sim);
    if (!tl) {
      r.error = "invalid plan: " + tl.message();
      out.rows.push_back(std::move(r));
      continue;
    }
    r.valid = true;
    r.optimal = info.optimal;
    r.makespanUs = tl->makespan;
    r.speedup = out.bestSingleUs > 0 && tl->makespan > 0 ? out.bestSingleUs / tl->makespan : 0;
    r.ratioToBound = out.lowerBoundUs > 0 ? tl->makespan / out.lowerBoundUs : 0;
    if (s->name() == "exact" && info.optimal) out.optimumUs = tl->makespan;  // a time-limited run is no optimum
    if (o.objective == Objective::Throughput) {
      auto st = simulateStream(t, *plan, {}, o.sim);
      if (st) {
        r.periodUs = st->periodUs;
        r.streamLatencyUs = st->latencyUs;
      }
    }
    r.plan = std::move(plan).value();
    r.timeline = std::move(tl).value();
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> defaultComparison(const CostTable& t) {
  std::vector<std::string> out;
  const bool layered = hasLayerNames(t);
  for (const auto& s : allSchedulers())
    // llama.cpp's rules only on models with layer names; ot only with its override string.
    if ((!isLlamaRule(s->name()) || layered) && s->name() != "ot") out.push_back(s->name());
  return out;
}

std::vector<std::string> explainAgainstOffload(const CostTable& t, const Comparison& cmp, const std::string& other) {
  const ComparisonRow *rule = nullptr, *row = nullptr;
  for (const auto& r : cmp.rows) {
    if (r.algorithm == "offload" && r.valid) rule = &r;
    if (r.algorithm == other && r.valid) row = &r;
  }
  if (!rule || !row || rule->notes.empty()) return {};
  return explainOffload(t, rule->notes.front(), rule->plan, rule->timeline, other, row->plan, row->timeline);
}

}  // namespace partex
