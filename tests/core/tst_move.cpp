// Moving operators by hand (plan/move.h): the placement rule the GUI's drag and partex-cli --pin
// share, and the plan a move gives. Checked on the tiny hand-made problem (exact orders and
// refusals) and on a profiled ResNet-18 whose fused kernels must split and join as operators move.
#include <QtTest>

#include <algorithm>

#include "fused_fixture.h"
#include "plan/fusedkernels.h"
#include "plan/move.h"
#include "plan_fixture.h"

using namespace partex;

namespace {

/// Index of the operator named `name`, or -1.
TaskId task(const CostTable& t, const std::string& name) {
  auto it = std::find(t.taskNames.begin(), t.taskNames.end(), name);
  return it == t.taskNames.end() ? -1 : static_cast<TaskId>(it - t.taskNames.begin());
}

/// Every operator on `d`, in topological order.
Plan allOn(const CostTable& t, DeviceId d) {
  Plan p;
  p.device.assign(static_cast<size_t>(t.numTasks()), d);
  p.order.assign(static_cast<size_t>(t.numDevices()), {});
  p.order[static_cast<size_t>(d)] = t.topoOrder();
  p.algorithm = "single";
  return p;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

class TestMove : public QObject {
  Q_OBJECT
 private slots:
  void placementRefusalsSayWhy();
  void unsupportedOperatorGivesThePlatformsReason();
  void moveInsertsByStartTimeAndResimulates();
  void movingNothingChangesNothing();
  void refusedMoveLeavesThePlanAlone();
  void fusedKernelSplitsAndJoins();
};

void TestMove::placementRefusalsSayWhy() {
  const CostTable t = test::tinyTable();
  const TaskId relu = task(t, "relu1");
  QVERIFY(checkPlacement(t, relu, 1).isOk());
  // The npu has no cost for relu1 and no platform says why.
  Status st = checkPlacement(t, relu, 2);
  QVERIFY(!st);
  QCOMPARE(QString::fromStdString(st.message()),
           QStringLiteral("'npu' cannot run 'relu1' (Relu): it has no cost for it"));
  // A pin holds an operator on its device.
  const std::map<TaskId, DeviceId> pins{{relu, 0}};
  PlacementContext ctx;
  ctx.pinned = &pins;
  st = checkPlacement(t, relu, 1, ctx);
  QCOMPARE(QString::fromStdString(st.message()), QStringLiteral("'relu1' (Relu) is pinned to 'cpu': unpin it first"));
  QVERIFY(checkPlacement(t, relu, 0, ctx).isOk());
  // Out of range.
  QVERIFY(contains(checkPlacement(t, 99, 0).message(), "no operator with index 99"));
  QVERIFY(contains(checkPlacement(t, relu, 3).message(), "no device 4"));
  Platform plat;
  plat.name = "tiny-platform";
  ctx.platform = &plat;
  QCOMPARE(QString::fromStdString(checkMove(t, {relu}, -1, ctx).message()),
           QStringLiteral("no device 0 on tiny-platform (it has 3)"));
  QCOMPARE(QString::fromStdString(checkMove(t, {}, 0).message()), QStringLiteral("no operator selected"));
  // One refused operator refuses the whole move.
  QVERIFY(checkMove(t, {task(t, "branch_a")}, 2).isOk());
  QVERIFY(!checkMove(t, {task(t, "branch_a"), relu}, 2));
}

void TestMove::unsupportedOperatorGivesThePlatformsReason() {
  // The NPU of this platform runs only Conv: the refusal of a Relu says so, in the platform's words.
  auto fp = test::fusedProblem(false);
  QVERIFY2(fp.error.empty(), fp.error.c_str());
  Platform plat = test::twoCoresAndNpu();
  plat.devices[2].supportedOps = {"Conv"};
  auto t = buildCostTable(fp.graph, characteriseAll(fp.graph), plat);
  QVERIFY2(t, t.message().c_str());
  TaskId relu = -1, conv = -1;
  for (TaskId v = 0; v < t->numTasks(); ++v) {
    const std::string& type = fp.graph.nodes[static_cast<size_t>(v)].opType;
    if (type == "Relu" && relu < 0) relu = v;
    if (type == "Conv" && conv < 0) conv = v;
  }
  QVERIFY(relu >= 0 && conv >= 0);
  PlacementContext ctx;
  ctx.graph = &fp.graph;
  ctx.platform = &plat;
  QVERIFY(checkPlacement(*t, conv, 2, ctx).isOk());
  const Status st = checkPlacement(*t, relu, 2, ctx);
  QVERIFY(!st);
  QVERIFY2(contains(st.message(), "'npu' cannot run '" + t->taskNames[static_cast<size_t>(relu)] + "' (Relu): "),
           st.message().c_str());
  QVERIFY2(contains(st.message(), "runs only Conv (not Relu)"), st.message().c_str());
}

void TestMove::moveInsertsByStartTimeAndResimulates() {
  const CostTable t = test::tinyTable();
  const Plan plan = allOn(t, 0);
  Simulator sim(t);
  auto current = sim.run(plan);
  QVERIFY2(current, current.message().c_str());
  const TaskId a = task(t, "branch_a"), b = task(t, "branch_b");
  // Both branches to the gpu: inserted by their start times on the cpu, so branch_a (which started
  // first) runs first there as well.
  const double startA = current->tasks[static_cast<size_t>(a)].start,
               startB = current->tasks[static_cast<size_t>(b)].start;
  QVERIFY(startA != startB);
  auto moved = applyMove(sim, t, plan, *current, {b, a, b}, 1);
  QVERIFY2(moved, moved.message().c_str());
  QCOMPARE(moved->moved, (std::vector<TaskId>{b, a}));  // as asked, each once
  QCOMPARE(moved->plan.algorithm, std::string("manual"));
  QCOMPARE(moved->plan.device[static_cast<size_t>(a)], 1);
  QCOMPARE(moved->plan.device[static_cast<size_t>(b)], 1);
  const std::vector<TaskId> gpu = startA < startB ? std::vector<TaskId>{a, b} : std::vector<TaskId>{b, a};
  QCOMPARE(moved->plan.order[1], gpu);
  QCOMPARE(moved->plan.order[0].size(), size_t(3));
  QVERIFY(checkPlanShape(t, moved->plan).isOk());
  // The timeline is the new plan's simulation.
  auto again = simulate(t, moved->plan);
  QVERIFY(again);
  QCOMPARE(moved->timeline.makespan, again->makespan);
  QCOMPARE(moved->timeline.tasks[static_cast<size_t>(a)].device, 1);
  QVERIFY(moved->timeline.makespan != current->makespan);
  // The input plan is left as it was.
  QCOMPARE(plan.device[static_cast<size_t>(a)], 0);
}

void TestMove::movingNothingChangesNothing() {
  const CostTable t = test::tinyTable();
  const Plan plan = allOn(t, 0);
  Simulator sim(t);
  auto current = sim.run(plan);
  QVERIFY(current);
  auto moved = applyMove(sim, t, plan, *current, {task(t, "relu1")}, 0);
  QVERIFY2(moved, moved.message().c_str());
  QVERIFY(moved->moved.empty());
  QCOMPARE(moved->plan.order, plan.order);
  QCOMPARE(moved->plan.algorithm, std::string("single"));
  QCOMPARE(moved->timeline.makespan, current->makespan);
}

void TestMove::refusedMoveLeavesThePlanAlone() {
  const CostTable t = test::tinyTable();
  const Plan plan = allOn(t, 0);
  Simulator sim(t);
  auto current = sim.run(plan);
  QVERIFY(current);
  auto moved = applyMove(sim, t, plan, *current, {task(t, "branch_a"), task(t, "relu1")}, 2);
  QVERIFY(!moved);
  QVERIFY2(contains(moved.message(), "'npu' cannot run 'relu1'"), moved.message().c_str());
  // A plan of another table is refused, not read out of bounds.
  Plan shortPlan = plan;
  shortPlan.device.pop_back();
  QVERIFY(!applyMove(sim, t, shortPlan, *current, {0}, 1));
}

void TestMove::fusedKernelSplitsAndJoins() {
  // The profiled costs know the Conv+BatchNorm+Relu kernels of the CPU runtime. Moving one member
  // to the other core splits its kernel; moving it back joins it again.
  auto fp = test::fusedProblem(true);
  QVERIFY2(fp.error.empty(), fp.error.c_str());
  const CostTable& t = fp.table;
  const Plan plan = test::placed(t, 0);
  Simulator sim(t);
  auto current = sim.run(plan);
  QVERIFY2(current, current.message().c_str());
  const auto before = fusedKernels(fp.graph, t, plan.device, &*current);
  QVERIFY(!before.empty());
  const FusedKernel& k = before.front();
  QVERIFY(k.ops.size() >= 2);
  const TaskId member = k.ops.back();
  auto away = applyMove(sim, t, plan, *current, {member}, 1);
  QVERIFY2(away, away.message().c_str());
  const auto split = fusedKernels(fp.graph, t, away->plan.device, &away->timeline);
  const auto ofTasks = kernelOfTasks(t.numTasks(), split);
  QCOMPARE(ofTasks[static_cast<size_t>(member)], -1);
  auto back = applyMove(sim, t, away->plan, away->timeline, {member}, 0);
  QVERIFY2(back, back.message().c_str());
  const auto joined = fusedKernels(fp.graph, t, back->plan.device, &back->timeline);
  QCOMPARE(joined.size(), before.size());
  QVERIFY(kernelOfTasks(t.numTasks(), joined)[static_cast<size_t>(member)] >= 0);
}

QTEST_GUILESS_MAIN(TestMove)
#include "tst_move.moc"
