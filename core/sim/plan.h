#pragma once
/// \file A plan: the device of every task and the order of tasks on each device. Schedulers produce
/// plans, the simulator judges them, plan files store them.

#include <string>
#include <vector>

#include "cost/costtable.h"

namespace partex {

struct Plan {
  std::vector<DeviceId> device;            ///< Per task.
  std::vector<std::vector<TaskId>> order;  ///< Per device: its tasks in execution order.
  std::string algorithm;                   ///< Scheduler name that made it ("manual" after edits).
  std::string optionsJson = "{}";          ///< The scheduler options, as JSON text.
};

/// Fills `order` from `device` alone: on each device, tasks by decreasing upward rank (mean costs),
/// ties by topological position. Used by algorithms that output only an assignment.
void orderByUpwardRank(const CostTable& t, Plan& plan);
/// Upward ranks rank_u(v) = wbar(v) + max_s (cbar(v,s) + rank_u(s)) with means over capable devices.
std::vector<double> upwardRanks(const CostTable& t);
/// Checks that the plan is complete and consistent with the table: every task on exactly one
/// device that can run it, orders a permutation of the assignment. The message names the task.
Status checkPlanShape(const CostTable& t, const Plan& plan);

}  // namespace partex
