#pragma once
/// \file A backend for the profiler and executor tests that needs no real kernels: elementwise Relu,
/// Sigmoid, Neg and Add on float32, each call sleeping a little so that timings are non-zero. Device
/// "dev-bad" computes slightly wrong results (to see the output check fail). Also a small diamond
/// graph and a platform of three devices sharing memory.
///
///   x --> stem (Relu) --> left1 (Sigmoid) --> left2 (Relu) --> join (Add) --> y
///                    \--> right1 (Sigmoid) -> right2 (Neg) --^

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "ir/graph.h"
#include "platform/platform.h"

namespace partex::test {

/// Output buffers the fake kernels had to allocate (a call whose outputs came in without storage of
/// the right size): tells whether a caller keeps its output tensors from run to run.
inline std::atomic<int> gFakeOutputAllocations{0};
/// Threads the fake kernels ran on (recorded when gFakeRecordThreads is set).
inline std::atomic<bool> gFakeRecordThreads{false};
inline std::mutex gFakeThreadsMu;
inline std::set<std::thread::id> gFakeThreads;

class FakeKernel final : public Kernel {
 public:
  FakeKernel(std::string op, bool bad, int sleepUs) : op_(std::move(op)), bad_(bad), sleepUs_(sleepUs) {}
  Status run(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    if (in.empty() || !in[0] || in[0]->dtype() != DType::Float32) return makeError(op_, ": float32 input expected");
    out.resize(1);
    if (!out[0].raw() || out[0].bytes() != in[0]->bytes()) gFakeOutputAllocations.fetch_add(1);
    if (gFakeRecordThreads.load()) {
      std::lock_guard lk(gFakeThreadsMu);
      gFakeThreads.insert(std::this_thread::get_id());
    }
    if (auto st = out[0].ensure(DType::Float32, in[0]->shape()); !st) return st;
    const float* a = in[0]->data<float>();
    const float* b = in.size() > 1 && in[1] ? in[1]->data<float>() : nullptr;
    float* y = out[0].data<float>();
    for (int64_t i = 0; i < in[0]->numElements(); ++i) {
      float v = a[i];
      if (op_ == "Relu") v = v > 0 ? v : 0;
      if (op_ == "Sigmoid") v = 1.0f / (1.0f + std::exp(-v));
      if (op_ == "Neg") v = -v;
      if (op_ == "Add") v = v + (b ? b[i] : 0.0f);
      y[i] = bad_ ? v + 0.01f : v;
    }
    // Busy for sleepUs_ (not asleep: a real kernel keeps its CPU, and the executor's CPU-share check
    // would take a sleeping kernel for a disturbed run).
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(sleepUs_);
    while (sleepUs_ > 0 && std::chrono::steady_clock::now() < until) {
    }
    // Negative: off the CPU for -sleepUs_, as if another program held it (a disturbed run).
    if (sleepUs_ < 0) std::this_thread::sleep_for(std::chrono::microseconds(-sleepUs_));
    return Status::ok();
  }

 private:
  std::string op_;
  bool bad_;
  int sleepUs_;
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(int sleepUs = 200, std::string version = "fake-1")
      : sleepUs_(sleepUs), version_(std::move(version)) {}
  std::string name() const override { return "fake"; }
  std::string version() const override { return version_; }
  std::vector<BackendDevice> devices() const override {
    if (!devs.empty()) return devs;
    return {{"dev0", "fake device 0", 1, -1, {}}, {"dev1", "fake device 1", 1, -1, {}}, {"dev-bad", "wrong results", 1, -1, {}}};
  }
  /// Replaces the three unpinned default devices (for tests of the executor's lanes).
  std::vector<BackendDevice> devs;
  /// Per device: its kernels' time instead of the backend's (unequal devices).
  std::map<std::string, int> sleepOn;
  bool supports(const Graph& g, OpId op, std::string* reason) const override {
    const auto& t = g.nodes[static_cast<size_t>(op)].opType;
    if (t == "Relu" || t == "Sigmoid" || t == "Neg" || t == "Add") return true;
    if (reason) *reason = "fake backend has no " + t;
    return false;
  }
  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& dev) const override {
    std::string why;
    if (!supports(g, op, &why)) return Error{why};
    if (dev != "dev0" && dev != "dev1" && dev != "dev-bad") return makeError("no device '", dev, "'");
    return std::unique_ptr<Kernel>(
        std::make_unique<FakeKernel>(g.nodes[static_cast<size_t>(op)].opType, dev == "dev-bad",
                                     sleepOn.count(dev) ? sleepOn.at(dev) : sleepUs_));
  }

 private:
  int sleepUs_;
  std::string version_;
};

inline Graph diamondGraph(int64_t width = 256) {
  Graph g;
  g.name = "diamond";
  g.sourcePath = "diamond.onnx";
  g.graphSha256 = "d1a30d0000000000000000000000000000000000000000000000000000000000";
  auto value = [&](const std::string& name) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.shape = {1, width};
    v.shapeKnown = true;
    return g.addValue(v);
  };
  const ValueId x = value("x");
  g.values[static_cast<size_t>(x)].isGraphInput = true;
  g.inputs = {x};
  auto node = [&](const std::string& name, const std::string& type, std::vector<ValueId> ins) {
    Node n;
    n.name = name;
    n.opType = type;
    n.inputs = std::move(ins);
    const ValueId out = value(name + "_out");
    n.outputs = {out};
    g.addNode(n);
    return out;
  };
  const ValueId s = node("stem", "Relu", {x});
  const ValueId l1 = node("left1", "Sigmoid", {s});
  const ValueId l2 = node("left2", "Relu", {l1});
  const ValueId r1 = node("right1", "Sigmoid", {s});
  const ValueId r2 = node("right2", "Neg", {r1});
  const ValueId y = node("join", "Add", {l2, r2});
  g.values[static_cast<size_t>(y)].isGraphOutput = true;
  g.outputs = {y};
  g.rebuildIndex();
  return g;
}

/// dev0 (host), dev1 and dev-bad, sharing memory; `exclusive01` makes dev0 and dev1 modes of one resource.
inline Platform fakePlatform(bool exclusive01 = false) {
  Platform p;
  p.name = "fake";
  p.host = "dev0";
  for (const char* id : {"dev0", "dev1", "dev-bad"}) {
    Device d;
    d.id = id;
    d.name = id;
    d.defaultPeakGflops = 10;
    d.memBandwidthGBs = 10;
    d.launchOverheadUs = 200;
    p.devices.push_back(d);
  }
  for (const char* id : {"dev1", "dev-bad"}) {
    Link l;
    l.from = "dev0";
    l.to = id;
    l.sharedMemory = true;
    p.links.push_back(l);
  }
  if (exclusive01) p.exclusiveGroups.push_back({"one-resource", {"dev0", "dev1"}});
  return p;
}

inline CostTable fakeTable(const Graph& g, bool exclusive01 = false) {
  auto t = buildCostTable(g, characteriseAll(g), fakePlatform(exclusive01));
  return t.isOk() ? std::move(t).value() : CostTable{};
}

}  // namespace partex::test
