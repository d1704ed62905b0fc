#pragma once
/// \file The undoable state of a session (what one undo step restores).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/plan.h"

namespace partex::gui {

/// A manual move of one operator, as the Inspector explains it: where it was before it was first moved
/// by hand (the scheduler's device), and what the last move that took it changed.
struct HandMove {
  DeviceId from = -1;         ///< Its device before the first hand move since the scheduler placed it.
  double makespanBefore = 0;  ///< The simulated makespan just before the last move that took it.
  double makespanAfter = 0;   ///< ... and just after.
  int movedWith = 1;          ///< Operators moved in that step (it included).
  bool operator==(const HandMove&) const = default;
};

/// The undoable part of a session: the plan, the pins, which operators were placed by hand since
/// the last scheduler plan, and that scheduler's name and makespan (the reference for "change
/// against the last scheduler plan"). Undo restores exactly this.
struct PlanState {
  Plan plan;
  std::map<TaskId, DeviceId> pinned;
  std::vector<uint8_t> manual;   ///< Per task: 1 when moved by hand after `algorithm` placed it.
  std::map<TaskId, HandMove> handMoves;  ///< Per task moved by hand in this session: see HandMove (a
                                         ///< project's manual flags come without it).
  std::string algorithm;         ///< Scheduler that made the base plan ("" when none).
  double schedulerMakespan = 0;  ///< Its simulated makespan.
  bool operator==(const PlanState& o) const;
};

}  // namespace partex::gui
