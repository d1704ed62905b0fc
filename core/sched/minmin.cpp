// MinMin (O. H. Ibarra, C. E. Kim, "Heuristic algorithms for scheduling independent tasks on
// nonidentical processors", J. ACM 24(2), 1977; for DAGs as in Braun et al., JPDC 61(6), 2001, and
// SAGA): among the ready tasks, the one with the smallest earliest finish time is placed first, on the
// device that gives it.
#include "sched/algorithms.h"
#include "sched/batchmode.h"

namespace partex {

namespace {

using namespace sched_detail;

class MinMin final : public Scheduler {
 public:
  std::string name() const override { return "minmin"; }
  std::string title() const override { return "MinMin (Ibarra and Kim 1977)"; }
  std::string description() const override {
    return "Batch mode: of the ready tasks, the one whose earliest finish is smallest goes first, to that device.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return batchSchedule(t, c, o, name(), [](const std::vector<BatchOption>& r) {
      size_t best = 0;
      for (size_t i = 1; i < r.size(); ++i)
        if (r[i].finish < r[best].finish) best = i;
      return BatchChoice{best, r[best].fastest};
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeMinMin() {
  return std::make_unique<MinMin>();
}

}  // namespace partex
