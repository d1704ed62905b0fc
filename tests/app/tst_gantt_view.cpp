// The Gantt view: bars where the timeline says, clicks, drop-target rows, zoom, pan and fit,
// preview and reference makespans, tooltips, level of detail, and SVG/PNG export (with a structural
// check of the HEFT paper's chart against tests/data/golden/heft2002.gantt.expected.txt).
#include <QtTest>

#include <QImage>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QWheelEvent>
#include <QXmlStreamReader>

#include <map>

#include "core/fused_fixture.h"
#include "core/plan_fixture.h"
#include "gantt/ganttview.h"
#include "plan/fusedkernels.h"
#include "sim/stream.h"
#include "tst_gantt_fixture.h"

using namespace partex;
using gui::GanttChart;
using gui::GanttView;
using gui::TimeScale;

namespace {

/// A table of `n` back-to-back tasks of 0.01 us on one device: thousands of bars narrower than a
/// pixel, no dependencies.
CostTable denseTable(int n) {
  CostTable t;
  t.name = "dense";
  t.deviceIds = {"cpu"};
  for (int v = 0; v < n; ++v) {
    t.taskNames.push_back("op" + std::to_string(v));
    t.taskTypes.push_back("Relu");
  }
  t.cost.assign(size_t(n), 0.01);
  t.provenance.assign(size_t(n), Provenance::Modelled);
  t.indexEdges();
  return t;
}

Timeline denseTimeline(int n) {
  Timeline tl;
  for (int v = 0; v < n; ++v) tl.tasks.push_back({0, v * 0.01, (v + 1) * 0.01});
  tl.makespan = n * 0.01;
  return tl;
}

/// Sends a vertical wheel step at `pos`.
void wheel(QWidget* w, QPoint pos, int deltaY, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QWheelEvent e(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, deltaY), Qt::NoButton, mods,
                Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}

/// What an exported SVG shows, without coordinates (which follow the fonts' metrics through the
/// label column width): every text in drawing order, then the number of rectangles per fill colour.
std::string svgStructure(const QByteArray& svg) {
  QXmlStreamReader xml(svg);
  std::vector<QString> fills{QStringLiteral("black")};
  std::map<QString, int> rects;
  std::string out;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement()) {
      const auto attrs = xml.attributes();
      const QString fill = attrs.hasAttribute("fill") ? attrs.value("fill").toString() : fills.back();
      if (xml.name() == QLatin1String("g")) {
        fills.push_back(fill);
      } else if (xml.name() == QLatin1String("rect")) {
        ++rects[fill];
      } else if (xml.name() == QLatin1String("text")) {
        out += "text " + xml.readElementText().simplified().toStdString() + "\n";
      }
    } else if (xml.isEndElement() && xml.name() == QLatin1String("g") && fills.size() > 1) {
      fills.pop_back();
    }
  }
  if (xml.hasError()) return "XML error: " + xml.errorString().toStdString() + "\n";
  for (const auto& [fill, n] : rects) out += "rect " + fill.toStdString() + " x" + std::to_string(n) + "\n";
  return out;
}

}  // namespace

class TestGanttView : public QObject {
  Q_OBJECT
 private:
  test::GanttProblem heft_;

 private slots:
  void initTestCase() {
    heft_ = test::heft2002();
    QVERIFY2(heft_.error.empty(), heft_.error.c_str());
    QCOMPARE(heft_.timeline.makespan, 80.0);  // the paper's HEFT schedule
  }

  void drawsBarsInDeviceColours() {
    GanttView v;
    v.resize(1000, 300);
    const auto colors = test::colorsFor(heft_.table);
    v.setTimeline(&heft_.table, heft_.timeline, colors);
    QImage img(v.size(), QImage::Format_ARGB32);
    v.render(&img);
    QVERIFY(v.lastMarkCount() >= heft_.table.numTasks());
    for (int t = 0; t < heft_.table.numTasks(); ++t) {
      const QRectF r = v.taskRect(t);
      QVERIFY(!r.isEmpty());
      // Sample inside the bar, off its label text.
      const QPoint probe(int(r.left() + 2), int(r.top() + r.height() * 0.25));
      const QColor want = colors[size_t(heft_.timeline.tasks[size_t(t)].device)];
      QCOMPARE(img.pixelColor(probe).rgb(), want.rgb());
    }
  }

  /// A stream of inferences (issue 29, item 5): the unrolled timeline with every other inference
  /// lighter and hatched, the period in the header and between two marks, the bottleneck's row named.
  void streamTellsInferencesApart() {
    StreamOptions so;
    so.keepTimeline = true;
    auto r = simulateStream(heft_.table, heft_.plan, so);
    QVERIFY2(r.isOk(), r.message().c_str());
    const CostTable unrolled = unrollStream(heft_.table, r->inferences, r->inFlight);
    const int n = heft_.table.numTasks();
    QCOMPARE(unrolled.numTasks(), n * r->inferences);
    GanttView v;
    v.resize(1600, 300);
    const auto colors = test::colorsFor(heft_.table);
    v.setTimeline(&unrolled, r->timeline, colors);
    GanttChart::StreamMarks m;
    m.tasksPerInference = n;
    m.inferences = r->inferences;
    m.periodUs = r->periodUs;
    m.latencyUs = r->latencyUs;
    m.bottleneckDevice = r->bottleneck;
    m.periodStartUs = r->end[static_cast<size_t>(r->inferences / 2)] - r->periodUs;
    v.setStream(m);
    QCOMPARE(v.chart().inferenceOf(n + 3), 1);
    QCOMPARE(v.chart().inferenceOf(3), 0);
    QVERIFY2(v.makespanText().contains(QStringLiteral("period ") + TimeScale::formatDuration(r->periodUs)),
             qPrintable(v.makespanText()));
    QVERIFY(r->bottleneck >= 0);
    int named = 0;
    for (const auto& row : v.rows())
      if (row.label.endsWith(QStringLiteral("(bottleneck)"))) {
        ++named;
        QCOMPARE(row.device, r->bottleneck);
      }
    QCOMPARE(named, 1);
    QImage img(v.size(), QImage::Format_ARGB32);
    v.render(&img);
    // Every task of inferences 0 and 1: inference 0 in its device's colour, inference 1 never in it
    // (lighter, and hatched darker).
    int checked = 0;
    for (int t = 0; t < n; ++t) {
      const QRectF r0 = v.taskRect(t), r1 = v.taskRect(t + n);
      if (r0.width() < 8 || r1.width() < 8) continue;
      const QColor want = colors[size_t(heft_.timeline.tasks[size_t(t)].device)];
      QCOMPARE(img.pixelColor(QPoint(int(r0.left() + 2), int(r0.top() + r0.height() * 0.25))).rgb(), want.rgb());
      for (int dx = 2; dx < 8; ++dx)
        QVERIFY(img.pixelColor(QPoint(int(r1.left() + dx), int(r1.top() + r1.height() * 0.25))).rgb() != want.rgb());
      ++checked;
    }
    QVERIFY(checked >= n / 2);
    // A plain timeline again: no stream marks.
    v.setTimeline(&heft_.table, heft_.timeline, colors);
    QCOMPARE(v.chart().stream().tasksPerInference, 0);
    QVERIFY(!v.makespanText().contains(QStringLiteral("period")));
  }

  void clickEmitsTaskAndRowsAreDropTargets() {
    GanttView v;
    v.resize(1000, 300);
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QSignalSpy spy(&v, &GanttView::taskClicked);
    const int task = 4;
    const QPoint c = v.taskRect(task).center().toPoint();
    QTest::mouseClick(&v, Qt::LeftButton, Qt::ControlModifier, c);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.first().at(0).toInt(), task);
    QCOMPARE(spy.first().at(1).value<Qt::KeyboardModifiers>(), Qt::KeyboardModifiers(Qt::ControlModifier));
    QCOMPARE(v.deviceAt(v.mapToGlobal(c)), heft_.timeline.tasks[size_t(task)].device);
    QCOMPARE(v.deviceAt(v.mapToGlobal(QPoint(5, 5))), -1);        // header
    QCOMPARE(v.deviceAt(v.mapToGlobal(QPoint(-20, c.y()))), -1);  // outside
    // A link row (device pair) is no drop target.
    const int linkRowY = int(v.taskRect(task).center().y() +
                             (3 - heft_.timeline.tasks[size_t(task)].device) * v.taskRect(task).height());
    if (v.rows().size() > 3) QCOMPARE(v.deviceAt(v.mapToGlobal(QPoint(c.x(), linkRowY))), -1);
    // The tooltip names the operator, its device, times and where its cost comes from.
    const QString tip = v.toolTipAt(c);
    QVERIFY(tip.contains(QString::fromStdString(heft_.table.taskNames[size_t(task)])));
    QVERIFY(
        tip.contains(QString::fromStdString(heft_.table.deviceIds[size_t(heft_.timeline.tasks[size_t(task)].device)])));
    QVERIFY(tip.contains("start"));
    QVERIFY(tip.contains("duration"));
    const size_t ci =
        size_t(task) * size_t(heft_.table.numDevices()) + size_t(heft_.timeline.tasks[size_t(task)].device);
    QVERIFY(tip.contains(provenanceName(heft_.table.provenance[ci])));
  }

  void zoomPanAndFit() {
    GanttView v;
    v.resize(1000, 300);
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    const auto fitted = v.timeScale();
    QVERIFY(fitted.xAt(80) < 1000);
    QSignalSpy spy(&v, &GanttView::timeScaleChanged);
    const QPoint at(600, 150);
    const double tUnder = v.timeScale().timeAt(at.x() - v.labelWidth());
    wheel(&v, at, 120);
    QVERIFY(v.timeScale().usPerPixel < fitted.usPerPixel);
    QVERIFY(qAbs(v.timeScale().timeAt(at.x() - v.labelWidth()) - tUnder) < 1e-6);  // zoom about the cursor
    QVERIFY(spy.count() >= 1);
    // Drag the background (the axis area has no bars) to pan.
    const double origin = v.timeScale().originUs;
    QTest::mousePress(&v, Qt::LeftButton, {}, QPoint(500, 50));
    QTest::mouseMove(&v, QPoint(400, 50));
    QTest::mouseRelease(&v, Qt::LeftButton, {}, QPoint(400, 50));
    QVERIFY(qAbs(v.timeScale().originUs - (origin + 100 * v.timeScale().usPerPixel)) < 1e-6);
    // A new timeline keeps the user's zoom; fit() restores automatic fitting.
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    QVERIFY(v.timeScale().usPerPixel < fitted.usPerPixel);
    QTest::mouseDClick(&v, Qt::LeftButton, {}, QPoint(500, 50));
    QCOMPARE(v.timeScale().usPerPixel, fitted.usPerPixel);
    QCOMPARE(v.timeScale().originUs, 0.0);
    v.zoomIn();
    v.zoomOut();
    QVERIFY(qAbs(v.timeScale().usPerPixel - fitted.usPerPixel) < 1e-9);
  }

  void previewAndReferenceMakespans() {
    GanttView v;
    v.resize(1000, 300);
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    QVERIFY(v.makespanText().contains("80.000 us"));
    v.setReferenceMakespan(100);
    v.setReferenceLabel("CPOP plan");
    QVERIFY2(v.makespanText().contains(QString::fromUtf8("(\u221220.0% vs CPOP plan)")), qPrintable(v.makespanText()));
    v.setReferenceMakespan(0);
    QVERIFY(!v.makespanText().contains("vs"));
    // A preview: its bars are the ones hit and its makespan is shown against the current one.
    Timeline slower = heft_.timeline;
    for (auto& s : slower.tasks) {
      s.start *= 1.1;
      s.end *= 1.1;
    }
    slower.makespan = 88;
    v.setPreview(&slower);
    QCOMPARE(v.shownMakespan(), 88.0);
    QVERIFY2(v.makespanText().contains("+10.0% vs current"), qPrintable(v.makespanText()));
    QCOMPARE(v.taskRect(9).left(), v.labelWidth() + v.timeScale().xAt(slower.tasks[9].start));
    QImage img(v.size(), QImage::Format_ARGB32);
    v.render(&img);  // ghosts and preview both drawn
    QVERIFY(v.lastMarkCount() >= 2 * heft_.table.numTasks());
    v.setPreview(nullptr);
    QCOMPARE(v.shownMakespan(), 80.0);
  }

  void selectionIsOutlined() {
    GanttView v;
    v.resize(1000, 300);
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    QImage before(v.size(), QImage::Format_ARGB32);
    v.render(&before);
    v.setSelectedTasks({0, 99, -1});  // out-of-range ids are ignored
    QImage after(v.size(), QImage::Format_ARGB32);
    v.render(&after);
    QVERIFY(before != after);
    const QRectF r = v.taskRect(0);
    QVERIFY(after.pixelColor(QPoint(int(r.left()) + 1, int(r.center().y()))).lightness() < 80);
  }

  void mergesBarsNarrowerThanAPixel() {
    const int n = 20000;
    CostTable t = denseTable(n);
    Timeline tl = denseTimeline(n);
    GanttView v;
    v.resize(900, 200);
    v.setTimeline(&t, tl, {QColor("#0072B2")});
    QImage img(v.size(), QImage::Format_ARGB32);
    v.render(&img);
    // 20,000 bars 0.05 px wide: at most one mark per pixel column of the plot.
    QVERIFY2(v.lastMarkCount() <= 900, qPrintable(QString::number(v.lastMarkCount())));
    QVERIFY(v.lastMarkCount() >= 1);
    // Zoomed in, only the visible bars are drawn.
    TimeScale s;
    s.originUs = 100;
    s.usPerPixel = 0.001;
    v.setTimeScale(s);
    v.render(&img);
    QVERIFY(v.lastMarkCount() > 10);
    QVERIFY(v.lastMarkCount() < 200);
    QCOMPARE(v.taskAt(QPoint(v.labelWidth() + 5, int(v.taskRect(10000).center().y()))), 10000);
  }

  void fusedKernelIsOneBarWithItsMembersInTheTooltip() {
    auto p = test::fusedProblem();
    QVERIFY2(p.error.empty(), p.error.c_str());
    const Plan plan = test::placed(p.table, 0);
    auto tl = simulate(p.table, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto ks = fusedKernels(p.graph, p.table, plan.device, &*tl);
    QVERIFY(!ks.empty());
    GanttView v;
    v.resize(1400, 300);
    v.setTimeline(&p.table, *tl, test::colorsFor(p.table), ks);
    int members = 0;
    for (const auto& k : ks) members += static_cast<int>(k.ops.size());
    QCOMPARE(v.bars().perRow[0].size(), size_t(p.table.numTasks() - members + static_cast<int>(ks.size())));
    // Zoom onto the first kernel (conv1 + bn1 + relu): one bar from conv1's start to relu's end.
    TimeScale s;
    s.fit(ks[0].startUs, ks[0].endUs + (ks[0].endUs - ks[0].startUs) * 0.1, 1000);
    v.setTimeScale(s);
    const TaskId conv1 = test::taskNamed(p.table, "conv1"), bn1 = test::taskNamed(p.table, "bn1"),
                 relu = test::taskNamed(p.table, "relu");
    const QRectF r = v.taskRect(conv1);
    QVERIFY(!r.isEmpty());
    QCOMPARE(v.taskRect(bn1), r);  // a member is drawn as its kernel's bar
    QCOMPARE(v.taskRect(relu), r);
    QVERIFY(r.width() > 100);
    const QPoint c = r.center().toPoint();
    QCOMPARE(v.taskAt(c), conv1);  // the bar stands for the anchor
    const QString tip = v.toolTipAt(c);
    QVERIFY2(tip.contains("fused kernel: conv1 + bn1 + relu"), qPrintable(tip));
    QVERIFY2(tip.contains("Conv + BatchNormalization + Relu"), qPrintable(tip));
    QVERIFY2(tip.contains("core0"), qPrintable(tip));
    // Without kernels, the same spot is one of three bars.
    v.setTimeline(&p.table, *tl, test::colorsFor(p.table));
    v.setTimeScale(s);
    QCOMPARE(v.bars().perRow[0].size(), size_t(p.table.numTasks()));
    QVERIFY(!v.toolTipAt(c).contains("fused kernel"));
    QVERIFY(v.taskRect(relu) != v.taskRect(conv1));
    // A preview draws its own kernels: relu moved to core1 leaves conv1 + bn1 one bar on core0.
    v.setTimeline(&p.table, *tl, test::colorsFor(p.table), ks);
    const Plan moved = test::placed(p.table, 0, {"relu"}, 1);
    auto ptl = simulate(p.table, moved);
    QVERIFY2(ptl.isOk(), ptl.message().c_str());
    const auto pks = fusedKernels(p.graph, p.table, *ptl);
    v.setPreview(&*ptl, pks);
    QCOMPARE(v.bars().kernels.size(), pks.size());
    QCOMPARE(v.bars().kernelOf[size_t(relu)], -1);
    QVERIFY(v.bars().kernelOf[size_t(bn1)] >= 0);
  }

  void heftChartMatchesGoldenStructure() {
    // The HEFT paper's schedule: texts (title, makespan, ticks, rows, operator names) and bars per
    // colour against tests/data/golden/heft2002.gantt.expected.txt (PARTEX_UPDATE_GOLDEN=1 rewrites it).
    GanttView v;
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    v.setTitle("HEFT");
    v.setReferenceLabel("CPOP plan");
    v.setReferenceMakespan(86);
    const QString path = QString::fromStdString(test::tempDir()) + "/heft2002.svg";
    QVERIFY(v.saveImage(path).isOk());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const std::string structure = svgStructure(f.readAll());
    QVERIFY(structure.find("XML error") == std::string::npos);
    PARTEX_COMPARE_GOLDEN("heft2002.gantt.expected.txt", structure);
  }

  void exportsSvgAndPngAtomically() {
    const QString dir = QString::fromStdString(test::tempDir());
    GanttView v;
    v.setTimeline(&heft_.table, heft_.timeline, test::colorsFor(heft_.table));
    v.setExportWidth(1200);
    QVERIFY(v.saveImage(dir + "/g.png").isOk());
    QImage png(dir + "/g.png");
    QCOMPARE(png.size(), v.exportSize());
    QCOMPARE(png.width(), 1200);
    QVERIFY(v.saveImage(dir + "/g.SVG").isOk());
    QFile svg(dir + "/g.SVG");
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray text = svg.readAll();
    QVERIFY(text.contains("<svg"));
    for (const auto& d : heft_.table.deviceIds) QVERIFY(text.contains((">" + d + "<").c_str()));
    // Bad requests fail with a message and leave nothing behind.
    auto st = v.saveImage(dir + "/g.bmp");
    QVERIFY(!st.isOk());
    QVERIFY(QString::fromStdString(st.message()).contains("g.bmp"));
    QVERIFY(!QFile::exists(dir + "/g.bmp"));
    st = v.saveImage(dir + "/missing/dir/g.png");
    QVERIFY(!st.isOk());
    QVERIFY(!QFile::exists(dir + "/missing/dir/g.png"));
    GanttView empty;
    QVERIFY(!empty.saveImage(dir + "/empty.png").isOk());
    QVERIFY(!QFile::exists(dir + "/empty.png"));
  }
};

QTEST_MAIN(TestGanttView)
#include "tst_gantt_view.moc"
