// The session without widgets: installs a model, moves operators as undoable commands (single and
// multi-op moves, merges, refusals, pins), previews, runs schedulers in the background, and the
// plain pieces under the graph view (grouping, display graph, Graphviz layout, item models).
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QUndoStack>

#include "core/fused_fixture.h"
#include "graph/devicepalette.h"
#include "graph/displaygraph.h"
#include "graph/layout.h"
#include "gui/comparemodel.h"
#include "gui/inspector.h"
#include "gui/operatortablemodel.h"
#include "gen/generator.h"
#include "session/commands.h"
#include "session/session.h"
#include "sessiontestutil.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

using partex::test::findEffectiveMove;
using partex::test::sameTimes;

/// Generates a model, loads and prepares it on `platform` (synchronously) and installs it.
bool installGenerated(Session& s, const GenSpec& spec, const std::string& platform, QString* error) {
  const std::string path = test::tempDir() + "/" + spec.kind + std::to_string(spec.nodes) + ".onnx";
  if (auto st = generateModelFile(spec, path); !st) {
    *error = QString::fromStdString(st.message());
    return false;
  }
  auto m = loadModel(path, {});
  if (!m) {
    *error = QString::fromStdString(m.message());
    return false;
  }
  auto p = prepareSession(*m, platform);
  if (!p) {
    *error = QString::fromStdString(p.message());
    return false;
  }
  s.install(std::move(p).value());
  return true;
}

GenSpec smallBert() {
  GenSpec g;
  g.kind = "bert";
  g.layers = 1;
  g.seqLen = 16;
  g.hidden = 64;
  g.heads = 2;
  g.vocab = 100;
  return g;
}

}  // namespace

class TestSession : public QObject {
  Q_OBJECT
 private slots:
  void installsAndSimulatesInitialPlan() {
    Session s;
    QSignalSpy model(&s, &Session::modelChanged);
    QSignalSpy plan(&s, &Session::planChanged);
    QString err;
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    QCOMPARE(model.count(), 1);
    QCOMPARE(plan.count(), 1);
    QVERIFY(s.numOps() > 40);
    QCOMPARE(s.numDevices(), 4);
    QVERIFY(checkPlanShape(*s.table(), s.plan()).isOk());
    QVERIFY(s.timeline().makespan > 0);
    QCOMPARE(s.state().algorithm, std::string("heft"));
    QCOMPARE(s.state().schedulerMakespan, s.timeline().makespan);
    QVERIFY(s.lowerBoundUs() > 0 && s.lowerBoundUs() <= s.timeline().makespan + 1e-6);
    // The critical path ends at the task that ends last.
    int last = 0;
    for (int v = 0; v < s.numOps(); ++v)
      if (s.timeline().tasks[static_cast<size_t>(v)].end > s.timeline().tasks[static_cast<size_t>(last)].end) last = v;
    QVERIFY(s.critical().task[static_cast<size_t>(last)]);
    QVERIFY(!s.placementReasons(last).isEmpty());
  }

  void singleMoveIsOneUndoStepAndUndoRestoresExactly() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    const PlanState before = s.state();
    const Timeline tl0 = s.timeline();
    int op = -1, dev = -1;
    QVERIFY(findEffectiveMove(s, &op, &dev));
    auto preview = s.previewMove({op}, dev);
    QVERIFY(preview.isOk());
    QVERIFY(s.state() == before);  // a preview changes nothing
    QSignalSpy plan(&s, &Session::planChanged);
    QVERIFY(s.moveOps({op}, dev).isOk());
    QCOMPARE(plan.count(), 1);
    QCOMPARE(s.undoStack()->count(), 1);
    QCOMPARE(s.deviceOf(op), dev);
    QVERIFY(s.isManual(op));
    QCOMPARE(s.plan().algorithm, std::string("manual"));
    QVERIFY(s.timeline().makespan != tl0.makespan);
    QVERIFY(checkPlanShape(*s.table(), s.plan()).isOk());
    // The live timeline is the simulator's verdict on the new plan.
    auto check = simulate(*s.table(), s.plan());
    QVERIFY(check.isOk());
    QCOMPARE(check->makespan, s.timeline().makespan);
    const PlanState after = s.state();
    const Timeline tl1 = s.timeline();
    // Moving to where it already is: no undo step.
    QVERIFY(s.moveOps({op}, dev).isOk());
    QCOMPARE(s.undoStack()->count(), 1);
    s.undoStack()->undo();
    QVERIFY(s.state() == before);
    QVERIFY(sameTimes(s.timeline(), tl0));
    s.undoStack()->redo();
    QVERIFY(s.state() == after);
    QVERIFY(sameTimes(s.timeline(), tl1));
    s.undoStack()->undo();
    QVERIFY(s.state() == before);
  }

  void multiMoveMergesAndBecomesObsolete() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "mobilenetv2";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    const PlanState before = s.state();
    const Timeline tl0 = s.timeline();
    // Five consecutive operators that both CPU clusters run (any operator: CPUs run everything).
    QList<int> ops = {10, 11, 12, 13, 14};
    QVERIFY(s.moveOps(ops, 0).isOk());
    QCOMPARE(s.undoStack()->count(), 1);
    for (int op : ops) QCOMPARE(s.deviceOf(op), 0);
    QVERIFY(simulate(*s.table(), s.plan())->makespan == s.timeline().makespan);
    // The same set again, to another device: merged into the same step.
    QVERIFY(s.moveOps(ops, 1).isOk());
    QCOMPARE(s.undoStack()->count(), 1);
    for (int op : ops) QCOMPARE(s.deviceOf(op), 1);
    const auto* cmd = dynamic_cast<const MoveOpsCommand*>(s.undoStack()->command(0));
    QVERIFY(cmd);
    QCOMPARE(cmd->device(), 1);
    s.undoStack()->undo();
    QVERIFY(s.state() == before);
    QVERIFY(sameTimes(s.timeline(), tl0));
    // A different set does not merge.
    s.undoStack()->redo();
    QVERIFY(s.moveOps({20}, s.deviceOf(20) == 0 ? 1 : 0).isOk());
    QCOMPARE(s.undoStack()->count(), 2);
    // Moving it back is merged into the same step (the order on the device may differ from the
    // scheduler's, so it stays a step); undo restores the scheduler's plan exactly.
    Session t;
    QVERIFY2(installGenerated(t, spec, "mobile-soc", &err), qPrintable(err));
    const PlanState start = t.state();
    const int op = 30;
    const int home = t.deviceOf(op);
    const int other = home == 0 ? 1 : 0;
    QVERIFY(t.moveOps({op}, other).isOk());
    QCOMPARE(t.undoStack()->count(), 1);
    QVERIFY(t.moveOps({op}, home).isOk());
    QCOMPARE(t.undoStack()->count(), 1);
    QCOMPARE(t.deviceOf(op), home);
    t.undoStack()->undo();
    QVERIFY(t.state() == start);
    // A state that returns exactly to the start makes the merged command obsolete.
    const PlanState a = t.state();
    PlanState b = a;
    b.pinned[1] = b.plan.device[1];
    auto* first = new MoveOpsCommand(&t, {1}, b.plan.device[1], a, b, std::nullopt);
    MoveOpsCommand second(&t, {1}, a.plan.device[1], b, a, std::nullopt);
    QVERIFY(first->mergeWith(&second));
    QVERIFY(first->isObsolete());
    delete first;
  }

  void refusesUnsupportedDeviceWithReason() {
    Session s;
    QString err;
    QVERIFY2(installGenerated(s, smallBert(), "cpu-npu", &err), qPrintable(err));
    int softmax = -1;
    for (int v = 0; v < s.numOps(); ++v)
      if (s.table()->taskTypes[static_cast<size_t>(v)] == "Softmax") softmax = v;
    QVERIFY(softmax >= 0);
    const int npu = s.platform().findDevice("npu");
    QVERIFY(npu >= 0);
    const PlanState before = s.state();
    QSignalSpy msg(&s, &Session::message);
    Status st = s.moveOps({softmax}, npu);
    QVERIFY(!st.isOk());
    QVERIFY2(QString::fromStdString(st.message()).contains("Softmax"), st.message().c_str());
    QVERIFY2(QString::fromStdString(st.message()).contains("npu"), st.message().c_str());
    QCOMPARE(msg.count(), 1);
    QVERIFY(s.state() == before);
    QCOMPARE(s.undoStack()->count(), 0);
    QVERIFY(!s.previewMove({softmax}, npu).isOk());
    // No such device.
    QVERIFY(!s.moveOps({softmax}, 7).isOk());
    QVERIFY(!s.moveOps({-1}, 0).isOk());
    QVERIFY(!s.moveOps({}, 0).isOk());
    QVERIFY(s.state() == before);
  }

  void pinsRefuseMovesAndSurviveReoptimisation() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    const int op = 5;
    const int home = s.deviceOf(op);
    const int other = home == 0 ? 1 : 0;
    QVERIFY(s.setPinned({op}, true).isOk());
    QVERIFY(s.isPinned(op));
    QCOMPARE(s.undoStack()->count(), 1);
    Status st = s.moveOps({op}, other);
    QVERIFY(!st.isOk());
    QVERIFY(QString::fromStdString(st.message()).contains("pinned"));
    // Move the pinned op's neighbour by hand, then re-optimise: the pin holds, the hand move goes.
    QVERIFY(s.moveOps({op + 1}, s.deviceOf(op + 1) == 0 ? 1 : 0).isOk());
    QSignalSpy done(&s, &Session::schedulerFinished);
    s.runScheduler("peft", true);
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().first().toBool(), qPrintable(done.first().last().toString()));
    QCOMPARE(s.deviceOf(op), home);
    QVERIFY(s.isPinned(op));
    QCOMPARE(s.state().algorithm, std::string("peft"));
    QVERIFY(!s.isManual(op + 1));
    QCOMPARE(s.undoStack()->count(), 3);
    s.undoStack()->undo();  // the scheduler run
    QVERIFY(s.isManual(op + 1));
    QCOMPARE(s.state().algorithm, std::string("heft"));
    s.undoStack()->undo();
    s.undoStack()->undo();
    QVERIFY(!s.isPinned(op));
  }

  void schedulerCancelAndNewestWins() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    QSignalSpy done(&s, &Session::schedulerFinished);
    s.runScheduler("best", false, 30.0);
    s.runScheduler("cpop", false);  // supersedes the first
    QVERIFY(done.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(!s.schedulerRunning(), 60000);
    QCOMPARE(s.state().algorithm, std::string("cpop"));
    s.runScheduler("best", false, 30.0);
    s.cancelScheduler();
    QTRY_VERIFY_WITH_TIMEOUT(!s.schedulerRunning(), 60000);
    QCOMPARE(s.state().algorithm, std::string("cpop"));
    // Unknown algorithm: a message, nothing runs.
    done.clear();
    s.runScheduler("no-such-algo");
    QCOMPARE(done.count(), 1);
    QCOMPARE(done.first().first().toBool(), false);
  }

  void compareFillsTable() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "mobilenetv2";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    QSignalSpy rows(&s, &Session::compareFinished);
    s.runCompare({"heft", "cpop", "greedy", "nonsense"});
    QVERIFY(rows.wait(60000));
    const auto list = rows.first().first().value<QList<CompareRow>>();
    QCOMPARE(list.size(), 4);
    QVERIFY(list[0].makespanUs > 0);
    QVERIFY(list[0].ratioToBound >= 1.0 - 1e-9);
    QVERIFY(list[0].speedup > 0);
    QVERIFY(!list[3].error.isEmpty());
    CompareModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRows(list);
    QCOMPARE(model.rowCount(), 4);
    QVERIFY(model.data(model.index(0, CompareModel::Makespan)).toString().size() > 0);
  }

  void itemModelsPassTheTester() {
    Session s;
    DevicePaletteModel palette(&s);
    QAbstractItemModelTester t1(&palette, QAbstractItemModelTester::FailureReportingMode::QtTest);
    OperatorTableModel ops;
    ops.setSession(&s);
    QAbstractItemModelTester t2(&ops, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QString err;
    GenSpec spec;
    spec.kind = "resnet18";
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    QCOMPARE(palette.rowCount(), 4);
    QCOMPARE(ops.rowCount(), s.numOps());
    QVERIFY(palette.data(palette.index(0), Qt::DisplayRole).toString().contains("cpu-big"));
    QCOMPARE(palette.data(palette.index(2), Qt::DecorationRole).value<QColor>(), s.deviceColor(2));
    palette.setHighlight(1, false);
    QVERIFY(palette.data(palette.index(1), Qt::BackgroundRole).isValid());
    QVERIFY(s.moveOps({3}, s.deviceOf(3) == 0 ? 1 : 0).isOk());
    QCOMPARE(ops.data(ops.index(3, OperatorTableModel::Device)).toString(), s.deviceLabel(s.deviceOf(3)));
    // A second model resets both.
    GenSpec spec2;
    spec2.kind = "mobilenetv2";
    QVERIFY2(installGenerated(s, spec2, "cpu-npu", &err), qPrintable(err));
    QCOMPARE(palette.rowCount(), 2);
    QCOMPARE(ops.rowCount(), s.numOps());
  }

  void inspectorNamesTheFusedKernel() {
    // A small ResNet-18 on two cores with a profile that knows the runtime's kernels.
    GenSpec spec;
    spec.kind = "resnet18";
    spec.imageSize = 32;
    spec.numClasses = 10;
    const std::string path = test::tempDir() + "/r18-fused.onnx";
    QVERIFY(generateModelFile(spec, path).isOk());
    auto m = loadModel(path, {});
    QVERIFY2(m.isOk(), m.message().c_str());
    LoadedProfile lp;
    lp.path = test::tempDir() + "/r18-fused.profile.json";
    lp.profile = test::inContextProfile((*m)->graph, {"core0", "core1"});
    auto p = prepareSession(*m, test::twoCoresAndNpu(), "two-cores-npu", {lp});
    QVERIFY2(p.isOk(), p.message().c_str());
    Session s;
    s.install(std::move(p).value());
    QList<int> all;
    for (int v = 0; v < s.numOps(); ++v) all << v;
    QVERIFY(s.moveOps(all, 0).isOk());
    const int conv1 = test::taskNamed(*s.table(), "conv1"), bn1 = test::taskNamed(*s.table(), "bn1"),
              relu = test::taskNamed(*s.table(), "relu");
    QVERIFY(s.fusedKernelOf(bn1));
    QCOMPARE(s.fusedKernelOf(bn1), s.fusedKernelOf(conv1));
    QString html = inspectorHtml(s, {bn1});
    QVERIFY2(html.contains("<b>Fused kernel:</b> conv1 + <b>bn1</b> + relu on core0"), qPrintable(html));
    // relu to core1: conv1 + bn1 stay one kernel, relu runs alone.
    QVERIFY(s.moveOps({relu}, 1).isOk());
    html = inspectorHtml(s, {bn1});
    QVERIFY2(html.contains("<b>Fused kernel:</b> conv1 + <b>bn1</b> on core0"), qPrintable(html));
    QVERIFY(!inspectorHtml(s, {relu}).contains("Fused kernel"));
    QVERIFY(!s.fusedKernelOf(relu));
    // Undo brings the kernel back; a preview of the same move shows its own kernels.
    s.undoStack()->undo();
    QVERIFY(s.fusedKernelOf(relu));
    QCOMPARE(s.fusedKernelOf(relu), s.fusedKernelOf(conv1));
    auto tl = s.previewMove({relu}, 1);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto previewed = s.fusedKernelsOf(*tl);
    QCOMPARE(previewed.size(), s.fusedKernels().size());
    QCOMPARE(previewed.front().ops, (std::vector<TaskId>{conv1, bn1}));
  }

  void inspectorExplainsPlacement() {
    Session s;
    QVERIFY(inspectorHtml(s, {}).contains("No model"));
    QString err;
    QVERIFY2(installGenerated(s, smallBert(), "cpu-npu", &err), qPrintable(err));
    int softmax = -1;
    for (int v = 0; v < s.numOps(); ++v)
      if (s.table()->taskTypes[static_cast<size_t>(v)] == "Softmax") softmax = v;
    QVERIFY(softmax >= 0);
    // Only the CPU runs Softmax on cpu-npu: the reason says so, and the NPU row says why not.
    QVERIFY(s.placementReasons(softmax).join(' ').contains("only cpu can run it"));
    const QString html = inspectorHtml(s, {softmax});
    QVERIFY(html.contains("Softmax"));
    QVERIFY2(html.contains("cannot run"), qPrintable(html));
    QVERIFY(html.contains("Transfers in"));
    QVERIFY(html.contains("Inputs"));
    QVERIFY(inspectorHtml(s, {0, 1, 2}).contains("3 operators selected"));
    QVERIFY(inspectorHtml(s, {}).contains("Select an operator"));
    QVERIFY(inspectorHtml(s, {-5}).isEmpty());
    QVERIFY(s.setPinned({softmax}, true).isOk());
    QVERIFY(s.placementReasons(softmax).join(' ').contains("pinned"));
  }

  void groupingCoversEveryOperatorOnce() {
    Session s;
    QString err;
    GenSpec spec;
    spec.kind = "random";
    spec.nodes = 3000;
    QVERIFY2(installGenerated(s, spec, "mobile-soc", &err), qPrintable(err));
    const CostTable& t = *s.table();
    const Grouping g = groupOperators(t, 40);
    QVERIFY(g.size() >= t.numTasks() / 40);
    std::vector<int> seen(static_cast<size_t>(t.numTasks()), 0);
    for (int i = 0; i < g.size(); ++i) {
      QVERIFY(!g.ops[static_cast<size_t>(i)].empty());
      QVERIFY(g.ops[static_cast<size_t>(i)].size() <= 40);
      for (TaskId v : g.ops[static_cast<size_t>(i)]) {
        ++seen[static_cast<size_t>(v)];
        QCOMPARE(g.groupOf[static_cast<size_t>(v)], i);
      }
    }
    for (int c : seen) QCOMPARE(c, 1);
    std::vector<uint8_t> expanded(static_cast<size_t>(g.size()), 0);
    const DisplayGraph collapsed = buildDisplayGraph(t, &g, expanded);
    QCOMPARE(static_cast<int>(collapsed.nodes.size()), g.size());
    expanded[3] = 1;
    const DisplayGraph one = buildDisplayGraph(t, &g, expanded);
    QCOMPARE(one.nodes.size(), collapsed.nodes.size() - 1 + g.ops[3].size());
    size_t edgeCount = 0;
    for (const auto& e : buildDisplayGraph(t, nullptr, {}).edges) edgeCount += e.costEdges.size();
    QCOMPARE(edgeCount, t.edges.size());
  }

  void graphvizLayoutReturnsPlainPositions() {
    LayoutInput in;
    for (int i = 0; i < 6; ++i) in.nodes.push_back({170, 58});
    in.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3},
                {3, 4}, {4, 5}, {5, 5}, {9, 1}};  // a self-loop and a bad index are ignored
    auto r = layoutGraph(in);
    QVERIFY2(r.isOk(), r.message().c_str());
    QCOMPARE(r->centers.size(), size_t(6));
    QCOMPARE(r->edgePoints.size(), in.edges.size());
    // Top to bottom: a consumer sits below its producer.
    QVERIFY(r->centers[1].y > r->centers[0].y);
    QVERIFY(r->centers[5].y > r->centers[4].y);
    QVERIFY(r->edgePoints[0].size() >= 4);
    QVERIFY(r->edgePoints[6].empty());
    QVERIFY(r->edgePoints[7].empty());
    for (const auto& c : r->centers) QVERIFY(c.x >= 0 && c.y >= 0 && c.x <= r->width && c.y <= r->height);
    // The spline ends at the consumer's top border.
    const auto& last = r->edgePoints[0].back();
    QVERIFY(std::abs(last.y - (r->centers[1].y - 29)) < 3);
    const LayoutResult f = layoutByLevels(in);
    QVERIFY(f.centers[3].y > f.centers[1].y);
    QVERIFY(layoutGraph(LayoutInput{}).isOk());
  }
};

QTEST_MAIN(TestSession)
#include "tst_session.moc"
