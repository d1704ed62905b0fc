// PEFT (Arabnejad & Barbosa, IEEE TPDS 25(3), 2014): optimistic cost table
// OCT(v,d) = max_s min_d' [OCT(s,d') + w(s,d') + (cbar(v,s) if d' != d)], 0 at exits; priority
// rank_oct = mean of OCT(v,.) over the devices allowed for v; each task on the device minimising
// EFT + OCT (insertion into idle gaps).
#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Peft final : public Scheduler {
 public:
  std::string name() const override { return "peft"; }
  std::string title() const override { return "PEFT (Arabnejad & Barbosa 2014)"; }
  std::string description() const override {
    return "Predict Earliest Finish Time: an optimistic cost table looks ahead; each task on the device "
           "minimising its finish time plus the optimistic remaining time.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* /*info*/) const override {
    const int n = t.numTasks();
    const int nd = t.numDevices();
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<double> cbar = meanComms(t, c);
    const std::vector<double> oct = optimisticCostTable(t, c, topo, cbar);
    std::vector<double> rank(static_cast<size_t>(n), 0.0);
    for (TaskId v = 0; v < n; ++v) {
      double sum = 0;
      int k = 0;
      for (DeviceId d = 0; d < nd; ++d)
        if (c.allowed(t, v, d)) {
          sum += oct[static_cast<size_t>(v) * static_cast<size_t>(nd) + static_cast<size_t>(d)];
          ++k;
        }
      rank[static_cast<size_t>(v)] = k ? sum / k : 0.0;
    }
    return listSchedule(t, c, o, name(), rank, [&](TaskId v, ListTimeline& tl) {
      return argminAllowed(t, c, v, [&](DeviceId d) {
        return tl.evaluate(v, d).effFinish + oct[static_cast<size_t>(v) * static_cast<size_t>(nd) + static_cast<size_t>(d)];
      });
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makePeft() { return std::make_unique<Peft>(); }

}  // namespace partex
