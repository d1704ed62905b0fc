// HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002): upward ranks with mean costs; tasks by
// decreasing rank; each on the device with the earliest finish time, inserted into the first idle gap
// that fits.
#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Heft final : public Scheduler {
 public:
  std::string name() const override { return "heft"; }
  std::string title() const override { return "HEFT (Topcuoglu et al. 2002)"; }
  std::string description() const override {
    return "Heterogeneous Earliest Finish Time: tasks by decreasing upward rank, each on the device that "
           "finishes it first (insertion into idle gaps).";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* /*info*/) const override {
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<double> rank = upwardRanks(t, topo, meanCosts(t, c), meanComms(t, c));
    return listSchedule(t, c, o, name(), rank, [&](TaskId v, ListTimeline& tl) {
      return argminAllowed(t, c, v, [&](DeviceId d) { return tl.evaluate(v, d).effFinish; });
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeHeft() { return std::make_unique<Heft>(); }

}  // namespace partex
