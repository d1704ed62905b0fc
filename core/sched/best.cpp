// Partex best: a portfolio of every other scheduler, each judged by the simulator, then iterated local
// search from the best member (localsearch.h).
//
// Portfolio: heft, greedy, then the list heuristics (cpop, peft and SAGA's: minmin, maxmin, sufferage,
// mct, met, olb, duplex, etf, hbmct), then single, priority, static, partitiontuner,
// partitiontuner-clean, dlfusion, coarse, duet, pimdp, and on language models (operators named layers.<L>.) offload with
// mode=best-k (the fastest first-k-layers split) (never exact, never itself); members that fail, break the constraints or
// do not simulate are skipped. heft and greedy always run to completion; every other member gets a
// share of the time (param member_ms, default max(100, budget_ms / 4) ms, and the portfolio as a whole
// min(max(1000, budget_ms), 2.5 budget_ms) ms) as its deadline (SchedOptions::deadline) and returns its
// best plan at it; one that returns more than 20 ms late is counted as over its share.
// Param members=a,b,c restricts the portfolio (heft and greedy are always added).
//
// A member's compiled blocks (dlfusion, coarse) stay with its plan; the local search starts from the
// member's placement and orders without them and replaces the plan only when faster.
// Local search (search.cpp), from the best member: iterated descent by first improvement of (makespan,
// sum of finish times) over: critical-path tasks moved to another device (ranked by estimated gain),
// adjacent swaps, stretches of the critical path moved together, critical tasks trading devices with
// another task, every other position of a critical task, re-ordering by assignment-aware upward rank
// and HEFT-like list scheduling with the current assignment, then the same moves off the critical path;
// seeded random kicks from the best plan when stuck. Then simulated annealing from the best plan
// (param anneal, default 0.4 of the evaluations: random insertions at any consistent position of any
// allowed device, critical-path tasks half of the time, reassignments, adjacent swaps; geometric
// cooling from 2% to 0.02% of the makespan), then iterated descent again from the best plan.
// The stop is an evaluation count (param max_evals; default: what fits in budget_ms
// on an unloaded machine) so that a given seed gives the same plan; the wall clock (twice budget_ms,
// param budget_ms default min(2000, 100 + 4n)) is only a safety net.
//
// Small graphs (n <= param bnb_tasks, default 60, the graphs the exact solver accepts): the branch and
// bound of exact.cpp then runs from the local search's plan for the rest of the time limit
// (SchedOptions::timeLimitSec, default 10 s), or for at most param bnb_nodes nodes when that is set
// (deterministic runs); when it completes, SchedInfo.optimal is set. The default budget_ms is also
// capped at a fifth of the time limit, as exact's own warm start runs best: so best does everything
// exact does, from the same incumbent, with a little more search time, and is never worse than it
// in practice (the target: never worse than any other algorithm). The result is re-judged by
// simulate() and is never worse than the best portfolio member.
//
// Time limit: one absolute deadline (SchedOptions::startDeadline) is set when best starts and bounds
// the portfolio, each member (through SchedOptions::deadline), the local search and the branch and
// bound; at it, best returns its best plan so far with the note "time limit reached".
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sched/branchbound.h"
#include "sched/localsearch.h"
#include "sched/llamarules.h"
#include "sched/offload.h"
#include "sched/throughput.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

std::string fmt(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

/// A member that returns later than this after its deadline counts as over its time share.
constexpr auto kMemberGrace = std::chrono::milliseconds(20);

/// Runs `s` within `deadline` (never: no limit) through SchedOptions: every scheduler stops at its
/// deadline with its best plan so far (tst_sched_timelimit holds each to it) and polls the caller's
/// cancel token, so no watchdog thread is needed. `overran`: it returned more than kMemberGrace late.
Result<Plan> runMember(const Scheduler& s, const CostTable& t, const Constraints& c, const SchedOptions& outer,
                       Deadline deadline, bool* overran, const std::map<std::string, std::string>& params) {
  SchedOptions so;
  so.params = params;
  so.sim = outer.sim;
  so.seed = outer.seed;
  so.timeLimitSec = deadline.never() ? outer.timeLimitSec : std::max(1e-3, deadline.leftSec());
  so.deadline = deadline;
  so.cancel = outer.cancel;
  auto r = s.schedule(t, c, so);
  if (!deadline.never() && std::chrono::steady_clock::now() >= deadline.at() + kMemberGrace) *overran = true;
  return r;
}

class Best final : public Scheduler {
 public:
  std::string name() const override { return "best"; }
  std::string title() const override { return "Partex best (portfolio + local search)"; }
  std::string description() const override {
    return "Runs every other scheduler, keeps the best simulated plan, then improves it by local search "
           "on the critical path (param budget_ms, max_evals, seed).";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    if (o.objective == Objective::Throughput) return bestForThroughput(t, c, o, info);
    const int n = t.numTasks();
    // One deadline for everything below (portfolio, local search, branch and bound).
    const Deadline deadline = o.startDeadline(10.0);
    bool ok = true;
    // The nominal limit (budgets derive from it, so that a given seed gives the same plan whatever the
    // clock), or what an outer deadline leaves.
    const double nominal = o.timeLimitSec > 0 ? o.timeLimitSec : 10.0;
    const double limitSec = o.deadline.never() ? nominal : std::clamp(o.deadline.leftSec(), 0.0, nominal);
    const double budgetMs = std::max(1.0, numParam(o, "budget_ms", std::min({2000.0, 100.0 + 4.0 * n, 200.0 * limitSec}), ok));
    const double memberMs = numParam(o, "member_ms", std::max(100.0, budgetMs / 4), ok);
    // About budget_ms of evaluations on an unloaded machine (one evaluation costs ~1 us + 0.08 us per
    // task and edge); the wall clock (twice the budget) only guards against slow machines.
    const double evalUs = 1.0 + 0.08 * (n + static_cast<double>(t.edges.size()));
    const double maxEvals = numParam(o, "max_evals", std::clamp(budgetMs * 1000.0 / evalUs, 100.0, 100000.0), ok);
    const double anneal = numParam(o, "anneal", search_detail::LocalSearchOptions{}.annealFraction, ok);
    const double bnbTasks = numParam(o, "bnb_tasks", 60, ok);
    const double bnbNodes = numParam(o, "bnb_nodes", 0, ok);  // 0: limited by the time limit only
    if (!ok) return makeError("best: params budget_ms, member_ms, max_evals, anneal, bnb_tasks and bnb_nodes must be numbers");
    // The portfolio: about max(1000, budget_ms) ms, at most 2.5 budget_ms (half of the time limit with
    // the default budget_ms; a function of budget_ms alone, so that exact's warm start, which passes
    // best the budget_ms that best itself would use, runs the same portfolio), and within the deadline.
    const Deadline portfolioEnd = deadline.within(std::min(std::max(1000.0, budgetMs), 2.5 * budgetMs) / 1000.0);

    // ---- Portfolio ----
    struct Member {
      const Scheduler* s;
      bool capped;
      std::map<std::string, std::string> params = {};
    };
    // Built from the registry (every algorithm but exact and best itself): heft and greedy first and
    // uncapped (single passes, and the fallback plan); the others capped, in display order, except that
    // the two that search run last (on large graphs they use up their share, and members skipped for
    // lack of time are these).
    std::vector<std::string> only;
    if (auto it = o.params.find("members"); it != o.params.end())
      for (const auto& x : split(it->second, ',')) only.push_back(trim(x));
    auto isOneOf = [](const std::string& n, std::initializer_list<const char*> names) {
      return std::any_of(names.begin(), names.end(), [&](const char* x) { return n == x; });
    };
    std::vector<Member> members;
    for (const char* first : {"heft", "greedy"})
      if (const Scheduler* s = findScheduler(first)) members.push_back({s, false});
    // Language models (operators named layers.<L>.): the fastest first-k-layers split (offload.h,
    // mode=best-k) is a member, so that best is never slower than any split llama.cpp's users could
    // pick with -ngl, and the local search starts from it when it is the fastest. Elsewhere offload
    // has nothing to split and is left out (not listed as skipped).
    if (const Scheduler* s = findScheduler("offload"); s && hasLayerNames(t) && (only.empty() || std::find(only.begin(), only.end(), "offload") != only.end()))
      members.push_back({s, true, {{"mode", "best-n"}}});
    // And llama.cpp's other rules that apply (n-cpu-moe on MoE models, fit): best is never slower than them.
    if (hasLayerNames(t)) {
      const bool experts = llamaTensors(t).experts;
      for (const char* rule : {"n-cpu-moe", "fit"})
        if (const Scheduler* s = findScheduler(rule);
            s && (experts || std::string(rule) != "n-cpu-moe") &&
            (only.empty() || std::find(only.begin(), only.end(), rule) != only.end()))
          members.push_back({s, true});
    }
    std::vector<Member> searching;
    for (const auto& s : allSchedulers()) {
      const std::string& n = s->name();
      if (isOneOf(n, {"heft", "greedy", "exact", "best"}) || isLlamaRule(n)) continue;
      if (!only.empty() && std::find(only.begin(), only.end(), n) == only.end()) continue;
      (isOneOf(n, {"duet", "pimdp", "pipeline"}) ? searching : members).push_back({s.get(), true});
    }
    members.insert(members.end(), searching.begin(), searching.end());
    // The list heuristics of the literature (HEFT's family and the ones SAGA collects) are single
    // passes: they run right after heft and greedy, before every member that searches or compiles,
    // so that no time share runs out before them and best is never worse than any of them.
    std::stable_partition(members.begin() + 2, members.end(), [&](const Member& mb) {
      return isOneOf(mb.s->name(), {"cpop", "peft", "minmin", "maxmin", "sufferage", "mct", "met", "olb", "duplex", "etf", "hbmct"});
    });
    // Where a device compiles blocks, the members that emit blocks (DLFusion, coarse) are the ones that
    // win there: they run right after heft and greedy, so that a slow machine's time share reaches them.
    if (!t.blockFloor.empty())
      std::stable_partition(members.begin() + 2, members.end(),
                            [&](const Member& mb) { return isOneOf(mb.s->name(), {"dlfusion", "coarse"}); });

    Plan bestPlan;
    double bestMs = kInf;
    std::string bestName;
    std::vector<std::string> skipped;
    std::string capacityError;  // the first member refused for capacity
    int ran = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      if (o.cancelled()) return cancelledError();
      const Scheduler& s = *members[i].s;
      o.report(0.5 * static_cast<double>(i) / static_cast<double>(members.size()), "best: " + s.name());
      Deadline limit;  // heft and greedy: none (single passes, and the fallback plan)
      if (members[i].capped) {
        limit = portfolioEnd.within(memberMs / 1000.0);
        if (limit.passed()) {
          skipped.push_back(s.name() + " (no time left)");
          continue;
        }
      }
      bool overran = false;
      auto p = runMember(s, t, c, o, limit, &overran, members[i].params);
      if (o.cancelled()) return cancelledError();
      if (!p) {
        skipped.push_back(s.name() + (overran ? " (over its time share)" : " (" + p.message() + ")"));
        if (capacityError.empty() && !overran && hasCapacityLimits(t) && p.message().find(" available") != std::string::npos)
          capacityError = p.message();
        continue;
      }
      auto tl = simulate(t, *p, o.sim);
      if (!tl) {
        skipped.push_back(s.name() + " (" + tl.message() + ")");
        continue;
      }
      ++ran;
      if (tl->makespan < bestMs) {
        bestMs = tl->makespan;
        bestPlan = std::move(p).value();
        bestName = s.name();
      }
    }
    // Nothing fits: the first member's one-line capacity error (the device, the bytes needed and
    // available), not the list of every member's.
    if (bestName.empty() && !capacityError.empty()) return makeError("best: no plan within capacity: ", capacityError);
    if (bestName.empty()) return makeError("best: every portfolio member failed (", join(skipped, "; "), ")");

    // ---- Local search ----
    search_detail::LocalSearchOptions lo;
    lo.seed = o.seed;
    lo.cancel = o.cancel;
    lo.maxEvals = static_cast<int64_t>(std::max(0.0, maxEvals));
    lo.annealFraction = std::clamp(anneal, 0.0, 1.0);
    lo.deadline = deadline.within(2.0 * budgetMs / 1000.0);  // twice the budget: the safety net
    lo.progress = [&](double f) { o.report(0.5 + 0.5 * std::min(1.0, f), "best: local search"); };
    Plan plan = bestPlan;
    double planMs = bestMs;
    search_detail::LocalSearchResult ls;
    if (lo.maxEvals > 0 && !lo.deadline.passed() && n > 0) {
      // The search moves single operators and judges plans without blocks (fastsim.h): it starts from
      // the member's placement and orders, and its plan replaces the member's only when faster.
      Plan start = bestPlan;
      start.blocks.clear();
      ls = search_detail::localSearch(t, c, o.sim, start, lo);
      if (o.cancelled()) return cancelledError();
      auto tl = simulate(t, ls.plan, o.sim);
      if (tl && tl->makespan < planMs && respectsConstraints(t, c, ls.plan) && checkCapacity(t, ls.plan, &*tl)) {
        plan = ls.plan;
        planMs = tl->makespan;
      }
    }

    // ---- Fused kernels kept whole: a group the runtime fuses (known from the profile) that the plan
    // splits is put together on the device of its last operator (which carries the kernel's measured
    // time), contiguously where that operator was; kept when the simulated makespan is no worse. Moving
    // is always valid: a group's inner tensors have no other reader. ----
    for (const auto& grp : t.fusedGroups) {
      if (o.cancelled()) return cancelledError();
      const DeviceId target = plan.device[static_cast<size_t>(grp.back())];
      bool split = false;
      for (TaskId v : grp) split = split || plan.device[static_cast<size_t>(v)] != target;
      if (!split) continue;
      bool canRun = true;
      for (TaskId v : grp) canRun = canRun && t.canRun(v, target);
      if (!canRun) continue;
      Plan moved = plan;
      for (TaskId v : grp) {
        auto& ord = moved.order[static_cast<size_t>(moved.device[static_cast<size_t>(v)])];
        if (v != grp.back()) ord.erase(std::remove(ord.begin(), ord.end(), v), ord.end());
        moved.device[static_cast<size_t>(v)] = target;
      }
      auto& ord = moved.order[static_cast<size_t>(target)];
      auto at = std::find(ord.begin(), ord.end(), grp.back());
      ord.insert(at, grp.begin(), grp.end() - 1);
      dropBrokenBlocks(t, moved);
      if (!respectsConstraints(t, c, moved)) continue;
      auto tl = simulate(t, moved, o.sim);
      if (tl && tl->makespan <= planMs && checkCapacity(t, moved, &*tl)) {
        plan = std::move(moved);
        planMs = tl->makespan;
      }
    }

    // ---- Branch and bound on small graphs, warm-started with the local search's plan ----
    search_detail::BnbResult bnb;
    bool ranBnb = false;
    if (n > 0 && n <= bnbTasks && bnbNodes >= 0) {
      SchedOptions bo;
      bo.sim = o.sim;
      bo.cancel = o.cancel;
      if (!deadline.passed()) {
        o.report(0.95, "best: branch and bound");
        bnb = search_detail::branchAndBound(t, c, bo, deadline, static_cast<int64_t>(bnbNodes), &plan, planMs);
        ranBnb = true;
        if (o.cancelled()) return cancelledError();
        // The branch and bound prunes on weights and accepts leaves within capacity; its plan is
        // checked once more against the whole memory model before it replaces best's.
        auto fits = [&](const Plan& p) {
          if (!hasCapacityLimits(t)) return true;
          auto tl = simulate(t, p, o.sim);
          return tl && checkCapacity(t, p, &*tl).isOk();
        };
        if (bnb.found && bnb.makespan < planMs && respectsConstraints(t, c, bnb.plan) && fits(bnb.plan)) {
          plan = bnb.plan;
          planMs = bnb.makespan;
        }
      }
    }
    if (info) {
      info->bound = lowerBound(t, c);
      if (ranBnb && bnb.complete) {
        info->optimal = true;
        info->bound = planMs;
      } else if (ranBnb) {
        info->bound = std::min(planMs, std::max(info->bound, bnb.bound));
      }
      info->notes.push_back("portfolio: " + bestName + " " + fmt(bestMs) + " us, best of " + std::to_string(ran) + " members");
      if (!skipped.empty()) info->notes.push_back("skipped: " + join(skipped, "; "));
      std::string lsNote = "local search: " + std::to_string(ls.evals) + " evaluations, " + std::to_string(ls.improvements) + " improvements";
      if (planMs < bestMs) lsNote += ", " + fmt(planMs) + " us (-" + fmt(100.0 * (bestMs - planMs) / bestMs) + "%)";
      if (ls.stoppedByClock) lsNote += ", stopped by budget_ms";
      info->notes.push_back(lsNote);
      if (ranBnb)
        info->notes.push_back("branch and bound: " + std::to_string(bnb.nodes) + " nodes, " +
                              (bnb.complete ? std::string("optimal") : std::string("stopped (") + (bnb.timedOut ? "time limit" : "bnb_nodes") + ")"));
      if (!info->optimal && (bnb.timedOut || deadline.passed())) info->notes.push_back("time limit reached");
    }
    o.report(1.0, "best: done");
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeBest() { return std::make_unique<Best>(); }

}  // namespace partex
