// The Gantt chart's row and bar layout (gantt/ganttdata.h), which GanttView paints and hit-tests:
// a row per device, then per link resource and uncontended device pair; bars sorted by start per row,
// at the timeline's times; a timeline that does not belong to the table drawn partially, never
// trusted; a fused kernel one bar in place of its operators'. (The item model that once mirrored
// this layout is gone: nothing drew from it, issue 13.4.)
#include <QtTest>

#include "core/fused_fixture.h"
#include "gantt/ganttdata.h"
#include "plan/fusedkernels.h"
#include "tst_gantt_fixture.h"

using namespace partex;
using namespace partex::gui;

class TestGanttData : public QObject {
  Q_OBJECT
 private slots:
  void taskGraphRowsAndBars() {
    auto p = test::heft2002();
    QVERIFY2(p.error.empty(), p.error.c_str());
    const auto rows = ganttRows(p.table, {&p.timeline});
    QVERIFY(rows.size() >= 3);
    const GanttBars bars = ganttBars(p.table, rows, p.timeline);
    QCOMPARE(bars.perRow.size(), rows.size());
    int tasks = 0, transfers = 0;
    double end = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const bool device = rows[r].kind == GanttRowKind::Device;
      QCOMPARE(device, r < 3);
      if (device) {
        QCOMPARE(rows[r].label, QString::fromStdString(p.table.deviceIds[r]));
        QCOMPARE(rows[r].device, int(r));
      }
      double lastStart = -1, longest = 0;
      for (const GanttBar& b : bars.perRow[r]) {
        QVERIFY(b.start >= lastStart);
        QVERIFY(b.end >= b.start);
        lastStart = b.start;
        longest = std::max(longest, b.end - b.start);
        if (b.kind == GanttBarKind::Task) {
          ++tasks;
          QVERIFY(device);
          QCOMPARE(b.start, p.timeline.tasks[size_t(b.index)].start);
          QCOMPARE(b.end, p.timeline.tasks[size_t(b.index)].end);
          QCOMPARE(p.timeline.tasks[size_t(b.index)].device, int(r));
          end = std::max(end, b.end);
        } else {
          ++transfers;
          QVERIFY(!device);
          const auto& x = p.timeline.transfers[size_t(b.index)];
          QCOMPARE(b.start, x.start);
          QVERIFY(x.end > x.start);
        }
      }
      QCOMPARE(bars.maxDuration[r], longest);
    }
    QCOMPARE(tasks, p.table.numTasks());
    int timed = 0;
    for (const auto& x : p.timeline.transfers) timed += x.end > x.start;
    QCOMPARE(transfers, timed);
    QVERIFY(transfers > 0);  // HEFT's schedule of the paper's graph moves data between processors
    QCOMPARE(end, 80.0);     // the HEFT paper's makespan
  }

  void platformHasLinkRows() {
    auto p = test::generated("random", 60, "cpu-gpu-pcie");
    QVERIFY2(p.error.empty(), p.error.c_str());
    QVERIFY(p.table.numLinkResources > 0);
    const auto rows = ganttRows(p.table, {&p.timeline});
    QVERIFY(int(rows.size()) >= p.table.numDevices() + p.table.numLinkResources);
    for (int l = 0; l < p.table.numLinkResources; ++l) {
      const GanttRow& r = rows[size_t(p.table.numDevices() + l)];
      QCOMPARE(r.kind, GanttRowKind::Link);
      QCOMPARE(r.link, l);
      QCOMPARE(r.label, QString::fromStdString(p.table.linkNames[size_t(l)]));
    }
  }

  void foreignTimelineIsDrawnPartially() {
    auto p = test::heft2002();
    QVERIFY2(p.error.empty(), p.error.c_str());
    Timeline bad = p.timeline;
    bad.tasks[0].device = 99;
    bad.transfers.push_back({0, 1, 7, 8, 5, 1, 2, 10});
    const auto rows = ganttRows(p.table, {&bad});
    const GanttBars bars = ganttBars(p.table, rows, bad);
    int tasks = 0;
    for (size_t r = 0; r < rows.size(); ++r)
      for (const GanttBar& b : bars.perRow[r]) tasks += b.kind == GanttBarKind::Task;
    QCOMPARE(tasks, p.table.numTasks() - 1);
  }

  void fusedKernelIsOneBar() {
    // ResNet-18 on core0 with a profile that knows the runtime's kernels: conv1 + bn1 + relu is one
    // bar (at its anchor, spanning its operators), not three.
    auto p = test::fusedProblem();
    QVERIFY2(p.error.empty(), p.error.c_str());
    const Plan plan = test::placed(p.table, 0);
    auto tl = simulate(p.table, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto ks = fusedKernels(p.graph, p.table, plan.device, &*tl);
    QVERIFY(!ks.empty());
    const auto rows = ganttRows(p.table, {&*tl});
    QCOMPARE(ganttBars(p.table, rows, *tl).perRow[0].size(), size_t(p.table.numTasks()));
    const GanttBars bars = ganttBars(p.table, rows, *tl, ks);
    int members = 0;
    for (const auto& k : ks) members += static_cast<int>(k.ops.size());
    QCOMPARE(bars.perRow[0].size(), size_t(p.table.numTasks() - members + static_cast<int>(ks.size())));
    int fusedBars = 0;
    bool sawConv1 = false;
    for (const GanttBar& b : bars.perRow[0]) {
      QVERIFY(b.index != test::taskNamed(p.table, "bn1") && b.index != test::taskNamed(p.table, "relu"));
      if (b.kernel < 0) continue;
      ++fusedBars;
      QCOMPARE(b.kind, GanttBarKind::Task);
      const FusedKernel& k = bars.kernels[size_t(b.kernel)];
      QCOMPARE(b.start, k.startUs);
      QCOMPARE(b.end, k.endUs);
      if (b.index != test::taskNamed(p.table, "conv1")) continue;
      sawConv1 = true;
      std::vector<std::string> names;
      for (TaskId v : k.ops) names.push_back(p.table.taskNames[size_t(v)]);
      QCOMPARE(names, (std::vector<std::string>{"conv1", "bn1", "relu"}));
    }
    QVERIFY(sawConv1);
    QCOMPARE(fusedBars, static_cast<int>(ks.size()));
  }
};

QTEST_MAIN(TestGanttData)
#include "tst_gantt_data.moc"
