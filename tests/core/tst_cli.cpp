// partex-cli end to end: generate, inspect (text and JSON), platforms, and the exit code 2 contract.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

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
    for (const char* n : {"mobile-soc", "cpu-npu", "cpu-gpu-pcie", "cpu-gpu-shared", "pim", "npu-multicore", "this-machine"})
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
