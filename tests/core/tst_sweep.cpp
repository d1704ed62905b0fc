// Sweeps (core/sweep, partex-cli sweep): sweep-file validation with one line naming the file and the
// entry, expansion and shards, results that survive a cut line, resume by inputs hash, shards merged
// equal to a whole run, link scaling, the report's SVG, and the Slurm scripts.
#include <QXmlStreamReader>
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "platform/platform.h"
#include "problem/problem.h"
#include "sched/scheduler.h"
#include "sweep/report.h"
#include "sweep/results.h"
#include "sweep/runner.h"
#include "sweep/slurm.h"
#include "sweep/svg.h"
#include "sweep/sweepfile.h"
#include "testutil.h"

using namespace partex;
namespace fs = std::filesystem;

namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = (fs::path(dir) / name).string();
  std::ofstream(p) << text;
  return p;
}

/// tempDir() is one folder per process: each test works in a sub-folder of its own.
std::string freshDir(const std::string& name) {
  const std::string d = test::tempDir() + "/" + name;
  fs::create_directories(d);
  return d;
}

/// A small sweep: two task graphs (their own devices) and two generated models on two presets, two
/// bandwidth scales and three deterministic algorithms.
std::string smallSweep(const std::string& dir, const std::string& extra = "") {
  const std::string tg = test::testDataDir() + "/taskgraphs";
  return write(dir, "sweep.json",
               "{\"models\": [\"" + tg + "/heft2002.json\", \"" + tg +
                   "/peft2014.json\", {\"gen\": \"random\", \"nodes\": 30, \"seed\": [1, 2]}],\n"
                   " \"platforms\": [\"cpu-gpu-pcie\", \"mobile-soc\"], \"link_bandwidth_scale\": [0.5, 2],\n"
                   " \"algorithms\": [\"heft\", \"peft\", \"greedy\"]" +
                   extra + "}");
}

/// Rows as CSV lines without the timing columns (sched_ms, time_limited).
QStringList withoutTiming(const std::vector<SweepRow>& rows) {
  const QStringList header = QString::fromStdString(csvHeader()).split(',');
  QList<int> drop;
  for (const auto& c : timingColumns()) drop.push_back(static_cast<int>(header.indexOf(QString::fromStdString(c))));
  QStringList out;
  for (const auto& r : rows) {
    QStringList f = QString::fromStdString(rowToCsv(r)).split(',');
    for (int i = static_cast<int>(f.size()) - 1; i >= 0; --i)
      if (drop.contains(i)) f.removeAt(i);
    out << f.join(',');
  }
  return out;
}

}  // namespace

class TestSweep : public QObject {
  Q_OBJECT

 private slots:
  void badSweepFiles_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");  // after "FILE: "
    const QString tg = QString::fromStdString(test::testDataDir() + "/taskgraphs/heft2002.json");
    QTest::newRow("bad json") << "{\"models\": ["
                              << "bad JSON: ";
    QTest::newRow("not an object") << "[1]"
                                   << "a sweep file is a JSON object";
    QTest::newRow("unknown field") << "{\"modles\": []}"
                                   << "top level: unknown field 'modles'";
    QTest::newRow("no models") << "{\"algorithms\": [\"heft\"]}"
                               << "models: missing";
    QTest::newRow("missing file") << "{\"models\": [\"" + tg + "\", \"nothere.onnx\"], \"algorithms\": [\"heft\"]}"
                                  << "models[1]: no such file 'nothere.onnx'";
    QTest::newRow("glob matches nothing") << "{\"models\": [\"x/*.onnx\"], \"algorithms\": [\"heft\"]}"
                                          << "models[0]: no file matches 'x/*.onnx'";
    QTest::newRow("unknown generator")
        << "{\"models\": [\"gen:resnet99\"], \"platforms\": [\"pim\"], \"algorithms\": [\"heft\"]}"
        << "models[0]: gen:resnet99: unknown generator 'resnet99'";
    QTest::newRow("bad generator parameter")
        << "{\"models\": [{\"gen\": \"random\", \"nodez\": 3}], \"platforms\": [\"pim\"], \"algorithms\": [\"heft\"]}"
        << "models[0]: gen:random?nodez=3: unknown parameter 'nodez'";
    QTest::newRow("unknown platform")
        << "{\"models\": [\"gen:random\"], \"platforms\": [\"pim\", \"tpu-pod\"], \"algorithms\": [\"heft\"]}"
        << "platforms[1]: unknown platform 'tpu-pod'";
    QTest::newRow("no platforms") << "{\"models\": [\"gen:random\"], \"algorithms\": [\"heft\"]}"
                                  << "platforms: missing";
    QTest::newRow("unknown algorithm") << "{\"models\": [\"" + tg + "\"], \"algorithms\": [\"heft\", \"hefty\"]}"
                                       << "algorithms[1]: unknown algorithm 'hefty'";
    QTest::newRow("bad scale") << "{\"models\": [\"" + tg +
                                      "\"], \"algorithms\": [\"heft\"], \"link_bandwidth_scale\": [1, 0]}"
                               << "link_bandwidth_scale[1]: must be a positive number";
    QTest::newRow("empty algorithms") << "{\"models\": [\"" + tg + "\"], \"algorithms\": []}"
                                      << "algorithms: is an empty list";
    QTest::newRow("empty dims") << "{\"models\": [\"" + tg + "\"], \"algorithms\": [\"heft\"], \"dims\": {\"N\": []}}"
                                << "dims.N: is an empty list";
    QTest::newRow("bad objective") << "{\"models\": [\"" + tg + "\"], \"algorithms\": [\"heft\"], \"objective\": \"speed\"}"
                                   << "objective: must be \"latency\" or \"throughput\"";
    QTest::newRow("bound without throughput")
        << "{\"models\": [\"" + tg + "\"], \"algorithms\": [\"heft\"], \"latency_bound_us\": 50}"
        << "latency_bound_us: applies to \"objective\": \"throughput\"";
    QTest::newRow("bad time limit") << "{\"models\": [\"" + tg +
                                           "\"], \"algorithms\": [{\"name\": \"best\", \"time_limit\": -1}]}"
                                    << "algorithms[0].time_limit: must be a positive number";
  }
  void badSweepFiles() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const std::string file = write(test::tempDir(), "bad.json", text.toStdString());
    auto s = loadSweepFile(file);
    QVERIFY(!s);
    const QString msg = QString::fromStdString(s.message());
    QVERIFY2(msg.startsWith(QString::fromStdString(file) + ": " + expected), qPrintable(msg));
    QVERIFY(!msg.contains('\n'));
  }

  void cliRefusesBadFileBeforeRunning() {
    const std::string dir = freshDir("cliRefusesBadFileBeforeRunning");
    const std::string file =
        write(dir, "s.json",
              "{\"models\": [\"gen:random\", \"m/*.onnx\"], \"platforms\": [\"pim\"], \"algorithms\": [\"heft\"]}");
    const auto r = test::runCli({"sweep", QString::fromStdString(file)});
    QCOMPARE(r.code, 2);
    QCOMPARE(QString(r.err).trimmed(),
             QString::fromStdString("partex-cli: " + file + ": models[1]: no file matches 'm/*.onnx'"));
    QVERIFY(!fs::exists(fs::path(dir) / "s-results"));  // nothing ran, nothing written
  }

  void cliRunStatusAndMerge() {
    const std::string dir = freshDir("cliRunStatusAndMerge");
    const std::string tg = test::testDataDir() + "/taskgraphs";
    const std::string file = write(dir, "tiny.json",
                                   "{\"models\": [\"" + tg +
                                       "/heft2002.json\"], \"algorithms\": [\"heft\", \"peft\"], "
                                       "\"link_bandwidth_scale\": [1, 2]}");
    auto r = test::runCli({"sweep", QString::fromStdString(file)});
    QVERIFY2(r.code == 0, r.err.constData());
    // Not a terminal: one plain progress line per case on stderr.
    QCOMPARE(QString(r.err).count(QStringLiteral("cases  ")), 4);
    std::ifstream csv(dir + "/tiny-results/results.csv");
    int lines = 0;
    for (std::string l; std::getline(csv, l);) ++lines;
    QCOMPARE(lines, 1 + 4);
    r = test::runCli({"sweep", "status", QString::fromStdString(file)});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("4 cases, 4 done"), r.out.constData());
    // A longer sweep over the same results: two cases missing until it runs; merge says so and exits 1.
    write(dir, "tiny.json",
          "{\"models\": [\"" + tg +
              "/heft2002.json\"], \"algorithms\": [\"heft\", \"peft\", \"cpop\"], "
              "\"link_bandwidth_scale\": [1, 2], \"output\": \"tiny-results\"}");
    r = test::runCli({"sweep", "merge", QString::fromStdString(file)});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("2 cases missing"), r.err.constData());
    r = test::runCli({"sweep", QString::fromStdString(file), "--quiet"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.contains("4 already done, 2 run now"), r.err.constData());
    r = test::runCli({"sweep", QString::fromStdString(file), "--shard", "3/3"});
    QCOMPARE(r.code, 2);
  }

  void expansionOrderAndKeys() {
    const std::string dir = freshDir("expansionOrderAndKeys");
    auto s = loadSweepFile(smallSweep(dir));
    QVERIFY2(s, s.message().c_str());
    QCOMPARE(s->models.size(), size_t{4});
    QVERIFY(s->models[0].taskGraph);
    QCOMPARE(s->models[2].label, std::string("gen:random?nodes=30&seed=1"));
    const auto cases = expandSweep(*s);
    // task graphs cross no platform: 2 x (2 bw x 3 algos); generated: 2 x (2 platforms x 2 bw x 3 algos)
    QCOMPARE(cases.size(), size_t{2 * 6 + 2 * 12});
    // A model outside the sweep file's folder is labelled by its absolute path.
    QCOMPARE(cases[0].key, fs::path(test::testDataDir() + "/taskgraphs/heft2002.json").lexically_normal().string() +
                               "||task graph|bw=0.5|lat=1|heft");
    QCOMPARE(cases[12].key, std::string("gen:random?nodes=30&seed=1||cpu-gpu-pcie|bw=0.5|lat=1|heft"));
    QCOMPARE(cases[13].key, std::string("gen:random?nodes=30&seed=1||cpu-gpu-pcie|bw=0.5|lat=1|peft"));
    QCOMPARE(cases[15].key, std::string("gen:random?nodes=30&seed=1||cpu-gpu-pcie|bw=2|lat=1|heft"));
    for (size_t i = 0; i < cases.size(); ++i) QCOMPARE(cases[i].index, i);
  }

  void shards() {
    std::vector<SweepCase> cases(10);
    for (size_t i = 0; i < cases.size(); ++i) cases[i].index = i;
    std::vector<int> seen(10, 0);
    for (int i = 0; i < 3; ++i)
      for (const auto& c : selectShard(cases, i, 3)) {
        QCOMPARE(static_cast<int>(c.index % 3), i);
        ++seen[c.index];
      }
    QCOMPARE(seen, std::vector<int>(10, 1));
    QVERIFY(parseShard("2/3"));
    QCOMPARE(parseShard("2/3")->first, 2);
    QVERIFY(!parseShard("3/3"));
    QVERIFY(!parseShard("-1/3"));
    QVERIFY(!parseShard("1"));
    QCOMPARE(slurmArraySpec({0, 1, 2, 3}, 2), std::string("0-3%2"));
    QCOMPARE(slurmArraySpec({1, 4}, 0), std::string("1,4"));
    QCOMPARE(slurmArraySpec({5}, 0), std::string("5"));
  }

  void generatorReferences() {
    auto g = parseGeneratorRef("gen:bert?layers=2&seq=64&weights=false&image_size=32");
    QVERIFY2(g, g.message().c_str());
    QCOMPARE(g->kind, std::string("bert"));
    QCOMPARE(g->layers, int64_t{2});
    QCOMPARE(g->seqLen, int64_t{64});
    QCOMPARE(g->imageSize, int64_t{32});
    QVERIFY(!parseGeneratorRef("gen:random?nodes=many"));
    auto p = loadProblem("gen:random?nodes=25&seed=3", "cpu-gpu-pcie", {});
    QVERIFY2(p, p.message().c_str());
    QVERIFY(p->table.numTasks() >= 25);
  }

  void linkScaling() {
    auto plat = loadPreset("cpu-gpu-pcie");
    QVERIFY(plat);
    const DeviceId a = plat->findDevice("cpu"), b = plat->findDevice("gpu");
    QVERIFY(a >= 0 && b >= 0);
    const int64_t bytes = 64 << 20;
    const double before = plat->transferUs(a, b, bytes);
    const Link* l = plat->findLink(a, b);
    QVERIFY(l && l->latencyUs > 0);
    Platform scaled = *plat;
    scaleLinks(scaled, {4.0, 2.0});
    const double expected = 2.0 * l->latencyUs + (before - l->latencyUs) / 4.0;
    QVERIFY2(std::abs(scaled.transferUs(a, b, bytes) - expected) < 1e-6 * expected,
             qPrintable(QString::number(scaled.transferUs(a, b, bytes))));
    // The cost table of the scaled problem follows (transfers are built from the scaled links).
    auto p1 = loadProblem("gen:random?nodes=25&seed=3", "cpu-gpu-pcie", {});
    auto p4 = loadProblem("gen:random?nodes=25&seed=3", "cpu-gpu-pcie", {}, {4.0, 1.0});
    QVERIFY(p1 && p4);
    QVERIFY(p4->table.transferUs(a, b, bytes) < p1->table.transferUs(a, b, bytes) / 3.5);
  }

  void resultsSurviveACutLine() {
    const std::string dir = freshDir("resultsSurviveACutLine");
    const std::string path = (fs::path(dir) / "r" / "results.jsonl").string();
    SweepRow r;
    r.key = "m||p|bw=1|lat=1|heft";
    r.valid = true;
    r.makespanUs = 123.25;
    r.error = "a \"quoted\", text";
    r.version = partexVersion();
    r.inputsSha256 = "abc";
    {
      ResultsAppender out;
      QVERIFY(out.open(path, nullptr));
      QVERIFY(out.append(r));
      r.key = "m||p|bw=1|lat=1|peft";
      QVERIFY(out.append(r));
    }
    std::ofstream(path, std::ios::app) << "{\"case\": \"m||p|bw=1|lat=1|gre";  // a crash mid-write
    std::vector<std::string> notes;
    auto rows = readResults(path, &notes);
    QVERIFY(rows);
    QCOMPARE(rows->size(), size_t{2});
    QCOMPARE(rows->at(0).makespanUs, 123.25);
    QCOMPARE(rows->at(1).error, r.error);
    QCOMPARE(notes.size(), size_t{1});
    QVERIFY2(notes[0].find("line 3 is cut short") != std::string::npos, notes[0].c_str());
    {
      ResultsAppender out;
      notes.clear();
      QVERIFY(out.open(path, &notes));
      QCOMPARE(notes.size(), size_t{1});  // the cut line is removed before the next append
      r.key = "m||p|bw=1|lat=1|greedy";
      QVERIFY(out.append(r));
    }
    notes.clear();
    rows = readResults(path, &notes);
    QVERIFY(rows);
    QCOMPARE(rows->size(), size_t{3});
    QVERIFY(notes.empty());
    // CSV quoting keeps the commas and quotes of the error text in one field.
    QVERIFY(rowToCsv(r).find("\"a \"\"quoted\"\", text\"") != std::string::npos);
  }

  void runResumeAndShardsMergeEqual() {
    const std::string dir = freshDir("runResumeAndShardsMergeEqual");
    auto s = loadSweepFile(smallSweep(dir));
    QVERIFY2(s, s.message().c_str());
    const auto cases = expandSweep(*s);

    // A whole run.
    s->output = dir + "/whole";
    size_t rowsSeen = 0;
    SweepRunOptions o;
    o.onRow = [&](const SweepProgress& p, const SweepRow&) {
      ++rowsSeen;
      QCOMPARE(p.done, rowsSeen);
    };
    auto sum = runSweep(*s, o);
    QVERIFY2(sum, sum.message().c_str());
    QCOMPARE(sum->ran, cases.size());
    QCOMPARE(sum->invalid, size_t{0});
    QVERIFY(!sum->interrupted);
    auto whole = collectResults(*s, cases);
    QVERIFY(whole && whole->missing.empty());
    for (const auto& r : whole->rows) {
      QVERIFY2(r.valid, r.error.c_str());
      QVERIFY(r.makespanUs > 0 && r.ratioToBound >= 1.0 - 1e-9 && r.speedup > 0);
      QCOMPARE(r.modelSha256.size(), size_t{64});
      QCOMPARE(r.platformSha256.size(), r.platform == "task graph" ? size_t{0} : size_t{64});
      QCOMPARE(r.version, partexVersion());
    }
    // Lower bandwidth never helps HEFT's transfers on the generated models: the bw=0.5 and bw=2 cases differ.
    QVERIFY(whole->rows[12].makespanUs != whole->rows[15].makespanUs);

    // Resume: nothing runs again.
    auto again = runSweep(*s, {});
    QVERIFY(again);
    QCOMPARE(again->ran, size_t{0});
    QCOMPARE(again->skipped, cases.size());

    // Three shards into another folder, then merged: the same table but for the timing columns.
    s->output = dir + "/sharded";
    for (int i = 0; i < 3; ++i) {
      SweepRunOptions so;
      so.shardIndex = i;
      so.shardCount = 3;
      auto r = runSweep(*s, so);
      QVERIFY2(r, r.message().c_str());
      QCOMPARE(r->ran, selectShard(cases, i, 3).size());
      QVERIFY(fs::exists(shardResultsPath(s->output, i, 3)));
    }
    auto merged = collectResults(*s, cases);
    QVERIFY(merged && merged->missing.empty());
    QCOMPARE(merged->files.size(), size_t{3});
    QCOMPARE(withoutTiming(merged->rows), withoutTiming(whole->rows));
    QVERIFY(writeSweepOutputs(*s, *merged));
    for (const char* f : {"results.csv", "results.jsonl", "report.md", "plots/ratio_to_lower_bound.svg",
                          "plots/speedup_vs_bandwidth.svg", "plots/sched_time_vs_size.svg"})
      QVERIFY2(fs::exists(fs::path(s->output) / f), f);

    // A changed algorithm option makes the rows stale: those cases run again, the others do not.
    auto changed = loadSweepFile(smallSweep(dir, ", \"time_limit\": 5"));
    QVERIFY(changed);
    changed->output = dir + "/whole";
    auto stale = collectResults(*changed, expandSweep(*changed));
    QVERIFY(stale);
    QCOMPARE(stale->missing.size(), cases.size());
    QCOMPARE(stale->stale, cases.size());
  }

  // A throughput sweep: every row carries its plan's stream, equal to simulateStream's; pipeline's
  // period is never above heft's plan's on the same case; the objective changes the inputs' hash.
  void throughputSweep() {
    const std::string dir = freshDir("throughputSweep");
    const std::string tg = test::testDataDir() + "/taskgraphs";
    const std::string file =
        write(dir, "sweep.json",
              "{\"models\": [{\"gen\": \"random\", \"nodes\": 30, \"seed\": 1}], \"platforms\": [\"mobile-soc\"],"
              " \"algorithms\": [\"heft\", \"pipeline\"], \"objective\": \"throughput\", \"time_limit\": 2}");
    auto s = loadSweepFile(file);
    QVERIFY2(s, s ? "" : s.message().c_str());
    QVERIFY(s->objective == Objective::Throughput);
    const auto cases = expandSweep(*s);
    auto sum = runSweep(*s, {});
    QVERIFY2(sum, sum ? "" : sum.message().c_str());
    auto res = collectResults(*s, cases);
    QVERIFY(res && res->rows.size() == 2);
    auto p = loadProblem("gen:random?nodes=30&seed=1", "mobile-soc", {});
    QVERIFY(p);
    for (const auto& r : res->rows) {
      QVERIFY2(r.valid, r.error.c_str());
      QCOMPARE(r.objective, std::string("throughput"));
      QVERIFY(r.periodUs > 0 && r.streamLatencyUs >= r.periodUs - 1e-9);
      QVERIFY(r.periodUs <= r.makespanUs + 1e-9);  // a stream is never slower than one inference after another
    }
    QVERIFY2(res->rows[1].periodUs <= res->rows[0].periodUs + 1e-9,
             qPrintable(QString("pipeline %1 heft %2").arg(res->rows[1].periodUs).arg(res->rows[0].periodUs)));
    // The same heft plan, simulated as a stream here, gives the row's period.
    SchedOptions o;
    o.timeLimitSec = 2;
    auto plan = findScheduler("heft")->schedule(p->table, {}, o);
    QVERIFY(plan);
    auto st = simulateStream(p->table, *plan);
    QVERIFY(st);
    QCOMPARE(res->rows[0].periodUs, st->periodUs);
    // A latency sweep of the same file hashes its cases differently (they run again).
    auto lat = parseSweep("{\"models\": [{\"gen\": \"random\", \"nodes\": 30, \"seed\": 1}], \"platforms\": "
                          "[\"mobile-soc\"], \"algorithms\": [\"heft\", \"pipeline\"], \"time_limit\": 2}",
                          file);
    QVERIFY(lat);
    CaseHasher h1(*s), h2(*lat);
    auto a = h1.hash(cases[0]);
    auto b = h2.hash(expandSweep(*lat)[0]);
    QVERIFY(a && b);
    QVERIFY(a->inputs != b->inputs);
  }

  void cancelKeepsFinishedCases() {
    const std::string dir = freshDir("cancelKeepsFinishedCases");
    auto s = loadSweepFile(smallSweep(dir));
    QVERIFY(s);
    s->output = dir + "/cancelled";
    std::atomic<bool> stop{false};
    SweepRunOptions o;
    o.cancel = &stop;
    o.onRow = [&](const SweepProgress& p, const SweepRow&) {
      if (p.done == 5) stop.store(true);  // as SIGINT does
    };
    auto sum = runSweep(*s, o);
    QVERIFY(sum);
    QVERIFY(sum->interrupted);
    QCOMPARE(sum->ran, size_t{5});
    auto t = collectResults(*s, expandSweep(*s));
    QVERIFY(t);
    QCOMPARE(t->rows.size(), size_t{5});
  }

  void reportPlotsAreWellFormed() {
    std::vector<SweepRow> rows;
    for (int m = 0; m < 4; ++m)
      for (double bw : {0.5, 1.0, 2.0})
        for (const char* a : {"heft", "peft", "a<b&c"}) {
          SweepRow r;
          r.key = "m" + std::to_string(m) + "||p|bw=" + std::to_string(bw) + "|lat=1|" + a;
          r.algorithm = a;
          r.platform = m % 2 ? "cpu-npu" : "pim";
          r.bandwidthScale = bw;
          r.valid = true;
          r.tasks = 10 * (m + 1);
          r.makespanUs = 100 + m + bw;
          r.ratioToBound = 1.0 + 0.1 * m;
          r.speedup = 1.0 + 0.2 * bw;
          r.schedMs = 0.01 * (m + 1);
          rows.push_back(r);
        }
    for (const std::string& svgText :
         {ratioBoxPlotSvg(rows), speedupVsBandwidthSvg(rows), schedTimeVsSizeSvg(rows), ratioBoxPlotSvg({})}) {
      QXmlStreamReader x(QString::fromStdString(svgText));
      int texts = 0;
      while (!x.atEnd()) {
        x.readNext();
        if (x.isStartElement() && x.name() == QLatin1String("text")) ++texts;
      }
      QVERIFY2(!x.hasError(), qPrintable(x.errorString()));
      QVERIFY(texts > 0);
    }
    const std::string box = ratioBoxPlotSvg(rows);
    QVERIFY(box.find("a&lt;b&amp;c (12)") != std::string::npos);  // escaped label with its count
    QVERIFY(ratioBoxPlotSvg({}).find("no valid results") != std::string::npos);
    QVERIFY(speedupVsBandwidthSvg(rows).find(">cpu-npu<") != std::string::npos);  // one panel per platform
  }

  void slurmScriptsRunOnlyMissingShards() {
    const std::string dir = freshDir("slurmScriptsRunOnlyMissingShards");
    auto s = loadSweepFile(smallSweep(dir));
    QVERIFY(s);
    s->output = dir + "/out";
    const auto cases = expandSweep(*s);
    SlurmOptions o;
    o.cli = "/opt/partex/bin/partex-cli";
    o.sweepFile = dir + "/sweep.json";
    o.shards = 4;
    o.arrayLimit = 2;
    o.partition = "debug";
    o.time = "00:10:00";
    auto t = collectResults(*s, cases);
    QVERIFY(t);
    SlurmPlan p = planSlurm(*s, cases, *t, o);
    QCOMPARE(p.indices, (std::vector<int>{0, 1, 2, 3}));
    QVERIFY(p.arrayScript.find("#SBATCH --array=0-3%2\n") != std::string::npos);
    QVERIFY(p.arrayScript.find("#SBATCH --partition=debug\n") != std::string::npos);
    QVERIFY(p.arrayScript.find("#SBATCH --time=00:10:00\n") != std::string::npos);
    QVERIFY(p.arrayScript.find("--shard \"${SLURM_ARRAY_TASK_ID}/4\"") != std::string::npos);
    QVERIFY(p.mergeScript.find("sweep merge '" + dir + "/sweep.json'") != std::string::npos);
    // Shards 1 and 3 done: a re-submission's array names 0 and 2 only.
    for (int i : {1, 3}) {
      SweepRunOptions so;
      so.shardIndex = i;
      so.shardCount = 4;
      QVERIFY(runSweep(*s, so));
    }
    t = collectResults(*s, cases);
    QVERIFY(t);
    p = planSlurm(*s, cases, *t, o);
    QCOMPARE(p.indices, (std::vector<int>{0, 2}));
    QVERIFY(p.arrayScript.find("#SBATCH --array=0,2%2\n") != std::string::npos);
    QVERIFY(writeSlurmScripts(*s, p));
    QCOMPARE(lastSubmittedShards(s->output), 4);
    const auto status = slurmTaskStatus(s->output, cases, t->missing, 4);
    QCOMPARE(status.size(), size_t{2});
    QCOMPARE(status[0].index, 0);
    QCOMPARE(status[0].missing, selectShard(cases, 0, 4).size());
    QVERIFY(!status[0].logExists);
  }
};

QTEST_GUILESS_MAIN(TestSweep)
#include "tst_sweep.moc"
