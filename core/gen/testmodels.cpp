#include "gen/testmodels.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace partex::testmodels {

namespace {

/// A dimension: a value, or a symbol when `param` is set.
struct Dim {
  int64_t value = 0;
  const char* param = nullptr;
  Dim(int64_t v) : value(v) {}      // NOLINT: implicit by design
  Dim(const char* p) : param(p) {}  // NOLINT: implicit by design
};

void setType(onnx::ValueInfoProto* vi, int32_t elem, std::initializer_list<Dim> dims, bool withShape = true) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!withShape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (d.param)
      dim->set_dim_param(d.param);
    else
      dim->set_dim_value(d.value);
  }
}

void addAttr(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void addAttr(onnx::NodeProto* n, const char* name, std::initializer_list<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void addAttrFloat(onnx::NodeProto* n, const char* name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void addAttrFloats(onnx::NodeProto* n, const char* name, std::initializer_list<float> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

onnx::GraphProto* addGraphAttr(onnx::NodeProto* n, const char* name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  g->set_name(name);
  return g;
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const char* op, std::initializer_list<const char*> ins,
                         std::initializer_list<const char*> outs, const char* name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  if (name && *name) n->set_name(name);
  for (const char* i : ins) n->add_input(i);
  for (const char* o : outs) n->add_output(o);
  return n;
}

onnx::ValueInfoProto* addInput(onnx::GraphProto* g, const char* name, int32_t elem, std::initializer_list<Dim> dims) {
  auto* vi = g->add_input();
  vi->set_name(name);
  setType(vi, elem, dims);
  return vi;
}

onnx::ValueInfoProto* addOutput(onnx::GraphProto* g, const char* name, int32_t elem, std::initializer_list<Dim> dims,
                                bool withShape = true) {
  auto* vi = g->add_output();
  vi->set_name(name);
  setType(vi, elem, dims, withShape);
  return vi;
}

void addInitFloat(onnx::GraphProto* g, const char* name, std::initializer_list<int64_t> dims, float fill) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(fill);
}

void addInitInt64(onnx::GraphProto* g, const char* name, std::initializer_list<int64_t> dims,
                  std::initializer_list<int64_t> values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

/// Constant node with an int64 tensor value.
onnx::NodeProto* addConstInt64(onnx::GraphProto* g, const char* out, std::initializer_list<int64_t> dims,
                               std::initializer_list<int64_t> values) {
  auto* n = addNode(g, "Constant", {}, {out});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return n;
}

struct Model {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  explicit Model(int64_t opset = 13, int64_t ir = 8) {
    m.set_ir_version(ir);
    m.set_producer_name("partex-testmodels");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
constexpr int32_t kBool = onnx::TensorProto::BOOL;

Model tinyModel(int64_t opset, int64_t ir) {
  Model m(opset, ir);
  addInput(m.g, "x", kFloat, {1, 3, 8, 8});
  addInitFloat(m.g, "bias", {1, 3, 1, 1}, 0.5f);
  addNode(m.g, "Relu", {"x"}, {"r"}, "relu");
  addNode(m.g, "Add", {"r", "bias"}, {"y"}, "add");
  addOutput(m.g, "y", kFloat, {1, 3, 8, 8});
  return m;
}

}  // namespace

std::string tiny() {
  return tinyModel(13, 8).bytes();
}
std::string withIrVersion(int64_t irVersion) {
  return tinyModel(13, irVersion).bytes();
}
std::string withOpset(int64_t opset) {
  return tinyModel(opset, 8).bytes();
}

std::string failingChecker() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "NoSuchOp", {"x"}, {"y"}, "bad");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withCycle() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Add", {"x", "b"}, {"a"}, "a_node");
  addNode(m.g, "Relu", {"a"}, {"b"}, "b_node");
  addNode(m.g, "Relu", {"a"}, {"y"}, "out_node");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withZeroStride() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 3, 8, 8});
  addInitFloat(m.g, "w", {4, 3, 3, 3}, 0.1f);
  auto* conv = addNode(m.g, "Conv", {"x", "w"}, {"y"}, "conv");
  addAttr(conv, "strides", {0, 1});
  addOutput(m.g, "y", kFloat, {1, 4, 6, 6});
  return m.bytes();
}

std::string withConvRankMismatch() {
  Model m;
  addInput(m.g, "x", kFloat, {8, 8});
  addInitFloat(m.g, "w", {4, 3, 3, 3}, 0.1f);
  addNode(m.g, "Conv", {"x", "w"}, {"y"}, "conv");
  addOutput(m.g, "y", kFloat, {1, 4, 6, 6});
  return m.bytes();
}

std::string withRankOneUnpoolIndices() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 1, 2, 2});
  addInput(m.g, "i", kInt64, {4});
  auto* unpool = addNode(m.g, "MaxUnpool", {"x", "i"}, {"y"}, "unpool");
  addAttr(unpool, "kernel_shape", {2, 2});
  addAttr(unpool, "strides", {2, 2});
  addOutput(m.g, "y", kFloat, {1, 1, 4, 4});
  return m.bytes();
}

std::string withRankOneStftSignal() {
  Model m(17);
  addInput(m.g, "x", kFloat, {16});
  addInitInt64(m.g, "step", {}, {4});
  addInitInt64(m.g, "length", {}, {8});
  addNode(m.g, "STFT", {"x", "step", "", "length"}, {"y"}, "stft");
  addOutput(m.g, "y", kFloat, {1, 3, 5, 2});
  return m.bytes();
}

std::string withLayerNormAxisBelowRank() {
  Model m(17);
  addInput(m.g, "x", kFloat, {2, 3});
  addInitFloat(m.g, "scale", {3}, 1.0f);
  addInitFloat(m.g, "bias", {3}, 0.0f);
  auto* norm = addNode(m.g, "LayerNormalization", {"x", "scale", "bias"}, {"y", "mean"}, "norm");
  addAttr(norm, "axis", int64_t{-3});
  addOutput(m.g, "y", kFloat, {2, 3});
  addOutput(m.g, "mean", kFloat, {2, 1});
  return m.bytes();
}

std::string withNegativeGatherNdStart() {
  Model m;
  addInput(m.g, "data", kFloat, {2, 3, 4});
  addInitInt64(m.g, "indices", {2, 1}, {0, 1});
  auto* gather = addNode(m.g, "GatherND", {"data", "indices"}, {"y"}, "gather");
  addAttr(gather, "batch_dims", int64_t{-2});
  addOutput(m.g, "y", kFloat, {2, 3, 4});
  return m.bytes();
}

std::string withZeroSequenceSplit() {
  Model m;
  addInput(m.g, "x", kFloat, {6});
  addInitInt64(m.g, "split", {}, {0});
  addNode(m.g, "SplitToSequence", {"x", "split"}, {"parts"}, "split");
  addAttr(addNode(m.g, "ConcatFromSequence", {"parts"}, {"y"}, "concat"), "axis", int64_t{0});
  addOutput(m.g, "y", kFloat, {6});
  return m.bytes();
}

std::string withEmptyRangeDelta() {
  Model m;
  addInitInt64(m.g, "start", {}, {0});
  addInitInt64(m.g, "limit", {}, {10});
  // Two bytes of raw data: the checker accepts the field, ParseData finds no whole int64 in it.
  addInitInt64(m.g, "delta", {}, {});
  m.g->mutable_initializer(2)->set_raw_data(std::string(2, '\0'));
  addNode(m.g, "Range", {"start", "limit", "delta"}, {"y"}, "range");
  // A length left open: with a known shape the importer folds the node to it and never asks ONNX.
  addOutput(m.g, "y", kInt64, {"n"});
  return m.bytes();
}

std::string withHugeExpandShape() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 3});
  addInput(m.g, "shape", kInt64, {int64_t{1} << 40});
  addNode(m.g, "Expand", {"x", "shape"}, {"y"}, "expand");
  addOutput(m.g, "y", kFloat, {"a", "b"});
  return m.bytes();
}

std::string withUntypedEyeLikeInput() {
  Model m;
  auto* ml = m.m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(2);
  auto* ex = m.m.add_opset_import();
  ex->set_domain("com.example");
  ex->set_version(1);
  addInput(m.g, "x", kFloat, {3, 3});
  addNode(m.g, "FancyOp", {"x"}, {"t"}, "fancy")->set_domain("com.example");
  // One output declared with its shape (only ONNX's whole-model pass infers it), one with symbols
  // (the importer's own per-node pass does too).
  addAttr(addNode(m.g, "EyeLike", {"t"}, {"eye"}, "eye"), "dtype", int64_t{kFloat});
  addAttr(addNode(m.g, "EyeLike", {"t"}, {"eye2"}, "eye2"), "dtype", int64_t{kFloat});
  auto* enc = addNode(m.g, "LabelEncoder", {"t"}, {"labels"}, "encoder");
  enc->set_domain("ai.onnx.ml");
  addAttrFloats(enc, "keys_floats", {0.0f, 1.0f});
  addAttrFloats(enc, "values_floats", {1.0f, 0.0f});
  addOutput(m.g, "eye", kFloat, {3, 3});
  addOutput(m.g, "eye2", kFloat, {"a", "b"});
  addOutput(m.g, "labels", kFloat, {"a", "b"});
  return m.bytes();
}

std::string withDanglingInput(const std::string& missing) {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Add", {"x"}, {"y"}, "add")->add_input(missing);
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string concatOfProducers() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4, 6});
  addInput(m.g, "z", kFloat, {1, 2, 6});
  addNode(m.g, "Sigmoid", {"x"}, {"a"}, "sigmoid");
  addNode(m.g, "Neg", {"x"}, {"b"}, "neg");
  addNode(m.g, "Relu", {"z"}, {"c"}, "relu");
  addAttr(addNode(m.g, "Concat", {"a", "b", "c"}, {"cat"}, "concat"), "axis", int64_t{1});
  addNode(m.g, "Tanh", {"cat"}, {"y"}, "tanh");
  addOutput(m.g, "y", kFloat, {1, 10, 6});
  return m.bytes();
}

std::string withSymbolicDims() {
  Model m;
  addInput(m.g, "x", kFloat, {"N", 3, "H", "W"});
  addInitFloat(m.g, "w", {8, 3, 3, 3}, 0.1f);
  auto* conv = addNode(m.g, "Conv", {"x", "w"}, {"c"}, "conv");
  addAttr(conv, "pads", {1, 1, 1, 1});
  addAttr(conv, "kernel_shape", {3, 3});
  addNode(m.g, "Relu", {"c"}, {"r"}, "relu");
  addNode(m.g, "GlobalAveragePool", {"r"}, {"p"}, "pool");
  addNode(m.g, "Flatten", {"p"}, {"y"}, "flatten");
  addOutput(m.g, "y", kFloat, {"N", 8});
  return m.bytes();
}

std::string withExternalData(const std::string& location, const std::string& offset, const std::string& length) {
  Model m;
  addInput(m.g, "x", kFloat, {1, 3, 8, 8});
  auto* t = m.g->add_initializer();
  t->set_name("W");
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 3, 3}) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (!offset.empty()) add("offset", offset);
  if (!length.empty()) add("length", length);
  addNode(m.g, "Conv", {"x", "W"}, {"y"}, "conv");
  addOutput(m.g, "y", kFloat, {1, 4, 6, 6});
  return m.bytes();
}

std::string withWeightData() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addInput(m.g, "z", kFloat, {5000});
  addInput(m.g, "u", kFloat, {80, 64});
  auto rawFloats = [&](const char* name, std::initializer_list<int64_t> dims, float scale, float offset) {
    auto* t = m.g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    std::string raw(static_cast<size_t>(n) * 4, '\0');
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(i) * scale + offset;
      std::memcpy(raw.data() + i * 4, &v, 4);
    }
    t->set_raw_data(raw);
  };
  rawFloats("Wraw", {4, 4}, 0.25f, -1.0f);
  rawFloats("big", {64, 80}, 0.001f, 0.0f);
  auto* b = m.g->add_initializer();
  b->set_name("Bfield");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(4);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) b->add_float_data(v);
  addNode(m.g, "Identity", {"Wraw"}, {"Wid"}, "id");
  addNode(m.g, "Mul", {"Bfield", "Bfield"}, {"Bsq"}, "square");
  auto cos = [&](const char* shapeName, std::initializer_list<int64_t> dims, const char* out, float value) {
    addConstInt64(m.g, shapeName, {static_cast<int64_t>(dims.size())}, dims);
    auto* n = addNode(m.g, "ConstantOfShape", {shapeName}, {out});
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(1);
    t->add_float_data(value);
  };
  cos("cos_shape", {4, 4}, "Wcos", 0.5f);
  cos("big_shape", {100, 50}, "Wbig", 0.25f);
  addConstInt64(m.g, "flat_shape", {1}, {5000});
  addNode(m.g, "Reshape", {"Wbig", "flat_shape"}, {"Wflat"}, "flatten_weight");
  auto* tr = addNode(m.g, "Transpose", {"big"}, {"bigT"}, "transpose_weight");
  addAttr(tr, "perm", {1, 0});
  addNode(m.g, "MatMul", {"x", "Wid"}, {"m1"}, "mm1");
  addNode(m.g, "Add", {"m1", "Bsq"}, {"a1"}, "add1");
  addNode(m.g, "MatMul", {"a1", "Wcos"}, {"y"}, "mm2");
  addNode(m.g, "Add", {"z", "Wflat"}, {"y2"}, "add2");
  addNode(m.g, "Add", {"u", "bigT"}, {"y3"}, "add3");
  addNode(m.g, "MatMul", {"x", "Wraw"}, {"y4"}, "mm0");
  addOutput(m.g, "y", kFloat, {1, 4});
  addOutput(m.g, "y2", kFloat, {5000});
  addOutput(m.g, "y3", kFloat, {80, 64});
  addOutput(m.g, "y4", kFloat, {1, 4});
  return m.bytes();
}

std::string withReshapeByInput() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 3, 4});
  addInput(m.g, "shape", kInt64, {2});
  addNode(m.g, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  addNode(m.g, "Relu", {"y"}, {"z"}, "relu");
  addOutput(m.g, "z", kFloat, {6, 4});
  return m.bytes();
}

std::string withIf() {
  Model m;
  addInput(m.g, "cond", kBool, {});
  addInput(m.g, "x", kFloat, {1, 4});
  auto* node = addNode(m.g, "If", {"cond"}, {"y"}, "if");
  auto* thenG = addGraphAttr(node, "then_branch");
  addNode(thenG, "Relu", {"x"}, {"t_out"}, "then_relu");
  addOutput(thenG, "t_out", kFloat, {1, 4});
  auto* elseG = addGraphAttr(node, "else_branch");
  addNode(elseG, "Neg", {"x"}, {"e_out"}, "else_neg");
  addOutput(elseG, "e_out", kFloat, {1, 4});
  addNode(m.g, "Relu", {"y"}, {"z"}, "after");
  addOutput(m.g, "z", kFloat, {1, 4});
  return m.bytes();
}

std::string withLocalFunctions() {
  Model m;
  auto* o = m.m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  auto function = [&](const char* name, std::initializer_list<const char*> ins, const char* out) {
    auto* f = m.m.add_functions();
    f->set_name(name);
    f->set_domain("local");
    for (const char* i : ins) f->add_input(i);
    f->add_output(out);
    auto* fo = f->add_opset_import();
    fo->set_domain("");
    fo->set_version(13);
    auto* lo = f->add_opset_import();
    lo->set_domain("local");
    lo->set_version(1);
    return f;
  };
  auto bodyNode = [](onnx::FunctionProto* f, const char* op, std::initializer_list<const char*> ins, const char* out,
                     const char* name, const char* domain = "") {
    auto* n = f->add_node();
    n->set_op_type(op);
    n->set_domain(domain);
    n->set_name(name);
    for (const char* i : ins) n->add_input(i);
    n->add_output(out);
  };
  auto* block = function("Block", {"x", "w"}, "y");
  bodyNode(block, "Mul", {"x", "w"}, "a", "scale");
  bodyNode(block, "Add", {"a", "w"}, "b", "shift");
  bodyNode(block, "Relu", {"b"}, "y", "act");
  auto* pair = function("Pair", {"x", "w"}, "y");
  bodyNode(pair, "Block", {"x", "w"}, "p", "first", "local");
  bodyNode(pair, "Block", {"p", "w"}, "y", "second", "local");
  addInput(m.g, "x", kFloat, {1, 4});
  addInitFloat(m.g, "w", {1, 4}, 0.5f);
  addNode(m.g, "Pair", {"x", "w"}, {"h0"}, "pair0")->set_domain("local");
  addNode(m.g, "Block", {"h0", "w"}, {"h1"}, "block1")->set_domain("local");
  addNode(m.g, "Sigmoid", {"h1"}, {"y"}, "head");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withSelfCallingFunction() {
  Model m;
  auto* o = m.m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  auto* f = m.m.add_functions();
  f->set_name("Again");
  f->set_domain("local");
  f->add_input("x");
  f->add_output("y");
  for (const char* d : {"", "local"}) {
    auto* fo = f->add_opset_import();
    fo->set_domain(d);
    fo->set_version(std::string(d).empty() ? 13 : 1);
  }
  auto* n = f->add_node();
  n->set_op_type("Again");
  n->set_domain("local");
  n->set_name("again");
  n->add_input("x");
  n->add_output("y");
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Again", {"x"}, {"y"}, "call")->set_domain("local");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withLoop() {
  Model m;
  addInput(m.g, "v0", kFloat, {1, 4});
  addInitInt64(m.g, "trips", {}, {3});
  auto* t = m.g->add_initializer();
  t->set_name("keep_going");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  addInitFloat(m.g, "w", {1, 4}, 1.0f);
  auto* node = addNode(m.g, "Loop", {"trips", "keep_going", "v0"}, {"v_final"}, "loop");
  auto* body = addGraphAttr(node, "body");
  addInput(body, "iter", kInt64, {});
  addInput(body, "cond_in", kBool, {});
  addInput(body, "v_in", kFloat, {1, 4});
  addNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  addNode(body, "Add", {"v_in", "w"}, {"v_out"}, "accumulate");
  addOutput(body, "cond_out", kBool, {});
  addOutput(body, "v_out", kFloat, {1, 4});
  addNode(m.g, "Relu", {"v_final"}, {"y"}, "after");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withFixedBranch() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 80});
  addInput(m.g, "cond", kBool, {});
  addInitFloat(m.g, "w", {100, 80}, 0.25f);
  auto* ifNode = addNode(m.g, "If", {"cond"}, {"y"}, "choose");
  auto* thenG = addGraphAttr(ifNode, "then_branch");
  addInitInt64(thenG, "starts", {1}, {0});
  addInitInt64(thenG, "ends", {1}, {60});
  addInitInt64(thenG, "axes", {1}, {0});
  addNode(thenG, "Slice", {"w", "starts", "ends", "axes"}, {"rows"}, "rows_of_w");
  auto* gemm = addNode(thenG, "Gemm", {"x", "rows"}, {"t_out"}, "project");
  addAttr(gemm, "transB", int64_t{1});
  addOutput(thenG, "t_out", kFloat, {2, 60});
  auto* elseG = addGraphAttr(ifNode, "else_branch");
  addInitFloat(elseG, "two", {}, 2.0f);
  addInitFloat(elseG, "eps", {}, 1e-5f);
  addAttr(addNode(elseG, "ReduceMean", {"x"}, {"mean"}, "mean"), "axes", {-1});
  addNode(elseG, "Sub", {"x", "mean"}, {"d"}, "centre");
  addNode(elseG, "Pow", {"d", "two"}, {"sq"}, "square");
  addAttr(addNode(elseG, "ReduceMean", {"sq"}, {"var"}, "variance"), "axes", {-1});
  addNode(elseG, "Add", {"var", "eps"}, {"ve"}, "add_eps");
  addNode(elseG, "Sqrt", {"ve"}, {"sd"}, "deviation");
  addNode(elseG, "Div", {"d", "sd"}, {"e_out"}, "normalise");
  addOutput(elseG, "e_out", kFloat, {2, 80});
  addOutput(m.g, "y", kFloat, {2, Dim("n")});
  return m.bytes();
}

std::string withControlFlow() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 3});
  addInput(m.g, "cond", kBool, {});
  addInput(m.g, "n", kInt64, {});
  addInitFloat(m.g, "w", {3}, 0.25f);
  addNode(m.g, "Mul", {"x", "x"}, {"a"}, "square");
  // If: both branches read outer values ('a' computed, 'w' a weight, 'x' an input).
  auto* ifNode = addNode(m.g, "If", {"cond"}, {"y_if"}, "choose");
  auto* thenG = addGraphAttr(ifNode, "then_branch");
  addNode(thenG, "Add", {"a", "w"}, {"t_out"}, "then_add");
  addOutput(thenG, "t_out", kFloat, {2, 3});
  auto* elseG = addGraphAttr(ifNode, "else_branch");
  addNode(elseG, "Sub", {"x", "a"}, {"e_out"}, "else_sub");
  addOutput(elseG, "e_out", kFloat, {2, 3});
  // Loop: n iterations (no condition input), carried 's', scan output 'u' per iteration; the body holds
  // an If of its own whose branches read the body's weight 'half', its value 'f' and the outer 'a'.
  auto* loop = addNode(m.g, "Loop", {"n", "", "x"}, {"s_final", "scans"}, "iterate");
  auto* body = addGraphAttr(loop, "body");
  addInput(body, "i", kInt64, {});
  addInput(body, "c_in", kBool, {});
  addInput(body, "s_in", kFloat, {2, 3});
  addInitFloat(body, "half", {}, 0.5f);
  addInitInt64(body, "one", {}, {1});
  auto* cast = addNode(body, "Cast", {"i"}, {"f"}, "to_float");
  addAttr(cast, "to", int64_t{kFloat});
  addNode(body, "Add", {"s_in", "a"}, {"t"}, "add_outer");
  addNode(body, "Greater", {"i", "one"}, {"late"}, "is_late");
  auto* inner = addNode(body, "If", {"late"}, {"u"}, "inner_if");
  auto* innerThen = addGraphAttr(inner, "then_branch");
  addNode(innerThen, "Mul", {"t", "half"}, {"it_out"}, "halve");
  addOutput(innerThen, "it_out", kFloat, {2, 3});
  auto* innerElse = addGraphAttr(inner, "else_branch");
  addNode(innerElse, "Add", {"t", "f"}, {"ie_sum"}, "add_iteration");
  // Reads 'a' two scopes out (a - a = 0: the value is unchanged, the path is exercised).
  addNode(innerElse, "Sub", {"a", "a"}, {"ie_zero"}, "grandparent_read");
  addNode(innerElse, "Add", {"ie_sum", "ie_zero"}, {"ie_out"}, "add_zero");
  addOutput(innerElse, "ie_out", kFloat, {2, 3});
  addNode(body, "Identity", {"c_in"}, {"c_out"}, "keep_going");
  addNode(body, "Identity", {"u"}, {"scan_u"}, "scan_copy");
  addOutput(body, "c_out", kBool, {});
  addOutput(body, "u", kFloat, {2, 3});
  addOutput(body, "scan_u", kFloat, {2, 3});
  // A while loop (no trip count): k doubles while it stays below the outer weight 'limit'.
  addInitFloat(m.g, "k0", {}, 1.0f);
  addInitFloat(m.g, "limit", {}, 100.0f);
  addInitFloat(m.g, "two", {}, 2.0f);
  auto* cond0 = m.g->add_initializer();
  cond0->set_name("go");
  cond0->set_data_type(onnx::TensorProto::BOOL);
  cond0->add_int32_data(1);
  auto* whileLoop = addNode(m.g, "Loop", {"", "go", "k0"}, {"k_final", "ks"}, "double_until");
  auto* wbody = addGraphAttr(whileLoop, "body");
  addInput(wbody, "j", kInt64, {});
  addInput(wbody, "go_in", kBool, {});
  addInput(wbody, "k_in", kFloat, {});
  addNode(wbody, "Mul", {"k_in", "two"}, {"k_out"}, "double");
  addNode(wbody, "Less", {"k_out", "limit"}, {"go_out"}, "below_limit");
  addNode(wbody, "Identity", {"k_out"}, {"k_scan"}, "record");
  addOutput(wbody, "go_out", kBool, {});
  addOutput(wbody, "k_out", kFloat, {});
  addOutput(wbody, "k_scan", kFloat, {});
  // Three iterations that swap two carried values (each body output is the other's input).
  addInitInt64(m.g, "three", {}, {3});
  auto* swapLoop = addNode(m.g, "Loop", {"three", "", "k0", "two"}, {"p_end", "q_end"}, "swap");
  auto* sbody = addGraphAttr(swapLoop, "body");
  addInput(sbody, "si", kInt64, {});
  addInput(sbody, "sc_in", kBool, {});
  addInput(sbody, "p_in", kFloat, {});
  addInput(sbody, "q_in", kFloat, {});
  addNode(sbody, "Identity", {"sc_in"}, {"sc_out"}, "swap_keep");
  addOutput(sbody, "sc_out", kBool, {});
  addOutput(sbody, "q_in", kFloat, {});
  addOutput(sbody, "p_in", kFloat, {});
  addOutput(m.g, "y_if", kFloat, {2, 3});
  addOutput(m.g, "s_final", kFloat, {2, 3});
  addOutput(m.g, "scans", kFloat, {"trips", 2, 3});
  addOutput(m.g, "k_final", kFloat, {});
  addOutput(m.g, "ks", kFloat, {"doublings"});
  addOutput(m.g, "p_end", kFloat, {});
  addOutput(m.g, "q_end", kFloat, {});
  return m.bytes();
}

std::string withInvariantLoop() {
  Model m;
  addInput(m.g, "n", kInt64, {});
  addInput(m.g, "a", kFloat, {2, 3});
  addInput(m.g, "w", kFloat, {3, 2});
  addInput(m.g, "s0", kFloat, {2, 2});
  auto* loop = addNode(m.g, "Loop", {"n", "", "s0", "w"}, {"s_final", "w_final", "ts"}, "accumulate");
  auto* body = addGraphAttr(loop, "body");
  addInput(body, "i", kInt64, {});
  addInput(body, "c_in", kBool, {});
  addInput(body, "s_in", kFloat, {2, 2});
  addInput(body, "w_in", kFloat, {3, 2});
  addNode(body, "Transpose", {"w_in"}, {"wt"}, "transpose_w");
  addNode(body, "Transpose", {"wt"}, {"wtt"}, "transpose_back");
  addNode(body, "MatMul", {"a", "wtt"}, {"aw"}, "outer_times_w");
  auto* cast = addNode(body, "Cast", {"i"}, {"f"}, "to_float");
  addAttr(cast, "to", int64_t{kFloat});
  addNode(body, "Mul", {"aw", "f"}, {"t"}, "scale");
  addNode(body, "Add", {"s_in", "t"}, {"s_out"}, "accumulate_t");
  addNode(body, "Identity", {"c_in"}, {"c_out"}, "keep_going");
  addOutput(body, "c_out", kBool, {});
  addOutput(body, "s_out", kFloat, {2, 2});
  addOutput(body, "w_in", kFloat, {3, 2});
  addOutput(body, "t", kFloat, {2, 2});
  addOutput(m.g, "s_final", kFloat, {2, 2});
  addOutput(m.g, "w_final", kFloat, {3, 2});
  addOutput(m.g, "ts", kFloat, {"trips", 2, 2});
  return m.bytes();
}

std::string withScan() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 4});
  addInitFloat(m.g, "s0", {2}, 0.0f);
  auto* scan = addNode(m.g, "Scan", {"s0", "x"}, {"s_end", "y"}, "reverse_cumsum");
  addAttr(scan, "num_scan_inputs", int64_t{1});
  addAttr(scan, "scan_input_axes", {1});
  addAttr(scan, "scan_input_directions", {1});
  addAttr(scan, "scan_output_axes", {1});
  addAttr(scan, "scan_output_directions", {1});
  auto* body = addGraphAttr(scan, "body");
  addInput(body, "s_in", kFloat, {2});
  addInput(body, "col", kFloat, {2});
  addNode(body, "Add", {"s_in", "col"}, {"s_out"}, "accumulate");
  addNode(body, "Identity", {"s_out"}, {"y_col"}, "emit");
  addOutput(body, "s_out", kFloat, {2});
  addOutput(body, "y_col", kFloat, {2});
  addOutput(m.g, "s_end", kFloat, {2});
  addOutput(m.g, "y", kFloat, {2, 4});
  return m.bytes();
}

std::string withUnknownDomain() {
  Model m;
  auto* o = m.m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Relu", {"x"}, {"a"}, "before");
  auto* fancy = addNode(m.g, "FancyOp", {"a"}, {"b"}, "fancy");
  fancy->set_domain("com.example");
  addAttr(fancy, "strength", int64_t{3});
  auto* vi = m.g->add_value_info();
  vi->set_name("b");
  setType(vi, kFloat, {1, 4});
  addNode(m.g, "Relu", {"b"}, {"y"}, "after");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string withShapeChain() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 16, 64});
  // Shape arithmetic: new shape [batch, seq, 4, 16] from Shape(x).
  addNode(m.g, "Shape", {"x"}, {"s"}, "shape");
  addConstInt64(m.g, "i0", {}, {0});
  addConstInt64(m.g, "i1", {}, {1});
  addConstInt64(m.g, "i2", {}, {2});
  addNode(m.g, "Gather", {"s", "i0"}, {"batch"});
  addNode(m.g, "Gather", {"s", "i1"}, {"seq"});
  addNode(m.g, "Gather", {"s", "i2"}, {"hidden"});
  addConstInt64(m.g, "axes0", {1}, {0});
  addNode(m.g, "Unsqueeze", {"batch", "axes0"}, {"batch_u"});
  addNode(m.g, "Unsqueeze", {"seq", "axes0"}, {"seq_u"});
  addConstInt64(m.g, "heads", {1}, {4});
  addConstInt64(m.g, "two", {}, {2});
  addNode(m.g, "Div", {"hidden", "heads_s"}, {"head_dim"});
  addConstInt64(m.g, "heads_s", {}, {4});
  addNode(m.g, "Unsqueeze", {"head_dim", "axes0"}, {"head_dim_u"});
  auto* cat = addNode(m.g, "Concat", {"batch_u", "seq_u", "heads", "head_dim_u"}, {"new_shape"});
  addAttr(cat, "axis", int64_t{0});
  addNode(m.g, "Reshape", {"x", "new_shape"}, {"r"}, "reshape");
  auto* tr = addNode(m.g, "Transpose", {"r"}, {"q"}, "transpose_q");
  addAttr(tr, "perm", {0, 2, 1, 3});
  auto* tk = addNode(m.g, "Transpose", {"q"}, {"k"}, "transpose_k");
  addAttr(tk, "perm", {0, 1, 3, 2});
  addNode(m.g, "MatMul", {"q", "k"}, {"scores"}, "scores");
  // A weight made by ConstantOfShape (like the light_* models).
  addConstInt64(m.g, "w_shape", {2}, {64, 64});
  auto* cos = addNode(m.g, "ConstantOfShape", {"w_shape"}, {"w"});
  auto* va = cos->add_attribute();
  va->set_name("value");
  va->set_type(onnx::AttributeProto::TENSOR);
  va->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  va->mutable_t()->add_dims(1);
  va->mutable_t()->add_float_data(0.02f);
  addNode(m.g, "MatMul", {"x", "w"}, {"proj"}, "proj");
  // Expand, Tile and Slice with computed shape inputs.
  addConstInt64(m.g, "one", {1}, {1});
  auto* cat1 = addNode(m.g, "Concat", {"one", "seq_u", "one"}, {"expand_shape"});
  addAttr(cat1, "axis", int64_t{0});
  addInput(m.g, "bias", kFloat, {1, 1, 1});
  addNode(m.g, "Expand", {"bias", "expand_shape"}, {"bias_e"}, "expand");
  addNode(m.g, "Mul", {"seq_u", "two_1"}, {"tile_mid"});
  addConstInt64(m.g, "two_1", {1}, {2});
  addNode(m.g, "Div", {"tile_mid", "seq_u"}, {"tile_rep"});
  auto* cat2 = addNode(m.g, "Concat", {"one", "tile_rep", "one"}, {"repeats"});
  addAttr(cat2, "axis", int64_t{0});
  addNode(m.g, "Tile", {"proj", "repeats"}, {"tiled"}, "tile");
  addNode(m.g, "Div", {"hidden", "two"}, {"half"});
  addNode(m.g, "Unsqueeze", {"half", "axes0"}, {"half_u"});
  addConstInt64(m.g, "zero1", {1}, {0});
  addConstInt64(m.g, "axis2", {1}, {2});
  addNode(m.g, "Slice", {"x", "zero1", "half_u", "axis2"}, {"sliced"}, "slice");
  addOutput(m.g, "scores", kFloat, {"b", "h", "q", "k"});
  // Resize and Pad with computed scales and pads on a 4-D view of x.
  addConstInt64(m.g, "eight", {1}, {8});
  auto* cat3 = addNode(m.g, "Concat", {"batch_u", "seq_u", "eight", "eight"}, {"image_shape"});
  addAttr(cat3, "axis", int64_t{0});
  addNode(m.g, "Reshape", {"x", "image_shape"}, {"image"}, "to_image");
  auto addConstFloat = [&](const char* out, std::initializer_list<float> values) {
    auto* n = addNode(m.g, "Constant", {}, {out});
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) a->mutable_t()->add_float_data(v);
  };
  addConstFloat("keep_scale", {1.0f, 1.0f});
  addConstFloat("up_scale", {2.0f, 2.0f});
  auto* cat4 = addNode(m.g, "Concat", {"keep_scale", "up_scale"}, {"scales"});
  addAttr(cat4, "axis", int64_t{0});
  addNode(m.g, "Resize", {"image", "", "scales"}, {"resized"}, "resize");
  addConstInt64(m.g, "zero2", {2}, {0, 0});
  addNode(m.g, "Mul", {"zero2", "zero2"}, {"zero2b"});
  addNode(m.g, "Add", {"zero2b", "one"}, {"one2"});
  auto* cat5 = addNode(m.g, "Concat", {"zero2", "one2", "zero2", "one2"}, {"pads"});
  addAttr(cat5, "axis", int64_t{0});
  addNode(m.g, "Pad", {"resized", "pads"}, {"padded"}, "pad");
  addOutput(m.g, "padded", kFloat, {"p0", "p1", "p2", "p3"});
  // Symbolic output dims: the shapes must come from the importer, not from these declarations.
  addOutput(m.g, "bias_e", kFloat, {"e0", "e1", "e2"});
  addOutput(m.g, "tiled", kFloat, {"t0", "t1", "t2"});
  addOutput(m.g, "sliced", kFloat, {"s0", "s1", "s2"});
  return m.bytes();
}

std::string withFoldCases(std::vector<std::string>* outputs) {
  Model m;
  auto floats = [&](const char* name, std::initializer_list<int64_t> dims, std::initializer_list<float> v) {
    auto* t = m.g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  floats("f_one", {1}, {1.0f});
  floats("f_nan", {1}, {nan});
  floats("f_v", {6}, {nan, -2.5f, -0.5f, 0.0f, 1.5f, 4.0f});
  floats("f_a", {4}, {-7.5f, 7.5f, -7.5f, 1.5f});
  floats("f_b", {4}, {2.0f, -2.0f, -2.0f, 0.5f});
  floats("f_lo", {}, {-1.0f});
  floats("f_hi", {}, {2.0f});
  floats("f_two", {}, {2.0f});
  addInitInt64(m.g, "i_a", {6}, {-7, 7, -7, 7, 0, 5});
  addInitInt64(m.g, "i_b", {6}, {3, -3, -3, 3, 2, 5});
  addInitInt64(m.g, "i_lo", {}, {-5});
  addInitInt64(m.g, "i_hi", {}, {5});
  addInitInt64(m.g, "i_23", {2}, {2, 3});
  addInitInt64(m.g, "i_idx", {3}, {5, -1, 0});
  addInitInt64(m.g, "i_start", {1}, {1});
  addInitInt64(m.g, "i_end", {1}, {5});
  addInitInt64(m.g, "i_axes", {1}, {0});
  addInitInt64(m.g, "i_step", {1}, {2});
  addInitInt64(m.g, "i_rep", {1}, {2});
  addInitInt64(m.g, "i_r0", {}, {10});
  addInitInt64(m.g, "i_r1", {}, {-3});
  addInitInt64(m.g, "i_r2", {}, {-4});
  addInitInt64(m.g, "i_shape", {2}, {3, 4});
  std::vector<std::string> outs;
  std::map<std::string, std::vector<int64_t>> shapes;
  auto node = [&](const char* op, std::initializer_list<const char*> ins, const char* out, std::vector<int64_t> dims) {
    outs.push_back(out);
    shapes[out] = std::move(dims);
    return addNode(m.g, op, ins, {out}, out);
  };
  node("Max", {"f_one", "f_nan"}, "max_1_nan", {1});
  node("Max", {"f_nan", "f_one"}, "max_nan_1", {1});
  node("Min", {"f_one", "f_nan"}, "min_1_nan", {1});
  node("Min", {"f_nan", "f_one"}, "min_nan_1", {1});
  node("Max", {"f_v", "f_one", "f_lo"}, "max3", {6});
  node("Mod", {"i_a", "i_b"}, "mod_int", {6});
  addAttr(node("Mod", {"i_a", "i_b"}, "fmod_int", {6}), "fmod", 1);
  addAttr(node("Mod", {"f_a", "f_b"}, "fmod_float", {4}), "fmod", 1);
  node("Div", {"i_a", "i_b"}, "div_int", {6});
  node("Div", {"f_a", "f_b"}, "div_float", {4});
  node("Sub", {"i_a", "i_b"}, "sub_int", {6});
  node("Mul", {"f_v", "f_one"}, "mul_nan", {6});
  node("Pow", {"f_a", "f_two"}, "pow", {4});
  node("Sum", {"f_a", "f_b", "f_a"}, "sum3", {4});
  node("Mean", {"f_a", "f_b"}, "mean2", {4});
  node("Clip", {"f_a", "f_lo", "f_hi"}, "clip_float", {4});
  node("Clip", {"f_v", "f_lo", "f_hi"}, "clip_nan", {6});
  node("Clip", {"i_a", "i_lo", "i_hi"}, "clip_int", {6});
  node("Relu", {"f_a"}, "relu", {4});
  node("Relu", {"f_v"}, "relu_nan", {6});
  node("Sqrt", {"f_b"}, "sqrt", {4});
  node("Exp", {"f_a"}, "exp", {4});
  node("Sigmoid", {"f_a"}, "sigmoid", {4});
  node("Tanh", {"f_a"}, "tanh", {4});
  node("Neg", {"i_a"}, "neg", {6});
  node("Abs", {"f_v"}, "abs", {6});
  node("Floor", {"f_a"}, "floor", {4});
  node("Round", {"f_v"}, "round", {6});
  node("Sign", {"f_v"}, "sign", {6});
  node("Reciprocal", {"f_b"}, "reciprocal", {4});
  node("Log", {"f_b"}, "log", {4});
  addAttr(node("ReduceMax", {"f_v"}, "reducemax", {}), "keepdims", 0);
  node("ReduceSum", {"i_a"}, "reducesum", {1});
  addAttr(node("Cast", {"f_v"}, "cast_int", {6}), "to", onnx::TensorProto::INT32);
  addAttr(node("Cast", {"i_a"}, "cast_float", {6}), "to", onnx::TensorProto::FLOAT);
  node("Less", {"f_v", "f_one"}, "less", {6});
  node("Equal", {"i_a", "i_b"}, "equal", {6});
  node("Not", {"less"}, "not", {6});
  node("Where", {"less", "f_v", "f_nan"}, "where", {6});
  addAttr(node("Concat", {"i_a", "i_b"}, "concat", {12}), "axis", 0);
  addAttr(node("Gather", {"f_v", "i_idx"}, "gather", {3}), "axis", 0);
  node("Slice", {"f_v", "i_start", "i_end", "i_axes", "i_step"}, "slice", {2});
  node("Reshape", {"concat", "i_shape"}, "reshape", {3, 4});
  addAttr(node("Transpose", {"reshape"}, "transpose", {4, 3}), "perm", {1, 0});
  node("Expand", {"f_one", "i_23"}, "expand", {2, 3});
  node("Tile", {"f_a", "i_rep"}, "tile", {8});
  node("Range", {"i_r0", "i_r1", "i_r2"}, "range", {4});
  node("Unsqueeze", {"f_a", "i_axes"}, "unsqueeze", {1, 4});
  auto* split = addNode(m.g, "Split", {"i_a"}, {"split0", "split1"}, "split");
  addAttr(split, "axis", 0);
  for (const char* o : {"split0", "split1"}) {
    outs.push_back(o);
    shapes[o] = {3};
  }
  const std::set<std::string> ints{"mod_int", "fmod_int", "div_int",   "sub_int", "clip_int", "neg",   "reducesum",
                                   "concat",  "reshape",  "transpose", "range",   "split0",   "split1"};
  const std::set<std::string> bools{"less", "equal", "not"};
  for (const auto& o : outs) {
    auto* vi = addOutput(m.g, o.c_str(),
                         o == "cast_int"  ? onnx::TensorProto::INT32
                         : ints.count(o)  ? kInt64
                         : bools.count(o) ? kBool
                                          : kFloat,
                         {});
    for (int64_t d : shapes[o]) vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  }
  if (outputs) *outputs = outs;
  return m.bytes();
}

std::string withRandom() {
  Model m;
  addInput(m.g, "x", kFloat, {2, 3});
  auto* rn = addNode(m.g, "RandomNormal", {}, {"noise"}, "noise");
  addAttr(rn, "shape", {2, 3});
  addAttrFloat(rn, "scale", 0.1f);
  addNode(m.g, "Add", {"x", "noise"}, {"y"}, "add");
  addOutput(m.g, "y", kFloat, {2, 3});
  return m.bytes();
}

std::string withUnnamedAndDuplicateNames() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Relu", {"x"}, {"a"});            // unnamed: Relu_0
  addNode(m.g, "Relu", {"a"}, {"b"}, "Relu_3");  // a given name that an invented one would collide with
  addNode(m.g, "Neg", {"b"}, {"c"}, "dup");
  addNode(m.g, "Relu", {"c"}, {"d"});        // unnamed: Relu_3 is taken
  addNode(m.g, "Neg", {"d"}, {"y"}, "dup");  // duplicate given name
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string unsorted() {
  Model m;
  addInput(m.g, "x", kFloat, {1, 4});
  addNode(m.g, "Neg", {"c"}, {"y"}, "third");
  addNode(m.g, "Relu", {"b"}, {"c"}, "second");
  addNode(m.g, "Abs", {"x"}, {"b"}, "first");
  addOutput(m.g, "y", kFloat, {1, 4});
  return m.bytes();
}

std::string largeDag(int nodes) {
  Model m;
  addInput(m.g, "x", kFloat, {1, 64});
  addInitFloat(m.g, "c", {1, 64}, 0.5f);
  std::string prev2 = "x", prev1 = "x";
  static const char* const kOps[] = {"Relu", "Add", "Mul", "Sigmoid", "Sub"};
  for (int i = 0; i < nodes; ++i) {
    auto* n = m.g->add_node();
    const char* op = kOps[i % 5];
    n->set_op_type(op);
    const std::string out = "t" + std::to_string(i);
    if (op[0] == 'R' || (op[0] == 'S' && op[1] == 'i')) {
      n->add_input(prev1);
    } else {
      n->add_input(prev1);
      n->add_input(i % 7 == 0 ? std::string("c") : prev2);
    }
    n->add_output(out);
    prev2 = prev1;
    prev1 = out;
  }
  auto* vi = m.g->add_output();
  vi->set_name(prev1);
  setType(vi, kFloat, {1, 64});
  return m.bytes();
}

std::vector<std::pair<std::string, std::string>> all() {
  return {
      {"tiny.onnx", tiny()},
      {"ir99.onnx", withIrVersion(99)},
      {"opset18.onnx", withOpset(18)},
      {"checker.onnx", failingChecker()},
      {"cycle.onnx", withCycle()},
      {"dangling.onnx", withDanglingInput()},
      {"stride0.onnx", withZeroStride()},
      {"convrank.onnx", withConvRankMismatch()},
      {"unpoolrank.onnx", withRankOneUnpoolIndices()},
      {"stftrank.onnx", withRankOneStftSignal()},
      {"layernormaxis.onnx", withLayerNormAxisBelowRank()},
      {"gatherndstart.onnx", withNegativeGatherNdStart()},
      {"seqsplit.onnx", withZeroSequenceSplit()},
      {"rangedelta.onnx", withEmptyRangeDelta()},
      {"hugeexpand.onnx", withHugeExpandShape()},
      {"untypedeyelike.onnx", withUntypedEyeLikeInput()},
      {"symbolic.onnx", withSymbolicDims()},
      {"external.onnx", withExternalData("weights.bin")},
      {"weights.onnx", withWeightData()},
      {"if.onnx", withIf()},
      {"functions.onnx", withLocalFunctions()},
      {"loop.onnx", withLoop()},
      {"domain.onnx", withUnknownDomain()},
      {"shapes.onnx", withShapeChain()},
      {"foldcases.onnx", withFoldCases()},
      {"random.onnx", withRandom()},
      {"names.onnx", withUnnamedAndDuplicateNames()},
      {"unsorted.onnx", unsorted()},
      {"dag.onnx", largeDag(50)},
  };
}

}  // namespace partex::testmodels
