#pragma once
/// \file The CUDA backend's own kernels (backends/cuda/cuda_kernels.cu): element-wise and broadcasting
/// arithmetic, activations, layout and data movement, Resize, Softmax and reductions, float32. A plain
/// C-style interface over device pointers and shapes so that the operator layer (cuda_ops.cpp) stays in
/// C++ compiled by the host compiler. Every function enqueues on `stream`, never synchronises, and
/// returns the launch's error (cudaGetLastError()), cudaSuccess when the tensor is empty.
/// Shapes are row-major; tensors are contiguous unless a stride array is given.
/// Pointer conventions: tensor data (`in`, `out`, `a`, `b`, `scale`, `shift`, `indices`) is device
/// memory; the small parameter arrays (`inputs` of sumF32 itself, `starts`, `steps`, `inStrides`,
/// `perm`, `padsBegin`) are host memory, read before the call returns.

#include <cuda_runtime.h>

#include <cstdint>

namespace partex::cuda {

constexpr int kMaxRank = 8;

/// A row-major shape of rank 0..kMaxRank (rank 0: a scalar, one element).
struct Shape {
  int rank = 0;
  int64_t d[kMaxRank] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
};

enum class Unary : int {
  Identity, Relu, LeakyRelu /*a = alpha*/, Sigmoid, HardSigmoid /*a = alpha, b = beta*/, HardSwish, Tanh,
  Clip /*a = lo, b = hi*/, Exp, Log, Sqrt, Abs, Neg, Reciprocal, Erf, Elu /*a = alpha*/, Softplus, Floor,
  Ceil, Sin, Cos, Gelu /*erf form*/, Silu /*x * sigmoid(x)*/
};

/// An activation applied after an operation (a = b = 0 unless the op says otherwise).
struct UnaryOp {
  Unary op = Unary::Identity;
  float a = 0.f;
  float b = 0.f;
};

enum class Binary : int { Add, Sub, Mul, Div, Pow, Max, Min };

/// out = post(in) element-wise, n elements. `in` may equal `out`.
cudaError_t unaryF32(UnaryOp op, const float* in, float* out, int64_t n, cudaStream_t stream);

/// out = post(a OP b) with numpy (ONNX multidirectional) broadcasting. The shapes are given as they
/// are (ranks may differ; they are right-aligned); `outShape` is the broadcast shape. Fast paths for
/// same shape, scalar operand, and a per-row / per-channel operand are the kernel's business.
cudaError_t binaryF32(Binary op, const float* a, const Shape& aShape, const float* b, const Shape& bShape,
                      float* out, const Shape& outShape, UnaryOp post, cudaStream_t stream);

/// out = post(sum of inputs[0..count)), all of shape `shape` (Sum with same-shape inputs; count >= 1).
/// `inputs` is a host array of `count` device pointers, n the element count; `out` may be an input.
cudaError_t sumF32(const float* const* inputs, int count, float* out, int64_t n, UnaryOp post,
                   cudaStream_t stream);

/// Per-channel affine on [N, C, inner]: out = post(in * scale[c] + shift[c]) (BatchNormalization folded
/// to scale/shift by the caller; `shift` may be null). `n` is the batch N, not the element count
/// (that is n * c * inner).
cudaError_t channelAffineF32(const float* in, const float* scale, const float* shift, float* out, int64_t n,
                             int64_t c, int64_t inner, UnaryOp post, cudaStream_t stream);

/// Copies a [outer, inner] block into a [outer, outerStride] destination at column `offset`: one input
/// of a Concat (inner = input's dim(axis) * trailing, outerStride = output's dim(axis) * trailing).
cudaError_t concatCopy(const void* in, void* out, int64_t outer, int64_t inner, int64_t outerStride,
                       int64_t offset, int elemBytes, cudaStream_t stream);

/// out[o] = in[ sum_k (starts[k] + idx_k * steps[k]) * inStrides[k] ] over the output shape (Slice with
/// any steps, also negative; Split is a Slice per output). `inStrides` in elements, rank = outShape.rank.
cudaError_t sliceCopy(const void* in, const int64_t* starts, const int64_t* steps, const int64_t* inStrides,
                      void* out, const Shape& outShape, int elemBytes, cudaStream_t stream);

/// Transpose: out has shape outShape; out[i_0..i_r] = in[...] where input axis perm[k] becomes output
/// axis k. `inShape` is the input's shape. `elemBytes` 1, 2, 4 or 8 (also for sliceCopy, concatCopy
/// and gather).
cudaError_t transpose(const void* in, const Shape& inShape, const int* perm, void* out, int elemBytes,
                      cudaStream_t stream);

/// Resize of the last two axes of a rank-4 [N, C, H, W] float tensor to [N, C, OH, OW].
/// mode: 0 nearest, 1 linear (bilinear). coord: 0 half_pixel, 1 asymmetric, 2 align_corners,
/// 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest. nearestMode: 0 round_prefer_floor,
/// 1 round_prefer_ceil, 2 floor, 3 ceil. scaleH/scaleW are ONNX's scales (output/input) used in the
/// coordinate transform (pass OH/H when the model gave sizes).
cudaError_t resize2dF32(const float* in, int64_t n, int64_t c, int64_t h, int64_t w, float* out, int64_t oh,
                        int64_t ow, float scaleH, float scaleW, int mode, int coord, int nearestMode,
                        cudaStream_t stream);

/// Softmax / LogSoftmax over the middle axis of [outer, axisLen, inner] (ONNX opset >= 13 semantics;
/// the caller flattens for older opsets by passing inner = 1).
cudaError_t softmaxF32(const float* in, float* out, int64_t outer, int64_t axisLen, int64_t inner, bool log,
                       cudaStream_t stream);

/// Mean (or sum, or max) over the middle axis of [outer, len, inner] -> [outer, inner]: ReduceMean /
/// ReduceSum / ReduceMax over contiguous axes, GlobalAveragePool (outer = N*C, len = H*W, inner = 1).
/// kind: 0 sum, 1 mean, 2 max.
cudaError_t reduceF32(const float* in, float* out, int64_t outer, int64_t len, int64_t inner, int kind,
                      cudaStream_t stream);

/// Constant / reflect / edge padding of a float tensor: out shape = in shape + pads. padsBegin[k] may be
/// negative (crop). mode: 0 constant (value), 1 reflect, 2 edge.
cudaError_t padF32(const float* in, const Shape& inShape, const int64_t* padsBegin, float* out,
                   const Shape& outShape, int mode, float value, cudaStream_t stream);

/// Gather along `axis` of `in` [outer, axisLen, inner] with int64 indices (negative ones count from the
/// end; out of range ones are clamped into range): out [outer, nIdx, inner].
cudaError_t gather(const void* in, int64_t outer, int64_t axisLen, int64_t inner, const int64_t* indices,
                   int64_t nIdx, void* out, int elemBytes, cudaStream_t stream);

/// Fills n floats with v.
cudaError_t fillF32(float* out, int64_t n, float v, cudaStream_t stream);

}  // namespace partex::cuda
