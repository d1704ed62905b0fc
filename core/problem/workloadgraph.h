#pragma once
/// \file A workload of several models as one graph (issue 29, item 4: "a workload of two shared models
/// runs the same way"), so that `profile`, `schedule --objective throughput` and `execute --stream N`
/// take a workload file where they take a model, and the simulator and the executor judge it as one.
///
/// One inference of the workload graph is one round of the workload: each rate-driven model
/// batch * rate / (the slowest rate-driven model's rate) times, a triggered model perInference times per
/// copy of its trigger. The copies sit side by side without edges between them: the scheduler places and
/// orders them freely, a stream overlaps rounds as it overlaps inferences of one model, and a round's
/// period is the workload's (every model's throughput is the round's times its copies). A trigger is
/// thus modelled as "every round", not "after its parent ended"; deadlines are the workload scheduler's
/// (sched/workload.h), not the stream's.

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "sched/workload.h"
#include "support/result.h"

namespace partex {

/// The attribute each operator of a workload graph carries: its copy's name ("det#0").
inline constexpr const char* kWorkloadPartAttr = "partex.workload_part";
/// The most model copies one round may hold.
inline constexpr int kMaxWorkloadRoundCopies = 64;

/// Per model of `w` (its order): the copies one round holds. Errors name `origin`: a rate-driven
/// model whose batch * rate is not a whole multiple (within 1e-6) of the slowest rate, more than
/// kMaxWorkloadRoundCopies copies in all.
Result<std::vector<int>> workloadRoundCopies(const Workload& w, const std::string& origin);

/// One graph of several: every value and operator name of part k prefixed "NAME/" (NAME its first),
/// every operator given kWorkloadPartAttr = NAME, the parts' inputs and outputs in order; no value is
/// shared (each copy has its own weights, as each model's session has). The identity (graphSha256)
/// hashes the parts' names and identities. Errors: an operator with a subgraph (Loop, If, Scan: its
/// body names outer values, which the prefix would not follow).
Result<Graph> mergeGraphs(const std::vector<std::pair<std::string, const Graph*>>& parts, const std::string& name);

/// Reads a workload file and its models (workloadModelPath; the --dim bindings apply to each) and
/// merges one round of them (workloadRoundCopies: copy c of model M is "M#c"). Errors: the workload's,
/// a model's (named), a task graph among the models.
Result<Graph> loadWorkloadGraph(const std::string& workloadFile, const std::vector<std::string>& dims);

/// One copy of a model in a workload graph.
struct WorkloadPart {
  std::string name;        ///< "det#0".
  std::vector<OpId> ops;   ///< Its operators, in id order.
};
/// The parts of a graph made by mergeGraphs, in the order of their first operator; empty when no
/// operator carries kWorkloadPartAttr (an ordinary model).
std::vector<WorkloadPart> workloadParts(const Graph& g);
/// The model of a part name: "det#0" -> "det".
std::string workloadPartModel(const std::string& partName);

/// Per inference i in [first, inferences): the span of `ops` in it (the latest end less the earliest
/// start), operator v of inference i at [i * operators + v] of `start` and `end`.
std::vector<double> partSpans(const std::vector<OpId>& ops, const std::vector<double>& start,
                              const std::vector<double>& end, int operators, int first, int inferences);

}  // namespace partex
