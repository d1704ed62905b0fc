// Time limits and Cancel (issue 11, section 4): every scheduler of the registry, on seeded task graphs
// of five families (fork-join, in-trees, out-trees, chains, layered; 20 to 200 tasks on 2 to 5
// devices), returns within its limit + 10% + 100 ms with a valid plan, marked not proven optimal where
// the limit cut it short, and returns within 100 ms of a Cancel. Plus the regression graph of the issue
// (tests/data/taskgraphs/forkjoin29.json), on which exact and best used to run for minutes.
//
// Timing tolerance: the bound checked is the product's, limit * 1.1 + 0.1 s, plus a slack for the
// machine: 0.1 s in a plain build (a shared 2-core VM), 0.5 s under the sanitizers (several times
// slower); PARTEX_TIME_SLACK_SEC overrides it. Overruns of the product bound within the slack are
// reported (qInfo), not failed.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "cost/costtable.h"
#include "sched/llamarules.h"
#include "sched/scheduler.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "testutil.h"

using namespace partex;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

double slackSec() {
  if (const char* e = std::getenv("PARTEX_TIME_SLACK_SEC"); e && *e) return std::max(0.0, std::atof(e));
  return kSanitized ? 0.5 : 0.1;
}

constexpr double kLimitSec = 0.3;   ///< Time limit of the family runs.
constexpr double kCancelAfter = 0.05;

/// The product requirement: limit + 10% + 100 ms.
double productBound(double limit) { return limit * 1.1 + 0.1; }

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

enum class Family { ForkJoin, InTree, OutTree, Chain, Layered };

const char* familyName(Family f) {
  switch (f) {
    case Family::ForkJoin: return "fork-join";
    case Family::InTree: return "in-tree";
    case Family::OutTree: return "out-tree";
    case Family::Chain: return "chain";
    case Family::Layered: return "layered";
  }
  return "?";
}

/// A seeded task graph of the family, shaped like the issue's: device 0 about twice as slow as the
/// others, fixed transfer times of the order of the task times (what makes the searches hard). Task
/// ids are a topological order.
CostTable makeGraph(Family f, int n, int m, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(n) * 101 + static_cast<uint64_t>(m) * 7 + static_cast<uint64_t>(f));
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };  // [lo, hi]
  CostTable t;
  t.name = std::string(familyName(f)) + "-" + std::to_string(n) + "x" + std::to_string(m);
  for (int d = 0; d < m; ++d) t.deviceIds.push_back("d" + std::to_string(d));
  std::vector<double> speed(static_cast<size_t>(m));
  for (int d = 0; d < m; ++d) speed[static_cast<size_t>(d)] = d == 0 ? 1.0 : uni(0.4, 0.65);
  for (int v = 0; v < n; ++v) {
    t.taskNames.push_back("t" + std::to_string(v));
    t.taskTypes.push_back("Task");
    const double base = uni(1.0, 14.0);
    for (int d = 0; d < m; ++d) {
      t.cost.push_back(base * speed[static_cast<size_t>(d)] * uni(0.95, 1.05));
      t.provenance.push_back(Provenance::Modelled);
    }
  }
  auto edge = [&](int a, int b) { t.edges.push_back(Edge{a, b, 0, uni(5.0, 30.0)}); };
  switch (f) {
    case Family::ForkJoin: {
      // One fork of n - 2 tasks up to 40 tasks (the graphs), else stages of 20 parallel tasks.
      const int width = n <= 40 ? n - 2 : 20;
      int fork = 0, v = 1;
      while (v < n - 1) {
        const int w = std::min(width, n - 1 - v);
        const int join = v + w;
        for (int k = v; k < join; ++k) {
          edge(fork, k);
          edge(k, join);
        }
        fork = join;
        v = join + 1;
      }
      break;
    }
    case Family::InTree:  // every task but the last feeds one later task
      for (int v = 0; v + 1 < n; ++v) edge(v, pick(v + 1, std::min(n - 1, v + 1 + n / 6)));
      break;
    case Family::OutTree:  // every task but the first is fed by one earlier task
      for (int v = 1; v < n; ++v) edge(pick(std::max(0, v - 1 - n / 6), v - 1), v);
      break;
    case Family::Chain:
      for (int v = 0; v + 1 < n; ++v) edge(v, v + 1);
      break;
    case Family::Layered: {
      const int width = std::max(2, static_cast<int>(std::lround(std::sqrt(n))));
      for (int v = width; v < n; ++v) {
        const int layer = v / width, lo = (layer - 1) * width, hi = layer * width - 1;
        const int k = pick(1, 3);
        std::vector<int> preds;
        for (int i = 0; i < k; ++i) {
          const int p = pick(lo, hi);
          if (std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
        }
        std::sort(preds.begin(), preds.end());
        for (int p : preds) edge(p, v);
      }
      break;
    }
  }
  finishTaskTable(t);
  return t;
}

struct Shape {
  int tasks;
  int devices;
};

/// The sizes of each family: small and medium graphs that exact accepts (<= 60 tasks), and one of 200.
std::vector<Shape> shapesOf(Family f) {
  const int k = static_cast<int>(f);
  // Device counts rotate over 2..5 so that every family sees several.
  auto dev = [&](int i) { return 2 + (k + i) % 4; };
  const int small = f == Family::ForkJoin ? 29 : 20;
  return {{small, dev(0) == 2 ? 4 : dev(0)}, {50, dev(1)}, {200, dev(2)}};
}

/// Empty when the plan is complete, consistent and simulates; else why not.
std::string planProblem(const CostTable& t, const Plan& plan) {
  if (auto st = checkPlanShape(t, plan); !st) return "bad shape: " + st.message();
  auto tl = simulate(t, plan);
  if (!tl) return "does not simulate: " + tl.message();
  if (!(tl->makespan > 0) || !std::isfinite(tl->makespan)) return "makespan " + std::to_string(tl->makespan);
  return {};
}

bool timeLimitNoted(const SchedInfo& info) {
  for (const auto& n : info.notes)
    if (n.rfind("time limit reached", 0) == 0) return true;
  return false;
}

/// Algorithms that search until the deadline on these graphs (the rest are single passes that finish
/// on their own, or cut their search at the deadline and say so).
bool searchesToTheLimit(const std::string& name) { return name == "exact" || name == "best"; }

struct Worst {
  double overLimit = -1e9;  ///< Largest elapsed - limit.
  std::string where;
};

}  // namespace

class TestSchedTimeLimit : public QObject {
  Q_OBJECT

  std::map<std::string, Worst> worst_;  ///< Per scheduler, over the time-limit runs.
  std::map<std::string, double> worstCancel_;  ///< Per scheduler: slowest return after a Cancel.
  int productOverruns_ = 0;
  double slack_ = slackSec();

 private slots:
  void initTestCase() {
    qInfo("sanitizer build: %s; timing slack %.3f s over limit * 1.1 + 0.1 s", kSanitized ? "yes" : "no", slack_);
  }

  void cleanupTestCase() {
    for (const auto& [name, w] : worst_)
      qInfo("%-22s worst elapsed - limit: %+.3f s (%s)", name.c_str(), w.overLimit, w.where.c_str());
    for (const auto& [name, r] : worstCancel_) qInfo("%-22s slowest return after Cancel: %.3f s", name.c_str(), r);
    qInfo("runs above the product bound (limit * 1.1 + 0.1 s) but within the slack: %d", productOverruns_);
  }

  // ---- Every scheduler, every family: the time limit --------------------------------------------

  void timeLimit_data() {
    QTest::addColumn<int>("family");
    QTest::addColumn<int>("tasks");
    QTest::addColumn<int>("devices");
    for (Family f : {Family::ForkJoin, Family::InTree, Family::OutTree, Family::Chain, Family::Layered})
      for (const Shape& s : shapesOf(f))
        QTest::addRow("%s %dx%d", familyName(f), s.tasks, s.devices) << static_cast<int>(f) << s.tasks << s.devices;
  }

  void timeLimit() {
    QFETCH(int, family);
    QFETCH(int, tasks);
    QFETCH(int, devices);
    const CostTable t = makeGraph(static_cast<Family>(family), tasks, devices, 11);
    for (const auto& s : allSchedulers()) {
      const std::string what = s->name() + " on " + t.name;
      SchedOptions o;
      o.timeLimitSec = kLimitSec;
      SchedInfo info;
      const auto t0 = std::chrono::steady_clock::now();
      auto plan = s->schedule(t, {}, o, &info);
      const double sec = secondsSince(t0);
      Worst& w = worst_[s->name()];
      if (sec - kLimitSec > w.overLimit) w = {sec - kLimitSec, t.name};
      if (sec > productBound(kLimitSec)) ++productOverruns_;
      QVERIFY2(sec <= productBound(kLimitSec) + slack_, (what + ": " + std::to_string(sec) + " s").c_str());
      if (!plan) {
        // The exact solver refuses graphs above its max_tasks (60), at once; offload refuses graphs
        // without layer names.
        QVERIFY2((s->name() == "exact" && tasks > 60) || (isLlamaRule(s->name()) && plan.message().find("no layer names") != std::string::npos),
                 (what + ": " + plan.message()).c_str());
        continue;
      }
      const std::string bad = planProblem(t, *plan);
      QVERIFY2(bad.empty(), (what + ": " + bad).c_str());
      if (timeLimitNoted(info)) QVERIFY2(!info.optimal, (what + ": optimal although the time limit cut it").c_str());
      if (searchesToTheLimit(s->name()) && sec >= kLimitSec)
        QVERIFY2(timeLimitNoted(info) && !info.optimal, (what + ": ran to the limit without saying so").c_str());
    }
  }

  // ---- Every scheduler, every family: Cancel ----------------------------------------------------

  void cancel_data() {
    QTest::addColumn<int>("family");
    QTest::addColumn<int>("tasks");
    QTest::addColumn<int>("devices");
    for (Family f : {Family::ForkJoin, Family::InTree, Family::OutTree, Family::Chain, Family::Layered}) {
      const Shape s = shapesOf(f)[1];
      QTest::addRow("%s %dx%d", familyName(f), s.tasks, s.devices) << static_cast<int>(f) << s.tasks << s.devices;
    }
  }

  void cancel() {
    QFETCH(int, family);
    QFETCH(int, tasks);
    QFETCH(int, devices);
    const CostTable t = makeGraph(static_cast<Family>(family), tasks, devices, 12);
    for (const auto& s : allSchedulers()) {
      const std::string what = s->name() + " on " + t.name;
      std::atomic<bool> token{false};
      SchedOptions o;
      o.timeLimitSec = 60;  // only the Cancel stops it
      o.cancel = &token;
      const auto t0 = std::chrono::steady_clock::now();
      std::chrono::steady_clock::time_point cancelledAt{};
      std::atomic<bool> done{false};
      std::thread canceller([&] {
        while (!done.load() && secondsSince(t0) < kCancelAfter) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (done.load()) return;
        cancelledAt = std::chrono::steady_clock::now();
        token.store(true);
      });
      auto plan = s->schedule(t, {}, o);
      const auto end = std::chrono::steady_clock::now();
      done.store(true);
      canceller.join();
      if (token.load()) {
        const double reaction = std::chrono::duration<double>(end - cancelledAt).count();
        worstCancel_[s->name()] = std::max(worstCancel_[s->name()], reaction);
        QVERIFY2(reaction <= 0.1 + slack_, (what + ": returned " + std::to_string(reaction) + " s after Cancel").c_str());
      }
      // Cancelled: the error "cancelled"; finished before the Cancel: a valid plan.
      if (plan) {
        const std::string bad = planProblem(t, *plan);
        QVERIFY2(bad.empty(), (what + ": " + bad).c_str());
      } else {
        QVERIFY2(plan.message() == "cancelled" || (s->name() == "exact" && tasks > 60) ||
                     (isLlamaRule(s->name()) && plan.message().find("no layer names") != std::string::npos),
                 (what + ": " + plan.message()).c_str());
      }
    }
  }

  // ---- The regression graph ---------------------------------------------------------------

  void regressionForkJoin29_data() {
    QTest::addColumn<QString>("algo");
    QTest::newRow("exact") << "exact";
    QTest::newRow("best") << "best";
  }

  void regressionForkJoin29() {
    QFETCH(QString, algo);
    const std::string path = test::testDataDir() + "/taskgraphs/forkjoin29.json";
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto table = parseTaskGraph(ss.str(), path);
    QVERIFY2(table, table.message().c_str());
    const CostTable& t = *table;
    QCOMPARE(t.numTasks(), 29);
    QCOMPARE(t.numDevices(), 4);
    const Scheduler* s = findScheduler(algo.toStdString());
    QVERIFY(s);
    SchedOptions o;
    o.timeLimitSec = 1.0;
    SchedInfo info;
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = s->schedule(t, {}, o, &info);
    const double sec = secondsSince(t0);
    qInfo("%s on forkjoin29, --time-limit 1: %.3f s", s->name().c_str(), sec);
    QVERIFY2(sec <= productBound(1.0) + slack_, std::to_string(sec).c_str());
    QVERIFY2(plan, plan.message().c_str());
    const std::string bad = planProblem(t, *plan);
    QVERIFY2(bad.empty(), bad.c_str());
    QVERIFY(!info.optimal);
    QVERIFY(timeLimitNoted(info));
    // The best plan so far is at least as good as the warm start / portfolio's HEFT.
    auto heft = findScheduler("heft")->schedule(t, {}, o);
    QVERIFY(heft);
    QVERIFY(simulate(t, *plan)->makespan <= simulate(t, *heft)->makespan + 1e-9);
  }

  // ---- The branching on fork successors one by one is exact ---------------------------------------

  void successorBranchingIsExact_data() {
    QTest::addColumn<int>("family");
    QTest::addColumn<int>("tasks");
    QTest::addColumn<int>("devices");
    QTest::newRow("fork-join 9x3") << static_cast<int>(Family::ForkJoin) << 9 << 3;
    QTest::newRow("fork-join 8x4") << static_cast<int>(Family::ForkJoin) << 8 << 4;
    QTest::newRow("out-tree 10x3") << static_cast<int>(Family::OutTree) << 10 << 3;
    QTest::newRow("layered 9x3") << static_cast<int>(Family::Layered) << 9 << 3;
  }

  void successorBranchingIsExact() {
    QFETCH(int, family);
    QFETCH(int, tasks);
    QFETCH(int, devices);
    const CostTable t = makeGraph(static_cast<Family>(family), tasks, devices, 5);
    double ms[2] = {0, 0};
    for (int flat = 0; flat < 2; ++flat) {
      SchedOptions o;
      o.timeLimitSec = 60;
      o.params["warm_best"] = "0";
      o.params["flat_combos"] = flat ? "1e12" : "1";  // every combination listed flat, or one successor at a time
      SchedInfo info;
      auto plan = findScheduler("exact")->schedule(t, {}, o, &info);
      QVERIFY2(plan, plan.message().c_str());
      QVERIFY2(info.optimal, flat ? "flat" : "one by one");
      ms[flat] = simulate(t, *plan)->makespan;
    }
    QVERIFY2(std::fabs(ms[0] - ms[1]) <= 1e-9 * std::max(1.0, ms[1]), (std::to_string(ms[0]) + " vs " + std::to_string(ms[1])).c_str());
  }

  // ---- Deadline ------------------------------------------------------------------------------------

  void deadlineBasics() {
    QVERIFY(Deadline().never());
    QVERIFY(!Deadline().passed());
    QVERIFY(std::isinf(Deadline().leftSec()));
    QVERIFY(Deadline::in(0).passed());
    QVERIFY(Deadline::in(-1).passed());
    QVERIFY(Deadline::in(std::numeric_limits<double>::infinity()).never());
    const Deadline a = Deadline::in(10), b = Deadline::in(20);
    QVERIFY(a.earliest(b).at() == a.at());
    QVERIFY(b.earliest(a).at() == a.at());
    QVERIFY(Deadline().earliest(a).at() == a.at());
    QVERIFY(b.within(5).leftSec() <= 5.0);
    SchedOptions o;
    o.timeLimitSec = 0;
    QVERIFY(o.startDeadline().never());
    QVERIFY(o.startDeadline(10).leftSec() <= 10.0 && o.startDeadline(10).leftSec() > 9.0);
    o.timeLimitSec = 30;
    o.deadline = Deadline::in(1);
    QVERIFY(o.startDeadline().leftSec() <= 1.0);
  }
};

QTEST_APPLESS_MAIN(TestSchedTimeLimit)
#include "tst_sched_timelimit.moc"
