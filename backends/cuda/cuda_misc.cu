// Cast, Where and logical operators (cuda_misc.h): one thread per output element, broadcasting through
// per-input strides (0 along a broadcast axis).
#include "cuda_misc.h"

namespace partex::cuda {
namespace {

constexpr int kThreads = 256;

int blocksFor(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 32 ? b : 65535 * 32);
}

/// Output dims and each input's strides over them (right-aligned; 0 where the input's dim is 1).
struct Bcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};
};

Bcast makeBcast(const Shape& out, const Shape* ins, int count) {
  Bcast b;
  b.rank = out.rank;
  for (int k = 0; k < out.rank; ++k) b.dims[k] = out.d[k];
  for (int i = 0; i < count; ++i) {
    int64_t st = 1;
    for (int k = out.rank - 1, j = ins[i].rank - 1; k >= 0; --k, --j) {
      const int64_t dim = j >= 0 ? ins[i].d[j] : 1;
      b.stride[i][k] = dim == 1 ? 0 : st;
      st *= dim;
    }
  }
  return b;
}

__device__ inline void offsets(const Bcast& b, int64_t idx, int count, int64_t* off) {
  for (int i = 0; i < count; ++i) off[i] = 0;
  for (int k = b.rank - 1; k >= 0; --k) {
    const int64_t c = idx % b.dims[k];
    idx /= b.dims[k];
    for (int i = 0; i < count; ++i) off[i] += c * b.stride[i][k];
  }
}

template <class From, class To>
__global__ void castKernel(const From* in, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<To>(in[i]);
}

template <class From>
__global__ void castToBoolKernel(const From* in, uint8_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = in[i] != From(0) ? 1 : 0;
}

template <class From>
cudaError_t castFrom(const From* in, void* out, ElemType to, int64_t n, cudaStream_t s) {
  const int g = blocksFor(n);
  switch (to) {
    case ElemType::F32: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<float*>(out), n); break;
    case ElemType::F64: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<double*>(out), n); break;
    case ElemType::I64: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<int64_t*>(out), n); break;
    case ElemType::I32: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<int32_t*>(out), n); break;
    case ElemType::I8: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<int8_t*>(out), n); break;
    case ElemType::U8: castKernel<<<g, kThreads, 0, s>>>(in, static_cast<uint8_t*>(out), n); break;
    case ElemType::Bool: castToBoolKernel<<<g, kThreads, 0, s>>>(in, static_cast<uint8_t*>(out), n); break;
  }
  return cudaGetLastError();
}

template <class T>
__global__ void whereKernel(const uint8_t* cond, const T* x, const T* y, T* out, Bcast b, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offsets(b, i, 3, off);
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

__global__ void logicalKernel(int op, const uint8_t* a, const uint8_t* c, uint8_t* out, Bcast b, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[2];
    offsets(b, i, 2, off);
    const bool x = a[off[0]] != 0, y = c[off[1]] != 0;
    out[i] = op == 0 ? (x && y) : op == 1 ? (x || y) : (x != y);
  }
}

}  // namespace

cudaError_t castTensor(const void* in, ElemType from, void* out, ElemType to, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (from) {
    case ElemType::F32: return castFrom(static_cast<const float*>(in), out, to, n, stream);
    case ElemType::F64: return castFrom(static_cast<const double*>(in), out, to, n, stream);
    case ElemType::I64: return castFrom(static_cast<const int64_t*>(in), out, to, n, stream);
    case ElemType::I32: return castFrom(static_cast<const int32_t*>(in), out, to, n, stream);
    case ElemType::I8: return castFrom(static_cast<const int8_t*>(in), out, to, n, stream);
    case ElemType::U8:
    case ElemType::Bool: return castFrom(static_cast<const uint8_t*>(in), out, to, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t whereTensor(const uint8_t* cond, const Shape& condShape, const void* x, const Shape& xShape, const void* y,
                        const Shape& yShape, void* out, const Shape& outShape, int elemBytes, cudaStream_t stream) {
  const int64_t n = outShape.numel();
  if (n <= 0) return cudaSuccess;
  const Shape ins[3] = {condShape, xShape, yShape};
  const Bcast b = makeBcast(outShape, ins, 3);
  const int g = blocksFor(n);
  switch (elemBytes) {
    case 1: whereKernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(y), static_cast<uint8_t*>(out), b, n); break;
    case 2: whereKernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), static_cast<uint16_t*>(out), b, n); break;
    case 4: whereKernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(y), static_cast<uint32_t*>(out), b, n); break;
    case 8: whereKernel<<<g, kThreads, 0, stream>>>(cond, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(y), static_cast<uint64_t*>(out), b, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t logicalBinary(int op, const uint8_t* a, const Shape& aShape, const uint8_t* b, const Shape& bShape,
                          uint8_t* out, const Shape& outShape, cudaStream_t stream) {
  const int64_t n = outShape.numel();
  if (n <= 0) return cudaSuccess;
  const Shape ins[2] = {aShape, bShape};
  const Bcast bc = makeBcast(outShape, ins, 2);
  logicalKernel<<<blocksFor(n), kThreads, 0, stream>>>(op, a, b, out, bc, n);
  return cudaGetLastError();
}

}  // namespace partex::cuda
