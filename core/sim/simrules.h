#pragma once
/// \file The simulator's rules, written once: the state after some tasks have been processed and the
/// steps that advance it (SimRules), and the device-ordering rule that runs a whole plan through
/// them (PlanRunner). simulate() (simulator.cpp), the local search's fast path (fastsim.h) and the
/// exact search (sched/branchbound.cpp) all step through these, so they make bit for bit the same
/// decisions. The rules (simulator.h says them in words):
///  - a task starts at max(device free, model-input arrival, arrival of every input), then past the
///    busy time of the devices exclusive with its own (first gap that fits);
///  - its duration is CostTable::wIn (a fused group split across devices pays the unfused costs), or,
///    for a member of one of the plan's compiled blocks, its share of the block's time (blockDurations);
///  - when it ends, its result goes once to every other device that consumes it; an edge that
///    carries a data item (Edge::item: every edge of a task graph, each with its own size) sends that
///    item once to each device that consumes it, so two edges to one device are two transfers unless
///    they carry the same item; model outputs go back to the host; each transfer on a link resource
///    takes the first gap that fits (unless SimOptions::unlimitedLinks), in the order of the
///    producer's out-edges;
///  - on a device whose transfers run inline (CostTable::deviceInlineCopies: the CUDA backend's kernels
///    copy their own host inputs and outputs), none of that goes on a link: the task's duration
///    includes the uploads of its inputs from other devices and one download of its result
///    (inlineCopyUs), and its results arrive elsewhere when it ends;
///  - among the devices whose next task has all its inputs, the one that can start earliest runs
///    next (ties: the lowest device index).

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cost/costtable.h"
#include "sim/intervals.h"
#include "sim/plan.h"

/// The steps are inlined into the loops that run them millions of times.
#if defined(__GNUC__)
#define PARTEX_SIM_INLINE inline __attribute__((always_inline))
#else
#define PARTEX_SIM_INLINE inline
#endif

namespace partex {

struct SimOptions {
  bool unlimitedLinks = false;  ///< Classic HEFT model: transfers never wait for a link.
};

/// Why a task started when it did (the constraint that set its start).
enum class StartCause : uint8_t { Time0, DevicePrev, Data, Input, Exclusive };

/// The earliest start of a task on a device and what set it.
struct ReadyTime {
  double time = 0;
  StartCause cause = StartCause::Time0;
  TaskId by = -1;  ///< The task behind it (DevicePrev, Data), else -1.
};

/// What a booked transfer carries.
enum class TransferKind : uint8_t {
  Input,   ///< A model input from the host.
  Result,  ///< A result (or a task graph's data item with bytes) sent once to a device that consumes it.
  Edge,    ///< A task-graph edge with a fixed cost and no tensor behind it (a message of its own).
  Output,  ///< A model output back to the host.
};

/// One booked transfer, as SimRules reports it to its sink.
struct BookedTransfer {
  TransferKind kind = TransferKind::Result;
  TaskId src = -1;  ///< Producer (-1: a model input).
  TaskId dst = -1;  ///< First consumer on `to` (-1: a model output).
  DeviceId from = 0, to = 0;
  int32_t link = -1;  ///< Link resource, -1 when uncontended.
  double start = 0, end = 0;
  int64_t bytes = 0;
};

/// A sink that records nothing (the search's fast paths).
struct NoTransferSink {
  static constexpr bool kRecords = false;
  void operator()(const BookedTransfer&) const {}
};

/// The simulator's state after a prefix of processed tasks.
struct SimState {
  std::vector<double> finish;       ///< Per task, -1 until processed.
  std::vector<double> arrival;      ///< [task * m + device]: when its result is there, -1 until sent.
  std::vector<double> itemArrival;  ///< [item * m + device]: when a data item (Edge::item) is there, -1 until sent.
  std::vector<size_t> itemSent;     ///< The entries of itemArrival set since the last reset.
  std::vector<double> devFree;      ///< Per device: end of its last task.
  std::vector<TaskId> lastOnDevice; ///< Per device: its last processed task, -1 before any.
  std::vector<BusyIntervals> devBusy;  ///< Per device in an exclusive group: its tasks' busy time.
  std::vector<BusyIntervals> links;    ///< Per link resource.
  std::vector<double> inputReady;   ///< Per task: arrival of its model inputs (0 on the host).
  std::vector<int> pending;         ///< Per task: unprocessed producers (per edge).
  double makespan = 0;              ///< Latest task end or output arrival so far.
  TaskId lastTask = -1;             ///< The task whose end (or output) first reached `makespan`.
};

/// The rules over one cost table and simulator model. Cheap to build, except precomputeComm().
class SimRules {
 public:
  SimRules(const CostTable& t, const SimOptions& o);
  SimRules(const SimRules&) = delete;
  SimRules& operator=(const SimRules&) = delete;
  const CostTable& table() const { return t_; }
  const SimOptions& options() const { return o_; }
  int numTasks() const { return n_; }
  int numDevices() const { return m_; }
  /// Tabulates c(e, a, b) for every edge and device pair (for searches that step millions of times);
  /// not above 2^24 entries, where comm() computes them as it goes.
  void precomputeComm();
  /// The table of precomputeComm(), [(edge * m + a) * m + b]; null before.
  const double* commTable() const { return comm_; }

  /// Nothing processed, nothing booked; keeps the buffers' capacity.
  void reset(SimState& s) const;

  /// Books the model inputs of every task that reads some and is placed off the host (host to its
  /// device, at time 0, in task order): the first thing the simulator does.
  template <class Sink>
  void sendInputs(SimState& s, const std::vector<DeviceId>& placement, Sink&& sink) const;

  /// Time v's device and inputs allow it to start on d (every producer of v processed), before the
  /// exclusive devices; what set it.
  PARTEX_SIM_INLINE ReadyTime dataReady(const SimState& s, TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const {
    const auto vi = static_cast<size_t>(v), di = static_cast<size_t>(d);
    ReadyTime r{s.devFree[di], s.lastOnDevice[di] >= 0 ? StartCause::DevicePrev : StartCause::Time0, s.lastOnDevice[di]};
    if (s.inputReady[vi] > r.time) r = {s.inputReady[vi], StartCause::Input, -1};
    for (int32_t ei : t_.inEdges[vi]) {
      const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
      const int32_t item = t_.edges[static_cast<size_t>(ei)].item;
      const double arr = placement[static_cast<size_t>(u)] == d ? s.finish[static_cast<size_t>(u)]
                         : item >= 0 ? s.itemArrival[static_cast<size_t>(item) * mm_ + di]
                                     : s.arrival[static_cast<size_t>(u) * mm_ + di];
      if (arr > r.time) r = {arr, StartCause::Data, u};
    }
    return r;
  }

  /// `ready` pushed past the busy time of d's exclusive devices: the first start from which a task
  /// of `dur` overlaps none of them.
  double pastExclusive(const SimState& s, DeviceId d, double ready, double dur) const {
    if (!anyExclusive_) return ready;
    bool moved = true;
    while (moved) {
      moved = false;
      for (DeviceId p : t_.exclusiveWith[static_cast<size_t>(d)]) {
        const double r2 = s.devBusy[static_cast<size_t>(p)].firstFit(ready, dur);
        if (r2 > ready) {
          ready = r2;
          moved = true;
        }
      }
    }
    return ready;
  }

  /// dataReady() then pastExclusive(): the start of v on d.
  PARTEX_SIM_INLINE ReadyTime startOf(const SimState& s, TaskId v, DeviceId d, double dur, const std::vector<DeviceId>& placement) const {
    ReadyTime r = dataReady(s, v, d, placement);
    const double t = pastExclusive(s, d, r.time, dur);
    if (t > r.time) r = {t, StartCause::Exclusive, -1};
    return r;
  }

  /// Duration of v on d under the placement: CostTable::wIn, plus, on a device whose transfers run
  /// inline (CostTable::deviceInlineCopies), the transfers it makes itself (inlineCopyUs).
  double duration(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const {
    const double w = t_.wIn(v, d, placement);
    if (!anyInline_) return w;
    if (isInline(d)) return w + inlineCopyUs(v, d, placement);
    return anyConvert_ ? w + readerConvertUs(v, d, placement) : w;
  }
  /// What a reader v on a CPU device d pays to turn its inputs from devices with a reader conversion
  /// (CostTable::deviceReaderConvertBytesPerUs) into its layout, when it converts them
  /// (CostTable::taskConvertsInput): their bytes at that rate.
  double readerConvertUs(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const;
  /// The transfers v makes itself on a device d whose transfers run inline: the upload of each input
  /// whose producer is placed on another device and of its model inputs, then one download of its
  /// result when another device reads it or it is a model output (the largest of those transfers: the
  /// result goes back to the host's memory once, where every CPU device reads it). Producers and
  /// consumers not placed yet (-1) count as placed on d.
  double inlineCopyUs(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const;
  /// Whether d's transfers run inline (then c(e, a, b) to or from it is 0: the tasks pay them).
  bool isInline(DeviceId d) const {
    return anyInline_ && t_.deviceInlineCopies[static_cast<size_t>(d)] != 0;
  }

  /// c(e, a, b); 0 to or from a device whose transfers run inline (its tasks pay them).
  double comm(int32_t e, DeviceId a, DeviceId b) const {
    if (isInline(a) || isInline(b)) return 0.0;
    if (!comm_) return t_.comm(e, a, b);
    return comm_[(static_cast<size_t>(e) * mm_ + static_cast<size_t>(a)) * mm_ + static_cast<size_t>(b)];
  }

  /// Processes v on d from `start` for `dur` (the devices of all its consumers placed): its end, then
  /// its results sent and its model outputs returned. Returns the end.
  template <class Sink>
  PARTEX_SIM_INLINE double process(SimState& s, TaskId v, DeviceId d, double start, double dur, const std::vector<DeviceId>& placement,
                 Sink&& sink) const;

 private:
  /// Books a transfer a -> b of `dur` from `ready` on its link resource; returns its start.
  double book(SimState& s, DeviceId a, DeviceId b, double ready, double dur, int32_t& link) const {
    link = t_.linkResource.empty() ? -1 : t_.linkResource[static_cast<size_t>(a) * mm_ + static_cast<size_t>(b)];
    if (link < 0 || o_.unlimitedLinks) return ready;
    auto& L = s.links[static_cast<size_t>(link)];
    const double st = L.firstFit(ready, dur);
    L.insert(st, st + dur);
    return st;
  }

  const CostTable& t_;
  SimOptions o_;
  int n_ = 0, m_ = 0;
  size_t mm_ = 0;  ///< m_ as a size.
  bool anyExclusive_ = false;
  bool anyInline_ = false;  ///< Some device's transfers run inline (CostTable::deviceInlineCopies).
  bool anyConvert_ = false; ///< Some inline device's readers convert (deviceReaderConvertBytesPerUs, taskConvertsInput).
  std::vector<char> cpuDevice_;  ///< Per device, with anyConvert_: its kind is "cpu".
  std::vector<int> indeg_;
  std::vector<double> commTab_;
  const double* comm_ = nullptr;  ///< commTab_'s data once precomputed.
  /// Per destination device: the longest transfer of a result there (-1: none), its bytes and first consumer.
  struct PerDest {
    double dur;
    int64_t bytes;
    TaskId first;
  };
  mutable std::vector<PerDest> bigDest_;  ///< process()'s scratch above 64 devices.
};

/// Runs whole plans by the device-ordering rule through SimRules; keeps its buffers between runs.
/// The observer is told every task as it is processed:
///   obs.task(TaskId v, DeviceId d, double start, double dur, const ReadyTime& why)   (it ends at start + dur)
/// and every transfer as it is booked (obs.transfer(const BookedTransfer&), only when
/// Observer::kRecords is true).
class PlanRunner {
 public:
  explicit PlanRunner(const SimRules& rules) : r_(rules) {}
  const SimRules& rules() const { return r_; }

  /// Simulates a plan of the right shape (checkPlanShape passes); false when its orders deadlock
  /// (state() and nextIndex() then say where).
  template <class Observer>
  bool run(const Plan& plan, Observer& obs);

  const SimState& state() const { return s_; }
  /// Index in d's order of its next unprocessed task.
  size_t nextIndex(DeviceId d) const { return pos_[static_cast<size_t>(d)]; }

 private:
  const SimRules& r_;
  SimState s_;
  std::vector<size_t> pos_;
  std::vector<char> headValid_;
  std::vector<ReadyTime> head_;    ///< Per device: dataReady() of its next task, once all its inputs are there.
  std::vector<double> headDur_;
  std::vector<double> blockDur_;   ///< blockDurations() of the plan being run (empty without blocks).
};

// ---- Templates -------------------------------------------------------------------------------------

namespace sim_detail {
/// Passes booked transfers on to a PlanRunner observer.
template <class Observer>
struct ObserverSink {
  static constexpr bool kRecords = Observer::kRecords;
  Observer& obs;
  void operator()(const BookedTransfer& x) const { obs.transfer(x); }
};
}  // namespace sim_detail

template <class Sink>
void SimRules::sendInputs(SimState& s, const std::vector<DeviceId>& placement, Sink&& sink) const {
  if (t_.inputBytes.empty()) return;
  for (TaskId v = 0; v < n_; ++v) {
    const int64_t bytes = t_.inputBytes[static_cast<size_t>(v)];
    if (bytes <= 0) continue;
    const DeviceId d = placement[static_cast<size_t>(v)];
    s.inputReady[static_cast<size_t>(v)] = 0.0;
    if (d == t_.host || isInline(d)) continue;  // an inline device's task uploads them itself
    const double dur = t_.transferUs(t_.host, d, bytes);
    int32_t link = -1;
    const double st = book(s, t_.host, d, 0.0, dur, link);
    s.inputReady[static_cast<size_t>(v)] = st + dur;
    if constexpr (std::decay_t<Sink>::kRecords) sink(BookedTransfer{TransferKind::Input, -1, v, t_.host, d, link, st, st + dur, bytes});
  }
}

template <class Sink>
PARTEX_SIM_INLINE double SimRules::process(SimState& s, TaskId v, DeviceId d, double start, double dur, const std::vector<DeviceId>& placement,
                         Sink&& sink) const {
  constexpr bool kRecords = std::decay_t<Sink>::kRecords;
  const auto vi = static_cast<size_t>(v), di = static_cast<size_t>(d);
  const double end = start + dur;
  s.finish[vi] = end;
  s.devFree[di] = end;
  s.lastOnDevice[di] = v;
  if (anyExclusive_ && !t_.exclusiveWith[di].empty()) s.devBusy[di].insert(start, end);
  if (end > s.makespan || s.lastTask < 0) {
    s.makespan = std::max(s.makespan, end);
    s.lastTask = v;
  }
  PerDest buf[64];
  PerDest* pd = buf;
  if (mm_ > 64) {
    bigDest_.resize(mm_);
    pd = bigDest_.data();
  }
  for (size_t b = 0; b < mm_; ++b) pd[b] = {-1.0, 0, -1};
  for (int32_t ei : t_.outEdges[vi]) {
    const Edge& e = t_.edges[static_cast<size_t>(ei)];
    --s.pending[static_cast<size_t>(e.dst)];
    const DeviceId b = placement[static_cast<size_t>(e.dst)];
    if (b == d) continue;
    const double c = comm(ei, d, b);
    if (e.item >= 0) {  // a data item: sent once to b, whichever of its edges comes first
      const size_t k = static_cast<size_t>(e.item) * mm_ + static_cast<size_t>(b);
      if (s.itemArrival[k] >= 0) continue;
      int32_t link = -1;
      const double st = book(s, d, b, end, c, link);
      s.itemArrival[k] = st + c;
      s.itemSent.push_back(k);
      if constexpr (kRecords)
        if (e.fixedUs >= 0 || c > 0 || e.bytes > 0)
          sink(BookedTransfer{e.fixedUs >= 0 ? TransferKind::Edge : TransferKind::Result, v, e.dst, d, b, link, st, st + c, e.bytes});
      continue;
    }
    PerDest& p = pd[static_cast<size_t>(b)];
    if (p.dur < 0) p.first = e.dst;
    p.dur = std::max(p.dur, c);
    p.bytes = std::max(p.bytes, e.bytes);
  }
  for (size_t b = 0; b < mm_; ++b) {
    const PerDest& p = pd[b];
    if (p.dur < 0) continue;
    int32_t link = -1;
    const double st = book(s, d, static_cast<DeviceId>(b), end, p.dur, link);
    s.arrival[vi * mm_ + b] = st + p.dur;
    if constexpr (kRecords)
      if (p.dur > 0 || p.bytes > 0) sink(BookedTransfer{TransferKind::Result, v, p.first, d, static_cast<DeviceId>(b), link, st, st + p.dur, p.bytes});
  }
  const int64_t outBytes = t_.outputBytes.empty() ? 0 : t_.outputBytes[vi];
  if (outBytes > 0 && d != t_.host && !isInline(d)) {  // an inline device's task downloads it itself
    const double c = t_.transferUs(d, t_.host, outBytes);
    int32_t link = -1;
    const double st = book(s, d, t_.host, end, c, link);
    if constexpr (kRecords) sink(BookedTransfer{TransferKind::Output, v, -1, d, t_.host, link, st, st + c, outBytes});
    if (st + c > s.makespan) {
      s.makespan = st + c;
      s.lastTask = v;
    }
  }
  return end;
}

template <class Observer>
bool PlanRunner::run(const Plan& plan, Observer& obs) {
  const auto m = static_cast<size_t>(r_.numDevices());
  r_.reset(s_);
  pos_.assign(m, 0);
  headValid_.assign(m, 0);
  head_.resize(m);
  headDur_.resize(m);
  const sim_detail::ObserverSink<Observer> toObs{obs};
  blockDur_ = blockDurations(r_.table(), plan);
  r_.sendInputs(s_, plan.device, toObs);
  for (int remaining = r_.numTasks(); remaining > 0; --remaining) {
    DeviceId bestDev = -1;
    ReadyTime best{kInf, StartCause::Time0, -1};
    for (size_t d = 0; d < m; ++d) {
      const auto& ord = plan.order[d];
      if (pos_[d] >= ord.size()) continue;
      const TaskId v = ord[pos_[d]];
      if (s_.pending[static_cast<size_t>(v)] > 0) continue;
      // Once its inputs are all there, a head's earliest start (before exclusive devices) is fixed
      // until the device moves on: computed once.
      if (!headValid_[d]) {
        head_[d] = r_.dataReady(s_, v, static_cast<DeviceId>(d), plan.device);
        headDur_[d] = !blockDur_.empty() && blockDur_[static_cast<size_t>(v)] >= 0 ? blockDur_[static_cast<size_t>(v)]
                                                                                  : r_.duration(v, static_cast<DeviceId>(d), plan.device);
        headValid_[d] = 1;
      }
      ReadyTime why = head_[d];
      const double t = r_.pastExclusive(s_, static_cast<DeviceId>(d), why.time, headDur_[d]);
      if (t > why.time) why = {t, StartCause::Exclusive, -1};
      if (why.time < best.time) {
        best = why;
        bestDev = static_cast<DeviceId>(d);
      }
    }
    if (bestDev < 0) return false;
    const auto d = static_cast<size_t>(bestDev);
    const TaskId v = plan.order[d][pos_[d]++];
    headValid_[d] = 0;
    const double dur = headDur_[d];
    obs.task(v, bestDev, best.time, dur, best);
    r_.process(s_, v, bestDev, best.time, dur, plan.device, toObs);
  }
  return true;
}

}  // namespace partex
