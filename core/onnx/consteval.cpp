#include "onnx/consteval.h"

#include <cstring>
#include <set>
#include <string>

#include "backend/tensor.h"
#include "kernels/ops.h"
#include "onnx/weights.h"

namespace partex::onnximp {

namespace {

constexpr int64_t kMaxSaneElements = int64_t{1} << 62;
/// With an output size ONNX could not infer, a node is evaluated only when the product of its inputs'
/// element counts (a bound on a broadcast result) stays below this.
constexpr int64_t kMaxUnboundedProduct = int64_t{1} << 24;

const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

/// The default-domain operators the importer folds when every input is a constant. The set is the
/// importer's choice (which subgraphs become weights), not a kernel's: extending it changes the graphs
/// the shared models import to.
bool isFoldedOp(const std::string& op) {
  static const std::set<std::string> ops{
      "Shape",      "Size",        "Identity",  "Dropout",     "Cast",           "Reshape",   "Flatten",
      "Unsqueeze",  "Squeeze",     "Concat",    "Gather",      "Slice",          "Transpose", "Expand",
      "Tile",       "Range",       "Where",     "Split",       "Clip",           "NonZero",   "ReduceProd",
      "ReduceSum",  "ReduceMin",   "ReduceMax", "ReduceMean",  "Add",            "Sub",       "Mul",
      "Div",        "Mod",         "Pow",       "Sum",         "Min",            "Max",       "Mean",
      "Equal",      "Less",        "Greater",   "LessOrEqual", "GreaterOrEqual", "And",       "Or",
      "Xor",        "Not",         "Neg",       "Abs",         "Floor",          "Ceil",      "Round",
      "Sqrt",       "Reciprocal",  "Relu",      "Sign",        "Exp",            "Log",       "Sigmoid",
      "Tanh"};
  return ops.count(op) != 0;
}

/// Operators whose output holds their first input's elements unchanged, in another shape: folded by
/// sharing the bytes (a large weight is never copied), with the kernels' own shape rule.
bool isRelabelOp(const std::string& op) {
  return op == "Identity" || op == "Dropout" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
         op == "Unsqueeze";
}

/// Operators whose output size follows from their input values, not from their input sizes.
bool growsWithValues(const std::string& op) {
  return op == "Expand" || op == "Tile" || op == "Range";
}

std::shared_ptr<const TensorData> copyBytes(const void* p, size_t bytes) {
  auto d = TensorData::allocate(bytes);
  if (!d) return nullptr;
  if (bytes) std::memcpy(d->mutableData(), p, bytes);
  return d;
}

/// The elements of a value_floats / value_ints attribute as TensorData.
template <class T, class Field>
std::shared_ptr<const TensorData> fieldData(const Field& field) {
  auto d = TensorData::allocate(static_cast<size_t>(field.size()) * sizeof(T));
  if (!d) return nullptr;
  T* p = reinterpret_cast<T*>(d->mutableData());
  for (auto v : field) *p++ = static_cast<T>(v);
  return d;
}

/// A backend Tensor reading the constant's bytes (no copy).
Result<Tensor> aliasOf(const ConstTensor& c) {
  return Tensor::alias(c.dtype, c.dims, c.data);
}

bool evalConstant(const onnx::NodeProto& n, ConstTensor& o) {
  if (const auto* at = findAttr(n, "value"); at && at->has_t()) {
    const onnx::TensorProto& t = at->t();
    o.dtype = dtypeFromOnnx(t.data_type());
    o.dims.assign(t.dims().begin(), t.dims().end());
    if (safeNumel(o.dims) < 0) return false;
    if (auto d = decodeTensorData(t); d) o.data = std::move(d).value();
    return true;
  }
  if (const auto* at = findAttr(n, "sparse_value"); at && at->has_sparse_tensor()) {
    o.dtype = dtypeFromOnnx(at->sparse_tensor().values().data_type());
    o.dims.assign(at->sparse_tensor().dims().begin(), at->sparse_tensor().dims().end());
    return safeNumel(o.dims) >= 0;
  }
  if (const auto* at = findAttr(n, "value_float"); at && at->has_f()) {
    o.dtype = DType::Float32;
    const float f = at->f();
    o.data = copyBytes(&f, sizeof f);
    return true;
  }
  if (const auto* at = findAttr(n, "value_floats")) {
    o.dtype = DType::Float32;
    o.dims = {at->floats_size()};
    o.data = fieldData<float>(at->floats());
    return true;
  }
  if (const auto* at = findAttr(n, "value_int"); at && at->has_i()) {
    o.dtype = DType::Int64;
    const int64_t i = at->i();
    o.data = copyBytes(&i, sizeof i);
    return true;
  }
  if (const auto* at = findAttr(n, "value_ints")) {
    o.dtype = DType::Int64;
    o.dims = {at->ints_size()};
    o.data = fieldData<int64_t>(at->ints());
    return true;
  }
  if (const auto* at = findAttr(n, "value_string"); at && at->has_s()) {
    o.dtype = DType::String;
    return true;
  }
  if (const auto* at = findAttr(n, "value_strings")) {
    o.dtype = DType::String;
    o.dims = {at->strings_size()};
    return true;
  }
  return false;
}

/// ConstantOfShape at any size: one element, expanded when a run first reads it (the light_* models'
/// weights), so an import never pays for weights it does not run.
bool evalConstantOfShape(const onnx::NodeProto& n, const std::vector<const ConstTensor*>& in, ConstTensor& o) {
  const ConstTensor* s = in.empty() ? nullptr : in[0];
  if (!s || !s->foldable() || !isIntType(s->dtype)) return false;
  o.dims = s->ints();
  for (int64_t d : o.dims)
    if (d < 0) return false;
  if (safeNumel(o.dims) < 0) return false;
  o.dtype = DType::Float32;
  std::string pattern(4, '\0');  // the element in Tensor encoding: float32 0 by default
  if (const auto* at = findAttr(n, "value"); at && at->has_t()) {
    o.dtype = dtypeFromOnnx(at->t().data_type());
    auto d = decodeTensorData(at->t());
    const int64_t es = tensorElementSize(o.dtype);
    const std::byte* p = d && *d ? (*d)->data() : nullptr;
    if (p && es > 0 && (*d)->size() == static_cast<size_t>(es))
      pattern.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(es));
    else
      pattern.clear();
  }
  if (!pattern.empty()) o.data = TensorData::splat(pattern.data(), pattern.size(), static_cast<size_t>(o.numel()));
  return true;
}

/// Shape and Size need only the input's dims (the input may be an activation of known shape).
bool evalShape(const Node& ir, const std::vector<const ConstTensor*>& in, ConstTensor& o) {
  const ConstTensor* x = in.empty() ? nullptr : in[0];
  if (!x || x->numel() < 0) return false;
  const bool size = ir.opType == "Size";
  const std::vector<int64_t> v = cpu::shapeOpValues(ir, x->dims, size);
  o.dtype = DType::Int64;
  o.dims = size ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())};
  o.data = copyBytes(v.data(), v.size() * sizeof(int64_t));
  return true;
}

/// Identity, Dropout (inference), Reshape, Flatten, Squeeze, Unsqueeze: the input's bytes under the
/// shape the kernels give (kernels/ops.h relabeledShape), at any size.
bool evalRelabel(const Node& ir, const std::vector<const ConstTensor*>& in, std::vector<ConstTensor>& out) {
  const ConstTensor* x = in.empty() ? nullptr : in[0];
  if (!x) return false;
  if (ir.opType == "Dropout" && in.size() > 2 && in[2]) {  // training_mode (opset 12+) on makes it random
    const ConstTensor* tm = in[2];
    const std::vector<int64_t> v = tm->ints();
    if (!tm->foldable() || v.size() != 1 || v[0] != 0) return false;
  }
  Tensor second;
  const Tensor* secondPtr = nullptr;
  if (ir.opType != "Dropout" && in.size() > 1 && in[1]) {
    if (!in[1]->foldable()) return false;
    auto t = aliasOf(*in[1]);
    if (!t) return false;
    second = std::move(*t);
    secondPtr = &second;
  }
  auto dims = cpu::relabeledShape(ir, x->dims, secondPtr);
  if (!dims) return false;
  out[0].dtype = x->dtype;
  out[0].dims = std::move(*dims);
  out[0].data = x->data;
  if (out.size() > 1) {  // Dropout's mask: all true outside training
    out[1].dtype = DType::Bool;
    out[1].dims = x->dims;
    if (x->numel() <= kMaxConstElements) {
      const uint8_t one = 1;
      out[1].data = TensorData::splat(&one, 1, static_cast<size_t>(x->numel()));
    }
  }
  return true;
}

/// Every other folded operator: its plain CPU kernel, run once on the constants' bytes. Results beyond
/// kMaxConstElements are not computed (the node stays an operator), and neither are those whose size
/// ONNX cannot bound beforehand.
bool evalKernel(const Node& ir, int64_t opset, const std::vector<const ConstTensor*>& in,
                const std::vector<ExpectedOutput>& expected, std::vector<ConstTensor>& out) {
  int64_t product = 1;
  for (const ConstTensor* c : in) {
    if (!c) continue;
    if (!c->foldable()) return false;
    product = std::min(kMaxUnboundedProduct + 1, product * std::max<int64_t>(1, c->numel()));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < expected.size() && expected[i].known) {
      const int64_t n = safeNumel(expected[i].dims);
      if (n < 0 || n > kMaxConstElements) return false;
    } else if (growsWithValues(ir.opType) || product > kMaxUnboundedProduct) {
      return false;
    }
  }
  Graph g;
  g.opsetVersion = opset;
  Node n = ir;
  n.inputs.clear();
  n.outputs.clear();
  std::vector<Tensor> tensors(in.size());
  std::vector<const Tensor*> ins(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) {
      n.inputs.push_back(kNone);
      continue;
    }
    Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = in[i]->dtype;
    v.shape = in[i]->dims;
    v.shapeKnown = true;
    v.isWeight = true;
    n.inputs.push_back(g.addValue(std::move(v)));
    auto t = aliasOf(*in[i]);
    if (!t) return false;
    tensors[i] = std::move(*t);
    ins[i] = &tensors[i];
  }
  for (size_t i = 0; i < out.size(); ++i) {
    Value v;
    v.name = "out" + std::to_string(i);
    if (i < expected.size()) {
      v.dtype = expected[i].dtype;
      v.shape = expected[i].dims;
      v.shapeKnown = expected[i].known;
    }
    n.outputs.push_back(g.addValue(std::move(v)));
  }
  g.addNode(std::move(n));
  std::vector<Tensor> results;
  if (!cpu::runPlainKernel(g, 0, ins, results) || results.size() < out.size()) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& t = results[i];
    if (t.empty()) return false;
    out[i].dtype = t.dtype();
    out[i].dims = t.shape();
    if (t.numElements() <= kMaxConstElements) out[i].data = copyBytes(t.raw(), static_cast<size_t>(t.bytes()));
  }
  return true;
}

}  // namespace

int64_t safeNumel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxSaneElements) return -1;
  }
  return n;
}

int64_t ConstTensor::numel() const {
  return safeNumel(dims);
}

bool ConstTensor::foldable() const {
  const int64_t n = numel();
  return data && n >= 0 && n <= kMaxConstElements && tensorElementSize(dtype) > 0 &&
         data->size() == static_cast<size_t>(n * tensorElementSize(dtype));
}

std::vector<int64_t> ConstTensor::ints() const {
  if (!isIntType(dtype) || !foldable()) return {};
  auto t = Tensor::alias(dtype, dims, data);
  return t ? t->toInts() : std::vector<int64_t>{};
}

bool isIntType(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::Int8:
    case DType::UInt8:
    case DType::Int16:
    case DType::UInt16:
    case DType::Int32:
    case DType::UInt32:
    case DType::Int64:
    case DType::UInt64:
      return true;
    default:
      return false;
  }
}

DType dtypeFromOnnx(int64_t elemType) {
  if (elemType < 0 || elemType > static_cast<int64_t>(DType::BFloat16)) return DType::Undefined;
  return static_cast<DType>(elemType);
}

bool tensorToProto(const ConstTensor& c, onnx::TensorProto* out) {
  if (!c.foldable() || c.dtype == DType::Float16 || c.dtype == DType::BFloat16) return false;
  const std::byte* p = c.data->data();
  if (!p && c.data->size() > 0) return false;
  out->set_data_type(static_cast<int32_t>(c.dtype));
  for (int64_t d : c.dims) out->add_dims(d);
  out->set_raw_data(std::string(reinterpret_cast<const char*>(p), c.data->size()));
  return true;
}

bool isNondeterministicOp(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Multinomial" || op == "Bernoulli";
}

bool evaluateNode(const onnx::NodeProto& node, const Node& ir, int64_t opset, const std::vector<const ConstTensor*>& in,
                  const std::vector<ExpectedOutput>& expected, std::vector<ConstTensor>& out) {
  out.assign(static_cast<size_t>(node.output_size()), ConstTensor{});
  if (out.empty()) return false;
  const std::string& op = node.op_type();
  bool ok = false;
  if (op == "Constant")
    ok = evalConstant(node, out[0]);
  else if (op == "ConstantOfShape")
    ok = evalConstantOfShape(node, in, out[0]);
  else if (!isFoldedOp(op))
    return false;
  else if (op == "Shape" || op == "Size")
    ok = evalShape(ir, in, out[0]);
  else if (isRelabelOp(op))
    ok = evalRelabel(ir, in, out);
  else
    ok = evalKernel(ir, opset, in, expected, out);
  if (!ok) return false;
  for (const auto& o : out)
    if (o.numel() < 0) return false;
  return true;
}

}  // namespace partex::onnximp
