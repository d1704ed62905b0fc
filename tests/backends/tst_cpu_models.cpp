// Whole models through the CPU backend, operator by operator, with seeded random weights and inputs:
// every operator of the shared real models and of the generated models must be supported, run, and
// produce finite outputs. (Values are checked against ONNX's references in tst_cpu_conformance; here the
// point is coverage and robustness on real graphs.)

#include <QtTest>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "onnx/generator.h"
#include "onnx/importer.h"
#include "testutil.h"

using namespace partex;

namespace {

/// "" when every element of a float tensor is finite.
std::string finiteCheck(const Node&, const Tensor& t) {
  if (t.dtype() == DType::Float32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numElements(); ++i)
      if (!std::isfinite(p[i])) return "non-finite value at element " + std::to_string(i) + " of " + t.describe();
  }
  return "";
}

/// Imports nothing itself: checks support, feeds synthetic data, runs, checks finiteness.
void runWholeGraph(const Graph& g, const std::string& device) {
  auto backend = makeCpuBackend();
  std::set<std::string> unsupported;
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    std::string why;
    if (!backend->supports(g, op, &why)) unsupported.insert(why);
  }
  std::string list;
  for (const auto& u : unsupported) list += u + "; ";
  QVERIFY2(unsupported.empty(), list.c_str());
  std::map<ValueId, Tensor> values;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v) {
    const Value& val = g.values[static_cast<size_t>(v)];
    if (!(val.isWeight || val.isGraphInput) || val.consumers.empty()) continue;
    auto t = syntheticTensor(g, v, 42);
    QVERIFY2(t.isOk(), t.message().c_str());
    values[v] = std::move(*t);
  }
  const auto t0 = std::chrono::steady_clock::now();
  Status s = test::runGraph(g, *backend, device, values, finiteCheck);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY2(s.isOk(), s.message().c_str());
  for (ValueId v : g.outputs) QVERIFY2(values.count(v), g.values[static_cast<size_t>(v)].name.c_str());
  qInfo("%zu operators on %s in %.0f ms (kernel preparation included)", g.nodes.size(), device.c_str(), ms);
}

}  // namespace

class TestCpuModels : public QObject {
  Q_OBJECT

 private slots:
  void sharedModels_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("dims");
    for (const char* f :
         {"mnist.onnx", "light_squeezenet.onnx", "light_bvlc_alexnet.onnx", "light_zfnet512.onnx",
          "light_shufflenet.onnx", "light_inception_v1.onnx", "light_inception_v2.onnx", "light_resnet50.onnx",
          "light_densenet121.onnx", "light_vgg19.onnx", "yolox_nano.onnx", "Ultraface.version-RFB-320.onnx"})
      QTest::newRow(f) << f << QStringList();
    QTest::newRow("ch_ppocr_mobile_v2.0_cls_infer.onnx")
        << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << QStringList{"x:0=1", "x:2=48", "x:3=192"};
    QTest::newRow("ch_PP-OCRv4_det_infer.onnx")
        << "ch_PP-OCRv4_det_infer.onnx" << QStringList{"x:0=1", "x:2=320", "x:3=320"};
  }
  /// Each shared model end to end on cpu-parallel.
  void sharedModels() {
    PARTEX_REQUIRE_SHARED_MODELS();
    QFETCH(QString, file);
    QFETCH(QStringList, dims);
    const std::string path = test::sharedModel(file.toStdString());
    if (!std::filesystem::exists(path)) QSKIP("model file absent");
    ImportOptions opts;
    for (const QString& d : dims) {
      auto b = parseDimBinding(d.toStdString());
      QVERIFY2(b.isOk(), b.message().c_str());
      opts.dims.push_back(*b);
    }
    auto g = importOnnxFile(path, opts);
    QVERIFY2(g.isOk(), g.message().c_str());
    runWholeGraph(*g, "cpu-parallel");
  }

  void generated_data() {
    QTest::addColumn<QString>("kind");
    for (const char* k : {"bert", "gpt2", "resnet18", "mobilenetv2", "inception", "random"}) QTest::newRow(k) << k;
  }
  /// The generator's models (small configurations) end to end on cpu-serial.
  void generated() {
    QFETCH(QString, kind);
    GenSpec spec;
    spec.kind = kind.toStdString();
    spec.imageSize = 64;
    spec.numClasses = 10;
    spec.layers = 2;
    spec.seqLen = 16;
    spec.hidden = 64;
    spec.heads = 4;
    spec.vocab = 100;
    spec.nodes = 40;
    auto g = test::generatedGraph(spec);
    QVERIFY2(g.isOk(), g.message().c_str());
    runWholeGraph(*g, "cpu-serial");
  }
};

QTEST_GUILESS_MAIN(TestCpuModels)
#include "tst_cpu_models.moc"
