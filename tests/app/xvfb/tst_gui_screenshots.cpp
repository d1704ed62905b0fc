// The main window as a person sees it, under Xvfb (a real X server; xvfb-run starts it), at three
// screen sizes: 1366x768, 1600x1000 and 1920x1080. At each size the default layout opens Inception v1
// on mobile-soc (the shared model, else the generated Inception-style net) and the window is saved as
// PARTEX_SCREENSHOT_DIR/main-WxH.png; at 1600x1000 the graph canvas must take at least 45 % of the
// window, a comparison of ten algorithms must show all ten rows and every column without a scroll bar,
// and a generated Llama-2-7B decode step on desktop-rtx4070, planned by best, must open as 32 layer
// blocks plus the embedding and the head; a workload of two generated models sharing mobile-soc opens
// with its joint schedule (workload-1600x1000.png) (docs/images holds the pictures of the last run).
#include <QtTest>

#include <fstream>

#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTableView>

#include "gantt/ganttview.h"
#include "gen/generator.h"
#include "gguf/ggufwriter.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/llmpanel.h"
#include "gui/mainwindow.h"
#include "mainwindowtestutil.h"
#include "session/session.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

class TestScreenshots : public QObject {
  Q_OBJECT

  QString outDir_;
  QString inception_;

  /// Opens `model` in a fresh default layout of `width` x `height` and waits for the first view.
  bool open(MainWindow& w, const QString& model, const QString& platform, int width, int height) {
    w.setDialogsEnabled(false);
    w.resize(width, height);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return false;
    w.resetLayout();
    w.setPlatform(platform);
    if (!test::openAndWait(w, model)) return false;
    QTest::qWait(300);  // the last paints
    return true;
  }

  void save(MainWindow& w, const QString& name) {
    const QString file = outDir_ + "/" + name;
    QVERIFY2(w.grab().save(file), qPrintable(file));
    qInfo("wrote %s", qPrintable(file));
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("PartexTest");
    QSettings().remove("layout");
    outDir_ = qEnvironmentVariable("PARTEX_SCREENSHOT_DIR", QDir::currentPath() + "/screenshots");
    QVERIFY(QDir().mkpath(outDir_));
    const std::string shared = test::sharedModel("light_inception_v1.onnx");
    if (!shared.empty() && QFileInfo::exists(QString::fromStdString(shared))) {
      inception_ = QString::fromStdString(shared);
    } else {
      const std::string path = test::tempDir() + "/inception.onnx";
      GenSpec spec;
      spec.kind = "inception";
      QVERIFY(generateModelFile(spec, path).isOk());
      inception_ = QString::fromStdString(path);
    }
    qInfo("platform plugin %s, model %s", qPrintable(QGuiApplication::platformName()), qPrintable(inception_));
  }

  void mainWindowAtThreeSizes_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::newRow("1366x768") << 1366 << 768;
    QTest::newRow("1600x1000") << 1600 << 1000;
    QTest::newRow("1920x1080") << 1920 << 1080;
  }

  void mainWindowAtThreeSizes() {
    QFETCH(int, width);
    QFETCH(int, height);
    MainWindow w;
    QVERIFY(open(w, inception_, "mobile-soc", width, height));
    QCOMPARE(w.size(), QSize(width, height));
    const double share = double(w.graphView()->width()) * w.graphView()->height() / (double(width) * height);
    qInfo("%dx%d: canvas %dx%d = %.1f %% of the window, Gantt chart %dx%d", width, height, w.graphView()->width(),
          w.graphView()->height(), share * 100, w.ganttView()->width(), w.ganttView()->height());
    QVERIFY(w.ganttView()->isVisible());
    QVERIFY(w.ganttView()->height() >= 120);
    if (width == 1600) QVERIFY2(share >= 0.45, qPrintable(QString("canvas share %1 %").arg(share * 100)));
    save(w, QString("main-%1x%2.png").arg(width).arg(height));
  }

  void compareShowsEveryRow() {
    MainWindow w;
    QVERIFY(open(w, inception_, "mobile-soc", 1600, 1000));
    const QStringList ten = {"single", "greedy", "heft", "cpop", "peft", "minmin", "maxmin", "sufferage", "etf", "mct"};
    QSignalSpy done(w.session(), &Session::compareFinished);
    w.session()->runCompare(ten, 2.0);
    QVERIFY(done.wait(300000));
    QTest::qWait(300);
    QTableView* v = w.compareView();
    QCOMPARE(v->model()->rowCount(), 10);
    QVERIFY(v->isVisible());
    // Every row and every column in view, no scroll bar.
    const int lastBottom = v->rowViewportPosition(9) + v->rowHeight(9);
    qInfo("compare table %dx%d, last row ends at %d", v->viewport()->width(), v->viewport()->height(), lastBottom);
    QVERIFY2(lastBottom <= v->viewport()->height(),
             qPrintable(QString("row 10 ends at %1 of %2").arg(lastBottom).arg(v->viewport()->height())));
    QVERIFY(!v->verticalScrollBar()->isVisible());
    QVERIFY(!v->horizontalScrollBar()->isVisible());
    // Sortable: by makespan, ascending.
    v->sortByColumn(1, Qt::AscendingOrder);
    for (int r = 1; r < 10; ++r)
      QVERIFY(v->model()->index(r - 1, 1).data(Qt::UserRole).toDouble() <=
              v->model()->index(r, 1).data(Qt::UserRole).toDouble());
    save(w, "compare-1600x1000.png");
  }

  void llama7bOpensAsLayers() {
    const std::string path = test::tempDir() + "/llama2-7b-decode.onnx";
    GenSpec spec;
    spec.kind = "llama";
    spec.phase = "decode";
    spec.dtype = "float16";
    spec.layers = 32;
    spec.hidden = 4096;
    spec.heads = 32;
    spec.seqLen = 512;
    QVERIFY(generateModelFile(spec, path).isOk());
    MainWindow w;
    QVERIFY(open(w, QString::fromStdString(path), "desktop-rtx4070", 1600, 1000));
    GraphScene* sc = w.graphView()->graphScene();
    QVERIFY(sc->grouped());
    QCOMPARE(sc->grouping().size(), 34);
    QCOMPARE(sc->grouping().names.front(), std::string("embedding"));
    QCOMPARE(sc->grouping().names.back(), std::string("head"));
    for (int l = 0; l < 32; ++l) QCOMPARE(sc->grouping().names[size_t(l + 1)], "layers." + std::to_string(l));
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), 34);
    // As `partex --algo best`: the scheduler box names best.
    QSignalSpy finished(w.session(), &Session::schedulerFinished);
    w.session()->runScheduler("best", false, 5.0);
    QVERIFY(finished.wait(300000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 120000);
    QCOMPARE(w.algorithmBox()->currentData().toString(), QString("best"));
    QTest::qWait(300);
    save(w, "llama2-7b-1600x1000.png");
  }

  /// A llama.cpp user's GGUF file (gpt-oss-20b's shape, MXFP4 experts, written header-only by the
  /// project's writer) on desktop-rtx4070 (12 GiB): the LLM tab with the fastest placement, the rules and
  /// the arguments; the graph by layer, coloured by the placement; the memory view on each device.
  void llmTab() {
    GenSpec spec;
    QVERIFY(applyDecoderPreset("gpt-oss-20b", spec));
    const std::string path = test::tempDir() + "/gpt-oss-20b.gguf";
    const Status st = ggufForSpec(spec, "gpt-oss", QuantType::BF16, QuantType::MXFP4).write(path);
    QVERIFY2(st, st.message().c_str());
    MainWindow w;
    w.llmPanel()->setTimeLimit(5);
    QSignalSpy done(w.llmPanel(), &LlmPanel::finished);
    QVERIFY(open(w, QString::fromStdString(path) + "?phase=decode&seq=2048", "desktop-rtx4070", 1600, 1000));
    if (done.isEmpty()) QVERIFY(done.wait(300000));
    QVERIFY2(done.last().first().toBool(), qPrintable(w.llmPanel()->statusLabel()->text()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.busy(), 120000);
    QVERIFY(w.dock("llmDock")->isVisible());
    QVERIFY(!w.memoryFolded());
    QVERIFY(w.llmPanel()->argsEdit()->text().startsWith("-ngl "));
    QTest::qWait(300);
    save(w, "llm-1600x1000.png");
  }

  /// A workload of two models sharing mobile-soc (issue 29): a detector at 30 frames per second and a
  /// recogniser twice per detection, whose tight deadline some requests miss.
  void workload() {
    const std::string file = test::tempDir() + "/camera-workload.json";
    std::ofstream(file) << R"({"format": "partex-workload", "version": 1, "name": "camera", "horizon_ms": 200,
      "models": [{"name": "det", "model": "gen:mobilenetv2", "rate": 30, "deadline_ms": 33},
                 {"name": "rec", "model": "gen:resnet18", "trigger": {"model": "det", "per_inference": 2}, "deadline_ms": 7}]})";
    MainWindow w;
    QVERIFY(open(w, QString::fromStdString(file), "mobile-soc", 1600, 1000));
    QVERIFY(w.workload());
    QVERIFY(w.ganttView()->isVisible());
    qInfo("%s", qPrintable(w.ganttView()->makespanText()));
    save(w, "workload-1600x1000.png");
  }
};

QTEST_MAIN(TestScreenshots)
#include "tst_gui_screenshots.moc"
