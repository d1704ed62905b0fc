// Teaching mode: the panel steps through the real scheduler's decisions (HEFT on the HEFT paper's
// example, PartitionTuner's DP), its tables follow, and the decided devices end as the plan.
#include <QAbstractItemModelTester>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <QComboBox>

#include <fstream>
#include <sstream>

#include "cost/costtable.h"
#include "gui/teachpanel.h"
#include "sched/scheduler.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

std::shared_ptr<const CostTable> heftExample() {
  const std::string path = test::testDataDir() + "/taskgraphs/heft2002.json";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = parseTaskGraph(ss.str(), path);
  if (!t) qFatal("%s", t.message().c_str());
  return std::make_shared<const CostTable>(std::move(t).value());
}

std::vector<QColor> colors() { return {QColor("#0072B2"), QColor("#E69F00"), QColor("#009E73")}; }

}  // namespace

class TstTeachPanel : public QObject {
  Q_OBJECT
 private slots:
  void heftStepByStep() {
    TeachPanel panel;
    QAbstractItemModelTester readyTester(panel.readyModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester deviceTester(panel.deviceModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(!panel.unavailableReason().isEmpty());  // no problem yet
    auto t = heftExample();
    panel.setProblem(t, colors());
    QVERIFY(panel.setAlgorithm("heft"));
    QVERIFY2(panel.unavailableReason().isEmpty(), qPrintable(panel.unavailableReason()));
    QCOMPARE(panel.stepCount(), 11);  // the ranks, then one placement per task

    // Step 0: every task by decreasing upward rank, T1 (108) first.
    QCOMPARE(panel.currentStep(), 0);
    QCOMPARE(panel.readyModel()->rowCount(), 10);
    QCOMPARE(panel.readyModel()->index(0, 0).data().toString(), QString("T1"));
    QCOMPARE(panel.readyModel()->index(0, 1).data().toString(), QString("108.000"));
    QCOMPARE(panel.readyModel()->index(9, 0).data().toString(), QString("T10"));
    QCOMPARE(panel.deviceModel()->rowCount(), 0);

    QSignalSpy spy(&panel, &TeachPanel::stepChanged);
    panel.next();
    QCOMPARE(spy.count(), 1);
    const TraceStep* s = panel.step();
    QVERIFY(s);
    QCOMPARE(t->taskNames[static_cast<size_t>(s->task)], std::string("T1"));
    QCOMPARE(spy.at(0).at(0).toInt(), s->task);
    QCOMPARE(spy.at(0).at(1).toInt(), s->chosen);
    // T1 finishes at 14, 16, 9 on P1, P2, P3; HEFT takes P3.
    QCOMPARE(panel.deviceModel()->rowCount(), 3);
    QCOMPARE(panel.deviceModel()->index(2, 0).data().toString(), QString("P3"));
    QCOMPARE(panel.deviceModel()->index(2, 1).data().toString(), QString("9.000 us"));
    QCOMPARE(panel.deviceModel()->index(2, 2).data().toString(), QString("chosen"));
    QVERIFY(panel.deviceModel()->index(2, 0).data(Qt::FontRole).value<QFont>().bold());
    QCOMPARE(panel.decided()[static_cast<size_t>(s->task)], s->chosen);
    int decidedCount = 0;
    for (DeviceId d : panel.decided()) decidedCount += d >= 0 ? 1 : 0;
    QCOMPARE(decidedCount, 1);

    // To the end: the decided devices are HEFT's plan.
    panel.goTo(1000);
    QCOMPARE(panel.currentStep(), 10);
    auto plan = findScheduler("heft")->schedule(*t, {}, {});
    QVERIFY(plan);
    for (TaskId v = 0; v < t->numTasks(); ++v) QCOMPARE(panel.decided()[static_cast<size_t>(v)], plan->device[static_cast<size_t>(v)]);
    QVERIFY(!panel.findChildren<QPushButton*>().isEmpty());
    panel.back();
    QCOMPARE(panel.currentStep(), 9);
    QCOMPARE(panel.decided()[static_cast<size_t>(panel.step()->task)], panel.step()->chosen);
    panel.restart();
    QCOMPARE(panel.currentStep(), 0);
  }

  void partitionTunerDp() {
    TeachPanel panel;
    auto t = heftExample();
    panel.setProblem(t, colors());
    QVERIFY(panel.setAlgorithm("partitiontuner-clean"));
    QVERIFY2(panel.unavailableReason().isEmpty(), qPrintable(panel.unavailableReason()));
    QCOMPARE(panel.stepCount(), t->numTasks());  // one DP decision per task
    QCOMPARE(panel.step()->kind, std::string("dp"));
    QCOMPARE(panel.deviceModel()->rowCount(), 3);
    QVERIFY(!panel.readyModel()->index(0, 0).data().toString().isEmpty());
  }

  void everyOfferedAlgorithmHasSteps() {
    // The panel offers only algorithms that record decisions: each gives at least one step per task.
    TeachPanel panel;
    auto t = heftExample();
    panel.setProblem(t, colors());
    auto* combo = panel.findChild<QComboBox*>();
    QVERIFY(combo);
    QVERIFY(combo->count() >= 6);
    for (int i = 0; i < combo->count(); ++i) {
      const QString algo = combo->itemData(i).toString();
      QVERIFY(panel.setAlgorithm(algo));
      QVERIFY2(panel.unavailableReason().isEmpty(), qPrintable(algo + ": " + panel.unavailableReason()));
      QVERIFY2(panel.stepCount() >= t->numTasks(), qPrintable(algo));
      panel.goTo(panel.stepCount() - 1);  // a decision (a list scheduler's first step shows its ranks)
      QCOMPARE(panel.deviceModel()->rowCount(), 3);
    }
  }

  void unknownAlgorithmAndTooBig() {
    TeachPanel panel;
    QVERIFY(!panel.setAlgorithm("nope"));
    // A problem above the limit says so instead of freezing the GUI.
    auto big = std::make_shared<CostTable>();
    big->deviceIds = {"a"};
    for (int i = 0; i <= TeachPanel::kMaxTasks; ++i) {
      big->taskNames.push_back("t" + std::to_string(i));
      big->taskTypes.emplace_back();
      big->cost.push_back(1);
      big->provenance.push_back(Provenance::Modelled);
    }
    big->indexEdges();
    panel.setProblem(big, colors());
    QVERIFY(panel.unavailableReason().contains("up to"));
    QCOMPARE(panel.stepCount(), 0);
    panel.next();  // nothing to do, no crash
    QCOMPARE(panel.readyModel()->rowCount(), 0);
  }
};

QTEST_MAIN(TstTeachPanel)
#include "tst_teachpanel.moc"
