// oneDNN kernels: Conv, ConvTranspose, MatMul, Gemm, pooling, BatchNormalization, LRN, Softmax/LogSoftmax,
// LayerNormalization and the element-wise activations oneDNN has. Primitives are created on the first run
// (under the device's thread settings, as oneDNN's OpenMP runtime requires) and re-created only when the
// input shapes change. Weights reordered into oneDNN's blocked layout are cached while the same weight
// storage (and contents sample) is passed.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "cpu/matmul.h"
#include "cpu/onednn_util.h"
#include "kernels/vecmath.h"

namespace partex::cpu {

/// c[m, n] (+)= alpha * sum_k a[m, k] * B(k, n) for rows m < M and columns n in [n0, n1): B plain
/// row-major, [K, N] or, with transB, [N, K] (a Linear layer's weight as PyTorch exports it). Each
/// element of B is read from memory once whatever M (< kPackMinRows) is: the rows of A are taken in the
/// innermost loop over a block of B that stays in cache. Issue 24: oneDNN 2.6's brgemm matmul copies a
/// transposed B into its blocked layout on every run, which at one row of A is the whole product's
/// traffic again plus a transposition (openWakeWord's [1,1536] x [1536,128]^T Gemm).
[[gnu::target_clones("avx512f", "avx2", "default")]] void gemvRows(const float* a, int64_t lda, const float* b,
                                                                     float* c, int64_t ldc, int64_t M, int64_t K,
                                                                     int64_t N, int64_t n0, int64_t n1, bool transB,
                                                                     float alpha, bool accumulate) {
  auto put = [&](int64_t m, int64_t n, float v) {
    float& y = c[m * ldc + n];
    y = accumulate ? y + alpha * v : alpha * v;
  };
  if (transB) {
    // Four rows of B at a time, each a dot product with every row of A.
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
      const float *b0 = b + n * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
      for (int64_t m = 0; m < M; ++m) {
        const float* x = a + m * lda;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (int64_t k = 0; k < K; ++k) {
          s0 += x[k] * b0[k];
          s1 += x[k] * b1[k];
          s2 += x[k] * b2[k];
          s3 += x[k] * b3[k];
        }
        put(m, n, s0);
        put(m, n + 1, s1);
        put(m, n + 2, s2);
        put(m, n + 3, s3);
      }
    }
    for (; n < n1; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const float* x = a + m * lda;
        const float* bn = b + n * K;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t k = 0; k < K; ++k) s += x[k] * bn[k];
        put(m, n, s);
      }
    return;
  }
  // Column blocks of 64: per row of A, the block's sums over k, row k of B scaled by a[m, k].
  constexpr int64_t kBlock = 64;
  for (int64_t nb = n0; nb < n1; nb += kBlock) {
    const int64_t w = std::min(kBlock, n1 - nb);
    for (int64_t m = 0; m < M; ++m) {
      const float* x = a + m * lda;
      alignas(64) float acc[kBlock] = {};
      if (w == kBlock) {
        for (int64_t k = 0; k < K; ++k) {
          const float xk = x[k];
          const float* row = b + k * N + nb;
#pragma omp simd
          for (int64_t j = 0; j < kBlock; ++j) acc[j] += xk * row[j];
        }
      } else {
        for (int64_t k = 0; k < K; ++k) {
          const float xk = x[k];
          const float* row = b + k * N + nb;
#pragma omp simd
          for (int64_t j = 0; j < w; ++j) acc[j] += xk * row[j];
        }
      }
      for (int64_t j = 0; j < w; ++j) put(m, nb + j, acc[j]);
    }
  }
}

namespace {

// ---------------------------------------------------------------------------------------------------------
// Conv

std::string checkConv(const Graph& g, const Node& n) {
  if (auto e = checkDTypes(g, n, f32Only()); !e.empty()) return e;
  const int64_t r = inRank(g, n, 0);
  if (r != -1 && (r < 3 || r > 5)) return "rank " + std::to_string(r) + " input (1-3 spatial dims supported)";
  return spatialAttrsCheck(n, r > 2 ? static_cast<size_t>(r - 2) : 0);
}

// ---------------------------------------------------------------------------------------------------------
// ConvTranspose

class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const Node& n) : node_(n) {}
  bool takesNhwc(const std::vector<const Tensor*>&) const override { return true; }
  void releaseCaches() override {
    wm_ = memory();
    wt_ = {};
  }
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "W"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& w = *in[1];
    const Tensor* b = in.size() > 2 && in[2] && !in[2]->empty() ? in[2] : nullptr;
    if (x.dtype() != DType::Float32 || w.dtype() != DType::Float32 || (b && b->dtype() != DType::Float32))
      return makeError("float32 only");
    const int64_t r = x.rank();
    if (r < 3 || r > 5 || w.rank() != r) return makeError("X ", x.describe(), " and W ", w.describe());
    const int64_t group = node_.attrInt("group", 1);
    const int64_t C = x.dim(1);
    if (group <= 0 || C != w.dim(0) || C % group != 0) return makeError("channels do not match W ", w.describe());
    const int64_t M = w.dim(1) * group;
    if (b && (b->rank() != 1 || b->dim(0) != M)) return makeError("bias ", b->describe());
    std::vector<int64_t> key = x.shape();
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.push_back(b ? 1 : 0);
    key.push_back(x.nhwc() ? 1 : 0);
    if (key != key_ || (!prim_ && !patch_)) {
      const size_t s = static_cast<size_t>(r - 2);
      auto strides = attrIntsOr(node_, "strides", std::vector<int64_t>(s, 1));
      auto dil = attrIntsOr(node_, "dilations", std::vector<int64_t>(s, 1));
      auto pads = attrIntsOr(node_, "pads", std::vector<int64_t>(2 * s, 0));
      auto outPad = attrIntsOr(node_, "output_padding", std::vector<int64_t>(s, 0));
      auto outShapeAttr = attrIntsOr(node_, "output_shape", {});
      const std::string autoPad = node_.attrString("auto_pad", "NOTSET");
      if (strides.size() != s || dil.size() != s || pads.size() != 2 * s || outPad.size() != s)
        return makeError("window attributes do not match the rank");
      if (!outShapeAttr.empty() && outShapeAttr.size() != s && outShapeAttr.size() != s + 2)
        return makeError("output_shape has the wrong length");
      if (outShapeAttr.size() == s + 2) outShapeAttr.erase(outShapeAttr.begin(), outShapeAttr.begin() + 2);
      memory::dims st, dl, pl, pr;
      outShape_ = {x.dim(0), M};
      // Non-overlapping patches (stride = kernel, no padding or dilation) with few output channels:
      // every input pixel writes its own k x k patch of each output channel, a small dot product per
      // output element (patchRun()). oneDNN's blocked layout pads such an output to 16 channels.
      patch_ = r == 4 && group == 1 && M < 16;
      for (size_t i = 0; i < s; ++i) {
        const int64_t in = x.dim(static_cast<int64_t>(i) + 2), k = w.dim(static_cast<int64_t>(i) + 2);
        const int64_t ext = (k - 1) * dil[i] + 1;
        const int64_t full = strides[i] * (in - 1) + outPad[i] + ext;
        int64_t pb = pads[i], pe = pads[i + s], o;
        if (!outShapeAttr.empty() || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
          o = !outShapeAttr.empty() ? outShapeAttr[i] : in * strides[i];
          // ONNX's split of the total padding; a negative total (output_shape beyond the full output)
          // extends the end, as the reference's floor division does.
          const int64_t total = full - o;
          const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
          if (autoPad == "SAME_UPPER") {
            pb = half;
            pe = total - pb;
          } else {
            pe = half;
            pb = total - pe;
          }
          if (pb < 0) return makeError("negative begin padding");
        } else if (autoPad == "VALID") {
          pb = pe = 0;
          o = full;
        } else {
          o = full - pb - pe;
        }
        if (o <= 0) return makeError("empty output");
        const int64_t kk = w.dim(static_cast<int64_t>(i) + 2);
        patch_ = patch_ && strides[i] == kk && dil[i] == 1 && pb == 0 && o == in * strides[i];
        st.push_back(strides[i]);
        dl.push_back(dil[i] - 1);
        pl.push_back(pb);
        pr.push_back(pe - outPad[i]);
        outShape_.push_back(o);
      }
      if (patch_) {  // patchRun(): no primitive
        key_ = key;
        wt_.clear();
        prim_ = dnnl::deconvolution_forward();
      } else {
        // ONNX W is [C, M/group, k...]: as oneDNN's (g)oi(k) dims it is a strided view.
        int64_t K = 1;
        for (int64_t i = 2; i < r; ++i) K *= w.dim(i);
        const int64_t OCg = M / group, ICg = C / group;
        memory::dims wd, ws;
        if (group > 1) {
          wd = {group, OCg, ICg};
          ws = {ICg * OCg * K, K, OCg * K};
        } else {
          wd = {M, C};
          ws = {K, OCg * K};
        }
        const auto ks = contiguousStrides(std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()));
        for (int64_t i = 2; i < r; ++i) {
          wd.push_back(w.dim(i));
          ws.push_back(ks[static_cast<size_t>(i - 2)]);
        }
        userW_ = memory::desc(wd, dt::f32, ws);
        auto anyW = memory::desc(wd, dt::f32, tag::any);
        auto bd = memory::desc({M}, dt::f32, tag::a);
        auto make = [&](const memory::desc& xd, const memory::desc& yd) {
          auto d = b ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                         dnnl::algorithm::deconvolution_direct, xd, anyW, bd, yd, st,
                                                         dl, pl, pr)
                     : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                         dnnl::algorithm::deconvolution_direct, xd, anyW, yd, st, dl,
                                                         pl, pr);
          return dnnl::deconvolution_forward::primitive_desc(d, scratchAttr(), engine());
        };
        // Source and destination in the layouts the neighbours use (channels-last where allowed): no
        // reorders and no staged copies. Where oneDNN has only its reference implementation for those,
        // its own choice of layouts (blocked) instead.
        pd_ = make(descOf(x), nhwcOut && outShape_.size() == 4 ? nhwcDesc(outShape_) : plainDesc(outShape_));
        if (std::string(pd_.impl_info_str()).rfind("ref", 0) == 0)
          pd_ = make(memory::desc(toDims(x.shape()), dt::f32, tag::any),
                     memory::desc(toDims(outShape_), dt::f32, tag::any));
        prim_ = dnnl::deconvolution_forward(pd_);
        key_ = key;
      }
    }
    out.resize(1);
    if (patch_) return patchRun(ctx, x, w, b, out[0]);
    // The output stays channels-last when the primitive writes that layout and every consumer reads it.
    const bool blkOut = nhwcOut && outShape_.size() == 4 && pd_.dst_desc() == nhwcDesc(outShape_);
    if (auto s = blkOut ? out[0].ensureNhwc(outShape_) : out[0].ensure(DType::Float32, outShape_); !s) return s;
    dnnl::stream s(engine());
    memory xm = toLayout(s, userMem(descOf(x), x), pd_.src_desc(), srcReorder_);
    // Weights reordered once, again only when their storage or contents change.
    if (!wm_ || wPtr_ != w.raw() || wHash_ != sampleHash(w) || wm_.get_desc() != pd_.weights_desc()) {
      wm_ = memory(pd_.weights_desc(), engine());
      memory wu = userMem(userW_, w);
      dnnl::reorder(wu, wm_).execute(s, wu, wm_);
      wPtr_ = w.raw();
      wHash_ = sampleHash(w);
    }
    memory wm = wm_;
    memory ym = userMem(descOf(out[0]), out[0]);
    memory yp = pd_.dst_desc() == ym.get_desc() ? ym : threadScratch(1, pd_.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, yp}};
    if (b) args[DNNL_ARG_BIAS] = userMem(memory::desc({b->dim(0)}, dt::f32, tag::a), *b);
    args[DNNL_ARG_SCRATCHPAD] = scratchpadFor(pd_);
    prim_.execute(s, args);
    if (yp != ym) dstReorder_.run(s, yp, ym);
    s.wait();
    return Status::ok();
  }

 private:
  /// The non-overlapping case (patch_): y[n, m, iy*kh + ky, ix*kw + kx] = b[m] + sum_c x[n, c, iy, ix] *
  /// W[c, m, ky, kx], from channels-last or plain input into the output's layout.
  Status patchRun(const ExecContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) {
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int64_t M = outShape_[1], kh = w.dim(2), kw = w.dim(3), OH = outShape_[2], OW = outShape_[3];
    const int64_t J = M * kh * kw;
    if (wt_.empty() || wPtr_ != w.raw() || wHash_ != sampleHash(w)) {  // W as [j = (m, ky, kx)][c]
      wt_.assign(static_cast<size_t>(J * C), 0.0f);
      const float* pw = ptr<float>(w);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < J; ++j) wt_[static_cast<size_t>(j * C + c)] = pw[c * J + j];
      wPtr_ = w.raw();
      wHash_ = sampleHash(w);
    }
    const bool nhwcOutput = nhwcOut && outShape_.size() == 4;
    if (auto st = nhwcOutput ? y.ensureNhwc(outShape_) : y.ensure(DType::Float32, outShape_); !st) return st;
    const float* px = ptr<float>(x);
    const float* pb = b ? ptr<float>(*b) : nullptr;
    float* py = ptr<float>(y);
    const float* wt = wt_.data();
    const bool nhwcIn = x.nhwc();
    parallelChunks(
        ctx, N * H,
        [&](int64_t r0, int64_t r1) {
          std::vector<float> row(nhwcIn ? 0 : static_cast<size_t>(W * C));
          for (int64_t rr = r0; rr < r1; ++rr) {
            const int64_t n = rr / H, iy = rr % H;
            const float* xr = px + (n * H + iy) * W * C;  // channels-last: [ix][c]
            if (!nhwcIn) {                                // plain: gather the row as [ix][c]
              for (int64_t c = 0; c < C; ++c) {
                const float* src = px + ((n * C + c) * H + iy) * W;
                for (int64_t ix = 0; ix < W; ++ix) row[static_cast<size_t>(ix * C + c)] = src[ix];
              }
              xr = row.data();
            }
            for (int64_t ix = 0; ix < W; ++ix) {
              const float* xp = xr + ix * C;
              for (int64_t j = 0; j < J; ++j) {
                const float* wp = wt + j * C;
                float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
                for (int64_t c = 0; c < C; ++c) acc += xp[c] * wp[c];
                const int64_t m = j / (kh * kw), ky = (j / kw) % kh, kx = j % kw;
                const int64_t oy = iy * kh + ky, ox = ix * kw + kx;
                const float v = acc + (pb ? pb[m] : 0.0f);
                if (nhwcOutput)
                  py[((n * OH + oy) * OW + ox) * M + m] = v;
                else
                  py[((n * M + m) * OH + oy) * OW + ox] = v;
              }
            }
          }
        },
        1);
    return Status::ok();
  }

  Node node_;
  bool patch_ = false;
  std::vector<float> wt_;
  std::vector<int64_t> key_, outShape_;
  memory::desc userW_;
  Reorder srcReorder_, dstReorder_;
  dnnl::deconvolution_forward::primitive_desc pd_;
  dnnl::deconvolution_forward prim_;
  memory wm_;
  const void* wPtr_ = nullptr;
  uint64_t wHash_ = 0;
};

std::string checkConvTranspose(const Graph& g, const Node& n) {
  if (auto e = checkDTypes(g, n, f32Only()); !e.empty()) return e;
  const int64_t r = inRank(g, n, 0);
  if (r != -1 && (r < 3 || r > 5)) return "rank " + std::to_string(r) + " input";
  return spatialAttrsCheck(n, r > 2 ? static_cast<size_t>(r - 2) : 0);
}

// ---------------------------------------------------------------------------------------------------------
// MatMul and Gemm (oneDNN matmul)

/// Runs C = alpha * op(A) * op(B) [+ C's prior contents when accumulate] for row-major batched operands
/// whose batch dims are already broadcast-compatible with equal rank.
///
/// Every shape goes through an optimised oneDNN implementation, never its reference one (issue 24:
/// oneDNN 2.6 takes `ref:any`, a scalar loop at ~30 MFLOP/s, when a broadcast batch dim is given stride 0,
/// the way numpy writes broadcasting). Three paths, in order:
///  - folded: B has no batch (all its batch dims are 1) and A is not transposed: A's leading dims fold
///    into M, one 2-D product [batch*M, K] x [K, N] (a Linear layer on [B, S, D] activations);
///  - batched: one oneDNN matmul with the batch dims as they are, broadcast dims given size 1 and their
///    plain strides (oneDNN broadcasts a size-1 batch dim itself, docs "Matrix Multiplication",
///    "Broadcast and Batch");
///  - loop: when oneDNN would still pick `ref` for the batched form, one 2-D primitive run once per
///    output batch, at each operand's (broadcast) batch offset.

class MatMulPrim {
  static std::string joinDims(const std::vector<int64_t>& d) {
    std::string s;
    for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s;
  }

 public:
  Status run(const Tensor& a, const Tensor& b, Tensor& c, const std::vector<int64_t>& aShape,
             const std::vector<int64_t>& bShape, const std::vector<int64_t>& cShape, bool transA, bool transB,
             float alpha, bool accumulate) {
    try {
      // An empty B was a weight the caller gave up once this primitive held it packed (keepsCopy).
      prepare(aShape, bShape, cShape, transA, transB, alpha, accumulate, b.isAlias() || b.empty());
    } catch (const dnnl::error& e) {
      prim_ = {};
      return makeError("oneDNN matmul for [", joinDims(aShape), "] x [", joinDims(bShape), "]: ", e.what());
    }
    if (gemv_) {
      // One to three rows of A against a plain B (kPackMinRows): a matrix-vector product per row.
      if (b.empty()) return makeError("matmul: B was given up but no packed copy of it is held");
      const int64_t r = static_cast<int64_t>(aShape.size());
      const int64_t M = rows_, K = aShape[static_cast<size_t>(r - 1)], N = cShape.back();
      const auto* ap = static_cast<const float*>(a.raw());
      const auto* bp = static_cast<const float*>(b.raw());
      auto* cp = static_cast<float*>(c.raw());
      // Columns split over the device's OpenMP team (set around the call, as oneDNN reads it too), in
      // multiples of 16 and at least 64 K-long dot products per thread.
      const int threads = omp_get_max_threads();
      const int64_t perThread = std::max<int64_t>(16, (int64_t{1} << 16) / std::max<int64_t>(1, K * M));
      parallelChunks(ExecContext{threads}, (N + 15) / 16, [&](int64_t b0, int64_t e0) {
        gemvRows(ap, K, bp, cp, N, M, K, N, b0 * 16, std::min(N, e0 * 16), transB, alpha, accumulate);
      }, std::max<int64_t>(1, perThread / 16));
      return Status::ok();
    }
    dnnl::stream s(engine());
    memory pad = scratchpadFor(pd_);
    if (b.empty() && !(packed_ && wMem_ && !loop_))
      return makeError("oneDNN matmul: B was given up but no packed copy of it is held");
    if (!loop_) {
      if (packed_) {
        // B in oneDNN's blocked layout, reordered once per weight storage (and contents sample); an
        // empty B was given up by the caller (keepsCopy) and the packed copy stands for it.
        const uint64_t h = b.empty() ? wHash_ : sampleHash(b);
        if (!b.empty() && (!wMem_ || b.raw() != wPtr_ || h != wHash_)) {
          memory w = userMem(bd_, b);
          wMem_ = memory(packedPd_.weights_desc(), engine());
          dnnl::reorder(w, wMem_).execute(s, w, wMem_);
          wPtr_ = b.raw();
          wHash_ = h;
        }
        packedPrim_.execute(s, {{DNNL_ARG_SCRATCHPAD, scratchpadFor(packedPd_)},
                                {DNNL_ARG_SRC, userMem(ad_, a)},
                                {DNNL_ARG_WEIGHTS, wMem_},
                                {DNNL_ARG_DST, memory(cd_, engine(), c.raw())}});
        s.wait();
        return Status::ok();
      }
      prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, pad},
                        {DNNL_ARG_SRC, userMem(ad_, a)},
                        {DNNL_ARG_WEIGHTS, userMem(bd_, b)},
                        {DNNL_ARG_DST, memory(cd_, engine(), c.raw())}});
      s.wait();
      return Status::ok();
    }
    // One 2-D product per output batch; a size-1 batch dim of A or B stays at offset 0 along it.
    const size_t r = cShape.size(), nb = r - 2;
    const auto aSt = contiguousStrides(aShape), bSt = contiguousStrides(bShape);
    const int64_t cMat = cShape[r - 2] * cShape[r - 1];
    int64_t batches = 1;
    for (size_t i = 0; i < nb; ++i) batches *= cShape[i];
    const auto* ap = static_cast<const float*>(a.raw());
    const auto* bp = static_cast<const float*>(b.raw());
    auto* cp = static_cast<float*>(c.raw());
    std::vector<int64_t> idx(nb, 0);
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t ao = 0, bo = 0;
      for (size_t i = 0; i < nb; ++i) {
        if (aShape[i] != 1) ao += idx[i] * aSt[i];
        if (bShape[i] != 1) bo += idx[i] * bSt[i];
      }
      prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, pad},
                        {DNNL_ARG_SRC, memory(ad_, engine(), const_cast<float*>(ap + ao))},
                        {DNNL_ARG_WEIGHTS, memory(bd_, engine(), const_cast<float*>(bp + bo))},
                        {DNNL_ARG_DST, memory(cd_, engine(), cp + bi * cMat)}});
      for (size_t i = nb; i-- > 0;) {
        if (++idx[i] < cShape[i]) break;
        idx[i] = 0;
      }
    }
    s.wait();
    return Status::ok();
  }

  /// The oneDNN implementation the last prepared shapes run on, "loop of " before it on the loop path.
  std::string implInfo() const {
    if (gemv_) return "partex gemv" + std::string(folded_ ? " (folded)" : "");
    if (!prim_) return "";
    return (loop_ ? "loop of " : "") + std::string((packed_ ? packedPd_ : pd_).impl_info_str()) +
           (folded_ ? " (folded)" : "") + (packed_ ? " (packed weights)" : "");
  }
  /// Tests: take the loop path whenever the operands have batch dims.
  bool forceLoop = false;
  /// Whether B is held packed, so that the caller may give its B up (OpKernel::keepsCopy).
  bool holdsB() const { return packed_ && !loop_ && static_cast<bool>(wMem_); }
  /// Frees the packed weights (a kernel run once).
  void release() {
    wMem_ = memory();
    wPtr_ = nullptr;
  }

 private:
  static memory::desc desc(const std::vector<int64_t>& shape, bool trans) {
    auto st = contiguousStrides(shape);
    memory::dims dims = toDims(shape);
    const size_t r = shape.size();
    if (trans) {
      std::swap(dims[r - 1], dims[r - 2]);
      std::swap(st[r - 1], st[r - 2]);
    }
    return memory::desc(dims, dt::f32, memory::dims(st.begin(), st.end()));
  }

  void prepare(const std::vector<int64_t>& aShape, const std::vector<int64_t>& bShape,
               const std::vector<int64_t>& cShape, bool transA, bool transB, float alpha, bool accumulate,
               bool constB) {
    std::vector<int64_t> key = aShape;
    key.insert(key.end(), bShape.begin(), bShape.end());
    key.push_back(transA);
    key.push_back(transB);
    key.push_back(forceLoop);
    key.push_back(constB);
    if (key == key_ && (prim_ || gemv_) && alpha == alpha_ && accumulate == acc_) return;
    dnnl::primitive_attr attr = scratchAttr();
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (accumulate) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      attr.set_post_ops(po);
    }
    const size_t r = aShape.size();
    int64_t aBatch = 1, bBatch = 1;
    for (size_t i = 0; i + 2 < r; ++i) {
      aBatch *= aShape[i];
      bBatch *= bShape[i];
    }
    const std::vector<int64_t> b2(bShape.end() - 2, bShape.end());
    auto make = [&] { pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad_, bd_, cd_), attr, engine()); };
    folded_ = loop_ = packed_ = gemv_ = false;
    prim_ = {};
    wMem_ = memory();
    if (bBatch == 1 && !transA && aBatch * aShape[r - 2] < kPackMinRows && !forceLoop) {
      // A few rows (a batch-1 fully connected layer): gemvRows, no oneDNN primitive.
      folded_ = r > 2;
      gemv_ = true;
      rows_ = aBatch * aShape[r - 2];
      key_ = key;
      alpha_ = alpha;
      acc_ = accumulate;
      return;
    }
    if (bBatch == 1 && !transA) {
      // A's batch rows are consecutive M-row blocks of one [batch*M, K] matrix.
      folded_ = r > 2;
      ad_ = desc({aBatch * aShape[r - 2], aShape[r - 1]}, false);
      bd_ = desc(b2, transB);
      cd_ = plainDesc({aBatch * aShape[r - 2], cShape[r - 1]});
      make();
      // Only where A has several rows: a product of one row (a batch-1 fully connected layer) reads B
      // once per run, so a packed copy saves nothing there and, while it is made, doubles the weight's
      // memory (VGG-19's 392 MiB fc6 put the process over its bound).
      if (constB && aBatch * aShape[r - 2] >= kPackMinRows) {
        // A weight (immutable shared storage): let oneDNN choose B's layout and reorder it once. Its
        // brgemm repacks a plain B on every run otherwise (3x the time of a [128,768]x[768,3072]).
        const memory::desc anyB(bd_.dims(), dt::f32, tag::any);
        packedPd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad_, anyB, cd_), attr, engine());
        packed_ = packedPd_.weights_desc() != bd_;
        if (packed_) packedPrim_ = dnnl::matmul(packedPd_);
      }
    } else {
      if (!forceLoop) {
        ad_ = desc(aShape, transA);
        bd_ = desc(bShape, transB);
        cd_ = plainDesc(cShape);
        make();
      }
      if (forceLoop || std::string(pd_.impl_info_str()).find("ref") != std::string::npos) {
        loop_ = true;
        ad_ = desc({aShape.end() - 2, aShape.end()}, transA);
        bd_ = desc(b2, transB);
        cd_ = plainDesc({cShape.end() - 2, cShape.end()});
        make();
      }
    }
    prim_ = dnnl::matmul(pd_);
    key_ = key;
    alpha_ = alpha;
    acc_ = accumulate;
  }

  std::vector<int64_t> key_;
  float alpha_ = 1.0f;
  bool acc_ = false, folded_ = false, loop_ = false, packed_ = false, gemv_ = false;
  int64_t rows_ = 0;  ///< gemv_: rows of A (batch dims folded in)
  memory::desc ad_, bd_, cd_;
  dnnl::matmul::primitive_desc pd_, packedPd_;
  dnnl::matmul prim_, packedPrim_;
  memory wMem_;  ///< B reordered into packedPd_'s layout
  const void* wPtr_ = nullptr;
  uint64_t wHash_ = 0;
};

/// Whether input 1 (B) was given up by the caller after `mm` packed it (OpKernel::keepsCopy): an empty
/// tensor stands there from then on, and the kernel runs on the packed copy with B's remembered shape.
bool bGivenUp(const std::vector<const Tensor*>& in, const MatMulPrim& mm) {
  return in.size() > 1 && in[1] && in[1]->empty() && mm.holdsB();
}

class MatMulKernel final : public OpKernel {
 public:
  void releaseCaches() override { mm_.release(); }
  bool keepsCopy(size_t i) const override { return i == 1 && mm_.holdsB(); }
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    const bool bKept = bGivenUp(in, mm_);
    if (auto e = expectInput(in, 0, "A"); !e.empty()) return Error{e};
    if (auto e = bKept ? std::string() : expectInput(in, 1, "B"); !e.empty()) return Error{e};
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (a.dtype() != DType::Float32 || (!bKept && b.dtype() != DType::Float32)) return makeError("float32 only");
    if (!bKept) bShape_ = b.shape();
    if (a.rank() < 1 || bShape_.empty()) return makeError("scalar operand");
    std::vector<int64_t> as = a.shape(), bs = bShape_;
    const bool aVec = as.size() == 1, bVec = bs.size() == 1;
    if (aVec) as.insert(as.begin(), 1);
    if (bVec) bs.push_back(1);
    const size_t r = std::max(as.size(), bs.size());
    if (r > 6) return makeError("rank above 6");
    while (as.size() < r) as.insert(as.begin(), 1);
    while (bs.size() < r) bs.insert(bs.begin(), 1);
    if (as[r - 1] != bs[r - 2]) return makeError("inner dims differ: ", a.describe(), " x ", b.describe());
    std::vector<int64_t> cs(r);
    for (size_t i = 0; i + 2 < r; ++i) {
      if (as[i] != bs[i] && as[i] != 1 && bs[i] != 1)
        return makeError("batch dims do not broadcast: ", a.describe(), " x ", b.describe());
      cs[i] = as[i] == 1 ? bs[i] : as[i];
    }
    cs[r - 2] = as[r - 2];
    cs[r - 1] = bs[r - 1];
    std::vector<int64_t> outShape(cs.begin(), cs.end() - 2);
    if (!aVec) outShape.push_back(cs[r - 2]);
    if (!bVec) outShape.push_back(cs[r - 1]);
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, outShape); !s) return s;
    if (out[0].numElements() == 0) return Status::ok();
    if (as[r - 1] == 0) {
      out[0].fill(0.0);
      return Status::ok();
    }
    return mm_.run(a, b, out[0], as, bs, cs, false, false, 1.0f, false);
  }
  MatMulPrim mm_;

 private:
  std::vector<int64_t> bShape_;  ///< B's shape as last given (it stands for a given-up B).
};

class GemmKernel final : public OpKernel {
 public:
  void releaseCaches() override { mm_.release(); }
  bool keepsCopy(size_t i) const override { return i == 1 && mm_.holdsB(); }
  explicit GemmKernel(const Node& n)
      : alpha_(static_cast<float>(n.attrFloat("alpha", 1.0))),
        beta_(static_cast<float>(n.attrFloat("beta", 1.0))),
        transA_(n.attrInt("transA", 0) != 0),
        transB_(n.attrInt("transB", 0) != 0) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    const bool bKept = bGivenUp(in, mm_);
    if (auto e = expectInput(in, 0, "A"); !e.empty()) return Error{e};
    if (auto e = bKept ? std::string() : expectInput(in, 1, "B"); !e.empty()) return Error{e};
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Tensor* c = in.size() > 2 && in[2] && !in[2]->empty() ? in[2] : nullptr;
    if (a.dtype() != DType::Float32 || (!bKept && b.dtype() != DType::Float32) || (c && c->dtype() != DType::Float32))
      return makeError("float32 only");
    if (!bKept) bShape_ = b.shape();
    if (a.rank() != 2 || bShape_.size() != 2)
      return makeError("A ", a.describe(), " and B ", bKept ? "(packed)" : b.describe(), " must be 2-D");
    const int64_t M = transA_ ? a.dim(1) : a.dim(0), K = transA_ ? a.dim(0) : a.dim(1);
    const int64_t Kb = transB_ ? bShape_[1] : bShape_[0], N = transB_ ? bShape_[0] : bShape_[1];
    if (K != Kb) return makeError("inner dims differ: ", a.describe(), " x ", bKept ? "(packed)" : b.describe());
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, {M, N}); !s) return s;
    const bool acc = c && beta_ != 0.0f;
    if (acc) {
      std::vector<int64_t> cs = c->shape(), bshape;
      if (cs.size() > 2 || !broadcastShape({cs, {M, N}}, bshape) || bshape != std::vector<int64_t>{M, N})
        return makeError("C ", c->describe(), " does not broadcast to [", std::to_string(M), ",", std::to_string(N),
                         "]");
      const std::vector<int64_t> st[1] = {broadcastStrides(cs, {M, N})};
      float* y = ptr<float>(out[0]);
      const float* cp = ptr<float>(*c);
      const float beta = beta_;
      parallelChunks(ctx, M * N, [&](int64_t b0, int64_t e0) {
        broadcastWalk<1>({M, N}, st, b0, e0, [&](int64_t i, const int64_t* off) { y[i] = beta * cp[off[0]]; });
      });
    }
    if (M * N == 0) return Status::ok();
    if (K == 0) {
      if (!acc) out[0].fill(0.0);
      return Status::ok();
    }
    std::vector<int64_t> as = a.shape(), bs = bShape_;
    return mm_.run(a, b, out[0], as, bs, {M, N}, transA_, transB_, alpha_, acc);
  }
  MatMulPrim mm_;

 private:
  std::vector<int64_t> bShape_;  ///< B's shape as last given (it stands for a given-up B).
  float alpha_, beta_;
  bool transA_, transB_;
};

// ---------------------------------------------------------------------------------------------------------
// Pooling

void maxPoolNhwc(const ExecContext& ctx, const Tensor& x, const Window& w, Tensor& y);

/// The geometry of a 2-D pool over plain float32 planes (avgPool2d, maxPool2d): input H x W, output
/// OH x OW, window kh x kw, strides sh x sw, top and left pads pt, pl; per output row a padded row buffer
/// of rowLen values from column -pl, whose real columns are [c0, c1) (the rest, the padding, holds the
/// neutral value and is written once per thread).
struct PlanarPool {
  int64_t H, W, OH, OW, kh, kw, sh, sw, pt, pl, rowLen, c0, c1;
};

PlanarPool planarPool(int64_t H, int64_t W, const Window& w) {
  PlanarPool g{H, W, w.out[0], w.out[1], w.kernel[0], w.kernel[1], w.strides[0], w.strides[1], w.padL[0], w.padL[1],
               0, 0, 0};
  g.rowLen = (g.OW - 1) * g.sw + g.kw;
  g.c0 = std::min<int64_t>(std::max<int64_t>(0, g.pl), g.rowLen);
  g.c1 = std::clamp<int64_t>(g.pl + W, g.c0, g.rowLen);
  return g;
}

/// Output rows [b, e) of avgPool2d (row r: plane r / OH, output row r % OH): per row, the window's input
/// rows [ya, yb) summed into the row buffer `a` (real columns only; the borders stay zero), then kw
/// neighbours per output column, times 1/count. The sums keep the order of the loop that adds one row
/// and one tap at a time onto zero, ((r0 + r1) + r2) and ((a0 + a1) + a2), in one pass each for the
/// common 3-row window and 3-tap stride-1 row (issue 24: eight passes per row over rows of 56 ran a
/// 3x3/1 AveragePool at 2.5x ONNX Runtime). Cloned for AVX2 and AVX-512 (the lambda that calls it
/// would be compiled for the baseline target).
[[gnu::target_clones("avx512f", "avx2", "default")]] void avgPoolRows(const float* x, float* y, const PlanarPool& g,
                                                                      int64_t b, int64_t e, float* a, bool includePad,
                                                                      const float* colInv) {
  const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
  const int64_t n = g.c1 - g.c0;
  float* ar = a + g.c0;
  for (int64_t r = b; r < e; ++r) {
    const int64_t p = r / OH, oy = r % OH;
    const int64_t y0 = oy * sh - g.pt, ya = std::max<int64_t>(0, y0), yb = std::min(H, y0 + kh);
    const float inv = includePad ? 1.0f / static_cast<float>(kh * kw) : 1.0f / static_cast<float>(yb - ya);
    const float* s0 = x + (p * H + ya) * W + (g.c0 - g.pl);
    if (yb - ya == 3) {
      const float *s1 = s0 + W, *s2 = s1 + W;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ar[j] = (s0[j] + s1[j]) + s2[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ar[j] = 0.0f + s0[j];
      for (int64_t yy = ya + 1; yy < yb; ++yy) {
        const float* src = s0 + (yy - ya) * W;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) ar[j] += src[j];
      }
    }
    float* o = y + r * OW;
    if (kw == 3 && sw == 1) {
#pragma omp simd
      for (int64_t ox = 0; ox < OW; ++ox) o[ox] = ((a[ox] + a[ox + 1]) + a[ox + 2]) * (inv * colInv[ox]);
      continue;
    }
    for (int64_t ox = 0; ox < OW; ++ox) o[ox] = 0.0f;
    for (int64_t k = 0; k < kw; ++k) {  // one shifted vector add per tap
      if (sw == 1) {
#pragma omp simd
        for (int64_t ox = 0; ox < OW; ++ox) o[ox] += a[ox + k];
      } else if (sw == 2) {
#pragma omp simd
        for (int64_t ox = 0; ox < OW; ++ox) o[ox] += a[2 * ox + k];
      } else {
        for (int64_t ox = 0; ox < OW; ++ox) o[ox] += a[ox * sw + k];
      }
    }
#pragma omp simd
    for (int64_t ox = 0; ox < OW; ++ox) o[ox] *= inv * colInv[ox];
  }
}

/// Output rows [b, e) of maxPool2d, as avgPoolRows: the window's rows maxed into the row buffer `a`
/// (borders -inf), then the max of kw neighbours per output column. Each maximum starts from -inf and
/// takes std::max(acc, x), so NaN inputs are skipped as before. The 3-row window, the 3-tap row of
/// stride 1 or 2 and the 2-tap row of stride 2 in one pass each (issue 24: the -inf fills per row and
/// the stride-2 taps as a scalar loop over a runtime stride ran the 3x3/2 stem pool over 64x112x112 at
/// 3-3.8x ONNX Runtime).
[[gnu::target_clones("avx512f", "avx2", "default")]] void maxPoolRows(const float* x, float* y, const PlanarPool& g,
                                                                      int64_t b, int64_t e, float* a) {
  const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
  const int64_t n = g.c1 - g.c0;
  const float lo = -std::numeric_limits<float>::infinity();
  float* ar = a + g.c0;
  for (int64_t r = b; r < e; ++r) {
    const int64_t p = r / OH, oy = r % OH;
    const int64_t y0 = oy * sh - g.pt, ya = std::max<int64_t>(0, y0), yb = std::min(H, y0 + kh);
    const float* s0 = x + (p * H + ya) * W + (g.c0 - g.pl);
    if (yb - ya == 3) {
      const float *s1 = s0 + W, *s2 = s1 + W;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ar[j] = std::max(std::max(std::max(lo, s0[j]), s1[j]), s2[j]);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ar[j] = std::max(lo, s0[j]);
      for (int64_t yy = ya + 1; yy < yb; ++yy) {
        const float* src = s0 + (yy - ya) * W;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) ar[j] = std::max(ar[j], src[j]);
      }
    }
    float* o = y + r * OW;
    if (kw == 3 && sw == 2) {
#pragma omp simd
      for (int64_t ox = 0; ox < OW; ++ox)
        o[ox] = std::max(std::max(std::max(lo, a[2 * ox]), a[2 * ox + 1]), a[2 * ox + 2]);
    } else if (kw == 3 && sw == 1) {
#pragma omp simd
      for (int64_t ox = 0; ox < OW; ++ox) o[ox] = std::max(std::max(std::max(lo, a[ox]), a[ox + 1]), a[ox + 2]);
    } else if (kw == 2 && sw == 2) {
#pragma omp simd
      for (int64_t ox = 0; ox < OW; ++ox) o[ox] = std::max(std::max(lo, a[2 * ox]), a[2 * ox + 1]);
    } else {
      for (int64_t ox = 0; ox < OW; ++ox) o[ox] = lo;
      for (int64_t k = 0; k < kw; ++k) {
        if (sw == 1) {
#pragma omp simd
          for (int64_t ox = 0; ox < OW; ++ox) o[ox] = std::max(o[ox], a[ox + k]);
        } else if (sw == 2) {
#pragma omp simd
          for (int64_t ox = 0; ox < OW; ++ox) o[ox] = std::max(o[ox], a[2 * ox + k]);
        } else {
          for (int64_t ox = 0; ox < OW; ++ox) o[ox] = std::max(o[ox], a[ox * sw + k]);
        }
      }
    }
  }
}

/// 2-D max pooling of plain float32 [N, C, H, W] planes without dilation, every window holding a real
/// input (ceil_mode's last window included: it starts inside the input or its left padding): per output
/// row, the window's rows maxed into a -inf-bordered row buffer, then kw neighbours per output column
/// (maxPoolRows). Issue 24: oneDNN 2.6's pooling on the plain layout took 7.6 ms against ONNX Runtime's
/// 0.33 ms on MTCNN P-Net's 2x2/2 MaxPool (auto_pad SAME_UPPER, 10 planes of 238x318): 23x.
void maxPool2d(const ExecContext& ctx, const float* x, float* y, int64_t planes, int64_t H, int64_t W,
               const Window& w) {
  const PlanarPool g = planarPool(H, W, w);
  parallelChunks(
      ctx, planes * g.OH,
      [&](int64_t b, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(g.rowLen), -std::numeric_limits<float>::infinity());
        maxPoolRows(x, y, g, b, e, acc.data());
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, W * g.kh)));
}

/// 2-D average pooling of plain float32 [N, C, H, W] planes without dilation or ceil_mode (every window
/// then lies inside the padded input): per output row, the window's input rows summed into a zero-bordered
/// row buffer, then kw neighbours of it per output column, divided by kh * kw (count_include_pad) or by the
/// window's count of real inputs (avgPoolRows). Issue 24: oneDNN 2.6's pooling on the plain layout ran a
/// 3x3 stride-1 AveragePool at 2.4x ONNX Runtime and 3x its memory-traffic floor.
void avgPool2d(const ExecContext& ctx, const float* x, float* y, int64_t planes, int64_t H, int64_t W,
               const Window& w, bool includePad) {
  const PlanarPool g = planarPool(H, W, w);
  // The divisor as factors: 1 / (kh * kw) with count_include_pad; otherwise 1 / rows per output row
  // times 1 / columns per output column (the window's real inputs form a rectangle).
  std::vector<float> colInv(static_cast<size_t>(g.OW), 1.0f);
  if (!includePad)
    for (int64_t ox = 0; ox < g.OW; ++ox) {
      const int64_t x0 = ox * g.sw - g.pl;
      colInv[static_cast<size_t>(ox)] =
          1.0f / static_cast<float>(std::min(W, x0 + g.kw) - std::max<int64_t>(0, x0));
    }
  parallelChunks(
      ctx, planes * g.OH,
      [&](int64_t b, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(g.rowLen), 0.0f);
        avgPoolRows(x, y, g, b, e, acc.data(), includePad, colInv.data());
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, W * g.kh)));
}

/// The largest row-major input a pool converts to channels-last to run its channels-last path (PoolKernel).
constexpr int64_t kPoolConvertMaxBytes = int64_t{2} << 20;
/// Planes narrower than these make the plain row loops (maxPoolRows, avgPool2d) pay their per-row set-up
/// more than their work: a row-major input of narrow planes is converted even when the output must be
/// row-major (PoolKernel). Measured side by side (eleventh session, one core, row-major in and out,
/// 3x3/1 p1): MaxPool 832x7x7 73 us planar, 51 converted; 528x14x14 100 against 133, 192x28x28 97
/// against 207 (the planar loop wins from 14 wide). AveragePool 528x14x14 116 against 78, 192x28x28 100
/// against 91.
constexpr int64_t kMaxPoolRowLoopMinWidth = 8;
constexpr int64_t kAvgPoolRowLoopMinWidth = 32;

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const Node& n, dnnl::algorithm alg, bool global) : node_(n), alg_(alg), global_(global) {}
  bool takesNhwc(const std::vector<const Tensor*>&) const override { return true; }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor* xin = in[0];
    if (xin->dtype() != DType::Float32) return makeError("float32 only");
    if (xin->rank() < 3 || xin->rank() > 5) return makeError("input ", xin->describe(), " (1-3 spatial dims supported)");
    // A row-major 2-D input where an all-CPU plan hands this kernel a channels-last one (its output is
    // wanted channels-last: a Conv's or a pool's output feeds it there), or where the row-major paths
    // below are oneDNN's plain pooling (ceil_mode): a GPU's output arrives on the host row-major.
    // Converted (plainToNhwc) into the thread's scratch, then the channels-last path the profile
    // measured, whose output stays channels-last for the readers. Issue 25: Inception v1's 3x3/2
    // ceil-mode MaxPool fed by the GPU ran 154 us against 35 profiled; here a 3x3/1 MaxPool over
    // 192x28x28 ran 3.3x its channels-last time row-major, 1.3x converted. Only up to
    // kPoolConvertMaxBytes (2 MiB: Inception's 480x28x28 is 1.5): beyond the cache the conversion took
    // 2.5-2.7x a memcpy's time and the row loops over wide rows were faster (a 64x112x112 stem pool,
    // docs/benchmarks.md). Issue 24 (eleventh session): with maxPoolRows' one-pass rows the planar
    // MaxPool of that stem ran at 0.4-0.6x its channels-last time, so a MaxPool (ceil_mode too) whose
    // readers want row-major is never converted; for a Conv reader below the limit the conversion still
    // matched or beat the planar loop over 28-wide rows (bench_rowmajor).
    // Narrow planes are converted even when the output must stay row-major (a GPU reads it): the row
    // loops spend their time setting up rows (issue 25: Inception's 3x3/1 MaxPool over 528x14x14 fed by
    // the GPU and read by it ran 698 us, 52 profiled; 832x7x7, 334 against 18).
    if (!global_ && !xin->nhwc() && xin->rank() == 4 && xin->bytes() <= kPoolConvertMaxBytes &&
        (nhwcOut || (node_.attrInt("ceil_mode", 0) != 0 && alg_ != dnnl::algorithm::pooling_max) ||
         xin->dim(3) < (alg_ == dnnl::algorithm::pooling_max ? kMaxPoolRowLoopMinWidth : kAvgPoolRowLoopMinWidth))) {
      thread_local Tensor converted;
      if (auto st = converted.ensureNhwc(xin->shape()); !st) return st;
      plainToNhwc(ptr<float>(*xin), static_cast<float*>(converted.raw()), xin->dim(0), xin->dim(1),
                  xin->dim(2) * xin->dim(3), ctx.threads);
      xin = &converted;
    }
    const Tensor& x = *xin;
    // A 2-D MaxPool over a channels-last input: the backend's own loop (maxPoolNhwc).
    if (alg_ == dnnl::algorithm::pooling_max && !global_ && x.nhwc() && x.rank() == 4) {
      if (x.shape() != ownKey_) {
        std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
        auto kernel = node_.attrInts("kernel_shape");
        if (kernel.size() != spatial.size()) return makeError("kernel_shape does not match the input rank");
        if (auto e = windowGeometry(node_, spatial, kernel, node_.attrInt("ceil_mode", 0) != 0, ownWin_); !e.empty())
          return Error{e};
        ownKey_ = x.shape();
      }
      if (ownWin_.dil[0] == 0 && ownWin_.dil[1] == 0) {
        const std::vector<int64_t> shape{x.dim(0), x.dim(1), ownWin_.out[0], ownWin_.out[1]};
        out.resize(1);
        if (auto s = nhwcOut ? out[0].ensureNhwc(shape) : out[0].ensure(DType::Float32, shape); !s) return s;
        maxPoolNhwc(ctx, x, ownWin_, out[0]);
        return Status::ok();
      }
    }
    const bool avg = alg_ == dnnl::algorithm::pooling_avg_include_padding ||
                     alg_ == dnnl::algorithm::pooling_avg_exclude_padding;
    if (avg && !global_ && !x.nhwc() && x.rank() == 4 && node_.attrInt("ceil_mode", 0) == 0) {
      auto kernel = node_.attrInts("kernel_shape");
      if (kernel.size() != 2) return makeError("kernel_shape does not match the input rank");
      Window win;
      if (auto e = windowGeometry(node_, {x.dim(2), x.dim(3)}, kernel, false, win); !e.empty()) return Error{e};
      // (A pad as wide as the kernel would give windows without a real input: oneDNN's case.)
      if (win.dil[0] == 0 && win.dil[1] == 0 && win.padL[0] < kernel[0] && win.padR[0] < kernel[0] &&
          win.padL[1] < kernel[1] && win.padR[1] < kernel[1]) {
        out.resize(1);
        if (auto s = out[0].ensure(DType::Float32, {x.dim(0), x.dim(1), win.out[0], win.out[1]}); !s) return s;
        avgPool2d(ctx, ptr<float>(x), ptr<float>(out[0]), x.dim(0) * x.dim(1), x.dim(2), x.dim(3), win,
                  alg_ == dnnl::algorithm::pooling_avg_include_padding);
        return Status::ok();
      }
    }
    // A 2-D MaxPool over a plain input: maxPool2d, where every window holds a real input (ceil_mode's
    // windows do: the last one starts inside the input or its left padding).
    if (alg_ == dnnl::algorithm::pooling_max && !global_ && !x.nhwc() && x.rank() == 4) {
      auto kernel = node_.attrInts("kernel_shape");
      if (kernel.size() != 2) return makeError("kernel_shape does not match the input rank");
      Window win;
      if (auto e = windowGeometry(node_, {x.dim(2), x.dim(3)}, kernel, node_.attrInt("ceil_mode", 0) != 0, win);
          !e.empty())
        return Error{e};
      if (win.dil[0] == 0 && win.dil[1] == 0 && win.padL[0] < kernel[0] && win.padR[0] < kernel[0] &&
          win.padL[1] < kernel[1] && win.padR[1] < kernel[1] && win.out[0] > 0 && win.out[1] > 0) {
        out.resize(1);
        if (auto s = out[0].ensure(DType::Float32, {x.dim(0), x.dim(1), win.out[0], win.out[1]}); !s) return s;
        maxPool2d(ctx, ptr<float>(x), ptr<float>(out[0]), x.dim(0) * x.dim(1), x.dim(2), x.dim(3), win);
        return Status::ok();
      }
    }
    if (x.shape() != key_ || x.nhwc() != blk_ || !prim_) {
      std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
      Window win;
      if (global_) {
        for (int64_t s : spatial) {
          if (s <= 0) return makeError("empty spatial dim");
          win.strides.push_back(1);
          win.dil.push_back(0);
          win.padL.push_back(0);
          win.padR.push_back(0);
          win.kernel.push_back(s);
          win.out.push_back(1);
        }
      } else {
        auto kernel = node_.attrInts("kernel_shape");
        if (kernel.size() != spatial.size()) return makeError("kernel_shape does not match the input rank");
        if (auto e = windowGeometry(node_, spatial, kernel, node_.attrInt("ceil_mode", 0) != 0, win); !e.empty())
          return Error{e};
      }
      outShape_ = {x.dim(0), x.dim(1)};
      outShape_.insert(outShape_.end(), win.out.begin(), win.out.end());
      userX_ = descOf(x);
      blk_ = x.nhwc();
      auto d = dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, alg_, userX_,
                                              memory::desc(toDims(outShape_), dt::f32, tag::any), win.strides,
                                              win.kernel, win.dil, win.padL, win.padR);
      pd_ = dnnl::pooling_v2_forward::primitive_desc(d, scratchAttr(), engine());
      prim_ = dnnl::pooling_v2_forward(pd_);
      key_ = x.shape();
    }
    out.resize(1);
    // The output stays channels-last when the primitive writes that layout and every consumer reads it.
    const bool blkOut = nhwcOut && outShape_.size() == 4 && pd_.dst_desc() == nhwcDesc(outShape_);
    if (auto s = blkOut ? out[0].ensureNhwc(outShape_) : out[0].ensure(DType::Float32, outShape_); !s) return s;
    dnnl::stream s(engine());
    memory xm = toLayout(s, userMem(userX_, x), pd_.src_desc(), srcReorder_);
    memory ym = userMem(descOf(out[0]), out[0]);
    memory yp = pd_.dst_desc() == ym.get_desc() ? ym : threadScratch(1, pd_.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, yp}};
    if (pd_.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd_.workspace_desc(), engine());
    args[DNNL_ARG_SCRATCHPAD] = scratchpadFor(pd_);
    prim_.execute(s, args);
    if (yp != ym) dstReorder_.run(s, yp, ym);
    s.wait();
    return Status::ok();
  }

 private:
  Node node_;
  dnnl::algorithm alg_;
  bool global_;
  std::vector<int64_t> key_, outShape_;
  bool blk_ = false;
  memory::desc userX_;
  Reorder srcReorder_, dstReorder_;
  dnnl::pooling_v2_forward::primitive_desc pd_;
  dnnl::pooling_v2_forward prim_;
  std::vector<int64_t> ownKey_;  ///< Input shape ownWin_ was computed for (maxPoolNhwc).
  Window ownWin_;
};

/// Output rows [b, e) (row r: image r / OH, output row r % OH) of maxPoolNhwc. Cloned for AVX-512 and
/// AVX2 (chosen at load time; the build targets baseline x86-64, whose 4-wide SSE loop ran at half the
/// speed): per output pixel the window's pixels, C channels at once.
[[gnu::target_clones("avx512f", "avx2", "default")]] void maxPoolRowsNhwc(const float* px, float* py, bool yNhwc,
                                                                          const int64_t* dims, int64_t b, int64_t e,
                                                                          float* acc) {
  const int64_t C = dims[0], H = dims[1], W = dims[2], OH = dims[3], OW = dims[4];
  const int64_t kh = dims[5], kw = dims[6], sh = dims[7], sw = dims[8], ph = dims[9], pw = dims[10];
  for (int64_t r = b; r < e; ++r) {
    const int64_t n = r / OH, oy = r % OH;
    const int64_t y0 = std::max<int64_t>(0, oy * sh - ph), y1 = std::min<int64_t>(H, oy * sh - ph + kh);
    for (int64_t ox = 0; ox < OW; ++ox) {
      const int64_t x0 = std::max<int64_t>(0, ox * sw - pw), x1 = std::min<int64_t>(W, ox * sw - pw + kw);
      float* d = yNhwc ? py + ((n * OH + oy) * OW + ox) * C : acc;
      if (y0 >= y1 || x0 >= x1) {  // a window inside the padding alone (pads >= kernel)
        std::fill(d, d + C, -std::numeric_limits<float>::infinity());
      } else {
        const float* first = px + ((n * H + y0) * W + x0) * C;
        std::copy(first, first + C, d);
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = (iy == y0 ? x0 + 1 : x0); ix < x1; ++ix) {
            const float* src = px + ((n * H + iy) * W + ix) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) d[c] = src[c] > d[c] ? src[c] : d[c];
          }
      }
      if (!yNhwc)
        for (int64_t c = 0; c < C; ++c) py[((n * C + c) * OH + oy) * OW + ox] = d[c];
    }
  }
}

/// MaxPool without Indices, 2-D, undilated, over a channels-last float32 input [N, C, H, W] into `y`
/// (channels-last or row-major, as allocated): per output pixel, the maximum over the window's pixels
/// inside the image (padding never wins, as in ONNX), all C channels at once as one vector row.
/// **Why not oneDNN**: oneDNN 2.6's jit pooling over acdb took 3x ONNX Runtime's NCHWc MaxPool on
/// SqueezeNet's 3x3/2 over 64x111x111 (docs/benchmarks.md).
void maxPoolNhwc(const ExecContext& ctx, const Tensor& x, const Window& w, Tensor& y) {
  const int64_t dims[11] = {x.dim(1),     x.dim(2),     x.dim(3),      w.out[0],      w.out[1],    w.kernel[0],
                            w.kernel[1], w.strides[0], w.strides[1], w.padL[0], w.padL[1]};
  const float* px = static_cast<const float*>(x.raw());
  float* py = static_cast<float*>(y.raw());
  const bool yNhwc = y.nhwc();
  parallelChunks(
      ctx, x.dim(0) * w.out[0],
      [&](int64_t b, int64_t e) {
        std::vector<float> acc(yNhwc ? 0 : static_cast<size_t>(x.dim(1)));
        maxPoolRowsNhwc(px, py, yNhwc, dims, b, e, acc.data());
      },
      1);
}

/// MaxPool with its Indices output (flattened input offsets, row-major): plain loops, since oneDNN's
/// workspace is not ONNX's index layout.
class MaxPoolIndicesKernel final : public OpKernel {
 public:
  explicit MaxPoolIndicesKernel(const Node& n) : node_(n), colMajor_(n.attrInt("storage_order", 0) == 1) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    if (x.rank() < 3 || x.rank() > 5) return makeError("input ", x.describe());
    const size_t s = static_cast<size_t>(x.rank() - 2);
    std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
    auto kernel = node_.attrInts("kernel_shape");
    if (kernel.size() != s) return makeError("kernel_shape does not match the input rank");
    Window w;
    if (auto e = windowGeometry(node_, spatial, kernel, node_.attrInt("ceil_mode", 0) != 0, w); !e.empty())
      return Error{e};
    std::vector<int64_t> shape{x.dim(0), x.dim(1)};
    shape.insert(shape.end(), w.out.begin(), w.out.end());
    out.resize(2);
    if (auto st = out[0].ensure(DType::Float32, shape); !st) return st;
    if (auto st = out[1].ensure(DType::Int64, shape); !st) return st;
    int64_t inSp = 1, outSp = 1, kSz = 1;
    for (size_t i = 0; i < s; ++i) {
      inSp *= spatial[i];
      outSp *= w.out[i];
      kSz *= kernel[i];
    }
    const float* px = ptr<float>(x);
    float* pv = ptr<float>(out[0]);
    int64_t* pi = ptr<int64_t>(out[1]);
    parallelChunks(
        ctx, x.dim(0) * x.dim(1) * outSp,
        [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            const int64_t plane = k / outSp;
            int64_t o = k % outSp;
            int64_t oc[3] = {0, 0, 0};
            for (size_t d = s; d-- > 0;) {
              oc[d] = o % w.out[d];
              o /= w.out[d];
            }
            float best = -INFINITY;
            int64_t bestIdx = -1;
            for (int64_t q = 0; q < kSz; ++q) {
              int64_t rem = q, off = 0, offCm = 0;
              bool inside = true;
              for (size_t d = s; d-- > 0;) {
                const int64_t kk = rem % kernel[d];
                rem /= kernel[d];
                const int64_t c = oc[d] * w.strides[d] - w.padL[d] + kk * (w.dil[d] + 1);
                if (c < 0 || c >= spatial[d]) inside = false;
                int64_t mul = 1;
                for (size_t dd = d + 1; dd < s; ++dd) mul *= spatial[dd];
                off += c * mul;
                int64_t mulCm = 1;  // storage_order 1: column-major spatial index
                for (size_t dd = 0; dd < d; ++dd) mulCm *= spatial[dd];
                offCm += c * mulCm;
              }
              if (!inside) continue;
              const float v = px[plane * inSp + off];
              if (bestIdx < 0 || v > best) {
                best = v;
                bestIdx = plane * inSp + (colMajor_ ? offCm : off);
              }
            }
            pv[k] = best;
            pi[k] = bestIdx < 0 ? 0 : bestIdx;
          }
        },
        256);
    return Status::ok();
  }

 private:
  Node node_;
  bool colMajor_;
};

std::string checkPool(const Graph& g, const Node& n, bool global) {
  if (auto e = checkDTypes(g, n, f32Only()); !e.empty()) {
    // MaxPool's Indices output is int64.
    const bool indices = !global && n.opType == "MaxPool" && n.outputs.size() > 1 && n.outputs[1] >= 0;
    if (!indices || inDType(g, n, 0) != DType::Float32 || outDType(g, n, 0) != DType::Float32 ||
        outDType(g, n, 1) != DType::Int64)
      return e;
  }
  if (n.outputs.size() > 1 && n.outputs[1] >= 0 && (global || n.opType != "MaxPool"))
    return "the Indices output is not supported";
  // storage_order only changes the Indices output, which the indices kernel computes both ways.
  if (n.attrInt("storage_order", 0) != 0 && n.attrInt("storage_order", 0) != 1) return "storage_order must be 0 or 1";
  const int64_t r = inRank(g, n, 0);
  if (r != -1 && (r < 3 || r > 5)) return "rank " + std::to_string(r) + " input";
  if (!global && !n.hasAttr("kernel_shape")) return "kernel_shape missing";
  return global ? "" : spatialAttrsCheck(n, r > 2 ? static_cast<size_t>(r - 2) : 0);
}

// ---------------------------------------------------------------------------------------------------------
// Normalisations, LRN, softmax

/// Inference BatchNormalization as a direct loop, y = (x - mean) * (scale / sqrt(var + eps)) + B, one
/// factor per channel computed once per run. Issue 24: oneDNN 2.6's primitive ran a standalone
/// [1,64,56,56] BN (one a model did not fold into its Conv) at 7.7x ONNX Runtime on the plain layout;
/// the operator is one read and one write of x, which a vector loop over each channel's plane (or, channels
/// last, over each pixel's channels) does at the memory-traffic floor.
class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(const Node& n) : eps_(static_cast<float>(n.attrFloat("epsilon", 1e-5))) {}
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    return nhwcOut && !in.empty() && in[0] && in[0]->nhwc();
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 5; ++i)
      if (auto e = expectInput(in, i, "X, scale, B, mean, var"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    for (size_t i = 0; i < 5; ++i)
      if (in[i]->dtype() != DType::Float32) return makeError("float32 only");
    if (x.rank() < 2 || x.rank() > 5) return makeError("input ", x.describe());
    const int64_t C = x.dim(1);
    for (size_t i = 1; i < 5; ++i)
      if (in[i]->numElements() != C)
        return makeError("input ", std::to_string(i), " ", in[i]->describe(), " for C=", std::to_string(C));
    const bool blk = x.nhwc();
    out.resize(1);
    if (auto s = blk ? out[0].ensureNhwc(x.shape()) : out[0].ensure(DType::Float32, x.shape()); !s) return s;
    const float *sc = ptr<float>(*in[1]), *bias = ptr<float>(*in[2]), *mean = ptr<float>(*in[3]),
                *var = ptr<float>(*in[4]);
    mul_.resize(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) mul_[static_cast<size_t>(c)] = sc[c] / std::sqrt(var[c] + eps_);
    const float* mul = mul_.data();
    const float* px = ptr<float>(x);
    float* py = ptr<float>(out[0]);
    const int64_t N = x.dim(0), S = N != 0 && C != 0 ? x.numElements() / (N * C) : 0;
    if (blk) {  // [N, spatial..., C] storage: one vector loop over the channels per pixel
      parallelChunks(
          ctx, N * S,
          [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) {
              const float* xp = px + p * C;
              float* yp = py + p * C;
#pragma omp simd
              for (int64_t c = 0; c < C; ++c) yp[c] = (xp[c] - mean[c]) * mul[c] + bias[c];
            }
          },
          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
      return Status::ok();
    }
    parallelChunks(
        ctx, N * C,
        [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const int64_t c = r % C;
            const float m = mean[c], k = mul[c], t = bias[c];
            const float* xp = px + r * S;
            float* yp = py + r * S;
#pragma omp simd
            for (int64_t j = 0; j < S; ++j) yp[j] = (xp[j] - m) * k + t;
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(1, S)));
    return Status::ok();
  }

 private:
  float eps_;
  std::vector<float> mul_;
};

class LrnKernel final : public OpKernel {
 public:
  explicit LrnKernel(const Node& n)
      : size_(n.attrInt("size", 1)),
        alpha_(static_cast<float>(n.attrFloat("alpha", 1e-4))),
        beta_(static_cast<float>(n.attrFloat("beta", 0.75))),
        bias_(static_cast<float>(n.attrFloat("bias", 1.0))) {}
  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    if (x.rank() < 3 || x.rank() > 5) return makeError("input ", x.describe());
    if (x.shape() != key_ || !prim_) {
      md_ = plainDesc(x.shape());
      auto d = dnnl::lrn_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels, md_,
                                       size_, alpha_, beta_, bias_);
      pd_ = dnnl::lrn_forward::primitive_desc(d, scratchAttr(), engine());
      prim_ = dnnl::lrn_forward(pd_);
      key_ = x.shape();
    }
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    dnnl::stream s(engine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, userMem(md_, x)},
                                         {DNNL_ARG_DST, memory(md_, engine(), out[0].raw())}};
    if (pd_.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd_.workspace_desc(), engine());
    args[DNNL_ARG_SCRATCHPAD] = scratchpadFor(pd_);
    prim_.execute(s, args);
    s.wait();
    return Status::ok();
  }

 private:
  int64_t size_;
  float alpha_, beta_, bias_;
  std::vector<int64_t> key_;
  memory::desc md_;
  dnnl::lrn_forward::primitive_desc pd_;
  dnnl::lrn_forward prim_;
};

// Softmax and LogSoftmax in float32, cloned for AVX2 and AVX-512, exp through expVec (kernels/vecmath.h,
// inlined and vectorised; libm's expf is a call per element). Compiled without -ftrapping-math, as
// expVec's selects need.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

/// Softmax rows of at most this many values take softmaxRowsF32's short-row path.
constexpr int64_t kShortSoftmaxRow = 8;

/// Softmax (or log-softmax) of rows [0, rows) of n contiguous floats (n >= 1): the maximum, then exp(v -
/// max) written out and summed in float (oneDNN's order too), then one scaling pass. Issue 24: oneDNN
/// 2.6's LogSoftmax over the attention rows [2,12,128,128] ran at 2.0x ONNX Runtime, its Softmax 1.65x.
[[gnu::target_clones("avx512f", "avx2", "default")]] void softmaxRowsF32(const float* x, float* y, int64_t rows,
                                                                         int64_t n, bool log) {
  if (!log && n <= kShortSoftmaxRow) {
    // Rows of a few values (Ultraface's two class scores per box, [1,4420,2]): a vector loop per row
    // would run one partial vector per step (37 us for those 4,420 rows); instead each row's shifted
    // values x - max are written out, exp runs as one vector loop over all rows, then each row is scaled.
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      float m = xr[0];
      for (int64_t i = 1; i < n; ++i) m = xr[i] > m ? xr[i] : m;
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - m;
    }
    const int64_t total = rows * n;
#pragma omp simd
    for (int64_t k = 0; k < total; ++k) y[k] = expVec(y[k]);
    for (int64_t r = 0; r < rows; ++r) {
      float* yr = y + r * n;
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += yr[i];
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
    }
    return;
  }
  // Explicit lanes for the maximum and the sum (vecmath.h), not `omp simd reduction`: GCC 12 reduces
  // those through a 64-entry array in memory with one dependent scalar step per entry, which cost more
  // than the row itself on rows of 61-128 values (2x oneDNN's time).
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float m = rowMaxF(xr, n);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yr[i] = expVec(xr[i] - m);
    const float s = rowSumF(yr, n);
    if (log) {
      const float ls = __builtin_logf(s);  // (x - max) - log(s): x - max is exact near the maximum
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) - ls;
    } else {
      const float inv = 1.0f / s;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
    }
  }
}

/// Softmax (or log-softmax) of blocks [b, e) of [outer, n, inner] over the middle axis, inner > 1: the
/// running maximum, then exp and the sums, then the scaling, each step a vector loop over the `inner`
/// contiguous values (`mx`, `sum`: inner floats each).
[[gnu::target_clones("avx512f", "avx2", "default")]] void stridedSoftmaxBlocks(const float* x, float* y, int64_t b,
                                                                               int64_t e, int64_t n, int64_t inner,
                                                                               bool log, float* mx, float* sum) {
  for (int64_t o = b; o < e; ++o) {
    const float* xo = x + o * n * inner;
    float* yo = y + o * n * inner;
    for (int64_t j = 0; j < inner; ++j) mx[j] = xo[j];
    for (int64_t a = 1; a < n; ++a) {
      const float* xa = xo + a * inner;
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j) mx[j] = xa[j] > mx[j] ? xa[j] : mx[j];
    }
    for (int64_t j = 0; j < inner; ++j) sum[j] = 0.0f;
    for (int64_t a = 0; a < n; ++a) {
      const float* xa = xo + a * inner;
      float* ya = yo + a * inner;
      if (log) {
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) sum[j] += expVec(xa[j] - mx[j]);
      } else {
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) {
          const float ev = expVec(xa[j] - mx[j]);
          sum[j] += ev;
          ya[j] = ev;
        }
      }
    }
    if (log) {
      for (int64_t j = 0; j < inner; ++j) sum[j] = __builtin_logf(sum[j]);
      for (int64_t a = 0; a < n; ++a) {
        const float* xa = xo + a * inner;
        float* ya = yo + a * inner;
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) ya[j] = (xa[j] - mx[j]) - sum[j];
      }
    } else {
      for (int64_t j = 0; j < inner; ++j) sum[j] = 1.0f / sum[j];
      for (int64_t a = 0; a < n; ++a) {
        float* ya = yo + a * inner;
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) ya[j] *= sum[j];
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/// Softmax (or log-softmax) of [outer, n, inner] over its middle axis, inner > 1: oneDNN 2.6 has only its
/// reference implementation when the axis is not the innermost (issue 24: axis 2 of [2,12,128,128] took
/// 170 ms against ONNX Runtime's 0.55 ms; then 4.3x ONNX Runtime with libm's exp per element).
void stridedSoftmax(const ExecContext& ctx, const float* x, float* y, int64_t outer, int64_t n, int64_t inner,
                    bool log) {
  parallelChunks(
      ctx, outer,
      [&](int64_t b, int64_t e) {
        std::vector<float> mx(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
        stridedSoftmaxBlocks(x, y, b, e, n, inner, log, mx.data(), sum.data());
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * inner)));
}

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(const Node& n, int opset, bool log)
      : axis_(n.attrInt("axis", opset >= 13 ? -1 : 1)), coerce2d_(opset < 13), log_(log) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "input"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    const int64_t r = x.rank();
    const int64_t axis = normAxis(axis_, std::max<int64_t>(r, 1));
    if (axis < 0) return makeError("axis out of range for ", x.describe());
    out.resize(1);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    if (x.numElements() == 0) return Status::ok();
    // [outer, axis, inner]: any rank collapses to it.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i)
      if (i < axis)
        outer *= x.dim(i);
      else if (i > axis)
        inner *= x.dim(i);
    if (!coerce2d_ && inner > 1) {
      stridedSoftmax(ctx, ptr<float>(x), ptr<float>(out[0]), outer, x.dim(axis), inner, log_);
      return Status::ok();
    }
    // Rows of contiguous values: the last axis, or opset < 13's coerced 2-D [outer, everything from the
    // axis on]. (oneDNN 2.6's softmax_v2 primitive ran here before: the loop below is as fast on the
    // attention rows [2,12,128,128] and has no per-shape primitive to create; issue 24, bench_ops.)
    const int64_t rowLen = r ? (coerce2d_ ? x.dim(axis) * inner : x.dim(axis)) : 1;
    const float* px = ptr<float>(x);
    float* py = ptr<float>(out[0]);
    parallelChunks(
        ctx, outer,
        [&](int64_t b, int64_t e) { softmaxRowsF32(px + b * rowLen, py + b * rowLen, e - b, rowLen, log_); },
        std::max<int64_t>(1, 16384 / rowLen));
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool coerce2d_, log_;
};

/// LayerNormalization of `rows` rows of `inner` elements: y = (x - mean) / sqrt(var + eps) * scale + shift
/// per row (the biased variance, as ONNX's function body computes it), with each row's mean and inverse
/// deviation. Three passes over a row while it is in cache, each one vector loop. Issue 24: oneDNN 2.6's
/// layer_normalization took 7-8 us per call on openWakeWord's 128-wide rows (its setup per execution,
/// not the arithmetic); this loop is also as fast as it on BERT's [128, 768] (bench_ops).
[[gnu::target_clones("avx512f", "avx2", "default")]] void layerNormRows(const float* x, float* y, const float* scale,
                                                                          const float* shift, float* mean, float* inv,
                                                                          int64_t rows, int64_t inner, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * inner;
    float* yr = y + r * inner;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < inner; ++i) s += xr[i];
    const float m = s / static_cast<float>(inner);
    float q = 0;
#pragma omp simd reduction(+ : q)
    for (int64_t i = 0; i < inner; ++i) {
      const float d = xr[i] - m;
      q += d * d;
    }
    const float iv = 1.0f / std::sqrt(q / static_cast<float>(inner) + eps);
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) yr[i] = (xr[i] - m) * iv * scale[i] + shift[i];
    mean[r] = m;
    inv[r] = iv;
  }
}

class LayerNormKernel final : public OpKernel {
 public:
  explicit LayerNormKernel(const Node& n)
      : axis_(n.attrInt("axis", -1)), eps_(static_cast<float>(n.attrFloat("epsilon", 1e-5))) {}
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "Scale"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    const Tensor& sc = *in[1];
    const Tensor* b = in.size() > 2 && in[2] && !in[2]->empty() ? in[2] : nullptr;
    if (x.dtype() != DType::Float32 || sc.dtype() != DType::Float32 || (b && b->dtype() != DType::Float32))
      return makeError("float32 only");
    const int64_t axis = normAxis(axis_, x.rank());
    if (axis < 0) return makeError("axis out of range for ", x.describe());
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
    const std::vector<int64_t> normShape(x.shape().begin() + axis, x.shape().end());
    // Scale and B broadcast to the normalised shape; oneDNN wants one value per element of it.
    std::vector<int64_t> bs;
    if (!broadcastShape({sc.shape(), normShape}, bs) || bs != normShape ||
        (b && (!broadcastShape({b->shape(), normShape}, bs) || bs != normShape)))
      return makeError("Scale/B do not broadcast to ", shapeString(normShape));
    std::vector<int64_t> statShape(x.shape().begin(), x.shape().begin() + axis);
    statShape.resize(static_cast<size_t>(x.rank()), 1);
    out.resize(3);
    if (auto s = out[0].ensure(DType::Float32, x.shape()); !s) return s;
    for (size_t i = 1; i < 3; ++i)
      if (auto s = out[i].ensure(DType::Float32, statShape); !s) return s;
    if (x.numElements() == 0) return Status::ok();
    // Scale and B at the normalised size: as they are when they have it, else materialised.
    auto expand = [&](const Tensor* t, Tensor& dst, float def) -> Status {
      if (t && t->numElements() == inner)
        return dst.borrow(DType::Float32, {inner}, const_cast<void*>(t->raw()), t->bytes());
      if (dst.borrowed()) dst = Tensor();
      if (auto s = dst.ensure(DType::Float32, {inner}); !s) return s;
      float* d = ptr<float>(dst);
      if (!t) {
        for (int64_t i = 0; i < inner; ++i) d[i] = def;
        return Status::ok();
      }
      const std::vector<int64_t> st[1] = {broadcastStrides(t->shape(), normShape)};
      const float* p = ptr<float>(*t);
      broadcastWalk<1>(normShape, st, 0, inner, [&](int64_t i, const int64_t* off) { d[i] = p[off[0]]; });
      return Status::ok();
    };
    if (auto s = expand(&sc, scale_, 1.0f); !s) return s;
    if (auto s = expand(b, shift_, 0.0f); !s) return s;
    const float* px = ptr<float>(x);
    float* py = ptr<float>(out[0]);
    const float* scp = ptr<float>(scale_);
    const float* sh = ptr<float>(shift_);
    float* mean = ptr<float>(out[1]);
    float* inv = ptr<float>(out[2]);
    const float eps = eps_;
    parallelChunks(ctx, outer, [&](int64_t b0, int64_t e0) {
      layerNormRows(px + b0 * inner, py + b0 * inner, scp, sh, mean + b0, inv + b0, e0 - b0, inner, eps);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
    return Status::ok();
  }

 private:
  int64_t axis_;
  float eps_;
  Tensor scale_, shift_;
};

// ---------------------------------------------------------------------------------------------------------
// Element-wise activations

/// Relu, LeakyRelu and Clip as one vector loop over the storage rather than a oneDNN eltwise primitive,
/// whose setup per execution (memory objects, stream, argument map) took 2-3 us, more than the arithmetic
/// of a few thousand elements (openWakeWord's 128-wide Relu layers); at any size the loop is bound by
/// memory as the primitive is. NaN stays NaN, as ONNX says (oneDNN's relu and clip map it to a number).
/// y = x < 0 ? 0 : x (Relu), x * (x < 0 ? alpha : 1) (LeakyRelu) or, with `clip`, lo below lo, hi above
/// hi, else x: selects, and for LeakyRelu a select of two constants then one multiply, no branch per
/// element (GCC keeps a conditional multiply scalar under -ftrapping-math).
[[gnu::target_clones("avx512f", "avx2", "default")]] void reluClipF32(const float* x, float* y, int64_t n, bool clip,
                                                                        float alpha, float lo, float hi) {
  if (clip) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      y[i] = v < lo ? lo : v > hi ? hi : v;
    }
  } else if (alpha == 0.0f) {
    // Relu as a select, not a multiply by 0: -inf gives 0, not NaN.
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (x[i] < 0.0f ? alpha : 1.0f);
  }
}

/// One oneDNN eltwise primitive (with an optional eltwise post-op) over the flattened tensor.
class EltwiseKernel final : public OpKernel {
 public:
  EltwiseKernel(dnnl::algorithm alg, float alpha, float beta, bool post = false,
                dnnl::algorithm postAlg = dnnl::algorithm::eltwise_clip, float pa = 0, float pb = 0)
      : alg_(alg), alpha_(alpha), beta_(beta), post_(post), postAlg_(postAlg), pa_(pa), pb_(pb) {}
  /// Clip reads min/max from inputs 1 and 2 (opset >= 11).
  bool clipInputs = false;

  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    return nhwcOut && !in.empty() && in[0] && in[0]->nhwc();
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32) return makeError("float32 only");
    const bool blk = x.nhwc();
    float alpha = alpha_, beta = beta_;
    if (clipInputs) {
      alpha = -INFINITY;
      beta = INFINITY;
      for (size_t i = 1; i < 3; ++i) {
        if (i >= in.size() || !in[i] || in[i]->empty()) continue;
        if (in[i]->numElements() != 1 || in[i]->dtype() != DType::Float32) return makeError("min/max must be scalars");
        (i == 1 ? alpha : beta) = ptr<float>(*in[i])[0];
      }
      if (alpha > beta) alpha = beta;  // min > max: ONNX gives max everywhere
    }
    out.resize(1);
    if (auto s = blk ? out[0].ensureNhwc(x.shape()) : out[0].ensure(DType::Float32, x.shape()); !s) return s;
    const int64_t n = x.numElements();
    if (n == 0) return Status::ok();
    // Relu, LeakyRelu or Clip: one loop over the storage (either layout: element i of the input's storage
    // gives element i of the output's).
    if (!post_ && (alg_ == dnnl::algorithm::eltwise_relu || alg_ == dnnl::algorithm::eltwise_clip_v2)) {
      const float* px = ptr<float>(x);
      float* py = ptr<float>(out[0]);
      const bool clip = alg_ == dnnl::algorithm::eltwise_clip_v2;
      parallelChunks(ctx, n, [&](int64_t b0, int64_t e0) {
        reluClipF32(px + b0, py + b0, e0 - b0, clip, alpha, alpha, beta);
      }, 16384);
      return Status::ok();
    }
    // Plain tensors as one flat run of elements; channels-last ones in their layout.
    if (n != n_ || blk != blk_ || (blk && x.shape() != shape_) || !prim_ || alpha != curA_ || beta != curB_) {
      md_ = blk ? nhwcDesc(x.shape()) : memory::desc({n}, dt::f32, tag::a);
      blk_ = blk;
      shape_ = x.shape();
      dnnl::primitive_attr attr = scratchAttr();
      if (post_) {
        dnnl::post_ops po;
        po.append_eltwise(1.0f, postAlg_, pa_, pb_);
        attr.set_post_ops(po);
      }
      auto d = dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg_, md_, alpha, beta);
      pd_ = dnnl::eltwise_forward::primitive_desc(d, attr, engine());
      prim_ = dnnl::eltwise_forward(pd_);
      n_ = n;
      curA_ = alpha;
      curB_ = beta;
    }
    dnnl::stream s(engine());
    prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, scratchpadFor(pd_)},
                      {DNNL_ARG_SRC, userMem(md_, x)},
                      {DNNL_ARG_DST, memory(md_, engine(), out[0].raw())}});
    s.wait();
    return Status::ok();
  }

 private:
  dnnl::algorithm alg_;
  float alpha_, beta_;
  bool post_;
  dnnl::algorithm postAlg_;
  float pa_, pb_;
  int64_t n_ = -1;
  bool blk_ = false;
  std::vector<int64_t> shape_;
  float curA_ = 0, curB_ = 0;
  memory::desc md_;
  dnnl::eltwise_forward::primitive_desc pd_;
  dnnl::eltwise_forward prim_;
};

float fattr(const Node& n, const char* k, double def) {
  return static_cast<float>(n.attrFloat(k, def));
}

int opsetOf(const Graph& g) {
  return static_cast<int>(g.opsetVersion > 0 ? g.opsetVersion : 17);
}

template <class K, class... A>
Result<std::unique_ptr<OpKernel>> mk(A&&... a) {
  return std::unique_ptr<OpKernel>(std::make_unique<K>(std::forward<A>(a)...));
}

}  // namespace

Status runMatMulKernel(const Node& n, const std::vector<const Tensor*>& in, std::vector<Tensor>& out, std::string& impl,
                       bool forceLoop) {
  auto go = [&](auto& k) {
    k.mm_.forceLoop = forceLoop;
    Status s = k.run(ExecContext{}, in, out);
    impl = k.mm_.implInfo();
    return s;
  };
  if (n.opType == "MatMul") {
    MatMulKernel k;
    return go(k);
  }
  if (n.opType == "Gemm") {
    GemmKernel k(n);
    return go(k);
  }
  return Error{"runMatMulKernel: " + n.opType + " is neither MatMul nor Gemm"};
}

void addOneDnnOps(std::vector<OpEntry>& t) {
  auto f32 = [](const Graph& g, const Node& n) { return checkDTypes(g, n, f32Only()); };
  // Conv alone is the fused kernel of a group of one (ops_fused.cpp).
  t.push_back({"Conv", checkConv, [](const Graph& g, const Node& n) {
                 return makeFusedKernel(g, {static_cast<OpId>(&n - g.nodes.data())});
               }});
  t.push_back(
      {"ConvTranspose", checkConvTranspose, [](const Graph&, const Node& n) { return mk<ConvTransposeKernel>(n); }});
  t.push_back({"MatMul", f32, [](const Graph&, const Node&) { return mk<MatMulKernel>(); }});
  t.push_back({"Gemm", f32, [](const Graph&, const Node& n) { return mk<GemmKernel>(n); }});
  t.push_back({"MaxPool", [](const Graph& g, const Node& n) { return checkPool(g, n, false); },
               [](const Graph&, const Node& n) {
                 if (n.outputs.size() > 1 && n.outputs[1] >= 0) return mk<MaxPoolIndicesKernel>(n);
                 return mk<PoolKernel>(n, dnnl::algorithm::pooling_max, false);
               }});
  t.push_back({"AveragePool",
               [](const Graph& g, const Node& n) {
                 if (n.hasAttr("dilations")) return std::string("dilations are not supported");
                 return checkPool(g, n, false);
               },
               [](const Graph&, const Node& n) {
                 return mk<PoolKernel>(n,
                                       n.attrInt("count_include_pad", 0) ? dnnl::algorithm::pooling_avg_include_padding
                                                                         : dnnl::algorithm::pooling_avg_exclude_padding,
                                       false);
               }});
  t.push_back({"GlobalAveragePool", [](const Graph& g, const Node& n) { return checkPool(g, n, true); },
               [](const Graph&, const Node& n) {
                 return mk<PoolKernel>(n, dnnl::algorithm::pooling_avg_exclude_padding, true);
               }});
  t.push_back({"GlobalMaxPool", [](const Graph& g, const Node& n) { return checkPool(g, n, true); },
               [](const Graph&, const Node& n) { return mk<PoolKernel>(n, dnnl::algorithm::pooling_max, true); }});
  t.push_back({"BatchNormalization",
               [](const Graph& g, const Node& n) {
                 if (auto e = checkDTypes(g, n, f32Only()); !e.empty()) return e;
                 if (n.attrInt("training_mode", 0) != 0) return std::string("training_mode is not supported");
                 if (n.outputs.size() > 1) return std::string("training outputs are not supported");
                 if (n.inputs.size() != 5) return std::string("5 inputs expected");
                 return std::string();
               },
               [](const Graph&, const Node& n) { return mk<BatchNormKernel>(n); }});
  t.push_back({"LRN", f32, [](const Graph&, const Node& n) { return mk<LrnKernel>(n); }});
  t.push_back({"Softmax", f32, [](const Graph& g, const Node& n) { return mk<SoftmaxKernel>(n, opsetOf(g), false); }});
  t.push_back(
      {"LogSoftmax", f32, [](const Graph& g, const Node& n) { return mk<SoftmaxKernel>(n, opsetOf(g), true); }});
  t.push_back({"LayerNormalization",
               [](const Graph& g, const Node& n) {
                 if (auto e = checkDTypes(g, n, f32Only()); !e.empty()) return e;
                 if (n.attrInt("stash_type", 1) != 1) return std::string("stash_type other than float");
                 return std::string();
               },
               [](const Graph&, const Node& n) { return mk<LayerNormKernel>(n); }});

  using A = dnnl::algorithm;
  auto elt = [&](const char* op, std::function<std::unique_ptr<EltwiseKernel>(const Node&)> make) {
    t.push_back({op, f32, [make](const Graph&, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                   return std::unique_ptr<OpKernel>(make(n));
                 }});
  };
  elt("Relu", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_relu, 0.f, 0.f); });
  elt("LeakyRelu",
      [](const Node& n) { return std::make_unique<EltwiseKernel>(A::eltwise_relu, fattr(n, "alpha", 0.01), 0.f); });
  elt("Sigmoid", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_logistic, 0.f, 0.f); });
  elt("Tanh", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_tanh, 0.f, 0.f); });
  elt("Elu",
      [](const Node& n) { return std::make_unique<EltwiseKernel>(A::eltwise_elu, fattr(n, "alpha", 1.0), 0.f); });
  elt("Exp", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_exp, 0.f, 0.f); });
  elt("Sqrt", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_sqrt, 0.f, 0.f); });
  elt("Softplus", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_soft_relu, 0.f, 0.f); });
  elt("HardSwish", [](const Node&) { return std::make_unique<EltwiseKernel>(A::eltwise_hardswish, 0.f, 0.f); });
  elt("Gelu", [](const Node& n) {
    return std::make_unique<EltwiseKernel>(
        n.attrString("approximate", "none") == "tanh" ? A::eltwise_gelu_tanh : A::eltwise_gelu_erf, 0.f, 0.f);
  });
  // Clip: oneDNN for float32, the plain kernel (kernels/ops.h) for integer types (min/max inputs only, opset >= 12).
  t.push_back({"Clip",
               [](const Graph& g, const Node& n) {
                 if (inDType(g, n, 0) == DType::Float32) return checkDTypes(g, n, f32Only());
                 return checkDTypes(g, n,
                                    {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8, DType::UInt16,
                                     DType::UInt32, DType::UInt64});
               },
               [](const Graph& g, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                 if (inDType(g, n, 0) != DType::Float32) return findPlainEntry(n)->make(g, n);
                 auto k = std::make_unique<EltwiseKernel>(A::eltwise_clip_v2, fattr(n, "min", -INFINITY),
                                                          fattr(n, "max", INFINITY));
                 k->clipInputs = !n.hasAttr("min") && !n.hasAttr("max");
                 return std::unique_ptr<OpKernel>(std::move(k));
               }});
}

}  // namespace partex::cpu
