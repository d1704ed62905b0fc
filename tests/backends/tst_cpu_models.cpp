// Whole models through the CPU backend, operator by operator, with seeded random weights and inputs:
// every operator of the shared real models and of the generated models must be supported, run, produce
// finite outputs, and give the same outputs on the two-thread team as on one thread. (Values are checked
// against ONNX's references in tst_cpu_conformance and against ONNX Runtime's in tst_ort_outputs; here the
// point is coverage and robustness on real graphs.) On every shared model, the fused kernels (the
// runtime's groups, channels-last tensors between them) give the outputs of the operators run one by one.

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "profile/executor.h"
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

/// Imports nothing itself: checks support, feeds synthetic data, runs on `device` and on `refDevice`
/// (another thread count, so that each kernel's split of its work across threads is checked against
/// its one-thread run), checks finiteness and that the two agree on every model output.
void runWholeGraph(const Graph& g, const std::string& device, const std::string& refDevice) {
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
  std::map<ValueId, Tensor> ref = values;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = test::runGraph(g, *backend, device, values, finiteCheck);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY2(s.isOk(), s.message().c_str());
  for (ValueId v : g.outputs) QVERIFY2(values.count(v), g.values[static_cast<size_t>(v)].name.c_str());
  Status rs = test::runGraph(g, *backend, refDevice, ref);
  QVERIFY2(rs.isOk(), rs.message().c_str());
  for (ValueId v : g.outputs) {
    double maxAbs = 0, maxRel = 0;
    std::string why;
    QVERIFY2(tensorsClose(ref[v], values[v], 1e-4, maxAbs, maxRel, &why),
             (g.values[static_cast<size_t>(v)].name + " on " + device + " against " + refDevice + ": " + why).c_str());
  }
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
    runWholeGraph(*g, "cpu-parallel", "core0");
  }

  void fusedMatchesUnfused_data() { sharedModels_data(); }
  /// Each shared model with its fused groups as single kernels against every operator alone (both on
  /// core0), on the model's own weights and the same seeded inputs: every output within 1e-4 of the reference (relative
  /// to the output's largest magnitude: folding BatchNormalization into weights rounds differently).
  void fusedMatchesUnfused() {
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
    auto backend = makeCpuBackend();
    std::map<ValueId, Tensor> leaves;
    for (ValueId v = 0; v < static_cast<ValueId>(g->values.size()); ++v) {
      const Value& val = g->values[static_cast<size_t>(v)];
      if (!(val.isWeight || val.isGraphInput) || val.consumers.empty()) continue;
      auto t = leafTensor(*g, v, 42);  // the model's own weights (the fused HardSwish reads its 3 and 6)
      QVERIFY2(t.isOk(), t.message().c_str());
      leaves[v] = std::move(*t);
    }
    std::map<ValueId, Tensor> ref = leaves, got = leaves;
    Status s = test::runGraph(*g, *backend, "core0", ref);
    QVERIFY2(s.isOk(), s.message().c_str());
    auto fused = test::runGraphFused(*g, *backend, "core0", got);
    QVERIFY2(fused.isOk(), fused.message().c_str());
    if (std::any_of(g->nodes.begin(), g->nodes.end(), [](const Node& n) { return n.opType == "Conv"; }))
      QVERIFY2(*fused > 0, "a CNN with no fused kernel");
    for (ValueId o : g->outputs) {
      QVERIFY(ref.count(o) && got.count(o));
      Tensor a, b;
      QVERIFY(ref[o].toPlain(a).isOk() && got[o].toPlain(b).isOk());
      double maxAbs = 0, maxRel = 0;
      std::string why;
      QVERIFY2(tensorsClose(a, b, 1e-4, maxAbs, maxRel, &why),
               (g->values[static_cast<size_t>(o)].name + ": " + why).c_str());
    }
    qInfo("%d fused kernels", *fused);
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
    runWholeGraph(*g, "cpu-parallel", "cpu-serial");
  }
};

QTEST_GUILESS_MAIN(TestCpuModels)
#include "tst_cpu_models.moc"
