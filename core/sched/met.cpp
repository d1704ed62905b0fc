// MET, Minimum Execution Time (Armstrong, Hensgen, Kidd, HCW 1998; Braun et al., JPDC 2001; as in
// SAGA): tasks one at a time in topological order, each on the device with its smallest execution
// time, ignoring how busy the device is and what the transfers cost.
#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Met final : public Scheduler {
 public:
  std::string name() const override { return "met"; }
  std::string title() const override { return "MET (Armstrong et al. 1998)"; }
  std::string description() const override {
    return "Minimum Execution Time: tasks in topological order, each on the device that runs it fastest, whatever its "
           "load.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return topologicalListSchedule(t, c, o, name(),
                                   [&](TaskId v, DeviceId d, ListTimeline& /*tl*/) { return t.w(v, d); });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeMet() {
  return std::make_unique<Met>();
}

}  // namespace partex
