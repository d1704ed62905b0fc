// Models newer than libonnx 1.12 (IR 9/10, opsets 18 to 21): the importer reads them as IR 8 /
// opset 17 where that is exact, and refuses them with one line naming the operator or feature where
// it is not. Each rewrite is checked by running the imported model on the CPU backend against values
// computed here from the opset-18 definition. Also: a LayerNormalization that declares its Y output
// only, run by the executor (its kernel computes Mean and InvStdDev too).
#include <QtTest>

#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "cpu/cpu_backend.h"
#include "gen/modelspec.h"
#include "graphrun.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "sim/plan.h"
#include "testutil.h"

using namespace partex;
using testmodels::ModelSpec;
using testmodels::SpecAttr;
using testmodels::SpecNode;
using testmodels::SpecTensor;

namespace {

constexpr int32_t kFloat = 1, kInt64 = 7;

SpecTensor floatTensor(std::string name, std::vector<int64_t> dims) {
  SpecTensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  return t;
}

SpecTensor ints(std::string name, std::vector<int64_t> values, bool asConstantNode = false) {
  SpecTensor t;
  t.name = std::move(name);
  t.elemType = kInt64;
  t.dims = {static_cast<int64_t>(values.size())};
  t.ints = std::move(values);
  t.asConstantNode = asConstantNode;
  return t;
}

/// 0.25 * i - 3 + (i % 3) * 0.1: distinct values of both signs.
std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 3.0f + 0.1f * static_cast<float>(i % 3);
  return v;
}

int64_t numel(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

struct Output {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Imports `bytes` and runs it operator by operator on one CPU core, the float inputs filled by ramp().
/// Outputs by name; the graph (for its notes) in `graphOut`.
Result<std::map<std::string, Output>> run(const std::string& bytes, Graph* graphOut = nullptr) {
  auto g = importOnnxBytes(bytes, "modern.onnx");
  if (!g) return Error{g.message()};
  auto backend = makeCpuBackend();
  std::map<ValueId, Tensor> values;
  for (ValueId v = 0; v < static_cast<ValueId>(g->values.size()); ++v) {
    const Value& val = g->values[static_cast<size_t>(v)];
    if (val.consumers.empty()) continue;
    if (val.isGraphInput) {
      Tensor t;
      if (auto st = t.ensure(DType::Float32, val.shape); !st) return Error{st.message()};
      const auto r = ramp(numel(val.shape));
      std::copy(r.begin(), r.end(), t.data<float>());
      values[v] = std::move(t);
    } else if (val.isWeight) {
      auto t = leafTensor(*g, v, 1);
      if (!t) return Error{t.message()};
      values[v] = std::move(*t);
    }
  }
  if (auto st = test::runGraph(*g, *backend, "core0", values); !st) return Error{st.message()};
  std::map<std::string, Output> out;
  for (ValueId v : g->outputs) {
    const Tensor& t = values[v];
    if (t.dtype() != DType::Float32) return makeError("output is not float32");
    Output o;
    o.shape = t.shape();
    o.values.assign(t.data<float>(), t.data<float>() + t.numElements());
    out[g->values[static_cast<size_t>(v)].name] = std::move(o);
  }
  if (graphOut) *graphOut = std::move(*g);
  return out;
}

std::string importError(const std::string& bytes) {
  auto g = importOnnxBytes(bytes, "modern.onnx");
  return g.isOk() ? std::string("(imported)") : g.message();
}

bool close(const std::vector<float>& a, const std::vector<float>& b, std::string& why) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " values, expected " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-5f * std::max(1.0f, std::fabs(b[i]))) {
      why = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + ", expected " + std::to_string(b[i]);
      return false;
    }
  return true;
}

/// A model x[2,3,4] -> `node` -> y, opset `opset`, IR 10.
ModelSpec unary(SpecNode node, std::vector<int64_t> yDims, int64_t opset = 18) {
  ModelSpec m;
  m.irVersion = 10;
  m.opset = opset;
  m.inputs = {floatTensor("x", {2, 3, 4})};
  m.outputs = {floatTensor("y", std::move(yDims))};
  m.nodes = {std::move(node)};
  return m;
}

bool hasNote(const Graph& g, const std::string& part) {
  for (const auto& n : g.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestImportModern : public QObject {
  Q_OBJECT
 private slots:
  void irTenReadsAsEight();
  void irFeaturesRefused_data();
  void irFeaturesRefused();
  void reductionAxesInput_data();
  void reductionAxesInput();
  void padAxesInput();
  void splitNumOutputs_data();
  void splitNumOutputs();
  void splitOfUnknownSize();
  void resizeAxesAttribute();
  void typeOnlyBumps();
  void opsetRefusals_data();
  void opsetRefusals();
  void layerNormYOnlyInExecutor();
};

void TestImportModern::irTenReadsAsEight() {
  // IR 10, opset 17: x -> Relu -> y, nothing of IR 9/10 used.
  auto m = unary({"Relu", {"x"}, {"y"}, {}, "relu", {}}, {2, 3, 4}, 17);
  Graph g;
  auto r = run(testmodels::buildModel(m), &g);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(g.irVersion, int64_t{8});
  QVERIFY(g.warnings.empty());
  QVERIFY2(hasNote(g, "IR version 10 read as IR 8"), g.notes.empty() ? "no note" : g.notes[0].c_str());
  const auto x = ramp(24);
  std::vector<float> want(24);
  for (size_t i = 0; i < 24; ++i) want[i] = std::max(0.0f, x[i]);
  std::string why;
  QVERIFY2(close(r->at("y").values, want, why), why.c_str());
}

void TestImportModern::irFeaturesRefused_data() {
  QTest::addColumn<int>("what");
  QTest::addColumn<QString>("expected");
  QTest::newRow("float8 initializer") << 0 << "modern.onnx: IR version 10 model uses float8e4m3fn (initializer 'w')";
  QTest::newRow("Cast to int4") << 1 << "modern.onnx: IR version 10 model uses int4 (Cast 'cast')";
  QTest::newRow("function overload") << 2
                                     << "modern.onnx: IR version 10 model calls an overload of a local function "
                                        "(IR 10) in Relu 'relu'";
  QTest::newRow("IR 11") << 3 << "modern.onnx: unsupported IR version 11 (supported 3 to 10)";
}

void TestImportModern::irFeaturesRefused() {
  QFETCH(int, what);
  QFETCH(QString, expected);
  ModelSpec m = unary({"Relu", {"x"}, {"y"}, {}, "relu", {}}, {2, 3, 4}, 17);
  if (what == 0) {
    SpecTensor w = floatTensor("w", {2});
    w.elemType = 17;  // FLOAT8E4M3FN
    w.floats = {0, 0};
    m.initializers = {w};
  } else if (what == 1) {
    m.nodes.push_back({"Cast", {"x"}, {"c"}, {SpecAttr::integer("to", 22)}, "cast", {}});
  } else if (what == 2) {
    m.nodes[0].extraFields = {{8, "relu_v2"}};  // NodeProto.overload (onnx.proto of ONNX 1.16)
  } else {
    m.irVersion = 11;
  }
  const std::string e = importError(testmodels::buildModel(m));
  QVERIFY2(e.rfind(expected.toStdString(), 0) == 0, e.c_str());
  QVERIFY(e.find('\n') == std::string::npos);
}

void TestImportModern::reductionAxesInput_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<QList<qint64>>("axes");  // empty: an empty axes tensor; {99}: no axes input
  QTest::addColumn<int>("keepdims");
  QTest::addColumn<int>("noop");
  QTest::addColumn<bool>("constantNode");
  QTest::newRow("ReduceMean axes 1") << "ReduceMean" << QList<qint64>{1} << 1 << 0 << false;
  QTest::newRow("ReduceMax axes -1,0 no keepdims") << "ReduceMax" << QList<qint64>{-1, 0} << 0 << 0 << true;
  QTest::newRow("ReduceMin axes 2") << "ReduceMin" << QList<qint64>{2} << 1 << 0 << false;
  QTest::newRow("ReduceProd axes 0") << "ReduceProd" << QList<qint64>{0} << 0 << 0 << true;
  QTest::newRow("ReduceL1 axes 1,2") << "ReduceL1" << QList<qint64>{1, 2} << 1 << 0 << false;
  QTest::newRow("ReduceL2 axes 2") << "ReduceL2" << QList<qint64>{2} << 0 << 0 << false;
  QTest::newRow("ReduceSumSquare axes 1") << "ReduceSumSquare" << QList<qint64>{1} << 1 << 0 << false;
  QTest::newRow("ReduceLogSumExp axes 2") << "ReduceLogSumExp" << QList<qint64>{2} << 1 << 0 << true;
  QTest::newRow("ReduceLogSum of |x|+1 axes 0") << "ReduceLogSum" << QList<qint64>{0} << 1 << 0 << false;
  QTest::newRow("ReduceMean empty axes: all") << "ReduceMean" << QList<qint64>{} << 1 << 0 << false;
  QTest::newRow("ReduceMax empty axes, noop") << "ReduceMax" << QList<qint64>{} << 1 << 1 << false;
  QTest::newRow("ReduceL1 no axes input, noop") << "ReduceL1" << QList<qint64>{99} << 0 << 1 << false;
  QTest::newRow("ReduceMean no axes input: all") << "ReduceMean" << QList<qint64>{99} << 0 << 0 << false;
}

void TestImportModern::reductionAxesInput() {
  QFETCH(QString, op);
  QFETCH(QList<qint64>, axes);
  QFETCH(int, keepdims);
  QFETCH(int, noop);
  QFETCH(bool, constantNode);
  const std::vector<int64_t> xDims{2, 3, 4};
  const bool noInput = axes == QList<qint64>{99};
  std::vector<int64_t> axesV(axes.begin(), axes.end());
  if (noInput) axesV.clear();
  // The reduced axes, by the opset-18 definition.
  std::vector<bool> reduced(3, axesV.empty() && !noop);
  for (int64_t a : axesV) reduced[static_cast<size_t>(a < 0 ? a + 3 : a)] = true;
  const bool identity = axesV.empty() && noop;
  std::vector<int64_t> yDims;
  for (size_t d = 0; d < 3; ++d)
    if (!reduced[d] || identity)
      yDims.push_back(xDims[d]);
    else if (keepdims)
      yDims.push_back(1);
  ModelSpec m;
  m.irVersion = 10;
  m.opset = 18;
  m.inputs = {floatTensor("x", xDims)};
  m.outputs = {floatTensor("y", yDims)};
  std::string src = "x";
  if (op == "ReduceLogSum") {  // log of a sum of positive values
    m.nodes.push_back({"Abs", {"x"}, {"ax"}, {}, "abs", {}});
    m.initializers.push_back(floatTensor("one", {}));
    m.initializers.back().floats = {1.0f};
    m.nodes.push_back({"Add", {"ax", "one"}, {"xp"}, {}, "add", {}});
    src = "xp";
  }
  SpecNode n{op.toStdString(), {src}, {"y"}, {SpecAttr::integer("keepdims", keepdims)}, "reduce", {}};
  if (noop) n.attrs.push_back(SpecAttr::integer("noop_with_empty_axes", 1));
  if (!noInput) {
    m.initializers.push_back(ints("axes", axesV, constantNode));
    n.inputs.push_back("axes");
  }
  m.nodes.push_back(n);
  Graph g;
  auto r = run(testmodels::buildModel(m), &g);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY2(hasNote(g, "opset 18 of the default ONNX domain read as opset 17"),
           g.notes.empty() ? "" : g.notes[0].c_str());
  QVERIFY(g.warnings.empty());
  // The axes constant is gone with the input that read it.
  QCOMPARE(g.findValue("axes"), kNone);
  // Reference: x (or |x|+1) reduced over the marked axes.
  auto x = ramp(24);
  if (op == "ReduceLogSum")
    for (float& v : x) v = std::fabs(v) + 1.0f;
  std::vector<float> want;
  if (identity) {
    want = x;
  } else {
    std::map<int64_t, std::vector<double>> groups;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          const int64_t key = (reduced[0] ? 0 : i) * 100 + (reduced[1] ? 0 : j) * 10 + (reduced[2] ? 0 : k);
          groups[key].push_back(x[static_cast<size_t>((i * 3 + j) * 4 + k)]);
        }
    for (const auto& [key, vs] : groups) {
      double acc = 0;
      if (op == "ReduceMean") acc = std::accumulate(vs.begin(), vs.end(), 0.0) / static_cast<double>(vs.size());
      if (op == "ReduceMax") acc = *std::max_element(vs.begin(), vs.end());
      if (op == "ReduceMin") acc = *std::min_element(vs.begin(), vs.end());
      if (op == "ReduceProd") acc = std::accumulate(vs.begin(), vs.end(), 1.0, std::multiplies<>());
      if (op == "ReduceL1")
        for (double v : vs) acc += std::fabs(v);
      if (op == "ReduceL2" || op == "ReduceSumSquare")
        for (double v : vs) acc += v * v;
      if (op == "ReduceL2") acc = std::sqrt(acc);
      if (op == "ReduceLogSumExp") {
        for (double v : vs) acc += std::exp(v);
        acc = std::log(acc);
      }
      if (op == "ReduceLogSum") acc = std::log(std::accumulate(vs.begin(), vs.end(), 0.0));
      want.push_back(static_cast<float>(acc));
    }
  }
  const Output& y = r->at("y");
  QCOMPARE(y.shape, yDims);
  std::string why;
  QVERIFY2(close(y.values, want, why), why.c_str());
}

void TestImportModern::padAxesInput() {
  // Opset 18 Pad of x[2,3,4] on axes [-1, 1]: axis 2 gets 1 before and 2 after, axis 1 0 before and 1
  // after, with the value 0.5; axis 0 is not padded.
  ModelSpec m = unary({"Pad", {"x", "pads", "cv", "axes"}, {"y"}, {}, "pad", {}}, {2, 4, 7});
  m.initializers = {ints("pads", {1, 0, 2, 1}), floatTensor("cv", {}), ints("axes", {-1, 1}, true)};
  m.initializers[1].floats = {0.5f};
  Graph g;
  auto r = run(testmodels::buildModel(m), &g);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY(hasNote(g, "Pad: axes input spelled out into pads"));
  const auto x = ramp(24);
  std::vector<float> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 7; ++k) {
        const int64_t sj = j, sk = k - 1;
        want.push_back(sj < 3 && sk >= 0 && sk < 4 ? x[static_cast<size_t>((i * 3 + sj) * 4 + sk)] : 0.5f);
      }
  QCOMPARE(r->at("y").shape, (std::vector<int64_t>{2, 4, 7}));
  std::string why;
  QVERIFY2(close(r->at("y").values, want, why), why.c_str());
  // Without axes (an empty name): unchanged, at opset 19 and 21 too.
  for (int64_t opset : {18, 19, 21}) {
    ModelSpec p =
        unary({"Pad", {"x", "pads", "", ""}, {"y"}, {SpecAttr::text("mode", "edge")}, "pad", {}}, {2, 3, 6}, opset);
    p.initializers = {ints("pads", {0, 0, 1, 0, 0, 1})};
    auto rp = run(testmodels::buildModel(p));
    QVERIFY2(rp.isOk(), rp.message().c_str());
    QCOMPARE(rp->at("y").values[0], x[0]);
    QCOMPARE(rp->at("y").values[5], x[3]);
  }
}

void TestImportModern::splitNumOutputs_data() {
  QTest::addColumn<qint64>("size");
  QTest::addColumn<QList<qint64>>("parts");
  QTest::newRow("7 in 3: 3,3,1") << qint64{7} << QList<qint64>{3, 3, 1};
  QTest::newRow("6 in 3: equal") << qint64{6} << QList<qint64>{2, 2, 2};
  QTest::newRow("5 in 2: 3,2") << qint64{5} << QList<qint64>{3, 2};
}

void TestImportModern::splitNumOutputs() {
  QFETCH(qint64, size);
  QFETCH(QList<qint64>, parts);
  ModelSpec m;
  m.irVersion = 10;
  m.opset = 18;
  m.inputs = {floatTensor("x", {2, size})};
  SpecNode n{"Split", {"x"}, {}, {SpecAttr::integer("axis", -1), SpecAttr::integer("num_outputs", parts.size())},
             "split", {}};
  for (int i = 0; i < parts.size(); ++i) {
    n.outputs.push_back("y" + std::to_string(i));
    m.outputs.push_back(floatTensor(n.outputs.back(), {2, parts[i]}));
  }
  m.nodes = {n};
  auto r = run(testmodels::buildModel(m));
  QVERIFY2(r.isOk(), r.message().c_str());
  const auto x = ramp(2 * size);
  int64_t start = 0;
  for (int i = 0; i < parts.size(); ++i) {
    std::vector<float> want;
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t c = start; c < start + parts[i]; ++c) want.push_back(x[static_cast<size_t>(row * size + c)]);
    const Output& y = r->at("y" + std::to_string(i));
    QCOMPARE(y.shape, (std::vector<int64_t>{2, parts[i]}));
    std::string why;
    QVERIFY2(close(y.values, want, why), why.c_str());
    start += parts[i];
  }
}

void TestImportModern::splitOfUnknownSize() {
  // The model states no shape for the Split's input (a Relu's output): Shape, Gather and arithmetic
  // give the part size, Slices the parts (folded into constant bounds once the shapes are known).
  for (bool negativeAxis : {false, true}) {
    ModelSpec m;
    m.irVersion = 10;
    m.opset = 18;
    m.inputs = {floatTensor("x", {2, 3, 5})};
    m.outputs = {floatTensor("y0", {2, 3, 2}), floatTensor("y1", {2, 3, 2}), floatTensor("y2", {2, 3, 1})};
    m.nodes = {{"Relu", {"x"}, {"r"}, {}, "relu", {}},
               {"Split",
                {"r"},
                {"y0", "y1", "y2"},
                {SpecAttr::integer("axis", negativeAxis ? -1 : 2), SpecAttr::integer("num_outputs", 3)},
                "split",
                {}}};
    Graph g;
    auto r = run(testmodels::buildModel(m), &g);
    QVERIFY2(r.isOk(), r.message().c_str());
    QVERIFY(hasNote(g, "Split: num_outputs on an axis of unknown size into Slices"));
    const auto x = ramp(30);
    const int64_t starts[] = {0, 2, 4, 5};
    for (int part = 0; part < 3; ++part) {
      std::vector<float> want;
      for (int64_t row = 0; row < 6; ++row)
        for (int64_t c = starts[part]; c < starts[part + 1]; ++c)
          want.push_back(std::max(0.0f, x[static_cast<size_t>(row * 5 + c)]));
      const Output& y = r->at("y" + std::to_string(part));
      QCOMPARE(y.shape, (std::vector<int64_t>{2, 3, starts[part + 1] - starts[part]}));
      std::string why;
      QVERIFY2(close(y.values, want, why), why.c_str());
    }
  }
}

void TestImportModern::resizeAxesAttribute() {
  // Opset 19 Resize with axes of every axis, antialias 0 and keep_aspect_ratio_policy stretch: nearest
  // x2 of x[1,1,2,3] (half_pixel, round_prefer_floor: output i reads input i / 2).
  ModelSpec m;
  m.irVersion = 9;
  m.opset = 19;
  m.inputs = {floatTensor("x", {1, 1, 2, 3})};
  m.outputs = {floatTensor("y", {1, 1, 4, 6})};
  m.initializers = {floatTensor("scales", {4})};
  m.initializers[0].floats = {1, 1, 2, 2};
  m.nodes = {{"Resize",
              {"x", "", "scales"},
              {"y"},
              {SpecAttr::text("mode", "nearest"), SpecAttr::integers("axes", {0, 1, -2, 3}),
               SpecAttr::integer("antialias", 0), SpecAttr::text("keep_aspect_ratio_policy", "stretch")},
              "resize",
              {}}};
  auto r = run(testmodels::buildModel(m));
  QVERIFY2(r.isOk(), r.message().c_str());
  const auto x = ramp(6);
  std::vector<float> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) want.push_back(x[static_cast<size_t>((i / 2) * 3 + j / 2)]);
  std::string why;
  QVERIFY2(close(r->at("y").values, want, why), why.c_str());
}

void TestImportModern::typeOnlyBumps() {
  // Opset 21: Reshape, Shape, Cast (saturate, float target), Identity, Transpose changed only in types;
  // AveragePool (19) with dilations of 1.
  ModelSpec m;
  m.irVersion = 10;
  m.opset = 21;
  m.inputs = {floatTensor("x", {1, 2, 4, 4})};
  m.outputs = {floatTensor("y", {1, 2, 2, 2})};
  m.initializers = {ints("shape", {1, 2, 4, 4})};
  m.nodes = {{"Reshape", {"x", "shape"}, {"r"}, {}, "reshape", {}},
             {"Cast", {"r"}, {"c"}, {SpecAttr::integer("to", kFloat), SpecAttr::integer("saturate", 1)}, "cast", {}},
             {"Identity", {"c"}, {"i"}, {}, "id", {}},
             {"AveragePool",
              {"i"},
              {"y"},
              {SpecAttr::integers("kernel_shape", {2, 2}), SpecAttr::integers("strides", {2, 2}),
               SpecAttr::integers("dilations", {1, 1})},
              "pool",
              {}}};
  auto r = run(testmodels::buildModel(m));
  QVERIFY2(r.isOk(), r.message().c_str());
  const auto x = ramp(32);
  std::vector<float> want;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        float s = 0;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj) s += x[static_cast<size_t>(c * 16 + (2 * i + di) * 4 + 2 * j + dj)];
        want.push_back(s / 4);
      }
  std::string why;
  QVERIFY2(close(r->at("y").values, want, why), why.c_str());
}

void TestImportModern::opsetRefusals_data() {
  QTest::addColumn<int>("what");
  QTest::addColumn<QString>("expected");
  const QString pre = "modern.onnx: opset 18: ";
  QTest::newRow("axes computed") << 0
                                 << pre +
                                        "ReduceMean 'reduce': its axes input 'a' is computed at run time (no exact "
                                        "opset-17 form)";
  QTest::newRow("Pad wrap")
      << 1 << "modern.onnx: opset 19: Pad 'pad': mode 'wrap' is new in opset 19 (no exact opset-17 form)";
  QTest::newRow("ScatterElements max")
      << 2 << pre + "ScatterElements 'scatter': reduction 'max' is new in opset 18 (no exact opset-17 form)";
  QTest::newRow("Gelu")
      << 3 << "modern.onnx: opset 20: Gelu 'gelu': the operator is new in opset 20 (no exact opset-17 form)";
  QTest::newRow("Resize antialias") << 4
                                    << pre + "Resize 'resize': antialias is new in opset 18 (no exact opset-17 form)";
  QTest::newRow("Split num_outputs != outputs")
      << 5 << pre + "Split 'split': num_outputs 3 but 2 outputs (no exact opset-17 form)";
  QTest::newRow("opset 22") << 6 << "modern.onnx: unsupported opset 22 of the default ONNX domain (supported 7 to 21)";
}

void TestImportModern::opsetRefusals() {
  QFETCH(int, what);
  QFETCH(QString, expected);
  ModelSpec m;
  m.irVersion = 10;
  m.opset = 18;
  m.inputs = {floatTensor("x", {2, 3, 4})};
  m.outputs = {floatTensor("y", {2, 3, 4})};
  if (what == 0) {
    m.inputs.push_back(ints("a", {1}));
    m.nodes = {{"ReduceMean", {"x", "a"}, {"y"}, {}, "reduce", {}}};
  } else if (what == 1) {
    m.opset = 19;
    m.initializers = {ints("pads", {0, 0, 0, 0, 0, 0})};
    m.nodes = {{"Pad", {"x", "pads"}, {"y"}, {SpecAttr::text("mode", "wrap")}, "pad", {}}};
  } else if (what == 2) {
    m.initializers = {ints("idx", {0})};
    m.initializers[0].dims = {1, 1, 1};
    m.initializers.push_back(floatTensor("upd", {1, 1, 1}));
    m.initializers.back().floats = {1};
    m.nodes = {{"ScatterElements", {"x", "idx", "upd"}, {"y"}, {SpecAttr::text("reduction", "max")}, "scatter", {}}};
  } else if (what == 3) {
    m.opset = 20;
    m.nodes = {{"Gelu", {"x"}, {"y"}, {}, "gelu", {}}};
  } else if (what == 4) {
    m.initializers = {floatTensor("scales", {3})};
    m.initializers[0].floats = {1, 1, 1};
    m.nodes = {{"Resize", {"x", "", "scales"}, {"y"}, {SpecAttr::integer("antialias", 1)}, "resize", {}}};
  } else if (what == 5) {
    m.outputs = {floatTensor("y0", {2, 3, 2}), floatTensor("y1", {2, 3, 2})};
    m.nodes = {{"Relu", {"x"}, {"r"}, {}, "relu", {}},
               {"Split",
                {"r"},
                {"y0", "y1"},
                {SpecAttr::integer("axis", 2), SpecAttr::integer("num_outputs", 3)},
                "split",
                {}}};
  } else {
    m.opset = 22;
    m.nodes = {{"Relu", {"x"}, {"y"}, {}, "relu", {}}};
  }
  const std::string e = importError(testmodels::buildModel(m));
  QCOMPARE(QString::fromStdString(e), expected);
}

void TestImportModern::layerNormYOnlyInExecutor() {
  // x[1,64,192] -> Add -> LayerNormalization (Y only) -> MatMul W[192,48]: the LayerNormalization
  // kernel computes Mean and InvStdDev as well; the node declares one output, and the executor keeps
  // pointers to its output vector (which must not move).
  ModelSpec m;
  m.inputs = {floatTensor("x", {1, 64, 192})};
  m.outputs = {floatTensor("y", {1, 64, 48})};
  m.initializers = {floatTensor("b", {192}), floatTensor("scale", {192}), floatTensor("bias", {192}),
                    floatTensor("W", {192, 48})};
  for (int i = 0; i < 192; ++i) {
    m.initializers[0].floats.push_back(0.01f * static_cast<float>(i % 7));
    m.initializers[1].floats.push_back(1.0f + 0.001f * static_cast<float>(i));
    m.initializers[2].floats.push_back(0.002f * static_cast<float>(i % 5));
  }
  for (int i = 0; i < 192 * 48; ++i) m.initializers[3].floats.push_back(0.01f * static_cast<float>(i % 11) - 0.05f);
  m.nodes = {{"Add", {"x", "b"}, {"a"}, {}, "add", {}},
             {"LayerNormalization", {"a", "scale", "bias"}, {"n"}, {SpecAttr::integer("axis", -1)}, "ln", {}},
             {"MatMul", {"n", "W"}, {"y"}, {}, "mm", {}}};
  auto g = importOnnxBytes(testmodels::buildModel(m), "ln.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  auto backend = makeCpuBackend();
  auto t = buildCostTable(*g, characteriseAll(*g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  Plan plan;
  plan.algorithm = "single";
  const auto topo = t->topoOrder();
  const auto core0 =
      static_cast<DeviceId>(std::find(t->deviceIds.begin(), t->deviceIds.end(), "core0") - t->deviceIds.begin());
  QVERIFY(static_cast<size_t>(core0) < t->deviceIds.size());
  plan.device.assign(topo.size(), core0);
  plan.order.assign(static_cast<size_t>(t->numDevices()), {});
  plan.order[static_cast<size_t>(core0)] = topo;
  ExecOptions o;
  o.reps = 2;
  o.warmup = 1;
  o.maxDiscarded = 0;
  o.keepOutputs = true;
  const ValueId xv = g->findValue("x");
  Tensor xt;
  QVERIFY(xt.ensure(DType::Float32, {1, 64, 192}).isOk());
  const auto x = ramp(64 * 192);
  std::copy(x.begin(), x.end(), xt.data<float>());
  o.inputs[xv] = xt;
  auto r = executePlan(*g, *backend, *t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->outputs.size(), size_t{1});
  const Tensor& y = r->outputs[0];
  QCOMPARE(y.shape(), (std::vector<int64_t>{1, 64, 48}));
  // Reference in double: (x + b) normalised over the last axis, scaled, shifted, times W.
  double maxErr = 0;
  for (int row = 0; row < 64; ++row) {
    std::vector<double> a(192);
    double mean = 0, var = 0;
    for (int i = 0; i < 192; ++i)
      mean += a[static_cast<size_t>(i)] =
          x[static_cast<size_t>(row * 192 + i)] + m.initializers[0].floats[static_cast<size_t>(i)];
    mean /= 192;
    for (double v : a) var += (v - mean) * (v - mean);
    var /= 192;
    for (int i = 0; i < 192; ++i)
      a[static_cast<size_t>(i)] = (a[static_cast<size_t>(i)] - mean) / std::sqrt(var + 1e-5) *
                                      m.initializers[1].floats[static_cast<size_t>(i)] +
                                  m.initializers[2].floats[static_cast<size_t>(i)];
    for (int j = 0; j < 48; ++j) {
      double s = 0;
      for (int i = 0; i < 192; ++i)
        s += a[static_cast<size_t>(i)] * m.initializers[3].floats[static_cast<size_t>(i * 48 + j)];
      maxErr = std::max(maxErr, std::fabs(s - y.data<float>()[row * 48 + j]) / std::max(1.0, std::fabs(s)));
    }
  }
  QVERIFY2(maxErr < 1e-4, qPrintable(QString::number(maxErr)));
  // The kernel alone: a one-output vector stays one output, in place.
  const OpId ln = 1;
  QCOMPARE(g->nodes[static_cast<size_t>(ln)].opType, std::string("LayerNormalization"));
  auto k = backend->prepare(*g, ln, "core0");
  QVERIFY2(k.isOk(), k.message().c_str());
  std::vector<Tensor> outs(1);
  const Tensor* before = outs.data();
  Tensor av, sc, bi;
  QVERIFY(av.ensure(DType::Float32, {1, 64, 192}).isOk());
  std::copy(x.begin(), x.end(), av.data<float>());
  QVERIFY(sc.ensure(DType::Float32, {192}).isOk());
  QVERIFY(bi.ensure(DType::Float32, {192}).isOk());
  std::fill(sc.data<float>(), sc.data<float>() + 192, 1.0f);
  std::fill(bi.data<float>(), bi.data<float>() + 192, 0.0f);
  for (int rep = 0; rep < 2; ++rep) {
    auto st = (*k)->run({&av, &sc, &bi}, outs);
    QVERIFY2(st.isOk(), st.message().c_str());
    QCOMPARE(outs.size(), size_t{1});
    QVERIFY(outs.data() == before);
    QCOMPARE(outs[0].shape(), (std::vector<int64_t>{1, 64, 192}));
  }
}

QTEST_GUILESS_MAIN(TestImportModern)
#include "tst_import_modern.moc"
