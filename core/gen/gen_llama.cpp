// A Llama-style decoder-only language model for the generator (Llama / Llama-2 architecture, the
// way an ONNX export of it computes), in one of two phases, opset 13, every op a primitive one except
// the Mixture-of-Experts projections (ExpertMatMul, domain "partex"):
//
//   prefill: input_ids [B, N] (N = seqLen, the prompt), an empty cache: no past inputs; outputs
//            logits [B, N, vocab] and, per layer L, present_key.L / present_value.L [B, kvHeads, N, headDim].
//   decode:  input_ids [B, 1] (the token at position N) and, per layer L, past_key.L / past_value.L
//            [B, kvHeads, N_L, headDim] (the cache: N tokens, or min(N, window) on a sliding-window layer);
//            outputs logits [B, 1, vocab] and present_key.L / present_value.L [B, kvHeads, N_L + 1, headDim].
//
// Node names (the layer structure, recoverable by "layers.<L>."):
//   embed_tokens                                  Gather of token_embd.weight [vocab, hidden]
//   layers.L.input_norm.{pow,mean,add_eps,sqrt,div,mul}         RMSNorm (weight blk.L.attn_norm.weight)
//   layers.L.attn.{q_proj,k_proj,v_proj}           MatMul by blk.L.attn_{q,k,v}.weight [hidden, heads*headDim | kvHeads*headDim]
//   layers.L.attn.{reshape_q,transpose_q,...}      head split
//   layers.L.attn.rope_q.* / rope_k.*              rotary embedding: x*cos + rotate_half(x)*sin,
//                                                 rotate_half by Slice, Neg, Concat; cos/sin tables of
//                                                 this phase's positions are constants rope.cos, rope.sin
//   layers.L.attn.cache_k / cache_v                decode: Concat(past, new) = present_*; prefill: the
//                                                 rotated key / the value are present_* themselves
//   layers.L.attn.repeat_k.* / repeat_v.*         grouped-query attention only (kvHeads < heads)
//   layers.L.attn.{matmul_qk,scale,causal_mask,softmax,matmul_v,transpose_ctx,reshape_ctx}
//                                                 (causal_mask in prefill only: Where on constant attn.causal_mask)
//   layers.L.attn.o_proj (blk.L.attn_output.weight), layers.L.residual_attn
//   layers.L.post_attention_norm.*                RMSNorm (blk.L.ffn_norm.weight; gpt-oss: blk.L.post_attention_norm.weight)
//   dense:  layers.L.mlp.{gate_proj,silu_sigmoid,silu,up_proj,gate_mul,down_proj} (blk.L.ffn_{gate,up,down}.weight)
//   experts: layers.L.moe.{router (blk.L.ffn_gate_inp.weight [hidden, E]),router_softmax,topk,
//            gate_exps,up_exps,down_exps (ExpertMatMul by blk.L.ffn_{gate,up,down}_exps.weight [E, in, out]),
//            silu_sigmoid,silu,gate_mul,route_weight,weighted,sum}
//            and a shared expert layers.L.moe.shared_{gate,up,down}... (blk.L.ffn_{gate,up,down}_shexp.weight)
//   layers.L.residual_mlp
//   norm.*                                        final RMSNorm (output_norm.weight), its last node named "norm"
//   lm_head                                       MatMul by output.weight [hidden, vocab] -> logits (tied
//                                                 embeddings: Gemm with token_embd.weight transposed)
// Weight names are llama.cpp's GGUF tensor names (placeholders without spec.weights, see Builder).
//
// ExpertMatMul(x [B, T, in] or [B, T, k, in], experts [E, in, out], ids [B, T, k]) -> [B, T, k, out]:
// each token through the k experts it is routed to (ggml's mul_mat_id). Its cost (cost/work.cpp) reads
// the expected share of experts the B*T tokens touch; memory holds all E.
#include <algorithm>
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
  int64_t Tk;  ///< Key tokens attended by this layer: N (prefill) or N_L + 1 (decode).
  int64_t experts, used, expertFfn, sharedFfn;
  bool decode;
  int32_t et;  ///< Element type of weights and activations.
};

std::string blk(int64_t l, const std::string& t) {
  return "blk." + std::to_string(l) + "." + t + ".weight";
}

std::string rmsNorm(Builder& b, const Cfg& c, const std::string& x, const std::string& scope, const std::string& out,
                    const std::string& weightName) {
  const std::string w = b.weight(weightName, {c.H}, 0.9f, 1.1f, c.et);
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

std::string linear(Builder& b, const Cfg& c, const std::string& x, const std::string& name, const std::string& weightName,
                   int64_t in, int64_t out) {
  return b.op("MatMul", name, {x, b.weight(weightName, {in, out}, -kInitRange, kInitRange, c.et)});
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
  const std::string tk = std::to_string(c.Tk);
  std::string u = b.op("Unsqueeze", scope + ".unsqueeze", {x, b.constI64Vec("const.axes_2", {2})});
  std::string e = b.op("Expand", scope + ".expand",
                       {u, b.constI64Vec("const.repeat_shape." + tk, {c.B, c.kvHeads, rep, c.Tk, c.headDim})});
  return b.op("Reshape", scope + ".reshape",
              {e, b.constI64Vec("const.repeated_shape." + tk, {c.B, c.heads, c.Tk, c.headDim})});
}

/// SiLU(gate) * up.
std::string swiglu(Builder& b, const std::string& gate, const std::string& up, const std::string& scope) {
  std::string sig = b.op("Sigmoid", scope + ".silu_sigmoid", {gate});
  std::string silu = b.op("Mul", scope + ".silu", {gate, sig});
  return b.op("Mul", scope + ".gate_mul", {silu, up});
}

/// Routed experts: router, softmax, top-k, three ExpertMatMul projections, the routing-weighted sum.
std::string moeFfn(Builder& b, const Cfg& c, const std::string& h, int64_t l) {
  const std::string m = "layers." + std::to_string(l) + ".moe";
  std::string logits = linear(b, c, h, m + ".router", blk(l, "ffn_gate_inp"), c.H, c.experts);
  std::string probs = b.op("Softmax", m + ".router_softmax", {logits});
  setAttr(b.last(), "axis", int64_t{-1});
  const std::string vals = m + ".topk", ids = m + ".topk.indices";
  b.node("TopK", m + ".topk", {probs, b.constI64Vec("const.top_k", {c.used})}, {vals, ids});
  setAttr(b.last(), "axis", int64_t{-1});
  const Dims kf{c.B, c.T, c.used, c.expertFfn}, kh{c.B, c.T, c.used, c.H};
  auto experts = [&](const std::string& kind, int64_t in, int64_t out) {
    return b.weight(blk(l, kind), {c.experts, in, out}, -kInitRange, kInitRange, c.et);
  };
  std::string gate = b.partexOp("ExpertMatMul", m + ".gate_exps", {h, experts("ffn_gate_exps", c.H, c.expertFfn), ids}, c.et, kf);
  std::string up = b.partexOp("ExpertMatMul", m + ".up_exps", {h, experts("ffn_up_exps", c.H, c.expertFfn), ids}, c.et, kf);
  std::string gu = swiglu(b, gate, up, m);
  std::string down = b.partexOp("ExpertMatMul", m + ".down_exps", {gu, experts("ffn_down_exps", c.expertFfn, c.H), ids}, c.et, kh);
  std::string w = b.op("Unsqueeze", m + ".route_weight", {vals, b.constI64Vec("const.axes_last", {-1})});
  std::string weighted = b.op("Mul", m + ".weighted", {down, w});
  std::string y = b.op("ReduceSum", m + ".sum", {weighted, b.constI64Vec("const.axes_2", {2})});
  setAttr(b.last(), "keepdims", int64_t{0});
  if (c.sharedFfn > 0) {
    std::string sg = linear(b, c, h, m + ".shared_gate_proj", blk(l, "ffn_gate_shexp"), c.H, c.sharedFfn);
    std::string su = linear(b, c, h, m + ".shared_up_proj", blk(l, "ffn_up_shexp"), c.H, c.sharedFfn);
    std::string sgu = swiglu(b, sg, su, m + ".shared");
    std::string sd = linear(b, c, sgu, m + ".shared_down_proj", blk(l, "ffn_down_shexp"), c.sharedFfn, c.H);
    y = b.op("Add", m + ".add_shared", {y, sd});
  }
  return y;
}

void block(Builder& b, const Cfg& c, int64_t l, std::string& x, const std::string& mask, bool postAttnName) {
  const std::string p = "layers." + std::to_string(l);
  const std::string a = p + ".attn";
  const std::string ls = std::to_string(l);
  std::string h = rmsNorm(b, c, x, p + ".input_norm", "", blk(l, "attn_norm"));
  std::string q = linear(b, c, h, a + ".q_proj", blk(l, "attn_q"), c.H, c.heads * c.headDim);
  std::string k = linear(b, c, h, a + ".k_proj", blk(l, "attn_k"), c.H, c.kvHeads * c.headDim);
  std::string v = linear(b, c, h, a + ".v_proj", blk(l, "attn_v"), c.H, c.kvHeads * c.headDim);
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
  std::string o = linear(b, c, ctx, a + ".o_proj", blk(l, "attn_output"), c.heads * c.headDim, c.H);
  x = b.op("Add", p + ".residual_attn", {x, o});

  h = rmsNorm(b, c, x, p + ".post_attention_norm", "", blk(l, postAttnName ? "post_attention_norm" : "ffn_norm"));
  std::string y;
  if (c.experts > 0) {
    y = moeFfn(b, c, h, l);
  } else {
    const std::string m = p + ".mlp";
    std::string gate = linear(b, c, h, m + ".gate_proj", blk(l, "ffn_gate"), c.H, c.ffn);
    std::string up = linear(b, c, h, m + ".up_proj", blk(l, "ffn_up"), c.H, c.ffn);
    std::string gu = swiglu(b, gate, up, m);
    y = linear(b, c, gu, m + ".down_proj", blk(l, "ffn_down"), c.ffn, c.H);
  }
  x = b.op("Add", p + ".residual_mlp", {x, y});
}

/// Tokens in layer `layer`'s cache in decode: min(N, window) on a sliding-window layer, else N.
int64_t cachedTokens(const GenSpec& s, int64_t layer) {
  const bool sliding = s.slidingWindow > 0 && s.slidingPeriod > 0 && layer % s.slidingPeriod != s.slidingPeriod - 1;
  return sliding ? std::min(s.seqLen, s.slidingWindow) : s.seqLen;
}

}  // namespace

void buildLlama(Builder& b) {
  const auto& s = b.spec();
  Cfg c{};
  c.B = s.batch;
  c.H = s.hidden;
  c.heads = s.heads;
  c.kvHeads = s.kvHeads > 0 ? s.kvHeads : s.heads;
  c.headDim = s.headDim > 0 ? s.headDim : s.hidden / s.heads;
  c.ffn = s.intermediate > 0 ? s.intermediate : llamaIntermediate(s.hidden);
  c.vocab = s.vocab;
  c.N = s.seqLen;
  c.experts = s.experts;
  c.used = s.expertsUsed;
  c.expertFfn = s.expertFfn > 0 ? s.expertFfn : c.ffn;
  c.sharedFfn = s.sharedFfn;
  c.decode = s.phase == "decode";
  c.T = c.decode ? 1 : c.N;
  c.Tk = c.decode ? c.N + 1 : c.N;
  c.et = s.dtype == "float16" ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;

  b.input("input_ids", onnx::TensorProto::INT64, {c.B, c.T});
  if (c.decode)
    for (int64_t l = 0; l < s.layers; ++l) {
      const int64_t nl = cachedTokens(s, l);
      b.input("past_key." + std::to_string(l), c.et, {c.B, c.kvHeads, nl, c.headDim});
      b.input("past_value." + std::to_string(l), c.et, {c.B, c.kvHeads, nl, c.headDim});
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
  // (Sliding-window layers compute the same N x N scores in prefill: llama.cpp masks them too.)
  std::string mask;
  if (!c.decode) {
    std::vector<uint8_t> tri(static_cast<size_t>(c.N * c.N), 0);
    for (int64_t i = 0; i < c.N; ++i)
      for (int64_t j = 0; j <= i; ++j) tri[static_cast<size_t>(i * c.N + j)] = 1;
    mask = b.constBool("attn.causal_mask", {1, 1, c.N, c.N}, tri);
  }

  const std::string embd = b.weight("token_embd.weight", {c.vocab, c.H}, -kInitRange, kInitRange, c.et);
  std::string x = b.op("Gather", "embed_tokens", {embd, "input_ids"});
  setAttr(b.last(), "axis", int64_t{0});
  for (int64_t l = 0; l < s.layers; ++l) {
    Cfg cl = c;
    if (c.decode) cl.Tk = cachedTokens(s, l) + 1;
    block(b, cl, l, x, mask, s.postAttentionNormName);
  }
  x = rmsNorm(b, c, x, "norm", "norm", "output_norm.weight");
  if (s.tiedEmbeddings) {
    // logits = x token_embd^T: Gemm on the [B*T, hidden] rows.
    std::string x2 = b.op("Reshape", "lm_head.flatten", {x, b.constI64Vec("const.rows_shape", {c.B * c.T, c.H})});
    b.op("Gemm", "lm_head", {x2, embd});
    setAttr(b.last(), "transB", int64_t{1});
    b.node("Reshape", "lm_head.reshape", {"lm_head", b.constI64Vec("const.logits_shape", {c.B, c.T, c.vocab})}, {"logits"});
  } else {
    b.node("MatMul", "lm_head", {x, b.weight("output.weight", {c.H, c.vocab}, -kInitRange, kInitRange, c.et)},
           {"logits"});
  }
  b.output("logits", c.et, {c.B, c.T, c.vocab});
  for (int64_t l = 0; l < s.layers; ++l) {
    const int64_t tk = c.decode ? cachedTokens(s, l) + 1 : c.N;
    b.output("present_key." + std::to_string(l), c.et, {c.B, c.kvHeads, tk, c.headDim});
    b.output("present_value." + std::to_string(l), c.et, {c.B, c.kvHeads, tk, c.headDim});
  }
}

}  // namespace partex::gen
