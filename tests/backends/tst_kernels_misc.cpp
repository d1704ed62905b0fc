// The CPU kernels rewritten for issue 24's per-operator grid (normalisation, Cast, data movement, the
// transcendental functions through libmvec), each path against a naive reference loop written here:
// odd sizes, broadcasting, BitShift counts of the type's width and more, Cast's range limits and NaN,
// reflect pads wider than one element, Trilu diagonals beyond the matrix, repeated scatter indices.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "kernels/vecmath.h"

using namespace partex;

namespace {

using V = std::vector<int64_t>;

Tensor make(DType dt, V shape) {
  auto t = Tensor::make(dt, std::move(shape));
  return std::move(*t);
}

Tensor randomT(DType dt, V shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t = make(dt, std::move(shape));
  t.fillRandom(seed, lo, hi);
  return t;
}

Tensor ints(V shape, const std::vector<int64_t>& v) {
  Tensor t = make(DType::Int64, std::move(shape));
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

/// Runs one node on core0 with these inputs (all graph inputs of their own dtype and shape).
Result<std::vector<Tensor>> runNode(const std::string& op, const std::vector<const Tensor*>& ins,
                                    std::map<std::string, Attribute> attrs = {}, int nOut = 1) {
  std::vector<test::NodeInput> decl;
  for (const Tensor* t : ins) decl.push_back({t->dtype(), t->shape()});
  Graph g = test::oneNodeGraph(op, decl, nOut, std::move(attrs));
  auto cpu = makeCpuBackend();
  auto k = cpu->prepare(g, 0, "core0");
  if (!k) return Error{k.message()};
  std::vector<Tensor> outs;
  if (Status s = (*k)->run(ins, outs); !s) return Error{s.message()};
  for (Tensor& o : outs) {
    Tensor plain;
    if (Status s = o.toPlain(plain); !s) return Error{s.message()};
    o = std::move(plain);
  }
  return outs;
}

/// Largest |got - want| / max(1, |want|) over float outputs, infinite where exactly one side is NaN or an
/// infinity differs; `where` names the worst element.
double worstRel(const Tensor& got, const std::vector<double>& want, std::string& where) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.data<float>()[i], w = want[i];
    double e = 0;
    if (std::isnan(w) || std::isnan(g))
      e = std::isnan(w) == std::isnan(g) ? 0 : INFINITY;
    else if (std::isinf(w) || std::isinf(g))
      e = g == w ? 0 : INFINITY;
    else
      e = std::abs(g - w) / std::max(1.0, std::abs(w));
    if (e > worst || (i == 0 && e == 0)) {
      if (e > worst) worst = e;
      where = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
    }
  }
  return worst;
}

#define CHECK_CLOSE(got, want, tol)                                                        \
  do {                                                                                     \
    std::string where_;                                                                    \
    const double w_ = worstRel(got, want, where_);                                         \
    QVERIFY2(w_ <= (tol), ("worst relative error " + std::to_string(w_) + " at " + where_).c_str()); \
  } while (0)

}  // namespace

class TstKernelsMisc : public QObject {
  Q_OBJECT
 private slots:
  /// Inference BatchNormalization (now a direct loop) against the formula in double: ranks 2, 4 and 5,
  /// odd channel and spatial sizes.
  void batchNorm_data() {
    QTest::addColumn<V>("shape");
    QTest::newRow("rank 2 [3,6]") << V{3, 6};
    QTest::newRow("rank 4 odd [2,5,7,3]") << V{2, 5, 7, 3};
    QTest::newRow("rank 5 [1,3,2,3,5]") << V{1, 3, 2, 3, 5};
  }
  void batchNorm() {
    QFETCH(V, shape);
    const int64_t C = shape[1];
    const Tensor x = randomT(DType::Float32, shape, 1, -3, 3), sc = randomT(DType::Float32, {C}, 2),
                 b = randomT(DType::Float32, {C}, 3), mean = randomT(DType::Float32, {C}, 4),
                 var = randomT(DType::Float32, {C}, 5, 0.1, 2.0);
    const double eps = 1e-3;
    auto r = runNode("BatchNormalization", {&x, &sc, &b, &mean, &var}, {{"epsilon", Attribute{eps}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t S = x.numElements() / (shape[0] * C);
    std::vector<double> want(static_cast<size_t>(x.numElements()));
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const int64_t c = (i / S) % C;
      want[static_cast<size_t>(i)] = (double(x.data<float>()[i]) - mean.data<float>()[c]) /
                                         std::sqrt(double(var.data<float>()[c]) + double(float(eps))) *
                                         sc.data<float>()[c] +
                                     b.data<float>()[c];
    }
    QCOMPARE(r->at(0).shape(), shape);
    CHECK_CLOSE(r->at(0), want, 1e-5);
  }

  /// InstanceNormalization (vectorised sums) against two-pass statistics in double.
  void instanceNorm_data() {
    QTest::addColumn<V>("shape");
    QTest::newRow("rank 4 [2,3,5,7]") << V{2, 3, 5, 7};
    QTest::newRow("rank 3 prime [1,4,37]") << V{1, 4, 37};
  }
  void instanceNorm() {
    QFETCH(V, shape);
    const int64_t N = shape[0], C = shape[1];
    const Tensor x = randomT(DType::Float32, shape, 11, 2, 5), sc = randomT(DType::Float32, {C}, 12),
                 b = randomT(DType::Float32, {C}, 13);
    auto r = runNode("InstanceNormalization", {&x, &sc, &b}, {{"epsilon", Attribute{1e-5}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t S = x.numElements() / (N * C);
    std::vector<double> want(static_cast<size_t>(x.numElements()));
    for (int64_t p = 0; p < N * C; ++p) {
      const float* q = x.data<float>() + p * S;
      double m = 0, v = 0;
      for (int64_t j = 0; j < S; ++j) m += q[j];
      m /= double(S);
      for (int64_t j = 0; j < S; ++j) v += (q[j] - m) * (q[j] - m);
      v /= double(S);
      for (int64_t j = 0; j < S; ++j)
        want[static_cast<size_t>(p * S + j)] =
            (q[j] - m) / std::sqrt(v + double(float(1e-5))) * sc.data<float>()[p % C] + b.data<float>()[p % C];
    }
    CHECK_CLOSE(r->at(0), want, 1e-5);
  }

  /// Cast float32 to int8, uint8, int32 and int64 (whose vector path widens through int32 until a block
  /// holds a larger value, as 1e10 here): truncation toward zero; NaN, infinities and values that do
  /// not truncate into the type give 0 (the conversion itself would be undefined behaviour), by hand.
  void castToInt() {
    const std::vector<float> v{0.f, -0.7f, 2.5f, -2.5f, 126.9f, 127.f, 127.9f, 128.f, -128.f, -128.9f, -129.f,
                               255.f, 255.9f, 256.f, -1.f, 1e10f, -1e10f, NAN, INFINITY, -INFINITY,
                               2147483520.f, 2147483648.f, -2147483648.f};
    Tensor x = make(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), x.data<float>());
    const std::vector<int64_t> i8{0, 0, 2, -2, 126, 127, 127, 0, -128, -128, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const std::vector<int64_t> u8{0, 0, 2, 0, 126, 127, 127, 128, 0, 0, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const std::vector<int64_t> i32{0,   0,          2, -2, 126, 127, 127,        128, -128,          -128, -129, 255,
                                   255, 256,        -1, 0,  0,   0,   0,          0,   2147483520,    0,    0};
    // (-2^31 is representable but lies on the open bound, lowest - 1 rounding to it in float: 0.)
    const std::vector<int64_t> i64{0,   0,   2,  -2, 126,          127,          127, 128, -128, -128, -129, 255,
                                   255, 256, -1, 10000000000, -10000000000, 0,   0,   0,    2147483520, 2147483648,
                                   -2147483648};
    struct Want {
      DType dt;
      int64_t onnx;
      const std::vector<int64_t>* v;
    } cases[] = {{DType::Int8, 3, &i8}, {DType::UInt8, 2, &u8}, {DType::Int32, 6, &i32}, {DType::Int64, 7, &i64}};
    for (const Want& c : cases) {
      std::vector<test::NodeInput> decl{{DType::Float32, x.shape()}};
      Graph g = test::oneNodeGraph("Cast", decl, 1, {{"to", Attribute{c.onnx}}});
      g.values[static_cast<size_t>(g.outputs[0])].dtype = c.dt;
      auto cpu = makeCpuBackend();
      auto k = cpu->prepare(g, 0, "core0");
      QVERIFY2(k.isOk(), k.message().c_str());
      std::vector<Tensor> outs;
      Status s = (*k)->run({&x}, outs);
      QVERIFY2(s.isOk(), s.message().c_str());
      QCOMPARE(outs.at(0).dtype(), c.dt);
      for (size_t i = 0; i < v.size(); ++i)
        QVERIFY2(outs[0].valueAsInt(static_cast<int64_t>(i)) == (*c.v)[i],
                 (std::string(dtypeName(c.dt)) + " of " + std::to_string(v[i]) + ": " +
                  std::to_string(outs[0].valueAsInt(static_cast<int64_t>(i))))
                     .c_str());
    }
  }

  /// Cast between float32 and float16 (and CastLike to float16), against references written here from
  /// the binary16 format: float16 -> float32 for all 65536 bit patterns (the value by its fields, NaN
  /// staying NaN with its sign), and float32 -> float16 rounded to nearest, ties to even, over every
  /// finite float16 value, the exact midpoints to its neighbour and the floats either side of them, the
  /// overflow bound 65520, subnormals, zeros, infinities and NaN.
  void castFloat16() {
    auto runCast = [](const Tensor& x, DType to, int64_t onnx, bool like) -> Tensor {
      std::vector<test::NodeInput> decl{{x.dtype(), x.shape()}};
      if (like) decl.push_back({to, {1}});
      Graph g = like ? test::oneNodeGraph("CastLike", decl, 1) : test::oneNodeGraph("Cast", decl, 1, {{"to", Attribute{onnx}}});
      g.values[static_cast<size_t>(g.outputs[0])].dtype = to;
      auto cpu = makeCpuBackend();
      auto k = cpu->prepare(g, 0, "core0");
      if (!k) qFatal("%s", k.message().c_str());
      std::vector<Tensor> outs;
      Tensor target = make(to, {1});
      std::vector<const Tensor*> ins{&x};
      if (like) ins.push_back(&target);
      if (Status st = (*k)->run(ins, outs); !st) qFatal("%s", st.message().c_str());
      return std::move(outs.at(0));
    };
    // The value of binary16 bits by the format's fields.
    auto value = [](uint16_t h) {
      const int e = (h >> 10) & 31, m = h & 1023;
      const double mag = e == 31 ? (m ? std::nan("") : INFINITY) : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -mag : mag;
    };
    Tensor all = make(DType::Float16, {65536});
    for (int h = 0; h < 65536; ++h) static_cast<uint16_t*>(all.raw())[h] = static_cast<uint16_t>(h);
    const Tensor f = runCast(all, DType::Float32, 1, false);
    QCOMPARE(f.dtype(), DType::Float32);
    for (int h = 0; h < 65536; ++h) {
      const double want = value(static_cast<uint16_t>(h));
      const float got = f.data<float>()[h];
      if (std::isnan(want))
        QVERIFY2(std::isnan(got) && std::signbit(got) == bool(h & 0x8000), qPrintable(QString::number(h, 16)));
      else
        QVERIFY2(double(got) == want && std::signbit(got) == std::signbit(want), qPrintable(QString::number(h, 16)));
    }
    const Tensor viaLike = runCast(all, DType::Float32, 0, true);  // CastLike to float32
    QCOMPARE(std::memcmp(viaLike.raw(), f.raw(), 65536 * 4), 0);
    // The select formulas a CPU without F16C runs (here the kernel takes F16C's instructions).
    for (int h = 0; h < 65536; ++h) {
      const float sel = cpu::f16BitsToF32(static_cast<uint16_t>(h)), fc = f.data<float>()[h];
      QVERIFY2(std::isnan(fc) ? std::isnan(sel) && std::signbit(sel) == std::signbit(fc)
                              : std::memcmp(&sel, &fc, 4) == 0,
               qPrintable(QString::number(h, 16)));
    }

    // float32 -> float16: e = max(floor(log2 |x|), -14), q = |x| / 2^(e - 10) rounded half to even, the
    // bits ((e + 15) << 10) + q - 1024 (a carry into the next binade and the subnormals included).
    auto ref = [](float x) -> uint16_t {
      const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
      if (std::isnan(x)) return sign | 0x7e00;
      const double a = std::fabs(double(x));
      if (a >= 65520.0) return sign | 0x7c00;
      if (a == 0) return sign;
      int k = 0;
      std::frexp(a, &k);
      const int e = std::max(k - 1, -14);
      const double q = std::nearbyint(std::ldexp(a, 10 - e));
      return static_cast<uint16_t>(sign | (((e + 15) << 10) + static_cast<int>(q) - 1024));
    };
    std::vector<float> v{0.f, -0.f, INFINITY, -INFINITY, NAN, -NAN, 65504.f, 65519.99f, 65520.f, 1e9f, -1e9f,
                         std::ldexp(1.f, -24), std::ldexp(1.f, -25), std::ldexp(1.5f, -25), std::ldexp(1.f, -26),
                         std::ldexp(1.f, -14), 1e-30f, 0.47892547f, 3.14159265f};
    for (int h = 0; h < 0x7c00; ++h) {  // each finite magnitude, its midpoint to the next, either side
      const double lo = value(static_cast<uint16_t>(h)), hi = h + 1 < 0x7c00 ? value(static_cast<uint16_t>(h + 1)) : 65536.0;
      const float mid = static_cast<float>((lo + hi) / 2);  // exact: 11 significant bits and one more
      for (float f : {static_cast<float>(lo), mid, std::nextafter(mid, 0.f), std::nextafter(mid, INFINITY)}) {
        v.push_back(f);
        v.push_back(-f);
      }
    }
    Tensor x = make(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), x.data<float>());
    for (bool like : {false, true}) {
      const Tensor h = runCast(x, DType::Float16, 10, like);
      QCOMPARE(h.dtype(), DType::Float16);
      const auto* got = static_cast<const uint16_t*>(h.raw());
      int64_t bad = 0;
      for (size_t i = 0; i < v.size(); ++i)
        if (got[i] != ref(v[i]) && bad++ < 5)
          qWarning("%.9g: 0x%04x, expected 0x%04x", double(v[i]), unsigned(got[i]), unsigned(ref(v[i])));
      QCOMPARE(bad, int64_t{0});
    }
    for (float f : v) QCOMPARE(cpu::f32ToF16Bits(f), ref(f));
  }

  /// BitShift on every unsigned type, both directions, counts from 0 past the type's width (which give
  /// 0), broadcast both ways, against a reference that shifts in 64 bits.
  void bitShift_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("direction");
    for (DType dt : {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64})
      for (const char* d : {"LEFT", "RIGHT"})
        QTest::newRow((std::string(dtypeName(dt)) + " " + d).c_str()) << int(dt) << QString(d);
  }
  void bitShift() {
    QFETCH(int, dtype);
    QFETCH(QString, direction);
    const auto dt = static_cast<DType>(dtype);
    const int64_t bits = tensorElementSize(dt) * 8;
    Tensor a = make(dt, {3, 1, 7}), b = make(dt, {1, 5, 1});
    const uint64_t vals[] = {0, 1, 3, 0x80, 0xff, 0x1234, 0xdeadbeef, 0x8000000000000001ull, ~0ull, 0x5a5a, 7,
                             0x7f, 0x100, 2, 0xf0f0f0f0f0f0f0f0ull, 9, 0x40, 1, 0xabcdef, 6, 5};
    const int64_t counts[] = {0, 1, bits - 1, bits, std::min<int64_t>(bits + 5, dt == DType::UInt8 ? 255 : 200)};
    auto put = [&](Tensor& t, int64_t i, uint64_t v) {
      switch (dt) {
        case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
        case DType::UInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
        case DType::UInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
        default: t.data<uint64_t>()[i] = v; break;
      }
    };
    auto get = [&](const Tensor& t, int64_t i) -> uint64_t {
      switch (dt) {
        case DType::UInt8: return t.data<uint8_t>()[i];
        case DType::UInt16: return t.data<uint16_t>()[i];
        case DType::UInt32: return t.data<uint32_t>()[i];
        default: return t.data<uint64_t>()[i];
      }
    };
    for (int64_t i = 0; i < 21; ++i) put(a, i, vals[i]);
    for (int64_t i = 0; i < 5; ++i) put(b, i, static_cast<uint64_t>(counts[i]));
    auto r = runNode("BitShift", {&a, &b}, {{"direction", Attribute{direction.toStdString()}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    QCOMPARE(r->at(0).shape(), (V{3, 5, 7}));
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 7; ++k) {
          const uint64_t x = get(a, i * 7 + k), s = get(b, j);
          uint64_t want = 0;
          if (s < static_cast<uint64_t>(bits)) want = (direction == "LEFT" ? x << s : x >> s) & mask;
          QCOMPARE(get(r->at(0), (i * 5 + j) * 7 + k), want);
        }
  }

  /// Sinh, Cosh, Asinh, Acosh, Atanh (libmvec) and Shrink (a vector select) against double libm over their
  /// domains, edges and special values (NaN, infinities, out of domain), an odd count so that a vector
  /// tail runs.
  void unaryMath_data() {
    QTest::addColumn<QString>("op");
    for (const char* op : {"Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Shrink"}) QTest::newRow(op) << QString(op);
  }
  void unaryMath() {
    QFETCH(QString, op);
    const std::string o = op.toStdString();
    std::vector<float> v;
    for (int i = -400; i <= 400; ++i) v.push_back(static_cast<float>(i) * 0.0237f);  // [-9.5, 9.5]
    for (float s : {0.f, -0.f, 1e-6f, -1e-6f, 0.5f, 0.999999f, -0.999999f, 1.f, -1.f, 1.0000001f, 88.f, 89.f, 89.5f,
                    -89.5f, 1e18f, 1e30f, -1e30f, NAN, INFINITY, -INFINITY, 3e-39f})
      v.push_back(s);
    Tensor x = make(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), x.data<float>());
    const double lambd = 0.7, bias = 0.25;
    std::map<std::string, Attribute> attrs;
    if (o == "Shrink") attrs = {{"lambd", Attribute{lambd}}, {"bias", Attribute{bias}}};
    auto r = runNode(o, {&x}, attrs);
    QVERIFY2(r.isOk(), r.message().c_str());
    std::vector<double> want;
    for (float f : v) {
      const double d = f;
      if (o == "Sinh") want.push_back(double(float(std::sinh(d))));
      if (o == "Cosh") want.push_back(double(float(std::cosh(d))));
      if (o == "Asinh") want.push_back(std::asinh(d));
      if (o == "Acosh") want.push_back(std::acosh(d));
      if (o == "Atanh") want.push_back(std::atanh(d));
      if (o == "Shrink") want.push_back(d < -lambd ? d + bias : d > lambd ? d - bias : 0.0);
    }
    // A few float ulp: libmvec's documented accuracy (glibc manual, "Errors in Math Functions").
    CHECK_CLOSE(r->at(0), want, o == "Shrink" ? 1e-7 : 4e-6);
  }

  /// Pow through libmvec's powf, broadcast both ways and with a scalar exponent: negative bases with
  /// integer and fractional exponents, zero bases, NaN, against std::pow in double.
  void power() {
    Tensor a = make(DType::Float32, {3, 1, 6}), b = make(DType::Float32, {1, 5, 1});
    const float av[] = {2.f, -2.f, 0.f, 0.5f, -0.f, 10.f, 1.f, NAN, -3.f, 1.5f, 100.f, 7.3f,
                        -1.f, 0.01f, INFINITY, -INFINITY, 3.f, 1e-3f};
    const float bv[] = {3.f, -1.f, 0.5f, 0.f, 2.5f};
    std::copy(std::begin(av), std::end(av), a.data<float>());
    std::copy(std::begin(bv), std::end(bv), b.data<float>());
    auto r = runNode("Pow", {&a, &b});
    QVERIFY2(r.isOk(), r.message().c_str());
    QCOMPARE(r->at(0).shape(), (V{3, 5, 6}));
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 6; ++k) want.push_back(double(float(std::pow(double(av[i * 6 + k]), double(bv[j])))));
    CHECK_CLOSE(r->at(0), want, 4e-6);
    // A scalar exponent of the same shape path (not 2 or 3, which are products).
    Tensor e = make(DType::Float32, {});
    e.data<float>()[0] = 1.7f;
    auto r2 = runNode("Pow", {&a, &e});
    QVERIFY2(r2.isOk(), r2.message().c_str());
    std::vector<double> want2;
    for (float f : av) want2.push_back(double(float(std::pow(double(f), double(1.7f)))));
    CHECK_CLOSE(r2->at(0), want2, 4e-6);
  }

  /// Mean of three and of one float32 operands of one shape (the sum's pairwise path, then divided), and
  /// of broadcast operands (the row path), against the sum divided by the count in double.
  void meanOfOperands() {
    const Tensor a = randomT(DType::Float32, {3, 37, 5}, 1), b = randomT(DType::Float32, {3, 37, 5}, 2),
                 c = randomT(DType::Float32, {3, 37, 5}, 3), row = randomT(DType::Float32, {5}, 4);
    auto r = runNode("Mean", {&a, &b, &c});
    QVERIFY2(r.isOk(), r.message().c_str());
    std::vector<double> want;
    for (int64_t i = 0; i < a.numElements(); ++i)
      want.push_back((double(a.data<float>()[i]) + b.data<float>()[i] + c.data<float>()[i]) / 3.0);
    CHECK_CLOSE(r->at(0), want, 2e-7);
    auto one = runNode("Mean", {&a});
    QVERIFY2(one.isOk(), one.message().c_str());
    std::vector<double> same(a.data<float>(), a.data<float>() + a.numElements());
    CHECK_CLOSE(one->at(0), same, 0);
    auto bc = runNode("Mean", {&a, &row});
    QVERIFY2(bc.isOk(), bc.message().c_str());
    std::vector<double> wantBc;
    for (int64_t i = 0; i < a.numElements(); ++i) wantBc.push_back((double(a.data<float>()[i]) + row.data<float>()[i % 5]) / 2.0);
    CHECK_CLOSE(bc->at(0), wantBc, 2e-7);
  }

  /// Softmax over a causal mask (masked logits -1e4, as generated and exported decoders add them): the
  /// masked probabilities are exactly 0 and none is subnormal (a subnormal probability made the
  /// attention's MatMul 80x slower); Exp flushes below ln(FLT_MIN) and is exact enough just above it.
  void softmaxMaskedRowsAreZero() {
    Tensor x = make(DType::Float32, {2, 3, 17});
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const int64_t col = i % 17, row = (i / 17) % 3;
      x.data<float>()[i] = col > row * 5 + 2 ? -1e4f : 0.1f * static_cast<float>(col - row);
    }
    auto r = runNode("Softmax", {&x}, {{"axis", Attribute{int64_t{-1}}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    for (int64_t i = 0; i < x.numElements(); ++i) {
      const float y = r->at(0).data<float>()[i];
      QVERIFY2(std::fpclassify(y) != FP_SUBNORMAL, qPrintable(QString("element %1 subnormal").arg(i)));
      if (x.data<float>()[i] == -1e4f) QCOMPARE(y, 0.0f);
    }
    Tensor e = make(DType::Float32, {5});
    const float ev[] = {-1e4f, -104.f, -87.5f, -87.f, -10.f};
    std::copy(std::begin(ev), std::end(ev), e.data<float>());
    auto ex = runNode("Exp", {&e});
    QVERIFY2(ex.isOk(), ex.message().c_str());
    for (int i = 0; i < 3; ++i) QCOMPARE(ex->at(0).data<float>()[i], 0.0f);
    CHECK_CLOSE(ex->at(0), (std::vector<double>{0, 0, 0, std::exp(-87.0), std::exp(-10.0)}), 1e-6);
  }

  /// Trilu, upper and lower, diagonals from below the matrix to beyond it (and a huge one), float32 and
  /// int8, against the definition element by element.
  void trilu_data() {
    QTest::addColumn<int64_t>("k");
    QTest::addColumn<bool>("upper");
    for (int64_t k : {int64_t{-9}, int64_t{-2}, int64_t{0}, int64_t{3}, int64_t{8},
                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()})
      for (bool up : {true, false})
        QTest::newRow((std::to_string(k) + (up ? " upper" : " lower")).c_str()) << k << up;
  }
  void trilu() {
    QFETCH(int64_t, k);
    QFETCH(bool, upper);
    for (DType dt : {DType::Float32, DType::Int8}) {
      const Tensor x = randomT(dt, {2, 5, 7}, 21, 1, 100);
      const Tensor kt = ints({}, {k});
      auto r = runNode("Trilu", {&x, &kt}, {{"upper", Attribute{int64_t{upper ? 1 : 0}}}});
      QVERIFY2(r.isOk(), r.message().c_str());
      for (int64_t m = 0; m < 2; ++m)
        for (int64_t i = 0; i < 5; ++i)
          for (int64_t j = 0; j < 7; ++j) {
            const int64_t idx = (m * 5 + i) * 7 + j;
            const bool keep = upper ? j - i >= k : j - i <= k;  // (j - i is small: no overflow)
            const double want = keep ? x.valueAsDouble(idx) : 0.0;
            QCOMPARE(r->at(0).valueAsDouble(idx), want);
          }
    }
  }

  /// ScatterElements along the last axis and a middle one, negative and repeated indices (the last
  /// update wins for "none"), reductions add and mul, and an out-of-range index refused.
  void scatterElements_data() {
    QTest::addColumn<int64_t>("axis");
    QTest::addColumn<QString>("reduction");
    for (int64_t ax : {int64_t{2}, int64_t{1}, int64_t{-1}})
      for (const char* red : {"none", "add", "mul"})  // (max and min came in opset 18; the graph is 17)
        QTest::newRow((std::to_string(ax) + " " + red).c_str()) << ax << QString(red);
  }
  void scatterElements() {
    QFETCH(int64_t, axis);
    QFETCH(QString, reduction);
    const V xs{3, 4, 9}, is{3, 3, 5};
    const Tensor x = randomT(DType::Float32, xs, 31);
    const Tensor u = randomT(DType::Float32, is, 32);
    const int64_t ax = axis < 0 ? axis + 3 : axis, dim = xs[static_cast<size_t>(ax)];
    Tensor idx = make(DType::Int64, is);
    for (int64_t i = 0; i < idx.numElements(); ++i) idx.data<int64_t>()[i] = (i * 7) % (2 * dim) - dim;  // [-dim, dim)
    auto r = runNode("ScatterElements", {&x, &idx, &u},
                     {{"axis", Attribute{axis}}, {"reduction", Attribute{reduction.toStdString()}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    std::vector<double> want(x.data<float>(), x.data<float>() + x.numElements());
    for (int64_t i = 0; i < is[0]; ++i)
      for (int64_t j = 0; j < is[1]; ++j)
        for (int64_t k = 0; k < is[2]; ++k) {
          const int64_t n = (i * is[1] + j) * is[2] + k;
          int64_t t = idx.data<int64_t>()[n];
          if (t < 0) t += dim;
          int64_t c[3] = {i, j, k};
          c[ax] = t;
          double& d = want[static_cast<size_t>((c[0] * xs[1] + c[1]) * xs[2] + c[2])];
          const float uu = u.data<float>()[n];
          d = reduction == "none" ? uu : reduction == "add" ? double(float(d) + uu) : double(float(d) * uu);
        }
    CHECK_CLOSE(r->at(0), want, 1e-6);
    idx.data<int64_t>()[4] = dim;
    auto bad = runNode("ScatterElements", {&x, &idx, &u}, {{"axis", Attribute{axis}}});
    QVERIFY(!bad.isOk());
    QVERIFY2(bad.message().find("out of range") != std::string::npos, bad.message().c_str());
  }

  /// Gather along the last axis (the typed per-element path) and a middle one, negative indices, int8,
  /// float32 and int64 data, against index arithmetic; an index out of range refused.
  void gatherAxis_data() {
    QTest::addColumn<int64_t>("axis");
    QTest::newRow("last axis") << int64_t{-1};
    QTest::newRow("middle axis") << int64_t{1};
  }
  void gatherAxis() {
    QFETCH(int64_t, axis);
    const V xs{2, 5, 7};
    const int64_t ax = axis < 0 ? axis + 3 : axis, dim = xs[static_cast<size_t>(ax)];
    const Tensor idx = ints({2, 3}, {0, -1, 2, dim - 1, -dim, 1});
    for (DType dt : {DType::Int8, DType::Float32, DType::Int64}) {
      const Tensor x = randomT(dt, xs, 81, -100, 100);
      auto r = runNode("Gather", {&x, &idx}, {{"axis", Attribute{axis}}});
      QVERIFY2(r.isOk(), r.message().c_str());
      V os(xs.begin(), xs.begin() + ax);
      os.insert(os.end(), {2, 3});
      os.insert(os.end(), xs.begin() + ax + 1, xs.end());
      QCOMPARE(r->at(0).shape(), os);
      const int64_t outer = ax == 2 ? 10 : 2, inner = ax == 2 ? 1 : 7;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t t = idx.data<int64_t>()[j];
            if (t < 0) t += dim;
            QCOMPARE(r->at(0).valueAsDouble((o * 6 + j) * inner + i), x.valueAsDouble((o * dim + t) * inner + i));
          }
    }
    const Tensor x = randomT(DType::Float32, xs, 82);
    const Tensor badIdx = ints({1}, {dim});
    QVERIFY(!runNode("Gather", {&x, &badIdx}, {{"axis", Attribute{axis}}}).isOk());
  }

  /// Tile: int8 and float32, repeats of 0, 1 and more on odd sizes, against index arithmetic.
  void tile_data() {
    QTest::addColumn<V>("shape");
    QTest::addColumn<V>("reps");
    QTest::newRow("[2,3,5] x [2,1,3]") << V{2, 3, 5} << V{2, 1, 3};
    QTest::newRow("[1,3,1,4] x [2,2,3,1]") << V{1, 3, 1, 4} << V{2, 2, 3, 1};
    QTest::newRow("[3,2] x [1,0]") << V{3, 2} << V{1, 0};
    QTest::newRow("[7] x [4]") << V{7} << V{4};
  }
  void tile() {
    QFETCH(V, shape);
    QFETCH(V, reps);
    for (DType dt : {DType::Int8, DType::Float32}) {
      const Tensor x = randomT(dt, shape, 41, -100, 100);
      const Tensor rt = ints({static_cast<int64_t>(reps.size())}, reps);
      auto r = runNode("Tile", {&x, &rt});
      QVERIFY2(r.isOk(), r.message().c_str());
      V os;
      for (size_t d = 0; d < shape.size(); ++d) os.push_back(shape[d] * reps[d]);
      QCOMPARE(r->at(0).shape(), os);
      for (int64_t i = 0; i < r->at(0).numElements(); ++i) {
        int64_t rem = i, src = 0, mul = 1;
        for (size_t d = shape.size(); d-- > 0;) {
          src += (rem % os[d]) % shape[d] * mul;
          rem /= os[d];
          mul *= shape[d];
        }
        QCOMPARE(r->at(0).valueAsDouble(i), x.valueAsDouble(src));
      }
    }
  }

  /// Pad in edge and reflect modes (pads wider than one element, on several axes, mixed with negative
  /// pads) and constant, int8 and float32, against the coordinate mapping written out.
  void pad_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<V>("shape");
    QTest::addColumn<V>("pads");
    for (const char* m : {"reflect", "edge", "constant"}) {
      QTest::newRow((std::string(m) + " last axis 3+2").c_str()) << QString(m) << V{2, 3, 7} << V{0, 0, 3, 0, 0, 2};
      QTest::newRow((std::string(m) + " H and W 2..4").c_str()) << QString(m) << V{1, 2, 5, 6} << V{0, 0, 2, 4, 0, 0, 3, 2};
      QTest::newRow((std::string(m) + " outer only").c_str()) << QString(m) << V{4, 5, 3} << V{3, 0, 0, 2, 0, 0};
      QTest::newRow((std::string(m) + " negative with positive").c_str())
          << QString(m) << V{3, 9} << V{-1, 4, 2, -3};
    }
  }
  void pad() {
    QFETCH(QString, mode);
    QFETCH(V, shape);
    QFETCH(V, pads);
    const int64_t r = static_cast<int64_t>(shape.size());
    for (DType dt : {DType::Int8, DType::Float32}) {
      const Tensor x = randomT(dt, shape, 51, -100, 100);
      const Tensor pt = ints({2 * r}, pads);
      auto res = runNode("Pad", {&x, &pt}, {{"mode", Attribute{mode.toStdString()}}});
      QVERIFY2(res.isOk(), res.message().c_str());
      V os;
      for (int64_t d = 0; d < r; ++d) os.push_back(shape[size_t(d)] + pads[size_t(d)] + pads[size_t(d + r)]);
      QCOMPARE(res->at(0).shape(), os);
      for (int64_t i = 0; i < res->at(0).numElements(); ++i) {
        int64_t rem = i, src = 0, mul = 1;
        bool inside = true;
        for (int64_t d = r; d-- > 0;) {
          const int64_t n = shape[size_t(d)];
          int64_t c = rem % os[size_t(d)] - pads[size_t(d)];
          rem /= os[size_t(d)];
          if (c < 0 || c >= n) {
            if (mode == "constant") inside = false;
            else if (mode == "edge") c = c < 0 ? 0 : n - 1;
            else {  // reflect: mirror without repeating the edge, as often as needed
              while (c < 0 || c >= n) c = c < 0 ? -c : 2 * (n - 1) - c;
            }
          }
          src += c * mul;
          mul *= n;
        }
        QCOMPARE(res->at(0).valueAsDouble(i), inside ? x.valueAsDouble(src) : 0.0);
      }
    }
  }

  /// SpaceToDepth, blocks 2 and 3, odd channels and batch 2, against the DCR index formula.
  void spaceToDepth_data() {
    QTest::addColumn<V>("shape");
    QTest::addColumn<int64_t>("block");
    QTest::newRow("[2,3,4,6] b2") << V{2, 3, 4, 6} << int64_t{2};
    QTest::newRow("[1,5,9,3] b3") << V{1, 5, 9, 3} << int64_t{3};
    // Block 2's deinterleaving pass over rows of a vector body and a tail.
    QTest::newRow("[2,3,4,70] b2") << V{2, 3, 4, 70} << int64_t{2};
  }
  void spaceToDepth() {
    QFETCH(V, shape);
    QFETCH(int64_t, block);
    const Tensor x = randomT(DType::Float32, shape, 61);
    auto r = runNode("SpaceToDepth", {&x}, {{"blocksize", Attribute{block}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3], b = block, h = H / b, w = W / b;
    QCOMPARE(r->at(0).shape(), (V{N, C * b * b, h, w}));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oc = 0; oc < C * b * b; ++oc)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t xx = 0; xx < w; ++xx) {
            const int64_t b1 = oc / (b * C), b2 = (oc / C) % b, c = oc % C;
            QCOMPARE(r->at(0).data<float>()[((n * C * b * b + oc) * h + y) * w + xx],
                     x.data<float>()[((n * C + c) * H + y * b + b1) * W + xx * b + b2]);
          }
  }

  /// Resize nearest on the plain layout (half_pixel, round_prefer_floor: the defaults) against ONNX's
  /// index formula: 2x (each value stored twice), 3x (rows copied from the row above), a downscale and
  /// an odd output width (the gather), values copied exactly (infinities and NaN included).
  void resizeNearest_data() {
    QTest::addColumn<V>("shape");
    QTest::addColumn<double>("scale");
    QTest::newRow("2x [1,3,5,7]") << V{1, 3, 5, 7} << 2.0;
    QTest::newRow("2x [2,2,3,33]") << V{2, 2, 3, 33} << 2.0;
    QTest::newRow("3x [1,2,4,6]") << V{1, 2, 4, 6} << 3.0;
    QTest::newRow("0.5x [2,2,8,9]") << V{2, 2, 8, 9} << 0.5;
    QTest::newRow("1.5x [1,3,5,7]") << V{1, 3, 5, 7} << 1.5;
  }
  void resizeNearest() {
    QFETCH(V, shape);
    QFETCH(double, scale);
    Tensor x = randomT(DType::Float32, shape, 81);
    float* px = static_cast<float*>(x.raw());
    px[1] = std::numeric_limits<float>::infinity();
    px[2] = -std::numeric_limits<float>::infinity();
    px[3] = std::numeric_limits<float>::quiet_NaN();
    Tensor sc = std::move(*Tensor::make(DType::Float32, {4}));
    const float scales[4] = {1, 1, static_cast<float>(scale), static_cast<float>(scale)};
    std::memcpy(sc.raw(), scales, sizeof scales);
    auto r = runNode("Resize", {&x, &sc}, {{"mode", Attribute{std::string("nearest")}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t P = shape[0] * shape[1], H = shape[2], W = shape[3];
    const int64_t OH = static_cast<int64_t>(std::floor(double(H) * scale)),
                  OW = static_cast<int64_t>(std::floor(double(W) * scale));
    QCOMPARE(r->at(0).shape(), (V{shape[0], shape[1], OH, OW}));
    auto src = [&](int64_t o, int64_t in) {
      const double xo = (double(o) + 0.5) / scale - 0.5;
      const double v = xo - std::floor(xo) == 0.5 ? std::floor(xo) : std::round(xo);
      return std::clamp<int64_t>(static_cast<int64_t>(v), 0, in - 1);
    };
    int64_t bad = 0;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const float want = px[(p * H + src(oy, H)) * W + src(ox, W)];
          const float got = r->at(0).data<float>()[(p * OH + oy) * OW + ox];
          bad += std::memcmp(&want, &got, sizeof got) != 0;
        }
    QCOMPARE(bad, int64_t{0});
  }

  /// Resize linear on the plain layout (half_pixel) against ONNX's formula in double: 2x over rows long
  /// enough for the pair loop (taps advancing one column every two outputs) and its clamped borders,
  /// 3x and 1.5x (gathered taps), a downscale.
  void resizeLinear_data() {
    QTest::addColumn<V>("shape");
    QTest::addColumn<double>("scale");
    QTest::newRow("2x [1,3,5,37]") << V{1, 3, 5, 37} << 2.0;
    QTest::newRow("2x [2,2,4,64]") << V{2, 2, 4, 64} << 2.0;
    QTest::newRow("3x [1,2,4,23]") << V{1, 2, 4, 23} << 3.0;
    QTest::newRow("1.5x [1,2,6,31]") << V{1, 2, 6, 31} << 1.5;
    QTest::newRow("0.5x [1,2,8,40]") << V{1, 2, 8, 40} << 0.5;
  }
  void resizeLinear() {
    QFETCH(V, shape);
    QFETCH(double, scale);
    const Tensor x = randomT(DType::Float32, shape, 91);
    Tensor sc = std::move(*Tensor::make(DType::Float32, {4}));
    const float scales[4] = {1, 1, static_cast<float>(scale), static_cast<float>(scale)};
    std::memcpy(sc.raw(), scales, sizeof scales);
    auto r = runNode("Resize", {&x, &sc}, {{"mode", Attribute{std::string("linear")}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t P = shape[0] * shape[1], H = shape[2], W = shape[3];
    const int64_t OH = static_cast<int64_t>(std::floor(double(H) * scale)),
                  OW = static_cast<int64_t>(std::floor(double(W) * scale));
    QCOMPARE(r->at(0).shape(), (V{shape[0], shape[1], OH, OW}));
    struct Tap {
      int64_t a, b;
      double w;
    };
    auto tap = [&](int64_t o, int64_t in) {
      const double xo = (double(o) + 0.5) / scale - 0.5, fl = std::floor(xo);
      const auto a = static_cast<int64_t>(fl);
      return Tap{std::clamp<int64_t>(a, 0, in - 1), std::clamp<int64_t>(a + 1, 0, in - 1), xo - fl};
    };
    const float* px = x.data<float>();
    std::vector<double> want;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const Tap ty = tap(oy, H), tx = tap(ox, W);
          auto at = [&](int64_t yy, int64_t xx) { return double(px[(p * H + yy) * W + xx]); };
          const double top = at(ty.a, tx.a) + tx.w * (at(ty.a, tx.b) - at(ty.a, tx.a));
          const double bot = at(ty.b, tx.a) + tx.w * (at(ty.b, tx.b) - at(ty.b, tx.a));
          want.push_back(top + ty.w * (bot - top));
        }
    CHECK_CLOSE(r->at(0), want, 1e-6);
  }

  /// AveragePool on the plain layout (the direct loop): 3x3 stride 1 padded, with and without
  /// count_include_pad; asymmetric pads and strides; no padding; odd sizes; against the window sum.
  void averagePool_data() {
    QTest::addColumn<V>("shape");
    QTest::addColumn<V>("kernel");
    QTest::addColumn<V>("strides");
    QTest::addColumn<V>("pads");
    QTest::addColumn<int64_t>("includePad");
    for (int64_t inc : {int64_t{0}, int64_t{1}}) {
      const std::string s = inc ? " include pad" : " exclude pad";
      QTest::newRow(("3x3 s1 p1" + s).c_str()) << V{2, 3, 7, 9} << V{3, 3} << V{1, 1} << V{1, 1, 1, 1} << inc;
      QTest::newRow(("2x3 s2x3 asymmetric" + s).c_str()) << V{1, 2, 8, 11} << V{2, 3} << V{2, 3} << V{1, 0, 0, 2} << inc;
      QTest::newRow(("5x5 s1 no pad" + s).c_str()) << V{1, 4, 9, 13} << V{5, 5} << V{1, 1} << V{0, 0, 0, 0} << inc;
      // avgPoolRows' one-pass rows (3 rows, 3 taps at stride 1) over a vector body and a tail; 3 taps
      // at stride 2; a 3-row window taller than the input.
      QTest::newRow(("3x3 s1 p1 wide" + s).c_str()) << V{1, 3, 6, 70} << V{3, 3} << V{1, 1} << V{1, 1, 1, 1} << inc;
      QTest::newRow(("3x3 s2 p1" + s).c_str()) << V{1, 2, 9, 35} << V{3, 3} << V{2, 2} << V{1, 1, 1, 1} << inc;
      QTest::newRow(("3x3 s1 p1 over 2 rows" + s).c_str()) << V{2, 2, 2, 19} << V{3, 3} << V{1, 1} << V{1, 1, 1, 1}
                                                            << inc;
    }
  }
  void averagePool() {
    QFETCH(V, shape);
    QFETCH(V, kernel);
    QFETCH(V, strides);
    QFETCH(V, pads);
    QFETCH(int64_t, includePad);
    const Tensor x = randomT(DType::Float32, shape, 71);
    auto r = runNode("AveragePool", {&x},
                     {{"kernel_shape", Attribute{kernel}},
                      {"strides", Attribute{strides}},
                      {"pads", Attribute{pads}},
                      {"count_include_pad", Attribute{includePad}}});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t P = shape[0] * shape[1], H = shape[2], W = shape[3];
    const int64_t OH = (H + pads[0] + pads[2] - kernel[0]) / strides[0] + 1;
    const int64_t OW = (W + pads[1] + pads[3] - kernel[1]) / strides[1] + 1;
    QCOMPARE(r->at(0).shape(), (V{shape[0], shape[1], OH, OW}));
    std::vector<double> want;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = 0;
          int64_t cnt = 0;
          for (int64_t ky = 0; ky < kernel[0]; ++ky)
            for (int64_t kx = 0; kx < kernel[1]; ++kx) {
              const int64_t iy = oy * strides[0] - pads[0] + ky, ix = ox * strides[1] - pads[1] + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              s += x.data<float>()[(p * H + iy) * W + ix];
              ++cnt;
            }
          want.push_back(s / double(includePad ? kernel[0] * kernel[1] : cnt));
        }
    CHECK_CLOSE(r->at(0), want, 1e-6);
  }
  /// The CPU's Reshape-like kernels (Reshape, Flatten, Squeeze, Unsqueeze) copy until told they may view
  /// their input (Kernel::viewInput); then a row-major input's output is a view of its very storage,
  /// and a channels-last one is copied row-major into storage of the output's own, never into the input
  /// a previous run viewed. Values against the input read element by element.
  void reshapeViewsItsInput_data() {
    QTest::addColumn<QString>("op");
    QTest::newRow("Reshape") << "Reshape";
    QTest::newRow("Flatten") << "Flatten";
    QTest::newRow("Squeeze") << "Squeeze";
    QTest::newRow("Unsqueeze") << "Unsqueeze";
  }
  void reshapeViewsItsInput() {
    QFETCH(QString, op);
    const V shape{1, 3, 2, 5};
    const Tensor x = randomT(DType::Float32, shape, 7);
    Tensor second;
    V want;  // the output's shape
    if (op == "Reshape") {
      second = ints({2}, {3, -1});
      want = {3, 10};
    } else if (op == "Squeeze") {
      second = ints({1}, {0});
      want = {3, 2, 5};
    } else if (op == "Unsqueeze") {
      second = ints({1}, {2});
      want = {1, 3, 1, 2, 5};
    } else {
      want = {1, 30};
    }
    std::vector<test::NodeInput> decl{{DType::Float32, shape}};
    std::vector<const Tensor*> ins{&x};
    if (!second.empty()) {
      decl.push_back({DType::Int64, second.shape()});
      ins.push_back(&second);
    }
    Graph g = test::oneNodeGraph(op.toStdString(), decl);
    auto cpu = makeCpuBackend();
    auto k = cpu->prepare(g, 0, "core0");
    QVERIFY2(k.isOk(), k.message().c_str());
    QVERIFY((*k)->canViewInput());
    auto same = [&](const Tensor& y) {
      if (y.shape() != want || y.nhwc()) return false;
      for (int64_t i = 0; i < x.numElements(); ++i)
        if (y.data<float>()[i] != x.data<float>()[i]) return false;
      return true;
    };
    std::vector<Tensor> outs;
    QVERIFY((*k)->run(ins, outs).isOk());  // not told yet: a copy
    QVERIFY(same(outs[0]));
    QVERIFY(outs[0].raw() != x.raw());
    (*k)->viewInput();
    QVERIFY((*k)->run(ins, outs).isOk());
    QVERIFY(same(outs[0]));
    QVERIFY(outs[0].borrowed());
    QCOMPARE(static_cast<const void*>(outs[0].raw()), x.raw());
    // Channels-last: the same values, stored [N][H][W][C]; the output is row-major and its own.
    Tensor nhwc;
    QVERIFY(nhwc.ensureNhwc(shape).isOk());
    const int64_t C = shape[1], S = shape[2] * shape[3];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) static_cast<float*>(nhwc.raw())[s * C + c] = x.data<float>()[c * S + s];
    const Tensor before = x;
    std::vector<const Tensor*> insNhwc = ins;
    insNhwc[0] = &nhwc;
    QVERIFY((*k)->run(insNhwc, outs).isOk());
    QVERIFY(!outs[0].borrowed());
    QVERIFY(same(outs[0]));
    QVERIFY(std::equal(x.data<float>(), x.data<float>() + x.numElements(), before.data<float>()));
  }
  /// Slice whose rows are a few elements (Ultraface's boxes [1,4420,4] to [1,4420,2]; copied element by
  /// element, not by memcpy per row), in float32 and int8, against the elements picked one by one.
  void sliceShortRows_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<qlonglong>("start");
    QTest::addColumn<qlonglong>("end");
    QTest::newRow("f32 [:, :, 0:2]") << int(DType::Float32) << 0LL << 2LL;
    QTest::newRow("f32 [:, :, 2:4]") << int(DType::Float32) << 2LL << 4LL;
    QTest::newRow("f32 [:, :, 1:4]") << int(DType::Float32) << 1LL << 4LL;
    QTest::newRow("i8 [:, :, 1:3]") << int(DType::Int8) << 1LL << 3LL;
  }
  void sliceShortRows() {
    QFETCH(int, dtype);
    QFETCH(qlonglong, start);
    QFETCH(qlonglong, end);
    const auto dt = static_cast<DType>(dtype);
    const int64_t rows = 4421, cols = 4;
    const Tensor x = randomT(dt, {1, rows, cols}, 11, -100, 100);
    const Tensor st = ints({1}, {start}), en = ints({1}, {end}), ax = ints({1}, {2});
    auto r = runNode("Slice", {&x, &st, &en, &ax});
    QVERIFY2(r.isOk(), r.message().c_str());
    const int64_t w = end - start;
    QCOMPARE(r->at(0).shape(), (V{1, rows, w}));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < w; ++j)
        QCOMPARE(r->at(0).valueAsDouble(i * w + j), x.valueAsDouble(i * cols + start + j));
  }
};

QTEST_GUILESS_MAIN(TstKernelsMisc)
#include "tst_kernels_misc.moc"
