#pragma once
/// \file Profiles: measured (or imported) operator, group and transfer times for one model on one
/// set of devices, stored as a versioned JSON file (docs/profile-format.md) and applied to a
/// CostTable, where they override the modelled costs (design: "CostTable (measured overrides
/// modelled)"). A profile is keyed by the model's graph SHA-256, the device ids and the backend
/// name and version, so that a stale profile is refused instead of silently mispredicting.

#include <cstdint>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "support/result.h"

namespace partex {

/// The profile file format name and the newest version this build reads and writes.
inline constexpr const char* kProfileFormat = "partex-profile";
inline constexpr int kProfileFormatVersion = 1;

/// Summary of repeated timings, in microseconds.
struct TimingStat {
  double medianUs = 0;
  double spreadUs = 0;  ///< Median absolute deviation from the median: robust against a busy machine.
  double minUs = 0;
  double maxUs = 0;
  int reps = 0;  ///< Timed repetitions behind the summary (warm-up runs excluded).
};

/// Summarises samples (any order); an empty input gives an all-zero stat.
TimingStat summarise(std::vector<double> samplesUs);

/// One operator's time on one device.
struct ProfileOp {
  std::string name;    ///< Operator (node) name: the key when matching a model.
  std::string opType;  ///< For checking and for people; not used to match.
  TimingStat time;
};

/// Consecutive operators run as one unit (W(S,d) of PartitionTuner and DUET).
struct ProfileGroup {
  std::vector<std::string> ops;  ///< Operator names, in execution order.
  TimingStat time;
};

/// All timings of one device.
struct ProfileDevice {
  std::string id;  ///< Device id, matched against the platform's.
  std::vector<ProfileOp> ops;
  std::vector<ProfileGroup> groups;
  /// Operators the runtime ran as one fused kernel while measuring (ir/fusion.h), each by names in
  /// order: the kernel's time is its last operator's, the others' about 0. In-context profiles only.
  std::vector<std::vector<std::string>> fused;
  /// The speed of the device's CPUs while it was measured (cpuSpeedProbeUs(), the slowest CPU's for a
  /// multi-thread device), microseconds; 0 when unknown (imports, older files).
  double speedProbeUs = 0;
};

/// One transfer size between two devices.
struct TransferSample {
  int64_t bytes = 0;
  TimingStat time;
};

/// Measured transfers from one device to another, by size.
struct ProfileTransfer {
  std::string from;
  std::string to;
  std::vector<TransferSample> samples;
};

/// A whole profile file.
struct Profile {
  std::string modelFile;    ///< Model file base name (informational).
  std::string modelSha256;  ///< Graph::graphSha256; "" for imports matched by node name.
  std::string backendName;  ///< e.g. "cpu"; for imports the tool, e.g. "onnxruntime".
  std::string backendVersion;
  bool imported = false;   ///< Imported from another tool (entries become Provenance::Imported).
  std::string source;      ///< What produced it: "partex-cli profile", "onnxruntime profiling JSON", ...
  std::string measuredAt;  ///< ISO 8601 UTC date and time.
  std::string machine;     ///< Host name and CPU model of the machine it was measured on.
  int warmup = 0;          ///< Warm-up runs per measurement.
  int reps = 0;            ///< Timed repetitions asked for.
  uint64_t seed = 0;       ///< Seed of the random inputs.
  int profilingRuns = 0;   ///< Whole-model runs of the minimal profiling plan (0 when not used).
  std::string method;      ///< "per-operator" or "minimal-plan" (PIM paper) or "import".
  std::vector<ProfileDevice> devices;
  std::vector<ProfileTransfer> transfers;

  /// The device entry with this id, or nullptr.
  const ProfileDevice* findDevice(const std::string& id) const;
  /// Creates the device entry when absent.
  ProfileDevice& device(const std::string& id);
};

/// Serialises a profile (pretty JSON, two-space indent, ending with a newline).
std::string profileToJson(const Profile& p);
/// Parses and validates profile JSON; `origin` names the file in every error (one line).
Result<Profile> parseProfile(const std::string& json, const std::string& origin);
/// Writes profileToJson() atomically (temporary file, then rename).
Status saveProfile(const std::string& path, const Profile& p);
/// Reads and validates a profile file; errors name `path`.
Result<Profile> loadProfileFile(const std::string& path);

/// How a profile is matched against a cost table.
struct ApplyOptions {
  /// The model's identity. A profile with a different non-empty hash is refused unless matchByName.
  std::string modelSha256;
  std::string modelFile;
  /// Match operators by name whatever the hash (imports of other tools' profiles carry no hash).
  bool matchByName = false;
  /// Device id to use for a profile's devices instead of their own (imports: "--device"), "" = own ids.
  std::string deviceOverride;
  /// Apply transfer measurements (replace the link model of the measured device pairs).
  bool applyTransfers = true;
  /// Name of the profile in messages (its file name).
  std::string origin;
};

/// What applying a profile did.
struct ApplyReport {
  int opsApplied = 0;                            ///< Cost entries overridden.
  int groupsApplied = 0;                         ///< Group costs now answered from the profile.
  int fusedGroups = 0;                           ///< Fused kernels the table now knows (CostTable::fusedGroups).
  int pairsApplied = 0;                          ///< Device pairs whose transfer model came from the profile.
  std::vector<std::string> unmatchedProfileOps;  ///< Profile operators the model does not have.
  std::vector<std::string> unprofiledOps;        ///< Model operators with no entry, per profiled device "op@dev".
  std::vector<std::string> typeMismatches;       ///< "name: profile says X, model says Y".
  std::vector<std::string> notes;                ///< One-line remarks for the user.
};

/// Applies a profile to a cost table: the profiled entries override the modelled ones and get
/// Provenance::Measured (Imported for imports); profiled groups answer groupCost; transfer samples
/// become a fitted latency + bytes/bandwidth per measured device pair. Refuses a profile of another
/// model (hash mismatch without matchByName) or one naming a device the table lacks; the message
/// names the file and both models.
Result<ApplyReport> applyProfile(CostTable& t, const Profile& p, const ApplyOptions& opts);

/// How the front ends apply a cost source to a model's table (the one rule of the CLI's --profile /
/// --import-ort and the GUI's Load profile / Import ORT): a Partex profile is matched by the model's
/// graph hash unless it was itself imported; an ONNX Runtime import (`ortImport`) by operator name.
/// A source that matches no operator, group or device pair of the model is refused: it would change
/// nothing while the user believes the costs are measured.
Result<ApplyReport> applyCostSource(CostTable& t, const Profile& p, bool ortImport, const std::string& modelFile,
                                    const std::string& modelSha256, const std::string& origin);

/// Fits time = latency + bytes / bytesPerUs to transfer samples (least squares; latency >= 0).
/// Returns {latencyUs, bytesPerUs}; bytesPerUs is infinite when time does not grow with size.
std::pair<double, double> fitTransfer(const std::vector<TransferSample>& samples);

/// Current UTC date and time, ISO 8601 ("2026-11-22T10:30:00Z").
std::string isoNowUtc();
/// Host name and CPU model, for Profile::machine.
std::string machineDescription();

}  // namespace partex
