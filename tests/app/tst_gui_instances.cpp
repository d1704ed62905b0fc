// The GUI opens scheduling instances (a SAGA problem instance, WfCommons workflows): the graph scene
// has a node per task and an edge per dependency labelled with its data, the palette the instance's
// devices, the Gantt chart every task on its device; a drag re-simulates as core's move rule says;
// every scheduler and the comparison run on the instance's cost table; plan, trace and images export;
// what needs an ONNX model or a platform is refused with a reason; --platform is said to be ignored;
// a corrupt instance gets a dialog naming the file and core's reason, and the previous session stays.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QUndoStack>

#include <set>

#include "cost/instances.h"
#include "gantt/ganttview.h"
#include "gen/generator.h"
#include "graph/devicepalette.h"
#include "graph/graphitems.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "gui/platformeditor.h"
#include "plan/move.h"
#include "plan/planfile.h"
#include "sched/llamarules.h"
#include "sched/scheduler.h"
#include "session/session.h"
#include "mainwindowtestutil.h"
#include "sessiontestutil.h"
#include "support/files.h"
#include "support/strings.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

QString instancePath(const char* name) {
  return QString::fromStdString(test::testDataDir() + "/instances/" + name);
}

/// The scene shows every task as its own node and every dependency as an edge whose label starts with
/// the data it carries, in decimal units as the instance files count them.
void checkScene(MainWindow& w) {
  const Session* s = w.session();
  const CostTable& t = *s->table();
  GraphScene* sc = w.graphView()->graphScene();
  QCOMPARE(static_cast<int>(sc->display().nodes.size()), t.numTasks());
  for (int v = 0; v < t.numTasks(); ++v) {
    QGraphicsItem* item = sc->itemOfOp(v);
    QVERIFY(item);
    QCOMPARE(item->type(), static_cast<int>(NodeItem::Type));
    QCOMPARE(sc->opsOf(item), QList<int>{v});
  }
  int edges = 0;
  for (QGraphicsItem* item : sc->items()) {
    if (item->type() != EdgeItem::Type) continue;
    const auto* e = static_cast<EdgeItem*>(item);
    const auto& de = sc->display().edges[static_cast<size_t>(e->displayEdge())];
    QCOMPARE(static_cast<int>(de.costEdges.size()), 1);
    const Edge& ce = t.edges[static_cast<size_t>(de.costEdges.front())];
    QCOMPARE(sc->display().nodes[static_cast<size_t>(de.src)].op, ce.src);
    QCOMPARE(sc->display().nodes[static_cast<size_t>(de.dst)].op, ce.dst);
    const QString size = QString::fromStdString(humanCount(static_cast<double>(ce.bytes)) + "B");
    QVERIFY2(e->label().startsWith(size), qPrintable(e->label() + " does not start with " + size));
    ++edges;
  }
  QCOMPARE(edges, static_cast<int>(t.edges.size()));
}

/// The palette lists the instance's devices, and the Gantt chart has every task once, on the row of
/// the device the plan puts it on.
void checkPaletteAndGantt(MainWindow& w) {
  const Session* s = w.session();
  const CostTable& t = *s->table();
  QCOMPARE(w.palette()->model()->rowCount(), t.numDevices());
  for (int d = 0; d < t.numDevices(); ++d)
    QVERIFY(w.palette()->model()->index(d, 0).data().toString().contains(QString::fromStdString(t.deviceIds[d])));
  GanttView* g = w.ganttView();
  std::vector<int> seen(static_cast<size_t>(t.numTasks()), 0);
  int deviceRows = 0;
  for (size_t r = 0; r < g->rows().size(); ++r) {
    const GanttRow& row = g->rows()[r];
    if (row.kind != GanttRowKind::Device) continue;
    ++deviceRows;
    QCOMPARE(row.label, QString::fromStdString(t.deviceIds[static_cast<size_t>(row.device)]));
    for (const GanttBar& b : g->bars().perRow[r]) {
      if (b.kind != GanttBarKind::Task) continue;
      QCOMPARE(s->deviceOf(b.index), row.device);
      QCOMPARE(b.start, s->timeline().tasks[static_cast<size_t>(b.index)].start);
      ++seen[static_cast<size_t>(b.index)];
    }
  }
  QCOMPARE(deviceRows, t.numDevices());
  for (int v = 0; v < t.numTasks(); ++v) QCOMPARE(seen[static_cast<size_t>(v)], 1);
}

/// A drag onto another device moves the task, and the timeline is the one core's move rule gives
/// (plan/move.h on a simulator of the same table); undo restores the plan and its times.
void checkDragMatchesCore(MainWindow& w) {
  Session* s = w.session();
  int op = -1, dev = -1;
  QVERIFY(test::findEffectiveMove(*s, &op, &dev));
  const PlanState before = s->state();
  const Timeline tl0 = s->timeline();
  Simulator sim(*s->table());
  auto expected = applyMove(sim, *s->table(), before.plan, tl0, {op}, dev);
  QVERIFY(expected.isOk());
  test::dragOpToDevice(w, op, dev);
  QCOMPARE(s->deviceOf(op), dev);
  QVERIFY(s->timeline().makespan != tl0.makespan);
  QVERIFY(test::sameTimes(s->timeline(), expected->timeline));
  QCOMPARE(s->plan().order, expected->plan.order);
  // The Gantt chart follows at once.
  QCOMPARE(w.ganttView()->shownMakespan(), s->timeline().makespan);
  checkPaletteAndGantt(w);
  s->undoStack()->undo();
  QVERIFY(s->state() == before);
  QVERIFY(test::sameTimes(s->timeline(), tl0));
}

}  // namespace

class TestGuiInstances : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("PartexTest");
  }

  void sagaInstanceOpensWithItsDevices() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy status(w.statusBar(), &QStatusBar::messageChanged);
    w.setPlatform("cpu-gpu-pcie");  // as --platform does: meaningless for an instance
    QVERIFY(test::openAndWait(w, instancePath("saga_small.json"), 60000));
    Session* s = w.session();
    QVERIFY(s->isInstance());
    QVERIFY(!s->model());
    QCOMPARE(QString::fromStdString(s->instance()->format), QStringLiteral("saga"));
    // The instance's own tasks and devices, as core reads them (SAGA: 2 nodes, 3 tasks).
    auto core = readInstanceFile(instancePath("saga_small.json").toStdString());
    QVERIFY(core.isOk());
    QCOMPARE(s->table()->taskNames, core->table.taskNames);
    QCOMPARE(s->table()->deviceIds, (std::vector<std::string>{"A", "B"}));
    QCOMPARE(s->table()->cost, core->table.cost);
    // --platform was said to be ignored, and the platform chooser waits for the next model.
    bool said = false;
    for (const auto& args : status) said = said || args.first().toString().contains("platform cpu-gpu-pcie is ignored");
    QVERIFY(said);
    QCOMPARE(s->platformName(), QStringLiteral("cpu-gpu-pcie"));
    bool chooserOff = false;
    for (QComboBox* box : w.findChildren<QComboBox*>())
      if (box->currentText() == "cpu-gpu-pcie" && box->toolTip().contains("applies to the next ONNX model"))
        chooserOff = !box->isEnabled();
    QVERIFY(chooserOff);
    QAbstractItemModelTester tester(w.operatorView()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(w.operatorView()->model()->rowCount(), 3);
    checkScene(w);
    checkPaletteAndGantt(w);
    checkDragMatchesCore(w);
    // The makespan and lower bound shown are the simulator's and core's.
    QCOMPARE(s->lowerBoundUs(), lowerBound(*s->table()));
    QVERIFY(w.makespanLabel()->text().contains(QString::number(static_cast<int>(s->timeline().makespan + 0.5))));
  }

  void everySchedulerAndTheComparisonRunOnAnInstance() {
    MainWindow w;
    QVERIFY(test::openAndWait(w, instancePath("saga_small.json"), 60000));
    Session* s = w.session();
    QStringList all;
    for (const auto& sched : allSchedulers()) {
      const QString name = QString::fromStdString(sched->name());
      QSignalSpy done(s, &Session::schedulerFinished);
      s->runScheduler(name, false, 5.0);
      QVERIFY(done.wait(30000));
      if (isLlamaRule(name.toStdString())) {
        // The first-k-layers rule needs layer names, which an instance has not: refused, saying why.
        QVERIFY(!done.first().first().toBool());
        QVERIFY2(done.first().at(1).toString().contains(QLatin1String("no layer names")), qPrintable(done.first().at(1).toString()));
        continue;
      }
      all << name;
      QVERIFY2(done.first().first().toBool(), qPrintable(name + ": " + done.first().at(1).toString()));
      // Whatever the scheduler, the timeline shown is the simulator's for its plan.
      auto tl = simulate(*s->table(), s->plan());
      QVERIFY(tl.isOk());
      QCOMPARE(s->timeline().makespan, tl->makespan);
      QVERIFY(s->timeline().makespan >= s->lowerBoundUs() - 1e-9);
    }
    QSignalSpy compared(s, &Session::compareFinished);
    s->runCompare(all, 5.0);
    QVERIFY(compared.wait(120000));
    const auto rows = compared.first().first().value<QList<CompareRow>>();
    QCOMPARE(rows.size(), all.size());
    for (const CompareRow& r : rows) {
      QVERIFY2(r.error.isEmpty(), qPrintable(r.algorithm + ": " + r.error));
      QCOMPARE(r.makespanUs, simulate(*s->table(), r.plan)->makespan);
    }
    QCOMPARE(w.compareView()->model()->rowCount(), all.size());
  }

  void wfcommonsInstancesOpen() {
    for (const char* file : {"wfcommons_v14.json", "wfcommons_v15.json"}) {
      MainWindow w;
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY2(test::openAndWait(w, instancePath(file), 60000), file);
      Session* s = w.session();
      QVERIFY(s->isInstance());
      QCOMPARE(QString::fromStdString(s->instance()->format), QStringLiteral("wfcommons"));
      auto core = readInstanceFile(instancePath(file).toStdString());
      QVERIFY(core.isOk());
      QCOMPARE(s->table()->taskNames, core->table.taskNames);
      QCOMPARE(s->numDevices(), core->table.numDevices());  // each machine's cores (issue 28)
      checkScene(w);
      checkPaletteAndGantt(w);
      if (std::string(file) == "wfcommons_v14.json") {
        // split writes a.dat (2 MB) for work_a, and a.dat and b.dat (6 MB) for work_b.
        QStringList labels;
        for (QGraphicsItem* item : w.graphView()->graphScene()->items())
          if (item->type() == EdgeItem::Type) labels << static_cast<EdgeItem*>(item)->label().section(',', 0, 0);
        labels.sort();
        QCOMPARE(labels, (QStringList{"2.00 MB", "6.00 MB"}));
        checkDragMatchesCore(w);
      }
    }
  }

  void exportsOfAnInstance() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QString path = instancePath("saga_small.json");
    QVERIFY(test::openAndWait(w, path, 60000));
    Session* s = w.session();
    const QString dir = QString::fromStdString(test::tempDir());
    // The plan file carries the identity partex-cli gives an instance, and reads back as the same plan.
    const QString planPath = dir + "/saga.plan.json";
    QVERIFY(w.exportPlan(planPath).isOk());
    PlanIdentity id{"saga_small.json", s->instance()->sha256, kInstancePlatformName};
    auto plan = loadPlanFile(planPath.toStdString(), *s->table(), id);
    QVERIFY2(plan.isOk(), plan.isOk() ? "" : plan.message().c_str());
    QCOMPARE(plan->device, s->plan().device);
    QCOMPARE(plan->order, s->plan().order);
    // The Perfetto trace has an event per task.
    const QString tracePath = dir + "/saga.trace.json";
    QVERIFY(w.exportTrace(tracePath).isOk());
    QFile trace(tracePath);
    QVERIFY(trace.open(QIODevice::ReadOnly));
    const QByteArray traceBytes = trace.readAll();
    QVERIFY(QJsonDocument::fromJson(traceBytes).isObject() || QJsonDocument::fromJson(traceBytes).isArray());
    for (const auto& name : s->table()->taskNames) QVERIFY(traceBytes.contains(("\"" + name + "\"").c_str()));
    QVERIFY(w.exportCsv(dir + "/saga.csv").isOk());
    QVERIFY(w.exportGraphImage(dir + "/saga-graph.png").isOk());
    QVERIFY(!QImage(dir + "/saga-graph.png").isNull());
    QVERIFY(w.exportGanttImage(dir + "/saga-gantt.png").isOk());
    QVERIFY(!QImage(dir + "/saga-gantt.png").isNull());
  }

  void whatNeedsAModelIsRefusedWithAReason() {
    MainWindow w;
    QVERIFY(test::openAndWait(w, instancePath("saga_small.json"), 60000));
    Session* s = w.session();
    const PlanState before = s->state();
    // Profiling this machine, profiles and ONNX Runtime imports: disabled, with the reason.
    QVERIFY(!w.profileAction()->isEnabled());
    QVERIFY(w.profilingUnavailableReason().contains("needs an ONNX model"));
    QVERIFY(w.profilingUnavailableReason().contains("saga_small.json"));
    QVERIFY(!w.startProfiling(QString::fromStdString(test::tempDir() + "/p.json")).isOk());
    const Status profile = w.loadProfile(instancePath("wfcommons_v14.json"));
    QVERIFY(!profile.isOk());
    QVERIFY(QString::fromStdString(profile.message()).contains("SAGA instance"));
    // The platform editor shows why it has nothing to edit; the platform chooser is off.
    QVERIFY(w.platformEditor()->lastMessage().contains("needs an ONNX model and a platform"));
    QCOMPARE(w.platformEditor()->devicesModel()->rowCount(), 0);
    // A project cannot hold an instance: the save says so and writes nothing.
    const QString project = QString::fromStdString(test::tempDir()) + "/inst.partex";
    const Status saved = w.saveProject(project);
    QVERIFY(!saved.isOk());
    QVERIFY(QString::fromStdString(saved.message()).contains("Export > Plan"));
    QVERIFY(!QFile::exists(project));
    // The autosave (a project) is not written for an instance, even with changes.
    int op = -1, dev = -1;
    QVERIFY(test::findEffectiveMove(*s, &op, &dev));
    QVERIFY(s->moveOps({op}, dev).isOk());
    QVERIFY(s->modified());
    QVERIFY(!w.autosaveNow());
    // The inspector shows the task's costs on the instance's devices and why there is no more.
    s->setSelection({op});
    QTextBrowser* insp = w.findChild<QTextBrowser*>();
    QVERIFY(insp);
    const QString html = insp->toHtml();
    QVERIFY(html.contains(QString::fromStdString(s->table()->taskNames[static_cast<size_t>(op)])));
    QVERIFY(html.contains("no ONNX operator behind it"));
    s->undoStack()->undo();
    QVERIFY(s->state() == before);
  }

  void corruptInstanceKeepsThePreviousSession() {
    MainWindow w;
    QVERIFY(test::openAndWait(w, instancePath("saga_small.json"), 60000));
    Session* s = w.session();
    const CostTable* table = s->table();
    const PlanState before = s->state();
    const QString title = w.windowTitle();
    const QString dir = QString::fromStdString(test::tempDir());
    auto whole = readFile(instancePath("saga_small.json").toStdString());
    QVERIFY(whole.isOk());
    struct Bad {
      QString file;
      std::string text;
    };
    const std::vector<Bad> bad = {
        {dir + "/truncated_saga.json", whole->substr(0, whole->size() / 2)},
        {dir + "/unknown_task.json", R"({"task_graph": {"tasks": [{"name": "a", "cost": 1}],
            "dependencies": [{"source": "a", "target": "zz", "size": 1}]},
            "network": {"nodes": [{"name": "A", "speed": 1}], "edges": []}})"},
        {dir + "/no_runtime_wf.json", R"({"workflow": {"tasks": [{"name": "x", "parents": []}]}})"},
    };
    for (const Bad& b : bad) {
      QVERIFY(writeFileAtomic(b.file.toStdString(), b.text).isOk());
      // The reason is core's, word for word, and it names the file.
      auto core = readInstanceFile(b.file.toStdString());
      QVERIFY(!core.isOk());
      const QString reason = QString::fromStdString(core.message());
      QVERIFY(reason.contains(QFileInfo(b.file).fileName()));
      // With dialogs on, the error comes as a dialog; it is read and closed.
      w.setDialogsEnabled(true);
      QString dialogText;
      QTimer closer;
      connect(&closer, &QTimer::timeout, &w, [&] {
        if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
          dialogText = box->text();
          box->accept();
        }
      });
      closer.start(50);
      QSignalSpy loaded(&w, &MainWindow::modelLoaded);
      w.openModel(b.file);
      QVERIFY(loaded.wait(30000));
      closer.stop();
      QCOMPARE(loaded.first().first().toBool(), false);
      QCOMPARE(dialogText, reason);
      QCOMPARE(w.lastError(), reason);
      // The previous session stays as it was.
      QCOMPARE(s->table(), table);
      QVERIFY(s->state() == before);
      QVERIFY(s->isInstance());
      QCOMPARE(w.windowTitle(), title);
    }
  }

  void anOnnxModelAfterAnInstanceGetsThePlatform() {
    const std::string model = test::tempDir() + "/r18.onnx";
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY(generateModelFile(spec, model).isOk());
    MainWindow w;
    w.setPlatform("cpu-gpu-pcie");
    QVERIFY(test::openAndWait(w, instancePath("saga_small.json"), 60000));
    QVERIFY(w.session()->isInstance());
    QVERIFY(test::openAndWait(w, QString::fromStdString(model), 60000));
    Session* s = w.session();
    QVERIFY(!s->isInstance());
    QVERIFY(s->model());
    QCOMPARE(QString::fromStdString(s->platform().name), QStringLiteral("cpu-gpu-pcie"));
    QCOMPARE(s->numDevices(), static_cast<int>(s->platform().devices.size()));
    QVERIFY(w.platformEditor()->lastMessage().isEmpty());
    QCOMPARE(w.platformEditor()->devicesModel()->rowCount(), s->numDevices());
    QVERIFY(w.profilingUnavailableReason().contains("this-machine"));
  }
};

QTEST_MAIN(TestGuiInstances)
#include "tst_gui_instances.moc"
