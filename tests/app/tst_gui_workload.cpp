// Workloads of several models and stage boundaries in the explorer (issue 29, item 5). A workload of two
// generated models opens from its file: the Gantt chart shows the joint schedule of core's
// scheduleWorkload (the same result as `partex-cli workload`), model A's operators in another hue than
// model B's, a legend and a row per model naming both, missed deadlines counted; the graph shows the
// model chosen. Bad workload files are refused with one line naming the file and the field. Dragging
// the boundary between two stages of a pipelined plan by one operator moves exactly that operator to
// the other stage's device (the period it would give is shown while dragging), and the period shown
// is the simulator's for the new plan.
#include <QtTest>

#include <QComboBox>
#include <QSettings>
#include <QStandardPaths>
#include <QToolButton>
#include <QUndoStack>

#include <cmath>
#include <fstream>
#include <set>

#include "gantt/ganttview.h"
#include "gantt/stagestrip.h"
#include "gantt/timescale.h"
#include "gen/generator.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "mainwindowtestutil.h"
#include "problem/problem.h"
#include "session/session.h"
#include "sim/stream.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

std::string writeFile(const std::string& name, const std::string& text) {
  const std::string path = test::tempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// "det" (MobileNetV2) at 30 per second over 100 ms: releases at 0, 33.3 and 66.7 ms; "rec" (ResNet-18)
/// once per det: 6 requests in all.
std::string twoModels(double detDeadlineMs, double recDeadlineMs) {
  return R"({"format": "partex-workload", "version": 1, "name": "two", "horizon_ms": 100, "models": [
    {"name": "det", "model": "gen:mobilenetv2", "rate": 30, "deadline_ms": )" +
         std::to_string(detDeadlineMs) + R"(},
    {"name": "rec", "model": "gen:resnet18", "trigger": {"model": "det", "per_inference": 1}, "deadline_ms": )" +
         std::to_string(recDeadlineMs) + "}]}";
}

/// Distance between two hues on the colour wheel (0-180 degrees).
int hueDistance(const QColor& a, const QColor& b) {
  const int d = std::abs(a.hslHue() - b.hslHue()) % 360;
  return std::min(d, 360 - d);
}

int numTasks(const std::string& model) {
  auto p = loadProblem(model, "mobile-soc", {});
  return p ? p->table.numTasks() : -1;
}

}  // namespace

class TestGuiWorkload : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("PartexTest");
    QSettings().remove("layout");
  }

  void workloadOpensInColourFamilies() {
    const std::string file = writeFile("two.json", twoModels(500, 500));
    MainWindow w;
    w.setWorkloadScheduler("band");  // deterministic, so that the result can be compared with core's below
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resetLayout();
    w.setPlatform("mobile-soc");
    QVERIFY2(test::openAndWait(w, QString::fromStdString(file)), qPrintable(w.lastError()));
    QVERIFY(w.workload());
    const GanttChart& chart = w.ganttView()->chart();
    QCOMPARE(chart.workload().models, (std::vector<QString>{"det", "rec"}));
    // Hand count: 3 det requests (0, 33.3, 66.7 ms), each releasing one rec; 500 ms deadlines all met.
    const auto& reqs = chart.workload().requests;
    QCOMPARE(reqs.size(), size_t{6});
    QCOMPARE(reqs[0].releaseUs, 0.0);
    QVERIFY(std::abs(reqs[1].releaseUs - 1e5 / 3) < 1e-6);
    QVERIFY(std::abs(reqs[2].releaseUs - 2e5 / 3) < 1e-6);
    for (int r = 3; r < 6; ++r) QCOMPARE(reqs[static_cast<size_t>(r)].model, 1);
    QCOMPARE(chart.deadlinesMet(), std::make_pair(6, 6));
    QVERIFY(w.ganttView()->makespanText().contains(QStringLiteral("6 of 6 deadlines met")));
    // The joint table: 3 clock tasks, then every operator of every request.
    const int nDet = numTasks("gen:mobilenetv2"), nRec = numTasks("gen:resnet18");
    QVERIFY(nDet > 50 && nRec > 30);
    QCOMPARE(chart.table()->numTasks(), 3 + 3 * nDet + 3 * nRec);
    // The same result as partex-cli workload's calls.
    auto wl = loadWorkloadFile(file);
    QVERIFY2(wl.isOk(), wl.message().c_str());
    auto problems = loadWorkloadProblems(*wl, file, "mobile-soc");
    QVERIFY2(problems.isOk(), problems.message().c_str());
    std::vector<const CostTable*> tables;
    for (const auto& p : *problems) tables.push_back(&p.table);
    WorkloadOptions o;
    o.algo = "band";
    auto core = scheduleWorkload(*wl, tables, o);
    QVERIFY2(core.isOk(), core.message().c_str());
    QCOMPARE(w.workload()->result.makespanUs, core->makespanUs);
    QCOMPARE(w.workload()->result.end, core->end);

    // Colour families: one hue per model, whatever the device.
    int aTask = -1, bTask = -1;
    std::set<int> aHues, bHues;
    for (int t = 0; t < chart.table()->numTasks(); ++t) {
      const int m = chart.modelOfTask(t);
      if (m == 0) {
        aTask = aTask < 0 ? t : aTask;
        aHues.insert(chart.taskColor(t).hslHue());
      } else if (m == 1) {
        bTask = bTask < 0 ? t : bTask;
        bHues.insert(chart.taskColor(t).hslHue());
      }
    }
    QVERIFY(aTask >= 0 && bTask >= 0);
    QVERIFY2(hueDistance(chart.taskColor(aTask), chart.taskColor(bTask)) >= 60,
             qPrintable(QString("hues %1 and %2").arg(chart.taskColor(aTask).hslHue()).arg(chart.taskColor(bTask).hslHue())));
    QCOMPARE(aHues.size(), size_t{1});
    QCOMPARE(bHues.size(), size_t{1});
    // Devices within a family: the shades differ.
    QVERIFY(GanttChart::modelColor(0, 0, 4).lightness() != GanttChart::modelColor(0, 3, 4).lightness());
    QCOMPARE(GanttChart::modelColor(0, 0, 4).hslHue(), GanttChart::modelColor(0, 3, 4).hslHue());
    // The legend, as painted, and a row per model; the clock's row is not drawn.
    (void)w.ganttView()->grab();
    QCOMPARE(chart.drawnLegend(), (QStringList{"det", "rec"}));
    QStringList requestRows;
    for (const auto& r : chart.rows()) {
      if (r.kind == GanttRowKind::Requests) requestRows << r.label;
      QVERIFY(r.label != QStringLiteral("clock"));
    }
    QCOMPARE(requestRows, (QStringList{"det", "rec"}));

    // The graph shows det; choosing rec shows rec, the Gantt chart keeps the workload.
    QCOMPARE(w.session()->numOps(), nDet);
    QSignalSpy loaded(&w, &MainWindow::modelLoaded);
    auto* box = w.findChild<QComboBox*>(QStringLiteral("workloadModelBox"));
    QVERIFY(box);
    QCOMPARE(box->count(), 2);
    w.showWorkloadModel(1);
    QVERIFY(loaded.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 120000);
    QCOMPARE(w.session()->numOps(), nRec);
    QCOMPARE(box->currentIndex(), 1);
    QCOMPARE(chart.workload().models.size(), size_t{2});
    QCOMPARE(chart.table(), w.workload()->result.joint.table.get());
    // Clicking a rec operator's bar selects that operator in the graph's model.
    int longest = -1;
    double longestUs = 0;
    const auto& tl = w.workload()->result.joint.timeline;
    for (int t = 0; t < chart.table()->numTasks(); ++t)
      if (chart.modelOfTask(t) == 1 && tl.tasks[static_cast<size_t>(t)].end - tl.tasks[static_cast<size_t>(t)].start > longestUs) {
        longest = t;
        longestUs = tl.tasks[static_cast<size_t>(t)].end - tl.tasks[static_cast<size_t>(t)].start;
      }
    QVERIFY(longest >= 0);
    const QRectF bar = w.ganttView()->taskRect(longest);
    QVERIFY2(!bar.isEmpty(), "the longest rec operator is not drawn");
    QTest::mouseClick(w.ganttView(), Qt::LeftButton, {}, bar.center().toPoint());
    QCOMPARE(w.session()->selection().size(), 1);
    const std::string name =
        w.workload()->operatorNames[1][static_cast<size_t>(w.workload()->result.joint.operatorOfTask[static_cast<size_t>(longest)])];
    QCOMPARE(w.session()->table()->taskNames[static_cast<size_t>(w.session()->selection().first())], name);

    // Turned off: the model's own plan; on again: the workload.
    auto* toggle = w.findChild<QToolButton*>(QStringLiteral("workloadToggle"));
    QVERIFY(toggle);
    toggle->click();
    QCOMPARE(chart.table(), w.session()->table());
    QVERIFY(chart.workload().models.empty());
    toggle->click();
    QCOMPARE(chart.table(), w.workload()->result.joint.table.get());

    // Another scheduler: scheduled again, the graph keeps rec.
    QSignalSpy again(&w, &MainWindow::modelLoaded);
    w.setWorkloadScheduler("partex", 0.2);
    QVERIFY(again.wait(120000));
    QCOMPARE(chart.workload().algorithm, QStringLiteral("partex"));
    QCOMPARE(w.workloadModelShown(), 1);
    QCOMPARE(w.session()->numOps(), nRec);
  }

  /// Deadlines no inference can meet (1 us): every request is missed or dropped, and the chart says so.
  void missedDeadlinesAreFlagged() {
    const std::string file = writeFile("tight.json", twoModels(0.001, 0.001));
    MainWindow w;
    w.setWorkloadScheduler("band");
    QVERIFY2(test::openAndWait(w, QString::fromStdString(file)), qPrintable(w.lastError()));
    const GanttChart& chart = w.ganttView()->chart();
    QCOMPARE(chart.workload().requests.size(), size_t{6});
    for (const auto& q : chart.workload().requests) QVERIFY(q.missed());
    QCOMPARE(chart.deadlinesMet(), std::make_pair(0, 6));
    QVERIFY(w.ganttView()->makespanText().contains(QStringLiteral("0 of 6 deadlines met (6 missed)")));
  }

  void badWorkloadFilesAreRefused_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("says");
    QTest::newRow("negative rate") << R"({"format": "partex-workload", "models": [{"model": "gen:resnet18", "rate": -1, "deadline_ms": 5}]})"
                                   << "rate: must be positive";
    QTest::newRow("no deadline") << R"({"models": [{"model": "gen:resnet18", "rate": 10}]})" << "deadline_ms: missing";
    QTest::newRow("unknown trigger") << R"({"models": [{"name": "a", "model": "gen:resnet18", "trigger": {"model": "b", "per_inference": 1}, "deadline_ms": 5}]})"
                                     << "trigger.model: no model named \"b\"";
    QTest::newRow("missing model file") << R"({"models": [{"name": "m", "model": "nowhere.onnx", "rate": 10, "deadline_ms": 5}]})"
                                        << "model \"m\"";
  }

  void badWorkloadFilesAreRefused() {
    QFETCH(QString, text);
    QFETCH(QString, says);
    const std::string file = writeFile("bad-workload.json", text.toStdString());
    MainWindow w;
    w.setDialogsEnabled(false);
    QSignalSpy loaded(&w, &MainWindow::modelLoaded);
    w.openModel(QString::fromStdString(file));
    QVERIFY(loaded.wait(60000));
    QCOMPARE(loaded.first().first().toBool(), false);
    QVERIFY2(w.lastError().contains(QStringLiteral("bad-workload.json")), qPrintable(w.lastError()));
    QVERIFY2(w.lastError().contains(says), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains(QLatin1Char('\n')));
    QVERIFY(!w.workload());
  }

  /// A pipelined plan's stage boundary dragged by one operator in the stage strip.
  void stageBoundaryDragMovesOneOperator() {
    const std::string path = test::tempDir() + "/r18-stages.onnx";
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY(generateModelFile(spec, path).isOk());
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resetLayout();
    w.setPlatform("mobile-soc");
    QVERIFY(test::openAndWait(w, QString::fromStdString(path)));
    Session* s = w.session();
    w.runScheduler("pipeline");
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy() && s->state().algorithm == "pipeline", 120000);
    auto* toggle = w.findChild<QToolButton*>(QStringLiteral("streamToggle"));
    QVERIFY(toggle);
    toggle->click();
    StageStrip* strip = w.stageStrip();
    QVERIFY(strip && strip->isVisible());
    const std::vector<PlanStage> stages = strip->stages();
    const std::vector<TaskId> topo = s->table()->topoOrder();
    QVERIFY2(stages.size() >= 2, "the pipeline plan has one stage");
    // The stages are the plan's runs along the topological order (counted here from the plan).
    int runs = 1;
    for (size_t i = 1; i < topo.size(); ++i) runs += s->deviceOf(topo[i]) != s->deviceOf(topo[i - 1]) ? 1 : 0;
    QCOMPARE(static_cast<int>(stages.size()), runs);
    // A boundary and a direction whose one operator may move.
    int k = -1, shift = 0, op = -1, dev = -1;
    for (size_t b = 0; b + 1 < stages.size() && k < 0; ++b) {
      const TaskId last = topo[static_cast<size_t>(stages[b].end - 1)], first = topo[static_cast<size_t>(stages[b + 1].begin)];
      if (stages[b].size() >= 2 && s->canMove({last}, stages[b + 1].device).isOk()) {
        k = static_cast<int>(b), shift = -1, op = last, dev = stages[b + 1].device;
      } else if (stages[b + 1].size() >= 2 && s->canMove({first}, stages[b].device).isOk()) {
        k = static_cast<int>(b), shift = 1, op = first, dev = stages[b].device;
      }
    }
    QVERIFY2(k >= 0, "no boundary operator may move to the other stage's device");
    const std::vector<DeviceId> before = s->plan().device;
    const int y = strip->height() / 2;
    const QPoint from(static_cast<int>(std::lround(strip->xAtPosition(stages[static_cast<size_t>(k)].end))), y);
    const QPoint to(static_cast<int>(std::lround(strip->xAtPosition(stages[static_cast<size_t>(k)].end + shift))), y);
    QVERIFY(from.x() != to.x());
    QTest::mousePress(strip, Qt::LeftButton, {}, from);
    QTest::mouseMove(strip, (from + to) / 2);
    QTest::mouseMove(strip, to);
    QCOMPARE(strip->pendingMove().ops, std::vector<TaskId>{op});
    const QString preview = strip->previewText();  // the period the move would give, while dragging
    QVERIFY2(preview.startsWith(QStringLiteral("period ")), qPrintable(preview));
    QTest::mouseRelease(strip, Qt::LeftButton, {}, to);
    // Exactly that operator moved, to the other stage's device.
    QCOMPARE(s->deviceOf(op), dev);
    for (int v = 0; v < s->numOps(); ++v)
      if (v != op) QCOMPARE(s->deviceOf(v), before[static_cast<size_t>(v)]);
    QCOMPARE(strip->stages()[static_cast<size_t>(k)].end, stages[static_cast<size_t>(k)].end + shift);
    // The stream was simulated again: the period and bottleneck shown are the simulator's.
    auto expect = simulateStream(*s->table(), s->plan());
    QVERIFY2(expect.isOk(), expect.message().c_str());
    QCOMPARE(w.ganttView()->chart().stream().periodUs, expect->periodUs);
    QCOMPARE(w.ganttView()->chart().stream().bottleneckDevice, expect->bottleneck);
    QVERIFY2(preview.contains(QStringLiteral("\u2192 ") + TimeScale::formatDuration(expect->periodUs)), qPrintable(preview));
    // One undo step puts it back.
    s->undoStack()->undo();
    QCOMPARE(s->plan().device, before);
    QCOMPARE(strip->stages().size(), stages.size());
  }
};

QTEST_MAIN(TestGuiWorkload)
#include "tst_gui_workload.moc"
