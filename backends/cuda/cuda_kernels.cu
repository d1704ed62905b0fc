/// \file The CUDA backend's own kernels (see cuda_kernels.h). Element-wise kernels are grid-stride loops
/// of 256 threads, with 32-bit index maths when every index fits and float4 loads where the pointers
/// allow; data movement copies in the widest unit (up to 16 bytes) that the sizes and pointers allow.
/// The scalar and index maths live in cuda_kernels_impl.cuh so that a host program can check them.

#include "cuda_kernels.h"
#include "cuda_kernels_impl.cuh"

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

namespace partex::cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;
/// The largest index (element count, offset) handled with 32-bit maths: a grid-stride step
/// (at most kMaxBlocks * kThreads) past it still fits in int32.
constexpr int64_t kMax32 = INT32_MAX - kMaxBlocks * kThreads;

unsigned blocksFor(int64_t work) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((work + kThreads - 1) / kThreads, kMaxBlocks)));
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <typename I>
__device__ __forceinline__ I globalThread() {
  return static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
}
template <typename I>
__device__ __forceinline__ I gridThreads() {
  return static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
}

/// A copy unit of B bytes.
template <int B>
struct UnitOf;
template <> struct UnitOf<1> { using T = uint8_t; };
template <> struct UnitOf<2> { using T = uint16_t; };
template <> struct UnitOf<4> { using T = uint32_t; };
template <> struct UnitOf<8> { using T = uint2; };
template <> struct UnitOf<16> { using T = uint4; };

/// Calls f(std::integral_constant<int, unit>) for a unit of 1, 2, 4, 8 or 16 bytes.
template <typename F>
cudaError_t withUnit(int unit, F&& f) {
  switch (unit) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    default: return cudaErrorInvalidValue;
  }
}

/// Calls f(int32_t{}) or f(int64_t{}): the index type for a largest index of `maxIndex`.
template <typename F>
cudaError_t withIndex(int64_t maxIndex, F&& f) {
  if (maxIndex <= kMax32) return f(int32_t{});
  return f(int64_t{});
}

// ---------------------------------------------------------------------------------------------------
// Unary

template <Unary OP>
__device__ __forceinline__ float4 unary4(float4 v, float a, float b) {
  return make_float4(applyUnary(OP, a, b, v.x), applyUnary(OP, a, b, v.y), applyUnary(OP, a, b, v.z),
                     applyUnary(OP, a, b, v.w));
}

/// n4 float4s, then the `tail` (< 4) floats after them, one per thread.
template <Unary OP, typename I>
__global__ void __launch_bounds__(kThreads) unaryVecKernel(const float4* in, float4* out, I n4, int tail, float a,
                                                            float b) {
  const I t = globalThread<I>();
  for (I i = t; i < n4; i += gridThreads<I>()) out[i] = unary4<OP>(in[i], a, b);
  if (t < tail) {
    const float* fi = reinterpret_cast<const float*>(in + n4);
    float* fo = reinterpret_cast<float*>(out + n4);
    fo[t] = applyUnary(OP, a, b, fi[t]);
  }
}

template <Unary OP, typename I>
__global__ void __launch_bounds__(kThreads) unaryKernel(const float* in, float* out, I n, float a, float b) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) out[i] = applyUnary(OP, a, b, in[i]);
}

template <Unary OP>
cudaError_t unaryLaunch(UnaryOp op, const float* in, float* out, int64_t n, cudaStream_t stream) {
  return withIndex(n, [&](auto idx) {
    using I = decltype(idx);
    if (aligned16(in) && aligned16(out)) {
      const int64_t n4 = n / 4;
      unaryVecKernel<OP, I><<<blocksFor(std::max<int64_t>(n4, 4)), kThreads, 0, stream>>>(
          reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), static_cast<I>(n4),
          static_cast<int>(n % 4), op.a, op.b);
    } else {
      unaryKernel<OP, I><<<blocksFor(n), kThreads, 0, stream>>>(in, out, static_cast<I>(n), op.a, op.b);
    }
    return cudaGetLastError();
  });
}

// ---------------------------------------------------------------------------------------------------
// Binary

template <Binary OP>
__device__ __forceinline__ float binPost(float x, float y, const UnaryOp& post) {
  return applyUnary(post, applyBinary<OP>(x, y));
}

/// Same shape, float4 body and scalar tail (all three pointers 16-byte aligned).
template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binSameVecKernel(const float4* a, const float4* b, float4* out, I n4,
                                                              int tail, UnaryOp post) {
  const I t = globalThread<I>();
  for (I i = t; i < n4; i += gridThreads<I>()) {
    const float4 x = a[i], y = b[i];
    out[i] = make_float4(binPost<OP>(x.x, y.x, post), binPost<OP>(x.y, y.y, post), binPost<OP>(x.z, y.z, post),
                         binPost<OP>(x.w, y.w, post));
  }
  if (t < tail) {
    const I j = n4 * 4 + t;
    reinterpret_cast<float*>(out)[j] =
        binPost<OP>(reinterpret_cast<const float*>(a)[j], reinterpret_cast<const float*>(b)[j], post);
  }
}

template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binSameKernel(const float* a, const float* b, float* out, I n,
                                                           UnaryOp post) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) out[i] = binPost<OP>(a[i], b[i], post);
}

/// One operand a single value: out = big OP s (or s OP big when sFirst).
template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binScalarVecKernel(const float4* big, const float* s, float4* out, I n4,
                                                                int tail, bool sFirst, UnaryOp post) {
  const float sv = *s;
  const I t = globalThread<I>();
  for (I i = t; i < n4; i += gridThreads<I>()) {
    const float4 x = big[i];
    out[i] = sFirst ? make_float4(binPost<OP>(sv, x.x, post), binPost<OP>(sv, x.y, post),
                                  binPost<OP>(sv, x.z, post), binPost<OP>(sv, x.w, post))
                    : make_float4(binPost<OP>(x.x, sv, post), binPost<OP>(x.y, sv, post),
                                  binPost<OP>(x.z, sv, post), binPost<OP>(x.w, sv, post));
  }
  if (t < tail) {
    const I j = n4 * 4 + t;
    const float x = reinterpret_cast<const float*>(big)[j];
    reinterpret_cast<float*>(out)[j] = sFirst ? binPost<OP>(sv, x, post) : binPost<OP>(x, sv, post);
  }
}

template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binScalarKernel(const float* big, const float* s, float* out, I n,
                                                             bool sFirst, UnaryOp post) {
  const float sv = *s;
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const float x = big[i];
    out[i] = sFirst ? binPost<OP>(sv, x, post) : binPost<OP>(x, sv, post);
  }
}

/// Per-channel operand: small[(i / inner) % channels] against big[i].
template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binChannelKernel(const float* big, const float* small, float* out, I n,
                                                              I channels, I inner, bool sFirst, UnaryOp post) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const float x = big[i];
    const float y = __ldg(small + (i / inner) % channels);
    out[i] = sFirst ? binPost<OP>(y, x, post) : binPost<OP>(x, y, post);
  }
}

/// Per-channel with inner % 4 == 0: a float4 never straddles two channels. inner4 = inner / 4.
template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binChannelVecKernel(const float4* big, const float* small, float4* out,
                                                                 I n4, I channels, I inner4, bool sFirst,
                                                                 UnaryOp post) {
  for (I i = globalThread<I>(); i < n4; i += gridThreads<I>()) {
    const float4 x = big[i];
    const float y = __ldg(small + (i / inner4) % channels);
    out[i] = sFirst ? make_float4(binPost<OP>(y, x.x, post), binPost<OP>(y, x.y, post), binPost<OP>(y, x.z, post),
                                  binPost<OP>(y, x.w, post))
                    : make_float4(binPost<OP>(x.x, y, post), binPost<OP>(x.y, y, post), binPost<OP>(x.z, y, post),
                                  binPost<OP>(x.w, y, post));
  }
}

template <Binary OP, typename I>
__global__ void __launch_bounds__(kThreads) binGeneralKernel(const float* a, const float* b, float* out, I n,
                                                              Bcast<I> s, UnaryOp post) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    I oa, ob;
    bcastOffsets(s, i, oa, ob);
    out[i] = binPost<OP>(a[oa], b[ob], post);
  }
}

template <Binary OP>
cudaError_t binaryLaunch(const float* a, const Shape& aShape, const float* b, const Shape& bShape, float* out,
                         const Shape& outShape, UnaryOp post, cudaStream_t stream) {
  const int64_t n = outShape.numel();
  const BinaryPlan p = planBinary(aShape, bShape, outShape);
  return withIndex(n, [&](auto idx) -> cudaError_t {
    using I = decltype(idx);
    const int tail = static_cast<int>(n % 4);
    const int64_t n4 = n / 4;
    const float* big = p.aBig ? a : b;
    const float* small = p.aBig ? b : a;
    const bool sFirst = !p.aBig;
    switch (p.kind) {
      case BinaryPlan::Same:
        if (aligned16(a) && aligned16(b) && aligned16(out))
          binSameVecKernel<OP, I><<<blocksFor(std::max<int64_t>(n4, 4)), kThreads, 0, stream>>>(
              reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(out),
              static_cast<I>(n4), tail, post);
        else
          binSameKernel<OP, I><<<blocksFor(n), kThreads, 0, stream>>>(a, b, out, static_cast<I>(n), post);
        break;
      case BinaryPlan::Scalar:
        if (aligned16(big) && aligned16(out))
          binScalarVecKernel<OP, I><<<blocksFor(std::max<int64_t>(n4, 4)), kThreads, 0, stream>>>(
              reinterpret_cast<const float4*>(big), small, reinterpret_cast<float4*>(out), static_cast<I>(n4), tail,
              sFirst, post);
        else
          binScalarKernel<OP, I><<<blocksFor(n), kThreads, 0, stream>>>(big, small, out, static_cast<I>(n), sFirst,
                                                                        post);
        break;
      case BinaryPlan::Channel:
        if (p.inner % 4 == 0 && aligned16(big) && aligned16(out))
          binChannelVecKernel<OP, I><<<blocksFor(n4), kThreads, 0, stream>>>(
              reinterpret_cast<const float4*>(big), small, reinterpret_cast<float4*>(out), static_cast<I>(n4),
              static_cast<I>(p.channels), static_cast<I>(p.inner / 4), sFirst, post);
        else
          binChannelKernel<OP, I><<<blocksFor(n), kThreads, 0, stream>>>(
              big, small, out, static_cast<I>(n), static_cast<I>(p.channels), static_cast<I>(p.inner), sFirst, post);
        break;
      case BinaryPlan::General:
        binGeneralKernel<OP, I><<<blocksFor(n), kThreads, 0, stream>>>(a, b, out, static_cast<I>(n),
                                                                        bcastParams<I>(p), post);
        break;
    }
    return cudaGetLastError();
  });
}

// ---------------------------------------------------------------------------------------------------
// Sum, channel affine, fill

constexpr int kSumInputs = 8;
struct SumInputs {
  const float* p[kSumInputs];
  int count;
};

template <typename I>
__global__ void __launch_bounds__(kThreads) sumKernel(SumInputs in, float* out, I n, bool last, UnaryOp post) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    float acc = in.p[0][i];
#pragma unroll
    for (int k = 1; k < kSumInputs; ++k)
      if (k < in.count) acc += in.p[k][i];
    out[i] = last ? applyUnary(post, acc) : acc;
  }
}

template <typename I>
__global__ void __launch_bounds__(kThreads) sumVecKernel(SumInputs in, float4* out, I n4, bool last, UnaryOp post) {
  for (I i = globalThread<I>(); i < n4; i += gridThreads<I>()) {
    float4 acc = reinterpret_cast<const float4*>(in.p[0])[i];
#pragma unroll
    for (int k = 1; k < kSumInputs; ++k) {
      if (k >= in.count) break;
      const float4 v = reinterpret_cast<const float4*>(in.p[k])[i];
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
    if (last) {
      acc.x = applyUnary(post, acc.x);
      acc.y = applyUnary(post, acc.y);
      acc.z = applyUnary(post, acc.z);
      acc.w = applyUnary(post, acc.w);
    }
    out[i] = acc;
  }
}

template <typename I>
__global__ void __launch_bounds__(kThreads) affineKernel(const float* in, const float* scale, const float* shift,
                                                          float* out, I total, I c, I inner, UnaryOp post) {
  for (I i = globalThread<I>(); i < total; i += gridThreads<I>()) {
    const I ch = (i / inner) % c;
    const float v = in[i] * __ldg(scale + ch) + (shift ? __ldg(shift + ch) : 0.f);
    out[i] = applyUnary(post, v);
  }
}

/// inner % 4 == 0: a float4 lies in one channel. inner4 = inner / 4.
template <typename I>
__global__ void __launch_bounds__(kThreads) affineVecKernel(const float4* in, const float* scale, const float* shift,
                                                             float4* out, I total4, I c, I inner4, UnaryOp post) {
  for (I i = globalThread<I>(); i < total4; i += gridThreads<I>()) {
    const I ch = (i / inner4) % c;
    const float s = __ldg(scale + ch), t = shift ? __ldg(shift + ch) : 0.f;
    const float4 v = in[i];
    out[i] = make_float4(applyUnary(post, v.x * s + t), applyUnary(post, v.y * s + t), applyUnary(post, v.z * s + t),
                         applyUnary(post, v.w * s + t));
  }
}

template <typename I>
__global__ void __launch_bounds__(kThreads) fillKernel(float* out, I n, float v) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) out[i] = v;
}

template <typename I>
__global__ void __launch_bounds__(kThreads) fillVecKernel(float4* out, I n4, int tail, float v) {
  const I t = globalThread<I>();
  for (I i = t; i < n4; i += gridThreads<I>()) out[i] = make_float4(v, v, v, v);
  if (t < tail) reinterpret_cast<float*>(out + n4)[t] = v;
}

// ---------------------------------------------------------------------------------------------------
// Data movement

/// out[o] = in[stridedOffset(o)] in units of T (Slice, Transpose).
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads) stridedKernel(const T* __restrict__ in, T* __restrict__ out, I n,
                                                           Strided<I> s) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) out[i] = in[stridedOffset(s, i)];
}

/// A strided copy given in elements of `elemBytes` (planStrided): one cudaMemcpyAsync where the
/// source is contiguous, else the strided kernel in the widest unit. `stride` may be negative.
cudaError_t stridedCopy(const void* in, void* out, int rank, const int64_t* dims, const int64_t* stride, int64_t base,
                        int elemBytes, cudaStream_t stream) {
  const StridedPlan p = planStrided(reinterpret_cast<uintptr_t>(in), reinterpret_cast<uintptr_t>(out), rank, dims,
                                    stride, base, elemBytes);
  if (p.kind == StridedPlan::Empty) return cudaSuccess;
  if (p.kind == StridedPlan::Memcpy)
    return cudaMemcpyAsync(out, static_cast<const char*>(in) + p.srcOffsetBytes, static_cast<size_t>(p.bytes),
                           cudaMemcpyDeviceToDevice, stream);
  return withUnit(p.unitBytes, [&](auto u) {
    using T = typename UnitOf<decltype(u)::value>::T;
    return withIndex(std::max(p.units, p.maxOffset), [&](auto idx) {
      using I = decltype(idx);
      stridedKernel<T, I><<<blocksFor(p.units), kThreads, 0, stream>>>(
          static_cast<const T*>(in), static_cast<T*>(out), static_cast<I>(p.units), stridedParams<I>(p));
      return cudaGetLastError();
    });
  });
}

/// Transpose of the last two axes of [batch, rows, cols] -> [batch, cols, rows] through a 32x32 tile in
/// shared memory, so that both the reads and the writes are coalesced.
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads) transposeTileKernel(const T* __restrict__ in, T* __restrict__ out,
                                                                 I rows, I cols, I tilesR, I tilesC, I tiles) {
  __shared__ T tile[32][33];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
  for (I t = blockIdx.x; t < tiles; t += gridDim.x) {
    const I perBatch = tilesR * tilesC;
    const I batch = t / perBatch;
    const I rem = t - batch * perBatch;
    const I r0 = (rem / tilesC) * 32, c0 = (rem % tilesC) * 32;
    const T* src = in + batch * rows * cols;
    T* dst = out + batch * rows * cols;
    for (int j = ty; j < 32; j += kWarps) {
      const I r = r0 + j, c = c0 + tx;
      if (r < rows && c < cols) tile[j][tx] = src[r * cols + c];
    }
    __syncthreads();
    for (int j = ty; j < 32; j += kWarps) {
      const I c = c0 + j, r = r0 + tx;
      if (r < rows && c < cols) dst[c * rows + r] = tile[tx][j];
    }
    __syncthreads();
  }
}

/// out[row * outerStride + col] = in[row * inner + col] in units of T (`out` already at the offset).
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads) concatKernel(const T* __restrict__ in, T* __restrict__ out, I n, I inner,
                                                          I outerStride) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const I row = i / inner;
    out[row * outerStride + (i - row * inner)] = in[i];
  }
}

/// Gather in units of T: innerU units per gathered row.
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads) gatherKernel(const T* __restrict__ in, const int64_t* __restrict__ indices,
                                                          T* __restrict__ out, I n, I nIdx, I axisLen, I innerU) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const I t = i / innerU;
    const I col = i - t * innerU;
    const I o = t / nIdx;
    const I j = t - o * nIdx;
    int64_t k = __ldg(indices + j);
    if (k < 0) k += axisLen;
    k = clampIndex(k, axisLen);
    out[i] = in[(o * axisLen + static_cast<I>(k)) * innerU + col];
  }
}

template <typename I>
__global__ void __launch_bounds__(kThreads) padKernel(const float* __restrict__ in, float* __restrict__ out, I n,
                                                       PadParams<I> p, float value) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const I src = padSource(p, i);
    out[i] = src < 0 ? value : in[src];
  }
}

// ---------------------------------------------------------------------------------------------------
// Resize

template <typename I>
__global__ void __launch_bounds__(kThreads) resizeKernel(const float* __restrict__ in, float* __restrict__ out, I n,
                                                          I h, I w, I oh, I ow, double sh, double sw, int mode,
                                                          int coordH, int coordW, int nearestMode) {
  for (I i = globalThread<I>(); i < n; i += gridThreads<I>()) {
    const I t = i / ow;
    const I ox = i - t * ow;
    const I plane = t / oh;
    const I oy = t - plane * oh;
    const float* src = in + plane * h * w;
    const double y = resizeCoord(oy, h, oh, sh, coordH);
    const double x = resizeCoord(ox, w, ow, sw, coordW);
    if (mode == 0) {
      out[i] = src[static_cast<I>(nearestIndex(y, h, nearestMode)) * w + static_cast<I>(nearestIndex(x, w, nearestMode))];
    } else {
      const LinearTap ty = linearTap(y, h), tx = linearTap(x, w);
      const float* r0 = src + static_cast<I>(ty.i0) * w;
      const float* r1 = src + static_cast<I>(ty.i1) * w;
      const I p = static_cast<I>(tx.i0), q = static_cast<I>(tx.i1);
      // Height first, then width: the CPU reference's order of operations.
      const float l = r0[p] + ty.w * (r1[p] - r0[p]);
      const float r = r0[q] + ty.w * (r1[q] - r0[q]);
      out[i] = l + tx.w * (r - l);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Softmax and reductions

__device__ __forceinline__ MaxSum warpMaxSum(MaxSum v) {
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = mergeMaxSum(v, other);
  }
  return v;
}

/// inner == 1, short rows: one warp per row.
__global__ void __launch_bounds__(kThreads) softmaxWarpKernel(const float* in, float* out, int64_t rows, int64_t len,
                                                               bool log) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); row < rows;
       row += static_cast<int64_t>(gridDim.x) * kWarps) {
    const float* x = in + row * len;
    float* y = out + row * len;
    MaxSum ms{-INFINITY, 0.f};
    for (int64_t j = lane; j < len; j += 32) ms = mergeMaxSum(ms, MaxSum{x[j], 1.f});
    ms = warpMaxSum(ms);
    for (int64_t j = lane; j < len; j += 32) y[j] = softmaxValue(x[j], ms, log);
  }
}

/// inner == 1, long rows: one block per row.
__global__ void __launch_bounds__(kThreads) softmaxBlockKernel(const float* in, float* out, int64_t rows, int64_t len,
                                                                bool log) {
  __shared__ MaxSum part[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = in + row * len;
    float* y = out + row * len;
    MaxSum ms{-INFINITY, 0.f};
    for (int64_t j = threadIdx.x; j < len; j += kThreads) ms = mergeMaxSum(ms, MaxSum{x[j], 1.f});
    ms = warpMaxSum(ms);
    if (lane == 0) part[warp] = ms;
    __syncthreads();
    ms = part[0];
    for (int k = 1; k < kWarps; ++k) ms = mergeMaxSum(ms, part[k]);
    for (int64_t j = threadIdx.x; j < len; j += kThreads) y[j] = softmaxValue(x[j], ms, log);
    __syncthreads();  // part[] is reused by the next row
  }
}

/// inner > 1: one thread per (outer, inner) column; neighbouring threads read neighbouring addresses.
template <typename I>
__global__ void __launch_bounds__(kThreads) softmaxStridedKernel(const float* in, float* out, I cols, I len, I inner,
                                                                  bool log) {
  for (I c = globalThread<I>(); c < cols; c += gridThreads<I>()) {
    const I o = c / inner;
    const I base = o * len * inner + (c - o * inner);
    MaxSum ms{-INFINITY, 0.f};
    for (I j = 0; j < len; ++j) ms = mergeMaxSum(ms, MaxSum{in[base + j * inner], 1.f});
    for (I j = 0; j < len; ++j) out[base + j * inner] = softmaxValue(in[base + j * inner], ms, log);
  }
}

__device__ __forceinline__ float reduceInit(int kind) { return kind == 2 ? -INFINITY : 0.f; }
__device__ __forceinline__ float reduceStep(int kind, float acc, float x) { return kind == 2 ? fmaxf(acc, x) : acc + x; }
__device__ __forceinline__ float reduceFinal(int kind, float acc, int64_t len) {
  return kind == 1 ? acc / static_cast<float>(len) : acc;
}
__device__ __forceinline__ float warpReduce(int kind, float v) {
  for (int o = 16; o > 0; o >>= 1) v = reduceStep(kind, v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// inner == 1: one warp per output.
__global__ void __launch_bounds__(kThreads) reduceWarpKernel(const float* in, float* out, int64_t outer, int64_t len,
                                                              int kind) {
  const int lane = threadIdx.x & 31;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); row < outer;
       row += static_cast<int64_t>(gridDim.x) * kWarps) {
    const float* x = in + row * len;
    float acc = reduceInit(kind);
    for (int64_t j = lane; j < len; j += 32) acc = reduceStep(kind, acc, x[j]);
    acc = warpReduce(kind, acc);
    if (lane == 0) out[row] = reduceFinal(kind, acc, len);
  }
}

/// inner == 1 with few long rows: one block per output.
__global__ void __launch_bounds__(kThreads) reduceBlockKernel(const float* in, float* out, int64_t outer, int64_t len,
                                                               int kind) {
  __shared__ float part[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const float* x = in + row * len;
    float acc = reduceInit(kind);
    for (int64_t j = threadIdx.x; j < len; j += kThreads) acc = reduceStep(kind, acc, x[j]);
    acc = warpReduce(kind, acc);
    if (lane == 0) part[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      float r = part[0];
      for (int k = 1; k < kWarps; ++k) r = reduceStep(kind, r, part[k]);
      out[row] = reduceFinal(kind, r, len);
    }
    __syncthreads();
  }
}

/// inner > 1: one thread per output, reading along the strided axis (coalesced across threads).
template <typename I>
__global__ void __launch_bounds__(kThreads) reduceStridedKernel(const float* in, float* out, I outputs, I len, I inner,
                                                                 int kind) {
  for (I c = globalThread<I>(); c < outputs; c += gridThreads<I>()) {
    const I o = c / inner;
    const float* x = in + o * len * inner + (c - o * inner);
    float acc = reduceInit(kind);
    for (I j = 0; j < len; ++j) acc = reduceStep(kind, acc, x[j * inner]);
    out[c] = reduceFinal(kind, acc, len);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// The interface

cudaError_t unaryF32(UnaryOp op, const float* in, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
#define PX_UNARY_CASE(NAME) \
  case Unary::NAME: return unaryLaunch<Unary::NAME>(op, in, out, n, stream);
  switch (op.op) {
    PX_UNARY_CASE(Identity)
    PX_UNARY_CASE(Relu)
    PX_UNARY_CASE(LeakyRelu)
    PX_UNARY_CASE(Sigmoid)
    PX_UNARY_CASE(HardSigmoid)
    PX_UNARY_CASE(HardSwish)
    PX_UNARY_CASE(Tanh)
    PX_UNARY_CASE(Clip)
    PX_UNARY_CASE(Exp)
    PX_UNARY_CASE(Log)
    PX_UNARY_CASE(Sqrt)
    PX_UNARY_CASE(Abs)
    PX_UNARY_CASE(Neg)
    PX_UNARY_CASE(Reciprocal)
    PX_UNARY_CASE(Erf)
    PX_UNARY_CASE(Elu)
    PX_UNARY_CASE(Softplus)
    PX_UNARY_CASE(Floor)
    PX_UNARY_CASE(Ceil)
    PX_UNARY_CASE(Sin)
    PX_UNARY_CASE(Cos)
    PX_UNARY_CASE(Gelu)
    PX_UNARY_CASE(Silu)
  }
#undef PX_UNARY_CASE
  return cudaErrorInvalidValue;
}

cudaError_t binaryF32(Binary op, const float* a, const Shape& aShape, const float* b, const Shape& bShape,
                      float* out, const Shape& outShape, UnaryOp post, cudaStream_t stream) {
  if (outShape.numel() <= 0) return cudaSuccess;
  if (aShape.rank > kMaxRank || bShape.rank > kMaxRank || outShape.rank > kMaxRank) return cudaErrorInvalidValue;
  switch (op) {
    case Binary::Add: return binaryLaunch<Binary::Add>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Sub: return binaryLaunch<Binary::Sub>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Mul: return binaryLaunch<Binary::Mul>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Div: return binaryLaunch<Binary::Div>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Pow: return binaryLaunch<Binary::Pow>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Max: return binaryLaunch<Binary::Max>(a, aShape, b, bShape, out, outShape, post, stream);
    case Binary::Min: return binaryLaunch<Binary::Min>(a, aShape, b, bShape, out, outShape, post, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t sumF32(const float* const* inputs, int count, float* out, int64_t n, UnaryOp post, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (count < 1) return cudaErrorInvalidValue;
  // Up to kSumInputs inputs per launch; later launches add the next ones to `out`.
  int done = 0;
  bool first = true;
  while (done < count) {
    SumInputs s{};
    int k = 0;
    if (!first) s.p[k++] = out;
    while (k < kSumInputs && done < count) s.p[k++] = inputs[done++];
    s.count = k;
    first = false;
    const bool last = done == count;
    bool vec = aligned16(out) && n % 4 == 0;
    for (int j = 0; j < k; ++j) vec = vec && aligned16(s.p[j]);
    const cudaError_t e = withIndex(n, [&](auto idx) {
      using I = decltype(idx);
      if (vec)
        sumVecKernel<I><<<blocksFor(n / 4), kThreads, 0, stream>>>(s, reinterpret_cast<float4*>(out),
                                                                   static_cast<I>(n / 4), last, post);
      else
        sumKernel<I><<<blocksFor(n), kThreads, 0, stream>>>(s, out, static_cast<I>(n), last, post);
      return cudaGetLastError();
    });
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t channelAffineF32(const float* in, const float* scale, const float* shift, float* out, int64_t n, int64_t c,
                             int64_t inner, UnaryOp post, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  if (total <= 0) return cudaSuccess;
  return withIndex(total, [&](auto idx) {
    using I = decltype(idx);
    if (inner % 4 == 0 && aligned16(in) && aligned16(out))
      affineVecKernel<I><<<blocksFor(total / 4), kThreads, 0, stream>>>(
          reinterpret_cast<const float4*>(in), scale, shift, reinterpret_cast<float4*>(out), static_cast<I>(total / 4),
          static_cast<I>(c), static_cast<I>(inner / 4), post);
    else
      affineKernel<I><<<blocksFor(total), kThreads, 0, stream>>>(in, scale, shift, out, static_cast<I>(total),
                                                                 static_cast<I>(c), static_cast<I>(inner), post);
    return cudaGetLastError();
  });
}

cudaError_t concatCopy(const void* in, void* out, int64_t outer, int64_t inner, int64_t outerStride, int64_t offset,
                       int elemBytes, cudaStream_t stream) {
  if (outer <= 0 || inner <= 0) return cudaSuccess;
  char* dst = static_cast<char*>(out) + offset * elemBytes;
  if (outer == 1 || inner == outerStride)
    return cudaMemcpyAsync(dst, in, static_cast<size_t>(outer * inner * elemBytes), cudaMemcpyDeviceToDevice, stream);
  // The widest unit dividing every byte size and both addresses.
  const int64_t g = (inner * elemBytes) | (outerStride * elemBytes) |
                    static_cast<int64_t>(reinterpret_cast<uintptr_t>(in) & 15u) |
                    static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) & 15u);
  const int unit = unitDividing(g);
  const int64_t innerU = inner * elemBytes / unit, strideU = outerStride * elemBytes / unit;
  const int64_t n = outer * innerU;
  return withUnit(unit, [&](auto u) {
    using T = typename UnitOf<decltype(u)::value>::T;
    return withIndex(outer * strideU, [&](auto idx) {
      using I = decltype(idx);
      concatKernel<T, I><<<blocksFor(n), kThreads, 0, stream>>>(static_cast<const T*>(in), reinterpret_cast<T*>(dst),
                                                                static_cast<I>(n), static_cast<I>(innerU),
                                                                static_cast<I>(strideU));
      return cudaGetLastError();
    });
  });
}

cudaError_t sliceCopy(const void* in, const int64_t* starts, const int64_t* steps, const int64_t* inStrides, void* out,
                      const Shape& outShape, int elemBytes, cudaStream_t stream) {
  if (outShape.numel() <= 0) return cudaSuccess;
  if (outShape.rank > kMaxRank) return cudaErrorInvalidValue;
  int64_t dims[kMaxRank], stride[kMaxRank], base = 0;
  for (int k = 0; k < outShape.rank; ++k) {
    dims[k] = outShape.d[k];
    stride[k] = steps[k] * inStrides[k];
    base += starts[k] * inStrides[k];
  }
  return stridedCopy(in, out, outShape.rank, dims, stride, base, elemBytes, stream);
}

cudaError_t transpose(const void* in, const Shape& inShape, const int* perm, void* out, int elemBytes,
                      cudaStream_t stream) {
  const int r = inShape.rank;
  if (inShape.numel() <= 0) return cudaSuccess;
  if (r > kMaxRank) return cudaErrorInvalidValue;
  const TilePlan t = planTransposeTile(inShape, perm, elemBytes);
  if (t.tiled) {
    const int64_t tilesR = (t.rows + 31) / 32, tilesC = (t.cols + 31) / 32, tiles = t.batch * tilesR * tilesC;
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, kMaxBlocks));
    return withUnit(elemBytes, [&](auto u) {
      using T = typename UnitOf<decltype(u)::value>::T;
      return withIndex(std::max(t.batch * t.rows * t.cols, tiles), [&](auto idx) {
        using I = decltype(idx);
        transposeTileKernel<T, I><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                   static_cast<I>(t.rows), static_cast<I>(t.cols),
                                                                   static_cast<I>(tilesR), static_cast<I>(tilesC),
                                                                   static_cast<I>(tiles));
        return cudaGetLastError();
      });
    });
  }
  // Otherwise the index-mapping copy: output axis k reads input axis perm[k].
  int64_t dims[kMaxRank], stride[kMaxRank];
  permutedStrides(inShape, perm, dims, stride);
  return stridedCopy(in, out, r, dims, stride, 0, elemBytes, stream);
}

cudaError_t resize2dF32(const float* in, int64_t n, int64_t c, int64_t h, int64_t w, float* out, int64_t oh,
                        int64_t ow, float scaleH, float scaleW, int mode, int coord, int nearestMode,
                        cudaStream_t stream) {
  const int64_t total = n * c * oh * ow;
  if (total <= 0 || h <= 0 || w <= 0) return cudaSuccess;
  const double sh = effectiveScale(scaleH, h, oh), sw = effectiveScale(scaleW, w, ow);
  return withIndex(std::max(total, n * c * h * w), [&](auto idx) {
    using I = decltype(idx);
    resizeKernel<I><<<blocksFor(total), kThreads, 0, stream>>>(in, out, static_cast<I>(total), static_cast<I>(h),
                                                               static_cast<I>(w), static_cast<I>(oh),
                                                               static_cast<I>(ow), sh, sw, mode, axisCoord(coord, h, oh, sh),
                                                               axisCoord(coord, w, ow, sw), nearestMode);
    return cudaGetLastError();
  });
}

cudaError_t softmaxF32(const float* in, float* out, int64_t outer, int64_t axisLen, int64_t inner, bool log,
                       cudaStream_t stream) {
  if (outer <= 0 || axisLen <= 0 || inner <= 0) return cudaSuccess;
  if (inner == 1) {
    // Many rows or short ones: a warp each; a few long rows (the classifier's 1000): a block each.
    if (axisLen <= 256 || outer >= 1024)
      softmaxWarpKernel<<<blocksFor(outer * 32), kThreads, 0, stream>>>(in, out, outer, axisLen, log);
    else
      softmaxBlockKernel<<<static_cast<unsigned>(std::min(outer, kMaxBlocks)), kThreads, 0, stream>>>(in, out, outer,
                                                                                                      axisLen, log);
    return cudaGetLastError();
  }
  const int64_t cols = outer * inner;
  return withIndex(outer * axisLen * inner, [&](auto idx) {
    using I = decltype(idx);
    softmaxStridedKernel<I><<<blocksFor(cols), kThreads, 0, stream>>>(in, out, static_cast<I>(cols),
                                                                      static_cast<I>(axisLen), static_cast<I>(inner), log);
    return cudaGetLastError();
  });
}

cudaError_t reduceF32(const float* in, float* out, int64_t outer, int64_t len, int64_t inner, int kind,
                      cudaStream_t stream) {
  if (outer <= 0 || inner <= 0) return cudaSuccess;
  if (len <= 0) return fillF32(out, outer * inner, kind == 0 ? 0.f : (kind == 1 ? NAN : -INFINITY), stream);
  if (inner == 1) {
    if (len >= 1024 && outer < 1024)  // a few long rows: a block each
      reduceBlockKernel<<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(in, out, outer, len, kind);
    else
      reduceWarpKernel<<<blocksFor(outer * 32), kThreads, 0, stream>>>(in, out, outer, len, kind);
    return cudaGetLastError();
  }
  const int64_t outputs = outer * inner;
  return withIndex(outer * len * inner, [&](auto idx) {
    using I = decltype(idx);
    reduceStridedKernel<I><<<blocksFor(outputs), kThreads, 0, stream>>>(in, out, static_cast<I>(outputs),
                                                                        static_cast<I>(len), static_cast<I>(inner), kind);
    return cudaGetLastError();
  });
}

cudaError_t padF32(const float* in, const Shape& inShape, const int64_t* padsBegin, float* out, const Shape& outShape,
                   int mode, float value, cudaStream_t stream) {
  const int64_t n = outShape.numel();
  if (n <= 0) return cudaSuccess;
  if (outShape.rank != inShape.rank || outShape.rank > kMaxRank) return cudaErrorInvalidValue;
  if (inShape.numel() <= 0) return fillF32(out, n, value, stream);  // nothing to reflect or extend: constant
  return withIndex(std::max(n, inShape.numel()), [&](auto idx) {
    using I = decltype(idx);
    const PadParams<I> p = padParams<I>(inShape, padsBegin, outShape, mode);
    padKernel<I><<<blocksFor(n), kThreads, 0, stream>>>(in, out, static_cast<I>(n), p, value);
    return cudaGetLastError();
  });
}

cudaError_t gather(const void* in, int64_t outer, int64_t axisLen, int64_t inner, const int64_t* indices, int64_t nIdx,
                   void* out, int elemBytes, cudaStream_t stream) {
  if (outer <= 0 || nIdx <= 0 || inner <= 0) return cudaSuccess;
  if (axisLen <= 0) return cudaErrorInvalidValue;  // nothing to gather from
  const int64_t rowBytes = inner * elemBytes;
  const int unit = unitDividing(rowBytes | static_cast<int64_t>(reinterpret_cast<uintptr_t>(in) & 15u) |
                                static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) & 15u));
  const int64_t innerU = rowBytes / unit;
  const int64_t n = outer * nIdx * innerU;
  return withUnit(unit, [&](auto u) {
    using T = typename UnitOf<decltype(u)::value>::T;
    return withIndex(std::max(n, outer * axisLen * innerU), [&](auto idx) {
      using I = decltype(idx);
      gatherKernel<T, I><<<blocksFor(n), kThreads, 0, stream>>>(static_cast<const T*>(in), indices, static_cast<T*>(out),
                                                                static_cast<I>(n), static_cast<I>(nIdx),
                                                                static_cast<I>(axisLen), static_cast<I>(innerU));
      return cudaGetLastError();
    });
  });
}

cudaError_t fillF32(float* out, int64_t n, float v, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if (bits == 0) return cudaMemsetAsync(out, 0, static_cast<size_t>(n) * sizeof(float), stream);
  return withIndex(n, [&](auto idx) {
    using I = decltype(idx);
    if (aligned16(out))
      fillVecKernel<I><<<blocksFor(std::max<int64_t>(n / 4, 4)), kThreads, 0, stream>>>(
          reinterpret_cast<float4*>(out), static_cast<I>(n / 4), static_cast<int>(n % 4), v);
    else
      fillKernel<I><<<blocksFor(n), kThreads, 0, stream>>>(out, static_cast<I>(n), v);
    return cudaGetLastError();
  });
}

}  // namespace partex::cuda
