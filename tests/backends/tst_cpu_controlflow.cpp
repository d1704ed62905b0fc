// Control flow and Einsum on the CPU backend, checked against values computed here: an If whose branches
// read outer values, a Loop with loop-carried state, a scan output and an If nested in its body
// (testmodels::withControlFlow), with the kernels prepared once and run again with other trip counts; and
// float32 Einsum (the oneDNN path, which the conformance suite's float64 cases do not reach) against a
// brute-force sum over every label assignment.

#include <QtTest>

#include <cmath>
#include <map>
#include <random>

#include "backend/backend.h"
#include "cost/work.h"
#include "cpu/cpu_backend.h"
#include "gen/testmodels.h"
#include "graphrun.h"
#include "ir/fusion.h"
#include "ir/rewrites.h"
#include "onnx/importer.h"

using namespace partex;

namespace {

Tensor floatTensor(std::vector<int64_t> shape, uint64_t seed) {
  auto t = Tensor::make(DType::Float32, std::move(shape));
  t->fillRandom(seed, -2.0, 2.0);
  return std::move(*t);
}

Tensor scalarInt(int64_t v) {
  auto t = Tensor::make(DType::Int64, {});
  *t->data<int64_t>() = v;
  return std::move(*t);
}

Tensor scalarBool(bool v) {
  auto t = Tensor::make(DType::Bool, {});
  *static_cast<uint8_t*>(t->raw()) = v ? 1 : 0;
  return std::move(*t);
}

/// The weights of `g` (their own data, as a run feeds them).
void feedWeights(const Graph& g, std::map<ValueId, Tensor>& values) {
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v)
    if (g.values[static_cast<size_t>(v)].isWeight) values[v] = *leafTensor(g, v, 1);
}

/// Every operator of `g` prepared once on `device`; run() feeds `values` (inputs) and adds the outputs.
struct Prepared {
  const Graph* g = nullptr;
  std::vector<std::unique_ptr<Kernel>> kernels;
  QString prepare(const Graph& graph, const Backend& b, const std::string& device) {
    g = &graph;
    for (OpId op = 0; op < static_cast<OpId>(graph.nodes.size()); ++op) {
      auto k = b.prepare(graph, op, device);
      if (!k) return QString::fromStdString(k.message());
      kernels.push_back(std::move(*k));
    }
    return {};
  }
  QString run(std::map<ValueId, Tensor>& values) {
    for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()); ++op) {
      const Node& n = g->nodes[static_cast<size_t>(op)];
      std::vector<const Tensor*> ins;
      for (ValueId v : n.inputs) ins.push_back(v < 0 ? nullptr : &values.at(v));
      std::vector<Tensor> outs;
      if (Status s = kernels[static_cast<size_t>(op)]->run(ins, outs); !s) return QString::fromStdString(s.message());
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (n.outputs[i] >= 0) values[n.outputs[i]] = std::move(outs[i]);
    }
    return {};
  }
};

/// Reference einsum without ellipses: out[o] = sum over all other labels of the operands' product.
std::vector<double> bruteEinsum(const std::string& eq, const std::vector<Tensor>& ops, std::vector<int64_t>& outShape) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  size_t start = 0;
  const std::string lhs = eq.substr(0, arrow);
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t k = 0; k < terms[i].size(); ++k) size[terms[i][k]] = ops[i].dim(static_cast<int64_t>(k));
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  outShape.clear();
  for (char c : out) outShape.push_back(size[c]);
  int64_t nOut = 1;
  for (int64_t d : outShape) nOut *= d;
  std::vector<double> res(static_cast<size_t>(nOut), 0.0);
  std::map<char, int64_t> idx;
  for (char c : labels) idx[c] = 0;
  while (true) {
    double p = 1.0;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < terms[i].size(); ++k) off = off * ops[i].dim(static_cast<int64_t>(k)) + idx[terms[i][k]];
      p *= ops[i].valueAsDouble(off);
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + idx[c];
    res[static_cast<size_t>(o)] += p;
    size_t l = labels.size();
    while (l > 0) {
      --l;
      if (++idx[labels[l]] < size[labels[l]]) break;
      idx[labels[l]] = 0;
      if (l == 0) return res;
    }
    if (labels.empty()) return res;
  }
}

}  // namespace

class TestCpuControlFlow : public QObject {
  Q_OBJECT

 private slots:
  /// If with outer reads and a Loop with carried state, a scan output and a nested If, against the
  /// recurrence computed here; the same prepared kernels run four trip counts and both conditions.
  void ifAndLoop() {
    auto g = importOnnxBytes(testmodels::withControlFlow(), "controlflow.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    auto backend = makeCpuBackend();
    std::string why;
    for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()); ++op)
      QVERIFY2(backend->supports(*g, op, &why), why.c_str());
    Prepared prep;
    const QString err = prep.prepare(*g, *backend, "cpu-serial");
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const ValueId x = g->findValue("x"), cond = g->findValue("cond"), n = g->findValue("n");
    const Tensor xt = floatTensor({2, 3}, 7);
    for (int64_t trips : {4, 1, 0, 3})
      for (bool c : {true, false}) {
        std::map<ValueId, Tensor> values;
        values[x] = xt;
        values[cond] = scalarBool(c);
        values[n] = scalarInt(trips);
        feedWeights(*g, values);
        const QString e = prep.run(values);
        QVERIFY2(e.isEmpty(), qPrintable(e));
        const Tensor& yIf = values.at(g->findValue("y_if"));
        const Tensor& sFinal = values.at(g->findValue("s_final"));
        const Tensor& scans = values.at(g->findValue("scans"));
        // The while loop stops on its body's condition: 1 doubled until it reaches 100 or more.
        const Tensor& kFinal = values.at(g->findValue("k_final"));
        const Tensor& ks = values.at(g->findValue("ks"));
        QCOMPARE(kFinal.valueAsDouble(0), 128.0);
        QCOMPARE(ks.shape(), (std::vector<int64_t>{7}));
        for (int64_t j = 0; j < 7; ++j) QCOMPARE(ks.valueAsDouble(j), std::pow(2.0, static_cast<double>(j + 1)));
        // Carried values that swap each iteration: three swaps leave them exchanged.
        QCOMPARE(values.at(g->findValue("p_end")).valueAsDouble(0), 2.0);
        QCOMPARE(values.at(g->findValue("q_end")).valueAsDouble(0), 1.0);
        QCOMPARE(yIf.shape(), (std::vector<int64_t>{2, 3}));
        QCOMPARE(sFinal.shape(), (std::vector<int64_t>{2, 3}));
        QCOMPARE(scans.shape(), (std::vector<int64_t>{trips, 2, 3}));
        for (int64_t k = 0; k < 6; ++k) {
          const double xv = xt.valueAsDouble(k), a = xv * xv;
          const double want = c ? a + 0.25 : xv - a;
          QVERIFY(std::abs(yIf.valueAsDouble(k) - want) <= 1e-5 * (1 + std::abs(want)));
          double s = xv;
          for (int64_t i = 0; i < trips; ++i) {
            const double t = s + a;
            s = i > 1 ? t * 0.5 : t + static_cast<double>(i);
            QVERIFY(std::abs(scans.valueAsDouble(i * 6 + k) - s) <= 1e-5 * (1 + std::abs(s)));
          }
          QVERIFY2(
              std::abs(sFinal.valueAsDouble(k) - s) <= 1e-5 * (1 + std::abs(s)),
              qPrintable(QString("trips %1 elem %2: %3 vs %4").arg(trips).arg(k).arg(sFinal.valueAsDouble(k)).arg(s)));
        }
      }
  }

  /// A branch's steps that read only weights (a Slice of w, above the importer's folding size) run once
  /// and are kept: later runs with other inputs still give x's row sums times 0.25; the other branch's
  /// LayerNorm written out is one fused group of the body (ir/rewrites.h) and gives, on the row 0..79
  /// (mean 39.5, variance (80^2 - 1) / 12 = 533.25), (i - 39.5) / sqrt(533.25 + 1e-5).
  void fixedStepsAndFusedBody() {
    auto g = importOnnxBytes(testmodels::withFixedBranch(), "fixed.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    const Node& ifNode = g->nodes.at(0);
    QCOMPARE(ifNode.opType, std::string("If"));
    std::shared_ptr<Graph> elseBody, thenBody;
    for (const auto& [name, body] : ifNode.subgraphs) (name == "else_branch" ? elseBody : thenBody) = body;
    QVERIFY(elseBody && thenBody);
    QCOMPARE(thenBody->nodes.size(), size_t{2});  // the Slice was not folded
    const auto groups = fusedGroups(*elseBody);
    QCOMPARE(groups.size(), size_t{1});
    QCOMPARE(rewriteOf(*elseBody, groups[0].ops), Rewrite::LayerNorm);
    auto backend = makeCpuBackend();
    Prepared prep;
    const QString err = prep.prepare(*g, *backend, "cpu-serial");
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const ValueId x = g->findValue("x"), cond = g->findValue("cond"), y = g->findValue("y");
    for (float scale : {1.0f, 3.0f, -2.0f})
      for (bool c : {true, false}) {
        auto xt = Tensor::make(DType::Float32, {2, 80});
        for (int64_t i = 0; i < 160; ++i) xt->data<float>()[i] = scale * static_cast<float>(i % 80) + (i < 80 ? 0 : 1);
        std::map<ValueId, Tensor> values;
        values[x] = *xt;
        values[cond] = scalarBool(c);
        feedWeights(*g, values);
        const QString e = prep.run(values);
        QVERIFY2(e.isEmpty(), qPrintable(e));
        const Tensor& out = values.at(y);
        if (c) {
          QCOMPARE(out.shape(), (std::vector<int64_t>{2, 60}));
          // Row r: 0.25 * sum over i < 80 of (scale * i + r) = 0.25 * (scale * 3160 + 80 r).
          for (int64_t r = 0; r < 2; ++r) {
            const double want = 0.25 * (scale * 3160.0 + 80.0 * static_cast<double>(r));
            for (int64_t n = 0; n < 60; ++n) QVERIFY(std::abs(out.valueAsDouble(r * 60 + n) - want) <= 1e-4 * std::abs(want));
          }
        } else {
          QCOMPARE(out.shape(), (std::vector<int64_t>{2, 80}));
          const double sd = std::sqrt(533.25 * scale * scale + 1e-5);
          for (int64_t i = 0; i < 80; ++i) {
            const double want = scale * (static_cast<double>(i) - 39.5) / sd;
            QVERIFY2(std::abs(out.valueAsDouble(i) - want) <= 1e-5, qPrintable(QString::number(i)));
            QVERIFY(std::abs(out.valueAsDouble(80 + i) - want) <= 1e-5);  // a shifted row: the same
          }
        }
      }
  }

  /// Scan along axis 1, backwards, its output stacked along axis 1 backwards: a reverse cumulative sum.
  void scanAxesAndDirections() {
    auto g = importOnnxBytes(testmodels::withScan(), "scan.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    auto backend = makeCpuBackend();
    std::map<ValueId, Tensor> values;
    const Tensor x = floatTensor({2, 4}, 5);
    values[g->findValue("x")] = x;
    feedWeights(*g, values);
    Status s = test::runGraph(*g, *backend, "cpu-serial", values);
    QVERIFY2(s.isOk(), s.message().c_str());
    const Tensor& y = values.at(g->findValue("y"));
    const Tensor& sEnd = values.at(g->findValue("s_end"));
    QCOMPARE(y.shape(), (std::vector<int64_t>{2, 4}));
    QCOMPARE(sEnd.shape(), (std::vector<int64_t>{2}));
    for (int64_t r = 0; r < 2; ++r) {
      double suffix = 0;
      for (int64_t j = 3; j >= 0; --j) {
        suffix += x.valueAsDouble(r * 4 + j);
        QVERIFY(std::abs(y.valueAsDouble(r * 4 + j) - suffix) <= 1e-5);
      }
      QVERIFY(std::abs(sEnd.valueAsDouble(r) - suffix) <= 1e-5);
    }
  }

  /// The same model on a multi-thread device and on another core gives the same values.
  void otherDevices() {
    auto g = importOnnxBytes(testmodels::withControlFlow(), "controlflow.onnx");
    QVERIFY(g.isOk());
    auto backend = makeCpuBackend();
    std::map<ValueId, Tensor> ref;
    for (const std::string dev : {"cpu-serial", "cpu-parallel", "core1"}) {
      if (!test::hasDevice(*backend, dev)) continue;
      std::map<ValueId, Tensor> values;
      values[g->findValue("x")] = floatTensor({2, 3}, 3);
      values[g->findValue("cond")] = scalarBool(false);
      values[g->findValue("n")] = scalarInt(5);
      feedWeights(*g, values);
      Status s = test::runGraph(*g, *backend, dev, values);
      QVERIFY2(s.isOk(), s.message().c_str());
      const ValueId sf = g->findValue("s_final");
      if (ref.empty()) {
        ref = values;
        continue;
      }
      for (int64_t k = 0; k < 6; ++k) QCOMPARE(values.at(sf).valueAsDouble(k), ref.at(sf).valueAsDouble(k));
    }
  }

  /// The cost model counts the larger If branch, and one body iteration for a Loop whose trip count is
  /// a model input (the importer warns about it).
  void work() {
    auto g = importOnnxBytes(testmodels::withControlFlow(), "controlflow.onnx");
    QVERIFY(g.isOk());
    const OpId ifOp = g->findNode("choose"), loopOp = g->findNode("iterate");
    QVERIFY(ifOp >= 0 && loopOp >= 0);
    const OpWork wIf = characterise(*g, ifOp);
    QCOMPARE(wIf.cls, OpClass::ControlFlow);
    QVERIFY(wIf.flops >= 6);  // one element-wise operation over [2,3]
    const OpWork wLoop = characterise(*g, loopOp);
    QVERIFY(wLoop.flops >= 6);
    bool warned = false;
    for (const auto& w : g->warnings)
      warned = warned || w.find("'iterate' has no constant trip count") != std::string::npos;
    QVERIFY(warned);
  }

  void einsum_data() {
    QTest::addColumn<QString>("equation");
    QTest::addColumn<QList<qint64>>("a");
    QTest::addColumn<QList<qint64>>("b");
    QTest::newRow("batched matmul") << "bij,bjk->bik" << QList<qint64>{3, 4, 5} << QList<qint64>{3, 5, 6};
    QTest::newRow("attention scores") << "bhqd,bhkd->bhqk" << QList<qint64>{2, 3, 4, 8} << QList<qint64>{2, 3, 5, 8};
    QTest::newRow("attention values") << "bhqk,bkhd->bqhd" << QList<qint64>{2, 3, 4, 5} << QList<qint64>{2, 5, 3, 8};
    QTest::newRow("outer product") << "i,j->ij" << QList<qint64>{4} << QList<qint64>{5};
    QTest::newRow("contract and reduce") << "ijk,jl->l" << QList<qint64>{3, 4, 2} << QList<qint64>{4, 6};
    QTest::newRow("transpose") << "ijk->kji" << QList<qint64>{3, 4, 2} << QList<qint64>{};
    QTest::newRow("diagonal") << "ii->i" << QList<qint64>{5, 5} << QList<qint64>{};
    QTest::newRow("trace") << "ii->" << QList<qint64>{5, 5} << QList<qint64>{};
  }
  void einsum() {
    QFETCH(QString, equation);
    QFETCH(QList<qint64>, a);
    QFETCH(QList<qint64>, b);
    Graph g;
    std::vector<Tensor> ops;
    Node n;
    n.name = "einsum";
    n.opType = "Einsum";
    n.attrs["equation"].value = equation.toStdString();
    for (const auto& dims : {a, b}) {
      if (dims.isEmpty()) continue;
      Value v;
      v.name = "in" + std::to_string(ops.size());
      v.dtype = DType::Float32;
      v.shape.assign(dims.begin(), dims.end());
      v.shapeKnown = true;
      v.isGraphInput = true;
      n.inputs.push_back(g.addValue(v));
      ops.push_back(floatTensor(v.shape, 11 + ops.size()));
    }
    Value o;
    o.name = "out";
    o.dtype = DType::Float32;
    o.isGraphOutput = true;
    n.outputs.push_back(g.addValue(o));
    g.addNode(n);
    g.rebuildIndex();
    auto backend = makeCpuBackend();
    std::vector<int64_t> shape;
    const std::vector<double> want = bruteEinsum(equation.toStdString(), ops, shape);
    for (const std::string dev : {"cpu-serial", "cpu-parallel"}) {
      auto k = backend->prepare(g, 0, dev);
      QVERIFY2(k.isOk(), k.message().c_str());
      std::vector<const Tensor*> ins;
      for (const Tensor& t : ops) ins.push_back(&t);
      std::vector<Tensor> outs;
      for (int rep = 0; rep < 2; ++rep) {  // a second run reuses the prepared primitive
        Status s = (*k)->run(ins, outs);
        QVERIFY2(s.isOk(), s.message().c_str());
        QCOMPARE(outs[0].shape(), shape);
        for (size_t i = 0; i < want.size(); ++i)
          QVERIFY2(std::abs(outs[0].valueAsDouble(static_cast<int64_t>(i)) - want[i]) <= 1e-4 * (1 + std::abs(want[i])),
                   qPrintable(QString("%1: element %2 is %3, expected %4")
                                  .arg(equation)
                                  .arg(i)
                                  .arg(outs[0].valueAsDouble(static_cast<int64_t>(i)))
                                  .arg(want[i])));
      }
    }
  }

  /// A Loop whose body passes a weight through as a loop-carried value and computes from it and an outer
  /// value (Paddle2ONNX's pattern): those steps run once per run of the Loop, so the same prepared kernel
  /// must recompute them when the next run brings other inputs, give the passed-through value back
  /// unchanged (also after no iteration), and still compute what varies per iteration.
  void invariantLoopBody() {
    auto g = importOnnxBytes(testmodels::withInvariantLoop(), "invariant.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    auto backend = makeCpuBackend();
    Prepared prep;
    const QString err = prep.prepare(*g, *backend, "cpu-serial");
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const ValueId n = g->findValue("n"), a = g->findValue("a"), w = g->findValue("w"), s0 = g->findValue("s0");
    const ValueId sFinal = g->findValue("s_final"), wFinal = g->findValue("w_final"), ts = g->findValue("ts");
    const std::vector<std::pair<int64_t, uint64_t>> runs = {{4, 1}, {3, 2}, {0, 3}, {5, 1}, {1, 4}};
    for (const auto& [trips, seed] : runs) {
      std::map<ValueId, Tensor> values;
      values[n] = scalarInt(trips);
      values[a] = floatTensor({2, 3}, seed);
      values[w] = floatTensor({3, 2}, seed + 100);
      values[s0] = floatTensor({2, 2}, seed + 200);
      const Tensor at = values.at(a), wt = values.at(w), st = values.at(s0);
      const QString e = prep.run(values);
      QVERIFY2(e.isEmpty(), qPrintable(e));
      // aw = a x w, in double here.
      double aw[2][2] = {};
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c)
          for (int k = 0; k < 3; ++k) aw[r][c] += at.valueAsDouble(r * 3 + k) * wt.valueAsDouble(k * 2 + c);
      const double tri = static_cast<double>(trips * (trips - 1) / 2);
      const Tensor& sOut = values.at(sFinal);
      QCOMPARE(sOut.shape(), (std::vector<int64_t>{2, 2}));
      for (int i = 0; i < 4; ++i) {
        const double want = st.valueAsDouble(i) + aw[i / 2][i % 2] * tri;
        QVERIFY2(std::abs(sOut.valueAsDouble(i) - want) <= 1e-4 * (1 + std::abs(want)),
                 qPrintable(QString("trips %1, s_final[%2]: %3, want %4").arg(trips).arg(i).arg(sOut.valueAsDouble(i)).arg(want)));
      }
      const Tensor& wOut = values.at(wFinal);
      QCOMPARE(wOut.shape(), (std::vector<int64_t>{3, 2}));
      for (int i = 0; i < 6; ++i) QCOMPARE(wOut.valueAsDouble(i), wt.valueAsDouble(i));
      const Tensor& tOut = values.at(ts);
      QCOMPARE(tOut.shape(), (std::vector<int64_t>{trips, 2, 2}));
      for (int64_t it = 0; it < trips; ++it)
        for (int i = 0; i < 4; ++i) {
          const double want = aw[i / 2][i % 2] * static_cast<double>(it);
          QVERIFY2(std::abs(tOut.valueAsDouble(it * 4 + i) - want) <= 1e-4 * (1 + std::abs(want)),
                   qPrintable(QString("trips %1, ts[%2][%3]").arg(trips).arg(it).arg(i)));
        }
    }
  }

  /// Bad input gives an error, not a crash: a Loop whose trip count is not a scalar.
  void badTripCount() {
    auto g = importOnnxBytes(testmodels::withControlFlow(), "controlflow.onnx");
    QVERIFY(g.isOk());
    auto backend = makeCpuBackend();
    std::map<ValueId, Tensor> values;
    values[g->findValue("x")] = floatTensor({2, 3}, 3);
    values[g->findValue("cond")] = scalarBool(true);
    values[g->findValue("n")] = *Tensor::make(DType::Int64, {2});
    feedWeights(*g, values);
    Status s = test::runGraph(*g, *backend, "cpu-serial", values);
    QVERIFY(!s.isOk());
    QVERIFY2(s.message().find("iterate") != std::string::npos, s.message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestCpuControlFlow)
#include "tst_cpu_controlflow.moc"
