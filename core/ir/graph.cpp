#include "ir/graph.h"

#include <algorithm>
#include <set>

namespace partex {

int64_t dtypeSize(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8:
      return 1;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16:
    case DType::UInt16:
      return 2;
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
    case DType::Undefined:
      return 4;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
    case DType::Complex64:
    case DType::String:
      return 8;
    case DType::Complex128:
      return 16;
  }
  return 4;
}

namespace {
struct DTypeName {
  DType t;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::Undefined, "undefined"}, {DType::Float32, "float32"},     {DType::UInt8, "uint8"},
    {DType::Int8, "int8"},           {DType::UInt16, "uint16"},       {DType::Int16, "int16"},
    {DType::Int32, "int32"},         {DType::Int64, "int64"},         {DType::String, "string"},
    {DType::Bool, "bool"},           {DType::Float16, "float16"},     {DType::Float64, "float64"},
    {DType::UInt32, "uint32"},       {DType::UInt64, "uint64"},       {DType::Complex64, "complex64"},
    {DType::Complex128, "complex128"}, {DType::BFloat16, "bfloat16"},
};
}  // namespace

const char* dtypeName(DType t) {
  for (const auto& n : kDTypeNames)
    if (n.t == t) return n.name;
  return "undefined";
}

DType dtypeFromName(const std::string& name) {
  for (const auto& n : kDTypeNames)
    if (name == n.name) return n.t;
  return DType::Undefined;
}

int64_t Value::numElements() const {
  if (!shapeKnown) return -1;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

int64_t Value::bytes() const {
  int64_t n = numElements();
  if (n < 0) return 0;
  if (quant != QuantType::None) {
    const int64_t q = quantBytes(quant, n);
    if (q >= 0) return q;
  }
  return n * dtypeSize(dtype);
}

int64_t Node::attrInt(const std::string& key, int64_t def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (auto p = std::get_if<int64_t>(&it->second.value)) return *p;
  return def;
}

double Node::attrFloat(const std::string& key, double def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (auto p = std::get_if<double>(&it->second.value)) return *p;
  if (auto p = std::get_if<int64_t>(&it->second.value)) return static_cast<double>(*p);
  return def;
}

std::string Node::attrString(const std::string& key, const std::string& def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (auto p = std::get_if<std::string>(&it->second.value)) return *p;
  return def;
}

std::vector<int64_t> Node::attrInts(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return {};
  if (auto p = std::get_if<std::vector<int64_t>>(&it->second.value)) return *p;
  if (auto p = std::get_if<int64_t>(&it->second.value)) return {*p};
  return {};
}

ValueId Graph::addValue(Value v) {
  auto id = static_cast<ValueId>(values.size());
  valueIndex_[v.name] = id;
  values.push_back(std::move(v));
  return id;
}

OpId Graph::addNode(Node n) {
  auto id = static_cast<OpId>(nodes.size());
  nodeIndex_[n.name] = id;
  nodes.push_back(std::move(n));
  return id;
}

ValueId Graph::findValue(const std::string& name) const {
  auto it = valueIndex_.find(name);
  return it == valueIndex_.end() ? kNone : it->second;
}

OpId Graph::findNode(const std::string& name) const {
  auto it = nodeIndex_.find(name);
  return it == nodeIndex_.end() ? kNone : it->second;
}

void Graph::rebuildIndex() {
  valueIndex_.clear();
  nodeIndex_.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    values[i].producer = kNone;
    values[i].consumers.clear();
    values[i].isGraphInput = false;
    values[i].isGraphOutput = false;
    valueIndex_[values[i].name] = static_cast<ValueId>(i);
  }
  for (ValueId v : inputs)
    if (v >= 0 && static_cast<size_t>(v) < values.size()) values[static_cast<size_t>(v)].isGraphInput = true;
  for (ValueId v : outputs)
    if (v >= 0 && static_cast<size_t>(v) < values.size()) values[static_cast<size_t>(v)].isGraphOutput = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodeIndex_[nodes[i].name] = static_cast<OpId>(i);
    for (ValueId v : nodes[i].outputs)
      if (v >= 0 && static_cast<size_t>(v) < values.size()) values[static_cast<size_t>(v)].producer = static_cast<OpId>(i);
    for (ValueId v : nodes[i].inputs) {
      if (v < 0 || static_cast<size_t>(v) >= values.size()) continue;
      auto& c = values[static_cast<size_t>(v)].consumers;
      if (c.empty() || c.back() != static_cast<OpId>(i)) c.push_back(static_cast<OpId>(i));
    }
  }
}

std::vector<OpId> Graph::predecessors(OpId op) const {
  std::vector<OpId> out;
  for (ValueId v : nodes[static_cast<size_t>(op)].inputs) {
    if (v < 0) continue;
    OpId p = values[static_cast<size_t>(v)].producer;
    if (p >= 0) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<OpId> Graph::successors(OpId op) const {
  std::vector<OpId> out;
  for (ValueId v : nodes[static_cast<size_t>(op)].outputs) {
    if (v < 0) continue;
    for (OpId c : values[static_cast<size_t>(v)].consumers) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<OpId>> Graph::topologicalOrder() const {
  const size_t n = nodes.size();
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<OpId>> succ(n);
  for (size_t i = 0; i < n; ++i) {
    for (OpId p : predecessors(static_cast<OpId>(i))) {
      if (static_cast<size_t>(p) == i) return makeError("node '", nodes[i].name, "' consumes its own output (cycle)");
      succ[static_cast<size_t>(p)].push_back(static_cast<OpId>(i));
      ++indeg[i];
    }
  }
  std::vector<OpId> order;
  order.reserve(n);
  std::vector<OpId> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push_back(static_cast<OpId>(i));
  // Keep the original relative order where possible: process smallest id first.
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    OpId u = ready.back();
    ready.pop_back();
    order.push_back(u);
    for (OpId s : succ[static_cast<size_t>(u)]) {
      if (--indeg[static_cast<size_t>(s)] == 0) {
        ready.push_back(s);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (indeg[i] > 0) return makeError("graph has a cycle through node '", nodes[i].name, "' (", nodes[i].opType, ")");
  }
  return order;
}

Status Graph::verify() const {
  std::set<std::string> names;
  for (const auto& node : nodes) {
    if (!names.insert(node.name).second) return makeError("duplicate node name '", node.name, "'");
  }
  std::vector<int> producedBy(values.size(), 0);
  for (const auto& node : nodes) {
    for (ValueId v : node.outputs) {
      if (v < 0) continue;
      if (static_cast<size_t>(v) >= values.size()) return makeError("node '", node.name, "' has an invalid output");
      if (++producedBy[static_cast<size_t>(v)] > 1)
        return makeError("tensor '", values[static_cast<size_t>(v)].name, "' is produced by more than one node");
    }
  }
  for (const auto& node : nodes) {
    for (ValueId v : node.inputs) {
      if (v < 0) continue;
      if (static_cast<size_t>(v) >= values.size()) return makeError("node '", node.name, "' has an invalid input");
      const Value& val = values[static_cast<size_t>(v)];
      if (!val.isWeight && !val.isGraphInput && producedBy[static_cast<size_t>(v)] == 0)
        return makeError("node '", node.name, "' reads tensor '", val.name,
                         "' that no node produces and that is neither an input nor an initializer (dangling input)");
    }
  }
  for (ValueId v : outputs) {
    const Value& val = values[static_cast<size_t>(v)];
    if (!val.isWeight && !val.isGraphInput && producedBy[static_cast<size_t>(v)] == 0)
      return makeError("graph output '", val.name, "' is not produced by any node");
  }
  auto topo = topologicalOrder();
  if (!topo) return Error{topo.message()};
  return Status::ok();
}

int64_t Graph::paramBytes() const {
  int64_t total = 0;
  for (const auto& v : values)
    if (v.isWeight) total += v.bytes();
  return total;
}

}  // namespace partex
