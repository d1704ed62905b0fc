// libFuzzer target for libonnx's shape-inference functions behind the importer's guards
// (core/onnx/inferguard.h). fuzz_import has to find an operator, a fitting attribute and a
// shape that crashes inside valid protobuf bytes; here the bytes pick them directly: one node of any
// ONNX or ai.onnx.ml schema of opsets 7..17, its inputs' types and shapes, small constant input data
// (shape, axes, pads, ... inputs that inference functions read) and its declared attributes.
// The node then goes through the guarded inference function three ways, each as the importer uses
// it: called directly with the fuzzed types, called the way GraphBuilder::inferNode calls it (types
// as the importer represents values, constants round-tripped through ConstTensor), and inside a
// one-node model through onnx::shape_inference::InferShapes. An exception is a refusal and fine;
// libonnx is not instrumented, so what this finds are hard crashes, hangs and huge allocations.
#include <fuzzer/FuzzedDataProvider.h>
#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/consteval.h"
#include "onnx/weights.h"
#include "onnx/inferguard.h"

namespace {

namespace onnximp = partex::onnximp;

/// One operator version to fuzz: the registry's schema and the opset version that selects it.
struct Target {
  const onnx::OpSchema* schema;
  int version;
  /// Per formal input: the types its constraint allows, sorted by name so that reproducers replay.
  std::vector<std::vector<onnx::TypeProto>> inputTypes;
  std::vector<std::pair<std::string, onnx::AttributeProto::AttributeType>> attributes;
};

bool hasGraphAttribute(const onnx::OpSchema& s) {
  for (const auto& [name, attr] : s.attributes())
    if (attr.type == onnx::AttributeProto::GRAPH || attr.type == onnx::AttributeProto::GRAPHS) return true;
  return false;
}

std::vector<Target> collectTargets() {
  std::vector<Target> targets;
  std::set<const onnx::OpSchema*> seen;
  std::set<std::pair<std::string, std::string>> ops;
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas_with_history())
    if (s.domain().empty() || s.domain() == "ai.onnx.ml") ops.emplace(s.Name(), s.domain());
  for (const auto& [name, domain] : ops) {
    // ai.onnx.ml has its own versions (1..3 in ONNX 1.12).
    const int lo = domain.empty() ? 7 : 1, hi = domain.empty() ? 17 : 3;
    for (int v = lo; v <= hi; ++v) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(name, v, domain);
      if (!s || !seen.insert(s).second || !s->has_type_and_shape_inference_function() || hasGraphAttribute(*s))
        continue;
      Target t{s, v, {}, {}};
      for (const auto& in : s->inputs()) {
        std::vector<std::string> names;
        for (const auto* type : in.GetTypes()) names.push_back(*type);
        std::sort(names.begin(), names.end());
        std::vector<onnx::TypeProto> types;
        for (const auto& n : names) types.push_back(onnx::Utils::DataTypeUtils::ToTypeProto(&n));
        t.inputTypes.push_back(std::move(types));
      }
      for (const auto& [an, attr] : s->attributes()) t.attributes.emplace_back(an, attr.type);
      std::sort(t.attributes.begin(), t.attributes.end());
      targets.push_back(std::move(t));
    }
  }
  return targets;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = collectTargets();
  return all;
}

constexpr int64_t kBig[] = {1000, int64_t{1} << 31, std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};

int64_t pickInt(FuzzedDataProvider& fdp) {
  constexpr int64_t kSmall[] = {-3, -1, 0, 1, 2, 3};
  const size_t k = fdp.ConsumeIntegralInRange<size_t>(0, std::size(kSmall) + std::size(kBig) - 1);
  return k < std::size(kSmall) ? kSmall[k] : kBig[k - std::size(kSmall)];
}

float pickFloat(FuzzedDataProvider& fdp) {
  constexpr float kFloats[] = {0.f,
                               1.f,
                               -1.f,
                               0.5f,
                               2.f,
                               3.f,
                               1e30f,
                               -1e30f,
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
  return kFloats[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kFloats) - 1)];
}

std::string pickString(FuzzedDataProvider& fdp) {
  static const char* const kStrings[] = {"",
                                         "NOTSET",
                                         "SAME_UPPER",
                                         "SAME_LOWER",
                                         "VALID",
                                         "constant",
                                         "reflect",
                                         "edge",
                                         "linear",
                                         "nearest",
                                         "cubic",
                                         "half_pixel",
                                         "asymmetric",
                                         "align_corners",
                                         "tf_crop_and_resize",
                                         "DCR",
                                         "CRD",
                                         "avg",
                                         "max",
                                         "NCHW",
                                         "NHWC",
                                         "ij,jk->ik",
                                         "...ii->...i",
                                         "i,i",
                                         "ab...,b->a...",
                                         "->",
                                         "i->",
                                         "bij,bjk->bik",
                                         "float",
                                         "int64",
                                         "TOPK",
                                         "LEFT",
                                         "RIGHT",
                                         "none",
                                         "stack_and_pad",
                                         "i,j,k,l,m,n,o,p,q,r,s,t->tsrqponmlkji"};
  if (fdp.ConsumeIntegralInRange(0, 7) == 0) return fdp.ConsumeRandomLengthString(24);
  return kStrings[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kStrings) - 1)];
}

/// Rank 0..6 with dims from {absent, 0, 1, 2, 3, 7, large, symbolic}.
void fillShape(FuzzedDataProvider& fdp, onnx::TensorShapeProto* shape) {
  const int rank = fdp.ConsumeIntegralInRange(0, 6);
  for (int d = 0; d < rank; ++d) {
    auto* dim = shape->add_dim();
    switch (fdp.ConsumeIntegralInRange(0, 8)) {
      case 0:
        break;
      case 1:
        dim->set_dim_value(0);
        break;
      case 2:
        dim->set_dim_value(1);
        break;
      case 3:
        dim->set_dim_value(2);
        break;
      case 4:
        dim->set_dim_value(3);
        break;
      case 5:
        dim->set_dim_value(7);
        break;
      case 6:
        dim->set_dim_value(kBig[fdp.ConsumeIntegralInRange<size_t>(0, 2)]);
        break;
      case 7:
        dim->set_dim_param("N");
        break;
      default:
        dim->set_dim_value(1);
        break;
    }
  }
}

/// The shape of the tensor type inside `t` (a tensor, a sparse tensor, a sequence or optional of
/// one), created empty; null for other types.
onnx::TensorShapeProto* innerShape(onnx::TypeProto* t) {
  for (int depth = 0; depth < 4; ++depth) {
    if (t->has_tensor_type()) return t->mutable_tensor_type()->mutable_shape();
    if (t->has_sparse_tensor_type()) return t->mutable_sparse_tensor_type()->mutable_shape();
    if (t->has_sequence_type() && t->sequence_type().has_elem_type())
      t = t->mutable_sequence_type()->mutable_elem_type();
    else if (t->has_optional_type() && t->optional_type().has_elem_type())
      t = t->mutable_optional_type()->mutable_elem_type();
    else
      return nullptr;
  }
  return nullptr;
}

/// A small tensor: int64, float or int32 data (sometimes none or a wrong count), rank 0..2.
onnx::TensorProto makeTensor(FuzzedDataProvider& fdp, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  constexpr int kTypes[] = {onnx::TensorProto::INT64, onnx::TensorProto::FLOAT, onnx::TensorProto::INT32,
                            onnx::TensorProto::INT64, onnx::TensorProto::BOOL,  onnx::TensorProto::DOUBLE};
  const int type = kTypes[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kTypes) - 1)];
  t.set_data_type(type);
  const int rank = fdp.ConsumeIntegralInRange(0, 2);
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = fdp.ConsumeIntegralInRange(0, d == 0 ? 6 : 2);
    t.add_dims(dim);
    n *= dim;
  }
  if (fdp.ConsumeIntegralInRange(0, 15) == 0) n = fdp.ConsumeIntegralInRange(0, 6);  // count != dims
  for (int64_t i = 0; i < n; ++i) {
    switch (type) {
      case onnx::TensorProto::FLOAT:
        t.add_float_data(pickFloat(fdp));
        break;
      case onnx::TensorProto::DOUBLE:
        t.add_double_data(pickFloat(fdp));
        break;
      case onnx::TensorProto::INT32:
      case onnx::TensorProto::BOOL:
        t.add_int32_data(static_cast<int32_t>(pickInt(fdp)));
        break;
      default:
        t.add_int64_data(pickInt(fdp));
        break;
    }
  }
  return t;
}

onnx::TypeProto typeOfTensor(const onnx::TensorProto& t) {
  onnx::TypeProto type;
  auto* tt = type.mutable_tensor_type();
  tt->set_elem_type(t.data_type());
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return type;
}

void fillAttribute(FuzzedDataProvider& fdp, onnx::AttributeProto::AttributeType type, onnx::AttributeProto* a) {
  a->set_type(type);
  const int n = fdp.ConsumeIntegralInRange(0, 6);
  switch (type) {
    case onnx::AttributeProto::INT:
      a->set_i(pickInt(fdp));
      break;
    case onnx::AttributeProto::FLOAT:
      a->set_f(pickFloat(fdp));
      break;
    case onnx::AttributeProto::STRING:
      a->set_s(pickString(fdp));
      break;
    case onnx::AttributeProto::INTS:
      for (int i = 0; i < n; ++i) a->add_ints(pickInt(fdp));
      break;
    case onnx::AttributeProto::FLOATS:
      for (int i = 0; i < n; ++i) a->add_floats(pickFloat(fdp));
      break;
    case onnx::AttributeProto::STRINGS:
      for (int i = 0; i < n; ++i) a->add_strings(pickString(fdp));
      break;
    case onnx::AttributeProto::TENSOR:
      *a->mutable_t() = makeTensor(fdp, "");
      break;
    case onnx::AttributeProto::SPARSE_TENSOR: {
      auto* sp = a->mutable_sparse_tensor();
      *sp->mutable_values() = makeTensor(fdp, "");
      *sp->mutable_indices() = makeTensor(fdp, "");
      const int rank = fdp.ConsumeIntegralInRange(0, 3);
      for (int i = 0; i < rank; ++i) sp->add_dims(pickInt(fdp));
      break;
    }
    case onnx::AttributeProto::TYPE_PROTO:
      a->mutable_tp()->mutable_tensor_type()->set_elem_type(fdp.ConsumeIntegralInRange(0, 16));
      break;
    default:
      break;  // Graphs: nodes with graph attributes are not fuzzed here.
  }
}

/// The decoded node with everything the three callers need.
struct Case {
  const Target* target = nullptr;
  onnx::NodeProto node;
  std::vector<std::unique_ptr<onnx::TypeProto>> types;   ///< Per input; null for no type.
  std::vector<std::unique_ptr<onnx::TensorProto>> data;  ///< Per input; null for no data.
};

Case decode(FuzzedDataProvider& fdp) {
  Case c;
  const auto& all = targets();
  c.target = &all[fdp.ConsumeIntegralInRange<size_t>(0, all.size() - 1)];
  const onnx::OpSchema& s = *c.target->schema;
  c.node.set_op_type(s.Name());
  c.node.set_domain(s.domain());
  c.node.set_name("n");

  const int minIn = s.min_input(), maxIn = std::min(s.max_input(), minIn + 4);
  const int nIn = fdp.ConsumeIntegralInRange(std::max(0, minIn - 1), std::max(0, maxIn));
  for (int i = 0; i < nIn; ++i) {
    const std::string name = "i" + std::to_string(i);
    const bool absent = fdp.ConsumeIntegralInRange(0, 11) == 0;
    c.node.add_input(absent ? std::string() : name);
    std::unique_ptr<onnx::TypeProto> type;
    std::unique_ptr<onnx::TensorProto> data;
    const int kind = fdp.ConsumeIntegralInRange(0, 15);
    if (!absent && kind != 0) {
      const auto& formal = c.target->inputTypes;
      const size_t f = std::min(static_cast<size_t>(i), formal.empty() ? 0 : formal.size() - 1);
      type = std::make_unique<onnx::TypeProto>();
      if (kind == 1 || formal.empty() || formal[f].empty())
        type->mutable_tensor_type()->set_elem_type(fdp.ConsumeIntegralInRange(0, 16));
      else
        *type = formal[f][fdp.ConsumeIntegralInRange<size_t>(0, formal[f].size() - 1)];
      // The registry's types carry no shape: one in eight stays rank-unknown.
      if (fdp.ConsumeIntegralInRange(0, 7) != 0)
        if (auto* shape = innerShape(type.get())) fillShape(fdp, shape);
      if (fdp.ConsumeIntegralInRange(0, 3) == 0) {
        data = std::make_unique<onnx::TensorProto>(makeTensor(fdp, name));
        // Usually the type matches the data (initializers and folded constants); a model's declared
        // graph input may say otherwise.
        if (fdp.ConsumeIntegralInRange(0, 7) != 0) *type = typeOfTensor(*data);
      }
    }
    c.types.push_back(std::move(type));
    c.data.push_back(std::move(data));
  }

  const int minOut = s.min_output(), maxOut = std::min(s.max_output(), minOut + 3);
  const int nOut = fdp.ConsumeIntegralInRange(std::max(1, minOut), std::max(1, maxOut));
  for (int i = 0; i < nOut; ++i)
    c.node.add_output(i > 0 && fdp.ConsumeIntegralInRange(0, 7) == 0 ? std::string() : "o" + std::to_string(i));

  for (const auto& [name, type] : c.target->attributes) {
    const int pick = fdp.ConsumeIntegralInRange(0, 3);
    if (pick == 0) continue;
    auto* a = c.node.add_attribute();
    a->set_name(name);
    // Now and then an attribute of the wrong type: without the checker nothing else catches it.
    const auto t = pick == 1 && fdp.ConsumeBool()
                       ? static_cast<onnx::AttributeProto::AttributeType>(fdp.ConsumeIntegralInRange(1, 8))
                       : type;
    fillAttribute(fdp, t, a);
  }
  return c;
}

/// libonnx is not instrumented, so libFuzzer cannot see which of its paths an input took. These
/// counters stand in: one per (operator, caller, outcome), the outcome being the error's text without
/// digits or the outputs' element types and ranks. An input that reaches a new error or a new output
/// form of an operator counts as new coverage and stays in the corpus.
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t gOutcomes[1 << 16];

void countOutcome(const Case& c, int caller, const std::string& outcome) {
  size_t h = std::hash<std::string>{}(outcome);
  h ^= std::hash<const void*>{}(c.target->schema) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h = h * 31 + static_cast<size_t>(caller);
  uint8_t& counter = gOutcomes[h % std::size(gOutcomes)];
  if (counter < 255) ++counter;
}

std::string outputsSummary(const std::vector<onnx::TypeProto>& outputs) {
  std::string s = "ok";
  for (const auto& t : outputs) {
    s += ' ';
    if (!t.has_tensor_type()) {
      s += std::to_string(t.value_case());
      continue;
    }
    s += std::to_string(t.tensor_type().elem_type());
    s += t.tensor_type().has_shape() ? "r" + std::to_string(t.tensor_type().shape().dim_size()) : "u";
  }
  return s;
}

/// Runs `f`; exceptions are refusals and fine. Returns the outcome for countOutcome.
/// Attribute values the importer rejects before any shape inference (checkAttributeValues in
/// core/onnx/importer.cpp: libonnx divides by zero strides and loops on the others); nodes with them
/// never reach the guarded functions there.
bool rejectedUpFront(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    const std::string& n = a.name();
    if (n == "strides" || n == "dilations" || n == "kernel_shape") {
      for (int64_t v : a.ints())
        if (v < 1) return true;
    } else if ((n == "blocksize" || n == "group") && a.has_i() && a.i() < 1) {
      return true;
    }
  }
  return node.output_size() == 0;
}

template <class F>
std::string refusalsAreFine(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::string text = e.what();
    text = text.substr(0, std::min(text.find('\n'), size_t{120}));
    text.erase(std::remove_if(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }), text.end());
    return text;
  } catch (...) {
    return "unknown exception";
  }
}

/// The guarded inference function on the fuzzed types as they are.
void inferDirect(const Case& c) {
  const auto* schema = onnximp::guardedSchema(c.node.op_type(), c.target->version, c.node.domain());
  if (!schema || !schema->has_type_and_shape_inference_function()) return;
  onnx::NodeProto node = c.node;
  std::vector<onnx::TypeProto> types(c.types.size());
  onnximp::InferenceTypes typeMap;
  onnximp::InferenceData dataMap;
  for (size_t i = 0; i < c.types.size(); ++i) {
    const std::string& name = node.input(static_cast<int>(i));
    if (name.empty()) continue;
    if (c.types[i]) {
      types[i] = *c.types[i];
      typeMap[name] = &types[i];
    }
    if (c.data[i]) dataMap[name] = c.data[i].get();
  }
  countOutcome(c, 0, refusalsAreFine([&] {
                 return outputsSummary(onnximp::inferNodeTypes(*schema, node, typeMap, dataMap));
               }));
}

/// As GraphBuilder::inferNode (core/onnx/importer.cpp) calls it: only tensor inputs of a type
/// partex knows get a type, unknown dims have no value, a constant's type is its own and its data
/// is either the model's proto or the ConstTensor written back with tensorToProto.
void inferAsImporter(const Case& c, bool roundTrip) {
  onnx::NodeProto node = c.node;
  const auto* schema = onnximp::guardedSchema(node.op_type(), c.target->version, node.domain());
  if (!schema || !schema->has_type_and_shape_inference_function()) return;
  std::vector<onnx::TypeProto> inTypes(c.types.size());
  std::vector<onnx::TensorProto> protos(c.types.size());
  onnximp::InferenceTypes typeMap;
  onnximp::InferenceData dataMap;
  for (size_t i = 0; i < c.types.size(); ++i) {
    const std::string& name = node.input(static_cast<int>(i));
    if (name.empty() || !c.types[i]) continue;
    onnx::TypeProto declared = c.data[i] ? typeOfTensor(*c.data[i]) : *c.types[i];
    if (!declared.has_tensor_type()) continue;
    const auto dtype = onnximp::dtypeFromOnnx(declared.tensor_type().elem_type());
    if (dtype == partex::DType::Undefined) continue;
    std::vector<int64_t> dims;
    for (const auto& d : declared.tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    onnximp::setTensorType(&inTypes[i], static_cast<int32_t>(dtype), declared.tensor_type().has_shape(), dims);
    typeMap[name] = &inTypes[i];
    if (!c.data[i]) continue;
    if (!roundTrip) {
      dataMap[name] = c.data[i].get();
    } else {
      onnximp::ConstTensor ct;
      ct.dtype = onnximp::dtypeFromOnnx(c.data[i]->data_type());
      ct.dims.assign(c.data[i]->dims().begin(), c.data[i]->dims().end());
      if (auto d = onnximp::decodeTensorData(*c.data[i]); d) ct.data = std::move(d).value();
      if (onnximp::tensorToProto(ct, &protos[i])) {
        protos[i].set_name(name);
        dataMap[name] = &protos[i];
      }
    }
  }
  countOutcome(c, roundTrip ? 2 : 1, refusalsAreFine([&] {
                 return outputsSummary(onnximp::inferNodeTypes(*schema, node, typeMap, dataMap));
               }));
}

/// ONNX's whole-model pass over a model of this one node, with the guarded registry, as the
/// importer runs it before its own per-node pass (without data propagation: the importer enables
/// that only for models that passed the checker).
void inferModel(const Case& c) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  const bool ml = c.node.domain() == "ai.onnx.ml";
  auto* onnxOpset = model.add_opset_import();
  onnxOpset->set_domain("");
  onnxOpset->set_version(ml ? 17 : c.target->version);
  auto* mlOpset = model.add_opset_import();
  mlOpset->set_domain("ai.onnx.ml");
  mlOpset->set_version(ml ? c.target->version : 3);
  auto* g = model.mutable_graph();
  g->set_name("g");
  *g->add_node() = c.node;
  for (size_t i = 0; i < c.types.size(); ++i) {
    const std::string& name = c.node.input(static_cast<int>(i));
    if (name.empty()) continue;
    if (c.types[i]) {
      auto* in = g->add_input();
      in->set_name(name);
      *in->mutable_type() = *c.types[i];
    }
    if (c.data[i]) *g->add_initializer() = *c.data[i];
  }
  for (const auto& out : c.node.output())
    if (!out.empty()) g->add_output()->set_name(out);
  countOutcome(c, 3, refusalsAreFine([&] {
                 onnx::ShapeInferenceOptions options(false, 0, false);
                 onnx::shape_inference::InferShapes(model, onnximp::guardedSchemas(), options);
                 std::vector<onnx::TypeProto> outputs;
                 for (const auto& vi : model.graph().value_info()) outputs.push_back(vi.type());
                 for (const auto& vi : model.graph().output()) outputs.push_back(vi.type());
                 return outputsSummary(outputs);
               }));
}

/// With PARTEX_FUZZ_PRINT set, a replayed input prints its node first (to read a crash's cause).
void print(const Case& c) {
  std::fprintf(stderr, "%s (opset %d)\n%s", c.node.op_type().c_str(), c.target->version, c.node.DebugString().c_str());
  for (size_t i = 0; i < c.types.size(); ++i)
    std::fprintf(stderr, "input %zu: type {%s} data {%s}\n", i,
                 c.types[i] ? c.types[i]->ShortDebugString().c_str() : "none",
                 c.data[i] ? c.data[i]->ShortDebugString().c_str() : "none");
}

bool printing = false;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  (void)targets();
  printing = std::getenv("PARTEX_FUZZ_PRINT") != nullptr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const Case c = decode(fdp);
  if (printing) print(c);
  if (rejectedUpFront(c.node)) return 0;
  inferDirect(c);
  inferAsImporter(c, false);
  inferAsImporter(c, true);
  inferModel(c);
  return 0;
}
