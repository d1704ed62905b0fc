#pragma once
/// \file The common loop of the batch-mode list heuristics that SAGA collects (MinMin, MaxMin,
/// Sufferage, ETF): at every step each ready task is evaluated on every allowed device (earliest
/// finish with insertion into idle gaps, ListTimeline), and the heuristic picks which task goes where.

#include <functional>
#include <string>
#include <vector>

#include "sched/listsched.h"

namespace partex::sched_detail {

/// One ready task evaluated on every allowed device.
struct BatchOption {
  TaskId task = -1;
  DeviceId fastest = -1;       ///< The device of its earliest finish (ties: lower index).
  double finish = kInf;        ///< That earliest finish.
  double secondFinish = kInf;  ///< Its earliest finish on any other device (kInf with one device).
  DeviceId earliest = -1;      ///< The device of its earliest start.
  double start = kInf;         ///< That earliest start.
};

/// What a heuristic decides: which ready task (index into the options) goes to which device.
struct BatchChoice {
  size_t option = 0;
  DeviceId device = -1;
};
using BatchPicker = std::function<BatchChoice(const std::vector<BatchOption>& ready)>;

/// Schedules every task: while tasks are ready, evaluates them all and places the one `pick` chooses.
/// Honours the constraints and cancellation and reports progress.
Result<Plan> batchSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                           const std::string& algorithm, const BatchPicker& pick);

/// The plan's simulated makespan (kInf when it cannot be simulated): how Duplex compares its two.
double simulatedMakespan(const CostTable& t, const Plan& p, const SimOptions& sim);

}  // namespace partex::sched_detail
