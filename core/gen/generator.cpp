#include "gen/generator.h"

#include "gen/gen_builder.h"
#include "ir/quant.h"
#include "support/files.h"

namespace partex {

namespace {

struct Kind {
  const char* name;
  void (*build)(gen::Builder&);
  bool cnn, transformer;
};

constexpr Kind kKinds[] = {
    {"resnet18", gen::buildResNet18, true, false},   {"mobilenetv2", gen::buildMobileNetV2, true, false},
    {"inception", gen::buildInception, true, false}, {"bert", gen::buildBert, false, true},
    {"gpt2", gen::buildGpt2, false, true},           {"random", gen::buildRandomDag, false, false},
    {"widedeep", gen::buildWideDeep, false, false},  {"multitower", gen::buildMultiTower, false, false},
    {"llama", gen::buildLlama, false, true},         {"moe", gen::buildLlama, false, true},
};

const Kind* findKind(const std::string& name) {
  for (const auto& k : kKinds)
    if (name == k.name) return &k;
  return nullptr;
}

/// Checks `value` lies in [lo, hi]; returns an error message or "".
std::string range(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return {};
  return std::string(field) + " " + std::to_string(value) + " is out of range [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]";
}

std::string validate(const GenSpec& s, const Kind& k) {
  std::string e = range("batch", s.batch, 1, 65536);
  if (!e.empty()) return e;
  if (k.cnn) {
    if (!(e = range("imageSize", s.imageSize, 1, 8192)).empty()) return e;
    if (!(e = range("numClasses", s.numClasses, 1, 1000000)).empty()) return e;
  }
  if (k.transformer) {
    if (!(e = range("layers", s.layers, 1, 1000)).empty()) return e;
    if (!(e = range("seqLen", s.seqLen, 1, 8192)).empty()) return e;
    if (!(e = range("hidden", s.hidden, 1, 65536)).empty()) return e;
    if (!(e = range("heads", s.heads, 1, s.hidden)).empty()) return e;
    if (!(e = range("vocab", s.vocab, 1, 10000000)).empty()) return e;
    if (s.headDim == 0 && s.hidden % s.heads != 0)
      return "hidden " + std::to_string(s.hidden) + " is not divisible by heads " + std::to_string(s.heads);
    // Placeholder weights of the decoders may be larger (a GGUF's embedding of 256k tokens): no data.
    const bool decoder = std::string(k.name) == "llama" || std::string(k.name) == "moe";
    if ((s.weights || !decoder) && s.vocab * s.hidden > 2147483647)
      return "vocab x hidden (" + std::to_string(s.vocab * s.hidden) + ") exceeds 2^31 elements in one weight";
  }
  const bool moe = std::string(k.name) == "moe";
  const bool llama = std::string(k.name) == "llama" || moe;
  if (!llama && s.phase != "prefill") return "phase applies to llama only";
  if (!llama && s.dtype != "float32") return "dtype applies to llama only";
  if (!llama && (s.kvHeads != 0 || s.intermediate != 0)) return "kv-heads and intermediate apply to llama only";
  if (!llama && (s.quant != "none" || !s.tensorQuant.empty())) return "quant applies to llama and moe only";
  if (!llama && (s.experts != 0 || s.headDim != 0 || s.slidingWindow != 0))
    return "experts, head-dim and sliding-window apply to llama and moe only";
  if (llama) {
    QuantType q;
    if (!quantFromName(s.quant, q)) return "quant '" + s.quant + "' is not a ggml weight type (f16, q8_0, q4_k, mxfp4, ...)";
    if (!(e = range("headDim", s.headDim, 0, 65536)).empty()) return e;
    if (!(e = range("experts", s.experts, 0, 65536)).empty()) return e;
    if (s.experts > 0) {
      if (!(e = range("expertsUsed", s.expertsUsed, 1, s.experts)).empty()) return e;
      if (!(e = range("expertFfn", s.expertFfn, 0, 1048576)).empty()) return e;
    }
    if (!(e = range("sharedFfn", s.sharedFfn, 0, 1048576)).empty()) return e;
    if (!(e = range("slidingWindow", s.slidingWindow, 0, 1 << 30)).empty()) return e;
    if (!(e = range("slidingPeriod", s.slidingPeriod, 1, 1000)).empty()) return e;
    if (s.phase != "prefill" && s.phase != "decode") return "phase '" + s.phase + "' is not prefill or decode";
    if (s.dtype != "float32" && s.dtype != "float16") return "dtype '" + s.dtype + "' is not float32 or float16";
    if (!(e = range("kvHeads", s.kvHeads, 0, s.heads)).empty()) return e;
    if (s.kvHeads > 0 && s.heads % s.kvHeads != 0)
      return "heads " + std::to_string(s.heads) + " is not divisible by kv-heads " + std::to_string(s.kvHeads);
    const int64_t hd = s.headDim > 0 ? s.headDim : s.hidden / s.heads;
    if (hd % 2 != 0) return "head size " + std::to_string(hd) + " is odd: rotary embedding needs it even";
    if (!(e = range("intermediate", s.intermediate, 0, 1048576)).empty()) return e;
    const int64_t ffn = s.intermediate > 0 ? s.intermediate : llamaIntermediate(s.hidden);
    if (s.weights && ffn * s.hidden > 2147483647)
      return "intermediate x hidden (" + std::to_string(ffn * s.hidden) + ") exceeds 2^31 elements in one weight";
  }
  if (std::string(k.name) == "widedeep" || std::string(k.name) == "multitower") {
    if (!(e = range("layers", s.layers, 1, 1000)).empty()) return e;
    if (!(e = range("hidden", s.hidden, 1, 65536)).empty()) return e;
    if (!(e = range("width", s.width, 1, 1000)).empty()) return e;
    if (!(e = range("vocab", s.vocab, 1, 10000000)).empty()) return e;
  }
  if (std::string(k.name) == "random") {
    if (!(e = range("nodes", s.nodes, 1, 10000000)).empty()) return e;
    if (!(e = range("width", s.width, 1, 1000000)).empty()) return e;
  }
  return {};
}

std::string kindList() {
  std::string s;
  for (const auto& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

}  // namespace

GenSpec llama2_7b(const std::string& phase, int64_t tokens) {
  GenSpec s;
  s.kind = "llama";
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.vocab = 32000;
  s.seqLen = tokens;
  s.phase = phase;
  s.dtype = "float16";
  return s;
}

namespace {

/// Published shapes (config.json of each model; docs/design-decisions.md cites them).
struct DecoderPreset {
  const char* name;
  int64_t layers, hidden, heads, kvHeads, headDim, intermediate, vocab;
  int64_t experts, used, expertFfn, sharedFfn, slidingWindow, slidingPeriod;
  bool postAttentionNormName;
};

// clang-format off
constexpr DecoderPreset kPresets[] = {
    // name            layers hidden heads kv  headDim ffn    vocab   E    k  expFfn shared window period postAttnName
    {"llama2-7b",      32,    4096,  32,   32, 0,      11008, 32000,  0,   0, 0,     0,     0,     1,     false},
    {"mixtral-8x7b",   32,    4096,  32,   8,  0,      14336, 32000,  8,   2, 14336, 0,     0,     1,     false},
    {"qwen3-30b-a3b",  48,    2048,  32,   4,  128,    6144,  151936, 128, 8, 768,   0,     0,     1,     false},
    {"gpt-oss-20b",    24,    2880,  64,   8,  64,     2880,  201088, 32,  4, 2880,  0,     128,   2,     true},
    {"gpt-oss-120b",   36,    2880,  64,   8,  64,     2880,  201088, 128, 4, 2880,  0,     128,   2,     true},
};
// clang-format on

}  // namespace

std::vector<std::string> decoderPresets() {
  std::vector<std::string> v;
  for (const auto& p : kPresets) v.emplace_back(p.name);
  return v;
}

Status applyDecoderPreset(const std::string& name, GenSpec& s) {
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    s.kind = p.experts > 0 ? "moe" : "llama";
    s.layers = p.layers;
    s.hidden = p.hidden;
    s.heads = p.heads;
    s.kvHeads = p.kvHeads;
    s.headDim = p.headDim;
    s.intermediate = p.intermediate;
    s.vocab = p.vocab;
    s.experts = p.experts;
    s.expertsUsed = p.used;
    s.expertFfn = p.expertFfn;
    s.sharedFfn = p.sharedFfn;
    s.slidingWindow = p.slidingWindow;
    s.slidingPeriod = p.slidingPeriod;
    s.postAttentionNormName = p.postAttentionNormName;
    return Status::ok();
  }
  std::string names;
  for (const auto& p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return makeError("unknown preset '", name, "' (presets: ", names, ")");
}

int64_t llamaIntermediate(int64_t hidden) {
  const int64_t raw = 2 * (4 * hidden) / 3;
  return 256 * ((raw + 255) / 256);
}

std::vector<std::string> generatorKinds() {
  std::vector<std::string> v;
  for (const auto& k : kKinds) v.emplace_back(k.name);
  return v;
}

Result<std::string> generateModel(const GenSpec& requested) {
  GenSpec spec = requested;
  if (spec.vocab == 0)  // the kind's own vocabulary (rows of each embedding table for the recommenders)
    spec.vocab = spec.kind == "gpt2"       ? 50257
                 : spec.kind == "widedeep" ? 100000
                 : spec.kind == "llama" || spec.kind == "moe" ? 32000
                                           : 30522;
  if (spec.kind == "moe" && spec.experts == 0) {  // the kind's own routing: 8 experts, top-2 (Mixtral's)
    spec.experts = 8;
    if (spec.expertsUsed == 0) spec.expertsUsed = 2;
  }
  const Kind* kind = findKind(spec.kind);
  if (!kind) return makeError("generate: unknown kind '", spec.kind, "' (kinds: ", kindList(), ")");
  if (std::string e = validate(spec, *kind); !e.empty()) return makeError("generate ", spec.kind, ": ", e);
  try {
    gen::Builder b(spec, spec.kind, 13);
    kind->build(b);
    // Strict shape inference proves the shapes consistent; above this size (large random DAGs,
    // consistent by construction and tested smaller) it would dominate the time, so only the
    // checker runs.
    constexpr int kMaxNodesForInference = 50000;
    return b.finish(b.model().graph().node_size() <= kMaxNodesForInference);
  } catch (const gen::GenError& e) {
    return makeError("generate ", spec.kind, ": ", e.what());
  } catch (const std::bad_alloc&) {
    return makeError("generate ", spec.kind, ": out of memory");
  } catch (const std::exception& e) {
    return makeError("generate ", spec.kind, ": ", e.what());
  }
}

Status generateModelFile(const GenSpec& spec, const std::string& path) {
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  return writeFileAtomic(path, *bytes);
}

}  // namespace partex
