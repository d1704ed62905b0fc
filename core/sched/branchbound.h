#pragma once
/// \file The branch and bound of `exact` (exact.cpp describes it), also run by `best` on small graphs;
/// internal to core/sched. It steps the simulator's own rules (sim/simrules.h) one task at a time.

#include <cstdint>

#include "sched/scheduler.h"

namespace partex::search_detail {

/// The result: the best plan found (re-judged by simulate()), or the warm start when nothing better
/// turned up.
struct BnbResult {
  bool complete = false;     ///< The search finished: the plan is optimal.
  bool timedOut = false, nodeLimited = false, cancelled = false;
  bool found = false;        ///< `plan` holds a plan (the warm start counts).
  Plan plan;
  double makespan = 0;       ///< simulate() makespan of `plan` (infinity when none).
  double bound = 0;          ///< Best proven lower bound (== makespan when complete).
  int64_t nodes = 0, leaves = 0;
};
/// Stops at `deadline` or when o's cancel token is set (within well under a millisecond).
BnbResult branchAndBound(const CostTable& t, const Constraints& c, const SchedOptions& o, Deadline deadline, int64_t maxNodes,
                         const Plan* warm = nullptr, double warmMakespan = 0);

}  // namespace partex::search_detail
