#include "onnx/tensorio.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "backend/npy.h"
#include "onnx/importer.h"
#include "onnx/weights.h"
#include "support/strings.h"

namespace partex {

namespace {

Result<std::string> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return makeError(path, ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<Tensor> fromProto(const onnx::TensorProto& p, const std::string& origin) {
  const DType dt = onnximp::dtypeFromOnnx(p.data_type());
  if (!tensorDTypeSupported(dt))
    return makeError(origin, ": tensor '", p.name(), "': unsupported data type ", std::to_string(p.data_type()));
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return makeError(origin, ": tensor '", p.name(), "': external data is not supported");
  auto data = onnximp::decodeTensorData(p);
  if (!data) return makeError(origin, ": tensor '", p.name(), "': ", data.message());
  auto t = Tensor::alias(dt, std::vector<int64_t>(p.dims().begin(), p.dims().end()), std::move(data).value());
  if (!t) return makeError(origin, ": tensor '", p.name(), "': ", t.message());
  return t;
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

Result<Tensor> readTensorFile(const std::string& path, std::string* name) {
  if (name) name->clear();
  std::ifstream f(path, std::ios::binary);
  char magic[6] = {};
  if (f) f.read(magic, sizeof magic);
  if (f && std::memcmp(magic, "\x93NUMPY", sizeof magic) == 0) return readNpyFile(path);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return makeError(path, ": no such file");
  if (!fs::is_regular_file(path, ec)) return makeError(path, ": not a regular file");
  auto t = readTensorProtoFile(path, name);
  if (!t && t.message() == path + ": not a TensorProto")
    return makeError(path, ": neither a NumPy .npy file nor an ONNX TensorProto (.pb)");
  return t;
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

Result<std::map<ValueId, Tensor>> readModelInputs(const Graph& g, const std::vector<std::string>& specs) {
  std::map<ValueId, Tensor> out;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return makeError("--input '", spec, "': expected NAME=FILE");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    ValueId id = kNone;
    std::vector<std::string> names;
    for (ValueId in : g.inputs) {
      names.push_back(g.values[static_cast<size_t>(in)].name);
      if (names.back() == name) id = in;
    }
    if (id == kNone) return makeError(file, ": the model has no input '", name, "' (inputs: ", join(names, ", "), ")");
    if (out.count(id)) return makeError(file, ": input '", name, "' is given twice");
    auto t = readTensorFile(file);
    if (!t) return Error{t.message()};
    const Value& v = g.values[static_cast<size_t>(id)];
    if (t->dtype() != v.dtype)
      return makeError(file, ": input '", name, "' is ", dtypeName(v.dtype), ", the file holds ",
                       dtypeName(t->dtype()));
    if (t->shape() != v.shape)
      return makeError(file, ": input '", name, "' has shape ", shapeString(v.shape), " (after --dim), the file holds ",
                       shapeString(t->shape()));
    out[id] = std::move(t).value();
  }
  return out;
}

}  // namespace partex
