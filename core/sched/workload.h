#pragma once
/// \file Workloads of several models sharing one platform (issue 29, item 3): the workload file, its
/// requests over a horizon, and two joint schedulers judged by the one simulator.
///
/// A workload names models (files or "gen:" references), each released at a rate (inferences per
/// second) or by a trigger ("N per inference of model M": a recogniser run on each detection), each
/// inference with a deadline. Its requests over a horizon are dispatched by a scheduler to the
/// platform's devices, and the dispatch becomes one plan on one table: every request an unrolled copy
/// of its model (or of the part of it that ran), released at its time by a "clock" pseudo-device whose
/// chained tasks end at the release times, a triggered request after its parent's last operators. The
/// simulator (sim/simulator.h) then gives every request's end, with its links and memory rules.
///
/// Schedulers ("algo"):
///  - "band": Band's least-slack-first scheduler over unit subgraphs (Jeong et al., MobiSys 2022;
///    github.com/mrsnu/band, band/scheduler/least_slack_first_scheduler.cc, band/engine.cc
///    GetShortestLatencyWithUnitSubgraph, band/planner.cc IsSLOViolated), reconstructed;
///  - "partex": the same least-slack dispatch and programme, over finer units: a unit also ends where
///    one of Partex's plans (best under the latency and the throughput objective, the pipeline
///    programme) changes device, so that a request can run those splits. Overloaded (more jobs
///    waiting than devices), a job begins on Band's units; jobs on the finer units begin only while
///    fewer than one per device run.
/// docs/design-decisions.md ("Workloads of several models") says what was followed and guessed.

#include <memory>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "sim/simulator.h"
#include "support/result.h"

namespace partex {

struct WorkloadModel {
  std::string name;           ///< Unique within the workload.
  std::string model;          ///< File path (as written; relative to the workload file) or "gen:" reference.
  double ratePerS = 0;        ///< > 0: released at this rate from time 0; 0: triggered.
  int batch = 1;              ///< Rate-driven: requests released together at each release (Band's batch_size).
  std::string trigger;        ///< Triggered: the model whose every inference releases `perInference` of these.
  int perInference = 0;
  double deadlineMs = 0;      ///< Each inference's deadline, from its release.
};

struct Workload {
  std::string name;
  double horizonMs = 1000;  ///< Rate-driven requests are released in [0, horizon).
  std::vector<WorkloadModel> models;
};

/// The most requests a workload may expand to (a hostile rate or trigger must not exhaust memory).
inline constexpr int kMaxWorkloadRequests = 20000;

/// Parses a workload (docs/reference.md, "Workload files"). Every error is one line naming `origin`
/// and the field: wrong types, non-positive or non-finite rates and deadlines, both or neither of rate
/// and trigger, unknown or duplicate model names, trigger cycles, more than kMaxWorkloadRequests.
Result<Workload> parseWorkload(const std::string& text, const std::string& origin);
/// The number of requests expandRequests would make (without making them; for a workload that
/// passed parseWorkload, whose triggers form no cycle).
double workloadRequestCount(const Workload& w);
/// Reads and parses a workload file.
Result<Workload> loadWorkloadFile(const std::string& path);
/// True when `text` is a JSON object that is a workload and not a task graph: its "format" is
/// "partex-workload", or it has "models" and none of the task-graph formats' keys ("tasks",
/// "task_graph", "workflow"; cost/instances.h). Front ends that open any file (the GUI) ask this
/// before the task-graph readers, which would refuse a workload as a task graph without tasks.
bool looksLikeWorkload(const std::string& text);
/// looksLikeWorkload() on a file's content; false for a missing or unreadable file, one that does not
/// start with '{', or one above 16 MiB (no workload is that long; a large task graph is not read twice).
bool isWorkloadFile(const std::string& path);

/// One inference of one model.
struct WorkloadRequest {
  int model = 0;           ///< Index into Workload::models.
  int index = 0;           ///< Its number among its model's requests.
  int parent = -1;         ///< The request whose end releases it (triggered), -1 for a rate's.
  double releaseUs = 0;    ///< Rate-driven: its release time; triggered: 0 (its parent's end).
  double deadlineUs = 0;   ///< Relative to its release.
};
/// The requests of a horizon: rate-driven ones, `batch` at each k / rate (k = 0, 1, ... below the horizon), then
/// each triggered model's `perInference` per request of its trigger; parents before children.
std::vector<WorkloadRequest> expandRequests(const Workload& w);

struct WorkloadOptions {
  std::string algo = "partex";  ///< "band" or "partex".
  double searchSec = 1.0;       ///< partex: time limit of each plan search per model.
  SimOptions sim;
  /// Keep the joint table, plan and timeline in the result (WorkloadResult::joint), for a Gantt chart.
  bool keepTimeline = false;
};

struct WorkloadModelStats {
  std::string name;
  int requests = 0;
  int met = 0;       ///< Ended within their deadline.
  int dropped = 0;   ///< Dropped by the scheduler (a predicted miss) or never released (a dropped parent).
  double p50Us = 0;  ///< Latency (release to end) of the requests that ran; nearest rank.
  double p90Us = 0;
  std::string route; ///< How many subgraphs its requests ran as ("1 subgraph x28, 3 subgraphs x2").
};

struct WorkloadResult {
  std::string algo;
  std::vector<WorkloadModelStats> models;
  int requests = 0;
  int met = 0;
  double makespanUs = 0;                ///< The simulated end of the last request.
  std::vector<std::string> deviceIds;   ///< The platform's devices.
  std::vector<double> utilisation;      ///< Per device: busy time / makespan.
  /// Per request (expandRequests' order): release and end in the simulation (end -1 when dropped).
  std::vector<double> release, end;
  std::vector<char> dropped;
  /// The requests (expandRequests' order): model, parent and relative deadline of each.
  std::vector<WorkloadRequest> requestList;

  /// With WorkloadOptions::keepTimeline: what the simulator judged. The table's devices are the
  /// platform's, then the "clock" pseudo-device (index deviceIds.size()) whose tasks end at the
  /// releases; every other task is an operator of a request.
  struct Joint {
    std::shared_ptr<const CostTable> table;
    Plan plan;
    Timeline timeline;
    std::vector<int> requestOfTask;      ///< Per task: its request (index into requestList), -1 for a clock task.
    std::vector<TaskId> operatorOfTask;  ///< Per task: the operator of its model's table it copies, -1 for a clock task.
  };
  Joint joint;
};

/// Schedules the workload's requests with o.algo and simulates them. `tables[i]` is model i's cost
/// table; all must have the same devices. Errors: unknown algo, tables on different devices, a model
/// no device can run, a simulation error.
Result<WorkloadResult> scheduleWorkload(const Workload& w, const std::vector<const CostTable*>& tables,
                                        const WorkloadOptions& o = {});

/// The names scheduleWorkload accepts.
std::vector<std::string> workloadAlgorithms();

}  // namespace partex
