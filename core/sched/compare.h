#pragma once
/// \file Comparing algorithms on one cost table: the rule the CLI (`partex-cli compare`) and the GUI
/// (the Compare panel) both follow, written once. Every row is judged by the same simulator model
/// (SchedOptions::sim); the speed-up is against the best single device, defined as the `single`
/// scheduler's plan on each device in turn (tasks a device cannot run fall back to the host, as
/// `single` does), the fastest of them; `exact` is skipped above kExactAutoLimit operators unless the
/// caller named it explicitly.

#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sim/simulator.h"

namespace partex {

/// Above this many operators `exact` runs only when named explicitly (its search grows exponentially).
constexpr int kExactAutoLimit = 40;

struct ComparisonRow {
  std::string algorithm;  ///< Scheduler name.
  std::string title;      ///< Display name ("" for an unknown name).
  bool valid = false;     ///< A plan was made and simulates.
  double makespanUs = 0;
  double speedup = 0;       ///< bestSingleUs / makespan (0 when no single-device plan exists).
  double ratioToBound = 0;  ///< makespan / lowerBound.
  double schedMs = 0;       ///< Wall time of the scheduler.
  bool optimal = false;     ///< exact proved its plan optimal.
  bool timeLimited = false; ///< It stopped at the time limit with its best plan so far.
  std::string error;        ///< Why no plan (an error, or "skipped: ...").
  std::vector<std::string> notes;  ///< The scheduler's notes (SchedInfo::notes): offload's split first.
  /// Under the throughput objective (SchedOptions::objective), the plan's stream (sim/stream.h): its
  /// steady-state period and each inference's latency; 0 otherwise.
  double periodUs = 0;
  double streamLatencyUs = 0;
  Plan plan;                ///< When valid.
  Timeline timeline;        ///< When valid.
};

struct Comparison {
  std::vector<ComparisonRow> rows;  ///< In the order asked.
  double bestSingleUs = 0;       ///< 0 when no device gives a plan.
  double lowerBoundUs = 0;
  double optimumUs = 0;          ///< exact's makespan when it proved it optimal; else 0.
};

/// Runs `algorithms` (scheduler names) in order on `t` under `c` and `o` (its cancel flag stops the
/// comparison between rows; its progress callback, when set, hears each row's start). `explicitNames`:
/// the caller named these algorithms one by one (the exact size limit then does not apply).
Comparison compareAlgorithms(const CostTable& t, const Constraints& c, const SchedOptions& o,
                             const std::vector<std::string>& algorithms, bool explicitNames);

/// The algorithms a comparison runs when the caller names none: every registered one, except
/// `offload` on models without layer names (it has nothing to split there).
std::vector<std::string> defaultComparison(const CostTable& t);

/// On a language model, when the comparison has a valid `offload` row and a valid `other` row (by
/// default best): why `other` is faster or slower than the first-k split (explainOffload). Empty
/// otherwise.
std::vector<std::string> explainAgainstOffload(const CostTable& t, const Comparison& cmp, const std::string& other = "best");

/// The best single device's simulated makespan as defined above; 0 when none.
double bestSingleDeviceUs(const CostTable& t, const Constraints& c, const SchedOptions& o);

}  // namespace partex
