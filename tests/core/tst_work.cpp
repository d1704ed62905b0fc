// Work characterisation on hand-built IR graphs: every expected number below is worked out by hand in the
// comment next to it.

#include <QtTest>

#include <functional>
#include <map>

#include "cost/work.h"
#include "onnx/importer.h"
#include "testutil.h"

using namespace partex;

namespace {

Attribute attrI(int64_t v) {
  return Attribute{v};
}
Attribute attrF(double v) {
  return Attribute{v};
}
Attribute attrS(const std::string& v) {
  return Attribute{v};
}
Attribute attrIs(std::vector<int64_t> v) {
  return Attribute{std::move(v)};
}

/// Builds a Graph value by value, node by node.
struct Builder {
  Graph g;

  ValueId value(const std::string& name, std::vector<int64_t> shape, DType t = DType::Float32) {
    Value v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    return g.addValue(std::move(v));
  }
  ValueId unknown(const std::string& name, DType t = DType::Float32, bool weight = false) {
    Value v;
    v.name = name;
    v.dtype = t;
    v.isWeight = weight;
    return g.addValue(std::move(v));
  }
  ValueId input(const std::string& name, std::vector<int64_t> shape, DType t = DType::Float32) {
    ValueId id = value(name, std::move(shape), t);
    g.inputs.push_back(id);
    return id;
  }
  ValueId weight(const std::string& name, std::vector<int64_t> shape, DType t = DType::Float32,
                 std::vector<int64_t> intData = {}) {
    ValueId id = value(name, std::move(shape), t);
    g.values[static_cast<size_t>(id)].isWeight = true;
    g.values[static_cast<size_t>(id)].intData = std::move(intData);
    return id;
  }
  void output(ValueId v) { g.outputs.push_back(v); }
  OpId node(const std::string& op, std::vector<ValueId> ins, std::vector<ValueId> outs,
            std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
    Node n;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.opType = op;
    n.domain = domain;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(attrs);
    return g.addNode(std::move(n));
  }
  Graph done() {
    g.rebuildIndex();
    return std::move(g);
  }
};

/// One-operator graphs (the operator under test is the first node).
Graph singleOpCase(const QString& name) {
  Builder b;
  const auto F = DType::Float32;
  if (name == "conv_resnet_stem") {
    // 7x7/2 conv, 3->64, 224->112. MACs = 64*112*112 * 3*7*7 = 802816*147.
    auto x = b.input("x", {1, 3, 224, 224});
    auto w = b.weight("w", {64, 3, 7, 7});
    auto bias = b.weight("b", {64});
    auto y = b.value("y", {1, 64, 112, 112});
    b.node("Conv", {x, w, bias}, {y},
           {{"kernel_shape", attrIs({7, 7})}, {"strides", attrIs({2, 2})}, {"pads", attrIs({3, 3, 3, 3})}});
  } else if (name == "conv_grouped") {
    // group 4: 32->64, W [64, 8, 3, 3], stride 2: 56->28. MACs = 64*28*28 * 8*9.
    auto x = b.input("x", {1, 32, 56, 56});
    auto w = b.weight("w", {64, 8, 3, 3});
    auto y = b.value("y", {1, 64, 28, 28});
    b.node("Conv", {x, w}, {y}, {{"group", attrI(4)}, {"strides", attrIs({2, 2})}, {"pads", attrIs({1, 1, 1, 1})}});
  } else if (name == "conv_depthwise") {
    // depthwise 3x3, 32 channels, 112x112, bias. MACs = 32*112*112*9.
    auto x = b.input("x", {1, 32, 112, 112});
    auto w = b.weight("w", {32, 1, 3, 3});
    auto bias = b.weight("b", {32});
    auto y = b.value("y", {1, 32, 112, 112});
    b.node("Conv", {x, w, bias}, {y}, {{"group", attrI(32)}, {"pads", attrIs({1, 1, 1, 1})}});
  } else if (name == "conv_pointwise") {
    // ResNet bottleneck 1x1 reduce, 256->64 at 56x56. MACs = 64*3136*256.
    auto x = b.input("x", {1, 256, 56, 56});
    auto w = b.weight("w", {64, 256, 1, 1});
    auto y = b.value("y", {1, 64, 56, 56});
    b.node("Conv", {x, w}, {y});
  } else if (name == "conv_weight_shape_unknown") {
    // W's shape unknown: Cin from x (16), kernel from the attribute (3x3). MACs = 32*8*8 * 16*9.
    auto x = b.input("x", {1, 16, 8, 8});
    auto w = b.unknown("w", F, true);
    auto y = b.value("y", {1, 32, 8, 8});
    b.node("Conv", {x, w}, {y}, {{"kernel_shape", attrIs({3, 3})}, {"pads", attrIs({1, 1, 1, 1})}});
  } else if (name == "conv_output_unknown") {
    auto x = b.input("x", {1, 3, 8, 8});
    auto w = b.weight("w", {4, 3, 3, 3});
    auto y = b.unknown("y");
    b.node("Conv", {x, w}, {y});
  } else if (name == "convtranspose") {
    // 16->8, 4x4/2: 14->28. MACs = input elements (16*14*14) * Cout/group (8) * 16.
    auto x = b.input("x", {1, 16, 14, 14});
    auto w = b.weight("w", {16, 8, 4, 4});
    auto bias = b.weight("b", {8});
    auto y = b.value("y", {1, 8, 28, 28});
    b.node("ConvTranspose", {x, w, bias}, {y}, {{"strides", attrIs({2, 2})}, {"pads", attrIs({1, 1, 1, 1})}});
  } else if (name == "convtranspose_grouped") {
    // group 2: Cin 8, W [8, 2, 3, 3] (Cout 4), 10->12. MACs = 8*10*10 * 2*9 = 4 out x 4 in x 9 x 100.
    auto x = b.input("x", {1, 8, 10, 10});
    auto w = b.weight("w", {8, 2, 3, 3});
    auto y = b.value("y", {1, 4, 12, 12});
    b.node("ConvTranspose", {x, w}, {y}, {{"group", attrI(2)}});
  } else if (name == "gemm_transB") {
    // ResNet-50's classifier: [1,2048] x [1000,2048]^T + C. MACs = 2048*1000.
    auto a = b.input("a", {1, 2048});
    auto w = b.weight("w", {1000, 2048});
    auto c = b.weight("c", {1000});
    auto y = b.value("y", {1, 1000});
    b.node("Gemm", {a, w, c}, {y}, {{"transB", attrI(1)}, {"alpha", attrF(1.0)}});
  } else if (name == "gemm_transA") {
    // A [64, 32]^T: M=32, K=64; B [64, 16]: N=16. MACs = 32*16*64; both operands are activations.
    auto a = b.input("a", {64, 32});
    auto bb = b.input("bb", {64, 16});
    auto y = b.value("y", {32, 16});
    b.node("Gemm", {a, bb}, {y}, {{"transA", attrI(1)}});
  } else if (name == "matmul_batched_broadcast") {
    // [2,1,8,16] x [3,16,5]: batch [2,1] and [3] broadcast to [2,3]. MACs = 6*8*5*16.
    auto a = b.input("a", {2, 1, 8, 16});
    auto w = b.weight("w", {3, 16, 5});
    auto y = b.value("y", {2, 3, 8, 5});
    b.node("MatMul", {a, w}, {y});
  } else if (name == "matmul_1d_left") {
    // [16] x [16,10] -> [10]. MACs = 160.
    auto a = b.input("a", {16});
    auto w = b.weight("w", {16, 10});
    auto y = b.value("y", {10});
    b.node("MatMul", {a, w}, {y});
  } else if (name == "matmul_1d_both") {
    // dot product: [16] x [16] -> scalar. MACs = 16.
    auto a = b.input("a", {16});
    auto c = b.input("c", {16});
    auto y = b.value("y", {});
    b.node("MatMul", {a, c}, {y});
  } else if (name == "matmul_1d_right") {
    // [3,4,16] x [16] -> [3,4]. MACs = 3*4*16.
    auto a = b.input("a", {3, 4, 16});
    auto c = b.input("c", {16});
    auto y = b.value("y", {3, 4});
    b.node("MatMul", {a, c}, {y});
  } else if (name == "lstm") {
    // seq 10, batch 1, input 32, hidden 64, bias. MACs = 10 cells * 4*64 * (32+64).
    // FLOPs = 2*MACs + 10 cells * 64 units * (28 + 8 for the bias).
    auto x = b.input("x", {10, 1, 32});
    auto w = b.weight("w", {1, 256, 32});
    auto r = b.weight("r", {1, 256, 64});
    auto bias = b.weight("b", {1, 512});
    auto y = b.value("y", {10, 1, 1, 64});
    b.node("LSTM", {x, w, r, bias}, {y}, {{"hidden_size", attrI(64)}});
  } else if (name == "gru_bidirectional") {
    // seq 5, batch 2, input 16, hidden 32, 2 directions, no bias. cells = 2*5*2 = 20.
    // MACs = 20 * 3*32 * (16+32) = 92160; FLOPs = 2*MACs + 20*32*19.
    auto x = b.input("x", {5, 2, 16});
    auto w = b.weight("w", {2, 96, 16});
    auto r = b.weight("r", {2, 96, 32});
    auto y = b.value("y", {5, 2, 2, 32});
    auto yh = b.value("yh", {2, 2, 32});
    b.node("GRU", {x, w, r}, {y, yh}, {{"hidden_size", attrI(32)}, {"direction", attrS("bidirectional")}});
  } else if (name == "rnn") {
    // seq 4, batch 1, input 8, hidden 16, bias. MACs = 4 * 16 * 24; FLOPs = 2*MACs + 4*16*(5+2).
    auto x = b.input("x", {4, 1, 8});
    auto w = b.weight("w", {1, 16, 8});
    auto r = b.weight("r", {1, 16, 16});
    auto bias = b.weight("b", {1, 32});
    auto y = b.value("y", {4, 1, 1, 16});
    b.node("RNN", {x, w, r, bias}, {y}, {{"hidden_size", attrI(16)}});
  } else if (name == "maxpool") {
    // 3x3/2 over 64x112x112 -> 56x56: 9 per output.
    auto x = b.input("x", {1, 64, 112, 112});
    auto y = b.value("y", {1, 64, 56, 56});
    b.node("MaxPool", {x}, {y}, {{"kernel_shape", attrIs({3, 3})}, {"strides", attrIs({2, 2})}});
  } else if (name == "globalavgpool") {
    auto x = b.input("x", {1, 2048, 7, 7});
    auto y = b.value("y", {1, 2048, 1, 1});
    b.node("GlobalAveragePool", {x}, {y});
  } else if (name == "batchnorm") {
    // 4 per element over 64*56*56.
    auto x = b.input("x", {1, 64, 56, 56});
    auto s = b.weight("s", {64});
    auto bias = b.weight("b", {64});
    auto m = b.weight("m", {64});
    auto v = b.weight("v", {64});
    auto y = b.value("y", {1, 64, 56, 56});
    b.node("BatchNormalization", {x, s, bias, m, v}, {y});
  } else if (name == "layernorm") {
    // 8 per element over 128*768.
    auto x = b.input("x", {1, 128, 768});
    auto s = b.weight("s", {768});
    auto bias = b.weight("b", {768});
    auto y = b.value("y", {1, 128, 768});
    b.node("LayerNormalization", {x, s, bias}, {y}, {{"axis", attrI(-1)}});
  } else if (name == "softmax") {
    // 5 per element over 12*128*128.
    auto x = b.input("x", {1, 12, 128, 128});
    auto y = b.value("y", {1, 12, 128, 128});
    b.node("Softmax", {x}, {y}, {{"axis", attrI(-1)}});
  } else if (name == "lrn") {
    // AlexNet LRN size 5: (5+4) per element over 96*55*55.
    auto x = b.input("x", {1, 96, 55, 55});
    auto y = b.value("y", {1, 96, 55, 55});
    b.node("LRN", {x}, {y}, {{"size", attrI(5)}});
  } else if (name == "reshape") {
    // a view: no arithmetic and no bytes.
    auto x = b.input("x", {1, 2048, 1, 1});
    auto s = b.weight("shape", {2}, DType::Int64, {1, 2048});
    auto y = b.value("y", {1, 2048});
    b.node("Reshape", {x, s}, {y});
  } else if (name == "dropout_unused_mask") {
    // Dropout at inference is shape-only; its unread mask output with an open shape does not make shapes unknown.
    auto x = b.input("x", {1, 4096});
    auto y = b.value("y", {1, 4096});
    auto mask = b.unknown("mask", DType::Bool);
    b.output(y);
    b.node("Dropout", {x}, {y, mask});
  } else if (name == "relu_output_unknown") {
    // Output shape open and read downstream: FLOPs fall back to the input's elements, shapes unknown.
    auto x = b.input("x", {2, 8});
    auto y = b.unknown("y");
    auto z = b.value("z", {2, 8});
    b.output(z);
    b.node("Relu", {x}, {y});
    b.node("Identity", {y}, {z});
  } else if (name == "concat") {
    auto a = b.input("a", {1, 32, 28, 28});
    auto c = b.input("c", {1, 64, 28, 28});
    auto y = b.value("y", {1, 96, 28, 28});
    b.node("Concat", {a, c}, {y}, {{"axis", attrI(1)}});
  } else if (name == "gather_embedding") {
    // reads only the 128 gathered rows of the 30522x768 table, not the whole table.
    auto table = b.weight("table", {30522, 768});
    auto ids = b.input("ids", {1, 128}, DType::Int64);
    auto y = b.value("y", {1, 128, 768});
    b.node("Gather", {table, ids}, {y}, {{"axis", attrI(0)}});
  } else if (name == "add_broadcast") {
    auto a = b.input("a", {1, 64, 56, 56});
    auto c = b.weight("c", {64, 1, 1});
    auto y = b.value("y", {1, 64, 56, 56});
    b.node("Add", {a, c}, {y});
  } else if (name == "gelu") {
    auto x = b.input("x", {1, 128, 3072});
    auto y = b.value("y", {1, 128, 3072});
    b.node("Gelu", {x}, {y});
  } else if (name == "sum3") {
    // 2 adds per element.
    auto a = b.input("a", {10});
    auto c = b.input("c", {10});
    auto d = b.input("d", {10});
    auto y = b.value("y", {10});
    b.node("Sum", {a, c, d}, {y});
  } else if (name == "mean3") {
    // 2 adds and a division per element.
    auto a = b.input("a", {10});
    auto c = b.input("c", {10});
    auto d = b.input("d", {10});
    auto y = b.value("y", {10});
    b.node("Mean", {a, c, d}, {y});
  } else if (name == "reducemean") {
    auto x = b.input("x", {1, 128, 768});
    auto y = b.value("y", {1, 128, 1});
    b.node("ReduceMean", {x}, {y}, {{"axes", attrIs({-1})}});
  } else if (name == "resize_linear") {
    // 4 per output element; roi omitted.
    auto x = b.input("x", {1, 3, 4, 4});
    auto scales = b.weight("scales", {4});
    auto y = b.value("y", {1, 3, 8, 8});
    b.node("Resize", {x, kNone, scales}, {y}, {{"mode", attrS("linear")}});
  } else if (name == "unknown_domain") {
    // A "Conv" of a custom domain is not ONNX's Conv: unknown, no MACs, bytes still counted.
    auto x = b.input("x", {1, 3, 8, 8});
    auto w = b.weight("w", {4, 3, 3, 3});
    auto y = b.value("y", {1, 4, 6, 6});
    b.node("Conv", {x, w}, {y}, {}, "com.example");
  } else if (name == "ml_domain") {
    auto x = b.input("x", {1, 4});
    auto y = b.value("y", {1}, DType::Int64);
    b.node("TreeEnsembleClassifier", {x}, {y}, {}, "ai.onnx.ml");
  } else if (name == "convinteger") {
    // uint8 x int8 -> int32. MACs = 4*6*6 * 3*9.
    auto x = b.input("x", {1, 3, 8, 8}, DType::UInt8);
    auto w = b.weight("w", {4, 3, 3, 3}, DType::Int8);
    auto y = b.value("y", {1, 4, 6, 6}, DType::Int32);
    b.node("ConvInteger", {x, w}, {y});
  } else if (name == "qlinearmatmul") {
    // [4,8] x [8,3]: MACs 96, FLOPs 2*96 + 2*12 (requantisation). Scalars: 4 or 1 bytes each.
    auto a = b.input("a", {4, 8}, DType::UInt8);
    auto as = b.weight("as", {});
    auto az = b.weight("az", {}, DType::UInt8);
    auto w = b.weight("w", {8, 3}, DType::UInt8);
    auto ws = b.weight("ws", {});
    auto wz = b.weight("wz", {}, DType::UInt8);
    auto ys = b.weight("ys", {});
    auto yz = b.weight("yz", {}, DType::UInt8);
    auto y = b.value("y", {4, 3}, DType::UInt8);
    b.node("QLinearMatMul", {a, as, az, w, ws, wz, ys, yz}, {y});
  } else if (name == "einsum_bmm") {
    // bij,bjk->bik: 2*3*4*5.
    auto a = b.input("a", {2, 3, 4});
    auto c = b.input("c", {2, 4, 5});
    auto y = b.value("y", {2, 3, 5});
    b.node("Einsum", {a, c}, {y}, {{"equation", attrS("bij,bjk->bik")}});
  } else if (name == "einsum_ellipsis") {
    // ...ij,jk->...ik with ... = [2]: 2*3*4*5.
    auto a = b.input("a", {2, 3, 4});
    auto c = b.weight("c", {4, 5});
    auto y = b.value("y", {2, 3, 5});
    b.node("Einsum", {a, c}, {y}, {{"equation", attrS("...ij, jk -> ...ik")}});
  } else if (name == "attention_ms") {
    // BERT-base layer: projection 128*768*2304 + per-head scores 128*128 * (768+768).
    // FLOPs = 2*MACs + bias 128*2304 + softmax 5*12*128*128.
    auto x = b.input("x", {1, 128, 768});
    auto w = b.weight("w", {768, 2304});
    auto bias = b.weight("b", {2304});
    auto y = b.value("y", {1, 128, 768});
    b.node("Attention", {x, w, bias}, {y}, {{"num_heads", attrI(12)}}, "com.microsoft");
  } else if (name == "conv_fp16") {
    auto x = b.input("x", {1, 8, 4, 4}, DType::Float16);
    auto w = b.weight("w", {8, 8, 1, 1}, DType::Float16);
    auto y = b.value("y", {1, 8, 4, 4}, DType::Float16);
    b.node("Conv", {x, w}, {y});
  }
  return b.done();
}

}  // namespace

class TestWork : public QObject {
  Q_OBJECT

 private slots:
  void singleOp_data();
  void singleOp();
  void ifTakesLargerBranch_data();
  void ifTakesLargerBranch();
  void loopTripCount_data();
  void loopTripCount();
  void scanLength();
  void peakActivations_data();
  void peakActivations();
  void characteriseAllMatchesNodes();
  void opClassTable_data();
  void opClassTable();
  void referenceMacsOfSharedModels_data();
  void referenceMacsOfSharedModels();
};

void TestWork::singleOp_data() {
  QTest::addColumn<QString>("graph");
  QTest::addColumn<int>("cls");
  QTest::addColumn<qlonglong>("macs");
  QTest::addColumn<qlonglong>("flops");
  QTest::addColumn<qlonglong>("readAct");
  QTest::addColumn<qlonglong>("readWeights");
  QTest::addColumn<qlonglong>("written");
  QTest::addColumn<int>("dtype");
  QTest::addColumn<bool>("shapesKnown");

  auto row = [](const char* g, OpClass c, qlonglong macs, qlonglong flops, qlonglong ra, qlonglong rw, qlonglong wr,
                DType t = DType::Float32, bool known = true) {
    QTest::newRow(g) << QString(g) << int(c) << macs << flops << ra << rw << wr << int(t) << known;
  };
  // bytes: float32 = 4 per element.
  row("conv_resnet_stem", OpClass::Conv, 118013952, 2 * 118013952LL + 802816, 3 * 224 * 224 * 4, (64 * 147 + 64) * 4,
      802816 * 4);
  row("conv_grouped", OpClass::Conv, 3612672, 7225344, 32 * 56 * 56 * 4, 64 * 8 * 9 * 4, 64 * 28 * 28 * 4);
  row("conv_depthwise", OpClass::Conv, 3612672, 7225344 + 401408, 401408 * 4, (32 * 9 + 32) * 4, 401408 * 4);
  row("conv_pointwise", OpClass::Conv, 51380224, 102760448, 256 * 3136 * 4, 64 * 256 * 4, 64 * 3136 * 4);
  row("conv_weight_shape_unknown", OpClass::Conv, 294912, 589824, 16 * 64 * 4, 0, 32 * 64 * 4, DType::Float32, false);
  row("conv_output_unknown", OpClass::Conv, 0, 0, 3 * 64 * 4, 4 * 27 * 4, 0, DType::Float32, false);
  row("convtranspose", OpClass::Conv, 401408, 802816 + 8 * 784, 16 * 196 * 4, (16 * 8 * 16 + 8) * 4, 8 * 784 * 4);
  row("convtranspose_grouped", OpClass::Conv, 14400, 28800, 800 * 4, 8 * 2 * 9 * 4, 4 * 144 * 4);
  row("gemm_transB", OpClass::MatMul, 2048000, 4096000 + 1000, 2048 * 4, (2048000 + 1000) * 4, 1000 * 4);
  row("gemm_transA", OpClass::MatMul, 32768, 65536, (64 * 32 + 64 * 16) * 4, 0, 32 * 16 * 4);
  row("matmul_batched_broadcast", OpClass::MatMul, 3840, 7680, 2 * 8 * 16 * 4, 3 * 16 * 5 * 4, 2 * 3 * 8 * 5 * 4);
  row("matmul_1d_left", OpClass::MatMul, 160, 320, 16 * 4, 160 * 4, 10 * 4);
  row("matmul_1d_both", OpClass::MatMul, 16, 32, 32 * 4, 0, 4);
  row("matmul_1d_right", OpClass::MatMul, 192, 384, (192 + 16) * 4, 0, 12 * 4);
  row("lstm", OpClass::MatMul, 245760, 491520 + 640 * 36, 10 * 32 * 4, (256 * 32 + 256 * 64 + 512) * 4, 10 * 64 * 4);
  row("gru_bidirectional", OpClass::MatMul, 92160, 184320 + 20 * 32 * 19, 5 * 2 * 16 * 4,
      (2 * 96 * 16 + 2 * 96 * 32) * 4, (5 * 2 * 2 * 32 + 2 * 2 * 32) * 4);
  row("rnn", OpClass::MatMul, 1536, 3072 + 4 * 16 * 7, 4 * 8 * 4, (16 * 8 + 16 * 16 + 32) * 4, 4 * 16 * 4);
  row("maxpool", OpClass::Pooling, 0, 200704 * 9, 802816 * 4, 0, 200704 * 4);
  row("globalavgpool", OpClass::Pooling, 0, 100352, 100352 * 4, 0, 2048 * 4);
  row("batchnorm", OpClass::Normalisation, 0, 200704 * 4, 200704 * 4, 4 * 64 * 4, 200704 * 4);
  row("layernorm", OpClass::Normalisation, 0, 98304 * 8, 98304 * 4, 2 * 768 * 4, 98304 * 4);
  row("softmax", OpClass::Normalisation, 0, 196608 * 5, 196608 * 4, 0, 196608 * 4);
  row("lrn", OpClass::Normalisation, 0, 290400 * 9, 290400 * 4, 0, 290400 * 4);
  row("reshape", OpClass::ShapeOnly, 0, 0, 0, 0, 0);
  row("dropout_unused_mask", OpClass::ShapeOnly, 0, 0, 0, 0, 0);
  row("relu_output_unknown", OpClass::Elementwise, 0, 16, 16 * 4, 0, 0, DType::Float32, false);
  row("concat", OpClass::DataMovement, 0, 0, 96 * 784 * 4, 0, 96 * 784 * 4);
  row("gather_embedding", OpClass::DataMovement, 0, 0, 128 * 8, 128 * 768 * 4, 128 * 768 * 4);
  row("add_broadcast", OpClass::Elementwise, 0, 200704, 200704 * 4, 64 * 4, 200704 * 4);
  row("gelu", OpClass::Elementwise, 0, 393216 * 8, 393216 * 4, 0, 393216 * 4);
  row("sum3", OpClass::Elementwise, 0, 20, 3 * 10 * 4, 0, 10 * 4);
  row("mean3", OpClass::Elementwise, 0, 30, 3 * 10 * 4, 0, 10 * 4);
  row("reducemean", OpClass::Reduction, 0, 98304, 98304 * 4, 0, 128 * 4);
  row("resize_linear", OpClass::DataMovement, 0, 192 * 4, 48 * 4, 4 * 4, 192 * 4);
  row("unknown_domain", OpClass::Unknown, 0, 0, 192 * 4, 108 * 4, 144 * 4);
  row("ml_domain", OpClass::Unknown, 0, 0, 4 * 4, 0, 8);
  row("convinteger", OpClass::Conv, 3888, 7776, 192, 108, 144 * 4, DType::UInt8);
  row("qlinearmatmul", OpClass::MatMul, 96, 192 + 24, 32, 4 + 1 + 24 + 4 + 1 + 4 + 1, 12, DType::UInt8);
  row("einsum_bmm", OpClass::MatMul, 120, 240, (24 + 40) * 4, 0, 30 * 4);
  row("einsum_ellipsis", OpClass::MatMul, 120, 240, 24 * 4, 20 * 4, 30 * 4);
  row("attention_ms", OpClass::MatMul, 226492416LL + 25165824LL, 2 * 251658240LL + 294912 + 983040, 98304 * 4,
      (768 * 2304 + 2304) * 4, 98304 * 4);
  row("conv_fp16", OpClass::Conv, 1024, 2048, 128 * 2, 64 * 2, 128 * 2, DType::Float16);
}

void TestWork::singleOp() {
  QFETCH(QString, graph);
  QFETCH(int, cls);
  QFETCH(qlonglong, macs);
  QFETCH(qlonglong, flops);
  QFETCH(qlonglong, readAct);
  QFETCH(qlonglong, readWeights);
  QFETCH(qlonglong, written);
  QFETCH(int, dtype);
  QFETCH(bool, shapesKnown);

  Graph g = singleOpCase(graph);
  QVERIFY2(!g.nodes.empty(), "unknown test case");
  QVERIFY2(g.verify().isOk(), g.verify().message().c_str());
  OpWork w = characterise(g, 0);
  QCOMPARE(QString(opClassName(w.cls)), QString(opClassName(static_cast<OpClass>(cls))));
  QCOMPARE(qlonglong(w.macs), macs);
  QCOMPARE(qlonglong(w.flops), flops);
  QCOMPARE(qlonglong(w.bytesReadActivations), readAct);
  QCOMPARE(qlonglong(w.bytesReadWeights), readWeights);
  QCOMPARE(qlonglong(w.bytesWritten), written);
  QCOMPARE(qlonglong(w.bytesRead()), readAct + readWeights);
  QCOMPARE(QString(dtypeName(w.dtype)), QString(dtypeName(static_cast<DType>(dtype))));
  QCOMPARE(w.shapesKnown, shapesKnown);
}

namespace {

/// then: a [4,8]x[8,16] MatMul on body weights (512 MACs); else: one Add on [4,16] (64 FLOPs).
std::shared_ptr<Graph> matmulBody() {
  Builder b;
  auto a = b.weight("a", {4, 8});
  auto w = b.weight("w", {8, 16});
  auto y = b.value("y_then", {4, 16});
  b.output(y);
  b.node("MatMul", {a, w}, {y});
  return std::make_shared<Graph>(b.done());
}

std::shared_ptr<Graph> addBody() {
  Builder b;
  auto a = b.weight("p", {4, 16});
  auto c = b.weight("q", {4, 16});
  auto y = b.value("y_else", {4, 16});
  b.output(y);
  b.node("Add", {a, c}, {y});
  return std::make_shared<Graph>(b.done());
}

}  // namespace

void TestWork::ifTakesLargerBranch_data() {
  QTest::addColumn<bool>("matmulInThen");
  QTest::newRow("larger then") << true;
  QTest::newRow("larger else") << false;
}

void TestWork::ifTakesLargerBranch() {
  QFETCH(bool, matmulInThen);
  Builder b;
  auto cond = b.input("cond", {}, DType::Bool);
  auto y = b.value("y", {4, 16});
  b.output(y);
  OpId op = b.node("If", {cond}, {y});
  b.g.nodes[static_cast<size_t>(op)].subgraphs = {{"then_branch", matmulInThen ? matmulBody() : addBody()},
                                                  {"else_branch", matmulInThen ? addBody() : matmulBody()}};
  Graph g = b.done();
  OpWork w = characterise(g, op);
  QCOMPARE(w.cls, OpClass::ControlFlow);
  QCOMPARE(w.macs, int64_t{512});  // 4*16*8
  QCOMPARE(w.flops, int64_t{1024});
  // Outer: reads the 1-byte condition, writes 256 bytes; the MatMul body reads 640 bytes of weights.
  QCOMPARE(w.bytesReadActivations, int64_t{1});
  QCOMPARE(w.bytesReadWeights, int64_t{(32 + 128) * 4});
  QCOMPARE(w.bytesWritten, int64_t{64 * 4});
  QCOMPARE(w.dtype, DType::Float32);  // no float input: the output's dtype
  QVERIFY(w.shapesKnown);
}

void TestWork::loopTripCount_data() {
  QTest::addColumn<bool>("constantTrips");
  QTest::addColumn<qlonglong>("trips");
  QTest::addColumn<qlonglong>("macs");
  QTest::newRow("5 trips") << true << 5LL << 5 * 256LL;
  QTest::newRow("0 trips") << true << 0LL << 0LL;
  QTest::newRow("unknown trips: body once") << false << 0LL << 256LL;
  QTest::newRow("while-loop INT64_MAX: body once") << true << qlonglong(std::numeric_limits<int64_t>::max()) << 256LL;
}

void TestWork::loopTripCount() {
  QFETCH(bool, constantTrips);
  QFETCH(qlonglong, trips);
  QFETCH(qlonglong, macs);
  // Body: (iter, cond, x[1,16]) -> (cond, x * W[16,16]): 256 MACs per iteration.
  Builder body;
  auto iter = body.input("iter", {}, DType::Int64);
  auto condIn = body.input("cond_in", {}, DType::Bool);
  auto x = body.input("x_in", {1, 16});
  auto weights = body.weight("w", {16, 16});
  auto condOut = body.value("cond_out", {}, DType::Bool);
  auto xOut = body.value("x_out", {1, 16});
  body.output(condOut);
  body.output(xOut);
  (void)iter;
  body.node("Identity", {condIn}, {condOut});
  body.node("MatMul", {x, weights}, {xOut});

  Builder b;
  ValueId m = constantTrips ? b.weight("M", {}, DType::Int64, {trips}) : b.input("M", {}, DType::Int64);
  auto cond = b.weight("cond", {}, DType::Bool, {1});
  auto x0 = b.input("x0", {1, 16});
  auto y = b.value("y", {1, 16});
  b.output(y);
  OpId op = b.node("Loop", {m, cond, x0}, {y});
  b.g.nodes[static_cast<size_t>(op)].subgraphs = {{"body", std::make_shared<Graph>(body.done())}};
  Graph g = b.done();
  OpWork w = characterise(g, op);
  QCOMPARE(w.cls, OpClass::ControlFlow);
  QCOMPARE(qlonglong(w.macs), macs);
  QCOMPARE(qlonglong(w.flops), 2 * macs);
  QCOMPARE(w.dtype, DType::Float32);  // x0 is the first float activation input
  QVERIFY(w.shapesKnown);
}

void TestWork::scanLength() {
  // Scan over x[7,4] (axis 0): body s_out = s + x_t (4 adds) runs 7 times.
  Builder body;
  auto s = body.input("s", {4});
  auto xt = body.input("xt", {4});
  auto sOut = body.value("s_out", {4});
  body.output(sOut);
  body.node("Add", {s, xt}, {sOut});

  Builder b;
  auto s0 = b.input("s0", {4});
  auto x = b.input("x", {7, 4});
  auto sFinal = b.value("s_final", {4});
  b.output(sFinal);
  OpId op = b.node("Scan", {s0, x}, {sFinal}, {{"num_scan_inputs", attrI(1)}});
  b.g.nodes[static_cast<size_t>(op)].subgraphs = {{"body", std::make_shared<Graph>(body.done())}};
  Graph g = b.done();
  g.opsetVersion = 11;
  OpWork w = characterise(g, op);
  QCOMPARE(w.cls, OpClass::ControlFlow);
  QCOMPARE(w.macs, int64_t{0});
  QCOMPARE(w.flops, int64_t{28});
  // Body reads 2*16 bytes per iteration (224 in all) > the node's own 16 + 112 bytes.
  QCOMPARE(w.bytesReadActivations, int64_t{224});
  QCOMPARE(w.bytesWritten, int64_t{7 * 16});
}

namespace {

Graph livenessCase(const QString& name) {
  Builder b;
  if (name == "chain") {
    // x(100 B) -> Relu -> a(200 B) -> Relu -> b(40 B, output). Peak at the first node: x + a = 300.
    auto x = b.input("x", {25});
    auto a = b.value("a", {50});
    auto c = b.value("b", {10});
    b.output(c);
    b.node("Relu", {x}, {a});
    b.node("Relu", {a}, {c});
  } else if (name == "diamond") {
    // x(40) -Tile-> a(80); a -Slice-> b(20); a -Tile-> c(160); Concat(b, c) -> d(180, output).
    // live: 40 | +a 120, -x 80 | +b 100 | +c 260, -a 180 | +d 360, -b -c 180. Peak 360; weights excluded.
    auto x = b.input("x", {10});
    auto r1 = b.weight("r1", {1}, DType::Int64, {2});
    auto r2 = b.weight("r2", {1}, DType::Int64, {2});
    auto a = b.value("a", {20});
    auto bb = b.value("b", {5});
    auto c = b.value("c", {40});
    auto d = b.value("d", {45});
    b.output(d);
    b.node("Tile", {x, r1}, {a});
    b.node("Slice", {a}, {bb});
    b.node("Tile", {a, r2}, {c});
    b.node("Concat", {bb, c}, {d});
  } else if (name == "dead_output") {
    // x(40) -Relu-> a(40, output); x -Shape-> s(8 B, unused). live: 40 | 80 | 88, then x and s die. Peak 88.
    auto x = b.input("x", {10});
    auto a = b.value("a", {10});
    auto s = b.value("s", {1}, DType::Int64);
    b.output(a);
    b.node("Relu", {x}, {a});
    b.node("Shape", {x}, {s});
  } else if (name == "if_outer_scope") {
    // x(40) -Relu-> a(40); If(cond) whose then-branch reads `a` by name -> y(400, output).
    // a stays live until the If: 41 | 81, -x 41 | +y 441. Peak 441 (without the implicit read: 401).
    Builder then;
    auto inner = then.unknown("a");
    then.g.values[static_cast<size_t>(inner)].shapeKnown = true;
    then.g.values[static_cast<size_t>(inner)].shape = {10};
    auto yt = then.value("yt", {100});
    then.output(yt);
    then.node("Tile", {inner}, {yt});
    Builder els;
    auto ye = els.weight("ye", {100});
    els.output(ye);

    auto x = b.input("x", {10});
    auto cond = b.input("cond", {}, DType::Bool);
    auto a = b.value("a", {10});
    auto y = b.value("y", {100});
    b.output(y);
    b.node("Relu", {x}, {a});
    OpId op = b.node("If", {cond}, {y});
    b.g.nodes[static_cast<size_t>(op)].subgraphs = {{"then_branch", std::make_shared<Graph>(then.done())},
                                                    {"else_branch", std::make_shared<Graph>(els.done())}};
  }
  return b.done();
}

}  // namespace

void TestWork::peakActivations_data() {
  QTest::addColumn<QString>("graph");
  QTest::addColumn<qlonglong>("peak");
  QTest::addColumn<qlonglong>("flops");
  QTest::addColumn<qlonglong>("params");
  QTest::newRow("chain") << "chain" << 300LL << 60LL << 0LL;
  QTest::newRow("diamond") << "diamond" << 360LL << 0LL << 16LL;
  QTest::newRow("dead_output") << "dead_output" << 88LL << 10LL << 0LL;
  // The If's flops come from its then-branch (Tile: none); params include the else-branch's weight.
  QTest::newRow("if_outer_scope") << "if_outer_scope" << 441LL << 10LL << 400LL;
}

void TestWork::peakActivations() {
  QFETCH(QString, graph);
  QFETCH(qlonglong, peak);
  QFETCH(qlonglong, flops);
  QFETCH(qlonglong, params);
  Graph g = livenessCase(graph);
  QVERIFY(!g.nodes.empty());
  auto work = characteriseAll(g);
  GraphWork t = summarise(g, work);
  QCOMPARE(qlonglong(t.peakActivationBytes), peak);
  QCOMPARE(qlonglong(t.flops), flops);
  QCOMPARE(qlonglong(t.macs), 0LL);
  QCOMPARE(qlonglong(t.paramBytes), params);
}

void TestWork::characteriseAllMatchesNodes() {
  // Conv (stem) -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm: totals are the sums of the nodes.
  Builder b;
  auto x = b.input("x", {1, 3, 224, 224});
  auto w = b.weight("w", {64, 3, 7, 7});
  auto c = b.value("c", {1, 64, 112, 112});
  auto r = b.value("r", {1, 64, 112, 112});
  auto p = b.value("p", {1, 64, 56, 56});
  auto gp = b.value("gp", {1, 64, 1, 1});
  auto f = b.value("f", {1, 64});
  auto fw = b.weight("fw", {10, 64});
  auto y = b.value("y", {1, 10});
  b.output(y);
  b.node("Conv", {x, w}, {c}, {{"strides", attrIs({2, 2})}, {"pads", attrIs({3, 3, 3, 3})}});
  b.node("Relu", {c}, {r});
  b.node("MaxPool", {r}, {p}, {{"kernel_shape", attrIs({3, 3})}, {"strides", attrIs({2, 2})}});
  b.node("GlobalAveragePool", {p}, {gp});
  b.node("Flatten", {gp}, {f});
  b.node("Gemm", {f, fw}, {y}, {{"transB", attrI(1)}});
  Graph g = b.done();
  auto work = characteriseAll(g);
  QCOMPARE(work.size(), g.nodes.size());
  GraphWork t = summarise(g, work);
  const int64_t convMacs = 802816LL * 147, gemmMacs = 640;
  QCOMPARE(t.macs, convMacs + gemmMacs);
  // 2*MACs + Relu (1/elem) + MaxPool (9/out) + GlobalAveragePool (1/in).
  QCOMPARE(t.flops, 2 * (convMacs + gemmMacs) + 802816 + 200704LL * 9 + 200704);
  QCOMPARE(t.paramBytes, int64_t{(64 * 147 + 640) * 4});
  // Peak: Relu holds c and r: 2 * 802816 * 4 bytes.
  QCOMPARE(t.peakActivationBytes, int64_t{2 * 802816 * 4});
  QCOMPARE(work[4].cls, OpClass::ShapeOnly);
  QCOMPARE(work[4].bytesRead() + work[4].bytesWritten, int64_t{0});
}

void TestWork::opClassTable_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<QString>("domain");
  QTest::addColumn<QString>("cls");
  const std::pair<const char*, const char*> rows[] = {
      {"Conv", "conv"},
      {"QLinearConv", "conv"},
      {"ConvTranspose", "conv"},
      {"Gemm", "matmul"},
      {"Einsum", "matmul"},
      {"LSTM", "matmul"},
      {"MatMulInteger", "matmul"},
      {"Where", "elementwise"},
      {"Cast", "elementwise"},
      {"HardSwish", "elementwise"},
      {"ArgMax", "reduction"},
      {"ReduceL2", "reduction"},
      {"Softmax", "normalisation"},
      {"LogSoftmax", "normalisation"},
      {"GroupNormalization", "normalisation"},
      {"InstanceNormalization", "normalisation"},
      {"LpPool", "pooling"},
      {"GlobalMaxPool", "pooling"},
      {"Transpose", "data_movement"},
      {"ScatterND", "data_movement"},
      {"DepthToSpace", "data_movement"},
      {"Upsample", "data_movement"},
      {"Squeeze", "shape_only"},
      {"Dropout", "shape_only"},
      {"Size", "shape_only"},
      {"Loop", "control_flow"},
      {"Scan", "control_flow"},
      {"NoSuchOp", "unknown"},
  };
  for (const auto& [op, cls] : rows) QTest::newRow(op) << QString(op) << QString() << QString(cls);
  QTest::newRow("ai.onnx Relu") << "Relu"
                                << "ai.onnx"
                                << "elementwise";
  QTest::newRow("com.microsoft FusedConv") << "FusedConv"
                                           << "com.microsoft"
                                           << "conv";
  QTest::newRow("custom MatMul") << "MatMul"
                                 << "org.custom"
                                 << "unknown";
}

void TestWork::opClassTable() {
  QFETCH(QString, op);
  QFETCH(QString, domain);
  QFETCH(QString, cls);
  Node n;
  n.opType = op.toStdString();
  n.domain = domain.toStdString();
  QCOMPARE(QString(opClassName(opClassOf(n))), cls);
}

void TestWork::referenceMacsOfSharedModels_data() {
  // ../shared/models/README.md: MACs of Conv, ConvTranspose, Gemm and MatMul after shape inference (batch 1).
  QTest::addColumn<QString>("file");
  QTest::addColumn<qlonglong>("macs");
  const std::pair<const char*, qlonglong> rows[] = {
      {"light_resnet50.onnx", 4089184256LL},     {"light_densenet121.onnx", 2834161664LL},
      {"light_inception_v1.onnx", 1431556352LL}, {"light_inception_v2.onnx", 2018851840LL},
      {"light_shufflenet.onnx", 124664528LL},    {"light_squeezenet.onnx", 349151936LL},
      {"light_vgg19.onnx", 19632062464LL},       {"light_bvlc_alexnet.onnx", 654560384LL},
      {"light_zfnet512.onnx", 1481727008LL},     {"mnist.onnx", 786560LL},
      {"yolox_nano.onnx", 522553408LL},          {"Ultraface.version-RFB-320.onnx", 100418560LL},
  };
  for (const auto& [file, macs] : rows) QTest::newRow(file) << QString(file) << macs;
}

void TestWork::referenceMacsOfSharedModels() {
  PARTEX_REQUIRE_SHARED_MODELS();
  QFETCH(QString, file);
  QFETCH(qlonglong, macs);
  auto g = importOnnxFile(test::sharedModel(file.toStdString()));
  QVERIFY2(g.isOk(), g.message().c_str());
  auto work = characteriseAll(*g);
  int64_t reference = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    const std::string& op = g->nodes[i].opType;
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") reference += work[i].macs;
    QVERIFY2(work[i].shapesKnown, g->nodes[i].name.c_str());
  }
  QCOMPARE(qlonglong(reference), macs);
  // These CNNs have no other MAC-counting operators: the graph total is the reference too.
  QCOMPARE(qlonglong(summarise(*g, work).macs), macs);
}

QTEST_APPLESS_MAIN(TestWork)
#include "tst_work.moc"
