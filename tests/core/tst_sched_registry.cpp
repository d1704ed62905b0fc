// The scheduler registry: every factory of algorithms.h, in display order, found by name; titles
// mark the reconstructed papers; every plan any of them returns on the HEFT example is valid and not
// below the lower bound.
#include <QtTest>

#include <set>

#include "cost/costtable.h"
#include "sched/llamarules.h"
#include "sched/algorithms.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"
#include "taskgraph_fixture.h"
#include "testutil.h"

using namespace partex;

namespace {

/// A scheduler whose own step returns whatever plan the test gives it, to check the rules schedule()
/// applies around every algorithm.
class Scripted final : public Scheduler {
 public:
  explicit Scripted(Plan p) : plan_(std::move(p)) {}
  std::string name() const override { return "scripted"; }
  std::string title() const override { return "Scripted"; }
  std::string description() const override { return "returns a given plan"; }
  mutable int runs = 0;

 protected:
  Result<Plan> run(const CostTable&, const Constraints&, const SchedOptions&, SchedInfo* info) const override {
    ++runs;
    if (!info) return makeError("no info");  // schedule() always passes one
    return plan_;
  }

 private:
  Plan plan_;
};

}  // namespace

class TestSchedRegistry : public QObject {
  Q_OBJECT

 private slots:
  void namesInDisplayOrder() {
    const std::vector<std::string> expected{
        "single", "priority", "static", "greedy", "heft", "cpop", "peft", "minmin", "maxmin", "sufferage", "mct", "met",
        "olb", "duplex", "etf", "hbmct", "partitiontuner", "partitiontuner-clean", "duet", "pimdp", "dlfusion", "coarse",
        "offload", "fit", "n-cpu-moe", "n-cpu-ffn", "ot", "pipeline", "pipeit", "exact", "best"};
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
    const std::set<std::string> reconstructed{"duet", "pimdp", "dlfusion", "coarse", "hbmct", "pipeit"};
    for (const auto& s : allSchedulers()) {
      const bool marked = s->title().find("(reconstructed)") != std::string::npos;
      QVERIFY2(marked == (reconstructed.count(s->name()) > 0), (s->name() + ": " + s->title()).c_str());
    }
  }

  /// schedule() checks, runs, validates and stamps, the same for every algorithm.
  void sharedRulesAroundEveryAlgorithm() {
    auto t = test::testTaskGraph("heft2002.json");
    QVERIFY2(t, t.message().c_str());
    const int n = t->numTasks();
    Plan good;
    good.device.assign(static_cast<size_t>(n), 0);
    good.order.assign(static_cast<size_t>(t->numDevices()), {});
    good.order[0] = t->topoOrder();
    good.algorithm = "something else";
    SchedOptions o;
    o.params["k"] = "v";
    {
      Scripted s(good);
      auto p = s.schedule(*t, {}, o);  // null info: the rules pass their own
      QVERIFY2(p, p.message().c_str());
      QCOMPARE(p->algorithm, std::string("scripted"));  // stamped
      QVERIFY(p->optionsJson.find("\"k\"") != std::string::npos);
      // A pin the plan breaks: an error naming the algorithm, not a wrong plan.
      Constraints c;
      c.pinned[0] = 1;
      auto broken = s.schedule(*t, c, o);
      QVERIFY(!broken);
      QVERIFY2(broken.message().find("scripted") != std::string::npos, broken.message().c_str());
      // Impossible constraints, a cancelled run and a passed deadline never reach run().
      const int before = s.runs;
      Constraints bad;
      bad.pinned[0] = 99;
      QVERIFY(!s.schedule(*t, bad, o));
      std::atomic<bool> cancel{true};
      SchedOptions oc = o;
      oc.cancel = &cancel;
      auto cancelled = s.schedule(*t, {}, oc);
      QVERIFY(!cancelled);
      QCOMPARE(cancelled.message(), std::string("cancelled"));
      SchedOptions od = o;
      od.deadline = Deadline::in(0);
      QVERIFY(!s.schedule(*t, {}, od));
      QCOMPARE(s.runs, before);
    }
    {
      Plan incomplete = good;
      incomplete.order[0].pop_back();  // a task on no device's order
      Scripted s(incomplete);
      auto p = s.schedule(*t, {}, o);
      QVERIFY(!p);
      QVERIFY2(p.message().find("scripted made an invalid plan") != std::string::npos, p.message().c_str());
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
      if (isLlamaRule(s->name())) {
        // The first-k-layers rule needs layer names: a task graph has none, and it says so in one line.
        QVERIFY(!plan);
        QVERIFY2(plan.message().find("has no layer names") != std::string::npos, plan.message().c_str());
        QVERIFY(plan.message().find('\n') == std::string::npos);
        continue;
      }
      // Every other registered algorithm schedules a plain task graph: a failure is a regression.
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
