#pragma once
/// \file Internal to the CPU kernels: float math that a compiler vectorises (no libm call), inlined into
/// the AVX2/AVX-512 clones of the loops that use it (element-wise Exp/Erf, ReduceLogSumExp, Softmax),
/// and the vectorised arg-max scans that ArgMax, ArgMin and Hardmax share.
/// Compiled without -ftrapping-math (as the callers' regions are): with it GCC keeps the selects as
/// branches (a trap could tell them apart) and the loop stays scalar; Partex never reads the
/// floating-point exception flags.

#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__)  // (clang has no per-region optimize pragma)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace partex::cpu {

/// e^x in float arithmetic a compiler vectorises (no libm call): x = n ln2 + r with n rounded to nearest
/// (the 1.5 * 2^23 trick) and |r| <= ln2 / 2, e^r by its Taylor series to r^7 (truncation below 1e-8
/// relative), 2^n put into the exponent bits. Inputs clamped to 88 above; below ln(FLT_MIN) = -87.3365 the
/// result is 0 (flushed, not a subnormal and not e^-87: Softmax over a causal mask gave its masked
/// probabilities as 1.6e-38, and the MatMul after it then made subnormal products, 80x slower on a
/// generated Llama's attention).
[[gnu::always_inline]] inline float expVec(float x) {
  const float x0 = x;
  x = x < -87.33f ? -87.33f : x;  // value selects, not std::min/max's references: the loop stays vectorisable
  x = x > 88.0f ? 88.0f : x;
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 split in two for exactness
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float e = p * __builtin_bit_cast(float, bits);
  return x0 < -87.33f ? 0.0f : e;
}

/// IEEE binary16 bits of float x rounded to nearest, ties to even (numpy's astype(float16), F16C's
/// vcvtps2ph): magnitudes of 65520 and up give infinity, NaN a quiet NaN (0x7e00 with x's sign), results
/// below 2^-14 the subnormals (placed by adding 0.5f, whose ulp is binary16's smallest subnormal 2^-24,
/// the float addition rounding them to nearest even). Written with selects only, so that a loop over it
/// vectorises (after F. Giesen's float_to_half_fast3_rtne).
[[gnu::always_inline]] inline uint16_t f32ToF16Bits(float x) {
  const uint32_t u = __builtin_bit_cast(uint32_t, x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t special = a > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN, or infinity/overflow
  const uint32_t sub = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, a) + 0.5f) - 0x3f000000u;
  const uint32_t norm = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;  // exponent rebiased, rounded
  const uint32_t h = a >= 0x47800000u ? special : a < 0x38800000u ? sub : norm;
  return static_cast<uint16_t>(h | sign);
}

/// The float of IEEE binary16 bits h (exact: every binary16 value is a float). Subnormals renormalised by
/// a float subtraction of 2^-14; infinities and NaN keep their payload.
[[gnu::always_inline]] inline float f16BitsToF32(uint16_t h) {
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = em & 0x0f800000u;
  const uint32_t normal = em + 0x38000000u;                                 // exponent + (127 - 15)
  const uint32_t special = em + 0x70000000u;                                // exponent 255 for inf/NaN
  const float sub = __builtin_bit_cast(float, em + 0x38800000u) - 6.103515625e-05f;  // 2^-14
  const uint32_t m = exp == 0x0f800000u ? special : exp == 0 ? __builtin_bit_cast(uint32_t, sub) : normal;
  return __builtin_bit_cast(float, m | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

// GCC vector types (element-wise arithmetic, comparisons and ?: on them; lowered to the instructions of
// the clone that inlines them: four SSE registers in the baseline one, one AVX-512 register), for loops
// that keep several independent accumulators in registers.
using V16f = float __attribute__((vector_size(64)));
using V8f = float __attribute__((vector_size(32)));
using V4f = float __attribute__((vector_size(16)));
using V16i = int32_t __attribute__((vector_size(64)));
using V16d = double __attribute__((vector_size(128)));

/// The maximum (`max`) or minimum of the 16 lanes, in halving steps (GCC's own reduction of an `omp simd
/// reduction(max)` loop went through a 64-entry array in memory, one dependent scalar step per entry).
template <bool max>
[[gnu::always_inline]] inline float hExtreme(const V16f& v) {
  V8f a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const V8f b = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  a = max ? (b > a ? b : a) : (b < a ? b : a);
  V4f c = __builtin_shufflevector(a, a, 0, 1, 2, 3);
  const V4f d = __builtin_shufflevector(a, a, 4, 5, 6, 7);
  c = max ? (d > c ? d : c) : (d < c ? d : c);
  float r = c[0];
  for (int l = 1; l < 4; ++l) r = max ? (c[l] > r ? c[l] : r) : (c[l] < r ? c[l] : r);
  return r;
}
/// The sum of the 16 lanes, in halving steps.
[[gnu::always_inline]] inline float hSum(const V16f& v) {
  const V8f a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4f c = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (c[0] + c[2]) + (c[1] + c[3]);
}
/// The maximum of n >= 1 contiguous floats: 32 lanes seeded with q[0] (a NaN there stays; later NaNs are
/// skipped, as a scan in order with `>` does); the last partial vector re-reads the row's last 16 values
/// (a maximum may count a value twice), so that no scalar tail is left.
[[gnu::always_inline]] inline float rowMaxF(const float* q, int64_t n) {
  if (n < 16) {
    float m = q[0];
    for (int64_t j = 1; j < n; ++j) m = q[j] > m ? q[j] : m;
    return m;
  }
  V16f a0 = V16f{} + q[0], a1 = a0, v0, v1;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __builtin_memcpy(&v0, q + j, sizeof v0);
    __builtin_memcpy(&v1, q + j + 16, sizeof v1);
    a0 = v0 > a0 ? v0 : a0;
    a1 = v1 > a1 ? v1 : a1;
  }
  if (j + 16 <= n) {
    __builtin_memcpy(&v0, q + j, sizeof v0);
    a0 = v0 > a0 ? v0 : a0;
    j += 16;
  }
  if (j < n) {
    __builtin_memcpy(&v1, q + n - 16, sizeof v1);
    a1 = v1 > a1 ? v1 : a1;
  }
  a0 = a1 > a0 ? a1 : a0;
  return hExtreme<true>(a0);
}
/// The sum of n contiguous floats in float, 32 lanes (a float32 softmax's denominator, oneDNN's order of
/// magnitude of rounding); the last partial vector is the row's last 16 values with those already
/// added masked to zero.
[[gnu::always_inline]] inline float rowSumF(const float* q, int64_t n) {
  if (n < 16) {
    float s = 0;
    for (int64_t j = 0; j < n; ++j) s += q[j];
    return s;
  }
  V16f a0 = V16f{}, a1 = a0, v0, v1;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __builtin_memcpy(&v0, q + j, sizeof v0);
    __builtin_memcpy(&v1, q + j + 16, sizeof v1);
    a0 += v0;
    a1 += v1;
  }
  if (j + 16 <= n) {
    __builtin_memcpy(&v0, q + j, sizeof v0);
    a0 += v0;
    j += 16;
  }
  if (j < n) {
    const V16i lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    __builtin_memcpy(&v1, q + n - 16, sizeof v1);
    a1 += lane >= static_cast<int32_t>(16 - (n - j)) ? v1 : V16f{};
  }
  return hSum(a0 + a1);
}

/// The index of the first maximum (`max`) or minimum of n >= 1 contiguous floats, or of the last one with
/// `last`: what a scan in order with `>` (`>=` with `last`) keeps, NaN included (a NaN first wins, a
/// later one never does). Vectorised (a pass for the extreme value, then a search for it); ops_reduce.cpp.
int64_t argBestRowF32(const float* q, int64_t n, bool max, bool last);
/// The same for each of `inner` columns of [n, inner] contiguous floats, n >= 1: idx[i] is the row of
/// column i's extreme; `best` is scratch of `inner` floats. Vectorised over the columns.
void argBestColsF32(const float* q, int64_t n, int64_t inner, bool max, bool last, int64_t* idx, float* best);

}  // namespace partex::cpu

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
