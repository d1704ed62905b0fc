// Exports: Chrome/Perfetto trace, DOT, CSV, OpenVINO affinity map and onert backend map of a
// hand-made plan match their golden files, and the trace has the structure viewers need.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <filesystem>
#include <map>
#include <set>

#include "plan/exports.h"
#include "plan_fixture.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

QJsonArray traceEvents(const std::string& text) {
  QJsonParseError err;
  auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &err);
  if (err.error != QJsonParseError::NoError) qWarning("trace is not JSON: %s", qPrintable(err.errorString()));
  return doc.object()["traceEvents"].toArray();
}

/// Splits one CSV record per RFC 4180 (quoted fields may hold commas and doubled quotes).
QStringList csvRecord(const QString& line) {
  QStringList out;
  QString cur;
  bool quoted = false;
  for (int i = 0; i < line.size(); ++i) {
    const QChar c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out << cur;
      cur.clear();
    } else {
      cur += c;
    }
  }
  out << cur;
  return out;
}

Platform socPlatform() {
  Platform p;
  p.name = "soc";
  Device big;
  big.id = "big";
  big.kind = DeviceKind::Cpu;
  Device mali;
  mali.id = "mali";
  mali.kind = DeviceKind::Gpu;
  Device ethos;
  ethos.id = "ethos";
  ethos.kind = DeviceKind::Npu;
  Device hexagon;
  hexagon.id = "hexagon";
  hexagon.kind = DeviceKind::Dsp;
  p.devices = {big, mali, ethos, hexagon};
  p.host = "big";
  return p;
}

}  // namespace

class TestExports : public QObject {
  Q_OBJECT
 private slots:
  void goldenFiles_data();
  void goldenFiles();
  void traceHasThreadsSlicesAndFlows();
  void mergedTraceHasOneProcessPerPlan();
  void csvQuotesAndColumns();
  void dotColoursDevicesAndMarksTransfers();
  void deviceNameMappings();
  void backendMapLine();
  void saveExportWritesAtomically();
};

void TestExports::goldenFiles_data() {
  QTest::addColumn<QString>("file");
  QTest::newRow("trace") << "tiny.trace.expected.json";
  QTest::newRow("dot") << "tiny.expected.dot";
  QTest::newRow("csv") << "tiny.expected.csv";
  QTest::newRow("openvino affinity") << "tiny.affinity.expected.json";
  QTest::newRow("onert backend map") << "tiny.backendmap.expected.txt";
}

void TestExports::goldenFiles() {
  QFETCH(QString, file);
  const auto t = test::tinyTable();
  const auto plan = test::tinyPlan();
  const auto tl = test::tinyTimeline();
  std::string text;
  if (file == "tiny.trace.expected.json") text = traceJson(t, tl, "heft");
  if (file == "tiny.expected.dot") text = planToDot(t, plan, &tl);
  if (file == "tiny.expected.csv") text = timelineToCsv(t, tl);
  if (file == "tiny.affinity.expected.json") text = openVinoAffinityJson(t, plan);
  if (file == "tiny.backendmap.expected.txt") text = onertBackendMap(t, plan) + "\n";
  QVERIFY(!text.empty());
  PARTEX_COMPARE_GOLDEN(file.toStdString(), text);
}

void TestExports::traceHasThreadsSlicesAndFlows() {
  const auto t = test::tinyTable();
  const auto tl = test::tinyTimeline();
  const auto text = traceJson(t, tl, "heft", 7);
  QJsonParseError err;
  auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &err);
  QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
  QCOMPARE(doc.object()["displayTimeUnit"].toString(), QString("ms"));
  const QJsonArray events = doc.object()["traceEvents"].toArray();

  QString processName;
  std::map<int, QString> threads;
  int nodes = 0, transfers = 0;
  std::map<qint64, QJsonObject> starts, finishes;
  std::map<QString, QJsonObject> nodeByName;
  for (const auto& ev : events) {
    const QJsonObject e = ev.toObject();
    QCOMPARE(e["pid"].toInt(), 7);
    const QString ph = e["ph"].toString();
    if (ph == "M" && e["name"] == "process_name") processName = e["args"].toObject()["name"].toString();
    if (ph == "M" && e["name"] == "thread_name") {
      QVERIFY2(!threads.count(e["tid"].toInt()), "a thread is named twice");
      threads[e["tid"].toInt()] = e["args"].toObject()["name"].toString();
    }
    if (ph == "X" && e["cat"] == "Node") {
      ++nodes;
      const QJsonObject args = e["args"].toObject();
      QVERIFY(args.contains("op_name"));
      QVERIFY(args.contains("provider"));
      QCOMPARE(args["op_name"].toString(), e["name"].toString());
      QCOMPARE(threads[e["tid"].toInt()], args["provider"].toString());  // on its device's thread
      nodeByName[e["name"].toString()] = e;
    }
    if (ph == "X" && e["cat"] == "Transfer") {
      ++transfers;
      const QString thread = threads[e["tid"].toInt()];
      QVERIFY2(thread == "pcie" || thread == "npu-bus", qPrintable(thread));
      QVERIFY(e["dur"].toDouble() > 0);
    }
    if (ph == "s") {
      QVERIFY2(!starts.count(e["id"].toInteger()), "flow id reused");
      starts[e["id"].toInteger()] = e;
    }
    if (ph == "f") {
      QVERIFY2(!finishes.count(e["id"].toInteger()), "flow id reused");
      QCOMPARE(e["bp"].toString(), QString("e"));
      finishes[e["id"].toInteger()] = e;
    }
  }
  QCOMPARE(processName, QString("heft"));
  // One thread per device and one per link resource, named after them.
  QCOMPARE(threads.size(), size_t(t.numDevices() + t.numLinkResources));
  std::set<QString> names;
  for (const auto& [tid, name] : threads) names.insert(name);
  QCOMPARE(names, (std::set<QString>{"cpu", "gpu", "npu", "pcie", "npu-bus"}));
  QCOMPARE(nodes, t.numTasks());
  QCOMPARE(transfers, 6);
  QCOMPARE(nodeByName["branch_a"]["ts"].toDouble(), 4.25);
  QCOMPARE(nodeByName["branch_a"]["dur"].toDouble(), 2.5);

  // A flow per cross-device edge (5 of the 6 edges), start and finish paired by id, from the
  // producer's end on its device to the consumer's start on its device.
  QCOMPARE(starts.size(), size_t(5));
  QCOMPARE(finishes.size(), size_t(5));
  for (const auto& [id, s] : starts) {
    QVERIFY2(finishes.count(id), "flow start without finish");
    const QJsonObject& f = finishes[id];
    QCOMPARE(s["name"], f["name"]);
    QCOMPARE(s["cat"], f["cat"]);
    QVERIFY(s["ts"].toDouble() <= f["ts"].toDouble());
    QVERIFY(s["tid"].toInt() != f["tid"].toInt());
  }
  // input_conv (npu, ends 2.5) -> relu1 (cpu, starts 3.0) is one of them.
  bool found = false;
  for (const auto& [id, s] : starts) {
    const QJsonObject& f = finishes[id];
    if (threads[s["tid"].toInt()] == "npu" && s["ts"].toDouble() == 2.5 && threads[f["tid"].toInt()] == "cpu" &&
        f["ts"].toDouble() == 3.0)
      found = true;
  }
  QVERIFY(found);
}

void TestExports::mergedTraceHasOneProcessPerPlan() {
  const auto t = test::tinyTable();
  const auto tl = test::tinyTimeline();
  // A second plan: everything on the cpu, back to back (no transfers, no flows).
  Timeline cpuOnly;
  double at = 0;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    cpuOnly.tasks.push_back({0, at, at + t.w(v, 0)});
    at += t.w(v, 0);
  }
  cpuOnly.makespan = at;
  const auto text = traceJson({{"heft", &t, &tl, 0}, {"cpu-only", &t, &cpuOnly, 0}, {"heft again", &t, &tl, 9}});
  const QJsonArray events = traceEvents(text);
  std::map<int, QString> processes;
  std::map<int, int> slicesPerPid;
  std::map<qint64, int> flowIds;
  for (const auto& ev : events) {
    const QJsonObject e = ev.toObject();
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes[e["pid"].toInt()] = e["args"].toObject()["name"].toString();
    if (e["ph"] == "X" && e["cat"] == "Node") ++slicesPerPid[e["pid"].toInt()];
    if (e["ph"] == "s") ++flowIds[e["id"].toInteger()];
  }
  QCOMPARE(processes, (std::map<int, QString>{{1, "heft"}, {2, "cpu-only"}, {9, "heft again"}}));
  QCOMPARE(slicesPerPid, (std::map<int, int>{{1, 5}, {2, 5}, {9, 5}}));
  QCOMPARE(flowIds.size(), size_t(10));  // 5 per heft plan, ids unique across the file
  for (const auto& [id, n] : flowIds) QCOMPARE(n, 1);
}

void TestExports::csvQuotesAndColumns() {
  const auto t = test::tinyTable();
  const auto csv = QString::fromStdString(timelineToCsv(t, test::tinyTimeline()));
  QStringList lines = csv.split('\n');
  QCOMPARE(lines.last(), QString());  // ends with a newline
  lines.removeLast();
  QCOMPARE(lines.size(), 1 + t.numTasks());
  QCOMPARE(lines[0], QString("name,op_type,device,start_us,end_us,duration_us,provenance"));
  const QStringList concat = csvRecord(lines[5]);
  QCOMPARE(concat.size(), 7);
  QCOMPARE(concat[0], QString("concat,\"out\""));
  QCOMPARE(lines[5].left(16), QString("\"concat,\"\"out\"\"\""));
  QCOMPARE(concat[2], QString("cpu"));
  QCOMPARE(concat[5], QString("1.000"));
  QCOMPARE(concat[6], QString("imported"));
  QCOMPARE(csvRecord(lines[2])[6], QString("measured"));
  QCOMPARE(csvRecord(lines[1])[6], QString("modelled"));
}

void TestExports::dotColoursDevicesAndMarksTransfers() {
  const auto t = test::tinyTable();
  const auto tl = test::tinyTimeline();
  const auto dot = QString::fromStdString(planToDot(t, test::tinyPlan(), &tl));
  QVERIFY(dot.startsWith("digraph \"tiny\" {"));
  QVERIFY(dot.contains("cluster_legend"));
  // Nodes: "op_type\nname", filled with the device colour (npu is device 2: #009E73).
  QVERIFY(dot.contains("n0 [label=\"Conv\\ninput_conv\", fillcolor=\"#009E73\""));
  QVERIFY(dot.contains("n4 [label=\"Concat\\nconcat,\\\"out\\\"\", fillcolor=\"#E69F00\""));
  // The same-device edge is plain; cross-device edges are bold, with bytes and time.
  QVERIFY(dot.contains("  n0 -> n2;\n"));
  QVERIFY(dot.contains("n0 -> n1 [color=\"#C0392B\""));
  QVERIFY(dot.contains("label=\"4.0 KiB\\n0.5 us\""));
  QCOMPARE(okabeItoPalette().size(), size_t(8));
  QCOMPARE(deviceColor(0), std::string("#E69F00"));
  QCOMPARE(deviceColor(9), std::string("#56B4E9"));  // cycles
}

void TestExports::deviceNameMappings() {
  // Without a platform: by id.
  QCOMPARE(openVinoDeviceName("cpu"), std::string("CPU"));
  QCOMPARE(openVinoDeviceName("gpu"), std::string("GPU"));
  QCOMPARE(openVinoDeviceName("npu"), std::string("NPU"));
  QCOMPARE(openVinoDeviceName("dsp"), std::string("DSP"));
  QCOMPARE(onertBackendName("cpu"), std::string("cpu"));
  QCOMPARE(onertBackendName("gpu"), std::string("acl_cl"));
  QCOMPARE(onertBackendName("npu"), std::string("npu"));
  QCOMPARE(onertBackendName("pim"), std::string("pim"));
  // With a platform: by device kind.
  const Platform p = socPlatform();
  QCOMPARE(openVinoDeviceName("big", &p), std::string("CPU"));
  QCOMPARE(openVinoDeviceName("mali", &p), std::string("GPU"));
  QCOMPARE(openVinoDeviceName("ethos", &p), std::string("NPU"));
  QCOMPARE(openVinoDeviceName("hexagon", &p), std::string("HEXAGON"));
  QCOMPARE(onertBackendName("big", &p), std::string("cpu"));
  QCOMPARE(onertBackendName("mali", &p), std::string("acl_cl"));
  QCOMPARE(onertBackendName("ethos", &p), std::string("npu"));
  QCOMPARE(onertBackendName("hexagon", &p), std::string("hexagon"));

  // The affinity map: every operator, in graph order.
  const auto t = test::tinyTable();
  const auto text = openVinoAffinityJson(t, test::tinyPlan());
  auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(text));
  QVERIFY(doc.isObject());
  const QJsonObject m = doc.object();
  QCOMPARE(m.size(), t.numTasks());
  QCOMPARE(m["input_conv"].toString(), QString("NPU"));
  QCOMPARE(m["branch_b"].toString(), QString("GPU"));
  QCOMPARE(m["concat,\"out\""].toString(), QString("CPU"));
}

void TestExports::backendMapLine() {
  const auto t = test::tinyTable();
  const auto line = onertBackendMap(t, test::tinyPlan());
  QCOMPARE(line, std::string("OP_BACKEND_MAP=\"0=npu;1=cpu;2=npu;3=acl_cl;4=cpu\""));
  QVERIFY(line.find('\n') == std::string::npos);
  QCOMPARE(onertBackends(t, test::tinyPlan()), std::string("npu;cpu;acl_cl"));
}

void TestExports::saveExportWritesAtomically() {
  const auto t = test::tinyTable();
  const std::string path = test::tempDir() + "/backend.env";
  auto st = saveExport(path, onertBackendMap(t, test::tinyPlan()));
  QVERIFY2(st.isOk(), st.message().c_str());
  auto text = readFile(path);
  QVERIFY(text.isOk());
  QCOMPARE(*text, onertBackendMap(t, test::tinyPlan()) + "\n");
  auto bad = saveExport(test::tempDir() + "/missing/dir/trace.json", "{}");
  QVERIFY(!bad.isOk());
  QVERIFY2(QString::fromStdString(bad.message()).contains("trace.json"), bad.message().c_str());
}

QTEST_GUILESS_MAIN(TestExports)
#include "tst_exports.moc"
