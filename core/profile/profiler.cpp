#include "profile/profiler.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "ir/fusion.h"
#include "profile/executor.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace {

using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

Error cancelledError() {
  return Error{"cancelled"};
}

/// Kernel inputs of `op` from a value table (nullptr for omitted inputs).
std::vector<const Tensor*> inputsOf(const Graph& g, OpId op, const std::vector<Tensor>& values) {
  std::vector<const Tensor*> ins;
  for (ValueId v : g.nodes[static_cast<size_t>(op)].inputs)
    ins.push_back(v >= 0 ? &values[static_cast<size_t>(v)] : nullptr);
  return ins;
}

/// Moves kernel outputs into the value table.
void storeOutputs(const Graph& g, OpId op, std::vector<Tensor>& outs, std::vector<Tensor>& values) {
  const auto& node = g.nodes[static_cast<size_t>(op)];
  for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k)
    if (node.outputs[k] >= 0) values[static_cast<size_t>(node.outputs[k])] = std::move(outs[k]);
}

/// A buffer with cache-line alignment, not zero-initialised by the allocator (first touch is explicit).
struct RawBuffer {
  explicit RawBuffer(size_t n) : size(n), p(static_cast<char*>(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64))) {}
  ~RawBuffer() { std::free(p); }
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  size_t size;
  char* p;
};

/// Runs fn on a fresh thread pinned to `core` and waits for it.
template <class Fn>
void onCore(int core, Fn fn) {
  std::thread th([&] {
    pinThisThread(core);
    fn();
  });
  th.join();
}

/// Runs fn on a thread pinned to the device's core, so that the kernels' own pinning moves nothing:
/// moving a thread onto a busy core costs a scheduler tick (4 ms on this VM) per kernel call.
Status onDevice(const BackendDevice& d, const std::function<Status()>& fn) {
  Status st;
  onCore(d.core, [&] { st = fn(); });
  return st;
}

/// One timed copy of `bytes` from a buffer last written on core `a` to one first touched on core `b`,
/// timed on b. Returns microseconds.
double timedCopy(RawBuffer& src, RawBuffer& dst, size_t bytes, int coreA, int coreB, int round) {
  onCore(coreA, [&] { std::memset(src.p, round & 0x7f, bytes); });
  double us = 0;
  onCore(coreB, [&] {
    auto t0 = Clock::now();
    std::memcpy(dst.p, src.p, bytes);
    us = usSince(t0);
  });
  return us;
}

/// Hand-over of a tensor of `bytes` from a lane on core `a` to a lane on core `b`, as the executor does
/// it: the producer writes the tensor and publishes it (an atomic store), the consumer waits for it
/// spinning and yielding (as a lane waits), then reads it. A sample is the time from the publication
/// to the end of the read, less the same read of a tensor the consumer wrote itself: the latency of
/// noticing the producer plus the cost of pulling the tensor from the other core's caches.
TimingStat measureHandover(int64_t bytes, int coreA, int coreB, int warmup, int reps) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 64)) / sizeof(float);
  std::vector<float> remote(n), local(n);
  std::atomic<int> round{-1};
  std::atomic<int> consumed{-1};
  Clock::time_point published;
  std::vector<double> samples;
  auto readAll = [](const std::vector<float>& v) {
    float acc = 0;
    for (float x : v) acc += x;
    return acc;
  };
  volatile float sink = 0;
  std::thread consumer([&] {
    pinThisThread(coreB);
    for (int r = 0; r < warmup + reps; ++r) {
      // The same read of a tensor this core wrote itself.
      for (size_t i = 0; i < n; ++i) local[i] = static_cast<float>(i + static_cast<size_t>(r));
      const auto l0 = Clock::now();
      sink = sink + readAll(local);
      const double localUs = usSince(l0);
      while (round.load(std::memory_order_acquire) != r) std::this_thread::yield();
      sink = sink + readAll(remote);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - published).count() - localUs;
      if (r >= warmup) samples.push_back(std::max(0.0, us));
      consumed.store(r, std::memory_order_release);
    }
  });
  std::thread producer([&] {
    pinThisThread(coreA);
    for (int r = 0; r < warmup + reps; ++r) {
      for (size_t i = 0; i < n; ++i) remote[i] = static_cast<float>(i ^ static_cast<size_t>(r));
      published = Clock::now();
      round.store(r, std::memory_order_release);
      while (consumed.load(std::memory_order_acquire) != r) std::this_thread::yield();
    }
  });
  producer.join();
  consumer.join();
  return summarise(samples);
}

/// Samples of transfers of `bytes` between two cores.
TimingStat measureTransfer(int64_t bytes, int coreA, int coreB, int warmup, int reps) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  RawBuffer src(n), dst(n);
  onCore(coreB, [&] { std::memset(dst.p, 0, n); });  // First touch of the destination on its core.
  std::vector<double> samples;
  for (int r = 0; r < warmup + reps; ++r) {
    const double us = timedCopy(src, dst, n, coreA, coreB, r);
    if (r >= warmup) samples.push_back(us);
  }
  return summarise(samples);
}

struct Ctx {
  const Graph& g;
  const Backend& b;
  const ProfilerOptions& o;
  ProfilerInfo& info;
  std::vector<BackendDevice> devices;  ///< The devices profiled, in the order asked.
  std::vector<Tensor> ref;             ///< Reference value of every tensor.
  int done = 0, total = 0;
  void step(const std::string& what) {
    ++done;
    if (o.progress) o.progress(done, total, what);
  }
};

/// The reference run: every tensor computed once, in topological order.
Status referenceRun(Ctx& c) {
  const Graph& g = c.g;
  c.ref.assign(g.values.size(), Tensor());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.producer >= 0) continue;
    if (!val.isWeight && !val.isGraphInput) continue;
    if (auto given = c.o.inputs.find(static_cast<ValueId>(v)); given != c.o.inputs.end()) {
      c.ref[v] = given->second;
      continue;
    }
    auto t = leafTensor(g, static_cast<ValueId>(v), c.o.seed + v);
    if (!t) return makeError(g.name, ": input '", val.name, "': ", t.message());
    c.ref[v] = std::move(t).value();
  }
  auto order = g.topologicalOrder();
  if (!order) return Error{order.message()};
  for (OpId op : *order) {
    if (c.o.cancelled()) return cancelledError();
    const Node& node = g.nodes[static_cast<size_t>(op)];
    std::string reasons;
    bool ran = false;
    for (const auto& d : c.devices) {
      std::string why;
      if (!c.b.supports(g, op, &why)) {
        reasons = why;
        break;
      }
      auto k = c.b.prepare(g, op, d.id);
      if (!k) {
        reasons += (reasons.empty() ? "" : "; ") + d.id + ": " + k.message();
        continue;
      }
      std::vector<Tensor> outs;
      auto st = (*k)->run(inputsOf(g, op, c.ref), outs);
      if (!st)
        return makeError(g.name, ": operator '", node.name, "' (", node.opType, ") on ", d.id, ": ", st.message());
      storeOutputs(g, op, outs, c.ref);
      ran = true;
      break;
    }
    if (!ran)
      return makeError(g.name, ": operator '", node.name, "' (", node.opType,
                       ") cannot run on the profiled devices: ", reasons);
  }
  return Status::ok();
}

/// Whether a transfer between `a` and `b` is a copy between two CPUs of the host, which measureTransfer
/// times. A pair with an accelerator (a GPU) is not: its kernels copy through the backend's own path
/// (staging buffers, DMA), which the backend's calibration measures (the platform's links to it), so
/// the profile leaves those links as calibrated.
bool hostCopyPair(const BackendDevice& a, const BackendDevice& b) {
  return a.kind != "gpu" && b.kind != "gpu";
}

/// Times one kernel on the reference inputs: warm-up, then reps.
Result<TimingStat> timeKernel(Ctx& c, Kernel& k, OpId op) {
  auto ins = inputsOf(c.g, op, c.ref);
  std::vector<Tensor> outs;
  std::vector<double> samples;
  for (int r = 0; r < c.o.warmup + c.o.reps; ++r) {
    auto t0 = Clock::now();
    auto st = k.run(ins, outs);
    // An accelerator's kernel times itself on the device (CUDA events): its run() also copies the
    // inputs in and the outputs back, which a plan's transfers cost, not the operator.
    const double us = k.lastDeviceUs() >= 0 ? k.lastDeviceUs() : usSince(t0);
    if (!st) return Error{st.message()};
    if (r >= c.o.warmup) samples.push_back(us);
  }
  c.info.measurements += c.o.reps;
  return summarise(samples);
}

/// Chains of consecutive operators: each next one has the previous as its only operator predecessor.
std::vector<std::vector<OpId>> chainGroups(const Graph& g, int maxGroup) {
  std::vector<std::vector<OpId>> groups;
  const auto n = static_cast<OpId>(g.nodes.size());
  std::vector<std::vector<OpId>> preds(static_cast<size_t>(n)), succs(static_cast<size_t>(n));
  for (OpId v = 0; v < n; ++v) {
    preds[static_cast<size_t>(v)] = g.predecessors(v);
    succs[static_cast<size_t>(v)] = g.successors(v);
  }
  for (OpId v = 0; v < n; ++v) {
    for (OpId s : succs[static_cast<size_t>(v)]) {
      if (preds[static_cast<size_t>(s)].size() != 1) continue;
      std::vector<OpId> chain{v, s};
      groups.push_back(chain);
      while (static_cast<int>(chain.size()) < maxGroup) {
        OpId next = kNone;
        for (OpId t : succs[static_cast<size_t>(chain.back())])
          if (preds[static_cast<size_t>(t)].size() == 1) {
            next = t;
            break;
          }
        if (next == kNone) break;
        chain.push_back(next);
        groups.push_back(chain);
      }
    }
  }
  return groups;
}

/// Times a group run back to back on one device: each member reads what the previous produced.
Result<TimingStat> timeGroup(Ctx& c, const std::vector<OpId>& group, std::vector<std::unique_ptr<Kernel>>& kernels) {
  const Graph& g = c.g;
  std::vector<double> samples;
  std::vector<std::vector<Tensor>> outs(group.size());
  std::map<ValueId, const Tensor*> local;
  for (int r = 0; r < c.o.warmup + c.o.reps; ++r) {
    local.clear();
    double deviceUs = 0;  // the kernels' own device times, summed; -1 once one has none
    auto t0 = Clock::now();
    for (size_t i = 0; i < group.size(); ++i) {
      const Node& node = g.nodes[static_cast<size_t>(group[i])];
      std::vector<const Tensor*> ins;
      for (ValueId v : node.inputs) {
        if (v < 0) {
          ins.push_back(nullptr);
          continue;
        }
        auto it = local.find(v);
        ins.push_back(it != local.end() ? it->second : &c.ref[static_cast<size_t>(v)]);
      }
      auto st = kernels[i]->run(ins, outs[i]);
      if (!st) return Error{st.message()};
      deviceUs = deviceUs >= 0 && kernels[i]->lastDeviceUs() >= 0 ? deviceUs + kernels[i]->lastDeviceUs() : -1;
      for (size_t k = 0; k < node.outputs.size() && k < outs[i].size(); ++k)
        if (node.outputs[k] >= 0) local[node.outputs[k]] = &outs[i][k];
    }
    const double us = deviceUs >= 0 ? deviceUs : usSince(t0);
    if (r >= c.o.warmup) samples.push_back(us);
  }
  c.info.measurements += c.o.reps;
  return summarise(samples);
}

/// The fused kernel the runtime runs for `group` when only its operators are on one device, when one
/// kernel covers all of them (ir/fusion.h); empty otherwise.
std::optional<FusedGroup> runtimeGroupOf(const Graph& g, const std::vector<OpId>& group) {
  std::vector<int> placement(g.nodes.size(), 1);
  for (OpId v : group) placement[static_cast<size_t>(v)] = 0;
  for (const FusedGroup& fg : fusedGroups(g, placement))
    if (fg.ops == group) return fg;
  return std::nullopt;
}

/// Times the fused kernel of a group: the runtime's W(S,d).
Result<TimingStat> timeFusedGroup(Ctx& c, const FusedGroup& grp, Kernel& kernel) {
  std::vector<const Tensor*> ins;
  for (ValueId v : grp.inputs) ins.push_back(v < 0 ? nullptr : &c.ref[static_cast<size_t>(v)]);
  std::vector<Tensor> outs;
  std::vector<double> samples;
  for (int r = 0; r < c.o.warmup + c.o.reps; ++r) {
    auto t0 = Clock::now();
    if (auto st = kernel.run(ins, outs); !st) return Error{st.message()};
    const double us = kernel.lastDeviceUs() >= 0 ? kernel.lastDeviceUs() : usSince(t0);
    if (r >= c.o.warmup) samples.push_back(us);
  }
  c.info.measurements += c.o.reps;
  return summarise(samples);
}

std::vector<int64_t> defaultTransferSizes(const Graph& g) {
  int64_t largest = 0;
  for (const auto& v : g.values)
    if (v.producer >= 0) largest = std::max(largest, v.bytes());
  largest = std::clamp<int64_t>(largest, 1024, int64_t{64} << 20);
  std::vector<int64_t> sizes;
  for (int64_t s = 1024; s < largest; s *= 4) sizes.push_back(s);
  sizes.push_back(largest);
  return sizes;
}

Status profilePerOperator(Ctx& c, Profile& p) {
  const Graph& g = c.g;
  for (const auto& d : c.devices) {
    ProfileDevice& pd = p.device(d.id);
    auto st = onDevice(d, [&]() -> Status {
      pd.speedProbeUs = cpuSpeedProbeUs();
      for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
        if (c.o.cancelled()) return cancelledError();
        const Node& node = g.nodes[static_cast<size_t>(op)];
        c.step(node.name + " on " + d.id);
        std::string why;
        if (!c.b.supports(g, op, &why)) {
          c.info.skipped.push_back(node.name + "@" + d.id + ": " + why);
          continue;
        }
        if (runsAsAlias(g, op)) {  // the executor runs it as its input's tensor: no kernel, no time
          pd.ops.push_back(ProfileOp{node.name, node.opType, TimingStat{0, 0, 0, 0, c.o.reps}});
          continue;
        }
        auto k = c.b.prepare(g, op, d.id);
        if (!k) {
          c.info.skipped.push_back(node.name + "@" + d.id + ": " + k.message());
          continue;
        }
        // As the executor runs it: a Reshape that can view its input copies nothing (its input, the
        // reference run's value, outlives the timing).
        if (runsAsView(g, op)) (*k)->viewInput();
        auto st = timeKernel(c, **k, op);
        if (!st) return makeError(g.name, ": operator '", node.name, "' on ", d.id, ": ", st.message());
        pd.ops.push_back(ProfileOp{node.name, node.opType, *st});
      }
      return Status::ok();
    });
    if (!st) return st;
  }
  return Status::ok();
}

/// Whole-model runs: per device, the model runs all-on-d in topological order (repeated warmup + reps
/// times), each operator timed inside the run on the tensors the run itself produced, with the cache
/// state a real run leaves it (the in-context method, and the node costs of the minimal plan).
Status profileWholeModelRuns(Ctx& c, Profile& p, const std::vector<OpId>& order) {
  const Graph& g = c.g;
  for (const auto& d : c.devices) {
    if (c.o.cancelled()) return cancelledError();
    c.step("whole-model runs on " + d.id);
    bool all = order.size() == g.nodes.size();
    for (OpId op : order) all = all && c.b.supports(g, op, nullptr);
    if (all) {
      // Every operator runs there: measure with the executor itself (its lanes, waits and timing), so
      // that the profile is what a plan putting everything on this device executes in.
      ExecOptions eo;
      eo.warmup = c.o.warmup;
      eo.reps = c.o.reps;
      eo.seed = c.o.seed;
      eo.inputs = c.o.inputs;
      eo.checkOutputs = false;
      eo.cancel = c.o.cancel;
      auto r = executeOnDevice(g, c.b, d.id, order, eo);
      if (!r) {
        if (c.o.cancelled()) return cancelledError();
        return makeError(g.name, ": on ", d.id, ": ", r.message());
      }
      c.info.measurements += c.o.reps * static_cast<int>(order.size());
      c.info.disturbedRunsDiscarded += r->discardedRuns;
      for (const auto& note : r->notes) c.info.notes.push_back(d.id + ": " + note);
      ProfileDevice& pd = p.device(d.id);
      pd.speedProbeUs = r->deviceProbeUs.empty() ? 0.0 : r->deviceProbeUs.front();
      for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op)
        pd.ops.push_back(ProfileOp{g.nodes[static_cast<size_t>(op)].name, g.nodes[static_cast<size_t>(op)].opType,
                                   summarise(r->opSamplesUs[static_cast<size_t>(op)])});
      // The fused kernels the runtime ran: operators sharing a kernel, in graph order.
      std::map<OpId, std::vector<std::string>> fused;
      for (OpId op = 0; op < static_cast<OpId>(r->fusedInto.size()); ++op)
        if (r->fusedInto[static_cast<size_t>(op)] >= 0)
          fused[r->fusedInto[static_cast<size_t>(op)]].push_back(g.nodes[static_cast<size_t>(op)].name);
      for (auto& [last, names] : fused) pd.fused.push_back(std::move(names));
      continue;
    }
    // Some operators cannot run there: they are skipped and their outputs taken from the reference run.
    std::vector<std::unique_ptr<Kernel>> kernels(g.nodes.size());
    for (OpId op : order) {
      std::string why;
      if (!c.b.supports(g, op, &why)) {
        c.info.skipped.push_back(g.nodes[static_cast<size_t>(op)].name + "@" + d.id + ": " + why);
        continue;
      }
      auto k = c.b.prepare(g, op, d.id);
      if (!k) {
        c.info.skipped.push_back(g.nodes[static_cast<size_t>(op)].name + "@" + d.id + ": " + k.message());
        continue;
      }
      // As the executor runs it (every output here lives until the next run).
      if (runsAsView(g, op)) (*k)->viewInput();
      kernels[static_cast<size_t>(op)] = std::move(k).value();
    }
    std::vector<std::vector<double>> samples(g.nodes.size());
    // Every operator writes into its own output tensors, kept from run to run as an executor's arena
    // would: a fresh allocation per run would time the kernel's page faults, which no deployed runtime
    // (nor the executor) pays. Inputs point at the producers' outputs, or at the reference values for
    // leaves and skipped operators.
    std::vector<std::vector<Tensor>> outs(g.nodes.size());
    std::vector<const Tensor*> valuePtr(g.values.size());
    for (size_t v = 0; v < g.values.size(); ++v) valuePtr[v] = &c.ref[v];
    double probeUs = 0;
    auto runs = onDevice(d, [&]() -> Status {
      probeUs = cpuSpeedProbeUs();
      for (int r = 0; r < c.o.warmup + c.o.reps; ++r) {
        if (c.o.cancelled()) return cancelledError();
        for (OpId op : order) {
          auto& k = kernels[static_cast<size_t>(op)];
          if (!k) continue;
          const Node& node = g.nodes[static_cast<size_t>(op)];
          std::vector<const Tensor*> ins;
          ins.reserve(node.inputs.size());
          for (ValueId v : node.inputs) ins.push_back(v >= 0 ? valuePtr[static_cast<size_t>(v)] : nullptr);
          auto& o = outs[static_cast<size_t>(op)];
          auto t0 = Clock::now();
          auto st = k->run(ins, o);
          const double us = usSince(t0);
          if (!st) return makeError(g.name, ": operator '", node.name, "' on ", d.id, ": ", st.message());
          for (size_t j = 0; j < node.outputs.size() && j < o.size(); ++j)
            if (node.outputs[j] >= 0) valuePtr[static_cast<size_t>(node.outputs[j])] = &o[j];
          if (r >= c.o.warmup) samples[static_cast<size_t>(op)].push_back(us);
        }
      }
      return Status::ok();
    });
    if (!runs) return runs;
    c.info.measurements += c.o.reps * static_cast<int>(order.size());
    ProfileDevice& pd = p.device(d.id);
    pd.speedProbeUs = probeUs;
    for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op)
      if (kernels[static_cast<size_t>(op)])
        pd.ops.push_back(ProfileOp{g.nodes[static_cast<size_t>(op)].name, g.nodes[static_cast<size_t>(op)].opType,
                                   summarise(samples[static_cast<size_t>(op)])});
  }
  return Status::ok();
}

/// Hand-overs between the profiled devices that the executor runs on different CPUs' lanes (this
/// machine's CPUs share memory: tensors pass by pointer, and this is what that costs), at a few sizes
/// up to the model's largest tensor. One measurement per ordered pair of CPUs, shared by the device
/// pairs on them. Not between a GPU and a CPU device (hostCopyPair), although the GPU's lane has a CPU
/// of its own: such a transfer is a copy over PCIe, which the platform's links hold as calibrated.
/// (Issue 25, the H200 run of 2026-11-27: the profiled plans charged AlexNet's 600 KB input to the
/// GPU at the rate of a hand-over between two CPUs, 165 us against 64 calibrated.)
Status profileHandovers(Ctx& c, Profile& p) {
  std::vector<int64_t> sizes;
  int64_t largest = 0;
  for (const auto& v : c.g.values) largest = std::max(largest, v.bytes());
  for (int64_t b = 4096; b < largest && sizes.size() < 3; b *= 16) sizes.push_back(b);
  sizes.push_back(std::max<int64_t>(largest, 4096));
  std::map<std::pair<int, int>, std::vector<TransferSample>> byCores;
  for (const auto& a : c.devices)
    for (const auto& b : c.devices) {
      if (a.id == b.id || a.core < 0 || b.core < 0 || a.core == b.core || !hostCopyPair(a, b)) continue;
      auto key = std::make_pair(a.core, b.core);
      if (!byCores.count(key)) {
        if (c.o.cancelled()) return cancelledError();
        std::vector<TransferSample> samples;
        for (int64_t bytes : sizes)
          samples.push_back(TransferSample{bytes, measureHandover(bytes, a.core, b.core, c.o.warmup, c.o.reps)});
        byCores[key] = std::move(samples);
      }
      p.transfers.push_back(ProfileTransfer{a.id, b.id, byCores[key]});
    }
  return Status::ok();
}

/// Minimal plan: the whole-model runs give every node cost, one crossing run every edge cost.
Status profileMinimalPlan(Ctx& c, Profile& p) {
  const Graph& g = c.g;
  auto order = g.topologicalOrder();
  if (!order) return Error{order.message()};
  if (auto st = profileWholeModelRuns(c, p, *order); !st) return st;
  // The crossing run: operators alternate between the devices along the topological order, so that
  // edges cross devices; the crossing tensors are copied between the devices' cores and timed.
  const int m = static_cast<int>(c.devices.size());
  if (m > 1) {
    c.step("crossing run");
    std::vector<int> devOf(g.nodes.size(), 0);
    for (size_t i = 0; i < order->size(); ++i)
      devOf[static_cast<size_t>((*order)[i])] = static_cast<int>(i % static_cast<size_t>(m));
    // Edge costs depend only on the device pair and the bytes: every size that crosses in this run is
    // measured on every ordered pair (at most 8 sizes, spread over the range), so no pair is left out.
    std::set<int64_t> crossing;
    for (size_t v = 0; v < g.values.size(); ++v) {
      const Value& val = g.values[v];
      if (val.producer < 0 || val.bytes() <= 0) continue;
      for (OpId consumer : val.consumers)
        if (devOf[static_cast<size_t>(consumer)] != devOf[static_cast<size_t>(val.producer)])
          crossing.insert(val.bytes());
    }
    std::vector<int64_t> sizes(crossing.begin(), crossing.end());
    if (sizes.size() > 8) {
      std::vector<int64_t> picked;
      for (size_t k = 0; k < 8; ++k) picked.push_back(sizes[k * (sizes.size() - 1) / 7]);
      sizes = picked;
    }
    for (int a = 0; a < m && !sizes.empty(); ++a)
      for (int b = 0; b < m; ++b) {
        if (a == b || !hostCopyPair(c.devices[static_cast<size_t>(a)], c.devices[static_cast<size_t>(b)])) continue;
        ProfileTransfer t{c.devices[static_cast<size_t>(a)].id, c.devices[static_cast<size_t>(b)].id, {}};
        for (int64_t bytes : sizes) {
          if (c.o.cancelled()) return cancelledError();
          t.samples.push_back(
              TransferSample{bytes, measureTransfer(bytes, c.devices[static_cast<size_t>(a)].core,
                                                    c.devices[static_cast<size_t>(b)].core, c.o.warmup, c.o.reps)});
        }
        p.transfers.push_back(std::move(t));
      }
  }
  p.profilingRuns = minimalPlanRuns(m);
  return Status::ok();
}

}  // namespace

const char* methodName(ProfilerOptions::Method m) {
  switch (m) {
    case ProfilerOptions::Method::PerOperator:
      return "per-operator";
    case ProfilerOptions::Method::InContext:
      return "in-context";
    case ProfilerOptions::Method::MinimalPlan:
      return "minimal-plan";
  }
  return "per-operator";
}

double cpuSpeedProbeUs() {
  constexpr size_t kFloats = 4096;  // 16 KiB: L1-resident on every x86 core
  thread_local std::vector<float> buf = [] {
    std::vector<float> b(kFloats);
    for (size_t i = 0; i < kFloats; ++i) b[i] = 1.0f + static_cast<float>(i) * 1e-7f;
    return b;
  }();
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    float acc = 0;
    // A stride of 7 elements defeats vectorisation and prefetch-friendly streaming: a chain of loads and
    // multiply-adds whose time follows the core's load ports, as the kernels' does.
    for (int pass = 0; pass < 8; ++pass)
      for (size_t i = 0; i < kFloats; ++i) acc += buf[i] * buf[(i * 7) & (kFloats - 1)];
    const double us = usSince(t0);
    volatile float sink = acc;
    (void)sink;
    best = round == 0 ? us : std::min(best, us);
  }
  return best;
}

bool pinThisThread(int core) {
  if (core < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

Result<Profile> profileModel(const Graph& g, const Backend& backend, const ProfilerOptions& o, ProfilerInfo* infoOut) {
  const auto t0 = Clock::now();
  ProfilerInfo local;
  ProfilerInfo& info = infoOut ? *infoOut : local;
  info = ProfilerInfo{};
  if (o.reps < 1) return makeError("profiler: reps must be at least 1");
  if (o.warmup < 0) return makeError("profiler: warm-up runs must be >= 0");
  if (o.groups && o.maxGroup < 2) return makeError("profiler: group size must be at least 2");
  if (auto st = checkRunMemory(g); !st) return Error{st.message()};
  Ctx c{g, backend, o, info, {}, {}, 0, 0};
  const auto all = backend.devices();
  if (o.devices.empty()) {
    c.devices = all;
  } else {
    for (const auto& id : o.devices) {
      auto it = std::find_if(all.begin(), all.end(), [&](const BackendDevice& d) { return d.id == id; });
      if (it == all.end()) {
        std::vector<std::string> ids;
        for (const auto& d : all) ids.push_back(d.id);
        return makeError("backend '", backend.name(), "' has no device '", id, "' (devices: ", join(ids, ", "), ")");
      }
      if (std::any_of(c.devices.begin(), c.devices.end(), [&](const BackendDevice& d) { return d.id == id; }))
        return makeError("device '", id, "' is listed twice");
      c.devices.push_back(*it);
    }
  }
  if (c.devices.empty()) return makeError("backend '", backend.name(), "' offers no device");

  const int n = static_cast<int>(g.nodes.size()), m = static_cast<int>(c.devices.size());
  auto groups = o.groups ? chainGroups(g, o.maxGroup) : std::vector<std::vector<OpId>>{};
  if (o.groups)  // and the groups the runtime fuses (longer than maxGroup, or not chains: x * Sigmoid(x))
    for (const FusedGroup& fg : fusedGroups(g))
      if (std::find(groups.begin(), groups.end(), fg.ops) == groups.end()) groups.push_back(fg.ops);
  const auto sizes = o.transferSizes.empty() ? defaultTransferSizes(g) : o.transferSizes;
  const bool minimal = o.method == ProfilerOptions::Method::MinimalPlan;
  const bool inContext = o.method == ProfilerOptions::Method::InContext;
  c.total = 1 +
            (minimal     ? m + (m > 1 ? 1 : 0)
             : inContext ? m + (o.transfers ? 0 : 1)
                         : n * m) +
            static_cast<int>(groups.size()) * m + (o.transfers ? static_cast<int>(sizes.size()) * m * (m - 1) : 0);

  Profile p;
  p.modelFile = baseName(g.sourcePath);
  p.modelSha256 = g.graphSha256;
  p.backendName = backend.name();
  p.backendVersion = backend.version();
  p.source = "partex profiler";
  p.method = methodName(o.method);
  p.measuredAt = isoNowUtc();
  p.machine = machineDescription();
  p.warmup = o.warmup;
  p.reps = o.reps;
  p.seed = o.seed;
  for (const auto& d : c.devices) p.device(d.id);

  c.step("reference run");
  if (auto st = onDevice(c.devices.front(), [&] { return referenceRun(c); }); !st) return Error{st.message()};
  Status measured;
  if (minimal) {
    measured = profileMinimalPlan(c, p);
  } else if (inContext) {
    auto order = g.topologicalOrder();
    if (!order) return Error{order.message()};
    measured = profileWholeModelRuns(c, p, *order);
    if (measured && !o.transfers) {
      c.step("hand-overs between CPUs");
      measured = profileHandovers(c, p);
    }
  } else {
    measured = profilePerOperator(c, p);
  }
  if (!measured) return Error{measured.message()};

  for (const auto& d : c.devices) {
    ProfileDevice& pd = p.device(d.id);
    for (const auto& grp : groups) {
      if (o.cancelled()) return cancelledError();
      std::vector<std::string> names;
      for (OpId v : grp) names.push_back(g.nodes[static_cast<size_t>(v)].name);
      c.step("group " + join(names, "+") + " on " + d.id);
      // A group the runtime fuses is timed as the one kernel it runs.
      if (const auto fg = runtimeGroupOf(g, grp)) {
        auto k = backend.prepareGroup(g, *fg, d.id);
        if (k) {
          Result<TimingStat> st = TimingStat{};
          onCore(d.core, [&] { st = timeFusedGroup(c, *fg, **k); });
          if (!st) return makeError(g.name, ": group ", join(names, "+"), " on ", d.id, ": ", st.message());
          pd.groups.push_back(ProfileGroup{names, *st});
          continue;
        }
      }
      std::vector<std::unique_ptr<Kernel>> kernels;
      bool ok = true;
      for (OpId v : grp) {
        if (!backend.supports(g, v, nullptr)) {
          ok = false;
          break;
        }
        auto k = backend.prepare(g, v, d.id);
        if (!k) {
          ok = false;
          break;
        }
        kernels.push_back(std::move(k).value());
      }
      if (!ok) continue;
      Result<TimingStat> st = TimingStat{};
      onCore(d.core, [&] { st = timeGroup(c, grp, kernels); });
      if (!st) return makeError(g.name, ": group ", join(names, "+"), " on ", d.id, ": ", st.message());
      pd.groups.push_back(ProfileGroup{names, *st});
    }
  }
  if (o.transfers) {
    for (const auto& a : c.devices)
      for (const auto& b : c.devices) {
        if (a.id == b.id || !hostCopyPair(a, b)) continue;
        ProfileTransfer t{a.id, b.id, {}};
        for (int64_t bytes : sizes) {
          if (o.cancelled()) return cancelledError();
          c.step("transfer " + a.id + " -> " + b.id + " " + humanBytes(static_cast<double>(bytes)));
          t.samples.push_back(TransferSample{bytes, measureTransfer(bytes, a.core, b.core, o.warmup, o.reps)});
        }
        // The minimal plan may have measured this pair already: one entry per pair, sizes merged.
        auto same = std::find_if(p.transfers.begin(), p.transfers.end(),
                                 [&](const ProfileTransfer& x) { return x.from == a.id && x.to == b.id; });
        if (same == p.transfers.end()) {
          p.transfers.push_back(std::move(t));
        } else {
          for (auto& smp : t.samples)
            if (std::none_of(same->samples.begin(), same->samples.end(),
                             [&](const TransferSample& x) { return x.bytes == smp.bytes; }))
              same->samples.push_back(smp);
          std::sort(same->samples.begin(), same->samples.end(),
                    [](const TransferSample& x, const TransferSample& y) { return x.bytes < y.bytes; });
        }
      }
  }
  info.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return p;
}

bool profileMatches(const Profile& p, const Graph& g, const Backend& backend, const std::vector<std::string>& devices,
                    std::string* why) {
  auto say = [&](std::string s) {
    if (why) *why = std::move(s);
    return false;
  };
  if (p.imported) return say("it was imported from " + p.backendName);
  if (p.modelSha256 != g.graphSha256) return say("it is for another model (sha256 differs)");
  if (p.backendName != backend.name() || p.backendVersion != backend.version())
    return say("it was measured with backend " + p.backendName + " " + p.backendVersion + ", this is " +
               backend.name() + " " + backend.version());
  for (const auto& d : devices)
    if (!p.findDevice(d)) return say("it has no device '" + d + "'");
  return true;
}

}  // namespace partex
