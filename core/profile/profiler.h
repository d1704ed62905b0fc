#pragma once
/// \file The profiler: measures a model's operators on a backend's devices and writes a Profile.
///
/// Inputs: one reference run of the whole model (on the first device that runs each operator, in
/// topological order) computes every intermediate tensor from the model's own weights and seeded
/// synthetic model inputs (leafTensor: synthetic weights only where the graph has no data, as a graph
/// generated in memory), so that each operator is measured on the data it will really see. Then, per
/// device:
///  - method PerOperator: every operator alone, `warmup` untimed runs then `reps` timed runs; the
///    median and the median absolute deviation are kept;
///  - method InContext: per device, whole-model runs all-on-d in topological order (`warmup` + `reps`
///    times), each operator timed inside the run on the tensors the run produced, its outputs kept from
///    run to run as an executor keeps them. The caches are as a real run leaves them (an operator's
///    weights cold, its input just written by its producer), so these times predict whole-model runs
///    better than PerOperator's, which repeat one kernel on hot caches (docs/benchmarks.md);
///  - method MinimalPlan (Kim et al., TODAES 2024): `#devices + 1` whole-model runs: one all-on-d run
///    per device gives every node cost (each operator timed inside the run; repeated warmup + reps
///    times), one run alternating devices along the topological order gives transfer samples on every
///    device pair (edge costs depend only on the pair and the bytes). Profile::profilingRuns says how
///    many distinct runs that was.
/// Optional: fused groups (chains of 2..maxGroup consecutive operators run back to back as one unit,
/// W(S,d) of PartitionTuner and DUET) and transfers (on this machine devices share memory: a memcpy of
/// the tensor's size from a buffer first touched on the source device's core into one first touched on
/// the destination's, timed on the destination's core).
/// Progress is reported through a callback and a cancel token stops the work (an error "cancelled").

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "profile/profile.h"
#include "support/result.h"

namespace partex {

struct ProfilerOptions {
  enum class Method { PerOperator, InContext, MinimalPlan };
  Method method = Method::PerOperator;
  std::vector<std::string> devices;  ///< Backend device ids; empty = all of the backend's devices.
  int warmup = 2;
  int reps = 10;
  uint64_t seed = 1;
  /// Model inputs given by the caller (the CLI's --input): the reference run and the whole-model runs
  /// use them instead of seeded synthetic values, so that data-dependent operators (an If on a sample
  /// rate, a Loop's trip count) are measured on the path the user's data takes.
  std::map<ValueId, Tensor> inputs;
  bool groups = false;     ///< Also measure fused groups of consecutive operators.
  int maxGroup = 3;        ///< Largest group size (>= 2).
  bool transfers = false;  ///< Also measure transfers between every ordered device pair.
  /// Transfer sizes in bytes; empty = a geometric series from 1 KiB to the largest tensor (at most 64 MiB).
  std::vector<int64_t> transferSizes;
  /// Progress: (done, total, what is being measured). May be empty. Called from the profiling threads
  /// (one at a time).
  std::function<void(int done, int total, const std::string& what)> progress;
  const std::atomic<bool>* cancel = nullptr;  ///< May be null.
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

/// What the profiler did besides the numbers.
struct ProfilerInfo {
  double seconds = 0;                ///< Wall time of the whole profiling.
  int measurements = 0;              ///< Kernel runs timed (warm-up excluded).
  std::vector<std::string> skipped;  ///< "op@device: reason" for operators the backend cannot run there.
  int disturbedRunsDiscarded = 0;    ///< Whole-model runs other programs disturbed, discarded and repeated.
  std::vector<std::string> notes;    ///< One line each: what makes the numbers less trustworthy.
};

/// Profiles `g` on `backend`. The profile is keyed by g.graphSha256, the device ids and
/// backend.name()/version(). Errors: an unknown device, an operator no device can run (the reference
/// run needs it), a kernel failure (named), cancellation.
Result<Profile> profileModel(const Graph& g, const Backend& backend, const ProfilerOptions& opts,
                             ProfilerInfo* info = nullptr);

/// Whole-model distinct runs of the PIM paper's minimal profiling plan for `numDevices` devices.
inline int minimalPlanRuns(int numDevices) {
  return numDevices + (numDevices > 1 ? 1 : 0);
}

/// Checks that a stored profile fits this model, backend and device set: same graph hash, same backend
/// name and version, every requested device present. On a mismatch `why` says what differs.
bool profileMatches(const Profile& p, const Graph& g, const Backend& backend, const std::vector<std::string>& devices,
                    std::string* why = nullptr);

/// The method's name in profile files: "per-operator", "in-context" or "minimal-plan".
const char* methodName(ProfilerOptions::Method m);

/// Pins the calling thread to logical CPU `core` (no-op for core < 0). Returns false on failure.
bool pinThisThread(int core);

/// The speed of the calling thread's CPU right now: microseconds of a fixed loop of dependent loads and
/// multiply-adds over 16 KiB (L1-resident), the fastest of three. A virtual CPU changes speed in phases
/// of a fraction of a second to tens of seconds when the host's sibling hyperthread is busy (measured on
/// this project's VMs: loads and multiply-adds 1.4-1.5x slower, register-only arithmetic not at all,
/// with the thread getting all of its CPU), so a profile and a later run can see one CPU at speeds 1.5x
/// apart; the profile and the executor record this probe, and a prediction can be rescaled to the speed
/// of a run (atRunSpeed in cost/costtable.h).
double cpuSpeedProbeUs();

}  // namespace partex
