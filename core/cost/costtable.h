#pragma once
/// \file The cost table: the scheduling problem every algorithm and the simulator share: tasks (operators), devices,
/// the cost table w(v,d), edges with their transfer cost c(e,a,b), exclusive device groups and link
/// resources. An ONNX model becomes a CostTable through buildCostTable() (cost table from the device
/// models, later overridden by measured or imported profiles); a JSON task graph (textbook examples)
/// becomes one directly through parseTaskGraph(). (Named CostTable after the design; it holds the
/// graph structure too, because task graphs have no ONNX graph behind them.)

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cost/roofline.h"
#include "cost/work.h"
#include "ir/graph.h"
#include "platform/platform.h"
#include "support/result.h"

namespace partex {

using TaskId = int32_t;  ///< Index of a task (== OpId for ONNX models).
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Where a cost entry comes from.
enum class Provenance : uint8_t { Modelled, Measured, Imported };
const char* provenanceName(Provenance p);

/// A data dependency between two tasks.
struct Edge {
  TaskId src = 0;
  TaskId dst = 0;
  int64_t bytes = 0;       ///< Bytes carried (sum over the tensors src gives dst).
  double fixedUs = -1.0;   ///< >= 0: task graphs give the transfer time directly (same for any a != b).
  /// The data item the edge carries (< CostTable::numItems), or -1. An item is sent once to each
  /// device that consumes it, every edge that carries it sharing that transfer (the edges of one item
  /// have the same producer, bytes and fixed time). -1 is a model's rule: the producer's result is
  /// sent once per destination device, as large as its largest edge there. Task graphs give every
  /// edge its own item (finishTaskTable); a WfCommons workflow shares one between the edges that
  /// carry the same files (docs/taskgraph-format.md).
  int32_t item = -1;
};

/// Everything a scheduler needs; immutable once built.
struct CostTable {
  std::string name;                    ///< Model or task graph name.
  std::vector<std::string> taskNames;  ///< Operator names.
  std::vector<std::string> taskTypes;  ///< Op types ("" for task graphs).
  std::vector<std::string> deviceIds;  ///< Device ids.
  int numTasks() const { return static_cast<int>(taskNames.size()); }
  int numDevices() const { return static_cast<int>(deviceIds.size()); }

  /// w(v,d) in microseconds, row-major [task * numDevices + device]; kInf where d cannot run v.
  std::vector<double> cost;
  std::vector<Provenance> provenance;  ///< Same layout as cost.
  double w(TaskId v, DeviceId d) const { return cost[static_cast<size_t>(v) * deviceIds.size() + static_cast<size_t>(d)]; }

  std::vector<Edge> edges;
  int32_t numItems = 0;  ///< Data items the edges carry (Edge::item); 0 for models.
  std::vector<std::vector<int32_t>> outEdges;  ///< Per task: indexes into edges.
  std::vector<std::vector<int32_t>> inEdges;   ///< Per task: indexes into edges.

  /// Bytes a task reads from model inputs (which live on the host) and writes to model outputs
  /// (which return to the host). Zero for task graphs.
  std::vector<int64_t> inputBytes;
  std::vector<int64_t> outputBytes;
  /// Per task: 1 when it writes device state that stays where it is written and lives until the end
  /// of the run (a language model's present KV cache, isCacheValue): not in outputBytes, never sent
  /// to the host. Empty (none) for task graphs.
  std::vector<char> keepsOutput;
  /// Per task: bytes of its output written in place into resident state it reads (a decode step's
  /// present KV cache is the past, resident, plus the new rows): the memory model counts only the rest.
  /// Empty (none) for task graphs.
  std::vector<int64_t> keptInPlaceBytes;
  DeviceId host = 0;

  /// Per device: the devices it is mutually exclusive with (never itself).
  std::vector<std::vector<DeviceId>> exclusiveWith;
  /// Link resource id for a transfer a -> b (one transfer at a time per resource), -1 when
  /// transfers a -> b never contend (a == b, shared memory, or a task graph). Layout [a * numDevices + b].
  std::vector<int32_t> linkResource;
  int numLinkResources = 0;
  std::vector<std::string> linkNames;  ///< Per link resource, e.g. "cpu->gpu".
  /// Transfer time parameters per (a,b): latency and bandwidth (bytes per microsecond).
  std::vector<double> linkLatencyUs;
  std::vector<double> linkBytesPerUs;  ///< kInf for free transfers.
  /// Device memory capacity in bytes (0 = unlimited): a hard constraint of every plan (sim/memory.h).
  std::vector<int64_t> memCapacity;
  /// Per device: bytes of workspace an operator holds there while it runs (Device::workspaceBytes);
  /// empty (none) for task graphs.
  std::vector<int64_t> deviceWorkspaceBytes;
  /// The model's weights (initializers and folded constants), by index: their bytes, and per task the
  /// indexes of the distinct weights it reads. A weight lives once on every device that runs one of
  /// its readers (sim/memory.h). Empty for task graphs (no weights).
  std::vector<int64_t> weightBytes;
  std::vector<std::vector<int32_t>> taskWeights;
  /// Per weight (same index as weightBytes): its value's name ("blk.3.ffn_up_exps.weight",
  /// "past_key.3"): the llama.cpp rules (sched/llamarules.h) place tensors by name. Empty for task graphs.
  std::vector<std::string> weightNames;

  /// Per device, from the platform (empty for task graphs): kind ("cpu", "gpu", "npu", "dsp", "pim"),
  /// cores of a multi-core accelerator, on-chip memory bytes (0 = none) and the fixed launch overhead
  /// per operator or group in microseconds. Read by DLFusion, the OSDI'23 coarse subgraphs and
  /// PartitionTuner's "device fuses" test.
  std::vector<std::string> deviceKinds;
  std::vector<int> deviceCores;
  std::vector<int64_t> deviceOnChipBytes;
  std::vector<double> deviceLaunchUs;
  /// Per device: Device::wakeUpUs and Device::modeSwitchUs, the stream's handoff costs (sim/stream.h);
  /// empty (none) for task graphs and tables built without a platform.
  std::vector<double> deviceWakeUpUs;
  std::vector<double> deviceModeSwitchUs;
  /// Per device: 1 when its transfers run inline, on the thread that runs its kernels (Device::copies
  /// "inline"): the simulator charges them to the device's tasks, not to a link (sim/simrules.h). Empty
  /// (none) for task graphs and tables built without a platform.
  std::vector<char> deviceInlineCopies;
  /// Per device: Device::readerConvertGBs as bytes per microsecond (0: none); empty without a platform.
  std::vector<double> deviceReaderConvertBytesPerUs;
  /// Per task: 1 when a CPU device runs it channels-last, converting a row-major 4-D input first
  /// (readsChannelsLastOnCpu): the reader's conversion of an inline device's result is charged to it.
  /// Empty for task graphs.
  std::vector<char> taskConvertsInput;
  /// Per task: output channels of the op (dim 1 of its first output for Conv-like ops, last dim for
  /// Gemm/MatMul, 0 when unknown or for task graphs). DLFusion's per-layer core count uses it.
  std::vector<int64_t> taskChannels;

  /// Tasks the executing runtime runs as one fused kernel when they are all on one device (ir/fusion.h),
  /// known from an in-context profile: w() of their tasks are then the kernel's time (on its last task;
  /// about 0 on the others). Empty when the costs know no fusion.
  std::vector<std::vector<TaskId>> fusedGroups;
  std::vector<int32_t> fusedGroupOf;  ///< Per task: index into fusedGroups or -1 (empty with it).
  /// Costs of the tasks alone (as cost), for a plan that splits a fused group: the cost model's
  /// estimates from before a profile replaced them, or before a device that fuses epilogues
  /// (Device::fusion) charged its chains as kernels. Empty until then.
  std::vector<double> unfusedCost;
  /// Per device: the speed of its CPUs when its costs were measured (cpuSpeedProbeUs() of an in-context
  /// profile, microseconds; 0 unknown); empty when no profile said. atRunSpeed() rescales with it.
  std::vector<double> speedProbeUs;
  /// The cost of v on d under a plan's placement: w(v,d), unless v's fused group is split there. A
  /// member not placed yet (-1: the exact search's partial plans) counts as placed with v.
  double wIn(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const {
    if (fusedGroupOf.empty() || unfusedCost.empty() || fusedGroupOf[static_cast<size_t>(v)] < 0) return w(v, d);
    for (TaskId u : fusedGroups[static_cast<size_t>(fusedGroupOf[static_cast<size_t>(v)])])
      if (placement[static_cast<size_t>(u)] >= 0 && placement[static_cast<size_t>(u)] != d)
        return unfusedCost[static_cast<size_t>(v) * deviceIds.size() + static_cast<size_t>(d)];
    return w(v, d);
  }

  /// Per-task work (empty for task graphs); used for group costs W(S,d).
  std::vector<OpWork> work;
  /// Group cost W(S,d) in microseconds for tasks fused as one kernel; kInf if d cannot run them all.
  /// Set by buildCostTable (roofline group model); for task graphs it is the plain sum.
  std::function<double(const std::vector<TaskId>&, DeviceId)> groupCost;
  /// Per device (empty for task graphs): 1 when its compiler runs a block of operators as one kernel
  /// on any number of its cores (Device::compilesBlocks), so that Plan::blocks change its costs.
  std::vector<char> deviceCompilesBlocks;
  /// The roofline parts of a group on device d with the given dominant class and dtype, total flops and
  /// off-chip bytes (rooflineGroupParts on the platform's device). Set by buildCostTable; unset for
  /// task graphs. The block model (BlockTimer) is built on it.
  std::function<RooflineParts(DeviceId, OpClass, DType, int64_t, int64_t)> groupRoofline;
  /// Per [task * numDevices + device] on devices that compile blocks: the block model's time of the
  /// task alone on all cores (BlockTimer); the denominator of blockTimeUs. Empty when none does.
  std::vector<double> blockAlone;
  /// Per [task * numDevices + device], a fraction of w(v,d) below which v's share of a block on d never
  /// goes (1 where d compiles no blocks): the lower bound's cost. Empty when no device compiles blocks.
  std::vector<double> blockFloor;
  double wFloor(TaskId v, DeviceId d) const {
    return blockFloor.empty() ? w(v, d) : w(v, d) * blockFloor[static_cast<size_t>(v) * deviceIds.size() + static_cast<size_t>(d)];
  }

  /// c(e,a,b): transfer time of edge e from a to b in microseconds (0 when free).
  double comm(int32_t edge, DeviceId a, DeviceId b) const;
  /// Transfer time of `bytes` from a to b.
  double transferUs(DeviceId a, DeviceId b, int64_t bytes) const;
  /// Mean transfer time of edge e over ordered device pairs a != b (c-bar of HEFT).
  double meanComm(int32_t edge) const;
  /// True when d can run v.
  bool canRun(TaskId v, DeviceId d) const { return w(v, d) < kInf; }
  /// A topological order of the tasks (tasks are already stored topologically for ONNX models).
  std::vector<TaskId> topoOrder() const;
  /// Rebuilds outEdges/inEdges from edges. An edge with a fixed time and no item gets an item of its
  /// own (a fixed-time edge is a message of its own, as in the papers).
  void indexEdges();
};

/// Completes a table built in code (task graphs of tests, benches and the task-graph parser) once its
/// devices, tasks, costs and edges are set: indexes the edges, gives every edge without an item a data
/// item of its own (a task graph's edge is its own data, with its own transfer), and resets the rest
/// to a task graph's defaults (no host input or output bytes, host device 0, no exclusive devices,
/// unlimited memory, free links that never contend, group cost the plain sum). Customise after
/// calling it.
void finishTaskTable(CostTable& t);

/// Gives every ordered pair of distinct devices the same link: `latencyUs` + bytes / `bytesPerUs`; when
/// `contended`, each pair is its own link resource (one transfer at a time), named "a->b".
void setUniformLinks(CostTable& t, double latencyUs, double bytesPerUs, bool contended);

/// The block model: the time of tasks run as one kernel on `cores` of device d's cores, built one task
/// at a time so that a DP that grows blocks pays O(degree) per task and O(1) per core count:
///  - one launch; flops summed and run at the peak of the heaviest member's class and dtype; off-chip
///    bytes are the members' weights, model inputs and outputs and the tensors that cross the block's
///    boundary (intermediates stay on chip): the roofline of a group (CostTable::groupRoofline);
///  - compute spread over k cores by output channels, layer by layer: a member with ch channels takes
///    ceil(ch / k) rounds, so for it the cores count as keff = ch / ceil(ch / k) (at most k) and its
///    flops take C / keff times as long as on all C cores at full use;
///  - the barrier of the k cores, Device::coreSyncUs * ceil(log2 k).
/// modelUs(k) = launch + max(sum of compute_v * C / keff_v, memory) + barrier; timeUs(k) is what a plan is charged
/// (blockTimeUs). Devices that compile no blocks: timeUs is the plain sum of the members' costs.
class BlockTimer {
 public:
  BlockTimer(const CostTable& t, DeviceId d);
  /// Adds a task (not already a member). O(its degree + C).
  void add(TaskId v);
  /// Empties the block (O(members)).
  void clear();
  size_t size() const { return members_.size(); }
  const std::vector<TaskId>& members() const { return members_; }
  /// The block model's time on `cores` (0 or >= C: all), kInf when d cannot run a member.
  double modelUs(int cores) const;
  /// What a plan charges for the block on `cores`: blockTimeUs(t, members, d, cores).
  double timeUs(int cores) const;

 private:
  const CostTable& t_;
  DeviceId d_;
  int cores_ = 1;
  bool compiles_ = false, cannot_ = false;
  std::vector<TaskId> members_;
  std::vector<char> in_;  ///< Per task: a member.
  int64_t flops_ = 0, bytes_ = 0, heaviest_ = -1;
  OpClass cls_ = OpClass::Unknown;
  DType dtype_ = DType::Float32;
  double sumW_ = 0, sumAlone_ = 0;
  std::vector<double> spread_;  ///< [k]: sum of the members' flops * C / keff_v(k), k = 1..C.
};

/// Sets the block model of a table whose tasks, costs, work, edges, channels and cores are filled:
/// groupRoofline over `devices` (the platform's, in table order), deviceCompilesBlocks, blockAlone and
/// blockFloor. buildCostTable calls it.
void setBlockModel(CostTable& t, const std::vector<Device>& devices);

/// The time a plan charges for `tasks` run as one block on d with `cores` of its cores (0: all): the
/// members' own costs sum(w(v,d)) scaled by the block model's gain (BlockTimer::modelUs),
///     modelUs(S, cores) / sum over v in S of modelUs({v}, all),
/// so that a block gains what the model says fusion and the core count gain, at the level of the
/// table's own costs (measured ones included). The plain sum where d compiles no blocks, without a block model, and for one op on all cores.
/// kInf when d cannot run a member.
double blockTimeUs(const CostTable& t, const std::vector<TaskId>& tasks, DeviceId d, int cores);

/// Sets t.groupCost to the plain sum of the members' costs (no fusion gain), over a snapshot of t.cost:
/// the group model of task graphs, whose tasks have no work to fuse.
void useSumGroupCost(CostTable& t);

/// True for a model input or output that is a language model's KV cache by the names exporters give
/// it (past_key*, past_value*, past.* in; present_key*, present_value*, present.* out: Partex's
/// generator, Hugging Face's and ONNX Runtime GenAI's exports). buildCostTable treats it as device
/// state, as llama.cpp and ONNX Runtime keep it: the past is resident, like a weight, on the device of
/// each operator that reads it and never sent from the host; the present stays on its device.
bool isCacheValue(const Value& v);

/// Builds the cost table for an imported model on a platform from the roofline device models.
/// Fails when some operator can run on no device (the message names the operator).
Result<CostTable> buildCostTable(const Graph& g, const std::vector<OpWork>& work, const Platform& p);

/// The table at another speed of its devices' CPUs: every operator cost on device d (cost and
/// unfusedCost) multiplied by runProbeUs[d] / t.speedProbeUs[d], the CPUs' speed probe during a run over
/// the one the costs were measured at, where both are known (> 0); other devices, transfers and links
/// unchanged. A virtual CPU's speed changes in phases (cpuSpeedProbeUs in profile/profiler.h), so a
/// prediction from a profile describes the speed of its moment; this one describes the run's. `factor`,
/// when given, receives the multiplier of every device (1 where unknown).
CostTable atRunSpeed(const CostTable& t, const std::vector<double>& runProbeUs, std::vector<double>* factor = nullptr);

/// Parses a JSON task graph: {"devices": ["P1",...], "tasks": {"T1": [14,16,9], ...},
/// "edges": [["T1","T2",18], ...]}; null costs mean "cannot run"; edges carry fixed transfer times
/// between two different devices; links never contend. `origin` names the file in errors.
Result<CostTable> parseTaskGraph(const std::string& json, const std::string& origin);
/// True when the text looks like a scheduling instance (a JSON object: every instance format is one), not an ONNX model.
bool looksLikeTaskGraph(const std::string& bytes);

}  // namespace partex
