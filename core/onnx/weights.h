#pragma once
/// \file Internal to core/onnx: the element data of ONNX tensors as shared TensorData (ir/tensordata.h),
/// in the encoding a core/backend Tensor stores. The importer keeps every weight's data this way
/// (initializers with raw_data or typed fields, external data files, folded constants), and the
/// TensorProto reader of tensorio.h uses the same decoding.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ir/tensordata.h"
#include "onnx/consteval.h"
#include "support/result.h"

namespace partex::onnximp {

/// Bytes per element in TensorData encoding (Bool 1, 16-bit floats 2); 0 for types that have no
/// such encoding (String, complex, Undefined).
int64_t dataElementSize(DType t);

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

/// TensorData from the small data of a folded constant (ConstTensor::ints / floats); nullptr when it
/// has none or its type has no exact encoding here (16-bit floats).
std::shared_ptr<const TensorData> encodeConst(const ConstTensor& c);

/// Fills ConstTensor::ints / floats (hasData) from `c.data` when the constant is small enough to fold
/// (kMaxConstElements) and numeric: shape tensors stored as external data still fold.
void decodeSmallData(ConstTensor& c);

}  // namespace partex::onnximp
