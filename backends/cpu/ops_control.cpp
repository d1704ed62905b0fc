// Control flow: If, Loop and Scan. A control-flow node is one kernel (docs/design-decisions.md, "Control
// flow runs as one operator"): it prepares the kernels of its bodies once, from this backend's own table,
// and runs them on the calling thread with the node's device (the CpuKernel around it has already applied
// the device's pinning and thread count). Semantics follow the ONNX operator specification (If-1/11/13,
// Loop-1/11/13/16, Scan-8/9/11/16) and, where it leaves a choice, ONNX Runtime (onnxruntime/core/providers/
// cpu/controlflow/loop.cc: the body's condition output decides the next iteration even when the node's
// condition input is omitted).

#include <algorithm>
#include <cstring>
#include <map>

#include "cpu/cpu_ops.h"
#include "ir/fusion.h"
#include "kernels/kernels.h"

namespace partex::cpu {
namespace {

const OpEntry* entryFor(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  for (const OpEntry& e : opTable())
    if (e.opType == n.opType) return &e;
  return nullptr;
}

const Graph* bodyOf(const Node& n, const std::string& name) {
  for (const auto& [key, g] : n.subgraphs)
    if (key == name) return g.get();
  return nullptr;
}

std::shared_ptr<Graph> sharedBodyOf(const Node& n, const std::string& name) {
  for (const auto& [key, g] : n.subgraphs)
    if (key == name) return g;
  return nullptr;
}

/// Whether every operator of `body` (recursively: a nested If/Loop checks its own bodies) has a kernel
/// here; "" when so, otherwise the first reason, naming the body and the node.
std::string checkBody(const Graph& body, const std::string& label) {
  for (const Node& n : body.nodes) {
    const OpEntry* e = entryFor(n);
    if (!e)
      return label + ": op type " + (n.domain.empty() ? std::string() : n.domain + ".") + n.opType +
             " has no CPU kernel";
    std::string why = e->check(body, n);
    if (!why.empty()) return label + ": node '" + n.name + "' (" + n.opType + "): " + why;
  }
  for (ValueId v : body.outputs)
    if (!tensorDTypeSupported(body.values[static_cast<size_t>(v)].dtype))
      return label + ": output '" + body.values[static_cast<size_t>(v)].name + "' is not a tensor (" +
             dtypeName(body.values[static_cast<size_t>(v)].dtype) + "; sequence and optional values are not supported)";
  return "";
}

/// The node's inputs and outputs must be plain tensors (no sequence or optional values).
std::string checkTensorsOnly(const Graph& g, const Node& n) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (hasIn(n, i) && !tensorDTypeSupported(inDType(g, n, i)))
      return "input " + std::to_string(i) + " is not a tensor (" + dtypeName(inDType(g, n, i)) +
             "; sequence and optional values are not supported)";
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0 && !tensorDTypeSupported(outDType(g, n, i)))
      return "output " + std::to_string(i) + " is not a tensor (" + dtypeName(outDType(g, n, i)) +
             "; sequence and optional values are not supported)";
  return "";
}

/// One body, prepared once: its kernels in topological order, its weights, and where each of its values
/// comes from (a formal input, a value of the enclosing graph passed to the node, a weight, or a step's
/// output). Runs any number of times; the steps' output tensors keep their storage between runs.
class Body {
 public:
  /// `outerIndex`: node input index of every name the node receives (its explicit and implicit inputs).
  Status prepare(std::shared_ptr<const Graph> body, const std::string& label,
                 const std::map<std::string, size_t>& outerIndex) {
    body_ = std::move(body);
    label_ = label;
    const Graph& b = *body_;
    auto order = b.topologicalOrder();
    if (!order) return makeError(label, ": ", order.message());
    src_.assign(b.values.size(), Source{});
    for (size_t i = 0; i < b.inputs.size(); ++i) src_[static_cast<size_t>(b.inputs[i])] = {Kind::Formal, i, 0};
    for (ValueId v = 0; v < static_cast<ValueId>(b.values.size()); ++v) {
      const Value& val = b.values[static_cast<size_t>(v)];
      Source& s = src_[static_cast<size_t>(v)];
      if (s.kind == Kind::Formal || val.producer != kNone) continue;
      if (val.isWeight) {
        if (val.consumers.empty() && !val.isGraphOutput) continue;
        auto t = leafTensor(b, v, 1);
        if (!t) return makeError(label, ": weight '", val.name, "': ", t.message());
        s = {Kind::Weight, weights_.size(), 0};
        weights_.push_back(std::move(*t));
      } else if (val.isGraphInput) {
        auto it = outerIndex.find(val.name);
        if (it == outerIndex.end())
          return makeError(label, ": reads '", val.name, "' of the enclosing graph, which the node is not given");
        s = {Kind::Outer, it->second, 0};
      }
    }
    for (OpId op : *order) {
      const Node& n = b.nodes[static_cast<size_t>(op)];
      const OpEntry* e = entryFor(n);
      if (!e) return makeError(label, ": op type ", n.opType, " has no CPU kernel");
      if (std::string why = e->check(b, n); !why.empty())
        return makeError(label, ": node '", n.name, "' (", n.opType, "): ", why);
    }
    // The body's fused groups (ir/fusion.h: chains and the graph-level rewrites, LayerNorm and Gelu
    // written out, Pad into Conv), as the executor fuses the main graph's: a group runs as one kernel
    // in the slot of its last operator, where every external input has been computed (a group whose
    // input comes later in this order runs unfused). openWakeWord's verifier runs two LayerNorm
    // patterns of eleven operators each in an If branch.
    std::vector<size_t> pos(b.nodes.size(), 0);
    for (size_t i = 0; i < order->size(); ++i) pos[static_cast<size_t>((*order)[i])] = i;
    std::vector<int> groupOf(b.nodes.size(), -1);
    const std::vector<FusedGroup> groups = fusedGroups(b);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const FusedGroup& grp = groups[gi];
      const size_t slot = pos[static_cast<size_t>(grp.ops.back())];
      bool ready = true;
      for (OpId o : grp.ops) ready = ready && pos[static_cast<size_t>(o)] <= slot;
      for (ValueId v : grp.inputs) {
        const OpId p = v >= 0 ? b.values[static_cast<size_t>(v)].producer : kNone;
        ready = ready && (p == kNone || pos[static_cast<size_t>(p)] < slot);
      }
      if (!ready) continue;
      for (OpId o : grp.ops) groupOf[static_cast<size_t>(o)] = static_cast<int>(gi);
    }
    // Values that are the same in every run: the weights, and the outputs of deterministic operators
    // that read only such values (below).
    std::vector<bool> fixed(b.values.size(), false);
    for (size_t v = 0; v < b.values.size(); ++v) fixed[v] = src_[v].kind == Kind::Weight;
    auto allFixed = [&](const std::vector<ValueId>& ins) {
      bool any = false;
      for (ValueId v : ins) {
        if (v < 0) continue;
        if (!fixed[static_cast<size_t>(v)]) return false;
        any = true;
      }
      return any;
    };
    for (OpId op : *order) {
      const Node& n = b.nodes[static_cast<size_t>(op)];
      const int gi = groupOf[static_cast<size_t>(op)];
      Step st;
      st.node = op;
      if (gi >= 0) {
        const FusedGroup& grp = groups[static_cast<size_t>(gi)];
        if (grp.ops.back() != op) continue;  // runs in the group's kernel
        auto k = makeFusedKernel(b, grp.ops);
        if (!k) return makeError(label, ": group of '", n.name, "': ", k.message());
        st.kernel = std::move(*k);
        st.ins = grp.inputs;
        st.outs.resize(1);
        st.fixed = allFixed(st.ins);
        st.pure = true;
        fixed[static_cast<size_t>(grp.output)] = st.fixed;
        src_[static_cast<size_t>(grp.output)] = {Kind::Step, steps_.size(), 0};
        steps_.push_back(std::move(st));
        continue;
      }
      auto k = entryFor(n)->make(b, n);
      if (!k) return makeError(label, ": node '", n.name, "': ", k.message());
      st.kernel = std::move(*k);
      st.ins = n.inputs;
      st.outs.resize(n.outputs.size());
      st.pure = n.subgraphs.empty() && !randomOp(n.opType);
      st.fixed = st.pure && allFixed(st.ins);
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (n.outputs[i] >= 0) {
          src_[static_cast<size_t>(n.outputs[i])] = {Kind::Step, steps_.size(), i};
          fixed[static_cast<size_t>(n.outputs[i])] = st.fixed;
        }
      steps_.push_back(std::move(st));
    }
    return Status::ok();
  }

  const Graph& graph() const { return *body_; }
  size_t numInputs() const { return body_->inputs.size(); }
  size_t numOutputs() const { return body_->outputs.size(); }

  /// Declares which formal inputs keep their value through one run of the enclosing node (a Loop's
  /// loop-carried values that the body passes through unchanged: Paddle2ONNX's Loop carries every weight
  /// its body reads that way). A step that reads only such inputs, the node's inputs from the enclosing
  /// graph, weights and other such steps' outputs gives the same outputs in every iteration of one run:
  /// it runs in the run's first iteration only (run(..., firstOfRun)). Loop-invariant code motion, as
  /// compilers do it; SLANet's decoder transposed two GRU weights in each of its iterations.
  void markInvariant(const std::vector<bool>& formalInvariant) {
    std::vector<bool> inv(src_.size(), false);
    for (size_t v = 0; v < src_.size(); ++v) {
      const Source& s = src_[v];
      inv[v] = s.kind == Kind::Weight || s.kind == Kind::Outer ||
               (s.kind == Kind::Formal && s.index < formalInvariant.size() && formalInvariant[s.index]);
    }
    for (size_t si = 0; si < steps_.size(); ++si) {
      Step& st = steps_[si];
      bool all = st.pure, any = false;
      for (ValueId v : st.ins) {
        if (v < 0) continue;
        any = true;
        all = all && inv[static_cast<size_t>(v)];
      }
      st.perRun = !st.fixed && all && any;
      if (!(st.perRun || st.fixed)) continue;
      for (size_t v = 0; v < src_.size(); ++v)
        if (src_[v].kind == Kind::Step && src_[v].index == si) inv[v] = true;
    }
  }

  /// Runs the body once on `formal` (one per body input) and the node's inputs `nodeIn` (the enclosing
  /// graph's values). output(i) is valid until the next run.
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& formal,
             const std::vector<const Tensor*>& nodeIn, bool firstOfRun = true) {
    if (formal.size() != body_->inputs.size())
      return makeError(label_, ": ", std::to_string(formal.size()), " inputs given, the body has ",
                       std::to_string(body_->inputs.size()));
    formal_ = &formal;
    nodeIn_ = &nodeIn;
    std::vector<const Tensor*>& ins = scratchIns_;
    for (Step& st : steps_) {
      if (st.fixed && fixedDone_) continue;  // computed in the first run, kept in st.outs
      if (st.perRun && !firstOfRun) continue;  // computed in this run's first iteration
      const Node& n = body_->nodes[static_cast<size_t>(st.node)];
      ins.assign(st.ins.size(), nullptr);
      for (size_t i = 0; i < st.ins.size(); ++i) {
        if (st.ins[i] < 0) continue;
        ins[i] = tensorOf(st.ins[i]);
        if (!ins[i])
          return makeError(label_, ": node '", n.name, "': input '", valueName(st.ins[i]), "' has no data");
      }
      Status s = st.kernel->run(ctx, ins, st.outs);
      if (!s) return makeError(label_, ": node '", n.name, "': ", s.message());
    }
    fixedDone_ = true;
    return Status::ok();
  }

  /// Body output i of the last run (nullptr when it has none).
  const Tensor* output(size_t i) const { return tensorOf(body_->outputs[i]); }
  const std::string& outputName(size_t i) const { return valueName(body_->outputs[i]); }

  void releaseCaches() {
    for (Step& st : steps_) st.kernel->releaseCaches();
  }

 private:
  enum class Kind : uint8_t { None, Formal, Outer, Weight, Step };
  struct Source {
    Kind kind = Kind::None;
    size_t index = 0;  ///< formal input, node input, weight or step
    size_t out = 0;    ///< the step's output
  };
  struct Step {
    std::unique_ptr<OpKernel> kernel;
    OpId node = kNone;            ///< the operator (a fused group's last one)
    std::vector<ValueId> ins;     ///< the node's inputs, or the group's external inputs
    std::vector<Tensor> outs;
    /// Reads only weights and other fixed steps' outputs: the same outputs in every run, computed
    /// once (the importer folds constants of at most kMaxConstElements; Silero VAD's LSTM weights are
    /// sliced and concatenated from larger ones in its If branch, 0.5 MiB copied per run otherwise).
    bool fixed = false;
    /// Deterministic (no subgraph, no random generator).
    bool pure = false;
    /// Reads only values that do not change during one run of the enclosing node (markInvariant).
    bool perRun = false;
  };
  /// Random generators are not fixed even on fixed inputs.
  static bool randomOp(const std::string& t) {
    return t == "RandomNormal" || t == "RandomUniform" || t == "RandomNormalLike" || t == "RandomUniformLike" ||
           t == "Multinomial" || t == "Bernoulli";
  }
  bool fixedDone_ = false;  ///< the fixed steps have run

  const std::string& valueName(ValueId v) const { return body_->values[static_cast<size_t>(v)].name; }

  const Tensor* tensorOf(ValueId v) const {
    const Source& s = src_[static_cast<size_t>(v)];
    const Tensor* t = nullptr;
    switch (s.kind) {
      case Kind::Formal:
        t = s.index < formal_->size() ? (*formal_)[s.index] : nullptr;
        break;
      case Kind::Outer:
        t = s.index < nodeIn_->size() ? (*nodeIn_)[s.index] : nullptr;
        break;
      case Kind::Weight:
        t = &weights_[s.index];
        break;
      case Kind::Step:
        t = &steps_[s.index].outs[s.out];
        break;
      case Kind::None:
        break;
    }
    return t && !t->empty() ? t : nullptr;
  }

  std::shared_ptr<const Graph> body_;
  std::string label_;
  std::vector<Source> src_;
  std::vector<Tensor> weights_;
  std::vector<Step> steps_;
  const std::vector<const Tensor*>* formal_ = nullptr;
  const std::vector<const Tensor*>* nodeIn_ = nullptr;
  std::vector<const Tensor*> scratchIns_;
};

/// Node input index by name (implicit inputs last, so they win over an explicit input of the same name).
std::map<std::string, size_t> outerIndexOf(const Graph& g, const Node& n) {
  std::map<std::string, size_t> idx;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0) idx[g.values[static_cast<size_t>(n.inputs[i])].name] = i;
  return idx;
}

size_t implicitCount(const Node& n) {
  const int64_t k = n.attrInt("partex.implicit_inputs", 0);
  return k > 0 && static_cast<size_t>(k) <= n.inputs.size() ? static_cast<size_t>(k) : 0;
}

Result<std::unique_ptr<Body>> prepareBody(const Node& n, const Graph& g, const std::string& attr) {
  auto body = std::make_unique<Body>();
  auto sub = sharedBodyOf(n, attr);
  if (!sub) return makeError("node '", n.name, "' has no ", attr);
  if (auto s = body->prepare(sub, attr + " of '" + n.name + "'", outerIndexOf(g, n)); !s) return Error{s.message()};
  return body;
}

/// Rows of `shape` before `axis`, and the bytes of one element of the slab after it.
void splitAt(const std::vector<int64_t>& shape, size_t axis, int64_t elem, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = elem;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) outer *= shape[d];
    if (d > axis) inner *= shape[d];
  }
}

/// dst = src[..., t, ...] along `axis` (the axis removed).
Status sliceAxis(const Tensor& src, size_t axis, int64_t t, Tensor& dst) {
  std::vector<int64_t> shape = src.shape();
  const int64_t len = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  if (auto s = dst.ensure(src.dtype(), shape); !s) return s;
  int64_t outer, inner;
  splitAt(src.shape(), axis, tensorElementSize(src.dtype()), outer, inner);
  const auto* from = static_cast<const std::byte*>(src.raw());
  auto* to = static_cast<std::byte*>(dst.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(to + o * inner, from + (o * len + t) * inner, static_cast<size_t>(inner));
  return Status::ok();
}

/// dst = the `parts` (equal shapes) stacked along a new `axis`, in reverse order when `reverse`.
/// `emptyShape`/`dtype`: what an empty stack (no iteration) gives: [0] + emptyShape at `axis`.
Status stackAxis(const std::vector<Tensor>& parts, size_t count, size_t axis, bool reverse, Tensor& dst, DType dtype,
                 const std::vector<int64_t>& emptyShape) {
  if (count == 0) {
    std::vector<int64_t> shape = emptyShape;
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(std::min(axis, shape.size())), 0);
    return dst.ensure(dtype, shape);
  }
  const Tensor& first = parts[0];
  std::vector<int64_t> shape = first.shape();
  if (axis > shape.size()) return makeError("scan output axis ", std::to_string(axis), " is out of range");
  for (size_t i = 1; i < count; ++i)
    if (parts[i].shape() != first.shape() || parts[i].dtype() != first.dtype())
      return makeError("scan output changes shape between iterations: ", first.describe(), " then ",
                       parts[i].describe());
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), static_cast<int64_t>(count));
  if (auto s = dst.ensure(first.dtype(), shape); !s) return s;
  int64_t outer, inner;
  splitAt(shape, axis, tensorElementSize(first.dtype()), outer, inner);
  auto* to = static_cast<std::byte*>(dst.raw());
  const int64_t n = static_cast<int64_t>(count);
  for (int64_t t = 0; t < n; ++t) {
    const auto* from = static_cast<const std::byte*>(parts[static_cast<size_t>(reverse ? n - 1 - t : t)].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(to + (o * n + t) * inner, from + o * inner, static_cast<size_t>(inner));
  }
  return Status::ok();
}

/// The static shape of body output i for an empty scan output (dims unknown: 0).
std::vector<int64_t> staticShape(const Graph& body, size_t i) {
  const Value& v = body.values[static_cast<size_t>(body.outputs[i])];
  std::vector<int64_t> s = v.shape;
  for (int64_t& d : s) d = std::max<int64_t>(d, 0);
  return s;
}

bool scalarTrue(const Tensor& t) {
  return t.numElements() > 0 && t.valueAsInt(0) != 0;
}

// ---------------------------------------------------------------------------------------------------------
// If

class IfKernel final : public OpKernel {
 public:
  IfKernel(std::unique_ptr<Body> thenB, std::unique_ptr<Body> elseB)
      : then_(std::move(thenB)), else_(std::move(elseB)) {}

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "cond"); !e.empty()) return Error{e};
    if (in[0]->numElements() != 1)
      return makeError("cond has ", std::to_string(in[0]->numElements()), " elements, not 1");
    Body& b = scalarTrue(*in[0]) ? *then_ : *else_;
    if (auto s = b.run(ctx, {}, in); !s) return s;
    if (b.numOutputs() < out.size())
      return makeError("the branch has ", std::to_string(b.numOutputs()), " outputs, the node ",
                       std::to_string(out.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const Tensor* t = b.output(i);
      if (!t) return makeError("branch output '", b.outputName(i), "' has no data");
      if (auto s = out[i].copyFrom(*t); !s) return s;
    }
    return Status::ok();
  }
  void releaseCaches() override {
    then_->releaseCaches();
    else_->releaseCaches();
  }

 private:
  std::unique_ptr<Body> then_, else_;
};

// ---------------------------------------------------------------------------------------------------------
// Loop: inputs M (trip count, optional), cond (optional), N loop-carried values, then implicit inputs; the
// body takes (iteration, cond, N carried) and gives (cond, N carried, K scan outputs); the node gives the
// N final carried values and the K scan outputs stacked along a new first axis.

class LoopKernel final : public OpKernel {
 public:
  LoopKernel(std::unique_ptr<Body> body, size_t nCarried, std::vector<DType> scanTypes)
      : body_(std::move(body)), n_(nCarried), scanTypes_(std::move(scanTypes)) {
    // A loop-carried value that the body returns as it received it (its output is its own input) needs
    // no copy per iteration, and what is computed from it alone is computed once per run.
    const Graph& b = body_->graph();
    pass_.assign(n_, false);
    std::vector<bool> invariant(b.inputs.size(), false);
    for (size_t j = 0; j < n_; ++j)
      if (2 + j < b.inputs.size() && 1 + j < b.outputs.size() && b.outputs[1 + j] == b.inputs[2 + j]) {
        pass_[j] = true;
        invariant[2 + j] = true;
      }
    body_->markInvariant(invariant);
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    int64_t trips = -1;  // none: unbounded
    if (in.size() > 0 && in[0] && !in[0]->empty()) {
      if (in[0]->numElements() != 1) return makeError("M is not a scalar");
      trips = in[0]->valueAsInt(0);
    }
    bool cond = true;
    if (in.size() > 1 && in[1] && !in[1]->empty()) {
      if (in[1]->numElements() != 1) return makeError("cond is not a scalar");
      cond = scalarTrue(*in[1]);
    }
    const size_t k = scanTypes_.size();
    if (body_->numInputs() != n_ + 2 || body_->numOutputs() != n_ + 1 + k)
      return makeError("the body has ", std::to_string(body_->numInputs()), " inputs and ",
                       std::to_string(body_->numOutputs()), " outputs; the node has ", std::to_string(n_),
                       " loop-carried values");
    carried_.resize(n_);
    next_.resize(n_);
    for (size_t j = 0; j < n_; ++j) {
      const Tensor* t = 2 + j < in.size() ? in[2 + j] : nullptr;
      if (!t || t->empty()) return makeError("missing loop-carried input ", std::to_string(j));
      if (auto s = carried_[j].copyFrom(*t); !s) return s;
    }
    if (auto s = iter_.ensure(DType::Int64, {}); !s) return s;
    if (auto s = cond_.ensure(DType::Bool, {}); !s) return s;
    std::vector<const Tensor*> formal(n_ + 2);
    formal[0] = &iter_;
    formal[1] = &cond_;
    for (size_t j = 0; j < n_; ++j) formal[2 + j] = &carried_[j];
    scans_.resize(k);
    int64_t i = 0;
    for (; (trips < 0 || i < trips) && cond; ++i) {
      *iter_.data<int64_t>() = i;
      *static_cast<uint8_t*>(cond_.raw()) = 1;
      if (auto s = body_->run(ctx, formal, in, i == 0); !s) return s;
      const Tensor* c = body_->output(0);
      if (!c || c->numElements() != 1) return makeError("the body's condition output is not a scalar");
      cond = scalarTrue(*c);
      // Into the other buffer first: a body output may be another carried input (a swap).
      for (size_t j = 0; j < n_; ++j) {
        if (pass_[j]) continue;  // stays in carried_[j]
        const Tensor* t = body_->output(1 + j);
        if (!t) return makeError("body output '", body_->outputName(1 + j), "' has no data");
        if (auto s = next_[j].copyFrom(*t); !s) return s;
      }
      for (size_t j = 0; j < n_; ++j)
        if (!pass_[j]) std::swap(carried_[j], next_[j]);
      for (size_t j = 0; j < k; ++j) {
        const Tensor* t = body_->output(1 + n_ + j);
        if (!t) return makeError("body output '", body_->outputName(1 + n_ + j), "' has no data");
        auto& parts = scans_[j];
        if (parts.size() <= static_cast<size_t>(i)) parts.resize(static_cast<size_t>(i) + 1);
        if (auto s = parts[static_cast<size_t>(i)].copyFrom(*t); !s) return s;
      }
    }
    for (size_t j = 0; j < n_ && j < out.size(); ++j)
      if (auto s = out[j].copyFrom(carried_[j]); !s) return s;
    for (size_t j = 0; j < k && n_ + j < out.size(); ++j)
      if (auto s = stackAxis(scans_[j], static_cast<size_t>(i), 0, false, out[n_ + j], scanTypes_[j],
                             staticShape(body_->graph(), 1 + n_ + j));
          !s)
        return s;
    return Status::ok();
  }
  void releaseCaches() override { body_->releaseCaches(); }

 private:
  std::unique_ptr<Body> body_;
  size_t n_;
  std::vector<DType> scanTypes_;
  std::vector<bool> pass_;
  Tensor iter_, cond_;
  std::vector<Tensor> carried_, next_;
  std::vector<std::vector<Tensor>> scans_;
};

// ---------------------------------------------------------------------------------------------------------
// Scan (9+): inputs N initial states, then M scan inputs; the body takes (N states, M slices) and gives
// (N states, K scan output slices). Scan-8 has a leading batch axis and an optional sequence_lens input:
// it runs the same loop once per batch entry.

class ScanKernel final : public OpKernel {
 public:
  ScanKernel(std::unique_ptr<Body> body, const Node& n, bool scan8, size_t nExplicit)
      : body_(std::move(body)), scan8_(scan8) {
    m_ = static_cast<size_t>(std::max<int64_t>(0, n.attrInt("num_scan_inputs", 0)));
    const size_t first = scan8 ? 1 : 0;
    nState_ = nExplicit >= first + m_ ? nExplicit - first - m_ : 0;
    k_ = n.outputs.size() >= nState_ ? n.outputs.size() - nState_ : 0;
    inAxes_ = attrIntsOr(n, "scan_input_axes", std::vector<int64_t>(m_, 0));
    inDirs_ = attrIntsOr(n, scan8 ? "directions" : "scan_input_directions", std::vector<int64_t>(m_, 0));
    outAxes_ = attrIntsOr(n, "scan_output_axes", std::vector<int64_t>(k_, 0));
    outDirs_ = attrIntsOr(n, "scan_output_directions", std::vector<int64_t>(k_, 0));
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (inAxes_.size() != m_ || inDirs_.size() != m_ || outAxes_.size() != k_ || outDirs_.size() != k_)
      return makeError("scan axes/directions attributes do not match the inputs and outputs");
    if (body_->numInputs() != nState_ + m_ || body_->numOutputs() != nState_ + k_)
      return makeError("the body has ", std::to_string(body_->numInputs()), " inputs and ",
                       std::to_string(body_->numOutputs()), " outputs; the node has ", std::to_string(nState_),
                       " states, ", std::to_string(m_), " scan inputs and ", std::to_string(k_), " scan outputs");
    const size_t first = scan8_ ? 1 : 0;
    std::vector<const Tensor*> states(nState_), scans(m_);
    for (size_t j = 0; j < nState_; ++j) {
      states[j] = first + j < in.size() ? in[first + j] : nullptr;
      if (!states[j] || states[j]->empty()) return makeError("missing initial state ", std::to_string(j));
    }
    for (size_t j = 0; j < m_; ++j) {
      scans[j] = first + nState_ + j < in.size() ? in[first + nState_ + j] : nullptr;
      if (!scans[j] || scans[j]->empty()) return makeError("missing scan input ", std::to_string(j));
    }
    out.resize(nState_ + k_);
    if (!scan8_) return scanOnce(ctx, in, states, scans, out);
    // Scan-8: batch axis 0 on every state, scan input and output; the scan axis is then axis 0 of a slice.
    if (in.size() > 0 && in[0] && !in[0]->empty())
      for (int64_t b = 0; b < in[0]->numElements(); ++b)
        if (m_ && in[0]->valueAsInt(b) != scans[0]->dim(1))
          return makeError("sequence_lens shorter than the scan inputs are not supported");
    if (m_ == 0 || scans[0]->rank() < 2) return makeError("Scan-8 needs scan inputs of rank 2 or more");
    const int64_t batch = scans[0]->dim(0);
    std::vector<Tensor> sliceIn(nState_ + m_);
    std::vector<std::vector<Tensor>> perBatch(nState_ + k_, std::vector<Tensor>(static_cast<size_t>(batch)));
    std::vector<Tensor> o(nState_ + k_);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<const Tensor*> st(nState_), sc(m_);
      for (size_t j = 0; j < nState_; ++j) {
        if (states[j]->rank() < 1 || states[j]->dim(0) != batch) return makeError("state batch mismatch");
        if (auto s = sliceAxis(*states[j], 0, b, sliceIn[j]); !s) return s;
        st[j] = &sliceIn[j];
      }
      for (size_t j = 0; j < m_; ++j) {
        if (scans[j]->dim(0) != batch) return makeError("scan input batch mismatch");
        if (auto s = sliceAxis(*scans[j], 0, b, sliceIn[nState_ + j]); !s) return s;
        sc[j] = &sliceIn[nState_ + j];
      }
      if (auto s = scanOnce(ctx, in, st, sc, o); !s) return s;
      for (size_t j = 0; j < nState_ + k_; ++j) perBatch[j][static_cast<size_t>(b)] = o[j];
    }
    for (size_t j = 0; j < nState_ + k_; ++j)
      if (auto s = stackAxis(perBatch[j], static_cast<size_t>(batch), 0, false, out[j], DType::Float32, {}); !s)
        return s;
    return Status::ok();
  }
  void releaseCaches() override { body_->releaseCaches(); }

 private:
  Status scanOnce(const ExecContext& ctx, const std::vector<const Tensor*>& nodeIn,
                  const std::vector<const Tensor*>& states, const std::vector<const Tensor*>& scans,
                  std::vector<Tensor>& out) {
    int64_t len = -1;
    std::vector<size_t> axes(m_);
    for (size_t j = 0; j < m_; ++j) {
      const int64_t a = normAxis(inAxes_[j], scans[j]->rank());
      if (a < 0)
        return makeError("scan_input_axes[", std::to_string(j), "] is out of range for ", scans[j]->describe());
      axes[j] = static_cast<size_t>(a);
      const int64_t l = scans[j]->dim(a);
      if (len >= 0 && l != len)
        return makeError("scan inputs differ in length: ", std::to_string(len), " and ", std::to_string(l));
      len = l;
    }
    if (len < 0) len = 0;
    state_.resize(nState_);
    nextState_.resize(nState_);
    for (size_t j = 0; j < nState_; ++j)
      if (auto s = state_[j].copyFrom(*states[j]); !s) return s;
    slices_.resize(m_);
    std::vector<const Tensor*> formal(nState_ + m_);
    for (size_t j = 0; j < nState_; ++j) formal[j] = &state_[j];
    for (size_t j = 0; j < m_; ++j) formal[nState_ + j] = &slices_[j];
    parts_.resize(k_);
    for (auto& p : parts_)
      if (p.size() < static_cast<size_t>(len)) p.resize(static_cast<size_t>(len));
    for (int64_t t = 0; t < len; ++t) {
      for (size_t j = 0; j < m_; ++j)
        if (auto s = sliceAxis(*scans[j], axes[j], inDirs_[j] ? len - 1 - t : t, slices_[j]); !s) return s;
      if (auto s = body_->run(ctx, formal, nodeIn); !s) return s;
      for (size_t j = 0; j < nState_ + k_; ++j)
        if (!body_->output(j)) return makeError("body output '", body_->outputName(j), "' has no data");
      for (size_t j = 0; j < nState_; ++j)  // the other buffer first, as Loop does
        if (auto s = nextState_[j].copyFrom(*body_->output(j)); !s) return s;
      std::swap(state_, nextState_);
      for (size_t j = 0; j < nState_; ++j) formal[j] = &state_[j];
      for (size_t j = 0; j < k_; ++j)
        if (auto s = parts_[j][static_cast<size_t>(t)].copyFrom(*body_->output(nState_ + j)); !s) return s;
    }
    for (size_t j = 0; j < nState_; ++j)
      if (auto s = out[j].copyFrom(state_[j]); !s) return s;
    for (size_t j = 0; j < k_; ++j) {
      const std::vector<int64_t> slice = staticShape(body_->graph(), nState_ + j);
      int64_t axis = outAxes_[j];
      const int64_t rank = len > 0 ? parts_[j][0].rank() + 1 : static_cast<int64_t>(slice.size()) + 1;
      axis = normAxis(axis, rank);
      if (axis < 0) return makeError("scan_output_axes[", std::to_string(j), "] is out of range");
      if (auto s = stackAxis(
              parts_[j], static_cast<size_t>(len), static_cast<size_t>(axis), outDirs_[j] != 0, out[nState_ + j],
              body_->graph().values[static_cast<size_t>(body_->graph().outputs[nState_ + j])].dtype, slice);
          !s)
        return s;
    }
    return Status::ok();
  }

  std::unique_ptr<Body> body_;
  bool scan8_;
  size_t m_ = 0, nState_ = 0, k_ = 0;
  std::vector<int64_t> inAxes_, inDirs_, outAxes_, outDirs_;
  std::vector<Tensor> state_, nextState_, slices_;
  std::vector<std::vector<Tensor>> parts_;
};

std::string checkIf(const Graph& g, const Node& n) {
  if (std::string why = checkTensorsOnly(g, n); !why.empty()) return why;
  const Graph* t = bodyOf(n, "then_branch");
  const Graph* e = bodyOf(n, "else_branch");
  if (!t || !e) return "then_branch or else_branch is missing";
  if (t->outputs.size() < n.outputs.size() || e->outputs.size() < n.outputs.size())
    return "a branch has fewer outputs than the node";
  if (std::string why = checkBody(*t, "then_branch"); !why.empty()) return why;
  return checkBody(*e, "else_branch");
}

std::string checkLoopOrScan(const Graph& g, const Node& n) {
  if (std::string why = checkTensorsOnly(g, n); !why.empty()) return why;
  const Graph* b = bodyOf(n, "body");
  if (!b) return "the body is missing";
  return checkBody(*b, "body");
}

}  // namespace

void addControlFlowOps(std::vector<OpEntry>& t) {
  t.push_back({"If", checkIf, [](const Graph& g, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 auto tb = prepareBody(n, g, "then_branch");
                 if (!tb) return Error{tb.message()};
                 auto eb = prepareBody(n, g, "else_branch");
                 if (!eb) return Error{eb.message()};
                 return std::unique_ptr<OpKernel>(std::make_unique<IfKernel>(std::move(*tb), std::move(*eb)));
               }});
  t.push_back({"Loop", checkLoopOrScan, [](const Graph& g, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 auto b = prepareBody(n, g, "body");
                 if (!b) return Error{b.message()};
                 const size_t nExplicit = n.inputs.size() - implicitCount(n);
                 const size_t nCarried = nExplicit >= 2 ? nExplicit - 2 : 0;
                 std::vector<DType> scanTypes;
                 for (size_t j = nCarried; j < n.outputs.size(); ++j) scanTypes.push_back(outDType(g, n, j));
                 return std::unique_ptr<OpKernel>(std::make_unique<LoopKernel>(std::move(*b), nCarried, scanTypes));
               }});
  t.push_back({"Scan", checkLoopOrScan, [](const Graph& g, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 auto b = prepareBody(n, g, "body");
                 if (!b) return Error{b.message()};
                 const bool scan8 = g.opsetVersion > 0 && g.opsetVersion < 9;
                 return std::unique_ptr<OpKernel>(
                     std::make_unique<ScanKernel>(std::move(*b), n, scan8, n.inputs.size() - implicitCount(n)));
               }});
}

}  // namespace partex::cpu
