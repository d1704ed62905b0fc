#pragma once
/// \file Pooling and LRN kernels of the CUDA backend (cuda_pool.cu): one thread per output element over
/// its window, so that every ONNX variant (asymmetric pads, ceil_mode's partial windows, dilations,
/// count_include_pad) is computed exactly, which cuDNN's symmetric-padding pooling cannot.

#include <cuda_runtime.h>

#include <cstdint>

namespace partex::cuda {

/// 2-D pooling window parameters (a 1-D pool passes h = oh = kh = 1, pads 0, stride 1).
struct Pool2d {
  int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int padTop = 0, padLeft = 0;       ///< Begin pads; end pads only matter through oh/ow.
  int padBottom = 0, padRight = 0;   ///< End pads (count_include_pad counts up to them, not beyond).
  bool countIncludePad = false;
};

/// MaxPool (max over the valid window elements) and AveragePool of float32 NCHW.
cudaError_t maxPool2dF32(const float* in, float* out, const Pool2d& p, cudaStream_t stream);
cudaError_t avgPool2dF32(const float* in, float* out, const Pool2d& p, cudaStream_t stream);

/// ONNX LRN across channels of [N, C, inner]: y = x / (bias + alpha / size * sum of x^2 over the
/// channels c - floor((size-1)/2) .. c + ceil((size-1)/2))^beta.
cudaError_t lrnF32(const float* in, float* out, int64_t n, int64_t c, int64_t inner, int size, float alpha,
                   float beta, float bias, cudaStream_t stream);

}  // namespace partex::cuda

namespace partex::cuda {
/// Keeps the GPU busy for about `ns` nanoseconds (one thread spinning on the global timer): enqueued
/// before a timed sequence so that the host has queued every launch before the GPU reaches them, and
/// event pairs then time the kernels, not the host's launch rate.
cudaError_t gpuBusyWait(int64_t ns, cudaStream_t stream);
}  // namespace partex::cuda
