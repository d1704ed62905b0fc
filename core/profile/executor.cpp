#include "profile/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "profile/profiler.h"
#include "support/strings.h"

namespace partex {

namespace {

using Clock = std::chrono::steady_clock;

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Everything one placement needs to run repeatedly: kernels, output storage, input pointers.
class Prepared {
 public:
  Prepared(const Graph& g, const std::vector<Tensor>& leaves) : g_(g), leaves_(leaves) {}

  /// Prepares every operator on the device of `devOf` (ids into `deviceIds`).
  Status prepare(const Backend& b, const std::vector<DeviceId>& devOf, const std::vector<std::string>& deviceIds) {
    const size_t n = g_.nodes.size();
    kernels_.resize(n);
    outs_.assign(n, {});
    for (size_t v = 0; v < n; ++v) outs_[v].resize(g_.nodes[v].outputs.size());
    valuePtr_.assign(g_.values.size(), nullptr);
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].producer < 0) valuePtr_[v] = &leaves_[v];
    for (size_t op = 0; op < n; ++op) {
      const Node& node = g_.nodes[op];
      for (size_t k = 0; k < node.outputs.size(); ++k)
        if (node.outputs[k] >= 0) valuePtr_[static_cast<size_t>(node.outputs[k])] = &outs_[op][k];
    }
    ins_.assign(n, {});
    for (size_t op = 0; op < n; ++op) {
      const Node& node = g_.nodes[op];
      const std::string& dev = deviceIds[static_cast<size_t>(devOf[op])];
      std::string why;
      if (!b.supports(g_, static_cast<OpId>(op), &why))
        return makeError("operator '", node.name, "' (", node.opType, "): backend '", b.name(),
                         "' cannot run it: ", why);
      auto k = b.prepare(g_, static_cast<OpId>(op), dev);
      if (!k) return makeError("operator '", node.name, "' (", node.opType, ") on ", dev, ": ", k.message());
      kernels_[op] = std::move(k).value();
      for (ValueId in : node.inputs) ins_[op].push_back(in >= 0 ? valuePtr_[static_cast<size_t>(in)] : nullptr);
    }
    return Status::ok();
  }

  Status runOne(size_t op) {
    auto st = kernels_[op]->run(ins_[op], outs_[op]);
    if (!st) {
      const Node& node = g_.nodes[op];
      return makeError("operator '", node.name, "' (", node.opType, "): ", st.message());
    }
    return Status::ok();
  }
  const Tensor* value(ValueId v) const { return valuePtr_[static_cast<size_t>(v)]; }

 private:
  const Graph& g_;
  const std::vector<Tensor>& leaves_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<std::vector<Tensor>> outs_;
  std::vector<const Tensor*> valuePtr_;
  std::vector<std::vector<const Tensor*>> ins_;
};

struct RunTimes {
  double makespanUs = 0;
  std::vector<double> startUs, endUs;
  double cpuUs = 0;   ///< CPU time of the single-thread devices' workers while they ran or spun.
  double busyUs = 0;  ///< Their wall time from the start to their last operator, less their sleeps.
  int sleeps = 0;     ///< Waits for an input that outlasted the spin and slept.
};

/// CPU time of the calling thread in microseconds.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

/// One thread per device, created and pinned once and kept for every run of a placement, as a
/// runtime keeps its threads: a fresh thread per run would time its first touches (stack, the OpenMP
/// and oneDNN per-thread state and scratchpads) inside the kernels. run() hands each member the same
/// job and returns when all have finished it.
class DeviceTeam {
 public:
  explicit DeviceTeam(const std::vector<int>& coreOf) {
    threads_.reserve(coreOf.size());
    for (size_t i = 0; i < coreOf.size(); ++i)
      threads_.emplace_back([this, i, core = coreOf[i]] {
        pinThisThread(core);
        uint64_t seen = 0;
        for (;;) {
          std::unique_lock lk(mu_);
          cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
          if (stop_) return;
          seen = generation_;
          const auto* job = job_;
          lk.unlock();
          (*job)(static_cast<DeviceId>(i));
          lk.lock();
          if (--pending_ == 0) doneCv_.notify_all();
        }
      });
  }
  ~DeviceTeam() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  DeviceTeam(const DeviceTeam&) = delete;
  DeviceTeam& operator=(const DeviceTeam&) = delete;

  /// Runs job(d) on every member d (concurrently) and waits for all; `whileRunning` runs on the calling
  /// thread meanwhile (it starts the clock).
  void run(const std::function<void(DeviceId)>& job, const std::function<void()>& whileRunning) {
    {
      std::lock_guard lk(mu_);
      job_ = &job;
      pending_ = threads_.size();
      ++generation_;
    }
    cv_.notify_all();
    whileRunning();
    std::unique_lock lk(mu_);
    doneCv_.wait(lk, [&] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, doneCv_;
  const std::function<void(DeviceId)>* job_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// One concurrent run on the team: each device's member walks its operators, dependency counters are
/// atomics, and a mutex per pair of mutually exclusive devices is taken (in a fixed order) while a
/// kernel runs.
Result<RunTimes> runConcurrent(DeviceTeam& team, Prepared& prep, const CostTable& t, const Plan& plan,
                               const std::vector<std::vector<OpId>>& preds, const std::vector<std::vector<OpId>>& succs,
                               int spinUs, const std::atomic<bool>* cancel) {
  const size_t n = preds.size();
  const int m = t.numDevices();
  // Dependency counters: atomics, so that a waiting worker can spin on them before it sleeps (a sleeping
  // thread woken on a busy core can wait a whole scheduler slice).
  auto remaining = std::make_unique<std::atomic<int>[]>(n);
  for (size_t v = 0; v < n; ++v) remaining[v].store(static_cast<int>(preds[v].size()), std::memory_order_relaxed);
  // Exclusive pairs: one mutex each; a device takes the mutexes of all its pairs, in pair order.
  std::map<std::pair<int, int>, size_t> pairIndex;
  for (DeviceId a = 0; a < m; ++a)
    if (static_cast<size_t>(a) < t.exclusiveWith.size())
      for (DeviceId b : t.exclusiveWith[static_cast<size_t>(a)]) {
        auto key = std::make_pair(std::min(a, b), std::max(a, b));
        if (!pairIndex.count(key)) pairIndex.emplace(key, pairIndex.size());
      }
  std::vector<std::mutex> pairMutex(pairIndex.size());
  std::vector<std::vector<size_t>> locksOf(static_cast<size_t>(m));
  for (const auto& [key, idx] : pairIndex) {
    locksOf[static_cast<size_t>(key.first)].push_back(idx);
    locksOf[static_cast<size_t>(key.second)].push_back(idx);
  }
  for (auto& l : locksOf) std::sort(l.begin(), l.end());

  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> failed{false};
  std::string error;
  RunTimes times;
  times.startUs.assign(n, 0);
  times.endUs.assign(n, 0);
  std::vector<double> cpuOf(static_cast<size_t>(m), 0.0), busyOf(static_cast<size_t>(m), 0.0);
  std::atomic<int> sleeps{0};
  int active = 0;
  for (DeviceId d = 0; d < m; ++d)
    if (static_cast<size_t>(d) < plan.order.size() && !plan.order[static_cast<size_t>(d)].empty()) ++active;
  // Start line: every worker with operators spins until the clock starts, so that the makespan does
  // not include a wake-up from a sleep (a whole slice on a busy core).
  std::atomic<int> atStart{0};
  std::atomic<bool> go{false};
  Clock::time_point t0;

  auto worker = [&](DeviceId d) {
    if (static_cast<size_t>(d) >= plan.order.size() || plan.order[static_cast<size_t>(d)].empty()) return;
    atStart.fetch_add(1, std::memory_order_acq_rel);
    for (int i = 1; !go.load(std::memory_order_acquire); ++i)
      if (i % 64 == 0) std::this_thread::yield();
    const double cpu0 = threadCpuUs();
    double sleptUs = 0, lastEnd = 0;
    auto finish = [&] {
      cpuOf[static_cast<size_t>(d)] = threadCpuUs() - cpu0;
      busyOf[static_cast<size_t>(d)] = std::max(0.0, lastEnd - sleptUs);
    };
    for (TaskId v : plan.order[static_cast<size_t>(d)]) {
      const auto vi = static_cast<size_t>(v);
      auto ready = [&] { return remaining[vi].load(std::memory_order_acquire) == 0 || failed.load(); };
      if (!ready()) {
        const auto spinUntil = Clock::now() + std::chrono::microseconds(spinUs);
        for (int i = 1; !ready() && Clock::now() < spinUntil; ++i)
          if (i % 64 == 0) std::this_thread::yield();
        if (!ready()) {
          const auto s0 = Clock::now();
          sleeps.fetch_add(1, std::memory_order_relaxed);
          std::unique_lock lk(mu);
          cv.wait(lk, ready);
          sleptUs += std::chrono::duration<double, std::micro>(Clock::now() - s0).count();
        }
      }
      if (failed.load()) return finish();
      if (cancel && cancel->load(std::memory_order_relaxed)) {
        std::lock_guard lk(mu);
        if (!failed.load()) error = "cancelled";
        failed.store(true);
        cv.notify_all();
        return finish();
      }
      for (size_t l : locksOf[static_cast<size_t>(d)]) pairMutex[l].lock();
      const auto s = Clock::now();
      Status st = prep.runOne(vi);
      const auto e = Clock::now();
      for (auto it = locksOf[static_cast<size_t>(d)].rbegin(); it != locksOf[static_cast<size_t>(d)].rend(); ++it)
        pairMutex[*it].unlock();
      times.startUs[vi] = std::chrono::duration<double, std::micro>(s - t0).count();
      times.endUs[vi] = lastEnd = std::chrono::duration<double, std::micro>(e - t0).count();
      if (st) {
        bool wake = false;
        for (OpId sc : succs[vi])
          if (remaining[static_cast<size_t>(sc)].fetch_sub(1, std::memory_order_acq_rel) == 1) wake = true;
        if (wake) {
          { std::lock_guard lk(mu); }  // A sleeper checks its counter under mu: no lost wake-up.
          cv.notify_all();
        }
      } else {
        {
          std::lock_guard lk(mu);
          if (!failed.load()) error = st.message();
          failed.store(true);
        }
        cv.notify_all();
        return finish();
      }
    }
    finish();
  };
  team.run(worker, [&] {
    while (atStart.load(std::memory_order_acquire) < active) std::this_thread::yield();
    t0 = Clock::now();
    go.store(true, std::memory_order_release);
  });
  if (failed.load()) return Error{error};
  for (size_t v = 0; v < n; ++v) times.makespanUs = std::max(times.makespanUs, times.endUs[v]);
  times.sleeps = sleeps.load();
  for (DeviceId d = 0; d < m; ++d)
    if (t.deviceCores.empty() || t.deviceCores[static_cast<size_t>(d)] <= 1) {
      times.cpuUs += cpuOf[static_cast<size_t>(d)];
      times.busyUs += busyOf[static_cast<size_t>(d)];
    }
  return times;
}

}  // namespace

bool tensorsClose(const Tensor& ref, const Tensor& got, double rtol, double& maxAbs, double& maxRel, std::string* why) {
  if (ref.dtype() != got.dtype() || ref.shape() != got.shape()) {
    if (why) *why = "expected " + ref.describe() + ", got " + got.describe();
    return false;
  }
  const int64_t n = ref.numElements();
  if (n > 0 && ref.raw() && got.raw() && std::memcmp(ref.raw(), got.raw(), static_cast<size_t>(ref.bytes())) == 0)
    return true;
  const bool isFloat = ref.dtype() == DType::Float32 || ref.dtype() == DType::Float64 ||
                       ref.dtype() == DType::Float16 || ref.dtype() == DType::BFloat16;
  double scale = 0;
  if (isFloat)
    for (int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(ref.valueAsDouble(i));
      if (std::isfinite(a)) scale = std::max(scale, a);
    }
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    if (!isFloat) {
      if (ref.valueAsInt(i) != got.valueAsInt(i)) {
        if (ok && why)
          *why = "element " + std::to_string(i) + ": expected " + std::to_string(ref.valueAsInt(i)) + ", got " +
                 std::to_string(got.valueAsInt(i));
        ok = false;
        maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(ref.valueAsInt(i) - got.valueAsInt(i))));
      }
      continue;
    }
    const double a = ref.valueAsDouble(i), b = got.valueAsDouble(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    const double diff = std::fabs(a - b);
    const double mag = std::max(std::fabs(a), std::fabs(b));
    maxAbs = std::max(maxAbs, diff);
    if (mag > 0) maxRel = std::max(maxRel, diff / mag);
    if (!(diff <= rtol * mag || diff <= rtol * scale)) {
      if (ok && why) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "element %lld: expected %.9g, got %.9g", static_cast<long long>(i), a, b);
        *why = buf;
      }
      ok = false;
    }
  }
  return ok;
}

Result<ExecResult> executePlan(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                               const ExecOptions& o) {
  const size_t n = g.nodes.size();
  if (static_cast<size_t>(t.numTasks()) != n)
    return makeError("executor: the plan is for a task graph, not for this model");
  for (size_t v = 0; v < n; ++v)
    if (t.taskNames[v] != g.nodes[v].name)
      return makeError("executor: the cost table does not match the model at '", g.nodes[v].name, "'");
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  if (o.reps < 1) return makeError("executor: reps must be at least 1");
  const auto backendDevices = backend.devices();
  std::vector<int> coreOf(static_cast<size_t>(t.numDevices()), -1);
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    const auto& id = t.deviceIds[static_cast<size_t>(d)];
    auto it =
        std::find_if(backendDevices.begin(), backendDevices.end(), [&](const BackendDevice& b) { return b.id == id; });
    if (it != backendDevices.end()) coreOf[static_cast<size_t>(d)] = it->core;
    if (plan.order[static_cast<size_t>(d)].empty()) continue;
    if (it == backendDevices.end())
      return makeError("executor: device '", id, "' is not a device of backend '", backend.name(),
                       "' (it can only be simulated)");
  }
  int done = 0;
  const int total = o.warmup + o.reps + (o.checkOutputs ? 1 : 0) + 1;
  auto step = [&](const std::string& what) {
    ++done;
    if (o.progress) o.progress(done, total, what);
  };
  auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };

  // Synthetic model inputs and weights, shared by both runs.
  std::vector<Tensor> leaves(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.producer >= 0 || (!val.isWeight && !val.isGraphInput)) continue;
    auto tn = syntheticTensor(g, static_cast<ValueId>(v), o.seed + v);
    if (!tn) return makeError("input '", val.name, "': ", tn.message());
    leaves[v] = std::move(tn).value();
  }
  std::vector<std::vector<OpId>> preds(n), succs(n);
  for (size_t v = 0; v < n; ++v) {
    preds[v] = g.predecessors(static_cast<OpId>(v));
    succs[v] = g.successors(static_cast<OpId>(v));
  }

  step("preparing kernels");
  DeviceTeam team(coreOf);
  Prepared prep(g, leaves);
  if (auto st = prep.prepare(backend, plan.device, t.deviceIds); !st) return Error{st.message()};
  ExecResult r;
  std::vector<std::vector<double>> opSamples(n), startSamples(n);
  double cpuSum = 0, wallSum = 0;
  for (int rep = 0; rep < o.warmup + o.reps; ++rep) {
    if (cancelled()) return makeError("cancelled");
    step(rep < o.warmup ? "warm-up run" : "timed run " + std::to_string(rep - o.warmup + 1));
    auto times = runConcurrent(team, prep, t, plan, preds, succs, o.spinUs, o.cancel);
    if (!times) return Error{times.message()};
    if (rep < o.warmup) continue;
    r.makespansUs.push_back(times->makespanUs);
    for (size_t v = 0; v < n; ++v) {
      opSamples[v].push_back(times->endUs[v] - times->startUs[v]);
      startSamples[v].push_back(times->startUs[v]);
    }
    cpuSum += times->cpuUs;
    wallSum += times->busyUs;
    r.sleepsPerRun += static_cast<double>(times->sleeps) / static_cast<double>(o.reps);
  }
  r.makespanUs = medianOf(r.makespansUs);
  r.opUs.resize(n);
  r.opStartUs.resize(n);
  for (size_t v = 0; v < n; ++v) {
    r.opUs[v] = medianOf(opSamples[v]);
    r.opStartUs[v] = medianOf(startSamples[v]);
  }
  r.cpuShare = wallSum > 0 ? std::min(1.0, cpuSum / wallSum) : 1.0;
  if (!o.checkOutputs) return r;

  // The reference: every operator on one device, in topological order.
  std::string refId = o.referenceDevice.empty() ? t.deviceIds[static_cast<size_t>(t.host)] : o.referenceDevice;
  auto it = std::find(t.deviceIds.begin(), t.deviceIds.end(), refId);
  if (it == t.deviceIds.end()) return makeError("executor: no reference device '", refId, "'");
  const auto ref = static_cast<DeviceId>(it - t.deviceIds.begin());
  Plan single;
  single.device.assign(n, ref);
  single.order.assign(static_cast<size_t>(t.numDevices()), {});
  auto topo = g.topologicalOrder();
  if (!topo) return Error{topo.message()};
  single.order[static_cast<size_t>(ref)] = *topo;
  if (cancelled()) return makeError("cancelled");
  step("single-device reference run on " + refId);
  Prepared refPrep(g, leaves);
  if (auto st = refPrep.prepare(backend, single.device, t.deviceIds); !st)
    return makeError("reference run: ", st.message());
  auto refTimes = runConcurrent(team, refPrep, t, single, preds, succs, o.spinUs, o.cancel);
  if (!refTimes) return makeError("reference run: ", refTimes.message());
  r.outputsChecked = true;
  r.outputsMatch = true;
  for (ValueId out : g.outputs) {
    const Tensor* a = refPrep.value(out);
    const Tensor* b = prep.value(out);
    if (!a || !b) continue;
    std::string why;
    if (!tensorsClose(*a, *b, o.rtol, r.maxAbsDiff, r.maxRelDiff, &why) && r.outputsMatch) {
      r.outputsMatch = false;
      r.mismatch = "output '" + g.values[static_cast<size_t>(out)].name + "': " + why;
    }
  }
  return r;
}

}  // namespace partex
