#pragma once
/// \file The memory model: what is resident on each device under a plan, and the capacity rule every
/// plan must keep (CostTable::memCapacity, 0 = unlimited). Resident on a device d:
///  - weights: every weight (initializer or folded constant) read by an operator placed on d, once per
///    device however many of d's operators read it (CostTable::taskWeights), resident for the whole run;
///    a language model's past KV cache counts here too (isCacheValue: device state);
///  - activations: an operator's outputs from its start until their last use on d (a consumer's end or
///    an outgoing transfer's end; model outputs until the makespan), as the simulator counts them
///    (fillPeakBytes);
///  - received transfers: a tensor sent to d from the transfer's start until its last consumer on d ends;
///  - workspace: Device::workspaceBytes while each of d's operators runs.
/// Weights are static per placement: schedulers keep them within capacity when they place (WeightLoad,
/// incremental); the whole (with activations over time) is checked on the plan's timeline by the
/// validator every scheduler runs under (checkCapacity, called by Scheduler::schedule) and by moves.
/// Modelled, not measured: no allocator fragmentation, no runtime arena, no alignment.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simulator.h"

namespace partex {

/// One device's memory under a plan and its timeline.
struct DeviceMemory {
  int64_t capacity = 0;      ///< CostTable::memCapacity (0 = unlimited).
  int64_t weights = 0;       ///< Bytes of the distinct weights of its operators (resident throughout).
  int64_t peak = 0;          ///< Largest resident bytes: weights + activations + received + workspace.
  double peakTime = 0;       ///< When the peak is first reached (us).
  int64_t activations = 0;   ///< At the peak: the outputs of its own operators alive then.
  int64_t received = 0;      ///< At the peak: tensors received from other devices alive then.
  int64_t workspace = 0;     ///< At the peak: the workspace of the operator running then.
  bool over = false;         ///< capacity > 0 and peak > capacity.
  /// Resident bytes as a step function: (time, bytes from then on), times increasing, starting at
  /// (0, weights) and ending at the makespan (or at 0 for a device without work).
  std::vector<std::pair<double, int64_t>> steps;
};

/// Per device: weights, peak with its breakdown and the resident bytes over time.
std::vector<DeviceMemory> deviceMemory(const CostTable& t, const Plan& plan, const Timeline& tl);

/// The byte fields of a device's memory in every JSON report (schedule --json, simulate --json, the
/// plan file, compare), by name: capacity_bytes, weight_bytes, resident_peak_bytes (weights +
/// activations + received + workspace at the peak) and the peak's parts peak_activation_bytes,
/// peak_received_bytes, peak_workspace_bytes.
std::vector<std::pair<const char*, int64_t>> memoryFields(const DeviceMemory& dm);

/// Per device: the bytes of the distinct weights of the tasks `device` places there (-1: unplaced).
std::vector<int64_t> weightBytesPerDevice(const CostTable& t, const std::vector<DeviceId>& device);

/// Bytes as a reader reads them: "16,777,216 bytes (16.0 MiB)".
std::string formatBytes(int64_t bytes);

/// The capacity rule of a plan: every device's weights, then (given the plan's timeline, which may be
/// null to check weights only) its peak, within its capacity. The error is one line naming the device,
/// the bytes needed and the bytes available.
Status checkCapacity(const CostTable& t, const Plan& plan, const Timeline* tl);

/// True when some device has a capacity limit.
inline bool hasCapacityLimits(const CostTable& t) {
  for (int64_t c : t.memCapacity)
    if (c > 0) return true;
  return false;
}

/// Weight bytes per device of a growing or changing placement, updated in O(weights of the task) per
/// add or remove (a reference count per device and weight): the capacity check of the schedulers'
/// placements and of best's local search.
class WeightLoad {
 public:
  explicit WeightLoad(const CostTable& t);
  /// Recounts from a placement (-1: unplaced).
  void reset(const std::vector<DeviceId>& device);
  void add(TaskId v, DeviceId d);
  void remove(TaskId v, DeviceId d);
  void move(TaskId v, DeviceId from, DeviceId to) {
    if (from == to) return;
    if (from >= 0) remove(v, from);
    if (to >= 0) add(v, to);
  }
  /// Bytes v's weights would add to d (those of its weights d does not hold yet).
  int64_t extra(TaskId v, DeviceId d) const;
  int64_t bytes(DeviceId d) const { return bytes_.empty() ? 0 : bytes_[static_cast<size_t>(d)]; }
  int64_t capacity(DeviceId d) const { return cap_.empty() ? 0 : cap_[static_cast<size_t>(d)]; }
  /// Replaces d's capacity for the checks below (0: unlimited).
  void setCapacity(DeviceId d, int64_t bytes) { cap_[static_cast<size_t>(d)] = bytes; }
  /// True when d's weights are within its capacity.
  bool fits(DeviceId d) const { return capacity(d) <= 0 || bytes(d) <= capacity(d); }
  /// True when every device's weights are within its capacity.
  bool fitsAll() const {
    for (size_t d = 0; d < bytes_.size(); ++d)
      if (!fits(static_cast<DeviceId>(d))) return false;
    return true;
  }
  /// True when d's weights stay within its capacity with v added.
  bool fitsWith(TaskId v, DeviceId d) const { return capacity(d) <= 0 || bytes(d) + extra(v, d) <= capacity(d); }
  /// False when no device has a limit or the table has no weights: every check then passes at once.
  bool active() const { return active_; }

 private:
  const CostTable& t_;
  size_t nw_ = 0;
  bool active_ = false;
  std::vector<int64_t> cap_, bytes_;
  std::vector<int32_t> refs_;  ///< [device * weights + weight]: readers of the weight on the device.
};

/// The one-line error of a task that fits on none of its allowed devices: names the device with the
/// most room, the bytes the task needs there and the bytes available.
Error noDeviceFits(const CostTable& t, const WeightLoad& load, TaskId v, const std::vector<DeviceId>& allowed);

/// Moves operators off devices whose weights exceed capacity, each to the allowed device (`allowed`
/// per task; pinned tasks have only their pin) with room where it costs least, largest freed bytes
/// first; orders follow the move rule (Simulator::move). The generic repair behind
/// Scheduler::schedule for algorithms that do not place under capacity themselves. Returns the number
/// of operators moved, or the infeasibility error. `budget` (per device, may be null: the capacities)
/// replaces the capacities the weights must fit in (0: unlimited).
Result<int> repairCapacity(const CostTable& t, const std::vector<std::vector<DeviceId>>& allowed, Plan& plan,
                           const SimOptions& sim, const std::vector<int64_t>* budget = nullptr);

/// The capacity rule a scheduler's plan is held to (Scheduler::schedule): repairCapacity, then the
/// whole model on the plan's simulation; where activations push a device over, its weight budget is
/// lowered by the excess and the repair runs again (a few rounds). Returns the number of operators
/// moved, or the one-line error of the device still over capacity.
Result<int> fitCapacity(const CostTable& t, const std::vector<std::vector<DeviceId>>& allowed, Plan& plan,
                        const SimOptions& sim);

}  // namespace partex
