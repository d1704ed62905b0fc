#pragma once
/// \file The undoable state of a session (what one undo step restores).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/plan.h"

namespace partex::gui {

/// The undoable part of a session: the plan, the pins, which operators were placed by hand since
/// the last scheduler plan, and that scheduler's name and makespan (the reference for "change
/// against the last scheduler plan"). Undo restores exactly this.
struct PlanState {
  Plan plan;
  std::map<TaskId, DeviceId> pinned;
  std::vector<uint8_t> manual;   ///< Per task: 1 when moved by hand after `algorithm` placed it.
  std::string algorithm;         ///< Scheduler that made the base plan ("" when none).
  double schedulerMakespan = 0;  ///< Its simulated makespan.
  bool operator==(const PlanState& o) const;
};

}  // namespace partex::gui
