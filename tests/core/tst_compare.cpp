// The algorithm comparison (sched/compare.h), the rule the CLI's `compare` and the GUI's Compare panel
// share: the best single device is the `single` plan on each device, the fastest; speed-ups and ratios
// follow from it; exact is skipped above its size limit unless named; exact's proven makespan is the
// optimum; an unknown name is a row with an error, not a crash.
#include <QtTest>

#include "cost/costtable.h"
#include "sched/compare.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"
#include "taskgraph_fixture.h"
#include "testutil.h"

using namespace partex;

namespace {

CostTable heftExample() {
  auto t = test::testTaskGraph("heft2002.json");
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

/// A chain of n tasks on two devices, the second twice as fast for every other task.
CostTable chain(int n) {
  std::string json = R"({"name": "chain", "devices": ["A", "B"], "tasks": {)";
  for (int i = 0; i < n; ++i)
    json += (i ? ", " : "") + std::string("\"t") + std::to_string(i) + "\": [" + std::to_string(10) + ", " +
            std::to_string(i % 2 ? 5 : 20) + "]";
  json += R"(}, "edges": [)";
  for (int i = 1; i < n; ++i)
    json += (i > 1 ? ", " : "") + std::string("[\"t") + std::to_string(i - 1) + "\", \"t" + std::to_string(i) + "\", 1]";
  json += "]}";
  auto t = parseTaskGraph(json, "chain.json");
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT

 private slots:
  void bestSingleIsTheFastestSinglePlan() {
    const CostTable t = heftExample();
    SchedOptions o;
    o.sim.unlimitedLinks = true;
    double want = 0;
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      SchedOptions so = o;
      so.params["device"] = t.deviceIds[static_cast<size_t>(d)];
      auto plan = findScheduler("single")->schedule(t, {}, so);
      QVERIFY2(plan, plan.message().c_str());
      auto tl = simulate(t, *plan, o.sim);
      QVERIFY(tl);
      if (want == 0 || tl->makespan < want) want = tl->makespan;
    }
    QCOMPARE(bestSingleDeviceUs(t, {}, o), want);
    const Comparison c = compareAlgorithms(t, {}, o, {"heft", "nope", "exact"}, false);
    QCOMPARE(c.bestSingleUs, want);
    QCOMPARE(c.rows.size(), size_t{3});
    QCOMPARE(c.rows[0].algorithm, std::string("heft"));
    QVERIFY(c.rows[0].valid);
    QCOMPARE(c.rows[0].makespanUs, 80.0);  // the paper's HEFT makespan
    QCOMPARE(c.rows[0].speedup, want / 80.0);
    QCOMPARE(c.rows[0].ratioToBound, 80.0 / lowerBound(t));
    QVERIFY(!c.rows[1].valid);
    QVERIFY2(c.rows[1].error.find("unknown algorithm") != std::string::npos, c.rows[1].error.c_str());
    // exact on 10 tasks runs and proves its optimum, which becomes the comparison's optimum.
    QVERIFY2(c.rows[2].valid && c.rows[2].optimal, c.rows[2].error.c_str());
    QCOMPARE(c.optimumUs, c.rows[2].makespanUs);
    QVERIFY(c.optimumUs <= 80.0);
  }

  void exactIsSkippedAboveItsLimitUnlessNamed() {
    const CostTable t = chain(kExactAutoLimit + 5);
    SchedOptions o;
    o.timeLimitSec = 2;
    const Comparison skipped = compareAlgorithms(t, {}, o, {"exact"}, false);
    QCOMPARE(skipped.rows.size(), size_t{1});
    QVERIFY(!skipped.rows[0].valid);
    QVERIFY2(skipped.rows[0].error.rfind("skipped:", 0) == 0, skipped.rows[0].error.c_str());
    QCOMPARE(skipped.optimumUs, 0.0);
    const Comparison named = compareAlgorithms(t, {}, o, {"exact"}, true);
    QVERIFY2(named.rows[0].valid, named.rows[0].error.c_str());
  }

  void cancelStopsBetweenRows() {
    const CostTable t = heftExample();
    std::atomic<bool> cancel{true};
    SchedOptions o;
    o.cancel = &cancel;
    const Comparison c = compareAlgorithms(t, {}, o, {"heft", "cpop"}, false);
    QVERIFY(c.rows.empty());
  }
};

QTEST_APPLESS_MAIN(TestCompare)
#include "tst_compare.moc"
