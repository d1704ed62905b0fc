// libFuzzer target for the ONNX importer: any bytes must give either a graph that verifies or one
// error line starting with the origin name; never a crash, hang, leak or undefined behaviour.
// With PARTEX_FUZZ_WRITE_SEEDS=DIR the binary writes the importer's hand-built test models into DIR
// (a seed corpus) and exits.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "onnx/importer.h"
#include "gen/testmodels.h"

namespace {

constexpr const char* kOrigin = "fuzz.onnx";

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_import: %s: %s\n", what, detail.c_str());
  std::abort();
}

void checkGraph(const partex::Graph& g, int depth) {
  if (auto st = g.verify(); !st) fail("imported graph does not verify", st.message());
  (void)g.paramBytes();
  for (const auto& v : g.values) {
    if (v.shapeKnown && v.numElements() < 0) fail("known shape with negative size", v.name);
    if (v.data && (!v.isWeight || v.data->size() != static_cast<size_t>(v.bytes())))
      fail("weight data of another size than the weight", v.name);
  }
  for (const auto& n : g.nodes)
    for (const auto& [name, sub] : n.subgraphs) {
      if (!sub) fail("null subgraph", n.name);
      if (depth < 64) checkGraph(*sub, depth + 1);
    }
}

void check(const partex::Result<partex::Graph>& g) {
  if (g.isOk()) {
    checkGraph(*g, 0);
    return;
  }
  const std::string& m = g.message();
  const std::string prefix = std::string(kOrigin) + ": ";
  if (m.size() <= prefix.size() || m.compare(0, prefix.size(), prefix) != 0) fail("error without origin", m);
  if (m.find('\n') != std::string::npos || m.find('\r') != std::string::npos) fail("multi-line error", m);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* dir = std::getenv("PARTEX_FUZZ_WRITE_SEEDS")) {
    for (const auto& [name, bytes] : partex::testmodels::all()) {
      std::ofstream out(std::string(dir) + "/seed_" + name, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  partex::ImportOptions opts;
  check(partex::importOnnxBytes(bytes, kOrigin, opts));
  // Without the checker the importer reaches its folding and shape code with less validated models.
  opts.runChecker = false;
  check(partex::importOnnxBytes(bytes, kOrigin, opts));
  // With bindings, models with symbolic inputs (N, H, W) get past the binding step.
  opts.runChecker = (size % 2) == 0;
  for (const char* b : {"N=1", "H=8", "W=8"}) opts.dims.push_back(partex::parseDimBinding(b).value());
  check(partex::importOnnxBytes(bytes, kOrigin, opts));
  return 0;
}
