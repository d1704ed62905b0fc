// Classic list schedulers (HEFT, CPOP, PEFT), the baselines (single, priority, static, greedy) and the
// lower bound: the published examples, constraints, one-device sums, cancellation, and
// lower bound <= makespan on seeded random task graphs built in code.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "cost/costtable.h"
#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sched/scheduler.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "testutil.h"

using namespace partex;

namespace {

struct Algo {
  const char* name;
  std::unique_ptr<Scheduler> (*make)();
};
const std::vector<Algo>& myAlgorithms() {
  static const std::vector<Algo> all{{"single", makeSingleDevice}, {"priority", makeManualPriority},
                                     {"static", makeStaticTypeBased}, {"greedy", makeGreedy},
                                     {"heft", makeHeft},          {"cpop", makeCpop},
                                     {"peft", makePeft}};
  return all;
}
std::unique_ptr<Scheduler> makeByName(const std::string& name) {
  for (const auto& a : myAlgorithms())
    if (name == a.name) return a.make();
  return nullptr;
}

CostTable loadTaskGraph(const std::string& file) {
  const std::string path = partex::test::testDataDir() + "/taskgraphs/" + file;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = parseTaskGraph(ss.str(), path);
  if (!t) qFatal("%s", t.message().c_str());
  return std::move(t).value();
}

TaskId taskByName(const CostTable& t, const std::string& name) {
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (t.taskNames[static_cast<size_t>(v)] == name) return v;
  return -1;
}

/// Schedules and judges; fails the test on any error.
double makespanOf(const Scheduler& s, const CostTable& t, const Constraints& c, const SchedOptions& o, Plan* out = nullptr) {
  auto plan = s.schedule(t, c, o);
  if (!plan) {
    qWarning("%s: %s", s.name().c_str(), plan.message().c_str());
    return -1;
  }
  if (plan->algorithm != s.name()) return -2;
  if (auto st = checkPlanShape(t, *plan); !st) {
    qWarning("%s: %s", s.name().c_str(), st.message().c_str());
    return -3;
  }
  auto tl = simulate(t, *plan, o.sim);
  if (!tl) {
    qWarning("%s: %s", s.name().c_str(), tl.message().c_str());
    return -4;
  }
  if (out) *out = std::move(plan).value();
  return tl->makespan;
}

/// The classic model of the HEFT paper, as a second judge: every edge is its own message costing
/// comm(e) between different devices, links never contend, each device runs its tasks in plan order.
double classicMakespan(const CostTable& t, const Plan& plan) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<double> finish(static_cast<size_t>(n), -1.0), devFree(static_cast<size_t>(m), 0.0);
  std::vector<size_t> pos(static_cast<size_t>(m), 0);
  double makespan = 0;
  for (int placed = 0; placed < n;) {
    bool progress = false;
    for (DeviceId d = 0; d < m; ++d) {
      const auto& ord = plan.order[static_cast<size_t>(d)];
      if (pos[static_cast<size_t>(d)] >= ord.size()) continue;
      const TaskId v = ord[pos[static_cast<size_t>(d)]];
      double ready = devFree[static_cast<size_t>(d)];
      bool ok = true;
      for (int32_t e : t.inEdges[static_cast<size_t>(v)]) {
        const TaskId u = t.edges[static_cast<size_t>(e)].src;
        if (finish[static_cast<size_t>(u)] < 0) ok = false;
        else ready = std::max(ready, finish[static_cast<size_t>(u)] + t.comm(e, plan.device[static_cast<size_t>(u)], d));
      }
      if (!ok) continue;
      finish[static_cast<size_t>(v)] = ready + t.w(v, d);
      devFree[static_cast<size_t>(d)] = finish[static_cast<size_t>(v)];
      makespan = std::max(makespan, finish[static_cast<size_t>(v)]);
      ++pos[static_cast<size_t>(d)];
      ++placed;
      progress = true;
    }
    if (!progress) return -1;  // deadlock
  }
  return makespan;
}

struct RandomSpec {
  uint64_t seed = 1;
  int tasks = 12;
  int devices = 3;
  bool contended = true;   ///< Link resources (one transfer at a time per direction).
  bool exclusive = false;  ///< Devices 1 and 2 are modes of one resource.
  bool io = true;          ///< Model inputs/outputs on the host.
  double unsupported = 0.2;  ///< Probability that a non-host device cannot run a task.
};

/// A random DAG with byte-sized edges, link latencies/bandwidths, optional exclusive devices and
/// model inputs/outputs, built directly (no parser).
CostTable randomTable(const RandomSpec& s) {
  std::mt19937_64 rng(s.seed);
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const int n = s.tasks, m = s.devices;
  static const char* kTypes[] = {"Conv", "Relu", "MatMul", "Add", "Gemm", "Softmax"};
  CostTable t;
  t.name = "random" + std::to_string(s.seed);
  for (int d = 0; d < m; ++d) t.deviceIds.push_back(d == 0 ? "cpu" : "acc" + std::to_string(d));
  for (int v = 0; v < n; ++v) {
    t.taskNames.push_back("t" + std::to_string(v));
    t.taskTypes.push_back(kTypes[static_cast<size_t>(v) % 6]);
    for (int d = 0; d < m; ++d) {
      const bool can = d == 0 || !coin(s.unsupported);
      t.cost.push_back(can ? std::round(uni(1, 50)) : kInf);
      t.provenance.push_back(Provenance::Modelled);
    }
  }
  for (int v = 1; v < n; ++v) {
    const int k = 1 + static_cast<int>(rng() % 3);
    std::vector<int> preds;
    for (int i = 0; i < k; ++i) {
      const int p = static_cast<int>(rng() % static_cast<uint64_t>(v));
      if (std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
    }
    if (v > 2 && coin(0.2)) preds.clear();  // some extra entry tasks
    for (int p : preds) t.edges.push_back(Edge{p, v, static_cast<int64_t>(uni(1e3, 4e4)), -1.0});
  }
  finishTaskTable(t);
  if (s.io)
    for (int v = 0; v < n; ++v) {
      if (t.inEdges[static_cast<size_t>(v)].empty()) t.inputBytes[static_cast<size_t>(v)] = 20000;
      if (t.outEdges[static_cast<size_t>(v)].empty()) t.outputBytes[static_cast<size_t>(v)] = 5000;
    }
  if (s.exclusive && m >= 3) {
    t.exclusiveWith[1].push_back(2);
    t.exclusiveWith[2].push_back(1);
  }
  setUniformLinks(t, 2.0, 1000.0, s.contended);  // 1 GB/s
  return t;
}

/// A task graph of independent tasks (no edges) with the given costs [task][device].
CostTable independentTasks(const std::vector<std::vector<double>>& costs) {
  std::string json = "{\"devices\": [";
  for (size_t d = 0; d < costs.front().size(); ++d) json += (d ? ",\"D" : "\"D") + std::to_string(d) + "\"";
  json += "], \"tasks\": {";
  for (size_t v = 0; v < costs.size(); ++v) {
    json += (v ? ",\"T" : "\"T") + std::to_string(v) + "\": [";
    for (size_t d = 0; d < costs[v].size(); ++d)
      json += (d ? "," : "") + (costs[v][d] == kInf ? std::string("null") : std::to_string(costs[v][d]));
    json += "]";
  }
  json += "}}";
  auto t = parseTaskGraph(json, "independent");
  if (!t) qFatal("%s", t.message().c_str());
  return std::move(t).value();
}

SchedOptions unlimited() {
  SchedOptions o;
  o.sim.unlimitedLinks = true;
  return o;
}

}  // namespace

class TestSchedClassic : public QObject {
  Q_OBJECT

 private slots:
  // ---- The HEFT paper (Topcuoglu et al. 2002, Fig. 2) ----------------------------------------------

  void heftPaperRanks() {
    const CostTable t = loadTaskGraph("heft2002.json");
    QCOMPARE(t.numTasks(), 10);
    const auto topo = t.topoOrder();
    const Constraints none;
    const auto mine = sched_detail::upwardRanks(t, topo, sched_detail::meanCosts(t, none), sched_detail::meanComms(t, none));
    const auto lead = partex::upwardRanks(t);
    // Published rank_u (Table 1 of the paper, rounded to 3 decimals there).
    const std::map<std::string, double> published{{"T1", 108.0},   {"T2", 77.0},    {"T3", 80.0},   {"T4", 80.0},
                                                  {"T5", 69.0},    {"T6", 63.333},  {"T7", 42.667}, {"T8", 35.667},
                                                  {"T9", 44.333},  {"T10", 14.667}};
    for (const auto& [name, r] : published) {
      const TaskId v = taskByName(t, name);
      QVERIFY2(std::fabs(mine[static_cast<size_t>(v)] - r) < 1e-3, name.c_str());
      QVERIFY2(std::fabs(lead[static_cast<size_t>(v)] - r) < 1e-3, name.c_str());
    }
    QCOMPARE(mine[static_cast<size_t>(taskByName(t, "T1"))], 108.0);
  }

  void heftPaperMakespan() {
    const CostTable t = loadTaskGraph("heft2002.json");
    Plan plan;
    const double ms = makespanOf(*makeHeft(), t, {}, unlimited(), &plan);
    const double classic = classicMakespan(t, plan);
    qInfo("HEFT on the HEFT paper example: simulated %g, classic model %g (published 80)", ms, classic);
    QCOMPARE(classic, 80.0);
    QCOMPARE(ms, 80.0);
    // The published schedule puts the exit task T10 on P2.
    QCOMPARE(t.deviceIds[static_cast<size_t>(plan.device[static_cast<size_t>(taskByName(t, "T10"))])], std::string("P2"));
    QVERIFY(lowerBound(t) <= ms);
  }

  // ---- Teaching mode: the decision trace ----------------------------------------------------------

  void heftTraceStepsThroughThePaper() {
    const CostTable t = loadTaskGraph("heft2002.json");
    std::vector<TraceStep> steps;
    SchedOptions o = unlimited();
    o.trace = [&](const TraceStep& s) { steps.push_back(s); };
    auto traced = makeHeft()->schedule(t, {}, o);
    QVERIFY2(traced, traced.message().c_str());
    auto plain = makeHeft()->schedule(t, {}, unlimited());
    QVERIFY(plain);
    QCOMPARE(traced->device, plain->device);  // tracing never changes the decisions
    QCOMPARE(traced->order, plain->order);
    QCOMPARE(static_cast<int>(steps.size()), 1 + t.numTasks());
    QCOMPARE(steps[0].kind, std::string("ranks"));
    QCOMPARE(steps[0].values.size(), static_cast<size_t>(t.numTasks()));
    QVERIFY(std::fabs(steps[0].values[static_cast<size_t>(taskByName(t, "T1"))] - 108.0) < 1e-9);
    // The paper's scheduling order (Fig. 2, by decreasing rank_u): T1, T3, T4, T2, T5, T6, T9, T7, T8, T10.
    const std::vector<std::string> order{"T1", "T3", "T4", "T2", "T5", "T6", "T9", "T7", "T8", "T10"};
    for (size_t i = 1; i < steps.size(); ++i) {
      const TraceStep& st = steps[i];
      QCOMPARE(st.kind, std::string("place"));
      QCOMPARE(t.taskNames[static_cast<size_t>(st.task)], order[i - 1]);
      QVERIFY(!st.ready.empty());
      QCOMPARE(st.ready.front(), st.task);  // the head of the ready list goes next
      QCOMPARE(st.ready.size(), st.readyPriority.size());
      for (size_t k = 1; k < st.readyPriority.size(); ++k) QVERIFY(st.readyPriority[k - 1] >= st.readyPriority[k] - 1e-9);
      QCOMPARE(st.chosen, traced->device[static_cast<size_t>(st.task)]);
      QCOMPARE(st.finish.size(), static_cast<size_t>(t.numDevices()));
      // HEFT: the chosen device gives the earliest finish time.
      for (double f : st.finish) QVERIFY(st.finish[static_cast<size_t>(st.chosen)] <= f + 1e-9);
    }
    // T1's finish times on P1, P2, P3 are its costs 14, 16, 9 (an entry task starts at 0).
    QCOMPARE(steps[1].finish, (std::vector<double>{14, 16, 9}));
  }

  void partitionTunerTraceCoversEveryTask() {
    const CostTable t = loadTaskGraph("heft2002.json");
    for (const char* algo : {"partitiontuner", "partitiontuner-clean"}) {
      std::vector<TraceStep> steps;
      SchedOptions o;
      o.trace = [&](const TraceStep& s) { steps.push_back(s); };
      auto plan = findScheduler(algo)->schedule(t, {}, o);
      QVERIFY2(plan, plan.message().c_str());
      std::vector<int> seen(static_cast<size_t>(t.numTasks()), 0);
      for (const auto& st : steps) {
        QCOMPARE(st.kind, std::string("dp"));
        QVERIFY(st.task >= 0 && st.task < t.numTasks());
        ++seen[static_cast<size_t>(st.task)];
        QCOMPARE(st.chosen, plan->device[static_cast<size_t>(st.task)]);
        QVERIFY(std::find(st.ready.begin(), st.ready.end(), st.task) != st.ready.end());
        QCOMPARE(st.finish.size(), static_cast<size_t>(t.numDevices()));
        QVERIFY(std::isfinite(st.finish[static_cast<size_t>(st.chosen)]));
        QVERIFY(!st.note.empty());
      }
      for (int k : seen) QCOMPARE(k, 1);  // one decision per task
    }
  }

  void greedyTraceShowsEveryChoice() {
    // Teaching mode for greedy: one decision per task in dependency order, the chosen device the
    // cheapest allowed one, the device table its costs (not finish times), with a forbidden device.
    const CostTable t = loadTaskGraph("heft2002.json");
    Constraints c;
    c.forbidden = {2};  // P3: T1 would go there (cost 9)
    std::vector<TraceStep> steps;
    SchedOptions o;
    o.trace = [&](const TraceStep& s) { steps.push_back(s); };
    auto plan = makeGreedy()->schedule(t, c, o);
    QVERIFY2(plan, plan.message().c_str());
    QCOMPARE(static_cast<int>(steps.size()), t.numTasks());
    std::vector<int> pos(static_cast<size_t>(t.numTasks()), -1);
    for (size_t i = 0; i < steps.size(); ++i) {
      const TraceStep& st = steps[i];
      QCOMPARE(st.kind, std::string("place"));
      QVERIFY(pos[static_cast<size_t>(st.task)] < 0);
      pos[static_cast<size_t>(st.task)] = static_cast<int>(i);
      QCOMPARE(st.chosen, plan->device[static_cast<size_t>(st.task)]);
      QCOMPARE(st.finish.size(), static_cast<size_t>(t.numDevices()));
      for (DeviceId d = 0; d < t.numDevices(); ++d) {
        const double shown = st.finish[static_cast<size_t>(d)];
        if (c.allowed(t, st.task, d)) {
          QCOMPARE(shown, t.w(st.task, d));
          QVERIFY(t.w(st.task, st.chosen) <= shown);
        } else {
          QVERIFY(std::isinf(shown));
        }
      }
      QVERIFY(st.note.find(t.taskNames[static_cast<size_t>(st.task)]) != std::string::npos);
    }
    for (const auto& e : t.edges) QVERIFY(pos[static_cast<size_t>(e.src)] < pos[static_cast<size_t>(e.dst)]);
    QCOMPARE(plan->device[static_cast<size_t>(taskByName(t, "T1"))], DeviceId{0});  // 14 on P1 < 16 on P2
  }

  void cpopPaperMakespan() {
    const CostTable t = loadTaskGraph("heft2002.json");
    Plan plan;
    SchedInfo info;
    auto p = makeCpop()->schedule(t, {}, unlimited(), &info);
    QVERIFY2(p, p.message().c_str());
    const double ms = makespanOf(*makeCpop(), t, {}, unlimited(), &plan);
    const double classic = classicMakespan(t, plan);
    qInfo("CPOP on the HEFT paper example: simulated %g, classic model %g (published 86)", ms, classic);
    QCOMPARE(classic, 86.0);
    QCOMPARE(ms, 86.0);
    // The critical path T1, T2, T9, T10 (priority 108) goes on P2, which runs it in 54.
    for (const char* name : {"T1", "T2", "T9", "T10"})
      QCOMPARE(t.deviceIds[static_cast<size_t>(plan.device[static_cast<size_t>(taskByName(t, name))])], std::string("P2"));
    QVERIFY(!info.notes.empty());
  }

  // ---- The PEFT paper (Arabnejad & Barbosa 2014, Fig. 3) --------------------------------------------

  void peftPaperOct() {
    const CostTable t = loadTaskGraph("peft2014.json");
    const auto oct = sched_detail::optimisticCostTable(t, {}, t.topoOrder(), sched_detail::meanComms(t, {}));
    // The optimistic cost table of the paper's example (Table 2).
    const std::map<std::string, std::vector<double>> published{
        {"T1", {64, 68, 86}}, {"T2", {42, 39, 42}}, {"T3", {27, 41, 43}}, {"T4", {42, 39, 50}},
        {"T5", {28, 37, 28}}, {"T6", {42, 39, 44}}, {"T7", {13, 16, 22}}, {"T8", {13, 16, 33}},
        {"T9", {13, 16, 20}}, {"T10", {0, 0, 0}}};
    for (const auto& [name, row] : published) {
      const auto v = static_cast<size_t>(taskByName(t, name));
      for (size_t d = 0; d < 3; ++d) QVERIFY2(oct[v * 3 + d] == row[d], (name + " on P" + std::to_string(d + 1)).c_str());
    }
  }

  void peftPaperMakespan() {
    const CostTable t = loadTaskGraph("peft2014.json");
    Plan plan;
    const double peft = makespanOf(*makePeft(), t, {}, unlimited(), &plan);
    QCOMPARE(classicMakespan(t, plan), 122.0);
    const double heft = makespanOf(*makeHeft(), t, {}, unlimited());
    const double cpop = makespanOf(*makeCpop(), t, {}, unlimited());
    qInfo("PEFT paper example: PEFT %g (published 122), HEFT %g, CPOP %g", peft, heft, cpop);
    QCOMPARE(peft, 122.0);
    QVERIFY(peft < heft);
    QVERIFY(lowerBound(t) <= peft);
  }

  // ---- One device: every algorithm returns the plain sum --------------------------------------------

  void oneDeviceIsPlainSum_data() {
    QTest::addColumn<QString>("algorithm");
    QTest::addColumn<int>("seed");
    for (const auto& a : myAlgorithms())
      for (int seed : {1, 2, 3}) QTest::addRow("%s/%d", a.name, seed) << QString(a.name) << seed;
  }
  void oneDeviceIsPlainSum() {
    QFETCH(QString, algorithm);
    QFETCH(int, seed);
    RandomSpec spec;
    spec.seed = static_cast<uint64_t>(seed);
    spec.tasks = 30;
    spec.devices = 1;
    const CostTable t = randomTable(spec);
    double sum = 0;
    for (TaskId v = 0; v < t.numTasks(); ++v) sum += t.w(v, 0);
    for (bool unl : {false, true}) {
      SchedOptions o;
      o.sim.unlimitedLinks = unl;
      const double ms = makespanOf(*makeByName(algorithm.toStdString()), t, {}, o);
      QCOMPARE(ms, sum);
    }
    QCOMPARE(lowerBound(t), sum);
  }

  // ---- Constraints ------------------------------------------------------------------------------------

  void pinsAndForbidden_data() {
    QTest::addColumn<QString>("algorithm");
    QTest::addColumn<int>("seed");
    for (const auto& a : myAlgorithms())
      for (int seed : {11, 12, 13, 14}) QTest::addRow("%s/%d", a.name, seed) << QString(a.name) << seed;
  }
  void pinsAndForbidden() {
    QFETCH(QString, algorithm);
    QFETCH(int, seed);
    RandomSpec spec;
    spec.seed = static_cast<uint64_t>(seed);
    spec.tasks = 25;
    spec.devices = 4;
    spec.exclusive = seed % 2 == 0;
    const CostTable t = randomTable(spec);
    Constraints c;
    c.forbidden = {3};
    std::mt19937 rng(static_cast<unsigned>(seed));
    for (int i = 0; i < 6; ++i) {
      const TaskId v = static_cast<TaskId>(rng() % static_cast<unsigned>(t.numTasks()));
      std::vector<DeviceId> ok;
      for (DeviceId d = 0; d < 3; ++d)
        if (t.canRun(v, d)) ok.push_back(d);
      c.pinned[v] = ok[rng() % ok.size()];
    }
    const auto s = makeByName(algorithm.toStdString());
    for (bool unl : {false, true}) {
      SchedOptions o;
      o.sim.unlimitedLinks = unl;
      Plan plan;
      const double ms = makespanOf(*s, t, c, o, &plan);
      QVERIFY(ms >= 0);
      for (const auto& [v, d] : c.pinned) QCOMPARE(plan.device[static_cast<size_t>(v)], d);
      for (TaskId v = 0; v < t.numTasks(); ++v) {
        QVERIFY(plan.device[static_cast<size_t>(v)] != 3);
        QVERIFY(c.allowed(t, v, plan.device[static_cast<size_t>(v)]));
      }
      QVERIFY(plan.order[3].empty());
      QVERIFY2(lowerBound(t, c) <= ms + 1e-9, qPrintable(QString::number(lowerBound(t, c)) + " > " + QString::number(ms)));
    }
  }

  void constraintErrorsNameTheTask() {
    const CostTable t = loadTaskGraph("heft2002.json");
    for (const auto& a : myAlgorithms()) {
      const auto s = a.make();
      // Pinned to a device that is forbidden.
      Constraints c1;
      c1.pinned[taskByName(t, "T7")] = 1;
      c1.forbidden = {1};
      auto r1 = s->schedule(t, c1, {});
      QVERIFY2(!r1, a.name);
      QVERIFY2(r1.message().find("T7") != std::string::npos, r1.message().c_str());
      // Every device forbidden.
      Constraints c2;
      c2.forbidden = {0, 1, 2};
      auto r2 = s->schedule(t, c2, {});
      QVERIFY2(!r2, a.name);
      QVERIFY2(r2.message().find("T1") != std::string::npos, r2.message().c_str());
      // Unknown device index.
      Constraints c3;
      c3.pinned[0] = 7;
      QVERIFY2(!s->schedule(t, c3, {}), a.name);
    }
    // A device that cannot run the task.
    const CostTable u = independentTasks({{1, kInf}, {2, 3}});
    Constraints c;
    c.pinned[0] = 1;
    QVERIFY(!c.allowed(u, 0, 1));
    QVERIFY(c.allowed(u, 1, 1));
    auto r = makeHeft()->schedule(u, c, {});
    QVERIFY(!r);
    QVERIFY2(r.message().find("'T0'") != std::string::npos, r.message().c_str());
  }

  // ---- Lower bound --------------------------------------------------------------------------------

  void lowerBoundComponents() {
    // Three independent tasks of 10 on two equal devices: total work / 2 = 15 dominates.
    const CostTable t = independentTasks({{10, 10}, {10, 10}, {10, 10}});
    QCOMPARE(lowerBound(t), 15.0);
    Constraints c;
    c.forbidden = {1};
    QCOMPARE(lowerBound(t, c), 30.0);
    // A pin to a slow device raises that task's best time.
    const CostTable s = independentTasks({{4, 40}, {1, 1}});
    Constraints pin;
    pin.pinned[0] = 1;
    QCOMPARE(lowerBound(s), 4.0);
    QCOMPARE(lowerBound(s, pin), 40.0);
    // The HEFT example: the longest path on best devices, T1 (9) T2 (13) T9 (12) T10 (7), is 41;
    // the best-device total 91 over three devices is only 30.3.
    const CostTable h = loadTaskGraph("heft2002.json");
    QCOMPARE(lowerBound(h), 41.0);
  }

  void lowerBoundExclusiveDevices() {
    // Four independent tasks of 10 on three devices of which 1 and 2 are exclusive: at most two run at
    // once, so the bound is 40 / 2 = 20 (not 40 / 3).
    RandomSpec spec;
    spec.devices = 3;
    spec.tasks = 4;
    spec.io = false;
    spec.unsupported = 0;
    spec.exclusive = true;
    CostTable t = randomTable(spec);
    t.edges.clear();
    t.indexEdges();
    t.cost.assign(12, 10.0);
    QCOMPARE(lowerBound(t), 20.0);
    t.exclusiveWith.assign(3, {});
    QVERIFY(std::fabs(lowerBound(t) - 40.0 / 3) < 1e-9);
  }

  void lowerBoundBelowMakespans_data() {
    QTest::addColumn<int>("seed");
    QTest::addColumn<int>("tasks");
    QTest::addColumn<int>("devices");
    QTest::addColumn<bool>("contended");
    QTest::addColumn<bool>("exclusive");
    for (int seed = 100; seed < 124; ++seed) {
      const int tasks = 5 + (seed * 7) % 30;
      const int devices = 2 + seed % 3;
      QTest::addRow("seed%d-n%d-m%d", seed, tasks, devices) << seed << tasks << devices << (seed % 2 == 0) << (seed % 3 == 0);
    }
  }
  void lowerBoundBelowMakespans() {
    QFETCH(int, seed);
    QFETCH(int, tasks);
    QFETCH(int, devices);
    QFETCH(bool, contended);
    QFETCH(bool, exclusive);
    RandomSpec spec;
    spec.seed = static_cast<uint64_t>(seed);
    spec.tasks = tasks;
    spec.devices = devices;
    spec.contended = contended;
    spec.exclusive = exclusive;
    const CostTable t = randomTable(spec);
    const double lb = lowerBound(t);
    QVERIFY(lb > 0);
    for (const auto& a : myAlgorithms())
      for (bool unl : {false, true}) {
        SchedOptions o;
        o.sim.unlimitedLinks = unl;
        const double ms = makespanOf(*a.make(), t, {}, o);
        QVERIFY2(ms >= 0, a.name);
        QVERIFY2(lb <= ms + 1e-9, qPrintable(QString("%1: lb %2 > makespan %3").arg(a.name).arg(lb).arg(ms)));
      }
  }

  // ---- The insertion timeline ----------------------------------------------------------------------

  void intervalSetFitMatchesBruteForce() {
    // Thousands of inserts (chunks split) and erases; every fit checked against a plain scan.
    std::mt19937_64 rng(5);
    sched_detail::IntervalSet set;
    std::vector<sched_detail::IntervalSet::Interval> all;
    auto naive = [&](double ready, double dur) {
      std::vector<double> cands{ready};
      for (const auto& iv : all)
        if (iv.end >= ready) cands.push_back(iv.end);
      std::sort(cands.begin(), cands.end());
      for (double s : cands) {
        bool ok = true;
        for (const auto& iv : all)
          if (iv.start < s + dur && iv.end > s) ok = false;
        if (ok) return s;
      }
      return -1.0;
    };
    int64_t id = 1;
    for (int step = 0; step < 1500; ++step) {
      const double ready = static_cast<double>(rng() % 2000);
      const double dur = static_cast<double>(1 + rng() % 12);
      const double s = set.fit(ready, dur);
      if (step % 50 == 0 || step > 1480) QCOMPARE(s, naive(ready, dur));
      if (!all.empty() && rng() % 5 == 0) {  // erase a random interval
        const size_t k = static_cast<size_t>(rng() % all.size());
        set.erase(all[k].id, all[k].start);
        all.erase(all.begin() + static_cast<std::ptrdiff_t>(k));
      }
      const sched_detail::IntervalSet::Interval iv{s, s + dur, id++};
      set.insert(iv);
      all.push_back(iv);
      QCOMPARE(set.size(), all.size());
    }
    for (int q = 0; q < 40; ++q) {
      const double ready = static_cast<double>(rng() % 3000);
      const double dur = static_cast<double>(1 + rng() % 20);
      QCOMPARE(set.fit(ready, dur), naive(ready, dur));
    }
  }

  // ---- Behaviour shared by every scheduler -----------------------------------------------------------

  void cancelledAndProgress() {
    const CostTable t = randomTable({});
    std::atomic<bool> cancel{true};
    for (const auto& a : myAlgorithms()) {
      SchedOptions o;
      o.cancel = &cancel;
      auto r = a.make()->schedule(t, {}, o);
      QVERIFY2(!r, a.name);
      QCOMPARE(r.message(), std::string("cancelled"));
      // Progress ends at 1.
      SchedOptions p;
      double last = -1;
      int calls = 0;
      p.progress = [&](double f, const std::string&) {
        QVERIFY(f >= 0 && f <= 1);
        last = f;
        ++calls;
      };
      QVERIFY2(a.make()->schedule(t, {}, p), a.name);
      QVERIFY2(calls > 0, a.name);
      QCOMPARE(last, 1.0);
    }
  }

  void deterministic() {
    RandomSpec spec;
    spec.seed = 77;
    spec.tasks = 60;
    spec.devices = 3;
    spec.exclusive = true;
    const CostTable t = randomTable(spec);
    for (const auto& a : myAlgorithms()) {
      auto p1 = a.make()->schedule(t, {}, {});
      auto p2 = a.make()->schedule(t, {}, {});
      QVERIFY(p1 && p2);
      QCOMPARE(p1->device, p2->device);
      QCOMPARE(p1->order, p2->order);
      QVERIFY(!a.make()->title().empty());
      QVERIFY(a.make()->title().find("reconstructed") == std::string::npos);
      QVERIFY(!a.make()->description().empty());
      QCOMPARE(a.make()->name(), std::string(a.name));
    }
  }

  void listSchedulersBeatBaselinesOnAverage() {
    // Not a law, but on random heterogeneous graphs HEFT should beat the one-device plan on average.
    double heft = 0, single = 0;
    for (int seed = 200; seed < 220; ++seed) {
      RandomSpec spec;
      spec.seed = static_cast<uint64_t>(seed);
      spec.tasks = 40;
      spec.io = false;
      spec.unsupported = 0;
      const CostTable t = randomTable(spec);
      heft += makespanOf(*makeHeft(), t, {}, {});
      single += makespanOf(*makeSingleDevice(), t, {}, {});
    }
    QVERIFY2(heft < single, qPrintable(QString("heft %1 single %2").arg(heft).arg(single)));
  }

  // ---- Baselines ---------------------------------------------------------------------------------------

  void singleDevice() {
    // T0 runs only on D0 (the host); the rest is faster on D1.
    const CostTable t = independentTasks({{5, kInf}, {10, 1}, {10, 1}});
    SchedOptions o;
    Plan plan;
    QCOMPARE(makespanOf(*makeSingleDevice(), t, {}, o, &plan), 5.0);  // D1 with T0 falling back to D0
    QCOMPARE(plan.device, (std::vector<DeviceId>{0, 1, 1}));
    o.params["device"] = "D0";
    QCOMPARE(makespanOf(*makeSingleDevice(), t, {}, o, &plan), 25.0);
    QCOMPARE(plan.device, (std::vector<DeviceId>{0, 0, 0}));
    o.params["device"] = "nope";
    auto r = makeSingleDevice()->schedule(t, {}, o);
    QVERIFY(!r);
    QVERIFY2(r.message().find("nope") != std::string::npos, r.message().c_str());
  }

  void manualPriority() {
    const CostTable t = independentTasks({{5, kInf, 3}, {10, 1, 2}, {10, 1, kInf}});
    SchedOptions o;
    auto p = makeManualPriority()->schedule(t, {}, o);
    QVERIFY(p);
    // Default: non-host devices in platform order (D1, D2), then the host.
    QCOMPARE(p->device, (std::vector<DeviceId>{2, 1, 1}));
    o.params["priority"] = "D2, D0";
    p = makeManualPriority()->schedule(t, {}, o);
    QVERIFY(p);
    QCOMPARE(p->device, (std::vector<DeviceId>{2, 2, 0}));
    o.params["priority"] = "D2,D9";
    QVERIFY(!makeManualPriority()->schedule(t, {}, o));
  }

  void staticTypeBased() {
    RandomSpec spec;
    spec.tasks = 12;
    spec.devices = 3;
    spec.unsupported = 0;
    const CostTable t = randomTable(spec);  // types cycle Conv, Relu, MatMul, Add, Gemm, Softmax
    auto p = makeStaticTypeBased()->schedule(t, {}, {});
    QVERIFY(p);
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      const std::string& type = t.taskTypes[static_cast<size_t>(v)];
      const bool heavy = type == "Conv" || type == "MatMul" || type == "Gemm";
      QCOMPARE(p->device[static_cast<size_t>(v)], heavy ? 1 : 0);
    }
    SchedOptions o;
    o.params["table"] = "Conv=acc2, Relu=acc1";
    p = makeStaticTypeBased()->schedule(t, {}, o);
    QVERIFY(p);
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      const std::string& type = t.taskTypes[static_cast<size_t>(v)];
      const DeviceId want = type == "Conv" ? 2 : type == "Relu" ? 1 : (type == "MatMul" || type == "Gemm") ? 1 : 0;
      QCOMPARE(p->device[static_cast<size_t>(v)], want);
    }
    o.params["table"] = "Conv=gpu9";
    QVERIFY(!makeStaticTypeBased()->schedule(t, {}, o));
    // Task graphs have no op types: everything on the host.
    const CostTable h = loadTaskGraph("heft2002.json");
    p = makeStaticTypeBased()->schedule(h, {}, {});
    QVERIFY(p);
    QCOMPARE(p->order[0].size(), size_t(10));
  }

  void greedyFastest() {
    const CostTable t = loadTaskGraph("heft2002.json");
    auto p = makeGreedy()->schedule(t, {}, {});
    QVERIFY(p);
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      const DeviceId d = p->device[static_cast<size_t>(v)];
      for (DeviceId e = 0; e < t.numDevices(); ++e) QVERIFY(t.w(v, d) <= t.w(v, e));
    }
  }
};

QTEST_APPLESS_MAIN(TestSchedClassic)
#include "tst_sched_classic.moc"
