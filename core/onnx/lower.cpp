#include "onnx/lower.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace partex::onnximp {

namespace {

// ---------------------------------------------------------------------------------------------
// IR 9/10 features

/// The element types of IR 9 and later (float8 variants, uint4/int4, float4e2m1): libonnx 1.12's
/// TensorProto ends at BFLOAT16 (16).
constexpr int32_t kFirstNewElemType = 17;

std::string elemTypeName(int32_t t) {
  switch (t) {
    case 17:
      return "float8e4m3fn";
    case 18:
      return "float8e4m3fnuz";
    case 19:
      return "float8e5m2";
    case 20:
      return "float8e5m2fnuz";
    case 21:
      return "uint4";
    case 22:
      return "int4";
    case 23:
      return "float4e2m1";
    default:
      return "element type " + std::to_string(t);
  }
}

/// Field numbers of the overload of a local function (IR 10), unknown to libonnx 1.12's proto:
/// NodeProto.overload and FunctionProto.overload (onnx.proto of ONNX 1.16).
constexpr int kNodeOverloadField = 8;
constexpr int kFunctionOverloadField = 13;

bool hasUnknownField(const google::protobuf::Message& m, int number) {
  const auto& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i)
    if (fields.field(i).number() == number) return true;
  return false;
}

class IrScan {
 public:
  std::string problem;  ///< First use of a feature IR 8 lacks; "" when none.

  void type(const onnx::TypeProto& t, const std::string& where) {
    if (!problem.empty()) return;
    if (t.has_tensor_type())
      elem(t.tensor_type().elem_type(), where);
    else if (t.has_sparse_tensor_type())
      elem(t.sparse_tensor_type().elem_type(), where);
    else if (t.has_sequence_type())
      type(t.sequence_type().elem_type(), where);
    else if (t.has_optional_type())
      type(t.optional_type().elem_type(), where);
    else if (t.has_map_type())
      type(t.map_type().value_type(), where);
  }
  void elem(int32_t e, const std::string& where) {
    if (problem.empty() && e >= kFirstNewElemType) problem = "uses " + elemTypeName(e) + " (" + where + ")";
  }
  void tensor(const onnx::TensorProto& t, const std::string& where) { elem(t.data_type(), where); }
  void values(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& vs, const std::string& kind) {
    for (const auto& v : vs)
      if (v.has_type()) type(v.type(), kind + " '" + v.name() + "'");
  }
  void node(const onnx::NodeProto& n) {
    const std::string where =
        n.op_type() + " '" + (n.name().empty() ? n.output_size() ? n.output(0) : "" : n.name()) + "'";
    if (problem.empty() && hasUnknownField(n, kNodeOverloadField))
      problem = "calls an overload of a local function (IR 10) in " + where;
    for (const auto& a : n.attribute()) {
      if (a.has_t()) tensor(a.t(), where);
      for (const auto& t : a.tensors()) tensor(t, where);
      if (a.has_sparse_tensor()) tensor(a.sparse_tensor().values(), where);
      for (const auto& t : a.sparse_tensors()) tensor(t.values(), where);
      if (a.has_tp()) type(a.tp(), where);
      for (const auto& t : a.type_protos()) type(t, where);
      // Element types named by an attribute: Cast's and CastLike's `to`, the generators' `dtype`,
      // QuantizeLinear's `output_dtype`.
      if (a.type() == onnx::AttributeProto::INT &&
          (a.name() == "to" || a.name() == "dtype" || a.name() == "output_dtype"))
        elem(static_cast<int32_t>(a.i()), where);
      if (a.has_g()) graph(a.g());
      for (const auto& g : a.graphs()) graph(g);
    }
  }
  void graph(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) tensor(t, "initializer '" + t.name() + "'");
    for (const auto& t : g.sparse_initializer()) tensor(t.values(), "initializer '" + t.values().name() + "'");
    values(g.input(), "input");
    values(g.output(), "output");
    values(g.value_info(), "value");
    for (const auto& n : g.node()) node(n);
  }
  void function(const onnx::FunctionProto& f) {
    if (problem.empty() && hasUnknownField(f, kFunctionOverloadField))
      problem = "defines an overload of local function '" + f.name() + "' (IR 10)";
    for (const auto& n : f.node()) node(n);
  }
};

// ---------------------------------------------------------------------------------------------
// Opset 18..21 -> 17

bool isDefaultDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

/// Operators new in opsets 18 to 21 (or whose earlier form has another meaning): no opset-17 form.
const std::map<std::string, int>& newOperators() {
  static const std::map<std::string, int> ops = {
      {"BitwiseAnd", 18},         {"BitwiseNot", 18},    {"BitwiseOr", 18},
      {"BitwiseXor", 18},         {"CenterCropPad", 18}, {"Col2Im", 18},
      {"GroupNormalization", 18}, {"Mish", 18},          {"DeformConv", 19},
      {"AffineGrid", 20},         {"Gelu", 20},          {"ImageDecoder", 20},
      {"RegexFullMatch", 20},     {"StringConcat", 20},  {"StringSplit", 20},
  };
  return ops;
}

/// Operators whose opset-20 form moved attributes to inputs or renamed modes: not lowered.
const std::map<std::string, int>& changedWithoutLowering() {
  static const std::map<std::string, int> ops = {{"DFT", 20}, {"GridSample", 20}};
  return ops;
}

const std::set<std::string>& reductionsWithAxesInput() {
  // ReduceSum took its axes as an input at 13 already (unchanged at 18); the others at 18.
  static const std::set<std::string> ops = {"ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                            "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
  return ops;
}

/// Reads an integer tensor (int64 or int32) held in the proto. False for external data or a size
/// that does not match the dims.
bool readInts(const onnx::TensorProto& t, std::vector<int64_t>& out) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return false;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > (int64_t{1} << 24)) return false;
    n *= d;
  }
  if (n > (int64_t{1} << 24)) return false;
  out.clear();
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != static_cast<size_t>(n) * 8) return false;
      out.resize(static_cast<size_t>(n));
      std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
    } else {
      out.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != static_cast<size_t>(n) * 4) return false;
      std::vector<int32_t> v(static_cast<size_t>(n));
      std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
      out.assign(v.begin(), v.end());
    } else {
      out.assign(t.int32_data().begin(), t.int32_data().end());
    }
  } else {
    return false;
  }
  return static_cast<int64_t>(out.size()) == n;
}

/// What a scope knows of a name: a constant's proto, and a rank and dims (-1 unknown) where known.
struct Known {
  const onnx::TensorProto* constant = nullptr;
  bool hasRank = false;
  std::vector<int64_t> dims;
};

struct Scope {
  const Scope* outer = nullptr;
  std::unordered_map<std::string, Known> names;
  const Known* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->outer) {
      auto it = s->names.find(name);
      if (it != s->names.end()) return &it->second;
    }
    return nullptr;
  }
};

void noteType(Scope& s, const onnx::ValueInfoProto& v) {
  if (!v.has_type() || !v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
  Known& k = s.names[v.name()];
  if (k.hasRank) return;
  k.hasRank = true;
  for (const auto& d : v.type().tensor_type().shape().dim())
    k.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
}

const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attrInt(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = findAttr(n, name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : def;
}

std::string attrString(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = findAttr(n, name);
  return a && a->type() == onnx::AttributeProto::STRING ? a->s() : def;
}

void removeAttr(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
}

void setInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  removeAttr(n, name);
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void trimTrailingEmptyInputs(onnx::NodeProto& n) {
  while (n.input_size() > 0 && n.input(n.input_size() - 1).empty()) n.mutable_input()->RemoveLast();
}

class Lowerer {
 public:
  explicit Lowerer(onnx::ModelProto& m) : model_(m) {}

  Status run(std::vector<std::string>& notes) {
    collectNames();
    Scope top;
    if (auto st = graph(*model_.mutable_graph(), top); !st) return st;
    for (auto& f : *model_.mutable_functions()) {
      bool newer = false;
      for (auto& imp : *f.mutable_opset_import())
        if (isDefaultDomain(imp.domain()) && imp.version() > 17) {
          newer = true;
          imp.set_version(17);
        }
      if (!newer) continue;
      Scope fs;
      for (const auto& n : f.node()) noteConstant(fs, n);
      for (auto& n : *f.mutable_node())
        if (auto st = node(n, fs, nullptr); !st) return makeError("local function '", f.name(), "': ", st.message());
    }
    removeDetached();
    for (auto& imp : *model_.mutable_opset_import())
      if (isDefaultDomain(imp.domain())) imp.set_version(17);
    for (const auto& [what, count] : done_)
      notes.push_back(what + (count > 1 ? " (" + std::to_string(count) + " nodes)" : std::string()));
    return Status::ok();
  }

 private:
  onnx::ModelProto& model_;
  std::unordered_set<std::string> names_;     ///< Every tensor name of the model (for new ones).
  std::unordered_set<std::string> detached_;  ///< Constants an operator stopped reading.
  std::map<std::string, int> done_;           ///< Rewrite -> how many nodes.
  std::deque<onnx::TensorProto> made_;        ///< Tensors of Constant nodes' value_ints / value_int.
  /// Nodes of the graph being lowered that are replaced by several (in order).
  std::unordered_map<const onnx::NodeProto*, std::vector<onnx::NodeProto>> replaced_;

  void collectNames() {
    std::function<void(const onnx::GraphProto&)> walk = [&](const onnx::GraphProto& g) {
      for (const auto& t : g.initializer()) names_.insert(t.name());
      for (const auto& v : g.input()) names_.insert(v.name());
      for (const auto& n : g.node()) {
        for (const auto& o : n.output()) names_.insert(o);
        for (const auto& a : n.attribute()) {
          if (a.has_g()) walk(a.g());
          for (const auto& sub : a.graphs()) walk(sub);
        }
      }
    };
    walk(model_.graph());
  }

  std::string freshName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  void noteConstant(Scope& s, const onnx::NodeProto& n) {
    if (n.op_type() != "Constant" || !isDefaultDomain(n.domain()) || n.output_size() != 1) return;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.has_t()) {
        Known& k = s.names[n.output(0)];
        k.constant = &a.t();
        k.hasRank = true;
        k.dims.assign(a.t().dims().begin(), a.t().dims().end());
      } else if (a.name() == "value_ints" || a.name() == "value_int") {
        onnx::TensorProto& t = made_.emplace_back();
        t.set_data_type(onnx::TensorProto::INT64);
        if (a.name() == "value_ints") {
          t.add_dims(a.ints_size());
          for (int64_t v : a.ints()) t.add_int64_data(v);
        } else {
          t.add_int64_data(a.i());
        }
        Known& k = s.names[n.output(0)];
        k.constant = &t;
        k.hasRank = true;
        k.dims.assign(t.dims().begin(), t.dims().end());
      }
    }
  }

  Status graph(onnx::GraphProto& g, const Scope& outer) {
    Scope s;
    s.outer = &outer;
    for (const auto& t : g.initializer()) {
      Known& k = s.names[t.name()];
      k.constant = &t;
      k.hasRank = true;
      k.dims.assign(t.dims().begin(), t.dims().end());
    }
    for (const auto& v : g.input()) noteType(s, v);
    for (const auto& v : g.output()) noteType(s, v);
    for (const auto& v : g.value_info()) noteType(s, v);
    for (const auto& n : g.node()) noteConstant(s, n);
    // Node inputs (a graph input named as an initializer is a default, not a constant: IR < 4 only).
    for (const auto& v : g.input()) {
      auto it = s.names.find(v.name());
      if (it != s.names.end()) it->second.constant = nullptr;
    }
    for (auto& n : *g.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g())
          if (auto st = graph(*a.mutable_g(), s); !st) return st;
        for (auto& sub : *a.mutable_graphs())
          if (auto st = graph(sub, s); !st) return st;
      }
      if (auto st = node(n, s, &g); !st) return st;
    }
    if (!replaced_.empty()) {
      // Nodes that became several (Split into Slices): spliced in at their place, keeping the order
      // topological. The protos move by pointer, so what the scopes point into stays put.
      auto* nodes = g.mutable_node();
      std::vector<onnx::NodeProto*> old(static_cast<size_t>(nodes->size()));
      nodes->ExtractSubrange(0, nodes->size(), old.data());
      for (onnx::NodeProto* p : old) {
        auto it = replaced_.find(p);
        if (it == replaced_.end()) {
          nodes->AddAllocated(p);
          continue;
        }
        for (auto& r : it->second) *nodes->Add() = std::move(r);
        replaced_.erase(it);
        delete p;
      }
    }
    return Status::ok();
  }

  /// A new int64 initializer of `g` (1-D) for node `n`; "" where there is no graph (local functions).
  std::string addInts(onnx::GraphProto* g, const onnx::NodeProto& n, const std::string& what,
                      const std::vector<int64_t>& v) {
    if (!g) return "";
    const std::string name = freshName((n.name().empty() ? n.output(0) : n.name()) + "_" + what + "_opset17");
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }

  static Error fail(const onnx::NodeProto& n, const std::string& why) {
    return makeError(n.op_type(), " '", n.name().empty() && n.output_size() ? n.output(0) : n.name(), "': ", why,
                     " (no exact opset-17 form)");
  }

  /// The integer values of constant input `i`; an error naming it when it is computed at run time.
  Result<std::vector<int64_t>> constInts(const onnx::NodeProto& n, int i, const Scope& s, const std::string& what) {
    const std::string& name = n.input(i);
    const Known* k = s.find(name);
    std::vector<int64_t> v;
    if (!k || !k->constant) return fail(n, "its " + what + " input '" + name + "' is computed at run time");
    if (!readInts(*k->constant, v)) return fail(n, "its " + what + " input '" + name + "' is not an integer tensor");
    return v;
  }

  /// The rank of input `i` where a graph input, value_info or constant gives it; -1 otherwise.
  static int64_t rankOf(const onnx::NodeProto& n, int i, const Scope& s) {
    const Known* k = s.find(n.input(i));
    return k && k->hasRank ? static_cast<int64_t>(k->dims.size()) : -1;
  }

  void detach(const std::string& name) {
    if (!name.empty()) detached_.insert(name);
  }

  Status node(onnx::NodeProto& n, const Scope& s, onnx::GraphProto* g) {
    if (!isDefaultDomain(n.domain())) return Status::ok();
    const std::string& op = n.op_type();
    if (auto it = newOperators().find(op); it != newOperators().end())
      return fail(n, "the operator is new in opset " + std::to_string(it->second));
    if (auto it = changedWithoutLowering().find(op); it != changedWithoutLowering().end())
      return fail(n, "its opset-" + std::to_string(it->second) + " form is not lowered");
    if (reductionsWithAxesInput().count(op)) return reduction(n, s);
    if (op == "Pad") return pad(n, s, g);
    if (op == "Split") return split(n, s, g);
    if (op == "Resize") return resize(n, s);
    if (op == "ScatterElements" || op == "ScatterND") {
      const std::string r = attrString(n, "reduction", "none");
      if (r == "max" || r == "min") return fail(n, "reduction '" + r + "' is new in opset 18");
      return Status::ok();
    }
    if (op == "LpPool" || op == "AveragePool") {
      if (const auto* d = findAttr(n, "dilations")) {
        for (int64_t x : d->ints())
          if (x != 1) return fail(n, "dilations other than 1 are new in opset 18/19");
        removeAttr(n, "dilations");
        ++done_[op + ": dilations of 1 dropped"];
      }
      if (op == "LpPool" && findAttr(n, "ceil_mode")) {
        if (attrInt(n, "ceil_mode", 0) != 0) return fail(n, "ceil_mode is new in opset 18");
        removeAttr(n, "ceil_mode");
      }
      return Status::ok();
    }
    if (op == "Cast" || op == "CastLike") {
      // saturate (opset 19) applies to float8 targets only, which lowerIrVersion refuses.
      removeAttr(n, "saturate");
      return Status::ok();
    }
    if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      removeAttr(n, "saturate");
      if (attrInt(n, "block_size", 0) != 0) return fail(n, "blocked quantization (block_size) is new in opset 21");
      removeAttr(n, "block_size");
      if (op == "QuantizeLinear" && findAttr(n, "output_dtype")) {
        const int64_t dt = attrInt(n, "output_dtype", 0);
        const bool zeroPoint = n.input_size() > 2 && !n.input(2).empty();
        // Without a zero point opset 17 writes uint8; with one, its type (which output_dtype must equal).
        if (dt != 0 && !zeroPoint && dt != onnx::TensorProto::UINT8)
          return fail(n, "output_dtype without a zero point is new in opset 21");
        removeAttr(n, "output_dtype");
      }
      return Status::ok();
    }
    return Status::ok();
  }

  /// Reductions (opset 18): axes from an input to the attribute; noop_with_empty_axes.
  Status reduction(onnx::NodeProto& n, const Scope& s) {
    const bool noop = attrInt(n, "noop_with_empty_axes", 0) != 0;
    removeAttr(n, "noop_with_empty_axes");
    std::vector<int64_t> axes;
    if (n.input_size() > 1 && !n.input(1).empty()) {
      auto v = constInts(n, 1, s, "axes");
      if (!v) return Error{v.message()};
      axes = std::move(v).value();
      detach(n.input(1));
    }
    while (n.input_size() > 1) n.mutable_input()->RemoveLast();
    if (axes.empty() && noop) {
      // Empty axes with noop_with_empty_axes: the input unchanged.
      n.set_op_type("Identity");
      n.clear_attribute();
      ++done_["Reduce* with empty axes and noop_with_empty_axes: Identity"];
      return Status::ok();
    }
    if (!axes.empty()) setInts(n, "axes", axes);
    ++done_[n.op_type() + ": axes input to attribute"];
    return Status::ok();
  }

  /// Pad: the axes input (opset 18) spelled out into pads for every axis; mode wrap (19) refused.
  Status pad(onnx::NodeProto& n, const Scope& s, onnx::GraphProto* g) {
    if (attrString(n, "mode", "constant") == "wrap") return fail(n, "mode 'wrap' is new in opset 19");
    if (n.input_size() > 3 && !n.input(3).empty()) {
      auto axes = constInts(n, 3, s, "axes");
      if (!axes) return Error{axes.message()};
      auto pads = constInts(n, 1, s, "pads");
      if (!pads) return Error{pads.message()};
      const int64_t r = rankOf(n, 0, s);
      if (r < 0) return fail(n, "its data input '" + n.input(0) + "' has no known rank to spell out the axes");
      const size_t na = axes->size();
      if (pads->size() != 2 * na)
        return fail(n, "pads has " + std::to_string(pads->size()) + " values for " + std::to_string(na) + " axes");
      std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
      std::vector<bool> seen(static_cast<size_t>(r), false);
      for (size_t i = 0; i < na; ++i) {
        int64_t a = (*axes)[i];
        if (a < 0) a += r;
        if (a < 0 || a >= r || seen[static_cast<size_t>(a)])
          return fail(n, "axis " + std::to_string((*axes)[i]) + " is out of range or repeated");
        seen[static_cast<size_t>(a)] = true;
        full[static_cast<size_t>(a)] = (*pads)[i];
        full[static_cast<size_t>(a + r)] = (*pads)[i + na];
      }
      const std::string name = addInts(g, n, "pads", full);
      if (name.empty()) return fail(n, "an axes input inside a local function");
      detach(n.input(1));
      detach(n.input(3));
      n.set_input(1, name);
      n.mutable_input()->RemoveLast();
      ++done_["Pad: axes input spelled out into pads"];
    } else if (n.input_size() > 3) {
      n.mutable_input()->RemoveLast();
    }
    trimTrailingEmptyInputs(n);
    return Status::ok();
  }

  /// Split: num_outputs (opset 18) into explicit sizes, from the known size of the axis.
  Status split(onnx::NodeProto& n, const Scope& s, onnx::GraphProto* g) {
    const auto* numAttr = findAttr(n, "num_outputs");
    if (!numAttr) return Status::ok();
    const int64_t num = numAttr->i();
    removeAttr(n, "num_outputs");
    if (n.input_size() > 1 && !n.input(1).empty()) return Status::ok();  // explicit sizes win (invalid anyway)
    if (num != n.output_size())
      return fail(n, "num_outputs " + std::to_string(num) + " but " + std::to_string(n.output_size()) + " outputs");
    const Known* k = s.find(n.input(0));
    int64_t axis = attrInt(n, "axis", 0);
    const int64_t r = k && k->hasRank ? static_cast<int64_t>(k->dims.size()) : -1;
    if (axis < 0 && r >= 0) axis += r;
    const int64_t d = r >= 0 && axis >= 0 && axis < r ? k->dims[static_cast<size_t>(axis)] : -1;
    if (num <= 0) return fail(n, "num_outputs " + std::to_string(num));
    if (d < 0) return splitBySlices(n, g, num);
    if (d % num == 0) {
      ++done_["Split: num_outputs dividing the axis dropped"];
      return Status::ok();  // Opset 13 splits into equal parts, one per output.
    }
    // Opset 18: parts of ceil(d / num), the last one smaller.
    const int64_t chunk = (d + num - 1) / num;
    const int64_t last = d - chunk * (num - 1);
    if (last <= 0)
      return fail(n, "num_outputs " + std::to_string(num) + " leaves an empty part of an axis of " + std::to_string(d));
    std::vector<int64_t> sizes(static_cast<size_t>(num), chunk);
    sizes.back() = last;
    const std::string name = addInts(g, n, "split", sizes);
    if (name.empty()) return fail(n, "uneven num_outputs inside a local function");
    while (n.input_size() < 2) n.add_input("");
    n.set_input(1, name);
    ++done_["Split: num_outputs into explicit sizes"];
    return Status::ok();
  }

  /// Split into `num` parts on an axis whose size the model does not state: Slices of
  /// chunk = (d + num - 1) / num elements from i * chunk (Slice clamps the last part's end to d), with
  /// d read by Shape and Gather. Constant folding makes the bounds constants once the shapes are known.
  Status splitBySlices(onnx::NodeProto& n, onnx::GraphProto* g, int64_t num) {
    if (!g) return fail(n, "num_outputs on an axis of unknown size inside a local function");
    const int64_t axis = attrInt(n, "axis", 0);
    const std::string base = n.name().empty() ? n.output(0) : n.name();
    std::vector<onnx::NodeProto> nodes;
    auto add = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
      onnx::NodeProto& p = nodes.emplace_back();
      p.set_op_type(op);
      p.set_name(freshName(base + "_" + out));
      for (auto& i : ins) p.add_input(i);
      p.add_output(out);
      return &p;
    };
    const std::string shape = freshName(base + "_shape"), size = freshName(base + "_size"),
                      plus = freshName(base + "_plus"), chunk = freshName(base + "_chunk");
    add("Shape", {n.input(0)}, shape);
    add("Gather", {shape, addInts(g, n, "axis", {axis})}, size);
    add("Add", {size, addInts(g, n, "num_minus_1", {num - 1})}, plus);
    add("Div", {plus, addInts(g, n, "num", {num})}, chunk);
    std::string start = addInts(g, n, "zero", {0});
    for (int64_t i = 0; i < num; ++i) {
      const std::string& out = n.output(static_cast<int>(i));
      std::string end;
      if (i + 1 < num) {
        end = freshName(base + "_end" + std::to_string(i));
        add("Mul", {chunk, addInts(g, n, "k" + std::to_string(i + 1), {i + 1})}, end);
      } else {
        end = addInts(g, n, "end", {std::numeric_limits<int64_t>::max()});
      }
      if (!out.empty()) add("Slice", {n.input(0), start, end, addInts(g, n, "axes", {axis})}, out);
      start = end;
    }
    replaced_[&n] = std::move(nodes);
    ++done_["Split: num_outputs on an axis of unknown size into Slices"];
    return Status::ok();
  }

  /// Resize: antialias, axes, keep_aspect_ratio_policy (opset 18), half_pixel_symmetric (19).
  Status resize(onnx::NodeProto& n, const Scope& s) {
    if (attrInt(n, "antialias", 0) != 0) return fail(n, "antialias is new in opset 18");
    removeAttr(n, "antialias");
    if (attrString(n, "coordinate_transformation_mode", "half_pixel") == "half_pixel_symmetric")
      return fail(n, "coordinate_transformation_mode 'half_pixel_symmetric' is new in opset 19");
    const bool sizes = n.input_size() > 3 && !n.input(3).empty();
    if (attrString(n, "keep_aspect_ratio_policy", "stretch") != "stretch" && sizes)
      return fail(n, "keep_aspect_ratio_policy other than 'stretch' is new in opset 18");
    removeAttr(n, "keep_aspect_ratio_policy");
    if (const auto* a = findAttr(n, "axes")) {
      const int64_t r = rankOf(n, 0, s);
      bool all = r == a->ints_size();
      for (int i = 0; all && i < a->ints_size(); ++i) all = (a->ints(i) < 0 ? a->ints(i) + r : a->ints(i)) == i;
      if (!all) return fail(n, "axes that are not every axis in order are new in opset 18");
      removeAttr(n, "axes");
      ++done_["Resize: axes of every axis dropped"];
    }
    return Status::ok();
  }

  /// Removes the Constant nodes and initializers that only the rewritten operators read.
  void removeDetached() {
    if (detached_.empty()) return;
    std::unordered_map<std::string, int> uses;
    std::function<void(const onnx::GraphProto&)> count = [&](const onnx::GraphProto& g) {
      for (const auto& o : g.output()) ++uses[o.name()];
      for (const auto& n : g.node()) {
        for (const auto& i : n.input()) ++uses[i];
        for (const auto& a : n.attribute()) {
          if (a.has_g()) count(a.g());
          for (const auto& sub : a.graphs()) count(sub);
        }
      }
    };
    count(model_.graph());
    auto unused = [&](const std::string& name) { return detached_.count(name) && !uses.count(name); };
    std::function<void(onnx::GraphProto&)> prune = [&](onnx::GraphProto& g) {
      std::unordered_set<std::string> inputs;
      for (const auto& v : g.input()) inputs.insert(v.name());
      auto* inits = g.mutable_initializer();
      for (int i = inits->size() - 1; i >= 0; --i)
        if (unused(inits->Get(i).name()) && !inputs.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
      auto* nodes = g.mutable_node();
      for (int i = nodes->size() - 1; i >= 0; --i) {
        const auto& n = nodes->Get(i);
        if (n.op_type() == "Constant" && isDefaultDomain(n.domain()) && n.output_size() == 1 && unused(n.output(0)))
          nodes->DeleteSubrange(i, 1);
      }
      for (auto& n : *nodes)
        for (auto& a : *n.mutable_attribute()) {
          if (a.has_g()) prune(*a.mutable_g());
          for (auto& sub : *a.mutable_graphs()) prune(sub);
        }
    };
    prune(*model_.mutable_graph());
  }
};

}  // namespace

Status lowerIrVersion(onnx::ModelProto& model) {
  IrScan scan;
  scan.graph(model.graph());
  for (const auto& f : model.functions()) scan.function(f);
  if (!scan.problem.empty())
    return makeError("IR version ", std::to_string(model.ir_version()), " model ", scan.problem,
                     ", which ONNX 1.12 (IR 8) cannot represent");
  model.set_ir_version(8);
  return Status::ok();
}

Status lowerOpset(onnx::ModelProto& model, std::vector<std::string>& notes) {
  Lowerer l(model);
  return l.run(notes);
}

}  // namespace partex::onnximp
