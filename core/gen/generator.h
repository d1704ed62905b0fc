#pragma once
/// \file Models made in code: writes ONNX protobuf for standard architectures and random DAGs,
/// used as the bundled example, in tests and in benchmarks.

#include <cstdint>
#include <string>
#include <vector>

#include "support/result.h"

namespace partex {

/// What to generate. Kinds: "resnet18", "mobilenetv2", "inception", "bert", "gpt2", "random", and the
/// recommenders "widedeep" (`width` sparse features with embedding tables of `vocab` rows, a deep MLP
/// of `layers` halving layers from `hidden`, a wide linear part) and "multitower" (`width` towers of
/// `layers` layers over a shared bottom of `hidden` features).
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

/// The generator kinds, for help texts.
std::vector<std::string> generatorKinds();
/// Builds the model and returns the serialized ModelProto.
Result<std::string> generateModel(const GenSpec& spec);
/// Builds the model and writes it atomically to `path`.
Status generateModelFile(const GenSpec& spec, const std::string& path);

}  // namespace partex
