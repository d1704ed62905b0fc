#include "onnx/consteval.h"

#include "onnx/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace partex::onnximp {

namespace {

constexpr int64_t kMaxSaneElements = int64_t{1} << 62;

// ---------------------------------------------------------------------------------------------
// Attributes

const onnx::AttributeProto* findAttr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attrInt(const onnx::NodeProto& n, const char* name, int64_t def) {
  const auto* a = findAttr(n, name);
  return a && a->has_i() ? a->i() : def;
}

float attrFloat(const onnx::NodeProto& n, const char* name, float def) {
  const auto* a = findAttr(n, name);
  return a && a->has_f() ? a->f() : def;
}

bool attrInts(const onnx::NodeProto& n, const char* name, std::vector<int64_t>& out) {
  const auto* a = findAttr(n, name);
  if (!a) return false;
  out.assign(a->ints().begin(), a->ints().end());
  return true;
}

// ---------------------------------------------------------------------------------------------
// Numbers

float halfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Whether v is representable in the integer (or bool) type t.
bool fitsInt(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v == 0 || v == 1;
    case DType::Int8:
      return v >= -128 && v <= 127;
    case DType::UInt8:
      return v >= 0 && v <= 255;
    case DType::Int16:
      return v >= -32768 && v <= 32767;
    case DType::UInt16:
      return v >= 0 && v <= 65535;
    case DType::Int32:
      return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    case DType::UInt32:
      return v >= 0 && v <= int64_t{0xffffffff};
    default:
      return true;
  }
}

// Rounds a double to the precision of a float type.
double roundFloat(DType t, double v) {
  if (t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16)
    return static_cast<double>(static_cast<float>(v));
  return v;
}

bool intArith(char op, int64_t x, int64_t y, int64_t& r) {
  switch (op) {
    case '+':
      return !__builtin_add_overflow(x, y, &r);
    case '-':
      return !__builtin_sub_overflow(x, y, &r);
    case '*':
      return !__builtin_mul_overflow(x, y, &r);
    case '/':
      if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return false;
      r = x / y;
      return true;
    case '%':  // Python-style: sign of the divisor
      if (y == 0) return false;
      if (y == -1) {
        r = 0;
        return true;
      }
      r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return true;
    case 'f':  // C fmod
      if (y == 0) return false;
      if (y == -1) {
        r = 0;
        return true;
      }
      r = x % y;
      return true;
    case '^': {
      if (y < 0) return false;
      int64_t acc = 1;
      if (x == -1) {
        r = (y % 2) ? -1 : 1;
        return true;
      }
      for (int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(acc, x, &acc)) return false;
        if (acc == 0 || x == 1) break;
      }
      r = acc;
      return true;
    }
    case 'm':
      r = std::min(x, y);
      return true;
    case 'M':
      r = std::max(x, y);
      return true;
    default:
      return false;
  }
}

bool floatArith(char op, double x, double y, double& r) {
  switch (op) {
    case '+':
      r = x + y;
      return true;
    case '-':
      r = x - y;
      return true;
    case '*':
      r = x * y;
      return true;
    case '/':
      r = x / y;
      return true;
    case '%': {
      r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return true;
    }
    case 'f':
      r = std::fmod(x, y);
      return true;
    case '^':
      r = std::pow(x, y);
      return true;
    case 'm':
      r = std::min(x, y);
      return true;
    case 'M':
      r = std::max(x, y);
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Broadcasting and indexing

bool broadcastDims(const std::vector<const std::vector<int64_t>*>& shapes, std::vector<int64_t>& out) {
  size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  out.assign(rank, 1);
  for (const auto* s : shapes) {
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[s->size() - 1 - i];
      int64_t& o = out[rank - 1 - i];
      if (d < 0) return false;
      if (o == 1)
        o = d;
      else if (d != 1 && d != o)
        return false;
    }
  }
  return true;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& outDims) {
  const size_t r = outDims.size();
  std::vector<int64_t> st(r, 0);
  int64_t s = 1;
  for (size_t i = 0; i < in.size() && i < r; ++i) {
    const size_t ia = in.size() - 1 - i, oa = r - 1 - i;
    st[oa] = in[ia] == 1 ? 0 : s;
    s *= in[ia];
  }
  return st;
}

int64_t sourceOffset(int64_t k, const std::vector<int64_t>& outDims, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t a = outDims.size(); a-- > 0;) {
    const int64_t c = k % outDims[a];
    k /= outDims[a];
    off += c * strides[a];
  }
  return off;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> st(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) st[i - 1] = st[i] * dims[i];
  return st;
}

bool fits(const std::vector<int64_t>& dims) {
  const int64_t n = safeNumel(dims);
  return n >= 0 && n <= kMaxConstElements;
}

bool normAxis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

// Copies element `src` of `in` to element `dst` of `out` (same kind).
void copyElem(const ConstTensor& in, int64_t src, ConstTensor& out, int64_t dst) {
  if (isFloatType(in.dtype))
    out.floats[static_cast<size_t>(dst)] = in.floats[static_cast<size_t>(src)];
  else
    out.ints[static_cast<size_t>(dst)] = in.ints[static_cast<size_t>(src)];
}

void allocate(ConstTensor& t) {
  const auto n = static_cast<size_t>(t.numel());
  t.hasData = true;
  if (isFloatType(t.dtype))
    t.floats.assign(n, 0.0);
  else
    t.ints.assign(n, 0);
}

bool usable(const ConstTensor* t) {
  return t && t->hasData && (isFloatType(t->dtype) || isIntType(t->dtype)) &&
         static_cast<int64_t>(isFloatType(t->dtype) ? t->floats.size() : t->ints.size()) == t->numel();
}

bool intValues(const ConstTensor* t, std::vector<int64_t>& v) {
  if (!usable(t) || !isIntType(t->dtype)) return false;
  v = t->ints;
  return true;
}

bool scalarDouble(const ConstTensor* t, double& v) {
  if (!usable(t) || t->numel() != 1) return false;
  v = isFloatType(t->dtype) ? t->floats[0] : static_cast<double>(t->ints[0]);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Operators

struct Args {
  const onnx::NodeProto& node;
  int64_t opset;
  const std::vector<const ConstTensor*>& in;
  std::vector<ConstTensor>& out;
  const ConstTensor* input(size_t i) const { return i < in.size() ? in[i] : nullptr; }
};

// Elementwise over N broadcast inputs. kind: 'a' arithmetic (same dtype out), 'c' compare (bool out).
bool elementwise(Args& a, char op, char kind) {
  std::vector<const std::vector<int64_t>*> shapes;
  std::vector<const ConstTensor*> ins;
  for (size_t i = 0; i < a.in.size(); ++i) {
    if (!a.in[i]) return false;
    shapes.push_back(&a.in[i]->dims);
    ins.push_back(a.in[i]);
  }
  if (ins.empty()) return false;
  const DType t = ins[0]->dtype;
  for (const auto* x : ins)
    if (x->dtype != t) return false;
  ConstTensor& o = a.out[0];
  o.dtype = kind == 'c' ? DType::Bool : t;
  if (!broadcastDims(shapes, o.dims)) return false;
  bool all = true;
  for (const auto* x : ins) all = all && usable(x);
  if (!all || !fits(o.dims)) return true;
  if (ins.size() == 1 && kind == 'a') {  // Sum/Max/Min/Mean of one input
    o.hasData = true;
    o.ints = ins[0]->ints;
    o.floats = ins[0]->floats;
    return true;
  }
  allocate(o);
  const int64_t n = o.numel();
  std::vector<std::vector<int64_t>> strides;
  for (const auto* x : ins) strides.push_back(broadcastStrides(x->dims, o.dims));
  const bool fl = isFloatType(t);
  for (int64_t k = 0; k < n; ++k) {
    if (fl) {
      double acc = ins[0]->floats[static_cast<size_t>(sourceOffset(k, o.dims, strides[0]))];
      for (size_t j = 1; j < ins.size(); ++j) {
        const double y = ins[j]->floats[static_cast<size_t>(sourceOffset(k, o.dims, strides[j]))];
        if (kind == 'c') {
          bool r = false;
          switch (op) {
            case '=':
              r = acc == y;
              break;
            case '<':
              r = acc < y;
              break;
            case '>':
              r = acc > y;
              break;
            case 'l':
              r = acc <= y;
              break;
            case 'g':
              r = acc >= y;
              break;
            default:
              return false;
          }
          o.ints[static_cast<size_t>(k)] = r;
        } else {
          if (!floatArith(op, acc, y, acc)) return false;
        }
      }
      if (kind == 'a') o.floats[static_cast<size_t>(k)] = roundFloat(t, acc);
    } else {
      int64_t acc = ins[0]->ints[static_cast<size_t>(sourceOffset(k, o.dims, strides[0]))];
      for (size_t j = 1; j < ins.size(); ++j) {
        const int64_t y = ins[j]->ints[static_cast<size_t>(sourceOffset(k, o.dims, strides[j]))];
        if (kind == 'c') {
          bool r = false;
          switch (op) {
            case '=':
              r = acc == y;
              break;
            case '<':
              r = acc < y;
              break;
            case '>':
              r = acc > y;
              break;
            case 'l':
              r = acc <= y;
              break;
            case 'g':
              r = acc >= y;
              break;
            case '&':
              r = acc && y;
              break;
            case '|':
              r = acc || y;
              break;
            case 'x':
              r = (acc != 0) != (y != 0);
              break;
            default:
              return false;
          }
          o.ints[static_cast<size_t>(k)] = r;
        } else {
          if (!intArith(op, acc, y, acc)) return false;
        }
      }
      if (kind == 'a') {
        if (!fitsInt(t, acc)) return false;
        o.ints[static_cast<size_t>(k)] = acc;
      }
    }
  }
  return true;
}

bool evalMean(Args& a) {
  if (!elementwise(a, '+', 'a')) return false;
  ConstTensor& o = a.out[0];
  if (!o.hasData || a.in.size() <= 1) return true;
  if (!isFloatType(o.dtype)) return false;
  for (double& v : o.floats) v = roundFloat(o.dtype, v / static_cast<double>(a.in.size()));
  return true;
}

bool unary(Args& a, const std::string& op) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  ConstTensor& o = a.out[0];
  o.dtype = op == "Not" ? DType::Bool : x->dtype;
  o.dims = x->dims;
  if (!usable(x) || !fits(o.dims)) return true;
  o.hasData = true;
  if (isFloatType(x->dtype)) {
    o.floats = x->floats;
    for (double& v : o.floats) {
      if (op == "Neg")
        v = -v;
      else if (op == "Abs")
        v = std::fabs(v);
      else if (op == "Floor")
        v = std::floor(v);
      else if (op == "Ceil")
        v = std::ceil(v);
      else if (op == "Round")
        v = std::nearbyint(v);
      else if (op == "Sqrt")
        v = std::sqrt(v);
      else if (op == "Reciprocal")
        v = 1.0 / v;
      else if (op == "Relu")
        v = std::max(v, 0.0);
      else if (op == "Sign")
        v = v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0);
      else if (op == "Exp")
        v = std::exp(v);
      else if (op == "Log")
        v = std::log(v);
      else if (op == "Sigmoid")
        v = 1.0 / (1.0 + std::exp(-v));
      else if (op == "Tanh")
        v = std::tanh(v);
      else
        return false;
      v = roundFloat(o.dtype, v);
    }
  } else {
    o.ints = x->ints;
    for (int64_t& v : o.ints) {
      if (op == "Neg") {
        if (v == std::numeric_limits<int64_t>::min()) return false;
        v = -v;
      } else if (op == "Abs") {
        if (v == std::numeric_limits<int64_t>::min()) return false;
        v = v < 0 ? -v : v;
      } else if (op == "Relu") {
        v = std::max<int64_t>(v, 0);
      } else if (op == "Sign") {
        v = v > 0 ? 1 : (v < 0 ? -1 : 0);
      } else if (op == "Not") {
        v = v == 0;
      } else if (op == "Floor" || op == "Ceil" || op == "Round") {
      } else {
        return false;
      }
      if (!fitsInt(o.dtype, v)) return false;
    }
  }
  return true;
}

bool evalConstantLike(Args& a, const onnx::TensorProto& t) {
  ConstTensor c = tensorFromProto(t, true);
  if (safeNumel(c.dims) < 0) return false;
  if (auto d = decodeTensorData(t); d) c.data = std::move(d).value();
  a.out[0] = std::move(c);
  return true;
}

/// The elements of a value_floats / value_ints attribute beyond the folding limit, as TensorData.
template <class T, class Field>
std::shared_ptr<const TensorData> fieldData(const Field& field) {
  auto d = TensorData::allocate(static_cast<size_t>(field.size()) * sizeof(T));
  if (!d) return nullptr;
  T* p = reinterpret_cast<T*>(d->mutableData());
  for (auto v : field) *p++ = static_cast<T>(v);
  return d;
}

bool evalConstant(Args& a) {
  const auto& n = a.node;
  if (const auto* at = findAttr(n, "value"); at && at->has_t()) return evalConstantLike(a, at->t());
  ConstTensor& o = a.out[0];
  if (const auto* at = findAttr(n, "sparse_value"); at && at->has_sparse_tensor()) {
    o.dtype = dtypeFromOnnx(at->sparse_tensor().values().data_type());
    o.dims.assign(at->sparse_tensor().dims().begin(), at->sparse_tensor().dims().end());
    return safeNumel(o.dims) >= 0;
  }
  if (const auto* at = findAttr(n, "value_float"); at && at->has_f()) {
    o.dtype = DType::Float32;
    o.hasData = true;
    o.floats = {static_cast<double>(at->f())};
    return true;
  }
  if (const auto* at = findAttr(n, "value_floats")) {
    o.dtype = DType::Float32;
    o.dims = {at->floats_size()};
    if (at->floats_size() > kMaxConstElements) {
      o.data = fieldData<float>(at->floats());
      return true;
    }
    o.hasData = true;
    for (float f : at->floats()) o.floats.push_back(f);
    return true;
  }
  if (const auto* at = findAttr(n, "value_int"); at && at->has_i()) {
    o.dtype = DType::Int64;
    o.hasData = true;
    o.ints = {at->i()};
    return true;
  }
  if (const auto* at = findAttr(n, "value_ints")) {
    o.dtype = DType::Int64;
    o.dims = {at->ints_size()};
    if (at->ints_size() > kMaxConstElements) {
      o.data = fieldData<int64_t>(at->ints());
      return true;
    }
    o.hasData = true;
    o.ints.assign(at->ints().begin(), at->ints().end());
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

bool evalConstantOfShape(Args& a) {
  std::vector<int64_t> shape;
  if (!intValues(a.input(0), shape)) return false;
  for (int64_t d : shape)
    if (d < 0) return false;
  ConstTensor& o = a.out[0];
  o.dims = shape;
  if (safeNumel(o.dims) < 0) return false;
  ConstTensor value;
  value.dtype = DType::Float32;
  value.hasData = true;
  value.floats = {0.0};
  std::string pattern(4, '\0');  // the element in Tensor encoding: float32 0 by default
  if (const auto* at = findAttr(a.node, "value"); at && at->has_t()) {
    value = tensorFromProto(at->t(), true);
    auto d = decodeTensorData(at->t());
    const int64_t es = dataElementSize(value.dtype);
    const std::byte* p = d && *d ? (*d)->data() : nullptr;
    if (p && es > 0 && (*d)->size() == static_cast<size_t>(es))
      pattern.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(es));
    else
      pattern.clear();
  }
  o.dtype = value.dtype;
  // The weight's data at any size: one element, expanded when a run first reads it.
  if (!pattern.empty() && value.numel() == 1)
    o.data = TensorData::splat(pattern.data(), pattern.size(), static_cast<size_t>(o.numel()));
  if (!usable(&value) || value.numel() != 1 || !fits(o.dims)) return true;
  o.hasData = true;
  const auto n = static_cast<size_t>(o.numel());
  if (isFloatType(o.dtype))
    o.floats.assign(n, value.floats[0]);
  else
    o.ints.assign(n, value.ints[0]);
  return true;
}

bool evalShape(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t start = 0, end = rank;
  if (a.opset >= 15) {
    start = attrInt(a.node, "start", 0);
    end = attrInt(a.node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
  }
  ConstTensor& o = a.out[0];
  o.dtype = DType::Int64;
  o.hasData = true;
  for (int64_t i = start; i < end; ++i) o.ints.push_back(x->dims[static_cast<size_t>(i)]);
  o.dims = {static_cast<int64_t>(o.ints.size())};
  return true;
}

bool evalSize(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const int64_t n = x->numel();
  if (n < 0) return false;
  ConstTensor& o = a.out[0];
  o.dtype = DType::Int64;
  o.hasData = true;
  o.ints = {n};
  return true;
}

bool evalIdentity(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  a.out[0] = *x;
  if (a.out.size() > 1) {  // Dropout mask: all true outside training
    a.out[1].dtype = DType::Bool;
    a.out[1].dims = x->dims;
    if (fits(x->dims)) {
      a.out[1].hasData = true;
      a.out[1].ints.assign(static_cast<size_t>(x->numel()), 1);
    }
  }
  return true;
}

bool evalCast(Args& a) {
  const ConstTensor* x = a.input(0);
  const auto* to = findAttr(a.node, "to");
  if (!x || !to || !to->has_i()) return false;
  ConstTensor& o = a.out[0];
  o.dtype = dtypeFromOnnx(to->i());
  if (o.dtype == DType::Undefined) return false;
  o.dims = x->dims;
  if (!usable(x) || !(isFloatType(o.dtype) || isIntType(o.dtype))) return true;
  o.hasData = true;
  const bool fromF = isFloatType(x->dtype);
  const size_t n = fromF ? x->floats.size() : x->ints.size();
  if (isFloatType(o.dtype)) {
    o.floats.resize(n);
    for (size_t i = 0; i < n; ++i)
      o.floats[i] = roundFloat(o.dtype, fromF ? x->floats[i] : static_cast<double>(x->ints[i]));
  } else {
    o.ints.resize(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      if (fromF) {
        const double d = x->floats[i];
        if (o.dtype == DType::Bool) {
          v = d != 0.0;
        } else {
          if (!(d > -9.2e18 && d < 9.2e18)) return false;
          v = static_cast<int64_t>(d);
        }
      } else {
        v = x->ints[i];
      }
      switch (o.dtype) {  // C-style wrap-around between integer widths
        case DType::Bool:
          v = v != 0;
          break;
        case DType::Int8:
          v = static_cast<int8_t>(static_cast<uint64_t>(v) & 0xffu);
          break;
        case DType::UInt8:
          v = static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffu);
          break;
        case DType::Int16:
          v = static_cast<int16_t>(static_cast<uint64_t>(v) & 0xffffu);
          break;
        case DType::UInt16:
          v = static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffu);
          break;
        case DType::Int32:
          v = static_cast<int32_t>(static_cast<uint64_t>(v) & 0xffffffffu);
          break;
        case DType::UInt32:
          v = static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffffffu);
          break;
        default:
          break;
      }
      o.ints[i] = v;
    }
  }
  return true;
}

bool evalReshape(Args& a) {
  const ConstTensor* x = a.input(0);
  std::vector<int64_t> shape;
  if (!x) return false;
  if (a.opset < 5) {
    if (!attrInts(a.node, "shape", shape)) return false;
  } else if (!intValues(a.input(1), shape)) {
    return false;
  }
  const bool allowZero = attrInt(a.node, "allowzero", 0) != 0;
  const int64_t total = x->numel();
  if (total < 0) return false;
  int64_t known = 1, inferAt = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& d = shape[i];
    if (d == 0 && !allowZero) {
      if (i >= x->dims.size()) return false;
      d = x->dims[i];
    }
    if (d == -1) {
      if (inferAt >= 0) return false;
      inferAt = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0 || __builtin_mul_overflow(known, d, &known)) return false;
  }
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0) return false;
    shape[static_cast<size_t>(inferAt)] = total / known;
  } else if (known != total) {
    return false;
  }
  ConstTensor& o = a.out[0];
  o = *x;
  o.dims = shape;
  return true;
}

bool evalFlatten(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = attrInt(a.node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t& acc = i < axis ? outer : inner;
    if (__builtin_mul_overflow(acc, x->dims[static_cast<size_t>(i)], &acc)) return false;
  }
  a.out[0] = *x;
  a.out[0].dims = {outer, inner};
  return true;
}

bool axesFor(Args& a, size_t inputIndex, std::vector<int64_t>& axes, bool& present) {
  present = false;
  if (a.opset >= 13) {
    const ConstTensor* t = a.input(inputIndex);
    if (!t) return true;
    present = true;
    return intValues(t, axes);
  }
  present = attrInts(a.node, "axes", axes);
  return true;
}

bool evalUnsqueeze(Args& a) {
  const ConstTensor* x = a.input(0);
  std::vector<int64_t> axes;
  bool present;
  if (!x || !axesFor(a, 1, axes, present) || !present) return false;
  const auto outRank = static_cast<int64_t>(x->dims.size() + axes.size());
  std::vector<bool> isNew(static_cast<size_t>(outRank), false);
  for (int64_t ax : axes) {
    if (!normAxis(ax, outRank) || isNew[static_cast<size_t>(ax)]) return false;
    isNew[static_cast<size_t>(ax)] = true;
  }
  ConstTensor& o = a.out[0];
  o = *x;
  o.dims.clear();
  size_t j = 0;
  for (int64_t i = 0; i < outRank; ++i) o.dims.push_back(isNew[static_cast<size_t>(i)] ? 1 : x->dims[j++]);
  return true;
}

bool evalSqueeze(Args& a) {
  const ConstTensor* x = a.input(0);
  std::vector<int64_t> axes;
  bool present;
  if (!x || !axesFor(a, 1, axes, present)) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (!present || axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = x->dims[static_cast<size_t>(i)] == 1;
  } else {
    for (int64_t ax : axes) {
      if (!normAxis(ax, rank) || x->dims[static_cast<size_t>(ax)] != 1) return false;
      drop[static_cast<size_t>(ax)] = true;
    }
  }
  ConstTensor& o = a.out[0];
  o = *x;
  o.dims.clear();
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[static_cast<size_t>(i)]) o.dims.push_back(x->dims[static_cast<size_t>(i)]);
  return true;
}

bool evalConcat(Args& a) {
  std::vector<const ConstTensor*> ins;
  for (const auto* t : a.in)
    if (t) ins.push_back(t);
  if (ins.empty()) return false;
  const auto rank = static_cast<int64_t>(ins[0]->dims.size());
  int64_t axis = attrInt(a.node, "axis", 0);
  if (rank == 0 || !normAxis(axis, rank)) return false;
  ConstTensor& o = a.out[0];
  o.dtype = ins[0]->dtype;
  o.dims = ins[0]->dims;
  o.dims[static_cast<size_t>(axis)] = 0;
  bool all = true;
  for (const auto* t : ins) {
    if (t->dtype != o.dtype || static_cast<int64_t>(t->dims.size()) != rank) return false;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis && t->dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
    if (__builtin_add_overflow(o.dims[static_cast<size_t>(axis)], t->dims[static_cast<size_t>(axis)],
                               &o.dims[static_cast<size_t>(axis)]))
      return false;
    all = all && usable(t);
  }
  if (safeNumel(o.dims) < 0) return false;
  if (!all || !fits(o.dims)) return true;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= o.dims[static_cast<size_t>(i)];
  o.hasData = true;
  const bool fl = isFloatType(o.dtype);
  for (int64_t b = 0; b < outer; ++b) {
    for (const auto* t : ins) {
      const int64_t chunk = outer ? t->numel() / outer : 0;
      const auto from = static_cast<size_t>(b * chunk), to = static_cast<size_t>((b + 1) * chunk);
      if (fl)
        o.floats.insert(o.floats.end(), t->floats.begin() + static_cast<std::ptrdiff_t>(from),
                        t->floats.begin() + static_cast<std::ptrdiff_t>(to));
      else
        o.ints.insert(o.ints.end(), t->ints.begin() + static_cast<std::ptrdiff_t>(from),
                      t->ints.begin() + static_cast<std::ptrdiff_t>(to));
    }
  }
  return true;
}

bool evalGather(Args& a) {
  const ConstTensor* x = a.input(0);
  const ConstTensor* idx = a.input(1);
  if (!x || !idx || !isIntType(idx->dtype)) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = attrInt(a.node, "axis", 0);
  if (!normAxis(axis, rank)) return false;
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  for (int64_t i = 0; i < axis; ++i) o.dims.push_back(x->dims[static_cast<size_t>(i)]);
  for (int64_t d : idx->dims) o.dims.push_back(d);
  for (int64_t i = axis + 1; i < rank; ++i) o.dims.push_back(x->dims[static_cast<size_t>(i)]);
  if (safeNumel(o.dims) < 0) return false;
  if (!usable(x) || !usable(idx) || !fits(o.dims)) return true;
  const int64_t axisDim = x->dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dims[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x->dims[static_cast<size_t>(i)];
  allocate(o);
  int64_t k = 0;
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t ix : idx->ints) {
      if (ix < 0) ix += axisDim;
      if (ix < 0 || ix >= axisDim) return false;
      for (int64_t j = 0; j < inner; ++j) copyElem(*x, (b * axisDim + ix) * inner + j, o, k++);
    }
  }
  return true;
}

bool evalSlice(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  std::vector<int64_t> starts, ends, axes, steps;
  if (a.opset < 10) {
    if (!attrInts(a.node, "starts", starts) || !attrInts(a.node, "ends", ends)) return false;
    attrInts(a.node, "axes", axes);
  } else {
    if (!intValues(a.input(1), starts) || !intValues(a.input(2), ends)) return false;
    if (a.input(3) && !intValues(a.input(3), axes)) return false;
    if (a.input(4) && !intValues(a.input(4), steps)) return false;
  }
  const auto rank = static_cast<int64_t>(x->dims.size());
  if (starts.size() != ends.size()) return false;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return false;
  std::vector<int64_t> st(static_cast<size_t>(rank), 0), sp(static_cast<size_t>(rank), 1), dims = x->dims;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i];
    if (!normAxis(ax, rank) || seen[static_cast<size_t>(ax)]) return false;
    seen[static_cast<size_t>(ax)] = true;
    const int64_t d = x->dims[static_cast<size_t>(ax)], step = steps[i];
    if (step == 0 || step == std::numeric_limits<int64_t>::min()) return false;
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;  // d >= 0: cannot overflow
    if (e < 0) e += d;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    st[static_cast<size_t>(ax)] = s;
    sp[static_cast<size_t>(ax)] = step;
    dims[static_cast<size_t>(ax)] = count;
  }
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  o.dims = dims;
  if (!usable(x) || !fits(dims)) return true;
  allocate(o);
  const auto inStrides = rowMajorStrides(x->dims);
  const int64_t n = o.numel();
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, off = 0;
    for (int64_t ax = rank; ax-- > 0;) {
      const auto u = static_cast<size_t>(ax);
      const int64_t c = rem % dims[u];
      rem /= dims[u];
      off += (st[u] + c * sp[u]) * inStrides[u];
    }
    copyElem(*x, off, o, k);
  }
  return true;
}

bool evalTranspose(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const size_t rank = x->dims.size();
  std::vector<int64_t> perm;
  if (!attrInts(a.node, "perm", perm) || perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = true;
    o.dims.push_back(x->dims[static_cast<size_t>(p)]);
  }
  if (!usable(x) || !fits(o.dims)) return true;
  allocate(o);
  const auto inStrides = rowMajorStrides(x->dims);
  std::vector<int64_t> st(rank);
  for (size_t i = 0; i < rank; ++i) st[i] = inStrides[static_cast<size_t>(perm[i])];
  for (int64_t k = 0; k < o.numel(); ++k) copyElem(*x, sourceOffset(k, o.dims, st), o, k);
  return true;
}

bool evalExpand(Args& a) {
  const ConstTensor* x = a.input(0);
  std::vector<int64_t> shape;
  if (!x || !intValues(a.input(1), shape)) return false;
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  if (!broadcastDims({&x->dims, &shape}, o.dims) || safeNumel(o.dims) < 0) return false;
  if (!usable(x) || !fits(o.dims)) return true;
  allocate(o);
  const auto st = broadcastStrides(x->dims, o.dims);
  for (int64_t k = 0; k < o.numel(); ++k) copyElem(*x, sourceOffset(k, o.dims, st), o, k);
  return true;
}

bool evalTile(Args& a) {
  const ConstTensor* x = a.input(0);
  std::vector<int64_t> reps;
  if (!x || !intValues(a.input(1), reps) || reps.size() != x->dims.size()) return false;
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  for (size_t i = 0; i < reps.size(); ++i) {
    int64_t d;
    if (reps[i] < 0 || __builtin_mul_overflow(x->dims[i], reps[i], &d)) return false;
    o.dims.push_back(d);
  }
  if (safeNumel(o.dims) < 0) return false;
  if (!usable(x) || !fits(o.dims)) return true;
  allocate(o);
  const auto inStrides = rowMajorStrides(x->dims);
  for (int64_t k = 0; k < o.numel(); ++k) {
    int64_t rem = k, off = 0;
    for (size_t ax = o.dims.size(); ax-- > 0;) {
      const int64_t c = rem % o.dims[ax];
      rem /= o.dims[ax];
      off += (c % x->dims[ax]) * inStrides[ax];
    }
    copyElem(*x, off, o, k);
  }
  return true;
}

bool evalRange(Args& a) {
  const ConstTensor* s = a.input(0);
  const ConstTensor* l = a.input(1);
  const ConstTensor* d = a.input(2);
  if (!s || !l || !d || s->dtype != l->dtype || s->dtype != d->dtype) return false;
  ConstTensor& o = a.out[0];
  o.dtype = s->dtype;
  if (isFloatType(s->dtype)) {
    double start, limit, delta;
    if (!scalarDouble(s, start) || !scalarDouble(l, limit) || !scalarDouble(d, delta) || delta == 0) return false;
    const double n = std::ceil((limit - start) / delta);
    if (!(n < 1e15)) return false;
    const auto count = static_cast<int64_t>(std::max(n, 0.0));
    o.dims = {count};
    if (!fits(o.dims)) return true;
    o.hasData = true;
    for (int64_t i = 0; i < count; ++i) o.floats.push_back(roundFloat(o.dtype, start + static_cast<double>(i) * delta));
    return true;
  }
  if (!usable(s) || !usable(l) || !usable(d) || s->numel() != 1 || l->numel() != 1 || d->numel() != 1) return false;
  const int64_t start = s->ints[0], limit = l->ints[0], delta = d->ints[0];
  int64_t diff;
  if (delta == 0 || __builtin_sub_overflow(limit, start, &diff)) return false;
  int64_t count = 0;
  if ((diff > 0 && delta > 0) || (diff < 0 && delta < 0)) {
    const int64_t q = diff / delta, r = diff % delta;
    count = q + (r != 0);
  }
  o.dims = {count};
  if (!fits(o.dims)) return true;
  o.hasData = true;
  for (int64_t i = 0; i < count; ++i) o.ints.push_back(start + i * delta);
  return true;
}

bool evalWhere(Args& a) {
  const ConstTensor* c = a.input(0);
  const ConstTensor* x = a.input(1);
  const ConstTensor* y = a.input(2);
  if (!c || !x || !y || x->dtype != y->dtype || !isIntType(c->dtype)) return false;
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  if (!broadcastDims({&c->dims, &x->dims, &y->dims}, o.dims)) return false;
  if (!usable(c) || !usable(x) || !usable(y) || !fits(o.dims)) return true;
  allocate(o);
  const auto sc = broadcastStrides(c->dims, o.dims), sx = broadcastStrides(x->dims, o.dims),
             sy = broadcastStrides(y->dims, o.dims);
  for (int64_t k = 0; k < o.numel(); ++k) {
    const bool take = c->ints[static_cast<size_t>(sourceOffset(k, o.dims, sc))] != 0;
    if (take)
      copyElem(*x, sourceOffset(k, o.dims, sx), o, k);
    else
      copyElem(*y, sourceOffset(k, o.dims, sy), o, k);
  }
  return true;
}

bool evalReduce(Args& a, const std::string& op) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<int64_t> axes;
  bool present = false;
  if (op == "ReduceSum" && a.opset >= 13) {
    if (a.input(1)) {
      present = true;
      if (!intValues(a.input(1), axes)) return false;
    }
  } else {
    present = attrInts(a.node, "axes", axes);
  }
  const bool keep = attrInt(a.node, "keepdims", 1) != 0;
  const bool noop = attrInt(a.node, "noop_with_empty_axes", 0) != 0;
  std::vector<bool> red(static_cast<size_t>(rank), false);
  if (!present || axes.empty()) {
    if (noop) return evalIdentity(a);
    red.assign(static_cast<size_t>(rank), true);
  } else {
    for (int64_t ax : axes) {
      if (!normAxis(ax, rank)) return false;
      red[static_cast<size_t>(ax)] = true;
    }
  }
  ConstTensor& o = a.out[0];
  o.dtype = x->dtype;
  std::vector<int64_t> keptDims;  // output dims with reduced axes as 1
  for (int64_t i = 0; i < rank; ++i) {
    const bool r = red[static_cast<size_t>(i)];
    keptDims.push_back(r ? 1 : x->dims[static_cast<size_t>(i)]);
    if (!r || keep) o.dims.push_back(r ? 1 : x->dims[static_cast<size_t>(i)]);
  }
  if (!usable(x) || !fits(keptDims)) return true;
  const bool fl = isFloatType(x->dtype);
  const int64_t n = x->numel(), m = safeNumel(keptDims);
  std::vector<double> fa(static_cast<size_t>(m));
  std::vector<int64_t> ia(static_cast<size_t>(m));
  std::vector<bool> init(static_cast<size_t>(m), false);
  const auto outStrides = rowMajorStrides(keptDims);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, off = 0;
    for (int64_t ax = rank; ax-- > 0;) {
      const auto u = static_cast<size_t>(ax);
      const int64_t c = rem % x->dims[u];
      rem /= x->dims[u];
      if (!red[u]) off += c * outStrides[u];
    }
    const auto uo = static_cast<size_t>(off), uk = static_cast<size_t>(k);
    if (!init[uo]) {
      init[uo] = true;
      fa[uo] = fl ? x->floats[uk] : 0;
      ia[uo] = fl ? 0 : x->ints[uk];
      continue;
    }
    const char c = op == "ReduceSum" || op == "ReduceMean" ? '+'
                   : op == "ReduceProd"                    ? '*'
                   : op == "ReduceMin"                     ? 'm'
                                                           : 'M';
    if (fl) {
      floatArith(c, fa[uo], x->floats[uk], fa[uo]);
    } else if (!intArith(c, ia[uo], x->ints[uk], ia[uo])) {
      return false;
    }
  }
  if (m > 0 && !init[0]) {  // empty reduction: identity elements
    if (op == "ReduceMin" || op == "ReduceMax") return true;
    const int64_t id = op == "ReduceProd" ? 1 : 0;
    std::fill(fa.begin(), fa.end(), static_cast<double>(id));
    std::fill(ia.begin(), ia.end(), id);
  }
  if (op == "ReduceMean") {
    if (!fl) return true;
    const double count = m > 0 ? static_cast<double>(n) / static_cast<double>(m) : 1.0;
    for (double& v : fa) v /= count;
  }
  o.hasData = true;
  if (fl) {
    for (double& v : fa) v = roundFloat(o.dtype, v);
    o.floats = std::move(fa);
  } else {
    for (int64_t v : ia)
      if (!fitsInt(o.dtype, v)) return false;
    o.ints = std::move(ia);
  }
  return true;
}

bool evalSplit(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = attrInt(a.node, "axis", 0);
  if (!normAxis(axis, rank)) return false;
  const int64_t d = x->dims[static_cast<size_t>(axis)];
  std::vector<int64_t> split;
  if (a.opset >= 13) {
    if (a.input(1) && !intValues(a.input(1), split)) return false;
  } else {
    attrInts(a.node, "split", split);
  }
  const auto outs = static_cast<int64_t>(a.out.size());
  if (split.empty()) {
    if (outs == 0 || d % outs != 0) return false;
    split.assign(static_cast<size_t>(outs), d / outs);
  }
  if (static_cast<int64_t>(split.size()) != outs) return false;
  int64_t sum = 0;
  for (int64_t s : split)
    if (s < 0 || __builtin_add_overflow(sum, s, &sum)) return false;
  if (sum != d) return false;
  int64_t offset = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    ConstTensor& o = a.out[i];
    o.dtype = x->dtype;
    o.dims = x->dims;
    o.dims[static_cast<size_t>(axis)] = split[i];
    if (usable(x) && fits(o.dims)) {
      allocate(o);
      const auto inStrides = rowMajorStrides(x->dims);
      for (int64_t k = 0; k < o.numel(); ++k) {
        int64_t rem = k, off = 0;
        for (int64_t ax = rank; ax-- > 0;) {
          const auto u = static_cast<size_t>(ax);
          int64_t c = rem % o.dims[u];
          rem /= o.dims[u];
          if (ax == axis) c += offset;
          off += c * inStrides[u];
        }
        copyElem(*x, off, o, k);
      }
    }
    offset += split[i];
  }
  return true;
}

bool evalClip(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!x) return false;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (a.opset < 11) {
    lo = attrFloat(a.node, "min", -std::numeric_limits<float>::max());
    hi = attrFloat(a.node, "max", std::numeric_limits<float>::max());
  } else {
    if (a.input(1) && !scalarDouble(a.input(1), lo)) return false;
    if (a.input(2) && !scalarDouble(a.input(2), hi)) return false;
  }
  ConstTensor& o = a.out[0];
  o = *x;
  if (!usable(x)) {
    o.hasData = false;
    o.ints.clear();
    o.floats.clear();
    return true;
  }
  if (isFloatType(o.dtype)) {
    for (double& v : o.floats) v = std::min(std::max(v, lo), hi);
  } else {
    for (int64_t& v : o.ints) {
      const auto dv = static_cast<double>(v);
      if (dv < lo && std::isfinite(lo) && std::fabs(lo) < 9e18) v = static_cast<int64_t>(lo);
      if (dv > hi && std::isfinite(hi) && std::fabs(hi) < 9e18) v = static_cast<int64_t>(hi);
    }
  }
  return true;
}

bool evalNonZero(Args& a) {
  const ConstTensor* x = a.input(0);
  if (!usable(x)) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<int64_t> hits;
  for (int64_t k = 0; k < x->numel(); ++k) {
    const bool nz =
        isFloatType(x->dtype) ? x->floats[static_cast<size_t>(k)] != 0 : x->ints[static_cast<size_t>(k)] != 0;
    if (nz) hits.push_back(k);
  }
  ConstTensor& o = a.out[0];
  o.dtype = DType::Int64;
  o.dims = {rank, static_cast<int64_t>(hits.size())};
  if (rank == 0 || !fits(o.dims)) return rank != 0;
  allocate(o);
  const auto strides = rowMajorStrides(x->dims);
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rem = hits[h];
    for (int64_t ax = 0; ax < rank; ++ax) {
      const auto u = static_cast<size_t>(ax);
      o.ints[u * hits.size() + h] = rem / strides[u];
      rem %= strides[u];
    }
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

bool isFloatType(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
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

ConstTensor tensorFromProto(const onnx::TensorProto& t, bool wantData) {
  ConstTensor c;
  c.dtype = dtypeFromOnnx(t.data_type());
  c.dims.assign(t.dims().begin(), t.dims().end());
  const int64_t n = c.numel();
  if (!wantData || n < 0 || n > kMaxConstElements) return c;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return c;
  const auto un = static_cast<size_t>(n);
  const std::string& raw = t.raw_data();
  const bool useRaw = t.has_raw_data();
  auto rawLE = [&](size_t width, size_t i) -> uint64_t {
    uint64_t v = 0;
    for (size_t b = 0; b < width; ++b)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(raw[i * width + b])) << (8 * b);
    return v;
  };
  switch (c.dtype) {
    case DType::Float32:
      if (useRaw && raw.size() == un * 4) {
        for (size_t i = 0; i < un; ++i) {
          const auto bits = static_cast<uint32_t>(rawLE(4, i));
          float f;
          std::memcpy(&f, &bits, 4);
          c.floats.push_back(f);
        }
      } else if (!useRaw && static_cast<size_t>(t.float_data_size()) == un) {
        for (float f : t.float_data()) c.floats.push_back(f);
      } else {
        return c;
      }
      break;
    case DType::Float64:
      if (useRaw && raw.size() == un * 8) {
        for (size_t i = 0; i < un; ++i) {
          const uint64_t bits = rawLE(8, i);
          double d;
          std::memcpy(&d, &bits, 8);
          c.floats.push_back(d);
        }
      } else if (!useRaw && static_cast<size_t>(t.double_data_size()) == un) {
        c.floats.assign(t.double_data().begin(), t.double_data().end());
      } else {
        return c;
      }
      break;
    case DType::Float16:
    case DType::BFloat16: {
      const bool half = c.dtype == DType::Float16;
      if (useRaw && raw.size() == un * 2) {
        for (size_t i = 0; i < un; ++i) {
          const auto bits = static_cast<uint16_t>(rawLE(2, i));
          c.floats.push_back(half ? halfToFloat(bits) : bf16ToFloat(bits));
        }
      } else if (!useRaw && static_cast<size_t>(t.int32_data_size()) == un) {
        for (int32_t v : t.int32_data()) {
          const auto bits = static_cast<uint16_t>(static_cast<uint32_t>(v) & 0xffffu);
          c.floats.push_back(half ? halfToFloat(bits) : bf16ToFloat(bits));
        }
      } else {
        return c;
      }
      break;
    }
    case DType::Int64:
      if (useRaw && raw.size() == un * 8) {
        for (size_t i = 0; i < un; ++i) c.ints.push_back(static_cast<int64_t>(rawLE(8, i)));
      } else if (!useRaw && static_cast<size_t>(t.int64_data_size()) == un) {
        c.ints.assign(t.int64_data().begin(), t.int64_data().end());
      } else {
        return c;
      }
      break;
    case DType::UInt32:
    case DType::UInt64: {
      const size_t w = c.dtype == DType::UInt32 ? 4 : 8;
      if (useRaw && raw.size() == un * w) {
        for (size_t i = 0; i < un; ++i) c.ints.push_back(static_cast<int64_t>(rawLE(w, i)));
      } else if (!useRaw && static_cast<size_t>(t.uint64_data_size()) == un) {
        for (uint64_t v : t.uint64_data()) c.ints.push_back(static_cast<int64_t>(w == 4 ? (v & 0xffffffffu) : v));
      } else {
        return c;
      }
      break;
    }
    case DType::Int32:
    case DType::Int16:
    case DType::Int8:
    case DType::UInt16:
    case DType::UInt8:
    case DType::Bool: {
      const size_t w = dtypeSize(c.dtype) > 0 ? static_cast<size_t>(dtypeSize(c.dtype)) : 4;
      const bool isSigned = c.dtype == DType::Int32 || c.dtype == DType::Int16 || c.dtype == DType::Int8;
      auto norm = [&](uint64_t bits) -> int64_t {
        const int shift = static_cast<int>(64 - 8 * w);
        if (isSigned) return static_cast<int64_t>(bits << shift) >> shift;
        return static_cast<int64_t>((bits << shift) >> shift);
      };
      if (useRaw && raw.size() == un * w) {
        for (size_t i = 0; i < un; ++i) c.ints.push_back(norm(rawLE(w, i)));
      } else if (!useRaw && static_cast<size_t>(t.int32_data_size()) == un) {
        for (int32_t v : t.int32_data()) c.ints.push_back(norm(static_cast<uint64_t>(static_cast<uint32_t>(v))));
      } else {
        return c;
      }
      if (c.dtype == DType::Bool)
        for (int64_t& v : c.ints) v = v != 0;
      break;
    }
    default:
      return c;
  }
  c.hasData = true;
  return c;
}

bool tensorToProto(const ConstTensor& c, onnx::TensorProto* out) {
  if (!c.hasData) return false;
  out->set_data_type(static_cast<int32_t>(c.dtype));
  for (int64_t d : c.dims) out->add_dims(d);
  switch (c.dtype) {
    case DType::Float32:
      for (double v : c.floats) out->add_float_data(static_cast<float>(v));
      return true;
    case DType::Float64:
      for (double v : c.floats) out->add_double_data(v);
      return true;
    case DType::Int64:
      for (int64_t v : c.ints) out->add_int64_data(v);
      return true;
    case DType::Int32:
    case DType::Int16:
    case DType::Int8:
    case DType::UInt16:
    case DType::UInt8:
    case DType::Bool:
      for (int64_t v : c.ints) out->add_int32_data(static_cast<int32_t>(v));
      return true;
    case DType::UInt32:
    case DType::UInt64:
      for (int64_t v : c.ints) out->add_uint64_data(static_cast<uint64_t>(v));
      return true;
    default:
      return false;
  }
}

bool isNondeterministicOp(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Multinomial" || op == "Bernoulli";
}

bool evaluateNode(const onnx::NodeProto& node, int64_t opset, const std::vector<const ConstTensor*>& in,
                  std::vector<ConstTensor>& out) {
  out.assign(static_cast<size_t>(node.output_size()), ConstTensor{});
  if (out.empty()) return false;
  Args a{node, opset, in, out};
  const std::string& op = node.op_type();
  bool ok = false;
  if (op == "Constant")
    ok = evalConstant(a);
  else if (op == "ConstantOfShape")
    ok = evalConstantOfShape(a);
  else if (op == "Shape")
    ok = evalShape(a);
  else if (op == "Size")
    ok = evalSize(a);
  else if (op == "Identity")
    ok = evalIdentity(a);
  else if (op == "Dropout") {
    // training_mode (opset 12+) turned on makes Dropout random.
    const ConstTensor* tm = a.input(2);
    ok = !(tm && (!usable(tm) || tm->ints.empty() || tm->ints[0] != 0)) && evalIdentity(a);
  } else if (op == "Cast")
    ok = evalCast(a);
  else if (op == "Reshape")
    ok = evalReshape(a);
  else if (op == "Flatten")
    ok = evalFlatten(a);
  else if (op == "Unsqueeze")
    ok = evalUnsqueeze(a);
  else if (op == "Squeeze")
    ok = evalSqueeze(a);
  else if (op == "Concat")
    ok = evalConcat(a);
  else if (op == "Gather")
    ok = evalGather(a);
  else if (op == "Slice")
    ok = evalSlice(a);
  else if (op == "Transpose")
    ok = evalTranspose(a);
  else if (op == "Expand")
    ok = evalExpand(a);
  else if (op == "Tile")
    ok = evalTile(a);
  else if (op == "Range")
    ok = evalRange(a);
  else if (op == "Where")
    ok = evalWhere(a);
  else if (op == "Split")
    ok = evalSplit(a);
  else if (op == "Clip")
    ok = evalClip(a);
  else if (op == "NonZero")
    ok = evalNonZero(a);
  else if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMin" || op == "ReduceMax" || op == "ReduceMean")
    ok = evalReduce(a, op);
  else if (op == "Add" && in.size() == 2)
    ok = elementwise(a, '+', 'a');
  else if (op == "Sub" && in.size() == 2)
    ok = elementwise(a, '-', 'a');
  else if (op == "Mul" && in.size() == 2)
    ok = elementwise(a, '*', 'a');
  else if (op == "Div" && in.size() == 2)
    ok = elementwise(a, '/', 'a');
  else if (op == "Mod" && in.size() == 2)
    ok = elementwise(a, attrInt(node, "fmod", 0) ? 'f' : '%', 'a');
  else if (op == "Pow" && in.size() == 2)
    ok = elementwise(a, '^', 'a');
  else if (op == "Sum")
    ok = elementwise(a, '+', 'a');
  else if (op == "Min")
    ok = elementwise(a, 'm', 'a');
  else if (op == "Max")
    ok = elementwise(a, 'M', 'a');
  else if (op == "Mean")
    ok = evalMean(a);
  else if (op == "Equal" && in.size() == 2)
    ok = elementwise(a, '=', 'c');
  else if (op == "Less" && in.size() == 2)
    ok = elementwise(a, '<', 'c');
  else if (op == "Greater" && in.size() == 2)
    ok = elementwise(a, '>', 'c');
  else if (op == "LessOrEqual" && in.size() == 2)
    ok = elementwise(a, 'l', 'c');
  else if (op == "GreaterOrEqual" && in.size() == 2)
    ok = elementwise(a, 'g', 'c');
  else if (op == "And" && in.size() == 2)
    ok = elementwise(a, '&', 'c');
  else if (op == "Or" && in.size() == 2)
    ok = elementwise(a, '|', 'c');
  else if (op == "Xor" && in.size() == 2)
    ok = elementwise(a, 'x', 'c');
  else if (op == "Not" || op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" || op == "Round" ||
           op == "Sqrt" || op == "Reciprocal" || op == "Relu" || op == "Sign" || op == "Exp" || op == "Log" ||
           op == "Sigmoid" || op == "Tanh")
    ok = unary(a, op);
  if (!ok) return false;
  // Element bytes: Constant and ConstantOfShape made their own; operators that only relabel their
  // input's elements share the input's; every other output has at most its small data (which the
  // importer encodes).
  const bool relabels =
      op == "Identity" || op == "Dropout" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
  for (size_t i = 0; i < out.size(); ++i) {
    ConstTensor& o = out[i];
    if (op == "Constant" || op == "ConstantOfShape") continue;
    o.data = nullptr;
    const ConstTensor* x = in.empty() ? nullptr : in[0];
    if (relabels && i == 0 && x && x->data && x->dtype == o.dtype && x->numel() == o.numel()) o.data = x->data;
  }
  for (auto& o : out) {
    if (o.numel() < 0) return false;
    // 16-bit floats are computed in float precision, not rounded: keep their dims only.
    if (o.dtype == DType::Float16 || o.dtype == DType::BFloat16) {
      o.hasData = false;
      o.floats.clear();
    }
    if (o.hasData) {
      const size_t expect = static_cast<size_t>(o.numel());
      const size_t have = isFloatType(o.dtype) ? o.floats.size() : o.ints.size();
      if (have != expect || !(isFloatType(o.dtype) || isIntType(o.dtype))) {
        o.hasData = false;
        o.ints.clear();
        o.floats.clear();
      }
    }
  }
  return true;
}

}  // namespace partex::onnximp
