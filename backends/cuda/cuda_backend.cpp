#include "cuda/cuda_backend.h"

#include <cstdlib>
#include <map>
#include <set>

#include "cuda/cuda_calibrate.h"
#include "cuda/cuda_ops.h"

namespace partex {
namespace cuda {
namespace {

/// Whether kernels replay their launches as CUDA graphs (PARTEX_CUDA_KERNEL_GRAPHS=0: no).
bool kernelGraphs() {
  static const bool on = [] {
    const char* e = std::getenv("PARTEX_CUDA_KERNEL_GRAPHS");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

/// One chain on the GPU behind the host-tensor Kernel interface. Prepared lazily at the first run,
/// when the weights arrive as inputs (the graph may have handed its weights over to the caller).
/// From the second run on, the chain's launches are replayed as a CUDA graph captured with the device
/// pointers of that run (captured again when one of them changes): one launch of host time instead of
/// one per kernel and library call (PARTEX_CUDA_KERNEL_GRAPHS=0 launches them eagerly every time).
/// The graph must outlive the kernel (the executor and the profiler keep it).
class CudaKernel final : public Kernel {
 public:
  CudaKernel(const Graph& g, std::vector<OpId> chain, std::vector<ValueId> inputs, std::vector<ValueId> outputs)
      : g_(&g), chain_(std::move(chain)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  Status run(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) override {
    auto ctxr = Context::get();
    if (!ctxr) return Error{ctxr.message()};
    Context& ctx = **ctxr;
    const std::string& name = g_->nodes[static_cast<size_t>(chain_.back())].name;
    if (in.size() > inputs_.size())
      return makeError("node '", name, "': ", std::to_string(in.size()), " inputs given, expected ", std::to_string(inputs_.size()));
    std::map<ValueId, const Tensor*> given;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] && inputs_[i] >= 0 && !in[i]->empty() && !links_.count(i)) given[inputs_[i]] = in[i];
    auto lock = ctx.lock();
    // Inputs another GPU kernel left on the GPU: read them there.
    if (values_.empty()) values_.resize(g_->values.size());
    for (const auto& [i, src] : links_) {
      const DevTensor* d = src.first->deviceOutput(src.second);
      if (!d || !d->ptr)
        return makeError("node '", name, "': input '", g_->values[static_cast<size_t>(inputs_[i])].name,
                         "' is not on the GPU yet (its producer has not run)");
      values_[static_cast<size_t>(inputs_[i])] = *d;
    }
    if (!op_) {
      LeafFn leaf = [&](ValueId v) -> Result<const Tensor*> {
        auto it = given.find(v);
        if (it == given.end()) return makeError("node '", name, "': input '", g_->values[static_cast<size_t>(v)].name, "' not given");
        if (it->second->nhwc()) {
          plain_.emplace_back();
          if (auto st = it->second->toPlain(plain_.back()); !st) return Error{st.message()};
          return &plain_.back();
        }
        return it->second;
      };
      auto k = makeGpuOp(ctx, *g_, chain_, leaf);
      plain_.clear();
      if (!k) return Error{k.message()};
      op_ = std::move(*k);
      bufs_.resize(g_->values.size());
      for (ValueId v : op_->reads())
        if (!linked(v))
          if (auto st = place(v); !st) return st;
      for (ValueId v : op_->writes())
        if (!op_->isView())
          if (auto st = place(v); !st) return st;
    }
    // A view's output is its input's storage (which a link may have just set).
    if (op_->isView())
      for (ValueId v : op_->writes()) {
        values_[static_cast<size_t>(v)] = values_[static_cast<size_t>(op_->reads()[0])];
        values_[static_cast<size_t>(v)].shape = g_->values[static_cast<size_t>(v)].shape;
        values_[static_cast<size_t>(v)].dtype = g_->values[static_cast<size_t>(v)].dtype;
      }
    // Inputs: weights once (kept), activations every run, linked ones not at all.
    for (ValueId v : op_->reads()) {
      if (linked(v)) continue;
      const bool weight = g_->values[static_cast<size_t>(v)].isWeight;
      if (weight && uploaded_.count(v)) continue;
      auto it = given.find(v);
      if (it == given.end()) return makeError("node '", name, "': input '", g_->values[static_cast<size_t>(v)].name, "' not given");
      // An activation's copy is only enqueued (the kernel follows it on the same stream, and the run
      // waits once at its end), each through a staging buffer of its own; a weight's is waited for.
      if (auto st = copyIn(ctx, v, *it->second, !weight); !st) return makeError("node '", name, "': ", st.message());
      if (weight) uploaded_.insert(v);
    }
    cudaEvent_t e0 = events_[0], e1 = events_[1];
    if (!e0) {
      if (auto st = check(cudaEventCreate(&events_[0]), "cudaEventCreate"); !st) return st;
      if (auto st = check(cudaEventCreate(&events_[1]), "cudaEventCreate"); !st) return st;
      e0 = events_[0], e1 = events_[1];
    }
    // Replayed from the second run on (the first loads the libraries' kernels, which a capture must
    // not do), captured again when a pointer it reads or writes moved.
    bool replay = false;
    if (!op_->isView() && runs_ > 0 && kernelGraphs()) {
      std::vector<const void*> ptrs;
      for (ValueId v : op_->reads()) ptrs.push_back(values_[static_cast<size_t>(v)].ptr);
      for (ValueId v : op_->writes()) ptrs.push_back(values_[static_cast<size_t>(v)].ptr);
      if (!graph_.ready() || ptrs != graphPtrs_) {
        graphPtrs_ = ptrs;
        if (auto st = graph_.capture(ctx.stream(), [&] { return op_->launch(ctx, values_); }); !st)
          return makeError("node '", name, "': ", st.message());
      }
      replay = true;
    }
    ++runs_;
    if (auto st = check(cudaEventRecord(e0, ctx.stream()), "cudaEventRecord"); !st) return st;
    if (auto st = replay ? graph_.replay(ctx.stream()) : op_->launch(ctx, values_); !st) return st;
    if (auto st = check(cudaEventRecord(e1, ctx.stream()), "cudaEventRecord"); !st) return st;
    // Outputs back to the host.
    out.resize(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const ValueId v = outputs_[i];
      if (v < 0 || !values_[static_cast<size_t>(v)].ptr) continue;
      if (i < hostOutput_.size() && !hostOutput_[i]) continue;  // read on the GPU only
      if (auto st = downloadTensor(ctx, staging_, values_[static_cast<size_t>(v)], out[i]); !st)
        return makeError("node '", name, "': ", st.message());
    }
    if (auto st = check(cudaStreamSynchronize(ctx.stream()), "run"); !st) return makeError("node '", name, "': ", st.message());
    float ms = 0;
    if (cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess) lastUs_ = ms * 1000.0;
    return {};
  }

  bool keepsCopy(size_t i) const override {
    return i < inputs_.size() && inputs_[i] >= 0 && g_->values[static_cast<size_t>(inputs_[i])].isWeight;
  }
  double lastDeviceUs() const override { return lastUs_; }

  bool linkInput(size_t i, Kernel& producer, size_t producerOutput) override {
    auto* p = dynamic_cast<CudaKernel*>(&producer);
    if (!p || i >= inputs_.size() || inputs_[i] < 0 || producerOutput >= p->outputs_.size() ||
        p->outputs_[producerOutput] != inputs_[i] || g_->values[static_cast<size_t>(inputs_[i])].isWeight)
      return false;
    links_[i] = {p, producerOutput};
    return true;
  }
  void setHostOutput(size_t i, bool needed) override {
    if (hostOutput_.size() < outputs_.size()) hostOutput_.resize(outputs_.size(), true);
    if (i < hostOutput_.size()) hostOutput_[i] = needed;
  }
  /// Output i on the GPU after a run (nullptr before the first run).
  const DevTensor* deviceOutput(size_t i) const {
    if (i >= outputs_.size() || outputs_[i] < 0 || values_.empty()) return nullptr;
    return &values_[static_cast<size_t>(outputs_[i])];
  }

  ~CudaKernel() override {
    for (auto e : events_)
      if (e) (void)cudaEventDestroy(e);
  }

 private:
  bool linked(ValueId v) const {
    for (const auto& [i, src] : links_)
      if (inputs_[i] == v) return true;
    return false;
  }
  Status place(ValueId v) {
    DevTensor& d = values_[static_cast<size_t>(v)];
    if (d.ptr) return {};
    d.dtype = g_->values[static_cast<size_t>(v)].dtype;
    d.shape = g_->values[static_cast<size_t>(v)].shape;
    if (auto st = bufs_[static_cast<size_t>(v)].ensure(static_cast<size_t>(std::max<int64_t>(d.bytes(), 1))); !st) return st;
    d.ptr = bufs_[static_cast<size_t>(v)].get();
    return {};
  }
  Status copyIn(Context& ctx, ValueId v, const Tensor& t, bool activation) {
    const DevTensor& d = values_[static_cast<size_t>(v)];
    if (t.dtype() != d.dtype || t.numElements() != d.numel())
      return makeError("input '", g_->values[static_cast<size_t>(v)].name, "': got ", t.describe(), ", expected ",
                       dtypeName(d.dtype), shapeString(d.shape));
    if (!activation) return uploadTensor(ctx, staging_, t, d);
    return uploadTensor(ctx, stagingIn_[v], t, d, /*wait=*/false);
  }

  const Graph* g_;
  std::vector<OpId> chain_;
  std::vector<ValueId> inputs_, outputs_;
  std::unique_ptr<GpuOp> op_;
  std::vector<DevTensor> values_;
  std::vector<DeviceBuffer> bufs_;
  std::set<ValueId> uploaded_;  ///< weights on the GPU (kept)
  std::map<size_t, std::pair<CudaKernel*, size_t>> links_;  ///< input index -> (producer, its output)
  std::vector<bool> hostOutput_;                            ///< per output: copy it back (default yes)
  std::vector<Tensor> plain_;
  PinnedBuffer staging_;                    ///< weights in, outputs out (each copy waited for)
  std::map<ValueId, PinnedBuffer> stagingIn_;  ///< per activation input: copies in flight together
  cudaEvent_t events_[2] = {nullptr, nullptr};
  double lastUs_ = -1;
  CapturedGraph graph_;                  ///< the chain's launches, from the second run on
  std::vector<const void*> graphPtrs_;  ///< the device pointers graph_ was captured with
  int runs_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const GpuInfo& info) : info_(info) {
    int cudnnV = static_cast<int>(cudnnGetVersion());
    version_ = "partex-cuda 3; CUDA runtime " + std::to_string(info.runtimeVersion) + "; driver " +
               std::to_string(info.driverVersion) + "; cuDNN " + std::to_string(cudnnV) + "; cuBLASLt " +
               std::to_string(cublasLtGetVersion()) + "; " + info.name + " sm_" + std::to_string(info.ccMajor) +
               std::to_string(info.ccMinor) + "; float32 without TF32";
  }
  std::string name() const override { return "cuda"; }
  std::string version() const override { return version_; }
  std::vector<BackendDevice> devices() const override {
    // The executor's lane for the GPU is pinned to a CPU of its own (core/backend/backend.h).
    BackendDevice d{"gpu", info_.describe(), 1, acceleratorHostCpu(), {}};
    d.kind = "gpu";
    d.memoryBytes = info_.memoryBytes;
    return {d};
  }
  Result<std::map<std::string, double>> deviceFacts(const std::string& deviceId) const override {
    if (deviceId != "gpu") return makeError("cuda backend: unknown device '", deviceId, "'");
    auto c = calibrateGpu();
    if (!c) return Error{c.message()};
    return std::map<std::string, double>{
        {"d2d_gbs", c->d2dBytesPerS / 1e9},     {"h2d_gbs", c->h2dBytesPerS / 1e9},
        {"d2h_gbs", c->d2hBytesPerS / 1e9},     {"h2d_latency_us", c->h2dSmallUs},
        {"d2h_latency_us", c->d2hSmallUs},
        {"h2d_staged_gbs", c->h2dStagedBytesPerS / 1e9}, {"d2h_staged_gbs", c->d2hStagedBytesPerS / 1e9},
        {"d2h_nhwc_gbs", c->d2hNhwcBytesPerS / 1e9},
        {"launch_us", c->launchUs},             {"sync_us", c->syncUs},
        {"graph_node_us", c->graphNodeUs},      {"fp32_gflops", c->fp32Flops / 1e9},
        {"tf32_gflops", c->tf32Flops / 1e9},    {"fp16_gflops", c->fp16Flops / 1e9},
        {"memory_bytes", static_cast<double>(info_.memoryBytes)},
        {"sm_count", static_cast<double>(info_.smCount)}, {"sm_clock_mhz", info_.smClockMHz}};
  }
  bool supports(const Graph& g, OpId op, std::string* reason) const override {
    const std::string why = gpuCheck(g, op);
    if (reason) *reason = why;
    return why.empty();
  }
  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& deviceId) const override {
    if (deviceId != "gpu") return makeError("cuda backend: unknown device '", deviceId, "'");
    const std::string why = gpuCheck(g, op);
    if (!why.empty()) return makeError("cuda backend: node '", g.nodes[static_cast<size_t>(op)].name, "': ", why);
    const Node& n = g.nodes[static_cast<size_t>(op)];
    return std::unique_ptr<Kernel>(std::make_unique<CudaKernel>(g, std::vector<OpId>{op}, n.inputs, n.outputs));
  }
  Result<std::unique_ptr<Kernel>> prepareGroup(const Graph& g, const FusedGroup& grp,
                                               const std::string& deviceId) const override {
    if (deviceId != "gpu") return makeError("cuda backend: unknown device '", deviceId, "'");
    if (!gpuChainOk(g, grp.ops))
      return makeError("cuda backend: group of '", g.nodes[static_cast<size_t>(grp.ops.back())].name,
                       "' is not a chain the CUDA backend fuses");
    return std::unique_ptr<Kernel>(std::make_unique<CudaKernel>(g, grp.ops, grp.inputs, std::vector<ValueId>{grp.output}));
  }

 private:
  GpuInfo info_;
  std::string version_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> makeCudaBackend(std::string* why) {
  auto info = cuda::gpuInfo(0);
  if (!info) {
    if (why) *why = info.message();
    return nullptr;
  }
  return std::make_unique<cuda::CudaBackend>(*info);
}

}  // namespace partex
