// Plan files: the JSON written for a hand-made plan matches its golden file, reading it back gives
// the same devices and orders, and every malformed plan is refused with one line naming the file.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <filesystem>
#include <functional>

#include "plan/planfile.h"
#include "plan_fixture.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

/// The tiny plan as a Qt JSON object, to mutate into malformed variants.
QJsonObject goodPlanObject() {
  const auto t = test::tinyTable();
  const auto text = planToJson(t, test::tinyPlan(), test::tinyTimeline(), test::tinyIdentity());
  return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
}

QString mutated(const std::function<void(QJsonObject&)>& f) {
  QJsonObject o = goodPlanObject();
  f(o);
  return QString::fromUtf8(QJsonDocument(o).toJson());
}

/// Applies f to operators[i].
std::function<void(QJsonObject&)> editOp(int i, const std::function<void(QJsonObject&)>& f) {
  return [i, f](QJsonObject& o) {
    QJsonArray ops = o["operators"].toArray();
    QJsonObject op = ops[i].toObject();
    f(op);
    ops[i] = op;
    o["operators"] = ops;
  };
}

}  // namespace

class TestPlanFile : public QObject {
  Q_OBJECT
 private slots:
  void writesGoldenJson();
  void roundTripKeepsDevicesAndOrders();
  void orderGapsAreAccepted();
  void emptyHashSkipsModelCheck();
  void withoutTimelineTimesAreLeftOut();
  void malformedPlansAreRefused_data();
  void malformedPlansAreRefused();
  void saveAndLoadFile();
  void saveIntoMissingDirectoryFails();
  void simulatedPlanRoundTrips();
  void fusedKernelsAreReadAndIgnored();
  void replicasRoundTrip();
  void replicasFuzzed();
};

void TestPlanFile::fusedKernelsAreReadAndIgnored() {
  const auto t = test::tinyTable();
  // A file that names a kernel its placement allows, or null, or none: the same plan.
  for (const QJsonValue& ks : {QJsonValue(QJsonArray{QJsonObject{
                                   {"device", "npu"}, {"ops", QJsonArray{"input_conv", "branch_a"}}, {"note", 1}}}),
                               QJsonValue(QJsonValue::Null), QJsonValue(QJsonArray{})}) {
    const QString text = mutated([&ks](QJsonObject& o) { o["fused_kernels"] = ks; });
    auto back = readPlan(text.toStdString(), "plan.json", t, test::tinyIdentity());
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(back->device, test::tinyPlan().device);
    QCOMPARE(back->order, test::tinyPlan().order);
  }
  // A task graph's plan (no model graph) has no field.
  QVERIFY(!goodPlanObject().contains("fused_kernels"));
}

// Replicas (sim/plan.h): written as one object per replica naming the devices it renames; read back
// to the same maps; a plan without them has no field and reads as one replica.
void TestPlanFile::replicasRoundTrip() {
  const auto t = test::tinyTable();
  Plan p = test::tinyPlan();
  QVERIFY(!goodPlanObject().contains("replicas"));
  QCOMPARE(replicaCount(p), 1);
  // Replica 1 swaps the cpu's and the gpu's operators (relu1 and concat on the gpu, branch_b on the cpu);
  // replica 2 is the plan again (the identity: an empty object).
  p.replicas = {{1, 0, 2}, {0, 1, 2}};
  QVERIFY2(checkPlanShape(t, p).isOk(), checkPlanShape(t, p).message().c_str());
  const std::string text = planToJson(t, p, test::tinyTimeline(), test::tinyIdentity());
  const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
  const QJsonArray reps = o["replicas"].toArray();
  QCOMPARE(reps.size(), 2);
  QCOMPARE(reps[0].toObject(), (QJsonObject{{"cpu", "gpu"}, {"gpu", "cpu"}}));
  QCOMPARE(reps[1].toObject(), QJsonObject{});
  auto back = readPlan(text, "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->replicas, p.replicas);
  QCOMPARE(back->device, p.device);
  QCOMPARE(replicaCount(*back), 3);
  // Replica 1 as a plan of its own: relu1 and concat on the gpu in the cpu's order, branch_b on the cpu.
  const Plan r1 = replicaPlan(*back, 1);
  QCOMPARE(r1.device, (std::vector<DeviceId>{2, 1, 2, 0, 1}));
  QCOMPARE(r1.order, (std::vector<std::vector<TaskId>>{{3}, {1, 4}, {0, 2}}));
  QVERIFY(r1.replicas.empty());
  // A field of null is no replicas.
  const QString nullReps = mutated([](QJsonObject& x) { x["replicas"] = QJsonValue::Null; });
  auto none = readPlan(nullReps.toStdString(), "plan.json", t, test::tinyIdentity());
  QVERIFY2(none.isOk(), none.message().c_str());
  QVERIFY(none->replicas.empty());
}

// A plan with replicas, truncated at every length and with bytes of its replicas replaced: read or
// refused with one line naming the file, never a crash.
void TestPlanFile::replicasFuzzed() {
  const auto t = test::tinyTable();
  Plan p = test::tinyPlan();
  p.replicas = {{1, 0, 2}, {0, 1, 2}};
  const std::string text = planToJson(t, p, Timeline{}, test::tinyIdentity());
  const size_t at = text.find("\"replicas\"");
  QVERIFY(at != std::string::npos);
  auto check = [&](const std::string& s) {
    auto r = readPlan(s, "fuzz.json", t, test::tinyIdentity());
    if (r.isOk()) return;
    const QString msg = QString::fromStdString(r.message());
    QVERIFY2(msg.startsWith("fuzz.json: ") && !msg.contains('\n'), qPrintable(msg));
  };
  int refused = 0;
  for (size_t n = at; n < text.size(); ++n) {
    check(text.substr(0, n));
    if (!readPlan(text.substr(0, n), "fuzz.json", t, test::tinyIdentity()).isOk()) ++refused;
  }
  QVERIFY(refused > 0);
  for (size_t i = at; i < std::min(text.size(), at + 120); ++i)
    for (char c : {'"', '{', '}', '[', ']', ':', ',', '0', 'x', '\\', ' '}) {
      std::string s = text;
      s[i] = c;
      check(s);
    }
}

void TestPlanFile::writesGoldenJson() {
  const auto t = test::tinyTable();
  const auto json = planToJson(t, test::tinyPlan(), test::tinyTimeline(), test::tinyIdentity());
  PARTEX_COMPARE_GOLDEN("tiny.plan.expected.json", json);
  // The file names the model by its base name and hash.
  QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
  QCOMPARE(o["format"].toString(), QString("partex-plan"));
  QCOMPARE(o["version"].toInt(), 1);
  QCOMPARE(o["model"].toObject()["file"].toString(), QString("tiny.onnx"));
  QCOMPARE(o["model"].toObject()["operators"].toInt(), 5);
  QCOMPARE(o["makespan_us"].toDouble(), 8.0);
  QCOMPARE(o["operators"].toArray().size(), 5);
  QCOMPARE(o["transfers"].toArray().size(), 6);
  QVERIFY(o["transfers"].toArray()[0].toObject()["src"].isNull());  // model input from the host
}

void TestPlanFile::roundTripKeepsDevicesAndOrders() {
  const auto t = test::tinyTable();
  const auto plan = test::tinyPlan();
  const auto json = planToJson(t, plan, test::tinyTimeline(), test::tinyIdentity());
  auto back = readPlan(json, "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->device, plan.device);
  QCOMPARE(back->order, plan.order);
  QCOMPARE(back->algorithm, plan.algorithm);
  QCOMPARE(back->optionsJson, plan.optionsJson);
  // Writing the plan read back gives the same file.
  QCOMPARE(planToJson(t, *back, test::tinyTimeline(), test::tinyIdentity()), json);
}

void TestPlanFile::orderGapsAreAccepted() {
  const auto t = test::tinyTable();
  // concat at order 7 and relu1 at 3 on the cpu: gaps are fine, the relative order counts.
  QString text = mutated([](QJsonObject& o) {
    editOp(1, [](QJsonObject& op) { op["order"] = 3; })(o);
    editOp(4, [](QJsonObject& op) { op["order"] = 7; })(o);
  });
  auto back = readPlan(text.toStdString(), "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->order, test::tinyPlan().order);
}

void TestPlanFile::emptyHashSkipsModelCheck() {
  const auto t = test::tinyTable();
  // A task graph has no hash: any plan whose operators match is accepted.
  PlanIdentity taskGraph{"tiny.json", "", ""};
  const auto json = planToJson(t, test::tinyPlan(), test::tinyTimeline(), taskGraph);
  auto back = readPlan(json, "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  auto back2 = readPlan(planToJson(t, test::tinyPlan(), {}, test::tinyIdentity()), "plan.json", t, taskGraph);
  QVERIFY2(back2.isOk(), back2.message().c_str());
}

void TestPlanFile::withoutTimelineTimesAreLeftOut() {
  const auto t = test::tinyTable();
  const auto json = planToJson(t, test::tinyPlan(), Timeline{}, test::tinyIdentity());
  QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
  QVERIFY(o["makespan_us"].isNull());
  QVERIFY(!o["operators"].toArray()[0].toObject().contains("start_us"));
  QCOMPARE(o["transfers"].toArray().size(), 0);
  auto back = readPlan(json, "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->order, test::tinyPlan().order);
}

void TestPlanFile::malformedPlansAreRefused_data() {
  QTest::addColumn<QString>("json");
  QTest::addColumn<QString>("expected");  // a substring of the one-line message

  const QString good = QString::fromUtf8(QJsonDocument(goodPlanObject()).toJson());
  QTest::newRow("bad JSON") << good.left(good.size() / 2) << "bad-plan.json: not valid JSON at line ";
  QTest::newRow("empty file") << QString() << "bad-plan.json: not valid JSON";
  QTest::newRow("not an object") << "[1, 2]"
                                 << "bad-plan.json: not a Partex plan file (a JSON array";
  QTest::newRow("no format") << mutated([](QJsonObject& o) { o.remove("format"); })
                             << "bad-plan.json: not a Partex plan file (no \"format\"";
  QTest::newRow("wrong format") << mutated([](QJsonObject& o) { o["format"] = "onnx-profile"; })
                                << "bad-plan.json: not a Partex plan file (format is 'onnx-profile'";
  QTest::newRow("newer version") << mutated([](QJsonObject& o) { o["version"] = 2; })
                                 << "bad-plan.json: plan format version 2 is newer than this Partex reads";
  QTest::newRow("version not a number") << mutated([](QJsonObject& o) { o["version"] = "1"; })
                                        << "bad-plan.json: field 'version' must be a positive integer";
  QTest::newRow("other model")
      << mutated([](QJsonObject& o) {
           QJsonObject m = o["model"].toObject();
           m["file"] = "mobilenet.onnx";
           m["sha256"] = "ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00";
           o["model"] = m;
         })
      << "bad-plan.json: plan is for model mobilenet.onnx (sha256 ff00ff00ff00...), not for tiny.onnx (sha256 "
         "ab12cd34ef56...)";
  QTest::newRow("no operators") << mutated([](QJsonObject& o) { o.remove("operators"); })
                                << "bad-plan.json: field 'operators' must be an array";
  QTest::newRow("missing operator") << mutated([](QJsonObject& o) {
    QJsonArray ops = o["operators"].toArray();
    ops.removeAt(1);
    o["operators"] = ops;
  }) << "bad-plan.json: operator 'relu1' of tiny.onnx is missing from the plan";
  QTest::newRow("two missing") << mutated([](QJsonObject& o) {
    QJsonArray ops = o["operators"].toArray();
    ops.removeAt(3);
    ops.removeAt(1);
    o["operators"] = ops;
  }) << "bad-plan.json: operator 'relu1' of tiny.onnx is missing from the plan (and 1 more)";
  QTest::newRow("unknown operator") << mutated(editOp(0, [](QJsonObject& op) { op["name"] = "ghost"; }))
                                    << "bad-plan.json: operator 'ghost' is not in tiny.onnx";
  QTest::newRow("duplicate operator") << mutated([](QJsonObject& o) {
    QJsonArray ops = o["operators"].toArray();
    ops.append(ops[0]);
    o["operators"] = ops;
  }) << "bad-plan.json: operator 'input_conv' appears twice (operators[0] and operators[5])";
  QTest::newRow("other op type") << mutated(editOp(0, [](QJsonObject& op) {
    op["op_type"] = "Relu";
  })) << "bad-plan.json: operator 'input_conv' is a Relu in the plan but a Conv in tiny.onnx";
  QTest::newRow("unknown device") << mutated(editOp(1, [](QJsonObject& op) { op["device"] = "tpu"; }))
                                  << "bad-plan.json: operator 'relu1': unknown device 'tpu' (devices: cpu, gpu, npu)";
  QTest::newRow("device not a string") << mutated(editOp(1, [](QJsonObject& op) { op["device"] = 2; }))
                                       << "bad-plan.json: operator 'relu1': field 'device' must be a string";
  QTest::newRow("device cannot run it") << mutated(editOp(1, [](QJsonObject& op) { op["device"] = "npu"; }))
                                        << "bad-plan.json: operator 'relu1' (Relu) cannot run on 'npu'";
  QTest::newRow("negative order") << mutated(editOp(1, [](QJsonObject& op) { op["order"] = -1; }))
                                  << "bad-plan.json: operator 'relu1': field 'order' must be a non-negative integer";
  QTest::newRow("fractional order") << mutated(editOp(1, [](QJsonObject& op) { op["order"] = 0.5; }))
                                    << "bad-plan.json: operator 'relu1': field 'order' must be a non-negative integer";
  QTest::newRow("duplicate order") << mutated(editOp(4, [](QJsonObject& op) {
    op["order"] = 0;
  })) << "bad-plan.json: operators 'relu1' and 'concat,\"out\"' both have order 0 on 'cpu'";
  QTest::newRow("order before dependency")
      << mutated([](QJsonObject& o) {
           editOp(0, [](QJsonObject& op) { op["order"] = 1; })(o);  // input_conv after branch_a on the npu
           editOp(2, [](QJsonObject& op) { op["order"] = 0; })(o);
         })
      << "bad-plan.json: on 'npu', operator 'branch_a' (order 0) comes before 'input_conv' (order 1), which it "
         "depends on";
  QTest::newRow("orders deadlock across devices") << mutated([](QJsonObject& o) {
    editOp(1, [](QJsonObject& op) { op["order"] = 1; })(o);  // concat before relu1 on the cpu
    editOp(4, [](QJsonObject& op) { op["order"] = 0; })(o);
  }) << "bad-plan.json: the device orders deadlock: each of these operators must run before the next: ";

  // fused_kernels: informational, but validated against the model and the plan's placement.
  auto kernels = [](QJsonArray ks) { return mutated([ks](QJsonObject& o) { o["fused_kernels"] = ks; }); };
  const QJsonObject good1{{"device", "npu"}, {"ops", QJsonArray{"input_conv", "branch_a"}}};
  QTest::newRow("fused_kernels not an array") << mutated([](QJsonObject& o) { o["fused_kernels"] = 5; })
                                              << "bad-plan.json: field 'fused_kernels' must be an array";
  QTest::newRow("fused kernel not an object")
      << kernels({good1, 7}) << "bad-plan.json: fused_kernels[1] must be an object";
  QTest::newRow("fused kernel without device") << kernels({QJsonObject{{"ops", QJsonArray{"input_conv", "branch_a"}}}})
                                               << "bad-plan.json: fused_kernels[0]: field 'device' must be a string";
  QTest::newRow("fused kernel on an unknown device")
      << kernels({QJsonObject{{"device", "tpu\nx"}, {"ops", QJsonArray{"input_conv", "branch_a"}}}})
      << "bad-plan.json: fused_kernels[0]: unknown device 'tpu";
  QTest::newRow("fused kernel of one operator")
      << kernels({QJsonObject{{"device", "npu"}, {"ops", QJsonArray{"input_conv"}}}})
      << "bad-plan.json: fused_kernels[0]: field 'ops' must be an array of at least two operator names";
  QTest::newRow("fused kernel ops not an array") << kernels({QJsonObject{{"device", "npu"}, {"ops", "input_conv"}}})
                                                 << "bad-plan.json: fused_kernels[0]: field 'ops' must be an array";
  QTest::newRow("fused kernel op not a name")
      << kernels({QJsonObject{{"device", "npu"}, {"ops", QJsonArray{"input_conv", 3}}}})
      << "bad-plan.json: fused_kernels[0]: field 'ops' must hold operator names (strings)";
  QTest::newRow("fused kernel of an unknown operator")
      << kernels({QJsonObject{{"device", "npu"}, {"ops", QJsonArray{"input_conv", "ghost"}}}})
      << "bad-plan.json: fused_kernels[0]: operator 'ghost' is not in tiny.onnx";
  QTest::newRow("operator in two fused kernels")
      << kernels({good1, QJsonObject{{"device", "npu"}, {"ops", QJsonArray{"branch_a", "input_conv"}}}})
      << "bad-plan.json: fused_kernels[1]: operator 'branch_a' is already in fused_kernels[0]";
  QTest::newRow("fused kernel the placement contradicts")
      << kernels({QJsonObject{{"device", "cpu"}, {"ops", QJsonArray{"relu1", "branch_b"}}}})
      << "bad-plan.json: fused_kernels[0]: operator 'branch_b' is on 'gpu' in the plan, not on 'cpu'";

  // replicas: one object per replica, from devices of the plan to the devices that replica runs them on.
  auto replicas = [](QJsonArray rs) { return mutated([rs](QJsonObject& o) { o["replicas"] = rs; }); };
  QTest::newRow("replicas not an array") << mutated([](QJsonObject& o) { o["replicas"] = 5; })
                                         << "bad-plan.json: field 'replicas' must be an array of objects";
  QTest::newRow("replica not an object") << replicas({7}) << "bad-plan.json: replicas[0] must be an object";
  QTest::newRow("replica of an unknown device")
      << replicas({QJsonObject{}, QJsonObject{{"tpu", "cpu"}}}) << "bad-plan.json: replicas[1]: unknown device 'tpu'";
  QTest::newRow("replica onto an unknown device")
      << replicas({QJsonObject{{"cpu", "tpu"}}}) << "bad-plan.json: replicas[0]: unknown device 'tpu'";
  QTest::newRow("replica device not a string")
      << replicas({QJsonObject{{"cpu", 1}}})
      << "bad-plan.json: replicas[0]: device 'cpu' must map to a device name (a string), not a number";
  QTest::newRow("replica puts two devices on one")
      << replicas({QJsonObject{{"cpu", "gpu"}}})
      << "bad-plan.json: replicas[0] runs the operators of both 'cpu' and 'gpu' on 'gpu'";
  QTest::newRow("replica device cannot run an operator")
      << replicas({QJsonObject{{"cpu", "npu"}, {"npu", "cpu"}}})
      << "bad-plan.json: replicas[0]: operator 'relu1' (Relu) cannot run on 'npu'";
  QJsonArray many;
  for (int i = 0; i < kMaxReplicas; ++i) many.append(QJsonObject{});
  QTest::newRow("too many replicas") << replicas(many)
                                     << "bad-plan.json: field 'replicas' lists 64 replicas besides the plan, at most 63";
}

void TestPlanFile::malformedPlansAreRefused() {
  QFETCH(QString, json);
  QFETCH(QString, expected);
  const auto t = test::tinyTable();
  auto r = readPlan(json.toStdString(), "bad-plan.json", t, test::tinyIdentity());
  QVERIFY2(!r.isOk(), "a malformed plan was accepted");
  const QString msg = QString::fromStdString(r.message());
  QVERIFY2(msg.startsWith("bad-plan.json: "), qPrintable(msg));
  QVERIFY2(!msg.contains('\n') && !msg.contains('\r'), qPrintable("not one line: " + msg));
  QVERIFY2(msg.contains(expected), qPrintable("got: " + msg + "\nexpected to contain: " + expected));
}

void TestPlanFile::saveAndLoadFile() {
  const auto t = test::tinyTable();
  const std::string path = test::tempDir() + "/saved.plan.json";
  auto st = savePlan(path, t, test::tinyPlan(), test::tinyTimeline(), test::tinyIdentity());
  QVERIFY2(st.isOk(), st.message().c_str());
  auto text = readFile(path);
  QVERIFY(text.isOk());
  QCOMPARE(*text, planToJson(t, test::tinyPlan(), test::tinyTimeline(), test::tinyIdentity()));
  auto back = loadPlanFile(path, t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->order, test::tinyPlan().order);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::tempDir()))
    if (e.path().filename().string().find("saved.plan.json") != std::string::npos) ++files;
  QCOMPARE(files, 1);

  auto missing = loadPlanFile(test::tempDir() + "/nope.json", t, test::tinyIdentity());
  QVERIFY(!missing.isOk());
  QVERIFY2(QString::fromStdString(missing.message()).contains("nope.json"), missing.message().c_str());
}

void TestPlanFile::saveIntoMissingDirectoryFails() {
  const auto t = test::tinyTable();
  const std::string path = test::tempDir() + "/no/such/dir/plan.json";
  auto st = savePlan(path, t, test::tinyPlan(), test::tinyTimeline(), test::tinyIdentity());
  QVERIFY(!st.isOk());
  QVERIFY2(QString::fromStdString(st.message()).contains("plan.json"), st.message().c_str());
  QVERIFY(!std::filesystem::exists(path));
}

void TestPlanFile::simulatedPlanRoundTrips() {
  // With the real simulator: the plan read back simulates to the same timeline.
  const auto t = test::tinyTable();
  auto tl = simulate(t, test::tinyPlan());
  QVERIFY2(tl.isOk(), tl.message().c_str());
  const auto json = planToJson(t, test::tinyPlan(), *tl, test::tinyIdentity());
  auto back = readPlan(json, "plan.json", t, test::tinyIdentity());
  QVERIFY2(back.isOk(), back.message().c_str());
  auto tl2 = simulate(t, *back);
  QVERIFY2(tl2.isOk(), tl2.message().c_str());
  QCOMPARE(tl2->makespan, tl->makespan);
  QCOMPARE(planToJson(t, *back, *tl2, test::tinyIdentity()), json);
}

QTEST_GUILESS_MAIN(TestPlanFile)
#include "tst_planfile.moc"
