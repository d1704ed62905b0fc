// The memory view under the Gantt chart: a step at time t is drawn at the Gantt's x for t (at any
// zoom and pan, which it follows), the capacity line's y, the over-capacity mark present exactly
// when a device is over (in the geometry and in the painted pixels); the inspector's weight bytes
// and headroom; and the platform editor's capacity column taking effect at once (re-scheduled
// within the new capacity, or, when nothing fits, flagged over capacity, never shown as fine).
#include <QtTest>

#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <set>

#include "gantt/ganttview.h"
#include "gantt/memoryview.h"
#include "gen/generator.h"
#include "gui/inspector.h"
#include "gui/mainwindow.h"
#include "gui/platformeditor.h"
#include "mainwindowtestutil.h"
#include "session/session.h"
#include "tst_gantt_fixture.h"

using namespace partex;
using namespace partex::gui;

namespace {

const QColor kRed(0xC0, 0x39, 0x2B);

/// Three devices: 0 goes over its 100-byte capacity between t=20 and t=30; 1 has no capacity;
/// 2 stays within its capacity.
std::vector<DeviceMemory> handMade(bool over0 = true) {
  std::vector<DeviceMemory> m(3);
  m[0].capacity = 100;
  m[0].weights = 40;
  m[0].steps = {{0, 40}, {10, 80}, {20, over0 ? 120 : 100}, {30, 60}, {50, 60}};
  m[0].peak = over0 ? 120 : 100;
  m[0].over = over0;
  m[1].weights = 10;
  m[1].steps = {{0, 10}, {25, 30}, {50, 30}};
  m[1].peak = 30;
  m[2].capacity = 200;
  m[2].steps = {{0, 0}, {5, 90}, {45, 20}, {50, 20}};
  m[2].peak = 90;
  return m;
}

/// Pixels near the over-capacity red inside `r` of `img`.
int redPixels(const QImage& img, const QRect& r) {
  int n = 0;
  for (int y = std::max(0, r.top()); y <= std::min(img.height() - 1, r.bottom()); ++y)
    for (int x = std::max(0, r.left()); x <= std::min(img.width() - 1, r.right()); ++x) {
      const QColor c = img.pixelColor(x, y);
      if (std::abs(c.red() - kRed.red()) < 40 && std::abs(c.green() - kRed.green()) < 40 &&
          std::abs(c.blue() - kRed.blue()) < 40)
        ++n;
    }
  return n;
}

/// A Gantt view and a memory view under it, as the main window stacks them.
struct Stack {
  QWidget top;
  GanttView* gantt = nullptr;
  MemoryView* memory = nullptr;
  test::GanttProblem problem;
  Stack() {
    auto* lay = new QVBoxLayout(&top);
    gantt = new GanttView(&top);
    memory = new MemoryView(&top);
    lay->addWidget(gantt);
    lay->addWidget(memory);
    memory->follow(gantt);
    problem = test::heft2002();  // 3 devices: one memory lane under each device row
    gantt->setTimeline(&problem.table, problem.timeline, {});
    memory->setMemory(handMade(), {"p1", "p2", "p3"}, {QColor(Qt::blue), QColor(Qt::darkGreen), QColor(Qt::gray)});
    top.resize(1000, 600);
    top.show();
  }
  /// The Gantt's x for time `us`, in the memory view's coordinates (through global coordinates, so
  /// that a wrong offset between the two widgets fails).
  double ganttXInMemory(double us) const {
    const double gx = gantt->plotFrame().plotLeft + gantt->timeScale().xAt(us);
    return gx + gantt->mapToGlobal(QPoint(0, 0)).x() - memory->mapToGlobal(QPoint(0, 0)).x();
  }
  /// True when the outline of `lane` has a vertex at x (a step edge drawn there).
  bool outlineHasX(int lane, double x) const {
    const QPolygonF poly = memory->chart().outline(memory->frame(), memory->timeScale(), lane);
    for (const QPointF& p : poly)
      if (std::abs(p.x() - x) < 1e-6) return true;
    return false;
  }
};

}  // namespace

class TstGanttMemory : public QObject {
  Q_OBJECT
 private slots:
  void stepsAreOnTheGanttAxis() {
    Stack s;
    QVERIFY2(s.problem.error.empty(), s.problem.error.c_str());
    QVERIFY(QTest::qWaitForWindowExposed(&s.top));
    auto check = [&](const char* when) {
      const auto f = s.memory->frame();
      // Every step of lane 0 inside the plot is a vertex at the Gantt's x for its time.
      for (auto [t, bytes] : s.memory->chart().memory()[0].steps) {
        const double x = s.ganttXInMemory(t);
        if (x < f.plotLeft || x > f.plotLeft + f.plotWidth) continue;
        QVERIFY2(s.outlineHasX(0, x), qPrintable(QStringLiteral("%1: no step at t=%2 (x=%3)").arg(when).arg(t).arg(x)));
      }
      // ... and the Gantt's first bar of device 0 starts at that same x as a time mapped here.
      const auto& bar = s.gantt->bars().perRow[0].front();
      const double bx = s.ganttXInMemory(bar.start);
      QCOMPARE(f.plotLeft + s.memory->timeScale().xAt(bar.start), bx);
    };
    s.gantt->fit();
    check("fitted");
    // Zoom about a point and pan: the memory view follows without being told.
    s.gantt->zoomIn();
    s.gantt->zoomIn();
    TimeScale sc = s.gantt->timeScale();
    sc.originUs += 7;
    s.gantt->setTimeScale(sc);
    check("zoomed and panned");
    // A wheel over the memory view zooms the Gantt too (one axis).
    const double before = s.gantt->timeScale().usPerPixel;
    const QPoint at(s.memory->frame().plotLeft + 100, 40);
    QWheelEvent e(QPointF(at), QPointF(s.memory->mapToGlobal(at)), QPoint(), QPoint(0, 240), Qt::NoButton,
                  Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(s.memory, &e);
    QVERIFY(s.gantt->timeScale().usPerPixel < before);
    check("wheel over the memory");
    // A wider label column in the Gantt moves the memory's plot with it.
    s.gantt->setMinimumLabelWidth(260);
    QCOMPARE(s.memory->frame().plotLeft, s.gantt->plotFrame().plotLeft);
    check("wider labels");
  }

  void capacityLineAndOverMark() {
    Stack s;
    QVERIFY(QTest::qWaitForWindowExposed(&s.top));
    s.gantt->fit();
    const auto f = s.memory->frame();
    const MemoryChart& c = s.memory->chart();
    // The capacity line is at the capacity's y, inside its lane, above the lane's bottom.
    QCOMPARE(c.capacityY(f, 0), c.yAt(f, 0, 100));
    QVERIFY(c.capacityY(f, 0) > f.lanesTop && c.capacityY(f, 0) < f.lanesTop + f.laneHeight);
    QVERIFY(c.yAt(f, 0, 120) < c.capacityY(f, 0));  // more bytes draw higher
    QVERIFY(c.capacityY(f, 1) < 0);                  // no capacity: no line
    QCOMPARE(c.capacityY(f, 2), c.yAt(f, 2, 200));
    QVERIFY(c.capacityY(f, 2) > f.lanesTop + 2 * f.laneHeight);
    // The over mark: exactly where lane 0 exceeds its capacity, [20, 30]; none elsewhere.
    const auto spans = c.overSpans(f, s.memory->timeScale(), 0);
    QCOMPARE(spans.size(), size_t(1));
    QCOMPARE(spans[0].first, s.ganttXInMemory(20));
    QCOMPARE(spans[0].second, s.ganttXInMemory(30));
    QVERIFY(c.overSpans(f, s.memory->timeScale(), 1).empty());
    QVERIFY(c.overSpans(f, s.memory->timeScale(), 2).empty());
    QVERIFY(c.laneText(0).join(' ').contains("OVER CAPACITY by 0.0 MiB"));
    QVERIFY(!c.laneText(2).join(' ').contains("OVER"));
    QVERIFY(c.anyOver());
    // Painted: red in lane 0 only.
    QImage img = s.memory->grab().toImage();
    auto laneRect = [&](int lane) {
      return QRect(0, int(f.lanesTop + lane * f.laneHeight) + 1, img.width(), int(f.laneHeight) - 2);
    };
    QVERIFY2(redPixels(img, laneRect(0)) > 20, "the over-capacity mark is painted");
    QCOMPARE(redPixels(img, laneRect(1)), 0);
    QCOMPARE(redPixels(img, laneRect(2)), 0);

    // At the capacity exactly: within, no mark anywhere.
    s.memory->setMemory(handMade(false), {"p1", "p2", "p3"}, {QColor(Qt::blue), QColor(Qt::darkGreen), QColor(Qt::gray)});
    QVERIFY(s.memory->chart().overSpans(f, s.memory->timeScale(), 0).empty());
    QVERIFY(!s.memory->chart().anyOver());
    img = s.memory->grab().toImage();
    QCOMPARE(redPixels(img, laneRect(0)), 0);
    // The tooltip reads the step under the pointer.
    const QPoint at(int(s.ganttXInMemory(15)), int(f.lanesTop + f.laneHeight / 2));
    QVERIFY2(s.memory->toolTipAt(at).contains("0.0 MiB resident of 0.0 MiB"), qPrintable(s.memory->toolTipAt(at)));
  }

  void inspectorAndCapacityEdit() {
    const std::string path = test::tempDir() + "/memory_resnet18.onnx";
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY(generateModelFile(spec, path).isOk());
    MainWindow w;
    w.setPlatform("mobile-soc");
    QVERIFY(test::openAndWait(w, QString::fromStdString(path)));
    Session* s = w.session();
    const int npu = s->platform().findDevice("npu");
    QVERIFY(npu >= 0);
    // The memory view shows the session's memory, one lane per device, no capacity on the preset.
    QCOMPARE(w.memoryView()->chart().laneCount(), s->numDevices());
    QCOMPARE(w.memoryView()->chart().memory()[size_t(npu)].peak, s->memory()[size_t(npu)].peak);
    QVERIFY(s->capacityProblem().isEmpty());
    QVERIFY(w.capacityLabel()->isHidden());

    // Inspector: a convolution's weight bytes, counted from the graph (its distinct weight inputs).
    const Graph& g = s->model()->graph;
    int conv = -1;
    for (int v = 0; v < s->numOps() && conv < 0; ++v)
      if (g.nodes[size_t(v)].opType == "Conv") conv = v;
    QVERIFY(conv >= 0);
    int64_t expected = 0;
    std::set<ValueId> seen;
    for (ValueId in : g.nodes[size_t(conv)].inputs)
      if (in >= 0 && g.values[size_t(in)].isWeight && seen.insert(in).second) expected += g.values[size_t(in)].bytes();
    QVERIFY(expected > 0);
    QCOMPARE(s->weightBytesOf(conv), expected);
    QString html = inspectorHtml(*s, {conv});
    QVERIFY2(html.contains("weights " + QString::fromStdString(formatBytes(expected))), qPrintable(html));
    QVERIFY2(html.contains("unlimited"), qPrintable(html));

    // The capacity column: the NPU capped below its weights under the current plan.
    const int64_t npuWeights = s->memory()[size_t(npu)].weights;
    QVERIFY2(npuWeights > 2 * 1024 * 1024, "HEFT puts real weight on the NPU, so the cap forces a change");
    const int capMiB = static_cast<int>(npuWeights / (2 * 1024 * 1024));
    PlatformEditor* ed = w.platformEditor();
    auto* dm = ed->devicesModel();
    QSignalSpy changed(s, &Session::modelChanged);
    QVERIFY(dm->setData(dm->index(npu, PlatformDevicesModel::CapacityMiB), QString::number(capMiB)));
    QVERIFY(changed.wait(60000));
    QVERIFY(QTest::qWaitFor([&w] { return !w.busy(); }, 60000));
    const int64_t cap = int64_t(capMiB) * 1024 * 1024;
    QCOMPARE(s->table()->memCapacity[size_t(npu)], cap);
    // Re-scheduled within it, and the view shows the new line.
    QVERIFY(s->memory()[size_t(npu)].peak <= cap);
    QVERIFY2(s->capacityProblem().isEmpty(), qPrintable(s->capacityProblem()));
    QVERIFY(w.capacityLabel()->isHidden());
    const MemoryView* mv = w.memoryView();
    QCOMPARE(mv->chart().memory()[size_t(npu)].capacity, cap);
    QVERIFY(mv->chart().capacityY(mv->frame(), npu) >= 0);
    QVERIFY(!mv->chart().anyOver());
    // The inspector's headroom is the capacity minus the NPU's peak.
    int onNpu = -1;
    for (int v = 0; v < s->numOps() && onNpu < 0; ++v)
      if (s->deviceOf(v) == npu) onNpu = v;
    QVERIFY(onNpu >= 0);
    html = inspectorHtml(*s, {onNpu});
    const int64_t room = cap - s->memory()[size_t(npu)].peak;
    QCOMPARE(*s->headroomOf(npu), room);
    QVERIFY2(html.contains("headroom on npu: " + QString::fromStdString(formatBytes(room))), qPrintable(html));

    // A move updates the view at once: the weights it brings show on the target's lane.
    const int little = s->platform().findDevice("cpu-little");
    QVERIFY(little >= 0);
    int heavy = -1;
    for (int v = 0; v < s->numOps() && heavy < 0; ++v)
      if (s->deviceOf(v) != little && s->weightBytesOf(v) > 0 && s->canMove({v}, little)) heavy = v;
    QVERIFY(heavy >= 0);
    const int64_t littleBefore = mv->chart().memory()[size_t(little)].weights;
    QVERIFY(s->moveOps({heavy}, little));
    QCOMPARE(mv->chart().memory()[size_t(little)].weights, s->memory()[size_t(little)].weights);
    QVERIFY(mv->chart().memory()[size_t(little)].weights > littleBefore);

    // Every device capped to 1 MiB: nothing fits. The plan of last resort is installed, flagged
    // over capacity in the status bar, the memory view and the inspector, with a warning.
    QSignalSpy warned(s, &Session::loadWarning);
    Platform tiny = s->platform();
    for (auto& d : tiny.devices) d.memCapacityBytes = 1024 * 1024;
    emit ed->platformEdited(tiny);
    QVERIFY(changed.wait(60000));
    QVERIFY(QTest::qWaitFor([&w] { return !w.busy(); }, 60000));
    QCOMPARE(warned.count(), 1);
    QVERIFY2(warned.first().first().toString().contains("HEFT found no plan"), qPrintable(warned.first().first().toString()));
    QVERIFY(!s->capacityProblem().isEmpty());
    QVERIFY(w.capacityLabel()->isVisibleTo(&w));
    QVERIFY(w.capacityLabel()->text().contains("Over capacity"));
    QVERIFY(w.memoryView()->chart().anyOver());
    const int dev = s->deviceOf(conv);
    QVERIFY(s->memory()[size_t(dev)].over);
    QVERIFY(*s->headroomOf(dev) < 0);
    QVERIFY2(inspectorHtml(*s, {conv}).contains("over capacity by"), qPrintable(inspectorHtml(*s, {conv})));
  }
};

QTEST_MAIN(TstGanttMemory)
#include "tst_gantt_memory.moc"
