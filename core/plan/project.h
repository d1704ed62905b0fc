#pragma once
/// \file Project files: everything needed to come back to a piece of work in the explorer: the model
/// (path, identity, bound dimensions), the platform, the profiles, the plan (embedded plan-file
/// document), the scheduler last run, pins, the manual moves since that run, and the view. A
/// versioned JSON document (docs/project-format.md). Paths are stored relative to the project file
/// when they lie beside or below it, so that a project folder can be moved; reading resolves them.

#include <string>
#include <utility>
#include <vector>

#include "cost/costtable.h"
#include "support/result.h"

namespace partex {

inline constexpr const char* kProjectFormat = "partex-project";
inline constexpr int kProjectFormatVersion = 1;
/// File name extension of project files.
inline constexpr const char* kProjectExtension = ".partex";

/// An ONNX Runtime profiling JSON imported for one device (partex-cli --import-ort FILE --device ID).
struct ProjectOrtImport {
  std::string path;      ///< Absolute after reading.
  std::string device;    ///< Platform device the times are for.
  std::string provider;  ///< Execution provider whose events are kept ("" = all).
  bool operator==(const ProjectOrtImport& o) const {
    return path == o.path && device == o.device && provider == o.provider;
  }
};

struct Project {
  std::string modelPath;                 ///< Absolute after reading.
  std::string modelSha256;               ///< Graph::graphSha256 when saved ("" unknown).
  std::vector<std::string> dims;         ///< Bound dimensions, "NAME=VALUE" or "INPUT:AXIS=VALUE".
  std::string platform;                  ///< Preset name, or a platform file path (absolute after reading).
  std::vector<std::string> profiles;     ///< Profile files (absolute after reading), applied in order.
  std::vector<ProjectOrtImport> ortImports;  ///< ONNX Runtime imports, applied after `profiles`, in order.
  std::string planJson;                  ///< An embedded plan-file document ("" = no plan yet).
  std::string algorithm;                 ///< The scheduler last run ("" = none).
  std::map<std::string, std::string> params;  ///< Its parameters.
  std::vector<std::pair<std::string, std::string>> pins;   ///< Operator name -> device id.
  std::vector<std::pair<std::string, std::string>> moves;  ///< Manual moves since the last run, in order.
  std::string viewJson = "{}";           ///< The front end's view state (zoom, centre, selection...): a JSON object.
};

/// Serialises a project; paths beside or below `projectPath`'s folder become relative.
std::string projectToJson(const Project& p, const std::string& projectPath);
/// Parses and validates a project document (format, version, types); relative paths are resolved
/// against `projectPath`'s folder. Errors are one line naming `projectPath`.
Result<Project> parseProject(const std::string& json, const std::string& projectPath);
/// Writes atomically (temporary file, then rename).
Status saveProject(const std::string& path, const Project& p);
/// Reads and validates a project file.
Result<Project> loadProjectFile(const std::string& path);

struct Constraints;  // sched/scheduler.h: a project is data; only resolving its pins needs the scheduler layer

/// The project's pins as scheduler constraints on a cost table: every operator and device must
/// exist, and the device must be able to run the operator. Errors name `origin` and the pin.
Result<Constraints> resolvePins(const Project& p, const CostTable& t, const std::string& origin);

}  // namespace partex
