#include "onnx/tensorio.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx/importer.h"

namespace partex {

namespace {

Result<std::string> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(path, ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <class Src, class Dst>
void copyField(const Src& field, Tensor& t) {
  Dst* d = static_cast<Dst*>(t.raw());
  int64_t i = 0;
  for (auto v : field) d[i++] = static_cast<Dst>(v);
}

Result<Tensor> fromProto(const onnx::TensorProto& p, const std::string& origin) {
  const DType dt = static_cast<DType>(p.data_type());
  if (!tensorDTypeSupported(dt))
    return makeError(origin, ": tensor '", p.name(), "': unsupported data type ", std::to_string(p.data_type()));
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return makeError(origin, ": tensor '", p.name(), "': external data is not supported");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  auto r = Tensor::make(dt, dims);
  if (!r) return makeError(origin, ": tensor '", p.name(), "': ", r.message());
  Tensor& t = *r;
  const int64_t n = t.numElements();
  auto sizeError = [&](int64_t got) {
    return makeError(origin, ": tensor '", p.name(), "': ", std::to_string(got), " values for ", shapeString(dims));
  };
  if (p.has_raw_data()) {
    if (static_cast<int64_t>(p.raw_data().size()) != t.bytes())
      return makeError(origin, ": tensor '", p.name(), "': raw data has ", std::to_string(p.raw_data().size()),
                       " bytes, expected ", std::to_string(t.bytes()));
    if (t.bytes() > 0) std::memcpy(t.raw(), p.raw_data().data(), static_cast<size_t>(t.bytes()));
    return r;
  }
  switch (dt) {
    case DType::Float32:
      if (p.float_data_size() != n) return sizeError(p.float_data_size());
      copyField<decltype(p.float_data()), float>(p.float_data(), t);
      break;
    case DType::Float64:
      if (p.double_data_size() != n) return sizeError(p.double_data_size());
      copyField<decltype(p.double_data()), double>(p.double_data(), t);
      break;
    case DType::Int64:
      if (p.int64_data_size() != n) return sizeError(p.int64_data_size());
      copyField<decltype(p.int64_data()), int64_t>(p.int64_data(), t);
      break;
    case DType::UInt32:
      if (p.uint64_data_size() != n) return sizeError(p.uint64_data_size());
      copyField<decltype(p.uint64_data()), uint32_t>(p.uint64_data(), t);
      break;
    case DType::UInt64:
      if (p.uint64_data_size() != n) return sizeError(p.uint64_data_size());
      copyField<decltype(p.uint64_data()), uint64_t>(p.uint64_data(), t);
      break;
    case DType::Int32:
      if (p.int32_data_size() != n) return sizeError(p.int32_data_size());
      copyField<decltype(p.int32_data()), int32_t>(p.int32_data(), t);
      break;
    case DType::Int16:
      if (p.int32_data_size() != n) return sizeError(p.int32_data_size());
      copyField<decltype(p.int32_data()), int16_t>(p.int32_data(), t);
      break;
    case DType::Int8:
      if (p.int32_data_size() != n) return sizeError(p.int32_data_size());
      copyField<decltype(p.int32_data()), int8_t>(p.int32_data(), t);
      break;
    case DType::UInt8:
    case DType::Bool:
      if (p.int32_data_size() != n) return sizeError(p.int32_data_size());
      copyField<decltype(p.int32_data()), uint8_t>(p.int32_data(), t);
      break;
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:  // int32_data holds the 16-bit patterns
      if (p.int32_data_size() != n) return sizeError(p.int32_data_size());
      copyField<decltype(p.int32_data()), uint16_t>(p.int32_data(), t);
      break;
    default:
      return makeError(origin, ": tensor '", p.name(), "': unsupported data type");
  }
  return r;
}

}  // namespace

Result<Tensor> readTensorProtoBytes(const std::string& bytes, const std::string& origin, std::string* name) {
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) return makeError(origin, ": not a TensorProto");
  if (name) *name = p.name();
  return fromProto(p, origin);
}

Result<Tensor> readTensorProtoFile(const std::string& path, std::string* name) {
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  return readTensorProtoBytes(*bytes, path, name);
}

Result<OnnxModelWithData> importOnnxWithData(const std::string& path, bool constantsAsInputs,
                                             int64_t maxConstantBytes) {
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  onnx::ModelProto m;
  if (!m.ParseFromString(*bytes)) return makeError(path, ": not a ModelProto");
  OnnxModelWithData out;
  std::vector<std::pair<std::string, onnx::TensorProto>> asInputs;
  auto keep = [&](const onnx::TensorProto& p, const std::string& name) {
    int64_t n = 1;
    for (auto d : p.dims()) n *= d < 0 ? 0 : d;
    if (n * 8 > maxConstantBytes) return;
    auto t = fromProto(p, path);
    if (!t) return;
    out.constants[name] = std::move(*t);
    asInputs.emplace_back(name, p);
  };
  for (const auto& init : m.graph().initializer()) keep(init, init.name());
  for (const auto& node : m.graph().node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1 || !node.domain().empty()) continue;
    for (const auto& a : node.attribute()) {
      onnx::TensorProto p;
      if (a.name() == "value" && a.has_t()) {
        p = a.t();
      } else if (a.name() == "value_float") {
        p.set_data_type(onnx::TensorProto::FLOAT);
        p.add_float_data(a.f());
      } else if (a.name() == "value_floats") {
        p.set_data_type(onnx::TensorProto::FLOAT);
        p.add_dims(a.floats_size());
        for (float f : a.floats()) p.add_float_data(f);
      } else if (a.name() == "value_int") {
        p.set_data_type(onnx::TensorProto::INT64);
        p.add_int64_data(a.i());
      } else if (a.name() == "value_ints") {
        p.set_data_type(onnx::TensorProto::INT64);
        p.add_dims(a.ints_size());
        for (auto i : a.ints()) p.add_int64_data(i);
      } else {
        continue;
      }
      keep(p, node.output(0));
    }
  }
  if (!constantsAsInputs) {
    auto g = importOnnxFile(path);
    if (!g) return Error{g.message()};
    out.graph = std::move(*g);
    return out;
  }
  // Constants become graph inputs, so that the importer folds nothing: every node stays an operator
  // and the constants' data is fed at run time.
  onnx::GraphProto* gp = m.mutable_graph();
  std::set<std::string> inputs;
  for (const auto& in : gp->input()) inputs.insert(in.name());
  std::set<std::string> moved;
  for (const auto& [name, p] : asInputs) {
    moved.insert(name);
    if (inputs.count(name)) continue;
    onnx::ValueInfoProto* vi = gp->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(p.data_type());
    auto* shape = tt->mutable_shape();
    for (auto d : p.dims()) shape->add_dim()->set_dim_value(d);
  }
  onnx::GraphProto rewritten = *gp;
  rewritten.clear_initializer();
  rewritten.clear_node();
  for (const auto& init : gp->initializer())
    if (!moved.count(init.name())) *rewritten.add_initializer() = init;
  for (const auto& node : gp->node())
    if (!(node.op_type() == "Constant" && node.domain().empty() && node.output_size() == 1 &&
          moved.count(node.output(0))))
      *rewritten.add_node() = node;
  *gp = std::move(rewritten);
  std::string serialized;
  if (!m.SerializeToString(&serialized)) return makeError(path, ": cannot re-serialize");
  const std::string base = std::filesystem::path(path).parent_path().string();
  auto g = importOnnxBytes(serialized, path, ImportOptions{}, base);
  if (!g) return Error{g.message()};
  out.graph = std::move(*g);
  return out;
}

}  // namespace partex
