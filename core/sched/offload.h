#pragma once
/// \file The rule llama.cpp's users apply to a language model too big for their GPU (`-ngl N`,
/// `--n-gpu-layers N`): the first k transformer layers on the GPU, everything else (the token
/// embedding, the layers from k on, the final norm and the output head) on the CPU, k as large as fits.
/// The layers are read from operator names, "layers.<L>." as `partex-cli generate llama` writes them
/// (and as Hugging Face exports name them). The scheduler "offload" (offload.cpp) applies it; `best`
/// seeds its portfolio with the fastest split; `explainOffload` says how another plan differs from it.

#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace partex {

/// Per task: the layer index L of a name starting "layers.<L>." (after an optional "model." or "/"
/// prefix of exporters), -1 for operators outside the layers (embedding, final norm, output head).
std::vector<int> taskLayers(const CostTable& t);

/// True when some operator's name carries a layer ("layers.<L>.").
bool hasLayerNames(const CostTable& t);

/// One split evaluated: k layers on the accelerator.
struct OffloadTrial {
  int k = 0;
  bool fits = false;      ///< Within every device's capacity (checkCapacity on its simulation).
  double makespanUs = 0;  ///< When it simulates.
  std::string why;        ///< The capacity error when it does not fit.
};

/// The first-k-layers split chosen for a table.
struct OffloadSplit {
  DeviceId accel = -1;               ///< The device the first k layers go to (the GPU).
  DeviceId host = -1;                ///< Where everything else goes.
  int layers = 0;                    ///< Layers in the model.
  int k = 0;                         ///< The chosen split.
  int largestK = -1;                 ///< The largest k that fits (the users' rule).
  double makespanUs = 0;             ///< The chosen split's simulated makespan.
  std::vector<OffloadTrial> trials;  ///< Every k evaluated, by increasing k.
  Plan plan;                         ///< The chosen split's plan.
  std::string split;                 ///< "k=26 of 32 layers on gpu".
  std::string note;  ///< How k was chosen: "k=26 is the largest that fits (k=27: device 'gpu' needs ...)".
};

/// The plan of "the first k layers on `accel`, everything else on `host`" (pins kept; an operator
/// a device cannot run or the constraints forbid goes to the other one, or to its first allowed
/// device); per device in topological order.
Plan firstKLayersPlan(const CostTable& t, const Constraints& c, const std::vector<int>& layer, int k, DeviceId accel,
                      DeviceId host);

/// Chooses k: `bestK` false: the largest k whose plan fits (llama.cpp's users' rule, tried from all
/// layers down); true: the fastest fitting k of all (every k simulated). `accel`: -1 picks the first
/// device of kind "gpu", else the first device that is not the host. Errors (one line): no layer
/// names, a single device, no k that fits, cancelled; at `deadline` it returns the best split so far.
Result<OffloadSplit> chooseOffloadSplit(const CostTable& t, const Constraints& c, const SimOptions& sim, bool bestK,
                                        DeviceId accel, const Deadline& deadline, const std::atomic<bool>* cancel);

/// Why `other` (e.g. best's plan) is faster or slower than the first-k split `rule` (`split`: its
/// OffloadSplit::split, "k=26 of 32 layers on gpu"): lines of text
/// saying by how much, the weight bytes per device under each, the transfers (count, bytes, time on
/// the links) and each device's busy time, then which operators `other` places differently, grouped
/// by what they are (output head, embedding, attention over the KV cache, attention projections, MLP,
/// norms) with the layers they belong to. Both timelines are the simulator's for their plans.
std::vector<std::string> explainOffload(const CostTable& t, const std::string& split, const Plan& rule,
                                        const Timeline& ruleTl, const std::string& otherName, const Plan& other,
                                        const Timeline& otherTl);

}  // namespace partex
