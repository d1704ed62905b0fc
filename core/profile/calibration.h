#pragma once
/// \file Calibration of the this-machine platform on the real kernels of a backend.
///
/// measureThisMachine() (core/platform) knows this computer from an FMA loop and memcpy only, so before
/// any profile every op class gets the FMA peak and a guessed call overhead: 1.35-3.8x optimistic on the
/// shared models. The calibration runs a few small synthetic operators per op class through the
/// executor (executePlan, so through the Backend interface and with the executor's own per-operator
/// work) on core0 and on cpu-parallel, and fits the roofline numbers of each class from them:
///  - a tiny operator of the class, on warm caches, gives its fixed cost per call (launch overhead); a
///    chain of tiny Relus gives the executor's per-operator overhead
///    between kernel calls, added to every class;
///  - a large operator of low arithmetic intensity gives the bandwidth at which its kernels stream
///    activations (a fully connected layer of batch 1 the rate at which kernels stream weights);
///  - a large operator of high arithmetic intensity gives the GFLOP/s they reach.
/// Element-wise operators with several inputs (Add, Mul, ...: broadcasting) get numbers of their own
/// (Device::opTypeCosts), and so do the data-movement op types whose kernels differ from Concat's
/// (Transpose, Resize). It takes about a quarter of a second and is cached per machine
/// (CPU model, core count, Partex version, backend name and version, build type) in
/// $XDG_CACHE_HOME/partex or ~/.cache/partex, together with the probe the this-machine platform is built
/// from (probeThisMachine: FMA loop, memcpy bandwidth in a forked child, OpenMP fork/join), so that a
/// start with a warm cache measures nothing: same key, same invalidation.
///
/// Where a backend offers a device of kind "gpu" (the CUDA backend on a machine with an NVIDIA GPU), the
/// GPU is measured too (calibrateGpuDevice: the backend's own facts, then GPU-sized synthetic operators
/// per class through its kernels, timed on the device), cached in the same file under a key that adds
/// the GPU backend's version, and becomes the platform's device "gpu" (applyCalibration).
///
/// core/platform links no backend, so the front ends install it (one call at start-up):
/// \code
///   installThisMachineCalibration(registerBuiltinBackends);  // then loadPreset("this-machine") is calibrated
/// \endcode

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "ir/opclass.h"
#include "platform/platform.h"
#include "support/result.h"

namespace partex {

/// Roofline numbers fitted for one op class or op type on one device.
struct CalibratedCost {
  double peakGflops = 0;    ///< 0: not measured.
  double bandwidthGBs = 0;  ///< 0: not measured.
  double launchUs = -1;     ///< Fixed cost per operator, executor overhead included; < 0: not measured.
  /// Time of one reduction step (one multiply-accumulate per output) of a kernel whose outputs fill one
  /// wave of the device (Device::reductionStepUsByClass); 0: not measured (only the GPU's conv class).
  double stepUs = 0;
};

/// One synthetic operator as measured.
struct CalibrationSample {
  std::string name;    ///< e.g. "conv-compute".
  std::string opType;  ///< ONNX op type.
  OpClass cls = OpClass::Unknown;
  int64_t flops = 0;
  int64_t bytes = 0;        ///< Activations read + written.
  int64_t weightBytes = 0;  ///< Weights read.
  int64_t macs = 0;         ///< Multiply-accumulates (0 for most probes).
  int64_t outputs = 0;      ///< Output elements (0: not recorded).
  double us = 0;            ///< Median kernel time in the executor.
};

/// What one backend device (a mode of the CPU) reached.
struct ModeCalibration {
  std::string device;             ///< Backend device measured: "core0" or "cpu-parallel".
  double executorUs = 0;          ///< Executor work per operator outside the kernel call.
  double callUs = 0;              ///< Kernel call of a tiny Relu (the default fixed cost is executorUs + callUs).
  double weightBandwidthGBs = 0;  ///< Rate at which kernels stream weights (the device's bandwidth).
  std::map<OpClass, CalibratedCost> classes;
  std::map<std::string, CalibratedCost> opTypes;
  std::vector<CalibrationSample> samples;
};

/// The GPU of this machine as an accelerator backend (the CUDA backend's "gpu") measured it: what the
/// backend reports about the device (Backend::deviceFacts: copy bandwidths and latency, round trip of one
/// operator, GEMM rates) and the numbers per op class fitted, as for a CPU mode, from the device time of
/// its kernels (Kernel::lastDeviceUs: events around the kernels, host-device copies excluded) on
/// synthetic operators sized for a GPU.
struct GpuDeviceCalibration {
  std::string backend;                  ///< Backend name ("cuda").
  std::string device;                   ///< Its device id ("gpu"), also the platform device's id.
  std::string name;                     ///< The device's description (BackendDevice::description).
  int64_t memoryBytes = 0;              ///< Device memory (BackendDevice::memoryBytes, else the fact memory_bytes).
  std::map<std::string, double> facts;  ///< Backend::deviceFacts, as measured.
  /// Per op class. executorUs is the fact sync_us (the executor's GPU lane launches each operator and
  /// waits for it), callUs the device time of a tiny Relu.
  ModeCalibration mode;
  /// The probes left out and why ("LRN: not supported (...)"), "; "-separated; "" when all ran.
  std::string note;
  /// The CPU devices that use the CPU the GPU's lane is pinned to (its BackendDevice::core: the host
  /// thread that launches the GPU's kernels and waits for them): cpu-parallel and the last core. The
  /// platform makes the GPU exclusive with each, as the executor's lanes run them.
  std::vector<std::string> exclusiveWith;
  /// The fact `name`, or `otherwise` when the backend did not report it.
  double fact(const std::string& name, double otherwise = 0) const {
    auto it = facts.find(name);
    return it == facts.end() ? otherwise : it->second;
  }
};

/// What the handoff chains measured (MachineCalibration::handoffs): makespans of kHandoffChain
/// convolutions (the fastest run of each chain) and the two costs derived from them.
struct HandoffCalibration {
  double core0Us = 0, core1Us = 0, parallelUs = 0;  ///< The chain all on one device.
  double crossUs = 0;                               ///< Alternating core0, core1.
  double switchChainUs = 0;                         ///< Alternating cpu-parallel, core1.
  double wakeUpUs = 0;                              ///< (crossUs - mean(core0Us, core1Us)) per handoff, >= 0.
  double modeSwitchUs = 0;                          ///< (switchChainUs - mean(parallelUs, core1Us)) per change, >= 0.
};
/// Operators in each handoff chain (the handoffs: one fewer).
inline constexpr int kHandoffChain = 24;
/// The two costs from the chains' makespans: the extra time per handoff of the alternating chain over the
/// mean of its devices' own chains (never below 0).
void deriveHandoffCosts(HandoffCalibration& h);

/// A calibration of this machine; `key` says for which machine and software it holds.
struct MachineCalibration {
  std::string key;         ///< calibrationKey(): a cache file with another key is stale.
  std::string measuredAt;  ///< UTC, ISO 8601.
  double seconds = 0;      ///< Wall time of the measurement.
  double loadAverage = -1;
  ModeCalibration serial;    ///< core0 (also used for cpu-serial and every other core).
  ModeCalibration parallel;  ///< cpu-parallel.
  /// The probe the platform was built from (loadOrMeasureThisMachine stores it); absent in a calibration
  /// of a given platform (calibrateMachine, loadOrCalibrate).
  std::optional<MachineProbe> probe;
  /// The GPU, where the this-machine provider found a backend with a device of kind "gpu" and measuring
  /// it succeeded; absent otherwise.
  std::optional<GpuDeviceCalibration> gpu;
  /// A stream's handoffs (sim/handoff.h), from chains of small convolutions (about 0.1 ms each, so that a
  /// waiting lane is asleep when its input comes) through the executor with waits that sleep (execute
  /// --stream's): a chain alternating core0 and core1 against the same chain on one core
  /// gives the wake-up per operator whose input comes from the other CPU (Device::wakeUpUs of every CPU
  /// device); one alternating cpu-parallel and core1 against the mean of the chain on each gives the
  /// mode switch per change of core1 between its own operators and the team's (Device::modeSwitchUs of
  /// cpu-parallel). 0 on a machine with one CPU.
  HandoffCalibration handoffs;
};

struct CalibrationOptions {
  int warmup = 1;
  int reps = 5;  ///< Timed runs of the synthetic graph per mode (medians per operator).
  uint64_t seed = 1;
};

/// The identity a calibration is valid for: CPU model, usable cores, Partex version, backend name and
/// version, build type (a sanitizer build's kernels are slower) and the calibration's own format; with
/// `gpu`, also the GPU backend's name, version (which names the GPU, driver and libraries) and device.
std::string calibrationKey(const Backend& backend, const Backend* gpu = nullptr);

/// The first backend of `registry` that offers a device of kind "gpu" (an accelerator backend such as
/// "cuda"); nullptr when none does (no GPU, or a build without the CUDA backend).
const Backend* findGpuBackend(const BackendRegistry& registry);

/// Measures the first device of kind "gpu" of `gpu`: its facts (Backend::deviceFacts), then small
/// synthetic operators per op class prepared for it and run through its Kernel interface with host
/// tensors (the median of the device times, lastDeviceUs, of opts.reps runs after at least one warm-up:
/// a tiny operator per class for its fixed cost, a large low-intensity one for the streaming bandwidth, a
/// large high-intensity one for the flop rate), fitted as calibrateMachine fits a CPU mode. Operators the
/// backend does not support, cannot prepare or fails to run are left out, and named in `note` (their
/// classes keep the device's defaults). Errors: no GPU device, the facts failing, no class measured.
Result<GpuDeviceCalibration> calibrateGpuDevice(const Backend& gpu, const CalibrationOptions& opts = {});

/// Measures `backend`'s devices "core0" and "cpu-parallel". `base` is the measured this-machine platform
/// (its device ids and exclusive groups make the executor's cost table). Errors: a device missing, an
/// operator the backend cannot run, a kernel failure.
Result<MachineCalibration> calibrateMachine(const Backend& backend, const Platform& base,
                                            const CalibrationOptions& opts = {});

std::string calibrationToJson(const MachineCalibration& c);
/// Strict: a missing or non-positive number is an error naming the field (a corrupt cache file).
Result<MachineCalibration> parseCalibration(const std::string& json, const std::string& origin);

/// $XDG_CACHE_HOME/partex, else $HOME/.cache/partex; "" when neither variable is set.
std::string defaultCalibrationCacheDir();
/// The cache file for `key` in `dir` (one file per key, so that builds and backends do not evict each other).
std::string calibrationCachePath(const std::string& dir, const std::string& key);

/// True when `c` was measured while other programs kept the cores busy (load average above half the
/// cores) and the machine is now at most half as loaded (`loadNow`, -1 when unknown): then the cached
/// numbers are slower than this machine and loadOrCalibrate measures again.
bool calibrationIsProvisional(const MachineCalibration& c, int cores, double loadNow);

/// Where a calibration came from.
struct CalibrationSource {
  bool fromCache = false;       ///< The calibration was read from `path`.
  bool probeFromCache = false;  ///< So was the probe (loadOrMeasureThisMachine).
  std::string path;             ///< Cache file read or written; "" when none.
  std::string note;             ///< Why the cache was not used or not written ("" when it was).
  /// The probe measured by loadOrMeasureThisMachine, kept even when the calibration then failed (so that
  /// the caller builds the platform without probing twice).
  std::optional<MachineProbe> probe;
  /// Why a GPU backend was given but the calibration has no GPU (its measurement failed); "" otherwise.
  std::string gpuNote;
};

/// The cached calibration for this machine and `backend` from `cacheDir`, or a new one, measured and
/// written there atomically. A missing, unreadable, corrupt or stale file (another key), or one measured
/// under load when the machine is quieter now (calibrationIsProvisional), is measured again and replaced; a cache that
/// cannot be written is only noted. `cacheDir` "" = no cache.
Result<MachineCalibration> loadOrCalibrate(const Backend& backend, const Platform& base, const std::string& cacheDir,
                                           CalibrationSource* source = nullptr, const CalibrationOptions& opts = {});

/// The this-machine probe and calibration for `backend`: both from `cacheDir` when its file for this key is
/// valid (as loadOrCalibrate decides) and holds a probe, and then nothing is measured; a valid file
/// without a probe (written by loadOrCalibrate) gets one measured and is rewritten; otherwise the probe
/// is measured, the platform built from it (thisMachineFromProbe) is calibrated, and both are written.
/// The result's `probe` is always set.
/// With `gpu` (findGpuBackend), the key includes it (calibrationKey) and the calibration holds its GPU
/// (calibrateGpuDevice), cached in the same file; a valid file without the GPU (its measurement failed
/// last time) gets it measured and is rewritten. A failing GPU measurement leaves the calibration without
/// a GPU, the reason in `source->gpuNote`, never an error.
Result<MachineCalibration> loadOrMeasureThisMachine(const Backend& backend, const std::string& cacheDir,
                                                    CalibrationSource* source = nullptr,
                                                    const CalibrationOptions& opts = {}, const Backend* gpu = nullptr);

/// Sets the calibrated numbers on the this-machine platform: core0 and the other cores and cpu-serial get
/// `serial`, cpu-parallel gets `parallel`; the description says what was measured and what is still
/// estimated, and the sources name the calibration. With `c.gpu`, adds the GPU as a device of kind Gpu
/// (id and name from the backend's device, capacity its memory, memory bandwidth the fact d2d_gbs, default
/// peak fp32_gflops, float16 speed-up fp16/fp32, per-class numbers from its calibration) linked to the
/// host (cpu-serial) by two one-way links at the pinned copy rates h2d_gbs and d2h_gbs with latency
/// h2d_latency_us: the other CPU devices reach it through the host, whose memory they share, so that all
/// their transfers share the one PCIe link each way.
void applyCalibration(Platform& p, const MachineCalibration& c, const CalibrationSource& source);

/// Installs the this-machine provider (setThisMachineProvider): the first loadPreset("this-machine")
/// fills a registry with `registerBackends` (front ends pass registerBuiltinBackends), then loads or
/// measures the probe and the calibration of its "cpu" backend (loadOrMeasureThisMachine, with the GPU of
/// findGpuBackend where there is one), builds the platform from the probe and applies the calibration.
/// Failures leave the platform as probed, with a note in its description. `cacheDir`: "" =
/// defaultCalibrationCacheDir(). Setting PARTEX_NO_CALIBRATION=1 in the environment turns it off.
void installThisMachineCalibration(std::function<void(BackendRegistry&)> registerBackends,
                                   const std::string& cacheDir = {});

}  // namespace partex
