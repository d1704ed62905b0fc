// ONNX Runtime profile import: the hand-written trace of the generated random DAG (16 operators, seed
// 3) gives median kernel times matched by node name, reports ORT's own nodes and the fused-away ones,
// flags op types that differ, filters by provider, and refuses malformed traces with the file's name.
// Also the CLI: --import-ort changes the makespan, --profile of another model is refused.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <algorithm>
#include <cmath>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "profile/ortprofile.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

std::string fixture() {
  return test::testDataDir() + "/ort/random16_seed3.ort_profile.json";
}

/// The model the fixture was written for: `partex-cli generate random --nodes 16 --seed 3`.
std::string modelPath() {
  static std::string path;
  if (path.empty()) {
    path = test::tempDir() + "/random16_seed3.onnx";
    GenSpec s;
    s.kind = "random";
    s.nodes = 16;
    s.seed = 3;
    if (!generateModelFile(s, path).isOk()) path.clear();
  }
  return path;
}

struct Loaded {
  Graph g;
  CostTable t;
};

Loaded loadTable() {
  auto g = importOnnxFile(modelPath());
  if (!g) qFatal("%s", g.message().c_str());
  auto p = loadPreset("cpu-gpu-pcie");
  if (!p) qFatal("%s", p.message().c_str());
  auto t = buildCostTable(*g, characteriseAll(*g), *p);
  if (!t) qFatal("%s", t.message().c_str());
  return {std::move(g).value(), std::move(t).value()};
}

TaskId taskOf(const CostTable& t, const std::string& name) {
  auto it = std::find(t.taskNames.begin(), t.taskNames.end(), name);
  return it == t.taskNames.end() ? -1 : static_cast<TaskId>(it - t.taskNames.begin());
}

}  // namespace

class TestOrtImport : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void parsesKernelTimes_data();
  void parsesKernelTimes();
  void matchesModelByName();
  void providerFilter();
  void traceEventsObjectForm();
  void malformedTraces_data();
  void malformedTraces();
  void cliImportChangesMakespan();
  void cliRefusesProfileOfAnotherModel();
};

void TestOrtImport::initTestCase() {
  QVERIFY2(!modelPath().empty(), "could not generate the model");
  QVERIFY(QFileInfo::exists(QString::fromStdString(fixture())));
}

void TestOrtImport::parsesKernelTimes_data() {
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("opType");
  QTest::addColumn<double>("median");
  // Two session runs: durations d and d + 2, so the median is d + 1.
  QTest::newRow("first MatMul") << "block0.branch5.matmul_0"
                                << "MatMul" << 16.0;
  QTest::newRow("Add") << "block0.branch2.add_3"
                       << "Add" << 5.0;
  QTest::newRow("fused conv") << "block0.branch4.conv3x3_12"
                              << "FusedConv" << 42.0;
  QTest::newRow("ORT's own node") << "ReorderInput_0"
                                  << "ReorderInput" << 10.0;
}

void TestOrtImport::parsesKernelTimes() {
  QFETCH(QString, node);
  QFETCH(QString, opType);
  QFETCH(double, median);
  OrtImportInfo info;
  auto p = loadOrtProfileFile(fixture(), "cpu", "", &info);
  QVERIFY2(p.isOk(), p.message().c_str());
  QVERIFY(p->imported);
  QVERIFY(p->modelSha256.empty());
  QCOMPARE(p->backendName, std::string("onnxruntime"));
  QCOMPARE(p->devices.size(), size_t{1});
  QCOMPARE(p->devices[0].id, std::string("cpu"));
  QCOMPARE(p->devices[0].ops.size(), size_t{17});  // 15 model nodes + 2 ORT layout nodes
  QCOMPARE(info.kernelEvents, 34);
  QCOMPARE(info.providers.at("CPUExecutionProvider"), 34);
  auto& ops = p->devices[0].ops;
  auto it = std::find_if(ops.begin(), ops.end(), [&](const ProfileOp& o) { return o.name == node.toStdString(); });
  QVERIFY(it != ops.end());
  QCOMPARE(it->opType, opType.toStdString());
  QCOMPARE(it->time.medianUs, median);
  QCOMPARE(it->time.reps, 2);
  QCOMPARE(it->time.maxUs - it->time.minUs, 2.0);
  // Fences and session events are not kernels.
  QVERIFY(std::none_of(ops.begin(), ops.end(),
                       [](const ProfileOp& o) { return o.name.find("fence") != std::string::npos; }));
}

void TestOrtImport::matchesModelByName() {
  Loaded l = loadTable();
  auto p = loadOrtProfileFile(fixture(), "cpu");
  QVERIFY2(p.isOk(), p.message().c_str());
  ApplyOptions o;
  o.matchByName = true;
  o.origin = "ort.json";
  o.modelSha256 = l.g.graphSha256;
  auto r = applyProfile(l.t, *p, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->opsApplied, 15);
  QCOMPARE(r->unmatchedProfileOps, (std::vector<std::string>{"ReorderInput_0", "ReorderOutput_1"}));
  QCOMPARE(r->unprofiledOps, std::vector<std::string>{"block0.branch0.relu_2@cpu"});  // fused away by ORT
  QCOMPARE(r->typeMismatches.size(), size_t{1});
  QVERIFY(QString::fromStdString(r->typeMismatches[0]).startsWith("block0.branch4.conv3x3_12: profile says FusedConv"));
  const TaskId mm = taskOf(l.t, "block0.branch5.matmul_0");
  const DeviceId cpu = 0;
  QCOMPARE(l.t.deviceIds[0], std::string("cpu"));
  QCOMPARE(l.t.w(mm, cpu), 16.0);
  QCOMPARE(l.t.provenance[static_cast<size_t>(mm) * l.t.deviceIds.size()], Provenance::Imported);
  const TaskId relu = taskOf(l.t, "block0.branch0.relu_2");
  QCOMPARE(l.t.provenance[static_cast<size_t>(relu) * l.t.deviceIds.size()], Provenance::Modelled);
  // The gpu column is untouched.
  QCOMPARE(l.t.provenance[static_cast<size_t>(mm) * l.t.deviceIds.size() + 1], Provenance::Modelled);
}

void TestOrtImport::providerFilter() {
  const std::string trace = R"([
    {"cat":"Node","name":"a_kernel_time","dur":10,"args":{"op_name":"Relu","provider":"CUDAExecutionProvider"}},
    {"cat":"Node","name":"b_kernel_time","dur":20,"args":{"op_name":"Add","provider":"CPUExecutionProvider"}},
    {"cat":"Node","name":"a_kernel_time","dur":12,"args":{"op_name":"Relu","provider":"CUDAExecutionProvider"}}
  ])";
  OrtImportInfo info;
  auto all = parseOrtProfile(trace, "t.json", "gpu", "", &info);
  QVERIFY2(all.isOk(), all.message().c_str());
  QCOMPARE(all->devices[0].ops.size(), size_t{2});
  QCOMPARE(all->devices[0].ops[0].time.medianUs, 11.0);
  QCOMPARE(info.providers.size(), size_t{2});
  auto cuda = parseOrtProfile(trace, "t.json", "gpu", "CUDAExecutionProvider", &info);
  QVERIFY2(cuda.isOk(), cuda.message().c_str());
  QCOMPARE(cuda->devices[0].ops.size(), size_t{1});
  QCOMPARE(cuda->devices[0].ops[0].name, std::string("a"));
  QCOMPARE(info.otherProviders, std::vector<std::string>{"b (CPUExecutionProvider)"});
  auto none = parseOrtProfile(trace, "t.json", "gpu", "DmlExecutionProvider");
  QVERIFY(!none.isOk());
  QVERIFY2(QString::fromStdString(none.message()).contains("from provider DmlExecutionProvider"),
           none.message().c_str());
}

void TestOrtImport::traceEventsObjectForm() {
  auto p = parseOrtProfile(
      R"({"traceEvents":[{"cat":"Node","name":"x_kernel_time","dur":7.5,"args":{}}],"displayTimeUnit":"ns"})",
      "obj.json", "npu");
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->devices[0].id, std::string("npu"));
  QCOMPARE(p->devices[0].ops[0].time.medianUs, 7.5);
}

void TestOrtImport::malformedTraces_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("reason");
  QTest::newRow("not json") << "[{"
                            << "not valid JSON";
  QTest::newRow("number") << "42"
                          << "expected an array of trace events";
  QTest::newRow("object without events") << R"({"events":[]})"
                                         << "object with 'traceEvents'";
  QTest::newRow("no kernels") << R"([{"cat":"Session","name":"model_run","dur":3}])"
                              << "no node kernel times found";
  QTest::newRow("negative dur") << R"([{"cat":"Node","name":"a_kernel_time","dur":-3}])"
                                << "node 'a'): negative";
  QTest::newRow("dur not a number") << R"([{"cat":"Node","name":"a_kernel_time","dur":"3"}])"
                                    << "'dur' must be a number";
  QTest::newRow("event not object") << R"([1])"
                                    << "event 0 is not an object";
}

void TestOrtImport::malformedTraces() {
  QFETCH(QString, text);
  QFETCH(QString, reason);
  auto p = parseOrtProfile(text.toStdString(), "bad_ort.json", "cpu");
  QVERIFY(!p.isOk());
  const QString msg = QString::fromStdString(p.message());
  QVERIFY2(msg.startsWith("bad_ort.json: "), qPrintable(msg));
  QVERIFY2(msg.contains(reason), qPrintable(msg));
}

void TestOrtImport::cliImportChangesMakespan() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  auto makespan = [](const QStringList& extra, QByteArray* err) {
    QProcess p;
    p.start(test::cliPath(), QStringList{"schedule", QString::fromStdString(modelPath()), "-p", "cpu-gpu-pcie",
                                         "--algo", "single", "--param", "device=cpu", "--json"} +
                                 extra);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return -1.0;
    *err = p.readAllStandardError();
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object()["makespan_us"].toDouble();
  };
  QByteArray err;
  const double modelled = makespan({}, &err);
  QVERIFY(modelled > 0);
  const double imported = makespan({"--import-ort", QString::fromStdString(fixture()), "--device", "cpu"}, &err);
  QVERIFY(imported > 0);
  QVERIFY2(std::fabs(imported - modelled) > 1e-6, qPrintable(QString("%1 vs %2").arg(imported).arg(modelled)));
  // All but relu_2 now come from the trace: the single-device makespan is at least their sum.
  QVERIFY(imported >= 16 + 5 + 42);
  QVERIFY2(err.contains("2 profiled nodes are not in the model: ReorderInput_0, ReorderOutput_1"), err.constData());
  QVERIFY2(err.contains("block0.branch0.relu_2@cpu"), err.constData());
  // --import-ort without --device is a usage error.
  QProcess p;
  p.start(test::cliPath(), {"schedule", QString::fromStdString(modelPath()), "-p", "cpu-gpu-pcie", "--import-ort",
                            QString::fromStdString(fixture())});
  QVERIFY(p.waitForFinished(120000));
  QCOMPARE(p.exitCode(), 2);
  QVERIFY(p.readAllStandardError().contains("--import-ort needs --device"));
}

void TestOrtImport::cliRefusesProfileOfAnotherModel() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  // A profile written for a different hash.
  Profile p;
  p.modelFile = "other.onnx";
  p.modelSha256 = std::string(64, 'e');
  p.backendName = "cpu";
  p.device("cpu").ops = {{"block0.branch5.matmul_0", "MatMul", TimingStat{5, 0, 5, 5, 1}}};
  const std::string path = test::tempDir() + "/other.profile.json";
  QVERIFY(saveProfile(path, p).isOk());
  QProcess proc;
  proc.start(test::cliPath(), {"compare", QString::fromStdString(modelPath()), "-p", "cpu-gpu-pcie", "--algos", "heft",
                               "--profile", QString::fromStdString(path)});
  QVERIFY(proc.waitForFinished(120000));
  QCOMPARE(proc.exitCode(), 2);
  const QString err = QString::fromUtf8(proc.readAllStandardError()).trimmed();
  QVERIFY2(err.startsWith("partex-cli: " + QString::fromStdString(path) + ": profile is for model other.onnx"),
           qPrintable(err));
  QVERIFY2(!err.contains('\n'), qPrintable(err));
}

QTEST_GUILESS_MAIN(TestOrtImport)
#include "tst_ortimport.moc"
