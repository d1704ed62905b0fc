// The graph-level rewrites (ir/rewrites.h) on small hand-built graphs and on the generated transformers:
// each one is found where its condition holds and runs as one fused kernel whose outputs match the
// operators run one by one (test::runGraph, the unfused reference); where the condition fails (reflect
// padding, a non-zero constant, MaxPool of a signed input, a permutation that does not cancel, a Gelu
// constant that is not 0.5, a mean over another axis) nothing is rewritten.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "ir/fusion.h"
#include "ir/rewrites.h"
#include "ir/tensordata.h"
#include "profile/executor.h"
#include "profile/profile.h"
#include "profile/profiler.h"

using namespace partex;

namespace {

using Names = std::vector<std::string>;

/// A graph builder whose constants carry their data (the matchers read them).
struct B {
  Graph g;
  ValueId value(const std::string& name, DType t, std::vector<int64_t> shape) {
    Value v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    return g.addValue(v);
  }
  ValueId input(const std::string& name, std::vector<int64_t> shape) {
    ValueId v = value(name, DType::Float32, std::move(shape));
    g.values[static_cast<size_t>(v)].isGraphInput = true;
    g.inputs.push_back(v);
    return v;
  }
  template <class T>
  ValueId constant(const std::string& name, DType t, std::vector<int64_t> shape, const std::vector<T>& data) {
    ValueId v = value(name, t, std::move(shape));
    Value& w = g.values[static_cast<size_t>(v)];
    w.isWeight = true;
    auto d = TensorData::allocate(data.size() * sizeof(T));
    std::memcpy(d->mutableData(), data.data(), data.size() * sizeof(T));
    w.data = std::move(d);
    return v;
  }
  ValueId f(const std::string& name, float x) { return constant<float>(name, DType::Float32, {}, {x}); }
  ValueId ints(const std::string& name, const std::vector<int64_t>& x) {
    return constant<int64_t>(name, DType::Int64, {static_cast<int64_t>(x.size())}, x);
  }
  /// A float32 weight of seeded values in [lo, hi].
  ValueId weight(const std::string& name, std::vector<int64_t> shape, float lo = -0.5f, float hi = 0.5f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> x(static_cast<size_t>(n));
    uint64_t s = std::hash<std::string>{}(name) | 1;
    for (float& v : x) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      v = lo + (hi - lo) * static_cast<float>((s >> 40) & 0xffffff) / static_cast<float>(0xffffff);
    }
    return constant<float>(name, DType::Float32, std::move(shape), x);
  }
  ValueId op(const std::string& type, const std::string& name, std::vector<ValueId> ins, std::vector<int64_t> out,
             std::map<std::string, Attribute> attrs = {}) {
    ValueId o = value(name + "_out", DType::Float32, std::move(out));
    Node n;
    n.name = name;
    n.opType = type;
    n.inputs = std::move(ins);
    n.outputs = {o};
    n.attrs = std::move(attrs);
    g.addNode(n);
    return o;
  }
  void output(ValueId v) {
    g.values[static_cast<size_t>(v)].isGraphOutput = true;
    g.outputs.push_back(v);
  }
  std::vector<FusedGroup> groups() {
    g.rebuildIndex();
    return fusedGroups(g);
  }
  Names names(const FusedGroup& grp) const {
    Names r;
    for (OpId op : grp.ops) r.push_back(g.nodes[static_cast<size_t>(op)].name);
    return r;
  }
  /// The names of the groups of rewrite `r`.
  std::vector<Names> rewrites(Rewrite r) {
    std::vector<Names> out;
    for (const auto& grp : groups())
      if (rewriteOf(g, grp.ops) == r) out.push_back(names(grp));
    return out;
  }
};

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.value = std::move(v);
  return a;
}
Attribute i64(int64_t v) {
  Attribute a;
  a.value = v;
  return a;
}
Attribute str(std::string v) {
  Attribute a;
  a.value = std::move(v);
  return a;
}

/// Runs `g` one operator at a time and with its fused groups (the same seeded inputs, on core0) and
/// checks every model output within 1e-5 relative; returns the number of fused kernels run.
int fusedMatches(const Graph& g) {
  auto backend = makeCpuBackend();
  std::map<ValueId, Tensor> leaves;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v) {
    const Value& val = g.values[static_cast<size_t>(v)];
    if (!(val.isWeight || val.isGraphInput) || val.consumers.empty()) continue;
    auto t = leafTensor(g, v, 7);
    if (!t) {
      qWarning("%s", t.message().c_str());
      return -1;
    }
    leaves[v] = std::move(*t);
  }
  std::map<ValueId, Tensor> ref = leaves, got = leaves;
  if (Status s = test::runGraph(g, *backend, "core0", ref); !s) {
    qWarning("reference: %s", s.message().c_str());
    return -1;
  }
  auto fused = test::runGraphFused(g, *backend, "core0", got);
  if (!fused) {
    qWarning("fused: %s", fused.message().c_str());
    return -1;
  }
  for (ValueId o : g.outputs) {
    Tensor a, b;
    if (!ref[o].toPlain(a) || !got[o].toPlain(b)) return -1;
    double maxAbs = 0, maxRel = 0;
    std::string why;
    if (!tensorsClose(a, b, 1e-5, maxAbs, maxRel, &why)) {
      qWarning("%s: %s", g.values[static_cast<size_t>(o)].name.c_str(), why.c_str());
      return -1;
    }
  }
  return *fused;
}

/// x [1,8,10,10] -> Pad (pads on H and W: top/left 1, bottom/right `end`) -> depthwise 3x3 Conv stride 2
/// -> Relu. `viaAttr`: pads as an attribute (opset < 11), else a constant input.
B padConv(const std::string& mode, float value, std::vector<int64_t> pads, bool viaAttr = false) {
  B b;
  ValueId x = b.input("x", {1, 8, 10, 10});
  std::map<std::string, Attribute> pa{{"mode", str(mode)}};
  std::vector<ValueId> pin{x};
  if (viaAttr) {
    pa["pads"] = ints(pads);
    Attribute v;
    v.value = static_cast<double>(value);
    pa["value"] = v;
  } else {
    pin.push_back(b.ints("pads", pads));
    pin.push_back(b.f("pad_value", value));
  }
  const int64_t H = 10 + pads[2] + pads[6], W = 10 + pads[3] + pads[7];
  ValueId p = b.op("Pad", "pad", pin, {1, 8, H, W}, pa);
  ValueId c = b.op("Conv", "conv", {p, b.weight("w", {8, 1, 3, 3}), b.weight("bias", {8})},
                   {1, 8, (H - 3) / 2 + 1, (W - 3) / 2 + 1},
                   {{"group", i64(8)}, {"strides", ints({2, 2})}, {"kernel_shape", ints({3, 3})}});
  b.output(b.op("Relu", "relu", {c}, b.g.values[static_cast<size_t>(c)].shape));
  return b;
}

/// x -> [Relu] -> Pad -> pool (3x3, stride 2).
B padPool(const std::string& pool, bool relu, std::map<std::string, Attribute> attrs,
          std::vector<int64_t> ownPads = {}) {
  B b;
  ValueId x = b.input("x", {1, 4, 9, 9});
  if (relu) x = b.op("Relu", "relu", {x}, {1, 4, 9, 9});
  ValueId p = b.op("Pad", "pad", {x, b.ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})}, {1, 4, 11, 11});
  attrs["kernel_shape"] = ints({3, 3});
  attrs["strides"] = ints({2, 2});
  int64_t extra = 0;
  if (!ownPads.empty()) {
    attrs["pads"] = ints(ownPads);
    extra = ownPads[0] + ownPads[2];
  }
  const int64_t o = (11 + extra - 3) / 2 + 1;
  b.output(b.op(pool, "pool", {p}, {1, 4, o, o}, attrs));
  return b;
}

/// Erf Gelu of x [2,5,16] in one of the orders exporters write (0: (x*u)*0.5 with Div, 1: (x*0.5)*u with
/// Mul by 1/sqrt 2, 2: x*(u*0.5)); `half` is the constant that should be 0.5.
B geluErf(int order, float half = 0.5f) {
  B b;
  ValueId x = b.op("Relu", "pre", {b.input("x", {2, 5, 16})}, {2, 5, 16});  // a producer, as in a model
  const std::vector<int64_t> s{2, 5, 16};
  ValueId d = order == 1 ? b.op("Mul", "scale", {x, b.f("rsqrt2", 0.70710678f)}, s)
                         : b.op("Div", "scale", {x, b.f("sqrt2", 1.4142135f)}, s);
  ValueId u = b.op("Add", "add1", {b.f("one", 1.0f), b.op("Erf", "erf", {d}, s)}, s);
  ValueId y;
  if (order == 0) {
    y = b.op("Mul", "half", {b.op("Mul", "mulx", {x, u}, s), b.f("half", half)}, s);
  } else if (order == 1) {
    y = b.op("Mul", "mulu", {b.op("Mul", "half", {b.f("half", half), x}, s), u}, s);
  } else {
    y = b.op("Mul", "mulx", {x, b.op("Mul", "half", {u, b.f("half", half)}, s)}, s);
  }
  b.output(b.op("Tanh", "post", {y}, s));
  return b;
}

/// GPT-2's gelu_new written out on x [3,16].
B geluTanh() {
  B b;
  const std::vector<int64_t> s{3, 16};
  ValueId x = b.input("x", s);
  ValueId c = b.op("Pow", "cube", {x, b.f("three", 3.0f)}, s);
  ValueId a = b.op("Add", "inner", {x, b.op("Mul", "k", {b.f("k044", 0.044715f), c}, s)}, s);
  ValueId t = b.op("Tanh", "tanh", {b.op("Mul", "sqrt2pi", {a, b.f("s2pi", 0.7978845608f)}, s)}, s);
  ValueId u = b.op("Add", "add1", {t, b.f("one", 1.0f)}, s);
  b.output(b.op("Mul", "mulu", {b.op("Mul", "half", {b.f("half", 0.5f), x}, s), u}, s));
  return b;
}

/// A LayerNorm over the last axis of x [2,6,32] written out; `axis` of the means, `square` Pow or Mul.
B layerNorm(int64_t axis, bool pow, bool affine) {
  B b;
  const std::vector<int64_t> s{2, 6, 32}, r{2, 6, 1};
  ValueId x = b.input("x", s);
  std::map<std::string, Attribute> mean{{"axes", ints({axis})}, {"keepdims", i64(1)}};
  const std::vector<int64_t> ms = axis == -1 || axis == 2 ? r : std::vector<int64_t>{2, 1, 32};
  ValueId m = b.op("ReduceMean", "mean", {x}, ms, mean);
  ValueId d = b.op("Sub", "sub", {x, m}, s);
  ValueId sq = pow ? b.op("Pow", "pow", {d, b.f("two", 2.0f)}, s) : b.op("Mul", "pow", {d, d}, s);
  ValueId v = b.op("ReduceMean", "var", {sq}, ms, mean);
  ValueId sd = b.op("Sqrt", "sqrt", {b.op("Add", "add_eps", {v, b.f("eps", 1e-5f)}, ms)}, ms);
  ValueId y = b.op("Div", "div", {d, sd}, s);
  if (affine) {
    y = b.op("Mul", "mul", {b.weight("gamma", {32}, 0.5f, 1.5f), y}, s);
    y = b.op("Add", "add", {y, b.weight("beta", {1, 1, 32})}, s);
  }
  b.output(y);
  return b;
}

}  // namespace

class TestRewrites : public QObject {
  Q_OBJECT

 private slots:
  void padIntoConv() {
    for (bool viaAttr : {false, true}) {
      B b = padConv("constant", 0.0f, {0, 0, 1, 1, 0, 0, 2, 1}, viaAttr);
      QCOMPARE(b.rewrites(Rewrite::PadIntoConv), (std::vector<Names>{{"pad", "conv", "relu"}}));
      const auto f = padFoldOf(b.g, b.g.findNode("pad"));
      QVERIFY(f.has_value());
      QCOMPARE(f->pads, (std::vector<int64_t>{1, 1, 2, 1}));
      QCOMPARE(fusedMatches(b.g), 1);
    }
  }

  void padNotIntoConv() {
    // Reflect padding, a constant 1 and negative pads (a crop) are no zero padding of a Conv: the Pad
    // stays, the Conv + Relu chain is fused as before.
    for (B b : {padConv("reflect", 0.0f, {0, 0, 1, 1, 0, 0, 1, 1}), padConv("constant", 1.0f, {0, 0, 1, 1, 0, 0, 1, 1}),
                padConv("constant", 0.0f, {0, 0, -1, 1, 0, 0, 0, 1})}) {
      QVERIFY(b.rewrites(Rewrite::PadIntoConv).empty());
      const auto gs = b.groups();
      QCOMPARE(gs.size(), size_t{1});
      QCOMPARE(b.names(gs[0]), (Names{"conv", "relu"}));
      QCOMPARE(fusedMatches(b.g), 1);
    }
  }

  void padIntoPooling() {
    // AveragePool excluding padding with none of its own: the Pad's zeros count, so the folded pool counts
    // its padding.
    B avg = padPool("AveragePool", false, {});
    QCOMPARE(avg.rewrites(Rewrite::PadIntoPool), (std::vector<Names>{{"pad", "pool"}}));
    QCOMPARE(fusedMatches(avg.g), 1);
    B avgInc = padPool("AveragePool", false, {{"count_include_pad", i64(1)}}, {1, 1, 1, 1});
    QCOMPARE(avgInc.rewrites(Rewrite::PadIntoPool).size(), size_t{1});
    QCOMPARE(fusedMatches(avgInc.g), 1);
    // MaxPool after Relu: zeros never win over a non-negative input.
    B max = padPool("MaxPool", true, {});
    QCOMPARE(max.rewrites(Rewrite::PadIntoPool), (std::vector<Names>{{"pad", "pool"}}));
    QCOMPARE(fusedMatches(max.g), 1);
  }

  void padNotIntoPooling() {
    // MaxPool of a signed input: a zero of the Pad can be a window's maximum, -inf padding never is.
    B max = padPool("MaxPool", false, {});
    QVERIFY(max.rewrites(Rewrite::PadIntoPool).empty());
    QCOMPARE(fusedMatches(max.g), 0);
    // AveragePool with its own padding excluded from the count: the two paddings count differently.
    B avg = padPool("AveragePool", false, {}, {1, 1, 1, 1});
    QVERIFY(avg.rewrites(Rewrite::PadIntoPool).empty());
    QCOMPARE(fusedMatches(avg.g), 0);
    // ceil_mode: windows may run past the padded input.
    B ceil = padPool("AveragePool", false, {{"ceil_mode", i64(1)}});
    QVERIFY(ceil.rewrites(Rewrite::PadIntoPool).empty());
  }

  void transposesCancel() {
    B b;
    ValueId x = b.input("x", {2, 3, 4, 5});
    ValueId t = b.op("Transpose", "t1", {x}, {2, 4, 5, 3}, {{"perm", ints({0, 2, 3, 1})}});
    t = b.op("Transpose", "t2", {t}, {2, 3, 4, 5}, {{"perm", ints({0, 3, 1, 2})}});
    b.output(b.op("Sigmoid", "post", {t}, {2, 3, 4, 5}));
    QCOMPARE(b.rewrites(Rewrite::TransposePair), (std::vector<Names>{{"t1", "t2"}}));
    QCOMPARE(fusedMatches(b.g), 1);
    // The same permutation twice does not cancel.
    B n;
    x = n.input("x", {2, 3, 4, 5});
    t = n.op("Transpose", "t1", {x}, {2, 4, 5, 3}, {{"perm", ints({0, 2, 3, 1})}});
    n.output(n.op("Transpose", "t2", {t}, {2, 5, 3, 4}, {{"perm", ints({0, 2, 3, 1})}}));
    QVERIFY(n.rewrites(Rewrite::TransposePair).empty());
    QCOMPARE(fusedMatches(n.g), 0);
  }

  void transposeIntoMatMul() {
    // Attention's Q x K^T: [2,3,7,8] x Transpose([2,3,9,8]) (last two axes); and both operands transposed.
    for (bool both : {false, true}) {
      B b;
      ValueId q = b.input("q", both ? std::vector<int64_t>{2, 3, 8, 7} : std::vector<int64_t>{2, 3, 7, 8});
      if (both) q = b.op("Transpose", "tq", {q}, {2, 3, 7, 8}, {{"perm", ints({0, 1, 3, 2})}});
      ValueId k = b.op("Transpose", "tk", {b.input("k", {2, 3, 9, 8})}, {2, 3, 8, 9}, {{"perm", ints({0, 1, 3, 2})}});
      b.output(b.op("MatMul", "qk", {q, k}, {2, 3, 7, 9}));
      QCOMPARE(b.rewrites(Rewrite::TransposeMatMul),
               (std::vector<Names>{both ? Names{"tq", "tk", "qk"} : Names{"tk", "qk"}}));
      QCOMPARE(fusedMatches(b.g), 1);
    }
    // A 3-D activation by a transposed 2-D operand (broadcast over the batch).
    B w;
    ValueId a = w.input("a", {4, 5, 6});
    ValueId bt = w.op("Transpose", "tb", {w.input("b", {7, 6})}, {6, 7}, {{"perm", ints({1, 0})}});
    w.output(w.op("MatMul", "mm", {a, bt}, {4, 5, 7}));
    QCOMPARE(w.rewrites(Rewrite::TransposeMatMul), (std::vector<Names>{{"tb", "mm"}}));
    QCOMPARE(fusedMatches(w.g), 1);
    // Attention's head split as the generators write it: Transpose (0,2,1,3) of q, (0,2,3,1) of k.
    B h;
    ValueId qh = h.op("Transpose", "tq", {h.input("q", {2, 7, 3, 8})}, {2, 3, 7, 8}, {{"perm", ints({0, 2, 1, 3})}});
    ValueId kh = h.op("Transpose", "tk", {h.input("k", {2, 9, 3, 8})}, {2, 3, 8, 9}, {{"perm", ints({0, 2, 3, 1})}});
    h.output(h.op("MatMul", "qk", {qh, kh}, {2, 3, 7, 9}));
    QCOMPARE(h.rewrites(Rewrite::TransposeMatMul), (std::vector<Names>{{"tq", "tk", "qk"}}));
    QCOMPARE(fusedMatches(h.g), 1);
    // Batch axes that broadcast on A's side (A's 1 against B's 2) are not what oneDNN's matmul takes.
    B n;
    ValueId k = n.op("Transpose", "tk", {n.input("k", {2, 3, 9, 8})}, {2, 3, 8, 9}, {{"perm", ints({0, 1, 3, 2})}});
    n.output(n.op("MatMul", "qk", {n.input("q", {1, 3, 7, 8}), k}, {2, 3, 7, 9}));
    QVERIFY(n.rewrites(Rewrite::TransposeMatMul).empty());
    QCOMPARE(fusedMatches(n.g), 0);
    // A Transpose read by something else too stays.
    B s;
    k = s.op("Transpose", "tk", {s.input("k", {2, 3, 9, 8})}, {2, 3, 8, 9}, {{"perm", ints({0, 1, 3, 2})}});
    s.output(s.op("MatMul", "qk", {s.input("q", {2, 3, 7, 8}), k}, {2, 3, 7, 9}));
    s.output(s.op("Relu", "other", {k}, {2, 3, 8, 9}));
    QVERIFY(s.rewrites(Rewrite::TransposeMatMul).empty());
  }

  void geluPatterns() {
    for (int order : {0, 1, 2}) {
      B b = geluErf(order);
      const auto r = b.rewrites(Rewrite::Gelu);
      QCOMPARE(r.size(), size_t{1});
      QCOMPARE(r[0].size(), size_t{5});
      QCOMPARE(fusedMatches(b.g), 1);
    }
    B t = geluTanh();
    QCOMPARE(t.rewrites(Rewrite::Gelu),
             (std::vector<Names>{{"cube", "k", "inner", "sqrt2pi", "tanh", "add1", "half", "mulu"}}));
    bool tanh = false;
    QCOMPARE(geluOf(t.g, t.g.findValue("x"), &tanh).size(), size_t{8});
    QVERIFY(tanh);
    QCOMPARE(fusedMatches(t.g), 1);
    // 0.6 instead of 0.5 is no Gelu.
    B n = geluErf(0, 0.6f);
    QVERIFY(n.rewrites(Rewrite::Gelu).empty());
    QCOMPARE(fusedMatches(n.g), 0);
  }

  void layerNormPatterns() {
    for (bool pow : {true, false})
      for (bool affine : {true, false}) {
        B b = layerNorm(-1, pow, affine);
        const auto r = b.rewrites(Rewrite::LayerNorm);
        QCOMPARE(r.size(), size_t{1});
        QCOMPARE(r[0].size(), affine ? size_t{9} : size_t{7});
        QCOMPARE(fusedMatches(b.g), 1);
      }
    // Means over the middle axis: no layer norm over the last one.
    B n = layerNorm(1, true, true);
    QVERIFY(n.rewrites(Rewrite::LayerNorm).empty());
    QCOMPARE(fusedMatches(n.g), 0);
  }

  /// A Gemm chain with one to three rows (kPackMinRows) runs as gemvRows and the chain's own loop: the
  /// same values as the operators one by one, for an activation, a folded per-column Mul then Relu, a
  /// residual Add then Tanh, and Clip with bounds as inputs.
  void fewRowChains() {
    for (int64_t m : {1, 2, 3})
      for (int chain = 0; chain < 4; ++chain) {
        B b;
        const std::vector<int64_t> s{m, 24};
        ValueId y = b.op("Gemm", "gemm", {b.input("x", {m, 40}), b.weight("w", {24, 40}), b.weight("c", {24})}, s,
                         {{"transB", i64(1)}});
        if (chain == 0) y = b.op("Sigmoid", "act", {y}, s);
        if (chain == 1) y = b.op("Relu", "act", {b.op("Mul", "scale", {y, b.weight("k", {24}, -2.0f, 2.0f)}, s)}, s);
        if (chain == 2) y = b.op("Tanh", "act", {b.op("Add", "res", {y, b.input("r", s)}, s)}, s);
        if (chain == 3) y = b.op("Clip", "act", {y, b.f("lo", -0.2f), b.f("hi", 0.3f)}, s);
        b.output(y);
        b.g.opsetVersion = 17;
        b.g.rebuildIndex();
        QVERIFY2(b.groups().size() == 1, ("chain " + std::to_string(chain)).c_str());
        QCOMPARE(fusedMatches(b.g), 1);
      }
  }

  /// By hand: [1, 2, 3] x [[1, 0, 1], [0, 1, 1]]^T + [0, -9] = [4, -4], then Sigmoid: 1 / (1 + e^-4) and
  /// 1 / (1 + e^4).
  void fewRowChainByHand() {
    B b;
    ValueId y = b.op("Gemm", "gemm",
                     {b.input("x", {1, 3}), b.constant<float>("w", DType::Float32, {2, 3}, {1, 0, 1, 0, 1, 1}),
                      b.constant<float>("c", DType::Float32, {2}, {0, -9})},
                     {1, 2}, {{"transB", i64(1)}});
    y = b.op("Sigmoid", "act", {y}, {1, 2});
    b.output(y);
    b.g.opsetVersion = 17;
    b.g.rebuildIndex();
    auto backend = makeCpuBackend();
    std::map<ValueId, Tensor> values;
    for (ValueId v = 0; v < static_cast<ValueId>(b.g.values.size()); ++v)
      if (b.g.values[static_cast<size_t>(v)].isWeight) values[v] = std::move(*leafTensor(b.g, v, 1));
    Tensor x = std::move(*Tensor::make(DType::Float32, {1, 3}));
    const float xs[3] = {1, 2, 3};
    std::memcpy(x.raw(), xs, sizeof xs);
    values[b.g.inputs[0]] = std::move(x);
    auto fused = test::runGraphFused(b.g, *backend, "core0", values);
    QVERIFY2(fused.isOk(), fused.message().c_str());
    QCOMPARE(*fused, 1);
    const auto* out = static_cast<const float*>(values[y].raw());
    QVERIFY(std::abs(out[0] - 0.98201379f) < 1e-6f);
    QVERIFY(std::abs(out[1] - 0.01798621f) < 1e-6f);
  }

  void generatedTransformers_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("bert") << "bert";
    QTest::newRow("gpt2") << "gpt2";
  }
  /// The generators write LayerNorm and Gelu out as torch.onnx does: every one is found, and the model's
  /// outputs with the rewrites match the operators one by one.
  void generatedTransformers() {
    QFETCH(QString, kind);
    GenSpec spec;
    spec.kind = kind.toStdString();
    spec.weights = true;
    spec.layers = 2;
    spec.seqLen = 16;
    spec.hidden = 64;
    spec.heads = 4;
    spec.vocab = 100;
    auto g = test::generatedGraph(spec);
    QVERIFY2(g.isOk(), g.message().c_str());
    std::map<Rewrite, int> count;
    for (const auto& grp : fusedGroups(*g)) ++count[rewriteOf(*g, grp.ops)];
    const int norms = kind == "bert" ? 1 + 2 * 2 : 2 * 2 + 1;
    QCOMPARE(count[Rewrite::LayerNorm], norms);
    QCOMPARE(count[Rewrite::Gelu], 2);
    // Per layer: q x k (both read through their head-split Transposes), then the scores x v.
    QCOMPARE(count[Rewrite::TransposeMatMul], 2 * 2);
    QVERIFY(fusedMatches(*g) >= norms + 2 + 4);
  }

  /// The in-context profile records the rewrites as the kernels the runtime ran (what plan files, the
  /// Gantt chart and the inspector then show), and --groups times each as its one kernel.
  void profileRecordsTheRewrites() {
    B b = padConv("constant", 0.0f, {0, 0, 1, 1, 0, 0, 1, 1});
    const ValueId r = b.g.outputs.back();
    b.g.values[static_cast<size_t>(r)].isGraphOutput = false;
    b.g.outputs.clear();
    const auto& rs = b.g.values[static_cast<size_t>(r)].shape;
    const int64_t H = rs[2] + 2;
    ValueId p = b.op("Pad", "pad2", {r, b.ints("pads2", {0, 0, 1, 1, 0, 0, 1, 1})}, {1, 8, H, H});
    b.output(b.op("MaxPool", "pool", {p}, {1, 8, (H - 3) / 2 + 1, (H - 3) / 2 + 1},
                  {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}}));
    b.g.rebuildIndex();
    auto backend = makeCpuBackend();
    ProfilerOptions o;
    o.method = ProfilerOptions::Method::InContext;
    o.devices = {"core0"};
    o.warmup = 1;
    o.reps = 2;
    o.groups = true;
    auto prof = profileModel(b.g, *backend, o);
    QVERIFY2(prof.isOk(), prof.message().c_str());
    const ProfileDevice& pd = prof->devices.at(0);
    const std::set<Names> recorded(pd.fused.begin(), pd.fused.end());
    QCOMPARE(recorded, (std::set<Names>{{"pad", "conv", "relu"}, {"pad2", "pool"}}));
    for (const Names& k : recorded)
      QVERIFY2(std::any_of(pd.groups.begin(), pd.groups.end(), [&](const ProfileGroup& pg) { return pg.ops == k; }),
               k.front().c_str());
  }
};

QTEST_GUILESS_MAIN(TestRewrites)
#include "tst_rewrites.moc"
