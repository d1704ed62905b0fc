#pragma once
/// \file Moving operators to another device by hand: the GUI's drag, its context menu and keys 1-9,
/// and a pinned placement on the command line (partex-cli --pin OP=DEVICE). Whether a placement is
/// allowed (and why not), and the plan a move gives, re-simulated. The one rule both front ends call.
///
/// Fused kernels need no rule of their own here: they follow from the placement
/// (plan/fusedkernels.h), so a fused group splits when one of its operators leaves the device and
/// joins again when it comes back.

#include <map>
#include <vector>

#include "cost/costtable.h"
#include "ir/graph.h"
#include "platform/platform.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "support/result.h"

namespace partex {

/// What a placement is checked against besides the cost table. Every member may be null.
struct PlacementContext {
  const std::map<TaskId, DeviceId>* pinned = nullptr;  ///< Operators held on a device.
  const Graph* graph = nullptr;                        ///< With `platform`: the platform's own reason for a refusal.
  const Platform* platform = nullptr;                  ///< Also names the platform when a device does not exist.
  /// The plan's placement (per task): checkMove then refuses a move whose operators' weights do not
  /// fit in the device's remaining memory (sim/memory.h). applyMove uses its plan's when null.
  const std::vector<DeviceId>* placement = nullptr;
};

/// Ok when task `v` may be placed on device `d` of `t`; otherwise the reason, naming the operator
/// ("'conv1' (Conv)") and the device: no such operator or device, the device cannot run it (with the
/// platform's reason, e.g. an operator type it lacks, when the context has the graph and platform;
/// else "it has no cost for it"), or the context pins it to another device.
Status checkPlacement(const CostTable& t, TaskId v, DeviceId d, const PlacementContext& ctx = {});

/// checkPlacement() for every operator of `ops`; also refuses an empty list and a device the
/// platform does not have (before any operator), and, given the placement, a device whose memory
/// cannot hold the weights `ops` bring (the reason names the device, bytes needed and available).
Status checkMove(const CostTable& t, const std::vector<TaskId>& ops, DeviceId d, const PlacementContext& ctx = {});

/// A move applied to a plan.
struct MoveResult {
  Plan plan;                  ///< The plan after the move (algorithm "manual" when something moved).
  Timeline timeline;          ///< Its simulation.
  std::vector<TaskId> moved;  ///< The operators that changed device, in the order of `ops`; empty: none did.
};

/// Moves `ops` to `device` in `plan`, whose current simulation is `current`. Refused (nothing
/// changes) as checkMove() refuses, when the new plan does not simulate, or when `device` is then
/// over its memory capacity at its peak (weights and activations, sim/memory.h). The operators not yet on
/// `device` leave their devices' orders and are inserted into `device`'s order by their start time
/// in `current` (ties by topological position), so that every device order stays a subsequence of
/// one topological order and the plan cannot deadlock; when ties between zero-length operators still
/// put a consumer first, the orders fall back to upward rank (orderByUpwardRank). The new plan runs
/// through `sim` (a Simulator of `t`, which keeps its buffers between moves). With nothing to move,
/// the result is `plan` and `current` unchanged and `moved` is empty.
Result<MoveResult> applyMove(Simulator& sim, const CostTable& t, const Plan& plan, const Timeline& current,
                             const std::vector<TaskId>& ops, DeviceId device, const PlacementContext& ctx = {});

}  // namespace partex
