// Graph-level rewrites (ir/rewrites.h), one section per rewrite in the style of ONNX Runtime's
// optimizer (onnxruntime/core/optimizer/*.cc, read for the rules, not copied): each section says the
// pattern, the condition under which running it as one kernel is exact, and what it produces. The
// kernels are in backends/cpu/ops_rewrites.cpp; ir/fusion.cpp turns the matches into fused groups.
#include "ir/rewrites.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ir/tensordata.h"

namespace partex {

namespace {

const Value& val(const Graph& g, ValueId v) {
  return g.values[static_cast<size_t>(v)];
}
const Node& node(const Graph& g, OpId op) {
  return g.nodes[static_cast<size_t>(op)];
}
bool isOp(const Graph& g, OpId op, const char* type) {
  return op >= 0 && node(g, op).opType == type && (node(g, op).domain.empty() || node(g, op).domain == "ai.onnx");
}
bool isF32(const Graph& g, ValueId v) {
  return v >= 0 && val(g, v).dtype == DType::Float32;
}
/// The only operator reading v (once), v being no model output; else kNone.
OpId soleConsumer(const Graph& g, ValueId v) {
  if (v < 0) return kNone;
  const Value& x = val(g, v);
  if (x.consumers.size() != 1 || x.isGraphOutput) return kNone;
  const Node& c = node(g, x.consumers[0]);
  return std::count(c.inputs.begin(), c.inputs.end(), v) == 1 ? x.consumers[0] : kNone;
}
ValueId out0(const Graph& g, OpId op) {
  return op >= 0 && !node(g, op).outputs.empty() ? node(g, op).outputs[0] : kNone;
}
/// The other input of a two-input node that reads `a`; kNone otherwise.
ValueId otherInput(const Graph& g, OpId op, ValueId a) {
  const Node& n = node(g, op);
  if (n.inputs.size() != 2) return kNone;
  if (n.inputs[0] == a) return n.inputs[1];
  if (n.inputs[1] == a) return n.inputs[0];
  return kNone;
}
bool near(double a, double b, double rel = 1e-5) {
  return std::isfinite(a) && std::fabs(a - b) <= rel * std::max(1.0, std::fabs(b));
}
/// Mul or Add (either operand order), Div or Sub (`x` first) of `x` by a scalar constant near `k`.
bool scalarOp(const Graph& g, OpId op, const char* type, ValueId x, double k, double rel = 1e-5) {
  if (!isOp(g, op, type)) return false;
  const Node& n = node(g, op);
  if (n.inputs.size() != 2) return false;
  const bool ordered = std::string(type) == "Div" || std::string(type) == "Sub" || std::string(type) == "Pow";
  if (ordered && n.inputs[0] != x) return false;
  double v = 0;
  return constScalar(g, otherInput(g, op, x), v) && near(v, k, rel);
}

}  // namespace

bool constInts(const Graph& g, ValueId v, std::vector<int64_t>& out) {
  if (v < 0 || !val(g, v).isWeight) return false;
  const Value& x = val(g, v);
  const int64_t n = x.numElements();
  if (n < 0) return false;
  if (!x.intData.empty() && static_cast<int64_t>(x.intData.size()) == n) {
    out = x.intData;
    return true;
  }
  if (!x.data || (x.dtype != DType::Int64 && x.dtype != DType::Int32)) return false;
  const size_t es = x.dtype == DType::Int64 ? 8 : 4;
  if (x.data->size() < static_cast<size_t>(n) * es) return false;
  const std::byte* p = x.data->data();
  if (!p && n > 0) return false;
  out.assign(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (es == 8) {
      std::memcpy(&out[static_cast<size_t>(i)], p + i * 8, 8);
    } else {
      int32_t w;
      std::memcpy(&w, p + i * 4, 4);
      out[static_cast<size_t>(i)] = w;
    }
  }
  return true;
}

bool constScalar(const Graph& g, ValueId v, double& out) {
  if (v < 0 || !val(g, v).isWeight || !isF32(g, v) || val(g, v).numElements() != 1 || !val(g, v).data) return false;
  const std::byte* p = val(g, v).data->data();
  if (!p || val(g, v).data->size() < sizeof(float)) return false;
  float f;
  std::memcpy(&f, p, sizeof f);
  out = f;
  return true;
}

const char* rewriteName(Rewrite r) {
  switch (r) {
    case Rewrite::None:
      return "";
    case Rewrite::PadIntoConv:
      return "pad-into-conv";
    case Rewrite::PadIntoPool:
      return "pad-into-pool";
    case Rewrite::TransposePair:
      return "transpose-pair";
    case Rewrite::TransposeMatMul:
      return "transpose-matmul";
    case Rewrite::Gelu:
      return "gelu";
    case Rewrite::LayerNorm:
      return "layer-norm";
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------------
// Pad into Conv and pooling (onnxruntime/core/optimizer/pad_fusion.cc).
//
// Pattern: Pad(x) -> Conv | AveragePool | MaxPool, the Pad's output read by that one operator alone.
// Exact when: float32 x of rank 3-5; mode "constant"; the constant 0 (absent, attribute `value` before
// opset 11 or a constant input); pads known (attribute before opset 11, else a constant input; no `axes`
// input), zero on the batch and channel axes, non-negative on the spatial ones; the consumer's auto_pad
// NOTSET. A Conv pads with zeros itself, so the sum of the two paddings is the same convolution.
//  - AveragePool: ceil_mode 0 (every window lies inside the padded input, so the divisor is the kernel
//    size either way) and, unless its own count_include_pad is 1, no pads of its own: the Pad's zeros are
//    counted as elements, so the folded pool must count its padding (count_include_pad 1), which is
//    wrong for padding the pool excluded.
//  - MaxPool: padding with 0 instead of -inf changes a maximum unless the input is non-negative, so only
//    when x comes from Relu, Sigmoid or Clip with a minimum >= 0; and every window must hold at least one
//    element of x (a window of padding alone gives 0 unfolded): ceil_mode 0, dilations 1, each summed
//    pad below the kernel size. No Indices output.
// Produces: the consumer with its pads increased by the Pad's spatial pads (PadFold::pads); the Pad
// runs no more.

namespace {

bool nonNegative(const Graph& g, ValueId x) {
  const OpId p = x >= 0 ? val(g, x).producer : kNone;
  if (isOp(g, p, "Relu") || isOp(g, p, "Sigmoid")) return true;
  if (!isOp(g, p, "Clip")) return false;
  const Node& c = node(g, p);
  double lo = c.attrFloat("min", std::nan(""));
  if (!c.hasAttr("min") && !(c.inputs.size() > 1 && constScalar(g, c.inputs[1], lo))) return false;
  return lo >= 0;
}

}  // namespace

std::optional<PadFold> padFoldOf(const Graph& g, OpId pad) {
  if (!isOp(g, pad, "Pad")) return std::nullopt;
  const Node& p = node(g, pad);
  if (p.inputs.empty() || p.outputs.empty() || !isF32(g, p.inputs[0]) || p.outputs[0] < 0) return std::nullopt;
  const Value& x = val(g, p.inputs[0]);
  if (!x.shapeKnown || x.shape.size() < 3 || x.shape.size() > 5) return std::nullopt;
  const size_t r = x.shape.size(), sp = r - 2;
  if (p.attrString("mode", "constant") != "constant") return std::nullopt;
  if (p.inputs.size() > 3 && p.inputs[3] >= 0) return std::nullopt;  // axes (opset 18)
  std::vector<int64_t> pads;
  if (p.hasAttr("pads")) {
    pads = p.attrInts("pads");
  } else if (p.inputs.size() < 2 || !constInts(g, p.inputs[1], pads)) {
    return std::nullopt;
  }
  if (pads.size() != 2 * r) return std::nullopt;
  double value = p.attrFloat("value", 0.0);
  if (p.inputs.size() > 2 && p.inputs[2] >= 0 && !constScalar(g, p.inputs[2], value)) return std::nullopt;
  if (value != 0.0) return std::nullopt;
  if (pads[0] != 0 || pads[1] != 0 || pads[r] != 0 || pads[r + 1] != 0) return std::nullopt;
  for (int64_t v : pads)
    if (v < 0) return std::nullopt;
  const OpId c = soleConsumer(g, p.outputs[0]);
  if (c < 0 || node(g, c).inputs.empty() || node(g, c).inputs[0] != p.outputs[0] || out0(g, c) < 0) return std::nullopt;
  const Node& cn = node(g, c);
  if (cn.attrString("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  std::vector<int64_t> own = cn.hasAttr("pads") ? cn.attrInts("pads") : std::vector<int64_t>(2 * sp, 0);
  if (own.size() != 2 * sp) return std::nullopt;
  PadFold f;
  f.pad = pad;
  f.into = c;
  f.pads.resize(2 * sp);
  for (size_t i = 0; i < sp; ++i) {
    f.pads[i] = own[i] + pads[2 + i];
    f.pads[sp + i] = own[sp + i] + pads[r + 2 + i];
  }
  if (isOp(g, c, "Conv")) {
    if (cn.inputs.size() < 2 || !isF32(g, cn.inputs[1]) || !val(g, cn.inputs[1]).isWeight) return std::nullopt;
    return f;
  }
  if (isOp(g, c, "AveragePool")) {
    if (cn.attrInt("ceil_mode", 0) != 0 || cn.hasAttr("dilations")) return std::nullopt;
    if (cn.attrInt("count_include_pad", 0) == 0 &&
        std::any_of(own.begin(), own.end(), [](int64_t v) { return v != 0; }))
      return std::nullopt;
    return f;
  }
  if (isOp(g, c, "MaxPool")) {
    if (cn.outputs.size() > 1 && cn.outputs[1] >= 0) return std::nullopt;
    if (cn.attrInt("ceil_mode", 0) != 0 || !nonNegative(g, p.inputs[0])) return std::nullopt;
    for (int64_t d : cn.attrInts("dilations"))
      if (d != 1) return std::nullopt;
    const std::vector<int64_t> k = cn.attrInts("kernel_shape");
    if (k.size() != sp) return std::nullopt;
    for (size_t i = 0; i < sp; ++i)
      if (f.pads[i] >= k[i] || f.pads[sp + i] >= k[i]) return std::nullopt;
    return f;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------------------
// Transposes that cancel (onnxruntime/core/optimizer/transpose_optimizer: a Transpose of a Transpose).
//
// Pattern: Transpose(perm p) -> Transpose(perm q), the first one's output read by the second alone.
// Exact when: the composition is the identity, p[q[i]] == i for every axis (a missing perm reverses the
// axes; the rank must then be known).
// Produces: a copy of the first Transpose's input (no element moves).

namespace {

std::vector<int64_t> permOf(const Graph& g, OpId t) {
  const Node& n = node(g, t);
  if (n.hasAttr("perm")) return n.attrInts("perm");
  if (n.inputs.empty() || n.inputs[0] < 0 || !val(g, n.inputs[0]).shapeKnown) return {};
  const int64_t r = static_cast<int64_t>(val(g, n.inputs[0]).shape.size());
  std::vector<int64_t> p;
  for (int64_t i = r - 1; i >= 0; --i) p.push_back(i);
  return p;
}

}  // namespace

std::vector<int64_t> transposePerm(const Graph& g, OpId t) {
  return isOp(g, t, "Transpose") ? permOf(g, t) : std::vector<int64_t>{};
}

std::vector<OpId> transposePairOf(const Graph& g, OpId t1) {
  if (!isOp(g, t1, "Transpose") || node(g, t1).inputs.empty() || node(g, t1).inputs[0] < 0) return {};
  const OpId t2 = soleConsumer(g, out0(g, t1));
  if (!isOp(g, t2, "Transpose") || out0(g, t2) < 0) return {};
  const std::vector<int64_t> p = permOf(g, t1), q = permOf(g, t2);
  if (p.empty() || p.size() != q.size()) return {};
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] < 0 || q[i] >= static_cast<int64_t>(p.size()) || p[static_cast<size_t>(q[i])] != static_cast<int64_t>(i))
      return {};
  return {t1, t2};
}

// ---------------------------------------------------------------------------------------------------------
// A Transpose folded into MatMul (onnxruntime/core/optimizer/matmul_transpose_fusion.cc, which makes a
// FusedMatMul with transA/transB and, for a batch axis moved, transBatchA/transBatchB).
//
// Pattern: Transpose(any perm) -> MatMul, as either operand (or both), the Transpose's output read by that
// MatMul alone: the last-two-axes swap of k.transpose(-1, -2), and attention's head split
// Reshape -> Transpose(0,2,1,3) or (0,2,3,1) -> MatMul.
// Exact when: float32 operands of rank >= 2 with known shapes; the batch axes (the operands' leading axes,
// the shorter one padded with 1s in front) equal, or B's all 1: what oneDNN's matmul takes. A transpose
// only reinterprets the operand's strides, the products and sums are the same.
// Produces: one oneDNN matmul reading the Transpose's input through permuted strides (where oneDNN has
// only its reference code for those strides, the kernel reorders the operand first: one copy, as the
// Transpose made).

TransposeMatMul transposeMatMulOf(const Graph& g, OpId mm) {
  TransposeMatMul r;
  if (!isOp(g, mm, "MatMul")) return r;
  const Node& n = node(g, mm);
  if (n.inputs.size() != 2 || n.inputs[0] < 0 || n.inputs[1] < 0 || n.inputs[0] == n.inputs[1] || out0(g, mm) < 0)
    return r;
  for (ValueId v : {n.inputs[0], n.inputs[1], out0(g, mm)})
    if (!isF32(g, v) || !val(g, v).shapeKnown || val(g, v).shape.size() < 2) return r;
  std::vector<int64_t> as = val(g, n.inputs[0]).shape, bs = val(g, n.inputs[1]).shape;
  const size_t rank = std::max(as.size(), bs.size());
  as.insert(as.begin(), rank - as.size(), 1);
  bs.insert(bs.begin(), rank - bs.size(), 1);
  bool equal = true, bOnes = true;
  for (size_t i = 0; i + 2 < rank; ++i) {
    equal = equal && as[i] == bs[i];
    bOnes = bOnes && bs[i] == 1;
  }
  if (!equal && !bOnes) return r;
  auto folds = [&](ValueId v) -> OpId {
    const OpId t = val(g, v).producer;
    if (!isOp(g, t, "Transpose") || soleConsumer(g, v) != mm) return kNone;
    const Node& tn = node(g, t);
    if (tn.inputs.empty() || tn.inputs[0] < 0 || !isF32(g, tn.inputs[0])) return kNone;
    std::vector<int64_t> p = permOf(g, t);
    const size_t k = p.size();
    if (k < 2 || k != val(g, v).shape.size()) return kNone;
    std::sort(p.begin(), p.end());
    for (size_t i = 0; i < k; ++i)
      if (p[i] != static_cast<int64_t>(i)) return kNone;  // no permutation
    return t;
  };
  r.a = folds(n.inputs[0]);
  r.b = folds(n.inputs[1]);
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// Gelu written out (onnxruntime/core/optimizer/gelu_fusion.cc and fast_gelu_fusion.cc).
//
// Patterns (x may have other readers: it is the kernel's input; constants within 1e-5 relative, operands of Mul/Add in
// either order):
//  - erf form, as torch.onnx exports nn.GELU and transformers' gelu before opset 20:
//      e = Erf(Div(x, 1.4142135) | Mul(x, 0.70710678));  u = Add(e, 1)
//  - tanh form, GPT-2's gelu_new 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
//      c = Pow(x, 3);  a = Add(x, Mul(c, 0.044715));  u = Add(Tanh(Mul(a, 0.7978845608)), 1)
//  then the product of x, u and 0.5 in any of the three orders exporters write:
//      Mul(Mul(x, u), 0.5),  Mul(Mul(x, 0.5), u),  Mul(x, Mul(u, 0.5)).
// Exact when: float32; the intermediate tensors are read only inside the pattern and are no model
// outputs. The formula is the one oneDNN's gelu_erf / gelu_tanh compute.
// Produces: one oneDNN eltwise gelu_erf or gelu_tanh of x.

std::vector<OpId> geluOf(const Graph& g, ValueId x, bool* tanh) {
  if (x < 0 || !isF32(g, x) || val(g, x).isGraphOutput) return {};
  const std::vector<OpId>& cs = val(g, x).consumers;
  if (cs.size() < 2) return {};
  std::vector<OpId> ops;
  ValueId u = kNone;
  bool isTanh = false;
  // The erf core.
  for (OpId s : cs) {
    if (!scalarOp(g, s, "Div", x, std::sqrt(2.0)) && !scalarOp(g, s, "Mul", x, std::sqrt(0.5))) continue;
    const OpId e = soleConsumer(g, out0(g, s));
    if (!isOp(g, e, "Erf")) continue;
    const OpId a = soleConsumer(g, out0(g, e));
    if (!scalarOp(g, a, "Add", out0(g, e), 1.0)) continue;
    ops = {s, e, a};
    u = out0(g, a);
    break;
  }
  // The tanh core.
  if (u < 0) {
    for (OpId p : cs) {
      if (!scalarOp(g, p, "Pow", x, 3.0)) continue;
      const OpId m = soleConsumer(g, out0(g, p));
      if (!scalarOp(g, m, "Mul", out0(g, p), 0.044715)) continue;
      const OpId a = soleConsumer(g, out0(g, m));
      if (!isOp(g, a, "Add") || otherInput(g, a, out0(g, m)) != x) continue;
      const OpId m2 = soleConsumer(g, out0(g, a));
      if (!scalarOp(g, m2, "Mul", out0(g, a), std::sqrt(2.0 / M_PI))) continue;
      const OpId t = soleConsumer(g, out0(g, m2));
      if (!isOp(g, t, "Tanh")) continue;
      const OpId a2 = soleConsumer(g, out0(g, t));
      if (!scalarOp(g, a2, "Add", out0(g, t), 1.0)) continue;
      ops = {p, m, a, m2, t, a2};
      u = out0(g, a2);
      isTanh = true;
      break;
    }
  }
  if (u < 0) return {};
  // The product of x, u and 0.5: r is the Mul that reads x (x may have other readers: it is the input).
  const OpId uc = soleConsumer(g, u);
  if (uc < 0) return {};
  OpId last = kNone;
  bool found = false;
  for (OpId r : cs) {
    last = kNone;
    if (std::find(ops.begin(), ops.end(), r) != ops.end() || !isOp(g, r, "Mul")) continue;
    if (uc == r && otherInput(g, r, x) == u) {  // (x * u) * 0.5
      last = soleConsumer(g, out0(g, r));
      if (!scalarOp(g, last, "Mul", out0(g, r), 0.5)) continue;
      ops.push_back(r);
    } else if (scalarOp(g, r, "Mul", x, 0.5)) {  // (x * 0.5) * u
      last = soleConsumer(g, out0(g, r));
      if (last != uc || !isOp(g, last, "Mul") || otherInput(g, last, out0(g, r)) != u) continue;
      ops.push_back(r);
    } else if (scalarOp(g, uc, "Mul", u, 0.5) && otherInput(g, r, x) == out0(g, uc) &&
               soleConsumer(g, out0(g, uc)) == r) {  // x * (u * 0.5)
      ops.push_back(uc);
      last = r;
    } else {
      continue;
    }
    found = true;
    break;
  }
  if (!found || last < 0) return {};
  ops.push_back(last);
  if (!isF32(g, out0(g, last))) return {};
  std::sort(ops.begin(), ops.end());
  if (ops.back() != last || std::adjacent_find(ops.begin(), ops.end()) != ops.end()) return {};
  if (tanh) *tanh = isTanh;
  return ops;
}

// ---------------------------------------------------------------------------------------------------------
// LayerNorm written out (onnxruntime/core/optimizer/layer_norm_fusion.cc).
//
// Pattern (torch.onnx before opset 17, and Partex's own BERT and GPT-2 generators):
//   m = ReduceMean(x, axes=[-1], keepdims=1);  d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), axes=[-1], keepdims=1)
//   n = Div(d, Sqrt(Add(v, eps)))
//   y = Add(Mul(n, gamma), beta)   (the Mul and the Add each optional, operands in either order)
// Exact when: float32 x of known rank whose last axis has a known size D; x read by the ReduceMean and the
// Sub (and maybe others), d by the square and the Div alone, every other intermediate by its one successor, none a
// model output (x itself may have other readers); eps a scalar constant; gamma and beta constants of D values along the
// last axis (every other dim 1, rank at most x's, so y has x's shape). It is LayerNormalization(axis=-1, epsilon=eps):
// (x - mean) / sqrt(var + eps) * gamma + beta with the biased variance, the formula oneDNN computes.
// Produces: one oneDNN layer_normalization over the last axis.

namespace {

bool lastAxisMean(const Graph& g, OpId op, size_t rank) {
  if (!isOp(g, op, "ReduceMean")) return false;
  const Node& n = node(g, op);
  if (n.attrInt("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = n.attrInts("axes");
  if (!n.hasAttr("axes") && !(n.inputs.size() > 1 && constInts(g, n.inputs[1], axes))) return false;
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == static_cast<int64_t>(rank) - 1);
}

/// A weight of D float32 values along the last axis of a rank-`rank` tensor.
bool lastAxisWeight(const Graph& g, ValueId w, int64_t D, size_t rank) {
  if (w < 0 || !val(g, w).isWeight || !isF32(g, w) || !val(g, w).shapeKnown) return false;
  const auto& s = val(g, w).shape;
  if (s.empty() || s.size() > rank || s.back() != D) return false;
  return std::all_of(s.begin(), s.end() - 1, [](int64_t v) { return v == 1; });
}

}  // namespace

std::optional<LayerNormMatch> layerNormOf(const Graph& g, ValueId x) {
  if (x < 0 || !isF32(g, x) || !val(g, x).shapeKnown || val(g, x).shape.empty() || val(g, x).isGraphOutput)
    return std::nullopt;
  const size_t rank = val(g, x).shape.size();
  const int64_t D = val(g, x).shape.back();
  if (D <= 0) return std::nullopt;
  // x may have other readers (GPT-2's residual): it is the group's input. The mean's one reader is the Sub.
  OpId m = kNone, sub = kNone;
  for (OpId c : val(g, x).consumers) {
    if (!lastAxisMean(g, c, rank) || node(g, c).inputs[0] != x) continue;
    const OpId s = soleConsumer(g, out0(g, c));
    if (isOp(g, s, "Sub") && node(g, s).inputs.size() == 2 && node(g, s).inputs[0] == x &&
        node(g, s).inputs[1] == out0(g, c)) {
      m = c;
      sub = s;
      break;
    }
  }
  if (m < 0) return std::nullopt;
  const ValueId d = out0(g, sub);
  if (d < 0 || val(g, d).isGraphOutput || val(g, d).consumers.size() != 2) return std::nullopt;
  OpId sq = kNone, div = kNone;
  for (OpId c : val(g, d).consumers) {
    const Node& cn = node(g, c);
    if (scalarOp(g, c, "Pow", d, 2.0) ||
        (isOp(g, c, "Mul") && cn.inputs.size() == 2 && cn.inputs[0] == d && cn.inputs[1] == d))
      sq = c;
    else if (isOp(g, c, "Div") && cn.inputs.size() == 2 && cn.inputs[0] == d)
      div = c;
  }
  if (sq < 0 || div < 0) return std::nullopt;
  const OpId v = soleConsumer(g, out0(g, sq));
  if (!lastAxisMean(g, v, rank) || node(g, v).inputs[0] != out0(g, sq)) return std::nullopt;
  const OpId ae = soleConsumer(g, out0(g, v));
  double eps = 0;
  if (!isOp(g, ae, "Add") || !constScalar(g, otherInput(g, ae, out0(g, v)), eps)) return std::nullopt;
  const OpId sr = soleConsumer(g, out0(g, ae));
  if (!isOp(g, sr, "Sqrt") || soleConsumer(g, out0(g, sr)) != div || node(g, div).inputs[1] != out0(g, sr))
    return std::nullopt;
  LayerNormMatch r;
  r.ops = {m, sub, sq, v, ae, sr, div};
  r.eps = static_cast<float>(eps);
  ValueId cur = out0(g, div);
  OpId next = soleConsumer(g, cur);
  if (isOp(g, next, "Mul") && lastAxisWeight(g, otherInput(g, next, cur), D, rank)) {
    r.gamma = otherInput(g, next, cur);
    r.ops.push_back(next);
    cur = out0(g, next);
    next = soleConsumer(g, cur);
  }
  if (isOp(g, next, "Add") && lastAxisWeight(g, otherInput(g, next, cur), D, rank)) {
    r.beta = otherInput(g, next, cur);
    r.ops.push_back(next);
    cur = out0(g, next);
  }
  if (!isF32(g, cur)) return std::nullopt;
  const OpId last = r.ops.back();
  std::sort(r.ops.begin(), r.ops.end());
  if (r.ops.back() != last) return std::nullopt;
  return r;
}

// ---------------------------------------------------------------------------------------------------------

Rewrite rewriteOf(const Graph& g, const std::vector<OpId>& ops) {
  if (ops.size() < 2) return Rewrite::None;
  if (isOp(g, ops[0], "Pad")) {
    const auto f = padFoldOf(g, ops[0]);
    if (!f || f->into != ops[1]) return Rewrite::None;
    return isOp(g, ops[1], "Conv") ? Rewrite::PadIntoConv : Rewrite::PadIntoPool;
  }
  if (ops.size() == 2 && transposePairOf(g, ops[0]) == ops) return Rewrite::TransposePair;
  if (isOp(g, ops.back(), "MatMul")) {
    const TransposeMatMul t = transposeMatMulOf(g, ops.back());
    std::vector<OpId> want;
    for (OpId o : {t.a, t.b})
      if (o >= 0) want.push_back(o);
    std::sort(want.begin(), want.end());
    want.push_back(ops.back());
    if (want.size() > 1 && want == ops) return Rewrite::TransposeMatMul;
  }
  for (ValueId x : node(g, ops[0]).inputs) {
    if (x < 0) continue;
    if (geluOf(g, x) == ops) return Rewrite::Gelu;
    if (const auto ln = layerNormOf(g, x); ln && ln->ops == ops) return Rewrite::LayerNorm;
  }
  return Rewrite::None;
}

}  // namespace partex
