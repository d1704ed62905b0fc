#pragma once
/// \file A loaded model (graph + per-operator work) and the loader that runs on a worker thread; and a
/// scheduling instance, which a session holds instead of a model and a platform.

#include <memory>
#include <string>
#include <vector>

#include "cost/work.h"
#include "ir/graph.h"
#include "support/result.h"

namespace partex::gui {

/// A loaded model: the graph and its per-operator work, shared read-only with views and jobs.
struct LoadedModel {
  std::string path;               ///< File it was read from.
  std::vector<std::string> dims;  ///< The symbolic dimensions bound at import ("NAME=VALUE", ...).
  Graph graph;
  std::vector<OpWork> work;
  GraphWork total;
};

/// A scheduling instance opened instead of a model (core/cost/instances.h: a Partex task graph, a SAGA
/// problem instance or a WfCommons workflow): a cost table with its own devices and links, and no ONNX
/// graph or platform behind it. The table itself is the session's.
struct LoadedInstance {
  std::string path;    ///< File it was read from.
  std::string format;  ///< "partex", "saga" or "wfcommons" (instanceFormat).
  std::string sha256;  ///< Of the file's bytes: the model identity of its plan files.
  /// "SAGA instance" for the summary and messages.
  std::string formatTitle() const;
};

/// Imports and characterises a model (runs on a worker thread); `dims` are "NAME=VALUE" or
/// "INPUT:AXIS=VALUE" bindings of symbolic dimensions.
Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims);

}  // namespace partex::gui
