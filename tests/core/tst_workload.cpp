// Workloads of several models (issue 29, item 3): the workload file's errors (one line naming the file
// and the field, never a crash, fuzzed), its requests over a horizon, and the two joint schedulers
// (Band's reconstruction and Partex's) on hand-countable workloads of tiny task graphs.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <fstream>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "problem/problem.h"
#include "problem/workloadgraph.h"
#include "sched/workload.h"
#include "testutil.h"

using namespace partex;

namespace {

CostTable graph(const std::string& json) {
  auto t = parseTaskGraph(json, "model.json");
  if (!t) qFatal("%s", t.message().c_str());
  return *t;
}

/// "det": a1 -> a2, 2 + 3 us, on P0 only. "rec": b1, 4 us, on P1 only. "split": c1 -> c2, c1 1 us on
/// P0 and 10 on P1, c2 10 us on P0 and 1 on P1, free edges: 11 us on either device alone, 2 split.
CostTable det() { return graph(R"({"devices": ["P0","P1"], "tasks": {"a1": [2, null], "a2": [3, null]}, "edges": [["a1","a2",0]]})"); }
CostTable rec() { return graph(R"({"devices": ["P0","P1"], "tasks": {"b1": [null, 4]}, "edges": []})"); }
CostTable split() { return graph(R"({"devices": ["P0","P1"], "tasks": {"c1": [1, 10], "c2": [10, 1]}, "edges": [["c1","c2",0]]})"); }

/// det at 100,000/s (every 10 us) over 0.05 ms: five requests; rec twice per det.
std::string detRec(double recDeadlineMs) {
  return R"({"format": "partex-workload", "version": 1, "name": "cam", "horizon_ms": 0.05, "models": [
    {"name": "det", "model": "det.json", "rate": 100000, "deadline_ms": 0.006},
    {"name": "rec", "model": "rec.json", "trigger": {"model": "det", "per_inference": 2}, "deadline_ms": )" +
         std::to_string(recDeadlineMs) + "}]}";
}

}  // namespace

class TestWorkload : public QObject {
  Q_OBJECT

 private slots:
  void parsesAndExpands() {
    auto w = parseWorkload(detRec(0.009), "w.json");
    QVERIFY2(w.isOk(), w.message().c_str());
    QCOMPARE(w->models.size(), size_t{2});
    QCOMPARE(w->models[1].trigger, std::string("det"));
    QCOMPARE(w->models[1].perInference, 2);
    const auto reqs = expandRequests(*w);
    QCOMPARE(reqs.size(), size_t{15});  // 5 det + 2 x 5 rec
    QCOMPARE(reqs[3].releaseUs, 30.0);
    QCOMPARE(reqs[5].parent, 0);
    QCOMPARE(reqs[6].parent, 0);
    QCOMPARE(reqs[7].parent, 1);
    QCOMPARE(reqs[5].deadlineUs, 9.0);
    // 30/s over one second: 30 requests, the last at 29/30 s.
    auto w2 = parseWorkload(R"({"models": [{"model": "gen:resnet18", "rate": 30, "deadline_ms": 33}]})", "w2.json");
    QVERIFY2(w2.isOk(), w2.message().c_str());
    QCOMPARE(w2->models[0].name, std::string("gen:resnet18"));
    const auto r2 = expandRequests(*w2);
    QCOMPARE(r2.size(), size_t{30});
    QVERIFY(std::abs(r2.back().releaseUs - 29e6 / 30) < 1e-6);
    QCOMPARE(workloadRequestCount(*w2), 30.0);
    // batch 3 at 20/s over 100 ms: releases at 0 and 50 ms, three requests each.
    auto w3 = parseWorkload(R"({"horizon_ms": 100, "models": [{"model": "m", "rate": 20, "batch": 3, "deadline_ms": 5}]})", "w3.json");
    QVERIFY2(w3.isOk(), w3.message().c_str());
    const auto r3 = expandRequests(*w3);
    QCOMPARE(r3.size(), size_t{6});
    QCOMPARE(r3[2].releaseUs, 0.0);
    QCOMPARE(r3[3].releaseUs, 50000.0);
    QCOMPARE(r3[5].index, 5);
    QCOMPARE(workloadRequestCount(*w3), 6.0);
  }

  void badFiles_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not json") << "{\"models\": [" << "not JSON";
    QTest::newRow("array") << "[]" << "JSON object";
    QTest::newRow("no models") << "{}" << "models";
    QTest::newRow("empty models") << R"({"models": []})" << "models";
    QTest::newRow("model not object") << R"({"models": [1]})" << "models[0]";
    QTest::newRow("unknown top field") << R"({"modles": []})" << "modles";
    QTest::newRow("bad format") << R"({"format": "onnx", "models": []})" << "format";
    QTest::newRow("bad version") << R"({"version": 2, "models": []})" << "version";
    QTest::newRow("no model") << R"({"models": [{"rate": 1, "deadline_ms": 1}]})" << "models[0].model";
    QTest::newRow("model number") << R"({"models": [{"model": 3, "rate": 1, "deadline_ms": 1}]})" << "models[0].model";
    QTest::newRow("negative rate") << R"({"models": [{"model": "a", "rate": -3, "deadline_ms": 1}]})" << "rate";
    QTest::newRow("zero rate") << R"({"models": [{"model": "a", "rate": 0, "deadline_ms": 1}]})" << "rate";
    QTest::newRow("string rate") << R"({"models": [{"model": "a", "rate": "fast", "deadline_ms": 1}]})" << "rate";
    QTest::newRow("infinite rate") << R"({"models": [{"model": "a", "rate": 1e400, "deadline_ms": 1}]})" << "1e400";
    QTest::newRow("no deadline") << R"({"models": [{"model": "a", "rate": 1}]})" << "deadline_ms";
    QTest::newRow("null deadline") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": null}]})" << "deadline_ms";
    QTest::newRow("negative deadline") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": -1}]})" << "deadline_ms";
    QTest::newRow("rate and trigger") << R"({"models": [{"model": "a", "rate": 1, "trigger": {"model": "a", "per_inference": 1}, "deadline_ms": 1}]})"
                                      << "exactly one";
    QTest::newRow("neither") << R"({"models": [{"model": "a", "deadline_ms": 1}]})" << "exactly one";
    QTest::newRow("unknown trigger") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "z", "per_inference": 1}, "deadline_ms": 1}]})" << "no model named \"z\"";
    QTest::newRow("self trigger") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "b", "per_inference": 1}, "deadline_ms": 1}]})" << "cycle";
    QTest::newRow("trigger cycle") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "c", "per_inference": 1}, "deadline_ms": 1},
        {"model": "c", "trigger": {"model": "b", "per_inference": 1}, "deadline_ms": 1}]})" << "cycle";
    QTest::newRow("trigger string") << R"({"models": [{"model": "a", "trigger": "a", "deadline_ms": 1}]})" << "trigger";
    QTest::newRow("per_inference 0") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "a", "per_inference": 0}, "deadline_ms": 1}]})" << "per_inference";
    QTest::newRow("per_inference fraction") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "a", "per_inference": 2.5}, "deadline_ms": 1}]})" << "per_inference";
    QTest::newRow("duplicate names") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1}, {"model": "a", "rate": 2, "deadline_ms": 1}]})"
                                     << "twice";
    QTest::newRow("unknown model field") << R"({"models": [{"model": "a", "rat": 1, "deadline_ms": 1}]})" << "rat";
    QTest::newRow("too many requests") << R"({"horizon_ms": 600000, "models": [{"model": "a", "rate": 100000, "deadline_ms": 1}]})"
                                       << "requests";
    QTest::newRow("trigger explosion") << R"({"horizon_ms": 1000, "models": [{"model": "a", "rate": 1000, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "a", "per_inference": 1000}, "deadline_ms": 1}]})" << "requests";
    QTest::newRow("batch 0") << R"({"models": [{"model": "a", "rate": 1, "batch": 0, "deadline_ms": 1}]})" << "batch";
    QTest::newRow("batch on a trigger") << R"({"models": [{"model": "a", "rate": 1, "deadline_ms": 1},
        {"model": "b", "trigger": {"model": "a", "per_inference": 1}, "batch": 2, "deadline_ms": 1}]})" << "batch";
    QTest::newRow("negative horizon") << R"({"horizon_ms": -5, "models": [{"model": "a", "rate": 1, "deadline_ms": 1}]})" << "horizon_ms";
  }
  void badFiles() {
    QFETCH(QString, text);
    QFETCH(QString, mentions);
    auto w = parseWorkload(text.toStdString(), "bad.json");
    QVERIFY(!w.isOk());
    const std::string msg = w.message();
    QVERIFY2(msg.rfind("bad.json: ", 0) == 0, msg.c_str());
    QVERIFY2(msg.find('\n') == std::string::npos, msg.c_str());
    QVERIFY2(msg.find(mentions.toStdString()) != std::string::npos, msg.c_str());
  }

  /// Every prefix of a valid file and every byte of it replaced by hostile ones: parsed or refused
  /// with one line naming the file, never a crash or a request explosion.
  void fuzzed() {
    const std::string good = detRec(0.009);
    int refused = 0, accepted = 0;
    auto check = [&](const std::string& text) {
      auto w = parseWorkload(text, "f.json");
      if (w.isOk()) {
        ++accepted;
        QVERIFY(expandRequests(*w).size() <= static_cast<size_t>(kMaxWorkloadRequests));
      } else {
        ++refused;
        QVERIFY2(w.message().rfind("f.json: ", 0) == 0 && w.message().find('\n') == std::string::npos, w.message().c_str());
      }
    };
    for (size_t n = 0; n < good.size(); ++n) check(good.substr(0, n));
    for (size_t i = 0; i < good.size(); ++i)
      for (char c : std::string("0-9\"{}[],:e.\x01")) {
        std::string s = good;
        s[i] = c;
        check(s);
      }
    QVERIFY(refused > 0);
    QVERIFY(accepted > 0);  // e.g. a digit of a number changed
  }

  /// det every 10 us, 5 us on P0 (deadline 6 us); two rec per det, 4 us each on P1 (deadline 9 us):
  /// det k runs [10k, 10k+5]; its recs [10k+5, 10k+9] and [10k+9, 10k+13], latencies 4 and 8, before
  /// the next det's. Every deadline is met, by both schedulers.
  void handCountAllMet() {
    auto w = parseWorkload(detRec(0.009), "w.json");
    QVERIFY(w.isOk());
    const CostTable a = det(), b = rec();
    for (const char* algo : {"band", "partex"}) {
      WorkloadOptions o;
      o.algo = algo;
      o.searchSec = 0.2;
      auto r = scheduleWorkload(*w, {&a, &b}, o);
      QVERIFY2(r.isOk(), r.message().c_str());
      QCOMPARE(r->requests, 15);
      QCOMPARE(r->met, 15);
      QCOMPARE(r->models[0].met, 5);
      QCOMPARE(r->models[0].p50Us, 5.0);
      QCOMPARE(r->models[0].p90Us, 5.0);
      QCOMPARE(r->models[1].met, 10);
      QCOMPARE(r->models[1].dropped, 0);
      QCOMPARE(r->models[1].p50Us, 4.0);  // latencies 4 x5, 8 x5: rank ceil(0.5 * 10) = 5 -> 4
      QCOMPARE(r->models[1].p90Us, 8.0);  // rank 9 -> 8
      QCOMPARE(r->end[5], 9.0);           // det 0's recs end at 9 and 13
      QCOMPARE(r->end[6], 13.0);
      QCOMPARE(r->release[6], 5.0);
      QCOMPARE(r->makespanUs, 53.0);      // det 4's second rec: 40 + 5 + 4 + 4
      QCOMPARE(r->utilisation[0], 25.0 / 53.0);
      QCOMPARE(r->utilisation[1], 40.0 / 53.0);
    }
  }

  /// rec's deadline 7 us: the second rec of each det would end 8 us after its release, so both
  /// schedulers drop it when it is to be dispatched (Band's SLO check): 5 met, 5 dropped.
  void handCountDropped() {
    auto w = parseWorkload(detRec(0.007), "w.json");
    QVERIFY(w.isOk());
    const CostTable a = det(), b = rec();
    for (const char* algo : {"band", "partex"}) {
      WorkloadOptions o;
      o.algo = algo;
      o.searchSec = 0.2;
      auto r = scheduleWorkload(*w, {&a, &b}, o);
      QVERIFY2(r.isOk(), r.message().c_str());
      QCOMPARE(r->models[0].met, 5);
      QCOMPARE(r->models[1].met, 5);
      QCOMPARE(r->models[1].dropped, 5);
      QCOMPARE(r->models[1].p90Us, 4.0);
      QCOMPARE(r->met, 10);
    }
  }

  /// "split" every 10 us with a 5 us deadline: Band's unit subgraphs are the whole model (both devices
  /// run both operators), 11 us on either device, so it drops every request; Partex's units are cut
  /// where best's plan changes device (c1 on P0, c2 on P1): 1 + 1 = 2 us, all five met.
  void partexSplitsWhereBandCannot() {
    auto w = parseWorkload(R"({"horizon_ms": 0.05, "models": [{"name": "s", "model": "s.json", "rate": 100000, "deadline_ms": 0.005}]})", "w.json");
    QVERIFY(w.isOk());
    const CostTable s = split();
    WorkloadOptions o;
    o.searchSec = 0.2;
    o.algo = "band";
    auto band = scheduleWorkload(*w, {&s}, o);
    QVERIFY2(band.isOk(), band.message().c_str());
    QCOMPARE(band->met, 0);
    QCOMPARE(band->models[0].dropped, 5);
    o.algo = "partex";
    auto px = scheduleWorkload(*w, {&s}, o);
    QVERIFY2(px.isOk(), px.message().c_str());
    QCOMPARE(px->met, 5);
    QCOMPARE(px->models[0].p50Us, 2.0);
    QCOMPARE(px->end[4], 42.0);
    // With a 12 us deadline Band runs each whole on P0 (the first device of equal ends), 11 us each.
    auto w12 = parseWorkload(R"({"horizon_ms": 0.05, "models": [{"name": "s", "model": "s.json", "rate": 100000, "deadline_ms": 0.012}]})", "w.json");
    QVERIFY(w12.isOk());
    o.algo = "band";
    auto b12 = scheduleWorkload(*w12, {&s}, o);
    QVERIFY2(b12.isOk(), b12.message().c_str());
    QCOMPARE(b12->models[0].p50Us, 11.0);
    // Requests every 10 us, 11 us each on P0 -- but P1 is idle when the next arrives: Band's
    // programme puts it there (ends at 10 + 11 = 21 against 22 on P0). All five meet 12 us.
    QCOMPARE(b12->met, 5);
  }

  /// partex-cli workload: a generated model on mobile-soc, every request accounted for; bad files,
  /// bad options and a task graph as a model exit 2 with one line naming the file.
  void cli() {
    if (!QFileInfo::exists(partex::test::cliPath())) QSKIP("partex-cli is not built");
    const std::string dir = partex::test::tempDir();
    const std::string good = dir + "/w.json";
    std::ofstream(good) << R"({"name": "one", "horizon_ms": 100, "models": [
      {"name": "m", "model": "gen:mobilenetv2?image-size=96", "rate": 50, "batch": 2, "deadline_ms": 40}]})";
    auto r = partex::test::runCli({"workload", QString::fromStdString(good), "--platform", "mobile-soc", "--json", "--search-sec", "0.3"}, 300000);
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const QJsonArray results = o["results"].toArray();
    QCOMPARE(results.size(), 2);  // band and partex
    for (const auto& x : results) {
      const QJsonObject m = x.toObject()["models"].toArray().first().toObject();
      QCOMPARE(m["requests"].toInt(), 10);  // releases at 0, 20, 40, 60, 80 ms, two each
      QVERIFY(m["met"].toInt() + m["dropped"].toInt() <= 10);
      QVERIFY(x.toObject()["utilisation"].toObject().contains("npu"));
    }
    auto expectFail = [&](const QStringList& args, const char* mention) {
      auto f = partex::test::runCli(args, 120000);
      QCOMPARE(f.code, 2);
      const QByteArray err = f.err.trimmed();
      QVERIFY2(!err.contains('\n') && err.contains(mention), err.constData());
    };
    const std::string bad = dir + "/bad.json";
    std::ofstream(bad) << R"({"models": [{"model": "gen:resnet18", "rate": -1, "deadline_ms": 5}]})";
    expectFail({"workload", QString::fromStdString(bad), "--platform", "mobile-soc"}, "bad.json");
    expectFail({"workload", QString::fromStdString(dir + "/missing.json"), "--platform", "mobile-soc"}, "missing.json");
    expectFail({"workload", QString::fromStdString(good), "--platform", "mobile-soc", "--algo", "fifo"}, "fifo");
    expectFail({"workload", QString::fromStdString(good), "--platform", "no-such-platform"}, "w.json");
    std::ofstream(dir + "/tg.json") << R"({"devices": ["P0"], "tasks": {"a": [1]}, "edges": []})";
    const std::string tgw = dir + "/tgw.json";
    std::ofstream(tgw) << R"({"models": [{"model": "tg.json", "rate": 10, "deadline_ms": 5}]})";
    expectFail({"workload", QString::fromStdString(tgw), "--platform", "mobile-soc"}, "task graph");
  }

  /// Partex's overload rule on "split" (11 us whole on either device, 1 + 1 split): two requests at
  /// once (no more than the two devices) run split: A's c1 on P0 [0,1], B's c1 on P0 [1,2], their c2
  /// on P1 [1,2] and [2,3]: latencies 2 and 3. Three at once (more than the devices) begin on Band's
  /// units, whole: A on P0 [0,11], B on P1 [0,11] (P0 now ends at 22), C on P0 [11,22]: 11, 11, 22.
  void partexOverloadTakesBandUnits() {
    const CostTable s = split();
    WorkloadOptions o;
    o.searchSec = 0.2;
    o.algo = "partex";
    auto w2 = parseWorkload(R"({"horizon_ms": 0.01, "models": [{"name": "s", "model": "s.json", "rate": 1000, "batch": 2, "deadline_ms": 0.1}]})", "w.json");
    QVERIFY(w2.isOk());
    auto r2 = scheduleWorkload(*w2, {&s}, o);
    QVERIFY2(r2.isOk(), r2.message().c_str());
    QCOMPARE(r2->end[0], 2.0);
    QCOMPARE(r2->end[1], 3.0);
    QCOMPARE(r2->met, 2);
    auto w3 = parseWorkload(R"({"horizon_ms": 0.01, "models": [{"name": "s", "model": "s.json", "rate": 1000, "batch": 3, "deadline_ms": 0.1}]})", "w.json");
    QVERIFY(w3.isOk());
    auto r3 = scheduleWorkload(*w3, {&s}, o);
    QVERIFY2(r3.isOk(), r3.message().c_str());
    QCOMPARE(r3->end[0], 11.0);
    QCOMPARE(r3->end[1], 11.0);
    QCOMPARE(r3->end[2], 22.0);
    QCOMPARE(r3->models[0].p50Us, 11.0);
    QCOMPARE(r3->models[0].p90Us, 22.0);
    QCOMPARE(r3->met, 3);
  }

  void errors() {
    auto w = parseWorkload(detRec(0.009), "w.json");
    QVERIFY(w.isOk());
    const CostTable a = det(), b = rec();
    WorkloadOptions o;
    o.algo = "fifo";
    auto r = scheduleWorkload(*w, {&a, &b}, o);
    QVERIFY(!r.isOk());
    QVERIFY2(r.message().find("fifo") != std::string::npos, r.message().c_str());
    const CostTable three = graph(R"({"devices": ["P0","P1","P2"], "tasks": {"x": [1, 1, 1]}, "edges": []})");
    o.algo = "band";
    auto r2 = scheduleWorkload(*w, {&a, &three}, o);
    QVERIFY(!r2.isOk());
    QVERIFY2(r2.message().find("rec") != std::string::npos, r2.message().c_str());
    auto r3 = scheduleWorkload(*w, {&a}, o);
    QVERIFY(!r3.isOk());
  }

  /// keepTimeline hands back what the simulator judged: 5 clock tasks, then det's two operators and
  /// rec's one per request (all ran): 5 + 5 x 2 + 10 = 25 tasks; det 0's first rec ends at 9 us.
  void jointTimelineKept() {
    auto w = parseWorkload(detRec(0.009), "w.json");
    QVERIFY(w.isOk());
    const CostTable a = det(), b = rec();
    WorkloadOptions o;
    o.algo = "band";
    QVERIFY(!scheduleWorkload(*w, {&a, &b}, o)->joint.table);  // not kept unless asked
    o.keepTimeline = true;
    auto r = scheduleWorkload(*w, {&a, &b}, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    const auto& j = r->joint;
    QVERIFY(j.table);
    QCOMPARE(j.table->numTasks(), 25);
    QCOMPARE(j.table->numDevices(), 3);  // P0, P1, clock
    QCOMPARE(j.requestOfTask.size(), size_t{25});
    QCOMPARE(j.operatorOfTask.size(), size_t{25});
    QCOMPARE(r->requestList.size(), size_t{15});
    int clock = 0, recOps = 0;
    for (size_t t = 0; t < 25; ++t) {
      const int q = j.requestOfTask[t];
      if (q < 0) {
        ++clock;
        QCOMPARE(j.operatorOfTask[t], -1);
        QCOMPARE(j.timeline.tasks[t].device, 2);
        continue;
      }
      const int model = r->requestList[static_cast<size_t>(q)].model;
      QCOMPARE(j.table->taskNames[t], w->models[static_cast<size_t>(model)].name + "#" +
                                          std::to_string(r->requestList[static_cast<size_t>(q)].index) + "/" +
                                          (model == 0 ? a : b).taskNames[static_cast<size_t>(j.operatorOfTask[t])]);
      if (model == 1) {
        ++recOps;
        if (q == 5) QCOMPARE(j.timeline.tasks[t].end, 9.0);
      }
    }
    QCOMPARE(clock, 5);
    QCOMPARE(recOps, 10);
    // The group cost still works on the kept table (it pointed at a local before).
    QCOMPARE(j.table->groupCost({5, 6}, 0), j.table->w(5, 0) + j.table->w(6, 0));
  }

  /// One round of a workload as one graph (problem/workloadgraph.h): copies per round from the rates
  /// and triggers, and the errors that name the file and the model.
  void roundCopies() {
    auto parse = [](const std::string& json) {
      auto w = parseWorkload(json, "w.json");
      if (!w) qFatal("%s", w.message().c_str());
      return *w;
    };
    // det at 30/s, cls at 10/s, rec twice per det: a round (every 100 ms) holds 3, 1 and 6.
    auto c = workloadRoundCopies(parse(R"({"models": [
      {"name": "det", "model": "d.onnx", "rate": 30, "deadline_ms": 5},
      {"name": "cls", "model": "c.onnx", "rate": 10, "deadline_ms": 5},
      {"name": "rec", "model": "r.onnx", "trigger": {"model": "det", "per_inference": 2}, "deadline_ms": 5}]})"),
                                     "w.json");
    QVERIFY2(c.isOk(), c.message().c_str());
    QCOMPARE(*c, (std::vector<int>{3, 1, 6}));
    // A batch counts: 2 x 10/s against 20/s, two of each per round (every 100 ms).
    auto b = workloadRoundCopies(parse(R"({"models": [
      {"name": "a", "model": "a.onnx", "rate": 10, "batch": 2, "deadline_ms": 5},
      {"name": "b", "model": "b.onnx", "rate": 20, "deadline_ms": 5}]})"),
                                     "w.json");
    QVERIFY2(b.isOk(), b.message().c_str());
    QCOMPARE(*b, (std::vector<int>{2, 2}));
    // 30/s against 20/s: no whole round.
    auto bad = workloadRoundCopies(parse(R"({"models": [
      {"name": "fast", "model": "a.onnx", "rate": 30, "deadline_ms": 5},
      {"name": "slow", "model": "b.onnx", "rate": 20, "deadline_ms": 5}]})"),
                                       "w.json");
    QVERIFY(!bad.isOk());
    QVERIFY2(bad.message().find("w.json") != std::string::npos && bad.message().find("\"fast\"") != std::string::npos,
             bad.message().c_str());
    // Too many copies in a round.
    auto many = workloadRoundCopies(parse(R"({"models": [
      {"name": "a", "model": "a.onnx", "rate": 100, "deadline_ms": 5},
      {"name": "b", "model": "b.onnx", "rate": 1, "deadline_ms": 5}]})"),
                                        "w.json");
    QVERIFY(!many.isOk());
    QVERIFY2(many.message().find("w.json") != std::string::npos, many.message().c_str());
  }

  void mergedGraph() {
    const std::string dir = test::tempDir();
    const std::string file = dir + "/two.json";
    std::ofstream(file) << R"({"name": "pair", "models": [
      {"name": "big", "model": "gen:resnet18?image-size=32", "rate": 20, "deadline_ms": 50},
      {"name": "small", "model": "gen:random?nodes=25&seed=3", "rate": 10, "deadline_ms": 50}]})";
    auto big = loadModel("gen:resnet18?image-size=32", {});
    auto small = loadModel("gen:random?nodes=25&seed=3", {});
    QVERIFY(big.isOk() && small.isOk());
    QVERIFY(isWorkloadFile(file));
    auto tg = isTaskGraphFile(file);
    QVERIFY(tg.isOk() && !*tg);  // a workload is not read as a task graph
    auto g = loadModel(file, {});  // the one loader of every command
    QVERIFY2(g.isOk(), g.message().c_str());
    QCOMPARE(g->nodes.size(), 2 * big->nodes.size() + small->nodes.size());
    QCOMPARE(g->inputs.size(), 2 * big->inputs.size() + small->inputs.size());
    QCOMPARE(g->outputs.size(), 2 * big->outputs.size() + small->outputs.size());
    QVERIFY(g->verify().isOk());
    // Each copy's names under its prefix, its structure the model's: the same op types and in-degrees.
    const Node& first = g->nodes[big->nodes.size()];  // the first operator of big#1
    QCOMPARE(first.name, "big#1/" + big->nodes[0].name);
    QCOMPARE(first.opType, big->nodes[0].opType);
    QCOMPARE(g->values[static_cast<size_t>(first.inputs[0])].name,
             "big#1/" + big->values[static_cast<size_t>(big->nodes[0].inputs[0])].name);
    const auto parts = workloadParts(*g);
    QCOMPARE(parts.size(), size_t(3));
    QCOMPARE(parts[0].name, std::string("big#0"));
    QCOMPARE(parts[1].name, std::string("big#1"));
    QCOMPARE(parts[2].name, std::string("small#0"));
    QCOMPARE(parts[1].ops.size(), big->nodes.size());
    QCOMPARE(parts[2].ops.size(), small->nodes.size());
    QCOMPARE(workloadPartModel(parts[2].name), std::string("small"));
    for (OpId v : parts[1].ops)  // no edge between copies: every input of big#1 is big#1's
      for (ValueId x : g->nodes[static_cast<size_t>(v)].inputs)
        if (x != kNone) QVERIFY(g->values[static_cast<size_t>(x)].name.rfind("big#1/", 0) == 0);
    // The identity: the same file gives the same, the models in another order another.
    auto again = loadModel(file, {});
    QCOMPARE(again->graphSha256, g->graphSha256);
    QVERIFY(g->graphSha256 != big->graphSha256);
    const std::string swapped = dir + "/swapped.json";
    std::ofstream(swapped) << R"({"name": "pair", "models": [
      {"name": "small", "model": "gen:random?nodes=25&seed=3", "rate": 10, "deadline_ms": 50},
      {"name": "big", "model": "gen:resnet18?image-size=32", "rate": 20, "deadline_ms": 50}]})";
    auto other = loadModel(swapped, {});
    QVERIFY(other.isOk());
    QVERIFY(other->graphSha256 != g->graphSha256);
    QVERIFY(workloadParts(*big).empty());  // an ordinary model has none
    // Errors, one line naming the workload file and the model.
    const std::string missing = dir + "/missing-model.json";
    std::ofstream(missing) << R"({"models": [{"name": "gone", "model": "no-such.onnx", "rate": 10, "deadline_ms": 5}]})";
    auto m = loadModel(missing, {});
    QVERIFY(!m.isOk());
    QVERIFY2(m.message().find("missing-model.json") != std::string::npos && m.message().find("\"gone\"") != std::string::npos &&
                 m.message().find('\n') == std::string::npos,
             m.message().c_str());
    const std::string nested = dir + "/nested.json";
    std::ofstream(nested) << R"({"models": [{"name": "inner", "model": "two.json", "rate": 10, "deadline_ms": 5}]})";
    auto n = loadModel(nested, {});
    QVERIFY(!n.isOk());
    QVERIFY2(n.message().find("nested.json") != std::string::npos, n.message().c_str());
  }

  /// An operator with a body names values of the enclosing graph, which a prefix would not follow.
  void mergeRefusesSubgraphs() {
    Graph g;
    g.name = "loop";
    Value x;
    x.name = "x";
    x.isGraphInput = true;
    g.addValue(x);
    Value y;
    y.name = "y";
    g.addValue(y);
    Node n;
    n.name = "if0";
    n.opType = "If";
    n.inputs = {0};
    n.outputs = {1};
    n.subgraphs.emplace_back("then_branch", std::make_shared<Graph>());
    g.addNode(n);
    g.inputs = {0};
    g.outputs = {1};
    g.rebuildIndex();
    auto r = mergeGraphs({{"m#0", &g}}, "w");
    QVERIFY(!r.isOk());
    QVERIFY2(r.message().find("m#0") != std::string::npos && r.message().find("if0") != std::string::npos, r.message().c_str());
  }

  /// partSpans by hand: two operators, three inferences.
  void partSpansByHand() {
    // op 0 of inference i at [10i, 10i + 2], op 1 at [10i + 3, 10i + 7 + i].
    std::vector<double> s, e;
    for (int i = 0; i < 3; ++i) {
      s.push_back(10 * i);
      e.push_back(10 * i + 2);
      s.push_back(10 * i + 3);
      e.push_back(10 * i + 7 + i);
    }
    QCOMPARE(partSpans({0, 1}, s, e, 2, 0, 3), (std::vector<double>{7, 8, 9}));
    QCOMPARE(partSpans({1}, s, e, 2, 1, 3), (std::vector<double>{5, 6}));
    QCOMPARE(partSpans({0}, s, e, 2, 2, 3), (std::vector<double>{2}));
  }

  void tellsWorkloadsFromTaskGraphs() {
    QVERIFY(looksLikeWorkload(detRec(0.009)));
    QVERIFY(looksLikeWorkload(R"({"models": [{"model": "m", "rate": 1, "deadline_ms": 1}]})"));
    QVERIFY(looksLikeWorkload(R"({"models": 3})"));  // a workload, wrong: parseWorkload says why
    QVERIFY(!looksLikeWorkload(R"({"format": "other", "models": []})"));
    QVERIFY(!looksLikeWorkload(R"({"devices": ["P0"], "tasks": {"a": [1]}, "edges": []})"));
    QVERIFY(!looksLikeWorkload(R"({"tasks": {}, "models": []})"));
    QVERIFY(!looksLikeWorkload(R"({"workflow": {}, "models": []})"));
    QVERIFY(!looksLikeWorkload("[1, 2]"));
    QVERIFY(!looksLikeWorkload("{\"models\": [1e400]}"));
    QVERIFY(!looksLikeWorkload(""));
    const std::string good = test::tempDir() + "/is-workload.json";
    std::ofstream(good) << "  \n" << detRec(0.009);
    QVERIFY(isWorkloadFile(good));
    const std::string graph = test::tempDir() + "/is-graph.json";
    std::ofstream(graph) << R"({"devices": ["P0"], "tasks": {"a": [1]}, "edges": []})";
    QVERIFY(!isWorkloadFile(graph));
    QVERIFY(!isWorkloadFile(test::tempDir() + "/no-such-file.json"));
    QVERIFY(!isWorkloadFile(test::tempDir()));  // a folder
  }
};

QTEST_GUILESS_MAIN(TestWorkload)
#include "tst_workload.moc"
