#pragma once
/// \file The search's fast path through the simulator's rules (simrules.h): the makespan of a plan
/// with no timeline, no transfer list and no memory peaks, buffers kept between calls, plus the start,
/// finish and start cause of every task, so that the local search can follow the critical path. Same
/// decisions and arithmetic as simulate() (tst_simulator checks it on random plans).

#include <vector>

#include "sim/simrules.h"

namespace partex {

class FastSim {
 public:
  FastSim(const CostTable& t, const SimOptions& o);
  FastSim(const FastSim&) = delete;
  FastSim& operator=(const FastSim&) = delete;
  /// simulate()'s makespan of a plan of the right shape (checkPlanShape passes), or -1 when its
  /// orders deadlock.
  double run(const Plan& plan);
  const std::vector<double>& start() const { return start_; }
  const std::vector<double>& finish() const { return finish_; }
  /// Sum of the task finish times of the last run (the search's tie-breaker).
  double sumFinish() const { return sumFinish_; }
  /// The critical path of the last successful run, from its first task to the task whose end (or
  /// model output) sets the makespan, following what set each start.
  std::vector<TaskId> criticalPath(const Plan& plan) const;

 private:
  struct Recorder;
  SimRules rules_;
  PlanRunner runner_;
  int n_ = 0;
  std::vector<double> start_, finish_;
  std::vector<StartCause> cause_;
  std::vector<TaskId> causeTask_;
  TaskId lastTask_ = -1;
  double sumFinish_ = 0;
};

}  // namespace partex
