#pragma once
// ONNX's operator schemas with guarded shape-inference functions.
//
// libonnx 1.12's inference functions trust their inputs in places: a Conv whose weight has another
// rank than its input reads past a vector and crashes, MaxUnpool reads a dimension of an input it
// never checked. A hostile model reaches them through onnx::shape_inference::InferShapes and through
// the importer's own per-node inference. The registry below hands out copies of the schemas whose
// inference functions first check the preconditions those functions assume and otherwise fail with
// onnx::InferenceError: ONNX's whole-model pass then leaves the node's outputs untyped, and the
// importer's per-node pass reports the refusal as the model's error.
//
// Only for code that already builds with ONNX's definitions (ONNX_ML=1, ONNX_NAMESPACE=onnx).
#include <onnx/defs/schema.h>

#include <cstdint>
#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

namespace partex::onnximp {

/// The schema registry for ONNX shape inference on untrusted models: the same schemas as
/// onnx::OpSchemaRegistry, with the guards of inferguard.cpp around the inference functions that need
/// them. Thread-safe; the schemas live as long as the program.
const onnx::ISchemaRegistry* guardedSchemas();

/// Whether the operator has a guard that can refuse a model (some only make ONNX give up on a node).
bool hasGuard(const std::string& op, const std::string& domain);

/// True when `e` is a guard's refusal; then `reason` gets its text ("the input has rank 2 but ...").
bool isGuardRefusal(const std::exception& e, std::string* reason);

/// Input types and constant input data by tensor name, as ONNX's per-node inference reads them.
using InferenceTypes = std::unordered_map<std::string, onnx::TypeProto*>;
using InferenceData = std::unordered_map<std::string, const onnx::TensorProto*>;

/// A tensor type as the importer knows a value: element type, and a shape when the rank is known
/// whose negative dimensions are unknown.
void setTensorType(onnx::TypeProto* type, int32_t elemType, bool hasRank, const std::vector<int64_t>& dims);

/// Runs `schema`'s inference function on `node` alone (the importer's per-node pass) and returns the
/// output types; throws what the function throws (a guard's refusal included).
std::vector<onnx::TypeProto> inferNodeTypes(const onnx::OpSchema& schema, onnx::NodeProto& node,
                                            const InferenceTypes& types, const InferenceData& data);

/// The guarded schema of one operator (nullptr where ONNX has none), as guardedSchemas() returns it.
const onnx::OpSchema* guardedSchema(const std::string& op, int version, const std::string& domain);

}  // namespace partex::onnximp
