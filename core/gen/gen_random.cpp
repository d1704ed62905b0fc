// Random DAGs for the generator: exactly spec.nodes operators on small NCHW tensors, in about
// spec.width parallel branches that now and then merge (Add, Concat). Shapes stay consistent by
// construction: spatial size is fixed, channels are tracked and Concat is bounded.
#include <algorithm>
#include <set>

#include "gen/gen_builder.h"

namespace partex::gen {

namespace {

constexpr int64_t kSpatial = 16;      // H = W of every tensor.
constexpr int64_t kBaseChannels = 8;  // Input channels; convolutions output 8 or 16.
constexpr int64_t kMaxChannels = 32;  // Concat never goes beyond this.

struct Head {
  std::string name;
  int64_t c = 0;
};

}  // namespace

void buildRandomDag(Builder& b) {
  const auto& s = b.spec();
  Rng& rng = b.rng();
  b.input("input", onnx::TensorProto::FLOAT, {s.batch, kBaseChannels, kSpatial, kSpatial});
  const int64_t width = std::min<int64_t>(s.width, s.nodes);
  std::vector<Head> heads(static_cast<size_t>(width), Head{"input", kBaseChannels});

  for (int64_t i = 0; i < s.nodes; ++i) {
    const size_t bi = static_cast<size_t>(rng.below(width));
    Head& h = heads[bi];
    const Head other = heads[static_cast<size_t>(rng.below(width))];
    std::string scope = "block";
    scope += std::to_string(i / 100);
    scope += ".branch";
    scope += std::to_string(bi);
    scope += '.';
    const double r = rng.uniform();
    std::string idx = "_";
    idx += std::to_string(i);
    enum { Conv3, Conv1, Relu, Sigmoid, MatMul, Add, Concat } kind;
    if (r < 0.22)
      kind = Conv3;
    else if (r < 0.32)
      kind = Conv1;
    else if (r < 0.50)
      kind = Relu;
    else if (r < 0.56)
      kind = Sigmoid;
    else if (r < 0.70)
      kind = MatMul;
    else if (r < 0.86)
      kind = Add;
    else
      kind = Concat;
    if (kind == Add && other.c != h.c) kind = Conv1;
    if (kind == Concat && other.c + h.c > kMaxChannels) kind = Conv3;

    std::string name;
    int64_t c = h.c;
    switch (kind) {
      case Conv3:
      case Conv1: {
        const int64_t k = kind == Conv3 ? 3 : 1;
        name = scope + (k == 3 ? "conv3x3" : "conv1x1") + idx;
        c = rng.below(2) ? 16 : 8;
        const float range = 1.0f / static_cast<float>(h.c * k * k);
        b.op("Conv", name, {h.name, b.weight(name + ".weight", {c, h.c, k, k}, -range, range)});
        auto& n = b.last();
        setAttr(n, "kernel_shape", Dims{k, k});
        setAttr(n, "pads", Dims{k / 2, k / 2, k / 2, k / 2});
        break;
      }
      case Relu:
        name = scope + "relu" + idx;
        b.op("Relu", name, {h.name});
        break;
      case Sigmoid:
        name = scope + "sigmoid" + idx;
        b.op("Sigmoid", name, {h.name});
        break;
      case MatMul: {
        name = scope + "matmul" + idx;
        const float range = 1.0f / kSpatial;
        b.op("MatMul", name, {h.name, b.weight(name + ".weight", {kSpatial, kSpatial}, -range, range)});
        break;
      }
      case Add:
        name = scope + "add" + idx;
        b.op("Add", name, {h.name, other.name});
        break;
      case Concat:
        name = scope + "concat" + idx;
        b.op("Concat", name, {h.name, other.name});
        setAttr(b.last(), "axis", int64_t{1});
        c = h.c + other.c;
        break;
    }
    h = Head{name, c};
  }

  // Every operator output is consumed by a later operator except the final branch heads: those
  // are the model outputs.
  std::set<std::string> seen;
  for (const auto& h : heads) {
    if (h.name == "input" || !seen.insert(h.name).second) continue;
    b.output(h.name, onnx::TensorProto::FLOAT, {s.batch, h.c, kSpatial, kSpatial});
  }
}

}  // namespace partex::gen
