#pragma once
/// \file Internal to core/onnx: the element data of ONNX tensors as shared TensorData (ir/tensordata.h),
/// in the encoding a core/backend Tensor stores (tensorElementSize). The one TensorProto decoder: the
/// importer keeps every weight's data this way (initializers with raw_data or typed fields, external
/// data files, Constant nodes, which folding then computes with), and the TensorProto reader of
/// tensorio.h uses it too.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ir/tensordata.h"
#include "onnx/consteval.h"
#include "support/result.h"

namespace partex::onnximp {

/// The data of `t` from raw_data or its typed field. Errors (one line, naming the tensor): a size
/// that does not match the dims, a missing field, an unsupported type; external tensors are refused
/// (use readExternalData). A tensor of a type without encoding (String, complex) gives nullptr.
Result<std::shared_ptr<const TensorData>> decodeTensorData(const onnx::TensorProto& t);

/// The data of an external tensor from the file its `location` names, relative to `baseDir` (the
/// model's folder). Refused, with a line naming the file and the reason: an absolute location or one
/// that leads out of the folder (through ".." or a symbolic link), a missing or non-regular file, a
/// bad offset or length, a length that differs from the tensor's size, a file too short for
/// offset + size, a read error.
Result<std::shared_ptr<const TensorData>> readExternalData(const onnx::TensorProto& t, const std::string& baseDir);

}  // namespace partex::onnximp
