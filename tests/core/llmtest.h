#pragma once
// Helpers of the tests of the language-model placement rules (tst_offload, tst_llamarules, tst_llmjob).

#include <QtTest>

#include <set>

#include "ir/graph.h"
#include "platform/platform.h"

namespace partex::test {

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
