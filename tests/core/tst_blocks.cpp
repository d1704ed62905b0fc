// Compiled blocks (Plan::blocks): the block model of a device that compiles blocks, checked against
// numbers worked out by hand; what the simulator charges a block; the rules a block must obey (plan
// shape, plan files, moves); the lower bound under blocks; and DLFusion and coarse, whose knobs the
// blocks carry, against their own baselines on a generated model.
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "plan/planfile.h"
#include "platform/platform.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"

using namespace partex;

namespace {

/// cpu: compiles no blocks. npu: conv 1000 GFLOP/s (1e6 FLOP/us), other classes 100 (1e5 FLOP/us),
/// 50 GB/s (5e4 B/us), 5 us per launch, 4 cores, 1 us per barrier level, compiles blocks.
std::vector<Device> devices() {
  Device cpu;
  cpu.id = "cpu";
  cpu.defaultPeakGflops = 100.0;
  cpu.memBandwidthGBs = 50.0;
  Device npu;
  npu.id = "npu";
  npu.kind = DeviceKind::Npu;
  npu.peakGflops = {{OpClass::Conv, 1000.0}};
  npu.defaultPeakGflops = 100.0;
  npu.memBandwidthGBs = 50.0;
  npu.launchOverheadUs = 5.0;
  npu.cores = 4;
  npu.coreSyncUs = 1.0;
  npu.compilesBlocks = true;
  return {cpu, npu};
}

OpWork work(OpClass cls, int64_t flops, int64_t weights) {
  OpWork w;
  w.cls = cls;
  w.dtype = DType::Float32;
  w.flops = flops;
  w.bytesReadWeights = weights;
  return w;
}

/// A -> B -> C: A a conv of 4e8 FLOP with 1e6 weight bytes and 8 output channels reading a 1e6-byte
/// model input; B an element-wise op of 1e6 FLOP, 8 channels; C a conv of 2e8 FLOP with 5e5 weight
/// bytes and 6 channels writing a 1e6-byte model output; 1e6 bytes on each edge. Costs (as if
/// measured): A 410, B 50, C 280 us on the npu; 1000 each on the cpu.
CostTable chain() {
  CostTable t;
  t.name = "chain";
  t.taskNames = {"A", "B", "C"};
  t.taskTypes = {"Conv", "Relu", "Conv"};
  t.deviceIds = {"cpu", "npu"};
  t.cost = {1000, 410, 1000, 50, 1000, 280};
  t.provenance.assign(6, Provenance::Measured);
  t.edges = {Edge{0, 1, 1000000, -1.0}, Edge{1, 2, 1000000, -1.0}};
  finishTaskTable(t);
  t.inputBytes = {1000000, 0, 0};
  t.outputBytes = {0, 0, 1000000};
  t.work = {work(OpClass::Conv, 400000000, 1000000), work(OpClass::Elementwise, 1000000, 0), work(OpClass::Conv, 200000000, 500000)};
  t.taskChannels = {8, 8, 6};
  t.deviceKinds = {"cpu", "npu"};
  t.deviceCores = {1, 4};
  t.deviceOnChipBytes = {0, 0};
  t.deviceLaunchUs = {0, 5};
  setBlockModel(t, devices());
  return t;
}

Plan planOf(std::vector<DeviceId> device, std::vector<std::vector<TaskId>> order, std::vector<PlanBlock> blocks) {
  Plan p;
  p.device = std::move(device);
  p.order = std::move(order);
  p.blocks = std::move(blocks);
  return p;
}

/// Everything on the npu in topological order, with the given blocks.
Plan onNpu(std::vector<PlanBlock> blocks) {
  Plan p;
  p.device = {1, 1, 1};
  p.order = {{}, {0, 1, 2}};
  p.blocks = std::move(blocks);
  return p;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

class TestBlocks : public QObject {
  Q_OBJECT

 private slots:
  void blockModelByHand();
  void chargedTime();
  void simulatorSharesTheBlock();
  void shapeRules_data();
  void shapeRules();
  void movesDropBrokenBlocks();
  void planFileKeepsBlocks();
  void lowerBoundHolds();
  void dlfusionAndCoarseBeatTheirBaselines();
};

void TestBlocks::blockModelByHand() {
  const CostTable t = chain();
  BlockTimer b(t, 1);
  for (TaskId v : {0, 1, 2}) b.add(v);
  // Flops at the conv peak (A is the heaviest), each layer spread by its own channels. Off chip:
  // weights 1.5e6 + input 1e6 + output 1e6 = 3.5e6 B = 70 us (the two edges stay on chip).
  // 4 cores: A 8 channels in 2 rounds (keff 4): 400 us; B 1 us; C 6 channels in 2 rounds (keff 3):
  // 200 * 4 / 3; barrier 2 levels.
  QCOMPARE(b.modelUs(4), 5 + 400 + 1 + 200.0 * 4 / 3 + 2);
  QCOMPARE(b.modelUs(0), b.modelUs(4));
  // 2 cores: keff 2 for all three, compute 601 * 4 / 2 = 1202; barrier 1 level.
  QCOMPARE(b.modelUs(2), 5 + 1202.0 + 1);
  // 1 core: 601 * 4, no barrier.
  QCOMPARE(b.modelUs(1), 5 + 2404.0);
  // A alone on 4 cores: 400 us of compute (keff 4); off chip weights 1e6 + input 1e6 + edge 1e6 =
  // 60 us; barrier 2.
  BlockTimer a(t, 1);
  a.add(0);
  QCOMPARE(a.modelUs(0), 5 + 400.0 + 2);
  // B alone: 1e6 / 1e5 = 10 us < two edges 2e6 B = 40 us.
  BlockTimer bOnly(t, 1);
  bOnly.add(1);
  QCOMPARE(bOnly.modelUs(0), 5 + 40.0 + 2);
  // The same block grown in another order has the same time.
  BlockTimer rev(t, 1);
  for (TaskId v : {2, 0, 1}) rev.add(v);
  QCOMPARE(rev.modelUs(4), b.modelUs(4));
  // A device that compiles no blocks: the plain sum of the costs.
  BlockTimer cpu(t, 0);
  for (TaskId v : {0, 1, 2}) cpu.add(v);
  QCOMPARE(cpu.timeUs(0), 3000.0);
}

void TestBlocks::chargedTime() {
  const CostTable t = chain();
  // Alone: A 407, B 47, C 5 + 200 * 4 / 3 + 50 ... compute 266.67 > memory 50: 5 + 266.67 + 2.
  const double aloneC = 5 + 200.0 * 4 / 3 + 2;
  const double sumAlone = 407 + 47 + aloneC;
  const double model = 5 + 400 + 1 + 200.0 * 4 / 3 + 2;
  // The members' measured costs (740 us) scaled by the model's gain.
  QVERIFY(std::abs(blockTimeUs(t, {0, 1, 2}, 1, 0) - 740.0 * model / sumAlone) < 1e-9);
  // One op on all its cores costs its own cost; on fewer, scaled by the model.
  QCOMPARE(blockTimeUs(t, {0}, 1, 0), 410.0);
  QCOMPARE(blockTimeUs(t, {0}, 1, 4), 410.0);
  QVERIFY(std::abs(blockTimeUs(t, {0}, 1, 1) - 410.0 * (5 + 1600.0) / 407) < 1e-9);
  // Fusing saves the launches and the edges' round trips: the block is cheaper than its members.
  QVERIFY(blockTimeUs(t, {0, 1, 2}, 1, 0) < 740.0);
}

void TestBlocks::simulatorSharesTheBlock() {
  const CostTable t = chain();
  const double block = blockTimeUs(t, {0, 1, 2}, 1, 0);
  auto tl = simulate(t, onNpu({PlanBlock{1, {0, 1, 2}, 0}}));
  QVERIFY2(tl, tl.message().c_str());
  // Model input to the npu first: 1e6 B over a free link of the hand-made table (0 us).
  QCOMPARE(tl->tasks[2].end - tl->tasks[0].start, block);
  QVERIFY(std::abs((tl->tasks[0].end - tl->tasks[0].start) - block * 410 / 740) < 1e-9);
  QVERIFY(std::abs((tl->tasks[1].end - tl->tasks[1].start) - block * 50 / 740) < 1e-9);
  // Without the block: the costs one by one.
  auto plain = simulate(t, onNpu({}));
  QVERIFY(plain);
  QCOMPARE(plain->tasks[2].end - plain->tasks[0].start, 740.0);
  QVERIFY(tl->makespan < plain->makespan);
  // Fewer cores: slower here (the convs want all of them).
  auto two = simulate(t, onNpu({PlanBlock{1, {0, 1, 2}, 2}}));
  QVERIFY(two);
  QVERIFY(two->makespan > tl->makespan);
}

void TestBlocks::shapeRules_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QString>("reason");
  QTest::newRow("empty") << 0 << "has no operators";
  QTest::newRow("cpu compiles none") << 1 << "compiles no blocks";
  QTest::newRow("too many cores") << 2 << "uses 5 cores, 'npu' has 4";
  QTest::newRow("not consecutive") << 3 << "does not follow";
  QTest::newRow("twice") << 4 << "already in block 1";
  QTest::newRow("not convex") << 5 << "not convex";
  QTest::newRow("wrong device") << 6 << "is not on 'npu'";
}

void TestBlocks::shapeRules() {
  QFETCH(int, which);
  QFETCH(QString, reason);
  const CostTable t = chain();
  Plan p = onNpu({});
  switch (which) {
    case 0: p.blocks = {PlanBlock{1, {}, 0}}; break;
    case 1:
      p = planOf({0, 0, 0}, {{0, 1, 2}, {}}, {PlanBlock{0, {0, 1}, 0}});
      break;
    case 2: p.blocks = {PlanBlock{1, {0, 1}, 5}}; break;
    case 3: p.blocks = {PlanBlock{1, {0, 2}, 0}}; break;
    case 4: p.blocks = {PlanBlock{1, {0, 1}, 0}, PlanBlock{1, {1, 2}, 0}}; break;
    case 5:
      // A and C on the npu, B on the cpu: {A, C} is consecutive on the npu but A -> B -> C leaves it.
      p = planOf({1, 0, 1}, {{1}, {0, 2}}, {PlanBlock{1, {0, 2}, 0}});
      break;
    case 6: p = planOf({1, 0, 1}, {{1}, {0, 2}}, {PlanBlock{1, {0, 1}, 0}}); break;
  }
  auto st = checkPlanShape(t, p);
  QVERIFY(!st);
  QVERIFY2(contains(st.message(), reason.toStdString()), st.message().c_str());
  // The simulator refuses it too, and dropBrokenBlocks makes the plan valid.
  QVERIFY(!simulate(t, p));
  Plan fixed = p;
  QVERIFY(dropBrokenBlocks(t, fixed) >= 1);
  QVERIFY(checkPlanShape(t, fixed));
}

void TestBlocks::movesDropBrokenBlocks() {
  const CostTable t = chain();
  Plan p = onNpu({PlanBlock{1, {0, 1}, 0}, PlanBlock{1, {2}, 2}});
  auto tl = simulate(t, p);
  QVERIFY(tl);
  std::vector<double> start;
  for (const auto& s : tl->tasks) start.push_back(s.start);
  Simulator sim(t);
  // B to the cpu: the block {A, B} loses a member and goes; {C} on 2 cores stays.
  auto moved = sim.move(p, std::vector<TaskId>{1}, 0, start);
  QVERIFY2(moved, moved.message().c_str());
  QCOMPARE(p.blocks.size(), size_t{1});
  QCOMPARE(p.blocks[0].tasks, std::vector<TaskId>{2});
  QCOMPARE(p.blocks[0].cores, 2);
  QVERIFY(checkPlanShape(t, p));
  QCOMPARE(moved->tasks[0].end - moved->tasks[0].start, 410.0);
}

void TestBlocks::planFileKeepsBlocks() {
  const CostTable t = chain();
  const Plan p = onNpu({PlanBlock{1, {0, 1}, 3}, PlanBlock{1, {2}, 1}});
  auto tl = simulate(t, p);
  QVERIFY(tl);
  const std::string text = planToJson(t, p, *tl, PlanIdentity{});
  auto back = readPlan(text, "chain.plan.json", t, PlanIdentity{});
  QVERIFY2(back, back.message().c_str());
  QCOMPARE(back->blocks.size(), size_t{2});
  QCOMPARE(back->blocks[0].tasks, (std::vector<TaskId>{0, 1}));
  QCOMPARE(back->blocks[0].cores, 3);
  QCOMPARE(back->blocks[1].cores, 1);
  auto again = simulate(t, *back);
  QVERIFY(again);
  QCOMPARE(again->makespan, tl->makespan);
  // A file whose block breaks the rules names the file and the reason.
  std::string bad = text;
  const auto at = bad.find("\"cores\": 3");
  QVERIFY(at != std::string::npos);
  bad.replace(at, 10, "\"cores\": 9");
  auto refused = readPlan(bad, "chain.plan.json", t, PlanIdentity{});
  QVERIFY(!refused);
  QVERIFY2(contains(refused.message(), "chain.plan.json") && contains(refused.message(), "uses 9 cores"), refused.message().c_str());
  // A plan without blocks writes no "blocks" field (files of the other schedulers are unchanged).
  auto plainTl = simulate(t, onNpu({}));
  QVERIFY(plainTl);
  QVERIFY(!contains(planToJson(t, onNpu({}), *plainTl, PlanIdentity{}), "\"blocks\""));
}

void TestBlocks::lowerBoundHolds() {
  const CostTable t = chain();
  const double lb = lowerBound(t);
  for (int cores : {0, 1, 2, 3}) {
    auto tl = simulate(t, onNpu({PlanBlock{1, {0, 1, 2}, cores}}));
    QVERIFY(tl);
    QVERIFY2(tl->makespan >= lb, qPrintable(QString("%1 cores: %2 us below the bound %3").arg(cores).arg(tl->makespan).arg(lb)));
  }
  // The bound knows blocks can be cheaper than their members: below the op-by-op bound.
  CostTable noBlocks = chain();
  noBlocks.blockFloor.clear();
  QVERIFY(lb < lowerBound(noBlocks));
}

void TestBlocks::dlfusionAndCoarseBeatTheirBaselines() {
  GenSpec s;
  s.kind = "resnet18";
  s.imageSize = 64;
  auto bytes = generateModel(s);
  QVERIFY2(bytes, bytes.message().c_str());
  auto g = importOnnxBytes(*bytes, "resnet18.onnx");
  QVERIFY2(g, g.message().c_str());
  const auto work = characteriseAll(*g);
  auto run = [&](const CostTable& t, const std::string& algo, const std::string& mode, Plan* out = nullptr) {
    SchedOptions o;
    o.params["mode"] = mode;
    auto p = findScheduler(algo)->schedule(t, Constraints{}, o);
    if (!p) qFatal("%s %s: %s", algo.c_str(), mode.c_str(), p.message().c_str());
    auto tl = simulate(t, *p);
    if (!tl) qFatal("%s", tl.message().c_str());
    if (out) *out = *p;
    return tl->makespan;
  };
  {
    auto platform = loadPreset("npu-multicore");
    QVERIFY(platform);
    auto t = buildCostTable(*g, work, *platform);
    QVERIFY2(t, t.message().c_str());
    Plan heuristic, none;
    const double base = run(*t, "dlfusion", "none", &none);
    const double h = run(*t, "dlfusion", "heuristic", &heuristic);
    const double oracle = run(*t, "dlfusion", "oracle");
    // The baseline compiles every layer alone on one core; DLFusion fuses and picks core counts.
    for (const PlanBlock& b : none.blocks) QVERIFY(b.tasks.size() == 1 && b.cores == 1);
    QVERIFY(std::any_of(heuristic.blocks.begin(), heuristic.blocks.end(), [](const PlanBlock& b) { return b.tasks.size() > 1; }));
    QVERIFY2(h < base / 2, qPrintable(QString("dlfusion %1 us against no optimisation %2 us").arg(h).arg(base)));
    QVERIFY2(oracle <= h * (1 + 1e-9), qPrintable(QString("oracle %1 us worse than the heuristic's %2 us").arg(oracle).arg(h)));
  }
  {
    auto platform = loadPreset("dsa-ascend");
    QVERIFY(platform);
    auto t = buildCostTable(*g, work, *platform);
    QVERIFY2(t, t.message().c_str());
    const double tvm = run(*t, "coarse", "elementwise");
    const double astitch = run(*t, "coarse", "memory");
    Plan dpPlan;
    const double dp = run(*t, "coarse", "dp", &dpPlan);
    QVERIFY(!dpPlan.blocks.empty());
    QVERIFY2(dp < tvm / 2 && dp < astitch / 2, qPrintable(QString("coarse %1 us, TVM-like %2, AStitch-like %3").arg(dp).arg(tvm).arg(astitch)));
    // And on a platform whose devices compile no blocks, coarse groups nothing into blocks.
    auto plain = loadPreset("cpu-gpu-pcie");
    QVERIFY(plain);
    auto tp = buildCostTable(*g, work, *plain);
    QVERIFY(tp);
    Plan p;
    run(*tp, "coarse", "dp", &p);
    QVERIFY(p.blocks.empty());
  }
}

QTEST_APPLESS_MAIN(TestBlocks)
#include "tst_blocks.moc"
