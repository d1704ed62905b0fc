// Pipe-it's heuristic (sched "pipeit", reconstructed; issue 29 item 2): its configuration and layer
// allocation counted by hand on chains over two CPU clusters, its core configurations where a platform
// lists a cluster and its cores, constraints, and `best --objective throughput` never worse than it on
// the mobile presets.
#include <QtTest>

#include <string>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/scheduler.h"
#include "sim/stream.h"

using namespace partex;

namespace {

/// A chain T0 -> T1 -> T2 -> T3 on a big and a little CPU cluster and an NPU: big [10, 2, 2, 2],
/// little [5, 8, 8, 8], NPU 1 each; free edges.
CostTable bigLittle() {
  const std::string json = R"({"devices": ["big", "little", "npu"],
    "tasks": {"T0": [10, 5, 1], "T1": [2, 8, 1], "T2": [2, 8, 1], "T3": [2, 8, 1]},
    "edges": [["T0","T1",0], ["T1","T2",0], ["T2","T3",0]]})";
  auto t = parseTaskGraph(json, "biglittle.json");
  if (!t) qFatal("%s", t.message().c_str());
  t->deviceKinds = {"cpu", "cpu", "npu"};
  return *t;
}

/// The chain of tst_stream: four tasks of 10 us on P0 and P1, `third` us on P01 (a cluster whose cores
/// are P0 and P1: exclusive with both).
CostTable clusterAndCores(double third) {
  const std::string x = std::to_string(third);
  const std::string json = R"({"devices": ["P0", "P1", "P01"], "tasks": {"T0": [10, 10, )" + x +
                           R"(], "T1": [10, 10, )" + x + R"(], "T2": [10, 10, )" + x + R"(], "T3": [10, 10, )" + x +
                           R"(]}, "edges": [["T0","T1",0], ["T1","T2",0], ["T2","T3",0]]})";
  auto t = parseTaskGraph(json, "cores.json");
  if (!t) qFatal("%s", t.message().c_str());
  t->exclusiveWith = {{2}, {2}, {0, 1}};
  return *t;
}

double period(const CostTable& t, const Plan& p) {
  auto s = simulateStream(t, p);
  if (!s) qFatal("%s", s.message().c_str());
  return s->periodUs;
}

Result<Plan> pipeit(const CostTable& t, const Constraints& c = {}, SchedInfo* info = nullptr) {
  return findScheduler("pipeit")->schedule(t, c, {}, info);
}

}  // namespace

class TestPipeIt : public QObject {
  Q_OBJECT

 private slots:
  // By hand. The NPU holds no stage (Pipe-it pipelines the CPU clusters). Configurations:
  //  - big alone: 16; little alone: 29.
  //  - big then little: balanced period P0 = 1 / (1/16 + 1/29) = 10.31; big takes T0 (10; with T1 it
  //    would be 12, farther from P0), little T1-T3 (24). Refinement: the bottleneck little gives T1 to
  //    big (12 / 16), then T2 (14 / 8); big giving T2 back would make 16: stop at 14.
  //  - little then big: little takes T0 (5) and T1 (13, nearer P0 than 5), big T2-T3 (4). Refinement:
  //    little gives T1 to big (5 / 6); big giving T1 back makes 13: stop at 6.
  // The shortest predicted period is 6: T0 on little, T1-T3 on big; its stream runs at 6 us.
  void handCountedTwoClusters() {
    const CostTable t = bigLittle();
    SchedInfo info;
    auto p = pipeit(t, {}, &info);
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(p->device, (std::vector<DeviceId>{1, 0, 0, 0}));
    QCOMPARE(period(t, *p), 6.0);
    QVERIFY(!info.notes.empty());
    QVERIFY2(info.notes[0].find("predicted period 6.0 us, latency 11.0 us") != std::string::npos,
             info.notes[0].c_str());
    QVERIFY2(info.notes[0].find("little (1 operators, 5.0 us), big (3 operators, 6.0 us)") != std::string::npos,
             info.notes[0].c_str());
    // Three configurations (big, little, both), four stage orders.
    QVERIFY2(info.notes[1].find("3 core configurations, 4 stage orders") != std::string::npos, info.notes[1].c_str());
    // The pipeline programme may use the NPU (4 us alone): never slower than Pipe-it's CPU pipeline.
    auto pp = findScheduler("pipeline")->schedule(t, {}, {});
    QVERIFY(pp);
    QVERIFY(period(t, *pp) <= 6.0);
  }

  // The core configuration: two single-core stages (10 + 10 | 10 + 10: 20 us) against the whole
  // cluster as one stage (4 x 6 = 24 us): the cores win; with a cluster of 4 us per task (16 us) the
  // cluster wins. The cluster and its cores are never stages together.
  void coreConfiguration() {
    CostTable t = clusterAndCores(6);
    auto p = pipeit(t);
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(period(t, *p), 20.0);
    QVERIFY(p->device[0] == p->device[1] && p->device[2] == p->device[3] && p->device[1] != p->device[2]);
    for (DeviceId d : p->device) QVERIFY(d != 2);
    t = clusterAndCores(4);
    p = pipeit(t);
    QVERIFY(p);
    QCOMPARE(period(t, *p), 16.0);
    for (DeviceId d : p->device) QCOMPARE(d, DeviceId{2});
  }

  // Constraints: a task pinned to the NPU runs there; with the little cluster forbidden, big is the
  // one stage left (16 us, the NPU still holding no stage).
  void constraints() {
    const CostTable t = bigLittle();
    Constraints c;
    c.pinned[3] = 2;
    auto p = pipeit(t, c);
    QVERIFY2(p, p ? "" : p.message().c_str());
    QCOMPARE(p->device[3], DeviceId{2});
    // T3 counts at its NPU time (1 us) in its stage's: little T0 (5), big T1-T2 (4) and T3 beside.
    QCOMPARE(p->device[0], DeviceId{1});
    QCOMPARE(p->device[1], DeviceId{0});
    Constraints f;
    f.forbidden = {1};
    p = pipeit(t, f);
    QVERIFY(p);
    QCOMPARE(p->device, (std::vector<DeviceId>{0, 0, 0, 0}));
    QCOMPARE(period(t, *p), 16.0);
  }

  // The latency bound (predicted latency: the sum of the stages). big [2, 2, 2, 2], little [6, 6, 6, 6]:
  // big alone has period 8 and latency 8; big T0-T2 then little T3 (P0 = 1 / (1/8 + 1/24) = 6: big
  // takes 2, 4, 6) has period 6 and latency 12, as little T0 then big T1-T3. Unbounded: period 6, the
  // first of the two (big first: the types in index order); within 10 us: big alone; within 5 us,
  // which nothing meets: the lowest latency, big alone, and a note.
  void latencyBound() {
    auto t = parseTaskGraph(R"({"devices": ["big", "little"],
      "tasks": {"T0": [2, 6], "T1": [2, 6], "T2": [2, 6], "T3": [2, 6]},
      "edges": [["T0","T1",0], ["T1","T2",0], ["T2","T3",0]]})",
                            "bound.json");
    QVERIFY2(t, t ? "" : t.message().c_str());
    t->deviceKinds = {"cpu", "cpu"};
    auto p = pipeit(*t);
    QVERIFY(p);
    QCOMPARE(p->device, (std::vector<DeviceId>{0, 0, 0, 1}));
    QCOMPARE(period(*t, *p), 6.0);
    SchedOptions o;
    o.objective = Objective::Throughput;
    o.latencyBoundUs = 10;
    p = findScheduler("pipeit")->schedule(*t, {}, o);
    QVERIFY(p);
    QCOMPARE(p->device, (std::vector<DeviceId>{0, 0, 0, 0}));
    QCOMPARE(period(*t, *p), 8.0);
    o.latencyBoundUs = 5;
    SchedInfo info;
    p = findScheduler("pipeit")->schedule(*t, {}, o, &info);
    QVERIFY(p);
    QCOMPARE(p->device, (std::vector<DeviceId>{0, 0, 0, 0}));
    bool noted = false;
    for (const auto& n : info.notes)
      noted = noted || n.find("no configuration meets the latency bound") != std::string::npos;
    QVERIFY(noted);
  }

  // On the mobile presets (modelled): Pipe-it's stages are on the CPU clusters only, and best under the
  // throughput objective is never slower than it.
  void bestNeverWorseOnMobilePresets_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("preset");
    for (const char* kind : {"resnet18", "mobilenetv2"})
      for (const char* preset : {"mobile-soc", "cpu-npu"})
        QTest::newRow((std::string(kind) + "/" + preset).c_str()) << QString(kind) << QString(preset);
  }
  void bestNeverWorseOnMobilePresets() {
    QFETCH(QString, kind);
    QFETCH(QString, preset);
    GenSpec s;
    s.kind = kind.toStdString();
    s.imageSize = 64;
    auto bytes = generateModel(s);
    QVERIFY2(bytes, bytes ? "" : bytes.message().c_str());
    auto g = importOnnxBytes(*bytes, s.kind + ".onnx");
    QVERIFY2(g, g ? "" : g.message().c_str());
    auto platform = loadPreset(preset.toStdString());
    QVERIFY2(platform, platform ? "" : platform.message().c_str());
    auto table = buildCostTable(*g, characteriseAll(*g), *platform);
    QVERIFY2(table, table ? "" : table.message().c_str());
    const CostTable& t = *table;
    auto p = pipeit(t);
    QVERIFY2(p, p ? "" : p.message().c_str());
    for (DeviceId d : p->device) QCOMPARE(t.deviceKinds[static_cast<size_t>(d)], std::string("cpu"));
    SchedOptions o;
    o.objective = Objective::Throughput;
    o.timeLimitSec = 2;
    auto b = findScheduler("best")->schedule(t, {}, o);
    QVERIFY2(b, b ? "" : b.message().c_str());
    const double pipe = period(t, *p), best = period(t, *b);
    QVERIFY2(best <= pipe * (1 + 1e-9),
             (std::to_string(best) + " us against pipeit's " + std::to_string(pipe)).c_str());
  }
};

QTEST_GUILESS_MAIN(TestPipeIt)
#include "tst_pipeit.moc"
