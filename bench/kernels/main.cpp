// bench_kernels: GFLOP/s of the CPU backend's Conv and MatMul kernels on cpu-serial and cpu-parallel,
// against the machine's FMA peak measured by measureThisMachine() (an FMA loop per thread count).
// Prints a Markdown table; results are recorded in docs/benchmarks.md.
//
// Usage: bench_kernels [--quick]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "platform/platform.h"

using namespace partex;

namespace {

struct Case {
  std::string name;
  std::string op;
  std::vector<std::vector<int64_t>> inputs;
  std::map<std::string, Attribute> attrs;
  double flops;
};

Graph oneNode(const Case& c) {
  Graph g;
  g.opsetVersion = 17;
  Node n;
  n.name = c.name;
  n.opType = c.op;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = DType::Float32;
    v.shape = c.inputs[i];
    v.shapeKnown = true;
    v.isGraphInput = true;
    const ValueId id = g.addValue(v);
    g.inputs.push_back(id);
    n.inputs.push_back(id);
  }
  Value o;
  o.name = "out";
  o.dtype = DType::Float32;
  const ValueId id = g.addValue(o);
  n.outputs.push_back(id);
  g.outputs.push_back(id);
  g.addNode(n);
  g.rebuildIndex();
  return g;
}

Case conv(const std::string& name, int64_t c, int64_t m, int64_t hw, int64_t k, int64_t stride) {
  const int64_t pad = k / 2, out = (hw + 2 * pad - k) / stride + 1;
  Case cs{name,
          "Conv",
          {{1, c, hw, hw}, {m, c, k, k}},
          {},
          2.0 * double(m) * double(c) * double(k * k) * double(out * out)};
  cs.attrs["pads"] = Attribute{std::vector<int64_t>{pad, pad, pad, pad}};
  cs.attrs["strides"] = Attribute{std::vector<int64_t>{stride, stride}};
  return cs;
}

Case matmul(const std::string& name, int64_t m, int64_t k, int64_t n) {
  return Case{name, "MatMul", {{m, k}, {k, n}}, {}, 2.0 * double(m) * double(k) * double(n)};
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  BackendRegistry reg;
  registerBuiltinBackends(reg);
  Backend* cpu = reg.find("cpu");
  const Platform p = measureThisMachine();
  double peakSerial = 0, peakParallel = 0;
  for (const auto& d : p.devices) {
    if (d.id == "cpu-serial") peakSerial = d.defaultPeakGflops;
    if (d.id == "cpu-parallel") peakParallel = d.defaultPeakGflops;
  }
  std::printf("backend: %s\n", cpu->version().c_str());
  std::printf("FMA peak (measureThisMachine): cpu-serial %.1f GFLOP/s, cpu-parallel %.1f GFLOP/s\n\n", peakSerial,
              peakParallel);
  const std::vector<Case> cases = {
      conv("Conv 3x3 64->64 56x56", 64, 64, 56, 3, 1),
      conv("Conv 1x1 256->64 56x56", 256, 64, 56, 1, 1),
      conv("Conv 3x3 256->256 14x14", 256, 256, 14, 3, 1),
      conv("Conv 7x7/2 3->64 224x224", 3, 64, 224, 7, 2),
      matmul("MatMul 512x512x512", 512, 512, 512),
      matmul("MatMul 1024x1024x1024", 1024, 1024, 1024),
      matmul("MatMul 128x768x3072 (BERT FFN)", 128, 768, 3072),
  };
  std::printf("| kernel | device | median ms | GFLOP/s | %% of FMA peak |\n|---|---|---:|---:|---:|\n");
  for (const Case& c : cases) {
    const Graph g = oneNode(c);
    std::vector<Tensor> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      auto t = Tensor::make(DType::Float32, c.inputs[i]);
      t->fillRandom(i + 1);
      ins.push_back(std::move(*t));
    }
    std::vector<const Tensor*> ptrs;
    for (const auto& t : ins) ptrs.push_back(&t);
    for (const char* dev : {"cpu-serial", "cpu-parallel"}) {
      auto k = cpu->prepare(g, 0, dev);
      if (!k) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), k.message().c_str());
        return 2;
      }
      std::vector<Tensor> outs;
      for (int w = 0; w < 2; ++w)
        if (Status s = (*k)->run(ptrs, outs); !s) {
          std::fprintf(stderr, "%s: %s\n", c.name.c_str(), s.message().c_str());
          return 2;
        }
      std::vector<double> ms;
      const auto start = std::chrono::steady_clock::now();
      const double budget = quick ? 0.1 : 1.0;
      while (ms.size() < 5 ||
             (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget &&
              ms.size() < 200)) {
        const auto t0 = std::chrono::steady_clock::now();
        (void)(*k)->run(ptrs, outs);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
      const double gf = c.flops / (med * 1e6);
      const double peak = std::string(dev) == "cpu-serial" ? peakSerial : peakParallel;
      std::printf("| %s | %s | %.2f | %.1f | %.0f%% |\n", c.name.c_str(), dev, med, gf,
                  peak > 0 ? 100.0 * gf / peak : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
