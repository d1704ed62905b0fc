#include "kernels/kernels.h"

#include <algorithm>

namespace partex::cpu {

bool broadcastShape(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>& out) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  out.assign(r, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[r - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return false;
    }
  }
  // A zero dim wins over 1.
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == 0) out[r - s.size() + i] = 0;
  return true;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& outShape) {
  std::vector<int64_t> st(outShape.size(), 0);
  const auto cs = contiguousStrides(shape);
  const size_t off = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) st[off + i] = shape[i] == 1 ? 0 : cs[i];
  return st;
}

std::vector<int64_t> attrIntsOr(const Node& n, const std::string& key, std::vector<int64_t> def) {
  if (!n.hasAttr(key)) return def;
  return n.attrInts(key);
}

std::vector<double> attrFloats(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return {};
  if (auto* v = std::get_if<std::vector<double>>(&it->second.value)) return *v;
  if (auto* v = std::get_if<double>(&it->second.value)) return {*v};
  return {};
}

std::string expectInput(const std::vector<const Tensor*>& in, size_t i, const char* what) {
  if (i >= in.size() || !in[i] || in[i]->empty())
    return std::string("missing input ") + std::to_string(i) + " (" + what + ")";
  return "";
}

const std::vector<DType>& allPlainDTypes() {
  static const std::vector<DType> v{DType::Float32, DType::Float64, DType::Int32, DType::Int64,
                                    DType::Int8,    DType::UInt8,   DType::Bool,  DType::Int16,
                                    DType::UInt16,  DType::UInt32,  DType::UInt64};
  return v;
}
const std::vector<DType>& f32Only() {
  static const std::vector<DType> v{DType::Float32};
  return v;
}
const std::vector<DType>& floatDTypes() {
  static const std::vector<DType> v{DType::Float32, DType::Float64};
  return v;
}
const std::vector<DType>& numericDTypes() {
  static const std::vector<DType> v{DType::Float32, DType::Float64, DType::Int32,  DType::Int64,  DType::Int8,
                                    DType::UInt8,   DType::Int16,   DType::UInt16, DType::UInt32, DType::UInt64};
  return v;
}

}  // namespace partex::cpu
