#include "ir/fusion.h"

#include <optional>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ir/rewrites.h"

namespace partex {

namespace {

const Value& val(const Graph& g, ValueId v) {
  return g.values[static_cast<size_t>(v)];
}

bool isWeight(const Graph& g, ValueId v) {
  return v >= 0 && val(g, v).isWeight;
}

bool isF32(const Graph& g, ValueId v) {
  return v >= 0 && val(g, v).dtype == DType::Float32;
}

/// The channel axis of the anchor's output: the last one for Gemm and MatMul, 1 otherwise.
int64_t channelAxis(const Graph& g, const Node& anchor) {
  const Value& y = val(g, anchor.outputs[0]);
  return anchor.opType == "Gemm" || anchor.opType == "MatMul" ? static_cast<int64_t>(y.shape.size()) - 1 : 1;
}

/// The anchor's output channel count; -1 unknown.
int64_t outChannels(const Graph& g, const Node& anchor) {
  const Value& y = val(g, anchor.outputs[0]);
  if (!y.shapeKnown || y.shape.size() < 2) return -1;
  return y.shape[static_cast<size_t>(channelAxis(g, anchor))];
}

bool perChannelWeight(const Graph& g, ValueId w, const Node& anchor, int64_t channels);

/// A per-channel affine operator on a rank-4 activation: BatchNormalization with weight parameters, or
/// Mul/Add of an activation and a per-channel weight.
bool isAffineAnchor(const Graph& g, const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.outputs.empty() || n.outputs[0] < 0 || !isF32(g, n.outputs[0]) || n.inputs.empty()) return false;
  const Value& y = val(g, n.outputs[0]);
  if (!y.shapeKnown || y.shape.size() != 4) return false;
  const int64_t C = y.shape[1];
  if (n.opType == "BatchNormalization") {
    if (n.inputs.size() != 5 || isWeight(g, n.inputs[0]) || !isF32(g, n.inputs[0])) return false;
    for (size_t i = 1; i < 5; ++i)
      if (!isWeight(g, n.inputs[i]) || !isF32(g, n.inputs[i]) || val(g, n.inputs[i]).numElements() != C) return false;
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0 && !val(g, n.outputs[k]).consumers.empty()) return false;
    return true;
  }
  if ((n.opType == "Mul" || n.opType == "Add") && n.inputs.size() == 2) {
    const ValueId x = n.inputs[0], w = n.inputs[1];
    if (x < 0 || w < 0 || isWeight(g, x) || !isF32(g, x) || val(g, x).shape != y.shape) return false;
    return perChannelWeight(g, w, n, C);
  }
  return false;
}

bool isAnchor(const Graph& g, const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.outputs.empty() || n.outputs[0] < 0 || !isF32(g, n.outputs[0])) return false;
  if (n.inputs.size() < 2 || !isF32(g, n.inputs[0]) || !isF32(g, n.inputs[1])) return false;
  const Value& x = val(g, n.inputs[0]);
  if (!x.shapeKnown) return false;
  if (n.opType == "Conv") return x.shape.size() >= 3 && x.shape.size() <= 5 && isWeight(g, n.inputs[1]);
  if (n.opType == "Gemm") {
    const Value& b = val(g, n.inputs[1]);
    if (!isWeight(g, n.inputs[1]) || !b.shapeKnown || b.shape.size() != 2 || x.shape.size() != 2) return false;
    if (n.inputs.size() < 3 || n.inputs[2] < 0) return true;
    // C must be one value per output column (or a scalar): it becomes the bias.
    const Value& c = val(g, n.inputs[2]);
    const int64_t cols = n.attrInt("transB", 0) ? b.shape[0] : b.shape[1];
    return isWeight(g, n.inputs[2]) && isF32(g, n.inputs[2]) && c.shapeKnown &&
           (c.numElements() == 1 || (c.numElements() == cols && c.shape.back() == cols && c.shape.size() <= 2));
  }
  if (n.opType == "MatMul") {
    const Value& b = val(g, n.inputs[1]);
    return isWeight(g, n.inputs[1]) && b.shapeKnown && b.shape.size() == 2 && x.shape.size() == 2;
  }
  return false;
}

/// A weight that is a scalar or has one value per output channel, laid out so that it broadcasts along
/// the channel axis of the anchor's output (rank r, channel axis 1 for Conv, r-1 otherwise).
bool perChannelWeight(const Graph& g, ValueId w, const Node& anchor, int64_t channels) {
  if (!isWeight(g, w) || !isF32(g, w)) return false;
  const Value& v = val(g, w);
  if (!v.shapeKnown) return false;
  const Value& y = val(g, anchor.outputs[0]);
  const int64_t r = static_cast<int64_t>(y.shape.size());
  const int64_t axis = channelAxis(g, anchor);
  const int64_t n = v.numElements();
  if (n == 1) return static_cast<int64_t>(v.shape.size()) <= r;
  if (n != channels || static_cast<int64_t>(v.shape.size()) > r) return false;
  // Right-aligned: the dim of value `channels` must sit at the channel axis, every other dim 1.
  const int64_t off = r - static_cast<int64_t>(v.shape.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.shape.size()); ++i)
    if (v.shape[static_cast<size_t>(i)] != 1 && i + off != axis) return false;
  return true;
}

bool isActivation(const Graph& g, const Node& n) {
  // Not HardSigmoid: oneDNN 2.6's chain of two eltwise post-ops gave wrong values (docs/design-decisions.md).
  static const char* kOps[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSwish",
                               "Softplus", "Abs", "Sqrt", "Exp", "Clip"};
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return n.opType == o; })) return false;
  if (n.opType == "Clip")
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0 && (!isWeight(g, n.inputs[i]) || !isF32(g, n.inputs[i]) || val(g, n.inputs[i]).numElements() != 1))
        return false;
  return true;
}

/// Mul, Add, Sub or Div of the tensor `x` by a scalar float32 weight (x at either side for Mul and Add,
/// first for Sub and Div): one linear step alpha * x + beta.
bool scalarStep(const Graph& g, const Node& n, ValueId x) {
  if ((n.opType != "Mul" && n.opType != "Add" && n.opType != "Sub" && n.opType != "Div") || n.inputs.size() != 2)
    return false;
  const bool first = n.inputs[0] == x;
  if (!first && (n.inputs[1] != x || n.opType == "Sub" || n.opType == "Div")) return false;
  const ValueId w = first ? n.inputs[1] : n.inputs[0];
  return w >= 0 && isWeight(g, w) && isF32(g, w) && val(g, w).shapeKnown && val(g, w).numElements() == 1 &&
         val(g, w).shape.size() <= val(g, x).shape.size();
}

/// The only consumer of v, or kNone.
OpId soleConsumer(const Graph& g, ValueId v) {
  if (v < 0) return kNone;
  const Value& x = val(g, v);
  return x.consumers.size() == 1 && !x.isGraphOutput ? x.consumers[0] : kNone;
}

}  // namespace

namespace {

/// The value of a scalar float32 weight, or NaN.
double scalarWeight(const Graph& g, ValueId v) {
  if (v < 0 || !isWeight(g, v) || !isF32(g, v) || val(g, v).numElements() != 1 || !val(g, v).data) return std::nan("");
  const std::byte* p = val(g, v).data->data();
  if (!p) return std::nan("");
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
}

}  // namespace

std::vector<OpId> hardSwishOf(const Graph& g, ValueId x) {
  if (x < 0 || val(g, x).isGraphOutput || val(g, x).consumers.size() != 2) return {};
  auto op = [&](OpId o) -> const Node& { return g.nodes[static_cast<size_t>(o)]; };
  auto other = [&](const Node& n, ValueId a) { return n.inputs.size() == 2 ? (n.inputs[0] == a ? n.inputs[1] : n.inputs[0]) : kNone; };
  OpId add = kNone, mul = kNone;
  for (OpId c : val(g, x).consumers) {
    if (op(c).opType == "Add" && op(c).domain.empty()) add = c;
    if (op(c).opType == "Mul" && op(c).domain.empty()) mul = c;
  }
  if (add < 0 || mul < 0 || !near(scalarWeight(g, other(op(add), x)), 3.0)) return {};
  const OpId clip = soleConsumer(g, op(add).outputs[0]);
  if (clip < 0 || op(clip).opType != "Clip" || !op(clip).domain.empty()) return {};
  const Node& cn = op(clip);
  double lo = cn.attrFloat("min", std::nan("")), hi = cn.attrFloat("max", std::nan(""));
  if (!cn.hasAttr("min") && !cn.hasAttr("max")) {
    lo = cn.inputs.size() > 1 ? scalarWeight(g, cn.inputs[1]) : std::nan("");
    hi = cn.inputs.size() > 2 ? scalarWeight(g, cn.inputs[2]) : std::nan("");
  }
  if (!near(lo, 0.0) || !near(hi, 6.0) || cn.outputs.empty()) return {};
  if (soleConsumer(g, cn.outputs[0]) != mul || other(op(mul), cn.outputs[0]) != x) return {};
  const OpId last = soleConsumer(g, op(mul).outputs[0]);
  if (last < 0 || !op(last).domain.empty() || op(last).inputs.size() != 2 || op(last).inputs[0] != op(mul).outputs[0])
    return {};
  const double k = scalarWeight(g, op(last).inputs[1]);
  if (!((op(last).opType == "Div" && near(k, 6.0)) || (op(last).opType == "Mul" && near(k, 1.0 / 6.0)))) return {};
  if (op(last).outputs.empty() || op(last).outputs[0] < 0 || !isF32(g, op(last).outputs[0])) return {};
  return {add, clip, mul, last};
}

int64_t channelShuffle(const Graph& g, OpId reshape, OpId* last) {
  auto isOp = [&](OpId op, const char* t) {
    return op >= 0 && g.nodes[static_cast<size_t>(op)].opType == t && g.nodes[static_cast<size_t>(op)].domain.empty();
  };
  if (!isOp(reshape, "Reshape")) return 0;
  const Node& r1 = g.nodes[static_cast<size_t>(reshape)];
  if (r1.inputs.empty() || r1.outputs.empty() || !isF32(g, r1.inputs[0]) || r1.outputs[0] < 0) return 0;
  const Value& x = val(g, r1.inputs[0]);
  const Value& y = val(g, r1.outputs[0]);
  if (!x.shapeKnown || !y.shapeKnown || x.shape.size() != 4 || y.shape.size() != 5) return 0;
  const int64_t groups = y.shape[1];
  if (y.shape[0] != x.shape[0] || groups <= 1 || y.shape[1] * y.shape[2] != x.shape[1] || y.shape[3] != x.shape[2] ||
      y.shape[4] != x.shape[3])
    return 0;
  const OpId t = soleConsumer(g, r1.outputs[0]);
  if (!isOp(t, "Transpose")) return 0;
  const Node& tn = g.nodes[static_cast<size_t>(t)];
  if (tn.attrInts("perm") != std::vector<int64_t>{0, 2, 1, 3, 4} || tn.outputs.empty()) return 0;
  const OpId r2 = soleConsumer(g, tn.outputs[0]);
  if (!isOp(r2, "Reshape")) return 0;
  const Node& r2n = g.nodes[static_cast<size_t>(r2)];
  if (r2n.outputs.empty() || r2n.outputs[0] < 0) return 0;
  const Value& z = val(g, r2n.outputs[0]);
  if (!z.shapeKnown || z.shape != x.shape) return 0;
  if (last) *last = r2;
  return groups;
}

namespace {

/// The rewrite group (ir/rewrites.h) whose first operator in node order is `a`, other than Pad into Conv
/// (which starts a Conv chain below): Pad into pooling, Transposes that cancel, Transposes into MatMul,
/// Gelu and LayerNorm written out.
std::optional<FusedGroup> rewriteGroupAt(const Graph& g, OpId a) {
  const Node& n = g.nodes[static_cast<size_t>(a)];
  if ((!n.domain.empty() && n.domain != "ai.onnx") || n.outputs.empty() || n.outputs[0] < 0) return std::nullopt;
  auto outOf = [&](OpId op) { return g.nodes[static_cast<size_t>(op)].outputs[0]; };
  FusedGroup grp;
  if (n.opType == "Pad") {
    const auto f = padFoldOf(g, a);
    if (!f || g.nodes[static_cast<size_t>(f->into)].opType == "Conv") return std::nullopt;
    grp.ops = {a, f->into};
    grp.inputs = n.inputs;
    grp.output = outOf(f->into);
    return grp;
  }
  if (n.opType == "Transpose") {
    if (auto pair = transposePairOf(g, a); !pair.empty()) {
      grp.ops = pair;
      grp.inputs = {n.inputs[0]};
      grp.output = outOf(pair[1]);
      return grp;
    }
    const Value& y = val(g, n.outputs[0]);
    if (y.consumers.size() != 1) return std::nullopt;
    const OpId mm = y.consumers[0];
    const Node& m = g.nodes[static_cast<size_t>(mm)];
    if (m.opType != "MatMul" || isAnchor(g, m)) return std::nullopt;
    const TransposeMatMul t = transposeMatMulOf(g, mm);
    std::vector<OpId> ops;
    for (OpId o : {t.a, t.b})
      if (o >= 0) ops.push_back(o);
    std::sort(ops.begin(), ops.end());
    if (ops.empty() || ops[0] != a) return std::nullopt;
    ops.push_back(mm);
    grp.ops = ops;
    grp.inputs = {t.a >= 0 ? g.nodes[static_cast<size_t>(t.a)].inputs[0] : m.inputs[0],
                  t.b >= 0 ? g.nodes[static_cast<size_t>(t.b)].inputs[0] : m.inputs[1]};
    grp.output = outOf(mm);
    return grp;
  }
  for (ValueId x : n.inputs) {
    if (x < 0) continue;
    if (auto ops = geluOf(g, x); !ops.empty() && ops[0] == a) {
      grp.ops = ops;
      grp.inputs = {x};
      grp.output = outOf(ops.back());
      return grp;
    }
    if (auto ln = layerNormOf(g, x); ln && ln->ops[0] == a) {
      grp.ops = ln->ops;
      grp.inputs = {x, ln->gamma, ln->beta};
      grp.output = outOf(ln->ops.back());
      return grp;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<FusedGroup> fusedGroups(const Graph& g, const std::vector<int>& placement) {
  std::vector<FusedGroup> groups;
  std::vector<bool> outputOf(g.values.size(), false);
  for (ValueId o : g.outputs)
    if (o >= 0) outputOf[static_cast<size_t>(o)] = true;
  auto dev = [&](OpId op) { return placement.empty() ? 0 : placement[static_cast<size_t>(op)]; };
  std::vector<bool> taken(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (taken[i]) continue;
    if (auto rw = rewriteGroupAt(g, static_cast<OpId>(i))) {
      bool ok = true;
      for (OpId op : rw->ops) ok = ok && !taken[static_cast<size_t>(op)] && dev(op) == dev(static_cast<OpId>(i));
      if (ok) {
        for (OpId op : rw->ops) taken[static_cast<size_t>(op)] = true;
        groups.push_back(std::move(*rw));
        continue;
      }
    }
    // A Pad that folds into a Conv anchor (ir/rewrites.h) starts that Conv's group.
    size_t a = i;
    OpId padPrefix = kNone;
    if (g.nodes[i].opType == "Pad") {
      const auto f = padFoldOf(g, static_cast<OpId>(i));
      if (f && g.nodes[static_cast<size_t>(f->into)].opType == "Conv" &&
          isAnchor(g, g.nodes[static_cast<size_t>(f->into)]) && !taken[static_cast<size_t>(f->into)] &&
          dev(f->into) == dev(static_cast<OpId>(i))) {
        padPrefix = static_cast<OpId>(i);
        a = static_cast<size_t>(f->into);
      }
    }
    const Node& anchor = g.nodes[a];
    OpId shuffleEnd = kNone;
    if (!taken[a] && channelShuffle(g, static_cast<OpId>(a), &shuffleEnd) > 0) {
      const OpId t = val(g, anchor.outputs[0]).consumers[0];
      if (dev(t) == dev(static_cast<OpId>(a)) && dev(shuffleEnd) == dev(static_cast<OpId>(a))) {
        FusedGroup grp;
        grp.ops = {static_cast<OpId>(a), t, shuffleEnd};
        grp.inputs = anchor.inputs;
        const Node& r2 = g.nodes[static_cast<size_t>(shuffleEnd)];
        for (size_t i = 1; i < r2.inputs.size(); ++i) grp.inputs.push_back(r2.inputs[i]);
        grp.output = r2.outputs[0];
        for (OpId op : grp.ops) taken[static_cast<size_t>(op)] = true;
        groups.push_back(std::move(grp));
        continue;
      }
    }
    // A per-channel affine anchor takes only affine steps and simple activations (one pass over memory).
    const bool affineOnly = !isAnchor(g, anchor);
    if (taken[a] || (affineOnly && !isAffineAnchor(g, anchor))) continue;
    const int64_t channels = outChannels(g, anchor);
    FusedGroup grp;
    if (padPrefix >= 0) {
      grp.ops.push_back(padPrefix);
      grp.inputs = g.nodes[static_cast<size_t>(padPrefix)].inputs;
      grp.inputs.insert(grp.inputs.end(), anchor.inputs.begin() + 1, anchor.inputs.end());
    } else {
      grp.inputs = anchor.inputs;
    }
    grp.ops.push_back(static_cast<OpId>(a));
    ValueId cur = anchor.outputs[0];
    bool foldable = true, summed = false;
    // oneDNN 2.6 runs two eltwise post-ops of one algorithm with the first one's parameters (Relu then
    // LeakyRelu, two Clips, two linears: wrong values), so a group holds each algorithm once; a run of
    // consecutive scalar steps is one linear post-op.
    std::vector<std::string> algs;
    bool lastScalar = false;
    auto takeAlg = [&](const std::string& alg) {
      if (std::find(algs.begin(), algs.end(), alg) != algs.end()) return false;
      algs.push_back(alg);
      return true;
    };
    for (;;) {
      const Value& cv = val(g, cur);
      if (outputOf[static_cast<size_t>(cur)]) break;
      // HardSwish written out: four operators as one step, their constants checked here.
      if (!affineOnly) {
        const auto hs = hardSwishOf(g, cur);
        bool sameDev = !hs.empty();
        for (OpId o : hs) sameDev = sameDev && !taken[static_cast<size_t>(o)] && dev(o) == dev(static_cast<OpId>(a));
        if (sameDev && takeAlg("HardSwish")) {
          lastScalar = false;
          grp.ops.insert(grp.ops.end(), hs.begin(), hs.end());
          foldable = false;
          cur = g.nodes[static_cast<size_t>(hs.back())].outputs[0];
          continue;
        }
      }
      // x * Sigmoid(x) (SiLU / swish): two operators that read the current tensor, as one step.
      if (cv.consumers.size() == 2 && !affineOnly) {
        OpId sig = kNone, mul = kNone;
        for (OpId c : cv.consumers) {
          const Node& cn = g.nodes[static_cast<size_t>(c)];
          if (cn.opType == "Sigmoid" && cn.domain.empty()) sig = c;
          if (cn.opType == "Mul" && cn.domain.empty()) mul = c;
        }
        if (sig >= 0 && mul >= 0 && !taken[static_cast<size_t>(sig)] && !taken[static_cast<size_t>(mul)] &&
            dev(sig) == dev(static_cast<OpId>(a)) && dev(mul) == dev(static_cast<OpId>(a))) {
          const Node& sn = g.nodes[static_cast<size_t>(sig)];
          const Node& mn = g.nodes[static_cast<size_t>(mul)];
          const ValueId so = sn.outputs.empty() ? kNone : sn.outputs[0];
          if (so >= 0 && !outputOf[static_cast<size_t>(so)] && val(g, so).consumers.size() == 1 &&
              mn.inputs.size() == 2 && ((mn.inputs[0] == cur && mn.inputs[1] == so) || (mn.inputs[1] == cur && mn.inputs[0] == so)) &&
              !mn.outputs.empty() && mn.outputs[0] >= 0 && isF32(g, mn.outputs[0]) && takeAlg("swish")) {
            lastScalar = false;
            grp.ops.push_back(sig);
            grp.ops.push_back(mul);
            foldable = false;
            cur = mn.outputs[0];
            continue;
          }
        }
        break;
      }
      if (cv.consumers.size() != 1) break;
      const OpId next = cv.consumers[0];
      const Node& n = g.nodes[static_cast<size_t>(next)];
      if (taken[static_cast<size_t>(next)] || dev(next) != dev(static_cast<OpId>(a))) break;
      if (!n.domain.empty() && n.domain != "ai.onnx") break;
      if (n.outputs.empty() || n.outputs[0] < 0 || !isF32(g, n.outputs[0])) break;
      // The node's other outputs must be unused (BatchNormalization's training outputs).
      bool extraOut = false;
      for (size_t k = 1; k < n.outputs.size(); ++k)
        if (n.outputs[k] >= 0 && !val(g, n.outputs[k]).consumers.empty()) extraOut = true;
      if (extraOut) break;
      // Every input other than the chained one, and where the chained one sits.
      std::vector<ValueId> others;
      int chainedAt = -1, chainedCount = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i] == cur) {
          ++chainedCount;
          chainedAt = static_cast<int>(i);
        } else {
          others.push_back(n.inputs[i]);
        }
      }
      if (chainedCount != 1) break;
      bool ok = false;
      if (n.opType == "BatchNormalization") {
        ok = foldable && chainedAt == 0 && n.inputs.size() == 5 && channels > 0;
        for (size_t i = 1; ok && i < 5; ++i) {
          const Value& p = val(g, n.inputs[i]);
          ok = isWeight(g, n.inputs[i]) && isF32(g, n.inputs[i]) && p.numElements() == channels &&
               p.shape.size() == 1 && channelAxis(g, anchor) == 1;
        }
      } else if ((n.opType == "Mul" || n.opType == "Add") && n.inputs.size() == 2 && foldable &&
                 perChannelWeight(g, others[0], anchor, channels)) {
        ok = true;
      } else if (!foldable && !affineOnly && scalarStep(g, n, cur) && (lastScalar || takeAlg("linear"))) {
        ok = true;  // after an activation: a linear post-op (PP-LCNet's learnable affine block)
      } else if (affineOnly) {
        ok = (n.opType == "Relu" || n.opType == "LeakyRelu" || (n.opType == "Clip" && isActivation(g, n))) &&
             takeAlg(n.opType == "LeakyRelu" ? std::string("Relu") : n.opType);
        foldable = false;
      } else if ((n.opType == "Add" || n.opType == "Sum") && n.inputs.size() == 2 && !summed && others[0] >= 0 &&
                 !isWeight(g, others[0]) && isF32(g, others[0])) {
        const Value& o = val(g, others[0]);
        ok = o.shapeKnown && cv.shapeKnown && o.shape == cv.shape;
        if (ok) {
          summed = true;
          foldable = false;
        }
      } else if (isActivation(g, n)) {
        ok = takeAlg(n.opType == "LeakyRelu" ? std::string("Relu") : n.opType);
        foldable = false;
      }
      if (!ok) break;
      lastScalar = !foldable && !affineOnly && scalarStep(g, n, cur) && n.opType != "Sum";
      grp.ops.push_back(next);
      grp.inputs.insert(grp.inputs.end(), others.begin(), others.end());
      cur = n.outputs[0];
    }
    if (grp.ops.size() < 2) continue;
    grp.output = cur;
    for (OpId op : grp.ops) taken[static_cast<size_t>(op)] = true;
    groups.push_back(std::move(grp));
  }
  return groups;
}

std::vector<int> groupOfOps(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::vector<int> of(g.nodes.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i)
    for (OpId op : groups[i].ops) of[static_cast<size_t>(op)] = static_cast<int>(i);
  return of;
}

bool runsAsAlias(const Graph& g, OpId op) {
  if (op < 0 || static_cast<size_t>(op) >= g.nodes.size()) return false;
  const Node& n = g.nodes[static_cast<size_t>(op)];
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.opType != "Identity" && n.opType != "Dropout") return false;
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  // Dropout: training_mode given (even false: a run-time input) or a mask somebody reads keeps the kernel.
  if (n.opType == "Dropout") {
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) return false;
    if (n.attrInt("is_test", 1) == 0 && g.opsetVersion < 7) return false;
    for (size_t k = 1; k < n.outputs.size(); ++k) {
      if (n.outputs[k] < 0) continue;
      const Value& m = g.values[static_cast<size_t>(n.outputs[k])];
      if (m.isGraphOutput || !m.consumers.empty()) return false;
    }
  } else if (n.outputs.size() != 1) {
    return false;
  }
  const Value& in = g.values[static_cast<size_t>(n.inputs[0])];
  const Value& out = g.values[static_cast<size_t>(n.outputs[0])];
  return in.producer >= 0 && !out.isGraphOutput && !out.isGraphInput && in.dtype == out.dtype;
}

// ---- The epilogue rule of accelerator backends (epilogueChain) ----------------------------------------

namespace {

bool onnxOp(const Node& n, std::initializer_list<const char*> types) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  for (const char* t : types)
    if (n.opType == t) return true;
  return false;
}

bool staticShapeOf(const Value& v) {
  if (!v.shapeKnown) return false;
  for (int64_t d : v.shape)
    if (d < 0) return false;
  return true;
}

/// The one consumer of `v` when it has exactly one, reading it once, `v` is not a model output, and (with
/// a placement) the consumer is on device `dev`; else kNone.
OpId soleConsumerOn(const Graph& g, ValueId v, const std::vector<int>* placement, int dev) {
  if (v < 0) return kNone;
  const Value& x = val(g, v);
  if (x.isGraphOutput || x.consumers.size() != 1) return kNone;
  const OpId c = x.consumers[0];
  if (placement && !placement->empty() && (*placement)[static_cast<size_t>(c)] != dev) return kNone;
  int reads = 0;
  for (ValueId in : g.nodes[static_cast<size_t>(c)].inputs) reads += in == v;
  return reads == 1 ? c : kNone;
}

/// A float32 weight of static shape holding one value per channel (axis 1) of `out`, or a scalar.
bool perChannelOf(const Graph& g, ValueId w, const Value& out) {
  if (w < 0) return false;
  const Value& v = val(g, w);
  if (!v.isWeight || v.dtype != DType::Float32 || !staticShapeOf(v) || v.shape.size() > out.shape.size()) return false;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    const size_t axis = d + out.shape.size() - v.shape.size();
    if (v.shape[d] != 1 && !(axis == 1 && v.shape[d] == out.shape[1])) return false;
  }
  return true;
}

}  // namespace

bool isEpilogueActivation(const Graph& g, const Node& n) {
  if (onnxOp(n, {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Softplus"})) return true;
  if (!onnxOp(n, {"Clip"})) return false;
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {  // bounds: attributes, or constant inputs
    if (n.inputs[i] < 0) continue;
    const Value& b = val(g, n.inputs[i]);
    if (!b.isWeight && b.intData.empty()) return false;
  }
  return true;
}

std::vector<OpId> epilogueChain(const Graph& g, OpId op, const std::vector<int>* placement,
                                const std::function<bool(OpId)>& runs) {
  std::vector<OpId> chain{op};
  if (!runs(op)) return chain;
  const Node& a = g.nodes[static_cast<size_t>(op)];
  if (a.outputs.empty()) return chain;
  const int dev = placement && !placement->empty() ? (*placement)[static_cast<size_t>(op)] : 0;
  ValueId cur = a.outputs[0];
  auto next = [&]() -> OpId {
    const OpId c = soleConsumerOn(g, cur, placement, dev);
    return c != kNone && runs(c) ? c : kNone;
  };
  auto activation = [&] {
    const OpId c = next();
    if (c != kNone && g.nodes[static_cast<size_t>(c)].inputs[0] == cur &&
        isEpilogueActivation(g, g.nodes[static_cast<size_t>(c)]))
      chain.push_back(c);
  };
  if (onnxOp(a, {"Conv"})) {
    // 1. Affine steps folded into the filter and bias.
    for (OpId c = next(); c != kNone; c = next()) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      bool fold = false;
      if (onnxOp(n, {"BatchNormalization"}) && n.inputs[0] == cur && !n.outputs.empty() && n.inputs.size() >= 5) {
        fold = true;
        for (size_t i = 1; i < 5; ++i) fold = fold && n.inputs[i] >= 0 && val(g, n.inputs[i]).isWeight;
      } else if (onnxOp(n, {"Mul", "Add"}) && n.inputs.size() == 2) {
        fold = perChannelOf(g, n.inputs[0] == cur ? n.inputs[1] : n.inputs[0], val(g, cur));
      } else if (onnxOp(n, {"Sub", "Div"}) && n.inputs.size() == 2 && n.inputs[0] == cur) {
        fold = perChannelOf(g, n.inputs[1], val(g, cur));
      }
      if (!fold || val(g, n.outputs[0]).shape != val(g, cur).shape) break;
      chain.push_back(c);
      cur = n.outputs[0];
    }
    // 2. A residual Add of an activation of the same shape.
    if (OpId c = next(); c != kNone) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (onnxOp(n, {"Add", "Sum"}) && n.inputs.size() == 2) {
        const ValueId other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
        if (other >= 0 && other != cur && isF32(g, other) && val(g, other).shape == val(g, cur).shape &&
            val(g, n.outputs[0]).shape == val(g, cur).shape) {
          chain.push_back(c);
          cur = n.outputs[0];
        }
      }
    }
    activation();  // 3.
  } else if (onnxOp(a, {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "BatchNormalization", "Gemm", "MatMul"})) {
    activation();
  }
  return chain;
}

bool runsAsView(const Graph& g, OpId op) {
  if (op < 0 || static_cast<size_t>(op) >= g.nodes.size() || runsAsAlias(g, op)) return false;
  const Node& n = g.nodes[static_cast<size_t>(op)];
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  const Value& in = g.values[static_cast<size_t>(n.inputs[0])];
  const Value& out = g.values[static_cast<size_t>(n.outputs[0])];
  return !out.isGraphOutput && !out.isGraphInput && in.dtype == out.dtype;
}

}  // namespace partex
