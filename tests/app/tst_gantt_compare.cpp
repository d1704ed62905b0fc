// The compare view: two plans of the HEFT paper's graph on one time scale, the operators placed
// differently listed and outlined in both charts.
#include <QtTest>

#include <QSignalSpy>
#include <QTreeWidget>
#include <QWheelEvent>

#include "gantt/compareview.h"
#include "gantt/ganttview.h"
#include "tst_gantt_fixture.h"

using namespace partex;

class TestGanttCompare : public QObject {
  Q_OBJECT
 private slots:
  void heftAgainstCpop() {
    auto a = test::heft2002("heft");
    auto b = test::heft2002("cpop");
    QVERIFY2(a.error.empty(), a.error.c_str());
    QVERIFY2(b.error.empty(), b.error.c_str());
    gui::CompareView cv;
    cv.resize(1200, 700);
    cv.setPlans(&a.table, test::colorsFor(a.table), "HEFT", a.plan, a.timeline, "CPOP", b.plan, b.timeline);
    cv.show();
    QVERIFY(QTest::qWaitForWindowExposed(&cv));

    // The list holds exactly the operators on different devices.
    QList<int> expected;
    for (int v = 0; v < a.table.numTasks(); ++v)
      if (a.plan.device[size_t(v)] != b.plan.device[size_t(v)]) expected.push_back(v);
    QVERIFY(!expected.isEmpty());
    QCOMPARE(cv.differentTasks(), expected);
    QCOMPARE(cv.differenceList()->topLevelItemCount(), expected.size());
    auto* first = cv.differenceList()->topLevelItem(0);
    QCOMPARE(first->text(0), QString::fromStdString(a.table.taskNames[size_t(expected[0])]));
    QCOMPARE(first->text(1), QString::fromStdString(a.table.deviceIds[size_t(a.plan.device[size_t(expected[0])])]));
    QCOMPARE(first->text(2), QString::fromStdString(b.table.deviceIds[size_t(b.plan.device[size_t(expected[0])])]));

    // B is shown against A: CPOP 86 against HEFT 80.
    QVERIFY2(cv.viewB()->makespanText().contains("+7.5% vs HEFT"), qPrintable(cv.viewB()->makespanText()));
    // One time scale: equal times at equal x, through zoom and pan in either chart.
    auto sameScale = [&] {
      return cv.viewA()->timeScale().originUs == cv.viewB()->timeScale().originUs &&
             cv.viewA()->timeScale().usPerPixel == cv.viewB()->timeScale().usPerPixel &&
             cv.viewA()->labelWidth() == cv.viewB()->labelWidth() && cv.viewA()->width() == cv.viewB()->width();
    };
    QVERIFY(sameScale());
    QVERIFY(cv.viewA()->timeScale().xAt(86) < cv.viewA()->width() - cv.viewA()->labelWidth());  // both fit
    gui::GanttView* bv = cv.viewB();
    const QPoint at(bv->width() / 2, bv->height() / 2);
    QWheelEvent e(QPointF(at), QPointF(bv->mapToGlobal(at)), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(bv, &e);
    QVERIFY(sameScale());
    cv.viewA()->zoomOut();
    QVERIFY(sameScale());

    // Choosing an entry selects that operator in both charts and reports it.
    QSignalSpy spy(&cv, &gui::CompareView::taskClicked);
    cv.differenceList()->setCurrentItem(first);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.first().at(0).toInt(), expected[0]);

    // Clearing empties everything.
    cv.setPlans(nullptr, {}, "A", {}, {}, "B", {}, {});
    QVERIFY(cv.differentTasks().isEmpty());
    QCOMPARE(cv.differenceList()->topLevelItemCount(), 0);
  }
};

QTEST_MAIN(TestGanttCompare)
#include "tst_gantt_compare.moc"
