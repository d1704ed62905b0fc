#pragma once
/// \file The one judge: a deterministic discrete-event simulator of a plan on a cost table.
/// Non-preemptive; each device runs one task at a time in plan order; start(v) = max(device free,
/// arrival of every input); each link resource carries one transfer at a time (first gap that fits),
/// unless SimOptions::unlimitedLinks; devices in one exclusive group never overlap; model inputs
/// start on the host and outputs return to it; a tensor sent from a to b is sent once and reused by
/// every consumer on b; a task graph's edge is its own data item (Edge::item), sent on its own unless
/// the format says edges carry the same data (WfCommons files); a device whose transfers run inline
/// (Device::copies) makes them itself, inside its tasks' time, not on a link. Peak live bytes are
/// tracked per device.

#include <memory>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simrules.h"

namespace partex {

struct TaskSlot {
  DeviceId device = 0;
  double start = 0;
  double end = 0;
};

struct TransferSlot {
  TaskId src = 0;          ///< Producer task (-1: a model input from the host).
  TaskId dst = 0;          ///< First consumer that needed it (-1: a model output to the host).
  DeviceId from = 0;
  DeviceId to = 0;
  int32_t link = -1;       ///< Link resource, -1 when uncontended.
  double start = 0;
  double end = 0;
  int64_t bytes = 0;
};

struct Timeline {
  std::vector<TaskSlot> tasks;  ///< Per task.
  std::vector<TransferSlot> transfers;
  double makespan = 0;
  std::vector<double> busy;         ///< Per device: summed task time.
  std::vector<double> utilisation;  ///< Per device: busy / makespan.
  int64_t bytesMoved = 0;
  std::vector<int64_t> peakBytes;   ///< Per device: peak live activation bytes.
  std::vector<bool> overCapacity;   ///< Per device: resident bytes (sim/memory.h: weights too) above memCapacity.
};

/// Simulates a plan. Errors (incomplete plan, a task on a device that cannot run it, an order that
/// deadlocks against the dependencies) name the task.
Result<Timeline> simulate(const CostTable& t, const Plan& plan, const SimOptions& opts = {});

/// Fills Timeline::peakBytes and overCapacity from the task and transfer slots.
void fillPeakBytes(const CostTable& t, Timeline& tl);

/// Re-simulation for interactive edits: keeps buffers between calls. simulate() after a one-task
/// move must stay under 1 ms for 1,000 tasks and 10 ms for 10,000 (measured in bench/sched).
class Simulator {
 public:
  explicit Simulator(const CostTable& t, SimOptions opts = {});
  Result<Timeline> run(const Plan& plan);
  /// Makespan only (no timeline copy): the inner loop of local search.
  Result<double> makespan(const Plan& plan);
  /// Moves task v to device d (placed on d by its last simulated start time) and re-simulates.
  /// For speed (it drives the live chart) the returned timeline has no peak bytes: call
  /// fillPeakBytes() when they are shown.
  Result<Timeline> move(Plan& plan, TaskId v, DeviceId d);
  /// The rule of every move by hand (plan/move.h calls it): `ops` leave their devices' orders and
  /// enter d's by their start times in `start` (a simulation of `plan`; ties by topological position),
  /// which keeps all orders subsequences of one topological order; then re-simulates, falling back to
  /// upward-rank order where ties between zero-length operators would deadlock. Blocks the move
  /// breaks are dropped (dropBrokenBlocks). Plan::algorithm becomes "manual". `peaks`: fill the
  /// timeline's peak bytes.
  Result<Timeline> move(Plan& plan, const std::vector<TaskId>& ops, DeviceId d, const std::vector<double>& start,
                        bool peaks = true);

 private:
  const CostTable& t_;
  SimOptions opts_;
  bool peaks_ = true;  ///< Compute peak bytes (off inside makespan()).
  struct Scratch;
  std::shared_ptr<Scratch> s_;
};

}  // namespace partex
