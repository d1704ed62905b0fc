#pragma once
/// \file The executor: runs a whole model with a plan's placement on a backend's real devices,
/// concurrently. One worker thread ("lane") per logical CPU the devices use, created and pinned once
/// and kept for every run, as a runtime keeps its threads: the devices that are modes of one CPU
/// (cpu-serial and core0) share its lane, so no two threads of the executor ever compete for a CPU; a
/// multi-thread device (cpu-parallel, an OpenMP team with one thread pinned per CPU) is led by the lane
/// of its first CPU while the lanes of its other CPUs step aside (yield) for each of its operators. Each
/// lane runs its operators in the order of the simulated timeline's start times; an operator starts
/// when its inputs are ready (atomic dependency counters; a waiting lane spins, yielding its CPU at
/// every turn, and sleeps after ExecOptions::spinUs). Devices share this process's memory, so tensors
/// pass by pointer (zero copy), as the this-machine platform models it. After `warmup` untimed runs,
/// `reps` timed runs give the makespan (median) and each operator's time (median). A single-device run
/// gives the reference outputs that the plan's outputs are checked against.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/stream.h"
#include "support/result.h"

namespace partex {

/// The least warm-up, in milliseconds of runs, of a plan with a GPU (see ExecOptions::warmupMinMs).
inline constexpr double kGpuWarmupMs = 200.0;

struct ExecOptions {
  int warmup = 1;
  /// Warm-up runs continue past `warmup` until this many milliseconds have passed since the first one
  /// (0: none). executePlan raises it to kGpuWarmupMs when the plan uses a device of kind "gpu", whose
  /// clocks ramp up from idle.
  double warmupMinMs = 0;
  int reps = 5;
  /// Seed of the synthetic model inputs, and of synthetic weights where the graph has no data (as the
  /// profiler's). Weights with data (Value::data) are the model's own, shared without a copy.
  uint64_t seed = 1;
  /// Leaf tensors given by the caller, by value id (dtype and shape must match the value's): model
  /// inputs (the others are synthetic), and weights a caller that runs the graph once hands over
  /// (handOverWeights), so that executePlan holds them alone and can free each one as soon as the
  /// kernels reading it keep their own copy.
  std::map<ValueId, Tensor> inputs;
  /// Keep the plan run's model outputs in ExecResult::outputs.
  bool keepOutputs = false;
  /// Device of the single-device reference run; "" = the table's host device.
  std::string referenceDevice;
  bool checkOutputs = true;
  /// Run each fused group of operators placed together (ir/fusion.h) as one kernel, as the runtime
  /// does; false: one kernel per operator. The reference run never fuses.
  bool fuse = true;
  /// A lane whose next operator is not ready spins this long (yielding its CPU at every turn, so that
  /// anything else scheduled there runs first) before it sleeps: waking a sleeping thread costs tens of
  /// microseconds on an idle machine and a time slice on a busy one, which the simulator does not
  /// predict, so the default spins for as long as a run can reasonably wait.
  int spinUs = 1000000;
  /// A timed run in which the lanes got less than this share of their CPUs (other programs ran) is
  /// disturbed: it is discarded and run again, at most maxDiscarded times (-1: twice `reps`).
  double minCpuShare = 0.9;
  int maxDiscarded = -1;
  /// Relative tolerance of the output check (bitwise equality always passes): 1e-4, the tolerance the
  /// outputs are held to against ONNX Runtime, since fused kernels (BatchNormalization folded into the
  /// weights, post-ops) round differently from the unfused reference (2e-5 seen on a ResNet-18). A plan
  /// that runs an operator on a GPU is held to at least 1e-3 (issue 25's bound for the GPU's float32).
  double rtol = 1e-4;
  std::function<void(int done, int total, const std::string& what)> progress;  ///< May be empty.
  const std::atomic<bool>* cancel = nullptr;                                   ///< May be null.
};

struct ExecResult {
  std::vector<double> makespansUs;  ///< Per timed run.
  double makespanUs = 0;            ///< Median of makespansUs.
  std::vector<double> opUs;         ///< Per task: median kernel time.
  std::vector<std::vector<double>> opSamplesUs;  ///< Per task: its kernel time in every timed run.
  std::vector<double> opStartUs;    ///< Per task: median start time from the run's start.
  /// Per task: the last operator of the fused group whose one kernel ran it (its time is that
  /// operator's; the others' is 0); -1 when it ran alone.
  std::vector<OpId> fusedInto;
  /// CPU time the workers got over their busy wall time (running or spinning, sleeps excluded;
  /// single-thread devices only): 1 on an
  /// idle machine; on a shared one the fraction of a core the scheduler gave, which stretches every
  /// measured time that is longer than a time slice.
  double cpuShare = 1.0;
  /// Per device (executePlan: the cost table's devices; executeOnDevice: its one device): the speed of
  /// its CPUs during the timed runs, cpuSpeedProbeUs() taken on each of its lanes just before each run,
  /// median over the runs, the slowest lane's for a multi-thread device; 0 for a device the plan leaves
  /// idle. Compared with the profile's (ProfileDevice::speedProbeUs), it says how much faster or slower
  /// the CPUs ran than when they were profiled.
  std::vector<double> deviceProbeUs;
  /// Waits for an input per timed run (mean) that outlasted ExecOptions::spinUs and slept: each costs a
  /// wake-up (tens of microseconds idle, a slice on a busy machine) that the simulator does not predict.
  double sleepsPerRun = 0;
  /// Per run: how often a lane changes between its own devices' operators and stepping aside for a
  /// multi-thread device's (cpu-parallel) operator: a mode switch of the CPU.
  int modeSwitchesPerRun = 0;
  /// Where the plan cannot be executed as predicted, why (one line each); empty when it can.
  std::vector<std::string> notes;
  std::string ompWaitPolicy;  ///< The OpenMP wait policy the run used (profile/ompenv.h).
  int discardedRuns = 0;      ///< Disturbed timed runs discarded and run again.
  bool disturbed = false;     ///< Some kept runs were disturbed too (after maxDiscarded).
  /// Concat inputs their producers wrote straight into the Concat's output (a pre-placed slice, where
  /// the slices are contiguous), so that the Concat copied nothing for them.
  int concatInputsInPlace = 0;
  /// Reshape, Flatten, Squeeze and Unsqueeze operators (runsAsView) whose output was a view of their
  /// input's storage in the last run: no copy, no storage of their own in the activation arena.
  int viewsOfInputs = 0;
  /// Bytes of the plan run's activation arena: its intermediate tensors, each at its own offset, shared
  /// between tensors never alive together (model outputs and Concat's pre-placed inputs apart).
  int64_t plannedActivationBytes = 0;
  bool outputsChecked = false;
  bool outputsMatch = false;
  double maxAbsDiff = 0;
  double maxRelDiff = 0;
  std::string mismatch;  ///< First mismatch, "" when the outputs match.
  /// With ExecOptions::keepOutputs: the model outputs of the last timed run, in Graph::outputs order.
  std::vector<Tensor> outputs;
};

/// Runs `plan` (tasks == operators of `g`, devices by CostTable::deviceIds) on `backend`. Errors: a
/// device the backend lacks, an operator it cannot run there, a kernel failure (named), cancellation.
/// `opts` is taken by value: its given leaves (ExecOptions::inputs) move into the run.
Result<ExecResult> executePlan(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                               ExecOptions opts);

/// Moves the data of every weight of `g` of 64 KiB or more into `opts.inputs` (as aliases; smaller ones
/// stay, as the fusion rules read constants), leaving `g` without it, for a
/// caller that runs `g` once (partex-cli execute): the run then holds the only reference to each
/// weight, so a weight whose kernels keep their own (reordered) copy is freed, not held twice.
/// Fails first, touching nothing, when the run would not fit in memory (checkRunMemory).
Status handOverWeights(Graph& g, ExecOptions& opts);

/// The reference run's condition, checked before a run allocates its weights and inputs: `backend`
/// runs every operator of `g` on its own. The error names the first operator it cannot run and why
/// (a float16 model on the CPU backend, say), as the reference run would after expanding the weights.
Status checkReferenceRunnable(const Graph& g, const Backend& backend);

/// Runs every operator of `g` on one device of `backend` in `order` (a topological order) with the
/// executor's own lanes, waits and timing: the in-context profile, measured exactly as a plan that
/// puts everything on that device executes. An operator's time (opUs, opSamplesUs) runs from the
/// previous operator's end to its own end, so that it carries its share of the executor's dispatch
/// and the times add up to the run's makespan. No output check.
Result<ExecResult> executeOnDevice(const Graph& g, const Backend& backend, const std::string& device,
                                   const std::vector<OpId>& order, const ExecOptions& opts);

/// A stream of inferences through one plan on the real devices (partex-cli execute --stream N, issue
/// 29): what the simulator's simulateStream (sim/stream.h) predicts, measured.
struct StreamExecOptions {
  int inferences = 200;  ///< Timed inferences, 1 or more.
  /// Inferences in the system at once, each in its own context (kernels and buffers); inference t starts
  /// only when inference t - inFlight has finished and its outputs were checked. 0: the simulator's
  /// default bound (defaultInFlight: the devices the plan uses, plus one, rounded up to a multiple of
  /// its replicas). With replicas it must be a multiple of their number.
  int inFlight = 0;
  /// Run every context once, untimed, before the timed stream (first touches, kernels' weight caches).
  bool warmup = true;
  uint64_t seed = 1;
  /// Model inputs given by the caller (as ExecOptions::inputs): every inference reads them. Inputs not
  /// given are synthetic, from a few seeds (StreamExecResult::inputSets), so that consecutive
  /// inferences of one context read different inputs and a context that read another's buffers shows
  /// in the output check.
  std::map<ValueId, Tensor> inputs;
  std::string referenceDevice;  ///< "" = the table's host device.
  bool checkOutputs = true;
  bool fuse = true;
  /// A lane whose next operator is not ready yields its CPU for at most this long, then sleeps until an
  /// operator it waits for ends (0: sleeps after a few yields). Stages of a pipeline wait for each other
  /// every period: spinning would take the core from the other programs and lanes there.
  int spinUs = 0;
  double rtol = 1e-4;
  /// How inferences go to the plan's replicas (sim/stream.h). NextFree needs replicas on disjoint CPUs
  /// (no lane serving two) and at least as many inferences as contexts; the input sets then no longer
  /// alternate within a context by construction (it takes whichever inferences its replica claims).
  ReplicaDispatch dispatch = ReplicaDispatch::RoundRobin;
  /// Keep every (inference, operator)'s start and end (StreamExecResult::opStartUs/opEndUs).
  bool keepOpTimes = false;
  std::function<void(int done, int total, const std::string& what)> progress;  ///< May be empty.
  const std::atomic<bool>* cancel = nullptr;                                   ///< May be null.
};

struct StreamExecResult {
  int inferences = 0;
  int inFlight = 0;
  int replicas = 1;   ///< replicaCount(plan).
  ReplicaDispatch dispatch = ReplicaDispatch::RoundRobin;
  std::vector<int> replicaOf;  ///< Per inference: the replica that ran it (t % replicas under round robin).
  int inputSets = 0;  ///< Distinct synthetic input sets: inference t reads set t % inputSets.
  /// Completions left out of the steady-state figures: the first inFlight (the pipeline filling), fewer
  /// when the stream is short (at least two completions stay).
  int warmupCompletions = 0;
  std::vector<double> startUs, endUs;  ///< Per inference: its first operator's start, its last one's end.
  /// Per inference and device of the table: the first start and the last end of the inference's
  /// operators there (-1 where it has none): each stage's span.
  std::vector<std::vector<double>> stageStartUs, stageEndUs;
  /// Per inference and device: the sum of its kernels' times there (the stage's busy time, without the
  /// waits for inputs that its span includes); 0 where it has none.
  std::vector<std::vector<double>> stageBusyUs;
  /// With keepOpTimes: operator v of inference t at [t * operators + v].
  std::vector<double> opStartUs, opEndUs;
  double periodUs = 0;        ///< Median gap between consecutive completions after the warm-up ones.
  double throughputPerS = 0;  ///< 1e6 / periodUs.
  /// Completions after the warm-up ones over the time from the last warm-up completion to the last one
  /// (the rate over the whole steady part, less sensitive to completions that come in pairs).
  double steadyThroughputPerS = 0;
  double latencyMedianUs = 0, latencyP90Us = 0;  ///< end - start of the inferences after the warm-up.
  /// Median over the inferences after the warm-up: the time the lane that ended an inference spent on
  /// its completion (the output check and the next input set's binding) before it went on: part of the
  /// measured period, no part of the simulated one (ONNX Runtime's stream checks nothing).
  double checkMedianUs = 0;
  double wallUs = 0;                             ///< First start to last end.
  double cpuShare = 1.0;                         ///< As ExecResult::cpuShare, over the timed stream.
  int sleeps = 0;                                ///< Waits that slept (every wait that outlasted spinUs).
  /// Per device of the table: cpuSpeedProbeUs() on its lanes just before the timed stream (the slowest
  /// lane's for a team); 0 for a device the plan leaves idle.
  std::vector<double> deviceProbeUs;
  int modeSwitchesPerInference = 0;
  std::vector<std::string> notes;
  std::string ompWaitPolicy;
  bool outputsChecked = false;
  bool outputsMatch = false;
  int mismatchedInferences = 0;
  double maxAbsDiff = 0, maxRelDiff = 0;
  std::string mismatch;  ///< First mismatch ("inference 7: output 'y': ..."), "" when all match.
};

/// Runs `o.inferences` inferences of `g` through `plan` as a pipeline: each lane (one per CPU, as in
/// executePlan) runs its operators of inference t, in the simulated order, before those of t + 1, so
/// that inference t + 1 enters a device while t is still on a later one. At most `inFlight` contexts
/// (kernels and buffer sets) exist; context t % inFlight runs inference t. A plan with replicas
/// (sim/plan.h) runs inference t on replica t % R, each context prepared for its replica's devices. Every inference's outputs
/// are checked against a single-device reference run of its input set. Errors as executePlan's, and a
/// stream of fewer than one inference or a negative in-flight bound.
Result<StreamExecResult> executeStream(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                                       StreamExecOptions o);

/// Compares two tensors: same dtype and shape, and every element equal or within rtol (relative to the
/// larger magnitude, with an absolute floor of rtol times the largest magnitude in `ref`). Updates the
/// largest differences seen; returns false with `why` set on a mismatch.
bool tensorsClose(const Tensor& ref, const Tensor& got, double rtol, double& maxAbs, double& maxRel, std::string* why);
/// The largest finite magnitude in a floating-point tensor (tensorsClose's absolute floor is rtol times
/// it); 0 for other dtypes.
double tensorScale(const Tensor& ref);
/// tensorsClose with `refScale` = tensorScale(ref) computed beforehand: a stream checks every inference
/// against the same few references, on the lane that ended it, between two of its inferences (the check
/// is in the measured period: it must not cost more than reading the two tensors once). The same result,
/// differences and message as tensorsClose.
bool tensorsClose(const Tensor& ref, double refScale, const Tensor& got, double rtol, double& maxAbs, double& maxRel,
                  std::string* why);

}  // namespace partex
