// The CPU kernels take their fast paths for every shape an exporter produces (issue 24): MatMul and Gemm
// run on an optimised oneDNN implementation, never its reference one (`ref`, a scalar loop at tens of
// MFLOP/s), at every rank, with vectors, batch broadcast on either side, 3-D/4-D activations against
// 2-D weights and activation x activation products; Pad copies rows. Values are checked against plain
// loops written here (double accumulation), never against the kernels themselves.

#include <QtTest>

#include <cmath>
#include <random>

#include "cpu/matmul.h"
#include "kernels/ops.h"

using namespace partex;

namespace {

using Shape = std::vector<int64_t>;

Tensor randomTensor(const Shape& s, uint32_t seed) {
  auto t = Tensor::make(DType::Float32, s);
  Tensor r = std::move(*t);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto* p = static_cast<float*>(r.raw());
  for (int64_t i = 0; i < r.numElements(); ++i) p[i] = u(rng);
  return r;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

/// numpy.matmul by definition: vectors promoted and their axis dropped, batch dims broadcast.
std::vector<double> naiveMatMul(const Tensor& a, const Tensor& b, Shape& outShape) {
  Shape as = a.shape(), bs = b.shape();
  const bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec) as.insert(as.begin(), 1);
  if (bVec) bs.push_back(1);
  const size_t r = std::max(as.size(), bs.size());
  while (as.size() < r) as.insert(as.begin(), 1);
  while (bs.size() < r) bs.insert(bs.begin(), 1);
  Shape batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(as[i], bs[i]);
  const int64_t M = as[r - 2], K = as[r - 1], N = bs[r - 1];
  outShape = batch;
  if (!aVec) outShape.push_back(M);
  if (!bVec) outShape.push_back(N);
  const int64_t nb = product(batch, 0, batch.size());
  std::vector<double> c(static_cast<size_t>(nb * M * N));
  const auto* ap = static_cast<const float*>(a.raw());
  const auto* bp = static_cast<const float*>(b.raw());
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0, aStride = M * K, bStride = K * N;
    for (size_t d = r - 2; d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      if (as[d] != 1) ao += i * aStride;
      if (bs[d] != 1) bo += i * bStride;
      aStride *= as[d];
      bStride *= bs[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(ap[ao + m * K + k]) * double(bp[bo + k * N + n]);
        c[static_cast<size_t>((bi * M + m) * N + n)] = acc;
      }
  }
  return c;
}

/// Largest |got - want| relative to max(1, |want|).
double worstError(const Tensor& got, const std::vector<double>& want) {
  const auto* p = static_cast<const float*>(got.raw());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(double(p[i]) - want[i]) / std::max(1.0, std::abs(want[i])));
  return worst;
}

Node opNode(const std::string& type, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = "n";
  n.opType = type;
  n.attrs = std::move(attrs);
  return n;
}

}  // namespace

class TestKernelPaths : public QObject {
  Q_OBJECT
 private slots:
  void matmul_data() {
    QTest::addColumn<Shape>("a");
    QTest::addColumn<Shape>("b");
    auto row = [](const char* name, Shape a, Shape b) { QTest::newRow(name) << a << b; };
    row("2-D", {37, 53}, {53, 29});
    row("vector x matrix", {53}, {53, 29});
    row("matrix x vector", {37, 53}, {53});
    row("vector x batched", {53}, {3, 53, 29});
    row("batched x vector", {3, 37, 53}, {53});
    row("bert linear 3-D x 2-D", {1, 128, 96}, {96, 384});
    row("ocr 3-D x 2-D", {1, 40, 120}, {120, 661});
    row("batch 3-D x 2-D", {3, 17, 31}, {31, 13});
    row("4-D x 2-D", {2, 3, 17, 31}, {31, 13});
    row("5-D x 2-D", {2, 1, 3, 7, 11}, {11, 5});
    row("attention 4-D", {1, 4, 33, 16}, {1, 4, 16, 33});
    row("attention batch 2", {2, 4, 33, 16}, {2, 4, 16, 33});
    row("broadcast left", {1, 5, 7}, {3, 7, 6});
    row("broadcast right", {3, 5, 7}, {1, 7, 6});
    row("broadcast both", {3, 1, 5, 7}, {1, 4, 7, 6});
    row("rank promoted", {5, 7}, {2, 3, 7, 6});
    row("6-D", {2, 1, 3, 2, 5, 7}, {1, 2, 1, 2, 7, 6});
    row("K = 1", {4, 17, 1}, {1, 1, 19});
    row("M = 1", {1, 12, 1, 64}, {1, 12, 64, 7});
  }
  void matmul() {
    QFETCH(Shape, a);
    QFETCH(Shape, b);
    const Tensor ta = randomTensor(a, 1), tb = randomTensor(b, 2);
    Shape want;
    const auto ref = naiveMatMul(ta, tb, want);
    for (bool loop : {false, true}) {
      std::vector<Tensor> out;
      std::string impl;
      Status s = cpu::runMatMulKernel(opNode("MatMul"), {&ta, &tb}, out, impl, loop);
      QVERIFY2(s.isOk(), s.message().c_str());
      QVERIFY2(!impl.empty(), "no implementation reported");
      QVERIFY2(impl.find("ref") == std::string::npos, ("reference implementation: " + impl).c_str());
      QCOMPARE(out.at(0).shape(), want);
      const double err = worstError(out[0], ref);
      QVERIFY2(err < 1e-4, (impl + ": error " + std::to_string(err)).c_str());
    }
  }

  void gemm_data() {
    QTest::addColumn<int>("transA");
    QTest::addColumn<int>("transB");
    QTest::addColumn<Shape>("c");
    QTest::addColumn<double>("alpha");
    QTest::addColumn<double>("beta");
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        const std::string base = "tA" + std::to_string(ta) + " tB" + std::to_string(tb);
        QTest::newRow((base + " no C").c_str()) << ta << tb << Shape{} << 1.0 << 1.0;
        QTest::newRow((base + " C [N]").c_str()) << ta << tb << Shape{29} << 0.5 << 2.0;
        QTest::newRow((base + " C [M,1]").c_str()) << ta << tb << Shape{37, 1} << 1.0 << -1.0;
        QTest::newRow((base + " C [M,N]").c_str()) << ta << tb << Shape{37, 29} << 1.5 << 0.25;
      }
  }
  void gemm() {
    QFETCH(int, transA);
    QFETCH(int, transB);
    QFETCH(Shape, c);
    QFETCH(double, alpha);
    QFETCH(double, beta);
    const int64_t M = 37, K = 53, N = 29;
    const Tensor ta = randomTensor(transA ? Shape{K, M} : Shape{M, K}, 3);
    const Tensor tb = randomTensor(transB ? Shape{N, K} : Shape{K, N}, 4);
    const Tensor tc = c.empty() ? Tensor() : randomTensor(c, 5);
    const auto* ap = static_cast<const float*>(ta.raw());
    const auto* bp = static_cast<const float*>(tb.raw());
    std::vector<double> ref(static_cast<size_t>(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(ap[transA ? k * M + m : m * K + k]) * double(bp[transB ? n * K + k : k * N + n]);
        double cv = 0;
        if (!c.empty()) {
          const auto* cp = static_cast<const float*>(tc.raw());
          cv = c.size() == 1 ? cp[n] : c[1] == 1 ? cp[m] : cp[m * N + n];
        }
        ref[static_cast<size_t>(m * N + n)] = alpha * acc + beta * cv;
      }
    std::map<std::string, Attribute> attrs;
    attrs["transA"].value = int64_t{transA};
    attrs["transB"].value = int64_t{transB};
    attrs["alpha"].value = alpha;
    attrs["beta"].value = beta;
    std::vector<Tensor> out;
    std::string impl;
    std::vector<const Tensor*> in = {&ta, &tb};
    if (!c.empty()) in.push_back(&tc);
    Status s = cpu::runMatMulKernel(opNode("Gemm", attrs), in, out, impl);
    QVERIFY2(s.isOk(), s.message().c_str());
    QVERIFY2(impl.find("ref") == std::string::npos && !impl.empty(), ("implementation: " + impl).c_str());
    QCOMPARE(out.at(0).shape(), (Shape{M, N}));
    const double err = worstError(out[0], ref);
    QVERIFY2(err < 1e-4, (impl + ": error " + std::to_string(err)).c_str());
  }

  /// Pad against an index-by-index reference (ONNX Pad: constant, reflect without repeating the edge,
  /// edge; negative pads crop), every rank 1-5, float32 and int64.
  void pad_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<Shape>("shape");
    QTest::addColumn<Shape>("pads");
    for (const char* m : {"constant", "reflect", "edge"}) {
      auto row = [&](const char* what, Shape s, Shape p) {
        QTest::newRow((std::string(m) + " " + what).c_str()) << QString(m) << s << p;
      };
      row("1-D", {7}, {2, 3});
      row("2-D", {5, 7}, {1, 2, 3, 4});
      row("3-D last only", {3, 4, 9}, {0, 0, 2, 0, 0, 3});
      row("4-D spatial", {2, 3, 5, 6}, {0, 0, 1, 2, 0, 0, 3, 1});
      row("4-D channels-last", {2, 5, 6, 3}, {0, 1, 2, 0, 0, 2, 1, 0});
      row("5-D", {1, 2, 3, 4, 5}, {0, 1, 1, 2, 2, 0, 1, 2, 1, 3});
      row("negative", {4, 9}, {-1, 2, 1, -3});
      row("all negative", {4, 5, 9}, {0, -1, -2, -1, 0, -3});
      row("no pads", {3, 4}, {0, 0, 0, 0});
    }
    QTest::newRow("constant wide") << QString("constant") << Shape{2, 3} << Shape{5, 7, 6, 8};
    QTest::newRow("constant empty axis") << QString("constant") << Shape{0, 3} << Shape{1, 1, 2, 0};
  }
  void pad() {
    QFETCH(QString, mode);
    QFETCH(Shape, shape);
    QFETCH(Shape, pads);
    const size_t r = shape.size();
    Shape os(r);
    for (size_t d = 0; d < r; ++d) os[d] = shape[d] + pads[d] + pads[d + r];
    for (DType dtype : {DType::Float32, DType::Int64}) {
      auto made = Tensor::make(dtype, shape);
      QVERIFY(made.isOk());
      Tensor x = std::move(*made);
      for (int64_t i = 0; i < x.numElements(); ++i) {
        if (dtype == DType::Float32)
          static_cast<float*>(x.raw())[i] = float(i) * 0.5f + 1;
        else
          static_cast<int64_t*>(x.raw())[i] = i * 3 + 1;
      }
      auto pt = Tensor::make(DType::Int64, {static_cast<int64_t>(pads.size())});
      QVERIFY(pt.isOk());
      std::copy(pads.begin(), pads.end(), static_cast<int64_t*>(pt->raw()));
      auto cv = Tensor::make(dtype, {});
      QVERIFY(cv.isOk());
      if (dtype == DType::Float32)
        *static_cast<float*>(cv->raw()) = -7.5f;
      else
        *static_cast<int64_t*>(cv->raw()) = -7;
      std::map<std::string, Attribute> attrs;
      attrs["mode"].value = mode.toStdString();
      const Node n = opNode("Pad", attrs);
      const cpu::OpEntry* e = cpu::findPlainEntry(n);
      QVERIFY(e);
      Graph g;
      auto k = e->make(g, n);
      QVERIFY2(k.isOk(), k.message().c_str());
      std::vector<Tensor> out;
      Status s = (*k)->run(cpu::ExecContext{}, {&x, &*pt, &*cv}, out);
      QVERIFY2(s.isOk(), s.message().c_str());
      QCOMPARE(out.at(0).shape(), os);
      // Reference: every output index mapped back on its own.
      int64_t total = product(os, 0, r), bad = 0;
      for (int64_t i = 0; i < total; ++i) {
        int64_t rem = i, off = 0, stride = 1;
        bool inside = true;
        for (size_t d = r; d-- > 0;) {
          int64_t c = rem % os[d] - pads[d];
          rem /= os[d];
          const int64_t n = shape[d];
          if (c < 0 || c >= n) {
            if (mode == "constant")
              inside = false;
            else if (mode == "edge")
              c = c < 0 ? 0 : n - 1;
            else
              while (c < 0 || c >= n) c = c < 0 ? -c : 2 * (n - 1) - c;
          }
          off += c * stride;
          stride *= n;
        }
        if (dtype == DType::Float32) {
          const float want = inside ? static_cast<const float*>(x.raw())[off] : -7.5f;
          bad += static_cast<const float*>(out[0].raw())[i] != want;
        } else {
          const int64_t want = inside ? static_cast<const int64_t*>(x.raw())[off] : -7;
          bad += static_cast<const int64_t*>(out[0].raw())[i] != want;
        }
      }
      QCOMPARE(bad, int64_t{0});
    }
  }
};

QTEST_GUILESS_MAIN(TestKernelPaths)
#include "tst_kernel_paths.moc"
