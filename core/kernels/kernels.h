#pragma once
/// \file Internal to the CPU backend: helpers shared by the kernel files (attribute reading, numpy
/// broadcasting, OpenMP loops, dtype dispatch).

#include <omp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace partex::cpu {

/// Runs fn(begin, end) over [0, n) split into one contiguous chunk per thread (one call when
/// ctx.threads == 1 or n is small).
template <class F>
void parallelChunks(const ExecContext& ctx, int64_t n, F&& fn, int64_t minPerThread = 4096) {
  int threads = ctx.threads;
  if (threads > 1 && n / minPerThread < threads) threads = static_cast<int>(std::max<int64_t>(1, n / minPerThread));
  if (threads <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) fn(b, e);
  }
}

/// Calls fn(T{}) with an unsigned type of `bytes` bytes (element-size generic copies); false for other sizes.
template <class F>
bool dispatchSize(int64_t bytes, F&& fn) {
  switch (bytes) {
    case 1:
      fn(uint8_t{});
      return true;
    case 2:
      fn(uint16_t{});
      return true;
    case 4:
      fn(uint32_t{});
      return true;
    case 8:
      fn(uint64_t{});
      return true;
    default:
      return false;
  }
}

/// Normalises a possibly negative axis for `rank`; -1 when out of range.
inline int64_t normAxis(int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

/// The numpy-broadcast shape of `shapes`; false when incompatible.
bool broadcastShape(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>& out);
/// Element strides of `shape` aligned to `outShape` (right-aligned), 0 where broadcast.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& outShape);
/// Contiguous row-major strides.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

/// d[i * ld + j] = s[i + j * ls] for i < rows, j < cols, of 4-byte elements, in the Transpose kernel's
/// cache tiles and register blocks. A channels-last image [S][C] to row-major [C][S]: ls = C, ld = S,
/// rows = C, cols = S.
void transposePlane32(const void* s, int64_t ls, void* d, int64_t ld, int64_t rows, int64_t cols);

/// Walks an N-ary broadcast: calls fn(outIndex, offsets[]) for every output element of [begin, end).
/// `strides[k]` are input k's broadcast strides. Used by element-wise and Where/Expand kernels.
template <size_t K, class F>
void broadcastWalk(const std::vector<int64_t>& outShape, const std::vector<int64_t> (&strides)[K], int64_t begin,
                   int64_t end, F&& fn) {
  const size_t r = outShape.size();
  if (begin >= end) return;
  std::vector<int64_t> idx(r, 0);
  int64_t rem = begin;
  int64_t off[K] = {};
  for (size_t d = r; d-- > 0;) {
    const int64_t n = outShape[d];
    idx[d] = n ? rem % n : 0;
    rem = n ? rem / n : 0;
    for (size_t k = 0; k < K; ++k) off[k] += idx[d] * strides[k][d];
  }
  const int64_t inner = r ? outShape[r - 1] : 1;
  int64_t innerStride[K];
  for (size_t k = 0; k < K; ++k) innerStride[k] = r ? strides[k][r - 1] : 0;
  int64_t i = begin;
  while (i < end) {
    // Run along the last axis.
    int64_t j = r ? idx[r - 1] : 0;
    for (; j < inner && i < end; ++j, ++i) {
      fn(i, off);
      for (size_t k = 0; k < K; ++k) off[k] += innerStride[k];
    }
    if (i >= end) break;
    // Carry into the outer axes.
    for (size_t k = 0; k < K; ++k) off[k] -= innerStride[k] * inner;
    if (r) idx[r - 1] = 0;
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
      if (idx[d] < outShape[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * outShape[d];
      idx[d] = 0;
    }
  }
}

/// Integer attribute list or `def` when absent.
std::vector<int64_t> attrIntsOr(const Node& n, const std::string& key, std::vector<int64_t> def);
/// Float attribute list (empty when absent).
std::vector<double> attrFloats(const Node& n, const std::string& key);

/// "input i is missing" / dtype mismatch helpers for run(): return an error message or "".
std::string expectInput(const std::vector<const Tensor*>& in, size_t i, const char* what);

/// Calls fn(T{}) for the C++ type of `t` among float, double, int32, int64, int8, uint8, int16, uint16,
/// uint32, uint64, bool(uint8); returns false when the dtype is none of those.
template <class F>
bool dispatchAll(DType t, F&& fn) {
  switch (t) {
    case DType::Float32:
      fn(float{});
      return true;
    case DType::Float64:
      fn(double{});
      return true;
    case DType::Int32:
      fn(int32_t{});
      return true;
    case DType::Int64:
      fn(int64_t{});
      return true;
    case DType::Int8:
      fn(int8_t{});
      return true;
    case DType::UInt8:
      fn(uint8_t{});
      return true;
    case DType::Bool:
      fn(uint8_t{});
      return true;
    case DType::Int16:
      fn(int16_t{});
      return true;
    case DType::UInt16:
      fn(uint16_t{});
      return true;
    case DType::UInt32:
      fn(uint32_t{});
      return true;
    case DType::UInt64:
      fn(uint64_t{});
      return true;
    default:
      return false;
  }
}

/// Typed pointer without the dtype check (Bool is read as uint8_t). Callers check the dtype first.
template <class T>
T* ptr(Tensor& t) {
  return static_cast<T*>(t.raw());
}
template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw());
}

/// Every fixed-size dtype a Tensor holds except the 16-bit floats.
const std::vector<DType>& allPlainDTypes();
/// Float32 only; float32 and float64; numeric (no bool).
const std::vector<DType>& f32Only();
const std::vector<DType>& floatDTypes();
const std::vector<DType>& numericDTypes();

}  // namespace partex::cpu
