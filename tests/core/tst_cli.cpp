// partex-cli end to end: generate, inspect (text and JSON), platforms, execute on given inputs with
// its outputs written, and the exit code 2 contract.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/npy.h"
#include "gen/testmodels.h"
#include "testutil.h"

class TestCli : public QObject {
  Q_OBJECT
 private:
  using Run = partex::test::CliRun;
  static Run run(const QStringList& args) { return partex::test::runCli(args, 120000); }
  QString dir_;

 private slots:
  void initTestCase() {
    if (!QFileInfo::exists(partex::test::cliPath())) QSKIP("partex-cli is not built");
    dir_ = QString::fromStdString(partex::test::tempDir());
  }

  void generateThenInspectJson() {
    const QString model = dir_ + "/r18.onnx";
    Run g = run({"generate", "resnet18", "-o", model});
    QCOMPARE(g.code, 0);
    QVERIFY(QFileInfo::exists(model));
    Run r = run({"inspect", model, "--json"});
    QCOMPARE(r.code, 0);
    QJsonParseError perr;
    auto doc = QJsonDocument::fromJson(r.out, &perr);
    QVERIFY2(perr.error == QJsonParseError::NoError, qPrintable(perr.errorString()));
    QJsonObject o = doc.object();
    for (const char* key : {"operators", "op_types", "macs", "flops", "param_bytes", "inputs", "outputs", "nodes"})
      QVERIFY2(o.contains(key), key);
    const QJsonArray nodes = o["nodes"].toArray();
    QCOMPARE(nodes.size(), o["operators"].toInt());
    QCOMPARE(o["op_types"].toObject()["Conv"].toInt(), 20);
    // ResNet-18 at 224x224: 1,814,073,344 MACs in Conv and Gemm (torchvision's 1.81 GMACs).
    QCOMPARE(static_cast<qint64>(o["macs"].toDouble()), Q_INT64_C(1814073344));
    long long sum = 0;
    for (const auto& n : nodes) {
      QJsonObject no = n.toObject();
      for (const char* key : {"name", "op_type", "class", "macs", "flops", "bytes_in", "bytes_out", "output_shapes"})
        QVERIFY2(no.contains(key), key);
      sum += static_cast<long long>(no["macs"].toDouble());
    }
    QCOMPARE(sum, 1814073344LL);
    QCOMPARE(o["inputs"].toArray().first().toObject()["shape"].toArray().size(), 4);
  }

  void inspectTextHasSummaryAndTable() {
    const QString model = dir_ + "/mnv2.onnx";
    QCOMPARE(run({"generate", "mobilenetv2", "-o", model}).code, 0);
    Run r = run({"inspect", model});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("Operators"));
    QVERIFY(r.out.contains("MACs"));
    QVERIFY(r.out.contains("Op types"));
    QVERIFY(r.out.contains("Conv"));
  }

  void platformsListsEveryPreset() {
    Run r = run({"platforms", "--json"});
    QCOMPARE(r.code, 0);
    QStringList names;
    for (const auto& p : QJsonDocument::fromJson(r.out).array()) names << p.toObject()["name"].toString();
    for (const char* n : {"mobile-soc", "cpu-npu", "cpu-gpu-pcie", "cpu-gpu-shared", "cpu-igpu-coupled", "pim",
                          "npu-multicore", "this-machine"})
      QVERIFY2(names.contains(n), n);
  }

  void badInputExitsTwoWithOneLine_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mention");
    QTest::newRow("missing file") << QStringList{"inspect", "/nonexistent/m.onnx"} << "m.onnx";
    QTest::newRow("unknown generator") << QStringList{"generate", "nosuchnet", "-o", "/tmp/x.onnx"} << "nosuchnet";
    QTest::newRow("bad dim") << QStringList{"inspect", "/nonexistent/m.onnx", "--dim", "oops"} << "oops";
    QTest::newRow("unknown platform") << QStringList{"platforms", "--show", "nosuchplatform"} << "nosuchplatform";
    QTest::newRow("unknown subcommand") << QStringList{"frobnicate"} << "frobnicate";
  }
  void badInputExitsTwoWithOneLine() {
    QFETCH(QStringList, args);
    QFETCH(QString, mention);
    Run r = run(args);
    QCOMPARE(r.code, 2);
    QByteArray err = r.err.trimmed();
    QVERIFY2(!err.isEmpty(), "no error message");
    QVERIFY2(!err.contains('\n'), err.constData());
    QVERIFY2(err.contains(mention.toUtf8()), err.constData());
  }

  /// execute on the model's own weights with inputs from .npy files: the outputs it writes are the
  /// model's, computed by hand here; --json reports memory.
  void executeWithInputsAndOutputs() {
    using namespace partex;
    const std::string d = dir_.toStdString() + "/exec";
    std::filesystem::create_directories(d);
    const std::string model = d + "/weights.onnx";
    {
      std::ofstream out(model, std::ios::binary);
      const std::string bytes = testmodels::withWeightData();
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    const QString m = QString::fromStdString(model), plan = QString::fromStdString(d + "/plan.json");
    Run s = run({"schedule", m, "-p", "this-machine", "--algo", "single", "--param", "device=core0", "-o", plan});
    QVERIFY2(s.code == 0, s.err.constData());
    auto x = Tensor::make(DType::Float32, {1, 4});
    QVERIFY(x.isOk());
    for (int i = 0; i < 4; ++i) x->data<float>()[i] = static_cast<float>(i + 1);
    auto z = Tensor::make(DType::Float32, {5000});
    QVERIFY(z.isOk());
    z->fillRandom(3);
    QVERIFY(writeNpyFile(d + "/x.npy", *x).isOk());
    QVERIFY(writeNpyFile(d + "/z.npy", *z).isOk());
    const QString outDir = QString::fromStdString(d + "/out");
    Run r = run({"execute", m, "--plan", plan, "--reps", "1", "--warmup", "0", "--input",
                 QString::fromStdString("x=" + d + "/x.npy"), "--input", QString::fromStdString("z=" + d + "/z.npy"),
                 "--outputs", outDir, "--json"});
    QVERIFY2(r.code == 0, (r.err + r.out).constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QVERIFY(o["outputs_match"].toBool());
    QVERIFY(o["peak_rss_bytes"].toDouble() > 1e6);
    // Weights: Wraw 64 + big 20480 + Bsq 16 + Wcos 64 + Wflat 20000 + Wid 64 bytes (Wid shares Wraw's
    // storage, but parameter bytes count values, as inspect does).
    QCOMPARE(o["param_bytes"].toDouble(), 64.0 + 20480 + 16 + 64 + 20000 + 64);
    QVERIFY(o["peak_activation_bytes"].toDouble() > 0);

    // y4 = x @ Wraw, Wraw[i][j] = (4i + j) * 0.25 - 1; y = (x @ Wraw + [1,4,9,16]) @ 0.5s; y2 = z + 0.25.
    float y4[4] = {}, a1[4] = {};
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) y4[j] += static_cast<float>(i + 1) * (static_cast<float>(4 * i + j) * 0.25f - 1.0f);
      a1[j] = y4[j] + static_cast<float>((j + 1) * (j + 1));
    }
    const float y = 0.5f * (a1[0] + a1[1] + a1[2] + a1[3]);
    auto read = [&](const char* name) { return readNpyFile(d + "/out/" + name); };
    auto t4 = read("y4.npy");
    QVERIFY2(t4.isOk(), t4.message().c_str());
    auto t = read("y.npy");
    QVERIFY2(t.isOk(), t.message().c_str());
    for (int j = 0; j < 4; ++j) {
      QVERIFY(std::fabs(t4->valueAsDouble(j) - y4[j]) <= 1e-5 * std::fabs(y4[j]) + 1e-6);
      QVERIFY(std::fabs(t->valueAsDouble(j) - y) <= 1e-5 * std::fabs(y));
    }
    auto t2 = read("y2.npy");
    QVERIFY2(t2.isOk(), t2.message().c_str());
    QCOMPARE(t2->shape(), (std::vector<int64_t>{5000}));
    for (int64_t i = 0; i < 5000; i += 499)
      QCOMPARE(t2->valueAsDouble(i), static_cast<double>(z->data<float>()[i] + 0.25f));
    auto t3 = read("y3.npy");  // u was not given: seeded random
    QVERIFY2(t3.isOk(), t3.message().c_str());
    QCOMPARE(t3->shape(), (std::vector<int64_t>{80, 64}));
    QCOMPARE(QDir(outDir).entryList(QDir::Files).size(), 4);  // no temporary files left

    // The text report prints the memory line too.
    Run text = run({"execute", m, "--plan", plan, "--reps", "1", "--warmup", "0"});
    QVERIFY2(text.code == 0, text.err.constData());
    QVERIFY2(text.out.contains("peak RSS"), text.out.constData());
  }

  void executeInputErrors_data() {
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("expected");  // after "partex-cli: <file>: "
    QTest::newRow("unknown input") << "nosuch=%1/x.npy"
                                   << "the model has no input 'nosuch' (inputs: x, z, u)";
    QTest::newRow("wrong dtype") << "x=%1/int.npy"
                                 << "input 'x' is float32, the file holds int64";
    QTest::newRow("wrong shape") << "x=%1/z.npy"
                                 << "input 'x' has shape [1,4] (after --dim), the file holds [5000]";
    QTest::newRow("not a tensor file") << "x=%1/garbage.npy"
                                       << "neither a NumPy .npy file nor an ONNX TensorProto (.pb)";
    QTest::newRow("missing file") << "x=%1/missing.npy"
                                  << "no such file";
  }
  /// Inputs that do not fit the model: exit 2, one line naming the file.
  void executeInputErrors() {
    QFETCH(QString, input);
    QFETCH(QString, expected);
    const QString d = dir_ + "/exec";
    if (!QFileInfo::exists(d + "/plan.json")) QSKIP("executeWithInputsAndOutputs made no plan");
    {
      auto t = partex::Tensor::make(partex::DType::Int64, {1, 4});
      QVERIFY(t.isOk());
      QVERIFY(partex::writeNpyFile((d + "/int.npy").toStdString(), *t).isOk());
      QFile g(d + "/garbage.npy");
      QVERIFY(g.open(QIODevice::WriteOnly));
      g.write("\x93NUMPX and more bytes");
    }
    const QString spec = input.arg(d);
    // execute and profile read --input by one rule (readModelInputs) and refuse alike.
    const QList<QStringList> commands = {
        {"execute", d + "/weights.onnx", "--plan", d + "/plan.json", "--reps", "1", "--input", spec},
        {"profile", d + "/weights.onnx", "--devices", "core0", "--reps", "1", "-o", d + "/p.json", "--input", spec}};
    for (const QStringList& args : commands) {
      Run r = run(args);
      QCOMPARE(r.code, 2);
      const QByteArray err = r.err.trimmed();
      QVERIFY2(!err.contains('\n'), err.constData());
      const QString file = spec.mid(spec.indexOf('=') + 1);
      QCOMPARE(QString::fromUtf8(err), "partex-cli: " + file + ": " + expected);
      QVERIFY(!QFileInfo::exists(d + "/p.json"));
    }
  }

  void garbageFileLeavesNoOutput() {
    const QString bad = dir_ + "/garbage.onnx";
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, '\x07'));
    f.close();
    Run r = run({"inspect", bad, "--json"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY(r.err.contains("garbage.onnx"));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
