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
  /// Scratch memory an operator holds on this device while it runs (im2col buffers, a compiler's
  /// workspace), in bytes; 0: none. Counted by the memory model (sim/memory.h).
  int64_t workspaceBytes = 0;
  int64_t onChipBytes = 0;       ///< On-chip memory (NPU SRAM), 0 if none.
  int cores = 1;                 ///< Cores for multi-core accelerators (DLFusion).
  /// Cost of one level of the barrier tree between cores (us): a kernel on k > 1 cores pays
  /// coreSyncUs * ceil(log2 k). 0: none (the default).
  double coreSyncUs = 0.0;
  /// The device's compiler runs a block of operators (a convex subgraph, Plan::blocks) as one kernel,
  /// on any number of its cores (DLFusion, coarse subgraphs). Off by default: a runtime that fuses only
  /// fixed patterns (the CPU backend) runs a plan operator by operator.
  bool compilesBlocks = false;
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
/// Builds the this-machine platform from a short measurement of this computer (FMA loop, memcpy, OpenMP
/// fork/join), then applies the installed refinement (setThisMachineRefiner), if any.
Platform measureThisMachine();
/// The sentence of the this-machine description that lists what is estimated rather than measured
/// starts with this text; a refiner that measures those things replaces it from there to the end.
inline constexpr const char* kThisMachineEstimates = "Estimates: ";
/// A step that refines the measured this-machine platform before measureThisMachine() returns it: the
/// front ends install the calibration of its devices on the real CPU kernels (core/profile/calibration.h,
/// installThisMachineCalibration), which core/platform cannot run itself (it links no backend).
using ThisMachineRefiner = std::function<void(Platform&)>;
/// Installs `refiner` (an empty function removes it) and forgets the this-machine preset measured so
/// far, so that the next loadPreset("this-machine") measures again with it. Thread-safe.
void setThisMachineRefiner(ThisMachineRefiner refiner);
/// The installed refiner (empty when none).
ThisMachineRefiner thisMachineRefiner();
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
