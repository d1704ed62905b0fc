#pragma once
/// \file The fused kernels of a plan: which of its operators the CPU runtime runs as one kernel
/// (ir/fusion.h), on which device, and when the simulated timeline runs them. The one rule the plan
/// file, the trace export, partex-cli and the GUI (Gantt chart, inspector) all show.
///
/// When a plan's device fuses. The executor fuses on every device of the CPU backend, but core links
/// no backend and a plan for a modelled platform (an NPU, a phone's CPU cluster) is never executed.
/// So the costs decide, as they decide the simulator's prediction (CostTable::wIn): a group of
/// fusedGroups(g, placement) is a fused kernel of the plan when
///  - its device is a CPU (CostTable::deviceKinds "cpu": on this-machine cpu-serial, cpu-parallel,
///    core0..N, the CPU backend's devices), and
///  - the cost table knows that the runtime fuses it: all its operators belong to one group of
///    CostTable::fusedGroups, which an in-context profile recorded from the kernels the runtime ran
///    (the group itself, or, when the plan splits that group over devices, the part the runtime still
///    fuses on one of them).
/// Without such a profile there are none: the costs are then per operator, and nothing says that a
/// runtime which fuses will run the plan. A kernel the backend declined to fuse while profiling is
/// not in CostTable::fusedGroups, so it is not reported either.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "ir/graph.h"
#include "sim/simulator.h"

namespace partex {

/// One fused kernel of a plan.
struct FusedKernel {
  DeviceId device = 0;
  std::vector<TaskId> ops;  ///< Anchor first, then the chain in order (FusedGroup::ops); at least two.
  /// Predicted times from the timeline: the earliest start and the latest end of its operators (the
  /// first one's start and the last one's end when they run in order); 0 without a timeline.
  double startUs = 0;
  double endUs = 0;
  TaskId anchor() const { return ops.front(); }
  /// The operator whose slot runs the kernel (the executor's ExecResult::fusedInto).
  TaskId last() const { return ops.back(); }
};

/// True when device `d` of `t` runs on a fusing runtime that the costs know of (see the file comment):
/// a CPU device of a table that knows fused groups from a profile.
bool deviceFuses(const CostTable& t, DeviceId d);

/// The fused kernels of a placement (device per task, Plan::device) of `g`'s operators on `t` (see the
/// file comment), ordered by anchor. With a timeline of that placement, each kernel gets its predicted
/// start and end. Empty when `g` is not the table's model (operator counts differ) or the placement is
/// incomplete.
std::vector<FusedKernel> fusedKernels(const Graph& g, const CostTable& t, const std::vector<DeviceId>& placement,
                                      const Timeline* tl = nullptr);
/// The same for the placement a timeline shows (its tasks' devices), e.g. a drag preview's.
std::vector<FusedKernel> fusedKernels(const Graph& g, const CostTable& t, const Timeline& tl);

/// The kernels an execution ran, from ExecResult::fusedInto (per task, the last operator of the fused
/// kernel that ran it, -1 when it ran alone) and the placement: operators in task order, device of the
/// last one; ordered by their first operator. Times are left 0 (the caller knows its run).
std::vector<FusedKernel> kernelsFromFusedInto(const std::vector<TaskId>& fusedInto,
                                              const std::vector<DeviceId>& placement);

/// Per task (`numTasks` of them): the index of the kernel of `kernels` it is in, or -1.
std::vector<int> kernelOfTasks(int numTasks, const std::vector<FusedKernel>& kernels);

/// The members' names joined by " + ", e.g. "conv1 + bn1 + relu1".
std::string kernelOpsText(const CostTable& t, const FusedKernel& k);

}  // namespace partex
