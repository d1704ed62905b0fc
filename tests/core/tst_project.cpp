// Project files: round trip, relative paths that survive moving the project folder, validation
// errors that name the file, pins resolved against a cost table, atomic saves.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cost/costtable.h"
#include "plan/project.h"
#include "sched/scheduler.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;
namespace fs = std::filesystem;

namespace {

Project sample(const std::string& dir) {
  Project p;
  p.modelPath = dir + "/models/net.onnx";
  p.modelSha256 = "abc123";
  p.dims = {"batch=1", "input:2=224"};
  p.platform = "mobile-soc";
  p.profiles = {dir + "/profiles/cpu.json", "/elsewhere/other.json"};
  p.ortImports = {{dir + "/profiles/ort.json", "cpu-big", "CPUExecutionProvider"}, {"/elsewhere/ort2.json", "gpu", ""}};
  p.planJson = "{\n  \"format\": \"partex-plan\",\n  \"version\": 1\n}\n";
  p.algorithm = "heft";
  p.params = {{"budget_ms", "200"}};
  p.pins = {{"conv1", "npu"}, {"fc", "cpu-big"}};
  p.moves = {{"relu1", "gpu"}, {"conv1", "npu"}};
  p.viewJson = R"({"zoom":1.5})";
  return p;
}

CostTable twoDevices() {
  auto t = parseTaskGraph(R"({"devices": ["cpu", "npu"], "tasks": {"conv1": [10, 2], "relu": [1, null]},
                              "edges": [["conv1", "relu", 3]]})",
                          "t.json");
  if (!t) qFatal("%s", t.message().c_str());
  return std::move(t).value();
}

}  // namespace

class TstProject : public QObject {
  Q_OBJECT
 private slots:
  void roundTripWithRelativePaths() {
    const std::string dir = test::tempDir() + "/proj";
    fs::create_directories(dir);
    const Project p = sample(dir);
    const std::string path = dir + "/work.partex";
    QVERIFY(saveProject(path, p));
    auto text = readFile(path);
    QVERIFY(text);
    QVERIFY2(text->find("\"models/net.onnx\"") != std::string::npos, "the model path is stored relative to the project");
    QVERIFY(text->find("/elsewhere/other.json") != std::string::npos);  // outside the folder: absolute
    QVERIFY2(text->find("\"profiles/ort.json\"") != std::string::npos, "imports are stored relative like profiles");
    auto back = loadProjectFile(path);
    QVERIFY2(back, back.message().c_str());
    QCOMPARE(back->modelPath, p.modelPath);
    QCOMPARE(back->modelSha256, p.modelSha256);
    QCOMPARE(back->dims, p.dims);
    QCOMPARE(back->platform, p.platform);
    QCOMPARE(back->profiles, p.profiles);
    QVERIFY(back->ortImports == p.ortImports);
    QCOMPARE(back->algorithm, p.algorithm);
    QCOMPARE(back->params, p.params);
    QCOMPARE(back->pins, p.pins);
    QCOMPARE(back->moves, p.moves);
    QCOMPARE(back->viewJson, std::string(R"({"zoom":1.5})"));
    QVERIFY(back->planJson.find("partex-plan") != std::string::npos);
    // No temporary file is left beside it.
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
    QCOMPARE(files, 1);

    // Moving the folder keeps the project's own files.
    const std::string moved = test::tempDir() + "/moved";
    fs::rename(dir, moved);
    auto again = loadProjectFile(moved + "/work.partex");
    QVERIFY2(again, again.message().c_str());
    QCOMPARE(again->modelPath, moved + "/models/net.onnx");
    QCOMPARE(again->profiles.front(), moved + "/profiles/cpu.json");
    QCOMPARE(again->ortImports.front().path, moved + "/profiles/ort.json");
    QCOMPARE(again->ortImports.back().path, std::string("/elsewhere/ort2.json"));
  }

  void noImportsWritesNoImportsKey() {
    // Projects without ONNX Runtime imports look exactly as before (older readers see nothing new).
    const std::string dir = test::tempDir() + "/noimports";
    fs::create_directories(dir);
    Project p = sample(dir);
    p.ortImports.clear();
    QVERIFY(saveProject(dir + "/a.partex", p));
    auto text = readFile(dir + "/a.partex");
    QVERIFY(text);
    QVERIFY(text->find("ort_imports") == std::string::npos);
    auto back = loadProjectFile(dir + "/a.partex");
    QVERIFY2(back, back.message().c_str());
    QVERIFY(back->ortImports.empty());
  }

  void platformFileIsAPath() {
    const std::string dir = test::tempDir() + "/plat";
    fs::create_directories(dir);
    Project p = sample(dir);
    p.platform = dir + "/my-board.json";
    QVERIFY(saveProject(dir + "/a.partex", p));
    auto back = loadProjectFile(dir + "/a.partex");
    QVERIFY2(back, back.message().c_str());
    QCOMPARE(back->platform, p.platform);
  }

  void malformed_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("not json") << "{" << "not a JSON document";
    QTest::newRow("array") << "[]" << "JSON object";
    QTest::newRow("format") << R"({"format": "partex-plan", "version": 1})" << "not a Partex project";
    QTest::newRow("version") << R"({"format": "partex-project", "version": 99})" << "version 99 is not supported";
    QTest::newRow("no model") << R"({"format": "partex-project", "version": 1, "platform": "pim"})" << "\"model\"";
    QTest::newRow("empty model path") << R"({"format": "partex-project", "version": 1, "model": {"path": ""}, "platform": "pim"})"
                                      << "model.path";
    QTest::newRow("no platform") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}})" << "\"platform\"";
    QTest::newRow("dims") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx", "dims": [1]}, "platform": "pim"})"
                          << "model.dims";
    QTest::newRow("pins") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "pins": [{"op": 1}]})"
                          << "\"pins\"";
    QTest::newRow("moves") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "moves": {}})"
                           << "\"moves\"";
    QTest::newRow("plan") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "plan": 3})"
                          << "\"plan\"";
    QTest::newRow("profiles") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "profiles": [""]})"
                              << "\"profiles\"";
    QTest::newRow("ort_imports") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "ort_imports": {}})"
                                 << "\"ort_imports\"";
    QTest::newRow("ort_imports device") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "ort_imports": [{"path": "o.json"}]})"
                                        << "\"ort_imports\"";
    QTest::newRow("params") << R"({"format": "partex-project", "version": 1, "model": {"path": "m.onnx"}, "platform": "pim", "scheduler": {"algorithm": "heft", "params": {"x": 1}}})"
                            << "scheduler.params.x";
  }
  void malformed() {
    QFETCH(QString, text);
    QFETCH(QString, reason);
    auto p = parseProject(text.toStdString(), "/some/dir/broken.partex");
    QVERIFY(!p);
    const QString msg = QString::fromStdString(p.message());
    QVERIFY2(msg.startsWith("broken.partex: "), qPrintable(msg));
    QVERIFY2(msg.contains(reason), qPrintable(msg));
    QVERIFY(!msg.contains('\n'));
  }

  void missingFileNamesIt() {
    auto p = loadProjectFile(test::tempDir() + "/nope.partex");
    QVERIFY(!p);
    QVERIFY2(QString::fromStdString(p.message()).contains("nope.partex"), p.message().c_str());
  }

  void pinsResolve() {
    const CostTable t = twoDevices();
    Project p;
    p.pins = {{"conv1", "npu"}};
    auto c = resolvePins(p, t, "x.partex");
    QVERIFY2(c, c.message().c_str());
    QCOMPARE(c->pinned.size(), size_t(1));
    QCOMPARE(c->pinned.at(0), DeviceId(1));
    p.pins = {{"relu", "npu"}};
    auto bad = resolvePins(p, t, "x.partex");
    QVERIFY(!bad);
    QVERIFY2(bad.message().find("cannot run") != std::string::npos, bad.message().c_str());
    p.pins = {{"nope", "npu"}};
    QVERIFY(!resolvePins(p, t, "x.partex"));
    p.pins = {{"conv1", "tpu"}};
    auto noDev = resolvePins(p, t, "x.partex");
    QVERIFY(!noDev);
    QVERIFY2(noDev.message().find("'tpu'") != std::string::npos, noDev.message().c_str());
  }
};

QTEST_GUILESS_MAIN(TstProject)
#include "tst_project.moc"
