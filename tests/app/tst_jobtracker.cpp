// JobTracker (session/jobtracker.h): the newest job wins. A superseded job is asked to stop and its
// result never arrives; results come back queued on the context's thread; stop() still delivers,
// drop() does not; nothing arrives after the tracker or its context is gone.
#include <QtTest>

#include <QThread>
#include <QThreadPool>

#include <algorithm>
#include <atomic>
#include <memory>
#include <semaphore>

#include "session/jobtracker.h"

using partex::gui::JobTracker;

namespace {

/// A gate a job waits at until the test opens it (so that the order of events is the test's).
struct Gate {
  std::binary_semaphore sem{0};
  void open() { sem.release(); }
  void wait() { sem.acquire(); }
};

}  // namespace

class TestJobTracker : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    // Jobs below block a pool thread at a gate while another job runs: never fewer than two threads.
    QThreadPool::globalInstance()->setMaxThreadCount(std::max(4, QThreadPool::globalInstance()->maxThreadCount()));
  }
  void newerJobSupersedesOlder();
  void resultComesQueuedOnTheContextThread();
  void stopStillDeliversDropDoesNot();
  void nothingArrivesAfterTheContextIsGone();
};

void TestJobTracker::newerJobSupersedesOlder() {
  QObject context;
  JobTracker jobs(&context);
  auto firstGate = std::make_shared<Gate>();
  std::atomic<bool> firstSawStop{false};
  QList<int> delivered;
  jobs.start(
      [firstGate, &firstSawStop](const std::atomic<bool>& stop) {
        firstGate->wait();
        firstSawStop = stop.load();
        return 1;
      },
      [&delivered](int r) { delivered << r; });
  QVERIFY(jobs.isRunning());
  jobs.start([](const std::atomic<bool>&) { return 2; }, [&delivered](int r) { delivered << r; });
  // The second finishes while the first still waits; then the first finishes too, late.
  QTRY_COMPARE(delivered, QList<int>{2});
  QVERIFY(!jobs.isRunning());
  firstGate->open();
  jobs.waitForDone();
  QCoreApplication::processEvents();
  QCoreApplication::processEvents();
  QCOMPARE(delivered, QList<int>{2});  // the older result was dropped
  QVERIFY(firstSawStop);               // and the older job was asked to stop
  QVERIFY(!jobs.stopRequested());      // the newest was not
}

void TestJobTracker::resultComesQueuedOnTheContextThread() {
  QObject context;
  JobTracker jobs(&context);
  QThread* jobThread = nullptr;
  QThread* doneThread = nullptr;
  bool delivered = false;
  jobs.start(
      [&jobThread](const std::atomic<bool>&) {
        jobThread = QThread::currentThread();
        return QStringLiteral("done");
      },
      [&](const QString& s) {
        doneThread = QThread::currentThread();
        delivered = s == QLatin1String("done");
      });
  // Not waitForDone() here: a wait on a job that has not started yet runs it in the waiting thread.
  QThread::msleep(20);
  QVERIFY(!delivered);  // only through the event loop
  QVERIFY(jobs.isRunning());
  QTRY_VERIFY(delivered);
  QVERIFY(jobThread != QThread::currentThread());
  QCOMPARE(doneThread, QThread::currentThread());
  QVERIFY(!jobs.isRunning());
}

void TestJobTracker::stopStillDeliversDropDoesNot() {
  QObject context;
  JobTracker jobs(&context);
  auto gate = std::make_shared<Gate>();
  int results = 0;
  bool sawStop = false;
  jobs.start(
      [gate](const std::atomic<bool>& stop) {
        gate->wait();
        return stop.load();
      },
      [&](bool stopped) {
        ++results;
        sawStop = stopped;
      });
  jobs.stop();
  QVERIFY(jobs.stopRequested());
  QVERIFY(jobs.isRunning());
  gate->open();
  QTRY_COMPARE(results, 1);
  QVERIFY(sawStop);

  auto gate2 = std::make_shared<Gate>();
  jobs.start(
      [gate2](const std::atomic<bool>& stop) {
        gate2->wait();
        return stop.load();
      },
      [&](bool) { ++results; });
  QVERIFY(!jobs.stopRequested());
  jobs.drop();
  QVERIFY(!jobs.isRunning());
  QVERIFY(jobs.stopRequested());
  gate2->open();
  jobs.waitForDone();
  QTest::qWait(50);
  QCOMPARE(results, 1);
}

void TestJobTracker::nothingArrivesAfterTheContextIsGone() {
  int results = 0;
  auto gate = std::make_shared<Gate>();
  {
    auto context = std::make_unique<QObject>();
    auto jobs = std::make_unique<JobTracker>(context.get());
    jobs->start(
        [gate](const std::atomic<bool>&) {
          gate->wait();
          return 7;
        },
        [&results](int) { ++results; });
    // The tracker goes first (as a member of its context does), without waiting for the job.
    jobs.reset();
    gate->open();
    QTest::qWait(50);
    context.reset();
  }
  // A finished job whose delivery is queued when the context goes.
  {
    auto context = std::make_unique<QObject>();
    JobTracker jobs(context.get());
    jobs.start([](const std::atomic<bool>&) { return 8; }, [&results](int) { ++results; });
    jobs.waitForDone();
    context.reset();  // its queued events go with it
  }
  QTest::qWait(50);
  QCOMPARE(results, 0);
}

QTEST_GUILESS_MAIN(TestJobTracker)
#include "tst_jobtracker.moc"
