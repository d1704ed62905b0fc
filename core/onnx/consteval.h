#pragma once
/// \file Internal to the ONNX importer: evaluation of operators on small constant tensors, used to
/// fold constant subgraphs (Constant, ConstantOfShape, Shape and shape arithmetic) into weights.
/// Only dims are tracked for large tensors; element data is kept up to kMaxConstElements.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/graph.h"

namespace partex::onnximp {

/// Tensors up to this many elements keep their data during folding (and, for integer types, in
/// Value::intData afterwards).
constexpr int64_t kMaxConstElements = 4096;

/// A constant tensor: dims always; small numeric data (ints/floats) for folding; and, at any size,
/// the element bytes the importer keeps as the weight's data (Value::data).
struct ConstTensor {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  bool hasData = false;
  std::vector<int64_t> ints;   ///< Integer and bool types (uint64 stored as its bit pattern).
  std::vector<double> floats;  ///< Floating types.
  /// The elements in Tensor encoding (weights.h), shared, not copied, by folds that only relabel them
  /// (Identity, Reshape, ...); null when only `ints`/`floats` (or nothing) hold them.
  std::shared_ptr<const TensorData> data;

  /// Element count; -1 for negative dims or overflow.
  int64_t numel() const;
};

bool isFloatType(DType t);
/// Integer types and bool.
bool isIntType(DType t);
/// DType from an ONNX elem_type; Undefined for values outside the enum.
DType dtypeFromOnnx(int64_t elemType);
/// Element count of dims with overflow checks; -1 when negative or beyond 2^62.
int64_t safeNumel(const std::vector<int64_t>& dims);

/// Reads dims, dtype and (when `wantData`, numeric and small) the data of a TensorProto. External
/// tensors never get data.
ConstTensor tensorFromProto(const onnx::TensorProto& t, bool wantData = true);
/// Writes a constant with data as a TensorProto (for ONNX shape inference); false when the type
/// cannot be written.
bool tensorToProto(const ConstTensor& c, onnx::TensorProto* out);

/// Evaluates `node` (default domain, opset `opset`) on constant inputs. `in[i]` is null for an
/// omitted input; an input without data still carries dims (Shape and Size need no more).
/// On success fills one ConstTensor per node output (dims always; data when it fits the limit) and
/// returns true; returns false when the op is not supported or its inputs are unsuitable.
bool evaluateNode(const onnx::NodeProto& node, int64_t opset, const std::vector<const ConstTensor*>& in,
                  std::vector<ConstTensor>& out);

/// True for operators whose result depends on more than their inputs (random generators).
bool isNondeterministicOp(const std::string& opType);

}  // namespace partex::onnximp
