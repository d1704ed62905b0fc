// Pooling and LRN kernels (cuda_pool.h): one thread per output element.
#include "cuda_pool.h"

namespace partex::cuda {
namespace {

constexpr int kThreads = 256;

int blocksFor(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 2147483647 ? b : 2147483647);
}

template <bool kMax>
__global__ void pool2dKernel(const float* __restrict__ in, float* __restrict__ out, Pool2d p, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow;
    const int64_t oy = (i / p.ow) % p.oh;
    const int64_t nc = i / (p.ow * p.oh);
    const float* src = in + nc * p.h * p.w;
    const int64_t y0 = oy * p.sh - p.padTop, x0 = ox * p.sw - p.padLeft;
    float acc = kMax ? -INFINITY : 0.f;
    int count = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t y = y0 + static_cast<int64_t>(ky) * p.dh;
      if (y < 0 || y >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t x = x0 + static_cast<int64_t>(kx) * p.dw;
        if (x < 0 || x >= p.w) continue;
        const float v = src[y * p.w + x];
        if (kMax) acc = (v > acc || v != v) ? v : acc;  // NaN propagates, as ONNX Runtime's max does
        else acc += v;
        ++count;
      }
    }
    if (!kMax) {
      int div = count;
      if (p.countIncludePad) {
        // The window clipped to the padded extent [-padTop, h + padBottom) (ceil_mode's extra part
        // beyond the pads does not count), as ONNX's reference does.
        const int64_t ye = min(y0 + static_cast<int64_t>(p.kh - 1) * p.dh + 1, p.h + p.padBottom);
        const int64_t xe = min(x0 + static_cast<int64_t>(p.kw - 1) * p.dw + 1, p.w + p.padRight);
        const int64_t ys = y0, xs = x0;
        const int64_t ny = (ye - ys + p.dh - 1) / p.dh, nx = (xe - xs + p.dw - 1) / p.dw;
        div = static_cast<int>(ny * nx);
      }
      acc = div > 0 ? acc / static_cast<float>(div) : 0.f;
    }
    out[i] = acc;
  }
}

__global__ void lrnKernel(const float* __restrict__ in, float* __restrict__ out, int64_t c, int64_t inner,
                          int size, float alphaOverSize, float beta, float bias, int64_t total) {
  const int lo = (size - 1) / 2, hi = size / 2;  // floor((size-1)/2) before, ceil((size-1)/2) after
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = (i / inner) % c;
    const int64_t base = i - ch * inner;  // element (n, 0, k)
    float sum = 0.f;
    const int64_t c0 = ch - lo < 0 ? 0 : ch - lo, c1 = ch + hi >= c ? c - 1 : ch + hi;
    for (int64_t j = c0; j <= c1; ++j) {
      const float v = in[base + j * inner];
      sum += v * v;
    }
    out[i] = in[i] / powf(bias + alphaOverSize * sum, beta);
  }
}

}  // namespace

cudaError_t maxPool2dF32(const float* in, float* out, const Pool2d& p, cudaStream_t stream) {
  const int64_t total = p.n * p.c * p.oh * p.ow;
  if (total == 0) return cudaSuccess;
  pool2dKernel<true><<<blocksFor(total), kThreads, 0, stream>>>(in, out, p, total);
  return cudaGetLastError();
}

cudaError_t avgPool2dF32(const float* in, float* out, const Pool2d& p, cudaStream_t stream) {
  const int64_t total = p.n * p.c * p.oh * p.ow;
  if (total == 0) return cudaSuccess;
  pool2dKernel<false><<<blocksFor(total), kThreads, 0, stream>>>(in, out, p, total);
  return cudaGetLastError();
}

cudaError_t lrnF32(const float* in, float* out, int64_t n, int64_t c, int64_t inner, int size, float alpha,
                   float beta, float bias, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  if (total == 0) return cudaSuccess;
  lrnKernel<<<blocksFor(total), kThreads, 0, stream>>>(in, out, c, inner, size, alpha / static_cast<float>(size),
                                                       beta, bias, total);
  return cudaGetLastError();
}

}  // namespace partex::cuda

namespace partex::cuda {
namespace {
__global__ void busyWaitKernel(int64_t ns) {
  uint64_t t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (static_cast<int64_t>(t - t0) >= ns) break;
    __nanosleep(1000);
  }
}
}  // namespace

cudaError_t gpuBusyWait(int64_t ns, cudaStream_t stream) {
  busyWaitKernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}
}  // namespace partex::cuda
