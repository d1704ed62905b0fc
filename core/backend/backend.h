#pragma once
/// \file The execution-backend interface: what a backend offers (devices, supported operators) and how
/// an operator runs on one of its devices. backends/ implements it (backends/cpu: oneDNN + OpenMP);
/// the profiler and the executor drive it. No ONNX, no Qt.
///
/// Use:
/// \code
///   BackendRegistry reg;
///   registerBuiltinBackends(reg);               // defined in backends/ (link partex_backends)
///   Backend* cpu = reg.find("cpu");
///   std::string why;
///   if (cpu->supports(g, op, &why)) {
///     auto k = cpu->prepare(g, op, "core1");     // error as a value, never an abort
///     std::vector<Tensor> outs;
///     Status s = (*k)->run(ins, outs);          // ins: one pointer per node input, nullptr if omitted
///   }
/// \endcode

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "support/result.h"

namespace partex {

/// One operator prepared for one device: shapes/attributes validated, primitives created. A Kernel is
/// used by one thread at a time; different kernels may run concurrently from different threads (two
/// kernels prepared for "core0" and "core1" run side by side).
class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Runs the operator on the kernel's device, on the calling thread (which it may pin to a core for
  /// the duration of the call; the previous affinity is restored).
  /// `inputs` has one entry per node input, in node order; nullptr for an omitted optional input.
  /// `outputs` is resized to the node's output count; each is (re)shaped by the kernel (storage of a
  /// matching size is reused, so running again with the same vector does not allocate).
  /// Bad shapes or dtypes give an Error naming the operator, never a crash.
  virtual Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) = 0;
  /// Whether the kernel keeps its own (transformed) copy of input i after a run (a Conv's reordered and
  /// folded weights): the caller may then free that input and pass an empty tensor in its place, as long
  /// as the other inputs keep their shapes. Lets a runtime hold one copy of the weights, not two.
  virtual bool keepsCopy(size_t i) const {
    (void)i;
    return false;
  }
  /// Frees what the kernel caches between runs (transformed weights, scratch), for a kernel that runs
  /// once (a reference run): the next run prepares them again.
  virtual void releaseCaches() {}
  /// Whether the kernel may leave its outputs in a layout other than row-major (Tensor::Layout): a
  /// runtime then does not plan to have it write into a row-major slice of another tensor.
  virtual bool mayWriteOtherLayout() const { return false; }
  /// Asks a kernel that may write another layout to write its outputs row-major from its first run on,
  /// because a reader cannot take that layout as it is (a kernel of an accelerator, which would convert
  /// it on its host thread at every run). Called before the first run only.
  virtual void writeRowMajor() {}
  /// Whether the kernel reads an input in another layout (Tensor::Layout) without help: the CPU's
  /// kernels do (converting where needed, as their profile measured); an accelerator's copy does not.
  virtual bool readsOtherLayout() const { return false; }
  /// For a kernel on an accelerator: the device time of the last run() in microseconds, measured on
  /// the device (CUDA events around the kernels, host-device copies excluded); -1 for kernels whose
  /// time is the host's wall time of run() (the CPU's).
  virtual double lastDeviceUs() const { return -1; }
  /// Device-resident hand-over between the kernels of one accelerator: the executor offers, for input
  /// `i`, the kernel that produces it and which of that kernel's outputs it is. A kernel that can read
  /// that output where its producer left it (in the accelerator's memory) returns true and from then on
  /// ignores the host tensor passed for input i. The producer must run before this kernel, in every run.
  virtual bool linkInput(size_t i, Kernel& producer, size_t producerOutput) {
    (void)i, (void)producer, (void)producerOutput;
    return false;
  }
  /// Whether output `i` is read on the host (by a kernel of another device, or as a model output): an
  /// accelerator's kernel told false may leave the host tensor unwritten. Default: every output is.
  virtual void setHostOutput(size_t i, bool needed) { (void)i, (void)needed; }
  /// Whether output 0 can be a view of input 0's storage: the same elements in the same order under
  /// another shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity), no copy. Default: no.
  virtual bool canViewInput() const { return false; }
  /// Lets a kernel that canViewInput() make output 0 a view of input 0 (Tensor::borrow) from its next
  /// run on. The caller promises that input 0's storage stays alive and unchanged until every reader of
  /// output 0 has run (a runtime's memory plan extends input 0's lifetime over them). Called before a
  /// run, never after one has started.
  virtual void viewInput() {}
};

/// A device a backend can run on. Ids match the platform presets' device ids (this-machine:
/// "cpu-serial", "cpu-parallel", "core0".."core<N-1>").
struct BackendDevice {
  std::string id;
  std::string description;
  int threads = 1;  ///< Threads a kernel on this device uses.
  /// Logical CPU the kernel's thread is pinned to; -1 when not pinned. An accelerator's device names the
  /// CPU of the host thread that drives it (acceleratorHostCpu()).
  int core = -1;
  /// Logical CPUs a multi-thread device's team occupies while one of its kernels runs, `core` (the
  /// calling thread's) first; empty for single-thread devices. The executor keeps these CPUs free of
  /// its other threads while such a kernel runs.
  std::vector<int> teamCores;
  /// What kind of processor: "cpu" or "gpu" (a platform device of that kind, core/platform).
  std::string kind = "cpu";
  /// Memory of the device in bytes (a GPU's); 0 for the CPU devices, which share the host's.
  int64_t memoryBytes = 0;
};

/// An execution backend. Implementations are thread-safe for const calls (supports/prepare may be
/// called from several threads).
class Backend {
 public:
  virtual ~Backend() = default;
  /// Short stable name ("cpu").
  virtual std::string name() const = 0;
  /// Version string identifying the kernels' implementation (library versions, ISA); profiles
  /// measured with another version are stale. Used as part of a profile's key.
  virtual std::string version() const = 0;
  /// The devices this backend offers on this machine.
  virtual std::vector<BackendDevice> devices() const = 0;
  /// Whether the backend can run `op` of `g` (op type, domain, attributes, dtypes, static shapes).
  /// When it cannot, `reason` (if not null) receives one line saying why.
  virtual bool supports(const Graph& g, OpId op, std::string* reason) const = 0;
  /// Prepares `op` for `deviceId`. Errors: unsupported op (with the supports() reason), unknown device,
  /// bad shapes.
  virtual Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& deviceId) const = 0;
  /// Prepares a fused group (ir/fusion.h) as one kernel for `deviceId`: its run() takes the group's
  /// external inputs (FusedGroup::inputs, nullptr where kNone) and gives one output, the group's. A
  /// backend that does not fuse returns an error; the caller then runs the operators one by one.
  virtual Result<std::unique_ptr<Kernel>> prepareGroup(const Graph& g, const FusedGroup& group,
                                                       const std::string& deviceId) const;
  /// What the backend measures about a device of its own beyond operators, for the cost model of an
  /// accelerator (the CPU's comes from the probe and the calibration): numbers by name. The CUDA
  /// backend's "gpu": "d2d_gbs" (device memory, bytes read + written per second / 1e9), "h2d_gbs",
  /// "d2h_gbs" (pinned copies), "h2d_latency_us" (a 4 KiB copy, issued and waited for), "launch_us"
  /// (host cost of a launch), "sync_us" (launch and wait: the round trip of one tiny operator),
  /// "graph_node_us", "fp32_gflops", "tf32_gflops", "fp16_gflops" (cuBLASLt 4096^3), "memory_bytes",
  /// "sm_count", "sm_clock_mhz". Empty for devices with nothing to add; an error when the measurement
  /// fails.
  virtual Result<std::map<std::string, double>> deviceFacts(const std::string& deviceId) const {
    (void)deviceId;
    return std::map<std::string, double>{};
  }
};

/// One backend over several: its devices are all of theirs (the first backend's device wins an id both
/// have), supports() is true when any of them runs the operator, prepare()/prepareGroup()/deviceFacts()
/// go to the backend that owns the device. Named by joining the names with '+' ("cpu+cuda"); its version
/// joins theirs. The parts must outlive it. This is how a plan spanning the CPU and a GPU executes.
std::unique_ptr<Backend> makeCombinedBackend(std::vector<const Backend*> parts);

/// The backends known to a program; filled explicitly (no static initialisers).
class BackendRegistry {
 public:
  /// Adds a backend; a backend with the same name is replaced.
  void add(std::unique_ptr<Backend> backend);
  /// The backend of that name; nullptr when absent. "auto": the combined backend of every backend
  /// registered ("cpu+cuda" on a machine with a GPU), or the one backend when there is only one.
  Backend* find(const std::string& name) const;
  /// All backends in the order added.
  std::vector<Backend*> all() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  mutable std::unique_ptr<Backend> combined_;  ///< "auto", made on first use
};

/// Registers every backend built into this program: "cpu", and "cuda" where the machine has an NVIDIA
/// GPU and the build has the CUDA backend (libpartex_cuda.so, loaded at run time). Defined in
/// backends/builtin.cpp, library partex_backends.
void registerBuiltinBackends(BackendRegistry& registry);
/// Why the last registerBuiltinBackends() registered no "cuda" backend (one line; "" when it did).
const std::string& cudaUnavailableReason();

/// A tensor to feed input `v` of `g` when measuring or testing without real data: the value's dtype and
/// static shape; small integer payloads (Value::intData) are used as they are; otherwise deterministic
/// random data from `seed` chosen so that common consumers stay finite (normalisation variances and
/// scales positive, index tensors inside the gathered axis, float weights scaled by 1/sqrt(fan-in),
/// scalar float weights in [0.5, 1.5]) or plausible values where the data decides the operator's meaning
/// (Resize/Upsample scales from the static shapes, Clip bounds 0 and 6, Pow exponents 2). Other
/// integer tensors are zeros, Bool tensors true.
/// Fails when the shape is not fully known or the dtype is not supported.
Result<Tensor> syntheticTensor(const Graph& g, ValueId v, uint64_t seed);

/// The tensor a run feeds for leaf value `v` (a weight or model input) of `g`: a weight's own data
/// (Value::data) as an alias, without a copy, so that every device and the reference run read the one
/// copy the importer made; otherwise (model inputs, graphs without data) syntheticTensor(g, v, seed).
Result<Tensor> leafTensor(const Graph& g, ValueId v, uint64_t seed);

/// The logical CPU an accelerator backend pins its device's lane to (BackendDevice::core): the last CPU
/// this process may run on (its affinity mask), -1 when unknown. A thread on the host launches every
/// kernel of an accelerator and waits for it; left unpinned it competes with the OpenMP team of
/// cpu-parallel for a CPU and slows both. Pinned away from core 0 (cpu-serial, the host device), the
/// GPU can run beside cpu-serial, and the platform makes it exclusive with the CPU devices that use
/// this CPU (cpu-parallel, the last core), as the executor's lanes then are.
int acceleratorHostCpu();
/// Memory the machine has available now (MemAvailable of /proc/meminfo), bytes; -1 when unknown.
int64_t availableMemoryBytes();
/// Whether a run of `g` can hold its leaves: the bytes a run allocates before its first kernel, the
/// weights the importer kept as a pattern (ConstantOfShape placeholders, such as a generated model's
/// without --weights, which leafTensor expands) plus the synthetic model inputs, must stay within
/// `availableBytes` (-1: availableMemoryBytes(); unknown: no check). Weights with data are already
/// resident and not counted. The error says how much the run needs, how much of it is placeholder
/// weights, and how much memory there is.
Status checkRunMemory(const Graph& g, int64_t availableBytes = -1);

}  // namespace partex
