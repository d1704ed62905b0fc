// Every shared model imports and its Conv/ConvTranspose/Gemm/MatMul MACs match the reference column
// of ../shared/models/README.md within 1%.
#include <QtTest>

#include <map>

#include "cost/work.h"
#include "onnx/importer.h"
#include "testutil.h"

using namespace partex;

class TestSharedModels : public QObject {
  Q_OBJECT
 private slots:
  void macsMatchReference_data();
  void macsMatchReference();
  void everyOperatorHasKnownShapesAndWork_data() { macsMatchReference_data(); }
  void everyOperatorHasKnownShapesAndWork();
};

void TestSharedModels::macsMatchReference_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<qlonglong>("reference");  // 0: no reference number
  QTest::addColumn<QStringList>("dims");
  QTest::newRow("resnet50") << "light_resnet50.onnx" << 4089184256LL << QStringList();
  QTest::newRow("densenet121") << "light_densenet121.onnx" << 2834161664LL << QStringList();
  QTest::newRow("inception_v1") << "light_inception_v1.onnx" << 1431556352LL << QStringList();
  QTest::newRow("inception_v2") << "light_inception_v2.onnx" << 2018851840LL << QStringList();
  QTest::newRow("shufflenet") << "light_shufflenet.onnx" << 124664528LL << QStringList();
  QTest::newRow("squeezenet") << "light_squeezenet.onnx" << 349151936LL << QStringList();
  QTest::newRow("vgg19") << "light_vgg19.onnx" << 19632062464LL << QStringList();
  QTest::newRow("alexnet") << "light_bvlc_alexnet.onnx" << 654560384LL << QStringList();
  QTest::newRow("zfnet512") << "light_zfnet512.onnx" << 1481727008LL << QStringList();
  QTest::newRow("mnist") << "mnist.onnx" << 786560LL << QStringList();
  QTest::newRow("yolox_nano") << "yolox_nano.onnx" << 522553408LL << QStringList();
  QTest::newRow("ultraface") << "Ultraface.version-RFB-320.onnx" << 100418560LL << QStringList();
  QTest::newRow("ppocr_cls") << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << 0LL
                             << QStringList{"x:0=1", "x:2=48", "x:3=192"};
  QTest::newRow("ppocr_det") << "ch_PP-OCRv4_det_infer.onnx" << 0LL << QStringList{"x:0=1", "x:2=640", "x:3=640"};
}

static Result<Graph> importWith(const QString& file, const QStringList& dims) {
  ImportOptions opts;
  for (const auto& d : dims) opts.dims.push_back(parseDimBinding(d.toStdString()).value());
  return importOnnxFile(test::sharedModel(file.toStdString()), opts);
}

void TestSharedModels::macsMatchReference() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  QFETCH(qlonglong, reference);
  QFETCH(QStringList, dims);
  auto g = importWith(file, dims);
  QVERIFY2(g.isOk(), g.message().c_str());
  auto work = characteriseAll(*g);
  long long macs = 0;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const auto& t = g->nodes[i].opType;
    if (t == "Conv" || t == "ConvTranspose" || t == "Gemm" || t == "MatMul") macs += work[i].macs;
  }
  QVERIFY(macs > 0);
  if (reference > 0) {
    double rel = std::abs(static_cast<double>(macs - reference)) / static_cast<double>(reference);
    QVERIFY2(rel <= 0.01, qPrintable(QString("MACs %1, reference %2 (%3%)").arg(macs).arg(reference).arg(rel * 100)));
  }
}

void TestSharedModels::everyOperatorHasKnownShapesAndWork() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  QFETCH(QStringList, dims);
  auto g = importWith(file, dims);
  QVERIFY2(g.isOk(), g.message().c_str());
  auto work = characteriseAll(*g);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Node& n = g->nodes[i];
    QVERIFY2(n.opType != "Constant" && n.opType != "ConstantOfShape", n.name.c_str());
    QVERIFY2(work[i].shapesKnown, qPrintable(QString::fromStdString(n.name + " (" + n.opType + ") has unknown shapes")));
    QVERIFY2(work[i].cls != OpClass::Unknown, qPrintable(QString::fromStdString(n.opType + " has class unknown")));
    // Shape-only operators (Reshape, Flatten, ...) move no data; everything else writes its outputs.
    if (work[i].cls != OpClass::ShapeOnly) QVERIFY2(work[i].bytesWritten > 0, n.name.c_str());
    for (ValueId out : n.outputs)
      if (out >= 0 && !g->values[static_cast<size_t>(out)].consumers.empty())
        QVERIFY2(g->values[static_cast<size_t>(out)].bytes() > 0, n.name.c_str());
  }
}

QTEST_APPLESS_MAIN(TestSharedModels)
#include "tst_shared_models.moc"
