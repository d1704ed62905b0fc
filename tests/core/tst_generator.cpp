// The model generator: every kind generates deterministically, imports through the ONNX importer
// with the expected operators, and its Conv/Gemm/MatMul MACs (computed here from the imported IR
// shapes) equal independent closed-form counts of the architectures.
#include <QtTest>

#include <QElapsedTimer>

#include <filesystem>
#include <map>
#include <set>

#include "gen/generator.h"
#include "onnx/importer.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

Result<Graph> generateAndImport(const GenSpec& spec) {
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  return importOnnxBytes(*bytes, spec.kind + ".onnx");
}

std::map<std::string, int> opCounts(const Graph& g) {
  std::map<std::string, int> m;
  for (const auto& n : g.nodes) ++m[n.opType];
  return m;
}

int64_t numel(const Value& v) {
  int64_t n = 1;
  for (int64_t d : v.shape) n *= d;
  return n;
}

/// Multiply-accumulates of Conv, Gemm and MatMul from the IR shapes; -1 when a shape is missing.
int64_t macsFromShapes(const Graph& g) {
  int64_t total = 0;
  for (const auto& n : g.nodes) {
    if (n.opType != "Conv" && n.opType != "Gemm" && n.opType != "MatMul") continue;
    const Value& a = g.values[n.inputs.at(0)];
    const Value& w = g.values[n.inputs.at(1)];
    const Value& y = g.values[n.outputs.at(0)];
    if (!a.shapeKnown || !w.shapeKnown || !y.shapeKnown) return -1;
    if (n.opType == "Conv")  // out elements x (Cin/group x kh x kw)
      total += numel(y) * (numel(w) / w.shape.at(0));
    else if (n.opType == "Gemm")
      total += numel(y) * (n.attrInt("transA", 0) ? a.shape.at(0) : a.shape.at(1));
    else
      total += numel(y) * a.shape.back();
  }
  return total;
}

int64_t floorOut(int64_t in, int64_t k, int64_t s, int64_t p) {
  return (in + 2 * p - k) / s + 1;
}

/// torchvision ResNet-18 Conv+Gemm MACs, in closed form.
int64_t resnet18Macs(int64_t size, int64_t classes) {
  int64_t h = floorOut(size, 7, 2, 3);
  int64_t macs = h * h * 64 * 3 * 49;
  h = floorOut(h, 3, 2, 1);
  macs += 4 * h * h * 64 * 64 * 9;  // layer1: four 3x3 convs
  for (int64_t c = 128; c <= 512; c *= 2) {
    h = floorOut(h, 3, 2, 1);
    macs += h * h * c * (c / 2) * 9;  // strided conv1
    macs += 3 * h * h * c * c * 9;    // conv2 and the second block
    macs += h * h * c * (c / 2);      // 1x1 downsample
  }
  return macs + 512 * classes;
}

/// torchvision MobileNetV2 (width 1.0) Conv+Gemm MACs.
int64_t mobilenetV2Macs(int64_t size, int64_t classes) {
  int64_t h = floorOut(size, 3, 2, 1);
  int64_t macs = h * h * 32 * 3 * 9, c = 32;
  const int64_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                             {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& s : cfg) {
    for (int64_t i = 0; i < s[2]; ++i) {
      const int64_t hid = c * s[0];
      if (s[0] != 1) macs += h * h * hid * c;  // expand 1x1
      h = floorOut(h, 3, i == 0 ? s[3] : 1, 1);
      macs += h * h * hid * 9;     // depthwise 3x3
      macs += h * h * s[1] * hid;  // project 1x1
      c = s[1];
    }
  }
  macs += h * h * 1280 * c;
  return macs + 1280 * classes;
}

/// Transformer MACs: per block four HxH projections, the FFN (H->4H->H) and the two attention
/// products (S x S x H each).
int64_t encoderBlockMacs(int64_t b, int64_t s, int64_t h) {
  return b * (4 * s * h * h + 2 * s * h * 4 * h + 2 * s * s * h);
}

/// Node names are unique and carry '.'-separated scopes (the GUI groups by them); only a few
/// top-level modules (torchvision's conv1, fc, ...) sit at the root.
void checkNamesScoped(const Graph& g) {
  std::set<std::string> names;
  size_t scoped = 0;
  for (const auto& n : g.nodes) {
    QVERIFY2(!n.name.empty(), "empty node name");
    QVERIFY2(names.insert(n.name).second, ("duplicate node name " + n.name).c_str());
    if (n.name.find('.') != std::string::npos) ++scoped;
  }
  QVERIFY2(scoped * 5 >= g.nodes.size() * 4, "most node names should have a scope");
}

}  // namespace

class TestGenerator : public QObject {
  Q_OBJECT
 private slots:
  void kinds();
  void deterministic_data();
  void deterministic();
  void seedChangesRandomModels();
  void resnet18();
  void resnet18Weights();
  void mobilenetv2();
  void inception();
  void bert();
  void bertScalesLinearlyWithLayers();
  void gpt2();
  void recommenders();
  void randomDag_data();
  void randomDag();
  void largeRandomDags();
  void invalidSpecs_data();
  void invalidSpecs();
  void writesFile();
};

void TestGenerator::kinds() {
  const std::vector<std::string> expected{"resnet18", "mobilenetv2", "inception", "bert",
                                          "gpt2",     "random",      "widedeep",  "multitower", "llama", "moe"};
  QCOMPARE(generatorKinds(), expected);
}

void TestGenerator::deterministic_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<bool>("weights");
  for (const auto& k : generatorKinds()) {
    QTest::newRow((k + "/placeholders").c_str()) << QString::fromStdString(k) << false;
    QTest::newRow((k + "/weights").c_str()) << QString::fromStdString(k) << true;
  }
}

void TestGenerator::deterministic() {
  QFETCH(QString, kind);
  QFETCH(bool, weights);
  GenSpec s;
  s.kind = kind.toStdString();
  s.weights = weights;
  s.seed = 7;
  s.layers = 2;  // keeps the transformers' weights small
  s.vocab = 1000;
  s.nodes = 500;
  auto a = generateModel(s);
  auto b = generateModel(s);
  QVERIFY2(a.isOk(), a.message().c_str());
  QVERIFY2(b.isOk(), b.message().c_str());
  QVERIFY(*a == *b);
  QVERIFY(a->size() > 100);
}

void TestGenerator::seedChangesRandomModels() {
  GenSpec s;
  s.kind = "random";
  s.nodes = 300;
  s.seed = 1;
  auto a = generateModel(s);
  s.seed = 2;
  auto b = generateModel(s);
  QVERIFY(a.isOk() && b.isOk());
  QVERIFY(*a != *b);
  // With weights the seed also changes every architecture's data; without, only the random DAG.
  GenSpec r;
  r.kind = "resnet18";
  r.imageSize = 32;
  r.weights = true;
  r.seed = 1;
  auto c = generateModel(r);
  r.seed = 2;
  auto d = generateModel(r);
  QVERIFY(c.isOk() && d.isOk());
  QVERIFY(*c != *d);
  QCOMPARE(c->size(), d->size());
}

void TestGenerator::resnet18() {
  GenSpec s;
  s.kind = "resnet18";
  auto bytes = generateModel(s);
  QVERIFY2(bytes.isOk(), bytes.message().c_str());
  QVERIFY2(bytes->size() < 100 * 1024, "placeholder weights must keep the file small");
  auto g = importOnnxBytes(*bytes, "resnet18.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> expected{{"Conv", 20},   {"BatchNormalization", 20}, {"Relu", 17},   {"Add", 8},
                                            {"MaxPool", 1}, {"GlobalAveragePool", 1},   {"Flatten", 1}, {"Gemm", 1}};
  QCOMPARE(opCounts(*g), expected);
  QCOMPARE(g->nodes.size(), size_t{69});
  QCOMPARE(macsFromShapes(*g), int64_t{1814073344});
  QCOMPARE(macsFromShapes(*g), resnet18Macs(224, 1000));
  QVERIFY(g->findNode("layer1.0.conv1") != kNone);
  QVERIFY(g->findNode("layer4.0.downsample.0") != kNone);
  QVERIFY(g->findNode("fc") != kNone);
  checkNamesScoped(*g);
  QCOMPARE(g->inputs.size(), size_t{1});
  QCOMPARE(g->values[g->inputs[0]].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  QCOMPARE(g->outputs.size(), size_t{1});
  QCOMPARE(g->values[g->outputs[0]].shape, (std::vector<int64_t>{1, 1000}));
  QCOMPARE(g->opsetVersion, int64_t{13});
  QCOMPARE(g->irVersion, int64_t{8});

  // Other sizes, batch and classes follow the same closed form.
  s.imageSize = 96;
  s.batch = 2;
  s.numClasses = 10;
  auto g2 = generateAndImport(s);
  QVERIFY2(g2.isOk(), g2.message().c_str());
  QCOMPARE(macsFromShapes(*g2), 2 * resnet18Macs(96, 10));
}

void TestGenerator::resnet18Weights() {
  // torchvision's 11,689,512 parameters plus the BatchNorm running mean and variance (2 x 4800).
  const int64_t paramBytes = (11689512 + 2 * 4800) * 4;
  GenSpec s;
  s.kind = "resnet18";
  s.weights = true;
  auto bytes = generateModel(s);
  QVERIFY2(bytes.isOk(), bytes.message().c_str());
  QVERIFY(int64_t(bytes->size()) > paramBytes);
  QVERIFY(int64_t(bytes->size()) < paramBytes + 64 * 1024);
  auto g = importOnnxBytes(*bytes, "resnet18.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  QCOMPARE(g->nodes.size(), size_t{69});
  QCOMPARE(g->paramBytes(), paramBytes);
  QCOMPARE(macsFromShapes(*g), int64_t{1814073344});

  // The placeholder model folds into weights of the same sizes.
  s.weights = false;
  auto light = generateAndImport(s);
  QVERIFY2(light.isOk(), light.message().c_str());
  QVERIFY(light->paramBytes() >= paramBytes);
  QVERIFY(light->paramBytes() < paramBytes + 16 * 1024);  // plus shape initializers if they are kept
}

void TestGenerator::mobilenetv2() {
  GenSpec s;
  s.kind = "mobilenetv2";
  auto g = generateAndImport(s);
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> expected{{"Conv", 52}, {"BatchNormalization", 52}, {"Clip", 35},
                                            {"Add", 10},  {"GlobalAveragePool", 1},   {"Flatten", 1},
                                            {"Gemm", 1}};
  QCOMPARE(opCounts(*g), expected);
  int depthwise = 0;
  for (const auto& n : g->nodes)
    if (n.opType == "Conv" && n.attrInt("group", 1) > 1) ++depthwise;
  QCOMPARE(depthwise, 17);
  QCOMPARE(macsFromShapes(*g), mobilenetV2Macs(224, 1000));
  QCOMPARE(macsFromShapes(*g), int64_t{300774272});  // torchvision: 300.77 M
  QVERIFY(g->findNode("features.2.conv.1.0") != kNone);
  QVERIFY(g->findNode("classifier.1") != kNone);
  checkNamesScoped(*g);
}

void TestGenerator::inception() {
  GenSpec s;
  s.kind = "inception";
  auto g = generateAndImport(s);
  QVERIFY2(g.isOk(), g.message().c_str());
  const std::map<std::string, int> expected{{"Conv", 57},   {"Relu", 57}, {"MaxPool", 13},
                                            {"Concat", 9},  {"LRN", 2},   {"GlobalAveragePool", 1},
                                            {"Flatten", 1}, {"Gemm", 1}};
  QCOMPARE(opCounts(*g), expected);
  // Same topology as onnx's light_inception_v1 (GoogLeNet): same MACs as its reference.
  QCOMPARE(macsFromShapes(*g), int64_t{1431556352});
  const OpId concat = g->findNode("inception_4c.output");
  QVERIFY(concat != kNone);
  QCOMPARE(g->nodes[concat].inputs.size(), size_t{4});
  QCOMPARE(g->values[g->nodes[concat].outputs[0]].shape, (std::vector<int64_t>{1, 512, 13, 13}));
  checkNamesScoped(*g);
}

void TestGenerator::bert() {
  GenSpec s;
  s.kind = "bert";
  auto bytes = generateModel(s);
  QVERIFY2(bytes.isOk(), bytes.message().c_str());
  QVERIFY(bytes->size() < 1024 * 1024);
  auto g = importOnnxBytes(*bytes, "bert.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  auto ops = opCounts(*g);
  QCOMPARE(int(g->nodes.size()), 20 + 50 * 12);
  QCOMPARE(ops["MatMul"], 8 * 12 + 1);
  QCOMPARE(ops["Softmax"], 12);
  QCOMPARE(ops["Erf"], 12);
  QCOMPARE(ops["Reshape"], 4 * 12);
  QCOMPARE(ops["Transpose"], 4 * 12);
  QCOMPARE(ops["ReduceMean"], 2 * 25);
  QCOMPARE(ops["Sqrt"], 25);
  QCOMPARE(ops["Gather"], 2);  // word embeddings and the pooler's first token
  QCOMPARE(ops["Tanh"], 1);
  // The dynamic-shape head split (Shape, Gather, Unsqueeze, Concat) is shape arithmetic on static
  // shapes: the importer folds it, like the ConstantOfShape weights.
  QCOMPARE(ops.count("Shape"), size_t{0});
  QCOMPARE(ops.count("Concat"), size_t{0});
  QCOMPARE(ops.count("ConstantOfShape"), size_t{0});
  QCOMPARE(macsFromShapes(*g), 12 * encoderBlockMacs(1, 128, 768) + 768 * 768);
  QVERIFY(g->findNode("encoder.layer.3.attention.self.query.matmul") != kNone);
  QVERIFY(g->findNode("encoder.layer.11.output.LayerNorm.div") != kNone);
  QCOMPARE(g->inputs.size(), size_t{2});
  QCOMPARE(g->values[g->inputs[0]].dtype, DType::Int64);
  QCOMPARE(g->values[g->inputs[0]].shape, (std::vector<int64_t>{1, 128}));
  QCOMPARE(g->outputs.size(), size_t{2});
  QCOMPARE(g->values[g->outputs[0]].shape, (std::vector<int64_t>{1, 128, 768}));
  QCOMPARE(g->values[g->outputs[1]].shape, (std::vector<int64_t>{1, 768}));
  checkNamesScoped(*g);
}

void TestGenerator::bertScalesLinearlyWithLayers() {
  GenSpec s;
  s.kind = "bert";
  s.hidden = 256;
  s.heads = 4;
  s.seqLen = 64;
  s.batch = 2;
  s.vocab = 1000;
  std::vector<int64_t> nodes, macs;
  for (int64_t layers : {1, 2, 5}) {
    s.layers = layers;
    auto g = generateAndImport(s);
    QVERIFY2(g.isOk(), g.message().c_str());
    nodes.push_back(int64_t(g->nodes.size()));
    macs.push_back(macsFromShapes(*g));
  }
  QCOMPARE(nodes[0], int64_t{70});
  QCOMPARE(nodes[1] - nodes[0], int64_t{50});
  QCOMPARE(nodes[2] - nodes[0], int64_t{4 * 50});
  QCOMPARE(macs[1] - macs[0], encoderBlockMacs(2, 64, 256));
  QCOMPARE(macs[2] - macs[0], 4 * encoderBlockMacs(2, 64, 256));
}

void TestGenerator::gpt2() {
  GenSpec s;
  s.kind = "gpt2";
  s.vocab = 50257;
  auto g = generateAndImport(s);
  QVERIFY2(g.isOk(), g.message().c_str());
  auto ops = opCounts(*g);
  QCOMPARE(int(g->nodes.size()), 16 + 47 * 12);
  QCOMPARE(ops["MatMul"], 6 * 12 + 1);
  QCOMPARE(ops["Split"], 12);
  QCOMPARE(ops["Where"], 12);
  QCOMPARE(ops["Softmax"], 12);
  QCOMPARE(ops["Erf"], 12);
  QCOMPARE(ops["Expand"], 1);
  QCOMPARE(ops["Gather"], 1);
  QCOMPARE(ops["ReduceMean"], 2 * 25);
  QCOMPARE(macsFromShapes(*g), 12 * encoderBlockMacs(1, 128, 768) + int64_t{128} * 768 * 50257);
  const OpId lm = g->findNode("lm_head");
  QVERIFY(lm != kNone);
  QCOMPARE(g->values[g->nodes[lm].outputs[0]].shape, (std::vector<int64_t>{1, 128, 50257}));
  QVERIFY(g->findNode("transformer.h.0.attn.c_attn.matmul") != kNone);
  checkNamesScoped(*g);
}

/// Wide & Deep: per sparse feature an embedding and a wide Gather, a deep MLP of halving layers and a
/// wide sum; multi-tower: towers of different widths over one bottom. The shapes and sizes follow the spec.
void TestGenerator::recommenders() {
  GenSpec s;
  s.kind = "widedeep";
  s.batch = 64;
  s.width = 26;
  s.layers = 3;
  s.hidden = 1024;
  auto g = generateAndImport(s);
  QVERIFY2(g.isOk(), g.message().c_str());
  auto ops = opCounts(*g);
  QCOMPARE(ops["Gather"], 2 * 26);
  QCOMPARE(ops["MatMul"], 3 + 1 + 1);  // deep layers, deep logit, wide dense
  QCOMPARE(ops["Sum"], 1);
  const OpId concat = g->findNode("deep.concat");
  QVERIFY(concat != kNone);
  QCOMPARE(g->values[g->nodes[concat].outputs[0]].shape, (std::vector<int64_t>{64, 13 + 26 * 32}));
  const OpId last = g->findNode("deep.layer2.relu");
  QVERIFY(last != kNone);
  QCOMPARE(g->values[g->nodes[last].outputs[0]].shape, (std::vector<int64_t>{64, 256}));  // 1024, 512, 256
  QCOMPARE(g->values[g->outputs[0]].shape, (std::vector<int64_t>{64, 1}));
  int64_t embeddingBytes = 0;
  for (const Value& v : g->values)
    if (v.isWeight && v.name.find(".embedding.weight") != std::string::npos) embeddingBytes += v.bytes();
  QCOMPARE(embeddingBytes, int64_t{26} * 100000 * 32 * 4);  // the default 100,000 rows per table
  checkNamesScoped(*g);

  GenSpec t;
  t.kind = "multitower";
  t.width = 5;
  t.layers = 2;
  t.hidden = 256;
  auto m = generateAndImport(t);
  QVERIFY2(m.isOk(), m.message().c_str());
  QCOMPARE(opCounts(*m)["MatMul"], 1 + 5 * (2 + 1));
  QCOMPARE(m->values[m->outputs[0]].shape, (std::vector<int64_t>{1, 5}));
  const OpId small = m->findNode("tower2.layer1.relu");
  QVERIFY(small != kNone);
  QCOMPARE(m->values[m->nodes[small].outputs[0]].shape, (std::vector<int64_t>{1, 64}));  // 256 >> 2
  s.width = 0;
  QVERIFY(!generateModel(s).isOk());
}

void TestGenerator::randomDag_data() {
  QTest::addColumn<qlonglong>("nodes");
  QTest::addColumn<qlonglong>("width");
  QTest::addColumn<bool>("weights");
  QTest::newRow("1") << 1LL << 8LL << false;
  QTest::newRow("2 wide") << 2LL << 16LL << false;
  QTest::newRow("chain") << 200LL << 1LL << false;
  QTest::newRow("100") << 100LL << 8LL << false;
  QTest::newRow("1000 wide") << 1000LL << 64LL << false;
  QTest::newRow("500 weights") << 500LL << 4LL << true;
}

void TestGenerator::randomDag() {
  QFETCH(qlonglong, nodes);
  QFETCH(qlonglong, width);
  QFETCH(bool, weights);
  GenSpec s;
  s.kind = "random";
  s.nodes = nodes;
  s.width = width;
  s.weights = weights;
  s.seed = 11;
  auto g = generateAndImport(s);
  QVERIFY2(g.isOk(), g.message().c_str());
  QCOMPARE(int64_t(g->nodes.size()), int64_t(nodes));
  QVERIFY(g->verify().isOk());
  // Every operator is reachable from the input (weights have no producer).
  std::vector<char> seen(g->nodes.size(), 0);
  std::vector<OpId> stack;
  for (ValueId in : g->inputs)
    for (OpId c : g->values[in].consumers)
      if (!seen[c]) seen[c] = 1, stack.push_back(c);
  while (!stack.empty()) {
    OpId op = stack.back();
    stack.pop_back();
    for (OpId c : g->successors(op))
      if (!seen[c]) seen[c] = 1, stack.push_back(c);
  }
  for (size_t i = 0; i < seen.size(); ++i) QVERIFY2(seen[i], ("unreachable node " + g->nodes[i].name).c_str());
  // Every operator output feeds another operator or is a model output.
  for (const auto& n : g->nodes)
    for (ValueId v : n.outputs)
      QVERIFY2(!g->values[v].consumers.empty() || g->values[v].isGraphOutput, ("dead output of " + n.name).c_str());
  for (const auto& n : g->nodes) {
    static const std::set<std::string> allowed{"Conv", "Relu", "Sigmoid", "MatMul", "Add", "Concat"};
    QVERIFY2(allowed.count(n.opType), n.opType.c_str());
  }
  if (nodes >= 100) {
    auto ops = opCounts(*g);
    QVERIFY(ops["Conv"] > 0 && ops["Add"] > 0 && ops["Concat"] > 0 && ops["MatMul"] > 0);
    QVERIFY(macsFromShapes(*g) > 0);
  }
  checkNamesScoped(*g);
}

void TestGenerator::largeRandomDags() {
  GenSpec s;
  s.kind = "random";
  s.width = 8;
  for (int64_t n : {10000, 100000}) {
    s.nodes = n;
    QElapsedTimer t;
    t.start();
    auto bytes = generateModel(s);
    const qint64 genMs = t.elapsed();
    QVERIFY2(bytes.isOk(), bytes.message().c_str());
    t.restart();
    auto g = importOnnxBytes(*bytes, "random.onnx");
    const qint64 importMs = t.elapsed();
    QVERIFY2(g.isOk(), g.message().c_str());
    QCOMPARE(int64_t(g->nodes.size()), n);
    qInfo("random %lld nodes: %lld bytes, generated in %lld ms, imported in %lld ms", (long long)n,
          (long long)bytes->size(), (long long)genMs, (long long)importMs);
    QVERIFY2(genMs < 30000, "generation must take seconds, not minutes");
  }
}

void TestGenerator::invalidSpecs_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QString>("field");
  QTest::addColumn<qlonglong>("value");
  QTest::addColumn<QString>("expect");  // a fragment of the message
  QTest::newRow("unknown kind") << "vgg"
                                << "" << 0LL << "unknown kind 'vgg'";
  QTest::newRow("empty kind") << ""
                              << "" << 0LL << "unknown kind";
  QTest::newRow("zero nodes") << "random"
                              << "nodes" << 0LL << "nodes 0";
  QTest::newRow("negative nodes") << "random"
                                  << "nodes" << -3LL << "nodes -3";
  QTest::newRow("zero width") << "random"
                              << "width" << 0LL << "width 0";
  QTest::newRow("hidden not divisible") << "bert"
                                        << "hidden" << 100LL << "not divisible by heads";
  QTest::newRow("zero heads") << "gpt2"
                              << "heads" << 0LL << "heads 0";
  QTest::newRow("zero layers") << "bert"
                               << "layers" << 0LL << "layers 0";
  QTest::newRow("zero seq") << "gpt2"
                            << "seqLen" << 0LL << "seqLen 0";
  QTest::newRow("negative vocab") << "bert"
                                  << "vocab" << -5LL << "vocab -5";
  QTest::newRow("zero batch") << "resnet18"
                              << "batch" << 0LL << "batch 0";
  QTest::newRow("zero image") << "mobilenetv2"
                              << "imageSize" << 0LL << "imageSize 0";
  QTest::newRow("zero classes") << "resnet18"
                                << "numClasses" << 0LL << "numClasses 0";
  QTest::newRow("image too small") << "inception"
                                   << "imageSize" << 16LL << "too small";
  QTest::newRow("weight too large") << "bert"
                                    << "hidden" << 49152LL << "2^31";
}

void TestGenerator::invalidSpecs() {
  QFETCH(QString, kind);
  QFETCH(QString, field);
  QFETCH(qlonglong, value);
  QFETCH(QString, expect);
  GenSpec s;
  s.kind = kind.toStdString();
  if (field == "nodes") s.nodes = value;
  if (field == "width") s.width = value;
  if (field == "hidden") s.hidden = value;
  if (field == "heads") s.heads = value;
  if (field == "layers") s.layers = value;
  if (field == "seqLen") s.seqLen = value;
  if (field == "vocab") s.vocab = value;
  if (field == "batch") s.batch = value;
  if (field == "imageSize") s.imageSize = value;
  if (field == "numClasses") s.numClasses = value;
  if (field == "hidden" && value % s.heads == 0) s.vocab = 1000;
  auto r = generateModel(s);
  QVERIFY(!r.isOk());
  const std::string& m = r.message();
  QVERIFY2(m.find(expect.toStdString()) != std::string::npos, m.c_str());
  QVERIFY2(m.find('\n') == std::string::npos, "messages are one line");
  QVERIFY2(m.rfind("generate", 0) == 0, m.c_str());
  const std::string path = test::tempDir() + "/invalid.onnx";
  QVERIFY(!generateModelFile(s, path).isOk());
  QVERIFY(!std::filesystem::exists(path));
}

void TestGenerator::writesFile() {
  GenSpec s;
  s.kind = "mobilenetv2";
  s.imageSize = 64;
  const std::string path = test::tempDir() + "/mobilenetv2.onnx";
  auto st = generateModelFile(s, path);
  QVERIFY2(st.isOk(), st.message().c_str());
  auto bytes = generateModel(s);
  QVERIFY(bytes.isOk());
  auto onDisk = readFile(path);
  QVERIFY(onDisk.isOk());
  QVERIFY(*onDisk == *bytes);
  auto g = importOnnxFile(path);
  QVERIFY2(g.isOk(), g.message().c_str());
  QCOMPARE(g->nodes.size(), size_t{152});
  QCOMPARE(macsFromShapes(*g), mobilenetV2Macs(64, 1000));
  QVERIFY(!generateModelFile(s, test::tempDir() + "/no/such/dir/x.onnx").isOk());
}

QTEST_APPLESS_MAIN(TestGenerator)
#include "tst_generator.moc"
