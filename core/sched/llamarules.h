#pragma once
/// \file llama.cpp's placement rules, as llama.cpp applies them, over a language model's weight
/// tensors (docs/design-decisions.md says which llama.cpp source and commit each one follows):
///  - `-ngl N`: the model's n_layer + 1 slots (its layers, then the output head as the last slot); the
///    last N slots on the GPU (i_gpu_start = max(n_layer + 1 - N, 0)), the token embedding always on
///    the CPU, each layer's KV cache with its layer;
///  - `-ot REGEX=BUFTYPE,...` (`--override-tensor`): per tensor, the first pattern that matches its
///    name (std::regex_search, unanchored) decides its device, the others keep -ngl's;
///  - `--n-cpu-moe N` / `--cpu-moe` / `--n-cpu-ffn N`: the overrides llama.cpp generates for them;
///  - `--fit` (memory only) and the prefill op offload (matrix products of host weights run on the GPU
///    for a batch of 32 tokens or more, their weights copied over the link each micro-batch).
/// Tensors are found by name ("blk.<L>.ffn_up_exps.weight", as GGUF names them; the generator's
/// and Hugging Face's names are mapped to those), operators by the tensors they read: an operator goes
/// where its weight lives, the others as ggml's scheduler expands them (ggml_backend_sched_split_graph,
/// pass 2: GPU assignments down then up the graph, then the rest).

#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace partex {

/// The layer of an operator's name: "layers.<L>." at the start or after '.' or '/' (exporters prefix
/// "model." or "/model/"), -1 otherwise.
int layerOfName(const std::string& name);

/// True for the schedulers that apply llama.cpp's rules (offload = -ngl, fit, n-cpu-moe, n-cpu-ffn,
/// ot): they refuse models without layer names and are left out where those are the norm.
bool isLlamaRule(const std::string& scheduler);

/// The model's tensors as the rules see them, per weight of the CostTable (CostTable::weightNames).
struct LlamaTensors {
  static constexpr int kConstant = -2;  ///< A constant no rule places (rotary tables, scalars): it follows its readers.
  static constexpr int kInput = -1;     ///< The token embedding's slot (always on the CPU under -ngl).
  std::vector<std::string> name;  ///< The name -ot matches: the GGUF name where one is known, else the weight's own.
  std::vector<int> slot;          ///< kConstant, kInput, a layer 0..layers-1, or `layers` (the output head's slot).
  std::vector<char> cache;        ///< 1 for a layer's KV cache (past_key.<L> / past_value.<L>): placed with its layer.
  int layers = 0;                 ///< n_layer.
  bool experts = false;           ///< Some tensor is a routed expert ("blk.<L>.ffn_*_exps").
  bool denseFfn = false;          ///< Some tensor is a dense FFN weight ("blk.<L>.ffn_(up|down|gate).").
  /// True where tensor w is one the rules place (not a constant).
  bool placed(size_t w) const { return slot[w] != kConstant; }
};

/// The GGUF name of a weight: GGUF names as they are; the generator's ("layers.3.mlp.up_proj.weight",
/// "embed_tokens.weight", "lm_head.weight", "norm.weight") and Hugging Face's ("model.layers.3.
/// self_attn.q_proj.weight", ...) mapped to theirs ("blk.3.ffn_up.weight", "token_embd.weight",
/// "output.weight", "output_norm.weight"); "" when the name is none of these.
std::string ggufTensorName(const std::string& weightName);

/// The tensors of a table. A weight with no known name takes the slot of its readers (operators
/// named "layers.<L>."; "embed"/"lm_head" outside them); one read from several layers is a constant.
LlamaTensors llamaTensors(const CostTable& t);

/// Per weight of the table: the device it lives on, -1 for constants (they follow their readers).
using TensorPlacement = std::vector<DeviceId>;

/// The GPU the rules offload to: the first device of kind "gpu", else the first that is not the host;
/// -1 when the platform has one device.
DeviceId defaultAccelerator(const CostTable& t);

/// -ngl N on one GPU: slot s on `accel` when s >= max(layers + 1 - N, 0), the token embedding on the host.
TensorPlacement nglPlacement(const LlamaTensors& m, int ngl, DeviceId accel, DeviceId host);

/// One -ot entry: a pattern (ECMAScript regex, searched in the tensor name) and the device it sends to.
struct TensorOverride {
  std::string pattern;
  DeviceId device = -1;
};

/// "REGEX=CPU,REGEX2=CUDA0": entries split at ',', each at its first '='. Buffer types: "CPU" is the
/// host; "CUDA<i>" (also Vulkan<i>, ROCm<i>, SYCL<i>, Metal) the i-th accelerator (defaultAccelerator
/// first); a device id of the platform is that device. Errors (one line): an entry without '=', an
/// unknown buffer type, a pattern that is no regex.
Result<std::vector<TensorOverride>> parseOverrides(const CostTable& t, const std::string& spec);

/// Applies overrides in llama.cpp's order (for each tensor the first matching entry wins; cache and
/// constants are never matched). With `requireMatch`, an entry that matches no tensor is an error
/// naming it ("-ot: 'blk\.99\.' matches no tensor of 'model'").
Status applyOverrides(const CostTable& t, const LlamaTensors& m, const std::vector<TensorOverride>& overrides,
                      TensorPlacement& placement, bool requireMatch);

/// The overrides llama.cpp's common/arg.cpp generates: --n-cpu-moe N (the routed experts of layers
/// 0..N-1 on the CPU, "blk\.<i>\.ffn_(up|down|gate|gate_up)_(ch|)exps"), --cpu-moe (one pattern for all
/// layers) and --n-cpu-ffn N (the dense FFN of layers 0..N-1, "blk\.<i>\.ffn_(up|down|gate)\.").
std::vector<TensorOverride> nCpuMoeOverrides(int n, DeviceId host);
std::vector<TensorOverride> cpuMoeOverrides(DeviceId host);
std::vector<TensorOverride> nCpuFfnOverrides(int n, DeviceId host);

/// The plan of a tensor placement: an operator that reads placed tensors goes where the largest of
/// them lives; the others as ggml's scheduler expands assignments (GPU down, GPU up, then any device
/// down and up, in topological order); pins and the constraints' allowed devices are kept. Per device
/// in topological order.
Plan planFromTensors(const CostTable& t, const Constraints& c, const LlamaTensors& m, const TensorPlacement& p);

/// The tensor placement a plan implies: each placed tensor where most of its readers run (ties: its
/// first reader's device); -1 for constants and tensors nothing reads.
TensorPlacement tensorsOfPlan(const CostTable& t, const LlamaTensors& m, const Plan& plan);

/// The llama.cpp arguments that realise a tensor placement on one GPU: the -ngl N whose default
/// differs from it in the fewest tensors (a layer's KV cache cannot be overridden: N first matches the
/// caches), and -ot entries with anchored regexes (one per device: "^blk\.(0|1|2)\.(ffn_down_exps|
/// ffn_gate_exps|ffn_up_exps)\.weight$=CPU") for the rest.
struct LlamaArgs {
  int ngl = 0;
  std::vector<TensorOverride> overrides;
  std::string text;                 ///< `-ngl 49 -ot "^blk\.(0|1)\.(ffn_up_exps)\.weight$=CPU"`.
  std::vector<std::string> caches;  ///< KV cache tensors no -ngl places where the placement has them.
};
LlamaArgs llamaArgsFor(const CostTable& t, const LlamaTensors& m, const TensorPlacement& p, DeviceId accel);

/// The buffer-type name llama.cpp gives device d: "CPU" for the host, "CUDA<i>" for the i-th accelerator.
std::string llamaDeviceName(const CostTable& t, DeviceId d);

/// ggml's prefill op offload (ggml-cuda's offload_op: a batch of at least `minBatch` tokens): a matrix
/// product (MatMul, Gemm, and the experts' ExpertMatMul, ggml's MUL_MAT_ID) whose weights live on the host runs on the GPU, its weights copied over the
/// host -> GPU link once per micro-batch. The transform sets, on the host, the cost of every such
/// operator to w(v, accel) + ceil(tokens / ubatch) x (latency + weight bytes / link bandwidth); a
/// plan that places it on the host then pays that. Nothing changes below `minBatch` tokens (decode)
/// or with `on` false (--no-op-offload).
struct OpOffloadOptions {
  bool on = true;
  int64_t tokens = 0;   ///< The phase's batch: the prompt in prefill, 1 in decode (tokensOf).
  int64_t ubatch = 512; ///< -ub, llama.cpp's default micro-batch.
  int64_t minBatch = 32;
};
CostTable withOpOffload(const CostTable& t, const LlamaTensors& m, DeviceId accel, const OpOffloadOptions& o);

/// Tokens of the table's phase: the token ids the embedding reads (int64 ids: its model-input bytes / 8);
/// 1 when it reads a KV cache (decode) or no embedding is found.
int64_t tokensOf(const CostTable& t, const LlamaTensors& m);

}  // namespace partex
