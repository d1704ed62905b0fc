// bench_rowmajor: the CPU backend's 4-D operators fed a row-major activation (what a GPU kernel's output
// is on the host, and a model input) against the same operator fed the channels-last tensor an all-CPU
// plan gives it, beside the conversion alone (row-major -> channels-last, the tiled transpose) and a
// memcpy of the same bytes. Each operator's output is read by a 1x1 Conv, as in a CNN, so the kernel
// may leave it channels-last (nhwcOutputOk). Shapes are Inception v1's and ResNet's. One thread on
// core0; the layouts are timed interleaved, round by round, and the medians compared. Issue 25.
//
// Usage: bench_rowmajor [--reps N] [--filter TEXT]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "kernels/kernels.h"

using namespace partex;

namespace {

using Dims = std::vector<int64_t>;

struct Case {
  std::string name, op;
  Dims x;
  std::map<std::string, Attribute> attrs;
  std::vector<Dims> params;  ///< Further inputs (weights), after X.
};

ValueId addValue(Graph& g, const std::string& name, const Dims& shape, bool weight) {
  Value v;
  v.name = name;
  v.dtype = DType::Float32;
  v.shape = shape;
  v.shapeKnown = !shape.empty();
  v.isGraphInput = !weight;
  v.isWeight = weight;
  const ValueId id = g.addValue(v);
  if (!weight) g.inputs.push_back(id);
  return id;
}

/// The operator on input "x", its output read by a 1x1 Conv (so it may stay channels-last).
Graph build(const Case& c, const Dims& outShape) {
  Graph g;
  g.opsetVersion = 17;
  Node n;
  n.name = "op";
  n.opType = c.op;
  n.attrs = c.attrs;
  n.inputs.push_back(addValue(g, "x", c.x, false));
  for (size_t i = 0; i < c.params.size(); ++i) n.inputs.push_back(addValue(g, "p" + std::to_string(i), c.params[i], true));
  const ValueId y = addValue(g, "y", outShape, true);
  g.values[static_cast<size_t>(y)].isWeight = false;
  n.outputs.push_back(y);
  g.addNode(n);
  Node r;
  r.name = "reader";
  r.opType = "Conv";
  r.inputs = {y, addValue(g, "rw", {8, outShape[1], 1, 1}, true)};
  const ValueId z = addValue(g, "z", {}, true);
  g.values[static_cast<size_t>(z)].isWeight = false;
  r.outputs.push_back(z);
  g.outputs.push_back(z);
  g.addNode(r);
  g.rebuildIndex();
  return g;
}

Attribute ints(Dims v) { return Attribute{std::move(v)}; }

Case conv(const std::string& name, int64_t c, int64_t m, int64_t hw, int64_t k, int64_t stride) {
  Case cs{name, "Conv", {1, c, hw, hw}, {}, {{m, c, k, k}, {m}}};
  cs.attrs["pads"] = ints({k / 2, k / 2, k / 2, k / 2});
  cs.attrs["strides"] = ints({stride, stride});
  return cs;
}
Case pool(const std::string& name, const std::string& op, int64_t c, int64_t hw, int64_t k, int64_t stride, int64_t pad,
          bool ceil) {
  Case cs{name, op, {1, c, hw, hw}, {}, {}};
  cs.attrs["kernel_shape"] = ints({k, k});
  cs.attrs["strides"] = ints({stride, stride});
  cs.attrs["pads"] = ints({pad, pad, pad, pad});
  if (ceil) cs.attrs["ceil_mode"] = Attribute{int64_t{1}};
  return cs;
}

double usSince(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(3, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_rowmajor [--reps N] [--filter TEXT]\n");
      return 2;
    }
  }
  BackendRegistry reg;
  registerBuiltinBackends(reg);
  Backend* cpu = reg.find("cpu");
  std::printf("backend: %s\n\n", cpu->version().c_str());
  std::vector<Case> cases = {
      conv("Conv 1x1 192->64 28x28 (Inception 3a)", 192, 64, 28, 1, 1),
      conv("Conv 3x3 96->128 28x28 (Inception 3a)", 96, 128, 28, 3, 1),
      conv("Conv 1x1 480->192 14x14 (Inception 4a)", 480, 192, 14, 1, 1),
      conv("Conv 5x5 16->32 28x28 (Inception 3a)", 16, 32, 28, 5, 1),
      conv("Conv 3x3 64->64 56x56 (ResNet)", 64, 64, 56, 3, 1),
      pool("MaxPool 3x3/1 p1 192x28x28 (Inception branch)", "MaxPool", 192, 28, 3, 1, 1, false),
      pool("MaxPool 3x3/2 ceil 480x28x28 (Inception 3->4)", "MaxPool", 480, 28, 3, 2, 0, true),
      pool("MaxPool 3x3/2 ceil 64x112x112 (Inception stem)", "MaxPool", 64, 112, 3, 2, 0, true),
      pool("MaxPool 3x3/2 p1 64x112x112 (ResNet stem)", "MaxPool", 64, 112, 3, 2, 1, false),
      pool("AveragePool 3x3/1 p1 192x28x28", "AveragePool", 192, 28, 3, 1, 1, false),
      Case{"GlobalAveragePool 1024x7x7", "GlobalAveragePool", {1, 1024, 7, 7}, {}, {}},
      Case{"BatchNormalization 64x56x56", "BatchNormalization", {1, 64, 56, 56}, {}, {{64}, {64}, {64}, {64}}},
      Case{"Relu 192x28x28", "Relu", {1, 192, 28, 28}, {}, {}},
  };
  {
    Case lrn{"LRN 64x56x56 (Inception stem)", "LRN", {1, 64, 56, 56}, {}, {}};
    lrn.attrs["size"] = Attribute{int64_t{5}};
    lrn.attrs["alpha"] = Attribute{0.0001};
    lrn.attrs["beta"] = Attribute{0.75};
    cases.push_back(lrn);
  }
  std::printf("| operator | channels-last in, us | row-major in, us | row-major / channels-last | conversion alone, us "
              "| (channels-last + conversion) / row-major | memcpy of the input, us | output channels-last (cl / rm) |\n"
              "|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (const Case& c : cases) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    // The output shape: run once on a graph whose output shape is unknown.
    Dims outShape;
    {
      Graph g0 = build(c, {1, 1, 1, 1});
      auto k = cpu->prepare(g0, 0, "core0");
      if (!k) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), k.message().c_str());
        return 2;
      }
      std::vector<Tensor> ins, outs;
      ins.push_back(std::move(*Tensor::make(DType::Float32, c.x)));
      for (const Dims& d : c.params) ins.push_back(std::move(*Tensor::make(DType::Float32, d)));
      std::vector<const Tensor*> ptrs;
      for (auto& t : ins) ptrs.push_back(&t);
      if (Status s = (*k)->run(ptrs, outs); !s) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), s.message().c_str());
        return 2;
      }
      outShape = outs[0].shape();
    }
    const Graph g = build(c, outShape);
    auto kc = cpu->prepare(g, 0, "core0");  // fed channels-last
    auto kr = cpu->prepare(g, 0, "core0");  // fed row-major
    if (!kc || !kr) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), (!kc ? kc : kr).message().c_str());
      return 2;
    }
    Tensor xr = std::move(*Tensor::make(DType::Float32, c.x));
    xr.fillRandom(1);
    Tensor xc;
    (void)xc.ensureNhwc(c.x);
    const int64_t C = c.x[1], S = c.x[2] * c.x[3];
    cpu::transposePlane32(xr.raw(), S, xc.raw(), C, S, C);
    std::vector<Tensor> params;
    for (size_t i = 0; i < c.params.size(); ++i) {
      params.push_back(std::move(*Tensor::make(DType::Float32, c.params[i])));
      params.back().fillRandom(i + 2);
      if (c.op == "BatchNormalization" && i == 3) {  // variance > 0
        float* v = static_cast<float*>(params.back().raw());
        for (int64_t j = 0; j < params.back().numElements(); ++j) v[j] = std::abs(v[j]) + 0.5f;
      }
    }
    std::vector<const Tensor*> inC{&xc}, inR{&xr};
    for (auto& p : params) {
      inC.push_back(&p);
      inR.push_back(&p);
    }
    std::vector<Tensor> outC, outR;
    Tensor conv;
    (void)conv.ensureNhwc(c.x);
    std::vector<char> copy(static_cast<size_t>(xr.bytes()));
    for (int w = 0; w < 3; ++w) {
      if (Status s = (*kc)->run(inC, outC); !s) return std::fprintf(stderr, "%s\n", s.message().c_str()), 2;
      if (Status s = (*kr)->run(inR, outR); !s) return std::fprintf(stderr, "%s\n", s.message().c_str()), 2;
    }
    std::vector<double> tc, tr, tconv, tcopy;
    for (int r = 0; r < reps; ++r) {
      auto a = std::chrono::steady_clock::now();
      (void)(*kc)->run(inC, outC);
      tc.push_back(usSince(a));
      a = std::chrono::steady_clock::now();
      (void)(*kr)->run(inR, outR);
      tr.push_back(usSince(a));
      a = std::chrono::steady_clock::now();
      cpu::transposePlane32(xr.raw(), S, conv.raw(), C, S, C);
      tconv.push_back(usSince(a));
      a = std::chrono::steady_clock::now();
      std::memcpy(copy.data(), xr.raw(), copy.size());
      tcopy.push_back(usSince(a));
    }
    const double mc = median(tc), mr = median(tr), mv = median(tconv), mp = median(tcopy);
    std::printf("| %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.1f | %s / %s |\n", c.name.c_str(), mc, mr, mr / mc, mv,
                (mc + mv) / mr, mp, outC[0].nhwc() ? "yes" : "no", outR[0].nhwc() ? "yes" : "no");
    std::fflush(stdout);
  }
  return 0;
}
