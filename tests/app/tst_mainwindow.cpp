// The main window opens a model off the GUI thread and lists its operators; a bad file is refused.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QTableView>

#include "gui/mainwindow.h"
#include "onnx/generator.h"
#include "testutil.h"

using namespace partex;

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("PartexTest"); }

  void opensGeneratedModelAndListsOperators() {
    const std::string path = test::tempDir() + "/mnv2.onnx";
    GenSpec spec;
    spec.kind = "mobilenetv2";
    QVERIFY(generateModelFile(spec, path).isOk());
    gui::MainWindow w;
    w.setDialogsEnabled(false);
    QSignalSpy spy(&w, &gui::MainWindow::modelLoaded);
    w.openModel(QString::fromStdString(path));
    QVERIFY(spy.wait(60000));
    QCOMPARE(spy.first().first().toBool(), true);
    QVERIFY(w.model());
    QAbstractItemModelTester tester(w.operatorView()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(w.operatorView()->model()->rowCount(), static_cast<int>(w.model()->graph.nodes.size()));
    QVERIFY(w.operatorView()->model()->rowCount() > 50);
  }

  void badFileIsRefusedWithMessage() {
    const std::string path = test::tempDir() + "/bad.onnx";
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("definitely not protobuf");
    f.close();
    gui::MainWindow w;
    w.setDialogsEnabled(false);
    QSignalSpy spy(&w, &gui::MainWindow::modelLoaded);
    w.openModel(QString::fromStdString(path));
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().first().toBool(), false);
    QVERIFY(w.lastError().contains("bad.onnx"));
    QVERIFY(!w.model());
  }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
