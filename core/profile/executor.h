#pragma once
/// \file The executor: runs a whole model with a plan's placement on a backend's real devices,
/// concurrently: one worker thread per device (created and pinned once, kept for every run, as a
/// runtime keeps its threads) walks that device's operators in plan order, each operator starting
/// when its inputs are ready (atomic dependency counters; a waiting worker spins, then sleeps) and when no
/// mutually exclusive device (CostTable::exclusiveWith: cpu-serial vs core0, cpu-parallel vs every
/// core) is running. Devices share this process's memory, so tensors pass by pointer (zero copy),
/// as the this-machine platform models it. After `warmup` untimed runs, `reps` timed runs give the
/// makespan (median) and each operator's time (median). A single-device run gives the reference
/// outputs that the plan's outputs are checked against.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "sim/plan.h"
#include "support/result.h"

namespace partex {

struct ExecOptions {
  int warmup = 1;
  int reps = 5;
  uint64_t seed = 1;  ///< Seed of the synthetic model inputs and weights (as the profiler's).
  /// Device of the single-device reference run; "" = the table's host device.
  std::string referenceDevice;
  bool checkOutputs = true;
  /// A worker whose next operator is not ready spins this long (yielding now and then) before it
  /// sleeps: waking a sleeping thread costs tens of microseconds on an idle machine, a slice on a busy one.
  int spinUs = 200;
  double rtol = 1e-5;  ///< Relative tolerance of the output check (bitwise equality always passes).
  std::function<void(int done, int total, const std::string& what)> progress;  ///< May be empty.
  const std::atomic<bool>* cancel = nullptr;                                   ///< May be null.
};

struct ExecResult {
  std::vector<double> makespansUs;  ///< Per timed run.
  double makespanUs = 0;            ///< Median of makespansUs.
  std::vector<double> opUs;         ///< Per task: median kernel time.
  std::vector<double> opStartUs;    ///< Per task: median start time from the run's start.
  /// CPU time the workers got over their busy wall time (running or spinning, sleeps excluded;
  /// single-thread devices only): 1 on an
  /// idle machine; on a shared one the fraction of a core the scheduler gave, which stretches every
  /// measured time that is longer than a time slice.
  double cpuShare = 1.0;
  /// Waits for an input per timed run (mean) that outlasted ExecOptions::spinUs and slept: each costs a
  /// wake-up (tens of microseconds idle, a slice on a busy machine) that the simulator does not predict.
  double sleepsPerRun = 0;
  bool outputsChecked = false;
  bool outputsMatch = false;
  double maxAbsDiff = 0;
  double maxRelDiff = 0;
  std::string mismatch;  ///< First mismatch, "" when the outputs match.
};

/// Runs `plan` (tasks == operators of `g`, devices by CostTable::deviceIds) on `backend`. Errors: a
/// device the backend lacks, an operator it cannot run there, a kernel failure (named), cancellation.
Result<ExecResult> executePlan(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                               const ExecOptions& opts);

/// Compares two tensors: same dtype and shape, and every element equal or within rtol (relative to the
/// larger magnitude, with an absolute floor of rtol times the largest magnitude in `ref`). Updates the
/// largest differences seen; returns false with `why` set on a mismatch.
bool tensorsClose(const Tensor& ref, const Tensor& got, double rtol, double& maxAbs, double& maxRel, std::string* why);

}  // namespace partex
