// The main window: opens a model off the GUI thread, lists its operators and lays the graph out;
// operators are dragged with real mouse events onto a device of the palette (the plan, the timeline
// and the makespan change, undo restores them exactly); a drag onto a device that cannot run the
// operator is refused; number keys and P act on the selection; a bad file is refused. The state
// shown names the plan's algorithm and a hand move's effect; the layout gives the graph the room and
// resets; a model with layer names opens as one box per layer, and a box drags as one undo step.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTableView>
#include <QTextBrowser>
#include <QToolButton>
#include <QUndoStack>

#include "gantt/compareview.h"
#include "gantt/ganttview.h"
#include "gantt/memoryview.h"
#include "gen/generator.h"
#include "graph/devicepalette.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "graph/minimap.h"
#include "gui/algorithmchooser.h"
#include "gui/comparemodel.h"
#include "gui/mainwindow.h"
#include "gui/platformeditor.h"
#include "gui/teachpanel.h"
#include "mainwindowtestutil.h"
#include "session/session.h"
#include "sim/stream.h"
#include "sessiontestutil.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

using partex::test::findEffectiveMove;
using partex::test::sameTimes;

/// Opens `path` on `platform` and waits for the model and the graph layout.
bool openAndLayOut(MainWindow& w, const QString& path, const QString& platform) {
  w.setDialogsEnabled(false);
  w.setPlatform(platform);
  QSignalSpy loaded(&w, &MainWindow::modelLoaded);
  QSignalSpy laid(w.graphView(), &GraphView::layoutReady);
  w.openModel(path);
  if (!loaded.wait(120000) || !loaded.first().first().toBool()) return false;
  if (laid.isEmpty() && !laid.wait(120000)) return false;
  return true;
}

/// Shows `w` and opens a generated model of `kind` (written to the temporary folder as `file`) on
/// mobile-soc; with a `size`, the window takes it and the default layout first.
/// Generates `spec` into the test folder as `file` and opens it on `platform`, waiting for the layout;
/// with `show`, the window is shown first (at `size` when valid, its docks reset to that size).
bool openGenerated(MainWindow& w, const GenSpec& spec, const std::string& file, const std::string& platform, bool show,
                   QSize size = {}) {
  const std::string path = test::tempDir() + "/" + file;
  if (!generateModelFile(spec, path).isOk()) return false;
  if (show) {
    if (size.isValid()) w.resize(size);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return false;
    if (size.isValid()) w.resetLayout();
  }
  return openAndLayOut(w, QString::fromStdString(path), QString::fromStdString(platform));
}

bool showGenerated(MainWindow& w, const std::string& kind, const std::string& file, QSize size = {}) {
  GenSpec spec;
  spec.kind = kind;
  return openGenerated(w, spec, file, "mobile-soc", true, size);
}

/// Drags an effective move in `w` and checks the plan and makespan change and undo restores them.
void checkDragAndUndo(MainWindow& w) {
  Session* s = w.session();
  int op = -1, dev = -1;
  QVERIFY(findEffectiveMove(*s, &op, &dev));
  const PlanState before = s->state();
  const Timeline tl0 = s->timeline();
  const QString label0 = w.makespanLabel()->text();
  test::dragOpToDevice(w, op, dev);
  QCOMPARE(s->deviceOf(op), dev);
  QCOMPARE(s->undoStack()->count(), 1);
  QVERIFY(s->timeline().makespan != tl0.makespan);
  QVERIFY(w.makespanLabel()->text() != label0);
  QVERIFY(!w.graphView()->dragging());
  QCOMPARE(w.palette()->paletteModel()->highlight(), -1);
  s->undoStack()->undo();
  QVERIFY(s->state() == before);
  QVERIFY(sameTimes(s->timeline(), tl0));
  QCOMPARE(w.makespanLabel()->text(), label0);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // autosaves go to a test folder
    QCoreApplication::setOrganizationName("PartexTest");
    // The layout saved by an earlier run (QSettings) would change where the docks start.
    QSettings().remove("layout");
  }

  void opensGeneratedModelAndListsOperators() {
    const std::string path = test::tempDir() + "/mnv2.onnx";
    GenSpec spec;
    spec.kind = "mobilenetv2";
    QVERIFY(generateModelFile(spec, path).isOk());
    MainWindow w;
    w.setDialogsEnabled(false);
    QSignalSpy spy(&w, &MainWindow::modelLoaded);
    w.openModel(QString::fromStdString(path));
    QVERIFY(spy.wait(60000));
    QCOMPARE(spy.first().first().toBool(), true);
    QVERIFY(w.model());
    QAbstractItemModelTester tester(w.operatorView()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester paletteTester(w.palette()->model(),
                                           QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester compareTester(w.compareView()->model(),
                                           QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(w.operatorView()->model()->rowCount(), static_cast<int>(w.model()->graph.nodes.size()));
    QVERIFY(w.operatorView()->model()->rowCount() > 50);
    QCOMPARE(w.palette()->model()->rowCount(), 4);  // mobile-soc
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 120000);
    QCOMPARE(static_cast<int>(w.graphView()->graphScene()->display().nodes.size()), w.session()->numOps());
  }

  void dragOntoPaletteMovesAndUndoRestores() {
    MainWindow w;
    QVERIFY(showGenerated(w, "resnet18", "r18.onnx"));
    checkDragAndUndo(w);
  }

  /// The Gantt dock's "Stream of inferences" (issue 29, item 5): the plan's stream unrolled, its
  /// period the simulator's, re-simulated when an operator moves; off again, one inference.
  void streamToggleShowsAndFollowsThePlan() {
    MainWindow w;
    QVERIFY(showGenerated(w, "resnet18", "r18s.onnx"));
    auto* toggle = w.findChild<QToolButton*>(QStringLiteral("streamToggle"));
    QVERIFY(toggle);
    Session* s = w.session();
    const int n = s->numOps();
    toggle->click();
    QVERIFY(toggle->isChecked());
    auto expect = simulateStream(*s->table(), s->plan());
    QVERIFY2(expect.isOk(), expect.message().c_str());
    const auto& marks = w.ganttView()->chart().stream();
    QCOMPARE(marks.tasksPerInference, n);
    QCOMPARE(marks.inferences, expect->inferences);
    QCOMPARE(marks.periodUs, expect->periodUs);
    QCOMPARE(w.ganttView()->chart().table()->numTasks(), n * expect->inferences);
    QVERIFY(w.ganttView()->makespanText().contains(QStringLiteral("period")));
    // Move an operator: the stream follows the new plan.
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(*s, &op, &dev));
    test::dragOpToDevice(w, op, dev);
    QCOMPARE(s->deviceOf(op), dev);
    auto after = simulateStream(*s->table(), s->plan());
    QVERIFY2(after.isOk(), after.message().c_str());
    QCOMPARE(w.ganttView()->chart().stream().periodUs, after->periodUs);
    QCOMPARE(w.ganttView()->chart().stream().tasksPerInference, n);
    toggle->click();
    QCOMPARE(w.ganttView()->chart().stream().tasksPerInference, 0);
    QCOMPARE(w.ganttView()->chart().table(), s->table());
  }

  /// The Scheduler dock's objective (issue 29): under throughput, Compare and Run optimise a stream's
  /// period (core's bestForThroughput, as partex-cli --objective throughput), the compare table gets a
  /// period column and the Gantt chart shows the stream; a replicated plan says so in its title.
  void throughputObjectiveSchedulesAStream() {
    MainWindow w;
    QVERIFY(showGenerated(w, "resnet18", "r18t.onnx"));
    Session* s = w.session();
    auto* toggle = w.findChild<QToolButton*>(QStringLiteral("streamToggle"));
    auto* bound = w.findChild<QDoubleSpinBox*>(QStringLiteral("latencyBoundBox"));
    QVERIFY(toggle && bound);
    QVERIFY(!toggle->isChecked());
    QVERIFY(!bound->isEnabled());
    QCOMPARE(s->objective(), Objective::Latency);
    w.setObjective(Objective::Throughput, 12500);
    QCOMPARE(w.objectiveBox()->currentText(), QString("Throughput"));
    QCOMPARE(s->objective(), Objective::Throughput);
    QCOMPARE(s->latencyBoundUs(), 12500.0);
    QVERIFY(bound->isEnabled());
    QVERIFY(toggle->isChecked());  // the objective's own view
    w.setObjective(Objective::Throughput, 0);
    QCOMPARE(s->latencyBoundUs(), 0.0);

    // Compare: each row's period is the simulator's for that row's plan; best's is no longer than the
    // single device's (every single device is one of its candidates).
    QSignalSpy done(s, &Session::compareFinished);
    s->runCompare({"single", "heft", "best"}, 3.0);
    QVERIFY(done.wait(120000));
    auto rows = done.first().first().value<QList<CompareRow>>();
    QCOMPARE(rows.size(), 3);
    double single = 0, best = 0;
    for (const auto& r : rows) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      auto st = simulateStream(*s->table(), r.plan);
      QVERIFY2(st.isOk(), st.message().c_str());
      QVERIFY(r.periodUs > 0);
      QCOMPARE(r.periodUs, st->periodUs);
      if (r.algorithm == "single") single = r.periodUs;
      if (r.algorithm == "best") best = r.periodUs;
    }
    QVERIFY(single > 0 && best > 0);
    QVERIFY2(best <= single * (1 + 1e-9), qPrintable(QString("best %1 single %2").arg(best).arg(single)));
    QTRY_COMPARE(w.compareView()->model()->columnCount(), static_cast<int>(CompareModel::ColumnCount));
    QCOMPARE(w.compareView()->model()->headerData(CompareModel::Period, Qt::Horizontal).toString(), QString("Period"));

    // Run: best under throughput; the stream view shows its plan's period.
    QSignalSpy finished(s, &Session::schedulerFinished);
    s->runScheduler("best", false, 3.0);
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.first().first().toBool(), qPrintable(finished.first().last().toString()));
    auto st = simulateStream(*s->table(), s->plan());
    QVERIFY2(st.isOk(), st.message().c_str());
    QVERIFY(st->periodUs <= single * (1 + 1e-9));
    QCOMPARE(w.ganttView()->chart().stream().periodUs, st->periodUs);

    // A replicated plan (everything on one CPU cluster, replica 1 on the other): the title says so and
    // the stream view simulates both replicas.
    std::vector<DeviceId> whole;
    for (DeviceId d = 0; d < s->table()->numDevices(); ++d) {
      bool all = true;
      for (TaskId v = 0; v < s->table()->numTasks() && all; ++v) all = s->table()->canRun(v, d);
      if (all) whole.push_back(d);
    }
    QVERIFY(whole.size() >= 2);  // mobile-soc's two CPU clusters
    Plan rep;
    rep.device.assign(static_cast<size_t>(s->numOps()), whole[0]);
    orderByUpwardRank(*s->table(), rep);
    std::vector<DeviceId> image(static_cast<size_t>(s->table()->numDevices()));
    for (DeviceId d = 0; d < s->table()->numDevices(); ++d) image[static_cast<size_t>(d)] = d;
    std::swap(image[static_cast<size_t>(whole[0])], image[static_cast<size_t>(whole[1])]);
    rep.replicas = {image};
    QVERIFY(s->applyPlan(rep, "manual", "replicas").isOk());
    QCOMPARE(replicaCount(s->plan()), 2);
    QVERIFY2(w.planTitle().contains("2 replicas"), qPrintable(w.planTitle()));
    auto rs = simulateStream(*s->table(), s->plan());
    QVERIFY2(rs.isOk(), rs.message().c_str());
    QCOMPARE(rs->replicas, 2);
    QCOMPARE(w.ganttView()->chart().stream().periodUs, rs->periodUs);
    s->undoStack()->undo();  // the replicas alone are an undoable change
    QCOMPARE(replicaCount(s->plan()), 1);

    // Back to latency: the next comparison has no periods, and the column goes.
    w.setObjective(Objective::Latency);
    QVERIFY(!bound->isEnabled());
    done.clear();
    s->runCompare({"single", "heft"}, 3.0);
    QVERIFY(done.wait(120000));
    rows = done.first().first().value<QList<CompareRow>>();
    for (const auto& r : rows) QCOMPARE(r.periodUs, 0.0);
    QTRY_COMPARE(w.compareView()->model()->columnCount(), static_cast<int>(CompareModel::ColumnCount) - 1);
    QCOMPARE(w.compareView()->model()->headerData(CompareModel::Period, Qt::Horizontal).toString(), QString("Speed-up"));
  }

  void dragOfSharedModel() {
    const std::string path = test::sharedModel("light_resnet50.onnx");
    if (path.empty() || !QFileInfo::exists(QString::fromStdString(path)))
      QSKIP("PARTEX_SHARED_MODELS (../shared/models) is absent: the real-model drag test is skipped");
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndLayOut(w, QString::fromStdString(path), "mobile-soc"));
    QVERIFY(w.session()->numOps() > 100);
    checkDragAndUndo(w);
  }

  void dragOntoIncapableDeviceIsRefused() {
    // A small BERT: its Softmax cannot run on cpu-npu's NPU (Conv and Relu only).
    GenSpec spec;
    spec.kind = "bert";
    spec.layers = 1;
    spec.seqLen = 16;
    spec.hidden = 64;
    spec.heads = 2;
    spec.vocab = 100;
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "bert-small.onnx", "cpu-npu", true));
    Session* s = w.session();
    int softmax = -1;
    for (int v = 0; v < s->numOps(); ++v)
      if (s->table()->taskTypes[static_cast<size_t>(v)] == "Softmax") softmax = v;
    QVERIFY(softmax >= 0);
    const int npu = s->platform().findDevice("npu");
    QVERIFY(npu >= 0 && s->deviceOf(softmax) != npu);
    const PlanState before = s->state();
    const double makespan = s->timeline().makespan;
    QSignalSpy msg(s, &Session::message);
    test::dragOpToDevice(w, softmax, npu);
    QVERIFY(s->state() == before);
    QCOMPARE(s->timeline().makespan, makespan);
    QCOMPARE(s->undoStack()->count(), 0);
    QCOMPARE(msg.count(), 1);
    QVERIFY2(msg.first().first().toString().contains("Softmax"), qPrintable(msg.first().first().toString()));
  }

  void keysMoveAndPinTheSelection() {
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18k.onnx", "mobile-soc", true));
    QApplication::setActiveWindow(&w);
    Session* s = w.session();
    const int op = 4;
    const int target = s->deviceOf(op) == 0 ? 1 : 0;  // both CPU clusters run everything
    // Click selects it (press and release without moving is not a drag).
    GraphView* g = w.graphView();
    g->centerOnOp(op);
    QTest::mouseClick(g->viewport(), Qt::LeftButton, {}, g->viewportPosOfOp(op));
    QCOMPARE(s->selection(), QList<int>{op});
    g->setFocus();
    QTest::keyClick(g, static_cast<Qt::Key>(Qt::Key_1 + target));
    QCOMPARE(s->deviceOf(op), target);
    QTest::keyClick(g, Qt::Key_P);
    QVERIFY(s->isPinned(op));
    QCOMPARE(s->undoStack()->count(), 2);
    QTest::keyClick(g, Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(!s->isPinned(op));
    QTest::keyClick(g, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(s->isPinned(op));
  }

  void hoverPreviewsAndGanttRowIsADropTarget() {
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18p.onnx", "mobile-soc", true));
    Session* s = w.session();
    GanttView* gantt = w.ganttView();
    QVERIFY(gantt);
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(*s, &op, &dev));
    const double expected = s->previewMove({op}, dev)->makespan;
    GraphView* g = w.graphView();
    g->centerOnOp(op);
    const QPoint from = g->viewportPosOfOp(op);
    const QPoint over = g->viewport()->mapFromGlobal(w.palette()->globalCenterOf(dev));
    QTest::mousePress(g->viewport(), Qt::LeftButton, {}, from);
    QTest::mouseMove(g->viewport(), from + QPoint(10, 10));
    QTest::mouseMove(g->viewport(), over);
    // Hovering shows the preview in the Gantt chart and highlights the palette entry; nothing moves.
    QVERIFY(g->dragging());
    QCOMPARE(gantt->shownMakespan(), expected);
    QCOMPARE(w.palette()->paletteModel()->highlight(), dev);
    QVERIFY(s->deviceOf(op) != dev);
    // Find a point of the Gantt chart's row of `dev` and release there.
    QPoint rowPos(-1, -1);
    for (int y = 0; y < gantt->height() && rowPos.x() < 0; y += 2) {
      const QPoint p(gantt->width() / 2, y);
      if (gantt->deviceAt(gantt->mapToGlobal(p)) == dev) rowPos = p;
    }
    QVERIFY(rowPos.x() >= 0);
    const QPoint onRow = g->viewport()->mapFromGlobal(gantt->mapToGlobal(rowPos));
    QTest::mouseMove(g->viewport(), onRow);
    QTest::mouseRelease(g->viewport(), Qt::LeftButton, {}, onRow);
    QCOMPARE(s->deviceOf(op), dev);
    QCOMPARE(s->timeline().makespan, expected);
    QCOMPARE(gantt->shownMakespan(), expected);  // the preview is gone, the chart shows the new plan
    QCOMPARE(w.palette()->paletteModel()->highlight(), -1);
    // Clicking a bar in the Gantt chart selects its operator (the graph and inspector follow).
    const int other = (op + 7) % s->numOps();
    const QRectF bar = gantt->taskRect(other);
    if (bar.isEmpty()) QSKIP("the bar is too thin to click at this width");
    QTest::mouseClick(gantt, Qt::LeftButton, {}, bar.center().toPoint());
    QCOMPARE(s->selection(), QList<int>{other});
  }

  void platformSwitchRebuildsEverything() {
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18s.onnx", "mobile-soc", false));
    QVERIFY(w.session()->moveOps({3}, w.session()->deviceOf(3) == 0 ? 1 : 0).isOk());
    QSignalSpy changed(w.session(), &Session::modelChanged);
    w.setPlatform("cpu-npu");
    QVERIFY(changed.wait(60000));
    QCOMPARE(w.session()->numDevices(), 2);
    QCOMPARE(w.palette()->model()->rowCount(), 2);
    QCOMPARE(w.session()->undoStack()->count(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 60000);
    QCOMPARE(static_cast<int>(w.graphView()->graphScene()->display().nodes.size()), w.session()->numOps());
    // A platform that does not exist: an error, the old one stays.
    w.setPlatform("/nonexistent/platform.json");
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 60000);
    QVERIFY(w.lastError().contains("platform"));
    QCOMPARE(w.session()->numDevices(), 2);
  }

  void platformEditsAndTeachingReachTheSession() {
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18e.onnx", "cpu-npu", false));
    Session* s = w.session();
    const double before = s->timeline().makespan;
    // An edit in the platform editor: a twice as fast CPU re-builds the table and the plan.
    Platform p = s->platform();
    p.devices[0].defaultPeakGflops *= 2;
    for (auto& [cls, peak] : p.devices[0].peakGflops) peak *= 2;
    p.devices[0].memBandwidthGBs *= 2;
    QSignalSpy changed(s, &Session::modelChanged);
    emit w.platformEditor()->platformEdited(p);
    QVERIFY(changed.wait(60000));
    QVERIFY(s->timeline().makespan < before);
    QCOMPARE(platformToJson(s->platform()), platformToJson(p));
    // The editor is shown the installed platform: that does not loop back into another rebuild.
    QTest::qWait(200);
    QCOMPARE(changed.count(), 1);
    QVERIFY(!s->loading());
    // Teaching: each step selects its task.
    TeachPanel* t = w.teachPanel();
    QVERIFY2(t->unavailableReason().isEmpty(), qPrintable(t->unavailableReason()));
    QVERIFY(t->stepCount() > 1);
    int task = -1;
    for (int i = 0; i < 3 && task < 0; ++i) {
      t->next();
      if (t->step()) task = s->selection().value(0, -1);
    }
    QVERIFY(task >= 0);
  }

  void bigModelOpensCollapsedAndExpands() {
    GenSpec spec;
    spec.kind = "random";
    spec.nodes = 3000;
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "random3000.onnx", "mobile-soc", false));
    GraphScene* sc = w.graphView()->graphScene();
    QVERIFY(sc->grouped());
    const size_t groups = sc->display().nodes.size();
    QCOMPARE(static_cast<int>(groups), sc->grouping().size());
    QSignalSpy laid(w.graphView(), &GraphView::layoutReady);
    w.graphView()->expandGroup(2);
    QVERIFY(laid.wait(120000));
    QCOMPARE(sc->display().nodes.size(), groups - 1 + sc->grouping().ops[2].size());
    // Moving a whole group is one undo step.
    Session* s = w.session();
    QList<int> ops;
    for (TaskId v : sc->grouping().ops[5]) ops << v;
    QVERIFY(s->moveOps(ops, 0).isOk());
    QCOMPARE(s->undoStack()->count(), 1);
    // Search finds an operator by name and selects it.
    QVERIFY(w.graphView()->findNext(QString::fromStdString(s->table()->taskNames[1000])));
    QCOMPARE(s->selection(), QList<int>{1000});
  }

  void compareSideBySide() {
    // Compare two algorithms; the side-by-side view shows the current plan against the best row,
    // then two picked rows, and selects the operators they place differently in the graph.
    const std::string path = test::tempDir() + "/incep.onnx";
    GenSpec spec;
    spec.kind = "inception";
    spec.imageSize = 64;
    QVERIFY(generateModelFile(spec, path).isOk());
    MainWindow w;
    w.setDialogsEnabled(false);
    QVERIFY(openAndLayOut(w, QString::fromStdString(path), "mobile-soc"));
    QVERIFY(w.sideBySideView());
    QVERIFY(w.sideBySideView()->differentTasks().isEmpty());
    QSignalSpy done(w.session(), &Session::compareFinished);
    w.session()->runCompare({"greedy", "heft", "single"});
    QVERIFY(done.wait(120000));
    const auto rows = done.first().first().value<QList<CompareRow>>();
    QCOMPARE(rows.size(), 3);
    for (const auto& r : rows) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
      QCOMPARE(static_cast<int>(r.plan.device.size()), w.session()->numOps());
      QCOMPARE(r.timeline.makespan, r.makespanUs);
    }
    QTRY_VERIFY(w.compareView()->model()->rowCount() == 3);
    // No pick: the current plan (HEFT's, installed on open) against the best row.
    auto diff = [](const Plan& a, const Plan& b) {
      QList<int> d;
      for (size_t v = 0; v < a.device.size(); ++v)
        if (a.device[v] != b.device[v]) d << static_cast<int>(v);
      return d;
    };
    int best = 0;
    for (int r = 1; r < rows.size(); ++r)
      if (rows[r].makespanUs < rows[best].makespanUs) best = r;
    QCOMPARE(w.sideBySideView()->differentTasks(), diff(w.session()->plan(), rows[best].plan));
    // Two picked rows: greedy against single device, which differ wherever greedy left the host.
    auto* view = w.compareView();
    auto* proxy = qobject_cast<QSortFilterProxyModel*>(view->model());
    QVERIFY(proxy);
    view->selectionModel()->clearSelection();
    for (int r = 0; r < proxy->rowCount(); ++r) {
      const int src = proxy->mapToSource(proxy->index(r, 0)).row();
      if (rows[src].algorithm == "greedy" || rows[src].algorithm == "single")
        view->selectionModel()->select(proxy->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    }
    int g = 0, sd = 0;
    for (int r = 0; r < rows.size(); ++r) {
      if (rows[r].algorithm == "greedy") g = r;
      if (rows[r].algorithm == "single") sd = r;
    }
    const QList<int> expected = diff(rows[g].plan, rows[sd].plan);
    QVERIFY(!expected.isEmpty());
    QCOMPARE(w.sideBySideView()->differentTasks(), expected);
    w.selectSideBySideDifferences();
    QList<int> sel = w.session()->selection();
    std::sort(sel.begin(), sel.end());
    QCOMPARE(sel, expected);
  }

  void schedulerBoxNamesThePlanShown() {
    // `partex --algo best` runs best once the model is loaded; the scheduler box, the Gantt title and
    // the status bar then name best, not the HEFT of the first plan; undo names HEFT again.
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18b.onnx", "mobile-soc", false));
    Session* s = w.session();
    QCOMPARE(w.algorithmBox()->currentData().toString(), QString("heft"));
    QCOMPARE(w.planLabel()->text(), QString("Plan: HEFT"));
    w.algorithmBox()->setCurrentIndex(w.algorithmBox()->findData(QString("single")));  // a stale choice
    QSignalSpy finished(s, &Session::schedulerFinished);
    s->runScheduler("best", false, 3.0);
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.first().first().toBool(), qPrintable(finished.first().last().toString()));
    QCOMPARE(s->state().algorithm, std::string("best"));
    QCOMPARE(w.algorithmBox()->currentData().toString(), QString("best"));
    QVERIFY(w.algorithmBox()->currentText().startsWith("Partex best"));
    QCOMPARE(w.planLabel()->text(), QString("Plan: Partex best"));
    QCOMPARE(w.ganttView()->title(), QString("Partex best"));
    s->undoStack()->undo();
    QCOMPARE(w.algorithmBox()->currentData().toString(), QString("heft"));
    QCOMPARE(w.ganttView()->title(), QString("HEFT"));
  }

  void movedByHandSaysWhatTheMoveChanged() {
    GenSpec spec;
    spec.kind = "resnet18";
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "r18h.onnx", "mobile-soc", true));
    Session* s = w.session();
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(*s, &op, &dev));
    const int from = s->deviceOf(op);
    const double before = s->timeline().makespan;
    // Before the move: the scheduler's reason.
    QVERIFY(s->placementReasons(op).join("; ").contains("chosen by HEFT"));
    test::dragOpToDevice(w, op, dev);
    QCOMPARE(s->deviceOf(op), dev);
    const double after = s->timeline().makespan;
    QVERIFY(after != before);
    s->setSelection({op});
    const QString why = s->placementReasons(op).join("; ");
    QVERIFY2(why.contains(QString("moved here by hand from %1, where the HEFT plan had it").arg(s->deviceLabel(from))),
             qPrintable(why));
    QVERIFY2(why.contains(QString("from %1 us to %2 us").arg(before, 0, 'f', 1).arg(after, 0, 'f', 1)),
             qPrintable(why));
    QVERIFY2(!why.contains("chosen by"), qPrintable(why));
    QVERIFY2(!why.contains("overlap work"), qPrintable(why));
    QVERIFY2(w.inspector()->toPlainText().contains("moved here by hand from"),
             qPrintable(w.inspector()->toPlainText()));
    QCOMPARE(w.planLabel()->text(), QString("Plan: HEFT, 1 operator moved by hand"));
    QCOMPARE(w.ganttView()->title(), QString("HEFT, 1 operator moved by hand"));
    // Undo: the scheduler's reason again.
    s->undoStack()->undo();
    QVERIFY(s->placementReasons(op).join("; ").contains("chosen by HEFT"));
    QCOMPARE(w.planLabel()->text(), QString("Plan: HEFT"));
  }

  void layoutServesTheGraphAndResets() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resetLayout();
    QTest::qWait(50);
    // The canvas takes the largest share; the Gantt chart stays in view under it.
    const double share = double(w.graphView()->width()) * w.graphView()->height() / (double(w.width()) * w.height());
    qInfo("canvas %dx%d of 1600x1000: %.1f %%", w.graphView()->width(), w.graphView()->height(), share * 100);
    QVERIFY2(share >= 0.45, qPrintable(QString("canvas share %1").arg(share)));
    QVERIFY(w.ganttView()->isVisible());
    QVERIFY(w.ganttView()->height() >= 120);
    // Inspector and Compare share the tabbed side area on the right.
    QDockWidget* insp = w.dock("inspectorDock");
    QDockWidget* cmp = w.dock("compareDock");
    QVERIFY(insp && cmp);
    QVERIFY(w.tabifiedDockWidgets(insp).contains(cmp));
    QCOMPARE(w.dockWidgetArea(insp), Qt::RightDockWidgetArea);
    QCOMPARE(w.dockWidgetArea(w.dock("ganttDock")), Qt::BottomDockWidgetArea);
    // The memory view folds with one click, and a new window remembers it.
    QVERIFY(w.memoryFolded());
    QTest::mouseClick(w.memoryToggle(), Qt::LeftButton);
    QVERIFY(!w.memoryFolded());
    QVERIFY(w.memoryView()->isVisible());
    {
      MainWindow again;
      QVERIFY(!again.memoryFolded());
    }
    // Docks keep Qt's behaviour; Reset layout puts them back.
    insp->setFloating(true);
    w.dock("ganttDock")->close();
    w.dock("platformDock")->close();
    QVERIFY(!w.ganttView()->isVisible());
    w.saveLayout();
    {
      MainWindow restored;  // the saved arrangement comes back
      QVERIFY(restored.dock("platformDock")->isHidden());
      QVERIFY(restored.dock("inspectorDock")->isFloating());
    }
    w.resetLayout();
    QTest::qWait(50);
    QVERIFY(!insp->isFloating());
    QVERIFY(w.ganttView()->isVisible());
    QVERIFY(w.palette()->isVisible());
    QVERIFY(w.memoryFolded());
    QVERIFY(w.tabifiedDockWidgets(insp).contains(cmp));
    w.saveLayout();  // leaves the default for the tests that follow
  }

  void firstViewIsReadableAndFitIsOneKeyAway() {
    MainWindow w;
    QVERIFY(showGenerated(w, "inception", "incep-view.onnx", QSize(1600, 1000)));
    GraphView* g = w.graphView();
    QVERIFY(w.session()->numOps() > 100);
    // Readable: operator boxes at (about) 85 % of their size, not dots.
    QCOMPARE(g->transform().m11(), GraphView::kReadableScale);
    // On the start of the critical path: its item lies in the view.
    const int start = g->criticalStart();
    QVERIFY(start >= 0);
    QVERIFY(w.session()->critical().task[size_t(start)]);
    QVERIFY(g->viewport()->rect().contains(g->viewportPosOfOp(start)));
    QVERIFY(g->miniMap()->isVisible());
    // F fits the whole graph.
    g->setFocus();
    QTest::keyClick(g, Qt::Key_F);
    QVERIFY(g->transform().m11() < GraphView::kReadableScale);
    const QRect all = g->mapFromScene(g->graphScene()->itemsBoundingRect()).boundingRect();
    QVERIFY(g->viewport()->rect().adjusted(-2, -2, 2, 2).contains(all));
  }

  /// Home and F work wherever the focus is in the window (a table, the device list, the Inspector,
  /// the scheduler box), not only on the canvas; a text field keeps them (F is typed there).
  void homeAndFitWorkWindowWide() {
    MainWindow w;
    QVERIFY(showGenerated(w, "inception", "incep-keys.onnx", QSize(1600, 1000)));
    QApplication::setActiveWindow(&w);
    GraphView* g = w.graphView();
    struct Target {
      const char* name;
      const char* dock;  ///< Raised first, so that the widget is shown.
      QWidget* widget;
    };
    const QList<Target> targets = {{"operator table", "operatorsDock", w.operatorView()},
                                   {"compare table", "compareDock", w.compareView()},
                                   {"inspector", "inspectorDock", w.inspector()},
                                   {"device list", "platformDock", w.palette()},
                                   {"scheduler box", "schedulerDock", w.algorithmBox()}};
    for (const Target& t : targets) {
      w.dock(t.dock)->raise();
      QTest::qWait(20);
      t.widget->setFocus();
      QVERIFY2(QTest::qWaitFor([&] { return t.widget->hasFocus(); }, 2000), t.name);
      g->resetZoom();
      QTest::keyClick(t.widget, Qt::Key_F);
      QVERIFY2(g->transform().m11() < GraphView::kReadableScale, t.name);  // fitted
      QTest::keyClick(t.widget, Qt::Key_Home);
      QVERIFY2(qAbs(g->transform().m11() - GraphView::kReadableScale) < 1e-9, t.name);  // the start, readable
    }
    // A text field keeps its keys: F is typed, the view does not move.
    auto* filter = w.dock("operatorsDock")->findChild<QLineEdit*>();
    QVERIFY(filter);
    w.dock("operatorsDock")->raise();
    filter->setFocus();
    QVERIFY(QTest::qWaitFor([&] { return filter->hasFocus(); }, 2000));
    g->resetZoom();
    QTest::keyClick(filter, Qt::Key_F);
    QCOMPARE(filter->text(), QString("f"));
    QCOMPARE(g->transform().m11(), 1.0);
  }

  /// The side tabs' labels are whole: at 1600x1000 and 1366x768 every tab of the dock areas' tab bars is
  /// inside its bar and at least as wide as its label.
  void sideTabLabelsAreWhole() {
    for (const QSize size : {QSize(1600, 1000), QSize(1366, 768)}) {
      MainWindow w;
      w.resize(size);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.resetLayout();
      QTest::qWait(50);
      int tabs = 0;
      for (QTabBar* bar : w.findChildren<QTabBar*>()) {
        if (!bar->isVisible() || bar->count() < 2 || qobject_cast<QTabWidget*>(bar->parentWidget())) continue;
        for (int i = 0; i < bar->count(); ++i) {
          const QRect r = bar->tabRect(i);
          // QTabBar elides a label once its tab is narrower than the label and the style's padding.
          const int text = bar->fontMetrics().horizontalAdvance(bar->tabText(i)) +
                           bar->style()->pixelMetric(QStyle::PM_TabBarTabHSpace, nullptr, bar);
          const QString what = QString("%1x%2: tab '%3' at %4..%5 of a bar %6 wide, label and padding %7 px")
                                   .arg(size.width())
                                   .arg(size.height())
                                   .arg(bar->tabText(i))
                                   .arg(r.left())
                                   .arg(r.right())
                                   .arg(bar->width())
                                   .arg(text);
          QVERIFY2(bar->rect().contains(r), qPrintable(what));
          QVERIFY2(r.width() >= text, qPrintable(what));
          ++tabs;
        }
      }
      // Platform with its editor; Inspector, Compare, Operators, Teach and LLM.
      QCOMPARE(tabs, 2 + 5);
    }
  }

  void languageModelOpensByLayerAndBlocksDragWhole() {
    // A small Llama decode step: embedding, 4 layer blocks and the head, each one box.
    GenSpec spec;
    spec.kind = "llama";
    spec.phase = "decode";
    spec.layers = 4;
    spec.hidden = 64;
    spec.heads = 4;
    spec.vocab = 100;
    spec.seqLen = 16;
    MainWindow w;
    QVERIFY(openGenerated(w, spec, "llama4.onnx", "mobile-soc", true));
    GraphScene* sc = w.graphView()->graphScene();
    QVERIFY(sc->grouped());
    QCOMPARE(sc->grouping().names,
             (std::vector<std::string>{"embedding", "layers.0", "layers.1", "layers.2", "layers.3", "head"}));
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), 6);
    // Expanding one block keeps the rest collapsed.
    QSignalSpy laid(w.graphView(), &GraphView::layoutReady);
    w.graphView()->expandGroup(2);
    QVERIFY(laid.wait(120000));
    QCOMPARE(sc->display().nodes.size(), 5 + sc->grouping().ops[2].size());
    w.graphView()->collapseGroup(2);
    QVERIFY(laid.wait(120000));
    // Dragging a collapsed block onto a device moves all its operators: one undo step.
    Session* s = w.session();
    const auto& block = sc->grouping().ops[3];
    int target = 1;  // both CPU clusters of mobile-soc run everything
    bool allThere = true;
    for (TaskId v : block) allThere = allThere && s->deviceOf(v) == target;
    if (allThere) target = 0;
    const PlanState before = s->state();
    test::dragOpToDevice(w, block.front(), target);
    for (TaskId v : block) QCOMPARE(s->deviceOf(v), target);
    QCOMPARE(s->undoStack()->count(), 1);
    s->undoStack()->undo();
    QVERIFY(s->state() == before);
  }

  void compareChooserAndDeviceListShowTheirRows() {
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resetLayout();
    // The chooser: groups in order, every scheduler in one of them, Select all, search.
    AlgorithmChooser* c = w.compareChooser();
    QCOMPARE(c->groups(), (QStringList{"Baselines", "List heuristics", "Papers", "llama.cpp rules", "Exact and best"}));
    QCOMPARE(c->entries("Baselines"), (QStringList{"single", "priority", "static", "greedy"}));
    QCOMPARE(c->entries("List heuristics").size(), 12);
    QCOMPARE(c->entries("Exact and best"), (QStringList{"exact", "best"}));
    int listed = 0;
    for (const auto& g : c->groups()) listed += static_cast<int>(c->entries(g).size());
    QCOMPARE(listed, static_cast<int>(allSchedulers().size()));
    QCOMPARE(c->checked(), (QStringList{"single", "greedy", "heft", "cpop", "peft"}));
    c->setFilter("maxmin");
    QCOMPARE(c->visibleEntries(), QStringList{"maxmin"});
    c->selectAll();  // under a search: what it shows
    QCOMPARE(c->checked(), (QStringList{"single", "greedy", "heft", "cpop", "peft", "maxmin"}));
    c->setFilter("");
    c->selectAll();
    QCOMPARE(c->checked().size(), static_cast<qsizetype>(allSchedulers().size()));
    c->selectNone();
    QVERIFY(c->checked().isEmpty());
    // The device list shows every device of an eight-device platform without scrolling.
    QString json = R"({"format": "partex-platform", "version": 1, "name": "eight", "host": "cpu0", "devices": [)";
    QString links;
    for (int d = 0; d < 8; ++d) {
      json += QString(R"(%1{"id": "cpu%2", "name": "core %2", "kind": "cpu", "peak_gflops": {"default": %3},
                         "bandwidth_gbs": 10, "cores": 1})")
                  .arg(d ? "," : "")
                  .arg(d)
                  .arg(10 + d);
      if (d > 0)
        links += QString(R"(%1{"from": "cpu0", "to": "cpu%2", "bandwidth_gbs": 10, "shared_memory": true})")
                     .arg(d > 1 ? "," : "")
                     .arg(d);
    }
    json += "], \"links\": [" + links + "]}";
    const QString platform = QString::fromStdString(test::tempDir()) + "/eight.json";
    QFile f(platform);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(json.toUtf8());
    f.close();
    const std::string path = test::tempDir() + "/r18-eight.onnx";
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY(generateModelFile(spec, path).isOk());
    QVERIFY(openAndLayOut(w, QString::fromStdString(path), platform));
    QCOMPARE(w.session()->numDevices(), 8);
    QTest::qWait(50);
    DevicePalette* p = w.palette();
    QCOMPARE(p->model()->rowCount(), 8);
    for (int d = 0; d < 8; ++d) {
      const QRect r = p->visualRect(p->model()->index(d, 0));
      QVERIFY2(p->viewport()->rect().contains(r), qPrintable(QString("device %1 at %2,%3 %4x%5 of a %6 px list")
                                                                 .arg(d)
                                                                 .arg(r.x())
                                                                 .arg(r.y())
                                                                 .arg(r.width())
                                                                 .arg(r.height())
                                                                 .arg(p->viewport()->height())));
    }
  }

  void badFileIsRefusedWithMessage() {
    const std::string path = test::tempDir() + "/bad.onnx";
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("definitely not protobuf");
    f.close();
    MainWindow w;
    w.setDialogsEnabled(false);
    QSignalSpy spy(&w, &MainWindow::modelLoaded);
    w.openModel(QString::fromStdString(path));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().first().toBool(), false);
    QVERIFY(w.lastError().contains("bad.onnx"));
    QVERIFY(!w.model());
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
