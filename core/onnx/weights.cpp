#include "onnx/weights.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/tensor.h"
#include "support/strings.h"

namespace partex::onnximp {

namespace {

/// Copies a repeated field into `out` as Dst elements.
template <class Dst, class Field>
void copyField(const Field& field, std::byte* out) {
  Dst* d = reinterpret_cast<Dst*>(out);
  size_t i = 0;
  for (auto v : field) d[i++] = static_cast<Dst>(v);
}

}  // namespace

Result<std::shared_ptr<const TensorData>> decodeTensorData(const onnx::TensorProto& t) {
  const DType dt = dtypeFromOnnx(t.data_type());
  const int64_t es = tensorElementSize(dt);
  if (es == 0) return std::shared_ptr<const TensorData>();
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return makeError("external data needs the model's folder");
  const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t n = safeNumel(dims);
  if (n < 0) return makeError("invalid dims ", shapeToString(dims));
  if (n > INT64_MAX / es) return makeError(shapeToString(dims), " is too large");
  const int64_t bytes = n * es;
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != bytes)
      return makeError("raw data has ", std::to_string(t.raw_data().size()), " bytes, ", shapeToString(dims), " ",
                       dtypeName(dt), " needs ", std::to_string(bytes));
    auto d = TensorData::allocate(static_cast<size_t>(bytes));
    if (!d) return makeError("out of memory (", std::to_string(bytes), " bytes)");
    if (bytes > 0) std::memcpy(d->mutableData(), t.raw_data().data(), static_cast<size_t>(bytes));
    if (dt == DType::Bool)  // a Tensor's bool is 0 or 1
      for (int64_t i = 0; i < bytes; ++i) d->mutableData()[i] = std::byte{d->mutableData()[i] != std::byte{0}};
    return std::shared_ptr<const TensorData>(std::move(d));
  }
  int64_t have = 0;
  switch (dt) {
    case DType::Float32:
      have = t.float_data_size();
      break;
    case DType::Float64:
      have = t.double_data_size();
      break;
    case DType::Int64:
      have = t.int64_data_size();
      break;
    case DType::UInt32:
    case DType::UInt64:
      have = t.uint64_data_size();
      break;
    default:  // int32, int16, int8, uint16, uint8, bool, float16, bfloat16: int32_data
      have = t.int32_data_size();
      break;
  }
  if (have != n)
    return makeError(std::to_string(have), " values for ", shapeToString(dims),
                     n > 0 && have == 0 ? " (the tensor has no data)" : "");
  auto d = TensorData::allocate(static_cast<size_t>(bytes));
  if (!d) return makeError("out of memory (", std::to_string(bytes), " bytes)");
  std::byte* out = d->mutableData();
  if (n > 0) {
    switch (dt) {
      case DType::Float32:
        copyField<float>(t.float_data(), out);
        break;
      case DType::Float64:
        copyField<double>(t.double_data(), out);
        break;
      case DType::Int64:
        copyField<int64_t>(t.int64_data(), out);
        break;
      case DType::UInt32:
        copyField<uint32_t>(t.uint64_data(), out);
        break;
      case DType::UInt64:
        copyField<uint64_t>(t.uint64_data(), out);
        break;
      case DType::Int32:
        copyField<int32_t>(t.int32_data(), out);
        break;
      case DType::Int16:
        copyField<int16_t>(t.int32_data(), out);
        break;
      case DType::Int8:
        copyField<int8_t>(t.int32_data(), out);
        break;
      case DType::UInt8:
        copyField<uint8_t>(t.int32_data(), out);
        break;
      case DType::Bool: {
        auto* b = reinterpret_cast<uint8_t*>(out);
        size_t i = 0;
        for (int32_t v : t.int32_data()) b[i++] = v != 0;
        break;
      }
      default:  // uint16, float16, bfloat16: the 16-bit patterns
        copyField<uint16_t>(t.int32_data(), out);
        break;
    }
  }
  return std::shared_ptr<const TensorData>(std::move(d));
}

Result<std::shared_ptr<const TensorData>> readExternalData(const onnx::TensorProto& t, const std::string& baseDir) {
  namespace fs = std::filesystem;
  const DType dt = dtypeFromOnnx(t.data_type());
  const int64_t es = tensorElementSize(dt);
  if (es == 0) return std::shared_ptr<const TensorData>();
  std::string location, offsetText, lengthText;
  bool hasOffset = false, hasLength = false;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset") {
      offsetText = e.value();
      hasOffset = true;
    } else if (e.key() == "length") {
      lengthText = e.value();
      hasLength = true;
    }
  }
  if (location.empty()) return makeError("external data without a location");
  const fs::path loc(location);
  const std::string file = (fs::path(baseDir.empty() ? "." : baseDir) / loc).string();
  if (loc.has_root_path())
    return makeError("external data file '", location,
                     "' is an absolute path; it must be relative to the model's folder");
  const fs::path norm = loc.lexically_normal();
  if (norm.empty() || *norm.begin() == ".." || norm == ".")
    return makeError("external data file '", file, "' is outside the model's folder");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::path(baseDir.empty() ? "." : baseDir), ec);
  if (ec) return makeError("external data file '", file, "': the model's folder cannot be resolved");
  const fs::path full = fs::weakly_canonical(base / norm, ec);
  if (ec) return makeError("external data file '", file, "' cannot be resolved (", ec.message(), ")");
  const fs::path rel = full.lexically_relative(base);
  if (rel.empty() || *rel.begin() == ".." || rel == ".")
    return makeError("external data file '", file, "' leads outside the model's folder");
  const auto st = fs::status(full, ec);
  if (ec || !fs::exists(st)) return makeError("external data file '", file, "' is missing");
  if (!fs::is_regular_file(st)) return makeError("external data file '", file, "' is not a regular file");
  const auto fileSize = fs::file_size(full, ec);
  if (ec) return makeError("external data file '", file, "': cannot read its size");

  const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t n = safeNumel(dims);
  if (n < 0) return makeError("invalid dims ", shapeToString(dims));
  if (n > INT64_MAX / es) return makeError(shapeToString(dims), " is too large");
  const int64_t bytes = n * es;
  int64_t offset = 0, length = bytes;
  if (hasOffset && (!parseInt64(offsetText, offset) || offset < 0))
    return makeError("external data file '", file, "': invalid offset '", offsetText, "'");
  if (hasLength && (!parseInt64(lengthText, length) || length < 0))
    return makeError("external data file '", file, "': invalid length '", lengthText, "'");
  if (length != bytes)
    return makeError("external data file '", file, "': length ", std::to_string(length), " but ", shapeToString(dims),
                     " ", dtypeName(dt), " needs ", std::to_string(bytes), " bytes");
  const auto size = static_cast<int64_t>(fileSize);
  if (offset > size || bytes > size - offset)
    return makeError("external data file '", file, "' is too short (", std::to_string(size),
                     " bytes; the tensor needs ", std::to_string(bytes), " at offset ", std::to_string(offset), ")");
  auto d = TensorData::allocate(static_cast<size_t>(bytes));
  if (!d) return makeError("out of memory (", std::to_string(bytes), " bytes)");
  if (bytes > 0) {
    std::ifstream in(full, std::ios::binary);
    if (!in) return makeError("external data file '", file, "' cannot be opened");
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(d->mutableData()), static_cast<std::streamsize>(bytes));
    if (!in || in.gcount() != static_cast<std::streamsize>(bytes))
      return makeError("external data file '", file, "': read error");
  }
  return std::shared_ptr<const TensorData>(std::move(d));
}

}  // namespace partex::onnximp
