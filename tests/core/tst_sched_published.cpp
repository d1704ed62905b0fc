// The published DL partitioners (PartitionTuner, DUET, PIM DP, DLFusion, OSDI'23 coarse subgraphs):
// PIM DP equals brute force over every assignment of its own objective (chains and small DAGs) and,
// on chains, the simulated makespan; it reports numDevices+1 profiling runs. PartitionTuner never
// puts a non-Conv op on a Conv-only NPU and is never worse than the static type-based assignment on
// a chain where switching costs matter. DUET's correction never ends worse than its greedy start.
// Every algorithm returns a plan the simulator accepts, honours pinned and forbidden devices, is
// deterministic and stops with "cancelled" when the cancel token is set.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <functional>
#include <random>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/algorithms.h"
#include "sim/simulator.h"
#include "testutil.h"

using namespace partex;

namespace {

struct EdgeSpec {
  TaskId src, dst;
  int64_t bytes;
};

/// A cost table built in code: per-pair latency (us) and bandwidth (bytes/us) make c(e,a,b)
/// asymmetric; links never contend; groupCost is the plain sum unless `group` is given.
CostTable makeTable(int n, int m, const std::vector<double>& cost, const std::vector<EdgeSpec>& edges,
                    const std::vector<double>& latency, const std::vector<double>& bytesPerUs,
                    const std::vector<std::string>& types = {}) {
  CostTable t;
  t.name = "test";
  for (int v = 0; v < n; ++v) {
    t.taskNames.push_back("t" + std::to_string(v));
    t.taskTypes.push_back(types.empty() ? std::string() : types[static_cast<size_t>(v)]);
  }
  for (int d = 0; d < m; ++d) t.deviceIds.push_back("d" + std::to_string(d));
  t.cost = cost;
  t.provenance.assign(cost.size(), Provenance::Imported);
  for (const auto& e : edges) t.edges.push_back(Edge{e.src, e.dst, e.bytes, -1.0});
  finishTaskTable(t);
  t.linkLatencyUs = latency;
  t.linkBytesPerUs = bytesPerUs;
  return t;
}

/// Random links among m devices (asymmetric latency and bandwidth).
void randomLinks(std::mt19937_64& rng, int m, std::vector<double>& lat, std::vector<double>& bpu) {
  std::uniform_real_distribution<double> l(1.0, 20.0), b(50.0, 400.0);
  lat.assign(static_cast<size_t>(m * m), 0.0);
  bpu.assign(static_cast<size_t>(m * m), kInf);
  for (int a = 0; a < m; ++a)
    for (int c = 0; c < m; ++c)
      if (a != c) {
        lat[static_cast<size_t>(a * m + c)] = l(rng);
        bpu[static_cast<size_t>(a * m + c)] = b(rng);
      }
}

/// A random chain of n ops on m devices; some ops cannot run on some devices (never on device 0).
CostTable randomChain(uint64_t seed, int n, int m) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> w(5.0, 100.0), u(0, 1);
  std::uniform_int_distribution<int64_t> bytes(100, 20000);
  std::vector<double> cost;
  for (int v = 0; v < n; ++v)
    for (int d = 0; d < m; ++d) cost.push_back(d > 0 && u(rng) < 0.2 ? kInf : w(rng));
  std::vector<EdgeSpec> edges;
  for (int v = 0; v + 1 < n; ++v) edges.push_back({v, v + 1, bytes(rng)});
  std::vector<double> lat, bpu;
  randomLinks(rng, m, lat, bpu);
  return makeTable(n, m, cost, edges, lat, bpu);
}

/// A random DAG: edges i -> j (i < j) with probability p, plus a chain backbone every third op.
CostTable randomDag(uint64_t seed, int n, int m, double p = 0.3) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> w(5.0, 100.0), u(0, 1);
  std::uniform_int_distribution<int64_t> bytes(100, 20000);
  std::vector<double> cost;
  for (int v = 0; v < n; ++v)
    for (int d = 0; d < m; ++d) cost.push_back(d > 0 && u(rng) < 0.15 ? kInf : w(rng));
  std::vector<EdgeSpec> edges;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (u(rng) < p || (j == i + 1 && i % 3 == 0)) edges.push_back({i, j, bytes(rng)});
  std::vector<double> lat, bpu;
  randomLinks(rng, m, lat, bpu);
  return makeTable(n, m, cost, edges, lat, bpu);
}

/// PIM DP's objective: sum of op times and of every edge's transfer (devices in sequence).
double totalTime(const CostTable& t, const std::vector<DeviceId>& dev) {
  double s = 0;
  for (TaskId v = 0; v < t.numTasks(); ++v) s += t.w(v, dev[static_cast<size_t>(v)]);
  for (size_t e = 0; e < t.edges.size(); ++e)
    s += t.comm(static_cast<int32_t>(e), dev[static_cast<size_t>(t.edges[e].src)], dev[static_cast<size_t>(t.edges[e].dst)]);
  return s;
}

/// Minimum of totalTime over every assignment (devices that cannot run an op skipped).
double bruteForceTotal(const CostTable& t) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<DeviceId> dev(static_cast<size_t>(n), 0);
  double best = kInf;
  std::function<void(int)> rec = [&](int v) {
    if (v == n) {
      best = std::min(best, totalTime(t, dev));
      return;
    }
    for (DeviceId d = 0; d < m; ++d) {
      if (!t.canRun(v, d)) continue;
      dev[static_cast<size_t>(v)] = d;
      rec(v + 1);
    }
  };
  rec(0);
  return best;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-7 * std::max(1.0, std::fabs(b)); }

/// Every scheduler of this file.
std::vector<std::unique_ptr<Scheduler>> published() {
  std::vector<std::unique_ptr<Scheduler>> v;
  v.push_back(makePartitionTuner(true));
  v.push_back(makePartitionTuner(false));
  v.push_back(makeDuet());
  v.push_back(makePimDp());
  v.push_back(makeDlFusion());
  v.push_back(makeCoarseSubgraphs());
  return v;
}

/// A generated model on a preset platform.
Result<CostTable> modelTable(const std::string& kind, const std::string& preset, int64_t imageSize = 64) {
  GenSpec spec;
  spec.kind = kind;
  spec.imageSize = imageSize;
  spec.numClasses = 10;
  spec.layers = 2;
  spec.seqLen = 16;
  spec.hidden = 64;
  spec.heads = 4;
  spec.vocab = 100;
  spec.nodes = 60;
  spec.width = 4;
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  auto g = importOnnxBytes(*bytes, kind + ".onnx");
  if (!g) return Error{g.message()};
  auto p = loadPreset(preset);
  if (!p) return Error{p.message()};
  return buildCostTable(*g, characteriseAll(*g), *p);
}

/// Conv-only NPU next to a CPU: op types along a chain; the NPU runs Conv only.
CostTable npuChain(const std::vector<std::string>& types, double convCpu, double convNpu, double otherCpu, double linkLatency,
                   double bytesPerUs, int64_t bytes) {
  const int n = static_cast<int>(types.size());
  std::vector<double> cost;
  for (const auto& ty : types) {
    cost.push_back(ty == "Conv" ? convCpu : otherCpu);
    cost.push_back(ty == "Conv" ? convNpu : kInf);
  }
  std::vector<EdgeSpec> edges;
  for (int v = 0; v + 1 < n; ++v) edges.push_back({v, v + 1, bytes});
  std::vector<double> lat{0, linkLatency, linkLatency, 0};
  std::vector<double> bpu{kInf, bytesPerUs, bytesPerUs, kInf};
  return makeTable(n, 2, cost, edges, lat, bpu, types);
}

/// The static type-based assignment: Conv on the NPU (device 1), the rest on the CPU.
std::vector<DeviceId> staticAssignment(const CostTable& t) {
  std::vector<DeviceId> dev;
  for (TaskId v = 0; v < t.numTasks(); ++v) dev.push_back(t.taskTypes[static_cast<size_t>(v)] == "Conv" && t.canRun(v, 1) ? 1 : 0);
  return dev;
}

double chainMakespan(const CostTable& t, const std::vector<DeviceId>& dev) {
  Plan p;
  p.device = dev;
  orderByUpwardRank(t, p);
  auto tl = simulate(t, p);
  return tl ? tl->makespan : kInf;
}

}  // namespace

class TstSchedPublished : public QObject {
  Q_OBJECT

 private slots:
  void pimdpChainEqualsBruteForce_data();
  void pimdpChainEqualsBruteForce();
  void pimdpDagEqualsBruteForce_data();
  void pimdpDagEqualsBruteForce();
  void pimdpProfilingRuns();
  void pimdpBeamWhenFrontierTooWide();
  void partitionTunerConvOnlyNpu();
  void partitionTunerBeatsStaticWhenSwitchingCosts();
  void partitionTunerUsesFusion();
  void duetCorrectionNeverWorse_data();
  void duetCorrectionNeverWorse();
  void dlfusionBlocksOnMulticore();
  void coarseGroupsOnChip();
  void validPlansWithConstraints_data();
  void validPlansWithConstraints();
  void cancellation();
  void titlesAndDeterminism();
};

void TstSchedPublished::pimdpChainEqualsBruteForce_data() {
  QTest::addColumn<quint64>("seed");
  QTest::addColumn<int>("n");
  for (int i = 0; i < 8; ++i) QTest::newRow(("chain" + std::to_string(i)).c_str()) << quint64(100 + i) << (6 + i % 5);
}

void TstSchedPublished::pimdpChainEqualsBruteForce() {
  QFETCH(quint64, seed);
  QFETCH(int, n);
  const CostTable t = randomChain(seed, n, 3);
  auto s = makePimDp();
  SchedInfo info;
  auto plan = s->schedule(t, {}, {}, &info);
  QVERIFY2(plan, plan.message().c_str());
  const double got = totalTime(t, plan->device);
  const double want = bruteForceTotal(t);
  QVERIFY2(near(got, want), (std::to_string(got) + " vs brute force " + std::to_string(want)).c_str());
  // A chain runs in sequence: the simulated makespan is the same total time.
  auto tl = simulate(t, *plan);
  QVERIFY2(tl, tl.message().c_str());
  QVERIFY2(near(tl->makespan, want), (std::to_string(tl->makespan) + " vs " + std::to_string(want)).c_str());
}

void TstSchedPublished::pimdpDagEqualsBruteForce_data() {
  QTest::addColumn<quint64>("seed");
  QTest::addColumn<int>("n");
  QTest::addColumn<double>("p");
  for (int i = 0; i < 8; ++i) QTest::newRow(("dag" + std::to_string(i)).c_str()) << quint64(200 + i) << (6 + i % 4) << (0.2 + 0.05 * i);
}

void TstSchedPublished::pimdpDagEqualsBruteForce() {
  QFETCH(quint64, seed);
  QFETCH(int, n);
  QFETCH(double, p);
  const CostTable t = randomDag(seed, n, 3, p);
  auto s = makePimDp();
  auto plan = s->schedule(t, {}, {});
  QVERIFY2(plan, plan.message().c_str());
  const double got = totalTime(t, plan->device);
  const double want = bruteForceTotal(t);
  QVERIFY2(near(got, want), (std::to_string(got) + " vs brute force " + std::to_string(want)).c_str());
  auto tl = simulate(t, *plan);
  QVERIFY2(tl, tl.message().c_str());
  QVERIFY(tl->makespan <= got + 1e-6);  // concurrency can only shorten the sequential total
}

void TstSchedPublished::pimdpProfilingRuns() {
  auto s = makePimDp();
  for (int m : {2, 3, 4}) {
    const CostTable t = randomDag(7, 8, m);
    SchedInfo info;
    auto plan = s->schedule(t, {}, {}, &info);
    QVERIFY2(plan, plan.message().c_str());
    QCOMPARE(info.profilingRuns, m + 1);
  }
}

void TstSchedPublished::pimdpBeamWhenFrontierTooWide() {
  // 12 independent producers all feeding one sink: the frontier reaches 3^11 states; with a cap of
  // 50 the DP becomes a beam, says so, and still returns a valid plan.
  const int n = 13, m = 3;
  std::vector<double> cost;
  for (int v = 0; v < n; ++v)
    for (int d = 0; d < m; ++d) cost.push_back(10.0 + ((v * 7 + d * 3) % 11));
  std::vector<EdgeSpec> edges;
  for (int v = 0; v < n - 1; ++v) edges.push_back({v, n - 1, 1000});
  std::mt19937_64 rng(3);
  std::vector<double> lat, bpu;
  randomLinks(rng, m, lat, bpu);
  const CostTable t = makeTable(n, m, cost, edges, lat, bpu);
  auto s = makePimDp();
  SchedOptions o;
  o.params["max_states"] = "50";
  SchedInfo info;
  auto plan = s->schedule(t, {}, o, &info);
  QVERIFY2(plan, plan.message().c_str());
  QVERIFY(simulate(t, *plan));
  bool said = false;
  for (const auto& note : info.notes) said = said || note.find("beam") != std::string::npos;
  QVERIFY(said);
  // Without the cap it is exact.
  auto exact = s->schedule(t, {}, {});
  QVERIFY(exact);
  QVERIFY(near(totalTime(t, exact->device), bruteForceTotal(t)));
  QVERIFY(totalTime(t, plan->device) >= totalTime(t, exact->device) - 1e-9);
}

void TstSchedPublished::partitionTunerConvOnlyNpu() {
  const std::vector<std::string> types = {"Conv", "Relu", "Conv", "Relu", "MaxPool", "Conv", "Conv", "Add", "Conv", "Softmax"};
  for (double lat : {0.5, 20.0, 200.0}) {
    const CostTable t = npuChain(types, 100.0, 10.0, 5.0, lat, 1000.0, 50000);
    for (bool faithful : {true, false}) {
      auto s = makePartitionTuner(faithful);
      auto plan = s->schedule(t, {}, {});
      QVERIFY2(plan, plan.message().c_str());
      for (TaskId v = 0; v < t.numTasks(); ++v)
        if (types[static_cast<size_t>(v)] != "Conv") QCOMPARE(plan->device[static_cast<size_t>(v)], DeviceId(0));
      QVERIFY(simulate(t, *plan));
    }
  }
  // On the generated ResNet-18 and the cpu-npu preset too.
  auto t = modelTable("resnet18", "cpu-npu");
  QVERIFY2(t, t.message().c_str());
  for (bool faithful : {true, false}) {
    auto plan = makePartitionTuner(faithful)->schedule(*t, {}, {});
    QVERIFY2(plan, plan.message().c_str());
    const DeviceId npu = 1;
    QCOMPARE(t->deviceIds[static_cast<size_t>(npu)], std::string("npu"));
    for (TaskId v = 0; v < t->numTasks(); ++v)
      if (plan->device[static_cast<size_t>(v)] == npu) QVERIFY(t->taskTypes[static_cast<size_t>(v)] == "Conv" || t->taskTypes[static_cast<size_t>(v)] == "Relu");
    QVERIFY(simulate(*t, *plan));
  }
}

void TstSchedPublished::partitionTunerBeatsStaticWhenSwitchingCosts() {
  // Conv is only slightly faster on the NPU, but every switch moves 200 KB over a slow link: the
  // static assignment pays two transfers per Conv, PartitionTuner keeps the chain on the CPU.
  const std::vector<std::string> types = {"Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Conv", "Relu"};
  struct Case {
    double convCpu, convNpu, lat, bpu;
    bool strict;
  };
  for (const Case& k : {Case{50, 40, 30, 100, true}, Case{500, 10, 5, 1000, false}, Case{80, 60, 10, 400, false}}) {
    const CostTable t = npuChain(types, k.convCpu, k.convNpu, 5.0, k.lat, k.bpu, 200000);
    const double stat = chainMakespan(t, staticAssignment(t));
    SchedOptions noPenalty;
    noPenalty.params["penalty_us"] = "0";
    for (bool faithful : {true, false}) {
      auto plan = makePartitionTuner(faithful)->schedule(t, {}, faithful ? noPenalty : SchedOptions{});
      QVERIFY2(plan, plan.message().c_str());
      auto tl = simulate(t, *plan);
      QVERIFY2(tl, tl.message().c_str());
      QVERIFY2(tl->makespan <= stat + 1e-9, (std::to_string(tl->makespan) + " vs static " + std::to_string(stat)).c_str());
      if (k.strict) QVERIFY(tl->makespan < stat - 1.0);
    }
    // With the default penalty the faithful variant switches no more often.
    auto plan = makePartitionTuner(true)->schedule(t, {}, {});
    QVERIFY(plan);
    QVERIFY(simulate(t, *plan));
  }
}

void TstSchedPublished::partitionTunerUsesFusion() {
  // Conv+Relu fuse on the accelerator (device 1): the pair costs less than the two ops alone.
  const std::vector<std::string> types = {"Conv", "Relu", "Conv", "Relu"};
  std::vector<double> cost = {30, 20, 5, 8, 30, 20, 5, 8};
  std::vector<EdgeSpec> edges = {{0, 1, 100}, {1, 2, 100}, {2, 3, 100}};
  CostTable t = makeTable(4, 2, cost, edges, {0, 1, 1, 0}, {kInf, 100, 100, kInf}, types);
  t.groupCost = [cost](const std::vector<TaskId>& g, DeviceId d) {
    double s = 0;
    for (TaskId v : g) s += cost[static_cast<size_t>(v) * 2 + static_cast<size_t>(d)];
    return d == 1 && g.size() == 2 ? s - 6 : s;
  };
  for (bool faithful : {true, false}) {
    SchedInfo info;
    auto plan = makePartitionTuner(faithful)->schedule(t, {}, {}, &info);
    QVERIFY2(plan, plan.message().c_str());
    QVERIFY(simulate(t, *plan));
    bool fused = false;
    for (const auto& note : info.notes) fused = fused || note.find(" 2 fused pairs") != std::string::npos;
    QVERIFY2(fused, info.notes.empty() ? "no notes" : info.notes.back().c_str());
  }
}

void TstSchedPublished::duetCorrectionNeverWorse_data() {
  QTest::addColumn<quint64>("seed");
  QTest::addColumn<int>("n");
  for (int i = 0; i < 6; ++i) QTest::newRow(("dag" + std::to_string(i)).c_str()) << quint64(300 + i) << (10 + 6 * i);
}

void TstSchedPublished::duetCorrectionNeverWorse() {
  QFETCH(quint64, seed);
  QFETCH(int, n);
  const CostTable t = randomDag(seed, n, 3, 0.15);
  auto s = makeDuet();
  SchedOptions greedyOnly;
  greedyOnly.params["max_rounds"] = "0";
  auto g = s->schedule(t, {}, greedyOnly);
  QVERIFY2(g, g.message().c_str());
  SchedInfo info;
  auto f = s->schedule(t, {}, {}, &info);
  QVERIFY2(f, f.message().c_str());
  auto tg = simulate(t, *g);
  auto tf = simulate(t, *f);
  QVERIFY(tg && tf);
  QVERIFY2(tf->makespan <= tg->makespan + 1e-9, (std::to_string(tf->makespan) + " vs greedy " + std::to_string(tg->makespan)).c_str());
  // Also on a real model.
  auto mt = modelTable("inception", "cpu-gpu-pcie", 75);
  QVERIFY2(mt, mt.message().c_str());
  auto mg = s->schedule(*mt, {}, greedyOnly);
  auto mf = s->schedule(*mt, {}, {});
  QVERIFY(mg && mf);
  auto mtg = simulate(*mt, *mg);
  auto mtf = simulate(*mt, *mf);
  QVERIFY(mtg && mtf);
  QVERIFY(mtf->makespan <= mtg->makespan + 1e-9);
}

void TstSchedPublished::dlfusionBlocksOnMulticore() {
  auto t = modelTable("resnet18", "npu-multicore");
  QVERIFY2(t, t.message().c_str());
  for (const char* mode : {"heuristic", "oracle"}) {
    SchedOptions o;
    o.params["mode"] = mode;
    SchedInfo info;
    auto plan = makeDlFusion()->schedule(*t, {}, o, &info);
    QVERIFY2(plan, plan.message().c_str());
    QVERIFY(simulate(*t, *plan));
    bool blocks = false, fused = false;
    for (const auto& note : info.notes) {
      blocks = blocks || note.find("32 cores") != std::string::npos;
      fused = fused || (note.rfind("block ", 0) == 0 && note.find(", ") < note.find("]"));
    }
    QVERIFY(blocks);
    QVERIFY(fused);
    // Ops go to the accelerator whenever it can run them.
    for (TaskId v = 0; v < t->numTasks(); ++v)
      if (t->canRun(v, 1)) QCOMPARE(plan->device[static_cast<size_t>(v)], DeviceId(1));
  }
  // Without a multi-core device the notes say every accelerator counts as 1 core.
  auto t2 = modelTable("resnet18", "cpu-npu");
  QVERIFY(t2);
  SchedInfo info;
  auto plan = makeDlFusion()->schedule(*t2, {}, {}, &info);
  QVERIFY2(plan, plan.message().c_str());
  QVERIFY(simulate(*t2, *plan));
  bool said = false;
  for (const auto& note : info.notes) said = said || note.find("1 core") != std::string::npos;
  QVERIFY(said);
}

void TstSchedPublished::coarseGroupsOnChip() {
  auto t = modelTable("resnet18", "npu-multicore");
  QVERIFY2(t, t.message().c_str());
  for (const char* mode : {"dp", "elementwise", "memory"}) {
    SchedOptions o;
    o.params["mode"] = mode;
    SchedInfo info;
    auto plan = makeCoarseSubgraphs()->schedule(*t, {}, o, &info);
    QVERIFY2(plan, plan.message().c_str());
    QVERIFY(simulate(*t, *plan));
    QVERIFY(!info.notes.empty());
  }
  // On a plain-sum task graph, grouping cannot beat each op on its best device: the DP's summed group
  // cost equals the per-op sum.
  const CostTable d = randomDag(11, 20, 3);
  SchedInfo info;
  auto plan = makeCoarseSubgraphs()->schedule(d, {}, {}, &info);
  QVERIFY(plan);
  double perOp = 0, got = 0;
  for (TaskId v = 0; v < d.numTasks(); ++v) {
    double b = kInf;
    for (DeviceId x = 0; x < 3; ++x) b = std::min(b, d.w(v, x));
    perOp += b;
    got += d.w(v, plan->device[static_cast<size_t>(v)]);
  }
  QVERIFY(near(got, perOp));
}

void TstSchedPublished::validPlansWithConstraints_data() {
  QTest::addColumn<QString>("table");
  QTest::newRow("chain") << "chain";
  QTest::newRow("dag") << "dag";
  QTest::newRow("taskgraph") << "taskgraph";
  QTest::newRow("resnet18-npu-multicore") << "resnet18/npu-multicore";
  QTest::newRow("inception-mobile-soc") << "inception/mobile-soc";
  QTest::newRow("bert-pim") << "bert/pim";
  QTest::newRow("random-cpu-gpu-shared") << "random/cpu-gpu-shared";
}

void TstSchedPublished::validPlansWithConstraints() {
  QFETCH(QString, table);
  CostTable t;
  const std::string name = table.toStdString();
  if (name == "chain") {
    t = randomChain(5, 12, 3);
  } else if (name == "dag") {
    t = randomDag(6, 25, 3, 0.2);
  } else if (name == "taskgraph") {
    auto r = parseTaskGraph(R"({"devices": ["P1","P2","P3"],
      "tasks": {"T1": [14,16,9], "T2": [13,19,18], "T3": [11,13,19], "T4": [13,8,17], "T5": [12,13,10],
                "T6": [13,16,9], "T7": [7,15,11], "T8": [5,11,14], "T9": [18,12,20], "T10": [21,7,16]},
      "edges": [["T1","T2",18],["T1","T3",12],["T1","T4",9],["T1","T5",11],["T1","T6",14],["T2","T8",19],
                ["T2","T9",16],["T3","T7",23],["T4","T8",27],["T4","T9",23],["T5","T9",13],["T6","T8",15],
                ["T7","T10",17],["T8","T10",11],["T9","T10",13]]})",
                            "heft.json");
    QVERIFY2(r, r.message().c_str());
    t = std::move(*r);
  } else {
    const auto slash = name.find('/');
    auto r = modelTable(name.substr(0, slash), name.substr(slash + 1));
    QVERIFY2(r, r.message().c_str());
    t = std::move(*r);
  }
  const int n = t.numTasks(), m = t.numDevices();
  QVERIFY(m >= 2);
  // Constraints: forbid the last device (when more than two), pin a few ops to a device that may run them.
  Constraints c;
  if (m > 2) c.forbidden.push_back(m - 1);
  for (TaskId v = 0; v < n; v += std::max(1, n / 5)) {
    for (DeviceId d = m > 2 ? m - 2 : m - 1; d >= 0; --d)
      if (c.allowed(t, v, d)) {
        c.pinned[v] = d;
        break;
      }
  }
  for (const auto& s : published()) {
    for (bool constrained : {false, true}) {
      SchedOptions o;
      o.timeLimitSec = 5;
      double lastFraction = -1;
      bool monotone = true;
      o.progress = [&](double f, const std::string&) {
        monotone = monotone && f >= lastFraction - 1e-12 && f <= 1.0 + 1e-12;
        lastFraction = f;
      };
      const Constraints cc = constrained ? c : Constraints{};
      auto plan = s->schedule(t, cc, o);
      QVERIFY2(plan, (s->name() + ": " + plan.message()).c_str());
      QCOMPARE(plan->algorithm, s->name());
      auto tl = simulate(t, *plan);
      QVERIFY2(tl, (s->name() + ": " + tl.message()).c_str());
      QVERIFY(std::isfinite(tl->makespan));
      QVERIFY2(lastFraction == 1.0 && monotone, s->name().c_str());
      for (TaskId v = 0; v < n; ++v) {
        const DeviceId d = plan->device[static_cast<size_t>(v)];
        QVERIFY2(cc.allowed(t, v, d), (s->name() + ": task " + t.taskNames[static_cast<size_t>(v)] + " on a device it may not use").c_str());
      }
    }
  }
}

void TstSchedPublished::cancellation() {
  const CostTable t = randomDag(9, 30, 3);
  std::atomic<bool> cancel{true};
  SchedOptions o;
  o.cancel = &cancel;
  for (const auto& s : published()) {
    auto plan = s->schedule(t, {}, o);
    QVERIFY2(!plan, s->name().c_str());
    QCOMPARE(plan.message(), std::string("cancelled"));
  }
  // Cancelled from the progress callback, part-way through.
  for (const auto& s : published()) {
    std::atomic<bool> late{false};
    SchedOptions o2;
    o2.cancel = &late;
    int calls = 0;
    o2.progress = [&](double, const std::string&) {
      if (++calls == 1) late = true;
    };
    auto tm = modelTable("resnet18", "npu-multicore");
    QVERIFY(tm);
    auto plan = s->schedule(*tm, {}, o2);
    if (!plan) QCOMPARE(plan.message(), std::string("cancelled"));  // some finish before looking again
  }
}

void TstSchedPublished::titlesAndDeterminism() {
  for (const auto& s : published()) {
    const bool reconstructed = s->name() == "duet" || s->name() == "pimdp" || s->name() == "dlfusion" || s->name() == "coarse";
    QCOMPARE(s->title().find("(reconstructed)") != std::string::npos, reconstructed);
    QVERIFY(!s->description().empty());
  }
  QCOMPARE(makePartitionTuner(true)->name(), std::string("partitiontuner"));
  QCOMPARE(makePartitionTuner(false)->name(), std::string("partitiontuner-clean"));
  auto t = modelTable("inception", "mobile-soc", 75);
  QVERIFY2(t, t.message().c_str());
  for (const auto& s : published()) {
    auto a = s->schedule(*t, {}, {});
    auto b = s->schedule(*t, {}, {});
    QVERIFY2(a && b, s->name().c_str());
    QVERIFY2(a->device == b->device && a->order == b->order, s->name().c_str());
  }
  // Bad parameters are errors, not silent defaults.
  SchedOptions bad;
  bad.params["penalty_us"] = "x";
  bad.params["max_states"] = "0";
  bad.params["merge_fraction"] = "-1";
  bad.params["mode"] = "nope";
  bad.params["max_group_ops"] = "0";
  for (const auto& s : published()) {
    if (s->name() == "partitiontuner-clean") continue;  // takes no parameters
    QVERIFY2(!s->schedule(*t, {}, bad), s->name().c_str());
  }
}

QTEST_APPLESS_MAIN(TstSchedPublished)
#include "tst_sched_published.moc"
