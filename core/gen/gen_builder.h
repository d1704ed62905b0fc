#pragma once
/// \file Private helpers of the model generator (generator.cpp): a thin builder over onnx::ModelProto
/// that names nodes, declares weights (seeded random initializers or ConstantOfShape placeholders)
/// and small constants, and a portable seeded random generator. Only core/onnx includes this.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "gen/generator.h"

namespace partex::gen {

/// Internal failure while generating; generateModel() turns it into an Error.
struct GenError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// SplitMix64: portable and fast, so that a seed gives the same bytes on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform integer in [0, n).
  int64_t below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t s_;
};

using Dims = std::vector<int64_t>;

/// Attribute helpers.
void setAttr(onnx::NodeProto& n, const std::string& name, int64_t v);
void setAttr(onnx::NodeProto& n, const std::string& name, float v);
void setAttr(onnx::NodeProto& n, const std::string& name, const Dims& v);

/// Builds one ModelProto (IR version 8, default-domain opset `opset`).
class Builder {
 public:
  Builder(const GenSpec& spec, const std::string& graphName, int64_t opset);

  /// Declares a model input.
  std::string input(const std::string& name, int32_t elemType, const Dims& dims);
  /// Declares a model output (a tensor produced by some node).
  void output(const std::string& name, int32_t elemType, const Dims& dims);

  /// A float parameter of `dims`: seeded random data uniform in [lo, hi] with spec.weights, else a
  /// ConstantOfShape node (value 0.02) reading a shared int64 shape initializer.
  /// `elemType` is FLOAT or FLOAT16 (placeholders then hold a float16 0.02).
  std::string weight(const std::string& name, const Dims& dims, float lo, float hi,
                     int32_t elemType = onnx::TensorProto::FLOAT);
  /// A constant of real values (always stored, whatever spec.weights), FLOAT or FLOAT16.
  std::string constFloat(const std::string& name, int32_t elemType, const Dims& dims, const std::vector<float>& data);
  std::string constFloatScalar(const std::string& name, int32_t elemType, float v) {
    return constFloat(name, elemType, {}, {v});
  }
  /// Small constants, always stored as initializers (names are shared: the same name is created once).
  std::string constI64(const std::string& name, const Dims& dims, const std::vector<int64_t>& data);
  std::string constI64Vec(const std::string& name, const std::vector<int64_t>& data) {
    return constI64(name, {static_cast<int64_t>(data.size())}, data);
  }
  std::string constI64Scalar(const std::string& name, int64_t v) { return constI64(name, {}, {v}); }
  std::string constF32Scalar(const std::string& name, float v);
  std::string constBool(const std::string& name, const Dims& dims, const std::vector<uint8_t>& data);

  /// Adds a node named `name` whose single output tensor is also called `name`; returns it.
  std::string op(const std::string& opType, const std::string& name, const std::vector<std::string>& inputs);
  /// Same, and gives access to the node for attributes.
  onnx::NodeProto& node(const std::string& opType, const std::string& name, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  /// The last node added (for attributes after op()).
  onnx::NodeProto& last();

  /// A node of Partex's own domain ("partex", e.g. ExpertMatMul) with one output of declared type and
  /// shape: ONNX has no inference for it, so the output's type is kept as value_info in the file.
  std::string partexOp(const std::string& opType, const std::string& name, const std::vector<std::string>& inputs,
                       int32_t elemType, const Dims& dims);

  /// Runs the checker, optionally strict shape inference, and serializes deterministically.
  std::string finish(bool inferShapes);

  onnx::ModelProto& model() { return model_; }
  const GenSpec& spec() const { return spec_; }
  Rng& rng() { return rng_; }

 private:
  const GenSpec& spec_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  Rng rng_;
  int64_t weightBytes_ = 0;
  std::map<std::string, bool> constants_;   ///< Names of initializers made by const*(): created once.
  std::map<Dims, std::string> shapeInits_;  ///< Shared shape initializers of ConstantOfShape nodes.
  std::string quantLines_;                   ///< "NAME TYPE\n" per quantised weight (kQuantMetadataKey).
  std::vector<onnx::ValueInfoProto> kept_;   ///< Declared outputs of partex-domain nodes.
};

/// Per-kind builders (gen_cnn.cpp, gen_transformer.cpp, gen_random.cpp, gen_recsys.cpp). They throw GenError.
void buildResNet18(Builder& b);
void buildMobileNetV2(Builder& b);
void buildInception(Builder& b);
void buildBert(Builder& b);
void buildGpt2(Builder& b);
void buildRandomDag(Builder& b);
void buildWideDeep(Builder& b);
void buildMultiTower(Builder& b);
void buildLlama(Builder& b);

/// IEEE binary16 bits of `f`, rounded to nearest even (overflow to infinity).
uint16_t floatToHalf(float f);

}  // namespace partex::gen
