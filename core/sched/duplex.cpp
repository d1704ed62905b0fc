// Duplex (Braun et al., "A comparison of eleven static heuristics for mapping a class of independent
// tasks onto heterogeneous distributed computing systems", JPDC 61(6), 2001; as in SAGA): runs MinMin
// and MaxMin and keeps the plan with the smaller makespan (judged by the simulator).
#include "sched/algorithms.h"
#include "sched/batchmode.h"

namespace partex {

namespace {

using namespace sched_detail;

class Duplex final : public Scheduler {
 public:
  std::string name() const override { return "duplex"; }
  std::string title() const override { return "Duplex (Braun et al. 2001)"; }
  std::string description() const override { return "The better of MinMin and MaxMin."; }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto a = makeMinMin()->schedule(t, c, o);
    if (!a) return a;
    auto b = makeMaxMin()->schedule(t, c, o);
    if (!b) return b;
    const bool minFirst = simulatedMakespan(t, *a, o.sim) <= simulatedMakespan(t, *b, o.sim);
    info->notes.push_back(std::string("duplex: ") + (minFirst ? "minmin" : "maxmin") + " is the better");
    return minFirst ? a : b;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeDuplex() {
  return std::make_unique<Duplex>();
}

}  // namespace partex
