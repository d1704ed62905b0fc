// The CPU backend's contract: devices that match the this-machine preset, errors (not crashes) for bad
// shapes, dtypes, devices and unsupported operators, and kernels on core0 and core1 running at the same
// time from two threads with correct results (checked against plain reference loops in this file).

#include <cstring>
#include <QtTest>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "platform/platform.h"

using namespace partex;

namespace {

using In = test::NodeInput;

/// A one-node graph named "node" (graphrun.h).
Graph oneNode(const std::string& op, const std::vector<In>& ins, int nOut = 1,
              std::map<std::string, Attribute> attrs = {}) {
  return test::oneNodeGraph(op, ins, nOut, std::move(attrs));
}

Attribute intAttr(int64_t v) {
  return Attribute{v};
}

Tensor filled(DType dt, std::vector<int64_t> shape, uint64_t seed) {
  auto t = Tensor::make(dt, std::move(shape));
  t->fillRandom(seed);
  return std::move(*t);
}

/// A convolution of x [N, C, spatial...] (rank 3 or 4) by W [M, C/group, taps...] with bias B, in
/// double: the independent reference of the small-convolution tests. Pads are ONNX's (begins, then ends).
std::vector<double> refConv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t group,
                            const std::vector<int64_t>& strides, const std::vector<int64_t>& dil,
                            const std::vector<int64_t>& pads, std::vector<int64_t>& outShape) {
  const bool twoD = x.rank() == 4;
  const int64_t N = x.dim(0), C = x.dim(1), H = twoD ? x.dim(2) : 1, W = x.shape().back();
  const int64_t M = w.dim(0), Cg = C / group, Mg = M / group, kh = twoD ? w.dim(2) : 1, kw = w.shape().back();
  const int64_t sh = twoD ? strides[0] : 1, sw = strides.back(), dh = twoD ? dil[0] : 1, dw = dil.back();
  const int64_t ph = twoD ? pads[0] : 0, pw = twoD ? pads[1] : pads[0];
  const int64_t phEnd = twoD ? pads[2] : 0, pwEnd = twoD ? pads[3] : pads[1];
  const int64_t OH = (H + ph + phEnd - (kh - 1) * dh - 1) / sh + 1, OW = (W + pw + pwEnd - (kw - 1) * dw - 1) / sw + 1;
  outShape = twoD ? std::vector<int64_t>{N, M, OH, OW} : std::vector<int64_t>{N, M, OW};
  std::vector<double> y(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = b.data<float>()[m];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const int64_t ch = (m / Mg) * Cg + c;
                acc += double(x.data<float>()[((n * C + ch) * H + iy) * W + ix]) *
                       double(w.data<float>()[((m * Cg + c) * kh + ky) * kw + kx]);
              }
          y[static_cast<size_t>(((n * M + m) * OH + oy) * OW + ox)] = acc;
        }
  return y;
}

/// Naive C = A * B for row-major float matrices: the independent reference.
std::vector<float> refMatMul(const Tensor& a, const Tensor& b) {
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  std::vector<float> c(static_cast<size_t>(M * N), 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        c[static_cast<size_t>(i * N + j)] += a.data<float>()[i * K + k] * b.data<float>()[k * N + j];
  return c;
}

}  // namespace

class TestCpuKernels : public QObject {
  Q_OBJECT

 private slots:
  /// Device ids are those of the this-machine preset.
  void devicesMatchThisMachine() {
    BackendRegistry reg;
    registerBuiltinBackends(reg);
    Backend* cpu = reg.find("cpu");
    QVERIFY(cpu);
    QVERIFY(!cpu->version().empty());
    const Platform p = measureThisMachine();
    std::set<std::string> preset, offered;
    for (const auto& d : p.devices) preset.insert(d.id);
    for (const auto& d : cpu->devices()) offered.insert(d.id);
    QCOMPARE(offered, preset);
    for (const auto& d : cpu->devices()) {
      if (d.id == "cpu-parallel") {
        // Led from the first CPU, one team thread per CPU.
        QVERIFY(d.core >= 0);
        if (d.threads > 1) {
          QCOMPARE(static_cast<int>(d.teamCores.size()), d.threads);
          QCOMPARE(d.teamCores.front(), d.core);
        }
      } else {
        QVERIFY(d.core >= 0 && d.threads == 1 && d.teamCores.empty());
      }
    }
  }

  /// Bad inputs give an Error naming the node, never a crash.
  void badInputs_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("which");
    QTest::newRow("Add shapes") << "Add" << 0;
    QTest::newRow("MatMul inner dims") << "MatMul" << 1;
    QTest::newRow("Conv channels") << "Conv" << 2;
    QTest::newRow("Reshape count") << "Reshape" << 3;
    QTest::newRow("Gather index range") << "Gather" << 4;
    QTest::newRow("Concat dims") << "Concat" << 5;
    QTest::newRow("Gemm dtype") << "Gemm" << 6;
    QTest::newRow("Softmax axis") << "Softmax" << 7;
  }
  void badInputs() {
    QFETCH(QString, op);
    QFETCH(int, which);
    auto cpu = makeCpuBackend();
    const DType f = DType::Float32;
    Graph g;
    std::vector<Tensor> ins;
    switch (which) {
      case 0:
        g = oneNode("Add", {{f, {2, 3}}, {f, {4}}});
        ins = {filled(f, {2, 3}, 1), filled(f, {4}, 2)};
        break;
      case 1:
        g = oneNode("MatMul", {{f, {2, 3}}, {f, {4, 5}}});
        ins = {filled(f, {2, 3}, 1), filled(f, {4, 5}, 2)};
        break;
      case 2:
        g = oneNode("Conv", {{f, {1, 3, 8, 8}}, {f, {4, 2, 3, 3}}});
        ins = {filled(f, {1, 3, 8, 8}, 1), filled(f, {4, 2, 3, 3}, 2)};
        break;
      case 3: {
        g = oneNode("Reshape", {{f, {2, 3}}, {DType::Int64, {1}}});
        auto s = Tensor::make(DType::Int64, {1});
        s->data<int64_t>()[0] = 7;
        ins = {filled(f, {2, 3}, 1), std::move(*s)};
        break;
      }
      case 4: {
        g = oneNode("Gather", {{f, {5, 2}}, {DType::Int64, {1}}});
        auto s = Tensor::make(DType::Int64, {1});
        s->data<int64_t>()[0] = 5;
        ins = {filled(f, {5, 2}, 1), std::move(*s)};
        break;
      }
      case 5:
        g = oneNode("Concat", {{f, {2, 3}}, {f, {2, 4}}}, 1, {{"axis", intAttr(0)}});
        ins = {filled(f, {2, 3}, 1), filled(f, {2, 4}, 2)};
        break;
      case 6:
        g = oneNode("Gemm", {{f, {2, 3}}, {f, {3, 2}}});
        ins = {filled(f, {2, 3}, 1), filled(DType::Int64, {3, 2}, 2)};
        break;
      case 7:
        g = oneNode("Softmax", {{f, {2, 3}}}, 1, {{"axis", intAttr(5)}});
        ins = {filled(f, {2, 3}, 1)};
        break;
    }
    std::string why;
    QVERIFY2(cpu->supports(g, 0, &why), why.c_str());
    auto k = cpu->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    std::vector<const Tensor*> ptrs;
    for (const auto& t : ins) ptrs.push_back(&t);
    std::vector<Tensor> outs;
    Status s = (*k)->run(ptrs, outs);
    QVERIFY(!s.isOk());
    QVERIFY2(s.message().find("node") != std::string::npos, s.message().c_str());
    QVERIFY(s.message().find('\n') == std::string::npos);
    Q_UNUSED(op);
  }

  /// Declined operators and unknown devices are errors with a reason.
  void refusals() {
    auto cpu = makeCpuBackend();
    std::string why;
    Graph g = oneNode("RoiAlign", {{DType::Float32, {1, 1, 4, 4}}, {DType::Float32, {1, 4}}, {DType::Int64, {1}}});
    QVERIFY(!cpu->supports(g, 0, &why));
    QVERIFY(!why.empty());
    QVERIFY(!cpu->prepare(g, 0, "cpu-serial").isOk());
    Graph h = oneNode("Relu", {{DType::Int8, {4}}});
    QVERIFY(!cpu->supports(h, 0, &why));
    QVERIFY2(why.find("int8") != std::string::npos, why.c_str());
    Graph r = oneNode("Relu", {{DType::Float32, {4}}});
    auto k = cpu->prepare(r, 0, "npu0");
    QVERIFY(!k.isOk());
    QVERIFY2(k.message().find("npu0") != std::string::npos, k.message().c_str());
    QVERIFY(!cpu->supports(r, 5, &why));
  }

  /// Two MatMul kernels on core0 and core1, each run repeatedly from its own thread at the same time:
  /// both results equal the reference, and each thread's affinity is restored after every call.
  void concurrentCores() {
    auto cpu = makeCpuBackend();
    bool have1 = false;
    for (const auto& d : cpu->devices()) have1 = have1 || d.id == "core1";
    if (!have1) QSKIP("one core only");
    const int64_t n = 192;
    Graph g = oneNode("MatMul", {{DType::Float32, {n, n}}, {DType::Float32, {n, n}}});
    const Tensor a0 = filled(DType::Float32, {n, n}, 1), b0 = filled(DType::Float32, {n, n}, 2);
    const Tensor a1 = filled(DType::Float32, {n, n}, 3), b1 = filled(DType::Float32, {n, n}, 4);
    const auto ref0 = refMatMul(a0, b0), ref1 = refMatMul(a1, b1);
    auto k0 = cpu->prepare(g, 0, "core0");
    auto k1 = cpu->prepare(g, 0, "core1");
    QVERIFY(k0.isOk() && k1.isOk());
    std::atomic<int> ready{0};
    std::atomic<bool> failed{false};
    std::string err[2];
    double busy[2][2] = {};  // first start, last end (ms since t0)
    const auto t0 = std::chrono::steady_clock::now();
    auto work = [&](int idx, Kernel& k, const Tensor& a, const Tensor& b, const std::vector<float>& ref) {
      cpu_set_t before, after;
      pthread_getaffinity_np(pthread_self(), sizeof(before), &before);
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      busy[idx][0] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      for (int it = 0; it < 20; ++it) {
        std::vector<Tensor> outs;
        Status s = k.run({&a, &b}, outs);
        if (!s) {
          err[idx] = s.message();
          failed = true;
          return;
        }
        for (int64_t i = 0; i < n * n; ++i)
          if (std::abs(outs[0].data<float>()[i] - ref[static_cast<size_t>(i)]) >
              1e-3f * (1.0f + std::abs(ref[static_cast<size_t>(i)]))) {
            err[idx] = "wrong value at " + std::to_string(i);
            failed = true;
            return;
          }
        pthread_getaffinity_np(pthread_self(), sizeof(after), &after);
        if (!CPU_EQUAL(&before, &after)) {
          err[idx] = "affinity not restored";
          failed = true;
          return;
        }
      }
      busy[idx][1] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    std::thread t1(work, 0, std::ref(**k0), std::cref(a0), std::cref(b0), std::cref(ref0));
    std::thread t2(work, 1, std::ref(**k1), std::cref(a1), std::cref(b1), std::cref(ref1));
    t1.join();
    t2.join();
    QVERIFY2(!failed, (err[0] + " " + err[1]).c_str());
    qInfo("core0 busy %.1f-%.1f ms, core1 busy %.1f-%.1f ms", busy[0][0], busy[0][1], busy[1][0], busy[1][1]);
  }

  /// The same kernel gives the same result on every device.
  /// NonMaxSuppression with max_output_boxes_per_class = INT64_MAX, torchvision's "no limit": every
  /// box that survives the IoU test is kept (the value once went through an out-of-range cast and
  /// kept none, so SSDlite detected nothing). Boxes 0 and 1 overlap (IoU 0.81), box 2 is apart.
  void nmsWithoutLimit() {
    BackendRegistry reg;
    registerBuiltinBackends(reg);
    Backend* cpu = reg.find("cpu");
    QVERIFY(cpu);
    Graph g =
        oneNode("NonMaxSuppression",
                {{DType::Float32, {1, 3, 4}}, {DType::Float32, {1, 1, 3}}, {DType::Int64, {1}}, {DType::Float32, {1}}});
    g.values[static_cast<size_t>(g.outputs[0])].dtype = DType::Int64;
    auto k = cpu->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    auto boxes = Tensor::make(DType::Float32, {1, 3, 4});
    const float corners[12] = {0, 0, 10, 10, 0, 1, 10, 11, 20, 20, 30, 30};
    std::copy(corners, corners + 12, boxes->data<float>());
    auto scores = Tensor::make(DType::Float32, {1, 1, 3});
    const float sc[3] = {0.9f, 0.8f, 0.7f};
    std::copy(sc, sc + 3, scores->data<float>());
    auto iou = Tensor::make(DType::Float32, {1});
    iou->data<float>()[0] = 0.5f;
    for (const int64_t limit : {std::numeric_limits<int64_t>::max(), int64_t{1}}) {
      auto maxOut = Tensor::make(DType::Int64, {1});
      maxOut->data<int64_t>()[0] = limit;
      std::vector<Tensor> outs;
      Status st = (*k)->run({&*boxes, &*scores, &*maxOut, &*iou}, outs);
      QVERIFY2(st.isOk(), st.message().c_str());
      QCOMPARE(outs.size(), size_t{1});
      const Tensor& sel = outs[0];
      QCOMPARE(sel.shape(), (std::vector<int64_t>{limit == 1 ? 1 : 2, 3}));
      QCOMPARE(sel.data<int64_t>()[2], int64_t{0});  // the best box first
      if (limit != 1) QCOMPARE(sel.data<int64_t>()[5], int64_t{2});
    }
  }

  /// NonMaxSuppression over thousands of boxes (batched NMS keeps thousands per class: the kernel tests a
  /// box against the kept ones a vector block at a time) against the definition, box by box, in this
  /// file: 2 batches, 2 classes, 3,000 boxes of corners in either order, one in 50 of zero area, every
  /// 97th a copy of box 5 (ties in IoU), with and without a score threshold, two IoU thresholds.
  void nmsManyBoxes() {
    BackendRegistry reg;
    registerBuiltinBackends(reg);
    Backend* cpu = reg.find("cpu");
    QVERIFY(cpu);
    const int64_t B = 2, K = 2, N = 3000;
    Graph g = oneNode("NonMaxSuppression", {{DType::Float32, {B, N, 4}},
                                            {DType::Float32, {B, K, N}},
                                            {DType::Int64, {1}},
                                            {DType::Float32, {1}},
                                            {DType::Float32, {1}}});
    g.values[static_cast<size_t>(g.outputs[0])].dtype = DType::Int64;
    auto k = cpu->prepare(g, 0, "core0");
    QVERIFY2(k.isOk(), k.message().c_str());
    Tensor boxes = filled(DType::Float32, {B, N, 4}, 61), scores = filled(DType::Float32, {B, K, N}, 62);
    float* pb = boxes.data<float>();
    for (int64_t i = 0; i < B * N; ++i) {
      float* b = pb + i * 4;  // a corner in [0, 200)^2, sides up to 12, the corners swapped for odd i
      const float y = (b[0] + 1) * 100, x = (b[1] + 1) * 100, h = (b[2] + 1) * 6, w = (b[3] + 1) * 6;
      const bool flat = i % 50 == 0;
      if (i % 2) {
        b[0] = y + h;
        b[1] = x + (flat ? 0 : w);
        b[2] = y;
        b[3] = x;
      } else {
        b[0] = y;
        b[1] = x;
        b[2] = y + h;
        b[3] = x + (flat ? 0 : w);
      }
      if (i % 97 == 0) std::copy(pb + 5 * 4, pb + 6 * 4, b);
    }
    auto ref = [&](int64_t limit, float iou, bool haveThr, float thr) {
      auto corners = [&](int64_t b, int64_t i) {
        const float* q = pb + (b * N + i) * 4;
        return std::array<float, 4>{std::min(q[0], q[2]), std::min(q[1], q[3]), std::max(q[0], q[2]), std::max(q[1], q[3])};
      };
      auto suppresses = [&](const std::array<float, 4>& a, const std::array<float, 4>& c) {
        const float ih = std::max(0.0f, std::min(a[2], c[2]) - std::max(a[0], c[0]));
        const float iw = std::max(0.0f, std::min(a[3], c[3]) - std::max(a[1], c[1]));
        const float inter = ih * iw;
        if (inter <= 0) return false;
        const float aa = (a[2] - a[0]) * (a[3] - a[1]), ac = (c[2] - c[0]) * (c[3] - c[1]);
        const float uni = aa + ac - inter;
        if (aa <= 0 || ac <= 0 || uni <= 0) return false;
        return inter / uni > iou;
      };
      std::vector<int64_t> sel;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < K; ++c) {
          const float* s = scores.data<float>() + (b * K + c) * N;
          std::vector<int64_t> order;
          for (int64_t i = 0; i < N; ++i)
            if (!haveThr || s[i] > thr) order.push_back(i);
          std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
          std::vector<int64_t> kept;
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) >= limit) break;
            bool drop = false;
            for (int64_t j : kept) drop = drop || suppresses(corners(b, i), corners(b, j));
            if (drop) continue;
            kept.push_back(i);
            sel.insert(sel.end(), {b, c, i});
          }
        }
      return sel;
    };
    for (const float iou : {0.3f, 0.7f})
      for (const bool haveThr : {false, true}) {
        auto maxOut = Tensor::make(DType::Int64, {1});
        maxOut->data<int64_t>()[0] = 2500;
        auto iouT = Tensor::make(DType::Float32, {1});
        iouT->data<float>()[0] = iou;
        auto thrT = Tensor::make(DType::Float32, {1});
        thrT->data<float>()[0] = -0.5f;
        std::vector<const Tensor*> ins{&boxes, &scores, &*maxOut, &*iouT};
        if (haveThr) ins.push_back(&*thrT);
        std::vector<Tensor> outs;
        Status st = (*k)->run(ins, outs);
        QVERIFY2(st.isOk(), st.message().c_str());
        const std::vector<int64_t> want = ref(2500, iou, haveThr, -0.5f);
        QVERIFY(want.size() / 3 > 4 * 4 * 64);  // several blocks of kept boxes per class
        QCOMPARE(outs[0].shape(), (std::vector<int64_t>{static_cast<int64_t>(want.size() / 3), 3}));
        const std::vector<int64_t> got(outs[0].data<int64_t>(), outs[0].data<int64_t>() + want.size());
        QVERIFY2(got == want, qPrintable(QString("iou %1, threshold %2").arg(double(iou)).arg(haveThr)));
      }
  }

  /// 1-D convolutions over long rows (an audio model's filter bank: one input channel, a 256-tap kernel,
  /// thousands of output columns), where the kernel takes another oneDNN implementation than brgconv
  /// (whose state grows with the row), against a plain loop; and a short row that keeps brgconv.
  void wideRowConvolution_data() {
    QTest::addColumn<int64_t>("width");
    QTest::addColumn<int64_t>("channels");
    QTest::addColumn<int64_t>("stride");
    QTest::newRow("one channel, 2,873 columns") << int64_t{6000} << int64_t{1} << int64_t{2};
    QTest::newRow("36 channels, 1,500 columns") << int64_t{3254} << int64_t{36} << int64_t{2};
    QTest::newRow("36 channels, 23 columns") << int64_t{6000} << int64_t{36} << int64_t{256};
  }
  void wideRowConvolution() {
    QFETCH(int64_t, width);
    QFETCH(int64_t, channels);
    QFETCH(int64_t, stride);
    constexpr int64_t taps = 256;
    auto cpu = makeCpuBackend();
    Graph g = oneNode("Conv", {{DType::Float32, {1, 1, 1, width}}, {DType::Float32, {channels, 1, 1, taps}}}, 1,
                      {{"strides", Attribute{std::vector<int64_t>{1, stride}}}});
    const Tensor x = filled(DType::Float32, {1, 1, 1, width}, 7), w = filled(DType::Float32, {channels, 1, 1, taps}, 8);
    auto k = cpu->prepare(g, 0, "core0");
    QVERIFY2(k.isOk(), k.message().c_str());
    std::vector<Tensor> outs;
    Status st = (*k)->run({&x, &w}, outs);
    QVERIFY2(st.isOk(), st.message().c_str());
    const int64_t cols = (width - taps) / stride + 1;
    QCOMPARE(outs.at(0).shape(), (std::vector<int64_t>{1, channels, 1, cols}));
    Tensor plain;
    QVERIFY(outs[0].toPlain(plain).isOk());
    double worst = 0;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t o = 0; o < cols; ++o) {
        double acc = 0;
        for (int64_t t = 0; t < taps; ++t)
          acc += double(x.data<float>()[o * stride + t]) * double(w.data<float>()[c * taps + t]);
        worst =
            std::max(worst, std::abs(double(plain.data<float>()[c * cols + o]) - acc) / std::max(1.0, std::abs(acc)));
      }
    QVERIFY2(worst < 1e-4, std::to_string(worst).c_str());
  }

  /// Convolutions small enough for the backend's own loop (no oneDNN primitive: Silero VAD's 1-D
  /// convolutions over nine frames), and one just above the threshold, against refConv: grouped,
  /// depthwise, pointwise, strided, dilated, asymmetric pads, 1-D and 2-D.
  void smallConvolutions_data() {
    QTest::addColumn<std::vector<int64_t>>("xShape");
    QTest::addColumn<std::vector<int64_t>>("wShape");
    QTest::addColumn<int64_t>("group");
    QTest::addColumn<std::vector<int64_t>>("strides");
    QTest::addColumn<std::vector<int64_t>>("dil");
    QTest::addColumn<std::vector<int64_t>>("pads");
    using V = std::vector<int64_t>;
    QTest::newRow("1-D depthwise k5 pad 2 (Silero)") << V{1, 16, 9} << V{16, 1, 5} << int64_t{16} << V{1} << V{1} << V{2, 2};
    QTest::newRow("1-D pointwise 64 to 16") << V{1, 64, 9} << V{16, 64, 1} << int64_t{1} << V{1} << V{1} << V{0, 0};
    QTest::newRow("1-D pointwise stride 2") << V{1, 16, 9} << V{32, 16, 1} << int64_t{1} << V{2} << V{1} << V{0, 0};
    QTest::newRow("1-D 2 groups k3 dilation 2 stride 2") << V{2, 6, 11} << V{4, 3, 3} << int64_t{2} << V{2} << V{2} << V{1, 2};
    QTest::newRow("2-D 3x3 stride 2 asymmetric pads") << V{1, 3, 7, 5} << V{4, 3, 3, 3} << int64_t{1} << V{2, 2} << V{1, 1} << V{1, 0, 1, 2};
    QTest::newRow("2-D depthwise 3x3 (oneDNN: one channel per group)") << V{1, 8, 6, 6} << V{8, 1, 3, 3} << int64_t{8} << V{1, 1} << V{1, 1} << V{1, 1, 1, 1};
    QTest::newRow("2-D 2 groups of 4 channels, 3x3") << V{1, 8, 6, 6} << V{8, 4, 3, 3} << int64_t{2} << V{1, 1} << V{1, 1} << V{1, 1, 1, 1};
    // Under four output positions: a dot product per output value (Silero's encoder at one frame).
    QTest::newRow("1-D one position, 64 to 64 k3 stride 2 (Silero)") << V{1, 64, 2} << V{64, 64, 3} << int64_t{1} << V{2} << V{1} << V{1, 1};
    QTest::newRow("1-D three positions, batch 2") << V{2, 16, 3} << V{32, 16, 3} << int64_t{1} << V{1} << V{1} << V{1, 1};
    QTest::newRow("2-D two positions, 2 groups") << V{1, 4, 2, 3} << V{8, 2, 3, 3} << int64_t{2} << V{2, 2} << V{1, 1} << V{1, 1, 1, 1};
    QTest::newRow("1-D above the threshold (oneDNN)") << V{1, 64, 64} << V{64, 64, 3} << int64_t{1} << V{1} << V{1} << V{1, 1};
  }
  void smallConvolutions() {
    QFETCH(std::vector<int64_t>, xShape);
    QFETCH(std::vector<int64_t>, wShape);
    QFETCH(int64_t, group);
    QFETCH(std::vector<int64_t>, strides);
    QFETCH(std::vector<int64_t>, dil);
    QFETCH(std::vector<int64_t>, pads);
    auto cpu = makeCpuBackend();
    Graph g = oneNode("Conv", {{DType::Float32, xShape}, {DType::Float32, wShape}, {DType::Float32, {wShape[0]}}}, 1,
                      {{"group", intAttr(group)},
                       {"strides", Attribute{strides}},
                       {"dilations", Attribute{dil}},
                       {"pads", Attribute{pads}}});
    const Tensor x = filled(DType::Float32, xShape, 11), w = filled(DType::Float32, wShape, 12),
                 b = filled(DType::Float32, {wShape[0]}, 13);
    std::vector<int64_t> outShape;
    const std::vector<double> want = refConv(x, w, b, group, strides, dil, pads, outShape);
    auto k = cpu->prepare(g, 0, "core0");
    QVERIFY2(k.isOk(), k.message().c_str());
    for (int run = 0; run < 2; ++run) {  // the second run on the weights it prepared in the first
      std::vector<Tensor> outs;
      Status st = (*k)->run({&x, &w, &b}, outs);
      QVERIFY2(st.isOk(), st.message().c_str());
      QCOMPARE(outs.at(0).shape(), outShape);
      Tensor plain;
      QVERIFY(outs[0].toPlain(plain).isOk());
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::abs(double(plain.data<float>()[i]) - want[i]) / std::max(1.0, std::abs(want[i])));
      QVERIFY2(worst < 1e-5, std::to_string(worst).c_str());
    }
  }

  /// A small Conv with the steps fused into it (BatchNormalization folded, Relu, a residual Add, then a
  /// Clip), as the executor runs the group, against refConv and the steps computed here.
  void smallConvolutionChain() {
    auto cpu = makeCpuBackend();
    Graph g;
    g.opsetVersion = 17;
    auto value = [&](const std::string& name, std::vector<int64_t> shape, bool input, bool weight) {
      Value v;
      v.name = name;
      v.dtype = DType::Float32;
      v.shape = std::move(shape);
      v.shapeKnown = true;
      v.isGraphInput = input;
      v.isWeight = weight;
      const ValueId id = g.addValue(v);
      if (input) g.inputs.push_back(id);
      return id;
    };
    const int64_t C = 8, M = 8, T = 9;
    const ValueId x = value("x", {1, C, T}, true, false), r = value("r", {1, M, T}, true, false);
    const ValueId w = value("w", {M, C, 3}, false, true), bias = value("b", {M}, false, true);
    const ValueId sc = value("scale", {M}, false, true), sh = value("shift", {M}, false, true),
                  mean = value("mean", {M}, false, true), var = value("var", {M}, false, true);
    const ValueId y0 = value("y0", {1, M, T}, false, false), y1 = value("y1", {1, M, T}, false, false),
                  y2 = value("y2", {1, M, T}, false, false), y3 = value("y3", {1, M, T}, false, false),
                  y4 = value("y4", {1, M, T}, false, false);
    auto node = [&](const std::string& type, std::vector<ValueId> ins, ValueId out, std::map<std::string, Attribute> a = {}) {
      Node n;
      n.name = type;
      n.opType = type;
      n.inputs = std::move(ins);
      n.outputs = {out};
      n.attrs = std::move(a);
      g.addNode(n);
    };
    node("Conv", {x, w, bias}, y0, {{"pads", Attribute{std::vector<int64_t>{1, 1}}}});
    node("BatchNormalization", {y0, sc, sh, mean, var}, y1);
    node("Relu", {y1}, y2);
    node("Add", {y2, r}, y3);
    Attribute lo{-0.25}, hi{0.75};
    node("Clip", {y3}, y4, {{"min", lo}, {"max", hi}});
    g.values[static_cast<size_t>(y4)].isGraphOutput = true;
    g.outputs.push_back(y4);
    g.rebuildIndex();
    std::map<ValueId, Tensor> values;
    values[x] = filled(DType::Float32, {1, C, T}, 21);
    values[r] = filled(DType::Float32, {1, M, T}, 22);
    values[w] = filled(DType::Float32, {M, C, 3}, 23);
    values[bias] = filled(DType::Float32, {M}, 24);
    values[sc] = filled(DType::Float32, {M}, 25);
    values[sh] = filled(DType::Float32, {M}, 26);
    values[mean] = filled(DType::Float32, {M}, 27);
    values[var] = filled(DType::Float32, {M}, 28);
    for (int64_t m = 0; m < M; ++m) values[var].data<float>()[m] = std::abs(values[var].data<float>()[m]) + 0.5f;
    std::vector<int64_t> outShape;
    const std::vector<double> conv = refConv(values[x], values[w], values[bias], 1, {1}, {1}, {1, 1}, outShape);
    auto fused = test::runGraphFused(g, *cpu, "core0", values);
    QVERIFY2(fused.isOk(), fused.message().c_str());
    QCOMPARE(*fused, 1);  // the five operators ran as one kernel
    double worst = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < T; ++t) {
        const auto f = [&](ValueId v) { return double(values[v].data<float>()[m]); };
        double v = (conv[static_cast<size_t>(m * T + t)] - f(mean)) / std::sqrt(f(var) + 1e-5) * f(sc) + f(sh);
        v = std::max(v, 0.0) + double(values[r].data<float>()[m * T + t]);
        v = std::min(0.75, std::max(-0.25, v));
        worst = std::max(worst, std::abs(double(values[y4].data<float>()[m * T + t]) - v));
      }
    QVERIFY2(worst < 1e-5, std::to_string(worst).c_str());
  }

  void sameResultOnEveryDevice() {
    auto cpu = makeCpuBackend();
    Graph g = oneNode("Conv", {{DType::Float32, {1, 8, 16, 16}}, {DType::Float32, {16, 8, 3, 3}}}, 1,
                      {{"pads", Attribute{std::vector<int64_t>{1, 1, 1, 1}}}});
    const Tensor x = filled(DType::Float32, {1, 8, 16, 16}, 5), w = filled(DType::Float32, {16, 8, 3, 3}, 6);
    std::vector<Tensor> first;
    for (const auto& d : cpu->devices()) {
      auto k = cpu->prepare(g, 0, d.id);
      QVERIFY2(k.isOk(), k.message().c_str());
      std::vector<Tensor> outs;
      QVERIFY((*k)->run({&x, &w}, outs).isOk());
      QCOMPARE(outs[0].shape(), (std::vector<int64_t>{1, 16, 16, 16}));
      if (first.empty()) {
        first = std::move(outs);
        continue;
      }
      for (int64_t i = 0; i < first[0].numElements(); ++i)
        QVERIFY(std::abs(first[0].data<float>()[i] - outs[0].data<float>()[i]) < 1e-4f);
    }
  }

  /// The vectorised float32 functions (libmvec's Sin/Cos/Tan/Asin/Acos/Atan/Selu/Celu, Partex's own
  /// Log) against double-precision libm over a dense sweep of each one's domain, in ulp of the float
  /// result, through the threaded device; and their special values.
  void vectorMath() {
    auto cpu = makeCpuBackend();
    struct Case {
      const char* op;
      double lo, hi;     // a uniform sweep over [lo, hi]
      bool allPositive;  // and every 61st positive float bit pattern (Log: subnormals to max)
      double (*ref)(double);
      double maxUlp;
    };
    constexpr double selA = 1.67326319217681884765625, selG = 1.05070102214813232421875;  // the defaults
    const Case cases[] = {
        {"Sin", -100, 100, false, [](double v) { return std::sin(v); }, 4},
        {"Sin", -1e6, 1e6, false, [](double v) { return std::sin(v); }, 4},  // positional encodings' range
        {"Cos", -100, 100, false, [](double v) { return std::cos(v); }, 4},
        {"Tan", -100, 100, false, [](double v) { return std::tan(v); }, 4},
        {"Asin", -1, 1, false, [](double v) { return std::asin(v); }, 4},
        {"Acos", -1, 1, false, [](double v) { return std::acos(v); }, 4},
        {"Atan", -1e4, 1e4, false, [](double v) { return std::atan(v); }, 4},
        {"Atan", -4, 4, false, [](double v) { return std::atan(v); }, 4},
        {"Log", 0, 4, true, [](double v) { return std::log(v); }, 2},
        {"Selu", -20, 20, false, [](double v) { return v > 0 ? selG * v : selG * selA * std::expm1(v); }, 4},
        {"Celu", -20, 20, false, [](double v) { return std::max(0.0, v) + std::min(0.0, std::expm1(v)); }, 4},
    };
    const int64_t sweep = 1 << 20;
    for (const Case& c : cases) {
      std::vector<float> xs;
      for (int64_t i = 0; i <= sweep; ++i)
        xs.push_back(static_cast<float>(c.lo + (c.hi - c.lo) * static_cast<double>(i) / sweep));
      if (c.allPositive)
        for (uint32_t b = 1; b < 0x7f800000u; b += 61) xs.push_back(std::bit_cast<float>(b));
      const auto n = static_cast<int64_t>(xs.size());
      Graph g = oneNode(c.op, {{DType::Float32, {n}}});
      auto k = cpu->prepare(g, 0, "cpu-parallel");
      QVERIFY2(k.isOk(), k.message().c_str());
      auto x = Tensor::make(DType::Float32, {n});
      std::copy(xs.begin(), xs.end(), x->data<float>());
      std::vector<Tensor> outs;
      QVERIFY((*k)->run({&*x}, outs).isOk());
      const float* y = outs[0].data<float>();
      double worst = 0;
      float worstX = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double r = c.ref(static_cast<double>(xs[static_cast<size_t>(i)]));
        const float rf = std::abs(static_cast<float>(r));
        const double ulp = static_cast<double>(std::nextafter(rf, INFINITY) - rf);
        const double err = std::abs(static_cast<double>(y[i]) - r) / ulp;
        if (!(err <= worst)) {
          worst = err;
          worstX = xs[static_cast<size_t>(i)];
        }
      }
      qInfo("%s over [%g, %g]%s: max error %.2f ulp (at x = %.9g)", c.op, c.lo, c.hi,
            c.allPositive ? " and all positive floats" : "", worst, static_cast<double>(worstX));
      QVERIFY2(worst <= c.maxUlp, c.op);
    }
    // Special values, as C99 and the scalar libm give them.
    const float inf = INFINITY, nan = NAN;
    struct Special {
      const char* op;
      float x, want;
    };
    const Special specials[] = {{"Log", 0.0f, -inf},
                                {"Log", -0.0f, -inf},
                                {"Log", -1.0f, nan},
                                {"Log", inf, inf},
                                {"Log", -inf, nan},
                                {"Log", nan, nan},
                                {"Log", 1.0f, 0.0f},
                                {"Log", 1.4e-45f, std::log(1.4e-45f)},
                                {"Acos", 2.0f, nan},
                                {"Asin", -2.0f, nan},
                                {"Sin", inf, nan},
                                {"Cos", nan, nan},
                                {"Atan", inf, static_cast<float>(M_PI / 2)},
                                {"Selu", -inf, static_cast<float>(-selG * selA)},
                                {"Selu", inf, inf},
                                {"Selu", nan, nan},
                                {"Celu", -inf, -1.0f},
                                {"Celu", inf, inf},
                                {"Sin", 0.0f, 0.0f},
                                {"Tan", -0.0f, -0.0f}};
    for (const Special& sp : specials) {
      Graph g = oneNode(sp.op, {{DType::Float32, {17}}});  // 17: a vector loop and its remainder
      auto k = cpu->prepare(g, 0, "cpu-serial");
      QVERIFY2(k.isOk(), k.message().c_str());
      auto x = Tensor::make(DType::Float32, {17});
      std::fill(x->data<float>(), x->data<float>() + 17, sp.x);
      std::vector<Tensor> outs;
      QVERIFY((*k)->run({&*x}, outs).isOk());
      for (int i = 0; i < 17; ++i) {
        const float got = outs[0].data<float>()[i];
        const bool ok = std::isnan(sp.want) ? std::isnan(got) : got == sp.want;
        QVERIFY2(ok, (std::string(sp.op) + "(" + std::to_string(sp.x) + ") = " + std::to_string(got)).c_str());
      }
    }
  }

  /// Tensor basics: alignment, reshape checks, seeded fill is deterministic.
  void tensor() {
    auto t = Tensor::make(DType::Float32, {3, 5});
    QVERIFY(t.isOk());
    QCOMPARE(reinterpret_cast<uintptr_t>(t->raw()) % Tensor::kAlignment, uintptr_t{0});
    QCOMPARE(t->bytes(), int64_t{60});
    QVERIFY(!t->reshape({4, 4}).isOk());
    QVERIFY(t->reshape({15}).isOk());
    QVERIFY(t->data<int64_t>() == nullptr);
    Tensor a = filled(DType::Float32, {100}, 9), b = filled(DType::Float32, {100}, 9);
    QCOMPARE(std::memcmp(a.raw(), b.raw(), 400), 0);
    QVERIFY(!Tensor::make(DType::String, {2}).isOk());
    QVERIFY(!Tensor::make(DType::Float32, {-1}).isOk());
    QVERIFY(!Tensor::make(DType::Float32, {int64_t{1} << 40}).isOk());
  }

  /// A view (Tensor::borrow, a Concat's pre-placed slice) writes into its owner while the shape fits and
  /// takes storage of its own otherwise; a copy of it owns its storage; the owner's other bytes are
  /// never touched.
  void tensorView() {
    auto owner = Tensor::make(DType::Float32, {10});
    QVERIFY(owner.isOk());
    float* base = owner->data<float>();
    Tensor v;
    QVERIFY(!v.borrow(DType::Float32, {3}, base + 2, 8).isOk());  // 12 bytes do not fit in 8
    QVERIFY(v.borrow(DType::Float32, {3}, base + 2, 12).isOk());
    QVERIFY(v.borrowed());
    QVERIFY(v.ensure(DType::Float32, {1, 3}).isOk());  // fits: still the slice
    QVERIFY(v.borrowed());
    QCOMPARE(v.data<float>(), base + 2);
    for (int i = 0; i < 3; ++i) v.data<float>()[i] = 7.0f;
    QCOMPARE(base[1], 0.0f);
    QCOMPARE(base[2], 7.0f);
    QCOMPARE(base[4], 7.0f);
    QCOMPARE(base[5], 0.0f);
    Tensor copy = v;
    QVERIFY(!copy.borrowed());
    QVERIFY(copy.data<float>() != base + 2);
    QCOMPARE(copy.data<float>()[1], 7.0f);
    Tensor moved = std::move(v);  // a move keeps the view
    QVERIFY(moved.borrowed());
    QVERIFY(moved.ensure(DType::Float32, {4}).isOk());  // grows: storage of its own, the owner untouched
    QVERIFY(!moved.borrowed());
    QVERIFY(moved.data<float>() != base + 2);
    moved.fill(1.0);
    QCOMPARE(base[5], 0.0f);
    Tensor nhwc;
    QVERIFY(nhwc.borrow(DType::Float32, {1, 1, 1, 2}, base + 6, 16).isOk());
    QVERIFY(nhwc.ensureNhwc({1, 1, 1, 2}).isOk());  // channels-last never lands in a plain slice
    QVERIFY(!nhwc.borrowed());
  }

  /// writePlain (the CUDA backend's upload path) transposes a channels-last tensor into row-major
  /// memory of the caller's: element [n][c][h][w] of a [2,3,2,5] tensor lands at ((n*3+c)*2+h)*5+w.
  void writePlainTransposes() {
    const std::vector<int64_t> shape{2, 3, 2, 5};  // N, C, H, W: C*HW = 30 per image
    Tensor t;
    QVERIFY(t.ensureNhwc(shape).isOk());
    float* st = static_cast<float*>(t.raw());
    // Stored [n][h][w][c]: value 1000n + 100c + 10h + w at its channels-last position.
    for (int n = 0; n < 2; ++n)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 5; ++w)
          for (int c = 0; c < 3; ++c) st[((n * 2 + h) * 5 + w) * 3 + c] = static_cast<float>(1000 * n + 100 * c + 10 * h + w);
    std::vector<float> out(60, -1.0f);
    t.writePlain(out.data());
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 2; ++h)
          for (int w = 0; w < 5; ++w)
            QCOMPARE(out[static_cast<size_t>(((n * 3 + c) * 2 + h) * 5 + w)], static_cast<float>(1000 * n + 100 * c + 10 * h + w));
    Tensor plain;
    QVERIFY(t.toPlain(plain).isOk());
    QVERIFY(!plain.nhwc());
    QCOMPARE(std::memcmp(plain.raw(), out.data(), 60 * sizeof(float)), 0);
    // A plain tensor is copied as it is.
    std::vector<float> again(60, -1.0f);
    plain.writePlain(again.data());
    QCOMPARE(std::memcmp(again.data(), out.data(), 60 * sizeof(float)), 0);
  }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "tst_cpu_kernels.moc"
