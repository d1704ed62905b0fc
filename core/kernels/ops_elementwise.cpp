// OpenMP element-wise kernels with numpy broadcasting: arithmetic, comparisons, logic, Where, Cast and the
// unary functions oneDNN does not have.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "kernels/kernels.h"
#include "kernels/vecmath.h"

namespace partex::cpu {

namespace {

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

// ---------------------------------------------------------------------------------------------------------
// Binary and variadic ops

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Mod,
  FMod,
  Max,
  Min,
  PRelu,
  Eq,
  Lt,
  Gt,
  Le,
  Ge,
  And,
  Or,
  Xor,
  BitShiftL,
  BitShiftR
};

/// PRelu of one float32 without a branch: x < 0 ? x * slope : x, as a bitwise select of both sides.
/// Written so, GCC vectorises it; the plain conditional stays a scalar branch (it keeps the multiply
/// conditional under -ftrapping-math), which random signs mispredict: 5 ns per element, 25x the
/// vector loop (issue 24, MTCNN's PReLU layers).
inline float preluF(float x, float slope) {
  const uint32_t m = std::bit_cast<uint32_t>(x * slope);
  const uint32_t keep = 0u - static_cast<uint32_t>(x < 0.0f);
  return std::bit_cast<float>((m & keep) | (std::bit_cast<uint32_t>(x) & ~keep));
}

bool isCompare(Bin b) {
  return b == Bin::Eq || b == Bin::Lt || b == Bin::Gt || b == Bin::Le || b == Bin::Ge;
}

template <class T>
[[gnu::always_inline]] inline T applyBin(Bin op, T a, T b) {
  switch (op) {
    case Bin::Add:
      return static_cast<T>(a + b);
    case Bin::Sub:
      return static_cast<T>(a - b);
    case Bin::Mul:
      return static_cast<T>(a * b);
    case Bin::Div:
      if constexpr (std::is_integral_v<T>)
        return b == 0 ? T(0) : static_cast<T>(a / b);
      else
        return a / b;
    case Bin::Pow:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      else
        return static_cast<T>(std::pow(a, b));
    case Bin::Mod:  // sign of the divisor (Python)
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) return T(0);
        const T r = static_cast<T>(a % b);
        // The fix-up as a select, not a branch: with remainders of both signs the branch mispredicts.
        if constexpr (std::is_signed_v<T>)
          return static_cast<T>(r + ((r != 0 && ((r < 0) != (b < 0))) ? b : T(0)));
        else
          return r;
      } else {
        T r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      }
    case Bin::FMod:
      if constexpr (std::is_integral_v<T>)
        return b == 0 ? T(0) : static_cast<T>(a % b);
      else
        return std::fmod(a, b);
    case Bin::Max:
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      }
      return a > b ? a : b;
    case Bin::Min:
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      }
      return a < b ? a : b;
    case Bin::PRelu:
      if constexpr (std::is_same_v<T, float>)
        return preluF(a, b);
      else
        return a < T(0) ? static_cast<T>(a * b) : a;
    case Bin::And:
      return static_cast<T>(a && b);
    case Bin::Or:
      return static_cast<T>(a || b);
    case Bin::Xor:
      return static_cast<T>((a != 0) != (b != 0));
    // Both sides computed, then selected (a count of the type's width or more gives 0): a select the
    // vectoriser if-converts, where the conditional shift stayed a scalar branch (issue 24: BitShift ran
    // 3-4.6x ONNX Runtime). The count is masked so that the unused side is a defined shift too; signed
    // types (not ONNX's, which are unsigned only) shift their value bits alike.
    case Bin::BitShiftL:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        constexpr U w = static_cast<U>(sizeof(T) * 8);
        const U sh = static_cast<U>(static_cast<U>(b) & (w - 1));
        const T v = static_cast<T>(static_cast<U>(static_cast<U>(a) << sh));
        return static_cast<U>(b) >= w ? T(0) : v;
      } else
        return a;
    case Bin::BitShiftR:
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        constexpr U w = static_cast<U>(sizeof(T) * 8);
        const U sh = static_cast<U>(static_cast<U>(b) & (w - 1));
        const T v = static_cast<T>(static_cast<U>(a) >> sh);
        return static_cast<U>(b) >= w ? T(0) : v;
      } else
        return a;
    default:
      return a;
  }
}

template <class T>
inline bool applyCmp(Bin op, T a, T b) {
  switch (op) {
    case Bin::Eq:
      return a == b;
    case Bin::Lt:
      return a < b;
    case Bin::Gt:
      return a > b;
    case Bin::Le:
      return a <= b;
    case Bin::Ge:
      return a >= b;
    default:
      return false;
  }
}

/// out[i] = a[i] (op) b[i * bStep] for float32 Add/Sub/Mul/Div over [0, n), the operator chosen outside
/// the loop so that it vectorises. false for other operators.
bool fastF32(const ExecContext& ctx, Bin op, const float* a, const float* b, bool bScalar, float* o, int64_t n) {
  auto loop = [&](auto f) {
    parallelChunks(ctx, n, [&](int64_t s, int64_t e) {
      if (bScalar) {
        const float y = b[0];
#pragma omp simd
        for (int64_t i = s; i < e; ++i) o[i] = f(a[i], y);
      } else {
#pragma omp simd
        for (int64_t i = s; i < e; ++i) o[i] = f(a[i], b[i]);
      }
    });
  };
  switch (op) {
    case Bin::Add:
      loop([](float x, float y) { return x + y; });
      return true;
    case Bin::Sub:
      loop([](float x, float y) { return x - y; });
      return true;
    case Bin::Mul:
      loop([](float x, float y) { return x * y; });
      return true;
    case Bin::Div:
      loop([](float x, float y) { return x / y; });
      return true;
    case Bin::PRelu:
      loop([](float x, float y) { return preluF(x, y); });
      return true;
    default:
      return false;
  }
}

/// Float32 a (op) b where b holds one value per index of axis `axis` of `a`'s shape (and is 1 elsewhere),
/// `a` the output's shape: per-channel scales and shifts. false when b is not of that form or op is not
/// Add/Sub/Mul/Div/PRelu.
bool fastF32PerAxis(const ExecContext& ctx, Bin op, const Tensor& a, const Tensor& b, Tensor& out) {
  if (op != Bin::Add && op != Bin::Sub && op != Bin::Mul && op != Bin::Div && op != Bin::PRelu) return false;
  const auto& as = a.shape();
  const auto& bs = b.shape();
  if (bs.size() > as.size() || b.numElements() <= 1) return false;
  const size_t off = as.size() - bs.size();
  int axis = -1;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (bs[i] == 1) continue;
    if (axis >= 0 || bs[i] != as[i + off]) return false;
    axis = static_cast<int>(i + off);
  }
  if (axis < 0) return false;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= as[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < as.size(); ++i) inner *= as[i];
  // A short run per value (a bias over the last axis) is broadcastBinary's case: one vector loop per row.
  if (inner < 16) return false;
  const int64_t C = as[static_cast<size_t>(axis)];
  const float* pa = ptr<float>(a);
  const float* pb = ptr<float>(b);
  float* po = ptr<float>(out);
  parallelChunks(
      ctx, outer * C,
      [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r) {
          const float y = pb[r % C];
          const float* x = pa + r * inner;
          float* z = po + r * inner;
          switch (op) {
            case Bin::Add:
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) z[i] = x[i] + y;
              break;
            case Bin::Sub:
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) z[i] = x[i] - y;
              break;
            case Bin::Mul:
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) z[i] = x[i] * y;
              break;
            case Bin::PRelu:
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) z[i] = preluF(x[i], y);
              break;
            default:
#pragma omp simd
              for (int64_t i = 0; i < inner; ++i) z[i] = x[i] / y;
              break;
          }
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
  return true;
}

/// One element of a (op) b as type TO (T, or uint8 for comparisons and bool operands).
template <class T, class TO>
inline TO applyAny(Bin op, T x, T y) {
  if constexpr (std::is_same_v<TO, uint8_t> && !std::is_same_v<T, uint8_t>)
    return applyCmp(op, x, y);
  else if constexpr (std::is_same_v<T, uint8_t>) {
    if (isCompare(op)) return applyCmp(op, x, y);
    return applyBin(op, x, y);
  } else
    return applyBin(op, x, y);
}

/// Walks a K-input numpy broadcast to `os` by rows: output axes of size 1 are dropped and neighbouring
/// axes merged where every input walks them alike (contiguous across both, or broadcast along both), so
/// that the innermost axis is a long run along which each input either advances by one or stays (a bias
/// over the last axis, a per-channel scale, an attention mask over heads and rows). Calls
/// row(outOffset, inOffsets[K], length, innerStrides[K]) per run, each stride 0 or 1; the caller's loop
/// over a run vectorises. (Issue 24: the per-element walk ran a bias Add 20x slower than ONNX Runtime.)
template <size_t K, class F>
void broadcastRows(const ExecContext& ctx, const std::vector<int64_t>& os, const std::vector<int64_t> (&st0)[K],
                   F&& row) {
  std::vector<int64_t> shape, st[K];
  for (size_t d = 0; d < os.size(); ++d) {
    if (os[d] == 1) continue;
    bool merge = !shape.empty();
    for (size_t k = 0; k < K && merge; ++k) merge = st[k].back() == st0[k][d] * os[d];
    if (merge) {
      shape.back() *= os[d];
      for (size_t k = 0; k < K; ++k) st[k].back() = st0[k][d];
      continue;
    }
    shape.push_back(os[d]);
    for (size_t k = 0; k < K; ++k) st[k].push_back(st0[k][d]);
  }
  int64_t zero[K] = {};
  if (shape.empty()) {  // one element
    int64_t one[K];
    for (size_t k = 0; k < K; ++k) one[k] = 0;
    row(int64_t{0}, zero, shapeElements(os), one);
    return;
  }
  const size_t r = shape.size();
  const int64_t inner = shape[r - 1];
  int64_t innerSt[K];
  for (size_t k = 0; k < K; ++k) innerSt[k] = st[k][r - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= shape[d];
  parallelChunks(
      ctx, rows,
      [&](int64_t b, int64_t e) {
        std::vector<int64_t> idx(r, 0);
        int64_t off[K] = {}, rem = b;
        for (size_t d = r - 1; d-- > 0;) {
          idx[d] = rem % shape[d];
          rem /= shape[d];
          for (size_t k = 0; k < K; ++k) off[k] += idx[d] * st[k][d];
        }
        for (int64_t rw = b; rw < e; ++rw) {
          row(rw * inner, off, inner, innerSt);
          for (size_t d = r - 1; d-- > 0;) {
            for (size_t k = 0; k < K; ++k) off[k] += st[k][d];
            if (++idx[d] < shape[d]) break;
            for (size_t k = 0; k < K; ++k) off[k] -= st[k][d] * shape[d];
            idx[d] = 0;
          }
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
}

/// Calls f(std::integral_constant<int64_t, s>) for a stride s of 0 or 1, so that a loop over a run takes
/// its strides as constants.
template <class F>
void withStride01(int64_t s, F&& f) {
  if (s)
    f(std::integral_constant<int64_t, 1>{});
  else
    f(std::integral_constant<int64_t, 0>{});
}

/// out = f(a, b) with numpy broadcasting, out already shaped (broadcastRows).
template <class T, class TO, class F>
void broadcastBinary(const ExecContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = ptr<T>(a);
  const T* pb = ptr<T>(b);
  TO* po = ptr<TO>(out);
  const std::vector<int64_t> st[2] = {broadcastStrides(a.shape(), out.shape()),
                                      broadcastStrides(b.shape(), out.shape())};
  broadcastRows<2>(ctx, out.shape(), st, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
    const T* x = pa + off[0];
    const T* y = pb + off[1];
    TO* z = po + o;
    if (is[0] && is[1]) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    } else if (is[0]) {
      const T yv = y[0];
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
    } else if (is[1]) {
      const T xv = x[0];
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) z[i] = f(xv, y[i]);
    } else {
      std::fill(z, z + n, f(x[0], y[0]));
    }
  });
}

/// out = a (op) b with broadcasting; out already shaped to the broadcast shape. TO is T or uint8 (bool).
/// The common operators get their own instantiation (the operator a constant the loops fold in).
template <class T, class TO>
void binaryLoop(const ExecContext& ctx, Bin op, const Tensor& a, const Tensor& b, Tensor& out) {
  auto fixed = [&](auto opc) {
    constexpr Bin O = decltype(opc)::value;
    broadcastBinary<T, TO>(ctx, a, b, out, [](T x, T y) -> TO { return applyAny<T, TO>(O, x, y); });
  };
  switch (op) {
    case Bin::Add:
      return fixed(std::integral_constant<Bin, Bin::Add>{});
    case Bin::Sub:
      return fixed(std::integral_constant<Bin, Bin::Sub>{});
    case Bin::Mul:
      return fixed(std::integral_constant<Bin, Bin::Mul>{});
    case Bin::Div:
      return fixed(std::integral_constant<Bin, Bin::Div>{});
    case Bin::Max:
      return fixed(std::integral_constant<Bin, Bin::Max>{});
    case Bin::Min:
      return fixed(std::integral_constant<Bin, Bin::Min>{});
    case Bin::PRelu:
      return fixed(std::integral_constant<Bin, Bin::PRelu>{});
    case Bin::Eq:
      return fixed(std::integral_constant<Bin, Bin::Eq>{});
    case Bin::Lt:
      return fixed(std::integral_constant<Bin, Bin::Lt>{});
    case Bin::Gt:
      return fixed(std::integral_constant<Bin, Bin::Gt>{});
    case Bin::Le:
      return fixed(std::integral_constant<Bin, Bin::Le>{});
    case Bin::Ge:
      return fixed(std::integral_constant<Bin, Bin::Ge>{});
    case Bin::And:
      return fixed(std::integral_constant<Bin, Bin::And>{});
    case Bin::Or:
      return fixed(std::integral_constant<Bin, Bin::Or>{});
    case Bin::Xor:
      return fixed(std::integral_constant<Bin, Bin::Xor>{});
    case Bin::BitShiftL:
      return fixed(std::integral_constant<Bin, Bin::BitShiftL>{});
    case Bin::BitShiftR:
      return fixed(std::integral_constant<Bin, Bin::BitShiftR>{});
    // Mod and FMod too (issue 24: through the per-element switch, applyAny an out-of-line call per
    // element, Mod on int64 ran 1.1-1.3x ONNX Runtime and 3x its memory-traffic floor).
    case Bin::Mod:
      return fixed(std::integral_constant<Bin, Bin::Mod>{});
    case Bin::FMod:
      return fixed(std::integral_constant<Bin, Bin::FMod>{});
    default:
      broadcastBinary<T, TO>(ctx, a, b, out, [op](T x, T y) -> TO { return applyAny<T, TO>(op, x, y); });
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
/// Float32 to an integer type, out of range and NaN giving 0 (the conversion itself would be undefined;
/// in range is (lowest - 1, max + 1), what truncates to a representable value), as a select of the value before the conversion: the loop vectorises (issue 24: the conditional
/// conversion stayed a scalar branch per element, Cast f32->i8 at 7.3x ONNX Runtime).
#define PARTEX_CAST_F32(NAME, D)                                                                     \
  [[gnu::target_clones("avx512f", "avx2", "default")]] void NAME(const float* x, D* y, int64_t n) {  \
    const float lo = static_cast<float>(std::numeric_limits<D>::lowest()) - 1,                       \
                hi = static_cast<float>(std::numeric_limits<D>::max()) + 1;                          \
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                                            \
      const float v = x[i];                                                                          \
      const float c = v > lo && v < hi ? v : 0.0f;                                                   \
      y[i] = static_cast<D>(c);                                                                      \
    }                                                                                                \
  }
PARTEX_CAST_F32(castF32I8, int8_t)
PARTEX_CAST_F32(castF32U8, uint8_t)
PARTEX_CAST_F32(castF32I16, int16_t)
PARTEX_CAST_F32(castF32U16, uint16_t)
PARTEX_CAST_F32(castF32I32, int32_t)
#undef PARTEX_CAST_F32

/// Float32 to int64 by the same rule. Without AVX-512DQ there is no vector float-to-int64 conversion, so
/// blocks whose values all lie within int32's range (activations, indices) convert through int32 in
/// vector registers and widen; a block holding a larger value, NaN or an infinity converts element by
/// element (issue 24: Cast f32->i64 at 1.8-2.3x ONNX Runtime).
[[gnu::target_clones("avx512f", "avx2", "default")]] void castF32I64(const float* x, int64_t* y, int64_t n) {
  constexpr int64_t kBlock = 1024;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    int big = 0;
#pragma omp simd reduction(| : big)
    for (int64_t i = b; i < e; ++i) {
      const float v = x[i];
      const bool ok = v > -2147483648.0f && v < 2147483648.0f;
      big |= ok ? 0 : 1;
      y[i] = static_cast<int64_t>(static_cast<int32_t>(ok ? v : 0.0f));
    }
    if (big)
      for (int64_t i = b; i < e; ++i) {
        const float v = x[i];
        y[i] = v > -9223372036854775808.0f - 1 && v < 9223372036854775808.0f ? static_cast<int64_t>(v) : 0;
      }
  }
}

/// Float32 to float16 bits, rounded to nearest even (f32ToF16Bits), and float16 bits to float32 (exact):
/// Cast and CastLike between the two. Cloned for AVX2 and AVX-512, where the selects vectorise.
/// Where the CPU has F16C (every x86-64 with AVX2), its conversion instructions take 8 values each, the
/// same results (vcvtps2ph with round-to-nearest-even; NaN payloads aside): the select formulas above
/// cost some 25 vector instructions per 8 values, 4.8x ONNX Runtime's F16C loop.
[[gnu::target_clones("avx512f", "avx2", "default")]] void castF32F16Sel(const float* x, uint16_t* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f32ToF16Bits(x[i]);
}
[[gnu::target_clones("avx512f", "avx2", "default")]] void castF16F32Sel(const uint16_t* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f16BitsToF32(x[i]);
}
#if defined(__x86_64__)
[[gnu::target("avx,f16c")]] void castF32F16F16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = f32ToF16Bits(x[i]);
}
[[gnu::target("avx,f16c")]] void castF16F32F16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = f16BitsToF32(x[i]);
}
/// F16C: CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c"), with AVX
/// usable (the builtin's "avx" checks that the OS saves the YMM state).
bool cpuHasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
const bool kHasF16c = cpuHasF16c();
#endif
void castF32F16(const float* x, uint16_t* y, int64_t n) {
#if defined(__x86_64__)
  if (kHasF16c) return castF32F16F16c(x, y, n);
#endif
  castF32F16Sel(x, y, n);
}
void castF16F32(const uint16_t* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (kHasF16c) return castF16F32F16c(x, y, n);
#endif
  castF16F32Sel(x, y, n);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/// Converts every element of `src` into dtype `to` (numeric and bool; float16 to and from float32 only).
Status castInto(const ExecContext& ctx, const Tensor& src, DType to, Tensor& dst) {
  if (auto s = dst.ensure(to, src.shape()); !s) return s;
  if (src.dtype() == DType::Float16 || to == DType::Float16) {
    const int64_t n = src.numElements();
    if (src.dtype() == to) {
      std::memcpy(dst.raw(), src.raw(), static_cast<size_t>(n) * 2);
      return Status::ok();
    }
    if (src.dtype() == DType::Float32) {
      const float* ps = ptr<float>(src);
      uint16_t* pd = ptr<uint16_t>(dst);
      parallelChunks(ctx, n, [&](int64_t b, int64_t e) { castF32F16(ps + b, pd + b, e - b); });
      return Status::ok();
    }
    if (to == DType::Float32) {
      const uint16_t* ps = ptr<uint16_t>(src);
      float* pd = ptr<float>(dst);
      parallelChunks(ctx, n, [&](int64_t b, int64_t e) { castF16F32(ps + b, pd + b, e - b); });
      return Status::ok();
    }
    return makeError("cast from ", dtypeName(src.dtype()), " to ", dtypeName(to),
                     " is not supported (float16 converts to and from float32 only)");
  }
  if (src.dtype() == DType::Float32) {
    const float* ps = ptr<float>(src);
    auto vec = [&](auto* pd, void (*fn)(const float*, decltype(pd), int64_t)) {
      parallelChunks(ctx, src.numElements(), [&](int64_t b, int64_t e) { fn(ps + b, pd + b, e - b); });
      return Status::ok();
    };
    switch (to) {
      case DType::Int8:
        return vec(ptr<int8_t>(dst), castF32I8);
      case DType::UInt8:
        return vec(ptr<uint8_t>(dst), castF32U8);
      case DType::Int16:
        return vec(ptr<int16_t>(dst), castF32I16);
      case DType::UInt16:
        return vec(ptr<uint16_t>(dst), castF32U16);
      case DType::Int32:
        return vec(ptr<int32_t>(dst), castF32I32);
      case DType::Int64:
        return vec(ptr<int64_t>(dst), castF32I64);
      default:
        break;
    }
  }
  bool ok = false;
  dispatchAll(src.dtype(), [&](auto sv) {
    using S = decltype(sv);
    const S* ps = ptr<S>(src);
    const bool srcBool = src.dtype() == DType::Bool;
    ok = dispatchAll(to, [&](auto dv) {
      using D = decltype(dv);
      D* pd = ptr<D>(dst);
      const bool dstBool = to == DType::Bool;
      // One loop per case, chosen outside it (issue 24: the per-element tests kept Cast at 3-10x ONNX
      // Runtime).
      parallelChunks(ctx, src.numElements(), [&](int64_t b, int64_t e) {
        if (dstBool) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) pd[i] = static_cast<D>(ps[i] != S(0));
        } else if (srcBool) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) pd[i] = static_cast<D>(ps[i] ? 1 : 0);
        } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
          // Out of range and NaN give 0 (the conversion itself would be undefined). In range is
          // (lowest - 1, max + 1): what truncates to a representable value (127.5 to int8's 127).
          const S lo = static_cast<S>(std::numeric_limits<D>::lowest()) - 1,
                  hi = static_cast<S>(std::numeric_limits<D>::max()) + 1;
          for (int64_t i = b; i < e; ++i) {
            const S v = ps[i];
            pd[i] = v > lo && v < hi ? static_cast<D>(v) : D(0);
          }
        } else {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) pd[i] = static_cast<D>(ps[i]);
        }
      });
    });
  });
  if (!ok) return makeError("cast from ", dtypeName(src.dtype()), " to ", dtypeName(to), " is not supported");
  return Status::ok();
}

/// Whether every input is a channels-last float32 tensor of one shape (element-wise over the storage is
/// then element-wise over the values).
bool allNhwcSame(const std::vector<const Tensor*>& in) {
  if (in.empty()) return false;
  for (const Tensor* t : in)
    if (!t || !t->nhwc() || t->shape() != in[0]->shape()) return false;
  return true;
}

/// Whether b is a plain float32 operand of one value per channel of the rank-4 tensor a (or a scalar), or
/// a channels-last [1,C,1,1] one (the same storage as plain).
bool perChannelOperand(const Tensor& a, const Tensor& b) {
  if (a.rank() != 4 || b.dtype() != DType::Float32 || b.rank() > 4) return false;
  if (b.nhwc() && !(b.rank() == 4 && b.dim(0) == 1 && b.dim(2) == 1 && b.dim(3) == 1)) return false;
  if (b.numElements() == 1) return true;
  const int64_t off = 4 - b.rank();
  for (int64_t d = 0; d < b.rank(); ++d)
    if (b.dim(d) != 1 && !(d + off == 1 && b.dim(d) == a.dim(1))) return false;
  return b.numElements() == a.dim(1);
}

bool powF32(const ExecContext& ctx, const Tensor& a, const Tensor& b, Tensor& out);

/// z[i] = x[i * sx] shifted by y[i * sy] over [0, n) for uint8 (strides 0 or 1, a run of broadcastRows),
/// a count of 8 or more giving 0. Cloned for AVX2 and AVX-512, whose per-lane variable shifts (of
/// widened lanes) vectorise it; baseline x86-64 has none, and the template loop stayed scalar there
/// (issue 24: BitShift on uint8 at 3-4.6x ONNX Runtime).
[[gnu::target_clones("avx512f", "avx2", "default")]] void shiftRowU8(const uint8_t* x, bool sx, const uint8_t* y,
                                                                     bool sy, uint8_t* z, int64_t n, bool left) {
  // Loops written out per direction and stride pair (a lambda would be a function of its own, compiled
  // without the clone's target).
#define PARTEX_SHIFT(XE, YE, OP) \
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) z[i] = (YE) >= 8 ? uint8_t{0} : static_cast<uint8_t>(static_cast<uint32_t>(XE) OP ((YE) & 7u));
#define PARTEX_SHIFT_ALL(OP)            \
  if (sx && sy) {                       \
    PARTEX_SHIFT(x[i], y[i], OP)        \
  } else if (sx) {                      \
    PARTEX_SHIFT(x[i], y0, OP)          \
  } else if (sy) {                      \
    PARTEX_SHIFT(x0, y[i], OP)          \
  } else {                              \
    const uint8_t v = y0 >= 8 ? uint8_t{0} : static_cast<uint8_t>(static_cast<uint32_t>(x0) OP (y0 & 7u)); \
    std::fill(z, z + n, v);             \
  }
  if (n <= 0) return;
  const uint8_t x0 = x[0], y0 = y[0];
  if (left) {
    PARTEX_SHIFT_ALL(<<)
  } else {
    PARTEX_SHIFT_ALL(>>)
  }
#undef PARTEX_SHIFT_ALL
#undef PARTEX_SHIFT
}

/// z[i] = x[i * sx] (op) y[i * sy] over [0, n) for an int64 comparison (strides 0 or 1, a run of
/// broadcastRows), as bool. Cloned for AVX2 and AVX-512: baseline x86-64 (SSE2) has no 64-bit compare
/// (pcmpeqq is SSE4.1, pcmpgtq SSE4.2), so the template loop compared element by element (issue 24:
/// Equal on int64 at 1.4-2.1x ONNX Runtime, float32 at 0.5-1.2x).
[[gnu::target_clones("avx512f", "avx2", "default")]] void cmpRowI64(Bin op, const int64_t* x, bool sx,
                                                                    const int64_t* y, bool sy, uint8_t* z,
                                                                    int64_t n) {
  if (n <= 0) return;
  const int64_t x0 = x[0], y0 = y[0];
  // Loops written out per operator and stride pair (a lambda would be a function of its own, compiled
  // without the clone's target).
#define PARTEX_CMP(XE, YE, OP) \
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) z[i] = static_cast<uint8_t>((XE)OP(YE));
#define PARTEX_CMP_ALL(OP)                                     \
  if (sx && sy) {                                              \
    PARTEX_CMP(x[i], y[i], OP)                                 \
  } else if (sx) {                                             \
    PARTEX_CMP(x[i], y0, OP)                                   \
  } else if (sy) {                                             \
    PARTEX_CMP(x0, y[i], OP)                                   \
  } else {                                                     \
    std::memset(z, (x0 OP y0) ? 1 : 0, static_cast<size_t>(n)); \
  }
  switch (op) {
    case Bin::Eq:
      PARTEX_CMP_ALL(==)
      break;
    case Bin::Lt:
      PARTEX_CMP_ALL(<)
      break;
    case Bin::Gt:
      PARTEX_CMP_ALL(>)
      break;
    case Bin::Le:
      PARTEX_CMP_ALL(<=)
      break;
    case Bin::Ge:
      PARTEX_CMP_ALL(>=)
      break;
    default:
      break;
  }
#undef PARTEX_CMP_ALL
#undef PARTEX_CMP
}

class BinaryKernel final : public OpKernel {
 public:
  explicit BinaryKernel(Bin op) : op_(op) {}
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    if (!nhwcOut || in.size() != 2) return false;
    if ((op_ == Bin::Add || op_ == Bin::Sub || op_ == Bin::Mul) && allNhwcSame(in)) return true;
    return perChannelNhwc(in);
  }
  /// A channels-last rank-4 float32 tensor (op) a plain per-channel or scalar float32 operand (either
  /// side for Add and Mul; PRelu's slope on the right).
  bool perChannelNhwc(const std::vector<const Tensor*>& in) const {
    if (op_ != Bin::Add && op_ != Bin::Sub && op_ != Bin::Mul && op_ != Bin::Div && op_ != Bin::PRelu) return false;
    if (!in[0] || !in[1]) return false;
    const bool swap = (op_ == Bin::Add || op_ == Bin::Mul) && in[1]->nhwc() && in[1]->numElements() > in[0]->numElements();
    const Tensor* a = swap ? in[1] : in[0];
    const Tensor* b = swap ? in[0] : in[1];
    return a->nhwc() && a->shape() != b->shape() && perChannelOperand(*a, *b);
  }
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (in.size() < 2) return makeError("two inputs expected");
    for (size_t i = 0; i < 2; ++i)
      if (auto e = expectInput(in, i, i ? "B" : "A"); !e.empty()) return Error{e};
    const Tensor* a = in[0];
    const Tensor* b = in[1];
    if ((op_ == Bin::Add || op_ == Bin::Mul) && b->nhwc() && b->numElements() > a->numElements())
      std::swap(a, b);  // takesNhwc(): they commute
    if (b->dtype() != a->dtype()) {
      if (op_ != Bin::Pow) return makeError("operand dtypes differ: ", a->describe(), " and ", b->describe());
      if (auto s = castInto(ctx, *b, a->dtype(), conv_); !s) return s;  // Pow's exponent may have another type
      b = &conv_;
    }
    std::vector<int64_t> shape;
    if (!broadcastShape({a->shape(), b->shape()}, shape))
      return makeError("shapes do not broadcast: ", a->describe(), " and ", b->describe());
    out.resize(1);
    const bool cmp = isCompare(op_);
    if (a->nhwc() && a->shape() != b->shape() && perChannelOperand(*a, *b)) {  // takesNhwc(): per channel
      if (auto s = out[0].ensureNhwc(a->shape()); !s) return s;
      const int64_t C = a->dim(1), P = a->numElements() / std::max<int64_t>(1, C);
      const float* pa = ptr<float>(*a);
      const float* pb = ptr<float>(*b);
      float* po = ptr<float>(out[0]);
      // The operand per channel (a scalar repeated), so that each pixel is one vector loop.
      std::vector<float> per(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) per[static_cast<size_t>(c)] = pb[b->numElements() == 1 ? 0 : c];
      const float* y = per.data();
      auto loop = [&](auto f) {
        parallelChunks(ctx, P, [&](int64_t s0, int64_t e0) {
          for (int64_t p = s0; p < e0; ++p) {
            const float* x = pa + p * C;
            float* z = po + p * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) z[c] = f(x[c], y[c]);
          }
        }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
      };
      switch (op_) {
        case Bin::Add:
          loop([](float u, float v) { return u + v; });
          break;
        case Bin::Sub:
          loop([](float u, float v) { return u - v; });
          break;
        case Bin::Mul:
          loop([](float u, float v) { return u * v; });
          break;
        case Bin::PRelu:  // a per-channel slope (PReLU after a convolution)
          loop([](float u, float v) { return preluF(u, v); });
          break;
        default:
          loop([](float u, float v) { return u / v; });
          break;
      }
      return Status::ok();
    }
    if (a->nhwc() && b->nhwc()) {  // takesNhwc(): same shapes, both channels-last: over the storage
      if (auto s = out[0].ensureNhwc(shape); !s) return s;
      if (fastF32(ctx, op_, ptr<float>(*a), ptr<float>(*b), false, ptr<float>(out[0]), out[0].storageBytes() / 4))
        return Status::ok();
      return makeError("no channels-last kernel for this operator");
    }
    if (auto s = out[0].ensure(cmp ? DType::Bool : a->dtype(), shape); !s) return s;
    if (a->dtype() == DType::Float32 && a->shape() == shape && op_ == Bin::Pow && b->numElements() == 1) {
      // x^2 and x^3 as products (LayerNormalization exported before opset 17 squares with Pow):
      // std::pow per element costs tens of nanoseconds.
      const float e = ptr<float>(*b)[0];
      const float* x = ptr<float>(*a);
      float* y = ptr<float>(out[0]);
      auto loop = [&](auto f) {
        parallelChunks(ctx, out[0].numElements(), [&](int64_t s0, int64_t e0) {
#pragma omp simd
          for (int64_t i = s0; i < e0; ++i) y[i] = f(x[i]);
        });
      };
      if (e == 2.0f) {
        loop([](float v) { return v * v; });
        return Status::ok();
      }
      if (e == 3.0f) {
        loop([](float v) { return v * v * v; });
        return Status::ok();
      }
    }
    if (a->dtype() == DType::Float32 && op_ == Bin::Pow && powF32(ctx, *a, *b, out[0])) return Status::ok();
    if (a->dtype() == DType::UInt8 && (op_ == Bin::BitShiftL || op_ == Bin::BitShiftR)) {
      const uint8_t* pa = ptr<uint8_t>(*a);
      const uint8_t* pb = ptr<uint8_t>(*b);
      uint8_t* po = ptr<uint8_t>(out[0]);
      const bool left = op_ == Bin::BitShiftL;
      const std::vector<int64_t> st[2] = {broadcastStrides(a->shape(), shape), broadcastStrides(b->shape(), shape)};
      broadcastRows<2>(ctx, shape, st, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
        shiftRowU8(pa + off[0], is[0] != 0, pb + off[1], is[1] != 0, po + o, n, left);
      });
      return Status::ok();
    }
    if (cmp && a->dtype() == DType::Int64) {
      const int64_t* pa = ptr<int64_t>(*a);
      const int64_t* pb = ptr<int64_t>(*b);
      uint8_t* po = ptr<uint8_t>(out[0]);
      const std::vector<int64_t> st[2] = {broadcastStrides(a->shape(), shape), broadcastStrides(b->shape(), shape)};
      broadcastRows<2>(ctx, shape, st, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
        cmpRowI64(op_, pa + off[0], is[0] != 0, pb + off[1], is[1] != 0, po + o, n);
      });
      return Status::ok();
    }
    if (a->dtype() == DType::Float32 && a->shape() == shape) {
      if ((b->shape() == shape || b->numElements() == 1) &&
          fastF32(ctx, op_, ptr<float>(*a), ptr<float>(*b), b->shape() != shape, ptr<float>(out[0]), out[0].numElements()))
        return Status::ok();
      if (fastF32PerAxis(ctx, op_, *a, *b, out[0])) return Status::ok();
    }
    bool ok = false;
    if (a->dtype() == DType::Bool) {
      binaryLoop<uint8_t, uint8_t>(ctx, op_, *a, *b, out[0]);
      ok = true;
    } else {
      ok = dispatchAll(a->dtype(), [&](auto v) {
        using T = decltype(v);
        if (cmp)
          binaryLoop<T, uint8_t>(ctx, op_, *a, *b, out[0]);
        else
          binaryLoop<T, T>(ctx, op_, *a, *b, out[0]);
      });
    }
    if (!ok) return makeError("dtype ", dtypeName(a->dtype()), " is not supported");
    return Status::ok();
  }

 private:
  Bin op_;
  Tensor conv_;
};

/// Sum, Mean, Max, Min over any number of inputs.
/// x[i] /= d over n values (a division, not a product by 1/d: Mean's results stay those of the sum
/// divided by the count, as the reference computes them).
void divideBy(float* x, int64_t n, float d) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / d;
}

/// z[i] = max(x[i], y[i]) (min when !isMax) over [0, n), NaN when either is NaN (as applyBin). Cloned
/// for AVX-512 and AVX2.
[[gnu::target_clones("avx512f", "avx2", "default")]] void maxMinRowF32(const float* x, const float* y, float* z,
                                                                       int64_t n, bool isMax) {
  if (isMax) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float u = x[i], v = y[i];
      z[i] = u != u || v != v ? u + v : (u > v ? u : v);
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float u = x[i], v = y[i];
      z[i] = u != u || v != v ? u + v : (u < v ? u : v);
    }
  }
}

class VariadicKernel final : public OpKernel {
 public:
  VariadicKernel(Bin op, bool mean) : op_(op), mean_(mean) {}
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    return nhwcOut && ((op_ == Bin::Add && !mean_ && allNhwcSame(in)) || perChannelNhwc(in));
  }
  /// Max or Min of a channels-last rank-4 float32 tensor and a plain per-channel or scalar float32
  /// operand, in either order (TensorFlow's exports clamp with Max(x, c) between convolutions:
  /// oww-embedding's every layer; row-major, each cost two reorders, issue 24).
  bool perChannelNhwc(const std::vector<const Tensor*>& in) const {
    if ((op_ != Bin::Max && op_ != Bin::Min) || in.size() != 2 || !in[0] || !in[1]) return false;
    const bool swap = in[1]->nhwc() && !in[0]->nhwc();
    const Tensor* a = swap ? in[1] : in[0];
    const Tensor* b = swap ? in[0] : in[1];
    return a->nhwc() && a->dtype() == DType::Float32 && a->shape() != b->shape() && perChannelOperand(*a, *b);
  }
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (perChannelNhwc(in)) {
      // [pixels][C] against one value per channel: z = max(x, v) (min), NaN from either side, as the
      // general loop's applyBin.
      const bool swap = in[1]->nhwc() && !in[0]->nhwc();
      const Tensor& a = *(swap ? in[1] : in[0]);
      const Tensor& b = *(swap ? in[0] : in[1]);
      out.resize(1);
      if (auto s = out[0].ensureNhwc(a.shape()); !s) return s;
      const int64_t C = a.dim(1), P = a.numElements() / std::max<int64_t>(1, C);
      // The operand repeated over R pixels (at least 256 values): one vector loop per R pixels, not one
      // of C elements per pixel.
      const int64_t R = std::max<int64_t>(1, (256 + C - 1) / C);
      std::vector<float> per(static_cast<size_t>(R * C));
      for (int64_t i = 0; i < R * C; ++i) per[static_cast<size_t>(i)] = ptr<float>(b)[b.numElements() == 1 ? 0 : i % C];
      const float* pa = ptr<float>(a);
      float* po = ptr<float>(out[0]);
      const float* y = per.data();
      const bool isMax = op_ == Bin::Max;
      parallelChunks(ctx, P, [&](int64_t s0, int64_t e0) {
        for (int64_t p = s0; p < e0; p += R) maxMinRowF32(pa + p * C, y, po + p * C, std::min(R, e0 - p) * C, isMax);
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
      return Status::ok();
    }
    if (op_ == Bin::Add && !in.empty() && in[0] && in[0]->dtype() == DType::Float32 && (!mean_ || !in[0]->nhwc()) &&
        (allNhwcSame(in) || std::all_of(in.begin(), in.end(), [&](const Tensor* t) {
          return t && !t->nhwc() && t->dtype() == DType::Float32 && t->shape() == in[0]->shape();
        }))) {
      // Sum of float32 operands of one shape (and layout): pairwise over the storage.
      out.resize(1);
      auto s = in[0]->nhwc() ? out[0].ensureNhwc(in[0]->shape()) : out[0].ensure(DType::Float32, in[0]->shape());
      if (!s) return s;
      const int64_t n = in[0]->storageBytes() / 4;
      if (in.size() == 1) {
        std::memcpy(out[0].raw(), in[0]->raw(), static_cast<size_t>(n) * 4);
        return Status::ok();
      }
      fastF32(ctx, Bin::Add, ptr<float>(*in[0]), ptr<float>(*in[1]), false, ptr<float>(out[0]), n);
      for (size_t k = 2; k < in.size(); ++k)
        fastF32(ctx, Bin::Add, ptr<float>(out[0]), ptr<float>(*in[k]), false, ptr<float>(out[0]), n);
      // Mean: the same sum, divided (issue 24: Mean of three took the per-row broadcast path and a scalar
      // division loop, 2.3x ONNX Runtime).
      if (mean_) divideBy(ptr<float>(out[0]), n, static_cast<float>(in.size()));
      return Status::ok();
    }
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < in.size(); ++i) {
      if (auto e = expectInput(in, i, "operand"); !e.empty()) return Error{e};
      if (in[i]->dtype() != in[0]->dtype()) return makeError("operand dtypes differ");
      shapes.push_back(in[i]->shape());
    }
    if (in.empty()) return makeError("no inputs");
    std::vector<int64_t> shape;
    if (!broadcastShape(shapes, shape)) return makeError("shapes do not broadcast");
    out.resize(1);
    if (auto s = out[0].ensure(in[0]->dtype(), shape); !s) return s;
    // out = in0 (op) in1, then out = out (op) in_k, each a broadcastRows pass (issue 24: the
    // per-element walk made Max/Min of a mask 50x slower than ONNX Runtime).
    bool ok = dispatchAll(in[0]->dtype(), [&](auto v) {
      using T = decltype(v);
      T* po = ptr<T>(out[0]);
      if (in.size() == 1) {
        const std::vector<int64_t> st[1] = {broadcastStrides(in[0]->shape(), shape)};
        const T* p0 = ptr<T>(*in[0]);
        parallelChunks(ctx, out[0].numElements(), [&](int64_t s, int64_t e) {
          broadcastWalk<1>(shape, st, s, e, [&](int64_t i, const int64_t* off) { po[i] = p0[off[0]]; });
        });
      } else {
        binaryLoop<T, T>(ctx, op_, *in[0], *in[1], out[0]);
        for (size_t k = 2; k < in.size(); ++k) binaryLoop<T, T>(ctx, op_, out[0], *in[k], out[0]);
      }
      if (mean_) {
        const T cnt = static_cast<T>(in.size());
        const int64_t n = out[0].numElements();
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) po[i] = static_cast<T>(po[i] / cnt);
      }
    });
    if (!ok) return makeError("dtype not supported");
    return Status::ok();
  }

 private:
  Bin op_;
  bool mean_;
};

/// z[i] = c[i * sc] ? x[i * sx] : y[i * sy] over [0, n) for elements of U's size (strides 0 or 1, a run of
/// broadcastRows), as a bitwise select of both sides (the values are copied, never computed with: exact
/// for every dtype). Cloned for AVX2 and AVX-512. Issue 24: the conditional loop stayed scalar for
/// float32 at baseline x86-64 (2.75x ONNX Runtime on three [1,128,768] operands, 1.66x on an
/// attention mask) and for int8 (10x its memory-traffic floor).
template <class U>
[[gnu::always_inline]] inline void whereRowT(const uint8_t* c, bool sc, const U* x, bool sx, const U* y, bool sy, U* z,
                                             int64_t n) {
  if (n <= 0) return;
  const uint8_t c0 = c[0];
  const U x0 = x[0], y0 = y[0];
#define PARTEX_WHERE(CE, XE, YE)                                                              \
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                                       \
    const U m = static_cast<U>(U{0} - static_cast<U>((CE) != 0));                             \
    z[i] = static_cast<U>((static_cast<U>(XE) & m) | (static_cast<U>(YE) & static_cast<U>(~m))); \
  }
  if (sc) {
    if (sx && sy) {
      PARTEX_WHERE(c[i], x[i], y[i])
    } else if (sx) {
      PARTEX_WHERE(c[i], x[i], y0)
    } else if (sy) {
      PARTEX_WHERE(c[i], x0, y[i])
    } else {
      PARTEX_WHERE(c[i], x0, y0)
    }
  } else if (sx || sy) {  // one condition for the run: a copy or a fill
    const U* src = c0 ? x : y;
    if (c0 ? sx : sy)
      std::memcpy(z, src, static_cast<size_t>(n) * sizeof(U));
    else {
      const U v = src[0];
      _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  } else {
    const U v = c0 ? x0 : y0;
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) z[i] = v;
  }
#undef PARTEX_WHERE
}
#define PARTEX_WHERE_ROW(NAME, U)                                                                          \
  [[gnu::target_clones("avx512f", "avx2", "default")]] void NAME(const uint8_t* c, bool sc, const U* x, bool sx, \
                                                                 const U* y, bool sy, U* z, int64_t n) {      \
    whereRowT<U>(c, sc, x, sx, y, sy, z, n);                                                               \
  }
PARTEX_WHERE_ROW(whereRow8, uint8_t)
PARTEX_WHERE_ROW(whereRow16, uint16_t)
PARTEX_WHERE_ROW(whereRow32, uint32_t)
PARTEX_WHERE_ROW(whereRow64, uint64_t)
#undef PARTEX_WHERE_ROW

inline void whereRow(const uint8_t* c, bool sc, const uint8_t* x, bool sx, const uint8_t* y, bool sy, uint8_t* z,
                     int64_t n) {
  whereRow8(c, sc, x, sx, y, sy, z, n);
}
inline void whereRow(const uint8_t* c, bool sc, const uint16_t* x, bool sx, const uint16_t* y, bool sy, uint16_t* z,
                     int64_t n) {
  whereRow16(c, sc, x, sx, y, sy, z, n);
}
inline void whereRow(const uint8_t* c, bool sc, const uint32_t* x, bool sx, const uint32_t* y, bool sy, uint32_t* z,
                     int64_t n) {
  whereRow32(c, sc, x, sx, y, sy, z, n);
}
inline void whereRow(const uint8_t* c, bool sc, const uint64_t* x, bool sx, const uint64_t* y, bool sy, uint64_t* z,
                     int64_t n) {
  whereRow64(c, sc, x, sx, y, sy, z, n);
}

class WhereKernel final : public OpKernel {
 public:
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "condition, X, Y"); !e.empty()) return Error{e};
    const Tensor& c = *in[0];
    const Tensor& x = *in[1];
    const Tensor& y = *in[2];
    if (c.dtype() != DType::Bool) return makeError("condition must be bool");
    if (x.dtype() != y.dtype()) return makeError("X and Y dtypes differ");
    std::vector<int64_t> shape;
    if (!broadcastShape({c.shape(), x.shape(), y.shape()}, shape)) return makeError("shapes do not broadcast");
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    const std::vector<int64_t> st[3] = {broadcastStrides(c.shape(), shape), broadcastStrides(x.shape(), shape),
                                        broadcastStrides(y.shape(), shape)};
    const uint8_t* pc = ptr<uint8_t>(c);
    const bool ok = dispatchSize(tensorElementSize(x.dtype()), [&](auto v) {
      using U = decltype(v);
      const U* px = ptr<U>(x);
      const U* py = ptr<U>(y);
      U* po = ptr<U>(out[0]);
      // Runs with 0/1 strides (broadcastRows): an attention mask over heads, a scalar fill value.
      broadcastRows<3>(ctx, shape, st, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
        whereRow(pc + off[0], is[0] != 0, px + off[1], is[1] != 0, py + off[2], is[2] != 0, po + o, n);
      });
    });
    if (!ok) return makeError("dtype not supported");
    return Status::ok();
  }
};

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(DType to, bool like) : to_(to), like_(like) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    DType to = to_;
    if (like_) {
      if (auto e = expectInput(in, 1, "target_type"); !e.empty()) return Error{e};
      to = in[1]->dtype();
    }
    out.resize(1);
    return castInto(ctx, *in[0], to, out[0]);
  }

 private:
  DType to_;
  bool like_;
};

/// Clip of any numeric dtype: min/max from inputs 1 and 2 (opset >= 11) or the min/max attributes
/// (earlier opsets); absent bounds are the type's range. NaN stays NaN. The CPU backend runs float32
/// through oneDNN and every other dtype here.
class ClipKernel final : public OpKernel {
 public:
  explicit ClipKernel(const Node& n)
      : attrs_(n.hasAttr("min") || n.hasAttr("max")), lo_(n.attrFloat("min", -INFINITY)), hi_(n.attrFloat("max", INFINITY)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    for (size_t i = 1; i < 3 && i < in.size(); ++i)
      if (in[i] && !in[i]->empty() && (in[i]->dtype() != x.dtype() || in[i]->numElements() != 1))
        return makeError("min/max must be scalars of the input's dtype");
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), x.shape()); !s) return s;
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (attrs_) {
        if constexpr (std::is_floating_point_v<T>) {
          lo = static_cast<T>(lo_);
          hi = static_cast<T>(hi_);
        }
      }
      if (in.size() > 1 && in[1] && !in[1]->empty()) lo = ptr<T>(*in[1])[0];
      if (in.size() > 2 && in[2] && !in[2]->empty()) hi = ptr<T>(*in[2])[0];
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      parallelChunks(ctx, x.numElements(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const T y = px[i] < lo ? lo : px[i];  // comparisons, not std::min/max: NaN stays NaN
          po[i] = y > hi ? hi : y;              // min > max: max everywhere
        }
      });
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  bool attrs_;
  double lo_, hi_;
};

// ---------------------------------------------------------------------------------------------------------
// Unary functions

enum class Un {
  Abs,
  Neg,
  Erf,
  Floor,
  Ceil,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Sign,
  Round,
  Softsign,
  Log,
  HardSigmoid,
  Selu,
  Celu,
  ThresholdedRelu,
  Shrink,
  Identity,
  Not,
  IsNaN,
  IsInf,
  Mish,
  // Plain versions of what the CPU backend runs through oneDNN, for constant folding (kernels/ops.h).
  Relu,
  Sqrt,
  Exp,
  Sigmoid,
  Tanh
};

struct UnParams {
  double alpha = 0, beta = 0, gamma = 0, bias = 0, lambd = 0;
  bool detectNeg = true, detectPos = true;
};

template <class T>
[[gnu::always_inline]] inline T applyUn(Un op, T x, const UnParams& p) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Un::Abs:
        return std::abs(x);
      case Un::Neg:
        return -x;
      case Un::Erf:
        return std::erf(x);
      case Un::Floor:
        return std::floor(x);
      case Un::Ceil:
        return std::ceil(x);
      case Un::Reciprocal:
        return T(1) / x;
      case Un::Sin:
        return std::sin(x);
      case Un::Cos:
        return std::cos(x);
      case Un::Tan:
        return std::tan(x);
      case Un::Asin:
        return std::asin(x);
      case Un::Acos:
        return std::acos(x);
      case Un::Atan:
        return std::atan(x);
      case Un::Sinh:
        return std::sinh(x);
      case Un::Cosh:
        return std::cosh(x);
      case Un::Asinh:
        return std::asinh(x);
      case Un::Acosh:
        return std::acosh(x);
      case Un::Atanh:
        return std::atanh(x);
      case Un::Sign:
        return static_cast<T>((x > 0) - (x < 0));
      case Un::Round:
        return std::nearbyint(x);
      case Un::Softsign:
        return x / (T(1) + std::abs(x));
      case Un::Log:
        return std::log(x);
      case Un::HardSigmoid:
        return static_cast<T>(std::max(0.0, std::min(1.0, p.alpha * static_cast<double>(x) + p.beta)));
      case Un::Selu:
        return static_cast<T>(x > 0 ? p.gamma * x : p.gamma * (p.alpha * std::exp(static_cast<double>(x)) - p.alpha));
      case Un::Celu:
        return static_cast<T>(std::max(0.0, static_cast<double>(x)) +
                              std::min(0.0, p.alpha * (std::exp(static_cast<double>(x) / p.alpha) - 1.0)));
      case Un::ThresholdedRelu:
        return x > static_cast<T>(p.alpha) ? x : T(0);
      case Un::Shrink:
        return x < -static_cast<T>(p.lambd) ? static_cast<T>(x + p.bias)
                                            : (x > static_cast<T>(p.lambd) ? static_cast<T>(x - p.bias) : T(0));
      case Un::Mish:
        return static_cast<T>(x * std::tanh(std::log1p(std::exp(static_cast<double>(x)))));
      case Un::Relu:
        return x < T(0) ? T(0) : x;  // NaN stays NaN
      case Un::Sqrt:
        return std::sqrt(x);
      case Un::Exp:
        return std::exp(x);
      case Un::Sigmoid:
        return T(1) / (T(1) + std::exp(-x));
      case Un::Tanh:
        return std::tanh(x);
      case Un::Identity:
        return x;
      default:
        return x;
    }
  } else {
    switch (op) {
      case Un::Sign:
        return static_cast<T>((x > 0) - (x < T(0)));
      case Un::Abs:
        if constexpr (std::is_signed_v<T>)
          return x < 0 ? static_cast<T>(-x) : x;
        else
          return x;
      case Un::Neg:
        return static_cast<T>(-x);
      case Un::Not:
        return static_cast<T>(!x);
      case Un::Relu:
        return x < T(0) ? T(0) : x;
      case Un::Identity:
        return x;
      default:
        return x;
    }
  }
}

// Erf over float32 (issue 24: glibc's erff per element made the Erf of a BERT GELU [1,128,3072] take
// milliseconds against ONNX Runtime's 0.2 ms). Compiled without -ftrapping-math, in this region only:
// with it GCC keeps the selects below as branches (a trap could tell them apart) and the loop stays
// scalar; Partex never reads the floating-point exception flags. Only builtins inside: a library
// function compiled with other options (std::copysign) is not inlined here, and its call stops the vectoriser.
#if defined(__GNUC__) && !defined(__clang__)  // (clang has no per-region optimize pragma)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

/// erf(x) for float, vectorisable (issue 24: glibc's erff per element made the Erf of a BERT GELU
/// [1,128,3072] take 6 ms against ONNX Runtime's 0.2 ms). |x| < 0.5: the Maclaurin series
/// 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)) to k = 7 (next term below 1e-9 relative); otherwise
/// Abramowitz and Stegun 7.1.26, 1 - (a1 t + ... + a5 t^5) e^(-x^2) with t = 1 / (1 + p |x|), absolute
/// error below 1.5e-7 where erf >= 0.52.
[[gnu::always_inline]] inline float erfVec(float x) {
  const float a = __builtin_fabsf(x);
  float xs = x < -0.5f ? -0.5f : x;  // the series' argument, finite whatever x
  xs = xs > 0.5f ? 0.5f : xs;
  const float z = xs * xs;
  float s = -1.0f / 75600;
  s = s * z + 1.0f / 9360;
  s = s * z - 1.0f / 1320;
  s = s * z + 1.0f / 216;
  s = s * z - 1.0f / 42;
  s = s * z + 1.0f / 10;
  s = s * z - 1.0f / 3;
  s = s * z + 1.0f;
  const float small = 1.12837916709551257f * xs * s;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float large = __builtin_copysignf(1.0f - q * t * expVec(-a * a), x);
  const float m = a < 0.5f ? 1.0f : 0.0f;  // a blend, not a branch: the loop stays vectorisable
  return small * m + large * (1.0f - m);
}

/// y = erf(x) over [0, n), vectorised; cloned for AVX-512 and AVX2 (chosen at load time), as the build
/// targets baseline x86-64.
[[gnu::target_clones("avx512f", "avx2", "default")]] void erfF32(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = erfVec(x[i]);
}

/// ln(x) for float, vectorisable (libmvec's logf takes a scalar path per lane for negative inputs, which
/// made Log on inputs of both signs no faster). Range reduction: x = 2^e m with m in [sqrt(1/2), sqrt(2))
/// (the integer bits of x offset so that the exponent carries at sqrt(2): no branch); subnormal x scaled by
/// 2^23 first. With f = m - 1 (exact) and s = f / (2 + f), |s| <= 0.1716, ln m = 2 atanh(s) =
/// 2s + 2s^3/3 + ... + 2s^9/9 (the next term is below 2e-9 relative), written f - s (f - R(s^2)) as
/// 2s = f - s f, so that f carries the leading bits exactly. ln x = e ln2_hi + (ln m + e ln2_lo) with
/// ln2_hi's trailing zero bits making e ln2_hi exact. Measured max error 1 ulp against double libm
/// (tst_cpu_kernels::vectorMath). x < 0 or NaN: NaN; 0: -inf; +inf: +inf.
[[gnu::always_inline]] inline float logVec(float x) {
  const bool sub = x < 1.17549435e-38f;  // subnormal (or 0, negative, handled below)
  const float xs = sub ? x * 8388608.0f : x;
  // Unsigned: the offset wraps for NaN and negative bit patterns (whose results are replaced below),
  // where signed arithmetic would overflow.
  uint32_t ix = __builtin_bit_cast(uint32_t, xs) + (0x3f800000u - 0x3f3504f3u);
  const int32_t e = static_cast<int32_t>(ix >> 23) - 127 - (sub ? 23 : 0);
  ix = (ix & 0x007fffffu) + 0x3f3504f3u;
  const float f = __builtin_bit_cast(float, ix) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  float r = 2.0f / 9;
  r = r * z + 2.0f / 7;
  r = r * z + 2.0f / 5;
  r = r * z + 2.0f / 3;
  r = r * z;
  const float ef = static_cast<float>(e);
  const float y = (ef * -2.12194440e-4f + (f - s * (f - r))) + ef * 0.693359375f;
  const float special = x == 0.0f ? -__builtin_inff() : x;  // +inf and NaN stay, 0 gives -inf
  const float res = x > 0.0f && x < __builtin_inff() ? y : special;
  return x < 0.0f ? __builtin_nanf("") : res;
}

[[gnu::target_clones("avx512f", "avx2", "default")]] void logF32(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = logVec(x[i]);
}
// Floor, Ceil and Round: baseline x86-64 has no rounding instruction (SSE4.1's roundps), so the plain loop
// called libm's floorf per element (3-9x slower than ONNX Runtime); the AVX2 and AVX-512 clones round in
// registers. Round is nearbyint: halves to even in the default rounding mode, as ONNX's Round.
[[gnu::target_clones("avx512f", "avx2", "default")]] void floorF32(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = __builtin_floorf(x[i]);
}
[[gnu::target_clones("avx512f", "avx2", "default")]] void ceilF32(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = __builtin_ceilf(x[i]);
}
[[gnu::target_clones("avx512f", "avx2", "default")]] void roundF32(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = __builtin_nearbyintf(x[i]);
}
/// HardSigmoid in float: max(0, min(1, alpha x + beta)), vectorised (the generic path computed it in
/// double per element).
[[gnu::target_clones("avx512f", "avx2", "default")]] void hardSigmoidF32(const float* x, float* y, int64_t n, float a,
                                                                         float b) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = a * x[i] + b;
    y[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
  }
}

/// Shrink in float: x + bias below -lambd, x - bias above lambd, 0 between (NaN gives 0, as the scalar
/// formula's comparisons did). The generic path computed it in double with branches: 11x its memory-traffic
/// floor (issue 24).
[[gnu::target_clones("avx512f", "avx2", "default")]] void shrinkF32(const float* x, float* y, int64_t n, float lambd,
                                                                    float bias) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float hi = v > lambd ? v - bias : 0.0f;
    y[i] = v < -lambd ? v + bias : hi;
  }
}

// Sin, Cos, Tan, Asin, Acos, Atan, Selu and Celu over float32 through glibc's vector math library,
// libmvec (issue 24: one scalar libm call per element ran 3-15x slower than ONNX Runtime). glibc's
// <math.h> declares the vector variants only under -ffast-math; declared here with GCC's simd attribute,
// the vectoriser calls _ZGV{b,d,e}N{4,8,16}v_<name> (SSE, AVX2, AVX-512 clone of each loop below) and the
// rest of the project keeps IEEE semantics. libmvec's float functions are accurate to a few ulp (glibc's
// manual, "Errors in Math Functions"); tst_cpu_kernels::vectorMath measures them against double libm
// over a dense sweep of each function's domain. Special values (NaN, infinities, out-of-domain inputs)
// follow C99 as the scalar functions do; errno is not set, which Partex never reads.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define PARTEX_LIBMVEC 1
extern "C" {
[[gnu::simd("notinbranch")]] float sinf(float) noexcept;
[[gnu::simd("notinbranch")]] float cosf(float) noexcept;
[[gnu::simd("notinbranch")]] float tanf(float) noexcept;
[[gnu::simd("notinbranch")]] float asinf(float) noexcept;
[[gnu::simd("notinbranch")]] float acosf(float) noexcept;
[[gnu::simd("notinbranch")]] float atanf(float) noexcept;
[[gnu::simd("notinbranch")]] float expm1f(float) noexcept;
// glibc 2.35's additions (issue 24: Sinh, Cosh, Asinh, Acosh and Atanh ran 11-48x their memory-traffic
// floor through one scalar libm call per element) and powf (glibc 2.22).
[[gnu::simd("notinbranch")]] float sinhf(float) noexcept;
[[gnu::simd("notinbranch")]] float coshf(float) noexcept;
[[gnu::simd("notinbranch")]] float asinhf(float) noexcept;
[[gnu::simd("notinbranch")]] float acoshf(float) noexcept;
[[gnu::simd("notinbranch")]] float atanhf(float) noexcept;
[[gnu::simd("notinbranch")]] float powf(float, float) noexcept;
}

#define PARTEX_VEC_MATH(NAME, FN)                                                                       \
  [[gnu::target_clones("avx512f", "avx2", "default")]] void NAME(const float* x, float* y, int64_t n) { \
    _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = FN(x[i]);                                \
  }
PARTEX_VEC_MATH(sinF32, sinf)
PARTEX_VEC_MATH(cosF32, cosf)
PARTEX_VEC_MATH(tanF32, tanf)
PARTEX_VEC_MATH(asinF32, asinf)
PARTEX_VEC_MATH(acosF32, acosf)
PARTEX_VEC_MATH(atanF32, atanf)
PARTEX_VEC_MATH(sinhF32, sinhf)
PARTEX_VEC_MATH(coshF32, coshf)
PARTEX_VEC_MATH(asinhF32, asinhf)
#undef PARTEX_VEC_MATH

constexpr int64_t kVecBlock = 2048;  ///< Elements per block of the call-then-select loops below.

// libmvec computes a vector's special lanes (out of domain, NaN, infinities) by calling the scalar function
// once per lane, which made Acosh of inputs below 1 and Pow of negative bases as slow as before. The lanes
// outside the domain's interior get an argument inside it and their C99 result by a select afterwards: in
// blocks of three loops (argument, call, select), as GCC 12 does not if-convert a loop that holds a call.

/// acosh(x): NaN below 1 (and for NaN), +inf for +inf.
[[gnu::target_clones("avx512f", "avx2", "default")]] void acoshF32(const float* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n; b += kVecBlock) {
    const int64_t e = std::min(n, b + kVecBlock);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = x[i] >= 1.0f && x[i] < __builtin_inff() ? x[i] : 2.0f;
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = acoshf(y[i]);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const float v = x[i];
      const float special = v == __builtin_inff() ? v : __builtin_nanf("");
      y[i] = v >= 1.0f && v < __builtin_inff() ? y[i] : special;
    }
  }
}

/// atanh(x): +-inf at +-1, NaN beyond (and for NaN).
[[gnu::target_clones("avx512f", "avx2", "default")]] void atanhF32(const float* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n; b += kVecBlock) {
    const int64_t e = std::min(n, b + kVecBlock);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = __builtin_fabsf(x[i]) < 1.0f ? x[i] : 0.0f;
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = atanhf(y[i]);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const float v = x[i], a = __builtin_fabsf(v);
      const float special = a == 1.0f ? __builtin_copysignf(__builtin_inff(), v) : __builtin_nanf("");
      y[i] = a < 1.0f ? y[i] : special;
    }
  }
}

/// The C99 pow(x, y) from r = powf(|x|, y) for x with its sign bit set (r itself otherwise): negated for an
/// odd integer y, NaN for a y that is not an integer unless x is -inf or -0 (pow(-inf, 0.5) = inf). Every float of
/// magnitude 2^24 or more is an even integer; infinities count as even integers, as pow(-1, inf) = 1
/// and pow(-inf, y) require.
[[gnu::always_inline]] inline float powSign(float x, float y, float r) {
  // Float arithmetic, value selects and bitwise logic only, so that the loop vectorises (a conversion to
  // int32 left it scalar). Integer tests by rounding to the nearest integer with the 2^23 trick: exact
  // below 2^23, where floats still have fractions; from 2^23 on every float is an integer, and from 2^24
  // an even one. NaN is neither.
  const float ay = __builtin_fabsf(y);
  const float t = (ay + 8388608.0f) - 8388608.0f;
  const bool isInt = (ay >= 8388608.0f) | (t == ay);
  const float h = ay * 0.5f;
  const bool odd = isInt & (ay < 16777216.0f) & (((h + 8388608.0f) - 8388608.0f) != h);
  const float signedR = odd ? -r : r;
  const float neg = isInt | (x == -__builtin_inff()) | (x == 0.0f) ? signedR : __builtin_nanf("");
  return __builtin_bit_cast(int32_t, x) < 0 ? neg : r;  // the sign bit: -0 too (pow(-0, -1) = -inf)
}

/// z[i] = x[i * sx] ^ y[i * sy] over [0, n), strides 0 or 1 (one run of a broadcast walk), through
/// libmvec's powf on |x|: the generic walk called std::pow per element, 19-29x Pow's memory-traffic
/// floor (issue 24).
[[gnu::target_clones("avx512f", "avx2", "default")]] void powRowF32(const float* x, bool sx, const float* y,
                                                                    bool sy, float* z, int64_t n) {
  // One loop nest per pair of strides, written out (a run-time stride makes every access a gather; a
  // lambda would be a function of its own, compiled without the clone's target).
  if (n <= 0) return;
  const float x0 = x[0], y0 = y[0];
#define PARTEX_POW_BLOCKS(XE, YE)                                                     \
  for (int64_t b = 0; b < n; b += kVecBlock) {                                        \
    const int64_t e = std::min(n, b + kVecBlock);                                     \
    _Pragma("omp simd") for (int64_t i = b; i < e; ++i) z[i] = __builtin_fabsf(XE);   \
    _Pragma("omp simd") for (int64_t i = b; i < e; ++i) z[i] = powf(z[i], YE);        \
    _Pragma("omp simd") for (int64_t i = b; i < e; ++i) z[i] = powSign(XE, YE, z[i]); \
  }
  // A broadcast operand is read from a block of copies: with the value itself loop-invariant, GCC 12
  // left the sign-fixing loop scalar.
  alignas(64) float rep[kVecBlock];
  if (sx && sy) {
    PARTEX_POW_BLOCKS(x[i], y[i])
  } else if (sx) {
    std::fill(rep, rep + std::min(n, kVecBlock), y0);
    PARTEX_POW_BLOCKS(x[i], rep[i - b])
  } else if (sy) {
    std::fill(rep, rep + std::min(n, kVecBlock), x0);
    PARTEX_POW_BLOCKS(rep[i - b], y[i])
  } else {
    std::fill(z, z + n, powSign(x0, y0, powf(__builtin_fabsf(x0), y0)));
  }
#undef PARTEX_POW_BLOCKS
}

// Selu and Celu in blocks: GCC 12 does not if-convert a loop that holds a call, so expm1 fills y first
// (one vector loop) and a second loop, while the block is still in cache, picks the branch per element
// (kVecBlock, above).

/// y = gamma x (x > 0), gamma alpha (e^x - 1) otherwise; ga = gamma * alpha rounded once.
[[gnu::target_clones("avx512f", "avx2", "default")]] void seluF32(const float* x, float* y, int64_t n, float g,
                                                                  float ga) {
  for (int64_t b = 0; b < n; b += kVecBlock) {
    const int64_t e = std::min(n, b + kVecBlock);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = expm1f(x[i]);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = x[i] > 0 ? g * x[i] : ga * y[i];
  }
}

/// y = max(0, x) + min(0, alpha (e^(x / alpha) - 1)), NaN giving 0 as the scalar formula's max/min did.
[[gnu::target_clones("avx512f", "avx2", "default")]] void celuF32(const float* x, float* y, int64_t n, float a) {
  for (int64_t b = 0; b < n; b += kVecBlock) {
    const int64_t e = std::min(n, b + kVecBlock);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] = expm1f(x[i] / a);
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const float neg = a * y[i];
      y[i] = (x[i] > 0 ? x[i] : 0.0f) + (neg < 0 ? neg : 0.0f);
    }
  }
}
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/// Float32 out = a ^ b with numpy broadcasting (out already shaped), vectorised through libmvec's powf;
/// false without libmvec.
bool powF32(const ExecContext& ctx, const Tensor& a, const Tensor& b, Tensor& out) {
#ifdef PARTEX_LIBMVEC
  const float* pa = ptr<float>(a);
  const float* pb = ptr<float>(b);
  float* po = ptr<float>(out);
  const std::vector<int64_t> st[2] = {broadcastStrides(a.shape(), out.shape()), broadcastStrides(b.shape(), out.shape())};
  broadcastRows<2>(ctx, out.shape(), st, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
    powRowF32(pa + off[0], is[0] != 0, pb + off[1], is[1] != 0, po + o, n);
  });
  return true;
#else
  (void)ctx, (void)a, (void)b, (void)out;
  return false;
#endif
}

/// Float32 y = op(x) over [0, n) with the operator a compile-time constant, so that the loop holds no
/// switch per element and vectorises where the operation allows (issue 24: Abs, Neg, Floor... ran 5-15x
/// slower than ONNX Runtime through applyUn's switch). false for an operator without a case here.
bool unaryF32(const ExecContext& ctx, Un op, const UnParams& p, const float* x, float* y, int64_t n) {
  auto go = [&](auto opc) {
    constexpr Un U = decltype(opc)::value;
    parallelChunks(ctx, n, [&](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) y[i] = applyUn(U, x[i], p);
    });
    return true;
  };
  auto vec = [&](void (*fn)(const float*, float*, int64_t)) {
    parallelChunks(ctx, n, [&](int64_t b, int64_t e) { fn(x + b, y + b, e - b); });
    return true;
  };
  switch (op) {
    case Un::Erf:
      return vec(erfF32);
    case Un::Floor:
      return vec(floorF32);
    case Un::Ceil:
      return vec(ceilF32);
    case Un::Round:
      return vec(roundF32);
    case Un::HardSigmoid: {
      const auto a = static_cast<float>(p.alpha), b = static_cast<float>(p.beta);
      parallelChunks(ctx, n, [&](int64_t lo, int64_t hi) { hardSigmoidF32(x + lo, y + lo, hi - lo, a, b); });
      return true;
    }
#ifdef PARTEX_LIBMVEC
    case Un::Sin:
      return vec(sinF32);
    case Un::Cos:
      return vec(cosF32);
    case Un::Tan:
      return vec(tanF32);
    case Un::Asin:
      return vec(asinF32);
    case Un::Acos:
      return vec(acosF32);
    case Un::Atan:
      return vec(atanF32);
    case Un::Sinh:
      return vec(sinhF32);
    case Un::Cosh:
      return vec(coshF32);
    case Un::Asinh:
      return vec(asinhF32);
    case Un::Acosh:
      return vec(acoshF32);
    case Un::Atanh:
      return vec(atanhF32);
    case Un::Selu: {
      const auto g = static_cast<float>(p.gamma), ga = static_cast<float>(p.gamma * p.alpha);
      parallelChunks(ctx, n, [&](int64_t b, int64_t e) { seluF32(x + b, y + b, e - b, g, ga); });
      return true;
    }
    case Un::Celu: {
      const auto a = static_cast<float>(p.alpha);
      parallelChunks(ctx, n, [&](int64_t b, int64_t e) { celuF32(x + b, y + b, e - b, a); });
      return true;
    }
#endif
    case Un::Abs:
      return go(std::integral_constant<Un, Un::Abs>{});
    case Un::Neg:
      return go(std::integral_constant<Un, Un::Neg>{});
    case Un::Reciprocal:
      return go(std::integral_constant<Un, Un::Reciprocal>{});
#ifndef PARTEX_LIBMVEC
    case Un::Sin:
      return go(std::integral_constant<Un, Un::Sin>{});
    case Un::Cos:
      return go(std::integral_constant<Un, Un::Cos>{});
    case Un::Tan:
      return go(std::integral_constant<Un, Un::Tan>{});
    case Un::Asin:
      return go(std::integral_constant<Un, Un::Asin>{});
    case Un::Acos:
      return go(std::integral_constant<Un, Un::Acos>{});
    case Un::Atan:
      return go(std::integral_constant<Un, Un::Atan>{});
    case Un::Sinh:
      return go(std::integral_constant<Un, Un::Sinh>{});
    case Un::Cosh:
      return go(std::integral_constant<Un, Un::Cosh>{});
    case Un::Asinh:
      return go(std::integral_constant<Un, Un::Asinh>{});
    case Un::Acosh:
      return go(std::integral_constant<Un, Un::Acosh>{});
    case Un::Atanh:
      return go(std::integral_constant<Un, Un::Atanh>{});
#endif
    case Un::Sign:
      return go(std::integral_constant<Un, Un::Sign>{});
    case Un::Softsign:
      return go(std::integral_constant<Un, Un::Softsign>{});
    case Un::Log:
      return vec(logF32);
#ifndef PARTEX_LIBMVEC
    case Un::Selu:
      return go(std::integral_constant<Un, Un::Selu>{});
    case Un::Celu:
      return go(std::integral_constant<Un, Un::Celu>{});
#endif
    case Un::ThresholdedRelu:
      return go(std::integral_constant<Un, Un::ThresholdedRelu>{});
    case Un::Shrink: {
      // The float comparisons of the scalar formula, whose double lambd and bias round once here.
      const auto l = static_cast<float>(p.lambd), b = static_cast<float>(p.bias);
      parallelChunks(ctx, n, [&](int64_t lo, int64_t hi) { shrinkF32(x + lo, y + lo, hi - lo, l, b); });
      return true;
    }
    case Un::Not:
      return go(std::integral_constant<Un, Un::Not>{});
    case Un::Mish:
      return go(std::integral_constant<Un, Un::Mish>{});
    case Un::Relu:
      return go(std::integral_constant<Un, Un::Relu>{});
    case Un::Sqrt:
      return go(std::integral_constant<Un, Un::Sqrt>{});
    case Un::Exp:
      return go(std::integral_constant<Un, Un::Exp>{});
    case Un::Sigmoid:
      return go(std::integral_constant<Un, Un::Sigmoid>{});
    case Un::Tanh:
      return go(std::integral_constant<Un, Un::Tanh>{});
    default:
      return false;
  }
}

class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(Un op, UnParams p) : op_(op), p_(p) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    out.resize(1);
    const int64_t n = x.numElements();
    if (op_ == Un::IsNaN || op_ == Un::IsInf) {
      if (auto s = out[0].ensure(DType::Bool, x.shape()); !s) return s;
      uint8_t* po = ptr<uint8_t>(out[0]);
      const bool ok = dispatchAll(x.dtype(), [&](auto v) {
        using T = decltype(v);
        const T* px = ptr<T>(x);
        if constexpr (std::is_floating_point_v<T>) {
          // One loop per operator, the flags outside it (issue 24).
          const T inf = std::numeric_limits<T>::infinity();
          if (op_ == Un::IsNaN) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) po[i] = px[i] != px[i];
          } else if (p_.detectPos && p_.detectNeg) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) po[i] = std::abs(px[i]) == inf;
          } else {
            const T which = p_.detectPos ? inf : p_.detectNeg ? -inf : std::numeric_limits<T>::quiet_NaN();
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) po[i] = px[i] == which;
          }
        } else {
          std::memset(po, 0, static_cast<size_t>(n));
        }
      });
      return ok ? Status::ok() : Status(makeError("dtype not supported"));
    }
    if (op_ == Un::Identity) return out[0].copyFrom(x);
    if (auto s = out[0].ensure(x.dtype(), x.shape()); !s) return s;
    if (x.dtype() == DType::Float32 && unaryF32(ctx, op_, p_, ptr<float>(x), ptr<float>(out[0]), n))
      return Status::ok();
    if (op_ == Un::Not && x.dtype() == DType::Bool) {
      const uint8_t* px = ptr<uint8_t>(x);
      uint8_t* po = ptr<uint8_t>(out[0]);
      // The pointers copied into the chunk: read through the captured references, a byte store may alias
      // them and the loop stayed scalar, reloading both per element (issue 24: 29x ONNX Runtime).
      parallelChunks(ctx, n, [px, po](int64_t b, int64_t e) {
        const uint8_t* __restrict a = px + b;
        uint8_t* __restrict y = po + b;
#pragma omp simd
        for (int64_t i = 0; i < e - b; ++i) y[i] = a[i] == 0;
      });
      return Status::ok();
    }
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      // The integer Abs, Neg, Sign and Relu with the operator a compile-time constant: a vector loop, not
      // applyUn's switch per element (issue 24: int64 Abs/Neg ran 3-5x slower than ONNX Runtime).
      auto go = [&](auto opc) {
        constexpr Un U = decltype(opc)::value;
        parallelChunks(ctx, n, [px, po, this](int64_t b, int64_t e) {
          const T* __restrict a = px + b;  // locals: an int8 store may alias captured pointers
          T* __restrict y = po + b;
#pragma omp simd
          for (int64_t i = 0; i < e - b; ++i) y[i] = applyUn(U, a[i], p_);
        });
      };
      if constexpr (std::is_integral_v<T>) {
        switch (op_) {
          case Un::Abs:
            return go(std::integral_constant<Un, Un::Abs>{});
          case Un::Neg:
            return go(std::integral_constant<Un, Un::Neg>{});
          case Un::Sign:
            return go(std::integral_constant<Un, Un::Sign>{});
          case Un::Relu:
            return go(std::integral_constant<Un, Un::Relu>{});
          default:
            break;
        }
      }
      parallelChunks(ctx, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) po[i] = applyUn(op_, px[i], p_);
      });
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  Un op_;
  UnParams p_;
};

std::string sameDTypeInputs(const Graph& g, const Node& n, size_t count) {
  for (size_t i = 1; i < count && i < n.inputs.size(); ++i)
    if (hasIn(n, i) && inDType(g, n, i) != inDType(g, n, 0)) return "inputs of different dtypes";
  return "";
}

}  // namespace

void addElementwiseOps(std::vector<OpEntry>& t) {
  const std::vector<DType> arith{DType::Float32, DType::Float64, DType::Int32, DType::Int64};
  const std::vector<DType> arithAll{DType::Float32, DType::Float64, DType::Int32,  DType::Int64,  DType::Int8,
                                    DType::UInt8,   DType::Int16,   DType::UInt16, DType::UInt32, DType::UInt64};
  auto binary = [&](const char* op, Bin b, std::vector<DType> dts) {
    t.push_back({op,
                 [dts](const Graph& g, const Node& n) {
                   if (auto e = checkDTypes(g, n, dts); !e.empty()) return e;
                   return sameDTypeInputs(g, n, 2);
                 },
                 [b](const Graph&, const Node&) { return mk<BinaryKernel>(b); }});
  };
  binary("Add", Bin::Add, arithAll);
  binary("Sub", Bin::Sub, arithAll);
  binary("Mul", Bin::Mul, arithAll);
  binary("Div", Bin::Div, arithAll);
  binary("PRelu", Bin::PRelu, arith);
  t.push_back({"Pow",
               [arith](const Graph& g, const Node& n) {
                 for (size_t i = 0; i < 2; ++i) {
                   const DType d = inDType(g, n, i);
                   if (d != DType::Float32 && d != DType::Float64 && d != DType::Int32 && d != DType::Int64)
                     return std::string("dtype ") + dtypeName(d);
                 }
                 return std::string();
               },
               [](const Graph&, const Node&) { return mk<BinaryKernel>(Bin::Pow); }});
  t.push_back(
      {"Mod",
       [arithAll](const Graph& g, const Node& n) {
         if (auto e = checkDTypes(g, n, arithAll); !e.empty()) return e;
         return sameDTypeInputs(g, n, 2);
       },
       [](const Graph&, const Node& n) { return mk<BinaryKernel>(n.attrInt("fmod", 0) ? Bin::FMod : Bin::Mod); }});
  t.push_back({"BitShift",
               [](const Graph& g, const Node& n) {
                 return checkDTypes(g, n, {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64});
               },
               [](const Graph&, const Node& n) {
                 return mk<BinaryKernel>(n.attrString("direction", "") == "LEFT" ? Bin::BitShiftL : Bin::BitShiftR);
               }});
  auto compare = [&](const char* op, Bin b) {
    t.push_back({op,
                 [](const Graph& g, const Node& n) {
                   for (size_t i = 0; i < n.inputs.size(); ++i) {
                     const DType d = inDType(g, n, i);
                     bool ok = false;
                     for (DType a : allPlainDTypes()) ok = ok || a == d;
                     if (!ok) return std::string("dtype ") + dtypeName(d);
                   }
                   return sameDTypeInputs(g, n, 2);
                 },
                 [b](const Graph&, const Node&) { return mk<BinaryKernel>(b); }});
  };
  compare("Equal", Bin::Eq);
  compare("Less", Bin::Lt);
  compare("Greater", Bin::Gt);
  compare("LessOrEqual", Bin::Le);
  compare("GreaterOrEqual", Bin::Ge);
  for (auto [op, b] : {std::pair{"And", Bin::And}, std::pair{"Or", Bin::Or}, std::pair{"Xor", Bin::Xor}}) {
    Bin bb = b;
    t.push_back({op, [](const Graph& g, const Node& n) { return checkDTypes(g, n, {DType::Bool}); },
                 [bb](const Graph&, const Node&) { return mk<BinaryKernel>(bb); }});
  }
  auto variadic = [&](const char* op, Bin b, bool mean, std::vector<DType> dts) {
    t.push_back({op,
                 [dts](const Graph& g, const Node& n) {
                   if (auto e = checkDTypes(g, n, dts); !e.empty()) return e;
                   return sameDTypeInputs(g, n, n.inputs.size());
                 },
                 [b, mean](const Graph&, const Node&) { return mk<VariadicKernel>(b, mean); }});
  };
  variadic("Sum", Bin::Add, false, {DType::Float32, DType::Float64});
  variadic("Mean", Bin::Add, true, {DType::Float32, DType::Float64});
  variadic("Max", Bin::Max, false, arithAll);
  variadic("Min", Bin::Min, false, arithAll);
  t.push_back({"Where",
               [](const Graph& g, const Node& n) {
                 if (inDType(g, n, 0) != DType::Bool) return std::string("condition is not bool");
                 for (size_t i = 1; i < 3; ++i) {
                   bool ok = false;
                   for (DType a : allPlainDTypes()) ok = ok || a == inDType(g, n, i);
                   if (!ok) return std::string("dtype ") + dtypeName(inDType(g, n, i));
                 }
                 return std::string();
               },
               [](const Graph&, const Node&) { return mk<WhereKernel>(); }});
  // float16 to and from float32 (castInto); CastLike's target_type is only a dtype.
  auto castCheck = [](const Graph& g, const Node& n) {
    const DType from = inDType(g, n, 0), to = outDType(g, n, 0);
    if (from != DType::Float16 && to != DType::Float16) return checkDTypes(g, n, allPlainDTypes());
    auto f16or32 = [](DType t) { return t == DType::Float16 || t == DType::Float32; };
    if (!f16or32(from) || !f16or32(to))
      return std::string("float16 converts to and from float32 only, not ") + dtypeName(from) + " to " +
             dtypeName(to);
    return std::string();
  };
  t.push_back({"Cast", castCheck, [](const Graph&, const Node& n) {
                 return mk<CastKernel>(static_cast<DType>(n.attrInt("to", 0)), false);
               }});
  t.push_back(
      {"CastLike", castCheck, [](const Graph&, const Node&) { return mk<CastKernel>(DType::Undefined, true); }});

  auto unary = [&](const char* op, Un u, std::vector<DType> dts, std::function<UnParams(const Node&)> params = {}) {
    t.push_back(
        {op, [dts](const Graph& g, const Node& n) { return checkDTypes(g, n, dts); },
         [u, params](const Graph&, const Node& n) { return mk<UnaryKernel>(u, params ? params(n) : UnParams{}); }});
  };
  const std::vector<DType> fl = floatDTypes();
  for (auto [op, u] : {std::pair{"Erf", Un::Erf},
                       {"Floor", Un::Floor},
                       {"Ceil", Un::Ceil},
                       {"Reciprocal", Un::Reciprocal},
                       {"Sin", Un::Sin},
                       {"Cos", Un::Cos},
                       {"Tan", Un::Tan},
                       {"Asin", Un::Asin},
                       {"Acos", Un::Acos},
                       {"Atan", Un::Atan},
                       {"Sinh", Un::Sinh},
                       {"Cosh", Un::Cosh},
                       {"Asinh", Un::Asinh},
                       {"Acosh", Un::Acosh},
                       {"Atanh", Un::Atanh},
                       {"Round", Un::Round},
                       {"Softsign", Un::Softsign},
                       {"Log", Un::Log},
                       {"Mish", Un::Mish}})
    unary(op, u, fl);
  // Plain Relu, Sqrt, Exp, Sigmoid, Tanh and Clip: the CPU backend runs these through oneDNN (its entries
  // come first); constant folding runs these.
  for (auto [op, u] : {std::pair{"Sqrt", Un::Sqrt}, {"Exp", Un::Exp}, {"Sigmoid", Un::Sigmoid}, {"Tanh", Un::Tanh}})
    unary(op, u, fl);
  unary("Relu", Un::Relu, {DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32, DType::Int64});
  t.push_back({"Clip", [arithAll](const Graph& g, const Node& n) { return checkDTypes(g, n, arithAll); },
               [](const Graph&, const Node& n) { return mk<ClipKernel>(n); }});
  unary("Sign", Un::Sign, arithAll);
  // Abs and Neg are memory-bound and needed for integers too: OpenMP, not oneDNN.
  unary("Abs", Un::Abs, arithAll);
  unary("Neg", Un::Neg, {DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32, DType::Int64});
  unary("Not", Un::Not, {DType::Bool});
  unary("Identity", Un::Identity, allPlainDTypes());
  // HardSigmoid and Log here, not in oneDNN: oneDNN 2.6's log is approximate (log(1) = -1e-6, beyond the
  // suite's atol) and its eltwise post-op chain gave wrong HardSigmoid results.
  unary("HardSigmoid", Un::HardSigmoid, fl, [](const Node& n) {
    UnParams p;
    p.alpha = n.attrFloat("alpha", 0.2);
    p.beta = n.attrFloat("beta", 0.5);
    return p;
  });
  unary("Selu", Un::Selu, fl, [](const Node& n) {
    UnParams p;
    p.alpha = n.attrFloat("alpha", 1.67326319217681884765625);
    p.gamma = n.attrFloat("gamma", 1.05070102214813232421875);
    return p;
  });
  unary("Celu", Un::Celu, {DType::Float32}, [](const Node& n) {
    UnParams p;
    p.alpha = n.attrFloat("alpha", 1.0);
    return p;
  });
  unary("ThresholdedRelu", Un::ThresholdedRelu, fl, [](const Node& n) {
    UnParams p;
    p.alpha = n.attrFloat("alpha", 1.0);
    return p;
  });
  unary("Shrink", Un::Shrink, fl, [](const Node& n) {
    UnParams p;
    p.bias = n.attrFloat("bias", 0.0);
    p.lambd = n.attrFloat("lambd", 0.5);
    return p;
  });
  t.push_back({"IsNaN",
               [](const Graph& g, const Node& n) {
                 return checkDTypes(g, n, {DType::Float32, DType::Float64, DType::Bool});
               },
               [](const Graph&, const Node&) { return mk<UnaryKernel>(Un::IsNaN, UnParams{}); }});
  t.push_back({"IsInf",
               [](const Graph& g, const Node& n) {
                 return checkDTypes(g, n, {DType::Float32, DType::Float64, DType::Bool});
               },
               [](const Graph&, const Node& n) {
                 UnParams p;
                 p.detectNeg = n.attrInt("detect_negative", 1) != 0;
                 p.detectPos = n.attrInt("detect_positive", 1) != 0;
                 return mk<UnaryKernel>(Un::IsInf, p);
               }});
}

}  // namespace partex::cpu
