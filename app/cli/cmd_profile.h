#pragma once
/// \file partex-cli profile and execute, and the options that feed measured or imported costs into
/// the scheduling commands (--profile FILE, --import-ort FILE --device ID).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "support/result.h"

namespace partex::cli {

void addProfile(CLI::App& app, int& exitCode);  ///< profile
void addExecute(CLI::App& app, int& exitCode);  ///< execute

/// Where measured costs come from, besides the platform's models.
struct CostSourceArgs {
  std::vector<std::string> profiles;  ///< Partex profile files (--profile, repeatable).
  std::vector<std::string> ortFiles;  ///< ONNX Runtime profiling JSON files (--import-ort, repeatable).
  std::string ortDevice;              ///< Device the ORT times are for (--device).
  std::string ortProvider;            ///< Keep only this execution provider's events (--ort-provider).
};

/// Adds --profile, --import-ort, --device and --ort-provider to a command.
void addCostSourceOptions(CLI::App* cmd, CostSourceArgs& a);
/// Applies the profiles, then the ORT imports, to `t` (later files override earlier ones). Notes
/// (counts, unmatched nodes) go to stderr; errors name the file and the reason.
Status applyCostSources(const CostSourceArgs& a, CostTable& t, const std::string& modelFile,
                        const std::string& modelSha);

}  // namespace partex::cli
