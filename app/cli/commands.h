#pragma once
/// \file partex-cli subcommands. Each returns the process exit code: 0 success, 2 bad input or
/// usage (after printing one line "partex-cli: <file>: <reason>" to stderr).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/result.h"

namespace partex::cli {

/// Registers a subcommand on the app; the callback stores the exit code in `exitCode`.
void addInspect(CLI::App& app, int& exitCode);
void addPlatforms(CLI::App& app, int& exitCode);
void addGenerate(CLI::App& app, int& exitCode);
void addSched(CLI::App& app, int& exitCode);  ///< algos, schedule, simulate, compare

/// Imports a model with the user's --dim bindings.
Result<Graph> loadModel(const std::string& path, const std::vector<std::string>& dims);
/// Prints "partex-cli: <message>" (one line) and returns 2.
int fail(const std::string& message);

}  // namespace partex::cli
