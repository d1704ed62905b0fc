// bench_ops: every operator type the CPU backend claims (backends/cpu opTable()), as single-operator
// ONNX models over the shapes and layouts real exporters produce (ranks 2-5, batch and broadcast dims,
// 3-D/4-D MatMul against 2-D weights and against activations, shapes that Transpose/Slice produce, odd
// and prime sizes; float32 and, where the kernel claims them, float16, int8 and int64), timed on Partex
// (Backend prepare + run on core0, one thread, median after warm-up) and on ONNX Runtime (one
// single-threaded Python process pinned to CPU 0: scripts/ort/bench_ops.py), beside the memory-traffic
// floor (bytes in + out over the stream bandwidth measured here). Activations are graph inputs; weights
// and index/shape constants are initializers, as an exporter writes them (so neither runtime can fold
// the operator away). Flags rows slower than 2x ORT, or (memory-bound operators above 1 MiB) slower than
// 3x the floor. Issue 24.
//
// Usage: bench_ops [--filter OP[,OP...]] [--quick] [--reps N] [--work DIR] [--markdown FILE]
//                  [--python PATH] [--no-ort]

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cpu/cpu_ops.h"
#include "gen/gen_builder.h"
#include "onnx/importer.h"

using namespace partex;
using gen::Builder;
using Dims = std::vector<int64_t>;

namespace {

constexpr int32_t F32 = onnx::TensorProto::FLOAT, F16 = onnx::TensorProto::FLOAT16, I8 = onnx::TensorProto::INT8,
                  I64 = onnx::TensorProto::INT64, BOOL = onnx::TensorProto::BOOL, U8 = onnx::TensorProto::UINT8;

const char* typeName(int32_t t) {
  switch (t) {
    case F32:
      return "f32";
    case F16:
      return "f16";
    case I8:
      return "i8";
    case I64:
      return "i64";
    case BOOL:
      return "bool";
    case U8:
      return "u8";
    default:
      return "?";
  }
}

/// One single-operator model: `build` declares the inputs, the node and its outputs for element type T.
struct Case {
  std::string op, label;
  std::vector<int32_t> types;
  std::function<void(Builder&, int32_t)> build;
};

// --- model-building helpers ---------------------------------------------------------------------------

/// A graph input (an activation).
std::string act(Builder& b, int32_t t, const Dims& d) {
  return b.input("x" + std::to_string(b.model().graph().input_size()), t, d);
}
std::string uniq(Builder& b, const char* p) {
  return p + std::to_string(b.model().graph().initializer_size() + b.model().graph().node_size());
}
/// A float weight (initializer), of type t when t is a float type.
std::string wt(Builder& b, const Dims& d, int32_t t = F32) {
  return b.weight(uniq(b, "w"), d, -0.1f, 0.1f, t == F16 ? F16 : F32);
}
std::string i64(Builder& b, const std::vector<int64_t>& v) {
  return b.constI64Vec(uniq(b, "c"), v);
}
std::string i64s(Builder& b, int64_t v) {
  return b.constI64Scalar(uniq(b, "c"), v);
}

/// The operator node, outputs y0..y<nOut-1> declared with element type `outType` and no shape.
onnx::NodeProto& node(Builder& b, const std::string& op, const std::vector<std::string>& ins, int32_t outType,
                      int nOut = 1) {
  std::vector<std::string> outs;
  for (int i = 0; i < nOut; ++i) outs.push_back("y" + std::to_string(i));
  auto& n = b.node(op, "op", ins, outs);
  for (const auto& o : outs) {
    auto* vi = b.model().mutable_graph()->add_output();
    vi->set_name(o);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(outType);
  }
  return n;
}
void sattr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// --- the grid -------------------------------------------------------------------------------------------

const std::vector<int32_t> kFloat = {F32}, kFloats = {F32, F16}, kArith = {F32, F16, I64}, kMove = {F32, F16, I8, I64};

std::vector<Case> allCases() {
  std::vector<Case> cs;
  auto add = [&](const std::string& op, const std::string& label, std::vector<int32_t> types,
                 std::function<void(Builder&, int32_t)> f) {
    cs.push_back({op, label, std::move(types), std::move(f)});
  };

  // Unary element-wise: a transformer activation, a CNN feature map, odd sizes at rank 5.
  const std::vector<std::string> unary = {"Abs",       "Neg",
                                          "Relu",      "Sigmoid",
                                          "Tanh",      "Exp",
                                          "Log",       "Sqrt",
                                          "Erf",       "Floor",
                                          "Ceil",      "Round",
                                          "Sign",      "Reciprocal",
                                          "Sin",       "Cos",
                                          "Tan",       "Asin",
                                          "Acos",      "Atan",
                                          "Sinh",      "Cosh",
                                          "Asinh",     "Acosh",
                                          "Atanh",     "Softsign",
                                          "Softplus",  "Elu",
                                          "Selu",      "Celu",
                                          "LeakyRelu", "HardSigmoid",
                                          "HardSwish", "ThresholdedRelu",
                                          "Shrink",    "Identity",
                                          "Dropout"};
  // Mish (opset 18) and Gelu (opset 20) are newer than the ONNX 1.12 checker the builder runs: no case.
  for (const auto& op : unary) {
    // float16 only where ONNX's schema allows it (Celu is float32-only in opset 17).
    const auto types = op == "Abs" || op == "Neg" || op == "Relu" || op == "Sign" || op == "Identity" ? kArith
                       : op == "Celu"                                                                 ? kFloat
                                                                                                      : kFloats;
    for (auto [label, d] : {std::pair<const char*, Dims>{"transformer", {1, 128, 3072}},
                            {"cnn", {1, 64, 56, 56}},
                            {"odd 5-D", {1, 3, 13, 17, 85}}})
      add(op, label, types, [op, d](Builder& b, int32_t t) { node(b, op, {act(b, t, d)}, t); });
  }
  add("Not", "cnn", {BOOL}, [](Builder& b, int32_t t) { node(b, "Not", {act(b, t, {1, 64, 56, 56})}, t); });
  for (const char* op : {"IsNaN", "IsInf"})
    add(op, "transformer", std::string(op) == "IsNaN" ? kFloats : kFloat, [op](Builder& b, int32_t t) {
      node(b, op, {act(b, t, {1, 128, 3072})}, BOOL);
    });

  // Binary broadcasting: equal shapes, trailing bias, per-channel, attention mask (non-trailing), both
  // sides, scalar, rank 5 (detector heads), odd sizes.
  struct Bin {
    const char* label;
    Dims a, b;
    bool weight;  // the second operand is an initializer (bias, scale)
  };
  const std::vector<Bin> bins = {{"same", {1, 128, 768}, {1, 128, 768}, false},
                                 {"bias [768]", {1, 128, 768}, {768}, true},
                                 {"channel", {1, 64, 56, 56}, {1, 64, 1, 1}, true},
                                 {"mask", {2, 12, 128, 128}, {2, 1, 1, 128}, false},
                                 {"spatial", {1, 64, 56, 56}, {1, 1, 56, 56}, false},
                                 {"both sides", {8, 1, 64}, {1, 32, 64}, false},
                                 {"scalar", {1, 128, 768}, {}, true},
                                 {"5-D head", {1, 3, 20, 20, 85}, {1, 3, 20, 20, 1}, false},
                                 {"odd", {3, 37, 53}, {37, 1}, false}};
  struct BinOp {
    const char* op;
    std::vector<int32_t> types;
    bool boolOut;
  };
  const std::vector<BinOp> binOps = {{"Add", kArith, false},
                                     {"Sub", kArith, false},
                                     {"Mul", kArith, false},
                                     {"Div", kArith, false},
                                     {"Pow", kFloat, false},
                                     {"Max", kArith, false},
                                     {"Min", kArith, false},
                                     {"Mod", {I64}, false},
                                     {"Equal", kArith, true},
                                     {"Less", kArith, true},
                                     {"Greater", kArith, true},
                                     {"LessOrEqual", kFloat, true},
                                     {"GreaterOrEqual", kFloat, true},
                                     {"PRelu", kFloats, false},
                                     {"And", {BOOL}, true},
                                     {"Or", {BOOL}, true},
                                     {"Xor", {BOOL}, true},
                                     {"BitShift", {U8}, false}};
  for (const auto& bo : binOps)
    for (const auto& bc : bins) {
      if (std::string(bo.op) == "PRelu" && bc.label == std::string("both sides")) continue;
      const bool w = bc.weight && (bo.types[0] == F32);
      add(bo.op, bc.label, bo.types, [bo, bc, w](Builder& b, int32_t t) {
        const std::string x = act(b, t, bc.a);
        const std::string y = w && (t == F32 || t == F16) ? wt(b, bc.b, t) : act(b, t, bc.b);
        auto& n = node(b, bo.op, {x, y}, bo.boolOut && std::string(bo.op) != "BitShift" ? BOOL : t);
        if (std::string(bo.op) == "BitShift") sattr(n, "direction", "LEFT");
      });
    }
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    add(op, "3 inputs", std::string(op) == "Mean" ? kFloats : kArith, [op](Builder& b, int32_t t) {
      const Dims d = {1, 128, 768};
      node(b, op, {act(b, t, d), act(b, t, d), act(b, t, d)}, t);
    });
  add("Where", "mask", kMove, [](Builder& b, int32_t t) {
    node(b, "Where", {act(b, BOOL, {1, 1, 128, 128}), act(b, t, {2, 12, 128, 128}), act(b, t, {})}, t);
  });
  add("Where", "same", kMove, [](Builder& b, int32_t t) {
    const Dims d = {1, 128, 768};
    node(b, "Where", {act(b, BOOL, d), act(b, t, d), act(b, t, d)}, t);
  });
  for (auto [from, to] : {std::pair{F32, F16}, {F16, F32}, {F32, I64}, {I64, F32}, {F32, I8}, {BOOL, F32}})
    add("Cast", std::string(typeName(from)) + "->" + typeName(to), {from}, [to](Builder& b, int32_t t) {
      auto& n = node(b, "Cast", {act(b, t, {1, 128, 3072})}, to);
      gen::setAttr(n, "to", int64_t{to});
    });
  add("CastLike", "f32->f16", {F32}, [](Builder& b, int32_t t) {
    node(b, "CastLike", {act(b, t, {1, 128, 3072}), act(b, F16, {1})}, F16);
  });
  add("Clip", "relu6", kFloat, [](Builder& b, int32_t t) {
    node(b, "Clip", {act(b, t, {1, 64, 56, 56}), b.constF32Scalar("lo", 0), b.constF32Scalar("hi", 6)}, t);
  });

  // Reductions over the last axis, spatial axes, the first axis, a middle axis, everything.
  struct Red {
    const char* label;
    Dims d;
    std::vector<int64_t> axes;
  };
  const std::vector<Red> reds = {{"last", {1, 128, 768}, {-1}},
                                 {"spatial", {1, 64, 56, 56}, {2, 3}},
                                 {"first", {128, 3072}, {0}},
                                 {"middle", {8, 1024, 64}, {1}},
                                 {"all", {1, 64, 56, 56}, {}}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    for (const auto& r : reds)
      add(op, r.label, std::string(op) == "ReduceSum" || std::string(op) == "ReduceMax" ? kArith : kFloat,
          [op, r](Builder& b, int32_t t) {
            std::vector<std::string> ins = {act(b, t, r.d)};
            const bool axesInput = std::string(op) == "ReduceSum";
            if (axesInput && !r.axes.empty()) ins.push_back(i64(b, r.axes));
            auto& n = node(b, op, ins, t);
            if (!axesInput && !r.axes.empty()) gen::setAttr(n, "axes", r.axes);
          });
  for (const char* op : {"ArgMax", "ArgMin"})
    for (auto [label, d, axis] :
         {std::tuple<const char*, Dims, int64_t>{"last", {8, 128, 1000}, -1}, {"middle", {1, 1000, 64}, 1}})
      add(op, label, kFloat, [op, d, axis](Builder& b, int32_t t) {
        auto& n = node(b, op, {act(b, t, d)}, I64);
        gen::setAttr(n, "axis", axis);
      });
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (auto [label, d, axis] : {std::tuple<const char*, Dims, int64_t>{"attention", {2, 12, 128, 128}, -1},
                                  {"axis 1", {1, 16, 64, 64}, 1},
                                  {"axis 2", {2, 12, 128, 128}, 2},
                                  {"odd", {3, 37, 61}, -1}})
      add(op, label, std::string(op) == "Softmax" ? kFloats : kFloat, [op, d, axis](Builder& b, int32_t t) {
        auto& n = node(b, op, {act(b, t, d)}, t);
        gen::setAttr(n, "axis", axis);
      });
  for (auto [label, d] : {std::pair<const char*, Dims>{"bert", {1, 128, 768}}, {"vit odd", {1, 197, 384}}})
    add("LayerNormalization", label, kFloats, [d](Builder& b, int32_t t) {
      const int64_t c = d.back();
      node(b, "LayerNormalization", {act(b, t, d), wt(b, {c}, t), wt(b, {c}, t)}, t);
    });
  add("BatchNormalization", "cnn", kFloat, [](Builder& b, int32_t t) {
    const int64_t c = 64;
    auto& n = b.node("BatchNormalization", "op",
                     {act(b, t, {1, c, 56, 56}), wt(b, {c}), wt(b, {c}), wt(b, {c}), b.weight("var", {c}, 0.5f, 1.5f)},
                     {"y0"});
    (void)n;
    auto* vi = b.model().mutable_graph()->add_output();
    vi->set_name("y0");
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(t);
  });
  add("InstanceNormalization", "cnn", kFloat, [](Builder& b, int32_t t) {
    node(b, "InstanceNormalization", {act(b, t, {1, 64, 56, 56}), wt(b, {64}), wt(b, {64})}, t);
  });
  add("MeanVarianceNormalization", "cnn", kFloat, [](Builder& b, int32_t t) {
    node(b, "MeanVarianceNormalization", {act(b, t, {1, 64, 56, 56})}, t);
  });
  add("LRN", "alexnet", kFloat, [](Builder& b, int32_t t) {
    auto& n = node(b, "LRN", {act(b, t, {1, 64, 56, 56})}, t);
    gen::setAttr(n, "size", int64_t{5});
  });

  // Data movement.
  for (auto [label, d, perm] : {std::tuple<const char*, Dims, Dims>{"2-D weight", {768, 3072}, {1, 0}},
                                {"heads split", {1, 128, 12, 64}, {0, 2, 1, 3}},
                                {"key transpose", {1, 12, 128, 64}, {0, 1, 3, 2}},
                                {"nchw->nhwc", {1, 64, 56, 56}, {0, 2, 3, 1}},
                                {"nhwc->nchw", {1, 56, 56, 64}, {0, 3, 1, 2}},
                                {"5-D detector", {1, 3, 85, 20, 20}, {0, 1, 3, 4, 2}},
                                {"5-D shuffle", {1, 2, 58, 28, 28}, {0, 2, 1, 3, 4}},
                                {"odd 3-D", {37, 53, 61}, {2, 0, 1}}})
    add("Transpose", label, kMove, [d, perm](Builder& b, int32_t t) {
      auto& n = node(b, "Transpose", {act(b, t, d)}, t);
      gen::setAttr(n, "perm", perm);
    });
  for (auto [label, ds, axis] :
       {std::tuple<const char*, std::vector<Dims>, int64_t>{"axis 0", {{128, 768}, {128, 768}, {128, 768}}, 0},
        {"last axis", {{1, 128, 384}, {1, 128, 384}}, -1},
        {"channels", {{1, 64, 56, 56}, {1, 64, 56, 56}}, 1},
        {"kv cache", {{1, 12, 127, 64}, {1, 12, 1, 64}}, 2},
        {"odd last", {{3, 37, 5}, {3, 37, 7}, {3, 37, 11}}, -1}})
    add("Concat", label, kMove, [ds, axis](Builder& b, int32_t t) {
      std::vector<std::string> ins;
      for (const auto& d : ds) ins.push_back(act(b, t, d));
      auto& n = node(b, "Concat", ins, t);
      gen::setAttr(n, "axis", axis);
    });
  for (auto [label, d, axis, parts] : {std::tuple<const char*, Dims, int64_t, int>{"qkv last", {1, 128, 2304}, -1, 3},
                                       {"channels", {1, 128, 56, 56}, 1, 2},
                                       {"axis 0", {6, 128, 768}, 0, 3}})
    add("Split", label, kMove, [d, axis, parts](Builder& b, int32_t t) {
      std::vector<int64_t> split(
          static_cast<size_t>(parts),
          d[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(d.size()) : axis)] / parts);
      auto& n = node(b, "Split", {act(b, t, d), i64(b, split)}, t, parts);
      gen::setAttr(n, "axis", axis);
    });
  struct Sl {
    const char* label;
    Dims d;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  for (const Sl& s : std::vector<Sl>{{"qkv last", {1, 128, 2304}, {768}, {1536}, {-1}, {1}},
                                     {"stride 2 spatial", {1, 64, 56, 56}, {0, 0}, {56, 56}, {2, 3}, {2, 2}},
                                     {"5-D head", {1, 3, 20, 20, 85}, {0}, {2}, {4}, {1}},
                                     {"reverse", {1, 128, 768}, {-1}, {-129}, {1}, {-1}},
                                     {"first rows", {1, 512, 768}, {0}, {128}, {1}, {1}}})
    add("Slice", s.label, kMove, [s](Builder& b, int32_t t) {
      node(b, "Slice", {act(b, t, s.d), i64(b, s.starts), i64(b, s.ends), i64(b, s.axes), i64(b, s.steps)}, t);
    });
  add("Gather", "embedding", kFloats, [](Builder& b, int32_t t) {
    node(b, "Gather", {wt(b, {8192, 768}, t), act(b, I64, {1, 128})}, t);
  });
  add("Gather", "cls token", kMove, [](Builder& b, int32_t t) {
    auto& n = node(b, "Gather", {act(b, t, {4, 128, 768}), i64s(b, 0)}, t);
    gen::setAttr(n, "axis", int64_t{1});
  });
  add("Gather", "last axis", kMove, [](Builder& b, int32_t t) {
    std::vector<int64_t> idx;
    for (int64_t i = 55; i >= 0; i -= 2) idx.push_back(i);
    auto& n = node(b, "Gather", {act(b, t, {1, 64, 56, 56}), i64(b, idx)}, t);
    gen::setAttr(n, "axis", int64_t{-1});
  });
  add("GatherElements", "last axis", kFloat, [](Builder& b, int32_t t) {
    auto& n = node(b, "GatherElements", {act(b, t, {8, 128, 256}), act(b, I64, {8, 128, 64})}, t);
    gen::setAttr(n, "axis", int64_t{-1});
  });
  add("GatherND", "rows", kFloat, [](Builder& b, int32_t t) {
    node(b, "GatherND", {act(b, t, {8, 128, 768}), act(b, I64, {8, 32, 2})}, t);
  });
  add("ScatterND", "rows", kFloat, [](Builder& b, int32_t t) {
    node(b, "ScatterND", {act(b, t, {8, 128, 768}), act(b, I64, {8, 1, 2}), act(b, t, {8, 1, 768})}, t);
  });
  add("ScatterElements", "last axis", kFloat, [](Builder& b, int32_t t) {
    auto& n =
        node(b, "ScatterElements", {act(b, t, {8, 128, 256}), act(b, I64, {8, 128, 64}), act(b, t, {8, 128, 64})}, t);
    gen::setAttr(n, "axis", int64_t{-1});
  });
  add("OneHot", "labels", kFloat, [](Builder& b, int32_t) {
    node(b, "OneHot", {act(b, I64, {64, 128}), i64s(b, 1000), b.constFloat("vals", F32, {2}, {0.f, 1.f})}, F32);
  });
  add("Compress", "axis 1", kFloat, [](Builder& b, int32_t t) {
    std::vector<uint8_t> keep(128);
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = i % 3 != 0;
    auto& n = node(b, "Compress", {act(b, t, {8, 128, 768}), b.constBool("keep", {128}, keep)}, t);
    gen::setAttr(n, "axis", int64_t{1});
  });
  add("NonZero", "mask", {BOOL, F32}, [](Builder& b, int32_t t) {
    node(b, "NonZero", {act(b, t, {1, 128, 128})}, I64);
  });
  add("ReverseSequence", "batch", kFloat, [](Builder& b, int32_t t) {
    node(b, "ReverseSequence", {act(b, t, {128, 8, 768}), i64(b, {128, 100, 64, 1, 128, 7, 33, 90})}, t);
  });
  add("EyeLike", "square", kFloat, [](Builder& b, int32_t t) { node(b, "EyeLike", {act(b, t, {1024, 1024})}, t); });
  add("CumSum", "last", kFloat, [](Builder& b, int32_t t) {
    node(b, "CumSum", {act(b, t, {8, 128, 768}), i64s(b, -1)}, t);
  });
  add("CumSum", "middle", kFloat, [](Builder& b, int32_t t) {
    node(b, "CumSum", {act(b, t, {8, 128, 768}), i64s(b, 1)}, t);
  });
  add("TopK", "logits", kFloat, [](Builder& b, int32_t t) {
    auto& n = b.node("TopK", "op", {act(b, t, {8, 1000}), i64(b, {5})}, {"y0", "y1"});
    (void)n;
    for (auto [o, et] : {std::pair{"y0", t}, {"y1", I64}}) {
      auto* vi = b.model().mutable_graph()->add_output();
      vi->set_name(o);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(et);
    }
  });
  add("Trilu", "causal mask", kFloat, [](Builder& b, int32_t t) { node(b, "Trilu", {act(b, t, {12, 128, 128})}, t); });
  for (auto [label, d, shape] : {std::tuple<const char*, Dims, Dims>{"mask", {1, 1, 128, 128}, {2, 12, 128, 128}},
                                 {"bias", {768}, {1, 128, 768}},
                                 {"channel", {1, 64, 1, 1}, {1, 64, 56, 56}},
                                 {"middle", {4, 1, 768}, {4, 128, 768}}})
    add("Expand", label, kMove, [d, shape](Builder& b, int32_t t) {
      node(b, "Expand", {act(b, t, d), i64(b, shape)}, t);
    });
  for (auto [label, d, reps] : {std::tuple<const char*, Dims, Dims>{"batch", {1, 128, 768}, {4, 1, 1}},
                                {"spatial", {1, 64, 28, 28}, {1, 1, 2, 2}}})
    add("Tile", label, kMove, [d, reps](Builder& b, int32_t t) { node(b, "Tile", {act(b, t, d), i64(b, reps)}, t); });
  struct PadCase {
    const char* label;
    const char* mode;
    Dims d;
    std::vector<int64_t> pads;
  };
  for (const PadCase& p :
       std::vector<PadCase>{{"constant spatial", "constant", {1, 64, 56, 56}, {0, 0, 1, 1, 0, 0, 1, 1}},
                            {"tf same (asym)", "constant", {1, 32, 112, 112}, {0, 0, 0, 0, 0, 0, 1, 1}},
                            {"nhwc spatial", "constant", {1, 56, 56, 64}, {0, 1, 1, 0, 0, 1, 1, 0}},
                            {"reflect", "reflect", {1, 3, 224, 224}, {0, 0, 3, 3, 0, 0, 3, 3}},
                            {"edge", "edge", {1, 64, 56, 56}, {0, 0, 2, 2, 0, 0, 2, 2}},
                            {"sequence", "constant", {1, 127, 768}, {0, 0, 0, 0, 1, 0}},
                            {"negative", "constant", {1, 64, 58, 58}, {0, 0, -1, -1, 0, 0, -1, -1}},
                            {"5-D", "constant", {1, 16, 9, 30, 30}, {0, 0, 1, 1, 1, 0, 0, 1, 1, 1}}})
    add("Pad", p.label, kMove, [p](Builder& b, int32_t t) {
      auto& n = node(b, "Pad", {act(b, t, p.d), i64(b, p.pads)}, t);
      sattr(n, "mode", p.mode);
    });
  add("Reshape", "heads", kMove, [](Builder& b, int32_t t) {
    node(b, "Reshape", {act(b, t, {1, 128, 768}), i64(b, {1, 128, 12, 64})}, t);
  });
  add("Flatten", "cnn head", kMove, [](Builder& b, int32_t t) { node(b, "Flatten", {act(b, t, {8, 512, 7, 7})}, t); });
  add("Squeeze", "axis", kMove, [](Builder& b, int32_t t) {
    node(b, "Squeeze", {act(b, t, {8, 1, 768}), i64(b, {1})}, t);
  });
  add("Unsqueeze", "axis", kMove, [](Builder& b, int32_t t) {
    node(b, "Unsqueeze", {act(b, t, {8, 128, 768}), i64(b, {1})}, t);
  });
  add("Shape", "4-D", kFloat, [](Builder& b, int32_t t) { node(b, "Shape", {act(b, t, {1, 64, 56, 56})}, I64); });
  add("Size", "4-D", kFloat, [](Builder& b, int32_t t) { node(b, "Size", {act(b, t, {1, 64, 56, 56})}, I64); });
  for (const char* op : {"DepthToSpace", "SpaceToDepth"})
    add(op, "block 2", kFloat, [op](Builder& b, int32_t t) {
      auto& n = node(b, op, {act(b, t, {1, 64, 56, 56})}, t);
      gen::setAttr(n, "blocksize", int64_t{2});
    });
  for (auto [label, mode, d] : {std::tuple<const char*, const char*, Dims>{"nearest 2x", "nearest", {1, 64, 40, 40}},
                                {"linear 2x", "linear", {1, 32, 56, 56}}})
    add("Resize", label, kFloat, [mode, d](Builder& b, int32_t t) {
      auto& n = node(b, "Resize", {act(b, t, d), "", b.constFloat("scales", F32, {4}, {1, 1, 2, 2})}, t);
      sattr(n, "mode", mode);
    });

  // Compute-bound: Conv, MatMul, Gemm, pooling, recurrent.
  struct ConvCase {
    const char* label;
    Dims x;
    int64_t m, k, stride, group;
  };
  for (const ConvCase& c : std::vector<ConvCase>{{"3x3", {1, 64, 56, 56}, 64, 3, 1, 1},
                                                 {"1x1", {1, 256, 56, 56}, 64, 1, 1, 1},
                                                 {"depthwise", {1, 144, 56, 56}, 144, 3, 1, 144},
                                                 {"stem 7x7 s2", {1, 3, 224, 224}, 64, 7, 2, 1},
                                                 {"prime", {1, 17, 37, 41}, 29, 3, 1, 1}})
    add("Conv", c.label, kFloat, [c](Builder& b, int32_t t) {
      auto& n = node(b, "Conv", {act(b, t, c.x), wt(b, {c.m, c.x[1] / c.group, c.k, c.k}), wt(b, {c.m})}, t);
      gen::setAttr(n, "kernel_shape", Dims{c.k, c.k});
      gen::setAttr(n, "strides", Dims{c.stride, c.stride});
      gen::setAttr(n, "pads", Dims{c.k / 2, c.k / 2, c.k / 2, c.k / 2});
      gen::setAttr(n, "group", c.group);
    });
  add("ConvTranspose", "2x up", kFloat, [](Builder& b, int32_t t) {
    auto& n = node(b, "ConvTranspose", {act(b, t, {1, 64, 28, 28}), wt(b, {64, 32, 2, 2})}, t);
    gen::setAttr(n, "kernel_shape", Dims{2, 2});
    gen::setAttr(n, "strides", Dims{2, 2});
  });
  struct Mm {
    const char* label;
    Dims a, b;
    bool weight;
  };
  for (const Mm& m : std::vector<Mm>{{"bert ffn 3-D x W", {1, 128, 768}, {768, 3072}, true},
                                     {"ocr 3-D x W", {1, 40, 120}, {120, 6625}, true},
                                     {"batch 4 x W", {4, 128, 768}, {768, 768}, true},
                                     {"4-D x W", {2, 4, 64, 96}, {96, 96}, true},
                                     {"decode vector x W", {768}, {768, 3072}, true},
                                     {"2-D x W", {128, 768}, {768, 768}, true},
                                     {"attention QK", {1, 12, 128, 64}, {1, 12, 64, 128}, false},
                                     {"attention batch 2", {2, 12, 128, 64}, {2, 12, 64, 128}, false},
                                     {"broadcast left", {1, 5, 64, 32}, {3, 1, 32, 48}, false},
                                     {"4-D x 2-D act", {1, 12, 128, 64}, {64, 128}, false},
                                     {"odd 3-D", {3, 37, 53}, {3, 53, 61}, false},
                                     {"5-D x W", {1, 2, 3, 37, 53}, {53, 17}, true}})
    add("MatMul", m.label, kFloat, [m](Builder& b, int32_t t) {
      node(b, "MatMul", {act(b, t, m.a), m.weight ? wt(b, m.b) : act(b, t, m.b)}, t);
    });
  add("Gemm", "fc transB", kFloat, [](Builder& b, int32_t t) {
    auto& n = node(b, "Gemm", {act(b, t, {1, 2048}), wt(b, {1000, 2048}), wt(b, {1000})}, t);
    gen::setAttr(n, "transB", int64_t{1});
  });
  add("Gemm", "linear", kFloat, [](Builder& b, int32_t t) {
    node(b, "Gemm", {act(b, t, {128, 768}), wt(b, {768, 768}), wt(b, {768})}, t);
  });
  add("Gemm", "transA", kFloat, [](Builder& b, int32_t t) {
    auto& n = node(b, "Gemm", {act(b, t, {768, 128}), wt(b, {768, 768})}, t);
    gen::setAttr(n, "transA", int64_t{1});
  });
  for (auto [op, label, d] : {std::tuple<const char*, const char*, Dims>{"MaxPool", "3x3 s2", {1, 64, 112, 112}},
                              {"AveragePool", "3x3 s1", {1, 64, 56, 56}},
                              {"GlobalAveragePool", "head", {1, 512, 7, 7}},
                              {"GlobalMaxPool", "head", {1, 512, 7, 7}}})
    add(op, label, kFloat, [op, d](Builder& b, int32_t t) {
      auto& n = node(b, op, {act(b, t, d)}, t);
      if (std::string(op).rfind("Global", 0) == 0) return;
      const bool max = std::string(op) == "MaxPool";
      gen::setAttr(n, "kernel_shape", Dims{3, 3});
      gen::setAttr(n, "strides", Dims{max ? 2 : 1, max ? 2 : 1});
      gen::setAttr(n, "pads", Dims{1, 1, 1, 1});
    });
  for (auto [op, gates] : {std::pair{"RNN", 1}, {"GRU", 3}, {"LSTM", 4}})
    add(op, "seq 32", kFloat, [op, gates](Builder& b, int32_t t) {
      const int64_t h = 128;
      auto& n = node(
          b, op,
          {act(b, t, {32, 1, 128}), wt(b, {1, gates * h, 128}), wt(b, {1, gates * h, h}), wt(b, {1, 2 * gates * h})},
          t);
      gen::setAttr(n, "hidden_size", h);
    });
  return cs;
}

// --- measuring ------------------------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Single-thread stream bandwidth on CPU 0, bytes read + written per second (memcpy of 64 MiB, best of 5).
double streamBandwidth() {
  const size_t n = size_t{64} << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    a[static_cast<size_t>(r)] = b[n - 1];
  }
  return 2.0 * static_cast<double>(n) / best;
}

struct Row {
  std::string op, label, type, shape, model, id, note;
  int64_t bytes = 0;
  double partexUs = -1, ortUs = -1, floorUs = 0;
  bool compute = false;
};

std::string dimsStr(const std::vector<int64_t>& d) {
  if (d.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

/// Times the model's one operator on Partex; fills bytes, shape and partexUs, or note on failure.
void timePartex(Backend& cpu, const std::string& bytes, Row& row, int reps, double budgetS) {
  auto g = importOnnxBytes(bytes, row.model);
  if (!g) {
    row.note = "import: " + g.message();
    return;
  }
  // The importer folds constants only: the operator reading activations is the one left.
  OpId op = -1;
  for (OpId i = 0; i < static_cast<OpId>(g->nodes.size()); ++i)
    if (g->nodes[static_cast<size_t>(i)].opType == row.op) op = i;
  if (op < 0) {
    row.note = "operator folded away by the importer";
    return;
  }
  std::string why;
  if (!cpu.supports(*g, op, &why)) {
    row.note = "unsupported: " + why;
    return;
  }
  const Node& n = g->nodes[static_cast<size_t>(op)];
  std::vector<Tensor> ins;
  ins.reserve(n.inputs.size());
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) {
      ins.emplace_back();
      continue;
    }
    auto t = leafTensor(*g, n.inputs[i], 7 + i);
    if (!t) {
      row.note = "input: " + t.message();
      return;
    }
    ins.push_back(std::move(*t));
  }
  std::vector<std::string> shapes;
  for (size_t i = 0; i < ins.size(); ++i) {
    ptrs.push_back(n.inputs[i] < 0 ? nullptr : &ins[i]);
    if (n.inputs[i] >= 0) {
      row.bytes += ins[i].bytes();
      if (ins[i].numElements() > 1) shapes.push_back(dimsStr(ins[i].shape()));
    }
  }
  row.shape.clear();
  for (size_t i = 0; i < shapes.size() && i < 3; ++i) row.shape += (i ? " " : "") + shapes[i];
  auto k = cpu.prepare(*g, op, "core0");
  if (!k) {
    row.note = "prepare: " + k.message();
    return;
  }
  std::vector<Tensor> outs;
  std::vector<double> samples;
  // Two warm-up runs and at least three measured ones, within the time budget; an operator slower than
  // the budget on its own (a kernel off its fast path) gets one warm-up and one measured run.
  const auto start = std::chrono::steady_clock::now();
  int warm = 2;
  size_t least = 3;
  for (int r = 0;; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = (*k)->run(ptrs, outs);
    const auto t1 = std::chrono::steady_clock::now();
    if (!s) {
      row.note = "run: " + s.message();
      return;
    }
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    if (r == 0 && us > budgetS * 1e6) {
      warm = 1;
      least = 1;
    }
    if (r >= warm) samples.push_back(us);
    const double spent = std::chrono::duration<double>(t1 - start).count();
    if (static_cast<int>(samples.size()) >= reps || (samples.size() >= least && spent > budgetS)) break;
  }
  for (const Tensor& o : outs) row.bytes += o.bytes();
  row.partexUs = median(samples);
}

std::string fmt(double v, int prec = 1) {
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::set<std::string> filter;
  bool quick = false, ort = true;
  int reps = 20;
  std::string work = (std::filesystem::temp_directory_path() / "partex-bench-ops").string(), markdown;
  std::string python;
  if (const char* home = std::getenv("HOME")) python = std::string(home) + "/.local/share/partex/ort-venv/bin/python";
  if (const char* p = std::getenv("PARTEX_ORT_PYTHON")) python = p;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_ops: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--filter") {
      std::stringstream ss(next());
      for (std::string f; std::getline(ss, f, ',');) filter.insert(f);
    } else if (a == "--quick")
      quick = true;
    else if (a == "--reps")
      reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--work")
      work = next();
    else if (a == "--markdown")
      markdown = next();
    else if (a == "--python")
      python = next();
    else if (a == "--no-ort")
      ort = false;
    else {
      std::fprintf(stderr,
                   "usage: bench_ops [--filter OP[,OP...]] [--quick] [--reps N] [--work DIR] [--markdown FILE] "
                   "[--python PATH] [--no-ort]\n");
      return 2;
    }
  }
  if (quick) reps = std::min(reps, 7);
  const double budget = quick ? 0.05 : 0.3;

  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);

  BackendRegistry reg;
  registerBuiltinBackends(reg);
  Backend* cpu = reg.find("cpu");
  std::set<std::string> claimed;
  for (const cpu::OpEntry& e : cpu::opTable()) claimed.insert(e.opType);

  std::error_code ec;
  std::filesystem::create_directories(work, ec);
  if (ec) {
    std::fprintf(stderr, "bench_ops: %s: cannot create the work folder: %s\n", work.c_str(), ec.message().c_str());
    return 2;
  }

  const double bw = streamBandwidth();
  std::printf("stream bandwidth (CPU 0, memcpy read+write): %.1f GB/s\n", bw / 1e9);

  std::vector<Row> rows;
  std::set<std::string> covered;
  std::map<std::string, int> perOp;
  GenSpec spec;
  spec.kind = "bench-ops";
  spec.weights = true;
  for (const Case& c : allCases()) {
    if (!claimed.count(c.op)) continue;
    covered.insert(c.op);
    if (!filter.empty() && !filter.count(c.op)) continue;
    // --quick: the first two shape cases of each operator, float32 (or its first type) only.
    if (quick && perOp[c.op]++ >= 2) continue;
    for (size_t ti = 0; ti < c.types.size() && (!quick || ti == 0); ++ti) {
      const int32_t t = c.types[ti];
      Row row;
      row.op = c.op;
      row.label = c.label;
      row.type = typeName(t);
      row.compute = c.op == "MatMul" || c.op == "Gemm" || c.op == "Conv" || c.op == "ConvTranspose" || c.op == "RNN" ||
                    c.op == "GRU" || c.op == "LSTM" || c.op == "LRN";
      std::string id = c.op + "_" + c.label + "_" + row.type;
      for (char& ch : id)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      row.id = id + "_" + std::to_string(rows.size());
      row.model = (std::filesystem::path(work) / (row.id + ".onnx")).string();
      std::string bytes;
      try {
        Builder b(spec, row.id, 17);
        c.build(b, t);
        // Outputs were declared by element type only: ONNX's shape inference gives them their shapes.
        onnx::shape_inference::InferShapes(b.model());
        auto* graph = b.model().mutable_graph();
        for (auto& o : *graph->mutable_output())
          if (!o.type().tensor_type().has_shape())
            for (const auto& vi : graph->value_info())
              if (vi.name() == o.name()) *o.mutable_type() = vi.type();
        graph->clear_value_info();
        bytes = b.finish(true);
      } catch (const std::exception& e) {
        // A further element type ONNX's schema does not allow is no row; float32's failure is reported.
        if (ti > 0) continue;
        row.note = std::string("model: ") + e.what();
        rows.push_back(row);
        continue;
      }
      timePartex(*cpu, bytes, row, reps, budget);
      // A dtype the kernel does not claim is no row (only float32's refusal is worth reporting).
      if (row.note.rfind("unsupported", 0) == 0 && ti > 0) continue;
      std::ofstream(row.model, std::ios::binary) << bytes;
      row.floorUs = static_cast<double>(row.bytes) / bw * 1e6;
      rows.push_back(row);
      std::fprintf(stderr, "\r%zu cases", rows.size());
    }
  }
  std::fprintf(stderr, "\n");

  // ONNX Runtime: every model in one process, pinned to CPU 0.
  std::string ortNote;
  if (ort && !std::filesystem::exists(python)) {
    ortNote = "ONNX Runtime not found (" + python + "): Partex against the floor only";
    ort = false;
  }
  if (!ort && ortNote.empty()) ortNote = "ONNX Runtime skipped (--no-ort)";
  if (ort) {
    const std::string list = (std::filesystem::path(work) / "models.txt").string();
    const std::string res = (std::filesystem::path(work) / "ort.txt").string();
    {
      std::ofstream f(list);
      for (const Row& r : rows)
        if (r.partexUs >= 0) f << r.id << '\t' << r.model << '\n';
    }
    std::filesystem::remove(res, ec);
    const std::string cmd = "taskset -c 0 '" + python + "' '" PARTEX_BENCH_OPS_PY "' '" + list + "' '" + res +
                            "' --reps " + std::to_string(reps) + " --budget " + fmt(budget, 2);
    const int rc = std::system(cmd.c_str());
    std::ifstream f(res);
    std::map<std::string, std::string> got;
    for (std::string line; std::getline(f, line);) {
      const auto tab = line.find('\t');
      if (tab != std::string::npos) got[line.substr(0, tab)] = line.substr(tab + 1);
    }
    if (rc != 0 || got.empty()) ortNote = "ONNX Runtime run failed (exit " + std::to_string(rc) + ")";
    for (Row& r : rows) {
      auto it = got.find(r.id);
      if (it == got.end()) continue;
      char* end = nullptr;
      const double us = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && *end == '\0')
        r.ortUs = us;
      else if (r.note.empty())
        r.note = "ORT: " + it->second.substr(0, 80);
    }
  }

  // The table.
  std::ostringstream md;
  md << "| op | case | type | shape | bytes | Partex us | ORT us | ratio | floor us | x floor | flag |\n"
     << "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  std::printf("%-26s %-20s %-5s %-34s %10s %10s %10s %7s %9s %7s %s\n", "op", "case", "type", "shape", "bytes",
              "Partex us", "ORT us", "ratio", "floor us", "xfloor", "flag");
  double logOrt = 0, logFloor = 0;
  int nOrt = 0, nFloor = 0;
  std::vector<const Row*> measured;
  for (const Row& r : rows) {
    const double ratio = r.partexUs > 0 && r.ortUs > 0 ? r.partexUs / r.ortUs : -1;
    const double xf = r.partexUs > 0 && r.floorUs > 0 ? r.partexUs / r.floorUs : -1;
    std::string flag;
    if (ratio > 2) flag += "SLOW-vs-ORT ";
    if (!r.compute && r.bytes > (1 << 20) && xf > 3) flag += "SLOW-vs-floor ";
    if (!r.note.empty()) flag += r.note;
    if (ratio > 0) {
      logOrt += std::log(ratio);
      ++nOrt;
    }
    if (xf > 0 && !r.compute) {
      logFloor += std::log(xf);
      ++nFloor;
    }
    if (r.partexUs >= 0) measured.push_back(&r);
    std::printf("%-26s %-20s %-5s %-34s %10lld %10s %10s %7s %9s %7s %s\n", r.op.c_str(), r.label.c_str(),
                r.type.c_str(), r.shape.substr(0, 34).c_str(), static_cast<long long>(r.bytes), fmt(r.partexUs).c_str(),
                fmt(r.ortUs).c_str(), fmt(ratio, 2).c_str(), fmt(r.floorUs).c_str(), fmt(xf, 1).c_str(), flag.c_str());
    md << "| " << r.op << " | " << r.label << " | " << r.type << " | " << r.shape << " | " << r.bytes << " | "
       << fmt(r.partexUs) << " | " << fmt(r.ortUs) << " | " << fmt(ratio, 2) << " | " << fmt(r.floorUs) << " | "
       << fmt(xf, 1) << " | " << flag << " |\n";
  }
  std::ostringstream sum;
  sum << rows.size() << " cases, " << measured.size() << " ran on Partex";
  if (nOrt) sum << "; geometric mean Partex/ORT " << fmt(std::exp(logOrt / nOrt), 2) << " over " << nOrt << " cases";
  if (nFloor) sum << "; geometric mean Partex/floor (memory-bound operators) " << fmt(std::exp(logFloor / nFloor), 2);
  if (!ortNote.empty()) sum << "; " << ortNote;
  std::printf("\n%s\n", sum.str().c_str());
  std::vector<const Row*> worst = measured;
  std::sort(worst.begin(), worst.end(), [](const Row* a, const Row* b) {
    auto key = [](const Row* r) { return r->ortUs > 0 ? r->partexUs / r->ortUs : 0.0; };
    return key(a) > key(b);
  });
  std::printf("worst against ORT:\n");
  for (size_t i = 0; i < worst.size() && i < 10 && worst[i]->ortUs > 0; ++i)
    std::printf("  %-26s %-20s %-5s %8.1f us vs %8.1f us  (%.2fx)\n", worst[i]->op.c_str(), worst[i]->label.c_str(),
                worst[i]->type.c_str(), worst[i]->partexUs, worst[i]->ortUs, worst[i]->partexUs / worst[i]->ortUs);
  std::vector<std::string> missing;
  for (const std::string& op : claimed)
    if (!covered.count(op)) missing.push_back(op);
  if (!missing.empty()) {
    std::printf("claimed operator types without a case here:");
    for (const auto& m : missing) std::printf(" %s", m.c_str());
    std::printf("\n");
  }
  if (!markdown.empty()) {
    std::ofstream f(markdown, std::ios::app);
    if (!f) {
      std::fprintf(stderr, "bench_ops: %s: cannot write\n", markdown.c_str());
      return 2;
    }
    f << "\n" << md.str() << "\n" << sum.str() << "\n";
  }
  return 0;
}
