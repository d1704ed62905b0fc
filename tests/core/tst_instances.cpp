// Scheduling instances from the scheduling community (cost/instances.h, issue 14.2): Partex task graphs
// with a network whose links differ, SAGA problem instances and WfCommons workflows (WfFormat 1.4 and
// 1.5) become the cost tables worked out by hand here; a schedule of each simulates to the times
// SAGA's own rules give; bad files fail with one line naming the file and the reason, and partex-cli
// exits 2 on them.
#include <QtTest>

#include <QProcess>

#include <cmath>

#include "cost/instances.h"
#include "sim/simulator.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

std::string dataPath(const std::string& name) {
  return test::testDataDir() + "/instances/" + name;
}

CostTable load(const std::string& name) {
  auto bytes = readFile(dataPath(name));
  if (!bytes) qFatal("%s", bytes.message().c_str());
  auto t = parseInstance(*bytes, dataPath(name));
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

TaskId task(const CostTable& t, const std::string& name) {
  for (size_t i = 0; i < t.taskNames.size(); ++i)
    if (t.taskNames[i] == name) return static_cast<TaskId>(i);
  qFatal("no task %s", name.c_str());
}

DeviceId device(const CostTable& t, const std::string& name) {
  for (size_t i = 0; i < t.deviceIds.size(); ++i)
    if (t.deviceIds[i] == name) return static_cast<DeviceId>(i);
  qFatal("no device %s", name.c_str());
}

int32_t edge(const CostTable& t, const std::string& a, const std::string& b) {
  for (size_t i = 0; i < t.edges.size(); ++i)
    if (t.edges[i].src == task(t, a) && t.edges[i].dst == task(t, b)) return static_cast<int32_t>(i);
  return -1;
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

}  // namespace

class TestInstances : public QObject {
  Q_OBJECT
 private slots:
  void formats() {
    QCOMPARE(instanceFormat(R"({"task_graph": {}, "network": {}})"), std::string("saga"));
    QCOMPARE(instanceFormat(R"({"workflow": {}})"), std::string("wfcommons"));
    QCOMPARE(instanceFormat(R"({"devices": [], "tasks": {}})"), std::string("partex"));
    QCOMPARE(instanceFormat("\x08\x07onnx"), std::string());
    QCOMPARE(instanceFormat(R"({"graph": 1})"), std::string());
  }

  /// Cost = cost / node speed; transfer = size / link speed, both ways; free on one node.
  void sagaInstance() {
    const CostTable t = load("saga_small.json");
    QCOMPARE(t.name, std::string("saga_small"));
    QCOMPARE(t.numDevices(), 2);
    QCOMPARE(t.numTasks(), 3);
    const DeviceId a = device(t, "A"), b = device(t, "B");
    QVERIFY(near(t.w(task(t, "t1"), a), 4.0));
    QVERIFY(near(t.w(task(t, "t1"), b), 2.0));
    QVERIFY(near(t.w(task(t, "t3"), b), 3.0));
    const int32_t e12 = edge(t, "t1", "t2"), e13 = edge(t, "t1", "t3");
    QVERIFY(e12 >= 0 && e13 >= 0);
    QVERIFY(near(t.comm(e12, a, b), 2.0));  // 1 / 0.5
    QVERIFY(near(t.comm(e12, b, a), 2.0));
    QVERIFY(near(t.comm(e13, a, b), 4.0));
    QCOMPARE(t.comm(e13, b, b), 0.0);
    // SAGA's timing of a plan: t1 on B [0,2], t3 on B [2,5], t2 on A from 2 + 1/0.5 = 4 to 6.
    Plan p;
    p.device.assign(3, 0);
    p.device[static_cast<size_t>(task(t, "t1"))] = b;
    p.device[static_cast<size_t>(task(t, "t3"))] = b;
    p.device[static_cast<size_t>(task(t, "t2"))] = a;
    p.order = {{task(t, "t2")}, {task(t, "t1"), task(t, "t3")}};
    if (a != 0) std::swap(p.order[0], p.order[1]);
    auto tl = simulate(t, p);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    QVERIFY(near(tl->makespan, 6.0));
    QVERIFY(near(tl->tasks[static_cast<size_t>(task(t, "t2"))].start, 4.0));
  }

  /// Runtime x mean speed / machine speed; edges carry the files the child reads that the parent wrote,
  /// at 100 MB/s.
  void wfcommons14() {
    const CostTable t = load("wfcommons_v14.json");
    QCOMPARE(t.numDevices(), 2);
    const DeviceId fast = device(t, "fast"), slow = device(t, "slow");
    QVERIFY(near(t.w(task(t, "work_a"), fast), 10e6 * 2000.0 / 3000.0));
    QVERIFY(near(t.w(task(t, "work_a"), slow), 10e6 * 2.0));
    const int32_t eb = edge(t, "split", "work_b"), ea = edge(t, "split", "work_a");
    QVERIFY(ea >= 0 && eb >= 0);
    QCOMPARE(t.edges[static_cast<size_t>(eb)].bytes, int64_t{6000000});  // a.dat + b.dat
    QCOMPARE(t.edges[static_cast<size_t>(ea)].bytes, int64_t{2000000});
    QVERIFY(near(t.comm(eb, fast, slow), 6e6 / 100.0));  // 100 MB/s = 100 bytes per microsecond
  }

  void wfcommons15() {
    const CostTable t = load("wfcommons_v15.json");
    QCOMPARE(t.numTasks(), 2);
    QVERIFY(near(t.w(task(t, "work_ID02"), 0), 6e6));  // equal machines: the recorded runtime
    const int32_t e = edge(t, "split_ID01", "work_ID02");
    QVERIFY(e >= 0);
    QCOMPARE(t.edges[static_cast<size_t>(e)].bytes, int64_t{500000000});
  }

  /// Devices with speeds, work or per-device costs, fixed and sized edges, links per pair.
  void partexNetwork() {
    const CostTable t = load("network_small.json");
    const DeviceId cpu = device(t, "cpu"), gpu = device(t, "gpu"), npu = device(t, "npu");
    QVERIFY(near(t.w(task(t, "load"), gpu), 2.0));   // 8 / speed 4
    QVERIFY(near(t.w(task(t, "conv"), gpu), 10.0));  // listed per device
    QVERIFY(!t.canRun(task(t, "conv"), npu));
    const int32_t lc = edge(t, "load", "conv"), cp = edge(t, "conv", "post");
    QVERIFY(near(t.comm(lc, cpu, gpu), 2.0 + 3000.0 / 100.0));  // the cpu-gpu link, both ways
    QVERIFY(near(t.comm(lc, gpu, cpu), 2.0 + 3000.0 / 100.0));
    QVERIFY(near(t.comm(lc, gpu, npu), 1.0 + 3000.0 / 50.0));  // one way only: the default latency
    QVERIFY(near(t.comm(lc, npu, gpu), 1.0 + 3000.0 / 1000.0));
    QVERIFY(near(t.comm(cp, cpu, npu), 5.0));  // a fixed transfer time stays one number
  }

  void badInput_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("reason");
    QTest::newRow("not json") << "{\"task_graph\": "
                              << "not valid JSON";
    QTest::newRow("saga no nodes")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}]}, "network": {"nodes": []}})"
        << "network.nodes";
    QTest::newRow("saga zero speed")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}]}, "network": {"nodes": [{"name": "n", "speed": 0}]}})"
        << "positive speed";
    QTest::newRow("saga negative cost")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": -1}]}, "network": {"nodes": [{"name": "n", "speed": 1}]}})"
        << "non-negative cost";
    QTest::newRow("saga unknown task")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}], "dependencies": [{"source": "a", "target": "b", "size": 1}]}, "network": {"nodes": [{"name": "n", "speed": 1}]}})"
        << "unknown task 'b'";
    QTest::newRow("saga cycle")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}, {"name": "b", "cost": 1}], "dependencies": [{"source": "a", "target": "b"}, {"source": "b", "target": "a"}]}, "network": {"nodes": [{"name": "n", "speed": 1}]}})"
        << "cycle";
    QTest::newRow("saga unknown node")
        << R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}]}, "network": {"nodes": [{"name": "n", "speed": 1}], "edges": [{"source": "n", "target": "m", "speed": 1}]}})"
        << "unknown node 'm'";
    QTest::newRow("wf no machines") << R"({"workflow": {"tasks": [{"name": "a", "runtimeInSeconds": 1}]}})"
                                    << "no machines";
    QTest::newRow("wf no runtime") << R"({"workflow": {"machines": [{"nodeName": "m"}], "tasks": [{"name": "a"}]}})"
                                   << "no runtime";
    QTest::newRow("wf unknown parent")
        << R"({"workflow": {"machines": [{"nodeName": "m"}], "tasks": [{"name": "a", "runtime": 1, "parents": ["z"]}]}})"
        << "unknown parent 'z'";
    QTest::newRow("bytes without network")
        << R"({"devices": ["a"], "tasks": {"x": 1, "y": 1}, "edges": [{"from": "x", "to": "y", "bytes": 10}]})"
        << "no 'network'";
    QTest::newRow("link to unknown device")
        << R"({"devices": ["a", "b"], "tasks": {"x": 1}, "network": {"links": [{"between": ["a", "c"], "bandwidth": 1}]}})"
        << "unknown device 'c'";
    QTest::newRow("negative bandwidth") << R"({"devices": ["a", "b"], "tasks": {"x": 1}, "network": {"bandwidth": -1}})"
                                        << "'bandwidth' must be a non-negative number";
    QTest::newRow("bad speed") << R"({"devices": [{"name": "a", "speed": 0}], "tasks": {"x": 1}})"
                               << "'speed' must be a positive";
    QTest::newRow("none of them") << R"({"graph": {}})"
                                  << "not a scheduling instance";
  }
  void badInput() {
    QFETCH(QString, text);
    QFETCH(QString, reason);
    auto t = parseInstance(text.toStdString(), "bad.json");
    QVERIFY(!t.isOk());
    const QString msg = QString::fromStdString(t.message());
    QVERIFY2(msg.startsWith("bad.json: "), qPrintable(msg));
    QVERIFY2(msg.contains(reason), qPrintable(msg));
    QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  }

  /// The CLI reads each format and refuses a bad file with exit code 2 and the file's name.
  void cli() {
    if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
    for (const char* name : {"saga_small.json", "wfcommons_v14.json", "wfcommons_v15.json", "network_small.json"}) {
      QProcess p;
      p.start(test::cliPath(), {"schedule", QString::fromStdString(dataPath(name)), "--algo", "best", "--json"});
      QVERIFY(p.waitForFinished(120000));
      QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
      QVERIFY(p.readAllStandardOutput().contains("makespan"));
    }
    const QString bad = QString::fromStdString(test::tempDir()) + "/bad_saga.json";
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        R"({"task_graph": {"tasks": [{"name": "a", "cost": -3}]}, "network": {"nodes": [{"name": "n", "speed": 1}]}})");
    f.close();
    QProcess p;
    p.start(test::cliPath(), {"schedule", bad, "--algo", "heft"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    QVERIFY2(err.contains("bad_saga.json") && err.contains("non-negative cost"), qPrintable(err));
  }
};

QTEST_GUILESS_MAIN(TestInstances)
#include "tst_instances.moc"
