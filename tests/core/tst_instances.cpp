// Scheduling instances from the scheduling community (cost/instances.h, issue 14.2): Partex task graphs
// with a network whose links differ, SAGA problem instances and WfCommons workflows (WfFormat 1.4, 1.5
// and 1.6) become the cost tables worked out by hand here; a schedule of each simulates to the times
// SAGA's own rules give; bad files fail with one line naming the file and the reason, and partex-cli
// exits 2 on them. Issue 28: every task-graph edge is its own data (a fork's two edges to one device
// are two transfers, each of its own size) in the simulator, its fast path, the list schedulers and
// the branch and bound; WfCommons files that several edges carry are sent once; a machine of N cores
// is N processors; a JSON file that is no instance names the keys looked for; best is never worse
// than any list heuristic. The real WfInstances collection is read when PARTEX_WFINSTANCES names it.
#include <QtTest>

#include <QDirIterator>
#include <QProcess>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
#include <set>

#include "cost/instances.h"
#include "sched/listsched.h"
#include "sched/scheduler.h"
#include "sim/fastsim.h"
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

/// A SAGA-style instance of one family of `bench_sched families`, smaller (chain of 12, fork-join of 4
/// branches of 2, binary trees of 15, layered 4 x 4, on 3 nodes).
CostTable familyTable(const std::string& family, double ccr, uint64_t seed) {
  FamilyShape s;
  s.chain = 12;
  s.tree = 15;
  s.forkBranches = 4;
  s.forkStages = 2;
  s.layers = 4;
  s.width = 4;
  s.nodes = 3;
  return sagaFamilyInstance(family, ccr, seed, s);
}

CostTable parse(const std::string& text, const InstanceOptions& o = {}) {
  auto t = parseInstance(text, "inline.json", o);
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

/// The issue's fork in miniature: t0 on A sends 27.80 units to t11 and 26.36 to t15, both on B
/// (a link of 100 bytes per microsecond: 2780 and 2636 bytes). t0 runs only on A, t11 and t15 only on B.
const char* kFork = R"({"devices": ["A", "B"],
  "tasks": {"t0": [1, null], "t11": [null, 2], "t15": [null, 1]},
  "edges": [{"from": "t0", "to": "t11", "bytes": 2780}, {"from": "t0", "to": "t15", "bytes": 2636}],
  "network": {"bandwidth": 100}})";

/// A plan of `t`: per device its tasks by name, in order.
Plan planOf(const CostTable& t, const std::vector<std::vector<std::string>>& orders) {
  Plan p;
  p.device.assign(static_cast<size_t>(t.numTasks()), 0);
  p.order.assign(static_cast<size_t>(t.numDevices()), {});
  for (size_t d = 0; d < orders.size(); ++d)
    for (const auto& name : orders[d]) {
      p.device[static_cast<size_t>(task(t, name))] = static_cast<DeviceId>(d);
      p.order[d].push_back(task(t, name));
    }
  return p;
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
  /// at 100 MB/s. Read as SAGA does (one processor per machine).
  void wfcommons14() {
    auto bytes = readFile(dataPath("wfcommons_v14.json"));
    QVERIFY(bytes.isOk());
    InstanceOptions saga;
    saga.wfOnePerMachine = true;
    const CostTable t = parse(*bytes, saga);
    QCOMPARE(t.numDevices(), 2);
    const DeviceId fast = device(t, "fast"), slow = device(t, "slow");
    QVERIFY(near(t.w(task(t, "work_a"), fast), 10e6 * 2000.0 / 3000.0));
    QVERIFY(near(t.w(task(t, "work_a"), slow), 10e6 * 2.0));
    const int32_t eb = edge(t, "split", "work_b"), ea = edge(t, "split", "work_a");
    QVERIFY(ea >= 0 && eb >= 0);
    QCOMPARE(t.edges[static_cast<size_t>(eb)].bytes, int64_t{6000000});  // a.dat + b.dat
    QCOMPARE(t.edges[static_cast<size_t>(ea)].bytes, int64_t{2000000});
    QVERIFY(near(t.comm(eb, fast, slow), 6e6 / 100.0));  // 100 MB/s = 100 bytes per microsecond
    // Two different sets of files: two data items.
    QVERIFY(t.edges[static_cast<size_t>(ea)].item != t.edges[static_cast<size_t>(eb)].item);
    // By default each machine's cpu.count (4) is processors, at most one per task (3 tasks): fast/0..2
    // and slow/0..2; the cores of one machine share its memory.
    const CostTable c = load("wfcommons_v14.json");
    QCOMPARE(c.numDevices(), 6);
    QCOMPARE(c.deviceIds[0], std::string("fast/0"));
    QCOMPARE(c.deviceIds[5], std::string("slow/2"));
    QVERIFY(near(c.w(task(c, "work_a"), device(c, "fast/2")), 10e6 * 2000.0 / 3000.0));
    QCOMPARE(c.comm(eb, device(c, "fast/0"), device(c, "fast/1")), 0.0);
    QVERIFY(near(c.comm(eb, device(c, "fast/0"), device(c, "slow/1")), 6e6 / 100.0));
  }

  void wfcommons15() {
    const CostTable t = load("wfcommons_v15.json");
    QCOMPARE(t.numTasks(), 2);
    QCOMPARE(t.numDevices(), 4);  // two machines of 8 cores, two tasks: two processors each
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
    QTest::newRow("none of them") << R"({"graph": {}, "opset": 17})"
                                  << "not a scheduling instance: looked for the keys 'tasks' (a Partex task graph), "
                                     "'task_graph' and 'network' (a SAGA problem instance) or 'workflow' (a WfCommons "
                                     "workflow), found keys 'graph', 'opset'";
    QTest::newRow("an array") << "[1, 2]"
                              << "found a JSON array";
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
    // A JSON file that is no instance: the keys looked for, not "an ONNX model needs --platform".
    const QString other = QString::fromStdString(test::tempDir()) + "/not_an_instance.json";
    QFile g(other);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(R"({"graph": {"node": []}})");
    g.close();
    const auto run = test::runCli({"schedule", other, "--algo", "heft"}, 60000);
    QCOMPARE(run.code, 2);
    const QString e2 = QString::fromUtf8(run.err).trimmed();
    QVERIFY2(e2.contains("not_an_instance.json") && e2.contains("'workflow'") && e2.contains("found keys 'graph'") &&
                 !e2.contains("--platform") && !e2.contains('\n'),
             qPrintable(e2));
  }

  /// The issue's fork in miniature (t0 -> t11, 27.80; t0 -> t15, 26.36; t11 and t15 on one device):
  /// two transfers, each of its own size, so t15 starts when its own data is there, 1 + 26.36 = 27.36,
  /// not at t11's 28.80. The simulator, its fast path, the list schedulers' timeline, the branch and
  /// bound (exact) and best all count so. (Sent once at the larger size, t15 would wait until 28.80
  /// and the best plan would end at 31.80.)
  void forkEdgesAreTheirOwnData() {
    const CostTable t = parse(kFork);
    const TaskId t0 = task(t, "t0"), t11 = task(t, "t11"), t15 = task(t, "t15");
    const DeviceId a = device(t, "A"), b = device(t, "B");
    QVERIFY(t.edges[0].item >= 0 && t.edges[1].item >= 0 && t.edges[0].item != t.edges[1].item);
    const Plan p = planOf(t, {{"t0"}, {"t15", "t11"}});
    auto tl = simulate(t, p);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    QVERIFY(near(tl->tasks[static_cast<size_t>(t15)].start, 27.36));  // t15: [27.36, 28.36]
    QVERIFY(near(tl->tasks[static_cast<size_t>(t11)].start, 28.80));  // t11: [28.80, 30.80]
    QVERIFY(near(tl->makespan, 30.80));
    QCOMPARE(tl->transfers.size(), size_t{2});
    QCOMPARE(tl->bytesMoved, int64_t{2780 + 2636});
    // The local search's fast path.
    FastSim fs(t, {});
    QVERIFY(near(fs.run(p), 30.80));
    QVERIFY(near(fs.start()[static_cast<size_t>(t15)], 27.36));
    // The list schedulers' estimates: t11 placed first, t15 still fits before it on its own transfer.
    sched_detail::ListTimeline lt(t, {});
    lt.place(t0, a);
    QVERIFY(near(lt.evaluate(t15, b).start, 27.36));
    QVERIFY(near(lt.evaluate(t11, b).start, 28.80));
    lt.place(t11, b);
    QVERIFY(near(lt.evaluate(t15, b).start, 27.36));
    QVERIFY(near(lt.place(t15, b).finish, 28.36));
    QVERIFY(near(lt.makespan(), 30.80));
    // Whole schedulers: the optimum is 30.80 (t15 then t11 on B).
    for (const char* algo : {"heft", "minmin", "exact", "best"}) {
      SchedOptions o;
      o.timeLimitSec = 2;
      auto plan = findScheduler(algo)->schedule(t, {}, o);
      QVERIFY2(plan.isOk(), plan.message().c_str());
      auto r = simulate(t, *plan);
      QVERIFY2(r.isOk(), r.message().c_str());
      QVERIFY2(near(r->makespan, 30.80), qPrintable(QString("%1: %2").arg(algo).arg(r->makespan)));
    }
    // The same fork as a SAGA instance (sizes in megabytes over a link of 1 megabyte per time unit).
    const CostTable g = parse(R"({"name": "fork", "task_graph": {"tasks": [{"name": "t0", "cost": 1},
      {"name": "t11", "cost": 2}, {"name": "t15", "cost": 1}], "dependencies": [
      {"source": "t0", "target": "t11", "size": 27.80}, {"source": "t0", "target": "t15", "size": 26.36}]},
      "network": {"nodes": [{"name": "A", "speed": 1}, {"name": "B", "speed": 1}],
      "edges": [{"source": "A", "target": "B", "speed": 1}]}})");
    auto sg = simulate(g, planOf(g, {{"t0"}, {"t15", "t11"}}));
    QVERIFY2(sg.isOk(), sg.message().c_str());
    QVERIFY(near(sg->tasks[static_cast<size_t>(task(g, "t15"))].start, 27.36));
    QVERIFY(near(sg->makespan, 30.80));
  }

  /// WfFormat 1.6 (1.5's layout with optional metrics): a machine of 8 cores is processors m2/0.. (at
  /// most one per task), of its speed, sharing its memory; a file two children read is one data item,
  /// sent once to a processor that runs both; SAGA's one processor per machine on request.
  void wfcommons16() {
    const std::string wf = R"({"name": "fork-1.6", "schemaVersion": "1.6", "workflow": {
      "specification": {
        "tasks": [
          {"name": "split", "id": "split", "parents": [], "children": ["a", "b", "c"], "inputFiles": [], "outputFiles": ["chunk.dat", "other.dat"]},
          {"name": "work", "id": "a", "parents": ["split"], "children": [], "inputFiles": ["chunk.dat"], "outputFiles": []},
          {"name": "work", "id": "b", "parents": ["split"], "children": [], "inputFiles": ["chunk.dat"], "outputFiles": []},
          {"name": "work", "id": "c", "parents": ["split"], "children": [], "inputFiles": ["other.dat"], "outputFiles": []}],
        "files": [{"id": "chunk.dat", "sizeInBytes": 300000000}, {"id": "other.dat", "sizeInBytes": 100000000}],
        "metrics": {"numberOfTasks": 4, "numberOfFiles": 2, "sumOfFileSizesInBytes": 400000000, "numberOfLevels": 2,
                    "minimumWidth": 1, "maximumWidth": 3}},
      "execution": {"makespanInSeconds": 16, "executedAt": "2026-08-04T15:20:00-08:00",
        "tasks": [{"id": "split", "runtimeInSeconds": 2, "coreCount": 1, "machines": ["m1"]},
                  {"id": "a", "runtimeInSeconds": 4, "machines": ["m2"]}, {"id": "b", "runtimeInSeconds": 4, "machines": ["m2"]},
                  {"id": "c", "runtimeInSeconds": 6, "machines": ["m2"]}],
        "machines": [{"nodeName": "m1", "memoryInBytes": 34359738368, "cpu": {"coreCount": 1, "speedInMHz": 3000}},
                     {"nodeName": "m2", "cpu": {"coreCount": 8, "speedInMHz": 1000}}],
        "metrics": {"sumTaskRuntimesInSeconds": 16}}}})";
    const CostTable t = parse(wf);
    QCOMPARE(t.deviceIds, (std::vector<std::string>{"m1", "m2/0", "m2/1", "m2/2", "m2/3"}));
    // Speeds 3000 and 1000 MHz, mean 2000: c takes 6 s x 2000 / 1000 on m2's cores.
    QVERIFY(near(t.w(task(t, "c"), device(t, "m2/3")), 12e6));
    QVERIFY(near(t.w(task(t, "split"), device(t, "m1")), 2e6 * 2000.0 / 3000.0));
    const int32_t ea = edge(t, "split", "a"), eb = edge(t, "split", "b"), ec = edge(t, "split", "c");
    QCOMPARE(t.edges[static_cast<size_t>(ea)].item, t.edges[static_cast<size_t>(eb)].item);
    QVERIFY(t.edges[static_cast<size_t>(ec)].item != t.edges[static_cast<size_t>(ea)].item);
    QCOMPARE(t.comm(ea, device(t, "m2/0"), device(t, "m2/1")), 0.0);  // one machine's memory
    // split on m1 [0, 1.333 s]; chunk.dat (300 MB at 100 MB/s) reaches m2/0 once, at 4.333 s: a, then b
    // (8 s each), ends at 20.333 s; other.dat reaches m2/1 at 2.333 s: c ends at 14.333 s.
    const Plan p = planOf(t, {{"split"}, {"a", "b"}, {"c"}, {}, {}});
    auto tl = simulate(t, p);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const double split = 2e6 * 2000.0 / 3000.0;
    QCOMPARE(tl->transfers.size(), size_t{2});
    QCOMPARE(tl->bytesMoved, int64_t{400000000});
    QVERIFY(near(tl->tasks[static_cast<size_t>(task(t, "a"))].start, split + 3e6));
    QVERIFY(near(tl->tasks[static_cast<size_t>(task(t, "c"))].start, split + 1e6));
    QVERIFY(near(tl->makespan, split + 3e6 + 16e6));
    // SAGA's reading: one processor per machine, named after it.
    InstanceOptions saga;
    saga.wfOnePerMachine = true;
    QCOMPARE(parse(wf, saga).deviceIds, (std::vector<std::string>{"m1", "m2"}));
    // A core count that is no count is refused with the machine's name.
    std::string bad = wf;
    bad.replace(bad.find("\"coreCount\": 8"), 14, "\"coreCount\": 0");
    auto r = parseInstance(bad, "bad.json");
    QVERIFY(!r.isOk());
    QVERIFY2(QString::fromStdString(r.message()).contains("machine 'm2': the core count"), r.message().c_str());
  }

  /// best is never worse than any list heuristic Partex implements (HEFT's family and SAGA's), under
  /// a 2 s limit, on small instances of the families of `bench_sched families`: each member's plan is
  /// in best's portfolio, judged by the same simulator.
  void bestNeverWorseThanTheListHeuristics() {
    const std::vector<std::string> heuristics{"heft", "cpop", "peft", "minmin", "maxmin", "sufferage",
                                              "mct", "met", "olb", "duplex", "etf", "hbmct"};
    for (const char* family : {"chain", "fork-join", "out-tree", "in-tree", "layered"})
      for (double ccr : {1.0, 10.0}) {
        const CostTable t = familyTable(family, ccr, 17);
        SchedOptions o;
        o.timeLimitSec = 2;
        auto best = findScheduler("best")->schedule(t, {}, o);
        QVERIFY2(best.isOk(), best.message().c_str());
        auto bt = simulate(t, *best);
        QVERIFY2(bt.isOk(), bt.message().c_str());
        for (const auto& h : heuristics) {
          auto p = findScheduler(h)->schedule(t, {}, o);
          QVERIFY2(p.isOk(), p.message().c_str());
          auto ht = simulate(t, *p);
          QVERIFY2(ht.isOk(), ht.message().c_str());
          QVERIFY2(bt->makespan <= ht->makespan * (1 + 1e-12),
                   qPrintable(QString("%1 CCR %2: best %3 > %4 %5").arg(family).arg(ccr).arg(bt->makespan).arg(h.c_str()).arg(ht->makespan)));
        }
      }
  }

  /// The WfInstances collection (github.com/wfcommons/WfInstances) when PARTEX_WFINSTANCES names a
  /// folder of it: every workflow opens with its tasks and every machine's cores.
  void wfInstancesCollection() {
    const QString dir = qEnvironmentVariable("PARTEX_WFINSTANCES");
    if (dir.isEmpty() || !QFileInfo(dir).isDir())
      QSKIP("PARTEX_WFINSTANCES does not name a folder: the WfInstances collection is not read (optional)");
    int files = 0;
    QDirIterator it(dir, {"*.json"}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
      const std::string path = it.next().toStdString();
      auto bytes = readFile(path);
      QVERIFY2(bytes.isOk(), bytes.message().c_str());
      const auto j = nlohmann::json::parse(*bytes);
      auto t = parseInstance(*bytes, path);
      QVERIFY2(t.isOk(), t.message().c_str());
      const auto& wf = j["workflow"];
      const auto& tasks = wf.contains("specification") ? wf["specification"]["tasks"] : wf["tasks"];
      QCOMPARE(static_cast<size_t>(t->numTasks()), tasks.size());
      const auto& machines = wf.contains("execution") ? wf["execution"]["machines"] : wf["machines"];
      size_t procs = 0;
      std::set<std::string> seen;
      for (const auto& mc : machines)
        if (seen.insert(mc["nodeName"].get<std::string>()).second)
          procs += std::min<size_t>(tasks.size(), mc.contains("cpu") ? mc["cpu"].value("coreCount", size_t{1}) : 1);
      QCOMPARE(static_cast<size_t>(t->numDevices()), procs);
      ++files;
    }
    QVERIFY(files > 0);
    qInfo("%d WfInstances workflows read", files);
  }
};

QTEST_GUILESS_MAIN(TestInstances)
#include "tst_instances.moc"
