#pragma once
/// \file A small ONNX model described by plain structs and serialized (ModelProto bytes): for tests,
/// which cannot include ONNX headers, to build one model per case of an operator's rules.

#include <cstdint>
#include <string>
#include <vector>

namespace partex::testmodels {

struct SpecAttr {
  enum class Kind { Int, Ints, Float, String, ElemType } kind = Kind::Int;
  std::string name;
  int64_t i = 0;
  std::vector<int64_t> ints;
  float f = 0;
  std::string s;
  static SpecAttr integer(std::string n, int64_t v) { return {Kind::Int, std::move(n), v, {}, 0, {}}; }
  static SpecAttr integers(std::string n, std::vector<int64_t> v) {
    return {Kind::Ints, std::move(n), 0, std::move(v), 0, {}};
  }
  static SpecAttr real(std::string n, float v) { return {Kind::Float, std::move(n), 0, {}, v, {}}; }
  static SpecAttr text(std::string n, std::string v) { return {Kind::String, std::move(n), 0, {}, 0, std::move(v)}; }
};

struct SpecNode {
  std::string op;
  std::vector<std::string> inputs;  ///< "" for an omitted optional input.
  std::vector<std::string> outputs;
  std::vector<SpecAttr> attrs;
  std::string name;
  /// Unknown fields (number, bytes) written into the serialized node (a field of a newer onnx.proto).
  std::vector<std::pair<int, std::string>> extraFields;
};

/// A tensor: a graph input or output (no data), or an initializer (int64s or floats by `elemType`).
struct SpecTensor {
  std::string name;
  int32_t elemType = 1;  ///< ONNX TensorProto::DataType: 1 float, 7 int64, 17 float8e4m3fn, ...
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  bool asConstantNode = false;  ///< An initializer written as a Constant node instead.
};

struct ModelSpec {
  int64_t irVersion = 8;
  int64_t opset = 17;
  std::vector<SpecTensor> inputs, outputs, initializers;
  std::vector<SpecNode> nodes;
  /// Tensor types written as value_info (intermediate values whose shape the model states).
  std::vector<SpecTensor> valueInfo;
};

/// The serialized model.
std::string buildModel(const ModelSpec& spec);

}  // namespace partex::testmodels
