#pragma once
/// \file Shared machinery of the list schedulers (HEFT, CPOP, PEFT) and the baselines: constraint
/// checks, mean costs and ranks under constraints, and a timeline that places tasks with insertion
/// (first idle gap that fits) while honouring exclusive device groups, link resources (one transfer at
/// a time per link unless SimOptions::unlimitedLinks) and model input/output transfers to the host.
/// Internal to core/sched: not part of the public scheduler interface.

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/scheduler.h"

namespace partex::sched_detail {

/// Reads a numeric scheduler parameter (SchedOptions::params); `def` when absent; `ok` set false
/// when the value is not a finite number.
double numParam(const SchedOptions& o, const std::string& key, double def, bool& ok);

/// Checks pinned/forbidden ids and that every task has at least one allowed device; the message
/// names the first task without one.
Status checkConstraints(const CostTable& t, const Constraints& c);

/// The error every scheduler returns when the cancel token is set.
Error cancelledError();

/// SchedOptions::params as a JSON object text (for Plan::optionsJson).
std::string paramsJson(const SchedOptions& o);

/// Position of each task in t.topoOrder().
std::vector<int32_t> topoPositions(const CostTable& t, const std::vector<TaskId>& topo);

/// Mean of w(v,d) over the devices allowed for v (w-bar); 0 for a task without any.
std::vector<double> meanCosts(const CostTable& t, const Constraints& c);
/// c-bar per edge: t.meanComm(e) without forbidden devices, otherwise the mean over ordered pairs
/// a != b of devices that are not forbidden (0 with fewer than two).
std::vector<double> meanComms(const CostTable& t, const Constraints& c);
/// rank_u(v) = wbar(v) + max_s (cbar(v,s) + rank_u(s)).
std::vector<double> upwardRanks(const CostTable& t, const std::vector<TaskId>& topo, const std::vector<double>& wbar,
                                const std::vector<double>& cbar);
/// rank_d(v) = max_p (rank_d(p) + wbar(p) + cbar(p,v)); 0 at entries.
std::vector<double> downwardRanks(const CostTable& t, const std::vector<TaskId>& topo, const std::vector<double>& wbar,
                                  const std::vector<double>& cbar);
/// PEFT's optimistic cost table, row-major [task * numDevices + device]:
/// OCT(v,d) = max_s min_d' [OCT(s,d') + w(s,d') + (cbar(v,s) if d' != d)] over devices d' allowed for s;
/// 0 at exits.
std::vector<double> optimisticCostTable(const CostTable& t, const Constraints& c, const std::vector<TaskId>& topo,
                                        const std::vector<double>& cbar);
/// Devices allowed for v, in index order.
std::vector<DeviceId> allowedDevices(const CostTable& t, const Constraints& c, TaskId v);

/// Sorted, non-overlapping busy intervals of one resource (a device or a link), kept in chunks that
/// remember their largest internal gap, so that a fit skips packed stretches without scanning them.
class IntervalSet {
 public:
  struct Interval {
    double start = 0;
    double end = 0;
    int64_t id = 0;
  };
  void insert(const Interval& iv);
  void erase(int64_t id, double start);
  /// Earliest s >= ready such that [s, s + dur) overlaps no interval (touching is fine).
  double fit(double ready, double dur) const;
  size_t size() const { return size_; }

 private:
  struct Chunk {
    std::vector<Interval> iv;
    double maxGap = 0;  ///< Largest start[i+1] - end[i] inside the chunk.
  };
  static void refresh(Chunk& c);
  std::vector<Chunk> chunks_;
  size_t size_ = 0;
};

/// Earliest s >= ready such that [s, s + dur) overlaps no interval of any of the sets.
double earliestFit(const std::vector<const IntervalSet*>& sets, double ready, double dur);

/// A growing schedule: tasks are placed one by one (all predecessors first) on a device, each in the
/// first idle gap after its inputs arrive. Transfers follow t.comm(); on link resources they take the
/// first gap that fits (unless unlimited); what is sent from a to b is sent once and reused by later
/// consumers on b: an edge's data item (Edge::item: every task-graph edge has its own), or an ONNX
/// edge's tensor (the simulator's rule, sim/simrules.h).
class ListTimeline {
 public:
  ListTimeline(const CostTable& t, const SimOptions& sim);

  struct Eval {
    double start = 0;
    double finish = 0;
    double effFinish = 0;  ///< finish, or the arrival of its model outputs on the host when later.
  };
  /// What placing v on d now would give (predecessors must be placed). Does not change the state.
  Eval evaluate(TaskId v, DeviceId d);
  /// Places v on d (predecessors must be placed).
  Eval place(TaskId v, DeviceId d);

  bool placed(TaskId v) const { return dev_[static_cast<size_t>(v)] >= 0; }
  DeviceId device(TaskId v) const { return dev_[static_cast<size_t>(v)]; }
  double start(TaskId v) const { return start_[static_cast<size_t>(v)]; }
  double finish(TaskId v) const { return finish_[static_cast<size_t>(v)]; }
  /// Latest task finish or output arrival so far.
  double makespan() const { return makespan_; }

  /// The plan: every device's tasks by start time (ties: finish, then topological position).
  /// All tasks must be placed.
  Plan toPlan(const std::vector<int32_t>& topoPos, const std::string& algorithm) const;

 private:
  Eval compute(TaskId v, DeviceId d, bool commit);
  /// Books a transfer on `link` in the first gap after `ready`; returns its end. Without commit
  /// (evaluate) the link sets are left untouched: the interval is kept in tentative_ so that the other
  /// transfers of the same evaluation still see it.
  double scheduleTransfer(int32_t link, double ready, double dur, bool commit);

  const CostTable& t_;
  SimOptions sim_;
  int nd_ = 0;
  std::vector<DeviceId> dev_;
  std::vector<double> start_;
  std::vector<double> finish_;
  std::vector<IntervalSet> devBusy_;    ///< Per device: its own tasks.
  /// Per device whose exclusive devices and itself are all mutually exclusive (modes of one
  /// resource): the busy time of all of them in one set; empty use otherwise.
  std::vector<IntervalSet> groupBusy_;
  std::vector<char> cliqueGroup_;       ///< Per device: groupBusy_ is in use.
  std::vector<std::vector<DeviceId>> feeds_;  ///< Per device d: the devices whose groupBusy_ holds d's tasks.
  std::vector<IntervalSet> linkBusy_;
  struct Sent {
    double arrival = 0;
    int64_t bytes = 0;
  };
  std::unordered_map<int64_t, Sent> sent_;  ///< key src * numDevices + to.
  // Scratch of compute(), kept between calls so that evaluate() allocates nothing.
  struct Tentative {
    int32_t link;
    double start;
    double end;
  };
  std::vector<Tentative> tentative_;
  std::vector<std::pair<int64_t, Sent>> newSent_;
  std::vector<int32_t> inScratch_;
  int64_t nextId_ = 1;
  double makespan_ = 0;
};

/// The common loop of the list schedulers: a ready queue by decreasing priority (ties: lower task
/// index; priorities equal within 1e-9 relative count as ties); `choose` picks the device of each task
/// (it may call tl.evaluate); the task is then placed there. Checks constraints, reports progress and
/// honours cancellation.
using DeviceChooser = std::function<DeviceId(TaskId v, ListTimeline& tl)>;
Result<Plan> listSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o, const std::string& algorithm,
                          const std::vector<double>& priority, const DeviceChooser& choose);

/// The immediate-mode heuristics (MCT, MET, OLB, as SAGA runs them): tasks one at a time in
/// topological order, each on the allowed device with the lowest score(v, d, tl) (ties: lower index).
using DeviceScore = std::function<double(TaskId v, DeviceId d, ListTimeline& tl)>;
Result<Plan> topologicalListSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                                     const std::string& algorithm, const DeviceScore& score);

/// The allowed device minimising score(d) (ties: lower index; scores equal within 1e-9 relative tie);
/// -1 when none is allowed.
DeviceId argminAllowed(const CostTable& t, const Constraints& c, TaskId v, const std::function<double(DeviceId)>& score);

/// Fills plan.order from plan.device by decreasing upward rank (orderByUpwardRank), then sets
/// algorithm and options: the ending of the assignment-only baselines.
Plan finishAssignmentPlan(const CostTable& t, std::vector<DeviceId> device, const std::string& algorithm,
                          const SchedOptions& o);

}  // namespace partex::sched_detail
