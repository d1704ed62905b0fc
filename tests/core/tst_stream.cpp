// Streams of inferences (issue 29): the steady-state period and latency of a plan's stream, hand-counted
// on small chains; the in-flight bound; the pipeline programme's stages; best under the throughput
// objective against every single device and the pipeline, and within a latency bound.
#include <QtTest>

#include <string>

#include "cost/costtable.h"
#include "sched/algorithms.h"
#include "sched/scheduler.h"
#include "sim/stream.h"

using namespace partex;

namespace {

/// A chain T0 -> T1 -> T2 -> T3 on devices P0, P1 (and P01 when `third` > 0, costing `third` per
/// task), every task `w` us on P0 and P1, edges of `edgeUs` us between two devices.
CostTable chain(double w, double edgeUs, double third = 0) {
  std::string devs = third > 0 ? R"(["P0","P1","P01"])" : R"(["P0","P1"])";
  auto cost = [&](double x) {
    return third > 0 ? "[" + std::to_string(x) + "," + std::to_string(x) + "," + std::to_string(third) + "]"
                     : "[" + std::to_string(x) + "," + std::to_string(x) + "]";
  };
  const std::string e = std::to_string(edgeUs);
  const std::string json = R"({"devices": )" + devs + R"(, "tasks": {"T0": )" + cost(w) + R"(, "T1": )" + cost(w) +
                           R"(, "T2": )" + cost(w) + R"(, "T3": )" + cost(w) + R"(}, "edges": [["T0","T1",)" + e +
                           R"(],["T1","T2",)" + e + R"(],["T2","T3",)" + e + "]]}";
  auto t = parseTaskGraph(json, "chain.json");
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

/// The plan putting task v on dev[v], each device's tasks in index (= topological) order.
Plan planOf(const CostTable& t, const std::vector<DeviceId>& dev) {
  Plan p;
  p.device = dev;
  p.order.assign(static_cast<size_t>(t.numDevices()), {});
  for (TaskId v = 0; v < t.numTasks(); ++v) p.order[static_cast<size_t>(dev[static_cast<size_t>(v)])].push_back(v);
  return p;
}

double streamPeriod(const CostTable& t, const Plan& p) {
  auto s = simulateStream(t, p);
  if (!s) qFatal("%s", s.message().c_str());
  return s->periodUs;
}

}  // namespace

class TestStream : public QObject {
  Q_OBJECT

 private slots:
  // Two stages of 20 us each: one inference every 20 us, each 40 us long.
  void twoStagesHandCount() {
    const CostTable t = chain(10, 0);
    auto s = simulateStream(t, planOf(t, {0, 0, 1, 1}));
    QVERIFY2(s, s ? "" : s.message().c_str());
    QCOMPARE(s->singleLatencyUs, 40.0);
    QCOMPARE(s->periodUs, 20.0);
    QCOMPARE(s->throughputPerS, 50000.0);
    QCOMPARE(s->latencyUs, 40.0);
    QCOMPARE(s->inFlight, 3);  // two devices used, plus one
    QCOMPARE(s->busyPerInference[0], 20.0);
    QCOMPARE(s->busyPerInference[1], 20.0);
    // Inference i ends at 40 + 20 i.
    for (int i = 0; i < s->inferences; ++i) QCOMPARE(s->end[static_cast<size_t>(i)], 40.0 + 20.0 * i);
  }

  // Everything on one device: no overlap, the period is the makespan.
  void oneDevice() {
    const CostTable t = chain(10, 0);
    QCOMPARE(streamPeriod(t, planOf(t, {0, 0, 0, 0})), 40.0);
  }

  // One inference in flight: the second stage's device cannot take the next one early.
  void inFlightBound() {
    const CostTable t = chain(10, 0);
    StreamOptions o;
    o.inFlight = 1;
    auto s = simulateStream(t, planOf(t, {0, 0, 1, 1}), o);
    QVERIFY(s);
    QCOMPARE(s->periodUs, 40.0);
    o.inFlight = 2;
    s = simulateStream(t, planOf(t, {0, 0, 1, 1}), o);
    QVERIFY(s);
    QCOMPARE(s->periodUs, 20.0);
  }

  // An unbalanced split: the slower stage sets the period; a transfer between stages (which occupies
  // no device) adds to the latency only.
  void unbalancedAndTransfer() {
    const CostTable t = chain(10, 5);
    auto s = simulateStream(t, planOf(t, {0, 0, 0, 1}));
    QVERIFY(s);
    QCOMPARE(s->periodUs, 30.0);
    QCOMPARE(s->bottleneck, DeviceId{0});
    // Inference i: P0 [30 i, 30 i + 30], transfer 5, P1 [30 i + 35, 30 i + 45]: 45 us each.
    QCOMPARE(s->latencyUs, 45.0);
    QCOMPARE(s->singleLatencyUs, 45.0);
  }

  // The unrolled table: copies of the tasks and edges plus the in-flight tokens.
  void unrolledTable() {
    const CostTable t = chain(10, 0);
    const CostTable u = unrollStream(t, 5, 2);
    QCOMPARE(u.numTasks(), 20);
    QCOMPARE(u.taskNames[7], std::string("T3#1"));
    // 3 edges per copy, and one token (T3 of i - 2 -> T0 of i) for i = 2..4.
    QCOMPARE(u.edges.size(), size_t{15 + 3});
    QCOMPARE(u.edges.back().src, TaskId{3 + 2 * 4});
    QCOMPARE(u.edges.back().dst, TaskId{0 + 4 * 4});
    // Every task-graph edge is its own data item: each copy's items are its own, and so are the tokens'.
    QCOMPARE(t.numItems, 3);
    QCOMPARE(u.edges[3].item, 3);  // copy 1's first edge
    QCOMPARE(u.edges[14].item, 14);
    QCOMPARE(u.numItems, 15 + 3);
  }

  // The pipeline programme splits the chain 2 / 2; with a faster device exclusive with both (a
  // multi-core device and its cores) it uses that one alone when it is faster, never with the others.
  void pipelineProgramme() {
    const CostTable t = chain(10, 0);
    auto p = makePipeline()->schedule(t, {}, {});
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(streamPeriod(t, *p), 20.0);
    QVERIFY(p->device[0] == p->device[1] && p->device[2] == p->device[3] && p->device[1] != p->device[2]);

    CostTable x = chain(10, 0, 6);
    x.exclusiveWith = {{2}, {2}, {0, 1}};
    p = makePipeline()->schedule(x, {}, {});
    QVERIFY(p);
    QCOMPARE(streamPeriod(x, *p), 20.0);  // P01 alone: 24
    for (DeviceId d : p->device) QVERIFY(d != 2);
    x = chain(10, 0, 4);
    x.exclusiveWith = {{2}, {2}, {0, 1}};
    p = makePipeline()->schedule(x, {}, {});
    QVERIFY(p);
    QCOMPARE(streamPeriod(x, *p), 16.0);
    for (DeviceId d : p->device) QCOMPARE(d, DeviceId{2});
  }

  // best under the throughput objective: never worse than the pipeline or any single device; within a
  // latency bound it gives up period for latency.
  void bestThroughput() {
    const CostTable t = chain(10, 5);
    SchedOptions o;
    o.objective = Objective::Throughput;
    o.timeLimitSec = 2;
    auto p = findScheduler("best")->schedule(t, {}, o);
    QVERIFY2(p, p ? "" : p.message().c_str());
    const double best = streamPeriod(t, *p);
    QCOMPARE(best, 20.0);  // 2 / 2 split: 20 per stage, the transfer on its own
    for (DeviceId d = 0; d < t.numDevices(); ++d) QVERIFY(best <= streamPeriod(t, planOf(t, {d, d, d, d})));
    auto pp = makePipeline()->schedule(t, {}, {});
    QVERIFY(pp);
    QVERIFY(best <= streamPeriod(t, *pp));
    // Bound 42 us: the split's 45 us latency is out; one device (40 us latency, 40 us period) is in.
    o.latencyBoundUs = 42;
    p = findScheduler("best")->schedule(t, {}, o);
    QVERIFY(p);
    auto s = simulateStream(t, *p);
    QVERIFY(s);
    QVERIFY2(s->latencyUs <= 42.0, std::to_string(s->latencyUs).c_str());
    QCOMPARE(s->periodUs, 40.0);
  }

  // Pins hold: a task pinned to P1 in the first stage's place moves the split.
  void pipelinePins() {
    const CostTable t = chain(10, 0);
    Constraints c;
    c.pinned[0] = 1;
    auto p = makePipeline()->schedule(t, c, {});
    QVERIFY(p);
    QCOMPARE(p->device[0], DeviceId{1});
    QCOMPARE(streamPeriod(t, *p), 20.0);
  }

  // Pins at both ends on one device: no split on distinct devices exists; the relaxed programme still
  // gives a plan, the pins held.
  void pipelineRelaxed() {
    const CostTable t = chain(10, 0);
    Constraints c;
    c.pinned[0] = 1;
    c.pinned[3] = 1;
    auto p = makePipeline()->schedule(t, c, {});
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(p->device[0], DeviceId{1});
    QCOMPARE(p->device[3], DeviceId{1});
    // P1 holds the first and the last operator: in order, it runs inference i's T3 before inference
    // i+1's T0, so nothing overlaps: the period is a whole inference, 40 us, as on one device.
    QCOMPARE(streamPeriod(t, *p), 40.0);
  }

  // Stages of a chain T0..T3 on P0, P0, P1, P01: three runs; the boundary moves of the GUI's stage strip.
  void stagesAndBoundaryMoves() {
    const CostTable t = chain(10, 0, 5);
    const std::vector<TaskId> topo = t.topoOrder();
    QCOMPARE(topo, (std::vector<TaskId>{0, 1, 2, 3}));
    const auto st = planStages(planOf(t, {0, 0, 1, 2}), topo);
    QCOMPARE(st.size(), size_t{3});
    QCOMPARE(st[0].device, 0);
    QCOMPARE(st[0].begin, 0);
    QCOMPARE(st[0].end, 2);
    QCOMPARE(st[1].device, 1);
    QCOMPARE(st[1].size(), 1);
    QCOMPARE(st[2].device, 2);
    QCOMPARE(st[2].end, 4);
    // Left by one: T1 goes to stage 1's device.
    auto m = stageBoundaryMove(st, topo, 0, -1);
    QCOMPARE(m.ops, std::vector<TaskId>{1});
    QCOMPARE(m.device, 1);
    // Left by five: clamped, stage 0 keeps T0.
    m = stageBoundaryMove(st, topo, 0, -5);
    QCOMPARE(m.ops, std::vector<TaskId>{1});
    // Right from boundary 0: stage 1 has one operator to give, and keeps it.
    QVERIFY(stageBoundaryMove(st, topo, 0, 1).ops.empty());
    QCOMPARE(stageBoundaryMove(st, topo, 0, 1).device, -1);
    // Boundary 1, left by one: T2 to P01. No boundary 2, no shift 0.
    m = stageBoundaryMove(st, topo, 1, -1);
    QVERIFY(m.ops.empty());  // stage 1 keeps its only operator
    QVERIFY(stageBoundaryMove(st, topo, 2, -1).ops.empty());
    QVERIFY(stageBoundaryMove(st, topo, 0, 0).ops.empty());
    // One stage per run: a plan that returns to a device has four.
    QCOMPARE(planStages(planOf(t, {0, 1, 0, 1}), topo).size(), size_t{4});
    QVERIFY(planStages(Plan{}, {}).empty());
    // Right from a longer stage: {0, 1, 1, 1} boundary 0 by +2 gives T1, T2 to P0.
    m = stageBoundaryMove(planStages(planOf(t, {0, 1, 1, 1}), topo), topo, 0, 2);
    QCOMPARE(m.ops, (std::vector<TaskId>{1, 2}));
    QCOMPARE(m.device, 0);
  }
};

QTEST_GUILESS_MAIN(TestStream)
#include "tst_stream.moc"
