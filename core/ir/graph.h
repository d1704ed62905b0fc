#pragma once
/// \file The core IR: a dataflow graph of operators (Node) and tensors (Value).
/// It is independent of ONNX's protobuf types: the importer in core/onnx fills it, everything else
/// (cost, sched, sim, GUI) reads it. Constant subgraphs are already folded away: every Node is an
/// operator to schedule; folded constants and initializers are Values with `isWeight` set.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/quant.h"
#include "ir/tensordata.h"
#include "support/result.h"

namespace partex {

using OpId = int32_t;     ///< Index into Graph::nodes.
using ValueId = int32_t;  ///< Index into Graph::values.
constexpr int32_t kNone = -1;

/// Element types (numbering follows onnx::TensorProto_DataType so the importer can cast).
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};
/// Bytes per element (String counts as 8, Undefined as 4 so that unknown tensors still cost something).
int64_t dtypeSize(DType t);
/// "float32", "int64", ...
const char* dtypeName(DType t);
/// Parses dtypeName() output; returns Undefined for unknown names.
DType dtypeFromName(const std::string& name);

/// A tensor: graph input, weight (initializer or folded constant), or an operator's output.
struct Value {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;  ///< Dims; -1 where unknown. Meaningless unless shapeKnown.
  bool shapeKnown = false;
  bool isWeight = false;        ///< Initializer or folded constant: no producer, not a model input.
  bool isGraphInput = false;    ///< A model input (non-initializer graph input).
  bool isGraphOutput = false;
  bool externalData = false;    ///< Weight stored in an external file (read into `data` at import).
  std::string externalLocation; ///< File name of the external data, relative to the model.
  OpId producer = kNone;        ///< kNone for graph inputs and weights.
  std::vector<OpId> consumers;
  /// Small integer payloads (shape tensors, axes) kept after folding; empty when not kept.
  std::vector<int64_t> intData;
  /// A weight's elements (initializer, external data or folded constant), read once at import and
  /// shared by copies of the graph; null where the graph has none (generated in memory, or a model
  /// imported from bytes without its external-data folder): runs then feed synthetic data.
  std::shared_ptr<const TensorData> data;
  /// A weight's storage type in ggml's terms (a GGUF tensor's type, or a generated model's --quant):
  /// None (the default) stores it as `dtype`; any other type makes bytes() the quantised size, so
  /// memory and bytes read follow (ir/quant.h). The elements compute as `dtype` after dequantisation.
  QuantType quant = QuantType::None;

  /// Number of elements; -1 when the shape is not fully known.
  int64_t numElements() const;
  /// Bytes (numElements * dtypeSize, or quantBytes(quant, numElements) when a quantisation type is set);
  /// 0 when unknown.
  int64_t bytes() const;
};

/// An attribute value. Tensors keep only dtype and dims; subgraphs live in Node::subgraphs.
struct Attribute {
  struct TensorInfo {
    DType dtype = DType::Undefined;
    std::vector<int64_t> dims;
  };
  std::variant<std::monostate, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<std::string>, TensorInfo>
      value;
};

class Graph;

/// Attributes the importer sets on the operators of an expanded call of a model-local ONNX function
/// (ModelProto.functions): the call's node name (the outermost call, for calls inside a function) and
/// the function ("domain.name"). The GUI collapses a call's operators into one box.
inline constexpr const char* kFunctionCallAttr = "partex.function_call";
inline constexpr const char* kFunctionAttr = "partex.function";

/// An operator to schedule.
struct Node {
  std::string name;    ///< Unique within the graph (the importer invents one when ONNX has none).
  std::string opType;  ///< ONNX op type, e.g. "Conv".
  std::string domain;  ///< "" for the default ONNX domain.
  std::vector<ValueId> inputs;   ///< kNone for an omitted optional input.
  std::vector<ValueId> outputs;  ///< kNone for an omitted optional output.
  std::map<std::string, Attribute> attrs;
  /// Bodies of If (then_branch, else_branch), Loop and Scan (body), by attribute name.
  std::vector<std::pair<std::string, std::shared_ptr<Graph>>> subgraphs;

  /// Attribute helpers: return `def` when absent or of another type.
  int64_t attrInt(const std::string& key, int64_t def) const;
  double attrFloat(const std::string& key, double def) const;
  std::string attrString(const std::string& key, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& key) const;
  bool hasAttr(const std::string& key) const { return attrs.count(key) != 0; }
};

/// The model graph. Nodes are stored in a topological order after import.
class Graph {
 public:
  std::string name;
  std::string sourcePath;  ///< Model file this graph came from ("" when generated in memory).
  int64_t irVersion = 0;
  int64_t opsetVersion = 0;  ///< Default-domain opset.
  std::string producerName;
  std::string graphSha256;  ///< SHA-256 (hex) of the serialized ONNX GraphProto: the model identity in plans.
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<ValueId> inputs;   ///< Model inputs (not weights).
  std::vector<ValueId> outputs;  ///< Model outputs.
  std::vector<std::string> warnings;  ///< Import warnings (unknown domains, unbound loops, ...).
  /// Import notes: facts, not problems (an IR 10 or opset 18 model read as IR 8 / opset 17).
  std::vector<std::string> notes;

  ValueId addValue(Value v);
  OpId addNode(Node n);
  /// Finds a value by name; kNone when absent. O(log n) after rebuildIndex().
  ValueId findValue(const std::string& name) const;
  /// Finds a node by name; kNone when absent.
  OpId findNode(const std::string& name) const;
  /// Recomputes producer/consumer links and the name indexes from nodes' inputs and outputs.
  void rebuildIndex();
  /// Operator predecessors / successors (through values), deduplicated, in id order.
  std::vector<OpId> predecessors(OpId op) const;
  std::vector<OpId> successors(OpId op) const;
  /// A topological order of the nodes, or an error naming a node on a cycle.
  Result<std::vector<OpId>> topologicalOrder() const;
  /// Checks structure: unique names, every input produced or a graph input/weight, no cycle.
  /// Messages are prefixed by nothing: the caller adds the file name.
  Status verify() const;
  /// Total bytes of weights.
  int64_t paramBytes() const;

 private:
  std::map<std::string, ValueId> valueIndex_;
  std::map<std::string, OpId> nodeIndex_;
};

}  // namespace partex
