#pragma once
/// \file A stream of inferences through one plan: the steady-state period (throughput) and each
/// inference's latency, judged by the same simulator as a single inference (issue 29).
///
/// The model: inference t+1 may start on a device while inference t still runs elsewhere (a pipeline).
/// Each device runs its tasks in the plan's order, all of inference t's before any of inference t+1's
/// (in-order processing, what a runtime with one thread or queue per device does). At most `inFlight`
/// inferences are in the system at once (the bounded queues between stages): inference t starts only
/// when inference t - inFlight has finished. Weights live once per device; every in-flight inference's
/// activations and the buffers between stages count in the devices' memory (the capacity constraint
/// holds for the stream, not only for one inference).
///
/// It is computed exactly by unrolling: the table is copied once per inference (tasks "name#t", edges
/// within each copy, the in-flight bound as zero-cost edges from the last tasks of inference t -
/// inFlight to the first of inference t), the plan's device orders concatenated copy after copy, and
/// the result simulated by simulate() under every rule it applies (links, exclusive devices, memory).

#include <map>
#include <utility>
#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simulator.h"

namespace partex {

/// What a schedule minimises. Latency: one inference's makespan (every algorithm's default).
/// Throughput: the steady-state period of a stream of inferences, with an optional bound on each
/// inference's latency.
enum class Objective { Latency, Throughput };
/// "latency" / "throughput".
const char* objectiveName(Objective o);
/// Parses "latency" or "throughput"; false otherwise.
bool parseObjective(const std::string& s, Objective& out);

/// How a stream's inferences go to a plan's replicas (sim/plan.h). RoundRobin: inference t on replica
/// t mod R (what a plan states; a replica listed twice takes twice the share). NextFree: each inference
/// to the replica that frees first, as a runtime's shared request queue does (ONNX Runtime's sessions,
/// OpenVINO's streams): the simulator frees replica k `occupancy_k` after it takes an inference, its
/// busiest device's busy time per inference of that replica (nextFreeAssignment); the executor lets the
/// replica whose first lane is free take the next inference. The same as RoundRobin for equal replicas.
enum class ReplicaDispatch { RoundRobin, NextFree };
/// "round-robin" / "next-free".
const char* dispatchName(ReplicaDispatch d);
/// Parses "round-robin" or "next-free"; false otherwise.
bool parseDispatch(const std::string& s, ReplicaDispatch& out);

/// Next-free dispatch as the simulator models it: replica k is free again `occupancyUs[k]` after taking
/// an inference; inference c goes to the replica free first (ties: the lowest index). Per inference, its
/// replica.
std::vector<int> nextFreeAssignment(const std::vector<double>& occupancyUs, int inferences);

struct StreamOptions {
  /// Inferences simulated (0: enough for a steady state, 2 * inFlight + 8, at least 12). The period is
  /// measured over the second half of them, less the last inFlight - 1 (the pipeline draining: they run
  /// with fewer competitors than in a long stream), in whole rounds of the replicas.
  int inferences = 0;
  /// Inferences in the system at once (0: defaultInFlight, the number of devices the plan's replicas
  /// use, plus one, rounded up to a multiple of the replicas).
  int inFlight = 0;
  /// Keep the unrolled timeline in StreamResult::timeline (for a Gantt chart of several periods).
  bool keepTimeline = false;
  ReplicaDispatch dispatch = ReplicaDispatch::RoundRobin;
};

struct StreamResult {
  int inferences = 0;
  int inFlight = 0;
  double periodUs = 0;            ///< Steady state: time between two inferences' ends.
  double throughputPerS = 0;      ///< 1e6 / periodUs.
  double latencyUs = 0;           ///< Median over the steady-state inferences: end - first start.
  double maxLatencyUs = 0;        ///< Largest over all inferences.
  double singleLatencyUs = 0;     ///< One inference alone (the plan's makespan; the slowest replica's).
  int replicas = 1;               ///< replicaCount(plan).
  std::vector<int> replicaOf;     ///< Per inference: its replica (t mod replicas under RoundRobin).
  std::vector<double> start, end; ///< Per inference: its first task's start, its last task's end.
  /// Per device: busy time per inference (the sum of its tasks' times, averaged over the replicas); the
  /// largest is the bottleneck when no link or dependency limits the period more.
  std::vector<double> busyPerInference;
  /// Per replica and device: the busy time of one inference of that replica there.
  std::vector<std::vector<double>> replicaBusy;
  DeviceId bottleneck = -1;       ///< The busiest device per inference (-1 when none runs anything).
  std::vector<int64_t> peakBytes; ///< Per device: peak live bytes of the stream.
  std::vector<bool> overCapacity; ///< Per device: the stream's resident bytes above its capacity.
  Timeline timeline;              ///< The unrolled timeline (when keepTimeline): task v of inference i is v + i * tasks.
};

/// The table of `copies` inferences run back to back with at most `inFlight` in the system (see the
/// file comment). Weights and device data are shared; everything per task is copied.
CostTable unrollStream(const CostTable& t, int copies, int inFlight);
/// As above, with the in-flight bound given per copy: copy c's first tasks wait for the last ones of copy
/// waitsFor[c] (-1: none). unrollStream(t, copies, K) is waitsFor[c] = c - K.
CostTable unrollStream(const CostTable& t, const std::vector<int>& waitsFor);
/// The plan of `p` for unrollStream(t, copies, ...): copy c on replica c mod R's devices (every copy on
/// the same devices when the plan has no replicas), each device's order the copies' orders one after
/// another. Blocks are copied per inference.
Plan unrollPlan(const CostTable& t, const Plan& p, int copies);
/// As above, copy c on replica replicaOf[c] (one copy per entry).
Plan unrollPlan(const CostTable& t, const Plan& p, const std::vector<int>& replicaOf);
/// The in-flight bound per copy when copy c runs on replica replicaOf[c] and each replica has
/// inFlight / R contexts, taken in turn: copy c waits for the copy its replica took inFlight / R
/// turns before (-1: none). Under round robin, c - inFlight.
std::vector<int> inFlightWaits(const std::vector<int>& replicaOf, int replicas, int inFlight);
/// As above with each replica's own number of contexts (contextsOf[k] >= 1).
std::vector<int> inFlightWaits(const std::vector<int>& replicaOf, const std::vector<int>& contextsOf);
/// Per replica of `plan`: the lowest replica that puts every operator on the same device (itself when
/// none). A plan may list a replica twice to weight round robin; under next-free dispatch the copies
/// are one replica with their contexts together (one device cannot take two inferences at once).
std::vector<int> canonicalReplicas(const Plan& plan);

/// Simulates a stream of inferences through `plan`. Errors as simulate()'s.
Result<StreamResult> simulateStream(const CostTable& t, const Plan& plan, const StreamOptions& o = {},
                                    const SimOptions& sim = {});

/// simulateStream for many plans of one table (the throughput search judges thousands): the unrolled
/// table depends on the table, the number of inferences and the in-flight bound, not on the plan, so it
/// is built once per (inferences, in-flight, assignment of the copies to replicas) and kept. `t` must outlive the judge.
class StreamJudge {
 public:
  explicit StreamJudge(const CostTable& t, StreamOptions o = {}, SimOptions sim = {});
  Result<StreamResult> run(const Plan& plan);

 private:
  const CostTable& t_;
  StreamOptions o_;
  SimOptions sim_;
  std::map<std::vector<int>, CostTable> unrolled_;  ///< By the copies' in-flight waits.
};

/// The number of distinct devices `plan` puts tasks on, over all of its replicas.
int devicesUsed(const CostTable& t, const Plan& plan);
/// The default in-flight bound of a stream through `plan` (simulator and executor alike): the devices
/// used plus one (one inference per stage and one waiting), rounded up to a multiple of the replicas so
/// that the executor's context t mod K always runs the same replica (t mod R).
int defaultInFlight(const CostTable& t, const Plan& plan);

/// A stage of a pipelined plan: a maximal run of operators on one device along t.topoOrder(), the order
/// in which the pipeline programme (sched/pipeline.cpp) and best's throughput search cut a model into
/// stages. Positions [begin, end) index that order.
struct PlanStage {
  DeviceId device = -1;
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
};
/// The stages of `plan` along `topo` (t.topoOrder()), in order; empty for an empty table.
std::vector<PlanStage> planStages(const Plan& plan, const std::vector<TaskId>& topo);

/// What dragging the boundary between stages k and k+1 by `shift` operators moves: shift < 0 takes the
/// last -shift operators of stage k to stage k+1's device, shift > 0 the first `shift` operators of
/// stage k+1 to stage k's device, each stage keeping at least one (the shift is clamped). The operators
/// come in topological order; empty (device -1) when k is not a boundary or the clamped shift is 0.
struct StageBoundaryMove {
  std::vector<TaskId> ops;
  DeviceId device = -1;
};
StageBoundaryMove stageBoundaryMove(const std::vector<PlanStage>& stages, const std::vector<TaskId>& topo, int k, int shift);

}  // namespace partex
