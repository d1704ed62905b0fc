#pragma once
/// \file Scheduling instances without an ONNX model behind them, as the scheduling community writes
/// them: Partex's own task graphs (docs/taskgraph-format.md; with or without a network of links that
/// differ in speed), SAGA problem instances (ANRGUSC/saga: a task graph with task costs and dependency
/// sizes, a network with node and link speeds) and WfCommons workflow instances (WfFormat: tasks, their
/// runtimes and the files they pass, and the machines that ran them). Each becomes a CostTable; errors
/// name the file and the reason in one line.

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

/// A WfCommons workflow instance (WfFormat 1.4: workflow.tasks with runtime(InSeconds) and files with
/// their link; 1.5: workflow.specification and workflow.execution). Speed model (as SAGA's reading of
/// these instances): a machine's speed is its CPU speed over the machines' mean, and a task takes its
/// recorded runtime over that relative speed; an edge carries the bytes of the files the child reads
/// that the parent writes, over a shared file system of `bytesPerSecond` (default 100 MB/s, SAGA's).
Result<CostTable> parseWfCommons(const std::string& json, const std::string& origin, double bytesPerSecond = kWfCommonsBytesPerSecond);

/// Any of the three formats, by content (instanceFormat); an error for anything else.
Result<CostTable> parseInstance(const std::string& text, const std::string& origin);

/// Whether the file at `path` is a scheduling instance (looksLikeTaskGraph) rather than an ONNX model.
/// Only a file that starts like JSON is read whole, so that a large model is not read twice. Errors as
/// readFile's (missing, a directory, unreadable). The one rule both front ends use to tell them apart.
Result<bool> isInstanceFile(const std::string& path);

/// An instance file read and parsed (once): its cost table, its format (instanceFormat's name) and the
/// SHA-256 of its bytes, which stands for the model's in the identity of its plan files.
struct InstanceFile {
  CostTable table;
  std::string format;
  std::string sha256;
};
/// Reads and parses an instance file as parseInstance does; errors name `path` as given.
Result<InstanceFile> readInstanceFile(const std::string& path);

/// The platform name in the identity of an instance's plan files: it has devices but no platform.
inline constexpr const char* kInstancePlatformName = "task graph";

}  // namespace partex
