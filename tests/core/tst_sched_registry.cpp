// The scheduler registry: every factory of algorithms.h, in display order, found by name; titles
// mark the reconstructed papers; every plan any of them returns on the HEFT example is valid and not
// below the lower bound.
#include <QtTest>

#include <set>

#include "cost/costtable.h"
#include "sched/algorithms.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"
#include "taskgraph_fixture.h"
#include "testutil.h"

using namespace partex;

class TestSchedRegistry : public QObject {
  Q_OBJECT

 private slots:
  void namesInDisplayOrder() {
    const std::vector<std::string> expected{"single", "priority", "static", "greedy", "heft",
                                            "cpop", "peft", "partitiontuner", "partitiontuner-clean", "duet",
                                            "pimdp", "dlfusion", "coarse", "exact", "best"};
    std::vector<std::string> names;
    for (const auto& s : allSchedulers()) names.push_back(s->name());
    QCOMPARE(names, expected);
    for (const auto& s : allSchedulers()) {
      QCOMPARE(findScheduler(s->name()), s.get());
      QVERIFY2(!s->title().empty(), s->name().c_str());
      QVERIFY2(!s->description().empty(), s->name().c_str());
    }
    QVERIFY(findScheduler("nope") == nullptr);
    QVERIFY(findScheduler("") == nullptr);
    QVERIFY(findScheduler("HEFT") == nullptr);  // names are exact
  }

  void reconstructedTitles() {
    // algorithms.md: the papers whose full text is not public are marked "(reconstructed)".
    const std::set<std::string> reconstructed{"duet", "pimdp", "dlfusion", "coarse"};
    for (const auto& s : allSchedulers()) {
      const bool marked = s->title().find("(reconstructed)") != std::string::npos;
      QVERIFY2(marked == (reconstructed.count(s->name()) > 0), (s->name() + ": " + s->title()).c_str());
    }
  }

  void everyPlanOnTheHeftExampleIsValid() {
    auto t = test::testTaskGraph("heft2002.json");
    QVERIFY2(t, t.message().c_str());
    const double lb = lowerBound(*t);
    SchedOptions o;
    o.sim.unlimitedLinks = true;
    o.timeLimitSec = 2.0;
    for (const auto& s : allSchedulers()) {
      auto plan = s->schedule(*t, {}, o);
      // Every registered algorithm schedules a plain task graph: a failure is a regression.
      QVERIFY2(plan, (s->name() + ": " + plan.message()).c_str());
      QVERIFY2(checkPlanShape(*t, *plan), s->name().c_str());
      auto tl = simulate(*t, *plan, o.sim);
      QVERIFY2(tl, tl.message().c_str());
      qInfo("%-22s makespan %g", s->name().c_str(), tl->makespan);
      QVERIFY2(tl->makespan >= lb - 1e-9, s->name().c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestSchedRegistry)
#include "tst_sched_registry.moc"
