// Less common operators in plain C++: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Hardmax,
// GatherElements, ScatterElements/Scatter, GatherND (batch_dims 0), ScatterND, OneHot, EyeLike.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/vecmath.h"

namespace partex::cpu {

namespace {

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

bool present(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() && in[i] && !in[i]->empty();
}

/// NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (log-softmax over axis 1 first), following
/// the ONNX reference: weights gathered per target (clipped), ignored targets weigh 0, "mean" divides by
/// the weight sum when weights or ignore_index are given.
class LossKernel final : public OpKernel {
 public:
  LossKernel(const Node& n, bool softmax)
      : softmax_(softmax),
        reduction_(n.attrString("reduction", "mean")),
        hasIgnore_(n.hasAttr("ignore_index")),
        ignore_(n.attrInt("ignore_index", 0)) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "target"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& tg = *in[1];
    const Tensor* w = present(in, 2) ? in[2] : nullptr;
    if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64) return makeError("float input expected");
    if (x.rank() < 2) return makeError("input rank below 2");
    const int64_t N = x.dim(0), C = x.dim(1), D = (N * C) != 0 ? x.numElements() / (N * C) : 0;
    if (tg.numElements() != N * D || tg.rank() != x.rank() - 1) return makeError("target shape does not match");
    if (w && w->numElements() != C) return makeError("weight size differs from C");
    std::vector<double> lp(static_cast<size_t>(x.numElements()));
    for (int64_t i = 0; i < x.numElements(); ++i) lp[static_cast<size_t>(i)] = x.valueAsDouble(i);
    if (softmax_) {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t d = 0; d < D; ++d) {
          double m = -std::numeric_limits<double>::infinity(), s = 0;
          for (int64_t c = 0; c < C; ++c) m = std::max(m, lp[static_cast<size_t>((n * C + c) * D + d)]);
          for (int64_t c = 0; c < C; ++c) s += std::exp(lp[static_cast<size_t>((n * C + c) * D + d)] - m);
          for (int64_t c = 0; c < C; ++c) {
            double& v = lp[static_cast<size_t>((n * C + c) * D + d)];
            v = std::log(std::exp(v - m) / s);
          }
        }
    }
    std::vector<double> loss(static_cast<size_t>(N * D)), wt(static_cast<size_t>(N * D), 1.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>(n * D + d);
        const int64_t t = tg.valueAsInt(static_cast<int64_t>(k));
        if (hasIgnore_ && t == ignore_) {
          loss[k] = 0;
          wt[k] = 0;
          continue;
        }
        if (t < 0 || t >= C) return makeError("target ", std::to_string(t), " out of range");
        loss[k] = -lp[static_cast<size_t>((n * C + t) * D + d)];
        if (w) wt[k] = w->valueAsDouble(t);
        loss[k] *= wt[k];
      }
    out.resize(softmax_ ? 2 : 1);
    if (reduction_ == "none") {
      if (auto s = out[0].ensure(x.dtype(), tg.shape()); !s) return s;
      for (size_t k = 0; k < loss.size(); ++k) setD(out[0], static_cast<int64_t>(k), loss[k]);
    } else {
      if (auto s = out[0].ensure(x.dtype(), {}); !s) return s;
      double sum = 0, wsum = 0;
      for (size_t k = 0; k < loss.size(); ++k) {
        sum += loss[k];
        wsum += wt[k];
      }
      double r = sum;
      if (reduction_ == "mean") r = (w || hasIgnore_) ? sum / wsum : sum / static_cast<double>(loss.size());
      setD(out[0], 0, r);
    }
    if (softmax_) {
      if (auto s = out[1].ensure(x.dtype(), x.shape()); !s) return s;
      for (size_t k = 0; k < lp.size(); ++k) setD(out[1], static_cast<int64_t>(k), lp[k]);
    }
    return Status::ok();
  }

 private:
  static void setD(Tensor& t, int64_t i, double v) {
    if (t.dtype() == DType::Float32)
      ptr<float>(t)[i] = static_cast<float>(v);
    else
      ptr<double>(t)[i] = v;
  }
  bool softmax_;
  std::string reduction_;
  bool hasIgnore_;
  int64_t ignore_;
};

class HardmaxKernel final : public OpKernel {
 public:
  HardmaxKernel(const Node& n, int64_t opset) : axis_(n.attrInt("axis", opset >= 13 ? -1 : 1)), coerce_(opset < 13) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    int64_t outer = 1, dim = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (coerce_)
        (d < axis ? outer : dim) *= x.dim(d);
      else if (d < axis)
        outer *= x.dim(d);
      else if (d == axis)
        dim = x.dim(d);
      else
        inner *= x.dim(d);
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    const float* px = ptr<float>(x);
    float* po = ptr<float>(out[0]);
    // Zeros (all bits clear), then a 1 at each row's first maximum, found by the vectorised scans that
    // ArgMax uses (issue 24: Tensor::fill's per-element store and a scan re-reading the best value ran
    // Hardmax over the attention rows at 5x ONNX Runtime).
    if (x.numElements() > 0) std::memset(po, 0, static_cast<size_t>(x.numElements()) * sizeof(float));
    if (dim == 0) return Status::ok();
    parallelChunks(
        ctx, outer,
        [&](int64_t b, int64_t e) {
          std::vector<int64_t> idx(static_cast<size_t>(inner > 1 ? inner : 0));
          std::vector<float> best(idx.size());
          for (int64_t o = b; o < e; ++o) {
            const float* q = px + o * dim * inner;
            float* y = po + o * dim * inner;
            if (inner == 1) {
              y[argBestRowF32(q, dim, true, false)] = 1.0f;
              continue;
            }
            argBestColsF32(q, dim, inner, true, false, idx.data(), best.data());
            for (int64_t i = 0; i < inner; ++i) y[idx[static_cast<size_t>(i)] * inner + i] = 1.0f;
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, dim * inner)));
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool coerce_;
};

/// Element-size generic copy of one element.
inline void copyElem(std::byte* dst, const std::byte* src, int64_t es) {
  std::memcpy(dst, src, static_cast<size_t>(es));
}

/// Applies a scatter reduction for a float/int element at `dst` with `src`.
Status reduceInto(DType dt, void* dst, const void* src, const std::string& red) {
  if (red == "none") {
    std::memcpy(dst, src, static_cast<size_t>(tensorElementSize(dt)));
    return Status::ok();
  }
  bool ok = dispatchAll(dt, [&](auto v) {
    using T = decltype(v);
    T& d = *static_cast<T*>(dst);
    const T s = *static_cast<const T*>(src);
    if (red == "add")
      d = static_cast<T>(d + s);
    else if (red == "mul")
      d = static_cast<T>(d * s);
    else if (red == "max")
      d = std::max(d, s);
    else if (red == "min")
      d = std::min(d, s);
  });
  return ok ? Status::ok() : Status(makeError("dtype not supported"));
}

class ElementsKernel final : public OpKernel {
 public:
  ElementsKernel(const Node& n, bool scatter)
      : axis_(n.attrInt("axis", 0)), scatter_(scatter), red_(n.attrString("reduction", "none")) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "indices"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    const Tensor* upd = scatter_ && present(in, 2) ? in[2] : nullptr;
    if (scatter_ && (!upd || upd->shape() != idx.shape() || upd->dtype() != x.dtype()))
      return makeError("updates must match indices");
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0 || idx.rank() != x.rank()) return makeError("axis or rank mismatch");
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != axis && idx.dim(d) > x.dim(d)) return makeError("indices larger than data");
    const int64_t es = tensorElementSize(x.dtype());
    out.resize(1);
    if (auto s = scatter_ ? out[0].copyFrom(x) : out[0].ensure(x.dtype(), idx.shape()); !s) return s;
    const auto xs = contiguousStrides(x.shape());
    auto* po = static_cast<std::byte*>(out[0].raw());
    const int64_t dim = x.dim(axis);
    if (!scatter_) return gather(ctx, x, idx, axis, out[0]);
    if ((idx.dtype() == DType::Int64 || idx.dtype() == DType::Int32) && dispatchAll(x.dtype(), [](auto) {}))
      return scatter(x, idx, *upd, axis, out[0]);
    for (int64_t i = 0; i < idx.numElements(); ++i) {
      int64_t rem = i, off = 0;
      for (int64_t d = idx.rank(); d-- > 0;) {
        const int64_t c = rem % idx.dim(d);
        rem /= idx.dim(d);
        if (d == axis) {
          int64_t t = idx.valueAsInt(i);
          if (t < 0) t += dim;
          if (t < 0 || t >= dim) return makeError("index out of range");
          off += t * xs[static_cast<size_t>(d)];
        } else {
          off += c * xs[static_cast<size_t>(d)];
        }
      }
      if (auto s = reduceInto(x.dtype(), po + off * es, static_cast<const std::byte*>(upd->raw()) + i * es, red_); !s)
        return s;
    }
    return Status::ok();
  }

 private:
  /// ScatterElements into `out` (a copy of the data) row by row along the last axis of the indices, each
  /// row's start stepped like an odometer and the reduction chosen outside the loop; in the indices'
  /// order, one thread, so that repeated indices resolve as ONNX's reference does (the last write wins for
  /// "none"). Issue 24: the per-element coordinate decomposition, valueAsInt and the reduction's name
  /// compared per element ran the last-axis scatter at 4.1x ONNX Runtime.
  Status scatter(const Tensor& x, const Tensor& idx, const Tensor& upd, int64_t axis, Tensor& out) const {
    const int64_t r = idx.rank();
    if (r == 0 || idx.numElements() == 0) return Status::ok();
    const auto xs = contiguousStrides(x.shape());
    const int64_t dim = x.dim(axis), as = xs[static_cast<size_t>(axis)];
    const int64_t inner = idx.dim(r - 1), rows = idx.numElements() / inner;
    const int red = red_ == "none" ? 0 : red_ == "add" ? 1 : red_ == "mul" ? 2 : red_ == "max" ? 3 : red_ == "min" ? 4 : -1;
    if (red < 0) return makeError("reduction ", red_);
    bool bad = false;
    auto body = [&](auto tv, auto iv, auto redc) {
      using T = decltype(tv);
      using I = decltype(iv);
      constexpr int R = decltype(redc)::value;
      T* po = ptr<T>(out);
      const T* pu = ptr<T>(upd);
      const I* pi = ptr<I>(idx);
      std::vector<int64_t> c(static_cast<size_t>(r), 0);
      int64_t off = 0;  // the row's start in out, the scattered axis at 0
      const int64_t js = axis == r - 1 ? 0 : 1;  // along the row: the last axis of out, unless scattered
      for (int64_t row = 0; row < rows && !bad; ++row) {
        const I* ir = pi + row * inner;
        const T* ur = pu + row * inner;
        for (int64_t j = 0; j < inner; ++j) {
          int64_t t = static_cast<int64_t>(ir[j]);
          t += t < 0 ? dim : 0;
          if (static_cast<uint64_t>(t) >= static_cast<uint64_t>(dim)) {
            bad = true;
            break;
          }
          T& d = po[off + t * as + j * js];
          const T u = ur[j];
          if constexpr (R == 0)
            d = u;
          else if constexpr (R == 1)
            d = static_cast<T>(d + u);
          else if constexpr (R == 2)
            d = static_cast<T>(d * u);
          else if constexpr (R == 3)
            d = std::max(d, u);
          else
            d = std::min(d, u);
        }
        for (int64_t d = r - 1; d-- > 0;) {
          const int64_t step = d != axis ? xs[static_cast<size_t>(d)] : 0;
          off += step;
          if (++c[static_cast<size_t>(d)] < idx.dim(d)) break;
          off -= step * idx.dim(d);
          c[static_cast<size_t>(d)] = 0;
        }
      }
    };
    auto withRed = [&](auto tv, auto iv) {
      switch (red) {
        case 0:
          return body(tv, iv, std::integral_constant<int, 0>{});
        case 1:
          return body(tv, iv, std::integral_constant<int, 1>{});
        case 2:
          return body(tv, iv, std::integral_constant<int, 2>{});
        case 3:
          return body(tv, iv, std::integral_constant<int, 3>{});
        default:
          return body(tv, iv, std::integral_constant<int, 4>{});
      }
    };
    const bool ok = dispatchAll(x.dtype(), [&](auto tv) {
      if (idx.dtype() == DType::Int64)
        withRed(tv, int64_t{});
      else
        withRed(tv, int32_t{});
    });
    if (!ok) return makeError("dtype not supported");
    if (bad) return makeError("index out of range");
    return Status::ok();
  }

  /// GatherElements row by row along the last axis: each row's start in `x` stepped like an odometer, then
  /// a tight loop (an indexed read along the gathered axis when it is the last one, a row copy offset by
  /// the index otherwise). Issue 24: the per-element coordinate decomposition and index read through
  /// valueAsInt ran the last-axis gather 12x slower than ONNX Runtime.
  static Status gather(const ExecContext& ctx, const Tensor& x, const Tensor& idx, int64_t axis, Tensor& out) {
    if (idx.numElements() == 0) return Status::ok();
    if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32) return makeError("indices must be int32 or int64");
    const int64_t r = idx.rank();
    if (r == 0) return makeError("rank 0");
    const auto xs = contiguousStrides(x.shape());
    const int64_t dim = x.dim(axis), as = xs[static_cast<size_t>(axis)];
    const int64_t inner = idx.dim(r - 1), rows = idx.numElements() / inner;
    const bool lastAxis = axis == r - 1;
    std::atomic<bool> bad{false};
    auto body = [&](auto tv, auto iv) {
      using T = decltype(tv);
      using I = decltype(iv);
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out);
      const I* pi = ptr<I>(idx);
      parallelChunks(
          ctx, rows,
          [&](int64_t b, int64_t e) {
            std::vector<int64_t> c(static_cast<size_t>(r), 0);
            int64_t off = 0, rem = b;
            for (int64_t d = r - 1; d-- > 0;) {
              c[static_cast<size_t>(d)] = rem % idx.dim(d);
              rem /= idx.dim(d);
              if (d != axis) off += c[static_cast<size_t>(d)] * xs[static_cast<size_t>(d)];
            }
            for (int64_t row = b; row < e; ++row) {
              const I* ir = pi + row * inner;
              T* o = po + row * inner;
              bool ok = true;
              if (lastAxis) {
                const T* xr = px + off;
                for (int64_t j = 0; j < inner; ++j) {
                  int64_t t = static_cast<int64_t>(ir[j]);
                  t += t < 0 ? dim : 0;
                  ok &= static_cast<uint64_t>(t) < static_cast<uint64_t>(dim);
                  o[j] = xr[ok ? t : 0];
                }
              } else {
                const T* xr = px + off;
                for (int64_t j = 0; j < inner; ++j) {
                  int64_t t = static_cast<int64_t>(ir[j]);
                  t += t < 0 ? dim : 0;
                  ok &= static_cast<uint64_t>(t) < static_cast<uint64_t>(dim);
                  o[j] = xr[(ok ? t : 0) * as + j];
                }
              }
              if (!ok) {
                bad = true;
                return;
              }
              for (int64_t d = r - 1; d-- > 0;) {
                const int64_t step = d != axis ? xs[static_cast<size_t>(d)] : 0;
                off += step;
                if (++c[static_cast<size_t>(d)] < idx.dim(d)) break;
                off -= step * idx.dim(d);
                c[static_cast<size_t>(d)] = 0;
              }
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
    };
    const bool sized = dispatchSize(tensorElementSize(x.dtype()), [&](auto tv) {
      if (idx.dtype() == DType::Int64)
        body(tv, int64_t{});
      else
        body(tv, int32_t{});
    });
    if (!sized) return makeError("element size not supported");
    if (bad) return makeError("index out of range");
    return Status::ok();
  }

  int64_t axis_;
  bool scatter_;
  std::string red_;
};

class NdKernel final : public OpKernel {
 public:
  NdKernel(const Node& n, bool scatter) : scatter_(scatter), red_(n.attrString("reduction", "none")) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "indices"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    if (idx.rank() < 1) return makeError("indices rank 0");
    const int64_t q = idx.dim(-1);
    if (q > x.rank() || q < 1) return makeError("last indices dim exceeds data rank");
    const int64_t tuples = idx.numElements() / q;
    int64_t slice = 1;
    std::vector<int64_t> sliceShape(x.shape().begin() + q, x.shape().end());
    for (int64_t d : sliceShape) slice *= d;
    const auto xs = contiguousStrides(x.shape());
    const int64_t es = tensorElementSize(x.dtype());
    out.resize(1);
    if (scatter_) {
      if (auto e = expectInput(in, 2, "updates"); !e.empty()) return Error{e};
      if (in[2]->numElements() != tuples * slice || in[2]->dtype() != x.dtype())
        return makeError("updates do not match");
      if (auto s = out[0].copyFrom(x); !s) return s;
    } else {
      std::vector<int64_t> shape(idx.shape().begin(), idx.shape().end() - 1);
      shape.insert(shape.end(), sliceShape.begin(), sliceShape.end());
      if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    }
    auto* po = static_cast<std::byte*>(out[0].raw());
    const auto* px = static_cast<const std::byte*>(x.raw());
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < q; ++j) {
        int64_t v = idx.valueAsInt(t * q + j);
        const int64_t dim = x.dim(j);
        if (v < 0) v += dim;
        if (v < 0 || v >= dim) return makeError("index out of range");
        off += v * xs[static_cast<size_t>(j)];
      }
      if (scatter_) {
        const auto* pu = static_cast<const std::byte*>(in[2]->raw());
        for (int64_t e = 0; e < slice; ++e)
          if (auto s = reduceInto(x.dtype(), po + (off + e) * es, pu + (t * slice + e) * es, red_); !s) return s;
      } else {
        std::memcpy(po + t * slice * es, px + off * es, static_cast<size_t>(slice * es));
      }
    }
    return Status::ok();
  }

 private:
  bool scatter_;
  std::string red_;
};

/// n elements of type T at `dst`, each the bytes at `value`.
template <class T>
void fillAs(std::byte* dst, const std::byte* value, int64_t n) {
  T v;
  std::memcpy(&v, value, sizeof v);
  std::fill_n(reinterpret_cast<T*>(dst), n, v);
}

/// n elements at `dst`, each a copy of the es bytes at `value`.
void fillElems(std::byte* dst, const std::byte* value, int64_t es, int64_t n) {
  if (n <= 0) return;
  if (es == 1) return fillAs<uint8_t>(dst, value, n);
  if (es == 2) return fillAs<uint16_t>(dst, value, n);
  if (es == 4) return fillAs<uint32_t>(dst, value, n);
  if (es == 8) return fillAs<uint64_t>(dst, value, n);
  for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * es, value, static_cast<size_t>(es));
}

class OneHotKernel final : public OpKernel {
 public:
  explicit OneHotKernel(const Node& n) : axis_(n.attrInt("axis", -1)) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "indices, depth, values"); !e.empty()) return Error{e};
    const Tensor& idx = *in[0];
    const int64_t depth = static_cast<int64_t>(in[1]->valueAsDouble(0));
    const Tensor& vals = *in[2];
    if (depth <= 0 || vals.numElements() != 2) return makeError("bad depth or values");
    const int64_t r = idx.rank() + 1;
    const int64_t axis = normAxis(axis_, r);
    if (axis < 0) return makeError("axis out of range");
    std::vector<int64_t> shape = idx.shape();
    shape.insert(shape.begin() + axis, depth);
    out.resize(1);
    if (auto s = out[0].ensure(vals.dtype(), shape); !s) return s;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < idx.rank(); ++d) (d < axis ? outer : inner) *= idx.dim(d);
    const int64_t es = tensorElementSize(vals.dtype());
    const auto* pv = static_cast<const std::byte*>(vals.raw());
    auto* po = static_cast<std::byte*>(out[0].raw());
    // Every element the off value, then each index's one element the on value: one pass over the output
    // and one read per index (the loop over every output element read its index and copied an element
    // per output element: Magika's [1,1536] bytes one-hot to 257 took 1.3-2.9 ms, 8x ONNX Runtime).
    fillElems(po, pv, es, outer * depth * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = static_cast<int64_t>(idx.valueAsDouble(o * inner + i));
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;  // out of range: the whole column stays off
        copyElem(po + ((o * depth + v) * inner + i) * es, pv + es, es);
      }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

class EyeLikeKernel final : public OpKernel {
 public:
  explicit EyeLikeKernel(const Node& n) : k_(n.attrInt("k", 0)), dtype_(n.attrInt("dtype", 0)) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.rank() != 2) return makeError("2-D input expected");
    const DType dt = dtype_ ? static_cast<DType>(dtype_) : x.dtype();
    out.resize(1);
    if (auto s = out[0].ensure(dt, x.shape()); !s) return s;
    // Zero bytes are zero in every dtype: one memset, not an element-by-element fill (issue 24).
    if (out[0].bytes() > 0) std::memset(out[0].raw(), 0, static_cast<size_t>(out[0].bytes()));
    Tensor one;
    if (auto s = one.ensure(dt, {1}); !s) return s;
    one.fill(1.0);
    const int64_t es = tensorElementSize(dt);
    for (int64_t i = 0; i < x.dim(0); ++i) {
      const int64_t j = i + k_;
      if (j >= 0 && j < x.dim(1))
        copyElem(static_cast<std::byte*>(out[0].raw()) + (i * x.dim(1) + j) * es,
                 static_cast<const std::byte*>(one.raw()), es);
    }
    return Status::ok();
  }

 private:
  int64_t k_, dtype_;
};

/// Compress: the slices of `input` along `axis` (or of the flattened input) where `condition` is true.
class CompressKernel final : public OpKernel {
 public:
  explicit CompressKernel(const Node& n) : hasAxis_(n.hasAttr("axis")), axis_(n.attrInt("axis", 0)) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "condition"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& c = *in[1];
    if (c.rank() != 1) return makeError("condition must be 1-D");
    int64_t outer = 1, dim = x.numElements(), inner = 1;
    std::vector<int64_t> shape;
    int64_t axis = 0;
    if (hasAxis_) {
      axis = normAxis(axis_, x.rank());
      if (axis < 0) return makeError("axis out of range");
      dim = x.dim(axis);
      for (int64_t d = 0; d < x.rank(); ++d)
        if (d < axis)
          outer *= x.dim(d);
        else if (d > axis)
          inner *= x.dim(d);
    }
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < std::min(dim, c.numElements()); ++i)
      if (c.valueAsInt(i) != 0) keep.push_back(i);
    if (hasAxis_) {
      shape = x.shape();
      shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
    } else {
      shape = {static_cast<int64_t>(keep.size())};
    }
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    const int64_t es = tensorElementSize(x.dtype());
    const auto* px = static_cast<const std::byte*>(x.raw());
    auto* po = static_cast<std::byte*>(out[0].raw());
    const int64_t k = static_cast<int64_t>(keep.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(po + (o * k + j) * inner * es, px + (o * dim + keep[static_cast<size_t>(j)]) * inner * es,
                    static_cast<size_t>(inner * es));
    return Status::ok();
  }

 private:
  bool hasAxis_;
  int64_t axis_;
};

/// NonZero: the indices of the non-zero elements, one row per input dimension.
class NonZeroKernel final : public OpKernel {
 public:
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    // Issue 24: a generic read (valueAsDouble) per element and a vector of flat indices, each divided
    // back into coordinates, ran at 2.2x ONNX Runtime on a [1,128,128] mask. The typed path counts, then
    // walks the rows of the last axis with the leading coordinates carried along.
    const int64_t rank = x.rank(), total = x.numElements();
    const int64_t last = rank ? x.dim(rank - 1) : 1;
    Status st = Status::ok();
    const bool typed = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      int64_t n = 0;
#pragma omp simd reduction(+ : n)
      for (int64_t i = 0; i < total; ++i) n += px[i] != T(0) ? 1 : 0;
      out.resize(1);
      st = out[0].ensure(DType::Int64, {rank, n});
      if (!st || n == 0 || rank == 0) return;  // a scalar: shape [0, n], nothing to write
      int64_t* po = ptr<int64_t>(out[0]);
      std::vector<int64_t> lead(static_cast<size_t>(rank), 0);
      int64_t j = 0;
      for (int64_t row = 0; row * last < total; ++row) {
        const T* q = px + row * last;
        for (int64_t i = 0; i < last; ++i) {
          if (q[i] == T(0)) continue;
          for (int64_t d = 0; d + 1 < rank; ++d) po[d * n + j] = lead[static_cast<size_t>(d)];
          po[(rank - 1) * n + j] = i;
          ++j;
        }
        for (int64_t d = rank - 1; d-- > 0;) {  // the next row's leading coordinates
          if (++lead[static_cast<size_t>(d)] < x.dim(d)) break;
          lead[static_cast<size_t>(d)] = 0;
        }
      }
    });
    if (typed) return st;
    std::vector<int64_t> nz;
    for (int64_t i = 0; i < x.numElements(); ++i)
      if (x.valueAsDouble(i) != 0.0) nz.push_back(i);
    const int64_t n = static_cast<int64_t>(nz.size());
    out.resize(1);
    if (auto s = out[0].ensure(DType::Int64, {x.rank(), n}); !s) return s;
    int64_t* po = ptr<int64_t>(out[0]);
    for (int64_t j = 0; j < n; ++j) {
      int64_t rem = nz[static_cast<size_t>(j)];
      for (int64_t d = x.rank(); d-- > 0;) {
        po[d * n + j] = rem % x.dim(d);
        rem /= x.dim(d);
      }
    }
    return Status::ok();
  }
};

/// ReverseSequence: reverses the first seq_lens[b] elements along time_axis for every batch entry.
class ReverseSequenceKernel final : public OpKernel {
 public:
  explicit ReverseSequenceKernel(const Node& n)
      : batchAxis_(n.attrInt("batch_axis", 1)), timeAxis_(n.attrInt("time_axis", 0)) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "sequence_lens"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.rank() < 2 || (batchAxis_ != 0 && batchAxis_ != 1) || (timeAxis_ != 0 && timeAxis_ != 1) ||
        batchAxis_ == timeAxis_)
      return makeError("batch_axis/time_axis must be 0 and 1");
    const int64_t B = x.dim(batchAxis_), T = x.dim(timeAxis_);
    if (in[1]->numElements() != B) return makeError("sequence_lens size differs from the batch");
    const int64_t inner = (B * T) != 0 ? x.numElements() / (B * T) : 0;
    out.resize(1);
    if (auto s = out[0].copyFrom(x); !s) return s;
    const int64_t es = tensorElementSize(x.dtype());
    const auto* px = static_cast<const std::byte*>(x.raw());
    auto* po = static_cast<std::byte*>(out[0].raw());
    auto at = [&](int64_t b, int64_t t) { return (batchAxis_ == 0 ? b * T + t : t * B + b) * inner * es; };
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = in[1]->valueAsInt(b);
      if (len < 0 || len > T) return makeError("sequence length out of range");
      for (int64_t t = 0; t < len; ++t)
        std::memcpy(po + at(b, t), px + at(b, len - 1 - t), static_cast<size_t>(inner * es));
    }
    return Status::ok();
  }

 private:
  int64_t batchAxis_, timeAxis_;
};

/// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default 0, 2, 3), no epsilon
/// beyond the reference's 1e-9.
///
/// The axes are merged into alternating blocks of reduced and kept axes (size-1 axes dropped), so the
/// tensor is read in contiguous rows of its innermost block: a reduced innermost block gives rows that
/// belong to one group (an (n, c) plane: a vectorised sum and sum of squares), a kept one gives rows whose
/// elements belong to consecutive groups (added lane by lane). Threads take groups. Issue 24: the
/// per-element coordinate decomposition and group lookup ran 17x slower than ONNX Runtime.
class MvnKernel final : public OpKernel {
 public:
  explicit MvnKernel(const Node& n) : axes_(attrIntsOr(n, "axes", {0, 2, 3})) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    std::vector<bool> red(static_cast<size_t>(x.rank()), false);
    for (int64_t a : axes_) {
      const int64_t ax = normAxis(a, x.rank());
      if (ax < 0) return makeError("axis out of range");
      red[static_cast<size_t>(ax)] = true;
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    if (x.numElements() == 0) return Status::ok();
    // Merged blocks, outermost first: (size, reduced).
    std::vector<std::pair<int64_t, bool>> blocks;
    for (int64_t d = 0; d < x.rank(); ++d) {
      const int64_t n = x.dim(d);
      const bool r = red[static_cast<size_t>(d)];
      if (n == 1) continue;
      if (!blocks.empty() && blocks.back().second == r)
        blocks.back().first *= n;
      else
        blocks.push_back({n, r});
    }
    if (blocks.empty()) blocks.push_back({1, true});
    // Rows of the innermost block; `lanes` groups per row when it is kept, one group per row otherwise.
    const bool keptInner = !blocks.back().second;
    const int64_t row = blocks.back().first, lanes = keptInner ? row : 1;
    // Offsets (in rows) of a group bundle's rows, and of each bundle's first row: the reduced and the
    // kept outer blocks' contributions, each enumerated once.
    std::vector<int64_t> redOff{0}, keptOff{0};
    int64_t stride = 1;  // in rows
    for (size_t b = blocks.size() - 1; b-- > 0;) {
      auto& list = blocks[b].second ? redOff : keptOff;
      const size_t m = list.size();
      for (int64_t k = 1; k < blocks[b].first; ++k)
        for (size_t i = 0; i < m; ++i) list.push_back(list[i] + k * stride);
      stride *= blocks[b].first;
    }
    const int64_t bundles = static_cast<int64_t>(keptOff.size());
    const double cnt = static_cast<double>(x.numElements()) / static_cast<double>(bundles * lanes);
    const float* px = ptr<float>(x);
    float* po = ptr<float>(out[0]);
    parallelChunks(
        ctx, bundles,
        [&](int64_t b, int64_t e) {
          std::vector<double> sum(static_cast<size_t>(lanes)), sq(static_cast<size_t>(lanes));
          std::vector<float> mean(static_cast<size_t>(lanes)), inv(static_cast<size_t>(lanes));
          for (int64_t g = b; g < e; ++g) {
            const int64_t base = keptOff[static_cast<size_t>(g)] * row;
            if (keptInner) {
              std::fill(sum.begin(), sum.end(), 0.0);
              std::fill(sq.begin(), sq.end(), 0.0);
              double* ps = sum.data();
              double* pq = sq.data();
              for (int64_t r : redOff) {
                const float* q = px + base + r * row;
#pragma omp simd
                for (int64_t j = 0; j < row; ++j) {
                  const double v = q[j];
                  ps[j] += v;
                  pq[j] += v * v;
                }
              }
            } else {
              constexpr int L = 16;
              double ls[L] = {}, lq[L] = {};
              double s = 0, s2 = 0;
              for (int64_t r : redOff) {
                const float* q = px + base + r * row;
                int64_t j = 0;
                for (; j + L <= row; j += L)
#pragma omp simd
                  for (int l = 0; l < L; ++l) {
                    const double v = q[j + l];
                    ls[l] += v;
                    lq[l] += v * v;
                  }
                for (; j < row; ++j) {
                  const double v = q[j];
                  s += v;
                  s2 += v * v;
                }
              }
              for (int l = 0; l < L; ++l) {
                s += ls[l];
                s2 += lq[l];
              }
              sum[0] = s;
              sq[0] = s2;
            }
            for (int64_t l = 0; l < lanes; ++l) {
              const double m = sum[static_cast<size_t>(l)] / cnt, v = sq[static_cast<size_t>(l)] / cnt - m * m;
              mean[static_cast<size_t>(l)] = static_cast<float>(m);
              inv[static_cast<size_t>(l)] = static_cast<float>(1.0 / (std::sqrt(std::max(v, 0.0)) + 1e-9));
            }
            const float* pm = mean.data();
            const float* pi = inv.data();
            for (int64_t r : redOff) {
              const float* q = px + base + r * row;
              float* o = po + base + r * row;
              if (keptInner) {
#pragma omp simd
                for (int64_t j = 0; j < row; ++j) o[j] = (q[j] - pm[j]) * pi[j];
              } else {
                const float m = pm[0], iv = pi[0];
#pragma omp simd
                for (int64_t j = 0; j < row; ++j) o[j] = (q[j] - m) * iv;
              }
            }
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, x.numElements() / bundles)));
    return Status::ok();
  }

 private:
  std::vector<int64_t> axes_;
};

std::string lossCheck(const Graph& g, const Node& n) {
  const DType d = inDType(g, n, 0);
  if (d != DType::Float32 && d != DType::Float64) return std::string("dtype ") + dtypeName(d);
  const std::string red = n.attrString("reduction", "mean");
  if (red != "mean" && red != "sum" && red != "none") return "reduction " + red;
  return "";
}

std::string anyDType(const Graph& g, const Node& n) {
  return checkDTypes(g, n, allPlainDTypes());
}

std::string scatterCheck(const Graph& g, const Node& n) {
  const std::string red = n.attrString("reduction", "none");
  if (red != "none" && red != "add" && red != "mul") return "reduction " + red;
  return checkDTypes(g, n, allPlainDTypes());
}

}  // namespace

void addExtraOps(std::vector<OpEntry>& t) {
  t.push_back(
      {"NegativeLogLikelihoodLoss", lossCheck, [](const Graph&, const Node& n) { return mk<LossKernel>(n, false); }});
  t.push_back(
      {"SoftmaxCrossEntropyLoss", lossCheck, [](const Graph&, const Node& n) { return mk<LossKernel>(n, true); }});
  t.push_back({"Hardmax", [](const Graph& g, const Node& n) { return checkDTypes(g, n, f32Only()); },
               [](const Graph& g, const Node& n) { return mk<HardmaxKernel>(n, g.opsetVersion); }});
  t.push_back({"GatherElements", anyDType, [](const Graph&, const Node& n) { return mk<ElementsKernel>(n, false); }});
  t.push_back(
      {"ScatterElements", scatterCheck, [](const Graph&, const Node& n) { return mk<ElementsKernel>(n, true); }});
  t.push_back({"Scatter", scatterCheck, [](const Graph&, const Node& n) { return mk<ElementsKernel>(n, true); }});
  t.push_back({"GatherND",
               [](const Graph& g, const Node& n) {
                 if (n.attrInt("batch_dims", 0) != 0) return std::string("batch_dims is not supported");
                 return checkDTypes(g, n, allPlainDTypes());
               },
               [](const Graph&, const Node& n) { return mk<NdKernel>(n, false); }});
  t.push_back({"ScatterND", scatterCheck, [](const Graph&, const Node& n) { return mk<NdKernel>(n, true); }});
  t.push_back({"OneHot", anyDType, [](const Graph&, const Node& n) { return mk<OneHotKernel>(n); }});
  t.push_back({"Compress", anyDType, [](const Graph&, const Node& n) { return mk<CompressKernel>(n); }});
  t.push_back({"NonZero", anyDType, [](const Graph&, const Node&) { return mk<NonZeroKernel>(); }});
  t.push_back({"ReverseSequence", anyDType, [](const Graph&, const Node& n) { return mk<ReverseSequenceKernel>(n); }});
  t.push_back({"MeanVarianceNormalization", [](const Graph& g, const Node& n) { return checkDTypes(g, n, f32Only()); },
               [](const Graph&, const Node& n) { return mk<MvnKernel>(n); }});
  t.push_back({"EyeLike", anyDType, [](const Graph&, const Node& n) { return mk<EyeLikeKernel>(n); }});
}

}  // namespace partex::cpu
