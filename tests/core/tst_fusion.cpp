// The CPU runtime's fusion rules (ir/fusion.h) on small hand-built graphs: which chains become one
// kernel, with which external inputs, and where a chain must stop (a second reader, a model output, a
// device boundary, an operator that cannot follow).

#include <QtTest>

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "cost/roofline.h"
#include "cost/work.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "platform/platform.h"

using namespace partex;

namespace {

/// A tiny graph builder: activations [1,C,H,W] float32, weights marked as such.
struct G {
  Graph g;
  ValueId act(const std::string& name, std::vector<int64_t> shape = {1, 16, 8, 8}) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    return g.addValue(v);
  }
  ValueId input(const std::string& name, std::vector<int64_t> shape = {1, 8, 8, 8}) {
    ValueId v = act(name, std::move(shape));
    g.values[static_cast<size_t>(v)].isGraphInput = true;
    g.inputs.push_back(v);
    return v;
  }
  ValueId weight(const std::string& name, std::vector<int64_t> shape) {
    ValueId v = act(name, std::move(shape));
    g.values[static_cast<size_t>(v)].isWeight = true;
    return v;
  }
  ValueId op(const std::string& type, const std::string& name, std::vector<ValueId> ins,
             std::vector<int64_t> outShape = {1, 16, 8, 8}) {
    ValueId out = act(name + "_out", std::move(outShape));
    Node n;
    n.name = name;
    n.opType = type;
    n.inputs = std::move(ins);
    n.outputs = {out};
    g.addNode(n);
    return out;
  }
  ValueId conv(const std::string& name, ValueId x, int64_t cin = 8) {
    return op("Conv", name, {x, weight(name + "_w", {16, cin, 3, 3}), weight(name + "_b", {16})});
  }
  ValueId bn(const std::string& name, ValueId x) {
    return op("BatchNormalization", name,
              {x, weight(name + "_s", {16}), weight(name + "_b", {16}), weight(name + "_m", {16}),
               weight(name + "_v", {16})});
  }
  void output(ValueId v) {
    g.values[static_cast<size_t>(v)].isGraphOutput = true;
    g.outputs.push_back(v);
  }
  std::vector<FusedGroup> groups(const std::vector<int>& placement = {}) {
    g.rebuildIndex();
    return fusedGroups(g, placement);
  }
  std::vector<std::string> names(const FusedGroup& grp) const {
    std::vector<std::string> r;
    for (OpId op : grp.ops) r.push_back(g.nodes[static_cast<size_t>(op)].name);
    return r;
  }
};

using Names = std::vector<std::string>;

}  // namespace

/// conv -> bn -> relu, the Relu a model output.
static G convBnRelu() {
  G b;
  ValueId y = b.op("Relu", "relu", {b.bn("bn", b.conv("conv", b.input("x")))});
  b.output(y);
  b.g.rebuildIndex();
  return b;
}

/// Two devices alike (100 GFLOP/s, 10 GB/s, 7 us per call): a CPU host `host` and `second` of `kind`,
/// whose runtime fuses as `fusion` says (Device::fusion).
static Platform twoDevices(const char* host, DeviceKind kind, const char* second, const char* fusion) {
  Platform p;
  p.name = "two";
  for (const char* id : {host, second}) {
    Device d;
    d.id = id;
    d.kind = id == second ? kind : DeviceKind::Cpu;
    d.defaultPeakGflops = 100;
    d.memBandwidthGBs = 10;
    d.launchOverheadUs = 7;
    p.devices.push_back(d);
  }
  p.host = host;
  p.devices[1].fusion = fusion;
  return p;
}

class TestFusion : public QObject {
  Q_OBJECT

 private slots:
  void convBatchNormRelu() {
    G b;
    ValueId x = b.input("x");
    ValueId y = b.op("Relu", "relu", {b.bn("bn", b.conv("conv", x))});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "bn", "relu"}));
    QCOMPARE(gs[0].output, y);
    // The kernel's inputs: the Conv's three, then BatchNormalization's four parameters.
    QCOMPARE(gs[0].inputs.size(), size_t{7});
    QCOMPARE(gs[0].inputs[0], x);
    QCOMPARE(b.g.values[static_cast<size_t>(gs[0].inputs[3])].name, std::string("bn_s"));
  }

  void residualAddThenRelu() {
    G b;
    ValueId x = b.input("x", {1, 16, 8, 8});
    ValueId skip = b.op("Relu", "pre", {x});
    ValueId a = b.bn("bn", b.conv("conv", skip, 16));
    ValueId y = b.op("Relu", "relu", {b.op("Add", "add", {a, skip})});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "bn", "add", "relu"}));
    QCOMPARE(gs[0].inputs.back(), skip);  // the residual operand
  }

  void noFoldAfterActivation() {
    G b;
    ValueId c = b.op("Relu", "relu", {b.conv("conv", b.input("x"))});
    ValueId y = b.op("Mul", "scale", {c, b.weight("s", {16, 1, 1})});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "relu"}));
  }

  void scalarStepsAfterActivation() {
    // PP-LCNet's learnable affine block: x * s + b after the activation, then another activation.
    G b;
    ValueId h = b.op("HardSwish", "hs", {b.conv("conv", b.input("x"))});
    ValueId m = b.op("Mul", "mul", {h, b.weight("s", {1})});
    ValueId a = b.op("Add", "add", {b.weight("t", {1}), m});
    b.output(b.op("Relu", "relu", {a}));
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "hs", "mul", "add", "relu"}));
    // Not a per-channel weight after the activation: that stays a Mul of its own.
    G c;
    ValueId r = c.op("Relu", "relu", {c.conv("conv", c.input("x"))});
    c.output(c.op("Mul", "mul", {r, c.weight("s", {16, 1, 1})}));
    QCOMPARE(c.names(c.groups()[0]), (Names{"conv", "relu"}));
  }

  void oneAlgorithmOncePerGroup() {
    // oneDNN 2.6 gives a second post-op of the same algorithm the first one's parameters.
    G b;
    ValueId r = b.op("Relu", "relu", {b.conv("conv", b.input("x"))});
    b.output(b.op("LeakyRelu", "lrelu", {r}));
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "relu"}));
    // Two scalar steps in a row are one linear post-op; a third after another activation is not.
    G c;
    ValueId m = c.op("Mul", "mul", {c.op("Relu", "relu", {c.conv("conv", c.input("x"))}), c.weight("s", {1})});
    ValueId a = c.op("Sub", "sub", {m, c.weight("t", {1})});
    ValueId t = c.op("Tanh", "tanh", {a});
    c.output(c.op("Div", "div", {t, c.weight("d", {1})}));
    auto cs = c.groups();
    QCOMPARE(cs.size(), size_t{1});
    QCOMPARE(c.names(cs[0]), (Names{"conv", "relu", "mul", "sub", "tanh"}));
  }

  void secondReaderStopsTheChain() {
    G b;
    ValueId c = b.conv("conv", b.input("x"));
    b.output(b.op("Relu", "relu", {c}));
    b.output(b.op("Tanh", "tanh", {c}));
    QVERIFY(b.groups().empty());
  }

  void modelOutputStopsTheChain() {
    G b;
    ValueId c = b.conv("conv", b.input("x"));
    b.output(c);
    b.output(b.op("Relu", "relu", {c}));
    QVERIFY(b.groups().empty());
  }

  void deviceBoundaryStopsTheChain() {
    G b;
    b.output(b.op("Relu", "relu", {b.bn("bn", b.conv("conv", b.input("x")))}));
    QCOMPARE(b.groups({0, 0, 0}).size(), size_t{1});
    auto split = b.groups({0, 0, 1});
    QCOMPARE(split.size(), size_t{1});
    QCOMPARE(b.names(split[0]), (Names{"conv", "bn"}));
    // The Conv alone on device 0; BatchNormalization + Relu on device 1 are an affine chain of their own.
    auto other = b.groups({0, 1, 1});
    QCOMPARE(other.size(), size_t{1});
    QCOMPARE(b.names(other[0]), (Names{"bn", "relu"}));
  }

  void swish() {
    G b;
    ValueId c = b.conv("conv", b.input("x"));
    ValueId s = b.op("Sigmoid", "sig", {c});
    ValueId y = b.op("Mul", "mul", {c, s});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"conv", "sig", "mul"}));
    QCOMPARE(gs[0].inputs.size(), size_t{3});  // no input of the Sigmoid or the Mul is external
  }

  void affineChainWithRelu() {
    G b;
    ValueId x = b.input("x", {1, 16, 8, 8});
    ValueId y = b.op("Relu", "relu", {b.op("Add", "shift", {b.bn("bn", x), b.weight("t", {1, 16, 1, 1})})});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"bn", "shift", "relu"}));
    // An activation that one pass cannot apply ends an affine chain before it.
    G c;
    ValueId x2 = c.input("x", {1, 16, 8, 8});
    c.output(c.op("Sigmoid", "sig", {c.bn("bn", x2)}));
    QVERIFY(c.groups().empty());
  }

  void channelShuffle() {
    G b;
    ValueId x = b.input("x", {1, 16, 8, 8});
    ValueId r1 = b.op("Reshape", "r1", {x, b.weight("s1", {5})}, {1, 4, 4, 8, 8});
    ValueId t = b.op("Transpose", "t", {r1}, {1, 4, 4, 8, 8});
    b.g.nodes.back().attrs["perm"].value = std::vector<int64_t>{0, 2, 1, 3, 4};
    ValueId y = b.op("Reshape", "r2", {t, b.weight("s2", {4})}, {1, 16, 8, 8});
    b.output(y);
    auto gs = b.groups();
    QCOMPARE(gs.size(), size_t{1});
    QCOMPARE(b.names(gs[0]), (Names{"r1", "t", "r2"}));
    QCOMPARE(partex::channelShuffle(b.g, 0), int64_t{4});
    // Another permutation is no shuffle.
    b.g.nodes[1].attrs["perm"].value = std::vector<int64_t>{0, 1, 2, 4, 3};
    QVERIFY(b.groups().empty());
  }

  void groupOfOpsIndexes() {
    G b;
    b.output(b.op("Relu", "relu", {b.conv("conv", b.input("x"))}));
    b.output(b.op("Tanh", "alone", {b.input("x2", {1, 16, 8, 8})}));
    auto gs = b.groups();
    auto of = groupOfOps(b.g, gs);
    QCOMPARE(of, (std::vector<int>{0, 0, -1}));
  }

  void padStartsItsConvGroup() {
    // A Pad (pads as an attribute, constant 0) that folds into the Conv after it is the group's first
    // operator; the kernel's inputs are the Pad's, then the Conv's W and B, then the chain's. On another
    // device than the Conv, the Pad runs alone.
    for (bool split : {false, true}) {
      G b;
      ValueId x = b.input("x", {1, 8, 6, 6});
      Attribute pads;
      pads.value = std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1};
      ValueId p = b.op("Pad", "pad", {x}, {1, 8, 8, 8});
      b.g.nodes.back().attrs["pads"] = pads;
      ValueId y = b.op("Relu", "relu", {b.bn("bn", b.conv("conv", p))});
      b.output(y);
      auto gs = b.groups(split ? std::vector<int>{1, 0, 0, 0} : std::vector<int>{});
      QCOMPARE(gs.size(), size_t{1});
      if (split) {
        QCOMPARE(b.names(gs[0]), (Names{"conv", "bn", "relu"}));
        continue;
      }
      QCOMPARE(b.names(gs[0]), (Names{"pad", "conv", "bn", "relu"}));
      QCOMPARE(gs[0].inputs.size(), size_t{1 + 2 + 4});
      QCOMPARE(gs[0].inputs[0], x);
      QCOMPARE(b.g.values[static_cast<size_t>(gs[0].inputs[1])].name, std::string("conv_w"));
      QCOMPARE(gs[0].output, y);
    }
  }

  void epilogueChains() {
    // The accelerators' rule: a Conv with folded BatchNormalization, a residual Add and an activation;
    // a MatMul or binary operator with an activation; nothing after a second reader; an operator the
    // device cannot run ends the chain.
    G b;
    ValueId x = b.input("x", {1, 16, 8, 8});
    ValueId skip = b.op("Relu", "pre", {x});
    ValueId a = b.bn("bn", b.conv("conv", skip, 16));
    ValueId y = b.op("Relu", "relu", {b.op("Add", "add", {a, skip})});
    ValueId z = b.op("Sigmoid", "sig", {b.op("Mul", "mul", {y, y})});
    b.output(z);
    b.g.rebuildIndex();
    auto idOf = [&](const std::string& name) {
      for (size_t i = 0; i < b.g.nodes.size(); ++i)
        if (b.g.nodes[i].name == name) return static_cast<OpId>(i);
      return kNone;
    };
    auto names = [&](const std::vector<OpId>& ops) {
      Names r;
      for (OpId op : ops) r.push_back(b.g.nodes[static_cast<size_t>(op)].name);
      return r;
    };
    auto all = [](OpId) { return true; };
    QCOMPARE(names(epilogueChain(b.g, idOf("conv"), nullptr, all)), (Names{"conv", "bn", "add", "relu"}));
    // Mul reads y twice: x*x is no chain start for Relu's output, but Mul + Sigmoid is one.
    QCOMPARE(names(epilogueChain(b.g, idOf("mul"), nullptr, all)), (Names{"mul", "sig"}));
    // "pre" has two readers (conv and add): a Relu starts no chain.
    QCOMPARE(names(epilogueChain(b.g, idOf("pre"), nullptr, all)), (Names{"pre"}));
    // A device that cannot run the Add: conv + bn only.
    auto noAdd = [&](OpId op) { return b.g.nodes[static_cast<size_t>(op)].opType != "Add"; };
    QCOMPARE(names(epilogueChain(b.g, idOf("conv"), nullptr, noAdd)), (Names{"conv", "bn"}));
    // The placement: bn on another device stops the chain at the Conv.
    std::vector<int> place(b.g.nodes.size(), 0);
    place[static_cast<size_t>(idOf("bn"))] = 1;
    QCOMPARE(names(epilogueChain(b.g, idOf("conv"), &place, all)), (Names{"conv"}));
    QVERIFY(isEpilogueActivation(b.g, b.g.nodes[static_cast<size_t>(idOf("relu"))]));
    QVERIFY(!isEpilogueActivation(b.g, b.g.nodes[static_cast<size_t>(idOf("mul"))]));
  }

  void costTableChargesEpilogueKernels() {
    // A device whose runtime fuses epilogues (Device::fusion) charges a chain as one kernel of its
    // anchor's work, on the chain's last operator; another device keeps per-operator costs.
    G b = convBnRelu();
    Platform p = twoDevices("cpu", DeviceKind::Gpu, "gpu", "epilogues");
    const auto work = characteriseAll(b.g);
    auto t = buildCostTable(b.g, work, p);
    QVERIFY2(t, t ? "" : t.message().c_str());
    const double conv = rooflineUs(p.devices[0], work[0], "Conv");
    QVERIFY(conv > 7);
    for (size_t v = 0; v < 3; ++v)
      QCOMPARE(t->w(static_cast<TaskId>(v), 0), rooflineUs(p.devices[0], work[v], b.g.nodes[v].opType));
    QCOMPARE(t->w(0, 1), 0.0);   // conv
    QCOMPARE(t->w(1, 1), 0.0);   // bn
    QCOMPARE(t->w(2, 1), conv);  // relu: the kernel
    // The operators alone stay known, for a profile's fused group that a plan splits (CostTable::wIn).
    QCOMPARE(t->unfusedCost.size(), t->cost.size());
    QCOMPARE(t->unfusedCost[1 * 2 + 1], rooflineUs(p.devices[1], work[1], "BatchNormalization"));
  }

  void costTableChargesRuntimeGroups() {
    // A device the CPU runtime runs (Device::fusion "runtime") charges each of its fused groups as one
    // kernel, the dearest operator's time on the last operator; the groups are known to the table, so a
    // plan that splits one pays each operator alone there (wIn). A device without the field keeps
    // per-operator costs.
    G b = convBnRelu();
    Platform p = twoDevices("plain", DeviceKind::Cpu, "runtime", "runtime");
    const auto work = characteriseAll(b.g);
    auto t = buildCostTable(b.g, work, p);
    QVERIFY2(t, t ? "" : t.message().c_str());
    double dearest = 0;
    for (size_t v = 0; v < 3; ++v) {
      const double alone = rooflineUs(p.devices[0], work[v], b.g.nodes[v].opType);
      dearest = std::max(dearest, alone);
      QCOMPARE(t->w(static_cast<TaskId>(v), 0), alone);
      QCOMPARE(t->unfusedCost[v * 2 + 1], alone);  // the same numbers: both devices are alike
    }
    QVERIFY(dearest > 7);
    QCOMPARE(t->fusedGroups.size(), size_t(1));
    QCOMPARE(t->fusedGroups[0], (std::vector<TaskId>{0, 1, 2}));
    QCOMPARE(t->w(0, 1), 0.0);
    QCOMPARE(t->w(1, 1), 0.0);
    QCOMPARE(t->w(2, 1), dearest);
    // Whole on the runtime device: the kernel; the Relu moved away: each operator alone.
    QCOMPARE(t->wIn(2, 1, {1, 1, 1}), dearest);
    QCOMPARE(t->wIn(0, 1, {1, 1, 0}), t->unfusedCost[0 * 2 + 1]);
    QCOMPARE(t->wIn(1, 1, {1, 1, 0}), t->unfusedCost[1 * 2 + 1]);
    // Without the field no group is charged: the plain device's costs are the operators'.
    p.devices[1].fusion.clear();
    auto u = buildCostTable(b.g, work, p);
    QVERIFY(u && u->fusedGroups.empty());
    QCOMPARE(u->w(0, 1), t->unfusedCost[0 * 2 + 1]);
  }
};

QTEST_GUILESS_MAIN(TestFusion)
#include "tst_fusion.moc"
