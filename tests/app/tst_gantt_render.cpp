// partex-cli render end to end: the Gantt chart and the coloured graph of a generated model as SVG
// and PNG, a task graph with a plan file and a reference, and bad input (exit 2, one line, no file).
#include <QtTest>

#include <QImage>
#include <QProcess>

#include "testutil.h"

class TestGanttRender : public QObject {
  Q_OBJECT
 private:
  using Run = partex::test::CliRun;
  static Run run(const QStringList& args) { return partex::test::runCli(args, 300000); }
  QString dir_;
  QString model_;

  static QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }

 private slots:
  void initTestCase() {
    if (!QFileInfo::exists(partex::test::cliPath())) QSKIP("partex-cli is not built");
    dir_ = QString::fromStdString(partex::test::tempDir());
    model_ = dir_ + "/mnv2.onnx";
    QCOMPARE(run({"generate", "mobilenetv2", "-o", model_}).code, 0);
  }

  void ganttAndGraphOfGeneratedModel() {
    const QString svg = dir_ + "/gantt.svg", png = dir_ + "/gantt.png";
    const QString gsvg = dir_ + "/graph.svg", gpng = dir_ + "/graph.png";
    Run r = run({"render", model_, "--platform", "cpu-gpu-pcie", "--algo", "heft", "--gantt", svg, "--graph", gsvg});
    QVERIFY2(r.code == 0, r.err.constData());
    const QByteArray s = readAll(svg);
    QVERIFY(s.startsWith("<?xml") || s.contains("<svg"));
    for (const char* d : {">cpu<", ">gpu<", ">cpu-&gt;gpu<"}) QVERIFY2(s.contains(d), d);
    QVERIFY(s.contains("HEFT"));
    const QByteArray g = readAll(gsvg);
    QVERIFY(g.contains("<svg"));
    QVERIFY(g.contains("Conv"));
    // The preset's own cpu colour in both pictures.
    QVERIFY(s.contains("#4e79a7"));
    QVERIFY(g.contains("#4e79a7"));

    r = run({"render", model_, "--platform", "cpu-gpu-pcie", "--gantt", png, "--width", "1400", "--graph", gpng});
    QVERIFY2(r.code == 0, r.err.constData());
    QImage img(png);
    QVERIFY(!img.isNull());
    QCOMPARE(img.width(), 1400);
    QVERIFY(img.height() >= 100 && img.height() <= 600);
    QImage graph(gpng);
    QVERIFY(!graph.isNull());
    QVERIFY(graph.width() > 100);
  }

  void taskGraphWithPlanFileAndReference() {
    const QString tg = QString::fromStdString(partex::test::testDataDir()) + "/taskgraphs/heft2002.json";
    const QString plan = dir_ + "/cpop.plan.json";
    QCOMPARE(run({"schedule", tg, "--algo", "cpop", "-o", plan}).code, 0);
    const QString svg = dir_ + "/cpop.svg";
    Run r = run({"render", tg, "--plan", plan, "--reference", "heft", "--gantt", svg});
    QVERIFY2(r.code == 0, r.err.constData());
    const QByteArray s = readAll(svg);
    // CPOP's makespan on the paper's graph is 86, HEFT's 80: +7.5% against the HEFT plan.
    QVERIFY2(s.contains("86.000 us (+7.5% vs HEFT plan)"), s.left(2000).constData());
    for (const char* d : {">P1<", ">P2<", ">P3<"}) QVERIFY2(s.contains(d), d);
  }

  void badInputExitsTwoWithoutFiles() {
    const QString out = dir_ + "/never.svg";
    const QString bad = dir_ + "/bad.onnx";
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a model");
    f.close();
    struct Case {
      QStringList args;
      const char* mention;
    };
    const QList<Case> cases = {
        {{"render", bad, "--platform", "cpu-npu", "--gantt", out}, "bad.onnx"},
        {{"render", dir_ + "/absent.onnx", "--platform", "cpu-npu", "--gantt", out}, "absent.onnx"},
        {{"render", model_, "--platform", "no-such-platform", "--gantt", out}, "no-such-platform"},
        {{"render", model_, "--platform", "cpu-npu", "--algo", "nope", "--gantt", out}, "nope"},
        {{"render", model_, "--platform", "cpu-npu", "--plan", dir_ + "/absent.plan.json", "--gantt", out},
         "absent.plan.json"},
        {{"render", model_, "--platform", "cpu-npu", "--gantt", dir_ + "/never.bmp"}, "never.bmp"},
        {{"render", model_, "--platform", "cpu-npu"}, "nothing to draw"},
        {{"render", model_, "--platform", "cpu-npu", "--gantt", dir_ + "/no/such/dir/g.svg"}, "g.svg"},
    };
    for (const auto& c : cases) {
      Run r = run(c.args);
      QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(r.code)));
      const QByteArray err = r.err.trimmed();
      QVERIFY2(!err.contains('\n'), err.constData());
      QVERIFY2(err.contains(c.mention), err.constData());
      QVERIFY(!QFile::exists(out));
      QVERIFY(!QFile::exists(dir_ + "/never.bmp"));
    }
  }
};

QTEST_GUILESS_MAIN(TestGanttRender)
#include "tst_gantt_render.moc"
