#pragma once
/// \file The critical path of a simulated timeline: the one rule the front ends show (the GUI's View >
/// Critical path) and explain, in the simulator's layer.

#include <cstdint>
#include <vector>

#include "cost/costtable.h"
#include "sim/simulator.h"

namespace partex {

/// The longest chain of the timeline: from the task that ends last, back through whichever of its
/// inputs (data arrival or the previous task on its device) released it. Per task and per cost-table
/// edge: 1 when on that chain.
struct CriticalPath {
  std::vector<uint8_t> task;
  std::vector<uint8_t> edge;
};

/// The critical path of `tl`, the timeline of `plan` on `t`; all zeros when they do not match.
CriticalPath criticalPath(const CostTable& t, const Plan& plan, const Timeline& tl);

}  // namespace partex
