#pragma once
/// \file A loaded model (graph + per-operator work) and the loader that runs on a worker thread.

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

/// Imports and characterises a model (runs on a worker thread); `dims` are "NAME=VALUE" or
/// "INPUT:AXIS=VALUE" bindings of symbolic dimensions.
Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims);

}  // namespace partex::gui
