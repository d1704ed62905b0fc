// The CPU runtime against ONNX Runtime on the shared real models: the same seeded random input (.npy)
// goes through `PYTHON scripts/ort/run.py` (ONNX Runtime 1.30.0 from PyPI, CPU execution provider, in
// the venv of scripts/ort/install.sh) and through `partex-cli execute` with a single-device plan
// (everything on core0), and every output must agree within 1e-4 relative:
//   |a - b| <= tol * max(|b|, floor),  tol = 1e-4,  floor = 1e-3 * max |b| over the output tensor.
// The floor: float32 sums in another order (oneDNN and MLAS block and vectorise differently) differ by
// a few ulp of the terms' magnitude, not of the result's, so an element that cancels to near zero has
// a meaningless relative error; 1e-3 of the output's largest magnitude (an absolute tolerance of 1e-7
// of it) is above what rounding leaves there, while a wrong weight, layout or kernel moves elements by
// far more. Integer outputs must be equal.
// Where ONNX Runtime disagrees with itself by more than that (its graph optimisations on and off,
// --opt all against --opt disabled, on the same input: rounding accumulated through a deep network),
// no implementation can meet 1e-4, and the tolerance of that output becomes 3 times ORT's own spread;
// the test says so. On the shared models this happens for yolox_nano only (docs/design-decisions.md).
// Skips (the whole test) without the shared models or without the venv's python and its onnxruntime
// (scripts/ort/install.sh; $PARTEX_ORT_VENV, default ~/.local/share/partex/ort-venv).

#include <QDir>
#include <QProcess>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backend/npy.h"
#include "onnx/importer.h"
#include "testutil.h"

using namespace partex;

namespace {

constexpr double kRtol = 1e-4;
constexpr double kFloorOfMax = 1e-3;
constexpr double kSpreadFactor = 3.0;

/// scripts/ort/run.py in the source tree (tests/data is two levels below the root).
QString runPy() {
  return QString::fromStdString(
      (std::filesystem::path(test::testDataDir()) / ".." / ".." / "scripts" / "ort" / "run.py")
          .lexically_normal()
          .string());
}

/// The interpreter of the venv that scripts/ort/install.sh makes: $PARTEX_ORT_VENV/bin/python, else
/// ~/.local/share/partex/ort-venv/bin/python.
QString venvPython() {
  const QString venv = qEnvironmentVariable("PARTEX_ORT_VENV");
  return (venv.isEmpty() ? QDir::homePath() + "/.local/share/partex/ort-venv" : venv) + "/bin/python";
}

struct Proc {
  int code = -1;
  QByteArray out, err;
};

Proc run(const QString& program, const QStringList& args, int timeoutMs = 600000) {
  QProcess p;
  p.start(program, args);
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    return {};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
          p.readAllStandardError()};
}

/// Compares one output within `tol`; "" when it agrees, otherwise why. `worst` gets the largest
/// |a-b| / max(|b|, floor).
std::string compare(const Tensor& got, const Tensor& want, double tol, double& worst) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "Partex gave " + got.describe() + ", ONNX Runtime " + want.describe();
  const int64_t n = want.numElements();
  const bool isFloat = want.dtype() == DType::Float32 || want.dtype() == DType::Float64;
  if (!isFloat) {
    for (int64_t i = 0; i < n; ++i)
      if (got.valueAsInt(i) != want.valueAsInt(i))
        return "element " + std::to_string(i) + ": " + std::to_string(got.valueAsInt(i)) + " vs ONNX Runtime's " +
               std::to_string(want.valueAsInt(i));
    return "";
  }
  double maxAbs = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(want.valueAsDouble(i))) maxAbs = std::max(maxAbs, std::fabs(want.valueAsDouble(i)));
  const double floor = std::max(kFloorOfMax * maxAbs, 1e-30);
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    const double a = got.valueAsDouble(i), b = want.valueAsDouble(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    const double rel = std::fabs(a - b) / std::max(std::fabs(b), floor);
    worst = std::max(worst, std::isnan(rel) ? INFINITY : rel);
    if (!(rel <= tol) && first.empty()) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "element %lld: %.9g vs ONNX Runtime's %.9g (relative %.3g)",
                    static_cast<long long>(i), a, b, rel);
      first = buf;
    }
  }
  return first;
}

}  // namespace

class TestOrtOutputs : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Prerequisites, once for the whole test: without them every row would skip for the same reason.
    if (test::sharedModelsDir().empty())
      QSKIP("../shared/models is absent: the comparison with ONNX Runtime is skipped");
    python_ = venvPython();
    if (!QFileInfo(python_).isExecutable())
      QSKIP(qPrintable(python_ + " is absent (scripts/ort/install.sh makes the venv): the comparison with ONNX "
                                 "Runtime is skipped"));
    QVERIFY2(QFileInfo::exists(runPy()), qPrintable(runPy() + " not found"));
    const Proc probe = run(python_, {runPy()});  // no model: exit 3 when onnxruntime is not importable, else 2
    if (probe.code == 3)
      QSKIP(qPrintable("ONNX Runtime is not installed in the venv (scripts/ort/install.sh): " +
                       QString::fromUtf8(probe.err).trimmed()));
    QVERIFY2(probe.code == 2, probe.err.constData());
  }

  void matchesOnnxRuntime_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("dims");
    // Every shared model but the PP-OCR detector: on a random input its output (a sigmoid map) is
    // below 1e-3 everywhere, where ONNX Runtime's logistic approximation is only good to about 1e-7
    // absolute (its own --opt levels differ by 35% relative there): no reference at 1e-4.
    for (const char* f :
         {"mnist.onnx", "light_squeezenet.onnx", "light_shufflenet.onnx", "Ultraface.version-RFB-320.onnx",
          "yolox_nano.onnx", "light_resnet50.onnx", "light_inception_v1.onnx", "light_inception_v2.onnx",
          "light_densenet121.onnx", "light_bvlc_alexnet.onnx", "light_zfnet512.onnx", "light_vgg19.onnx"})
      QTest::newRow(f) << f << QStringList();
    QTest::newRow("ch_ppocr_mobile_v2.0_cls_infer.onnx")
        << "ch_ppocr_mobile_v2.0_cls_infer.onnx" << QStringList{"x:0=1", "x:2=48", "x:3=192"};
  }

  /// One model: the same input through both runtimes, every output compared.
  void matchesOnnxRuntime() {
    QFETCH(QString, file);
    QFETCH(QStringList, dims);
    const std::string model = test::sharedModel(file.toStdString());
    QVERIFY2(std::filesystem::exists(model), ("missing shared model " + model).c_str());
    ImportOptions opts;
    QStringList dimArgs;
    for (const QString& d : dims) {
      auto b = parseDimBinding(d.toStdString());
      QVERIFY2(b.isOk(), b.message().c_str());
      opts.dims.push_back(*b);
      dimArgs << "--dim" << d;
    }
    auto g = importOnnxFile(model, opts);
    QVERIFY2(g.isOk(), g.message().c_str());

    const std::string dir = test::tempDir() + "/ort-" + QFileInfo(file).completeBaseName().toStdString();
    std::filesystem::create_directories(dir);
    QStringList inputArgs;
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      const Value& v = g->values[static_cast<size_t>(g->inputs[i])];
      auto t = Tensor::make(v.dtype, v.shape);
      QVERIFY2(t.isOk(), t.message().c_str());
      t->fillRandom(1000 + i, -1.0, 1.0);
      const std::string path = dir + "/" + npyFileName(v.name);
      QVERIFY2(writeNpyFile(path, *t).isOk(), path.c_str());
      inputArgs << "--input" << QString::fromStdString(v.name + "=" + path);
    }
    const QString m = QString::fromStdString(model), d = QString::fromStdString(dir);

    for (const char* level : {"all", "disabled"}) {
      const Proc ort = run(python_, QStringList{runPy(), m, "--opt", level} + inputArgs + dimArgs +
                                        QStringList{"--outputs", d + "/ort-" + level});
      QVERIFY2(ort.code == 0, ("run.py: " + ort.err).constData());
    }
    auto plan = test::runCli(QStringList{"schedule", m, "-p", "this-machine", "--algo", "single", "--param",
                                         "device=core0", "-o", d + "/plan.json"} +
                             dimArgs);
    QVERIFY2(plan.code == 0, plan.err.constData());
    auto px = test::runCli(QStringList{"execute", m, "--plan", d + "/plan.json", "--reps", "1", "--warmup", "0",
                                       "--outputs", d + "/partex"} +
                               inputArgs + dimArgs,
                           600000);
    // Exit 1 with its outputs written: they differ from execute's own reference run (the operators
    // unfused, checked at 1e-4 of the output's largest value). That check is stricter than ONNX Runtime
    // is with itself: on yolox_nano its fused and unfused runs (--opt all against disabled) differ by 0.8%
    // relative, while Partex's differed by 1.5e-4 of the largest value under the sanitizers (1e-4 in a
    // release build). What this test asserts is agreement with ONNX Runtime, below, within its spread.
    const bool ownCheckOnly = px.code == 1 && px.out.contains("DIFFER from the single-device run");
    QVERIFY2(px.code == 0 || ownCheckOnly, (px.err + px.out.right(2000)).constData());
    if (ownCheckOnly)
      qInfo("%s: execute's fused run differs from its unfused reference run by more than 1e-4 of the output's "
            "largest value; compared with ONNX Runtime below",
            qPrintable(file));

    double worst = 0, widest = kRtol;
    for (ValueId out : g->outputs) {
      const std::string name = g->values[static_cast<size_t>(out)].name;
      auto got = readNpyFile(dir + "/partex/" + npyFileName(name));
      QVERIFY2(got.isOk(), got.message().c_str());
      auto want = readNpyFile(dir + "/ort-all/" + npyFileName(name));
      QVERIFY2(want.isOk(), want.message().c_str());
      auto second = readNpyFile(dir + "/ort-disabled/" + npyFileName(name));
      QVERIFY2(second.isOk(), second.message().c_str());
      double spread = 0;
      (void)compare(*second, *want, kRtol, spread);
      const double tol = spread > kRtol ? kSpreadFactor * spread : kRtol;
      widest = std::max(widest, tol);
      if (tol > kRtol)
        qInfo(
            "%s: output '%s': ONNX Runtime's own results differ by %.3g relative (--opt all against disabled): "
            "tolerance %.3g",
            qPrintable(file), name.c_str(), spread, tol);
      const std::string why = compare(*got, *want, tol, worst);
      QVERIFY2(why.empty(), ("output '" + name + "': " + why).c_str());
    }
    qInfo("%s: %zu outputs agree with ONNX Runtime within %.3g; largest |a-b| / max(|b|, floor) = %.3g",
          qPrintable(file), g->outputs.size(), widest, worst);
  }

 private:
  QString python_;
};

QTEST_GUILESS_MAIN(TestOrtOutputs)
#include "tst_ort_outputs.moc"
