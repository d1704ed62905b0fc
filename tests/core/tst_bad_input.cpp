// Hostile and broken inputs to the ONNX importer: every failure is one line that starts with the file
// name, never a crash; random mutations of valid models either import (and verify) or fail cleanly;
// the CLI exits with code 2 and one line on stderr.
#include <QtTest>

#include <QFileInfo>
#include <QProcess>

#include <filesystem>
#include <fstream>
#include <random>

#include "onnx/importer.h"
#include "gen/testmodels.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

bool writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

/// The error contract: fails, one line, starts with "<origin>: ", says something after it.
#define CHECK_ONE_LINE_ERROR(result, origin)                                                              \
  do {                                                                                                    \
    QVERIFY2(!(result).isOk(), "expected an error");                                                      \
    const std::string& msg_ = (result).message();                                                         \
    QVERIFY2(msg_.rfind(std::string(origin) + ": ", 0) == 0, msg_.c_str());                               \
    QVERIFY2(msg_.size() > std::string(origin).size() + 2, msg_.c_str());                                 \
    QVERIFY2(msg_.find('\n') == std::string::npos && msg_.find('\r') == std::string::npos, msg_.c_str()); \
  } while (0)

std::string mutate(std::string bytes, std::mt19937& rng) {
  std::uniform_int_distribution<int> kind(0, 5);
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const size_t pos = rng() % bytes.size();
    switch (kind(rng)) {
      case 0:
        bytes[pos] = static_cast<char>(rng());
        break;  // random byte
      case 1:
        bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8)));
        break;  // bit flip
      case 2:
        bytes.erase(pos, 1 + rng() % 8);
        break;  // delete
      case 3:
        bytes.insert(pos, std::string(1 + rng() % 4, static_cast<char>(rng())));
        break;  // insert
      case 4:
        bytes.resize(pos);
        break;    // truncate
      default: {  // small varint-ish values
        static const char kValues[] = {0, 1, 2, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff), 8, 10};
        bytes[pos] = kValues[rng() % sizeof kValues];
        break;
      }
    }
  }
  return bytes;
}

}  // namespace

class TestBadInput : public QObject {
  Q_OBJECT

 private slots:
  void missingFile();
  void directory();
  void emptyFile();
  void randomBytes();
  void truncated();
  void checkerFailure();
  void cycle();
  void danglingInput();
  void unboundSymbolicDimension();
  void unsupportedVersions();
  void invalidAttributes();
  void inferenceGuards();
  void mutations();
  void cliExitsWithTwo();
};

void TestBadInput::missingFile() {
  const std::string path = test::tempDir() + "/does/not/exist.onnx";
  auto g = importOnnxFile(path);
  CHECK_ONE_LINE_ERROR(g, path);
  QVERIFY2(g.message().find("no such file") != std::string::npos, g.message().c_str());
}

void TestBadInput::directory() {
  const std::string path = test::tempDir();
  auto g = importOnnxFile(path);
  CHECK_ONE_LINE_ERROR(g, path);
}

void TestBadInput::emptyFile() {
  const std::string path = test::tempDir() + "/empty.onnx";
  QVERIFY(writeBytes(path, ""));
  auto g = importOnnxFile(path);
  CHECK_ONE_LINE_ERROR(g, path);
  QVERIFY2(g.message().find("empty") != std::string::npos, g.message().c_str());
  auto b = importOnnxBytes("", "bytes.onnx");
  CHECK_ONE_LINE_ERROR(b, "bytes.onnx");
}

void TestBadInput::randomBytes() {
  std::mt19937 rng(12345);
  for (int i = 0; i < 50; ++i) {
    std::string bytes(1 + rng() % 2000, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto g = importOnnxBytes(bytes, "random.onnx");
    CHECK_ONE_LINE_ERROR(g, "random.onnx");
  }
  const std::string path = test::tempDir() + "/bad.onnx";
  QVERIFY(writeBytes(path, "this is not a protobuf \xff\xff\xff\xff"));
  auto g = importOnnxFile(path);
  CHECK_ONE_LINE_ERROR(g, path);
  QCOMPARE(g.message(), path + ": not an ONNX model (protobuf parse failed)");
}

void TestBadInput::truncated() {
  std::vector<std::pair<std::string, std::string>> models{{"tiny", testmodels::tiny()},
                                                          {"shapes", testmodels::withShapeChain()}};
  if (!test::sharedModelsDir().empty())
    models.emplace_back("squeezenet", readFile(test::sharedModel("light_squeezenet.onnx")).value());
  for (const auto& [name, bytes] : models) {
    for (double frac : {0.5, 0.9, 0.99}) {
      const std::string path = test::tempDir() + "/truncated_" + name + ".onnx";
      QVERIFY(writeBytes(path, bytes.substr(0, static_cast<size_t>(static_cast<double>(bytes.size()) * frac))));
      auto g = importOnnxFile(path);
      CHECK_ONE_LINE_ERROR(g, path);
    }
  }
}

void TestBadInput::checkerFailure() {
  auto g = importOnnxBytes(testmodels::failingChecker(), "m.onnx");
  CHECK_ONE_LINE_ERROR(g, "m.onnx");
  QVERIFY2(g.message().rfind("m.onnx: ONNX checker: ", 0) == 0, g.message().c_str());
  QVERIFY2(g.message().find("NoSuchOp") != std::string::npos, g.message().c_str());
}

void TestBadInput::cycle() {
  auto g = importOnnxBytes(testmodels::withCycle(), "m.onnx");
  CHECK_ONE_LINE_ERROR(g, "m.onnx");
  QVERIFY2(g.message() == "m.onnx: graph has a cycle through node 'a_node' (Add)" ||
               g.message() == "m.onnx: graph has a cycle through node 'b_node' (Relu)",
           g.message().c_str());
}

void TestBadInput::danglingInput() {
  auto g = importOnnxBytes(testmodels::withDanglingInput(), "m.onnx");
  CHECK_ONE_LINE_ERROR(g, "m.onnx");
  QCOMPARE(g.message(), std::string("m.onnx: node 'add' reads tensor 'ghost' that no node produces and that is "
                                    "neither an input nor an initializer (dangling input)"));
  // Names are arbitrary bytes: control characters are escaped so the message stays one line.
  auto g2 = importOnnxBytes(testmodels::withDanglingInput("gh\nost\r\x01"), "m.onnx");
  CHECK_ONE_LINE_ERROR(g2, "m.onnx");
  QVERIFY2(g2.message().find("'gh\\nost\\r\\x01'") != std::string::npos, g2.message().c_str());
}

void TestBadInput::unboundSymbolicDimension() {
  const std::string path = test::tempDir() + "/sym.onnx";
  QVERIFY(writeBytes(path, testmodels::withSymbolicDims()));
  auto g = importOnnxFile(path);
  CHECK_ONE_LINE_ERROR(g, path);
  QCOMPARE(g.message(), path +
                            ": input 'x' axis 0 has symbolic dimension 'N' that is not bound "
                            "(use --dim N=VALUE or --dim x:0=VALUE)");
}

void TestBadInput::unsupportedVersions() {
  auto ir = importOnnxBytes(testmodels::withIrVersion(99), "m.onnx");
  CHECK_ONE_LINE_ERROR(ir, "m.onnx");
  QCOMPARE(ir.message(), std::string("m.onnx: unsupported IR version 99 (supported 3 to 10)"));
  auto ir2 = importOnnxBytes(testmodels::withIrVersion(2), "m.onnx");
  CHECK_ONE_LINE_ERROR(ir2, "m.onnx");
  // Opsets 18 to 21 are lowered to 17 where exact (tst_import_modern); 22 is refused.
  auto op22 = importOnnxBytes(testmodels::withOpset(22), "m.onnx");
  CHECK_ONE_LINE_ERROR(op22, "m.onnx");
  QVERIFY2(op22.message().find("unsupported opset 22") != std::string::npos, op22.message().c_str());
  auto op6 = importOnnxBytes(testmodels::withOpset(6), "m.onnx");
  CHECK_ONE_LINE_ERROR(op6, "m.onnx");
  for (int opset : {7, 11, 13, 17, 18, 21}) {
    auto ok = importOnnxBytes(testmodels::withOpset(opset), "m.onnx");
    QVERIFY2(ok.isOk(), ok.message().c_str());
  }
}

void TestBadInput::invalidAttributes() {
  // libonnx's Conv shape inference divides by the stride: the importer rejects it first.
  for (bool checker : {true, false}) {
    ImportOptions opts;
    opts.runChecker = checker;
    auto g = importOnnxBytes(testmodels::withZeroStride(), "m.onnx", opts);
    CHECK_ONE_LINE_ERROR(g, "m.onnx");
    QCOMPARE(g.message(),
             std::string("m.onnx: node 'conv' (Conv) has an invalid attribute strides (0; values must be positive)"));
  }
}

void TestBadInput::inferenceGuards() {
  // Inputs on which libonnx 1.12's own inference functions crash: the importer's guards refuse them
  // with a line that names the node, with and without the checker, declared output shapes or not.
  struct Case {
    std::string bytes, expected;
  };
  const std::vector<Case> cases = {
      {testmodels::withConvRankMismatch(),
       "m.onnx: node 'conv' (Conv): the input has rank 2 but the weight has rank 4"},
      {testmodels::withRankOneUnpoolIndices(),
       "m.onnx: node 'unpool' (MaxUnpool): the indices input needs a known shape of rank 2 or more"},
      // Found by fuzz_infer (tests/fuzz/fuzz_infer.cpp), as the four after it.
      {testmodels::withRankOneStftSignal(),
       "m.onnx: node 'stft' (STFT): the signal has rank 1; it needs rank 2 or more"},
      {testmodels::withLayerNormAxisBelowRank(),
       "m.onnx: node 'norm' (LayerNormalization): axis -3 is out of range for an input of rank 2"},
      {testmodels::withNegativeGatherNdStart(),
       "m.onnx: node 'gather' (GatherND): the indices' last dimension (1) plus batch_dims (-2) is negative"},
      {testmodels::withZeroSequenceSplit(), "m.onnx: node 'split' (SplitToSequence): the split is 0"},
      // Two bytes of raw data for an int64: the importer reads every weight's data, so the model is
      // refused there, before ONNX's inference could trip on it.
      {testmodels::withEmptyRangeDelta(), "m.onnx: initializer 'delta': raw data has 2 bytes, [] int64 needs 8"},
  };
  for (const auto& c : cases)
    for (bool checker : {true, false}) {
      ImportOptions opts;
      opts.runChecker = checker;
      auto g = importOnnxBytes(c.bytes, "m.onnx", opts);
      CHECK_ONE_LINE_ERROR(g, "m.onnx");
      QCOMPARE(g.message(), c.expected);
    }
  // Where libonnx only needs an input's type, a missing one is no error of the model (here the output
  // of an unknown domain's operator); nor is a shape input of 2^40 elements, on which it would add
  // axes for hours. ONNX gives up on the node, the model imports.
  for (const std::string& bytes : {testmodels::withUntypedEyeLikeInput(), testmodels::withHugeExpandShape()})
    for (bool checker : {true, false}) {
      ImportOptions opts;
      opts.runChecker = checker;
      auto g = importOnnxBytes(bytes, "m.onnx", opts);
      QVERIFY2(g.isOk(), g.message().c_str());
    }
  // The fuzzer's own find (CI, 2026-11-22): a mutated external-data Conv whose input lost its
  // channel and batch axes. It crashed in onnx::convPoolShapeInference; now it is refused.
  const QByteArray crash = QByteArray::fromBase64(
      "CAgSEXBhcnRleC10ZXN0bW9kZWxzOp0BChUKAXgKAVcSAXkaBGNvbnYiBENvbnYSBHRlc3QqRAgECAMIAwgDEAFCAVdqFwoIbG9jYXRp"
      "b24SC3dlaWdodHMuYmluagsKBm9mZnNldBIBMGoNCgZsZW5ndGgSAzQzMnABWhsKAXgSFgoUCAESEPUCCAEKAggDCgIICAoCCAhiGwoB"
      "eRIWChQIARIQCgIIAQoCCAQKAggGCgIIBkIECgAQDQ==");
  ImportOptions opts;
  opts.runChecker = false;
  auto g = importOnnxBytes(crash.toStdString(), "fuzz.onnx", opts);
  CHECK_ONE_LINE_ERROR(g, "fuzz.onnx");
  QVERIFY2(g.message().find("rank 2 but the weight has rank 4") != std::string::npos, g.message().c_str());
}

void TestBadInput::mutations() {
  std::vector<std::string> seeds;
  for (const auto& [name, bytes] : testmodels::all()) seeds.push_back(bytes);
  if (!test::sharedModelsDir().empty()) seeds.push_back(readFile(test::sharedModel("light_squeezenet.onnx")).value());
  std::mt19937 rng(2024);
  int imported = 0, failed = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string bytes = mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    ImportOptions opts;
    opts.runChecker = (i % 3) != 0;
    auto g = importOnnxBytes(bytes, "mutant.onnx", opts);
    if (g.isOk()) {
      ++imported;
      QVERIFY2(g->verify().isOk(), g->verify().message().c_str());
      for (const auto& v : g->values)  // weight data, where kept, is exactly the weight's size
        if (v.data) QVERIFY2(v.isWeight && v.data->size() == static_cast<size_t>(v.bytes()), v.name.c_str());
    } else {
      ++failed;
      CHECK_ONE_LINE_ERROR(g, "mutant.onnx");
    }
  }
  qInfo("mutations: %d imported, %d rejected", imported, failed);
  QCOMPARE(imported + failed, 400);
}

void TestBadInput::cliExitsWithTwo() {
  const QString cli = test::cliPath();
  if (!QFileInfo(cli).isExecutable()) QSKIP("partex-cli is not built (set PARTEX_CLI)");
  const std::string path = test::tempDir() + "/cli_bad.onnx";
  QVERIFY(writeBytes(path, "garbage, not protobuf \xff\xff"));
  const std::string cyc = test::tempDir() + "/cli_cycle.onnx";
  QVERIFY(writeBytes(cyc, testmodels::withCycle()));
  for (const std::string& file : {path, cyc, test::tempDir() + "/cli_missing.onnx"}) {
    QProcess p;
    p.start(cli, {"inspect", QString::fromStdString(file)});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 2);
    const QString err = QString::fromLocal8Bit(p.readAllStandardError()).trimmed();
    QVERIFY2(!err.isEmpty(), "an error message on stderr");
    QVERIFY2(!err.contains('\n'), qPrintable(err));
    QVERIFY2(err.contains(QString::fromStdString(baseName(file))), qPrintable(err));
  }
}

QTEST_APPLESS_MAIN(TestBadInput)
#include "tst_bad_input.moc"
