// Sufferage (M. Maheswaran, S. Ali, H. J. Siegel, D. Hensgen, R. F. Freund, "Dynamic mapping of a class
// of independent tasks onto heterogeneous computing systems", JPDC 59(2), 1999; as in SAGA): the ready
// task whose sufferage (earliest finish on its second-best device minus on its best) is the largest
// goes first, to its best device.
#include "sched/algorithms.h"
#include "sched/batchmode.h"

namespace partex {

namespace {

using namespace sched_detail;

class Sufferage final : public Scheduler {
 public:
  std::string name() const override { return "sufferage"; }
  std::string title() const override { return "Sufferage (Maheswaran et al. 1999)"; }
  std::string description() const override {
    return "Batch mode: the ready task that would lose most if denied its best device (second-best finish minus best) "
           "goes first.";
  }

 protected:
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o,
                   SchedInfo* /*info*/) const override {
    return batchSchedule(t, c, o, name(), [](const std::vector<BatchOption>& r) {
      size_t best = 0;
      auto suffer = [&](size_t i) { return r[i].secondFinish == kInf ? kInf : r[i].secondFinish - r[i].finish; };
      for (size_t i = 1; i < r.size(); ++i)
        if (suffer(i) > suffer(best)) best = i;
      return BatchChoice{best, r[best].fastest};
    });
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeSufferage() {
  return std::make_unique<Sufferage>();
}

}  // namespace partex
