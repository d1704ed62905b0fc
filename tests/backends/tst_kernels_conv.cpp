// The small CNNs' kernels on one core (issues 24 and 29): MaxPool and channel Concat over channels-last
// tensors (the backend's own loops), BatchNormalization + an activation (the vectorised channel affine
// kernel), Max/Min by a per-channel constant kept channels-last, a grouped pointwise convolution, and
// the 1x1 convolution over channels-last pixels (gemmPixels, with its chain of activations, folded
// BatchNormalization and residual sums) and the depthwise one (depthwiseRowNhwc), checked against plain
// reference
// loops in this file on row-major copies of the same values, in both layouts; and Identity/Dropout run as
// aliases of their input by the executor, whose memory plan must keep the input's region alive for the
// alias's readers.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "cpu/conv1x1.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"
#include "graphrun.h"
#include "ir/fusion.h"
#include "ir/tensordata.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "sim/plan.h"

using namespace partex;

namespace {

ValueId addValue(Graph& g, const std::string& name, std::vector<int64_t> shape, bool input = false) {
  Value v;
  v.name = name;
  v.dtype = DType::Float32;
  v.shape = std::move(shape);
  v.shapeKnown = !v.shape.empty();
  v.isGraphInput = input;
  const ValueId id = g.addValue(v);
  if (input) g.inputs.push_back(id);
  return id;
}

void addNode(Graph& g, const std::string& name, const std::string& op, std::vector<ValueId> ins,
             std::vector<ValueId> outs, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = name;
  n.opType = op;
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  n.attrs = std::move(attrs);
  g.addNode(n);
}

/// A 1x1 Conv `name` of 4 output channels reading `v` ([N, C, H, W]), its result the model output: a
/// reader that takes channels-last, so the kernel that writes `v` may leave it in that layout.
void addChannelsLastReader(Graph& g, ValueId v, const std::string& name = "conv") {
  const std::vector<int64_t> s = g.values[static_cast<size_t>(v)].shape;
  const ValueId w = addValue(g, name + "_w", {4, s[1], 1, 1});
  g.values[static_cast<size_t>(w)].isWeight = true;
  const ValueId z = addValue(g, name + "_z", {s[0], 4, s[2], s[3]});
  addNode(g, name, "Conv", {v, w}, {z});
  g.outputs.push_back(z);
}

/// The values of a row-major tensor [N, C, H, W] stored channels-last in a tensor of the same shape.
Tensor toNhwc(const Tensor& plain) {
  Tensor t;
  if (!t.ensureNhwc(plain.shape())) qFatal("ensureNhwc");
  const int64_t N = plain.dim(0), C = plain.dim(1), H = plain.dim(2), W = plain.dim(3);
  const float* s = plain.data<float>();
  float* d = static_cast<float*>(t.raw());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) d[((n * H + y) * W + x) * C + c] = s[((n * C + c) * H + y) * W + x];
  return t;
}

Tensor random(std::vector<int64_t> shape, uint64_t seed) {
  auto t = Tensor::make(DType::Float32, std::move(shape));
  if (!t) qFatal("%s", t.message().c_str());
  t->fillRandom(seed);
  return std::move(*t);
}

/// MaxPool by the definition: per output element, the largest input element of its window inside the
/// image; pads = {top, left, bottom, right}; ceil_mode rounds the output size up.
std::vector<float> refMaxPool(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                              const std::vector<int64_t>& pads, bool ceil, std::vector<int64_t>& outShape) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  auto outDim = [&](int64_t in, int64_t k, int64_t s, int64_t p) {
    const int64_t span = in + p - k;
    return (ceil ? (span + s - 1) / s : span / s) + 1;
  };
  int64_t OH = outDim(H, kh, sh, pads[0] + pads[2]), OW = outDim(W, kw, sw, pads[1] + pads[3]);
  // ONNX: with ceil_mode, a last window that would start in the end padding is dropped.
  if (ceil && (OH - 1) * sh >= H + pads[0]) --OH;
  if (ceil && (OW - 1) * sw >= W + pads[1]) --OW;
  outShape = {N, C, OH, OW};
  std::vector<float> y(static_cast<size_t>(N * C * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t iy = oy * sh - pads[0] + ky, ix = ox * sw - pads[1] + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              best = std::max(best, x.data<float>()[((n * C + c) * H + iy) * W + ix]);
            }
          y[static_cast<size_t>(((n * C + c) * OH + oy) * OW + ox)] = best;
        }
  return y;
}

/// Runs node 0 of `g` alone on core0 with `in` (channels-last tensors as they are) and returns its
/// first output row-major; `nhwc` says whether the kernel wrote it channels-last.
Tensor runFirst(const Graph& g, const std::vector<const Tensor*>& in, bool& nhwc) {
  auto cpu = makeCpuBackend();
  auto k = cpu->prepare(g, 0, "core0");
  if (!k) qFatal("%s", k.message().c_str());
  std::vector<Tensor> out;
  if (auto st = (*k)->run(in, out); !st) qFatal("%s", st.message().c_str());
  nhwc = out[0].nhwc();
  Tensor plain;
  if (!out[0].toPlain(plain)) qFatal("toPlain");
  return plain;
}

/// A step of a convolution's chain written as ONNX operators from `cur` to `next` (of cur's shape):
/// "swish" (x * Sigmoid(x)), "add" (the residual `ri`) or "relu"; false for another step.
bool addPlainStep(Graph& g, const QString& st, const std::string& name, ValueId cur, ValueId ri, ValueId next) {
  if (st == "swish") {
    const ValueId sig = addValue(g, name + "_sig", g.values[static_cast<size_t>(cur)].shape);
    addNode(g, name + "_sigmoid", "Sigmoid", {cur}, {sig});
    addNode(g, name, "Mul", {cur, sig}, {next});
  } else if (st == "add") {
    addNode(g, name, "Add", {cur, ri}, {next});
  } else if (st == "relu") {
    addNode(g, name, "Relu", {cur}, {next});
  } else {
    return false;
  }
  return true;
}

}  // namespace

class TestKernelsConv : public QObject {
  Q_OBJECT
 private slots:
  void maxPoolChannelsLast_data();
  void maxPoolChannelsLast();
  void maxPoolPlanar_data();
  void maxPoolPlanar();
  void concatChannelsLast();
  void channelShuffleChannelsLast_data();
  void channelShuffleChannelsLast();
  void groupedPointwise_data();
  void groupedPointwise();
  void identityAndDropoutAreAliases();
  void channelAffineBothLayouts_data();
  void channelAffineBothLayouts();
  void maxMinPerChannelChannelsLast_data();
  void maxMinPerChannelChannelsLast();
  void plainToNhwcMatchesLoop_data();
  void plainToNhwcMatchesLoop();
  void rowMajorFedAsChannelsLast_data();
  void rowMajorFedAsChannelsLast();
  void pixelGemm_data();
  void pixelGemm();
  void fastActivations();
  void pointwiseChannelsLast_data();
  void pointwiseChannelsLast();
  void depthwiseChannelsLast_data();
  void depthwiseChannelsLast();
};

void TestKernelsConv::maxPoolChannelsLast_data() {
  QTest::addColumn<QVector<qint64>>("shape");  // N, C, H, W
  QTest::addColumn<QVector<qint64>>("window");  // kh, kw, sh, sw
  QTest::addColumn<QVector<qint64>>("pads");
  QTest::addColumn<bool>("ceil");
  QTest::addColumn<bool>("consumerConv");  // a Conv reads the output: it may stay channels-last
  QTest::newRow("SqueezeNet 3x3/2, 64x111x111") << QVector<qint64>{1, 64, 111, 111} << QVector<qint64>{3, 3, 2, 2}
                                                << QVector<qint64>{0, 0, 0, 0} << false << true;
  QTest::newRow("same, row-major out") << QVector<qint64>{1, 64, 111, 111} << QVector<qint64>{3, 3, 2, 2}
                                       << QVector<qint64>{0, 0, 0, 0} << false << false;
  QTest::newRow("padded, odd C, batch 2") << QVector<qint64>{2, 19, 10, 13} << QVector<qint64>{3, 3, 2, 2}
                                          << QVector<qint64>{1, 1, 1, 1} << false << true;
  QTest::newRow("ceil mode 2x2/2 over 7x9") << QVector<qint64>{1, 16, 7, 9} << QVector<qint64>{2, 2, 2, 2}
                                            << QVector<qint64>{0, 0, 0, 0} << true << false;
  QTest::newRow("3x2 window, strides 1x2, uneven pads") << QVector<qint64>{1, 33, 6, 8} << QVector<qint64>{3, 2, 1, 2}
                                                         << QVector<qint64>{0, 1, 1, 0} << false << true;
}

/// The MaxPool of the current data row (shape, window, pads, ceil, consumerConv) over `x` random with
/// `seed`, fed channels-last or row-major, against the definition; its output is channels-last exactly
/// when a Conv reads it.
static void checkMaxPool(bool channelsLastIn, uint64_t seed) {
  QFETCH(QVector<qint64>, shape);
  QFETCH(QVector<qint64>, window);
  QFETCH(QVector<qint64>, pads);
  QFETCH(bool, ceil);
  QFETCH(bool, consumerConv);
  const std::vector<int64_t> xs(shape.begin(), shape.end()), p(pads.begin(), pads.end());
  const Tensor x = random(xs, seed);
  std::vector<int64_t> ys;
  const auto want = refMaxPool(x, window[0], window[1], window[2], window[3], p, ceil, ys);
  Graph g;
  g.opsetVersion = 17;
  const ValueId in = addValue(g, "x", xs, true);
  const ValueId out = addValue(g, "y", ys);
  addNode(g, "pool", "MaxPool", {in}, {out},
          {{"kernel_shape", Attribute{std::vector<int64_t>{window[0], window[1]}}},
           {"strides", Attribute{std::vector<int64_t>{window[2], window[3]}}},
           {"pads", Attribute{p}},
           {"ceil_mode", Attribute{int64_t{ceil ? 1 : 0}}}});
  if (consumerConv) {
    addChannelsLastReader(g, out);
  } else {
    g.outputs.push_back(out);
    g.values[static_cast<size_t>(out)].isGraphOutput = true;
  }
  g.rebuildIndex();
  const Tensor xn = channelsLastIn ? toNhwc(x) : Tensor();
  bool nhwc = false;
  const Tensor y = runFirst(g, {channelsLastIn ? &xn : &x}, nhwc);
  QCOMPARE(nhwc, consumerConv);
  QCOMPARE(y.shape(), ys);
  for (size_t i = 0; i < want.size(); ++i)
    QVERIFY2(y.data<float>()[i] == want[i], qPrintable(QString("element %1: %2, want %3")
                                                         .arg(i)
                                                         .arg(double(y.data<float>()[i]))
                                                         .arg(double(want[i]))));
}

void TestKernelsConv::maxPoolChannelsLast() { checkMaxPool(/*channelsLastIn=*/true, 7); }

void TestKernelsConv::maxPoolPlanar_data() {
  QTest::addColumn<QVector<qint64>>("shape");  // N, C, H, W
  QTest::addColumn<QVector<qint64>>("window");  // kh, kw, sh, sw
  QTest::addColumn<QVector<qint64>>("pads");
  QTest::addColumn<bool>("ceil");
  // A Conv reads the output: the row-major input is converted and the channels-last path runs (issue 25).
  QTest::addColumn<bool>("consumerConv");
  QTest::newRow("MTCNN P-Net 2x2/2, 10x238x318") << QVector<qint64>{1, 10, 238, 318} << QVector<qint64>{2, 2, 2, 2}
                                                 << QVector<qint64>{0, 0, 0, 0} << false << false;
  QTest::newRow("3x3/2 padded, batch 2, odd sizes") << QVector<qint64>{2, 3, 11, 13} << QVector<qint64>{3, 3, 2, 2}
                                                    << QVector<qint64>{1, 1, 1, 1} << false << false;
  QTest::newRow("3x2 window, strides 1x2, uneven pads") << QVector<qint64>{1, 5, 6, 8} << QVector<qint64>{3, 2, 1, 2}
                                                         << QVector<qint64>{0, 1, 1, 0} << false << false;
  QTest::newRow("3x3/1 same size") << QVector<qint64>{1, 4, 9, 7} << QVector<qint64>{3, 3, 1, 1}
                                   << QVector<qint64>{1, 1, 1, 1} << false << false;
  QTest::newRow("ceil mode 2x2/2") << QVector<qint64>{1, 4, 7, 9} << QVector<qint64>{2, 2, 2, 2}
                                   << QVector<qint64>{0, 0, 0, 0} << true << false;
  // The planar loop's own rows (maxPoolRows, issue 24): ceil_mode with and without pads, the generic
  // paths (a 5-row window, a stride of 3, 3 taps at stride 2 over 2 rows), rows of a vector body and a
  // tail, and the ResNet stem above the 2 MiB a Conv reader's conversion takes.
  QTest::newRow("3x3/2 ceil, batch 2, odd sizes") << QVector<qint64>{2, 3, 12, 15} << QVector<qint64>{3, 3, 2, 2}
                                                  << QVector<qint64>{0, 0, 0, 0} << true << false;
  QTest::newRow("3x3/2 ceil, pads 1") << QVector<qint64>{1, 5, 10, 13} << QVector<qint64>{3, 3, 2, 2}
                                      << QVector<qint64>{1, 1, 1, 1} << true << false;
  QTest::newRow("5x3 window, strides 2x1") << QVector<qint64>{1, 3, 13, 37} << QVector<qint64>{5, 3, 2, 1}
                                           << QVector<qint64>{2, 1, 2, 1} << false << false;
  QTest::newRow("4x4/3 ceil") << QVector<qint64>{1, 2, 17, 19} << QVector<qint64>{4, 4, 3, 3}
                              << QVector<qint64>{1, 2, 0, 1} << true << false;
  QTest::newRow("2x3 window, stride 2") << QVector<qint64>{1, 3, 9, 41} << QVector<qint64>{2, 3, 2, 2}
                                        << QVector<qint64>{0, 1, 1, 1} << false << false;
  QTest::newRow("ResNet stem 3x3/2 p1, 64x112x112") << QVector<qint64>{1, 64, 112, 112}
                                                     << QVector<qint64>{3, 3, 2, 2} << QVector<qint64>{1, 1, 1, 1}
                                                     << false << false;
  QTest::newRow("Inception 3x3/2 ceil, Conv reader") << QVector<qint64>{1, 48, 28, 28} << QVector<qint64>{3, 3, 2, 2}
                                                      << QVector<qint64>{0, 0, 0, 0} << true << true;
  QTest::newRow("3x3/1 padded, batch 2, odd C, Conv reader")
      << QVector<qint64>{2, 19, 9, 7} << QVector<qint64>{3, 3, 1, 1} << QVector<qint64>{1, 1, 1, 1} << false << true;
}

/// MaxPool over a plain (row-major) input, as a PRelu or any kernel that writes row-major leaves it (or a
/// GPU's output on the host): the backend's own loop (maxPool2d) where the output is row-major too, the
/// channels-last loop after a conversion where a Conv reads the output or ceil_mode leaves oneDNN's plain
/// pooling as the other way; checked against the definition.
void TestKernelsConv::maxPoolPlanar() { checkMaxPool(/*channelsLastIn=*/false, 11); }

void TestKernelsConv::concatChannelsLast() {
  // Three channels-last inputs of 64, 16 and 3 channels over 5x7 pixels, batch 2, joined along the
  // channels for a Conv: each output pixel holds the first input's channels, then the second's, then
  // the third's.
  const std::vector<int64_t> cs{64, 16, 3};
  Graph g;
  g.opsetVersion = 17;
  std::vector<ValueId> ins;
  std::vector<Tensor> plain, nhwc;
  for (size_t i = 0; i < cs.size(); ++i) {
    ins.push_back(addValue(g, "x" + std::to_string(i), {2, cs[i], 5, 7}, true));
    plain.push_back(random({2, cs[i], 5, 7}, 11 + i));
  }
  for (const Tensor& t : plain) nhwc.push_back(toNhwc(t));
  const ValueId cat = addValue(g, "cat", {2, 83, 5, 7});
  addNode(g, "concat", "Concat", ins, {cat}, {{"axis", Attribute{int64_t{1}}}});
  addChannelsLastReader(g, cat);
  g.rebuildIndex();
  bool isNhwc = false;
  const Tensor y = runFirst(g, {&nhwc[0], &nhwc[1], &nhwc[2]}, isNhwc);
  QVERIFY(isNhwc);
  QCOMPARE(y.shape(), (std::vector<int64_t>{2, 83, 5, 7}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0, at = 0; at < static_cast<int64_t>(cs.size()); ++at)
      for (int64_t k = 0; k < cs[static_cast<size_t>(at)]; ++k, ++c)
        for (int64_t p = 0; p < 35; ++p)
          QCOMPARE(y.data<float>()[(n * 83 + c) * 35 + p],
                   plain[static_cast<size_t>(at)].data<float>()[(n * cs[static_cast<size_t>(at)] + k) * 35 + p]);
}

void TestKernelsConv::channelShuffleChannelsLast_data() {
  QTest::addColumn<int>("channels");
  QTest::addColumn<int>("groups");
  QTest::newRow("ShuffleNet 112 in 4") << 112 << 4;
  QTest::newRow("24 in 3 (a partial vector)") << 24 << 3;
  QTest::newRow("10 in 5 (less than a vector)") << 10 << 5;
}

void TestKernelsConv::channelShuffleChannelsLast() {
  // Reshape [N, g, C/g, H, W] -> Transpose (0, 2, 1, 3, 4) -> Reshape [N, C, H, W] on a channels-last
  // input read by a Conv: output channel j * g + i is input channel i * C/g + j, at every pixel.
  QFETCH(int, channels);
  QFETCH(int, groups);
  const int64_t N = 2, C = channels, G = groups, H = 5, W = 6;
  Graph g;
  g.opsetVersion = 17;
  const ValueId x = addValue(g, "x", {N, C, H, W}, true);
  auto intValue = [&](const std::string& name, int64_t n) {
    Value v;
    v.name = name;
    v.dtype = DType::Int64;
    v.shape = {n};
    v.shapeKnown = true;
    v.isWeight = true;
    return g.addValue(v);
  };
  const ValueId s1 = intValue("s1", 5), s2 = intValue("s2", 4);
  const ValueId r1 = addValue(g, "r1", {N, G, C / G, H, W}), t = addValue(g, "t", {N, C / G, G, H, W});
  const ValueId r2 = addValue(g, "r2", {N, C, H, W});
  addNode(g, "reshape1", "Reshape", {x, s1}, {r1});
  addNode(g, "transpose", "Transpose", {r1}, {t}, {{"perm", Attribute{std::vector<int64_t>{0, 2, 1, 3, 4}}}});
  addNode(g, "reshape2", "Reshape", {t, s2}, {r2});
  addChannelsLastReader(g, r2);
  g.rebuildIndex();
  const auto groupsOf = fusedGroups(g);
  const FusedGroup* shuffle = nullptr;
  for (const FusedGroup& grp : groupsOf)
    if (grp.ops.front() == 0) shuffle = &grp;
  QVERIFY(shuffle);
  QCOMPARE(shuffle->ops.size(), size_t{3});
  auto cpu = makeCpuBackend();
  auto k = cpu->prepareGroup(g, *shuffle, "core0");
  QVERIFY2(k.isOk(), k.message().c_str());
  const Tensor xs = random({N, C, H, W}, 31);
  const Tensor xn = toNhwc(xs);
  Tensor shape1, shape2;
  QVERIFY(shape1.ensure(DType::Int64, {5}).isOk() && shape2.ensure(DType::Int64, {4}).isOk());
  const int64_t d1[5] = {N, G, C / G, H, W}, d2[4] = {N, C, H, W};
  std::copy(d1, d1 + 5, shape1.data<int64_t>());
  std::copy(d2, d2 + 4, shape2.data<int64_t>());
  std::vector<const Tensor*> ins;
  for (ValueId v : shuffle->inputs) ins.push_back(v == x ? &xn : v == s1 ? &shape1 : &shape2);
  std::vector<Tensor> outs;
  auto st = (*k)->run(ins, outs);
  QVERIFY2(st.isOk(), st.message().c_str());
  QVERIFY(outs[0].nhwc());
  Tensor y;
  QVERIFY(outs[0].toPlain(y).isOk());
  QCOMPARE(y.shape(), (std::vector<int64_t>{N, C, H, W}));
  const int64_t per = C / G, P = H * W;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < per; ++j)
      for (int64_t i = 0; i < G; ++i)
        for (int64_t p = 0; p < P; ++p)
          QCOMPARE(y.data<float>()[(n * C + j * G + i) * P + p], xs.data<float>()[(n * C + i * per + j) * P + p]);
}

void TestKernelsConv::groupedPointwise_data() {
  QTest::addColumn<bool>("nhwcIn");
  QTest::addColumn<bool>("nhwcOut");  // a Conv reads the output: it may stay channels-last
  QTest::newRow("channels-last in, row-major out") << true << false;
  QTest::newRow("row-major in, channels-last out") << false << true;
  QTest::newRow("channels-last in and out") << true << true;
}

void TestKernelsConv::groupedPointwise() {
  // ShuffleNet's first grouped 1x1 convolution, 24 -> 112 channels in 4 groups of 6, with its bias and
  // a Relu, over 9x7 pixels, batch 2: y[n, m, p] = max(0, b[m] + sum over the group's c of W[m, c] x[n, c, p]),
  // from either input layout into either output layout (oneDNN 2.6 runs it through its gemm code on
  // row-major tensors, with reorders around it).
  QFETCH(bool, nhwcIn);
  QFETCH(bool, nhwcOut);
  const int64_t N = 2, C = 24, M = 112, G = 4, P = 63;
  const Tensor x = random({N, C, 9, 7}, 21), w = random({M, C / G, 1, 1}, 22), b = random({M}, 23);
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", {N, C, 9, 7}, true);
  const ValueId wi = addValue(g, "w", {M, C / G, 1, 1}), bi = addValue(g, "b", {M});
  g.values[static_cast<size_t>(wi)].isWeight = true;
  g.values[static_cast<size_t>(bi)].isWeight = true;
  const ValueId c = addValue(g, "c", {N, M, 9, 7}), y = addValue(g, "y", {N, M, 9, 7});
  addNode(g, "conv", "Conv", {xi, wi, bi}, {c}, {{"group", Attribute{G}}, {"kernel_shape", Attribute{std::vector<int64_t>{1, 1}}}});
  addNode(g, "relu", "Relu", {c}, {y});
  if (nhwcOut) {
    addChannelsLastReader(g, y, "conv2");
  } else {
    g.outputs.push_back(y);
  }
  g.rebuildIndex();
  const auto groups = fusedGroups(g);
  QVERIFY(!groups.empty());
  QCOMPARE(groups[0].ops.size(), size_t{2});  // conv + relu
  auto cpu = makeCpuBackend();
  auto k = cpu->prepareGroup(g, groups[0], "core0");
  QVERIFY2(k.isOk(), k.message().c_str());
  const Tensor xn = nhwcIn ? toNhwc(x) : x;
  std::vector<const Tensor*> ins;
  for (ValueId v : groups[0].inputs) ins.push_back(v == xi ? &xn : v == wi ? &w : &b);
  std::vector<Tensor> outs;
  auto st = (*k)->run(ins, outs);
  QVERIFY2(st.isOk(), st.message().c_str());
  // (The output layout is the kernel's choice: channels-last is allowed here, not required.)
  Tensor out;
  QVERIFY(outs[0].toPlain(out).isOk());
  QCOMPARE(out.shape(), (std::vector<int64_t>{N, M, 9, 7}));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < P; ++p) {
        double acc = b.data<float>()[m];
        const int64_t g0 = m / (M / G) * (C / G);
        for (int64_t ci = 0; ci < C / G; ++ci)
          acc += double(w.data<float>()[m * (C / G) + ci]) * double(x.data<float>()[(n * C + g0 + ci) * P + p]);
        const double want = std::max(acc, 0.0);
        const float got = out.data<float>()[(n * M + m) * P + p];
        QVERIFY2(std::abs(got - want) <= 1e-5 * (1 + std::abs(want)),
                 qPrintable(QString("n %1 m %2 p %3: %4, want %5").arg(n).arg(m).arg(p).arg(double(got)).arg(want)));
      }
}

void TestKernelsConv::identityAndDropoutAreAliases() {
  // y = Identity(Dropout(Relu(x))) + Neg(x), in this order: Neg runs after the Dropout, the only direct
  // reader of Relu's output. Relu's region must stay Neg's no-go zone until the Add (which reads it
  // through the two aliases); had the memory plan freed it after the Dropout, Neg's output (of the same
  // size) could take it and y would be -2x.
  Graph g;
  g.opsetVersion = 17;
  const ValueId x = addValue(g, "x", {1, 4, 8, 8}, true);
  const ValueId r = addValue(g, "r", {1, 4, 8, 8}), d = addValue(g, "d", {1, 4, 8, 8});
  const ValueId e = addValue(g, "e", {1, 4, 8, 8}), s = addValue(g, "s", {1, 4, 8, 8});
  const ValueId y = addValue(g, "y", {1, 4, 8, 8});
  g.values[static_cast<size_t>(y)].isGraphOutput = true;
  g.outputs.push_back(y);
  addNode(g, "relu", "Relu", {x}, {r});
  addNode(g, "drop", "Dropout", {r}, {d});
  addNode(g, "ident", "Identity", {d}, {e});
  addNode(g, "neg", "Neg", {x}, {s});
  addNode(g, "add", "Add", {e, s}, {y});
  g.rebuildIndex();
  QVERIFY(!runsAsAlias(g, 0));
  QVERIFY(runsAsAlias(g, 1));
  QVERIFY(runsAsAlias(g, 2));
  auto cpu = makeCpuBackend();
  ExecOptions o;
  o.warmup = 1;
  o.reps = 2;
  o.maxDiscarded = 0;
  o.keepOutputs = true;
  const Tensor xs = random({1, 4, 8, 8}, 5);
  o.inputs[x] = xs;
  auto t = buildCostTable(g, characteriseAll(g), measureThisMachine());
  QVERIFY2(t.isOk(), t.message().c_str());
  const auto core0 = static_cast<DeviceId>(std::find(t->deviceIds.begin(), t->deviceIds.end(), "core0") - t->deviceIds.begin());
  QVERIFY(static_cast<size_t>(core0) < t->deviceIds.size());
  Plan plan;
  plan.algorithm = "manual";
  plan.device.assign(g.nodes.size(), core0);
  plan.order.assign(static_cast<size_t>(t->numDevices()), {});
  plan.order[static_cast<size_t>(core0)] = {0, 1, 2, 3, 4};
  auto res = executePlan(g, *cpu, *t, plan, o);
  QVERIFY2(res.isOk(), res.message().c_str());
  QVERIFY2(res->outputsMatch, res->mismatch.c_str());
  QCOMPARE(res->outputs.size(), size_t{1});
  const Tensor& out = res->outputs[0];
  QCOMPARE(out.numElements(), int64_t{256});
  for (int64_t i = 0; i < 256; ++i) {
    const float v = xs.data<float>()[i];
    QCOMPARE(out.data<float>()[i], std::max(v, 0.0f) - v);
  }
  // A Dropout whose output is a model output, or whose mask is read, keeps its kernel.
  g.values[static_cast<size_t>(d)].isGraphOutput = true;
  QVERIFY(!runsAsAlias(g, 1));
}

void TestKernelsConv::channelAffineBothLayouts_data() {
  QTest::addColumn<int>("channels");
  QTest::addColumn<bool>("nhwcIn");
  QTest::addColumn<QString>("act");
  // oww-embedding's BatchNormalization + LeakyRelu over 24 channels (channels-last after its Conv), and
  // channel counts that are no multiple of a vector, with each activation the kernel applies.
  QTest::newRow("24 channels-last, LeakyRelu") << 24 << true << "LeakyRelu";
  QTest::newRow("24 row-major, LeakyRelu") << 24 << false << "LeakyRelu";
  QTest::newRow("5 channels-last, Relu") << 5 << true << "Relu";
  QTest::newRow("37 channels-last, Clip") << 37 << true << "Clip";
  QTest::newRow("3 row-major, Clip") << 3 << false << "Clip";
}

void TestKernelsConv::channelAffineBothLayouts() {
  // y = act((x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]) over 2 x C x 7 x 9, against the
  // formula in double per element, from a channels-last or a row-major input (the output keeps the
  // input's layout; a Conv reads it, so channels-last may stay).
  QFETCH(int, channels);
  QFETCH(bool, nhwcIn);
  QFETCH(QString, act);
  const int64_t N = 2, C = channels, H = 7, W = 9, P = H * W;
  const float eps = 1e-3f, alpha = 0.2f;
  const Tensor x = random({N, C, H, W}, 41), gamma = random({C}, 42), beta = random({C}, 43), mean = random({C}, 44);
  Tensor var = random({C}, 45);
  for (int64_t c = 0; c < C; ++c) var.data<float>()[c] = std::abs(var.data<float>()[c]) + 0.5f;
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", {N, C, H, W}, true);
  std::vector<ValueId> params;
  for (const char* name : {"gamma", "beta", "mean", "var"}) {
    params.push_back(addValue(g, name, {C}));
    g.values[static_cast<size_t>(params.back())].isWeight = true;
  }
  const ValueId bn = addValue(g, "bn", {N, C, H, W});
  addNode(g, "bn", "BatchNormalization", {xi, params[0], params[1], params[2], params[3]}, {bn},
          {{"epsilon", Attribute{double{eps}}}});
  const ValueId y = addValue(g, "y", {N, C, H, W});
  {
    std::map<std::string, Attribute> attrs;
    if (act == "LeakyRelu") attrs["alpha"] = Attribute{double{alpha}};
    std::vector<ValueId> ins{bn};
    if (act == "Clip") {  // Clip-11+: min and max as inputs
      for (const char* name : {"lo", "hi"}) {
        Value v;
        v.name = name;
        v.dtype = DType::Float32;
        v.shapeKnown = true;
        v.isWeight = true;
        ins.push_back(g.addValue(v));
      }
    }
    addNode(g, "act", act.toStdString(), ins, {y}, attrs);
  }
  addChannelsLastReader(g, y);
  g.rebuildIndex();
  const auto groups = fusedGroups(g);
  const FusedGroup* grp = nullptr;
  for (const FusedGroup& gr : groups)
    if (gr.ops.front() == 0) grp = &gr;
  QVERIFY(grp);
  QCOMPARE(grp->ops.size(), size_t{2});
  auto cpu = makeCpuBackend();
  auto k = cpu->prepareGroup(g, *grp, "core0");
  QVERIFY2(k.isOk(), k.message().c_str());
  Tensor lo, hi;
  QVERIFY(lo.ensure(DType::Float32, {}).isOk() && hi.ensure(DType::Float32, {}).isOk());
  lo.data<float>()[0] = -0.25f;
  hi.data<float>()[0] = 0.5f;
  const Tensor xn = nhwcIn ? toNhwc(x) : x;
  std::vector<const Tensor*> ins;
  for (ValueId v : grp->inputs) {
    const std::string& name = g.values[static_cast<size_t>(v)].name;
    ins.push_back(v == xi              ? &xn
                  : name == "gamma"    ? &gamma
                  : name == "beta"     ? &beta
                  : name == "mean"     ? &mean
                  : name == "var"      ? &var
                  : name == "lo"       ? &lo
                                       : &hi);
  }
  std::vector<Tensor> outs;
  auto st = (*k)->run(ins, outs);
  QVERIFY2(st.isOk(), st.message().c_str());
  QCOMPARE(outs[0].nhwc(), nhwcIn);
  Tensor out;
  QVERIFY(outs[0].toPlain(out).isOk());
  QCOMPARE(out.shape(), (std::vector<int64_t>{N, C, H, W}));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        const size_t i = static_cast<size_t>((n * C + c) * P + p);
        double v = (double(x.data<float>()[i]) - mean.data<float>()[c]) / std::sqrt(double(var.data<float>()[c]) + eps) *
                       gamma.data<float>()[c] + beta.data<float>()[c];
        if (act == "LeakyRelu") v = v < 0 ? v * alpha : v;
        if (act == "Relu") v = std::max(v, 0.0);
        if (act == "Clip") v = std::min(0.5, std::max(-0.25, v));
        const float got = out.data<float>()[i];
        QVERIFY2(std::abs(got - v) <= 1e-5 * (1 + std::abs(v)),
                 qPrintable(QString("n %1 c %2 p %3: %4, want %5").arg(n).arg(c).arg(p).arg(double(got)).arg(v)));
      }
}

void TestKernelsConv::maxMinPerChannelChannelsLast_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<int>("channels");
  QTest::addColumn<bool>("scalar");     // the constant [1,1,1,1] (TensorFlow's clamp), else [1,C,1,1]
  QTest::addColumn<bool>("constFirst");  // Max(c, x)
  QTest::newRow("Max(x, scalar), 24 channels") << "Max" << 24 << true << false;
  QTest::newRow("Max(per-channel, x), 19 channels") << "Max" << 19 << false << true;
  QTest::newRow("Min(x, per-channel), 40 channels") << "Min" << 40 << false << false;
}

void TestKernelsConv::maxMinPerChannelChannelsLast() {
  // Max/Min of a channels-last activation and a constant per channel (or one for all), read by a Conv:
  // the backend keeps the activation channels-last through it (nhwcOutputOk) and the kernel reads it as
  // it is (takesNhwc) and writes channels-last; the values are max/min per element against the
  // row-major definition, NaN from the activation staying NaN.
  QFETCH(QString, op);
  QFETCH(int, channels);
  QFETCH(bool, scalar);
  QFETCH(bool, constFirst);
  const int64_t N = 2, C = channels, H = 5, W = 11, P = H * W;
  Tensor x = random({N, C, H, W}, 51);
  x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int64_t> cs = scalar ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{1, C, 1, 1};
  const Tensor c = random(cs, 52);
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", {N, C, H, W}, true);
  const ValueId ci = addValue(g, "c", cs);
  g.values[static_cast<size_t>(ci)].isWeight = true;
  const ValueId y = addValue(g, "y", {N, C, H, W});
  addNode(g, "op", op.toStdString(), constFirst ? std::vector<ValueId>{ci, xi} : std::vector<ValueId>{xi, ci}, {y});
  addChannelsLastReader(g, y);
  g.rebuildIndex();
  QVERIFY(cpu::nhwcOutputOk(g, xi));  // the graph input's readers (the Max/Min, then a Conv) take channels-last
  const Tensor xn = toNhwc(x);
  auto cpu = makeCpuBackend();
  auto k = cpu->prepare(g, 0, "core0");
  QVERIFY2(k.isOk(), k.message().c_str());
  std::vector<Tensor> outs;
  auto st = (*k)->run(constFirst ? std::vector<const Tensor*>{&c, &xn} : std::vector<const Tensor*>{&xn, &c}, outs);
  QVERIFY2(st.isOk(), st.message().c_str());
  const bool nhwc = outs[0].nhwc();
  Tensor got;
  QVERIFY(outs[0].toPlain(got).isOk());
  QVERIFY(nhwc);
  QCOMPARE(got.shape(), (std::vector<int64_t>{N, C, H, W}));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t p = 0; p < P; ++p) {
        const size_t i = static_cast<size_t>((n * C + ch) * P + p);
        const float a = x.data<float>()[i], b = c.data<float>()[scalar ? 0 : ch];
        const float want = std::isnan(a) ? a : op == "Max" ? std::max(a, b) : std::min(a, b);
        const float v = got.data<float>()[i];
        QVERIFY2(std::isnan(want) ? std::isnan(v) : v == want,
                 qPrintable(QString("n %1 c %2 p %3: %4, want %5").arg(n).arg(ch).arg(p).arg(double(v)).arg(double(want))));
      }
}

void TestKernelsConv::plainToNhwcMatchesLoop_data() {
  QTest::addColumn<QVector<qint64>>("shape");  // N, C, S
  QTest::addColumn<int>("threads");
  QTest::newRow("one pixel block, C 3") << QVector<qint64>{1, 3, 7} << 1;
  QTest::newRow("ragged blocks, odd C, batch 2") << QVector<qint64>{2, 37, 131} << 1;
  QTest::newRow("Inception 480x28x28") << QVector<qint64>{1, 480, 784} << 1;
  QTest::newRow("two threads, batch 3") << QVector<qint64>{3, 64, 3136} << 2;
  QTest::newRow("one pixel") << QVector<qint64>{2, 1024, 1} << 2;
  QTest::newRow("32x32 plane (8-channel blocks), odd C") << QVector<qint64>{2, 20, 1024} << 2;
  QTest::newRow("64x64 plane, 64 channels") << QVector<qint64>{1, 64, 4096} << 1;
}

/// cpu::plainToNhwc (what a CPU kernel pays for a row-major input it reads channels-last) against the
/// definition, element by element.
void TestKernelsConv::plainToNhwcMatchesLoop() {
  QFETCH(QVector<qint64>, shape);
  QFETCH(int, threads);
  const int64_t N = shape[0], C = shape[1], S = shape[2];
  const Tensor x = random({N, C, S}, 61);
  std::vector<float> y(static_cast<size_t>(N * C * S), -1.0f);
  cpu::plainToNhwc(x.data<float>(), y.data(), N, C, S, threads);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < S; ++p) {
        const float want = x.data<float>()[(n * C + c) * S + p], got = y[static_cast<size_t>((n * S + p) * C + c)];
        if (got != want) QFAIL(qPrintable(QString("n %1 c %2 p %3: %4, want %5").arg(n).arg(c).arg(p).arg(double(got)).arg(double(want))));
      }
}

void TestKernelsConv::rowMajorFedAsChannelsLast_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<QVector<qint64>>("shape");  // N, C, H, W
  QTest::newRow("Conv 3x3") << "Conv" << QVector<qint64>{1, 24, 12, 12};
  QTest::newRow("Conv 1x1 + residual Add, batch 2") << "ConvAdd" << QVector<qint64>{2, 32, 9, 11};
  QTest::newRow("MaxPool 3x3/2 ceil") << "MaxPool" << QVector<qint64>{1, 40, 14, 14};
  QTest::newRow("AveragePool 3x3/1 pad 1") << "AveragePool" << QVector<qint64>{1, 33, 10, 9};
}

/// Issue 25: a CPU kernel whose input an all-CPU plan hands over channels-last, fed the row-major tensor
/// a GPU's output is on the host (and the residual too), gives the same values as fed channels-last and
/// leaves its output channels-last for its readers, as its profile measured it (not the row-major path,
/// whose row-major output would make every reader after it convert again).
void TestKernelsConv::rowMajorFedAsChannelsLast() {
  QFETCH(QString, op);
  QFETCH(QVector<qint64>, shape);
  const std::vector<int64_t> xs(shape.begin(), shape.end());
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", xs, true);
  std::vector<Tensor> params;  // weights after X (and the residual, an activation)
  std::vector<ValueId> ins{xi};
  std::vector<int64_t> ys = xs;
  std::optional<FusedGroup> grp;
  auto weight = [&](const std::string& name, std::vector<int64_t> s, uint64_t seed) {
    const ValueId v = addValue(g, name, s);
    g.values[static_cast<size_t>(v)].isWeight = true;
    params.push_back(random(std::move(s), seed));
    ins.push_back(v);
  };
  if (op == "Conv" || op == "ConvAdd") {
    const int64_t M = op == "Conv" ? 40 : C, k = op == "Conv" ? 3 : 1;
    weight("w", {M, C, k, k}, 62);
    weight("b", {M}, 63);
    ys = {N, M, H, W};
    const ValueId y = addValue(g, "y", ys);
    addNode(g, "conv", "Conv", ins, {y},
            {{"pads", Attribute{std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}}}});
    if (op == "ConvAdd") {
      const ValueId r = addValue(g, "r", ys, true);
      const ValueId z = addValue(g, "z", ys);
      addNode(g, "add", "Add", {y, r}, {z});
      addChannelsLastReader(g, z);
      grp = FusedGroup{{0, 1}, {xi, ins[1], ins[2], r}, z};
      params.push_back(random(ys, 64));
    } else {
      addChannelsLastReader(g, y);
    }
  } else {
    const bool maxPool = op == "MaxPool";
    ys = maxPool ? std::vector<int64_t>{N, C, (H - 3 + 1) / 2 + 1, (W - 3 + 1) / 2 + 1} : xs;
    const ValueId y = addValue(g, "y", ys);
    addNode(g, "pool", op.toStdString(), ins, {y},
            {{"kernel_shape", Attribute{std::vector<int64_t>{3, 3}}},
             {"strides", Attribute{std::vector<int64_t>{maxPool ? 2 : 1, maxPool ? 2 : 1}}},
             {"pads", Attribute{std::vector<int64_t>(4, maxPool ? 0 : 1)}},
             {"ceil_mode", Attribute{int64_t{maxPool ? 1 : 0}}}});
    addChannelsLastReader(g, y);
  }
  g.rebuildIndex();
  QVERIFY(cpu::nhwcOutputOk(g, grp ? grp->output : g.nodes[0].outputs[0]));
  const Tensor x = random(xs, 65);
  const Tensor xn = toNhwc(x);
  auto cpu = makeCpuBackend();
  auto run = [&](const Tensor& in, bool residualNhwc, Tensor& plain) {
    auto k = grp ? cpu->prepareGroup(g, *grp, "core0") : cpu->prepare(g, 0, "core0");
    if (!k) qFatal("%s", k.message().c_str());
    std::vector<const Tensor*> ptrs{&in};
    Tensor rn;
    for (size_t i = 0; i < params.size(); ++i) ptrs.push_back(&params[i]);
    if (grp && residualNhwc) {
      rn = toNhwc(params.back());
      ptrs.back() = &rn;
    }
    std::vector<Tensor> out;
    if (auto st = (*k)->run(ptrs, out); !st) qFatal("%s", st.message().c_str());
    if (!out[0].toPlain(plain)) qFatal("toPlain");
    return out[0].nhwc();
  };
  Tensor fromPlain, fromNhwc;
  const bool nhwcFromPlain = run(x, false, fromPlain);
  const bool nhwcFromNhwc = run(xn, true, fromNhwc);
  QVERIFY(nhwcFromNhwc);
  QVERIFY2(nhwcFromPlain, "fed row-major, the kernel left its output row-major");
  QCOMPARE(fromPlain.shape(), ys);
  QCOMPARE(fromNhwc.shape(), ys);
  for (int64_t i = 0; i < fromPlain.numElements(); ++i) {
    const float a = fromPlain.data<float>()[i], b = fromNhwc.data<float>()[i];
    if (a != b) QFAIL(qPrintable(QString("element %1: %2 fed row-major, %3 fed channels-last").arg(i).arg(double(a)).arg(double(b))));
  }
  if (op == "MaxPool" || op == "AveragePool") {  // and the pools against the definition
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t oy = 0; oy < ys[2]; ++oy)
          for (int64_t ox = 0; ox < ys[3]; ++ox) {
            const int64_t s = op == "MaxPool" ? 2 : 1, p = op == "MaxPool" ? 0 : 1;
            float best = -std::numeric_limits<float>::infinity(), sum = 0;
            int count = 0;
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy * s - p + ky, ix = ox * s - p + kx;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const float v = x.data<float>()[((n * C + c) * H + iy) * W + ix];
                best = std::max(best, v);
                sum += v;
                ++count;
              }
            const float got = fromPlain.data<float>()[((n * C + c) * ys[2] + oy) * ys[3] + ox];
            const float want = op == "MaxPool" ? best : sum / static_cast<float>(count);
            if (std::fabs(got - want) > 1e-5f)
              QFAIL(qPrintable(QString("n %1 c %2 (%3, %4): %5, want %6").arg(n).arg(c).arg(oy).arg(ox).arg(double(got)).arg(double(want))));
          }
  }
}

void TestKernelsConv::pixelGemm_data() {
  QTest::addColumn<int64_t>("P");
  QTest::addColumn<int64_t>("C");
  QTest::addColumn<int64_t>("M");
  // Tiles of 1-4 vectors of columns (M up to 64, then blocks of 64 and a last partial one), rows that fill
  // no whole tile (the zero-padded copy), and a stripe of 96 rows and more.
  QTest::newRow("1 pixel, 1 channel") << int64_t{1} << int64_t{1} << int64_t{1};
  QTest::newRow("7 pixels, 3 -> 5") << int64_t{7} << int64_t{3} << int64_t{5};
  QTest::newRow("yolox 16 -> 32") << int64_t{211} << int64_t{16} << int64_t{32};
  QTest::newRow("32 -> 16") << int64_t{100} << int64_t{32} << int64_t{16};
  QTest::newRow("67 -> 47 (three vectors)") << int64_t{53} << int64_t{67} << int64_t{47};
  QTest::newRow("40 -> 64 (four vectors)") << int64_t{97} << int64_t{40} << int64_t{64};
  QTest::newRow("200 -> 146 (blocks of 64 and 18)") << int64_t{25} << int64_t{200} << int64_t{146};
}

void TestKernelsConv::pixelGemm() {
  // y[p, m] = bias[m] + sum_c x[p, c] W[m, c], the weights handed over transposed and padded to a
  // multiple of 16 columns (zeros beyond M), against the sum in double.
  QFETCH(int64_t, P);
  QFETCH(int64_t, C);
  QFETCH(int64_t, M);
  const Tensor x = random({P, C}, 31), w = random({M, C}, 32), b = random({M}, 33);
  const int64_t Mp = (M + cpu::kPixelGemmLanes - 1) / cpu::kPixelGemmLanes * cpu::kPixelGemmLanes;
  std::vector<float> wT(static_cast<size_t>(C * Mp), 0.0f), bias(static_cast<size_t>(Mp), 0.0f);
  for (int64_t m = 0; m < M; ++m) {
    bias[static_cast<size_t>(m)] = b.data<float>()[m];
    for (int64_t c = 0; c < C; ++c) wT[static_cast<size_t>(c * Mp + m)] = w.data<float>()[m * C + c];
  }
  // One guard value after the output: gemmPixels writes M columns per row, not Mp.
  std::vector<float> y(static_cast<size_t>(P * M + 1), 12345.0f);
  cpu::gemmPixels(x.data<float>(), P, C, wT.data(), bias.data(), M, y.data());
  QCOMPARE(y.back(), 12345.0f);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t m = 0; m < M; ++m) {
      double want = b.data<float>()[m], mag = std::abs(want);
      for (int64_t c = 0; c < C; ++c) {
        const double t = double(x.data<float>()[p * C + c]) * double(w.data<float>()[m * C + c]);
        want += t;
        mag += std::abs(t);
      }
      const float got = y[static_cast<size_t>(p * M + m)];
      QVERIFY2(std::abs(got - want) <= 1e-6 * (1 + mag),
               qPrintable(QString("p %1 m %2: %3, want %4").arg(p).arg(m).arg(double(got)).arg(want)));
    }
}

void TestKernelsConv::fastActivations() {
  // Each vectorised activation against its definition in double, over values from -100 to 100 (the
  // exponential's clamps included) and a few exact ones; 101 values, so that the loops' vector body
  // and remainder both run.
  using cpu::FastAct;
  std::vector<float> xs;
  for (int i = 0; i <= 96; ++i) xs.push_back(-100.0f + 200.0f * static_cast<float>(i) / 96.0f + 0.013f * static_cast<float>(i % 7));
  for (float v : {0.0f, -0.0f, 3.0f, -3.0f}) xs.push_back(v);
  struct Case {
    const char* name;
    FastAct f;
    float a, b;
    double (*ref)(double, double, double);
  };
  const Case cases[] = {
      {"relu", FastAct::Relu, 0.0f, 0.0f, [](double v, double, double) { return v < 0 ? 0.0 : v; }},
      {"leaky relu", FastAct::Relu, 0.1f, 0.0f, [](double v, double a, double) { return v < 0 ? a * v : v; }},
      {"logistic", FastAct::Logistic, 0.0f, 0.0f, [](double v, double, double) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"swish", FastAct::Swish, 1.0f, 0.0f, [](double v, double a, double) { return v / (1.0 + std::exp(-a * v)); }},
      {"hardswish", FastAct::HardSwish, 0.0f, 0.0f,
       [](double v, double, double) { return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0); }},
      {"clip", FastAct::Clip, -2.0f, 6.0f, [](double v, double a, double b) { return std::clamp(v, a, b); }},
      {"linear", FastAct::Linear, 0.5f, -1.0f, [](double v, double a, double b) { return a * v + b; }},
      {"hardsigmoid", FastAct::HardSigmoid, 0.2f, 0.5f,
       [](double v, double a, double b) { return std::clamp(a * v + b, 0.0, 1.0); }},
  };
  for (const Case& c : cases) {
    std::vector<float> y = xs;
    cpu::actFast(c.f, c.a, c.b, y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = c.ref(double(xs[i]), double(c.a), double(c.b));
      // float rounding of the inputs and of e^x (expVec): a few ulp; below 1e-30 absolute (e^-100 flushed).
      QVERIFY2(std::abs(y[i] - want) <= 1e-6 * std::abs(want) + 1e-30,
               qPrintable(QString("%1(%2): %3, want %4").arg(c.name).arg(double(xs[i])).arg(double(y[i])).arg(want)));
    }
  }
}

void TestKernelsConv::pointwiseChannelsLast_data() {
  QTest::addColumn<int64_t>("C");
  QTest::addColumn<int64_t>("M");
  QTest::addColumn<QString>("chain");  // operators after the Conv: bn, swish, add (residual), relu, hardswish, clip, leaky
  QTest::addColumn<bool>("nhwcOut");   // a Conv reads the output: it may stay channels-last
  QTest::addColumn<bool>("nhwcRes");   // the residual operand channels-last
  QTest::addColumn<QString>("device");
  QTest::newRow("yolox 16 -> 32, BN + swish, channels-last out") << int64_t{16} << int64_t{32} << "bn swish" << true << false << QString("core0");
  QTest::newRow("16 -> 32, BN + swish, row-major out") << int64_t{16} << int64_t{32} << "bn swish" << false << false << QString("core0");
  QTest::newRow("yolox 16 -> 16, swish + residual (channels-last)") << int64_t{16} << int64_t{16} << "swish add" << true << true << QString("core0");
  QTest::newRow("24 -> 35, residual (row-major) + relu") << int64_t{24} << int64_t{35} << "add relu" << true << false << QString("core0");
  QTest::newRow("67 -> 70, hardswish, row-major out") << int64_t{67} << int64_t{70} << "hardswish" << false << false << QString("core0");
  QTest::newRow("8 -> 19, clip") << int64_t{8} << int64_t{19} << "clip" << true << false << QString("core0");
  QTest::newRow("40 -> 146, leaky relu") << int64_t{40} << int64_t{146} << "leaky" << true << false << QString("core0");
  QTest::newRow("3 -> 5, no chain") << int64_t{3} << int64_t{5} << "" << true << false << QString("core0");
  // Both threads, the blocks of two images split between them, into either layout.
  QTest::newRow("cpu-parallel 16 -> 32, swish + residual, row-major out")
      << int64_t{16} << int64_t{32} << "swish add" << false << true << QString("cpu-parallel");
  QTest::newRow("cpu-parallel 24 -> 35, relu, channels-last out")
      << int64_t{24} << int64_t{35} << "relu" << true << false << QString("cpu-parallel");
}

void TestKernelsConv::pointwiseChannelsLast() {
  // A 1x1 Conv (bias, one group, stride 1) over a channels-last input of 11x13 pixels (40x40 on
  // cpu-parallel), batch 2, with its
  // fused chain, against the definition in double on the row-major values: on a processor with
  // AVX-512 the kernel runs gemmPixels and the chain's vectorised steps, elsewhere oneDNN; the same
  // answer either way.
  QFETCH(int64_t, C);
  QFETCH(int64_t, M);
  QFETCH(QString, chain);
  QFETCH(bool, nhwcOut);
  QFETCH(bool, nhwcRes);
  QFETCH(QString, device);
  // On both threads 40x40 pixels: 17 blocks of 96 pixels per image, enough to split between them.
  const bool par = device == "cpu-parallel";
  const int64_t N = 2, H = par ? 40 : 11, W = par ? 40 : 13, P = H * W;
  const QStringList steps = chain.split(' ', Qt::SkipEmptyParts);
  const Tensor x = random({N, C, H, W}, 41), w = random({M, C, 1, 1}, 42), b = random({M}, 43);
  const Tensor res = random({N, M, H, W}, 44);
  const Tensor bnScale = random({M}, 45), bnBias = random({M}, 46), bnMean = random({M}, 47);
  Tensor bnVar = random({M}, 48);
  for (int64_t m = 0; m < M; ++m) bnVar.data<float>()[m] = 0.5f + std::abs(bnVar.data<float>()[m]);
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", {N, C, H, W}, true);
  const ValueId ri = steps.contains("add") ? addValue(g, "r", {N, M, H, W}, true) : kNone;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
    const ValueId v = addValue(g, name, std::move(shape));
    g.values[static_cast<size_t>(v)].isWeight = true;
    return v;
  };
  const ValueId wi = weight("w", {M, C, 1, 1}), bi = weight("b", {M});
  std::map<ValueId, const Tensor*> feed{{wi, &w}, {bi, &b}};
  ValueId cur = addValue(g, "conv_out", {N, M, H, W});
  addNode(g, "conv", "Conv", {xi, wi, bi}, {cur}, {{"kernel_shape", Attribute{std::vector<int64_t>{1, 1}}}});
  Tensor clipMin = random({1}, 49), clipMax = random({1}, 50);
  clipMin.data<float>()[0] = -0.5f;
  clipMax.data<float>()[0] = 0.75f;
  int k = 0;
  for (const QString& st : steps) {
    const std::string name = st.toStdString() + std::to_string(k++);
    const ValueId next = addValue(g, name + "_out", {N, M, H, W});
    if (st == "bn") {
      const ValueId s = weight(name + "_s", {M}), bb = weight(name + "_b", {M}), mu = weight(name + "_m", {M}),
                    var = weight(name + "_v", {M});
      feed[s] = &bnScale;
      feed[bb] = &bnBias;
      feed[mu] = &bnMean;
      feed[var] = &bnVar;
      addNode(g, name, "BatchNormalization", {cur, s, bb, mu, var}, {next});
    } else if (addPlainStep(g, st, name, cur, ri, next)) {
    } else if (st == "hardswish") {
      addNode(g, name, "HardSwish", {cur}, {next});
    } else if (st == "clip") {
      // Constant bounds with their data in the graph, as the fusion takes a Clip (an activation).
      const ValueId lo = weight(name + "_lo", {1}), hi = weight(name + "_hi", {1});
      for (const auto& [v, t] : {std::pair{lo, &clipMin}, std::pair{hi, &clipMax}}) {
        auto d = TensorData::allocate(sizeof(float));
        std::memcpy(d->mutableData(), t->raw(), sizeof(float));
        g.values[static_cast<size_t>(v)].data = std::move(d);
        feed[v] = t;
      }
      addNode(g, name, "Clip", {cur, lo, hi}, {next});
    } else if (st == "leaky") {
      addNode(g, name, "LeakyRelu", {cur}, {next}, {{"alpha", Attribute{0.25}}});
    }
    cur = next;
  }
  if (nhwcOut)
    addChannelsLastReader(g, cur, "reader");
  else
    g.outputs.push_back(cur);
  g.rebuildIndex();
  const auto groups = fusedGroups(g);
  auto cpu = makeCpuBackend();
  // A Conv alone is no group: its own kernel (the same class), its inputs the node's.
  QCOMPARE(groups.empty(), steps.empty());
  if (!steps.empty()) QCOMPARE(groups[0].ops.size(), size_t(1 + steps.size() + (steps.contains("swish") ? 1 : 0)));
  const std::string dev = device.toStdString();
  auto kern = steps.empty() ? cpu->prepare(g, 0, dev) : cpu->prepareGroup(g, groups[0], dev);
  QVERIFY2(kern.isOk(), kern.message().c_str());
  const Tensor xn = toNhwc(x), rn = nhwcRes ? toNhwc(res) : res;
  feed[xi] = &xn;
  if (ri != kNone) feed[ri] = &rn;
  std::vector<const Tensor*> ins;
  for (ValueId v : steps.empty() ? g.nodes[0].inputs : groups[0].inputs) {
    QVERIFY2(feed.count(v), g.values[static_cast<size_t>(v)].name.c_str());
    ins.push_back(feed[v]);
  }
  Tensor out;
  for (int run = 0; run < 2; ++run) {  // the second run on the kernel's kept weights
    std::vector<Tensor> outs;
    auto st = (*kern)->run(ins, outs);
    QVERIFY2(st.isOk(), st.message().c_str());
    QVERIFY(outs[0].toPlain(out).isOk());
    QCOMPARE(out.shape(), (std::vector<int64_t>{N, M, H, W}));
    if (!nhwcOut) QVERIFY(!outs[0].nhwc());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < P; ++p) {
          double v = b.data<float>()[m], mag = 1 + std::abs(v);
          for (int64_t c = 0; c < C; ++c) {
            const double t = double(w.data<float>()[m * C + c]) * double(x.data<float>()[(n * C + c) * P + p]);
            v += t;
            mag += std::abs(t);
          }
          for (const QString& s : steps) {
            if (s == "bn") {
              const double sc = bnScale.data<float>()[m] / std::sqrt(double(bnVar.data<float>()[m]) + 1e-5);
              v = (v - bnMean.data<float>()[m]) * sc + bnBias.data<float>()[m];
              mag *= std::abs(sc) + 1;
            } else if (s == "swish") {
              v = v / (1 + std::exp(-v));
            } else if (s == "add") {
              v += res.data<float>()[(n * M + m) * P + p];
            } else if (s == "relu") {
              v = std::max(v, 0.0);
            } else if (s == "hardswish") {
              v = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
            } else if (s == "clip") {
              v = std::clamp(v, -0.5, 0.75);
            } else if (s == "leaky") {
              v = v < 0 ? 0.25 * v : v;
            }
          }
          const float got = out.data<float>()[(n * M + m) * P + p];
          QVERIFY2(std::abs(got - v) <= 1e-5 * mag,
                   qPrintable(QString("run %1 n %2 m %3 p %4: %5, want %6").arg(run).arg(n).arg(m).arg(p).arg(double(got)).arg(v)));
        }
  }
}

void TestKernelsConv::depthwiseChannelsLast_data() {
  QTest::addColumn<int64_t>("C");
  QTest::addColumn<int64_t>("k");       // k x k kernel
  QTest::addColumn<int64_t>("stride");
  QTest::addColumn<int64_t>("dil");
  QTest::addColumn<int64_t>("pad");     // on every side
  QTest::addColumn<QString>("chain");   // swish, add (a channels-last residual), relu
  QTest::addColumn<QString>("device");
  // yolox_nano's: 3x3, pad 1, stride 1 and 2, with x*Sigmoid(x); a wider kernel with dilation, no padding
  // and an odd width (the border columns one at a time), and both threads.
  QTest::newRow("16 channels 3x3 stride 1, swish") << int64_t{16} << int64_t{3} << int64_t{1} << int64_t{1} << int64_t{1} << "swish" << QString("core0");
  QTest::newRow("32 channels 3x3 stride 2, swish") << int64_t{32} << int64_t{3} << int64_t{2} << int64_t{1} << int64_t{1} << "swish" << QString("core0");
  QTest::newRow("48 channels 5x5 dilation 2, pad 3, residual + relu") << int64_t{48} << int64_t{5} << int64_t{1} << int64_t{2} << int64_t{3} << "add relu" << QString("core0");
  QTest::newRow("16 channels 3x3 no padding") << int64_t{16} << int64_t{3} << int64_t{1} << int64_t{1} << int64_t{0} << "" << QString("core0");
  QTest::newRow("cpu-parallel 64 channels 3x3 stride 2, swish") << int64_t{64} << int64_t{3} << int64_t{2} << int64_t{1} << int64_t{1} << "swish" << QString("cpu-parallel");
}

void TestKernelsConv::depthwiseChannelsLast() {
  // A depthwise Conv (group = C, bias) over a channels-last input of 23x29 pixels, batch 2, read by a
  // Conv (so that its output may stay channels-last), with its chain, against the definition in double:
  // on a processor with AVX-512 the backend's row loop, elsewhere oneDNN.
  QFETCH(int64_t, C);
  QFETCH(int64_t, k);
  QFETCH(int64_t, stride);
  QFETCH(int64_t, dil);
  QFETCH(int64_t, pad);
  QFETCH(QString, chain);
  QFETCH(QString, device);
  const QStringList steps = chain.split(' ', Qt::SkipEmptyParts);
  const int64_t N = 2, H = 23, W = 29;
  const int64_t OH = (H + 2 * pad - dil * (k - 1) - 1) / stride + 1, OW = (W + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  const Tensor x = random({N, C, H, W}, 51), w = random({C, 1, k, k}, 52), b = random({C}, 53);
  const Tensor res = random({N, C, OH, OW}, 54);
  Graph g;
  g.opsetVersion = 17;
  const ValueId xi = addValue(g, "x", {N, C, H, W}, true);
  const ValueId ri = steps.contains("add") ? addValue(g, "r", {N, C, OH, OW}, true) : kNone;
  const ValueId wi = addValue(g, "w", {C, 1, k, k}), bi = addValue(g, "b", {C});
  g.values[static_cast<size_t>(wi)].isWeight = true;
  g.values[static_cast<size_t>(bi)].isWeight = true;
  ValueId cur = addValue(g, "conv_out", {N, C, OH, OW});
  addNode(g, "conv", "Conv", {xi, wi, bi}, {cur},
          {{"group", Attribute{C}},
           {"kernel_shape", Attribute{std::vector<int64_t>{k, k}}},
           {"strides", Attribute{std::vector<int64_t>{stride, stride}}},
           {"dilations", Attribute{std::vector<int64_t>{dil, dil}}},
           {"pads", Attribute{std::vector<int64_t>{pad, pad, pad, pad}}}});
  int n0 = 0;
  for (const QString& st : steps) {
    const std::string name = st.toStdString() + std::to_string(n0++);
    const ValueId next = addValue(g, name + "_out", {N, C, OH, OW});
    addPlainStep(g, st, name, cur, ri, next);
    cur = next;
  }
  addChannelsLastReader(g, cur, "reader");
  g.rebuildIndex();
  const auto groups = fusedGroups(g);
  auto cpu = makeCpuBackend();
  QCOMPARE(groups.empty(), steps.empty());
  const std::string dev = device.toStdString();
  auto kern = steps.empty() ? cpu->prepare(g, 0, dev) : cpu->prepareGroup(g, groups[0], dev);
  QVERIFY2(kern.isOk(), kern.message().c_str());
  const Tensor xn = toNhwc(x), rn = toNhwc(res);
  std::map<ValueId, const Tensor*> feed{{xi, &xn}, {wi, &w}, {bi, &b}};
  if (ri != kNone) feed[ri] = &rn;
  std::vector<const Tensor*> ins;
  for (ValueId v : steps.empty() ? g.nodes[0].inputs : groups[0].inputs) ins.push_back(feed.at(v));
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outs;
    auto st = (*kern)->run(ins, outs);
    QVERIFY2(st.isOk(), st.message().c_str());
    Tensor out;
    QVERIFY(outs[0].toPlain(out).isOk());
    QCOMPARE(out.shape(), (std::vector<int64_t>{N, C, OH, OW}));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t oy = 0; oy < OH; ++oy)
          for (int64_t ox = 0; ox < OW; ++ox) {
            double v = b.data<float>()[c], mag = 1 + std::abs(v);
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t iy = oy * stride - pad + ky * dil, ix = ox * stride - pad + kx * dil;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const double t = double(w.data<float>()[(c * k + ky) * k + kx]) * double(x.data<float>()[((n * C + c) * H + iy) * W + ix]);
                v += t;
                mag += std::abs(t);
              }
            for (const QString& s : steps) {
              if (s == "swish") v = v / (1 + std::exp(-v));
              if (s == "add") v += res.data<float>()[((n * C + c) * OH + oy) * OW + ox];
              if (s == "relu") v = std::max(v, 0.0);
            }
            const float got = out.data<float>()[((n * C + c) * OH + oy) * OW + ox];
            QVERIFY2(std::abs(got - v) <= 1e-5 * mag,
                     qPrintable(QString("run %1 n %2 c %3 y %4 x %5: %6, want %7").arg(run).arg(n).arg(c).arg(oy).arg(ox).arg(double(got)).arg(v)));
          }
  }
}

QTEST_GUILESS_MAIN(TestKernelsConv)
#include "tst_kernels_conv.moc"
