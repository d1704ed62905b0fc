// A 1x1 convolution over channels-last pixels as a product of the pixel rows [P, C] with the transposed
// weights [C, M] (conv1x1.h), a depthwise convolution's output rows over channels-last images, and the
// vectorised activations of a fused chain after them.
// Built for baseline x86-64 with AVX-512 and AVX2 clones; GCC vector types (kernels/vecmath.h) hold the
// accumulators, each a register of the AVX-512 clone.

#include "cpu/conv1x1.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/vecmath.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace partex::cpu {

namespace {

/// (By reference: a V16f returned by value is an ABI of its own without AVX-512, -Wpsabi.)
[[gnu::always_inline]] inline void load16(V16f& v, const float* p) { __builtin_memcpy(&v, p, sizeof v); }

/// One tile: RB pixel rows (x rows of C) by NB vectors of columns starting at the weights' column w (rows
/// of Mp) into y (rows of ldy); only the first `cols` columns of the tile are stored.
template <int NB, int RB>
[[gnu::always_inline]] inline void tile(const float* x, int64_t C, const float* w, int64_t Mp, const float* bias,
                                        float* y, int64_t ldy, int64_t cols) {
  V16f acc[RB][NB];
#pragma GCC unroll 4
  for (int nb = 0; nb < NB; ++nb) {
    V16f b;
    load16(b, bias + nb * kPixelGemmLanes);
#pragma GCC unroll 16
    for (int r = 0; r < RB; ++r) acc[r][nb] = b;
  }
  for (int64_t c = 0; c < C; ++c) {
    V16f wv[NB];
#pragma GCC unroll 4
    for (int nb = 0; nb < NB; ++nb) load16(wv[nb], w + c * Mp + nb * kPixelGemmLanes);
#pragma GCC unroll 16
    for (int r = 0; r < RB; ++r) {
      const float v = x[r * C + c];
      const V16f xv = {v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v};  // (V16f{} + v costs a scalar add of 0)
#pragma GCC unroll 4
      for (int nb = 0; nb < NB; ++nb) acc[r][nb] += xv * wv[nb];
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int nb = 0; nb < NB; ++nb) {
      const int64_t c0 = nb * kPixelGemmLanes;
      float* dst = y + r * ldy + c0;
      if (c0 + kPixelGemmLanes <= cols)
        __builtin_memcpy(dst, &acc[r][nb], sizeof(V16f));
      else if (c0 < cols)
        __builtin_memcpy(dst, &acc[r][nb], static_cast<size_t>(cols - c0) * sizeof(float));
    }
}

/// Rows [0, P) of one block of NB vectors of columns: RB rows at a time, the last P % RB rows through a
/// zero-padded copy (pad, RB * C floats).
template <int NB, int RB>
[[gnu::always_inline]] inline void columnBlock(const float* x, int64_t P, int64_t C, const float* w, int64_t Mp,
                                               const float* bias, float* y, int64_t M, int64_t cols, float* pad,
                                               float* out) {
  int64_t p = 0;
  for (; p + RB <= P; p += RB) tile<NB, RB>(x + p * C, C, w, Mp, bias, y + p * M, M, cols);
  if (p < P) {
    const int64_t left = P - p;
    std::memcpy(pad, x + p * C, static_cast<size_t>(left * C) * sizeof(float));
    std::memset(pad + left * C, 0, static_cast<size_t>((RB - left) * C) * sizeof(float));
    tile<NB, RB>(pad, C, w, Mp, bias, out, NB * kPixelGemmLanes, cols);
    for (int64_t r = 0; r < left; ++r)
      std::memcpy(y + (p + r) * M, out + r * NB * kPixelGemmLanes, static_cast<size_t>(cols) * sizeof(float));
  }
}

/// Pixel rows per stripe: the stripe's rows of x stay in the L1/L2 cache while every block of columns
/// reads them.
constexpr int64_t kStripeRows = 96;

/// Value selects, not std::min/max's references: the loops stay vectorisable.
[[gnu::always_inline]] inline float clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

}  // namespace

bool pixelGemmFast() {
  static const bool fast = __builtin_cpu_supports("avx512f");
  return fast;
}

[[gnu::target_clones("avx512f", "default")]] void gemmPixels(const float* x, int64_t P, int64_t C, const float* wT,
                                                             const float* bias, int64_t M, float* y) {
  const int64_t Mp = (M + kPixelGemmLanes - 1) / kPixelGemmLanes * kPixelGemmLanes;
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(16 * C + 16 * 4 * kPixelGemmLanes))
    scratch.resize(static_cast<size_t>(16 * C + 16 * 4 * kPixelGemmLanes));
  float* padRows = scratch.data();
  float* padOut = padRows + 16 * C;
  for (int64_t s = 0; s < P; s += kStripeRows) {
    const int64_t rows = std::min(kStripeRows, P - s);
    const float* xs = x + s * C;
    float* ys = y + s * M;
    for (int64_t m0 = 0; m0 < M; m0 += 4 * kPixelGemmLanes) {
      const int64_t cols = std::min<int64_t>(4 * kPixelGemmLanes, M - m0);
      const int64_t nb = (cols + kPixelGemmLanes - 1) / kPixelGemmLanes;
      const float* w = wT + m0;
      const float* b = bias + m0;
      float* yb = ys + m0;
      switch (nb) {
        case 1: columnBlock<1, 16>(xs, rows, C, w, Mp, b, yb, M, cols, padRows, padOut); break;
        case 2: columnBlock<2, 12>(xs, rows, C, w, Mp, b, yb, M, cols, padRows, padOut); break;
        case 3: columnBlock<3, 8>(xs, rows, C, w, Mp, b, yb, M, cols, padRows, padOut); break;
        default: columnBlock<4, 6>(xs, rows, C, w, Mp, b, yb, M, cols, padRows, padOut); break;
      }
    }
  }
}

namespace {

/// RB output pixels ox0.. of one 16-channel block cb: every tap inside the image for all of them
/// (interior) when `checked` is false; otherwise the taps outside are skipped pixel by pixel.
template <int RB>
[[gnu::always_inline]] inline void depthwiseTile(const float* x, int64_t H, int64_t W, int64_t C, const float* wT,
                                                 const float* bias, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                                                 int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oy, int64_t ox0,
                                                 int64_t cb, bool checked, float* y) {
  V16f acc[RB];
  V16f b;
  load16(b, bias + cb);
#pragma GCC unroll 8
  for (int i = 0; i < RB; ++i) acc[i] = b;
  for (int64_t ky = 0; ky < kh; ++ky) {
    const int64_t iy = oy * sh - ph + ky * dh;
    if (iy < 0 || iy >= H) continue;
    const float* xr = x + iy * W * C + cb;
    for (int64_t kx = 0; kx < kw; ++kx) {
      V16f wv;
      load16(wv, wT + (ky * kw + kx) * C + cb);
      const int64_t off = kx * dw - pw;
#pragma GCC unroll 8
      for (int i = 0; i < RB; ++i) {
        const int64_t ix = (ox0 + i) * sw + off;
        if (checked && (ix < 0 || ix >= W)) continue;
        V16f xv;
        load16(xv, xr + ix * C);
        acc[i] += xv * wv;
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < RB; ++i) __builtin_memcpy(y + (ox0 + i) * C + cb, &acc[i], sizeof(V16f));
}

}  // namespace

[[gnu::target_clones("avx512f", "default")]] void depthwiseRowNhwc(
    const float* x, int64_t H, int64_t W, int64_t C, const float* wT, const float* bias, int64_t kh, int64_t kw,
    int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oy, int64_t OW, float* y) {
  // Output columns whose every tap lies inside the row: [lo, hi).
  const int64_t lo = std::min(OW, (pw + sw - 1) / sw);
  const int64_t last = W - 1 + pw - (kw - 1) * dw;  // ox * sw <= last
  const int64_t hi = std::max(lo, std::min(OW, last < 0 ? int64_t{0} : last / sw + 1));
  constexpr int RB = 8;
  for (int64_t cb = 0; cb < C; cb += kPixelGemmLanes) {
    int64_t ox = 0;
    for (; ox < lo; ++ox) depthwiseTile<1>(x, H, W, C, wT, bias, kh, kw, sh, sw, ph, pw, dh, dw, oy, ox, cb, true, y);
    for (; ox + RB <= hi; ox += RB)
      depthwiseTile<RB>(x, H, W, C, wT, bias, kh, kw, sh, sw, ph, pw, dh, dw, oy, ox, cb, false, y);
    for (; ox < OW; ++ox) depthwiseTile<1>(x, H, W, C, wT, bias, kh, kw, sh, sw, ph, pw, dh, dw, oy, ox, cb, true, y);
  }
}

// The activation loops: one `omp simd` loop per function, the switch outside it (a switch per element
// kept GCC's loop scalar, as applyElt's is). A macro, not a lambda (a lambda is compiled without the
// clone's target).
#define PARTEX_ACT_LOOP(EXPR)                                   \
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {         \
    const float v = y[i];                                       \
    y[i] = (EXPR);                                              \
  }

[[gnu::target_clones("avx512f", "avx2", "default")]] void actFast(FastAct f, float a, float b, float* y, int64_t n) {
  switch (f) {
    case FastAct::None: break;
    case FastAct::Relu:
      if (a == 0.0f) {
        PARTEX_ACT_LOOP(v < 0.0f ? 0.0f : v)
      } else {
        PARTEX_ACT_LOOP(v < 0.0f ? a * v : v)
      }
      break;
    case FastAct::Logistic: PARTEX_ACT_LOOP(1.0f / (1.0f + expVec(-v))) break;
    case FastAct::Swish: PARTEX_ACT_LOOP(v / (1.0f + expVec(-a * v))) break;
    case FastAct::HardSwish: PARTEX_ACT_LOOP(v * clamp01(v / 6.0f + 0.5f)) break;
    case FastAct::Clip: PARTEX_ACT_LOOP(v < a ? a : v > b ? b : v) break;
    case FastAct::Linear: PARTEX_ACT_LOOP(a * v + b) break;
    case FastAct::HardSigmoid: PARTEX_ACT_LOOP(clamp01(a * v + b)) break;
  }
}
#undef PARTEX_ACT_LOOP

}  // namespace partex::cpu

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
