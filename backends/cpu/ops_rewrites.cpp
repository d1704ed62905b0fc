// The kernels of the graph-level rewrites (ir/rewrites.h; the matchers state each rewrite's pattern and
// why it is exact). Each reuses the backend's own kernel of the operator the pattern is (pooling with the
// summed pads, Gelu's eltwise, LayerNormalization) through a node made for it, or is written here with
// oneDNN directly (a MatMul reading transposed operands through their strides). Pad into Conv is a Conv
// chain with more padding: ops_fused.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#include "cpu/onednn_util.h"
#include "cpu/rewrite_kernels.h"

namespace partex::cpu {

namespace {

class DropInputsKernel final : public OpKernel {
 public:
  DropInputsKernel(std::unique_ptr<OpKernel> inner, size_t first, size_t count)
      : inner_(std::move(inner)), first_(first), count_(count) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    inner_->nhwcOut = nhwcOut;
    return inner_->run(ctx, kept(in), out);
  }
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    inner_->nhwcOut = nhwcOut;
    return inner_->takesNhwc(kept(in));
  }
  bool keepsCopy(size_t i) const override {
    if (i < first_) return inner_->keepsCopy(i);
    return i >= first_ + count_ && inner_->keepsCopy(i - count_);
  }
  void releaseCaches() override { inner_->releaseCaches(); }

 private:
  std::vector<const Tensor*> kept(const std::vector<const Tensor*>& in) const {
    std::vector<const Tensor*> r;
    for (size_t i = 0; i < in.size(); ++i)
      if (i < first_ || i >= first_ + count_) r.push_back(in[i]);
    return r;
  }
  std::unique_ptr<OpKernel> inner_;
  size_t first_, count_;
};

/// The backend's kernel for a node made here (the table's first entry of its type).
Result<std::unique_ptr<OpKernel>> tableKernel(const Graph& g, const Node& n) {
  for (const OpEntry& e : opTable())
    if (e.opType == n.opType) return e.make(g, n);
  return makeError("no kernel for ", n.opType);
}

// ---------------------------------------------------------------------------------------------------------
// Transposes that cancel: the input as it is.

class CopyKernel final : public OpKernel {
 public:
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    out.resize(1);
    if (auto st = out[0].ensure(in[0]->dtype(), in[0]->shape()); !st) return st;
    if (in[0]->bytes() > 0) std::memcpy(out[0].raw(), in[0]->raw(), static_cast<size_t>(in[0]->bytes()));
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------------------------
// MatMul of operands some of which are read through a Transpose (their storage's strides permuted).

class TransposedMatMulKernel final : public OpKernel {
 public:
  /// perm[k]: operand k's Transpose permutation; empty: the operand is read as it is.
  TransposedMatMulKernel(std::vector<int64_t> permA, std::vector<int64_t> permB)
      : perm_{std::move(permA), std::move(permB)} {}

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "A"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "B"); !e.empty()) return Error{e};
    const Tensor* src[2] = {in[0], in[1]};
    for (const Tensor* t : src)
      if (t->dtype() != DType::Float32 || t->rank() < 2) return makeError("float32 operands of rank >= 2 expected");
    const size_t r = static_cast<size_t>(std::max(src[0]->rank(), src[1]->rank()));
    std::vector<int64_t> key = src[0]->shape();
    key.push_back(-1);
    key.insert(key.end(), src[1]->shape().begin(), src[1]->shape().end());
    if (key != key_ || !prim_) {
      // Each operand's logical dims and the strides of its storage read through the transpose: logical
      // axis i is the source's axis perm[i]; missing leading axes are 1.
      memory::dims dims[2], strides[2];
      for (int k = 0; k < 2; ++k) {
        const std::vector<int64_t>& s = src[k]->shape();
        const size_t n = s.size();
        std::vector<int64_t> st(n, 1);
        for (size_t i = n - 1; i-- > 0;) st[i] = st[i + 1] * s[i + 1];
        const std::vector<int64_t>& p = perm_[k];
        if (!p.empty() && p.size() != n)
          return makeError("operand ", src[k]->describe(), " does not match its permutation");
        std::vector<int64_t> ld(r, 1), ls(r, n ? st[0] * s[0] : 1);
        for (size_t i = 0; i < n; ++i) {
          const size_t from = p.empty() ? i : static_cast<size_t>(p[i]);
          if (from >= n) return makeError("bad permutation");
          ld[r - n + i] = s[from];
          ls[r - n + i] = st[from];
        }
        dims[k] = toDims(ld);
        strides[k] = toDims(ls);
      }
      const int64_t M = dims[0][r - 2], K = dims[0][r - 1], N = dims[1][r - 1];
      if (dims[1][r - 2] != K)
        return makeError("inner dims differ: ", src[0]->describe(), " x ", src[1]->describe(), " (read transposed)");
      outShape_.assign(r, 1);
      bool bOnes = true, equal = true;
      for (size_t i = 0; i + 2 < r; ++i) {
        equal = equal && dims[0][i] == dims[1][i];
        bOnes = bOnes && dims[1][i] == 1;
        outShape_[i] = dims[0][i];
      }
      if (!equal && !bOnes) return makeError("batch dims of ", src[0]->describe(), " and ", src[1]->describe());
      outShape_[r - 2] = M;
      outShape_[r - 1] = N;
      // The output keeps MatMul's rank: the larger operand rank.
      ad_ = memory::desc(dims[0], dt::f32, strides[0]);
      bd_ = memory::desc(dims[1], dt::f32, strides[1]);
      cd_ = plainDesc(outShape_);
      pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad_, bd_, cd_), scratchAttr(), engine());
      // oneDNN's reference matmul is what an unusual stride pattern gets: then transpose into scratch.
      copy_ = std::string(pd_.impl_info_str()).rfind("ref", 0) == 0;
      if (copy_) {
        for (int k = 0; k < 2; ++k) plainDims_[k] = dims[k];
        pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(memory::desc(dims[0], dt::f32, plainTag(r)),
                                                              memory::desc(dims[1], dt::f32, plainTag(r)), cd_),
                                           scratchAttr(), engine());
      }
      prim_ = dnnl::matmul(pd_);
      key_ = key;
    }
    out.resize(1);
    if (auto st = out[0].ensure(DType::Float32, outShape_); !st) return st;
    dnnl::stream s(engine());
    memory am, bm;
    if (copy_) {
      for (int k = 0; k < 2; ++k) {
        memory::desc plain(plainDims_[k], dt::f32, plainTag(r));
        memory user(k == 0 ? ad_ : bd_, engine(), const_cast<void*>(src[k]->raw()));
        memory dst = threadScratch(k, plain);
        dnnl::reorder(user, dst).execute(s, user, dst);
        (k == 0 ? am : bm) = dst;
      }
    } else {
      am = memory(ad_, engine(), const_cast<void*>(src[0]->raw()));
      bm = memory(bd_, engine(), const_cast<void*>(src[1]->raw()));
    }
    (void)ctx;
    prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, scratchpadFor(pd_)},
                      {DNNL_ARG_SRC, am},
                      {DNNL_ARG_WEIGHTS, bm},
                      {DNNL_ARG_DST, memory(cd_, engine(), out[0].raw())}});
    s.wait();
    return Status::ok();
  }

 private:
  std::vector<int64_t> perm_[2];
  std::vector<int64_t> key_, outShape_;
  memory::desc ad_, bd_, cd_;
  memory::dims plainDims_[2];
  bool copy_ = false;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
};

// ---------------------------------------------------------------------------------------------------------
// LayerNorm written out: LayerNormalization(axis -1) on x with gamma and beta seen as [D] (ones and
// zeros where the pattern has none); its mean and inverse deviation outputs stay inside the kernel.

class LayerNormPatternKernel final : public OpKernel {
 public:
  explicit LayerNormPatternKernel(std::unique_ptr<OpKernel> inner) : inner_(std::move(inner)) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32 || x.rank() < 1) return makeError("float32 input expected: ", x.describe());
    const int64_t D = x.dim(-1);
    auto asRow = [&](const Tensor* t, Tensor& view, float def) -> Status {
      if (!t || t->empty()) {
        if (view.dtype() == DType::Float32 && view.shape() == std::vector<int64_t>{D} && !view.borrowed())
          return Status::ok();
        if (auto st = view.ensure(DType::Float32, {D}); !st) return st;
        view.fill(def);
        return Status::ok();
      }
      if (t->dtype() != DType::Float32 || t->numElements() != D)
        return makeError("LayerNorm parameter ", t->describe(), " is not ", std::to_string(D), " float32 values");
      return view.borrow(DType::Float32, {D}, const_cast<void*>(t->raw()), t->bytes());
    };
    if (auto st = asRow(in.size() > 1 ? in[1] : nullptr, scale_, 1.0f); !st) return st;
    if (auto st = asRow(in.size() > 2 ? in[2] : nullptr, shift_, 0.0f); !st) return st;
    out.resize(1);
    outs_.resize(3);
    outs_[0] = std::move(out[0]);
    Status st = inner_->run(ctx, {&x, &scale_, &shift_}, outs_);
    out[0] = std::move(outs_[0]);
    return st;
  }

 private:
  std::unique_ptr<OpKernel> inner_;
  Tensor scale_, shift_;
  std::vector<Tensor> outs_;
};

}  // namespace

std::unique_ptr<OpKernel> dropInputs(std::unique_ptr<OpKernel> inner, size_t first, size_t count) {
  return std::make_unique<DropInputsKernel>(std::move(inner), first, count);
}

Result<std::unique_ptr<OpKernel>> makeRewriteKernel(const Graph& g, const std::vector<OpId>& ops, Rewrite r) {
  auto nodeAt = [&](size_t i) -> const Node& { return g.nodes[static_cast<size_t>(ops[i])]; };
  switch (r) {
    case Rewrite::PadIntoPool: {
      const auto f = padFoldOf(g, ops[0]);
      if (!f) return makeError("'", nodeAt(0).name, "' no longer folds");
      Node pool = nodeAt(1);
      pool.attrs["pads"].value = f->pads;
      // The Pad's zeros were elements of every window: the folded pool counts its padding.
      if (pool.opType == "AveragePool") pool.attrs["count_include_pad"].value = int64_t{1};
      auto k = tableKernel(g, pool);
      if (!k) return k;
      return dropInputs(std::move(*k), 1, nodeAt(0).inputs.size() - 1);
    }
    case Rewrite::TransposePair:
      return std::unique_ptr<OpKernel>(std::make_unique<CopyKernel>());
    case Rewrite::TransposeMatMul: {
      const TransposeMatMul t = transposeMatMulOf(g, ops.back());
      return std::unique_ptr<OpKernel>(
          std::make_unique<TransposedMatMulKernel>(transposePerm(g, t.a), transposePerm(g, t.b)));
    }
    case Rewrite::Gelu: {
      bool tanh = false;
      if (geluOf(g, nodeAt(0).inputs.empty() ? kNone : nodeAt(0).inputs[0], &tanh).empty() &&
          (nodeAt(0).inputs.size() < 2 || geluOf(g, nodeAt(0).inputs[1], &tanh).empty()))
        return makeError("'", nodeAt(0).name, "' starts no Gelu");
      Node n;
      n.name = nodeAt(ops.size() - 1).name;
      n.opType = "Gelu";
      n.attrs["approximate"].value = std::string(tanh ? "tanh" : "none");
      return tableKernel(g, n);
    }
    case Rewrite::LayerNorm: {
      Node n;
      n.name = nodeAt(ops.size() - 1).name;
      n.opType = "LayerNormalization";
      n.attrs["axis"].value = int64_t{-1};
      for (ValueId x : nodeAt(0).inputs)
        if (auto ln = layerNormOf(g, x); ln && ln->ops == ops) n.attrs["epsilon"].value = static_cast<double>(ln->eps);
      if (!n.hasAttr("epsilon")) return makeError("'", nodeAt(0).name, "' starts no LayerNorm");
      auto k = tableKernel(g, n);
      if (!k) return k;
      return std::unique_ptr<OpKernel>(std::make_unique<LayerNormPatternKernel>(std::move(*k)));
    }
    default:
      return makeError("no rewrite kernel for this group");
  }
}

}  // namespace partex::cpu
