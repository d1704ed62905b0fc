// The ONNX importer on the shared real models (operator counts after constant folding, op-type
// histograms, every shape known, reference MACs reproduced from the imported shapes) and on small
// hand-built models: symbolic-dimension bindings, external data, If/Loop subgraphs, unknown domains,
// attention-like shape arithmetic, naming, ordering, SHA-256 and import speed.
#include <QtTest>

#include <QElapsedTimer>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "backend/backend.h"
#include "support/sha256.h"
#include "onnx/importer.h"
#include "gen/testmodels.h"
#include "support/files.h"
#include "support/sha256.h"
#include "testutil.h"

using namespace partex;

namespace {

std::map<std::string, int> opCounts(const Graph& g) {
  std::map<std::string, int> m;
  for (const auto& n : g.nodes) ++m[n.opType];
  return m;
}

std::vector<DimBinding> bindings(const QStringList& texts) {
  std::vector<DimBinding> out;
  for (const auto& t : texts) {
    auto b = parseDimBinding(t.toStdString());
    if (b) out.push_back(*b);
  }
  return out;
}

const Value& valueNamed(const Graph& g, const std::string& name) {
  static const Value kMissing;
  const ValueId id = g.findValue(name);
  return id == kNone ? kMissing : g.values[static_cast<size_t>(id)];
}

const Node* nodeNamed(const Graph& g, const std::string& name) {
  const OpId id = g.findNode(name);
  return id == kNone ? nullptr : &g.nodes[static_cast<size_t>(id)];
}

/// Multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul from the imported shapes.
int64_t macs(const Graph& g) {
  int64_t total = 0;
  for (const auto& n : g.nodes) {
    auto v = [&](ValueId id) -> const Value& { return g.values[static_cast<size_t>(id)]; };
    if (n.opType == "Conv") {
      const auto& w = v(n.inputs.at(1)).shape;
      total += v(n.outputs.at(0)).numElements() * (v(n.inputs.at(1)).numElements() / w.at(0));
    } else if (n.opType == "ConvTranspose") {
      const auto& w = v(n.inputs.at(1)).shape;
      total += v(n.inputs.at(0)).numElements() * (v(n.inputs.at(1)).numElements() / w.at(0));
    } else if (n.opType == "Gemm") {
      const auto& a = v(n.inputs.at(0)).shape;
      total += v(n.outputs.at(0)).numElements() * (n.attrInt("transA", 0) ? a.at(0) : a.at(1));
    } else if (n.opType == "MatMul") {
      total += v(n.outputs.at(0)).numElements() * v(n.inputs.at(0)).shape.back();
    }
  }
  return total;
}

/// Structural invariants every imported graph satisfies.
void checkInvariants(const Graph& g) {
  QVERIFY2(g.verify().isOk(), g.verify().message().c_str());
  std::set<std::string> names;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    QVERIFY2(!n.name.empty(), "every node has a name");
    QVERIFY2(names.insert(n.name).second, n.name.c_str());
    for (ValueId in : n.inputs) {
      if (in < 0) continue;
      const OpId p = g.values[static_cast<size_t>(in)].producer;
      QVERIFY2(p < static_cast<OpId>(i), "nodes are in topological order");
    }
  }
  for (ValueId in : g.inputs) {
    QVERIFY(!g.values[static_cast<size_t>(in)].isWeight);
    QVERIFY(g.values[static_cast<size_t>(in)].isGraphInput);
  }
  for (const auto& v : g.values) {
    if (v.isWeight) QCOMPARE(v.producer, kNone);
    // Data, where a weight has it, is exactly the weight's bytes.
    if (v.data) {
      QVERIFY2(v.isWeight, v.name.c_str());
      QCOMPARE(static_cast<int64_t>(v.data->size()), v.bytes());
    }
  }
}

bool writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

bool optimizedBuild() {
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  return false;
#endif
#endif
  return true;
#else
  return false;
#endif
}

}  // namespace

class TestImport : public QObject {
  Q_OBJECT

 private slots:
  /// The model identity's SHA-256 (support/sha256.h), on the SHA extensions where this CPU has them and
  /// on the portable rounds otherwise: FIPS 180-2's known answers, and a buffer fed in pieces of every
  /// size from 1 to 997 bytes (block boundaries inside and across updates) equal to it fed at once.
  void sha256KnownAnswers() {
    QCOMPARE(QString::fromStdString(sha256Hex("abc")),
             QString("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(QString::fromStdString(sha256Hex("")),
             QString("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(QString::fromStdString(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
             QString("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    QCOMPARE(QString::fromStdString(sha256Hex(std::string(1000000, 'a'))),
             QString("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    std::string bytes(100003, ' ');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
    Sha256 pieces;
    for (size_t i = 0, step = 1; i < bytes.size(); step = step * 3 % 997 + 1) {
      const size_t n = std::min(step, bytes.size() - i);
      pieces.update(bytes.data() + i, n);
      i += n;
    }
    QCOMPARE(QString::fromStdString(pieces.hex()), QString::fromStdString(sha256Hex(bytes)));
  }

  void sharedModels_data();
  void sharedModels();
  void squeezenetHistogram();
  void mnistAndClassifierHistograms();
  void ppocrNeedsBindings_data();
  void ppocrNeedsBindings();
  void ppocrWithBindings_data();
  void ppocrWithBindings();
  void parseBindings();
  void bindBySymbol();
  void bindByInputAxis();
  void bindingErrors();
  void externalData();
  void externalDataRefused_data();
  void externalDataRefused();
  void weightData();
  void ifSubgraphs();
  void loopSubgraph();
  void unknownDomain();
  void shapeChainFolds_data();
  void shapeChainFolds();
  void randomIsNotFolded();
  void namesAreInventedAndUnique();
  void unsortedNodesAreSorted();
  void attributesAndMetadata();
  void sha256();
  void speed();
};

void TestImport::sharedModels_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<QStringList>("dims");
  QTest::addColumn<int>("onnxNodes");     // node count in the README
  QTest::addColumn<int>("constants");     // Constant and ConstantOfShape nodes in the file
  QTest::addColumn<int>("foldedOthers");  // folded nodes besides Constant/ConstantOfShape
  QTest::addColumn<int>("operators");     // operators after folding
  QTest::addColumn<int>("opset");
  QTest::addColumn<qlonglong>("refMacs");  // README reference (0: none)
  // light_*: operators = nodes - ConstantOfShape nodes - other folded nodes (Unsqueeze or Reshape
  // applied to those weights, which have only constant inputs).
  QTest::newRow("resnet50") << "light_resnet50.onnx" << QStringList() << 415 << 239 << 0 << 176 << 9 << 4089184256LL;
  QTest::newRow("densenet121") << "light_densenet121.onnx" << QStringList() << 1746 << 836 << 242 << 668 << 9
                               << 2834161664LL;
  QTest::newRow("inception_v1") << "light_inception_v1.onnx" << QStringList() << 237 << 93 << 1 << 143 << 9
                                << 1431556352LL;
  QTest::newRow("inception_v2") << "light_inception_v2.onnx" << QStringList() << 916 << 407 << 138 << 371 << 9
                                << 2018851840LL;
  QTest::newRow("shufflenet") << "light_shufflenet.onnx" << QStringList() << 446 << 243 << 0 << 203 << 9 << 124664528LL;
  QTest::newRow("squeezenet") << "light_squeezenet.onnx" << QStringList() << 105 << 39 << 0 << 66 << 9 << 349151936LL;
  QTest::newRow("vgg19") << "light_vgg19.onnx" << QStringList() << 82 << 36 << 0 << 46 << 9 << 19632062464LL;
  QTest::newRow("alexnet") << "light_bvlc_alexnet.onnx" << QStringList() << 40 << 16 << 0 << 24 << 9 << 654560384LL;
  QTest::newRow("zfnet512") << "light_zfnet512.onnx" << QStringList() << 38 << 16 << 0 << 22 << 9 << 1481727008LL;
  // mnist: the Reshape of a constant parameter folds.
  QTest::newRow("mnist") << "mnist.onnx" << QStringList() << 12 << 0 << 1 << 11 << 8 << 786560LL;
  QTest::newRow("yolox_nano") << "yolox_nano.onnx" << QStringList() << 369 << 0 << 0 << 369 << 11 << 522553408LL;
  QTest::newRow("ultraface") << "Ultraface.version-RFB-320.onnx" << QStringList() << 126 << 0 << 0 << 126 << 9
                             << 100418560LL;
  // PP-OCR: Constant nodes fold; in the classifier Shape -> Cast -> Slice -> Concat (6 nodes) too.
  QTest::newRow("ppocr_cls") << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << QStringList{"x:0=1", "x:2=48", "x:3=192"}
                             << 471 << 250 << 6 << 215 << 9 << 0LL;
  QTest::newRow("ppocr_det") << "ch_PP-OCRv4_det_infer.onnx" << QStringList{"x:0=1", "x:2=640", "x:3=640"} << 672 << 342
                             << 0 << 330 << 11 << 0LL;
}

void TestImport::sharedModels() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  QFETCH(QStringList, dims);
  QFETCH(int, onnxNodes);
  QFETCH(int, constants);
  QFETCH(int, foldedOthers);
  QFETCH(int, operators);
  QFETCH(int, opset);
  QFETCH(qlonglong, refMacs);
  const std::string path = test::sharedModel(file.toStdString());
  ImportOptions opts;
  opts.dims = bindings(dims);
  QCOMPARE(static_cast<int>(opts.dims.size()), dims.size());
  auto g = importOnnxFile(path, opts);
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  QCOMPARE(g->sourcePath, path);
  QCOMPARE(g->opsetVersion, int64_t{opset});
  QVERIFY(g->irVersion >= 3);
  QCOMPARE(static_cast<int>(g->inputs.size()), 1);

  // Constants folded into weights: none is left as an operator.
  auto counts = opCounts(*g);
  for (const char* op : {"Constant", "ConstantOfShape", "Shape"}) QCOMPARE(counts.count(op), size_t{0});
  QCOMPARE(static_cast<int>(g->nodes.size()), operators);
  // Exactly the constant nodes and the nodes computing on constants disappeared.
  QCOMPARE(onnxNodes, operators + constants + foldedOthers);

  // Every weight carries its data, of exactly its size: execute runs the model's own values.
  for (const auto& v : g->values)
    if (v.isWeight) {
      QVERIFY2(v.data, v.name.c_str());
      QCOMPARE(static_cast<int64_t>(v.data->size()), v.bytes());
    }

  // Every operator output has a fully known shape.
  for (const auto& n : g->nodes)
    for (ValueId v : n.outputs) {
      if (v < 0) continue;
      const Value& val = g->values[static_cast<size_t>(v)];
      QVERIFY2(val.shapeKnown && val.numElements() >= 0, (n.name + " -> " + val.name).c_str());
      QVERIFY2(val.dtype != DType::Undefined, val.name.c_str());
    }
  // Weights keep no float data; folded weights have shapes.
  for (const auto& v : g->values) {
    if (!v.isWeight) continue;
    QVERIFY2(v.shapeKnown, v.name.c_str());
    if (v.dtype == DType::Float32) QVERIFY(v.intData.empty());
  }
  QVERIFY(g->paramBytes() > 0);
  if (refMacs > 0) QCOMPARE(static_cast<qlonglong>(macs(*g)), refMacs);
}

void TestImport::squeezenetHistogram() {
  PARTEX_REQUIRE_SHARED_MODELS();
  auto g = importOnnxFile(test::sharedModel("light_squeezenet.onnx"));
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> expected{{"Concat", 8},  {"Conv", 26}, {"Dropout", 1}, {"GlobalAveragePool", 1},
                                            {"MaxPool", 3}, {"Relu", 26}, {"Softmax", 1}};
  QCOMPARE(opCounts(*g), expected);
  // The 39 ConstantOfShape weights (26 conv weights + 13 ... biases) became weights with shapes.
  const Value& w = valueNamed(*g, "conv1_w_0");
  QVERIFY(w.isWeight);
  QCOMPARE(w.dtype, DType::Float32);
  QCOMPARE(w.shape, (std::vector<int64_t>{64, 3, 3, 3}));
  QVERIFY(w.intData.empty());
  QCOMPARE(w.consumers.size(), size_t{1});
  // The __SHAPE initializers only fed the folded ConstantOfShape nodes: they are gone.
  QCOMPARE(g->findValue("conv1_w_0__SHAPE"), kNone);
  QCOMPARE(valueNamed(*g, "softmaxout_1").shape, (std::vector<int64_t>{1, 1000, 1, 1}));
  QCOMPARE(g->inputs.size(), size_t{1});
  QCOMPARE(g->values[static_cast<size_t>(g->inputs[0])].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  QCOMPARE(g->producerName, std::string("onnx-caffe2"));
}

void TestImport::mnistAndClassifierHistograms() {
  PARTEX_REQUIRE_SHARED_MODELS();
  auto g = importOnnxFile(test::sharedModel("mnist.onnx"));
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> mnist{{"Add", 3},     {"Conv", 2}, {"MatMul", 1},
                                         {"MaxPool", 2}, {"Relu", 2}, {"Reshape", 1}};
  QCOMPARE(opCounts(*g), mnist);
  // The Reshape shape initializers are small int64 tensors: their data is kept.
  bool sawShapeData = false;
  for (const auto& n : g->nodes)
    if (n.opType == "Reshape") {
      const Value& s = g->values[static_cast<size_t>(n.inputs.at(1))];
      QVERIFY(s.isWeight);
      QCOMPARE(s.dtype, DType::Int64);
      QCOMPARE(static_cast<int64_t>(s.intData.size()), s.numElements());
      sawShapeData = true;
    }
  QVERIFY(sawShapeData);

  ImportOptions opts;
  opts.dims = bindings({"x:0=1", "x:2=48", "x:3=192"});
  auto cls = importOnnxFile(test::sharedModel("ch_ppocr_mobile_v2.0_cls_infer.onnx"), opts);
  QVERIFY2(cls.isOk(), cls.message().c_str());
  const std::map<std::string, int> expected{{"Add", 26},        {"BatchNormalization", 35},
                                            {"Clip", 18},       {"Conv", 53},
                                            {"Div", 18},        {"GlobalAveragePool", 10},
                                            {"HardSigmoid", 9}, {"MatMul", 1},
                                            {"MaxPool", 1},     {"Mul", 27},
                                            {"Relu", 15},       {"Reshape", 1},
                                            {"Softmax", 1}};
  QCOMPARE(opCounts(*cls), expected);
  // Shape -> Cast -> Slice -> Concat folded into the Reshape's shape tensor.
  for (const auto& n : cls->nodes)
    if (n.opType == "Reshape") {
      const Value& s = cls->values[static_cast<size_t>(n.inputs.at(1))];
      QVERIFY(s.isWeight);
      QVERIFY(!s.intData.empty());
      QVERIFY(cls->values[static_cast<size_t>(n.outputs.at(0))].shapeKnown);
    }
}

void TestImport::ppocrNeedsBindings_data() {
  QTest::addColumn<QString>("file");
  QTest::newRow("cls") << "ch_ppocr_mobile_v2.0_cls_infer.onnx";
  QTest::newRow("det") << "ch_PP-OCRv4_det_infer.onnx";
}

void TestImport::ppocrNeedsBindings() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  const std::string path = test::sharedModel(file.toStdString());
  auto g = importOnnxFile(path);
  QVERIFY(!g.isOk());
  const std::string& m = g.message();
  QVERIFY2(m.rfind(path + ": ", 0) == 0, m.c_str());
  QVERIFY2(m.find("input 'x' axis 0") != std::string::npos, m.c_str());
  QVERIFY2(m.find("not bound") != std::string::npos, m.c_str());
  QVERIFY2(m.find("--dim x:0=VALUE") != std::string::npos, m.c_str());
  QVERIFY(m.find('\n') == std::string::npos);
  // Binding only the batch leaves H unbound: the message moves on to axis 2.
  ImportOptions opts;
  opts.dims = bindings({"x:0=1"});
  auto g2 = importOnnxFile(path, opts);
  QVERIFY(!g2.isOk());
  QVERIFY2(g2.message().find("input 'x' axis 2") != std::string::npos, g2.message().c_str());
}

void TestImport::ppocrWithBindings_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<QStringList>("dims");
  QTest::addColumn<QList<qlonglong>>("inputShape");
  QTest::newRow("det by axis") << "ch_PP-OCRv4_det_infer.onnx" << QStringList{"x:0=1", "x:2=640", "x:3=640"}
                               << QList<qlonglong>{1, 3, 640, 640};
  QTest::newRow("cls by axis") << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << QStringList{"x:0=1", "x:2=48", "x:3=192"}
                               << QList<qlonglong>{1, 3, 48, 192};
  QTest::newRow("cls by symbol and axis")
      << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << QStringList{"p2o.DynamicDimension.0=2", "x:2=48", "x:3=192"}
      << QList<qlonglong>{2, 3, 48, 192};
}

void TestImport::ppocrWithBindings() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  QFETCH(QStringList, dims);
  QFETCH(QList<qlonglong>, inputShape);
  ImportOptions opts;
  opts.dims = bindings(dims);
  auto g = importOnnxFile(test::sharedModel(file.toStdString()), opts);
  QVERIFY2(g.isOk(), g.message().c_str());
  const Value& x = g->values[static_cast<size_t>(g->inputs.at(0))];
  std::vector<int64_t> want(inputShape.begin(), inputShape.end());
  QCOMPARE(x.shape, want);
  for (const auto& n : g->nodes)
    for (ValueId v : n.outputs)
      if (v >= 0) QVERIFY2(g->values[static_cast<size_t>(v)].shapeKnown, n.name.c_str());
  const Value& out = g->values[static_cast<size_t>(g->outputs.at(0))];
  QVERIFY(out.shapeKnown);
  QCOMPARE(out.shape.at(0), want[0]);
}

void TestImport::parseBindings() {
  auto a = parseDimBinding("N=1");
  QVERIFY(a.isOk());
  QCOMPARE(a->symbol, std::string("N"));
  QCOMPARE(a->value, int64_t{1});
  auto b = parseDimBinding("x:2=640");
  QVERIFY(b.isOk());
  QCOMPARE(b->input, std::string("x"));
  QCOMPARE(b->axis, int64_t{2});
  QCOMPARE(b->value, int64_t{640});
  auto c = parseDimBinding("input_1:0:3=7");  // TensorFlow-style input names contain ':'
  QVERIFY(c.isOk());
  QCOMPARE(c->input, std::string("input_1:0"));
  QCOMPARE(c->axis, int64_t{3});
  auto d = parseDimBinding(" batch_size = 8 ");
  QVERIFY(d.isOk());
  QCOMPARE(d->symbol, std::string("batch_size"));
  QCOMPARE(d->value, int64_t{8});
  auto e = parseDimBinding("p2o.DynamicDimension.0=1");
  QVERIFY(e.isOk());
  QCOMPARE(e->symbol, std::string("p2o.DynamicDimension.0"));
  for (const char* bad : {"", "N", "=3", "N=", "N=abc", "N=0", "N=-2", "x:1=1.5"}) {
    auto r = parseDimBinding(bad);
    QVERIFY2(!r.isOk(), bad);
    QVERIFY(r.message().find("--dim") != std::string::npos);
    QVERIFY(r.message().find('\n') == std::string::npos);
  }
}

void TestImport::bindBySymbol() {
  ImportOptions opts;
  opts.dims = bindings({"N=1", "H=32", "W=16"});
  auto g = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", opts);
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  QCOMPARE(valueNamed(*g, "x").shape, (std::vector<int64_t>{1, 3, 32, 16}));
  QCOMPARE(valueNamed(*g, "c").shape, (std::vector<int64_t>{1, 8, 32, 16}));
  QCOMPARE(valueNamed(*g, "y").shape, (std::vector<int64_t>{1, 8}));
  QVERIFY(valueNamed(*g, "y").shapeKnown);
}

void TestImport::bindByInputAxis() {
  ImportOptions opts;
  opts.dims = bindings({"x:0=4", "x:2=10", "x:-1=12"});
  auto g = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", opts);
  QVERIFY2(g.isOk(), g.message().c_str());
  QCOMPARE(valueNamed(*g, "x").shape, (std::vector<int64_t>{4, 3, 10, 12}));
  QCOMPARE(valueNamed(*g, "y").shape, (std::vector<int64_t>{4, 8}));
  // Mixed: a symbol and an axis.
  opts.dims = bindings({"N=2", "x:2=8", "W=8"});
  auto g2 = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", opts);
  QVERIFY2(g2.isOk(), g2.message().c_str());
  QCOMPARE(valueNamed(*g2, "x").shape, (std::vector<int64_t>{2, 3, 8, 8}));
  // Overriding a fixed dimension works, with a warning.
  opts.dims = bindings({"x:0=2", "x:2=8", "x:3=8", "x:1=3"});
  auto g3 = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", opts);
  QVERIFY2(g3.isOk(), g3.message().c_str());
  QVERIFY(g3->warnings.empty());  // same value: no override
}

void TestImport::bindingErrors() {
  struct Case {
    QStringList dims;
    const char* expect;
  };
  const Case cases[] = {
      {{"N=1", "H=8"},
       "input 'x' axis 3 has symbolic dimension 'W' that is not bound (use --dim W=VALUE or --dim x:3=VALUE)"},
      {{"N=1", "H=8", "W=8", "Q=3"}, "no model input has a symbolic dimension 'Q'"},
      {{"N=1", "H=8", "W=8", "y:0=1"}, "the model has no input 'y' (inputs: x)"},
      {{"N=1", "H=8", "W=8", "x:4=1"}, "input 'x' has 4 dimensions"},
      {{"N=1", "N=2", "H=8", "W=8"}, "'N' is bound twice"},
  };
  for (const auto& c : cases) {
    ImportOptions opts;
    opts.dims = bindings(c.dims);
    auto g = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", opts);
    QVERIFY(!g.isOk());
    QVERIFY2(g.message().rfind("sym.onnx: ", 0) == 0, g.message().c_str());
    QVERIFY2(g.message().find(c.expect) != std::string::npos, g.message().c_str());
    QVERIFY(g.message().find('\n') == std::string::npos);
  }
  // Binding a model without symbols by name is an error too.
  ImportOptions opts;
  opts.dims = bindings({"N=1"});
  auto g = importOnnxBytes(testmodels::tiny(), "tiny.onnx", opts);
  QVERIFY(!g.isOk());
  QVERIFY2(g.message().find("no model input has a symbolic dimension 'N'") != std::string::npos, g.message().c_str());
}

void TestImport::externalData() {
  namespace fs = std::filesystem;
  const std::string dir = test::tempDir() + "/external";
  fs::create_directories(dir);
  const std::string model = dir + "/ext.onnx";
  QVERIFY(writeBytes(model, testmodels::withExternalData("ext_weights.bin")));
  QVERIFY(writeBytes(dir + "/ext_weights.bin", std::string(432, '\0')));
  auto g = importOnnxFile(model);
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  const Value& w = valueNamed(*g, "W");
  QVERIFY(w.isWeight);
  QVERIFY(w.externalData);
  QCOMPARE(w.externalLocation, std::string("ext_weights.bin"));
  QCOMPARE(w.shape, (std::vector<int64_t>{4, 3, 3, 3}));
  QCOMPARE(w.dtype, DType::Float32);
  QCOMPARE(w.bytes(), int64_t{432});
  QCOMPARE(valueNamed(*g, "y").shape, (std::vector<int64_t>{1, 4, 6, 6}));
  QCOMPARE(g->paramBytes(), int64_t{432});
  // Bytes with a base folder find the data file the same way.
  auto g2 = importOnnxBytes(testmodels::withExternalData("ext_weights.bin"), "ext.onnx", {}, dir);
  QVERIFY2(g2.isOk(), g2.message().c_str());
  QVERIFY(valueNamed(*g2, "W").externalData);
  // The data is read, once: the weight's bytes are the file's.
  QVERIFY(w.data);
  QCOMPARE(w.data->size(), size_t{432});
  // Bytes without a base folder keep the dims only (nothing is read relative to the working folder).
  ImportOptions noCheck;
  noCheck.runChecker = false;  // the checker would look for the file in the working folder
  auto g5 = importOnnxBytes(testmodels::withExternalData("ext_weights.bin"), "ext.onnx", noCheck);
  QVERIFY2(g5.isOk(), g5.message().c_str());
  QVERIFY(!valueNamed(*g5, "W").data);
  // A bare file name (`cd DIR && partex-cli inspect ext.onnx`): the data is read from the current folder.
  {
    const auto previous = fs::current_path();
    fs::current_path(dir);
    auto bare = importOnnxFile("ext.onnx");
    fs::current_path(previous);
    QVERIFY2(bare.isOk(), bare.message().c_str());
    const Value& wb = valueNamed(*bare, "W");
    QVERIFY(wb.data);
    QCOMPARE(wb.data->size(), size_t{432});
    QVERIFY2(bare->warnings.empty(), bare->warnings.empty() ? "" : bare->warnings.front().c_str());
  }
  // At an offset: the bytes from there.
  std::string withHeader(16, 'h');
  for (int i = 0; i < 108; ++i) {
    const float f = static_cast<float>(i) * 0.5f;
    withHeader.append(reinterpret_cast<const char*>(&f), 4);
  }
  QVERIFY(writeBytes(dir + "/offset.bin", withHeader));
  QVERIFY(writeBytes(dir + "/offset.onnx", testmodels::withExternalData("offset.bin", "16", "432")));
  auto g6 = importOnnxFile(dir + "/offset.onnx");
  QVERIFY2(g6.isOk(), g6.message().c_str());
  const Value& w6 = valueNamed(*g6, "W");
  QVERIFY(w6.data);
  const auto* f6 = reinterpret_cast<const float*>(w6.data->data());
  QCOMPARE(f6[0], 0.0f);
  QCOMPARE(f6[107], 53.5f);
  // A missing data file is reported by the checker, naming the file; without the checker the importer
  // refuses it too, when it reads the data.
  const std::string missing = dir + "/missing.onnx";
  QVERIFY(writeBytes(missing, testmodels::withExternalData("nowhere.bin")));
  auto g3 = importOnnxFile(missing);
  QVERIFY(!g3.isOk());
  QVERIFY2(g3.message().rfind(missing + ": ONNX checker: ", 0) == 0, g3.message().c_str());
  QVERIFY2(g3.message().find("nowhere.bin") != std::string::npos, g3.message().c_str());
  auto g4 = importOnnxFile(missing, noCheck);
  QVERIFY(!g4.isOk());
  QCOMPARE(g4.message(), missing + ": initializer 'W': external data file '" + dir + "/nowhere.bin' is missing");
}

void TestImport::externalDataRefused_data() {
  QTest::addColumn<QString>("location");
  QTest::addColumn<QString>("offset");
  QTest::addColumn<QString>("length");
  QTest::addColumn<QString>("expected");  // in the message after "external data file '<dir>/<location>'"
  QTest::newRow("parent") << "../outside.bin" << "0" << "432" << "' is outside the model's folder";
  QTest::newRow("parent inside") << "sub/../../outside.bin" << "0" << "432" << "' is outside the model's folder";
  QTest::newRow("symlink out") << "link.bin" << "0" << "432" << "' leads outside the model's folder";
  QTest::newRow("directory") << "sub" << "0" << "432" << "' is not a regular file";
  QTest::newRow("short file") << "short.bin" << "0" << "432"
                              << "' is too short (100 bytes; the tensor needs 432 at offset 0)";
  QTest::newRow("offset past data") << "data.bin" << "8" << "432"
                                    << "' is too short (432 bytes; the tensor needs 432 at offset 8)";
  QTest::newRow("offset beyond file") << "data.bin" << "100000" << ""
                                      << "' is too short (432 bytes; the tensor needs 432 at offset 100000)";
  QTest::newRow("negative offset") << "data.bin" << "-4" << "432" << "': invalid offset '-4'";
  QTest::newRow("offset not a number") << "data.bin" << "x12" << "432" << "': invalid offset 'x12'";
  QTest::newRow("huge offset") << "data.bin" << "99999999999999999999" << "432"
                               << "': invalid offset '99999999999999999999'";
  QTest::newRow("length mismatch") << "data.bin" << "0" << "400"
                                   << "': length 400 but [4,3,3,3] float32 needs 432 bytes";
  QTest::newRow("negative length") << "data.bin" << "0" << "-432" << "': invalid length '-432'";
}

/// External data that escapes the model's folder, is missing or too short, or has bad offsets and
/// lengths: refused with one line naming the model, the weight and the data file (the checker off,
/// so that the importer's own reading is what refuses).
void TestImport::externalDataRefused() {
  namespace fs = std::filesystem;
  QFETCH(QString, location);
  QFETCH(QString, offset);
  QFETCH(QString, length);
  QFETCH(QString, expected);
  const std::string root = test::tempDir() + "/refused";
  const std::string dir = root + "/model";
  fs::create_directories(dir + "/sub");
  QVERIFY(writeBytes(root + "/outside.bin", std::string(432, '\0')));
  QVERIFY(writeBytes(dir + "/data.bin", std::string(432, '\0')));
  QVERIFY(writeBytes(dir + "/short.bin", std::string(100, '\0')));
  std::error_code ec;
  fs::remove(dir + "/link.bin", ec);
  fs::create_symlink(root + "/outside.bin", dir + "/link.bin", ec);
  QVERIFY2(!ec, ec.message().c_str());
  const std::string model = dir + "/m.onnx";
  QVERIFY(writeBytes(model, testmodels::withExternalData(location.toStdString(), offset.toStdString(),
                                                         length.toStdString())));
  ImportOptions noCheck;
  noCheck.runChecker = false;
  auto g = importOnnxFile(model, noCheck);
  QVERIFY(!g.isOk());
  QVERIFY2(g.message().find('\n') == std::string::npos, g.message().c_str());
  const std::string want = model + ": initializer 'W': external data file '" + dir + "/" + location.toStdString() +
                           expected.toStdString();
  QCOMPARE(g.message(), want);
  // With the checker on, the model is refused as well (by the checker or the importer), in one line.
  auto checked = importOnnxFile(model);
  QVERIFY(!checked.isOk());
  QVERIFY2(checked.message().rfind(model + ": ", 0) == 0, checked.message().c_str());
  QVERIFY2(checked.message().find('\n') == std::string::npos, checked.message().c_str());
  // An absolute location is refused whatever it names.
  QVERIFY(writeBytes(model, testmodels::withExternalData(root + "/outside.bin")));
  auto absolute = importOnnxFile(model, noCheck);
  QVERIFY(!absolute.isOk());
  QVERIFY2(absolute.message().find("is an absolute path") != std::string::npos, absolute.message().c_str());
}

/// The importer keeps every weight's data: initializers (raw_data and typed fields), folded
/// constants (Mul of constants, ConstantOfShape at any size, Identity and Reshape sharing their
/// input's bytes); a fold too large to compute stays an operator. Copies of the graph and the tensors
/// a run feeds share the one copy.
void TestImport::weightData() {
  auto g = importOnnxBytes(testmodels::withWeightData(), "weights.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  QVERIFY(g->warnings.empty());
  auto floats = [&](const char* name) {
    const Value& v = valueNamed(*g, name);
    std::vector<float> out;
    if (!v.isWeight || !v.data || v.dtype != DType::Float32) return out;
    const auto* p = reinterpret_cast<const float*>(v.data->data());
    out.assign(p, p + v.data->size() / 4);
    return out;
  };
  const auto wraw = floats("Wraw");
  QCOMPARE(wraw.size(), size_t{16});
  for (size_t i = 0; i < wraw.size(); ++i) QCOMPARE(wraw[i], static_cast<float>(i) * 0.25f - 1.0f);
  QCOMPARE(floats("Bsq"), (std::vector<float>{1, 4, 9, 16}));
  QCOMPARE(floats("Wcos"), std::vector<float>(16, 0.5f));
  const auto big = floats("big");
  QCOMPARE(big.size(), size_t{5120});
  QCOMPARE(big[5119], 5119 * 0.001f);
  QCOMPARE(floats("Wflat"), std::vector<float>(5000, 0.25f));
  // Identity shares its input's bytes; Bfield (float_data) feeds only the fold and is gone.
  QCOMPARE(valueNamed(*g, "Wid").data.get(), valueNamed(*g, "Wraw").data.get());
  QCOMPARE(g->findValue("Bfield"), kNone);
  // Transpose of 'big' is not computed by the folder: it runs, on the weight's data.
  const Node* tr = nodeNamed(*g, "transpose_weight");
  QVERIFY(tr);
  QVERIFY(!valueNamed(*g, "bigT").isWeight);
  QCOMPARE(static_cast<int>(g->nodes.size()), 7);
  // Copies share the data; a run's tensor aliases it without a copy, and writing to it copies.
  Graph copy = *g;
  QCOMPARE(valueNamed(copy, "big").data.get(), valueNamed(*g, "big").data.get());
  auto t = leafTensor(*g, g->findValue("big"), 1);
  QVERIFY2(t.isOk(), t.message().c_str());
  QVERIFY(t->isAlias());
  QCOMPARE(static_cast<const void*>(std::as_const(*t).raw()),
           static_cast<const void*>(valueNamed(*g, "big").data->data()));
  QCOMPARE(t->shape(), (std::vector<int64_t>{64, 80}));
  Tensor shared = *t;
  QVERIFY(shared.isAlias());
  shared.data<float>()[0] = 42.0f;  // copy on write
  QVERIFY(!shared.isAlias());
  QCOMPARE(floats("big")[0], 0.0f);
  QCOMPARE(t->valueAsDouble(0), 0.0);
  // Model inputs stay synthetic.
  auto x = leafTensor(*g, g->findValue("x"), 1);
  QVERIFY(x.isOk());
  QVERIFY(!x->isAlias());
}

void TestImport::ifSubgraphs() {
  auto g = importOnnxBytes(testmodels::withIf(), "if.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  QCOMPARE(g->nodes.size(), size_t{2});
  const Node* node = nodeNamed(*g, "if");
  QVERIFY(node);
  QCOMPARE(node->opType, std::string("If"));
  QCOMPARE(node->subgraphs.size(), size_t{2});
  QCOMPARE(node->subgraphs[0].first, std::string("then_branch"));
  QCOMPARE(node->subgraphs[1].first, std::string("else_branch"));
  // The outer 'x' read inside the branches is an implicit input of the If (after 'cond').
  QCOMPARE(node->inputs.size(), size_t{2});
  QCOMPARE(g->values[static_cast<size_t>(node->inputs[1])].name, std::string("x"));
  QCOMPARE(node->attrInt("partex.implicit_inputs", 0), int64_t{1});
  for (const auto& [name, sub] : node->subgraphs) {
    QVERIFY2(sub->verify().isOk(), sub->verify().message().c_str());
    QCOMPARE(sub->nodes.size(), size_t{1});
    const Value& x = valueNamed(*sub, "x");
    QVERIFY(x.isGraphInput);  // outer-scope placeholder
    QCOMPARE(x.shape, (std::vector<int64_t>{1, 4}));
    QCOMPARE(sub->opsetVersion, int64_t{13});
  }
  QCOMPARE(valueNamed(*g, "y").shape, (std::vector<int64_t>{1, 4}));
  QVERIFY(valueNamed(*g, "z").shapeKnown);
}

void TestImport::loopSubgraph() {
  auto g = importOnnxBytes(testmodels::withLoop(), "loop.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  const Node* loop = nodeNamed(*g, "loop");
  QVERIFY(loop);
  QCOMPARE(loop->subgraphs.size(), size_t{1});
  QCOMPARE(loop->subgraphs[0].first, std::string("body"));
  const Graph& body = *loop->subgraphs[0].second;
  QVERIFY2(body.verify().isOk(), body.verify().message().c_str());
  QCOMPARE(body.inputs.size(), size_t{3});
  QCOMPARE(body.outputs.size(), size_t{2});
  QCOMPARE(body.nodes.size(), size_t{2});
  const Value& w = valueNamed(body, "w");
  QVERIFY(w.isWeight);  // the outer initializer stays a weight inside the body
  QCOMPARE(w.shape, (std::vector<int64_t>{1, 4}));
  QCOMPARE(g->values[static_cast<size_t>(loop->inputs.back())].name, std::string("w"));
  QCOMPARE(valueNamed(*g, "v_final").shape, (std::vector<int64_t>{1, 4}));
  QVERIFY(valueNamed(*g, "y").shapeKnown);
}

void TestImport::unknownDomain() {
  auto g = importOnnxBytes(testmodels::withUnknownDomain(), "domain.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  const Node* fancy = nodeNamed(*g, "fancy");
  QVERIFY(fancy);
  QCOMPARE(fancy->opType, std::string("FancyOp"));
  QCOMPARE(fancy->domain, std::string("com.example"));
  QCOMPARE(fancy->attrInt("strength", 0), int64_t{3});
  bool warned = false;
  for (const auto& w : g->warnings)
    warned = warned || (w.find("com.example") != std::string::npos && w.find("FancyOp") != std::string::npos);
  QVERIFY(warned);
  // The exporter's value_info gives the opaque op's output shape, so the rest stays known.
  QCOMPARE(valueNamed(*g, "b").shape, (std::vector<int64_t>{1, 4}));
  QVERIFY(valueNamed(*g, "y").shapeKnown);
  // Default-domain nodes keep domain "".
  QCOMPARE(nodeNamed(*g, "before")->domain, std::string());
}

void TestImport::shapeChainFolds_data() {
  QTest::addColumn<bool>("checker");
  QTest::newRow("checker and data propagation") << true;
  QTest::newRow("no checker, no data propagation") << false;
}

void TestImport::shapeChainFolds() {
  QFETCH(bool, checker);
  ImportOptions opts;
  opts.runChecker = checker;
  auto g = importOnnxBytes(testmodels::withShapeChain(), "shapes.onnx", opts);
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  const std::map<std::string, int> expected{{"Expand", 1}, {"MatMul", 2}, {"Pad", 1},  {"Reshape", 2},
                                            {"Resize", 1}, {"Slice", 1},  {"Tile", 1}, {"Transpose", 2}};
  QCOMPARE(opCounts(*g), expected);
  QCOMPARE(valueNamed(*g, "r").shape, (std::vector<int64_t>{1, 16, 4, 16}));
  QCOMPARE(valueNamed(*g, "q").shape, (std::vector<int64_t>{1, 4, 16, 16}));
  QCOMPARE(valueNamed(*g, "scores").shape, (std::vector<int64_t>{1, 4, 16, 16}));
  QCOMPARE(valueNamed(*g, "proj").shape, (std::vector<int64_t>{1, 16, 64}));
  QCOMPARE(valueNamed(*g, "bias_e").shape, (std::vector<int64_t>{1, 16, 1}));
  QCOMPARE(valueNamed(*g, "tiled").shape, (std::vector<int64_t>{1, 32, 64}));
  QCOMPARE(valueNamed(*g, "sliced").shape, (std::vector<int64_t>{1, 16, 32}));
  QCOMPARE(valueNamed(*g, "image").shape, (std::vector<int64_t>{1, 16, 8, 8}));
  QCOMPARE(valueNamed(*g, "resized").shape, (std::vector<int64_t>{1, 16, 16, 16}));
  QCOMPARE(valueNamed(*g, "padded").shape, (std::vector<int64_t>{1, 16, 18, 18}));
  QCOMPARE(valueNamed(*g, "pads").intData, (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
  for (const auto& v : g->values)
    if (!v.isWeight) QVERIFY2(v.shapeKnown, v.name.c_str());
  // Folded shape tensors are weights that keep their (small integer) data.
  const Value& ns = valueNamed(*g, "new_shape");
  QVERIFY(ns.isWeight);
  QCOMPARE(ns.producer, kNone);
  QCOMPARE(ns.intData, (std::vector<int64_t>{1, 16, 4, 16}));
  QCOMPARE(valueNamed(*g, "repeats").intData, (std::vector<int64_t>{1, 2, 1}));
  // The ConstantOfShape weight: dtype and shape, no data.
  const Value& w = valueNamed(*g, "w");
  QVERIFY(w.isWeight);
  QCOMPARE(w.dtype, DType::Float32);
  QCOMPARE(w.shape, (std::vector<int64_t>{64, 64}));
  QVERIFY(w.intData.empty());
  // Weights: w, the shape tensors of the two Reshapes, Expand, Tile, Slice (3), Resize scales, Pad pads.
  QCOMPARE(g->paramBytes(), int64_t{64 * 64 * 4 + 4 * 8 + 4 * 8 + 3 * 8 + 3 * 8 + 3 * 8 + 4 * 4 + 8 * 8});
}

void TestImport::randomIsNotFolded() {
  auto g = importOnnxBytes(testmodels::withRandom(), "random.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> expected{{"Add", 1}, {"RandomNormal", 1}};
  QCOMPARE(opCounts(*g), expected);
  QCOMPARE(valueNamed(*g, "noise").shape, (std::vector<int64_t>{2, 3}));
  QVERIFY(!valueNamed(*g, "noise").isWeight);
}

void TestImport::namesAreInventedAndUnique() {
  auto g = importOnnxBytes(testmodels::withUnnamedAndDuplicateNames(), "names.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  std::vector<std::string> names;
  for (const auto& n : g->nodes) names.push_back(n.name);
  QCOMPARE(names, (std::vector<std::string>{"Relu_0", "Relu_3", "dup", "Relu_3_1", "dup_1"}));
  QVERIFY(g->findNode("Relu_3_1") != kNone);
}

void TestImport::unsortedNodesAreSorted() {
  auto g = importOnnxBytes(testmodels::unsorted(), "unsorted.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  checkInvariants(*g);
  std::vector<std::string> names;
  for (const auto& n : g->nodes) names.push_back(n.name);
  QCOMPARE(names, (std::vector<std::string>{"first", "second", "third"}));
}

void TestImport::attributesAndMetadata() {
  auto g = importOnnxBytes(testmodels::withSymbolicDims(), "sym.onnx", {.dims = bindings({"N=1", "H=8", "W=8"})});
  QVERIFY2(g.isOk(), g.message().c_str());
  QCOMPARE(g->name, std::string("test"));
  QCOMPARE(g->producerName, std::string("partex-testmodels"));
  QCOMPARE(g->irVersion, int64_t{8});
  QCOMPARE(g->opsetVersion, int64_t{13});
  QCOMPARE(g->sourcePath, std::string());
  const Node* conv = nodeNamed(*g, "conv");
  QVERIFY(conv);
  QCOMPARE(conv->attrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  QCOMPARE(conv->attrInts("kernel_shape"), (std::vector<int64_t>{3, 3}));
  QVERIFY(!conv->hasAttr("strides"));
  const Value& w = valueNamed(*g, "w");
  QVERIFY(w.isWeight);
  QVERIFY(!w.isGraphInput);
  QCOMPARE(w.shape, (std::vector<int64_t>{8, 3, 3, 3}));
  QCOMPARE(g->inputs.size(), size_t{1});
  QCOMPARE(g->outputs.size(), size_t{1});
  QVERIFY(g->values[static_cast<size_t>(g->outputs[0])].isGraphOutput);
}

void TestImport::sha256() {
  QCOMPARE(sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  QCOMPARE(sha256Hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  QCOMPARE(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
           std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
  QCOMPARE(sha256Hex(std::string(55, 'a')),
           std::string("9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"));
  QCOMPARE(sha256Hex(std::string(56, 'a')),
           std::string("b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"));
  QCOMPARE(sha256Hex(std::string(64, 'a')),
           std::string("ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"));
  QCOMPARE(sha256Hex(std::string(1000000, 'a')),
           std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

void TestImport::speed() {
  if (!optimizedBuild()) QSKIP("timings are only meaningful in an optimized build without sanitizers");
  // CPU time of the (single-threaded) import, so that a loaded machine does not fail the test;
  // wall time is printed too. Best of three runs.
  auto timeIt = [](const std::function<void()>& f, double& wallMs) {
    double best = -1;
    wallMs = -1;
    for (int i = 0; i < 3; ++i) {
      QElapsedTimer t;
      t.start();
      const std::clock_t c0 = std::clock();
      f();
      const double cpu = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      const auto wall = static_cast<double>(t.nsecsElapsed()) / 1e6;
      best = best < 0 ? cpu : std::min(best, cpu);
      wallMs = wallMs < 0 ? wall : std::min(wallMs, wall);
    }
    return best;
  };
  auto warm = importOnnxBytes(testmodels::tiny(), "warm.onnx");  // ONNX schema registry start-up
  QVERIFY(warm.isOk());
  // 10,000 operators in well under a second.
  const std::string big = testmodels::largeDag(10000);
  double wall = 0;
  const double cpu = timeIt(
      [&] {
        auto g = importOnnxBytes(big, "big.onnx");
        QVERIFY2(g.isOk() && g->nodes.size() == 10000, g.message().c_str());
      },
      wall);
  qInfo("10,000-node DAG: %.1f ms CPU, %.1f ms wall", cpu, wall);
  QVERIFY2(cpu < 1000, qPrintable(QString("10,000-node import took %1 ms CPU").arg(cpu)));
  if (test::sharedModelsDir().empty()) return;
  const double dense = timeIt(
      [&] {
        auto g = importOnnxFile(test::sharedModel("light_densenet121.onnx"));
        QVERIFY2(g.isOk(), g.message().c_str());
      },
      wall);
  qInfo("DenseNet-121 (1,746 nodes): %.1f ms CPU, %.1f ms wall", dense, wall);
  QVERIFY2(dense < 150, qPrintable(QString("DenseNet-121 import took %1 ms CPU").arg(dense)));
}

QTEST_APPLESS_MAIN(TestImport)
#include "tst_import.moc"
