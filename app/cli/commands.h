#pragma once
/// \file partex-cli subcommands. Each returns the process exit code: 0 success, 2 bad input or
/// usage (after printing one line "partex-cli: <file>: <reason>" to stderr).

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "ir/graph.h"
#include "plan/planfile.h"
#include "platform/platform.h"
#include "support/result.h"

namespace partex::cli {

/// Registers a subcommand on the app; the callback stores the exit code in `exitCode`.
void addInspect(CLI::App& app, int& exitCode);
void addPlatforms(CLI::App& app, int& exitCode);
void addGenerate(CLI::App& app, int& exitCode);
void addSched(CLI::App& app, int& exitCode);  ///< algos, schedule, simulate, compare
void addRender(CLI::App& app, int& exitCode);  ///< render (Gantt chart and graph images)

/// A model (or task graph) on a platform, ready to schedule.
struct Problem {
  std::optional<Graph> graph;
  std::optional<Platform> platform;
  CostTable table;
  PlanIdentity id;
};

/// Loads a JSON task graph (which carries its own devices; a platform is then ignored with a note)
/// or an ONNX model on a platform preset or file, and builds its cost table.
Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims);

/// Imports a model with the user's --dim bindings.
Result<Graph> loadModel(const std::string& path, const std::vector<std::string>& dims);
/// Prints "partex-cli: <message>" (one line) and returns 2.
int fail(const std::string& message);

}  // namespace partex::cli
