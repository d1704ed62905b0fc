#pragma once
/// \file A scheduling problem from its inputs: a model (an ONNX file, a JSON task graph, or a model made
/// in code, "gen:KIND?key=value&..."), symbolic-dimension bindings, a platform (preset or file) and
/// scales on the platform's links. The one loader behind `partex-cli schedule`, `compare`, `simulate`,
/// `render` and the sweeps (core/sweep), so that a sweep's case is exactly what those commands compute.

#include <optional>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "cost/instances.h"
#include "gen/generator.h"
#include "ir/graph.h"
#include "plan/planfile.h"
#include "platform/platform.h"
#include "sched/workload.h"
#include "support/result.h"

namespace partex {

/// A model (or task graph) on a platform, ready to schedule.
struct Problem {
  std::optional<Graph> graph;        ///< ONNX and generated models; empty for task graphs.
  std::optional<Platform> platform;  ///< The platform as scaled; empty for task graphs.
  CostTable table;
  PlanIdentity id;
  std::vector<std::string> notes;  ///< For the user (e.g. "a task graph carries its own devices").
};

/// Multipliers on every link of a platform: bandwidth (2 = twice as fast) and latency (2 = twice as
/// long). Shared-memory links stay free.
struct LinkScale {
  double bandwidth = 1.0;
  double latency = 1.0;
  bool identity() const { return bandwidth == 1.0 && latency == 1.0; }
};

/// Scales the platform's links; applied before the cost table is built, so that every transfer cost
/// (the table's and the simulator's link resources) follows.
void scaleLinks(Platform& p, LinkScale s);
/// The same on a task graph's table, which carries its own network: link latencies and bandwidths, and
/// the edges' fixed transfer times (divided by the bandwidth scale).
void scaleLinks(CostTable& t, LinkScale s);

/// The prefix of a model made in code: "gen:resnet18", "gen:random?nodes=200&width=8&seed=3".
inline constexpr const char* kGeneratorPrefix = "gen:";
bool isGeneratorRef(const std::string& model);
/// Parses "gen:KIND?key=value&..." (keys as `partex-cli generate`'s options: weights, seed, batch,
/// image-size, classes, layers, seq, hidden, heads, vocab, nodes, width, kv-heads, intermediate, phase,
/// dtype, quant, head-dim, experts, experts-used, expert-ffn, shared-ffn, sliding-window, sliding-period,
/// preset; "gen:llama?phase=decode&dtype=float16", "gen:moe?preset=gpt-oss-20b&quant=mxfp4"). Errors name the reference.
Result<GenSpec> parseGeneratorRef(const std::string& ref);

/// Whether `path` is a scheduling instance rather than an ONNX model: core/cost/instances.h's
/// isInstanceFile, and false for a generator reference or a workload file (loadModel merges its models).
Result<bool> isTaskGraphFile(const std::string& path);

/// Imports a model (file, generator reference, or a workload file: problem/workloadgraph.h) with the --dim bindings.
Result<Graph> loadModel(const std::string& path, const std::vector<std::string>& dims);

/// The cost table of an imported model on a platform after scaling its links.
Result<Problem> problemFromGraph(Graph g, Platform platform, const std::string& modelName, LinkScale scale = {});

/// Loads a JSON task graph (which carries its own devices; a platform is then ignored with a note),
/// read with `instance`'s choices, or a model on a platform preset or file, scales the links and
/// builds the cost table.
Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims,
                            LinkScale scale = {}, const InstanceOptions& instance = {});

/// Where a workload's model is: `model` as the workload file writes it, relative to the file's folder
/// unless it is absolute or a "gen:" reference.
std::string workloadModelPath(const std::string& model, const std::string& workloadFile);

/// The models of workload `w` (read from `workloadFile`) on one platform, in the workload's order, each
/// loaded by loadProblem from workloadModelPath(). The one loader of `partex-cli workload` and of the
/// GUI's workloads. Errors (one line naming the file and the model): every error of loading it, and a
/// task graph, which carries its own devices where a workload's models share one platform.
Result<std::vector<Problem>> loadWorkloadProblems(const Workload& w, const std::string& workloadFile,
                                                  const std::string& platform);

}  // namespace partex
