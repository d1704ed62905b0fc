// Projects, autosave and exports in the main window: a project saved after a manual move and a pin
// opens in a fresh window with the same plan, pins, manual flags and makespan; a malformed project
// and one whose plan names a missing operator are refused with one line naming the file and leave
// the window usable; the autosave follows a change and recovery restores it; every export writes a
// file that parses, and no temporary file is left behind.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QUndoStack>

#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "gen/generator.h"
#include "plan/planfile.h"
#include "session/session.h"
#include "mainwindowtestutil.h"
#include "sessiontestutil.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

using partex::test::openAndWait;

using partex::test::findEffectiveMove;
using partex::test::sameTimes;

/// A generated ResNet-18, written once per process.
QString resnetPath() {
  static const std::string path = [] {
    const std::string p = test::tempDir() + "/r18.onnx";
    GenSpec spec;
    spec.kind = "resnet18";
    if (!generateModelFile(spec, p)) return std::string();
    return p;
  }();
  return QString::fromStdString(path);
}


/// A manual move and a pin of another operator, both through the session's undoable commands.
bool moveAndPin(Session& s) {
  int op = -1, dev = -1;
  if (!findEffectiveMove(s, &op, &dev)) return false;
  if (!s.moveOps({op}, dev)) return false;
  const int pinned = op == 0 ? 1 : 0;
  return s.setPinned({pinned}, true).isOk() && s.isManual(op) && s.isPinned(pinned);
}

/// Same plan (devices and orders), pins, manual flags, scheduler and makespans.
void checkSameState(const Session& a, const Session& b) {
  QCOMPARE(b.numOps(), a.numOps());
  QVERIFY(b.plan().device == a.plan().device);
  QVERIFY(b.plan().order == a.plan().order);
  QVERIFY(b.state().pinned == a.state().pinned);
  QVERIFY(b.state().manual == a.state().manual);
  QCOMPARE(b.state().algorithm, a.state().algorithm);
  QCOMPARE(b.state().schedulerMakespan, a.state().schedulerMakespan);
  QCOMPARE(b.timeline().makespan, a.timeline().makespan);
}

QStringList filesIn(const QString& dir) {
  QStringList l = QDir(dir).entryList(QDir::Files | QDir::Hidden);
  l.sort();
  return l;
}

}  // namespace

class TestGuiProject : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // the autosave never touches the user's data
    QCoreApplication::setOrganizationName("PartexTest");
    QVERIFY(!resnetPath().isEmpty());
    QFile::remove(MainWindow::autosavePath());
  }

  void saveAndReopenRestoresThePlan() {
    const QString dir = QString::fromStdString(test::tempDir()) + "/save";
    QVERIFY(QDir().mkpath(dir));
    const QString proj = dir + "/work.partex";
    MainWindow w;
    QVERIFY(openAndWait(w, resnetPath()));
    QVERIFY(!w.session()->modified());
    QVERIFY(moveAndPin(*w.session()));
    QVERIFY(w.session()->modified());
    w.session()->setSelection({2, 3});
    w.graphView()->zoomBy(1.25);
    const Status st = w.saveProject(proj);
    QVERIFY2(st.isOk(), st.message().c_str());
    QVERIFY(!w.session()->modified());
    QCOMPARE(w.projectPath(), proj);
    QCOMPARE(filesIn(dir), QStringList{"work.partex"});  // no temporary file, no platform beside it

    MainWindow w2;
    QVERIFY(openAndWait(w2, proj));  // through the model path: a .partex opens as a project
    QCOMPARE(w2.lastError(), QString());
    checkSameState(*w.session(), *w2.session());
    QCOMPARE(w2.session()->undoStack()->count(), 0);
    QVERIFY(!w2.session()->modified());
    QCOMPARE(w2.projectPath(), proj);
    QCOMPARE(w2.session()->platformName(), QString("mobile-soc"));
    QCOMPARE(w2.session()->selection(), (QList<int>{2, 3}));
    QCOMPARE(w2.graphView()->transform().m11(), w.graphView()->transform().m11());
    // The restored session edits like any other, and undo returns to the saved state.
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(*w2.session(), &op, &dev));
    QVERIFY(w2.session()->moveOps({op}, dev).isOk());
    QVERIFY(w2.session()->modified());
    w2.session()->undoStack()->undo();
    checkSameState(*w.session(), *w2.session());
    QVERIFY(!w2.session()->modified());
  }

  void editedPlatformIsSavedBesideTheProject() {
    const QString dir = QString::fromStdString(test::tempDir()) + "/edited";
    QVERIFY(QDir().mkpath(dir));
    const QString proj = dir + "/edited.partex";
    MainWindow w;
    QVERIFY(openAndWait(w, resnetPath()));
    Platform p = w.session()->platform();
    p.name = "my-soc";
    p.devices[0].defaultPeakGflops *= 3;
    p.devices[0].launchOverheadUs += 5;
    QSignalSpy changed(w.session(), &Session::modelChanged);
    w.session()->setPlatform(p, "my-soc");
    QVERIFY(changed.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 120000);
    QVERIFY(moveAndPin(*w.session()));
    QVERIFY(w.saveProject(proj).isOk());
    QCOMPARE(filesIn(dir), (QStringList{"edited.partex", "edited.platform.json"}));
    MainWindow w2;
    QVERIFY(openAndWait(w2, proj));
    QCOMPARE(w2.session()->platform().name, std::string("my-soc"));
    checkSameState(*w.session(), *w2.session());
  }

  void malformedProjectIsRefused() {
    const QString path = QString::fromStdString(test::tempDir()) + "/broken.partex";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ \"format\": \"partex-project\", \"version\": 1, ");
    f.close();
    MainWindow w;
    w.setDialogsEnabled(false);
    const Status st = w.openProject(path);
    QVERIFY(!st);
    QVERIFY2(w.lastError().contains("broken.partex"), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QVERIFY(!w.model());
    // The window is still usable.
    QVERIFY(openAndWait(w, resnetPath()));
    QVERIFY(w.model());
  }

  void planNamingAMissingOperatorFallsBackToHeft() {
    const QString dir = QString::fromStdString(test::tempDir()) + "/missing";
    QVERIFY(QDir().mkpath(dir));
    const QString good = dir + "/good.partex", bad = dir + "/stale.partex";
    MainWindow w;
    QVERIFY(openAndWait(w, resnetPath()));
    const Plan heft = w.session()->plan();
    QVERIFY(moveAndPin(*w.session()));
    QVERIFY(w.saveProject(good).isOk());
    // Rename one operator of the embedded plan.
    QFile in(good);
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject doc = QJsonDocument::fromJson(in.readAll()).object();
    in.close();
    QJsonObject plan = doc["plan"].toObject();
    QJsonArray ops = plan["operators"].toArray();
    QJsonObject first = ops[0].toObject();
    first["name"] = "no_such_operator";
    ops[0] = first;
    plan["operators"] = ops;
    doc["plan"] = plan;
    doc["pins"] = QJsonArray();
    QFile out(bad);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(doc).toJson());
    out.close();

    MainWindow w2;
    QVERIFY(openAndWait(w2, bad));
    QVERIFY2(w2.lastError().contains("stale.partex"), qPrintable(w2.lastError()));
    QVERIFY(!w2.lastError().contains('\n'));
    QVERIFY(w2.session()->plan().device == heft.device);  // HEFT's plan
    QCOMPARE(w2.session()->state().algorithm, std::string("heft"));
    QVERIFY(w2.session()->state().pinned.empty());
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(*w2.session(), &op, &dev));
    QVERIFY(w2.session()->moveOps({op}, dev).isOk());
  }

  void badPinOrMissingModelIsRefused() {
    const QString dir = QString::fromStdString(test::tempDir()) + "/badpin";
    QVERIFY(QDir().mkpath(dir));
    const QString good = dir + "/good.partex";
    MainWindow w;
    QVERIFY(openAndWait(w, resnetPath()));
    QVERIFY(moveAndPin(*w.session()));
    QVERIFY(w.saveProject(good).isOk());
    QFile in(good);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(in.readAll()).object();
    in.close();
    auto write = [&](const QString& name, const QJsonObject& o) {
      QFile out(dir + "/" + name);
      if (!out.open(QIODevice::WriteOnly)) return QString();
      out.write(QJsonDocument(o).toJson());
      return out.fileName();
    };
    QJsonObject badPin = doc;
    badPin["pins"] = QJsonArray{QJsonObject{{"op", "nowhere"}, {"device", "cpu"}}};
    QJsonObject noModel = doc;
    noModel["model"] = QJsonObject{{"path", "gone.onnx"}, {"dims", QJsonArray()}};
    for (const auto& [name, o] : {std::pair{QString("badpin.partex"), badPin}, {QString("nomodel.partex"), noModel}}) {
      const QString path = write(name, o);
      QVERIFY(!path.isEmpty());
      MainWindow w2;
      w2.setDialogsEnabled(false);
      QSignalSpy loaded(&w2, &MainWindow::modelLoaded);
      QVERIFY(w2.openProject(path).isOk());  // readable: the failure comes from the load
      QVERIFY(loaded.wait(60000));
      QCOMPARE(loaded.first().first().toBool(), false);
      QVERIFY2(w2.lastError().contains(name), qPrintable(w2.lastError()));
      QVERIFY(!w2.lastError().contains('\n'));
      QVERIFY(!w2.model());
      QVERIFY(openAndWait(w2, resnetPath()));  // still usable
    }
  }

  void autosaveFollowsChangesAndRecoveryRestores() {
    const QString autosave = MainWindow::autosavePath();
    QVERIFY(autosave.contains("qttest"));  // test mode: never the user's data
    QFile::remove(autosave);
    auto w = std::make_unique<MainWindow>();
    QVERIFY(openAndWait(*w, resnetPath()));
    w->setAutosaveInterval(50);
    QTest::qWait(300);
    QVERIFY(!QFileInfo::exists(autosave));  // nothing unsaved yet
    QVERIFY(moveAndPin(*w->session()));
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(autosave), 10000);
    QVERIFY(filesIn(QFileInfo(autosave).path()).filter(QRegularExpression("^autosave")).size() == 1);
    QVERIFY(w->session()->modified());

    MainWindow w2;
    w2.setDialogsEnabled(false);
    QVERIFY(!w2.checkRecovery());  // without dialogs it never asks
    QSignalSpy loaded(&w2, &MainWindow::modelLoaded);
    QVERIFY(w2.recoverAutosave().isOk());
    QVERIFY(loaded.wait(120000));
    QVERIFY(loaded.first().first().toBool());
    checkSameState(*w->session(), *w2.session());
    QVERIFY(w2.session()->modified());  // recovered work is still unsaved
    QCOMPARE(w2.projectPath(), QString());

    // A clean exit removes the autosave.
    w->close();
    QVERIFY(!QFileInfo::exists(autosave));
    w.reset();
    QVERIFY(!w2.recoverAutosave());
  }

  void exportsWriteFilesThatParse() {
    const QString dir = QString::fromStdString(test::tempDir()) + "/exports";
    QVERIFY(QDir().mkpath(dir));
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndWait(w, resnetPath()));
    QVERIFY(moveAndPin(*w.session()));
    const Session& s = *w.session();

    QVERIFY(w.exportPlan(dir + "/plan.json").isOk());
    auto plan = loadPlanFile((dir + "/plan.json").toStdString(), *s.table(), PlanIdentity{});
    QVERIFY2(plan.isOk(), plan.message().c_str());
    QVERIFY(plan->device == s.plan().device);

    QVERIFY(w.exportTrace(dir + "/trace.json").isOk());
    QFile trace(dir + "/trace.json");
    QVERIFY(trace.open(QIODevice::ReadOnly));
    const QJsonObject t = QJsonDocument::fromJson(trace.readAll()).object();
    QVERIFY(t["traceEvents"].isArray());
    QVERIFY(t["traceEvents"].toArray().size() >= s.numOps());

    QVERIFY(w.exportCsv(dir + "/ops.csv").isOk());
    QFile csv(dir + "/ops.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QCOMPARE(csv.readAll().count('\n'), s.numOps() + 1);

    for (const QString& kind : {QString("graph"), QString("gantt")}) {
      const QString png = dir + "/" + kind + ".png", svg = dir + "/" + kind + ".svg";
      const Status a = kind == "graph" ? w.exportGraphImage(png) : w.exportGanttImage(png);
      QVERIFY2(a.isOk(), a.message().c_str());
      const Status b = kind == "graph" ? w.exportGraphImage(svg) : w.exportGanttImage(svg);
      QVERIFY2(b.isOk(), b.message().c_str());
      QImage img(png);
      QVERIFY(!img.isNull());
      QVERIFY(img.width() > 0 && img.height() > 0);
      QFile f(svg);
      QVERIFY(f.open(QIODevice::ReadOnly));
      QVERIFY(f.readAll().contains("<svg"));
    }
    const Status refused = w.exportGraphImage(dir + "/graph.bmp");
    QVERIFY(!refused);
    QVERIFY(QString::fromStdString(refused.message()).contains("graph.bmp"));
    QCOMPARE(filesIn(dir),
             (QStringList{"gantt.png", "gantt.svg", "graph.png", "graph.svg", "ops.csv", "plan.json", "trace.json"}));
  }
};

QTEST_MAIN(TestGuiProject)
#include "tst_gui_project.moc"
