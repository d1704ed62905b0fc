// A stream of inferences through a plan on the executor's lanes (executeStream, partex-cli execute
// --stream; issue 29, item 4), on the fake backend: a two-stage plan overlaps inferences (read from the
// recorded start and end times, not from a timing threshold), every inference's outputs are checked,
// the in-flight bound holds, and bad streams give errors. With the real CPU backend (when built): a
// generated model on core0 + core1 through `partex-cli execute --stream`.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fake_backend.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "sim/plan.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

/// x -> n1 (Neg) -> n2 (Sigmoid) -> n3 (Relu) -> n4 (Sigmoid) -> y: y = sigmoid(sigmoid(-x)), which
/// depends on x (the diamond's output is 0 whatever its input, so it could not tell two inputs apart).
Graph chainGraph() {
  Graph g;
  g.name = "chain";
  g.sourcePath = "chain.onnx";
  g.graphSha256 = "c4a1200000000000000000000000000000000000000000000000000000000000";
  auto value = [&](const std::string& name) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.shape = {1, 64};
    v.shapeKnown = true;
    return g.addValue(v);
  };
  ValueId prev = value("x");
  g.values[static_cast<size_t>(prev)].isGraphInput = true;
  g.inputs = {prev};
  const char* types[] = {"Neg", "Sigmoid", "Relu", "Sigmoid"};
  for (int i = 0; i < 4; ++i) {
    Node n;
    n.name = "n" + std::to_string(i + 1);
    n.opType = types[i];
    n.inputs = {prev};
    prev = value(n.name + "_out");
    n.outputs = {prev};
    g.addNode(n);
  }
  g.values[static_cast<size_t>(prev)].isGraphOutput = true;
  g.outputs = {prev};
  g.rebuildIndex();
  return g;
}

/// Places operators by name (others on dev0), ordered by upward rank.
Plan planOf(const CostTable& t, const std::map<std::string, std::string>& where) {
  Plan p;
  p.algorithm = "test";
  p.device.assign(static_cast<size_t>(t.numTasks()), 0);
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    auto it = where.find(t.taskNames[static_cast<size_t>(v)]);
    const std::string dev = it == where.end() ? "dev0" : it->second;
    p.device[static_cast<size_t>(v)] =
        static_cast<DeviceId>(std::find(t.deviceIds.begin(), t.deviceIds.end(), dev) - t.deviceIds.begin());
  }
  orderByUpwardRank(t, p);
  return p;
}

DeviceId deviceOf(const CostTable& t, const std::string& id) {
  return static_cast<DeviceId>(std::find(t.deviceIds.begin(), t.deviceIds.end(), id) - t.deviceIds.begin());
}

}  // namespace

class TestExecuteStream : public QObject {
  Q_OBJECT
 private slots:
  void twoStagesOverlap();
  void oneInFlightDoesNotOverlap();
  void everyInferenceIsChecked();
  void errorsAreValues();
  void replicasAlternate();
  void eachContextRunsItsReplica();
  void nextFreeReplicas();
  void cliRejectsBadStreams_data();
  void cliRejectsBadStreams();
  void cliStreamOnGeneratedModel();
  void cliStreamReplicas();
  void cliStreamWorkload();
};

void TestExecuteStream::twoStagesOverlap() {
  // Stage 1: n1, n2 on dev0; stage 2: n3, n4 on dev1. Each kernel is off its CPU for 5 ms (a sleeping
  // kernel), so a lane never needs the CPU that another lane's kernel holds.
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"n3", "dev1"}, {"n4", "dev1"}});
  test::FakeBackend b(-5000);
  StreamExecOptions o;
  o.inferences = 6;
  o.keepOpTimes = true;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  // Hand counts: two devices used, so the simulator's bound is 3 in flight; 3 is odd, so two input sets
  // alternate and inferences t and t + 3 of one context read different inputs.
  QCOMPARE(r->inFlight, 3);
  QCOMPARE(r->inputSets, 2);
  QCOMPARE(r->inferences, 6);
  QCOMPARE(r->warmupCompletions, 3);
  QVERIFY(r->outputsChecked);
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->mismatchedInferences, 0);
  QCOMPARE(r->maxAbsDiff, 0.0);  // Same kernels: bitwise equal.
  const auto d0 = static_cast<size_t>(deviceOf(t, "dev0")), d1 = static_cast<size_t>(deviceOf(t, "dev1"));
  const size_t n = 4;
  QCOMPARE(r->opStartUs.size(), 6 * n);
  // The pipeline: inference 2 (index 1) started stage 1 before inference 1 (index 0) finished stage 2.
  QVERIFY2(r->stageStartUs[1][d0] < r->stageEndUs[0][d1],
           qPrintable(QString("inference 1 entered dev0 at %1 us, inference 0 left dev1 at %2 us")
                          .arg(r->stageStartUs[1][d0])
                          .arg(r->stageEndUs[0][d1])));
  QVERIFY(r->opStartUs[1 * n + 0] < r->opEndUs[0 * n + 3]);  // n1 of inference 1 before n4 of inference 0 ended
  for (size_t i = 0; i < 6; ++i) {
    // Within an inference, each operator after its predecessor; each inference's span is its operators'.
    for (size_t v = 1; v < n; ++v) QVERIFY(r->opStartUs[i * n + v] >= r->opEndUs[i * n + v - 1]);
    QCOMPARE(r->startUs[i], r->opStartUs[i * n]);
    QCOMPARE(r->endUs[i], r->opEndUs[i * n + 3]);
    QCOMPARE(r->stageStartUs[i][d0], r->opStartUs[i * n]);
    QCOMPARE(r->stageEndUs[i][d1], r->opEndUs[i * n + 3]);
    QCOMPARE(r->stageStartUs[i][static_cast<size_t>(deviceOf(t, "dev-bad"))], -1.0);
    // A stage's busy time is its two kernels' times, by hand from the operators' recorded times.
    QVERIFY(std::fabs(r->stageBusyUs[i][d0] - (r->opEndUs[i * n] - r->opStartUs[i * n]) -
                      (r->opEndUs[i * n + 1] - r->opStartUs[i * n + 1])) < 1e-6);
    QVERIFY(std::fabs(r->stageBusyUs[i][d1] - (r->opEndUs[i * n + 2] - r->opStartUs[i * n + 2]) -
                      (r->opEndUs[i * n + 3] - r->opStartUs[i * n + 3])) < 1e-6);
    QVERIFY(r->stageBusyUs[i][d1] <= r->stageEndUs[i][d1] - r->stageStartUs[i][d1] + 1e-6);
    if (i == 0) continue;
    // In order on each device: inference i's operators there after all of i - 1's.
    QVERIFY(r->stageStartUs[i][d0] >= r->stageEndUs[i - 1][d0]);
    QVERIFY(r->stageStartUs[i][d1] >= r->stageEndUs[i - 1][d1]);
    // The bounded queue: inference i enters once inference i - 3 has left.
    if (i >= 3) QVERIFY(r->startUs[i] >= r->endUs[i - 3]);
  }
  QVERIFY(r->periodUs > 0);
  QVERIFY(r->latencyMedianUs > 0 && r->latencyP90Us >= r->latencyMedianUs);
  QVERIFY(r->throughputPerS > 0 && r->steadyThroughputPerS > 0);
}

void TestExecuteStream::oneInFlightDoesNotOverlap() {
  // In flight 1: inference t + 1 enters only once t has left, so nothing overlaps.
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"n3", "dev1"}, {"n4", "dev1"}});
  test::FakeBackend b(-1000);
  StreamExecOptions o;
  o.inferences = 4;
  o.inFlight = 1;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->inFlight, 1);
  QCOMPARE(r->inputSets, 2);
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  for (size_t i = 1; i < 4; ++i) QVERIFY(r->startUs[i] >= r->endUs[i - 1]);
}

void TestExecuteStream::everyInferenceIsChecked() {
  // n4 on dev-bad (results off by 0.01): every one of the 5 inferences differs from its reference, and
  // the first reported is inference 0's (n4's lane ends the inferences in order).
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"n3", "dev1"}, {"n4", "dev-bad"}});
  test::FakeBackend b(50);
  StreamExecOptions o;
  o.inferences = 5;
  o.inFlight = 2;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->inputSets, 3);  // 2 in flight is a multiple of 2, not of 3
  QVERIFY(r->outputsChecked);
  QVERIFY(!r->outputsMatch);
  QCOMPARE(r->mismatchedInferences, 5);
  QVERIFY2(QString::fromStdString(r->mismatch).startsWith("inference 0: output 'n4_out': element "),
           r->mismatch.c_str());
  QVERIFY(r->maxAbsDiff > 0.005);
  QVERIFY(r->checkMedianUs > 0);  // the completions' time on the lanes, reported (it is in the period)
}

void TestExecuteStream::errorsAreValues() {
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"n3", "dev1"}});
  test::FakeBackend b;
  StreamExecOptions none;
  none.inferences = 0;
  auto r = executeStream(g, b, t, plan, none);
  QVERIFY(!r.isOk());
  QVERIFY2(QString::fromStdString(r.message()).contains("at least 1 inference"), r.message().c_str());
  StreamExecOptions negative;
  negative.inFlight = -2;
  auto r2 = executeStream(g, b, t, plan, negative);
  QVERIFY(!r2.isOk());
  QVERIFY2(QString::fromStdString(r2.message()).contains("in-flight bound"), r2.message().c_str());
  // A device the backend lacks.
  Platform p = test::fakePlatform();
  p.devices[1].id = "npu";
  p.links[0].to = "npu";
  auto t2 = buildCostTable(g, characteriseAll(g), p);
  QVERIFY2(t2.isOk(), t2.message().c_str());
  auto r3 = executeStream(g, b, *t2, planOf(*t2, {{"n3", "npu"}}), StreamExecOptions{});
  QVERIFY(!r3.isOk());
  QVERIFY2(QString::fromStdString(r3.message()).contains("device 'npu' is not a device of backend 'fake'"),
           r3.message().c_str());
  // A kernel that fails names the inference.
  Graph g4 = chainGraph();
  g4.nodes[2].opType = "Softmax";
  const CostTable t4 = test::fakeTable(g4);
  StreamExecOptions unchecked;
  unchecked.checkOutputs = false;
  auto r4 = executeStream(g4, b, t4, planOf(t4, {}), unchecked);
  QVERIFY(!r4.isOk());
  QVERIFY2(QString::fromStdString(r4.message()).contains("operator 'n3' (Softmax)"), r4.message().c_str());
  // Cancelled before it starts.
  std::atomic<bool> cancel{true};
  StreamExecOptions c;
  c.cancel = &cancel;
  auto r5 = executeStream(g, b, t, plan, c);
  QVERIFY(!r5.isOk());
  QCOMPARE(r5.message(), std::string("cancelled"));
}

void TestExecuteStream::replicasAlternate() {
  // The whole chain on dev0, its replica on dev1: inference t runs on dev0 for even t, dev1 for odd t,
  // whole, so inference 1 starts before inference 0 ends (two devices, no stage to wait for). Each
  // kernel sleeps 5 ms, so neither lane needs the other's CPU.
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  Plan plan = planOf(t, {});
  const auto d0 = static_cast<size_t>(deviceOf(t, "dev0")), d1 = static_cast<size_t>(deviceOf(t, "dev1"));
  std::vector<DeviceId> map(static_cast<size_t>(t.numDevices()));
  for (DeviceId d = 0; d < t.numDevices(); ++d) map[static_cast<size_t>(d)] = d;
  map[d0] = static_cast<DeviceId>(d1);
  plan.replicas = {map};
  test::FakeBackend b(-5000);
  StreamExecOptions o;
  o.inferences = 6;
  o.keepOpTimes = true;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  // Hand counts: 2 devices + 1 = 3 in flight, rounded up to 4 (a multiple of the 2 replicas); 4 is a
  // multiple of 2, not of 3: three input sets.
  QCOMPARE(r->replicas, 2);
  QCOMPARE(r->inFlight, 4);
  QCOMPARE(r->inputSets, 3);
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->mismatchedInferences, 0);
  for (size_t i = 0; i < 6; ++i) {
    const size_t on = i % 2 ? d1 : d0, off = i % 2 ? d0 : d1;
    QVERIFY2(r->stageStartUs[i][on] >= 0, qPrintable(QString("inference %1 did not run on its replica").arg(i)));
    QCOMPARE(r->stageStartUs[i][off], -1.0);
    QCOMPARE(r->stageStartUs[i][on], r->startUs[i]);
    QCOMPARE(r->stageEndUs[i][on], r->endUs[i]);
    if (i >= 2) QVERIFY(r->startUs[i] >= r->endUs[i - 2]);  // in order on its device
  }
  QVERIFY2(r->startUs[1] < r->endUs[0], qPrintable(QString("inference 1 started at %1 us, inference 0 ended at %2 us")
                                                       .arg(r->startUs[1])
                                                       .arg(r->endUs[0])));
  // An in-flight bound that is not a multiple of the replicas is refused.
  o.inFlight = 3;
  auto bad = executeStream(g, b, t, plan, o);
  QVERIFY(!bad.isOk());
  QVERIFY2(QString::fromStdString(bad.message()).contains("must be a multiple of the plan's 2 replicas"),
           bad.message().c_str());
}

void TestExecuteStream::eachContextRunsItsReplica() {
  // The replica on dev-bad (results off by 0.01): exactly the odd inferences differ from their
  // references, so each context ran its own replica's kernels, and only those.
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  Plan plan = planOf(t, {});
  std::vector<DeviceId> map(static_cast<size_t>(t.numDevices()));
  for (DeviceId d = 0; d < t.numDevices(); ++d) map[static_cast<size_t>(d)] = d;
  map[static_cast<size_t>(deviceOf(t, "dev0"))] = deviceOf(t, "dev-bad");
  plan.replicas = {map};
  test::FakeBackend b(50);
  StreamExecOptions o;
  o.inferences = 6;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY(r->outputsChecked);
  QCOMPARE(r->mismatchedInferences, 3);
  QVERIFY2(QString::fromStdString(r->mismatch).startsWith("inference 1: "), r->mismatch.c_str());
}

void TestExecuteStream::nextFreeReplicas() {
  // Next-free dispatch: the whole chain on dev0 (four kernels of 1 ms off the CPU: 4 ms) and its replica
  // on dev-bad (3 ms each: 12 ms, results off by 0.01). Each inference goes to the replica whose lane
  // gets to it first, so dev0 takes about three of every four (round robin: exactly half). Exactly the
  // inferences that dev-bad ran differ from their references: every inference ran whole on the replica
  // that claimed it, in a context of that replica, with its own inputs bound.
  const Graph g = chainGraph();
  const CostTable t = test::fakeTable(g);
  Plan plan = planOf(t, {});
  const auto d0 = static_cast<size_t>(deviceOf(t, "dev0")), bad = static_cast<size_t>(deviceOf(t, "dev-bad"));
  std::vector<DeviceId> map(static_cast<size_t>(t.numDevices()));
  for (DeviceId d = 0; d < t.numDevices(); ++d) map[static_cast<size_t>(d)] = d;
  map[d0] = static_cast<DeviceId>(bad);
  plan.replicas = {map};
  test::FakeBackend b(-1000);
  b.sleepOn["dev-bad"] = -3000;
  StreamExecOptions o;
  o.inferences = 16;
  o.dispatch = ReplicaDispatch::NextFree;
  auto r = executeStream(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->dispatch, ReplicaDispatch::NextFree);
  QCOMPARE(r->inFlight, 4);
  QCOMPARE(r->replicaOf.size(), size_t{16});
  int onBad = 0;
  std::vector<double> lastEnd(2, -1.0);
  for (size_t i = 0; i < 16; ++i) {
    const int k = r->replicaOf[i];
    QVERIFY(k == 0 || k == 1);
    const size_t on = k ? bad : d0, off = k ? d0 : bad;
    QVERIFY2(r->stageStartUs[i][on] >= 0, qPrintable(QString("inference %1 did not run on its replica").arg(i)));
    QCOMPARE(r->stageStartUs[i][off], -1.0);
    QVERIFY(r->startUs[i] >= lastEnd[static_cast<size_t>(k)]);  // one at a time on its device, in order
    lastEnd[static_cast<size_t>(k)] = r->endUs[i];
    onBad += k;
  }
  QCOMPARE(r->mismatchedInferences, onBad);
  QVERIFY2(onBad >= 1 && onBad <= 6, qPrintable(QString("dev-bad ran %1 of 16 (about 4 expected)").arg(onBad)));
  // dev0 listed twice (the weighted round robin dev0, dev-bad, dev0): one replica under next free, with
  // the contexts of both (in flight 3 rounded up to 3: dev0's two contexts and dev-bad's one).
  std::vector<DeviceId> identity(static_cast<size_t>(t.numDevices()));
  for (DeviceId d = 0; d < t.numDevices(); ++d) identity[static_cast<size_t>(d)] = d;
  plan.replicas = {map, identity};
  auto w = executeStream(g, b, t, plan, o);
  QVERIFY2(w.isOk(), w.message().c_str());
  QCOMPARE(w->inFlight, 3);
  int wBad = 0;
  for (int k : w->replicaOf) {
    QVERIFY(k == 0 || k == 1);  // claimed under the first listing of dev0
    wBad += k;
  }
  QCOMPARE(w->mismatchedInferences, wBad);
  QVERIFY2(wBad >= 1 && wBad <= 6, qPrintable(QString("dev-bad ran %1 of 16 (about 4 expected)").arg(wBad)));
  plan.replicas = {map};
  // Replicas sharing a lane are refused (the claims would need an order between replicas).
  test::FakeBackend one(-1000);
  one.devs = {{"dev0", "fake device 0", 1, 0, {}}, {"dev1", "fake device 1", 1, 0, {}}, {"dev-bad", "wrong", 1, 0, {}}};
  auto shared = executeStream(g, one, t, plan, o);
  QVERIFY(!shared.isOk());
  QVERIFY2(QString::fromStdString(shared.message()).contains("next-free dispatch needs replicas on disjoint CPUs"),
           shared.message().c_str());
}

void TestExecuteStream::cliRejectsBadStreams_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("says");
  QTest::newRow("zero") << QStringList{"--stream", "0"} << "--stream must be between 1 and 100000";
  QTest::newRow("negative") << QStringList{"--stream", "-4"} << "--stream must be between 1 and 100000";
  QTest::newRow("too many") << QStringList{"--stream", "100001"} << "--stream must be between 1 and 100000";
  QTest::newRow("not a number") << QStringList{"--stream", "ten"} << "--stream";
  QTest::newRow("in flight alone") << QStringList{"--in-flight", "2"} << "--in-flight needs --stream";
  QTest::newRow("in flight zero") << QStringList{"--stream", "5", "--in-flight", "0"}
                                  << "--in-flight must be at least 1";
  QTest::newRow("outputs") << QStringList{"--stream", "5", "--outputs", "out"} << "--outputs cannot be combined";
  QTest::newRow("dispatch unknown") << QStringList{"--stream", "5", "--dispatch", "random"}
                                    << "--dispatch must be round-robin or next-free, not 'random'";
  QTest::newRow("dispatch alone") << QStringList{"--dispatch", "next-free"} << "--dispatch needs --stream";
}

void TestExecuteStream::cliRejectsBadStreams() {
  QFETCH(QStringList, args);
  QFETCH(QString, says);
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  // The arguments are checked before the model is read: the paths need not exist.
  const auto run = test::runCli(QStringList{"execute", "no-model.onnx", "--plan", "no-plan.json"} + args, 60000);
  QCOMPARE(run.code, 2);
  const QString err = QString::fromUtf8(run.err).trimmed();
  QVERIFY2(err.contains(says), qPrintable(err));
  QVERIFY2(!err.contains('\n'), qPrintable(err));  // one line
  QVERIFY(run.out.isEmpty());
}

void TestExecuteStream::cliStreamOnGeneratedModel() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  const QString model = dir + "/rand.onnx";
  auto gen = test::runCli({"generate", "random", "--nodes", "24", "--seed", "5", "-o", model}, 120000);
  QCOMPARE(gen.code, 0);
  // A pipelined plan on core0 + core1 (this machine's figures).
  const QString platform = dir + "/two-cores.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  const QString plan = dir + "/rand.plan.json";
  auto sched = test::runCli({"schedule", model, "-p", platform, "--algo", "pipeline", "-o", plan}, 120000);
  QVERIFY2(sched.code == 0, sched.err.constData());
  auto ex = test::runCli({"execute", model, "-p", platform, "--plan", plan, "--stream", "8", "--json"}, 300000);
  QVERIFY2(ex.code == 0, ex.err.constData());
  QJsonParseError perr;
  const QJsonObject o = QJsonDocument::fromJson(ex.out, &perr).object();
  QVERIFY2(perr.error == QJsonParseError::NoError, qPrintable(perr.errorString()));
  QVERIFY(o["outputs_match"].toBool());
  QCOMPARE(o["mismatched_inferences"].toInt(), 0);
  QCOMPARE(o["inferences"].toInt(), 8);
  QVERIFY(o["in_flight"].toInt() >= 2);
  QVERIFY(o["measured_period_us"].toDouble() > 0);
  QVERIFY(o["predicted_period_us"].toDouble() > 0);
  QVERIFY(o["measured_latency_p90_us"].toDouble() >= o["measured_latency_median_us"].toDouble());
  QVERIFY(o["measured_check_median_us"].toDouble() > 0);
  const QJsonArray inf = o["inferences_us"].toArray();
  QCOMPARE(inf.size(), 8);
  for (const auto& x : inf) QVERIFY(x.toObject()["end_us"].toDouble() > x.toObject()["start_us"].toDouble());
  QVERIFY(o["stages"].toArray().size() >= 1);
}

/// A workload of two models (issue 29, item 4): `schedule` and `execute --stream` take the workload file
/// as one graph holding a round of it (problem/workloadgraph.h), and execute reports each model's
/// throughput and latency, measured and predicted.
void TestExecuteStream::cliStreamWorkload() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  for (const auto& [name, seed] : {std::pair<QString, QString>{"a", "5"}, {"b", "7"}}) {
    auto gen = test::runCli({"generate", "random", "--nodes", "16", "--seed", seed, "-o", dir + "/" + name + ".onnx"}, 120000);
    QCOMPARE(gen.code, 0);
  }
  const QString platform = dir + "/two-cores.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  // Model a at twice b's rate: a round holds a#0, a#1 and b#0.
  const QString workload = dir + "/pair.json";
  QVERIFY(writeFileAtomic(workload.toStdString(), R"({"name": "pair", "models": [
      {"name": "a", "model": "a.onnx", "rate": 20, "deadline_ms": 100},
      {"name": "b", "model": "b.onnx", "rate": 10, "deadline_ms": 100}]})")
              .isOk());
  const QString plan = dir + "/pair.plan.json";
  auto sched = test::runCli({"schedule", workload, "-p", platform, "--algo", "pipeline", "-o", plan}, 120000);
  QVERIFY2(sched.code == 0, sched.err.constData());
  auto ex = test::runCli({"execute", workload, "-p", platform, "--plan", plan, "--stream", "8", "--json"}, 300000);
  QVERIFY2(ex.code == 0, ex.err.constData());
  const QJsonObject o = QJsonDocument::fromJson(ex.out).object();
  QVERIFY(o["outputs_match"].toBool());
  QCOMPARE(o["inferences"].toInt(), 8);
  const QJsonArray models = o["workload_models"].toArray();
  QCOMPARE(models.size(), 2);
  const QJsonObject a = models[0].toObject(), b = models[1].toObject();
  QCOMPARE(a["model"].toString(), QString("a"));
  QCOMPARE(a["copies_per_round"].toInt(), 2);
  QCOMPARE(b["model"].toString(), QString("b"));
  QCOMPARE(b["copies_per_round"].toInt(), 1);
  // Each model's throughput is the round's times its copies, measured and predicted alike.
  QCOMPARE(a["measured_throughput_per_s"].toDouble(), 2 * b["measured_throughput_per_s"].toDouble());
  QCOMPARE(a["predicted_throughput_per_s"].toDouble(), 2 * b["predicted_throughput_per_s"].toDouble());
  QCOMPARE(b["measured_throughput_per_s"].toDouble(), o["measured_steady_throughput_per_s"].toDouble());
  for (const auto& m : {a, b}) {
    QVERIFY(m["measured_latency_median_us"].toDouble() > 0);
    QVERIFY(m["predicted_latency_us"].toDouble() > 0);
    // A copy is part of a round: its latency is at most the round's.
    QVERIFY(m["predicted_latency_us"].toDouble() <= o["predicted_max_latency_us"].toDouble() + 1e-6);
  }
  // A round that holds no whole inferences: one line naming the workload file and the model.
  const QString bad = dir + "/uneven.json";
  QVERIFY(writeFileAtomic(bad.toStdString(), R"({"models": [
      {"name": "a", "model": "a.onnx", "rate": 30, "deadline_ms": 100},
      {"name": "b", "model": "b.onnx", "rate": 20, "deadline_ms": 100}]})")
              .isOk());
  auto f = test::runCli({"execute", bad, "-p", platform, "--plan", plan, "--stream", "8"}, 120000);
  QCOMPARE(f.code, 2);
  const QString err = QString::fromUtf8(f.err).trimmed();
  QVERIFY2(err.contains("uneven.json") && err.contains("\"a\"") && !err.contains('\n'), qPrintable(err));
}

void TestExecuteStream::cliStreamReplicas() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  const QString model = dir + "/rand.onnx";
  auto gen = test::runCli({"generate", "random", "--nodes", "24", "--seed", "5", "-o", model}, 120000);
  QCOMPARE(gen.code, 0);
  const QString platform = dir + "/two-cores.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  // The whole model on core0, and a replica on core1 added by hand: ONNX Runtime's two one-thread
  // sessions side by side, as a plan file.
  const QString single = dir + "/single.plan.json";
  auto sched =
      test::runCli({"schedule", model, "-p", platform, "--algo", "single", "--param", "device=core0", "-o", single}, 120000);
  QVERIFY2(sched.code == 0, sched.err.constData());
  auto text = readFile(single.toStdString());
  QVERIFY(text.isOk());
  QJsonObject doc = QJsonDocument::fromJson(QByteArray::fromStdString(*text)).object();
  auto withReplicas = [&](const QJsonArray& reps, const QString& name) {
    QJsonObject d = doc;
    d["replicas"] = reps;
    const QString path = dir + "/" + name;
    if (!writeFileAtomic(path.toStdString(), QJsonDocument(d).toJson().toStdString()).isOk()) qFatal("cannot write");
    return path;
  };
  const QString twin = withReplicas({QJsonObject{{"core0", "core1"}}}, "twin.plan.json");
  auto ex = test::runCli({"execute", model, "-p", platform, "--plan", twin, "--stream", "8", "--json"}, 300000);
  QVERIFY2(ex.code == 0, ex.err.constData());
  const QJsonObject o = QJsonDocument::fromJson(ex.out).object();
  QVERIFY(o["outputs_match"].toBool());
  QCOMPARE(o["replicas"].toInt(), 2);
  QCOMPARE(o["in_flight"].toInt(), 4);  // two cores used, plus one, rounded up to a multiple of 2
  // One line per device of each replica: replica 0 on core0, replica 1 on core1, each predicted busy.
  const QJsonArray stages = o["stages"].toArray();
  QCOMPARE(stages.size(), 2);
  QCOMPARE(stages[0].toObject()["device"].toString(), QString("core0"));
  QCOMPARE(stages[0].toObject()["replica"].toInt(), 0);
  QCOMPARE(stages[1].toObject()["device"].toString(), QString("core1"));
  QCOMPARE(stages[1].toObject()["replica"].toInt(), 1);
  for (const auto& st : stages) QVERIFY(st.toObject()["predicted_busy_us"].toDouble() > 0);
  // Text: the replica column.
  auto txt = test::runCli({"execute", model, "-p", platform, "--plan", twin, "--stream", "4"}, 300000);
  QVERIFY2(txt.code == 0, txt.err.constData());
  QVERIFY2(txt.out.contains("Replicas     2"), txt.out.constData());
  QVERIFY2(txt.out.contains("replica"), txt.out.constData());
  // Next-free dispatch on the two real cores: every inference on one replica, counted per replica.
  auto nf = test::runCli({"execute", model, "-p", platform, "--plan", twin, "--stream", "8", "--dispatch", "next-free",
                          "--json"},
                         300000);
  QVERIFY2(nf.code == 0, nf.err.constData());
  const QJsonObject n = QJsonDocument::fromJson(nf.out).object();
  QVERIFY(n["outputs_match"].toBool());
  QCOMPARE(n["dispatch"].toString(), QString("next-free"));
  QCOMPARE(o["dispatch"].toString(), QString("round-robin"));
  // A line per replica that ran steady inferences: both, unless another program held one core for the
  // whole (short) stream; each on its own replica's core.
  const QJsonArray nst = n["stages"].toArray();
  QVERIFY2(nst.size() >= 1 && nst.size() <= 2, qPrintable(QString::number(nst.size())));
  for (const auto& st : nst) {
    const int k = st.toObject()["replica"].toInt();
    QVERIFY(k == 0 || k == 1);
    QCOMPARE(st.toObject()["device"].toString(), QString(k == 0 ? "core0" : "core1"));
  }
  QVERIFY(n["predicted_period_us"].toDouble() > 0);
  // Bad input: one line, exit 2.
  auto odd = test::runCli({"execute", model, "-p", platform, "--plan", twin, "--stream", "4", "--in-flight", "3"}, 60000);
  QCOMPARE(odd.code, 2);
  QVERIFY2(QString::fromUtf8(odd.err).contains("--in-flight 3 must be a multiple of the 2 replicas"), odd.err.constData());
  QVERIFY(!QString::fromUtf8(odd.err).trimmed().contains('\n'));
  const QString gpu = withReplicas({QJsonObject{{"core0", "gpu"}}}, "gpu.plan.json");
  auto bad = test::runCli({"execute", model, "-p", platform, "--plan", gpu, "--stream", "4"}, 60000);
  QCOMPARE(bad.code, 2);
  QVERIFY2(QString::fromUtf8(bad.err).contains("replicas[0]: unknown device 'gpu'"), bad.err.constData());
  QVERIFY(!QString::fromUtf8(bad.err).trimmed().contains('\n'));
  // compare under the throughput objective lists each plan's replicas; best's period is never above the
  // pipeline's.
  auto cmp = test::runCli({"compare", model, "-p", platform, "--algos", "pipeline,best", "--objective", "throughput",
                           "--time-limit", "2", "--json"},
                          300000);
  QVERIFY2(cmp.code == 0, cmp.err.constData());
  const QJsonArray rows = QJsonDocument::fromJson(cmp.out).array();
  QCOMPARE(rows.size(), 2);
  const QJsonObject pipe = rows[0].toObject(), best = rows[1].toObject();
  QCOMPARE(pipe["replicas"].toInt(), 1);
  QVERIFY(best["replicas"].toInt() >= 1);
  QVERIFY2(best["period_us"].toDouble() <= pipe["period_us"].toDouble() + 1e-6,
           qPrintable(QString("best %1 us, pipeline %2 us").arg(best["period_us"].toDouble()).arg(pipe["period_us"].toDouble())));
}

QTEST_GUILESS_MAIN(TestExecuteStream)
#include "tst_execute_stream.moc"
