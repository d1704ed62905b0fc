// Transformers for the generator: a BERT-base-like encoder and a GPT-2-small-like decoder, written
// the way torch.onnx exports them at opset 13 (LayerNorm and Gelu decomposed into primitive ops).
#include <cmath>

#include "gen/gen_builder.h"

namespace partex::gen {

namespace {

constexpr float kInitRange = 0.02f;

/// x @ W + b with W [in, out] (HF Linear / GPT-2 Conv1D layout): MatMul then Add.
std::string linear(Builder& b, const std::string& x, const std::string& scope, int64_t in, int64_t out) {
  std::string w = b.weight(scope + ".weight", {in, out}, -kInitRange, kInitRange);
  std::string bias = b.weight(scope + ".bias", {out}, -kInitRange, kInitRange);
  std::string mm = b.op("MatMul", scope + ".matmul", {x, w});
  return b.op("Add", scope + ".add", {mm, bias});
}

/// LayerNorm over the last axis, decomposed: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
/// The result tensor is called `out` when given, else after the last node.
std::string layerNorm(Builder& b, const std::string& x, const std::string& scope, int64_t hidden, float eps,
                      const std::string& out = "") {
  std::string gamma = b.weight(scope + ".weight", {hidden}, 0.9f, 1.1f);
  std::string beta = b.weight(scope + ".bias", {hidden}, -kInitRange, kInitRange);
  std::string mean = b.op("ReduceMean", scope + ".mean", {x});
  setAttr(b.last(), "axes", Dims{-1});
  setAttr(b.last(), "keepdims", int64_t{1});
  std::string d = b.op("Sub", scope + ".sub", {x, mean});
  std::string sq = b.op("Pow", scope + ".pow", {d, b.constF32Scalar("const.two", 2.0f)});
  std::string var = b.op("ReduceMean", scope + ".var", {sq});
  setAttr(b.last(), "axes", Dims{-1});
  setAttr(b.last(), "keepdims", int64_t{1});
  std::string epsName = eps == 1e-12f ? "const.eps_1e-12" : "const.eps_1e-5";
  std::string ve = b.op("Add", scope + ".add_eps", {var, b.constF32Scalar(epsName, eps)});
  std::string sd = b.op("Sqrt", scope + ".sqrt", {ve});
  std::string n = b.op("Div", scope + ".div", {d, sd});
  std::string m = b.op("Mul", scope + ".mul", {n, gamma});
  const std::string result = out.empty() ? scope + ".add" : out;
  b.node("Add", scope + ".add", {m, beta}, {result});
  return result;
}

/// Erf Gelu: x * 0.5 * (1 + erf(x / sqrt 2)) as Div, Erf, Add, Mul, Mul.
std::string gelu(Builder& b, const std::string& x, const std::string& scope) {
  std::string d = b.op("Div", scope + ".div", {x, b.constF32Scalar("const.sqrt2", static_cast<float>(std::sqrt(2.0)))});
  std::string e = b.op("Erf", scope + ".erf", {d});
  std::string a = b.op("Add", scope + ".add", {e, b.constF32Scalar("const.one", 1.0f)});
  std::string m = b.op("Mul", scope + ".mul", {x, a});
  return b.op("Mul", scope + ".mul_half", {m, b.constF32Scalar("const.half", 0.5f)});
}

std::string transpose(Builder& b, const std::string& x, const std::string& name, const Dims& perm) {
  b.op("Transpose", name, {x});
  setAttr(b.last(), "perm", perm);
  return name;
}

/// Scaled dot-product attention on [batch, seq, hidden] q/k/v already projected. `headShape` is the
/// [batch, seq, heads, headDim] shape tensor and `mergeShape` [batch, seq, hidden]. `mask` adds
/// (BERT, float additive mask) or selects (GPT-2, bool mask through Where) before Softmax.
std::string attentionCore(Builder& b, const std::string& scope, const std::string& q, const std::string& k,
                          const std::string& v, const std::string& headShape, const std::string& mergeShape,
                          const std::string& mask, bool whereMask, int64_t headDim) {
  std::string qh =
      transpose(b, b.op("Reshape", scope + ".reshape_q", {q, headShape}), scope + ".transpose_q", {0, 2, 1, 3});
  std::string kh =
      transpose(b, b.op("Reshape", scope + ".reshape_k", {k, headShape}), scope + ".transpose_k", {0, 2, 3, 1});
  std::string vh =
      transpose(b, b.op("Reshape", scope + ".reshape_v", {v, headShape}), scope + ".transpose_v", {0, 2, 1, 3});
  std::string s = b.op("MatMul", scope + ".matmul_qk", {qh, kh});
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(headDim)));
  s = b.op("Div", scope + ".scale", {s, b.constF32Scalar("const.sqrt_head_dim", scale)});
  if (whereMask)
    s = b.op("Where", scope + ".causal_mask", {mask, s, b.constF32Scalar("const.masked_bias", -10000.0f)});
  else
    s = b.op("Add", scope + ".add_mask", {s, mask});
  s = b.op("Softmax", scope + ".softmax", {s});
  setAttr(b.last(), "axis", int64_t{-1});
  std::string ctx = b.op("MatMul", scope + ".matmul_v", {s, vh});
  ctx = transpose(b, ctx, scope + ".transpose_ctx", {0, 2, 1, 3});
  return b.op("Reshape", scope + ".reshape_ctx", {ctx, mergeShape});
}

}  // namespace

void buildBert(Builder& b) {
  const auto& s = b.spec();
  const int64_t H = s.hidden, headDim = s.hidden / s.heads, ffn = 4 * s.hidden;
  const float eps = 1e-12f;
  b.input("input_ids", onnx::TensorProto::INT64, {s.batch, s.seqLen});
  b.input("attention_mask", onnx::TensorProto::INT64, {s.batch, s.seqLen});

  // Embeddings: word Gather, plus position (constant-folded slice [seq, hidden]) and token type 0.
  std::string x =
      b.op("Gather", "embeddings.word_embeddings",
           {b.weight("embeddings.word_embeddings.weight", {s.vocab, H}, -kInitRange, kInitRange), "input_ids"});
  setAttr(b.last(), "axis", int64_t{0});
  x = b.op("Add", "embeddings.add_position",
           {x, b.weight("embeddings.position_embeddings.weight", {s.seqLen, H}, -kInitRange, kInitRange)});
  x = b.op("Add", "embeddings.add_token_type",
           {x, b.weight("embeddings.token_type_embeddings.weight", {H}, -kInitRange, kInitRange)});
  x = layerNorm(b, x, "embeddings.LayerNorm", H, eps);

  // Extended additive mask [batch, 1, 1, seq]: (1 - mask) * -10000.
  std::string m = b.op("Unsqueeze", "extended_attention_mask.unsqueeze",
                       {"attention_mask", b.constI64Vec("const.axes_1_2", {1, 2})});
  m = b.op("Cast", "extended_attention_mask.cast", {m});
  setAttr(b.last(), "to", int64_t{onnx::TensorProto::FLOAT});
  m = b.op("Sub", "extended_attention_mask.sub", {b.constF32Scalar("const.one", 1.0f), m});
  m = b.op("Mul", "extended_attention_mask.mul", {m, b.constF32Scalar("const.masked_bias", -10000.0f)});

  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    const std::string sa = p + ".attention.self";
    std::string q = linear(b, x, sa + ".query", H, H);
    std::string k = linear(b, x, sa + ".key", H, H);
    std::string v = linear(b, x, sa + ".value", H, H);
    // Dynamic-shape head split as exported with dynamic axes: Shape -> Gather -> Unsqueeze -> Concat.
    std::string shape = b.op("Shape", sa + ".shape", {x});
    std::string bs = b.op("Gather", sa + ".gather_batch", {shape, b.constI64Scalar("const.index_0", 0)});
    setAttr(b.last(), "axis", int64_t{0});
    std::string sq = b.op("Gather", sa + ".gather_seq", {shape, b.constI64Scalar("const.index_1", 1)});
    setAttr(b.last(), "axis", int64_t{0});
    const std::string axes0 = b.constI64Vec("const.axes_0", {0});
    bs = b.op("Unsqueeze", sa + ".unsqueeze_batch", {bs, axes0});
    sq = b.op("Unsqueeze", sa + ".unsqueeze_seq", {sq, axes0});
    std::string headShape =
        b.op("Concat", sa + ".head_shape",
             {bs, sq, b.constI64Vec("const.heads", {s.heads}), b.constI64Vec("const.head_dim", {headDim})});
    setAttr(b.last(), "axis", int64_t{0});
    std::string mergeShape = b.op("Concat", sa + ".merge_shape", {bs, sq, b.constI64Vec("const.hidden", {H})});
    setAttr(b.last(), "axis", int64_t{0});
    std::string ctx = attentionCore(b, sa, q, k, v, headShape, mergeShape, m, false, headDim);
    const std::string ao = p + ".attention.output";
    std::string y = linear(b, ctx, ao + ".dense", H, H);
    y = b.op("Add", ao + ".residual", {y, x});
    x = layerNorm(b, y, ao + ".LayerNorm", H, eps);

    std::string f = linear(b, x, p + ".intermediate.dense", H, ffn);
    f = gelu(b, f, p + ".intermediate.gelu");
    f = linear(b, f, p + ".output.dense", ffn, H);
    f = b.op("Add", p + ".output.residual", {f, x});
    x = layerNorm(b, f, p + ".output.LayerNorm", H, eps, l + 1 == s.layers ? "last_hidden_state" : "");
  }

  // Pooler: first token, dense, tanh.
  std::string first = b.op("Gather", "pooler.first_token", {"last_hidden_state", b.constI64Scalar("const.index_0", 0)});
  setAttr(b.last(), "axis", int64_t{1});
  std::string pooled = linear(b, first, "pooler.dense", H, H);
  b.node("Tanh", "pooler.activation", {pooled}, {"pooler_output"});

  b.output("last_hidden_state", onnx::TensorProto::FLOAT, {s.batch, s.seqLen, H});
  b.output("pooler_output", onnx::TensorProto::FLOAT, {s.batch, H});
}

void buildGpt2(Builder& b) {
  const auto& s = b.spec();
  const int64_t H = s.hidden, headDim = s.hidden / s.heads, ffn = 4 * s.hidden, S = s.seqLen;
  const float eps = 1e-5f;
  b.input("input_ids", onnx::TensorProto::INT64, {s.batch, S});
  b.input("attention_mask", onnx::TensorProto::INT64, {s.batch, S});

  std::string x = b.op("Gather", "transformer.wte",
                       {b.weight("transformer.wte.weight", {s.vocab, H}, -kInitRange, kInitRange), "input_ids"});
  setAttr(b.last(), "axis", int64_t{0});
  x = b.op("Add", "transformer.add_wpe", {x, b.weight("transformer.wpe.weight", {S, H}, -kInitRange, kInitRange)});

  // Boolean mask [batch, 1, seq, seq]: padding mask expanded over query rows, and the causal band.
  std::string m =
      b.op("Unsqueeze", "causal_mask.unsqueeze", {"attention_mask", b.constI64Vec("const.axes_1_2", {1, 2})});
  m = b.op("Cast", "causal_mask.cast", {m});
  setAttr(b.last(), "to", int64_t{onnx::TensorProto::BOOL});
  m = b.op("Expand", "causal_mask.expand", {m, b.constI64Vec("const.mask_shape", {s.batch, 1, S, S})});
  std::vector<uint8_t> tri(static_cast<size_t>(S * S), 0);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j <= i; ++j) tri[static_cast<size_t>(i * S + j)] = 1;
  m = b.op("And", "causal_mask.and", {m, b.constBool("transformer.causal_bias", {1, 1, S, S}, tri)});

  const std::string headShape = b.constI64Vec("const.head_shape", {s.batch, S, s.heads, headDim});
  const std::string mergeShape = b.constI64Vec("const.merge_shape", {s.batch, S, H});
  const std::string split = b.constI64Vec("const.qkv_split", {H, H, H});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l);
    std::string h = layerNorm(b, x, p + ".ln_1", H, eps);
    std::string qkv = linear(b, h, p + ".attn.c_attn", H, 3 * H);
    b.node("Split", p + ".attn.split", {qkv, split}, {p + ".attn.q", p + ".attn.k", p + ".attn.v"});
    setAttr(b.last(), "axis", int64_t{2});
    std::string ctx = attentionCore(b, p + ".attn", p + ".attn.q", p + ".attn.k", p + ".attn.v", headShape, mergeShape,
                                    m, true, headDim);
    std::string a = linear(b, ctx, p + ".attn.c_proj", H, H);
    x = b.op("Add", p + ".residual_attn", {x, a});
    h = layerNorm(b, x, p + ".ln_2", H, eps);
    h = linear(b, h, p + ".mlp.c_fc", H, ffn);
    h = gelu(b, h, p + ".mlp.gelu");
    h = linear(b, h, p + ".mlp.c_proj", ffn, H);
    x = b.op("Add", p + ".residual_mlp", {x, h});
  }
  x = layerNorm(b, x, "transformer.ln_f", H, eps);
  b.node("MatMul", "lm_head", {x, b.weight("lm_head.weight", {H, s.vocab}, -kInitRange, kInitRange)}, {"logits"});
  b.output("logits", onnx::TensorProto::FLOAT, {s.batch, S, s.vocab});
}

}  // namespace partex::gen
