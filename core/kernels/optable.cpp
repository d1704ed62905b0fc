// The plain operator table, its one-shot runner (constant folding) and the check helpers every kernel
// file shares.

#include <exception>

#include "kernels/ops.h"

namespace partex::cpu {

const std::vector<OpEntry>& plainOpTable() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    addElementwiseOps(t);
    addShapeOps(t);
    addReduceOps(t);
    addMiscOps(t);
    addExtraOps(t);
    addNmsOps(t);
    return t;
  }();
  return table;
}

const OpEntry* findPlainEntry(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  for (const OpEntry& e : plainOpTable())
    if (e.opType == n.opType) return &e;
  return nullptr;
}

Status runPlainKernel(const Graph& g, OpId op, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  if (op < 0 || op >= static_cast<OpId>(g.nodes.size())) return makeError("no such operator");
  const Node& n = g.nodes[static_cast<size_t>(op)];
  const OpEntry* e = findPlainEntry(n);
  if (!e) return makeError(n.opType, ": no plain kernel");
  try {
    if (std::string why = e->check(g, n); !why.empty()) return makeError(n.opType, ": ", why);
    auto k = e->make(g, n);
    if (!k) return makeError(n.opType, ": ", k.message());
    std::vector<const Tensor*> ins = in;
    ins.resize(n.inputs.size(), nullptr);
    out.resize(n.outputs.size());
    return (*k)->run(ExecContext{}, ins, out);
  } catch (const std::exception& ex) {
    return makeError(n.opType, ": ", ex.what());
  }
}

DType inDType(const Graph& g, const Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] < 0 || n.inputs[i] >= static_cast<ValueId>(g.values.size()))
    return DType::Undefined;
  return g.values[static_cast<size_t>(n.inputs[i])].dtype;
}

DType outDType(const Graph& g, const Node& n, size_t i) {
  if (i >= n.outputs.size() || n.outputs[i] < 0 || n.outputs[i] >= static_cast<ValueId>(g.values.size()))
    return DType::Undefined;
  return g.values[static_cast<size_t>(n.outputs[i])].dtype;
}

bool hasIn(const Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] >= 0;
}

std::string checkDTypes(const Graph& g, const Node& n, const std::vector<DType>& allowed) {
  auto ok = [&](DType t) {
    for (DType a : allowed)
      if (a == t) return true;
    return false;
  };
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (hasIn(n, i) && !ok(inDType(g, n, i)))
      return std::string("input ") + std::to_string(i) + " has dtype " + dtypeName(inDType(g, n, i));
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0 && !ok(outDType(g, n, i)))
      return std::string("output ") + std::to_string(i) + " has dtype " + dtypeName(outDType(g, n, i));
  return "";
}

}  // namespace partex::cpu
