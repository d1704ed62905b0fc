// A GGUF file's decoder as a generator spec: llama.cpp's hyperparameter keys (src/llama-arch.cpp,
// LLM_KV_*: "<arch>.block_count", "<arch>.attention.head_count", ...) and its tensor names
// (LLM_TENSOR_*: "blk.%d.attn_q", "blk.%d.ffn_gate_exps", ...), read for the architectures below.
#include <algorithm>

#include "gguf/gguf.h"
#include "support/strings.h"

namespace partex {

namespace {

struct Arch {
  const char* name;
  bool moe;           ///< Routed experts expected (qwen3moe, gpt-oss; llama when expert_count > 0).
  int64_t slidingPeriod;  ///< gpt-oss: every second layer attends everything (llama.cpp: swa pattern 2).
  bool postAttentionNormName;
};

constexpr Arch kArchs[] = {
    {"llama", false, 1, false},   {"qwen2", false, 1, false},  {"qwen3", false, 1, false},
    {"qwen3moe", true, 1, false}, {"gpt-oss", true, 2, true},
};

}  // namespace

std::vector<std::string> ggufArchitectures() {
  std::vector<std::string> v;
  for (const auto& a : kArchs) v.emplace_back(a.name);
  return v;
}

Result<GenSpec> ggufToSpec(const GgufFile& f, const GgufOptions& opts) {
  const std::string arch = f.architecture();
  const std::string& path = f.path;
  if (arch.empty()) return makeError(path, ": no general.architecture in the metadata");
  const Arch* a = nullptr;
  for (const auto& k : kArchs)
    if (arch == k.name) a = &k;
  if (!a) {
    std::string names;
    for (const auto& k : kArchs) names += (names.empty() ? "" : ", ") + std::string(k.name);
    return makeError(path, ": architecture '", oneLine(arch), "' is not supported (", names, ")");
  }
  auto integer = [&](const std::string& key, int64_t def, bool required) -> Result<int64_t> {
    const GgufValue* v = f.find(arch + "." + key);
    if (!v) {
      if (required) return makeError(path, ": metadata ", arch, ".", key, " is missing");
      return def;
    }
    int64_t x = 0;
    if (!v->asInt(x) || x < 0) return makeError(path, ": metadata ", arch, ".", key, " is not a non-negative integer");
    return x;
  };
  GenSpec s;
  s.phase = opts.phase;
  s.seqLen = opts.seq;
  s.batch = opts.batch;
  s.dtype = "float16";  // activations and the KV cache: llama.cpp's default cache type is f16
  auto layers = integer("block_count", 0, true);
  if (!layers) return Error{layers.message()};
  auto hidden = integer("embedding_length", 0, true);
  if (!hidden) return Error{hidden.message()};
  auto heads = integer("attention.head_count", 0, true);
  if (!heads) return Error{heads.message()};
  auto kvHeads = integer("attention.head_count_kv", *heads, false);
  if (!kvHeads) return Error{kvHeads.message()};
  auto keyLength = integer("attention.key_length", 0, false);
  if (!keyLength) return Error{keyLength.message()};
  auto ffn = integer("feed_forward_length", 0, false);
  if (!ffn) return Error{ffn.message()};
  auto experts = integer("expert_count", 0, false);
  if (!experts) return Error{experts.message()};
  auto used = integer("expert_used_count", 0, false);
  if (!used) return Error{used.message()};
  auto expertFfn = integer("expert_feed_forward_length", 0, false);
  if (!expertFfn) return Error{expertFfn.message()};
  auto sharedFfn = integer("expert_shared_feed_forward_length", 0, false);
  if (!sharedFfn) return Error{sharedFfn.message()};
  auto window = integer("attention.sliding_window", 0, false);
  if (!window) return Error{window.message()};
  if (*layers < 1 || *hidden < 1 || *heads < 1) return makeError(path, ": block_count, embedding_length and head_count must be positive");
  s.kind = "llama";
  s.layers = *layers;
  s.hidden = *hidden;
  s.heads = *heads;
  s.kvHeads = *kvHeads == *heads ? 0 : *kvHeads;
  if (*keyLength > 0 && *keyLength * *heads != *hidden) s.headDim = *keyLength;
  if (*hidden % *heads != 0 && s.headDim == 0) s.headDim = *keyLength > 0 ? *keyLength : 0;

  // Vocabulary: the tokenizer's token list, else the embedding's rows.
  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (!embd) return makeError(path, ": no tensor token_embd.weight");
  if (const GgufValue* toks = f.find("tokenizer.ggml.tokens"); toks && toks->type == GgufType::Array)
    s.vocab = static_cast<int64_t>(toks->arrayCount);
  if (embd->ne.size() == 2) s.vocab = embd->ne[1];  // the rows actually stored win (padding)
  if (s.vocab <= 0) return makeError(path, ": cannot tell the vocabulary size");
  s.tiedEmbeddings = f.tensor("output.weight") == nullptr;
  s.postAttentionNormName = a->postAttentionNormName;

  const bool hasExperts = *experts > 0 || f.tensor("blk.0.ffn_gate_exps.weight") != nullptr;
  if (a->moe && !hasExperts) return makeError(path, ": architecture ", arch, " without expert_count");
  if (hasExperts) {
    if (f.tensor("blk.0.ffn_gate_exps.weight") == nullptr)
      return makeError(path, ": experts without merged blk.N.ffn_gate_exps tensors (a GGUF from before llama.cpp "
                             "merged them per layer) are not supported");
    const GgufTensor* g = f.tensor("blk.0.ffn_gate_exps.weight");
    if (g->ne.size() != 3) return makeError(path, ": blk.0.ffn_gate_exps.weight is not 3-D");
    s.kind = "moe";
    s.experts = *experts > 0 ? *experts : g->ne[2];
    s.expertsUsed = *used;
    if (s.expertsUsed < 1 || s.expertsUsed > s.experts)
      return makeError(path, ": expert_used_count ", std::to_string(*used), " is not in [1, ", std::to_string(s.experts), "]");
    s.expertFfn = *expertFfn > 0 ? *expertFfn : g->ne[1];
    if (const GgufTensor* sh = f.tensor("blk.0.ffn_gate_shexp.weight"); sh && sh->ne.size() == 2)
      s.sharedFfn = *sharedFfn > 0 ? *sharedFfn : sh->ne[1];
    s.intermediate = *ffn > 0 ? *ffn : s.expertFfn;
  } else {
    if (*ffn <= 0) return makeError(path, ": metadata ", arch, ".feed_forward_length is missing");
    s.intermediate = *ffn;
  }
  if (*window > 0) {
    s.slidingWindow = *window;
    s.slidingPeriod = a->slidingPeriod;
  }
  for (const auto& t : f.tensors) s.tensorQuant[t.name] = quantName(t.quant);
  return s;
}

}  // namespace partex
