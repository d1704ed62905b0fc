// The profiler on a fake backend: one entry per operator and device with the asked repetitions,
// fused groups along chains, the PIM minimal plan's run count and transfer samples, progress,
// cancellation, unknown devices, profile reuse keys, and the measured profile applied to a table.
#include <QtTest>

#include <atomic>
#include <set>

#include "fake_backend.h"
#include "profile/profiler.h"
#include "testutil.h"

using namespace partex;

class TestProfiler : public QObject {
  Q_OBJECT
 private slots:
  void perOperatorProfile_data();
  void perOperatorProfile();
  void groupsFollowChains();
  void inContextProfile();
  void minimalPlanCountsRuns_data();
  void minimalPlanCountsRuns();
  void transfersAreMeasured();
  void minimalPlanAndTransfersShareOneEntryPerPair();
  void progressAndCancel();
  void unknownDeviceIsAnError();
  void matchesChecksTheKey();
  void measuredProfileApplies();
};

void TestProfiler::perOperatorProfile_data() {
  QTest::addColumn<QStringList>("devices");
  QTest::addColumn<int>("reps");
  QTest::newRow("one device") << QStringList{"dev0"} << 3;
  QTest::newRow("two devices") << QStringList{"dev0", "dev1"} << 2;
  QTest::newRow("all devices") << QStringList{} << 1;
}

void TestProfiler::perOperatorProfile() {
  QFETCH(QStringList, devices);
  QFETCH(int, reps);
  const Graph g = test::diamondGraph();
  test::FakeBackend b;
  ProfilerOptions o;
  for (const auto& d : devices) o.devices.push_back(d.toStdString());
  o.reps = reps;
  o.warmup = 1;
  ProfilerInfo info;
  auto p = profileModel(g, b, o, &info);
  QVERIFY2(p.isOk(), p.message().c_str());
  const size_t nDev = devices.isEmpty() ? b.devices().size() : static_cast<size_t>(devices.size());
  QCOMPARE(p->devices.size(), nDev);
  QCOMPARE(p->modelSha256, g.graphSha256);
  QCOMPARE(p->backendName, std::string("fake"));
  QCOMPARE(p->backendVersion, std::string("fake-1"));
  QCOMPARE(p->method, std::string("per-operator"));
  QCOMPARE(p->reps, reps);
  QVERIFY(!p->measuredAt.empty());
  for (const auto& d : p->devices) {
    QCOMPARE(d.ops.size(), g.nodes.size());
    for (size_t i = 0; i < d.ops.size(); ++i) {
      QCOMPARE(d.ops[i].name, g.nodes[i].name);
      QCOMPARE(d.ops[i].opType, g.nodes[i].opType);
      QCOMPARE(d.ops[i].time.reps, reps);
      QVERIFY(d.ops[i].time.medianUs >= 150.0);  // Each fake kernel sleeps 200 us.
      QVERIFY(d.ops[i].time.minUs <= d.ops[i].time.medianUs && d.ops[i].time.medianUs <= d.ops[i].time.maxUs);
    }
    QVERIFY(d.groups.empty());
  }
  QVERIFY(p->transfers.empty());
  QCOMPARE(info.measurements, static_cast<int>(nDev * g.nodes.size()) * reps);
  QVERIFY(info.skipped.empty());
}

void TestProfiler::groupsFollowChains() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(50);
  ProfilerOptions o;
  o.devices = {"dev1"};
  o.reps = 2;
  o.groups = true;
  o.maxGroup = 3;
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  std::set<std::vector<std::string>> groups;
  for (const auto& gr : p->devices[0].groups) {
    groups.insert(gr.ops);
    QCOMPARE(gr.time.reps, 2);
    QVERIFY(gr.time.medianUs >= 50.0 * static_cast<double>(gr.ops.size()) * 0.7);
  }
  // join has two operator predecessors: no chain enters it.
  const std::set<std::vector<std::string>> expected = {{"stem", "left1"},  {"stem", "left1", "left2"},
                                                       {"stem", "right1"}, {"stem", "right1", "right2"},
                                                       {"left1", "left2"}, {"right1", "right2"}};
  QCOMPARE(groups, expected);
}

void TestProfiler::inContextProfile() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(50);
  ProfilerOptions o;
  o.devices = {"dev0", "dev1"};
  o.method = ProfilerOptions::Method::InContext;
  o.reps = 3;
  o.warmup = 1;
  ProfilerInfo info;
  const int allocBefore = test::gFakeOutputAllocations.load();
  auto p = profileModel(g, b, o, &info);
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->method, std::string("in-context"));
  QCOMPARE(p->profilingRuns, 0);
  QVERIFY(p->transfers.empty());  // No crossing run: that is the minimal plan's.
  QCOMPARE(p->devices.size(), size_t{2});
  for (const auto& d : p->devices) {
    QCOMPARE(d.ops.size(), g.nodes.size());
    // The speed of the device's CPU while it was measured, for predictions at another run's speed.
    QVERIFY2(d.speedProbeUs > 0, d.id.c_str());
    for (const auto& op : d.ops) {
      QCOMPARE(op.time.reps, 3);
      QVERIFY(op.time.medianUs >= 40.0);  // Each fake kernel sleeps 50 us.
    }
  }
  QCOMPARE(info.measurements, 2 * static_cast<int>(g.nodes.size()) * 3);
  // Outputs are kept from run to run, as an executor keeps them: at most one allocation per operator in
  // the reference run and one per operator and device in the first whole-model run, none in the 3 others
  // (allocating in every run would time the page faults of fresh memory). Fewer where the executor's
  // memory plan lets tensors whose lifetimes do not overlap share storage.
  const int allocs = test::gFakeOutputAllocations.load() - allocBefore;
  QVERIFY2(allocs > 0 && allocs <= 3 * static_cast<int>(g.nodes.size()), std::to_string(allocs).c_str());
  QCOMPARE(std::string(methodName(ProfilerOptions::Method::InContext)), p->method);
}

void TestProfiler::minimalPlanCountsRuns_data() {
  QTest::addColumn<QStringList>("devices");
  QTest::addColumn<int>("runs");
  QTest::newRow("1 device: 1 run") << QStringList{"dev0"} << 1;
  QTest::newRow("2 devices: 3 runs") << QStringList{"dev0", "dev1"} << 3;
  QTest::newRow("3 devices: 4 runs (the paper's case)") << QStringList{"dev0", "dev1", "dev-bad"} << 4;
}

void TestProfiler::minimalPlanCountsRuns() {
  QFETCH(QStringList, devices);
  QFETCH(int, runs);
  const Graph g = test::diamondGraph();
  test::FakeBackend b(50);
  ProfilerOptions o;
  for (const auto& d : devices) o.devices.push_back(d.toStdString());
  o.method = ProfilerOptions::Method::MinimalPlan;
  o.reps = 2;
  o.warmup = 0;
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->profilingRuns, runs);
  QCOMPARE(minimalPlanRuns(devices.size()), runs);
  QCOMPARE(p->method, std::string("minimal-plan"));
  for (const auto& d : p->devices) {
    QCOMPARE(d.ops.size(), g.nodes.size());
    for (const auto& op : d.ops) QCOMPARE(op.time.reps, 2);
  }
  // The crossing run alternates devices: with two or more devices, transfers cross pairs both ways.
  if (devices.size() >= 2) {
    QVERIFY(!p->transfers.empty());
    std::set<std::pair<std::string, std::string>> pairs;
    for (const auto& t : p->transfers) {
      pairs.insert({t.from, t.to});
      for (const auto& s : t.samples) QCOMPARE(s.bytes, int64_t{256 * 4});  // Every tensor is float32[1,256].
    }
    QVERIFY(pairs.count({"dev0", "dev1"}) == 1);
    QVERIFY(pairs.count({"dev1", "dev0"}) == 1);
  } else {
    QVERIFY(p->transfers.empty());
  }
}

void TestProfiler::transfersAreMeasured() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(0);
  ProfilerOptions o;
  o.devices = {"dev0", "dev1"};
  o.reps = 3;
  o.warmup = 1;
  o.transfers = true;
  o.transferSizes = {4096, 1 << 20};
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->transfers.size(), size_t{2});
  for (const auto& t : p->transfers) {
    QCOMPARE(t.samples.size(), size_t{2});
    QCOMPARE(t.samples[0].bytes, int64_t{4096});
    QCOMPARE(t.samples[1].bytes, int64_t{1 << 20});
    QCOMPARE(t.samples[1].time.reps, 3);
    QVERIFY(t.samples[1].time.medianUs > 0);
  }
}

void TestProfiler::minimalPlanAndTransfersShareOneEntryPerPair() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(0);
  ProfilerOptions o;
  o.devices = {"dev0", "dev1"};
  o.method = ProfilerOptions::Method::MinimalPlan;
  o.transfers = true;
  o.transferSizes = {1024, 4096};
  o.reps = 1;
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(p->transfers.size(), size_t{2});
  for (const auto& t : p->transfers) {
    QCOMPARE(t.samples.size(), size_t{2});  // 1024 (crossing run and asked for) and 4096
    QCOMPARE(t.samples[0].bytes, int64_t{1024});
    QCOMPARE(t.samples[1].bytes, int64_t{4096});
  }
}

void TestProfiler::progressAndCancel() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(0);
  ProfilerOptions o;
  o.devices = {"dev0", "dev1"};
  o.reps = 1;
  int calls = 0, lastDone = 0, lastTotal = -1;
  o.progress = [&](int done, int total, const std::string& what) {
    ++calls;
    QVERIFY(done == lastDone + 1);
    QVERIFY(!what.empty());
    lastDone = done;
    lastTotal = total;
  };
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  QCOMPARE(lastDone, lastTotal);
  QCOMPARE(calls, 1 + 2 * 6);  // reference run + every operator on both devices

  // Cancel from inside the progress callback after three steps.
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  o.progress = [&](int done, int, const std::string&) {
    if (done == 3) cancel.store(true);
  };
  auto c = profileModel(g, b, o);
  QVERIFY(!c.isOk());
  QCOMPARE(c.message(), std::string("cancelled"));
}

void TestProfiler::unknownDeviceIsAnError() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(0);
  ProfilerOptions o;
  o.devices = {"dev0", "gpu"};
  auto p = profileModel(g, b, o);
  QVERIFY(!p.isOk());
  QVERIFY2(
      QString::fromStdString(p.message()).contains("backend 'fake' has no device 'gpu' (devices: dev0, dev1, dev-bad)"),
      p.message().c_str());
  o.devices = {"dev0"};
  o.reps = 0;
  QVERIFY(!profileModel(g, b, o).isOk());
}

void TestProfiler::matchesChecksTheKey() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(0);
  ProfilerOptions o;
  o.devices = {"dev0"};
  o.reps = 1;
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  std::string why;
  QVERIFY(profileMatches(*p, g, b, {"dev0"}, &why));
  QVERIFY(!profileMatches(*p, g, b, {"dev0", "dev1"}, &why));
  QVERIFY2(QString::fromStdString(why).contains("no device 'dev1'"), why.c_str());
  test::FakeBackend newer(0, "fake-2");
  QVERIFY(!profileMatches(*p, g, newer, {"dev0"}, &why));
  QVERIFY2(QString::fromStdString(why).contains("fake fake-1"), why.c_str());
  Graph other = g;
  other.graphSha256 = "0000";
  QVERIFY(!profileMatches(*p, other, b, {"dev0"}, &why));
  QVERIFY2(QString::fromStdString(why).contains("another model"), why.c_str());
}

void TestProfiler::measuredProfileApplies() {
  const Graph g = test::diamondGraph();
  test::FakeBackend b(100);
  ProfilerOptions o;
  o.devices = {"dev0", "dev1"};
  o.reps = 2;
  auto p = profileModel(g, b, o);
  QVERIFY2(p.isOk(), p.message().c_str());
  CostTable t = test::fakeTable(g);
  ApplyOptions ao;
  ao.modelSha256 = g.graphSha256;
  auto r = applyProfile(t, *p, ao);
  QVERIFY2(r.isOk(), r.message().c_str());
  QCOMPARE(r->opsApplied, 12);
  QCOMPARE(t.speedProbeUs.size(), size_t{3});
  for (DeviceId d = 0; d < 2; ++d) {
    QVERIFY(t.speedProbeUs[static_cast<size_t>(d)] > 0);
    QCOMPARE(t.speedProbeUs[static_cast<size_t>(d)], p->devices[static_cast<size_t>(d)].speedProbeUs);
  }
  QCOMPARE(t.speedProbeUs[2], 0.0);  // dev-bad not profiled
  for (TaskId v = 0; v < 6; ++v) {
    for (DeviceId d = 0; d < 2; ++d) {
      QCOMPARE(t.provenance[static_cast<size_t>(v) * 3 + static_cast<size_t>(d)], Provenance::Measured);
      QCOMPARE(t.w(v, d), p->devices[static_cast<size_t>(d)].ops[static_cast<size_t>(v)].time.medianUs);
    }
    QCOMPARE(t.provenance[static_cast<size_t>(v) * 3 + 2], Provenance::Modelled);  // dev-bad not profiled
  }
}

QTEST_GUILESS_MAIN(TestProfiler)
#include "tst_profiler.moc"
