#include "onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backend/tensor.h"
#include "onnx/consteval.h"
#include "onnx/inferguard.h"
#include "onnx/lower.h"
#include "onnx/weights.h"
#include "support/sha256.h"
#include "support/strings.h"

// Exported by libonnx 1.12 (checker.cc) but not declared in its header: the overload that takes a
// context, which lets us set the model folder for external-data checks.
namespace onnx::checker {
void check_model(const ModelProto& model, CheckerContext& ctx);
}  // namespace onnx::checker

namespace partex {

/// SHA-256 (hex) of a message's serialization, streamed (no serialized copy is held).
std::string sha256OfMessage(const google::protobuf::MessageLite& message);

namespace {

using onnximp::ConstTensor;

constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 8;
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;
/// Shapes beyond this many elements are treated as unknown (hostile or broken models).
constexpr int64_t kMaxPlausibleElements = int64_t{1} << 40;
/// At most this many "unknown shape" warnings are listed one by one.
constexpr size_t kMaxShapeWarnings = 5;

/// The first line of an exception text, trimmed, never empty.
std::string firstLine(const std::string& s) {
  std::string line = trim(s.substr(0, s.find_first_of("\r\n")));
  return line.empty() ? std::string("(no details)") : line;
}

std::string normDomain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

bool isKnownDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx" || d == "ai.onnx.ml";
}

bool plausible(const std::vector<int64_t>& dims) {
  const int64_t n = onnximp::safeNumel(dims);
  return n >= 0 && n <= kMaxPlausibleElements;
}

/// Shape information read from a TypeProto.
struct TypeInfo {
  bool isTensor = false;
  DType dtype = DType::Undefined;
  bool hasRank = false;
  std::vector<int64_t> dims;  ///< -1 where unknown.
  bool full() const {
    if (!hasRank) return false;
    for (int64_t d : dims)
      if (d < 0) return false;
    return true;
  }
  int score() const {
    if (!isTensor) return 0;
    int s = 1 + (dtype != DType::Undefined) + (hasRank ? 2 : 0);
    for (int64_t d : dims) s += d >= 0;
    return s;
  }
};

template <class TensorType>
TypeInfo tensorTypeInfo(const TensorType& t) {
  TypeInfo info;
  info.isTensor = true;
  info.dtype = onnximp::dtypeFromOnnx(t.elem_type());
  if (t.has_shape()) {
    info.hasRank = true;
    for (const auto& d : t.shape().dim())
      info.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
  }
  return info;
}

TypeInfo typeInfo(const onnx::TypeProto* t) {
  if (!t) return {};
  if (t->has_tensor_type()) return tensorTypeInfo(t->tensor_type());
  if (t->has_sparse_tensor_type()) return tensorTypeInfo(t->sparse_tensor_type());
  return {};
}

/// State shared by the whole import (main graph and subgraphs).
struct ImportCtx {
  std::string origin;
  std::string baseDir;
  std::unordered_map<std::string, int> opsets;  ///< Domain ("" for ONNX) -> version.
  int64_t opset = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  ///< Graph::notes.
  std::unordered_set<std::string> warnedKeys;
  /// Outer-scope names used inside a control-flow node's subgraphs, in a stable order.
  std::unordered_map<const onnx::NodeProto*, std::vector<std::string>> implicitInputs;
  /// Per node expanded from a call of a local function (expandLocalFunctions): the outermost call's
  /// node name and its function ("domain.name").
  std::unordered_map<std::string, std::pair<std::string, std::string>> functionCall;

  template <class... Parts>
  Error fail(Parts&&... parts) const {
    return makeError(origin, ": ", std::forward<Parts>(parts)...);
  }
  void warn(const std::string& key, std::string text) {
    if (warnedKeys.insert(key).second) warnings.push_back(std::move(text));
  }
  int domainVersion(const std::string& domain) const {
    auto it = opsets.find(normDomain(domain));
    return it == opsets.end() ? 0 : it->second;
  }
};

// ---------------------------------------------------------------------------------------------
// Structure: node names, SSA, dangling inputs, cycles, topological order (before the checker, so
// that these common faults get clear messages).

struct Scope {
  const std::unordered_set<std::string_view>* names = nullptr;
  const Scope* parent = nullptr;
  bool contains(std::string_view n) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->names->count(n)) return true;
    return false;
  }
};

std::string nodeLabel(const onnx::NodeProto& n) {
  return "'" + n.name() + "' (" + n.op_type() + ")";
}

/// Attribute values that ONNX's shape inference divides by or loops on without checking (a zero
/// stride crashes libonnx 1.12 with SIGFPE): rejected up front with a clear message.
Status checkAttributeValues(ImportCtx& ctx, const onnx::NodeProto& node, const std::string& where) {
  for (const auto& a : node.attribute()) {
    const std::string& n = a.name();
    if (n == "strides" || n == "dilations" || n == "kernel_shape") {
      for (int64_t v : a.ints())
        if (v < 1)
          return ctx.fail("node ", nodeLabel(node), " has an invalid attribute ", n, " (", std::to_string(v),
                          "; values must be positive)", where);
    } else if ((n == "blocksize" || n == "group") && a.has_i() && a.i() < 1) {
      return ctx.fail("node ", nodeLabel(node), " has an invalid attribute ", n, " (", std::to_string(a.i()),
                      "; it must be positive)", where);
    }
  }
  if (isKnownDomain(node.domain()) && node.output_size() == 0)
    return ctx.fail("node ", nodeLabel(node), " has no outputs", where);
  return Status::ok();
}

Status prepareGraph(ImportCtx& ctx, onnx::GraphProto& g, const Scope* outer, const std::string& where,
                    std::set<std::string>& freeVars) {
  const int n = g.node_size();
  // 1. Unique node names: keep given names, invent "<OpType>_<index>" for the others.
  {
    // Views into node names: a given name is only ever replaced on a later duplicate, whose own
    // (equal) text is not the one the sets point at; `used` points at final names.
    std::unordered_set<std::string_view> reserved, used;
    reserved.reserve(static_cast<size_t>(n));
    used.reserve(static_cast<size_t>(n));
    for (const auto& node : g.node())
      if (!node.name().empty()) reserved.insert(node.name());
    for (int i = 0; i < n; ++i) {
      onnx::NodeProto* node = g.mutable_node(i);
      const bool invented = node->name().empty();
      const std::string base =
          invented ? (node->op_type().empty() ? std::string("node") : node->op_type()) + "_" + std::to_string(i)
                   : node->name();
      std::string name = base;
      if (used.count(name) || (invented && reserved.count(name))) {
        for (int k = 1;; ++k) {
          name = base + "_" + std::to_string(k);
          if (!used.count(name) && !reserved.count(name)) break;
        }
      }
      if (name != node->name()) node->set_name(name);
      used.insert(node->name());
    }
  }
  // 2. Names defined by the graph itself, and producers.
  // Keys are views into the model's strings, which stay put while it is imported.
  std::unordered_set<std::string_view> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined.insert(t.values().name());
  std::unordered_map<std::string_view, int> producer;
  producer.reserve(static_cast<size_t>(n) * 2);
  for (int i = 0; i < n; ++i) {
    const auto& node = g.node(i);
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      if (defined.count(out))
        return ctx.fail("tensor '", out, "' is both a graph input or initializer and an output of node ",
                        nodeLabel(node), where);
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted)
        return ctx.fail("tensor '", out, "' is produced by two nodes, ", nodeLabel(g.node(it->second)), " and ",
                        nodeLabel(node), where);
    }
  }
  std::unordered_set<std::string_view> all = defined;
  for (const auto& [name, i] : producer) all.insert(name);
  const Scope here{&all, outer};

  // 3. Dependencies (explicit inputs and outer-scope names used inside subgraphs).
  std::vector<std::vector<int>> succ(static_cast<size_t>(n)), pred(static_cast<size_t>(n));
  std::vector<int> indeg(static_cast<size_t>(n), 0);
  auto depend = [&](int i, std::string_view name) -> bool {
    if (name.empty()) return true;
    if (auto it = producer.find(name); it != producer.end()) {
      succ[static_cast<size_t>(it->second)].push_back(i);
      pred[static_cast<size_t>(i)].push_back(it->second);
      ++indeg[static_cast<size_t>(i)];
      return true;
    }
    if (defined.count(name)) return true;
    if (outer && outer->contains(name)) {
      freeVars.emplace(name);
      return true;
    }
    return false;
  };
  for (int i = 0; i < n; ++i) {
    onnx::NodeProto* node = g.mutable_node(i);
    if (auto st = checkAttributeValues(ctx, *node, where); !st) return st;
    for (const auto& in : node->input()) {
      if (!depend(i, in))
        return ctx.fail("node '", node->name(), "' reads tensor '", in,
                        "' that no node produces and that is neither an input nor an initializer (dangling input)",
                        where);
    }
    std::set<std::string> subFree;
    for (auto& attr : *node->mutable_attribute()) {
      if (attr.has_g()) {
        const std::string w = " (in subgraph '" + attr.name() + "' of node '" + node->name() + "')" + where;
        if (auto st = prepareGraph(ctx, *attr.mutable_g(), &here, w, subFree); !st) return st;
      }
      for (int k = 0; k < attr.graphs_size(); ++k) {
        const std::string w =
            " (in subgraph '" + attr.name() + "[" + std::to_string(k) + "]' of node '" + node->name() + "')" + where;
        if (auto st = prepareGraph(ctx, *attr.mutable_graphs(k), &here, w, subFree); !st) return st;
      }
    }
    if (!subFree.empty()) {
      std::set<std::string> explicitIn(node->input().begin(), node->input().end());
      auto& implicit = ctx.implicitInputs[node];
      for (const auto& name : subFree) {
        depend(i, name);  // found: the subgraph resolved it in `here` or further out
        if (!explicitIn.count(name)) implicit.push_back(name);
      }
    }
  }
  for (const auto& out : g.output()) {
    if (producer.count(out.name()) || defined.count(out.name())) continue;
    if (outer && outer->contains(out.name())) {
      freeVars.insert(out.name());
      continue;
    }
    return ctx.fail("graph output '", out.name(), "' is not produced by any node", where);
  }

  // 4. Topological order (Kahn, smallest index first so sorted models keep their order).
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  {
    std::vector<int> deg = indeg;
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < n; ++i)
      if (deg[static_cast<size_t>(i)] == 0) ready.push(i);
    while (!ready.empty()) {
      const int u = ready.top();
      ready.pop();
      order.push_back(u);
      for (int s : succ[static_cast<size_t>(u)])
        if (--deg[static_cast<size_t>(s)] == 0) ready.push(s);
    }
    if (static_cast<int>(order.size()) != n) {
      // Walk predecessors among the unsorted nodes until one repeats: that one is on a cycle.
      std::vector<char> done(static_cast<size_t>(n), 0), seen(static_cast<size_t>(n), 0);
      for (int u : order) done[static_cast<size_t>(u)] = 1;
      int cur = 0;
      while (done[static_cast<size_t>(cur)]) ++cur;
      while (!seen[static_cast<size_t>(cur)]) {
        seen[static_cast<size_t>(cur)] = 1;
        for (int p : pred[static_cast<size_t>(cur)]) {
          if (!done[static_cast<size_t>(p)]) {
            cur = p;
            break;
          }
        }
      }
      return ctx.fail("graph has a cycle through node ", nodeLabel(g.node(cur)), where);
    }
  }
  bool sorted = true;
  for (int i = 0; i < n && sorted; ++i) sorted = order[static_cast<size_t>(i)] == i;
  if (!sorted) {
    auto* nodes = g.mutable_node();
    std::vector<onnx::NodeProto*> ptrs(static_cast<size_t>(n));
    nodes->ExtractSubrange(0, n, ptrs.data());
    for (int i = 0; i < n; ++i) nodes->AddAllocated(ptrs[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Symbolic input dimensions

std::string bindingText(const DimBinding& b) {
  if (!b.symbol.empty()) return b.symbol + "=" + std::to_string(b.value);
  return b.input + ":" + std::to_string(b.axis) + "=" + std::to_string(b.value);
}

onnx::TensorShapeProto* inputShape(onnx::ValueInfoProto& v) {
  auto* type = v.mutable_type();
  if (type->has_tensor_type() && type->tensor_type().has_shape()) return type->mutable_tensor_type()->mutable_shape();
  if (type->has_sparse_tensor_type() && type->sparse_tensor_type().has_shape())
    return type->mutable_sparse_tensor_type()->mutable_shape();
  return nullptr;
}

/// Nested calls of local functions are expanded this many calls deep at most (a function that calls
/// itself would never end).
constexpr int kMaxFunctionDepth = 16;
/// A graph expanded from local functions holds this many nodes at most (nested calls multiply).
constexpr int kMaxExpandedNodes = 1 << 21;

/// The body of local function `f` as called by `node` (named `call`), appended to `out`: the formal
/// inputs and outputs read and written as the call's actual ones (an output the call omits stays a
/// value of the body), the body's own values named "<call>/<value>", each node "<call>/<node>", and an
/// attribute that refers to one of the function's (ref_attr_name) given the call's value, or left out
/// where the call sets none (the operator's default then applies). libonnx 1.12's FunctionExpandHelper
/// is not used: it looks the function up among the registered operator schemas, which model-local
/// functions are not (a null schema).
void expandCall(const onnx::NodeProto& node, const onnx::FunctionProto& f, const std::string& call,
                google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
  std::unordered_map<std::string, std::string> actual;
  for (int i = 0; i < node.input_size(); ++i) actual[f.input(i)] = node.input(i);
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty()) actual[f.output(i)] = node.output(i);
  auto rename = [&](const std::string& name) {
    if (name.empty()) return name;  // an omitted optional input
    auto it = actual.find(name);
    return it != actual.end() ? it->second : call + "/" + name;
  };
  std::unordered_map<std::string, const onnx::AttributeProto*> given;
  for (const auto& a : node.attribute()) given[a.name()] = &a;
  int k = 0;
  for (const auto& b : f.node()) {
    onnx::NodeProto* n = out.Add();
    n->set_op_type(b.op_type());
    n->set_domain(b.domain());
    n->set_name(call + "/" + (b.name().empty() ? b.op_type() + "_" + std::to_string(k) : b.name()));
    ++k;
    for (const auto& in : b.input()) n->add_input(rename(in));
    for (const auto& o : b.output()) n->add_output(rename(o));
    for (const auto& a : b.attribute()) {
      if (a.ref_attr_name().empty()) {
        *n->add_attribute() = a;
      } else if (auto it = given.find(a.ref_attr_name()); it != given.end()) {
        onnx::AttributeProto* c = n->add_attribute();
        *c = *it->second;
        c->set_name(a.name());
      }
    }
  }
}

/// Calls of the model's local functions (ModelProto.functions, matched by domain and name), in the
/// graph and in its subgraphs, replaced by the function's body (expandCall), nested calls in turn.
/// Each node of a body is recorded in ctx.functionCall with the outermost call and its function, so
/// that the graph keeps which call it came from.
Status expandLocalFunctions(ImportCtx& ctx, onnx::GraphProto& g,
                            const std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>& fns) {
  int unnamed = 0;
  for (int depth = 0;; ++depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    bool expanded = false;
    for (auto& node : *g.mutable_node()) {
      auto it = fns.find({normDomain(node.domain()), node.op_type()});
      if (it == fns.end()) {
        nodes.Add(std::move(node));
        continue;
      }
      const onnx::FunctionProto& f = *it->second;
      const std::string fn = f.domain().empty() ? f.name() : f.domain() + "." + f.name();
      if (depth >= kMaxFunctionDepth)
        return ctx.fail("local function '", fn, "' is called more than ", std::to_string(kMaxFunctionDepth),
                        " calls deep (does it call itself?)");
      expanded = true;
      const std::string call = node.name().empty() ? f.name() + "_" + std::to_string(unnamed++) : node.name();
      if (f.input_size() < node.input_size() || f.output_size() < node.output_size())
        return ctx.fail("node '", call, "' calls local function '", fn, "' with ", std::to_string(node.input_size()),
                        " inputs and ", std::to_string(node.output_size()), " outputs (it has ",
                        std::to_string(f.input_size()), " and ", std::to_string(f.output_size()), ")");
      // A call inside a body belongs to the call whose body it is.
      std::pair<std::string, std::string> outer{call, fn};
      if (auto o = ctx.functionCall.find(call); o != ctx.functionCall.end()) outer = o->second;
      const int before = nodes.size();
      expandCall(node, f, call, nodes);
      for (int i = before; i < nodes.size(); ++i) ctx.functionCall[nodes.Get(i).name()] = outer;
      if (nodes.size() > kMaxExpandedNodes)
        return ctx.fail("expanding the calls of local function '", fn, "' gives more than ",
                        std::to_string(kMaxExpandedNodes), " operators");
    }
    g.mutable_node()->Swap(&nodes);
    if (!expanded) break;
  }
  for (auto& node : *g.mutable_node())
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g())
        if (auto st = expandLocalFunctions(ctx, *a.mutable_g(), fns); !st) return st;
      for (auto& sub : *a.mutable_graphs())
        if (auto st = expandLocalFunctions(ctx, sub, fns); !st) return st;
    }
  return {};
}

Status bindDims(ImportCtx& ctx, onnx::GraphProto& g, const std::vector<DimBinding>& bindings) {
  std::unordered_set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  std::vector<onnx::ValueInfoProto*> inputs;
  for (auto& v : *g.mutable_input())
    if (!inits.count(v.name())) inputs.push_back(&v);

  std::vector<std::string> symbols;  // in order of appearance
  std::unordered_set<std::string> symbolSet;
  for (auto* v : inputs)
    if (auto* shape = inputShape(*v))
      for (const auto& d : shape->dim())
        if (d.has_dim_param() && !d.dim_param().empty() && symbolSet.insert(d.dim_param()).second)
          symbols.push_back(d.dim_param());

  std::unordered_set<std::string> boundSymbols;
  for (const auto& b : bindings) {
    const std::string text = bindingText(b);
    if (b.value < 1) return ctx.fail("--dim ", text, ": the value must be a positive integer");
    if (!b.symbol.empty()) {
      if (!symbolSet.count(b.symbol))
        return ctx.fail("--dim ", text, ": no model input has a symbolic dimension '", b.symbol, "' (",
                        symbols.empty() ? std::string("the inputs have none") : "symbols: " + join(symbols, ", "), ")");
      if (!boundSymbols.insert(b.symbol).second) return ctx.fail("--dim ", text, ": '", b.symbol, "' is bound twice");
      auto apply = [&](onnx::ValueInfoProto& v) {
        if (auto* shape = inputShape(v))
          for (auto& d : *shape->mutable_dim())
            if (d.has_dim_param() && d.dim_param() == b.symbol) d.set_dim_value(b.value);
      };
      for (auto* v : inputs) apply(*v);
      for (auto& v : *g.mutable_output()) apply(v);
      for (auto& v : *g.mutable_value_info()) apply(v);
      continue;
    }
    onnx::ValueInfoProto* target = nullptr;
    std::vector<std::string> names;
    for (auto* v : inputs) {
      names.push_back(v->name());
      if (v->name() == b.input) target = v;
    }
    if (!target)
      return ctx.fail("--dim ", text, ": the model has no input '", b.input, "' (inputs: ", join(names, ", "), ")");
    auto* shape = inputShape(*target);
    if (!shape) return ctx.fail("--dim ", text, ": input '", b.input, "' has no shape to bind");
    const int64_t rank = shape->dim_size();
    int64_t axis = b.axis < 0 ? b.axis + rank : b.axis;
    if (axis < 0 || axis >= rank)
      return ctx.fail("--dim ", text, ": input '", b.input, "' has ", std::to_string(rank), " dimensions");
    auto* d = shape->mutable_dim(static_cast<int>(axis));
    if (d->has_dim_value() && d->dim_value() != b.value && d->dim_value() >= 0)
      ctx.warn("override:" + text, "--dim " + text + " overrides the fixed dimension " +
                                       std::to_string(d->dim_value()) + " of input '" + b.input + "' axis " +
                                       std::to_string(axis));
    d->set_dim_value(b.value);
  }

  for (auto* v : inputs) {
    const auto& type = v->type();
    if (!type.has_tensor_type() && !type.has_sparse_tensor_type()) {
      ctx.warn("nontensor:" + v->name(), "input '" + v->name() + "' is not a tensor; its shape stays unknown");
      continue;
    }
    auto* shape = inputShape(*v);
    if (!shape)
      return ctx.fail("input '", v->name(), "' has no shape (unknown rank); the importer needs static input shapes");
    for (int axis = 0; axis < shape->dim_size(); ++axis) {
      const auto& d = shape->dim(axis);
      if (d.has_dim_value() && d.dim_value() >= 0) continue;
      const std::string ax = std::to_string(axis);
      if (d.has_dim_param() && !d.dim_param().empty())
        return ctx.fail("input '", v->name(), "' axis ", ax, " has symbolic dimension '", d.dim_param(),
                        "' that is not bound (use --dim ", d.dim_param(), "=VALUE or --dim ", v->name(), ":", ax,
                        "=VALUE)");
      return ctx.fail("input '", v->name(), "' axis ", ax, " has an unknown dimension (use --dim ", v->name(), ":", ax,
                      "=VALUE)");
    }
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Attributes

void convertAttributes(const onnx::NodeProto& node, Node& out) {
  using AP = onnx::AttributeProto;
  for (const auto& a : node.attribute()) {
    auto type = a.type();
    if (type == AP::UNDEFINED) {  // IR < 2: infer from the field that is set
      if (a.has_f())
        type = AP::FLOAT;
      else if (a.has_i())
        type = AP::INT;
      else if (a.has_s())
        type = AP::STRING;
      else if (a.has_t())
        type = AP::TENSOR;
      else if (a.has_g())
        type = AP::GRAPH;
      else if (a.floats_size())
        type = AP::FLOATS;
      else if (a.ints_size())
        type = AP::INTS;
      else if (a.strings_size())
        type = AP::STRINGS;
    }
    Attribute at;
    switch (type) {
      case AP::FLOAT:
        at.value = static_cast<double>(a.f());
        break;
      case AP::INT:
        at.value = static_cast<int64_t>(a.i());
        break;
      case AP::STRING:
        at.value = a.s();
        break;
      case AP::TENSOR: {
        const DType dt = onnximp::dtypeFromOnnx(a.t().data_type());
        std::vector<int64_t> dims(a.t().dims().begin(), a.t().dims().end());
        // A one-element tensor (ConstantOfShape's value) keeps its element too, as "partex.NAME.scalar":
        // a ConstantOfShape that is not folded (its shape computed at run time, as in a loop body) runs.
        if (shapeElements(dims) == 1 && tensorDTypeSupported(dt))
          if (auto data = onnximp::decodeTensorData(a.t()); data && *data)
            if (auto t = Tensor::alias(dt, dims, *data); t) {
              Attribute sc;
              if (dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16 || dt == DType::BFloat16)
                sc.value = t->valueAsDouble(0);
              else
                sc.value = t->valueAsInt(0);
              out.attrs["partex." + a.name() + ".scalar"] = std::move(sc);
            }
        at.value = Attribute::TensorInfo{dt, std::move(dims)};
        break;
      }
      case AP::SPARSE_TENSOR:
        at.value = Attribute::TensorInfo{
            onnximp::dtypeFromOnnx(a.sparse_tensor().values().data_type()),
            std::vector<int64_t>(a.sparse_tensor().dims().begin(), a.sparse_tensor().dims().end())};
        break;
      case AP::FLOATS: {
        std::vector<double> v;
        v.reserve(static_cast<size_t>(a.floats_size()));
        for (float f : a.floats()) v.push_back(f);
        at.value = std::move(v);
        break;
      }
      case AP::INTS:
        at.value = std::vector<int64_t>(a.ints().begin(), a.ints().end());
        break;
      case AP::STRINGS:
        at.value = std::vector<std::string>(a.strings().begin(), a.strings().end());
        break;
      default:
        continue;  // graphs live in Node::subgraphs; tensor lists and type protos are dropped
    }
    out.attrs[a.name()] = std::move(at);
  }
}

bool hasGraphAttribute(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

bool producesNonTensors(const std::string& op) {
  return op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
         op == "ConcatFromSequence";
}

// ---------------------------------------------------------------------------------------------
// Graph building: folding, shape completion, IR assembly

class GraphBuilder {
 public:
  GraphBuilder(ImportCtx& ctx, onnx::GraphProto& g, GraphBuilder* parent, std::string where)
      : ctx_(ctx), g_(g), parent_(parent), where_(std::move(where)) {}

  Result<std::shared_ptr<Graph>> build();

 private:
  struct Val {
    Value v;
    bool hasRank = false;
    bool isConst = false;
    bool outer = false;
    std::shared_ptr<const ConstTensor> c;          ///< Dims (and small data) of a constant.
    const onnx::TensorProto* proto = nullptr;      ///< Original initializer, for ONNX inference.
    std::shared_ptr<onnx::TensorProto> madeProto;  ///< Made from `c`, for ONNX inference.
  };

  /// `key` views a string of the model (stable during the import).
  int addVal(Val v, std::string_view key) {
    const int id = static_cast<int>(vals_.size());
    byName_[key] = id;
    vals_.push_back(std::move(v));
    return id;
  }
  int resolve(const std::string& name);
  void setShape(Val& val, const TypeInfo& t);
  void setConst(Val& val, ConstTensor c);
  TypeInfo passOneType(const std::string& name) const {
    auto it = types_.find(name);
    return it == types_.end() ? TypeInfo{} : typeInfo(it->second);
  }
  bool inferNode(onnx::NodeProto& node, const std::vector<int>& ins, std::vector<TypeInfo>& outs,
                 std::string* refusal = nullptr);
  void completeLoopShapes(const onnx::NodeProto& node, const std::vector<int>& ins, const Graph& body,
                          std::vector<TypeInfo>& infos);
  const onnx::TensorProto* protoFor(int id);
  Status processNode(onnx::NodeProto& node);
  bool tryFold(onnx::NodeProto& node, const std::vector<int>& ins);
  Result<std::shared_ptr<Graph>> assemble();

  ImportCtx& ctx_;
  onnx::GraphProto& g_;
  GraphBuilder* parent_;
  std::string where_;
  std::vector<Val> vals_;
  std::unordered_map<std::string_view, int> byName_;
  std::unordered_map<std::string_view, const onnx::TypeProto*> types_;
  std::vector<Node> nodes_;
  std::vector<int> inputs_, outputs_;
};

int GraphBuilder::resolve(const std::string& name) {
  if (auto it = byName_.find(name); it != byName_.end()) return it->second;
  if (!parent_) return -1;
  const int pid = parent_->resolve(name);
  if (pid < 0) return -1;
  const Val& pv = parent_->vals_[static_cast<size_t>(pid)];
  Val v;
  v.v.name = pv.v.name;
  v.v.dtype = pv.v.dtype;
  v.v.shape = pv.v.shape;
  v.v.shapeKnown = pv.v.shapeKnown;
  v.v.externalData = pv.v.externalData;
  v.v.externalLocation = pv.v.externalLocation;
  v.v.intData = pv.v.intData;
  v.v.data = pv.v.data;
  v.v.isWeight = pv.isConst;
  v.v.isGraphInput = !pv.isConst;  // outer-scope placeholder
  v.hasRank = pv.hasRank;
  v.isConst = pv.isConst;
  v.outer = true;
  v.c = pv.c;
  v.proto = pv.proto;
  v.madeProto = pv.madeProto;
  return addVal(std::move(v), name);
}

void GraphBuilder::setShape(Val& val, const TypeInfo& t) {
  if (t.dtype != DType::Undefined) val.v.dtype = t.dtype;
  val.hasRank = t.hasRank;
  val.v.shape = t.dims;
  val.v.shapeKnown = t.full() && plausible(t.dims);
  if (t.full() && !plausible(t.dims))
    ctx_.warn("implausible:" + val.v.name,
              "tensor '" + val.v.name + "' has an implausible shape " + shapeToString(t.dims) + "; treated as unknown");
}

void GraphBuilder::setConst(Val& val, ConstTensor c) {
  TypeInfo t;
  t.isTensor = true;
  t.dtype = c.dtype;
  t.hasRank = true;
  t.dims = c.dims;
  setShape(val, t);
  val.v.isWeight = true;
  val.isConst = true;
  val.v.intData = c.ints();  // small integer constants (shape tensors, axes)
  val.v.data = c.data;
  if (!val.v.shapeKnown) val.v.data = nullptr;  // an implausible shape (setShape warned): nothing to run on
  val.c = std::make_shared<const ConstTensor>(std::move(c));
}

const onnx::TensorProto* GraphBuilder::protoFor(int id) {
  Val& v = vals_[static_cast<size_t>(id)];
  if (!v.isConst) return nullptr;
  if (v.proto) return v.proto;
  if (v.madeProto) return v.madeProto.get();
  if (!v.c || !v.c->foldable()) return nullptr;
  auto p = std::make_shared<onnx::TensorProto>();
  if (!onnximp::tensorToProto(*v.c, p.get())) return nullptr;
  p->set_name(v.v.name);
  v.madeProto = std::move(p);
  return v.madeProto.get();
}

/// Runs the node's ONNX type-and-shape inference function with our current input shapes and the
/// data of constant inputs (folded shape tensors included), which ONNX's whole-model pass lacks.
/// A guard's refusal (inferguard.h) goes to `refusal` when given.
bool GraphBuilder::inferNode(onnx::NodeProto& node, const std::vector<int>& ins, std::vector<TypeInfo>& outs,
                             std::string* refusal) {
  if (!isKnownDomain(node.domain()) || hasGraphAttribute(node)) return false;
  const int version = ctx_.domainVersion(node.domain());
  const auto* schema = onnximp::guardedSchema(node.op_type(), version, normDomain(node.domain()));
  if (!schema || !schema->has_type_and_shape_inference_function()) return false;
  std::vector<onnx::TypeProto> inTypes(ins.size());
  onnximp::InferenceTypes typeMap;
  onnximp::InferenceData dataMap;
  for (size_t i = 0; i < ins.size() && i < static_cast<size_t>(node.input_size()); ++i) {
    const int id = ins[i];
    const std::string& name = node.input(static_cast<int>(i));
    if (id < 0 || name.empty()) continue;
    const Val& v = vals_[static_cast<size_t>(id)];
    if (v.v.dtype == DType::Undefined) continue;
    onnximp::setTensorType(&inTypes[i], static_cast<int32_t>(v.v.dtype), v.hasRank, v.v.shape);
    typeMap[name] = &inTypes[i];
    if (const auto* p = protoFor(id)) dataMap[name] = p;
  }
  try {
    outs.clear();
    for (const auto& t : onnximp::inferNodeTypes(*schema, node, typeMap, dataMap)) outs.push_back(typeInfo(&t));
    return true;
  } catch (const std::exception& e) {
    if (refusal) onnximp::isGuardRefusal(e, refusal);
    return false;
  } catch (...) {
    return false;
  }
}

/// Loop outputs ONNX leaves open: a carried value whose body output keeps the initial shape keeps
/// it; a scan output is [trip count] + the body output's shape when the trip count is a constant and
/// no condition input can end the loop early.
void GraphBuilder::completeLoopShapes(const onnx::NodeProto& node, const std::vector<int>& ins, const Graph& body,
                                      std::vector<TypeInfo>& infos) {
  const size_t carried = ins.size() >= 2 ? ins.size() - 2 : 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].full() || i + 1 >= body.outputs.size()) continue;
    const ValueId bo = body.outputs[i + 1];
    if (bo < 0 || !body.values[static_cast<size_t>(bo)].shapeKnown) continue;
    const Value& out = body.values[static_cast<size_t>(bo)];
    TypeInfo t;
    t.isTensor = true;
    t.dtype = out.dtype;
    t.hasRank = true;
    if (i < carried) {
      const int init = ins[2 + i];
      if (init < 0 || !vals_[static_cast<size_t>(init)].v.shapeKnown ||
          vals_[static_cast<size_t>(init)].v.shape != out.shape)
        continue;
      t.dims = out.shape;
    } else {
      const Val* trips = ins.empty() || ins[0] < 0 ? nullptr : &vals_[static_cast<size_t>(ins[0])];
      const std::vector<int64_t> tripCount = trips && trips->isConst && trips->c ? trips->c->ints() : std::vector<int64_t>{};
      const bool fixed = tripCount.size() == 1 && tripCount[0] >= 0 && (ins.size() < 2 || ins[1] < 0);
      if (!fixed) {
        ctx_.warn("loop:" + node.name(), "Loop '" + node.name() +
                                             "' has no constant iteration count; its scan outputs have unknown length" +
                                             where_);
        continue;
      }
      t.dims.push_back(tripCount[0]);
      t.dims.insert(t.dims.end(), out.shape.begin(), out.shape.end());
    }
    infos[i] = std::move(t);
  }
}

bool GraphBuilder::tryFold(onnx::NodeProto& node, const std::vector<int>& ins) {
  const std::string& op = node.op_type();
  if (!normDomain(node.domain()).empty() || hasGraphAttribute(node) || onnximp::isNondeterministicOp(op) ||
      producesNonTensors(op) || node.output_size() == 0)
    return false;
  int present = 0;
  bool allConst = true;
  for (int id : ins) {
    if (id < 0) continue;
    ++present;
    allConst = allConst && vals_[static_cast<size_t>(id)].isConst;
  }
  const bool shapeOnly =
      (op == "Shape" || op == "Size") && present >= 1 && ins[0] >= 0 && vals_[static_cast<size_t>(ins[0])].v.shapeKnown;
  if (!((present > 0 && allConst) || (present == 0 && op == "Constant") || shapeOnly)) return false;

  std::vector<ConstTensor> shapeHolders(ins.size());
  std::vector<const ConstTensor*> in(ins.size(), nullptr);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] < 0) continue;
    const Val& v = vals_[static_cast<size_t>(ins[i])];
    if (v.isConst && v.c) {
      in[i] = v.c.get();
    } else {
      shapeHolders[i].dtype = v.v.dtype;
      shapeHolders[i].dims = v.v.shape;
      in[i] = &shapeHolders[i];
    }
  }
  // What ONNX infers of the outputs: it bounds what folding computes and types the outputs of a node
  // that is not evaluated here (large weights need no data).
  std::vector<TypeInfo> infos(static_cast<size_t>(node.output_size()));
  for (int i = 0; i < node.output_size(); ++i) infos[static_cast<size_t>(i)] = passOneType(node.output(i));
  auto allKnown = [&] {
    bool k = true;
    for (const auto& t : infos) k = k && t.full() && t.dtype != DType::Undefined;
    return k;
  };
  bool known = allKnown();
  if (!known) {
    std::vector<TypeInfo> inferred;
    if (inferNode(node, ins, inferred) && inferred.size() == infos.size()) {
      infos = std::move(inferred);
      known = allKnown();
    }
  }
  std::vector<onnximp::ExpectedOutput> expected(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    expected[i].known = infos[i].full() && infos[i].dtype != DType::Undefined;
    expected[i].dtype = infos[i].dtype;
    if (expected[i].known) expected[i].dims = infos[i].dims;
  }
  Node ir;
  ir.name = node.name();
  ir.opType = op;
  convertAttributes(node, ir);
  std::vector<ConstTensor> outs;
  if (!onnximp::evaluateNode(node, ir, ctx_.opset, in, expected, outs)) {
    if (!known) return false;
    outs.assign(infos.size(), ConstTensor{});
    for (size_t i = 0; i < infos.size(); ++i) {
      outs[i].dtype = infos[i].dtype;
      outs[i].dims = infos[i].dims;
    }
  }
  // A folded weight must carry its elements, or a run could not feed the model's own values: an
  // operator on constants whose result is not computed here (too large, or not evaluated) stays an
  // operator and runs. Nodes without inputs (a Constant of a sparse or string value) have nothing to
  // run on and stay folded, without data.
  if (present > 0)
    for (int i = 0; i < node.output_size(); ++i) {
      const ConstTensor& c = outs[static_cast<size_t>(i)];
      if (node.output(i).empty() || c.data) continue;
      const DType t = c.dtype == DType::Undefined ? passOneType(node.output(i)).dtype : c.dtype;
      if (tensorElementSize(t) > 0) return false;
    }
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& name = node.output(i);
    if (name.empty()) continue;
    Val v;
    v.v.name = name;
    ConstTensor& c = outs[static_cast<size_t>(i)];
    if (c.dtype == DType::Undefined) {
      const TypeInfo t = passOneType(name);
      c.dtype = t.dtype;
    }
    setConst(v, std::move(c));
    addVal(std::move(v), name);
  }
  return true;
}

Status GraphBuilder::processNode(onnx::NodeProto& node) {
  std::vector<int> ins;
  ins.reserve(static_cast<size_t>(node.input_size()));
  for (const auto& name : node.input()) {
    if (name.empty()) {
      ins.push_back(-1);
      continue;
    }
    const int id = resolve(name);
    if (id < 0)
      return ctx_.fail("node '", node.name(), "' reads tensor '", name,
                       "' that no node produces and that is neither an input nor an initializer (dangling input)",
                       where_);
    ins.push_back(id);
  }
  if (tryFold(node, ins)) return Status::ok();

  Node n;
  n.name = node.name();
  n.opType = node.op_type();
  n.domain = normDomain(node.domain());
  convertAttributes(node, n);
  if (!isKnownDomain(node.domain()) && node.domain() != kPartexDomain)
    ctx_.warn("domain:" + node.domain() + ":" + node.op_type(),
              "node '" + node.name() + "' uses operator '" + node.op_type() + "' of unknown domain '" + node.domain() +
                  "' (imported as an opaque operator)");
  for (int id : ins) n.inputs.push_back(id);
  if (auto it = ctx_.implicitInputs.find(&node); it != ctx_.implicitInputs.end()) {
    for (const auto& name : it->second) {
      const int id = resolve(name);
      if (id < 0)
        return ctx_.fail("node '", node.name(), "' uses tensor '", name, "' in a subgraph, but no node produces it",
                         where_);
      n.inputs.push_back(id);
    }
    n.attrs["partex.implicit_inputs"].value = static_cast<int64_t>(it->second.size());
  }
  // Subgraphs (If/Loop/Scan bodies), imported recursively.
  for (auto& attr : *node.mutable_attribute()) {
    std::vector<std::pair<std::string, onnx::GraphProto*>> bodies;
    if (attr.has_g()) bodies.emplace_back(attr.name(), attr.mutable_g());
    for (int k = 0; k < attr.graphs_size(); ++k)
      bodies.emplace_back(attr.name() + "[" + std::to_string(k) + "]", attr.mutable_graphs(k));
    for (auto& [name, body] : bodies) {
      GraphBuilder child(ctx_, *body, this, " (in subgraph '" + name + "' of node '" + node.name() + "')" + where_);
      auto sub = child.build();
      if (!sub) return Error{sub.message()};
      n.subgraphs.emplace_back(name, std::move(sub.value()));
    }
  }
  // Outputs: ONNX's whole-model inference first, then this node's own inference with folded data.
  std::vector<TypeInfo> infos(static_cast<size_t>(node.output_size()));
  bool known = true;
  for (int i = 0; i < node.output_size(); ++i) {
    infos[static_cast<size_t>(i)] = passOneType(node.output(i));
    if (!node.output(i).empty()) known = known && infos[static_cast<size_t>(i)].full();
  }
  // Operators whose ONNX inference is guarded are always inferred here: a refusal (a Conv whose
  // weight has another rank than its input, ...) is a broken model even where outputs are declared.
  if (!known || onnximp::hasGuard(node.op_type(), normDomain(node.domain()))) {
    std::vector<TypeInfo> inferred;
    std::string refusal;
    const bool inferredOk = inferNode(node, ins, inferred, &refusal);
    if (!refusal.empty()) return ctx_.fail("node ", nodeLabel(node), ": ", refusal, where_);
    if (inferredOk && inferred.size() == infos.size())
      for (size_t i = 0; i < infos.size(); ++i)
        if (inferred[i].score() > infos[i].score()) infos[i] = inferred[i];
    // Dropout's mask (opset < 12 leaves it open): the input's shape, bool.
    if (node.op_type() == "Dropout" && normDomain(node.domain()).empty() && !ins.empty() && ins[0] >= 0) {
      const Val& x = vals_[static_cast<size_t>(ins[0])];
      for (size_t i = 0; i < infos.size() && i < 2; ++i) {
        if (infos[i].full() || !x.v.shapeKnown) continue;
        infos[i].isTensor = true;
        infos[i].dtype = i == 0 ? x.v.dtype : DType::Bool;
        infos[i].hasRank = true;
        infos[i].dims = x.v.shape;
      }
    }
  }
  if (node.op_type() == "Loop" && normDomain(node.domain()).empty()) {
    for (const auto& [name, body] : n.subgraphs)
      if (name == "body") completeLoopShapes(node, ins, *body, infos);
    // The cost model (core/cost/work.cpp) multiplies the body's work by a constant trip count only.
    const Val* trips = !ins.empty() && ins[0] >= 0 ? &vals_[static_cast<size_t>(ins[0])] : nullptr;
    const std::vector<int64_t> count = trips && trips->isConst && trips->c ? trips->c->ints() : std::vector<int64_t>{};
    if (count.size() != 1 || count[0] > (int64_t{1} << 31))
      ctx_.warn(
          "looptrips:" + node.name(),
          "Loop '" + node.name() + "' has no constant trip count: its cost counts one iteration of its body" + where_);
  }
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& name = node.output(i);
    if (name.empty()) {
      n.outputs.push_back(kNone);
      continue;
    }
    Val v;
    v.v.name = name;
    setShape(v, infos[static_cast<size_t>(i)]);
    n.outputs.push_back(addVal(std::move(v), name));
  }
  nodes_.push_back(std::move(n));
  return Status::ok();
}

Result<std::shared_ptr<Graph>> GraphBuilder::build() {
  // Types from ONNX's whole-model inference (value_info) and the declared inputs and outputs.
  auto addType = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.has_type()) return;
    auto [it, inserted] = types_.emplace(vi.name(), &vi.type());
    if (!inserted && typeInfo(&vi.type()).score() > typeInfo(it->second).score()) it->second = &vi.type();
  };
  types_.reserve(static_cast<size_t>(g_.value_info_size() + g_.input_size() + g_.output_size()));
  for (const auto& vi : g_.input()) addType(vi);
  for (const auto& vi : g_.output()) addType(vi);
  for (const auto& vi : g_.value_info()) addType(vi);
  vals_.reserve(static_cast<size_t>(g_.node_size() * 2 + g_.input_size() + g_.initializer_size()));
  byName_.reserve(vals_.capacity());

  for (int i = 0; i < g_.initializer_size(); ++i) {
    onnx::TensorProto& t = *g_.mutable_initializer(i);
    Val v;
    v.v.name = t.name();
    const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    ConstTensor c;
    c.dtype = onnximp::dtypeFromOnnx(t.data_type());
    c.dims.assign(t.dims().begin(), t.dims().end());
    // The weight's elements, read once. External data is read where the model's folder is known
    // (importOnnxBytes without a base folder keeps dims only, as a generated graph has).
    Result<std::shared_ptr<const TensorData>> data = std::shared_ptr<const TensorData>();
    if (!external)
      data = onnximp::decodeTensorData(t);
    else if (!ctx_.baseDir.empty())
      data = onnximp::readExternalData(t, ctx_.baseDir);
    if (!data) return ctx_.fail("initializer '", t.name(), "': ", data.message(), where_);
    c.data = std::move(data).value();
    if (external) {
      v.v.externalData = true;
      for (const auto& e : t.external_data())
        if (e.key() == "location") v.v.externalLocation = e.value();
      if (!c.data && ctx_.baseDir.empty())
        ctx_.warn("nodata:" + t.name(), "initializer '" + t.name() +
                                            "' is external data without a model folder to read it from: runs "
                                            "feed synthetic values for it" +
                                            where_);
    } else if (c.data && c.numel() > onnximp::kMaxConstElements) {
      // The weight now lives in `c.data`: free the protobuf's copy so the model is not held twice.
      // ONNX inference never needs the elements of a tensor this large (small ones keep theirs).
      if (t.has_raw_data()) std::string().swap(*t.mutable_raw_data());
      if (t.float_data_size()) google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
      if (t.double_data_size()) google::protobuf::RepeatedField<double>().Swap(t.mutable_double_data());
      if (t.int32_data_size()) google::protobuf::RepeatedField<int32_t>().Swap(t.mutable_int32_data());
      if (t.int64_data_size()) google::protobuf::RepeatedField<int64_t>().Swap(t.mutable_int64_data());
      if (t.uint64_data_size()) google::protobuf::RepeatedField<uint64_t>().Swap(t.mutable_uint64_data());
    } else {
      v.proto = &t;
    }
    setConst(v, std::move(c));
    if (auto it = byName_.find(t.name()); it != byName_.end()) {
      vals_[static_cast<size_t>(it->second)] = std::move(v);  // duplicate initializer: last one wins
    } else {
      addVal(std::move(v), t.name());
    }
  }
  for (const auto& t : g_.sparse_initializer()) {
    Val v;
    v.v.name = t.values().name();
    ConstTensor c;
    c.dtype = onnximp::dtypeFromOnnx(t.values().data_type());
    c.dims.assign(t.dims().begin(), t.dims().end());
    ctx_.warn("nodata:" + t.values().name(),
              "sparse initializer '" + t.values().name() + "' is not read: runs feed synthetic values for it" + where_);
    setConst(v, std::move(c));
    if (!byName_.count(t.values().name())) addVal(std::move(v), t.values().name());
  }
  for (const auto& vi : g_.input()) {
    if (byName_.count(vi.name())) continue;  // an initializer (IR 3 lists them as inputs too)
    Val v;
    v.v.name = vi.name();
    v.v.isGraphInput = true;
    setShape(v, typeInfo(vi.has_type() ? &vi.type() : nullptr));
    inputs_.push_back(addVal(std::move(v), vi.name()));
  }
  for (auto& node : *g_.mutable_node())
    if (auto st = processNode(node); !st) return Error{st.message()};
  for (const auto& vi : g_.output()) {
    const int id = resolve(vi.name());
    if (id < 0) return ctx_.fail("graph output '", vi.name(), "' is not produced by any node", where_);
    outputs_.push_back(id);
  }
  return assemble();
}

Result<std::shared_ptr<Graph>> GraphBuilder::assemble() {
  auto graph = std::make_shared<Graph>();
  Graph& out = *graph;
  out.name = g_.name();
  std::vector<char> used(vals_.size(), 0);
  for (const auto& n : nodes_) {
    for (int id : n.inputs)
      if (id >= 0) used[static_cast<size_t>(id)] = 1;
    for (int id : n.outputs)
      if (id >= 0) used[static_cast<size_t>(id)] = 1;
  }
  for (int id : inputs_) used[static_cast<size_t>(id)] = 1;
  for (int id : outputs_) used[static_cast<size_t>(id)] = 1;
  std::vector<ValueId> remap(vals_.size(), kNone);
  out.values.reserve(vals_.size());
  std::vector<ValueId> outerPlaceholders;
  for (size_t i = 0; i < vals_.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<ValueId>(out.values.size());
    if (vals_[i].outer && vals_[i].v.isGraphInput) outerPlaceholders.push_back(remap[i]);
    out.values.push_back(std::move(vals_[i].v));
  }
  auto map = [&](int id) { return id < 0 ? kNone : remap[static_cast<size_t>(id)]; };
  for (int id : inputs_) out.inputs.push_back(map(id));
  for (int id : outputs_) out.outputs.push_back(map(id));
  out.nodes.reserve(nodes_.size());
  for (auto& n : nodes_) {
    for (auto& id : n.inputs) id = map(id);
    for (auto& id : n.outputs) id = map(id);
    out.nodes.push_back(std::move(n));
  }
  auto markOuter = [&] {
    for (ValueId v : outerPlaceholders) out.values[static_cast<size_t>(v)].isGraphInput = true;
  };
  out.rebuildIndex();
  markOuter();
  auto order = out.topologicalOrder();
  if (!order) return ctx_.fail(order.message(), where_);
  bool identity = true;
  for (size_t i = 0; i < order->size() && identity; ++i) identity = (*order)[i] == static_cast<OpId>(i);
  if (!identity) {
    std::vector<Node> sorted;
    sorted.reserve(out.nodes.size());
    for (OpId id : *order) sorted.push_back(std::move(out.nodes[static_cast<size_t>(id)]));
    out.nodes = std::move(sorted);
    out.rebuildIndex();
    markOuter();
  }
  if (auto st = out.verify(); !st) return ctx_.fail(st.message(), where_);
  // Shapes that stayed open.
  std::vector<std::string> unknown;
  for (const auto& n : out.nodes)
    for (ValueId v : n.outputs)
      if (v >= 0 && !out.values[static_cast<size_t>(v)].shapeKnown)
        unknown.push_back("'" + out.values[static_cast<size_t>(v)].name + "' (output of " + n.opType + " node '" +
                          n.name + "')");
  for (size_t i = 0; i < unknown.size() && i < kMaxShapeWarnings; ++i)
    ctx_.warn("unknown:" + where_ + unknown[i], "shape of tensor " + unknown[i] + " is unknown" + where_);
  if (unknown.size() > kMaxShapeWarnings)
    ctx_.warn("unknown-more:" + where_,
              std::to_string(unknown.size() - kMaxShapeWarnings) + " more tensors have unknown shapes" + where_);
  return graph;
}

// ---------------------------------------------------------------------------------------------
// Whole import

Status parseModel(const std::string& bytes, const std::string& origin, onnx::ModelProto& model) {
  if (bytes.empty()) return makeError(origin, ": empty file (not an ONNX model)");
  if (bytes.size() >= static_cast<size_t>(INT_MAX))
    return makeError(origin, ": file too large (protobuf models are limited to 2 GiB; use external data)");
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return makeError(origin, ": not an ONNX model (protobuf parse failed)");
  return Status::ok();
}

/// Parses a model file without holding its bytes in memory next to the parsed model.
Status parseModelFile(const std::string& path, onnx::ModelProto& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return makeError(path, ": no such file");
  if (fs::is_directory(st)) return makeError(path, ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open (", std::strerror(errno), ")");
  const auto size = fs::is_regular_file(st) ? fs::file_size(path, ec) : 0;
  if (!ec && size >= static_cast<uintmax_t>(INT_MAX))
    return makeError(path, ": file too large (protobuf models are limited to 2 GiB; use external data)");
  google::protobuf::io::IstreamInputStream stream(&in);
  bool parsed = false;
  int consumed = 0;
  {
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
    consumed = coded.CurrentPosition();
  }
  if (in.bad()) return makeError(path, ": read error");
  if (consumed == 0) return makeError(path, ": empty file (not an ONNX model)");
  if (!parsed) return makeError(path, ": not an ONNX model (protobuf parse failed)");
  return Status::ok();
}

Result<Graph> importModel(onnx::ModelProto& model, ImportCtx& ctx, const ImportOptions& opts) {
  if (!model.has_graph()) return ctx.fail("not an ONNX model (no graph)");
  const int64_t irVersion = model.ir_version();
  if (irVersion < kMinIrVersion || irVersion > onnximp::kMaxLowerableIr)
    return ctx.fail("unsupported IR version ", std::to_string(irVersion), " (supported ", std::to_string(kMinIrVersion),
                    " to ", std::to_string(onnximp::kMaxLowerableIr), ")");
  if (irVersion > kMaxIrVersion) {
    // IR 9/10 without their new types and overloads reads exactly as IR 8 (onnx/lower.h).
    if (auto st = onnximp::lowerIrVersion(model); !st) return ctx.fail(st.message());
    ctx.notes.push_back("IR version " + std::to_string(irVersion) + " read as IR " + std::to_string(kMaxIrVersion) +
                        " (the model uses none of the types or features added since)");
  }
  bool haveDefault = false;
  for (const auto& imp : model.opset_import()) {
    const std::string d = normDomain(imp.domain());
    const auto version = imp.version();
    if (version < 0 || version > INT_MAX)
      return ctx.fail("invalid opset version ", std::to_string(version), " for domain '", imp.domain(), "'");
    ctx.opsets[d] = static_cast<int>(version);
    if (d.empty()) {
      haveDefault = true;
      ctx.opset = version;
    }
  }
  // A model of other domains only (e.g. ai.onnx.preview.training) needs no default opset.
  std::function<bool(const onnx::GraphProto&)> usesDefault = [&](const onnx::GraphProto& gr) {
    for (const auto& node : gr.node()) {
      if (normDomain(node.domain()).empty()) return true;
      for (const auto& a : node.attribute()) {
        if (a.has_g() && usesDefault(a.g())) return true;
        for (const auto& sub : a.graphs())
          if (usesDefault(sub)) return true;
      }
    }
    return false;
  };
  if (!haveDefault && usesDefault(model.graph()))
    return ctx.fail("the model imports no opset of the default ONNX domain");
  if (haveDefault && (ctx.opset < kMinOpset || ctx.opset > onnximp::kMaxLowerableOpset))
    return ctx.fail("unsupported opset ", std::to_string(ctx.opset), " of the default ONNX domain (supported ",
                    std::to_string(kMinOpset), " to ", std::to_string(onnximp::kMaxLowerableOpset), ")");
  if (haveDefault && ctx.opset > kMaxOpset) {
    // libonnx 1.12 knows opsets up to 17: operators whose form changed since are rewritten into their
    // opset-17 form where it is exact, and refused otherwise (onnx/lower.h).
    std::vector<std::string> rewrites;
    if (auto st = onnximp::lowerOpset(model, rewrites); !st)
      return ctx.fail("opset ", std::to_string(ctx.opset), ": ", st.message());
    std::string note =
        "opset " + std::to_string(ctx.opset) + " of the default ONNX domain read as opset " + std::to_string(kMaxOpset);
    for (size_t i = 0; i < rewrites.size(); ++i) note += (i == 0 ? ": " : "; ") + rewrites[i];
    ctx.notes.push_back(note);
    ctx.opset = kMaxOpset;
    ctx.opsets[""] = static_cast<int>(kMaxOpset);
  }

  onnx::GraphProto& g = *model.mutable_graph();
  if (model.functions_size() > 0) {
    std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> fns;
    for (const auto& f : model.functions()) fns[{normDomain(f.domain()), f.name()}] = &f;
    if (auto st = expandLocalFunctions(ctx, g, fns); !st) return Error{st.message()};
  }
  {
    std::set<std::string> freeVars;
    if (auto st = prepareGraph(ctx, g, nullptr, "", freeVars); !st) return Error{st.message()};
  }

  bool checked = false;
  if (opts.runChecker) {
    try {
      onnx::checker::CheckerContext cctx;
      if (!ctx.baseDir.empty()) cctx.set_model_dir(ctx.baseDir + "/");
      onnx::checker::check_model(model, cctx);
      checked = true;
    } catch (const std::exception& e) {
      return ctx.fail("ONNX checker: ", firstLine(e.what()));
    } catch (...) {
      return ctx.fail("ONNX checker failed");
    }
  }

  if (auto st = bindDims(ctx, g, opts.dims); !st) return Error{st.message()};

  try {
    // Data propagation only on opset <= 17 models that passed the checker (it can crash otherwise).
    onnx::ShapeInferenceOptions options(false, 0, checked && ctx.opset <= 17);
    onnx::shape_inference::InferShapes(model, onnximp::guardedSchemas(), options);
  } catch (const std::exception& e) {
    ctx.warn("shape-inference", std::string("ONNX shape inference stopped (") + firstLine(e.what()) +
                                    "); shapes were computed node by node");
  } catch (...) {
    ctx.warn("shape-inference", "ONNX shape inference stopped; shapes were computed node by node");
  }

  // Model identity of plan and profile files: hashed before the builder moves large weights out of
  // the protobuf, and streamed, so the model is never serialized into a second copy.
  const std::string graphSha256 = sha256OfMessage(g);
  GraphBuilder builder(ctx, g, nullptr, "");
  auto built = builder.build();
  if (!built) return Error{built.message()};
  Graph graph = std::move(*built.value());
  graph.irVersion = model.ir_version();  // as read (8 for a lowered IR 9/10 model; the note says so)
  graph.opsetVersion = ctx.opset;
  graph.producerName = model.producer_name();
  graph.graphSha256 = graphSha256;
  // Weight storage types (ir/quant.h) of a generated or GGUF-built model: metadata "partex.quant", one
  // "NAME TYPE" line per quantised weight. They change the model's bytes, so they join its identity.
  for (const auto& prop : model.metadata_props()) {
    if (prop.key() != kQuantMetadataKey) continue;
    std::istringstream lines(prop.value());
    std::string name, type;
    while (lines >> name >> type) {
      QuantType q;
      if (!quantFromName(type, q)) return ctx.fail("metadata ", kQuantMetadataKey, ": unknown weight type '", type, "'");
      const ValueId id = graph.findValue(name);
      if (id == kNone || !graph.values[static_cast<size_t>(id)].isWeight)
        return ctx.fail("metadata ", kQuantMetadataKey, ": '", name, "' is not a weight of the model");
      graph.values[static_cast<size_t>(id)].quant = q;
    }
    graph.graphSha256 = sha256Hex(graphSha256 + "\n" + prop.value());
  }
  graph.warnings = std::move(ctx.warnings);
  graph.notes = std::move(ctx.notes);
  // Subgraphs share the model's metadata; a node expanded from a local function's call says which
  // (the GUI collapses a call into one box).
  std::function<void(Graph&)> stamp = [&](Graph& gr) {
    for (auto& n : gr.nodes) {
      if (auto it = ctx.functionCall.find(n.name); it != ctx.functionCall.end()) {
        n.attrs[kFunctionCallAttr].value = it->second.first;
        n.attrs[kFunctionAttr].value = it->second.second;
      }
      for (auto& [name, sub] : n.subgraphs) {
        sub->irVersion = graph.irVersion;
        sub->opsetVersion = graph.opsetVersion;
        sub->producerName = graph.producerName;
        sub->sourcePath = graph.sourcePath;
        stamp(*sub);
      }
    }
  };
  stamp(graph);
  return graph;
}

Result<Graph> importGuarded(const std::function<Result<Graph>(ImportCtx&)>& body, const std::string& origin,
                            const std::string& baseDir) {
  ImportCtx ctx;
  ctx.origin = origin;
  ctx.baseDir = baseDir;
  try {
    return body(ctx);
  } catch (const std::bad_alloc&) {
    return makeError(origin, ": out of memory while importing");
  } catch (const std::exception& e) {
    return makeError(origin, ": import failed (", firstLine(e.what()), ")");
  } catch (...) {
    return makeError(origin, ": import failed (unknown error)");
  }
}

Result<Graph> finish(Result<Graph> result) {
  if (!result) return Error{oneLine(result.message())};
  for (auto& w : result->warnings) w = oneLine(w);
  for (auto& w : result->notes) w = oneLine(w);
  return result;
}

void setSourcePath(Graph& g, const std::string& path) {
  g.sourcePath = path;
  for (auto& n : g.nodes)
    for (auto& [name, sub] : n.subgraphs) setSourcePath(*sub, path);
}

}  // namespace

Result<DimBinding> parseDimBinding(const std::string& text) {
  const std::string t = trim(text);
  const auto eq = t.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == t.size())
    return makeError("invalid --dim '", text, "': expected NAME=VALUE or INPUT:AXIS=VALUE");
  DimBinding b;
  const std::string lhs = trim(t.substr(0, eq)), rhs = trim(t.substr(eq + 1));
  if (!parseInt64(rhs, b.value) || b.value < 1)
    return makeError("invalid --dim '", text, "': VALUE must be a positive integer");
  const auto colon = lhs.rfind(':');
  int64_t axis = 0;
  if (colon != std::string::npos && colon > 0 && parseInt64(lhs.substr(colon + 1), axis)) {
    b.input = lhs.substr(0, colon);
    b.axis = axis;
  } else {
    if (lhs.empty()) return makeError("invalid --dim '", text, "': expected NAME=VALUE or INPUT:AXIS=VALUE");
    b.symbol = lhs;
  }
  return b;
}

Result<Graph> importOnnxBytes(const std::string& bytes, const std::string& origin, const ImportOptions& opts,
                              const std::string& baseDir) {
  auto result = importGuarded(
      [&](ImportCtx& ctx) -> Result<Graph> {
        auto model = std::make_unique<onnx::ModelProto>();
        if (auto st = parseModel(bytes, origin, *model); !st) return Error{st.message()};
        return importModel(*model, ctx, opts);
      },
      origin, baseDir);
  return finish(std::move(result));
}

Result<Graph> importOnnxFile(const std::string& path, const ImportOptions& opts) {
  // A bare file name ("model.onnx") lives in the current folder: its external data is read from there.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto result = importGuarded(
      [&](ImportCtx& ctx) -> Result<Graph> {
        auto model = std::make_unique<onnx::ModelProto>();
        if (auto st = parseModelFile(path, *model); !st) return Error{st.message()};
        return importModel(*model, ctx, opts);
      },
      path, dir);
  if (result) setSourcePath(*result, path);
  return finish(std::move(result));
}

// ---------------------------------------------------------------------------------------------
// SHA-256 of the serialized graph (support/sha256.h)

namespace {

/// Feeds protobuf's serializer output into a Sha256.
class Sha256Sink : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit Sha256Sink(Sha256& h) : h_(h) {}
  bool Write(const void* buffer, int size) override {
    h_.update(buffer, static_cast<size_t>(size));
    return true;
  }

 private:
  Sha256& h_;
};

}  // namespace

std::string sha256OfMessage(const google::protobuf::MessageLite& message) {
  Sha256 h;
  {
    Sha256Sink sink(h);
    google::protobuf::io::CopyingOutputStreamAdaptor out(&sink, 1 << 16);
    message.SerializeToZeroCopyStream(&out);
    out.Flush();
  }
  return h.hex();
}

}  // namespace partex
