#pragma once
/// \file Models made in code: writes ONNX protobuf for standard architectures and random DAGs,
/// used as the bundled example, in tests and in benchmarks.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/result.h"

namespace partex {

/// What to generate. Kinds: "resnet18", "mobilenetv2", "inception", "bert", "gpt2", "random", and the
/// recommenders "widedeep" (`width` sparse features with embedding tables of `vocab` rows, a deep MLP
/// of `layers` halving layers from `hidden`, a wide linear part) and "multitower" (`width` towers of
/// `layers` layers over a shared bottom of `hidden` features); the decoders "llama" and "moe" (Llama's
/// with routed experts: gen_llama.cpp).
struct GenSpec {
  std::string kind;
  /// Fill weights with seeded random data. Without it, weights are declared as initializers with
  /// dims and no data would be invalid ONNX, so they are stored as ConstantOfShape nodes (like the
  /// `light_*` models), which the importer folds into weights: files stay small.
  bool weights = false;
  uint64_t seed = 1;
  int64_t batch = 1;
  int64_t imageSize = 224;  ///< CNNs: input height and width.
  int64_t numClasses = 1000;
  int64_t layers = 12;      ///< Transformers: number of blocks.
  int64_t seqLen = 128;     ///< Transformers: sequence length; Llama: prompt or cache length (context).
  int64_t hidden = 768;     ///< Transformers: hidden size.
  int64_t heads = 12;       ///< Transformers: attention heads.
  int64_t vocab = 0;        ///< Transformers: vocabulary; 0 = the kind's own (BERT 30522, GPT-2 50257, Llama 32000).
  int64_t kvHeads = 0;      ///< Llama: key/value heads (grouped-query attention); 0 = heads.
  int64_t intermediate = 0; ///< Llama: gated-MLP size; 0 = Llama's rule, 256 * ceil((8 * hidden / 3) / 256).
  /// Llama: "prefill" (`seqLen` prompt tokens, empty cache) or "decode" (one token, a `seqLen`-token cache).
  std::string phase = "prefill";
  std::string dtype = "float32";  ///< Llama: weight and activation type, "float32" or "float16".
  /// Llama/moe: storage type of the matrix weights (ggml's names, ir/quant.h: "q4_k", "mxfp4", "f16", ...;
  /// "none" = the dtype's bytes). Norm weights stay in the dtype (llama.cpp keeps them F32).
  std::string quant = "none";
  /// Llama/moe: per-weight storage types that override `quant` (a GGUF file's tensor types), by name.
  std::map<std::string, std::string> tensorQuant;
  /// Llama/moe: size of one attention head; 0 = hidden / heads (Qwen3 and gpt-oss set it apart).
  int64_t headDim = 0;
  /// Mixture-of-Experts ("moe", or llama with experts > 0): routed experts per layer (0 = a dense FFN;
  /// "moe" with 0: 8 experts, top-2),
  /// experts each token uses (top-k), each expert's gated-MLP size, and one shared expert's size (0 = none).
  int64_t experts = 0;
  int64_t expertsUsed = 0;
  int64_t expertFfn = 0;
  int64_t sharedFfn = 0;
  /// Sliding-window attention: window in tokens (0 = none) on the layers L with L % slidingPeriod !=
  /// slidingPeriod - 1 (period 2: even layers slide, odd ones attend everything, as gpt-oss; period 1: all
  /// layers). In decode a sliding layer's cache holds min(seqLen, window) tokens (llama.cpp's SWA cache).
  int64_t slidingWindow = 0;
  int64_t slidingPeriod = 1;
  /// The output head reuses token_embd.weight (a file without output.weight).
  bool tiedEmbeddings = false;
  /// Names the RMSNorm before the FFN post_attention_norm (gpt-oss's GGUF name) instead of ffn_norm.
  bool postAttentionNormName = false;
  int64_t nodes = 100;      ///< Random DAG: number of operators.
  int64_t width = 8;        ///< Random DAG: typical number of parallel branches; recommenders: features or towers.
};

/// Llama's gated-MLP size for `hidden` when GenSpec::intermediate is 0: 256 * ceil((2 * 4 * hidden / 3) / 256)
/// (Meta's rule with multiple_of 256; 11008 for hidden 4096).
int64_t llamaIntermediate(int64_t hidden);

/// Llama-2-7B's shape (32 layers, hidden 4096, 32 heads, vocabulary 32000, float16) in `phase`
/// ("prefill": a `tokens`-token prompt; "decode": one token with a `tokens`-token cache): the 7B-class
/// decoder of the offload comparison (bench_sched offload, tests).
GenSpec llama2_7b(const std::string& phase, int64_t tokens = 512);

/// Published decoder shapes for `generate llama|moe --preset NAME` (sources in docs/design-decisions.md):
/// "llama2-7b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b". Sets the architecture
/// fields of `spec` (kind, layers, hidden, heads, kvHeads, headDim, intermediate, vocab, experts, ...),
/// leaving phase, seqLen, batch, dtype and quant as they are. Error for an unknown name.
Status applyDecoderPreset(const std::string& name, GenSpec& spec);
/// The preset names, for help texts.
std::vector<std::string> decoderPresets();

/// The generator kinds, for help texts.
std::vector<std::string> generatorKinds();
/// Builds the model and returns the serialized ModelProto.
Result<std::string> generateModel(const GenSpec& spec);
/// Builds the model and writes it atomically to `path`.
Status generateModelFile(const GenSpec& spec, const std::string& path);

}  // namespace partex
