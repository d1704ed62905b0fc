// CPOP (Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002): priority rank_u + rank_d; the critical path
// (the entry with the largest priority, then successors whose priority equals it) goes on the one
// device minimising its summed cost; every other task on the device with the earliest finish time
// (insertion). Tasks leave a ready queue by decreasing priority.
#include <cmath>

#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Cpop final : public Scheduler {
 public:
  std::string name() const override { return "cpop"; }
  std::string title() const override { return "CPOP (Topcuoglu et al. 2002)"; }
  std::string description() const override {
    return "Critical Path on a Processor: the critical path on the device that runs it fastest, the other "
           "tasks by earliest finish time.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const int n = t.numTasks();
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<double> wbar = meanCosts(t, c);
    const std::vector<double> cbar = meanComms(t, c);
    const std::vector<double> up = upwardRanks(t, topo, wbar, cbar);
    const std::vector<double> down = downwardRanks(t, topo, wbar, cbar);
    std::vector<double> prio(static_cast<size_t>(n));
    for (size_t i = 0; i < prio.size(); ++i) prio[i] = up[i] + down[i];

    // The critical path: from the entry with the largest priority, follow successors of equal priority.
    std::vector<char> onCp(static_cast<size_t>(n), 0);
    std::vector<TaskId> cp;
    TaskId entry = -1;
    for (TaskId v = 0; v < n; ++v)
      if (t.inEdges[static_cast<size_t>(v)].empty() && (entry < 0 || prio[static_cast<size_t>(v)] > prio[static_cast<size_t>(entry)]))
        entry = v;
    if (entry >= 0) {
      const double len = prio[static_cast<size_t>(entry)];
      const double tol = 1e-9 * std::max(1.0, std::fabs(len));
      for (TaskId v = entry; v >= 0;) {
        onCp[static_cast<size_t>(v)] = 1;
        cp.push_back(v);
        TaskId next = -1;
        for (int32_t e : t.outEdges[static_cast<size_t>(v)]) {
          const TaskId s = t.edges[static_cast<size_t>(e)].dst;
          if (std::fabs(prio[static_cast<size_t>(s)] - len) <= tol && (next < 0 || s < next)) next = s;
        }
        v = next;
      }
    }
    // The device minimising the summed cost of the critical path, among those allowed for all of it.
    DeviceId cpDev = -1;
    double cpCost = kInf;
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      double sum = 0;
      for (TaskId v : cp) {
        if (!c.allowed(t, v, d)) {
          sum = kInf;
          break;
        }
        sum += t.w(v, d);
      }
      if (sum < cpCost) {
        cpCost = sum;
        cpDev = d;
      }
    }
    if (info) {
      if (cpDev >= 0)
        info->notes.push_back("critical path: " + std::to_string(cp.size()) + " tasks on " +
                              t.deviceIds[static_cast<size_t>(cpDev)]);
      else if (!cp.empty())
        info->notes.push_back("critical path: no device may run all of it; placed by earliest finish time");
    }
    return listSchedule(t, c, o, name(), prio, [&](TaskId v, ListTimeline& tl) {
      if (cpDev >= 0 && onCp[static_cast<size_t>(v)]) return cpDev;
      return argminAllowed(t, c, v, [&](DeviceId d) { return tl.evaluate(v, d).effFinish; });
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeCpop() { return std::make_unique<Cpop>(); }

}  // namespace partex
