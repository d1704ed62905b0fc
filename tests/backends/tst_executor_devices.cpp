// A plan across a CPU device and an accelerator, executed through the combined backend as a CPU+GPU plan
// is (issue 25, item 4), without a GPU: a fake accelerator "acc" whose kernels compute with the CPU
// backend's but keep their outputs in "device memory" of their own and count every copy between that
// memory and the host. The executor must hand tensors between the accelerator's kernels in its memory
// (Kernel::linkInput) and have each of them copy back exactly the outputs the host reads (a consumer on
// the CPU, a model output): host copies per run = the tensors the plan moves from acc to the CPU plus the
// model outputs acc produces; uploads = the activations it moves from the CPU to acc. Outputs must equal
// the single-device reference's, and every upload row-major (the CPU's kernels write so what an
// accelerator reads). An accelerator whose lane is pinned to a CPU (as the CUDA backend's, to
// acceleratorHostCpu()) runs every kernel on that CPU, beside the CPU devices that share it.

#include <QtTest>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "cpu/cpu_backend.h"
#include "gen/generator.h"
#include "graphrun.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "profile/profiler.h"
#include "sim/plan.h"

using namespace partex;

namespace {

std::atomic<int> gHostCopies{0}, gUploads{0}, gRuns{0};
std::atomic<int> gChannelsLastUploads{0};  ///< uploads of a host tensor that is not row-major
std::atomic<int> gLaneCpu{-1};      ///< The CPU the accelerator's kernels must run on (-1: any).
std::atomic<int> gOffLaneRuns{0};   ///< Kernel runs on another CPU than gLaneCpu.
float gRoundOff = 0;                ///< The accelerator's float32 host copies are scaled by 1 + gRoundOff.

/// A kernel of the fake accelerator: the CPU backend's kernel, with outputs kept in `dev_`.
class AccKernel final : public Kernel {
 public:
  AccKernel(std::unique_ptr<Kernel> inner, const Graph& g, std::vector<ValueId> inputs)
      : inner_(std::move(inner)), g_(g), inputs_(std::move(inputs)) {}
  Status run(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    ++gRuns;
    if (gLaneCpu >= 0 && sched_getcpu() != gLaneCpu) ++gOffLaneRuns;
    std::vector<const Tensor*> eff = in;
    for (size_t i = 0; i < in.size(); ++i) {
      auto it = links_.find(i);
      if (it != links_.end()) {
        eff[i] = &it->second.first->dev_[it->second.second];
        if (eff[i]->empty()) return makeError("linked input ", std::to_string(i), " read before its producer ran");
      } else if (in[i] && inputs_[i] >= 0 && !g_.values[static_cast<size_t>(inputs_[i])].isWeight) {
        ++gUploads;
        if (in[i]->nhwc()) ++gChannelsLastUploads;
      }
    }
    if (auto st = inner_->run(eff, dev_); !st) return st;
    out.resize(dev_.size());
    for (size_t k = 0; k < dev_.size(); ++k) {
      if (k < host_.size() && !host_[k]) {
        out[k] = Tensor();  // the host copy is not written: a consumer that reads it would fail
        continue;
      }
      Tensor plain;
      if (auto st = dev_[k].toPlain(plain); !st) return st;
      if (auto st = out[k].copyFrom(plain); !st) return st;
      if (gRoundOff != 0 && out[k].dtype() == DType::Float32)
        for (int64_t e = 0; e < out[k].numElements(); ++e) static_cast<float*>(out[k].raw())[e] *= 1.0f + gRoundOff;
      ++gHostCopies;
    }
    return {};
  }
  bool linkInput(size_t i, Kernel& producer, size_t k) override {
    auto* p = dynamic_cast<AccKernel*>(&producer);
    if (!p) return false;
    links_[i] = {p, k};
    return true;
  }
  void setHostOutput(size_t i, bool needed) override {
    if (host_.size() <= i) host_.resize(i + 1, true);
    host_[i] = needed;
  }
  /// The device time of a run, as a GPU's events give it: a fixed 42 us, far from the wall time.
  double lastDeviceUs() const override { return kDeviceUs; }
  static constexpr double kDeviceUs = 42.0;

 private:
  std::unique_ptr<Kernel> inner_;
  const Graph& g_;
  std::vector<ValueId> inputs_;
  std::vector<Tensor> dev_;
  std::map<size_t, std::pair<AccKernel*, size_t>> links_;
  std::vector<bool> host_;
};

class AccBackend final : public Backend {
 public:
  explicit AccBackend(const Backend& cpu, int core = -1) : cpu_(cpu), core_(core) {}
  std::string name() const override { return "acc"; }
  std::string version() const override { return "fake accelerator 1"; }
  std::vector<BackendDevice> devices() const override {
    BackendDevice d{"acc", "fake accelerator", 1, core_, {}};
    d.kind = "gpu";
    return {d};
  }
  bool supports(const Graph& g, OpId op, std::string* reason) const override { return cpu_.supports(g, op, reason); }
  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& dev) const override {
    if (dev != "acc") return makeError("acc: unknown device ", dev);
    auto k = cpu_.prepare(g, op, "cpu-serial");
    if (!k) return k;
    return std::unique_ptr<Kernel>(std::make_unique<AccKernel>(std::move(*k), g, g.nodes[static_cast<size_t>(op)].inputs));
  }

 private:
  const Backend& cpu_;
  int core_;
};

/// ResNet-18 at 32x32 with 10 classes: about 70 operators, quick on a CPU.
GenSpec smallResnet() {
  GenSpec spec;
  spec.kind = "resnet18";
  spec.imageSize = 32;
  spec.numClasses = 10;
  return spec;
}

/// Options of one timed run, none discarded whatever the machine's load.
ExecOptions singleRunOptions() {
  ExecOptions o;
  o.warmup = 0;
  o.reps = 1;
  o.maxDiscarded = 0;
  o.minCpuShare = 0;
  return o;
}

Platform twoDevices() {
  Platform p;
  p.name = "core0+acc";
  p.host = "core0";
  Device c;
  c.id = "core0";
  c.name = "CPU core";
  c.kind = DeviceKind::Cpu;
  Device a;
  a.id = "acc";
  a.name = "accelerator";
  a.kind = DeviceKind::Gpu;
  p.devices = {c, a};
  Link l;
  l.from = "core0";
  l.to = "acc";
  l.bandwidthGBs = 10;
  l.latencyUs = 5;
  p.links = {l};
  return p;
}

/// A per-operator profile of the small ResNet on the CPU backend combined with the fake accelerator:
/// the options to adjust, then run().
struct AccProfile {
  /// `accCore`: the CPU of the accelerator's lane (AccBackend), -1 none.
  explicit AccProfile(int accCore = -1) : acc(*cpu, accCore) {}
  Result<Graph> g = test::generatedGraph(smallResnet());
  std::unique_ptr<Backend> cpu = makeCpuBackend();
  AccBackend acc;
  std::unique_ptr<Backend> both = makeCombinedBackend({cpu.get(), &acc});
  ProfilerOptions o = [] {
    ProfilerOptions x;
    x.method = ProfilerOptions::Method::PerOperator;
    x.warmup = 0;
    x.reps = 1;
    return x;
  }();
  Result<Profile> run() { return profileModel(*g, *both, o); }
};

/// "" when no transfer of `p` has the accelerator at an end and one goes `from` -> `to`; else why not.
std::string hostTransfersOnly(const Profile& p, const std::string& from, const std::string& to) {
  bool found = false;
  for (const auto& t : p.transfers) {
    if (t.from == "acc" || t.to == "acc") return t.from + " -> " + t.to + ": the accelerator at an end";
    found = found || (t.from == from && t.to == to);
  }
  return found ? "" : "no transfer " + from + " -> " + to;
}

}  // namespace

class TestExecutorDevices : public QObject {
  Q_OBJECT
 private slots:
  void combinedBackendRoutes() {
    auto cpu = makeCpuBackend();
    AccBackend acc(*cpu);
    auto both = makeCombinedBackend({cpu.get(), &acc});
    QCOMPARE(both->name(), std::string("cpu+acc"));
    const auto devs = both->devices();
    QVERIFY(test::hasDevice(*both, "core0"));
    QVERIFY(test::hasDevice(*both, "acc"));
    QCOMPARE(static_cast<int>(devs.size()), static_cast<int>(cpu->devices().size()) + 1);
    QVERIFY(both->version().find("fake accelerator 1") != std::string::npos);
    Graph g = test::oneNodeGraph("Relu", {{DType::Float32, {2, 3}}});
    QVERIFY(!both->prepare(g, 0, "npu").isOk());
    auto k = both->prepare(g, 0, "acc");
    QVERIFY2(k.isOk(), k.message().c_str());
    QVERIFY(dynamic_cast<AccKernel*>(k->get()) != nullptr);
    // The registry's "auto" is the one backend when there is one.
    BackendRegistry reg;
    reg.add(makeCpuBackend());
    QCOMPARE(reg.find("auto")->name(), std::string("cpu"));
  }

  /// A per-operator profile of an accelerator takes its kernels' own device times, not the wall time
  /// of run() (which copies inputs in and outputs back); the CPU's stay wall times.
  void perOperatorProfileUsesDeviceTime() {
    AccProfile f;
    QVERIFY2(f.g.isOk(), f.g.message().c_str());
    f.o.devices = {"acc", "core0"};
    f.o.reps = 2;
    auto p = f.run();
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(p->devices.size(), size_t{2});
    for (const auto& d : p->devices) {
      QVERIFY(!d.ops.empty());
      int fixed = 0;
      for (const auto& op : d.ops) fixed += op.time.medianUs == AccKernel::kDeviceUs;
      if (d.id == "acc") QCOMPARE(fixed, static_cast<int>(d.ops.size()));
      else QVERIFY(fixed < static_cast<int>(d.ops.size()));
    }
  }

  /// Transfers the profiler times are copies between the host's CPUs; a pair with an accelerator is left
  /// to the backend's calibration (its kernels copy through their own staging path).
  void profiledTransfersAreHostCopies() {
    AccProfile f;
    QVERIFY2(f.g.isOk(), f.g.message().c_str());
    f.o.devices = {"acc", "core0", "cpu-serial"};
    f.o.transfers = true;
    f.o.transferSizes = {4096};
    auto p = f.run();
    QVERIFY2(p.isOk(), p.message().c_str());
    const std::string why = hostTransfersOnly(*p, "core0", "cpu-serial");
    QVERIFY2(why.empty(), why.c_str());
  }

  /// The in-context profile measures hand-overs between CPUs only: not between a GPU and a CPU device,
  /// even when the GPU's lane has a CPU of its own (its transfers are the platform's calibrated links).
  void handoversLeaveTheGpuOut() {
    int core1 = -1;
    for (const auto& d : makeCpuBackend()->devices())
      if (d.id == "core1") core1 = d.core;
    if (core1 < 0) QSKIP("this machine has a single CPU: no hand-over between two CPUs to measure");
    AccProfile f(core1);
    QVERIFY2(f.g.isOk(), f.g.message().c_str());
    f.o.method = ProfilerOptions::Method::InContext;
    f.o.devices = {"acc", "core0", "core1"};
    auto p = f.run();
    QVERIFY2(p.isOk(), p.message().c_str());
    const std::string why = hostTransfersOnly(*p, "core0", "core1");
    QVERIFY2(why.empty(), why.c_str());
  }

  /// A GPU's plan warms up for kGpuWarmupMs at least (its clocks ramp up from idle), not one run.
  void gpuWarmsUpLonger() {
    Graph g = test::oneNodeGraph("Relu", {{DType::Float32, {2, 3}}});
    auto cpu = makeCpuBackend();
    AccBackend accB(*cpu);
    auto both = makeCombinedBackend({cpu.get(), &accB});
    ExecOptions o;
    o.warmup = 1;
    o.reps = 1;
    o.checkOutputs = false;
    const int before = gRuns;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = executeOnDevice(g, *both, "acc", {0}, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(ms >= kGpuWarmupMs, qPrintable(QString::number(ms)));
    QVERIFY2(gRuns - before > 3, qPrintable(QString::number(gRuns - before)));  // 1 + 1 asked, many more run
  }

  /// A plan that runs operators on a GPU is checked against the CPU reference at 1e-3 (its float32
  /// rounds differently), a CPU-only plan at ExecOptions::rtol.
  void gpuPlansAreCheckedAtTheGpusTolerance() {
    auto g = test::generatedGraph(smallResnet());
    QVERIFY2(g.isOk(), g.message().c_str());
    auto t = buildCostTable(*g, characteriseAll(*g), twoDevices());
    QVERIFY2(t.isOk(), t.message().c_str());
    const auto topo = t->topoOrder();
    Plan plan;
    plan.algorithm = "test";
    plan.device.assign(topo.size(), 1);  // everything on acc
    plan.order = {{}, topo};
    auto cpu = makeCpuBackend();
    AccBackend accB(*cpu);
    auto both = makeCombinedBackend({cpu.get(), &accB});
    ExecOptions o = singleRunOptions();
    struct Reset {
      ~Reset() { gRoundOff = 0; }
    } reset;
    for (float off : {5e-4f, 3e-3f}) {
      gRoundOff = off;
      auto r = executePlan(*g, *both, *t, plan, o);
      QVERIFY2(r.isOk(), r.message().c_str());
      QVERIFY(r->outputsChecked);
      QCOMPARE(r->outputsMatch, off < 1e-3f);  // 5e-4 passes (it would fail at 1e-4), 3e-3 does not
      QVERIFY(r->maxRelDiff > 0.5 * off);
    }
  }

  void deviceResidentHandOver_data() {
    QTest::addColumn<int>("split");
    QTest::newRow("first half on acc") << 0;
    QTest::newRow("alternating blocks") << 1;
    QTest::newRow("everything on acc") << 2;
  }
  void deviceResidentHandOver() {
    QFETCH(int, split);
    auto g = test::generatedGraph(smallResnet());
    QVERIFY2(g.isOk(), g.message().c_str());
    auto t = buildCostTable(*g, characteriseAll(*g), twoDevices());
    QVERIFY2(t.isOk(), t.message().c_str());
    const auto topo = t->topoOrder();
    const DeviceId core0 = 0, acc = 1;
    QCOMPARE(t->deviceIds[static_cast<size_t>(acc)], std::string("acc"));
    Plan plan;
    plan.algorithm = "test";
    plan.device.assign(topo.size(), core0);
    plan.order.assign(2, {});
    for (size_t i = 0; i < topo.size(); ++i) {
      DeviceId d = core0;
      if (split == 0) d = i < topo.size() / 2 ? acc : core0;
      if (split == 1) d = (i / 7) % 2 ? acc : core0;
      if (split == 2) d = acc;
      plan.device[static_cast<size_t>(topo[i])] = d;
      plan.order[static_cast<size_t>(d)].push_back(topo[i]);
    }
    // Expected copies per run, from the graph and the placement.
    int expectHost = 0, expectUp = 0;
    for (size_t v = 0; v < g->values.size(); ++v) {
      const Value& val = g->values[v];
      const bool onAcc = val.producer >= 0 && plan.device[static_cast<size_t>(val.producer)] == acc;
      bool cpuReads = false;
      std::set<OpId> accReaders;
      for (OpId c : val.consumers) {
        if (plan.device[static_cast<size_t>(c)] == acc) accReaders.insert(c);
        else cpuReads = true;
      }
      if (onAcc && (cpuReads || val.isGraphOutput)) ++expectHost;
      if (!onAcc && !val.isWeight)
        for (OpId c : accReaders)
          for (ValueId in : g->nodes[static_cast<size_t>(c)].inputs) expectUp += in == static_cast<ValueId>(v);
    }
    auto cpu = makeCpuBackend();
    AccBackend accB(*cpu);
    auto both = makeCombinedBackend({cpu.get(), &accB});
    ExecOptions o = singleRunOptions();
    gHostCopies = 0, gUploads = 0, gRuns = 0, gChannelsLastUploads = 0;
    auto r = executePlan(*g, *both, *t, plan, o);
    QVERIFY2(r.isOk(), r.message().c_str());
    QVERIFY(r->outputsChecked);
    QVERIFY2(r->outputsMatch, r->mismatch.c_str());
    int accOps = 0;
    for (DeviceId d : plan.device) accOps += d == acc;
    QVERIFY(accOps > 0);
    QCOMPARE(gRuns.load() % accOps, 0);
    const int runs = gRuns.load() / accOps;
    QVERIFY(runs >= 1);
    QCOMPARE(gHostCopies.load(), expectHost * runs);
    QCOMPARE(gUploads.load(), expectUp * runs);
    // The CPU's kernels write row-major what the accelerator reads (Kernel::writeRowMajor): its lane
    // never transposes a channels-last tensor on the way in.
    QCOMPARE(gChannelsLastUploads.load(), 0);
    if (split == 2) QCOMPARE(expectHost, static_cast<int>(g->outputs.size()));
    qInfo("%d operators on acc; per run %d copies back, %d uploads", accOps, expectHost, expectUp);
  }

  /// The accelerator's lane pinned to the last CPU, as the CUDA backend's: its kernels run there, and a
  /// plan that alternates it with cpu-parallel (whose team uses that CPU) and the core of that CPU runs
  /// to the end with the reference's outputs (the lane is shared, not doubled).
  void pinnedLane() {
    const int laneCpu = acceleratorHostCpu();
    QVERIFY(laneCpu >= 0);
    auto cpu = makeCpuBackend();
    std::string laneCore;
    for (const auto& d : cpu->devices())
      if (d.id.rfind("core", 0) == 0 && d.core == laneCpu) laneCore = d.id;
    QVERIFY2(!laneCore.empty(), "no core device on the last CPU");
    auto g = test::generatedGraph(smallResnet());
    QVERIFY2(g.isOk(), g.message().c_str());
    Platform pf = twoDevices();
    Device par = pf.devices[0], lc = pf.devices[0];
    par.id = "cpu-parallel";
    lc.id = laneCore;
    if (laneCore != "core0") pf.devices.push_back(lc);
    pf.devices.push_back(par);
    for (const auto& d : pf.devices)
      if (d.id != "core0" && d.id != "acc") {
        Link l = pf.links[0];
        l.to = d.id;
        l.sharedMemory = true;
        pf.links.push_back(l);
      }
    auto t = buildCostTable(*g, characteriseAll(*g), pf);
    QVERIFY2(t.isOk(), t.message().c_str());
    std::vector<DeviceId> cycle;
    for (const char* id : {"acc", "cpu-parallel", laneCore.c_str(), "acc", "core0"})
      cycle.push_back(static_cast<DeviceId>(std::find(t->deviceIds.begin(), t->deviceIds.end(), id) - t->deviceIds.begin()));
    const auto topo = t->topoOrder();
    Plan plan;
    plan.algorithm = "test";
    plan.device.assign(topo.size(), 0);
    plan.order.assign(t->deviceIds.size(), {});
    for (size_t i = 0; i < topo.size(); ++i) {
      const DeviceId d = cycle[(i / 5) % cycle.size()];
      plan.device[static_cast<size_t>(topo[i])] = d;
      plan.order[static_cast<size_t>(d)].push_back(topo[i]);
    }
    AccBackend accB(*cpu, laneCpu);
    auto both = makeCombinedBackend({cpu.get(), &accB});
    ExecOptions o;
    o.warmup = 0;
    o.reps = 2;
    o.maxDiscarded = 0;
    o.minCpuShare = 0;
    gRuns = 0, gOffLaneRuns = 0;
    gLaneCpu = laneCpu;
    auto r = executePlan(*g, *both, *t, plan, o);
    gLaneCpu = -1;
    QVERIFY2(r.isOk(), r.message().c_str());
    QVERIFY2(r->outputsMatch, r->mismatch.c_str());
    QVERIFY(gRuns.load() > 0);
    QCOMPARE(gOffLaneRuns.load(), 0);
  }
};

QTEST_GUILESS_MAIN(TestExecutorDevices)
#include "tst_executor_devices.moc"
