#include "gen/modelspec.h"

#include <onnx/onnx_pb.h>

namespace partex::testmodels {

namespace {

void setType(onnx::ValueInfoProto* vi, const SpecTensor& t) {
  vi->set_name(t.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(t.elemType);
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.dims) shape->add_dim()->set_dim_value(d);
}

void fillTensor(onnx::TensorProto* p, const SpecTensor& t) {
  p->set_name(t.name);
  p->set_data_type(t.elemType);
  for (int64_t d : t.dims) p->add_dims(d);
  if (t.elemType == onnx::TensorProto::INT64)
    for (int64_t v : t.ints) p->add_int64_data(v);
  else if (t.elemType == onnx::TensorProto::FLOAT)
    for (float v : t.floats) p->add_float_data(v);
  else  // another element type: bytes of the values (one per element), enough for a type check
    p->set_raw_data(std::string(t.ints.size() + t.floats.size(), '\0'));
}

}  // namespace

std::string buildModel(const ModelSpec& spec) {
  onnx::ModelProto m;
  m.set_ir_version(spec.irVersion);
  m.set_producer_name("partex-tests");
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(spec.opset);
  auto* g = m.mutable_graph();
  g->set_name("spec");
  for (const auto& t : spec.inputs) setType(g->add_input(), t);
  for (const auto& t : spec.outputs) setType(g->add_output(), t);
  for (const auto& t : spec.valueInfo) setType(g->add_value_info(), t);
  for (const auto& t : spec.initializers) {
    if (!t.asConstantNode) {
      fillTensor(g->add_initializer(), t);
      continue;
    }
    auto* n = g->add_node();
    n->set_op_type("Constant");
    n->set_name(t.name + "_const");
    n->add_output(t.name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    fillTensor(a->mutable_t(), t);
    a->mutable_t()->clear_name();
  }
  for (const auto& s : spec.nodes) {
    auto* n = g->add_node();
    n->set_op_type(s.op);
    if (!s.name.empty()) n->set_name(s.name);
    for (const auto& i : s.inputs) n->add_input(i);
    for (const auto& o : s.outputs) n->add_output(o);
    for (const auto& sa : s.attrs) {
      auto* a = n->add_attribute();
      a->set_name(sa.name);
      switch (sa.kind) {
        case SpecAttr::Kind::Int:
        case SpecAttr::Kind::ElemType:
          a->set_type(onnx::AttributeProto::INT);
          a->set_i(sa.i);
          break;
        case SpecAttr::Kind::Ints:
          a->set_type(onnx::AttributeProto::INTS);
          for (int64_t v : sa.ints) a->add_ints(v);
          break;
        case SpecAttr::Kind::Float:
          a->set_type(onnx::AttributeProto::FLOAT);
          a->set_f(sa.f);
          break;
        case SpecAttr::Kind::String:
          a->set_type(onnx::AttributeProto::STRING);
          a->set_s(sa.s);
          break;
      }
    }
    for (const auto& [number, bytes] : s.extraFields)
      n->GetReflection()->MutableUnknownFields(n)->AddLengthDelimited(number, bytes);
  }
  return m.SerializeAsString();
}

}  // namespace partex::testmodels
