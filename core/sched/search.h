#pragma once
/// \file Machinery of the search-based schedulers (exact.cpp, best.cpp); internal to core/sched.
/// - BusyIntervals: the simulator's busy-interval sets (first gap that fits), reproduced bit for bit.
/// - FastSim: a lean re-implementation of simulate()'s makespan (no timeline copy, no memory peaks,
///   buffers kept between calls; ONNX edges are sent once per (producer, destination), task-graph edges
///   with fixed costs are separate messages) that also records why each task started when it did, so that local
///   search can follow the critical path. Every plan it is used to pick is re-judged by simulate().
/// - branchAndBound(): the exact search of exact.cpp (also used by best on small graphs).
/// - localSearch(): iterated local search, simulated annealing, iterated local search again, over plans (insertions at any
///   consistent position, device reassignment, order swaps, moves of critical-path stretches, device
///   exchanges, re-ordering by assignment-aware rank or list scheduling), strict improvements of
///   (makespan, sum of finish times), seeded perturbations, evaluation limit plus a deadline (the
///   caller's time limit, also a safety net). best.cpp describes the strategy.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sched/scheduler.h"
#include "sim/intervals.h"

namespace partex::search_detail {

using partex::BusyIntervals;

/// Why a task started when it did (for critical paths).
enum class StartCause : uint8_t { Time0, DevicePrev, Data, Input, Exclusive };

/// simulate()'s makespan, lean. Assumes a plan of the right shape (checkPlanShape passes).
class FastSim {
 public:
  FastSim(const CostTable& t, const SimOptions& o);
  /// Simulates; returns the makespan, or -1 when the orders deadlock.
  double run(const Plan& plan);
  const std::vector<double>& start() const { return start_; }
  const std::vector<double>& finish() const { return finish_; }
  double sumFinish() const { return sumFinish_; }
  /// The critical path of the last successful run, from its first task to the task that ends last.
  std::vector<TaskId> criticalPath(const Plan& plan) const;

 private:
  const CostTable& t_;
  SimOptions o_;
  int n_ = 0, m_ = 0;
  std::vector<int> indeg_;
  std::vector<double> arrival_, finish_, start_, devFree_, inputReady_, edgeArrival_;
  std::vector<size_t> pos_;
  std::vector<int> pending_;
  std::vector<BusyIntervals> devBusy_, links_;
  std::vector<StartCause> cause_, headCause_;
  std::vector<char> headValid_;
  std::vector<double> headReady_;
  std::vector<TaskId> headCauseTask_;
  std::vector<TaskId> causeTask_;
  std::vector<std::pair<double, int64_t>> perDest_;
  TaskId lastTask_ = -1;  ///< The task (or output transfer's task) that sets the makespan.
  double sumFinish_ = 0;
};

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

/// Branch and bound over the simulator's own decisions (exact.cpp describes it). The result is
/// the best plan found (re-judged by simulate()), or the warm start when nothing better turned up.
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

/// Improves `start` (which must simulate) under the constraints; never returns a plan worse than it.
LocalSearchResult localSearch(const CostTable& t, const Constraints& c, const SimOptions& sim, const Plan& start,
                              const LocalSearchOptions& lo);

}  // namespace partex::search_detail
