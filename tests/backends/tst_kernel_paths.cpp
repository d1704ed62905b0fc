// The CPU kernels take their fast paths for every shape an exporter produces (issue 24): MatMul and Gemm
// run on an optimised oneDNN implementation, never its reference one (`ref`, a scalar loop at tens of
// MFLOP/s), at every rank, with vectors, batch broadcast on either side, 3-D/4-D activations against
// 2-D weights and activation x activation products; Pad copies rows. Values are checked against plain
// loops written here (double accumulation), never against the kernels themselves.

#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "backend/backend.h"
#include "cpu/cpu_ops.h"
#include "cpu/matmul.h"
#include "ir/tensordata.h"
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

/// The same values as a weight holds them: a read-only alias of shared storage (Tensor::alias), which
/// the MatMul kernel packs once into oneDNN's layout.
Tensor weightOf(const Tensor& t) {
  auto data = TensorData::allocate(static_cast<size_t>(t.bytes()));
  std::memcpy(data->mutableData(), t.raw(), static_cast<size_t>(t.bytes()));
  return std::move(*Tensor::alias(t.dtype(), t.shape(), data));
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

/// Runs node `n` once through the CPU backend's table (oneDNN entries first, then the plain kernels).
Status runNode(const Node& n, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  Graph g;
  g.opsetVersion = 17;
  for (const cpu::OpEntry& e : cpu::opTable()) {
    if (e.opType != n.opType) continue;
    auto k = e.make(g, n);
    if (!k) return k.status();
    return (*k)->run(cpu::ExecContext{}, in, out);
  }
  return makeError("no kernel for ", n.opType);
}

/// Row-major strides of `s`; element index of a multi-index.
Shape stridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
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
    const Tensor wb = weightOf(tb);
    for (int path = 0; path < 3; ++path) {  // activations, loop path, B a weight (packed when 2-D)
      const bool loop = path == 1;
      std::vector<Tensor> out;
      std::string impl;
      Status s = cpu::runMatMulKernel(opNode("MatMul"), {&ta, path == 2 ? &wb : &tb}, out, impl, loop);
      QVERIFY2(s.isOk(), s.message().c_str());
      QVERIFY2(!impl.empty(), "no implementation reported");
      QVERIFY2(impl.find("ref") == std::string::npos, ("reference implementation: " + impl).c_str());
      QCOMPARE(out.at(0).shape(), want);
      const double err = worstError(out[0], ref);
      QVERIFY2(err < 1e-4, (impl + ": error " + std::to_string(err)).c_str());
    }
  }

  /// A weight B is packed into oneDNN's layout only where A has several rows (kPackMinRows): a batch-1
  /// fully connected layer reads B once per run, and a packed copy would only double its memory. Where
  /// it is packed, the kernel keeps it (keepsCopy), and a run with B given up (an empty tensor, as the
  /// executor passes it) computes the same product from the packed copy.
  void packedWeightStandsForB() {
    BackendRegistry reg;
    registerBuiltinBackends(reg);
    const Backend* cpu = reg.find("cpu");
    QVERIFY(cpu);
    for (const int64_t m : {int64_t{1}, int64_t{64}}) {
      Graph g;
      g.opsetVersion = 17;
      auto add = [&](const std::string& name, Shape shape, bool input) {
        Value v;
        v.name = name;
        v.dtype = DType::Float32;
        v.shape = std::move(shape);
        v.shapeKnown = true;
        v.isGraphInput = input;
        v.isWeight = !input && name == "b";
        return g.addValue(v);
      };
      Node n;
      n.name = "mm";
      n.opType = "MatMul";
      n.inputs = {add("a", {m, 96}, true), add("b", {96, 384}, false)};
      n.outputs = {add("y", {m, 384}, false)};
      g.outputs.push_back(n.outputs[0]);
      g.inputs.push_back(n.inputs[0]);
      g.addNode(n);
      g.rebuildIndex();
      auto k = cpu->prepare(g, 0, "cpu-serial");
      QVERIFY2(k.isOk(), k.message().c_str());
      const Tensor ta = randomTensor({m, 96}, 3), tb = randomTensor({96, 384}, 4);
      const Tensor wb = weightOf(tb);
      Shape want;
      const auto ref = naiveMatMul(ta, tb, want);
      std::vector<Tensor> out(1);
      QVERIFY((*k)->run({&ta, &wb}, out).isOk());
      QVERIFY(worstError(out[0], ref) < 1e-4);
      QCOMPARE((*k)->keepsCopy(1), m >= 4);
      if (m < 4) continue;
      const Tensor givenUp;
      std::vector<Tensor> again(1);
      Status st = (*k)->run({&ta, &givenUp}, again);
      QVERIFY2(st.isOk(), st.message().c_str());
      QVERIFY(worstError(again[0], ref) < 1e-4);
      // Freed caches: the kernel no longer stands for B, and says so instead of computing garbage.
      (*k)->releaseCaches();
      QVERIFY(!(*k)->keepsCopy(1));
      QVERIFY(!(*k)->run({&ta, &givenUp}, again).isOk());
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
    const Tensor wb = weightOf(tb);
    for (const Tensor* b : {&tb, &wb}) {  // B an activation, then a weight (packed)
      std::vector<const Tensor*> in = {&ta, b};
      if (!c.empty()) in.push_back(&tc);
      Status s = cpu::runMatMulKernel(opNode("Gemm", attrs), in, out, impl);
      QVERIFY2(s.isOk(), s.message().c_str());
      QVERIFY2(impl.find("ref") == std::string::npos && !impl.empty(), ("implementation: " + impl).c_str());
      QCOMPARE(out.at(0).shape(), (Shape{M, N}));
      const double err = worstError(out[0], ref);
      QVERIFY2(err < 1e-4, (impl + ": error " + std::to_string(err)).c_str());
    }
  }

  /// One to three rows of A (a batch-1 fully connected layer) run as matrix-vector products (gemvRows),
  /// with B as a Linear layer's weight [N, K] (transB) or [K, N]: every tail of the 4-row, 16-column
  /// and 64-column blocks (N = 1, 3, 67, 200), K prime, with alpha and C, and A of rank 3 folded.
  void smallRows_data() {
    QTest::addColumn<int>("M");
    QTest::addColumn<int>("N");
    QTest::addColumn<int>("transB");
    for (int m : {1, 2, 3})
      for (int n : {1, 3, 67, 200})
        for (int tb : {0, 1})
          QTest::newRow(("M" + std::to_string(m) + " N" + std::to_string(n) + " tB" + std::to_string(tb)).c_str())
              << m << n << tb;
  }
  void smallRows() {
    QFETCH(int, M);
    QFETCH(int, N);
    QFETCH(int, transB);
    const int64_t K = 131;
    const Tensor ta = randomTensor({M, K}, 7);
    const Tensor tb = randomTensor(transB ? Shape{N, K} : Shape{K, N}, 8);
    const Tensor tc = randomTensor({N}, 9);
    const auto* ap = static_cast<const float*>(ta.raw());
    const auto* bp = static_cast<const float*>(tb.raw());
    const auto* cp = static_cast<const float*>(tc.raw());
    const double alpha = 0.5, beta = -2.0;
    std::vector<double> ref(static_cast<size_t>(M * N)), plain(static_cast<size_t>(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(ap[m * K + k]) * double(bp[transB ? n * K + k : k * N + n]);
        plain[static_cast<size_t>(m * N + n)] = acc;
        ref[static_cast<size_t>(m * N + n)] = alpha * acc + beta * double(cp[n]);
      }
    std::map<std::string, Attribute> attrs;
    attrs["transB"].value = int64_t{transB};
    attrs["alpha"].value = alpha;
    attrs["beta"].value = beta;
    const Tensor wb = weightOf(tb);
    for (const Tensor* b : {&tb, &wb}) {
      std::vector<Tensor> out;
      std::string impl;
      Status s = cpu::runMatMulKernel(opNode("Gemm", attrs), {&ta, b, &tc}, out, impl);
      QVERIFY2(s.isOk(), s.message().c_str());
      QCOMPARE(QString::fromStdString(impl), QString("partex gemv"));
      QCOMPARE(out.at(0).shape(), (Shape{M, N}));
      const double err = worstError(out[0], ref);
      QVERIFY2(err < 1e-5, ("error " + std::to_string(err)).c_str());
    }
    if (transB) return;
    // MatMul with A [1, M, K]: the batch folds into the rows.
    Tensor a3 = randomTensor({1, M, K}, 7);
    std::vector<Tensor> out;
    std::string impl;
    Status s = cpu::runMatMulKernel(opNode("MatMul"), {&a3, &wb}, out, impl);
    QVERIFY2(s.isOk(), s.message().c_str());
    QCOMPARE(QString::fromStdString(impl), QString("partex gemv (folded)"));
    QCOMPARE(out.at(0).shape(), (Shape{1, M, N}));
    QVERIFY(worstError(out[0], plain) < 1e-5);
  }

  /// By hand: [1, 2, 3] x [[1, 0], [0, 1], [1, 1]] = [4, 5]; as Gemm with transB (B = [[1, 0, 1],
  /// [0, 1, 1]]), alpha 2 and C [10, 20]: [18, 30].
  void smallRowsByHand() {
    auto make = [](Shape s, std::vector<float> v) {
      Tensor t = std::move(*Tensor::make(DType::Float32, s));
      std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
      return t;
    };
    const Tensor a = make({1, 3}, {1, 2, 3});
    const Tensor b = make({3, 2}, {1, 0, 0, 1, 1, 1});
    const Tensor bt = make({2, 3}, {1, 0, 1, 0, 1, 1});
    const Tensor c = make({2}, {10, 20});
    std::vector<Tensor> out;
    std::string impl;
    QVERIFY(cpu::runMatMulKernel(opNode("MatMul"), {&a, &b}, out, impl).isOk());
    QCOMPARE(impl, std::string("partex gemv"));
    QCOMPARE(static_cast<const float*>(out.at(0).raw())[0], 4.0f);
    QCOMPARE(static_cast<const float*>(out.at(0).raw())[1], 5.0f);
    std::map<std::string, Attribute> attrs;
    attrs["transB"].value = int64_t{1};
    attrs["alpha"].value = 2.0;
    QVERIFY(cpu::runMatMulKernel(opNode("Gemm", attrs), {&a, &bt, &c}, out, impl).isOk());
    QCOMPARE(static_cast<const float*>(out.at(0).raw())[0], 18.0f);
    QCOMPARE(static_cast<const float*>(out.at(0).raw())[1], 30.0f);
  }

  /// LayerNormalization's own loop by hand: row [1, 2, 3, 4] has mean 2.5, variance 1.25 (epsilon 0),
  /// inverse deviation 1/sqrt(1.25) = 0.8944272; with Scale [1, 2, 1, 1] and B [0, 0, 1, 0] the row is
  /// [-1.3416408, -0.8944272, 1.4472136, 1.3416408]. The second row [2, 2, 2, 2] normalises to B.
  void layerNormByHand() {
    auto make = [](Shape s, std::vector<float> v) {
      Tensor t = std::move(*Tensor::make(DType::Float32, s));
      std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
      return t;
    };
    const Tensor x = make({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
    const Tensor scale = make({4}, {1, 2, 1, 1}), bias = make({4}, {0, 0, 1, 0});
    std::map<std::string, Attribute> attrs;
    attrs["epsilon"].value = 0.0;
    std::vector<Tensor> out;
    Status st = runNode(opNode("LayerNormalization", attrs), {&x, &scale, &bias}, out);
    QVERIFY2(st.isOk(), st.message().c_str());
    QCOMPARE(out.size(), size_t{3});
    const auto* y = static_cast<const float*>(out[0].raw());
    const float want[8] = {-1.3416408f, -0.8944272f, 1.4472136f, 1.3416408f, 0, 0, 1, 0};
    for (int i = 0; i < 4; ++i) QVERIFY2(std::abs(y[i] - want[i]) < 1e-6f, std::to_string(i).c_str());
    QCOMPARE(static_cast<const float*>(out[1].raw())[0], 2.5f);
    QVERIFY(std::abs(static_cast<const float*>(out[2].raw())[0] - 0.8944272f) < 1e-6f);
    // Row 2: zero variance and epsilon 0 give 0 * inf = NaN in ONNX's function body; with a positive
    // epsilon the row is B.
    attrs["epsilon"].value = 1e-5;
    QVERIFY(runNode(opNode("LayerNormalization", attrs), {&x, &scale, &bias}, out).isOk());
    for (int i = 4; i < 8; ++i) QCOMPARE(static_cast<const float*>(out[0].raw())[i], want[i]);
  }

  /// Relu, LeakyRelu and Clip by hand, NaN kept (ONNX; oneDNN's eltwise mapped it to a number).
  void reluClipByHand() {
    Tensor x = std::move(*Tensor::make(DType::Float32, {5}));
    const float xs[5] = {-2, -0.5f, 0, 3, std::nanf("")};
    std::memcpy(x.raw(), xs, sizeof xs);
    std::vector<Tensor> out;
    Tensor inf = std::move(*Tensor::make(DType::Float32, {2}));
    const float infs[2] = {-INFINITY, INFINITY};
    std::memcpy(inf.raw(), infs, sizeof infs);
    QVERIFY(runNode(opNode("Relu"), {&inf}, out).isOk());  // -inf gives 0, not -inf * 0 = NaN
    QCOMPARE(static_cast<const float*>(out[0].raw())[0], 0.0f);
    QCOMPARE(static_cast<const float*>(out[0].raw())[1], INFINITY);
    QVERIFY(runNode(opNode("Relu"), {&x}, out).isOk());
    const float relu[4] = {0, 0, 0, 3};
    for (int i = 0; i < 4; ++i) QCOMPARE(static_cast<const float*>(out[0].raw())[i], relu[i]);
    QVERIFY(std::isnan(static_cast<const float*>(out[0].raw())[4]));
    std::map<std::string, Attribute> leaky;
    leaky["alpha"].value = 0.1;
    QVERIFY(runNode(opNode("LeakyRelu", leaky), {&x}, out).isOk());
    const float lr[4] = {-0.2f, -0.05f, 0, 3};
    for (int i = 0; i < 4; ++i) QVERIFY(std::abs(static_cast<const float*>(out[0].raw())[i] - lr[i]) < 1e-7f);
    QVERIFY(std::isnan(static_cast<const float*>(out[0].raw())[4]));
    std::map<std::string, Attribute> clip;
    clip["min"].value = -1.0;
    clip["max"].value = 1.0;
    QVERIFY(runNode(opNode("Clip", clip), {&x}, out).isOk());
    const float cl[4] = {-1, -0.5f, 0, 1};
    for (int i = 0; i < 4; ++i) QCOMPARE(static_cast<const float*>(out[0].raw())[i], cl[i]);
    QVERIFY(std::isnan(static_cast<const float*>(out[0].raw())[4]));
  }

  /// Short last axes by hand: ReduceMax and ReduceMean over rows of 3 (the rows' own loop), and Concat of
  /// three [2,2,1] along the last axis (element copies) for float32 and int64.
  void shortLastAxesByHand() {
    Tensor x = std::move(*Tensor::make(DType::Float32, {2, 2, 3}));
    const float xs[12] = {1, 5, 2, -1, -3, -2, 0, 0, 9, 4, 4, 4};
    std::memcpy(x.raw(), xs, sizeof xs);
    std::map<std::string, Attribute> attrs;
    attrs["axes"].value = std::vector<int64_t>{-1};
    attrs["keepdims"].value = int64_t{0};
    std::vector<Tensor> out;
    QVERIFY(runNode(opNode("ReduceMax", attrs), {&x}, out).isOk());
    QCOMPARE(out.at(0).shape(), (Shape{2, 2}));
    const float mx[4] = {5, -1, 9, 4};
    for (int i = 0; i < 4; ++i) QCOMPARE(static_cast<const float*>(out[0].raw())[i], mx[i]);
    QVERIFY(runNode(opNode("ReduceMean", attrs), {&x}, out).isOk());
    const float mean[4] = {8.0f / 3, -2, 3, 4};
    for (int i = 0; i < 4; ++i) QVERIFY(std::abs(static_cast<const float*>(out[0].raw())[i] - mean[i]) < 1e-6f);
    std::map<std::string, Attribute> cat;
    cat["axis"].value = int64_t{-1};
    for (DType dt : {DType::Float32, DType::Int64}) {
      std::vector<Tensor> parts;
      for (int p = 0; p < 3; ++p) {
        Tensor t = std::move(*Tensor::make(dt, {2, 2, 1}));
        for (int64_t i = 0; i < 4; ++i) {
          if (dt == DType::Float32)
            static_cast<float*>(t.raw())[i] = static_cast<float>(10 * p + i);
          else
            static_cast<int64_t*>(t.raw())[i] = 10 * p + i;
        }
        parts.push_back(std::move(t));
      }
      QVERIFY(runNode(opNode("Concat", cat), {&parts[0], &parts[1], &parts[2]}, out).isOk());
      QCOMPARE(out.at(0).shape(), (Shape{2, 2, 3}));
      // Row i holds (i, 10 + i, 20 + i).
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t p = 0; p < 3; ++p) QCOMPARE(out[0].valueAsDouble(i * 3 + p), static_cast<double>(10 * p + i));
    }
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
  /// Reductions over the last, spatial, first, middle and all axes (one block: the vectorised path, with
  /// runs longer than its 16 lanes) and over split axes (the generic path), against a double loop.
  void reduce_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<Shape>("shape");
    QTest::addColumn<Shape>("axes");
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
      auto row = [&](const char* what, Shape s, Shape a) {
        QTest::newRow((std::string(op) + " " + what).c_str()) << QString(op) << s << a;
      };
      row("last", {3, 7, 53}, {-1});
      row("spatial", {2, 5, 7, 9}, {2, 3});
      row("first", {40, 33}, {0});
      row("middle", {4, 100, 3}, {1});
      row("all", {3, 5, 17}, {});
      row("split axes", {4, 5, 6}, {0, 2});
      row("size-1 axes between", {1, 37, 1, 5}, {1, 2});
    }
  }
  void reduce() {
    QFETCH(QString, op);
    QFETCH(Shape, shape);
    QFETCH(Shape, axes);
    Tensor x = randomTensor(shape, 9);
    auto* px = static_cast<float*>(x.raw());
    const bool positive = op == "ReduceLogSum" || op == "ReduceProd";
    for (int64_t i = 0; i < x.numElements(); ++i)
      if (positive) px[i] = 0.9f + 0.1f * std::abs(px[i]);  // products near 1, logs of positive sums
    std::map<std::string, Attribute> attrs;
    if (!axes.empty()) attrs["axes"].value = axes;
    std::vector<Tensor> out;
    Status s = runNode(opNode(op.toStdString(), attrs), {&x}, out);
    QVERIFY2(s.isOk(), s.message().c_str());
    const size_t r = shape.size();
    std::vector<bool> red(r, axes.empty());
    for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(r) : a)] = true;
    Shape os(r);
    for (size_t d = 0; d < r; ++d) os[d] = red[d] ? 1 : shape[d];
    QCOMPARE(out.at(0).shape(), os);
    const int64_t total = product(os, 0, r);
    std::vector<std::vector<double>> groups(static_cast<size_t>(total));
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t rem = i, o = 0, ostride = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t c = rem % shape[d];
        rem /= shape[d];
        if (!red[d]) o += c * ostride;
        ostride *= os[d];
      }
      groups[static_cast<size_t>(o)].push_back(px[i]);
    }
    const auto* po = static_cast<const float*>(out[0].raw());
    for (int64_t o = 0; o < total; ++o) {
      const auto& v = groups[static_cast<size_t>(o)];
      double want = 0, m = -1e300;
      if (op == "ReduceProd") want = 1;
      if (op == "ReduceMax") want = -1e300;
      if (op == "ReduceMin") want = 1e300;
      for (double y : v) {
        if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceLogSum") want += y;
        if (op == "ReduceMax") want = std::max(want, y);
        if (op == "ReduceMin") want = std::min(want, y);
        if (op == "ReduceProd") want *= y;
        if (op == "ReduceL1") want += std::abs(y);
        if (op == "ReduceL2" || op == "ReduceSumSquare") want += y * y;
        m = std::max(m, y);
      }
      if (op == "ReduceMean") want /= double(v.size());
      if (op == "ReduceL2") want = std::sqrt(want);
      if (op == "ReduceLogSum") want = std::log(want);
      if (op == "ReduceLogSumExp") {
        double e = 0;
        for (double y : v) e += std::exp(y - m);
        want = m + std::log(e);
      }
      const double err = std::abs(po[o] - want) / std::max(1.0, std::abs(want));
      QVERIFY2(err < 1e-5, (op.toStdString() + " output " + std::to_string(o) + ": " + std::to_string(po[o]) +
                            " instead of " + std::to_string(want))
                               .c_str());
    }
  }

  /// Softmax and LogSoftmax over every axis of a rank-4 tensor (a non-last axis is the strided path).
  void softmax_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("axis");
    for (const char* op : {"Softmax", "LogSoftmax"})
      for (int a : {0, 1, 2, 3, -1})
        QTest::newRow((std::string(op) + " axis " + std::to_string(a)).c_str()) << QString(op) << a;
  }
  void softmax() {
    QFETCH(QString, op);
    QFETCH(int, axis);
    const Shape shape = {3, 5, 17, 19};
    const Tensor x = randomTensor(shape, 11);
    std::map<std::string, Attribute> attrs;
    attrs["axis"].value = int64_t{axis};
    std::vector<Tensor> out;
    Status s = runNode(opNode(op.toStdString(), attrs), {&x}, out);
    QVERIFY2(s.isOk(), s.message().c_str());
    QCOMPARE(out.at(0).shape(), shape);
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
    const Shape st = stridesOf(shape);
    const auto* px = static_cast<const float*>(x.raw());
    const auto* po = static_cast<const float*>(out[0].raw());
    double worst = 0;
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const int64_t c = (i / st[ax]) % shape[ax], base = i - c * st[ax];
      double m = -1e300, sum = 0;
      for (int64_t k = 0; k < shape[ax]; ++k) m = std::max(m, double(px[base + k * st[ax]]));
      for (int64_t k = 0; k < shape[ax]; ++k) sum += std::exp(double(px[base + k * st[ax]]) - m);
      const double want = op == "Softmax" ? std::exp(double(px[i]) - m) / sum : double(px[i]) - m - std::log(sum);
      worst = std::max(worst, std::abs(po[i] - want));
    }
    QVERIFY2(worst < 1e-5, std::to_string(worst).c_str());
  }

  /// Transpose (the tiled path when the last output axis is strided in the input, its register blocks
  /// and ragged edges) and Expand against an index-by-index reference, for 1-, 2-, 4- and 8-byte elements.
  void transpose_data() {
    QTest::addColumn<Shape>("shape");
    QTest::addColumn<Shape>("perm");
    QTest::newRow("2-D") << Shape{37, 53} << Shape{1, 0};
    QTest::newRow("nchw->nhwc") << Shape{2, 19, 7, 9} << Shape{0, 2, 3, 1};
    QTest::newRow("nhwc->nchw") << Shape{2, 7, 9, 19} << Shape{0, 3, 1, 2};
    QTest::newRow("key transpose") << Shape{1, 3, 33, 17} << Shape{0, 1, 3, 2};
    QTest::newRow("5-D detector") << Shape{1, 3, 21, 5, 6} << Shape{0, 1, 3, 4, 2};
    QTest::newRow("odd 3-D") << Shape{17, 19, 23} << Shape{2, 0, 1};
    QTest::newRow("contiguous last") << Shape{2, 5, 3, 8} << Shape{0, 2, 1, 3};
    QTest::newRow("2-D several tiles") << Shape{150, 131} << Shape{1, 0};
    QTest::newRow("nchw->nhwc whole blocks") << Shape{2, 72, 8, 9} << Shape{0, 2, 3, 1};
  }
  void transpose() {
    QFETCH(Shape, shape);
    QFETCH(Shape, perm);
    const size_t r = shape.size();
    Shape os(r);
    for (size_t d = 0; d < r; ++d) os[d] = shape[static_cast<size_t>(perm[d])];
    const Shape ist = stridesOf(shape);
    for (DType dtype : {DType::Int8, DType::Float16, DType::Float32, DType::Int64}) {
      auto made = Tensor::make(dtype, shape);
      QVERIFY(made.isOk());
      Tensor x = std::move(*made);
      const int64_t es = x.bytes() / std::max<int64_t>(1, x.numElements());
      auto* bytes = static_cast<uint8_t*>(x.raw());
      for (int64_t i = 0; i < x.bytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 13);
      std::map<std::string, Attribute> attrs;
      attrs["perm"].value = perm;
      std::vector<Tensor> out;
      Status s = runNode(opNode("Transpose", attrs), {&x}, out);
      QVERIFY2(s.isOk(), s.message().c_str());
      QCOMPARE(out.at(0).shape(), os);
      const auto* ob = static_cast<const uint8_t*>(out[0].raw());
      int64_t bad = 0;
      for (int64_t i = 0; i < x.numElements(); ++i) {
        int64_t rem = i, off = 0;
        for (size_t d = r; d-- > 0;) {
          off += (rem % os[d]) * ist[static_cast<size_t>(perm[d])];
          rem /= os[d];
        }
        bad += std::memcmp(ob + i * es, bytes + off * es, static_cast<size_t>(es)) != 0;
      }
      QCOMPARE(bad, int64_t{0});
    }
  }

  /// GatherElements (row by row: an indexed read along the last axis, a row copy offset by the index along
  /// another) against an index-by-index reference, with negative indices, int32 and int64 indices,
  /// 1-, 4- and 8-byte elements and indices smaller than the data on the other axes.
  void gatherElements_data() {
    QTest::addColumn<Shape>("data");
    QTest::addColumn<Shape>("indices");
    QTest::addColumn<int64_t>("axis");
    QTest::newRow("last axis") << Shape{3, 5, 40} << Shape{3, 5, 17} << int64_t{-1};
    QTest::newRow("axis 0") << Shape{6, 4, 9} << Shape{3, 4, 9} << int64_t{0};
    QTest::newRow("middle, smaller") << Shape{4, 7, 9} << Shape{3, 5, 6} << int64_t{1};
    QTest::newRow("1-D") << Shape{11} << Shape{25} << int64_t{0};
  }
  void gatherElements() {
    QFETCH(Shape, data);
    QFETCH(Shape, indices);
    QFETCH(int64_t, axis);
    const size_t r = data.size();
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(r) : axis);
    const Shape dst = stridesOf(data), ist = stridesOf(indices);
    for (DType idt : {DType::Int64, DType::Int32})
      for (DType dtype : {DType::Int8, DType::Float32, DType::Int64}) {
        Tensor x = std::move(*Tensor::make(dtype, data));
        const int64_t es = x.bytes() / x.numElements();
        auto* bytes = static_cast<uint8_t*>(x.raw());
        for (int64_t i = 0; i < x.bytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 13);
        Tensor idx = std::move(*Tensor::make(idt, indices));
        std::vector<int64_t> want(static_cast<size_t>(idx.numElements()));
        std::mt19937 rng(5);
        const int64_t dim = data[ax];
        for (size_t i = 0; i < want.size(); ++i) {
          const int64_t v = std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
          if (idt == DType::Int64)
            static_cast<int64_t*>(idx.raw())[i] = v;
          else
            static_cast<int32_t*>(idx.raw())[i] = static_cast<int32_t>(v);
          want[i] = v < 0 ? v + dim : v;
        }
        std::map<std::string, Attribute> attrs;
        attrs["axis"].value = axis;
        std::vector<Tensor> out;
        Status s = runNode(opNode("GatherElements", attrs), {&x, &idx}, out);
        QVERIFY2(s.isOk(), s.message().c_str());
        QCOMPARE(out.at(0).shape(), indices);
        const auto* ob = static_cast<const uint8_t*>(out[0].raw());
        int64_t bad = 0;
        for (int64_t i = 0; i < idx.numElements(); ++i) {
          int64_t off = 0;
          for (size_t d = 0; d < r; ++d) {
            const int64_t c = (i / ist[d]) % indices[d];
            off += (d == ax ? want[static_cast<size_t>(i)] : c) * dst[d];
          }
          bad += std::memcmp(ob + i * es, bytes + off * es, static_cast<size_t>(es)) != 0;
        }
        QCOMPARE(bad, int64_t{0});
      }
  }

  /// MeanVarianceNormalization over reduced blocks that are innermost (rows of one group), outer (rows
  /// across groups) or both, against a double reference.
  void meanVarianceNormalization_data() {
    QTest::addColumn<Shape>("shape");
    QTest::addColumn<Shape>("axes");
    QTest::newRow("default, batch 2") << Shape{2, 3, 5, 7} << Shape{0, 2, 3};
    QTest::newRow("last axis") << Shape{2, 3, 40} << Shape{2};
    QTest::newRow("kept inner") << Shape{4, 3, 5, 6} << Shape{0, 1};
    QTest::newRow("alternating") << Shape{2, 3, 4, 5} << Shape{1, 3};
    QTest::newRow("every axis") << Shape{3, 4, 5} << Shape{0, 1, 2};
    QTest::newRow("size-1 axes") << Shape{1, 3, 1, 1} << Shape{0, 2, 3};
  }
  void meanVarianceNormalization() {
    QFETCH(Shape, shape);
    QFETCH(Shape, axes);
    Tensor x = randomTensor(shape, 11);
    auto* px = static_cast<float*>(x.raw());
    for (int64_t i = 0; i < x.numElements(); ++i) px[i] = 3.0f + 2.0f * px[i];  // a mean away from 0
    std::map<std::string, Attribute> attrs;
    attrs["axes"].value = axes;
    std::vector<Tensor> out;
    Status s = runNode(opNode("MeanVarianceNormalization", attrs), {&x}, out);
    QVERIFY2(s.isOk(), s.message().c_str());
    const size_t r = shape.size();
    const Shape st = stridesOf(shape);
    auto key = [&](int64_t i) {
      int64_t k = 0;
      for (size_t d = 0; d < r; ++d)
        if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
          k = k * shape[d] + (i / st[d]) % shape[d];
      return k;
    };
    std::map<int64_t, std::array<double, 3>> acc;
    for (int64_t i = 0; i < x.numElements(); ++i) {
      auto& a = acc[key(i)];
      a[0] += px[i];
      a[1] += static_cast<double>(px[i]) * px[i];
      a[2] += 1;
    }
    std::vector<double> want(static_cast<size_t>(x.numElements()));
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const auto& a = acc[key(i)];
      const double m = a[0] / a[2], v = a[1] / a[2] - m * m;
      want[static_cast<size_t>(i)] = (px[i] - m) / (std::sqrt(std::max(v, 0.0)) + 1e-9);
    }
    const double worst = worstError(out.at(0), want);
    QVERIFY2(worst < 1e-5, std::to_string(worst).c_str());
  }

  /// Erf's vectorised float approximation against libm's double erf over [-6, 6], tiny values and the
  /// special values.
  void erf() {
    std::vector<float> xs;
    for (int i = -6000; i <= 6000; ++i) xs.push_back(static_cast<float>(i) * 0.001f + 0.0003f);
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-20f, 1e-6f, 0.4999999f, 0.5f, 0.5000001f, 30.0f, -100.0f}) xs.push_back(v);
    auto made = Tensor::make(DType::Float32, {static_cast<int64_t>(xs.size()) + 3});
    QVERIFY(made.isOk());
    Tensor x = std::move(*made);
    auto* px = static_cast<float*>(x.raw());
    std::copy(xs.begin(), xs.end(), px);
    px[xs.size()] = INFINITY;
    px[xs.size() + 1] = -INFINITY;
    px[xs.size() + 2] = NAN;
    std::vector<Tensor> out;
    Status s = runNode(opNode("Erf"), {&x}, out);
    QVERIFY2(s.isOk(), s.message().c_str());
    const auto* po = static_cast<const float*>(out.at(0).raw());
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = std::erf(double(xs[i]));
      QVERIFY2(std::abs(po[i] - want) <= 2e-7 + 1e-6 * std::abs(want),
               ("erf(" + std::to_string(xs[i]) + ") = " + std::to_string(po[i])).c_str());
    }
    QCOMPARE(po[xs.size()], 1.0f);
    QCOMPARE(po[xs.size() + 1], -1.0f);
    QVERIFY(std::isnan(po[xs.size() + 2]));
  }

  /// Max, Min, Sum and Mean of three broadcast operands, Pow by 2 and 3, ArgMax/ArgMin over the last and
  /// a middle axis, against plain loops.
  void variadicPowArg() {
    const Tensor a = randomTensor({2, 1, 37}, 31), b = randomTensor({1, 5, 37}, 32), c = randomTensor({37}, 33);
    for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
      std::vector<Tensor> out;
      Status s = runNode(opNode(op), {&a, &b, &c}, out);
      QVERIFY2(s.isOk(), s.message().c_str());
      QCOMPARE(out.at(0).shape(), (Shape{2, 5, 37}));
      const auto* pa = static_cast<const float*>(a.raw());
      const auto* pb = static_cast<const float*>(b.raw());
      const auto* pc = static_cast<const float*>(c.raw());
      const auto* po = static_cast<const float*>(out[0].raw());
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j)
          for (int64_t k = 0; k < 37; ++k) {
            const float x = pa[i * 37 + k], y = pb[j * 37 + k], z = pc[k];
            const std::string o = op;
            const double want = o == "Max"   ? std::max({x, y, z})
                                : o == "Min" ? std::min({x, y, z})
                                : o == "Sum" ? double(x) + y + z
                                             : (double(x) + y + z) / 3;
            QVERIFY2(std::abs(po[(i * 5 + j) * 37 + k] - want) < 1e-6, op);
          }
    }
    for (float e : {2.0f, 3.0f, 1.5f}) {
      auto made = Tensor::make(DType::Float32, {});
      QVERIFY(made.isOk());
      *static_cast<float*>(made->raw()) = e;
      std::vector<Tensor> out;
      Status s = runNode(opNode("Pow"), {&b, &*made}, out);
      QVERIFY2(s.isOk(), s.message().c_str());
      const auto* pb = static_cast<const float*>(b.raw());
      const auto* po = static_cast<const float*>(out.at(0).raw());
      for (int64_t i = 0; i < b.numElements(); ++i) {
        const double want = std::pow(double(pb[i]), double(e));  // NaN for a negative base to 1.5
        QVERIFY((std::isnan(want) && std::isnan(po[i])) || std::abs(po[i] - want) < 1e-6);
      }
    }
    const Tensor x = randomTensor({3, 41, 29}, 34);
    const auto* px = static_cast<const float*>(x.raw());
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t axis : {2, 1}) {
        std::map<std::string, Attribute> attrs;
        attrs["axis"].value = axis;
        std::vector<Tensor> out;
        Status s = runNode(opNode(op, attrs), {&x}, out);
        QVERIFY2(s.isOk(), s.message().c_str());
        const auto* po = static_cast<const int64_t*>(out.at(0).raw());
        const int64_t n = axis == 2 ? 29 : 41, inner = axis == 2 ? 1 : 29, outer = axis == 2 ? 3 * 41 : 3;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t best = 0;
            for (int64_t j = 1; j < n; ++j) {
              const float v = px[(o * n + j) * inner + i], m = px[(o * n + best) * inner + i];
              if (std::string(op) == "ArgMax" ? v > m : v < m) best = j;
            }
            QCOMPARE(po[o * inner + i], best);
          }
      }
  }

  /// Where and a binary operator over broadcasts that collapse to runs with stride 0 or 1 on each side.
  void broadcast_data() {
    QTest::addColumn<Shape>("a");
    QTest::addColumn<Shape>("b");
    QTest::addColumn<Shape>("c");
    QTest::newRow("mask") << Shape{2, 3, 1, 9} << Shape{2, 3, 7, 9} << Shape{};
    QTest::newRow("bias") << Shape{1, 1, 17} << Shape{2, 5, 17} << Shape{17};
    QTest::newRow("channel") << Shape{1, 4, 1, 1} << Shape{2, 4, 6, 5} << Shape{2, 1, 6, 5};
    QTest::newRow("both sides") << Shape{8, 1, 6} << Shape{1, 7, 6} << Shape{8, 7, 1};
    QTest::newRow("odd") << Shape{3, 37, 53} << Shape{37, 1} << Shape{1, 53};
    QTest::newRow("same") << Shape{4, 33} << Shape{4, 33} << Shape{4, 33};
    QTest::newRow("scalars") << Shape{} << Shape{1} << Shape{};
  }
  void broadcast() {
    QFETCH(Shape, a);
    QFETCH(Shape, b);
    QFETCH(Shape, c);
    const Tensor ta = randomTensor(a, 21), tb = randomTensor(b, 22), tc = randomTensor(c, 23);
    auto mk = Tensor::make(DType::Bool, a);
    QVERIFY(mk.isOk());
    Tensor cond = std::move(*mk);
    for (int64_t i = 0; i < cond.numElements(); ++i)
      static_cast<uint8_t*>(cond.raw())[i] = static_cast<const float*>(ta.raw())[i] > 0;
    Shape os;
    const size_t r = std::max({a.size(), b.size(), c.size()});
    auto dimAt = [&](const Shape& s, size_t d) { return d + s.size() < r ? int64_t{1} : s[d + s.size() - r]; };
    for (size_t d = 0; d < r; ++d) os.push_back(std::max({dimAt(a, d), dimAt(b, d), dimAt(c, d)}));
    // Offset in an operand of shape s (right-aligned to rank r) of element i of an output of shape o.
    auto at = [&](const Shape& s, int64_t i, const Shape& o) {
      int64_t rem = i, off = 0, stride = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t k = rem % o[d];
        rem /= o[d];
        const int64_t n = dimAt(s, d);
        if (n != 1) off += k * stride;
        stride *= n;
      }
      return off;
    };
    std::vector<Tensor> wout, sout, lout;
    Status s1 = runNode(opNode("Where"), {&cond, &tb, &tc}, wout);
    QVERIFY2(s1.isOk(), s1.message().c_str());
    Status s2 = runNode(opNode("Sub"), {&tb, &tc}, sout);
    QVERIFY2(s2.isOk(), s2.message().c_str());
    Status s3 = runNode(opNode("Less"), {&tb, &tc}, lout);
    QVERIFY2(s3.isOk(), s3.message().c_str());
    const int64_t total = product(os, 0, r);
    const auto* pb = static_cast<const float*>(tb.raw());
    const auto* pc = static_cast<const float*>(tc.raw());
    const auto* pcond = static_cast<const uint8_t*>(cond.raw());
    int64_t bad = 0;
    for (int64_t i = 0; i < total; ++i) {
      const float w = pcond[at(a, i, os)] ? pb[at(b, i, os)] : pc[at(c, i, os)];
      bad += static_cast<const float*>(wout.at(0).raw())[i] != w;
    }
    // Sub and Less broadcast b and c only.
    Shape bc;
    for (size_t d = 0; d < r; ++d) bc.push_back(std::max(dimAt(b, d), dimAt(c, d)));
    QCOMPARE(sout.at(0).numElements(), product(bc, 0, r));
    QCOMPARE(lout.at(0).numElements(), product(bc, 0, r));
    for (int64_t i = 0; i < product(bc, 0, r); ++i) {
      bad += static_cast<const float*>(sout[0].raw())[i] != pb[at(b, i, bc)] - pc[at(c, i, bc)];
      bad += static_cast<const uint8_t*>(lout[0].raw())[i] != (pb[at(b, i, bc)] < pc[at(c, i, bc)]);
    }
    QCOMPARE(wout[0].shape(), os);
    QCOMPARE(bad, int64_t{0});

    // The same broadcasts over int64 (the comparisons' and Mod's own rows, issue 24) and Where over
    // int8 and int64 (1- and 8-byte selects): small values of both signs, so that equal pairs, zero
    // divisors and remainders of either sign all occur.
    auto ints = [](DType dt, const Shape& s, uint32_t seed) {
      Tensor t = std::move(*Tensor::make(dt, s));
      std::mt19937 rng(seed);
      std::uniform_int_distribution<int> u(-4, 4);
      for (int64_t i = 0; i < t.numElements(); ++i) {
        const int v = u(rng);
        if (dt == DType::Int64)
          static_cast<int64_t*>(t.raw())[i] = i % 5 == 4 ? int64_t{v} * 1000003 : v;  // some beyond int32's reach
        else
          static_cast<int8_t*>(t.raw())[i] = static_cast<int8_t>(v);
      }
      return t;
    };
    const Tensor ib = ints(DType::Int64, b, 31), ic = ints(DType::Int64, c, 32);
    const auto* qb = static_cast<const int64_t*>(ib.raw());
    const auto* qc = static_cast<const int64_t*>(ic.raw());
    const int64_t nbc = product(bc, 0, r);
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      std::vector<Tensor> o;
      Status st = runNode(opNode(op), {&ib, &ic}, o);
      QVERIFY2(st.isOk(), st.message().c_str());
      QCOMPARE(o.at(0).dtype(), DType::Bool);
      QCOMPARE(o[0].numElements(), nbc);  // (bc is padded to a's rank)
      const std::string name = op;
      for (int64_t i = 0; i < nbc; ++i) {
        const int64_t x = qb[at(b, i, bc)], y = qc[at(c, i, bc)];
        const bool want = name == "Equal"        ? x == y
                          : name == "Less"       ? x < y
                          : name == "Greater"    ? x > y
                          : name == "LessOrEqual" ? x <= y
                                                 : x >= y;
        bad += static_cast<const uint8_t*>(o[0].raw())[i] != static_cast<uint8_t>(want);
      }
      QVERIFY2(bad == 0, op);
    }
    for (int fmod = 0; fmod < 2; ++fmod) {
      std::vector<Tensor> o;
      Status st = runNode(opNode("Mod", {{"fmod", Attribute{int64_t{fmod}}}}), {&ib, &ic}, o);
      QVERIFY2(st.isOk(), st.message().c_str());
      QCOMPARE(o.at(0).numElements(), nbc);
      for (int64_t i = 0; i < nbc; ++i) {
        const int64_t x = qb[at(b, i, bc)], y = qc[at(c, i, bc)];
        // Python's % (the divisor's sign) for fmod=0, C's for fmod=1; a zero divisor gives 0 here.
        int64_t want = y == 0 ? 0 : x % y;
        if (!fmod && want != 0 && ((want < 0) != (y < 0))) want += y;
        bad += static_cast<const int64_t*>(o[0].raw())[i] != want;
      }
      QVERIFY2(bad == 0, fmod ? "Mod fmod=1" : "Mod");
    }
    for (DType dt : {DType::Int64, DType::Int8}) {
      const Tensor wb = ints(dt, b, 41), wc = ints(dt, c, 42);
      std::vector<Tensor> o;
      Status st = runNode(opNode("Where"), {&cond, &wb, &wc}, o);
      QVERIFY2(st.isOk(), st.message().c_str());
      QCOMPARE(o.at(0).shape(), os);
      for (int64_t i = 0; i < total; ++i) {
        const bool pick = pcond[at(a, i, os)];
        if (dt == DType::Int64)
          bad += static_cast<const int64_t*>(o[0].raw())[i] !=
                 (pick ? static_cast<const int64_t*>(wb.raw())[at(b, i, os)]
                       : static_cast<const int64_t*>(wc.raw())[at(c, i, os)]);
        else
          bad += static_cast<const int8_t*>(o[0].raw())[i] !=
                 (pick ? static_cast<const int8_t*>(wb.raw())[at(b, i, os)]
                       : static_cast<const int8_t*>(wc.raw())[at(c, i, os)]);
      }
      QVERIFY2(bad == 0, dt == DType::Int64 ? "Where int64" : "Where int8");
    }
  }
};

QTEST_GUILESS_MAIN(TestKernelPaths)
#include "tst_kernel_paths.moc"
