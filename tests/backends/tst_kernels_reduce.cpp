// The rewritten reduction-family kernels (issue 24: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax over any
// axis, Hardmax, CumSum, TopK, NonZero) against naive references written here: nested loops over
// coordinates in double, the ordered scans the ONNX operator definitions describe. Shapes hit each path's
// edges: odd and prime sizes, size-1 axes, rows shorter and longer than the vector lanes, kept strips
// wider than one accumulator strip (1024), keepdims 0/1, noop_with_empty_axes, negative axes, axes that
// are not one block (the generic path), ties, NaN, infinities and values whose exp overflows float.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"

using namespace partex;

namespace {

using Shape = std::vector<int64_t>;

Attribute intAttr(int64_t v) {
  return Attribute{v};
}
Attribute intsAttr(std::vector<int64_t> v) {
  return Attribute{std::move(v)};
}

Tensor floats(const Shape& shape, uint64_t seed, double lo, double hi, int levels = 0) {
  auto t = Tensor::make(DType::Float32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  float* p = t->data<float>();
  for (int64_t i = 0; i < t->numElements(); ++i) {
    double v = d(rng);
    if (levels > 0) v = std::floor((v - lo) / (hi - lo) * levels);  // few distinct values: ties
    p[i] = static_cast<float>(v);
  }
  return std::move(*t);
}
Tensor ints(const Shape& shape, const std::vector<int64_t>& v) {
  auto t = Tensor::make(DType::Int64, shape);
  std::copy(v.begin(), v.end(), t->data<int64_t>());
  return std::move(*t);
}

/// Runs a one-node graph (opset `opset`) on the CPU backend's serial device; the inputs' dtypes and shapes
/// are those of `ins`; output i gets dtype outTypes[i] when given.
std::vector<Tensor> runOp(const std::string& op, const std::vector<Tensor>& ins,
                          std::map<std::string, Attribute> attrs, int nOut = 1, int opset = 17,
                          std::vector<DType> outTypes = {}, std::string* error = nullptr) {
  std::vector<test::NodeInput> ni;
  for (const auto& t : ins) ni.push_back({t.dtype(), t.shape()});
  Graph g = test::oneNodeGraph(op, ni, nOut, std::move(attrs));
  g.opsetVersion = opset;
  for (size_t i = 0; i < outTypes.size(); ++i) g.values[static_cast<size_t>(g.outputs[i])].dtype = outTypes[i];
  auto cpu = makeCpuBackend();
  std::map<ValueId, Tensor> values;
  for (size_t i = 0; i < ins.size(); ++i) {
    auto c = Tensor::make(ins[i].dtype(), ins[i].shape());
    if (ins[i].numElements() > 0)
      std::memcpy(c->raw(), ins[i].raw(), static_cast<size_t>(ins[i].numElements() * tensorElementSize(ins[i].dtype())));
    values[g.inputs[i]] = std::move(*c);
  }
  Status s = test::runGraph(g, *cpu, "cpu-serial", values);
  if (error) *error = s.isOk() ? std::string() : s.message();
  if (!s.isOk()) {
    if (!error) qWarning("%s", s.message().c_str());
    return {};
  }
  std::vector<Tensor> outs;
  for (ValueId v : g.outputs) outs.push_back(std::move(values[v]));
  return outs;
}

Shape stridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

/// ONNX's reduction of x over `axes` (all when empty) in double, by coordinates. Returns the values in
/// the order of the output (the kept axes in order) and its shape.
std::vector<double> refReduce(const std::string& op, const Tensor& x, const std::vector<int64_t>& axesIn, bool keep,
                              Shape& outShape, std::vector<double>* absSum = nullptr) {
  const int64_t r = x.rank();
  std::vector<bool> red(static_cast<size_t>(r), axesIn.empty());
  for (int64_t a : axesIn) red[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  outShape.clear();
  Shape kept;
  for (int64_t d = 0; d < r; ++d) {
    if (!red[static_cast<size_t>(d)]) kept.push_back(d);
    if (!red[static_cast<size_t>(d)])
      outShape.push_back(x.dim(d));
    else if (keep)
      outShape.push_back(1);
  }
  int64_t nOut = 1;
  for (int64_t d : kept) nOut *= x.dim(d);
  const bool extreme = op == "ReduceMax" || op == "ReduceMin";
  std::vector<double> acc(static_cast<size_t>(nOut), op == "ReduceProd" ? 1.0 : 0.0);
  std::vector<double> mx(static_cast<size_t>(nOut), -std::numeric_limits<double>::infinity());
  std::vector<bool> seen(static_cast<size_t>(nOut), false);
  if (absSum) absSum->assign(static_cast<size_t>(nOut), 0.0);
  const float* p = x.data<float>();
  const Shape xs = stridesOf(x.shape());
  // The max of each output first (LogSumExp's shift), then the accumulation.
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t o = 0;
      for (int64_t d : kept) o = o * x.dim(d) + (i / xs[static_cast<size_t>(d)]) % x.dim(d);
      const double v = p[i];
      auto& a = acc[static_cast<size_t>(o)];
      if (pass == 0) {
        mx[static_cast<size_t>(o)] = std::max(mx[static_cast<size_t>(o)], v);
        continue;
      }
      if (extreme) {
        if (!seen[static_cast<size_t>(o)] || (op == "ReduceMax" ? v > a : v < a)) a = v;
        seen[static_cast<size_t>(o)] = true;
      } else if (op == "ReduceProd") {
        a *= v;
      } else if (op == "ReduceL1") {
        a += std::fabs(v);
      } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
        a += v * v;
      } else if (op == "ReduceLogSumExp") {
        a += std::exp(v - mx[static_cast<size_t>(o)]);
      } else {
        a += v;
      }
      if (absSum) (*absSum)[static_cast<size_t>(o)] += std::fabs(v);
    }
  const double n = nOut ? static_cast<double>(x.numElements() / nOut) : 0;
  for (size_t o = 0; o < acc.size(); ++o) {
    if (op == "ReduceMean") acc[o] /= n;
    if (op == "ReduceMean" && absSum) (*absSum)[o] /= n;
    if (op == "ReduceL2") acc[o] = std::sqrt(acc[o]);
    if (op == "ReduceLogSum") acc[o] = std::log(acc[o]);
    if (op == "ReduceLogSumExp") acc[o] = std::isfinite(mx[o]) ? mx[o] + std::log(acc[o]) : mx[o];
  }
  return acc;
}

bool close(double got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
}

/// The ordered scan ONNX's ArgMax/ArgMin (and Hardmax: the first maximum) describe, along `axis`.
std::vector<int64_t> refArg(const Tensor& x, int64_t axis, bool max, bool last) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= d == axis ? 1 : x.dim(d);
  const int64_t n = x.dim(axis);
  const float* p = x.data<float>();
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      float m = p[o * n * inner + i];
      for (int64_t j = 1; j < n; ++j) {
        const float v = p[(o * n + j) * inner + i];
        if (max ? (last ? v >= m : v > m) : (last ? v <= m : v < m)) {
          best = j;
          m = v;
        }
      }
      idx.push_back(best);
    }
  return idx;
}

}  // namespace

class TestKernelsReduce : public QObject {
  Q_OBJECT

 private slots:
  /// Every Reduce* over float32 against refReduce: each block shape (last axis, a middle one, the first,
  /// spatial axes, all) with rows shorter and longer than the 32/64 vector lanes and kept strips wider
  /// than 1024, kept axes of 16, 64 and 83 (the column tiles), axes that are not one block (the generic
  /// path), negative axes, keepdims 0 and 1.
  void reduceFloat_data() {
    QTest::addColumn<QString>("op");
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
      QTest::newRow(op) << QString(op);
  }
  void reduceFloat() {
    QFETCH(QString, op);
    const std::string o = op.toStdString();
    struct Case {
      Shape shape;
      std::vector<int64_t> axes;
    };
    const std::vector<Case> cases = {
        {{7}, {0}},             {{3, 131}, {-1}},         {{2, 1, 97}, {2}},       {{4, 33, 3}, {1}},
        {{5, 1100}, {0}},       {{2, 3, 1, 65}, {2, 3}},  {{2, 3, 5, 7}, {}},      {{1, 300, 2}, {1}},
        {{3, 4, 5}, {0, 2}},    {{2, 6, 3, 5}, {1, -1}},  {{6, 1}, {1}},           {{1, 64, 5, 9}, {-2, -1}},
        {{2, 1, 3}, {1}},       {{3, 2057}, {-1}},
        // The column path's register tiles (64 and 16 columns, blocks of 32 rows) and the columns left.
        {{2, 70, 83}, {1}},     {{3, 40, 16}, {1}},       {{1, 37, 64}, {-2}},
    };
    // Values where each reduction is well conditioned: positive sums for LogSum, products near 1.
    double lo = -2, hi = 2;
    if (o == "ReduceLogSum") lo = 0.1;
    if (o == "ReduceProd") lo = 0.97, hi = 1.03;
    if (o == "ReduceLogSumExp") lo = 60, hi = 120;  // exp overflows float without the shift
    uint64_t seed = 1;
    for (const auto& c : cases)
      for (int keep = 0; keep < 2; ++keep) {
        const Tensor x = floats(c.shape, seed++, lo, hi);
        std::map<std::string, Attribute> attrs{{"keepdims", intAttr(keep)}};
        std::vector<Tensor> ins{x};
        if (o == "ReduceSum") {
          if (!c.axes.empty()) ins.push_back(ints({static_cast<int64_t>(c.axes.size())}, c.axes));
        } else if (!c.axes.empty()) {
          attrs["axes"] = intsAttr(c.axes);
        }
        auto outs = runOp(o, ins, attrs);
        QVERIFY(outs.size() == 1);
        Shape want;
        std::vector<double> absSum;
        const auto ref = refReduce(o, x, c.axes, keep != 0, want, &absSum);
        QCOMPARE(outs[0].shape(), want);
        const float* got = outs[0].data<float>();
        const double tol = o == "ReduceMax" || o == "ReduceMin" ? 0 : 2e-6;
        // Sums of both signs cancel: their float rounding is bounded by the sum of the magnitudes, not
        // by the result (a float32 accumulation, as ONNX Runtime's, is within 1e-6 of that).
        const bool cancels = o == "ReduceSum" || o == "ReduceMean";
        for (size_t i = 0; i < ref.size(); ++i)
          if (!close(got[i], ref[i], tol) &&
              !(cancels && std::fabs(got[i] - ref[i]) <= 1e-6 * absSum[i]))
            QFAIL(qPrintable(QString("%1 of shape %2 at %3: %4, expected %5")
                                 .arg(op)
                                 .arg(QString::fromStdString(Tensor::make(DType::Float32, c.shape)->describe()))
                                 .arg(i)
                                 .arg(got[i], 0, 'g', 9)
                                 .arg(ref[i], 0, 'g', 9)));
      }
  }

  /// ReduceSum's axes input empty with noop_with_empty_axes=1 is the identity; without it, all axes.
  /// ReduceMean's axes as an input at opset 18.
  /// ReduceSum, ReduceMax, ReduceMin and ReduceProd over int64 (the templated path: four rows per pass
  /// over the kept axis's accumulators, the rows left one by one), over the first, a middle and the last
  /// axis, reduced axes of 5 to 50 rows, exactly against sums, extremes and products taken here.
  void reduceInt64() {
    struct Case {
      Shape shape;
      int64_t axis;
    };
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"})
      for (const Case& c : {Case{{3, 40, 16}, 1}, Case{{50, 37}, 0}, Case{{2, 33, 69}, 1}, Case{{4, 5, 21}, 2}}) {
        const std::string o = op;
        std::mt19937_64 rng(static_cast<uint64_t>(c.shape[0] * 131 + c.axis));
        std::uniform_int_distribution<int64_t> d(o == "ReduceProd" ? -2 : -1000000, o == "ReduceProd" ? 2 : 1000000);
        std::vector<int64_t> v(static_cast<size_t>(shapeElements(c.shape)));
        for (auto& e : v) e = d(rng);
        const Tensor x = ints(c.shape, v);
        std::map<std::string, Attribute> attrs{{"keepdims", intAttr(0)}};
        std::vector<Tensor> ins{x};
        if (o == "ReduceSum")
          ins.push_back(ints({1}, {c.axis}));
        else
          attrs["axes"] = intsAttr({c.axis});
        auto outs = runOp(o, ins, attrs, 1, 17, {DType::Int64});
        QVERIFY(outs.size() == 1);
        int64_t outer = 1, inner = 1;
        for (size_t k = 0; k < c.shape.size(); ++k)
          if (int64_t(k) < c.axis)
            outer *= c.shape[k];
          else if (int64_t(k) > c.axis)
            inner *= c.shape[k];
        const int64_t n = c.shape[static_cast<size_t>(c.axis)];
        QCOMPARE(outs[0].numElements(), outer * inner);
        for (int64_t a = 0; a < outer; ++a)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t want = v[static_cast<size_t>(a * n * inner + i)];
            for (int64_t r = 1; r < n; ++r) {
              const int64_t e = v[static_cast<size_t>((a * n + r) * inner + i)];
              want = o == "ReduceSum" ? want + e : o == "ReduceMax" ? std::max(want, e) : o == "ReduceMin" ? std::min(want, e) : want * e;
            }
            QVERIFY2(outs[0].data<int64_t>()[a * inner + i] == want,
                     qPrintable(QString("%1 of %2 axis %3 at %4").arg(op).arg(c.shape.size()).arg(c.axis).arg(a * inner + i)));
          }
      }
  }

  void reduceAxesForms() {
    const Tensor x = floats({3, 40}, 7, -1, 1);
    const Tensor none = ints({0}, {});
    auto id = runOp("ReduceSum", {x, none}, {{"noop_with_empty_axes", intAttr(1)}});
    QVERIFY(id.size() == 1);
    QCOMPARE(id[0].shape(), x.shape());
    QVERIFY(std::memcmp(id[0].raw(), x.raw(), sizeof(float) * 120) == 0);
    auto all = runOp("ReduceSum", {x, none}, {{"keepdims", intAttr(0)}});
    QVERIFY(all.size() == 1);
    QCOMPARE(all[0].shape(), Shape{});
    Shape s;
    QVERIFY(close(all[0].data<float>()[0], refReduce("ReduceSum", x, {}, false, s)[0], 2e-6));
    auto mean = runOp("ReduceMean", {x, ints({1}, {-2})}, {}, 1, 18);
    QVERIFY(mean.size() == 1);
    QCOMPARE(mean[0].shape(), (Shape{1, 40}));
    const auto ref = refReduce("ReduceMean", x, {0}, true, s);
    for (size_t i = 0; i < ref.size(); ++i) QVERIFY(close(mean[0].data<float>()[i], ref[i], 2e-6));
  }

  /// Max/Min keep the ordered scan's NaN rule (a NaN first wins, later ones never do), and LogSumExp of
  /// a row of -inf is -inf, of a row holding +inf is +inf.
  void reduceSpecialValues() {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    auto x = floats({3, 70}, 3, -1, 1);
    float* p = x.data<float>();
    p[0] = nan;          // row 0: NaN first
    p[70 + 40] = nan;    // row 1: NaN later
    p[140 + 5] = 5.0f;   // row 2: a clear maximum
    auto mx = runOp("ReduceMax", {x}, {{"axes", intsAttr({1})}, {"keepdims", intAttr(0)}});
    QVERIFY(mx.size() == 1);
    QVERIFY(std::isnan(mx[0].data<float>()[0]));
    QVERIFY(!std::isnan(mx[0].data<float>()[1]));
    QCOMPARE(mx[0].data<float>()[2], 5.0f);
    auto y = floats({2, 40}, 4, -1, 1);
    for (int i = 0; i < 40; ++i) y.data<float>()[i] = -inf;
    y.data<float>()[40 + 17] = inf;
    auto lse = runOp("ReduceLogSumExp", {y}, {{"axes", intsAttr({1})}, {"keepdims", intAttr(0)}});
    QVERIFY(lse.size() == 1);
    QCOMPARE(lse[0].data<float>()[0], -inf);
    QCOMPARE(lse[0].data<float>()[1], inf);
    // The generic path (axes 0 and 2 of [2,3,4] are not one block) takes the same rule.
    auto z = floats({2, 3, 4}, 6, -1, 1);
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 4; ++c) {
        z.data<float>()[(a * 3 + 0) * 4 + c] = -inf;  // output 0: every value -inf
        if (a == 1 && c == 2) z.data<float>()[(a * 3 + 1) * 4 + c] = inf;  // output 1: one +inf
      }
    auto g = runOp("ReduceLogSumExp", {z}, {{"axes", intsAttr({0, 2})}, {"keepdims", intAttr(0)}});
    QVERIFY(g.size() == 1);
    QCOMPARE(g[0].shape(), Shape{3});
    QCOMPARE(g[0].data<float>()[0], -inf);
    QCOMPARE(g[0].data<float>()[1], inf);
    QVERIFY(std::isfinite(g[0].data<float>()[2]));
  }

  /// ArgMax/ArgMin along the last and a middle axis, with ties (few distinct values), select_last_index
  /// 0/1, negative axes and keepdims 0/1, and a NaN first and later in a row, against the ordered scan.
  void argMaxMin() {
    struct Case {
      Shape shape;
      int64_t axis;
    };
    const std::vector<Case> cases = {{{5, 1000}, -1}, {{3, 7}, 1}, {{2, 130, 3}, 1}, {{4, 67, 33}, -2},
                                     {{1, 1}, 0},     {{9, 2, 1}, 0}, {{2, 3, 257}, 2}};
    uint64_t seed = 11;
    for (const auto& c : cases)
      for (int levels : {0, 3})
        for (int m = 0; m < 2; ++m)
          for (int last = 0; last < 2; ++last) {
            Tensor x = floats(c.shape, seed++, -3, 3, levels);
            if (x.numElements() > 10) {
              x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
              x.data<float>()[x.numElements() - 3] = std::numeric_limits<float>::quiet_NaN();
            }
            const int64_t axis = c.axis < 0 ? c.axis + x.rank() : c.axis;
            auto outs = runOp(m ? "ArgMax" : "ArgMin", {x},
                              {{"axis", intAttr(c.axis)}, {"keepdims", intAttr(last)},
                               {"select_last_index", intAttr(last)}},
                              1, 17, {DType::Int64});
            QVERIFY(outs.size() == 1);
            Shape want = c.shape;
            want[static_cast<size_t>(axis)] = 1;
            if (!last) want.erase(want.begin() + axis);
            QCOMPARE(outs[0].shape(), want);
            const auto ref = refArg(x, axis, m != 0, last != 0);
            const int64_t* got = outs[0].data<int64_t>();
            for (size_t i = 0; i < ref.size(); ++i) QCOMPARE(got[i], ref[i]);
          }
  }

  /// Empty tensors: a kept axis of size 0 gives an empty output, not a crash (ArgMax over axis 1 of
  /// [2,3,0]; ReduceMax over axis 1 of [0,5]; Softmax, Hardmax, CumSum and NonZero of [2,0,3]).
  void emptyTensors() {
    const Tensor a = floats({2, 3, 0}, 1, -1, 1);
    auto am = runOp("ArgMax", {a}, {{"axis", intAttr(1)}, {"keepdims", intAttr(0)}}, 1, 17, {DType::Int64});
    QVERIFY(am.size() == 1);
    QCOMPARE(am[0].shape(), (Shape{2, 0}));
    auto rm = runOp("ReduceMax", {floats({0, 5}, 2, -1, 1)}, {{"axes", intsAttr({1})}});
    QVERIFY(rm.size() == 1);
    QCOMPARE(rm[0].shape(), (Shape{0, 1}));
    const Tensor e = floats({2, 0, 3}, 3, -1, 1);
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      auto o = runOp(op, {e}, {{"axis", intAttr(-1)}});
      QVERIFY2(o.size() == 1, op);
      QCOMPARE(o[0].shape(), e.shape());
    }
    auto cs = runOp("CumSum", {e, ints({}, {1})}, {});
    QVERIFY(cs.size() == 1);
    QCOMPARE(cs[0].shape(), e.shape());
    auto nz = runOp("NonZero", {e}, {}, 1, 17, {DType::Int64});
    QVERIFY(nz.size() == 1);
    QCOMPARE(nz[0].shape(), (Shape{3, 0}));
  }

  /// Softmax and LogSoftmax along the last axis, a middle one and the first, odd sizes, rows of one
  /// value and of a few (2, 3, 8), inputs whose exp overflows float without the shift, and opset 11's coerced 2-D form
  /// (everything from the axis on is one row), against double.
  void softmax() {
    struct Case {
      Shape shape;
      int64_t axis;
      int opset;
    };
    const std::vector<Case> cases = {{{3, 37, 61}, -1, 17}, {{2, 12, 19, 16}, 2, 17}, {{1, 16, 9, 9}, 1, 17},
                                     {{5, 3}, 0, 17},       {{4, 1}, -1, 17},        {{2, 5, 1}, 1, 17},
                                     {{2, 3, 7}, 1, 11},    {{6, 300}, 1, 13},
                                     // rows of a few values (the short-row path): Ultraface's class scores
                                     // [1,4420,2] over axis 2 at opset 9's coerced form, rows of 3 and 8
                                     {{1, 4420, 2}, 2, 11}, {{7, 3}, -1, 17},        {{5, 8}, 1, 17}};
    uint64_t seed = 31;
    for (const auto& c : cases)
      for (int log = 0; log < 2; ++log)
        for (double base : {0.0, 100.0}) {
          const Tensor x = floats(c.shape, seed++, base - 8, base + 8);
          auto outs = runOp(log ? "LogSoftmax" : "Softmax", {x}, {{"axis", intAttr(c.axis)}}, 1, c.opset);
          QVERIFY(outs.size() == 1);
          QCOMPARE(outs[0].shape(), x.shape());
          const int64_t axis = c.axis < 0 ? c.axis + x.rank() : c.axis;
          int64_t outer = 1, n = 1, inner = 1;
          for (int64_t d = 0; d < x.rank(); ++d) {
            if (d < axis)
              outer *= x.dim(d);
            else if (d == axis || c.opset < 13)
              n *= x.dim(d);
            else
              inner *= x.dim(d);
          }
          const float* p = x.data<float>();
          const float* got = outs[0].data<float>();
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              double m = -std::numeric_limits<double>::infinity(), s = 0;
              for (int64_t j = 0; j < n; ++j) m = std::max(m, double(p[(o * n + j) * inner + i]));
              for (int64_t j = 0; j < n; ++j) s += std::exp(double(p[(o * n + j) * inner + i]) - m);
              for (int64_t j = 0; j < n; ++j) {
                const int64_t at = (o * n + j) * inner + i;
                const double v = double(p[at]) - m;
                const double want = log ? v - std::log(s) : std::exp(v) / s;
                if (std::fabs(got[at] - want) > 2e-6 * std::max(1.0, std::fabs(want)))
                  QFAIL(qPrintable(QString("%1 case %2 at %3: %4, expected %5")
                                       .arg(log ? "LogSoftmax" : "Softmax")
                                       .arg(&c - cases.data())
                                       .arg(at)
                                       .arg(got[at], 0, 'g', 9)
                                       .arg(want, 0, 'g', 9)));
              }
            }
        }
  }

  /// Hardmax: one 1 per row at the first maximum (ties: few distinct values), last and middle axes,
  /// opset 11's coerced form.
  void hardmax() {
    struct Case {
      Shape shape;
      int64_t axis;
      int opset;
    };
    const std::vector<Case> cases = {
        {{2, 12, 16, 128}, -1, 17}, {{2, 12, 128, 16}, 2, 17}, {{3, 37, 61}, -1, 17}, {{2, 3, 7}, 1, 11}, {{4, 1}, 1, 17}};
    uint64_t seed = 51;
    for (const auto& c : cases)
      for (int levels : {0, 4}) {
        const Tensor x = floats(c.shape, seed++, -1, 1, levels);
        auto outs = runOp("Hardmax", {x}, {{"axis", intAttr(c.axis)}}, 1, c.opset);
        QVERIFY(outs.size() == 1);
        int64_t axis = c.axis < 0 ? c.axis + x.rank() : c.axis;
        Tensor xv = x;
        if (c.opset < 13) {  // the reference on the coerced [outer, rest] view
          Shape s2{1, 1};
          for (int64_t d = 0; d < x.rank(); ++d) s2[d < axis ? 0 : 1] *= x.dim(d);
          auto t = Tensor::make(DType::Float32, s2);
          std::memcpy(t->raw(), x.raw(), sizeof(float) * static_cast<size_t>(x.numElements()));
          xv = std::move(*t);
          axis = 1;
        }
        const auto idx = refArg(xv, axis, true, false);
        int64_t inner = 1;
        for (int64_t d = axis + 1; d < xv.rank(); ++d) inner *= xv.dim(d);
        const int64_t n = xv.dim(axis);
        std::vector<float> want(static_cast<size_t>(x.numElements()), 0.0f);
        for (size_t k = 0; k < idx.size(); ++k) {
          const int64_t o = static_cast<int64_t>(k) / inner, i = static_cast<int64_t>(k) % inner;
          want[static_cast<size_t>((o * n + idx[k]) * inner + i)] = 1.0f;
        }
        QVERIFY(std::memcmp(outs[0].raw(), want.data(), want.size() * sizeof(float)) == 0);
      }
  }

  /// CumSum along the last and a middle axis, exclusive and reverse, float32 and int64, against the
  /// running sum written out per element.
  void cumsum() {
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
             {{3, 5, 77}, 1}, {{3, 5, 77}, -1}, {{4, 9, 1}, 1}, {{2, 130, 3}, -2}, {{6, 7}, 0}})
      for (int exclusive = 0; exclusive < 2; ++exclusive)
        for (int reverse = 0; reverse < 2; ++reverse)
          for (int asInt = 0; asInt < 2; ++asInt) {
            const Tensor xf = floats(shape, 71 + exclusive * 2 + reverse, -4, 4, asInt ? 9 : 0);
            Tensor x = xf;
            if (asInt) {
              std::vector<int64_t> v;
              for (int64_t i = 0; i < xf.numElements(); ++i) v.push_back(int64_t(xf.data<float>()[i]) - 4);
              x = ints(shape, v);
            }
            auto outs = runOp("CumSum", {x, ints({}, {axis})},
                              {{"exclusive", intAttr(exclusive)}, {"reverse", intAttr(reverse)}});
            QVERIFY(outs.size() == 1);
            QCOMPARE(outs[0].shape(), shape);
            const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
            const Shape st = stridesOf(shape);
            const int64_t n = shape[static_cast<size_t>(ax)], stride = st[static_cast<size_t>(ax)];
            for (int64_t i = 0; i < x.numElements(); ++i) {
              const int64_t j = (i / stride) % n, base = i - j * stride;
              double want = 0;
              for (int64_t k = 0; k < n; ++k) {
                const bool in = reverse ? (exclusive ? k > j : k >= j) : (exclusive ? k < j : k <= j);
                if (in) want += asInt ? double(x.data<int64_t>()[base + k * stride]) : double(x.data<float>()[base + k * stride]);
              }
              const double got = asInt ? double(outs[0].data<int64_t>()[i]) : double(outs[0].data<float>()[i]);
              QVERIFY2(std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)),
                       qPrintable(QString("at %1: %2, expected %3").arg(i).arg(got).arg(want)));
            }
          }
  }

  /// TopK with k up to 16 (one pass) and above (the sort), largest 0/1, ties (few distinct values: the
  /// lower index first), last and middle axes, against a stable sort by (value, index).
  void topk() {
    for (const auto& [shape, axis] :
         std::vector<std::pair<Shape, int64_t>>{{{8, 1000}, -1}, {{3, 40, 5}, 1}, {{2, 17}, 1}, {{5, 1}, -1}})
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{16}, int64_t{17}})
        for (int largest = 0; largest < 2; ++largest)
          for (int levels : {0, 6}) {
            const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
            const int64_t n = shape[static_cast<size_t>(ax)];
            if (k > n) continue;
            const Tensor x = floats(shape, 91 + static_cast<uint64_t>(k), -5, 5, levels);
            auto outs = runOp("TopK", {x, ints({1}, {k})}, {{"axis", intAttr(axis)}, {"largest", intAttr(largest)}},
                              2, 17, {DType::Float32, DType::Int64});
            QVERIFY(outs.size() == 2);
            Shape want = shape;
            want[static_cast<size_t>(ax)] = k;
            QCOMPARE(outs[0].shape(), want);
            int64_t outer = 1, inner = 1;
            for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
              if (d != ax) (d < ax ? outer : inner) *= shape[static_cast<size_t>(d)];
            const float* p = x.data<float>();
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t i = 0; i < inner; ++i) {
                std::vector<int64_t> order(static_cast<size_t>(n));
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                  const float va = p[(o * n + a) * inner + i], vb = p[(o * n + b) * inner + i];
                  return largest ? va > vb : va < vb;
                });
                for (int64_t j = 0; j < k; ++j) {
                  const int64_t at = (o * k + j) * inner + i;
                  QCOMPARE(outs[1].data<int64_t>()[at], order[static_cast<size_t>(j)]);
                  QCOMPARE(outs[0].data<float>()[at], p[(o * n + order[static_cast<size_t>(j)]) * inner + i]);
                }
              }
          }
  }

  /// TopK's skip over values that cannot enter the best k (contiguous float rows, k <= 16): rows where
  /// every block holds a better value (ascending for the largest), where the best come last, ties across
  /// the 32-element blocks, infinities, and NaNs (ranked below every number: with more NaNs than
  /// numbers the k-th is a NaN and every later number must still enter), lengths off the block size;
  /// against a stable sort by (value, index) with that NaN rule.
  void topkSkip() {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const int64_t n = 1000;
    std::vector<std::vector<float>> rows;
    std::vector<float> r(n);
    for (int64_t j = 0; j < n; ++j) r[static_cast<size_t>(j)] = static_cast<float>(j);  // ascending
    rows.push_back(r);
    for (int64_t j = 0; j < n; ++j) r[static_cast<size_t>(j)] = static_cast<float>(n - j);  // descending
    rows.push_back(r);
    for (int64_t j = 0; j < n; ++j) r[static_cast<size_t>(j)] = static_cast<float>((j * 37) % 11);  // ties
    rows.push_back(r);
    for (int64_t j = 0; j < n; ++j) r[static_cast<size_t>(j)] = j < 990 ? nan : static_cast<float>(j % 3);  // NaN k-th
    rows.push_back(r);
    for (int64_t j = 0; j < n; ++j)
      r[static_cast<size_t>(j)] = j % 97 == 0 ? nan : j == 500 ? inf : j == 501 ? -inf : std::sin(float(j));
    rows.push_back(r);
    for (int64_t len : {int64_t{33}, int64_t{64}, int64_t{1000}})
      for (int64_t k : {int64_t{1}, int64_t{5}, int64_t{16}})
        for (int largest = 0; largest < 2; ++largest) {
          auto t = Tensor::make(DType::Float32, {static_cast<int64_t>(rows.size()), len});
          QVERIFY(t.isOk());
          for (size_t i = 0; i < rows.size(); ++i)
            std::copy(rows[i].begin(), rows[i].begin() + len, t->data<float>() + static_cast<int64_t>(i) * len);
          auto outs = runOp("TopK", {*t, ints({1}, {k})}, {{"axis", intAttr(-1)}, {"largest", intAttr(largest)}}, 2,
                            17, {DType::Float32, DType::Int64});
          QVERIFY(outs.size() == 2);
          for (size_t i = 0; i < rows.size(); ++i) {
            const float* p = t->data<float>() + static_cast<int64_t>(i) * len;
            std::vector<int64_t> order(static_cast<size_t>(len));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
              const float va = p[a], vb = p[b];
              if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
              return largest ? va > vb : va < vb;
            });
            for (int64_t j = 0; j < k; ++j) {
              const int64_t at = static_cast<int64_t>(i) * k + j;
              QVERIFY2(outs[1].data<int64_t>()[at] == order[static_cast<size_t>(j)],
                       qPrintable(QString("row %1 len %2 k %3 largest %4, rank %5: index %6, want %7")
                                      .arg(i).arg(len).arg(k).arg(largest).arg(j)
                                      .arg(outs[1].data<int64_t>()[at]).arg(order[static_cast<size_t>(j)])));
            }
          }
        }
  }

  /// NonZero over bool, float (with -0.0, which is zero) and int64, ranks 1-3, all zeros.
  void nonzero() {
    for (const Shape& shape : std::vector<Shape>{{7}, {1, 128, 128}, {3, 1, 5}, {4, 6}})
      for (DType dt : {DType::Bool, DType::Float32, DType::Int64})
        for (int allZero = 0; allZero < 2; ++allZero) {
          auto t = Tensor::make(dt, shape);
          const Tensor r = floats(shape, 5, 0, 1);
          std::vector<bool> nz;
          for (int64_t i = 0; i < t->numElements(); ++i) {
            const bool on = !allZero && r.data<float>()[i] < 0.3f;
            nz.push_back(on);
            if (dt == DType::Bool) static_cast<uint8_t*>(t->raw())[i] = on ? 1 : 0;
            if (dt == DType::Float32) t->data<float>()[i] = on ? r.data<float>()[i] - 1.0f : (i % 2 ? -0.0f : 0.0f);
            if (dt == DType::Int64) t->data<int64_t>()[i] = on ? i + 1 : 0;
          }
          auto outs = runOp("NonZero", {*t}, {}, 1, 17, {DType::Int64});
          QVERIFY(outs.size() == 1);
          const int64_t count = std::count(nz.begin(), nz.end(), true);
          QCOMPARE(outs[0].shape(), (Shape{t->rank(), count}));
          const Shape st = stridesOf(shape);
          int64_t j = 0;
          for (int64_t i = 0; i < t->numElements(); ++i) {
            if (!nz[static_cast<size_t>(i)]) continue;
            for (int64_t d = 0; d < t->rank(); ++d)
              QCOMPARE(outs[0].data<int64_t>()[d * count + j], (i / st[static_cast<size_t>(d)]) % shape[static_cast<size_t>(d)]);
            ++j;
          }
        }
  }
};

QTEST_APPLESS_MAIN(TestKernelsReduce)
#include "tst_kernels_reduce.moc"
