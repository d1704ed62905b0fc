// The fused kernels of a plan (plan/fusedkernels.h) on a generated ResNet-18 whose costs know the
// runtime's kernels from a profile: a plan that keeps each Conv + BatchNormalization + Relu chain on
// one core has them, a plan that splits one does not have that kernel, a device that is no CPU and a
// table without a profile have none; the plan file writes and reads them and the trace shows one
// slice per kernel.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <set>

#include "fused_fixture.h"
#include "ir/fusion.h"
#include "plan/exports.h"
#include "plan/fusedkernels.h"
#include "plan/planfile.h"

using namespace partex;

namespace {

using Names = std::vector<std::string>;

Names namesOf(const CostTable& t, const FusedKernel& k) {
  Names r;
  for (TaskId v : k.ops) r.push_back(t.taskNames[static_cast<size_t>(v)]);
  return r;
}

/// The kernel holding operator `name`, or nullptr.
const FusedKernel* kernelWith(const CostTable& t, const std::vector<FusedKernel>& ks, const std::string& name) {
  const TaskId v = test::taskNamed(t, name);
  for (const auto& k : ks)
    if (std::find(k.ops.begin(), k.ops.end(), v) != k.ops.end()) return &k;
  return nullptr;
}

}  // namespace

class TestFusedKernels : public QObject {
  Q_OBJECT
 private:
  test::FusedProblem p_;
  DeviceId core0_ = 0, core1_ = 1, npu_ = 2;

 private slots:
  void initTestCase() {
    p_ = test::fusedProblem();
    QVERIFY2(p_.error.empty(), p_.error.c_str());
    QCOMPARE(p_.table.deviceIds, (Names{"core0", "core1", "npu"}));
    QVERIFY(!p_.table.fusedGroups.empty());
  }

  void coLocatedPlanHasEveryKernel() {
    const CostTable& t = p_.table;
    const Plan plan = test::placed(t, core0_);
    auto tl = simulate(t, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto ks = fusedKernels(p_.graph, t, plan.device, &*tl);
    // Exactly the runtime's groups on one device, all on core0, in anchor order.
    const auto groups = fusedGroups(p_.graph);
    QCOMPARE(ks.size(), groups.size());
    QVERIFY(ks.size() >= 16);  // every Conv + BatchNormalization (+ Add) + Relu of ResNet-18
    for (size_t i = 0; i < ks.size(); ++i) {
      QCOMPARE(ks[i].device, core0_);
      QCOMPARE(std::vector<TaskId>(groups[i].ops.begin(), groups[i].ops.end()), ks[i].ops);
      // Predicted times: the first operator's start to the last one's end.
      double start = kInf, end = 0;
      for (TaskId v : ks[i].ops) {
        start = std::min(start, tl->tasks[static_cast<size_t>(v)].start);
        end = std::max(end, tl->tasks[static_cast<size_t>(v)].end);
      }
      QCOMPARE(ks[i].startUs, start);
      QCOMPARE(ks[i].endUs, end);
      QVERIFY(ks[i].endUs > ks[i].startUs);
    }
    QCOMPARE(namesOf(t, ks.front()), (Names{"conv1", "bn1", "relu"}));
    // The timeline alone gives the same kernels (its tasks' devices are the placement).
    const auto fromTl = fusedKernels(p_.graph, t, *tl);
    QCOMPARE(fromTl.size(), ks.size());
    QCOMPARE(fromTl.back().ops, ks.back().ops);
    // Per task: the kernel index, or -1.
    const auto of = kernelOfTasks(t.numTasks(), ks);
    QCOMPARE(of[static_cast<size_t>(test::taskNamed(t, "bn1"))], 0);
    QCOMPARE(of[static_cast<size_t>(test::taskNamed(t, "fc"))], -1);
    QCOMPARE(kernelOpsText(t, ks.front()), std::string("conv1 + bn1 + relu"));
  }

  void splitPlanLosesTheKernel() {
    const CostTable& t = p_.table;
    // relu on core1: conv1 + bn1 stay one kernel on core0, relu runs alone.
    {
      const Plan plan = test::placed(t, core0_, {"relu"}, core1_);
      const auto ks = fusedKernels(p_.graph, t, plan.device);
      QVERIFY(kernelWith(t, ks, "relu") == nullptr);
      const FusedKernel* k = kernelWith(t, ks, "conv1");
      QVERIFY(k);
      QCOMPARE(namesOf(t, *k), (Names{"conv1", "bn1"}));
      QCOMPARE(k->device, core0_);
      QCOMPARE(ks.size(), fusedGroups(p_.graph).size());  // the other kernels are untouched
    }
    // bn1 alone on core1: no kernel holds conv1, bn1 or relu.
    {
      const auto ks = fusedKernels(p_.graph, t, test::placed(t, core0_, {"bn1"}, core1_).device);
      for (const char* name : {"conv1", "bn1", "relu"}) QVERIFY2(kernelWith(t, ks, name) == nullptr, name);
    }
    // bn1 and relu on core1: conv1 alone on core0; bn1 + relu (a per-channel affine chain) one kernel
    // on core1, which the runtime still fuses (a part of the kernel the profile recorded).
    {
      const Plan plan = test::placed(t, core0_, {"bn1", "relu"}, core1_);
      const auto ks = fusedKernels(p_.graph, t, plan.device);
      QVERIFY(kernelWith(t, ks, "conv1") == nullptr);
      const FusedKernel* k = kernelWith(t, ks, "bn1");
      QVERIFY(k);
      QCOMPARE(namesOf(t, *k), (Names{"bn1", "relu"}));
      QCOMPARE(k->device, core1_);
    }
  }

  void onlyCpuDevicesOfAProfiledTableFuse() {
    // Everything on the NPU (no CPU runtime runs it): no kernels.
    QVERIFY(deviceFuses(p_.table, core0_));
    QVERIFY(!deviceFuses(p_.table, npu_));
    QVERIFY(fusedKernels(p_.graph, p_.table, test::placed(p_.table, npu_).device).empty());
    // The chain of conv1 on the NPU and the rest on core0: the NPU's chain is no kernel; core0's are.
    const auto ks =
        fusedKernels(p_.graph, p_.table, test::placed(p_.table, core0_, {"conv1", "bn1", "relu"}, npu_).device);
    QVERIFY(kernelWith(p_.table, ks, "conv1") == nullptr);
    QCOMPARE(ks.size(), fusedGroups(p_.graph).size() - 1);
    // Modelled costs only: nothing says a fusing runtime runs the plan.
    auto plain = test::fusedProblem(false);
    QVERIFY2(plain.error.empty(), plain.error.c_str());
    QVERIFY(!deviceFuses(plain.table, core0_));
    QVERIFY(fusedKernels(plain.graph, plain.table, test::placed(plain.table, core0_).device).empty());
    // A placement that does not fit the table: nothing, no crash.
    QVERIFY(fusedKernels(p_.graph, p_.table, std::vector<DeviceId>{0, 1}).empty());
    std::vector<DeviceId> bad(static_cast<size_t>(p_.table.numTasks()), 7);
    QVERIFY(fusedKernels(p_.graph, p_.table, bad).empty());
  }

  void kernelsFromAnExecution() {
    // fusedInto of a run: 0 and 1 ran in 2's kernel, 4 in 5's, 3 alone; a self-reference is no kernel.
    const std::vector<TaskId> fusedInto{2, 2, 2, -1, 5, 5, 6};
    const std::vector<DeviceId> placement{1, 1, 1, 0, 0, 0, 0};
    const auto ks = kernelsFromFusedInto(fusedInto, placement);
    QCOMPARE(ks.size(), size_t{2});
    QCOMPARE(ks[0].ops, (std::vector<TaskId>{0, 1, 2}));
    QCOMPARE(ks[0].device, 1);
    QCOMPARE(ks[1].ops, (std::vector<TaskId>{4, 5}));
    QCOMPARE(ks[1].device, 0);
    QVERIFY(kernelsFromFusedInto({9, -1}, {0, 0}).empty());  // out of range: ignored
  }

  void planFileRoundTripsFusedKernels() {
    const CostTable& t = p_.table;
    const Plan plan = test::placed(t, core0_, {"relu"}, core1_);
    auto tl = simulate(t, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const PlanIdentity id{"resnet18.onnx", p_.graph.graphSha256, "two-cores-npu"};
    const std::string json = planToJson(t, plan, *tl, id, &p_.graph);
    const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
    const QJsonArray fk = o["fused_kernels"].toArray();
    const auto ks = fusedKernels(p_.graph, t, plan.device, &*tl);
    QCOMPARE(fk.size(), static_cast<qsizetype>(ks.size()));
    const QJsonObject first = fk[0].toObject();
    QCOMPARE(first["device"].toString(), QString("core0"));
    QCOMPARE(first["ops"].toArray(), (QJsonArray{"conv1", "bn1"}));
    QCOMPARE(first["start_us"].toDouble(), std::round(ks[0].startUs * 1000) / 1000);
    QCOMPARE(first["end_us"].toDouble(), std::round(ks[0].endUs * 1000) / 1000);
    // Read back: the same plan, and writing it again gives the same file.
    auto back = readPlan(json, "r.plan.json", t, id);
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(back->device, plan.device);
    QCOMPARE(planToJson(t, *back, *tl, id, &p_.graph), json);
    // Without the graph (task graphs) there is no field; with it and no kernels, an empty array.
    QVERIFY(!QJsonDocument::fromJson(QByteArray::fromStdString(planToJson(t, plan, *tl, id)))
                 .object()
                 .contains("fused_kernels"));
    const QJsonObject onNpu =
        QJsonDocument::fromJson(QByteArray::fromStdString(planToJson(t, test::placed(t, npu_), {}, id, &p_.graph)))
            .object();
    QVERIFY(onNpu["fused_kernels"].isArray());
    QCOMPARE(onNpu["fused_kernels"].toArray().size(), 0);

    // A kernel the plan contradicts: relu is on core1, not on core0 with conv1 and bn1.
    QJsonObject hostile = o;
    QJsonArray edited = fk;
    QJsonObject k0 = edited[0].toObject();
    k0["ops"] = QJsonArray{"conv1", "bn1", "relu"};
    edited[0] = k0;
    hostile["fused_kernels"] = edited;
    auto refused = readPlan(QJsonDocument(hostile).toJson().toStdString(), "r.plan.json", t, id);
    QVERIFY(!refused.isOk());
    QCOMPARE(QString::fromStdString(refused.message()),
             QString("r.plan.json: fused_kernels[0]: operator 'relu' is on 'core1' in the plan, not on 'core0'"));
  }

  void traceHasOneSlicePerKernel() {
    const CostTable& t = p_.table;
    const Plan plan = test::placed(t, core0_);
    auto tl = simulate(t, plan);
    QVERIFY2(tl.isOk(), tl.message().c_str());
    const auto ks = fusedKernels(p_.graph, t, plan.device, &*tl);
    const QJsonObject o =
        QJsonDocument::fromJson(QByteArray::fromStdString(traceJson(t, *tl, "manual", 1, &ks))).object();
    int fusedSlices = 0, nodeSlices = 0;
    std::set<QString> names;
    for (const auto& ev : o["traceEvents"].toArray()) {
      const QJsonObject e = ev.toObject();
      if (e["cat"].toString() != "Node") continue;
      ++nodeSlices;
      names.insert(e["name"].toString());
      const QJsonObject args = e["args"].toObject();
      if (!args.contains("fused_ops")) continue;
      ++fusedSlices;
      if (e["name"].toString() == "conv1") {
        QCOMPARE(args["fused_ops"].toArray(), (QJsonArray{"conv1", "bn1", "relu"}));
        QCOMPARE(args["op_type"].toString(), QString("Conv+BatchNormalization+Relu"));
        QCOMPARE(e["ts"].toDouble(), std::round(ks[0].startUs * 1000) / 1000);
        QCOMPARE(e["dur"].toDouble(), std::round((ks[0].endUs - ks[0].startUs) * 1000) / 1000);
      }
    }
    QCOMPARE(fusedSlices, static_cast<int>(ks.size()));
    size_t members = 0;
    for (const auto& k : ks) members += k.ops.size();
    // One slice per kernel in place of its operators'.
    QCOMPARE(nodeSlices, t.numTasks() - static_cast<int>(members) + static_cast<int>(ks.size()));
    QVERIFY(names.count("conv1") && !names.count("bn1") && !names.count("relu"));
    // Without kernels, every operator has its own slice.
    const QJsonObject plain = QJsonDocument::fromJson(QByteArray::fromStdString(traceJson(t, *tl, "manual"))).object();
    int plainSlices = 0;
    for (const auto& ev : plain["traceEvents"].toArray()) plainSlices += ev.toObject()["cat"].toString() == "Node";
    QCOMPARE(plainSlices, t.numTasks());
  }
};

QTEST_GUILESS_MAIN(TestFusedKernels)
#include "tst_fusedkernels.moc"
