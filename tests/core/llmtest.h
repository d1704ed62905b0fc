#pragma once
// Helpers of the tests of the language-model placement rules (tst_offload, tst_llamarules, tst_llmjob).

#include <QtTest>

#include <set>

#include "gen/generator.h"
#include "ir/graph.h"
#include "onnx/importer.h"
#include "platform/platform.h"

namespace partex::test {

/// The tiny generated Llama of tst_offload and tst_llamarules: 4 layers, hidden 64 (4 heads and 4 kv heads
/// of 16), intermediate 96, vocabulary 100, float32.
constexpr int kLayers = 4;
constexpr int64_t kHidden = 64, kInter = 96, kVocab = 100;
/// One layer's own weights by hand: q, k, v, o projections hidden x hidden, gate and up hidden x
/// intermediate, down intermediate x hidden, two RMSNorm scales of hidden; float32.
constexpr int64_t kLayerBytes = 4 * (4 * kHidden * kHidden + 3 * kHidden * kInter + 2 * kHidden);
/// The output slot's weights: the final norm's scale and the output matrix 64 x 100, float32.
constexpr int64_t kOutputBytes = 4 * (kHidden + kHidden * kVocab);

inline GenSpec tinyLlamaSpec(const std::string& phase, int64_t seq = 8) {
  GenSpec s;
  s.kind = "llama";
  s.layers = kLayers;
  s.hidden = kHidden;
  s.heads = 4;
  s.kvHeads = 4;
  s.intermediate = kInter;
  s.vocab = kVocab;
  s.seqLen = seq;
  s.phase = phase;
  s.dtype = "float32";
  return s;
}

/// The tiny Llama in `phase` ("prefill" or "decode"), generated and imported.
inline Graph tinyLlama(const std::string& phase, int64_t seq = 8) {
  auto bytes = generateModel(tinyLlamaSpec(phase, seq));
  if (!bytes) qFatal("generate: %s", bytes.message().c_str());
  auto g = importOnnxBytes(*bytes, "llama-" + phase + ".onnx");
  if (!g) qFatal("import: %s", g.message().c_str());
  return std::move(g).value();
}

/// Bytes of the distinct weights read by operators of the layers ("layers.<L>." operators) that are not
/// a layer's own (the rotary tables and scalar constants every layer shares): counted once on every
/// device that runs a layer.
inline int64_t sharedLayerConstants(const Graph& g) {
  std::set<ValueId> seen;
  int64_t bytes = 0;
  for (const Node& n : g.nodes) {
    if (n.name.rfind("layers.", 0) != 0) continue;
    for (ValueId id : n.inputs) {
      if (id == kNone || !g.values[static_cast<size_t>(id)].isWeight) continue;
      const std::string& name = g.values[static_cast<size_t>(id)].name;
      if (name.rfind("layers.", 0) == 0 || name.rfind("blk.", 0) == 0) continue;  // a layer's own (either naming)
      if (seen.insert(id).second) bytes += g.values[static_cast<size_t>(id)].bytes();
    }
  }
  return bytes;
}

/// A MoE decoder by hand, GGUF names: per layer L, x -> attn_q (H x H) -> ffn_gate_inp (H x H) ->
/// ffn_up_exps (H x 4H) -> ffn_down_exps (4H x H); token_embd (Gather) before, output (H x V) after.
constexpr int64_t kMoeH = 64, kMoeV = 100, kMoeT = 8;
constexpr int64_t kDense = 4 * (kMoeH * kMoeH + kMoeH * kMoeH);          // attn_q + gate_inp per layer
constexpr int64_t kExperts = 4 * (kMoeH * 4 * kMoeH + 4 * kMoeH * kMoeH);  // up_exps + down_exps per layer
constexpr int64_t kMoeOutput = 4 * kMoeH * kMoeV;
constexpr int64_t kGateInp = 4 * kMoeH * kMoeH;
constexpr int64_t kUpExps = 4 * kMoeH * 4 * kMoeH;

inline Graph moeGraph() {
  Graph g;
  g.name = "tiny-moe";
  auto value = [&](const std::string& name, DType dt, std::vector<int64_t> shape, bool weight) {
    Value v;
    v.name = name;
    v.dtype = dt;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    v.isWeight = weight;
    return g.addValue(v);
  };
  auto node = [&](const std::string& name, const std::string& type, std::vector<ValueId> in, ValueId out) {
    Node n;
    n.name = name;
    n.opType = type;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.addNode(n);
  };
  const ValueId ids = value("input_ids", DType::Int64, {1, kMoeT}, false);
  g.values[static_cast<size_t>(ids)].isGraphInput = true;
  g.inputs.push_back(ids);
  ValueId x = value("embd", DType::Float32, {1, kMoeT, kMoeH}, false);
  node("embed_tokens", "Gather", {value("token_embd.weight", DType::Float32, {kMoeV, kMoeH}, true), ids}, x);
  auto matmul = [&](const std::string& op, const std::string& w, int64_t in, int64_t out, ValueId src) {
    const ValueId y = value(op + ".out", DType::Float32, {1, kMoeT, out}, false);
    node(op, "MatMul", {src, value(w, DType::Float32, {in, out}, true)}, y);
    return y;
  };
  for (int L = 0; L < 4; ++L) {
    const std::string b = "blk." + std::to_string(L) + ".", o = "layers." + std::to_string(L) + ".";
    x = matmul(o + "attn.q", b + "attn_q.weight", kMoeH, kMoeH, x);
    x = matmul(o + "moe.router", b + "ffn_gate_inp.weight", kMoeH, kMoeH, x);
    x = matmul(o + "moe.up", b + "ffn_up_exps.weight", kMoeH, 4 * kMoeH, x);
    x = matmul(o + "moe.down", b + "ffn_down_exps.weight", 4 * kMoeH, kMoeH, x);
  }
  const ValueId logits = matmul("output", "output.weight", kMoeH, kMoeV, x);
  g.values[static_cast<size_t>(logits)].isGraphOutput = true;
  g.outputs.push_back(logits);
  g.rebuildIndex();
  return g;
}

/// desktop-rtx4070 with the GPU's memory set to `gpuBytes`.
inline Platform withGpuBytes(int64_t gpuBytes) {
  auto p = loadPreset("desktop-rtx4070");
  if (!p) qFatal("preset: %s", p.message().c_str());
  for (auto& d : p->devices)
    if (d.id == "gpu") d.memCapacityBytes = gpuBytes;
  return *p;
}

}  // namespace partex::test
