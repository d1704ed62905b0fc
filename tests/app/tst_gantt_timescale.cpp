// The Gantt time scale: time <-> pixel maths, zoom about a point, fit, 1-2-5 tick steps and units.
#include <QtTest>

#include "gantt/timescale.h"

using partex::gui::TimeScale;

class TestGanttTimeScale : public QObject {
  Q_OBJECT
 private slots:
  void mapsBothWays() {
    TimeScale s{100, 0.5};
    QCOMPARE(s.xAt(100), 0.0);
    QCOMPARE(s.xAt(150), 100.0);
    QCOMPARE(s.timeAt(100), 150.0);
    QCOMPARE(s.timeAt(s.xAt(1234.5)), 1234.5);
  }

  void zoomKeepsPointFixed_data() {
    QTest::addColumn<double>("x");
    QTest::addColumn<double>("factor");
    QTest::newRow("in at left") << 0.0 << 2.0;
    QTest::newRow("in at middle") << 400.0 << 1.25;
    QTest::newRow("out at right") << 800.0 << 0.5;
    QTest::newRow("out beyond") << 1200.0 << 0.1;
  }
  void zoomKeepsPointFixed() {
    QFETCH(double, x);
    QFETCH(double, factor);
    TimeScale s{10, 2};
    const double before = s.timeAt(x);
    s.zoomAbout(x, factor);
    QVERIFY(qAbs(s.timeAt(x) - before) < 1e-9);
    QVERIFY(qAbs(s.usPerPixel - 2 / factor) < 1e-12);
  }

  void zoomIsClampedAndIgnoresNonsense() {
    TimeScale s{0, 1};
    s.zoomAbout(0, 1e30);
    QCOMPARE(s.usPerPixel, TimeScale::kMinUsPerPixel);
    s.zoomAbout(0, 1e-30);
    QCOMPARE(s.usPerPixel, TimeScale::kMaxUsPerPixel);
    s = {0, 1};
    s.zoomAbout(0, 0);
    s.zoomAbout(0, -2);
    s.zoomAbout(0, std::numeric_limits<double>::quiet_NaN());
    QCOMPARE(s.usPerPixel, 1.0);
  }

  void fitShowsSpan() {
    TimeScale s;
    s.fit(20, 1020, 500);
    QCOMPARE(s.originUs, 20.0);
    QCOMPARE(s.usPerPixel, 2.0);
    QCOMPARE(s.xAt(1020), 500.0);
    s.fit(5, 5, 100);  // degenerate: 1 us over the width
    QCOMPARE(s.usPerPixel, 0.01);
    s.fit(0, 10, 0);  // zero width does not divide by zero
    QVERIFY(s.usPerPixel > 0);
  }

  void niceStep_data() {
    QTest::addColumn<double>("minUs");
    QTest::addColumn<double>("step");
    QTest::newRow("zero") << 0.0 << 1.0;
    QTest::newRow("1") << 1.0 << 1.0;
    QTest::newRow("1.01") << 1.01 << 2.0;
    QTest::newRow("2") << 2.0 << 2.0;
    QTest::newRow("2.5") << 2.5 << 5.0;
    QTest::newRow("7") << 7.0 << 10.0;
    QTest::newRow("0.003") << 0.003 << 0.005;
    QTest::newRow("1000") << 1000.0 << 1000.0;
    QTest::newRow("1500") << 1500.0 << 2000.0;
    QTest::newRow("35000") << 35000.0 << 50000.0;
    QTest::newRow("1e6") << 1e6 << 1e6;
  }
  void niceStep() {
    QFETCH(double, minUs);
    QFETCH(double, step);
    QVERIFY2(qAbs(TimeScale::niceStep(minUs) - step) <= step * 1e-12,
             qPrintable(QString::number(TimeScale::niceStep(minUs), 'g', 17)));
  }

  void formatTick_data() {
    QTest::addColumn<double>("us");
    QTest::addColumn<double>("step");
    QTest::addColumn<QString>("label");
    QTest::newRow("zero ns") << 0.0 << 0.2 << "0 ns";
    QTest::newRow("ns") << 0.4 << 0.2 << "400 ns";
    QTest::newRow("half ns") << 0.0015 << 0.0005 << "1.5 ns";
    QTest::newRow("us") << 20.0 << 10.0 << "20 us";
    QTest::newRow("us fraction") << 2.5 << 0.5 << "2500 ns";
    QTest::newRow("ms") << 1500.0 << 500.0 << "1500 us";
    QTest::newRow("ms step") << 3000.0 << 1000.0 << "3 ms";
    QTest::newRow("s") << 2e6 << 1e6 << "2 s";
    QTest::newRow("s decimals") << 1.5e6 << 5e5 << "1500 ms";
    QTest::newRow("negative zero") << -1e-12 << 1.0 << "0 us";
  }
  void formatTick() {
    QFETCH(double, us);
    QFETCH(double, step);
    QFETCH(QString, label);
    QCOMPARE(TimeScale::formatTick(us, step), label);
  }

  void formatDuration_data() {
    QTest::addColumn<double>("us");
    QTest::addColumn<QString>("text");
    QTest::newRow("ns") << 0.98 << "980 ns";
    QTest::newRow("us") << 12.3454 << "12.345 us";
    QTest::newRow("ms") << 1234.0 << "1.234 ms";
    QTest::newRow("s") << 2.5e6 << "2.500 s";
    QTest::newRow("inf") << std::numeric_limits<double>::infinity() << "-";
  }
  void formatDuration() {
    QFETCH(double, us);
    QFETCH(QString, text);
    QCOMPARE(TimeScale::formatDuration(us), text);
  }

  void ticksCoverWidthOnMultiples_data() {
    QTest::addColumn<double>("origin");
    QTest::addColumn<double>("usPerPixel");
    QTest::addColumn<QString>("firstLabel");
    QTest::addColumn<QString>("secondLabel");
    QTest::newRow("80 us from 0") << 0.0 << 1.0 << "0 us"
                                  << "100 us";
    QTest::newRow("ms scale") << 0.0 << 20.0 << "0 ms"
                              << "2 ms";
    QTest::newRow("offset origin") << 130.0 << 1.0 << "200 us"
                                   << "300 us";
    QTest::newRow("ns scale") << 0.0 << 0.001 << "0 ns"
                              << "100 ns";
    QTest::newRow("negative origin") << -150.0 << 1.0 << "-100 us"
                                     << "0 us";
  }
  void ticksCoverWidthOnMultiples() {
    QFETCH(double, origin);
    QFETCH(double, usPerPixel);
    QFETCH(QString, firstLabel);
    QFETCH(QString, secondLabel);
    TimeScale s{origin, usPerPixel};
    const auto ticks = s.ticks(800, 80);
    QVERIFY(ticks.size() >= 2);
    QCOMPARE(ticks[0].label, firstLabel);
    QCOMPARE(ticks[1].label, secondLabel);
    const double spacing = s.xAt(ticks[1].us) - s.xAt(ticks[0].us);
    QVERIFY(spacing >= 80 - 1e-9);
    QVERIFY(spacing <= 80 * 2.5 + 1e-9);  // a 1-2-5 ladder never jumps more than 2.5x
    for (const auto& t : ticks) {
      QVERIFY(s.xAt(t.us) >= -1e-9);
      QVERIFY(s.xAt(t.us) <= 800 + 1e-9);
    }
  }

  void noTicksForEmptyWidth() { QVERIFY(TimeScale{}.ticks(0).empty()); }
};

QTEST_GUILESS_MAIN(TestGanttTimeScale)
#include "tst_gantt_timescale.moc"
