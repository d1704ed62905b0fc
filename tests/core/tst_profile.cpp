// Profile files: round trip, validation with errors naming the file, statistics, and applying a
// profile to a cost table (provenance, stale-hash refusal, unknown devices, groups, transfers).
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <functional>

#include "plan_fixture.h"
#include "profile/profile.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

const char* kSha = "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12";

TimingStat stat(double median, int reps = 5) {
  return TimingStat{median, median * 0.01, median * 0.9, median * 1.2, reps};
}

/// A profile of the tiny fixture: every operator on cpu, two on gpu, one group, one transfer pair.
Profile tinyProfile() {
  Profile p;
  p.modelFile = "tiny.onnx";
  p.modelSha256 = kSha;
  p.backendName = "cpu";
  p.backendVersion = "test-1";
  p.source = "test";
  p.method = "per-operator";
  p.measuredAt = "2026-11-22T10:00:00Z";
  p.machine = "test machine";
  p.warmup = 2;
  p.reps = 5;
  p.seed = 7;
  ProfileDevice& cpu = p.device("cpu");
  cpu.ops = {{"input_conv", "Conv", stat(100)},
             {"relu1", "Relu", stat(20)},
             {"branch_a", "MatMul", stat(50)},
             {"branch_b", "Gemm", stat(60)},
             {"concat,\"out\"", "Concat", stat(5)}};
  cpu.groups = {{{"input_conv", "relu1"}, stat(110)}};
  cpu.speedProbeUs = 40;
  ProfileDevice& gpu = p.device("gpu");
  gpu.ops = {{"input_conv", "Conv", stat(30)}, {"branch_a", "MatMul", stat(12)}};
  p.transfers = {{"cpu", "gpu", {{1024, stat(2)}, {1024 * 1024, stat(101)}}}};
  return p;
}

QJsonObject goodObject() {
  return QJsonDocument::fromJson(QByteArray::fromStdString(profileToJson(tinyProfile()))).object();
}

QString mutated(const std::function<void(QJsonObject&)>& f) {
  QJsonObject o = goodObject();
  f(o);
  return QString::fromUtf8(QJsonDocument(o).toJson());
}

/// Edits devices[0].ops[0].
std::function<void(QJsonObject&)> editFirstOp(const std::function<void(QJsonObject&)>& f) {
  return [f](QJsonObject& o) {
    QJsonArray devs = o["devices"].toArray();
    QJsonObject d = devs[0].toObject();
    QJsonArray ops = d["ops"].toArray();
    QJsonObject op = ops[0].toObject();
    f(op);
    ops[0] = op;
    d["ops"] = ops;
    devs[0] = d;
    o["devices"] = devs;
  };
}

ApplyOptions opts(const std::string& sha = kSha) {
  ApplyOptions o;
  o.modelSha256 = sha;
  o.modelFile = "tiny.onnx";
  o.origin = "tiny.profile.json";
  return o;
}

}  // namespace

class TestProfile : public QObject {
  Q_OBJECT
 private slots:
  void summariseGivesMedianAndSpread_data();
  void summariseGivesMedianAndSpread();
  void roundTripKeepsEverything();
  void malformedProfilesAreRefused_data();
  void malformedProfilesAreRefused();
  void missingFileNamesTheFile();
  void saveIntoMissingDirectoryFails();
  void applyingSetsCostsAndProvenance();
  void costSourceRuleOfTheFrontEnds();
  void importedProfilesGiveImportedProvenance();
  void measuredFarFromModelIsNoted_data();
  void measuredFarFromModelIsNoted();
  void staleHashIsRefused();
  void matchByNameIgnoresHash();
  void unknownDeviceIsRefused();
  void unmatchedAndUnprofiledAreReported();
  void groupCostsComeFromTheProfile();
  void transferFit_data();
  void transferFit();
  void transfersReplaceTheLinkModel();
  void predictionAtRunSpeed();
};

void TestProfile::summariseGivesMedianAndSpread_data() {
  QTest::addColumn<QList<double>>("samples");
  QTest::addColumn<double>("median");
  QTest::addColumn<double>("spread");
  QTest::addColumn<double>("minimum");
  QTest::addColumn<double>("maximum");
  QTest::newRow("one") << QList<double>{4.0} << 4.0 << 0.0 << 4.0 << 4.0;
  QTest::newRow("odd, unsorted") << QList<double>{9.0, 1.0, 5.0} << 5.0 << 4.0 << 1.0 << 9.0;
  QTest::newRow("even") << QList<double>{1.0, 2.0, 3.0, 10.0} << 2.5 << 1.0 << 1.0 << 10.0;
  QTest::newRow("outlier does not move it") << QList<double>{10, 10, 11, 10, 1000} << 10.0 << 0.0 << 10.0 << 1000.0;
}

void TestProfile::summariseGivesMedianAndSpread() {
  QFETCH(QList<double>, samples);
  QFETCH(double, median);
  QFETCH(double, spread);
  QFETCH(double, minimum);
  QFETCH(double, maximum);
  const auto s = summarise(std::vector<double>(samples.begin(), samples.end()));
  QCOMPARE(s.medianUs, median);
  QCOMPARE(s.spreadUs, spread);
  QCOMPARE(s.minUs, minimum);
  QCOMPARE(s.maxUs, maximum);
  QCOMPARE(s.reps, static_cast<int>(samples.size()));
}

void TestProfile::roundTripKeepsEverything() {
  const Profile p = tinyProfile();
  const std::string text = profileToJson(p);
  auto back = parseProfile(text, "rt.json");
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->modelSha256, p.modelSha256);
  QCOMPARE(back->modelFile, p.modelFile);
  QCOMPARE(back->backendName, p.backendName);
  QCOMPARE(back->backendVersion, p.backendVersion);
  QCOMPARE(back->measuredAt, p.measuredAt);
  QCOMPARE(back->machine, p.machine);
  QCOMPARE(back->reps, 5);
  QCOMPARE(back->warmup, 2);
  QCOMPARE(back->seed, uint64_t{7});
  QCOMPARE(back->devices.size(), size_t{2});
  QCOMPARE(back->devices[0].ops.size(), size_t{5});
  QCOMPARE(back->devices[0].ops[4].name, std::string("concat,\"out\""));
  QCOMPARE(back->devices[0].ops[0].time.medianUs, 100.0);
  QCOMPARE(back->devices[0].ops[0].time.maxUs, 120.0);
  QCOMPARE(back->devices[0].groups.size(), size_t{1});
  QCOMPARE(back->devices[0].groups[0].ops, (std::vector<std::string>{"input_conv", "relu1"}));
  QCOMPARE(back->transfers.size(), size_t{1});
  QCOMPARE(back->transfers[0].samples[1].bytes, int64_t{1024 * 1024});
  QCOMPARE(back->devices[0].speedProbeUs, 40.0);
  QCOMPARE(back->devices[1].speedProbeUs, 0.0);  // not probed: no field, read back as unknown
  // Writing what was read gives the same text.
  QCOMPARE(profileToJson(*back), text);
  // And through a file.
  const std::string path = test::tempDir() + "/rt.profile.json";
  QVERIFY(saveProfile(path, p).isOk());
  auto loaded = loadProfileFile(path);
  QVERIFY2(loaded.isOk(), loaded.message().c_str());
  QCOMPARE(profileToJson(*loaded), text);
}

void TestProfile::malformedProfilesAreRefused_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("reason");
  QTest::newRow("not json") << "{ nope"
                            << "not valid JSON";
  QTest::newRow("array") << "[1,2]"
                         << "must be a JSON object";
  QTest::newRow("plan file") << mutated([](QJsonObject& o) { o["format"] = "partex-plan"; })
                             << "expected 'partex-profile'";
  QTest::newRow("future version") << mutated([](QJsonObject& o) { o["version"] = 9; }) << "version 9 is not supported";
  QTest::newRow("no model") << mutated([](QJsonObject& o) { o.remove("model"); }) << "missing field 'model'";
  QTest::newRow("no backend name") << mutated([](QJsonObject& o) {
    o["backend"] = QJsonObject{{"version", "1"}};
  }) << "missing field 'name'";
  QTest::newRow("no devices") << mutated([](QJsonObject& o) { o.remove("devices"); }) << "missing field 'devices'";
  QTest::newRow("devices not array") << mutated([](QJsonObject& o) { o["devices"] = 3; })
                                     << "'devices' must be an array";
  QTest::newRow("duplicate device") << mutated([](QJsonObject& o) {
    QJsonArray d = o["devices"].toArray();
    d.append(d[0]);
    o["devices"] = d;
  }) << "device 'cpu' appears twice";
  QTest::newRow("no median") << mutated(editFirstOp([](QJsonObject& op) { op.remove("median_us"); }))
                             << "device 'cpu': operator 'input_conv': missing field 'median_us'";
  QTest::newRow("negative time") << mutated(editFirstOp([](QJsonObject& op) { op["median_us"] = -1; }))
                                 << "'median_us' must be a finite number >= 0";
  QTest::newRow("string time") << mutated(editFirstOp([](QJsonObject& op) { op["median_us"] = "fast"; }))
                               << "'median_us' must be a number";
  QTest::newRow("negative speed probe") << mutated([](QJsonObject& o) {
    QJsonArray d = o["devices"].toArray();
    QJsonObject cpu = d[0].toObject();
    cpu["speed_probe_us"] = -3;
    d[0] = cpu;
    o["devices"] = d;
  }) << "'speed_probe_us' must be a non-negative number";
  QTest::newRow("min above median") << mutated(editFirstOp([](QJsonObject& op) { op["min_us"] = 1000; }))
                                    << "min_us <= median_us <= max_us";
  QTest::newRow("no op name") << mutated(editFirstOp([](QJsonObject& op) { op.remove("name"); }))
                              << "ops[0]: missing field 'name'";
  QTest::newRow("same pair") << mutated([](QJsonObject& o) {
    QJsonArray t = o["transfers"].toArray();
    QJsonObject x = t[0].toObject();
    x["to"] = "cpu";
    t[0] = x;
    o["transfers"] = t;
  }) << "are the same device";
  QTest::newRow("one-op group") << mutated([](QJsonObject& o) {
    QJsonArray devs = o["devices"].toArray();
    QJsonObject d = devs[0].toObject();
    d["groups"] = QJsonArray{QJsonObject{{"ops", QJsonArray{"relu1"}}, {"median_us", 1}}};
    devs[0] = d;
    o["devices"] = devs;
  }) << "at least two operator names";
}

void TestProfile::malformedProfilesAreRefused() {
  QFETCH(QString, text);
  QFETCH(QString, reason);
  auto r = parseProfile(text.toStdString(), "bad.profile.json");
  QVERIFY(!r.isOk());
  const QString msg = QString::fromStdString(r.message());
  QVERIFY2(msg.startsWith("bad.profile.json: "), qPrintable(msg));
  QVERIFY2(msg.contains(reason), qPrintable(msg));
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
}

void TestProfile::missingFileNamesTheFile() {
  const std::string path = test::tempDir() + "/absent.profile.json";
  auto r = loadProfileFile(path);
  QVERIFY(!r.isOk());
  QVERIFY2(QString::fromStdString(r.message()).contains("absent.profile.json"), r.message().c_str());
}

void TestProfile::saveIntoMissingDirectoryFails() {
  auto st = saveProfile(test::tempDir() + "/no/such/dir/p.json", tinyProfile());
  QVERIFY(!st.isOk());
  QVERIFY2(QString::fromStdString(st.message()).contains("p.json"), st.message().c_str());
}

void TestProfile::costSourceRuleOfTheFrontEnds() {
  // A Partex profile is matched by hash: of another model it is refused, naming the file.
  CostTable t = test::tinyTable();
  auto other = applyCostSource(t, tinyProfile(), false, "tiny.onnx", "ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000",
                               "tiny.profile.json");
  QVERIFY(!other.isOk());
  QVERIFY2(QString::fromStdString(other.message()).contains("tiny.profile.json"), other.message().c_str());
  // An ONNX Runtime import is matched by name whatever the hash.
  CostTable t2 = test::tinyTable();
  auto ort = applyCostSource(t2, tinyProfile(), true, "tiny.onnx", "ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000",
                             "ort.json");
  QVERIFY2(ort.isOk(), ort.message().c_str());
  QCOMPARE(ort->opsApplied, 7);
  // A source whose operators the model does not have changes nothing, and is refused.
  Profile none = tinyProfile();
  for (auto& d : none.devices)
    for (auto& op : d.ops) op.name = "not_" + op.name;
  for (auto& d : none.devices) d.groups.clear();
  none.transfers.clear();
  CostTable t3 = test::tinyTable();
  auto r = applyCostSource(t3, none, true, "tiny.onnx", kSha, "elsewhere.json");
  QVERIFY(!r.isOk());
  QVERIFY2(QString::fromStdString(r.message()).contains("elsewhere.json: none of its 7 operator times"), r.message().c_str());
}

void TestProfile::applyingSetsCostsAndProvenance() {
  CostTable t = test::tinyTable();
  auto r = applyProfile(t, tinyProfile(), opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->opsApplied, 7);
  QCOMPARE(t.w(0, 0), 100.0);
  QCOMPARE(t.w(0, 1), 30.0);
  QCOMPARE(t.w(2, 1), 12.0);
  QCOMPARE(t.provenance[0 * 3 + 0], Provenance::Measured);
  QCOMPARE(t.provenance[4 * 3 + 0], Provenance::Measured);  // was Imported: the newer measurement wins
  // Not profiled: unchanged cost and provenance.
  QCOMPARE(t.w(1, 1), 1.0);
  QCOMPARE(t.provenance[1 * 3 + 1], Provenance::Modelled);
  QCOMPARE(t.w(0, 2), 2.0);
  QCOMPARE(t.provenance[0 * 3 + 2], Provenance::Modelled);
}

void TestProfile::measuredFarFromModelIsNoted_data() {
  QTest::addColumn<double>("factor");
  QTest::addColumn<bool>("noted");
  QTest::newRow("5x the model") << 5.0 << true;
  QTest::newRow("a fifth of the model") << 0.2 << true;
  QTest::newRow("close to the model") << 1.2 << false;
}

void TestProfile::measuredFarFromModelIsNoted() {
  // Only cpu is profiled: gpu and the third device keep modelled costs, which schedulers then compare
  // with measured ones. Far from the model, the report says so and names them.
  QFETCH(double, factor);
  QFETCH(bool, noted);
  CostTable t = test::tinyTable();
  Profile p = tinyProfile();
  p.transfers.clear();
  p.devices.resize(1);
  p.devices[0].groups.clear();
  for (auto& op : p.devices[0].ops) {
    const auto v = static_cast<TaskId>(
        std::find(t.taskNames.begin(), t.taskNames.end(), op.name) - t.taskNames.begin());
    QVERIFY(v < t.numTasks());
    op.time = stat(t.w(v, 0) * factor);
  }
  auto r = applyProfile(t, p, opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  std::string note;
  for (const auto& n : r->notes)
    if (n.find("the modelled ones") != std::string::npos) note = n;
  QCOMPARE(!note.empty(), noted);
  if (noted) {
    QVERIFY2(note.find("on cpu") != std::string::npos, note.c_str());
    QVERIFY2(note.find(t.deviceIds[1]) != std::string::npos && note.find(t.deviceIds[2]) != std::string::npos,
             note.c_str());
    QVERIFY2(note.find(factor > 1 ? "5x" : "0.2x") != std::string::npos, note.c_str());
  }
}

void TestProfile::importedProfilesGiveImportedProvenance() {
  CostTable t = test::tinyTable();
  Profile p = tinyProfile();
  p.imported = true;
  p.modelSha256.clear();
  auto o = opts();
  o.matchByName = true;
  auto r = applyProfile(t, p, o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(t.provenance[0 * 3 + 0], Provenance::Imported);
  QCOMPARE(t.provenance[2 * 3 + 1], Provenance::Imported);
}

void TestProfile::staleHashIsRefused() {
  CostTable t = test::tinyTable();
  const std::vector<double> before = t.cost;
  auto r = applyProfile(t, tinyProfile(), opts("ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000ffff0000"));
  QVERIFY(!r.isOk());
  const QString msg = QString::fromStdString(r.message());
  QVERIFY2(msg.startsWith("tiny.profile.json: profile is for model tiny.onnx (sha256 ab12cd34ef56...)"),
           qPrintable(msg));
  QVERIFY2(msg.contains("ffff0000ffff..."), qPrintable(msg));
  QCOMPARE(t.cost, before);  // Nothing applied.
}

void TestProfile::matchByNameIgnoresHash() {
  CostTable t = test::tinyTable();
  auto o = opts("ffff");
  o.matchByName = true;
  auto r = applyProfile(t, tinyProfile(), o);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(t.w(0, 0), 100.0);
}

void TestProfile::unknownDeviceIsRefused() {
  CostTable t = test::tinyTable();
  Profile p = tinyProfile();
  p.device("dsp").ops = {{"relu1", "Relu", stat(3)}};
  auto r = applyProfile(t, p, opts());
  QVERIFY(!r.isOk());
  QVERIFY2(QString::fromStdString(r.message()).contains("device 'dsp' is not on the platform (devices: cpu, gpu, npu)"),
           r.message().c_str());
}

void TestProfile::unmatchedAndUnprofiledAreReported() {
  CostTable t = test::tinyTable();
  Profile p = tinyProfile();
  p.devices[1].ops.push_back({"ghost", "Relu", stat(1)});
  p.devices[1].ops.push_back({"relu1", "Sigmoid", stat(1)});
  auto r = applyProfile(t, p, opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->unmatchedProfileOps, std::vector<std::string>{"ghost"});
  // gpu lacks branch_b and concat.
  QCOMPARE(r->unprofiledOps, (std::vector<std::string>{"branch_b@gpu", "concat,\"out\"@gpu"}));
  QCOMPARE(r->typeMismatches.size(), size_t{1});
  QVERIFY(QString::fromStdString(r->typeMismatches[0]).contains("profile says Sigmoid, model says Relu"));
}

void TestProfile::groupCostsComeFromTheProfile() {
  CostTable t = test::tinyTable();
  t.groupCost = [](const std::vector<TaskId>& g, DeviceId) { return 1000.0 * static_cast<double>(g.size()); };
  auto r = applyProfile(t, tinyProfile(), opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->groupsApplied, 1);
  QCOMPARE(t.groupCost({0, 1}, 0), 110.0);
  QCOMPARE(t.groupCost({1, 0}, 0), 110.0);  // Order does not matter.
  // Measured members, unprofiled group: their sum.
  QCOMPARE(t.groupCost({2, 3}, 0), 110.0);
  QCOMPARE(t.groupCost({0}, 1), 30.0);
  // A member still modelled on that device: the previous (modelled) group cost.
  QCOMPARE(t.groupCost({0, 1}, 1), 2000.0);
}

void TestProfile::transferFit_data() {
  QTest::addColumn<QList<qint64>>("bytes");
  QTest::addColumn<QList<double>>("us");
  QTest::addColumn<double>("latency");
  QTest::addColumn<double>("bytesPerUs");
  QTest::newRow("exact line") << QList<qint64>{1000, 2000, 4000} << QList<double>{3.0, 5.0, 9.0} << 1.0 << 500.0;
  QTest::newRow("single sample") << QList<qint64>{8000} << QList<double>{4.0} << 0.0 << 2000.0;
  QTest::newRow("negative intercept clamps")
      << QList<qint64>{1000, 2000} << QList<double>{1.0, 3.0} << 0.0 << 1000.0 * 5 / 7;
}

void TestProfile::transferFit() {
  QFETCH(QList<qint64>, bytes);
  QFETCH(QList<double>, us);
  QFETCH(double, latency);
  QFETCH(double, bytesPerUs);
  std::vector<TransferSample> s;
  for (int i = 0; i < bytes.size(); ++i) s.push_back({bytes[i], stat(us[i])});
  auto [lat, bpu] = fitTransfer(s);
  QVERIFY2(std::fabs(lat - latency) < 1e-9, qPrintable(QString::number(lat)));
  QVERIFY2(std::fabs(bpu - bytesPerUs) < 1e-6 * bytesPerUs, qPrintable(QString::number(bpu)));
}

void TestProfile::transfersReplaceTheLinkModel() {
  CostTable t = test::tinyTable();
  const double before = t.transferUs(0, 1, 1024 * 1024);
  auto r = applyProfile(t, tinyProfile(), opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->pairsApplied, 1);
  const double after = t.transferUs(0, 1, 1024 * 1024);
  QVERIFY(std::fabs(after - 101.0) < 1e-6);
  QVERIFY(after != before);
  // The reverse direction keeps its model.
  QCOMPARE(t.transferUs(1, 0, 1024 * 1024), before);
  // applyTransfers = false leaves links alone.
  CostTable u = test::tinyTable();
  auto o = opts();
  o.applyTransfers = false;
  QVERIFY(applyProfile(u, tinyProfile(), o).isOk());
  QCOMPARE(u.transferUs(0, 1, 1024 * 1024), before);
}

void TestProfile::predictionAtRunSpeed() {
  // A virtual CPU changes speed in phases: the profile records the speed its device was measured at
  // (cpu: a probe of 40 us; gpu: none), a run its own, and the prediction at the run's speed scales each
  // device's operator costs by the ratio, leaving devices without both probes as they are.
  CostTable t = test::tinyTable();
  auto r = applyProfile(t, tinyProfile(), opts());
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(t.speedProbeUs.size(), size_t{3});
  QCOMPARE(t.speedProbeUs[0], 40.0);
  QCOMPARE(t.speedProbeUs[1], 0.0);
  std::vector<double> factor;
  const CostTable slow = atRunSpeed(t, {60.0, 25.0, 10.0}, &factor);
  QCOMPARE(factor, (std::vector<double>{1.5, 1.0, 1.0}));
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    QCOMPARE(slow.w(v, 0), 1.5 * t.w(v, 0));
    QCOMPARE(slow.w(v, 1), t.w(v, 1));
    QCOMPARE(slow.w(v, 2), t.w(v, 2));
    QCOMPARE(slow.unfusedCost[static_cast<size_t>(v) * 3], 1.5 * t.unfusedCost[static_cast<size_t>(v) * 3]);
  }
  QCOMPARE(slow.speedProbeUs[0], 60.0);  // the table now describes the run's speed
  // A plan on the cpu alone takes 1.5x as long at that speed.
  Plan plan;
  plan.device.assign(static_cast<size_t>(t.numTasks()), 0);
  orderByUpwardRank(t, plan);
  auto before = simulate(t, plan), after = simulate(slow, plan);
  QVERIFY2(before.isOk() && after.isOk(), before.isOk() ? after.message().c_str() : before.message().c_str());
  QVERIFY(before->makespan > 0);
  QVERIFY(qFuzzyCompare(after->makespan, 1.5 * before->makespan));
  // No run probe: nothing changes.
  const CostTable same = atRunSpeed(t, {}, &factor);
  QCOMPARE(factor, (std::vector<double>{1.0, 1.0, 1.0}));
  QCOMPARE(same.cost, t.cost);
}

QTEST_GUILESS_MAIN(TestProfile)
#include "tst_profile.moc"
