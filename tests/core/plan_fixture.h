#pragma once
/// \file A small hand-made scheduling problem, plan and timeline shared by tst_planfile and
/// tst_exports (no importer, cost model or simulator involved), plus golden-file comparison.
///
///   input_conv (Conv) --> relu1 (Relu) --> branch_a (MatMul) --> concat,"out" (Concat)
///        |                      \-------> branch_b (Gemm) -------^
///        \--------------------------------^ (input_conv -> branch_a, same device)
///
/// Devices cpu (host), gpu, npu; links "pcie" (cpu<->gpu) and "npu-bus" (cpu<->npu, gpu<->npu).
/// The last operator's name holds a comma and quotes to exercise CSV, JSON and DOT escaping.

#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "cost/costtable.h"
#include "plan/planfile.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "support/files.h"
#include "testutil.h"

namespace partex::test {

inline CostTable tinyTable() {
  CostTable t;
  t.name = "tiny";
  t.taskNames = {"input_conv", "relu1", "branch_a", "branch_b", "concat,\"out\""};
  t.taskTypes = {"Conv", "Relu", "MatMul", "Gemm", "Concat"};
  t.deviceIds = {"cpu", "gpu", "npu"};
  t.cost = {
      10.0, 4.0, 2.0,   // input_conv
      1.0,  1.0, kInf,  // relu1: not on the npu
      8.0,  3.0, 2.5,   // branch_a
      6.0,  2.0, kInf,  // branch_b
      1.0,  1.5, kInf,  // concat
  };
  t.provenance.assign(t.cost.size(), Provenance::Modelled);
  t.provenance[1 * 3 + 0] = Provenance::Measured;  // relu1 on cpu
  t.provenance[4 * 3 + 0] = Provenance::Imported;  // concat on cpu
  t.edges = {
      {0, 1, 4096, -1.0}, {1, 2, 4096, -1.0}, {1, 3, 4096, -1.0},
      {2, 4, 2048, -1.0}, {3, 4, 1024, -1.0}, {0, 2, 8192, -1.0},
  };
  t.indexEdges();
  t.inputBytes = {602112, 0, 0, 0, 0};
  t.outputBytes = {0, 0, 0, 0, 4000};
  t.host = 0;
  t.exclusiveWith.assign(3, {});
  t.numLinkResources = 2;
  t.linkNames = {"pcie", "npu-bus"};
  t.linkResource = {-1, 0,  1,  //
                    0,  -1, 1,  //
                    1,  1,  -1};
  t.linkLatencyUs.assign(9, 0.0);
  t.linkBytesPerUs.assign(9, 8192.0);
  t.memCapacity.assign(3, 0);
  return t;
}

/// input_conv, branch_a on npu; relu1, concat on cpu; branch_b on gpu.
inline Plan tinyPlan() {
  Plan p;
  p.device = {2, 0, 2, 1, 0};
  p.order = {{1, 4}, {3}, {0, 2}};
  p.algorithm = "heft";
  p.optionsJson = R"({"rank":"upward","seed":1})";
  return p;
}

/// A consistent hand-made timeline for tinyPlan().
inline Timeline tinyTimeline() {
  Timeline tl;
  tl.tasks = {
      {2, 0.5, 2.5},    // input_conv on npu
      {0, 3.0, 4.0},    // relu1 on cpu
      {2, 4.25, 6.75},  // branch_a on npu
      {1, 4.5, 6.5},    // branch_b on gpu
      {0, 7.0, 8.0},    // concat on cpu
  };
  tl.transfers = {
      {-1, 0, 0, 2, 1, 0.0, 0.5, 602112},  // model input: host -> npu
      {0, 1, 2, 0, 1, 2.5, 3.0, 4096},     // input_conv -> relu1
      {1, 2, 0, 2, 1, 4.0, 4.25, 4096},    // relu1 -> branch_a
      {1, 3, 0, 1, 0, 4.0, 4.5, 4096},     // relu1 -> branch_b
      {3, 4, 1, 0, 0, 6.5, 6.75, 1024},    // branch_b -> concat
      {2, 4, 2, 0, 1, 6.75, 7.0, 2048},    // branch_a -> concat
  };
  tl.makespan = 8.0;
  tl.busy = {2.0, 2.0, 4.5};
  tl.utilisation = {0.25, 0.25, 0.5625};
  tl.bytesMoved = 602112 + 4096 * 3 + 1024 + 2048;
  tl.peakBytes = {8192, 4096, 16384};
  tl.overCapacity = {false, false, false};
  return tl;
}

inline PlanIdentity tinyIdentity() {
  return PlanIdentity{"models/tiny.onnx", "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
                      "test-soc"};
}

/// Compares `actual` with tests/data/golden/<file>. With PARTEX_UPDATE_GOLDEN=1 the golden file is
/// (re)written instead and the comparison passes. On a mismatch, `why` names the first differing line.
inline bool matchesGolden(const std::string& file, const std::string& actual, std::string& why) {
  const std::string dir = testDataDir() + "/golden";
  const std::string path = dir + "/" + file;
  const char* update = std::getenv("PARTEX_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    auto st = writeFileAtomic(path, actual);
    if (!st) {
      why = st.message();
      return false;
    }
    qWarning("updated golden file %s", path.c_str());
    return true;
  }
  auto expected = readFile(path);
  if (!expected) {
    why = expected.message() + " (run with PARTEX_UPDATE_GOLDEN=1 to create it)";
    return false;
  }
  if (*expected == actual) return true;
  std::istringstream e(*expected), a(actual);
  std::string le, la;
  int line = 0;
  while (true) {
    ++line;
    const bool ge = static_cast<bool>(std::getline(e, le));
    const bool ga = static_cast<bool>(std::getline(a, la));
    if (!ge && !ga) break;
    if (ge != ga || le != la) {
      why = path + ":" + std::to_string(line) + ": expected [" + (ge ? le : "<end of file>") + "] but got [" +
            (ga ? la : "<end of file>") + "] (PARTEX_UPDATE_GOLDEN=1 regenerates on purpose)";
      return false;
    }
  }
  why = path + ": differs only in line endings or a final newline";
  return false;
}

}  // namespace partex::test

#define PARTEX_COMPARE_GOLDEN(file, actual)                                  \
  do {                                                                       \
    std::string why_;                                                        \
    QVERIFY2(partex::test::matchesGolden(file, actual, why_), why_.c_str()); \
  } while (0)
