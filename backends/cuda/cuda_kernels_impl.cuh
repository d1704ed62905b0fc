#pragma once
/// \file Private helpers of cuda_kernels.cu: the scalar maths (activations, binary operators, Resize
/// coordinates) and the index maths (broadcast, strided copy, Pad) as `__host__ __device__` functions,
/// and the host-side planning that turns shapes into kernel parameters (collapsing axes, broadcast
/// strides, the per-channel pattern). Kept apart so that a host-only program can check them on the CPU.

#include "cuda_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#define PX_HD __host__ __device__ __forceinline__
#ifdef __CUDA_ARCH__
#define PX_UNROLL _Pragma("unroll")
#else
#define PX_UNROLL
#endif

namespace partex::cuda::detail {

// ---------------------------------------------------------------------------------------------------
// Scalar maths (ONNX operator definitions, float32)

/// One activation; `Unary` values as in cuda_kernels.h. NaN propagates where ONNX's reference does.
PX_HD float applyUnary(Unary op, float a, float b, float x) {
  switch (op) {
    case Unary::Identity: return x;
    case Unary::Relu: return x > 0.f ? x : 0.f;
    case Unary::LeakyRelu: return x >= 0.f ? x : a * x;
    case Unary::Sigmoid: return 1.f / (1.f + expf(-x));
    case Unary::HardSigmoid: return fmaxf(0.f, fminf(1.f, a * x + b));
    case Unary::HardSwish: return x * fmaxf(0.f, fminf(1.f, x * (1.f / 6.f) + 0.5f));
    case Unary::Tanh: return tanhf(x);
    case Unary::Clip: return x < a ? a : (x > b ? b : x);  // inclusive bounds, NaN stays NaN
    case Unary::Exp: return expf(x);
    case Unary::Log: return logf(x);
    case Unary::Sqrt: return sqrtf(x);
    case Unary::Abs: return fabsf(x);
    case Unary::Neg: return -x;
    case Unary::Reciprocal: return 1.f / x;
    case Unary::Erf: return erff(x);
    case Unary::Elu: return x > 0.f ? x : a * expm1f(x);
    case Unary::Softplus: return fmaxf(x, 0.f) + log1pf(expf(-fabsf(x)));  // log(1 + e^x) without overflow
    case Unary::Floor: return floorf(x);
    case Unary::Ceil: return ceilf(x);
    case Unary::Sin: return sinf(x);
    case Unary::Cos: return cosf(x);
    case Unary::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Unary::Silu: return x / (1.f + expf(-x));
  }
  return x;
}

PX_HD float applyUnary(const UnaryOp& p, float x) { return applyUnary(p.op, p.a, p.b, x); }

/// a OP b for one of the binary operators (Pow: exponent 2 as a product, the common case).
template <Binary OP>
PX_HD float applyBinary(float a, float b) {
  if constexpr (OP == Binary::Add) return a + b;
  else if constexpr (OP == Binary::Sub) return a - b;
  else if constexpr (OP == Binary::Mul) return a * b;
  else if constexpr (OP == Binary::Div) return a / b;
  else if constexpr (OP == Binary::Pow) return b == 2.f ? a * a : powf(a, b);
  else if constexpr (OP == Binary::Max) return fmaxf(a, b);
  else return fminf(a, b);
}

/// Resize coordinate code of an axis that keeps its length at scale 1: the identity, as the CPU
/// reference and ONNX Runtime take it (ONNX's formula would shift tf_half_pixel_for_nearest by half).
constexpr int kCoordIdentity = -1;

/// Resize: the input coordinate of output coordinate `o` (ONNX coordinate_transformation_mode; codes as
/// in resize2dF32, or kCoordIdentity). `scale` is output/input. Double precision, as the CPU reference.
PX_HD double resizeCoord(int64_t o, int64_t inLen, int64_t outLen, double scale, int coord) {
  const double od = static_cast<double>(o);
  switch (coord) {
    case kCoordIdentity: return od;
    case 0: return (od + 0.5) / scale - 0.5;                          // half_pixel
    case 1: return od / scale;                                        // asymmetric
    case 2:                                                           // align_corners
      return outLen == 1 ? 0.0 : od * static_cast<double>(inLen - 1) / static_cast<double>(outLen - 1);
    case 3: return outLen > 1 ? (od + 0.5) / scale - 0.5 : 0.0;       // pytorch_half_pixel
    default: return (od + 0.5) / scale;                               // tf_half_pixel_for_nearest
  }
}

PX_HD int64_t clampIndex(int64_t i, int64_t len) { return i < 0 ? 0 : (i >= len ? len - 1 : i); }

/// Resize nearest: the source index of coordinate x (ONNX nearest_mode: 0 round_prefer_floor,
/// 1 round_prefer_ceil, 2 floor, 3 ceil), clamped into [0, len).
PX_HD int64_t nearestIndex(double x, int64_t len, int mode) {
  const double fl = floor(x);
  double v;
  switch (mode) {
    case 0: v = (x - fl == 0.5) ? fl : round(x); break;
    case 1: v = (x - fl == 0.5) ? ceil(x) : round(x); break;
    case 2: v = fl; break;
    default: v = ceil(x); break;
  }
  return clampIndex(static_cast<int64_t>(v), len);
}

/// Resize linear: the two taps and the weight of the second. ONNX clamps the coordinate into [0, len-1]
/// (outside it the result is the edge value): same as clamping both taps, which this does.
struct LinearTap {
  int64_t i0, i1;
  float w;
};
PX_HD LinearTap linearTap(double x, int64_t len) {
  const double fl = floor(x);
  const int64_t a = static_cast<int64_t>(fl);
  return {clampIndex(a, len), clampIndex(a + 1, len), static_cast<float>(x - fl)};
}

/// The scale used in the coordinate transform: when the caller passed OH/H (rounded to float, the model
/// gave sizes), the exact ratio in double, as the CPU reference uses; otherwise the model's float scale.
/// The coordinate code of one axis: kCoordIdentity where the axis keeps its length at scale 1.
inline int axisCoord(int coord, int64_t inLen, int64_t outLen, double scale) {
  return inLen == outLen && scale == 1.0 ? kCoordIdentity : coord;
}

inline double effectiveScale(float scale, int64_t inLen, int64_t outLen) {
  if (inLen > 0) {
    const double exact = static_cast<double>(outLen) / static_cast<double>(inLen);
    if (static_cast<float>(exact) == scale) return exact;
  }
  return static_cast<double>(scale);
}

/// ONNX Pad reflect (edge excluded) of index i into [0, len); repeated for pads beyond one reflection.
PX_HD int64_t reflectIndex(int64_t i, int64_t len) {
  if (len <= 1) return 0;
  const int64_t period = 2 * (len - 1);
  i %= period;
  if (i < 0) i += period;
  return i < len ? i : period - i;
}

// ---------------------------------------------------------------------------------------------------
// Index maths

// The parameter structs below store their axes innermost first (index 0 = the last axis) so that the
// fully unrolled loops index them with constants: kernel parameters then stay in constant memory
// instead of being copied to a local-memory array.

/// A strided gather over an output of rank <= kMaxRank: out[o] = in[base + sum_k idx_k * stride[k]],
/// idx the row-major multi-index of o in dims. Used by Slice, Transpose and general broadcasting.
/// The outermost axis's stride is also kept apart (`outer`): it takes the quotient left after the
/// inner axes, so the loop never indexes the arrays with a run-time axis.
template <typename I>
struct Strided {
  int rank = 0;
  I dims[kMaxRank] = {};    ///< innermost first
  I stride[kMaxRank] = {};  ///< innermost first
  I outer = 0;              ///< stride[rank - 1] (0 when rank is 0)
  I base = 0;
};

template <typename I>
PX_HD I stridedOffset(const Strided<I>& s, I o) {
  I off = s.base;
  PX_UNROLL
  for (int j = 0; j < kMaxRank - 1; ++j) {
    if (j >= s.rank - 1) break;
    const I q = o / s.dims[j];
    off += (o - q * s.dims[j]) * s.stride[j];
    o = q;
  }
  return off + o * s.outer;
}

/// Broadcasting: the offsets into a and b of output element o (strides 0 on broadcast axes).
template <typename I>
struct Bcast {
  int rank = 0;
  I dims[kMaxRank] = {};  ///< innermost first, as sa and sb
  I sa[kMaxRank] = {};
  I sb[kMaxRank] = {};
  I outerA = 0, outerB = 0;  ///< sa[rank - 1], sb[rank - 1] (0 when rank is 0)
};

template <typename I>
PX_HD void bcastOffsets(const Bcast<I>& s, I o, I& oa, I& ob) {
  oa = 0;
  ob = 0;
  PX_UNROLL
  for (int j = 0; j < kMaxRank - 1; ++j) {
    if (j >= s.rank - 1) break;
    const I q = o / s.dims[j];
    const I r = o - q * s.dims[j];
    oa += r * s.sa[j];
    ob += r * s.sb[j];
    o = q;
  }
  oa += o * s.outerA;
  ob += o * s.outerB;
}

/// Pad: for output element o, the input offset, or -1 for a constant-padded element.
template <typename I>
struct PadParams {
  int rank = 0;
  int mode = 0;               ///< 0 constant, 1 reflect, 2 edge
  I outDims[kMaxRank] = {};   ///< innermost first, as the others
  I inDims[kMaxRank] = {};
  I inStride[kMaxRank] = {};
  I begin[kMaxRank] = {};     ///< pads at the beginning (negative: crop)
};

template <typename I>
PX_HD I padSource(const PadParams<I>& p, I o) {
  I off = 0;
  PX_UNROLL
  for (int j = 0; j < kMaxRank; ++j) {
    if (j >= p.rank) break;
    I idx = o;
    if (j < p.rank - 1) {
      const I q = o / p.outDims[j];
      idx = o - q * p.outDims[j];
      o = q;
    }
    I i = idx - p.begin[j];
    const I len = p.inDims[j];
    if (i < 0 || i >= len) {
      if (p.mode == 0) return -1;
      i = p.mode == 1 ? static_cast<I>(reflectIndex(i, len)) : (i < 0 ? 0 : len - 1);
    }
    off += i * p.inStride[j];
  }
  return off;
}

// ---------------------------------------------------------------------------------------------------
// Host-side planning

/// Broadcast strides of `s` (right-aligned) against `out`: 0 on axes where s has 1 (or no axis).
inline void broadcastStrides(const Shape& s, const Shape& out, int64_t* strides) {
  int64_t st = 1;
  for (int k = out.rank - 1; k >= 0; --k) {
    const int ks = k - (out.rank - s.rank);
    const int64_t d = ks >= 0 ? s.d[ks] : 1;
    strides[k] = (d == 1) ? 0 : st;
    st *= d;
  }
}

/// Drops axes of length 1 and merges neighbouring axes that are contiguous in every one of the `m`
/// stride arrays (an axis k merges into k+1 when stride[k] == stride[k+1] * dims[k+1] for all arrays).
/// Works in place; returns the new rank (at least 0).
inline int collapseAxes(int rank, int64_t* dims, int64_t* const* strides, int m) {
  int r = 0;
  for (int k = 0; k < rank; ++k) {
    if (dims[k] == 1) continue;
    if (r > 0) {
      bool merge = true;
      for (int j = 0; j < m; ++j)
        if (strides[j][r - 1] != strides[j][k] * dims[k]) merge = false;
      if (merge) {
        dims[r - 1] *= dims[k];
        for (int j = 0; j < m; ++j) strides[j][r - 1] = strides[j][k];
        continue;
      }
    }
    dims[r] = dims[k];
    for (int j = 0; j < m; ++j) strides[j][r] = strides[j][k];
    ++r;
  }
  return r;
}

/// The per-channel pattern: `small` (right-aligned to `out`) has its non-1 axes in one contiguous
/// run equal to out's there. Then small's element of output element i is (i / inner) % channels.
inline bool channelPattern(const Shape& small, const Shape& out, int64_t& channels, int64_t& inner) {
  int first = -1, last = -1;
  bool gap = false;
  for (int k = 0; k < out.rank; ++k) {
    const int ks = k - (out.rank - small.rank);
    const int64_t d = ks >= 0 ? small.d[ks] : 1;
    if (out.d[k] == 1) continue;  // neutral: neither breaks nor extends the run
    if (d != 1) {
      if (d != out.d[k]) return false;
      if (first < 0) first = k;
      if (gap) return false;
      last = k;
    } else if (last >= 0) {
      gap = true;
    }
  }
  if (first < 0) return false;
  channels = 1;
  inner = 1;
  for (int k = first; k <= last; ++k) channels *= out.d[k];
  for (int k = last + 1; k < out.rank; ++k) inner *= out.d[k];
  return true;
}

/// The widest copy unit (16, 8, 4, 2 or 1 bytes) dividing `v` (a power of two divides an OR of values
/// exactly when it divides each of them, so callers OR sizes, strides and address bits together).
inline int unitDividing(int64_t v) {
  int u = 16;
  while (u > 1 && (v % u) != 0) u /= 2;
  return u;
}

/// How a strided copy runs: nothing, one cudaMemcpyAsync, or the strided kernel in units of unitBytes.
struct StridedPlan {
  enum Kind { Empty, Memcpy, Kernel } kind = Empty;
  int64_t srcOffsetBytes = 0, bytes = 0;  ///< Memcpy
  int unitBytes = 1;                      ///< Kernel: the copy unit, its axes in units (outermost first)
  int rank = 0;
  int64_t dims[kMaxRank] = {}, stride[kMaxRank] = {};
  int64_t base = 0, units = 0, maxOffset = 0;
};

/// Plans out[o] = in[base + sum idx_k * stride[k]] (elements of elemBytes, outermost axis first):
/// merges axes, then widens the unit to the largest that the contiguous innermost run, the other
/// strides, the base and both addresses allow (at most 16 bytes).
inline StridedPlan planStrided(uintptr_t in, uintptr_t out, int rank, const int64_t* dimsIn, const int64_t* strideIn,
                               int64_t base, int elemBytes) {
  StridedPlan p;
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) {
    n *= dimsIn[k];
    p.dims[k] = dimsIn[k];
    p.stride[k] = strideIn[k];
  }
  if (n <= 0) return p;
  int64_t* strides[1] = {p.stride};
  rank = collapseAxes(rank, p.dims, strides, 1);
  if (rank == 0 || (rank == 1 && p.stride[0] == 1)) {  // one element or one contiguous block
    p.kind = StridedPlan::Memcpy;
    p.srcOffsetBytes = base * elemBytes;
    p.bytes = n * elemBytes;
    return p;
  }
  int64_t unitBytes = elemBytes;
  if (p.stride[rank - 1] == 1) {
    int64_t g = p.dims[rank - 1] * elemBytes;  // the contiguous run
    for (int k = 0; k < rank - 1; ++k) g |= (p.stride[k] < 0 ? -p.stride[k] : p.stride[k]) * elemBytes;
    g |= (base < 0 ? -base : base) * elemBytes;
    g |= static_cast<int64_t>(in & 15u) | static_cast<int64_t>(out & 15u);
    unitBytes = std::max<int64_t>(unitDividing(g), elemBytes);
    const int64_t perUnit = unitBytes / elemBytes;  // elements per unit
    p.dims[rank - 1] /= perUnit;
    for (int k = 0; k < rank - 1; ++k) p.stride[k] /= perUnit;
    base /= perUnit;
  }
  p.kind = StridedPlan::Kernel;
  p.unitBytes = static_cast<int>(unitBytes);
  p.rank = rank;
  p.base = base;
  p.units = n * elemBytes / unitBytes;
  p.maxOffset = base < 0 ? -base : base;
  for (int k = 0; k < rank; ++k) p.maxOffset += (p.dims[k] - 1) * (p.stride[k] < 0 ? -p.stride[k] : p.stride[k]);
  return p;
}

/// The kernel parameters of a Kernel plan (innermost axis first).
template <typename I>
Strided<I> stridedParams(const StridedPlan& p) {
  Strided<I> s;
  s.rank = p.rank;
  s.base = static_cast<I>(p.base);
  for (int k = 0; k < p.rank; ++k) {
    s.dims[k] = static_cast<I>(p.dims[p.rank - 1 - k]);
    s.stride[k] = static_cast<I>(p.stride[p.rank - 1 - k]);
  }
  if (p.rank > 0) s.outer = s.stride[p.rank - 1];
  return s;
}

/// The input as the output walks it: dims[k] = the input's dim perm[k], stride[k] = its row-major stride
/// (in elements), for a transpose whose output axis k reads input axis perm[k].
inline void permutedStrides(const Shape& inShape, const int* perm, int64_t* dims, int64_t* stride) {
  int64_t inStride[kMaxRank];
  int64_t st = 1;
  for (int k = inShape.rank - 1; k >= 0; --k) {
    inStride[k] = st;
    st *= inShape.d[k];
  }
  for (int k = 0; k < inShape.rank; ++k) {
    dims[k] = inShape.d[perm[k]];
    stride[k] = inStride[perm[k]];
  }
}

/// Transpose: when the permutation, after merging axes, swaps the last two axes of a contiguous
/// [batch, rows, cols] input into [batch, cols, rows], the tiled kernel takes it.
struct TilePlan {
  bool tiled = false;
  int64_t batch = 1, rows = 0, cols = 0;
};
inline TilePlan planTransposeTile(const Shape& inShape, const int* perm, int elemBytes) {
  TilePlan t;
  const int r = inShape.rank;
  if (elemBytes != 2 && elemBytes != 4 && elemBytes != 8) return t;
  int64_t dims[kMaxRank], stride[kMaxRank];
  permutedStrides(inShape, perm, dims, stride);
  int64_t* strides[1] = {stride};
  const int cr = collapseAxes(r, dims, strides, 1);
  if (cr < 2 || stride[cr - 2] != 1 || stride[cr - 1] != dims[cr - 2]) return t;
  const int64_t rows = dims[cr - 1], cols = dims[cr - 2];  // input [B, rows, cols], output [B, cols, rows]
  int64_t expect = rows * cols, batch = 1;
  for (int k = cr - 3; k >= 0; --k) {
    if (stride[k] != expect) return t;
    expect *= dims[k];
    batch *= dims[k];
  }
  if (rows < 8 || cols < 8) return t;  // thin matrices: the plain copy coalesces well enough
  t.tiled = true;
  t.batch = batch;
  t.rows = rows;
  t.cols = cols;
  return t;
}

/// Which binary kernel runs and with what. n = the output's element count.
struct BinaryPlan {
  enum Kind { Same, Scalar, Channel, General } kind = General;
  bool aBig = true;  ///< Scalar/Channel: a is the full-size operand (else b is, and the small one comes first)
  int64_t channels = 1, inner = 1;  ///< Channel
  int rank = 0;                     ///< General: merged axes, outermost first
  int64_t dims[kMaxRank] = {}, sa[kMaxRank] = {}, sb[kMaxRank] = {};
};
inline BinaryPlan planBinary(const Shape& aShape, const Shape& bShape, const Shape& outShape) {
  BinaryPlan p;
  const int64_t n = outShape.numel(), na = aShape.numel(), nb = bShape.numel();
  if (na == n && nb == n) {  // an operand of the output's size has the output's shape
    p.kind = BinaryPlan::Same;
    return p;
  }
  if (na == n || nb == n) {
    p.aBig = na == n;
    const Shape& small = p.aBig ? bShape : aShape;
    if ((p.aBig ? nb : na) == 1) {
      p.kind = BinaryPlan::Scalar;
      return p;
    }
    if (channelPattern(small, outShape, p.channels, p.inner)) {
      p.kind = BinaryPlan::Channel;
      return p;
    }
  }
  p.kind = BinaryPlan::General;
  for (int k = 0; k < outShape.rank; ++k) p.dims[k] = outShape.d[k];
  broadcastStrides(aShape, outShape, p.sa);
  broadcastStrides(bShape, outShape, p.sb);
  int64_t* strides[2] = {p.sa, p.sb};
  p.rank = collapseAxes(outShape.rank, p.dims, strides, 2);
  return p;
}

template <typename I>
Bcast<I> bcastParams(const BinaryPlan& p) {
  Bcast<I> s;
  s.rank = p.rank;
  for (int k = 0; k < p.rank; ++k) {  // innermost first
    s.dims[k] = static_cast<I>(p.dims[p.rank - 1 - k]);
    s.sa[k] = static_cast<I>(p.sa[p.rank - 1 - k]);
    s.sb[k] = static_cast<I>(p.sb[p.rank - 1 - k]);
  }
  if (p.rank > 0) {
    s.outerA = s.sa[p.rank - 1];
    s.outerB = s.sb[p.rank - 1];
  }
  return s;
}

/// Pad parameters (innermost axis first) from the shapes and the leading pads.
template <typename I>
PadParams<I> padParams(const Shape& inShape, const int64_t* padsBegin, const Shape& outShape, int mode) {
  PadParams<I> p;
  p.rank = outShape.rank;
  p.mode = mode;
  I st = 1;
  for (int j = 0; j < p.rank; ++j) {
    const int k = p.rank - 1 - j;
    p.outDims[j] = static_cast<I>(outShape.d[k]);
    p.inDims[j] = static_cast<I>(inShape.d[k]);
    p.inStride[j] = st;
    p.begin[j] = static_cast<I>(padsBegin[k]);
    st *= static_cast<I>(inShape.d[k]);
  }
  return p;
}

/// Online softmax state: running max m and sum s of exp(x - m); merging two is associative.
struct MaxSum {
  float m;
  float s;
};

PX_HD MaxSum mergeMaxSum(MaxSum a, MaxSum b) {
  if (b.m == -INFINITY) return a;
  if (a.m == -INFINITY) return b;
  if (b.m > a.m) return {b.m, b.s + a.s * expf(a.m - b.m)};
  return {a.m, a.s + b.s * expf(b.m - a.m)};
}

PX_HD float softmaxValue(float x, MaxSum ms, bool log) {
  return log ? x - ms.m - logf(ms.s) : expf(x - ms.m) / ms.s;
}

}  // namespace partex::cuda::detail
