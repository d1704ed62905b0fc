#pragma once
/// \file One interface for every scheduling algorithm. A scheduler is a pure, deterministic function
/// of (CostTable, Constraints, Options) -> Plan; it reports progress through a callback, stops within
/// 100 ms when the cancel token is set, returns its best plan so far at its time limit (see
/// SchedOptions::timeLimitSec), and honours pinned tasks and forbidden devices.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "sim/stream.h"

namespace partex {

/// User constraints.
struct Constraints {
  std::map<TaskId, DeviceId> pinned;  ///< Task -> the device it must run on.
  std::vector<DeviceId> forbidden;    ///< Devices no task may use.
  /// True when v may run on d under these constraints (and the cost table).
  bool allowed(const CostTable& t, TaskId v, DeviceId d) const;
  /// Where v runs when its stage's device may not take it: its pinned device, else its fastest allowed
  /// one (-1 when none is allowed).
  DeviceId fallback(const CostTable& t, TaskId v) const;
};

/// One decision of a scheduler, recorded for the GUI's teaching mode (step through an algorithm one
/// decision at a time). Kinds:
///  - "ranks": before the first decision; `values` holds the priority of every task (HEFT's upward
///    rank, CPOP's rank sum, PEFT's OCT mean, ...), `note` what the priority is.
///  - "place": a list scheduler takes `task`, the head of the ready list `ready` (in priority order,
///    `readyPriority` beside it); `finish` per device is the finish time it would have there (kInf
///    where not allowed); it goes to `chosen`. Greedy's steps are "place" too, one per task in
///    dependency order, with no ready list and its costs w(task, d) in `finish` (greedy looks at
///    nothing else).
///  - "dp": PartitionTuner's dynamic programme decides `task` (one step of a branch's chain):
///    `finish` per device is the DP's best cost of the branch prefix ending with `task` on that device
///    (kInf where not allowed); `chosen` is the device the back-tracking picked; `ready` holds the
///    branch's tasks.
struct TraceStep {
  std::string kind;
  TaskId task = -1;
  std::vector<TaskId> ready;
  std::vector<double> readyPriority;
  std::vector<double> values;
  std::vector<double> finish;
  DeviceId chosen = -1;
  std::string note;
};

/// An absolute point in time (steady clock) at which a scheduler stops searching and returns the best
/// plan it has; "never" by default. One deadline is computed when a scheduler starts and passed down
/// to everything it runs (best's portfolio members, exact's warm starts, the local search, the branch
/// and bound), so that nested runs share one budget instead of each restarting a relative limit.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  Deadline() = default;  ///< Never.
  /// `sec` seconds from now (now when sec <= 0); never when `sec` is infinite or NaN.
  static Deadline in(double sec) {
    Deadline d;
    if (std::isnan(sec) || sec == std::numeric_limits<double>::infinity()) return d;
    d.finite_ = true;
    d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(sec, 0.0, 1e9)));
    return d;
  }
  bool never() const { return !finite_; }
  bool passed() const { return finite_ && Clock::now() >= at_; }
  /// Seconds left (negative once passed; infinity when never).
  double leftSec() const { return finite_ ? std::chrono::duration<double>(at_ - Clock::now()).count() : std::numeric_limits<double>::infinity(); }
  /// The earlier of the two.
  Deadline earliest(const Deadline& o) const {
    if (!finite_) return o;
    if (!o.finite_) return *this;
    return at_ <= o.at_ ? *this : o;
  }
  /// The earlier of this one and `sec` seconds from now.
  Deadline within(double sec) const { return earliest(in(sec)); }
  Clock::time_point at() const { return at_; }

 private:
  Clock::time_point at_{};
  bool finite_ = false;
};

struct SchedOptions {
  SimOptions sim;                 ///< The simulator model the plan is judged by.
  /// What the plan minimises: one inference's makespan (every algorithm's default), or the period of a
  /// stream of inferences (sim/stream.h), which `best` and `pipeline` optimise; the others make their
  /// usual plan and are judged by its period.
  Objective objective = Objective::Latency;
  /// With the throughput objective: each inference's latency in the stream at most this (us; <= 0 none).
  double latencyBoundUs = 0;
  /// Wall-clock limit of one run, in seconds (<= 0: none; exact and best then use 10 s). Every
  /// scheduler returns within it (plus the time to finish the plan it has, a few milliseconds) with
  /// the best plan found so far, SchedInfo::optimal false and the note "time limit reached" (the list
  /// schedulers and baselines are single passes that finish far below any practical limit).
  double timeLimitSec = 10.0;
  /// An absolute deadline set by a caller that runs this scheduler inside its own budget (best's
  /// portfolio, exact's warm start); the run stops at the earlier of it and timeLimitSec.
  Deadline deadline;
  uint64_t seed = 1;
  std::map<std::string, std::string> params;  ///< Algorithm-specific ("penalty_us", "priority", ...).
  std::function<void(double fraction, const std::string& what)> progress;  ///< May be empty.
  const std::atomic<bool>* cancel = nullptr;  ///< May be null.
  /// Teaching mode: called at every decision of the algorithms that support it (the list schedulers
  /// heft, cpop, peft, greedy, and partitiontuner's DP); may be empty. Costs time only when set.
  std::function<void(const TraceStep&)> trace;
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
  /// The deadline of a run starting now: the earlier of `deadline` and timeLimitSec from now
  /// (`defaultSec` from now when timeLimitSec <= 0; 0: no limit).
  Deadline startDeadline(double defaultSec = 0) const {
    const double sec = timeLimitSec > 0 ? timeLimitSec : defaultSec;
    return sec > 0 ? deadline.within(sec) : deadline;
  }
  void report(double f, const std::string& what) const {
    if (progress) progress(f, what);
  }
};

/// Extra results of a scheduler run, beyond the plan.
struct SchedInfo {
  bool optimal = false;           ///< Exact solver proved optimality.
  double bound = 0;               ///< Lower bound, where the algorithm computes one.
  int profilingRuns = 0;          ///< PIM DP: number of whole-model profiling runs it needs.
  std::vector<std::string> notes; ///< Human notes (e.g. "time limit reached").
};

/// One algorithm. Callers use schedule(), the same for every algorithm; each algorithm writes only
/// its own step, run().
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;         ///< CLI name, e.g. "heft".
  virtual std::string title() const = 0;        ///< Display name, with "(reconstructed)" where so.
  virtual std::string description() const = 0; ///< One line.
  /// Runs the algorithm within the rules every algorithm shares: refuses a cancelled run, impossible
  /// constraints (a pin to a device that cannot run the task, a task with no allowed device) and a run
  /// whose caller's deadline (SchedOptions::deadline) has passed before it starts; then runs run() and
  /// checks its plan against the table and the constraints (every task once on an allowed device, the
  /// orders consistent: a plan that breaks them is an error naming the algorithm, never a silent wrong
  /// plan), and stamps it with name() and the options. `info` may be null.
  Result<Plan> schedule(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info = nullptr) const;

 protected:
  /// The algorithm's own step, called by schedule() once the shared checks pass; `info` is never null.
  virtual Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const = 0;
  /// True for the dynamic programmes, whose search minimises a cost and keeps no memory in its state:
  /// where their plan's weights do not fit, schedule() carries capacity into their objective as a
  /// Lagrangian penalty (each operator's cost on a capped device grows with the share of its capacity
  /// its weights take), re-running them with a growing multiplier until the plan fits, within the
  /// same time limit; the generic repair is the fallback.
  virtual bool capacityByPenalty() const { return false; }
};

/// True when `p` places every task of `t` on a device `c` allows (pins kept, no forbidden device).
bool respectsConstraints(const CostTable& t, const Constraints& c, const Plan& p);

/// Every algorithm, in a fixed display order.
const std::vector<std::unique_ptr<Scheduler>>& allSchedulers();
/// A scheduler by name; nullptr when unknown.
const Scheduler* findScheduler(const std::string& name);

/// Lower bound on the makespan: max(longest path with each task on its best device and no
/// transfers, sum of best-device times / number of devices that can run concurrently, largest
/// single task).
double lowerBound(const CostTable& t, const Constraints& c = {});

}  // namespace partex
