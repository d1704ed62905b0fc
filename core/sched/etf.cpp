// ETF, Earliest Time First (J.-J. Hwang, Y.-C. Chow, F. D. Anger, C.-Y. Lee, "Scheduling precedence
// graphs in systems with interprocessor communication times", SIAM J. Computing 18(2), 1989; as in
// SAGA): at every step, of all pairs of a ready task and a device, the one that can start earliest is
// scheduled; ties go to the task with the larger static level (here the upward rank).
#include "sched/algorithms.h"
#include "sched/batchmode.h"

namespace partex {

namespace {

using namespace sched_detail;

class Etf final : public Scheduler {
 public:
  std::string name() const override { return "etf"; }
  std::string title() const override { return "ETF (Hwang et al. 1989)"; }
  std::string description() const override {
    return "Earliest Time First: of all ready (task, device) pairs, the earliest start goes first (ties: larger upward "
           "rank).";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    const std::vector<TaskId> topo = t.topoOrder();
    const std::vector<double> rank = upwardRanks(t, topo, meanCosts(t, c), meanComms(t, c));
    return batchSchedule(t, c, o, name(), [&](const std::vector<BatchOption>& r) {
      size_t best = 0;
      for (size_t i = 1; i < r.size(); ++i) {
        const double a = r[i].start, b = r[best].start;
        if (a < b || (a == b && rank[static_cast<size_t>(r[i].task)] > rank[static_cast<size_t>(r[best].task)]))
          best = i;
      }
      return BatchChoice{best, r[best].earliest};
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeEtf() {
  return std::make_unique<Etf>();
}

}  // namespace partex
