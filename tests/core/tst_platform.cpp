// Platforms: presets, strict JSON validation, transfer times, exclusive groups, device support, this-machine.
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "platform/platform.h"
#include "testutil.h"

using namespace partex;
using json = nlohmann::ordered_json;

namespace {

/// A small valid platform: cpu (host) and npu, one link, one exclusive group.
json basePlatform() {
  return json::parse(R"({
    "format": "partex-platform", "version": 1, "name": "p", "description": "test", "sources": ["hand-made"],
    "host": "cpu",
    "devices": [
      {"id": "cpu", "kind": "cpu", "peak_gflops": {"default": 100}, "bandwidth_gbs": 20},
      {"id": "npu", "name": "NPU", "kind": "npu", "peak_gflops": {"default": 50, "conv": 1000},
       "dtype_speedup": {"int8": 2}, "bandwidth_gbs": 10, "launch_overhead_us": 20,
       "supported_ops": ["Conv", "Relu"],
       "constraints": [{"kind": "channels_multiple_of", "ops": ["Conv"], "value": 16}]}
    ],
    "links": [{"from": "cpu", "to": "npu", "bandwidth_gbs": 4, "latency_us": 10}],
    "exclusive_groups": [{"name": "modes", "devices": ["cpu", "npu"]}]
  })");
}

QByteArray variant(const std::function<void(json&)>& change) {
  json j = basePlatform();
  change(j);
  return QByteArray::fromStdString(j.dump());
}

Platform mustParse(const std::string& text) {
  auto p = parsePlatform(text, "p.json");
  if (!p) qFatal("parse failed: %s", p.message().c_str());
  return *p;
}

Device& device(Platform& p, const std::string& id) {
  DeviceId d = p.findDevice(id);
  if (d == kNone) qFatal("no device %s", id.c_str());
  return p.devices[static_cast<size_t>(d)];
}

/// x[1,cin,8,8] -> Conv(W[cout,cin,3,3]) -> y[1,cout,6,6]; returns the Conv's id.
OpId addConv(Graph& g, const std::string& name, int64_t cin, int64_t cout, bool knownInput = true) {
  Value x;
  x.name = name + "_x";
  x.dtype = DType::Float32;
  x.shape = {1, cin, 8, 8};
  x.shapeKnown = knownInput;
  x.isGraphInput = true;
  ValueId xi = g.addValue(x);
  g.inputs.push_back(xi);
  Value w;
  w.name = name + "_w";
  w.dtype = DType::Float32;
  w.shape = {cout, cin, 3, 3};
  w.shapeKnown = true;
  w.isWeight = true;
  ValueId wi = g.addValue(w);
  Value y;
  y.name = name + "_y";
  y.dtype = DType::Float32;
  y.shape = {1, cout, 6, 6};
  y.shapeKnown = true;
  ValueId yi = g.addValue(y);
  Node n;
  n.name = name;
  n.opType = "Conv";
  n.inputs = {xi, wi};
  n.outputs = {yi};
  return g.addNode(n);
}

/// A unary op of `type` on the output of `producer`.
OpId addUnary(Graph& g, const std::string& type, OpId producer, const std::string& name) {
  ValueId in = g.nodes[static_cast<size_t>(producer)].outputs[0];
  Value y = g.values[static_cast<size_t>(in)];
  y.name = name + "_y";
  y.isGraphInput = false;
  y.isWeight = false;
  ValueId yi = g.addValue(y);
  Node n;
  n.name = name;
  n.opType = type;
  n.inputs = {in};
  n.outputs = {yi};
  return g.addNode(n);
}

}  // namespace

class TestPlatform : public QObject {
  Q_OBJECT

 private slots:
  void presetNamesListed() {
    auto names = presetNames();
    std::set<std::string> set(names.begin(), names.end());
    for (const char* n :
         {"mobile-soc", "cpu-npu", "cpu-gpu-pcie", "cpu-gpu-shared", "cpu-igpu-coupled", "pim", "npu-multicore", "desktop-rtx3090",
          "desktop-rtx4070", "desktop-rtx4090", "desktop-rtx5080", "this-machine"})
      QVERIFY2(set.count(n), n);
    QCOMPARE(names.back(), std::string("this-machine"));
  }

  void presetLoadsAndRoundTrips_data() {
    QTest::addColumn<QString>("name");
    for (const auto& n : presetNames()) QTest::newRow(n.c_str()) << QString::fromStdString(n);
  }
  void presetLoadsAndRoundTrips() {
    QFETCH(QString, name);
    auto p = loadPreset(name.toStdString());
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(p->name, name.toStdString());
    QVERIFY(!p->description.empty());
    QVERIFY(!p->sources.empty());
    QVERIFY(p->devices.size() >= 2);
    QVERIFY(p->findDevice(p->host) != kNone);
    QCOMPARE(p->hostId(), p->findDevice(p->host));

    std::string text = platformToJson(*p);
    auto again = parsePlatform(text, "roundtrip.json");
    QVERIFY2(again.isOk(), again.message().c_str());
    QCOMPARE(platformToJson(*again), text);
    QCOMPARE(again->devices.size(), p->devices.size());

    for (const Device& d : p->devices) {
      QVERIFY(!d.id.empty());
      QVERIFY(d.defaultPeakGflops > 0);
      for (const auto& [cls, v] : d.peakGflops) QVERIFY(v > 0);
      QVERIFY(d.memBandwidthGBs > 0);
      QVERIFY(d.cores >= 1);
    }
    for (const Link& l : p->links) {
      QVERIFY(p->findDevice(l.from) != kNone);
      QVERIFY(p->findDevice(l.to) != kNone);
      QVERIFY(l.from != l.to);
      QVERIFY(l.bandwidthGBs > 0);
    }
    for (const ExclusiveGroup& g : p->exclusiveGroups)
      for (const auto& id : g.devices) QVERIFY(p->findDevice(id) != kNone);
    // Every device can exchange tensors with the host, directly or not at all missing.
    const DeviceId h = p->hostId();
    for (DeviceId d = 0; d < static_cast<DeviceId>(p->devices.size()); ++d) {
      QVERIFY2(std::isfinite(p->transferUs(h, d, 1 << 20)), p->devices[d].id.c_str());
      QVERIFY2(std::isfinite(p->transferUs(d, h, 1 << 20)), p->devices[d].id.c_str());
    }
  }

  void presetSpecifics() {
    auto npu = loadPreset("cpu-npu");
    QVERIFY(npu.isOk());
    const Device& n = npu->devices[static_cast<size_t>(npu->findDevice("npu"))];
    QCOMPARE(n.supportedOps, (std::set<std::string>{"Conv", "Relu"}));
    QCOMPARE(n.constraints.size(), size_t(1));
    QCOMPARE(n.constraints[0].kind, std::string("channels_multiple_of"));
    QCOMPARE(n.constraints[0].value, int64_t(16));

    auto pcie = loadPreset("cpu-gpu-pcie");
    auto shared = loadPreset("cpu-gpu-shared");
    QVERIFY(pcie.isOk() && shared.isOk());
    const DeviceId c = pcie->findDevice("cpu"), g = pcie->findDevice("gpu");
    QVERIFY(pcie->transferUs(c, g, 1 << 20) > 0);
    QCOMPARE(shared->transferUs(shared->findDevice("cpu"), shared->findDevice("gpu"), 1 << 20), 0.0);
    QVERIFY(pcie->devices[g].launchOverheadUs >= 2.0);

    auto pim = loadPreset("pim");
    QVERIFY(pim.isOk());
    QVERIFY(pim->exclusive(pim->findDevice("cpu-serial"), pim->findDevice("cpu-parallel")));

    auto mc = loadPreset("npu-multicore");
    QVERIFY(mc.isOk());
    bool multicore = false;
    for (const Device& d : mc->devices)
      multicore = multicore || (d.cores > 1 && d.onChipBytes > 0 && d.kind == DeviceKind::Npu);
    QVERIFY(multicore);

    auto soc = loadPreset("mobile-soc");
    QVERIFY(soc.isOk());
    QVERIFY(soc->findDevice("cpu-big") != kNone && soc->findDevice("cpu-little") != kNone);
    QVERIFY(!soc->exclusive(soc->findDevice("cpu-big"), soc->findDevice("cpu-little")));
  }

  void validBaseParses() {
    auto p = parsePlatform(basePlatform().dump(), "p.json");
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(p->devices.size(), size_t(2));
    QCOMPARE(p->devices[0].name, std::string("cpu"));  // name defaults to the id
    QCOMPARE(p->links[0].bidirectional, true);
    QCOMPARE(p->links[0].sharedMemory, false);
  }

  /// The numbers a calibrated device adds (per-class bandwidth and launch, per-op-type costs) round-trip.
  void calibratedFieldsRoundTrip() {
    QByteArray text = variant([](json& j) {
      j["devices"][0]["bandwidth_gbs_by_class"] = {{"conv", 3.5}, {"elementwise", 30}};
      j["devices"][0]["launch_overhead_us_by_class"] = {{"conv", 9}, {"shape_only", 0}};
      j["devices"][0]["op_types"] = {{"Add", {{"peak_gflops", 0.4}, {"launch_overhead_us", 2.5}}},
                                     {"Resize", {{"bandwidth_gbs", 2}}}};
      j["devices"][1]["fusion"] = "epilogues";
      j["devices"][1]["copies"] = "inline";
      j["devices"][1]["reader_convert_gbs"] = 4.5;
      j["devices"][1]["wave_outputs"] = 540672;
      j["devices"][1]["reduction_step_us_by_class"] = {{"conv", 0.031}};
    });
    auto p = parsePlatform(text.toStdString(), "p.json");
    QVERIFY2(p.isOk(), p.message().c_str());
    const Device& d = p->devices[0];
    QCOMPARE(d.bandwidthGBsByClass.at(OpClass::Conv), 3.5);
    QCOMPARE(d.launchOverheadUsByClass.at(OpClass::ShapeOnly), 0.0);
    QCOMPARE(d.opTypeCosts.at("Add").peakGflops, 0.4);
    QCOMPARE(d.opTypeCosts.at("Add").bandwidthGBs, 0.0);  // absent: the class's
    QCOMPARE(d.opTypeCosts.at("Add").launchOverheadUs, 2.5);
    QCOMPARE(d.opTypeCosts.at("Resize").launchOverheadUs, -1.0);  // absent: the class's
    QCOMPARE(p->devices[1].fusion, std::string("epilogues"));
    QCOMPARE(p->devices[1].copies, std::string("inline"));
    QCOMPARE(p->devices[1].readerConvertGBs, 4.5);
    QCOMPARE(d.readerConvertGBs, 0.0);
    QVERIFY(d.copies.empty());
    QCOMPARE(p->devices[1].waveOutputs, int64_t{540672});
    QCOMPARE(p->devices[1].reductionStepUsByClass.at(OpClass::Conv), 0.031);
    QVERIFY(d.fusion.empty() && d.waveOutputs == 0 && d.reductionStepUsByClass.empty());
    auto back = parsePlatform(platformToJson(*p), "again.json");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(platformToJson(*back), platformToJson(*p));
    QVERIFY(platformToJson(*p).find("\"op_types\"") != std::string::npos);
    // A device without them writes none of the three fields.
    QVERIFY(platformToJson(*parsePlatform(basePlatform().dump(), "p.json")).find("by_class") == std::string::npos);
  }

  void unknownKeysIgnored() {
    QByteArray text = variant([](json& j) {
      j["vendor"] = "acme";
      j["devices"][0]["firmware"] = {{"version", 3}};
      j["links"][0]["comment"] = "PCIe";
    });
    auto p = parsePlatform(text.toStdString(), "p.json");
    QVERIFY2(p.isOk(), p.message().c_str());
  }

  void invalidFile_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("syntax") << QByteArray("{\"format\": \"partex-platform\",, }")
                            << "p.json: invalid JSON: parse error at line 1, column";
    QTest::newRow("syntax line 3") << QByteArray("{\n  \"format\": \"partex-platform\",\n  \"version\": 1 2\n}")
                                   << "invalid JSON: parse error at line 3, column";
    QTest::newRow("empty") << QByteArray("") << "p.json: invalid JSON:";
    QTest::newRow("not an object") << QByteArray("[1, 2]")
                                   << "p.json: a platform file must be a JSON object, not an array";
    QTest::newRow("format missing") << variant([](json& j) { j.erase("format"); }) << "field 'format' is missing";
    QTest::newRow("format wrong") << variant([](json& j) { j["format"] = "onnx"; })
                                  << "field 'format' must be \"partex-platform\" (got \"onnx\")";
    QTest::newRow("version 2") << variant([](json& j) { j["version"] = 2; })
                               << "field 'version' is 2, but this build reads only platform format version 1";
    QTest::newRow("version string") << variant([](json& j) { j["version"] = "1"; }) << "field 'version' is \"1\"";
    QTest::newRow("devices missing") << variant([](json& j) { j.erase("devices"); }) << "field 'devices' is missing";
    QTest::newRow("devices empty") << variant([](json& j) { j["devices"] = json::array(); })
                                   << "field 'devices' must be a non-empty array";
    QTest::newRow("device not object") << variant([](json& j) { j["devices"][1] = 3; })
                                       << "device 2: must be a JSON object, not a number";
    QTest::newRow("id missing") << variant([](json& j) { j["devices"][1].erase("id"); })
                                << "device 2: field 'id' is missing";
    QTest::newRow("id bad chars") << variant([](json& j) { j["devices"][1]["id"] = "n p u"; })
                                  << "device 2: field 'id' must use only letters";
    QTest::newRow("duplicate id") << variant([](json& j) { j["devices"][1]["id"] = "cpu"; })
                                  << "device 'cpu': id is used by devices 1 and 2";
    QTest::newRow("kind unknown") << variant([](json& j) { j["devices"][1]["kind"] = "tpu"; })
                                  << "device 'npu': field 'kind' must be one of cpu, gpu, npu, dsp, pim (got \"tpu\")";
    QTest::newRow("kind missing") << variant([](json& j) { j["devices"][1].erase("kind"); })
                                  << "device 'npu': field 'kind' is missing";
    QTest::newRow("bandwidth negative") << variant([](json& j) { j["devices"][1]["bandwidth_gbs"] = -1; })
                                        << "p.json: device 'npu': field 'bandwidth_gbs' must be a positive number";
    QTest::newRow("bandwidth zero") << variant([](json& j) { j["devices"][1]["bandwidth_gbs"] = 0; })
                                    << "device 'npu': field 'bandwidth_gbs' must be a positive number (got 0)";
    QTest::newRow("bandwidth string") << variant([](json& j) { j["devices"][1]["bandwidth_gbs"] = "fast"; })
                                      << "device 'npu': field 'bandwidth_gbs' must be a positive number (got \"fast\")";
    QTest::newRow("bandwidth missing") << variant([](json& j) { j["devices"][1].erase("bandwidth_gbs"); })
                                       << "device 'npu': field 'bandwidth_gbs' is missing";
    QTest::newRow("launch negative") << variant([](json& j) { j["devices"][1]["launch_overhead_us"] = -5; })
                                     << "device 'npu': field 'launch_overhead_us' must be a number >= 0";
    QTest::newRow("peak missing") << variant([](json& j) { j["devices"][1].erase("peak_gflops"); })
                                  << "device 'npu': field 'peak_gflops' is missing";
    QTest::newRow("peak unknown class") << variant([](json& j) { j["devices"][1]["peak_gflops"]["convolution"] = 5; })
                                        << "device 'npu': field 'peak_gflops' has an unknown op class 'convolution'";
    QTest::newRow("peak no default") << variant([](json& j) { j["devices"][1]["peak_gflops"].erase("default"); })
                                     << "device 'npu': field 'peak_gflops' needs a \"default\" entry";
    QTest::newRow("peak zero") << variant([](json& j) { j["devices"][1]["peak_gflops"]["conv"] = 0; })
                               << "device 'npu': field 'peak_gflops.conv' must be a positive number";
    QTest::newRow("class bandwidth zero") << variant([](json& j) {
      j["devices"][1]["bandwidth_gbs_by_class"] = {{"conv", 0}};
    }) << "device 'npu': field 'bandwidth_gbs_by_class.conv' must be a positive number";
    QTest::newRow("class bandwidth unknown class") << variant([](json& j) {
      j["devices"][1]["bandwidth_gbs_by_class"] = {{"convolution", 3}};
    }) << "device 'npu': field 'bandwidth_gbs_by_class' has an unknown op class 'convolution'";
    QTest::newRow("class launch negative") << variant([](json& j) {
      j["devices"][1]["launch_overhead_us_by_class"] = {{"pooling", -1}};
    }) << "device 'npu': field 'launch_overhead_us_by_class.pooling' must be a number >= 0";
    QTest::newRow("class launch not object")
        << variant([](json& j) { j["devices"][1]["launch_overhead_us_by_class"] = 3; })
        << "device 'npu': field 'launch_overhead_us_by_class' must be an object of numbers per op class";
    QTest::newRow("op type not object") << variant([](json& j) {
      j["devices"][1]["op_types"] = {{"Add", 3}};
    }) << "device 'npu': field 'op_types.Add' must be an object";
    QTest::newRow("op type peak zero") << variant([](json& j) {
      j["devices"][1]["op_types"] = {{"Add", {{"peak_gflops", 0}}}};
    }) << "device 'npu': op_types.Add: field 'peak_gflops' must be a positive number";
    QTest::newRow("dtype unknown") << variant([](json& j) { j["devices"][1]["dtype_speedup"]["fp16"] = 2; })
                                   << "device 'npu': field 'dtype_speedup' has an unknown dtype 'fp16'";
    QTest::newRow("speedup negative") << variant([](json& j) { j["devices"][1]["dtype_speedup"]["int8"] = -2; })
                                      << "device 'npu': field 'dtype_speedup.int8' must be a positive number";
    QTest::newRow("cores zero") << variant([](json& j) { j["devices"][1]["cores"] = 0; })
                                << "device 'npu': field 'cores' must be an integer >= 1";
    QTest::newRow("memory fraction") << variant([](json& j) { j["devices"][1]["memory_bytes"] = 1.5; })
                                     << "device 'npu': field 'memory_bytes' must be an integer >= 0";
    QTest::newRow("on chip negative") << variant([](json& j) { j["devices"][1]["on_chip_bytes"] = -1; })
                                      << "device 'npu': field 'on_chip_bytes' must be an integer >= 0";
    QTest::newRow("ops not strings") << variant([](json& j) {
      j["devices"][1]["supported_ops"] = {"Conv", 3};
    }) << "device 'npu': field 'supported_ops' must be an array of non-empty strings";
    QTest::newRow("constraint kind") << variant([](json& j) { j["devices"][1]["constraints"][0]["kind"] = "even"; })
                                     << "device 'npu': constraint 1: field 'kind' must be one of channels_multiple_of";
    QTest::newRow("constraint value") << variant([](json& j) { j["devices"][1]["constraints"][0].erase("value"); })
                                      << "device 'npu': constraint 'channels_multiple_of': field 'value' is missing";
    QTest::newRow("constraint dtypes") << variant([](json& j) {
      j["devices"][1]["constraints"][0] = {{"kind", "dtypes"}, {"dtypes", {"float32", "half"}}};
    }) << "device 'npu': constraint 'dtypes': field 'dtypes' has an unknown dtype 'half'";
    QTest::newRow("color") << variant([](json& j) { j["devices"][1]["color"] = "red"; })
                           << "device 'npu': field 'color' must be a colour \"#rrggbb\"";
    QTest::newRow("fusion unknown") << variant([](json& j) { j["devices"][1]["fusion"] = "everything"; })
                                    << "device 'npu': field 'fusion' must be \"epilogues\", \"runtime\" or absent";
    QTest::newRow("copies unknown") << variant([](json& j) { j["devices"][1]["copies"] = "async"; })
                                    << "device 'npu': field 'copies' must be \"inline\" or absent";
    QTest::newRow("reader conversion negative") << variant([](json& j) { j["devices"][1]["reader_convert_gbs"] = -1; })
                                                << "device 'npu': field 'reader_convert_gbs'";
    QTest::newRow("wave outputs negative") << variant([](json& j) { j["devices"][1]["wave_outputs"] = -5; })
                                           << "device 'npu': field 'wave_outputs'";
    QTest::newRow("step unknown class") << variant([](json& j) { j["devices"][1]["reduction_step_us_by_class"] = {{"convs", 1}}; })
                                        << "device 'npu': field 'reduction_step_us_by_class' has an unknown op class 'convs'";
    QTest::newRow("host missing") << variant([](json& j) { j.erase("host"); }) << "p.json: field 'host' is missing";
    QTest::newRow("host unknown") << variant([](json& j) { j["host"] = "gpu"; })
                                  << "p.json: field 'host' names no device: 'gpu' (devices: cpu, npu)";
    QTest::newRow("link unknown device") << variant([](json& j) { j["links"][0]["to"] = "gpu"; })
                                         << "p.json: link 1 ('cpu' -> 'gpu'): field 'to' names no device: 'gpu'";
    QTest::newRow("link from missing") << variant([](json& j) { j["links"][0].erase("from"); })
                                       << "link 1: field 'from' is missing";
    QTest::newRow("link to itself") << variant([](json& j) { j["links"][0]["to"] = "cpu"; })
                                    << "link 1 ('cpu' -> 'cpu'): a link must connect two different devices";
    QTest::newRow("link bandwidth") << variant([](json& j) { j["links"][0]["bandwidth_gbs"] = -4; })
                                    << "link 1 ('cpu' -> 'npu'): field 'bandwidth_gbs' must be a positive number";
    QTest::newRow("link latency") << variant([](json& j) { j["links"][0]["latency_us"] = -1; })
                                  << "link 1 ('cpu' -> 'npu'): field 'latency_us' must be a number >= 0";
    QTest::newRow("link shared not bool") << variant([](json& j) { j["links"][0]["shared_memory"] = "yes"; })
                                          << "link 1 ('cpu' -> 'npu'): field 'shared_memory' must be true or false";
    QTest::newRow("link duplicate") << variant([](json& j) {
      j["links"].push_back({{"from", "npu"}, {"to", "cpu"}, {"bandwidth_gbs", 1}});
    }) << "link 2 ('npu' -> 'cpu'): connects the same devices as link 1";
    QTest::newRow("links not array") << variant([](json& j) { j["links"] = 3; })
                                     << "p.json: field 'links' must be an array";
    QTest::newRow("group unknown device") << variant([](json& j) { j["exclusive_groups"][0]["devices"][1] = "gpu"; })
                                          << "exclusive group 'modes': field 'devices' names no device: 'gpu'";
    QTest::newRow("group one device") << variant([](json& j) { j["exclusive_groups"][0]["devices"] = {"cpu"}; })
                                      << "exclusive group 'modes': field 'devices' must name at least two devices";
  }
  void invalidFile() {
    QFETCH(QByteArray, text);
    QFETCH(QString, expected);
    auto p = parsePlatform(text.toStdString(), "p.json");
    QVERIFY(!p.isOk());
    const QString msg = QString::fromStdString(p.message());
    QVERIFY2(msg.startsWith("p.json: "), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
    QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  }

  void loadPlatformByNameAndPath() {
    auto byName = loadPlatform("cpu-npu");
    QVERIFY2(byName.isOk(), byName.message().c_str());
    QCOMPARE(byName->name, std::string("cpu-npu"));

    const std::string path = test::tempDir() + "/mine.json";
    {
      json j = basePlatform();
      j.erase("name");
      std::ofstream(path) << j.dump(2);
    }
    auto byPath = loadPlatform(path);
    QVERIFY2(byPath.isOk(), byPath.message().c_str());
    QCOMPARE(byPath->name, std::string("mine"));  // defaults to the file name
    auto file = loadPlatformFile(path);
    QVERIFY(file.isOk());

    const std::string bad = test::tempDir() + "/bad.json";
    std::ofstream(bad) << variant([](json& j) { j["devices"][1]["bandwidth_gbs"] = -1; }).toStdString();
    auto err = loadPlatform(bad);
    QVERIFY(!err.isOk());
    QVERIFY2(err.message().rfind(bad + ": device 'npu': field 'bandwidth_gbs'", 0) == 0, err.message().c_str());

    auto missing = loadPlatform(test::tempDir() + "/none.json");
    QVERIFY(!missing.isOk());
    QVERIFY2(QString::fromStdString(missing.message()).contains("none.json"), missing.message().c_str());

    auto unknown = loadPlatform("no-such-preset");
    QVERIFY(!unknown.isOk());
    QVERIFY2(QString::fromStdString(unknown.message()).contains("neither a platform preset"),
             unknown.message().c_str());
    QVERIFY(!loadPreset("no-such-preset").isOk());
  }

  void devicePeak() {
    Platform p = mustParse(basePlatform().dump());
    const Device& npu = device(p, "npu");
    QCOMPARE(npu.peak(OpClass::Conv, DType::Float32), 1000.0);
    QCOMPARE(npu.peak(OpClass::Conv, DType::Int8), 2000.0);
    QCOMPARE(npu.peak(OpClass::Elementwise, DType::Float32), 50.0);
    QCOMPARE(npu.peak(OpClass::Elementwise, DType::Int8), 100.0);
    QCOMPARE(npu.peak(OpClass::MatMul, DType::Float16), 50.0);
    QCOMPARE(std::string(deviceKindName(npu.kind)), std::string("npu"));
  }

  void transferTimes() {
    json j = basePlatform();
    j["devices"].push_back({{"id", "dsp"}, {"kind", "dsp"}, {"peak_gflops", 10}, {"bandwidth_gbs", 5}});
    j["devices"].push_back({{"id", "gpu"}, {"kind", "gpu"}, {"peak_gflops", 10}, {"bandwidth_gbs", 5}});
    j["devices"].push_back({{"id", "pim"}, {"kind", "pim"}, {"peak_gflops", 10}, {"bandwidth_gbs", 5}});
    j["devices"].push_back({{"id", "island"}, {"kind", "cpu"}, {"peak_gflops", 10}, {"bandwidth_gbs", 5}});
    // Directed links with different rates each way.
    j["links"].push_back(
        {{"from", "cpu"}, {"to", "dsp"}, {"bandwidth_gbs", 2}, {"latency_us", 5}, {"bidirectional", false}});
    j["links"].push_back({{"from", "dsp"}, {"to", "cpu"}, {"bandwidth_gbs", 1}, {"bidirectional", false}});
    j["links"].push_back({{"from", "cpu"}, {"to", "gpu"}, {"shared_memory", true}});
    j["links"].push_back(
        {{"from", "cpu"}, {"to", "pim"}, {"bandwidth_gbs", 8}, {"latency_us", 1}, {"bidirectional", false}});
    Platform p = mustParse(j.dump());
    const DeviceId cpu = p.findDevice("cpu"), npu = p.findDevice("npu"), dsp = p.findDevice("dsp"),
                   gpu = p.findDevice("gpu"), pim = p.findDevice("pim"), island = p.findDevice("island");
    QCOMPARE(p.hostId(), cpu);
    QCOMPARE(p.findDevice("nothing"), kNone);

    // latency + bytes / (GB/s * 1e3): 4 MB over 4 GB/s is 1000 us, plus 10 us.
    QCOMPARE(p.transferUs(cpu, npu, 4000000), 1010.0);
    QCOMPARE(p.transferUs(npu, cpu, 4000000), 1010.0);  // bidirectional
    QCOMPARE(p.transferUs(cpu, cpu, 4000000), 0.0);
    QCOMPARE(p.transferUs(cpu, npu, 0), 10.0);
    QCOMPARE(p.transferUs(cpu, dsp, 2000000), 1005.0);
    QCOMPARE(p.transferUs(dsp, cpu, 2000000), 2000.0);
    QCOMPARE(p.transferUs(cpu, gpu, 1 << 30), 0.0);  // shared memory
    QCOMPARE(p.transferUs(gpu, cpu, 1 << 30), 0.0);
    QVERIFY(p.findLink(cpu, npu) == p.findLink(npu, cpu));
    QVERIFY(p.findLink(cpu, dsp) != p.findLink(dsp, cpu));
    QVERIFY(p.findLink(npu, dsp) == nullptr);

    // No direct link: through the host, the two hops added.
    QCOMPARE(p.transferUs(npu, dsp, 4000000), 1010.0 + 5.0 + 2000.0);
    QCOMPARE(p.transferUs(dsp, npu, 4000000), 4000.0 + 1010.0);
    QCOMPARE(p.transferUs(gpu, npu, 4000000), 0.0 + 1010.0);
    QCOMPARE(p.transferUs(npu, gpu, 4000000), 1010.0 + 0.0);
    // cpu -> pim is one-way: pim -> anything has no route.
    QCOMPARE(p.transferUs(cpu, pim, 8000000), 1001.0);
    QCOMPARE(p.transferUs(npu, pim, 8000000), 2010.0 + 1001.0);
    QVERIFY(std::isinf(p.transferUs(pim, cpu, 1)));
    QVERIFY(std::isinf(p.transferUs(pim, npu, 1)));
    QVERIFY(std::isinf(p.transferUs(island, cpu, 1)));
    QVERIFY(std::isinf(p.transferUs(cpu, island, 1)));
    QVERIFY(std::isinf(p.transferUs(cpu, 99, 1)));
    QCOMPARE(p.transferUs(island, island, 1), 0.0);
  }

  void exclusiveGroups() {
    json j = basePlatform();
    j["devices"].push_back({{"id", "gpu"}, {"kind", "gpu"}, {"peak_gflops", 10}, {"bandwidth_gbs", 5}});
    j["links"].push_back({{"from", "cpu"}, {"to", "gpu"}, {"shared_memory", true}});
    Platform p = mustParse(j.dump());
    const DeviceId cpu = p.findDevice("cpu"), npu = p.findDevice("npu"), gpu = p.findDevice("gpu");
    QVERIFY(p.exclusive(cpu, npu));
    QVERIFY(p.exclusive(npu, cpu));
    QVERIFY(!p.exclusive(cpu, gpu));
    QVERIFY(!p.exclusive(npu, gpu));
    QVERIFY(!p.exclusive(cpu, cpu));
    QVERIFY(!p.exclusive(cpu, kNone));
  }

  void supportChannels() {
    auto preset = loadPreset("cpu-npu");
    QVERIFY(preset.isOk());
    const Device& npu = preset->devices[static_cast<size_t>(preset->findDevice("npu"))];
    const Device& cpu = preset->devices[static_cast<size_t>(preset->findDevice("cpu"))];
    Graph g;
    OpId c3 = addConv(g, "conv_rgb", 3, 32);
    OpId c32 = addConv(g, "conv_mid", 32, 64);
    OpId c24 = addConv(g, "conv_out24", 16, 24);
    OpId cUnknown = addConv(g, "conv_unknown", 32, 32, /*knownInput=*/false);
    OpId relu = addUnary(g, "Relu", c32, "relu");
    OpId soft = addUnary(g, "Softmax", c32, "softmax");
    g.rebuildIndex();

    std::string why;
    QVERIFY(!deviceSupports(npu, g, c3, &why));
    QVERIFY2(why.find("channels 3 ") != std::string::npos && why.find("multiple of 16") != std::string::npos,
             why.c_str());
    QVERIFY2(why.find("on NPU") != std::string::npos, why.c_str());

    why = "stale";
    QVERIFY2(deviceSupports(npu, g, c32, &why), why.c_str());
    QVERIFY(why.empty());
    QVERIFY(deviceSupports(npu, g, c32));  // reason is optional

    QVERIFY(!deviceSupports(npu, g, c24, &why));
    QVERIFY2(why.find("output channels 24") != std::string::npos, why.c_str());
    QVERIFY(!deviceSupports(npu, g, cUnknown, &why));
    QVERIFY2(why.find("unknown") != std::string::npos, why.c_str());

    QVERIFY2(deviceSupports(npu, g, relu, &why), why.c_str());
    QVERIFY(!deviceSupports(npu, g, soft, &why));
    QCOMPARE(why, std::string("NPU runs only Conv, Relu (not Softmax)"));

    for (OpId op : {c3, c32, c24, cUnknown, relu, soft}) QVERIFY(deviceSupports(cpu, g, op));
    QVERIFY(!deviceSupports(cpu, g, 1000, &why));
  }

  void supportOtherConstraints() {
    Graph g;
    OpId conv = addConv(g, "conv", 16, 16);
    g.nodes[static_cast<size_t>(conv)].attrs["kernel_shape"].value = std::vector<int64_t>{5, 5};
    OpId loop = addUnary(g, "Loop", conv, "loop");
    g.rebuildIndex();

    Device d;
    d.id = "acc";
    d.name = "ACC";
    std::string why;
    d.unsupportedOps = {"Loop"};
    QVERIFY(!deviceSupports(d, g, loop, &why));
    QCOMPARE(why, std::string("ACC does not run Loop"));
    QVERIFY(deviceSupports(d, g, conv, &why));

    d.constraints = {DeviceConstraint{"max_kernel", {"Conv"}, 3, {}, "3x3 windows only"}};
    QVERIFY(!deviceSupports(d, g, conv, &why));
    QVERIFY2(why.find("5x5") != std::string::npos && why.find("3x3 windows only") != std::string::npos, why.c_str());
    d.constraints[0].value = 5;
    QVERIFY(deviceSupports(d, g, conv, &why));

    d.constraints = {DeviceConstraint{"dtypes", {}, 0, {"float16", "int8"}, ""}};
    QVERIFY(!deviceSupports(d, g, conv, &why));
    QVERIFY2(why.find("float32") != std::string::npos && why.find("float16, int8") != std::string::npos, why.c_str());
    d.constraints[0].dtypes.push_back("float32");
    QVERIFY(deviceSupports(d, g, conv, &why));

    d.constraints = {DeviceConstraint{"max_rank", {}, 3, {}, ""}};
    QVERIFY(!deviceSupports(d, g, conv, &why));
    QVERIFY2(why.find("rank-4") != std::string::npos, why.c_str());
    d.constraints[0].value = 4;
    QVERIFY(deviceSupports(d, g, conv, &why));

    // A constraint limited to other op types does not apply.
    d.constraints = {DeviceConstraint{"max_rank", {"MatMul"}, 1, {}, ""}};
    QVERIFY(deviceSupports(d, g, conv, &why));
  }

  void thisMachine() {
    QElapsedTimer timer;
    timer.start();
    auto p = loadPreset("this-machine");
    QVERIFY2(p.isOk(), p.message().c_str());
    qInfo("this-machine loaded in %lld ms: %s", static_cast<long long>(timer.elapsed()), p->description.c_str());
    QCOMPARE(p->host, std::string("cpu-serial"));
    const DeviceId serial = p->findDevice("cpu-serial"), parallel = p->findDevice("cpu-parallel");
    QVERIFY(serial != kNone && parallel != kNone);
    const int cores = p->devices[static_cast<size_t>(parallel)].cores;
    QVERIFY(cores >= 1);
    if (std::thread::hardware_concurrency() > 0)
      QVERIFY(cores <= static_cast<int>(std::thread::hardware_concurrency()));
    int coreDevices = 0;
    for (const Device& d : p->devices) {
      QVERIFY2(d.defaultPeakGflops > 0 && std::isfinite(d.defaultPeakGflops), d.id.c_str());
      QVERIFY2(d.memBandwidthGBs > 0 && std::isfinite(d.memBandwidthGBs), d.id.c_str());
      QCOMPARE(d.kind, DeviceKind::Cpu);
      QCOMPARE(d.fusion, std::string("runtime"));  // the CPU runtime runs them: its fused groups are kernels
      if (d.id.rfind("core", 0) == 0) ++coreDevices;
    }
    QCOMPARE(coreDevices, cores);
    QCOMPARE(static_cast<int>(p->devices.size()), cores + 2);
    for (int i = 0; i < cores; ++i) QVERIFY(p->findDevice("core" + std::to_string(i)) != kNone);

    const DeviceId core0 = p->findDevice("core0");
    QVERIFY(p->exclusive(serial, parallel));
    QVERIFY(p->exclusive(serial, core0));
    QVERIFY(p->exclusive(parallel, core0));
    if (cores >= 2) {
      const DeviceId core1 = p->findDevice("core1");
      QVERIFY(!p->exclusive(core0, core1));
      QVERIFY(!p->exclusive(serial, core1));
      QVERIFY(p->exclusive(parallel, core1));
      QCOMPARE(p->transferUs(core0, core1, 1 << 20), 0.0);
    }
    QCOMPARE(p->transferUs(serial, parallel, 1 << 20), 0.0);

    // Cached: the second call returns the same measurement.
    auto again = loadPreset("this-machine");
    QVERIFY(again.isOk());
    QCOMPARE(platformToJson(*again), platformToJson(*p));
  }
};

QTEST_APPLESS_MAIN(TestPlatform)
#include "tst_platform.moc"
