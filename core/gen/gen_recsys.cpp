// Recommendation models for the generator, the "complex model structures" DUET (IPDPS 2021) schedules
// on a coupled CPU-GPU: Wide & Deep (Cheng et al., DLRS 2016: embedding lookups of sparse features
// beside a deep MLP and a wide linear part) and a multi-tower model (parallel MLP towers of different
// widths over one shared bottom, as multi-task recommenders write them). Both are many small,
// independent, memory-bound operators (embedding Gathers) next to a few large dense ones.
#include "gen/gen_builder.h"

namespace partex::gen {

namespace {

constexpr float kInit = 0.05f;
constexpr int64_t kDenseFeatures = 13;  ///< Criteo's dense features, as in the DLRM and Wide & Deep setups.
constexpr int64_t kEmbeddingDim = 32;

/// x @ W + b, optionally followed by Relu.
std::string dense(Builder& b, const std::string& x, const std::string& scope, int64_t in, int64_t out, bool relu) {
  std::string w = b.weight(scope + ".weight", {in, out}, -kInit, kInit);
  std::string bias = b.weight(scope + ".bias", {out}, -kInit, kInit);
  std::string y = b.op("Add", scope + ".add", {b.op("MatMul", scope + ".matmul", {x, w}), bias});
  return relu ? b.op("Relu", scope + ".relu", {y}) : y;
}

}  // namespace

void buildWideDeep(Builder& b) {
  const auto& s = b.spec();
  const int64_t B = s.batch, F = s.width;
  std::string denseIn = b.input("dense_features", onnx::TensorProto::FLOAT, {B, kDenseFeatures});
  std::vector<std::string> deepParts = {denseIn}, wideParts;
  for (int64_t f = 0; f < F; ++f) {
    const std::string id = b.input("sparse_" + std::to_string(f), onnx::TensorProto::INT64, {B});
    const std::string p = "feature" + std::to_string(f);
    // Deep: the feature's embedding [B, E]; wide: its one-hot weight [B, 1] (a lookup of a [vocab, 1] table).
    b.op("Gather", p + ".embedding", {b.weight(p + ".embedding.weight", {s.vocab, kEmbeddingDim}, -kInit, kInit), id});
    setAttr(b.last(), "axis", int64_t{0});
    deepParts.push_back(p + ".embedding");
    wideParts.push_back(b.op("Gather", p + ".wide", {b.weight(p + ".wide.weight", {s.vocab, 1}, -kInit, kInit), id}));
    setAttr(b.last(), "axis", int64_t{0});
  }
  std::string x = b.op("Concat", "deep.concat", deepParts);
  setAttr(b.last(), "axis", int64_t{1});
  int64_t width = kDenseFeatures + F * kEmbeddingDim;
  for (int64_t l = 0; l < s.layers; ++l) {
    // Halving widths, as the paper's 1024-512-256 tower, never below 16.
    const int64_t out = std::max<int64_t>(16, s.hidden >> l);
    x = dense(b, x, "deep.layer" + std::to_string(l), width, out, true);
    width = out;
  }
  std::string deepLogit = dense(b, x, "deep.logit", width, 1, false);
  wideParts.push_back(dense(b, denseIn, "wide.dense", kDenseFeatures, 1, false));
  std::string wideLogit = b.op("Sum", "wide.sum", wideParts);
  std::string logit = b.op("Add", "logit", {deepLogit, wideLogit});
  b.node("Sigmoid", "probability", {logit}, {"probability"});
  b.output("probability", onnx::TensorProto::FLOAT, {B, 1});
}

void buildMultiTower(Builder& b) {
  const auto& s = b.spec();
  const int64_t B = s.batch, H = s.hidden;
  std::string x = b.input("features", onnx::TensorProto::FLOAT, {B, H});
  x = dense(b, x, "bottom", H, H, true);
  std::vector<std::string> heads;
  for (int64_t t = 0; t < s.width; ++t) {
    // Towers of different widths (H, H/2, H/4, then again): small ones suit the CPU, big ones the GPU.
    const int64_t w = std::max<int64_t>(16, H >> (t % 3));
    std::string y = x;
    int64_t in = H;
    for (int64_t l = 0; l < s.layers; ++l) {
      y = dense(b, y, "tower" + std::to_string(t) + ".layer" + std::to_string(l), in, w, true);
      in = w;
    }
    heads.push_back(dense(b, y, "tower" + std::to_string(t) + ".head", in, 1, false));
  }
  b.node("Concat", "scores", heads, {"scores"});
  setAttr(b.last(), "axis", int64_t{1});
  b.output("scores", onnx::TensorProto::FLOAT, {B, s.width});
}

}  // namespace partex::gen
