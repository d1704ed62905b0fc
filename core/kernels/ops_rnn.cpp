// Recurrent layers (RNN, GRU, LSTM) in plain C++ with OpenMP over the batch: forward, reverse and
// bidirectional, both layouts, clip, peepholes, GRU's linear_before_reset, sequence_lens. Custom
// activations and LSTM's input_forget are declined by the check.
// sequence_lens as ONNX Runtime reads it: batch entry n runs its first L[n] steps (a reverse direction
// starts at step L[n] - 1), Y is zero from step L[n] on, Y_h / Y_c are the state after its last step,
// and zero where L[n] is 0.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"

namespace partex::cpu {

namespace {

enum class Cell { Rnn, Gru, Lstm };

inline float sigm(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

/// acc[0..n) += sum over k < rows of m[k * ld + j] * v[k]: gate pre-activations as scaled-row sums, a
/// vector loop over the gates. Cloned for AVX-512 and AVX2 (chosen at load time): the build targets
/// baseline x86-64 and this loop is the recurrent layers' time.
[[gnu::target_clones("avx512f", "avx2", "default")]] void accumulateRows(const float* m, int64_t rows, int64_t ld,
                                                                         const float* v, float* acc, int64_t n) {
  for (int64_t k = 0; k < rows; ++k) {
    const float vk = v[k];
    const float* row = m + k * ld;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) acc[j] += row[j] * vk;
  }
}

class RnnKernel final : public OpKernel {
 public:
  RnnKernel(const Node& n, Cell cell)
      : cell_(cell),
        hidden_(n.attrInt("hidden_size", 0)),
        clip_(static_cast<float>(n.attrFloat("clip", 0.0))),
        layout_(n.attrInt("layout", 0)),
        lbr_(n.attrInt("linear_before_reset", 0) != 0),
        dir_(n.attrString("direction", "forward")) {}

  Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    for (size_t i = 0; i < 3; ++i)
      if (auto e = expectInput(in, i, "X, W, R"); !e.empty()) return Error{e};
    const Tensor& X = *in[0];
    const Tensor& W = *in[1];
    const Tensor& R = *in[2];
    auto opt = [&](size_t i) -> const Tensor* { return i < in.size() && in[i] && !in[i]->empty() ? in[i] : nullptr; };
    const Tensor* B = opt(3);
    const Tensor* seqLens = opt(4);
    const Tensor* h0 = opt(5);
    const Tensor* c0 = cell_ == Cell::Lstm ? opt(6) : nullptr;
    const Tensor* P = cell_ == Cell::Lstm ? opt(7) : nullptr;
    for (const Tensor* t : {&X, &W, &R, B, h0, c0, P})
      if (t && t->dtype() != DType::Float32) return makeError("float32 only");
    if (X.rank() != 3 || W.rank() != 3 || R.rank() != 3) return makeError("X, W, R must be 3-D");
    const int64_t G = cell_ == Cell::Lstm ? 4 : cell_ == Cell::Gru ? 3 : 1;
    const int64_t dirs = dir_ == "bidirectional" ? 2 : 1;
    const int64_t H = hidden_ > 0 ? hidden_ : W.dim(1) / G;
    const int64_t T = layout_ ? X.dim(1) : X.dim(0), N = layout_ ? X.dim(0) : X.dim(1), I = X.dim(2);
    if (W.dim(0) != dirs || W.dim(1) != G * H || W.dim(2) != I) return makeError("W ", W.describe(), " does not match");
    if (R.dim(0) != dirs || R.dim(1) != G * H || R.dim(2) != H) return makeError("R ", R.describe(), " does not match");
    if (B && B->numElements() != dirs * 2 * G * H) return makeError("B ", B->describe(), " does not match");
    if (h0 && h0->numElements() != dirs * N * H) return makeError("initial_h does not match");
    if (c0 && c0->numElements() != dirs * N * H) return makeError("initial_c does not match");
    if (P && P->numElements() != dirs * 3 * H) return makeError("P does not match");
    std::vector<int64_t> lens(static_cast<size_t>(N), T);
    if (seqLens) {
      if (seqLens->dtype() != DType::Int32 || seqLens->numElements() != N)
        return makeError("sequence_lens ", seqLens->describe(), " does not match the batch");
      for (int64_t n = 0; n < N; ++n) {
        const int32_t l = seqLens->data<int32_t>()[n];
        if (l < 0 || l > T) return makeError("sequence_lens ", std::to_string(l), " outside 0..", std::to_string(T));
        lens[static_cast<size_t>(n)] = l;
      }
    }
    out.resize(cell_ == Cell::Lstm ? 3 : 2);
    std::vector<int64_t> yShape = layout_ ? std::vector<int64_t>{N, T, dirs, H} : std::vector<int64_t>{T, dirs, N, H};
    std::vector<int64_t> hShape = layout_ ? std::vector<int64_t>{N, dirs, H} : std::vector<int64_t>{dirs, N, H};
    if (auto s = out[0].ensure(DType::Float32, yShape); !s) return s;
    for (size_t k = 1; k < out.size(); ++k)
      if (auto s = out[k].ensure(DType::Float32, hShape); !s) return s;
    const float* px = ptr<float>(X);
    float* py = ptr<float>(out[0]);
    auto xAt = [&](int64_t t, int64_t n) { return px + (layout_ ? (n * T + t) * I : (t * N + n) * I); };
    auto yAt = [&](int64_t t, int64_t d, int64_t n) {
      return py + (layout_ ? ((n * T + t) * dirs + d) * H : ((t * dirs + d) * N + n) * H);
    };
    auto hAt = [&](Tensor& o, int64_t d, int64_t n) {
      return ptr<float>(o) + (layout_ ? (n * dirs + d) * H : (d * N + n) * H);
    };
    const float clip = clip_;
    auto cl = [clip](float v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = dir_ == "reverse" || d == 1;
      const float* w = ptr<float>(W) + d * G * H * I;
      const float* r = ptr<float>(R) + d * G * H * H;
      const float* wb = B ? ptr<float>(*B) + d * 2 * G * H : nullptr;
      const float* rb = wb ? wb + G * H : nullptr;
      const float* pp = P ? ptr<float>(*P) + d * 3 * H : nullptr;
      std::vector<float> h(static_cast<size_t>(N * H), 0.0f), c(static_cast<size_t>(N * H), 0.0f);
      if (h0) std::memcpy(h.data(), ptr<float>(*h0) + d * N * H, static_cast<size_t>(N * H) * sizeof(float));
      if (c0) std::memcpy(c.data(), ptr<float>(*c0) + d * N * H, static_cast<size_t>(N * H) * sizeof(float));
      std::vector<float> hn(h.size());
      // W and R transposed ([I][G*H], [H][G*H]) so that each gate pre-activation is a sum of scaled rows,
      // a loop over the G*H gates that vectorises, instead of one dot product (a serial reduction) per
      // gate. (Issue 24: the dot products and GRU's per-gate reset recomputation made LSTM/GRU of hidden
      // 128 200x slower than ONNX Runtime.)
      const int64_t GH = G * H;
      std::vector<float> wt(static_cast<size_t>(I * GH)), rt(static_cast<size_t>(H * GH));
      for (int64_t j = 0; j < GH; ++j) {
        for (int64_t k = 0; k < I; ++k) wt[static_cast<size_t>(k * GH + j)] = w[j * I + k];
        for (int64_t k = 0; k < H; ++k) rt[static_cast<size_t>(k * GH + j)] = r[j * H + k];
      }
      for (int64_t s = 0; s < T; ++s) {
        parallelChunks(
            ctx, N,
            [&](int64_t b0, int64_t e0) {
              std::vector<float> xg(static_cast<size_t>(GH)), hg(static_cast<size_t>(GH)), rh(static_cast<size_t>(H));
              for (int64_t n = b0; n < e0; ++n) {
                const int64_t len = lens[static_cast<size_t>(n)];
                if (s >= len) {  // past this entry's sequence: Y zero there, the state kept
                  std::memset(yAt(s, d, n), 0, static_cast<size_t>(H) * sizeof(float));
                  std::memcpy(hn.data() + n * H, h.data() + n * H, static_cast<size_t>(H) * sizeof(float));
                  continue;
                }
                const int64_t t = reverse ? len - 1 - s : s;
                const float* xt = xAt(t, n);
                const float* hp = h.data() + n * H;
                float* xa = xg.data();
                float* ha = hg.data();
                for (int64_t j = 0; j < GH; ++j) {
                  xa[j] = wb ? wb[j] : 0.0f;
                  ha[j] = rb ? rb[j] : 0.0f;
                }
                accumulateRows(wt.data(), I, GH, xt, xa, GH);
                accumulateRows(rt.data(), H, GH, hp, ha, GH);
                if (cell_ == Cell::Gru && !lbr_) {
                  // (r . h_prev) once per step: its product with Rh replaces hg's candidate part.
                  for (int64_t k = 0; k < H; ++k)
                    rh[static_cast<size_t>(k)] =
                        sigm(cl(xg[static_cast<size_t>(H + k)] + hg[static_cast<size_t>(H + k)])) * hp[k];
                  for (int64_t j = 0; j < H; ++j) ha[2 * H + j] = rb ? rb[2 * H + j] : 0.0f;
                  accumulateRows(rt.data() + 2 * H, H, GH, rh.data(), ha + 2 * H, H);
                }
                float* ho = hn.data() + n * H;
                if (cell_ == Cell::Rnn) {
                  for (int64_t j = 0; j < H; ++j)
                    ho[j] = std::tanh(cl(xg[static_cast<size_t>(j)] + hg[static_cast<size_t>(j)]));
                } else if (cell_ == Cell::Gru) {
                  for (int64_t j = 0; j < H; ++j) {
                    const float z = sigm(cl(xg[static_cast<size_t>(j)] + hg[static_cast<size_t>(j)]));
                    const float rr = sigm(cl(xg[static_cast<size_t>(H + j)] + hg[static_cast<size_t>(H + j)]));
                    float hh;
                    if (lbr_) {
                      hh = std::tanh(cl(xg[static_cast<size_t>(2 * H + j)] + rr * hg[static_cast<size_t>(2 * H + j)]));
                    } else {  // (r . h_prev) * Rh + Rbh, computed above into hg
                      hh = std::tanh(cl(xg[static_cast<size_t>(2 * H + j)] + hg[static_cast<size_t>(2 * H + j)]));
                    }
                    ho[j] = (1.0f - z) * hh + z * hp[j];
                  }
                } else {
                  float* cp = c.data() + n * H;
                  for (int64_t j = 0; j < H; ++j) {
                    auto g = [&](int64_t q) {
                      return xg[static_cast<size_t>(q * H + j)] + hg[static_cast<size_t>(q * H + j)];
                    };
                    const float ig = sigm(cl(g(0) + (pp ? pp[j] * cp[j] : 0.0f)));
                    const float fg = sigm(cl(g(2) + (pp ? pp[2 * H + j] * cp[j] : 0.0f)));
                    const float cc = std::tanh(cl(g(3)));
                    const float cn = fg * cp[j] + ig * cc;
                    const float og = sigm(cl(g(1) + (pp ? pp[H + j] * cn : 0.0f)));
                    cp[j] = cn;
                    ho[j] = og * std::tanh(cn);
                  }
                }
                std::memcpy(yAt(t, d, n), ho, static_cast<size_t>(H) * sizeof(float));
              }
            },
            1);
        std::swap(h, hn);
      }
      for (int64_t n = 0; n < N; ++n) {
        if (lens[static_cast<size_t>(n)] == 0) {  // no step: zero states, as ONNX Runtime gives
          std::fill_n(h.data() + n * H, H, 0.0f);
          std::fill_n(c.data() + n * H, H, 0.0f);
        }
        std::memcpy(hAt(out[1], d, n), h.data() + n * H, static_cast<size_t>(H) * sizeof(float));
        if (cell_ == Cell::Lstm)
          std::memcpy(hAt(out[2], d, n), c.data() + n * H, static_cast<size_t>(H) * sizeof(float));
      }
    }
    return Status::ok();
  }

 private:
  Cell cell_;
  int64_t hidden_;
  float clip_;
  int64_t layout_;
  bool lbr_;
  std::string dir_;
};

std::string checkRnn(const Graph& g, const Node& n, Cell cell) {
  if (auto e = checkDTypes(g, n, {DType::Float32, DType::Int32}); !e.empty()) return e;
  if (n.attrInt("input_forget", 0) != 0) return "input_forget is not supported";
  const std::string dir = n.attrString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return "direction " + dir;
  if (n.hasAttr("activations")) {
    auto it = n.attrs.find("activations");
    const auto* acts = std::get_if<std::vector<std::string>>(&it->second.value);
    std::vector<std::string> def = cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                   : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                       : std::vector<std::string>{"Tanh"};
    if (!acts) return "activations attribute unreadable";
    for (size_t i = 0; i < acts->size(); ++i)
      if ((*acts)[i] != def[i % def.size()]) return "activation " + (*acts)[i] + " is not supported";
  }
  if (n.hasAttr("activation_alpha") || n.hasAttr("activation_beta")) return "activation parameters are not supported";
  if (n.attrInt("layout", 0) != 0 && n.attrInt("layout", 0) != 1) return "layout";
  return "";
}

}  // namespace

void addMiscOps(std::vector<OpEntry>& t) {
  for (auto [op, cell] : {std::pair{"RNN", Cell::Rnn}, std::pair{"GRU", Cell::Gru}, std::pair{"LSTM", Cell::Lstm}}) {
    const Cell c = cell;
    t.push_back({op, [c](const Graph& g, const Node& n) { return checkRnn(g, n, c); },
                 [c](const Graph&, const Node& n) -> Result<std::unique_ptr<OpKernel>> {
                   return std::unique_ptr<OpKernel>(std::make_unique<RnnKernel>(n, c));
                 }});
  }
}

}  // namespace partex::cpu
