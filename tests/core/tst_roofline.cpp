// Roofline device model: time = launch + max(flops / peak(class, dtype), bytes / bandwidth), checked against
// numbers worked out by hand. GFLOP/s * 1e3 = FLOP per microsecond; GB/s * 1e3 = bytes per microsecond.

#include <QtTest>

#include "cost/roofline.h"

using namespace partex;

namespace {

/// Conv 1000 GFLOP/s, MatMul 500 GFLOP/s, everything else 100; float16 x2, int8 x4; 50 GB/s.
Device testDevice(double launchUs) {
  Device d;
  d.id = "npu";
  d.peakGflops = {{OpClass::Conv, 1000.0}, {OpClass::MatMul, 500.0}};
  d.defaultPeakGflops = 100.0;
  d.dtypeSpeedup = {{DType::Float16, 2.0}, {DType::Int8, 4.0}};
  d.memBandwidthGBs = 50.0;
  d.launchOverheadUs = launchUs;
  return d;
}

Value tensor(std::string name, std::vector<int64_t> shape, bool weight) {
  Value v;
  v.name = std::move(name);
  v.dtype = DType::Float32;
  v.shape = std::move(shape);
  v.shapeKnown = true;
  v.isWeight = weight;
  return v;
}

OpWork work(OpClass cls, DType t, int64_t flops, int64_t readAct, int64_t readWeights, int64_t written) {
  OpWork w;
  w.cls = cls;
  w.dtype = t;
  w.flops = flops;
  w.macs = flops / 2;
  w.bytesReadActivations = readAct;
  w.bytesReadWeights = readWeights;
  w.bytesWritten = written;
  return w;
}

}  // namespace

class TestRoofline : public QObject {
  Q_OBJECT

 private slots:
  void singleOp_data();
  void singleOp();
  void group_data();
  void group();
  void fromCharacterisedConv();
  void badDeviceNumbersStayFinite();
  void perClassAndOpTypeNumbers();
  void thinKernelReductionFloor();
};

void TestRoofline::singleOp_data() {
  QTest::addColumn<double>("launch");
  QTest::addColumn<int>("cls");
  QTest::addColumn<int>("dtype");
  QTest::addColumn<qlonglong>("flops");
  QTest::addColumn<qlonglong>("readAct");
  QTest::addColumn<qlonglong>("readWeights");
  QTest::addColumn<qlonglong>("written");
  QTest::addColumn<double>("expectedUs");

  auto row = [](const char* name, double launch, OpClass c, DType t, qlonglong flops, qlonglong ra, qlonglong rw,
                qlonglong wr,
                double us) { QTest::newRow(name) << launch << int(c) << int(t) << flops << ra << rw << wr << us; };
  // 2e9 / 1e6 FLOP/us = 2000 us > 2e6 B / 5e4 B/us = 40 us.
  row("compute-bound conv", 5, OpClass::Conv, DType::Float32, 2000000000, 1000000, 0, 1000000, 2005);
  // 1e6 / 1e5 = 10 us < 8e6 / 5e4 = 160 us (Elementwise has no peak of its own: default 100).
  row("memory-bound elementwise", 5, OpClass::Elementwise, DType::Float32, 1000000, 4000000, 0, 4000000, 165);
  // Weights count as bytes read: 1e6 / 5e4 = 20 us.
  row("weights are bytes", 0, OpClass::MatMul, DType::Float32, 0, 0, 1000000, 0, 20);
  // float16 doubles MatMul's 500: 1e9 / 1e6 = 1000 us.
  row("float16 speed-up", 5, OpClass::MatMul, DType::Float16, 1000000000, 0, 0, 0, 1005);
  // int8 quadruples Conv's 1000: 4e9 / 4e6 = 1000 us.
  row("int8 speed-up", 5, OpClass::Conv, DType::Int8, 4000000000LL, 0, 0, 0, 1005);
  // float64 has no entry: x1. 1e9 / 5e5 = 2000 us.
  row("dtype without speed-up", 5, OpClass::MatMul, DType::Float64, 1000000000, 0, 0, 0, 2005);
  // Shape-only: launch only, whatever bytes it claims.
  row("shape-only is launch only", 5, OpClass::ShapeOnly, DType::Float32, 0, 1000000000, 0, 1000000000, 5);
  row("shape-only without launch", 0, OpClass::ShapeOnly, DType::Float32, 0, 0, 0, 0, 0);
  // Data movement: no flops, bandwidth-bound: (2.5e6 + 2.5e6) / 5e4 = 100 us.
  row("data movement", 5, OpClass::DataMovement, DType::Float32, 0, 2500000, 0, 2500000, 105);
  // Nothing to do: launch only.
  row("empty op", 7.5, OpClass::Unknown, DType::Float32, 0, 0, 0, 0, 7.5);
  // Balanced: 5e6 / 1e5 = 50 us and 2.5e6 / 5e4 = 50 us.
  row("ridge point", 1, OpClass::Pooling, DType::Float32, 5000000, 2000000, 0, 500000, 51);
}

void TestRoofline::singleOp() {
  QFETCH(double, launch);
  QFETCH(int, cls);
  QFETCH(int, dtype);
  QFETCH(qlonglong, flops);
  QFETCH(qlonglong, readAct);
  QFETCH(qlonglong, readWeights);
  QFETCH(qlonglong, written);
  QFETCH(double, expectedUs);
  Device d = testDevice(launch);
  double us =
      rooflineUs(d, work(static_cast<OpClass>(cls), static_cast<DType>(dtype), flops, readAct, readWeights, written));
  QVERIFY2(qAbs(us - expectedUs) <= 1e-9 * qMax(1.0, expectedUs), qPrintable(QString("got %1 us").arg(us, 0, 'g', 17)));
}

void TestRoofline::group_data() {
  QTest::addColumn<int>("cls");
  QTest::addColumn<int>("dtype");
  QTest::addColumn<qlonglong>("flops");
  QTest::addColumn<qlonglong>("bytes");
  QTest::addColumn<double>("expectedUs");
  // 1e9 / 1e6 = 1000 us < 1e8 / 5e4 = 2000 us.
  QTest::newRow("memory-bound group") << int(OpClass::Conv) << int(DType::Float32) << 1000000000LL << 100000000LL
                                      << 2005.0;
  // 4e9 / 1e6 (MatMul float16) = 4000 us > 1e6 / 5e4 = 20 us.
  QTest::newRow("compute-bound group") << int(OpClass::MatMul) << int(DType::Float16) << 4000000000LL << 1000000LL
                                       << 4005.0;
  // A group counts its bytes even when its dominant class is shape-only: one launch + 1e6 / 5e4.
  QTest::newRow("shape-only group") << int(OpClass::ShapeOnly) << int(DType::Float32) << 0LL << 1000000LL << 25.0;
}

void TestRoofline::group() {
  QFETCH(int, cls);
  QFETCH(int, dtype);
  QFETCH(qlonglong, flops);
  QFETCH(qlonglong, bytes);
  QFETCH(double, expectedUs);
  Device d = testDevice(5);
  double us = rooflineGroupUs(d, static_cast<OpClass>(cls), static_cast<DType>(dtype), flops, bytes);
  QVERIFY2(qAbs(us - expectedUs) <= 1e-9 * expectedUs, qPrintable(QString("got %1 us").arg(us, 0, 'g', 17)));
}

void TestRoofline::fromCharacterisedConv() {
  // ResNet 1x1 conv 256->64 at 56x56: 51,380,224 MACs -> 102,760,448 FLOPs; bytes 3,211,264 + 65,536 + 802,816.
  Graph g;
  auto xi = g.addValue(tensor("x", {1, 256, 56, 56}, false));
  auto wi = g.addValue(tensor("w", {64, 256, 1, 1}, true));
  auto yi = g.addValue(tensor("y", {1, 64, 56, 56}, false));
  g.inputs = {xi};
  g.outputs = {yi};
  Node n;
  n.name = "conv";
  n.opType = "Conv";
  n.inputs = {xi, wi};
  n.outputs = {yi};
  g.addNode(n);
  g.rebuildIndex();
  OpWork ow = characterise(g, 0);
  QCOMPARE(ow.flops, int64_t{102760448});
  QCOMPARE(ow.bytesRead() + ow.bytesWritten, int64_t{4079616});
  Device d = testDevice(5);
  // compute 102,760,448 / 1e6 = 102.760448 us > memory 4,079,616 / 5e4 = 81.59232 us.
  QVERIFY(qAbs(rooflineUs(d, ow) - 107.760448) < 1e-9);
  // With 20 GB/s it turns memory-bound: 4,079,616 / 2e4 = 203.9808 us.
  d.memBandwidthGBs = 20;
  QVERIFY(qAbs(rooflineUs(d, ow) - 208.9808) < 1e-9);
}

void TestRoofline::badDeviceNumbersStayFinite() {
  // Non-positive peaks and bandwidths fall back to 1 (GFLOP/s, GB/s): the time stays finite.
  Device d;
  d.peakGflops = {{OpClass::Conv, 0.0}};
  d.defaultPeakGflops = 0.0;
  d.memBandwidthGBs = 0.0;
  d.launchOverheadUs = -3;  // ignored
  double us = rooflineUs(d, work(OpClass::Conv, DType::Float32, 1000000, 2000, 0, 0));
  QVERIFY(std::isfinite(us));
  QCOMPARE(us, 1000.0);  // 1e6 FLOP / 1e3 FLOP/us; 2000 B / 1e3 B/us = 2 us
}

void TestRoofline::perClassAndOpTypeNumbers() {
  // A calibrated device: its own bandwidth and launch per class, numbers of their own for one op type.
  Device d = testDevice(5);
  d.bandwidthGBsByClass = {{OpClass::Elementwise, 10.0}};
  d.launchOverheadUsByClass = {{OpClass::Elementwise, 2.0}, {OpClass::ShapeOnly, 1.5}};
  d.opTypeCosts["Add"] = OpTypeCost{0.5, 0.0, 3.0};  // peak 0.5 GFLOP/s, the class's bandwidth, 3 us
  d.opTypeCosts["Transpose"] = OpTypeCost{0.0, 4.0, -1.0};
  const OpWork relu = work(OpClass::Elementwise, DType::Float32, 1000, 4000, 0, 4000);
  // Elementwise: 2 us + max(1000 / 1e5 = 0.01, 8000 / 1e4 = 0.8) us.
  QVERIFY(qAbs(rooflineUs(d, relu) - 2.8) < 1e-9);
  QVERIFY(qAbs(rooflineUs(d, relu, "Relu") - 2.8) < 1e-9);
  // Add: 3 us + max(1000 / 500 = 2, 0.8) us.
  QVERIFY(qAbs(rooflineUs(d, relu, "Add") - 5.0) < 1e-9);
  // Transpose (data movement): the device's launch 5 us + 8000 / 4e3 = 2 us.
  const OpWork move = work(OpClass::DataMovement, DType::Float32, 0, 4000, 0, 4000);
  QVERIFY(qAbs(rooflineUs(d, move, "Transpose") - 7.0) < 1e-9);
  QVERIFY(qAbs(rooflineUs(d, move, "Concat") - 5.16) < 1e-9);  // 5 + 8000 / 5e4
  // Weights stream at the device's bandwidth, activations at the class's: 10,000 B / 5e3 + 50,000 B / 5e4.
  d.bandwidthGBsByClass[OpClass::Conv] = 5.0;
  QVERIFY(qAbs(rooflineUs(d, work(OpClass::Conv, DType::Float32, 1000, 5000, 50000, 5000)) - 8.0) < 1e-9);
  // Shape-only: the class's launch, no data.
  QCOMPARE(rooflineUs(d, work(OpClass::ShapeOnly, DType::Float32, 0, 4000, 0, 4000), "Reshape"), 1.5);
  // A group takes the class's numbers (no op type): 2 + 1e5 / 1e4.
  QVERIFY(qAbs(rooflineGroupUs(d, OpClass::Elementwise, DType::Float32, 1000, 100000) - 12.0) < 1e-9);
  // Bad overrides fall back to the next level.
  d.opTypeCosts["Add"] = OpTypeCost{-1.0, std::nan(""), std::nan("")};
  d.bandwidthGBsByClass[OpClass::Elementwise] = 0.0;
  d.launchOverheadUsByClass[OpClass::Elementwise] = -2.0;
  // 5 us + max(1000 / 1e5, 8000 / 5e4 = 0.16)
  QVERIFY(qAbs(rooflineUs(d, relu, "Add") - 5.16) < 1e-9);
}

void TestRoofline::thinKernelReductionFloor() {
  // A GPU-like device: a wave is 1,000 outputs, a conv reduction step 0.01 us.
  Device d = testDevice(5);
  d.waveOutputs = 1000;
  d.reductionStepUsByClass = {{OpClass::Conv, 0.01}};
  // 500 outputs (2,000 bytes) of 4,000 MACs each: 4e6 flops = 4 us at 1000 GFLOP/s, but one wave of
  // 4,000 steps = 40 us.
  const OpWork thin = work(OpClass::Conv, DType::Float32, 4000000, 2000, 1000, 2000);
  QVERIFY(qAbs(reductionFloorUs(d, thin) - 40.0) < 1e-9);
  QVERIFY(qAbs(rooflineUs(d, thin) - 45.0) < 1e-9);
  // 2,500 outputs of 400 MACs: three waves of 400 steps = 12 us, above 2 us of flops.
  const OpWork waves = work(OpClass::Conv, DType::Float32, 2000000, 10000, 1000, 10000);
  QVERIFY(qAbs(reductionFloorUs(d, waves) - 12.0) < 1e-9);
  QVERIFY(qAbs(rooflineUs(d, waves) - 17.0) < 1e-9);
  // With a faster step (0.0005 us) full waves are flop-bound: 10,000 outputs of 400 MACs = 10 waves of
  // 0.2 us = 2 us of floor, below 8e6 flops at 1000 GFLOP/s = 8 us.
  d.reductionStepUsByClass[OpClass::Conv] = 0.0005;
  const OpWork wide = work(OpClass::Conv, DType::Float32, 8000000, 40000, 1000, 40000);
  QVERIFY(qAbs(reductionFloorUs(d, wide) - 2.0) < 1e-9);
  QVERIFY(qAbs(rooflineUs(d, wide) - 13.0) < 1e-9);  // 5 + 8
  d.reductionStepUsByClass[OpClass::Conv] = 0.01;
  // Another class, a device without the numbers, or no MACs: no floor.
  QCOMPARE(reductionFloorUs(d, work(OpClass::MatMul, DType::Float32, 4000000, 2000, 1000, 2000)), 0.0);
  OpWork noMacs = thin;
  noMacs.macs = 0;
  QCOMPARE(reductionFloorUs(d, noMacs), 0.0);
  d.waveOutputs = 0;
  QCOMPARE(reductionFloorUs(d, thin), 0.0);
  QVERIFY(qAbs(rooflineUs(d, thin) - 9.0) < 1e-9);  // 5 + 4e6 / 1e6
}

QTEST_APPLESS_MAIN(TestRoofline)
#include "tst_roofline.moc"
