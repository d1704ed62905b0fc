// Einsum (opset 12): every operand is first seen as a strided view with one axis per distinct label (a
// repeated label is its diagonal: one axis whose stride is the sum of the repeated axes' strides). The
// operands are then contracted left to right, two at a time, as one batched matrix product: the labels
// both share and still need (in the output or a later operand) are the batch, the shared labels nobody
// needs any more are the contraction, the rest are the rows of one and the columns of the other; each
// operand is gathered once into [batch, rows, k] / [batch, k, columns] (summing on the way the labels that
// only it has and nobody needs) and float32 products run as one oneDNN matmul. A last gather sums what is
// left and puts the labels in the output's order. Ellipses broadcast as NumPy does (right-aligned, size 1
// against size n). Rules from the ONNX specification of Einsum and numpy.einsum's documentation.

#include <algorithm>
#include <array>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/onednn_util.h"
#include "kernels/kernels.h"

namespace partex::cpu {
namespace {

constexpr int kEllipsisBase = 52;  ///< Label ids: a-z 0..25, A-Z 26..51, ellipsis axis k: 52 + k.

struct Term {
  std::vector<int> letters;  ///< In order; -1 marks where the ellipsis stands.
  bool ellipsis = false;
};

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicitOutput = false;
};

int labelId(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -2;
}

/// Parses "bij,bjk->bik" (spaces ignored); "" on success, else the reason.
std::string parseEquation(const std::string& text, Equation& eq) {
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  auto parseTerm = [](const std::string& t, Term& term) -> std::string {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "...") == 0) {
        if (term.ellipsis) return "two ellipses in one term";
        term.ellipsis = true;
        term.letters.push_back(-1);
        i += 2;
        continue;
      }
      const int id = labelId(t[i]);
      if (id < 0) return std::string("bad label '") + t[i] + "'";
      term.letters.push_back(id);
    }
    return "";
  };
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    Term term;
    if (auto e = parseTerm(lhs.substr(start, comma - start), term); !e.empty()) return e;
    eq.inputs.push_back(term);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    eq.explicitOutput = true;
    if (auto e = parseTerm(s.substr(arrow + 2), eq.output); !e.empty()) return e;
  }
  return "";
}

/// A strided view of one operand (or intermediate) with one axis per distinct label.
struct View {
  const void* data = nullptr;
  std::vector<int> labels;
  std::vector<int64_t> dims, strides;  ///< strides in elements
  int64_t dimOf(int l) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == l) return dims[i];
    return -1;
  }
  int64_t strideOf(int l) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == l) return strides[i];
    return 0;
  }
  bool has(int l) const { return std::find(labels.begin(), labels.end(), l) != labels.end(); }
};

/// dst[o] = sum over the reduced axes of src at the strided offset: dst is contiguous over `outDims`.
template <class T>
void gatherSum(const ExecContext& ctx, const T* src, const std::vector<int64_t>& outDims,
               const std::vector<int64_t>& outStrides, const std::vector<int64_t>& redDims,
               const std::vector<int64_t>& redStrides, T* dst) {
  int64_t nOut = 1, nRed = 1;
  for (int64_t d : outDims) nOut *= d;
  for (int64_t d : redDims) nRed *= d;
  parallelChunks(
      ctx, nOut,
      [&](int64_t b, int64_t e) {
        // The chunk's first index by division, then an odometer (a division per element per axis cost
        // more than the copy itself).
        std::vector<int64_t> idx(outDims.size()), ridx(redDims.size());
        int64_t off = 0;
        {
          int64_t rem = b;
          for (size_t d = outDims.size(); d-- > 0;) {
            idx[d] = rem % outDims[d];
            off += idx[d] * outStrides[d];
            rem /= outDims[d];
          }
        }
        auto advance = [&] {
          for (size_t d = outDims.size(); d-- > 0;) {
            off += outStrides[d];
            if (++idx[d] < outDims[d]) return;
            off -= outStrides[d] * outDims[d];
            idx[d] = 0;
          }
        };
        for (int64_t o = b; o < e; ++o, advance()) {
          if (redDims.empty()) {
            dst[o] = src[off];
            continue;
          }
          T acc{};
          std::fill(ridx.begin(), ridx.end(), 0);
          int64_t roff = 0;
          for (int64_t r = 0; r < nRed; ++r) {
            acc += src[off + roff];
            for (size_t d = redDims.size(); d-- > 0;) {
              roff += redStrides[d];
              if (++ridx[d] < redDims[d]) break;
              roff -= redStrides[d] * redDims[d];
              ridx[d] = 0;
            }
          }
          dst[o] = acc;
        }
      },
      256);
}

class EinsumKernel final : public OpKernel {
 public:
  explicit EinsumKernel(Equation eq) : eq_(std::move(eq)) {}

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (in.size() != eq_.inputs.size())
      return makeError("the equation has ", std::to_string(eq_.inputs.size()), " operands, the node ",
                       std::to_string(in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      if (auto e = expectInput(in, i, "operand"); !e.empty()) return Error{e};
    const DType t = in[0]->dtype();
    for (const Tensor* x : in)
      if (x->dtype() != t) return makeError("operands differ in dtype");
    Status s = makeError("dtype ", dtypeName(t), " is not supported");
    switch (t) {
      case DType::Float32:
        s = runT<float>(ctx, in, out);
        break;
      case DType::Float64:
        s = runT<double>(ctx, in, out);
        break;
      case DType::Int32:
        s = runT<int32_t>(ctx, in, out);
        break;
      case DType::Int64:
        s = runT<int64_t>(ctx, in, out);
        break;
      default:
        break;
    }
    return s;
  }

 private:
  template <class T>
  Status runT(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
    // 1. Views with one axis per distinct label; ellipsis axes right-aligned to the widest ellipsis.
    int64_t ellRank = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Term& term = eq_.inputs[i];
      const int64_t letters = static_cast<int64_t>(term.letters.size()) - (term.ellipsis ? 1 : 0);
      if (term.ellipsis ? in[i]->rank() < letters : in[i]->rank() != letters)
        return makeError("operand ", std::to_string(i), " ", in[i]->describe(), " does not match its term");
      if (term.ellipsis) ellRank = std::max(ellRank, in[i]->rank() - letters);
    }
    std::vector<View> views(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const Term& term = eq_.inputs[i];
      const auto st = contiguousStrides(in[i]->shape());
      View& v = views[i];
      v.data = in[i]->raw();
      size_t axis = 0;
      auto add = [&](int l, int64_t dim, int64_t stride) -> std::string {
        for (size_t k = 0; k < v.labels.size(); ++k)
          if (v.labels[k] == l) {
            if (v.dims[k] != dim) return "a repeated label has different sizes";
            v.strides[k] += stride;  // diagonal
            return "";
          }
        v.labels.push_back(l);
        v.dims.push_back(dim);
        v.strides.push_back(stride);
        return "";
      };
      const int64_t letters = static_cast<int64_t>(term.letters.size()) - (term.ellipsis ? 1 : 0);
      for (int l : term.letters) {
        if (l == -1) {
          const int64_t e = in[i]->rank() - letters;
          for (int64_t k = 0; k < e; ++k, ++axis)
            if (auto err = add(kEllipsisBase + static_cast<int>(ellRank - e + k),
                               in[i]->dim(static_cast<int64_t>(axis)), st[axis]);
                !err.empty())
              return Error{err};
          continue;
        }
        if (auto err = add(l, in[i]->dim(static_cast<int64_t>(axis)), st[axis]); !err.empty()) return Error{err};
        ++axis;
      }
    }
    // 2. Output labels.
    std::vector<int> outLabels;
    if (eq_.explicitOutput) {
      for (int l : eq_.output.letters) {
        if (l == -1)
          for (int64_t k = 0; k < ellRank; ++k) outLabels.push_back(kEllipsisBase + static_cast<int>(k));
        else
          outLabels.push_back(l);
      }
    } else {
      for (int64_t k = 0; k < ellRank; ++k) outLabels.push_back(kEllipsisBase + static_cast<int>(k));
      std::array<int, kEllipsisBase> count{};
      for (const Term& term : eq_.inputs)
        for (int l : term.letters)
          if (l >= 0) ++count[static_cast<size_t>(l)];
      for (int l = 0; l < kEllipsisBase; ++l)
        if (count[static_cast<size_t>(l)] == 1) outLabels.push_back(l);
    }
    // Sizes: the largest of a label's sizes (1 broadcasts).
    std::map<int, int64_t> size;
    for (const View& v : views)
      for (size_t k = 0; k < v.labels.size(); ++k) {
        int64_t& s = size[v.labels[k]];
        if (s > 1 && v.dims[k] > 1 && s != v.dims[k])
          return makeError("label sizes ", std::to_string(s), " and ", std::to_string(v.dims[k]), " do not broadcast");
        if (v.dims[k] != 1 || s == 0) s = std::max(s == 0 ? v.dims[k] : s, v.dims[k]);
      }
    for (int l : outLabels)
      if (!size.count(l)) return makeError("an output label is in no operand");
    // 3. Contract left to right.
    View cur = views[0];
    scratch_.resize(2 * views.size());
    for (size_t i = 1; i < views.size(); ++i) {
      std::vector<int> keep = outLabels;
      for (size_t j = i + 1; j < views.size(); ++j)
        keep.insert(keep.end(), views[j].labels.begin(), views[j].labels.end());
      auto kept = [&](int l) { return std::find(keep.begin(), keep.end(), l) != keep.end(); };
      const View& b = views[i];
      std::vector<int> batch, rows, cols, red;
      for (int l : cur.labels) {
        if (b.has(l))
          (kept(l) ? batch : red).push_back(l);
        else if (kept(l))
          rows.push_back(l);
      }
      for (int l : b.labels)
        if (!cur.has(l) && kept(l)) cols.push_back(l);
      // A -> [batch, rows, red], B -> [batch, red, cols]; labels only one side has and nobody needs: summed.
      // `ptr` receives the gathered operand: the view's own data when it is already contiguous in that
      // order with nothing to sum (a plain batched matmul: no copy), else `dst`.
      auto gather = [&](const View& v, const std::vector<int>& order, Tensor& dst, DType dt,
                        const void*& ptr) -> Status {
        std::vector<int64_t> od, os, rd, rs;
        for (int l : order) {
          od.push_back(size[l]);
          os.push_back(v.dimOf(l) == 1 ? 0 : v.strideOf(l));
        }
        for (size_t k = 0; k < v.labels.size(); ++k)
          if (std::find(order.begin(), order.end(), v.labels[k]) == order.end()) {
            rd.push_back(v.dims[k]);
            rs.push_back(v.strides[k]);
          }
        bool asIs = rd.empty();
        const auto cs = contiguousStrides(od);
        for (size_t k = 0; k < od.size() && asIs; ++k) asIs = od[k] == 1 || os[k] == cs[k];
        if (asIs) {
          ptr = v.data;
          return Status::ok();
        }
        if (auto s = dst.ensure(dt, od.empty() ? std::vector<int64_t>{} : od); !s) return s;
        gatherSum<T>(ctx, static_cast<const T*>(v.data), od, os, rd, rs, static_cast<T*>(dst.raw()));
        ptr = dst.raw();
        return Status::ok();
      };
      std::vector<int> aOrder = batch, bOrder = batch;
      aOrder.insert(aOrder.end(), rows.begin(), rows.end());
      aOrder.insert(aOrder.end(), red.begin(), red.end());
      bOrder.insert(bOrder.end(), red.begin(), red.end());
      bOrder.insert(bOrder.end(), cols.begin(), cols.end());
      Tensor& ta = scratch_[2 * i - 2];
      Tensor& tb = scratch_[2 * i - 1];
      const DType dt = in[0]->dtype();
      const void* pa = nullptr;
      const void* pb = nullptr;
      if (auto s = gather(cur, aOrder, ta, dt, pa); !s) return s;
      if (auto s = gather(b, bOrder, tb, dt, pb); !s) return s;
      auto prod = [&](const std::vector<int>& ls) {
        int64_t p = 1;
        for (int l : ls) p *= size[l];
        return p;
      };
      const int64_t B = prod(batch), M = prod(rows), K = prod(red), N = prod(cols);
      // The last product straight into the output when its labels are already in the output's order.
      std::vector<int> prodLabels = batch;
      prodLabels.insert(prodLabels.end(), rows.begin(), rows.end());
      prodLabels.insert(prodLabels.end(), cols.begin(), cols.end());
      out.resize(1);
      const bool direct = i + 1 == views.size() && prodLabels == outLabels;
      Tensor& tc = direct ? out[0] : products_.emplace_back();
      std::vector<int64_t> cdims;
      for (int l : batch) cdims.push_back(size[l]);
      for (int l : rows) cdims.push_back(size[l]);
      for (int l : cols) cdims.push_back(size[l]);
      if (auto s = tc.ensure(dt, cdims); !s) return s;
      if (auto s = matmul<T>(ctx, pa, pb, tc, B, M, K, N); !s) return s;
      cur = View{};
      cur.data = tc.raw();
      cur.labels = batch;
      cur.labels.insert(cur.labels.end(), rows.begin(), rows.end());
      cur.labels.insert(cur.labels.end(), cols.begin(), cols.end());
      cur.dims = cdims;
      cur.strides = contiguousStrides(cdims);
    }
    // 4. The output: sum what is left, labels in the output's order.
    out.resize(1);
    if (views.size() > 1 && cur.data == out[0].raw()) {  // the last product wrote it
      products_.clear();
      return Status::ok();
    }
    std::vector<int64_t> od, os, rd, rs;
    for (int l : outLabels) {
      if (!cur.has(l)) return makeError("an output label was contracted away");
      od.push_back(size[l]);
      os.push_back(cur.dimOf(l) == 1 ? 0 : cur.strideOf(l));
    }
    for (size_t k = 0; k < cur.labels.size(); ++k)
      if (std::find(outLabels.begin(), outLabels.end(), cur.labels[k]) == outLabels.end()) {
        rd.push_back(cur.dims[k]);
        rs.push_back(cur.strides[k]);
      }
    if (auto s = out[0].ensure(in[0]->dtype(), od); !s) return s;
    gatherSum<T>(ctx, static_cast<const T*>(cur.data), od, os, rd, rs, static_cast<T*>(out[0].raw()));
    products_.clear();
    return Status::ok();
  }

  /// c[b] = a[b] (M x K) * b[b] (K x N), row-major: oneDNN for float32, a plain loop otherwise.
  template <class T>
  Status matmul(const ExecContext& ctx, const void* a, const void* b, Tensor& c, int64_t B, int64_t M, int64_t K,
                int64_t N) {
    if (B * M * N == 0) return Status::ok();
    if constexpr (std::is_same_v<T, float>) {
      if (K == 0) {
        c.fill(0.0);
        return Status::ok();
      }
      const std::vector<int64_t> key{B, M, K, N};
      if (key != key_) {
        ad_ = memory::desc({B, M, K}, dt::f32, tag::abc);
        bd_ = memory::desc({B, K, N}, dt::f32, tag::abc);
        cd_ = memory::desc({B, M, N}, dt::f32, tag::abc);
        pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad_, bd_, cd_), scratchAttr(), engine());
        prim_ = dnnl::matmul(pd_);
        key_ = key;
      }
      dnnl::stream s(engine());
      prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, scratchpadFor(pd_)},
                        {DNNL_ARG_SRC, memory(ad_, engine(), const_cast<void*>(a))},
                        {DNNL_ARG_WEIGHTS, memory(bd_, engine(), const_cast<void*>(b))},
                        {DNNL_ARG_DST, memory(cd_, engine(), c.raw())}});
      s.wait();
    } else {
      const T* pa = static_cast<const T*>(a);
      const T* pb = static_cast<const T*>(b);
      T* pc = static_cast<T*>(c.raw());
      parallelChunks(
          ctx, B * M,
          [&](int64_t lo, int64_t hi) {
            for (int64_t r = lo; r < hi; ++r) {
              const int64_t bi = r / M;
              T* crow = pc + r * N;
              std::fill(crow, crow + N, T{});
              const T* arow = pa + r * K;
              const T* bmat = pb + bi * K * N;
              for (int64_t k = 0; k < K; ++k) {
                const T av = arow[k];
                const T* brow = bmat + k * N;
                for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
              }
            }
          },
          16);
    }
    return Status::ok();
  }

  Equation eq_;
  std::vector<Tensor> scratch_;
  std::vector<Tensor> products_;
  std::vector<int64_t> key_;
  memory::desc ad_, bd_, cd_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
};

}  // namespace

void addEinsumOps(std::vector<OpEntry>& t) {
  t.push_back({"Einsum",
               [](const Graph& g, const Node& n) -> std::string {
                 Equation eq;
                 if (auto e = parseEquation(n.attrString("equation", ""), eq); !e.empty()) return "equation: " + e;
                 if (eq.inputs.size() != n.inputs.size()) return "the equation's operand count differs from the inputs";
                 return checkDTypes(g, n, {DType::Float32, DType::Float64, DType::Int32, DType::Int64});
               },
               [](const Graph&, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 Equation eq;
                 if (auto e = parseEquation(n.attrString("equation", ""), eq); !e.empty())
                   return makeError("equation: ", e);
                 return std::unique_ptr<OpKernel>(std::make_unique<EinsumKernel>(std::move(eq)));
               }});
}

}  // namespace partex::cpu
