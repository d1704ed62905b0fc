// Every case of ONNX's own conformance suite (Debian libonnx-testdata) whose operators the CPU backend
// claims runs and must reproduce the reference outputs (rtol 1e-3, atol 1e-7, the ONNX runner's
// defaults). Prints "conformance: P passed of C claimed (N cases in the suite)"; P must equal C.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "onnx/tensorio.h"

using namespace partex;
namespace fs = std::filesystem;

namespace {

const char* kSuite = "/usr/share/libonnx-testdata/data/node";

/// "" when `got` matches `want` (dtype, shape, values within tolerance), else the first difference.
std::string compareTensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtypeName(got.dtype()) + ", expected " + dtypeName(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + shapeString(got.shape()) + ", expected " + shapeString(want.shape());
  if (want.dtype() == DType::Float16) {  // bit for bit (Cast rounds to nearest even), NaN as NaN
    const auto* g = static_cast<const uint16_t*>(got.raw());
    const auto* w = static_cast<const uint16_t*>(want.raw());
    auto isNan = [](uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; };
    for (int64_t i = 0; i < want.numElements(); ++i)
      if (g[i] != w[i] && !(isNan(g[i]) && isNan(w[i])))
        return "element " + std::to_string(i) + ": float16 bits " + std::to_string(g[i]) + ", expected " +
               std::to_string(w[i]);
    return "";
  }
  const bool isFloat = want.dtype() == DType::Float32 || want.dtype() == DType::Float64;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    if (isFloat) {
      const double a = got.valueAsDouble(i), b = want.valueAsDouble(i);
      if (std::isnan(b) && std::isnan(a)) continue;
      if (std::isinf(b) && a == b) continue;
      if (!(std::abs(a - b) <= atol + rtol * std::abs(b)))
        return "element " + std::to_string(i) + ": " + std::to_string(a) + ", expected " + std::to_string(b);
    } else if (got.valueAsInt(i) != want.valueAsInt(i)) {
      return "element " + std::to_string(i) + ": " + std::to_string(got.valueAsInt(i)) + ", expected " +
             std::to_string(want.valueAsInt(i));
    }
  }
  return "";
}


enum class Outcome { Unclaimed, Passed, Failed };

/// Runs one case; `why` says why it is unclaimed or failed.
Outcome runCase(const Backend& backend, const fs::path& dir, const std::string& device, std::string& why) {
  auto m = importOnnxWithData((dir / "model.onnx").string());
  if (!m) {
    why = "import: " + m.message();
    return Outcome::Unclaimed;
  }
  const Graph& g = m->graph;
  if (g.nodes.empty()) {
    why = "no operator left after import";
    return Outcome::Unclaimed;
  }
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op)
    if (!backend.supports(g, op, &why)) return Outcome::Unclaimed;
  const fs::path data = dir / "test_data_set_0";
  std::map<ValueId, Tensor> values;
  const auto inFiles = test::numberedFiles(data.string(), "input_");
  for (size_t i = 0; i < inFiles.size(); ++i) {
    std::string name;
    auto t = readTensorProtoFile(inFiles[i], &name);
    if (!t) {
      why = "input: " + t.message();
      return Outcome::Unclaimed;
    }
    ValueId v = name.empty() ? kNone : g.findValue(name);
    if (v == kNone && i < g.inputs.size()) v = g.inputs[i];
    if (v == kNone) {
      why = "input " + std::to_string(i) + " matches no graph input";
      return Outcome::Unclaimed;
    }
    values[v] = std::move(*t);
  }
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v) {
    const Value& val = g.values[static_cast<size_t>(v)];
    if (!val.isWeight || val.consumers.empty()) continue;
    auto it = m->constants.find(val.name);
    if (it != m->constants.end()) {
      values[v] = it->second;
    } else if (!val.intData.empty() || val.numElements() == 0) {
      auto t = syntheticTensor(g, v, 1);
      if (!t) {
        why = "weight '" + val.name + "': " + t.message();
        return Outcome::Unclaimed;
      }
      values[v] = std::move(*t);
    } else {
      why = "weight '" + val.name + "' was folded by the importer and has no data";
      return Outcome::Unclaimed;
    }
  }
  for (ValueId v : g.inputs) {
    auto c = m->constants.find(g.values[static_cast<size_t>(v)].name);
    if (!values.count(v) && c != m->constants.end()) values[v] = c->second;
  }
  for (ValueId v : g.inputs)
    if (!values.count(v)) {
      why = "graph input '" + g.values[static_cast<size_t>(v)].name + "' has no data file";
      return Outcome::Unclaimed;
    }
  Status s = test::runGraph(g, backend, device, values);
  if (!s) {
    why = s.message();
    return Outcome::Failed;
  }
  const auto outFiles = test::numberedFiles(data.string(), "output_");
  for (size_t i = 0; i < outFiles.size() && i < g.outputs.size(); ++i) {
    std::string name;
    auto want = readTensorProtoFile(outFiles[i], &name);
    if (!want) {
      why = "reference output: " + want.message();
      return Outcome::Failed;
    }
    ValueId v = name.empty() ? kNone : g.findValue(name);
    if (v == kNone) v = g.outputs[i];
    auto it = values.find(v);
    if (it == values.end()) {
      why = "output '" + g.values[static_cast<size_t>(v)].name + "' not produced";
      return Outcome::Failed;
    }
    std::string diff = compareTensors(it->second, *want, 1e-3, 1e-7);
    if (!diff.empty()) {
      why = "output '" + g.values[static_cast<size_t>(v)].name + "': " + diff;
      return Outcome::Failed;
    }
  }
  return Outcome::Passed;
}

}  // namespace

class TestCpuConformance : public QObject {
  Q_OBJECT

 private slots:
  /// The whole suite on cpu-serial: every claimed case passes.
  void suite() {
    if (!fs::is_directory(kSuite))
      QSKIP("libonnx-testdata is absent (/usr/share/libonnx-testdata): apt-get install libonnx-testdata");
    auto backend = makeCpuBackend();
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(kSuite))
      if (e.is_directory()) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    int passed = 0, claimed = 0;
    std::map<std::string, int> unclaimedOps;
    std::vector<std::string> failures;
    const char* filter = std::getenv("PARTEX_CONFORMANCE_FILTER");
    for (const auto& dir : cases) {
      if (filter && dir.filename().string().find(filter) == std::string::npos) continue;
      std::string why;
      const Outcome o = runCase(*backend, dir, "cpu-serial", why);
      if (o == Outcome::Unclaimed) {
        if (std::getenv("PARTEX_CONFORMANCE_VERBOSE")) qInfo("unclaimed %s: %s", dir.filename().c_str(), why.c_str());
        continue;
      }
      ++claimed;
      if (o == Outcome::Passed)
        ++passed;
      else
        failures.push_back(dir.filename().string() + ": " + why);
    }
    for (const auto& f : failures) qWarning("FAILED %s", f.c_str());
    const std::string line = "conformance: " + std::to_string(passed) + " passed of " + std::to_string(claimed) +
                             " claimed (" + std::to_string(cases.size()) + " cases in the suite)";
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    QVERIFY(claimed > 0);
    QCOMPARE(passed, claimed);
  }

  /// A sample of claimed cases on the other devices gives the same results.
  void otherDevices_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("device");
    for (const char* c : {"test_conv_with_strides_padding", "test_matmul_3d", "test_gemm_all_attributes",
                          "test_maxpool_2d_pads", "test_softmax_axis_1", "test_lstm_defaults", "test_add_bcast",
                          "test_transpose_all_permutations_3", "test_reduce_mean_keepdims_example", "test_if",
                          "test_loop11", "test_scan9_sum", "test_range_float_type_positive_delta_expanded",
                          "test_einsum_batch_matmul", "test_nonmaxsuppression_two_batches"})
      for (const char* d : {"cpu-parallel", "core0", "core1"})
        QTest::newRow((std::string(c) + "@" + d).c_str()) << c << d;
  }
  void otherDevices() {
    if (!fs::is_directory(kSuite)) QSKIP("libonnx-testdata is absent");
    QFETCH(QString, name);
    QFETCH(QString, device);
    auto backend = makeCpuBackend();
    bool haveDevice = false;
    for (const auto& d : backend->devices()) haveDevice = haveDevice || d.id == device.toStdString();
    if (!haveDevice) QSKIP("this machine has no such core");
    std::string why;
    const Outcome o = runCase(*backend, fs::path(kSuite) / name.toStdString(), device.toStdString(), why);
    if (o == Outcome::Unclaimed) QSKIP(("not claimed: " + why).c_str());
    QVERIFY2(o == Outcome::Passed, why.c_str());
  }
};

QTEST_GUILESS_MAIN(TestCpuConformance)
#include "tst_cpu_conformance.moc"
