#pragma once
/// \file The profiles a session applies over the modelled costs: reading Partex profiles and ONNX
/// Runtime imports, applying them in order (the rule itself is core's, profile/profile.h
/// applyCostSource, as for partex-cli --profile and --import-ort), and counting costs by source.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "profile/profile.h"
#include "session/loadedmodel.h"
#include "support/result.h"

namespace partex::gui {

/// A profile applied over the modelled costs: a Partex profile file (partex-cli --profile) or an
/// ONNX Runtime profiling JSON imported for one device (partex-cli --import-ort FILE --device ID).
struct LoadedProfile {
  enum class Kind { Partex, OrtImport };
  Kind kind = Kind::Partex;
  std::string path;      ///< Absolute path of the file it was read from.
  Profile profile;       ///< As read.
  std::string device;    ///< OrtImport: the platform device the times are for.
  std::string provider;  ///< OrtImport: the execution provider whose events were kept ("" = all).
  ApplyReport report;    ///< What its last application to the session's cost table did.
  /// The file name (no folder), as errors and the profile list name it.
  std::string fileName() const;
  /// The device ids it holds times for.
  std::vector<std::string> deviceIds() const;
};

/// Reads a Partex profile file. Errors are one line naming the file.
Result<LoadedProfile> readProfile(const std::string& path);
/// Reads an ONNX Runtime profiling JSON as the times of platform device `device`, keeping only the
/// events of `provider` when it is not empty. Errors are one line naming the file.
Result<LoadedProfile> readOrtImport(const std::string& path, const std::string& device, const std::string& provider);
/// Applies a profile to `t` with the options partex-cli uses for --profile and --import-ort (the
/// model's graph hash and file name; imports matched by operator name). Besides applyProfile()'s
/// refusals (another model, a device not on the platform) it refuses a profile none of whose times
/// match an operator of the model. `t` is unspecified after an error: apply to a copy.
Result<ApplyReport> applyLoadedProfile(CostTable& t, const LoadedProfile& p, const LoadedModel& model);
/// Applies `profiles` to `t` in order. One that is refused is left out and `warnings` gets a line naming
/// its file and the reason ("x.json dropped: ..."). Returns the applied ones, with their reports.
std::vector<LoadedProfile> applyProfiles(CostTable& t, const std::vector<LoadedProfile>& profiles,
                                         const LoadedModel& model, std::vector<std::string>* warnings);
/// One line about an application: "x.json: 132 operator times applied (2 devices), 3 transfer models;
/// 4 profiled operators are not in the model".
std::string applySummary(const LoadedProfile& p);

/// Cost entries (operator x device pairs that can run) by where they come from.
struct CostCounts {
  int measured = 0;
  int imported = 0;
  int modelled = 0;
};
CostCounts countCosts(const CostTable& t);

}  // namespace partex::gui
