// Measured profiles in the GUI (issue 5): a profile written in the test with known medians overrides
// the modelled costs with provenance "measured" and changes the simulated makespan; removing it
// restores the modelled table exactly; corrupt files, another model's profile, a device the platform
// lacks and a profile that matches nothing are refused with one line naming the file and leave the
// table as it was; ONNX Runtime imports are "imported" and applied after the Partex profiles; a
// platform switch re-applies what still fits and drops the rest with a warning; projects keep their
// profiles (relative paths) and open with a warning when one is gone; the main window shows the
// counts, the list, the operator table's cost source; "Profile on this machine" measures, saves and
// loads a profile on the this-machine platform.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QStandardPaths>
#include <QTableView>
#include <QUndoStack>

#include "gui/inspector.h"
#include "gui/mainwindow.h"
#include "gui/operatortablemodel.h"
#include "gen/generator.h"
#include "profile/ortprofile.h"
#include "profile/profile.h"
#include "session/session.h"
#include "mainwindowtestutil.h"
#include "sessiontestutil.h"
#include "support/strings.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

using partex::test::openAndWait;

/// The model the bundled ONNX Runtime trace was written for: `partex-cli generate random --nodes 16
/// --seed 3` (tests/data/ort).
QString randomModel(int nodes, uint64_t seed) {
  const std::string p =
      test::tempDir() + "/random" + std::to_string(nodes) + "_seed" + std::to_string(seed) + ".onnx";
  if (!QFileInfo::exists(QString::fromStdString(p))) {
    GenSpec s;
    s.kind = "random";
    s.nodes = nodes;
    s.seed = seed;
    if (!generateModelFile(s, p)) return {};
  }
  return QString::fromStdString(p);
}

QString modelPath() {
  return randomModel(16, 3);
}

/// Another model, for "profile of another model".
QString otherModelPath() {
  return randomModel(12, 5);
}

QString ortFixture() {
  return QString::fromStdString(test::testDataDir() + "/ort/random16_seed3.ort_profile.json");
}

std::shared_ptr<const LoadedModel> loaded(const QString& path) {
  auto m = loadModel(path.toStdString(), {});
  if (!m) qFatal("%s", m.message().c_str());
  return m.value();
}

/// The median the test profiles give operator `i` (known, and far from any modelled cost).
double medianFor(int i, double base) {
  return base + 10.0 * i;
}

/// A profile of `m` in code: every operator on each of `devices`, median medianFor(i, base).
Profile makeProfile(const LoadedModel& m, const std::vector<std::string>& devices, double base) {
  Profile p;
  p.modelFile = QFileInfo(QString::fromStdString(m.path)).fileName().toStdString();
  p.modelSha256 = m.graph.graphSha256;
  p.backendName = "cpu";
  p.backendVersion = "test";
  p.source = "tst_gui_profiles";
  p.measuredAt = "2026-11-22T10:00:00Z";
  p.machine = "test machine";
  p.warmup = 0;
  p.reps = 3;
  p.method = "per-operator";
  for (const auto& id : devices) {
    ProfileDevice& d = p.device(id);
    for (size_t i = 0; i < m.graph.nodes.size(); ++i) {
      const double med = medianFor(static_cast<int>(i), base);
      d.ops.push_back({m.graph.nodes[i].name, m.graph.nodes[i].opType, TimingStat{med, 0.0, med, med, 3}});
    }
  }
  return p;
}

QString writeProfile(const QString& path, const Profile& p) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  const Status st = saveProfile(path.toStdString(), p);
  if (!st) qFatal("%s", st.message().c_str());
  return path;
}

QString writeText(const QString& path, const QByteArray& text) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write(text);
  return path;
}

void installOn(Session& s, const QString& model, const std::string& platform) {
  auto p = prepareSession(loaded(model), platform);
  if (!p) qFatal("%s", p.message().c_str());
  s.install(std::move(p).value());
}

int deviceIndex(const CostTable& t, const std::string& id) {
  for (int d = 0; d < t.numDevices(); ++d)
    if (t.deviceIds[static_cast<size_t>(d)] == id) return d;
  return -1;
}

size_t at(const CostTable& t, int op, int d) {
  return static_cast<size_t>(op) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(d);
}

/// Every operator's cost on device `id` is the test profile's median, as measured.
bool measuredOn(const Session& s, const std::string& id, double base) {
  const CostTable& t = *s.table();
  const int d = deviceIndex(t, id);
  if (d < 0) return false;
  for (int v = 0; v < t.numTasks(); ++v)
    if (t.w(v, d) != medianFor(v, base) || t.provenance[at(t, v, d)] != Provenance::Measured) return false;
  return true;
}

/// Same costs and provenance in every entry.
bool sameCosts(const CostTable& a, const CostTable& b) {
  return a.cost == b.cost && a.provenance == b.provenance && a.linkLatencyUs == b.linkLatencyUs &&
         a.linkBytesPerUs == b.linkBytesPerUs;
}


bool waitLoaded(Session& s) {
  return QTest::qWaitFor([&s] { return !s.loading(); }, 120000);
}

}  // namespace

class TestGuiProfiles : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("PartexTest");
    QVERIFY(!modelPath().isEmpty());
    QVERIFY(!otherModelPath().isEmpty());
    QFile::remove(MainWindow::autosavePath());
  }

  void profileOverridesThenRemoveRestores() {
    QTemporaryDir dir;
    Session s;
    installOn(s, modelPath(), "cpu-gpu-pcie");
    const CostTable modelled = *s.table();
    const Timeline tl0 = s.timeline();
    const Plan plan0 = s.plan();
    QVERIFY(!s.modified());
    QCOMPARE(s.costCounts().measured, 0);
    const QString file = writeProfile(dir.filePath("r16.profile.json"), makeProfile(*s.model(), {"cpu", "gpu"}, 1000));

    QSignalSpy costs(&s, &Session::costsChanged);
    QSignalSpy plans(&s, &Session::planChanged);
    QSignalSpy lists(&s, &Session::profilesChanged);
    auto r = s.addProfile(file);
    QVERIFY2(r, r.message().c_str());
    QCOMPARE(r->opsApplied, 2 * s.numOps());
    QCOMPARE(costs.count(), 1);
    QCOMPARE(plans.count(), 1);
    QCOMPARE(lists.count(), 1);
    QVERIFY(measuredOn(s, "cpu", 1000));
    QVERIFY(measuredOn(s, "gpu", 1000));
    QCOMPARE(s.costCounts().measured, 2 * s.numOps());
    QCOMPARE(s.costCounts().modelled, 0);
    QCOMPARE(s.profiles().size(), size_t(1));
    QCOMPARE(s.profiles()[0].kind, LoadedProfile::Kind::Partex);
    QCOMPARE(QString::fromStdString(s.profiles()[0].path), QFileInfo(file).absoluteFilePath());
    // The plan is kept and re-simulated on the measured costs: the makespan is the simulator's on the
    // new table, and (operators of 1,000 us and more instead of microseconds) a different one.
    QVERIFY(s.plan().device == plan0.device && s.plan().order == plan0.order);
    auto check = simulate(*s.table(), s.plan());
    QVERIFY(check);
    QCOMPARE(s.timeline().makespan, check->makespan);
    QVERIFY(s.timeline().makespan > tl0.makespan);
    QVERIFY(s.timeline().makespan >= medianFor(0, 1000));
    QCOMPARE(s.state().schedulerMakespan, s.timeline().makespan);  // the new reference
    QVERIFY(s.modified());
    QCOMPARE(s.undoStack()->count(), 0);

    // The same file again is read again in its place, not added twice.
    QVERIFY(s.addProfile(file));
    QCOMPARE(s.profiles().size(), size_t(1));

    QVERIFY(s.removeProfile(0));
    QVERIFY(s.profiles().empty());
    QVERIFY(sameCosts(*s.table(), modelled));
    QVERIFY(test::sameTimes(s.timeline(), tl0));
    QCOMPARE(s.costCounts().measured, 0);
    QVERIFY(s.modified());  // the profile list changed since the install
    QVERIFY(!s.removeProfile(0));
  }

  void refusedProfilesChangeNothing() {
    QTemporaryDir dir;
    Session s;
    installOn(s, modelPath(), "cpu-gpu-pcie");
    const auto table0 = s.tablePtr();
    const CostTable modelled = *table0;
    const double makespan0 = s.timeline().makespan;

    Profile other = makeProfile(*loaded(otherModelPath()), {"cpu"}, 1000);
    Profile npu = makeProfile(*s.model(), {"npu"}, 1000);
    Profile renamed = makeProfile(*s.model(), {"cpu"}, 1000);
    renamed.modelSha256.clear();  // matched by name...
    for (auto& op : renamed.devices[0].ops) op.name = "not_" + op.name;  // ...and nothing matches
    struct Case {
      QString file;
      QString reason;
    };
    const std::vector<Case> cases = {
        {writeText(dir.filePath("corrupt.json"), "{ \"format\": \"partex-profile\", "), "not valid JSON"},
        {writeText(dir.filePath("array.json"), "[1, 2, 3]"), "JSON object"},
        {writeProfile(dir.filePath("other-model.json"), other), "profile is for model"},
        {writeProfile(dir.filePath("npu.json"), npu), "'npu' is not on the platform"},
        {writeProfile(dir.filePath("renamed.json"), renamed), "none of its"},
        {dir.filePath("missing.json"), "no such file"},
    };
    for (const auto& c : cases) {
      QSignalSpy costs(&s, &Session::costsChanged);
      auto r = s.addProfile(c.file);
      QVERIFY2(!r, qPrintable(c.file));
      const QString msg = QString::fromStdString(r.message());
      QVERIFY2(msg.contains(QFileInfo(c.file).fileName()), qPrintable(msg));
      QVERIFY2(msg.contains(c.reason), qPrintable(msg));
      QVERIFY(!msg.contains('\n'));
      QCOMPARE(costs.count(), 0);
      QVERIFY(s.tablePtr() == table0);
      QVERIFY(sameCosts(*s.table(), modelled));
      QCOMPARE(s.timeline().makespan, makespan0);
      QVERIFY(s.profiles().empty());
      QVERIFY(!s.modified());
    }
    // An ONNX Runtime import for a device the platform lacks: refused the same way.
    auto r = s.addOrtImport(ortFixture(), "npu");
    QVERIFY(!r);
    QVERIFY2(QString::fromStdString(r.message()).contains("random16_seed3.ort_profile.json"), r.message().c_str());
    QVERIFY(s.tablePtr() == table0);
    QVERIFY(!s.modified());
  }

  void runningSchedulersAreDroppedWhenCostsChange() {
    // Results computed on the old costs never reach the new table (whenever the worker finishes:
    // they are handled from the event loop, after the profile was installed).
    QTemporaryDir dir;
    Session s;
    installOn(s, modelPath(), "cpu-gpu-pcie");
    const QString file = writeProfile(dir.filePath("p.json"), makeProfile(*s.model(), {"cpu"}, 1000));
    QSignalSpy finished(&s, &Session::schedulerFinished);
    QSignalSpy compared(&s, &Session::compareFinished);
    const PlanState before = s.state();
    s.runScheduler(QStringLiteral("peft"), false);
    s.runCompare({QStringLiteral("heft"), QStringLiteral("cpop")});
    QVERIFY(s.addProfile(file));
    QVERIFY(compared.isEmpty());  // delivered through the event loop only
    QVERIFY(compared.wait(60000));
    QVERIFY(compared.first().first().value<QList<CompareRow>>().isEmpty());
    s.waitForJobs();
    QCoreApplication::processEvents();
    QVERIFY(!s.schedulerRunning());
    bool schedulerTold = false;
    for (const auto& f : finished) schedulerTold = schedulerTold || f.at(1).toString().contains("the costs changed");
    QVERIFY(schedulerTold);
    QVERIFY(s.plan().device == before.plan.device);  // PEFT's plan did not replace the kept one
    QCOMPARE(s.undoStack()->count(), 0);
  }

  void ortImportsAreImportedAndComeAfterProfiles() {
    QTemporaryDir dir;
    Session s;
    installOn(s, modelPath(), "cpu-gpu-pcie");
    auto expected = loadOrtProfileFile(ortFixture().toStdString(), "gpu");
    QVERIFY2(expected, expected.message().c_str());
    auto r = s.addOrtImport(ortFixture(), "gpu");
    QVERIFY2(r, r.message().c_str());
    QVERIFY(r->opsApplied > 0);
    const CostTable& t = *s.table();
    const int gpu = deviceIndex(t, "gpu");
    int checked = 0;
    for (const auto& op : expected->devices[0].ops) {
      const auto it = std::find(t.taskNames.begin(), t.taskNames.end(), op.name);
      if (it == t.taskNames.end()) continue;
      const int v = static_cast<int>(it - t.taskNames.begin());
      QCOMPARE(t.w(v, gpu), op.time.medianUs);
      QCOMPARE(t.provenance[at(t, v, gpu)], Provenance::Imported);
      ++checked;
    }
    QCOMPARE(checked, r->opsApplied);
    QCOMPARE(s.costCounts().imported, r->opsApplied);
    QCOMPARE(s.profiles()[0].kind, LoadedProfile::Kind::OrtImport);
    QCOMPARE(s.profiles()[0].device, std::string("gpu"));

    // A Partex profile loaded afterwards still applies first, as partex-cli's --profile before --import-ort.
    const QString file = writeProfile(dir.filePath("gpu.json"), makeProfile(*s.model(), {"gpu"}, 500));
    QVERIFY(s.addProfile(file));
    QCOMPARE(s.profiles().size(), size_t(2));
    QCOMPARE(s.profiles()[0].kind, LoadedProfile::Kind::Partex);
    QCOMPARE(s.profiles()[1].kind, LoadedProfile::Kind::OrtImport);
    QCOMPARE(s.costCounts().imported, r->opsApplied);  // the import overrides the profile where it has times
    QCOMPARE(s.costCounts().measured, s.numOps() - r->opsApplied);
  }

  void rebuildsReapplyOrDropProfiles() {
    QTemporaryDir dir;
    Session s;
    s.setPlatform(QStringLiteral("cpu-gpu-pcie"));
    s.open(modelPath());
    QVERIFY(waitLoaded(s) && s.hasModel());
    const QString cpuFile = writeProfile(dir.filePath("cpu.json"), makeProfile(*s.model(), {"cpu"}, 2000));
    QVERIFY(s.addProfile(cpuFile));
    QVERIFY(s.addOrtImport(ortFixture(), "gpu"));
    s.markSaved();
    QCOMPARE(s.profiles().size(), size_t(2));

    // cpu-npu has a cpu but no gpu: the profile is re-applied, the gpu import dropped with a warning.
    QSignalSpy warnings(&s, &Session::loadWarning);
    s.setPlatform(QStringLiteral("cpu-npu"));
    QVERIFY(waitLoaded(s));
    QCOMPARE(s.platform().name, std::string("cpu-npu"));
    QCOMPARE(s.profiles().size(), size_t(1));
    QCOMPARE(QFileInfo(QString::fromStdString(s.profiles()[0].path)).fileName(), QString("cpu.json"));
    QVERIFY(measuredOn(s, "cpu", 2000));
    QCOMPARE(s.costCounts().imported, 0);
    QCOMPARE(warnings.count(), 1);
    const QString w = warnings.first().first().toString();
    QVERIFY2(w.contains("random16_seed3.ort_profile.json") && w.contains("left out"), qPrintable(w));
    QVERIFY(!w.contains('\n'));
    QVERIFY(s.modified());  // the profile list differs from the saved one
    // The initial plan was made on the measured costs.
    auto check = simulate(*s.table(), s.plan());
    QVERIFY(check);
    QCOMPARE(s.timeline().makespan, check->makespan);

    // An edited platform (the platform editor's path) re-applies it too.
    Platform edited = s.platform();
    edited.name = "edited";
    s.setPlatform(edited, QStringLiteral("edited"));
    QVERIFY(waitLoaded(s));
    QCOMPARE(s.platform().name, std::string("edited"));
    QCOMPARE(s.profiles().size(), size_t(1));
    QVERIFY(measuredOn(s, "cpu", 2000));

    // Reloading the same model re-applies; another model starts without profiles.
    s.open(modelPath());
    QVERIFY(waitLoaded(s));
    QCOMPARE(s.profiles().size(), size_t(1));
    QVERIFY(measuredOn(s, "cpu", 2000));
    s.open(otherModelPath());
    QVERIFY(waitLoaded(s));
    QVERIFY(s.profiles().empty());
    QCOMPARE(s.costCounts().measured, 0);
  }

  void windowShowsMeasuredCosts() {
    QTemporaryDir dir;
    MainWindow w;
    w.setPlatform(QStringLiteral("cpu-gpu-pcie"));
    w.show();
    QVERIFY(openAndWait(w, modelPath()));
    Session& s = *w.session();
    const int n = s.costCounts().modelled;
    QCOMPARE(w.costsLabel()->text(), QString("Costs: 0 measured, 0 imported, %1 modelled").arg(n));
    QCOMPARE(w.profileList()->count(), 0);
    // The File menu offers the three ways to measured costs.
    QStringList fileActions;
    for (QAction* a : w.menuBar()->actions().first()->menu()->actions()) fileActions << a->text().remove('&');
    QVERIFY(fileActions.contains("Load profile..."));
    QVERIFY(fileActions.contains("Import ONNX Runtime profile..."));
    QVERIFY(fileActions.contains("Profile on this machine..."));
    // Profiling measures this computer: not on a preset of another platform.
    QVERIFY(!w.profileAction()->isEnabled());
    QVERIFY2(w.profileAction()->toolTip().contains("this-machine"), qPrintable(w.profileAction()->toolTip()));

    const QString file = writeProfile(dir.filePath("cpu.json"), makeProfile(*s.model(), {"cpu"}, 1000));
    const double before = s.timeline().makespan;
    QVERIFY(w.loadProfile(file));
    QCOMPARE(w.lastError(), QString());
    QVERIFY(s.timeline().makespan != before);
    QCOMPARE(w.costsLabel()->text(),
             QString("Costs: %1 measured, 0 imported, %2 modelled").arg(s.numOps()).arg(n - s.numOps()));
    QCOMPARE(w.profileList()->count(), 1);
    QVERIFY(w.profileList()->item(0)->text().contains("cpu.json"));
    QVERIFY(w.isWindowModified());
    QVERIFY(!w.grab().isNull());  // every view paints from the new table (the old one is gone)
    QVERIFY(w.makespanLabel()->text().contains(
        QString::fromStdString(withCommas(static_cast<uint64_t>(s.timeline().makespan + 0.5)))));

    // The operators table and the inspector say "measured" for an operator the plan puts on the cpu
    // (and for the cpu row of any operator).
    const int cpu = deviceIndex(*s.table(), "cpu");
    QAbstractItemModel* ops = w.operatorView()->model();
    int onCpu = -1;
    for (int r = 0; r < ops->rowCount(); ++r) {
      const int op = ops->data(ops->index(r, OperatorTableModel::Index), Qt::UserRole).toInt();
      if (s.deviceOf(op) != cpu) {
        QCOMPARE(ops->data(ops->index(r, OperatorTableModel::Source)).toString(), QString("modelled"));
        continue;
      }
      onCpu = op;
      QCOMPARE(ops->data(ops->index(r, OperatorTableModel::Source)).toString(), QString("measured"));
      QCOMPARE(ops->data(ops->index(r, OperatorTableModel::Time), Qt::UserRole).toDouble(), medianFor(op, 1000));
    }
    const int shown = onCpu >= 0 ? onCpu : 0;
    s.setSelection({shown});
    const QString html = inspectorHtml(s, {shown});
    QVERIFY2(html.contains("measured"), qPrintable(html));

    // A refused file: one line naming it, nothing changes (the dialog is off in tests).
    const QString bad = writeText(dir.filePath("broken.json"), "not json");
    const auto table = s.tablePtr();
    QVERIFY(!w.loadProfile(bad));
    QVERIFY2(w.lastError().contains("broken.json"), qPrintable(w.lastError()));
    QVERIFY(s.tablePtr() == table);
    QCOMPARE(w.profileList()->count(), 1);

    QVERIFY(w.removeProfile(0));
    QCOMPARE(w.profileList()->count(), 0);
    QCOMPARE(w.costsLabel()->text(), QString("Costs: 0 measured, 0 imported, %1 modelled").arg(n));
    QCOMPARE(s.timeline().makespan, before);
    QVERIFY(!w.grab().isNull());
  }

  void projectsKeepProfiles() {
    QTemporaryDir dir;
    const QString proj = dir.filePath("work.partex");
    const QString file = dir.filePath("profiles/cpu.json");
    double makespan = 0;
    {
      MainWindow w;
      w.setPlatform(QStringLiteral("cpu-gpu-pcie"));
      QVERIFY(openAndWait(w, modelPath()));
      writeProfile(file, makeProfile(*w.session()->model(), {"cpu"}, 1000));
      QVERIFY(w.loadProfile(file));
      QVERIFY(w.importOrtProfile(ortFixture(), QStringLiteral("gpu")));
      makespan = w.session()->timeline().makespan;
      const Status st = w.saveProject(proj);
      QVERIFY2(st, st.message().c_str());
      QVERIFY(!w.session()->modified());
    }
    // Stored like the project's other files: relative when beside or below it.
    QFile f(proj);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject j = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(j.value("profiles").toArray(), QJsonArray{QStringLiteral("profiles/cpu.json")});
    const QJsonArray imports = j.value("ort_imports").toArray();
    QCOMPARE(imports.size(), 1);
    QCOMPARE(imports[0].toObject().value("device").toString(), QString("gpu"));
    QCOMPARE(imports[0].toObject().value("path").toString(), QFileInfo(ortFixture()).canonicalFilePath());
    {
      MainWindow w;
      QVERIFY(openAndWait(w, proj));
      QCOMPARE(w.lastError(), QString());
      Session& s = *w.session();
      QCOMPARE(s.profiles().size(), size_t(2));
      QVERIFY(measuredOn(s, "cpu", 1000));
      QVERIFY(s.costCounts().imported > 0);
      QCOMPARE(s.timeline().makespan, makespan);
      QVERIFY(!s.modified());
      QCOMPARE(w.profileList()->count(), 2);
    }
    // The profile file is gone: the project still opens, with a warning that names it.
    QVERIFY(QFile::remove(file));
    {
      MainWindow w;
      QVERIFY(openAndWait(w, proj));
      QVERIFY2(w.lastError().contains("cpu.json"), qPrintable(w.lastError()));
      Session& s = *w.session();
      QCOMPARE(s.profiles().size(), size_t(1));  // the import is still there
      QCOMPARE(s.costCounts().measured, 0);
      QVERIFY(s.modified());  // saving would drop the missing profile from the project
    }
    // A profile of another model in its place: the same.
    writeProfile(file, makeProfile(*loaded(otherModelPath()), {"cpu"}, 1000));
    {
      MainWindow w;
      QVERIFY(openAndWait(w, proj));
      QVERIFY2(w.lastError().contains("cpu.json") && w.lastError().contains("profile is for model"),
               qPrintable(w.lastError()));
      QCOMPARE(w.session()->profiles().size(), size_t(1));
    }
  }

  void profileOnThisMachine() {
    QTemporaryDir dir;
    MainWindow w;
    w.setPlatform(QStringLiteral("this-machine"));
    QVERIFY(openAndWait(w, modelPath()));
    QVERIFY2(w.profilingUnavailableReason().isEmpty(), qPrintable(w.profilingUnavailableReason()));
    QVERIFY(w.profileAction()->isEnabled());
    const QStringList devices = w.profilableDevices();
    QVERIFY(devices.contains("core0"));
    QSignalSpy finished(&w, &MainWindow::profilingFinished);
    const QString out = dir.filePath("r16.profile.json");
    QVERIFY(w.startProfiling(out, 1, 0));
    QVERIFY(w.busy());
    QVERIFY(!w.profileAction()->isEnabled());
    QVERIFY(finished.wait(300000));
    QVERIFY2(finished.first().first().toBool(), qPrintable(finished.first().at(1).toString()));
    QVERIFY(QFileInfo::exists(out));
    Session& s = *w.session();
    QCOMPARE(s.profiles().size(), size_t(1));
    QCOMPARE(s.profiles()[0].deviceIds().size(), size_t(devices.size()));
    QVERIFY(s.costCounts().measured > 0);
    QVERIFY(w.costsLabel()->text().startsWith(QString("Costs: %1 measured").arg(s.costCounts().measured)));
    QVERIFY(w.profileAction()->isEnabled());
  }
};

QTEST_MAIN(TestGuiProfiles)
#include "tst_gui_profiles.moc"
