#include "cuda/cuda_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "cuda/cuda_conv_graph.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_misc.h"
#include "cuda/cuda_pool.h"
#include "ir/fusion.h"

namespace partex::cuda {

int64_t DevTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t DevTensor::bytes() const { return numel() * tensorElementSize(dtype); }

Status uploadTensor(Context& ctx, PinnedBuffer& staging, const Tensor& t, const DevTensor& d, bool wait) {
  const auto bytes = static_cast<size_t>(t.bytes());
  if (auto st = staging.ensure(bytes); !st) return st;
  t.writePlain(staging.get());
  if (auto st = check(cudaMemcpyAsync(d.ptr, staging.get(), bytes, cudaMemcpyHostToDevice, ctx.stream()), "input copy"); !st)
    return st;
  return wait ? check(cudaStreamSynchronize(ctx.stream()), "input copy") : Status{};
}

Status downloadTensor(Context& ctx, PinnedBuffer& staging, const DevTensor& d, Tensor& out) {
  if (auto st = out.ensure(d.dtype, d.shape); !st) return st;
  const auto bytes = static_cast<size_t>(d.bytes());
  if (auto st = staging.ensure(bytes); !st) return st;
  if (auto st = check(cudaMemcpyAsync(staging.get(), d.ptr, bytes, cudaMemcpyDeviceToHost, ctx.stream()), "output copy"); !st)
    return st;
  if (auto st = check(cudaStreamSynchronize(ctx.stream()), "output copy"); !st) return st;
  std::memcpy(out.raw(), staging.get(), bytes);
  return {};
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Graph helpers

const Node& node(const Graph& g, OpId op) { return g.nodes[static_cast<size_t>(op)]; }
const Value& value(const Graph& g, ValueId v) { return g.values[static_cast<size_t>(v)]; }

bool isOp(const Node& n, std::initializer_list<const char*> types) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  for (const char* t : types)
    if (n.opType == t) return true;
  return false;
}

bool staticShape(const Value& v) {
  if (!v.shapeKnown) return false;
  for (int64_t d : v.shape)
    if (d < 0) return false;
  return true;
}

Shape toShape(const std::vector<int64_t>& s) {
  Shape r;
  r.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size() && i < static_cast<size_t>(kMaxRank); ++i) r.d[i] = s[i];
  return r;
}

int64_t prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

Status kcheck(cudaError_t e, const std::string& name, const char* what) {
  if (e == cudaSuccess) return {};
  return makeError("node '", name, "': ", what, ": ", cudaGetErrorString(e));
}

/// Integer contents of a constant input (a weight), or of an attribute when the input is absent.
Result<std::vector<int64_t>> constInts(const Graph& g, const Node& n, size_t input, const LeafFn& leaf) {
  if (input >= n.inputs.size() || n.inputs[input] < 0) return std::vector<int64_t>{};
  const Value& v = value(g, n.inputs[input]);
  if (!v.intData.empty()) return v.intData;
  if (!v.isWeight) return makeError("node '", n.name, "': input ", std::to_string(input), " must be a constant");
  auto t = leaf(n.inputs[input]);
  if (!t) return Error{t.message()};
  return (*t)->toInts();
}

Result<std::vector<float>> constFloats(const Graph& g, const Node& n, size_t input, const LeafFn& leaf) {
  if (input >= n.inputs.size() || n.inputs[input] < 0) return std::vector<float>{};
  if (!value(g, n.inputs[input]).isWeight)
    return makeError("node '", n.name, "': input ", std::to_string(input), " must be a constant");
  auto t = leaf(n.inputs[input]);
  if (!t) return Error{t.message()};
  std::vector<float> r(static_cast<size_t>((*t)->numElements()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>((*t)->valueAsDouble(static_cast<int64_t>(i)));
  return r;
}

bool isConstInput(const Graph& g, const Node& n, size_t input) {
  return input >= n.inputs.size() || n.inputs[input] < 0 || value(g, n.inputs[input]).isWeight ||
         !value(g, n.inputs[input]).intData.empty();
}

// ---------------------------------------------------------------------------------------------------
// Activations (the chain's tail)

bool activationOf(const Graph& g, const Node& n, UnaryOp* out) {
  if (!isEpilogueActivation(g, n)) return false;  // the set is core's (ir/fusion.h)
  UnaryOp u;
  if (isOp(n, {"Relu"})) u.op = Unary::Relu;
  else if (isOp(n, {"LeakyRelu"})) u = {Unary::LeakyRelu, static_cast<float>(n.attrFloat("alpha", 0.01)), 0.f};
  else if (isOp(n, {"Sigmoid"})) u.op = Unary::Sigmoid;
  else if (isOp(n, {"HardSigmoid"}))
    u = {Unary::HardSigmoid, static_cast<float>(n.attrFloat("alpha", 0.2)), static_cast<float>(n.attrFloat("beta", 0.5))};
  else if (isOp(n, {"HardSwish"})) u.op = Unary::HardSwish;
  else if (isOp(n, {"Tanh"})) u.op = Unary::Tanh;
  else if (isOp(n, {"Elu"})) u = {Unary::Elu, static_cast<float>(n.attrFloat("alpha", 1.0)), 0.f};
  else if (isOp(n, {"Softplus"})) u.op = Unary::Softplus;
  else if (isOp(n, {"Clip"})) {
    // Bounds: attributes before opset 11, constant inputs 1 and 2 since (read by clipBounds).
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (n.hasAttr("min")) lo = static_cast<float>(n.attrFloat("min", lo));
    if (n.hasAttr("max")) hi = static_cast<float>(n.attrFloat("max", hi));
    u = {Unary::Clip, lo, hi};
  } else {
    return false;
  }
  if (out) *out = u;
  return true;
}

/// Clip's constant bounds read through the leaf function (activationOf checked they are constants).
Status clipBounds(const Graph& g, const Node& n, const LeafFn& leaf, UnaryOp& u) {
  if (u.op != Unary::Clip) return {};
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) continue;
    auto f = constFloats(g, n, i, leaf);
    if (!f) return Error{f.message()};
    if (f->size() != 1) return makeError("node '", n.name, "': Clip bound is not a scalar");
    (i == 1 ? u.a : u.b) = (*f)[0];
  }
  return {};
}


/// A weight holding one value per channel (axis 1) of `out`, or a scalar: foldable into a Conv.
bool perChannelWeight(const Graph& g, ValueId w, const Value& out) {
  if (w < 0) return false;
  const Value& v = value(g, w);
  if (!v.isWeight || v.dtype != DType::Float32 || !staticShape(v) || v.shape.size() > out.shape.size())
    return false;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    const size_t axis = d + out.shape.size() - v.shape.size();
    if (v.shape[d] != 1 && !(axis == 1 && v.shape[d] == out.shape[1])) return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// What the backend runs

namespace {

const char* const kViews[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
const char* const kUnary[] = {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Softplus",
                              "Clip", "Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Erf", "Floor", "Ceil",
                              "Sin", "Cos"};
const char* const kBinary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
const char* const kMovers[] = {"Concat", "Slice", "Split", "Transpose", "Gather"};
const char* const kFloatOps[] = {"BatchNormalization", "Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool",
                                 "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LRN", "Softmax",
                                 "LogSoftmax", "Resize", "Upsample", "ReduceMean", "ReduceSum", "ReduceMax",
                                 "Pad", "Sum"};

const char* const kMasks[] = {"Cast", "Where", "Expand", "And", "Or", "Xor"};

/// The element type of the cast/where kernels for a dtype; empty when they have none.
std::optional<ElemType> elemTypeOf(DType t) {
  switch (t) {
    case DType::Float32: return ElemType::F32;
    case DType::Float64: return ElemType::F64;
    case DType::Int64: return ElemType::I64;
    case DType::Int32: return ElemType::I32;
    case DType::Int8: return ElemType::I8;
    case DType::UInt8: return ElemType::U8;
    case DType::Bool: return ElemType::Bool;
    default: return std::nullopt;
  }
}

bool inList(const std::string& t, const char* const* list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (t == list[i]) return true;
  return false;
}
template <size_t N>
bool inList(const std::string& t, const char* const (&list)[N]) {
  return inList(t, list, N);
}

}  // namespace

std::string gpuCheck(const Graph& g, OpId op) {
  if (op < 0 || op >= static_cast<OpId>(g.nodes.size())) return "no such operator";
  const Node& n = node(g, op);
  if (!n.domain.empty() && n.domain != "ai.onnx") return "op type " + n.domain + "." + n.opType + " has no CUDA kernel";
  const std::string& t = n.opType;
  const bool view = inList(t, kViews), unary = inList(t, kUnary), binary = inList(t, kBinary),
             mover = inList(t, kMovers), fl = inList(t, kFloatOps), masks = inList(t, kMasks);
  if (!(view || unary || binary || mover || fl || masks)) return "op type " + t + " has no CUDA kernel";
  for (ValueId v : n.inputs)
    if (v >= 0 && !staticShape(value(g, v))) return t + ": input '" + value(g, v).name + "' has no static shape";
  for (ValueId v : n.outputs)
    if (v >= 0 && !staticShape(value(g, v))) return t + ": output '" + value(g, v).name + "' has no static shape";
  if (n.outputs.empty() || n.outputs[0] < 0) return t + ": no output";
  if (n.inputs.empty() || n.inputs[0] < 0) return t + ": no input";
  const Value& out = value(g, n.outputs[0]);
  if (out.shape.size() > static_cast<size_t>(kMaxRank)) return t + ": rank above 8";
  // The kernels that only move elements handle 1, 2, 4 and 8 bytes.
  const int64_t esize = tensorElementSize(out.dtype);
  const bool movable = esize == 1 || esize == 2 || esize == 4 || esize == 8;
  if (masks) {
    if (t == "Cast") {
      if (!elemTypeOf(value(g, n.inputs[0]).dtype) || !elemTypeOf(out.dtype))
        return std::string("Cast: from ") + dtypeName(value(g, n.inputs[0]).dtype) + " to " + dtypeName(out.dtype);
    } else if (t == "Where") {
      if (n.inputs.size() != 3 || value(g, n.inputs[0]).dtype != DType::Bool) return "Where: a bool condition and two values";
      if (!movable) return std::string("Where: dtype ") + dtypeName(out.dtype);
    } else if (t == "Expand") {
      if (!movable) return std::string("Expand: dtype ") + dtypeName(out.dtype);
    } else {  // And, Or, Xor
      if (n.inputs.size() != 2 || value(g, n.inputs[0]).dtype != DType::Bool || value(g, n.inputs[1]).dtype != DType::Bool)
        return t + ": bool inputs";
    }
    return "";
  }
  if (view || mover) {
    if (!movable) return t + ": dtype " + dtypeName(out.dtype);
    if (t == "Dropout" && n.inputs.size() > 2 && n.inputs[2] >= 0 &&
        !(value(g, n.inputs[2]).intData.size() == 1 && value(g, n.inputs[2]).intData[0] == 0))
      return "Dropout: training_mode (an inference backend runs Dropout as the identity)";
    if (t == "Dropout" && n.outputs.size() > 1 && n.outputs[1] >= 0 &&
        (!value(g, n.outputs[1]).consumers.empty() || value(g, n.outputs[1]).isGraphOutput))
      return "Dropout: the mask output is used";
    if (t == "Gather" && (n.inputs.size() < 2 || value(g, n.inputs[1]).dtype != DType::Int64))
      return "Gather: indices must be int64";
    if (t == "Slice" && n.inputs.size() > 1)
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (!isConstInput(g, n, i)) return "Slice: starts/ends/axes/steps must be constants";
    if (t == "Split" && n.inputs.size() > 1 && !isConstInput(g, n, 1)) return "Split: split sizes must be constants";
    return "";
  }
  // Arithmetic: float32 in and out.
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v < 0) continue;
    const bool dataInput = !((t == "Resize" || t == "Upsample") && i > 0) && !(t == "Pad" && i > 0) &&
                           !(t == "Clip" && i > 0) && !((t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax") && i > 0);
    if (dataInput && value(g, v).dtype != DType::Float32)
      return t + ": dtype " + dtypeName(value(g, v).dtype) + " (the CUDA backend runs float32)";
    if (!dataInput && !isConstInput(g, n, i)) return t + ": input " + std::to_string(i) + " must be a constant";
  }
  if (out.dtype != DType::Float32) return t + ": dtype " + dtypeName(out.dtype) + " (the CUDA backend runs float32)";
  if (t == "Clip" && !activationOf(g, n, nullptr)) return "Clip: bounds must be constants";
  if (binary && n.inputs.size() != 2) return t + ": two inputs expected";
  if (t == "BatchNormalization") {
    for (size_t i = 1; i < 5; ++i)
      if (i >= n.inputs.size() || !isConstInput(g, n, i)) return "BatchNormalization: scale, B, mean, var must be constants";
    if (n.attrInt("training_mode", 0) != 0) return "BatchNormalization: training mode";
  }
  if (t == "Conv" || t == "ConvTranspose") {
    const size_t sp = out.shape.size() - 2;
    if (out.shape.size() < 3 || sp > 2) return t + ": only 1-D and 2-D convolutions";
    if (n.inputs.size() < 2 || !value(g, n.inputs[1]).isWeight) return t + ": the filter must be a weight";
    if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !value(g, n.inputs[2]).isWeight) return t + ": the bias must be a weight";
    if (t == "ConvTranspose") {
      const auto pads = n.attrInts("pads");
      for (size_t i = 0; i < pads.size() / 2; ++i)
        if (pads[i] != pads[i + pads.size() / 2]) return "ConvTranspose: asymmetric pads";
      if (n.attrString("auto_pad", "NOTSET") != "NOTSET") return "ConvTranspose: auto_pad";
    }
  }
  if ((t == "MaxPool") && n.outputs.size() > 1 && n.outputs[1] >= 0) return "MaxPool: the indices output";
  if ((t == "MaxPool" || t == "AveragePool") && (out.shape.size() < 3 || out.shape.size() > 4))
    return t + ": only 1-D and 2-D pooling";
  if (t == "MaxPool" && n.attrInt("storage_order", 0) != 0) return "MaxPool: storage_order";
  if ((t == "Resize" || t == "Upsample") && out.shape.size() != 4) return t + ": only rank-4 inputs";
  if (t == "Resize" || t == "Upsample") {
    const std::string mode = n.attrString("mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "bilinear") return t + ": mode " + mode;
    const Value& in = value(g, n.inputs[0]);
    if (in.shape[0] != out.shape[0] || in.shape[1] != out.shape[1]) return t + ": resizes N or C";
    if (n.hasAttr("axes")) return t + ": axes";
    const std::string ct = n.attrString("coordinate_transformation_mode", "half_pixel");
    if (ct == "tf_crop_and_resize") return t + ": coordinate mode " + ct;
    if (n.attrInt("antialias", 0) != 0) return t + ": antialias";
  }
  if (t == "Gemm" && n.inputs.size() > 2 && n.inputs[2] >= 0 && !value(g, n.inputs[2]).isWeight &&
      n.attrFloat("beta", 1.0) != 1.0 && value(g, n.inputs[2]).shape != out.shape)
    return "Gemm: C is a broadcast activation and beta != 1";
  if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax") {
    // The axes, where they are known now (attribute or small constant): contiguous ones only.
    std::vector<int64_t> axes = n.attrInts("axes");
    if (axes.empty() && n.inputs.size() > 1 && n.inputs[1] >= 0) axes = value(g, n.inputs[1]).intData;
    const int64_t r = static_cast<int64_t>(value(g, n.inputs[0]).shape.size());
    for (auto& a : axes) a = a < 0 ? a + r : a;
    std::sort(axes.begin(), axes.end());
    for (size_t i = 1; i < axes.size(); ++i)
      if (axes[i] != axes[i - 1] + 1) return t + ": reduced axes are not contiguous";
  }
  if (t == "MatMul") {
    const Value& a = value(g, n.inputs[0]);
    const Value& b = value(g, n.inputs[1]);
    if (a.shape.size() < 1 || b.shape.size() < 1) return "MatMul: scalar operand";
    const size_t ra = a.shape.size(), rb = b.shape.size();
    if (ra > 2 && rb > 2) {
      // Batched: the batch dims must be equal (no broadcasting between two batched operands).
      const std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
      if (prod(ba, 0, ba.size()) != prod(bb, 0, bb.size()) ||
          std::vector<int64_t>(out.shape.begin(), out.shape.end() - 2).size() < std::max(ba.size(), bb.size()))
        return "MatMul: broadcasting between two batched operands";
      if (ba.size() != bb.size() || ba != bb) return "MatMul: batch dims differ";
    }
  }
  if (t == "Pad") {
    const std::string mode = n.attrString("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge") return "Pad: mode " + mode;
    if (n.inputs.size() > 3 && n.inputs[3] >= 0) return "Pad: axes input";
  }
  return "";
}

std::vector<OpId> gpuChain(const Graph& g, OpId op, const std::vector<int>* placement) {
  // The rule is core's (ir/fusion.h), so that the cost model charges what this backend fuses.
  return epilogueChain(g, op, placement, [&g](OpId c) { return gpuCheck(g, c).empty(); });
}

std::vector<std::vector<OpId>> gpuChains(const Graph& g, const std::vector<OpId>& ops) {
  // 0: in the set and free, 1: outside the set or already in a chain.
  std::vector<int> place(g.nodes.size(), 1);
  for (OpId op : ops) place[static_cast<size_t>(op)] = 0;
  std::vector<std::vector<OpId>> chains;
  for (OpId op : ops) {
    if (place[static_cast<size_t>(op)] != 0) continue;
    auto chain = gpuChain(g, op, &place);
    for (OpId c : chain) place[static_cast<size_t>(c)] = 1;
    chains.push_back(std::move(chain));
  }
  // Order by data: a chain runs once every value it reads that the set produces is written.
  std::vector<int> chainOf(g.nodes.size(), -1);
  for (size_t i = 0; i < chains.size(); ++i)
    for (OpId c : chains[i]) chainOf[static_cast<size_t>(c)] = static_cast<int>(i);
  // The values a chain reads from other operators of the set: the inputs of its operators that its own
  // operators do not produce.
  std::vector<std::vector<int>> deps(chains.size());
  for (size_t i = 0; i < chains.size(); ++i)
    for (OpId c : chains[i])
      for (ValueId v : node(g, c).inputs) {
        if (v < 0) continue;
        const OpId p = value(g, v).producer;
        if (p == kNone || chainOf[static_cast<size_t>(p)] < 0 || chainOf[static_cast<size_t>(p)] == static_cast<int>(i)) continue;
        deps[i].push_back(chainOf[static_cast<size_t>(p)]);
      }
  std::vector<char> done(chains.size(), 0);
  std::vector<std::vector<OpId>> ordered;
  while (ordered.size() < chains.size()) {
    bool progress = false;
    for (size_t i = 0; i < chains.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (int d : deps[i]) ready = ready && done[static_cast<size_t>(d)];
      if (!ready) continue;
      done[i] = 1;
      ordered.push_back(chains[i]);
      progress = true;
      break;  // restart from the first: keeps the operators' order wherever the data allows
    }
    if (!progress) break;  // a cycle cannot happen for chains of a DAG cut this way; keep what is ordered
  }
  for (size_t i = 0; i < chains.size(); ++i)
    if (!done[i]) ordered.push_back(chains[i]);
  return ordered;
}

bool gpuChainOk(const Graph& g, const std::vector<OpId>& ops) {
  if (ops.empty()) return false;
  const auto full = gpuChain(g, ops[0]);
  return ops.size() <= full.size() && std::equal(ops.begin(), ops.end(), full.begin()) &&
         gpuCheck(g, ops[0]).empty();
}

// ---------------------------------------------------------------------------------------------------
// The operators

namespace {

/// A GpuOp over one node (plus chained nodes): reads its non-omitted inputs listed in `readInputs`.
class NodeOp : public GpuOp {
 protected:
  NodeOp(const Graph& g, const std::vector<OpId>& chain, std::vector<ValueId> reads) {
    ops_ = chain;
    name_ = node(g, chain.front()).name;
    reads_ = std::move(reads);
    const Node& last = node(g, chain.back());
    if (chain.size() == 1) {
      for (ValueId v : last.outputs)
        if (v >= 0) writes_.push_back(v);
    } else {
      writes_.push_back(last.outputs[0]);
    }
  }
  Status err(cudaError_t e, const char* what) const { return kcheck(e, name_, what); }
};

std::vector<ValueId> presentInputs(const Node& n, size_t count = SIZE_MAX) {
  std::vector<ValueId> r;
  for (size_t i = 0; i < n.inputs.size() && i < count; ++i)
    if (n.inputs[i] >= 0) r.push_back(n.inputs[i]);
  return r;
}

class ViewOp final : public NodeOp {
 public:
  ViewOp(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    view_ = true;
    writes_.resize(1);
  }
  Status launch(Context&, std::vector<DevTensor>&) override { return {}; }
};

Unary unaryOfType(const std::string& t) {
  static const std::map<std::string, Unary> m = {
      {"Exp", Unary::Exp}, {"Log", Unary::Log}, {"Sqrt", Unary::Sqrt}, {"Abs", Unary::Abs}, {"Neg", Unary::Neg},
      {"Reciprocal", Unary::Reciprocal}, {"Erf", Unary::Erf}, {"Floor", Unary::Floor}, {"Ceil", Unary::Ceil},
      {"Sin", Unary::Sin}, {"Cos", Unary::Cos}};
  auto it = m.find(t);
  return it == m.end() ? Unary::Identity : it->second;
}

class UnaryK final : public NodeOp {
 public:
  UnaryK(const Graph& g, OpId op, UnaryOp u) : NodeOp(g, {op}, {node(g, op).inputs[0]}), u_(u) {}
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    const DevTensor& x = v[static_cast<size_t>(reads_[0])];
    DevTensor& y = v[static_cast<size_t>(writes_[0])];
    return err(unaryF32(u_, x.f32(), y.f32(), y.numel(), ctx.stream()), "unary kernel");
  }

 private:
  UnaryOp u_;
};

/// Two-input element-wise arithmetic with broadcasting, then the chain's activation.
class BinaryK final : public NodeOp {
 public:
  BinaryK(const Graph& g, const std::vector<OpId>& chain, Binary op, UnaryOp post)
      : NodeOp(g, chain, {node(g, chain[0]).inputs[0], node(g, chain[0]).inputs[1]}), op_(op), post_(post) {
    a_ = toShape(value(g, reads_[0]).shape);
    b_ = toShape(value(g, reads_[1]).shape);
    o_ = toShape(value(g, writes_[0]).shape);
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(binaryF32(op_, v[static_cast<size_t>(reads_[0])].f32(), a_, v[static_cast<size_t>(reads_[1])].f32(), b_,
                         v[static_cast<size_t>(writes_[0])].f32(), o_, post_, ctx.stream()),
               "binary kernel");
  }

 private:
  Binary op_;
  UnaryOp post_;
  Shape a_, b_, o_;
};

/// Sum of same-shape inputs (or of one input), then the chain's activation: any number of inputs
/// (sumF32 adds them kSumInputs per launch).
class SumK final : public NodeOp {
 public:
  SumK(const Graph& g, const std::vector<OpId>& chain, UnaryOp post)
      : NodeOp(g, chain, presentInputs(node(g, chain[0]))), post_(post) {}
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    ptrs_.clear();
    for (ValueId r : reads_) ptrs_.push_back(v[static_cast<size_t>(r)].f32());
    DevTensor& y = v[static_cast<size_t>(writes_[0])];
    return err(sumF32(ptrs_.data(), static_cast<int>(ptrs_.size()), y.f32(), y.numel(), post_, ctx.stream()),
               "sum kernel");
  }

 private:
  UnaryOp post_;
  std::vector<const float*> ptrs_;
};

/// A BatchNormalization's per-channel factor s = scale / sqrt(var + epsilon), with its mean and B:
/// y = (x - mean) s + B. `c` channels expected; an error names the node otherwise.
struct BatchNormParams {
  std::vector<double> factor, mean, bias;
};

Result<BatchNormParams> batchNormParams(const Graph& g, const Node& n, const LeafFn& leaf, int64_t c) {
  std::vector<float> p[4];  // scale, B, mean, var
  for (size_t i = 0; i < 4; ++i) {
    auto f = constFloats(g, n, i + 1, leaf);
    if (!f) return Error{f.message()};
    if (static_cast<int64_t>(f->size()) != c) return makeError("node '", n.name, "': parameters are not per channel");
    p[i] = std::move(*f);
  }
  const double eps = n.attrFloat("epsilon", 1e-5);
  BatchNormParams bn;
  for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
    bn.factor.push_back(p[0][k] / std::sqrt(static_cast<double>(p[3][k]) + eps));
    bn.mean.push_back(p[2][k]);
    bn.bias.push_back(p[1][k]);
  }
  return bn;
}

/// BatchNormalization (inference) as a per-channel scale and shift, then the chain's activation.
class AffineK final : public NodeOp {
 public:
  AffineK(const Graph& g, const std::vector<OpId>& chain, UnaryOp post)
      : NodeOp(g, chain, {node(g, chain[0]).inputs[0]}), post_(post) {}
  Status prepare(Context& ctx, const Graph& g, const LeafFn& leaf) {
    const Value& x = value(g, reads_[0]);
    c_ = x.shape.size() > 1 ? x.shape[1] : 1;
    auto bn = batchNormParams(g, node(g, ops_[0]), leaf, c_);
    if (!bn) return Error{bn.message()};
    std::vector<float> scale(static_cast<size_t>(c_)), shift(static_cast<size_t>(c_));
    for (size_t k = 0; k < scale.size(); ++k) {
      scale[k] = static_cast<float>(bn->factor[k]);
      shift[k] = static_cast<float>(bn->bias[k] - bn->mean[k] * bn->factor[k]);
    }
    n_ = x.shape.empty() ? 1 : x.shape[0];
    inner_ = prod(x.shape, 2, x.shape.size());
    if (auto st = scale_.upload(scale.data(), scale.size() * 4, ctx.stream()); !st) return st;
    return shift_.upload(shift.data(), shift.size() * 4, ctx.stream());
  }
  int64_t ownedBytes() const override { return static_cast<int64_t>(scale_.bytes() + shift_.bytes()); }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(channelAffineF32(v[static_cast<size_t>(reads_[0])].f32(), scale_.as<float>(), shift_.as<float>(),
                                v[static_cast<size_t>(writes_[0])].f32(), n_, c_, inner_, post_, ctx.stream()),
               "affine kernel");
  }

 private:
  UnaryOp post_;
  DeviceBuffer scale_, shift_;
  int64_t n_ = 1, c_ = 1, inner_ = 1;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Convolutions: cuDNN (NCHW float32; a 1-D convolution runs as 2-D with height 1)

namespace {

/// The convolution algorithms chosen by timing, by geometry: in memory for the process and in
/// $XDG_CACHE_HOME/partex/cuda-conv-algos.txt (else ~/.cache/partex/), one "key algo math" line each,
/// appended as they are chosen. PARTEX_NO_CALIBRATION=1 (the tests' switch for caches) keeps it in memory.
class AlgoCache {
 public:
  std::optional<std::pair<int, int>> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(m_);
    load();
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void store(const std::string& key, int algo, int math) {
    std::lock_guard<std::mutex> lock(m_);
    load();
    map_[key] = {algo, math};
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    if (std::FILE* f = std::fopen(path_.c_str(), "a")) {
      std::fprintf(f, "%s %d %d\n", key.c_str(), algo, math);
      std::fclose(f);
    }
  }

 private:
  void load() {
    if (loaded_) return;
    loaded_ = true;
    if (const char* off = std::getenv("PARTEX_NO_CALIBRATION"); off && std::string(off) == "1") return;
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg) path_ = std::string(xdg) + "/partex/cuda-conv-algos.txt";
    else if (home && *home) path_ = std::string(home) + "/.cache/partex/cuda-conv-algos.txt";
    if (path_.empty()) return;
    std::ifstream in(path_);
    std::string key;
    int algo = 0, math = 0;
    while (in >> key >> algo >> math)
      if (algo >= 0 && algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && math >= 0 && math <= 3) map_[key] = {algo, math};
  }
  std::mutex m_;
  bool loaded_ = false;
  std::string path_;
  std::map<std::string, std::pair<int, int>> map_;
};

AlgoCache& algoCache() {
  static AlgoCache cache;
  return cache;
}

/// cuDNN descriptors freed with the object.
struct CudnnDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  Status create() {
    Status st = check(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    if (st) st = check(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    if (st) st = check(cudnnCreateTensorDescriptor(&bias), "cudnnCreateTensorDescriptor");
    if (st) st = check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    if (st) st = check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    if (st) st = check(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor");
    return st;
  }
  ~CudnnDescs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act) cudnnDestroyActivationDescriptor(act);
  }
};

/// A sliding window's attributes (Conv, ConvTranspose, MaxPool, AveragePool) over `sp` spatial axes,
/// defaults filled in, auto_pad resolved against the model's output shape `y` (unless `noAutoPad`, for
/// ConvTranspose, whose output shape decides its padding differently): pads as begins then ends.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

Result<Window> windowOf(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                        std::vector<int64_t> kernel, bool noAutoPad = false) {
  const size_t sp = x.size() - 2;
  Window w;
  w.kernel = n.hasAttr("kernel_shape") ? n.attrInts("kernel_shape") : std::move(kernel);
  w.strides = n.attrInts("strides");
  w.dilations = n.attrInts("dilations");
  w.pads = n.attrInts("pads");
  if (w.strides.empty()) w.strides.assign(sp, 1);
  if (w.dilations.empty()) w.dilations.assign(sp, 1);
  if (w.pads.empty()) w.pads.assign(2 * sp, 0);
  if (w.kernel.size() != sp || w.strides.size() != sp || w.dilations.size() != sp || w.pads.size() != 2 * sp)
    return makeError("node '", n.name, "': kernel_shape/strides/dilations/pads do not match the rank");
  const std::string autoPad = n.attrString("auto_pad", "NOTSET");
  for (size_t i = 0; i < sp && autoPad != "NOTSET" && !noAutoPad; ++i) {
    if (autoPad == "VALID") {
      w.pads[i] = w.pads[i + sp] = 0;
      continue;
    }
    const int64_t total =
        std::max<int64_t>(0, (y[i + 2] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - x[i + 2]);
    w.pads[i] = autoPad == "SAME_LOWER" ? total - total / 2 : total / 2;
    w.pads[i + sp] = total - w.pads[i];
  }
  return w;
}

/// A Conv / ConvTranspose node's geometry as 2-D: kernel, strides, dilations, begin and end pads.
struct ConvGeom {
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t group = 1;
  bool oneD = false;
};

Result<ConvGeom> convGeom(const Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                          const std::vector<int64_t>& y, bool transposed) {
  ConvGeom c;
  c.oneD = x.size() == 3;
  auto win = windowOf(n, x, y, std::vector<int64_t>(w.begin() + 2, w.end()), transposed);
  if (!win) return Error{win.message()};
  const auto &ks = win->kernel, &st = win->strides, &dl = win->dilations, &pads = win->pads;
  auto at = [&](const std::vector<int64_t>& v, size_t i) { return static_cast<int>(v[i]); };
  if (c.oneD) {
    c.kw = at(ks, 0), c.sw = at(st, 0), c.dw = at(dl, 0), c.pl = at(pads, 0), c.pr = at(pads, 1);
  } else {
    c.kh = at(ks, 0), c.kw = at(ks, 1), c.sh = at(st, 0), c.sw = at(st, 1), c.dh = at(dl, 0), c.dw = at(dl, 1);
    c.pt = at(pads, 0), c.pl = at(pads, 1), c.pb = at(pads, 2), c.pr = at(pads, 3);
  }
  c.group = n.attrInt("group", 1);
  return c;
}

std::vector<int> dims4(const std::vector<int64_t>& s) {
  if (s.size() == 3) return {static_cast<int>(s[0]), static_cast<int>(s[1]), 1, static_cast<int>(s[2])};
  return {static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])};
}

class ConvK final : public NodeOp {
 public:
  ConvK(const Graph& g, const std::vector<OpId>& chain, std::vector<ValueId> reads, bool transposed)
      : NodeOp(g, chain, std::move(reads)), transposed_(transposed) {}

  /// `residual`: the chain's residual operand (read as reads()[1]) or kNone; `post`: its activation.
  Status prepare(Context& ctx, const Graph& g, const LeafFn& leaf, ValueId residual, UnaryOp post) {
    const Node& n = node(g, ops_[0]);
    residual_ = residual != kNone;
    post_ = post;
    xShape_ = value(g, n.inputs[0]).shape;
    const std::vector<int64_t> yShape = value(g, n.outputs[0]).shape;
    yShapeFull_ = yShape;
    auto wt = leaf(n.inputs[1]);
    if (!wt) return Error{wt.message()};
    const Tensor& W = **wt;
    if (W.dtype() != DType::Float32 || W.rank() != static_cast<int64_t>(xShape_.size()))
      return makeError("node '", name_, "': filter must be float32 of the input's rank");
    auto geom = convGeom(n, xShape_, W.shape(), yShape, transposed_);
    if (!geom) return Error{geom.message()};
    geom_ = *geom;
    const int64_t outC = yShape[1];
    // The filter and the bias, folded with the chain's affine steps (per output channel).
    std::vector<float> w(static_cast<size_t>(W.numElements()));
    std::memcpy(w.data(), W.data<float>(), w.size() * 4);
    std::vector<float> b(static_cast<size_t>(outC), 0.f);
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
      auto bf = constFloats(g, n, 2, leaf);
      if (!bf) return Error{bf.message()};
      if (static_cast<int64_t>(bf->size()) != outC) return makeError("node '", name_, "': bias size");
      b = *bf;
    }
    std::vector<double> scale(static_cast<size_t>(outC), 1.0);
    ValueId cur = n.outputs[0];
    for (size_t i = 1; i < ops_.size(); ++i) {
      const Node& s = node(g, ops_[i]);
      if (isOp(s, {"BatchNormalization"})) {
        auto bn = batchNormParams(g, s, leaf, outC);
        if (!bn) return Error{bn.message()};
        for (size_t k = 0; k < static_cast<size_t>(outC); ++k) {
          scale[k] *= bn->factor[k];
          b[k] = static_cast<float>((b[k] - bn->mean[k]) * bn->factor[k] + bn->bias[k]);
        }
      } else if (isOp(s, {"Mul", "Add", "Sub", "Div"}) && s.inputs.size() == 2 &&
                 perChannelWeight(g, s.inputs[0] == cur ? s.inputs[1] : s.inputs[0], value(g, cur))) {
        const size_t wi = s.inputs[0] == cur ? 1 : 0;
        auto f = constFloats(g, s, wi, leaf);
        if (!f) return Error{f.message()};
        for (size_t k = 0; k < static_cast<size_t>(outC); ++k) {
          const double v = (*f)[f->size() == 1 ? 0 : k];
          if (s.opType == "Mul") scale[k] *= v, b[k] = static_cast<float>(b[k] * v);
          else if (s.opType == "Div") scale[k] /= v, b[k] = static_cast<float>(b[k] / v);
          else if (s.opType == "Add") b[k] = static_cast<float>(b[k] + v);
          else b[k] = static_cast<float>(b[k] - v);
        }
      } else {
        break;  // the residual Add and the activation are not folded
      }
      cur = s.outputs[0];
    }
    // Output channel k's filter: [K, C/g, kh, kw] for Conv (contiguous per k); [C_in, K/g, kh, kw] for
    // ConvTranspose (channel k = g*(K/g) + j sits at [c][j] for c in group g).
    const int64_t khw = W.numElements() / (W.dim(0) * W.dim(1));
    for (int64_t i = 0; i < W.numElements(); ++i) {
      int64_t k;
      if (!transposed_) k = i / (W.dim(1) * khw);
      else {
        const int64_t c = i / (W.dim(1) * khw), j = (i / khw) % W.dim(1);
        k = (c / (W.dim(0) / geom_.group)) * W.dim(1) + j;
      }
      w[static_cast<size_t>(i)] = static_cast<float>(w[static_cast<size_t>(i)] * scale[static_cast<size_t>(k)]);
    }
    if (auto st = w_.upload(w.data(), w.size() * 4, ctx.stream()); !st) return st;
    if (auto st = b_.upload(b.data(), b.size() * 4, ctx.stream()); !st) return st;
    std::vector<float> ones(static_cast<size_t>(outC), 1.f);
    if (auto st = ones_.upload(ones.data(), ones.size() * 4, ctx.stream()); !st) return st;

    // Asymmetric pads: pad the input explicitly first (cuDNN pads symmetrically).
    std::vector<int64_t> xs = xShape_;
    if (!transposed_ && (geom_.pt != geom_.pb || geom_.pl != geom_.pr)) {
      prepad_ = true;
      padBegin_.assign(xShape_.size(), 0);
      if (geom_.oneD) padBegin_[2] = geom_.pl;
      else padBegin_[2] = geom_.pt, padBegin_[3] = geom_.pl;
      if (!geom_.oneD) xs[2] += geom_.pt + geom_.pb;
      xs[xs.size() - 1] += geom_.pl + geom_.pr;
      paddedShape_ = xs;
      if (auto st = padded_.ensure(static_cast<size_t>(prod(xs, 0, xs.size()) * 4)); !st) return st;
      geom_.pt = geom_.pb = geom_.pl = geom_.pr = 0;
    }
    if (auto st = d_.create(); !st) return makeError("node '", name_, "': ", st.message());
    const auto xd = dims4(xs), yd = dims4(yShape);
    const std::vector<int> wd = dims4(W.shape());
    Status st = check(cudnnSetTensor4dDescriptor(d_.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, xd[0], xd[1], xd[2], xd[3]), "x descriptor");
    if (st) st = check(cudnnSetTensor4dDescriptor(d_.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, yd[0], yd[1], yd[2], yd[3]), "y descriptor");
    if (st) st = check(cudnnSetTensor4dDescriptor(d_.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, yd[1], 1, 1), "bias descriptor");
    if (st) st = check(cudnnSetFilter4dDescriptor(d_.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, wd[0], wd[1], wd[2], wd[3]), "filter descriptor");
    if (st) st = check(cudnnSetConvolution2dDescriptor(d_.conv, geom_.pt, geom_.pl, geom_.sh, geom_.sw, geom_.dh, geom_.dw,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "convolution descriptor");
    if (st) st = check(cudnnSetConvolutionGroupCount(d_.conv, static_cast<int>(geom_.group)), "group count");
    const cudnnMathType_t math = ctx.allowTf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if (st) st = check(cudnnSetConvolutionMathType(d_.conv, math), "math type");
    if (st) st = check(cudnnSetActivationDescriptor(d_.act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), "activation");
    if (!st) return makeError("node '", name_, "': ", st.message());
    if (!transposed_) {
      int on = 0, oc = 0, oh = 0, ow = 0;
      st = check(cudnnGetConvolution2dForwardOutputDim(d_.conv, d_.x, d_.w, &on, &oc, &oh, &ow), "output dims");
      if (!st) return makeError("node '", name_, "': ", st.message());
      if (on != yd[0] || oc != yd[1] || oh != yd[2] || ow != yd[3])
        return makeError("node '", name_, "': cuDNN's output shape differs from the model's");
      if (auto s2 = chooseForwardAlgo(ctx, math, xd, wd, yd); !s2) return makeError("node '", name_, "': ", s2.message());
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int got = 0;
      // Backward data: dy is this node's input, dx its output; the filter is [C_in, C_out/g, kh, kw].
      st = check(cudnnFindConvolutionBackwardDataAlgorithm(ctx.cudnn(), d_.w, d_.x, d_.conv, d_.y,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
                 "cudnnFindConvolutionBackwardDataAlgorithm");
      if (!st) return makeError("node '", name_, "': ", st.message());
      bool found = false;
      for (int pass = 0; pass < 2 && !found; ++pass)
        for (int i = 0; i < got && !found; ++i) {
          if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspaceBytes()) continue;
          if (!ctx.allowTf32() && perf[i].mathType != (pass == 0 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)) continue;
          bwdAlgo_ = perf[i].algo;
          mathType_ = perf[i].mathType;
          found = true;
        }
      if (!found) bwdAlgo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, mathType_ = math;
      if (auto s2 = check(cudnnSetConvolutionMathType(d_.conv, mathType_), "math type"); !s2)
        return makeError("node '", name_, "': ", s2.message());
    }
    return {};
  }

  int64_t ownedBytes() const override {
    return static_cast<int64_t>(w_.bytes() + b_.bytes() + ones_.bytes() + padded_.bytes());
  }

  /// The forward path, chosen by timing. Legacy candidates: cuDNN's own search (FindEx, on buffers of
  /// this convolution's sizes) lists the algorithms that run within the workspace. Graph candidates:
  /// the execution plans of cuDNN's graph API (ConvGraphPlans: engines the legacy API does not reach).
  /// Each candidate is timed here on the whole sequence launch() would run with it (the fused
  /// bias+ReLU legacy call, or the convolution followed by the epilogue kernels), ten runs after a
  /// warm-up, queued behind a GPU busy-wait so that the host's launch cost stays out as it does under
  /// CUDA graph replay; the fastest is taken. cuDNN's search times each algorithm once, cold, and at
  /// batch 1 that picked algorithms several times slower than the best. Without TF32 the descriptor
  /// stays in FMA math (cuDNN then runs only FMA kernels, whatever math type a result reports), and
  /// graph engines with tensor-core or reduced-precision numerics are left out. A graph plan that
  /// wins is checked once against the best legacy algorithm's output before it is kept; the best
  /// legacy algorithm stays set either way (launch() falls back to it for unaligned pointers).
  Status chooseForwardAlgo(Context& ctx, cudnnMathType_t math, const std::vector<int>& xd, const std::vector<int>& wd,
                           const std::vector<int>& yd) {
    // A choice timed before for this geometry on this GPU and cuDNN (by this process or an earlier one:
    // each `profile` and `execute` prepares every convolution again).
    const char* graphApiEnv = std::getenv("PARTEX_CUDA_GRAPH_API");
    const bool graphApiOn = graphApiEnv && std::string(graphApiEnv) == "1";
    std::string key = ctx.info().name + "|cudnn" + std::to_string(cudnnGetVersion()) + "|" +
                      (ctx.allowTf32() ? "tf32" : "fma") + "|" + (post_.op == Unary::Relu ? "relu" : "plain") +
                      (residual_ ? "+z" : "") + "|g" + std::to_string(geom_.group);
    for (const auto* v : {&xd, &wd, &yd})
      for (int d : *v) key += "," + std::to_string(d);
    for (int d : {geom_.pt, geom_.pl, geom_.sh, geom_.sw, geom_.dh, geom_.dw}) key += ";" + std::to_string(d);
    std::replace(key.begin(), key.end(), ' ', '_');  // one word per key in the cache file
    if (!graphApiOn)
      if (auto hit = algoCache().find(key)) {
        chosen_ = fwdAlgo_ = static_cast<cudnnConvolutionFwdAlgo_t>(hit->first);
        mathType_ = static_cast<cudnnMathType_t>(hit->second);
        graphPlan_ = -1;
        return check(cudnnSetConvolutionMathType(d_.conv, mathType_), "math type");
      }
    Status chosen = chooseForwardAlgoTimed(ctx, math, xd, wd, yd);
    if (chosen && graphPlan_ < 0) algoCache().store(key, static_cast<int>(chosen_), static_cast<int>(mathType_));
    return chosen;
  }

  Status chooseForwardAlgoTimed(Context& ctx, cudnnMathType_t math, const std::vector<int>& xd, const std::vector<int>& wd,
                                const std::vector<int>& yd) {
    DeviceBuffer x, y, z, ref;
    size_t xb = 0, yb = 0;
    if (auto st = check(cudnnGetTensorSizeInBytes(d_.x, &xb), "x size"); !st) return st;
    if (auto st = check(cudnnGetTensorSizeInBytes(d_.y, &yb), "y size"); !st) return st;
    if (auto st = x.ensure(xb); !st) return st;
    if (auto st = y.ensure(yb); !st) return st;
    {
      // An input that varies along every axis, so that the check of a graph plan sees layout errors.
      std::vector<float> hx(xb / 4);
      uint32_t r = 12345u;
      for (float& f : hx) r = r * 1664525u + 1013904223u, f = static_cast<float>(r >> 8) / 16777216.f - 0.5f;
      if (auto st = x.upload(hx.data(), hx.size() * 4, ctx.stream()); !st) return st;
    }
    const float* zp = nullptr;
    if (residual_) {
      if (auto st = z.ensure(yb); !st) return st;
      if (auto st = check(cudaMemsetAsync(z.get(), 0, yb, ctx.stream()), "memset"); !st) return st;
      zp = z.as<float>();
    }
    DevTensor yT;
    yT.ptr = y.get();
    yT.dtype = DType::Float32;
    yT.shape = yShapeFull_;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    if (auto st = check(cudnnFindConvolutionForwardAlgorithmEx(ctx.cudnn(), d_.x, x.get(), d_.w, w_.get(), d_.conv, d_.y,
                                                               y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
                                                               ctx.workspace(), ctx.workspaceBytes()),
                        "cudnnFindConvolutionForwardAlgorithmEx");
        !st)
      return st;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    if (auto st = check(cudaEventCreate(&e0), "event"); !st) return st;
    if (auto st = check(cudaEventCreate(&e1), "event"); !st) {
      cudaEventDestroy(e0);
      return st;
    }
    // Microseconds per run of `call`, or a negative value when it failed.
    auto timeRuns = [&](const auto& call) -> float {
      Status st = call();
      if (st) st = check(gpuBusyWait(int64_t{60000} * 12, ctx.stream()), "busy wait");
      if (st) st = check(cudaEventRecord(e0, ctx.stream()), "event");
      for (int r = 0; r < 10 && st; ++r) st = call();
      if (st) st = check(cudaEventRecord(e1, ctx.stream()), "event");
      if (st) st = check(cudaEventSynchronize(e1), "event");
      float ms = 0;
      if (st) st = check(cudaEventElapsedTime(&ms, e0, e1), "event");
      if (!st) {
        (void)cudaGetLastError();
        return -1.f;
      }
      return ms * 100.f;  // per run
    };
    const bool verbose = std::getenv("PARTEX_CUDA_VERBOSE") != nullptr;
    std::string log, glog;
    float best = std::numeric_limits<float>::infinity();
    bool found = false;
    for (int i = 0; i < got; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspaceBytes()) continue;
      const cudnnMathType_t m = ctx.allowTf32() ? perf[i].mathType : math;
      if (cudnnSetConvolutionMathType(d_.conv, m) != CUDNN_STATUS_SUCCESS) continue;
      fwdAlgo_ = perf[i].algo;
      const float us = timeRuns([&]() -> Status {
        Status st = forward(ctx, x.as<float>(), y.as<float>(), zp);
        if (st && post_.op != Unary::Relu) st = epilogue(ctx, y.as<float>(), zp, yT);
        return st;
      });
      if (us < 0) continue;
      if (verbose) log += " " + std::to_string(static_cast<int>(perf[i].algo)) + "/" + std::to_string(static_cast<int>(perf[i].mathType)) +
                          ":" + std::to_string(perf[i].time * 1000.f).substr(0, 6) + "|" + std::to_string(us).substr(0, 6);
      if (us < best) best = us, chosen_ = perf[i].algo, mathType_ = m, found = true;
    }
    if (!found) chosen_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, mathType_ = math;
    fwdAlgo_ = chosen_;
    Status st = check(cudnnSetConvolutionMathType(d_.conv, mathType_), "math type");

    // The graph API's plans, timed the same way with the epilogue that must follow them. Off unless
    // PARTEX_CUDA_GRAPH_API=1 until a GPU run has shown them right (they were written without a GPU; a
    // fault inside cuDNN would take the process down, where the legacy path is measured correct).
    graphPlan_ = -1;
    graph_ = ConvGraphPlans();
    std::string graphWhy;
    const char* graphApi = std::getenv("PARTEX_CUDA_GRAPH_API");
    if (st && graphApi && std::string(graphApi) == "1") {
      const int64_t gx[4] = {xd[0], xd[1], xd[2], xd[3]}, gw[4] = {wd[0], wd[1], wd[2], wd[3]},
                    gy[4] = {yd[0], yd[1], yd[2], yd[3]};
      const int64_t pads[2] = {geom_.pt, geom_.pl}, strides[2] = {geom_.sh, geom_.sw}, dil[2] = {geom_.dh, geom_.dw};
      auto plans = ConvGraphPlans::build(ctx, gx, gw, gy, pads, strides, dil, ctx.allowTf32(), ctx.workspaceBytes());
      if (!plans) graphWhy = plans.message();
      int bestGraph = -1;
      for (int i = 0; plans && i < plans->count(); ++i) {
        const float us = timeRuns([&]() -> Status {
          Status s2 = plans->run(i, ctx, x.as<float>(), w_.as<float>(), y.as<float>());
          if (s2) s2 = epilogue(ctx, y.as<float>(), zp, yT);
          return s2;
        });
        if (verbose) glog += " " + plans->describe(i) + "|" + (us < 0 ? std::string("failed") : std::to_string(us).substr(0, 6));
        if (us >= 0 && us < best) best = us, bestGraph = i;
      }
      if (bestGraph >= 0) {
        Status agree = checkGraphPlan(ctx, *plans, bestGraph, x, y, ref, yb);
        if (agree) graph_ = std::move(*plans), graphPlan_ = bestGraph;
        else graphWhy = agree.message();
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (verbose) {
      const std::string winner = graphPlan_ >= 0 ? "graph " + graph_.describe(graphPlan_)
                                                 : "algo " + std::to_string(static_cast<int>(chosen_));
      std::fprintf(stderr, "cuda conv %s: algo/math:find-us|our-us%s graph:plan|our-us%s -> %s (%.1f us)%s%s\n",
                   name_.c_str(), log.c_str(), glog.c_str(), winner.c_str(), best,
                   graphWhy.empty() ? "" : "; graph plans: ", graphWhy.c_str());
    }
    return st;
  }

  /// Checks graph plan `i` against the legacy algorithm now set (plain convolutions of the same input):
  /// an error when they differ by more than float32 rounding (TF32's when allowed) relative to the
  /// output's largest magnitude.
  Status checkGraphPlan(Context& ctx, ConvGraphPlans& plans, int i, const DeviceBuffer& x, const DeviceBuffer& y,
                        DeviceBuffer& ref, size_t yb) {
    if (auto st = ref.ensure(yb); !st) return st;
    const float one = 1.f, zero = 0.f;
    Status st = check(cudnnConvolutionForward(ctx.cudnn(), &one, d_.x, x.get(), d_.w, w_.get(), d_.conv, fwdAlgo_,
                                              ctx.workspace(), ctx.workspaceBytes(), &zero, d_.y, ref.get()),
                      "cudnnConvolutionForward");
    if (st) st = plans.run(i, ctx, x.as<float>(), w_.as<float>(), y.as<float>());
    std::vector<float> a(yb / 4), b(yb / 4);
    if (st) st = check(cudaMemcpyAsync(a.data(), ref.get(), yb, cudaMemcpyDeviceToHost, ctx.stream()), "copy");
    if (st) st = check(cudaMemcpyAsync(b.data(), y.get(), yb, cudaMemcpyDeviceToHost, ctx.stream()), "copy");
    if (st) st = check(cudaStreamSynchronize(ctx.stream()), "synchronize");
    if (!st) {
      (void)cudaGetLastError();
      return st;
    }
    double scale = 0, diff = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      scale = std::max(scale, std::fabs(static_cast<double>(a[k])));
      const double d = std::fabs(static_cast<double>(a[k]) - static_cast<double>(b[k]));
      diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
    }
    const double tol = (ctx.allowTf32() ? 1e-2 : 1e-4) * std::max(scale, 1e-6);
    if (diff > tol)
      return makeError(plans.describe(i), " differs from the legacy algorithm by ", std::to_string(diff), " (scale ",
                       std::to_string(scale), ")");
    return {};
  }

  /// The forward call this kernel makes: relu(conv + bias + z) in one cuDNN call when the chain ends in
  /// ReLU, else the plain convolution (the epilogue follows in launch()).
  Status forward(Context& ctx, const float* x, float* y, const float* z) {
    const float one = 1.f, zero = 0.f;
    if (post_.op == Unary::Relu) {
      const float alpha2 = z ? 1.f : 0.f;
      return check(cudnnConvolutionBiasActivationForward(ctx.cudnn(), &one, d_.x, x, d_.w, w_.get(), d_.conv, fwdAlgo_,
                                                          ctx.workspace(), ctx.workspaceBytes(), &alpha2, d_.y, z ? z : y,
                                                          d_.bias, b_.get(), d_.act, d_.y, y),
                   "cudnnConvolutionBiasActivationForward");
    }
    return check(cudnnConvolutionForward(ctx.cudnn(), &one, d_.x, x, d_.w, w_.get(), d_.conv, fwdAlgo_, ctx.workspace(),
                                         ctx.workspaceBytes(), &zero, d_.y, y),
                 "cudnnConvolutionForward");
  }

  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    const float* x = v[static_cast<size_t>(reads_[0])].f32();
    DevTensor& yT = v[static_cast<size_t>(writes_[0])];
    float* y = yT.f32();
    const float* z = residual_ ? v[static_cast<size_t>(reads_[1])].f32() : nullptr;
    if (prepad_) {
      if (auto st = err(padF32(x, toShape(xShape_), padBegin_.data(), padded_.as<float>(), toShape(paddedShape_), 0,
                               0.f, ctx.stream()),
                        "pad kernel");
          !st)
        return st;
      x = padded_.as<float>();
    }
    const float one = 1.f, zero = 0.f;
    if (transposed_) {
      Status st = check(cudnnConvolutionBackwardData(ctx.cudnn(), &one, d_.w, w_.get(), d_.x, x, d_.conv, bwdAlgo_,
                                                     ctx.workspace(), ctx.workspaceBytes(), &zero, d_.y, y),
                        "cudnnConvolutionBackwardData");
      if (!st) return makeError("node '", name_, "': ", st.message());
      return epilogue(ctx, y, z, yT);
    }
    if (graphPlan_ >= 0 && ConvGraphPlans::aligned(x, w_.get(), y)) {
      // The graph plan computes the plain convolution; bias, residual and activation follow.
      if (Status st = graph_.run(graphPlan_, ctx, x, w_.as<float>(), y); !st)
        return makeError("node '", name_, "': ", st.message());
      return epilogue(ctx, y, z, yT);
    }
    if (Status st = forward(ctx, x, y, z); !st) return makeError("node '", name_, "': ", st.message());
    if (post_.op == Unary::Relu) return {};  // bias, residual and ReLU were the call's
    return epilogue(ctx, y, z, yT);
  }

 private:
  /// y = post(y + bias[c] (+ z)).
  Status epilogue(Context& ctx, float* y, const float* z, const DevTensor& yT) {
    const int64_t c = yShapeFull_[1], n = yShapeFull_[0], inner = prod(yShapeFull_, 2, yShapeFull_.size());
    if (auto st = err(channelAffineF32(y, ones_.as<float>(), b_.as<float>(), y, n, c, inner, z ? UnaryOp{} : post_,
                                       ctx.stream()),
                      "bias kernel");
        !st)
      return st;
    if (!z) return {};
    const Shape s = toShape(yT.shape);
    return err(binaryF32(Binary::Add, y, s, z, s, y, s, post_, ctx.stream()), "residual kernel");
  }

  bool transposed_;
  bool residual_ = false;
  UnaryOp post_;
  ConvGeom geom_;
  std::vector<int64_t> xShape_, yShapeFull_, paddedShape_, padBegin_;
  bool prepad_ = false;
  DeviceBuffer w_, b_, ones_, padded_;
  CudnnDescs d_;
  cudnnConvolutionFwdAlgo_t fwdAlgo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionFwdAlgo_t chosen_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwdAlgo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnMathType_t mathType_ = CUDNN_FMA_MATH;
  ConvGraphPlans graph_;  ///< The graph API's plans when one of them won, else empty.
  int graphPlan_ = -1;    ///< The plan launch() runs, or -1 for the legacy call.
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Gemm and MatMul: cuBLASLt (row-major operands mapped to its column-major view: C^T = B^T A^T)

namespace {

class GemmK final : public NodeOp {
 public:
  GemmK(const Graph& g, const std::vector<OpId>& chain, std::vector<ValueId> reads) : NodeOp(g, chain, std::move(reads)) {}
  ~GemmK() override {
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    for (auto* l : {la_, lb_, lc_})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }

  Status prepare(Context& ctx, const Graph& g, const LeafFn& leaf, UnaryOp post) {
    const Node& n = node(g, ops_[0]);
    post_ = post;
    const auto& a = value(g, n.inputs[0]).shape;
    const auto& b = value(g, n.inputs[1]).shape;
    const auto& y = value(g, n.outputs[0]).shape;
    int64_t m = 0, k = 0, nn = 0, batch = 1, strideA = 0, strideB = 0, strideC = 0;
    bool transA = false, transB = false;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (n.opType == "Gemm") {
      if (a.size() != 2 || b.size() != 2) return makeError("node '", name_, "': Gemm operands must be 2-D");
      transA = n.attrInt("transA", 0) != 0;
      transB = n.attrInt("transB", 0) != 0;
      m = transA ? a[1] : a[0];
      k = transA ? a[0] : a[1];
      nn = transB ? b[0] : b[1];
      if ((transB ? b[1] : b[0]) != k) return makeError("node '", name_, "': Gemm inner dimensions differ");
      alpha_ = static_cast<float>(n.attrFloat("alpha", 1.0));
      const float beta = static_cast<float>(n.attrFloat("beta", 1.0));
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
        const Value& c = value(g, n.inputs[2]);
        if (c.isWeight) {
          auto cf = constFloats(g, n, 2, leaf);
          if (!cf) return Error{cf.message()};
          const bool perColumn = (c.shape.size() == 1 && c.shape[0] == nn) ||
                                 (c.shape.size() == 2 && c.shape[0] == 1 && c.shape[1] == nn);
          if (perColumn) {
            for (float& f : *cf) f *= beta;
            if (auto st = bias_.upload(cf->data(), cf->size() * 4, ctx.stream()); !st) return st;
            epi = CUBLASLT_EPILOGUE_BIAS;
          } else {
            // Any other broadcastable C: expanded to [M, N] once, times beta.
            std::vector<float> full(static_cast<size_t>(m * nn));
            const int64_t cr = c.shape.size() == 2 ? c.shape[0] : 1;
            const int64_t cc = c.shape.empty() ? 1 : c.shape.back();
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < nn; ++j)
                full[static_cast<size_t>(i * nn + j)] =
                    beta * (*cf)[static_cast<size_t>((cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j))];
            if (auto st = cfull_.upload(full.data(), full.size() * 4, ctx.stream()); !st) return st;
            betaC_ = 1.f;
          }
        } else if (c.shape == y) {
          cRead_ = true;  // C read by cuBLASLt itself, scaled by beta
          betaC_ = beta;
        } else {
          // An activation C that broadcasts (a bias fed as a model input): added after the product.
          if (beta != 1.f) return makeError("node '", name_, "': Gemm's broadcast activation C with beta != 1");
          cAdd_ = true;
          cShape_ = toShape(c.shape);
          yShape_ = toShape(y);
        }
      }
    } else {  // MatMul
      std::vector<int64_t> as = a, bs = b;
      if (as.size() == 1) as.insert(as.begin(), 1);
      if (bs.size() == 1) bs.push_back(1);
      m = as[as.size() - 2];
      k = as.back();
      nn = bs.back();
      if (bs[bs.size() - 2] != k) return makeError("node '", name_, "': MatMul inner dimensions differ");
      const int64_t ba = prod(as, 0, as.size() - 2), bb = prod(bs, 0, bs.size() - 2);
      if (bb == 1) {
        m *= ba;  // B is one matrix: A's batch folds into its rows
      } else if (ba == 1) {
        batch = bb, strideA = 0, strideB = k * nn, strideC = m * nn;
      } else if (ba == bb) {
        batch = ba, strideA = m * k, strideB = k * nn, strideC = m * nn;
      } else {
        return makeError("node '", name_, "': MatMul batch broadcasting");
      }
    }
    if (post_.op == Unary::Relu && !cAdd_) {
      epi = epi == CUBLASLT_EPILOGUE_BIAS ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      post_ = UnaryOp{};
    }
    outNumel_ = prod(y, 0, y.size());
    const cublasComputeType_t compute = ctx.allowTf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    Status st = check(cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N, opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (st) st = check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA), "transa");
    if (st) st = check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB), "transb");
    if (st) st = check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "epilogue");
    if (st && bias_.get()) {
      const void* p = bias_.get();
      st = check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p), "bias");
    }
    // Lt's A is our B: [N, K] column-major (ld N) untransposed, or stored [K, N] (ld K) transposed.
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    if (st) st = check(cublasLtMatrixLayoutCreate(&la_, CUDA_R_32F, transB ? u(k) : u(nn), transB ? u(nn) : u(k),
                                                  transB ? k : nn), "layout A");
    if (st) st = check(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_32F, transA ? u(m) : u(k), transA ? u(k) : u(m),
                                                  transA ? m : k), "layout B");
    if (st) st = check(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_32F, u(nn), u(m), nn), "layout C");
    if (st && batch > 1) {
      const int32_t bc = static_cast<int32_t>(batch);
      for (auto [l, stride] : {std::pair{la_, strideB}, std::pair{lb_, strideA}, std::pair{lc_, strideC}}) {
        if (st) st = check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc), "batch");
        if (st) st = check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                            sizeof stride), "batch stride");
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    if (st) st = check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    const uint64_t ws = ctx.workspaceBytes();
    if (st) st = check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                       "workspace preference");
    cublasLtMatmulHeuristicResult_t res{};
    int count = 0;
    if (st) st = check(cublasLtMatmulAlgoGetHeuristic(ctx.cublasLt(), desc_, la_, lb_, lc_, lc_, pref, 1, &res, &count),
                       "cublasLtMatmulAlgoGetHeuristic");
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (st && count == 0) st = makeError("cuBLASLt has no algorithm for this product");
    if (!st) return makeError("node '", name_, "': ", st.message());
    algo_ = res.algo;
    return {};
  }

  int64_t ownedBytes() const override { return static_cast<int64_t>(bias_.bytes() + cfull_.bytes()); }

  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    const void* a = v[static_cast<size_t>(reads_[0])].ptr;
    const void* b = v[static_cast<size_t>(reads_[1])].ptr;
    DevTensor& y = v[static_cast<size_t>(writes_[0])];
    const void* c = cRead_ ? v[static_cast<size_t>(reads_[2])].ptr : cfull_.get();
    if (cAdd_) c = nullptr;
    const float beta = c ? betaC_ : 0.f;
    Status st = check(cublasLtMatmul(ctx.cublasLt(), desc_, &alpha_, b, la_, a, lb_, &beta, c ? c : y.ptr, lc_, y.ptr,
                                     lc_, &algo_, ctx.workspace(), ctx.workspaceBytes(), ctx.stream()),
                      "cublasLtMatmul");
    if (!st) return makeError("node '", name_, "': ", st.message());
    if (cAdd_)
      return err(binaryF32(Binary::Add, y.f32(), yShape_, v[static_cast<size_t>(reads_[2])].f32(), cShape_, y.f32(), yShape_,
                           post_, ctx.stream()),
                 "bias kernel");
    if (post_.op != Unary::Identity) return err(unaryF32(post_, y.f32(), y.f32(), outNumel_, ctx.stream()), "activation");
    return {};
  }

 private:
  UnaryOp post_;
  float alpha_ = 1.f, betaC_ = 0.f;
  bool cRead_ = false, cAdd_ = false;
  Shape cShape_, yShape_;
  int64_t outNumel_ = 0;
  DeviceBuffer bias_, cfull_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Pooling, normalisation, data movement

namespace {

class PoolK final : public NodeOp {
 public:
  PoolK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {}
  Status prepare(const Graph& g) {
    const Node& n = node(g, ops_[0]);
    max_ = n.opType == "MaxPool";
    const auto& x = value(g, n.inputs[0]).shape;
    const auto& y = value(g, n.outputs[0]).shape;
    const size_t sp = x.size() - 2;
    auto win = windowOf(n, x, y, {});
    if (!win) return Error{win.message()};
    const auto &ks = win->kernel, &st = win->strides, &dl = win->dilations, &pads = win->pads;
    p_.n = x[0], p_.c = x[1];
    const size_t h = sp == 2 ? 0 : SIZE_MAX, w = sp - 1;
    p_.w = x[w + 2], p_.ow = y[w + 2], p_.kw = static_cast<int>(ks[w]), p_.sw = static_cast<int>(st[w]);
    p_.dw = static_cast<int>(dl[w]), p_.padLeft = static_cast<int>(pads[w]), p_.padRight = static_cast<int>(pads[w + sp]);
    if (h != SIZE_MAX) {
      p_.h = x[2], p_.oh = y[2], p_.kh = static_cast<int>(ks[0]), p_.sh = static_cast<int>(st[0]);
      p_.dh = static_cast<int>(dl[0]), p_.padTop = static_cast<int>(pads[0]), p_.padBottom = static_cast<int>(pads[sp]);
    }
    p_.countIncludePad = n.attrInt("count_include_pad", 0) != 0;
    return {};
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    const float* x = v[static_cast<size_t>(reads_[0])].f32();
    float* y = v[static_cast<size_t>(writes_[0])].f32();
    return err(max_ ? maxPool2dF32(x, y, p_, ctx.stream()) : avgPool2dF32(x, y, p_, ctx.stream()), "pool kernel");
  }

 private:
  bool max_ = true;
  Pool2d p_;
};

/// GlobalAveragePool / GlobalMaxPool, ReduceMean / ReduceSum / ReduceMax over contiguous axes.
class ReduceK final : public NodeOp {
 public:
  ReduceK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {}
  Status prepare(const Graph& g, const LeafFn& leaf) {
    const Node& n = node(g, ops_[0]);
    const auto& x = value(g, n.inputs[0]).shape;
    const int64_t r = static_cast<int64_t>(x.size());
    std::vector<int64_t> axes;
    if (n.opType == "GlobalAveragePool" || n.opType == "GlobalMaxPool") {
      for (int64_t i = 2; i < r; ++i) axes.push_back(i);
      kind_ = n.opType == "GlobalMaxPool" ? 2 : 1;
    } else {
      kind_ = n.opType == "ReduceSum" ? 0 : n.opType == "ReduceMean" ? 1 : 2;
      if (n.hasAttr("axes")) axes = n.attrInts("axes");
      else if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
        auto a = constInts(g, n, 1, leaf);
        if (!a) return Error{a.message()};
        axes = *a;
      }
      if (axes.empty()) {
        if (n.attrInt("noop_with_empty_axes", 0) != 0) return makeError("node '", name_, "': noop_with_empty_axes");
        for (int64_t i = 0; i < r; ++i) axes.push_back(i);
      }
      for (auto& a : axes) a = a < 0 ? a + r : a;
      std::sort(axes.begin(), axes.end());
    }
    for (size_t i = 1; i < axes.size(); ++i)
      if (axes[i] != axes[i - 1] + 1) return makeError("node '", name_, "': reduced axes are not contiguous");
    if (axes.empty() || axes.front() < 0 || axes.back() >= r) return makeError("node '", name_, "': bad axes");
    outer_ = prod(x, 0, static_cast<size_t>(axes.front()));
    len_ = prod(x, static_cast<size_t>(axes.front()), static_cast<size_t>(axes.back() + 1));
    inner_ = prod(x, static_cast<size_t>(axes.back() + 1), x.size());
    return {};
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(reduceF32(v[static_cast<size_t>(reads_[0])].f32(), v[static_cast<size_t>(writes_[0])].f32(), outer_, len_,
                         inner_, kind_, ctx.stream()),
               "reduce kernel");
  }

 private:
  int kind_ = 1;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

class LrnK final : public NodeOp {
 public:
  LrnK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    const Node& n = node(g, op);
    const auto& x = value(g, n.inputs[0]).shape;
    n_ = x[0], c_ = x.size() > 1 ? x[1] : 1, inner_ = prod(x, 2, x.size());
    size_ = static_cast<int>(n.attrInt("size", 1));
    alpha_ = static_cast<float>(n.attrFloat("alpha", 1e-4));
    beta_ = static_cast<float>(n.attrFloat("beta", 0.75));
    bias_ = static_cast<float>(n.attrFloat("bias", 1.0));
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(lrnF32(v[static_cast<size_t>(reads_[0])].f32(), v[static_cast<size_t>(writes_[0])].f32(), n_, c_, inner_,
                      size_, alpha_, beta_, bias_, ctx.stream()),
               "LRN kernel");
  }

 private:
  int64_t n_ = 1, c_ = 1, inner_ = 1;
  int size_ = 1;
  float alpha_ = 0, beta_ = 0, bias_ = 0;
};

class SoftmaxK final : public NodeOp {
 public:
  SoftmaxK(const Graph& g, OpId op, int64_t opset) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    const Node& n = node(g, op);
    const auto& x = value(g, n.inputs[0]).shape;
    const int64_t r = static_cast<int64_t>(x.size());
    int64_t axis = n.attrInt("axis", opset >= 13 ? -1 : 1);
    if (axis < 0) axis += r;
    axis = std::clamp<int64_t>(axis, 0, std::max<int64_t>(r - 1, 0));
    log_ = n.opType == "LogSoftmax";
    outer_ = prod(x, 0, static_cast<size_t>(axis));
    if (opset >= 13) {
      len_ = x.empty() ? 1 : x[static_cast<size_t>(axis)];
      inner_ = prod(x, static_cast<size_t>(axis) + 1, x.size());
    } else {  // before opset 13: the input is flattened to 2-D at `axis`
      len_ = prod(x, static_cast<size_t>(axis), x.size());
      inner_ = 1;
    }
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(softmaxF32(v[static_cast<size_t>(reads_[0])].f32(), v[static_cast<size_t>(writes_[0])].f32(), outer_, len_,
                          inner_, log_, ctx.stream()),
               "softmax kernel");
  }

 private:
  bool log_ = false;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

class ConcatK final : public NodeOp {
 public:
  ConcatK(const Graph& g, OpId op) : NodeOp(g, {op}, presentInputs(node(g, op))) {
    const Node& n = node(g, op);
    const auto& y = value(g, n.outputs[0]).shape;
    const int64_t r = static_cast<int64_t>(y.size());
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += r;
    outer_ = prod(y, 0, static_cast<size_t>(axis));
    const int64_t trailing = prod(y, static_cast<size_t>(axis) + 1, y.size());
    stride_ = y[static_cast<size_t>(axis)] * trailing;
    esize_ = static_cast<int>(tensorElementSize(value(g, n.outputs[0]).dtype));
    for (ValueId in : reads_) inner_.push_back(value(g, in).shape[static_cast<size_t>(axis)] * trailing);
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    void* y = v[static_cast<size_t>(writes_[0])].ptr;
    int64_t offset = 0;
    for (size_t i = 0; i < reads_.size(); ++i) {
      if (inner_[i] > 0)
        if (auto st = err(concatCopy(v[static_cast<size_t>(reads_[i])].ptr, y, outer_, inner_[i], stride_, offset, esize_,
                                     ctx.stream()),
                          "concat copy");
            !st)
          return st;
      offset += inner_[i];
    }
    return {};
  }

 private:
  int64_t outer_ = 1, stride_ = 1;
  int esize_ = 4;
  std::vector<int64_t> inner_;
};

/// Row-major strides of a shape, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

/// Slice (any steps) and each output of Split: a strided gather of the input (sliceCopy).
class SliceK final : public NodeOp {
 public:
  SliceK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {}
  Status prepare(const Graph& g, const LeafFn& leaf) {
    const Node& n = node(g, ops_[0]);
    const auto& x = value(g, n.inputs[0]).shape;
    const int64_t r = static_cast<int64_t>(x.size());
    esize_ = static_cast<int>(tensorElementSize(value(g, n.inputs[0]).dtype));
    inStrides_ = stridesOf(x);
    if (n.opType == "Split") {
      int64_t axis = n.attrInt("axis", 0);
      if (axis < 0) axis += r;
      int64_t start = 0;
      for (ValueId o : n.outputs) {
        if (o < 0) continue;
        const auto& ys = value(g, o).shape;
        std::vector<int64_t> starts(static_cast<size_t>(r), 0), steps(static_cast<size_t>(r), 1);
        starts[static_cast<size_t>(axis)] = start;
        start += ys[static_cast<size_t>(axis)];
        parts_.push_back({starts, steps, ys});
      }
      // Outputs omitted in the model still take their share of the axis: recompute from all outputs.
      if (parts_.size() != n.outputs.size()) return makeError("node '", name_, "': Split with omitted outputs");
      return {};
    }
    std::vector<int64_t> starts, ends, axes, steps;
    if (n.inputs.size() > 1) {
      auto s = constInts(g, n, 1, leaf);
      auto e = constInts(g, n, 2, leaf);
      auto a = constInts(g, n, 3, leaf);
      auto p = constInts(g, n, 4, leaf);
      for (auto* q : {&s, &e, &a, &p})
        if (!*q) return Error{q->message()};
      starts = *s, ends = *e, axes = *a, steps = *p;
    } else {
      starts = n.attrInts("starts"), ends = n.attrInts("ends"), axes = n.attrInts("axes");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return makeError("node '", name_, "': starts/ends/axes/steps differ in length");
    std::vector<int64_t> st(static_cast<size_t>(r), 0), sp(static_cast<size_t>(r), 1);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r || steps[i] == 0) return makeError("node '", name_, "': bad axis or step");
      const int64_t dim = x[static_cast<size_t>(a)];
      int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
      // ONNX clamps starts to [0, dim] for positive steps and [0, dim-1] for negative ones.
      s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
      st[static_cast<size_t>(a)] = s;
      sp[static_cast<size_t>(a)] = steps[i];
    }
    parts_.push_back({st, sp, value(g, n.outputs[0]).shape});
    return {};
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    const void* x = v[static_cast<size_t>(reads_[0])].ptr;
    for (size_t i = 0; i < parts_.size(); ++i) {
      const Part& p = parts_[i];
      if (auto st = err(sliceCopy(x, p.starts.data(), p.steps.data(), inStrides_.data(), v[static_cast<size_t>(writes_[i])].ptr,
                                  toShape(p.shape), esize_, ctx.stream()),
                        "slice copy");
          !st)
        return st;
    }
    return {};
  }

 private:
  struct Part {
    std::vector<int64_t> starts, steps, shape;
  };
  std::vector<Part> parts_;
  std::vector<int64_t> inStrides_;
  int esize_ = 4;
};

class TransposeK final : public NodeOp {
 public:
  TransposeK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    const Node& n = node(g, op);
    const auto& x = value(g, n.inputs[0]).shape;
    in_ = toShape(x);
    auto perm = n.attrInts("perm");
    if (perm.empty())
      for (size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    for (int64_t p : perm) perm_.push_back(static_cast<int>(p));
    esize_ = static_cast<int>(tensorElementSize(value(g, n.inputs[0]).dtype));
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(transpose(v[static_cast<size_t>(reads_[0])].ptr, in_, perm_.data(), v[static_cast<size_t>(writes_[0])].ptr,
                         esize_, ctx.stream()),
               "transpose kernel");
  }

 private:
  Shape in_;
  std::vector<int> perm_;
  int esize_ = 4;
};

class ResizeK final : public NodeOp {
 public:
  ResizeK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {}
  Status prepare(const Graph& g, const LeafFn& leaf) {
    const Node& n = node(g, ops_[0]);
    x_ = value(g, n.inputs[0]).shape;
    y_ = value(g, n.outputs[0]).shape;
    const std::string mode = n.attrString("mode", "nearest");
    mode_ = mode == "nearest" ? 0 : 1;
    // Scales: Upsample's input 1 (or attribute), Resize's input 2 (opset 11+) or 1 (opset 10); else from
    // the sizes (output / input).
    std::vector<float> scales;
    const bool upsample = n.opType == "Upsample";
    const size_t si = upsample || g.opsetVersion < 11 ? 1 : 2;
    if (si < n.inputs.size() && n.inputs[si] >= 0 && value(g, n.inputs[si]).numElements() > 0) {
      auto f = constFloats(g, n, si, leaf);
      if (!f) return Error{f.message()};
      scales = *f;
    } else if (n.hasAttr("scales")) {
      auto it = n.attrs.find("scales");
      if (auto* d = std::get_if<std::vector<double>>(&it->second.value))
        for (double s : *d) scales.push_back(static_cast<float>(s));
    }
    scaleH_ = scales.size() == 4 ? scales[2] : static_cast<float>(y_[2]) / static_cast<float>(x_[2]);
    scaleW_ = scales.size() == 4 ? scales[3] : static_cast<float>(y_[3]) / static_cast<float>(x_[3]);
    const std::string ct = upsample || g.opsetVersion < 11 ? std::string("asymmetric")
                                                           : n.attrString("coordinate_transformation_mode", "half_pixel");
    static const std::map<std::string, int> coords = {{"half_pixel", 0}, {"asymmetric", 1}, {"align_corners", 2},
                                                      {"pytorch_half_pixel", 3}, {"tf_half_pixel_for_nearest", 4},
                                                      {"half_pixel_symmetric", 0}};
    auto c = coords.find(ct);
    if (c == coords.end()) return makeError("node '", name_, "': coordinate_transformation_mode ", ct);
    coord_ = c->second;
    if (ct == "half_pixel_symmetric" && (x_[2] * scaleH_ != static_cast<float>(y_[2]) || x_[3] * scaleW_ != static_cast<float>(y_[3])))
      return makeError("node '", name_, "': half_pixel_symmetric with non-integral sizes");
    const std::string nm = upsample || g.opsetVersion < 11 ? std::string("floor") : n.attrString("nearest_mode", "round_prefer_floor");
    static const std::map<std::string, int> nearest = {{"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}};
    auto m = nearest.find(nm);
    if (m == nearest.end()) return makeError("node '", name_, "': nearest_mode ", nm);
    nearest_ = m->second;
    return {};
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(resize2dF32(v[static_cast<size_t>(reads_[0])].f32(), x_[0], x_[1], x_[2], x_[3],
                           v[static_cast<size_t>(writes_[0])].f32(), y_[2], y_[3], scaleH_, scaleW_, mode_, coord_,
                           nearest_, ctx.stream()),
               "resize kernel");
  }

 private:
  std::vector<int64_t> x_, y_;
  float scaleH_ = 1, scaleW_ = 1;
  int mode_ = 0, coord_ = 0, nearest_ = 0;
};

class PadK final : public NodeOp {
 public:
  PadK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {}
  Status prepare(const Graph& g, const LeafFn& leaf) {
    const Node& n = node(g, ops_[0]);
    x_ = value(g, n.inputs[0]).shape;
    y_ = value(g, n.outputs[0]).shape;
    std::vector<int64_t> pads;
    if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
      auto p = constInts(g, n, 1, leaf);
      if (!p) return Error{p.message()};
      pads = *p;
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
        auto f = constFloats(g, n, 2, leaf);
        if (!f) return Error{f.message()};
        if (!f->empty()) value_ = (*f)[0];
      }
    } else {
      pads = n.attrInts("pads");
      value_ = static_cast<float>(n.attrFloat("value", 0.0));
    }
    if (pads.size() != 2 * x_.size()) return makeError("node '", name_, "': pads do not match the rank");
    begin_.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(x_.size()));
    const std::string mode = n.attrString("mode", "constant");
    mode_ = mode == "constant" ? 0 : mode == "reflect" ? 1 : 2;
    return {};
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(padF32(v[static_cast<size_t>(reads_[0])].f32(), toShape(x_), begin_.data(), v[static_cast<size_t>(writes_[0])].f32(),
                      toShape(y_), mode_, value_, ctx.stream()),
               "pad kernel");
  }

 private:
  std::vector<int64_t> x_, y_, begin_;
  int mode_ = 0;
  float value_ = 0.f;
};

class GatherK final : public NodeOp {
 public:
  GatherK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0], node(g, op).inputs[1]}) {
    const Node& n = node(g, op);
    const auto& x = value(g, n.inputs[0]).shape;
    const int64_t r = static_cast<int64_t>(x.size());
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += r;
    outer_ = prod(x, 0, static_cast<size_t>(axis));
    len_ = x[static_cast<size_t>(axis)];
    inner_ = prod(x, static_cast<size_t>(axis) + 1, x.size());
    nIdx_ = std::max<int64_t>(value(g, n.inputs[1]).numElements(), 0);
    esize_ = static_cast<int>(tensorElementSize(value(g, n.inputs[0]).dtype));
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(gather(v[static_cast<size_t>(reads_[0])].ptr, outer_, len_, inner_,
                      static_cast<const int64_t*>(v[static_cast<size_t>(reads_[1])].ptr), nIdx_,
                      v[static_cast<size_t>(writes_[0])].ptr, esize_, ctx.stream()),
               "gather kernel");
  }

 private:
  int64_t outer_ = 1, len_ = 1, inner_ = 1, nIdx_ = 0;
  int esize_ = 4;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Masks and embeddings' small operators: Cast, Where, And/Or/Xor, Expand

namespace {

class CastK final : public NodeOp {
 public:
  CastK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    from_ = *elemTypeOf(value(g, reads_[0]).dtype);
    to_ = *elemTypeOf(value(g, writes_[0]).dtype);
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    DevTensor& y = v[static_cast<size_t>(writes_[0])];
    return err(castTensor(v[static_cast<size_t>(reads_[0])].ptr, from_, y.ptr, to_, y.numel(), ctx.stream()), "cast kernel");
  }

 private:
  ElemType from_ = ElemType::F32, to_ = ElemType::F32;
};

class WhereK final : public NodeOp {
 public:
  WhereK(const Graph& g, OpId op) : NodeOp(g, {op}, presentInputs(node(g, op))) {
    for (int i = 0; i < 3; ++i) in_[i] = toShape(value(g, reads_[static_cast<size_t>(i)]).shape);
    out_ = toShape(value(g, writes_[0]).shape);
    esize_ = static_cast<int>(tensorElementSize(value(g, writes_[0]).dtype));
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(whereTensor(static_cast<const uint8_t*>(v[static_cast<size_t>(reads_[0])].ptr), in_[0],
                           v[static_cast<size_t>(reads_[1])].ptr, in_[1], v[static_cast<size_t>(reads_[2])].ptr, in_[2],
                           v[static_cast<size_t>(writes_[0])].ptr, out_, esize_, ctx.stream()),
               "where kernel");
  }

 private:
  Shape in_[3], out_;
  int esize_ = 4;
};

class LogicalK final : public NodeOp {
 public:
  LogicalK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0], node(g, op).inputs[1]}) {
    const std::string& t = node(g, op).opType;
    op_ = t == "And" ? 0 : t == "Or" ? 1 : 2;
    a_ = toShape(value(g, reads_[0]).shape);
    b_ = toShape(value(g, reads_[1]).shape);
    out_ = toShape(value(g, writes_[0]).shape);
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(logicalBinary(op_, static_cast<const uint8_t*>(v[static_cast<size_t>(reads_[0])].ptr), a_,
                             static_cast<const uint8_t*>(v[static_cast<size_t>(reads_[1])].ptr), b_,
                             static_cast<uint8_t*>(v[static_cast<size_t>(writes_[0])].ptr), out_, ctx.stream()),
               "logical kernel");
  }

 private:
  int op_ = 0;
  Shape a_, b_, out_;
};

/// Expand: a strided copy whose step is 0 along every broadcast axis (sliceCopy).
class ExpandK final : public NodeOp {
 public:
  ExpandK(const Graph& g, OpId op) : NodeOp(g, {op}, {node(g, op).inputs[0]}) {
    const auto& x = value(g, reads_[0]).shape;
    out_ = value(g, writes_[0]).shape;
    const size_t r = out_.size();
    starts_.assign(r, 0);
    steps_.assign(r, 1);
    strides_.assign(r, 0);
    int64_t st = 1;
    for (size_t k = r, j = x.size(); k-- > 0;) {
      const int64_t dim = j > 0 ? x[--j] : 1;
      strides_[k] = st;
      steps_[k] = dim == 1 && out_[k] != 1 ? 0 : 1;
      st *= dim;
    }
    esize_ = static_cast<int>(tensorElementSize(value(g, writes_[0]).dtype));
  }
  Status launch(Context& ctx, std::vector<DevTensor>& v) override {
    return err(sliceCopy(v[static_cast<size_t>(reads_[0])].ptr, starts_.data(), steps_.data(), strides_.data(),
                         v[static_cast<size_t>(writes_[0])].ptr, toShape(out_), esize_, ctx.stream()),
               "expand copy");
  }

 private:
  std::vector<int64_t> out_, starts_, steps_, strides_;
  int esize_ = 4;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------

Result<std::unique_ptr<GpuOp>> makeGpuOp(Context& ctx, const Graph& g, const std::vector<OpId>& chain,
                                         const LeafFn& leaf) {
  if (chain.empty()) return makeError("cuda backend: empty chain");
  const Node& n = node(g, chain[0]);
  if (std::string why = gpuCheck(g, chain[0]); !why.empty()) return makeError("cuda backend: node '", n.name, "': ", why);
  if (!gpuChainOk(g, chain)) return makeError("cuda backend: node '", n.name, "': not a chain the backend fuses");
  // The chain's activation, if its last operator is one (and it is not the anchor itself).
  UnaryOp post;
  size_t body = chain.size();
  if (chain.size() > 1 && activationOf(g, node(g, chain.back()), &post)) {
    if (auto st = clipBounds(g, node(g, chain.back()), leaf, post); !st) return Error{st.message()};
    --body;
  }
  const std::string& t = n.opType;
  try {
    if (inList(t, kViews)) return std::unique_ptr<GpuOp>(std::make_unique<ViewOp>(g, chain[0]));
    if (UnaryOp u; activationOf(g, n, &u)) {
      if (auto st = clipBounds(g, n, leaf, u); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::make_unique<UnaryK>(g, chain[0], u));
    }
    if (inList(t, kUnary)) return std::unique_ptr<GpuOp>(std::make_unique<UnaryK>(g, chain[0], UnaryOp{unaryOfType(t), 0, 0}));
    if (inList(t, kBinary)) {
      static const std::map<std::string, Binary> ops = {{"Add", Binary::Add}, {"Sub", Binary::Sub}, {"Mul", Binary::Mul},
                                                        {"Div", Binary::Div}, {"Pow", Binary::Pow}, {"Max", Binary::Max},
                                                        {"Min", Binary::Min}};
      return std::unique_ptr<GpuOp>(std::make_unique<BinaryK>(g, chain, ops.at(t), post));
    }
    if (t == "Sum") {
      bool same = true;
      for (ValueId v : n.inputs) same = same && v >= 0 && value(g, v).shape == value(g, n.outputs[0]).shape;
      if (same) return std::unique_ptr<GpuOp>(std::make_unique<SumK>(g, chain, post));
      if (n.inputs.size() == 2) return std::unique_ptr<GpuOp>(std::make_unique<BinaryK>(g, chain, Binary::Add, post));
      return makeError("cuda backend: node '", n.name, "': Sum of broadcast inputs");
    }
    if (t == "BatchNormalization") {
      auto k = std::make_unique<AffineK>(g, chain, post);
      if (auto st = k->prepare(ctx, g, leaf); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "Conv" || t == "ConvTranspose") {
      ValueId residual = kNone;
      ValueId cur = n.outputs[0];
      for (size_t i = 1; i < body; ++i) {
        const Node& s = node(g, chain[i]);
        if (isOp(s, {"Add", "Sum"}) && !perChannelWeight(g, s.inputs[0] == cur ? s.inputs[1] : s.inputs[0], value(g, cur)))
          residual = s.inputs[0] == cur ? s.inputs[1] : s.inputs[0];
        cur = s.outputs[0];
      }
      std::vector<ValueId> reads{n.inputs[0]};
      if (residual != kNone) reads.push_back(residual);
      auto k = std::make_unique<ConvK>(g, chain, reads, t == "ConvTranspose");
      if (auto st = k->prepare(ctx, g, leaf, residual, post); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "Gemm" || t == "MatMul") {
      std::vector<ValueId> reads{n.inputs[0], n.inputs[1]};
      if (t == "Gemm" && n.inputs.size() > 2 && n.inputs[2] >= 0 && !value(g, n.inputs[2]).isWeight) reads.push_back(n.inputs[2]);
      auto k = std::make_unique<GemmK>(g, chain, reads);
      if (auto st = k->prepare(ctx, g, leaf, post); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "MaxPool" || t == "AveragePool") {
      auto k = std::make_unique<PoolK>(g, chain[0]);
      if (auto st = k->prepare(g); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "GlobalAveragePool" || t == "GlobalMaxPool" || t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax") {
      auto k = std::make_unique<ReduceK>(g, chain[0]);
      if (auto st = k->prepare(g, leaf); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "LRN") return std::unique_ptr<GpuOp>(std::make_unique<LrnK>(g, chain[0]));
    if (t == "Softmax" || t == "LogSoftmax")
      return std::unique_ptr<GpuOp>(std::make_unique<SoftmaxK>(g, chain[0], g.opsetVersion));
    if (t == "Concat") return std::unique_ptr<GpuOp>(std::make_unique<ConcatK>(g, chain[0]));
    if (t == "Slice" || t == "Split") {
      auto k = std::make_unique<SliceK>(g, chain[0]);
      if (auto st = k->prepare(g, leaf); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "Transpose") return std::unique_ptr<GpuOp>(std::make_unique<TransposeK>(g, chain[0]));
    if (t == "Resize" || t == "Upsample") {
      auto k = std::make_unique<ResizeK>(g, chain[0]);
      if (auto st = k->prepare(g, leaf); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "Pad") {
      auto k = std::make_unique<PadK>(g, chain[0]);
      if (auto st = k->prepare(g, leaf); !st) return Error{st.message()};
      return std::unique_ptr<GpuOp>(std::move(k));
    }
    if (t == "Gather") return std::unique_ptr<GpuOp>(std::make_unique<GatherK>(g, chain[0]));
    if (t == "Cast") return std::unique_ptr<GpuOp>(std::make_unique<CastK>(g, chain[0]));
    if (t == "Where") return std::unique_ptr<GpuOp>(std::make_unique<WhereK>(g, chain[0]));
    if (t == "And" || t == "Or" || t == "Xor") return std::unique_ptr<GpuOp>(std::make_unique<LogicalK>(g, chain[0]));
    if (t == "Expand") return std::unique_ptr<GpuOp>(std::make_unique<ExpandK>(g, chain[0]));
  } catch (const std::exception& e) {
    return makeError("cuda backend: node '", n.name, "': ", e.what());
  }
  return makeError("cuda backend: node '", n.name, "': op type ", t, " has no CUDA kernel");
}

}  // namespace partex::cuda
