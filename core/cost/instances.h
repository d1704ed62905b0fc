#pragma once
/// \file Scheduling instances without an ONNX model behind them, as the scheduling community writes
/// them: Partex's own task graphs (docs/taskgraph-format.md; with or without a network of links that
/// differ in speed), SAGA problem instances (ANRGUSC/saga: a task graph with task costs and dependency
/// sizes, a network with node and link speeds) and WfCommons workflow instances (WfFormat: tasks, their
/// runtimes and the files they pass, and the machines that ran them). Each becomes a CostTable; errors
/// name the file and the reason in one line.

#include <cstdint>
#include <string>

#include "cost/costtable.h"
#include "support/result.h"

namespace partex {

/// Which format a JSON text is in: "saga" (an object with "task_graph" and "network"), "wfcommons"
/// (an object with "workflow"), "partex" (an object with "tasks"); "" when none.
std::string instanceFormat(const std::string& text);

/// A SAGA problem instance. Task v on node d takes cost(v) / speed(d); a dependency of size s between
/// nodes a != b takes s / speed(a-b) (network edges are undirected; a speed of 0 means no link, null
/// an unlimited one). Sizes are read as megabytes and speeds as megabytes per time unit, so a time unit
/// is shown as a microsecond and the times are SAGA's. SAGA's zero-cost `__super_source__` and
/// `__super_sink__` tasks are kept (they cost nothing and carry nothing).
Result<CostTable> parseSagaInstance(const std::string& json, const std::string& origin);

/// The shared file system WfCommons workflows are read with: 100 MB/s, SAGA's default for them.
constexpr double kWfCommonsBytesPerSecond = 100e6;

/// How an instance is read where its format leaves a choice.
struct InstanceOptions {
  /// WfCommons: one processor per recorded machine, as SAGA reads these workflows (its published
  /// comparisons do), instead of one per core (`partex-cli --wf-one-per-machine`).
  bool wfOnePerMachine = false;
  /// WfCommons: the shared file system's bandwidth between machines.
  double wfBytesPerSecond = kWfCommonsBytesPerSecond;
};

/// A WfCommons workflow instance (WfFormat 1.4: workflow.tasks with runtime(InSeconds) and files with
/// their link; 1.5 and 1.6: workflow.specification and workflow.execution). Speed model (as SAGA's
/// reading of these instances): a machine's speed is its CPU speed over the machines' mean, and a task
/// takes its recorded runtime over that relative speed. A machine with N cores (cpu.coreCount, 1.4's
/// cpu.count) is N processors "NODE/0".."NODE/N-1" of its speed (at most one per task), which share its
/// memory: data between them is free. Between machines an edge carries the bytes of the files the
/// child reads that the parent writes, over a shared file system of `bytesPerSecond` (default
/// 100 MB/s, SAGA's); edges of one parent that carry the same files carry one data item, sent once to
/// each processor. With `onePerMachine`, every machine is one processor named after it (SAGA's reading).
Result<CostTable> parseWfCommons(const std::string& json, const std::string& origin, double bytesPerSecond = kWfCommonsBytesPerSecond,
                                 bool onePerMachine = false);

/// Any of the three formats, by content (instanceFormat); an error naming the keys it looked for
/// (and the ones the object has) for anything else.
Result<CostTable> parseInstance(const std::string& text, const std::string& origin, const InstanceOptions& opts = {});

/// Whether the file at `path` is a scheduling instance rather than an ONNX model: every instance
/// format is a JSON object, an ONNX model never starts with '{'. Only the file's first bytes are read.
/// Errors as readFile's (missing, a directory, unreadable). The one rule both front ends use to tell
/// them apart; parseInstance then says what a JSON object that is no instance lacks.
Result<bool> isInstanceFile(const std::string& path);

/// An instance file read and parsed (once): its cost table, its format (instanceFormat's name) and the
/// SHA-256 of its bytes, which stands for the model's in the identity of its plan files.
struct InstanceFile {
  CostTable table;
  std::string format;
  std::string sha256;
};
/// Reads and parses an instance file as parseInstance does; errors name `path` as given.
Result<InstanceFile> readInstanceFile(const std::string& path, const InstanceOptions& opts = {});

/// The platform name in the identity of an instance's plan files: it has devices but no platform.
inline constexpr const char* kInstancePlatformName = "task graph";

/// The sizes of sagaFamilyInstance's graphs.
struct FamilyShape {
  int chain = 20;                     ///< Tasks of a chain.
  int tree = 31;                      ///< Tasks of an in- or out-tree (binary; 31: depth 5).
  int forkBranches = 6, forkStages = 3;  ///< A fork, that many branches of that many tasks, a join.
  int layers = 5, width = 6;          ///< Layered: each task fed by 1-3 tasks of the layer before.
  int nodes = 4;                      ///< Processors.
};

/// A SAGA-style instance: a task graph of one family on `shape.nodes` nodes of heterogeneous speeds
/// (0.5-2), task costs 1-10 and data sizes 1-10 (SAGA's units: time = cost / speed, size / link speed),
/// links of heterogeneous speeds per pair (0.5-2 relative) scaled so that the mean transfer time is
/// `ccr` times the mean execution time. Families: chain, in-tree, out-tree, fork-join, layered. The
/// families of `bench_sched families` and of tst_instances' best-against-the-heuristics test.
CostTable sagaFamilyInstance(const std::string& family, double ccr, uint64_t seed, const FamilyShape& shape = {});

}  // namespace partex
