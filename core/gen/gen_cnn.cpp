// Convolutional networks for the generator: ResNet-18, MobileNetV2 and an Inception-v1 (GoogLeNet).
#include <array>

#include "gen/gen_builder.h"

namespace partex::gen {

namespace {

/// An NCHW activation.
struct T {
  std::string name;
  int64_t c = 0, h = 0, w = 0;
};

/// Output size of a floor-mode window; 0 when the window does not fit.
int64_t outSize(int64_t in, int64_t k, int64_t stride, int64_t pad) {
  const int64_t span = in + 2 * pad - k;
  return span < 0 ? 0 : span / stride + 1;
}

void checkSpatial(const Builder& b, const T& t, const std::string& where) {
  if (t.h < 1 || t.w < 1)
    throw GenError("imageSize " + std::to_string(b.spec().imageSize) + " is too small for " + b.spec().kind +
                   " (nothing left at " + where + ")");
}

/// Conv with weight [cout, cin/group, k, k] (and a bias when `bias`).
T conv(Builder& b, const T& x, const std::string& name, int64_t cout, int64_t k, int64_t stride, int64_t pad,
       int64_t group = 1, bool bias = false) {
  const int64_t fanIn = x.c / group * k * k;
  const float r = 1.0f / static_cast<float>(fanIn > 0 ? fanIn : 1);
  std::vector<std::string> in{x.name, b.weight(name + ".weight", {cout, x.c / group, k, k}, -r, r)};
  if (bias) in.push_back(b.weight(name + ".bias", {cout}, -r, r));
  b.op("Conv", name, in);
  auto& n = b.last();
  setAttr(n, "kernel_shape", Dims{k, k});
  setAttr(n, "strides", Dims{stride, stride});
  setAttr(n, "pads", Dims{pad, pad, pad, pad});
  setAttr(n, "dilations", Dims{1, 1});
  setAttr(n, "group", group);
  T y{name, cout, outSize(x.h, k, stride, pad), outSize(x.w, k, stride, pad)};
  checkSpatial(b, y, name);
  return y;
}

T batchNorm(Builder& b, const T& x, const std::string& name) {
  const Dims c{x.c};
  b.op("BatchNormalization", name,
       {x.name, b.weight(name + ".weight", c, 0.8f, 1.2f), b.weight(name + ".bias", c, -0.1f, 0.1f),
        b.weight(name + ".running_mean", c, -0.1f, 0.1f), b.weight(name + ".running_var", c, 0.5f, 1.5f)});
  setAttr(b.last(), "epsilon", 1e-5f);
  setAttr(b.last(), "momentum", 0.9f);
  return {name, x.c, x.h, x.w};
}

T unary(Builder& b, const T& x, const std::string& opType, const std::string& name) {
  b.op(opType, name, {x.name});
  return {name, x.c, x.h, x.w};
}

T relu6(Builder& b, const T& x, const std::string& name) {
  b.op("Clip", name, {x.name, b.constF32Scalar("const.zero", 0.0f), b.constF32Scalar("const.six", 6.0f)});
  return {name, x.c, x.h, x.w};
}

T maxPool(Builder& b, const T& x, const std::string& name, int64_t k, int64_t stride, int64_t pad) {
  b.op("MaxPool", name, {x.name});
  auto& n = b.last();
  setAttr(n, "kernel_shape", Dims{k, k});
  setAttr(n, "strides", Dims{stride, stride});
  setAttr(n, "pads", Dims{pad, pad, pad, pad});
  T y{name, x.c, outSize(x.h, k, stride, pad), outSize(x.w, k, stride, pad)};
  checkSpatial(b, y, name);
  return y;
}

T add(Builder& b, const T& x, const T& y, const std::string& name) {
  b.op("Add", name, {x.name, y.name});
  return {name, x.c, x.h, x.w};
}

T input(Builder& b) {
  const auto& s = b.spec();
  b.input("input", onnx::TensorProto::FLOAT, {s.batch, 3, s.imageSize, s.imageSize});
  return {"input", 3, s.imageSize, s.imageSize};
}

/// GlobalAveragePool, Flatten, Gemm(fc) producing "logits" [batch, numClasses].
void classifier(Builder& b, const T& x, const std::string& fcName) {
  const auto& s = b.spec();
  b.op("GlobalAveragePool", "avgpool", {x.name});
  b.op("Flatten", "flatten", {"avgpool"});
  setAttr(b.last(), "axis", int64_t{1});
  const float r = 1.0f / static_cast<float>(x.c);
  b.node("Gemm", fcName,
         {"flatten", b.weight(fcName + ".weight", {s.numClasses, x.c}, -r, r),
          b.weight(fcName + ".bias", {s.numClasses}, -r, r)},
         {"logits"});
  setAttr(b.last(), "transB", int64_t{1});
  b.output("logits", onnx::TensorProto::FLOAT, {s.batch, s.numClasses});
}

}  // namespace

void buildResNet18(Builder& b) {
  T x = input(b);
  x = conv(b, x, "conv1", 64, 7, 2, 3);
  x = batchNorm(b, x, "bn1");
  x = unary(b, x, "Relu", "relu");
  x = maxPool(b, x, "maxpool", 3, 2, 1);
  const std::array<int64_t, 4> widths{64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int blk = 0; blk < 2; ++blk) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(blk) + ".";
      const int64_t cout = widths[stage];
      const int64_t stride = (stage > 0 && blk == 0) ? 2 : 1;
      T identity = x;
      T y = conv(b, x, p + "conv1", cout, 3, stride, 1);
      y = batchNorm(b, y, p + "bn1");
      y = unary(b, y, "Relu", p + "relu1");
      y = conv(b, y, p + "conv2", cout, 3, 1, 1);
      y = batchNorm(b, y, p + "bn2");
      if (stride != 1 || x.c != cout) {
        identity = conv(b, x, p + "downsample.0", cout, 1, stride, 0);
        identity = batchNorm(b, identity, p + "downsample.1");
      }
      y = add(b, y, identity, p + "add");
      x = unary(b, y, "Relu", p + "relu2");
    }
  }
  classifier(b, x, "fc");
}

void buildMobileNetV2(Builder& b) {
  T x = input(b);
  x = conv(b, x, "features.0.0", 32, 3, 2, 1);
  x = batchNorm(b, x, "features.0.1");
  x = relu6(b, x, "features.0.2");
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 1;
  for (const auto& st : settings) {
    for (int64_t i = 0; i < st.n; ++i, ++index) {
      const std::string p = "features." + std::to_string(index) + ".conv.";
      const int64_t stride = i == 0 ? st.s : 1;
      const int64_t hiddenC = x.c * st.t;
      T y = x;
      int layer = 0;
      if (st.t != 1) {
        const std::string q = p + std::to_string(layer++) + ".";
        y = conv(b, y, q + "0", hiddenC, 1, 1, 0);
        y = batchNorm(b, y, q + "1");
        y = relu6(b, y, q + "2");
      }
      const std::string q = p + std::to_string(layer++) + ".";
      y = conv(b, y, q + "0", hiddenC, 3, stride, 1, hiddenC);
      y = batchNorm(b, y, q + "1");
      y = relu6(b, y, q + "2");
      y = conv(b, y, p + std::to_string(layer), st.c, 1, 1, 0);
      y = batchNorm(b, y, p + std::to_string(layer + 1));
      if (stride == 1 && x.c == st.c) y = add(b, x, y, "features." + std::to_string(index) + ".add");
      x = y;
    }
  }
  const std::string last = "features." + std::to_string(index) + ".";
  x = conv(b, x, last + "0", 1280, 1, 1, 0);
  x = batchNorm(b, x, last + "1");
  x = relu6(b, x, last + "2");
  classifier(b, x, "classifier.1");
}

void buildInception(Builder& b) {
  // GoogLeNet (Szegedy et al. 2014) as in the Caffe model zoo and onnx's light_inception_v1:
  // Conv+Relu, LRN in the stem, floor-mode 3x3/2 max pools, nine inception modules.
  auto convRelu = [&](const T& x, const std::string& scope, const std::string& leaf, int64_t cout, int64_t k,
                      int64_t stride, int64_t pad) {
    T y = conv(b, x, scope + "." + leaf, cout, k, stride, pad, 1, true);
    return unary(b, y, "Relu", scope + ".relu_" + leaf);
  };
  auto lrn = [&](const T& x, const std::string& name) {
    b.op("LRN", name, {x.name});
    auto& n = b.last();
    setAttr(n, "size", int64_t{5});
    setAttr(n, "alpha", 1e-4f);
    setAttr(n, "beta", 0.75f);
    setAttr(n, "bias", 1.0f);
    return T{name, x.c, x.h, x.w};
  };
  T x = input(b);
  x = convRelu(x, "conv1", "7x7_s2", 64, 7, 2, 3);
  x = maxPool(b, x, "pool1.3x3_s2", 3, 2, 0);
  x = lrn(x, "pool1.norm1");
  x = convRelu(x, "conv2", "3x3_reduce", 64, 1, 1, 0);
  x = convRelu(x, "conv2", "3x3", 192, 3, 1, 1);
  x = lrn(x, "conv2.norm2");
  x = maxPool(b, x, "pool2.3x3_s2", 3, 2, 0);
  struct Module {
    const char* name;
    int64_t c1, c3r, c3, c5r, c5, pp;
  };
  const Module modules[] = {
      {"inception_3a", 64, 96, 128, 16, 32, 32},     {"inception_3b", 128, 128, 192, 32, 96, 64},
      {"inception_4a", 192, 96, 208, 16, 48, 64},    {"inception_4b", 160, 112, 224, 24, 64, 64},
      {"inception_4c", 128, 128, 256, 24, 64, 64},   {"inception_4d", 112, 144, 288, 32, 64, 64},
      {"inception_4e", 256, 160, 320, 32, 128, 128}, {"inception_5a", 256, 160, 320, 32, 128, 128},
      {"inception_5b", 384, 192, 384, 48, 128, 128},
  };
  for (const auto& m : modules) {
    const std::string s = m.name;
    if (s == "inception_4a") x = maxPool(b, x, "pool3.3x3_s2", 3, 2, 0);
    if (s == "inception_5a") x = maxPool(b, x, "pool4.3x3_s2", 3, 2, 0);
    T b1 = convRelu(x, s, "1x1", m.c1, 1, 1, 0);
    T b2 = convRelu(convRelu(x, s, "3x3_reduce", m.c3r, 1, 1, 0), s, "3x3", m.c3, 3, 1, 1);
    T b3 = convRelu(convRelu(x, s, "5x5_reduce", m.c5r, 1, 1, 0), s, "5x5", m.c5, 5, 1, 2);
    T b4 = convRelu(maxPool(b, x, s + ".pool", 3, 1, 1), s, "pool_proj", m.pp, 1, 1, 0);
    b.op("Concat", s + ".output", {b1.name, b2.name, b3.name, b4.name});
    setAttr(b.last(), "axis", int64_t{1});
    x = T{s + ".output", b1.c + b2.c + b3.c + b4.c, x.h, x.w};
  }
  classifier(b, x, "loss3.classifier");
}

}  // namespace partex::gen
