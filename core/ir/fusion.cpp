#include "ir/fusion.h"

#include <algorithm>

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

/// The anchor's output channel count (Conv: dim 1 of its output; Gemm/MatMul: the last dim); -1 unknown.
int64_t outChannels(const Graph& g, const Node& anchor) {
  const Value& y = val(g, anchor.outputs[0]);
  if (!y.shapeKnown || y.shape.size() < 2) return -1;
  return anchor.opType == "Conv" ? y.shape[1] : y.shape.back();
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
  const int64_t axis = anchor.opType == "Conv" ? 1 : r - 1;
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
  static const char* kOps[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSigmoid", "HardSwish",
                               "Softplus", "Abs", "Sqrt", "Exp", "Clip"};
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return n.opType == o; })) return false;
  if (n.opType == "Clip")
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0 && (!isWeight(g, n.inputs[i]) || !isF32(g, n.inputs[i]) || val(g, n.inputs[i]).numElements() != 1))
        return false;
  return true;
}

}  // namespace

std::vector<FusedGroup> fusedGroups(const Graph& g, const std::vector<int>& placement) {
  std::vector<FusedGroup> groups;
  std::vector<bool> outputOf(g.values.size(), false);
  for (ValueId o : g.outputs)
    if (o >= 0) outputOf[static_cast<size_t>(o)] = true;
  auto dev = [&](OpId op) { return placement.empty() ? 0 : placement[static_cast<size_t>(op)]; };
  std::vector<bool> taken(g.nodes.size(), false);
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    const Node& anchor = g.nodes[a];
    if (taken[a] || !isAnchor(g, anchor)) continue;
    const int64_t channels = outChannels(g, anchor);
    FusedGroup grp;
    grp.ops.push_back(static_cast<OpId>(a));
    grp.inputs = anchor.inputs;
    ValueId cur = anchor.outputs[0];
    bool foldable = true, summed = false;
    for (;;) {
      const Value& cv = val(g, cur);
      if (outputOf[static_cast<size_t>(cur)] || cv.consumers.size() != 1) break;
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
               p.shape.size() == 1 && anchor.opType == "Conv";
        }
      } else if ((n.opType == "Mul" || n.opType == "Add") && n.inputs.size() == 2 && foldable &&
                 perChannelWeight(g, others[0], anchor, channels)) {
        ok = true;
      } else if ((n.opType == "Add" || n.opType == "Sum") && n.inputs.size() == 2 && !summed && others[0] >= 0 &&
                 !isWeight(g, others[0]) && isF32(g, others[0])) {
        const Value& o = val(g, others[0]);
        ok = o.shapeKnown && cv.shapeKnown && o.shape == cv.shape;
        if (ok) {
          summed = true;
          foldable = false;
        }
      } else if (isActivation(g, n)) {
        ok = true;
        foldable = false;
      }
      if (!ok) break;
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

}  // namespace partex
