#include "cpu/cpu_backend.h"

#include <algorithm>
#include <omp.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/device.h"
#include "cpu/cpu_ops.h"
#include "ir/fusion.h"

namespace partex {
namespace cpu {

const std::vector<OpEntry>& opTable() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    addOneDnnOps(t);
    addOneDnnRnnOps(t);
    const auto& plain = plainOpTable();
    t.insert(t.end(), plain.begin(), plain.end());
    addControlFlowOps(t);
    addEinsumOps(t);
    return t;
  }();
  return table;
}

namespace {

bool isOp(const Node& n, std::initializer_list<const char*> types) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  for (const char* t : types)
    if (n.opType == t) return true;
  return false;
}

/// nhwcOutputOk with a memo per value (-1 unknown, 0 no, 1 yes): DenseNet's concatenations would
/// otherwise be visited exponentially often.
bool nhwcOk(const Graph& g, ValueId v, std::vector<int8_t>& memo) {
  if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return false;
  int8_t& m = memo[static_cast<size_t>(v)];
  if (m < 0) m = 0;  // provisional (the graph is acyclic, so no cycle reads it)
  else return m == 1;
  const Value& val = g.values[static_cast<size_t>(v)];
  if (val.dtype != DType::Float32 || !val.shapeKnown || val.shape.size() != 4 || val.isGraphOutput ||
      val.consumers.empty())
    return false;
  for (OpId c : val.consumers) {
    const Node& n = g.nodes[static_cast<size_t>(c)];
    bool ok = true;
    for (size_t i = 0; i < n.inputs.size() && ok; ++i) {
      if (n.inputs[i] != v) continue;
      if (isOp(n, {"Conv", "ConvTranspose"}) && i == 0) continue;
      // An Identity or inference Dropout the executor runs as an alias (runsAsAlias): its readers read
      // this very tensor.
      if (i == 0 && runsAsAlias(g, c)) {
        if (nhwcOk(g, n.outputs[0], memo)) continue;
        return false;
      }
      OpId shuffleEnd = kNone;
      if (i == 0 && channelShuffle(g, c, &shuffleEnd) > 0) {
        const Node& last = g.nodes[static_cast<size_t>(shuffleEnd)];
        if (nhwcOk(g, last.outputs[0], memo)) continue;
        return false;
      }
      if (isOp(n, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) && i == 0 &&
          !(n.outputs.size() > 1 && n.outputs[1] >= 0))
        continue;
      // Readers whose own output is then channels-last too.
      const bool same = isOp(n, {"Add", "Sum", "Mul"}) || (isOp(n, {"Concat"}) && n.attrInt("axis", 0) % 4 == 1);
      const bool unary = isOp(n, {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSwish", "Clip",
                                  "BatchNormalization", "Resize", "Upsample"}) && i == 0;
      // Add/Sub/Mul/Div of the tensor and a per-channel (or scalar) weight: a channel affine step.
      bool perChannel = false;
      // (Add and Mul commute: the weight may come first, as in PP-OCR's Mul(scale, x).)
      const size_t wi = 1 - std::min<size_t>(i, 1);
      // Max and Min too (TensorFlow's exports clamp with Max(x, c) between convolutions), either order.
      if (isOp(n, {"Add", "Sub", "Mul", "Div", "Max", "Min"}) && n.inputs.size() == 2 &&
          (i == 0 || isOp(n, {"Add", "Mul", "Max", "Min"})) &&
          n.inputs[wi] >= 0 && n.inputs[wi] != v) {
        const Value& w = g.values[static_cast<size_t>(n.inputs[wi])];
        int64_t nonOne = 0;
        bool channelOnly = w.shapeKnown && w.shape.size() <= 4;
        for (size_t d = 0; channelOnly && d < w.shape.size(); ++d) {
          const size_t axis = d + 4 - w.shape.size();
          if (w.shape[d] != 1) {
            ++nonOne;
            channelOnly = axis == 1 && w.shape[d] == val.shape[1];
          }
        }
        // A weight, or an activation of one value per channel (a squeeze-and-excitation scale [1,C,1,1],
        // whose storage is the same in either layout).
        const bool seScale = !w.isWeight && w.shape.size() == 4 && w.shape[0] == 1 && w.shape[2] == 1 &&
                             w.shape[3] == 1 && val.shape[0] == 1 && isOp(n, {"Mul", "Add"});
        perChannel = (w.isWeight || (seScale && !isOp(n, {"Max", "Min"}))) && w.dtype == DType::Float32 &&
                     channelOnly && nonOne <= 1;
      }
      if (perChannel) {
        if (!n.outputs.empty() && nhwcOk(g, n.outputs[0], memo)) continue;
        return false;
      }
      if (same) {
        for (ValueId o : n.inputs) {
          const Value& ov = o >= 0 ? g.values[static_cast<size_t>(o)] : val;
          if (o < 0 || !ov.shapeKnown || ov.dtype != DType::Float32 || ov.shape.size() != 4 ||
              (!isOp(n, {"Concat"}) && ov.shape != val.shape))
            ok = false;
        }
      }
      if (!(same || unary) || n.outputs.empty()) ok = false;
      if (ok) ok = nhwcOk(g, n.outputs[0], memo);
    }
    if (!ok) return false;
  }
  m = 1;
  return true;
}

}  // namespace

bool nhwcOutputOk(const Graph& g, ValueId v) {
  std::vector<int8_t> memo(g.values.size(), -1);
  return nhwcOk(g, v, memo);
}

namespace {

std::atomic<int> gSinkThreads{0};  // Keeps the start-up parallel region from being optimised away.

/// oneDNN's effective ISA by name, for the version string (profiles differ by ISA).
std::string isaName() {
  using I = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case I::sse41:
      return "sse41";
    case I::avx:
      return "avx";
    case I::avx2:
      return "avx2";
    case I::avx2_vnni:
      return "avx2_vnni";
    case I::avx512_core:
      return "avx512_core";
    case I::avx512_core_vnni:
      return "avx512_core_vnni";
    case I::avx512_core_bf16:
      return "avx512_core_bf16";
    case I::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa()));
  }
}

const OpEntry* findEntry(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  for (const OpEntry& e : opTable())
    if (e.opType == n.opType) return &e;
  return nullptr;
}

/// A prepared node bound to a device: applies the device's thread placement around every call.
class CpuKernel final : public Kernel {
 public:
  CpuKernel(std::unique_ptr<OpKernel> op, std::string name, size_t nIn, size_t nOut, BackendDevice dev)
      : op_(std::move(op)), name_(std::move(name)), nIn_(nIn), nOut_(nOut), dev_(std::move(dev)) {}

  Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) override {
    if (inputs.size() > nIn_)
      return makeError("node '", name_, "': ", std::to_string(inputs.size()), " inputs given, the node has ",
                       std::to_string(nIn_));
    std::vector<const Tensor*> in = inputs;
    in.resize(nIn_, nullptr);
    outputs.resize(nOut_);
    // The caller's `outputs` never changes size or moves: executors and profilers keep pointers to its
    // elements (consumers' inputs). An OpKernel may resize `out` (LayerNormalization always computes
    // Mean and InvStdDev, MaxPool its indices), so it runs on this kernel's own vector: the node's
    // outputs are moved in and back out (storage moves with them), the kernel's extra results stay here.
    own_.resize(std::max(own_.size(), nOut_));
    for (size_t k = 0; k < nOut_; ++k) own_[k] = std::move(outputs[k]);
    struct MoveBack {
      std::vector<Tensor>& from;
      std::vector<Tensor>& to;
      ~MoveBack() {
        for (size_t k = 0; k < to.size() && k < from.size(); ++k) to[k] = std::move(from[k]);
      }
    } moveBack{own_, outputs};
    // Channels-last inputs the kernel does not read as they are: row-major copies (kept for the next run).
    bool anyNhwc = false;
    for (const Tensor* t : in) anyNhwc = anyNhwc || (t && t->nhwc());
    if (anyNhwc && !op_->takesNhwc(in)) {
      // One scratch set per thread, shared by every kernel it runs (a kernel reads its inputs only
      // while it runs): the copies never add up over the model's kernels.
      thread_local std::vector<Tensor> plain;
      if (plain.size() < in.size()) plain.resize(in.size());
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i] && in[i]->nhwc()) {
          if (auto st = in[i]->toPlain(plain[i]); !st) return makeError("node '", name_, "': ", st.message());
          in[i] = &plain[i];
        }
    }
    DeviceScope scope(dev_.threads, dev_.core, dev_.teamCores.empty() ? nullptr : &dev_.teamCores);
    ExecContext ctx;
    ctx.threads = dev_.threads;
    try {
      Status s = op_->run(ctx, in, own_);
      if (!s) return makeError("node '", name_, "': ", s.message());
      return s;
    } catch (const dnnl::error& e) {
      return makeError("node '", name_, "': oneDNN: ", e.what());
    } catch (const std::exception& e) {
      return makeError("node '", name_, "': ", e.what());
    }
  }

  bool keepsCopy(size_t i) const override { return op_->keepsCopy(i); }
  void releaseCaches() override { op_->releaseCaches(); }
  bool mayWriteOtherLayout() const override { return op_->nhwcOut; }
  void writeRowMajor() override { op_->nhwcOut = false; }
  bool readsOtherLayout() const override { return true; }
  bool canViewInput() const override { return op_->canViewInput(); }
  void viewInput() override { op_->viewIn = op_->canViewInput(); }

 private:
  std::unique_ptr<OpKernel> op_;
  std::string name_;
  size_t nIn_, nOut_;
  BackendDevice dev_;
  std::vector<Tensor> own_;  ///< What op_ writes: the node's outputs while it runs, then its extras.
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    const auto& cpus = allowedCpus();
    const int n = static_cast<int>(cpus.size());
    devices_.push_back({"cpu-serial", "CPU, 1 thread on CPU " + std::to_string(cpus[0]), 1, cpus[0], {}});
    // cpu-parallel: an OpenMP team of n threads led by the calling thread on the first CPU, one
    // thread pinned to each CPU (the executor runs it from its lane of that CPU).
    devices_.push_back({"cpu-parallel", "CPU, " + std::to_string(n) + " threads", n, cpus[0],
                        n > 1 ? cpus : std::vector<int>{}});
    for (int i = 0; i < n; ++i)
      devices_.push_back({"core" + std::to_string(i),
                          "CPU " + std::to_string(cpus[static_cast<size_t>(i)]) + ", 1 pinned thread", 1,
                          cpus[static_cast<size_t>(i)], {}});
    const dnnl_version_t* v = dnnl_version();
    version_ = "partex-cpu 5; oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
               std::to_string(v->patch) + " (" + std::string(v->hash) + "); OpenMP " + std::to_string(_OPENMP) +
               "; isa " + isaName() + "; " + std::to_string(n) + " cpus";
  }

  std::string name() const override { return "cpu"; }
  std::string version() const override { return version_; }
  std::vector<BackendDevice> devices() const override { return devices_; }

  Result<std::unique_ptr<Kernel>> prepareGroup(const Graph& g, const FusedGroup& grp,
                                               const std::string& deviceId) const override {
    startTeam();
    if (grp.ops.size() < 2) return makeError("cpu backend: a fused group has at least two operators");
    for (OpId op : grp.ops)
      if (std::string why = check(g, op); !why.empty()) return makeError("cpu backend: ", why);
    const BackendDevice* dev = nullptr;
    for (const auto& d : devices_)
      if (d.id == deviceId) dev = &d;
    if (!dev) return makeError("cpu backend: unknown device '", deviceId, "'");
    const Node& last = g.nodes[static_cast<size_t>(grp.ops.back())];
    try {
      auto k = makeFusedKernel(g, grp.ops);
      if (!k) return makeError("cpu backend: group of '", last.name, "': ", k.message());
      (*k)->nhwcOut = nhwcOutputOk(g, grp.output);
      return std::unique_ptr<Kernel>(
          std::make_unique<CpuKernel>(std::move(*k), last.name, grp.inputs.size(), 1, *dev));
    } catch (const std::exception& e) {
      return makeError("cpu backend: group of '", last.name, "': ", e.what());
    }
  }

  bool supports(const Graph& g, OpId op, std::string* reason) const override {
    std::string why = check(g, op);
    if (reason) *reason = why;
    return why.empty();
  }

  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& deviceId) const override {
    startTeam();
    std::string why = check(g, op);
    const std::string name =
        op >= 0 && op < static_cast<OpId>(g.nodes.size()) ? g.nodes[static_cast<size_t>(op)].name : std::to_string(op);
    if (!why.empty()) return makeError("cpu backend: node '", name, "': ", why);
    const BackendDevice* dev = nullptr;
    for (const auto& d : devices_)
      if (d.id == deviceId) dev = &d;
    if (!dev) return makeError("cpu backend: unknown device '", deviceId, "'");
    const Node& n = g.nodes[static_cast<size_t>(op)];
    try {
      auto k = findEntry(n)->make(g, n);
      if (!k) return makeError("cpu backend: node '", name, "': ", k.message());
      (*k)->nhwcOut = !n.outputs.empty() && nhwcOutputOk(g, n.outputs[0]);
      return std::unique_ptr<Kernel>(
          std::make_unique<CpuKernel>(std::move(*k), n.name, n.inputs.size(), n.outputs.size(), *dev));
    } catch (const std::exception& e) {
      return makeError("cpu backend: node '", name, "': ", e.what());
    }
  }

 private:
  /// Starts the OpenMP runtime with a full team on the thread that prepares the first kernel (the thread
  /// that creates the oneDNN primitives and then runs cpu-parallel's kernels or hands them to a lane).
  /// Without it, a process whose first parallel region ran on an executor lane ran cpu-parallel's
  /// kernels up to ten times slower than one that had run a parallel region on this thread first
  /// (measured on AlexNet: 165 ms against 17 ms). At the first kernel, not at construction: commands
  /// that only read the backend's devices (schedule, platforms on a cached calibration) then start no
  /// threads, whose spinning took the other core for milliseconds after every such command.
  void startTeam() const {
    std::call_once(teamStarted_, [n = static_cast<int>(allowedCpus().size())] {
#pragma omp parallel num_threads(n)
      { gSinkThreads.fetch_add(1, std::memory_order_relaxed); }
    });
  }

  std::string check(const Graph& g, OpId op) const {
    if (op < 0 || op >= static_cast<OpId>(g.nodes.size())) return "no such operator";
    const Node& n = g.nodes[static_cast<size_t>(op)];
    const OpEntry* e = findEntry(n);
    if (!e) return "op type " + (n.domain.empty() ? std::string() : n.domain + ".") + n.opType + " has no CPU kernel";
    try {
      std::string why = e->check(g, n);
      return why.empty() ? why : n.opType + ": " + why;
    } catch (const std::exception& ex) {
      return n.opType + ": " + ex.what();
    }
  }

  std::vector<BackendDevice> devices_;
  std::string version_;
  mutable std::once_flag teamStarted_;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Backend> makeCpuBackend() {
  return std::make_unique<cpu::CpuBackend>();
}

}  // namespace partex
