#pragma once
/// \file llama.cpp's `-ngl N` (`--n-gpu-layers N`) as llama.cpp applies it (src/llama-model.cpp,
/// load_tensors; sched/llamarules.h): the model's n_layer + 1 slots are its layers and then the output
/// head (output norm and output matrix); the last N slots go to the GPU (i_gpu_start = max(n_layer + 1 -
/// N, 0)), so the output head goes first; the token embedding stays on the CPU; each layer's KV cache
/// lives with its layer. N = 0 .. n_layer + 1, the largest that fits (the users' rule) or the fastest
/// that fits (mode=best-n). Tensors are found by name (llamarules.h), operators follow their weights.
/// The scheduler keeps the name "offload" (`--algo offload`); `best` seeds its portfolio with the
/// fastest N; `explainOffload` says how another plan differs from the rule's.

#include <string>
#include <vector>

#include "sched/llamarules.h"
#include "sched/scheduler.h"

namespace partex {

/// Per task: the layer index L of a name starting "layers.<L>." (after an optional "model." or "/"
/// prefix of exporters), -1 for operators outside the layers (embedding, final norm, output head).
std::vector<int> taskLayers(const CostTable& t);

/// True when some operator's name carries a layer ("layers.<L>.").
bool hasLayerNames(const CostTable& t);

/// One split evaluated: -ngl k (k of the n_layer + 1 slots on the accelerator).
struct OffloadTrial {
  int k = 0;  ///< N of -ngl N.
  bool fits = false;      ///< Within every device's capacity (checkCapacity on its simulation).
  double makespanUs = 0;  ///< When it simulates.
  std::string why;        ///< The capacity error when it does not fit.
};

/// The -ngl split chosen for a table.
struct OffloadSplit {
  DeviceId accel = -1;               ///< The device the last N slots go to (the GPU).
  DeviceId host = -1;                ///< Where everything else goes.
  int layers = 0;                    ///< Layers in the model (n_layer; slots: n_layer + 1).
  int k = 0;                         ///< The chosen N of -ngl N.
  int largestK = -1;                 ///< The largest N that fits (the users' rule).
  double makespanUs = 0;             ///< The chosen split's simulated makespan.
  std::vector<OffloadTrial> trials;  ///< Every N evaluated, by increasing N.
  Plan plan;                         ///< The chosen split's plan.
  std::string split;                 ///< "-ngl 27 of 33 slots on gpu".
  std::string args;                  ///< The llama.cpp arguments: "-ngl 27".
  std::string note;  ///< How N was chosen: "-ngl 27 is the largest that fits (-ngl 28: device 'gpu' needs ...)".
};

/// The plan of -ngl N on `accel` (planFromTensors over nglPlacement): pins kept, operators a device
/// cannot run go to the host or their first allowed device; per device in topological order.
Plan nglPlan(const CostTable& t, const Constraints& c, const LlamaTensors& m, int ngl, DeviceId accel);

/// Chooses N: `bestK` false: the largest N whose plan fits (llama.cpp's users' rule, tried from all
/// n_layer + 1 slots down); true: the fastest fitting N of all (every N simulated). `accel`: -1 picks
/// the first device of kind "gpu", else the first device that is not the host. Errors (one line): no
/// layers found, a single device, no N that fits, cancelled; at `deadline` it returns the best so far.
Result<OffloadSplit> chooseOffloadSplit(const CostTable& t, const Constraints& c, const SimOptions& sim, bool bestK,
                                        DeviceId accel, const Deadline& deadline, const std::atomic<bool>* cancel);

/// Why `other` (e.g. best's plan) is faster or slower than the -ngl split `rule` (`split`: its
/// OffloadSplit::split, "-ngl 27 of 33 slots on gpu"): lines of text
/// saying by how much, the weight bytes per device under each, the transfers (count, bytes, time on
/// the links) and each device's busy time, then which operators `other` places differently, grouped
/// by what they are (output head, embedding, attention over the KV cache, attention projections, MLP,
/// norms) with the layers they belong to. Both timelines are the simulator's for their plans.
std::vector<std::string> explainOffload(const CostTable& t, const std::string& split, const Plan& rule,
                                        const Timeline& ruleTl, const std::string& otherName, const Plan& other,
                                        const Timeline& otherTl);

}  // namespace partex
