#pragma once
// Lowering of models newer than libonnx 1.12 (IR 8, opset 17) to what it can check and infer.
//
// IR 9 added the float8 types, IR 10 uint4/int4 and overloads of local functions: a model that uses
// none of them reads exactly as an IR-8 model. Opsets 18 to 21 changed a few operators; each change
// has an exact opset-17 form when the inputs that moved are constants (the axes of the reductions, of
// Pad, Split's num_outputs on an axis of known size, ...), or none (a new operator, Pad's wrap mode,
// max/min scatter reduction). The passes rewrite the in-memory proto before the checker and shape
// inference, or refuse with one line that names the operator and the reason.
//
// Only for code that already builds with ONNX's definitions (ONNX_ML=1, ONNX_NAMESPACE=onnx).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/result.h"

namespace partex::onnximp {

/// The newest IR version lowerIrVersion() accepts, and the newest default-domain opset lowerOpset() does.
constexpr int64_t kMaxLowerableIr = 10;
constexpr int64_t kMaxLowerableOpset = 21;

/// Checks that an IR 9/10 model uses nothing IR 8 cannot represent (float8, 4-bit and 4-bit-float
/// element types, function overloads) and sets its ir_version to 8. The error (no file name) names the
/// feature and where it is used.
Status lowerIrVersion(onnx::ModelProto& model);

/// Rewrites every default-domain operator of the model (subgraphs and local functions included) whose
/// opset-18..21 form differs into its opset-17 form and sets the default-domain opset to 17. `notes`
/// gets one line per kind of rewrite made. The error (no file name) names the first operator that has
/// no exact opset-17 form, and why.
Status lowerOpset(onnx::ModelProto& model, std::vector<std::string>& notes);

}  // namespace partex::onnximp
