// The calibration of this-machine on the real CPU kernels (core/profile/calibration.h): sane numbers per
// op class, the cache (round trip, corrupt and stale files replaced, never a crash; the this-machine
// probe cached with it, so that a warm start measures nothing), the provider that the front ends install, and a
// prediction that is consistent with a measured run. No timing is asserted: the consistency check allows a generous
// factor (a shared machine, the sanitizer build).

#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "graphrun.h"
#include "platform/platform.h"
#include "profile/calibration.h"
#include "profile/executor.h"
#include "sim/simulator.h"
#include "support/files.h"

using namespace partex;

namespace {

/// Few runs: the tests check the machinery, bench_calib the accuracy.
CalibrationOptions quick() {
  CalibrationOptions o;
  o.warmup = 1;
  o.reps = 3;
  return o;
}

std::string readAll(const QString& path) {
  auto t = readFile(path.toStdString());
  return t ? *t : std::string();
}

bool finitePositive(double v) {
  return v > 0 && std::isfinite(v);
}

/// One run: for the checks of the cache, which do not look at the numbers.
CalibrationOptions fastest() {
  CalibrationOptions o;
  o.warmup = 0;
  o.reps = 1;
  return o;
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT

  BackendRegistry reg_;
  const Backend* cpu_ = nullptr;
  /// The GPU backend where the machine has one (the provider then calibrates the GPU too, under a key
  /// naming it); nullptr here and in CI.
  const Backend* gpu_ = nullptr;
  Platform base_;
  MachineCalibration calib_;  ///< One calibration shared by the read-only checks.

 private slots:
  void initTestCase() {
    setThisMachineProvider({});
    registerBuiltinBackends(reg_);
    cpu_ = reg_.find("cpu");
    QVERIFY(cpu_);
    gpu_ = findGpuBackend(reg_);
    base_ = measureThisMachine();
    auto c = calibrateMachine(*cpu_, base_, quick());
    QVERIFY2(c.isOk(), c.message().c_str());
    calib_ = *c;
    qInfo("calibrated in %.0f ms", calib_.seconds * 1e3);
  }

  void cleanupTestCase() { setThisMachineProvider({}); }

  /// Every measured class has positive, finite numbers; conv and matmul stay below the FMA loop's peak
  /// (with 20% slack: the two are measured at different moments on a shared machine).
  void saneNumbers() {
    // The FMA peak: the best of the measurements around the calibration's. On a shared machine one taken
    // while other programs ran (on this VM even the other vCPU halves it: they share one core's FMA units)
    // is low, so up to five more are taken while a class peak is above it.
    // cpu-parallel's bound is also never below the one-thread figure times its threads: the all-thread
    // FMA loop runs at a moment when another program may hold a core (119 GFLOP/s against 2 x 112 at load
    // 6-9 on the EPYC VM), and the 1x1 convolutions (conv1x1.cpp) run at the FMA peak on both cores, which
    // left no room in the 20% slack.
    double fmaSerial = 0, fmaParallel = 0;
    auto addFma = [&](const Platform& p) {
      fmaSerial = std::max(fmaSerial, p.devices[static_cast<size_t>(p.findDevice("core0"))].defaultPeakGflops);
      const Device& par = p.devices[static_cast<size_t>(p.findDevice("cpu-parallel"))];
      fmaParallel = std::max({fmaParallel, par.defaultPeakGflops, fmaSerial * std::max(1, par.cores)});
    };
    auto peak = [](const ModeCalibration& m, OpClass cls) {
      auto it = m.classes.find(cls);
      return it == m.classes.end() ? 0.0 : it->second.peakGflops;
    };
    auto peaksBelowFma = [&] {
      for (OpClass cls : {OpClass::Conv, OpClass::MatMul})
        if (peak(calib_.serial, cls) > 1.2 * fmaSerial || peak(calib_.parallel, cls) > 1.2 * fmaParallel) return false;
      return true;
    };
    addFma(base_);
    for (int i = 0; i < 5 && !peaksBelowFma(); ++i) addFma(measureThisMachine());
    for (const auto* m : {&calib_.serial, &calib_.parallel}) {
      const double fma = m == &calib_.serial ? fmaSerial : fmaParallel;
      QVERIFY2(m->executorUs >= 0 && std::isfinite(m->executorUs), m->device.c_str());
      QVERIFY2(finitePositive(m->callUs), m->device.c_str());
      QVERIFY2(finitePositive(m->weightBandwidthGBs), m->device.c_str());
      for (OpClass cls : {OpClass::Conv, OpClass::MatMul, OpClass::Elementwise, OpClass::Normalisation,
                          OpClass::Pooling, OpClass::DataMovement, OpClass::Reduction, OpClass::ShapeOnly}) {
        const std::string what = m->device + " " + opClassName(cls);
        QVERIFY2(m->classes.count(cls), what.c_str());
        const CalibratedCost& c = m->classes.at(cls);
        QVERIFY2(finitePositive(c.launchUs), what.c_str());  // The per-call overhead is measured: > 0.
        // MatMul streams weights at the device's bandwidth (weightBandwidthGBs) and has no class bandwidth.
        if (cls != OpClass::ShapeOnly && cls != OpClass::MatMul) QVERIFY2(finitePositive(c.bandwidthGBs), what.c_str());
      }
      for (OpClass cls : {OpClass::Conv, OpClass::MatMul}) {
        const double peak = m->classes.at(cls).peakGflops;
        const std::string what = m->device + " " + opClassName(cls) + ": " + std::to_string(peak) +
                                 " GFLOP/s against the FMA loop's " + std::to_string(fma);
        QVERIFY2(finitePositive(peak), what.c_str());
        QVERIFY2(peak <= fma * 1.2, what.c_str());
      }
      QVERIFY(finitePositive(m->classes.at(OpClass::Elementwise).peakGflops));
      for (const char* op : {"Add", "Mul", "Sum"}) {
        QVERIFY2(m->opTypes.count(op), op);
        QVERIFY(finitePositive(m->opTypes.at(op).peakGflops));
      }
      for (const char* op : {"Transpose", "Resize", "Slice"}) QVERIFY(finitePositive(m->opTypes.at(op).bandwidthGBs));
      QVERIFY(finitePositive(m->opTypes.at("ConvTranspose").peakGflops));
      QVERIFY(!m->samples.empty());
    }
    QCOMPARE(calib_.serial.device, std::string("core0"));
    QCOMPARE(calib_.parallel.device, std::string("cpu-parallel"));
    // The handoff chains ran (this machine has core1 and cpu-parallel where it has two CPUs), and the
    // two costs are what their makespans give.
    const HandoffCalibration& h = calib_.handoffs;
    if (base_.findDevice("core1") >= 0) {
      for (double us : {h.core0Us, h.core1Us, h.parallelUs, h.crossUs, h.switchChainUs}) QVERIFY(finitePositive(us));
      HandoffCalibration again = h;
      deriveHandoffCosts(again);
      QCOMPARE(again.wakeUpUs, h.wakeUpUs);
      QCOMPARE(again.modeSwitchUs, h.modeSwitchUs);
    }
    QVERIFY(h.wakeUpUs >= 0 && std::isfinite(h.wakeUpUs) && h.modeSwitchUs >= 0 && std::isfinite(h.modeSwitchUs));
    QVERIFY(calib_.key.find(cpu_->version()) != std::string::npos);
    QVERIFY(calib_.seconds > 0);
  }

  /// Applied to the platform: the cores and cpu-serial get core0's numbers, cpu-parallel its own; the
  /// description says what was measured and what is still estimated.
  void applied() {
    Platform p = base_;
    applyCalibration(p, calib_, CalibrationSource{});
    for (const Device& d : p.devices) {
      QVERIFY2(d.bandwidthGBsByClass.count(OpClass::Conv), d.id.c_str());
      QVERIFY2(d.launchOverheadUsByClass.count(OpClass::Conv), d.id.c_str());
      QVERIFY2(d.opTypeCosts.count("Add"), d.id.c_str());
      QVERIFY2(d.launchOverheadUs > 0, d.id.c_str());
    }
    const Device& core0 = p.devices[static_cast<size_t>(p.findDevice("core0"))];
    const Device& serial = p.devices[static_cast<size_t>(p.findDevice("cpu-serial"))];
    QVERIFY(serial.peakGflops == core0.peakGflops);
    QVERIFY(serial.bandwidthGBsByClass == core0.bandwidthGBsByClass);
    // The handoffs: a wake-up on every CPU device, the mode switch on the team only.
    const Device& parallel = p.devices[static_cast<size_t>(p.findDevice("cpu-parallel"))];
    auto near = [](double a, double b) { return std::abs(a - b) <= 0.005 * b; };  // three significant digits
    QVERIFY(near(core0.wakeUpUs, calib_.handoffs.wakeUpUs));
    QCOMPARE(serial.wakeUpUs, core0.wakeUpUs);
    QVERIFY(near(parallel.modeSwitchUs, calib_.handoffs.modeSwitchUs));
    QCOMPARE(core0.modeSwitchUs, 0.0);
    QVERIFY(p.description.find("Calibrated on the real kernels") != std::string::npos);
    QVERIFY(p.description.find("Estimates: the other cores") != std::string::npos);
    QVERIFY2(p.description.find("every op class gets the FMA peak") == std::string::npos, p.description.c_str());
    QVERIFY(p.sources.size() == base_.sources.size() + 1);
    // The calibrated numbers survive the platform's JSON form.
    auto back = parsePlatform(platformToJson(p), "calibrated.json");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(platformToJson(*back), platformToJson(p));
  }

  /// The handoff costs from the chains' makespans, by hand: 24 convolutions, 23 handoffs. Alternating core0 and
  /// core1 took 92 us more than the mean of the two one-core chains (100 and 110 us): 4 us per wake-up;
  /// alternating cpu-parallel and core1 230 us more than the mean of theirs (200 and 110): 10 us per
  /// switch. A faster alternating chain (the machine's phases) gives 0, never a negative cost.
  void handoffCosts() {
    QCOMPARE(kHandoffChain, 24);
    HandoffCalibration h;
    h.core0Us = 100;
    h.core1Us = 110;
    h.crossUs = 105 + 92;
    h.parallelUs = 200;
    h.switchChainUs = 155 + 230;
    deriveHandoffCosts(h);
    QCOMPARE(h.wakeUpUs, 4.0);
    QCOMPARE(h.modeSwitchUs, 10.0);
    h.crossUs = 90;
    h.switchChainUs = 0;  // not measured (one CPU)
    deriveHandoffCosts(h);
    QCOMPARE(h.wakeUpUs, 0.0);
    QCOMPARE(h.modeSwitchUs, 0.0);
  }

  /// The JSON form round-trips; broken or implausible files are errors, never crashes.
  void jsonRoundTrip() {
    MachineCalibration withProbe = calib_;
    withProbe.probe = MachineProbe{"AVX2+FMA", 2, 90.5, 170.25, 12.5, 20.0, 1.5, 64 << 20, 32 << 20, 0.3, 0.7};
    const std::string probed = calibrationToJson(withProbe);
    auto probedBack = parseCalibration(probed, "p.json");
    QVERIFY2(probedBack.isOk(), probedBack.message().c_str());
    QVERIFY(probedBack->probe.has_value());
    QCOMPARE(probedBack->probe->parallelGflops, 170.25);
    QCOMPARE(probedBack->probe->copyBytes, int64_t(64) << 20);
    QCOMPARE(calibrationToJson(*probedBack), probed);
    std::string badProbe = probed;
    const auto cores = badProbe.find("\"cores\": 2");
    QVERIFY(cores != std::string::npos);
    badProbe.replace(cores, 10, "\"cores\": -2");
    auto refused = parseCalibration(badProbe, "bad-probe.json");
    QVERIFY(!refused.isOk());
    QVERIFY2(refused.message().find("probe.cores") != std::string::npos, refused.message().c_str());

    const std::string json = calibrationToJson(calib_);
    QVERIFY(json.find("\"weight_bandwidth_gbs\"") != std::string::npos);
    auto back = parseCalibration(json, "c.json");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(calibrationToJson(*back), json);
    for (const std::string& bad :
         {std::string(), std::string("{"), std::string("[]"), std::string("{\"format\":\"partex-calibration\"}"),
          json.substr(0, json.size() / 2)}) {
      auto r = parseCalibration(bad, "bad.json");
      QVERIFY2(!r.isOk(), bad.c_str());
      QVERIFY2(r.message().find("bad.json") != std::string::npos, r.message().c_str());
    }
    std::string negative = json;
    const auto at = negative.find("\"bandwidth_gbs\": ");
    QVERIFY(at != std::string::npos);
    negative.insert(at + 17, "-");
    auto r = parseCalibration(negative, "neg.json");
    QVERIFY(!r.isOk());
    QVERIFY2(r.message().find("bandwidth_gbs") != std::string::npos, r.message().c_str());
  }

  /// The cache: the first call measures and writes, the second reads; a corrupt, truncated or stale file
  /// is measured again and replaced (atomically: no temporary file is left behind).
  void cache() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string cacheDir = (dir.path() + "/partex").toStdString();  // Created on first write.
    CalibrationSource src;
    auto first = loadOrCalibrate(*cpu_, base_, cacheDir, &src, fastest());
    QVERIFY2(first.isOk(), first.message().c_str());
    QVERIFY(!src.fromCache);
    QCOMPARE(src.path, calibrationCachePath(cacheDir, calibrationKey(*cpu_)));
    QVERIFY(QFileInfo::exists(QString::fromStdString(src.path)));
    const std::string written = readAll(QString::fromStdString(src.path));

    auto second = loadOrCalibrate(*cpu_, base_, cacheDir, &src, fastest());
    QVERIFY2(second.isOk(), second.message().c_str());
    QVERIFY(src.fromCache);
    QCOMPARE(calibrationToJson(*second), written);

    MachineCalibration stale = *first;
    stale.key += " (another machine)";
    const std::string staleJson = calibrationToJson(stale);
    for (const std::string& broken : {std::string("not json at all"), written.substr(0, written.size() / 3),
                                      std::string("{\"format\": \"partex-calibration\", \"version\": 1}"), staleJson}) {
      QVERIFY(writeFileAtomic(src.path, broken).isOk());
      auto again = loadOrCalibrate(*cpu_, base_, cacheDir, &src, fastest());
      QVERIFY2(again.isOk(), again.message().c_str());
      QVERIFY(!src.fromCache);
      QVERIFY2(src.note.find(src.path) != std::string::npos || src.note.find("measured again") != std::string::npos,
               src.note.c_str());
      auto reread = parseCalibration(readAll(QString::fromStdString(src.path)), src.path);
      QVERIFY2(reread.isOk(), reread.message().c_str());
      QCOMPARE(reread->key, calibrationKey(*cpu_));
    }
    const QStringList left = QDir(QString::fromStdString(cacheDir)).entryList(QDir::Files | QDir::Hidden);
    QCOMPARE(left.size(), 1);

    // A calibration measured under load is measured again once the machine is quieter, not before.
    MachineCalibration busy = *first;
    busy.loadAverage = 8.0;
    QVERIFY(calibrationIsProvisional(busy, 2, 1.0));
    QVERIFY(!calibrationIsProvisional(busy, 2, 6.0));
    QVERIFY(!calibrationIsProvisional(busy, 2, -1.0));
    busy.loadAverage = 0.3;
    QVERIFY(!calibrationIsProvisional(busy, 2, 0.0));

    // A cache folder that cannot be created: measured, not cached, no error.
    QTemporaryFile file;
    QVERIFY(file.open());
    auto uncached = loadOrCalibrate(*cpu_, base_, file.fileName().toStdString() + "/sub", &src, fastest());
    QVERIFY2(uncached.isOk(), uncached.message().c_str());
    QVERIFY(!src.fromCache);
    QVERIFY2(src.note.find("not cached") != std::string::npos, src.note.c_str());
  }

  /// The probe is cached with the calibration: the first start with an empty cache probes once and
  /// writes both; a second start (a new process, which the provider's reset stands for) reads both and
  /// runs no probe; the platforms built are the same. A cache file written without a probe
  /// (loadOrCalibrate) gets only the probe measured; a stale key measures both again.
  void probeCachedWithCalibration() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string cacheDir = dir.path().toStdString();
    const int64_t runs0 = machineProbeRuns();
    installThisMachineCalibration(registerBuiltinBackends, cacheDir);
    auto cold = loadPreset("this-machine");
    QVERIFY2(cold.isOk(), cold.message().c_str());
    QCOMPARE(machineProbeRuns(), runs0 + 1);
    const std::string file = calibrationCachePath(cacheDir, calibrationKey(*cpu_, gpu_));
    auto written = parseCalibration(readAll(QString::fromStdString(file)), file);
    QVERIFY2(written.isOk(), written.message().c_str());
    QVERIFY(written->probe.has_value());
    QCOMPARE(written->probe->copyBytes, probeCopyBytes(lastLevelCacheBytes()));

    installThisMachineCalibration(registerBuiltinBackends, cacheDir);  // forgets the preset built so far
    auto warm = loadPreset("this-machine");
    QVERIFY2(warm.isOk(), warm.message().c_str());
    QCOMPARE(machineProbeRuns(), runs0 + 1);  // No probe: it came from the cache.
    QVERIFY2(warm->description.find("with the probe") != std::string::npos, warm->description.c_str());
    QCOMPARE(warm->devices.size(), cold->devices.size());
    for (size_t i = 0; i < warm->devices.size(); ++i) {
      QCOMPARE(warm->devices[i].defaultPeakGflops, cold->devices[i].defaultPeakGflops);
      QCOMPARE(warm->devices[i].launchOverheadUs, cold->devices[i].launchOverheadUs);
      QVERIFY(warm->devices[i].peakGflops == cold->devices[i].peakGflops);
    }
    QCOMPARE(warm->links.front().bandwidthGBs, cold->links.front().bandwidthGBs);

    // A calibration of this key without a probe: only the probe is measured, then cached beside it.
    MachineCalibration noProbe = *written;
    noProbe.probe.reset();
    QVERIFY(writeFileAtomic(file, calibrationToJson(noProbe)).isOk());
    CalibrationSource src;
    auto added = loadOrMeasureThisMachine(*cpu_, cacheDir, &src, fastest(), gpu_);
    QVERIFY2(added.isOk(), added.message().c_str());
    QCOMPARE(machineProbeRuns(), runs0 + 2);
    QVERIFY(src.fromCache && !src.probeFromCache);
    QCOMPARE(added->measuredAt, written->measuredAt);  // The calibration itself was not measured again.
    auto rewritten = parseCalibration(readAll(QString::fromStdString(file)), file);
    QVERIFY2(rewritten.isOk() && rewritten->probe.has_value(), file.c_str());

    // Another key (machine, version, backend): stale, probe and calibration measured again.
    MachineCalibration stale = *rewritten;
    stale.key += " (another machine)";
    QVERIFY(writeFileAtomic(file, calibrationToJson(stale)).isOk());
    auto again = loadOrMeasureThisMachine(*cpu_, cacheDir, &src, fastest(), gpu_);
    QVERIFY2(again.isOk(), again.message().c_str());
    QCOMPARE(machineProbeRuns(), runs0 + 3);
    QVERIFY(!src.fromCache && !src.probeFromCache);
    QVERIFY(again->probe.has_value());
    setThisMachineProvider({});
  }

  /// The provider the front ends install: loadPreset("this-machine") is calibrated (and cached); without a
  /// CPU backend it says so; removed, the preset is measured as before.
  void provider() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    installThisMachineCalibration(registerBuiltinBackends, dir.path().toStdString());
    auto p = loadPreset("this-machine");
    QVERIFY2(p.isOk(), p.message().c_str());
    QVERIFY2(p->description.find("Calibrated on the real kernels") != std::string::npos, p->description.c_str());
    QVERIFY(!p->devices[static_cast<size_t>(p->findDevice("core0"))].bandwidthGBsByClass.empty());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
    // Cut down to cores, as the executor's benchmarks use it: calibrated too.
    const Platform two = thisMachineCores(1);
    QVERIFY(!two.devices.front().opTypeCosts.empty());

    installThisMachineCalibration([](BackendRegistry&) {}, dir.path().toStdString());
    auto none = loadPreset("this-machine");
    QVERIFY(none.isOk());
    QVERIFY2(none->description.find("Not calibrated on the real kernels: no CPU backend") != std::string::npos,
             none->description.c_str());
    QVERIFY(none->devices[static_cast<size_t>(none->findDevice("core0"))].bandwidthGBsByClass.empty());

    qputenv("PARTEX_NO_CALIBRATION", "1");
    installThisMachineCalibration(registerBuiltinBackends, dir.path().toStdString());
    qunsetenv("PARTEX_NO_CALIBRATION");
    QVERIFY(!thisMachineProvider());

    setThisMachineProvider({});
    auto plain = loadPreset("this-machine");
    QVERIFY(plain.isOk());
    QVERIFY(plain->description.find("every op class gets the FMA peak") != std::string::npos);
  }

  /// The calibrated prediction of a small generated network on core0 is of the order of its measured run
  /// (a consistency check with a generous factor, not a timing assertion: bench_calib measures accuracy).
  void predictionConsistent() {
    GenSpec spec;
    spec.kind = "mobilenetv2";
    spec.imageSize = 64;
    spec.numClasses = 16;
    auto g = test::generatedGraph(spec);
    QVERIFY2(g.isOk(), g.message().c_str());
    Platform p = base_;
    applyCalibration(p, calib_, CalibrationSource{});
    auto t = buildCostTable(*g, characteriseAll(*g), p);
    QVERIFY2(t.isOk(), t.message().c_str());
    const DeviceId core0 = p.findDevice("core0");
    Plan plan;
    plan.device.assign(g->nodes.size(), core0);
    plan.order.assign(static_cast<size_t>(t->numDevices()), {});
    auto topo = g->topologicalOrder();
    QVERIFY(topo.isOk());
    plan.order[static_cast<size_t>(core0)] = *topo;
    auto predicted = simulate(*t, plan);
    QVERIFY2(predicted.isOk(), predicted.message().c_str());
    ExecOptions eo;
    eo.reps = 3;
    eo.checkOutputs = false;
    auto measured = executePlan(*g, *cpu_, *t, plan, eo);
    QVERIFY2(measured.isOk(), measured.message().c_str());
    const double ratio = predicted->makespan / measured->makespanUs;
    qInfo("mobilenetv2 64x64 on core0: modelled %.0f us, measured %.0f us (ratio %.2f, CPU share %.2f)",
          predicted->makespan, measured->makespanUs, ratio, measured->cpuShare);
    // The uncalibrated platform is 1.35-3.8x optimistic on real models; the calibrated one should be of the
    // right order. A factor of 4 either way leaves room for a busy machine.
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer the calibration's probes run the project's own, instrumented loops (several
    // times slower) while the convolutions run in oneDNN, which is not instrumented: the model is then
    // pessimistic by the instrumentation's factor (4.7 measured on an idle machine), not by a fault of
    // its own; the release build holds the factor of 4.
    constexpr double kHigh = 8.0;
#else
    constexpr double kHigh = 4.0;
#endif
    QVERIFY2(ratio > 0.25 && ratio < kHigh, qPrintable(QString::number(ratio)));
  }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "tst_calibration.moc"
