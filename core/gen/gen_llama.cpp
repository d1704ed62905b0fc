// A Llama-style decoder-only language model for the generator (Llama / Llama-2 architecture, the
// way an ONNX export of it computes), in one of two phases, opset 13, every op a primitive one:
//
//   prefill: input_ids [B, N] (N = seqLen, the prompt), an empty cache: no past inputs; outputs
//            logits [B, N, vocab] and, per layer L, present_key.L / present_value.L [B, kvHeads, N, headDim].
//   decode:  input_ids [B, 1] (the token at position N) and, per layer L, past_key.L / past_value.L
//            [B, kvHeads, N, headDim] (the N-token cache); outputs logits [B, 1, vocab] and
//            present_key.L / present_value.L [B, kvHeads, N + 1, headDim].
//
// Node names (the layer structure, recoverable by "layers.<L>."):
//   embed_tokens                                  Gather of embed_tokens.weight [vocab, hidden]
//   layers.L.input_norm.{pow,mean,add_eps,sqrt,div,mul}         RMSNorm (weight layers.L.input_norm.weight)
//   layers.L.attn.{q_proj,k_proj,v_proj}           MatMul by [hidden, heads*headDim | kvHeads*headDim]
//   layers.L.attn.{reshape_q,transpose_q,...}      head split
//   layers.L.attn.rope_q.* / rope_k.*              rotary embedding: x*cos + rotate_half(x)*sin,
//                                                 rotate_half by Slice, Neg, Concat; cos/sin tables of
//                                                 this phase's positions are constants rope.cos, rope.sin
//   layers.L.attn.cache_k / cache_v                decode: Concat(past, new) = present_*; prefill: the
//                                                 rotated key / the value are present_* themselves
//   layers.L.attn.repeat_k.* / repeat_v.*         grouped-query attention only (kvHeads < heads)
//   layers.L.attn.{matmul_qk,scale,causal_mask,softmax,matmul_v,transpose_ctx,reshape_ctx}
//                                                 (causal_mask in prefill only: Where on constant attn.causal_mask)
//   layers.L.attn.o_proj, layers.L.residual_attn
//   layers.L.post_attention_norm.*                RMSNorm
//   layers.L.mlp.{gate_proj,silu_sigmoid,silu,up_proj,gate_mul,down_proj}, layers.L.residual_mlp
//   norm.*                                        final RMSNorm, its last node named "norm"
//   lm_head                                       MatMul by lm_head.weight [hidden, vocab] -> logits
// Weights are named after their node plus ".weight" (placeholders without spec.weights, see Builder).
#include <cmath>
#include <string>
#include <vector>

#include "gen/gen_builder.h"

namespace partex::gen {

namespace {

constexpr float kInitRange = 0.02f;
constexpr double kRopeTheta = 10000.0;
constexpr float kRmsEps = 1e-5f;

struct Cfg {
  int64_t B, H, heads, kvHeads, headDim, ffn, vocab, N;
  int64_t T;   ///< Query tokens of this phase: N (prefill) or 1 (decode).
  int64_t Tk;  ///< Key tokens attended: N (prefill) or N + 1 (decode).
  bool decode;
  int32_t et;  ///< Element type of weights and activations.
};

std::string rmsNorm(Builder& b, const Cfg& c, const std::string& x, const std::string& scope, const std::string& out) {
  const std::string w = b.weight(scope + ".weight", {c.H}, 0.9f, 1.1f, c.et);
  std::string sq = b.op("Pow", scope + ".pow", {x, b.constFloatScalar("const.two", c.et, 2.0f)});
  std::string mean = b.op("ReduceMean", scope + ".mean", {sq});
  setAttr(b.last(), "axes", Dims{-1});
  setAttr(b.last(), "keepdims", int64_t{1});
  std::string ve = b.op("Add", scope + ".add_eps", {mean, b.constFloatScalar("const.rms_eps", c.et, kRmsEps)});
  std::string sd = b.op("Sqrt", scope + ".sqrt", {ve});
  std::string n = b.op("Div", scope + ".div", {x, sd});
  const std::string result = out.empty() ? scope + ".mul" : out;
  b.node("Mul", result, {n, w}, {result});
  return result;
}

std::string linear(Builder& b, const Cfg& c, const std::string& x, const std::string& name, int64_t in, int64_t out) {
  return b.op("MatMul", name, {x, b.weight(name + ".weight", {in, out}, -kInitRange, kInitRange, c.et)});
}

std::string transpose(Builder& b, const std::string& x, const std::string& name, const Dims& perm) {
  b.op("Transpose", name, {x});
  setAttr(b.last(), "perm", perm);
  return name;
}

/// x [B, h, T, headDim] rotated: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
/// The result tensor is called `out` when given.
std::string rope(Builder& b, const Cfg& c, const std::string& x, const std::string& scope, const std::string& out) {
  const int64_t half = c.headDim / 2;
  const std::string axes = b.constI64Vec("const.axes_3", {3});
  const std::string s0 = b.constI64Vec("const.rope_start_0", {0});
  const std::string sh = b.constI64Vec("const.rope_half", {half});
  const std::string se = b.constI64Vec("const.rope_end", {c.headDim});
  std::string x1 = b.op("Slice", scope + ".slice_lo", {x, s0, sh, axes});
  std::string x2 = b.op("Slice", scope + ".slice_hi", {x, sh, se, axes});
  std::string neg = b.op("Neg", scope + ".neg", {x2});
  std::string rot = b.op("Concat", scope + ".rotate_half", {neg, x1});
  setAttr(b.last(), "axis", int64_t{3});
  std::string xc = b.op("Mul", scope + ".mul_cos", {x, "rope.cos"});
  std::string rs = b.op("Mul", scope + ".mul_sin", {rot, "rope.sin"});
  const std::string result = out.empty() ? scope + ".add" : out;
  b.node("Add", scope + ".add", {xc, rs}, {result});
  return result;
}

/// Grouped-query attention: [B, kvHeads, Tk, headDim] repeated to [B, heads, Tk, headDim].
std::string repeatKv(Builder& b, const Cfg& c, const std::string& x, const std::string& scope) {
  if (c.kvHeads == c.heads) return x;
  const int64_t rep = c.heads / c.kvHeads;
  std::string u = b.op("Unsqueeze", scope + ".unsqueeze", {x, b.constI64Vec("const.axes_2", {2})});
  std::string e = b.op("Expand", scope + ".expand",
                       {u, b.constI64Vec("const.repeat_shape", {c.B, c.kvHeads, rep, c.Tk, c.headDim})});
  return b.op("Reshape", scope + ".reshape", {e, b.constI64Vec("const.repeated_shape", {c.B, c.heads, c.Tk, c.headDim})});
}

void block(Builder& b, const Cfg& c, int64_t l, std::string& x, const std::string& mask) {
  const std::string p = "layers." + std::to_string(l);
  const std::string a = p + ".attn";
  const std::string ls = std::to_string(l);
  std::string h = rmsNorm(b, c, x, p + ".input_norm", "");
  std::string q = linear(b, c, h, a + ".q_proj", c.H, c.heads * c.headDim);
  std::string k = linear(b, c, h, a + ".k_proj", c.H, c.kvHeads * c.headDim);
  std::string v = linear(b, c, h, a + ".v_proj", c.H, c.kvHeads * c.headDim);
  const std::string qShape = b.constI64Vec("const.q_head_shape", {c.B, c.T, c.heads, c.headDim});
  const std::string kvShape = b.constI64Vec("const.kv_head_shape", {c.B, c.T, c.kvHeads, c.headDim});
  q = transpose(b, b.op("Reshape", a + ".reshape_q", {q, qShape}), a + ".transpose_q", {0, 2, 1, 3});
  k = transpose(b, b.op("Reshape", a + ".reshape_k", {k, kvShape}), a + ".transpose_k", {0, 2, 1, 3});
  const std::string presentK = "present_key." + ls, presentV = "present_value." + ls;
  // Prefill: the value after its head split is the cache entry itself.
  const std::string vOut = c.decode ? a + ".transpose_v" : presentV;
  b.node("Transpose", a + ".transpose_v", {b.op("Reshape", a + ".reshape_v", {v, kvShape})}, {vOut});
  setAttr(b.last(), "perm", Dims{0, 2, 1, 3});
  v = vOut;
  q = rope(b, c, q, a + ".rope_q", "");
  if (c.decode) {
    k = rope(b, c, k, a + ".rope_k", "");
    b.node("Concat", a + ".cache_k", {"past_key." + ls, k}, {presentK});
    setAttr(b.last(), "axis", int64_t{2});
    b.node("Concat", a + ".cache_v", {"past_value." + ls, v}, {presentV});
    setAttr(b.last(), "axis", int64_t{2});
  } else {
    rope(b, c, k, a + ".rope_k", presentK);
  }
  std::string kk = repeatKv(b, c, presentK, a + ".repeat_k");
  std::string vv = repeatKv(b, c, presentV, a + ".repeat_v");
  std::string kt = transpose(b, kk, a + ".transpose_kt", {0, 1, 3, 2});
  std::string s = b.op("MatMul", a + ".matmul_qk", {q, kt});
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(c.headDim)));
  s = b.op("Div", a + ".scale", {s, b.constFloatScalar("const.sqrt_head_dim", c.et, scale)});
  if (!mask.empty())
    s = b.op("Where", a + ".causal_mask", {mask, s, b.constFloatScalar("const.masked_bias", c.et, -10000.0f)});
  s = b.op("Softmax", a + ".softmax", {s});
  setAttr(b.last(), "axis", int64_t{-1});
  std::string ctx = b.op("MatMul", a + ".matmul_v", {s, vv});
  ctx = transpose(b, ctx, a + ".transpose_ctx", {0, 2, 1, 3});
  ctx = b.op("Reshape", a + ".reshape_ctx",
             {ctx, b.constI64Vec("const.merge_shape", {c.B, c.T, c.heads * c.headDim})});
  std::string o = linear(b, c, ctx, a + ".o_proj", c.heads * c.headDim, c.H);
  x = b.op("Add", p + ".residual_attn", {x, o});

  h = rmsNorm(b, c, x, p + ".post_attention_norm", "");
  const std::string m = p + ".mlp";
  std::string gate = linear(b, c, h, m + ".gate_proj", c.H, c.ffn);
  std::string sig = b.op("Sigmoid", m + ".silu_sigmoid", {gate});
  std::string silu = b.op("Mul", m + ".silu", {gate, sig});
  std::string up = linear(b, c, h, m + ".up_proj", c.H, c.ffn);
  std::string gu = b.op("Mul", m + ".gate_mul", {silu, up});
  std::string down = linear(b, c, gu, m + ".down_proj", c.ffn, c.H);
  x = b.op("Add", p + ".residual_mlp", {x, down});
}

}  // namespace

void buildLlama(Builder& b) {
  const auto& s = b.spec();
  Cfg c{};
  c.B = s.batch;
  c.H = s.hidden;
  c.heads = s.heads;
  c.kvHeads = s.kvHeads > 0 ? s.kvHeads : s.heads;
  c.headDim = s.hidden / s.heads;
  c.ffn = s.intermediate > 0 ? s.intermediate : llamaIntermediate(s.hidden);
  c.vocab = s.vocab;
  c.N = s.seqLen;
  c.decode = s.phase == "decode";
  c.T = c.decode ? 1 : c.N;
  c.Tk = c.decode ? c.N + 1 : c.N;
  c.et = s.dtype == "float16" ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;

  b.input("input_ids", onnx::TensorProto::INT64, {c.B, c.T});
  if (c.decode)
    for (int64_t l = 0; l < s.layers; ++l) {
      b.input("past_key." + std::to_string(l), c.et, {c.B, c.kvHeads, c.N, c.headDim});
      b.input("past_value." + std::to_string(l), c.et, {c.B, c.kvHeads, c.N, c.headDim});
    }

  // Rotary tables of this phase's positions (0..N-1, or N), real values whatever spec.weights.
  std::vector<float> cosv(static_cast<size_t>(c.T * c.headDim)), sinv(cosv.size());
  const int64_t half = c.headDim / 2;
  for (int64_t t = 0; t < c.T; ++t) {
    const double pos = static_cast<double>(c.decode ? c.N : t);
    for (int64_t i = 0; i < c.headDim; ++i) {
      const double invFreq = std::pow(kRopeTheta, -2.0 * static_cast<double>(i % half) / static_cast<double>(c.headDim));
      cosv[static_cast<size_t>(t * c.headDim + i)] = static_cast<float>(std::cos(pos * invFreq));
      sinv[static_cast<size_t>(t * c.headDim + i)] = static_cast<float>(std::sin(pos * invFreq));
    }
  }
  b.constFloat("rope.cos", c.et, {c.T, c.headDim}, cosv);
  b.constFloat("rope.sin", c.et, {c.T, c.headDim}, sinv);

  // Prefill: the causal band [1, 1, N, N] (query i sees keys 0..i). Decode attends the whole cache.
  std::string mask;
  if (!c.decode) {
    std::vector<uint8_t> tri(static_cast<size_t>(c.N * c.N), 0);
    for (int64_t i = 0; i < c.N; ++i)
      for (int64_t j = 0; j <= i; ++j) tri[static_cast<size_t>(i * c.N + j)] = 1;
    mask = b.constBool("attn.causal_mask", {1, 1, c.N, c.N}, tri);
  }

  std::string x = b.op("Gather", "embed_tokens",
                       {b.weight("embed_tokens.weight", {c.vocab, c.H}, -kInitRange, kInitRange, c.et), "input_ids"});
  setAttr(b.last(), "axis", int64_t{0});
  for (int64_t l = 0; l < s.layers; ++l) block(b, c, l, x, mask);
  x = rmsNorm(b, c, x, "norm", "norm");
  b.node("MatMul", "lm_head", {x, b.weight("lm_head.weight", {c.H, c.vocab}, -kInitRange, kInitRange, c.et)},
         {"logits"});
  b.output("logits", c.et, {c.B, c.T, c.vocab});
  for (int64_t l = 0; l < s.layers; ++l) {
    b.output("present_key." + std::to_string(l), c.et, {c.B, c.kvHeads, c.Tk, c.headDim});
    b.output("present_value." + std::to_string(l), c.et, {c.B, c.kvHeads, c.Tk, c.headDim});
  }
}

}  // namespace partex::gen
