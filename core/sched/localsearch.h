#pragma once
/// \file The local search of `best` (best.cpp describes the strategy); internal to core/sched.
/// localSearch(): iterated local search, simulated annealing, iterated local search again, over plans
/// (insertions at any consistent position, device reassignment, order swaps, moves of critical-path
/// stretches, device exchanges, re-ordering by assignment-aware rank or list scheduling), strict
/// improvements of (makespan, sum of finish times), seeded perturbations, evaluation limit plus a
/// deadline (the caller's time limit, also a safety net). Plans are judged by the simulator's fast
/// path (sim/fastsim.h), which also gives the critical path to follow; every plan it is used to pick
/// is re-judged by simulate().

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "sched/scheduler.h"

namespace partex::search_detail {

/// Per-device orders by decreasing "assignment-aware" upward rank: w(v, dev v) plus, over successors,
/// the exact transfer time between the assigned devices; ties by topological position.
void orderByAssignedRank(const CostTable& t, Plan& plan, const std::vector<int32_t>& topoPos);

struct LocalSearchOptions {
  int64_t maxEvals = 10000;       ///< Evaluation limit (the deterministic stop).
  Deadline deadline;              ///< Wall clock: the caller's time limit, and a safety net on slow machines.
  uint64_t seed = 1;
  double annealFraction = 0.4;    ///< Share of the evaluations for simulated annealing (after a first descent).
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(double)> progress;  ///< Fraction of the evaluation budget used; may be empty.
};

struct LocalSearchResult {
  Plan plan;
  double makespan = 0;  ///< FastSim makespan of plan.
  int64_t evals = 0;
  int64_t improvements = 0;
  bool stoppedByClock = false;
};

/// Improves `start` (which must simulate) under the constraints; never returns a plan worse than it.
LocalSearchResult localSearch(const CostTable& t, const Constraints& c, const SimOptions& sim, const Plan& start,
                              const LocalSearchOptions& lo);

}  // namespace partex::search_detail
