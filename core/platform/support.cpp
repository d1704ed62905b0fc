// Which operators a device can run: op type lists, then the device's constraints. Every refusal comes
// with a sentence that the GUI shows and that manual placements are validated against.
#include <algorithm>
#include <string>
#include <vector>

#include "platform/platform.h"

namespace partex {

namespace {

const std::string& displayName(const Device& d) {
  return d.name.empty() ? d.id : d.name;
}

bool refuse(std::string* reason, std::string text) {
  if (reason) *reason = std::move(text);
  return false;
}

std::string opList(const std::set<std::string>& ops) {
  constexpr size_t kShown = 8;
  std::string s;
  size_t i = 0;
  for (const auto& op : ops) {
    if (i == kShown) {
      s += ", ... (" + std::to_string(ops.size()) + " op types)";
      break;
    }
    if (i) s += ", ";
    s += op;
    ++i;
  }
  return s;
}

std::string withDescription(std::string text, const DeviceConstraint& c) {
  if (!c.description.empty()) text += " (" + c.description + ")";
  return text;
}

const Value* valueAt(const Graph& g, const std::vector<ValueId>& ids, size_t i) {
  if (i >= ids.size() || ids[i] < 0 || ids[i] >= static_cast<ValueId>(g.values.size())) return nullptr;
  return &g.values[static_cast<size_t>(ids[i])];
}

/// Dim `axis` of a value, or -1 when the value, its shape or that dim is unknown.
int64_t dimOf(const Value* v, size_t axis) {
  if (!v || !v->shapeKnown || axis >= v->shape.size()) return -1;
  return v->shape[axis] >= 0 ? v->shape[axis] : -1;
}

bool isConvLike(const std::string& op) {
  return op == "Conv" || op == "ConvInteger" || op == "QLinearConv" || op == "ConvTranspose" || op == "DeformConv";
}

bool isPooling(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "LpPool";
}

/// The weight input of a Conv-like op (QLinearConv keeps it in input 3).
const Value* convWeight(const Graph& g, const Node& n) {
  return valueAt(g, n.inputs, n.opType == "QLinearConv" ? 3 : 1);
}

std::string valueName(const Value* v) {
  return v ? "'" + v->name + "'" : "an absent input";
}

bool checkChannels(const Device& d, const Graph& g, const Node& n, const DeviceConstraint& c, std::string* reason) {
  const int64_t m = c.value;
  if (m <= 1) return true;  // Every count is a multiple of 1.
  const std::string& dev = displayName(d);
  auto notMultiple = [&](const char* which, int64_t ch) {
    return refuse(reason, withDescription(n.opType + " " + which + "channels " + std::to_string(ch) +
                                              " are not a multiple of " + std::to_string(m) + " on " + dev,
                                          c));
  };
  auto unknown = [&](const char* which, const Value* v) {
    return refuse(reason, dev + " needs " + n.opType + " " + which + "channels to be a multiple of " +
                              std::to_string(m) + ", but the shape of " + valueName(v) + " is unknown");
  };
  const Value* x = valueAt(g, n.inputs, 0);
  if (isConvLike(n.opType)) {
    int64_t in = dimOf(x, 1);
    if (in < 0) return unknown("input ", x);
    if (in % m != 0) return notMultiple("input ", in);
    const Value* w = convWeight(g, n);
    int64_t out = -1;
    if (n.opType == "ConvTranspose") {  // W is (C_in, C_out / group, k...).
      int64_t perGroup = dimOf(w, 1);
      if (perGroup >= 0) out = perGroup * std::max<int64_t>(1, n.attrInt("group", 1));
    } else {
      out = dimOf(w, 0);  // W is (C_out, C_in / group, k...).
    }
    const Value* y = valueAt(g, n.outputs, 0);
    if (out < 0) out = dimOf(y, 1);  // Weight shape unknown: the output tensor says the same.
    if (out < 0) return unknown("output ", w ? w : y);
    if (out % m != 0) return notMultiple("output ", out);
    return true;
  }
  // Other ops: NCHW layout, channels are dim 1 of the data input and of the output (rank >= 2 only).
  for (const Value* v : {x, valueAt(g, n.outputs, 0)}) {
    if (!v) continue;
    if (!v->shapeKnown) return unknown("", v);
    if (v->shape.size() < 2) continue;
    int64_t ch = dimOf(v, 1);
    if (ch < 0) return unknown("", v);
    if (ch % m != 0) return notMultiple("", ch);
  }
  return true;
}

bool checkKernel(const Device& d, const Graph& g, const Node& n, const DeviceConstraint& c, std::string* reason) {
  if (!isConvLike(n.opType) && !isPooling(n.opType)) return true;  // No kernel: nothing to check.
  std::vector<int64_t> k = n.attrInts("kernel_shape");
  if (k.empty() && isConvLike(n.opType)) {
    const Value* w = convWeight(g, n);
    if (w && w->shapeKnown && w->shape.size() > 2) k.assign(w->shape.begin() + 2, w->shape.end());
  }
  const std::string& dev = displayName(d);
  if (k.empty() || std::any_of(k.begin(), k.end(), [](int64_t v) { return v < 0; }))
    return refuse(reason, dev + " limits kernels to " + std::to_string(c.value) + ", but the kernel size of " +
                              n.opType + " '" + n.name + "' is unknown");
  int64_t biggest = *std::max_element(k.begin(), k.end());
  if (biggest <= c.value) return true;
  std::string dims;
  for (size_t i = 0; i < k.size(); ++i) dims += (i ? "x" : "") + std::to_string(k[i]);
  return refuse(reason, withDescription(n.opType + " kernel " + dims + " exceeds the largest kernel " +
                                            std::to_string(c.value) + " that " + dev + " runs",
                                        c));
}

bool checkDtypes(const Device& d, const Graph& g, const Node& n, const DeviceConstraint& c, std::string* reason) {
  std::vector<const Value*> vals;
  if (const Value* x = valueAt(g, n.inputs, 0)) vals.push_back(x);
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (const Value* y = valueAt(g, n.outputs, i)) vals.push_back(y);
  const std::string& dev = displayName(d);
  std::string allowed;
  for (size_t i = 0; i < c.dtypes.size(); ++i) allowed += (i ? ", " : "") + c.dtypes[i];
  for (const Value* v : vals) {
    if (v->dtype == DType::Undefined)
      return refuse(reason, dev + " runs only " + allowed + " data, but the dtype of '" + v->name + "' is unknown");
    if (std::find(c.dtypes.begin(), c.dtypes.end(), dtypeName(v->dtype)) == c.dtypes.end())
      return refuse(reason, withDescription(n.opType + " on " + dtypeName(v->dtype) + " ('" + v->name +
                                                "') is not supported by " + dev + ", which runs only " + allowed,
                                            c));
  }
  return true;
}

bool checkRank(const Device& d, const Graph& g, const Node& n, const DeviceConstraint& c, std::string* reason) {
  const std::string& dev = displayName(d);
  for (const auto* ids : {&n.inputs, &n.outputs}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      const Value* v = valueAt(g, *ids, i);
      if (!v) continue;
      if (!v->shapeKnown)
        return refuse(reason, dev + " limits tensors to rank " + std::to_string(c.value) + ", but the rank of '" +
                                  v->name + "' is unknown");
      auto rank = static_cast<int64_t>(v->shape.size());
      if (rank > c.value)
        return refuse(reason,
                      withDescription(n.opType + " uses a rank-" + std::to_string(rank) + " tensor ('" + v->name +
                                          "') but " + dev + " handles rank " + std::to_string(c.value) + " at most",
                                      c));
    }
  }
  return true;
}

}  // namespace

bool deviceSupports(const Device& d, const Graph& g, OpId op, std::string* reason) {
  if (op < 0 || op >= static_cast<OpId>(g.nodes.size()))
    return refuse(reason, "operator id " + std::to_string(op) + " is not in the graph");
  const Node& n = g.nodes[static_cast<size_t>(op)];
  const std::string& dev = displayName(d);
  if (!d.supportedOps.empty() && !d.supportedOps.count(n.opType))
    return refuse(reason, dev + " runs only " + opList(d.supportedOps) + " (not " + n.opType + ")");
  if (d.unsupportedOps.count(n.opType)) return refuse(reason, dev + " does not run " + n.opType);
  for (const DeviceConstraint& c : d.constraints) {
    if (!c.opTypes.empty() && std::find(c.opTypes.begin(), c.opTypes.end(), n.opType) == c.opTypes.end()) continue;
    bool ok = true;
    if (c.kind == "channels_multiple_of")
      ok = checkChannels(d, g, n, c, reason);
    else if (c.kind == "max_kernel")
      ok = checkKernel(d, g, n, c, reason);
    else if (c.kind == "dtypes")
      ok = checkDtypes(d, g, n, c, reason);
    else if (c.kind == "max_rank")
      ok = checkRank(d, g, n, c, reason);
    if (!ok) return false;
  }
  if (reason) reason->clear();
  return true;
}

}  // namespace partex
