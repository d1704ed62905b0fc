// The executor on a fake backend: a two-device plan's outputs equal the single-device run's, every
// operator gets a time, exclusive devices never overlap, wrong kernels are caught by the output check,
// and bad plans or devices give errors. With the real CPU backend (when built): a generated model on
// core0 + core1 through `partex-cli execute --json`.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fake_backend.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "profile/profile.h"
#include "sim/plan.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

/// Places every operator by name ("stem" -> "dev0", ...), ordered by upward rank.
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

/// This process's resident set now, in bytes (/proc/self/statm); -1 where it cannot be read.
int64_t residentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long pages = 0, resident = -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : static_cast<int64_t>(resident) * 4096;
}

QByteArray loadFileForTest(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestExecute : public QObject {
  Q_OBJECT
 private slots:
  void twoDevicePlanMatchesSingleDevice_data();
  void twoDevicePlanMatchesSingleDevice();
  void threadsAndBuffersAreKeptAcrossRuns();
  void wrongKernelsAreCaught();
  void exclusiveDevicesNeverOverlap();
  void errorsAreValues();
  void devicesOfOneCoreShareOneLane();
  void overlapOnOneCoreIsReported();
  void teamHelpersStepAsideAndSwitchesAreCounted();
  void disturbedRunsAreDiscardedAndReported();
  void cancelStops();
  void givenInputsAndHandedOverWeights();
  void freedWeightGivesItsPagesBack();
  void arenaSharesPlacesOfDeadValues();
  void tensorsCloseTolerance_data();
  void tensorsCloseTolerance();
  void tensorsCloseTypedPathAgrees();
  void tensorsCloseIsOnePassOverTheData();
  void cliExecuteOnGeneratedModel();
  void cliProfileReuseAndSchedule();
  void cliReportsFusedKernels();
};

void TestExecute::twoDevicePlanMatchesSingleDevice_data() {
  QTest::addColumn<QString>("left");
  QTest::addColumn<QString>("right");
  QTest::addColumn<int>("reps");
  QTest::newRow("branches split") << "dev0"
                                  << "dev1" << 3;
  QTest::newRow("all on dev1") << "dev1"
                               << "dev1" << 1;
  QTest::newRow("crossed") << "dev1"
                           << "dev0" << 2;
}

void TestExecute::twoDevicePlanMatchesSingleDevice() {
  QFETCH(QString, left);
  QFETCH(QString, right);
  QFETCH(int, reps);
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  QCOMPARE(t.numTasks(), 6);
  const Plan plan = planOf(t, {{"left1", left.toStdString()},
                               {"left2", left.toStdString()},
                               {"right1", right.toStdString()},
                               {"right2", right.toStdString()}});
  test::FakeBackend b;
  ExecOptions o;
  o.reps = reps;
  int progressCalls = 0, lastDone = 0, lastTotal = 0;
  o.progress = [&](int done, int total, const std::string&) {
    ++progressCalls;
    QVERIFY(done > lastDone);
    lastDone = done;
    lastTotal = total;
  };
  auto r = executePlan(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY(r->outputsChecked);
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->maxAbsDiff, 0.0);  // Same kernels: bitwise equal.
  QCOMPARE(static_cast<int>(r->makespansUs.size()), reps);
  QCOMPARE(r->opUs.size(), size_t{6});
  for (TaskId v = 0; v < 6; ++v) {
    QVERIFY2(r->opUs[static_cast<size_t>(v)] > 0, t.taskNames[static_cast<size_t>(v)].c_str());
    // Every operator ends within the makespan and starts after all its predecessors ended (medians of
    // the same runs can mix runs, so check the dependency order on the ranks only).
    QVERIFY(r->opStartUs[static_cast<size_t>(v)] + r->opUs[static_cast<size_t>(v)] <= r->makespansUs.back() * 10);
  }
  QVERIFY(r->opStartUs[5] >= r->opStartUs[0]);  // join after stem
  QVERIFY(r->makespanUs > 0);
  // The CPUs' speed during the runs, per device of the table: probed on every device the plan uses
  // (dev0 runs the stem and the join in every case), none for the idle dev-bad.
  QCOMPARE(r->deviceProbeUs.size(), size_t{3});
  QVERIFY(r->deviceProbeUs[0] > 0);
  QCOMPARE(r->deviceProbeUs[1] > 0, left == "dev1" || right == "dev1");
  QCOMPARE(r->deviceProbeUs[2], 0.0);
  QCOMPARE(lastDone, lastTotal);
  QVERIFY(progressCalls >= reps + 2);
}

void TestExecute::threadsAndBuffersAreKeptAcrossRuns() {
  // Like a runtime: one thread per device for all runs, and each operator's output buffers allocated in
  // the first run only. A thread or a buffer per run would time thread start-up and page faults.
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"left1", "dev1"}, {"left2", "dev1"}});
  test::FakeBackend b(20);
  ExecOptions o;
  o.reps = 4;
  o.warmup = 1;
  o.checkOutputs = false;
  {
    std::lock_guard lk(test::gFakeThreadsMu);
    test::gFakeThreads.clear();
  }
  test::gFakeRecordThreads = true;
  const int allocBefore = test::gFakeOutputAllocations.load();
  auto r = executePlan(g, b, t, plan, o);
  test::gFakeRecordThreads = false;
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(static_cast<int>(r->makespansUs.size()), 4);
  // The intermediate values come with their places in the activation arena; only the model output
  // (storage of its own) is allocated, once.
  QCOMPARE(test::gFakeOutputAllocations.load() - allocBefore, 1);
  std::lock_guard lk(test::gFakeThreadsMu);
  QCOMPARE(test::gFakeThreads.size(), size_t{2});  // dev0 and dev1, five runs each.
  QVERIFY(!test::gFakeThreads.count(std::this_thread::get_id()));
  QVERIFY(r->cpuShare > 0 && r->cpuShare <= 1.0);
}

void TestExecute::wrongKernelsAreCaught() {
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"right2", "dev-bad"}});
  test::FakeBackend b;
  ExecOptions o;
  o.reps = 1;
  auto r = executePlan(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY(!r->outputsMatch);
  QVERIFY2(QString::fromStdString(r->mismatch).startsWith("output 'join_out': element "), r->mismatch.c_str());
  QVERIFY(r->maxAbsDiff > 0.005);
}

void TestExecute::exclusiveDevicesNeverOverlap() {
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g, /*exclusive01=*/true);
  const Plan plan = planOf(t, {{"left1", "dev0"}, {"left2", "dev0"}, {"right1", "dev1"}, {"right2", "dev1"}});
  test::FakeBackend b(2000);
  ExecOptions o;
  o.reps = 1;
  o.warmup = 0;
  o.checkOutputs = false;
  auto r = executePlan(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  // With one timed run the per-operator values are that run's: intervals on dev0 and dev1 are disjoint.
  for (TaskId a = 0; a < 6; ++a)
    for (TaskId c = 0; c < 6; ++c) {
      if (plan.device[static_cast<size_t>(a)] == plan.device[static_cast<size_t>(c)]) continue;
      const double s1 = r->opStartUs[static_cast<size_t>(a)], e1 = s1 + r->opUs[static_cast<size_t>(a)];
      const double s2 = r->opStartUs[static_cast<size_t>(c)], e2 = s2 + r->opUs[static_cast<size_t>(c)];
      QVERIFY2(e1 <= s2 + 1e-6 || e2 <= s1 + 1e-6, qPrintable(QString("%1 and %2 overlap")
                                                                  .arg(t.taskNames[static_cast<size_t>(a)].c_str(),
                                                                       t.taskNames[static_cast<size_t>(c)].c_str())));
    }
}

namespace {

/// A fake backend whose dev0 and dev1 are modes of CPU 0 (like cpu-serial and core0) and whose
/// dev-bad is pinned to CPU 1; `team` makes dev0 a two-thread team over CPUs 0 and 1 (like
/// cpu-parallel).
test::FakeBackend pinnedBackend(bool team) {
  test::FakeBackend b(100);
  b.devs = {{"dev0", "mode A of cpu 0", team ? 2 : 1, 0, team ? std::vector<int>{0, 1} : std::vector<int>{}},
            {"dev1", "mode B of cpu 0", 1, 0, {}},
            {"dev-bad", "cpu 1", 1, 1, {}}};
  return b;
}

}  // namespace

void TestExecute::devicesOfOneCoreShareOneLane() {
  // dev0 and dev1 are modes of one CPU: one thread (lane) runs both, so they never compete for it.
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g, /*exclusive01=*/true);
  const Plan plan = planOf(t, {{"left1", "dev1"}, {"left2", "dev1"}});
  test::FakeBackend b = pinnedBackend(false);
  {
    std::lock_guard lk(test::gFakeThreadsMu);
    test::gFakeThreads.clear();
  }
  ExecOptions o;
  o.reps = 2;
  o.checkOutputs = false;
  o.minCpuShare = 0;  // Not a timing test: a busy machine must not add its note.
  test::gFakeRecordThreads = true;
  auto r = executePlan(g, b, t, plan, o);
  test::gFakeRecordThreads = false;
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY2(r->notes.empty(), r->notes.empty() ? "" : r->notes.front().c_str());
  QCOMPARE(r->modeSwitchesPerRun, 0);  // No team device in the plan.
  std::lock_guard lk(test::gFakeThreadsMu);
  QCOMPARE(test::gFakeThreads.size(), size_t{1});
}

void TestExecute::overlapOnOneCoreIsReported() {
  // Without the exclusive group the simulator runs left1 (dev1) beside right1 (dev0); on one CPU the
  // executor cannot: it says so instead of leaving a wrong prediction unexplained.
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g, /*exclusive01=*/false);
  const Plan plan = planOf(t, {{"left1", "dev1"}, {"left2", "dev1"}});
  test::FakeBackend b = pinnedBackend(false);
  ExecOptions o;
  o.reps = 1;
  o.minCpuShare = 0;  // Not a timing test: a busy machine must not add its note.
  auto r = executePlan(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY(r->outputsMatch);
  QCOMPARE(r->notes.size(), size_t{1});
  QVERIFY2(QString::fromStdString(r->notes[0]).contains("at the same time as another device on the same CPU"),
           r->notes[0].c_str());
}

void TestExecute::teamHelpersStepAsideAndSwitchesAreCounted() {
  // dev0 is a team over CPUs 0 and 1; dev-bad runs on CPU 1. The right branch on dev-bad makes CPU 1's
  // lane alternate between stepping aside for dev0 and its own operators.
  const Graph g = test::diamondGraph();
  Platform p = test::fakePlatform(false);
  p.exclusiveGroups.push_back({"team-uses-cpu1", {"dev0", "dev-bad"}});
  auto t = buildCostTable(g, characteriseAll(g), p);
  QVERIFY2(t.isOk(), t.message().c_str());
  const Plan plan = planOf(*t, {{"right1", "dev-bad"}, {"right2", "dev-bad"}});
  test::FakeBackend b = pinnedBackend(true);
  for (int spinUs : {ExecOptions{}.spinUs, 0}) {
    ExecOptions o;
    o.reps = 3;
    o.spinUs = spinUs;
    o.referenceDevice = "dev1";
    auto r = executePlan(g, b, *t, plan, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    QVERIFY2(r->outputsMatch, r->mismatch.c_str());
    // CPU 1's lane: stem (team), right1, right2 (own), left1, left2, join (team) in some order by
    // predicted start: at least team -> own -> team.
    QVERIFY2(r->modeSwitchesPerRun >= 2, qPrintable(QString::number(r->modeSwitchesPerRun)));
    if (spinUs == 0)
      QVERIFY(r->sleepsPerRun > 0);  // Every wait sleeps at once, and is counted.
    else
      QCOMPARE(r->sleepsPerRun, 0.0);
  }
}

void TestExecute::disturbedRunsAreDiscardedAndReported() {
  // Kernels that lose their CPU (here: sleep) make every run disturbed: each is discarded and run again
  // up to maxDiscarded times, then kept, and the result says so.
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  test::FakeBackend b(-300);
  ExecOptions o;
  o.reps = 2;
  o.maxDiscarded = 3;
  o.checkOutputs = false;
  auto r = executePlan(g, b, t, planOf(t, {{"left1", "dev1"}}), o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->discardedRuns, 3);
  QVERIFY(r->disturbed);
  QCOMPARE(static_cast<int>(r->makespansUs.size()), 2);
  QVERIFY(r->cpuShare < 0.9);
  QVERIFY(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.find("3 disturbed runs discarded") != std::string::npos;
  }));
  // Busy kernels on an otherwise idle lane: no run is discarded unless the machine is busy, and when
  // none is, nothing is flagged.
  test::FakeBackend busy(300);
  auto r2 = executePlan(g, busy, t, planOf(t, {{"left1", "dev1"}}), o);
  QVERIFY2(r2.isOk(), r2.message().c_str());
  QCOMPARE(r2->disturbed, r2->discardedRuns == 3 && r2->cpuShare < 0.9);
}

void TestExecute::errorsAreValues() {
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  test::FakeBackend b;
  // A plan missing an operator.
  Plan bad = planOf(t, {});
  bad.order[0].pop_back();
  auto r = executePlan(g, b, t, bad, ExecOptions{});
  QVERIFY(!r.isOk());
  // A device the backend lacks.
  Graph g2 = test::diamondGraph();
  Platform p = test::fakePlatform();
  p.devices[1].id = "npu";
  p.links[0].to = "npu";
  auto t2 = buildCostTable(g2, characteriseAll(g2), p);
  QVERIFY2(t2.isOk(), t2.message().c_str());
  const Plan onNpu = planOf(*t2, {{"left1", "npu"}});
  auto r2 = executePlan(g2, b, *t2, onNpu, ExecOptions{});
  QVERIFY(!r2.isOk());
  QVERIFY2(QString::fromStdString(r2.message()).contains("device 'npu' is not a device of backend 'fake'"),
           r2.message().c_str());
  // An operator the backend cannot run.
  Graph g3 = test::diamondGraph();
  g3.nodes[2].opType = "Softmax";
  const CostTable t3 = test::fakeTable(g3);
  auto r3 = executePlan(g3, b, t3, planOf(t3, {}), ExecOptions{});
  QVERIFY(!r3.isOk());
  QVERIFY2(QString::fromStdString(r3.message()).contains("operator 'left2' (Softmax)"), r3.message().c_str());
}

void TestExecute::cancelStops() {
  const Graph g = test::diamondGraph();
  const CostTable t = test::fakeTable(g);
  test::FakeBackend b;
  std::atomic<bool> cancel{true};
  ExecOptions o;
  o.cancel = &cancel;
  auto r = executePlan(g, b, t, planOf(t, {{"left1", "dev1"}}), o);
  QVERIFY(!r.isOk());
  QCOMPARE(r.message(), std::string("cancelled"));
}

/// Model inputs given by the caller and the graph's own weight data reach the kernels; a caller that
/// hands its weights over (handOverWeights) gets the same outputs, and its graph keeps none.
void TestExecute::givenInputsAndHandedOverWeights() {
  Graph g = test::diamondGraph(8);
  Value w;
  w.name = "w";
  w.dtype = DType::Float32;
  w.shape = {1, 8};
  w.shapeKnown = true;
  w.isWeight = true;
  const float two = 2.0f;
  w.data = TensorData::splat(&two, 4, 8);
  const ValueId wid = g.addValue(w);
  Node& stem = g.nodes[static_cast<size_t>(g.findNode("stem"))];
  stem.opType = "Add";
  stem.inputs.push_back(wid);
  const ValueId stemOut = stem.outputs[0];
  g.values[static_cast<size_t>(stemOut)].isGraphOutput = true;
  g.outputs.push_back(stemOut);
  g.rebuildIndex();
  const CostTable t = test::fakeTable(g);
  const Plan plan = planOf(t, {{"left1", "dev1"}});
  test::FakeBackend b;
  ExecOptions o;
  o.reps = 1;
  o.keepOutputs = true;
  auto x = Tensor::make(DType::Float32, {1, 8});
  QVERIFY(x.isOk());
  x->fill(1.0);
  o.inputs[g.inputs[0]] = *x;
  auto r = executePlan(g, b, t, plan, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->outputs.size(), size_t{2});
  for (int64_t i = 0; i < 8; ++i) QCOMPARE(r->outputs[1].valueAsDouble(i), 3.0);  // x + w
  QVERIFY(g.values[static_cast<size_t>(wid)].data);

  QVERIFY(handOverWeights(g, o).isOk());
  // Under 64 KiB a weight stays in the graph (the fusion rules read small constants such as HardSwish's
  // 3 and 6); larger ones move into the run.
  QVERIFY(g.values[static_cast<size_t>(wid)].data);
  QVERIFY(!o.inputs.count(wid));
  auto r2 = executePlan(g, b, t, plan, o);
  QVERIFY2(r2.isOk(), r2.message().c_str());
  for (int64_t i = 0; i < 8; ++i) QCOMPARE(r2->outputs[1].valueAsDouble(i), 3.0);

  // Given tensors must fit: the value's dtype and shape, and a leaf of the graph.
  ExecOptions bad;
  bad.inputs[g.inputs[0]] = *Tensor::make(DType::Float32, {1, 9});
  auto r3 = executePlan(g, b, t, plan, bad);
  QVERIFY(!r3.isOk());
  QCOMPARE(r3.message(), std::string("input 'x': expected float32[1,8], got float32[1,9]"));
  ExecOptions notLeaf;
  notLeaf.inputs[stemOut] = *Tensor::make(DType::Float32, {1, 8});
  auto r4 = executePlan(g, b, t, plan, notLeaf);
  QVERIFY(!r4.isOk());
  QCOMPARE(r4.message(), std::string("executor: a given tensor is neither a model input nor a weight"));
}

/// A weight freed during a run (handOverWeights, then the kernels keep their own copy) leaves the
/// resident set at once, whatever malloc did before: glibc raises its mmap threshold to the size of each
/// mapped block freed, after which a weight taken from the heap and freed under later allocations stayed
/// resident, and a transformer's run held its weights twice.
void TestExecute::freedWeightGivesItsPagesBack() {
  if (residentBytes() < 0) QSKIP("no /proc/self/statm");
  // Raise glibc's threshold as an import does when it frees the protobuf's copy of a big initializer
  // (through volatile pointers: the compiler may drop a malloc/free pair it sees).
  void* (*volatile mallocFn)(size_t) = std::malloc;
  void (*volatile freeFn)(void*) = std::free;
  for (size_t mib : {16, 24}) {
    void* p = mallocFn(mib << 20);
    QVERIFY(p);
    std::memset(p, 1, mib << 20);
    freeFn(p);
  }
  constexpr size_t kBytes = size_t{12} << 20;
  auto d = TensorData::allocate(kBytes);
  QVERIFY(d);
  std::memset(d->mutableData(), 1, kBytes);
  // Later allocations above it (the run's activations, other weights) that stay.
  std::vector<void*> later;
  for (int i = 0; i < 64; ++i) {
    later.push_back(mallocFn(4096));
    QVERIFY(later.back());
    std::memset(later.back(), 1, 4096);
  }
  const int64_t before = residentBytes();
  d.reset();
  const int64_t after = residentBytes();
  for (void* p : later) freeFn(p);
  QVERIFY2(before - after >= static_cast<int64_t>(kBytes) - (int64_t{1} << 20),
           qPrintable(QString("resident %1 MiB before freeing a 12 MiB weight, %2 MiB after")
                          .arg(double(before) / 1048576.0)
                          .arg(double(after) / 1048576.0)));
}

/// The plan run's intermediate tensors live in one arena at offsets (planMemory): a value that died
/// lends its place to two smaller ones alive together. x [1024] -> A = Relu(x) [1024] -> t = Neg(A)
/// [1024]; B = Add(y, t) and C = Add(z, t) [512 each] -> D = Add(B, C), the output. By hand: A and t
/// are alive together (4096 + 4096 bytes), then t, B and C (4096 + 2048 + 2048): the peak is 8192
/// bytes, and B and C fit in A's place. Storage passed along per slot needed 10240 (A's slot for B,
/// a third slot for C).
void TestExecute::arenaSharesPlacesOfDeadValues() {
  Graph g;
  g.name = "arena";
  auto value = [&](const std::string& name, int64_t n, bool input) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.shape = {n};
    v.shapeKnown = true;
    v.isGraphInput = input;
    const ValueId id = g.addValue(v);
    if (input) g.inputs.push_back(id);
    return id;
  };
  auto node = [&](const std::string& name, const std::string& type, std::vector<ValueId> ins, int64_t n) {
    Node nd;
    nd.name = name;
    nd.opType = type;
    nd.inputs = std::move(ins);
    const ValueId out = value(name + "_out", n, false);
    nd.outputs = {out};
    g.addNode(nd);
    return out;
  };
  const ValueId x = value("x", 1024, true), y = value("y", 512, true), z = value("z", 512, true);
  const ValueId a = node("A", "Relu", {x}, 1024);
  const ValueId t = node("t", "Neg", {a}, 1024);
  const ValueId b = node("B", "Add", {y, t}, 512);
  const ValueId c = node("C", "Add", {z, t}, 512);
  const ValueId d = node("D", "Add", {b, c}, 512);
  g.values[static_cast<size_t>(d)].isGraphOutput = true;
  g.outputs = {d};
  g.rebuildIndex();
  const CostTable table = test::fakeTable(g);
  test::FakeBackend backend(0);
  ExecOptions o;
  o.reps = 2;
  o.keepOutputs = true;
  for (auto [v, value] : {std::pair{x, 1.0}, {y, 2.0}, {z, 3.0}}) {
    auto in = Tensor::make(DType::Float32, g.values[static_cast<size_t>(v)].shape);
    QVERIFY(in.isOk());
    in->fill(value);
    o.inputs[v] = std::move(*in);
  }
  auto r = executePlan(g, backend, table, planOf(table, {}), o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->plannedActivationBytes, int64_t{8192});
  // The values are right although B and C sit where A was: D = (2 - 1) + (3 - 1) = 3.
  QCOMPARE(r->outputs.size(), size_t{1});
  QCOMPARE(r->outputs[0].numElements(), int64_t{512});
  for (int64_t i = 0; i < 512; ++i) QCOMPARE(r->outputs[0].valueAsDouble(i), 3.0);
}

void TestExecute::tensorsCloseTolerance_data() {
  QTest::addColumn<float>("a");
  QTest::addColumn<float>("b");
  QTest::addColumn<bool>("close");
  QTest::newRow("equal") << 1.0f << 1.0f << true;
  QTest::newRow("within 1e-5") << 1000.0f << 1000.004f << true;
  QTest::newRow("beyond 1e-5") << 1000.0f << 1000.1f << false;
  QTest::newRow("sign") << 1.0f << -1.0f << false;
}

void TestExecute::tensorsCloseTolerance() {
  QFETCH(float, a);
  QFETCH(float, b);
  QFETCH(bool, close);
  auto x = Tensor::make(DType::Float32, {2});
  auto y = Tensor::make(DType::Float32, {2});
  QVERIFY(x.isOk() && y.isOk());
  x->data<float>()[0] = a;
  y->data<float>()[0] = b;
  x->data<float>()[1] = y->data<float>()[1] = 0.5f;
  double maxAbs = 0, maxRel = 0;
  std::string why;
  QCOMPARE(tensorsClose(*x, *y, 1e-5, maxAbs, maxRel, &why), close);
  QCOMPARE(why.empty(), close);
  auto z = Tensor::make(DType::Float32, {3});
  QVERIFY(!tensorsClose(*x, *z, 1e-5, maxAbs, maxRel, &why));
  QVERIFY2(QString::fromStdString(why).contains("float32[3]"), why.c_str());
}

void TestExecute::tensorsCloseTypedPathAgrees() {
  // float32 tensors take a typed loop (a stream checks every inference's outputs with it); the same
  // values as float64 take the element-generic one. Both must give the same verdict, largest
  // differences and first mismatch, through NaNs, infinities, signed zeros and a value out of tolerance.
  const std::vector<float> ref = {1.0f, NAN, NAN, INFINITY, 0.0f, -2.0f, 1000.0f, 3.0f, 0.5f, 1e-6f, INFINITY};
  const std::vector<float> got = {1.00001f, NAN, 1.0f, INFINITY, -0.0f, -2.00001f, 1000.004f, 3.5f, 0.5f, 2e-6f, 5.0f};
  const int64_t n = static_cast<int64_t>(ref.size());
  auto a32 = Tensor::make(DType::Float32, {n}), b32 = Tensor::make(DType::Float32, {n});
  auto a64 = Tensor::make(DType::Float64, {n}), b64 = Tensor::make(DType::Float64, {n});
  QVERIFY(a32.isOk() && b32.isOk() && a64.isOk() && b64.isOk());
  for (int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<size_t>(k);
    a32->data<float>()[i] = ref[i];
    b32->data<float>()[i] = got[i];
    a64->data<double>()[i] = ref[i];
    b64->data<double>()[i] = got[i];
  }
  // From each element on: the tail alone, so that each case decides the verdict in turn.
  for (int64_t from = 0; from < n; ++from) {
    const int64_t len = n - from;
    auto x32 = Tensor::make(DType::Float32, {len}), y32 = Tensor::make(DType::Float32, {len});
    auto x64 = Tensor::make(DType::Float64, {len}), y64 = Tensor::make(DType::Float64, {len});
    QVERIFY(x32.isOk() && y32.isOk() && x64.isOk() && y64.isOk());
    std::memcpy(x32->raw(), a32->data<float>() + from, static_cast<size_t>(len) * 4);
    std::memcpy(y32->raw(), b32->data<float>() + from, static_cast<size_t>(len) * 4);
    std::memcpy(x64->raw(), a64->data<double>() + from, static_cast<size_t>(len) * 8);
    std::memcpy(y64->raw(), b64->data<double>() + from, static_cast<size_t>(len) * 8);
    QCOMPARE(tensorScale(*x32), tensorScale(*x64));
    double abs32 = 0, rel32 = 0, abs64 = 0, rel64 = 0;
    std::string why32, why64;
    const bool c32 = tensorsClose(*x32, *y32, 1e-5, abs32, rel32, &why32);
    const bool c64 = tensorsClose(*x64, *y64, 1e-5, abs64, rel64, &why64);
    QCOMPARE(c32, c64);
    QCOMPARE(abs32, abs64);
    QCOMPARE(rel32, rel64);
    QCOMPARE(why32, why64);
    // The scale given beforehand is the one computed inside.
    double absS = 0, relS = 0;
    std::string whyS;
    QCOMPARE(tensorsClose(*x32, tensorScale(*x32), *y32, 1e-5, absS, relS, &whyS), c32);
    QCOMPARE(whyS, why32);
  }
  // The same cases among 3000 values that differ within tolerance (the typed path takes blocks of
  // values; these fall in the second and the sixth), in both dtypes.
  for (int64_t at : {int64_t{700}, int64_t{2990}}) {
    const int64_t len = 3000;
    auto x32 = Tensor::make(DType::Float32, {len}), y32 = Tensor::make(DType::Float32, {len});
    auto x64 = Tensor::make(DType::Float64, {len}), y64 = Tensor::make(DType::Float64, {len});
    QVERIFY(x32.isOk() && y32.isOk() && x64.isOk() && y64.isOk());
    for (int64_t k = 0; k < len; ++k) {
      const auto i = static_cast<size_t>(k);
      float u = 0.1f + static_cast<float>(k % 97) * 0.01f, w = k % 3 ? u * (1.0f + 3e-6f) : u;
      if (k >= at && k - at < n) {
        u = ref[static_cast<size_t>(k - at)];
        w = got[static_cast<size_t>(k - at)];
      }
      x32->data<float>()[i] = u;
      y32->data<float>()[i] = w;
      x64->data<double>()[i] = u;
      y64->data<double>()[i] = w;
    }
    double abs32 = 0, rel32 = 0, abs64 = 0, rel64 = 0;
    std::string why32, why64;
    QCOMPARE(tensorsClose(*x32, *y32, 1e-5, abs32, rel32, &why32), tensorsClose(*x64, *y64, 1e-5, abs64, rel64, &why64));
    QCOMPARE(abs32, abs64);
    QCOMPARE(rel32, rel64);
    QCOMPARE(why32, why64);
    QCOMPARE(why32, "element " + std::to_string(at + 2) + ": expected nan, got 1");
  }
  // The whole vector: NaN against 1 (element 2) is its first mismatch; 3.5 against 3 comes later.
  double maxAbs = 0, maxRel = 0;
  std::string why;
  QVERIFY(!tensorsClose(*a32, *b32, 1e-5, maxAbs, maxRel, &why));
  QCOMPARE(why, std::string("element 2: expected nan, got 1"));
  QCOMPARE(tensorScale(*a32), 1000.0);  // infinities and NaNs are not the scale
}

void TestExecute::tensorsCloseIsOnePassOverTheData() {
  // A stream checks every inference's outputs on the lane that ended it, inside the measured period
  // (PP-OCRv4 det: 409600 values a period; the element-generic comparison, a scale pass and a copy
  // took 4.7 ms of a 41.9 ms period). The check of 2^20 values, within tolerance and not all equal (no
  // memcmp shortcut), must cost about one pass that reads both tensors: here a pass summing their
  // differences in double (a dependent chain of additions the compiler cannot reorder). Fastest of 7
  // each, interleaved, so that another program's time slices do not decide it.
  const int64_t n = int64_t{1} << 20;
  auto a = Tensor::make(DType::Float32, {n}), b = Tensor::make(DType::Float32, {n});
  QVERIFY(a.isOk() && b.isOk());
  float* x = a->data<float>();
  float* y = b->data<float>();
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.25f + static_cast<float>(i % 1000) * 1e-3f;
    // A third of the values equal (in no pattern a branch predictor learns), the others within tolerance.
    y[i] = (i * 2654435761u) % 3 == 0 ? x[i] : x[i] * (1.0f + 2e-7f);
    if (i == 0 && y[i] == x[i]) y[i] = std::nextafter(x[i], 2.0f);  // not equal bytes: no memcmp shortcut
  }
  const double scale = tensorScale(*a);
  using Clock = std::chrono::steady_clock;
  double check = 1e30, pass = 1e30, sink = 0;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = Clock::now();
    double maxAbs = 0, maxRel = 0;
    QVERIFY(tensorsClose(*a, scale, *b, 1e-4, maxAbs, maxRel, nullptr));
    const auto t1 = Clock::now();
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(y[i]) - static_cast<double>(x[i]);
    const auto t2 = Clock::now();
    sink += s + maxAbs;
    check = std::min(check, std::chrono::duration<double, std::micro>(t1 - t0).count());
    pass = std::min(pass, std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  QVERIFY(sink > 0);
  qInfo("check %.0f us, one summing pass %.0f us (%.2fx)", check, pass, check / pass);
  QVERIFY2(check < 3.0 * pass, qPrintable(QString("check %1 us, one pass %2 us").arg(check).arg(pass)));
}

void TestExecute::cliExecuteOnGeneratedModel() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  const QString model = dir + "/rand.onnx";
  QProcess gen;
  gen.start(test::cliPath(), {"generate", "random", "--nodes", "24", "--seed", "3", "-o", model});
  QVERIFY(gen.waitForFinished(120000));
  QCOMPARE(gen.exitCode(), 0);
  // A two-core plan from HEFT on a platform of core0 + core1 only (this machine's figures).
  const QString platform = dir + "/two-cores.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  const QString plan = dir + "/rand.plan.json";
  QProcess sched;
  sched.start(test::cliPath(), {"schedule", model, "-p", platform, "--algo", "heft", "-o", plan});
  QVERIFY(sched.waitForFinished(120000));
  QVERIFY2(sched.exitCode() == 0, sched.readAllStandardError().constData());
  QProcess ex;
  ex.start(test::cliPath(), {"execute", model, "-p", platform, "--plan", plan, "--reps", "2", "--json"});
  QVERIFY(ex.waitForFinished(300000));
  const QByteArray err = ex.readAllStandardError();
  QVERIFY2(ex.exitCode() == 0, err.constData());
  QJsonParseError perr;
  const QJsonObject o = QJsonDocument::fromJson(ex.readAllStandardOutput(), &perr).object();
  QVERIFY2(perr.error == QJsonParseError::NoError, qPrintable(perr.errorString()));
  for (const char* key : {"measured_makespan_us", "predicted_makespan_us", "outputs_match", "ops", "error"})
    QVERIFY2(o.contains(key), key);
  QVERIFY(o["outputs_match"].toBool());
  QVERIFY(o["measured_makespan_us"].toDouble() > 0);
  QVERIFY(o["predicted_makespan_us"].toDouble() > 0);
  const QJsonArray ops = o["ops"].toArray();
  QVERIFY(ops.size() > 0);
  // Each operator's inputs and outputs by tensor name: which operator's tensor another reads (flow.sh
  // lists the CPU readers of GPU tensors from them).
  QSet<QString> written;
  for (const auto& op : ops)
    for (const auto& v : op.toObject()["outputs"].toArray()) written.insert(v.toString());
  int readsAnOperator = 0;
  for (const auto& op : ops) {
    const QJsonObject j = op.toObject();
    for (const char* key : {"name", "device", "measured_us", "predicted_us", "inputs", "outputs"}) QVERIFY2(j.contains(key), key);
    for (const auto& v : j["inputs"].toArray()) readsAnOperator += written.contains(v.toString()) ? 1 : 0;
  }
  QVERIFY(readsAnOperator > 0);
}

void TestExecute::cliProfileReuseAndSchedule() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  const QString model = dir + "/rand_p.onnx";
  auto run = [](const QStringList& args, QByteArray* out = nullptr, QByteArray* err = nullptr) {
    QProcess p;
    p.start(test::cliPath(), args);
    if (!p.waitForFinished(300000)) return -1;
    if (out) *out = p.readAllStandardOutput();
    if (err) *err = p.readAllStandardError();
    return p.exitCode();
  };
  QCOMPARE(run({"generate", "random", "--nodes", "12", "--seed", "5", "-o", model}), 0);
  const QString profile = dir + "/rand_p.profile.json";
  QByteArray out, err;
  const int rc =
      run({"profile", model, "--devices", "core0,core1", "--reps", "2", "-q", "--json", "-o", profile}, &out, &err);
  QVERIFY2(rc == 0, err.constData());
  auto p = loadProfileFile(profile.toStdString());
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->devices.size(), size_t{2});
  QCOMPARE(p->devices[0].ops.size(), size_t{12});
  QVERIFY(!p->modelSha256.empty());
  // Asked again: the file matches, nothing is measured.
  QCOMPARE(run({"profile", model, "--devices", "core0,core1", "--reps", "2", "-o", profile}, &out, &err), 0);
  QVERIFY2(out.startsWith("Reusing"), out.constData());
  // More repetitions than the file has: measured again.
  QCOMPARE(run({"profile", model, "--devices", "core0", "--reps", "3", "-o", profile}, &out, &err), 0);
  QVERIFY2(err.contains("is stale (it has 2 timed runs per measurement)"), err.constData());
  QVERIFY(!out.startsWith("Reusing"));
  auto p3 = loadProfileFile(profile.toStdString());
  QVERIFY2(p3.isOk(), p3.message().c_str());
  QCOMPARE(p3->reps, 3);
  QCOMPARE(p3->method, std::string("in-context"));  // The default method.

  // Another method: the in-context file is stale for it; the per-operator profile is written to its own file.
  const QString perOp = dir + "/rand_p.per-operator.json";
  QVERIFY(QFile::copy(profile, perOp));
  QCOMPARE(run({"profile", model, "--devices", "core0", "--reps", "3", "--method", "per-operator", "-o", perOp}, &out,
               &err),
           0);
  QVERIFY2(err.contains("is stale (it was measured by in-context)"), err.constData());
  auto pc = loadProfileFile(perOp.toStdString());
  QVERIFY2(pc.isOk(), pc.message().c_str());
  QCOMPARE(pc->method, std::string("per-operator"));
  QCOMPARE(pc->devices[0].ops.size(), size_t{12});
  const QString inContext = perOp;
  // Bad method choices: one-line errors, exit code 2, the file untouched.
  const QByteArray before = [&] {
    QFile f(inContext);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }();
  QCOMPARE(run({"profile", model, "--method", "fastest", "-o", inContext}, &out, &err), 2);
  QVERIFY2(err.contains("unknown --method 'fastest'"), err.constData());
  QCOMPARE(run({"profile", model, "--minimal", "--method", "in-context", "-o", inContext}, &out, &err), 2);
  QVERIFY2(err.contains("contradict"), err.constData());
  QFile after(inContext);
  QVERIFY(after.open(QIODevice::ReadOnly));
  QCOMPARE(after.readAll(), before);

  // Everything on core0: with the profile the makespan is the sum of core0's medians (no transfers).
  const QString platform = dir + "/two-cores-p.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  auto makespan = [&](const QStringList& extra) {
    QByteArray o;
    if (run(QStringList{"schedule", model, "-p", platform, "--algo", "single", "--param", "device=core0", "--json"} +
                extra,
            &o) != 0)
      return -1.0;
    return QJsonDocument::fromJson(o).object()["makespan_us"].toDouble();
  };
  const double modelled = makespan({});
  const double measured = makespan({"--profile", profile});
  QVERIFY(modelled > 0 && measured > 0);
  double sum = 0;
  for (const auto& op : p3->devices[0].ops) sum += op.time.medianUs;
  QVERIFY2(std::fabs(measured - sum) <= 1e-6 * sum + 0.01, qPrintable(QString("%1 vs %2").arg(measured).arg(sum)));
  QVERIFY(std::fabs(measured - modelled) > 1e-6);
}

void TestExecute::cliReportsFusedKernels() {
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  const QString dir = QString::fromStdString(test::tempDir());
  auto run = [](const QStringList& args, QByteArray* out = nullptr, QByteArray* err = nullptr) {
    QProcess p;
    p.start(test::cliPath(), args);
    if (!p.waitForFinished(300000)) return -1;
    if (out) *out = p.readAllStandardOutput();
    if (err) *err = p.readAllStandardError();
    return p.exitCode();
  };
  // A small ResNet-18 (Conv + BatchNormalization + Relu chains), profiled in context on core0: the
  // profile records the kernels the runtime fused, so the plan knows them.
  const QString model = dir + "/r18.onnx";
  QCOMPARE(run({"generate", "resnet18", "--image-size", "32", "--classes", "10", "-o", model}), 0);
  const QString platform = dir + "/two-cores-f.json";
  QVERIFY(writeFileAtomic(platform.toStdString(), platformToJson(thisMachineCores(2))).isOk());
  const QString profile = dir + "/r18.profile.json";
  QByteArray out, err;
  int rc = run({"profile", model, "--devices", "core0", "--reps", "2", "-q", "-o", profile}, &out, &err);
  QVERIFY2(rc == 0, err.constData());
  const QString plan = dir + "/r18.plan.json";
  rc = run({"schedule", model, "-p", platform, "--profile", profile, "--algo", "single", "--param", "device=core0",
            "-o", plan, "--json"},
           &out, &err);
  QVERIFY2(rc == 0, err.constData());
  const QJsonArray planned = QJsonDocument::fromJson(out).object()["fused_kernels"].toArray();
  QVERIFY(planned.size() >= 16);
  auto planFile = loadFileForTest(plan);
  QCOMPARE(QJsonDocument::fromJson(planFile).object()["fused_kernels"].toArray().size(), planned.size());
  rc = run({"schedule", model, "-p", platform, "--profile", profile, "--algo", "single", "--param", "device=core0"},
           &out, &err);
  QVERIFY2(rc == 0, err.constData());
  QVERIFY2(out.contains(QByteArray("Fused        ") + QByteArray::number(planned.size()) + " kernels run "),
           out.constData());

  rc = run({"execute", model, "-p", platform, "--profile", profile, "--plan", plan, "--reps", "2", "--json"}, &out,
           &err);
  QVERIFY2(rc == 0, err.constData());
  const QJsonObject o = QJsonDocument::fromJson(out).object();
  const QJsonArray ran = o["fused_kernels"].toArray();
  QCOMPARE(ran.size(), planned.size());  // the run fused what the plan predicted
  for (const auto& kv : ran) {
    const QJsonObject k = kv.toObject();
    QVERIFY(k["ops"].toArray().size() >= 2);
    QCOMPARE(k["device"].toString(), QString("core0"));
    QVERIFY(k["measured_us"].toDouble() > 0);
    QVERIFY(k["predicted_us"].toDouble() > 0);
    QVERIFY(k["predicted_fused"].toBool());
    QCOMPARE(k["rewrite"].toString(), QString());  // fusion chains, not graph rewrites
  }
  QCOMPARE(ran[0].toObject()["ops"].toArray(), (QJsonArray{"conv1", "bn1", "relu"}));
  // A graph rewrite's kernel says which rewrite it is (BERT: LayerNorm and Gelu written out).
  {
    const QString bert = dir + "/bert1.onnx", bertPlan = dir + "/bert1.plan.json";
    QCOMPARE(run({"generate", "bert", "--weights", "--layers", "1", "--seq", "16", "-o", bert}), 0);
    QCOMPARE(run({"schedule", bert, "-p", platform, "--algo", "single", "--param", "device=core0", "-o", bertPlan}), 0);
    QByteArray bout, berr;
    QVERIFY2(run({"execute", bert, "-p", platform, "--plan", bertPlan, "--reps", "1", "--json"}, &bout, &berr) == 0,
             berr.constData());
    QStringList rewrites;
    for (const auto& kv : QJsonDocument::fromJson(bout).object()["fused_kernels"].toArray())
      rewrites << kv.toObject()["rewrite"].toString();
    QVERIFY2(rewrites.contains("gelu") && rewrites.contains("layer-norm"), qPrintable(rewrites.join(",")));
    QVERIFY2(run({"execute", bert, "-p", platform, "--plan", bertPlan, "--reps", "1"}, &bout, &berr) == 0, berr.constData());
    QVERIFY2(bout.contains("gelu: ") && bout.contains("layer-norm: "), bout.constData());
  }
  for (const auto& opv : o["ops"].toArray()) {
    const QJsonObject op = opv.toObject();
    if (op["name"].toString() == "conv1") QCOMPARE(op["fused_into"].toString(), QString("relu"));
    if (op["name"].toString() == "fc") QVERIFY(op["fused_into"].isNull());
  }
  // The text marks each operator's kernel and lists the kernels.
  rc = run({"execute", model, "-p", platform, "--profile", profile, "--plan", plan, "--reps", "1"}, &out, &err);
  QVERIFY2(rc == 0, err.constData());
  QVERIFY2(out.contains(QByteArray("Fused kernels: ") + QByteArray::number(ran.size()) + " ran "), out.constData());
  QVERIFY2(out.contains("conv1 + bn1 + relu"), out.constData());
  const QList<QByteArray> lines = out.split('\n');
  bool bnMarked = false;
  for (const auto& line : lines)
    if (line.startsWith("bn1 ")) bnMarked = line.trimmed().endsWith(" k1");
  QVERIFY2(bnMarked, out.constData());
}

QTEST_GUILESS_MAIN(TestExecute)
#include "tst_execute.moc"
