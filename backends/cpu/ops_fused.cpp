// Fused kernels (ir/fusion.h): a Conv, Gemm or MatMul anchor with the operators that follow it, run as
// one oneDNN primitive. BatchNormalization and Mul/Add by per-channel weights are folded into the
// anchor's weights and bias once (and again only when the weights change); a residual Add/Sum is
// oneDNN's sum post-op (the other operand is copied into the output first); activations are eltwise
// post-ops. Conv keeps its output channels-last (oneDNN's preferred layout here) when every consumer reads
// that (nhwcOutputOk), and reads a channels-last input as it is: between consecutive oneDNN operators no
// reorder happens.
// A Conv alone is the group of one: the same kernel.

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <algorithm>
#include <unordered_map>

#include "cpu/conv1x1.h"
#include "cpu/matmul.h"
#include "cpu/onednn_util.h"
#include "cpu/rewrite_kernels.h"
#include "kernels/vecmath.h"

namespace partex::cpu {

namespace {

/// Output rows wider than this (columns of the innermost spatial dim) do not take brgconv (FusedConvKernel).
constexpr int64_t kMaxBrgconvWidth = 1024;

/// Depthwise convolutions of at most this many channels (channels-last in and out) run as the backend's
/// row loop (FusedConvKernel::depthwiseRun); wider ones keep oneDNN's (not measured against it).
constexpr int64_t kMaxOwnDepthwiseChannels = 128;
/// The pixel GEMM path (gemmPixels) for 1x1 convolutions of at most this many input and output channels.
constexpr int64_t kPixelGemmMaxChannels = 128;

/// A grouped 1x1 convolution of at most this many groups may run as a dense one (FusedConvKernel): its
/// multiply-adds grow by the group count.
constexpr int64_t kMaxDensifyGroups = 8;

/// Convolutions of at most this many multiply-adds (1-D and 2-D) run as the backend's own loop
/// (FusedConvKernel::directRun) instead of a oneDNN primitive, whose execution costs a few microseconds
/// of set-up whatever its size (memory objects, stream, argument maps, scratchpad): the whole time of
/// Silero VAD's convolutions over nine frames.
constexpr int64_t kDirectConvMaxMacs = int64_t{1} << 14;

/// One group of a direct convolution: y[m, t] = bias[m] + sum_j w[m, j] * col[j, t] for m < Mg, t < P,
/// where col holds the group's input patches as rows (j = channel * taps + tap, t the output position).
/// Four output rows at a time, each row of col read once for the four and accumulated over the
/// positions (vectorised along t). Below kDirectDotPositions positions, one dot product per output
/// value, vectorised along j instead: Silero VAD's encoder convolution at one frame (64 -> 64 channels,
/// 3 taps) took 15.5 us in loops of one position, against ONNX Runtime's 6.
constexpr int64_t kDirectDotPositions = 4;
[[gnu::target_clones("avx512f", "avx2", "default")]] void directConvGroup(const float* w, const float* bias,
                                                                          const float* col, float* y, int64_t Mg,
                                                                          int64_t J, int64_t P) {
  if (P < kDirectDotPositions) {
    // Sixteen lanes over j in a fixed order (not `omp simd reduction`, whose grouping follows the
    // pointers' alignment: two runs of one model then differed in the last bits, and SSDlite's TopK and
    // NonMaxSuppression turned that into other detections).
    thread_local std::vector<float> colT;
    for (int64_t t = 0; t < P; ++t) {
      const float* c = col;
      if (P > 1) {
        colT.resize(static_cast<size_t>(J));
        for (int64_t j = 0; j < J; ++j) colT[static_cast<size_t>(j)] = col[j * P + t];
        c = colT.data();
      }
      for (int64_t r = 0; r < Mg; ++r) {
        const float* wr = w + r * J;
        V16f acc{};
        int64_t j = 0;
        for (; j + 16 <= J; j += 16) {
          V16f a, b;
          __builtin_memcpy(&a, wr + j, sizeof a);
          __builtin_memcpy(&b, c + j, sizeof b);
          acc += a * b;
        }
        float sum = hSum(acc);
        for (; j < J; ++j) sum += wr[j] * c[j];
        y[r * P + t] = bias[r] + sum;
      }
    }
    return;
  }
  int64_t m = 0;
  for (; m + 4 <= Mg; m += 4) {
    float *y0 = y + m * P, *y1 = y0 + P, *y2 = y1 + P, *y3 = y2 + P;
    const float *w0 = w + m * J, *w1 = w0 + J, *w2 = w1 + J, *w3 = w2 + J;
    for (int64_t t = 0; t < P; ++t) {
      y0[t] = bias[m];
      y1[t] = bias[m + 1];
      y2[t] = bias[m + 2];
      y3[t] = bias[m + 3];
    }
    for (int64_t j = 0; j < J; ++j) {
      const float* c = col + j * P;
      const float a0 = w0[j], a1 = w1[j], a2 = w2[j], a3 = w3[j];
#pragma omp simd
      for (int64_t t = 0; t < P; ++t) {
        y0[t] += a0 * c[t];
        y1[t] += a1 * c[t];
        y2[t] += a2 * c[t];
        y3[t] += a3 * c[t];
      }
    }
  }
  for (; m < Mg; ++m) {
    float* yr = y + m * P;
    const float* wr = w + m * J;
    for (int64_t t = 0; t < P; ++t) yr[t] = bias[m];
    for (int64_t j = 0; j < J; ++j) {
      const float a = wr[j];
      const float* c = col + j * P;
#pragma omp simd
      for (int64_t t = 0; t < P; ++t) yr[t] += a * c[t];
    }
  }
}

bool startsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

/// One operator after the anchor.
struct Step {
  enum Kind { BatchNorm, MulC, AddC, Sum, Elt } kind = Elt;
  size_t in = 0;  ///< Kernel input of its first parameter (BatchNorm: scale, B, mean, var from here).
  float eps = 1e-5f;
  dnnl::algorithm alg = dnnl::algorithm::eltwise_relu;
  float alpha = 0, beta = 0;
  bool clipInputs = false;   ///< Clip with min/max inputs (opset >= 11) at in, in + 1 (kNone: nullptr).
  size_t clipCount = 0;      ///< How many of those inputs the node has.
  bool hardSigmoid = false;  ///< linear(alpha, beta) then clip to [0, 1].
  char scalarOp = 0;         ///< '*', '+', '-', '/': linear post-op by the scalar weight at `in`.
};

float fattr(const Node& n, const char* k, double def) {
  return static_cast<float>(n.attrFloat(k, def));
}

/// The steps of the operators after the anchor, with their parameters' places among the kernel inputs
/// (FusedGroup::inputs order: anchor inputs first).
/// `fromAnchor`: the anchor is a step too (a per-channel affine anchor, whose input 0 is the tensor).
Result<std::vector<Step>> buildSteps(const Graph& g, const std::vector<OpId>& ops, bool fromAnchor = false) {
  std::vector<Step> steps;
  const Node& anchor = g.nodes[static_cast<size_t>(ops[0])];
  size_t cursor = fromAnchor ? 1 : anchor.inputs.size();
  ValueId cur = fromAnchor ? anchor.inputs[0] : anchor.outputs[0];
  using A = dnnl::algorithm;
  bool afterFold = false;  // a step other than a foldable affine one was taken
  for (size_t i = fromAnchor ? 0 : 1; i < ops.size(); ++i) {
    const Node& n = g.nodes[static_cast<size_t>(ops[i])];
    Step st;
    st.in = cursor;
    if (n.opType == "Add" && i + 3 < ops.size() && hardSwishOf(g, cur) ==
                                   std::vector<OpId>{ops[i], ops[i + 1], ops[i + 2], ops[i + 3]}) {
      // x * Clip(x + 3, 0, 6) / 6: one hardswish post-op; its constants are no kernel inputs.
      st.alg = A::eltwise_hardswish;
      steps.push_back(st);
      afterFold = true;
      cur = g.nodes[static_cast<size_t>(ops[i + 3])].outputs[0];
      i += 3;
      continue;
    }
    if (n.opType == "Sigmoid" && i + 1 < ops.size()) {  // x * Sigmoid(x): the Mul that follows is part of it
      const Node& m = g.nodes[static_cast<size_t>(ops[i + 1])];
      st.alg = A::eltwise_swish;
      st.alpha = 1.0f;
      steps.push_back(st);
      afterFold = true;
      cur = m.outputs[0];
      ++i;
      continue;
    }
    ValueId other = kNone;
    for (ValueId v : n.inputs)
      if (v != cur) other = v;
    cursor += n.inputs.size() - 1;
    const std::string& t = n.opType;
    if (t == "BatchNormalization") {
      st.kind = Step::BatchNorm;
      st.eps = fattr(n, "epsilon", 1e-5);
    } else if ((t == "Mul" || t == "Add" || t == "Sub" || t == "Div") && other >= 0 &&
               g.values[static_cast<size_t>(other)].isWeight && afterFold) {
      // After an activation or a sum (ir/fusion.h): alpha * x + beta by the scalar.
      st.alg = A::eltwise_linear;
      st.scalarOp = t == "Mul" ? '*' : t == "Add" ? '+' : t == "Sub" ? '-' : '/';
    } else if (t == "Mul" || t == "Add" || t == "Sum") {
      const bool weight = other >= 0 && g.values[static_cast<size_t>(other)].isWeight;
      st.kind = !weight ? Step::Sum : t == "Mul" ? Step::MulC : Step::AddC;
    } else if (t == "Relu") {
      st.alg = A::eltwise_relu;
    } else if (t == "LeakyRelu") {
      st.alg = A::eltwise_relu;
      st.alpha = fattr(n, "alpha", 0.01);
    } else if (t == "Sigmoid") {
      st.alg = A::eltwise_logistic;
    } else if (t == "Tanh") {
      st.alg = A::eltwise_tanh;
    } else if (t == "Elu") {
      st.alg = A::eltwise_elu;
      st.alpha = fattr(n, "alpha", 1.0);
    } else if (t == "HardSigmoid") {
      st.alg = A::eltwise_linear;
      st.alpha = fattr(n, "alpha", 0.2);
      st.beta = fattr(n, "beta", 0.5);
      st.hardSigmoid = true;
    } else if (t == "HardSwish") {
      st.alg = A::eltwise_hardswish;
    } else if (t == "Softplus") {
      st.alg = A::eltwise_soft_relu;
    } else if (t == "Abs") {
      st.alg = A::eltwise_abs;
    } else if (t == "Sqrt") {
      st.alg = A::eltwise_sqrt;
    } else if (t == "Exp") {
      st.alg = A::eltwise_exp;
    } else if (t == "Clip") {
      st.alg = A::eltwise_clip_v2;
      st.alpha = fattr(n, "min", -std::numeric_limits<float>::infinity());
      st.beta = fattr(n, "max", std::numeric_limits<float>::infinity());
      st.clipInputs = !n.hasAttr("min") && !n.hasAttr("max");
      st.clipCount = n.inputs.size() - 1;
    } else {
      return makeError("cannot fuse ", t, " '", n.name, "'");
    }
    steps.push_back(st);
    afterFold = afterFold || !(st.kind == Step::BatchNorm || st.kind == Step::MulC || st.kind == Step::AddC);
    cur = n.outputs[0];
  }
  return steps;
}

/// Folds the affine steps into per-channel scale and shift (shift starts as the bias). Returns the
/// number of steps folded (the leading affine ones).
Status foldAffine(const std::vector<Step>& steps, const std::vector<const Tensor*>& in, int64_t channels,
                  std::vector<float>& scale, std::vector<float>& shift) {
  auto at = [&](size_t i, int64_t m) -> float {
    const Tensor* t = i < in.size() ? in[i] : nullptr;
    const float* p = static_cast<const float*>(t->raw());
    return t->numElements() == 1 ? p[0] : p[m];
  };
  for (const Step& st : steps) {
    if (st.kind == Step::BatchNorm) {
      for (size_t k = 0; k < 4; ++k) {
        const Tensor* t = st.in + k < in.size() ? in[st.in + k] : nullptr;
        if (!t || t->dtype() != DType::Float32 || t->numElements() != channels)
          return makeError("BatchNormalization parameter ", std::to_string(k + 1), " must have ",
                           std::to_string(channels), " float32 values");
      }
      for (int64_t m = 0; m < channels; ++m) {
        const float s = at(st.in, m) / std::sqrt(at(st.in + 3, m) + st.eps);
        scale[static_cast<size_t>(m)] *= s;
        shift[static_cast<size_t>(m)] = shift[static_cast<size_t>(m)] * s + (at(st.in + 1, m) - at(st.in + 2, m) * s);
      }
    } else if (st.kind == Step::MulC || st.kind == Step::AddC) {
      const Tensor* t = st.in < in.size() ? in[st.in] : nullptr;
      if (!t || t->dtype() != DType::Float32 || (t->numElements() != 1 && t->numElements() != channels))
        return makeError("the folded operand must be a float32 scalar or have one value per channel");
      for (int64_t m = 0; m < channels; ++m) {
        const float c = at(st.in, m);
        if (st.kind == Step::MulC) {
          scale[static_cast<size_t>(m)] *= c;
          shift[static_cast<size_t>(m)] *= c;
        } else {
          shift[static_cast<size_t>(m)] += c;
        }
      }
    } else {
      break;
    }
  }
  return Status::ok();
}

bool isFold(const Step& s) {
  return s.kind == Step::BatchNorm || s.kind == Step::MulC || s.kind == Step::AddC;
}

/// An activation step's alpha and beta: its attributes, or for Clip with min/max inputs (opset >= 11)
/// those inputs' values (absent: unbounded; min above max: max everywhere, as ONNX says).
Status eltParams(const Step& st, const std::vector<const Tensor*>& in, float& a, float& b) {
  a = st.alpha;
  b = st.beta;
  if (st.scalarOp) {
    const Tensor* t = st.in < in.size() ? in[st.in] : nullptr;
    if (!t || t->numElements() != 1 || t->dtype() != DType::Float32) return makeError("the scalar operand must be one float32");
    const float v = static_cast<const float*>(t->raw())[0];
    a = st.scalarOp == '*' ? v : st.scalarOp == '/' ? 1.0f / v : 1.0f;
    b = st.scalarOp == '+' ? v : st.scalarOp == '-' ? -v : 0.0f;
    return Status::ok();
  }
  if (!st.clipInputs) return Status::ok();
  a = -std::numeric_limits<float>::infinity();
  b = std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < st.clipCount; ++k) {
    const Tensor* t = st.in + k < in.size() ? in[st.in + k] : nullptr;
    if (!t || t->empty()) continue;
    if (t->numElements() != 1 || t->dtype() != DType::Float32) return makeError("Clip min/max must be scalars");
    (k == 0 ? a : b) = static_cast<const float*>(t->raw())[0];
  }
  if (a > b) a = b;
  return Status::ok();
}

/// The post-ops of the steps after the folded ones, appended to `*po` (none: only `key` and
/// `sumInput`, without making oneDNN objects, for a run that finds its primitive or its direct loop
/// made already); `sumInput` receives the residual's input (or -1). Clip bounds given as inputs are
/// read here (they are weights).
Status postOpsInto(const std::vector<Step>& steps, const std::vector<const Tensor*>& in, int& sumInput,
                   std::vector<float>& key, dnnl::post_ops* po) {
  sumInput = -1;
  bool lastScalar = false;  // the previous post-op is a scalar step's linear (composed with this one)
  float la = 1, lb = 0;
  auto flush = [&] {
    if (!lastScalar) return;
    if (po) po->append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, la, lb);
    key.push_back(static_cast<float>(static_cast<int>(dnnl::algorithm::eltwise_linear)));
    key.push_back(la);
    key.push_back(lb);
    lastScalar = false;
  };
  for (const Step& st : steps) {
    if (isFold(st)) continue;
    if (st.kind == Step::Sum) {
      flush();
      if (po) po->append_sum(1.0f);
      sumInput = static_cast<int>(st.in);
      key.push_back(-1);
      continue;
    }
    float a = 0, b = 0;
    if (auto e = eltParams(st, in, a, b); !e) return e;
    if (st.scalarOp) {
      // Consecutive scalar steps are one linear post-op (oneDNN 2.6 gives two linears the first's
      // parameters): a * (la * x + lb) + b.
      if (lastScalar) {
        la *= a;
        lb = lb * a + b;
      } else {
        la = a;
        lb = b;
      }
      lastScalar = true;
      continue;
    }
    flush();
    // oneDNN's clip_v2 needs finite bounds.
    if (st.alg == dnnl::algorithm::eltwise_clip_v2) {
      a = std::max(a, -std::numeric_limits<float>::max());
      b = std::min(b, std::numeric_limits<float>::max());
    }
    if (po) po->append_eltwise(1.0f, st.alg, a, b);
    if (po && st.hardSigmoid) po->append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 1.0f);
    key.push_back(static_cast<float>(static_cast<int>(st.alg)));
    key.push_back(a);
    key.push_back(b);
  }
  flush();
  return Status::ok();
}

/// postOpsInto with a new post-ops object.
Result<dnnl::post_ops> postOps(const std::vector<Step>& steps, const std::vector<const Tensor*>& in, int& sumInput,
                               std::vector<float>& key) {
  dnnl::post_ops po;
  if (auto st = postOpsInto(steps, in, sumInput, key, &po); !st) return Error{st.message()};
  return po;
}

/// Copies the residual `r` into `dst` (its layout or another).
void loadResidual(dnnl::stream& s, const Tensor& r, memory& dst, Reorder& reo) {
  memory rm(descOf(r), engine(), const_cast<void*>(r.raw()));
  if (rm.get_desc() == dst.get_desc()) {
    std::memcpy(dst.get_data_handle(), r.raw(), dst.get_desc().get_size());
    return;
  }
  if (plainToNhwcPair(rm.get_desc(), dst.get_desc())) {  // a row-major residual (a GPU's output)
    plainToNhwc(rm, dst);
    return;
  }
  reo.run(s, rm, dst);
}

// ---------------------------------------------------------------------------------------------------------

bool plainElt(const Step& st);
void applyElt(const Step& st, float a, float b, float* y, int64_t n);
FastAct fastActOf(const Step& st);

class FusedConvKernel final : public OpKernel {
 public:
  FusedConvKernel(const Node& anchor, std::vector<Step> steps)
      : node_(anchor), steps_(std::move(steps)), anchorIn_(anchor.inputs.size()) {}

  bool takesNhwc(const std::vector<const Tensor*>&) const override { return true; }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "W"); !e.empty() && !((weights_ || direct_ || pix_) && in.size() > 1 && in[1]))
      return Error{e};
    const Tensor& x = *in[0];
    const Tensor& w = *in[1];
    // The caller may give up the weights once this kernel keeps its own folded copy (keepsCopy): the
    // kernel then runs on that copy and W's shape as it was.
    const bool released = w.empty() && (weights_ || direct_ || pix_);
    const std::vector<int64_t>& ws = released ? wShape_ : w.shape();
    const Tensor* b = anchorIn_ > 2 && in.size() > 2 && in[2] && !in[2]->empty() ? in[2] : nullptr;
    if (x.dtype() != DType::Float32 || (!released && w.dtype() != DType::Float32) || (b && b->dtype() != DType::Float32))
      return makeError("Conv: float32 only");
    const int64_t r = x.rank();
    if (r < 3 || r > 5 || static_cast<int64_t>(ws.size()) != r)
      return makeError("Conv: X ", x.describe(), " and W ", shapeString(ws));
    const int64_t group = node_.attrInt("group", 1);
    const int64_t C = x.dim(1), M = ws[0];
    if (group <= 0 || C != ws[1] * group || M % group != 0)
      return makeError("Conv: channels of X ", x.describe(), " do not match W ", shapeString(ws), " with group ",
                       std::to_string(group));
    if (b && (b->rank() != 1 || b->dim(0) != M)) return makeError("Conv: bias ", b->describe());
    // This run's keys in vectors kept between runs (no allocation once they have grown); the post-ops
    // object is made only with a new primitive (a small convolution's set-up was most of its time).
    int sumIn = -1;
    std::vector<float>& opsKey = opsKeyRun_;
    opsKey.clear();
    if (auto st = postOpsInto(steps_, in, sumIn, opsKey, nullptr); !st) return st;
    std::vector<int64_t>& key = keyRun_;
    key.assign(x.shape().begin(), x.shape().end());
    key.insert(key.end(), ws.begin(), ws.end());
    key.push_back(x.nhwc() ? 1 : 0);  // the own channels-last paths read channels-last input only
    key.push_back(nhwcOut ? 1 : 0);   // (and the depthwise one writes it only)
    if (key != key_ || opsKey != opsKey_ || (!prim_ && !direct_)) {
      std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
      std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
      if (node_.hasAttr("kernel_shape") && node_.attrInts("kernel_shape") != kernel)
        return makeError("Conv: kernel_shape does not match W ", shapeString(ws));
      Window win;
      if (auto e = windowGeometry(node_, spatial, kernel, false, win); !e.empty()) return makeError("Conv: ", e);
      outShape_ = {x.dim(0), M};
      outShape_.insert(outShape_.end(), win.out.begin(), win.out.end());
      // A small convolution runs as the backend's own loop (no primitive): its multiply-adds, and every
      // step after it one the loop applies itself (the folded affine ones, sums, plainElt's activations).
      int64_t macs = x.dim(0) * M * (C / group);
      for (size_t i = 2; i < ws.size(); ++i) macs *= ws[i];
      for (int64_t o : win.out) macs *= o;
      // 2-D with one group, or four or more output channels per group: a depthwise 2-D filter over
      // many groups would gather as many patch values as it multiplies, row by short row (slower than
      // oneDNN's). The ONNX conformance Conv cases (one group) take this path.
      bool direct = (r == 3 || (r == 4 && (group == 1 || M / group >= 4))) && macs <= kDirectConvMaxMacs;
      for (const Step& st : steps_)
        direct = direct && (isFold(st) || st.kind == Step::Sum || (st.kind == Step::Elt && plainElt(st)));
      if (direct) {
        if (released && !direct_) return makeError("Conv: the weights were given up but the input shape changed");
        if (!direct_) wDir_.clear();
        direct_ = true;
        pix_ = false;
        wT_.clear();
        win_ = win;
        prim_ = dnnl::convolution_forward();
        weights_ = memory();
        key_ = key;
        opsKey_ = opsKey;
        sumIn_ = sumIn;
      }
      // A 1x1 convolution of one group over channels-last pixels (stride 1, no padding) whose chain the
      // pixel loop applies: a blocked product of the pixel rows with the weights (gemmPixels), where
      // oneDNN 2.6's brgconv took 1.5-2.4x ONNX Runtime's time on few channels (issue 24, yolox_nano).
      // A depthwise 2-D convolution of at most kMaxOwnDepthwiseChannels channels, channels-last in and
      // out: the backend's row loop (depthwiseRowNhwc), where oneDNN took 1.5-2.2x ONNX Runtime's time
      // on yolox_nano's 16-64 channels.
      bool fastChain = true;
      for (const Step& st : steps_)
        fastChain = fastChain && (isFold(st) || st.kind == Step::Sum || (st.kind == Step::Elt && fastActOf(st) != FastAct::None));
      // A row-major input (a model input, a GPU's output) is converted to channels-last first
      // (plainToNhwc into xConv_), so that it takes the same path, and gives the same values, as fed
      // channels-last: the path its profile measured (issue 25).
      const bool own = !direct && fastChain && pixelGemmFast() && r == 4;
      // At most kPixelGemmMaxChannels input and output channels: gemmPixels keeps a pixel's whole
      // reduction in registers without blocking it for the cache, and on ResNet-50's 256-2048 channel
      // 1x1 convolutions oneDNN was faster (one core: 82.7-86.4 ms with the pixel path on every 1x1,
      // 78.9 with it up to 128 channels, ONNX Runtime 76; yolox_nano 17.0-17.1, 17.2-17.8 and 17.4-18.3
      // with no limit, 128 and 64; 2026-11-27, docs/benchmarks.md).
      bool pix = own && group == 1 && ws[2] == 1 && ws[3] == 1 && win.strides == memory::dims{1, 1} &&
                 C <= kPixelGemmMaxChannels && M <= kPixelGemmMaxChannels;
      for (size_t i = 0; pix && i < win.padL.size(); ++i) pix = win.padL[i] == 0 && win.padR[i] == 0;
      const bool dw = own && !pix && nhwcOut && group == C && M == C && C % kPixelGemmLanes == 0 &&
                      C <= kMaxOwnDepthwiseChannels;
      if (pix || dw) {
        if (released && (!pix_ || dw_ != dw)) return makeError("Conv: the weights were given up but the input shape changed");
        if (!pix_ || dw_ != dw) wT_.clear();
        pix_ = true;
        dw_ = dw;
        win_ = win;
        direct_ = false;
        wDir_.clear();
        prim_ = dnnl::convolution_forward();
        weights_ = memory();
        key_ = key;
        opsKey_ = opsKey;
        sumIn_ = sumIn;
      }
    }
    if (direct_ && key == key_ && opsKey == opsKey_) {
      if (!released)
        if (auto st = prepareDirectWeights(in, w, b, M); !st) return st;
      return directRun(in, x, M, group, out);
    }
    if (pix_ && key == key_ && opsKey == opsKey_) {
      if (!released)
        if (auto st = preparePixelWeights(in, w, b, M); !st) return st;
      const Tensor* xs = &x;
      if (!x.nhwc()) {
        if (auto st = xConv_.ensureNhwc(x.shape()); !st) return st;
        plainToNhwc(static_cast<const float*>(x.raw()), static_cast<float*>(xConv_.raw()), x.dim(0), x.dim(1),
                    x.dim(2) * x.dim(3), ctx.threads);
        xs = &xConv_;
      }
      return dw_ ? depthwiseRun(ctx, in, *xs, out) : pixelRun(ctx, in, *xs, M, out);
    }
    if (key != key_ || opsKey != opsKey_ || !prim_) {
      std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
      std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
      Window win;
      if (auto e = windowGeometry(node_, spatial, kernel, false, win); !e.empty()) return makeError("Conv: ", e);
      if (released && (direct_ || pix_)) return makeError("Conv: the weights were given up but the input shape changed");
      direct_ = false;
      wDir_.clear();
      pix_ = false;
      wT_.clear();
      outShape_ = {x.dim(0), M};
      outShape_.insert(outShape_.end(), win.out.begin(), win.out.end());
      memory::dims wd = toDims(ws);
      if (group > 1) {
        wd = {group, M / group};
        wd.insert(wd.end(), ws.begin() + 1, ws.end());
        userW_ = memory::desc(wd, dt::f32, r == 3 ? tag::goiw : r == 4 ? tag::goihw : tag::goidhw);
      } else {
        userW_ = memory::desc(wd, dt::f32, plainTag(static_cast<size_t>(r)));
      }
      auto anyX = memory::desc(toDims(x.shape()), dt::f32, tag::any);
      auto anyW = memory::desc(wd, dt::f32, tag::any);
      auto anyY = memory::desc(toDims(outShape_), dt::f32, tag::any);
      auto bd = memory::desc({M}, dt::f32, tag::a);
      dnnl::primitive_attr attr = scratchAttr();
      std::vector<float> unusedKey;
      auto po = postOps(steps_, in, sumIn, unusedKey);
      if (!po) return Error{po.message()};
      attr.set_post_ops(*po);
      auto d = dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               anyX, anyW, bd, anyY, win.strides, win.dil, win.padL, win.padR);
      pd_ = dnnl::convolution_forward::primitive_desc(d, attr, engine());
      if (outShape_.back() > kMaxBrgconvWidth && startsWith(pd_.impl_info_str(), "brgconv")) {
        // oneDNN 2.6's brgconv builds state per output column of a row (about 1 KiB and 25 us to create
        // each: 23 MiB and 0.6 s for the 21,922 columns of a 1-D convolution of basic-pitch's CQT), held
        // as long as the primitive is: the next optimised implementation instead, where there is one.
        bool other = false;
        while (!other && pd_.next_impl())
          other = !startsWith(pd_.impl_info_str(), "brgconv") && !startsWith(pd_.impl_info_str(), "ref");
        if (!other) pd_ = dnnl::convolution_forward::primitive_desc(d, attr, engine());
      }
      // A grouped 1x1 convolution that oneDNN 2.6 runs through its gemm or reference code (few channels
      // per group: ShuffleNet's 24 -> 112 in 4 groups of 6, row-major with reorders on both sides) runs
      // as one dense 1x1 convolution whose weights are zero off each group's block (prepareWeights): at
      // most kMaxDensifyGroups times the multiply-adds, through the channels-last brgconv the
      // neighbouring convolutions use, so no reorder on either side.
      dense_ = false;
      if (group > 1 && group <= kMaxDensifyGroups && r == 4 && ws[2] == 1 && ws[3] == 1 &&
          (startsWith(pd_.impl_info_str(), "x64:gemm") || startsWith(pd_.impl_info_str(), "ref"))) {
        const memory::dims dwd{M, C, 1, 1};
        auto dd = dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                  dnnl::algorithm::convolution_direct, anyX,
                                                  memory::desc(dwd, dt::f32, tag::any), bd, anyY, win.strides,
                                                  win.dil, win.padL, win.padR);
        auto dpd = dnnl::convolution_forward::primitive_desc(dd, attr, engine());
        if (startsWith(dpd.impl_info_str(), "brgconv")) {
          pd_ = dpd;
          userW_ = memory::desc(dwd, dt::f32, tag::abcd);
          dense_ = true;
        }
      }
      prim_ = dnnl::convolution_forward(pd_);
      if (released) return makeError("Conv: the weights were given up but the input shape changed");
      weights_ = memory();
      key_ = key;
      opsKey_ = opsKey;
      sumIn_ = sumIn;
    }
    dnnl::stream s(engine());
    if (!released)
      if (auto st = prepareWeights(s, in, w, b, M); !st) return st;
    // Source: as it comes when the primitive reads that layout, else reordered into scratch.
    memory xm = toLayout(s, userMem(descOf(x), x), pd_.src_desc(), srcReorder_);
    // Destination: the output tensor itself when the primitive writes its layout (channels-last where allowed).
    out.resize(1);
    const memory::desc want = pd_.dst_desc();
    const bool blk = nhwcOut && outShape_.size() == 4 && want == nhwcDesc(outShape_);
    if (auto st = blk ? out[0].ensureNhwc(outShape_) : out[0].ensure(DType::Float32, outShape_); !st) return st;
    memory om(descOf(out[0]), engine(), out[0].raw());
    memory dm = om;
    if (om.get_desc() != want) {
      dm = threadScratch(1, want);
    }
    if (sumIn_ >= 0) {
      const Tensor* res = static_cast<size_t>(sumIn_) < in.size() ? in[static_cast<size_t>(sumIn_)] : nullptr;
      if (!res || res->dtype() != DType::Float32 || res->shape() != outShape_)
        return makeError("the residual operand must be float32 ", shapeString(outShape_));
      loadResidual(s, *res, dm, resReorder_);
    }
    // The argument map is the kernel's own, its entries replaced: a map built per call cost five node
    // allocations, a sizeable share of a small convolution's 10-30 us (Ultraface's heads).
    args_[DNNL_ARG_SCRATCHPAD] = scratchpadFor(pd_);
    args_[DNNL_ARG_SRC] = xm;
    args_[DNNL_ARG_WEIGHTS] = weights_;
    args_[DNNL_ARG_BIAS] = bias_;
    args_[DNNL_ARG_DST] = dm;
    prim_.execute(s, args_);
    if (dm != om && !blk && outShape_.size() == 4 && want == nhwcDesc(outShape_)) {
      // Channels-last to row-major (a reader that takes no channels-last tensor: yolox_nano's heads
      // before their Concat): the Transpose kernel's tiles, about twice as fast as oneDNN 2.6's reorder
      // (jit:uni: 189 us for [1,80,52,52], 40% of the convolution's own time).
      s.wait();
      const int64_t N = outShape_[0], C = outShape_[1], S = outShape_[2] * outShape_[3];
      const auto* src = static_cast<const float*>(dm.get_data_handle());
      auto* dst = static_cast<float*>(out[0].raw());
      for (int64_t n = 0; n < N; ++n) transposePlane32(src + n * S * C, C, dst + n * C * S, S, C, S);
      return Status::ok();
    }
    if (dm != om) dstReorder_.run(s, dm, om);
    s.wait();
    return Status::ok();
  }

 private:
  /// The direct path's weights: W with the folded affine steps' scale per output channel (rows of
  /// C/group * taps, ONNX's own layout), and the bias with their shift; again when W changes.
  Status prepareDirectWeights(const std::vector<const Tensor*>& in, const Tensor& w, const Tensor* b, int64_t M) {
    const uint64_t h = sampleHash(w);
    if (!wDir_.empty() && wPtr_ == w.raw() && wHash_ == h) return Status::ok();
    std::vector<float> scale(static_cast<size_t>(M), 1.0f), shift(static_cast<size_t>(M), 0.0f);
    if (b) std::memcpy(shift.data(), b->raw(), static_cast<size_t>(M) * sizeof(float));
    if (auto st = foldAffine(steps_, in, M, scale, shift); !st) return st;
    const int64_t row = w.numElements() / M;
    wDir_.resize(static_cast<size_t>(w.numElements()));
    const float* pw = static_cast<const float*>(w.raw());
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < row; ++k)
        wDir_[static_cast<size_t>(m * row + k)] = pw[m * row + k] * scale[static_cast<size_t>(m)];
    biasDir_ = std::move(shift);
    wPtr_ = w.raw();
    wHash_ = h;
    wShape_ = w.shape();
    return Status::ok();
  }

  /// A small convolution without oneDNN: per batch and group, the input patches gathered once
  /// (im2col; zeros in the padding), the products over them (directConvGroup), then each output row's
  /// steps in order. Row-major output; the input and the residual may be channels-last.
  Status directRun(const std::vector<const Tensor*>& in, const Tensor& x, int64_t M, int64_t group,
                   std::vector<Tensor>& out) {
    out.resize(1);
    if (auto st = out[0].ensure(DType::Float32, outShape_); !st) return st;
    const float* res = nullptr;
    bool resNhwc = false;
    if (auto st = chainOperands(in, res, resNhwc); !st) return st;
    const std::vector<std::pair<float, float>>& params = eltParamsRun_;
    const bool twoD = x.rank() == 4;
    const int64_t N = x.dim(0), C = x.dim(1), H = twoD ? x.dim(2) : 1, W = x.shape().back();
    const int64_t OH = twoD ? outShape_[2] : 1, OW = outShape_.back();
    const int64_t kh = twoD ? wShape_[2] : 1, kw = wShape_.back();
    const int64_t sh = twoD ? win_.strides[0] : 1, sw = win_.strides.back();
    const int64_t dh = twoD ? win_.dil[0] + 1 : 1, dw = win_.dil.back() + 1;  // oneDNN's dilation is d - 1
    const int64_t ph = twoD ? win_.padL[0] : 0, pw = win_.padL.back();
    const int64_t P = OH * OW, Cg = C / group, Mg = M / group, taps = kh * kw, J = Cg * taps;
    const float* px = static_cast<const float*>(x.raw());
    const bool xNhwc = x.nhwc();
    float* py = static_cast<float*>(out[0].raw());
    thread_local std::vector<float> col;
    col.resize(static_cast<size_t>(J * P));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group; ++g) {
        // im2col: row j = (c, ky, kx) of the group holds x at every output position, zeros in the padding;
        // per output row, the positions whose input column lies inside the image form one range.
        for (int64_t c = 0; c < Cg; ++c) {
          const int64_t ch = g * Cg + c;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              float* row = col.data() + ((c * kh + ky) * kw + kx) * P;
              const int64_t off = kx * dw - pw;  // input column of output column ox: ox * sw + off
              int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
              int64_t hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
              lo = std::min(lo, OW);
              hi = std::min(std::max(hi, lo), OW);
              for (int64_t oy = 0; oy < OH; ++oy) {
                float* dst = row + oy * OW;
                const int64_t iy = oy * sh - ph + ky * dh;
                if (iy < 0 || iy >= H) {
                  std::fill(dst, dst + OW, 0.0f);
                  continue;
                }
                std::fill(dst, dst + lo, 0.0f);
                std::fill(dst + hi, dst + OW, 0.0f);
                if (xNhwc) {
                  const float* src = px + (n * H + iy) * W * C + ch;
                  for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[(ox * sw + off) * C];
                } else {
                  const float* src = px + ((n * C + ch) * H + iy) * W;
                  if (sw == 1)
                    std::copy(src + lo + off, src + hi + off, dst + lo);
                  else
                    for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * sw + off];
                }
              }
            }
        }
        float* yg = py + (n * M + g * Mg) * P;
        directConvGroup(wDir_.data() + g * Mg * J, biasDir_.data() + g * Mg, col.data(), yg, Mg, J, P);
        for (int64_t m = 0; m < Mg; ++m) {
          const int64_t mm = g * Mg + m;
          float* row = yg + m * P;
          for (size_t i = 0; i < steps_.size(); ++i) {
            const Step& st = steps_[i];
            if (isFold(st)) continue;
            if (st.kind == Step::Sum) {
              for (int64_t t = 0; t < P; ++t) row[t] += resNhwc ? res[(n * P + t) * M + mm] : res[(n * M + mm) * P + t];
              continue;
            }
            applyElt(st, params[i].first, params[i].second, row, P);
          }
        }
      }
    return Status::ok();
  }

  /// The own channels-last paths' weights: W with the folded affine steps' scale per output channel,
  /// transposed to [C][Mp] (Mp: M rounded up to kPixelGemmLanes, zeros beyond M; the depthwise path's
  /// [taps][M]), and the bias with their shift (Mp values); again when W changes.
  Status preparePixelWeights(const std::vector<const Tensor*>& in, const Tensor& w, const Tensor* b, int64_t M) {
    const uint64_t h = sampleHash(w);
    if (!wT_.empty() && wPtr_ == w.raw() && wHash_ == h) return Status::ok();
    std::vector<float> scale(static_cast<size_t>(M), 1.0f), shift(static_cast<size_t>(M), 0.0f);
    if (b) std::memcpy(shift.data(), b->raw(), static_cast<size_t>(M) * sizeof(float));
    if (auto st = foldAffine(steps_, in, M, scale, shift); !st) return st;
    // (Depthwise: W [M][1][kh][kw] as [taps][M], each tap's weights over the channels, unpadded.)
    const int64_t C = w.numElements() / M, Mp = dw_ ? M : (M + kPixelGemmLanes - 1) / kPixelGemmLanes * kPixelGemmLanes;
    wT_.assign(static_cast<size_t>(C * Mp), 0.0f);
    const float* pw = static_cast<const float*>(w.raw());
    for (int64_t m = 0; m < M; ++m)
      for (int64_t c = 0; c < C; ++c) wT_[static_cast<size_t>(c * Mp + m)] = pw[m * C + c] * scale[static_cast<size_t>(m)];
    bT_.assign(static_cast<size_t>(Mp), 0.0f);
    std::copy(shift.begin(), shift.end(), bT_.begin());
    wPtr_ = w.raw();
    wHash_ = h;
    wShape_ = w.shape();
    return Status::ok();
  }

  /// The residual operand of a Sum step (res, its layout) and the activations' parameters (eltParamsRun_)
  /// for applyChain.
  Status chainOperands(const std::vector<const Tensor*>& in, const float*& res, bool& resNhwc) {
    if (sumIn_ >= 0) {
      const Tensor* rt = static_cast<size_t>(sumIn_) < in.size() ? in[static_cast<size_t>(sumIn_)] : nullptr;
      if (!rt || rt->dtype() != DType::Float32 || rt->shape() != outShape_)
        return makeError("the residual operand must be float32 ", shapeString(outShape_));
      res = static_cast<const float*>(rt->raw());
      resNhwc = rt->nhwc();
    }
    std::vector<std::pair<float, float>>& params = eltParamsRun_;
    params.assign(steps_.size(), {0.0f, 0.0f});
    for (size_t i = 0; i < steps_.size(); ++i)
      if (steps_[i].kind == Step::Elt)
        if (auto e = eltParams(steps_[i], in, params[i].first, params[i].second); !e) return e;
    return Status::ok();
  }

  /// The chain's steps in order over `rows` channels-last pixels of M channels at yb: pixels s0.. of
  /// image n (S pixels an image) in the output, whose residual `res` is channels-last or row-major.
  void applyChain(float* yb, int64_t rows, int64_t M, const float* res, bool resNhwc, int64_t n, int64_t s0, int64_t S,
                  const std::vector<std::pair<float, float>>& params) const {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& st = steps_[i];
      if (isFold(st)) continue;
      if (st.kind == Step::Sum) {
        if (resNhwc) {
          const float* rb = res + (n * S + s0) * M;
          for (int64_t k = 0; k < rows * M; ++k) yb[k] += rb[k];
        } else {
          const float* rb = res + n * M * S + s0;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t m = 0; m < M; ++m) yb[r * M + m] += rb[m * S + r];
        }
        continue;
      }
      actFast(fastActOf(st), params[i].first, params[i].second, yb, rows * M);
    }
  }

  /// The depthwise path: per output row of each image (a thread's share of the rows), the row loop
  /// (depthwiseRowNhwc) into the channels-last output, then the chain's steps over the row.
  Status depthwiseRun(const ExecContext& ctx, const std::vector<const Tensor*>& in, const Tensor& x,
                      std::vector<Tensor>& out) {
    out.resize(1);
    if (auto st = out[0].ensureNhwc(outShape_); !st) return st;
    const float* res = nullptr;
    bool resNhwc = false;
    if (auto st = chainOperands(in, res, resNhwc); !st) return st;
    const std::vector<std::pair<float, float>>& params = eltParamsRun_;
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), OH = outShape_[2], OW = outShape_[3];
    const int64_t kh = wShape_[2], kw = wShape_[3];
    const int64_t sh = win_.strides[0], sw = win_.strides[1], ph = win_.padL[0], pw = win_.padL[1];
    const int64_t dh = win_.dil[0] + 1, dw = win_.dil[1] + 1;  // oneDNN's dilation is d - 1
    const float* px = static_cast<const float*>(x.raw());
    float* py = static_cast<float*>(out[0].raw());
    parallelChunks(ctx, N * OH, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const int64_t n = row / OH, oy = row % OH;
        float* yr = py + row * OW * C;
        depthwiseRowNhwc(px + n * H * W * C, H, W, C, wT_.data(), bT_.data(), kh, kw, sh, sw, ph, pw, dh, dw, oy, OW, yr);
        applyChain(yr, OW, C, res, resNhwc, n, oy * OW, OH * OW, params);
      }
    }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, OW * C)));
    return Status::ok();
  }

  /// The pixel path: per block of kPixelBlock pixel rows of one image (a thread's share split so), the
  /// product (gemmPixels) into the output's channels-last rows, then the chain's steps in order over the
  /// block while it is in the cache. A row-major output (a reader that takes no channels-last tensor:
  /// yolox_nano's heads before their Concat) gets each block computed in the thread's scratch and
  /// transposed into its columns from there, not a second pass over the whole tensor.
  Status pixelRun(const ExecContext& ctx, const std::vector<const Tensor*>& in, const Tensor& x, int64_t M,
                  std::vector<Tensor>& out) {
    out.resize(1);
    const bool nhwc = nhwcOut;
    if (auto st = nhwc ? out[0].ensureNhwc(outShape_) : out[0].ensure(DType::Float32, outShape_); !st) return st;
    const float* res = nullptr;
    bool resNhwc = false;
    if (auto st = chainOperands(in, res, resNhwc); !st) return st;
    const std::vector<std::pair<float, float>>& params = eltParamsRun_;
    const int64_t N = x.dim(0), C = x.dim(1), S = x.dim(2) * x.dim(3);
    const float* px = static_cast<const float*>(x.raw());
    float* py = static_cast<float*>(out[0].raw());
    constexpr int64_t kPixelBlock = 96;
    const int64_t blocks = (S + kPixelBlock - 1) / kPixelBlock;  // per image
    parallelChunks(ctx, N * blocks, [&](int64_t b, int64_t e) {
      thread_local std::vector<float> scratch;
      if (!nhwc && scratch.size() < static_cast<size_t>(kPixelBlock * M)) scratch.resize(static_cast<size_t>(kPixelBlock * M));
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t n = blk / blocks, s0 = blk % blocks * kPixelBlock, rows = std::min(kPixelBlock, S - s0);
        const int64_t p0 = n * S + s0;  // first pixel of the block over the batch
        float* yb = nhwc ? py + p0 * M : scratch.data();
        gemmPixels(px + p0 * C, rows, C, wT_.data(), bT_.data(), M, yb);
        applyChain(yb, rows, M, res, resNhwc, n, s0, S, params);
        if (!nhwc) transposePlane32(yb, M, py + n * M * S + s0, S, M, rows);
      }
    }, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, kPixelBlock * C * M)));  // 256 Ki multiply-adds a thread
    return Status::ok();
  }

  /// Folds and reorders the weights once, again when their storage or contents change.
  Status prepareWeights(dnnl::stream& s, const std::vector<const Tensor*>& in, const Tensor& w, const Tensor* b,
                        int64_t M) {
    const uint64_t h = sampleHash(w);
    if (weights_ && wPtr_ == w.raw() && wHash_ == h) return Status::ok();
    std::vector<float> scale(static_cast<size_t>(M), 1.0f), shift(static_cast<size_t>(M), 0.0f);
    if (b) std::memcpy(shift.data(), b->raw(), static_cast<size_t>(M) * sizeof(float));
    if (auto st = foldAffine(steps_, in, M, scale, shift); !st) return st;
    bool unit = true;
    for (float v : scale) unit = unit && v == 1.0f;
    weights_ = memory(pd_.weights_desc(), engine());
    if (dense_) {
      // [M, C/group, 1, 1] -> [M, C, 1, 1]: output channel m reads its group's input channels only.
      const int64_t group = node_.attrInt("group", 1), Cg = w.numElements() / M, Mg = M / group;
      std::vector<float> dense(static_cast<size_t>(M * Cg * group), 0.0f);
      const float* pw = static_cast<const float*>(w.raw());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < Cg; ++c)
          dense[static_cast<size_t>(m * Cg * group + (m / Mg) * Cg + c)] = pw[m * Cg + c] * scale[static_cast<size_t>(m)];
      memory wu(userW_, engine(), dense.data());
      dnnl::reorder(wu, weights_).execute(s, wu, weights_);
      s.wait();
    } else if (unit) {
      memory wu(userW_, engine(), const_cast<void*>(w.raw()));
      dnnl::reorder(wu, weights_).execute(s, wu, weights_);
    } else {
      const int64_t row = w.numElements() / M;
      std::vector<float> folded(static_cast<size_t>(w.numElements()));
      const float* pw = static_cast<const float*>(w.raw());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < row; ++k)
          folded[static_cast<size_t>(m * row + k)] = pw[m * row + k] * scale[static_cast<size_t>(m)];
      memory wu(userW_, engine(), folded.data());
      dnnl::reorder(wu, weights_).execute(s, wu, weights_);
      s.wait();
    }
    bias_ = memory(memory::desc({M}, dt::f32, tag::a), engine());
    std::memcpy(bias_.get_data_handle(), shift.data(), static_cast<size_t>(M) * sizeof(float));
    wPtr_ = w.raw();
    wHash_ = h;
    wShape_ = w.shape();
    return Status::ok();
  }

 public:
  /// Input i is folded into the kernel's own weights or bias (W, B, and the folded steps' parameters).
  bool keepsCopy(size_t i) const override {
    if (!weights_ && !(direct_ && !wDir_.empty()) && !(pix_ && !wT_.empty())) return false;
    if (i == 1 || (i == 2 && anchorIn_ > 2)) return true;
    for (const Step& st : steps_) {
      if (!isFold(st)) break;
      const size_t count = st.kind == Step::BatchNorm ? 4 : 1;
      if (i >= st.in && i < st.in + count) return true;
    }
    return false;
  }
  void releaseCaches() override {
    weights_ = memory();
    bias_ = memory();
    args_.clear();
    prim_ = dnnl::convolution_forward();
    wDir_ = {};
    biasDir_ = {};
    wT_ = {};
    bT_ = {};
  }

 private:

  Node node_;
  std::vector<Step> steps_;
  size_t anchorIn_;  ///< The anchor's own inputs (X, W and maybe B) come first.
  std::vector<int64_t> key_, outShape_;
  std::vector<float> opsKey_;
  /// Scratch of run(): this run's keys and the direct loop's activation parameters.
  std::vector<int64_t> keyRun_;
  std::vector<float> opsKeyRun_;
  std::vector<std::pair<float, float>> eltParamsRun_;
  int sumIn_ = -1;
  memory::desc userW_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  memory weights_, bias_;
  const void* wPtr_ = nullptr;
  uint64_t wHash_ = 0;
  std::vector<int64_t> wShape_;
  Reorder srcReorder_, dstReorder_, resReorder_;
  std::unordered_map<int, memory> args_;  ///< The primitive's arguments, refreshed at every run.
  bool dense_ = false;             ///< A grouped 1x1 convolution run as a dense one (zeros off the groups).
  bool direct_ = false;            ///< The current shapes run directRun, not the primitive.
  Window win_;                     ///< Their window geometry.
  std::vector<float> wDir_, biasDir_;  ///< Their folded weights and bias (prepareDirectWeights).
  Tensor xConv_;                       ///< A row-major input converted for the own paths (pix_).
  bool pix_ = false;                   ///< The current shapes run an own channels-last path:
  bool dw_ = false;                    ///< depthwiseRun (else pixelRun, a 1x1 convolution).
  std::vector<float> wT_, bT_;         ///< Its transposed, padded weights and bias (preparePixelWeights).
};

/// Whether applyElt computes this activation (the fused chain of a few-row product runs it itself).
bool plainElt(const Step& st) {
  using A = dnnl::algorithm;
  switch (st.alg) {
    case A::eltwise_relu:
    case A::eltwise_logistic:
    case A::eltwise_tanh:
    case A::eltwise_clip_v2:
    case A::eltwise_linear:
    case A::eltwise_elu:
    case A::eltwise_abs:
    case A::eltwise_sqrt:
    case A::eltwise_exp:
    case A::eltwise_swish:
    case A::eltwise_hardswish:
    case A::eltwise_soft_relu:
      return true;
    default:
      return false;
  }
}

/// The vectorised activation (conv1x1.h) that computes this step (with eltParams' alpha and beta, as
/// applyElt), or FastAct::None.
FastAct fastActOf(const Step& st) {
  using A = dnnl::algorithm;
  if (st.kind != Step::Elt) return FastAct::None;
  switch (st.alg) {
    case A::eltwise_relu: return FastAct::Relu;
    case A::eltwise_logistic: return FastAct::Logistic;
    case A::eltwise_swish: return FastAct::Swish;
    case A::eltwise_hardswish: return FastAct::HardSwish;
    case A::eltwise_clip_v2: return FastAct::Clip;
    case A::eltwise_linear: return st.hardSigmoid ? FastAct::HardSigmoid : FastAct::Linear;
    default: return FastAct::None;
  }
}

/// y = f(y) over n values, f one of plainElt's activations with oneDNN's parameters (alpha, beta): what
/// the eltwise post-op computes, in float.
void applyElt(const Step& st, float a, float b, float* y, int64_t n) {
  using A = dnnl::algorithm;
  for (int64_t i = 0; i < n; ++i) {
    const float x = y[i];
    float v = x;
    switch (st.alg) {
      case A::eltwise_relu: v = x < 0.0f ? (a == 0.0f ? 0.0f : a * x) : x; break;
      case A::eltwise_logistic: v = 1.0f / (1.0f + std::exp(-x)); break;
      case A::eltwise_tanh: v = std::tanh(x); break;
      case A::eltwise_clip_v2: v = std::min(b, std::max(a, x)); break;
      case A::eltwise_linear: v = a * x + b; break;
      case A::eltwise_elu: v = x < 0.0f ? a * std::expm1(x) : x; break;
      case A::eltwise_abs: v = std::fabs(x); break;
      case A::eltwise_sqrt: v = std::sqrt(x); break;
      case A::eltwise_exp: v = std::exp(x); break;
      case A::eltwise_swish: v = x / (1.0f + std::exp(-a * x)); break;
      case A::eltwise_hardswish: v = x * std::min(1.0f, std::max(0.0f, x / 6.0f + 0.5f)); break;
      case A::eltwise_soft_relu: v = x > 20.0f ? x : std::log1p(std::exp(x)); break;
      default: break;
    }
    if (st.hardSigmoid) v = std::min(1.0f, std::max(0.0f, v));
    y[i] = v;
  }
}

// ---------------------------------------------------------------------------------------------------------

/// Gemm (A, B weight, C per-column or scalar weight) or 2-D MatMul with a weight B, and its chain: one
/// oneDNN matmul. B is used in place (no copy) unless something is folded into it.
/// With one to three rows of A (kPackMinRows, not transposed) and a chain of activations and residual
/// sums applyElt knows, the product is gemvRows and the chain a loop over each block of columns: a
/// oneDNN primitive's setup per execution (5-6 us) was most of a batch-1 classifier head's time
/// (openWakeWord's [1,128] x [128,1] Gemm and its Sigmoid), and its brgemm copied a transposed B.
class FusedMatMulKernel final : public OpKernel {
 public:
  FusedMatMulKernel(const Node& anchor, std::vector<Step> steps)
      : steps_(std::move(steps)),
        gemm_(anchor.opType == "Gemm"),
        alpha_(gemm_ ? fattr(anchor, "alpha", 1.0) : 1.0f),
        beta_(gemm_ ? fattr(anchor, "beta", 1.0) : 1.0f),
        transA_(gemm_ && anchor.attrInt("transA", 0) != 0),
        transB_(gemm_ && anchor.attrInt("transB", 0) != 0),
        anchorIn_(anchor.inputs.size()) {}

  Status run(const ExecContext&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "A"); !e.empty()) return Error{e};
    if (auto e = expectInput(in, 1, "B"); !e.empty()) return Error{e};
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Tensor* c = gemm_ && anchorIn_ > 2 && in.size() > 2 && in[2] && !in[2]->empty() ? in[2] : nullptr;
    if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32 || (c && c->dtype() != DType::Float32))
      return makeError("float32 only");
    if (a.rank() != 2 || b.rank() != 2) return makeError("2-D operands expected: ", a.describe(), " x ", b.describe());
    const int64_t M = transA_ ? a.dim(1) : a.dim(0), K = transA_ ? a.dim(0) : a.dim(1);
    const int64_t N = transB_ ? b.dim(0) : b.dim(1), Kb = transB_ ? b.dim(1) : b.dim(0);
    if (K != Kb) return makeError("inner dims differ: ", a.describe(), " x ", b.describe());
    if (c && c->numElements() != 1 && c->numElements() != N) return makeError("C ", c->describe(), " is not per column");
    int sumIn = -1;
    std::vector<float> opsKey;
    auto po = postOps(steps_, in, sumIn, opsKey);
    if (!po) return Error{po.message()};
    std::vector<int64_t> key{M, K, N};
    const uint64_t h = sampleHash(b);
    if (key != key_ || opsKey != opsKey_ || (!prim_ && !gemv_) || bPtr_ != b.raw() || bHash_ != h) {
      std::vector<float> scale(static_cast<size_t>(N), alpha_), shift(static_cast<size_t>(N), 0.0f);
      if (c)
        for (int64_t n = 0; n < N; ++n)
          shift[static_cast<size_t>(n)] = beta_ * static_cast<const float*>(c->raw())[c->numElements() == 1 ? 0 : n];
      if (auto st = foldAffine(steps_, in, N, scale, shift); !st) return st;
      gemv_ = M < kPackMinRows && !transA_;
      for (const Step& st : steps_)
        gemv_ = gemv_ && (isFold(st) || st.kind == Step::Sum || (st.kind == Step::Elt && plainElt(st)));
      if (gemv_) {
        folded_.clear();
        folded_.shrink_to_fit();
        scale_ = scale;
        bias_ = shift;
        key_ = key;
        opsKey_ = opsKey;
        sumIn_ = sumIn;
        bPtr_ = b.raw();
        bHash_ = h;
        prim_ = {};
      }
    }
    if (gemv_) return runGemv(a, b, in, out, M, K, N);
    if (key != key_ || opsKey != opsKey_ || !prim_ || bPtr_ != b.raw() || bHash_ != h) {
      std::vector<float> scale(static_cast<size_t>(N), alpha_), shift(static_cast<size_t>(N), 0.0f);
      if (c)
        for (int64_t n = 0; n < N; ++n)
          shift[static_cast<size_t>(n)] = beta_ * static_cast<const float*>(c->raw())[c->numElements() == 1 ? 0 : n];
      if (auto st = foldAffine(steps_, in, N, scale, shift); !st) return st;
      bool unit = true;
      for (float v : scale) unit = unit && v == 1.0f;
      const memory::dims bStrides = transB_ ? memory::dims{1, K} : memory::dims{N, 1};
      if (unit) {
        folded_.clear();
        folded_.shrink_to_fit();
        wd_ = memory::desc({K, N}, dt::f32, bStrides);
      } else {
        folded_.assign(static_cast<size_t>(K * N), 0.0f);
        const float* pb = static_cast<const float*>(b.raw());
        for (int64_t k = 0; k < K; ++k)
          for (int64_t n = 0; n < N; ++n)
            folded_[static_cast<size_t>(k * N + n)] =
                pb[transB_ ? n * K + k : k * N + n] * scale[static_cast<size_t>(n)];
        wd_ = memory::desc({K, N}, dt::f32, tag::ab);
      }
      bias_ = shift;
      ad_ = memory::desc({M, K}, dt::f32, transA_ ? memory::dims{1, M} : memory::dims{K, 1});
      cd_ = memory::desc({M, N}, dt::f32, tag::ab);
      dnnl::primitive_attr attr = scratchAttr();
      attr.set_post_ops(*po);
      pd_ = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(ad_, wd_, memory::desc({1, N}, dt::f32, tag::ab), cd_), attr, engine());
      prim_ = dnnl::matmul(pd_);
      key_ = key;
      opsKey_ = opsKey;
      sumIn_ = sumIn;
      bPtr_ = b.raw();
      bHash_ = h;
    }
    out.resize(1);
    if (auto st = out[0].ensure(DType::Float32, {M, N}); !st) return st;
    dnnl::stream s(engine());
    memory om(cd_, engine(), out[0].raw());
    if (sumIn_ >= 0) {
      const Tensor* res = static_cast<size_t>(sumIn_) < in.size() ? in[static_cast<size_t>(sumIn_)] : nullptr;
      if (!res || res->dtype() != DType::Float32 || res->shape() != out[0].shape())
        return makeError("the residual operand must be float32 ", out[0].describe());
      loadResidual(s, *res, om, resReorder_);
    }
    void* wp = folded_.empty() ? const_cast<void*>(b.raw()) : folded_.data();
    prim_.execute(s, {{DNNL_ARG_SCRATCHPAD, scratchpadFor(pd_)}, {DNNL_ARG_SRC, memory(ad_, engine(), const_cast<void*>(a.raw()))},
                      {DNNL_ARG_WEIGHTS, memory(wd_, engine(), wp)},
                      {DNNL_ARG_BIAS, memory(memory::desc({1, N}, dt::f32, tag::ab), engine(), bias_.data())},
                      {DNNL_ARG_DST, om}});
    s.wait();
    return Status::ok();
  }

 private:
  /// The few-row path: y = (A x B) * scale + shift per column (the folded affine steps), then the chain.
  Status runGemv(const Tensor& a, const Tensor& b, const std::vector<const Tensor*>& in, std::vector<Tensor>& out,
                 int64_t M, int64_t K, int64_t N) {
    out.resize(1);
    if (auto st = out[0].ensure(DType::Float32, {M, N}); !st) return st;
    const float* res = nullptr;
    if (sumIn_ >= 0) {
      const Tensor* r = static_cast<size_t>(sumIn_) < in.size() ? in[static_cast<size_t>(sumIn_)] : nullptr;
      if (!r || r->dtype() != DType::Float32 || r->shape() != out[0].shape() || r->nhwc())
        return makeError("the residual operand must be float32 ", out[0].describe());
      res = static_cast<const float*>(r->raw());
    }
    // The activations' parameters (Clip bounds given as inputs, scalar steps) once per run.
    std::vector<std::pair<float, float>>& params = eltParamsRun_;
    params.assign(steps_.size(), {0.0f, 0.0f});
    for (size_t i = 0; i < steps_.size(); ++i)
      if (steps_[i].kind == Step::Elt)
        if (auto e = eltParams(steps_[i], in, params[i].first, params[i].second); !e) return e;
    const auto* ap = static_cast<const float*>(a.raw());
    const auto* bp = static_cast<const float*>(b.raw());
    float* y = static_cast<float*>(out[0].raw());
    const int threads = omp_get_max_threads();
    const int64_t perThread = std::max<int64_t>(16, (int64_t{1} << 16) / std::max<int64_t>(1, K * M));
    parallelChunks(ExecContext{threads}, (N + 15) / 16, [&](int64_t c0, int64_t c1) {
      const int64_t n0 = c0 * 16, n1 = std::min(N, c1 * 16);
      gemvRows(ap, K, bp, y, N, M, K, N, n0, n1, transB_, 1.0f, false);
      for (int64_t m = 0; m < M; ++m) {
        float* row = y + m * N;
        for (int64_t n = n0; n < n1; ++n) row[n] = row[n] * scale_[static_cast<size_t>(n)] + bias_[static_cast<size_t>(n)];
        for (size_t i = 0; i < steps_.size(); ++i) {
          const Step& st = steps_[i];
          if (isFold(st)) continue;
          if (st.kind == Step::Sum) {
            for (int64_t n = n0; n < n1; ++n) row[n] += res[m * N + n];
            continue;
          }
          applyElt(st, params[i].first, params[i].second, row + n0, n1 - n0);
        }
      }
    }, std::max<int64_t>(1, perThread / 16));
    return Status::ok();
  }

  bool gemv_ = false;
  std::vector<float> scale_;
  std::vector<Step> steps_;
  bool gemm_;
  float alpha_, beta_;
  bool transA_, transB_;
  size_t anchorIn_;
  std::vector<int64_t> key_;
  std::vector<float> opsKey_, folded_, bias_;
  std::vector<std::pair<float, float>> eltParamsRun_;  ///< scratch of runGemv()
  int sumIn_ = -1;
  const void* bPtr_ = nullptr;
  uint64_t bHash_ = 0;
  memory::desc ad_, wd_, cd_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  Reorder resReorder_;
};

// ---------------------------------------------------------------------------------------------------------

/// The activations ChannelAffineKernel applies after its affine steps.
enum class AffineAct : int { None, Relu, Leaky, Clip };

// y = act(x * sc + sh) over n elements, the scale and shift given per element (sc, sh) or as one value
// (s, t): one vector loop per activation, cloned for AVX-512 and AVX2 (this file is otherwise built for
// baseline x86-64, and a loop calling a lambda per element stayed scalar: oww-embedding's
// BatchNormalization + LeakyRelu over 24 channels ran at 4.7x ONNX Runtime, issue 24). A macro, not a
// lambda: a lambda is a function of its own, compiled without the clone's target.
#define PARTEX_AFFINE_LOOP(XS, XT)                                                            \
  switch (act) {                                                                              \
    case AffineAct::None:                                                                     \
      _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (XS) + (XT);          \
      break;                                                                                  \
    case AffineAct::Relu:                                                                     \
      _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                                   \
        const float v = x[i] * (XS) + (XT);                                                   \
        y[i] = v > 0.0f ? v : 0.0f;                                                           \
      }                                                                                       \
      break;                                                                                  \
    case AffineAct::Leaky:                                                                    \
      _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                                   \
        const float v = x[i] * (XS) + (XT);                                                   \
        y[i] = v < 0.0f ? v * p0 : v;                                                         \
      }                                                                                       \
      break;                                                                                  \
    case AffineAct::Clip:                                                                     \
      _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {                                   \
        const float v = x[i] * (XS) + (XT);                                                   \
        y[i] = std::min(p1, std::max(p0, v));                                                 \
      }                                                                                       \
      break;                                                                                  \
  }

/// Per-element scale and shift (channels-last pixels against a pattern of whole pixels).
[[gnu::target_clones("avx512f", "avx2", "default")]] void affineSpan(const float* x, float* y, int64_t n,
                                                                     const float* sc, const float* sh, AffineAct act,
                                                                     float p0, float p1) {
  PARTEX_AFFINE_LOOP(sc[i], sh[i])
}

/// One scale and shift for the whole span (a row-major plane of one channel).
[[gnu::target_clones("avx512f", "avx2", "default")]] void affineSpanScalar(const float* x, float* y, int64_t n,
                                                                           float s, float t, AffineAct act, float p0,
                                                                           float p1) {
  PARTEX_AFFINE_LOOP(s, t)
}
#undef PARTEX_AFFINE_LOOP

/// A per-channel affine anchor (BatchNormalization, Mul/Add by a per-channel weight) with further affine
/// steps and Relu/LeakyRelu/Clip: y = act(x * scale[c] + shift[c]) in one pass, row-major or channels-last.
class ChannelAffineKernel final : public OpKernel {
 public:
  explicit ChannelAffineKernel(std::vector<Step> steps) : steps_(std::move(steps)) {}

  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    return nhwcOut && !in.empty() && in[0] && in[0]->nhwc();
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.dtype() != DType::Float32 || x.rank() != 4) return makeError("float32 rank-4 input expected: ", x.describe());
    const int64_t C = x.dim(1);
    if (scale_.size() != static_cast<size_t>(C) || !cached_) {
      scale_.assign(static_cast<size_t>(C), 1.0f);
      shift_.assign(static_cast<size_t>(C), 0.0f);
      if (auto st = foldAffine(steps_, in, C, scale_, shift_); !st) return st;
      act_ = Act::None;
      for (const Step& st : steps_) {
        if (isFold(st)) continue;
        if (st.kind != Step::Elt) return makeError("only activations may follow the affine steps");
        float a = 0, b = 0;
        if (auto e = eltParams(st, in, a, b); !e) return e;
        if (act_ != Act::None) return makeError("one activation at most");
        if (st.alg == dnnl::algorithm::eltwise_relu) {
          act_ = a == 0.0f ? Act::Relu : Act::Leaky;
          alpha_ = a;
        } else if (st.alg == dnnl::algorithm::eltwise_clip_v2) {
          act_ = Act::Clip;
          lo_ = a;
          hi_ = b;
        } else {
          return makeError("unsupported activation after the affine steps");
        }
      }
      const int64_t R = patternPixels(C);
      scaleRep_.resize(static_cast<size_t>(R * C));
      shiftRep_.resize(static_cast<size_t>(R * C));
      for (int64_t p = 0; p < R; ++p)
        for (int64_t c = 0; c < C; ++c) {
          scaleRep_[static_cast<size_t>(p * C + c)] = scale_[static_cast<size_t>(c)];
          shiftRep_[static_cast<size_t>(p * C + c)] = shift_[static_cast<size_t>(c)];
        }
      cached_ = true;
    }
    out.resize(1);
    const bool nhwc = x.nhwc();
    if (auto st = nhwc ? out[0].ensureNhwc(x.shape()) : out[0].ensure(DType::Float32, x.shape()); !st) return st;
    const float* px = static_cast<const float*>(x.raw());
    float* py = static_cast<float*>(out[0].raw());
    const int64_t N = x.dim(0), S = x.dim(2) * x.dim(3);
    const AffineAct act = act_;
    const float p0 = act_ == AffineAct::Clip ? lo_ : alpha_, p1 = hi_;
    if (nhwc) {
      // [N*S][C]: the scale and shift repeated over patternPixels(C) pixels (scaleRep_), so that a span
      // of many pixels is one long vector loop rather than one of C elements per pixel.
      const int64_t R = static_cast<int64_t>(scaleRep_.size()) / C;
      parallelChunks(ctx, N * S, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; p += R) {
          const int64_t cnt = std::min(R, e - p);
          affineSpan(px + p * C, py + p * C, cnt * C, scaleRep_.data(), shiftRep_.data(), act, p0, p1);
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
    } else {  // [N*C][S]
      const float* sc = scale_.data();
      const float* sh = shift_.data();
      parallelChunks(ctx, N * C, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          affineSpanScalar(px + r * S, py + r * S, S, sc[r % C], sh[r % C], act, p0, p1);
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, S)));
    }
    return Status::ok();
  }

 private:
  /// Pixels of channels-last scale and shift in scaleRep_/shiftRep_: at least 256 elements.
  static int64_t patternPixels(int64_t C) { return std::max<int64_t>(1, (256 + C - 1) / C); }
  using Act = AffineAct;
  std::vector<Step> steps_;
  std::vector<float> scale_, shift_;
  std::vector<float> scaleRep_, shiftRep_;  ///< scale_/shift_ repeated over patternPixels(C) pixels
  bool cached_ = false;
  Act act_ = Act::None;
  float alpha_ = 0, lo_ = 0, hi_ = 0;
};

// ---------------------------------------------------------------------------------------------------------

/// A channel shuffle with g groups (ir/fusion.h): output channel j*g + i is input channel i*(C/g) + j.
/// Channels-last: a permutation within each pixel; row-major: one plane copy per channel.
/// y[p * C + o] = x[p * C + idx[o]] for `pixels` pixels of C channels: a channel permutation of
/// channels-last pixels. Cloned for AVX2 (GCC emulates its gathers 4 wide) and baseline x86-64.
[[gnu::target_clones("avx2", "default")]] void permutePixelsLoop(const float* x, float* y, int64_t pixels, int64_t C,
                                                                 const int32_t* idx) {
  for (int64_t p = 0; p < pixels; ++p) {
    const float* xi = x + p * C;
    float* yi = y + p * C;
#pragma omp simd
    for (int64_t o = 0; o < C; ++o) yi[o] = xi[idx[o]];
  }
}

/// permutePixelsLoop with AVX-512 gathers, 16 channels per instruction (GCC's cost model would not
/// emit them for the loop: one element at a time was 1.6-2.4x ONNX Runtime's channel shuffle).
__attribute__((target("avx512f"))) void permutePixelsAvx512(const float* x, float* y, int64_t pixels, int64_t C,
                                                            const int32_t* idx) {
  for (int64_t p = 0; p < pixels; ++p) {
    const float* xi = x + p * C;
    float* yi = y + p * C;
    int64_t o = 0;
    for (; o + 16 <= C; o += 16)
      // (The masked form with a zero source: the plain one trips GCC 12's -Wmaybe-uninitialized.)
      _mm512_storeu_ps(yi + o, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, _mm512_loadu_si512(idx + o), xi, 4));
    for (; o < C; ++o) yi[o] = xi[idx[o]];
  }
}

void permutePixels(const float* x, float* y, int64_t pixels, int64_t C, const int32_t* idx) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512)
    permutePixelsAvx512(x, y, pixels, C, idx);
  else
    permutePixelsLoop(x, y, pixels, C, idx);
}

class ChannelShuffleKernel final : public OpKernel {
 public:
  explicit ChannelShuffleKernel(int64_t groups) : groups_(groups) {}
  bool takesNhwc(const std::vector<const Tensor*>& in) const override {
    return nhwcOut && !in.empty() && in[0] && in[0]->nhwc();
  }
  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "data"); !e.empty()) return Error{e};
    const Tensor& x = *in[0];
    if (x.rank() != 4 || x.dtype() != DType::Float32 || x.dim(1) % groups_ != 0)
      return makeError("channel shuffle of ", x.describe(), " in ", std::to_string(groups_), " groups");
    const int64_t N = x.dim(0), C = x.dim(1), S = x.dim(2) * x.dim(3), per = C / groups_, g = groups_;
    out.resize(1);
    if (auto st = x.nhwc() ? out[0].ensureNhwc(x.shape()) : out[0].ensure(DType::Float32, x.shape()); !st) return st;
    const float* px = static_cast<const float*>(x.raw());
    float* py = static_cast<float*>(out[0].raw());
    if (x.nhwc()) {
      // Output channel j * g + i is input channel i * per + j.
      if (static_cast<int64_t>(idx_.size()) != C) {
        idx_.resize(static_cast<size_t>(C));
        for (int64_t j = 0; j < per; ++j)
          for (int64_t i = 0; i < g; ++i) idx_[static_cast<size_t>(j * g + i)] = static_cast<int32_t>(i * per + j);
      }
      parallelChunks(ctx, N * S, [&](int64_t b, int64_t e) {
        permutePixels(px + b * C, py + b * C, e - b, C, idx_.data());
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)));
    } else {
      parallelChunks(ctx, N * C, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t n = r / C, c = r % C, i = c % g, j = c / g;
          std::memcpy(py + r * S, px + (n * C + i * per + j) * S, static_cast<size_t>(S) * sizeof(float));
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, S)));
    }
    return Status::ok();
  }

 private:
  int64_t groups_;
  std::vector<int32_t> idx_;  ///< Per output channel, its input channel (channels-last path).
};

}  // namespace

Result<std::unique_ptr<OpKernel>> makeFusedKernel(const Graph& g, const std::vector<OpId>& ops) {
  if (ops.empty()) return makeError("empty group");
  // The graph-level rewrites (ir/rewrites.h): their own kernels, or a Conv chain with the Pad's padding.
  const Rewrite rw = rewriteOf(g, ops);
  if (rw == Rewrite::PadIntoConv) {
    const auto f = padFoldOf(g, ops[0]);
    Node conv = g.nodes[static_cast<size_t>(ops[1])];
    conv.attrs["pads"].value = f->pads;
    auto steps = buildSteps(g, std::vector<OpId>(ops.begin() + 1, ops.end()));
    if (!steps) return Error{steps.message()};
    // The group's inputs are the Pad's (data, pads, value), then the Conv's W and B and the chain's.
    return dropInputs(std::make_unique<FusedConvKernel>(conv, std::move(*steps)), 1,
                      g.nodes[static_cast<size_t>(ops[0])].inputs.size() - 1);
  }
  if (rw != Rewrite::None) return makeRewriteKernel(g, ops, rw);
  const Node& anchor = g.nodes[static_cast<size_t>(ops[0])];
  if (anchor.opType == "Reshape") {
    const int64_t groups = channelShuffle(g, ops[0]);
    if (groups <= 0) return makeError("'", anchor.name, "' is no channel shuffle");
    return std::unique_ptr<OpKernel>(std::make_unique<ChannelShuffleKernel>(groups));
  }
  if (anchor.opType == "BatchNormalization" || anchor.opType == "Mul" || anchor.opType == "Add") {
    auto steps = buildSteps(g, ops, /*fromAnchor=*/true);
    if (!steps) return Error{steps.message()};
    return std::unique_ptr<OpKernel>(std::make_unique<ChannelAffineKernel>(std::move(*steps)));
  }
  auto steps = buildSteps(g, ops);
  if (!steps) return Error{steps.message()};
  if (anchor.opType == "Conv") return std::unique_ptr<OpKernel>(std::make_unique<FusedConvKernel>(anchor, std::move(*steps)));
  if (anchor.opType == "Gemm" || anchor.opType == "MatMul")
    return std::unique_ptr<OpKernel>(std::make_unique<FusedMatMulKernel>(anchor, std::move(*steps)));
  return makeError("no fused kernel for ", anchor.opType);
}

}  // namespace partex::cpu
