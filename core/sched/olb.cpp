// OLB, Opportunistic Load Balancing (Armstrong, Hensgen, Kidd, HCW 1998; Braun et al., JPDC 2001; as
// in SAGA): tasks one at a time in topological order, each on the device that is free first (where it
// can start earliest), regardless of its execution time there.
#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Olb final : public Scheduler {
 public:
  std::string name() const override { return "olb"; }
  std::string title() const override { return "OLB (Armstrong et al. 1998)"; }
  std::string description() const override {
    return "Opportunistic Load Balancing: tasks in topological order, each on the device where it can start first, "
           "whatever it costs there.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return topologicalListSchedule(t, c, o, name(),
                                   [&](TaskId v, DeviceId d, ListTimeline& tl) { return tl.evaluate(v, d).start; });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeOlb() {
  return std::make_unique<Olb>();
}

}  // namespace partex
