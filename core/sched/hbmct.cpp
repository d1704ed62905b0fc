// HBMCT, Hybrid Balanced Minimum Completion Time (R. Sakellariou, H. Zhao, "A hybrid heuristic for DAG
// scheduling on heterogeneous systems", IPDPS/HCW 2004; as in SAGA), reconstructed:
//  1. Tasks by decreasing upward rank (HEFT's mean costs), cut into groups of independent tasks: a
//     group ends before the first task that depends directly on a task in it.
//  2. Each group in turn: every task first to the device of its earliest completion (MCT, in rank
//     order), then balanced: while some move of a task off the device that finishes the group last,
//     to another allowed device, lowers the group's latest finish, the best such move is made and the
//     group re-placed (at most 4 x group size moves; stops at the time limit or on cancel).
#include <memory>

#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Hbmct final : public Scheduler {
 public:
  std::string name() const override { return "hbmct"; }
  std::string title() const override { return "HBMCT (Sakellariou and Zhao 2004) (reconstructed)"; }
  std::string description() const override {
    return "Groups of independent tasks by upward rank, each placed by minimum completion time and then "
           "balanced by moving tasks off the device that finishes the group last.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const Deadline deadline = o.startDeadline();
    const int n = t.numTasks(), m = t.numDevices();
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<int32_t> pos = topoPositions(t, topo);
    const std::vector<double> rank = upwardRanks(t, topo, meanCosts(t, c), meanComms(t, c));
    std::vector<TaskId> order(topo);
    std::stable_sort(order.begin(), order.end(),
                     [&](TaskId a, TaskId b) { return rank[static_cast<size_t>(a)] > rank[static_cast<size_t>(b)]; });
    // Upward ranks fall along every edge (positive costs), but zero-cost tasks can tie: keep the order
    // a linear extension of the dependencies by placing a task only after its predecessors.
    std::vector<std::vector<TaskId>> groups;
    std::vector<int32_t> groupOf(static_cast<size_t>(n), -1);
    {
      std::vector<bool> placed(static_cast<size_t>(n), false);
      std::vector<TaskId> pending(order);
      while (!pending.empty()) {
        std::vector<TaskId> rest;
        for (TaskId v : pending) {
          bool ready = true, dependsOnGroup = false;
          for (int32_t e : t.inEdges[static_cast<size_t>(v)]) {
            const TaskId p = t.edges[static_cast<size_t>(e)].src;
            ready = ready && placed[static_cast<size_t>(p)];
            dependsOnGroup = dependsOnGroup || (!groups.empty() && groupOf[static_cast<size_t>(p)] ==
                                                                       static_cast<int32_t>(groups.size()) - 1);
          }
          if (!ready) {
            rest.push_back(v);
            continue;
          }
          if (groups.empty() || dependsOnGroup) groups.emplace_back();
          groups.back().push_back(v);
          groupOf[static_cast<size_t>(v)] = static_cast<int32_t>(groups.size()) - 1;
          placed[static_cast<size_t>(v)] = true;
        }
        if (rest.size() == pending.size()) return makeError(t.name, ": the task graph has a cycle");
        pending.swap(rest);
      }
    }

    auto tl = std::make_unique<ListTimeline>(t, o.sim);
    int moves = 0;
    bool timeUp = false;
    for (const auto& g : groups) {
      if (o.cancelled()) return cancelledError();
      // Places the group with `dev` on a copy of the timeline; the group's latest finish.
      auto trial = [&](const std::vector<DeviceId>& dev, std::unique_ptr<ListTimeline>& out) {
        out = std::make_unique<ListTimeline>(*tl);
        double latest = 0;
        for (size_t i = 0; i < g.size(); ++i) latest = std::max(latest, out->place(g[i], dev[i]).effFinish);
        return latest;
      };
      std::vector<DeviceId> dev(g.size(), -1);
      auto best = std::make_unique<ListTimeline>(*tl);
      double bestLatest = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        dev[i] = argminAllowed(t, c, g[i], [&](DeviceId d) { return best->evaluate(g[i], d).effFinish; });
        if (dev[i] < 0) return makeError("task '", t.taskNames[static_cast<size_t>(g[i])], "': no allowed device");
        bestLatest = std::max(bestLatest, best->place(g[i], dev[i]).effFinish);
      }
      for (size_t round = 0; g.size() > 1 && m > 1 && round < 4 * g.size() && !timeUp; ++round) {
        if (o.cancelled()) return cancelledError();
        if (deadline.passed()) {
          timeUp = true;
          break;
        }
        DeviceId last = dev[0];
        double lastFinish = -1;
        for (size_t i = 0; i < g.size(); ++i)
          if (best->finish(g[i]) > lastFinish) {
            lastFinish = best->finish(g[i]);
            last = dev[i];
          }
        std::vector<DeviceId> moveDev;
        std::unique_ptr<ListTimeline> moveTl;
        double moveLatest = bestLatest;
        for (size_t i = 0; i < g.size(); ++i) {
          if (dev[i] != last) continue;
          for (DeviceId d = 0; d < m; ++d) {
            if (d == last || !c.allowed(t, g[i], d)) continue;
            std::vector<DeviceId> cand = dev;
            cand[i] = d;
            std::unique_ptr<ListTimeline> x;
            const double latest = trial(cand, x);
            if (latest < moveLatest - 1e-9 * std::max(1.0, moveLatest)) {
              moveLatest = latest;
              moveDev = std::move(cand);
              moveTl = std::move(x);
            }
          }
        }
        if (moveDev.empty()) break;
        dev = std::move(moveDev);
        best = std::move(moveTl);
        bestLatest = moveLatest;
        ++moves;
      }
      tl = std::move(best);
    }
    info->notes.push_back("hbmct: " + std::to_string(groups.size()) + " groups, " + std::to_string(moves) +
                          " balancing moves");
    if (timeUp) info->notes.push_back("time limit reached: later groups not balanced");
    return tl->toPlan(pos, name());
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeHbmct() {
  return std::make_unique<Hbmct>();
}

}  // namespace partex
