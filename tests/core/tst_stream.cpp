// Streams of inferences (issue 29): the steady-state period and latency of a plan's stream, hand-counted
// on small chains; the in-flight bound; the pipeline programme's stages; best under the throughput
// objective against every single device and the pipeline, and within a latency bound.
#include <QtTest>

#include <cmath>
#include <string>

#include "cost/costtable.h"
#include "sched/algorithms.h"
#include "sched/scheduler.h"
#include "sim/contention.h"
#include "sim/handoff.h"
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

/// Devices POOL (a two-core CPU device, exclusive with both cores), C0 and C1 (one core each); a chain
/// A -> B whose every task is memory-bound on the cores: `bytes[v]` bytes at 100 bytes/us (so w = bytes
/// / 100 us, the cost given), `flops[v]` at 1000 flops/us. The pool streams `poolBytesPerUs` together:
/// 100 is one core's rate (two cores at once get half each), 200 twice it (no sharing).
CostTable sharedMemoryChain(std::vector<double> costUs, std::vector<int64_t> bytes, std::vector<int64_t> flops,
                            double poolBytesPerUs) {
  const std::string json = R"({"devices": ["POOL","C0","C1"], "tasks": {"A": [)" + std::to_string(costUs[0]) + "," +
                           std::to_string(costUs[0]) + "," + std::to_string(costUs[0]) + R"(], "B": [)" +
                           std::to_string(costUs[1]) + "," + std::to_string(costUs[1]) + "," + std::to_string(costUs[1]) +
                           R"(]}, "edges": [["A","B",0]]})";
  auto t = parseTaskGraph(json, "shared.json");
  if (!t) qFatal("%s", t.message().c_str());
  t->deviceKinds = {"cpu", "cpu", "cpu"};
  t->deviceCores = {2, 1, 1};
  t->exclusiveWith = {{1, 2}, {0}, {0}};
  t->work.resize(2);
  for (size_t v = 0; v < 2; ++v) {
    t->work[v].cls = OpClass::Elementwise;
    t->work[v].bytesReadActivations = bytes[v] / 2;
    t->work[v].bytesWritten = bytes[v] - bytes[v] / 2;
    t->work[v].flops = flops[v];
  }
  t->groupRoofline = [poolBytesPerUs](DeviceId d, OpClass, DType, int64_t f, int64_t b) {
    RooflineParts r;
    r.memoryUs = static_cast<double>(b) / (d == 0 ? poolBytesPerUs : 100.0);
    r.computeUs = static_cast<double>(f) / 1000.0;
    return r;
  };
  return *t;
}

/// This machine's four CPU devices as a table: S (cpu-serial, on core 0), PAR (a two-core team, led from
/// core 0), C0 and C1 (one core each); S, C0 and PAR exclusive with each other, PAR with C1. A chain
/// T0 -> T1 -> T2 -> T3, every task 10 us everywhere. Handoffs (sim/handoff.h): a wake-up of `wakeUs` on
/// every device, a mode switch of `switchUs` on PAR.
CostTable cpuHandoffChain(double wakeUs, double switchUs) {
  auto t = parseTaskGraph(R"({"devices": ["S","PAR","C0","C1"], "tasks": {"T0": [10,10,10,10], "T1": [10,10,10,10],
                             "T2": [10,10,10,10], "T3": [10,10,10,10]},
                             "edges": [["T0","T1",0],["T1","T2",0],["T2","T3",0]]})",
                          "cpus.json");
  if (!t) qFatal("%s", t.message().c_str());
  t->deviceKinds = {"cpu", "cpu", "cpu", "cpu"};
  t->deviceCores = {1, 2, 1, 1};
  t->exclusiveWith = {{1, 2}, {0, 2, 3}, {0, 1}, {1}};
  t->deviceWakeUpUs = {wakeUs, wakeUs, wakeUs, wakeUs};
  t->deviceModeSwitchUs = {0, switchUs, 0, 0};
  return *t;
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

  // A stage on a device exclusive with the busy one (this machine's core0 beside cpu-parallel): PAR runs
  // T0-T2 (30 us), C0 runs T3 (1 us), never at once. PAR is busy back to back until the in-flight bound
  // (3) stops it, so T3 of inference c runs only then: c ends at 91 + 31 c, starts at 31 c - 2 (c >= 3),
  // latency 93 us; period 31 us = 30 + 1. The last two inferences (the drain: no inference after them
  // keeps PAR busy) get their T3 at once, 1 us apart: a period over the last half, as before, was
  // (434 - 277) / 7 = 22.4 us, 28% below what a long stream reaches.
  void exclusiveStageDrain() {
    auto t = parseTaskGraph(R"({"devices": ["PAR","C0"], "tasks": {"T0": [10,10], "T1": [10,10], "T2": [10,10],
                               "T3": [1,1]}, "edges": [["T0","T1",0],["T1","T2",0],["T2","T3",0]]})",
                            "exclusive.json");
    QVERIFY2(t, t ? "" : t.message().c_str());
    t->exclusiveWith = {{1}, {0}};
    auto s = simulateStream(*t, planOf(*t, {0, 0, 0, 1}));
    QVERIFY2(s, s ? "" : s.message().c_str());
    QCOMPARE(s->inFlight, 3);
    QCOMPARE(s->inferences, 14);
    for (int c = 0; c <= 11; ++c) QCOMPARE(s->end[static_cast<size_t>(c)], 91.0 + 31.0 * c);
    QCOMPARE(s->end[12], 433.0);
    QCOMPARE(s->end[13], 434.0);
    QCOMPARE(s->periodUs, 31.0);
    QCOMPARE(s->latencyUs, 93.0);
  }

  // Memory shared by cores running at once (sim/contention.h), hand-counted. Two memory-bound stages of
  // 10 us on C0 and C1, each always busy: with a pool no faster than one core, each gets half of it and
  // takes twice as long: a period of 20 us, where the one-core bandwidth gave 10.
  void sharedMemoryHalvesTheBandwidth() {
    const CostTable t = sharedMemoryChain({10, 10}, {1000, 1000}, {0, 0}, 100);
    QCOMPARE(memoryPools(t), (std::vector<DeviceId>{-1, 0, 0}));
    auto s = simulateStream(t, planOf(t, {1, 2}));
    QVERIFY2(s, s ? "" : s.message().c_str());
    QVERIFY2(std::abs(s->periodUs - 20.0) < 1e-9, qPrintable(QString::number(s->periodUs)));
    // The busy time per inference says so too.
    QVERIFY(std::abs(s->busyPerInference[1] - 20.0) < 1e-9 && std::abs(s->busyPerInference[2] - 20.0) < 1e-9);
    // A pool that streams twice one core's rate feeds both: no term.
    const CostTable wide = sharedMemoryChain({10, 10}, {1000, 1000}, {0, 0}, 200);
    QCOMPARE(streamPeriod(wide, planOf(wide, {1, 2})), 10.0);
    // One core alone (both stages on C0): nobody to share with.
    QCOMPARE(streamPeriod(t, planOf(t, {1, 1})), 20.0);
    // A task graph (no device kinds, no work): no pools, no term.
    QCOMPARE(memoryPools(chain(10, 0)), (std::vector<DeviceId>{-1, -1}));
  }

  // Compute hides the memory part: 20 us of compute over 10 us of memory stretched to 20 is not slowed.
  void sharedMemoryHiddenByCompute() {
    const CostTable t = sharedMemoryChain({20, 20}, {1000, 1000}, {20000, 20000}, 100);
    QCOMPARE(streamPeriod(t, planOf(t, {1, 2})), 20.0);
    // Half of it hidden: 15 us of compute, memory 10 -> 20 us: 20 us per stage, not 30.
    const CostTable half = sharedMemoryChain({15, 15}, {1000, 1000}, {15000, 15000}, 100);
    const double p = streamPeriod(half, planOf(half, {1, 2}));
    QVERIFY2(std::abs(p - 20.0) < 1e-9, qPrintable(QString::number(p)));
  }

  // Unbalanced: A 10 us on C0, B 5 us on C1, both memory-bound. B runs beside A all the time (A is the
  // bottleneck) and doubles to 10 us; A runs beside B a share B/A of its time: A' = 10 (1 + 10 / A'),
  // A' = 5 + sqrt(125) = 16.18 us, the fixed point the repeated simulation settles on.
  void sharedMemoryFixedPoint() {
    const CostTable t = sharedMemoryChain({10, 5}, {1000, 500}, {0, 0}, 100);
    auto s = simulateStream(t, planOf(t, {1, 2}));
    QVERIFY2(s, s ? "" : s.message().c_str());
    const double expected = 5.0 + std::sqrt(125.0);
    QVERIFY2(std::abs(s->periodUs - expected) < 0.01 * expected, qPrintable(QString::number(s->periodUs)));
    QCOMPARE(s->bottleneck, DeviceId(1));
    // The factor itself: memory-bound, half overlapped, s = 2: 1.5.
    SharedMemoryParts p;
    p.memoryUs = 10;
    p.poolRatio = 1.0;
    QCOMPARE(sharedMemoryFactor(p, 0.5, 0.5), 1.5);
    QCOMPARE(sharedMemoryFactor(p, 0.0, 0.0), 1.0);
    QCOMPARE(sharedMemoryFactor(p, 3.0, 1.0), 2.0);  // the overlap is a share: at most 1
    p.poolRatio = 0.5;                                // the pool streams twice one core's rate
    QCOMPARE(sharedMemoryFactor(p, 1.0, 1.0), 1.0);
  }

  // Replicas: the whole chain on C0 for even inferences, on C1 for odd ones, 10 us each. Alone they
  // would give one inference every 5 us; sharing a pool no faster than one core, every 10 us: two cores
  // no better than one when the model is bound by memory.
  void sharedMemoryReplicas() {
    const CostTable t = sharedMemoryChain({5, 5}, {500, 500}, {0, 0}, 100);
    Plan p = planOf(t, {1, 1});
    p.replicas = {{0, 2, 2}};
    auto s = simulateStream(t, p);
    QVERIFY2(s, s ? "" : s.message().c_str());
    QCOMPARE(s->replicas, 2);
    QVERIFY2(std::abs(s->periodUs - 10.0) < 1e-9, qPrintable(QString::number(s->periodUs)));
    const CostTable wide = sharedMemoryChain({5, 5}, {500, 500}, {0, 0}, 200);
    QCOMPARE(streamPeriod(wide, p), 5.0);
  }

  // Handoffs (sim/handoff.h), hand-counted. A pipeline C0 (T0, T1) -> C1 (T2, T3): C1's lane sleeps
  // until C0's output is ready and wakes 5 us later, which holds C1: a period of 25 us, not 20. T0's
  // input is the model's (no wake-up); S -> C0 is one CPU (exclusive: no wake-up).
  void handoffWakeUp() {
    const CostTable t = cpuHandoffChain(5, 0);
    const Plan p = planOf(t, {2, 2, 3, 3});
    auto single = simulate(t, p);
    QVERIFY2(single, single ? "" : single.message().c_str());
    QCOMPARE(streamHandoffUs(t, p, *single), (std::vector<double>{0, 0, 5, 0}));
    QCOMPARE(streamPeriod(t, p), 25.0);
    QCOMPARE(streamPeriod(cpuHandoffChain(0, 0), p), 20.0);  // without the costs, as before
    const Plan sameCpu = planOf(t, {0, 0, 2, 2});
    QCOMPARE(streamHandoffUs(t, sameCpu, *simulate(t, sameCpu)), (std::vector<double>(4, 0.0)));
    // Replicas run whole inferences on one core: no handoff at all.
    Plan twin = planOf(t, {2, 2, 2, 2});
    twin.replicas = {{0, 1, 3, 3}};
    QCOMPARE(streamPeriod(t, twin), 20.0);
  }

  // Mode switches: PAR, C1, PAR, C1 is strictly serial (PAR holds both cores). C1's lane (the team's
  // helper) changes between its own operators and the team's before every task, the first one included
  // (it follows the previous inference's T3 on C1): 4 x 7 us on top of 40, a period of 68 us. On the
  // leading CPU (S, C0) nothing is charged: PAR, S, PAR, S costs 40 us as before, and its only
  // wake-up-free handoffs (S and PAR share core 0).
  void handoffModeSwitch() {
    const CostTable t = cpuHandoffChain(0, 7);
    const Plan helper = planOf(t, {1, 3, 1, 3});
    auto single = simulate(t, helper);
    QVERIFY2(single, single ? "" : single.message().c_str());
    QCOMPARE(streamHandoffUs(t, helper, *single), (std::vector<double>{7, 7, 7, 7}));
    QCOMPARE(streamPeriod(t, helper), 68.0);
    const Plan leader = planOf(t, {1, 0, 1, 0});
    QCOMPARE(streamHandoffUs(t, leader, *simulate(t, leader)), (std::vector<double>(4, 0.0)));
    QCOMPARE(streamPeriod(t, leader), 40.0);
    // A run of team operators is one switch in and one out: PAR, PAR, C1, C1 pays at T2 and at T0.
    const Plan runs = planOf(t, {1, 1, 3, 3});
    QCOMPARE(streamHandoffUs(t, runs, *simulate(t, runs)), (std::vector<double>{7, 0, 7, 0}));
    QCOMPARE(streamPeriod(t, runs), 54.0);
    // Both: an operator waits once, for the larger (C1 after C0 is a wake-up, not a switch; PAR after
    // C1 a switch). C0, C1, PAR, C1: T1 wake-up 5, T2 switch 7, T3 switch 7, T0 (after T3 on C1, a
    // team operator before it on C1's lane) none: C0 is not the helper's.
    const CostTable both = cpuHandoffChain(5, 7);
    const Plan mixed = planOf(both, {2, 3, 1, 3});
    QCOMPARE(streamHandoffUs(both, mixed, *simulate(both, mixed)), (std::vector<double>{0, 5, 7, 7}));
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
    // Bound 42 us: the split's 45 us latency is out; one device has 40 us of latency, and with its twin
    // on the other device (replicas, every other inference each) a period of 20 us.
    o.latencyBoundUs = 42;
    p = findScheduler("best")->schedule(t, {}, o);
    QVERIFY(p);
    auto s = simulateStream(t, *p);
    QVERIFY(s);
    QVERIFY2(s->latencyUs <= 42.0, std::to_string(s->latencyUs).c_str());
    QCOMPARE(s->periodUs, 20.0);
    QCOMPARE(replicaCount(*p), 2);
  }

  // Two replicas on two equal devices (the whole chain on P0, its twin on P1), no transfers: each device
  // takes every other inference, whole: one ends every 20 us, half the 40 us of one inference, each
  // inference still 40 us long. In flight: 2 devices + 1 = 3, rounded up to 4 (a multiple of 2).
  void replicasHandCount() {
    const CostTable t = chain(10, 0);
    Plan p = planOf(t, {0, 0, 0, 0});
    p.replicas = {{1, 1}};  // P0's operators on P1 (P1 runs nothing in the plan itself)
    QVERIFY2(checkPlanShape(t, p).isOk(), checkPlanShape(t, p).message().c_str());
    QCOMPARE(devicesUsed(t, p), 2);
    QCOMPARE(defaultInFlight(t, p), 4);
    auto s = simulateStream(t, p);
    QVERIFY2(s, s ? "" : s.message().c_str());
    QCOMPARE(s->replicas, 2);
    QCOMPARE(s->inFlight, 4);
    QCOMPARE(s->inferences % 4, 0);  // whole rounds of the two replicas in each half
    QCOMPARE(s->singleLatencyUs, 40.0);
    QCOMPARE(s->periodUs, 20.0);
    QCOMPARE(s->latencyUs, 40.0);
    QCOMPARE(s->busyPerInference[0], 20.0);  // 40 us every other inference
    QCOMPARE(s->busyPerInference[1], 20.0);
    QCOMPARE(s->replicaBusy[0][0], 40.0);
    QCOMPARE(s->replicaBusy[1][1], 40.0);
    QCOMPARE(s->replicaBusy[1][0], 0.0);
    // Inferences 2k (P0) and 2k + 1 (P1) both run [40 k, 40 k + 40].
    for (int i = 0; i < s->inferences; ++i) {
      QCOMPARE(s->start[static_cast<size_t>(i)], 40.0 * (i / 2));
      QCOMPARE(s->end[static_cast<size_t>(i)], 40.0 * (i / 2) + 40.0);
    }
    // Two in flight are enough here (inference t + 2 enters its device as t leaves it); one is not.
    StreamOptions o;
    o.inFlight = 2;
    s = simulateStream(t, p, o);
    QVERIFY(s);
    QCOMPARE(s->periodUs, 20.0);
    o.inFlight = 1;
    s = simulateStream(t, p, o);
    QVERIFY(s);
    QCOMPARE(s->periodUs, 40.0);
    // The unrolled plan: copy 1 on P1, copies 0 and 2 on P0, in copy order on each device.
    const Plan u = unrollPlan(t, p, 3);
    QCOMPARE(u.device, (std::vector<DeviceId>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0}));
    QCOMPARE(u.order[0], (std::vector<TaskId>{0, 1, 2, 3, 8, 9, 10, 11}));
    QCOMPARE(u.order[1], (std::vector<TaskId>{4, 5, 6, 7}));
  }

  // Replicas that cannot be: two devices of the plan onto one, an unknown device, a map of the wrong
  // size, an operator its replica's device cannot run, a pin that a replica moves.
  void replicasRefused() {
    const CostTable t = chain(10, 0);
    Plan p = planOf(t, {0, 0, 1, 1});
    p.replicas = {{1, 1}};
    auto st = checkPlanShape(t, p);
    QVERIFY(!st.isOk());
    QVERIFY2(QString::fromStdString(st.message()).contains("replicas[0] runs the operators of both 'P0' and 'P1' on 'P1'"),
             st.message().c_str());
    QVERIFY(!simulateStream(t, p));
    p.replicas = {{1, 0}, {0, 7}};
    st = checkPlanShape(t, p);
    QVERIFY2(QString::fromStdString(st.message()).contains("replicas[1] renames 'P1' to an unknown device"), st.message().c_str());
    p.replicas = {{1}};
    st = checkPlanShape(t, p);
    QVERIFY2(QString::fromStdString(st.message()).contains("replicas[0] renames 1 devices, the platform has 2"),
             st.message().c_str());
    CostTable x = chain(10, 0);
    x.cost[1 * 2 + 1] = kInf;  // T1 cannot run on P1
    Plan q = planOf(x, {0, 0, 0, 0});
    q.replicas = {{1, 1}};
    st = checkPlanShape(x, q);
    QVERIFY2(QString::fromStdString(st.message()).contains("replicas[0]: operator 'T1' cannot run on 'P1'"),
             st.message().c_str());
    // The swap is a valid pair of replicas; a pin of T0 on P0 forbids it (replica 1 would run T0 on P1).
    p.replicas = {{1, 0}};
    QVERIFY(checkPlanShape(t, p).isOk());
    Constraints c;
    c.pinned[0] = 0;
    QVERIFY(!respectsConstraints(t, c, p));
    p.replicas.clear();
    QVERIFY(respectsConstraints(t, c, p));
  }

  // A hand move keeps the replicas while they still mirror the plan and drops them (as broken blocks)
  // when it breaks them.
  void handMovesAndReplicas() {
    const CostTable t = chain(10, 0);
    Plan swap = planOf(t, {0, 0, 1, 1});
    swap.replicas = {{1, 0}};  // replica 1: the stages' devices swapped
    Simulator sim(t);
    auto tl = sim.move(swap, 1, 1);  // T1 to P1: both devices still used, the swap still valid
    QVERIFY2(tl, tl ? "" : tl.message().c_str());
    QCOMPARE(swap.replicas, (std::vector<std::vector<DeviceId>>{{1, 0}}));
    Plan twin = planOf(t, {0, 0, 0, 0});
    twin.replicas = {{1, 1}};
    tl = sim.move(twin, 3, 1);  // T3 to P1: P0 and P1 would both run on P1 in replica 1
    QVERIFY2(tl, tl ? "" : tl.message().c_str());
    QVERIFY(twin.replicas.empty());
    QVERIFY(checkPlanShape(t, twin).isOk());
  }

  // best under the throughput objective keeps a replicated plan where it beats every pipeline: three
  // tasks of 10 us on two equal devices split at best 20 / 10 (period 20); the whole chain on each
  // device, every other inference, gives one every 15 us.
  void bestKeepsReplicas() {
    auto t = parseTaskGraph(R"({"devices": ["P0","P1"], "tasks": {"T0": [10,10], "T1": [10,10], "T2": [10,10]},
                               "edges": [["T0","T1",0],["T1","T2",0]]})",
                            "three.json");
    QVERIFY2(t, t ? "" : t.message().c_str());
    auto pp = makePipeline()->schedule(*t, {}, {});
    QVERIFY(pp);
    QCOMPARE(streamPeriod(*t, *pp), 20.0);
    SchedOptions o;
    o.objective = Objective::Throughput;
    o.timeLimitSec = 2;
    auto p = findScheduler("best")->schedule(*t, {}, o);
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(replicaCount(*p), 2);
    QCOMPARE(streamPeriod(*t, *p), 15.0);
    // A pin on P0 holds for every replica: no twin on P1, back to the best pipeline.
    Constraints c;
    c.pinned[1] = 0;
    p = findScheduler("best")->schedule(*t, c, o);
    QVERIFY(p);
    QCOMPARE(replicaCount(*p), 1);
    QCOMPARE(streamPeriod(*t, *p), 20.0);
  }

  // Weighted replicas: P1 takes twice P0's time (whole chain 40 and 80 us). Plain replicas alternate
  // (P1 sets the pace: two inferences per 80 us, 40 us); the best pipeline is 30 / 20 (30 us); P0
  // taking two of every three inferences ends three per 80 us: 26.67 us, which best keeps.
  void weightedReplicas() {
    auto t = parseTaskGraph(R"({"devices": ["P0","P1"], "tasks": {"T0": [10,20], "T1": [10,20], "T2": [10,20],
                               "T3": [10,20]}, "edges": [["T0","T1",0],["T1","T2",0],["T2","T3",0]]})",
                            "weighted.json");
    QVERIFY2(t, t ? "" : t.message().c_str());
    Plan plain = planOf(*t, {0, 0, 0, 0});
    plain.replicas = {{1, 1}};
    QCOMPARE(streamPeriod(*t, plain), 40.0);
    Plan weighted = planOf(*t, {0, 0, 0, 0});
    weighted.replicas = {{1, 1}, {0, 1}};  // P0, P1, P0, P0, P1, P0, ...
    auto s = simulateStream(*t, weighted);
    QVERIFY(s);
    QCOMPARE(s->inFlight, 3);
    QVERIFY2(std::fabs(s->periodUs - 80.0 / 3.0) < 1e-9, std::to_string(s->periodUs).c_str());
    SchedOptions o;
    o.objective = Objective::Throughput;
    o.timeLimitSec = 2;
    auto p = findScheduler("best")->schedule(*t, {}, o);
    QVERIFY2(p, p ? "" : p.message().c_str());
    QVERIFY2(streamPeriod(*t, *p) <= 80.0 / 3.0 + 1e-9, std::to_string(streamPeriod(*t, *p)).c_str());
  }

  // Next-free dispatch with unequal replicas: the chain takes 40 us on P0 and 80 us on P1. Each
  // inference goes to the replica free first (ties to P0): P0 at 0, P1 at 0, P0 at 40, P0 at 80 (both
  // free at 80), P1 at 80, P0 at 120, P0 at 160, ...: P0, P1, P0 repeated from inference 3, three
  // inferences per 80 us = 26.67 us, against 40 us round robin (P1 sets the pace), and as the weighted
  // listing [{P0: P1}, {}] reaches by hand.
  void nextFreeReplicas() {
    auto t = parseTaskGraph(R"({"devices": ["P0","P1"], "tasks": {"T0": [10,20], "T1": [10,20], "T2": [10,20],
                               "T3": [10,20]}, "edges": [["T0","T1",0],["T1","T2",0],["T2","T3",0]]})",
                            "unequal.json");
    QVERIFY2(t, t ? "" : t.message().c_str());
    QCOMPARE(nextFreeAssignment({40, 80}, 9), (std::vector<int>{0, 1, 0, 0, 1, 0, 0, 1, 0}));
    QCOMPARE(nextFreeAssignment({80, 40}, 6), (std::vector<int>{0, 1, 1, 0, 1, 1}));
    // Two contexts per replica (in flight 4): the j-th inference of a replica waits for its (j-2)-th.
    QCOMPARE(inFlightWaits({0, 1, 0, 0, 1, 0, 0}, 2, 4), (std::vector<int>{-1, -1, -1, 0, -1, 2, 3}));
    QCOMPARE(inFlightWaits({0, 1, 0, 1, 0, 1}, 2, 4), (std::vector<int>{-1, -1, -1, -1, 0, 1}));  // round robin: c - 4
    Plan twin = planOf(*t, {0, 0, 0, 0});
    twin.replicas = {{1, 1}};
    QCOMPARE(streamPeriod(*t, twin), 40.0);
    StreamOptions o;
    o.dispatch = ReplicaDispatch::NextFree;
    auto s = simulateStream(*t, twin, o);
    QVERIFY2(s, s ? "" : s.message().c_str());
    QVERIFY2(std::fabs(s->periodUs - 80.0 / 3.0) < 1e-9, std::to_string(s->periodUs).c_str());
    QCOMPARE(s->replicaOf[3], 0);
    QCOMPARE(s->replicaOf[4], 1);
    // P0's inferences back to back (0, 2, 3, 5, 6, ... end at 40, 80, 120, ...), P1's every 80 us.
    QCOMPARE(s->end[3], 120.0);
    QCOMPARE(s->end[4], 160.0);
    QCOMPARE(s->latencyUs, 40.0);  // the median: two of every three inferences on P0
    // The weighted listing P0, P1, P0 is the same two replicas under next free (P0 listed twice is one
    // replica with the contexts of both): the same assignment and period.
    Plan weighted = planOf(*t, {0, 0, 0, 0});
    weighted.replicas = {{1, 1}, {0, 1}};
    QCOMPARE(canonicalReplicas(weighted), (std::vector<int>{0, 1, 0}));
    auto w = simulateStream(*t, weighted, o);
    QVERIFY2(w, w ? "" : w.message().c_str());
    QVERIFY2(std::fabs(w->periodUs - 80.0 / 3.0) < 1e-9, std::to_string(w->periodUs).c_str());
    for (int c = 0; c < 9; ++c) QCOMPARE(w->replicaOf[static_cast<size_t>(c)], (std::vector<int>{0, 1, 0, 0, 1, 0, 0, 1, 0})[static_cast<size_t>(c)]);
    // Equal replicas: next free is round robin.
    const CostTable e = chain(10, 0);
    Plan eq = planOf(e, {0, 0, 0, 0});
    eq.replicas = {{1, 1}};
    s = simulateStream(e, eq, o);
    QVERIFY(s);
    QCOMPARE(s->periodUs, 20.0);
    for (int c = 0; c < s->inferences; ++c) QCOMPARE(s->replicaOf[static_cast<size_t>(c)], c % 2);
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
