#pragma once
/// \file Platforms: devices, links between them and exclusive groups, read from JSON files.
/// A device is plain data (peaks per op class and dtype, bandwidth, launch overhead, capacity,
/// supported ops and constraints), like Glow's DeviceInfo; the roofline model in cost/ turns
/// an operator's work into a time on it.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/opclass.h"
#include "support/result.h"

namespace partex {

using DeviceId = int32_t;  ///< Index into Platform::devices.

enum class DeviceKind { Cpu, Gpu, Npu, Dsp, Pim };
const char* deviceKindName(DeviceKind k);

/// A restriction on which operators a device runs, e.g. "Conv only when channels are a multiple
/// of 16". Kinds: "channels_multiple_of" (value: N; checks input and output channels of Conv-like
/// ops), "max_kernel" (value: N; kernel spatial dims <= N), "dtypes" (dtypes: allowed dtypes),
/// "max_rank" (value: N; all tensors of rank <= N).
struct DeviceConstraint {
  std::string kind;
  std::vector<std::string> opTypes;  ///< Empty: applies to every op type.
  int64_t value = 0;
  std::vector<std::string> dtypes;
  std::string description;  ///< Human text, shown when a placement is refused.
};

/// Roofline numbers for one op type that override its class's (0 or negative: use the class's). Devices
/// measured on real kernels need them where one op type's kernel is much slower or faster than its
/// class (e.g. the CPU backend's broadcasting Add/Mul against its unary element-wise kernels).
struct OpTypeCost {
  double peakGflops = 0;
  double bandwidthGBs = 0;
  double launchOverheadUs = -1;  ///< < 0: the class's.
};

struct Device {
  std::string id;    ///< Short id used in plans and on the CLI, e.g. "npu".
  std::string name;  ///< Display name.
  DeviceKind kind = DeviceKind::Cpu;
  /// Peak throughput in GFLOP/s per op class, for float32. Missing classes use defaultPeakGflops.
  std::map<OpClass, double> peakGflops;
  double defaultPeakGflops = 1.0;
  /// Multipliers on the peak per dtype (e.g. float16: 2, int8: 4). Missing dtypes: 1.
  std::map<DType, double> dtypeSpeedup;
  double memBandwidthGBs = 10.0;  ///< Off-chip memory bandwidth, GB/s (1e9 bytes/s).
  double launchOverheadUs = 0.0;  ///< Fixed cost per operator (kernel launch, driver call).
  /// Bandwidth at which the kernels of one op class stream activations (inputs that are not weights, and
  /// outputs; weights always stream at memBandwidthGBs). A calibrated device: real kernels stream data
  /// slower than memcpy, each class differently. Missing classes use memBandwidthGBs.
  std::map<OpClass, double> bandwidthGBsByClass;
  /// Fixed cost per operator of one op class. Missing classes use launchOverheadUs.
  std::map<OpClass, double> launchOverheadUsByClass;
  /// Per ONNX op type: numbers that override the class's (see OpTypeCost).
  std::map<std::string, OpTypeCost> opTypeCosts;
  int64_t memCapacityBytes = 0;  ///< 0 = unlimited.
  /// Rate at which the device's matrix kernels dequantise quantised weights (ggml types, ir/quant.h), in
  /// 1e9 elements/s: a measured number. 0 (the default): modelled as QuantInfo::dequantFlopsPerElement
  /// extra flops per element at the operator's peak. Either way the time adds to the compute side.
  double dequantGElemsPerS = 0.0;
  /// Scratch memory an operator holds on this device while it runs (im2col buffers, a compiler's
  /// workspace), in bytes; 0: none. Counted by the memory model (sim/memory.h).
  int64_t workspaceBytes = 0;
  int64_t onChipBytes = 0;  ///< On-chip memory (NPU SRAM), 0 if none.
  int cores = 1;            ///< Cores for multi-core accelerators (DLFusion).
  /// Cost of one level of the barrier tree between cores (us): a kernel on k > 1 cores pays
  /// coreSyncUs * ceil(log2 k). 0: none (the default).
  double coreSyncUs = 0.0;
  /// A stream's handoffs on the CPU (sim/stream.h, "handoffs"), measured by the this-machine calibration;
  /// 0: not modelled (the default). wakeUpUs: an operator here whose input comes from a device that runs at
  /// the same time (another CPU) waits asleep (execute --stream waits without spinning) and starts this long
  /// after the input is ready. modeSwitchUs (a multi-core CPU device, an OpenMP team over the CPUs of the
  /// single-core devices exclusive with it): each time one of the team's helper CPUs changes between its own
  /// single-core devices' operators and the team's, the operator after the change starts this much later.
  double wakeUpUs = 0.0;
  double modeSwitchUs = 0.0;
  /// The device's compiler runs a block of operators (a convex subgraph, Plan::blocks) as one kernel,
  /// on any number of its cores (DLFusion, coarse subgraphs). Off by default: a runtime that fuses only
  /// fixed patterns (the CPU backend) runs a plan operator by operator.
  bool compilesBlocks = false;
  /// Which chains of operators the device's runtime runs as one kernel, for the costs before any profile
  /// (a profile measures the fused kernels themselves): "" (none, the default: every operator pays its
  /// own launch) or "epilogues" (ir/fusion.h epilogueChain, the CUDA backend's rule: a Conv with folded
  /// affine steps, a residual Add and an activation; Gemm/MatMul/binary operators with an activation).
  /// The chain's later operators then cost nothing on the device and its last one the anchor's time.
  /// Or "runtime" (ir/fusion.h fusedGroups, the CPU runtime's rule, wider: Conv/Gemm/MatMul with folded
  /// affine steps, a residual Add and activations, BatchNormalization + Relu, channel shuffles, the
  /// graph rewrites): each group, kept whole by a plan, is one kernel charged the dearest of its
  /// operators, on its last one; a plan that splits it is charged each operator alone (CostTable::wIn).
  /// this-machine's CPU devices, which the CPU runtime runs, say "runtime".
  std::string fusion;
  /// How the device's transfers run: "" (the default: copy engines beside its kernels, so a transfer
  /// occupies only its link) or "inline": the thread that launches the device's kernels makes its
  /// transfers itself, between them, so a transfer occupies the device as well (the CUDA backend's
  /// kernels upload their host inputs and download their host outputs in their own run, and the GPU's
  /// lane waits for both). The simulator then charges the device's task with the uploads of its inputs
  /// from other devices and the download of its result (sim/simrules.h), and books neither on a link.
  /// this-machine's GPU says "inline".
  std::string copies;
  /// The rate, GB/s, at which a reader on a CPU device turns this device's results into the layout it
  /// reads (a CPU convolution or pool reads a GPU's row-major output channels-last, converting it
  /// first): charged to such a reader, on its own CPU (sim/simrules.h). 0 (the default): nothing.
  /// this-machine's GPU: measured by the calibration (a download, then the conversion).
  double readerConvertGBs = 0.0;
  /// A parallel device's work per wave: the outputs it computes at once (a GPU: its SMs times the output
  /// tile of one SM). With reductionStepUsByClass, an operator whose outputs fill few waves takes at least
  /// waves * (MACs per output) * step: the serial reduction of a thin kernel (a convolution of 7x7
  /// outputs and 2048 input channels keeps few SMs busy for a long time). 0: not modelled.
  int64_t waveOutputs = 0;
  /// Time of one step of the reduction (one multiply-accumulate per output) of one wave, per op class,
  /// in microseconds: measured (the GPU calibration's thin convolution). Missing classes: not modelled.
  std::map<OpClass, double> reductionStepUsByClass;
  /// Op types the device runs. Empty = everything not in unsupportedOps.
  std::set<std::string> supportedOps;
  std::set<std::string> unsupportedOps;
  std::vector<DeviceConstraint> constraints;
  std::string color;  ///< Optional display colour "#rrggbb"; the GUI palette is used otherwise.

  /// Peak GFLOP/s for a class and dtype.
  double peak(OpClass c, DType t) const;
};

/// A directed or bidirectional connection between two devices.
struct Link {
  std::string from;  ///< Device id.
  std::string to;    ///< Device id.
  double bandwidthGBs = 1.0;
  double latencyUs = 0.0;
  bool sharedMemory = false;  ///< Zero-copy: transfers cost nothing.
  bool bidirectional = true;
};

/// Devices that are modes of one resource and never run at the same time.
struct ExclusiveGroup {
  std::string name;
  std::vector<std::string> devices;
};

struct Platform {
  std::string name;
  std::string description;
  std::vector<std::string> sources;  ///< Where the numbers come from (citations).
  std::string host;                  ///< Device id holding model inputs and outputs.
  std::vector<Device> devices;
  std::vector<Link> links;
  std::vector<ExclusiveGroup> exclusiveGroups;

  DeviceId findDevice(const std::string& id) const;  ///< kNone (-1) if absent.
  DeviceId hostId() const;                           ///< Index of `host` (0 when unset).
  /// The link used from a to b (direct link, either direction if bidirectional); nullptr if none.
  const Link* findLink(DeviceId a, DeviceId b) const;
  /// Transfer time in microseconds of `bytes` from a to b: 0 when a == b or shared memory.
  /// Without a direct link, routes through the host (sum of both hops).
  double transferUs(DeviceId a, DeviceId b, int64_t bytes) const;
  /// True when a and b are in one exclusive group.
  bool exclusive(DeviceId a, DeviceId b) const;
};

/// Parses a platform JSON document; `origin` names the file in error messages.
/// Errors name the field and the device: "p.json: device 'npu': field 'bandwidth_gbs' must be a positive number".
Result<Platform> parsePlatform(const std::string& json, const std::string& origin);
/// Reads a platform file.
Result<Platform> loadPlatformFile(const std::string& path);
/// Serialises to the same JSON format (round-trips through parsePlatform).
std::string platformToJson(const Platform& p);

/// Names of the bundled presets (resources/platforms/*.json, compiled in) plus "this-machine".
std::vector<std::string> presetNames();
/// A preset by name; "this-machine" is measured on first use (a short benchmark, cached).
Result<Platform> loadPreset(const std::string& name);
/// A preset name or a file path.
Result<Platform> loadPlatform(const std::string& nameOrPath);
/// What the probe of this computer measured (probeThisMachine): the numbers the this-machine platform is
/// built from. The calibration (core/profile/calibration.h) caches it with its own numbers, under the
/// same key, so that a start with a warm cache measures nothing.
struct MachineProbe {
  std::string isa;                  ///< Instruction set of the FMA loop: "AVX-512", "AVX2+FMA" or "generic".
  int cores = 0;                    ///< CPUs OpenMP may use.
  double serialGflops = 0;          ///< FMA loop on one thread.
  double parallelGflops = 0;        ///< FMA loop on `cores` threads (never below serialGflops).
  double copyGBs1 = 0;              ///< memcpy bandwidth (bytes read + written per second), one thread.
  double copyGBsN = 0;              ///< The same on `cores` threads (never below copyGBs1).
  double forkJoinUs = 0;            ///< An empty OpenMP parallel region on `cores` threads.
  int64_t copyBytes = 0;            ///< Size of each of the two copy buffers (probeCopyBytes).
  int64_t lastLevelCacheBytes = 0;  ///< The last-level cache the buffers were sized from (0: unknown).
  double seconds = 0;               ///< Wall time of the probe.
  double loadAverage = -1;          ///< One-minute load average when it ran (-1: unknown).
};

/// Measures this computer: FMA throughput on one and on all cores, memcpy bandwidth with one and all
/// threads (in a forked child, so that its buffers never count in this process's resident memory), and
/// the fork/join cost of an OpenMP parallel region. A few hundred milliseconds.
MachineProbe probeThisMachine();
/// How many times probeThisMachine() has run in this process (tests check that a cached probe is used).
int64_t machineProbeRuns();
/// Size of the last-level data or unified cache of CPU 0 from sysfs (`cacheDir` holds index0, index1,
/// ..., each with level, type and size files); 0 when it cannot be read.
int64_t lastLevelCacheBytes(const std::string& cacheDir = "/sys/devices/system/cpu/cpu0/cache");
/// Bytes of each copy buffer of the bandwidth probe: 4x the last-level cache (so that the copy streams
/// from memory, not from the cache), at least 16 MiB and at most 64 MiB (which bounds the probe's
/// memory); 64 MiB when the cache size is unknown (0).
int64_t probeCopyBytes(int64_t lastLevelCacheBytes);
/// The this-machine platform built from a probe (without the installed provider's calibration).
Platform thisMachineFromProbe(const MachineProbe& probe);
/// The this-machine platform: from the installed provider (setThisMachineProvider) when there is one,
/// otherwise thisMachineFromProbe(probeThisMachine()).
Platform measureThisMachine();
/// The sentence of the this-machine description that lists what is estimated rather than measured
/// starts with this text; a calibration that measures those things replaces it from there to the end.
inline constexpr const char* kThisMachineEstimates = "Estimates: ";
/// Builds the this-machine platform in measureThisMachine's place: the front ends install the
/// calibration of its devices on the real CPU kernels (core/profile/calibration.h,
/// installThisMachineCalibration), which core/platform cannot run itself (it links no backend), and
/// which takes the probe from its cache instead of measuring it at every start.
using ThisMachineProvider = std::function<Platform()>;
/// Installs `provider` (an empty function removes it) and forgets the this-machine preset built so far,
/// so that the next loadPreset("this-machine") builds it again with it. Thread-safe.
void setThisMachineProvider(ThisMachineProvider provider);
/// The installed provider (empty when none).
ThisMachineProvider thisMachineProvider();
/// This computer's CPU model name from /proc/cpuinfo ("" when unknown).
std::string thisMachineCpuModel();
/// The one-minute load average, or -1 where unknown.
double thisMachineLoadAverage();
/// The this-machine platform cut down to its first `cores` per-core devices (core0, core1, ...; host
/// core0), all joined by shared memory: what a plan that really runs on several pinned cores is made
/// for (the executor's benchmarks and tests).
Platform thisMachineCores(int cores);

/// Whether device d can run node `op`; on false, `reason` says why (for the GUI and validation).
bool deviceSupports(const Device& d, const Graph& g, OpId op, std::string* reason = nullptr);

}  // namespace partex
