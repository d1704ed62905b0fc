// The partex executable's command line without a display: --help and --version print and exit 0
// with no QT_QPA_PLATFORM, DISPLAY or WAYLAND_DISPLAY (no windowing plugin is loaded); opening a
// window without a display is refused with one line that names the way out, exit code 2.
#include <QtTest>

#include <QProcess>
#include <QProcessEnvironment>

class TestGuiCli : public QObject {
  Q_OBJECT

  /// Runs partex with `args` and no display at all; false when it did not finish in 60 s.
  static bool runHeadless(const QStringList& args, int* code, QString* out, QString* err) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(QString::fromLatin1(v));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QString::fromLocal8Bit(qgetenv("PARTEX_GUI")), args);
    if (!p.waitForFinished(60000)) {
      p.kill();
      p.waitForFinished();
      return false;
    }
    *code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    *out = QString::fromLocal8Bit(p.readAllStandardOutput());
    *err = QString::fromLocal8Bit(p.readAllStandardError());
    return true;
  }

 private slots:
  void initTestCase() {
    if (qgetenv("PARTEX_GUI").isEmpty()) QFAIL("PARTEX_GUI (the partex executable) is not set: run it through ctest");
  }

  void helpPrintsWithoutDisplay() {
    int code = -1;
    QString out, err;
    QVERIFY(runHeadless({"--help"}, &code, &out, &err));
    QCOMPARE(code, 0);
    QVERIFY2(out.contains("--algo"), qPrintable(out + err));
    QVERIFY2(out.contains("--screenshot"), qPrintable(out + err));
    QVERIFY2(!err.contains("platform plugin"), qPrintable(err));
  }

  void helpAfterOtherOptions() {
    int code = -1;
    QString out, err;
    QVERIFY(runHeadless({"--platform", "mobile-soc", "model.onnx", "-h"}, &code, &out, &err));
    QCOMPARE(code, 0);
    QVERIFY2(out.contains("--platform"), qPrintable(out + err));
  }

  void versionPrintsWithoutDisplay() {
    int code = -1;
    QString out, err;
    QVERIFY(runHeadless({"--version"}, &code, &out, &err));
    QCOMPARE(code, 0);
    QVERIFY2(out.contains("0.1.0"), qPrintable(out + err));
  }

  void noDisplayIsOneLineWithTheWayOut() {
    int code = -1;
    QString out, err;
    QVERIFY(runHeadless({"/nonexistent/model.onnx"}, &code, &out, &err));
    QCOMPARE(code, 2);
    const QStringList lines = err.trimmed().split('\n');
    QCOMPARE(lines.size(), 1);
    QVERIFY2(lines.first().contains("QT_QPA_PLATFORM=offscreen"), qPrintable(err));
    QVERIFY2(lines.first().startsWith("partex: "), qPrintable(err));
  }
};

QTEST_GUILESS_MAIN(TestGuiCli)
#include "tst_gui_cli.moc"
