// The GPU on the this-machine platform (core/profile/calibration.h) without a GPU: a fake accelerator
// backend whose one device "gpu" (kind "gpu") runs the CPU backend's core0 kernels, reports their wall time
// as its device time and fixed numbers as its facts. Checked: the GPU's calibration per op class is fitted
// from its kernels, the platform gets a device of kind Gpu with the facts' bandwidth, peak and capacity
// and links to the host at the facts' copy rates, the cache holds it (a second start measures nothing), a
// failing GPU is left out with a note and measured again at the next start, and without a GPU backend the
// platform is as before. No timing is asserted.

#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "platform/platform.h"
#include "profile/calibration.h"
#include "support/files.h"

using namespace partex;

namespace {

std::atomic<int> gFactsCalls{0};      ///< deviceFacts() calls of every fake.
std::atomic<int> gPrepares{0};        ///< Kernels the fakes prepared.
std::atomic<bool> gFactsFail{false};  ///< The fakes' deviceFacts() fail (a GPU whose measurement fails).
/// The fakes refuse LRN (supports), cannot prepare Transpose and fail to run Slice.
std::atomic<bool> gPartial{false};

constexpr int64_t kFakeMemory = int64_t(8) << 30;

/// A kernel of the fake GPU: the CPU kernel on core0; its "device time" is the wall time of its run.
class FakeGpuKernel final : public Kernel {
 public:
  FakeGpuKernel(std::unique_ptr<Kernel> inner, bool fails) : inner_(std::move(inner)), fails_(fails) {}
  Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) override {
    if (fails_) return makeError("fake-gpu: launch failed");
    const auto t0 = std::chrono::steady_clock::now();
    Status st = inner_->run(inputs, outputs);
    lastUs_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }
  double lastDeviceUs() const override { return lastUs_; }

 private:
  std::unique_ptr<Kernel> inner_;
  bool fails_ = false;
  double lastUs_ = -1;
};

/// An accelerator backend with one device "gpu" of kind "gpu" that delegates to `cpu`'s core0.
class FakeGpuBackend final : public Backend {
 public:
  explicit FakeGpuBackend(const Backend& cpu) : cpu_(cpu) {}
  std::string name() const override { return "fake-gpu"; }
  std::string version() const override { return "fake-gpu 1 (core0's kernels)"; }
  std::vector<BackendDevice> devices() const override {
    // Its lane's CPU as the CUDA backend's (the kernels themselves pin to core0, which is only a test's
    // stand-in for a GPU).
    BackendDevice d{"gpu", "Fake GPU (core0's kernels)", 1, acceleratorHostCpu(), {}};
    d.kind = "gpu";
    d.memoryBytes = kFakeMemory;
    return {d};
  }
  bool supports(const Graph& g, OpId op, std::string* reason) const override {
    if (gPartial && g.nodes[static_cast<size_t>(op)].opType == "LRN") {
      if (reason) *reason = "no LRN kernel";
      return false;
    }
    return cpu_.supports(g, op, reason);
  }
  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& deviceId) const override {
    if (deviceId != "gpu") return makeError("fake-gpu: unknown device '", deviceId, "'");
    const std::string& type = g.nodes[static_cast<size_t>(op)].opType;
    if (gPartial && type == "Transpose") return makeError("fake-gpu: out of memory");
    ++gPrepares;
    auto k = cpu_.prepare(g, op, "core0");
    if (!k) return Error{k.message()};
    return std::unique_ptr<Kernel>(std::make_unique<FakeGpuKernel>(std::move(k).value(), gPartial && type == "Slice"));
  }
  Result<std::map<std::string, double>> deviceFacts(const std::string& deviceId) const override {
    ++gFactsCalls;
    if (deviceId != "gpu") return makeError("fake-gpu: unknown device '", deviceId, "'");
    if (gFactsFail) return makeError("fake-gpu: the measurement failed");
    return std::map<std::string, double>{{"d2d_gbs", 900},
                                         {"h2d_gbs", 25},
                                         {"d2h_gbs", 20},
                                         {"h2d_latency_us", 8},
                                         {"d2h_latency_us", 11},
                                         {"h2d_staged_gbs", 6},
                                         {"d2h_staged_gbs", 7},
                                         {"d2h_nhwc_gbs", 3},
                                         {"launch_us", 3},
                                         {"sync_us", 12},
                                         {"graph_node_us", 1.5},
                                         {"fp32_gflops", 20000},
                                         {"tf32_gflops", 60000},
                                         {"fp16_gflops", 80000},
                                         {"memory_bytes", static_cast<double>(kFakeMemory)},
                                         {"sm_count", 100},
                                         {"sm_clock_mhz", 1800}};
  }

 private:
  const Backend& cpu_;
};

/// The CPU backend alone (so that the checks hold on a machine with a real GPU too).
void registerCpu(BackendRegistry& r) {
  r.add(makeCpuBackend());
}
/// The CPU backend and the fake GPU.
void registerCpuAndFake(BackendRegistry& r) {
  r.add(makeCpuBackend());
  r.add(std::make_unique<FakeGpuBackend>(*r.find("cpu")));
}

CalibrationOptions fastest() {
  CalibrationOptions o;
  o.warmup = 0;
  o.reps = 1;
  return o;
}

bool finitePositive(double v) {
  return v > 0 && std::isfinite(v);
}

const Device* device(const Platform& p, const std::string& id) {
  const DeviceId d = p.findDevice(id);
  return d < 0 ? nullptr : &p.devices[static_cast<size_t>(d)];
}

}  // namespace

class TestGpuPlatform : public QObject {
  Q_OBJECT

  BackendRegistry reg_;  ///< cpu and fake-gpu.
  const Backend* cpu_ = nullptr;
  const Backend* fake_ = nullptr;

 private slots:
  void initTestCase() {
    setThisMachineProvider({});
    registerCpuAndFake(reg_);
    cpu_ = reg_.find("cpu");
    fake_ = reg_.find("fake-gpu");
    QVERIFY(cpu_ && fake_);
  }
  void cleanupTestCase() { setThisMachineProvider({}); }
  void init() {
    gFactsFail = false;
    gPartial = false;
  }

  /// Which backend is the GPU's: the one with a device of kind "gpu"; the key names it.
  void found() {
    QCOMPARE(findGpuBackend(reg_), fake_);
    BackendRegistry cpuOnly;
    registerCpu(cpuOnly);
    QVERIFY(findGpuBackend(cpuOnly) == nullptr);
    const std::string key = calibrationKey(*cpu_, fake_);
    QVERIFY(key != calibrationKey(*cpu_));
    QVERIFY(key.rfind(calibrationKey(*cpu_), 0) == 0);  // The CPU's key, then the GPU's.
    QVERIFY2(key.find(fake_->version()) != std::string::npos, key.c_str());
  }

  /// The fit from the fake's kernels: facts copied, the fixed cost of every class above the round trip
  /// (sync_us), a bandwidth for the streaming classes and a peak for the computing ones.
  void calibrated() {
    const int prepares0 = gPrepares;
    auto c = calibrateGpuDevice(*fake_, fastest());
    QVERIFY2(c.isOk(), c.message().c_str());
    QVERIFY(gPrepares > prepares0);
    QCOMPARE(c->backend, std::string("fake-gpu"));
    QCOMPARE(c->device, std::string("gpu"));
    QCOMPARE(c->memoryBytes, kFakeMemory);
    QCOMPARE(c->fact("d2d_gbs"), 900.0);
    QCOMPARE(c->facts.size(), size_t(17));
    const ModeCalibration& m = c->mode;
    QCOMPARE(m.device, std::string("gpu"));
    QCOMPARE(m.executorUs, 12.0);
    QVERIFY(finitePositive(m.callUs));
    QVERIFY(finitePositive(m.weightBandwidthGBs));
    for (OpClass cls : {OpClass::Conv, OpClass::MatMul, OpClass::Elementwise, OpClass::Normalisation, OpClass::Pooling,
                        OpClass::DataMovement, OpClass::Reduction, OpClass::ShapeOnly}) {
      const std::string what = opClassName(cls);
      QVERIFY2(m.classes.count(cls), what.c_str());
      const CalibratedCost& k = m.classes.at(cls);
      QVERIFY2(k.launchUs > 12.0 && std::isfinite(k.launchUs), what.c_str());
      if (cls != OpClass::ShapeOnly && cls != OpClass::MatMul) QVERIFY2(finitePositive(k.bandwidthGBs), what.c_str());
    }
    // Plausible for core0's kernels: above 0.01 GFLOP/s, below 10 TFLOP/s.
    for (OpClass cls : {OpClass::Conv, OpClass::MatMul, OpClass::Elementwise}) {
      const double peak = m.classes.at(cls).peakGflops;
      QVERIFY2(peak > 0.01 && peak < 1e4, qPrintable(QString("%1: %2").arg(opClassName(cls)).arg(peak)));
    }
    for (const char* op : {"Add", "Transpose", "Resize", "Slice", "ConvTranspose"}) QVERIFY2(m.opTypes.count(op), op);
    // The thin convolution gives the conv class's reduction step: its time less the fixed cost over
    // its 2,304 multiply-accumulates per output.
    QVERIFY(finitePositive(m.classes.at(OpClass::Conv).stepUs));
    for (const auto& s : m.samples)
      if (s.name == "conv-reduction") {
        QCOMPARE(s.outputs, int64_t{256 * 14 * 14});
        QCOMPARE(s.macs, int64_t{256 * 14 * 14} * 2304);
        const double call = [&] {
          for (const auto& c : m.samples)
            if (c.name == "conv-call") return c.us;
          return 0.0;
        }();
        QVERIFY(std::abs(m.classes.at(OpClass::Conv).stepUs - std::max(s.us - call, 0.1 * s.us) / 2304) < 1e-9);
      }
    for (const char* name : {"conv-call", "conv-compute", "conv-reduction", "elementwise-memory", "weights"}) {
      bool seen = false;
      for (const auto& s : m.samples) seen = seen || (s.name == name && finitePositive(s.us));
      QVERIFY2(seen, name);
    }

    // Its JSON form round-trips inside the calibration file; a bad fact is an error naming it.
    MachineCalibration mc;
    mc.key = "k";
    mc.measuredAt = "2026-01-01T00:00:00Z";
    mc.seconds = 1;
    mc.serial = mc.parallel = m;
    mc.gpu = *c;
    const std::string json = calibrationToJson(mc);
    auto back = parseCalibration(json, "g.json");
    QVERIFY2(back.isOk(), back.message().c_str());
    QVERIFY(back->gpu.has_value());
    QCOMPARE(back->gpu->fact("h2d_latency_us"), 8.0);
    QCOMPARE(calibrationToJson(*back), json);
    std::string bad = json;
    const auto at = bad.find("\"sync_us\": ");
    QVERIFY(at != std::string::npos);
    bad.insert(at + 11, "-");
    auto refused = parseCalibration(bad, "bad.json");
    QVERIFY(!refused.isOk());
    QVERIFY2(refused.message().find("gpu.facts.sync_us") != std::string::npos, refused.message().c_str());
    QVERIFY(c->note.empty());
  }

  /// Probes the backend does not support, cannot prepare or fails to run are left out and named; the
  /// rest is fitted.
  void partial() {
    gPartial = true;
    auto c = calibrateGpuDevice(*fake_, fastest());
    QVERIFY2(c.isOk(), c.message().c_str());
    for (const char* what :
         {"normalisation-compute (LRN): not supported (no LRN kernel)",
          "Transpose (Transpose): fake-gpu: out of memory", "Slice (Slice): fake-gpu: launch failed"})
      QVERIFY2(c->note.find(what) != std::string::npos, c->note.c_str());
    QVERIFY(!c->mode.opTypes.count("Transpose") && !c->mode.opTypes.count("Slice"));
    QVERIFY(c->mode.classes.count(OpClass::Normalisation));
    QCOMPARE(c->mode.classes.at(OpClass::Normalisation).peakGflops, 0.0);
    QVERIFY(c->mode.opTypes.count("Resize"));
    MachineProbe probe;  // Any probe will do.
    probe.isa = "generic";
    probe.cores = 2;
    Platform p = thisMachineFromProbe(probe);
    MachineCalibration mc;
    mc.gpu = *c;
    applyCalibration(p, mc, CalibrationSource{});
    QVERIFY2(p.description.find("probes left out: normalisation-compute") != std::string::npos, p.description.c_str());
  }

  /// The platform with the fake GPU: a device of kind Gpu with the facts' numbers and the fitted ones,
  /// one-way links to the host at the copy rates (the cores reach it through the host), cached: a second
  /// start measures nothing.
  void platformWithGpu() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string cacheDir = dir.path().toStdString();
    installThisMachineCalibration(registerCpuAndFake, cacheDir);
    const int facts0 = gFactsCalls, prepares0 = gPrepares;
    auto p = loadPreset("this-machine");
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(gFactsCalls.load(), facts0 + 1);
    const Device* gpu = device(*p, "gpu");
    QVERIFY2(gpu, p->description.c_str());
    QCOMPARE(gpu->kind, DeviceKind::Gpu);
    QCOMPARE(gpu->name, std::string("Fake GPU (core0's kernels)"));
    QCOMPARE(gpu->memCapacityBytes, kFakeMemory);
    QCOMPARE(gpu->memBandwidthGBs, 900.0);
    QVERIFY(std::abs(gpu->defaultPeakGflops - 20000.0) < 1e-6);
    QCOMPARE(gpu->dtypeSpeedup.at(DType::Float16), 4.0);
    QVERIFY(gpu->launchOverheadUs > 12.0);
    QVERIFY(finitePositive(gpu->peakGflops.at(OpClass::Conv)));
    QVERIFY(finitePositive(gpu->bandwidthGBsByClass.at(OpClass::Elementwise)));
    QVERIFY(gpu->launchOverheadUsByClass.at(OpClass::Conv) > 12.0);
    QVERIFY(gpu->opTypeCosts.count("Add"));
    // Its runtime fuses epilogues; a wave is 4,096 outputs per SM (the fake has 100); the conv step.
    QCOMPARE(gpu->fusion, std::string("epilogues"));
    QCOMPARE(gpu->copies, std::string("inline"));  // its kernels make their own transfers
    QCOMPARE(gpu->waveOutputs, int64_t{409600});
    QVERIFY(finitePositive(gpu->reductionStepUsByClass.at(OpClass::Conv)));
    QVERIFY(device(*p, "core0")->fusion == "runtime" && device(*p, "core0")->reductionStepUsByClass.empty());
    // The CPU devices are calibrated as before.
    QVERIFY(!device(*p, "core0")->bandwidthGBsByClass.empty());
    // Links: host -> gpu at h2d, gpu -> host at d2h, latency h2d_latency_us; core0 through the host.
    const DeviceId g = p->findDevice("gpu"), host = p->hostId(), core0 = p->findDevice("core0");
    const Link* up = p->findLink(host, g);
    const Link* down = p->findLink(g, host);
    QVERIFY(up && down && up != down);
    // At the executor's staged rates, not the pinned ones. Back: the download alone (the GPU's lane makes
    // it), at the download's own fixed cost; the conversion into a channels-last host tensor is the
    // reader's: 1 / (1/3 - 1/7) = 5.25 GB/s.
    QCOMPARE(up->bandwidthGBs, 6.0);
    QCOMPARE(down->bandwidthGBs, 7.0);
    QCOMPARE(up->latencyUs, 8.0);
    QCOMPARE(down->latencyUs, 11.0);
    QCOMPARE(gpu->readerConvertGBs, 5.25);
    QVERIFY(!up->sharedMemory);
    QCOMPARE(p->transferUs(core0, g, 1000000), 8.0 + 1e6 / 6e3);
    QCOMPARE(p->transferUs(g, core0, 1000000), 11.0 + 1e6 / 7e3);
    // The GPU's lane is pinned to the last CPU: exclusive with the CPU devices that use that CPU (the
    // last core and cpu-parallel's team), not with the others.
    const int laneCpu = acceleratorHostCpu();
    QVERIFY(laneCpu >= 0);
    std::string laneCore;
    for (const auto& d : cpu_->devices())
      if (d.id.rfind("core", 0) == 0 && d.core == laneCpu) laneCore = d.id;
    QVERIFY2(!laneCore.empty(), "no core device on the GPU lane's CPU");
    QVERIFY(p->exclusive(g, p->findDevice(laneCore)));
    QVERIFY(p->exclusive(g, p->findDevice("cpu-parallel")));
    if (laneCore != "core0") {
      QVERIFY(!p->exclusive(g, core0));
      QVERIFY(!p->exclusive(g, p->findDevice("cpu-serial")));
    }
    QVERIFY2(p->description.find("GPU 'gpu'") != std::string::npos, p->description.c_str());
    QVERIFY2(p->description.find("measured by the fake-gpu backend") != std::string::npos, p->description.c_str());
    QVERIFY(p->description.find("Estimates: the other cores") != std::string::npos);
    // The platform's JSON form keeps it.
    auto back = parsePlatform(platformToJson(*p), "gpu.json");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(platformToJson(*back), platformToJson(*p));

    // The cache: one file, under the key naming the GPU, holding the GPU.
    const std::string file = calibrationCachePath(cacheDir, calibrationKey(*cpu_, fake_));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
    auto text = readFile(file);
    QVERIFY2(text.isOk(), file.c_str());
    auto cached = parseCalibration(*text, file);
    QVERIFY2(cached.isOk(), cached.message().c_str());
    QVERIFY(cached->gpu.has_value() && cached->probe.has_value());
    QCOMPARE(cached->key, calibrationKey(*cpu_, fake_));

    // A second start (the provider reinstalled stands for a new process): nothing measured.
    const int64_t probes = machineProbeRuns();
    const int facts1 = gFactsCalls, prepares1 = gPrepares;
    QVERIFY(prepares1 > prepares0);
    installThisMachineCalibration(registerCpuAndFake, cacheDir);
    auto warm = loadPreset("this-machine");
    QVERIFY2(warm.isOk(), warm.message().c_str());
    QCOMPARE(machineProbeRuns(), probes);
    QCOMPARE(gFactsCalls.load(), facts1);
    QCOMPARE(gPrepares.load(), prepares1);
    QVERIFY2(warm->description.find("read from") != std::string::npos, warm->description.c_str());
    const Device* warmGpu = device(*warm, "gpu");
    QVERIFY(warmGpu);
    QVERIFY(warmGpu->peakGflops == gpu->peakGflops);
    QVERIFY(warmGpu->bandwidthGBsByClass == gpu->bandwidthGBsByClass);
    QCOMPARE(warm->links.size(), p->links.size());
    QCOMPARE(warm->exclusiveGroups.size(), p->exclusiveGroups.size());
    QVERIFY(warm->exclusive(warm->findDevice("gpu"), warm->findDevice("cpu-parallel")));
    setThisMachineProvider({});
  }

  /// A GPU whose measurement fails is left out with a note, the CPU calibrated and cached; the next start
  /// measures only the GPU and adds it to the file.
  void failingGpu() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string cacheDir = dir.path().toStdString();
    gFactsFail = true;
    installThisMachineCalibration(registerCpuAndFake, cacheDir);
    auto p = loadPreset("this-machine");
    QVERIFY2(p.isOk(), p.message().c_str());
    QVERIFY(!device(*p, "gpu"));
    QVERIFY2(p->description.find("A GPU was found but not measured") != std::string::npos, p->description.c_str());
    QVERIFY(p->description.find("Calibrated on the real kernels") != std::string::npos);
    const std::string file = calibrationCachePath(cacheDir, calibrationKey(*cpu_, fake_));
    auto first = parseCalibration(*readFile(file), file);
    QVERIFY2(first.isOk(), first.message().c_str());
    QVERIFY(!first->gpu.has_value());

    gFactsFail = false;
    const int64_t probes = machineProbeRuns();
    CalibrationSource src;
    auto again = loadOrMeasureThisMachine(*cpu_, cacheDir, &src, fastest(), fake_);
    QVERIFY2(again.isOk(), again.message().c_str());
    QCOMPARE(machineProbeRuns(), probes);  // Probe and CPU from the file, the GPU measured.
    QVERIFY(src.fromCache && src.probeFromCache);
    QCOMPARE(again->measuredAt, first->measuredAt);
    QVERIFY(again->gpu.has_value());
    QVERIFY2(src.note.find("the GPU was not cached") != std::string::npos, src.note.c_str());
    auto rewritten = parseCalibration(*readFile(file), file);
    QVERIFY2(rewritten.isOk() && rewritten->gpu.has_value(), file.c_str());
    setThisMachineProvider({});
  }

  /// Without a GPU backend the platform is as before: the CPU devices only, no GPU in the description.
  void withoutGpu() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    installThisMachineCalibration(registerCpu, dir.path().toStdString());
    auto p = loadPreset("this-machine");
    QVERIFY2(p.isOk(), p.message().c_str());
    QVERIFY(!device(*p, "gpu"));
    for (const Device& d : p->devices) QCOMPARE(d.kind, DeviceKind::Cpu);
    QCOMPARE(p->links.size(), p->devices.size() - 1);
    for (const Link& l : p->links) QVERIFY(l.sharedMemory);
    QVERIFY(p->description.find("GPU") == std::string::npos);
    const std::string file = calibrationCachePath(dir.path().toStdString(), calibrationKey(*cpu_));
    auto cached = parseCalibration(*readFile(file), file);
    QVERIFY2(cached.isOk(), cached.message().c_str());
    QVERIFY(!cached->gpu.has_value());
    // The platform built from the same probe without the calibration has the same devices.
    const Platform plain = thisMachineFromProbe(*cached->probe);
    QCOMPARE(p->devices.size(), plain.devices.size());
    for (size_t i = 0; i < plain.devices.size(); ++i) QCOMPARE(p->devices[i].id, plain.devices[i].id);
    setThisMachineProvider({});
  }
};

QTEST_GUILESS_MAIN(TestGpuPlatform)
#include "tst_gpu_platform.moc"
