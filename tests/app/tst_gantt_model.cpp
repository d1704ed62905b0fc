// The Gantt item model: rows per device and link, bars as children with KDGantt-style roles,
// checked by QAbstractItemModelTester through resets.
#include <QtTest>

#include <QAbstractItemModelTester>

#include "core/fused_fixture.h"
#include "gantt/ganttmodel.h"
#include "plan/fusedkernels.h"
#include "tst_gantt_fixture.h"

using namespace partex;
using gui::GanttModel;

class TestGanttModel : public QObject {
  Q_OBJECT
 private slots:
  void taskGraphRowsAndRoles() {
    auto p = test::heft2002();
    QVERIFY2(p.error.empty(), p.error.c_str());
    GanttModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setTimeline(&p.table, p.timeline);
    QVERIFY(m.rowCount() >= 3);
    int tasks = 0, transfers = 0;
    for (int r = 0; r < m.rowCount(); ++r) {
      const QModelIndex row = m.index(r, 0);
      const bool device = m.data(row, GanttModel::KindRole).toString() == "device";
      QCOMPARE(device, r < 3);
      if (device)
        QCOMPARE(m.data(row, Qt::DisplayRole).toString(), QString::fromStdString(p.table.deviceIds[size_t(r)]));
      double lastStart = -1;
      for (int i = 0; i < m.rowCount(row); ++i) {
        const QModelIndex bar = m.index(i, 0, row);
        QCOMPARE(bar.parent(), row);
        const double start = m.data(bar, GanttModel::StartTimeRole).toDouble();
        const double end = m.data(bar, GanttModel::EndTimeRole).toDouble();
        QVERIFY(start >= lastStart);
        QVERIFY(end >= start);
        lastStart = start;
        if (m.data(bar, GanttModel::KindRole).toString() == "task") {
          ++tasks;
          const int v = m.data(bar, GanttModel::TaskRole).toInt();
          QCOMPARE(start, p.timeline.tasks[size_t(v)].start);
          QCOMPARE(end, p.timeline.tasks[size_t(v)].end);
          QCOMPARE(m.data(bar, GanttModel::DeviceRole).toInt(), r);
          // Task graphs give their costs in the file: "imported".
          const auto prov = p.table.provenance[size_t(v) * size_t(p.table.numDevices()) + size_t(r)];
          QCOMPARE(m.data(bar, GanttModel::ProvenanceRole).toString(), QString(provenanceName(prov)));
          QCOMPARE(m.data(bar, Qt::DisplayRole).toString(), QString::fromStdString(p.table.taskNames[size_t(v)]));
        } else {
          ++transfers;
          QVERIFY(!device);
          QVERIFY(m.data(bar, GanttModel::ToDeviceRole).toInt() >= 0);
          QVERIFY(m.data(bar, Qt::DisplayRole).toString().contains(" -> "));
        }
      }
    }
    QCOMPARE(tasks, p.table.numTasks());
    int timed = 0;
    for (const auto& x : p.timeline.transfers) timed += x.end > x.start;
    QCOMPARE(transfers, timed);
    QVERIFY(transfers > 0);  // HEFT's schedule of the paper's graph moves data between processors
    // The HEFT paper's makespan: the last device row ends at 80.
    double end = 0;
    for (int r = 0; r < 3; ++r) end = std::max(end, m.data(m.index(r, 0), GanttModel::EndTimeRole).toDouble());
    QCOMPARE(end, 80.0);
  }

  void modelOnPlatformHasLinkRowsAndMeasuredFlag() {
    auto p = test::generated("random", 60, "cpu-gpu-pcie");
    QVERIFY2(p.error.empty(), p.error.c_str());
    // Mark one cost as measured: the model reports the provenance of the cost the task used.
    const int v = 0;
    const int d = p.timeline.tasks[0].device;
    p.table.provenance[size_t(v) * size_t(p.table.numDevices()) + size_t(d)] = Provenance::Measured;
    GanttModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setTimeline(&p.table, p.timeline);
    QVERIFY(m.rowCount() >= p.table.numDevices() + p.table.numLinkResources);
    QVERIFY(p.table.numLinkResources > 0);
    for (int l = 0; l < p.table.numLinkResources; ++l)
      QCOMPARE(m.data(m.index(p.table.numDevices() + l, 0)).toString(),
               QString::fromStdString(p.table.linkNames[size_t(l)]));
    bool found = false;
    const QModelIndex row = m.index(d, 0);
    for (int i = 0; i < m.rowCount(row); ++i) {
      const QModelIndex bar = m.index(i, 0, row);
      if (m.data(bar, GanttModel::TaskRole).toInt() == v) {
        QCOMPARE(m.data(bar, GanttModel::ProvenanceRole).toString(), QString("measured"));
        found = true;
      }
    }
    QVERIFY(found);
    // Reset to another timeline and clear, with the tester watching.
    auto q = test::heft2002("cpop");
    QVERIFY2(q.error.empty(), q.error.c_str());
    m.setTimeline(&q.table, q.timeline);
    QVERIFY(m.rowCount() >= 3);
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void invalidIndexesAreHarmless() {
    GanttModel m;
    QVERIFY(!m.index(0, 0).isValid());
    QVERIFY(!m.data(QModelIndex()).isValid());
    QCOMPARE(m.columnCount(), int(GanttModel::ColumnCount));
    QCOMPARE(m.headerData(0, Qt::Horizontal).toString(), QString("Name"));
    // A timeline that does not belong to the table (devices out of range) is drawn partially, not trusted.
    auto p = test::heft2002();
    QVERIFY2(p.error.empty(), p.error.c_str());
    Timeline bad = p.timeline;
    bad.tasks[0].device = 99;
    bad.transfers.push_back({0, 1, 7, 8, 5, 1, 2, 10});
    m.setTimeline(&p.table, bad);
    int tasks = 0;
    for (int r = 0; r < 3; ++r) tasks += m.rowCount(m.index(r, 0));
    QCOMPARE(tasks, p.table.numTasks() - 1);
  }

  void fusedKernelIsOneBar() {
    // ResNet-18 on core0 with a profile that knows the runtime's kernels: conv1 + bn1 + relu is one
    // bar (the anchor's name, its members in FusedOpsRole), not three.
    auto p = test::fusedProblem();
    QVERIFY2(p.error.empty(), p.error.c_str());
    const Plan plan = test::placed(p.table, 0);
    auto tl = simulate(p.table, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto ks = fusedKernels(p.graph, p.table, plan.device, &*tl);
    QVERIFY(!ks.empty());
    GanttModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setTimeline(&p.table, *tl);
    const int alone = m.rowCount(m.index(0, 0));
    QCOMPARE(alone, p.table.numTasks());
    m.setTimeline(&p.table, *tl, ks);
    const QModelIndex core0 = m.index(0, 0);
    int members = 0;
    for (const auto& k : ks) members += static_cast<int>(k.ops.size());
    QCOMPARE(m.rowCount(core0), p.table.numTasks() - members + static_cast<int>(ks.size()));
    int fusedBars = 0;
    bool sawConv1 = false;
    for (int i = 0; i < m.rowCount(core0); ++i) {
      const QModelIndex bar = m.index(i, 0, core0);
      const QStringList ops = m.data(bar, GanttModel::FusedOpsRole).toStringList();
      const int task = m.data(bar, GanttModel::TaskRole).toInt();
      QVERIFY(task != test::taskNamed(p.table, "bn1") && task != test::taskNamed(p.table, "relu"));
      if (ops.isEmpty()) continue;
      ++fusedBars;
      QCOMPARE(m.data(bar, GanttModel::KindRole).toString(), QString("task"));
      if (task != test::taskNamed(p.table, "conv1")) continue;
      sawConv1 = true;
      QCOMPARE(ops, (QStringList{"conv1", "bn1", "relu"}));
      QCOMPARE(m.data(bar, Qt::DisplayRole).toString(), QString("conv1 +2 fused"));
      QCOMPARE(m.data(bar, GanttModel::StartTimeRole).toDouble(), ks[0].startUs);
      QCOMPARE(m.data(bar, GanttModel::EndTimeRole).toDouble(), ks[0].endUs);
      // The kernel's time is its last operator's: measured by the profile.
      QCOMPARE(m.data(bar, GanttModel::ProvenanceRole).toString(), QString("measured"));
    }
    QVERIFY(sawConv1);
    QCOMPARE(fusedBars, static_cast<int>(ks.size()));
  }
};

QTEST_MAIN(TestGanttModel)
#include "tst_gantt_model.moc"
