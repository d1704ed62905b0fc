// Exact optimum of the simulator's model by branch and bound (not a MILP: the simulator's link
// first-fit bookings, send-once-per-destination transfers, exclusive devices and host inputs/outputs
// are awkward to model faithfully as a MILP; a search that replays the simulator step by step is exact
// by construction). The search itself lives in search.cpp (branchAndBound), which best.cpp also uses
// on small graphs.
//
// Search space. simulate() processes tasks one at a time: among the devices whose next task has all
// inputs, the one that can start earliest (ties: lowest device index); start times are therefore
// non-decreasing along that sequence, and every transfer is booked when its producer is processed.
// The search builds such sequences: a node is the simulator's state after a prefix; a branch picks a
// ready task x (and its device when not yet fixed), computes its start exactly as the simulator would,
// and at that moment fixes the devices of x's still unassigned successors (the simulator needs them to
// book x's transfers, one message per destination device, or one per edge for task-graph edges with
// fixed costs). Devices of tasks that read model inputs are fixed first (root levels), because
// the simulator books input transfers before anything else. Only "canonical" sequences are kept: the
// start of x is not below the last start, and on equal starts the lower device goes first unless x
// depends on the later steps. The sequence the simulator itself follows for any plan is canonical, so
// the optimum is among the leaves; each leaf is re-judged with simulate() before it becomes the
// incumbent, and the incumbent is always a simulate() value.
//
// Bounds (valid for every canonical completion): the makespan so far; for each unprocessed task and
// candidate device, earliest start (>= last start, device free time, exact arrivals from processed
// producers, earliest finishes of unprocessed producers plus uncontended transfer times) plus the
// longest remaining path with the cheapest devices and uncontended transfers (outputs back to the
// host included); per-device and exclusive-pair loads; the remaining work water-filled over the
// devices' free times, and spread over the most devices that may run at once (exclusive groups). Children are explored best bound first; the incumbent starts as the best of
// HEFT, PEFT, CPOP, greedy, single device and `best` (all re-judged by simulate()).
//
// Result: SchedInfo.optimal when the search completed; otherwise SchedInfo.bound is the smallest bound
// of the subtrees not fully explored (and a note says why the search stopped). Graphs above param
// max_tasks (default 60) are refused; param max_nodes (default 0: unlimited) stops the search after
// that many nodes (deterministic runs); param warm_best=0 skips `best` as a warm start, warm=0 every
// warm start (the search alone).
//
// Forks: when the successors to fix have more than param flat_combos (default 64) device
// combinations, the child is one (task, device) and the successors' devices are branched on one at a
// time, each level with its own bound (a fork of 27 tasks on 4 devices has 4^27 combinations).
//
// Time limit: one deadline (SchedOptions::startDeadline, default 10 s) for the warm starts (best gets
// a fifth of the limit) and the search; the search reads the cancel token at every node, bound and
// leaf and the clock every 16th, and at the deadline returns the incumbent ("time limit reached").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sched/branchbound.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

class Exact final : public Scheduler {
 public:
  std::string name() const override { return "exact"; }
  std::string title() const override { return "Exact optimum (branch and bound)"; }
  std::string description() const override {
    return "The true optimum of the simulator's model for small graphs: branch and bound over the "
           "simulator's own decisions, warm-started from the best heuristic (param max_tasks, default 60).";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const int n = t.numTasks();
    bool ok = true;
    const auto maxTasks = static_cast<int64_t>(numParam(o, "max_tasks", 60, ok));
    const auto maxNodes = static_cast<int64_t>(std::max(0.0, numParam(o, "max_nodes", 0, ok)));
    const bool warmAll = numParam(o, "warm", 1, ok) != 0;
    const bool useBest = numParam(o, "warm_best", 1, ok) != 0;
    numParam(o, "flat_combos", 64, ok);  // read by the search
    if (!ok) return makeError("exact: params max_tasks, max_nodes, warm, warm_best and flat_combos must be numbers");
    if (n > maxTasks)
      return makeError("exact: '", t.name, "' has ", std::to_string(n), " operators, more than max_tasks=", std::to_string(maxTasks),
                       "; the exact solver is for small graphs (use best or heft, or raise max_tasks)");
    // One deadline for the warm starts and the search.
    const Deadline deadline = o.startDeadline(10.0);
    // The nominal limit (budgets derive from it, so that they do not depend on the clock), or what an
    // outer deadline leaves.
    const double nominal = o.timeLimitSec > 0 ? o.timeLimitSec : 10.0;
    const double limit = o.deadline.never() ? nominal : std::clamp(o.deadline.leftSec(), 0.0, nominal);
    if (n == 0 || t.numDevices() == 0) {
      Plan p;
      p.device.assign(static_cast<size_t>(n), 0);
      p.order.assign(static_cast<size_t>(t.numDevices()), {});
      if (info) {
        info->optimal = true;
        info->bound = 0;
      }
      return p;
    }

    // Warm starts, each judged by the simulator.
    o.report(0.0, "exact: warm starts");
    std::string warmName;
    double warmBest = kInf;
    Plan warmPlan;
    {
      SchedOptions wo;
      wo.sim = o.sim;
      wo.seed = o.seed;
      wo.cancel = o.cancel;
      wo.timeLimitSec = std::max(0.05, limit * 0.2);
      wo.deadline = deadline;
      std::vector<std::unique_ptr<Scheduler>> warm;
      if (warmAll) {
        warm.push_back(makeHeft());
        warm.push_back(makePeft());
        warm.push_back(makeCpop());
        warm.push_back(makeGreedy());
        warm.push_back(makeSingleDevice());
        if (useBest) warm.push_back(makeBest());
      }
      for (const auto& s : warm) {
        if (o.cancelled()) return cancelledError();
        SchedOptions so = wo;
        // best runs with its default budget (min(2000, 100 + 4n) ms), at most a fifth of the limit.
        if (s->name() == "best")
          so.params["budget_ms"] = std::to_string(std::max(1, static_cast<int>(std::min({2000.0, 100.0 + 4.0 * n, 200.0 * limit}))));
        auto p = s->schedule(t, c, so);
        if (!p) continue;  // schedule() refuses a plan that breaks the constraints
        auto tl = simulate(t, *p, o.sim);
        if (!tl) continue;
        if (tl->makespan < warmBest) {
          warmBest = tl->makespan;
          warmName = s->name();
          warmPlan = std::move(p).value();
        }
      }
    }
    if (o.cancelled()) return cancelledError();
    const auto search = search_detail::branchAndBound(t, c, o, deadline, maxNodes, warmName.empty() ? nullptr : &warmPlan, warmBest);
    o.report(0.2, "exact: branch and bound");
    if (search.cancelled || o.cancelled()) return cancelledError();
    if (!search.found && hasCapacityLimits(t) && !o.cancelled()) {
      // Capacity pruned every plan the search reached (or every warm start was refused): HEFT's plan
      // without the limits goes to Scheduler::schedule's repair, which finds a plan within capacity
      // (the search ran out of time) or gives the one-line error of the device without room.
      CostTable free = t;
      std::fill(free.memCapacity.begin(), free.memCapacity.end(), 0);
      auto p = makeHeft()->schedule(free, c, SchedOptions{});
      if (p) {
        if (info) info->notes.push_back("no plan within capacity found by the search; HEFT's plan repaired");
        return p;
      }
    }
    if (!search.found) return makeError("exact: no plan found within the time limit (", formatSeconds(limit), ")");

    Plan plan = search.plan;
    if (info) {
      info->optimal = search.complete;
      double b = search.bound;
      if (!search.complete) b = std::min(search.makespan, std::max(b, lowerBound(t, c)));
      info->bound = b;
      if (search.timedOut || (!search.complete && deadline.passed())) info->notes.push_back("time limit reached");
      if (search.nodeLimited) info->notes.push_back("node limit reached");
      info->notes.push_back(std::to_string(search.nodes) + " nodes, " + std::to_string(search.leaves) + " leaves");
      if (!warmName.empty()) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "warm start %s: %.6g us", warmName.c_str(), warmBest);
        info->notes.push_back(buf);
      }
    }
    o.report(1.0, "exact: done");
    return plan;
  }

 private:
  static std::string formatSeconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g s", s);
    return buf;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeExact() { return std::make_unique<Exact>(); }

}  // namespace partex
