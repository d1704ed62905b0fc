// MaxMin (Ibarra and Kim, J. ACM 1977; Braun et al., JPDC 2001; as in SAGA): among the ready tasks, the
// one whose earliest finish time is the largest is placed first, on the device that gives it, so that
// long tasks start early and short ones fill in around them.
#include "sched/algorithms.h"
#include "sched/batchmode.h"

namespace partex {

namespace {

using namespace sched_detail;

class MaxMin final : public Scheduler {
 public:
  std::string name() const override { return "maxmin"; }
  std::string title() const override { return "MaxMin (Ibarra and Kim 1977)"; }
  std::string description() const override {
    return "Batch mode: of the ready tasks, the one whose earliest finish is largest goes first, to that device.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return batchSchedule(t, c, o, name(), [](const std::vector<BatchOption>& r) {
      size_t best = 0;
      for (size_t i = 1; i < r.size(); ++i)
        if (r[i].finish > r[best].finish) best = i;
      return BatchChoice{best, r[best].fastest};
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeMaxMin() {
  return std::make_unique<MaxMin>();
}

}  // namespace partex
