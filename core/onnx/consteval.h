#pragma once
/// \file Internal to the ONNX importer: constant folding. A node whose inputs are all constants is
/// evaluated by the plain CPU kernels (core/kernels, the ones the CPU backend runs), so that a folded
/// constant holds the value a run would compute. What is left here is only what no kernel does: reading
/// Constant and ConstantOfShape attributes, Shape and Size of activations of known shape, and relabelling
/// a large weight (Reshape, Identity, ...) without copying its bytes.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/graph.h"

namespace partex::onnximp {

/// Results up to this many elements are computed when folding (and, for integer types, kept in
/// Value::intData afterwards); larger ones stay operators, except the relabellings and ConstantOfShape.
constexpr int64_t kMaxConstElements = 4096;

/// A constant tensor: dims always, and the elements in Tensor encoding (core/backend Tensor, weights.h)
/// when known, shared (not copied) by every fold that only relabels them.
struct ConstTensor {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  std::shared_ptr<const TensorData> data;  ///< Null when the elements are not known.

  /// Element count; -1 for negative dims or overflow.
  int64_t numel() const;
  /// Whether folding may compute with the elements: known, and at most kMaxConstElements of them.
  bool foldable() const;
  /// The elements of a foldable integer or bool constant; empty otherwise.
  std::vector<int64_t> ints() const;
};

/// Integer types and bool.
bool isIntType(DType t);
/// DType from an ONNX elem_type; Undefined for values outside the enum.
DType dtypeFromOnnx(int64_t elemType);
/// Element count of dims with overflow checks; -1 when negative or beyond 2^62.
int64_t safeNumel(const std::vector<int64_t>& dims);

/// Writes a foldable constant as a TensorProto (raw data), for ONNX shape inference; false when it has
/// no foldable data or a 16-bit float type.
bool tensorToProto(const ConstTensor& c, onnx::TensorProto* out);

/// What ONNX inference says of a node output before folding: `known` when its dtype and all dims are.
struct ExpectedOutput {
  bool known = false;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
};

/// Folds `node` (default domain, opset `opset`; `ir` is the same node with its attributes converted)
/// on constant inputs. `in[i]` is null for an omitted input; an input without data still carries dims
/// (Shape and Size need no more). `expected` has one entry per output (ONNX inference; unknown entries
/// allowed). On success fills one ConstTensor per output (dims, and the elements when computed) and
/// returns true; returns false when the node is not folded here.
bool evaluateNode(const onnx::NodeProto& node, const Node& ir, int64_t opset, const std::vector<const ConstTensor*>& in,
                  const std::vector<ExpectedOutput>& expected, std::vector<ConstTensor>& out);

/// True for operators whose result depends on more than their inputs (random generators).
bool isNondeterministicOp(const std::string& opType);

}  // namespace partex::onnximp
