// The executor's thread handling on the real CPU backend (issue 11): a plan that alternates between the
// OpenMP team of cpu-parallel and the pinned core1 many times executes, gives the single-device
// outputs, and reports its mode switches and sleeps; the process runs with the OpenMP wait policy that
// the predictions assume (active, spin count 100000), unless the user chose another, which is reported.
#include <QtTest>

#include <QProcess>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "cpu/cpu_backend.h"
#include "gen/generator.h"
#include "gen/testmodels.h"
#include "graphrun.h"
#include "ir/fusion.h"
#include "ir/tensordata.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "profile/ompenv.h"
#include "profile/profile.h"
#include "profile/profiler.h"
#include "sim/plan.h"
#include "testutil.h"

using namespace partex;

namespace {

Graph smallCnn() {
  GenSpec spec;
  spec.kind = "resnet18";
  spec.imageSize = 32;
  spec.numClasses = 10;
  auto g = test::generatedGraph(spec);
  if (!g) qFatal("%s", g.message().c_str());
  return std::move(g).value();
}

DeviceId deviceIndex(const CostTable& t, const std::string& id) {
  return static_cast<DeviceId>(std::find(t.deviceIds.begin(), t.deviceIds.end(), id) - t.deviceIds.begin());
}

/// Every operator of a graph of `n` operators on core0, in node order (the builder's order is topological).
Plan allOnCore0(const CostTable& t, size_t n) {
  Plan plan;
  plan.algorithm = "manual";
  const DeviceId d = deviceIndex(t, "core0");
  plan.device.assign(n, d);
  plan.order.assign(static_cast<size_t>(t.numDevices()), {});
  for (size_t op = 0; op < n; ++op) plan.order[static_cast<size_t>(d)].push_back(static_cast<TaskId>(op));
  return plan;
}

/// Runs `g` with every operator on core0 (three timed runs, outputs kept), inputs x and z given.
Result<ExecResult> runOnCore0(const Graph& g, ValueId x, const Tensor& xv, ValueId z, const Tensor& zv) {
  auto backend = makeCpuBackend();
  auto t = buildCostTable(g, characteriseAll(g), measureThisMachine());
  if (!t) return Error{t.message()};
  ExecOptions o;
  o.reps = 3;
  o.maxDiscarded = 0;
  o.keepOutputs = true;
  o.inputs[x] = xv;
  o.inputs[z] = zv;
  return executePlan(g, *backend, *t, allOnCore0(*t, g.nodes.size()), o);
}

}  // namespace

class TestExecutorModes : public QObject {
  Q_OBJECT
 private slots:
  void alternatingTeamAndCore();
  void waitPolicyIsActiveUnlessTheUserChose();
  void inContextProfileMeasuresHandovers();
  void fusionIsAFactOfTheCosts();
  void concatInputsWrittenInPlace();
  void profileUsesGivenInputs();
  void reshapesRunAsViews();
  void viewsIntoConcatSlices();
};

void TestExecutorModes::profileUsesGivenInputs() {
  // `profile --input`: the reference run and the whole-model runs take the given model inputs. The
  // model reshapes by an input: the synthetic (zero) shape cannot hold x's 24 values, [6, 4] can.
  auto backend = makeCpuBackend();
  auto g = importOnnxBytes(testmodels::withReshapeByInput(), "reshape_by_input.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  const ValueId shape = g->findValue("shape");
  QVERIFY(shape != kNone);
  for (const auto method : {ProfilerOptions::Method::PerOperator, ProfilerOptions::Method::InContext}) {
    ProfilerOptions o;
    o.method = method;
    o.devices = {"core0"};
    o.warmup = 0;
    o.reps = 1;
    auto synthetic = profileModel(*g, *backend, o);
    QVERIFY2(!synthetic.isOk(), "the synthetic shape input was expected to fail the Reshape");
    Tensor given;
    QVERIFY(given.ensure(DType::Int64, {2}).isOk());
    given.data<int64_t>()[0] = 6;
    given.data<int64_t>()[1] = 4;
    o.inputs[shape] = given;
    auto p = profileModel(*g, *backend, o);
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(p->devices.size(), size_t{1});
    QCOMPARE(p->devices[0].ops.size(), size_t{2});
  }
}

void TestExecutorModes::concatInputsWrittenInPlace() {
  auto backend = makeCpuBackend();
  auto g = importOnnxBytes(testmodels::concatOfProducers(), "concat.onnx");
  QVERIFY2(g.isOk(), g.message().c_str());
  auto t = buildCostTable(*g, characteriseAll(*g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  auto valueId = [&](const std::string& name) {
    for (size_t v = 0; v < g->values.size(); ++v)
      if (g->values[v].name == name) return static_cast<ValueId>(v);
    return ValueId{-1};
  };
  const ValueId x = valueId("x"), z = valueId("z");
  QVERIFY(x >= 0 && z >= 0);
  auto xs = Tensor::make(DType::Float32, {1, 4, 6});
  auto zs = Tensor::make(DType::Float32, {1, 2, 6});
  QVERIFY(xs.isOk() && zs.isOk());
  xs->fillRandom(3);
  zs->fillRandom(4);
  // y = tanh(concat(sigmoid x, -x, relu z)), computed here.
  std::vector<float> want;
  for (int i = 0; i < 24; ++i) want.push_back(std::tanh(1.0f / (1.0f + std::exp(-xs->data<float>()[i]))));
  for (int i = 0; i < 24; ++i) want.push_back(std::tanh(-xs->data<float>()[i]));
  for (int i = 0; i < 12; ++i) want.push_back(std::tanh(std::max(0.0f, zs->data<float>()[i])));
  // Every operator on core0, then the producers spread over two cores (when there are two).
  std::vector<std::vector<std::string>> placements = {{"core0", "core0", "core0", "core0", "core0"}};
  if (test::hasDevice(*backend, "core1")) placements.push_back({"core1", "core0", "core1", "core0", "core0"});
  for (const auto& where : placements) {
    Plan plan;
    plan.algorithm = "manual";
    plan.device.assign(g->nodes.size(), 0);
    plan.order.assign(static_cast<size_t>(t->numDevices()), {});
    for (OpId op : t->topoOrder()) {
      const auto& name = g->nodes[static_cast<size_t>(op)].name;
      const size_t i = name == "sigmoid" ? 0 : name == "neg" ? 1 : name == "relu" ? 2 : name == "concat" ? 3 : 4;
      const DeviceId d = deviceIndex(*t, where[i]);
      plan.device[static_cast<size_t>(op)] = d;
      plan.order[static_cast<size_t>(d)].push_back(op);
    }
    ExecOptions o;
    o.reps = 3;
    o.maxDiscarded = 0;
    o.keepOutputs = true;
    o.inputs[x] = *xs;
    o.inputs[z] = *zs;
    auto r = executePlan(*g, *backend, *t, plan, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    QCOMPARE(r->concatInputsInPlace, 3);
    QVERIFY2(r->outputsMatch, r->mismatch.c_str());
    QCOMPARE(r->outputs.size(), size_t{1});
    QCOMPARE(r->outputs[0].numElements(), int64_t{60});
    for (int i = 0; i < 60; ++i)
      QVERIFY2(std::abs(r->outputs[0].data<float>()[i] - want[static_cast<size_t>(i)]) < 1e-5f,
               qPrintable(QString::number(i)));
  }
}

void TestExecutorModes::alternatingTeamAndCore() {
  auto backend = makeCpuBackend();
  if (!test::hasDevice(*backend, "core1")) QSKIP("this machine has one CPU: there is no core1 to alternate with");
  const Graph g = smallCnn();
  auto t = buildCostTable(g, characteriseAll(g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  const auto topo = t->topoOrder();
  QVERIFY(topo.size() > 20);
  // Along the topological order: cpu-parallel, core1, cpu-parallel, ... every operator switches.
  Plan plan;
  plan.algorithm = "alternating";
  plan.device.assign(topo.size(), 0);
  plan.order.assign(static_cast<size_t>(t->numDevices()), {});
  const DeviceId par = deviceIndex(*t, "cpu-parallel"), core1 = deviceIndex(*t, "core1");
  for (size_t i = 0; i < topo.size(); ++i) {
    const DeviceId d = i % 2 == 0 ? par : core1;
    plan.device[static_cast<size_t>(topo[i])] = d;
    plan.order[static_cast<size_t>(d)].push_back(topo[i]);
  }
  for (int spinUs : {ExecOptions{}.spinUs, 0}) {
    ExecOptions o;
    o.reps = 3;
    o.spinUs = spinUs;
    o.maxDiscarded = 0;  // A timing is not what this checks: keep every run.
    auto r = executePlan(g, *backend, *t, plan, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    QVERIFY(r->outputsChecked);
    QVERIFY2(r->outputsMatch, r->mismatch.c_str());
    // core1's lane steps aside for every cpu-parallel operator and runs every core1 operator: it
    // changes between the two at least once per pair of operators of the chain parts.
    QVERIFY2(r->modeSwitchesPerRun >= static_cast<int>(topo.size()) / 2,
             qPrintable(QString("%1 switches for %2 operators").arg(r->modeSwitchesPerRun).arg(topo.size())));
    QVERIFY(r->modeSwitchesPerRun <= static_cast<int>(topo.size()));
    if (spinUs == 0)
      QVERIFY2(r->sleepsPerRun >= 1, qPrintable(QString::number(r->sleepsPerRun)));  // Each wait sleeps, counted.
    QVERIFY(r->cpuShare > 0 && r->cpuShare <= 1.0);
    for (double us : r->opUs) QVERIFY(us > 0);
  }
}

void TestExecutorModes::waitPolicyIsActiveUnlessTheUserChose() {
  // This test program links the executor, so it started with the policy set before libgomp loaded.
  if (ompWaitPolicyFromUser())
    QVERIFY(!ompWaitPolicy().empty());
  else
    QCOMPARE(ompWaitPolicy(), std::string("active"));
  if (!QFileInfo::exists(test::cliPath())) QSKIP("partex-cli is not built");
  // What libgomp itself read, as it prints it (OMP_DISPLAY_ENV).
  auto displayed = [](const QString& policy, const QString& command = "execute") {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("OMP_WAIT_POLICY");
    env.remove("GOMP_SPINCOUNT");
    env.remove("PARTEX_OMP_ENV");
    if (!policy.isEmpty()) env.insert("OMP_WAIT_POLICY", policy);
    env.insert("OMP_DISPLAY_ENV", "verbose");
    p.setProcessEnvironment(env);
    p.start(test::cliPath(), {command});  // `execute` without arguments: its usage error after libgomp's display
    p.waitForFinished(60000);
    const QString all = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    QRegularExpression re("OMP_WAIT_POLICY = '([A-Z]+)'");
    auto m = re.match(all);
    QRegularExpression spin("GOMP_SPINCOUNT = '([0-9]+)'");
    auto ms = spin.match(all);
    return m.hasMatch() ? m.captured(1) + (ms.hasMatch() ? " " + ms.captured(1) : QString())
                        : QString("(not shown: %1)").arg(all.left(200));
  };
  // libgomp prints PASSIVE for a policy nobody set (its default spins 300000): the spin count tells
  // Partex's setting from the default.
  QCOMPARE(displayed(""), QString("ACTIVE 100000"));
  QCOMPARE(displayed("passive"), QString("PASSIVE 0"));  // The user's choice is kept.
  // A command that runs no kernel (unless it measures this machine) starts once, with libgomp's defaults.
  QCOMPARE(displayed("", "--version"), QString("PASSIVE 300000"));
}

void TestExecutorModes::inContextProfileMeasuresHandovers() {
  // Devices on different CPUs hand tensors over between lanes; that cost is measured and applied as
  // the transfer cost between them. Devices of one CPU share a lane: nothing to hand over.
  auto backend = makeCpuBackend();
  if (!test::hasDevice(*backend, "core1")) QSKIP("this machine has one CPU");
  const Graph g = smallCnn();
  ProfilerOptions o;
  o.method = ProfilerOptions::Method::InContext;
  o.devices = {"cpu-serial", "core0", "core1"};
  o.warmup = 1;
  o.reps = 3;
  auto p = profileModel(g, *backend, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& tr : p->transfers) {
    pairs.insert({tr.from, tr.to});
    QVERIFY(tr.samples.size() >= 2);
    for (size_t i = 1; i < tr.samples.size(); ++i) QVERIFY(tr.samples[i].bytes > tr.samples[i - 1].bytes);
    for (const auto& smp : tr.samples) QVERIFY(smp.time.medianUs >= 0 && smp.time.reps == o.reps);
  }
  const std::set<std::pair<std::string, std::string>> expected{
      {"cpu-serial", "core1"}, {"core1", "cpu-serial"}, {"core0", "core1"}, {"core1", "core0"}};
  QCOMPARE(pairs, expected);
  // Applied: core0 -> core1 costs something for a large tensor, cpu-serial -> core0 stays free.
  auto t = buildCostTable(g, characteriseAll(g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  ApplyOptions ao;
  ao.modelSha256 = g.graphSha256;
  auto rep = applyProfile(*t, *p, ao);
  QVERIFY2(rep.isOk(), rep.message().c_str());
  QCOMPARE(rep->pairsApplied, 4);
  const DeviceId serial = deviceIndex(*t, "cpu-serial"), c0 = deviceIndex(*t, "core0"), c1 = deviceIndex(*t, "core1");
  QVERIFY(t->transferUs(c0, c1, 1 << 20) > 0);
  QCOMPARE(t->transferUs(serial, c0, 1 << 20), 0.0);
}

void TestExecutorModes::fusionIsAFactOfTheCosts() {
  // The in-context profile records the kernels the runtime fused; applied, the table knows them; the
  // simulator keeps a group's measured cost when the plan keeps it together and charges the operators'
  // standalone costs when the plan splits it; --groups times a runtime group as its one kernel.
  auto backend = makeCpuBackend();
  const Graph g = smallCnn();
  const auto expected = fusedGroups(g);
  QVERIFY(!expected.empty());
  ProfilerOptions o;
  o.method = ProfilerOptions::Method::InContext;
  o.devices = {"core0"};
  o.warmup = 1;
  o.reps = 2;
  o.groups = true;
  auto p = profileModel(g, *backend, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  const ProfileDevice& pd = p->devices.at(0);
  QCOMPARE(pd.fused.size(), expected.size());
  const std::set<std::vector<std::string>> recorded(pd.fused.begin(), pd.fused.end());
  for (size_t i = 0; i < expected.size(); ++i) {
    std::vector<std::string> names;
    for (OpId op : expected[i].ops) names.push_back(g.nodes[static_cast<size_t>(op)].name);
    QVERIFY2(recorded.count(names), names.front().c_str());
    QVERIFY2(std::any_of(pd.groups.begin(), pd.groups.end(), [&](const ProfileGroup& pg) { return pg.ops == names; }),
             "a runtime group is not among the profiled groups");
  }
  auto t = buildCostTable(g, characteriseAll(g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  ApplyOptions ao;
  ao.modelSha256 = g.graphSha256;
  auto rep = applyProfile(*t, *p, ao);
  QVERIFY2(rep.isOk(), rep.message().c_str());
  QCOMPARE(rep->fusedGroups, static_cast<int>(expected.size()));
  QCOMPARE(t->fusedGroups.size(), expected.size());
  const DeviceId c0 = deviceIndex(*t, "core0"), serial = deviceIndex(*t, "cpu-serial");
  const auto& grp = t->fusedGroups[0];
  std::vector<DeviceId> together(static_cast<size_t>(t->numTasks()), c0), split = together;
  split[static_cast<size_t>(grp.front())] = serial;
  for (TaskId v : grp) QCOMPARE(t->wIn(v, c0, together), t->w(v, c0));
  const TaskId last = grp.back();
  QCOMPARE(t->wIn(last, c0, split),
           t->unfusedCost[static_cast<size_t>(last) * t->deviceIds.size() + static_cast<size_t>(c0)]);
}

/// Reshape and Unsqueeze run as views of their input (runsAsView): no copy, and the memory plan keeps
/// the viewed tensor alive until the views' last reader. y = Unsqueeze(Reshape(Relu(x), [64]), [0]) +
/// Neg(z), in the order Relu, Reshape, Unsqueeze, Neg, Add on core0: Neg's output would take Relu's
/// storage if Relu's tensor died at the Reshape (its only reader), and the Add would then read -z
/// twice. Checked against y computed here. A view that is a model output is a copy.
void TestExecutorModes::reshapesRunAsViews() {
  for (const bool viewIsOutput : {false, true}) {
    test::GraphBuilder gb("views");
    const ValueId x = gb.input("x", {4, 16}), z = gb.input("z", {1, 64});
    const ValueId a = gb.node("relu", "Relu", {x}, {4, 16});
    const ValueId r = gb.node("reshape", "Reshape", {a, gb.ints("shape", {64})}, {64});
    const ValueId u = gb.node("unsqueeze", "Unsqueeze", {r, gb.ints("axes", {0})}, {1, 64});
    const ValueId n = gb.node("neg", "Neg", {z}, {1, 64});
    gb.output(gb.node("add", "Add", {u, n}, {1, 64}));
    if (viewIsOutput) gb.output(u);
    Graph g = gb.build();
    QVERIFY(runsAsView(g, 1));
    QCOMPARE(runsAsView(g, 2), !viewIsOutput);

    auto xs = Tensor::make(DType::Float32, {4, 16});
    auto zs = Tensor::make(DType::Float32, {1, 64});
    QVERIFY(xs.isOk() && zs.isOk());
    xs->fillRandom(5);
    zs->fillRandom(6);
    std::vector<float> want(64);
    for (size_t i = 0; i < 64; ++i) want[i] = std::max(0.0f, xs->data<float>()[i]) - zs->data<float>()[i];
    auto res = runOnCore0(g, x, *xs, z, *zs);
    QVERIFY2(res.isOk(), res.message().c_str());
    QCOMPARE(res->viewsOfInputs, viewIsOutput ? 1 : 2);
    QVERIFY2(res->outputsMatch, res->mismatch.c_str());
    QCOMPARE(res->outputs.size(), g.outputs.size());
    QCOMPARE(res->outputs[0].shape(), (std::vector<int64_t>{1, 64}));
    for (size_t i = 0; i < 64; ++i)
      QVERIFY2(res->outputs[0].data<float>()[i] == want[i], qPrintable(QString::number(i)));
    if (viewIsOutput) {  // the model output Unsqueeze copied: Relu(x) as [1, 64]
      QCOMPARE(res->outputs[1].shape(), (std::vector<int64_t>{1, 64}));
      for (size_t i = 0; i < 64; ++i)
        QCOMPARE(res->outputs[1].data<float>()[i], std::max(0.0f, xs->data<float>()[i]));
    }
  }
}

/// A Concat of Reshapes (Ultraface's heads: Transpose, Reshape, Concat): each Reshape's input is written
/// by its producer straight into the Concat's slice, the Reshape views it there, and nothing is copied.
/// y = Relu(Concat(Reshape(Neg(x), [1, 24]), Reshape(Tanh(z), [1, 12]), axis 1)), checked against y
/// computed here.
void TestExecutorModes::viewsIntoConcatSlices() {
  test::GraphBuilder gb("viewconcat");
  const ValueId x = gb.input("x", {2, 3, 4}), z = gb.input("z", {3, 4});
  const ValueId a = gb.node("neg", "Neg", {x}, {2, 3, 4});
  const ValueId ra = gb.node("ra", "Reshape", {a, gb.ints("sa", {1, 24})}, {1, 24});
  const ValueId b = gb.node("tanh", "Tanh", {z}, {3, 4});
  const ValueId rb = gb.node("rb", "Reshape", {b, gb.ints("sb", {1, -1})}, {1, 12});
  const ValueId c = gb.node("concat", "Concat", {ra, rb}, {1, 36}, {{"axis", Attribute{int64_t{1}}}});
  gb.output(gb.node("relu", "Relu", {c}, {1, 36}));  // (a Concat that is a model output is not pre-placed)
  Graph g = gb.build();
  auto xs = Tensor::make(DType::Float32, {2, 3, 4});
  auto zs = Tensor::make(DType::Float32, {3, 4});
  QVERIFY(xs.isOk() && zs.isOk());
  xs->fillRandom(8);
  zs->fillRandom(9);
  auto r = runOnCore0(g, x, *xs, z, *zs);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->viewsOfInputs, 2);
  QCOMPARE(r->concatInputsInPlace, 2);
  QVERIFY2(r->outputsMatch, r->mismatch.c_str());
  QCOMPARE(r->outputs.size(), size_t{1});
  QCOMPARE(r->outputs[0].shape(), (std::vector<int64_t>{1, 36}));
  for (int i = 0; i < 24; ++i) QCOMPARE(r->outputs[0].data<float>()[i], std::max(0.0f, -xs->data<float>()[i]));
  for (int i = 0; i < 12; ++i)
    QVERIFY(std::abs(r->outputs[0].data<float>()[24 + i] - std::max(0.0f, std::tanh(zs->data<float>()[i]))) < 1e-6f);
}

QTEST_GUILESS_MAIN(TestExecutorModes)
#include "tst_executor_modes.moc"
