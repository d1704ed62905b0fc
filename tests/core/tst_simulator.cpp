// The simulator: dependencies, transfers sent once, link contention, exclusive devices, host
// inputs/outputs, deadlock detection, peak bytes, and interactive moves.
#include <QtTest>

#include <random>

#include "cost/costtable.h"
#include "sched/scheduler.h"
#include "fused_fixture.h"
#include "platform/platform.h"
#include "sim/criticalpath.h"
#include "sim/fastsim.h"
#include "sim/simulator.h"
#include "taskgraph_fixture.h"
#include "testutil.h"

using namespace partex;

namespace {

/// A cost table with `m` devices connected pairwise by one link each way (latency 1 us, 1000
/// bytes/us), no shared memory; tasks added with costs per device.
struct Builder {
  CostTable t;
  explicit Builder(int m) {
    for (int d = 0; d < m; ++d) t.deviceIds.push_back("d" + std::to_string(d));
    const size_t mm = static_cast<size_t>(m) * static_cast<size_t>(m);
    t.linkResource.assign(mm, -1);
    t.linkLatencyUs.assign(mm, 1.0);
    t.linkBytesPerUs.assign(mm, 1000.0);
    for (int a = 0; a < m; ++a)
      for (int b = 0; b < m; ++b) {
        const size_t i = static_cast<size_t>(a * m + b);
        if (a == b) {
          t.linkLatencyUs[i] = 0;
          t.linkBytesPerUs[i] = kInf;
          continue;
        }
        t.linkResource[i] = t.numLinkResources++;
        t.linkNames.push_back(t.deviceIds[static_cast<size_t>(a)] + "->" + t.deviceIds[static_cast<size_t>(b)]);
      }
    t.exclusiveWith.assign(static_cast<size_t>(m), {});
    t.memCapacity.assign(static_cast<size_t>(m), 0);
  }
  TaskId task(const std::string& name, std::vector<double> costs) {
    t.taskNames.push_back(name);
    t.taskTypes.push_back("Op");
    for (double c : costs) {
      t.cost.push_back(c);
      t.provenance.push_back(Provenance::Modelled);
    }
    t.inputBytes.push_back(0);
    t.outputBytes.push_back(0);
    return static_cast<TaskId>(t.taskNames.size() - 1);
  }
  void edge(TaskId a, TaskId b, int64_t bytes) { t.edges.push_back(Edge{a, b, bytes, -1.0}); }
  CostTable done() {
    t.indexEdges();
    return t;
  }
};

Plan planOf(const CostTable& t, std::vector<DeviceId> dev) {
  Plan p;
  p.device = std::move(dev);
  orderByUpwardRank(t, p);
  return p;
}

}  // namespace

class TestSimulator : public QObject {
  Q_OBJECT
 private slots:
  void criticalPathOfTheHeftExample() {
    auto t = test::testTaskGraph("heft2002.json");
    QVERIFY2(t, t.message().c_str());
    auto plan = findScheduler("heft")->schedule(*t, {}, {});
    QVERIFY2(plan, plan.message().c_str());
    auto tl = simulate(*t, *plan);
    QVERIFY2(tl, tl.message().c_str());
    const CriticalPath cp = criticalPath(*t, *plan, *tl);
    QCOMPARE(cp.task.size(), size_t(t->numTasks()));
    QCOMPARE(cp.edge.size(), t->edges.size());
    // It ends at the task that ends last (T10, the sink, at the paper's 80) and starts at the source T1.
    TaskId last = 0;
    for (TaskId v = 1; v < t->numTasks(); ++v)
      if (tl->tasks[size_t(v)].end > tl->tasks[size_t(last)].end) last = v;
    QCOMPARE(tl->tasks[size_t(last)].end, 80.0);
    QVERIFY(cp.task[size_t(last)]);
    QVERIFY(cp.task[0]);
    // A marked edge joins two tasks on the path; a chain of n tasks has at most n - 1 of them.
    int tasks = 0, edges = 0;
    for (auto x : cp.task) tasks += x;
    for (size_t e = 0; e < cp.edge.size(); ++e) {
      if (!cp.edge[e]) continue;
      ++edges;
      QVERIFY(cp.task[size_t(t->edges[e].src)] && cp.task[size_t(t->edges[e].dst)]);
    }
    QVERIFY(edges >= 1 && edges <= tasks - 1);
    // A plan that is not the timeline's: nothing marked, no crash.
    Plan other = *plan;
    other.device.pop_back();
    const CriticalPath none = criticalPath(*t, other, *tl);
    for (auto x : none.task) QVERIFY(!x);
  }

  void chainAcrossDevicesPaysTransfers() {
    Builder b(2);
    auto a = b.task("a", {10, 20});
    auto x = b.task("x", {30, 5});
    auto c = b.task("c", {7, 9});
    b.edge(a, x, 4000);  // 1 + 4 = 5 us
    b.edge(x, c, 2000);  // 1 + 2 = 3 us
    auto t = b.done();
    auto tl = simulate(t, planOf(t, {0, 1, 0}));
    QVERIFY2(tl.isOk(), tl.message().c_str());
    QCOMPARE(tl->tasks[1].start, 15.0);
    QCOMPARE(tl->tasks[2].start, 23.0);
    QCOMPARE(tl->makespan, 30.0);
    QCOMPARE(tl->bytesMoved, 6000LL);
    QCOMPARE(tl->transfers.size(), size_t(2));
    // Everything on d0: the plain sum.
    auto one = simulate(t, planOf(t, {0, 0, 0}));
    QCOMPARE(one->makespan, 47.0);
    QCOMPARE(one->transfers.size(), size_t(0));
  }

  void resultSentOncePerDestination() {
    Builder b(2);
    auto a = b.task("a", {10, 10});
    auto x = b.task("x", {5, 5});
    auto y = b.task("y", {5, 5});
    b.edge(a, x, 9000);
    b.edge(a, y, 9000);
    auto t = b.done();
    auto tl = simulate(t, planOf(t, {0, 1, 1}));
    QCOMPARE(tl->transfers.size(), size_t(1));
    QCOMPARE(tl->bytesMoved, 9000LL);
    QCOMPARE(tl->makespan, 10.0 + 10.0 + 5.0 + 5.0);
  }

  void linkCarriesOneTransferAtATime() {
    Builder b(2);
    auto p1 = b.task("p1", {10, 100});
    auto p2 = b.task("p2", {100, 10});
    auto q1 = b.task("q1", {100, 10});
    auto q2 = b.task("q2", {10, 100});
    auto sink = b.task("sink", {1, 100});
    b.edge(p1, sink, 19000);  // 20 us
    b.edge(p2, q2, 0);
    (void)q1;
    auto t = b.done();
    // p1 on d0, then sink on d1 needs p1; and q1 (d1) feeds nothing. Two transfers on d0->d1 at once:
    Builder b2(2);
    auto a1 = b2.task("a1", {10, 100});
    auto a2 = b2.task("a2", {10, 100});
    auto z = b2.task("z", {100, 1});
    b2.edge(a1, z, 19000);  // 20 us each
    b2.edge(a2, z, 19000);
    auto t2 = b2.done();
    auto plan = planOf(t2, {0, 0, 1});
    auto contended = simulate(t2, plan);
    // a1 ends at 10 (or a2), its transfer 10..30; the other ends at 20, waits for the link until 30, arrives 50.
    QCOMPARE(contended->makespan, 51.0);
    SimOptions unlimited;
    unlimited.unlimitedLinks = true;
    auto free = simulate(t2, plan, unlimited);
    QCOMPARE(free->makespan, 41.0);
    QVERIFY(t.numTasks() == 5);
  }

  void exclusiveDevicesNeverOverlap() {
    Builder b(2);
    b.task("a", {10, kInf});
    b.task("b", {kInf, 10});
    auto t = b.done();
    auto parallel = simulate(t, planOf(t, {0, 1}));
    QCOMPARE(parallel->makespan, 10.0);
    t.exclusiveWith = {{1}, {0}};
    auto serial = simulate(t, planOf(t, {0, 1}));
    QCOMPARE(serial->makespan, 20.0);
    const auto& s = serial->tasks;
    QVERIFY(s[0].end <= s[1].start || s[1].end <= s[0].start);
  }

  void modelInputsAndOutputsLiveOnTheHost() {
    Builder b(2);
    auto a = b.task("a", {50, 10});
    b.t.inputBytes[static_cast<size_t>(a)] = 9000;   // 10 us host -> d1
    b.t.outputBytes[static_cast<size_t>(a)] = 4000;  // 5 us d1 -> host
    auto t = b.done();
    auto tl = simulate(t, planOf(t, {1}));
    QCOMPARE(tl->tasks[0].start, 10.0);
    QCOMPARE(tl->makespan, 25.0);
    QCOMPARE(tl->bytesMoved, 13000LL);
  }

  /// A device whose transfers run inline (the CUDA backend's kernels copy their own host inputs and
  /// outputs): a transfer to or from it occupies it, inside its task, instead of a link beside it.
  void inlineCopiesOccupyTheDevice() {
    Builder b(2);
    auto a = b.task("a", {10, 100});
    auto h = b.task("h", {100, 12});  // on d1 before g, independent of a
    auto g = b.task("g", {100, 20});
    auto c = b.task("c", {7, 100});
    b.edge(a, g, 4000);  // 1 + 4 = 5 us
    b.edge(g, c, 2000);  // 1 + 2 = 3 us
    auto t = b.done();
    Plan plan;
    plan.device = {0, 1, 1, 0};
    plan.order = {{a, c}, {h, g}};
    // On a link: the upload runs 10..15 while h still runs on d1; g 15..35; the download 35..38.
    auto linked = simulate(t, plan);
    QVERIFY2(linked.isOk(), linked.message().c_str());
    QCOMPARE(linked->tasks[static_cast<size_t>(g)].start, 15.0);
    QCOMPARE(linked->makespan, 45.0);
    // Inline on d1: g starts when d1 is free (12) and takes 5 + 20 + 3; c reads its result at its end.
    t.deviceInlineCopies = {0, 1};
    auto inl = simulate(t, plan);
    QVERIFY2(inl.isOk(), inl.message().c_str());
    QCOMPARE(inl->tasks[static_cast<size_t>(g)].start, 12.0);
    QCOMPARE(inl->tasks[static_cast<size_t>(g)].end, 40.0);
    QCOMPARE(inl->tasks[static_cast<size_t>(c)].start, 40.0);
    QCOMPARE(inl->makespan, 47.0);
    for (const auto& tr : inl->transfers) QCOMPARE(tr.end - tr.start, 0.0);  // nothing on a link
    FastSim fast(t, SimOptions{});
    QCOMPARE(fast.run(plan), 47.0);
    // Model inputs and outputs of a task on d1: uploaded and downloaded by the task itself.
    Builder b2(2);
    auto x = b2.task("x", {50, 10});
    b2.t.inputBytes[static_cast<size_t>(x)] = 9000;   // 10 us host -> d1
    b2.t.outputBytes[static_cast<size_t>(x)] = 4000;  // 5 us d1 -> host
    auto t2 = b2.done();
    t2.deviceInlineCopies = {0, 1};
    auto io = simulate(t2, planOf(t2, {1}));
    QVERIFY2(io.isOk(), io.message().c_str());
    QCOMPARE(io->tasks[0].start, 0.0);
    QCOMPARE(io->tasks[0].end, 25.0);
    QCOMPARE(io->makespan, 25.0);
  }

  /// A CPU reader that converts its input (a convolution or pool fed a GPU's row-major result) pays the
  /// conversion at the inline device's reader rate, on its own device; other readers do not.
  void readerConvertsAnInlineDevicesResult() {
    Builder b(3);
    auto g = b.task("g", {100, 10, 100});
    auto conv = b.task("conv", {7, 100, 7});
    auto relu = b.task("relu", {4, 100, 4});
    b.edge(g, conv, 4000);
    b.edge(g, relu, 4000);
    auto t = b.done();
    t.deviceKinds = {"cpu", "gpu", "cpu"};
    t.deviceInlineCopies = {0, 1, 0};
    t.deviceReaderConvertBytesPerUs = {0, 500, 0};  // 4000 bytes: 8 us
    t.taskConvertsInput = {0, 1, 0};
    Plan plan;
    plan.device = {1, 0, 2};
    plan.order = {{conv}, {g}, {relu}};
    auto tl = simulate(t, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    // g: 10 + the download (1 + 4 = 5); both readers start at its end, 15.
    QCOMPARE(tl->tasks[static_cast<size_t>(g)].end, 15.0);
    QCOMPARE(tl->tasks[static_cast<size_t>(conv)].start, 15.0);
    QCOMPARE(tl->tasks[static_cast<size_t>(conv)].end, 15.0 + 8.0 + 7.0);
    QCOMPARE(tl->tasks[static_cast<size_t>(relu)].end, 15.0 + 4.0);
    FastSim fast(t, SimOptions{});
    QCOMPARE(fast.run(plan), 30.0);
    // The conversion is the reader's only when the producer is elsewhere: all on d0, none.
    plan.device = {0, 0, 0};
    plan.order = {{g, conv, relu}, {}, {}};
    auto one = simulate(t, plan);
    QVERIFY2(one.isOk(), one.message().c_str());
    QCOMPARE(one->makespan, 111.0);
  }

  void refusesBadPlans() {
    Builder b(2);
    auto a = b.task("a", {10, kInf});
    auto c = b.task("c", {10, 10});
    b.edge(a, c, 0);
    auto t = b.done();
    Plan p;
    p.device = {1, 0};
    p.order = {{c}, {a}};
    auto r = simulate(t, p);
    QVERIFY(!r.isOk());
    QVERIFY2(QString::fromStdString(r.message()).contains("'a'"), r.message().c_str());
    Plan dead;
    dead.device = {0, 0};
    dead.order = {{c, a}, {}};
    auto d = simulate(t, dead);
    QVERIFY(!d.isOk());
    QVERIFY2(QString::fromStdString(d.message()).contains("deadlock"), d.message().c_str());
  }

  void peakBytesAndCapacity() {
    Builder b(1);
    auto a = b.task("a", {1});
    auto x = b.task("x", {1});
    auto c = b.task("c", {1});
    b.edge(a, x, 100);
    b.edge(x, c, 100);
    b.edge(a, c, 100);
    b.t.work.assign(3, OpWork{});
    b.t.work[0].bytesWritten = 100;
    b.t.work[1].bytesWritten = 50;
    b.t.work[2].bytesWritten = 10;
    b.t.memCapacity = {120};
    auto t = b.done();
    auto tl = simulate(t, planOf(t, {0, 0, 0}));
    // a (100) lives until c ends; x (50) from 1 to 3; c (10) from 2: peak 160 at [2,3).
    QCOMPARE(tl->peakBytes[0], 160LL);
    QCOMPARE(tl->overCapacity[0], true);
  }

  void moveResimulatesAndRefusesImpossible() {
    Builder b(2);
    auto a = b.task("a", {10, 10});
    auto x = b.task("x", {40, 10});
    auto y = b.task("y", {40, 10});
    auto z = b.task("z", {5, kInf});
    b.edge(a, x, 0);
    b.edge(a, y, 0);
    b.edge(x, z, 0);
    b.edge(y, z, 0);
    auto t = b.done();
    Plan p = planOf(t, {0, 0, 0, 0});
    Simulator sim(t);
    auto before = sim.run(p);
    QCOMPARE(before->makespan, 95.0);
    auto after = sim.move(p, x, 1);
    QVERIFY2(after.isOk(), after.message().c_str());
    QCOMPARE(p.device[static_cast<size_t>(x)], 1);
    QCOMPARE(after->makespan, 10.0 + 40.0 + 5.0);  // x runs on d1 (11..21, back at 22) while y runs on d0
    auto refused = sim.move(p, z, 1);
    QVERIFY(!refused.isOk());
    QCOMPARE(p.device[static_cast<size_t>(z)], 0);
    auto back = sim.move(p, x, 0);
    QCOMPARE(back->makespan, 95.0);
  }

  void moveKeepsOrdersDeadlockFreeOnRandomGraphs() {
    // Random DAGs, random moves: every move re-simulates without a deadlock.
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
      Builder b(3);
      const int n = 30;
      for (int i = 0; i < n; ++i) b.task("t" + std::to_string(i), {double(rng() % 20), double(rng() % 20), double(rng() % 20)});
      for (int i = 1; i < n; ++i)
        for (int k = 0; k < 2; ++k) b.edge(static_cast<TaskId>(rng() % i), i, int64_t(rng() % 5000));
      // Deduplicate edges.
      std::sort(b.t.edges.begin(), b.t.edges.end(), [](const Edge& x, const Edge& y) { return std::tie(x.src, x.dst) < std::tie(y.src, y.dst); });
      b.t.edges.erase(std::unique(b.t.edges.begin(), b.t.edges.end(), [](const Edge& x, const Edge& y) { return x.src == y.src && x.dst == y.dst; }), b.t.edges.end());
      auto t = b.done();
      std::vector<DeviceId> dev(n);
      for (auto& d : dev) d = static_cast<DeviceId>(rng() % 3);
      Plan p = planOf(t, dev);
      Simulator sim(t);
      for (int k = 0; k < 50; ++k) {
        auto r = sim.move(p, static_cast<TaskId>(rng() % n), static_cast<DeviceId>(rng() % 3));
        QVERIFY2(r.isOk(), r.message().c_str());
      }
    }
  }

  // ---- The search's fast path (sim/fastsim.h) and simulate() step through the same rules ----------

  /// A random plan: every task on a random device that can run it, each device's tasks in a random
  /// topological order; with `scramble`, one device's order shuffled (which may deadlock).
  static Plan randomPlan(const CostTable& t, std::mt19937_64& rng, bool scramble) {
    const int n = t.numTasks(), m = t.numDevices();
    Plan p;
    p.device.resize(static_cast<size_t>(n));
    for (TaskId v = 0; v < n; ++v) {
      std::vector<DeviceId> al;
      for (DeviceId d = 0; d < m; ++d)
        if (t.canRun(v, d)) al.push_back(d);
      p.device[static_cast<size_t>(v)] = al[rng() % al.size()];
    }
    std::vector<int> indeg(static_cast<size_t>(n), 0);
    for (const auto& e : t.edges) ++indeg[static_cast<size_t>(e.dst)];
    std::vector<TaskId> ready;
    for (TaskId v = 0; v < n; ++v)
      if (!indeg[static_cast<size_t>(v)]) ready.push_back(v);
    p.order.assign(static_cast<size_t>(m), {});
    while (!ready.empty()) {
      const size_t k = rng() % ready.size();
      const TaskId v = ready[k];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(k));
      p.order[static_cast<size_t>(p.device[static_cast<size_t>(v)])].push_back(v);
      for (int32_t ei : t.outEdges[static_cast<size_t>(v)])
        if (--indeg[static_cast<size_t>(t.edges[static_cast<size_t>(ei)].dst)] == 0) ready.push_back(t.edges[static_cast<size_t>(ei)].dst);
    }
    if (scramble) {
      auto& ord = p.order[rng() % p.order.size()];
      std::shuffle(ord.begin(), ord.end(), rng);
    }
    return p;
  }

  void fastPathAgreesWithSimulate_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("platform");
    for (const char* g : {"heft2002.json", "peft2014.json", "forkjoin29.json"}) QTest::newRow(g) << QString(g) << QString();
    // Generated models on presets: links that contend (cpu-gpu-pcie), shared memory between four
    // devices (mobile-soc), exclusive devices and ops only some devices run (pim).
    for (const char* kind : {"random", "mobilenetv2", "bert"})
      for (const char* plat : {"cpu-gpu-pcie", "mobile-soc", "pim"})
        QTest::newRow((std::string(kind) + "@" + plat).c_str()) << QString(kind) << QString(plat);
    // Fused kernels known from a profile (a split group pays the unfused costs).
    QTest::newRow("fused resnet18") << QString("fused") << QString();
    // A GPU whose transfers run inline (Device::copies): its tasks' durations depend on where their
    // producers and consumers are.
    for (const char* kind : {"random", "mobilenetv2"})
      QTest::newRow((std::string(kind) + "@cpu-gpu-pcie inline copies").c_str()) << QString(kind) << QString("cpu-gpu-pcie+inline");
  }

  void fastPathAgreesWithSimulate() {
    QFETCH(QString, source);
    QFETCH(QString, platform);
    CostTable t;
    if (source.endsWith(".json")) {
      auto tg = test::testTaskGraph(source.toStdString());
      QVERIFY2(tg.isOk(), tg.isOk() ? "" : tg.message().c_str());
      t = std::move(tg).value();
    } else if (source == "fused") {
      auto fp = test::fusedProblem();
      QVERIFY2(fp.error.empty(), fp.error.c_str());
      QVERIFY(!fp.table.fusedGroups.empty());
      t = std::move(fp.table);
    } else {
      GenSpec spec;
      spec.kind = source.toStdString();
      spec.imageSize = 32;
      spec.numClasses = 10;
      spec.layers = 1;
      spec.seqLen = 8;
      spec.hidden = 32;
      spec.heads = 2;
      spec.nodes = 60;
      auto bytes = generateModel(spec);
      QVERIFY2(bytes.isOk(), bytes.isOk() ? "" : bytes.message().c_str());
      auto g = importOnnxBytes(*bytes, spec.kind + ".onnx");
      QVERIFY2(g.isOk(), g.isOk() ? "" : g.message().c_str());
      const bool inlineCopies = platform.endsWith("+inline");
      auto p = loadPreset(platform.section('+', 0, 0).toStdString());
      QVERIFY2(p.isOk(), p.isOk() ? "" : p.message().c_str());
      if (inlineCopies)
        for (Device& d : p->devices)
          if (d.kind == DeviceKind::Gpu) d.copies = "inline";
      auto tt = buildCostTable(*g, characteriseAll(*g), *p);
      QVERIFY2(tt.isOk(), tt.isOk() ? "" : tt.message().c_str());
      t = std::move(tt).value();
    }
    QVERIFY(t.numTasks() > 0);
    std::mt19937_64 rng(7);
    int simulated = 0, deadlocked = 0;
    for (bool unlimited : {false, true}) {
      SimOptions so;
      so.unlimitedLinks = unlimited;
      FastSim fast(t, so);
      for (int trial = 0; trial < 150; ++trial) {
        const Plan p = randomPlan(t, rng, trial % 5 == 4);
        const double ms = fast.run(p);
        auto tl = simulate(t, p, so);
        if (!tl) {
          QCOMPARE(ms, -1.0);  // both see the deadlock
          ++deadlocked;
          continue;
        }
        ++simulated;
        // Bit for bit: the same decisions and the same arithmetic.
        QVERIFY2(ms == tl->makespan, qPrintable(QString("trial %1: fast %2, simulate %3").arg(trial).arg(ms, 0, 'g', 17).arg(tl->makespan, 0, 'g', 17)));
        for (TaskId v = 0; v < t.numTasks(); ++v) {
          const auto& slot = tl->tasks[static_cast<size_t>(v)];
          QVERIFY2(fast.start()[static_cast<size_t>(v)] == slot.start && fast.finish()[static_cast<size_t>(v)] == slot.end,
                   qPrintable(QString("trial %1, task %2").arg(trial).arg(QString::fromStdString(t.taskNames[static_cast<size_t>(v)]))));
        }
      }
    }
    QVERIFY(simulated >= 240);  // most plans run: the comparison is not vacuous
    Q_UNUSED(deadlocked);
  }
};

QTEST_APPLESS_MAIN(TestSimulator)
#include "tst_simulator.moc"
