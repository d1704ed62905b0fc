// MCT, Minimum Completion Time (R. Armstrong, D. Hensgen, T. Kidd, "The relative performance of
// various mapping algorithms is independent of sizable variances in run-time predictions", HCW 1998;
// Braun et al., JPDC 61(6), 2001; as in SAGA): tasks one at a time in topological order, each on the
// device with its earliest completion time.
#include "sched/algorithms.h"
#include "sched/listsched.h"

namespace partex {

namespace {

using namespace sched_detail;

class Mct final : public Scheduler {
 public:
  std::string name() const override { return "mct"; }
  std::string title() const override { return "MCT (Armstrong et al. 1998)"; }
  std::string description() const override {
    return "Minimum Completion Time: tasks in topological order, each on the device that finishes it first.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return topologicalListSchedule(t, c, o, name(),
                                   [&](TaskId v, DeviceId d, ListTimeline& tl) { return tl.evaluate(v, d).effFinish; });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeMct() {
  return std::make_unique<Mct>();
}

}  // namespace partex
