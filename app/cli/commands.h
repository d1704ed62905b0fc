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
#include "problem/problem.h"
#include "support/result.h"

namespace partex::cli {

/// Registers a subcommand on the app; the callback stores the exit code in `exitCode`.
void addInspect(CLI::App& app, int& exitCode);
void addPlatforms(CLI::App& app, int& exitCode);
void addGenerate(CLI::App& app, int& exitCode);
void addSched(CLI::App& app, int& exitCode);  ///< algos, schedule, simulate, compare
void addRender(CLI::App& app, int& exitCode);  ///< render (Gantt chart and graph images)
void addSweep(CLI::App& app, int& exitCode);   ///< sweep, sweep merge, sweep status
void addLlm(CLI::App& app, int& exitCode);     ///< llm (a language model's job against llama.cpp's rules)
void addWorkload(CLI::App& app, int& exitCode);  ///< workload (several models on one platform, issue 29)

/// A model (or task graph) on a platform, ready to schedule (core/problem).
using partex::Problem;

/// core's loadProblem (problem/problem.h), its notes printed to stderr. isTaskGraphFile and loadModel
/// are core's too.
Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims,
                            const InstanceOptions& instance = {});

/// Prints "partex-cli: <message>" (one line) and returns 2.
int fail(const std::string& message);

}  // namespace partex::cli
